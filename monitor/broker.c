/* monitor/broker.c — start the broker: clone3 into its namespaces, run its
 * lockdown as one list of named steps, execveat chidori-broker.  See
 * broker.h for the modes; docs/architecture.md for the why of each step.
 * Parent side: choose the mode, open the binary and the folders' trees while
 * still privileged, clone3, write the id maps (user namespace modes), read
 * the child's report.  Child side: the steps, then exec; it never returns. */
#define _GNU_SOURCE
#include "monitor/broker.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/sched.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/dlib.h"
#include "common/util.h"
#include "sandbox/caps.h"
#include "sandbox/fds.h"
#include "sandbox/idmap.h"
#include "privhelper/proto.h"
#include "sandbox/landlock.h"
#include "sandbox/rootfs.h"
#include "sandbox/seccomp.h"
#include "sandbox/steps.h"

/* ---- child -> parent report ---- */

struct report {
        int ok;        /* 1: about to exec */
        int code;      /* BROKER_E_* */
        int landlock_abi;
        char step[64];
        char msg[512];
};

/* The folders the broker sees, each a detached tree attached at its own
 * path after /tmp is replaced (a state dir under /tmp stays visible). */
enum { DIR_STATE, DIR_WORKSPACE, DIR_STORE, DIR_AGENT, DIR_SOCKET, NDIRS };
#define DIR_IS_COPY(i) ((i) == DIR_AGENT || (i) == DIR_SOCKET) /* read-only, not id-mapped */
/* A copy is mounted read-only: its owner may be the broker's own uid (rootless). */
#define COPY_ATTR(i) (MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | (DIR_IS_COPY(i) ? MOUNT_ATTR_RDONLY : 0))

/* What the broker's root shows of the host, read-only: the loader, the
 * libraries, and the files name resolution, TLS and time zones read. */
static const char *const sys_dirs[] = { "/usr", "/lib", "/lib64", "/lib32", "/libx32" };
static const char *const etc_files[] = { "/etc/ld.so.cache", "/etc/ssl",       "/etc/ca-certificates",
                                         "/etc/resolv.conf", "/etc/hosts",     "/etc/nsswitch.conf",
                                         "/etc/gai.conf",    "/etc/host.conf", "/etc/services",
                                         "/etc/localtime" };
#define NETC (sizeof(etc_files) / sizeof(etc_files[0]))

struct bctx {
        const struct broker_spawn *s;
        enum broker_mode mode;
        int sync;                 /* the child's end of the setup socket */
        int bin;                  /* O_PATH fd of chidori-broker */
        int chan;                 /* the broker's end of the channel */
        const char *dirs[NDIRS];
        int trees[NDIRS];         /* root mode: made by the parent; else by the child */
        int etc[NETC];            /* O_PATH of each /etc entry, symlinks followed (resolv.conf) */
        struct report rep;
};

static void send_report(struct bctx *c)
{
        struct iovec iov = { .iov_base = &c->rep, .iov_len = sizeof(c->rep) };
        struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1 };
        ssize_t n;
        while ((n = sendmsg(c->sync, &m, MSG_NOSIGNAL)) < 0 && errno == EINTR)
                ;
        if (n < 0)
                _exit(78); /* the monitor is gone: never run unsupervised */
}

__attribute__((noreturn)) static void child_fail(struct bctx *c, const char *step, int code, struct err *e)
{
        c->rep.ok = 0;
        c->rep.code = code ? code : BROKER_E_SETUP;
        snprintf(c->rep.step, sizeof(c->rep.step), "%s", step);
        snprintf(c->rep.msg, sizeof(c->rep.msg), "%s", err_msg(e));
        send_report(c);
        _exit(78);
}

/* ---- the lockdown steps (child) ---- */

static int step_wait(void *arg, struct err **err)
{
        struct bctx *c = arg;
        char go;
        if (read(c->sync, &go, 1) != 1)
                _exit(78); /* the monitor is gone, or gave up on us */
        (void)err;
        return 0;
}

