/* server/store-pg.c — the PostgreSQL backend of the server's store
 * (store.h, store-internal.h), through libpq: one connection, text
 * parameters and results.  Journal lines, events and agent values are
 * `text` columns holding exactly what was written (never jsonb, which
 * rewrites numbers and refuses \u0000).  The schema is the server's:
 * versioned migrations in chidori_schema, each in its own transaction
 * under an advisory lock (replicas starting at once migrate once); a
 * schema newer than this build is refused. */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/util.h"
#include "effects/memory/memstore.h"
#include "server/pq.h"
#include "server/store-internal.h"

struct pg_store {
        struct store base;   /* first: the public handle */
        PGconn *conn;
        char *url;           /* as given (holds the password): never printed */
        bool in_batch;       /* a transaction holds pure journal lines not yet committed */
        bool in_tx;          /* a transaction of several statements (begin .. commit_tx) */
        unsigned batch_lines;
        uint64_t tx;         /* the batch transaction's number (a fence's row lock lasts as long) */
        uint64_t usage_tx;   /* the batch whose tenant_usage row lock is usage_key's */
        char usage_key[320]; /* "WINDOW TENANT" of that row */
        char lease_ms[24];   /* base.lease_ms as text, for the SQL */
};

#define BATCH_MAX 256
/* pg_advisory_xact_lock key of the migrations: "chidori" in ASCII. */
#define MIGRATE_LOCK "6514415819957353"

/* Each migration, in order: version i+1 is migrations[i].  Add new ones at
 * the end; never edit one that has shipped. */
static const char *const migrations[] = {
        /* 1: the server's tables, as SQLite's schema version 3 has them. */
        "CREATE TABLE sessions(id text PRIMARY KEY, tenant text NOT NULL, agent text NOT NULL, status text NOT NULL,"
        " policy_profile text, input text NOT NULL, result text, error text, exit integer, stats text,"
        " created_at text NOT NULL, updated_at text NOT NULL, pending text, quotas text);"
        "CREATE INDEX sessions_tenant ON sessions(tenant, id);"
        "CREATE INDEX sessions_status ON sessions(status, id);"
        "CREATE TABLE journal(session text NOT NULL, seq bigint NOT NULL, line text NOT NULL,"
        " PRIMARY KEY(session, seq));"
        "CREATE TABLE idempotency(tenant text NOT NULL, key text NOT NULL, session text NOT NULL,"
        " created bigint NOT NULL, PRIMARY KEY(tenant, key));"
        "CREATE TABLE events(session text NOT NULL, seq bigint NOT NULL, event text NOT NULL, data text NOT NULL,"
        " PRIMARY KEY(session, seq));"
        "CREATE TABLE tenant_usage(tenant text NOT NULL, window_start bigint NOT NULL, usage text NOT NULL,"
        " PRIMARY KEY(tenant, window_start));",
        /* 2: agent memory (effects/memory/memstore.h), shared by every
         * server on the database: a session's memory goes where it goes. */
        "CREATE TABLE memory(ns text NOT NULL, key text NOT NULL, value text NOT NULL, updated_at bigint NOT NULL,"
        " bytes bigint NOT NULL, PRIMARY KEY(ns, key));",
        /* 3: leases (several replicas, docs/scale-out.md): the replica that
         * owns a queued or running session, until when (the database's
         * clock), the epoch every take bumps (the fence of its writes), and
         * a cancellation asked through another replica. */
        "ALTER TABLE sessions ADD COLUMN owner text, ADD COLUMN lease_until timestamptz,"
        " ADD COLUMN epoch bigint NOT NULL DEFAULT 0, ADD COLUMN cancel text;"
        "CREATE INDEX sessions_owner ON sessions(owner);",
};
#define PG_SCHEMA_VERSION ((int)(sizeof(migrations) / sizeof(migrations[0])))

static const struct store_ops pg_ops;

static bool conn_lost(struct pg_store *st)
{
        return PQstatus(st->conn) != CONNECTION_OK;
}

/* libpq's message, on one line, without its "ERROR:  " and trailing newline. */
static const char *pg_message(struct pg_store *st, const PGresult *res, char *buf, size_t n)
{
        const char *m = res ? PQresultErrorMessage(res) : NULL;
        if (!m || !*m)
                m = PQerrorMessage(st->conn);
        if (strncmp(m, "ERROR:  ", 8) == 0)
                m += 8;
        size_t o = 0;
        for (; *m && o + 1 < n; m++)
                buf[o++] = *m == '\n' || *m == '\t' ? ' ' : *m;
        while (o && buf[o - 1] == ' ')
                o--;
        buf[o] = '\0';
        return buf;
}

static int pg_err(struct pg_store *st, const PGresult *res, struct err **err, const char *what)
{
        char msg[512];
        pg_message(st, res, msg, sizeof(msg));
        const char *state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
        if (conn_lost(st))
                st->base.lost = true;
        if (conn_lost(st))
                return err_setc(err, STORE_E_UNAVAILABLE, 0, "the database %s: %s: the connection is lost (%s)",
                                st->base.desc, what, msg);
        /* Class 53: insufficient resources (53100 disk full). */
        if (state && strncmp(state, "53", 2) == 0)
                return err_setc(err, STORE_E_FULL, ENOSPC, "the database %s: %s: %s", st->base.desc, what, msg);
        return err_setc(err, 0, 0, "the database %s: %s: %s", st->base.desc, what, msg);
}

/* Outside a transaction, a connection the server has closed (a restart:
 * its goodbye or EOF is waiting on the socket) is reset before use. */
static void revive(struct pg_store *st)
{
        if (st->in_batch || st->in_tx)
                return; /* a reset would end the transaction: its statements fail instead */
        struct pollfd p = { .fd = PQsocket(st->conn), .events = POLLIN };
        if (p.fd >= 0 && poll(&p, 1, 0) > 0)
                PQconsumeInput(st->conn);
        if (conn_lost(st))
                PQreset(st->conn);
}

