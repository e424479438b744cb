/* server/store-sqlite.c — the SQLite (WAL) backend of the server's store
 * (store.h, store-internal.h): DIR/serve.db, embedded, the default. */
#define _GNU_SOURCE
#include <errno.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/util.h"
#include "server/store-internal.h"

struct sq_store {
        struct store base;   /* first: the public handle */
        sqlite3 *db;
        char *path;
        bool in_batch;       /* a transaction holds pure journal lines not yet committed */
        unsigned batch_lines;
        unsigned held;       /* store_hold: commits wait for store_release */
};

#define BATCH_MAX 256

static const struct store_ops sq_ops;
static void sq_close(struct store *base);
static int sq_commit(struct store *base, struct err **err);
static int sq_commit_now(struct sq_store *st, const char *what, struct err **err);

static int db_err(struct sq_store *st, int rc, struct err **err, const char *what)
{
        int code = 0;
        if (rc == SQLITE_FULL || rc == SQLITE_IOERR_WRITE || (rc & 0xff) == SQLITE_FULL)
                code = STORE_E_FULL;
        else if (rc == SQLITE_CORRUPT || rc == SQLITE_NOTADB)
                code = STORE_E_CORRUPT;
        else if ((rc & 0xff) == SQLITE_BUSY || (rc & 0xff) == SQLITE_LOCKED)
                code = STORE_E_BUSY;
        if (code == STORE_E_FULL) {
                st->base.lost = true; /* sq_ready says when there is room again */
                return err_setc(err, code, ENOSPC, "%s: %s: the disk is full", st->path, what);
        }
        return err_setc(err, code, 0, "%s: %s: %s", st->path, what, sqlite3_errmsg(st->db));
}

static int exec(struct sq_store *st, const char *sql, struct err **err)
{
        int rc = sqlite3_exec(st->db, sql, NULL, NULL, NULL);
        return rc == SQLITE_OK ? 0 : db_err(st, rc, err, "write");
}

static const char schema[] =
        "CREATE TABLE IF NOT EXISTS schema_version(version INTEGER NOT NULL);"
        "CREATE TABLE IF NOT EXISTS sessions("
        " id TEXT PRIMARY KEY, tenant TEXT NOT NULL, agent TEXT NOT NULL, status TEXT NOT NULL,"
        " policy_profile TEXT, input TEXT NOT NULL, result TEXT, error TEXT, exit INTEGER, stats TEXT,"
        " created_at TEXT NOT NULL, updated_at TEXT NOT NULL, pending TEXT, quotas TEXT);"
        "CREATE INDEX IF NOT EXISTS sessions_tenant ON sessions(tenant, id);"
        "CREATE TABLE IF NOT EXISTS journal(session TEXT NOT NULL, seq INTEGER NOT NULL, line TEXT NOT NULL,"
        " PRIMARY KEY(session, seq));"
        "CREATE TABLE IF NOT EXISTS idempotency(tenant TEXT NOT NULL, key TEXT NOT NULL, session TEXT NOT NULL,"
        " created INTEGER NOT NULL, PRIMARY KEY(tenant, key));"
        "CREATE TABLE IF NOT EXISTS events(session TEXT NOT NULL, seq INTEGER NOT NULL, event TEXT NOT NULL,"
        " data TEXT NOT NULL, PRIMARY KEY(session, seq));"
        "CREATE TABLE IF NOT EXISTS tenant_usage(tenant TEXT NOT NULL, window_start INTEGER NOT NULL,"
        " usage TEXT NOT NULL, PRIMARY KEY(tenant, window_start));";

