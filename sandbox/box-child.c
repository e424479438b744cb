/* sandbox/box-child.c — the box's child: its lockdown written once as a
 * list of named steps (sandbox/steps.h), run in order after clone3; the
 * first failure goes to the parent with the step's name; then the report
 * and execve.  The order (box.h, docs/sandbox.md) matters: everything that
 * needs a capability (mounts, hostname, lo up, rlimits) comes before the
 * capabilities are dropped; Landlock needs no_new_privs; seccomp is last. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/fdpass.h"
#include "sandbox/box-internal.h"
#include "sandbox/caps.h"
#include "sandbox/fds.h"
#include "sandbox/landlock.h"
#include "sandbox/netns/netns.h"
#include "sandbox/steps.h"

static void send_report(struct box_child *c, int pass_fd)
{
        if (fd_send(c->sync_fd, &c->rep, sizeof(c->rep), pass_fd, 0) < 0)
                _exit(78); /* the parent is gone: never run unsupervised */
}

__attribute__((noreturn)) static void child_fail(struct box_child *c, const char *step, const struct err *e)
{
        snprintf(c->rep.msg, sizeof(c->rep.msg), "%s", err_msg(e));
        snprintf(c->rep.step, sizeof(c->rep.step), "%s", step ? step : "");
        c->rep.ok = 0;
        c->rep.code = err_code(e) ? err_code(e) : BOX_E_SETUP;
        c->rep.errnum = e ? e->errnum : 0;
        send_report(c, -1);
        _exit(78);
}

int box_layer_skip(struct box_child *c, enum box_layer l, bool core, struct err **err, const char *fmt, ...)
{
        char why[120];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(why, sizeof(why), fmt, ap);
        va_end(ap);
        if (core && c->o->require)
                return err_setc(err, BOX_E_LAYER, 0, "sandbox layer unavailable: %s (%s)", box_layer_name(l), why);
        snprintf(c->rep.skipped[l], sizeof(c->rep.skipped[l]), "%s", why);
        c->rep.applied &= ~LAYER_BIT(l);
        return 0;
}

#define NS(c, l) ((c)->ns_applied & LAYER_BIT(l))

/* --require-sandbox: every namespace asked for was made. */
static int step_namespaces(void *arg, struct err **err)
{
        struct box_child *c = arg;
        if (c->missing_ns < 0)
                return 0;
        return err_setc(err, BOX_E_LAYER, 0, "sandbox layer unavailable: %s namespace (%s)",
                        box_layer_name((enum box_layer)c->missing_ns), c->rep.skipped[c->missing_ns]);
}

/* Until the parent has written our id maps (and placed us in the v1 cgroups). */
static int step_wait(void *arg, struct err **err)
{
        struct box_child *c = arg;
        char go;
        if (read(c->sync_fd, &go, 1) != 1)
                _exit(78);
        (void)err;
        if (NS(c, LAYER_MNTNS))
                rootfs_open_sources(c);
        return 0;
}

static int step_root_in_userns(void *arg, struct err **err)
{
        struct box_child *c = arg;
        if (NS(c, LAYER_USERNS) && (setresgid(0, 0, 0) < 0 || setresuid(0, 0, 0) < 0))
                return err_set(err, errno, "become root inside the user namespace");
        return 0;
}

static int step_cgroupns(void *arg, struct err **err)
{
        struct box_child *c = arg;
        if (!c->late_cgroupns)
                return 0;
        if (unshare(CLONE_NEWCGROUP) < 0)
                return box_layer_skip(c, LAYER_CGROUPNS, false, err, "unshare: %s", strerror(errno));
        c->rep.applied |= LAYER_BIT(LAYER_CGROUPNS);
        return 0;
}

static int step_rootfs(void *arg, struct err **err)
{
        struct box_child *c = arg;
        return NS(c, LAYER_MNTNS) ? rootfs_setup(c, err) : 0;
}

static int step_hostname(void *arg, struct err **err)
{
        struct box_child *c = arg;
        if (NS(c, LAYER_UTSNS) && (sethostname("chidori", 7) < 0 || setdomainname("chidori", 7) < 0))
                return err_set(err, errno, "set the box's hostname");
        return 0;
}

static int step_lo(void *arg, struct err **err)
{
        struct box_child *c = arg;
        if (!NS(c, LAYER_NETNS))
                return 0;
        struct err *e = NULL;
        int r = 0;
        if (netns_lo_up(&e) < 0)
                r = box_layer_skip(c, LAYER_NETNS, false, err, "empty, but lo is down: %s", err_msg(e));
        if (c->rep.skipped[LAYER_NETNS][0] == '\0')
                c->rep.applied |= LAYER_BIT(LAYER_NETNS);
        err_free(e);
        return r;
}

