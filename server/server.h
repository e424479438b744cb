/* server/server.h — `chidori serve`: the HTTP surface (issue 11).
 *
 * One process, one event loop (runtime/evloop.h), single-threaded:
 * libmicrohttpd runs in "external epoll" mode, its epoll fd a watcher of
 * the loop and its timeout a timer (server/http.c); routes and JSON in
 * server/api.c; bearer tokens and tenants in server/auth.c.  Callers see
 * the contract of docs/serve.md; every error is
 * {"error": {"code", "message"}} with a code from the fixed table below.
 */
#ifndef CHIDORI_SERVER_SERVER_H
#define CHIDORI_SERVER_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "runtime/session.h"

struct evloop;

#define SERVE_DEFAULT_LEASE_S 10
#define SERVE_REPLICA_ID_MAX 64
struct server;
struct auth;

/* ---- auth.c: bearer tokens and tenants ---- */

/* The tenant of a caller when no token is configured, or of the single
 * token of CHIDORI_SERVE_TOKEN / a one-token file. */
#define AUTH_DEFAULT_TENANT "default"
/* The tenant that sees every tenant's sessions. */
#define AUTH_ADMIN_TENANT "admin"
#define AUTH_MAX_TOKENS 1024
#define AUTH_MAX_TOKEN_LEN 512

/* No token: every caller is AUTH_DEFAULT_TENANT. */
int auth_new_open(struct auth **ret, struct err **err);
/* One token (CHIDORI_SERVE_TOKEN), tenant AUTH_DEFAULT_TENANT. */
int auth_new_token(const char *token, struct auth **ret, struct err **err);
/* A token file: one line holding only a token (tenant AUTH_DEFAULT_TENANT),
 * or lines `TENANT TOKEN` (blank lines and lines starting with '#'
 * skipped).  A malformed file is an error naming the line. */
int auth_load_file(const char *path, struct auth **ret, struct err **err);
/* The same from a descriptor opened by the caller (the broker: the
 * monitor's side opened the operator's file); `path` for messages. */
int auth_load_fd(int fd, const char *path, struct auth **ret, struct err **err);
void auth_free(struct auth *a);
/* Tokens are configured: routes but /healthz and /readyz need one. */
bool auth_required(const struct auth *a);
/* The server's banner on stderr: Policy, Tokens and Store (not when quiet), then
 * "Listening: DESC", the line a supervisor (and the tests) wait for. */
struct policy;
struct store;
void server_banner(const struct policy *p, const struct auth *a, const struct store *st, const char *listen_desc,
                   bool quiet);
size_t auth_tenant_count(const struct auth *a);
/* The Authorization header's value ("Bearer TOKEN", NULL = none): the
 * tenant it names, or NULL.  Every configured token is compared, in
 * constant time for a given token length, whatever matched. */
const char *auth_check(const struct auth *a, const char *authorization);
/* Does `tenant` see a session of `owner`? (its own, or tenant admin) */
bool auth_sees(const char *tenant, const char *owner);
/* Constant-time comparison of a and b (lengths not secret). */
bool auth_equal(const char *a, size_t alen, const char *b, size_t blen);

/* ---- api.c: the error codes (docs/serve.md, "Errors") ---- */

enum api_code {
        API_INVALID_JSON,       /* 400: the body is not JSON (line, column) */
        API_UNKNOWN_FIELD,      /* 400: a body field the route does not know (named) */
        API_INVALID_FIELD,      /* 400: a field of the wrong type or value (named) */
        API_UNKNOWN_PROFILE,    /* 400: policy_profile names no profile */
        API_UNAUTHORIZED,       /* 401: no token, or not a configured one */
        API_NOT_FOUND,          /* 404: no such route or session (or another tenant's) */
        API_METHOD_NOT_ALLOWED, /* 405: the route exists for other methods (Allow) */
        API_CONFLICT,           /* 409: approve/input with nothing pending, an old approval id */
        API_TOO_LARGE,          /* 413: the body is over --max-body */
        API_UNSUPPORTED_MEDIA,  /* 415: a body that is not application/json */
        API_QUEUE_FULL,         /* 429: --max-queued sessions wait already (Retry-After) */
        API_INTERNAL,           /* 500: a failure of the server itself (message says which) */
        API_NOT_IMPLEMENTED,    /* 501: a route of the contract this build does not serve yet */
        API_DRAINING,           /* 503: SIGTERM: no new sessions */
        API_UNAVAILABLE,        /* 503: the state store cannot write (full disk: named) */
        API_CODE_MAX
};

