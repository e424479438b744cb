/* tests/unit/test_memstore.c — effects/memory/memstore.c against a real SQLite file
 * in a fresh mkdtemp directory per test. */
#define _GNU_SOURCE
#include <errno.h>
#include <ftw.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "common/err.h"
#include "effects/memory/memstore.h"

struct fx {
        char dir[64];
        struct memstore *m;
};

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
        (void)st, (void)flag, (void)ftw;
        return remove(path);
}

static int setup(void **state)
{
        struct fx *fx = calloc(1, sizeof(*fx));
        assert_non_null(fx);
        snprintf(fx->dir, sizeof(fx->dir), "/tmp/memstore-test-XXXXXX");
        assert_non_null(mkdtemp(fx->dir));
        struct err *e = NULL;
        int r = memstore_open(fx->dir, &fx->m, &e);
        if (r < 0)
                fail_msg("open: %s", err_msg(e));
        *state = fx;
        return 0;
}

static int teardown(void **state)
{
        struct fx *fx = *state;
        memstore_close(fx->m);
        nftw(fx->dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
        free(fx);
        return 0;
}

/* Expect failure whose message contains `needle`. */
#define assert_fails(call, needle)                                                      \
        do {                                                                            \
                struct err *e_ = NULL;                                                  \
                struct err **err = &e_;                                                 \
                if ((call) >= 0)                                                        \
                        fail_msg("%s succeeded, expected an error", #call);             \
                if (!strstr(err_msg(e_), (needle)))                                     \
                        fail_msg("message '%s' lacks '%s'", err_msg(e_), (needle));     \
                err_free(e_);                                                           \
        } while (0)

#define assert_ok(call)                                                                 \
        do {                                                                            \
                struct err *e_ = NULL;                                                  \
                struct err **err = &e_;                                                 \
                if ((call) < 0)                                                         \
                        fail_msg("%s: %s", #call, err_msg(e_));                         \
                err_free(e_);                                                           \
        } while (0)

static void assert_stored(struct memstore *m, const char *ns, const char *key, const char *want)
{
        char *got = (char *)0x1;
        assert_ok(memstore_get(m, ns, key, &got, err));
        if (!want) {
                assert_null(got);
                return;
        }
        assert_non_null(got);
        assert_string_equal(got, want);
        free(got);
}

static void assert_keys(struct memstore *m, const char *ns, const char *prefix, const char *const *want)
{
        char **keys = NULL;
        size_t n = 99;
        assert_ok(memstore_list(m, ns, prefix, &keys, &n, err));
        assert_non_null(keys);
        size_t i = 0;
        for (; want[i]; i++) {
                if (!keys[i])
                        fail_msg("prefix '%s': missing key '%s' at %zu", prefix, want[i], i);
                assert_string_equal(keys[i], want[i]);
        }
        if (keys[i])
                fail_msg("prefix '%s': unexpected key '%s' at %zu", prefix, keys[i], i);
        assert_int_equal(n, i);
        memstore_keys_free(keys);
}

static void test_roundtrip(void **state)
{
        struct fx *fx = *state;
        assert_ok(memstore_set(fx->m, "agent", "greeting", "{\"text\":\"hi\",\"n\":[1,2.5,null]}", err));
        assert_stored(fx->m, "agent", "greeting", "{\"text\":\"hi\",\"n\":[1,2.5,null]}");
        assert_ok(memstore_set(fx->m, "agent", "ключ ✓", "\"строка\"", err));
        assert_stored(fx->m, "agent", "ключ ✓", "\"строка\"");
        assert_ok(memstore_set(fx->m, "agent", "num", " 42 ", err));  /* stored verbatim */
        assert_stored(fx->m, "agent", "num", " 42 ");
}

static void test_absent(void **state)
{
        struct fx *fx = *state;
        assert_stored(fx->m, "agent", "nope", NULL);
}

static void test_overwrite(void **state)
{
        struct fx *fx = *state;
        assert_ok(memstore_set(fx->m, "agent", "k", "1", err));
        assert_ok(memstore_set(fx->m, "agent", "k", "[2]", err));
        assert_stored(fx->m, "agent", "k", "[2]");
        const char *const all[] = { "k", NULL };
        assert_keys(fx->m, "agent", "", all);
}

static void test_delete(void **state)
{
        struct fx *fx = *state;
        bool existed = false;
        assert_ok(memstore_set(fx->m, "agent", "k", "true", err));
        assert_ok(memstore_delete(fx->m, "agent", "k", &existed, err));
        assert_true(existed);
        assert_stored(fx->m, "agent", "k", NULL);
        assert_ok(memstore_delete(fx->m, "agent", "k", &existed, err));
        assert_false(existed);
        assert_ok(memstore_delete(fx->m, "agent", "never", NULL, err));
}

/* clear empties one namespace, says how many keys went, and leaves the
 * others alone; clearing an empty namespace removes nothing. */
static void test_clear(void **state)
{
        struct fx *fx = *state;
        assert_ok(memstore_set(fx->m, "a", "k1", "1", err));
        assert_ok(memstore_set(fx->m, "a", "k2", "2", err));
        assert_ok(memstore_set(fx->m, "a", "k3", "3", err));
        assert_ok(memstore_set(fx->m, "b", "k1", "\"kept\"", err));
        size_t n = 99;
        assert_ok(memstore_clear(fx->m, "a", &n, err));
        assert_int_equal(n, 3);
        const char *const none[] = { NULL };
        assert_keys(fx->m, "a", "", none);
        assert_stored(fx->m, "b", "k1", "\"kept\"");
        assert_ok(memstore_clear(fx->m, "a", &n, err));
        assert_int_equal(n, 0);
        assert_ok(memstore_clear(fx->m, "nobody", NULL, err));
}

/* The namespaces with a totals row, counted in the file itself. */
static int totals_rows(const char *dir)
{
        char path[128];
        snprintf(path, sizeof(path), "%s/memory.sqlite3", dir);
        sqlite3 *db = NULL;
        assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
        sqlite3_stmt *st = NULL;
        assert_int_equal(sqlite3_prepare_v2(db, "SELECT count(*) FROM memory_ns", -1, &st, NULL), SQLITE_OK);
        assert_int_equal(sqlite3_step(st), SQLITE_ROW);
        int n = sqlite3_column_int(st, 0);
        sqlite3_finalize(st);
        sqlite3_close(db);
        return n;
}

/* clear leaves nothing of the namespace, its totals row included: a server
 * that clears each deleted session's namespace stays the same size however
 * many sessions it ran (make soak found one row left per session).  The
 * namespace is counted from zero when it is written again. */
static void test_clear_leaves_no_totals(void **state)
{
        struct fx *fx = *state;
        char ns[32];
        for (int i = 0; i < 50; i++) {
                snprintf(ns, sizeof(ns), "agent.js#s%d", i);
                assert_ok(memstore_set(fx->m, ns, "k", "1", err));
                assert_ok(memstore_clear(fx->m, ns, NULL, err));
        }
        assert_ok(memstore_set(fx->m, "kept", "k", "1", err));
        assert_int_equal(totals_rows(fx->dir), 1);
        /* a namespace cleared and written again is limited from zero */
        memstore_set_max(fx->m, 8);
        assert_ok(memstore_set(fx->m, "again", "k", "123456", err));
        assert_ok(memstore_clear(fx->m, "again", NULL, err));
        assert_ok(memstore_set(fx->m, "again", "k", "123456", err));
        assert_fails(memstore_set(fx->m, "again", "k2", "1", err), "");
        assert_int_equal(totals_rows(fx->dir), 2);
}

static void test_list_prefix_literal(void **state)
{
        struct fx *fx = *state;
        const char *keys[] = { "a%b", "a_b", "axb", "a%", "ab", "b", "a\\b", "A" };
        for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
                assert_ok(memstore_set(fx->m, "ns", keys[i], "0", err));

        const char *const pct[] = { "a%", "a%b", NULL };
        assert_keys(fx->m, "ns", "a%", pct);
        const char *const und[] = { "a_b", NULL };
        assert_keys(fx->m, "ns", "a_", und);
        const char *const bs[] = { "a\\b", NULL };
        assert_keys(fx->m, "ns", "a\\", bs);
        const char *const a[] = { "a%", "a%b", "a\\b", "a_b", "ab", "axb", NULL };
        assert_keys(fx->m, "ns", "a", a);
        const char *const exact[] = { "ab", NULL };
        assert_keys(fx->m, "ns", "ab", exact);
        const char *const none[] = { NULL };
        assert_keys(fx->m, "ns", "zzz", none);
        assert_keys(fx->m, "ns", "%", none);
        assert_keys(fx->m, "empty-ns", "", none);
        const char *const all[] = { "A", "a%", "a%b", "a\\b", "a_b", "ab", "axb", "b", NULL };
        assert_keys(fx->m, "ns", "", all);
        assert_keys(fx->m, "ns", NULL, all);
}

static void test_list_sorted_bytes(void **state)
{
        struct fx *fx = *state;
        /* inserted out of order; byte order puts upper case first and UTF-8 last */
        const char *keys[] = { "é", "b", "aa", "B", "a b", "a", "日本", "éa", "z" };
        for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
                assert_ok(memstore_set(fx->m, "ns", keys[i], "null", err));
        const char *const all[] = { "B", "a", "a b", "aa", "b", "z", "é", "éa", "日本", NULL };
        assert_keys(fx->m, "ns", "", all);
        const char *const e[] = { "é", "éa", NULL };
        assert_keys(fx->m, "ns", "é", e);
}

static void test_list_many_grows(void **state)
{
        struct fx *fx = *state;
        char key[32];
        for (int i = 99; i >= 0; i--) {
                snprintf(key, sizeof(key), "k%03d", i);
                assert_ok(memstore_set(fx->m, "ns", key, "1", err));
        }
        char **keys = NULL;
        size_t n = 0;
        assert_ok(memstore_list(fx->m, "ns", "k0", &keys, &n, err));
        assert_int_equal(n, 100);
        for (size_t i = 0; i < n; i++) {
                snprintf(key, sizeof(key), "k%03zu", i);
                assert_string_equal(keys[i], key);
        }
        assert_null(keys[n]);
        memstore_keys_free(keys);
        memstore_keys_free(NULL);
}

static void test_namespaces(void **state)
{
        struct fx *fx = *state;
        assert_ok(memstore_set(fx->m, "one", "k", "1", err));
        assert_ok(memstore_set(fx->m, "two", "k", "2", err));
        assert_stored(fx->m, "one", "k", "1");
        assert_stored(fx->m, "two", "k", "2");
        assert_stored(fx->m, "three", "k", NULL);
        bool existed = true;
        assert_ok(memstore_delete(fx->m, "three", "k", &existed, err));
        assert_false(existed);
        assert_ok(memstore_delete(fx->m, "two", "k", &existed, err));
        assert_true(existed);
        assert_stored(fx->m, "one", "k", "1");
        const char *const one[] = { "k", NULL };
        assert_keys(fx->m, "one", "", one);
        const char *const none[] = { NULL };
        assert_keys(fx->m, "two", "", none);
}

static void test_persistence(void **state)
{
        struct fx *fx = *state;
        assert_ok(memstore_set(fx->m, "agent", "kept", "{\"a\":[1,2,3]}", err));
        memstore_close(fx->m);
        fx->m = NULL;
        assert_ok(memstore_open(fx->dir, &fx->m, err));
        assert_stored(fx->m, "agent", "kept", "{\"a\":[1,2,3]}");

        /* a second store on the same directory sees the same data */
        struct memstore *other = NULL;
        assert_ok(memstore_open(fx->dir, &other, err));
        assert_ok(memstore_set(other, "agent", "from-other", "7", err));
        assert_stored(fx->m, "agent", "from-other", "7");
        memstore_close(other);
}

static void test_key_limits(void **state)
{
        struct fx *fx = *state;
        char *key = malloc(2001);
        assert_non_null(key);
        memset(key, 'k', 2000);
        key[2000] = '\0';
        assert_fails(memstore_set(fx->m, "ns", key, "1", err),
                     "memory: key is 2000 bytes; keys are limited to 1024 bytes");
        char *out = NULL;
        assert_fails(memstore_get(fx->m, "ns", key, &out, err), "limited to 1024 bytes");
        assert_fails(memstore_delete(fx->m, "ns", key, NULL, err), "limited to 1024 bytes");
        assert_fails(memstore_list(fx->m, "ns", key, NULL, NULL, err), "key prefix is 2000 bytes");
        key[1025] = '\0';
        assert_fails(memstore_set(fx->m, "ns", key, "1", err), "key is 1025 bytes");
        key[1024] = '\0';
        assert_ok(memstore_set(fx->m, "ns", key, "1", err));
        assert_stored(fx->m, "ns", key, "1");
        free(key);

        assert_fails(memstore_set(fx->m, "ns", "", "1", err), "key is empty");
        assert_fails(memstore_get(fx->m, "ns", "", &out, err), "key is empty");
        assert_fails(memstore_set(fx->m, "ns", NULL, "1", err), "no key");
        assert_fails(memstore_set(fx->m, NULL, "k", "1", err), "no namespace");
        assert_fails(memstore_set(NULL, "ns", "k", "1", err), "not open");

        /* not UTF-8: stray byte, overlong NUL, surrogate, truncated, > U+10FFFF */
        const char *bad[] = { "a\xff", "\xc0\x80", "\xed\xa0\x80", "ab\xe2\x82", "\xf4\x90\x80\x80" };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
                assert_fails(memstore_set(fx->m, "ns", bad[i], "1", err), "not valid UTF-8");
        assert_fails(memstore_list(fx->m, "ns", "\xff", NULL, NULL, err), "not valid UTF-8");
        assert_ok(memstore_set(fx->m, "ns", "\xf4\x8f\xbf\xbf", "1", err));  /* U+10FFFF is fine */
}

static void test_value_limits(void **state)
{
        struct fx *fx = *state;
        size_t max = MEMSTORE_VALUE_MAX;
        char *v = malloc(max + 2);
        assert_non_null(v);
        /* a JSON string of exactly 1 MiB */
        memset(v, 'x', max);
        v[0] = '"';
        v[max - 1] = '"';
        v[max] = '\0';
        assert_ok(memstore_set(fx->m, "ns", "big", v, err));
        char *got = NULL;
        assert_ok(memstore_get(fx->m, "ns", "big", &got, err));
        assert_non_null(got);
        assert_int_equal(strlen(got), max);
        free(got);
        /* one byte more */
        v[max - 1] = 'x';
        v[max] = '"';
        v[max + 1] = '\0';
        assert_fails(memstore_set(fx->m, "ns", "big", v, err),
                     "value is 1048577 bytes of JSON; values are limited to 1048576 bytes (1 MiB)");
        free(v);
        /* the refused set left the old value alone */
        got = NULL;
        assert_ok(memstore_get(fx->m, "ns", "big", &got, err));
        assert_non_null(got);
        assert_int_equal(strlen(got), max);
        free(got);
}

static void test_value_json(void **state)
{
        struct fx *fx = *state;
        assert_fails(memstore_set(fx->m, "ns", "k", "", err), "not valid JSON");
        assert_fails(memstore_set(fx->m, "ns", "k", "{", err), "not valid JSON");
        assert_fails(memstore_set(fx->m, "ns", "k", "1 2", err), "not valid JSON");
        assert_fails(memstore_set(fx->m, "ns", "k", "undefined", err), "not valid JSON");
        assert_fails(memstore_set(fx->m, "ns", "k", NULL, err), "no value");
        assert_stored(fx->m, "ns", "k", NULL);
        assert_ok(memstore_set(fx->m, "ns", "k", "null", err));
        assert_ok(memstore_set(fx->m, "ns", "k", "\"a\\u0000b\"", err));
        assert_stored(fx->m, "ns", "k", "\"a\\u0000b\"");
}

static void test_key_count_limit(void **state)
{
        struct fx *fx = *state;
        char key[32];
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        for (unsigned i = 0; i < MEMSTORE_KEYS_MAX; i++) {
                snprintf(key, sizeof(key), "k%05u", i);
                assert_ok(memstore_set(fx->m, "full", key, "1", err));
        }
        clock_gettime(CLOCK_MONOTONIC, &t1);
        double ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
        printf("memstore: %u new-key sets in %.0f ms (%.1f us per set)\n", MEMSTORE_KEYS_MAX, ms,
               ms * 1e3 / MEMSTORE_KEYS_MAX);

        assert_fails(memstore_set(fx->m, "full", "one-too-many", "1", err),
                     "namespace 'full' already holds 10000 keys, the limit per namespace");
        assert_stored(fx->m, "full", "one-too-many", NULL);
        /* overwriting at the limit is fine; other namespaces are unaffected */
        assert_ok(memstore_set(fx->m, "full", "k00000", "2", err));
        assert_stored(fx->m, "full", "k00000", "2");
        assert_ok(memstore_set(fx->m, "other", "k", "1", err));
        bool existed = false;
        assert_ok(memstore_delete(fx->m, "full", "k00001", &existed, err));
        assert_true(existed);
        assert_ok(memstore_set(fx->m, "full", "one-too-many", "1", err));
        char **keys = NULL;
        size_t n = 0;
        assert_ok(memstore_list(fx->m, "full", "", &keys, &n, err));
        assert_int_equal(n, MEMSTORE_KEYS_MAX);
        memstore_keys_free(keys);
}

/* Bytes of keys and values per namespace: a set that would pass the limit
 * fails (MEMSTORE_E_LIMIT) and changes nothing; an overwrite counts its new
 * size only; other namespaces have their own budget. */
static void test_bytes_limit(void **state)
{
        struct fx *fx = *state;
        memstore_set_max(fx->m, 100);
        assert_ok(memstore_set(fx->m, "ns", "a", "\"0123456789012345678901234567890123456789\"", err)); /* 1 + 42 */
        assert_ok(memstore_set(fx->m, "ns", "b", "\"0123456789012345678901234567890123456789\"", err)); /* 86 */
        struct err *e = NULL;
        memstore_set_max(fx->m, 98);
        assert_int_equal(memstore_set(fx->m, "ns", "c", "\"0123456789\"", &e), -1); /* 99 > 98 */
        assert_int_equal(err_code(e), MEMSTORE_E_LIMIT);
        assert_string_equal(err_msg(e), "memory: namespace 'ns' holds 86 bytes of keys and values; storing 13 more "
                                        "would pass its limit of 98 bytes");
        err_free(e);
        assert_stored(fx->m, "ns", "c", NULL);
        /* an overwrite replaces its old size */
        assert_ok(memstore_set(fx->m, "ns", "a", "1", err)); /* 86 - 43 + 2 = 45 */
        assert_ok(memstore_set(fx->m, "ns", "c", "\"0123456789\"", err)); /* 58 */
        assert_ok(memstore_set(fx->m, "other", "a", "\"0123456789012345678901234567890123456789\"", err));
        /* deleting frees room */
        bool existed = false;
        assert_ok(memstore_delete(fx->m, "ns", "b", &existed, err));
        assert_ok(memstore_set(fx->m, "ns", "d", "\"01234567890123456789012345678901234567\"", err));
        memstore_set_max(fx->m, 0); /* back to the default */
        assert_ok(memstore_set(fx->m, "ns", "e", "\"0123456789012345678901234567890123456789\"", err));
}

/* A database of schema version 1 (no bytes column) is upgraded in place:
 * existing rows get their size, the limit applies to them. */
static void test_upgrade_from_v1(void **state)
{
        struct fx *fx = *state;
        char dir[128], path[160];
        snprintf(dir, sizeof(dir), "%s/v1", fx->dir);
        assert_int_equal(mkdir(dir, 0700), 0);
        snprintf(path, sizeof(path), "%s/memory.sqlite3", dir);
        sqlite3 *db = NULL;
        assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
        assert_int_equal(sqlite3_exec(db,
                                      "CREATE TABLE memory (ns TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL,"
                                      " updated_at INTEGER NOT NULL, PRIMARY KEY (ns, key));"
                                      "INSERT INTO memory VALUES ('ns', 'old', '\"0123456789\"', 1);"
                                      "PRAGMA user_version=1;",
                                      NULL, NULL, NULL),
                         SQLITE_OK);
        sqlite3_close(db);
        struct memstore *m = NULL;
        assert_ok(memstore_open(dir, &m, err));
        assert_stored(m, "ns", "old", "\"0123456789\"");
        memstore_set_max(m, 20);
        struct err *e = NULL;
        assert_int_equal(memstore_set(m, "ns", "new", "\"0123\"", &e), -1); /* 15 + 9 > 20 */
        assert_int_equal(err_code(e), MEMSTORE_E_LIMIT);
        err_free(e);
        assert_ok(memstore_set(m, "ns", "n", "1", err)); /* 15 + 2 */
        memstore_close(m);
        assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
        sqlite3_stmt *st = NULL;
        assert_int_equal(sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &st, NULL), SQLITE_OK);
        assert_int_equal(sqlite3_step(st), SQLITE_ROW);
        assert_int_equal(sqlite3_column_int(st, 0), 2);
        sqlite3_finalize(st);
        sqlite3_close(db);
}

static void assert_mode(const char *path, mode_t want)
{
        struct stat st;
        if (stat(path, &st) < 0)
                fail_msg("stat %s: %s", path, strerror(errno));
        if ((st.st_mode & 07777) != want)
                fail_msg("%s has mode %04o, want %04o", path, st.st_mode & 07777, want);
}

static void test_modes(void **state)
{
        struct fx *fx = *state;
        char dir[128], path[160];
        /* a permissive umask must not leak into what we create */
        mode_t old = umask(0);
        snprintf(dir, sizeof(dir), "%s/a/b/state", fx->dir);
        struct memstore *m = NULL;
        assert_ok(memstore_open(dir, &m, err));
        assert_ok(memstore_set(m, "ns", "k", "1", err));  /* -wal and -shm exist now */
        umask(old);
        assert_mode(dir, 0700);
        snprintf(path, sizeof(path), "%s/a", fx->dir);
        assert_mode(path, 0700);
        snprintf(path, sizeof(path), "%s/memory.sqlite3", dir);
        assert_mode(path, 0600);
        snprintf(path, sizeof(path), "%s/memory.sqlite3-wal", dir);
        assert_mode(path, 0600);
        snprintf(path, sizeof(path), "%s/memory.sqlite3-shm", dir);
        assert_mode(path, 0600);
        memstore_close(m);

        /* an existing database readable by others is narrowed */
        snprintf(path, sizeof(path), "%s/memory.sqlite3", dir);
        assert_int_equal(chmod(path, 0644), 0);
        assert_ok(memstore_open(dir, &m, err));
        assert_mode(path, 0600);
        assert_stored(m, "ns", "k", "1");
        memstore_close(m);
}

static void test_wal(void **state)
{
        struct fx *fx = *state;
        char path[128];
        snprintf(path, sizeof(path), "%s/memory.sqlite3", fx->dir);
        sqlite3 *db = NULL;
        assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
        sqlite3_stmt *st = NULL;
        assert_int_equal(sqlite3_prepare_v2(db, "PRAGMA journal_mode", -1, &st, NULL), SQLITE_OK);
        assert_int_equal(sqlite3_step(st), SQLITE_ROW);
        assert_string_equal((const char *)sqlite3_column_text(st, 0), "wal");
        sqlite3_finalize(st);
        /* the schema is the one documented */
        assert_int_equal(sqlite3_prepare_v2(db, "SELECT ns, key, value, updated_at, bytes FROM memory", -1, &st, NULL),
                         SQLITE_OK);
        sqlite3_finalize(st);
        sqlite3_close(db);
}

static void test_open_errors(void **state)
{
        struct fx *fx = *state;
        char path[160], dir[160];
        struct memstore *m = NULL;

        /* a component of the directory is a regular file */
        snprintf(path, sizeof(path), "%s/plain", fx->dir);
        FILE *f = fopen(path, "w");
        assert_non_null(f);
        fclose(f);
        snprintf(dir, sizeof(dir), "%s/plain/sub", fx->dir);
        assert_fails(memstore_open(dir, &m, err), "cannot create directory");
        struct err *e = NULL;
        assert_int_equal(memstore_open(dir, &m, &e), -1);
        assert_int_equal(e->errnum, ENOTDIR);  /* the OS reason is kept for callers */
        assert_non_null(strstr(err_msg(e), "Not a directory; create it or choose another memory directory"));
        err_free(e);
        assert_fails(memstore_open(path, &m, err), "is not a directory");

        /* the database path is a directory */
        snprintf(dir, sizeof(dir), "%s/d", fx->dir);
        snprintf(path, sizeof(path), "%s/d/memory.sqlite3", fx->dir);
        assert_int_equal(mkdir(dir, 0700), 0);
        assert_int_equal(mkdir(path, 0700), 0);
        assert_fails(memstore_open(dir, &m, err), path);

        /* the database is a symlink */
        snprintf(dir, sizeof(dir), "%s/s", fx->dir);
        snprintf(path, sizeof(path), "%s/s/memory.sqlite3", fx->dir);
        assert_int_equal(mkdir(dir, 0700), 0);
        assert_int_equal(symlink("/tmp/elsewhere.sqlite3", path), 0);
        assert_fails(memstore_open(dir, &m, err), "symlink");

        /* not a database at all */
        snprintf(dir, sizeof(dir), "%s/g", fx->dir);
        snprintf(path, sizeof(path), "%s/g/memory.sqlite3", fx->dir);
        assert_int_equal(mkdir(dir, 0700), 0);
        f = fopen(path, "w");
        assert_non_null(f);
        for (int i = 0; i < 512; i++)
                fputs("garbage!", f);
        fclose(f);
        assert_fails(memstore_open(dir, &m, err), path);

        assert_fails(memstore_open("", &m, err), "no directory");
        assert_null(m);
        memstore_close(NULL);
}

static void test_default_dir(void **state)
{
        (void)state;
        char *saved_xdg = getenv("XDG_STATE_HOME") ? strdup(getenv("XDG_STATE_HOME")) : NULL;
        char *saved_home = getenv("HOME") ? strdup(getenv("HOME")) : NULL;
        char *dir = NULL;

        setenv("XDG_STATE_HOME", "/xdg/state", 1);
        setenv("HOME", "/home/u", 1);
        assert_ok(memstore_default_dir(&dir, err));
        assert_string_equal(dir, "/xdg/state/chidori");
        free(dir);

        setenv("XDG_STATE_HOME", "/xdg/state/", 1);
        assert_ok(memstore_default_dir(&dir, err));
        assert_string_equal(dir, "/xdg/state/chidori");
        free(dir);

        unsetenv("XDG_STATE_HOME");
        assert_ok(memstore_default_dir(&dir, err));
        assert_string_equal(dir, "/home/u/.local/state/chidori");
        free(dir);

        setenv("XDG_STATE_HOME", "", 1);  /* empty and relative values are ignored */
        assert_ok(memstore_default_dir(&dir, err));
        assert_string_equal(dir, "/home/u/.local/state/chidori");
        free(dir);
        setenv("XDG_STATE_HOME", "rel/state", 1);
        assert_ok(memstore_default_dir(&dir, err));
        assert_string_equal(dir, "/home/u/.local/state/chidori");
        free(dir);

        unsetenv("XDG_STATE_HOME");
        unsetenv("HOME");
        dir = NULL;
        assert_fails(memstore_default_dir(&dir, err), "set HOME");
        assert_null(dir);

        if (saved_xdg)
                setenv("XDG_STATE_HOME", saved_xdg, 1);
        if (saved_home)
                setenv("HOME", saved_home, 1);
        free(saved_xdg);
        free(saved_home);
}

/* memstore_get's read cache (memstore.c) never hands back a value another
 * writer replaced: a second connection in this process (a server's other
 * session, a nested agent), a second process (another run of the agent,
 * `chidori memory set`), and plain SQLite.  Each read below comes after a
 * read of the same key that filled the cache. */
static void child_set(const char *dir, const char *key, const char *value)
{
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                struct memstore *c = NULL;
                struct err *e = NULL;
                int rc = memstore_open(dir, &c, &e) == 0 && (value ? memstore_set(c, "agent", key, value, &e)
                                                                  : memstore_delete(c, "agent", key, NULL, &e)) == 0;
                memstore_close(c);
                _exit(rc ? 0 : 1);
        }
        int st = 0;
        assert_int_equal(waitpid(pid, &st, 0), pid);
        assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

static void test_cache_other_writers(void **state)
{
        struct fx *fx = *state;
        struct memstore *other = NULL;
        assert_ok(memstore_open(fx->dir, &other, err));
        assert_stored(fx->m, "agent", "k", NULL);  /* cached: absent */
        assert_stored(fx->m, "agent", "k", NULL);
        assert_ok(memstore_set(other, "agent", "k", "1", err));
        assert_stored(fx->m, "agent", "k", "1");
        assert_stored(fx->m, "agent", "k", "1");
        for (int i = 2; i < 50; i++) {  /* every write seen by the very next read */
                char v[16];
                snprintf(v, sizeof(v), "%d", i);
                assert_ok(memstore_set(other, "agent", "k", v, err));
                assert_stored(fx->m, "agent", "k", v);
                assert_stored(fx->m, "agent", "k", v);
        }
        assert_ok(memstore_delete(other, "agent", "k", NULL, err));
        assert_stored(fx->m, "agent", "k", NULL);
        assert_ok(memstore_set(fx->m, "agent", "k", "\"mine\"", err));  /* our own writes */
        assert_stored(fx->m, "agent", "k", "\"mine\"");
        size_t n = 0;
        assert_ok(memstore_clear(other, "agent", &n, err));
        assert_stored(fx->m, "agent", "k", NULL);

        /* another process */
        assert_ok(memstore_set(fx->m, "agent", "p", "1", err));
        assert_stored(fx->m, "agent", "p", "1");
        child_set(fx->dir, "p", "2");
        assert_stored(fx->m, "agent", "p", "2");
        child_set(fx->dir, "p", NULL);
        assert_stored(fx->m, "agent", "p", NULL);

        /* plain SQLite, bypassing memstore */
        assert_ok(memstore_set(fx->m, "agent", "q", "1", err));
        assert_stored(fx->m, "agent", "q", "1");
        char path[128];
        snprintf(path, sizeof(path), "%s/%s", fx->dir, MEMSTORE_DB_NAME);
        sqlite3 *db = NULL;
        assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
        assert_int_equal(sqlite3_exec(db, "UPDATE memory SET value = '3' WHERE ns = 'agent' AND key = 'q'", NULL, NULL,
                                      NULL),
                         SQLITE_OK);
        sqlite3_close(db);
        assert_stored(fx->m, "agent", "q", "3");
        memstore_close(other);
}

static void test_get_speed(void **state)
{
        struct fx *fx = *state;
        enum { NKEYS = 1000, NGETS = 10000 };
        char key[32];
        const char *value = "{\"role\":\"assistant\",\"text\":\"a typical remembered fact, about a hundred bytes long\"}";
        for (int i = 0; i < NKEYS; i++) {
                snprintf(key, sizeof(key), "fact:%04d", i);
                assert_ok(memstore_set(fx->m, "agent", key, value, err));
        }
        struct timespec t0, t1;
        size_t total = 0;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        for (int i = 0; i < NGETS; i++) {
                snprintf(key, sizeof(key), "fact:%04d", i % NKEYS);
                char *v = NULL;
                struct err *e = NULL;
                if (memstore_get(fx->m, "agent", key, &v, &e) < 0 || !v)
                        fail_msg("get %s: %s", key, err_msg(e));
                total += strlen(v);
                free(v);
        }
        clock_gettime(CLOCK_MONOTONIC, &t1);
        double us = (double)(t1.tv_sec - t0.tv_sec) * 1e6 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e3;
        assert_int_equal(total, (size_t)NGETS * strlen(value));
        printf("memstore: %.2f us per get (%d gets over %d keys)\n", us / NGETS, NGETS, NKEYS);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_roundtrip, setup, teardown),
                cmocka_unit_test_setup_teardown(test_cache_other_writers, setup, teardown),
                cmocka_unit_test_setup_teardown(test_absent, setup, teardown),
                cmocka_unit_test_setup_teardown(test_overwrite, setup, teardown),
                cmocka_unit_test_setup_teardown(test_delete, setup, teardown),
                cmocka_unit_test_setup_teardown(test_clear, setup, teardown),
                cmocka_unit_test_setup_teardown(test_clear_leaves_no_totals, setup, teardown),
                cmocka_unit_test_setup_teardown(test_list_prefix_literal, setup, teardown),
                cmocka_unit_test_setup_teardown(test_list_sorted_bytes, setup, teardown),
                cmocka_unit_test_setup_teardown(test_list_many_grows, setup, teardown),
                cmocka_unit_test_setup_teardown(test_namespaces, setup, teardown),
                cmocka_unit_test_setup_teardown(test_persistence, setup, teardown),
                cmocka_unit_test_setup_teardown(test_key_limits, setup, teardown),
                cmocka_unit_test_setup_teardown(test_value_limits, setup, teardown),
                cmocka_unit_test_setup_teardown(test_value_json, setup, teardown),
                cmocka_unit_test_setup_teardown(test_key_count_limit, setup, teardown),
                cmocka_unit_test_setup_teardown(test_bytes_limit, setup, teardown),
                cmocka_unit_test_setup_teardown(test_upgrade_from_v1, setup, teardown),
                cmocka_unit_test_setup_teardown(test_modes, setup, teardown),
                cmocka_unit_test_setup_teardown(test_wal, setup, teardown),
                cmocka_unit_test_setup_teardown(test_open_errors, setup, teardown),
                cmocka_unit_test_setup_teardown(test_default_dir, setup, teardown),
                cmocka_unit_test_setup_teardown(test_get_speed, setup, teardown),
        };
        return cmocka_run_group_tests_name("memstore", tests, NULL, NULL);
}