static int set_rlimit(int res, rlim_t v, const char *name, struct err **err)
{
        struct rlimit rl = { v, v };
        if (setrlimit(res, &rl) < 0)
                return err_set(err, errno, "setrlimit %s", name);
        return 0;
}

static int step_rlimits(void *arg, struct err **err)
{
        struct box_child *c = arg;
        const struct box_opts *o = c->o;
        if (o->disable & LAYER_BIT(LAYER_RLIMITS))
                return box_layer_skip(c, LAYER_RLIMITS, false, err, "disabled by --unsafe-disable");
        if (set_rlimit(RLIMIT_CORE, 0, "core", err) < 0 || set_rlimit(RLIMIT_MEMLOCK, 0, "memlock", err) < 0 ||
            set_rlimit(RLIMIT_NOFILE, (rlim_t)(o->nofile > 0 ? o->nofile : 256), "nofile", err) < 0)
                return -1;
        if (o->cpu_secs > 0) {
                /* SIGXCPU at the soft limit (ignored by a pid-ns init),
                 * SIGKILL one second later at the hard one: the parent tells
                 * it apart by the CPU time used. */
                struct rlimit rl = { (rlim_t)o->cpu_secs, (rlim_t)o->cpu_secs + 1 };
                if (setrlimit(RLIMIT_CPU, &rl) < 0)
                        return err_set(err, errno, "setrlimit cpu");
        }
        if (o->fsize > 0 && set_rlimit(RLIMIT_FSIZE, (rlim_t)o->fsize, "fsize", err) < 0)
                return -1;
        /* pids without a cgroup: RLIMIT_NPROC counts the tasks of one uid in
         * one user namespace (Linux >= 5.14), here the box's own, so it
         * bounds this box alone. */
        if (o->nproc > 0 && NS(c, LAYER_USERNS)) {
                if (set_rlimit(RLIMIT_NPROC, (rlim_t)o->nproc, "nproc", err) < 0)
                        return -1;
                c->rep.nproc_applied = 1;
        } else if (o->nproc > 0 && o->nproc_required) {
                return err_setc(err, BOX_E_LAYER, 0,
                                "sandbox layer unavailable: --pids %ld (no cgroup pids.max, and RLIMIT_NPROC "
                                "bounds one box only inside its own user namespace: %s)",
                                o->nproc, c->rep.skipped[LAYER_USERNS][0] ? c->rep.skipped[LAYER_USERNS] : "none");
        }
        c->rep.applied |= LAYER_BIT(LAYER_RLIMITS);
        return 0;
}

/* No controlling terminal: TIOCSTI-style injection is impossible. */
static int step_setsid(void *arg, struct err **err)
{
        (void)arg;
        if (setsid() < 0)
                return err_set(err, errno, "setsid");
        return 0;
}

/* 0-2, then 3 (frames), 4 (stage-2 filter) and 5 (the loader cue, or
 * closed) for the worker; everything else closes at exec. */
static int step_fds(void *arg, struct err **err)
{
        struct box_child *c = arg;
        const struct box_opts *o = c->o;
        int src[6] = { o->fd0, o->fd1, o->fd2, o->frame_fd, o->stage2_fd, o->worker ? o->loaded_fd : -1 };
        if (fds_place(src, o->worker ? 6 : o->frame_fd >= 0 ? 4 : 3, &c->sync_fd, 1, err) < 0)
                return err_wrap(err, "%s", "close inherited descriptors");
        return 0;
}

/* The program's working directory (the bundle box: the agent's folder, so
 * that esbuild names files as it did on the host). */
static int step_cwd(void *arg, struct err **err)
{
        struct box_child *c = arg;
        if (c->o->cwd && chdir(c->o->cwd) < 0)
                return err_set(err, errno, "chdir %s", c->o->cwd);
        return 0;
}

static int step_lock(void *arg, struct err **err)
{
        struct box_child *c = arg;
        return caps_lock_process(c->parent, err);
}

static int step_caps(void *arg, struct err **err)
{
        struct box_child *c = arg;
        if (c->o->disable & LAYER_BIT(LAYER_CAPS))
                return box_layer_skip(c, LAYER_CAPS, false, err, "disabled by --unsafe-disable");
        if (caps_drop_all(err) < 0)
                return -1;
        c->rep.applied |= LAYER_BIT(LAYER_CAPS);
        return 0;
}

