/* server/store.h — the server's state: sessions, their journals, events,
 * idempotency keys, tenants' usage.  Two backends behind this one
 * interface (store-internal.h), chosen at open by the store's URL: SQLite
 * (WAL) under --state-dir, the default, and PostgreSQL (libpq).  One
 * connection, used from the server's one thread.  Every write is one
 * transaction: a record is written whole or not at all (a full disk leaves
 * nothing half-written). */
#ifndef CHIDORI_SERVER_STORE_H
#define CHIDORI_SERVER_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"

/* err->code */
enum {
        STORE_E_CORRUPT = 1, /* not a database, or damaged: the server refuses to start */
        STORE_E_FULL,        /* the disk (or quota) is full: 503 naming the file */
        STORE_E_VERSION,     /* written by a newer chidori (schema version) */
        STORE_E_USAGE,       /* a malformed store URL: a usage error */
        STORE_E_UNAVAILABLE, /* the database cannot be reached, or refused the login */
        STORE_E_BUSY,        /* locked by another process past the 2 s wait: 503, retry */
        STORE_E_MOVED,       /* serve.db replaced under the server, or deleted and not written again */
        STORE_E_FENCED,      /* a write of a session whose lease this replica no longer holds */
        STORE_E_CONFLICT,    /* a conditional change found the session changed (another replica applied it) */
};

enum store_kind { STORE_SQLITE = 1, STORE_POSTGRES };

#define STORE_SCHEMA_VERSION 3
#define STORE_DB_NAME "serve.db"

struct store;

struct store_session {
        char *id, *tenant, *agent, *status, *policy_profile; /* policy_profile may be NULL */
        char *input;          /* JSON text as the caller wrote it */
        char *result;         /* JSON text as the agent returned it, or NULL */
        char *error;          /* JSON {name, message}, or NULL */
        char *stats;          /* JSON {wall_ms, cpu_ms, peak_bytes, effects}, or NULL */
        char *created_at, *updated_at;
        int exit;             /* -1: none yet */
        char *pending;        /* JSON {"approval": {...}} or {"input": {...}} while paused, or NULL */
        char *quotas;         /* JSON {NAME: N}: the session's own quotas (POST /sessions), or NULL */
};
void store_session_clear(struct store_session *s);

/* Open (creating) DIR/serve.db.  A file that is not a database or fails
 * SQLite's quick check: STORE_E_CORRUPT naming it. */
int store_open(const char *dir, struct store **ret, struct err **err);
/* The store `spec` names (NULL: DIR/serve.db): sqlite:PATH (the database
 * file, its folder existing) or postgres://... / postgresql://... (a libpq
 * URI; the schema is created or migrated).  STORE_E_USAGE for a malformed
 * spec, STORE_E_UNAVAILABLE for a database that cannot be reached or
 * refuses the login, STORE_E_VERSION for a newer schema. */
int store_open_spec(const char *spec, const char *dir, struct store **ret, struct err **err);
/* Which backend `spec` names; STORE_E_USAGE naming the accepted forms. */
int store_spec_parse(const char *spec, enum store_kind *ret_kind, struct err **err);
/* `url` with its password (user:PASSWORD@, password=...) replaced by ***. */
void store_redact(const char *url, char *out, size_t n);
/* A PostgreSQL URL's unix socket folder (its host, or PGHOST, naming a
 * folder; libpq's default /var/run/postgresql when it names no host):
 * *ret_dir malloc'd, or NULL for TCP.  STORE_E_USAGE if libpq cannot parse it. */
int store_pg_socket_dir(const char *url, char **ret_dir, struct err **err);
/* 1 when the URL names the user. */
int store_pg_has_user(const char *url);
/* Agent memory in the store's database when it is PostgreSQL (*ret a
 * memstore over the store's connection: close it before the store); NULL
 * for SQLite, whose memory stays in the state directory. */
struct memstore;
int store_memory_open(struct store *st, struct memstore **ret, struct err **err);
/* PostgreSQL is served by chidori-broker, the one binary linking libpq:
 * it registers store_pg_open here before opening the store.  Unregistered
 * (the one-process server, CHIDORI_RUN_BROKER=0), a postgres:// store is
 * STORE_E_USAGE saying so. */