static int step_private_mounts(void *arg, struct err **err)
{
        (void)arg;
        if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
                return err_set(err, errno, "make every mount private");
        return 0;
}

/* User namespace modes: the trees are copied here, where the child's
 * namespace owns the mounts (root mode: the parent made them id-mapped). */
static int step_copy_folders(void *arg, struct err **err)
{
        struct bctx *c = arg;
        if (c->mode == BROKER_ROOT)
                return 0;
        for (int i = 0; i < NDIRS; i++) {
                if (!c->dirs[i] || c->trees[i] >= 0) /* >= 0: the privileged helper's copy */
                        continue;
                c->trees[i] = idmap_tree(c->dirs[i], -1, COPY_ATTR(i), err);
                if (c->trees[i] < 0)
                        return err_wrap(err, "copy %s", c->dirs[i]);
        }
        return 0;
}

/* Opened in the host's root: /etc/resolv.conf and /etc/localtime are often
 * symlinks whose targets the new root does not have. */
static int step_open_etc(void *arg, struct err **err)
{
        struct bctx *c = arg;
        (void)err;
        for (size_t i = 0; i < NETC; i++)
                c->etc[i] = open(etc_files[i], O_PATH | O_CLOEXEC); /* missing: -1, left out */
        return 0;
}

static int step_new_root(void *arg, struct err **err)
{
        (void)arg;
        return rootfs_new_root(err);
}

static int step_system_files(void *arg, struct err **err)
{
        struct bctx *c = arg;
        for (size_t i = 0; i < sizeof(sys_dirs) / sizeof(sys_dirs[0]); i++)
                if (rootfs_bind(sys_dirs[i], -1, sys_dirs[i], false, false, err) < 0)
                        return -1;
        for (size_t i = 0; i < NETC; i++) {
                if (c->etc[i] >= 0 && rootfs_bind(etc_files[i], c->etc[i], etc_files[i], false, false, err) < 0)
                        return -1;
                if (c->etc[i] >= 0)
                        c->etc[i] = (close(c->etc[i]), -1);
        }
        return rootfs_dev(err);
}

static int step_tmp(void *arg, struct err **err)
{
        struct bctx *c = arg;
        char opts[96];
        unsigned uid = c->mode == BROKER_ROOT ? (unsigned)c->s->uid : (unsigned)getuid();
        unsigned gid = c->mode == BROKER_ROOT ? (unsigned)c->s->gid : (unsigned)getgid();
        snprintf(opts, sizeof(opts), "mode=0700,size=64m,nr_inodes=16384,uid=%u,gid=%u", uid, gid);
        if (mkdir_parents("/tmp", 0755, err) < 0)
                return -1;
        if (mount("chidori-broker", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, opts) < 0)
                return err_set(err, errno, "mount a private tmpfs on /tmp");
        return 0;
}

static int step_attach_folders(void *arg, struct err **err)
{
        struct bctx *c = arg;
        for (int i = 0; i < NDIRS; i++) {
                if (c->trees[i] < 0)
                        continue;
                if (idmap_attach(c->trees[i], c->dirs[i], err) < 0)
                        return err_wrap(err, "%s", DIR_IS_COPY(i) ? "a folder it reads" : "a folder it writes");
                c->trees[i] = (close(c->trees[i]), -1);
        }
        return 0;
}

static int step_proc(void *arg, struct err **err)
{
        (void)arg;
        return rootfs_proc(true, err);
}

static int step_finish_root(void *arg, struct err **err)
{
        (void)arg;
        return rootfs_finish(err);
}

static int step_setsid(void *arg, struct err **err)
{
        (void)arg;
        if (setsid() < 0)
                return err_set(err, errno, "setsid");
        return 0;
}

/* Root mode: become the broker uid, keeping the capabilities only long
 * enough for the next steps to drop them for good (the bounding set and
 * the securebits need CAP_SETPCAP). */
