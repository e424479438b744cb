/* broker/serve.c — `chidori serve` in the broker (serve.h): the server
 * (server/) on the listening socket the CLI bound, SQLite in the state
 * directory the monitor attached, every session's box asked of the monitor
 * over the channel (a chan_tree per session: a run tree of its own). */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "broker/nested.h"
#include "broker/provider.h"
#include "broker/serve.h"
#include "broker/tools.h"
#include "cli/cli.h"
#include "common/exit.h"
#include "common/util.h"
#include "effects/effects.h"
#include "effects/memory/memstore.h"
#include "effects/workspace/workspace.h"
#include "policy/policy.h"
#include "runtime/evloop.h"
#include "server/server.h"
#include "server/store-internal.h"

struct serve_state {
        const struct broker_serve *x;
        struct chan_boxes cb;
        struct evloop *loop;
        char *agent_folder;      /* the agent's folder: callees must be inside it */
        volatile sig_atomic_t nested_stop; /* never set: the server ends nested runs by freeing them */
        struct server *srv;
        bool stop, draining, broken;
        double drain_until;      /* mono_ms() */
        int stops;               /* STOPs seen */
};

/* One session's box provider and grants (server_run.boxes_new). */
struct serve_box {
        struct chan_tree tree;
        struct broker_children children;
        struct workspace *ws;
        struct nested_ctx nx;    /* callAgent: nested sessions whose boxes join the session's tree */
        bool nested;
};

/* What a session is handed: the workspace DIR/<session id>/ (made 0700
 * here, beneath the folder the monitor attached) unless shared, the
 * allowed hosts, the tools (boxes asked over the channel), the model. */
static int boxes_new(void *arg, const char *run_id, struct session_config *cfg, const struct box_provider **ret,
                     void **ret_handle, struct err **err)
{
        struct serve_state *st = arg;
        const struct broker_serve *x = st->x;
        struct serve_box *b = calloc(1, sizeof(*b));
        if (!b)
                return err_set(err, ENOMEM, "a box for session %s", run_id);
        chan_tree_init(&b->tree, &st->cb);
        if (cfg) {
                const char *dir = x->workspace;
                char *own = NULL;
                if (dir && !x->shared_workspace) {
                        if (asprintf(&own, "%s/%s", dir, run_id) < 0) {
                                free(b);
                                return err_set(err, ENOMEM, "workspace");
                        }
                        if (mkdir(own, 0700) < 0 && errno != EEXIST) {
                                err_set(err, errno, "create the session's workspace %s", own);
                                free(own);
                                free(b);
                                return -1;
                        }
                        dir = own;
                }
                int rc = dir ? workspace_open(dir, NULL, &b->ws, err) : 0;
                free(own);
                if (rc < 0) {
                        free(b);
                        return -1;
                }
                broker_tools_children(&b->children, &b->tree.provider, x->max_tools);
                cfg->workspace = b->ws;
                cfg->http_allow = x->allow;
                cfg->http_max_response_bytes = x->http_max_response;
                cfg->http_timeout_ms = x->http_timeout_ms;
                cfg->auto_approve = x->auto_approve;
                cfg->tools = x->tools;
                cfg->secrets = x->secrets;
                cfg->llm = x->llm;
                cfg->children = x->tools ? &b->children : NULL;
                if (st->agent_folder) {
                        /* callAgent, as chidori run through the broker has it. */
                        nested_init(&b->nx, &st->cb, st->loop, x->agent_dir, x->max_nested > 0 ? (unsigned)x->max_nested : 4);
                        b->nx.boxes = &b->tree.provider;
                        b->nx.tz = x->tz;
                        b->nx.esbuild = x->esbuild;
                        b->nx.js_deadline_ms = x->js_deadline_ms;
                        b->nx.cpu_secs = x->cpu_secs;
                        b->nx.stop = &st->nested_stop;
                        b->nested = true;
                        cfg->nested = &b->nx.hook;
                        cfg->agent_dir = st->agent_folder;
                }
        }
        *ret = &b->tree.provider;
        *ret_handle = b;
        return 0;
}

static void boxes_free(void *arg, void *handle)
{
        (void)arg;
        struct serve_box *b = handle;
        if (!b)
                return;
        if (b->nested)
                nested_free(&b->nx);
        chan_tree_free(&b->tree);
        workspace_close(b->ws);
        free(b);
}

/* STOP from the monitor (a stop signal to the server): the first drains
 * (no new sessions, /readyz 503; running ones get --grace), the second,
 * or the first with nothing to wait for, stops. */
static void on_stop(void *arg, int sig)
{
        (void)sig;
        struct serve_state *st = arg;
        st->stops++;
        long grace = st->x->grace_s;
        if (st->draining || st->stops > 1 || !st->srv || grace == 0 || server_running(st->srv) == 0) {
                st->stop = true;
                return;
        }
        st->draining = true;
        st->drain_until = mono_ms() + (double)grace * 1000.0;
        server_set_draining(st->srv, true);
        fprintf(stderr, "chidori: serve: draining: %u running session(s) get %ld s to finish (a second SIGTERM stops "
                        "at once)\n", server_running(st->srv), grace);
}

