/* sandbox/box.h — the one spawn path into the sandbox ("the box"), used by
 * `chidori run` for the engine worker and by `chidori launch` for any program.
 *
 * Lockdown order in the child (each step reported, see docs/sandbox.md):
 *   clone3(user, pid, mnt, net, ipc, uts, cgroup ns; pidfd; into the cgroup)
 *   -> parent writes uid/gid maps, attaches v1 cgroups, says go
 *   -> setresuid/gid(0) inside -> tmpfs root, read-only binds, private /dev,
 *      fresh procfs, pivot_root, old root detached, root read-only
 *   -> hostname, lo up -> rlimits -> setsid, fds -> no_new_privs, not
 *      dumpable, pdeathsig -> capabilities dropped -> Landlock -> seccomp
 *   -> report to the parent -> execve.
 * The worker gets 0-2, 3 (frames), 4 (stage-2 filter) and 5 (the loader
 * cue, or closed).
 * The child's lockdown is one list of named steps (sandbox/box-child.c,
 * sandbox/steps.h); the root filesystem is sandbox/rootfs.c, the id maps
 * sandbox/ids.c.  Any failure after clone is sent to the parent with the
 * step's name and the child _exits(78).  No file-level state: box_spawn is
 * re-entrant.
 */
#ifndef CHIDORI_SANDBOX_BOX_H
#define CHIDORI_SANDBOX_BOX_H

#include <stdbool.h>
#include <sys/types.h>

#include "common/err.h"
#include "sandbox/seccomp.h"

enum box_layer {
        LAYER_USERNS,
        LAYER_PIDNS,
        LAYER_MNTNS,   /* mount ns + minimal read-only root */
        LAYER_NETNS,
        LAYER_IPCNS,
        LAYER_UTSNS,
        LAYER_CGROUPNS,
        LAYER_CAPS,
        LAYER_LANDLOCK,
        LAYER_SECCOMP,
        LAYER_RLIMITS,
        LAYER_CGROUP,  /* the cgroup resource ceiling (memory, pids, cpu): applied by the launcher */
        LAYER_MAX
};

const char *box_layer_name(enum box_layer l);
/* "net,landlock": the names of the layers in `mask`, comma-separated (the
 * inverse of box_parse_layers).  snprintf semantics. */
size_t box_layers_format(unsigned mask, char *buf, size_t len);
/* Parse "net,landlock" into a bitmask; -1 with err naming the bad word. */
int box_parse_layers(const char *list, unsigned *ret_mask, struct err **err);

struct box_bind {
        const char *src;  /* host path */
        const char *dst;  /* path inside (defaults to src) */
        bool rw;
        bool idmap;       /* read-only too, id-mapped as a writable one is (root: on-disk 0 is the
                           * box's root), so a 0700 folder of root's can be read (the bundle box) */
};

struct box_opts {
        bool worker;                   /* engine worker: fd 3 frames, fd 4 stage-2 filter */
        const char *program;           /* absolute host path, bound read-only at the same path */
        char *const *argv;
        char *const *envp;             /* the fixed minimal environment */
        const struct box_bind *binds;
        size_t nbinds;
        const char *cwd;               /* the program's working directory in the box, NULL = / */
        bool no_etc;                   /* not a program: none of /etc's user and zone files (the bundle box) */
        int fd0, fd1, fd2;             /* become 0, 1, 2 in the box */
        int frame_fd;                  /* worker: becomes fd 3 (frames); other programs: fd 3 if >= 0 */
        int stage2_fd;                 /* worker: becomes fd 4 */
        /* worker: becomes fd 5 if >= 0 (set it: 0 is a descriptor), the
         * write end of the loader cue: chidori-worker closes fd 5 first thing
         * in main(), once the dynamic loader has mapped and relocated the
         * engine's libraries (monitor_early_wait_loaded). */
        int loaded_fd;
        const struct seccomp_prog *filter; /* stage 1 (worker) or launch filter; NULL if disabled */
        unsigned disable;              /* layers turned off (--unsafe-disable), bitmask of 1<<LAYER_* */
        bool require;                  /* fail closed when a core layer cannot be applied */
        long nofile;                   /* RLIMIT_NOFILE (default 256) */
        long cpu_secs;                 /* RLIMIT_CPU, 0 = unset */
        long fsize;                    /* RLIMIT_FSIZE bytes, 0 = unset */
        long nproc;                    /* RLIMIT_NPROC, 0 = unset: pids without a cgroup, set
                                        * only in the box's own user namespace (per box there) */
        bool nproc_required;           /* no user namespace for it: fail (BOX_E_LAYER), not skip */
        int cgroup_fd;                 /* v2 leaf for CLONE_INTO_CGROUP, or -1 */
        /* v1 (or v2 without CLONE_INTO_CGROUP): place the child before it
         * does anything; the child then enters its cgroup namespace, so the
         * namespace is rooted at its leaf. */
        int (*attach)(void *arg, pid_t pid, struct err **err);
        void *attach_arg;
};

struct box {
        pid_t pid;
        int pidfd;
        int notify_fd;                 /* seccomp user-notification listener, or -1 */
        unsigned applied;              /* bitmask of 1<<LAYER_* */
        int landlock_abi;
        bool nproc_applied;            /* RLIMIT_NPROC was set (box_opts.nproc) */
        char skipped[LAYER_MAX][120];  /* why a layer was not applied ("" if applied) */
        char notes[256];               /* for the banner: e.g. a --bind left without an id map */
};

/* Start the program in a new box.  On success the child is running (it has
 * exec'd) and *ret owns pidfd and notify_fd.  Error codes: BOX_E_LAYER when a
 * required layer is unavailable (the message names it), BOX_E_SETUP for any
 * other failure. */
enum { BOX_E_LAYER = 1, BOX_E_SETUP, BOX_E_EXEC };
int box_spawn(const struct box_opts *o, struct box *ret, struct err **err);
void box_close(struct box *b);  /* closes fds; does not kill or reap */

/* The Isolation: banner text for what was applied.  cgroup: the ceiling
 * fragment ("cgroup1 memory.limit_in_bytes=512M pids.max=64"); extra: e.g.
 * the JIT posture. */
void box_describe(const struct box *b, const char *cgroup, const char *extra, char *buf, size_t len);

/* Handle one seccomp notification: returns the syscall number that was
 * blocked (>= 0), or -1 if nothing could be read. */
int box_notify_read(int notify_fd);

#endif
