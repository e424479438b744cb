/* sandbox/box.c — the spawn path into the sandbox.  See box.h for the
 * lockdown order.  Parent side: clone3, id maps, cgroup attach, the child's
 * report.  Child side: everything up to execve; it never returns. */
#define _GNU_SOURCE
#include "sandbox/box.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/sched.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "sandbox/caps.h"
#include "sandbox/landlock.h"
#include "sandbox/netns/netns.h"

#define LAYER_BIT(l) (1u << (l))
#define NS_LAYERS                                                                                    \
        (LAYER_BIT(LAYER_USERNS) | LAYER_BIT(LAYER_PIDNS) | LAYER_BIT(LAYER_MNTNS) |                  \
         LAYER_BIT(LAYER_NETNS) | LAYER_BIT(LAYER_IPCNS) | LAYER_BIT(LAYER_UTSNS) |                   \
         LAYER_BIT(LAYER_CGROUPNS))

static const char *const layer_names[LAYER_MAX] = {
        [LAYER_USERNS] = "user",       [LAYER_PIDNS] = "pid",         [LAYER_MNTNS] = "mnt",
        [LAYER_NETNS] = "net",         [LAYER_IPCNS] = "ipc",         [LAYER_UTSNS] = "uts",
        [LAYER_CGROUPNS] = "cgroupns", [LAYER_CAPS] = "caps",         [LAYER_LANDLOCK] = "landlock",
        [LAYER_SECCOMP] = "seccomp",   [LAYER_RLIMITS] = "rlimits",   [LAYER_CGROUP] = "cgroup",
};

/* How the banner names the namespaces. */
static const char *const ns_display[] = {
        [LAYER_USERNS] = "user", [LAYER_PIDNS] = "pid", [LAYER_MNTNS] = "mnt",      [LAYER_NETNS] = "net",
        [LAYER_IPCNS] = "ipc",   [LAYER_UTSNS] = "uts", [LAYER_CGROUPNS] = "cgroup",
};

const char *box_layer_name(enum box_layer l)
{
        return (unsigned)l < LAYER_MAX ? layer_names[l] : "?";
}

size_t box_layers_format(unsigned mask, char *buf, size_t len)
{
        size_t n = 0;
        if (len)
                buf[0] = '\0';
        for (int l = 0; l < LAYER_MAX; l++)
                if (mask & (1u << l))
                        n += (size_t)snprintf(buf + (n < len ? n : len), n < len ? len - n : 0, "%s%s", n ? "," : "",
                                              layer_names[l]);
        return n;
}

int box_parse_layers(const char *list, unsigned *ret_mask, struct err **err)
{
        unsigned mask = 0;
        _cleanup_free_ char *dup = strdup(list);
        if (!dup)
                return err_set(err, ENOMEM, "parse layers");
        for (char *save = NULL, *w = strtok_r(dup, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
                int found = -1;
                for (int i = 0; i < LAYER_MAX; i++)
                        if (strcmp(w, layer_names[i]) == 0)
                                found = i;
                if (found < 0)
                        return err_set(err, 0,
                                       "unknown layer '%s' (expected user, pid, mnt, net, ipc, uts, cgroupns, caps, "
                                       "landlock, seccomp, rlimits or cgroup)",
                                       w);
                mask |= LAYER_BIT(found);
        }
        *ret_mask = mask;
        return 0;
}

/* ---- child -> parent report ---- */

struct report {
        int ok;                        /* 1: about to exec; 0: failed */
        int code;                      /* BOX_E_* when !ok */
        int errnum;
        unsigned applied;
        int landlock_abi;
        int nproc_applied;
        char skipped[LAYER_MAX][120];
        char msg[512];
};

static int sync_fd = -1; /* child side */

static void send_report(struct report *r, int pass_fd)
{
        struct iovec iov = { .iov_base = r, .iov_len = sizeof(*r) };
        union {
                char buf[CMSG_SPACE(sizeof(int))];
                struct cmsghdr align;
        } u;
        struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1 };
        if (pass_fd >= 0) {
                memset(&u, 0, sizeof(u));
                m.msg_control = u.buf;
                m.msg_controllen = sizeof(u.buf);
                struct cmsghdr *c = CMSG_FIRSTHDR(&m);
                c->cmsg_level = SOL_SOCKET;
                c->cmsg_type = SCM_RIGHTS;
                c->cmsg_len = CMSG_LEN(sizeof(int));
                memcpy(CMSG_DATA(c), &pass_fd, sizeof(int));
        }
        ssize_t n;
        while ((n = sendmsg(sync_fd, &m, MSG_NOSIGNAL)) < 0 && errno == EINTR)
                ;
        if (n < 0)
                _exit(78); /* the parent is gone: never run unsupervised */
}

static struct report rep; /* child's report, filled as layers apply */

