#define _GNU_SOURCE
/* sandbox/cgroup/run.c — one leaf per run: create with limits, attach, kill, read the
 * counters, destroy. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "sandbox/cgroup/cgroup-internal.h"

static bool valid_id(const char *id)
{
        size_t n = strlen(id);
        if (n == 0 || n > CG_RUN_ID_MAX || id[0] == '.')
                return false;
        for (const char *p = id; *p; p++)
                if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
                      (*p >= '0' && *p <= '9') || *p == '_' || *p == '-' || *p == '.'))
                        return false;
        return true;
}

static const struct hier *hier_of(const struct cgroup_run *r, enum cgroup_ctl c)
{
        int i = r->h->ctl_hier[c];
        return i >= 0 && r->leaf_fd[i] >= 0 ? &r->h->hier[i] : NULL;
}

static int leaf_of(const struct cgroup_run *r, enum cgroup_ctl c)
{
        int i = r->h->ctl_hier[c];
        return i >= 0 ? r->leaf_fd[i] : -1;
}

static int set(struct cgroup_run *r, enum cgroup_ctl c, const char *file, const char *val,
               struct err **err)
{
        int e = cg_write_at(leaf_of(r, c), file, val);
        if (e < 0)
                return err_setc(err, CGROUP_E_IO, -e, "write %s = %s in %s/%s", file, val,
                                hier_of(r, c)->launcher_cg, r->name);
        return 0;
}

static int limits_v2(struct cgroup_run *r, const struct cgroup_limits *lim, struct err **err)
{
        char buf[64];
        int e;
        if (r->enabled & CTL_BIT(CGROUP_CTL_MEMORY)) {
                if (lim->memory_bytes) {
                        snprintf(buf, sizeof(buf), "%" PRIu64, lim->memory_bytes);
                        if (set(r, CGROUP_CTL_MEMORY, "memory.max", buf, err) < 0)
                                return -1;
                        (void)cg_read_u64_at(leaf_of(r, CGROUP_CTL_MEMORY), "memory.max",
                                             &r->memory_limit);
                }
                /* absent without swap accounting (CONFIG_SWAP off, swapaccount=0) */
                e = cg_write_at(leaf_of(r, CGROUP_CTL_MEMORY), "memory.swap.max", "0");
                if (e < 0 && e != -ENOENT)
                        return err_setc(err, CGROUP_E_IO, -e, "write memory.swap.max = 0");
                r->swap_limited = e == 0;
                /* one OOM kill takes the whole run down: no half-dead agent (4.19+) */
                e = cg_write_at(leaf_of(r, CGROUP_CTL_MEMORY), "memory.oom.group", "1");
                if (e < 0 && e != -ENOENT)
                        return err_setc(err, CGROUP_E_IO, -e, "write memory.oom.group = 1");
        }
        if (lim->pids_max) {
                snprintf(buf, sizeof(buf), "%" PRIu64, lim->pids_max);
                if (set(r, CGROUP_CTL_PIDS, "pids.max", buf, err) < 0)
                        return -1;
                r->pids_limit = lim->pids_max;
        }
        if (lim->cpus > 0) {
                long quota = (long)(lim->cpus * CG_CPU_PERIOD_US + 0.5);
                if (quota < 1000)
                        quota = 1000; /* the kernel's minimum: 1 ms */
                snprintf(buf, sizeof(buf), "%ld %u", quota, CG_CPU_PERIOD_US);
                if (set(r, CGROUP_CTL_CPU, "cpu.max", buf, err) < 0)
                        return -1;
        }
        return 0;
}