int store_sqlite_open(const char *path, struct store **ret, struct err **err)
{
        struct sq_store *st = calloc(1, sizeof(*st));
        if (!st)
                return err_set(err, ENOMEM, "state store");
        st->base.ops = &sq_ops;
        st->base.kind = "sqlite";
        if (!(st->path = strdup(path))) {
                free(st);
                return err_set(err, ENOMEM, "state store");
        }
        st->base.desc = st->path;
        int rc = sqlite3_open_v2(st->path, &st->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                                 NULL);
        if (rc != SQLITE_OK) {
                err_set(err, 0, "%s: cannot open the state database: %s", st->path,
                        st->db ? sqlite3_errmsg(st->db) : "out of memory");
                sq_close(&st->base);
                return -1;
        }
        sqlite3_busy_timeout(st->db, 2000);
        /* A file that is not a database says so at the first read. */
        sqlite3_stmt *q = NULL;
        rc = sqlite3_prepare_v2(st->db, "PRAGMA quick_check", -1, &q, NULL);
        if (rc == SQLITE_OK)
                rc = sqlite3_step(q);
        const char *verdict = rc == SQLITE_ROW ? (const char *)sqlite3_column_text(q, 0) : NULL;
        if (rc != SQLITE_ROW || !verdict || strcmp(verdict, "ok") != 0) {
                err_setc(err, STORE_E_CORRUPT, 0,
                         "the state database %s is damaged or not a database (%s); move it away to start afresh, "
                         "or restore it from a backup",
                         st->path, verdict ? verdict : sqlite3_errmsg(st->db));
                sqlite3_finalize(q);
                sq_close(&st->base);
                return -1;
        }
        sqlite3_finalize(q);
        if (exec(st, "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL; PRAGMA foreign_keys=OFF;", err) < 0 ||
            exec(st, schema, err) < 0) {
                sq_close(&st->base);
                return -1;
        }
        int version = 0;
        rc = sqlite3_prepare_v2(st->db, "SELECT version FROM schema_version", -1, &q, NULL);
        if (rc == SQLITE_OK && sqlite3_step(q) == SQLITE_ROW)
                version = sqlite3_column_int(q, 0);
        sqlite3_finalize(q);
        /* Version 1 (part 1 of serve) had no events table: the schema above
         * has just added it; version 2 adds sessions.pending. */
        if (version == 1 && (exec(st, "ALTER TABLE sessions ADD COLUMN pending TEXT", err) < 0 ||
                             exec(st, "UPDATE schema_version SET version = 2", err) < 0)) {
                sq_close(&st->base);
                return -1;
        }
        /* Version 3 adds sessions.quotas (the session's own, POST /sessions)
         * and the tenant_usage table (created above). */
        if ((version == 1 || version == 2) && (exec(st, "ALTER TABLE sessions ADD COLUMN quotas TEXT", err) < 0 ||
                                               exec(st, "UPDATE schema_version SET version = 3", err) < 0)) {
                sq_close(&st->base);
                return -1;
        }
        if (version == 0 && exec(st, "INSERT INTO schema_version VALUES (3)", err) < 0) {
                sq_close(&st->base);
                return -1;
        }
        if (version > STORE_SCHEMA_VERSION) {
                err_setc(err, STORE_E_VERSION, 0,
                         "the state database %s has schema version %d, written by a newer chidori (this one reads "
                         "version %d)",
                         st->path, version, STORE_SCHEMA_VERSION);
                sq_close(&st->base);
                return -1;
        }
        chmod(st->path, 0600);
        *ret = &st->base;
        return 0;
}

static void sq_close(struct store *base)
{
        struct sq_store *st = (struct sq_store *)base;
        if (!st)
                return;
        if (st->in_batch)
                sq_commit_now(st, "commit", NULL);
        sqlite3_close(st->db);
        free(st->path);
        free(st);
}

/* serve.db deleted under the open connection: every later write would be
 * acknowledged and lost with the file at exit.  What the connection holds
 * (everything committed) is copied with SQLite's online backup into a new
 * file beside it (rollback mode, so no -wal of its own), renamed to the
 * path, opened; the old connection is closed only then (its close removes
 * the -wal at the path, which is its own), and the new one goes to WAL.
 * A file put at the path by someone else is not overwritten. */