static void rollback(struct pg_store *st)
{
        PQclear(PQexec(st->conn, "ROLLBACK"));
        st->in_tx = false;
}

/* One statement with text parameters (NULL: SQL NULL).  *ret (may be
 * NULL) gets the result on success; reads may retry once on a connection
 * found lost (nothing was written). */
static int run(struct pg_store *st, const char *sql, int n, const char *const *params, PGresult **ret, bool read,
               struct err **err, const char *what)
{
        for (int attempt = 0;; attempt++) {
                revive(st);
                PGresult *res = PQexecParams(st->conn, sql, n, NULL, params, NULL, NULL, 0);
                ExecStatusType s = res ? PQresultStatus(res) : PGRES_FATAL_ERROR;
                if (s == PGRES_COMMAND_OK || s == PGRES_TUPLES_OK) {
                        if (ret)
                                *ret = res;
                        else
                                PQclear(res);
                        return 0;
                }
                if (read && attempt == 0 && !st->in_batch && !st->in_tx && conn_lost(st)) {
                        PQclear(res);
                        continue;
                }
                int rc = pg_err(st, res, err, what);
                PQclear(res);
                /* PostgreSQL aborts the whole transaction: the batch (pure
                 * results only, which a replay recomputes) is dropped. */
                if (st->in_batch) {
                        if (!conn_lost(st))
                                rollback(st);
                        st->in_batch = false;
                        st->batch_lines = 0;
                }
                return rc;
        }
}

static int simple(struct pg_store *st, const char *sql, struct err **err, const char *what)
{
        return run(st, sql, 0, NULL, NULL, false, err, what);
}

static int pg_commit(struct store *base, struct err **err)
{
        struct pg_store *st = (struct pg_store *)base;
        if (!st->in_batch)
                return 0;
        int rc = simple(st, "COMMIT", err, "commit"); /* a failure rolls back (run) */
        st->in_batch = false;
        st->batch_lines = 0;
        return rc;
}

static int begin(struct pg_store *st, struct err **err)
{
        if (pg_commit(&st->base, err) < 0 || simple(st, "BEGIN", err, "begin a transaction") < 0)
                return -1;
        st->in_tx = true;
        return 0;
}

static int commit_tx(struct pg_store *st, struct err **err, const char *what)
{
        int rc = simple(st, "COMMIT", err, what);
        if (rc < 0)
                rollback(st);
        st->in_tx = false;
        return rc;
}

static int batch_begin(struct pg_store *st, struct err **err)
{
        if (st->in_batch)
                return 0;
        if (simple(st, "BEGIN", err, "begin a transaction") < 0)
                return -1;
        st->in_batch = true;
        st->tx++;
        return 0;
}

static char *dup_value(const PGresult *res, int row, int col)
{
        return PQgetisnull(res, row, col) ? NULL : strdup(PQgetvalue(res, row, col));
}

static void now_iso(char out[40])
{
        utc_iso8601(out, 40);
}

/* ---- fences (store_fence) ---- */

static int fenced_err(struct pg_store *st, const char *id, struct err **err)
{
        return err_setc(err, STORE_E_FENCED, 0,
                        "session %s: replica %s no longer holds its lease (it expired and another replica took the "
                        "session over, or it was cancelled or deleted): nothing more is written for it here",
                        id, st->base.owner);
}

/* In the open batch: session id's row locked (FOR SHARE) if this replica
 * still holds its lease with the fence's epoch; the lock lasts until the
 * batch commits, so a takeover waits for the lines written under the old
 * epoch and none can follow it.  Not fenced: 0. */
static int fence_batch(struct pg_store *st, const char *id, struct err **err)
{
        struct store_fence *f = store_fence_of(&st->base, id);
        if (!f || f->locked_tx == st->tx)
                return 0;
        char ep[24];
        snprintf(ep, sizeof(ep), "%llu", (unsigned long long)f->epoch);
        const char *p[] = { id, st->base.owner, ep };
        PGresult *res = NULL;
        if (run(st, "SELECT 1 FROM sessions WHERE id = $1 AND owner = $2 AND epoch = $3::bigint FOR SHARE", 3, p,
                &res, false, err, "check the session's lease") < 0)
                return -1;
        int n = PQntuples(res);
        PQclear(res);
        if (n == 0)
                return fenced_err(st, id, err);
        f->locked_tx = st->tx;
        return 0;
}

/* ---- sessions ---- */

#define SESSION_COLS                                                                                                  \
        "id, tenant, agent, status, policy_profile, input, result, error, stats, created_at, updated_at, exit, "     \
        "pending, quotas"

static void session_row(const PGresult *res, int i, struct store_session *s)
{
        s->id = dup_value(res, i, 0);
        s->tenant = dup_value(res, i, 1);
        s->agent = dup_value(res, i, 2);
        s->status = dup_value(res, i, 3);
        s->policy_profile = dup_value(res, i, 4);
        s->input = dup_value(res, i, 5);
        s->result = dup_value(res, i, 6);
        s->error = dup_value(res, i, 7);
        s->stats = dup_value(res, i, 8);
        s->created_at = dup_value(res, i, 9);
        s->updated_at = dup_value(res, i, 10);
        s->exit = PQgetisnull(res, i, 11) ? -1 : (int)strtol(PQgetvalue(res, i, 11), NULL, 10);
        s->pending = dup_value(res, i, 12);
        s->quotas = dup_value(res, i, 13);
}

