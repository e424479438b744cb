/* sandbox/cgroup/cgroup.h — the hard resource ceiling of a run: one cgroup leaf per
 * run, cgroup v2 first, v1 fallback.  See docs/cgroups.md.
 *
 * Life cycle (the launcher's spawn path):
 *
 *   cgroup_host_detect()      once per launcher process (reads /proc only)
 *   cgroup_cleanup_stale()    once at start: leaves of crashed launchers
 *   cgroup_host_prepare()     optional, early: creates the launcher directory,
 *                             enables controllers, moves the launcher into
 *                             <own>/chidori-launcher when v2 requires it
 *   per run:
 *     cgroup_run_create()     leaf + limits
 *     v2: clone3(CLONE_INTO_CGROUP, cgroup_run_clone_fd())
 *     v1: cgroup_run_attach(pid) while the child waits before exec
 *     cgroup_run_kill()       deadline / teardown: nothing the run started survives
 *     cgroup_run_stats()      after the child has exited
 *     cgroup_run_destroy()    kill, wait until empty, rmdir, free
 *   cgroup_host_free()        removes the launcher directory
 *
 * Leaf code: nothing here prints or exits.  Every fallible function returns
 * a negative value and sets *err (code: enum cgroup_error).  The host may be
 * shared by threads: run create/kill/stats/destroy on different runs may run
 * concurrently; a given run is used by one thread at a time.
 */
#ifndef CHIDORI_SANDBOX_CGROUP_H
#define CHIDORI_SANDBOX_CGROUP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/err.h"

/* Error codes carried in struct err.code by this module. */
enum cgroup_error {
        CGROUP_E_INVALID = 1,  /* bad argument: size, cpus, run id */
        CGROUP_E_UNAVAILABLE,  /* no usable cgroup; cgroup_host_reason() says why */
        CGROUP_E_CONTROLLER,   /* a limit was asked whose controller is not usable */
        CGROUP_E_BUSY,         /* processes did not go away, or a directory stayed */
        CGROUP_E_EXISTS,       /* a live run with this id already exists */
        CGROUP_E_IO,           /* a cgroupfs or /proc operation failed (errno set) */
};

enum cgroup_ctl {
        CGROUP_CTL_MEMORY,
        CGROUP_CTL_PIDS,
        CGROUP_CTL_CPU,
        CGROUP_CTL_MAX
};

const char *cgroup_ctl_name(enum cgroup_ctl c); /* "memory", "pids", "cpu" */

/* 0 (or 0.0) leaves a knob unset. */
struct cgroup_limits {
        uint64_t memory_bytes;
        uint64_t pids_max;
        double cpus; /* fraction of CPUs: 0.5 = half of one CPU */
};

/* "512M", "1G", "1048576", "512MiB", "64kb": digits then an optional suffix
 * K/M/G/T (powers of 1024, case-insensitive) optionally followed by "i", "iB"
 * or "B".  Rejects 0, signs, spaces, fractions, garbage and values above
 * INT64_MAX (code CGROUP_E_INVALID). */
int cgroup_parse_size(const char *s, uint64_t *ret_bytes, struct err **err);

/* "0.5", "2", "1.25": a plain decimal > 0 and <= 1024 (no exponent, sign,
 * inf or nan; at most 6 decimals). */
int cgroup_parse_cpus(const char *s, double *ret_cpus, struct err **err);

/* Largest exact suffix: 536870912 -> "512M", 3072 -> "3K", 1536 -> "1536". */
void cgroup_format_size(uint64_t bytes, char *buf, size_t len);

/* ---- the host ------------------------------------------------------------ */

struct cgroup_host;

/* Detect what this host offers, reading /proc/self/mountinfo, /proc/self/cgroup
 * and the cgroup files (no directory is created).  parent_override is
 * CHIDORI_CGROUP_PARENT / --cgroup-parent or NULL: a cgroup path ("/chidori")
 * or a directory below a cgroup mount ("/sys/fs/cgroup/chidori"); it must
 * exist.  Success does not mean usable: a host with version 0 is returned
 * with a reason, so doctor and the banner can say why.  Fails only on a bad
 * override or an unreadable /proc. */
int cgroup_host_detect(const char *parent_override, struct cgroup_host **ret,
                       struct err **err);

