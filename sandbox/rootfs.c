/* sandbox/rootfs.c — the box's root filesystem, built in the child inside
 * its mount namespace: a tmpfs root with read-only binds of what programs
 * need, the --bind folders (id-mapped trees when the parent made them), a
 * private /dev, a fresh /proc, pivot_root, the old root detached, the new
 * root read-only.  See docs/sandbox.md. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "sandbox/box-internal.h"
#include "sandbox/idmap.h"
#include "sandbox/rootfs.h"

/* Bind sources the box's own uid may not be able to reach (the program and
 * --bind folders, e.g. under a 0700 /root), opened with the launcher's
 * credentials before the child becomes root of its user namespace; bound
 * through /proc/self/fd afterwards. */
void rootfs_open_sources(struct box_child *c)
{
        const struct box_opts *o = c->o;
        c->program_fd = open(o->program, O_PATH | O_CLOEXEC);
        for (size_t i = 0; i < o->nbinds && i < BOX_MAX_BINDS; i++)
                c->bind_fds[i] = open(o->binds[i].src, O_PATH | O_CLOEXEC);
}

static int parent_dir(const char *path, struct err **err)
{
        char buf[4096];
        snprintf(buf, sizeof(buf), "%s", path);
        char *s = strrchr(buf, '/');
        if (s && s != buf) {
                *s = '\0';
                return mkdir_parents(buf, 0755, err);
        }
        return 0;
}

