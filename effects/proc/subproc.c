/* effects/proc/subproc.c — asynchronous children for the broker's poll() loop.
 *
 * Each child is a small state machine driven by subproc_perform:
 *
 *   running --(pidfd readable: exited)--> reaped --(both pipes at EOF, or
 *   SUBPROC_DRAIN_MS passed)--> complete (callback)
 *   running --(deadline)--> stopping (timed_out) --(pidfd readable)--> reaped ...
 *
 * Stopping is SIGKILL to the child and its group, or, with kill_grace_ms,
 * SIGTERM to the child alone (chidori launch then ends its box and removes
 * its cgroup) and SIGKILL to the group kill_grace_ms later if it is still
 * there.
 *
 * Cancelled children move to a second list where only their pidfd is
 * watched until they can be reaped; they never call back.
 *
 * The pollfds handed out by subproc_fds are remembered as (serial, fd) slots
 * so subproc_perform can find their child without trusting fd numbers alone
 * (a callback run between the two calls may have closed an fd and a new child
 * may have got the same number).  Every operation is non-blocking anyway, so
 * a stale entry costs one EAGAIN at most.
 */
#define _GNU_SOURCE
#include "effects/proc/subproc.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/util.h"

#if !defined(__GLIBC__) || !__GLIBC_PREREQ(2, 34)
#error "effects/proc/subproc.c needs glibc 2.34 or later (posix_spawn_file_actions_addclosefrom_np, POSIX_SPAWN_SETSID)"
#endif

#ifndef P_PIDFD
#define P_PIDFD 3
#endif

#define READ_CHUNK 65536
#define READ_BUDGET (256 * 1024)  /* bytes per stream per perform: the worker's frames must not starve */
#define WRITE_CHUNK 65536

struct stream {
        int fd;                /* our read end, -1 once at EOF */
        unsigned char *buf;    /* NUL-terminated when non-NULL */
        size_t len, cap, max;
        bool truncated;
};

struct child {
        struct child *next;
        uint64_t id;
        uint64_t serial;       /* engine-unique, for the poll slots */
        subproc_done_fn done;
        void *arg;
        pid_t pid;
        int pidfd;             /* -1 once reaped */
        bool reaped;
        bool timed_out;
        int code, status;      /* siginfo si_code / si_status once reaped */
        int in_fd;             /* our write end of stdin, -1 when done */
        unsigned char *in;
        size_t in_len, in_off;
        struct stream out, err;
        double start, deadline, drain_until;  /* mono_ms; 0 = none */
        long kill_grace_ms;
        double kill_at;        /* SIGTERM was sent: SIGKILL the group then; 0 = none */
        /* Started elsewhere (subproc_remote_new): no pid here; stopping is
         * kill(), its end comes by subproc_remote_ended. */
        bool remote, kill_sent;
        subproc_kill_fn kill;
        void *kill_arg;
};

struct slot {
        uint64_t serial;
        int fd;
};

struct subproc_engine {
        struct child *live;     /* running or draining, in start order */
        struct child *doomed;   /* cancelled, waiting to be reaped */
        size_t pending;
        uint64_t next_serial;
        struct slot *slots;     /* what the last subproc_fds handed out */
        size_t nslots, capslots;
};

/* ---- small helpers ---- */

static void close_fd(int *fd)
{
        if (*fd >= 0) {
                close(*fd);
                *fd = -1;
        }
}

static int set_nonblock(int fd)
{
        int fl = fcntl(fd, F_GETFL);
        if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
                return -1;
        return 0;
}

static void signal_child(struct child *c, int sig)
{
        if (c->reaped)
                return;
        if (c->remote) {
                if (!c->kill_sent && c->kill)
                        c->kill(c->kill_arg, false);
                c->kill_sent = true;
                return;
        }
        if (syscall(SYS_pidfd_send_signal, c->pidfd, sig, NULL, 0) < 0 && errno == ENOSYS)
                kill(c->pid, sig);
}

static void kill_group(struct child *c)
{
        /* Only while the child is unreaped: its zombie keeps the pid, and so
         * the group id, from being handed to anyone else. */
        if (c->reaped)
                return;
        signal_child(c, SIGKILL);
        if (!c->remote)
                killpg(c->pid, SIGKILL);
}

