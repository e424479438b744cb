/* cli/supervisor.c — the supervisor started for chidori-privhelper
 * (supervisor.h, decision 164). */
#define _GNU_SOURCE
#include "cli/supervisor.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/exit.h"
#include "privhelper/proto.h"
#include "sandbox/idmap.h"

/* The child shares our memory (CLONE_VM: nothing is copied, no page of
 * ours faults for it) and runs on a stack of its own, with every signal
 * blocked, until it execs (the idmap holder's shape, sandbox/idmap.c).  So it
 * makes system calls only: no stdio (its locks are ours), no allocation, and
 * everything it reads was prepared here, in its stack's mapping, before the
 * clone.  exec gives it a memory of its own; we may have exec'd the helper
 * by then, which leaves it the old one until its own exec. */
#define CHILD_STACK (64 * 1024)

struct child_args {
        pid_t parent;
        int sync, sock, monitor_fd;
        int ours[2]; /* our ends (sync's writer, the socket's other end): closed in its table first */
        sigset_t mask; /* ours before the clone: restored just before the exec */
        char hfd[16], sfd[16];
        char *argv[7];
};

static void child_say(const char *what)
{
        static const char pre[] = "chidori: become the supervisor (uid 65532): ";
        (void)!write(2, pre, sizeof(pre) - 1);
        (void)!write(2, what, strlen(what));
        (void)!write(2, "\n", 1);
}

/* In the child: root of its namespace = 65532 outside once the maps are
 * written; no supplementary groups (root's would keep gid 0's files open to
 * it); the parent-death signal after the uid change, which clears it.
 * Nothing of chidori's runs in it but these calls and the exec. */
static int child(void *arg)
{
        const struct child_args *c = arg;
        /* Else, were we to die before the word, its read would wait on a
         * writer of its own for ever. */
        close(c->ours[0]);
        close(c->ours[1]);
        char go = 0;
        if (read(c->sync, &go, 1) != 1 || go != 'g')
                _exit(EXIT_PROTOCOL);
        if (setgroups(0, NULL) < 0 || setresgid(0, 0, 0) < 0 || setresuid(0, 0, 0) < 0 ||
            prctl(PR_SET_PDEATHSIG, SIGKILL) < 0) {
                child_say("setgroups, setresgid, setresuid or the parent-death signal failed");
                _exit(EXIT_PROTOCOL);
        }
        if (getppid() != c->parent)
                _exit(EXIT_PROTOCOL);
        /* Our copy of the descriptor table (no CLONE_FILES): the socket
         * crosses this exec, not the parent's. */
        if (fcntl(c->sock, F_SETFD, 0) < 0) {
                child_say("keep the helper's socket across the exec failed");
                _exit(EXIT_PROTOCOL);
        }
        sigprocmask(SIG_SETMASK, &c->mask, NULL);
        syscall(SYS_execveat, c->monitor_fd, "", c->argv, environ, AT_EMPTY_PATH);
        child_say("exec chidori-monitor failed");
        _exit(EXIT_PROTOCOL);
}

static void close_pair(int fd[2])
{
        close(fd[0]);
        close(fd[1]);
}

int supervisor_start(const char *monitor, int handover_fd, uid_t buid, gid_t bgid, struct supervisor *s,
                     struct err **err)
{
        s->pid = 0;
        s->pidfd = s->sock = -1;
        s->stack = NULL;
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
                close(monitor_fd), close_pair(sv);
                return err_set(err, e, "start the supervisor: pipe");
        }
        void *stack = mmap(NULL, CHILD_STACK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
        if (stack == MAP_FAILED) {
                int e = errno;
                close(monitor_fd), close_pair(sv), close_pair(sync);
                return err_set(err, e, "start the supervisor: map its stack");
        }
        /* The arguments at the bottom of its stack's mapping: they stay put
         * whatever we do meanwhile. */
        struct child_args *c = stack;
        c->parent = getpid();
        c->sync = sync[0];
        c->sock = sv[1];
        c->monitor_fd = monitor_fd;
        c->ours[0] = sync[1];
        c->ours[1] = sv[0];
        snprintf(c->hfd, sizeof(c->hfd), "%d", handover_fd);
        snprintf(c->sfd, sizeof(c->sfd), "%d", sv[1]);
        c->argv[0] = "chidori-monitor", c->argv[1] = "--handover", c->argv[2] = c->hfd;
        c->argv[3] = "--helper", c->argv[4] = c->sfd, c->argv[5] = "--cgroup-delegated", c->argv[6] = NULL;
        sigset_t all;
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &c->mask);
        int pidfd = -1;
        pid_t pid = clone(child, (char *)stack + CHILD_STACK, CLONE_VM | CLONE_NEWUSER | CLONE_PIDFD | SIGCHLD, c,
                          &pidfd);
        int e = errno;
        pthread_sigmask(SIG_SETMASK, &c->mask, NULL);
        close(sv[1]), close(sync[0]), close(monitor_fd);
        if (pid < 0) {
                close(sv[0]), close(sync[1]);
                munmap(stack, CHILD_STACK);
                return err_set(err, e, "start the supervisor in a user namespace (clone)");
        }
        s->pid = pid;
        s->pidfd = pidfd;
        s->sock = sv[0];
        s->stack = stack;
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
        /* Dead and reaped: nothing runs on its stack any more. */
        if (s->stack)
                munmap(s->stack, CHILD_STACK);
        s->stack = NULL;
}
