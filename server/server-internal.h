/* server/server-internal.h — what http.c and api.c share. */
#ifndef CHIDORI_SERVER_INTERNAL_H
#define CHIDORI_SERVER_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime/quota.h"
#include "runtime/session.h"
#include "server/server.h"

#include <cjson/cJSON.h>

struct policy;
struct store_session;

struct MHD_Connection;
struct MHD_Daemon;
struct ev_io;
struct ev_timer;

#define SESSION_ID_LEN 29 /* "s" + 12 hex digits of ms + 16 random hex */

/* One request, from its first byte to its answer. */
struct http_req {
        struct server *srv;
        struct MHD_Connection *conn;
        const char *method;       /* MHD's, valid until the request completes */
        const char *url;          /* the path, without the query */
        char *body;               /* the body as received (at most max_body bytes), NUL-terminated */
        size_t body_len, body_cap;
        bool too_large;           /* the body passed --max-body: dropped, 413 at its end */
        bool answered;            /* a response was queued */
        bool suspended;           /* waiting (struct waiter); resumed to answer */
        bool resumed;             /* the wait is over: answer it */
        unsigned wait_code;       /* the status when the session has settled (201, 200) */
        bool wait_shutdown;       /* the server stops: 503 */
        char *canned;             /* resumed: answer this JSON body with canned_code */
        unsigned canned_code;
        char wait_id[SESSION_ID_LEN + 1];
        const char *tenant;
        bool health_only;         /* came in on --health-listen: /healthz and /readyz, else 404 */
};

/* The session statuses of the contract, in its order. */
enum sess_status {
        SESS_QUEUED, SESS_RUNNING, SESS_AWAITING_APPROVAL, SESS_AWAITING_INPUT, SESS_DONE, SESS_FAILED,
        SESS_CANCELLED, SESS_STATUS_MAX
};
const char *sess_status_name(enum sess_status s);

/* How runs ended (the failure table of `chidori run`'s exit codes). */
enum run_ending {
        RUN_OK, RUN_AGENT_ERROR, RUN_DEADLINE, RUN_CPU_LIMIT, RUN_MEMORY_LIMIT, RUN_SANDBOX_VIOLATION,
        RUN_PROTOCOL, RUN_WORKER_EXITED, RUN_CANCELLED, RUN_LIMIT, RUN_SPAWN, RUN_SERVER, RUN_ENDING_MAX
};
const char *run_ending_name(enum run_ending e);

#define HIST_BUCKETS 12
struct histogram {
        uint64_t count[HIST_BUCKETS + 1]; /* per bucket (not cumulative); the last: +Inf */
        double sum;
};
/* Upper bounds of the buckets, seconds. */
extern const double hist_bounds[HIST_BUCKETS];
void histogram_observe(struct histogram *h, double seconds);

struct server_stats {
        uint64_t requests;        /* answered */
        uint64_t by_class[6];     /* 1xx..5xx answers (index status/100) */
        uint64_t runs[RUN_ENDING_MAX];        /* runs (a resume is a run) by ending */
        uint64_t memory_kills;    /* runs ended by the memory ceiling */
        uint64_t pauses[2];       /* runs paused for an approval [0], for input [1] */
        struct histogram run_duration, box_start;
        /* effects by (op, decision): a small table filled as they come */
        struct effect_count { char op[32]; char decision[12]; uint64_t n; } *effects;
        size_t n_effects;
};

/* A session this server runs or queues. */
struct live {
        struct live *next;
        struct server *srv;
        char id[SESSION_ID_LEN + 1];
        char *tenant;
        char *ns;
        cJSON *input;
        struct policy *profile;
        const struct policy *profile_layers[18]; /* the grants' layers and the profile, NULL-ended */
        struct session_config cfg;
        struct session_sink sink;
        const struct box_provider *boxes;
        void *boxes_handle;
        struct session *s;
        int64_t intents[64];      /* calls whose intent is written and result not yet */
        size_t n_intents;
        double started;
        bool queued, ended, deleted, shutting, box_started, store_failed;
        /* Its lease (PostgreSQL store, several replicas): the epoch its writes
         * are fenced with (0: no leases); lost: another replica took it over,
         * or it was deleted: the worker is stopped, nothing more recorded. */
        uint64_t epoch, renewed;
        bool lease_lost, lease_stopping;
        /* Resume (RESUME mode over the store's journal): after a pause or a restart. */
        bool resume;
        struct replay *replay;
        cJSON *decisions;         /* [{target, args, allow, who}]: approvals of this session, every run */
        char *input_answer;       /* JSON text: the answer of the input the session paused at */
        cJSON *pending;           /* what it paused at: {"approval": {...}} or {"input": {...}} */
        uint64_t replayed;        /* calls answered from the journal in this run */
        int64_t calls_seen;       /* the highest call id an event was sent for, every run */
        int64_t calls_before;     /* ... in the runs before this one: not sent again */
        uint64_t jbytes, jmax;    /* journal bytes written (every run), the limit (0: none) */
        bool jfull;
        struct quota quota;       /* the session's quotas and use (every run); parent: its tenant's */
        struct tenant_budget *budget;
};