/* Begin stopping: at once, or gracefully (see the top of the file). */
static void stop(struct child *c)
{
        if (c->reaped || c->kill_at > 0)
                return;
        if (c->kill_grace_ms > 0 && !c->remote) {
                signal_child(c, SIGTERM);
                c->kill_at = mono_ms() + (double)c->kill_grace_ms;
        } else {
                kill_group(c);
        }
}

static void child_free(struct child *c)
{
        if (!c)
                return;
        close_fd(&c->pidfd);
        close_fd(&c->in_fd);
        close_fd(&c->out.fd);
        close_fd(&c->err.fd);
        free(c->in);
        free(c->out.buf);
        free(c->err.buf);
        free(c);
}

static void unlink_child(struct child **list, struct child *c)
{
        for (struct child **p = list; *p; p = &(*p)->next)
                if (*p == c) {
                        *p = c->next;
                        c->next = NULL;
                        return;
                }
}

/* Reap if the child has exited (never blocks).  Leftovers in its group are
 * killed first, while the zombie still pins the group id.  Returns true
 * once reaped. */
static bool try_reap(struct child *c)
{
        if (c->reaped || c->remote)
                return c->reaped;
        siginfo_t si;
        memset(&si, 0, sizeof(si));
        if (waitid((idtype_t)P_PIDFD, (id_t)c->pidfd, &si, WEXITED | WNOHANG | WNOWAIT) < 0) {
                if (errno != EINVAL)
                        return false;
                /* P_PIDFD is Linux 5.4; our own unreaped pid is as safe. */
                if (waitid(P_PID, (id_t)c->pid, &si, WEXITED | WNOHANG | WNOWAIT) < 0)
                        return false;
        }
        if (si.si_pid == 0)
                return false;
        killpg(c->pid, SIGKILL);
        memset(&si, 0, sizeof(si));
        if (waitid((idtype_t)P_PIDFD, (id_t)c->pidfd, &si, WEXITED | WNOHANG) < 0 &&
            waitid(P_PID, (id_t)c->pid, &si, WEXITED | WNOHANG) < 0)
                return false;
        c->reaped = true;
        c->code = si.si_code;
        c->status = si.si_status;
        close_fd(&c->pidfd);
        close_fd(&c->in_fd);  /* nobody left to read it */
        c->drain_until = mono_ms() + SUBPROC_DRAIN_MS;
        return true;
}

/* Block until reaped (teardown only: the child has been sent SIGKILL). */
static void reap_blocking(struct child *c)
{
        if (c->reaped || c->remote)
                return;  /* remote: whoever started it reaps it (it was told to kill it) */
        siginfo_t si;
        for (;;) {
                int r = c->pidfd >= 0 ? waitid((idtype_t)P_PIDFD, (id_t)c->pidfd, &si, WEXITED) : -1;
                if (r < 0 && errno == EINVAL)
                        r = waitid(P_PID, (id_t)c->pid, &si, WEXITED);
                if (r == 0 || errno != EINTR)
                        break;
        }
        c->reaped = true;
}

/* write() that cannot raise SIGPIPE in this process: SIGPIPE is blocked in
 * this thread for the call, and the one our EPIPE generated (thread-directed)
 * is taken off the pending set again — unless one was pending already, which
 * then belongs to someone else and stays. */
static ssize_t write_nosigpipe(int fd, const void *buf, size_t len)
{
        sigset_t pipe_set, old, pending;
        sigemptyset(&pipe_set);
        sigaddset(&pipe_set, SIGPIPE);
        if (pthread_sigmask(SIG_BLOCK, &pipe_set, &old) != 0)
                return -1;
        bool was_pending = sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE);
        ssize_t n = write(fd, buf, len);
        int saved = errno;
        if (n < 0 && saved == EPIPE && !was_pending) {
                static const struct timespec zero = { 0, 0 };
                while (sigtimedwait(&pipe_set, NULL, &zero) < 0 && errno == EINTR)
                        ;
        }
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        errno = saved;
        return n;
}

