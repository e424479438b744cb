/* tests/probes/probe.c — one program, many attacks, for the confinement
 * tests (tests/bats/sandbox.bats, tests/bats/rootless.bats).
 *
 *   probe CMD [ARGS...]      (the commands are listed in run() below)
 *
 * Each command prints exactly one line and exits:
 *   OK <detail>                 the attempt worked (exit 0)
 *   DENIED <ERRNO> <detail>     the kernel refused it (exit 1)
 * A seccomp kill ends the probe before it prints anything.
 *
 * Syscalls the seccomp prefix denies are called with bad arguments (a NULL
 * pointer, fd -1, unknown flags) so that, when the call gets through, the
 * kernel answers EFAULT/EBADF/EINVAL without doing anything: those commands
 * print "OK reached the kernel: <ERRNO>" — proof that nothing filtered them.
 *
 * Helpers the tests run outside the box: listen, unix-abstract-listen and
 * udp-listen (servers on the host, killed by pid), ipc-create and ipc-rm, and
 * pty-run / pty-run-noctty (run a command on a fresh pseudo-terminal).
 *
 * Worker mode: when argv[0]'s base name is "probe-worker-CMD" (a symlink
 * handed to `chidori run` as CHIDORI_WORKER), the probe plays the engine
 * worker: it installs the stage-2 filter from fd 4 exactly as
 * engine/lockdown.c does (SIGSYS reporter included), says ready on fd 3,
 * reads the init frame, runs CMD, and returns its line as the run's value.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <netinet/in.h>
#include <poll.h>
#include <pty.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <sys/ioctl.h>
#include <sys/ipc.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/shm.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

/* In a sanitizer build (make asan) the probe runs in the box like any other
 * program: LeakSanitizer's exit-time scan stops the world with ptrace, which
 * the box kills, and ASan's SEGV handler would turn core-dump's deliberate
 * crash into an exit(1).  The probe's leaks and crashes are its job. */
__attribute__((used, visibility("default"))) const char *__asan_default_options(void);
__attribute__((used, visibility("default"))) const char *__asan_default_options(void)
{
        return "detect_leaks=0:handle_segv=0:handle_sigbus=0:handle_abort=0";
}
__attribute__((used, visibility("default"))) const char *__lsan_default_options(void);
__attribute__((used, visibility("default"))) const char *__lsan_default_options(void)
{
        return "detect_leaks=0";
}

#define FRAME_FD 3
#define STAGE2_FD 4

static bool worker_mode;

/* ---- output ---- */

static void frame_put(const void *b, size_t n)
{
        const char *p = b;
        while (n) {
                ssize_t w = write(FRAME_FD, p, n);
                if (w <= 0)
                        _exit(9);
                p += w, n -= (size_t)w;
        }
}

static void frame_send(const char *json)
{
        size_t n = strlen(json);
        unsigned char h[4] = { (unsigned char)(n >> 24), (unsigned char)(n >> 16), (unsigned char)(n >> 8),
                               (unsigned char)n };
        frame_put(h, 4);
        frame_put(json, n);
}

static void frame_skip(void)
{
        unsigned char h[4];
        size_t have = 0;
        while (have < 4) {
                ssize_t r = read(FRAME_FD, h + have, 4 - have);
                if (r <= 0)
                        _exit(8);
                have += (size_t)r;
        }
        size_t n = (size_t)h[0] << 24 | (size_t)h[1] << 16 | (size_t)h[2] << 8 | h[3];
        char buf[4096];
        while (n) {
                ssize_t r = read(FRAME_FD, buf, n < sizeof(buf) ? n : sizeof(buf));
                if (r <= 0)
                        _exit(8);
                n -= (size_t)r;
        }
}

/* Print the one result line (or, as a worker, send it as the run's value)
 * and exit: 0 for OK, 1 for DENIED. */
__attribute__((noreturn, format(printf, 2, 3))) static void finish(bool ok, const char *fmt, ...)
{
        char line[8192];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(line, sizeof(line), fmt, ap);
        va_end(ap);
        if (!worker_mode) {
                printf("%s\n", line);
                fflush(stdout);
                exit(ok ? 0 : 1);
        }
        static char json[sizeof(line) * 2 + 64];
        size_t n = (size_t)snprintf(json, sizeof(json), "{\"type\":\"done\",\"ok\":true,\"value\":\"");
        for (const char *p = line; *p && n < sizeof(json) - 16; p++) {
                unsigned char c = (unsigned char)*p;
                if (c == '"' || c == '\\') {
                        json[n++] = '\\';
                        json[n++] = (char)c;
                } else if (c < 0x20) {
                        n += (size_t)snprintf(json + n, sizeof(json) - n, "\\u%04x", c);
                } else {
                        json[n++] = (char)c;
                }
        }
        snprintf(json + n, sizeof(json) - n, "\"}");
        frame_send(json);
        _exit(ok ? 0 : 1);
}

#define OK(fmt, ...) finish(true, "OK " fmt, ##__VA_ARGS__)

static const char *ename(int e)
{
        const char *n = strerrorname_np(e);
        return n ? n : "E?";
}

__attribute__((noreturn)) static void denied(int e, const char *what)
{
        finish(false, "DENIED %s %s", ename(e), what);
}

/* For the bad-argument probes: whatever the kernel answered, it answered. */
__attribute__((noreturn)) static void reached(const char *name, long r, int e)
{
        if (r < 0)
                OK("%s reached the kernel: %s", name, ename(e));
        OK("%s reached the kernel: returned %ld", name, r);
}

