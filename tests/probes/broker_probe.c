/* tests/probes/broker_probe.c — plays chidori-broker for the posture and
 * compromised-broker tests (tests/bats/broker.bats), exec'd by the monitor
 * through CHIDORI_BROKER (build/start-broker starts it).
 *
 *   broker_probe [--control] CMD [ARG]
 *
 * Like chidori-broker it first runs broker_lockdown() (not dumpable, the
 * stage-2 filter) — unless --control, the test's control run without any
 * lockdown — then says HELLO on fd 3 and waits for WELCOME, then runs CMD
 * and prints one line:
 *   OK <detail>                 the attempt worked (exit 0)
 *   DENIED <ERRNO> <detail>     the kernel refused it (exit 1)
 * A seccomp kill ends the probe before it prints anything.
 * Commands: posture, open PATH, write DIR (a file, removed), create PATH
 * (left), agent-file REL (OPEN_AGENT_FILE), config N (fd 4: a blob of N
 * strings), fds (which of 0-9 are open), sleep SECS, signal PID, exec, ptrace PID,
 * module, cgroup. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "broker/lockdown.h"
#include "chan/chan.h"

/* In a sanitizer build (make asan): LeakSanitizer's exit-time scan stops
 * the world with ptrace, which the probe's seccomp filter kills. */
__attribute__((used, visibility("default"))) const char *__asan_default_options(void);
__attribute__((used, visibility("default"))) const char *__asan_default_options(void)
{
        return "detect_leaks=0";
}
__attribute__((used, visibility("default"))) const char *__lsan_default_options(void);
__attribute__((used, visibility("default"))) const char *__lsan_default_options(void)
{
        return "detect_leaks=0";
}

static int ok(const char *what)
{
        printf("OK %s\n", what);
        return 0;
}

static int denied(const char *what)
{
        const char *n = strerrorname_np(errno);
        printf("DENIED %s %s\n", n ? n : "?", what);
        return 1;
}

static void status_line(const char *key)
{
        FILE *f = fopen("/proc/self/status", "re");
        char line[256];
        size_t kl = strlen(key);
        while (f && fgets(line, sizeof(line), f))
                if (strncmp(line, key, kl) == 0 && line[kl] == ':') {
                        char *v = line + kl + 1;
                        v += strspn(v, " \t");
                        v[strcspn(v, "\n")] = '\0';
                        printf("%s=%s\n", key, v);
                }
        if (f)
                fclose(f);
}

static int posture(void)
{
        uid_t r, e, s;
        gid_t gr, ge, gs;
        getresuid(&r, &e, &s);
        getresgid(&gr, &ge, &gs);
        printf("uid=%u/%u/%u\ngid=%u/%u/%u\n", r, e, s, gr, ge, gs);
        static const char *const keys[] = { "CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb", "NoNewPrivs", "Seccomp", "Seccomp_filters" };
        for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
                status_line(keys[i]);
        printf("dumpable=%d\npid=%d\n", prctl(PR_GET_DUMPABLE, 0, 0, 0, 0), (int)getpid());
        /* Its root: / itself is not on Landlock's list (EACCES), /etc/passwd
         * is not in it at all (ENOENT), /etc/hosts is both. */
        static const char *const files[] = { "/", "/etc/passwd", "/etc/hosts", "/usr/bin/sh" };
        for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
                int fd = open(files[i], O_RDONLY | O_CLOEXEC);
                const char *n = fd < 0 ? strerrorname_np(errno) : "OK";
                printf("open %s=%s\n", files[i], n ? n : "?");
                if (fd >= 0)
                        close(fd);
        }
        return 0;
}