const char *api_code_name(enum api_code c);
unsigned api_code_status(enum api_code c);

/* ---- the server ---- */

struct store;
struct memstore;
struct effect_table;
struct box_provider;
struct policy;
struct quotas;

/* What every session runs: the operator's agent and options (cli/serve.c). */
struct server_run {
        const char *version;
        const char *script, *filename, *agent_abspath, *agent_sha256;
        bool esm;
        const struct policy *policy;
        long js_deadline_ms, deadline_ms;
        struct session_limits limits;
        const struct quotas *quotas;  /* --quotas (server/quotas.h), or NULL: none (use is still reported) */
        const struct effect_table *effects;
        struct memstore *mem;
        bool shared_memory;
        /* A box provider for one session (the CLI's: the same box as `run`),
         * and the session's grants (workspace DIR/<id>, allowed hosts, tools)
         * opened into cfg; cfg NULL: none (a replay performs nothing). */
        int (*boxes_new)(void *arg, const char *run_id, struct session_config *cfg, const struct box_provider **ret,
                         void **ret_handle, struct err **err);
        void (*boxes_free)(void *arg, void *handle);
        void *boxes_arg;
};


struct server_config {
        int listen_fd;            /* bound, listening, non-blocking; the server's from now */
        const char *listen_desc;  /* "http://127.0.0.1:8080" or "unix:/path" (messages) */
        int health_fd;            /* --health-listen: bound, listening, non-blocking, the server's; serves
                                   * only GET /healthz and /readyz, no token.  -1 (or 0 when unset in an
                                   * initializer that names neither): none */
        const char *health_desc;  /* its "http://HOST:PORT", or NULL: none */
        size_t max_body;          /* bytes of a request body (413 past it) */
        unsigned conn_timeout_s;  /* an idle connection is closed after this (slowloris) */
        unsigned max_conns;       /* connections at once; more are refused at accept */
        const struct auth *auth;
        const char *agent;        /* the agent's path as given (session JSON) */
        unsigned max_running;
        unsigned max_queued;
        /* chidori serve --pool: its size and the provider's counts of
         * run trees started with a pooled box and without (NULL: none). */
        unsigned pool;
        const uint64_t *pool_hits, *pool_misses;
        struct store *store;      /* opened by the caller, used (not owned) */
        unsigned approval_ttl_s;  /* a pending approval older than this is denied (0: never) */
        unsigned session_ttl_s;   /* a finished session older than this is deleted (0: never) */
        /* Replicas on one PostgreSQL store (docs/scale-out.md): this
         * server's id (NULL: HOST-PID-RANDOM) and a lease's length (0: the
         * default, SERVE_DEFAULT_LEASE_S). */
        const char *replica_id;
        unsigned lease_ms;
        struct server_run run;
};

int server_new(struct evloop *loop, const struct server_config *cfg, struct server **ret, struct err **err);
/* Stop accepting and close every connection (nothing is answered after). */
void server_free(struct server *srv);
/* SIGTERM: /readyz fails and new sessions get 503 draining. */
void server_set_draining(struct server *srv, bool draining);
bool server_draining(const struct server *srv);
/* Sessions running now (their boxes). */
unsigned server_running(const struct server *srv);

#endif