__attribute__((noreturn)) static void usage(const char *msg)
{
        fprintf(stderr, "probe: %s\n", msg);
        exit(2);
}

static long num(const char *s)
{
        char *end;
        errno = 0;
        long v = strtol(s, &end, 10);
        if (errno || *end || end == s)
                usage("bad number");
        return v;
}

/* ---- helpers that run outside the box ---- */

static void serve_forever(int fd)
{
        for (;;) {
                int c = accept(fd, NULL, NULL);
                if (c >= 0) {
                        static const char hello[] = "hello from the host\n";
                        ssize_t w = write(c, hello, sizeof(hello) - 1);
                        (void)w;
                        close(c);
                }
        }
}

static void cmd_listen(const char *port)
{
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                denied(errno, "socket");
        int one = 1;
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
        struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)num(port)) };
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0)
                denied(errno, "bind");
        if (listen(fd, 16) < 0)
                denied(errno, "listen");
        socklen_t len = sizeof(a);
        getsockname(fd, (struct sockaddr *)&a, &len);
        printf("OK listening %d\n", ntohs(a.sin_port));
        fflush(stdout);
        serve_forever(fd);
}

/* UDP: print "OK listening PORT", then one line per datagram received. */
static void cmd_udp_listen(const char *port)
{
        int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                denied(errno, "socket");
        struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)num(port)) };
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0)
                denied(errno, "bind");
        socklen_t len = sizeof(a);
        getsockname(fd, (struct sockaddr *)&a, &len);
        printf("OK listening %d\n", ntohs(a.sin_port));
        fflush(stdout);
        for (;;) {
                char buf[256];
                ssize_t n = recv(fd, buf, sizeof(buf) - 1, 0);
                if (n < 0)
                        continue;
                buf[n] = '\0';
                printf("got %s\n", buf);
                fflush(stdout);
        }
}

static socklen_t abstract_addr(const char *name, struct sockaddr_un *a)
{
        memset(a, 0, sizeof(*a));
        a->sun_family = AF_UNIX;
        size_t n = strlen(name);
        if (n + 1 > sizeof(a->sun_path))
                usage("name too long");
        memcpy(a->sun_path + 1, name, n); /* sun_path[0] = '\0': abstract */
        return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n);
}

static void cmd_unix_abstract_listen(const char *name)
{
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                denied(errno, "socket");
        struct sockaddr_un a;
        socklen_t len = abstract_addr(name, &a);
        if (bind(fd, (struct sockaddr *)&a, len) < 0)
                denied(errno, "bind");
        if (listen(fd, 16) < 0)
                denied(errno, "listen");
        printf("OK listening @%s\n", name);
        fflush(stdout);
        serve_forever(fd);
}

/* Run ARGV on a new pseudo-terminal as its controlling terminal (stdin,
 * stdout and stderr); copy what it prints to our stdout; exit with its
 * status.  Lets a test run a program with a real tty without `script`. */
static void cmd_pty_run(char **argv)
{
        int master;
        pid_t pid = forkpty(&master, NULL, NULL, NULL);
        if (pid < 0)
                denied(errno, "forkpty");
        if (pid == 0) {
                execvp(argv[0], argv);
                _exit(127);
        }
        char buf[4096];
        for (;;) {
                ssize_t n = read(master, buf, sizeof(buf));
                if (n <= 0)
                        break; /* EIO once the last slave fd closes */
                fwrite(buf, 1, (size_t)n, stdout);
        }
        fflush(stdout);
        int st;
        while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
                ;
        exit(WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
}

/* The same, but the terminal is nobody's controlling terminal: ARGV runs
 * in a new session with the pty slave on 0, 1 and 2 and no TIOCSCTTY (what
 * a program does when it hands a pty to a child without making it the
 * child's terminal). */
static void cmd_pty_run_noctty(char **argv)
{
        int master, slave;
        if (openpty(&master, &slave, NULL, NULL, NULL) < 0)
                denied(errno, "openpty");
        pid_t pid = fork();
        if (pid < 0)
                denied(errno, "fork");
        if (pid == 0) {
                close(master);
                setsid(); /* no controlling terminal; dup2 does not acquire one */
                dup2(slave, 0), dup2(slave, 1), dup2(slave, 2);
                if (slave > 2)
                        close(slave);
                execvp(argv[0], argv);
                _exit(127);
        }
        close(slave);
        char buf[4096];
        for (;;) {
                ssize_t n = read(master, buf, sizeof(buf));
                if (n <= 0)
                        break;
                fwrite(buf, 1, (size_t)n, stdout);
        }
        fflush(stdout);
        int st;
        while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
                ;
        exit(WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
}

/* ---- network ---- */

static int family_of(const char *name)
{
        static const struct {
                const char *n;
                int f;
        } fams[] = { { "unix", AF_UNIX },       { "inet", AF_INET },   { "inet6", AF_INET6 },
                     { "netlink", AF_NETLINK }, { "packet", AF_PACKET }, { "vsock", AF_VSOCK },
                     { "alg", AF_ALG } };
        for (size_t i = 0; i < sizeof(fams) / sizeof(fams[0]); i++)
                if (!strcmp(fams[i].n, name))
                        return fams[i].f;
        usage("unknown address family");
        return -1;
}

static void cmd_socket(const char *fam)
{
        int f = family_of(fam);
        int fd = socket(f, f == AF_PACKET || f == AF_NETLINK ? SOCK_RAW : SOCK_STREAM, 0);
        if (fd < 0) {
                char what[64];
                snprintf(what, sizeof(what), "socket(%s)", fam);
                denied(errno, what);
        }
        OK("socket(%s) = %d", fam, fd);
}

static void cmd_tcp_connect(const char *host, const char *port)
{
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        if (fd < 0)
                denied(errno, "socket(inet)");
        struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)num(port)) };
        if (inet_pton(AF_INET, host, &a.sin_addr) != 1)
                usage("bad IPv4 address");
        if (connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0)
                denied(errno, "connect");
        char buf[128] = "";
        ssize_t n = read(fd, buf, sizeof(buf) - 1);
        if (n > 0 && buf[n - 1] == '\n')
                buf[n - 1] = '\0';
        OK("connected to %s:%s, read: %s", host, port, n > 0 ? buf : "(nothing)");
}