static int limits_v1(struct cgroup_run *r, const struct cgroup_limits *lim, struct err **err)
{
        char buf[64];
        int mfd = leaf_of(r, CGROUP_CTL_MEMORY), e;
        /* the OOM killer stays on: a stalled run would hold its memory until
         * the deadline (the child inherits oom_kill_disable from the parent) */
        e = cg_write_at(mfd, "memory.oom_control", "0");
        if (e < 0 && e != -ENOENT)
                return err_setc(err, CGROUP_E_IO, -e, "write memory.oom_control = 0");
        if (lim->memory_bytes) {
                snprintf(buf, sizeof(buf), "%" PRIu64, lim->memory_bytes);
                if (set(r, CGROUP_CTL_MEMORY, "memory.limit_in_bytes", buf, err) < 0)
                        return -1;
                (void)cg_read_u64_at(mfd, "memory.limit_in_bytes", &r->memory_limit);
                /* memory+swap at the same value = no swap.  Must follow
                 * limit_in_bytes (memsw >= limit).  Absent or EINVAL when swap
                 * accounting is off: then at least ask reclaim not to swap. */
                snprintf(buf, sizeof(buf), "%" PRIu64, r->memory_limit);
                e = cg_write_at(mfd, "memory.memsw.limit_in_bytes", buf);
                if (e < 0 && e != -ENOENT && e != -EINVAL)
                        return err_setc(err, CGROUP_E_IO, -e, "write memory.memsw.limit_in_bytes");
                r->swap_limited = e == 0;
                if (!r->swap_limited)
                        (void)cg_write_at(mfd, "memory.swappiness", "0");
        }
        if (lim->pids_max) {
                snprintf(buf, sizeof(buf), "%" PRIu64, lim->pids_max);
                if (set(r, CGROUP_CTL_PIDS, "pids.max", buf, err) < 0)
                        return -1;
                r->pids_limit = lim->pids_max;
        }
        if (lim->cpus > 0) {
                long quota = (long)(lim->cpus * CG_CPU_PERIOD_US + 0.5);
                if (quota < 1000)
                        quota = 1000;
                snprintf(buf, sizeof(buf), "%u", CG_CPU_PERIOD_US);
                if (set(r, CGROUP_CTL_CPU, "cpu.cfs_period_us", buf, err) < 0)
                        return -1;
                snprintf(buf, sizeof(buf), "%ld", quota);
                if (set(r, CGROUP_CTL_CPU, "cpu.cfs_quota_us", buf, err) < 0)
                        return -1;
        }
        return 0;
}

static void run_free(struct cgroup_run *r)
{
        for (int i = 0; i < CGROUP_CTL_MAX; i++) {
                if (r->leaf_fd[i] >= 0)
                        close(r->leaf_fd[i]);
                if (r->box_fd[i] >= 0)
                        close(r->box_fd[i]);
                if (r->parent_fd[i] >= 0)
                        close(r->parent_fd[i]);
                free(r->leaf_cg[i]);
                free(r->parent_cg[i]);
        }
        free(r);
}

/* Where run r's node is made in hierarchy i: below its parent run's node,
 * or in the launcher's directory. */
static int dir_fd(const struct cgroup_run *r, size_t i)
{
        return r->parent_fd[i] >= 0 ? r->parent_fd[i] : r->h->hier[i].launcher_fd;
}

static const char *dir_cg(const struct cgroup_run *r, size_t i)
{
        return r->parent_cg[i] ? r->parent_cg[i] : r->h->hier[i].launcher_cg;
}

/* The run is a node: its limits and counters are on <run>, the box lives in
 * <run>/box, and what the run starts outside the box (nested runs, tools)
 * goes in <run>/<child> (cgroup_run_child_create) — all under one budget.
 * On v2 the node passes its controllers down (no internal processes: the
 * node itself holds none). */
