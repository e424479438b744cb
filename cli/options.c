/* cli/options.c — the sandbox options from the command line and the
 * environment (cli/options.h): each flag and variable checked, a malformed
 * value printed as a usage error. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/options.h"
#include "common/util.h"
#include "sandbox/cgroup/cgroup.h"

static int env_long(const char *name, long *ret, const char *what)
{
        const char *v = getenv(name);
        if (!v || !*v)
                return 0;
        if (parse_nonneg(v, ret) < 0) {
                fprintf(stderr, "chidori: %s='%s' is not %s (expected an integer >= 0)\n", name, v, what);
                return -1;
        }
        return 0;
}

int sandbox_opts_env(struct sandbox_opts *o)
{
        long cpu = -1, mb = -1, pids = -1;
        if (env_long("CHIDORI_ISOLATE_DEADLINE_MS", &o->deadline_ms, "a number of milliseconds") < 0 ||
            env_long("CHIDORI_ISOLATE_CPU_SECS", &cpu, "a number of seconds") < 0)
                return -1;
        if (cpu >= 0)
                o->cpu_secs = cpu, o->set |= SB_SET_CPU_SECS;
        /* CHIDORI_JS_MEM_CAP_MB stays a plain number of MiB (its name says
         * so); --memory takes sizes with a suffix. */
        if (env_long("CHIDORI_JS_MEM_CAP_MB", &mb, "a number of MiB (for a size such as 1G, use --memory)") < 0 ||
            env_long("CHIDORI_PIDS_MAX", &pids, "a number of processes") < 0)
                return -1;
        if (mb >= 0)
                o->memory_bytes = (uint64_t)mb << 20, o->set |= SB_SET_MEMORY; /* 0: no memory ceiling */
        if (pids == 0) {
                fprintf(stderr, "chidori: CHIDORI_PIDS_MAX=0 would forbid the engine's own threads; use 1 or more\n");
                return -1;
        }
        if (pids > 0)
                o->pids_max = (uint64_t)pids, o->set |= SB_SET_PIDS;
        const char *cp = getenv("CHIDORI_CGROUP_PARENT");
        if (cp && *cp)
                o->cgroup_parent = cp;
        const char *r = getenv("CHIDORI_ISOLATE_REQUIRE_SANDBOX");
        if (r && *r) {
                if (strcmp(r, "1") == 0 || strcmp(r, "true") == 0)
                        o->require = true;
                else if (strcmp(r, "0") == 0 || strcmp(r, "false") == 0)
                        o->require = false;
                else {
                        fprintf(stderr, "chidori: CHIDORI_ISOLATE_REQUIRE_SANDBOX='%s' is not valid (expected 1 or 0)\n",
                                r);
                        return -1;
                }
        }
        return 0;
}

int sandbox_opts_parse(struct sandbox_opts *o, const char *cmd, int c, const char *arg)
{
        long *dst = NULL;
        const char *what = NULL;
        switch (c) {
        case SOPT_DEADLINE: dst = &o->deadline_ms, what = "--deadline"; break;
        case SOPT_CPU_SECS: dst = &o->cpu_secs, what = "--cpu-secs", o->set |= SB_SET_CPU_SECS; break;
        case SOPT_NOFILE: dst = &o->nofile, what = "--nofile"; break;
        case SOPT_FSIZE: {
                /* A size like --memory's (1M, 512K, plain bytes); 0 = no limit. */
                uint64_t v = 0;
                struct err *e = NULL;
                if (strcmp(arg, "0") != 0 && cgroup_parse_size(arg, &v, &e) < 0) {
                        fprintf(stderr, "chidori: --fsize: %s\nTry 'chidori %s --help'.\n", err_msg(e), cmd);
                        err_free(e);
                        return -1;
                }
                o->fsize = (long)v;
                return 1;
        }
        case SOPT_REQUIRE: o->require = true; return 1;
        case SOPT_JIT: o->jit = 1; return 1;
        case SOPT_NO_JIT: o->jit = 0; return 1;
        case SOPT_CGROUP_PARENT: o->cgroup_parent = arg; return 1;
        case SOPT_MEMORY: {
                struct err *e = NULL;
                if (cgroup_parse_size(arg, &o->memory_bytes, &e) < 0) {
                        fprintf(stderr, "chidori: --memory: %s\nTry 'chidori %s --help'.\n", err_msg(e), cmd);
                        err_free(e);
                        return -1;
                }
                o->set |= SB_SET_MEMORY;
                return 1;
        }
        case SOPT_CPUS: {
                struct err *e = NULL;
                if (cgroup_parse_cpus(arg, &o->cpus, &e) < 0) {
                        fprintf(stderr, "chidori: --cpus: %s\nTry 'chidori %s --help'.\n", err_msg(e), cmd);
                        err_free(e);
                        return -1;
                }
                o->set |= SB_SET_CPUS;
                return 1;
        }
        case SOPT_PIDS: {
                long v = 0;
                if (parse_nonneg(arg, &v) < 0 || v < 1) {
                        fprintf(stderr, "chidori: --pids '%s' is not a number of processes >= 1\n", arg);
                        return -1;
                }
                o->pids_max = (uint64_t)v;
                o->set |= SB_SET_PIDS;
                return 1;
        }
        case SOPT_UNSAFE_DISABLE: {
                struct err *e = NULL;
                unsigned m = 0;
                if (box_parse_layers(arg, &m, &e) < 0) {
                        fprintf(stderr, "chidori: --unsafe-disable: %s\nTry 'chidori %s --help'.\n", err_msg(e), cmd);
                        err_free(e);
                        return -1;
                }
                o->disable |= m;
                return 1;
        }
        default: return 0;
        }
        if (parse_nonneg(arg, dst) < 0) {
                fprintf(stderr, "chidori: %s '%s' is not a non-negative integer\nTry 'chidori %s --help'.\n", what,
                        arg, cmd);
                return -1;
        }
        if (c == SOPT_NOFILE && (*dst < 16 || *dst > 65536)) {
                fprintf(stderr, "chidori: --nofile %ld is out of range (16..65536)\n", *dst);
                return -1;
        }
        return 1;
}

int sandbox_opts_check(const struct sandbox_opts *o)
{
        if (o->disable && o->require) {
                fprintf(stderr, "chidori: --unsafe-disable cannot be combined with --require-sandbox "
                                "(CHIDORI_ISOLATE_REQUIRE_SANDBOX): a required sandbox has every layer\n");
                return -1;
        }
        if (o->disable) {
                char names[256];
                box_layers_format(o->disable, names, sizeof(names));
                fprintf(stderr, "chidori: WARNING: sandbox layers DISABLED (%s) by --unsafe-disable: "
                                "this run is less confined; use only for tests and debugging\n",
                        names);
        }
        return 0;
}