static void cmd_udp_send(const char *host, const char *port, const char *msg)
{
        int fd = socket(AF_INET, SOCK_DGRAM, 0);
        if (fd < 0)
                denied(errno, "socket(inet, dgram)");
        struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)num(port)) };
        if (inet_pton(AF_INET, host, &a.sin_addr) != 1)
                usage("bad IPv4 address");
        if (sendto(fd, msg, strlen(msg), 0, (struct sockaddr *)&a, sizeof(a)) < 0)
                denied(errno, "sendto");
        OK("sent a datagram to %s:%s (UDP cannot tell whether it arrived)", host, port);
}

static void cmd_unix_abstract_connect(const char *name)
{
        int fd = socket(AF_UNIX, SOCK_STREAM, 0);
        if (fd < 0)
                denied(errno, "socket(unix)");
        struct sockaddr_un a;
        socklen_t len = abstract_addr(name, &a);
        if (connect(fd, (struct sockaddr *)&a, len) < 0)
                denied(errno, "connect");
        char buf[128] = "";
        ssize_t n = read(fd, buf, sizeof(buf) - 1);
        if (n > 0 && buf[n - 1] == '\n')
                buf[n - 1] = '\0';
        OK("connected to @%s, read: %s", name, n > 0 ? buf : "(nothing)");
}

/* ---- files ---- */

static void cmd_write_path(const char *path)
{
        int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
        if (fd < 0)
                denied(errno, path);
        static const char data[] = "probe";
        if (write(fd, data, sizeof(data) - 1) < 0)
                denied(errno, path);
        close(fd);
        OK("wrote %s", path);
}

static void cmd_read_path(const char *path)
{
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                denied(errno, path);
        char buf[4096];
        size_t total = 0;
        ssize_t n;
        while ((n = read(fd, buf, sizeof(buf))) > 0)
                total += (size_t)n;
        if (n < 0)
                denied(errno, path);
        /* Only the size: the tests read secrets, and must not print them. */
        OK("read %zu bytes from %s", total, path);
}

static void cmd_list_dir(const char *path)
{
        DIR *d = opendir(path);
        if (!d)
                denied(errno, path);
        size_t n = 0, pids = 0;
        errno = 0;
        struct dirent *e;
        while ((e = readdir(d))) {
                if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
                        continue;
                n++;
                if (strspn(e->d_name, "0123456789") == strlen(e->d_name))
                        pids++;
        }
        if (errno)
                denied(errno, path);
        closedir(d);
        OK("%zu entries (%zu numeric) in %s", n, pids, path);
}

/* Write our own code through /proc/self/mem: the kernel lets a process
 * write its read-only and executable pages this way, which would turn
 * --no-jit's "no new executable memory" into a formality. */
static void cmd_procmem_write(void)
{
        int fd = open("/proc/self/mem", O_RDWR | O_CLOEXEC);
        if (fd < 0)
                denied(errno, "open /proc/self/mem for writing");
        /* Rewrite one byte of this function's code with the same value. */
        const unsigned char *code = (const unsigned char *)(uintptr_t)&cmd_procmem_write;
        unsigned char b = *code;
        /* lseek + write: both on the worker's allowlist (pwrite64 is not). */
        if (lseek(fd, (off_t)(uintptr_t)code, SEEK_SET) < 0)
                denied(errno, "lseek /proc/self/mem");
        if (write(fd, &b, 1) != 1)
                denied(errno, "write /proc/self/mem");
        OK("wrote our own code through /proc/self/mem");
}

/* Overwrite the running program (CVE-2019-5736's shape).  Writing the
 * executing file is ETXTBSY everywhere, so: keep an O_PATH descriptor of
 * /proc/self/exe, exec ANOTHER program (OTHER, a second copy of the probe)
 * that then reopens the descriptor for writing — the original binary is no
 * longer running, and outside a box the reopen succeeds. */
static void cmd_write_self_exe(const char *other)
{
        int fd = open("/proc/self/exe", O_WRONLY | O_CLOEXEC);
        if (fd >= 0)
                OK("opened /proc/self/exe for writing directly");
        if (!other)
                denied(errno, "open /proc/self/exe for writing");
        fd = open("/proc/self/exe", O_PATH);
        if (fd < 0)
                denied(errno, "open /proc/self/exe O_PATH");
        char n[16];
        snprintf(n, sizeof(n), "%d", fd);
        char *argv[] = { (char *)other, "reopen-fd", n, NULL };
        execve(other, argv, environ);
        denied(errno, "execve the second program");
}