static int make_box_leaf(struct cgroup_run *r, size_t i, struct err **err)
{
        const struct hier *hi = &r->h->hier[i];
        if (hi->v2 && r->enabled) {
                int e = cg_enable_at(r->leaf_fd[i], r->enabled);
                if (e < 0)
                        return err_setc(err, CGROUP_E_IO, -e, "enable controllers in %s/cgroup.subtree_control",
                                        r->leaf_cg[i]);
        }
        if (mkdirat(r->leaf_fd[i], CG_BOX_LEAF, 0755) < 0)
                return err_setc(err, CGROUP_E_IO, errno, "mkdir %s/%s", r->leaf_cg[i], CG_BOX_LEAF);
        r->box_fd[i] = openat(r->leaf_fd[i], CG_BOX_LEAF, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (r->box_fd[i] < 0)
                return err_setc(err, CGROUP_E_IO, errno, "open %s/%s", r->leaf_cg[i], CG_BOX_LEAF);
        return 0;
}

static int run_create(struct cgroup_host *h, const struct cgroup_run *parent, const char *run_id,
                      const struct cgroup_limits *lim, struct cgroup_run **ret, struct err **err)
{
        static const struct cgroup_limits none = { 0 };
        if (!lim)
                lim = &none;
        if (!run_id || !valid_id(run_id))
                return err_setc(err, CGROUP_E_INVALID, 0,
                                "bad run id '%s' (1-%d of A-Z a-z 0-9 _ . -, not starting with '.')",
                                run_id ? run_id : "", CG_RUN_ID_MAX);
        if (!h || h->version == 0)
                return err_setc(err, CGROUP_E_UNAVAILABLE, 0, "no usable cgroup (%s)",
                                cgroup_host_reason(h));
        const struct {
                bool asked;
                enum cgroup_ctl c;
        } need[] = {
                { lim->memory_bytes > 0, CGROUP_CTL_MEMORY },
                { lim->pids_max > 0, CGROUP_CTL_PIDS },
                { lim->cpus > 0, CGROUP_CTL_CPU },
        };
        for (size_t k = 0; k < ARRAY_SIZE(need); k++)
                if (need[k].asked && h->ctl_hier[need[k].c] < 0)
                        return err_setc(err, CGROUP_E_CONTROLLER, 0,
                                        "cgroup %s controller not usable: %s",
                                        cgroup_ctl_name(need[k].c),
                                        h->ctl_why[need[k].c] ? h->ctl_why[need[k].c] : "?");
        if (cgroup_host_prepare(h, lim, err) < 0)
                return err_wrap(err, "prepare cgroups");

        struct cgroup_run *r = calloc(1, sizeof(*r));
        if (!r)
                return err_set(err, ENOMEM, "cgroup run");
        r->h = h;
        for (int i = 0; i < CGROUP_CTL_MAX; i++)
                r->leaf_fd[i] = r->box_fd[i] = r->parent_fd[i] = -1;
        for (size_t i = 0; parent && i < h->nhier; i++) {
                if (parent->leaf_fd[i] < 0)
                        continue; /* the parent has no node there: the launcher's directory */
                r->parent_fd[i] = fcntl(parent->leaf_fd[i], F_DUPFD_CLOEXEC, 3);
                r->parent_cg[i] = strdup(parent->leaf_cg[i]);
                if (r->parent_fd[i] < 0 || !r->parent_cg[i]) {
                        err_set(err, errno ? errno : ENOMEM, "cgroup run below %s", parent->leaf_cg[i]);
                        run_free(r);
                        return -1;
                }
        }
        pthread_mutex_lock(&h->lock);
        r->enabled = h->enabled;
        pthread_mutex_unlock(&h->lock);
        snprintf(r->name, sizeof(r->name), CG_RUN_PREFIX "%s", run_id);
        unsigned want = cg_want(h, lim);
        for (size_t i = 0; i < h->nhier; i++) {
                const struct hier *hi = &h->hier[i];
                if (!cg_hier_used(hi, want))
                        continue;
                if (mkdirat(dir_fd(r, i), r->name, 0755) < 0) {
                        int e = errno;
                        err_setc(err, e == EEXIST ? CGROUP_E_EXISTS : CGROUP_E_IO, e,
                                 "mkdir %s/%s", dir_cg(r, i), r->name);
                        goto fail;
                }
                r->leaf_fd[i] = openat(dir_fd(r, i), r->name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                if (r->leaf_fd[i] < 0) {
                        err_setc(err, CGROUP_E_IO, errno, "open %s/%s", dir_cg(r, i), r->name);
                        (void)unlinkat(dir_fd(r, i), r->name, AT_REMOVEDIR);
                        goto fail;
                }
                if (asprintf(&r->leaf_cg[i], "%s/%s", dir_cg(r, i), r->name) < 0) {
                        r->leaf_cg[i] = NULL;
                        err_set(err, ENOMEM, "cgroup path");
                        goto fail;
                }
        }
        if ((h->version == 2 ? limits_v2(r, lim, err) : limits_v1(r, lim, err)) < 0) {
                err_wrap(err, "limits for run '%s'", run_id);
                goto fail;
        }
        for (size_t i = 0; i < h->nhier; i++)
                if (r->leaf_fd[i] >= 0 && make_box_leaf(r, i, err) < 0) {
                        err_wrap(err, "the box's cgroup for run '%s'", run_id);
                        goto fail;
                }
        *ret = r;
        return 0;
fail:
        (void)cgroup_run_destroy(r, NULL);
        return -1;
}

int cgroup_run_create(struct cgroup_host *h, const char *run_id, const struct cgroup_limits *lim,
                      struct cgroup_run **ret, struct err **err)
{
        return run_create(h, NULL, run_id, lim, ret, err);
}

int cgroup_run_create_below(struct cgroup_run *parent, const char *run_id, const struct cgroup_limits *lim,
                            struct cgroup_run **ret, struct err **err)
{
        if (!parent)
                return err_setc(err, CGROUP_E_INVALID, 0, "no run to place run '%s' below", run_id ? run_id : "");
        return run_create(parent->h, parent, run_id, lim, ret, err);
}

int cgroup_run_clone_fd(const struct cgroup_run *r)
{
        return r && r->h->version == 2 ? r->box_fd[0] : -1;
}

int cgroup_run_attach(struct cgroup_run *r, pid_t pid, struct err **err)
{
        char buf[24];
        snprintf(buf, sizeof(buf), "%d", (int)pid);
        for (size_t i = 0; i < r->h->nhier; i++) {
                if (r->box_fd[i] < 0)
                        continue;
                int e = cg_write_at(r->box_fd[i], "cgroup.procs", buf);
                if (e < 0)
                        return err_setc(err, CGROUP_E_IO, -e, "attach pid %d to %s/%s", (int)pid,
                                        r->leaf_cg[i], CG_BOX_LEAF);
        }
        return 0;
}

int cgroup_run_kill(struct cgroup_run *r, struct err **err)
{
        int first = 0;
        for (size_t i = 0; i < r->h->nhier; i++) {
                const struct hier *hi = &r->h->hier[i];
                int e;
                if (r->leaf_fd[i] < 0)
                        continue;
                if (hi->v2 && !r->h->no_kill_file) {
                        e = cg_write_at(r->leaf_fd[i], "cgroup.kill", "1");
                        if (e == 0)
                                continue;
                        if (e != -ENOENT && e != -EOPNOTSUPP) {
                                if (!first)
                                        first = e;
                                continue;
                        }
                }
                e = cg_kill_drain(hi, r->leaf_fd[i], r->leaf_cg[i], false, CG_DRAIN_MS);
                if (e < 0 && !first)
                        first = e;
        }
        if (first)
                return err_setc(err, first == -EBUSY ? CGROUP_E_BUSY : CGROUP_E_IO, -first,
                                "kill the processes of cgroup %s", r->name);
        return 0;
}

int cgroup_run_stats(struct cgroup_run *r, struct cgroup_stats *ret, struct err **err)
{
        struct cgroup_stats st = {
                .memory_limit = r->memory_limit,
                .pids_limit = r->pids_limit,
                .swap_limited = r->swap_limited,
        };
        int mfd = leaf_of(r, CGROUP_CTL_MEMORY), pfd = leaf_of(r, CGROUP_CTL_PIDS);
        uint64_t v;
        int e;
        if (r->h->version == 2 && mfd >= 0 && (r->enabled & CTL_BIT(CGROUP_CTL_MEMORY))) {
                _cleanup_free_ char *ev = NULL;
                e = cg_read_at(mfd, "memory.events", &ev);
                if (e < 0)
                        return err_setc(err, CGROUP_E_IO, -e, "read %s/memory.events",
                                        r->leaf_cg[0]);
                st.oom_known = true;
                if (cg_kv_get(ev, "oom_kill", &v) == 0)
                        st.oom_kills = v;
                if (cg_kv_get(ev, "oom_group_kill", &v) == 0 && v > 0)
                        st.oom_killed = true;
                st.oom_killed = st.oom_killed || st.oom_kills > 0;
                if (cg_kv_get(ev, "max", &v) == 0)
                        st.memory_limit_hit = v > 0;
                e = cg_read_u64_at(mfd, "memory.peak", &st.peak_bytes); /* 5.19+ */
                st.peak_known = e == 0;
        } else if (r->h->version == 1 && mfd >= 0) {
                _cleanup_free_ char *oc = NULL;
                e = cg_read_at(mfd, "memory.oom_control", &oc);
                if (e < 0)
                        return err_setc(err, CGROUP_E_IO, -e, "read %s/memory.oom_control",
                                        r->leaf_cg[r->h->ctl_hier[CGROUP_CTL_MEMORY]]);
                if (cg_kv_get(oc, "oom_kill", &v) == 0) { /* 4.13+ */
                        st.oom_known = true;
                        st.oom_kills = v;
                        /* v1 counts a kill in the victim's own cgroup, not
                         * in the node whose limit was hit: add the box's
                         * (6.18).  A victim deeper down (a nested run) is
                         * that run's to report. */
                        _cleanup_free_ char *boc = NULL;
                        int bfd = r->box_fd[r->h->ctl_hier[CGROUP_CTL_MEMORY]];
                        if (bfd >= 0 && cg_read_at(bfd, "memory.oom_control", &boc) == 0 &&
                            cg_kv_get(boc, "oom_kill", &v) == 0)
                                st.oom_kills += v;
                        st.oom_killed = st.oom_kills > 0;
                }
                /* with memsw limited, the memsw counter is charged first and
                 * is the one that fails */
                if (cg_read_u64_at(mfd, "memory.failcnt", &v) == 0 && v > 0)
                        st.memory_limit_hit = true;
                if (cg_read_u64_at(mfd, "memory.memsw.failcnt", &v) == 0 && v > 0)
                        st.memory_limit_hit = true;
                e = cg_read_u64_at(mfd, "memory.max_usage_in_bytes", &st.peak_bytes);
                st.peak_known = e == 0;
                /* 6.18: with memsw limited neither failcnt moves (the memsw
                 * counter fails first and does not count failures on v1) */
                if (st.oom_kills > 0 ||
                    (st.peak_known && r->memory_limit && st.peak_bytes >= r->memory_limit))
                        st.memory_limit_hit = true;
        }
        bool pids_on = r->h->version == 1 || (r->enabled & CTL_BIT(CGROUP_CTL_PIDS));
        if (pfd >= 0 && pids_on) {
                _cleanup_free_ char *ev = NULL;
                e = cg_read_at(pfd, "pids.events", &ev);
                if (e < 0 && e != -ENOENT)
                        return err_setc(err, CGROUP_E_IO, -e, "read pids.events");
                if (e == 0 && cg_kv_get(ev, "max", &v) == 0)
                        st.pids_limit_hit = v > 0;
                /* Kernels that count the event in the forking task's own
                 * cgroup (6.18 on v1): the box's. */
                _cleanup_free_ char *bev = NULL;
                int bfd = r->box_fd[r->h->ctl_hier[CGROUP_CTL_PIDS]];
                if (!st.pids_limit_hit && bfd >= 0 && cg_read_at(bfd, "pids.events", &bev) == 0 &&
                    cg_kv_get(bev, "max", &v) == 0)
                        st.pids_limit_hit = v > 0;
        }
        *ret = st;
        return 0;
}

int cgroup_run_destroy(struct cgroup_run *r, struct err **err)
{
        if (!r)
                return 0;
        int first = 0;
        const char *where = "";
        for (size_t i = 0; i < r->h->nhier; i++) {
                const struct hier *hi = &r->h->hier[i];
                if (r->leaf_fd[i] < 0)
                        continue;
                close(r->leaf_fd[i]);
                r->leaf_fd[i] = -1;
                if (r->box_fd[i] >= 0)
                        close(r->box_fd[i]);
                r->box_fd[i] = -1;
                int e = cg_remove_tree(hi, dir_fd(r, i), dir_cg(r, i), r->name, !r->h->no_kill_file, CG_DRAIN_MS);
                if (e < 0 && !first) {
                        first = e;
                        where = dir_cg(r, i);
                }
        }
        if (first)
                err_setc(err, first == -EBUSY ? CGROUP_E_BUSY : CGROUP_E_IO, -first,
                         "remove cgroup %s/%s", where, r->name);
        run_free(r);
        return first ? -1 : 0;
}

/* ---- the run tree ---- */

int cgroup_run_child_create(struct cgroup_run *r, const char *name, char **ret_enter, struct err **err)
{
        if (!r || !name || !valid_id(name))
                return err_setc(err, CGROUP_E_INVALID, 0, "bad child cgroup name '%s'", name ? name : "");
        const struct cgroup_host *h = r->h;
        char *enter = NULL;
        size_t len = 0;
        unsigned made = 0; /* hierarchies where we created <name>: only those are undone */
        for (size_t i = 0; i < h->nhier; i++) {
                const struct hier *hi = &h->hier[i];
                if (r->leaf_fd[i] < 0)
                        continue;
                if (mkdirat(r->leaf_fd[i], name, 0755) < 0) {
                        int e = errno;
                        err_setc(err, e == EEXIST ? CGROUP_E_EXISTS : CGROUP_E_IO, e, "mkdir %s/%s",
                                 r->leaf_cg[i], name);
                        goto fail;
                }
                made |= 1u << i;
                if (hi->v2) {
                        /* The child's process goes one level down, so that it
                         * may enable controllers in <name> for its own runs. */
                        _cleanup_close_ int cfd = openat(r->leaf_fd[i], name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                        if (cfd < 0 || mkdirat(cfd, CG_LAUNCHER_LEAF, 0755) < 0) {
                                err_setc(err, CGROUP_E_IO, errno, "mkdir %s/%s/%s", r->leaf_cg[i], name,
                                         CG_LAUNCHER_LEAF);
                                goto fail;
                        }
                }
                char *line = NULL;
                int n = asprintf(&line, "%s%s/%s/%s/%s%s", len ? "\n" : "", hi->parent_fs, h->launcher, r->name,
                                 name, hi->v2 ? "/" CG_LAUNCHER_LEAF : "");
                char *grown = n < 0 ? NULL : realloc(enter, len + (size_t)n + 1);
                if (!grown) {
                        free(line);
                        err_set(err, ENOMEM, "child cgroup");
                        goto fail;
                }
                enter = grown;
                memcpy(enter + len, line, (size_t)n + 1);
                len += (size_t)n;
                free(line);
        }
        if (!enter) {
                err_setc(err, CGROUP_E_UNAVAILABLE, 0, "the run has no cgroup");
                goto fail;
        }
        *ret_enter = enter;
        return 0;
fail:
        free(enter);
        for (size_t i = 0; i < h->nhier; i++)
                if (made & (1u << i))
                        (void)cg_remove_tree(&h->hier[i], r->leaf_fd[i], r->leaf_cg[i], name, !h->no_kill_file,
                                             CG_DRAIN_MS);
        return -1;
}

int cgroup_run_child_remove(struct cgroup_run *r, const char *name, struct err **err)
{
        if (!r || !name || !valid_id(name))
                return 0;
        int first = 0;
        for (size_t i = 0; i < r->h->nhier; i++) {
                if (r->leaf_fd[i] < 0)
                        continue;
                int e = cg_remove_tree(&r->h->hier[i], r->leaf_fd[i], r->leaf_cg[i], name, !r->h->no_kill_file,
                                       CG_DRAIN_MS);
                if (e < 0 && !first)
                        first = e;
        }
        if (first)
                return err_setc(err, first == -EBUSY ? CGROUP_E_BUSY : CGROUP_E_IO, -first, "remove cgroup %s/%s",
                                r->name, name);
        return 0;
}

int cgroup_enter(const char *enter, struct err **err)
{
        if (!enter || !*enter)
                return err_setc(err, CGROUP_E_INVALID, 0, "no cgroup to enter");
        for (const char *p = enter; *p;) {
                const char *nl = strchr(p, '\n');
                size_t n = nl ? (size_t)(nl - p) : strlen(p);
                _cleanup_free_ char *dir = strndup(p, n);
                if (!dir)
                        return err_set(err, ENOMEM, "enter cgroup");
                struct statfs sfs;
                if (dir[0] != '/' || statfs(dir, &sfs) < 0 ||
                    (sfs.f_type != CGROUP_SUPER_MAGIC && sfs.f_type != CGROUP2_SUPER_MAGIC))
                        return err_setc(err, CGROUP_E_INVALID, dir[0] == '/' ? errno : 0,
                                        "'%s' is not a directory on a cgroup filesystem", dir);
                _cleanup_close_ int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                int e = fd < 0 ? -errno : cg_write_at(fd, "cgroup.procs", "0");
                if (e < 0)
                        return err_setc(err, CGROUP_E_IO, -e, "move this process into %s", dir);
                p += n;
                if (*p == '\n')
                        p++;
        }
        return 0;
}
