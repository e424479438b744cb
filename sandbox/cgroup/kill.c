#define _GNU_SOURCE
/* sandbox/cgroup/kill.c — emptying and removing a cgroup subtree.
 *
 * v2 (5.14+) has cgroup.kill: one write SIGKILLs the subtree and no fork can
 * escape.  Elsewhere we read cgroup.procs and kill pid by pid, which has two
 * hazards: a pid read from the file may exit and be reused by an unrelated
 * process before the signal, and a process may fork while we kill.  Against
 * the first we open a pidfd, then check through /proc/PID/cgroup that the
 * process the pidfd now pins is inside our cgroup, then signal the pidfd (a
 * pidfd never retargets).  Against the second we repeat until the subtree
 * stays empty (pids.max bounds a fork bomb).  Zombies are not listed in
 * cgroup.procs and do not keep a cgroup busy (checked on 6.18, v1 and v2).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "sandbox/cgroup/cgroup-internal.h"

static int64_t now_ms(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void sleep_us(long us)
{
        struct timespec ts = { us / 1000000, (us % 1000000) * 1000 };
        while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
                ;
}

static const char *probe_ctl(const struct hier *hi)
{
        if (hi->v2)
                return NULL;
        for (int c = 0; c < CGROUP_CTL_MAX; c++)
                if (hi->ctls & CTL_BIT(c))
                        return cgroup_ctl_name(c);
        return NULL;
}

/* Is pid (as /proc shows it now) inside cg or below? */
static bool pid_in_cgroup(const struct hier *hi, pid_t pid, const char *cg)
{
        char path[64];
        snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)pid);
        _cleanup_free_ char *text = NULL, *cur = NULL;
        if (cg_read_at(AT_FDCWD, path, &text) < 0)
                return false;
        if (cg_proc_cgroup_path(text, probe_ctl(hi), &cur, NULL) < 0)
                return false;
        size_t l = strlen(cg);
        if (strcmp(cg, "/") == 0)
                return true;
        return strncmp(cur, cg, l) == 0 && (cur[l] == '\0' || cur[l] == '/');
}

static int kill_one(const struct hier *hi, pid_t pid, const char *cg)
{
        int pfd = (int)syscall(SYS_pidfd_open, pid, 0);
        if (pfd < 0) {
                if (errno == ESRCH)
                        return 0;
                if (errno != ENOSYS)
                        return -errno;
                /* before 5.3: a small reuse window remains between check and kill */
                if (pid_in_cgroup(hi, pid, cg) && kill(pid, SIGKILL) < 0 && errno != ESRCH)
                        return -errno;
                return 0;
        }
        int r = 0;
        if (pid_in_cgroup(hi, pid, cg) &&
            syscall(SYS_pidfd_send_signal, pfd, SIGKILL, NULL, 0) < 0 && errno != ESRCH)
                r = -errno;
        close(pfd);
        return r;
}

static int kill_listed_depth(const struct hier *hi, int dirfd, const char *cg, int depth)
{
        if (depth > CG_MAX_DEPTH)
                return -ELOOP;
        _cleanup_free_ char *procs = NULL;
        int r = cg_read_at(dirfd, "cgroup.procs", &procs);
        if (r < 0)
                return r == -ENOENT || r == -ENODEV ? 0 : r;
        int listed = 0;
        for (char *p = procs; *p;) {
                char *end;
                long pid = strtol(p, &end, 10);
                if (end == p)
                        break;
                if (pid > 0) {
                        listed++;
                        r = kill_one(hi, (pid_t)pid, cg);
                        if (r < 0)
                                return r;
                }
                p = end;
                while (*p == '\n')
                        p++;
        }
        int dfd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0)
                return -errno;
        DIR *d = fdopendir(dfd);
        if (!d) {
                close(dfd);
                return -errno;
        }
        struct dirent *de;
        while ((de = readdir(d))) {
                if (de->d_type != DT_DIR || de->d_name[0] == '.')
                        continue;
                _cleanup_close_ int sub = openat(dirfd, de->d_name,
                                                 O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                if (sub < 0)
                        continue; /* went away */
                r = kill_listed_depth(hi, sub, cg, depth + 1);
                if (r < 0) {
                        closedir(d);
                        return r;
                }
                listed += r;
        }
        closedir(d);
        return listed;
}

int cg_kill_listed(const struct hier *hi, int dirfd, const char *cg)
{
        return kill_listed_depth(hi, dirfd, cg, 0);
}