static int pg_session_insert(struct store *base, const struct store_session *s, const char *idem_key,
                             struct err **err)
{
        struct pg_store *st = (struct pg_store *)base;
        if (begin(st, err) < 0)
                return -1;
        /* Owned by this replica from the start (epoch 1): sessions_create
         * fences its writes with it. */
        snprintf(st->lease_ms, sizeof(st->lease_ms), "%u", base->lease_ms);
        const char *p[] = { s->id, s->tenant, s->agent, s->status, s->policy_profile, s->input,
                            s->created_at, s->updated_at, s->quotas, base->owner, st->lease_ms };
        if (run(st,
                "INSERT INTO sessions(id, tenant, agent, status, policy_profile, input, created_at, updated_at, exit, "
                "quotas, owner, lease_until, epoch) VALUES ($1,$2,$3,$4,$5,$6,$7,$8,NULL,$9,$10, CASE WHEN $10::text "
                "IS NULL THEN NULL ELSE clock_timestamp() + $11::bigint * interval '1 millisecond' END, 1)",
                11, p, NULL, false, err, "record the session") < 0)
                goto fail;
        if (idem_key) {
                char now[32];
                snprintf(now, sizeof(now), "%lld", (long long)time(NULL));
                const char *q[] = { s->tenant, idem_key, s->id, now };
                if (run(st,
                        "INSERT INTO idempotency(tenant, key, session, created) VALUES ($1,$2,$3,$4) ON CONFLICT "
                        "(tenant, key) DO UPDATE SET session = EXCLUDED.session, created = EXCLUDED.created",
                        4, q, NULL, false, err, "record the idempotency key") < 0)
                        goto fail;
        }
        return commit_tx(st, err, "record the session");
fail:
        rollback(st);
        return -1;
}

static int pg_session_get(struct store *base, const char *id, struct store_session *ret, struct err **err)
{
        struct pg_store *st = (struct pg_store *)base;
        PGresult *res = NULL;
        const char *p[] = { id };
        if (run(st, "SELECT " SESSION_COLS " FROM sessions WHERE id = $1", 1, p, &res, true, err,
                "read the session") < 0)
                return -1;
        int found = PQntuples(res) > 0;
        if (found)
                session_row(res, 0, ret);
        PQclear(res);
        return found ? 0 : 1;
}

static int pg_session_update(struct store *base, const char *id, const char *status, const char *result,
                             const char *error, int exit, const char *stats, struct err **err)
{
        struct pg_store *st = (struct pg_store *)base;
        if (pg_commit(base, err) < 0)
                return -1;
        char ts[40], ex[16], ep[24];
        now_iso(ts);
        snprintf(ex, sizeof(ex), "%d", exit);
        /* Fenced: only while this replica holds the lease with its epoch.
         * A session that pauses or settles has no owner any more. */
        struct store_fence *f = store_fence_of(base, id);
        snprintf(ep, sizeof(ep), "%llu", f ? (unsigned long long)f->epoch : 0ull);
        const char *p[] = { status, ts, result, error, exit >= 0 ? ex : NULL, stats, id, f ? base->owner : NULL, ep };
        PGresult *res = NULL;
        if (run(st,
                "UPDATE sessions SET status = $1, updated_at = $2, result = COALESCE($3, result), error = "
                "COALESCE($4, error), exit = COALESCE($5::integer, exit), stats = COALESCE($6, stats), owner = CASE "
                "WHEN $1 IN ('queued', 'running') THEN owner END, lease_until = CASE WHEN $1 IN ('queued', 'running') "
                "THEN lease_until END, cancel = CASE WHEN $1 IN ('queued', 'running') THEN cancel END WHERE id = $7 "
                "AND ($8::text IS NULL OR (owner = $8 AND epoch = $9::bigint))",
                9, p, &res, false, err, "update the session") < 0)
                return -1;
        bool none = strcmp(PQcmdTuples(res), "0") == 0;
        PQclear(res);
        return f && none ? fenced_err(st, id, err) : 0;
}

static int pg_session_delete(struct store *base, const char *id, struct err **err)
{
        struct pg_store *st = (struct pg_store *)base;
        if (begin(st, err) < 0)
                return -1;
        /* The session's row first: it waits for a batch of its owner (on
         * another replica) that holds it, so the lines that batch wrote are
         * deleted too, and the owner's next write is fenced (no row). */
        static const char *const sqls[] = {
                "DELETE FROM sessions WHERE id = $1",
                "DELETE FROM journal WHERE session = $1",
                "DELETE FROM events WHERE session = $1",
                "DELETE FROM idempotency WHERE session = $1",
        };
        const char *p[] = { id };
        for (size_t i = 0; i < sizeof(sqls) / sizeof(sqls[0]); i++)
                if (run(st, sqls[i], 1, p, NULL, false, err, "delete the session") < 0) {
                        rollback(st);
                        return -1;
                }
        return commit_tx(st, err, "delete the session");
}

static int pg_session_list(struct store *base, const char *tenant, const char *status, const char *after,
                           unsigned limit, int (*fn)(void *arg, const struct store_session *s), void *arg,
                           struct err **err)
{
        struct pg_store *st = (struct pg_store *)base;
        char lim[24];
        snprintf(lim, sizeof(lim), "%llu", (unsigned long long)limit + 1);
        const char *p[] = { tenant, status, after, lim };
        PGresult *res = NULL;
        if (run(st,
                "SELECT " SESSION_COLS " FROM sessions WHERE ($1::text IS NULL OR tenant = $1) AND ($2::text IS NULL "
                "OR status = $2) AND ($3::text IS NULL OR id < $3) ORDER BY id DESC LIMIT $4::bigint",
                4, p, &res, true, err, "list the sessions") < 0)
                return -1;
        for (int i = 0; i < PQntuples(res); i++) {
                struct store_session s = { 0 };
                session_row(res, i, &s);
                int stop = fn(arg, &s);
                store_session_clear(&s);
                if (stop)
                        break;
        }
        PQclear(res);
        return 0;
}

/* Ids collected first: fn may write (delete, update) the rows. */
static int each_id(struct pg_store *st, const char *sql, int n, const char *const *p,
                   int (*fn)(void *arg, const char *id), void *arg, struct err **err)
{
        PGresult *res = NULL;
        if (run(st, sql, n, p, &res, true, err, "list the sessions") < 0)
                return -1;
        for (int i = 0; i < PQntuples(res); i++)
                if (fn(arg, PQgetvalue(res, i, 0)))
                        break;
        PQclear(res);
        return 0;
}

