/* broker/config.c — the run the monitor hands the broker (config.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "broker/bundle.h"
#include "broker/config.h"
#include "broker/nested.h"
#include "broker/provider.h"
#include "broker/serve.h"
#include "server/server.h"
#include "broker/tools.h"
#include "chan/chan.h"
#include "cli/bundle.h"
#include "cli/cli.h"
#include "common/exit.h"
#include "common/text.h"
#include "common/util.h"
#include "effects/effects.h"
#include "common/cleanup.h"
#include "effects/memory/memstore.h"
#include "effects/net/llm.h"
#include "effects/net/net.h"
#include "effects/net/secrets.h"
#include "effects/net/ssrf.h"
#include "effects/proc/tools.h"
#include "effects/workspace/workspace.h"
#include "proto/json.h"
#include "runtime/journal.h"
#include "policy/policy.h"
#include "runtime/evloop.h"
#include "common/budget.h"
#include "runtime/header.h"
#include "sandbox/tz.h"
#include "runtime/outcome.h"
#include "runtime/session.h"
#include "server/quotas.h"
#include "sandbox/seccomp.h"


static int num(const char *k, const char *v, long *ret, struct err **err)
{
        char *end = NULL;
        errno = 0;
        long n = strtol(v, &end, 10);
        if (errno || end == v || *end || n < 0)
                return err_set(err, 0, "config: %s=%s is not a number", k, v);
        *ret = n;
        return 0;
}

static int flag(const char *k, const char *v, bool *ret, struct err **err)
{
        if (strcmp(v, "0") && strcmp(v, "1"))
                return err_set(err, 0, "config: %s=%s (expected 0 or 1)", k, v);
        *ret = v[0] == '1';
        return 0;
}

enum key_kind { K_STR, K_NUM, K_FLAG, K_FD };

#define KEY(name, kind, field) { name, kind, offsetof(struct broker_config, field) }
static const struct key {
        const char *name;
        enum key_kind kind;
        size_t off;
} keys[] = {
        KEY("agent", K_STR, agent), KEY("agent_dir", K_STR, agent_dir), KEY("agent_path", K_STR, agent_path),
        KEY("agent_stdin", K_FLAG, agent_stdin), KEY("run_id", K_STR, run_id),
        KEY("deadline_ms", K_NUM, deadline_ms), KEY("js_deadline_ms", K_NUM, js_deadline_ms),
        KEY("cpu_secs", K_NUM, cpu_secs), KEY("json", K_FLAG, json), KEY("quiet", K_FLAG, quiet),
        KEY("untrusted", K_FLAG, untrusted), KEY("trusted", K_FLAG, trusted),
        KEY("policy_profile", K_STR, policy_profile), KEY("policy_inline", K_STR, policy_inline),
        KEY("state_dir", K_STR, state_dir), KEY("mem_ns", K_STR, mem_ns), KEY("input", K_STR, input),
        KEY("journal_fd", K_FD, journal_fd), KEY("replay_fd", K_FD, replay_fd),
        KEY("replay_agent_given", K_FLAG, replay_agent_given), KEY("replay_file", K_STR, replay_file), KEY("journal_file", K_STR, journal_file), KEY("agent_from_journal", K_FLAG, agent_from_journal),
        KEY("virtual_time", K_FLAG, virtual_time), KEY("max_timers", K_NUM, max_timers),
        KEY("input_file", K_STR, input_file), KEY("input_fd", K_FD, input_fd),
        KEY("answers_file", K_STR, answers_file), KEY("answers_fd", K_FD, answers_fd),
        KEY("policy_file", K_STR, policy_file), KEY("policy_fd", K_FD, policy_fd),
        KEY("policy_errno", K_NUM, policy_errno), KEY("tools_file", K_STR, tools_file),
        KEY("tools_fd", K_FD, tools_fd), KEY("net_lib_fd", K_FD, net_lib_fd),
        KEY("quotas_file", K_STR, quotas_file), KEY("quotas_fd", K_FD, quotas_fd),
        KEY("quotas_errno", K_NUM, quotas_errno),
        KEY("input_arg_fd", K_FD, input_arg_fd), KEY("tools_errno", K_NUM, tools_errno), KEY("tty_fd", K_FD, tty_fd),
        KEY("workspace", K_STR, workspace), KEY("tz", K_STR, tz),
        KEY("max_calls", K_NUM, max_calls), KEY("max_queue", K_NUM, max_queue), KEY("max_log", K_NUM, max_log),
        KEY("max_journal", K_NUM, max_journal), KEY("max_vfs", K_NUM, max_vfs),
        KEY("max_memory_store", K_NUM, max_memory_store), KEY("max_workspace_write", K_NUM, max_workspace_write),
        KEY("http_max_response", K_NUM, http_max_response), KEY("http_timeout_ms", K_NUM, http_timeout_ms),
        KEY("auto_approve", K_FLAG, auto_approve), KEY("pids_source", K_STR, pids_source),
        KEY("pids_max", K_NUM, pids_max), KEY("max_tools", K_NUM, max_tools), KEY("esbuild", K_STR, esbuild),
        KEY("max_nested", K_NUM, max_nested),
        KEY("serve", K_FLAG, serve), KEY("listen_fd", K_FD, listen_fd), KEY("listen_desc", K_STR, listen_desc),
        KEY("health_fd", K_FD, health_fd), KEY("health_desc", K_STR, health_desc),
        KEY("token_file", K_STR, token_file), KEY("token_fd", K_FD, token_fd),
        KEY("serve_token", K_STR, serve_token), KEY("max_body", K_NUM, max_body),
        KEY("conn_timeout", K_NUM, conn_timeout), KEY("max_conns", K_NUM, max_conns),
        KEY("max_running", K_NUM, max_running), KEY("max_queued", K_NUM, max_queued), KEY("grace", K_NUM, grace),
        KEY("pool", K_NUM, pool),
        KEY("approval_ttl", K_NUM, approval_ttl), KEY("session_ttl", K_NUM, session_ttl),
        KEY("lease", K_NUM, lease), KEY("replica_id", K_STR, replica_id),
        KEY("shared_memory", K_FLAG, shared_memory), KEY("shared_workspace", K_FLAG, shared_workspace),
        KEY("store", K_STR, store),
};

/* One "key=value": into its field, or a repeatable key's list. */
static int config_one(const char *kv, struct broker_config *c, struct err **err)
{
        const char *eq = strchr(kv, '=');
        if (!eq)
                return err_set(err, 0, "config: '%s' is not key=value", kv);
        size_t kl = (size_t)(eq - kv);
        const char *v = eq + 1;
        char k[32];
        if (kl >= sizeof(k))
                return err_set(err, 0, "config: unknown key in '%s'", kv);
        memcpy(k, kv, kl);
        k[kl] = '\0';
        if (!strcmp(k, "env")) {
                const char *e2 = strchr(v, '=');
                if (!e2 || e2 == v || c->n_env == BROKER_CONFIG_ENV_MAX)
                        return err_set(err, 0, "config: env=%s (expected NAME=VALUE, at most %d)", v,
                                       BROKER_CONFIG_ENV_MAX);
                c->env[c->n_env++] = v;
                return 0;
        }
        if (!strcmp(k, "jit")) {
                if (strcmp(v, "auto") && strcmp(v, "0") && strcmp(v, "1"))
                        return err_set(err, 0, "config: jit=%s (expected auto, 0 or 1)", v);
                c->jit = v[0] == 'a' ? -1 : v[0] - '0';
                return 0;
        }
        if (!strcmp(k, "llm")) {
                if (strncmp(v, "CHIDORI_LLM_", 12) || !strchr(v, '=') || c->n_llm == BROKER_CONFIG_ALLOW_MAX)
                        return err_set(err, 0, "config: llm=%.40s (expected CHIDORI_LLM_NAME=VALUE)", v);
                c->llm[c->n_llm++] = v;
                return 0;
        }
        if (!strcmp(k, "secret") || !strcmp(k, "secret_host")) {
                /* The value is never quoted in a message. */
                if (!strchr(v, ' ') || c->n_secret == BROKER_CONFIG_SECRETS_MAX)
                        return err_set(err, 0, "config: a %s entry that is not NAME TEXT, or more than %d", k,
                                       BROKER_CONFIG_SECRETS_MAX);
                c->secret[c->n_secret++] = kv;
                return 0;
        }
        if (!strcmp(k, "store_env")) {
                /* Never quoted in a message: PGPASSWORD is one. */
                if (strncmp(v, "PG", 2) || !strchr(v, '=') || c->n_store_env == BROKER_CONFIG_STORE_ENV_MAX)
                        return err_set(err, 0, "config: a store_env that is not PGNAME=VALUE, or more than %d",
                                       BROKER_CONFIG_STORE_ENV_MAX);
                c->store_env[c->n_store_env++] = v;
                return 0;
        }
        if (!strcmp(k, "allow_host")) {
                if (c->n_allow == BROKER_CONFIG_ALLOW_MAX)
                        return err_set(err, 0, "config: more than %d allow_host", BROKER_CONFIG_ALLOW_MAX);
                c->allow_host[c->n_allow++] = v;
                return 0;
        }
        for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
                if (strcmp(k, keys[i].name))
                        continue;
                void *f = (char *)c + keys[i].off;
                switch (keys[i].kind) {
                case K_STR: *(const char **)f = v; return 0;
                case K_FLAG: return flag(k, v, f, err);
                case K_NUM: return num(k, v, f, err);
                case K_FD:
                        if (num(k, v, f, err) < 0)
                                return -1;
                        if (*(long *)f < 5 || *(long *)f > 1023)
                                return err_set(err, 0, "config: %s=%s (descriptors are passed at 5 and up)", k, v);
                        return 0;
                }
        }
        return err_set(err, 0, "config: unknown key '%s'", k);
}