static void cmd_reopen_fd(const char *fd)
{
        char p[64];
        snprintf(p, sizeof(p), "/proc/self/fd/%s", fd);
        char target[PATH_MAX];
        ssize_t r = readlink(p, target, sizeof(target) - 1);
        target[r < 0 ? 0 : r] = '\0';
        int w = open(p, O_RDWR | O_CLOEXEC); /* no O_TRUNC: never damage the file */
        if (w < 0) {
                char what[PATH_MAX + 64];
                snprintf(what, sizeof(what), "reopen %s for writing", target);
                denied(errno, what);
        }
        OK("reopened %s for writing after exec", target);
}

static void cmd_list_fds(void)
{
        DIR *d = opendir("/proc/self/fd");
        if (!d)
                denied(errno, "/proc/self/fd");
        int self = dirfd(d);
        char line[4096] = "OK";
        size_t n = 2;
        struct dirent *e;
        int fds[256];
        size_t nfds = 0;
        while ((e = readdir(d)) && nfds < 256) {
                if (e->d_name[0] == '.')
                        continue;
                int fd = (int)num(e->d_name);
                if (fd != self)
                        fds[nfds++] = fd;
        }
        closedir(d);
        /* readdir order is numeric for /proc/self/fd, but do not rely on it. */
        for (size_t i = 1; i < nfds; i++)
                for (size_t j = i; j > 0 && fds[j - 1] > fds[j]; j--) {
                        int t = fds[j];
                        fds[j] = fds[j - 1];
                        fds[j - 1] = t;
                }
        for (size_t i = 0; i < nfds; i++) {
                char p[64], target[PATH_MAX];
                snprintf(p, sizeof(p), "/proc/self/fd/%d", fds[i]);
                ssize_t r = readlink(p, target, sizeof(target) - 1);
                if (r < 0)
                        continue; /* closed meanwhile */
                target[r] = '\0';
                n += (size_t)snprintf(line + n, sizeof(line) - n, " %d=%s", fds[i], target);
                if (n >= sizeof(line))
                        break;
        }
        finish(true, "%s", line);
}

static void cmd_env(void)
{
        char line[8192] = "";
        size_t n = 0;
        for (char **e = environ; e && *e && n < sizeof(line); e++)
                n += (size_t)snprintf(line + n, sizeof(line) - n, "%s%s", n ? " " : "", *e);
        OK("%s", line);
}

static void cmd_status(void)
{
        FILE *f = fopen("/proc/self/status", "re");
        if (!f)
                denied(errno, "/proc/self/status");
        char line[8192] = "";
        size_t n = 0;
        char buf[512];
        while (fgets(buf, sizeof(buf), f)) {
                if (strncmp(buf, "Cap", 3) && strncmp(buf, "NoNewPrivs:", 11) && strncmp(buf, "Seccomp", 7))
                        continue;
                char key[64], val[128];
                if (sscanf(buf, "%63[^:]: %127s", key, val) == 2 && n < sizeof(line))
                        n += (size_t)snprintf(line + n, sizeof(line) - n, "%s%s=%s", n ? " " : "", key, val);
        }
        fclose(f);
        int dumpable = prctl(PR_GET_DUMPABLE, 0, 0, 0, 0);
        OK("%s Dumpable=%d", line, dumpable);
}

static void cmd_id_map(const char *file)
{
        FILE *f = fopen(file, "re");
        if (!f)
                denied(errno, file);
        char line[1024] = "";
        size_t n = 0;
        unsigned long a, b, c;
        while (fscanf(f, "%lu %lu %lu", &a, &b, &c) == 3 && n < sizeof(line))
                n += (size_t)snprintf(line + n, sizeof(line) - n, "%s%lu %lu %lu", n ? "; " : "", a, b, c);
        fclose(f);
        OK("%s", line);
}

static void cmd_hostname(void)
{
        struct utsname u;
        if (uname(&u) < 0)
                denied(errno, "uname");
        OK("%s", u.nodename);
}

/* ---- processes ---- */

static void cmd_kill_pid(const char *pid, const char *sig)
{
        if (kill((pid_t)num(pid), (int)num(sig)) < 0)
                denied(errno, "kill");
        OK("signal %s delivered to %s", sig, pid);
}

static void cmd_ptrace_attach(const char *pid)
{
        pid_t p = (pid_t)num(pid);
        if (ptrace(PTRACE_ATTACH, p, NULL, NULL) < 0)
                denied(errno, "ptrace attach");
        int st;
        waitpid(p, &st, __WALL);
        ptrace(PTRACE_DETACH, p, NULL, NULL);
        OK("attached to %s (detached again)", pid);
}

static void wait_child(pid_t pid, const char *how)
{
        if (pid < 0)
                denied(errno, how);
        if (pid == 0)
                _exit(0);
        int st = 0;
        while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
                ;
        OK("%s: child %d exited", how, (int)pid);
}

/* execve [PATH [ARGS...]]: without PATH, a NULL path (EFAULT when nothing
 * filters the call); with it, run PATH ARGS. */
static void cmd_execve(char **argv)
{
        if (!argv[0]) {
                long r = syscall(SYS_execve, NULL, NULL, NULL);
                reached("execve", r, errno);
        }
        execve(argv[0], argv, environ);
        denied(errno, "execve");
}

/* Write a program (a copy of ourselves) to PATH and run it: "what the box
 * writes, it cannot run" (Landlock grants no EXECUTE in --bind folders). */
