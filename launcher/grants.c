/* launcher/grants.c — see grants.h. */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/broker.h"
#include "broker/net.h"
#include "broker/policy.h"
#include "broker/ssrf.h"
#include "broker/tools.h"
#include "broker/workspace.h"
#include "cgroup/cgroup.h"
#include "launcher/grants.h"
#include "launcher/launcher.h"
#include "launcher/options.h"

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

/* ---- the nested run's command line ---- */

static const char *keep(struct grants *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static const char *keep(struct grants *g, const char *fmt, ...)
{
        char **n = realloc(g->nested_strs, (g->nnested_strs + 1) * sizeof(*n));
        if (!n)
                return NULL;
        g->nested_strs = n;
        va_list ap;
        va_start(ap, fmt);
        char *s = NULL;
        if (vasprintf(&s, fmt, ap) < 0)
                s = NULL;
        va_end(ap);
        if (s)
                g->nested_strs[g->nnested_strs++] = s;
        return s;
}

static int nested_argv(const struct grants_opts *o, const struct nested_src *ns, struct grants *g)
{
        const struct sandbox_opts *sb = ns->sb;
        const char *a[96];
        size_t n = 0;
#define ADD(x) do { const char *x_ = (x); if (!x_ || n + 1 >= sizeof(a) / sizeof(a[0])) return -1; a[n++] = x_; } while (0)
        ADD(g->self_exe);
        ADD("run");
        ADD("--quiet");
        ADD("--json");
        if (ns->untrusted)
                ADD("--untrusted");
        if (ns->trusted)
                ADD("--trusted");
        if (ns->in_process)
                ADD("--no-isolate");
        if (ns->js_deadline_ms > 0)
                ADD(keep(g, "--js-deadline=%ld", ns->js_deadline_ms));
        if (ns->state_dir)
                ADD(keep(g, "--state-dir=%s", ns->state_dir));
        if (sb->cpu_secs > 0)
                ADD(keep(g, "--cpu-secs=%ld", sb->cpu_secs));
        ADD(keep(g, "--nofile=%ld", sb->nofile));
        if (sb->fsize > 0)
                ADD(keep(g, "--fsize=%ld", sb->fsize));
        if (sb->require)
                ADD("--require-sandbox");
        if (sb->disable) {
                char names[256];
                box_layers_format(sb->disable, names, sizeof(names));
                ADD(keep(g, "--unsafe-disable=%s", names));
        }
        if (sb->jit == 0)
                ADD("--no-jit");
        else if (sb->jit == 1)
                ADD("--jit");
        ADD(keep(g, "--memory=%llu", (unsigned long long)sb->memory_bytes));
        ADD(keep(g, "--pids=%llu", (unsigned long long)sb->pids_max));
        if (sb->cpus > 0)
                ADD(keep(g, "--cpus=%g", sb->cpus));
        if (sb->cgroup_parent)
                ADD(keep(g, "--cgroup-parent=%s", sb->cgroup_parent));
        if (sb->tz)
                ADD(keep(g, "--tz=%s", sb->tz)); /* the callee sees the caller's zone */
        if (o->workspace_dir)
                ADD(keep(g, "--workspace=%s", o->workspace_dir));
        for (size_t i = 0; i < o->nallow; i++)
                ADD(keep(g, "--allow-host=%s", o->allow_specs[i]));
        if (o->http_max_response)
                ADD(keep(g, "--http-max-response=%llu", o->http_max_response));
        if (o->http_timeout_ms)
                ADD(keep(g, "--http-timeout=%ld", o->http_timeout_ms));
        if (o->tools_file)
                ADD(keep(g, "--tools=%s", o->tools_file));
#undef ADD
        a[n] = NULL;
        g->nested_argv = calloc(n + 1, sizeof(char *));
        if (!g->nested_argv)
                return -1;
        memcpy(g->nested_argv, a, (n + 1) * sizeof(char *));
        return 0;
}

/* CHIDORI_POLICY_LAYERS: the profiles callers up the chain asked for. */
static int policy_layers(struct grants *g, struct broker_config *cfg)
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
                return -1;
        }
        size_t n = 0;
        for (char *save = NULL, *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
                struct err *e = NULL;
                if (policy_profile(t, "callAgent options.policy", &g->layers[n], &e) < 0) {
                        fprintf(stderr, "chidori: CHIDORI_POLICY_LAYERS: %s\n", err_msg(e));
                        err_free(e);
                        free(copy);
                        return -1;
                }
                n++;
        }
        free(copy);
        cfg->layers = (const struct policy *const *)g->layers;
        return 0;
}