/* The checks between keys. */
static int config_check(const struct broker_config *c, struct err **err)
{
        if (c->agent_stdin && (!c->agent || strchr(c->agent, '/') || c->agent_from_journal))
                return err_set(err, 0, "config: agent_stdin names a plain file in its own folder");
        if (c->agent_from_journal) {
                if (c->agent || c->agent_dir || c->replay_fd < 0)
                        return err_set(err, 0, "config: agent_from_journal goes with replay_fd and without agent, "
                                               "agent_dir");
        } else if (!c->agent || !c->agent[0] || c->agent[0] == '/') {
                return err_set(err, 0, "config: no agent (a path relative to the agent folder)");
        } else if (!c->agent_dir || c->agent_dir[0] != '/') {
                return err_set(err, 0, "config: no agent_dir (an absolute path)");
        }
        if (c->journal_fd >= 0 && c->replay_fd >= 0)
                return err_set(err, 0, "config: journal_fd and replay_fd together (a replay writes no journal)");
        if (c->state_dir && c->state_dir[0] != '/')
                return err_set(err, 0, "config: state_dir=%s is not an absolute path", c->state_dir);
        if (c->workspace && c->workspace[0] != '/')
                return err_set(err, 0, "config: workspace=%s is not an absolute path", c->workspace);
        if ((c->answers_fd >= 0) != (c->answers_file != NULL) || (c->input_fd >= 0) != (c->input_file != NULL))
                return err_set(err, 0, "config: answers_fd and answers_file go together, input_fd and input_file too");
        if ((c->input_fd >= 0) + (c->input != NULL) + (c->input_arg_fd >= 0) > 1)
                return err_set(err, 0, "config: one of input, input_fd and input_arg_fd");
        if ((c->policy_fd >= 0 || c->policy_errno) && !c->policy_file)
                return err_set(err, 0, "config: policy_fd or policy_errno without policy_file");
        if ((c->tools_fd >= 0 || c->tools_errno) && !c->tools_file)
                return err_set(err, 0, "config: tools_fd or tools_errno without tools_file");
        if ((c->quotas_fd >= 0 || c->quotas_errno) && !c->quotas_file)
                return err_set(err, 0, "config: quotas_fd or quotas_errno without quotas_file");
        if (c->quotas_file && (c->quotas_fd >= 0) == (c->quotas_errno != 0))
                return err_set(err, 0, "config: quotas_file goes with its descriptor or errno, one of them");
        if ((c->policy_file && (c->policy_fd >= 0) == (c->policy_errno != 0)) ||
            (c->tools_file && (c->tools_fd >= 0) == (c->tools_errno != 0)))
                return err_set(err, 0, "config: a file needs its descriptor or the errno of its open, one of them");
        if (c->serve && (c->listen_fd < 0 || !c->listen_desc || !c->state_dir || c->journal_fd >= 0 ||
                         c->replay_fd >= 0 || c->agent_from_journal || c->agent_stdin || c->max_running < 1 ||
                         c->max_conns < 1 || c->conn_timeout < 1 || c->max_body < 1))
                return err_set(err, 0, "config: serve goes with listen_fd, listen_desc, state_dir, an agent file and "
                                       "its limits, without a journal or a replay");
        if ((c->health_fd >= 0) != (c->health_desc != NULL) || (c->health_fd >= 0 && !c->serve))
                return err_set(err, 0, "config: health_fd goes with health_desc and serve=1");
        if (!c->serve && (c->listen_fd >= 0 || c->token_fd >= 0 || c->serve_token))
                return err_set(err, 0, "config: listen_fd, token_fd and serve_token go with serve=1");
        if ((c->token_fd >= 0) != (c->token_file != NULL) || (c->token_file && c->serve_token))
                return err_set(err, 0, "config: token_fd goes with token_file, and not with serve_token");
        const long fds[] = { c->journal_fd, c->replay_fd, c->answers_fd, c->policy_fd, c->tools_fd, c->tty_fd,
                             c->input_fd, c->net_lib_fd, c->input_arg_fd, c->listen_fd, c->token_fd, c->quotas_fd,
                             c->health_fd };
        for (size_t i = 0; i < sizeof(fds) / sizeof(fds[0]); i++)
                for (size_t j = i + 1; j < sizeof(fds) / sizeof(fds[0]); j++)
                        if (fds[i] >= 0 && fds[i] == fds[j])
                                return err_set(err, 0, "config: descriptor %ld named twice", fds[i]);
        return 0;
}

