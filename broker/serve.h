/* broker/serve.h — `chidori serve` in the broker (issue 11 through issue
 * 10's split): broker/config.c reads the config (serve=1), the policy, the
 * operator's files, COMMITs and loads the agent as for a run, then hands
 * the server what it built.  The server (server/) runs on the listening
 * socket the CLI bound (listen_fd), SQLite in the state directory the
 * monitor attached at its path, and every session's box comes from the
 * monitor over the channel, each session a run tree of its own
 * (chan_tree, monitor_serve.many_trees).  A STOP drains, a second stops;
 * a broken channel ends it (70). */
#ifndef CHIDORI_BROKER_SERVE_H
#define CHIDORI_BROKER_SERVE_H

#include <stdbool.h>
#include <stddef.h>

#include "cli/bundle.h"
#include "common/err.h"
#include "runtime/session.h"

struct auth;
struct policy;
struct memstore;
struct ssrf_allow;
struct tools_registry;
struct llm_config;

struct broker_serve {
        int listen_fd;                     /* bound and listening (the CLI's); the server's */
        int health_fd;                     /* --health-listen's (the CLI's), -1: none */
        const char *health_desc;           /* its http://HOST:PORT, NULL: none */
        const char *listen_desc;           /* the Listening: text */
        const struct auth *auth;
        const struct agent *agent;
        const char *agent_path;            /* as the operator named it (session JSON) */
        const char *agent_dir, *agent_rel; /* the COMMIT's folder and the agent beneath it (callAgent) */
        const char *esbuild;               /* the monitor's, for a callee that needs bundling; or NULL */
        long cpu_secs, max_nested;
        const char *agent_abspath, *agent_sha256;
        const struct policy *policy;
        struct memstore *mem;
        const char *state_dir;             /* serve.db in it, unless store */
        const char *store;                 /* --store: sqlite:PATH, postgres://... (NULL: state_dir/serve.db) */
        const char *const *store_env;      /* "PGNAME=VALUE": set before connecting */
        size_t n_store_env;
        const char *workspace;             /* NULL: none; sessions get DIR/<id>/ unless shared */
        bool shared_workspace, shared_memory, quiet, no_jit, auto_approve;
        const char *tz;
        long js_deadline_ms, deadline_ms, grace_s, max_tools, http_timeout_ms;
        size_t max_body, http_max_response;
        unsigned conn_timeout_s, max_conns, max_running, max_queued, approval_ttl_s, session_ttl_s;
        unsigned pool;                     /* --pool (the monitor's): hits and misses counted for /metrics */
        const char *replica_id;            /* --replica-id, or NULL: made up */
        unsigned lease_ms;                 /* --lease */
        struct session_limits limits;
        const struct ssrf_allow *allow;
        const struct tools_registry *tools;
        const struct secrets *secrets;   /* --secrets: every session's table */
        const struct llm_config *llm;
        const struct quotas *quotas;     /* --quotas, or NULL */
};

/* Serve until stopped (STOP, twice or after the drain) or the channel
 * breaks: the exit code (0 after a stop; 70 when the server could not
 * start, with err, or the channel broke). */
int broker_serve(int chan, const struct broker_serve *x, struct err **err);

#endif
