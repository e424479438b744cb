/* cli/grants.c — see grants.h. */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/grants.h"
#include "common/cleanup.h"
#include "common/util.h"
#include "effects/memory/memstore.h"
#include "effects/net/net.h"
#include "effects/net/secrets.h"
#include "effects/net/ssrf.h"
#include "effects/proc/tools.h"
#include "effects/workspace/workspace.h"
#include "policy/policy.h"
#include "runtime/session.h"
#include "sandbox/cgroup/cgroup.h"
#include "sandbox/sandbox.h"

static int add_hosts(struct grants_opts *o, const char *what, const char *spec)
{
        struct err *e = NULL;
        struct ssrf_allow *a = NULL;
        if (ssrf_allow_parse(spec, &a, &e) < 0) {
                fprintf(stderr, "chidori: %s '%s': %s (expected HOST[:PORT], e.g. api.internal:8443 or 10.0.0.5)\n",
                        what, spec, err_msg(e));
                err_free(e);
                return -1;
        }
        ssrf_allow_free(a);
        if (o->nallow == sizeof(o->allow_specs) / sizeof(o->allow_specs[0])) {
                fprintf(stderr, "chidori: %s: too many allowlist entries (at most 64 flags; use a comma list)\n", what);
                return -1;
        }
        o->allow_specs[o->nallow++] = spec;
        return 0;
}

static int parse_size(const char *what, const char *v, unsigned long long *ret)
{
        struct err *e = NULL;
        uint64_t n = 0;
        if (cgroup_parse_size(v, &n, &e) < 0) {
                fprintf(stderr, "chidori: %s: %s\n", what, err_msg(e));
                err_free(e);
                return -1;
        }
        if (n == 0 || n > (64ull << 20) * 3 / 4) {
                fprintf(stderr, "chidori: %s '%s': expected a size from 1 byte to 48M (a body must fit a frame)\n",
                        what, v);
                return -1;
        }
        *ret = n;
        return 0;
}

/* --max-nested / --max-tools: 1 to GRANTS_MAX_CONCURRENT. */
static int parse_count(const char *what, const char *v, long *ret)
{
        long n = 0;
        if (parse_nonneg(v, &n) < 0 || n < 1 || n > GRANTS_MAX_CONCURRENT) {
                fprintf(stderr, "chidori: %s '%s' is not a number from 1 to %d\n", what, v, GRANTS_MAX_CONCURRENT);
                return -1;
        }
        *ret = n;
        return 0;
}

int grants_opts_env(struct grants_opts *o)
{
        const char *v;
        if ((v = getenv("CHIDORI_WORKSPACE")) && *v)
                o->workspace_dir = v;
        if ((v = getenv("CHIDORI_HTTP_ALLOW_HOSTS")) && *v && add_hosts(o, "CHIDORI_HTTP_ALLOW_HOSTS", v) < 0)
                return -1;
        if ((v = getenv("CHIDORI_HTTP_MAX_RESPONSE")) && *v &&
            parse_size("CHIDORI_HTTP_MAX_RESPONSE", v, &o->http_max_response) < 0)
                return -1;
        if ((v = getenv("CHIDORI_HTTP_TIMEOUT_MS")) && *v && parse_nonneg(v, &o->http_timeout_ms) < 0) {
                fprintf(stderr, "chidori: CHIDORI_HTTP_TIMEOUT_MS='%s' is not a number of milliseconds\n", v);
                return -1;
        }
        if ((v = getenv("CHIDORI_TOOLS")) && *v)
                o->tools_file = v;
        if ((v = getenv("CHIDORI_SECRETS")) && *v)
                o->secrets_file = v;
        if ((v = getenv("CHIDORI_MAX_NESTED")) && *v && parse_count("CHIDORI_MAX_NESTED", v, &o->max_nested) < 0)
                return -1;
        if ((v = getenv("CHIDORI_MAX_TOOLS")) && *v && parse_count("CHIDORI_MAX_TOOLS", v, &o->max_tools) < 0)
                return -1;
        v = getenv("CHIDORI_POLICY_AUTO_APPROVE");
        o->auto_approve = v && strcmp(v, "1") == 0;
        return 0;
}

