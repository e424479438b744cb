/* vm-boxprobe OP [ARGS...] — one small thing a sandboxed program might try, with
 * the outcome printed on stdout as one line, for tests/vm/cases/. Static, so it
 * runs in a box that shows only the system folders.
 *   unshare                 unshare(CLONE_NEWUSER)           prints "unshare: ok|<error>"
 *   mount                   mount a tmpfs on /tmp            prints "mount: ok|<error>"
 *   connect IP PORT         TCP connect                      prints "connect: ok|<error>"
 *   listen IP PORT SECS     accept TCP connections for SECS seconds; prints
 *                           "listening" at once, "accepted N" after each (flushed)
 *   uconnect NAME           connect to the abstract unix socket @NAME
 *   ulisten NAME SECS       the same as listen, on the abstract unix socket @NAME
 *   write PATH              create PATH and write a line     prints "write: ok|<error>"
 *   cgroup                  print /proc/self/cgroup
 *   sleep SECS [MARKER]     sleep (MARKER only shows up in the command line)
 * Exit status: 0 when the operation succeeded, 1 when it failed, 2 usage. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stddef.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

static int report(const char *op, int r)
{
    if (r == 0) printf("%s: ok\n", op);
    else printf("%s: %s (errno %d)\n", op, strerror(errno), errno);
    fflush(stdout);
    return r == 0 ? 0 : 1;
}

static int num(const char *s)
{
    return (int)strtol(s, NULL, 10);
}

static int addr(const char *ip, const char *port, struct sockaddr_in *sa)
{
    memset(sa, 0, sizeof(*sa));
    sa->sin_family = AF_INET;
    sa->sin_port = htons((unsigned short)num(port));
    return inet_pton(AF_INET, ip, &sa->sin_addr) == 1 ? 0 : -1;
}

static socklen_t uaddr(const char *name, struct sockaddr_un *su)
{
    memset(su, 0, sizeof(*su));
    su->sun_family = AF_UNIX;
    size_t n = strlen(name);
    if (n > sizeof(su->sun_path) - 1) n = sizeof(su->sun_path) - 1;
    memcpy(su->sun_path + 1, name, n);   /* sun_path[0] = 0: abstract */
    return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n);
}

int main(int argc, char **argv)
{
    if (argc < 2) return 2;
    const char *op = argv[1];
    if (!strcmp(op, "unshare")) return report(op, unshare(CLONE_NEWUSER));
    if (!strcmp(op, "mount")) return report(op, mount("none", "/tmp", "tmpfs", 0, NULL));
    if (!strcmp(op, "connect") && argc == 4) {
        struct sockaddr_in sa;
        if (addr(argv[2], argv[3], &sa) < 0) return 2;
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        if (fd < 0) return report("socket", -1);
        return report(op, connect(fd, (struct sockaddr *)&sa, sizeof(sa)));
    }
    if (!strcmp(op, "uconnect") && argc == 3) {
        struct sockaddr_un su;
        socklen_t len = uaddr(argv[2], &su);
        int fd = socket(AF_UNIX, SOCK_STREAM, 0);
        if (fd < 0) return report("socket", -1);
        return report(op, connect(fd, (struct sockaddr *)&su, len));
    }
    if ((!strcmp(op, "listen") && argc == 5) || (!strcmp(op, "ulisten") && argc == 4)) {
        int fd, one = 1, secs;
        if (op[0] == 'l') {
            struct sockaddr_in sa;
            if (addr(argv[2], argv[3], &sa) < 0) return 2;
            fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
            if (fd < 0) return report(op, -1);
            setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
            if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) return report(op, -1);
            secs = num(argv[4]);
        } else {
            struct sockaddr_un su;
            socklen_t len = uaddr(argv[2], &su);
            fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);
            if (fd < 0 || bind(fd, (struct sockaddr *)&su, len) < 0) return report(op, -1);
            secs = num(argv[3]);
        }
        if (listen(fd, 16) < 0) return report(op, -1);
        printf("listening\n");
        fflush(stdout);
        int n = 0;
        time_t end = time(NULL) + secs;
        while (time(NULL) < end) {
            struct pollfd p = { .fd = fd, .events = POLLIN };
            if (poll(&p, 1, 100) > 0) {
                int c = accept(fd, NULL, NULL);
                if (c >= 0) {
                    close(c);
                    printf("accepted %d\n", ++n);
                    fflush(stdout);
                }
            }
        }
        return 0;
    }
    if (!strcmp(op, "write") && argc == 3) {
        int fd = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0) return report(op, -1);
        int r = write(fd, "written from the box\n", 21) == 21 ? 0 : -1;
        close(fd);
        return report(op, r);
    }
    if (!strcmp(op, "cgroup")) {
        char buf[4096];
        int fd = open("/proc/self/cgroup", O_RDONLY);
        if (fd < 0) return report(op, -1);
        ssize_t k = read(fd, buf, sizeof(buf));
        if (k < 0) return report(op, -1);
        fwrite(buf, 1, (size_t)k, stdout);
        return 0;
    }
    if (!strcmp(op, "sleep") && argc >= 3) {
        fflush(stdout);
        struct timespec ts = { .tv_sec = num(argv[2]) };
        nanosleep(&ts, NULL);
        return 0;
    }
    return 2;
}