static int reattach_if_deleted(struct sq_store *st, struct err **err)
{
        int moved = 0;
        if (sqlite3_file_control(st->db, "main", SQLITE_FCNTL_HAS_MOVED, &moved) != SQLITE_OK || !moved)
                return 0;
        struct stat sb;
        if (lstat(st->path, &sb) == 0)
                return err_setc(err, STORE_E_MOVED, 0,
                                "%s: the state database was replaced by another file while the server had it open; "
                                "stop the server and put its own database back",
                                st->path);
        _cleanup_free_ char *tmp = NULL;
        if (asprintf(&tmp, "%s.restore", st->path) < 0)
                return err_set(err, ENOMEM, "state store");
        unlink(tmp);
        sqlite3 *fresh = NULL, *neu = NULL;
        int rc = sqlite3_open_v2(tmp, &fresh, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL);
        sqlite3_backup *b = rc == SQLITE_OK ? sqlite3_backup_init(fresh, "main", st->db, "main") : NULL;
        if (b) {
                rc = sqlite3_backup_step(b, -1);
                sqlite3_backup_finish(b);
                if (rc == SQLITE_DONE)
                        rc = sqlite3_exec(fresh, "PRAGMA journal_mode=DELETE", NULL, NULL, NULL);
        } else if (rc == SQLITE_OK) {
                rc = sqlite3_errcode(fresh);
        }
        const char *why = rc == SQLITE_OK ? NULL : fresh ? sqlite3_errmsg(fresh) : "out of memory";
        char whybuf[256];
        snprintf(whybuf, sizeof(whybuf), "%s", why ? why : "");
        sqlite3_close(fresh);
        if (rc == SQLITE_OK && rename(tmp, st->path) < 0)
                snprintf(whybuf, sizeof(whybuf), "rename: %s", strerror(errno)), rc = SQLITE_IOERR;
        if (rc == SQLITE_OK) {
                rc = sqlite3_open_v2(st->path, &neu, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL);
                if (rc != SQLITE_OK)
                        snprintf(whybuf, sizeof(whybuf), "%s", neu ? sqlite3_errmsg(neu) : "out of memory");
        }
        if (rc != SQLITE_OK) {
                sqlite3_close(neu);
                unlink(tmp);
                return err_setc(err, STORE_E_MOVED, 0,
                                "%s: the state database was deleted while the server had it open, and writing it "
                                "again failed (%s); stop the server and restore it from a backup",
                                st->path, whybuf);
        }
        sqlite3_close(st->db);
        st->db = neu;
        sqlite3_busy_timeout(neu, 2000);
        chmod(st->path, 0600);
        if (exec(st, "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL;", err) < 0)
                return -1;
        fprintf(stderr, "chidori: serve: the state database %s was deleted while the server had it open; it was "
                        "written again from the server's open copy (nothing committed was lost)\n",
                st->path);
        return 0;
}

/* Commit the open transaction now, held or not; `what` names it in a
 * failure. */
static int sq_commit_now(struct sq_store *st, const char *what, struct err **err)
{
        if (!st->in_batch)
                return reattach_if_deleted(st, err);
        int rc = sqlite3_exec(st->db, "COMMIT", NULL, NULL, NULL);
        if (rc != SQLITE_OK) {
                sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
                st->in_batch = false;
                return db_err(st, rc, err, what);
        }
        st->in_batch = false;
        st->batch_lines = 0;
        return reattach_if_deleted(st, err);
}

/* A commit: deferred to store_release while the store is held. */
static int sq_commit(struct store *base, struct err **err)
{
        struct sq_store *st = (struct sq_store *)base;
        return st->held ? 0 : sq_commit_now(st, "commit", err);
}

/* The open transaction, or a new one (BEGIN IMMEDIATE: the write lock is
 * held from its start). */
static int begin_batch(struct sq_store *st, struct err **err)
{
        if (st->in_batch)
                return 0;
        if (exec(st, "BEGIN IMMEDIATE", err) < 0)
                return -1;
        st->in_batch = true;
        return 0;
}

/* A statement that would be its own transaction joins the held one. */
static int join_held(struct sq_store *st, struct err **err)
{
        return st->held ? begin_batch(st, err) : 0;
}

static void sq_hold(struct store *base)
{
        ((struct sq_store *)base)->held++;
}

static int sq_release(struct store *base, struct err **err)
{
        struct sq_store *st = (struct sq_store *)base;
        if (st->held && --st->held)
                return 0;
        /* What is held is a session's record: its start, pause or end. */
        return sq_commit_now(st, "update the session", err);
}

/* Room a full disk must have again before the store counts as writable:
 * a few pages of the journal, the WAL and the session's ending. */
#define ROOM_MIN (256u * 1024)

/* Ready unless a write found the disk full (db_err sets lost): then ready
 * again once the filesystem has ROOM_MIN free and a committed write
 * succeeds, so that sessions_sweep resumes what could not be recorded. */
static int sq_ready(struct store *base, struct err **err)
{
        struct sq_store *st = (struct sq_store *)base;
        if (!base->lost)
                return 0;
        struct statvfs v;
        if (statvfs(st->path, &v) == 0) {
                unsigned long long room = (unsigned long long)v.f_bavail * v.f_frsize;
                if (room < ROOM_MIN)
                        return err_setc(err, STORE_E_FULL, ENOSPC,
                                        "%s: the disk is full (%llu KiB free, at least %u KiB needed); free space",
                                        st->path, room / 1024, ROOM_MIN / 1024);
        }
        if (st->in_batch)
                return 0; /* a session is writing its journal: the batch's commit is the test */
        return exec(st, "UPDATE schema_version SET version = version", err);
}