/* Removes this launcher's directories (killing whatever a leaked run left in
 * them) and frees.  NULL ok.  Call only after the runs are destroyed. */
void cgroup_host_free(struct cgroup_host *h);

int cgroup_host_version(const struct cgroup_host *h); /* 2, 1 or 0 */

/* Short reason why version is 0 ("no cgroup delegation", "no memory
 * controller", "no cgroup filesystem", "launcher cgroup holds other
 * processes"), NULL when usable. */
const char *cgroup_host_reason(const struct cgroup_host *h);

struct cgroup_ctl_info {
        bool usable;
        const char *path; /* directory under which the run leaves go, NULL if unusable */
        const char *why;  /* why not usable, NULL if usable */
};

/* For `chidori doctor`.  Pointers borrow from the host. */
struct cgroup_info {
        int version;            /* 2, 1 or 0 */
        bool delegated;         /* we may create and populate children */
        const char *reason;     /* short, as cgroup_host_reason() */
        const char *detail;     /* one or two sentences, always set */
        const char *v2_mount;   /* cgroup2 mount point, NULL if none */
        const char *v2_note;    /* why cgroup2 was not chosen, NULL if it was or is absent */
        const char *launcher;   /* per-launcher directory name, "chidori-<pid>-<start>-<pidns>" */
        bool launcher_move;     /* v2: the launcher will move itself to <own>/chidori-launcher */
        struct cgroup_ctl_info ctl[CGROUP_CTL_MAX];
};
void cgroup_host_describe(const struct cgroup_host *h, struct cgroup_info *ret);

/* Banner fragment into buf (always NUL-terminated; truncated if short):
 *   "cgroup2 memory.max=512M pids.max=64 cpus=0.5"
 *   "cgroup1 memory.limit_in_bytes=512M pids.max=64"
 *   "memory ceiling: none (no cgroup delegation)"
 * lim may be NULL.  Returns the length it wanted (like snprintf). */
int cgroup_banner(const struct cgroup_host *h, const struct cgroup_limits *lim, char *buf,
                  size_t len);

/* Remove directories left by launchers that are gone: under the runs' parent,
 * only names "chidori-<pid>-<starttime>-<pidns>" whose pid namespace is ours
 * and whose process no longer exists with that start time.  Processes still
 * inside them are SIGKILLed (each checked to be in that cgroup before the
 * signal).  Directories of live launchers and of other pid namespaces are
 * never touched.  Returns how many launcher directories were removed. */
int cgroup_cleanup_stale(struct cgroup_host *h, struct err **err);

/* Create the launcher directory "<parent>/chidori-<pid>-<start>-<pidns>" in each
 * hierarchy and enable the controllers lim needs (memory+pids, +cpu when
 * lim->cpus) in cgroup.subtree_control along the way.  On v2, when the own
 * cgroup holds processes (only this launcher), first moves the launcher into
 * "<own>/chidori-launcher" (no-internal-processes rule).  Idempotent; called
 * by cgroup_run_create, call it early to keep it off the first run. */
int cgroup_host_prepare(struct cgroup_host *h, const struct cgroup_limits *lim,
                        struct err **err);

/* ---- a run --------------------------------------------------------------- */

struct cgroup_run;

/* Create leaf "run-<run_id>" (run_id: 1-64 of [A-Za-z0-9_.-], not starting
 * with '.') and write the limits: v2 memory.max, memory.swap.max=0,
 * memory.oom.group=1, pids.max, cpu.max; v1 memory.limit_in_bytes,
 * memory.memsw.limit_in_bytes (when swap accounting is on), oom killer on,
 * pids.max, cpu.cfs_quota_us/cfs_period_us.  A limit whose controller is not
 * usable fails with CGROUP_E_CONTROLLER; version 0 fails with
 * CGROUP_E_UNAVAILABLE.  On failure nothing is left behind. */
int cgroup_run_create(struct cgroup_host *h, const char *run_id, const struct cgroup_limits *lim,
                      struct cgroup_run **ret, struct err **err);

/* v2: O_DIRECTORY|O_CLOEXEC fd of the box leaf (<run>/box) for clone3's CLONE_INTO_CGROUP
 * (struct clone_args.cgroup).  Owned by the run: do not close; valid until
 * cgroup_run_destroy.  -1 on v1. */