static void pump_stdin(struct child *c)
{
        while (c->in_fd >= 0 && c->in_off < c->in_len) {
                size_t n = c->in_len - c->in_off;
                ssize_t w = write_nosigpipe(c->in_fd, c->in + c->in_off, n < WRITE_CHUNK ? n : WRITE_CHUNK);
                if (w < 0) {
                        if (errno == EINTR)
                                continue;
                        if (errno == EAGAIN)
                                return;
                        break;  /* EPIPE: the child does not want the rest */
                }
                c->in_off += (size_t)w;
        }
        close_fd(&c->in_fd);
        free(c->in);
        c->in = NULL;
}

static void append(struct stream *s, const unsigned char *p, size_t n)
{
        if (n > s->max - s->len) {
                n = s->max - s->len;
                s->truncated = true;
        }
        if (n == 0)
                return;
        if (s->len + n + 1 > s->cap) {
                size_t cap = s->cap ? s->cap : 4096;
                while (cap < s->len + n + 1)
                        cap *= 2;
                if (cap > s->max + 1)
                        cap = s->max + 1;
                unsigned char *nb = realloc(s->buf, cap);
                if (!nb) {
                        s->truncated = true;  /* out of memory: keep what we have */
                        return;
                }
                s->buf = nb;
                s->cap = cap;
        }
        memcpy(s->buf + s->len, p, n);
        s->len += n;
        s->buf[s->len] = '\0';
}

static void pump_read(struct stream *s)
{
        unsigned char chunk[READ_CHUNK];
        size_t budget = READ_BUDGET;
        while (s->fd >= 0 && budget > 0) {
                ssize_t r = read(s->fd, chunk, sizeof(chunk));
                if (r < 0) {
                        if (errno == EINTR)
                                continue;
                        if (errno == EAGAIN)
                                return;
                        r = 0;  /* treat an error as the end */
                }
                if (r == 0) {
                        close_fd(&s->fd);
                        return;
                }
                append(s, chunk, (size_t)r);
                budget -= (size_t)r < budget ? (size_t)r : budget;
        }
}

/* ---- starting ---- */

static const char *env_path(char *const *envp)
{
        for (size_t i = 0; envp && envp[i]; i++)
                if (strncmp(envp[i], "PATH=", 5) == 0)
                        return envp[i] + 5;
        return SUBPROC_DEFAULT_PATH;
}

static bool is_exec_file(const char *path)
{
        struct stat st;
        return stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0;
}

