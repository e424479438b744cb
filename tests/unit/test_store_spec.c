/* tests/unit/test_store_spec.c — server/store.c: the --store forms, the
 * password never shown (store_redact, the usage error), what the CLI reads
 * of a postgres:// URL (its unix socket folder, its user), and SQLite
 * behind the same interface (sqlite:PATH); store_hold / store_release on
 * SQLite: a session's record committed as one transaction, seen by another
 * connection only after the release. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "common/err.h"
#include "server/store.h"

static void test_spec_forms(void **state)
{
        (void)state;
        enum store_kind k;
        struct err *e = NULL;
        assert_int_equal(store_spec_parse("sqlite:/x/y.db", &k, &e), 0);
        assert_int_equal(k, STORE_SQLITE);
        assert_int_equal(store_spec_parse("postgres://h/db", &k, &e), 0);
        assert_int_equal(k, STORE_POSTGRES);
        assert_int_equal(store_spec_parse("postgresql://u@h:5433/db?sslmode=require", &k, &e), 0);
        assert_int_equal(k, STORE_POSTGRES);
        static const char *const bad[] = { "sqlite:", "mysql://h/db", "postgres:/h", "", "/var/lib/x.db" };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                assert_int_equal(store_spec_parse(bad[i], &k, &e), -1);
                assert_int_equal(err_code(e), STORE_E_USAGE);
                assert_non_null(strstr(err_msg(e), "expected sqlite:PATH, postgres://"));
                err_free(e);
                e = NULL;
        }
        /* A value that may hold a password is not echoed. */
        assert_int_equal(store_spec_parse("mysql://u:hunter2@h/db", &k, &e), -1);
        assert_null(strstr(err_msg(e), "hunter2"));
        err_free(e);
}

static void test_redact(void **state)
{
        (void)state;
        char out[256];
        store_redact("postgres://u:hunter2@h:5432/db?sslmode=require", out, sizeof(out));
        assert_string_equal(out, "postgres://u:***@h:5432/db?sslmode=require");
        store_redact("postgres://u@h/db", out, sizeof(out));
        assert_string_equal(out, "postgres://u@h/db");
        store_redact("postgresql://u:p%40ss@/db?host=/run/pg&password=x2&user=v", out, sizeof(out));
        assert_string_equal(out, "postgresql://u:***@/db?host=/run/pg&password=***&user=v");
        store_redact("postgres://h/db?password=only", out, sizeof(out));
        assert_string_equal(out, "postgres://h/db?password=***");
        store_redact("postgres://u:pw@h/db", out, 12); /* truncated, still without it */
        assert_null(strstr(out, "pw@"));
}

static void test_socket_dir(void **state)
{
        (void)state;
        char *d = NULL;
        struct err *e = NULL;
        unsetenv("PGHOST");
        unsetenv("PGHOSTADDR");
        assert_int_equal(store_pg_socket_dir("postgres://u:p@/db?host=/tmp/pg&port=5", &d, &e), 0);
        assert_string_equal(d, "/tmp/pg");
        free(d);
        assert_int_equal(store_pg_socket_dir("postgres://u@%2Fvar%2Frun%2Fpg:5433/db", &d, &e), 0);
        assert_string_equal(d, "/var/run/pg");
        free(d);
        assert_int_equal(store_pg_socket_dir("postgres://db.internal:5432/db", &d, &e), 0);
        assert_null(d);
        assert_int_equal(store_pg_socket_dir("postgres://[::1]:5432/db", &d, &e), 0);
        assert_null(d);
        /* No host at all: libpq's default socket folder, unless PGHOST names a host. */
        assert_int_equal(store_pg_socket_dir("postgres:///db", &d, &e), 0);
        assert_string_equal(d, "/var/run/postgresql");
        free(d);
        setenv("PGHOST", "db", 1);
        assert_int_equal(store_pg_socket_dir("postgres:///db", &d, &e), 0);
        assert_null(d);
        setenv("PGHOST", "/srv/pg", 1);
        assert_int_equal(store_pg_socket_dir("postgres:///db", &d, &e), 0);
        assert_string_equal(d, "/srv/pg");
        free(d);
        unsetenv("PGHOST");
        assert_int_equal(store_pg_socket_dir("postgres:///db?hostaddr=127.0.0.1", &d, &e), 0);
        assert_null(d);
        assert_true(store_pg_has_user("postgres://alice:pw@h/db"));
        assert_true(store_pg_has_user("postgres://h/db?user=bob"));
        assert_false(store_pg_has_user("postgres://h/db"));
        assert_false(store_pg_has_user("postgres://:pw@h/db"));
}

static int one_id(void *arg, const char *id)
{
        snprintf(arg, 64, "%s", id);
        return 0;
}

/* The folder of a test's s.db, with the database's files. */
static void remove_store_dir(const char *dir)
{
        static const char *const left[] = { "s.db", "s.db-wal", "s.db-shm" };
        char path[128];
        for (size_t i = 0; i < sizeof(left) / sizeof(left[0]); i++) {
                snprintf(path, sizeof(path), "%s/%s", dir, left[i]);
                unlink(path);
        }
        assert_int_equal(rmdir(dir), 0);
}