__attribute__((noreturn, format(printf, 3, 4))) static void child_fail(int code, int errnum, const char *fmt, ...)
{
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(rep.msg, sizeof(rep.msg), fmt, ap);
        va_end(ap);
        if (errnum) {
                size_t n = strlen(rep.msg);
                snprintf(rep.msg + n, sizeof(rep.msg) - n, ": %s", strerror(errnum));
        }
        rep.ok = 0;
        rep.code = code;
        rep.errnum = errnum;
        send_report(&rep, -1);
        _exit(78);
}

/* A layer could not be applied: fatal when required, else recorded. */
static void layer_skip(const struct box_opts *o, enum box_layer l, bool core, const char *fmt, ...)
        __attribute__((format(printf, 4, 5)));
static void layer_skip(const struct box_opts *o, enum box_layer l, bool core, const char *fmt, ...)
{
        char why[120];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(why, sizeof(why), fmt, ap);
        va_end(ap);
        if (core && o->require)
                child_fail(BOX_E_LAYER, 0, "sandbox layer unavailable: %s (%s)", layer_names[l], why);
        snprintf(rep.skipped[l], sizeof(rep.skipped[l]), "%s", why);
        rep.applied &= ~LAYER_BIT(l);
}

/* ---- root filesystem (child) ---- */

static void mkdir_p(const char *path, mode_t mode)
{
        char buf[4096];
        if (snprintf(buf, sizeof(buf), "%s", path) >= (int)sizeof(buf))
                child_fail(BOX_E_SETUP, ENAMETOOLONG, "mkdir %s", path);
        for (char *p = buf + 1; *p; p++) {
                if (*p != '/')
                        continue;
                *p = '\0';
                if (mkdir(buf, mode) < 0 && errno != EEXIST)
                        child_fail(BOX_E_SETUP, errno, "mkdir %s", buf);
                *p = '/';
        }
        if (mkdir(buf, mode) < 0 && errno != EEXIST)
                child_fail(BOX_E_SETUP, errno, "mkdir %s", buf);
}

static void parent_dir(const char *path)
{
        char buf[4096];
        snprintf(buf, sizeof(buf), "%s", path);
        char *s = strrchr(buf, '/');
        if (s && s != buf) {
                *s = '\0';
                mkdir_p(buf, 0755);
        }
}

/* Bind host `src` (seen under /oldroot) at `dst` in the new root. */
/* Bind sources the box's own uid may not be able to reach (the program and
 * --bind folders, e.g. under a 0700 /root), opened with the launcher's
 * credentials before the child becomes root of its user namespace; bound
 * through /proc/self/fd afterwards. */
static int program_fd = -1;
static int bind_fds[64] = { [0 ... 63] = -1 };
/* Root's --bind folders as id-mapped mount trees (made by the parent before
 * clone, inherited): the box's root, 65534 outside, reads and writes them as
 * uid 0 on disk, like the caller.  -1: a plain bind. */
static int bind_idmap[64] = { [0 ... 63] = -1 };

static void open_sources(const struct box_opts *o)
{
        program_fd = open(o->program, O_PATH | O_CLOEXEC);
        for (size_t i = 0; i < o->nbinds && i < ARRAY_SIZE(bind_fds); i++)
                bind_fds[i] = open(o->binds[i].src, O_PATH | O_CLOEXEC);
}

static void bind_fd(const char *src, int fd, const char *dst, bool rw, bool dev);

static void bind_one(const char *src, const char *dst, bool rw, bool dev)
{
        bind_fd(src, -1, dst, rw, dev);
}