/* The file to execute for argv[0] (see the header for the rules). */
static int resolve(const char *name, char *const *envp, char **ret, struct err **err)
{
        if (strchr(name, '/')) {
                if (name[0] != '/')
                        return err_setc(err, SUBPROC_E_SPEC, 0,
                                        "subproc: program '%s' must be an absolute path or a bare name", name);
                *ret = strdup(name);
                return *ret ? 0 : err_setc(err, SUBPROC_E_SPAWN, ENOMEM, "subproc");
        }
        const char *path = env_path(envp);
        _cleanup_free_ char *dup = strdup(path);
        if (!dup)
                return err_setc(err, SUBPROC_E_SPAWN, ENOMEM, "subproc");
        for (char *save = NULL, *d = strtok_r(dup, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
                if (d[0] != '/')
                        continue;  /* relative PATH entries would depend on our cwd */
                char *p = NULL;
                if (asprintf(&p, "%s/%s", d, name) < 0)
                        return err_setc(err, SUBPROC_E_SPAWN, ENOMEM, "subproc");
                if (is_exec_file(p)) {
                        *ret = p;
                        return 0;
                }
                free(p);
        }
        return err_setc(err, SUBPROC_E_NOT_FOUND, 0, "subproc: program '%s' not found in PATH=%s", name, path);
}

static struct child *find(struct child *list, uint64_t id)
{
        for (struct child *c = list; c; c = c->next)
                if (c->id == id)
                        return c;
        return NULL;
}

static int sigchld_ok(struct err **err)
{
        struct sigaction sa;
        if (sigaction(SIGCHLD, NULL, &sa) < 0)
                return err_setc(err, SUBPROC_E_SPAWN, errno, "subproc: read the SIGCHLD disposition");
        if (sa.sa_handler == SIG_IGN || (sa.sa_flags & SA_NOCLDWAIT))
                return err_setc(err, SUBPROC_E_SPAWN, 0,
                                "subproc: SIGCHLD is ignored in this process, so the kernel would reap our "
                                "children before we can read their status");
        return 0;
}

/* posix_spawn the program with pipes on 0, 1, 2.  The three parent ends are
 * returned non-blocking; all six are O_CLOEXEC. */
static int spawn(const char *path, const struct subproc_spec *spec, pid_t *ret_pid, int ret_fds[3],
                 struct err **err)
{
        static char *const empty_env[] = { NULL };
        int p[3][2] = { { -1, -1 }, { -1, -1 }, { -1, -1 } };
        posix_spawn_file_actions_t fa;
        posix_spawnattr_t attr;
        sigset_t none, all;
        pid_t pid;
        int r = -1, e;

        sigemptyset(&none);
        sigfillset(&all);
        if ((e = posix_spawn_file_actions_init(&fa)) != 0)
                return err_setc(err, SUBPROC_E_SPAWN, e, "subproc: prepare posix_spawn");
        if ((e = posix_spawnattr_init(&attr)) != 0) {
                posix_spawn_file_actions_destroy(&fa);
                return err_setc(err, SUBPROC_E_SPAWN, e, "subproc: prepare posix_spawn");
        }
        for (int i = 0; i < 3; i++)
                if (pipe2(p[i], O_CLOEXEC) < 0) {
                        err_setc(err, SUBPROC_E_SPAWN, errno, "subproc: pipe");
                        goto out;
                }
        /* parent ends: write end of stdin, read ends of stdout and stderr */
        if (set_nonblock(p[0][1]) < 0 || set_nonblock(p[1][0]) < 0 || set_nonblock(p[2][0]) < 0) {
                err_setc(err, SUBPROC_E_SPAWN, errno, "subproc: O_NONBLOCK");
                goto out;
        }
        /* dup2 clears O_CLOEXEC on 0, 1, 2; then close_range(3, ~0) in the
         * child: nothing of the broker's leaks, O_CLOEXEC or not. */
        if ((e = posix_spawn_file_actions_adddup2(&fa, p[0][0], 0)) != 0 ||
            (e = posix_spawn_file_actions_adddup2(&fa, p[1][1], 1)) != 0 ||
            (e = posix_spawn_file_actions_adddup2(&fa, p[2][1], 2)) != 0 ||
            (e = posix_spawn_file_actions_addclosefrom_np(&fa, 3)) != 0 ||
            (e = posix_spawn_file_actions_addchdir_np(&fa, spec->cwd ? spec->cwd : "/")) != 0 ||
            (e = posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK |
                                                         POSIX_SPAWN_SETSIGDEF)) != 0 ||
            (e = posix_spawnattr_setsigmask(&attr, &none)) != 0 ||
            (e = posix_spawnattr_setsigdefault(&attr, &all)) != 0) {
                err_setc(err, SUBPROC_E_SPAWN, e, "subproc: prepare posix_spawn");
                goto out;
        }
        e = posix_spawn(&pid, path, &fa, &attr, spec->argv, spec->envp ? spec->envp : empty_env);
        if (e) {
                bool missing = e == ENOENT || e == EACCES || e == ENOEXEC || e == ENOTDIR;
                err_setc(err, missing ? SUBPROC_E_NOT_FOUND : SUBPROC_E_SPAWN, e, "subproc: execute '%s'", path);
                goto out;
        }
        *ret_pid = pid;
        ret_fds[0] = take_fd(&p[0][1]);
        ret_fds[1] = take_fd(&p[1][0]);
        ret_fds[2] = take_fd(&p[2][0]);
        r = 0;
out:
        posix_spawn_file_actions_destroy(&fa);
        posix_spawnattr_destroy(&attr);
        for (int i = 0; i < 3; i++) {
                close_fd(&p[i][0]);
                close_fd(&p[i][1]);
        }
        return r;
}