static void bind_text(sqlite3_stmt *q, int i, const char *s)
{
        if (s)
                sqlite3_bind_text(q, i, s, -1, SQLITE_TRANSIENT);
        else
                sqlite3_bind_null(q, i);
}

/* One statement, run to its end.  Within the batch when one is open (the
 * caller commits), else its own transaction. */
static int run_stmt(struct sq_store *st, sqlite3_stmt *q, struct err **err, const char *what)
{
        int rc = sqlite3_step(q);
        sqlite3_finalize(q);
        if (rc != SQLITE_DONE)
                return db_err(st, rc, err, what);
        return 0;
}

static void now_iso(char out[40])
{
        utc_iso8601(out, 40);
}

static int sq_session_insert(struct store *base, const struct store_session *s, const char *idem_key, struct err **err)
{
        struct sq_store *st = (struct sq_store *)base;
        if (sq_commit_now(st, "commit", err) < 0) /* its own transaction, even when held */
                return -1;
        if (exec(st, "BEGIN IMMEDIATE", err) < 0)
                return -1;
        sqlite3_stmt *q = NULL;
        int rc = sqlite3_prepare_v2(st->db,
                                    "INSERT INTO sessions(id, tenant, agent, status, policy_profile, input, created_at, "
                                    "updated_at, exit, quotas) VALUES (?,?,?,?,?,?,?,?,NULL,?)",
                                    -1, &q, NULL);
        if (rc != SQLITE_OK)
                goto fail;
        bind_text(q, 1, s->id);
        bind_text(q, 2, s->tenant);
        bind_text(q, 3, s->agent);
        bind_text(q, 4, s->status);
        bind_text(q, 5, s->policy_profile);
        bind_text(q, 6, s->input);
        bind_text(q, 7, s->created_at);
        bind_text(q, 8, s->updated_at);
        bind_text(q, 9, s->quotas);
        if (run_stmt(st, q, err, "record the session") < 0)
                goto rollback;
        if (idem_key) {
                rc = sqlite3_prepare_v2(st->db,
                                        "INSERT OR REPLACE INTO idempotency(tenant, key, session, created) VALUES "
                                        "(?,?,?,?)",
                                        -1, &q, NULL);
                if (rc != SQLITE_OK)
                        goto fail;
                bind_text(q, 1, s->tenant);
                bind_text(q, 2, idem_key);
                bind_text(q, 3, s->id);
                sqlite3_bind_int64(q, 4, (sqlite3_int64)time(NULL));
                if (run_stmt(st, q, err, "record the idempotency key") < 0)
                        goto rollback;
        }
        rc = sqlite3_exec(st->db, "COMMIT", NULL, NULL, NULL);
        if (rc != SQLITE_OK)
                goto fail;
        return 0;
fail:
        db_err(st, rc, err, "record the session");
rollback:
        sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
        return -1;
}

static char *col(sqlite3_stmt *q, int i)
{
        const unsigned char *t = sqlite3_column_text(q, i);
        return t ? strdup((const char *)t) : NULL;
}

#define SESSION_COLS \
        "id, tenant, agent, status, policy_profile, input, result, error, stats, created_at, updated_at, exit, pending, quotas"

static void row(sqlite3_stmt *q, struct store_session *s)
{
        s->id = col(q, 0);
        s->tenant = col(q, 1);
        s->agent = col(q, 2);
        s->status = col(q, 3);
        s->policy_profile = col(q, 4);
        s->input = col(q, 5);
        s->result = col(q, 6);
        s->error = col(q, 7);
        s->stats = col(q, 8);
        s->created_at = col(q, 9);
        s->updated_at = col(q, 10);
        s->exit = sqlite3_column_type(q, 11) == SQLITE_NULL ? -1 : sqlite3_column_int(q, 11);
        s->pending = col(q, 12);
        s->quotas = col(q, 13);
}

static int sq_session_get(struct store *base, const char *id, struct store_session *ret, struct err **err)
{
        struct sq_store *st = (struct sq_store *)base;
        sqlite3_stmt *q = NULL;
        int rc = sqlite3_prepare_v2(st->db, "SELECT " SESSION_COLS " FROM sessions WHERE id = ?", -1, &q, NULL);
        if (rc != SQLITE_OK)
                return db_err(st, rc, err, "read the session");
        bind_text(q, 1, id);
        rc = sqlite3_step(q);
        if (rc == SQLITE_ROW) {
                row(q, ret);
                sqlite3_finalize(q);
                return 0;
        }
        sqlite3_finalize(q);
        if (rc == SQLITE_DONE)
                return 1;
        return db_err(st, rc, err, "read the session");
}