static int pg_session_ids(struct store *base, const char *status, int (*fn)(void *arg, const char *id), void *arg,
                          struct err **err)
{
        const char *p[] = { status };
        return each_id((struct pg_store *)base, "SELECT id FROM sessions WHERE status = $1 ORDER BY id", 1, p, fn,
                       arg, err);
}

static int pg_session_ids_before(struct store *base, const char *status, const char *before,
                                 int (*fn)(void *arg, const char *id), void *arg, struct err **err)
{
        const char *p[] = { status, before };
        return each_id((struct pg_store *)base,
                       "SELECT id FROM sessions WHERE status = $1 AND updated_at < $2 ORDER BY id LIMIT 1000", 2, p,
                       fn, arg, err);
}

static int pg_status_counts(struct store *base, void (*fn)(void *arg, const char *status, uint64_t n), void *arg,
                            struct err **err)
{
        struct pg_store *st = (struct pg_store *)base;
        PGresult *res = NULL;
        if (run(st, "SELECT status, COUNT(*) FROM sessions GROUP BY status", 0, NULL, &res, true, err,
                "count the sessions") < 0)
                return -1;
        for (int i = 0; i < PQntuples(res); i++)
                fn(arg, PQgetvalue(res, i, 0), strtoull(PQgetvalue(res, i, 1), NULL, 10));
        PQclear(res);
        return 0;
}

static int pg_idem_get(struct store *base, const char *tenant, const char *key, char **ret_id, struct err **err)
{
        struct pg_store *st = (struct pg_store *)base;
        char since[32];
        snprintf(since, sizeof(since), "%lld", (long long)time(NULL) - 24 * 3600);
        const char *p[] = { tenant, key, since };
        PGresult *res = NULL;
        if (run(st, "SELECT session FROM idempotency WHERE tenant = $1 AND key = $2 AND created > $3::bigint", 3, p,
                &res, true, err, "read the idempotency key") < 0)
                return -1;
        int found = PQntuples(res) > 0;
        if (found)
                *ret_id = strdup(PQgetvalue(res, 0, 0));
        PQclear(res);
        if (found && !*ret_id)
                return err_set(err, ENOMEM, "idempotency key");
        return found ? 0 : 1;
}

static int pg_session_set_pending(struct store *base, const char *id, const char *pending, struct err **err)
{
        struct pg_store *st = (struct pg_store *)base;
        if (pg_commit(base, err) < 0)
                return -1;
        struct store_fence *f = store_fence_of(base, id);
        char ep[24];
        snprintf(ep, sizeof(ep), "%llu", f ? (unsigned long long)f->epoch : 0ull);
        const char *p[] = { pending, id, f ? base->owner : NULL, ep };
        PGresult *res = NULL;
        if (run(st,
                "UPDATE sessions SET pending = $1 WHERE id = $2 AND ($3::text IS NULL OR (owner = $3 AND epoch = "
                "$4::bigint))",
                4, p, &res, false, err, "update the session") < 0)
                return -1;
        bool none = strcmp(PQcmdTuples(res), "0") == 0;
        PQclear(res);
        return f && none ? fenced_err(st, id, err) : 0;
}

/* ---- journals and events: appended, in order ---- */

static int pg_journal_append(struct store *base, const char *id, const char *line, bool batch, struct err **err)
{
        struct pg_store *st = (struct pg_store *)base;
        if (batch_begin(st, err) < 0 || fence_batch(st, id, err) < 0)
                return -1;
        const char *p[] = { id, line };
        if (run(st,
                "INSERT INTO journal(session, seq, line) VALUES ($1, (SELECT COALESCE(MAX(seq), 0) + 1 FROM journal "
                "WHERE session = $1), $2)",
                2, p, NULL, false, err, "write the journal") < 0)
                return -1;
        st->batch_lines++;
        if (!batch || st->batch_lines >= BATCH_MAX)
                return pg_commit(base, err);
        return 0;
}

static int pg_journal_each(struct store *base, const char *id, int (*fn)(void *arg, const char *line, size_t len),
                           void *arg, struct err **err)
{
        struct pg_store *st = (struct pg_store *)base;
        if (pg_commit(base, err) < 0)
                return -1;
        const char *p[] = { id };
        PGresult *res = NULL;
        if (run(st, "SELECT line FROM journal WHERE session = $1 ORDER BY seq", 1, p, &res, true, err,
                "read the journal") < 0)
                return -1;
        for (int i = 0; i < PQntuples(res); i++)
                if (fn(arg, PQgetvalue(res, i, 0), (size_t)PQgetlength(res, i, 0)))
                        break;
        PQclear(res);
        return 0;
}

static int pg_journal_bytes(struct store *base, const char *id, uint64_t *ret, struct err **err)
{
        struct pg_store *st = (struct pg_store *)base;
        const char *p[] = { id };
        PGresult *res = NULL;
        if (run(st, "SELECT COALESCE(SUM(octet_length(line) + 1), 0) FROM journal WHERE session = $1", 1, p, &res,
                true, err, "read the journal") < 0)
                return -1;
        *ret = strtoull(PQgetvalue(res, 0, 0), NULL, 10);
        PQclear(res);
        return 0;
}

static int pg_event_append(struct store *base, const char *id, const char *event, const char *data, bool batch,
                           uint64_t *ret_seq, struct err **err)
{
        struct pg_store *st = (struct pg_store *)base;
        if (batch_begin(st, err) < 0)
                return -1;
        const char *p[] = { id, event, data };
        PGresult *res = NULL;
        if (run(st,
                "INSERT INTO events(session, seq, event, data) VALUES ($1, (SELECT COALESCE(MAX(seq), 0) + 1 FROM "
                "events WHERE session = $1), $2, $3) RETURNING seq",
                3, p, &res, false, err, "record the event") < 0)
                return -1;
        *ret_seq = strtoull(PQgetvalue(res, 0, 0), NULL, 10);
        PQclear(res);
        st->batch_lines++;
        if (!batch || st->batch_lines >= BATCH_MAX)
                return pg_commit(base, err);
        return 0;
}

