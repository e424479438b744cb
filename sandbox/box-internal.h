/* sandbox/box-internal.h — what the parts of the box share: the child's
 * context (no file-level state: box_spawn is re-entrant), its report to the
 * parent, the root filesystem (rootfs.c), the id maps (ids.c) and the
 * child's lockdown steps (box-child.c). */
#ifndef CHIDORI_SANDBOX_BOX_INTERNAL_H
#define CHIDORI_SANDBOX_BOX_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "common/err.h"
#include "sandbox/box.h"

#define BOX_MAX_BINDS 64
#define LAYER_BIT(l) (1u << (l))

/* child -> parent, over the setup socket (SEQPACKET): once before exec
 * (ok, with the seccomp listener as SCM_RIGHTS), again only if exec failed. */
struct box_report {
        int ok;                        /* 1: about to exec; 0: failed */
        int code;                      /* BOX_E_* when !ok */
        int errnum;
        unsigned applied;
        int landlock_abi;
        int nproc_applied;
        char skipped[LAYER_MAX][120];
        char step[48];                 /* the lockdown step that failed */
        char msg[512];
};

struct box_child {
        const struct box_opts *o;
        unsigned ns_applied;           /* namespaces clone3 created */
        pid_t parent;                  /* getppid() as the child saw it (0 across a pid ns) */
        bool late_cgroupns;            /* enter the cgroup ns after attach() placed us */
        int sync_fd;                   /* the child's end of the setup socket */
        int program_fd;                /* O_PATH, opened before becoming root of the user ns */
        int bind_fds[BOX_MAX_BINDS];   /* O_PATH of each --bind source, likewise */
        int bind_idmap[BOX_MAX_BINDS]; /* id-mapped trees made by the parent (ids.c), or -1 */
        int program_tree;              /* the program, a tree from the privileged helper, or -1 */
        int listener;                  /* the seccomp notification fd, or -1 */
        int missing_ns;                /* --require-sandbox and this namespace could not be made, or -1 */
        struct box_report rep;
};

/* A layer could not be applied: 0 and recorded in rep.skipped (the start
 * goes on), or -1 with err (code BOX_E_LAYER) when it is a core layer and
 * the start requires it. */
int box_layer_skip(struct box_child *c, enum box_layer l, bool core, struct err **err, const char *fmt, ...)
        __attribute__((format(printf, 5, 6)));

/* rootfs.c: the tmpfs root, the binds, the private /dev, the fresh /proc,
 * pivot_root, the old root detached, the new root read-only. */
void rootfs_open_sources(struct box_child *c);
int rootfs_setup(struct box_child *c, struct err **err);

/* ids.c: the box's uid/gid maps (root: 0 inside is 65534 outside; a user:
 * itself), and root's rw --bind folders as id-mapped trees. */
int ids_write_maps(pid_t pid, struct err **err);
int ids_idmap_binds(const struct box_opts *o, int bind_idmap[BOX_MAX_BINDS], struct box *b, struct err **err);
void ids_close_idmap_binds(int bind_idmap[BOX_MAX_BINDS]);
/* Under the privileged helper (privhelper/proto.h): every bind and the
 * program as trees it made (the supervisor's uid may not reach them). */
int ids_helper_trees(const struct box_opts *o, struct box_child *c, struct box *b, struct err **err);

/* box-child.c: the child's lockdown (a list of named steps), the report,
 * execve.  Never returns. */
__attribute__((noreturn)) void box_child_main(struct box_child *c);

#endif