static int sq_session_update(struct store *base, const char *id, const char *status, const char *result,
                         const char *error, int exit, const char *stats, struct err **err)
{
        struct sq_store *st = (struct sq_store *)base;
        if (sq_commit(&st->base, err) < 0 || join_held(st, err) < 0)
                return -1;
        char ts[40];
        now_iso(ts);
        sqlite3_stmt *q = NULL;
        int rc = sqlite3_prepare_v2(st->db,
                                    "UPDATE sessions SET status = ?, updated_at = ?, result = COALESCE(?, result), "
                                    "error = COALESCE(?, error), exit = COALESCE(?, exit), stats = COALESCE(?, stats) "
                                    "WHERE id = ?",
                                    -1, &q, NULL);
        if (rc != SQLITE_OK)
                return db_err(st, rc, err, "update the session");
        bind_text(q, 1, status);
        bind_text(q, 2, ts);
        bind_text(q, 3, result);
        bind_text(q, 4, error);
        if (exit >= 0)
                sqlite3_bind_int(q, 5, exit);
        else
                sqlite3_bind_null(q, 5);
        bind_text(q, 6, stats);
        bind_text(q, 7, id);
        return run_stmt(st, q, err, "update the session");
}

static int sq_session_delete(struct store *base, const char *id, struct err **err)
{
        struct sq_store *st = (struct sq_store *)base;
        if (sq_commit_now(st, "commit", err) < 0 || exec(st, "BEGIN IMMEDIATE", err) < 0)
                return -1;
        static const char *const sqls[] = {
                "DELETE FROM journal WHERE session = ?",
                "DELETE FROM events WHERE session = ?",
                "DELETE FROM idempotency WHERE session = ?",
                "DELETE FROM sessions WHERE id = ?",
        };
        for (size_t i = 0; i < sizeof(sqls) / sizeof(sqls[0]); i++) {
                sqlite3_stmt *q = NULL;
                int rc = sqlite3_prepare_v2(st->db, sqls[i], -1, &q, NULL);
                if (rc != SQLITE_OK) {
                        db_err(st, rc, err, "delete the session");
                        sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
                        return -1;
                }
                bind_text(q, 1, id);
                if (run_stmt(st, q, err, "delete the session") < 0) {
                        sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
                        return -1;
                }
        }
        return exec(st, "COMMIT", err);
}

static int sq_session_list(struct store *base, const char *tenant, const char *status, const char *after, unsigned limit,
                       int (*fn)(void *arg, const struct store_session *s), void *arg, struct err **err)
{
        struct sq_store *st = (struct sq_store *)base;
        sqlite3_stmt *q = NULL;
        int rc = sqlite3_prepare_v2(st->db,
                                    "SELECT " SESSION_COLS " FROM sessions WHERE (?1 IS NULL OR tenant = ?1) AND "
                                    "(?2 IS NULL OR status = ?2) AND (?3 IS NULL OR id < ?3) ORDER BY id DESC LIMIT ?4",
                                    -1, &q, NULL);
        if (rc != SQLITE_OK)
                return db_err(st, rc, err, "list the sessions");
        bind_text(q, 1, tenant);
        bind_text(q, 2, status);
        bind_text(q, 3, after);
        sqlite3_bind_int64(q, 4, (sqlite3_int64)limit + 1);
        while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
                struct store_session s = { 0 };
                row(q, &s);
                int stop = fn(arg, &s);
                store_session_clear(&s);
                if (stop)
                        break;
        }
        sqlite3_finalize(q);
        if (rc != SQLITE_ROW && rc != SQLITE_DONE)
                return db_err(st, rc, err, "list the sessions");
        return 0;
}

static int sq_session_ids(struct store *base, const char *status, int (*fn)(void *arg, const char *id), void *arg,
                      struct err **err)
{
        struct sq_store *st = (struct sq_store *)base;
        sqlite3_stmt *q = NULL;
        int rc = sqlite3_prepare_v2(st->db, "SELECT id FROM sessions WHERE status = ? ORDER BY id", -1, &q, NULL);
        if (rc != SQLITE_OK)
                return db_err(st, rc, err, "list the sessions");
        bind_text(q, 1, status);
        while ((rc = sqlite3_step(q)) == SQLITE_ROW)
                if (fn(arg, (const char *)sqlite3_column_text(q, 0)))
                        break;
        sqlite3_finalize(q);
        return rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : db_err(st, rc, err, "list the sessions");
}

