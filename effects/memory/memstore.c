/* effects/memory/memstore.c — agent memory persisted in SQLite.  See memstore.h. */
#define _GNU_SOURCE
#include "effects/memory/memstore.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

#include "common/cleanup.h"
#include "common/err.h"
#include "proto/json.h"

/* 1: the table; 2: its bytes column and the per-namespace totals. */
#define SCHEMA_VERSION 2

/* The read cache of memstore_get: the last values read, valid while the
 * database has not changed.  Whether it changed, by this connection or any
 * other in any process (another run of the same agent, `chidori memory`, a
 * server's session), is in WAL mode the WAL-index header at the start of
 * the -shm file that every connection maps: every commit rewrites it (its
 * change counter, frame count or salts).  SQLite itself compares it to see
 * whether its page cache is still good.  The cache keeps the header it was
 * filled under and is dropped whole as soon as the header differs.  A value
 * read after the header was copied can only be newer than that header says,
 * and the next lookup sees the newer header and drops it: never older than
 * the last commit before the lookup.  Checking costs a copy of 48 bytes of
 * shared memory, no system call; a SQLite read costs two more here (the
 * read lock's fcntl, taken and released). */
#define CACHE_SLOTS 64u
#define CACHE_VALUE_MAX 4096u
#define WAL_INDEX_HDR_BYTES 48u  /* one copy of the WalIndexHdr (SQLite's walformat: "the wal-index header") */
#define WAL_INDEX_PAGE 32768     /* SQLite's WALINDEX_PGSZ: the size of every region it maps */

struct cache_slot {
        char *ns, *key;
        char *value;  /* the stored JSON; NULL: the key is absent */
        bool used;
};

struct memstore {
        struct cache_slot cache[CACHE_SLOTS];
        unsigned char cache_hdr[WAL_INDEX_HDR_BYTES]; /* the header the cache was filled under */
        sqlite3 *db;
        char *path;  /* dir/memory.sqlite3, for messages */
        sqlite3_stmt *get, *set, *del, *list;
        unsigned long long max_bytes;  /* per namespace */
        const struct memstore_backend *be; /* NULL: SQLite above */
        void *be_handle;
};

static void cache_clear(struct memstore *m);

static const char SQL_SCHEMA[] =
        "CREATE TABLE IF NOT EXISTS memory ("
        " ns TEXT NOT NULL,"
        " key TEXT NOT NULL,"
        " value TEXT NOT NULL,"
        " updated_at INTEGER NOT NULL,"
        " bytes INTEGER NOT NULL DEFAULT 0,"
        " PRIMARY KEY (ns, key))";
/* Version 2: each row's size (key + value bytes), and a namespace's key
 * count and bytes kept by triggers, in the statement that changes the row:
 * they move together with the rows they count.  The upgrade recomputes
 * them from the rows. */
static const char SQL_ADD_BYTES[] =
        "ALTER TABLE memory ADD COLUMN bytes INTEGER NOT NULL DEFAULT 0;"
        "UPDATE memory SET bytes = length(CAST(key AS BLOB)) + length(CAST(value AS BLOB));";
static const char SQL_TOTALS[] =
        "CREATE TABLE IF NOT EXISTS memory_ns ("
        " ns TEXT PRIMARY KEY,"
        " keys INTEGER NOT NULL,"
        " bytes INTEGER NOT NULL);"
        "DELETE FROM memory_ns;"
        "INSERT INTO memory_ns (ns, keys, bytes) SELECT ns, count(*), sum(bytes) FROM memory GROUP BY ns;"
        "CREATE TRIGGER IF NOT EXISTS memory_ns_insert AFTER INSERT ON memory BEGIN"
        " INSERT INTO memory_ns (ns, keys, bytes) VALUES (new.ns, 1, new.bytes)"
        " ON CONFLICT (ns) DO UPDATE SET keys = keys + 1, bytes = bytes + excluded.bytes; END;"
        "CREATE TRIGGER IF NOT EXISTS memory_ns_update AFTER UPDATE OF bytes ON memory BEGIN"
        " UPDATE memory_ns SET bytes = bytes - old.bytes + new.bytes WHERE ns = new.ns; END;"
        "CREATE TRIGGER IF NOT EXISTS memory_ns_delete AFTER DELETE ON memory BEGIN"
        " UPDATE memory_ns SET keys = keys - 1, bytes = bytes - old.bytes WHERE ns = old.ns; END;";
static const char SQL_GET[] = "SELECT value FROM memory WHERE ns = ?1 AND key = ?2";
/* SQL_SET enforces the per-namespace limits (keys, bytes) in the same
 * statement (hence the same write transaction) as the insert, so two
 * processes cannot both pass them.  An overwrite skips the key count
 * (EXISTS comes first and short-circuits the OR) and is charged its new size
 * less its old one.  The totals come from memory_ns, one index lookup each
 * (counting the namespace's rows instead cost ~0.3 ms at 10,000 keys).
 * When a limit stops the insert, the statement changes no row. */