int broker_config_parse(const char *const *strs, size_t n, struct broker_config *c, struct err **err)
{
        *c = (struct broker_config){ .run_id = "run-0", .js_deadline_ms = -1, .jit = -1, .journal_fd = -1,
                                     .replay_fd = -1, .answers_fd = -1, .input_fd = -1, .policy_fd = -1,
                                     .tools_fd = -1, .tty_fd = -1, .net_lib_fd = -1,
                                     .input_arg_fd = -1, .listen_fd = -1, .token_fd = -1, .quotas_fd = -1,
                                     .health_fd = -1 };
        for (size_t i = 0; i < n; i++)
                if (config_one(strs[i], c, err) < 0)
                        return -1;
        return config_check(c, err);
}

/* The blob at fd: its string count from its header (chan_blob_map checks
 * the rest: seals, size, strings). */
static int map_config(int fd, struct chan_blob *b, struct err **err)
{
        struct chan_blob_hdr h;
        if (pread(fd, &h, sizeof(h), 0) != (ssize_t)sizeof(h))
                return err_set(err, errno, "config: read its header");
        if (h.nstrings > CHAN_BLOB_STRINGS)
                return err_set(err, 0, "config: %u strings", h.nstrings);
        return chan_blob_map(fd, h.nstrings, b, err);
}

struct run {
        struct session *s;
        struct journal *journal;
        struct replay *replay;
        char sha256[65];
        struct memstore *mem;
        cJSON *input;
        char *ns;
        volatile sig_atomic_t stop;
        const struct broker_config *c;
        struct policy *policy;
        struct chan_boxes *cb;
        cJSON *answers, *env;
        struct tools_registry *tools;
        struct secrets *secrets;
        struct workspace *ws;
        struct ssrf_allow *allow;
        struct llm_config *llm;
        bool no_jit, virtual_time;
        char *agent_abs;           /* agent_from_journal: the header's agent */
        char *agent_dir_buf;       /* agent_from_journal: its folder, its name */
        const char *display_name;  /* replay --agent -: the name the run gave it */
        const char *tz;            /* the box's zone (a replay's: the header's) */
        struct quota quota;        /* run --quotas: the file's "session" part, and the use */
        bool has_quota;
};

static void on_stop(void *arg, int sig)
{
        struct run *r = arg;
        if (r->stop)
                return;
        r->stop = sig;
        char why[64];
        snprintf(why, sizeof(why), "interrupted by signal %d", sig);
        session_cancel(r->s, why);
}

static void on_broken(void *arg, const char *why)
{
        (void)arg;
        fprintf(stderr, "chidori: the monitor's channel broke: %s\n", why);
}

static void on_running(void *arg)
{
        struct run *r = arg;
        if (r->c->quiet)
                return;
        char desc[512];
        policy_describe(r->policy, desc, sizeof(desc));
        fprintf(stderr, "Isolation: %s\n", r->cb->banner);
        fprintf(stderr, "Policy: %s\n", desc);
}

void broker_journal_header(struct journal *j, const char *run_id, const char *agent, const char *filename,
                           const char *ns, const char *tz, bool virtual_time, const cJSON *input, const cJSON *env,
                           const char *script, char sha256[65])
{
        sha256_hex(script, strlen(script), sha256);
        const struct journal_header_info info = {
                .version = CHIDORI_VERSION, .run_id = run_id, .agent = agent, .agent_sha256 = sha256,
                .filename = filename, .memory_ns = ns, .tz = tz, .virtual_time = virtual_time, .input = input,
                .env = env,
        };
        cJSON *h = journal_header_line(&info);
        journal_file_ops.header(j, h, NULL);
        cJSON_Delete(h);
}

/* The journal's first and last lines, as `chidori run` writes them. */
static void journal_header(struct run *r, const char *script)
{
        const struct broker_config *c = r->c;
        char agent[4200];
        if (c->agent_stdin)
                snprintf(agent, sizeof(agent), "-"); /* "-": read from stdin */
        else
                snprintf(agent, sizeof(agent), "%s%s%s", c->agent_dir, strcmp(c->agent_dir, "/") ? "/" : "", c->agent);
        const char *slash = strrchr(c->agent, '/');
        broker_journal_header(r->journal, c->run_id, agent, slash ? slash + 1 : c->agent, r->ns, c->tz,
                              c->virtual_time, r->input, r->env, script, r->sha256);
}

static void journal_end(struct run *r, const struct session_outcome *o, int code)
{
        cJSON *e = session_outcome_end_line(o, NULL, code);
        journal_file_ops.end(r->journal, e, NULL);
        cJSON_Delete(e);
}

/* The session has ended: its outcome printed as chidori run prints it, the
 * journal's end line written.  The exit code. */
static int conclude(const struct broker_config *c, struct run *r, const struct agent *ag, bool printed_value)
{
        struct outcome_context oc = {
                .js_deadline_ms = c->js_deadline_ms,
                .cpu_secs = c->cpu_secs,
                .stop_signal = (int)r->stop,
                .syscall_name = seccomp_syscall_name,
        };
        struct session_outcome *o = session_outcome(r->s);
        int code;
        if (o->end == SESSION_END_SPAWN) {
                fprintf(stderr, "chidori: %s%s\n", o->spawn_layer ? "" : "start the engine worker: ",
                        o->message ? o->message : "");
                return o->spawn_layer ? EXIT_LAYER_UNAVAILABLE : EXIT_PROTOCOL;
        }
        if (o->end == SESSION_END_EOF && !o->got_ready && o->pids_limit_hit && c->pids_source) {
                /* The engine could not start its threads under the box's
                 * pids limit (chidori run's conclude). */
                code = report_pids_too_low(o, c->json, c->run_id, c->pids_source, c->pids_max);
        } else {
                /* Bundled code: the error's place in the agent's own files. */
                struct err *me = NULL;
                if (o->error && ag->map && sourcemap_map_error(ag->map, ag->filename, o->error, &me) < 0) {
                        char w[1200];
                        snprintf(w, sizeof(w), "%s; error positions point into the bundle", err_msg(me));
                        text_fput_line(stderr, "chidori: warning: ", w, strlen(w));
                        err_free(me);
                }
                if (o->quota) {
                        quota_run_end(&r->quota, o->wall_ms);
                        report_usage(o);
                }
                code = printed_value ? EXIT_OK : report_outcome(o, c->json, &oc, c->run_id);
        }
        if (r->journal)
                journal_end(r, o, code);
        return code;
}