/* caps_lock_process armed the parent-death signal (the box's pid 1 going
 * takes its pid namespace along); across a pid namespace getppid() cannot
 * tell whether the launcher died before that, but a launcher already gone
 * has hung up the sync socket. */
static int step_parent_alive(void *arg, struct err **err)
{
        struct box_child *c = arg;
        struct pollfd alive = { .fd = c->sync_fd, .events = POLLIN | POLLRDHUP };
        if (poll(&alive, 1, 0) > 0 && (alive.revents & (POLLHUP | POLLRDHUP)))
                _exit(78);
        (void)err;
        return 0;
}

static int step_landlock(void *arg, struct err **err)
{
        struct box_child *c = arg;
        const struct box_opts *o = c->o;
        if (o->disable & LAYER_BIT(LAYER_LANDLOCK))
                return box_layer_skip(c, LAYER_LANDLOCK, false, err, "disabled by --unsafe-disable");
        /* Read and execute beneath the box's root; write only into explicit
         * --bind folders.  Without a mount namespace the "root" is the
         * host's: then only the system folders. */
        const char *ro_box[] = { "/", NULL };
        const char *ro_host[] = { "/usr", "/lib", "/lib64", "/etc/ld.so.cache", "/dev/null", "/dev/urandom",
                                  "/proc/self", o->program, NULL };
        /* The harmless devices stay writable (programs write to /dev/null);
         * binds marked rw follow. */
        const char *rw[20] = { "/dev/null", "/dev/zero", "/dev/full", NULL };
        size_t nrw = 3;
        for (size_t i = 0; i < o->nbinds && nrw < 19; i++)
                if (o->binds[i].rw)
                        rw[nrw++] = o->binds[i].dst ? o->binds[i].dst : o->binds[i].src;
        struct landlock_result lr = { 0 };
        const char *const *ro = (c->rep.applied & LAYER_BIT(LAYER_MNTNS)) ? ro_box : ro_host;
        if (landlock_restrict(ro, rw, &lr, err) < 0)
                return -1;
        if (lr.abi == 0) {
                char why[100];
                landlock_abi(why, sizeof(why));
                return box_layer_skip(c, LAYER_LANDLOCK, true, err, "%s", why);
        }
        c->rep.applied |= LAYER_BIT(LAYER_LANDLOCK);
        c->rep.landlock_abi = lr.abi;
        return 0;
}

static int step_seccomp(void *arg, struct err **err)
{
        struct box_child *c = arg;
        const struct box_opts *o = c->o;
        if (!o->filter || (o->disable & LAYER_BIT(LAYER_SECCOMP)))
                return box_layer_skip(c, LAYER_SECCOMP, false, err, "disabled by --unsafe-disable");
        struct sock_fprog prog = { .len = (unsigned short)o->filter->len, .filter = o->filter->insns };
        unsigned flags = o->filter->notify ? SECCOMP_FILTER_FLAG_NEW_LISTENER : 0;
        long r = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, flags, &prog);
        if (r < 0)
                return box_layer_skip(c, LAYER_SECCOMP, true, err, "seccomp(2) refused the filter: %s", strerror(errno));
        c->rep.applied |= LAYER_BIT(LAYER_SECCOMP);
        if (o->filter->notify)
                c->listener = (int)r;
        return 0;
}

static const struct lockdown_step box_steps[] = {
        { "namespaces", step_namespaces },
        { "wait for the parent", step_wait },
        { "root of the user namespace", step_root_in_userns },
        { "cgroup namespace", step_cgroupns },
        { "root filesystem", step_rootfs },
        { "hostname", step_hostname },
        { "loopback up", step_lo },
        { "rlimits", step_rlimits },
        { "new session", step_setsid },
        { "descriptors", step_fds },
        { "working directory", step_cwd },
        { "no_new_privs, not dumpable, parent-death signal", step_lock },
        { "drop capabilities", step_caps },
        { "the parent is alive", step_parent_alive },
        { "landlock", step_landlock },
        { "seccomp", step_seccomp },
};

void box_child_main(struct box_child *c)
{
        c->rep.applied = c->ns_applied;
        const char *failed = NULL;
        struct err *e = NULL;
        if (lockdown_run(box_steps, ARRAY_SIZE(box_steps), c, &failed, &e) < 0)
                child_fail(c, failed, e);
        c->rep.ok = 1;
        send_report(c, c->listener);
        if (c->listener >= 0)
                close(c->listener);
        execve(c->o->program, c->o->argv, c->o->envp);
        err_setc(&e, BOX_E_EXEC, errno, "execute %s", c->o->program);
        child_fail(c, "execve", e);
}