static void cmd_write_exec(const char *path)
{
        int in = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
        if (in < 0)
                denied(errno, "open /proc/self/exe");
        int out = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0755);
        if (out < 0)
                denied(errno, path);
        char buf[65536];
        ssize_t n;
        while ((n = read(in, buf, sizeof(buf))) > 0)
                if (write(out, buf, (size_t)n) != n)
                        denied(errno, "write the copy");
        close(in);
        if (fchmod(out, 0755) < 0)
                denied(errno, "fchmod");
        close(out);
        char *argv[] = { (char *)path, "pid", NULL };
        execve(path, argv, environ);
        denied(errno, "execve what we wrote");
}

static void cmd_symlink(const char *target, const char *path)
{
        if (symlink(target, path) < 0)
                denied(errno, "symlink");
        OK("symlink %s -> %s", path, target);
}

static void cmd_mkfifo(const char *path)
{
        if (mkfifo(path, 0666) < 0)
                denied(errno, "mkfifo");
        OK("fifo %s", path);
}

/* ---- syscalls the fixed prefix denies, with bad arguments ---- */

/* Two syscalls outside launch's allowlist, with bad arguments (the kernel
 * would answer EFAULT and EBADF), then one line: what each returned and that
 * the program went on.  Under --seccomp-errno the filter answers EPERM; by
 * default the first one ends the box. */
static void cmd_errno_continue(void)
{
        errno = 0;
        long r1 = syscall(SYS_chown, NULL, 0, 0);
        int e1 = errno;
        errno = 0;
        long r2 = syscall(SYS_fchown, -1, 0, 0);
        int e2 = errno;
        OK("chown: %s, fchown: %s; the program went on", r1 < 0 ? ename(e1) : "ok", r2 < 0 ? ename(e2) : "ok");
}

static void cmd_prefix(const char *name, const char *arg)
{
        long r = -1;
        errno = 0;
        if (!strcmp(name, "umount") && arg) { /* a real unmount of PATH */
                if (umount2(arg, 0) < 0)
                        denied(errno, "umount2");
                OK("unmounted %s", arg);
        }
        if (!strcmp(name, "mount"))
                r = syscall(SYS_mount, NULL, NULL, NULL, 0, NULL);
        else if (!strcmp(name, "umount"))
                r = syscall(SYS_umount2, NULL, 0);
        else if (!strcmp(name, "unshare"))
                r = syscall(SYS_unshare, -1); /* unknown flags: EINVAL */
        else if (!strcmp(name, "setns"))
                r = syscall(SYS_setns, -1, 0);
        else if (!strcmp(name, "pivot_root"))
                r = syscall(SYS_pivot_root, NULL, NULL);
        else if (!strcmp(name, "chroot"))
                r = syscall(SYS_chroot, NULL);
        else if (!strcmp(name, "keyctl"))
                r = syscall(SYS_keyctl, 0xffff, 0, 0, 0, 0); /* unknown operation */
        else if (!strcmp(name, "add_key"))
                r = syscall(SYS_add_key, NULL, NULL, NULL, 0, 0);
        else if (!strcmp(name, "bpf"))
                r = syscall(SYS_bpf, 0, NULL, 0);
        else if (!strcmp(name, "perf_event_open"))
                r = syscall(SYS_perf_event_open, NULL, 0, -1, -1, 0);
        else if (!strcmp(name, "userfaultfd"))
                r = syscall(SYS_userfaultfd, -1);
        else if (!strcmp(name, "io_uring_setup"))
                r = syscall(SYS_io_uring_setup, 0, NULL);
        else if (!strcmp(name, "open_by_handle_at"))
                r = syscall(SYS_open_by_handle_at, -1, NULL, 0);
        else if (!strcmp(name, "name_to_handle_at"))
                r = syscall(SYS_name_to_handle_at, -1, NULL, NULL, NULL, 0);
        else if (!strcmp(name, "ptrace"))
                r = syscall(SYS_ptrace, PTRACE_PEEKDATA, 0, NULL, NULL);
        else if (!strcmp(name, "process_vm_readv"))
                r = syscall(SYS_process_vm_readv, 0, NULL, 0, NULL, 0, 0);
        else if (!strcmp(name, "personality"))
                r = syscall(SYS_personality, 0xffffffffUL); /* a query */
        else if (!strcmp(name, "fsopen"))
                r = syscall(SYS_fsopen, NULL, 0);
        else if (!strcmp(name, "open_tree"))
                r = syscall(SYS_open_tree, -1, NULL, 0);
        else if (!strcmp(name, "pidfd_getfd"))
                r = syscall(SYS_pidfd_getfd, -1, 0, 0);
        else if (!strcmp(name, "kcmp"))
                r = syscall(SYS_kcmp, 0, 0, -1, 0, 0);
        else if (!strcmp(name, "landlock_create_ruleset"))
                r = syscall(444 /* SYS_landlock_create_ruleset */, NULL, 0, 0);
        else if (!strcmp(name, "clone-newuser"))
                r = syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, NULL, NULL, NULL, 0);
        else if (!strcmp(name, "clone3"))
                r = syscall(SYS_clone3, NULL, 0); /* EINVAL from the kernel, ENOSYS from the filter */
        else
                usage("unknown syscall probe");
        int e = errno;
        if (r == 0 && !strcmp(name, "clone-newuser"))
                _exit(0); /* the child, if it ever got this far */
        if (r < 0 && e == ENOSYS && !strcmp(name, "clone3"))
                denied(e, "clone3 (answered by the filter: the kernel has clone3)");
        reached(name, r, e);
}