static int run_session(int chan, const struct broker_config *c, struct run *r, struct agent *ag, int *ret_code,
                       struct err **err)
{
        struct evloop *loop = NULL;
        struct chan_boxes cb;
        if (evloop_new(&loop, err) < 0)
                return -1;
        if (chan_boxes_init(&cb, chan, loop, err) < 0) {
                evloop_free(loop);
                return -1;
        }
        r->cb = &cb;
        /* callAgent: nested sessions on this loop, their boxes asked the same way. */
        struct nested_ctx nx;
        nested_init(&nx, &cb, loop, c->agent_dir, c->max_nested > 0 ? (unsigned)c->max_nested : 4);
        nx.tz = c->tz;
        nx.esbuild = c->esbuild;
        nx.virtual_time = r->virtual_time;
        nx.js_deadline_ms = c->js_deadline_ms;
        nx.cpu_secs = c->cpu_secs;
        nx.stop = &r->stop;
        _cleanup_free_ char *folder = nested_agent_folder(c->agent_dir, c->agent);
        cb.no_jit = r->no_jit;
        cb.cpu_budget_ms = c->js_deadline_ms;
        cb.tz = r->tz;
        cb.on_stop = on_stop;
        cb.on_broken = on_broken;
        cb.cb_arg = r;
        struct broker_children children;
        broker_tools_children(&children, &cb.provider, c->max_tools);
        struct session_config cfg = {
                .script = ag->script,
                .filename = ag->filename,
                .esm = ag->esm,
                .run_id = c->run_id,
                .js_deadline_ms = c->js_deadline_ms,
                .deadline_ms = c->deadline_ms,
                .stop = &r->stop,
                .policy = r->policy,
                .effects = &effects_table,
                .input = r->input,
                .mem = r->mem,
                .mem_ns = r->ns,
                .journal = { r->journal ? &journal_file_ops : NULL, r->journal },
                .mode = r->replay ? SESSION_REPLAY : SESSION_LIVE,
                .replay = { r->replay ? &replay_file_ops : NULL, r->replay },
                .quiet_logs = r->replay != NULL,
                .answers = r->answers,
                .env = r->env,
                .can_input = c->tty_fd >= 0,
                .can_approve = c->tty_fd >= 0,
                .limits = {
                        .max_calls = (uint64_t)c->max_calls, .max_queue = (uint64_t)c->max_queue,
                        .max_log = (uint64_t)c->max_log, .max_journal = (uint64_t)c->max_journal,
                        .max_vfs = (uint64_t)c->max_vfs, .max_memory_store = (uint64_t)c->max_memory_store,
                        .max_workspace_write = (uint64_t)c->max_workspace_write,
                        .max_timers = (uint64_t)c->max_timers,
                },
                .virtual_time = r->virtual_time,
                .auto_approve = c->auto_approve,
                .workspace = r->ws,
                .http_allow = r->allow,
                .http_max_response_bytes = (size_t)c->http_max_response,
                .http_timeout_ms = c->http_timeout_ms,
                .tools = r->tools,
                .secrets = r->secrets,
                .llm = r->llm,
                .children = r->tools ? &children : NULL,
                .nested = folder && !r->replay ? &nx.hook : NULL,
                .agent_dir = folder,
        };
        if (r->has_quota && !r->replay) {
                struct quota_limits lim = r->quota.lim;
                quota_run_setup(&r->quota, &lim, &cfg.deadline_ms);
                cfg.quota = &r->quota;
        }
        struct cli_sink sink;
        cli_sink_init(&sink, c->json, c->deadline_ms > 0 ? mono_ms() + (double)c->deadline_ms : 0, &r->stop);
        sink.running = on_running;
        sink.running_arg = r;
        sink.tty_fd = (int)c->tty_fd;
        int rc = -1;
        if (session_new(loop, &cfg, &sink.sink, &cb.provider, &r->s, err) == 0 && session_start(r->s, err) == 0) {
                rc = 0;
                while (session_state(r->s) != SESSION_ENDED)
                        if (evloop_run_once(loop, -1, err) < 0) {
                                rc = -1;
                                break;
                        }
        }
        if (rc == 0)
                *ret_code = conclude(c, r, ag, sink.printed_value);
        session_free(r->s);
        nested_free(&nx);
        chan_boxes_free(&cb);
        evloop_free(loop);
        return rc;
}

/* The operator's JSON text, checked (strict) and kept as written: the
 * agent gets exactly these numbers and strings (cli/run.c parse_json_arg's
 * messages).  *ret is a raw node, or (raw_children) an array or object
 * whose entries are. */
static int json_arg(const char *what, const char *text, size_t len, bool raw_children, cJSON **ret, struct err **err)
{
        struct json_error je;
        if (json_validate(text, len, NULL, &je, NULL) < 0) {
                size_t l, col;
                json_line_col(text, len, je.offset, &l, &col);
                char q[200];
                return err_set(err, 0, "%s is not valid JSON (line %zu, column %zu): %s; quote strings, e.g. "
                                       "'\"text\"'", what, l, col, text_term(je.what, strlen(je.what), q, sizeof(q)));
        }
        struct json_span all = { text, len };
        *ret = raw_children ? json_to_cjson(all, NULL, true) : json_cjson_raw(all);
        return *ret ? 0 : err_set(err, ENOMEM, "%s", what);
}

/* --answers, as the monitor opened it: a JSON array or object. */
static int load_answers(const struct broker_config *c, struct run *r, struct err **err)
{
        _cleanup_free_ char *text = NULL;
        size_t len = 0;
        if (read_fd((int)c->answers_fd, c->answers_file, 64u << 20, &text, &len, err) < 0)
                return err_wrap(err, "--answers");
        if (json_arg("--answers", text, len, true, &r->answers, err) < 0)
                return -1;
        if (!cJSON_IsArray(r->answers) && !cJSON_IsObject(r->answers))
                return err_set(err, 0, "--answers must hold a JSON array or object");
        return 0;
}

/* The input: input= text, or --input-file as the monitor opened it
 * (stdin too); null without either. */
static int load_input(const struct broker_config *c, struct run *r, struct err **err)
{
        _cleanup_free_ char *text = NULL;
        size_t len = 0;
        if (c->input_arg_fd >= 0) {
                if (read_fd((int)c->input_arg_fd, "--input", 64u << 20, &text, &len, err) < 0)
                        return -1;
                return json_arg("--input", text, len, false, &r->input, err);
        }
        if (c->input_fd < 0)
                return c->input ? json_arg("--input", c->input, strlen(c->input), false, &r->input, err) : 0;
        if (read_fd((int)c->input_fd, c->input_file, 64u << 20, &text, &len, err) < 0)
                return err_wrap(err, "--input-file");
        return json_arg("--input-file", text, len, false, &r->input, err);
}

/* process.env from the env=NAME=VALUE entries, in order (a later one of a
 * name replaces it). */