static int sq_idem_get(struct store *base, const char *tenant, const char *key, char **ret_id, struct err **err)
{
        struct sq_store *st = (struct sq_store *)base;
        sqlite3_stmt *q = NULL;
        int rc = sqlite3_prepare_v2(st->db,
                                    "SELECT session FROM idempotency WHERE tenant = ? AND key = ? AND created > ?", -1,
                                    &q, NULL);
        if (rc != SQLITE_OK)
                return db_err(st, rc, err, "read the idempotency key");
        bind_text(q, 1, tenant);
        bind_text(q, 2, key);
        sqlite3_bind_int64(q, 3, (sqlite3_int64)time(NULL) - 24 * 3600);
        rc = sqlite3_step(q);
        if (rc == SQLITE_ROW) {
                *ret_id = col(q, 0);
                sqlite3_finalize(q);
                return *ret_id ? 0 : err_set(err, ENOMEM, "idempotency key");
        }
        sqlite3_finalize(q);
        return rc == SQLITE_DONE ? 1 : db_err(st, rc, err, "read the idempotency key");
}

static int sq_journal_append(struct store *base, const char *id, const char *line, bool batch, struct err **err)
{
        struct sq_store *st = (struct sq_store *)base;
        if (begin_batch(st, err) < 0)
                return -1;
        sqlite3_stmt *q = NULL;
        int rc = sqlite3_prepare_v2(st->db,
                                    "INSERT INTO journal(session, seq, line) VALUES (?1, (SELECT COALESCE(MAX(seq), 0) "
                                    "+ 1 FROM journal WHERE session = ?1), ?2)",
                                    -1, &q, NULL);
        if (rc != SQLITE_OK) {
                db_err(st, rc, err, "write the journal");
                return -1;
        }
        bind_text(q, 1, id);
        bind_text(q, 2, line);
        if (run_stmt(st, q, err, "write the journal") < 0)
                return -1;
        st->batch_lines++;
        if (!batch || st->batch_lines >= BATCH_MAX)
                return sq_commit(&st->base, err);
        return 0;
}

static int sq_journal_each(struct store *base, const char *id, int (*fn)(void *arg, const char *line, size_t len), void *arg,
                       struct err **err)
{
        struct sq_store *st = (struct sq_store *)base;
        if (sq_commit(&st->base, err) < 0)
                return -1;
        sqlite3_stmt *q = NULL;
        int rc = sqlite3_prepare_v2(st->db, "SELECT line FROM journal WHERE session = ? ORDER BY seq", -1, &q, NULL);
        if (rc != SQLITE_OK)
                return db_err(st, rc, err, "read the journal");
        bind_text(q, 1, id);
        while ((rc = sqlite3_step(q)) == SQLITE_ROW)
                if (fn(arg, (const char *)sqlite3_column_text(q, 0), (size_t)sqlite3_column_bytes(q, 0)))
                        break;
        sqlite3_finalize(q);
        return rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : db_err(st, rc, err, "read the journal");
}

static int sq_status_counts(struct store *base, void (*fn)(void *arg, const char *status, uint64_t n), void *arg,
                        struct err **err)
{
        struct sq_store *st = (struct sq_store *)base;
        sqlite3_stmt *q = NULL;
        int rc = sqlite3_prepare_v2(st->db, "SELECT status, COUNT(*) FROM sessions GROUP BY status", -1, &q, NULL);
        if (rc != SQLITE_OK)
                return db_err(st, rc, err, "count the sessions");
        while ((rc = sqlite3_step(q)) == SQLITE_ROW)
                fn(arg, (const char *)sqlite3_column_text(q, 0), (uint64_t)sqlite3_column_int64(q, 1));
        sqlite3_finalize(q);
        return rc == SQLITE_DONE ? 0 : db_err(st, rc, err, "count the sessions");
}

static int sq_session_set_pending(struct store *base, const char *id, const char *pending, struct err **err)
{
        struct sq_store *st = (struct sq_store *)base;
        if (sq_commit(&st->base, err) < 0 || join_held(st, err) < 0)
                return -1;
        sqlite3_stmt *q = NULL;
        int rc = sqlite3_prepare_v2(st->db, "UPDATE sessions SET pending = ? WHERE id = ?", -1, &q, NULL);
        if (rc != SQLITE_OK)
                return db_err(st, rc, err, "update the session");
        bind_text(q, 1, pending);
        bind_text(q, 2, id);
        return run_stmt(st, q, err, "update the session");
}

