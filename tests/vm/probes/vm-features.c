/* vm-features: print key=value lines about the kernel features chidori relies on,
 * as seen by the calling user: landlock ABI, unprivileged user namespaces (+ the
 * namespaces chidori nests inside one), seccomp filter support. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <linux/seccomp.h>

#ifndef SYS_landlock_create_ruleset
#define SYS_landlock_create_ruleset 444
#endif

static int write_file(const char *path, const char *s) {
    int fd = open(path, O_WRONLY);
    if (fd < 0) return -1;
    ssize_t n = write(fd, s, strlen(s));
    close(fd);
    return n == (ssize_t)strlen(s) ? 0 : -1;
}

/* Child: enter a new user ns (plus extra flags), map our uid to 0, report. */
static int try_userns(int extra, char *why, size_t whylen) {
    uid_t uid = getuid(); gid_t gid = getgid();
    int pfd[2]; if (pipe(pfd)) return -1;
    char dir[] = "/tmp/vm-features.XXXXXX";
    if ((extra & CLONE_NEWNS) && !mkdtemp(dir)) { snprintf(why, whylen, "mkdtemp: %s", strerror(errno)); return -1; }
    pid_t pid = fork();
    if (pid == 0) {
        close(pfd[0]);
        char msg[256] = "ok";
        char map[64];
        if (unshare(CLONE_NEWUSER | extra)) snprintf(msg, sizeof msg, "unshare: %s", strerror(errno));
        else if (write_file("/proc/self/setgroups", "deny")) snprintf(msg, sizeof msg, "setgroups: %s", strerror(errno));
        else if (snprintf(map, sizeof map, "0 %u 1", uid), write_file("/proc/self/uid_map", map))
            snprintf(msg, sizeof msg, "uid_map: %s", strerror(errno));
        else if (snprintf(map, sizeof map, "0 %u 1", gid), write_file("/proc/self/gid_map", map))
            snprintf(msg, sizeof msg, "gid_map: %s", strerror(errno));
        else if (getuid() != 0) snprintf(msg, sizeof msg, "uid is %u, not 0", getuid());
        else if (extra & CLONE_NEWNS) {
            /* What a sandbox does next: a private tmpfs as the new root, pivot_root into it
             * (fails with EINVAL when / is the initramfs' rootfs itself). */
            char old[64];
            if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL)) snprintf(msg, sizeof msg, "make-rprivate: %s", strerror(errno));
            else if (mount("tmpfs", dir, "tmpfs", 0, "size=1m")) snprintf(msg, sizeof msg, "mount tmpfs: %s", strerror(errno));
            else if (snprintf(old, sizeof old, "%s/old", dir), mkdir(old, 0700)) snprintf(msg, sizeof msg, "mkdir: %s", strerror(errno));
            else if (syscall(SYS_pivot_root, dir, old)) snprintf(msg, sizeof msg, "pivot_root: %s", strerror(errno));
            else snprintf(msg, sizeof msg, "ok");
        }
        if (write(pfd[1], msg, strlen(msg) + 1) < 0) _exit(1);
        _exit(0);
    }
    close(pfd[1]);
    ssize_t n = read(pfd[0], why, whylen - 1);
    why[n > 0 ? n : 0] = 0;
    close(pfd[0]);
    int st; waitpid(pid, &st, 0);
    if (extra & CLONE_NEWNS) rmdir(dir);   /* empty in our mount namespace */
    return strcmp(why, "ok") == 0 ? 0 : -1;
}

int main(void) {
    printf("uid=%u\n", getuid());
    long abi = syscall(SYS_landlock_create_ruleset, NULL, 0, 1 /* LANDLOCK_CREATE_RULESET_VERSION */);
    if (abi < 0) printf("landlock_abi=none (%s)\n", strerror(errno));
    else printf("landlock_abi=%ld\n", abi);

    char why[256];
    try_userns(0, why, sizeof why);
    printf("userns=%s\n", why);
    try_userns(CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWCGROUP, why, sizeof why);
    printf("userns_all+pivot_root=%s\n", why);

    int r = prctl(PR_GET_SECCOMP, 0, 0, 0, 0);
    printf("seccomp_mode=%d\n", r);
    /* SECCOMP_GET_ACTION_AVAIL probes filter support without installing anything. */
    unsigned int action = SECCOMP_RET_KILL_PROCESS;
    printf("seccomp_filter=%s\n", syscall(SYS_seccomp, SECCOMP_GET_ACTION_AVAIL, 0, &action) == 0 ? "ok" : strerror(errno));
    return 0;
}
