/* sandbox/hosttool.c — `chidori _host-tool -- PROGRAM [ARGS...]` (internal):
 * how a tool with "sandbox": false runs, so that nothing it starts outlives
 * the call (docs/tools.md, decision "No orphans").
 *
 * A host tool sees the host as the broker does, but a process group is not
 * a container: a grandchild that calls setsid() leaves it, and the parent's
 * death (even SIGKILL) reaches nobody.  So the command runs in a pid
 * namespace of its own:
 *
 *   T  this process (the broker's child; dies with the broker: sandbox/child.c)
 *   └─ I  pid 1 of a new pid namespace: dies with T (PR_SET_PDEATHSIG), reaps
 *      │  orphans, reports C's wait status to T, then exits — and the kernel
 *      │  kills everything left in the namespace when its pid 1 goes
 *      └─ C  the command (pid 2 there), exec'd with T's environment
 *
 * T exits as C did (the same status, or the same signal), so the broker's
 * view of a host tool is unchanged.  A timeout SIGKILLs T's process group,
 * which holds I and C; I's death empties the namespace.  Nothing else of
 * the host is hidden: no mount, network or user namespace as root (/proc
 * still shows the host's pids).  Without root, a user namespace that maps
 * the caller's uid and gid to themselves comes with the pid namespace.  If
 * neither can be created, the command runs without one (I as a child
 * subreaper that kills what is left when C ends) and a warning says that a
 * SIGKILLed run may then leave the tool's own children behind.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <grp.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/exit.h"
#include "sandbox/sandbox.h"

static int write_file(const char *path, const char *text)
{
        int fd = open(path, O_WRONLY | O_CLOEXEC);
        if (fd < 0)
                return -1;
        ssize_t n = write(fd, text, strlen(text));
        int e = errno;
        close(fd);
        errno = e;
        return n == (ssize_t)strlen(text) ? 0 : -1;
}

/* fork() into a new pid namespace: as root directly, else inside a user
 * namespace that maps us to ourselves (entered by this process first).
 * With clone(CLONE_NEWPID) rather than unshare, our own later children
 * (a sanitizer's helper at exit) still start in our namespace.  -1 with
 * errno when neither works. */
static pid_t fork_new_pid_namespace(void)
{
        pid_t pid = (pid_t)syscall(SYS_clone, CLONE_NEWPID | SIGCHLD, NULL, NULL, NULL, NULL);
        if (pid >= 0 || (errno != EPERM && errno != EINVAL))
                return pid;
        uid_t uid = geteuid();
        gid_t gid = getegid();
        if (unshare(CLONE_NEWUSER) < 0)
                return -1;
        char map[64];
        snprintf(map, sizeof(map), "%u %u 1\n", (unsigned)uid, (unsigned)uid);
        if (write_file("/proc/self/uid_map", map) < 0)
                return -1;
        if (write_file("/proc/self/setgroups", "deny") < 0 && errno != ENOENT)
                return -1;
        snprintf(map, sizeof(map), "%u %u 1\n", (unsigned)gid, (unsigned)gid);
        if (write_file("/proc/self/gid_map", map) < 0)
                return -1;
        return (pid_t)syscall(SYS_clone, CLONE_NEWPID | SIGCHLD, NULL, NULL, NULL, NULL);
}

static void default_signals(void)
{
        struct sigaction sa;
        memset(&sa, 0, sizeof(sa));
        sa.sa_handler = SIG_DFL;
        for (int s = 1; s < NSIG; s++)
                sigaction(s, &sa, NULL); /* fails harmlessly for SIGKILL, SIGSTOP, 32, 33 */
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
}

/* Without a namespace: kill what was reparented to us (a subreaper) until
 * nothing is left. */
static void kill_adopted(void)
{
        for (int round = 0; round < 1000; round++) {
                char path[64];
                snprintf(path, sizeof(path), "/proc/self/task/%d/children", (int)getpid());
                FILE *f = fopen(path, "re");
                int n = 0, pid;
                while (f && fscanf(f, "%d", &pid) == 1) {
                        kill(pid, SIGKILL);
                        n++;
                }
                if (f)
                        fclose(f);
                while (waitpid(-1, NULL, WNOHANG) > 0)
                        ;
                if (n == 0 && waitpid(-1, NULL, WNOHANG) < 0 && errno == ECHILD)
                        return;
                usleep(1000);
        }
}

