/* sandbox/memwatch.c — see memwatch.h. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "sandbox/memwatch.h"

/* The most processes one poll visits (a box without a cgroup is held to
 * --pids by RLIMIT_NPROC, 64 by default). */
#define TREE_MAX 4096

struct memwatch {
        pthread_t thread;
        pid_t pid;
        int pidfd, procfd;
        uint64_t limit;
        bool tree, kill_tree;
        atomic_bool stop, killed;
        _Atomic uint64_t peak;
};

static int64_t kb_field(const char *buf, const char *key)
{
        const char *p = strstr(buf, key);
        if (!p)
                return 0;
        p += strlen(key);
        while (*p == ' ' || *p == '\t')
                p++;
        int64_t v = 0;
        while (*p >= '0' && *p <= '9' && v < (INT64_MAX - 9) / 10 / 1024)
                v = v * 10 + (*p++ - '0');
        return v * 1024;
}

int64_t memwatch_rss(int procfd, pid_t pid)
{
        int fd;
        if (procfd >= 0) {
                fd = openat(procfd, "status", O_RDONLY | O_CLOEXEC);
        } else {
                char path[48];
                snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
                fd = open(path, O_RDONLY | O_CLOEXEC);
        }
        if (fd < 0)
                return -1;
        char buf[4096];
        size_t n = 0;
        ssize_t r = 0;
        while (n < sizeof(buf) - 1 && (r = read(fd, buf + n, sizeof(buf) - 1 - n)) > 0)
                n += (size_t)r;
        close(fd);
        if (n == 0)
                return -1; /* ESRCH: the process is gone */
        buf[n] = '\0';
        /* A zombie has no Rss lines: 0. */
        return kb_field(buf, "\nRssAnon:") + kb_field(buf, "\nRssShmem:");
}

/* Append the children of every thread of pid to out (at most max). */
static size_t children_of(pid_t pid, pid_t *out, size_t max)
{
        char path[48];
        snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
        int dfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0)
                return 0;
        size_t n = 0;
        char dbuf[2048];
        ssize_t got;
        while (n < max && (got = getdents64(dfd, dbuf, sizeof(dbuf))) > 0) {
                for (ssize_t off = 0; off < got && n < max;) {
                        struct dirent64 *d = (struct dirent64 *)(dbuf + off);
                        off += d->d_reclen;
                        if (d->d_name[0] < '0' || d->d_name[0] > '9')
                                continue;
                        char cp[300];
                        snprintf(cp, sizeof(cp), "%s/children", d->d_name);
                        int cfd = openat(dfd, cp, O_RDONLY | O_CLOEXEC);
                        if (cfd < 0)
                                continue;
                        /* "pid pid pid " — parsed across reads */
                        char buf[512];
                        long cur = -1;
                        ssize_t r;
                        while (n < max && (r = read(cfd, buf, sizeof(buf))) > 0) {
                                for (ssize_t i = 0; i < r && n < max; i++) {
                                        if (buf[i] >= '0' && buf[i] <= '9') {
                                                cur = (cur < 0 ? 0 : cur) * 10 + (buf[i] - '0');
                                                if (cur > 0x3fffffff)
                                                        cur = -1;
                                        } else if (cur > 0) {
                                                out[n++] = (pid_t)cur;
                                                cur = -1;
                                        }
                                }
                        }
                        if (cur > 0 && n < max)
                                out[n++] = (pid_t)cur;
                        close(cfd);
                }
        }
        close(dfd);
        return n;
}

static void kill_pid(pid_t pid)
{
        int fd = (int)syscall(SYS_pidfd_open, pid, 0);
        if (fd >= 0) {
                syscall(SYS_pidfd_send_signal, fd, SIGKILL, NULL, 0);
                close(fd);
        }
}

static void *watch(void *arg)
{
        struct memwatch *w = arg;
        pid_t q[TREE_MAX]; /* 16 KiB of the thread's stack */
        const struct timespec tick = { 0, MEMWATCH_INTERVAL_MS * 1000000L };
        while (!atomic_load(&w->stop)) {
                int64_t total = memwatch_rss(w->procfd, w->pid);
                if (total < 0)
                        break; /* the box has ended */
                size_t nq = 0;
                if (w->tree) {
                        nq = children_of(w->pid, q, TREE_MAX);
                        for (size_t i = 0; i < nq; i++) {
                                int64_t r = memwatch_rss(-1, q[i]);
                                if (r > 0)
                                        total += r;
                                nq += children_of(q[i], q + nq, TREE_MAX - nq);
                        }
                }
                if ((uint64_t)total > atomic_load(&w->peak))
                        atomic_store(&w->peak, (uint64_t)total);
                if ((uint64_t)total > w->limit) {
                        /* The flag first: whoever sees the box die sees why. */
                        atomic_store(&w->killed, true);
                        for (size_t i = 0; w->kill_tree && i < nq; i++)
                                kill_pid(q[i]);
                        syscall(SYS_pidfd_send_signal, w->pidfd, SIGKILL, NULL, 0);
                        break;
                }
                nanosleep(&tick, NULL);
        }
        return NULL;
}

int memwatch_start(pid_t pid, int pidfd, uint64_t limit_bytes, bool tree, bool kill_tree, struct memwatch **ret,
                   struct err **err)
{
        struct memwatch *w = calloc(1, sizeof(*w));
        if (!w)
                return err_set(err, ENOMEM, "memory watchdog");
        w->pid = pid;
        w->limit = limit_bytes;
        w->tree = tree;
        w->kill_tree = kill_tree;
        w->pidfd = fcntl(pidfd, F_DUPFD_CLOEXEC, 3);
        char path[48];
        snprintf(path, sizeof(path), "/proc/%d", (int)pid);
        /* The box is our child and not reaped yet: the pid names it. */
        w->procfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (w->pidfd < 0 || w->procfd < 0) {
                int e = errno;
                memwatch_stop(w, NULL);
                return err_set(err, e, "memory watchdog: open %s", path);
        }
        /* Signals stay with the launcher's main thread (its poll must see
         * SIGINT/SIGTERM as EINTR). */
        sigset_t all, old;
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &old);
        int r = pthread_create(&w->thread, NULL, watch, w);
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        if (r != 0) {
                close(w->pidfd);
                close(w->procfd);
                free(w);
                return err_set(err, r, "memory watchdog: start the thread");
        }
        *ret = w;
        return 0;
}

void memwatch_stop(struct memwatch *w, struct memwatch_result *ret)
{
        if (ret)
                memset(ret, 0, sizeof(*ret));
        if (!w)
                return;
        if (w->procfd >= 0 && w->pidfd >= 0) {
                atomic_store(&w->stop, true);
                pthread_join(w->thread, NULL);
        }
        if (ret) {
                ret->killed = atomic_load(&w->killed);
                ret->peak_bytes = atomic_load(&w->peak);
                ret->limit_bytes = w->limit;
        }
        if (w->pidfd >= 0)
                close(w->pidfd);
        if (w->procfd >= 0)
                close(w->procfd);
        free(w);
}
