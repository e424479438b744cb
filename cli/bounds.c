/* cli/bounds.c — see bounds.h. */
#define _GNU_SOURCE
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/bounds.h"
#include "common/util.h"
#include "sandbox/cgroup/cgroup.h"
#include "sandbox/sandbox.h"

/* Below this the VFS has no room for "/" and "/tmp" (effects/fs/vfs.h). */
#define MIN_VFS ((uint64_t)4 << 10)
#define MAX_CALLS_MAX 1000000L

static const struct {
        int opt;
        const char *flag, *env;
        size_t field;   /* offset in struct session_limits */
        bool count;     /* a number of calls, not a size */
        uint64_t min;
} OPTS[] = {
        { BOPT_MAX_CALLS, "--max-calls", "CHIDORI_MAX_CALLS", offsetof(struct session_limits, max_calls), true, 1 },
        { BOPT_MAX_QUEUE, "--max-queue", "CHIDORI_MAX_QUEUE", offsetof(struct session_limits, max_queue), false, 1 },
        { BOPT_MAX_LOG, "--max-log", "CHIDORI_MAX_LOG", offsetof(struct session_limits, max_log), false, 1 },
        { BOPT_MAX_JOURNAL, "--max-journal", "CHIDORI_MAX_JOURNAL", offsetof(struct session_limits, max_journal),
          false, 1 },
        { BOPT_MAX_VFS, "--max-vfs", "CHIDORI_MAX_VFS", offsetof(struct session_limits, max_vfs), false, MIN_VFS },
        { BOPT_MAX_MEMORY_STORE, "--max-memory-store", "CHIDORI_MAX_MEMORY_STORE",
          offsetof(struct session_limits, max_memory_store), false, 1 },
        { BOPT_MAX_WORKSPACE_WRITE, "--max-workspace-write", "CHIDORI_MAX_WORKSPACE_WRITE",
          offsetof(struct session_limits, max_workspace_write), false, 1 },
        { BOPT_MAX_TIMERS, "--max-timers", "CHIDORI_MAX_TIMERS", offsetof(struct session_limits, max_timers), true, 1 },
};

void bounds_opts_init(struct session_limits *o)
{
        *o = (struct session_limits){
                .max_calls = BROKER_DEFAULT_MAX_CALLS,
                .max_queue = BROKER_DEFAULT_MAX_QUEUE,
                .max_log = BROKER_DEFAULT_MAX_LOG,
                .max_journal = BROKER_DEFAULT_MAX_JOURNAL,
                .max_vfs = BROKER_DEFAULT_MAX_VFS,
                .max_memory_store = BROKER_DEFAULT_MAX_MEMORY_STORE,
                .max_workspace_write = BROKER_DEFAULT_MAX_WORKSPACE_WRITE,
                .max_timers = BROKER_DEFAULT_MAX_TIMERS,
        };
}

/* `what` is the flag or the variable, for the message. */
static int set(struct session_limits *o, size_t i, const char *what, const char *v)
{
        uint64_t n = 0;
        if (OPTS[i].count) {
                long c = 0;
                if (parse_nonneg(v, &c) < 0 || c < 1 || c > MAX_CALLS_MAX) {
                        fprintf(stderr, "chidori: %s '%s' is not a number of %s from 1 to %ld\n", what, v,
                                OPTS[i].opt == BOPT_MAX_TIMERS ? "timers" : "calls", MAX_CALLS_MAX);
                        return -1;
                }
                n = (uint64_t)c;
        } else {
                struct err *e = NULL;
                if (cgroup_parse_size(v, &n, &e) < 0) {
                        fprintf(stderr, "chidori: %s '%s': %s (expected a size such as 512K, 64M or 1G)\n", what, v,
                                err_msg(e));
                        err_free(e);
                        return -1;
                }
                if (n < OPTS[i].min) {
                        fprintf(stderr, "chidori: %s '%s' is too small (at least %llu bytes)\n", what, v,
                                (unsigned long long)OPTS[i].min);
                        return -1;
                }
        }
        *(uint64_t *)((char *)o + OPTS[i].field) = n;
        return 0;
}

int bounds_opts_env(struct session_limits *o)
{
        for (size_t i = 0; i < sizeof(OPTS) / sizeof(OPTS[0]); i++) {
                const char *v = getenv(OPTS[i].env);
                if (v && *v && set(o, i, OPTS[i].env, v) < 0)
                        return -1;
        }
        return 0;
}

int bounds_opts_parse(struct session_limits *o, const char *cmd, int c, const char *arg)
{
        for (size_t i = 0; i < sizeof(OPTS) / sizeof(OPTS[0]); i++) {
                if (OPTS[i].opt != c)
                        continue;
                if (set(o, i, OPTS[i].flag, arg) < 0) {
                        fprintf(stderr, "Try 'chidori %s --help'.\n", cmd);
                        return -1;
                }
                return 1;
        }
        return 0;
}
