/* sandbox/cgroup/cgroup-internal.h — state and helpers shared by the cgroup/ files and
 * by tests/unit/test_cgroup.c.  Nothing outside cgroup/ includes this. */
#ifndef CHIDORI_SANDBOX_CGROUP_INTERNAL_H
#define CHIDORI_SANDBOX_CGROUP_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "sandbox/cgroup/cgroup.h"

#define CG_PREFIX "chidori-"              /* per-launcher directories */
#define CG_LAUNCHER_LEAF "chidori-launcher" /* v2: where the launcher moves itself */
#define CG_RUN_PREFIX "run-"
#define CG_BOX_LEAF "box"                 /* <run>/box: the box's processes (the run is a node) */
#define CG_RUN_ID_MAX 64
#define CG_DRAIN_MS 5000                  /* how long destroy waits for exits */
#define CG_MAX_DEPTH 16                   /* recursion bound when walking a leaf */
#define CG_CPU_PERIOD_US 100000u

#define CTL_BIT(c) (1u << (c))

/* One hierarchy we place leaves in: the unified one on v2, one per
 * controller mount on v1 (two controllers co-mounted share one). */
struct hier {
        unsigned ctls;   /* CTL_BIT()s of the controllers it serves for us */
        bool v2;
        char *ctl_list;  /* v1: the controller list of its /proc/PID/cgroup line */
        char *mount;     /* mount point */
        char *parent_cg; /* the runs' parent as /proc/PID/cgroup shows paths */
        char *parent_fs; /* the same directory on the filesystem */
        char *launcher_cg; /* <parent_cg>/<launcher> */
        int launcher_fd; /* <parent>/<launcher>, -1 until prepared */
};

struct cgroup_host {
        int version;
        bool delegated;
        const char *reason; /* static string */
        char *detail;
        char *v2_note;
        char *v2_mount;
        struct hier hier[CGROUP_CTL_MAX];
        size_t nhier;
        int ctl_hier[CGROUP_CTL_MAX]; /* index into hier, -1 = not usable */
        char *ctl_why[CGROUP_CTL_MAX];
        char launcher[96];            /* chidori-<pid>-<starttime>-<pidns> */
        uint64_t pidns;
        /* v2 */
        bool parent_is_own;
        bool parent_is_root; /* the true root: exempt from no-internal-processes */
        bool launcher_move;  /* must move into <own>/chidori-launcher before enabling */
        bool moved;          /* it did */
        unsigned enabled;    /* controllers enabled in <launcher>/cgroup.subtree_control */
        /* tests */
        bool no_kill_file;   /* pretend cgroup.kill is missing (pre-5.14 path) */
        pthread_mutex_t lock;
};

struct cgroup_run {
        struct cgroup_host *h;
        char name[sizeof(CG_RUN_PREFIX) + CG_RUN_ID_MAX];
        int leaf_fd[CGROUP_CTL_MAX];   /* per h->hier index: the run's node (limits, stats) */
        char *leaf_cg[CGROUP_CTL_MAX]; /* per h->hier index: the node's cgroup path */
        int box_fd[CGROUP_CTL_MAX];    /* per h->hier index: <node>/box, where the box lives */
        /* A run below another's node (cgroup_run_create_below): that node,
         * per h->hier index (a copy of its fd, its path); -1/NULL: the
         * launcher's directory. */
        int parent_fd[CGROUP_CTL_MAX];
        char *parent_cg[CGROUP_CTL_MAX];
        unsigned enabled;              /* v2: controllers on in the leaf */
        uint64_t memory_limit;
        uint64_t pids_limit;
        bool swap_limited;
};

/* Detection with knobs the tests need: force_version 2 accepts a cgroup2
 * hierarchy without the memory controller (to test the v2 mechanics on a
 * hybrid host); 1 skips cgroup2. */
struct cg_detect_opts {
        const char *parent;
        int force_version; /* 0 = automatic */
};
int cg_host_detect_opts(const struct cg_detect_opts *o, struct cgroup_host **ret,
                        struct err **err);