static void cmd_tiocsti(const char *fd, bool high_bits, bool linux_ioctl, bool steal)
{
        int f = (int)num(fd);
        if (!isatty(f))
                usage("fd is not a terminal");
        /* First make the terminal ours if nobody holds it (TIOCSCTTY, 0x540E,
         * is not a filtered ioctl): TIOCSTI needs it as the controlling tty. */
        if (steal && ioctl(f, TIOCSCTTY, 0) < 0)
                denied(errno, "ioctl(TIOCSCTTY)");
        /* TIOCSTI pushes one byte into the terminal's input queue; a space is
         * harmless where it lands.  The high-bits form is CVE-2019-10063's:
         * the kernel looks at the low 32 bits only. */
        unsigned long req = linux_ioctl ? TIOCLINUX : TIOCSTI;
        if (high_bits)
                req |= 1UL << 32;
        char c = linux_ioctl ? 0 : ' '; /* TIOCLINUX subcode 0: invalid, harmless */
        long r = syscall(SYS_ioctl, f, req, &c);
        if (r < 0)
                denied(errno, linux_ioctl ? "ioctl(TIOCLINUX)" : "ioctl(TIOCSTI)");
        OK("%s on fd %d worked", linux_ioctl ? "TIOCLINUX" : "TIOCSTI", f);
}

static void cmd_mmap_exec(bool use_mprotect)
{
        void *p = mmap(NULL, 4096, use_mprotect ? PROT_READ | PROT_WRITE : PROT_READ | PROT_WRITE | PROT_EXEC,
                       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED)
                denied(errno, "mmap");
        if (use_mprotect && mprotect(p, 4096, PROT_READ | PROT_EXEC) < 0)
                denied(errno, "mprotect(PROT_EXEC)");
        OK("%s gave executable memory", use_mprotect ? "mprotect" : "mmap");
}

/* A compromised worker replacing its SIGSYS reporter: stage 2 allows
 * rt_sigaction for every signal but SIGSYS (and SIGSYS only to read).  The
 * kernel reads the signal number as an int, so SIGSYS with bit 32 set is
 * SIGSYS; a filter comparing all 64 bits lets it through.  If the new
 * handler is installed, a blocked syscall no longer ends the process. */
struct k_sigaction {
        void (*handler)(int, siginfo_t *, void *);
        unsigned long flags;
        void (*restorer)(void);
        uint64_t mask;
};

static volatile sig_atomic_t trapped;

static void swallow_sigsys(int sig, siginfo_t *si, void *uc)
{
        (void)sig, (void)si, (void)uc;
        trapped = 1;
}

static void cmd_sigsys_takeover(void)
{
        struct k_sigaction old, act;
        memset(&old, 0, sizeof(old));
        if (syscall(SYS_rt_sigaction, SIGSYS, NULL, &old, 8) < 0)
                denied(errno, "read the SIGSYS action");
        act = old;
        act.handler = swallow_sigsys;
        act.flags = old.flags | SA_SIGINFO;
        act.mask = ~0ULL;
        if (!act.restorer) { /* no handler yet (not in a box): borrow glibc's */
                struct sigaction sa;
                memset(&sa, 0, sizeof(sa));
                sa.sa_sigaction = swallow_sigsys;
                sa.sa_flags = SA_SIGINFO;
                sigaction(SIGSYS, &sa, NULL);
                syscall(SYS_rt_sigaction, SIGSYS, NULL, &act, 8);
        }
        long r = syscall(SYS_rt_sigaction, (unsigned long)SIGSYS | (1UL << 32), &act, NULL, 8);
        if (r < 0)
                denied(errno, "rt_sigaction(SIGSYS | 1 << 32)");
        /* Now a forbidden call: with the reporter gone, do we survive it? */
        long f = syscall(SYS_fork);
        if (f == 0)
                _exit(0);
        if (f > 0)
                waitpid((pid_t)f, NULL, 0);
        OK("replaced the SIGSYS handler; fork returned %ld%s", f, trapped ? " (trapped and survived)" : "");
}

/* ---- SysV IPC ---- */

static key_t key_of(const char *s)
{
        return (key_t)num(s);
}

static void cmd_ipc_create(const char *key)
{
        int id = shmget(key ? key_of(key) : IPC_PRIVATE, 4096, IPC_CREAT | IPC_EXCL | 0600);
        if (id < 0)
                denied(errno, "shmget create");
        OK("shm id %d", id);
}

static void cmd_ipc_lookup(const char *key)
{
        int id = shmget(key_of(key), 0, 0);
        if (id < 0)
                denied(errno, "shmget lookup");
        OK("shm key %s has id %d", key, id);
}

static void cmd_ipc_rm(const char *key)
{
        int id = shmget(key_of(key), 0, 0);
        if (id < 0)
                denied(errno, "shmget lookup");
        if (shmctl(id, IPC_RMID, NULL) < 0)
                denied(errno, "shmctl IPC_RMID");
        OK("removed shm id %d", id);
}

/* ---- limits ---- */

static void fmt_lim(rlim_t v, char *buf, size_t len)
{
        if (v == RLIM_INFINITY)
                snprintf(buf, len, "unlimited");
        else
                snprintf(buf, len, "%llu", (unsigned long long)v);
}