/* A tenant's budget in the current window (budget.c). */
struct tenant_budget {
        struct tenant_budget *next;
        char *tenant;
        struct quota q;           /* the parent of its sessions' quotas */
        uint64_t saved[QUOTA_KIND_MAX]; /* q.used as the store had it at the last read or add */
        int64_t window;           /* the window's start, unix seconds */
};

/* A request waiting for a session to settle (wait, cancel). */
struct waiter {
        struct waiter *next;
        struct server *srv;
        struct http_req *r;
        char id[SESSION_ID_LEN + 1];
        struct ev_timer *timer;
};

struct server {
        struct evloop *loop;
        struct server_config cfg;
        struct MHD_Daemon *mhd;
        struct ev_io *mhd_io;
        struct MHD_Daemon *health;  /* --health-listen's daemon, or NULL */
        struct ev_io *health_io;
        struct ev_timer *mhd_timer;
        double mhd_timer_at;
        bool draining;
        double started;           /* mono_ms() */
        struct server_stats stats;
        struct store *store;
        struct server_run run;
        struct live *live;        /* queued and running, newest first */
        struct live *dead;        /* ended, freed at the next turn */
        bool free_deferred;
        bool run_deferred;        /* MHD_run is queued for a resumed connection */
        unsigned running, queued;
        struct waiter *waiters;
        struct stream *streams;   /* open SSE answers */
        struct ev_timer *sweep;   /* --approval-ttl, --session-ttl */
        struct replayer *replayers; /* POST /sessions/ID/replay runs */
        struct tenant_budget *budgets; /* budget.c */
        /* Leases (store_leases: several replicas on PostgreSQL): the tick
         * renews this replica's, takes over expired ones, asks the owners'
         * cancellations, polls for the waits and streams of sessions other
         * replicas run. */
        struct ev_timer *lease_tick;
        double renewed_at, lease_retry_at;
        uint64_t renew_gen;
        bool lease_failing;       /* said once until the renewal works again */
};

/* ---- http.c ---- */
/* A header of the request (case-insensitive name), or NULL. */
const char *http_header(struct http_req *r, const char *name);
/* A query argument, or NULL. */
const char *http_query(struct http_req *r, const char *name);
/* Queue the answer: `headers` is NULL or pairs name, value ending with NULL. */
int http_reply(struct http_req *r, unsigned status, const char *ctype, const char *body, size_t len,
               const char *const *headers);

void http_suspend(struct http_req *r);
void http_resume(struct http_req *r);
/* Run MHD at the start of the next turn (a connection was resumed). */
void http_kick(struct server *srv);

/* ---- events.c: the session events and their SSE streams ---- */
struct stream;
/* Record event `event` of session id (data consumed) and send it to the
 * session's open streams.  `batch`: it may wait for the next commit. */
void events_emit(struct server *srv, const char *id, const char *event, cJSON *data, bool batch);
/* The session settled: its streams end once what they hold is sent. */
void events_settled(struct server *srv, const char *id);
/* Answer r with the SSE stream of session id: the events after `after`,
 * then live ones until it settles.  `status` 200 or 201 (with Location). */
void events_stream(struct server *srv, struct http_req *r, const char *id, uint64_t after, unsigned status);
/* Leases: the streams of sessions another replica runs get what it
 * recorded since (the events table polled); settled ones end. */
void events_poll(struct server *srv);
/* The server stops: every stream ends. */
void events_free_all(struct server *srv);