static int step_uid(void *arg, struct err **err)
{
        struct bctx *c = arg;
        if (c->mode != BROKER_ROOT)
                return 0;
        if (prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0) < 0)
                return err_set(err, errno, "keep capabilities across the uid change");
        if (setgroups(0, NULL) < 0)
                return err_set(err, errno, "setgroups([])");
        if (setresgid(c->s->gid, c->s->gid, c->s->gid) < 0 || setresuid(c->s->uid, c->s->uid, c->s->uid) < 0)
                return err_set(err, errno, "switch to uid %u gid %u", (unsigned)c->s->uid, (unsigned)c->s->gid);
        struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
        struct __user_cap_data_struct d[2];
        if (syscall(SYS_capget, &h, d) < 0)
                return err_set(err, errno, "capget");
        d[0].effective = d[0].permitted;
        d[1].effective = d[1].permitted;
        if (syscall(SYS_capset, &h, d) < 0)
                return err_set(err, errno, "capset");
        return 0;
}

static int step_lock(void *arg, struct err **err)
{
        struct bctx *c = arg;
        if (caps_lock_process(0, err) < 0)
                return -1;
        /* Across the pid namespace getppid() says nothing: a monitor already
         * gone has hung up the setup socket. */
        struct pollfd alive = { .fd = c->sync, .events = POLLIN | POLLRDHUP };
        if (poll(&alive, 1, 0) > 0 && (alive.revents & (POLLHUP | POLLRDHUP)))
                _exit(78);
        return 0;
}

static int step_caps(void *arg, struct err **err)
{
        (void)arg;
        return caps_drop_all(err);
}

static int step_fds(void *arg, struct err **err)
{
        struct bctx *c = arg;
        const struct broker_spawn *s = c->s;
        int src[BROKER_EXTRA_FD + BROKER_MAX_EXTRA];
        int n = BROKER_EXTRA_FD + (int)s->n_extra;
        src[0] = s->fd0, src[1] = s->fd1, src[2] = s->fd2;
        src[BROKER_CHAN_FD] = c->chan;
        src[BROKER_CONFIG_FD] = s->config_fd;
        for (size_t i = 0; i < s->n_extra; i++)
                src[BROKER_EXTRA_FD + i] = s->extra_fds[i];
        int keep[2] = { c->sync, c->bin };
        if (fds_place(src, n, keep, 2, err) < 0)
                return -1;
        c->sync = keep[0], c->bin = keep[1];
        return 0;
}

static int step_landlock(void *arg, struct err **err)
{
        struct bctx *c = arg;
        /* Read (no execute): the system files a resolver, TLS and the
         * loader read, the fresh /proc, and the agent folder. */
        const char *ro[] = { "/usr", "/etc/ssl", "/etc/ca-certificates", "/etc/resolv.conf", "/etc/hosts",
                             "/etc/nsswitch.conf", "/etc/gai.conf", "/etc/host.conf", "/etc/services",
                             "/etc/localtime", "/etc/ld.so.cache", "/proc", "/dev/urandom", c->dirs[DIR_AGENT],
                             NULL };
        /* Read and execute: the loader and the libraries it maps, and
         * chidori-broker itself (through its descriptor: its folder may be
         * one the broker uid cannot even open). */
        const char *rx[] = { "/usr/lib", "/usr/lib64", "/lib", "/lib64", NULL };
        const char *rw[] = { "/tmp", "/dev/null", NULL, NULL, NULL, NULL };
        /* A NULL folder would end the list early: only those given. */
        for (size_t i = 0, k = 2; i <= DIR_STORE; i++)
                if (c->dirs[i])
                        rw[k++] = c->dirs[i];
        struct landlock_rules r = {
                .ro = ro, .rw = rw, .rx = rx, .rx_fds = &c->bin, .n_rx_fds = 1, .ro_noexec = true, .allow_tcp = true,
        };
        struct landlock_result lr = { 0 };
        if (landlock_restrict_rules(&r, &lr, err) < 0)
                return -1;
        if (lr.abi == 0 && c->s->require) {
                char why[100];
                landlock_abi(why, sizeof(why));
                c->rep.code = BROKER_E_LAYER;
                return err_set(err, 0, "sandbox layer unavailable: landlock (%s)", why);
        }
        c->rep.landlock_abi = lr.abi;
        return 0;
}