int subproc_engine_new(struct subproc_engine **ret, struct err **err)
{
        struct subproc_engine *e = calloc(1, sizeof(*e));
        if (!e)
                return err_set(err, ENOMEM, "subproc: engine");
        e->next_serial = 1;
        *ret = e;
        return 0;
}

int subproc_start(struct subproc_engine *e, uint64_t id, const struct subproc_spec *spec, subproc_done_fn done,
                  void *arg, struct err **err)
{
        if (!spec || !spec->argv || !spec->argv[0] || !spec->argv[0][0])
                return err_setc(err, SUBPROC_E_SPEC, 0, "subproc: no program (argv is empty)");
        if (find(e->live, id))
                return err_setc(err, SUBPROC_E_SPEC, 0, "subproc: id %llu is already running",
                                (unsigned long long)id);
        if (spec->timeout_ms < 0)
                return err_setc(err, SUBPROC_E_SPEC, 0, "subproc: negative timeout");
        if (spec->cwd) {
                struct stat st;
                if (spec->cwd[0] != '/')
                        return err_setc(err, SUBPROC_E_SPEC, 0, "subproc: cwd '%s' is not absolute", spec->cwd);
                if (stat(spec->cwd, &st) < 0)
                        return err_setc(err, SUBPROC_E_SPEC, errno, "subproc: cwd '%s'", spec->cwd);
                if (!S_ISDIR(st.st_mode))
                        return err_setc(err, SUBPROC_E_SPEC, ENOTDIR, "subproc: cwd '%s'", spec->cwd);
        }
        if (sigchld_ok(err) < 0)
                return -1;
        _cleanup_free_ char *path = NULL;
        if (resolve(spec->argv[0], spec->envp, &path, err) < 0)
                return -1;

        struct child *c = calloc(1, sizeof(*c));
        if (!c)
                return err_setc(err, SUBPROC_E_SPAWN, ENOMEM, "subproc");
        c->pidfd = c->in_fd = c->out.fd = c->err.fd = -1;
        if (spec->stdin_len) {
                c->in = malloc(spec->stdin_len);
                if (!c->in) {
                        free(c);
                        return err_setc(err, SUBPROC_E_SPAWN, ENOMEM, "subproc: stdin");
                }
                memcpy(c->in, spec->stdin_data, spec->stdin_len);
                c->in_len = spec->stdin_len;
        }
        int fds[3] = { -1, -1, -1 };
        if (spawn(path, spec, &c->pid, fds, err) < 0) {
                child_free(c);
                return -1;
        }
        c->in_fd = fds[0];
        c->out.fd = fds[1];
        c->err.fd = fds[2];
        c->pidfd = (int)syscall(SYS_pidfd_open, c->pid, 0);
        if (c->pidfd < 0) {
                int saved = errno;
                kill(c->pid, SIGKILL);
                while (waitpid(c->pid, NULL, 0) < 0 && errno == EINTR)
                        ;
                child_free(c);
                return err_setc(err, SUBPROC_E_SPAWN, saved, "subproc: pidfd_open (Linux 5.3 or later is needed)");
        }
        c->id = id;
        c->serial = e->next_serial++;
        c->done = done;
        c->arg = arg;
        c->out.max = spec->max_stdout_bytes ? spec->max_stdout_bytes : SUBPROC_DEFAULT_MAX_OUTPUT;
        c->err.max = spec->max_stderr_bytes ? spec->max_stderr_bytes : SUBPROC_DEFAULT_MAX_OUTPUT;
        c->start = mono_ms();
        c->deadline = spec->timeout_ms > 0 ? c->start + (double)spec->timeout_ms : 0;
        c->kill_grace_ms = spec->kill_grace_ms > 0 ? spec->kill_grace_ms : 0;
        if (c->in_len == 0)
                close_fd(&c->in_fd);
        else
                pump_stdin(c);  /* most inputs fit the pipe at once */

        struct child **tail = &e->live;
        while (*tail)
                tail = &(*tail)->next;
        *tail = c;
        e->pending++;
        return 0;
}