/* ---- sessions.c ---- */
void sessions_make_id(char out[SESSION_ID_LEN + 1]);
bool sessions_id_ok(const char *id);
/* Queue (and start when a slot is free) a session already in the store.
 * Takes input and profile. */
int sessions_create(struct server *srv, const char *id, const char *tenant, cJSON *input, struct policy *profile,
                    uint64_t epoch, struct err **err);
bool sessions_can_queue(const struct server *srv);
/* Continue paused session id (status awaitingapproval / awaitinginput) in a
 * fresh box: `decision` {target, args, allow, who} answers its approval, or
 * `input_answer` (JSON text) its input.  Takes decision.  With leases
 * (epoch 0: an answer) it is applied once, only if the session is still
 * paused as `seen` (the caller's read; NULL: read now) has it, else
 * STORE_E_CONFLICT; epoch > 0: a session this replica just took over. */
int sessions_resume(struct server *srv, const char *id, cJSON *decision, const char *input_answer,
                    const struct store_session *seen, uint64_t epoch, struct err **err);
/* Leases: renew, take over, cancellations asked (every tick). */
void sessions_lease_tick(struct server *srv);
/* The lease of session l is lost: its worker stopped, nothing more recorded. */
void sessions_lease_lost(struct live *l, const char *why);
struct live *sessions_find(struct server *srv, const char *id);
int sessions_cancel(struct server *srv, struct live *l, const char *why);
/* Delete session id from the store (record, journal, events, idempotency
 * key) and, unless --shared-memory, its own memory namespace AGENT#id, which
 * nothing can reach once the session is gone. */
int sessions_delete(struct server *srv, const char *id, struct err **err);
int sessions_recover(struct server *srv, unsigned *ret_requeued, unsigned *ret_failed, struct err **err);
void sessions_free_all(struct server *srv);
struct replay;
/* The journal of session id read back (runtime/journal.h): 0, or 1 when
 * it has none; a journal of another chidori or format is an error. */
int sessions_open_journal(struct server *srv, const char *id, struct replay **ret, struct err **err);

/* ---- replay.c: POST /sessions/ID/replay ---- */
struct replayer;
/* Re-run session rec from its journal in a fresh box, performing nothing;
 * r is answered {matched, result} when it ends. */
void replay_route(struct server *srv, struct http_req *r, const struct store_session *rec);
void replayers_free_all(struct server *srv);

/* Deny the approvals pending past --approval-ttl; delete the finished
 * sessions past --session-ttl. */
void sessions_sweep(struct server *srv);

/* ---- budget.c: the tenants' budgets ---- */
/* The budget of `tenant` in the current window (read from the store the
 * first time, or when the window changed), NULL out of memory. */
struct tenant_budget *budget_of(struct server *srv, const char *tenant);
/* What the tenant used since the last add, added to its row in the store
 * (store_tenant_usage_add: atomic, so replicas sharing the store both
 * count), and the use read back (theirs included).  `batch`: with the
 * journal line written next, in its transaction (sessions.c, j_line). */
void budget_flush(struct server *srv, struct tenant_budget *tb, bool batch);
void budget_save(struct server *srv, struct tenant_budget *tb);
/* Written to the store, then freed (the server stops). */
void budgets_free_all(struct server *srv);
/* Sessions of `tenant` queued or running now. */
unsigned budget_live_sessions(const struct server *srv, const char *tenant);
/* May a queued session of `tenant` start now: fewer of its sessions run
 * than its concurrent_sessions?  (Every start asks, whatever queued it:
 * a restart's recovery, an expired approval's denial.) */
bool budget_may_start(const struct server *srv, const char *tenant);

/* ---- api.c ---- */
/* Wake the requests waiting for session id (it settled). */
void waiters_wake(struct server *srv, const char *id);
/* Wait (suspended) for session id to settle, at most ms; then answer. */
int waiters_add(struct server *srv, struct http_req *r, const char *id, long ms, unsigned settled_code);
void waiters_free_all(struct server *srv);
/* Leases: the waits on sessions another replica runs, settled meanwhile, answered. */
void waiters_poll(struct server *srv);

/* The session's JSON (docs/serve.md, "The session"). */
cJSON *api_session_json(struct server *srv, const struct store_session *s);

/* The request is complete (or too large): answer it. */
void api_handle(struct server *srv, struct http_req *r);
/* {"error": {"code", "message"}} with the code's status. */
void api_error(struct http_req *r, enum api_code code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