static const char SQL_SET[] =
        "INSERT INTO memory (ns, key, value, updated_at, bytes)"
        " SELECT ?1, ?2, ?3, ?4, ?6"
        " WHERE (EXISTS (SELECT 1 FROM memory WHERE ns = ?1 AND key = ?2)"
        "        OR coalesce((SELECT keys FROM memory_ns WHERE ns = ?1), 0) < ?5)"
        "   AND coalesce((SELECT bytes FROM memory_ns WHERE ns = ?1), 0)"
        "       - coalesce((SELECT bytes FROM memory WHERE ns = ?1 AND key = ?2), 0) + ?6 <= ?7"
        " ON CONFLICT (ns, key) DO UPDATE"
        " SET value = excluded.value, updated_at = excluded.updated_at, bytes = excluded.bytes";
/* Why a set changed nothing: [key exists, keys, bytes]. */
static const char SQL_WHY[] =
        "SELECT EXISTS (SELECT 1 FROM memory WHERE ns = ?1 AND key = ?2),"
        " coalesce((SELECT keys FROM memory_ns WHERE ns = ?1), 0),"
        " coalesce((SELECT bytes FROM memory_ns WHERE ns = ?1), 0)";
static const char SQL_DEL[] = "DELETE FROM memory WHERE ns = ?1 AND key = ?2";
/* Keys sharing a prefix are contiguous in byte order and sort at or after the
 * prefix itself, so a range scan from the prefix that stops at the first
 * non-matching key is a literal prefix match (no LIKE, no wildcards) that
 * uses the primary-key index.  BINARY collation compares with memcmp. */
static const char SQL_LIST[] = "SELECT key FROM memory WHERE ns = ?1 AND key >= ?2 ORDER BY key";

static void stmt_resetp(sqlite3_stmt **s)
{
        if (*s) {
                sqlite3_reset(*s);
                sqlite3_clear_bindings(*s);
        }
}
#define _cleanup_reset_ __attribute__((cleanup(stmt_resetp)))

/* err_set, with the OS reason before the hint: "what: reason; hint".  (err_set
 * would append strerror after the hint.)  errnum 0 = no OS reason. */
static int fail(struct err **err, int errnum, const char *hint, const char *fmt, ...)
        __attribute__((format(printf, 4, 5)));
static int fail(struct err **err, int errnum, const char *hint, const char *fmt, ...)
{
        if (!err)
                return -1;
        _cleanup_free_ char *what = NULL;
        va_list ap;
        va_start(ap, fmt);
        int n = vasprintf(&what, fmt, ap);
        va_end(ap);
        if (n < 0)
                return err_set(err, ENOMEM, "memory: out of memory while reporting an error");
        err_set(err, 0, "%s%s%s%s%s", what, errnum ? ": " : "", errnum ? strerror(errnum) : "",
                hint ? "; " : "", hint ? hint : "");
        if (*err)
                (*err)->errnum = errnum;
        return -1;
}

static const char *db_hint(int rc)
{
        switch (rc & 0xff) {
        case SQLITE_BUSY:
        case SQLITE_LOCKED:
                return "another process held the database locked for over 5 s, try again";
        case SQLITE_FULL:
                return "free some disk space";
        case SQLITE_READONLY:
        case SQLITE_PERM:
        case SQLITE_CANTOPEN:
                return "check that the file and its directory are writable by this user";
        case SQLITE_CORRUPT:
        case SQLITE_NOTADB:
                return "the file is damaged or not a chidori memory database, move it aside to start empty";
        default:
                return NULL;
        }
}

/* An SQLite failure: what we tried, where, SQLite's reason, the OS reason
 * for I/O failures, and a hint. */