void store_register_pg(int (*open)(const char *url, struct store **ret, struct err **err));
void store_close(struct store *st);
/* The database file, or the URL with its password redacted. */
const char *store_path(const struct store *st);
const char *store_kind(const struct store *st); /* "sqlite", "postgres" */
/* 0: the database answers; -1 (STORE_E_UNAVAILABLE) when it does not,
 * after one attempt to reconnect. */
int store_ready(struct store *st, struct err **err);
/* True once after the database, lost since (a write or a read failed for
 * it), answers again: the server then resumes what could not be recorded. */
bool store_recovered(struct store *st);

int store_session_insert(struct store *st, const struct store_session *s, const char *idem_key, struct err **err);
/* 0 found (*ret filled), 1 none. */
int store_session_get(struct store *st, const char *id, struct store_session *ret, struct err **err);
/* Status and, when not NULL / >= 0, the ending's fields; updated_at now. */
int store_session_update(struct store *st, const char *id, const char *status, const char *result,
                         const char *error, int exit, const char *stats, struct err **err);
/* The record, its journal and its idempotency key. */
int store_session_delete(struct store *st, const char *id, struct err **err);
/* Newest first: sessions of `tenant` (NULL: every tenant) with `status`
 * (NULL: any), ids below `after` (NULL: from the newest); at most limit+1
 * rows go to fn (the extra one says there is a next page). */
int store_session_list(struct store *st, const char *tenant, const char *status, const char *after, unsigned limit,
                       int (*fn)(void *arg, const struct store_session *s), void *arg, struct err **err);
/* Ids of the sessions with `status`, oldest first. */
int store_session_ids(struct store *st, const char *status, int (*fn)(void *arg, const char *id), void *arg,
                      struct err **err);

/* Ids of (at most 1000) sessions with `status` last updated before `before`
 * (RFC 3339, as updated_at), oldest first; fn may change them. */
int store_session_ids_before(struct store *st, const char *status, const char *before,
                             int (*fn)(void *arg, const char *id), void *arg, struct err **err);

/* How many sessions have each status: fn per (status, count). */
int store_status_counts(struct store *st, void (*fn)(void *arg, const char *status, uint64_t n), void *arg,
                        struct err **err);

/* The session an Idempotency-Key of `tenant` named in the last 24 hours:
 * 0 and *ret_id (malloc'd), or 1 none. */
int store_idem_get(struct store *st, const char *tenant, const char *key, char **ret_id, struct err **err);

/* The journal: lines in order.  append commits unless `batch` (a pure
 * result: it goes with the next commit). */
int store_journal_append(struct store *st, const char *id, const char *line, bool batch, struct err **err);
int store_commit(struct store *st, struct err **err);
/* Writes that make one record (a session's start: its journal header, its
 * status and the event saying so; its end: the journal's end line, the
 * tenant's use, the outcome and the "done" event) committed together: from
 * store_hold to store_release every commit waits, and store_release commits
 * them in one transaction (one fsync, not four).  Nothing they record may
 * be acted on outside the process before store_release returns 0 (no
 * effect performed, no answer sent): the caller holds only within one
 * synchronous stretch of its loop.  Holds nest; session_insert and
 * session_delete commit what is held first (their own transaction). */
void store_hold(struct store *st);
int store_release(struct store *st, struct err **err);
/* Bytes of a session's journal lines (each with its newline, as NDJSON). */
int store_journal_bytes(struct store *st, const char *id, uint64_t *ret, struct err **err);
int store_journal_each(struct store *st, const char *id, int (*fn)(void *arg, const char *line, size_t len),
                       void *arg, struct err **err);

/* The pending approval or input of a paused session (JSON text), NULL: none. */
int store_session_set_pending(struct store *st, const char *id, const char *pending, struct err **err);

/* The events of a session (SSE): a per-session sequence from 1.  append
 * commits unless `batch` (then it goes with the next commit). */