static void test_sqlite_path(void **state)
{
        (void)state;
        char dir[] = "/tmp/chidori-store-XXXXXX";
        assert_non_null(mkdtemp(dir));
        char spec[128];
        snprintf(spec, sizeof(spec), "sqlite:%s/s.db", dir);
        struct store *st = NULL;
        struct err *e = NULL;
        assert_int_equal(store_open_spec(spec, "/nonexistent", &st, &e), 0);
        assert_string_equal(store_kind(st), "sqlite");
        assert_int_equal(store_ready(st, &e), 0);
        struct store_session s = { .id = "s1", .tenant = "t", .agent = "a.js", .status = "paused",
                                   .input = "{\"n\": 1.50}", .created_at = "x", .updated_at = "x" };
        assert_int_equal(store_session_insert(st, &s, NULL, &e), 0);
        char got[64] = "";
        assert_int_equal(store_session_ids(st, "paused", one_id, got, &e), 0);
        assert_string_equal(got, "s1");
        struct memstore *mem = (struct memstore *)1;
        assert_int_equal(store_memory_open(st, &mem, &e), 0);
        assert_null(mem); /* SQLite: the memory stays in the state directory */
        store_close(st);
        char path[128];
        snprintf(path, sizeof(path), "%s/s.db", dir);
        assert_int_equal(access(path, F_OK), 0);
        /* Without chidori-broker's registration, postgres is refused, saying why. */
        assert_int_equal(store_open_spec("postgres://h/db", dir, &st, &e), -1);
        assert_int_equal(err_code(e), STORE_E_USAGE);
        assert_non_null(strstr(err_msg(e), "served by the broker"));
        err_free(e);
        remove_store_dir(dir);
}

/* Rows of `sql` (a SELECT COUNT(*)) as another connection sees them:
 * what is committed. */
static int committed(const char *path, const char *sql)
{
        sqlite3 *db = NULL;
        assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
        sqlite3_stmt *q = NULL;
        assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &q, NULL), SQLITE_OK);
        assert_int_equal(sqlite3_step(q), SQLITE_ROW);
        int n = sqlite3_column_int(q, 0);
        sqlite3_finalize(q);
        sqlite3_close(db);
        return n;
}

static void test_sqlite_hold(void **state)
{
        (void)state;
        char dir[] = "/tmp/chidori-store-XXXXXX";
        assert_non_null(mkdtemp(dir));
        char spec[160], path[128];
        snprintf(path, sizeof(path), "%s/s.db", dir);
        snprintf(spec, sizeof(spec), "sqlite:%s", path);
        struct store *st = NULL;
        struct err *e = NULL;
        assert_int_equal(store_open_spec(spec, "/nonexistent", &st, &e), 0);
        struct store_session s = { .id = "s1", .tenant = "t", .agent = "a.js", .status = "queued",
                                   .input = "null", .created_at = "x", .updated_at = "x" };
        assert_int_equal(store_session_insert(st, &s, NULL, &e), 0);
        const char *running = "SELECT COUNT(*) FROM sessions WHERE status = 'running'";
        const char *lines = "SELECT COUNT(*) FROM journal";
        const char *events = "SELECT COUNT(*) FROM events";
        /* Held (twice: holds nest): a journal line that would commit, the
         * status, an event that would commit: none of it is committed. */
        store_hold(st);
        store_hold(st);
        assert_int_equal(store_journal_append(st, "s1", "{\"type\":\"header\"}", false, &e), 0);
        assert_int_equal(store_session_update(st, "s1", "running", NULL, NULL, -1, NULL, &e), 0);
        uint64_t seq = 0;
        assert_int_equal(store_event_append(st, "s1", "status", "{}", false, &seq, &e), 0);
        assert_int_equal(seq, 1);
        assert_int_equal(store_commit(st, &e), 0);
        assert_int_equal(committed(path, running) + committed(path, lines) + committed(path, events), 0);
        /* This connection reads what it holds. */
        struct store_session got = { 0 };
        assert_int_equal(store_session_get(st, "s1", &got, &e), 0);
        assert_string_equal(got.status, "running");
        store_session_clear(&got);
        assert_int_equal(store_release(st, &e), 0);
        assert_int_equal(committed(path, running), 0); /* the outer hold still holds */
        assert_int_equal(store_release(st, &e), 0);
        assert_int_equal(committed(path, running), 1);
        assert_int_equal(committed(path, lines), 1);
        assert_int_equal(committed(path, events), 1);
        /* Not held: each write is committed when it returns, as before. */
        assert_int_equal(store_journal_append(st, "s1", "{\"type\":\"end\"}", false, &e), 0);
        assert_int_equal(committed(path, lines), 2);
        /* A new session's insert is its own transaction even when held: what
         * was held before it is committed with it. */
        store_hold(st);
        assert_int_equal(store_session_update(st, "s1", "done", NULL, NULL, 0, NULL, &e), 0);
        struct store_session s2 = s;
        s2.id = "s2";
        assert_int_equal(store_session_insert(st, &s2, NULL, &e), 0);
        assert_int_equal(committed(path, "SELECT COUNT(*) FROM sessions WHERE status = 'done' OR id = 's2'"), 2);
        assert_int_equal(store_release(st, &e), 0);
        store_close(st);
        remove_store_dir(dir);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_spec_forms),
                cmocka_unit_test(test_redact),
                cmocka_unit_test(test_socket_dir),
                cmocka_unit_test(test_sqlite_path),
                cmocka_unit_test(test_sqlite_hold),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