static int db_err(sqlite3 *db, const char *path, int rc, struct err **err, const char *what)
{
        int prim = rc & 0xff;
        int errnum = db && (prim == SQLITE_IOERR || prim == SQLITE_CANTOPEN || prim == SQLITE_FULL)
                             ? sqlite3_system_errno(db) : 0;
        return fail(err, errnum, db_hint(rc), "memory: %s in '%s': %s", what, path,
                    db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
}

/* Offset of the first byte that is not part of well-formed UTF-8 (no
 * overlongs, no surrogates, nothing above U+10FFFF), or len if all is well. */
static size_t utf8_bad_offset(const unsigned char *s, size_t len)
{
        size_t i = 0;
        while (i < len) {
                unsigned c = s[i];
                if (c < 0x80) {
                        i++;
                        continue;
                }
                size_t n;
                unsigned lo = 0x80, hi = 0xbf;
                if (c >= 0xc2 && c <= 0xdf)
                        n = 1;
                else if (c == 0xe0)
                        n = 2, lo = 0xa0;
                else if (c == 0xed)
                        n = 2, hi = 0x9f;
                else if (c >= 0xe1 && c <= 0xef)
                        n = 2;
                else if (c == 0xf0)
                        n = 3, lo = 0x90;
                else if (c >= 0xf1 && c <= 0xf3)
                        n = 3;
                else if (c == 0xf4)
                        n = 3, hi = 0x8f;
                else
                        return i;
                if (len - i - 1 < n || s[i + 1] < lo || s[i + 1] > hi)
                        return i;
                for (size_t k = 2; k <= n; k++)
                        if ((s[i + k] & 0xc0) != 0x80)
                                return i;
                i += n + 1;
        }
        return len;
}

/* Keys: 1..MEMSTORE_KEY_MAX bytes of UTF-8.  Prefixes: the same, but may be empty. */
static int check_key(const char *key, bool is_prefix, size_t *ret_len, struct err **err)
{
        const char *what = is_prefix ? "key prefix" : "key";
        if (!key)
                return err_set(err, 0, "memory: no %s given; pass a string", what);
        size_t len = strnlen(key, MEMSTORE_KEY_MAX + 1);
        if (len == 0 && !is_prefix)
                return err_set(err, 0, "memory: key is empty; keys must be 1 to %u bytes of UTF-8 text",
                               MEMSTORE_KEY_MAX);
        if (len > MEMSTORE_KEY_MAX)
                return err_set(err, 0, "memory: %s is %zu bytes; keys are limited to %u bytes", what,
                               len + strlen(key + len), MEMSTORE_KEY_MAX);
        size_t bad = utf8_bad_offset((const unsigned char *)key, len);
        if (bad < len)
                return err_set(err, 0,
                               "memory: %s is not valid UTF-8 (byte 0x%02x at offset %zu); keys must be UTF-8 text",
                               what, (unsigned char)key[bad], bad);
        if (ret_len)
                *ret_len = len;
        return 0;
}

static int check_store(struct memstore *m, const char *ns, struct err **err)
{
        if (!m)
                return err_set(err, 0, "memory: the store is not open; call memstore_open first");
        if (!ns)
                return err_set(err, 0, "memory: no namespace given; pass the agent's namespace");
        /* A file deleted (or replaced) under an open connection takes every
         * later write with it, acknowledged but gone: refuse instead. */
        int moved = 0;
        if (m->db && sqlite3_file_control(m->db, "main", SQLITE_FCNTL_HAS_MOVED, &moved) == SQLITE_OK && moved)
                return fail(err, 0,
                            "nothing was read or stored; restore the file, or run again to start a new store",
                            "memory: the database '%s' was deleted or replaced while this run had it open", m->path);
        return 0;
}

static int bind_text(sqlite3_stmt *st, int idx, const char *s, size_t len)
{
        /* SQLITE_STATIC: the strings outlive the step; stmt_resetp clears the bindings. */
        return sqlite3_bind_text(st, idx, s, (int)len, SQLITE_STATIC);
}

static int64_t now_ms(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* mkdir -p with mode 0700 for every directory we create. */
static int make_dirs(const char *dir, struct err **err)
{
        _cleanup_free_ char *p = strdup(dir);
        if (!p)
                return err_set(err, ENOMEM, "memory: cannot copy directory name");
        for (char *s = p + 1;; s++) {
                if (*s != '/' && *s != '\0')
                        continue;
                char saved = *s;
                *s = '\0';
                if (mkdir(p, 0700) == 0) {
                        /* mkdir applied the umask; the mode we promise is exactly 0700 */
                        if (chmod(p, 0700) < 0)
                                return fail(err, errno, NULL, "memory: cannot set mode 0700 on '%s'", p);
                } else if (errno != EEXIST) {
                        return fail(err, errno, "create it or choose another memory directory",
                                    "memory: cannot create directory '%s'", p);
                }
                *s = saved;
                if (saved == '\0')
                        break;
        }
        struct stat st;
        if (stat(dir, &st) < 0)
                return fail(err, errno, NULL, "memory: cannot use directory '%s'", dir);
        if (!S_ISDIR(st.st_mode))
                return err_set(err, 0,
                               "memory: '%s' exists and is not a directory; remove it or choose another memory directory",
                               dir);
        return 0;
}

/* Create the database file ourselves so its mode is 0600 from the start
 * (SQLite would create it 0644 & ~umask, and gives the -wal and -shm files
 * the mode of the database file). */
static int prepare_db_file(const char *path, struct err **err)
{
        _cleanup_close_ int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY, 0600);
        if (fd < 0) {
                if (errno == ELOOP)
                        return err_set(err, 0,
                                       "memory: cannot open database '%s': it is a symlink; replace it with the real file",
                                       path);
                return fail(err, errno,
                            errno == EISDIR ? "move it aside" : "check that the directory is writable by this user",
                            "memory: cannot open database '%s'", path);
        }
        struct stat st;
        if (fstat(fd, &st) < 0)
                return fail(err, errno, NULL, "memory: cannot stat database '%s'", path);
        if (!S_ISREG(st.st_mode))
                return err_set(err, 0, "memory: cannot open database '%s': not a regular file; move it aside",
                               path);
        if ((st.st_mode & 07777) != 0600 && fchmod(fd, 0600) < 0)
                return fail(err, errno, "make this user its owner", "memory: cannot set mode 0600 on database '%s'", path);
        return 0;
}

static int pragma_int(struct memstore *m, const char *sql, int *ret, struct err **err)
{
        sqlite3_stmt *st = NULL;
        int rc = sqlite3_prepare_v2(m->db, sql, -1, &st, NULL);
        if (rc == SQLITE_OK)
                rc = sqlite3_step(st);
        if (rc != SQLITE_ROW) {
                db_err(m->db, m->path, rc, err, "cannot read settings");
                sqlite3_finalize(st);
                return -1;
        }
        *ret = sqlite3_column_int(st, 0);
        sqlite3_finalize(st);
        return 0;
}

/* Write-ahead logging, or an error naming why not (a network filesystem). */
static int db_wal(struct memstore *m, struct err **err)
{
        sqlite3 *db = m->db;
        sqlite3_stmt *st = NULL;
        int rc = sqlite3_prepare_v2(db, "PRAGMA journal_mode=WAL", -1, &st, NULL);
        if (rc == SQLITE_OK)
                rc = sqlite3_step(st);
        if (rc != SQLITE_ROW) {
                db_err(db, m->path, rc, err, "cannot switch to WAL journal mode");
                sqlite3_finalize(st);
                return -1;
        }
        const char *mode = (const char *)sqlite3_column_text(st, 0);
        if (!mode || strcasecmp(mode, "wal") != 0) {
                err_set(err, 0,
                        "memory: cannot switch '%s' to WAL journal mode (it stays '%s'); keep the memory directory on a local filesystem",
                        m->path, mode ? mode : "?");
                sqlite3_finalize(st);
                return -1;
        }
        sqlite3_finalize(st);
        return 0;
}

/* A file of schema version 1 (or one that says 2 without the totals table)
 * brought to version 2, in one transaction: another chidori sees version 1
 * or 2, never half of it. */
static int db_upgrade(struct memstore *m, struct err **err)
{
        sqlite3 *db = m->db;
        int rc = sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL);
        sqlite3_stmt *probe = NULL;
        bool has_bytes = rc == SQLITE_OK &&
                         sqlite3_prepare_v2(db, "SELECT bytes FROM memory LIMIT 0", -1, &probe, NULL) == SQLITE_OK;
        sqlite3_finalize(probe);
        if (rc == SQLITE_OK && !has_bytes)
                rc = sqlite3_exec(db, SQL_ADD_BYTES, NULL, NULL, NULL);
        if (rc == SQLITE_OK)
                rc = sqlite3_exec(db, SQL_TOTALS, NULL, NULL, NULL);
        if (rc == SQLITE_OK)
                rc = sqlite3_exec(db, "PRAGMA user_version=2", NULL, NULL, NULL);
        if (rc == SQLITE_OK)
                rc = sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
        if (rc != SQLITE_OK) {
                db_err(db, m->path, rc, err, "cannot upgrade the memory table to schema version 2");
                sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
                return -1;
        }
        return 0;
}