/* Put an id-mapped tree (nosuid, nodev, noexec already set) at dst. */
static void attach_tree(const char *src, int tree, const char *dst)
{
        struct stat st;
        if (fstat(tree, &st) < 0)
                child_fail(BOX_E_SETUP, errno, "bind source %s", src);
        parent_dir(dst);
        if (S_ISDIR(st.st_mode)) {
                mkdir_p(dst, 0755);
        } else {
                int mp = open(dst, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
                if (mp < 0 && errno != EEXIST)
                        child_fail(BOX_E_SETUP, errno, "create mount point %s", dst);
                if (mp >= 0)
                        close(mp);
        }
        if (move_mount(tree, "", AT_FDCWD, dst, MOVE_MOUNT_F_EMPTY_PATH) < 0)
                child_fail(BOX_E_SETUP, errno, "bind %s on %s (id-mapped)", src, dst);
        close(tree);
}

static void bind_fd(const char *src, int fd, const char *dst, bool rw, bool dev)
{
        char from[4096];
        int w = fd >= 0 ? snprintf(from, sizeof(from), "/oldroot/proc/self/fd/%d", fd)
                        : snprintf(from, sizeof(from), "/oldroot%s", src);
        if (w >= (int)sizeof(from))
                child_fail(BOX_E_SETUP, ENAMETOOLONG, "bind %s", src);
        struct stat st;
        if ((fd >= 0 ? fstat(fd, &st) : lstat(from, &st)) < 0) {
                if (errno == ENOENT)
                        return; /* e.g. /lib64 on a system without it */
                child_fail(BOX_E_SETUP, errno, "bind source %s", src);
        }
        parent_dir(dst);
        if (S_ISLNK(st.st_mode)) {
                /* /lib -> usr/lib on merged-/usr systems: recreate the link. */
                char target[4096];
                ssize_t n = readlink(from, target, sizeof(target) - 1);
                if (n < 0)
                        child_fail(BOX_E_SETUP, errno, "readlink %s", src);
                target[n] = '\0';
                if (symlink(target, dst) < 0 && errno != EEXIST)
                        child_fail(BOX_E_SETUP, errno, "symlink %s", dst);
                return;
        }
        if (S_ISDIR(st.st_mode)) {
                mkdir_p(dst, 0755);
        } else {
                int mp = open(dst, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
                if (mp < 0 && errno != EEXIST)
                        child_fail(BOX_E_SETUP, errno, "create mount point %s", dst);
                if (mp >= 0)
                        close(mp);
        }
        if (mount(from, dst, NULL, MS_BIND | MS_REC, NULL) < 0)
                child_fail(BOX_E_SETUP, errno, "bind %s on %s", src, dst);
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
                child_fail(BOX_E_SETUP, errno, "remount %s read-only", dst);
}

static void setup_rootfs(const struct box_opts *o, bool own_pidns)
{
        if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
                child_fail(BOX_E_SETUP, errno, "make / private");
        if (mount("chidori", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=1m,nr_inodes=4096") < 0)
                child_fail(BOX_E_SETUP, errno, "mount the new root (tmpfs)");
        if (chdir("/tmp") < 0 || mkdir("oldroot", 0700) < 0)
                child_fail(BOX_E_SETUP, errno, "prepare the new root");
        if (syscall(SYS_pivot_root, ".", "oldroot") < 0)
                child_fail(BOX_E_SETUP, errno, "pivot_root");
        if (chdir("/") < 0)
                child_fail(BOX_E_SETUP, errno, "chdir /");

        /* What every program needs to load: the system libraries. */
        static const char *const sys[] = { "/usr", "/lib", "/lib64", "/lib32", "/libx32", "/bin", "/sbin",
                                           "/etc/ld.so.cache" };
        for (size_t i = 0; i < ARRAY_SIZE(sys); i++) {
                if (o->worker && (strcmp(sys[i], "/bin") == 0 || strcmp(sys[i], "/sbin") == 0))
                        continue; /* the worker execs nothing */
                bind_one(sys[i], sys[i], false, false);
        }
        if (!o->worker) {
                static const char *const etc[] = { "/etc/passwd", "/etc/group", "/etc/nsswitch.conf",
                                                   "/etc/localtime" };
                for (size_t i = 0; i < ARRAY_SIZE(etc); i++)
                        bind_one(etc[i], etc[i], false, false);
        }
        /* The program itself, unless a bind above already shows it. */
        struct stat pst;
        if (stat(o->program, &pst) < 0)
                bind_fd(o->program, program_fd, o->program, false, false);
        for (size_t i = 0; i < o->nbinds; i++) {
                const char *dst = o->binds[i].dst ? o->binds[i].dst : o->binds[i].src;
                if (i < ARRAY_SIZE(bind_idmap) && bind_idmap[i] >= 0)
                        attach_tree(o->binds[i].src, bind_idmap[i], dst);
                else
                        bind_fd(o->binds[i].src, i < ARRAY_SIZE(bind_fds) ? bind_fds[i] : -1, dst, o->binds[i].rw,
                                false);
        }

        /* A private /dev with the five harmless devices and nothing else. */
        mkdir_p("/dev", 0755);
        static const char *const devs[] = { "/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom" };
        for (size_t i = 0; i < ARRAY_SIZE(devs); i++)
                bind_one(devs[i], devs[i], false, true);
        if (symlink("/proc/self/fd", "/dev/fd") < 0 || symlink("/proc/self/fd/0", "/dev/stdin") < 0 ||
            symlink("/proc/self/fd/1", "/dev/stdout") < 0 || symlink("/proc/self/fd/2", "/dev/stderr") < 0)
                child_fail(BOX_E_SETUP, errno, "create /dev links");

        /* JSC reads /proc/self/maps at start: a fresh procfs of the box's own
         * pid namespace, showing only processes and nothing of the host. */
        mkdir_p("/proc", 0555);
        if (!own_pidns) {
                /* --unsafe-disable=pid: a procfs can only be mounted for a pid
                 * namespace we own, so the host's is shown read-only. */
                bind_one("/proc", "/proc", false, false);
        } else if (mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, "hidepid=invisible,subset=pid") <
                   0) {
                child_fail(BOX_E_SETUP, errno, "mount a fresh /proc");
        }

        if (umount2("/oldroot", MNT_DETACH) < 0 || rmdir("/oldroot") < 0)
                child_fail(BOX_E_SETUP, errno, "detach the old root");
        if (mount(NULL, "/", NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV, NULL) < 0)
                child_fail(BOX_E_SETUP, errno, "remount the new root read-only");
}

/* ---- the child ---- */

static void set_rlimit(int res, rlim_t v, const char *name)
{
        struct rlimit rl = { v, v };
        if (setrlimit(res, &rl) < 0)
                child_fail(BOX_E_SETUP, errno, "setrlimit %s", name);
}

static void move_fd(int from, int to)
{
        if (from == to) {
                int fl = fcntl(from, F_GETFD);
                if (fl >= 0)
                        fcntl(from, F_SETFD, fl & ~FD_CLOEXEC);
                return;
        }
        if (dup2(from, to) < 0)
                child_fail(BOX_E_SETUP, errno, "dup2 %d -> %d", from, to);
}

__attribute__((noreturn)) static void child_main(const struct box_opts *o, unsigned ns_applied, pid_t parent,
                                                 bool late_cgroupns)
{
        rep.applied = ns_applied;
        /* Wait until the parent has written our id maps (and placed us in
         * the v1 cgroups). */
        char go;
        if (read(sync_fd, &go, 1) != 1)
                _exit(78);
        if (ns_applied & LAYER_BIT(LAYER_MNTNS))
                open_sources(o);
        if (ns_applied & LAYER_BIT(LAYER_USERNS)) {
                if (setresgid(0, 0, 0) < 0 || setresuid(0, 0, 0) < 0)
                        child_fail(BOX_E_SETUP, errno, "become root inside the user namespace");
        }
        if (late_cgroupns) {
                if (unshare(CLONE_NEWCGROUP) < 0)
                        layer_skip(o, LAYER_CGROUPNS, false, "unshare: %s", strerror(errno));
                else
                        rep.applied |= LAYER_BIT(LAYER_CGROUPNS);
        }
        if (ns_applied & LAYER_BIT(LAYER_MNTNS))
                setup_rootfs(o, ns_applied & LAYER_BIT(LAYER_PIDNS));
        if (ns_applied & LAYER_BIT(LAYER_UTSNS)) {
                if (sethostname("chidori", 7) < 0 || setdomainname("chidori", 7) < 0)
                        child_fail(BOX_E_SETUP, errno, "set the box's hostname");
        }
        if (ns_applied & LAYER_BIT(LAYER_NETNS)) {
                struct err *e = NULL;
                if (netns_lo_up(&e) < 0)
                        layer_skip(o, LAYER_NETNS, false, "empty, but lo is down: %s", err_msg(e));
                if (rep.skipped[LAYER_NETNS][0] == '\0')
                        rep.applied |= LAYER_BIT(LAYER_NETNS);
                err_free(e);
        }

        if (!(o->disable & LAYER_BIT(LAYER_RLIMITS))) {
                set_rlimit(RLIMIT_CORE, 0, "core");
                set_rlimit(RLIMIT_MEMLOCK, 0, "memlock");
                set_rlimit(RLIMIT_NOFILE, (rlim_t)(o->nofile > 0 ? o->nofile : 256), "nofile");
                if (o->cpu_secs > 0) {
                        /* SIGXCPU at the soft limit (ignored by a pid-ns
                         * init), SIGKILL one second later at the hard one:
                         * the parent tells it apart by the CPU time used. */
                        struct rlimit rl = { (rlim_t)o->cpu_secs, (rlim_t)o->cpu_secs + 1 };
                        if (setrlimit(RLIMIT_CPU, &rl) < 0)
                                child_fail(BOX_E_SETUP, errno, "setrlimit cpu");
                }
                if (o->fsize > 0)
                        set_rlimit(RLIMIT_FSIZE, (rlim_t)o->fsize, "fsize");
                /* pids without a cgroup: RLIMIT_NPROC counts the tasks of
                 * one uid in one user namespace (Linux >= 5.14), here the
                 * box's own, so it bounds this box alone. */
                if (o->nproc > 0 && (ns_applied & LAYER_BIT(LAYER_USERNS))) {
                        set_rlimit(RLIMIT_NPROC, (rlim_t)o->nproc, "nproc");
                        rep.nproc_applied = 1;
                } else if (o->nproc > 0 && o->nproc_required) {
                        child_fail(BOX_E_LAYER, 0,
                                   "sandbox layer unavailable: --pids %ld (no cgroup pids.max, and RLIMIT_NPROC "
                                   "bounds one box only inside its own user namespace: %s)",
                                   o->nproc, rep.skipped[LAYER_USERNS][0] ? rep.skipped[LAYER_USERNS] : "none");
                }
                rep.applied |= LAYER_BIT(LAYER_RLIMITS);
        } else {
                layer_skip(o, LAYER_RLIMITS, false, "disabled by --unsafe-disable");
        }

        /* No controlling terminal: TIOCSTI-style injection is impossible. */
        if (setsid() < 0)
                child_fail(BOX_E_SETUP, errno, "setsid");

        /* Descriptors: 0-2, then 3 (frames) and 4 (stage-2 filter) for the
         * worker; everything else closes at exec. */
        int keep = o->worker ? 5 : 3;
        int fds[5] = { o->fd0, o->fd1, o->fd2, o->frame_fd, o->stage2_fd };
        /* Move sources out of the way of their targets first. */
        for (int i = 0; i < keep; i++) {
                if (fds[i] >= 0 && fds[i] < keep && fds[i] != i) {
                        int d = fcntl(fds[i], F_DUPFD_CLOEXEC, 16);
                        if (d < 0)
                                child_fail(BOX_E_SETUP, errno, "dup");
                        for (int j = i; j < keep; j++)
                                if (fds[j] == fds[i] && j != i)
                                        fds[j] = d;
                        fds[i] = d;
                }
        }
        for (int i = 0; i < keep; i++) {
                if (fds[i] < 0)
                        close(i); /* nothing to pass here: never leak what was there */
                else
                        move_fd(fds[i], i);
        }
        if (syscall(SYS_close_range, keep, ~0U, CLOSE_RANGE_CLOEXEC) < 0)
                child_fail(BOX_E_SETUP, errno, "close inherited descriptors");

        struct err *e = NULL;
        if (caps_lock_process(parent, &e) < 0)
                child_fail(BOX_E_SETUP, 0, "%s", err_msg(e));
        if (!(o->disable & LAYER_BIT(LAYER_CAPS))) {
                if (caps_drop_all(&e) < 0)
                        child_fail(BOX_E_SETUP, 0, "%s", err_msg(e));
                rep.applied |= LAYER_BIT(LAYER_CAPS);
        } else {
                layer_skip(o, LAYER_CAPS, false, "disabled by --unsafe-disable");
        }

        /* caps_lock_process armed the parent-death signal (the box's pid 1
         * going takes its pid namespace along); across a pid namespace
         * getppid() cannot tell whether the launcher died before that, but
         * a launcher already gone has hung up the sync socket. */
        struct pollfd alive = { .fd = sync_fd, .events = POLLIN | POLLRDHUP };
        if (poll(&alive, 1, 0) > 0 && (alive.revents & (POLLHUP | POLLRDHUP)))
                _exit(78);

        if (!(o->disable & LAYER_BIT(LAYER_LANDLOCK))) {
                /* Read and execute beneath the box's root; write only into
                 * explicit --bind folders.  Without a mount namespace the
                 * "root" is the host's: then only the system folders. */
                const char *ro_box[] = { "/", NULL };
                const char *ro_host[] = { "/usr", "/lib", "/lib64", "/etc/ld.so.cache", "/dev/null", "/dev/urandom",
                                          "/proc/self", o->program, NULL };
                /* The harmless devices stay writable (programs write to
                 * /dev/null); binds marked rw follow. */
                const char *rw[20] = { "/dev/null", "/dev/zero", "/dev/full", NULL };
                size_t nrw = 3;
                for (size_t i = 0; i < o->nbinds && nrw < 19; i++)
                        if (o->binds[i].rw)
                                rw[nrw++] = o->binds[i].dst ? o->binds[i].dst : o->binds[i].src;
                struct landlock_result lr = { 0 };
                const char *const *ro = (rep.applied & LAYER_BIT(LAYER_MNTNS)) ? ro_box : ro_host;
                if (landlock_restrict(ro, rw, &lr, &e) < 0)
                        child_fail(BOX_E_SETUP, 0, "%s", err_msg(e));
                if (lr.abi == 0) {
                        char why[100];
                        landlock_abi(why, sizeof(why));
                        layer_skip(o, LAYER_LANDLOCK, true, "%s", why);
                } else {
                        rep.applied |= LAYER_BIT(LAYER_LANDLOCK);
                        rep.landlock_abi = lr.abi;
                }
        } else {
                layer_skip(o, LAYER_LANDLOCK, false, "disabled by --unsafe-disable");
        }

        int listener = -1;
        if (o->filter && !(o->disable & LAYER_BIT(LAYER_SECCOMP))) {
                struct sock_fprog prog = { .len = (unsigned short)o->filter->len, .filter = o->filter->insns };
                unsigned flags = o->filter->notify ? SECCOMP_FILTER_FLAG_NEW_LISTENER : 0;
                long r = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, flags, &prog);
                if (r < 0)
                        layer_skip(o, LAYER_SECCOMP, true, "seccomp(2) refused the filter: %s", strerror(errno));
                else {
                        rep.applied |= LAYER_BIT(LAYER_SECCOMP);
                        if (o->filter->notify)
                                listener = (int)r;
                }
        } else {
                layer_skip(o, LAYER_SECCOMP, false, "disabled by --unsafe-disable");
        }

        rep.ok = 1;
        send_report(&rep, listener);
        if (listener >= 0)
                close(listener);
        execve(o->program, o->argv, o->envp);
        child_fail(BOX_E_EXEC, errno, "execute %s", o->program);
}

/* ---- parent ---- */

static int write_id_map(pid_t pid, const char *file, const char *text, struct err **err)
{
        char path[64];
        snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, file);
        int fd = open(path, O_WRONLY | O_CLOEXEC);
        ssize_t n = (ssize_t)strlen(text);
        if (fd < 0 || write(fd, text, (size_t)n) != n) {
                int e = errno;
                if (fd >= 0)
                        close(fd);
                return err_set(err, e, "write %s", path);
        }
        close(fd);
        return 0;
}

/* A user namespace whose uid/gid 0 is 65534 outside, as the box's own is
 * when the launcher is root (decision 11): the id map of root's --bind
 * trees.  A short-lived child makes it; its namespace outlives it through
 * the fd.  Returns the fd, or -1 with err set. */
static int idmap_userns(struct err **err)
{
        int p[2];
        if (pipe2(p, O_CLOEXEC) < 0)
                return err_set(err, errno, "pipe");
        pid_t c = fork();
        if (c < 0) {
                close(p[0]), close(p[1]);
                return err_set(err, errno, "fork");
        }
        if (c == 0) {
                close(p[0]);
                char x = unshare(CLONE_NEWUSER) == 0 ? 'y' : 'n';
                if (write(p[1], &x, 1) != 1)
                        _exit(1);
                pause(); /* until the parent has the namespace and kills us */
                _exit(0);
        }
        close(p[1]);
        char x = 'n';
        ssize_t got = read(p[0], &x, 1);
        close(p[0]);
        int fd = -1;
        if (got == 1 && x == 'y' && write_id_map(c, "setgroups", "deny", err) == 0 &&
            write_id_map(c, "uid_map", "0 65534 1\n", err) == 0 &&
            write_id_map(c, "gid_map", "0 65534 1\n", err) == 0) {
                char path[64];
                snprintf(path, sizeof(path), "/proc/%d/ns/user", (int)c);
                fd = open(path, O_RDONLY | O_CLOEXEC);
                if (fd < 0)
                        err_set(err, errno, "open %s", path);
        } else if (!(err && *err)) {
                err_set(err, 0, "the helper could not create a user namespace");
        }
        kill(c, SIGKILL);
        while (waitpid(c, NULL, 0) < 0 && errno == EINTR)
                ;
        return fd;
}

/* Root's --bind sources as id-mapped trees (bind_idmap), each nosuid, nodev
 * and noexec, as a plain rw bind is.  A filesystem that cannot be id-mapped
 * (tmpfs before Linux 6.3, ramfs, procfs...) keeps the plain bind and a note
 * for the banner, or fails the start under --require-sandbox. */
static int idmap_binds(const struct box_opts *o, struct box *b, struct err **err)
{
        bool any = false;
        for (size_t i = 0; i < o->nbinds && i < ARRAY_SIZE(bind_idmap); i++)
                any |= o->binds[i].rw;
        if (!any || getuid() != 0 || (o->disable & (LAYER_BIT(LAYER_USERNS) | LAYER_BIT(LAYER_MNTNS))))
                return 0;
        int ns = idmap_userns(err);
        if (ns < 0)
                return err_wrap(err, "id-mapped --bind");
        size_t plain = 0;
        const char *first = NULL;
        char why[160] = "";
        for (size_t i = 0; i < o->nbinds && i < ARRAY_SIZE(bind_idmap); i++) {
                if (!o->binds[i].rw)
                        continue;
                int t = open_tree(AT_FDCWD, o->binds[i].src, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE);
                struct mount_attr a = {
                        .attr_set = MOUNT_ATTR_IDMAP | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC,
                        .userns_fd = (uint64_t)ns,
                };
                if (t >= 0 && mount_setattr(t, "", AT_EMPTY_PATH | AT_RECURSIVE, &a, sizeof(a)) == 0) {
                        bind_idmap[i] = t;
                        continue;
                }
                int e = errno;
                if (t >= 0)
                        close(t);
                if (!first) {
                        first = o->binds[i].src;
                        snprintf(why, sizeof(why), "%s: %s", t < 0 ? "open_tree" : "mount_setattr", strerror(e));
                }
                plain++;
        }
        close(ns);
        if (plain && o->require)
                return err_setc(err, BOX_E_LAYER, 0,
                                "sandbox layer unavailable: id-mapped --bind of %s (%s; its filesystem cannot be "
                                "id-mapped, e.g. tmpfs before Linux 6.3): files the box writes there would be owned "
                                "by 65534",
                                first, why);
        if (plain)
                snprintf(b->notes, sizeof(b->notes),
                         "--bind %.120s%s not id-mapped (%s): files the box writes there are owned by 65534", first,
                         plain > 1 ? " and others" : "", why);
        return 0;
}

static void close_idmap_binds(void)
{
        for (size_t i = 0; i < ARRAY_SIZE(bind_idmap); i++)
                if (bind_idmap[i] >= 0)
                        bind_idmap[i] = (close(bind_idmap[i]), -1);
}

static int write_maps(pid_t pid, struct err **err)
{
        char path[64], text[64];
        uid_t uid = getuid();
        gid_t gid = getgid();
        /* Root outside maps root inside to nobody; a user maps to itself. */
        uid_t out_uid = uid == 0 ? 65534 : uid;
        gid_t out_gid = uid == 0 ? 65534 : gid;
        snprintf(path, sizeof(path), "/proc/%d/setgroups", (int)pid);
        int fd = open(path, O_WRONLY | O_CLOEXEC);
        if (fd >= 0) {
                if (write(fd, "deny", 4) != 4) {
                        close(fd);
                        return err_set(err, errno, "deny setgroups in the box");
                }
                close(fd);
        }
        const char *files[2] = { "uid_map", "gid_map" };
        unsigned ids[2] = { out_uid, out_gid };
        for (int i = 0; i < 2; i++) {
                snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, files[i]);
                int n = snprintf(text, sizeof(text), "0 %u 1\n", ids[i]);
                fd = open(path, O_WRONLY | O_CLOEXEC);
                if (fd < 0 || write(fd, text, (size_t)n) != n) {
                        int e = errno;
                        if (fd >= 0)
                                close(fd);
                        return err_set(err, e, "write the box's %s", files[i]);
                }
                close(fd);
        }
        return 0;
}