static int make_env(const struct broker_config *c, struct run *r, struct err **err)
{
        if (c->n_env == 0)
                return 0;
        r->env = cJSON_CreateObject();
        for (size_t i = 0; r->env && i < c->n_env; i++) {
                const char *eq = strchr(c->env[i], '=');
                char name[256];
                size_t nl = (size_t)(eq - c->env[i]);
                if (nl >= sizeof(name))
                        return err_set(err, 0, "config: env name longer than 255 bytes");
                memcpy(name, c->env[i], nl);
                name[nl] = '\0';
                cJSON_DeleteItemFromObjectCaseSensitive(r->env, name);
                if (!cJSON_AddStringToObject(r->env, name, eq + 1))
                        return err_set(err, ENOMEM, "config: env");
        }
        return r->env ? 0 : err_set(err, ENOMEM, "config: env");
}

static const char *env_get(const char *name)
{
        return getenv(name);
}

/* The model provider (CHIDORI_LLM_*, docs/llm.md), from the llm= entries,
 * put in this process's environment (the broker's own is PATH and LANG):
 * unset is fine (prompt then says so), set but malformed is a
 * configuration error now, as chidori run reports it. */
static int load_llm(const struct broker_config *c, struct run *r, struct err **err)
{
        for (size_t i = 0; i < c->n_llm; i++) {
                const char *eq = strchr(c->llm[i], '=');
                char name[64];
                size_t nl = (size_t)(eq - c->llm[i]);
                if (nl >= sizeof(name))
                        return err_set(err, 0, "config: llm name longer than 63 bytes");
                memcpy(name, c->llm[i], nl);
                name[nl] = '\0';
                if (setenv(name, eq + 1, 1) < 0)
                        return err_set(err, errno, "config: llm");
        }
        const char *url = getenv("CHIDORI_LLM_BASE_URL"), *key = getenv("CHIDORI_LLM_API_KEY");
        if (!(url && *url) && !(key && *key))
                return 0;
        struct err *e = NULL;
        const struct net_api *net = net_api(&e);
        r->llm = net ? calloc(1, sizeof(*r->llm)) : NULL;
        if (!r->llm || net->llm_config_from_env(env_get, r->llm, &e) < 0) {
                err_set(err, 0, "%s", e ? err_msg(e) : "out of memory");
                err_free(e);
                return -1;
        }
        return 0;
}

/* --secrets, as the CLI read them: secret=NAME VALUE, then its
 * secret_host=NAME HOST entries.  The strings stay in the sealed blob
 * (mapped read-only until the run ends); the table holds a copy, wiped
 * when it is freed. */
static int load_secrets(const struct broker_config *c, struct run *r, struct err **err)
{
        struct err *e = NULL;
        for (size_t i = 0; i < c->n_secret; i++) {
                bool host = strncmp(c->secret[i], "secret_host=", 12) == 0;
                const char *v = strchr(c->secret[i], '=') + 1, *sp = strchr(v, ' ');
                char name[SECRETS_NAME_MAX + 1];
                size_t nl = (size_t)(sp - v);
                if (nl >= sizeof(name))
                        return err_set(err, 0, "config: a secret's name is longer than %d bytes", SECRETS_NAME_MAX);
                memcpy(name, v, nl);
                name[nl] = '\0';
                int rc = host ? secrets_add_host(r->secrets, name, sp + 1, &e)
                              : secrets_add(&r->secrets, name, sp + 1, &e);
                if (rc < 0) {
                        err_set(err, 0, "config: --secrets: %s", err_msg(e));
                        err_free(e);
                        return -1;
                }
        }
        return 0;
}

/* The operator's files and grants, before COMMIT: the answers, the tools
 * file, the workspace, the allowed hosts, process.env.  A bad one is a
 * usage error (exit 2), as `chidori run` reports it. */
static int open_operator(const struct broker_config *c, struct run *r, struct err **err)
{
        struct err *e = NULL;
        if (c->answers_fd >= 0 && load_answers(c, r, err) < 0)
                return -1;
        if (c->replay_fd < 0 && load_input(c, r, err) < 0)
                return -1;
        if (c->tools_file && tools_load_opened(c->tools_file, (int)c->tools_fd, (int)c->tools_errno,
                                                TOOLS_LOAD_NO_FILES, &r->tools, &e) < 0) {
                err_set(err, 0, "--tools %s", err_msg(e));
                err_free(e);
                return -1;
        }
        if (load_secrets(c, r, err) < 0)
                return -1;
        if (!c->serve && c->quotas_file) {
                /* run --quotas (the CLI checked the file): its "session" part. */
                struct quotas *q = NULL;
                int rc = c->quotas_fd >= 0 ? quotas_load_fd((int)c->quotas_fd, c->quotas_file, &q, &e)
                                           : err_set(&e, (int)c->quotas_errno, "cannot open %s", c->quotas_file);
                if (c->quotas_fd >= 0)
                        close((int)c->quotas_fd);
                if (rc < 0) {
                        err_set(err, 0, "--quotas %s", err_msg(e));
                        err_free(e);
                        return -1;
                }
                r->quota.lim = q->session;
                r->has_quota = true;
                quotas_free(q);
        }
        if (c->workspace && workspace_open(c->workspace, NULL, &r->ws, &e) < 0) {
                err_set(err, 0, "--workspace %s: %s (expected an existing directory)", c->workspace, err_msg(e));
                err_free(e);
                return -1;
        }
        for (size_t i = 0; i < c->n_allow; i++) {
                int rc = r->allow ? ssrf_allow_add(r->allow, c->allow_host[i], &e)
                                  : ssrf_allow_parse(c->allow_host[i], &r->allow, &e);
                if (rc < 0) {
                        err_set(err, 0, "allowed hosts: %s", err_msg(e));
                        err_free(e);
                        return -1;
                }
        }
        if (make_env(c, r, err) < 0)
                return -1;
        return load_llm(c, r, err);
}

/* The descriptors of files already read. */
static void close_read_fds(const struct broker_config *c)
{
        const long fds[] = { c->answers_fd, c->policy_fd, c->tools_fd, c->input_fd, c->input_arg_fd };
        for (size_t i = 0; i < sizeof(fds) / sizeof(fds[0]); i++)
                if (fds[i] >= 0)
                        close((int)fds[i]);
}

/* Loading the journal was cut short by the deadline or a stop signal: the
 * run's outcome, printed; its exit code. */
static int stopped_loading(const struct broker_config *c, const struct run *r, enum budget_reason why)
{
        struct session_outcome out = { .blocked_syscall = -1 };
        if (why == BUDGET_DEADLINE) {
                out.end = SESSION_END_DEADLINE;
                if (asprintf(&out.message, "deadline exceeded (%ld ms)", c->deadline_ms) < 0)
                        out.message = NULL;
        } else {
                out.end = SESSION_END_INTERRUPTED;
        }
        struct outcome_context oc = {
                .js_deadline_ms = c->js_deadline_ms, .cpu_secs = c->cpu_secs, .stop_signal = (int)r->stop,
        };
        int code = report_outcome(&out, c->json, &oc, "");
        session_outcome_clear(&out);
        return code;
}

/* What a replay takes from the journal's header, as chidori replay does:
 * the zone, the clock, process.env, and (agent_from_journal) the agent. */