static int setup_db(struct memstore *m, struct err **err)
{
        sqlite3 *db = m->db;
        int rc;

        sqlite3_extended_result_codes(db, 1);
        /* The file lives in the user's state directory; refuse schema tricks
         * (functions with side effects in views/triggers, writable schema). */
        sqlite3_db_config(db, SQLITE_DBCONFIG_DEFENSIVE, 1, (int *)NULL);
        sqlite3_db_config(db, SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0, (int *)NULL);
        sqlite3_busy_timeout(db, 5000);
        if (db_wal(m, err) < 0)
                return -1;

        char *emsg = NULL;
        rc = sqlite3_exec(db, "PRAGMA synchronous=NORMAL", NULL, NULL, NULL);
        if (rc == SQLITE_OK)
                rc = sqlite3_exec(db, SQL_SCHEMA, NULL, NULL, &emsg);
        sqlite3_free(emsg);
        if (rc != SQLITE_OK)
                return db_err(db, m->path, rc, err, "cannot create the memory table");

        int version;
        if (pragma_int(m, "PRAGMA user_version", &version, err) < 0)
                return -1;
        if (version > SCHEMA_VERSION)
                return err_set(err, 0,
                               "memory: '%s' has schema version %d but this chidori knows only %d; upgrade chidori or use another memory directory",
                               m->path, version, SCHEMA_VERSION);
        /* The totals table is checked too: a file that says version 2 without
         * it (an interrupted or hand-made one) is upgraded again, harmlessly. */
        sqlite3_stmt *has_totals = NULL;
        bool totals = sqlite3_prepare_v2(db, "SELECT 1 FROM memory_ns LIMIT 0", -1, &has_totals, NULL) == SQLITE_OK;
        sqlite3_finalize(has_totals);
        if ((version < SCHEMA_VERSION || !totals) && db_upgrade(m, err) < 0)
                return -1;

        struct {
                const char *sql;
                sqlite3_stmt **st;
        } stmts[] = {
                { SQL_GET, &m->get },
                { SQL_SET, &m->set },
                { SQL_DEL, &m->del },
                { SQL_LIST, &m->list },
        };
        for (size_t i = 0; i < ARRAY_SIZE(stmts); i++) {
                rc = sqlite3_prepare_v3(db, stmts[i].sql, -1, SQLITE_PREPARE_PERSISTENT, stmts[i].st, NULL);
                if (rc != SQLITE_OK)
                        return db_err(db, m->path, rc, err, "cannot prepare the memory queries");
        }
        return 0;
}

