/* launcher/grants.c — see grants.h. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/broker.h"
#include "broker/ssrf.h"
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
                fprintf(stderr, "chidori: %s '%s': %s\n", what, v, err_msg(e));
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
        v = getenv("CHIDORI_POLICY_AUTO_APPROVE");
        o->auto_approve = v && strcmp(v, "1") == 0;
        return 0;
}

int grants_opts_parse(struct grants_opts *o, const char *cmd, int c, const char *arg)
{
        int r = 1;
        switch (c) {
        case GOPT_WORKSPACE: o->workspace_dir = arg; break;
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

int grants_open(const struct grants_opts *o, struct grants *g, struct broker_config *cfg)
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
        cfg->workspace = g->ws;
        cfg->http_allow = g->allow;
        cfg->http_max_response_bytes = (size_t)o->http_max_response;
        cfg->http_timeout_ms = o->http_timeout_ms;
        cfg->auto_approve = o->auto_approve;
        return 0;
}

void grants_close(struct grants *g)
{
        workspace_close(g->ws);
        ssrf_allow_free(g->allow);
        memset(g, 0, sizeof(*g));
}

