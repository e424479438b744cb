#define _GNU_SOURCE
/* sandbox/cgroup/host.c — the per-launcher directory: creating it (and enabling the
 * controllers on the way), removing it at exit, and removing the ones
 * crashed launchers left behind.
 *
 * Layout under the runs' parent P (own cgroup, or the override):
 *   P/chidori-<pid>-<starttime>-<pidns>/run-<id>   one leaf per run
 *   P/chidori-launcher                            v2 only, when P held the launcher
 * The pid namespace inode is part of the name because a pid means nothing in
 * another pid namespace: directories of other namespaces are never judged. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "sandbox/cgroup/cgroup-internal.h"

int cg_enable_at(int dirfd, unsigned mask)
{
        _cleanup_free_ char *cur = NULL;
        int r = cg_read_at(dirfd, "cgroup.subtree_control", &cur);
        if (r < 0)
                return r;
        char *nl = strchr(cur, '\n');
        if (nl)
                *nl = '\0';
        char buf[64] = "";
        size_t len = 0;
        for (int c = 0; c < CGROUP_CTL_MAX; c++) {
                const char *name = cgroup_ctl_name(c);
                if (!(mask & CTL_BIT(c)) || cg_has_word(cur, name, ' '))
                        continue;
                len += (size_t)snprintf(buf + len, sizeof(buf) - len, "%s+%s", len ? " " : "",
                                        name);
        }
        return len ? cg_write_at(dirfd, "cgroup.subtree_control", buf) : 0;
}

/* v2: enable in the parent; when it holds this launcher (and nothing else),
 * move the launcher into a leaf of its own first, as delegated container
 * managers do. */