/* v2: 1 populated, 0 empty, -errno. */
static int populated(int evfd)
{
        char buf[256];
        ssize_t n = pread(evfd, buf, sizeof(buf) - 1, 0);
        if (n < 0)
                return -errno;
        buf[n] = '\0';
        uint64_t v;
        if (cg_kv_get(buf, "populated", &v) < 0)
                return -EINVAL;
        return v != 0;
}

static int wait_unpopulated(int dirfd, int64_t deadline)
{
        _cleanup_close_ int ev = openat(dirfd, "cgroup.events", O_RDONLY | O_CLOEXEC);
        if (ev < 0)
                return -errno;
        /* The kernel signals a change of cgroup.events with POLLPRI, but at
         * most once per 10 ms per file (CGROUP_FILE_NOTIFY_MIN_INTV): a run
         * that ends within 10 ms of its start would wait for that timer.  So
         * the wait is also bounded by a short, growing timeout. */
        long pause_us = 50;
        for (;;) {
                int p = populated(ev);
                if (p <= 0)
                        return p;
                if (now_ms() >= deadline)
                        return -EBUSY;
                struct pollfd pfd = { .fd = ev, .events = POLLPRI };
                struct timespec ts = { 0, pause_us * 1000 };
                if (ppoll(&pfd, 1, &ts, NULL) < 0 && errno != EINTR)
                        return -errno;
                if (pause_us < 10000)
                        pause_us *= 2;
        }
}

int cg_kill_drain(const struct hier *hi, int dirfd, const char *cg, bool use_kill_file, int ms)
{
        int64_t deadline = now_ms() + ms;
        if (hi->v2 && use_kill_file) {
                int r = cg_write_at(dirfd, "cgroup.kill", "1");
                if (r == 0)
                        return wait_unpopulated(dirfd, deadline);
                if (r != -ENOENT && r != -EOPNOTSUPP)
                        return r;
        }
        long pause_us = 100;
        for (;;) {
                int n = cg_kill_listed(hi, dirfd, cg);
                if (n < 0)
                        return n;
                if (n == 0)
                        return 0;
                if (now_ms() >= deadline)
                        return -EBUSY;
                sleep_us(pause_us);
                if (pause_us < 10000)
                        pause_us *= 2;
        }
}

static int rmdir_retry(int parent_fd, const char *name, int64_t deadline)
{
        long pause_us = 100;
        for (;;) {
                if (unlinkat(parent_fd, name, AT_REMOVEDIR) == 0 || errno == ENOENT)
                        return 0;
                if (errno != EBUSY || now_ms() >= deadline)
                        return -errno;
                sleep_us(pause_us);
                if (pause_us < 10000)
                        pause_us *= 2;
        }
}

/* rmdir everything below dirfd, deepest first (the leaf is already empty). */
static int remove_children(int dirfd, int depth, int64_t deadline)
{
        if (depth > CG_MAX_DEPTH)
                return -ELOOP;
        int dfd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0)
                return -errno;
        DIR *d = fdopendir(dfd);
        if (!d) {
                close(dfd);
                return -errno;
        }
        int r = 0;
        struct dirent *de;
        while (r == 0 && (de = readdir(d))) {
                if (de->d_type != DT_DIR || de->d_name[0] == '.')
                        continue;
                _cleanup_close_ int sub = openat(dirfd, de->d_name,
                                                 O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                if (sub < 0)
                        continue;
                r = remove_children(sub, depth + 1, deadline);
                if (r == 0)
                        r = rmdir_retry(dirfd, de->d_name, deadline);
        }
        closedir(d);
        return r;
}

int cg_remove_tree(const struct hier *hi, int parent_fd, const char *parent_cg, const char *name,
                   bool use_kill_file, int ms)
{
        int64_t deadline = now_ms() + ms;
        _cleanup_close_ int fd = openat(parent_fd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return errno == ENOENT ? 0 : -errno;
        _cleanup_free_ char *cg = NULL;
        if (asprintf(&cg, "%s/%s", strcmp(parent_cg, "/") == 0 ? "" : parent_cg, name) < 0)
                return -ENOMEM;
        int r = cg_kill_drain(hi, fd, cg, use_kill_file, ms);
        if (r < 0)
                return r;
        r = remove_children(fd, 0, deadline);
        if (r < 0)
                return r;
        return rmdir_retry(parent_fd, name, deadline);
}
