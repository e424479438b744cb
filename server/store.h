/* server/store.h — the server's state in SQLite (WAL) under --state-dir:
 * sessions, their journals, idempotency keys.  One connection, used from
 * the server's one thread.  Every write is one transaction: a record is
 * written whole or not at all (a full disk leaves nothing half-written). */
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
        STORE_E_BUSY,        /* locked by another process past the 2 s wait: 503, retry */
        STORE_E_MOVED,       /* serve.db replaced under the server, or deleted and not written again */
};

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
void store_close(struct store *st);
const char *store_path(const struct store *st);

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

#endif