static int step_seccomp(void *arg, struct err **err)
{
        (void)arg;
        const struct seccomp_prog *p = &seccomp_prebuilt[SECCOMP_BROKER1][1];
        struct sock_fprog prog = { .len = (unsigned short)p->len, .filter = p->insns };
        if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) < 0)
                return err_set(err, errno, "install the broker's seccomp filter");
        return 0;
}

/* The order matters (docs/architecture.md): mounts need CAP_SYS_ADMIN and
 * must precede Landlock (a Landlock domain may not mount); Landlock's rules
 * open their paths while still privileged (a state dir under a 0700 /root)
 * and CAP_SYS_ADMIN stands in for no_new_privs; the uid change needs
 * CAP_SETUID/SETGID, dropping the bounding set CAP_SETPCAP; the death
 * signal is armed after the uid change (which clears it); seccomp comes
 * last but for the exec. */
static const struct lockdown_step broker_steps[] = {
        { "wait for the monitor", step_wait },
        { "private mounts", step_private_mounts },
        { "copy the folders it uses", step_copy_folders },
        { "open the system files", step_open_etc },
        { "new root (tmpfs, pivot_root)", step_new_root },
        { "system files and /dev", step_system_files },
        { "private /tmp", step_tmp },
        { "attach the folders at their paths", step_attach_folders },
        { "fresh /proc", step_proc },
        { "old root detached, root read-only", step_finish_root },
        { "new session", step_setsid },
        { "landlock", step_landlock },
        { "switch to the broker uid", step_uid },
        { "no_new_privs, not dumpable, parent-death signal", step_lock },
        { "drop every capability", step_caps },
        { "descriptors", step_fds },
        { "seccomp (stage 1)", step_seccomp },
};

/* The control of the compromised-broker test: nothing but the descriptors. */
static const struct lockdown_step no_lockdown_steps[] = {
        { "wait for the monitor", step_wait },
        { "descriptors", step_fds },
};

__attribute__((noreturn)) static void child_main(struct bctx *c)
{
        const struct lockdown_step *steps = c->s->test_no_lockdown ? no_lockdown_steps : broker_steps;
        size_t n = c->s->test_no_lockdown ? ARRAY_SIZE(no_lockdown_steps) : ARRAY_SIZE(broker_steps);
        const char *failed = NULL;
        struct err *e = NULL;
        if (lockdown_run(steps, n, c, &failed, &e) < 0)
                child_fail(c, failed, c->rep.code, e);
        c->rep.ok = 1;
        send_report(c);
        static char *const default_argv[] = { "chidori-broker", NULL };
        static char *const default_envp[] = { "PATH=/usr/bin:/bin", "LANG=C.UTF-8", NULL };
        syscall(SYS_execveat, c->bin, "", c->s->argv ? c->s->argv : default_argv,
                c->s->envp ? c->s->envp : default_envp, AT_EMPTY_PATH);
        err_set(&e, errno, "execveat chidori-broker");
        child_fail(c, "exec", BROKER_E_SETUP, e);
}

/* ---- parent ---- */

/* rootless: the caller's ids to themselves; uid0: 0 to 0. */
static int write_maps(pid_t pid, enum broker_mode mode, struct err **err)
{
        char u[64], g[64];
        unsigned uid = mode == BROKER_UID0 ? 0 : (unsigned)getuid();
        unsigned gid = mode == BROKER_UID0 ? 0 : (unsigned)getgid();
        snprintf(u, sizeof(u), "%u %u 1\n", uid, uid);
        snprintf(g, sizeof(g), "%u %u 1\n", gid, gid);
        if (idmap_write_proc(pid, "setgroups", "deny", err) < 0 || idmap_write_proc(pid, "uid_map", u, err) < 0 ||
            idmap_write_proc(pid, "gid_map", g, err) < 0)
                return err_wrap(err, "the broker's id maps");
        return 0;
}

