/* sandbox/sandbox.h — sandbox options shared by `run` and `launch`, and the
 * start/wait helpers around box_spawn.  Each option has an environment
 * variable; a malformed value is a usage error, never ignored. */
#ifndef CHIDORI_SANDBOX_H
#define CHIDORI_SANDBOX_H

#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/err.h"
#include "sandbox/box.h"
#include "sandbox/seccomp.h"

struct sandbox_opts {
        long deadline_ms;        /* --deadline / CHIDORI_ISOLATE_DEADLINE_MS */
        long cpu_secs;           /* --cpu-secs / CHIDORI_ISOLATE_CPU_SECS */
        long nofile;             /* --nofile (default 256) */
        long fsize;              /* --fsize SIZE in bytes (opt-in) */
        bool require;            /* --require-sandbox / CHIDORI_ISOLATE_REQUIRE_SANDBOX=1 */
        unsigned disable;        /* --unsafe-disable=LAYER,... */
        int jit;                 /* -1 default, 0 --no-jit, 1 --jit */
        uint64_t memory_bytes;   /* --memory / CHIDORI_JS_MEM_CAP_MB (default 512 MiB) */
        uint64_t pids_max;       /* --pids / CHIDORI_PIDS_MAX (default 64) */
        double cpus;             /* --cpus, 0 = no cpu.max */
        const char *cgroup_parent; /* --cgroup-parent / CHIDORI_CGROUP_PARENT */
        const char *tz;          /* the worker's TZ, checked (sandbox/tz.h); set by run and replay, NULL = UTC */
        bool seccomp_errno;      /* launch --seccomp-errno: EPERM instead of kill outside the allowlist */
        unsigned set;            /* SB_SET_*: what the user gave (flag or variable), not defaults */
        long engine_cpu_ms;      /* run: the engine's CPU budget (--js-deadline), 0 = none: the
                                  * banner shows it; RLIMIT_CPU backs it up (sandbox_cpu_secs) */
};

/* A limit the user set explicitly that cannot be applied fails the run
 * (exit 78); a default that cannot be applied is a note in the banner. */
enum {
        SB_SET_MEMORY = 1u << 0,   /* --memory, CHIDORI_JS_MEM_CAP_MB */
        SB_SET_PIDS = 1u << 1,     /* --pids, CHIDORI_PIDS_MAX */
        SB_SET_CPUS = 1u << 2,     /* --cpus */
        SB_SET_CPU_SECS = 1u << 3, /* --cpu-secs, CHIDORI_ISOLATE_CPU_SECS */
};

enum {
        SOPT_DEADLINE = 700, SOPT_CPU_SECS, SOPT_NOFILE, SOPT_FSIZE, SOPT_REQUIRE, SOPT_UNSAFE_DISABLE,
        SOPT_JIT, SOPT_NO_JIT, SOPT_MEMORY, SOPT_PIDS, SOPT_CPUS, SOPT_CGROUP_PARENT,
};

#define SANDBOX_LONGOPTS                                                                              \
        { "deadline", required_argument, NULL, SOPT_DEADLINE },                                       \
        { "cpu-secs", required_argument, NULL, SOPT_CPU_SECS },                                       \
        { "nofile", required_argument, NULL, SOPT_NOFILE },                                           \
        { "fsize", required_argument, NULL, SOPT_FSIZE },                                             \
        { "require-sandbox", no_argument, NULL, SOPT_REQUIRE },                                       \
        { "unsafe-disable", required_argument, NULL, SOPT_UNSAFE_DISABLE },                           \
        { "jit", no_argument, NULL, SOPT_JIT },                                                       \
        { "no-jit", no_argument, NULL, SOPT_NO_JIT },                                                 \
        { "memory", required_argument, NULL, SOPT_MEMORY },                                           \
        { "pids", required_argument, NULL, SOPT_PIDS },                                               \
        { "cpus", required_argument, NULL, SOPT_CPUS },                                               \
        { "cgroup-parent", required_argument, NULL, SOPT_CGROUP_PARENT }