int grants_open(const struct grants_opts *o, const struct nested_src *ns, struct grants *g,
                struct broker_config *cfg)
{
        memset(g, 0, sizeof(*g));
        struct err *e = NULL;
        if (o->workspace_dir && workspace_open(o->workspace_dir, NULL, &g->ws, &e) < 0) {
                fprintf(stderr, "chidori: --workspace %s: %s (expected an existing directory)\n", o->workspace_dir,
                        err_msg(e));
                err_free(e);
                return EXIT_USAGE;
        }
        for (size_t i = 0; i < o->nallow; i++) {
                int r = g->allow ? ssrf_allow_add(g->allow, o->allow_specs[i], &e)
                                 : ssrf_allow_parse(o->allow_specs[i], &g->allow, &e);
                if (r < 0) {
                        fprintf(stderr, "chidori: allowed hosts: %s\n", err_msg(e));
                        err_free(e);
                        grants_close(g);
                        return EXIT_USAGE;
                }
        }
        if (o->tools_file && tools_load(o->tools_file, &g->tools, &e) < 0) {
                fprintf(stderr, "chidori: --tools %s\n", err_msg(e));
                err_free(e);
                grants_close(g);
                return EXIT_USAGE;
        }
        /* The model provider: unset is fine (prompt then says so), set but
         * malformed is a configuration error now rather than at a prompt. */
        const char *url = getenv("CHIDORI_LLM_BASE_URL"), *key = getenv("CHIDORI_LLM_API_KEY");
        if ((url && *url) || (key && *key)) {
                const struct net_api *net = net_api(&e);
                g->llm = net ? calloc(1, sizeof(*g->llm)) : NULL;
                if (!g->llm || net->llm_config_from_env(env_get, g->llm, &e) < 0) {
                        fprintf(stderr, "chidori: %s\n", e ? err_msg(e) : "out of memory");
                        err_free(e);
                        grants_close(g);
                        return EXIT_USAGE;
                }
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
                if (parse_nonneg(depth, &d) < 0 || d > 64) {
                        fprintf(stderr, "chidori: CHIDORI_AGENT_DEPTH='%s' is not a small integer\n", depth);
                        grants_close(g);
                        return EXIT_USAGE;
                }
                cfg->agent_depth = (int)d;
        }
        if (policy_layers(g, cfg) < 0 || (g->self_exe && ns && nested_argv(o, ns, g) < 0)) {
                grants_close(g);
                return EXIT_USAGE;
        }
        cfg->workspace = g->ws;
        cfg->http_allow = g->allow;
        cfg->http_max_response_bytes = (size_t)o->http_max_response;
        cfg->http_timeout_ms = o->http_timeout_ms;
        cfg->auto_approve = o->auto_approve;
        cfg->tools = g->tools;
        cfg->llm = g->llm;
        cfg->self_exe = g->self_exe;
        cfg->agent_dir = g->agent_dir;
        cfg->nested_argv = g->nested_argv;
        return 0;
}

void grants_close(struct grants *g)
{
        workspace_close(g->ws);
        ssrf_allow_free(g->allow);
        tools_free(g->tools);
        if (g->llm)
                net_api(NULL)->llm_config_clear(g->llm);
        free(g->llm);
        free(g->self_exe);
        free(g->agent_dir);
        for (struct policy **l = g->layers; l && *l; l++)
                policy_free(*l);
        free(g->layers);
        free(g->nested_argv);
        for (size_t i = 0; i < g->nnested_strs; i++)
                free(g->nested_strs[i]);
        free(g->nested_strs);
        memset(g, 0, sizeof(*g));
}