int cgroup_run_clone_fd(const struct cgroup_run *r);

/* Move pid (a whole process) into the box leaf: v1 writes cgroup.procs of each
 * hierarchy's <run>/box; on v2 it is the fallback when clone3 is not used.  On v1
 * expect 7-10 ms when no migration happened recently (docs/cgroups.md). */
int cgroup_run_attach(struct cgroup_run *r, pid_t pid, struct err **err);

/* SIGKILL everything in the leaf and below.  v2: cgroup.kill (no fork can
 * escape; returns without waiting for the exits); without cgroup.kill and on
 * v1: kill each listed pid (verified to be in the leaf through a pidfd) until
 * the leaf stays empty.  Safe to call repeatedly. */
int cgroup_run_kill(struct cgroup_run *r, struct err **err);

struct cgroup_stats {
        bool oom_killed;        /* the kernel OOM killer killed in this leaf */
        uint64_t oom_kills;     /* kills counted by the kernel (6.1 counts an
                                 * oom.group victim twice) */
        bool oom_known;         /* false: this kernel does not count OOM kills
                                 * (v1 < 4.13); infer from SIGKILL + memory_limit_hit */
        bool memory_limit_hit;  /* v2 memory.events max > 0; v1 failcnt or
                                 * memsw.failcnt > 0, an OOM kill, or peak at the limit */
        uint64_t peak_bytes;    /* v2 memory.peak, v1 memory.max_usage_in_bytes */
        bool peak_known;        /* false on v2 before 5.19 (no memory.peak) */
        bool pids_limit_hit;    /* pids.events max > 0: a fork failed at pids.max */
        uint64_t memory_limit;  /* as the kernel holds it (page-rounded), 0 = none */
        uint64_t pids_limit;    /* 0 = none */
        bool swap_limited;      /* memory.swap.max=0 / memsw limit was applied */
};
/* Read the counters (all fields zero when the controller is not in use). */
int cgroup_run_stats(struct cgroup_run *r, struct cgroup_stats *ret, struct err **err);

/* ---- the run tree ----------------------------------------------------------
 *
 * A run's cgroup is a node: limits and counters on <run>, the box in
 * <run>/box (what clone_fd and attach place), and every process the run
 * starts outside its box — a nested `chidori run`, a tool's `chidori launch`
 * or host command — in a child cgroup <run>/<name>, so --memory and --pids
 * bound the run and everything it starts together.  The child process moves
 * itself in (cgroup_enter) before doing anything else; a nested run then
 * puts its own runs below that place (its own cgroup is their parent). */

/* Make <run>/<name> in every hierarchy the run uses (on v2 also
 * <run>/<name>/chidori-launcher: the child's process goes one level down so
 * that <name> may pass controllers to runs of its own).  *ret_enter gets the
 * directories the child must enter, newline-separated (malloc'd; cgroup paths
 * never hold a newline: /proc/PID/cgroup is line-based).  name: as a run id. */
int cgroup_run_child_create(struct cgroup_run *r, const char *name, char **ret_enter, struct err **err);

/* A run's node made below another run's node: <parent>/run-<run_id>, with
 * its own limits and box leaf, as cgroup_run_create makes one (a second
 * worker of the same run tree: what the parent's node holds bounds both).
 * Destroying the parent's node first kills and removes this one too. */
int cgroup_run_create_below(struct cgroup_run *parent, const char *run_id, const struct cgroup_limits *lim,
                            struct cgroup_run **ret, struct err **err);

/* Kill whatever is left in <run>/<name> and below, and remove it (5 s at
 * most).  Gone already is fine. */
int cgroup_run_child_remove(struct cgroup_run *r, const char *name, struct err **err);

/* In the child: move the calling process into each directory of `enter` (as
 * cgroup_run_child_create made it).  Each must be absolute and on a cgroup
 * filesystem (code CGROUP_E_INVALID otherwise). */
int cgroup_enter(const char *enter, struct err **err);

/* Kill, wait until the leaf is empty (5 s at most), rmdir, free.  NULL ok.
 * Always frees r; on failure the leaf stays and is removed by
 * cgroup_host_free or the next launcher's cleanup. */
int cgroup_run_destroy(struct cgroup_run *r, struct err **err);

#endif