static int recv_report(int fd, struct report *r, int *ret_fd)
{
        union {
                char buf[CMSG_SPACE(sizeof(int))];
                struct cmsghdr align;
        } u;
        struct iovec iov = { .iov_base = r, .iov_len = sizeof(*r) };
        struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof(u.buf) };
        ssize_t n;
        while ((n = recvmsg(fd, &m, MSG_CMSG_CLOEXEC)) < 0 && errno == EINTR)
                ;
        *ret_fd = -1;
        for (struct cmsghdr *c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c))
                if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS)
                        memcpy(ret_fd, CMSG_DATA(c), sizeof(int));
        return n == (ssize_t)sizeof(*r) ? 1 : n == 0 ? 0 : -1;
}

static pid_t do_clone3(uint64_t flags, int cgroup_fd, int *ret_pidfd)
{
        struct clone_args a = { 0 };
        int pidfd = -1;
        a.flags = flags | CLONE_PIDFD;
        a.pidfd = (uint64_t)(uintptr_t)&pidfd;
        a.exit_signal = SIGCHLD;
        if (cgroup_fd >= 0) {
                a.flags |= CLONE_INTO_CGROUP;
                a.cgroup = (uint64_t)cgroup_fd;
        }
        pid_t pid = (pid_t)syscall(SYS_clone3, &a, sizeof(a));
        if (pid > 0)
                *ret_pidfd = pidfd;
        return pid;
}

