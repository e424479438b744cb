/* privhelper/deleg.c — the supervisor's delegated cgroup (deleg.h). */
#define _GNU_SOURCE
#include "privhelper/deleg.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "chan/chan.h"
#include "common/cleanup.h"
#include "sandbox/cgroup/cgroup-internal.h"

#define USED_CTLS (CTL_BIT(CGROUP_CTL_MEMORY) | CTL_BIT(CGROUP_CTL_PIDS) | CTL_BIT(CGROUP_CTL_CPU))

static struct hier as_hier(const struct deleg *d, size_t i)
{
        return (struct hier){ .ctls = d->h[i].ctls, .v2 = d->h[i].v2, .mount = d->h[i].mount,
                              .parent_cg = d->h[i].parent_cg, .parent_fs = d->h[i].parent_fs, .launcher_fd = -1 };
}

/* Earlier helpers' (and monitors') folders whose process is gone. */
static void remove_stale(const struct deleg *d, size_t i, int pfd, uint64_t pidns)
{
        int dfd = fcntl(pfd, F_DUPFD_CLOEXEC, 0);
        DIR *dir = dfd >= 0 ? fdopendir(dfd) : NULL;
        if (!dir) {
                if (dfd >= 0)
                        close(dfd);
                return;
        }
        struct hier hi = as_hier(d, i);
        struct dirent *de;
        while ((de = readdir(dir))) {
                pid_t pid;
                uint64_t start, ns, now;
                if (de->d_type != DT_DIR || !cg_parse_launcher_name(de->d_name, &pid, &start, &ns) || ns != pidns)
                        continue;
                int r = cg_pid_starttime(pid, &now);
                if (r == -ENOENT || (r == 0 && now != start))
                        (void)cg_remove_tree(&hi, pfd, hi.parent_cg, de->d_name, hi.v2, CG_DRAIN_MS);
        }
        closedir(dir);
}

/* v2: the controllers chidori uses enabled below the parent; a parent that
 * holds this process moves it into a leaf first (no internal processes). */