/* I: start C, reap everything, report C's status on `report`. */
__attribute__((noreturn)) static void init_main(char **cmd, int report, int alive, bool in_ns)
{
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        struct pollfd p = { .fd = alive, .events = POLLIN };
        if (poll(&p, 1, 0) > 0 && (p.revents & (POLLHUP | POLLERR)))
                _exit(128 + SIGKILL); /* T died before the prctl */
        if (!in_ns)
                prctl(PR_SET_CHILD_SUBREAPER, 1);
        pid_t c = fork();
        if (c < 0) {
                fprintf(stderr, "chidori: _host-tool: fork: %s\n", strerror(errno));
                _exit(EXIT_PROTOCOL);
        }
        if (c == 0) {
                close(report);
                close(alive);
                default_signals();
                execvp(cmd[0], cmd);
                int e = errno;
                fprintf(stderr, "chidori: _host-tool: execute '%s': %s\n", cmd[0], strerror(e));
                _exit(e == ENOENT ? 127 : 126);
        }
        /* Keep no end of the tool's pipes open. */
        int null = open("/dev/null", O_RDWR | O_CLOEXEC);
        for (int fd = 0; fd < 3 && null >= 0; fd++)
                dup2(null, fd);
        int status = 0;
        for (;;) {
                int st;
                pid_t w = waitpid(-1, &st, 0);
                if (w == c) {
                        status = st;
                        break;
                }
                if (w < 0 && errno != EINTR)
                        break;
        }
        if (!in_ns)
                kill_adopted();
        ssize_t n = write(report, &status, sizeof(status));
        (void)n;
        _exit(0); /* as pid 1: the kernel kills what is left in the namespace */
}

/* --as UID:GID (the monitor's, for a broker's tool: issue 10): T and I
 * become that user for good once the pid namespace exists (made as root,
 * so no user namespace is needed) and before C starts — no supplementary
 * groups, no capability left (a uid change from 0 clears them),
 * no_new_privs.  The death signal, which a credential change clears, is
 * set again. */
static int drop_to(uid_t u, gid_t g)
{
        pid_t parent = getppid();
        if (geteuid() == 0) {
                if (setgroups(0, NULL) < 0 || setresgid(g, g, g) < 0 || setresuid(u, u, u) < 0)
                        return -1;
        } else if (geteuid() != u || getegid() != g) {
                errno = EPERM;
                return -1;
        }
        if (getuid() == 0 || geteuid() == 0 || prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
                return -1;
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent)
                _exit(128 + SIGKILL); /* the run is gone already */
        return 0;
}

int host_tool_run(bool as, uid_t as_uid, gid_t as_gid, char **cmd)
{
        int report[2], alive[2];
        if (pipe2(report, O_CLOEXEC) < 0 || pipe2(alive, O_CLOEXEC) < 0) {
                fprintf(stderr, "chidori: _host-tool: pipe: %s\n", strerror(errno));
                return EXIT_PROTOCOL;
        }
        bool in_ns = true;
        pid_t init = fork_new_pid_namespace();
        if (init < 0) {
                fprintf(stderr, "chidori: warning: no pid namespace for tool '%s' (%s): if the run is killed, "
                                "processes the tool started in the background may outlive it\n",
                        cmd[0], strerror(errno));
                in_ns = false;
                init = fork();
        }
        if (init < 0) {
                fprintf(stderr, "chidori: _host-tool: fork: %s\n", strerror(errno));
                return EXIT_PROTOCOL;
        }
        if (init == 0) {
                close(report[0]);
                close(alive[1]);
                if (as && drop_to(as_uid, as_gid) < 0) {
                        fprintf(stderr, "chidori: _host-tool: become %u:%u: %s\n", (unsigned)as_uid,
                                (unsigned)as_gid, strerror(errno));
                        _exit(EXIT_PROTOCOL);
                }
                init_main(cmd, report[1], alive[0], in_ns);
        }
        close(report[1]);
        close(alive[0]);
        if (as && drop_to(as_uid, as_gid) < 0) {
                fprintf(stderr, "chidori: _host-tool: become %u:%u: %s\n", (unsigned)as_uid, (unsigned)as_gid,
                        strerror(errno));
                kill(init, SIGKILL);
                return EXIT_PROTOCOL;
        }
        /* Our stdio stays open for nobody but C: the broker waits for EOF. */
        int null = open("/dev/null", O_RDWR | O_CLOEXEC);
        for (int fd = 0; fd < 3 && null >= 0; fd++)
                dup2(null, fd);
        int st = 0;
        while (waitpid(init, &st, 0) < 0 && errno == EINTR)
                ;
        int status = 0;
        if (read(report[0], &status, sizeof(status)) != (ssize_t)sizeof(status))
                return 128 + SIGKILL; /* I was killed: so was C */
        if (WIFEXITED(status))
                return WEXITSTATUS(status);
        int sig = WIFSIGNALED(status) ? WTERMSIG(status) : SIGKILL;
        /* Die of the same signal, without a core of our own. */
        struct rlimit no_core = { 0, 0 };
        setrlimit(RLIMIT_CORE, &no_core);
        default_signals();
        raise(sig);
        return 128 + sig;
}