int box_spawn(const struct box_opts *o, struct box *b, struct err **err)
{
        memset(b, 0, sizeof(*b));
        b->pidfd = b->notify_fd = -1;
        memset(&rep, 0, sizeof(rep));

        if (idmap_binds(o, b, err) < 0) {
                close_idmap_binds();
                return -1;
        }
        int sv[2];
        if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
                close_idmap_binds();
                return err_set(err, errno, "socketpair");
        }
        static const struct {
                enum box_layer l;
                uint64_t flag;
        } ns[] = {
                { LAYER_USERNS, CLONE_NEWUSER }, { LAYER_PIDNS, CLONE_NEWPID }, { LAYER_MNTNS, CLONE_NEWNS },
                { LAYER_NETNS, CLONE_NEWNET },   { LAYER_IPCNS, CLONE_NEWIPC }, { LAYER_UTSNS, CLONE_NEWUTS },
                { LAYER_CGROUPNS, CLONE_NEWCGROUP },
        };
        uint64_t flags = 0;
        unsigned want = 0;
        for (size_t i = 0; i < ARRAY_SIZE(ns); i++) {
                if (o->disable & LAYER_BIT(ns[i].l))
                        continue;
                flags |= ns[i].flag;
                want |= LAYER_BIT(ns[i].l);
        }
        /* A child placed by attach() enters its cgroup namespace after the
         * move, so the namespace is rooted at its leaf. */
        bool late_cgroupns = o->attach && (flags & CLONE_NEWCGROUP);
        if (late_cgroupns)
                flags &= ~(uint64_t)CLONE_NEWCGROUP;
        /* Without a user namespace, only root can create the others. */
        if (!(flags & CLONE_NEWUSER) && getuid() != 0) {
                flags = 0;
                want = 0;
        }
        /* A mount namespace is what gives us the minimal root: the box's
         * filesystem view depends on it. */
        int pidfd = -1;
        char why[120] = "";
        pid_t pid = do_clone3(flags, o->cgroup_fd, &pidfd);
        if (pid < 0 && o->cgroup_fd >= 0 && (errno == EINVAL || errno == ENOSYS)) {
                /* CLONE_INTO_CGROUP unsupported: attach later instead. */
                pid = do_clone3(flags, -1, &pidfd);
        }
        if (pid < 0 && flags) {
                snprintf(why, sizeof(why), "cannot create namespaces: %s", strerror(errno));
                if (o->require) {
                        int e = errno;
                        close(sv[0]), close(sv[1]);
                        close_idmap_binds();
                        return err_setc(err, BOX_E_LAYER, 0, "sandbox layer unavailable: user namespace (%s)",
                                        strerror(e));
                }
                flags = 0;
                want = 0;
                pid = do_clone3(0, o->cgroup_fd, &pidfd);
        }
        if (pid < 0) {
                int e = errno;
                close(sv[0]), close(sv[1]);
                close_idmap_binds();
                return err_setc(err, BOX_E_SETUP, e, "clone3");
        }
        if (pid == 0) {
                close(sv[0]);
                sync_fd = sv[1];
                for (size_t i = 0; i < ARRAY_SIZE(ns); i++)
                        if (!(want & LAYER_BIT(ns[i].l)))
                                snprintf(rep.skipped[ns[i].l], sizeof(rep.skipped[0]), "%s",
                                         (o->disable & LAYER_BIT(ns[i].l)) ? "disabled by --unsafe-disable"
                                         : why[0]                          ? why
                                                                           : "needs a user namespace");
                if (o->require && (want & NS_LAYERS) != (NS_LAYERS & ~o->disable)) {
                        for (enum box_layer l = LAYER_USERNS; l <= LAYER_NETNS; l++)
                                if (!(want & LAYER_BIT(l)))
                                        child_fail(BOX_E_LAYER, 0, "sandbox layer unavailable: %s namespace (%s)",
                                                   layer_names[l], rep.skipped[l]);
                }
                /* getppid() as the child sees it (0 across a pid namespace). */
                child_main(o, want, getppid(), late_cgroupns);
        }
        close(sv[1]);
        close_idmap_binds(); /* the child has its copies */
        b->pid = pid;
        b->pidfd = pidfd;
        int rc = 0;
        if ((flags & CLONE_NEWUSER) && write_maps(pid, err) < 0)
                rc = -1;
        if (rc == 0 && o->attach && o->attach(o->attach_arg, pid, err) < 0)
                rc = err_wrap(err, "place the box in its cgroup");
        if (rc == 0 && send(sv[0], "g", 1, MSG_NOSIGNAL) != 1)
                rc = err_set(err, errno, "start the box");
        struct report r;
        int lfd = -1;
        if (rc == 0) {
                int got = recv_report(sv[0], &r, &lfd);
                if (got <= 0)
                        rc = err_setc(err, BOX_E_SETUP, 0, "the box exited during setup");
                else if (!r.ok)
                        rc = err_setc(err, r.code, 0, "%s", r.msg);
        }
        if (rc == 0) {
                /* A second report means execve failed; EOF means it worked. */
                struct report r2;
                int fd2 = -1;
                if (recv_report(sv[0], &r2, &fd2) > 0 && !r2.ok)
                        rc = err_setc(err, r2.code, 0, "%s", r2.msg);
                if (fd2 >= 0)
                        close(fd2);
        }
        close(sv[0]);
        if (rc < 0) {
                if (lfd >= 0)
                        close(lfd);
                syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0);
                while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
                        ;
                close(pidfd);
                b->pid = 0;
                b->pidfd = -1;
                return -1;
        }
        b->notify_fd = lfd;
        b->applied = r.applied;
        b->landlock_abi = r.landlock_abi;
        b->nproc_applied = r.nproc_applied;
        memcpy(b->skipped, r.skipped, sizeof(b->skipped));
        return 0;
}