static int pg_events_each(struct store *base, const char *id, uint64_t after,
                          int (*fn)(void *arg, uint64_t seq, const char *event, const char *data), void *arg,
                          struct err **err)
{
        struct pg_store *st = (struct pg_store *)base;
        char a[24];
        snprintf(a, sizeof(a), "%llu", (unsigned long long)after);
        const char *p[] = { id, a };
        PGresult *res = NULL;
        if (run(st, "SELECT seq, event, data FROM events WHERE session = $1 AND seq > $2::bigint ORDER BY seq", 2, p,
                &res, true, err, "read the events") < 0)
                return -1;
        for (int i = 0; i < PQntuples(res); i++)
                if (fn(arg, strtoull(PQgetvalue(res, i, 0), NULL, 10), PQgetvalue(res, i, 1), PQgetvalue(res, i, 2)))
                        break;
        PQclear(res);
        return 0;
}

/* ---- tenants' usage ---- */

static int pg_tenant_usage_get(struct store *base, const char *tenant, int64_t window_start, char **ret,
                               struct err **err)
{
        struct pg_store *st = (struct pg_store *)base;
        *ret = NULL;
        char w[24];
        snprintf(w, sizeof(w), "%lld", (long long)window_start);
        const char *p[] = { tenant, w };
        PGresult *res = NULL;
        if (run(st, "SELECT usage FROM tenant_usage WHERE tenant = $1 AND window_start = $2::bigint", 2, p, &res,
                true, err, "read the tenant's usage") < 0)
                return -1;
        int found = PQntuples(res) > 0;
        if (found)
                *ret = strdup(PQgetvalue(res, 0, 0));
        PQclear(res);
        if (found && !*ret)
                return err_set(err, ENOMEM, "the tenant's usage");
        return found ? 0 : 1;
}

static int pg_tenant_usage_put(struct store *base, const char *tenant, int64_t window_start, const char *usage,
                               struct err **err)
{
        struct pg_store *st = (struct pg_store *)base;
        if (pg_commit(base, err) < 0)
                return -1;
        char w[24];
        snprintf(w, sizeof(w), "%lld", (long long)window_start);
        const char *p[] = { tenant, w, usage };
        return run(st,
                   "INSERT INTO tenant_usage(tenant, window_start, usage) VALUES ($1, $2::bigint, $3) ON CONFLICT "
                   "(tenant, window_start) DO UPDATE SET usage = EXCLUDED.usage",
                   3, p, NULL, false, err, "record the tenant's usage");
}

/* The row locked (FOR UPDATE, created first if missing) until the
 * transaction ends, so replicas adding to one tenant's use at once both
 * count.  In the batch: it commits with the journal line it goes with. */
static int pg_tenant_usage_add(struct store *base, const char *tenant, int64_t window_start, const char *delta,
                               bool batch, char **ret, struct err **err)
{
        struct pg_store *st = (struct pg_store *)base;
        /* One tenant row per transaction: a batch holding another tenant's
         * row commits first, so two replicas adding to two tenants in
         * crossed order never wait on each other (no deadlock). */
        char key[sizeof(st->usage_key)];
        snprintf(key, sizeof(key), "%lld %s", (long long)window_start, tenant);
        if (st->in_batch && st->usage_tx == st->tx && strcmp(st->usage_key, key) != 0 && pg_commit(base, err) < 0)
                return -1;
        if (batch_begin(st, err) < 0)
                return -1;
        st->usage_tx = st->tx;
        snprintf(st->usage_key, sizeof(st->usage_key), "%s", key);
        char w[24];
        snprintf(w, sizeof(w), "%lld", (long long)window_start);
        const char *p[] = { tenant, w, NULL };
        PGresult *res = NULL;
        if (run(st,
                "INSERT INTO tenant_usage(tenant, window_start, usage) VALUES ($1, $2::bigint, '{}') ON CONFLICT "
                "(tenant, window_start) DO NOTHING",
                2, p, NULL, false, err, "record the tenant's usage") < 0 ||
            run(st, "SELECT usage FROM tenant_usage WHERE tenant = $1 AND window_start = $2::bigint FOR UPDATE", 2, p,
                &res, false, err, "record the tenant's usage") < 0)
                return -1;
        char *text = store_usage_merge(PQntuples(res) > 0 ? PQgetvalue(res, 0, 0) : NULL, delta);
        PQclear(res);
        if (!text)
                return err_set(err, ENOMEM, "the tenant's usage");
        p[2] = text;
        if (run(st, "UPDATE tenant_usage SET usage = $3 WHERE tenant = $1 AND window_start = $2::bigint", 3, p, NULL,
                false, err, "record the tenant's usage") < 0) {
                free(text);
                return -1;
        }
        st->batch_lines++;
        if ((!batch || st->batch_lines >= BATCH_MAX) && pg_commit(base, err) < 0) {
                free(text);
                return -1;
        }
        if (ret)
                *ret = text;
        else
                free(text);
        return 0;
}

/* ---- leases ---- */

static int lease_rows(PGresult *res, int (*fn)(void *arg, const struct store_lease *l), void *arg)
{
        for (int i = 0; i < PQntuples(res); i++) {
                const struct store_lease l = {
                        .id = PQgetvalue(res, i, 0),
                        .epoch = strtoull(PQgetvalue(res, i, 1), NULL, 10),
                        .status = PQgetvalue(res, i, 2),
                        .cancel = PQgetisnull(res, i, 3) ? NULL : PQgetvalue(res, i, 3),
                };
                if (fn(arg, &l))
                        break;
        }
        return 0;
}

static void lease_ms_text(struct pg_store *st)
{
        snprintf(st->lease_ms, sizeof(st->lease_ms), "%u", st->base.lease_ms);
}

static int pg_lease_renew(struct store *base, int (*fn)(void *arg, const struct store_lease *l), void *arg,
                          struct err **err)
{
        struct pg_store *st = (struct pg_store *)base;
        if (pg_commit(base, err) < 0) /* what the batch holds, and the row locks it took */
                return -1;
        lease_ms_text(st);
        const char *p[] = { base->owner, st->lease_ms };
        PGresult *res = NULL;
        if (run(st,
                "UPDATE sessions SET lease_until = clock_timestamp() + $2::bigint * interval '1 millisecond' WHERE "
                "owner = $1 RETURNING id, epoch, status, cancel",
                2, p, &res, false, err, "renew the leases") < 0)
                return -1;
        lease_rows(res, fn, arg);
        PQclear(res);
        return 0;
}