/* Bind host `src` (seen under /oldroot, or through fd) at `dst` in the new root. */
int rootfs_bind(const char *src, int fd, const char *dst, bool rw, bool dev, struct err **err)
{
        char from[4096];
        int w = fd >= 0 ? snprintf(from, sizeof(from), "/oldroot/proc/self/fd/%d", fd)
                        : snprintf(from, sizeof(from), "/oldroot%s", src);
        if (w >= (int)sizeof(from))
                return err_set(err, ENAMETOOLONG, "bind %s", src);
        struct stat st;
        if ((fd >= 0 ? fstat(fd, &st) : lstat(from, &st)) < 0) {
                if (errno == ENOENT)
                        return 0; /* e.g. /lib64 on a system without it */
                return err_set(err, errno, "bind source %s", src);
        }
        if (parent_dir(dst, err) < 0)
                return -1;
        if (S_ISLNK(st.st_mode)) {
                /* /lib -> usr/lib on merged-/usr systems: recreate the link. */
                char target[4096];
                ssize_t n = readlink(from, target, sizeof(target) - 1);
                if (n < 0)
                        return err_set(err, errno, "readlink %s", src);
                target[n] = '\0';
                if (symlink(target, dst) < 0 && errno != EEXIST)
                        return err_set(err, errno, "symlink %s", dst);
                return 0;
        }
        if (S_ISDIR(st.st_mode)) {
                if (mkdir_parents(dst, 0755, err) < 0)
                        return -1;
        } else {
                int mp = open(dst, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
                if (mp < 0 && errno != EEXIST)
                        return err_set(err, errno, "create mount point %s", dst);
                if (mp >= 0)
                        close(mp);
        }
        if (mount(from, dst, NULL, MS_BIND | MS_REC, NULL) < 0)
                return err_set(err, errno, "bind %s on %s", src, dst);
        /* A writable bind is never executable: nothing the box writes can
         * be run (Landlock's read-only rule on / would otherwise grant it). */
        unsigned long fl = MS_BIND | MS_REMOUNT | MS_NOSUID | (rw ? MS_NOEXEC : MS_RDONLY) | (dev ? 0 : MS_NODEV);
        /* Keep the flags the source mount has: inside a user namespace the
         * kernel locks them, and a remount that drops one fails. */
        struct statvfs sv;
        if (statvfs(dst, &sv) == 0) {
                if (sv.f_flag & ST_NOEXEC)
                        fl |= MS_NOEXEC;
                if (sv.f_flag & ST_NODEV)
                        fl |= MS_NODEV;
                if (sv.f_flag & ST_RDONLY)
                        fl |= MS_RDONLY;
                if (sv.f_flag & ST_NOATIME)
                        fl |= MS_NOATIME;
                if (sv.f_flag & ST_NODIRATIME)
                        fl |= MS_NODIRATIME;
                if (sv.f_flag & ST_RELATIME)
                        fl |= MS_RELATIME;
        }
        if (mount(NULL, dst, NULL, fl, NULL) < 0)
                return err_set(err, errno, "remount %s read-only", dst);
        return 0;
}

static int bind_one(const char *src, const char *dst, bool rw, bool dev, struct err **err)
{
        return rootfs_bind(src, -1, dst, rw, dev, err);
}

/* The tmpfs that becomes / and the pivot into it. */
int rootfs_new_root(struct err **err)
{
        if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
                return err_set(err, errno, "make / private");
        if (mount("chidori", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=1m,nr_inodes=4096") < 0)
                return err_set(err, errno, "mount the new root (tmpfs)");
        if (chdir("/tmp") < 0 || mkdir("oldroot", 0700) < 0)
                return err_set(err, errno, "prepare the new root");
        if (syscall(SYS_pivot_root, ".", "oldroot") < 0)
                return err_set(err, errno, "pivot_root");
        if (chdir("/") < 0)
                return err_set(err, errno, "chdir /");
        return 0;
}

/* What every program needs to load, the program, the --bind folders. */
static int binds(struct box_child *c, struct err **err)
{
        const struct box_opts *o = c->o;
        static const char *const sys[] = { "/usr", "/lib", "/lib64", "/lib32", "/libx32", "/bin", "/sbin",
                                           "/etc/ld.so.cache" };
        for (size_t i = 0; i < ARRAY_SIZE(sys); i++) {
                if (o->worker && (strcmp(sys[i], "/bin") == 0 || strcmp(sys[i], "/sbin") == 0))
                        continue; /* the worker execs nothing */
                if (bind_one(sys[i], sys[i], false, false, err) < 0)
                        return -1;
        }
        if (!o->worker && !o->no_etc) {
                static const char *const etc[] = { "/etc/passwd", "/etc/group", "/etc/nsswitch.conf",
                                                   "/etc/localtime" };
                for (size_t i = 0; i < ARRAY_SIZE(etc); i++)
                        if (bind_one(etc[i], etc[i], false, false, err) < 0)
                                return -1;
        }
        for (size_t i = 0; i < o->nbinds; i++) {
                const char *dst = o->binds[i].dst ? o->binds[i].dst : o->binds[i].src;
                if (i < BOX_MAX_BINDS && c->bind_idmap[i] >= 0) {
                        if (idmap_attach(c->bind_idmap[i], dst, err) < 0)
                                return err_wrap(err, "bind %s on %s (id-mapped)", o->binds[i].src, dst);
                        c->bind_idmap[i] = (close(c->bind_idmap[i]), -1);
                } else if (rootfs_bind(o->binds[i].src, i < BOX_MAX_BINDS ? c->bind_fds[i] : -1, dst, o->binds[i].rw,
                                   false, err) < 0) {
                        return -1;
                }
        }
        /* The program itself, unless a bind above already shows it; after
         * the --bind folders, which would hide it if it lies in one (a
         * symlink there, under the privileged helper, points elsewhere). */
        struct stat pst;
        if (stat(o->program, &pst) < 0 && c->program_tree >= 0) {
                if (idmap_attach(c->program_tree, o->program, err) < 0)
                        return err_wrap(err, "bind the program %s", o->program);
                c->program_tree = (close(c->program_tree), -1);
        } else if (stat(o->program, &pst) < 0 &&
                   rootfs_bind(o->program, c->program_fd, o->program, false, false, err) < 0) {
                return -1;
        }
        return 0;
}

/* A private /dev with the five harmless devices and nothing else. */
int rootfs_dev(struct err **err)
{
        if (mkdir_parents("/dev", 0755, err) < 0)
                return -1;
        static const char *const devs[] = { "/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom" };
        for (size_t i = 0; i < ARRAY_SIZE(devs); i++)
                if (bind_one(devs[i], devs[i], false, true, err) < 0)
                        return -1;
        if (symlink("/proc/self/fd", "/dev/fd") < 0 || symlink("/proc/self/fd/0", "/dev/stdin") < 0 ||
            symlink("/proc/self/fd/1", "/dev/stdout") < 0 || symlink("/proc/self/fd/2", "/dev/stderr") < 0)
                return err_set(err, errno, "create /dev links");
        return 0;
}

/* JSC reads /proc/self/maps at start: a fresh procfs of the box's own pid
 * namespace, showing only processes and nothing of the host. */
int rootfs_proc(bool own_pidns, struct err **err)
{
        if (mkdir_parents("/proc", 0555, err) < 0)
                return -1;
        if (!own_pidns) /* --unsafe-disable=pid: only a pid ns we own gets a procfs: the host's, read-only */
                return bind_one("/proc", "/proc", false, false, err);
        if (mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, "hidepid=invisible,subset=pid") < 0)
                return err_set(err, errno, "mount a fresh /proc%s", errno != EPERM ? "" : /* docs/pod.md */
                               " (the /proc of this container has paths masked by its runtime, e.g. Kubernetes "
                               "procMount: Default; give it procMount: Unmasked, with hostUsers: false; see docs/pod.md)");
        return 0;
}

int rootfs_finish(struct err **err)
{
        if (umount2("/oldroot", MNT_DETACH) < 0 || rmdir("/oldroot") < 0)
                return err_set(err, errno, "detach the old root");
        if (mount(NULL, "/", NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV, NULL) < 0)
                return err_set(err, errno, "remount the new root read-only");
        return 0;
}

int rootfs_setup(struct box_child *c, struct err **err)
{
        if (rootfs_new_root(err) < 0 || binds(c, err) < 0 || rootfs_dev(err) < 0 ||
            rootfs_proc(c->ns_applied & LAYER_BIT(LAYER_PIDNS), err) < 0)
                return -1;
        return rootfs_finish(err);
}
