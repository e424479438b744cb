/* sandbox/sandbox.h — the sandbox options of a box (`run`'s worker,
 * `launch`'s program, a boxed tool) and the start/wait helpers around
 * box_spawn: the run's cgroup leaf or its fallbacks, the seccomp filters, the
 * banner.  The flags and variables that fill struct sandbox_opts are the
 * CLI's (cli/options.h). */
#ifndef CHIDORI_SANDBOX_H
#define CHIDORI_SANDBOX_H

#include <signal.h>
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
        bool pooled;             /* a warm pool's worker (box_request.pooled): CHIDORI_POOLED=1 in its environment */
        const char *tz;          /* the worker's TZ, checked (sandbox/tz.h); set by run and replay, NULL = UTC */
        bool seccomp_errno;      /* launch --seccomp-errno: EPERM instead of kill outside the allowlist */
        unsigned set;            /* SB_SET_*: what the user gave (flag or variable), not defaults */
        long engine_cpu_ms;      /* run: the engine's CPU budget (--js-deadline), 0 = none: the
                                  * banner shows it; RLIMIT_CPU backs it up (sandbox_cpu_secs) */
        struct cgroup_run *cgroup_below; /* a second worker of a run tree: its cgroup node goes below
                                          * this run's (cgroup_run_create_below), NULL = a run of its own */
};

/* A limit the user set explicitly that cannot be applied fails the run
 * (exit 78); a default that cannot be applied is a note in the banner. */
enum {
        SB_SET_MEMORY = 1u << 0,   /* --memory, CHIDORI_JS_MEM_CAP_MB */
        SB_SET_PIDS = 1u << 1,     /* --pids, CHIDORI_PIDS_MAX */
        SB_SET_CPUS = 1u << 2,     /* --cpus */
        SB_SET_CPU_SECS = 1u << 3, /* --cpu-secs, CHIDORI_ISOLATE_CPU_SECS */
};

/* The defaults: 256 files, 512 MiB, 64 processes, JIT per program kind. */
void sandbox_opts_init(struct sandbox_opts *o);

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
 * blocked syscall; prints the failure and returns the exit code.  *stop: the
 * signal that asked this process to stop, or 0 (polled on EINTR; the box is
 * then killed and the exit code is 128 + the signal). */
int sandbox_wait(const struct sandbox_opts *o, struct sandbox_run *r, const volatile sig_atomic_t *stop,
                 int *ret_status);
/* launch.c: PROGRAM in a box with this process's stdio, waited for (the
 * deadline, a blocked syscall named): its exit status or the sandbox's code
 * (failures printed on stderr, the banner too unless quiet).  `chidori
 * launch` and the tools the monitor starts. */
int sandbox_launch(const struct sandbox_opts *so, const struct box_bind *binds, size_t nbinds, const char *prog,
                   char **argv, char **envp, bool quiet);
/* hosttool.c: a "sandbox": false tool: cmd as uid:gid (as, never 0) in a pid
 * namespace of its own when one can be made; its exit status. */
int host_tool_run(bool as, uid_t uid, gid_t gid, char **cmd);
/* Before the first child that shares this process's cgroup (serve's broker):
 * on cgroup v2, alone in a delegated cgroup, move into chidori-launcher so
 * that the runs can have the cgroup (best effort; the first run reports). */
void sandbox_cgroup_early(const struct sandbox_opts *o);
/* Read the cgroup's counters, kill what is left, remove the leaf, close the
 * box's fds.  usage may be NULL. */
void sandbox_finish(struct sandbox_run *r, struct sandbox_usage *usage);
/* sandbox_finish, but the cgroup leaf (its counters read) is handed over in
 * *ret_cg (NULL: none) for the caller to remove with cgroup_run_destroy once
 * it has reported the box's end: the removal (kill what is left, wait until
 * empty, rmdir) is then off the path of whoever waits for that report. */
struct cgroup_run;
void sandbox_finish_keep_cgroup(struct sandbox_run *r, struct sandbox_usage *usage, struct cgroup_run **ret_cg);
/* Kill everything the box started (deadline). */
void sandbox_kill(struct sandbox_run *r);
/* The worker's RLIMIT_CPU in seconds (0 = none): --cpu-secs when given,
 * else the backstop of the engine budget, 1.5 x engine_cpu_ms + 2 s (rounded
 * up).  JavaScriptCore's watchdog cannot interrupt a regular expression
 * (YARR) mid-match; the rlimit can (SIGXCPU, exit 152). */
long sandbox_cpu_secs(const struct sandbox_opts *o, bool worker);
/* Environment for the worker given the JIT posture and its time zone (NULL =
 * UTC) (static storage). */
char **sandbox_worker_env(bool jit, bool stage2, const char *tz, bool pooled);


/* ---- child.c ---- */
/* A chidori started by a run: CHIDORI_PARENT_PID (die with it) and
 * CHIDORI_CGROUP_ENTER (enter its cgroup budget), both removed from the
 * environment.  0, or an exit code (the message printed). */
int launcher_child_setup(void);
/* This process entered a run's cgroup: its own runs go below it, and
 * --cgroup-parent / CHIDORI_CGROUP_PARENT is not consulted. */
extern bool launcher_cgroup_entered;

/* ---- hosttool.c ---- */
/* `chidori _host-tool -- PROGRAM [ARGS...]` (internal): a host tool in a pid
 * namespace of its own. */
int cmd_host_tool(int argc, char **argv);

#endif