bool subproc_cancel(struct subproc_engine *e, uint64_t id)
{
        struct child *c = e ? find(e->live, id) : NULL;
        if (!c)
                return false;
        unlink_child(&e->live, c);
        e->pending--;
        stop(c);
        close_fd(&c->in_fd);
        close_fd(&c->out.fd);
        close_fd(&c->err.fd);
        if (c->remote && c->kill && !c->reaped)
                c->kill(c->kill_arg, true);  /* its end is not ours to wait for */
        if (c->remote || try_reap(c)) {
                child_free(c);
        } else {
                c->next = e->doomed;
                e->doomed = c;
        }
        return true;
}

size_t subproc_pending(const struct subproc_engine *e)
{
        return e ? e->pending : 0;
}

pid_t subproc_pid(const struct subproc_engine *e, uint64_t id)
{
        const struct child *c = e ? find(e->live, id) : NULL;
        return c ? c->pid : 0;
}

void subproc_engine_free(struct subproc_engine *e)
{
        if (!e)
                return;
        struct child *lists[2] = { e->live, e->doomed };
        /* Those with a grace get SIGTERM and up to their grace to go (this
         * blocks: it is teardown); then everything left gets SIGKILL. */
        double until = 0;
        for (int i = 0; i < 2; i++)
                for (struct child *c = lists[i]; c; c = c->next) {
                        stop(c);
                        if (c->kill_at > until)
                                until = c->kill_at;
                }
        while (until > 0 && mono_ms() < until) {
                bool waiting = false;
                for (int i = 0; i < 2; i++)
                        for (struct child *c = lists[i]; c; c = c->next)
                                if (c->kill_at > 0 && !try_reap(c))
                                        waiting = true;
                if (!waiting)
                        break;
                usleep(5000);
        }
        for (int i = 0; i < 2; i++)
                for (struct child *c = lists[i], *next; c; c = next) {
                        next = c->next;
                        kill_group(c);
                        if (c->remote && c->kill && !c->reaped)
                                c->kill(c->kill_arg, true);  /* its events find no engine now */
                        reap_blocking(c);
                        child_free(c);
                }
        free(e->slots);
        free(e);
}

/* ---- children started elsewhere ---- */

int subproc_remote_new(struct subproc_engine *e, uint64_t id, const struct subproc_spec *spec, subproc_kill_fn kill,
                       void *kill_arg, subproc_done_fn done, void *arg, struct err **err)
{
        if (find(e->live, id))
                return err_setc(err, SUBPROC_E_SPEC, 0, "subproc: id %llu is already running",
                                (unsigned long long)id);
        struct child *c = calloc(1, sizeof(*c));
        if (!c || (spec->stdin_len && !(c->in = malloc(spec->stdin_len)))) {
                free(c);
                return err_setc(err, SUBPROC_E_SPAWN, ENOMEM, "subproc");
        }
        if (spec->stdin_len)
                memcpy(c->in, spec->stdin_data, spec->stdin_len);
        c->in_len = spec->stdin_len;
        c->pidfd = c->in_fd = c->out.fd = c->err.fd = -1;
        c->remote = true;
        c->kill = kill;
        c->kill_arg = kill_arg;
        c->id = id;
        c->serial = e->next_serial++;
        c->done = done;
        c->arg = arg;
        c->out.max = spec->max_stdout_bytes ? spec->max_stdout_bytes : SUBPROC_DEFAULT_MAX_OUTPUT;
        c->err.max = spec->max_stderr_bytes ? spec->max_stderr_bytes : SUBPROC_DEFAULT_MAX_OUTPUT;
        c->start = mono_ms();
        c->deadline = spec->timeout_ms > 0 ? c->start + (double)spec->timeout_ms : 0;
        struct child **tail = &e->live;
        while (*tail)
                tail = &(*tail)->next;
        *tail = c;
        e->pending++;
        return 0;
}

static struct child *remote(struct subproc_engine *e, uint64_t id)
{
        struct child *c = e ? find(e->live, id) : NULL;
        return c && c->remote ? c : NULL;
}