int memstore_open(const char *dir, struct memstore **ret, struct err **err)
{
        if (!dir || !*dir)
                return err_set(err, 0, "memory: no directory given; pass the memory directory");
        if (make_dirs(dir, err) < 0)
                return -1;

        struct memstore *m = calloc(1, sizeof(*m));
        if (!m)
                return err_set(err, ENOMEM, "memory: cannot allocate the store");
        if (asprintf(&m->path, "%s/%s", dir, MEMSTORE_DB_NAME) < 0) {
                m->path = NULL;
                memstore_close(m);
                return err_set(err, ENOMEM, "memory: cannot build the database path");
        }
        if (prepare_db_file(m->path, err) < 0)
                goto fail;

        int rc = sqlite3_open_v2(m->path, &m->db,
                                 SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOFOLLOW |
                                         SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE,
                                 NULL);
        if (rc != SQLITE_OK) {
                if (!m->db) {
                        err_set(err, ENOMEM, "memory: cannot open database '%s'", m->path);
                        goto fail;
                }
                fail(err, sqlite3_system_errno(m->db), db_hint(rc), "memory: cannot open database '%s': %s",
                     m->path, sqlite3_errmsg(m->db));
                goto fail;
        }
        if (setup_db(m, err) < 0)
                goto fail;
        m->max_bytes = MEMSTORE_DEFAULT_NS_BYTES;
        *ret = m;
        return 0;
fail:
        memstore_close(m);
        return -1;
}

void memstore_set_max(struct memstore *m, unsigned long long max_bytes)
{
        m->max_bytes = max_bytes ? max_bytes : MEMSTORE_DEFAULT_NS_BYTES;
}

int memstore_open_backend(const struct memstore_backend *be, void *handle, struct memstore **ret,
                          struct err **err)
{
        struct memstore *m = calloc(1, sizeof(*m));
        if (!m)
                return err_set(err, ENOMEM, "memory: cannot allocate the store");
        m->be = be;
        m->be_handle = handle;
        m->max_bytes = MEMSTORE_DEFAULT_NS_BYTES;
        *ret = m;
        return 0;
}

void memstore_close(struct memstore *m)
{
        if (!m)
                return;
        if (m->be && m->be->close)
                m->be->close(m->be_handle);
        cache_clear(m);
        sqlite3_finalize(m->get);
        sqlite3_finalize(m->set);
        sqlite3_finalize(m->del);
        sqlite3_finalize(m->list);
        sqlite3_close(m->db);  /* NULL ok */
        free(m->path);
        free(m);
}

static void cache_clear(struct memstore *m)
{
        for (size_t i = 0; i < CACHE_SLOTS; i++) {
                struct cache_slot *c = &m->cache[i];
                if (!c->used)
                        continue;
                free(c->ns);
                free(c->key);
                free(c->value);
                *c = (struct cache_slot){ 0 };
        }
}

/* Copy the WAL-index header SQLite maps for this connection; false when
 * there is none to check (not mapped yet, or a VFS without shared memory):
 * no caching then. */
static bool wal_header(struct memstore *m, unsigned char out[WAL_INDEX_HDR_BYTES])
{
        sqlite3_file *f = NULL;
        if (sqlite3_file_control(m->db, "main", SQLITE_FCNTL_FILE_POINTER, &f) != SQLITE_OK || !f || !f->pMethods ||
            f->pMethods->iVersion < 2 || !f->pMethods->xShmMap)
                return false;
        volatile void *p = NULL;
        if (f->pMethods->xShmMap(f, 0, WAL_INDEX_PAGE, 0, &p) != SQLITE_OK || !p)
                return false;
        const volatile unsigned char *h = p;
        __atomic_thread_fence(__ATOMIC_ACQUIRE);
        for (size_t i = 0; i < WAL_INDEX_HDR_BYTES; i++)
                out[i] = h[i];
        __atomic_thread_fence(__ATOMIC_ACQUIRE);
        return true;
}