int grants_opts_parse(struct grants_opts *o, const char *cmd, int c, const char *arg)
{
        int r = 1;
        switch (c) {
        case GOPT_WORKSPACE: o->workspace_dir = arg; break;
        case GOPT_TOOLS: o->tools_file = arg; break;
        case GOPT_SECRETS: o->secrets_file = arg; break;
        case GOPT_MAX_NESTED: r = parse_count("--max-nested", arg, &o->max_nested) < 0 ? -1 : 1; break;
        case GOPT_MAX_TOOLS: r = parse_count("--max-tools", arg, &o->max_tools) < 0 ? -1 : 1; break;
        case GOPT_ALLOW_HOST: r = add_hosts(o, "--allow-host", arg) < 0 ? -1 : 1; break;
        case GOPT_HTTP_MAX_RESPONSE: r = parse_size("--http-max-response", arg, &o->http_max_response) < 0 ? -1 : 1; break;
        case GOPT_HTTP_TIMEOUT:
                if (parse_nonneg(arg, &o->http_timeout_ms) < 0 || o->http_timeout_ms == 0) {
                        fprintf(stderr, "chidori: --http-timeout '%s' is not a positive number of milliseconds\n", arg);
                        r = -1;
                }
                break;
        default: return 0;
        }
        if (r < 0)
                fprintf(stderr, "Try 'chidori %s --help'.\n", cmd);
        return r;
}

static const char *env_get(const char *name)
{
        return getenv(name);
}

/* ---- the children's configuration (issue 9 item 1) ----
 *
 * A nested run is started by the broker, and a nested run resolves paths
 * again.  Everything path-valued is therefore made absolute here, once,
 * against the operator's working directory, and the nested run's
 * environment is built explicitly: a relative --tools, --workspace,
 * --state-dir, CHIDORI_POLICY_FILE, CHIDORI_WORKER... must never name a
 * file of the agent's choosing (its folder), whatever directory a child
 * starts in (it starts in "/").
 */

/* `p` as seen from `cwd`, lexically (no symlink is resolved: the same file
 * the operator's shell would have opened); NULL when p is relative and cwd
 * unknown, or out of memory. */
static char *abs_from(const char *cwd, const char *p)
{
        char *r = NULL;
        if (p[0] == '/')
                return strdup(p);
        if (!cwd)
                return NULL;
        size_t cl = strlen(cwd);
        bool slash = cl > 0 && cwd[cl - 1] == '/';
        if (asprintf(&r, "%s%s%s", cwd, slash ? "" : "/", p) < 0)
                return NULL;
        return r;
}

/* A PATH-style list with every entry absolute (an empty entry means the
 * working directory to execvp, so it becomes cwd too). */
static char *abs_list(const char *cwd, const char *list)
{
        size_t cap = strlen(list) + 2;
        for (const char *c = list;; c++) {
                cap += cwd ? strlen(cwd) + 1 : 0;
                if (!(c = strchr(c, ':')))
                        break;
        }
        cap += cwd ? strlen(cwd) + 1 : 0;
        char *out = malloc(cap), *o = out;
        if (!out)
                return NULL;
        for (const char *p = list;;) {
                size_t n = strcspn(p, ":");
                _cleanup_free_ char *entry = strndup(p, n);
                _cleanup_free_ char *a = entry ? abs_from(cwd, *entry ? entry : ".") : NULL;
                if (a) {
                        size_t al = strlen(a);
                        if ((size_t)(o - out) + al + 2 > cap) {
                                free(out);
                                return NULL;
                        }
                        if (o != out)
                                *o++ = ':';
                        memcpy(o, a, al);
                        o += al;
                } /* a relative entry with no cwd: left out */
                if (!p[n])
                        break;
                p += n + 1;
        }
        *o = '\0';
        return out;
}