static int sq_event_append(struct store *base, const char *id, const char *event, const char *data, bool batch,
                       uint64_t *ret_seq, struct err **err)
{
        struct sq_store *st = (struct sq_store *)base;
        if (begin_batch(st, err) < 0)
                return -1;
        sqlite3_stmt *q = NULL;
        int rc = sqlite3_prepare_v2(st->db,
                                    "INSERT INTO events(session, seq, event, data) VALUES (?1, (SELECT "
                                    "COALESCE(MAX(seq), 0) + 1 FROM events WHERE session = ?1), ?2, ?3) RETURNING seq",
                                    -1, &q, NULL);
        if (rc != SQLITE_OK)
                return db_err(st, rc, err, "record the event");
        bind_text(q, 1, id);
        bind_text(q, 2, event);
        bind_text(q, 3, data);
        rc = sqlite3_step(q);
        if (rc == SQLITE_ROW) {
                *ret_seq = (uint64_t)sqlite3_column_int64(q, 0);
                rc = sqlite3_step(q);
        }
        sqlite3_finalize(q);
        if (rc != SQLITE_DONE)
                return db_err(st, rc, err, "record the event");
        st->batch_lines++;
        if (!batch || st->batch_lines >= BATCH_MAX)
                return sq_commit(&st->base, err);
        return 0;
}

static int sq_events_each(struct store *base, const char *id, uint64_t after,
                      int (*fn)(void *arg, uint64_t seq, const char *event, const char *data), void *arg,
                      struct err **err)
{
        struct sq_store *st = (struct sq_store *)base;
        sqlite3_stmt *q = NULL;
        int rc = sqlite3_prepare_v2(st->db, "SELECT seq, event, data FROM events WHERE session = ? AND seq > ? ORDER "
                                            "BY seq",
                                    -1, &q, NULL);
        if (rc != SQLITE_OK)
                return db_err(st, rc, err, "read the events");
        bind_text(q, 1, id);
        sqlite3_bind_int64(q, 2, (sqlite3_int64)after);
        while ((rc = sqlite3_step(q)) == SQLITE_ROW)
                if (fn(arg, (uint64_t)sqlite3_column_int64(q, 0), (const char *)sqlite3_column_text(q, 1),
                       (const char *)sqlite3_column_text(q, 2)))
                        break;
        sqlite3_finalize(q);
        return rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : db_err(st, rc, err, "read the events");
}

static int sq_session_ids_before(struct store *base, const char *status, const char *before,
                             int (*fn)(void *arg, const char *id), void *arg, struct err **err)
{
        struct sq_store *st = (struct sq_store *)base;
        sqlite3_stmt *q = NULL;
        int rc = sqlite3_prepare_v2(st->db, "SELECT id FROM sessions WHERE status = ? AND updated_at < ? ORDER BY id "
                                            "LIMIT 1000",
                                    -1, &q, NULL);
        if (rc != SQLITE_OK)
                return db_err(st, rc, err, "list the sessions");
        bind_text(q, 1, status);
        bind_text(q, 2, before);
        /* Collected first: fn may write (delete, update) the rows. */
        char **ids = NULL;
        size_t n = 0;
        while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
                char **ni = realloc(ids, (n + 1) * sizeof(*ids));
                if (!ni)
                        break;
                ids = ni;
                ids[n] = col(q, 0);
                if (ids[n])
                        n++;
        }
        sqlite3_finalize(q);
        int ret = rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : db_err(st, rc, err, "list the sessions");
        for (size_t i = 0; i < n; i++) {
                if (ret == 0)
                        fn(arg, ids[i]);
                free(ids[i]);
        }
        free(ids);
        return ret;
}

static int sq_journal_bytes(struct store *base, const char *id, uint64_t *ret, struct err **err)
{
        struct sq_store *st = (struct sq_store *)base;
        sqlite3_stmt *q = NULL;
        int rc = sqlite3_prepare_v2(st->db, "SELECT COALESCE(SUM(LENGTH(CAST(line AS BLOB)) + 1), 0) FROM journal "
                                            "WHERE session = ?",
                                    -1, &q, NULL);
        if (rc != SQLITE_OK)
                return db_err(st, rc, err, "read the journal");
        bind_text(q, 1, id);
        rc = sqlite3_step(q);
        if (rc == SQLITE_ROW)
                *ret = (uint64_t)sqlite3_column_int64(q, 0);
        sqlite3_finalize(q);
        return rc == SQLITE_ROW ? 0 : db_err(st, rc, err, "read the journal");
}