void cg_hier_clear(struct hier *hi); /* frees the strings, does not close */
/* Free what detection allocated (detect.c); cgroup_host_free (host.c) first
 * removes the launcher directories, then calls it: host.c uses detect.c,
 * never the other way round. */
void cg_host_release(struct cgroup_host *h);

/* Controllers a run with these limits uses: memory always; v2 also pids
 * (cheap, and pids.events is read); v1 pids only with a pids limit; cpu only
 * with a CPU limit.  A hierarchy is used when it is cgroup2 or serves one. */
unsigned cg_want(const struct cgroup_host *h, const struct cgroup_limits *lim);
static inline bool cg_hier_used(const struct hier *hi, unsigned want)
{
        return hi->v2 || (hi->ctls & want);
}

/* Enable the controllers of mask in dirfd's cgroup.subtree_control (those
 * not enabled yet).  0 or -errno. */
int cg_enable_at(int dirfd, unsigned mask);

/* ---- util.c: files ------------------------------------------------------- */

/* Write s in one write(2) (cgroupfs wants one).  0 or -errno. */
int cg_write_at(int dirfd, const char *file, const char *s);
/* Read a whole small file, NUL-terminated, malloc'd.  0 or -errno. */
int cg_read_at(int dirfd, const char *file, char **ret);
int cg_read_u64_at(int dirfd, const char *file, uint64_t *ret); /* "max" -> UINT64_MAX */
/* Value of "key N" line in a flat-keyed file's text.  0, or -ENOENT. */
int cg_kv_get(const char *text, const char *key, uint64_t *ret);
bool cg_has_word(const char *list, const char *word, char sep);

/* ---- util.c: /proc ------------------------------------------------------- */

struct cg_mount {
        bool v2;
        unsigned ctls;  /* v1: CTL_BIT()s named in its super options */
        char *mount;
        char *root;
};
/* All cgroup/cgroup2 mounts in a mountinfo text, in order. */
int cg_parse_mountinfo(const char *text, struct cg_mount **ret, size_t *ret_n);
void cg_mounts_free(struct cg_mount *m, size_t n);

/* The path of the line of a /proc/PID/cgroup text: ctl NULL picks "0::",
 * else the v1 line whose controller list holds ctl.  When ret_list is given
 * it receives that line's controller list.  0 or -ENOENT. */
int cg_proc_cgroup_path(const char *text, const char *ctl, char **ret, char **ret_list);

/* The filesystem path of cgroup path cg on a mount with root `root`.
 * -EXDEV when cg lies outside the mount. */
int cg_resolve(const char *mount, const char *root, const char *cg, char **ret);

/* Field 22 of a /proc/PID/stat text (after the last ')').  0 or -EINVAL. */
int cg_stat_starttime(const char *stat_text, uint64_t *ret);
/* Start time of pid from /proc, 0 or -errno (-ENOENT when gone). */
int cg_pid_starttime(pid_t pid, uint64_t *ret);
/* "chidori-<pid>-<starttime>-<pidns>" with decimal numbers, nothing else. */
bool cg_parse_launcher_name(const char *name, pid_t *ret_pid, uint64_t *ret_start,
                            uint64_t *ret_pidns);

/* ---- kill.c -------------------------------------------------------------- */

/* SIGKILL every process listed in cgroup.procs of dirfd and of its
 * subdirectories, each checked (through a pidfd) to be inside cgroup path cg
 * of hierarchy hi.  Returns how many were listed, or -errno. */
int cg_kill_listed(const struct hier *hi, int dirfd, const char *cg);
/* Kill until nothing is listed in the subtree; on v2 write cgroup.kill
 * first when it exists.  0, or -errno / -EBUSY when not empty after ms. */
int cg_kill_drain(const struct hier *hi, int dirfd, const char *cg, bool use_kill_file,
                  int ms);
/* Kill, drain and rmdir <dirfd of parent>/<name> with everything below it. */
int cg_remove_tree(const struct hier *hi, int parent_fd, const char *parent_cg,
                   const char *name, bool use_kill_file, int ms);

#endif