/* Root mode: the folders it writes, id-mapped (on-disk 0 <-> broker uid),
 * and the agent folder as a plain copy.  A folder that cannot be id-mapped
 * sends the start to the uid0 mode (or fails under `require`). */
static int make_trees(struct bctx *c, struct broker *b, struct err **err)
{
        /* Under the privileged helper its trees: this process (uid 65532)
         * can neither id-map a mount nor maybe reach the folders. */
        bool helper = priv_helper_fd >= 0;
        _cleanup_close_ int ns = helper ? -1 : idmap_userns(c->s->uid, c->s->gid, err);
        if (ns < 0 && !helper)
                return err_wrap(err, "id-mapped folders for the broker");
        for (int i = 0; i < NDIRS; i++) {
                if (!c->dirs[i])
                        continue;
                struct err *e = NULL;
                long mu = DIR_IS_COPY(i) ? -1 : (long)c->s->uid, mg = DIR_IS_COPY(i) ? -1 : (long)c->s->gid;
                int t = helper ? priv_request(PRIV_TREE, c->dirs[i], mu, mg, COPY_ATTR(i), &e)
                               : idmap_tree(c->dirs[i], DIR_IS_COPY(i) ? -1 : ns, COPY_ATTR(i), &e);
                if (t >= 0) {
                        c->trees[i] = t;
                        continue;
                }
                for (int j = 0; j < NDIRS; j++)
                        if (c->trees[j] >= 0)
                                c->trees[j] = (close(c->trees[j]), -1);
                if (c->s->require) {
                        int r = err_setc(err, BROKER_E_LAYER, 0,
                                         "sandbox layer unavailable: an id-mapped mount of %s for the broker (%s; "
                                         "its filesystem cannot be id-mapped, e.g. ramfs, tmpfs before Linux 6.3, "
                                         "NFS): without it the broker would run as uid 0 of its own user namespace",
                                         c->dirs[i], err_msg(e));
                        err_free(e);
                        return r;
                }
                snprintf(b->notes, sizeof(b->notes),
                         "broker: uid 0 of its own user namespace, no capabilities (%.100s cannot be id-mapped: %.60s)",
                         c->dirs[i], err_msg(e));
                err_free(e);
                c->mode = BROKER_UID0;
                /* The child copies the folders itself, unless this uid cannot
                 * reach them: then the privileged helper's plain copies. */
                for (int j = 0; helper && j < NDIRS; j++)
                        if (c->dirs[j])
                                c->trees[j] = priv_request(PRIV_TREE, c->dirs[j], -1, -1, COPY_ATTR(j), NULL);
                return 0;
        }
        return 0;
}

static char *find_binary(const struct broker_spawn *s, struct err **err)
{
        const char *p = s->binary ? s->binary : getenv("CHIDORI_BROKER");
        if (p && *p) {
                char *d = strdup(p);
                if (!d)
                        err_set(err, ENOMEM, "broker path");
                return d;
        }
        char *f = dlib_find("chidori-broker", X_OK);
        if (!f)
                err_setc(err, BROKER_E_SETUP, 0,
                         "cannot find chidori-broker in %s (set CHIDORI_BROKER to its path, or reinstall)",
                         dlib_dirs_text());
        return f;
}

static pid_t clone_broker(uint64_t flags, int *ret_pidfd)
{
        struct clone_args a = { 0 };
        a.flags = flags | CLONE_PIDFD;
        a.pidfd = (uint64_t)(uintptr_t)ret_pidfd;
        a.exit_signal = SIGCHLD;
        return (pid_t)syscall(SYS_clone3, &a, sizeof(a));
}

static int recv_report(int fd, struct report *r)
{
        ssize_t n;
        while ((n = recv(fd, r, sizeof(*r), 0)) < 0 && errno == EINTR)
                ;
        return n == (ssize_t)sizeof(*r) ? 1 : n == 0 ? 0 : -1;
}