static int sq_tenant_usage_get(struct store *base, const char *tenant, int64_t window_start, char **ret, struct err **err)
{
        struct sq_store *st = (struct sq_store *)base;
        *ret = NULL;
        sqlite3_stmt *q = NULL;
        int rc = sqlite3_prepare_v2(st->db, "SELECT usage FROM tenant_usage WHERE tenant = ? AND window_start = ?", -1,
                                    &q, NULL);
        if (rc != SQLITE_OK)
                return db_err(st, rc, err, "read the tenant's usage");
        bind_text(q, 1, tenant);
        sqlite3_bind_int64(q, 2, window_start);
        rc = sqlite3_step(q);
        if (rc == SQLITE_ROW)
                *ret = col(q, 0);
        sqlite3_finalize(q);
        if (rc == SQLITE_ROW)
                return *ret ? 0 : err_set(err, ENOMEM, "the tenant's usage");
        return rc == SQLITE_DONE ? 1 : db_err(st, rc, err, "read the tenant's usage");
}

static int sq_tenant_usage_put(struct store *base, const char *tenant, int64_t window_start, const char *usage,
                           struct err **err)
{
        struct sq_store *st = (struct sq_store *)base;
        if (sq_commit(&st->base, err) < 0 || join_held(st, err) < 0)
                return -1;
        sqlite3_stmt *q = NULL;
        int rc = sqlite3_prepare_v2(st->db,
                                    "INSERT OR REPLACE INTO tenant_usage(tenant, window_start, usage) VALUES (?,?,?)", -1,
                                    &q, NULL);
        if (rc != SQLITE_OK)
                return db_err(st, rc, err, "record the tenant's usage");
        bind_text(q, 1, tenant);
        sqlite3_bind_int64(q, 2, window_start);
        bind_text(q, 3, usage);
        return run_stmt(st, q, err, "record the tenant's usage");
}

static int sq_tenant_usage_add(struct store *base, const char *tenant, int64_t window_start, const char *delta,
                               bool batch, char **ret, struct err **err)
{
        struct sq_store *st = (struct sq_store *)base;
        bool began = !st->in_batch; /* a batch is opened with BEGIN IMMEDIATE: the write lock is held */
        if (begin_batch(st, err) < 0)
                return -1;
        char *row = NULL, *text = NULL;
        int rc = sq_tenant_usage_get(base, tenant, window_start, &row, err);
        if (rc < 0)
                goto fail;
        text = store_usage_merge(row, delta);
        free(row);
        if (!text) {
                err_set(err, ENOMEM, "the tenant's usage");
                goto fail;
        }
        sqlite3_stmt *q = NULL;
        rc = sqlite3_prepare_v2(st->db,
                                "INSERT OR REPLACE INTO tenant_usage(tenant, window_start, usage) VALUES (?,?,?)", -1,
                                &q, NULL);
        if (rc != SQLITE_OK) {
                db_err(st, rc, err, "record the tenant's usage");
                goto fail;
        }
        bind_text(q, 1, tenant);
        sqlite3_bind_int64(q, 2, window_start);
        bind_text(q, 3, text);
        if (run_stmt(st, q, err, "record the tenant's usage") < 0)
                goto fail;
        st->batch_lines++;
        if ((!batch || st->batch_lines >= BATCH_MAX) && sq_commit(base, err) < 0) {
                free(text);
                return -1;
        }
        if (ret)
                *ret = text;
        else
                free(text);
        return 0;
fail:
        free(text);
        if (began) {
                sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
                st->in_batch = false;
                st->batch_lines = 0;
        }
        return -1;
}

static const struct store_ops sq_ops = {
        .close = sq_close,
        .ready = sq_ready,
        .session_insert = sq_session_insert,
        .session_get = sq_session_get,
        .session_update = sq_session_update,
        .session_delete = sq_session_delete,
        .session_list = sq_session_list,
        .session_ids = sq_session_ids,
        .session_ids_before = sq_session_ids_before,
        .status_counts = sq_status_counts,
        .idem_get = sq_idem_get,
        .journal_append = sq_journal_append,
        .commit = sq_commit,
        .hold = sq_hold,
        .release = sq_release,
        .journal_bytes = sq_journal_bytes,
        .journal_each = sq_journal_each,
        .session_set_pending = sq_session_set_pending,
        .event_append = sq_event_append,
        .events_each = sq_events_each,
        .tenant_usage_get = sq_tenant_usage_get,
        .tenant_usage_put = sq_tenant_usage_put,
        .tenant_usage_add = sq_tenant_usage_add,
};