/* The writable cgroup.procs of its own cgroup (v1 pids, or v2). */
static int cgroup_path(char *out, size_t len)
{
        FILE *f = fopen("/proc/self/cgroup", "re");
        char line[512], v2[512] = "";
        int found = 0;
        while (f && fgets(line, sizeof(line), f)) {
                line[strcspn(line, "\n")] = '\0';
                char *a = strchr(line, ':'), *b = a ? strchr(a + 1, ':') : NULL;
                if (!b)
                        continue;
                *b = '\0';
                if (strcmp(a + 1, "pids") == 0) {
                        snprintf(out, len, "/sys/fs/cgroup/pids%s/cgroup.procs", strcmp(b + 1, "/") ? b + 1 : "");
                        found = 1;
                } else if (a[1] == '\0' && strncmp(line, "0", 1) == 0) {
                        snprintf(v2, sizeof(v2), "%s", b + 1);
                }
        }
        if (f)
                fclose(f);
        if (!found && v2[0]) {
                snprintf(out, len, "/sys/fs/cgroup%s/cgroup.procs", strcmp(v2, "/") ? v2 : "");
                found = 1;
        }
        return found;
}

static int run(const char *cmd, const char *arg)
{
        char what[700];
        if (strcmp(cmd, "posture") == 0)
                return posture();
        if (strcmp(cmd, "open") == 0 && arg) {
                snprintf(what, sizeof(what), "open %s", arg);
                int fd = open(arg, O_RDONLY | O_CLOEXEC);
                return fd >= 0 ? ok(what) : denied(what);
        }
        if (strcmp(cmd, "write") == 0 && arg) {
                char path[512];
                snprintf(path, sizeof(path), "%s/broker-probe-%d", arg, (int)getpid());
                snprintf(what, sizeof(what), "create a file in %s", arg);
                int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
                if (fd < 0)
                        return denied(what);
                close(fd);
                unlink(path);
                return ok(what);
        }
        if (strcmp(cmd, "create") == 0 && arg) {
                snprintf(what, sizeof(what), "create %s", arg);
                int fd = open(arg, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
                if (fd < 0)
                        return denied(what);
                close(fd);
                return ok(what);
        }
        if (strcmp(cmd, "agent-file") == 0 && arg) {
                /* Ask the monitor (OPEN_AGENT_FILE), read what comes back. */
                union chan_msg m;
                chan_init(&m, CHAN_OPEN_AGENT_FILE, 2);
                snprintf(m.open_agent_file.path, sizeof(m.open_agent_file.path), "%s", arg);
                int fds[CHAN_MAX_FDS];
                size_t n = 0;
                struct err *e = NULL;
                snprintf(what, sizeof(what), "agent file %s", arg);
                if (chan_send(3, &m, NULL, 0, &e) < 0 || chan_recv(3, CHAN_FROM_MONITOR, &m, fds, &n, &e) < 0 ||
                    m.h.type != CHAN_OPENED) {
                        fprintf(stderr, "broker_probe: %s\n", err_msg(e));
                        return 70;
                }
                if (m.opened.errnum) {
                        errno = m.opened.errnum;
                        return denied(what);
                }
                char buf[128] = "";
                ssize_t got = read(fds[0], buf, sizeof(buf) - 1);
                buf[got > 0 ? got : 0] = '\0';
                buf[strcspn(buf, "\n")] = '\0';
                snprintf(what, sizeof(what), "agent file %s: %s", arg, buf);
                return ok(what);
        }
        if (strcmp(cmd, "config") == 0 && arg) {
                /* fd 4: the config blob, ARG strings, sealed. */
                struct chan_blob b;
                struct err *e = NULL;
                if (chan_blob_map(4, (size_t)strtol(arg, NULL, 10), &b, &e) < 0) {
                        printf("DENIED blob %s\n", err_msg(e));
                        return 1;
                }
                printf("OK config");
                for (size_t k = 0; k < b.nstrings; k++)
                        printf(" [%s]", b.strs[k]);
                printf("\n");
                chan_blob_unmap(&b);
                return 0;
        }
        if (strcmp(cmd, "fds") == 0) {
                /* Which of 0..9 are open. */
                printf("OK fds");
                for (int fd = 0; fd < 10; fd++)
                        if (fcntl(fd, F_GETFD) >= 0)
                                printf(" %d", fd);
                printf("\n");
                return 0;
        }
        if (strcmp(cmd, "sleep") == 0 && arg) {
                /* For the parent-death test: says it is up, then sleeps. */
                printf("OK sleeping\n");
                struct timespec ts = { .tv_sec = strtol(arg, NULL, 10) };
                clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, NULL);
                return 0;
        }
        if (strcmp(cmd, "connect-unix") == 0 && arg) {
                snprintf(what, sizeof(what), "connect to the unix socket %s", arg);
                int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
                struct sockaddr_un a = { .sun_family = AF_UNIX };
                snprintf(a.sun_path, sizeof(a.sun_path), "%s", arg);
                if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0)
                        return denied(what);
                return ok(what);
        }
        if (strcmp(cmd, "signal") == 0 && arg) {
                snprintf(what, sizeof(what), "signal 0 to pid %s", arg);
                return kill((pid_t)strtol(arg, NULL, 10), 0) == 0 ? ok(what) : denied(what);
        }
        if (strcmp(cmd, "exec") == 0) {
                char *const argv[] = { "sh", "-c", "echo OK exec /bin/sh", NULL };
                execve("/bin/sh", argv, (char *const[]){ NULL });
                return denied("exec /bin/sh");
        }
        if (strcmp(cmd, "ptrace") == 0 && arg) {
                snprintf(what, sizeof(what), "ptrace pid %s", arg);
                /* SEIZE does not stop it; our exit detaches. */
                return ptrace(PTRACE_SEIZE, (pid_t)strtol(arg, NULL, 10), 0, 0) == 0 ? ok(what) : denied(what);
        }
        if (strcmp(cmd, "module") == 0) {
                /* fd -1: the kernel checks CAP_SYS_MODULE first, then the fd. */
                /* EBADF, or ENOSYS from a kernel built without modules
                 * (only the control runs without a filter that kills). */
                if (syscall(SYS_finit_module, -1, "", 0) < 0 && errno != EBADF && errno != ENOSYS)
                        return denied("finit_module");
                snprintf(what, sizeof(what), "finit_module reached the kernel: %s", strerrorname_np(errno));
                return ok(what);
        }
        if (strcmp(cmd, "cgroup") == 0) {
                char path[600];
                if (!cgroup_path(path, sizeof(path))) {
                        errno = ENOENT;
                        return denied("find its cgroup");
                }
                snprintf(what, sizeof(what), "write %s", path);
                int fd = open(path, O_WRONLY | O_CLOEXEC);
                if (fd < 0 || write(fd, "0\n", 2) != 2)
                        return denied(what);
                close(fd);
                return ok(what);
        }
        fprintf(stderr, "broker_probe: unknown command %s\n", cmd);
        return 2;
}

int main(int argc, char **argv)
{
        int i = 1;
        int control = argc > 1 && strcmp(argv[1], "--control") == 0;
        i += control;
        struct err *e = NULL;
        if (!control && broker_lockdown(&e) < 0) {
                fprintf(stderr, "broker_probe: %s\n", err_msg(e));
                return 70;
        }
        union chan_msg m;
        chan_init(&m, CHAN_HELLO, 1);
        m.hello.version = CHAN_VERSION;
        int fds[CHAN_MAX_FDS];
        size_t nfds;
        if (chan_send(3, &m, NULL, 0, &e) < 0 || chan_recv(3, CHAN_FROM_MONITOR, &m, fds, &nfds, &e) < 0 ||
            m.h.type != CHAN_WELCOME) {
                fprintf(stderr, "broker_probe: channel: %s\n", err_msg(e));
                return 70;
        }
        if (i >= argc) {
                fprintf(stderr, "usage: broker_probe [--control] CMD [ARG]\n");
                return 2;
        }
        setvbuf(stdout, NULL, _IONBF, 0);
        return run(argv[i], i + 1 < argc ? argv[i + 1] : NULL);
}