/* CHIDORI_* variables that are not passed on as they are. */
static const struct {
        const char *name;
        enum { ENV_ABS, ENV_DROP } how;
} chidori_env[] = {
        /* path-valued: made absolute.  A new path-valued CHIDORI_* variable
         * must be added here (the child's cwd "/" is only the second wall). */
        { "CHIDORI_POLICY_FILE", ENV_ABS },
        { "CHIDORI_WORKER", ENV_ABS },
        { "CHIDORI_NET_LIB", ENV_ABS },
        { "CHIDORI_ENGINE_LIB", ENV_ABS },
        { "CHIDORI_ESBUILD", ENV_ABS },
        /* on the nested command line already (absolute there) */
        { "CHIDORI_WORKSPACE", ENV_DROP },
        { "CHIDORI_TOOLS", ENV_DROP },
        /* a nested agent is not handed the caller's secrets (docs/secrets.md) */
        { "CHIDORI_SECRETS", ENV_DROP },
        /* ... nor the caller's quotas: a run of its own (docs/serve.md, "Quotas") */
        { "CHIDORI_QUOTAS", ENV_DROP },
        { "CHIDORI_HTTP_ALLOW_HOSTS", ENV_DROP },
        { "CHIDORI_HTTP_MAX_RESPONSE", ENV_DROP },
        { "CHIDORI_HTTP_TIMEOUT_MS", ENV_DROP },
        { "CHIDORI_MAX_NESTED", ENV_DROP },
        { "CHIDORI_MAX_TOOLS", ENV_DROP },
        /* process.env is the top run's: a nested agent's is empty */
        { "CHIDORI_ENV", ENV_DROP },
        /* set per call by the broker, or for one process only */
        { "CHIDORI_AGENT_DEPTH", ENV_DROP },
        { "CHIDORI_POLICY_LAYERS", ENV_DROP },
        { "CHIDORI_CGROUP_ENTER", ENV_DROP },
        { "CHIDORI_PARENT_PID", ENV_DROP },
        { "CHIDORI_STAGE2_FD", ENV_DROP },
};

/* Outside CHIDORI_*: what a nested chidori needs, nothing else (no LD_*,
 * no locale or config paths). */
static const char *const abs_env[] = { "PATH", "HOME", "TMPDIR", "SSL_CERT_FILE", "SSL_CERT_DIR" };
static const char *const verbatim_env[] = { "ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS" };

static bool named(const char *kv, const char *name)
{
        size_t n = strlen(name);
        return strncmp(kv, name, n) == 0 && kv[n] == '=';
}

int grants_nested_env(char *const *env, const char *cwd, char *const *keep, struct strv *ret)
{
        struct strv s = { 0 };
        for (size_t i = 0; env && env[i]; i++) {
                const char *kv = env[i], *eq = strchr(kv, '=');
                if (!eq || eq == kv)
                        continue;
                const char *val = eq + 1;
                int how = -1; /* -1 drop, 0 verbatim, 1 absolute, 2 absolute list */
                if (strncmp(kv, "CHIDORI_", 8) == 0) {
                        how = 0;
                        for (size_t k = 0; k < ARRAY_SIZE(chidori_env); k++)
                                if (named(kv, chidori_env[k].name))
                                        how = chidori_env[k].how == ENV_ABS ? 1 : -1;
                } else {
                        for (size_t k = 0; k < ARRAY_SIZE(abs_env); k++)
                                if (named(kv, abs_env[k]))
                                        how = k == 0 ? 2 : 1;
                        for (size_t k = 0; k < ARRAY_SIZE(verbatim_env); k++)
                                if (named(kv, verbatim_env[k]))
                                        how = 0;
                        for (size_t k = 0; how < 0 && keep && keep[k]; k++)
                                if (named(kv, keep[k]))
                                        how = 0;
                }
                if (how < 0)
                        continue;
                if (how == 0 || !*val) {
                        strv_addf(&s, "%s", kv);
                        continue;
                }
                _cleanup_free_ char *a = how == 2 ? abs_list(cwd, val) : abs_from(cwd, val);
                if (!a) {
                        strv_clear(&s);
                        return -1;
                }
                strv_addf(&s, "%.*s=%s", (int)(eq - kv), kv, a);
        }
        if (!s.failed && !s.v && !(s.v = calloc(1, sizeof(*s.v))))
                s.failed = true;
        if (s.failed) {
                strv_clear(&s);
                return -1;
        }
        *ret = s;
        return 0;
}