/* FOR UPDATE SKIP LOCKED: each row is taken by one replica, rechecked
 * under its lock (an expiry renewed meanwhile is not taken). */
static int pg_lease_claim(struct store *base, bool mine_too, unsigned max,
                          int (*fn)(void *arg, const struct store_lease *l), void *arg, struct err **err)
{
        struct pg_store *st = (struct pg_store *)base;
        if (pg_commit(base, err) < 0)
                return -1;
        lease_ms_text(st);
        char n[24];
        snprintf(n, sizeof(n), "%u", max);
        const char *p[] = { base->owner, st->lease_ms, mine_too ? "t" : "f", n };
        PGresult *res = NULL;
        if (run(st,
                "UPDATE sessions SET owner = $1, epoch = epoch + 1, lease_until = clock_timestamp() + $2::bigint * "
                "interval '1 millisecond' WHERE id IN (SELECT id FROM sessions WHERE status IN ('queued', 'running') "
                "AND (owner IS NULL OR lease_until < clock_timestamp() OR ($3::boolean AND owner = $1)) ORDER BY id "
                "LIMIT $4::bigint FOR UPDATE SKIP LOCKED) RETURNING id, epoch, status, cancel",
                4, p, &res, false, err, "take over sessions") < 0)
                return -1;
        lease_rows(res, fn, arg);
        PQclear(res);
        return 0;
}

static int pg_resume_claim(struct store *base, const char *id, const char *status, const char *pending,
                           const char *new_pending, uint64_t *ret_epoch, struct err **err)
{
        struct pg_store *st = (struct pg_store *)base;
        if (pg_commit(base, err) < 0)
                return -1;
        lease_ms_text(st);
        char ts[40];
        now_iso(ts);
        const char *p[] = { id, status, pending, new_pending, ts, base->owner, st->lease_ms };
        PGresult *res = NULL;
        if (run(st,
                "UPDATE sessions SET status = 'queued', pending = $4, updated_at = $5, owner = $6, epoch = epoch + 1, "
                "lease_until = clock_timestamp() + $7::bigint * interval '1 millisecond', cancel = NULL WHERE id = $1 "
                "AND status = $2 AND pending IS NOT DISTINCT FROM $3 RETURNING epoch",
                7, p, &res, false, err, "resume the session") < 0)
                return -1;
        int rc = PQntuples(res) > 0 ? 0 : 1;
        if (rc == 0)
                *ret_epoch = strtoull(PQgetvalue(res, 0, 0), NULL, 10);
        PQclear(res);
        return rc;
}

static int pg_cancel_request(struct store *base, const char *id, const char *why, const char *error_json,
                             struct err **err)
{
        struct pg_store *st = (struct pg_store *)base;
        if (pg_commit(base, err) < 0)
                return -1;
        char ts[40];
        now_iso(ts);
        const char *p[] = { id, error_json, ts };
        PGresult *res = NULL;
        if (run(st,
                "UPDATE sessions SET status = 'cancelled', error = $2, exit = 130, updated_at = $3, owner = NULL, "
                "lease_until = NULL, cancel = NULL WHERE id = $1 AND status IN ('queued', 'running') AND (owner IS "
                "NULL OR lease_until < clock_timestamp())",
                3, p, &res, false, err, "cancel the session") < 0)
                return -1;
        bool direct = strcmp(PQcmdTuples(res), "0") != 0;
        PQclear(res);
        if (direct)
                return 1;
        const char *q[] = { id, why };
        if (run(st, "UPDATE sessions SET cancel = $2 WHERE id = $1 AND status IN ('queued', 'running')", 2, q, &res,
                false, err, "cancel the session") < 0)
                return -1;
        bool asked = strcmp(PQcmdTuples(res), "0") != 0;
        PQclear(res);
        return asked ? 0 : 2;
}

/* ---- open, migrate, readiness, close ---- */

static int pg_ready(struct store *base, struct err **err)
{
        struct pg_store *st = (struct pg_store *)base;
        /* A round trip even inside an open journal batch: libpq learns that
         * the server went away only when it reads, and /readyz must say so
         * now, not at the batch's commit. A failure drops the batch (run():
         * pure results, which a replay recomputes). */
        struct err *e = NULL;
        if (run(st, "SELECT 1", 0, NULL, NULL, true, &e, "check the connection") < 0) {
                char msg[512];
                snprintf(msg, sizeof(msg), "%s", err_msg(e));
                err_free(e);
                return err_setc(err, STORE_E_UNAVAILABLE, 0, "%s", msg);
        }
        return 0;
}

static void pg_close(struct store *base)
{
        struct pg_store *st = (struct pg_store *)base;
        if (!st)
                return;
        if (st->in_batch && st->conn)
                pg_commit(base, NULL);
        if (st->conn)
                PQfinish(st->conn);
        free(st->url);
        free(st->base.desc);
        free(st);
}

/* The schema's version (0: none yet), then every migration past it, each
 * in a transaction holding the advisory lock (a replica starting at the
 * same time waits, then finds the work done). */