/* Try to raise RLIMIT_CORE, report it, then crash with SIGSEGV (a fault is
 * delivered even to pid 1 of a pid namespace, where SIGABRT is not). */
static void cmd_core_dump(const char *dir)
{
        if (dir && chdir(dir) < 0)
                denied(errno, "chdir");
        struct rlimit rl;
        getrlimit(RLIMIT_CORE, &rl);
        char s[32], h[32];
        fmt_lim(rl.rlim_cur, s, sizeof(s));
        fmt_lim(rl.rlim_max, h, sizeof(h));
        struct rlimit want = { RLIM_INFINITY, RLIM_INFINITY };
        int raised = setrlimit(RLIMIT_CORE, &want);
        int e = errno;
        if (raised < 0) {
                want.rlim_max = rl.rlim_max; /* the soft limit up to the hard one at least */
                want.rlim_cur = rl.rlim_max;
                setrlimit(RLIMIT_CORE, &want);
        }
        getrlimit(RLIMIT_CORE, &rl);
        char now[32];
        fmt_lim(rl.rlim_cur, now, sizeof(now));
        if (raised < 0)
                printf("DENIED %s raise RLIMIT_CORE (was %s %s, now %s); crashing\n", ename(e), s, h, now);
        else
                printf("OK RLIMIT_CORE raised (was %s %s, now %s); crashing\n", s, h, now);
        fflush(stdout);
        volatile int *volatile p = NULL;
        *p = 1;
        _exit(3);
}

static void cmd_rlimits(void)
{
        static const struct {
                int r;
                const char *n;
        } lims[] = { { RLIMIT_CORE, "core" }, { RLIMIT_NOFILE, "nofile" }, { RLIMIT_CPU, "cpu" },
                     { RLIMIT_MEMLOCK, "memlock" }, { RLIMIT_FSIZE, "fsize" } };
        char line[512] = "";
        size_t n = 0;
        for (size_t i = 0; i < sizeof(lims) / sizeof(lims[0]); i++) {
                struct rlimit rl;
                getrlimit(lims[i].r, &rl);
                char s[32], h[32];
                fmt_lim(rl.rlim_cur, s, sizeof(s));
                fmt_lim(rl.rlim_max, h, sizeof(h));
                n += (size_t)snprintf(line + n, sizeof(line) - n, "%s%s=%s/%s", n ? " " : "", lims[i].n, s, h);
        }
        OK("%s", line);
}

static void cmd_cpu_burn(void)
{
        volatile unsigned long x = 0;
        for (;;)
                x++;
}

static void cmd_sleep(const char *secs)
{
        struct timespec ts = { .tv_sec = num(secs) };
        while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
                ;
        OK("slept %s s", secs);
}

/* ---- worker mode ---- */

static void on_sigsys(int sig, siginfo_t *si, void *uc)
{
        (void)sig, (void)uc;
        char buf[64] = "chidori-worker: blocked syscall ";
        size_t n = strlen(buf);
        char digits[16];
        int d = 0;
        unsigned v = (unsigned)si->si_syscall;
        do {
                digits[d++] = (char)('0' + v % 10);
                v /= 10;
        } while (v && d < (int)sizeof(digits));
        while (d > 0)
                buf[n++] = digits[--d];
        buf[n++] = '\n';
        ssize_t w = write(2, buf, n);
        (void)w;
        syscall(SYS_ptrace, 0, 0, 0, 0); /* forbidden again, with SIGSYS blocked: the kernel kills */
        _exit(159);
}

/* What engine/lockdown.c does: load the stage-2 filter from fd 4 when the
 * launcher says it is there (CHIDORI_STAGE2_FD=4 in the fixed environment). */
static void worker_lockdown(void)
{
        const char *flag = getenv("CHIDORI_STAGE2_FD");
        if (!flag || strcmp(flag, "4") != 0)
                return; /* seccomp disabled: no stage 2 */
        static struct sock_filter insns[4096];
        size_t have = 0;
        for (;;) {
                ssize_t n = read(STAGE2_FD, (char *)insns + have, sizeof(insns) - have);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0) {
                        fprintf(stderr, "probe: read stage 2: %s\n", strerror(errno));
                        _exit(5);
                }
                if (n == 0)
                        break;
                have += (size_t)n;
        }
        close(STAGE2_FD);
        struct sigaction sa;
        memset(&sa, 0, sizeof(sa));
        sa.sa_sigaction = on_sigsys;
        sa.sa_flags = SA_SIGINFO;
        sigfillset(&sa.sa_mask);
        sigaction(SIGSYS, &sa, NULL);
        struct sock_fprog prog = { .len = (unsigned short)(have / sizeof(struct sock_filter)), .filter = insns };
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 || prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0 ||
            syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) < 0) {
                fprintf(stderr, "probe: install stage 2: %s\n", strerror(errno));
                _exit(5);
        }
}

/* ---- dispatch ---- */

