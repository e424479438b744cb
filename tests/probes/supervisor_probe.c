/* tests/probes/supervisor_probe.c — plays chidori-monitor under
 * chidori-privhelper for the compromised-supervisor tests
 * (tests/bats/privsep.bats): `chidori run` with CHIDORI_PRIVSEP=1 and
 * CHIDORI_MONITOR pointing here makes the helper start this program exactly
 * as it starts the supervisor (its user namespace, uid 65532 outside, the
 * delegated cgroup, the helper's socket).  Run directly as root it is the
 * control: the same attempts with root's privilege.
 *
 *   supervisor_probe --handover FD [--helper FD [--cgroup-delegated]]
 *
 * Reads what to try from $PROBE_STATE (a state dir whose "link" is a
 * symlink out of it) and prints one line per attempt:
 *   NAME OK                 the attempt worked
 *   NAME DENIED <errno>     it was refused
 * and exits 0. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <linux/mount.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "privhelper/proto.h"

static void said(const char *name, int rc)
{
        if (rc >= 0)
                printf("%s OK\n", name);
        else
                printf("%s DENIED %s\n", name, strerrorname_np(errno) ? strerrorname_np(errno) : "?");
}

static int helper(enum priv_op op, const char *path, long u, long g)
{
        struct err *e = NULL;
        int fd = priv_request(op, path, u, g, MOUNT_ATTR_RDONLY, &e);
        if (fd < 0)
                errno = e && e->errnum ? e->errnum : EIO;
        err_free(e);
        if (fd >= 0)
                close(fd);
        return fd;
}

/* The cgroup above our own (memory, v1 or v2): moving into it escapes the
 * delegated one. */
static int cgroup_escape(void)
{
        FILE *f = fopen("/proc/self/cgroup", "re");
        char line[512], path[PATH_MAX] = "";
        while (f && fgets(line, sizeof(line), f)) {
                char *p = strstr(line, ":memory:");
                if (p) {
                        snprintf(path, sizeof(path), "/sys/fs/cgroup/memory%s", p + 8);
                        break;
                }
                if (strncmp(line, "0::", 3) == 0 && !path[0])
                        snprintf(path, sizeof(path), "/sys/fs/cgroup%s", line + 3);
        }
        if (f)
                fclose(f);
        path[strcspn(path, "\n")] = '\0';
        char *slash = strrchr(path, '/');
        if (!slash)
                return errno = ENOENT, -1;
        size_t l = (size_t)(slash - path);
        snprintf(slash, sizeof(path) - l, "/cgroup.procs");
        int fd = open(path, O_WRONLY | O_CLOEXEC);
        if (fd < 0)
                return -1;
        char pid[24];
        int n = snprintf(pid, sizeof(pid), "%d", (int)getpid());
        int rc = write(fd, pid, (size_t)n) == n ? 0 : -1;
        close(fd);
        return rc;
}

int main(int argc, char **argv)
{
        for (int i = 1; i + 1 < argc; i++)
                if (strcmp(argv[i], "--helper") == 0)
                        priv_helper_fd = (int)strtol(argv[i + 1], NULL, 10);
        if (priv_helper_fd >= 0 && priv_wait_ready() < 0) /* as the supervisor: in its cgroup first */
                return 1;
        const char *state = getenv("PROBE_STATE");
        char p[PATH_MAX];
        setvbuf(stdout, NULL, _IOLBF, 0);
        said("read-shadow", open("/etc/shadow", O_RDONLY | O_CLOEXEC));
        int w = open("/etc/chidori-privsep-probe", O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
        said("write-etc", w);
        if (w >= 0)
                unlink("/etc/chidori-privsep-probe");
        said("signal-parent", kill(getppid(), 0));
        long pt = ptrace(PTRACE_SEIZE, getppid(), 0, 0);
        said("ptrace-parent", (int)pt);
        if (pt == 0)
                ptrace(PTRACE_DETACH, getppid(), 0, 0);
        /* a module that is not one: past the capability check, it fails EFAULT/ENOEXEC */
        static const char junk[64];
        int m = (int)syscall(SYS_init_module, junk, sizeof(junk), "");
        if (m < 0 && errno == ENOSYS)
                printf("load-module UNAVAILABLE ENOSYS\n"); /* a kernel without modules */
        else
                said("load-module", m < 0 && errno != EPERM ? 0 : -1);
        /* CAP_SYS_ADMIN of the host: swapoff checks it before the path */
        int sw = (int)syscall(SYS_swapoff, "/chidori-no-such-swap");
        said("host-admin", sw < 0 && errno != EPERM ? 0 : -1);
        /* the host's UTS namespace: set its name to what it is */
        char host[256] = "";
        gethostname(host, sizeof(host) - 1);
        said("set-hostname", sethostname(host, strlen(host)));
        said("cgroup-escape", cgroup_escape());
        if (priv_helper_fd >= 0 && state) {
                snprintf(p, sizeof(p), "%s/link", state);
                said("helper-state-dir", helper(PRIV_TREE, state, -1, -1));
                said("helper-root", helper(PRIV_TREE, "/", -1, -1));
                said("helper-etc", helper(PRIV_TREE, "/etc", -1, -1));
                said("helper-symlink-out", helper(PRIV_TREE, p, -1, -1));
                said("helper-idmap-root", helper(PRIV_TREE, state, 0, 0));
                said("helper-agent-escape", helper(PRIV_AGENT_FILE, "../../../../../../etc/shadow", -1, -1));
                said("helper-agent-absolute", helper(PRIV_AGENT_FILE, "/etc/shadow", -1, -1));
                said("helper-agent-replay", helper(PRIV_AGENT, "/etc/shadow", -1, -1));
        }
        return 0;
}