int subproc_remote_started(struct subproc_engine *e, uint64_t id, int fds[3])
{
        struct child *c = remote(e, id);
        if (!c || c->out.fd >= 0 || c->reaped ||
            set_nonblock(fds[0]) < 0 || set_nonblock(fds[1]) < 0 || set_nonblock(fds[2]) < 0)
                return -1;
        c->in_fd = take_fd(&fds[0]);
        c->out.fd = take_fd(&fds[1]);
        c->err.fd = take_fd(&fds[2]);
        if (c->kill_sent || c->timed_out)
                close_fd(&c->in_fd);
        else if (c->in_len == 0)
                close_fd(&c->in_fd);
        else
                pump_stdin(c);
        return 0;
}

void subproc_remote_ended(struct subproc_engine *e, uint64_t id, bool started, int wait_status)
{
        struct child *c = remote(e, id);
        if (!c || c->reaped)
                return;
        c->reaped = true;
        if (WIFEXITED(wait_status)) {
                c->code = CLD_EXITED;
                c->status = WEXITSTATUS(wait_status);
        } else {
                c->code = CLD_KILLED;
                c->status = WIFSIGNALED(wait_status) ? WTERMSIG(wait_status) : SIGKILL;
        }
        close_fd(&c->in_fd);
        c->drain_until = started ? mono_ms() + SUBPROC_DRAIN_MS : 0;
}

bool subproc_remote_forget(struct subproc_engine *e, uint64_t id)
{
        struct child *c = remote(e, id);
        if (!c)
                return false;
        unlink_child(&e->live, c);
        e->pending--;
        child_free(c);
        return true;
}

/* ---- the loop ---- */

static int add_slot(struct subproc_engine *e, struct pollfd *fds, size_t max, size_t *n, const struct child *c,
                    int fd, short events)
{
        if (*n < max) {
                if (e->nslots == e->capslots) {
                        size_t cap = e->capslots ? e->capslots * 2 : 16;
                        struct slot *ns = realloc(e->slots, cap * sizeof(*ns));
                        if (!ns)
                                return -1;
                        e->slots = ns;
                        e->capslots = cap;
                }
                fds[*n] = (struct pollfd){ .fd = fd, .events = events };
                e->slots[e->nslots++] = (struct slot){ .serial = c->serial, .fd = fd };
        }
        (*n)++;
        return 0;
}

static void lower_timeout(int *timeout_ms, double at, double now)
{
        if (at <= 0)
                return;
        double left = at - now;
        int ms = left <= 0 ? 0 : left >= 86400000.0 ? 86400000 : (int)left + 1;
        if (*timeout_ms < 0 || ms < *timeout_ms)
                *timeout_ms = ms;
}

size_t subproc_fds(struct subproc_engine *e, struct pollfd *fds, size_t max, int *timeout_ms)
{
        size_t n = 0;
        e->nslots = 0;
        double now = mono_ms();
        for (struct child *c = e->live; c; c = c->next) {
                /* Out of memory for a slot: hand out nothing more and wake
                 * up soon; perform polls by itself meanwhile. */
                if ((c->pidfd >= 0 && add_slot(e, fds, max, &n, c, c->pidfd, POLLIN) < 0) ||
                    (c->in_fd >= 0 && add_slot(e, fds, max, &n, c, c->in_fd, POLLOUT) < 0) ||
                    (c->out.fd >= 0 && add_slot(e, fds, max, &n, c, c->out.fd, POLLIN) < 0) ||
                    (c->err.fd >= 0 && add_slot(e, fds, max, &n, c, c->err.fd, POLLIN) < 0)) {
                        *timeout_ms = *timeout_ms < 0 || *timeout_ms > 10 ? 10 : *timeout_ms;
                        return e->nslots;
                }
                if (!c->reaped && !c->timed_out)
                        lower_timeout(timeout_ms, c->deadline, now);
                if (!c->reaped)
                        lower_timeout(timeout_ms, c->kill_at, now);
                if (c->reaped)
                        lower_timeout(timeout_ms, c->drain_until, now);
        }
        for (struct child *c = e->doomed; c; c = c->next) {
                if (add_slot(e, fds, max, &n, c, c->pidfd, POLLIN) < 0) {
                        *timeout_ms = *timeout_ms < 0 || *timeout_ms > 10 ? 10 : *timeout_ms;
                        return e->nslots;
                }
                lower_timeout(timeout_ms, c->kill_at, now);
        }
        return n;
}