static void run(int argc, char **argv)
{
        if (argc < 1)
                usage("usage: probe CMD [ARGS...]");
        const char *c = argv[0];
        const char *a1 = argc > 1 ? argv[1] : NULL, *a2 = argc > 2 ? argv[2] : NULL;
#define NEED(n)                                                                                                  \
        do {                                                                                                     \
                if (argc < (n) + 1)                                                                              \
                        usage("missing argument");                                                               \
        } while (0)
        if (!strcmp(c, "listen")) { NEED(1); cmd_listen(a1); }
        if (!strcmp(c, "unix-abstract-listen")) { NEED(1); cmd_unix_abstract_listen(a1); }
        if (!strcmp(c, "udp-listen")) { NEED(1); cmd_udp_listen(a1); }
        if (!strcmp(c, "udp-send")) { NEED(3); cmd_udp_send(a1, a2, argv[3]); }
        if (!strcmp(c, "pty-run")) { NEED(1); cmd_pty_run(argv + 1); }
        if (!strcmp(c, "pty-run-noctty")) { NEED(1); cmd_pty_run_noctty(argv + 1); }
        if (!strcmp(c, "socket-inet")) cmd_socket("inet");
        if (!strcmp(c, "socket")) { NEED(1); cmd_socket(a1); }
        if (!strcmp(c, "tcp-connect")) { NEED(2); cmd_tcp_connect(a1, a2); }
        if (!strcmp(c, "unix-abstract-connect")) { NEED(1); cmd_unix_abstract_connect(a1); }
        if (!strcmp(c, "write-path")) { NEED(1); cmd_write_path(a1); }
        if (!strcmp(c, "read-path")) { NEED(1); cmd_read_path(a1); }
        if (!strcmp(c, "list-dir")) { NEED(1); cmd_list_dir(a1); }
        if (!strcmp(c, "list-zoneinfo")) cmd_list_dir("/usr/share/zoneinfo"); /* worker mode takes no arguments */
        if (!strcmp(c, "procmem-write")) cmd_procmem_write();
        if (!strcmp(c, "write-self-exe")) cmd_write_self_exe(a1);
        if (!strcmp(c, "reopen-fd")) { NEED(1); cmd_reopen_fd(a1); }
        if (!strcmp(c, "list-fds")) cmd_list_fds();
        if (!strcmp(c, "env")) cmd_env();
        if (!strcmp(c, "status")) cmd_status();
        if (!strcmp(c, "uid-map")) cmd_id_map("/proc/self/uid_map");
        if (!strcmp(c, "gid-map")) cmd_id_map("/proc/self/gid_map");
        if (!strcmp(c, "hostname")) cmd_hostname();
        if (!strcmp(c, "kill-pid")) { NEED(2); cmd_kill_pid(a1, a2); }
        if (!strcmp(c, "ptrace-attach")) { NEED(1); cmd_ptrace_attach(a1); }
        if (!strcmp(c, "fork")) wait_child((pid_t)syscall(SYS_fork), "fork");
        if (!strcmp(c, "clone-fork")) wait_child(fork(), "glibc fork (clone)");
        if (!strcmp(c, "execve")) cmd_execve(argv + 1);
        if (!strcmp(c, "symlink")) { NEED(2); cmd_symlink(a1, a2); }
        if (!strcmp(c, "write-exec")) { NEED(1); cmd_write_exec(a1); }
        if (!strcmp(c, "mkfifo")) { NEED(1); cmd_mkfifo(a1); }
        if (!strcmp(c, "tiocsti")) { NEED(1); cmd_tiocsti(a1, false, false, false); }
        if (!strcmp(c, "tiocsti-highbits")) { NEED(1); cmd_tiocsti(a1, true, false, false); }
        if (!strcmp(c, "tiocsti-steal")) { NEED(1); cmd_tiocsti(a1, false, false, true); }
        if (!strcmp(c, "tiocsti-steal-highbits")) { NEED(1); cmd_tiocsti(a1, true, false, true); }
        if (!strcmp(c, "tioclinux")) { NEED(1); cmd_tiocsti(a1, false, true, false); }
        if (!strcmp(c, "tioclinux-highbits")) { NEED(1); cmd_tiocsti(a1, true, true, false); }
        if (!strcmp(c, "sigsys-takeover")) cmd_sigsys_takeover();
        if (!strcmp(c, "mmap-exec")) cmd_mmap_exec(false);
        if (!strcmp(c, "mprotect-exec")) cmd_mmap_exec(true);
        if (!strcmp(c, "ipc")) cmd_ipc_create(NULL);
        if (!strcmp(c, "ipc-create")) { NEED(1); cmd_ipc_create(a1); }
        if (!strcmp(c, "ipc-lookup")) { NEED(1); cmd_ipc_lookup(a1); }
        if (!strcmp(c, "ipc-rm")) { NEED(1); cmd_ipc_rm(a1); }
        if (!strcmp(c, "core-dump")) cmd_core_dump(a1);
        if (!strcmp(c, "rlimits")) cmd_rlimits();
        if (!strcmp(c, "cpu-burn")) cmd_cpu_burn();
        if (!strcmp(c, "sleep")) { NEED(1); cmd_sleep(a1); }
        if (!strcmp(c, "pid")) OK("pid %d ppid %d", (int)getpid(), (int)getppid());
        if (!strcmp(c, "errno-continue")) cmd_errno_continue();
        cmd_prefix(c, a1); /* the bad-argument syscall probes; usage() if unknown */
#undef NEED
}

int main(int argc, char **argv)
{
        const char *base = strrchr(argv[0], '/');
        base = base ? base + 1 : argv[0];
        if (!strncmp(base, "probe-worker-", 13)) {
                worker_mode = true;
                worker_lockdown();
                frame_send("{\"type\":\"ready\",\"protocol\":1}");
                frame_skip(); /* init */
                char *wargv[] = { (char *)base + 13, NULL };
                run(1, wargv);
                return 0;
        }
        run(argc - 1, argv + 1);
        return 0;
}