static int migrate(struct pg_store *st, struct err **err)
{
        if (simple(st, "CREATE TABLE IF NOT EXISTS chidori_schema(version integer NOT NULL)", err,
                   "create the schema's version table") < 0)
                return -1;
        for (;;) {
                if (simple(st, "BEGIN", err, "begin a migration") < 0)
                        return -1;
                PGresult *res = NULL;
                if (simple(st, "SELECT pg_advisory_xact_lock(" MIGRATE_LOCK ")", err, "lock the schema") < 0 ||
                    run(st, "SELECT COALESCE(MAX(version), 0) FROM chidori_schema", 0, NULL, &res, false, err,
                        "read the schema's version") < 0) {
                        rollback(st);
                        return -1;
                }
                int version = (int)strtol(PQgetvalue(res, 0, 0), NULL, 10);
                PQclear(res);
                if (version > PG_SCHEMA_VERSION) {
                        rollback(st);
                        return err_setc(err, STORE_E_VERSION, 0,
                                        "the database %s has chidori schema version %d, written by a newer chidori "
                                        "(this one knows versions up to %d): run the newer chidori, or point --store "
                                        "at another database",
                                        st->base.desc, version, PG_SCHEMA_VERSION);
                }
                if (version == PG_SCHEMA_VERSION)
                        return simple(st, "COMMIT", err, "read the schema's version");
                char set[64];
                snprintf(set, sizeof(set), "INSERT INTO chidori_schema VALUES (%d)", version + 1);
                PGresult *r1 = PQexec(st->conn, migrations[version]);
                bool ok = PQresultStatus(r1) == PGRES_COMMAND_OK;
                if (!ok) {
                        char what[64];
                        snprintf(what, sizeof(what), "migrate the schema to version %d", version + 1);
                        pg_err(st, r1, err, what);
                }
                PQclear(r1);
                if (!ok || simple(st, "DELETE FROM chidori_schema", err, "record the schema's version") < 0 ||
                    simple(st, set, err, "record the schema's version") < 0) {
                        rollback(st);
                        return -1;
                }
                if (simple(st, "COMMIT", err, "migrate the schema") < 0)
                        return -1;
        }
}

int store_pg_open(const char *url, struct store **ret, struct err **err)
{
        struct pg_store *st = calloc(1, sizeof(*st));
        char desc[1024];
        store_redact(url, desc, sizeof(desc));
        if (!st || !(st->url = strdup(url)) || !(st->base.desc = strdup(desc))) {
                if (st)
                        free(st->url);
                free(st);
                return err_set(err, ENOMEM, "state store");
        }
        st->base.ops = &pg_ops;
        st->base.kind = "postgres";
        if (pq_load(err) < 0) {
                pg_close(&st->base);
                return -1;
        }
        /* libpq's own check of the URL first: a malformed one is a usage error. */
        char *bad = NULL;
        PQconninfoOption *opts = PQconninfoParse(url, &bad);
        if (!opts) {
                char msg[256];
                snprintf(msg, sizeof(msg), "%s", bad ? bad : "out of memory");
                msg[strcspn(msg, "\n")] = '\0';
                PQfreemem(bad);
                err_setc(err, STORE_E_USAGE, 0, "--store %s is not a valid PostgreSQL URL: %s", desc, msg);
                pg_close(&st->base);
                return -1;
        }
        PQconninfoFree(opts);
        /* Defaults first: what the URL says overrides them (expand_dbname). */
        const char *const keys[] = { "connect_timeout", "application_name", "client_encoding", "dbname", NULL };
        const char *const vals[] = { "10", "chidori-serve", "UTF8", url, NULL };
        st->conn = PQconnectdbParams(keys, vals, 1);
        if (!st->conn || PQstatus(st->conn) != CONNECTION_OK) {
                char msg[512];
                const char *host = st->conn ? PQhost(st->conn) : NULL;
                if (st->conn)
                        pg_message(st, NULL, msg, sizeof(msg));
                else
                        snprintf(msg, sizeof(msg), "out of memory");
                err_setc(err, STORE_E_UNAVAILABLE, 0,
                         "cannot connect to the PostgreSQL database %s (host %s): %s; check that it runs, that the "
                         "URL names it, and the user's password (in the URL or PGPASSWORD)",
                         desc, host && *host ? host : "default", msg);
                pg_close(&st->base);
                return -1;
        }
        PGresult *res = PQexec(st->conn, "SHOW server_encoding");
        const char *enc = PQresultStatus(res) == PGRES_TUPLES_OK ? PQgetvalue(res, 0, 0) : "";
        if (strcmp(enc, "UTF8") != 0) {
                err_setc(err, STORE_E_UNAVAILABLE, 0,
                         "the PostgreSQL database %s has encoding %s: chidori stores text as written and needs a "
                         "UTF8 database (CREATE DATABASE ... ENCODING 'UTF8')",
                         desc, *enc ? enc : "(unknown)");
                PQclear(res);
                pg_close(&st->base);
                return -1;
        }
        PQclear(res);
        if (simple(st, "SET client_min_messages = warning", err, "configure the session") < 0 ||
            migrate(st, err) < 0) {
                pg_close(&st->base);
                return -1;
        }
        *ret = &st->base;
        return 0;
}

/* ---- agent memory (memstore_backend): on the store's connection ---- */

static int mem_get(void *h, const char *ns, const char *key, char **ret_json, struct err **err)
{
        struct pg_store *st = h;
        if (pg_commit(&st->base, err) < 0)
                return -1;
        const char *p[] = { ns, key };
        PGresult *res = NULL;
        if (run(st, "SELECT value FROM memory WHERE ns = $1 AND key = $2", 2, p, &res, true, err,
                "memory: cannot read a key") < 0)
                return -1;
        *ret_json = NULL;
        if (PQntuples(res) > 0 && !(*ret_json = strdup(PQgetvalue(res, 0, 0)))) {
                PQclear(res);
                return err_set(err, ENOMEM, "memory: cannot read a stored value");
        }
        PQclear(res);
        return 0;
}

/* One transaction holding the namespace's advisory lock: the limits are
 * checked against what the namespace holds, then the row written. */