static int replay_settings(struct broker_config *c, struct run *r, const cJSON *h, int *code, struct err **err)
{
        *code = EXIT_USAGE;
        const cJSON *tz = cJSON_GetObjectItemCaseSensitive(h, "tz");
        if (tz && !cJSON_IsString(tz))
                return err_set(err, 0, "replay: the journal header's \"tz\" is not a string");
        r->tz = tz ? tz->valuestring : NULL; /* journals from before --tz: UTC */
        struct err *te = NULL;
        if (tz_check(r->tz, &te) < 0) {
                err_set(err, 0, "replay: the journal's time zone %s", err_msg(te));
                err_free(te);
                return -1;
        }
        const cJSON *t = cJSON_GetObjectItemCaseSensitive(h, "time");
        r->virtual_time = !cJSON_IsString(t) || strcmp(t->valuestring, "real") != 0;
        c->virtual_time = r->virtual_time;
        c->tz = r->tz;
        const cJSON *env = cJSON_GetObjectItemCaseSensitive(h, "env"), *ev;
        if (env && !cJSON_IsObject(env))
                return err_set(err, 0, "replay: the journal header's \"env\" is not an object");
        cJSON_ArrayForEach(ev, env)
        {
                if (!cJSON_IsString(ev))
                        return err_set(err, 0, "replay: the journal header's \"env\" has a value that is not a string");
        }
        cJSON_Delete(r->env);
        r->env = env ? cJSON_Duplicate(env, 1) : NULL;
        if (env && !r->env)
                return err_set(err, ENOMEM, "replay");
        if (c->agent_stdin) {
                /* replay --agent -: the CLI saved it as stdin.js (it does not
                 * read the journal); one the run named otherwise is named so
                 * in traces, and one that needs bundling needs that name. */
                const cJSON *fn = cJSON_GetObjectItemCaseSensitive(h, "filename");
                if (cJSON_IsString(fn) && fn->valuestring[0] && !strchr(fn->valuestring, '/') &&
                    strlen(fn->valuestring) <= 255 && strcmp(fn->valuestring, c->agent) != 0) {
                        if (bundle_needed(fn->valuestring, ""))
                                return err_set(err, 0, "replay: the journal's agent was read from stdin as '%s', which "
                                                       "is bundled by its name; save it as %s and give --agent %s",
                                               fn->valuestring, fn->valuestring, fn->valuestring);
                        r->display_name = fn->valuestring;
                }
                return 0;
        }
        if (!c->agent_from_journal)
                return 0;
        const cJSON *agent = cJSON_GetObjectItemCaseSensitive(h, "agent");
        if (!cJSON_IsString(agent))
                return err_set(err, 0, "replay: the journal header names no agent; pass --agent FILE");
        if (strcmp(agent->valuestring, "-") == 0)
                return err_set(err, 0, "replay: the journal's agent was read from stdin; give it again with --agent "
                                       "FILE, or --agent - to read it from stdin");
        const char *p = agent->valuestring;
        const char *slash = strrchr(p, '/');
        if (p[0] != '/' || !slash[1] || strlen(p) >= CHAN_PATH_MAX)
                return err_set(err, 0, "replay: the journal header's agent '%.200s' is not an absolute file path; "
                                       "pass --agent FILE", p);
        r->agent_abs = strdup(p);
        r->agent_dir_buf = strdup(p);
        if (!r->agent_abs || !r->agent_dir_buf)
                return err_set(err, ENOMEM, "replay");
        char *d = r->agent_dir_buf, *ds = strrchr(d, '/');
        *ds = '\0';
        c->agent_dir = ds == d ? "/" : d;
        c->agent = ds + 1;
        *code = EXIT_PROTOCOL;
        return 0;
}

/* What the run reads besides the agent (after COMMIT: a journal and the
 * memory store hold what agents wrote): the replay source, the input, the
 * memory namespace and store, the journal.  *code is set for a failure
 * that is not EXIT_PROTOCOL. */
static int open_inputs(struct broker_config *c, struct run *r, int *code, struct err **err)
{
        struct budget load = {
                .deadline_at = c->deadline_ms > 0 ? mono_ms() + (double)c->deadline_ms : 0, .stop = &r->stop,
        };
        if (c->replay_fd >= 0 &&
            replay_open_fd((int)c->replay_fd, c->replay_file ? c->replay_file : "the journal",
                           (uint64_t)c->max_journal, &load, &r->replay, err) < 0) {
                enum budget_reason why = budget_over(&load);
                if (why != BUDGET_OK) {
                        /* Stopped while loading: as chidori run reports it. */
                        err_free(*err);
                        *err = NULL;
                        *code = stopped_loading(c, r, why);
                        return -2;
                }
                *code = EXIT_USAGE;
                return err_wrap(err, "replay");
        }
        c->replay_fd = -1; /* the replay owns it now */
        const cJSON *h = r->replay ? replay_header(r->replay) : NULL;
        r->tz = c->tz;
        r->virtual_time = c->virtual_time;
        if (h && replay_settings(c, r, h, code, err) < 0)
                return -1;
        const cJSON *hin = h ? cJSON_GetObjectItemCaseSensitive(h, "input") : NULL;
        const cJSON *hid = h ? cJSON_GetObjectItemCaseSensitive(h, "run_id") : NULL;
        if (cJSON_IsString(hid))
                c->run_id = hid->valuestring;
        if (h)
                r->input = hin ? cJSON_Duplicate(hin, 1) : cJSON_CreateNull();
        else if (!r->input)
                r->input = cJSON_CreateNull();
        if (!r->input)
                return err_set(err, ENOMEM, "config: input");
        if (c->mem_ns)
                r->ns = strdup(c->mem_ns);
        else if (c->agent_stdin ? asprintf(&r->ns, "stdin:%s", c->agent) < 0
                                : asprintf(&r->ns, "%s%s%s", c->agent_dir, strcmp(c->agent_dir, "/") ? "/" : "", c->agent) < 0)
                r->ns = NULL;
        if (!r->ns)
                return err_set(err, ENOMEM, "config");
        if (c->state_dir && !r->replay && memstore_open(c->state_dir, &r->mem, err) < 0)
                return err_wrap(err, "open the memory store");
        if (c->journal_fd >= 0 && journal_open_fd((int)c->journal_fd, c->journal_file ? c->journal_file : "the journal", &r->journal, err) < 0)
                return -1;
        return 0;
}