/* After clone: maps, go, the report(s).  0 when the broker has exec'd. */
static int parent_side(struct bctx *c, int sync, pid_t pid, struct broker *b, struct err **err)
{
        if ((c->mode == BROKER_ROOTLESS || c->mode == BROKER_UID0) && !c->s->test_no_lockdown &&
            write_maps(pid, c->mode, err) < 0)
                return -1;
        if (send(sync, "g", 1, MSG_NOSIGNAL) != 1)
                return err_setc(err, BROKER_E_SETUP, errno, "start the broker");
        struct report r;
        int got = recv_report(sync, &r);
        if (got <= 0)
                return err_setc(err, BROKER_E_SETUP, 0, "the broker exited during its lockdown");
        r.step[sizeof(r.step) - 1] = r.msg[sizeof(r.msg) - 1] = '\0';
        if (!r.ok)
                return err_setc(err, r.code ? r.code : BROKER_E_SETUP, 0, "broker lockdown step '%s': %s", r.step,
                                r.msg);
        b->landlock_abi = r.landlock_abi;
        /* A second report means execveat failed; EOF means it worked. */
        if (recv_report(sync, &r) > 0 && !r.ok) {
                r.msg[sizeof(r.msg) - 1] = '\0';
                return err_setc(err, BROKER_E_SETUP, 0, "broker: %s", r.msg);
        }
        return 0;
}