static int mem_set(void *h, const char *ns, const char *key, const char *value_json, size_t klen, size_t vlen,
                   unsigned long long max_bytes, struct err **err)
{
        struct pg_store *st = h;
        if (begin(st, err) < 0)
                return -1;
        const char *p2[] = { ns, key };
        PGresult *res = NULL;
        if (run(st, "SELECT pg_advisory_xact_lock(hashtext('chidori-memory:' || $1))", 1, p2, NULL, false, err,
                "memory: cannot lock the namespace") < 0 ||
            run(st,
                "SELECT (SELECT COUNT(*) FROM memory WHERE ns = $1), (SELECT COALESCE(SUM(bytes), 0) FROM memory "
                "WHERE ns = $1), (SELECT bytes FROM memory WHERE ns = $1 AND key = $2)",
                2, p2, &res, false, err, "memory: cannot read the namespace's totals") < 0)
                goto fail;
        long long keys = strtoll(PQgetvalue(res, 0, 0), NULL, 10), held = strtoll(PQgetvalue(res, 0, 1), NULL, 10);
        bool exists = !PQgetisnull(res, 0, 2);
        long long old = exists ? strtoll(PQgetvalue(res, 0, 2), NULL, 10) : 0;
        PQclear(res);
        size_t bytes = klen + vlen;
        if (!exists && keys >= (long long)MEMSTORE_KEYS_MAX) {
                err_set(err, 0,
                        "memory: namespace '%s' already holds %u keys, the limit per namespace; delete keys before "
                        "adding new ones",
                        ns, MEMSTORE_KEYS_MAX);
                goto fail;
        }
        if ((unsigned long long)(held - old) + bytes > max_bytes) {
                err_setc(err, MEMSTORE_E_LIMIT, 0,
                         "memory: namespace '%s' holds %lld bytes of keys and values; storing %zu more would pass its "
                         "limit of %llu bytes",
                         ns, held, bytes, max_bytes);
                goto fail;
        }
        char now[24], nb[24];
        snprintf(now, sizeof(now), "%lld", (long long)time(NULL) * 1000);
        snprintf(nb, sizeof(nb), "%zu", bytes);
        const char *p5[] = { ns, key, value_json, now, nb };
        if (run(st,
                "INSERT INTO memory(ns, key, value, updated_at, bytes) VALUES ($1, $2, $3, $4::bigint, $5::bigint) "
                "ON CONFLICT (ns, key) DO UPDATE SET value = EXCLUDED.value, updated_at = EXCLUDED.updated_at, "
                "bytes = EXCLUDED.bytes",
                5, p5, NULL, false, err, "memory: cannot store a key") < 0)
                goto fail;
        return commit_tx(st, err, "memory: cannot store a key");
fail:
        rollback(st);
        return -1;
}

static int mem_del(void *h, const char *ns, const char *key, bool *ret_existed, struct err **err)
{
        struct pg_store *st = h;
        if (pg_commit(&st->base, err) < 0)
                return -1;
        const char *p[] = { ns, key };
        PGresult *res = NULL;
        if (run(st, "DELETE FROM memory WHERE ns = $1 AND key = $2", 2, p, &res, false, err,
                "memory: cannot delete a key") < 0)
                return -1;
        if (ret_existed)
                *ret_existed = (int)strtol(PQcmdTuples(res), NULL, 10) > 0;
        PQclear(res);
        return 0;
}

static int mem_clear(void *h, const char *ns, size_t *ret_n, struct err **err)
{
        struct pg_store *st = h;
        if (pg_commit(&st->base, err) < 0)
                return -1;
        const char *p[] = { ns };
        PGresult *res = NULL;
        if (run(st, "DELETE FROM memory WHERE ns = $1", 1, p, &res, false, err,
                "memory: cannot clear the namespace") < 0)
                return -1;
        if (ret_n)
                *ret_n = (size_t)strtoll(PQcmdTuples(res), NULL, 10);
        PQclear(res);
        return 0;
}

static int mem_list(void *h, const char *ns, const char *prefix, char ***ret_keys, size_t *ret_n, struct err **err)
{
        struct pg_store *st = h;
        if (pg_commit(&st->base, err) < 0)
                return -1;
        /* Bytes order (COLLATE "C"), a literal prefix (no LIKE patterns). */
        const char *p[] = { ns, prefix };
        PGresult *res = NULL;
        if (run(st,
                "SELECT key FROM memory WHERE ns = $1 AND starts_with(key, $2) ORDER BY key COLLATE \"C\"", 2, p,
                &res, true, err, "memory: cannot list keys") < 0)
                return -1;
        int n = PQntuples(res);
        char **keys = calloc((size_t)n + 1, sizeof(*keys));
        for (int i = 0; keys && i < n; i++)
                if (!(keys[i] = strdup(PQgetvalue(res, i, 0)))) {
                        memstore_keys_free(keys);
                        keys = NULL;
                }
        PQclear(res);
        if (!keys)
                return err_set(err, ENOMEM, "memory: cannot allocate the key list");
        *ret_keys = keys;
        if (ret_n)
                *ret_n = (size_t)n;
        return 0;
}

static const struct memstore_backend pg_memory = {
        .get = mem_get, .set = mem_set, .del = mem_del, .clear = mem_clear, .list = mem_list,
};

static int pg_memory_open(struct store *st, struct memstore **ret, struct err **err)
{
        return memstore_open_backend(&pg_memory, st, ret, err);
}

static const struct store_ops pg_ops = {
        .close = pg_close,
        .ready = pg_ready,
        .session_insert = pg_session_insert,
        .session_get = pg_session_get,
        .session_update = pg_session_update,
        .session_delete = pg_session_delete,
        .session_list = pg_session_list,
        .session_ids = pg_session_ids,
        .session_ids_before = pg_session_ids_before,
        .status_counts = pg_status_counts,
        .idem_get = pg_idem_get,
        .journal_append = pg_journal_append,
        .commit = pg_commit,
        .journal_bytes = pg_journal_bytes,
        .journal_each = pg_journal_each,
        .session_set_pending = pg_session_set_pending,
        .event_append = pg_event_append,
        .events_each = pg_events_each,
        .tenant_usage_get = pg_tenant_usage_get,
        .tenant_usage_put = pg_tenant_usage_put,
        .tenant_usage_add = pg_tenant_usage_add,
        .memory_open = pg_memory_open,
        .lease_renew = pg_lease_renew,
        .lease_claim = pg_lease_claim,
        .resume_claim = pg_resume_claim,
        .cancel_request = pg_cancel_request,
};