int store_event_append(struct store *st, const char *id, const char *event, const char *data, bool batch,
                       uint64_t *ret_seq, struct err **err);
/* Events with seq > after, in order; fn returning non-zero stops. */
int store_events_each(struct store *st, const char *id, uint64_t after,
                      int (*fn)(void *arg, uint64_t seq, const char *event, const char *data), void *arg,
                      struct err **err);

/* A tenant's use in the window starting at `window_start` (unix seconds):
 * JSON text {NAME: N} (malloc'd), 0; 1 none recorded. */
int store_tenant_usage_get(struct store *st, const char *tenant, int64_t window_start, char **ret, struct err **err);
int store_tenant_usage_put(struct store *st, const char *tenant, int64_t window_start, const char *usage,
                           struct err **err);
/* Add `delta` (JSON {NAME: N}, N a whole number >= 0) to a tenant's use in
 * the window starting at `window_start`, atomically: the read, the sum and
 * the write are one write transaction (SQLite: BEGIN IMMEDIATE, or the
 * batch already open, which began so), so two connections or processes
 * adding at once both count (replicas sharing a budget).  The row is
 * {NAME: {"used": N}, ...} (store_tenant_usage_get's text).  `batch`: it
 * joins the open transaction and is committed with the next commit (the
 * journal line it goes with); else committed now.  *ret (malloc'd; ret
 * may be NULL): the row after the add. */
int store_tenant_usage_add(struct store *st, const char *tenant, int64_t window_start, const char *delta, bool batch,
                           char **ret, struct err **err);


/* ---- leases: several replicas on one PostgreSQL store (docs/scale-out.md)
 *
 * A queued or running session is owned by one replica: owner, expiry
 * (the database's clock) and an epoch, bumped at every take.  SQLite has
 * none (one server per file): store_leases() is false and the calls below
 * do nothing (claim, renew: no rows). */
bool store_leases(const struct store *st);
/* This replica's id and the lease's length: sessions inserted from now on
 * are owned by it. */
int store_lease_setup(struct store *st, const char *owner, unsigned lease_ms, struct err **err);
const char *store_owner(const struct store *st);
unsigned store_lease_ms(const struct store *st);
/* From now on the writes of session id (journal lines, status, pending)
 * are fenced: done only while this replica holds its lease with `epoch`,
 * checked in the write's own transaction; else STORE_E_FENCED.  unfence:
 * the session is no longer run here. */
int store_fence(struct store *st, const char *id, uint64_t epoch, struct err **err);
void store_unfence(struct store *st, const char *id);

struct store_lease {
        const char *id, *status;
        const char *cancel;   /* a cancellation asked through another replica (its reason), or NULL */
        uint64_t epoch;
};
/* Every lease of this replica extended by the lease's length: fn per
 * session it still owns (a session missing was taken over, or deleted). */
int store_lease_renew(struct store *st, int (*fn)(void *arg, const struct store_lease *l), void *arg,
                      struct err **err);
/* Take (at most max) queued or running sessions whose lease expired or
 * that no replica owns (`mine_too`: and those owned by this replica's id,
 * a restart with a stable id): fn per session taken, with its new epoch.
 * Two replicas never take the same one. */
int store_lease_claim(struct store *st, bool mine_too, unsigned max,
                      int (*fn)(void *arg, const struct store_lease *l), void *arg, struct err **err);
/* A paused session continues: pending becomes new_pending, status
 * queued, owned by this replica (*ret_epoch), if and only if its status is
 * still `status` and its pending still `pending`: 0 done, 1 it changed (an
 * answer applied by another request or replica). */
int store_session_resume_claim(struct store *st, const char *id, const char *status, const char *pending,
                               const char *new_pending, uint64_t *ret_epoch, struct err **err);
/* Cancel a queued or running session this replica does not run: 0 its
 * owner is asked (it polls: store_lease_renew's cancel), 1 no live replica
 * owns it and it was cancelled here (error_json recorded, exit 130), 2
 * nothing to cancel (it settled). */
int store_cancel_request(struct store *st, const char *id, const char *why, const char *error_json,
                         struct err **err);

#endif