static void enable_v2(int pfd)
{
        _cleanup_free_ char *avail = NULL;
        if (cg_read_at(pfd, "cgroup.controllers", &avail) < 0)
                return;
        char *nl = strchr(avail, '\n'); /* the last word ends with it: "cpu memory pids\n" */
        if (nl)
                *nl = '\0';
        char buf[64] = "";
        size_t len = 0;
        for (int c = 0; c < CGROUP_CTL_MAX; c++)
                if ((USED_CTLS & CTL_BIT(c)) && cg_has_word(avail, cgroup_ctl_name(c), ' '))
                        len += (size_t)snprintf(buf + len, sizeof(buf) - len, "%s+%s", len ? " " : "",
                                                cgroup_ctl_name(c));
        if (!len || cg_write_at(pfd, "cgroup.subtree_control", buf) != -EBUSY)
                return;
        if (mkdirat(pfd, CG_LAUNCHER_LEAF, 0755) < 0 && errno != EEXIST)
                return;
        _cleanup_close_ int lfd = openat(pfd, CG_LAUNCHER_LEAF, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        char pid[24];
        snprintf(pid, sizeof(pid), "%d", (int)getpid());
        if (lfd >= 0 && cg_write_at(lfd, "cgroup.procs", pid) == 0)
                (void)cg_write_at(pfd, "cgroup.subtree_control", buf);
}

static int make_one(struct deleg *d, size_t i, pid_t pid, uid_t uid, gid_t gid, uint64_t pidns, struct err **err)
{
        _cleanup_close_ int pfd = open(d->h[i].parent_fs, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (pfd < 0)
                return err_set(err, errno, "open %s", d->h[i].parent_fs);
        remove_stale(d, i, pfd, pidns);
        if (d->h[i].v2)
                enable_v2(pfd);
        if (mkdirat(pfd, d->name, 0755) < 0)
                return err_set(err, errno, "mkdir %s/%s", d->h[i].parent_fs, d->name);
        _cleanup_close_ int fd = openat(pfd, d->name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0 || fchown(fd, uid, gid) < 0)
                return err_set(err, errno, "give %s/%s to uid %u", d->h[i].parent_fs, d->name, (unsigned)uid);
        static const char *const files[] = { "cgroup.procs", "tasks", "cgroup.subtree_control", "cgroup.threads" };
        for (size_t k = 0; k < sizeof(files) / sizeof(files[0]); k++)
                if (fchownat(fd, files[k], uid, gid, 0) < 0 && errno != ENOENT)
                        return err_set(err, errno, "give %s/%s/%s to uid %u", d->h[i].parent_fs, d->name, files[k],
                                       (unsigned)uid);
        char text[24];
        snprintf(text, sizeof(text), "%d", (int)pid);
        int r = cg_write_at(fd, "cgroup.procs", text);
        if (r == -EINVAL && !d->h[i].v2 && (d->h[i].ctls & CTL_BIT(CGROUP_CTL_CPU)) &&
            (sched_getscheduler(pid) == SCHED_FIFO || sched_getscheduler(pid) == SCHED_RR))
                return err_set(err, -r, "move the supervisor into %s/%s: a realtime-scheduled process cannot join a "
                               "cgroup v1 cpu folder whose cpu.rt_runtime_us is 0; run chidori with a normal "
                               "scheduling policy (not chrt -f/-r), or CHIDORI_PRIVSEP=0", d->h[i].parent_fs, d->name);
        if (r < 0)
                return err_set(err, -r, "move the supervisor into %s/%s", d->h[i].parent_fs, d->name);
        return 0;
}

/* The cgroup path the operator's --cgroup-parent names in a hierarchy of
 * version v2, as the supervisor's own detection reads it
 * (sandbox/cgroup/detect.c): a filesystem path under a cgroup mount is
 * taken relative to that mount (NULL: it names a hierarchy of the other
 * version), anything else is a cgroup path. */
static char *override_cg(const struct cg_mount *m, size_t nm, const char *override, bool v2)
{
        const struct cg_mount *best = NULL;
        size_t best_len = 0;
        for (size_t i = 0; i < nm; i++) {
                size_t ml = strlen(m[i].mount);
                if (ml > best_len && strncmp(override, m[i].mount, ml) == 0 &&
                    (override[ml] == '/' || override[ml] == '\0')) {
                        best = &m[i];
                        best_len = ml;
                }
        }
        if (!best)
                return strdup(override);
        if (best->v2 != v2)
                return NULL;
        const char *rel = override + best_len, *root = strcmp(best->root, "/") == 0 ? "" : best->root;
        char *r = NULL;
        return asprintf(&r, "%s%s", root, *rel ? rel : (*root ? "" : "/")) < 0 ? NULL : r;
}

int deleg_create(struct deleg *d, const char *override, pid_t pid, uid_t uid, gid_t gid, struct err **err)
{
        memset(d, 0, sizeof(*d));
        uint64_t start;
        struct stat st;
        if (cg_pid_starttime(0, &start) < 0 || stat("/proc/self/ns/pid", &st) < 0)
                return err_set(err, errno, "read /proc/self");
        snprintf(d->name, sizeof(d->name), CG_PREFIX "%d-%" PRIu64 "-%" PRIu64, (int)getpid(), start,
                 (uint64_t)st.st_ino);
        _cleanup_free_ char *mi = NULL, *self = NULL;
        if (cg_read_at(AT_FDCWD, "/proc/self/mountinfo", &mi) < 0 || cg_read_at(AT_FDCWD, "/proc/self/cgroup", &self) < 0)
                return err_set(err, errno, "read /proc/self/mountinfo and cgroup");
        struct cg_mount *m = NULL;
        size_t nm = 0;
        if (cg_parse_mountinfo(mi, &m, &nm) < 0)
                return err_set(err, ENOMEM, "parse /proc/self/mountinfo");
        int rc = 0;
        for (size_t k = 0; k < nm && d->n < DELEG_MAX && rc == 0; k++) {
                if (!m[k].v2 && !(m[k].ctls & USED_CTLS))
                        continue;
                const char *ctl = NULL;
                for (int c = 0; !m[k].v2 && c < CGROUP_CTL_MAX && !ctl; c++)
                        if (m[k].ctls & USED_CTLS & CTL_BIT(c))
                                ctl = cgroup_ctl_name(c);
                _cleanup_free_ char *own = NULL, *fs = NULL;
                if (override) {
                        if (!(own = override_cg(m, nm, override, m[k].v2)))
                                continue;
                } else if (cg_proc_cgroup_path(self, ctl, &own, NULL) < 0) {
                        continue;
                }
                struct stat ps;
                if (!own || cg_resolve(m[k].mount, m[k].root, own, &fs) < 0 || stat(fs, &ps) < 0 || !S_ISDIR(ps.st_mode))
                        continue; /* not in this hierarchy: the supervisor's detection says what is missing */
                bool seen = false; /* co-mounted controllers: one hierarchy */
                for (size_t j = 0; j < d->n; j++)
                        seen |= strcmp(d->h[j].mount, m[k].mount) == 0;
                if (seen)
                        continue;
                size_t i = d->n;
                d->h[i].v2 = m[k].v2;
                d->h[i].ctls = m[k].ctls;
                d->h[i].mount = strdup(m[k].mount);
                d->h[i].parent_cg = take_ptr(&own);
                d->h[i].parent_fs = take_ptr(&fs);
                d->n++;
                if (!d->h[i].mount)
                        rc = err_set(err, ENOMEM, "cgroup");
                else
                        rc = make_one(d, i, pid, uid, gid, (uint64_t)st.st_ino, err);
        }
        cg_mounts_free(m, nm);
        if (rc < 0)
                deleg_remove(d);
        return rc;
}

void deleg_remove(struct deleg *d)
{
        for (size_t i = 0; i < d->n; i++) {
                int pfd = open(d->h[i].parent_fs, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                if (pfd >= 0) {
                        struct hier hi = as_hier(d, i);
                        (void)cg_remove_tree(&hi, pfd, hi.parent_cg, d->name, hi.v2, CG_DRAIN_MS);
                        close(pfd);
                }
                free(d->h[i].mount);
                free(d->h[i].parent_cg);
                free(d->h[i].parent_fs);
        }
        d->n = 0;
}

/* The blob's strings: the name, the count, then per hierarchy v2, ctls,
 * mount, parent_cg, parent_fs. */
int deleg_save(const struct deleg *d, int *ret_fd, struct err **err)
{
        const char *strs[2 + 5 * DELEG_MAX];
        char num[1 + 2 * DELEG_MAX][24];
        size_t n = 0;
        strs[n++] = d->name;
        snprintf(num[0], sizeof(num[0]), "%zu", d->n);
        strs[n++] = num[0];
        for (size_t i = 0; i < d->n; i++) {
                strs[n++] = d->h[i].v2 ? "1" : "0";
                snprintf(num[1 + i], sizeof(num[1 + i]), "%u", d->h[i].ctls);
                strs[n++] = num[1 + i];
                strs[n++] = d->h[i].mount;
                strs[n++] = d->h[i].parent_cg;
                strs[n++] = d->h[i].parent_fs;
        }
        if (chan_blob_create("deleg", strs, n, ret_fd, err) < 0)
                return -1;
        if (fcntl(*ret_fd, F_SETFD, 0) < 0) {
                close(*ret_fd);
                return err_set(err, errno, "keep the delegated cgroup's description across the exec");
        }
        return 0;
}

int deleg_load(struct deleg *d, int fd, struct err **err)
{
        memset(d, 0, sizeof(*d));
        struct chan_blob_hdr hdr;
        struct chan_blob b = { 0 };
        if (pread(fd, &hdr, sizeof(hdr), 0) != (ssize_t)sizeof(hdr))
                return err_set(err, errno, "read the delegated cgroup's description");
        if (chan_blob_map(fd, hdr.nstrings, &b, err) < 0)
                return -1;
        int rc = 0;
        char *end = NULL;
        unsigned long n = b.nstrings >= 2 ? strtoul(b.strs[1], &end, 10) : 0;
        if (b.nstrings < 2 || !end || *end || n > DELEG_MAX || b.nstrings != 2 + 5 * n ||
            strlen(b.strs[0]) >= sizeof(d->name)) {
                rc = err_set(err, EINVAL, "the delegated cgroup's description is malformed");
                goto out;
        }
        snprintf(d->name, sizeof(d->name), "%s", b.strs[0]);
        for (size_t i = 0; i < n; i++) {
                const char *const *f = b.strs + 2 + 5 * i;
                d->h[i].v2 = strcmp(f[0], "1") == 0;
                d->h[i].ctls = (unsigned)strtoul(f[1], NULL, 10);
                d->h[i].mount = strdup(f[2]);
                d->h[i].parent_cg = strdup(f[3]);
                d->h[i].parent_fs = strdup(f[4]);
                d->n++;
                if (!d->h[i].mount || !d->h[i].parent_cg || !d->h[i].parent_fs) {
                        rc = err_set(err, ENOMEM, "the delegated cgroup's description");
                        goto out;
                }
        }
out:
        chan_blob_unmap(&b);
        return rc;
}

