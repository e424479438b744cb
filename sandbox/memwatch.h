/* sandbox/memwatch.h — the memory ceiling when no cgroup can hold one
 * (rootless without delegation, --unsafe-disable=cgroup, an unwritable
 * --cgroup-parent): a thread of the launcher reads the box's resident memory
 * every MEMWATCH_INTERVAL_MS and SIGKILLs the box once it is over the limit.
 *
 * What it counts: RssAnon + RssShmem of every process of the box (the root
 * process and, for `launch`, its descendants), i.e. the memory the box made
 * and keeps resident.  Not counted: file pages it maps (shared with the host's
 * page cache), memory it never maps (an unmapped memfd, pipe buffers, kernel
 * objects) and what it allocates between two polls.  That is why it is a
 * fallback and --require-sandbox still demands the cgroup ceiling
 * (docs/sandbox.md, "Limits without a cgroup").
 *
 * The thread allocates nothing and uses no stdio: the launcher may clone a
 * box while it runs (box_spawn's raw clone3 takes no malloc lock). */
#ifndef CHIDORI_SANDBOX_MEMWATCH_H
#define CHIDORI_SANDBOX_MEMWATCH_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/err.h"

#define MEMWATCH_INTERVAL_MS 5

struct memwatch;

/* Start watching pid (pidfd refers to it; it is duplicated, not consumed).
 * tree: also count its descendants (a box that may start processes);
 * kill_tree: SIGKILL the descendants too (no pid namespace would take them
 * down with the root).  Returns 0 or -1 with err. */
int memwatch_start(pid_t pid, int pidfd, uint64_t limit_bytes, bool tree, bool kill_tree, struct memwatch **ret,
                   struct err **err);

struct memwatch_result {
        bool killed;          /* the box went over the limit and was killed */
        uint64_t peak_bytes;  /* the most it was seen holding */
        uint64_t limit_bytes;
};

/* Stop the thread, report, free.  NULL ok (result zeroed). */
void memwatch_stop(struct memwatch *w, struct memwatch_result *ret);

/* Resident anonymous + shared memory of one process, from the status file of
 * /proc/<pid> given as an open directory fd (-1: by pid).  -1 when it is
 * gone.  Exposed for the unit test. */
int64_t memwatch_rss(int procfd, pid_t pid);

#endif