static struct cache_slot *cache_slot(struct memstore *m, const char *ns, const char *key)
{
        uint32_t hsh = 2166136261u; /* FNV-1a over ns, a NUL, key */
        for (const char *s = ns;; s++) {
                hsh = (hsh ^ (unsigned char)*s) * 16777619u;
                if (!*s)
                        break;
        }
        for (const char *s = key; *s; s++)
                hsh = (hsh ^ (unsigned char)*s) * 16777619u;
        return &m->cache[hsh % CACHE_SLOTS];
}

static void cache_put(struct cache_slot *c, const char *ns, const char *key, const char *value)
{
        free(c->ns);
        free(c->key);
        free(c->value);
        *c = (struct cache_slot){ .ns = strdup(ns), .key = strdup(key), .value = value ? strdup(value) : NULL };
        c->used = c->ns && c->key && (!value || c->value);
        if (!c->used) {
                free(c->ns);
                free(c->key);
                free(c->value);
                *c = (struct cache_slot){ 0 };
        }
}

int memstore_get(struct memstore *m, const char *ns, const char *key, char **ret_json, struct err **err)
{
        size_t klen = 0;
        if (check_store(m, ns, err) < 0 || check_key(key, false, &klen, err) < 0)
                return -1;
        if (m->be)
                return m->be->get(m->be_handle, ns, key, ret_json, err);

        /* check_store saw the file still in place: the cache, then SQLite. */
        unsigned char hdr[WAL_INDEX_HDR_BYTES];
        bool cacheable = wal_header(m, hdr);
        struct cache_slot *slot = cache_slot(m, ns, key);
        if (cacheable && memcmp(hdr, m->cache_hdr, sizeof(hdr)) != 0) {
                cache_clear(m);  /* a commit since: by us or anyone */
                memcpy(m->cache_hdr, hdr, sizeof(hdr));
        }
        if (cacheable && slot->used && strcmp(slot->ns, ns) == 0 && strcmp(slot->key, key) == 0) {
                *ret_json = NULL;
                if (slot->value && !(*ret_json = strdup(slot->value)))
                        return err_set(err, ENOMEM, "memory: cannot copy a stored value");
                return 0;
        }

        _cleanup_reset_ sqlite3_stmt *st = m->get;
        int rc = bind_text(st, 1, ns, strlen(ns));
        if (rc == SQLITE_OK)
                rc = bind_text(st, 2, key, klen);
        if (rc == SQLITE_OK)
                rc = sqlite3_step(st);
        if (rc == SQLITE_DONE) {
                *ret_json = NULL;
                if (cacheable)
                        cache_put(slot, ns, key, NULL);
                return 0;
        }
        if (rc != SQLITE_ROW)
                return db_err(m->db, m->path, rc, err, "cannot read a key");

        const char *v = (const char *)sqlite3_column_text(st, 0);
        int n = sqlite3_column_bytes(st, 0);
        if (!v)
                return err_set(err, ENOMEM, "memory: cannot read a stored value");
        char *out = malloc((size_t)n + 1);
        if (!out)
                return err_set(err, ENOMEM, "memory: cannot allocate %d bytes for a stored value", n);
        memcpy(out, v, (size_t)n);
        out[n] = '\0';
        *ret_json = out;
        if (cacheable && (size_t)n <= CACHE_VALUE_MAX)
                cache_put(slot, ns, key, out);
        return 0;
}

static int check_value(const char *value_json, size_t *ret_len, struct err **err)
{
        if (!value_json)
                return err_set(err, 0, "memory: no value given; pass JSON text");
        size_t len = strnlen(value_json, MEMSTORE_VALUE_MAX + 1);
        if (len > MEMSTORE_VALUE_MAX)
                return err_set(err, 0,
                               "memory: value is %zu bytes of JSON; values are limited to %u bytes (1 MiB), store less or split it across keys",
                               len + strlen(value_json + len), MEMSTORE_VALUE_MAX);
        /* The value goes back to the agent verbatim; never hand it back broken. */
        struct json_error je;
        if (json_validate(value_json, len, NULL, &je, NULL) < 0)
                return err_set(err, 0,
                               "memory: value is not valid JSON text (%s at byte %zu); store what JSON.stringify produces",
                               je.what, je.offset);
        *ret_len = len;
        return 0;
}