/* "<self> run --quiet --json <the caller's options>", paths absolute. */
static int nested_argv(const struct grants_opts *o, const struct nested_src *ns, const char *cwd,
                       const char *state_dir, struct grants *g)
{
        const struct sandbox_opts *sb = ns->sb;
        struct strv *a = &g->run_argv;
        strv_addf(a, "%s", g->self_exe);
        strv_addf(a, "run");
        strv_addf(a, "--quiet");
        strv_addf(a, "--json");
        if (ns->untrusted)
                strv_addf(a, "--untrusted");
        if (ns->trusted)
                strv_addf(a, "--trusted");
        if (ns->in_process)
                strv_addf(a, "--no-isolate");
        if (ns->js_deadline_ms >= 0) /* only as given: the callee picks its own default */
                strv_addf(a, "--js-deadline=%ld", ns->js_deadline_ms);
        if (state_dir)
                strv_addf(a, "--state-dir=%s", state_dir);
        if (sb->set & SB_SET_CPU_SECS)
                strv_addf(a, "--cpu-secs=%ld", sb->cpu_secs);
        strv_addf(a, "--nofile=%ld", sb->nofile);
        if (sb->fsize > 0)
                strv_addf(a, "--fsize=%ld", sb->fsize);
        if (sb->require)
                strv_addf(a, "--require-sandbox");
        if (sb->disable) {
                char names[256];
                box_layers_format(sb->disable, names, sizeof(names));
                strv_addf(a, "--unsafe-disable=%s", names);
        }
        if (sb->jit == 0)
                strv_addf(a, "--no-jit");
        else if (sb->jit == 1)
                strv_addf(a, "--jit");
        /* Limits as the user gave them: a default stays a default in the
         * callee (noted in its banner, not fatal where it cannot apply). */
        if ((sb->set & SB_SET_MEMORY) && sb->memory_bytes > 0)
                strv_addf(a, "--memory=%llu", (unsigned long long)sb->memory_bytes);
        if (sb->set & SB_SET_PIDS)
                strv_addf(a, "--pids=%llu", (unsigned long long)sb->pids_max);
        if (sb->cpus > 0)
                strv_addf(a, "--cpus=%g", sb->cpus);
        /* Ignored by a nested run placed in this run's cgroup (its runs go
         * below that place); kept for runs without one. */
        if (sb->cgroup_parent)
                strv_addf(a, "--cgroup-parent=%s", sb->cgroup_parent);
        if (sb->tz)
                strv_addf(a, "--tz=%s", sb->tz); /* the callee sees the caller's zone */
        if (ns->virtual_time)
                strv_addf(a, "--virtual-time"); /* the callee's clock is the caller's */
        if (ns->lim) {
                /* The parent's limits: the nested run's launcher is a parent too. */
                const struct session_limits *l = ns->lim;
                strv_addf(a, "--max-calls=%llu", (unsigned long long)l->max_calls);
                strv_addf(a, "--max-queue=%llu", (unsigned long long)l->max_queue);
                strv_addf(a, "--max-log=%llu", (unsigned long long)l->max_log);
                strv_addf(a, "--max-journal=%llu", (unsigned long long)l->max_journal);
                strv_addf(a, "--max-vfs=%llu", (unsigned long long)l->max_vfs);
                strv_addf(a, "--max-memory-store=%llu", (unsigned long long)l->max_memory_store);
                strv_addf(a, "--max-workspace-write=%llu", (unsigned long long)l->max_workspace_write);
                strv_addf(a, "--max-timers=%llu", (unsigned long long)l->max_timers);
        }
        _cleanup_free_ char *ws = o->workspace_dir ? abs_from(cwd, o->workspace_dir) : NULL;
        _cleanup_free_ char *tools = o->tools_file ? abs_from(cwd, o->tools_file) : NULL;
        if ((o->workspace_dir && !ws) || (o->tools_file && !tools))
                return -1;
        if (ws)
                strv_addf(a, "--workspace=%s", ws);
        for (size_t i = 0; i < o->nallow; i++)
                strv_addf(a, "--allow-host=%s", o->allow_specs[i]);
        if (o->http_max_response)
                strv_addf(a, "--http-max-response=%llu", o->http_max_response);
        if (o->http_timeout_ms)
                strv_addf(a, "--http-timeout=%ld", o->http_timeout_ms);
        if (tools)
                strv_addf(a, "--tools=%s", tools);
        strv_addf(a, "--max-nested=%u", g->children.max_nested);
        strv_addf(a, "--max-tools=%u", g->children.max_tools);
        return a->failed ? -1 : 0;
}

/* The values of every variable a tool's env list names, as they are now. */
static int tool_env(struct grants *g)
{
        for (size_t i = 0; i < tools_count(g->tools); i++) {
                const struct tool_def *t = tools_at(g->tools, i);
                for (size_t k = 0; k < t->nenv; k++) {
                        const char *v = getenv(t->env[k]);
                        bool have = false;
                        for (size_t j = 0; j < g->tool_env.n && !have; j++)
                                have = named(g->tool_env.v[j], t->env[k]);
                        if (v && !have)
                                strv_addf(&g->tool_env, "%s=%s", t->env[k], v);
                }
        }
        return g->tool_env.failed ? -1 : 0;
}

