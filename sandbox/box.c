/* sandbox/box.c — the spawn path into the sandbox.  See box.h for the
 * lockdown order.  The parent side is here: clone3, the id maps (ids.c),
 * cgroup attach, the child's report.  The child runs its lockdown as a list
 * of named steps (box-child.c) over the root filesystem of rootfs.c. */
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
#include "sandbox/box-internal.h"
#include "sandbox/idmap.h"
#include "privhelper/proto.h"
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

static int recv_report(int fd, struct box_report *r, int *ret_fd)
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

/* A failed start as the child reported it.  Setup failures name the
 * lockdown step; a missing layer and a failed execve say it themselves. */
static int report_error(struct box_report *r, struct err **err)
{
        r->msg[sizeof(r->msg) - 1] = r->step[sizeof(r->step) - 1] = '\0';
        if (r->code == BOX_E_SETUP && r->step[0])
                return err_setc(err, r->code, 0, "box setup, step '%s': %s", r->step, r->msg);
        return err_setc(err, r->code, 0, "%s", r->msg);
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

static const struct {
        enum box_layer l;
        uint64_t flag;
} ns_flags[] = {
        { LAYER_USERNS, CLONE_NEWUSER }, { LAYER_PIDNS, CLONE_NEWPID }, { LAYER_MNTNS, CLONE_NEWNS },
        { LAYER_NETNS, CLONE_NEWNET },   { LAYER_IPCNS, CLONE_NEWIPC }, { LAYER_UTSNS, CLONE_NEWUTS },
        { LAYER_CGROUPNS, CLONE_NEWCGROUP },
};

/* The namespaces to create (clone flags and layer bits); *late: the
 * cgroup namespace is entered by the child after attach() placed it, so the
 * namespace is rooted at its leaf. */
static uint64_t namespace_flags(const struct box_opts *o, unsigned *want, bool *late)
{
        uint64_t flags = 0;
        *want = 0;
        for (size_t i = 0; i < ARRAY_SIZE(ns_flags); i++) {
                if (o->disable & LAYER_BIT(ns_flags[i].l))
                        continue;
                flags |= ns_flags[i].flag;
                *want |= LAYER_BIT(ns_flags[i].l);
        }
        *late = o->attach && (flags & CLONE_NEWCGROUP);
        if (*late)
                flags &= ~(uint64_t)CLONE_NEWCGROUP;
        /* Without a user namespace, only root can create the others. */
        if (!(flags & CLONE_NEWUSER) && getuid() != 0) {
                flags = 0;
                *want = 0;
        }
        return flags;
}

/* In the child just after clone3: what it got, then its lockdown. */
__attribute__((noreturn)) static void child_start(struct box_child *c, int sync, unsigned want, bool late,
                                                  const char *why)
{
        const struct box_opts *o = c->o;
        c->sync_fd = sync;
        c->ns_applied = want;
        c->late_cgroupns = late;
        c->parent = getppid(); /* as the child sees it (0 across a pid namespace) */
        for (size_t i = 0; i < ARRAY_SIZE(ns_flags); i++)
                if (!(want & LAYER_BIT(ns_flags[i].l)))
                        snprintf(c->rep.skipped[ns_flags[i].l], sizeof(c->rep.skipped[0]), "%s",
                                 (o->disable & LAYER_BIT(ns_flags[i].l)) ? "disabled by --unsafe-disable"
                                 : why[0]                                ? why
                                                                         : "needs a user namespace");
        c->missing_ns = -1;
        if (o->require && (want & NS_LAYERS) != (NS_LAYERS & ~o->disable))
                for (int l = LAYER_NETNS; l >= (int)LAYER_USERNS; l--)
                        if (!(want & LAYER_BIT(l)))
                                c->missing_ns = l;
        box_child_main(c);
}

/* The parent after clone3: id maps, cgroup placement, go, the child's
 * report(s).  0 when the program runs (b filled), else -1 and the child
 * killed and reaped. */
static int parent_start(const struct box_opts *o, struct box *b, int sync, bool userns, struct err **err)
{
        int rc = 0;
        if (userns && ids_write_maps(b->pid, err) < 0)
                rc = -1;
        if (rc == 0 && o->attach && o->attach(o->attach_arg, b->pid, err) < 0)
                rc = err_wrap(err, "place the box in its cgroup");
        if (rc == 0 && send(sync, "g", 1, MSG_NOSIGNAL) != 1)
                rc = err_set(err, errno, "start the box");
        struct box_report r;
        int lfd = -1;
        if (rc == 0) {
                int got = recv_report(sync, &r, &lfd);
                if (got <= 0)
                        rc = err_setc(err, BOX_E_SETUP, 0, "the box exited during setup");
                else if (!r.ok)
                        rc = report_error(&r, err);
        }
        if (rc == 0) {
                /* A second report means execve failed; EOF means it worked. */
                struct box_report r2;
                int fd2 = -1;
                if (recv_report(sync, &r2, &fd2) > 0 && !r2.ok)
                        rc = report_error(&r2, err);
                if (fd2 >= 0)
                        close(fd2);
        }
        if (rc < 0) {
                if (lfd >= 0)
                        close(lfd);
                syscall(SYS_pidfd_send_signal, b->pidfd, SIGKILL, NULL, 0);
                while (waitpid(b->pid, NULL, 0) < 0 && errno == EINTR)
                        ;
                close(b->pidfd);
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

int box_spawn(const struct box_opts *o, struct box *b, struct err **err)
{
        memset(b, 0, sizeof(*b));
        b->pidfd = b->notify_fd = -1;
        /* The child's context: a copy goes with it at clone3. */
        struct box_child c;
        memset(&c, 0, sizeof(c));
        c.o = o;
        c.program_fd = c.listener = c.program_tree = -1;
        for (size_t i = 0; i < BOX_MAX_BINDS; i++)
                c.bind_fds[i] = c.bind_idmap[i] = -1;

        if ((priv_helper_fd >= 0 ? ids_helper_trees(o, &c, b, err) : ids_idmap_binds(o, c.bind_idmap, b, err)) < 0) {
                if (c.program_tree >= 0)
                        close(c.program_tree);
                ids_close_idmap_binds(c.bind_idmap);
                return -1;
        }
        int sv[2];
        if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
                int e = errno;
                ids_close_idmap_binds(c.bind_idmap);
                if (c.program_tree >= 0)
                        close(c.program_tree);
                return err_set(err, e, "socketpair");
        }
        unsigned want;
        bool late;
        uint64_t flags = namespace_flags(o, &want, &late);
        /* A mount namespace is what gives us the minimal root: the box's
         * filesystem view depends on it. */
        int pidfd = -1;
        char why[120] = "";
        /* idmap.h: no map can be written (IDMAP_NONE) is as if clone3 failed. */
        char nomap[160];
        enum idmap_root mapping = idmap_root_mapping(65534, nomap, sizeof(nomap));
        bool none = mapping == IDMAP_NONE && (flags & CLONE_NEWUSER);
        pid_t pid = none ? (errno = EPERM, -1) : do_clone3(flags, o->cgroup_fd, &pidfd);
        if (pid < 0 && o->cgroup_fd >= 0 && (errno == EINVAL || errno == ENOSYS)) {
                /* CLONE_INTO_CGROUP unsupported: attach later instead. */
                pid = do_clone3(flags, -1, &pidfd);
        }
        if (pid < 0 && flags) {
                const char *hint = none ? "; run as a non-root user or grant CAP_SETUID and CAP_SETGID"
                                   : errno == ENOSYS || errno == EPERM ? SECCOMP_PROFILE_HINT : "";
                snprintf(why, sizeof(why), "cannot create namespaces: %.90s", none ? nomap : strerror(errno));
                if (o->require) {
                        int e = errno;
                        close(sv[0]), close(sv[1]);
                        ids_close_idmap_binds(c.bind_idmap);
                        if (c.program_tree >= 0)
                                close(c.program_tree);
                        return err_setc(err, BOX_E_LAYER, 0, "sandbox layer unavailable: user namespace (%s%s)",
                                        none ? nomap : strerror(e), hint);
                }
                flags = 0;
                want = 0;
                pid = do_clone3(0, o->cgroup_fd, &pidfd);
        }
        if (pid < 0) {
                int e = errno;
                close(sv[0]), close(sv[1]);
                ids_close_idmap_binds(c.bind_idmap);
                if (c.program_tree >= 0)
                        close(c.program_tree);
                return err_setc(err, BOX_E_SETUP, e, "clone3%s", e == ENOSYS ? SECCOMP_PROFILE_HINT : "");
        }
        if (pid == 0) {
                close(sv[0]);
                child_start(&c, sv[1], want, late, why);
        }
        close(sv[1]);
        ids_close_idmap_binds(c.bind_idmap); /* the child has its copies */
        if (c.program_tree >= 0)
                close(c.program_tree);
        b->pid = pid;
        b->pidfd = pidfd;
        size_t k = strlen(b->notes);
        if (mapping == IDMAP_SELF && nomap[0] && (flags & CLONE_NEWUSER))
                snprintf(b->notes + k, sizeof(b->notes) - k, "%sbox root is uid 0 outside, the rootless mapping (%s)",
                         k ? "; " : "", nomap);
        int rc = parent_start(o, b, sv[0], flags & CLONE_NEWUSER, err);
        close(sv[0]);
        return rc;
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