/* Replay needs the agent that was recorded. */
static int replay_same_agent(const struct run *r, const char *script, struct err **err)
{
        const cJSON *sha = cJSON_GetObjectItemCaseSensitive(replay_header(r->replay), "agent_sha256");
        const struct broker_config *c = r->c;
        char now[65], full[4200];
        if (c->agent_stdin)
                snprintf(full, sizeof(full), "-");
        else
                snprintf(full, sizeof(full), "%s%s%s", c->agent_dir, strcmp(c->agent_dir, "/") ? "/" : "", c->agent);
        const char *path = r->agent_abs ? r->agent_abs : c->agent_path ? c->agent_path : full;
        sha256_hex(script, strlen(script), now);
        if (cJSON_IsString(sha) && strcmp(sha->valuestring, now) != 0 && c->replay_agent_given) {
                /* The journal's text (its sha256, a replay's agent path) is
                 * hostile: escaped on the terminal. */
                char msg[4600];
                snprintf(msg, sizeof(msg), "replay: warning: %s differs from the recorded agent (sha256 %s, journal "
                                           "has %.200s); replaying it anyway because --agent names it",
                         path, now, sha->valuestring);
                text_fput_line(stderr, "chidori: ", msg, strlen(msg));
                return 0;
        }
        if (cJSON_IsString(sha) && strcmp(sha->valuestring, now) != 0)
                return err_set(err, 0, "replay: %s has changed since the journal was recorded (sha256 %s, journal "
                                       "has %s); replay needs the same agent", path, now, sha->valuestring);
        return 0;
}

/* What a step of broker_run did when it did not go on. */
enum step { STEP_ON, STEP_FAIL /* *code set, err to print */, STEP_DONE /* *code set, printed */ };

/* The policy, and what depends on it as chidori run resolves it: the
 * engine's CPU budget and the JIT (docs/sandbox.md, "JIT and W^X"). */
static enum step choose_policy(struct broker_config *c, struct run *r, char **warning, int *code, struct err **err)
{
        struct policy_sources src = {
                .surface = c->serve ? POLICY_SURFACE_SERVE : POLICY_SURFACE_RUN, .flag_untrusted = c->untrusted, .flag_trusted = c->trusted,
                .env_inline = c->policy_inline, .env_profile = c->policy_profile,
                .env_file = c->policy_file, .env_file_fd = c->policy_fd > 0 ? (int)c->policy_fd : 0,
                .env_file_errno = (int)c->policy_errno,
        };
        if (policy_select(&src, &r->policy, warning, err) < 0) {
                *code = err_code(*err) == POLICY_ERR_USAGE ? EXIT_USAGE : EXIT_PROTOCOL;
                return STEP_FAIL;
        }
        if (*warning)
                fprintf(stderr, "chidori: warning: %s\n", *warning);
        bool strict = policy_fallback(r->policy) != POLICY_ALLOW;
        if (c->js_deadline_ms < 0)
                c->js_deadline_ms = strict ? CLI_JS_BUDGET_UNTRUSTED_MS : CLI_JS_BUDGET_DEFAULT_MS;
        r->no_jit = c->jit == 0 || (c->jit < 0 && strict);
        return STEP_ON;
}

/* The agent: a replay's named back by OPEN_AGENT, then read (and bundled)
 * beneath the agent folder as any (broker/bundle.c). */
static enum step load_agent(int chan, struct broker_config *c, struct run *r, struct agent *ag, int *code,
                            struct err **err)
{
        *code = EXIT_PROTOCOL;
        if (r->agent_abs) {
                /* replay without --agent: the journal's agent, which makes its
                 * folder the agent folder (OPEN_AGENT). */
                int afd = chan_boxes_open_agent(chan, r->agent_abs, &r->stop, err);
                if (afd < 0 && !r->stop) {
                        struct err *w = NULL;
                        err_set(&w, (*err)->errnum, "replay: load agent: open '%s'", r->agent_abs);
                        err_free(*err);
                        *err = w;
                        *code = EXIT_USAGE;
                }
                if (afd < 0)
                        return STEP_FAIL;
                close(afd);
        }
        struct broker_bundler bb = { .chan = chan, .agent_dir = c->agent_dir, .esbuild = c->esbuild,
                                     .deadline_ms = c->deadline_ms, .stop = &r->stop };
        if (broker_bundle(&bb, c->agent, ag, err) < 0) {
                if (err_code(*err) == BROKER_BUNDLE_E_CHANNEL)
                        return STEP_FAIL; /* the channel, or interrupted (r->stop) */
                if (err_code(*err) == BROKER_BUNDLE_E_LAYER) {
                        *code = EXIT_LAYER_UNAVAILABLE;
                        return STEP_FAIL;
                }
                /* esbuild's diagnosis (and the rest) as chidori run (or serve) prints it. */
                if (c->serve) {
                        const char *m = err_msg(*err);
                        text_fput_line(stderr, "chidori: serve: ", m, strlen(m));
                        *code = err_code(*err) == AGENT_E_BUNDLE || err_code(*err) == AGENT_E_IMPORT ? EXIT_AGENT_ERROR
                                                                                                   : EXIT_USAGE;
                } else {
                        *code = bundle_report_error(stderr, *err);
                }
                err_free(*err);
                *err = NULL;
                return STEP_DONE;
        }
        if (ag->map_warning)
                text_fput_line(stderr, "chidori: warning: ", ag->map_warning, strlen(ag->map_warning));
        if (r->display_name) {
                char *n = strdup(r->display_name);
                if (n) {
                        free(ag->filename);
                        ag->filename = n;
                }
        }
        if (r->replay && replay_same_agent(r, ag->source, err) < 0) {
                *code = EXIT_AGENT_ERROR;
                return STEP_FAIL;
        }
        return STEP_ON;
}

/* A failed step's error, printed as chidori run would; a STOP met while
 * waiting for the monitor ends the run as interrupted.  The exit code. */
static int report_failure(const struct broker_config *c, struct run *r, const struct err *e, int code)
{
        if (chan_boxes_stop_signal(e) || (r->stop && err_code(e) == BROKER_BUNDLE_E_CHANNEL)) {
                if (!r->stop)
                        r->stop = chan_boxes_stop_signal(e);
                return stopped_loading(c, r, BUDGET_STOPPED);
        }
        /* It may quote a journal's or an agent folder's text: escaped. */
        const char *m = err_msg(e);
        text_fput_line(stderr, c->serve ? "chidori: serve: " : "chidori: ", m, strlen(m));
        return code;
}

static void run_clear(struct run *r)
{
        policy_free(r->policy);
        memstore_close(r->mem);
        journal_close(r->journal);
        replay_free(r->replay);
        cJSON_Delete(r->input);
        cJSON_Delete(r->answers);
        cJSON_Delete(r->env);
        tools_free(r->tools);
        secrets_free(r->secrets);
        workspace_close(r->ws);
        ssrf_allow_free(r->allow);
        if (r->llm)
                net_api(NULL)->llm_config_clear(r->llm);
        free(r->llm);
        free(r->ns);
        free(r->agent_abs);
        free(r->agent_dir_buf);
}

/* chidori serve (serve=1): the tokens, then the server (broker/serve.c)
 * with what the steps before built.  The exit code (printed). */