static int place_child(void *arg, uint64_t id, char **ret_env, struct err **err)
{
        struct grants *g = arg;
        *ret_env = NULL;
        if (!g->cg)
                return 0;
        char name[40];
        snprintf(name, sizeof(name), "call-%llu", (unsigned long long)id);
        _cleanup_free_ char *enter = NULL;
        if (cgroup_run_child_create(g->cg, name, &enter, err) < 0)
                return err_wrap(err, "a place for call %llu in the run's cgroup", (unsigned long long)id);
        if (asprintf(ret_env, "CHIDORI_CGROUP_ENTER=%s", enter) < 0) {
                *ret_env = NULL;
                cgroup_run_child_remove(g->cg, name, NULL);
                return err_set(err, ENOMEM, "a place in the run's cgroup");
        }
        return 0;
}

static void release_child(void *arg, uint64_t id)
{
        struct grants *g = arg;
        if (!g->cg)
                return;
        char name[40];
        snprintf(name, sizeof(name), "call-%llu", (unsigned long long)id);
        cgroup_run_child_remove(g->cg, name, NULL);
}

void grants_set_cgroup(struct grants *g, struct cgroup_run *cg)
{
        g->cg = cg;
}

extern char **environ;

static int children_config(const struct grants_opts *o, const struct nested_src *ns, struct grants *g)
{
        struct broker_children *c = &g->children;
        c->self_exe = g->self_exe;
        c->cwd = "/";
        c->max_nested = (unsigned)(o->max_nested ? o->max_nested : GRANTS_DEFAULT_MAX_NESTED);
        c->max_tools = (unsigned)(o->max_tools ? o->max_tools : GRANTS_DEFAULT_MAX_TOOLS);
        c->place = place_child;
        c->release = release_child;
        c->place_arg = g;
        _cleanup_free_ char *cwd = getcwd(NULL, 0);
        if (tool_env(g) < 0)
                return -1;
        /* Boxed tools: the operator's posture, from the parsed options. */
        if (ns->sb->require)
                strv_addf(&g->launch_opts, "--require-sandbox");
        if (ns->sb->cgroup_parent)
                strv_addf(&g->launch_opts, "--cgroup-parent=%s", ns->sb->cgroup_parent);
        if (g->launch_opts.failed)
                return -1;
        /* The state directory a nested run shares, absolute. */
        _cleanup_free_ char *state = NULL;
        if (ns->state_dir)
                state = abs_from(cwd, ns->state_dir);
        else if (memstore_default_dir(&state, NULL) < 0)
                state = NULL; /* the nested run fails the same way */
        if (ns->state_dir && !state)
                return -1;
        /* Tools' variables reach a nested run too: its tools take them
         * from its environment. */
        if (nested_argv(o, ns, cwd, state, g) < 0 ||
            grants_nested_env(environ, cwd, g->tool_env.v, &g->run_envp) < 0)
                return -1;
        c->run_argv = g->run_argv.v;
        c->run_envp = g->run_envp.v;
        c->launch_opts = g->launch_opts.v;
        c->tool_env = g->tool_env.v;
        return 0;
}

/* CHIDORI_POLICY_LAYERS: the profiles callers up the chain asked for. */
static int policy_layers(struct grants *g, struct session_config *cfg, struct err **err)
{
        const char *v = getenv("CHIDORI_POLICY_LAYERS");
        cfg->policy_layers = v;
        if (!v || !*v)
                return 0;
        size_t cap = 1;
        for (const char *p = v; *p; p++)
                cap += *p == ',';
        g->layers = calloc(cap + 1, sizeof(*g->layers));
        char *copy = strdup(v);
        if (!g->layers || !copy) {
                free(copy);
                return err_set(err, ENOMEM, "CHIDORI_POLICY_LAYERS");
        }
        size_t n = 0;
        for (char *save = NULL, *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
                if (policy_profile(t, "callAgent options.policy", &g->layers[n], err) < 0) {
                        free(copy);
                        return err_wrap(err, "CHIDORI_POLICY_LAYERS");
                }
                n++;
        }
        free(copy);
        cfg->layers = (const struct policy *const *)g->layers;
        return 0;
}