#define SANDBOX_OPTIONS_HELP                                                                          \
        "  --deadline MS         wall-clock deadline; the box is killed (exit 124), 0 = none\n"      \
        "                        [CHIDORI_ISOLATE_DEADLINE_MS]\n"                                    \
        "  --cpu-secs N          RLIMIT_CPU in seconds (exit 152), 0 = none [CHIDORI_ISOLATE_CPU_SECS];\n" \
        "                        run: default 1.5 x --js-deadline + 2 s, a backstop for what the\n" \
        "                        engine cannot interrupt (a regular expression)\n"                    \
        "  --nofile N            RLIMIT_NOFILE (default 256)\n"                                      \
        "  --fsize SIZE          RLIMIT_FSIZE, e.g. 1M or 4096 (bytes); opt-in, 0 = none\n"           \
        "  --require-sandbox     fail (exit 78) unless user, pid, mount and net namespaces, seccomp,\n" \
        "                        Landlock (where the kernel has it) and the memory ceiling apply\n"  \
        "                        [CHIDORI_ISOLATE_REQUIRE_SANDBOX=1]\n"                              \
        "  --unsafe-disable=L,.. turn single layers off, for tests and debugging only (user, pid,\n" \
        "                        mnt, net, ipc, uts, cgroupns, caps, landlock, seccomp, rlimits,\n"  \
        "                        cgroup = the memory/pids/cpu ceiling)\n"                            \
        "  --jit / --no-jit      JavaScriptCore's JIT; --no-jit also denies new executable memory\n"  \
        "  --memory SIZE         memory ceiling, e.g. 256M or 1G (default 512M; exit 137): the cgroup's,\n" \
        "                        else a watchdog on the box's resident memory\n"                    \
        "                        [CHIDORI_JS_MEM_CAP_MB, in MiB]\n"                                 \
        "  --pids N              processes and threads (default 64): cgroup pids.max, else\n"       \
        "                        RLIMIT_NPROC in the box's user namespace [CHIDORI_PIDS_MAX]\n"     \
        "  --cpus FRACTION       cgroup cpu.max as a fraction of one CPU, e.g. 0.5 (needs a cgroup)\n" \
        "                        --memory, --pids or --cpus given (flag or variable) but impossible to\n" \
        "                        apply fails the run (exit 78); a default that cannot is noted in the\n" \
        "                        banner\n"                                                           \
        "  --cgroup-parent PATH  cgroup under which run cgroups are created\n"                      \
        "                        [CHIDORI_CGROUP_PARENT] (default: below this process's cgroup)\n"

void sandbox_opts_init(struct sandbox_opts *o);
/* Read the CHIDORI_* variables; prints and returns -1 on a malformed one. */
int sandbox_opts_env(struct sandbox_opts *o);
/* 1 handled, 0 not ours, -1 bad (printed). */
int sandbox_opts_parse(struct sandbox_opts *o, const char *cmd, int c, const char *arg);
/* Cross-option checks (--unsafe-disable with --require-sandbox...). */
int sandbox_opts_check(const struct sandbox_opts *o);

struct cgroup_run;
struct memwatch;
struct sandbox_run {
        struct box box;
        struct cgroup_run *cg;   /* the run's cgroup leaf, or NULL */
        struct memwatch *mw;     /* the memory watchdog when no cgroup holds the ceiling */
        char banner[768];
        int stage2_fd;
        bool jit;
};

/* What the cgroup saw, after the box has ended. */
struct sandbox_usage {
        bool known;              /* a cgroup was in use */
        bool oom_killed;
        bool pids_limit_hit;
        uint64_t peak_bytes;     /* 0 if unknown */
        uint64_t memory_limit;
};

/* Start bo->program in a box with these options.  Returns 0, or an exit code
 * (78 layer unavailable, 70 setup failure) with err set. */
int sandbox_start(const struct sandbox_opts *o, struct box_opts *bo, const char *run_id, struct sandbox_run *ret,
                  struct err **err);
/* launch: wait for the box to end, enforcing the deadline and naming a
 * blocked syscall; prints the failure and returns the exit code. */
int sandbox_wait(const struct sandbox_opts *o, struct sandbox_run *r, int *ret_status);
/* Read the cgroup's counters, kill what is left, remove the leaf, close the
 * box's fds.  usage may be NULL. */
void sandbox_finish(struct sandbox_run *r, struct sandbox_usage *usage);
/* Kill everything the box started (deadline). */
void sandbox_kill(struct sandbox_run *r);
/* The worker's RLIMIT_CPU in seconds (0 = none): --cpu-secs when given,
 * else the backstop of the engine budget, 1.5 x engine_cpu_ms + 2 s (rounded
 * up).  JavaScriptCore's watchdog cannot interrupt a regular expression
 * (YARR) mid-match; the rlimit can (SIGXCPU, exit 152). */
long sandbox_cpu_secs(const struct sandbox_opts *o, bool worker);
/* Environment for the worker given the JIT posture and its time zone (NULL =
 * UTC) (static storage). */
char **sandbox_worker_env(bool jit, bool stage2, const char *tz);

/* Helpers shared with run.c */
int parse_nonneg(const char *s, long *ret);
int cmd_launch(int argc, char **argv);
int cmd_doctor(int argc, char **argv);

#endif