static struct child *by_serial(struct child *list, uint64_t serial)
{
        for (struct child *c = list; c; c = c->next)
                if (c->serial == serial)
                        return c;
        return NULL;
}

static void act(struct child *c, int fd)
{
        if (fd == c->pidfd)
                try_reap(c);
        else if (fd == c->in_fd)
                pump_stdin(c);
        else if (fd == c->out.fd)
                pump_read(&c->out);
        else if (fd == c->err.fd)
                pump_read(&c->err);
}

static void complete(struct child *c)
{
        struct subproc_result r = {
                .exited = c->code == CLD_EXITED,
                .exit_code = c->code == CLD_EXITED ? c->status : 0,
                .signal = c->code == CLD_EXITED ? 0 : c->status,
                .timed_out = c->timed_out,
                .out = c->out.buf ? c->out.buf : (const unsigned char *)"",
                .out_len = c->out.len,
                .out_truncated = c->out.truncated,
                .err = c->err.buf ? c->err.buf : (const unsigned char *)"",
                .err_len = c->err.len,
                .err_truncated = c->err.truncated,
                .elapsed_ms = mono_ms() - c->start,
        };
        if (c->done)
                c->done(c->arg, c->id, &r);
}

int subproc_perform(struct subproc_engine *e, const struct pollfd *fds, size_t nfds, struct err **err)
{
        struct pollfd own[64];
        _cleanup_free_ struct pollfd *heap = NULL;
        if (!fds) {
                int t = -1;
                size_t need = subproc_fds(e, own, ARRAY_SIZE(own), &t);
                struct pollfd *use = own;
                if (need > ARRAY_SIZE(own)) {
                        heap = calloc(need, sizeof(*heap));
                        if (!heap)
                                return err_set(err, ENOMEM, "subproc: poll");
                        need = subproc_fds(e, heap, need, &t);
                        use = heap;
                }
                if (poll(use, need, 0) < 0 && errno != EINTR)
                        return err_set(err, errno, "subproc: poll");
                fds = use;
                nfds = need;
        }
        for (size_t i = 0; i < nfds && i < e->nslots; i++) {
                if (!fds[i].revents || e->slots[i].fd != fds[i].fd)
                        continue;
                struct child *c = by_serial(e->live, e->slots[i].serial);
                if (c) {
                        act(c, fds[i].fd);
                        continue;
                }
                c = by_serial(e->doomed, e->slots[i].serial);
                if (c && try_reap(c)) {
                        unlink_child(&e->doomed, c);
                        child_free(c);
                }
        }
        /* Deadlines, then collect what is complete, then call back (the
         * callbacks may start or cancel children: the lists are settled). */
        double now = mono_ms();
        struct child *finished = NULL, **ftail = &finished;
        for (struct child **p = &e->live; *p;) {
                struct child *c = *p;
                if (!c->reaped && !c->timed_out && c->deadline > 0 && now >= c->deadline) {
                        c->timed_out = true;
                        stop(c);
                        close_fd(&c->in_fd);
                }
                if (!c->reaped && c->kill_at > 0 && now >= c->kill_at) {
                        kill_group(c);
                        c->kill_at = 0;
                }
                if (c->reaped && now >= c->drain_until) {
                        /* A descendant that left the group still holds a pipe. */
                        close_fd(&c->out.fd);
                        close_fd(&c->err.fd);
                }
                if (c->reaped && c->out.fd < 0 && c->err.fd < 0) {
                        *p = c->next;
                        c->next = NULL;
                        *ftail = c;
                        ftail = &c->next;
                        e->pending--;
                } else {
                        p = &c->next;
                }
        }
        for (struct child *c = e->doomed; c; c = c->next)
                if (c->kill_at > 0 && now >= c->kill_at) {
                        kill_group(c);
                        c->kill_at = 0;
                }
        e->nslots = 0;  /* the fds handed out are stale from here on */
        for (struct child *c = finished, *next; c; c = next) {
                next = c->next;
                complete(c);
                child_free(c);
        }
        return 0;
}
