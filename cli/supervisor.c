/* cli/supervisor.c — the supervisor started for chidori-privhelper
 * (supervisor.h, decision 164). */
#define _GNU_SOURCE
#include "cli/supervisor.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/exit.h"
#include "privhelper/proto.h"
#include "sandbox/idmap.h"

/* In the child: root of its namespace = 65532 outside once the maps are
 * written; no supplementary groups (root's would keep gid 0's files open to
 * it); the parent-death signal after the uid change, which clears it.
 * Nothing of chidori's runs in it but these calls and the exec. */
__attribute__((noreturn)) static void child(pid_t parent, int sync, int sock, int monitor_fd, int handover_fd)
{
        char go = 0;
        if (read(sync, &go, 1) != 1 || go != 'g')
                _exit(EXIT_PROTOCOL);
        if (setgroups(0, NULL) < 0 || setresgid(0, 0, 0) < 0 || setresuid(0, 0, 0) < 0 ||
            prctl(PR_SET_PDEATHSIG, SIGKILL) < 0) {
                fprintf(stderr, "chidori: become the supervisor (uid %u): %s\n", PRIV_SUPERVISOR_ID, strerror(errno));
                _exit(EXIT_PROTOCOL);
        }
        if (getppid() != parent)
                _exit(EXIT_PROTOCOL);
        int s = fcntl(sock, F_DUPFD, 3);
        if (s < 0) {
                fprintf(stderr, "chidori: become the supervisor: %s\n", strerror(errno));
                _exit(EXIT_PROTOCOL);
        }
        char hfd[16], sfd[16];
        snprintf(hfd, sizeof(hfd), "%d", handover_fd);
        snprintf(sfd, sizeof(sfd), "%d", s);
        char *argv[] = { "chidori-monitor", "--handover", hfd, "--helper", sfd, "--cgroup-delegated", NULL };
        syscall(SYS_execveat, monitor_fd, "", argv, environ, AT_EMPTY_PATH);
        fprintf(stderr, "chidori: start the supervisor (chidori-monitor): %s\n", strerror(errno));
        _exit(EXIT_PROTOCOL);
}

int supervisor_start(const char *monitor, int handover_fd, uid_t buid, gid_t bgid, struct supervisor *s,
                     struct err **err)
{
        s->pid = 0;
        s->pidfd = s->sock = -1;
        int monitor_fd = open(monitor, O_PATH | O_CLOEXEC);
        if (monitor_fd < 0)
                return err_set(err, errno, "open %s (set CHIDORI_MONITOR or reinstall)", monitor);
        int sv[2], sync[2];
        if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
                close(monitor_fd);
                return err_set(err, errno, "start the supervisor: socketpair");
        }
        if (pipe2(sync, O_CLOEXEC) < 0) {
                int e = errno;
                close(monitor_fd), close(sv[0]), close(sv[1]);
                return err_set(err, e, "start the supervisor: pipe");
        }
        pid_t self = getpid();
        int pidfd = -1;
        struct clone_args a = { .flags = CLONE_NEWUSER | CLONE_PIDFD, .pidfd = (uint64_t)(uintptr_t)&pidfd,
                                .exit_signal = SIGCHLD };
        pid_t pid = (pid_t)syscall(SYS_clone3, &a, sizeof(a));
        if (pid == 0) {
                close(sv[0]), close(sync[1]);
                child(self, sync[0], sv[1], monitor_fd, handover_fd);
        }
        int e = errno;
        close(sv[1]), close(sync[0]), close(monitor_fd);
        if (pid < 0) {
                close(sv[0]), close(sync[1]);
                return err_set(err, e, "start the supervisor in a user namespace (clone3)");
        }
        s->pid = pid;
        s->pidfd = pidfd;
        s->sock = sv[0];
        char umap[128], gmap[128];
        snprintf(umap, sizeof(umap), "0 %u 1\n%u %u 1\n65534 65534 1\n", PRIV_SUPERVISOR_ID, (unsigned)buid,
                 (unsigned)buid);
        snprintf(gmap, sizeof(gmap), "0 %u 1\n%u %u 1\n65534 65534 1\n", PRIV_SUPERVISOR_ID, (unsigned)bgid,
                 (unsigned)bgid);
        int rc = idmap_write_proc(pid, "uid_map", umap, err);
        if (rc == 0)
                rc = idmap_write_proc(pid, "gid_map", gmap, err);
        if (rc < 0)
                err_wrap(err, "the supervisor's id maps");
        else if (write(sync[1], "g", 1) != 1)
                rc = err_set(err, errno, "start the supervisor");
        close(sync[1]);
        /* The helper's, across our exec. */
        if (rc == 0 && (fcntl(s->pidfd, F_SETFD, 0) < 0 || fcntl(s->sock, F_SETFD, 0) < 0))
                rc = err_set(err, errno, "start the supervisor: keep its descriptors");
        if (rc < 0)
                supervisor_stop(s);
        return rc;
}

void supervisor_stop(struct supervisor *s)
{
        if (s->pid <= 0)
                return;
        kill(s->pid, SIGKILL);
        while (waitpid(s->pid, NULL, 0) < 0 && errno == EINTR)
                ;
        if (s->pidfd >= 0)
                close(s->pidfd);
        if (s->sock >= 0)
                close(s->sock);
        s->pid = 0;
        s->pidfd = s->sock = -1;
}