int monitor_start_broker(const struct broker_spawn *s, struct broker *b, struct err **err)
{
        memset(b, 0, sizeof(*b));
        b->pidfd = b->chan = -1;
        if (s->n_extra > BROKER_MAX_EXTRA)
                return err_setc(err, BROKER_E_SETUP, 0, "%zu extra descriptors for the broker (at most %d)",
                                s->n_extra, BROKER_MAX_EXTRA);
        struct bctx c = { .s = s, .sync = -1, .bin = -1, .chan = -1 };
        for (size_t i = 0; i < NETC; i++)
                c.etc[i] = -1;
        c.dirs[DIR_STATE] = s->state_dir;
        c.dirs[DIR_WORKSPACE] = s->workspace;
        c.dirs[DIR_AGENT] = s->agent_dir;
        c.dirs[DIR_STORE] = s->store_dir;
        c.dirs[DIR_SOCKET] = s->store_socket_dir;
        static const char *const what[NDIRS] = { "state dir", "workspace", "store's folder", "agent folder",
                                                 "database's socket folder" };
        for (int i = 0; i < NDIRS; i++) {
                c.trees[i] = -1;
                struct stat st;
                if (c.dirs[i] && c.dirs[i][0] != '/')
                        return err_setc(err, BROKER_E_SETUP, 0, "the broker's %s '%s' is not an absolute path",
                                        what[i], c.dirs[i]);
                /* Under the privileged helper a folder this uid cannot reach
                 * (a 0700 /root) is checked by the helper, which opens it. */
                bool unseen = false;
                if (c.dirs[i] && stat(c.dirs[i], &st) < 0 && !(unseen = priv_helper_fd >= 0 && errno == EACCES))
                        return err_setc(err, BROKER_E_SETUP, errno, "the broker's %s %s", what[i], c.dirs[i]);
                if (c.dirs[i] && !unseen && !S_ISDIR(st.st_mode))
                        return err_setc(err, BROKER_E_SETUP, 0, "the broker's %s %s is not a folder", what[i],
                                        c.dirs[i]);
        }
        /* Opened now, with the caller's credentials: the build tree or the
         * install may sit where the broker uid cannot look (under the
         * privileged helper, where this uid cannot look either: it opens it). */
        bool helper = priv_helper_fd >= 0 && !s->binary;
        _cleanup_free_ char *path = helper ? strdup("chidori-broker") : find_binary(s, err);
        if (!path)
                return helper ? err_set(err, ENOMEM, "broker path") : -1;
        _cleanup_close_ int bin = helper ? priv_request(PRIV_BROKER, "", -1, -1, 0, err) : open(path, O_PATH | O_CLOEXEC);
        if (bin < 0 && helper)
                return err_wrap(err, "open the broker binary");
        if (bin < 0)
                return err_setc(err, BROKER_E_SETUP, errno, "open the broker binary %s", path);
        c.bin = bin;
        c.mode = getuid() == 0 ? BROKER_ROOT : BROKER_ROOTLESS;
        char nomap[160]; /* root without CAP_SETUID/CAP_SETGID: idmap.h */
        enum idmap_root m = c.mode == BROKER_ROOT && !s->test_no_lockdown ? idmap_root_mapping(s->uid, nomap, 160) : 0;
        if (m == IDMAP_NONE)
                return err_setc(err, BROKER_E_LAYER, 0, "the broker needs a user namespace of its own and this "
                                "process, %s, cannot map any id into one: run as a non-root user (e.g. runAsUser: "
                                "1000: the rootless path needs no capability), or grant CAP_SETUID and CAP_SETGID",
                                nomap);
        if (m == IDMAP_SELF) /* the rootless path: its own user namespace, 0 -> 0 */
                snprintf(b->notes, sizeof(b->notes), "broker: uid 0 of its own user namespace, no capabilities; "
                         "boxes: root is uid 0 outside (the rootless mapping: %.120s)", nomap);
        c.mode = m == IDMAP_SELF ? BROKER_UID0 : c.mode;
        if (c.mode == BROKER_ROOT && !s->test_no_lockdown && make_trees(&c, b, err) < 0)
                return -1;
        int sv[2], ch[2];
        if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
                return err_setc(err, BROKER_E_SETUP, errno, "socketpair");
        if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, ch) < 0) {
                int e = errno;
                close(sv[0]), close(sv[1]);
                return err_setc(err, BROKER_E_SETUP, e, "socketpair");
        }
        uint64_t flags = CLONE_NEWPID | CLONE_NEWNS;
        if (c.mode != BROKER_ROOT)
                flags |= CLONE_NEWUSER;
        if (s->test_no_lockdown)
                flags = 0;
        int pidfd = -1;
        pid_t pid = clone_broker(flags, &pidfd);
        if (pid == 0) {
                close(sv[0]), close(ch[0]);
                c.sync = sv[1];
                c.chan = ch[1];
                child_main(&c);
        }
        int e = errno;
        close(sv[1]), close(ch[1]);
        for (int i = 0; i < NDIRS; i++)
                if (c.trees[i] >= 0)
                        close(c.trees[i]);
        if (pid < 0) {
                close(sv[0]), close(ch[0]);
                return err_setc(err, c.mode == BROKER_ROOT ? BROKER_E_SETUP : BROKER_E_LAYER, e,
                                "start the broker in new %s namespaces (clone3%s)",
                                c.mode == BROKER_ROOT ? "pid and mount" : "user, pid and mount",
                                e == ENOSYS || e == EPERM ? SECCOMP_PROFILE_HINT : "");
        }
        int rc = parent_side(&c, sv[0], pid, b, err);
        close(sv[0]);
        if (rc < 0) {
                close(ch[0]);
                syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0);
                while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
                        ;
                close(pidfd);
                return -1;
        }
        b->pid = pid;
        b->pidfd = pidfd;
        b->chan = ch[0];
        b->mode = c.mode;
        b->uid = c.mode == BROKER_ROOT ? s->uid : getuid();
        if (s->test_no_lockdown)
                b->uid = getuid();
        if (!b->notes[0] && b->landlock_abi == 0 && !s->test_no_lockdown)
                snprintf(b->notes, sizeof(b->notes), "broker: Landlock unavailable");
        return 0;
}

void monitor_broker_close(struct broker *b)
{
        if (b->pidfd >= 0)
                close(b->pidfd);
        if (b->chan >= 0)
                close(b->chan);
        b->pidfd = b->chan = -1;
}