/* The set changed nothing: say which limit stopped it. */
static int refused(struct memstore *m, const char *ns, const char *key, size_t klen, size_t bytes,
                   struct err **err)
{
        sqlite3_stmt *st = NULL;
        int rc = sqlite3_prepare_v2(m->db, SQL_WHY, -1, &st, NULL);
        if (rc == SQLITE_OK)
                rc = bind_text(st, 1, ns, strlen(ns));
        if (rc == SQLITE_OK)
                rc = bind_text(st, 2, key, klen);
        if (rc == SQLITE_OK)
                rc = sqlite3_step(st);
        bool exists = rc == SQLITE_ROW && sqlite3_column_int(st, 0);
        sqlite3_int64 keys = rc == SQLITE_ROW ? sqlite3_column_int64(st, 1) : 0;
        sqlite3_int64 held = rc == SQLITE_ROW ? sqlite3_column_int64(st, 2) : 0;
        sqlite3_finalize(st);
        if (!exists && keys >= (sqlite3_int64)MEMSTORE_KEYS_MAX)
                return err_set(err, 0,
                               "memory: namespace '%s' already holds %u keys, the limit per namespace; delete keys before adding new ones",
                               ns, MEMSTORE_KEYS_MAX);
        return err_setc(err, MEMSTORE_E_LIMIT, 0,
                        "memory: namespace '%s' holds %lld bytes of keys and values; storing %zu more would pass its limit of %llu bytes",
                        ns, (long long)held, bytes, m->max_bytes);
}

int memstore_set(struct memstore *m, const char *ns, const char *key, const char *value_json,
                 struct err **err)
{
        size_t klen = 0, vlen = 0;
        if (check_store(m, ns, err) < 0 || check_key(key, false, &klen, err) < 0 ||
            check_value(value_json, &vlen, err) < 0)
                return -1;
        if (m->be)
                return m->be->set(m->be_handle, ns, key, value_json, klen, vlen, m->max_bytes, err);

        _cleanup_reset_ sqlite3_stmt *st = m->set;
        int rc = bind_text(st, 1, ns, strlen(ns));
        if (rc == SQLITE_OK)
                rc = bind_text(st, 2, key, klen);
        if (rc == SQLITE_OK)
                rc = bind_text(st, 3, value_json, vlen);
        if (rc == SQLITE_OK)
                rc = sqlite3_bind_int64(st, 4, now_ms());
        if (rc == SQLITE_OK)
                rc = sqlite3_bind_int64(st, 5, MEMSTORE_KEYS_MAX);
        if (rc == SQLITE_OK)
                rc = sqlite3_bind_int64(st, 6, (sqlite3_int64)(klen + vlen));
        if (rc == SQLITE_OK)
                rc = sqlite3_bind_int64(st, 7, (sqlite3_int64)m->max_bytes);
        if (rc == SQLITE_OK)
                rc = sqlite3_step(st);
        if (rc != SQLITE_DONE)
                return db_err(m->db, m->path, rc, err, "cannot store a key");
        if (sqlite3_changes(m->db) == 0)
                return refused(m, ns, key, klen, klen + vlen, err);
        return 0;
}

int memstore_delete(struct memstore *m, const char *ns, const char *key, bool *ret_existed,
                    struct err **err)
{
        size_t klen = 0;
        if (check_store(m, ns, err) < 0 || check_key(key, false, &klen, err) < 0)
                return -1;
        if (m->be)
                return m->be->del(m->be_handle, ns, key, ret_existed, err);

        _cleanup_reset_ sqlite3_stmt *st = m->del;
        int rc = bind_text(st, 1, ns, strlen(ns));
        if (rc == SQLITE_OK)
                rc = bind_text(st, 2, key, klen);
        if (rc == SQLITE_OK)
                rc = sqlite3_step(st);
        if (rc != SQLITE_DONE)
                return db_err(m->db, m->path, rc, err, "cannot delete a key");
        if (ret_existed)
                *ret_existed = sqlite3_changes(m->db) > 0;
        return 0;
}