static void on_broken(void *arg, const char *why)
{
        struct serve_state *st = arg;
        st->broken = st->stop = true;
        fprintf(stderr, "chidori: serve: the monitor's channel broke: %s\n", why);
}

/* The banner as the one-process server printed it. */
static void banner(const struct broker_serve *x, const struct store *st)
{
        server_banner(x->policy, x->auth, st, x->listen_desc, x->quiet);
}

/* Until stopped, the drain over, or the channel broken: the exit code. */
static int serve_loop(struct serve_state *st, struct evloop *loop, struct err **err)
{
        while (!st->stop) {
                int timeout = -1;
                if (st->draining) {
                        double left = st->drain_until - mono_ms();
                        if (server_running(st->srv) == 0 || left <= 0)
                                break;
                        timeout = left < 200 ? (int)left + 1 : 200;
                }
                if (evloop_run_once(loop, timeout, err) < 0)
                        return EXIT_PROTOCOL;
        }
        return st->broken ? EXIT_PROTOCOL : EXIT_OK;
}

int broker_serve(int chan, const struct broker_serve *x, struct err **err)
{
        struct serve_state st = { .x = x };
        struct evloop *loop = NULL;
        struct store *store = NULL;
        int code = EXIT_PROTOCOL;
        for (size_t i = 0; i < x->n_store_env; i++)
                putenv((char *)x->store_env[i]); /* libpq reads PGPASSWORD etc. from the environment */
        store_register_pg(store_pg_open); /* this binary links libpq */
        if (store_open_spec(x->store, x->state_dir, &store, err) < 0)
                /* a damaged database names the file (70); an unreachable one,
                 * a refused login or a newer schema need the operator (78) */
                return err_code(*err) == STORE_E_USAGE         ? EXIT_USAGE
                       : err_code(*err) == STORE_E_UNAVAILABLE ? EXIT_LAYER_UNAVAILABLE
                       : err_code(*err) == STORE_E_VERSION     ? EXIT_LAYER_UNAVAILABLE
                                                               : EXIT_PROTOCOL;
        /* PostgreSQL: agent memory in the same database (NULL: SQLite's, x->mem). */
        struct memstore *db_mem = NULL;
        if (store_memory_open(store, &db_mem, err) < 0) {
                store_close(store);
                return EXIT_PROTOCOL;
        }
        st.agent_folder = nested_agent_folder(x->agent_dir, x->agent_rel);
        if (evloop_new(&loop, err) < 0 || chan_boxes_init(&st.cb, chan, loop, err) < 0) {
                free(st.agent_folder);
                evloop_free(loop);
                memstore_close(db_mem);
                store_close(store);
                return EXIT_PROTOCOL;
        }
        st.loop = loop;
        st.cb.no_jit = x->no_jit;
        st.cb.cpu_budget_ms = x->js_deadline_ms;
        st.cb.tz = x->tz;
        st.cb.pool_on = x->pool > 0;
        st.cb.on_stop = on_stop;
        st.cb.on_broken = on_broken;
        st.cb.cb_arg = &st;
        const struct agent *ag = x->agent;
        struct server_config cfg = {
                .listen_fd = x->listen_fd,
                .listen_desc = x->listen_desc,
                .health_fd = x->health_fd,
                .health_desc = x->health_desc,
                .max_body = x->max_body,
                .conn_timeout_s = x->conn_timeout_s,
                .max_conns = x->max_conns,
                .auth = x->auth,
                .agent = x->agent_path,
                .max_running = x->max_running,
                .pool = x->pool, .pool_hits = &st.cb.pool_hits, .pool_misses = &st.cb.pool_misses,
                .max_queued = x->max_queued,
                .store = store,
                .approval_ttl_s = x->approval_ttl_s,
                .session_ttl_s = x->session_ttl_s,
                .replica_id = x->replica_id,
                .lease_ms = x->lease_ms,
                .run = {
                        .version = CHIDORI_VERSION,
                        .script = ag->script,
                        .filename = ag->filename,
                        .agent_abspath = x->agent_abspath,
                        .agent_sha256 = x->agent_sha256,
                        .esm = ag->esm,
                        .policy = x->policy,
                        .js_deadline_ms = x->js_deadline_ms,
                        .deadline_ms = x->deadline_ms,
                        .limits = x->limits,
                        .quotas = x->quotas,
                        .effects = &effects_table,
                        .mem = db_mem ? db_mem : x->mem,
                        .shared_memory = x->shared_memory,
                        .boxes_new = boxes_new,
                        .boxes_free = boxes_free,
                        .boxes_arg = &st,
                },
        };
        if (server_new(loop, &cfg, &st.srv, err) < 0)
                goto out;
        banner(x, store);
        code = serve_loop(&st, loop, err);
out:
        /* Sessions still running are killed with their boxes (KILL; the
         * monitor kills whatever is left at RESULT) and stay `running` in
         * the store: the next start resumes them by replay. */
        server_free(st.srv);
        chan_boxes_free(&st.cb);
        evloop_free(loop);
        memstore_close(db_mem);
        store_close(store);
        free(st.agent_folder);
        return code;
}
