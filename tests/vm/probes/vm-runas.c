/* vm-runas UID:GID [--cgroup DIR] CMD [ARGS...]
 * Drop from root to UID:GID (supplementary groups cleared) and exec CMD.
 * With --cgroup DIR, first move this process into DIR/cgroup.procs (as root),
 * so the unprivileged command starts inside its delegated cgroup the way
 * systemd starts a Delegate=yes unit. Static; part of the tests/vm harness. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void die(const char *what) { fprintf(stderr, "vm-runas: %s: %s\n", what, strerror(errno)); exit(127); }

int main(int argc, char **argv) {
    if (argc < 3) { fprintf(stderr, "usage: vm-runas UID:GID [--cgroup DIR] CMD [ARGS...]\n"); return 127; }
    char *end;
    unsigned long uid = strtoul(argv[1], &end, 10), gid = uid;
    if (*end == ':') gid = strtoul(end + 1, &end, 10);
    if (*end) { fprintf(stderr, "vm-runas: bad UID:GID %s\n", argv[1]); return 127; }
    int i = 2;
    if (!strcmp(argv[i], "--cgroup") && i + 2 < argc) {
        char path[4096];
        snprintf(path, sizeof path, "%s/cgroup.procs", argv[i + 1]);
        int fd = open(path, O_WRONLY);
        if (fd < 0) die(path);
        if (write(fd, "0\n", 2) != 2) die(path);   /* "0" = the writing process */
        close(fd);
        i += 2;
    }
    if (setgroups(0, NULL)) die("setgroups");
    if (setresgid(gid, gid, gid)) die("setresgid");
    if (setresuid(uid, uid, uid)) die("setresuid");
    if (getuid() != uid || geteuid() != uid || getgid() != gid) { errno = EPERM; die("verify"); }
    execvp(argv[i], argv + i);
    die(argv[i]);
}