int memstore_clear(struct memstore *m, const char *ns, size_t *ret_n, struct err **err)
{
        if (check_store(m, ns, err) < 0)
                return -1;
        if (m->be)
                return m->be->clear(m->be_handle, ns, ret_n, err);
        /* One transaction: the namespace is empty or unchanged.  Its totals
         * row goes too (the delete trigger leaves it at 0 keys): a server
         * clearing each deleted session's namespace would otherwise keep one
         * row per session it ever ran (found by make soak). */
        int rc = sqlite3_exec(m->db, "BEGIN IMMEDIATE", NULL, NULL, NULL);
        int changes = 0;
        const char *const sql[] = { "DELETE FROM memory WHERE ns = ?1", "DELETE FROM memory_ns WHERE ns = ?1" };
        for (size_t i = 0; i < ARRAY_SIZE(sql) && rc == SQLITE_OK; i++) {
                sqlite3_stmt *st = NULL;
                rc = sqlite3_prepare_v2(m->db, sql[i], -1, &st, NULL);
                if (rc == SQLITE_OK)
                        rc = bind_text(st, 1, ns, strlen(ns));
                if (rc == SQLITE_OK)
                        rc = sqlite3_step(st);
                if (i == 0)
                        changes = sqlite3_changes(m->db);
                sqlite3_finalize(st);
                if (rc == SQLITE_DONE)
                        rc = SQLITE_OK;
        }
        if (rc == SQLITE_OK)
                rc = sqlite3_exec(m->db, "COMMIT", NULL, NULL, NULL);
        if (rc != SQLITE_OK) {
                db_err(m->db, m->path, rc, err, "cannot clear the namespace");
                sqlite3_exec(m->db, "ROLLBACK", NULL, NULL, NULL);
                return -1;
        }
        if (ret_n)
                *ret_n = (size_t)changes;
        return 0;
}

void memstore_keys_free(char **keys)
{
        if (!keys)
                return;
        for (char **k = keys; *k; k++)
                free(*k);
        free(keys);
}

int memstore_list(struct memstore *m, const char *ns, const char *prefix, char ***ret_keys,
                  size_t *ret_n, struct err **err)
{
        size_t plen = 0;
        if (!prefix)
                prefix = "";
        if (check_store(m, ns, err) < 0 || check_key(prefix, true, &plen, err) < 0)
                return -1;
        if (m->be)
                return m->be->list(m->be_handle, ns, prefix, ret_keys, ret_n, err);

        size_t n = 0, cap = 16;
        char **keys = calloc(cap + 1, sizeof(*keys));
        if (!keys)
                return err_set(err, ENOMEM, "memory: cannot allocate the key list");

        _cleanup_reset_ sqlite3_stmt *st = m->list;
        int rc = bind_text(st, 1, ns, strlen(ns));
        if (rc == SQLITE_OK)
                rc = bind_text(st, 2, prefix, plen);
        while (rc == SQLITE_OK || rc == SQLITE_ROW) {
                rc = sqlite3_step(st);
                if (rc != SQLITE_ROW)
                        break;
                const char *k = (const char *)sqlite3_column_text(st, 0);
                size_t klen = (size_t)sqlite3_column_bytes(st, 0);
                if (!k) {
                        memstore_keys_free(keys);
                        return err_set(err, ENOMEM, "memory: cannot read a key");
                }
                if (klen < plen || memcmp(k, prefix, plen) != 0) {
                        rc = SQLITE_DONE;  /* past the last key with this prefix */
                        break;
                }
                if (n == cap) {
                        char **grown = reallocarray(keys, cap * 2 + 1, sizeof(*keys));
                        if (!grown) {
                                memstore_keys_free(keys);
                                return err_set(err, ENOMEM, "memory: cannot grow the key list");
                        }
                        keys = grown;
                        cap *= 2;
                }
                char *copy = malloc(klen + 1);
                if (!copy) {
                        memstore_keys_free(keys);
                        return err_set(err, ENOMEM, "memory: cannot copy a key");
                }
                memcpy(copy, k, klen);
                copy[klen] = '\0';
                keys[n++] = copy;
                keys[n] = NULL;
        }
        if (rc != SQLITE_DONE) {
                memstore_keys_free(keys);
                return db_err(m->db, m->path, rc, err, "cannot list keys");
        }
        *ret_keys = keys;
        if (ret_n)
                *ret_n = n;
        return 0;
}

/* "$base" + "/" + tail with trailing slashes of base dropped. */
static int join_dir(const char *base, const char *tail, char **ret, struct err **err)
{
        size_t len = strlen(base);
        while (len > 0 && base[len - 1] == '/')
                len--;
        char *out;
        if (asprintf(&out, "%.*s/%s", (int)len, base, tail) < 0)
                return err_set(err, ENOMEM, "memory: cannot build the default directory name");
        *ret = out;
        return 0;
}

int memstore_make_dir(const char *dir, struct err **err)
{
        return make_dirs(dir, err);
}

int memstore_default_dir(char **ret_dir, struct err **err)
{
        /* The XDG base-directory spec says relative values are invalid and
         * must be ignored; so is an empty one. */
        const char *xdg = getenv("XDG_STATE_HOME");
        if (xdg && xdg[0] == '/')
                return join_dir(xdg, "chidori", ret_dir, err);
        const char *home = getenv("HOME");
        if (home && home[0] == '/')
                return join_dir(home, ".local/state/chidori", ret_dir, err);
        return err_set(err, 0,
                       "memory: cannot choose a memory directory: neither XDG_STATE_HOME nor HOME is an absolute path; set HOME or XDG_STATE_HOME");
}