void box_close(struct box *b)
{
        if (b->pidfd >= 0)
                close(b->pidfd);
        if (b->notify_fd >= 0)
                close(b->notify_fd);
        b->pidfd = b->notify_fd = -1;
}

void box_describe(const struct box *b, const char *cgroup, const char *extra, char *buf, size_t len)
{
        char nsl[128] = "";
        size_t n = 0;
        for (enum box_layer l = LAYER_USERNS; l <= LAYER_CGROUPNS; l++)
                if (b->applied & LAYER_BIT(l))
                        n += (size_t)snprintf(nsl + n, sizeof(nsl) - n, "%s%s", n ? "," : "", ns_display[l]);
        char skipped[512] = "";
        size_t s = 0;
        for (int l = 0; l < LAYER_MAX; l++)
                if (b->skipped[l][0] && s < sizeof(skipped))
                        s += (size_t)snprintf(skipped + s, sizeof(skipped) - s, "; %s skipped: %s", layer_names[l],
                                              b->skipped[l]);
        char ll[32] = "";
        if (b->applied & LAYER_BIT(LAYER_LANDLOCK))
                snprintf(ll, sizeof(ll), "; landlock abi %d", b->landlock_abi);
        snprintf(buf, len, "process (%s ns%s%s%s%s%s%s%s%s%s)", nsl[0] ? nsl : "no", cgroup && *cgroup ? "; " : "",
                 cgroup ? cgroup : "", ll, (b->applied & LAYER_BIT(LAYER_SECCOMP)) ? "; seccomp allowlist" : "",
                 extra && *extra ? "; " : "", extra ? extra : "", skipped, b->notes[0] ? "; " : "", b->notes);
}

int box_notify_read(int notify_fd)
{
        struct seccomp_notif req;
        memset(&req, 0, sizeof(req));
        if (ioctl(notify_fd, SECCOMP_IOCTL_NOTIF_RECV, &req) < 0)
                return -1;
        return req.data.nr;
}