/* A refusal: the message for "chidori: %s", every one a usage error (exit 2). */
static int refused(struct grants *g, struct err **err, struct err *e, const char *fmt, ...)
        __attribute__((format(printf, 4, 5)));

static int refused(struct grants *g, struct err **err, struct err *e, const char *fmt, ...)
{
        char msg[1024];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        err_free(e);
        grants_close(g);
        return err_setc(err, GRANTS_E_USAGE, 0, "%s", msg);
}

int grants_open(const struct grants_opts *o, const struct nested_src *ns, struct grants *g,
                struct session_config *cfg, struct err **err)
{
        memset(g, 0, sizeof(*g));
        struct err *e = NULL;
        if (o->workspace_dir && workspace_open(o->workspace_dir, NULL, &g->ws, &e) < 0)
                return refused(g, err, e, "--workspace %s: %s (expected an existing directory)", o->workspace_dir,
                               err_msg(e));
        for (size_t i = 0; i < o->nallow; i++) {
                int r = g->allow ? ssrf_allow_add(g->allow, o->allow_specs[i], &e)
                                 : ssrf_allow_parse(o->allow_specs[i], &g->allow, &e);
                if (r < 0)
                        return refused(g, err, e, "allowed hosts: %s", err_msg(e));
        }
        if (o->tools_file && tools_load(o->tools_file, &g->tools, &e) < 0)
                return refused(g, err, e, "--tools %s", err_msg(e));
        if (o->secrets_file && secrets_load(o->secrets_file, env_get, &g->secrets, &e) < 0)
                return refused(g, err, e, "--secrets %s", err_msg(e));
        /* The model provider: unset is fine (prompt then says so), set but
         * malformed is a configuration error now rather than at a prompt. */
        const char *url = getenv("CHIDORI_LLM_BASE_URL"), *key = getenv("CHIDORI_LLM_API_KEY");
        if ((url && *url) || (key && *key)) {
                const struct net_api *net = net_api(&e);
                g->llm = net ? calloc(1, sizeof(*g->llm)) : NULL;
                if (!g->llm || net->llm_config_from_env(env_get, g->llm, &e) < 0)
                        return refused(g, err, e, "%s", e ? err_msg(e) : "out of memory");
        }
        g->self_exe = realpath("/proc/self/exe", NULL);
        char *ap = ns && ns->agent_path ? realpath(ns->agent_path, NULL) : NULL;
        if (ap) {
                char *slash = strrchr(ap, '/');
                if (slash == ap)
                        slash[1] = '\0';
                else if (slash)
                        *slash = '\0';
                g->agent_dir = ap;
        }
        const char *depth = getenv("CHIDORI_AGENT_DEPTH");
        if (depth && *depth) {
                long d = 0;
                if (parse_nonneg(depth, &d) < 0 || d > 64)
                        return refused(g, err, NULL, "CHIDORI_AGENT_DEPTH='%s' is not a small integer", depth);
                cfg->agent_depth = (int)d;
        }
        if (policy_layers(g, cfg, &e) < 0)
                return refused(g, err, e, "%s", err_msg(e));
        if (g->self_exe && ns && children_config(o, ns, g) < 0)
                return refused(g, err, NULL, "prepare the configuration of nested runs and tools: out of memory, or "
                                             "a relative path and no working directory");
        cfg->workspace = g->ws;
        cfg->http_allow = g->allow;
        cfg->http_max_response_bytes = (size_t)o->http_max_response;
        cfg->http_timeout_ms = o->http_timeout_ms;
        cfg->auto_approve = o->auto_approve;
        cfg->tools = g->tools;
        cfg->secrets = g->secrets;
        cfg->llm = g->llm;
        cfg->children = g->children.self_exe ? &g->children : NULL;
        cfg->agent_dir = g->agent_dir;
        return 0;
}

void grants_close(struct grants *g)
{
        workspace_close(g->ws);
        ssrf_allow_free(g->allow);
        tools_free(g->tools);
        secrets_free(g->secrets);
        if (g->llm)
                net_api(NULL)->llm_config_clear(g->llm);
        free(g->llm);
        free(g->self_exe);
        free(g->agent_dir);
        for (struct policy **l = g->layers; l && *l; l++)
                policy_free(*l);
        free(g->layers);
        strv_clear(&g->run_argv);
        strv_clear(&g->run_envp);
        strv_clear(&g->launch_opts);
        strv_clear(&g->tool_env);
        memset(g, 0, sizeof(*g));
}