static int serve_agent(int chan, const struct broker_config *c, struct run *r, const struct agent *ag)
{
        struct err *e = NULL;
        struct auth *auth = NULL;
        int rc = c->token_file    ? auth_load_fd((int)c->token_fd, c->token_file, &auth, &e)
                 : c->serve_token ? auth_new_token(c->serve_token, &auth, &e)
                                  : auth_new_open(&auth, &e);
        if (c->token_fd >= 0)
                close((int)c->token_fd);
        if (rc < 0) {
                char msg[4400];
                snprintf(msg, sizeof(msg), "%s%s%s%s", c->token_file ? "--token-file '" : "CHIDORI_SERVE_TOKEN",
                         c->token_file ? c->token_file : "", c->token_file ? "': " : ": ", err_msg(e));
                text_fput_line(stderr, "chidori: serve: ", msg, strlen(msg));
                err_free(e);
                return EXIT_USAGE;
        }
        /* --quotas, read here from the descriptor the CLI opened (it checked the file already). */
        struct quotas *quotas = NULL;
        if (c->quotas_file) {
                rc = c->quotas_fd >= 0 ? quotas_load_fd((int)c->quotas_fd, c->quotas_file, &quotas, &e)
                                       : err_set(&e, (int)c->quotas_errno, "cannot open %s", c->quotas_file);
                if (c->quotas_fd >= 0)
                        close((int)c->quotas_fd);
                if (rc < 0) {
                        char msg[1200];
                        snprintf(msg, sizeof(msg), "--quotas %s", err_msg(e));
                        text_fput_line(stderr, "chidori: serve: ", msg, strlen(msg));
                        err_free(e);
                        auth_free(auth);
                        return EXIT_USAGE;
                }
        }
        char abspath[4200];
        snprintf(abspath, sizeof(abspath), "%s%s%s", c->agent_dir, strcmp(c->agent_dir, "/") ? "/" : "", c->agent);
        const struct broker_serve x = {
                .listen_fd = (int)c->listen_fd, .listen_desc = c->listen_desc, .auth = auth, .agent = ag,
                .health_fd = (int)c->health_fd, .health_desc = c->health_desc,
                .agent_path = c->agent_path ? c->agent_path : abspath, .agent_abspath = abspath, .agent_sha256 = ag->sha256,
                .agent_dir = c->agent_dir, .agent_rel = c->agent, .esbuild = c->esbuild, .cpu_secs = c->cpu_secs,
                .max_nested = c->max_nested,
                .policy = r->policy, .mem = r->mem, .state_dir = c->state_dir, .workspace = c->workspace,
                .shared_workspace = c->shared_workspace, .shared_memory = c->shared_memory, .quiet = c->quiet,
                .no_jit = r->no_jit, .auto_approve = c->auto_approve, .tz = r->tz, .js_deadline_ms = c->js_deadline_ms,
                .deadline_ms = c->deadline_ms, .grace_s = c->grace, .max_tools = c->max_tools,
                .http_timeout_ms = c->http_timeout_ms, .max_body = (size_t)c->max_body,
                .http_max_response = (size_t)c->http_max_response, .conn_timeout_s = (unsigned)c->conn_timeout,
                .max_conns = (unsigned)c->max_conns, .max_running = (unsigned)c->max_running,
                .pool = (unsigned)c->pool,
                .max_queued = (unsigned)c->max_queued, .approval_ttl_s = (unsigned)c->approval_ttl,
                .session_ttl_s = (unsigned)c->session_ttl,
                .replica_id = c->replica_id, .lease_ms = (unsigned)c->lease * 1000u,
                .store = c->store, .store_env = c->store_env, .n_store_env = c->n_store_env,
                .limits = {
                        .max_calls = (uint64_t)c->max_calls, .max_queue = (uint64_t)c->max_queue,
                        .max_log = (uint64_t)c->max_log, .max_journal = (uint64_t)c->max_journal,
                        .max_vfs = (uint64_t)c->max_vfs, .max_memory_store = (uint64_t)c->max_memory_store,
                        .max_workspace_write = (uint64_t)c->max_workspace_write,
                        .max_timers = (uint64_t)c->max_timers,
                },
                .allow = r->allow, .tools = r->tools, .llm = r->llm, .secrets = r->secrets, .quotas = quotas,
        };
        int code = broker_serve(chan, &x, &e);
        quotas_free(quotas);
        if (e) {
                const char *m = err_msg(e);
                text_fput_line(stderr, "chidori: serve: ", m, strlen(m));
                err_free(e);
        }
        auth_free(auth);
        return code;
}

/* The run, as steps: the config, HELLO, the policy, the operator's files,
 * COMMIT (before anything an agent wrote is read), the inputs (a replay's
 * journal), the agent, the journal's header, the session; RESULT. */
int broker_run(int chan, int config_fd)
{
        struct err *e = NULL;
        struct chan_blob blob = { 0 };
        struct broker_config c;
        struct run r = { .c = &c };
        char *warning = NULL;
        struct agent ag = { 0 };
        int code = EXIT_PROTOCOL;
        unsigned welcome = 0;
        enum step st = STEP_FAIL;
        if (map_config(config_fd, &blob, &e) < 0 || broker_config_parse(blob.strs, blob.nstrings, &c, &e) < 0 ||
            chan_boxes_hello(chan, &welcome, &e) < 0)
                goto end;
        if ((st = choose_policy(&c, &r, &warning, &code, &e)) != STEP_ON)
                goto end;
        /* libchidori-net.so as the monitor opened it (its folder is out of
         * the broker's reach): loaded through /proc/self/fd on first use. */
        char netlib[64];
        if (c.net_lib_fd >= 0) {
                snprintf(netlib, sizeof(netlib), "/proc/self/fd/%ld", c.net_lib_fd);
                setenv("CHIDORI_NET_LIB", netlib, 1);
        }
        st = STEP_FAIL;
        code = EXIT_USAGE;
        if (open_operator(&c, &r, &e) < 0)
                goto end;
        close_read_fds(&c);
        /* The operator's configuration is parsed: commit to what may be
         * spawned before reading anything an agent wrote. */
        if (broker_tools_commit(chan, c.agent_from_journal || c.agent_stdin ? "" : c.agent_dir, r.tools, &e) < 0) {
                code = err_code(e) == 0 && !e->errnum ? EXIT_USAGE : EXIT_PROTOCOL;
                goto end;
        }
        int oi = open_inputs(&c, &r, &code, &e);
        if (oi < 0) {
                st = oi == -2 ? STEP_DONE : STEP_FAIL;
                goto end;
        }
        if ((st = load_agent(chan, &c, &r, &ag, &code, &e)) != STEP_ON)
                goto end;
        if (r.journal)
                journal_header(&r, ag.source);
        st = STEP_DONE;
        if (c.serve) {
                code = serve_agent(chan, &c, &r, &ag);
                goto end;
        }
        if (run_session(chan, &c, &r, &ag, &code, &e) < 0) {
                st = STEP_FAIL;
                code = EXIT_PROTOCOL;
        }
end:
        if (st == STEP_FAIL)
                code = report_failure(&c, &r, e, code);
        err_free(e);
        fflush(stdout);
        fflush(stderr);
        e = NULL;
        if (chan_boxes_result(chan, code, &e) < 0)
                err_free(e);
        agent_free(&ag);
        free(warning);
        run_clear(&r);
        chan_blob_unmap(&blob);
        return code;
}