static int enable_parent(struct cgroup_host *h, const struct hier *hi, int pfd, unsigned mask,
                         struct err **err)
{
        int r = cg_enable_at(pfd, mask);
        if (r == -EBUSY && h->parent_is_own && !h->parent_is_root && !h->moved) {
                if (mkdirat(pfd, CG_LAUNCHER_LEAF, 0755) < 0 && errno != EEXIST)
                        return err_setc(err, CGROUP_E_IO, errno, "mkdir %s/%s", hi->parent_fs,
                                        CG_LAUNCHER_LEAF);
                _cleanup_close_ int lfd = openat(pfd, CG_LAUNCHER_LEAF,
                                                 O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                if (lfd < 0)
                        return err_setc(err, CGROUP_E_IO, errno, "open %s/%s", hi->parent_fs,
                                        CG_LAUNCHER_LEAF);
                char pid[24];
                snprintf(pid, sizeof(pid), "%d", (int)getpid());
                r = cg_write_at(lfd, "cgroup.procs", pid);
                if (r < 0)
                        return err_setc(err, CGROUP_E_IO, -r, "move the launcher into %s/%s",
                                        hi->parent_fs, CG_LAUNCHER_LEAF);
                h->moved = true;
                r = cg_enable_at(pfd, mask);
        }
        if (r == -EBUSY)
                return err_setc(err, CGROUP_E_UNAVAILABLE, EBUSY,
                                "enable controllers in %s/cgroup.subtree_control: it holds "
                                "other processes (start chidori in a cgroup of its own, e.g. "
                                "systemd-run --scope -p Delegate=yes, or pass --cgroup-parent)",
                                hi->parent_fs);
        if (r < 0)
                return err_setc(err, CGROUP_E_IO, -r,
                                "enable controllers in %s/cgroup.subtree_control", hi->parent_fs);
        return 0;
}

unsigned cg_want(const struct cgroup_host *h, const struct cgroup_limits *lim)
{
        unsigned want = CTL_BIT(CGROUP_CTL_MEMORY);
        if (h->version == 2 || (lim && lim->pids_max))
                want |= CTL_BIT(CGROUP_CTL_PIDS);
        if (lim && lim->cpus > 0)
                want |= CTL_BIT(CGROUP_CTL_CPU);
        return want;
}

static int prepare_locked(struct cgroup_host *h, unsigned want, struct err **err)
{
        for (size_t i = 0; i < h->nhier; i++) {
                struct hier *hi = &h->hier[i];
                if (!cg_hier_used(hi, want))
                        continue;
                unsigned w = want & hi->ctls;
                bool need_enable = hi->v2 && (w & ~h->enabled);
                if (hi->launcher_fd >= 0 && !need_enable)
                        continue;
                _cleanup_close_ int pfd = open(hi->parent_fs, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                if (pfd < 0)
                        return err_setc(err, CGROUP_E_IO, errno, "open %s", hi->parent_fs);
                if (need_enable && enable_parent(h, hi, pfd, w, err) < 0)
                        return -1;
                if (hi->launcher_fd < 0) {
                        if (mkdirat(pfd, h->launcher, 0755) < 0 && errno != EEXIST)
                                return err_setc(err, CGROUP_E_IO, errno, "mkdir %s/%s",
                                                hi->parent_fs, h->launcher);
                        int fd = openat(pfd, h->launcher, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                        if (fd < 0)
                                return err_setc(err, CGROUP_E_IO, errno, "open %s/%s",
                                                hi->parent_fs, h->launcher);
                        free(hi->launcher_cg);
                        if (asprintf(&hi->launcher_cg, "%s/%s",
                                     strcmp(hi->parent_cg, "/") == 0 ? "" : hi->parent_cg,
                                     h->launcher) < 0) {
                                hi->launcher_cg = NULL;
                                close(fd);
                                return err_set(err, ENOMEM, "cgroup path");
                        }
                        hi->launcher_fd = fd;
                }
                if (need_enable) {
                        int r = cg_enable_at(hi->launcher_fd, w);
                        if (r < 0)
                                return err_setc(err, CGROUP_E_IO, -r,
                                                "enable controllers in %s/%s/cgroup.subtree_control",
                                                hi->parent_fs, h->launcher);
                        h->enabled |= w;
                }
        }
        return 0;
}

int cgroup_host_prepare(struct cgroup_host *h, const struct cgroup_limits *lim, struct err **err)
{
        if (!h || h->version == 0)
                return err_setc(err, CGROUP_E_UNAVAILABLE, 0, "no usable cgroup (%s)",
                                cgroup_host_reason(h));
        unsigned want = cg_want(h, lim);
        pthread_mutex_lock(&h->lock);
        int r = prepare_locked(h, want, err);
        pthread_mutex_unlock(&h->lock);
        return r;
}

void cgroup_host_free(struct cgroup_host *h)
{
        if (!h)
                return;
        for (size_t i = 0; i < h->nhier; i++) {
                struct hier *hi = &h->hier[i];
                if (hi->launcher_fd < 0)
                        continue;
                close(hi->launcher_fd);
                hi->launcher_fd = -1;
                _cleanup_close_ int pfd = open(hi->parent_fs, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                if (pfd >= 0)
                        (void)cg_remove_tree(hi, pfd, hi->parent_cg, h->launcher,
                                             !h->no_kill_file, CG_DRAIN_MS);
        }
        cg_host_release(h);
}

/* Is the launcher this directory names gone?  Unknown counts as alive. */
static bool is_stale(const struct cgroup_host *h, const char *name)
{
        pid_t pid;
        uint64_t start, pidns, now;
        if (!cg_parse_launcher_name(name, &pid, &start, &pidns))
                return false;
        if (strcmp(name, h->launcher) == 0 || pidns != h->pidns)
                return false;
        int r = cg_pid_starttime(pid, &now);
        if (r == -ENOENT)
                return true;              /* no such process */
        return r == 0 && now != start;    /* the pid was reused */
}

struct names {
        char **v;
        size_t n;
};

static bool names_has(const struct names *s, const char *name)
{
        for (size_t i = 0; i < s->n; i++)
                if (strcmp(s->v[i], name) == 0)
                        return true;
        return false;
}

static int names_add(struct names *s, const char *name)
{
        char **nv = realloc(s->v, (s->n + 1) * sizeof(*nv));
        if (!nv)
                return -ENOMEM;
        s->v = nv;
        if (!(s->v[s->n] = strdup(name)))
                return -ENOMEM;
        s->n++;
        return 0;
}

static void names_free(struct names *s)
{
        for (size_t i = 0; i < s->n; i++)
                free(s->v[i]);
        free(s->v);
}

int cgroup_cleanup_stale(struct cgroup_host *h, struct err **err)
{
        if (!h || h->version == 0)
                return 0;
        struct names removed = { 0 };
        int first_err = 0;
        char *failed = NULL;
        for (size_t i = 0; i < h->nhier; i++) {
                const struct hier *hi = &h->hier[i];
                int pfd = open(hi->parent_fs, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                if (pfd < 0)
                        continue;
                int dfd = fcntl(pfd, F_DUPFD_CLOEXEC, 0);
                DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
                if (!d) {
                        if (dfd >= 0)
                                close(dfd);
                        close(pfd);
                        continue;
                }
                struct dirent *de;
                while ((de = readdir(d))) {
                        if (de->d_type != DT_DIR || !is_stale(h, de->d_name))
                                continue;
                        int r = cg_remove_tree(hi, pfd, hi->parent_cg, de->d_name,
                                               !h->no_kill_file, CG_DRAIN_MS);
                        if (r < 0 && !first_err) {
                                first_err = -r;
                                if (asprintf(&failed, "%s/%s", hi->parent_fs, de->d_name) < 0)
                                        failed = NULL;
                        }
                        if (r == 0 && !names_has(&removed, de->d_name) &&
                            names_add(&removed, de->d_name) < 0 && !first_err)
                                first_err = ENOMEM;
                }
                closedir(d);
                close(pfd);
        }
        int n = (int)removed.n;
        names_free(&removed);
        if (first_err) {
                err_setc(err, first_err == EBUSY ? CGROUP_E_BUSY : CGROUP_E_IO, first_err,
                         "remove stale cgroup %s", failed ? failed : "");
                free(failed);
                return -1;
        }
        return n;
}
