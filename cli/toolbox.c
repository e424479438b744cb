/* cli/toolbox.c — the monitor starts a tool the broker asked for (SPAWN
 * kind tool, checked against the COMMIT by monitor/commit.c first): the same
 * child the one-process run starts (effects/proc/tools.c tools_spec), from
 * the operator's configuration and the request's strings, never from text
 * the monitor parses.
 *
 *   boxed:  <self> launch --quiet --deadline <timeout> [--require-sandbox]
 *           [--cgroup-parent=P] [--ro-bind P]... [--setenv N]... -- <program> <args>
 *   host:   <self> _host-tool --as <uid>:<gid> -- <program> <args>
 *           (the broker's uid and gid, never 0: sandbox/hosttool.c drops to
 *           them, no capabilities, no_new_privs, its own pid namespace)
 *
 * Its environment: PATH=/usr/local/bin:/usr/bin:/bin, each requested
 * variable the monitor has (its own environment: the operator's as the run
 * started), CHIDORI_PARENT_PID (it dies with the monitor) and
 * CHIDORI_CGROUP_ENTER (call-<n> below the run's cgroup: --memory and
 * --pids bound it with the run).  It starts in "/" in a session of its own,
 * stdio on three pipes whose other ends go to the broker. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/cli.h"
#include "common/cleanup.h"
#include "common/strv.h"
#include "sandbox/cgroup/cgroup.h"

#define TOOL_PATH "/usr/local/bin:/usr/bin:/bin"

struct cli_tool {
        pid_t pid;
        int pidfd;
        struct cgroup_run *cg;   /* the run's, while the place exists */
        char place[40];          /* call-<n>, "" when none */
};

static void argv_build(const struct cli_tools *c, const struct box_request *req, struct strv *av)
{
        strv_addf(av, "%s", c->self_exe);
        if (req->host) {
                strv_addf(av, "_host-tool");
                strv_addf(av, "--as");
                strv_addf(av, "%u:%u", (unsigned)c->host_uid, (unsigned)c->host_gid);
        } else {
                strv_addf(av, "launch");
                strv_addf(av, "--quiet");
                strv_addf(av, "--deadline");
                strv_addf(av, "%ld", req->timeout_ms);
                if (c->sandbox->require)
                        strv_addf(av, "--require-sandbox");
                if (c->sandbox->cgroup_parent)
                        strv_addf(av, "--cgroup-parent=%s", c->sandbox->cgroup_parent);
                for (size_t i = 0; req->ro_binds && req->ro_binds[i]; i++) {
                        strv_addf(av, "--ro-bind");
                        strv_addf(av, "%s", req->ro_binds[i]);
                }
                for (size_t i = 0; req->env_names && req->env_names[i]; i++)
                        if (getenv(req->env_names[i])) {
                                strv_addf(av, "--setenv");
                                strv_addf(av, "%s", req->env_names[i]);
                        }
        }
        strv_addf(av, "--");
        for (size_t i = 0; req->argv[i]; i++)
                strv_addf(av, "%s", req->argv[i]);
}

static int spawn_child(char *const *argv, char *const *envp, pid_t *ret_pid, int ret_fds[3], struct err **err)
{
        int p[3][2] = { { -1, -1 }, { -1, -1 }, { -1, -1 } };
        posix_spawn_file_actions_t fa;
        posix_spawnattr_t attr;
        sigset_t none, all;
        sigemptyset(&none);
        sigfillset(&all);
        int e = 0, r = -1;
        posix_spawn_file_actions_init(&fa);
        posix_spawnattr_init(&attr);
        for (int i = 0; i < 3; i++)
                if (pipe2(p[i], O_CLOEXEC) < 0) {
                        err_set(err, errno, "start the tool: pipe");
                        goto out;
                }
        if ((e = posix_spawn_file_actions_adddup2(&fa, p[0][0], 0)) != 0 ||
            (e = posix_spawn_file_actions_adddup2(&fa, p[1][1], 1)) != 0 ||
            (e = posix_spawn_file_actions_adddup2(&fa, p[2][1], 2)) != 0 ||
            (e = posix_spawn_file_actions_addclosefrom_np(&fa, 3)) != 0 ||
            (e = posix_spawn_file_actions_addchdir_np(&fa, "/")) != 0 ||
            (e = posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK |
                                                         POSIX_SPAWN_SETSIGDEF)) != 0 ||
            (e = posix_spawnattr_setsigmask(&attr, &none)) != 0 ||
            (e = posix_spawnattr_setsigdefault(&attr, &all)) != 0 ||
            (e = posix_spawn(ret_pid, argv[0], &fa, &attr, argv, envp)) != 0) {
                err_set(err, e, "start the tool: execute '%s'", argv[0]);
                goto out;
        }
        ret_fds[0] = take_fd(&p[0][1]);
        ret_fds[1] = take_fd(&p[1][0]);
        ret_fds[2] = take_fd(&p[2][0]);
        r = 0;
out:
        posix_spawn_file_actions_destroy(&fa);
        posix_spawnattr_destroy(&attr);
        for (int i = 0; i < 3; i++)
                for (int k = 0; k < 2; k++)
                        if (p[i][k] >= 0)
                                close(p[i][k]);
        return r;
}

int cli_tool_start(struct cli_tools *c, const struct box_request *req, struct cli_tool **ret, int fds[3],
                   struct err **err)
{
        if (!c->self_exe)
                return err_set(err, 0, "start the tool: this chidori's path is unknown");
        if (!req->argv || !req->argv[0] || req->argv[0][0] != '/')
                return err_set(err, 0, "start the tool: no absolute program");
        if (req->host && !c->host_ok)
                return err_set(err, EPERM, "tool '%s' has \"sandbox\": false, which runs it outside a box as the "
                               "broker's user; here that would be uid 0 (the broker's uid-0 fallback): refused. "
                               "Run it boxed, or give the state dir and workspace a filesystem that can be id-mapped",
                               req->argv[0]);
        struct cli_tool *t = calloc(1, sizeof(*t));
        if (!t)
                return err_set(err, ENOMEM, "start the tool");
        t->pidfd = -1;
        struct strv av = { 0 }, ev = { 0 };
        argv_build(c, req, &av);
        strv_addf(&ev, "PATH=%s", TOOL_PATH);
        for (size_t i = 0; req->env_names && req->env_names[i]; i++) {
                const char *v = getenv(req->env_names[i]);
                if (v)
                        strv_addf(&ev, "%s=%s", req->env_names[i], v);
        }
        strv_addf(&ev, "CHIDORI_PARENT_PID=%d", (int)getpid());
        if (c->run_cg) {
                snprintf(t->place, sizeof(t->place), "call-%llu", (unsigned long long)++c->next_place);
                _cleanup_free_ char *enter = NULL;
                if (cgroup_run_child_create(c->run_cg, t->place, &enter, err) < 0) {
                        strv_clear(&av), strv_clear(&ev), free(t);
                        return err_wrap(err, "start the tool: a place in the run's cgroup");
                }
                t->cg = c->run_cg;
                strv_addf(&ev, "CHIDORI_CGROUP_ENTER=%s", enter);
        }
        int r = -1;
        if (av.failed || ev.failed)
                err_set(err, ENOMEM, "start the tool");
        else
                r = spawn_child(av.v, ev.v, &t->pid, fds, err);
        strv_clear(&av), strv_clear(&ev);
        if (r == 0 && (t->pidfd = (int)syscall(SYS_pidfd_open, t->pid, 0)) < 0) {
                int e = errno;
                kill(t->pid, SIGKILL);
                while (waitpid(t->pid, NULL, 0) < 0 && errno == EINTR)
                        ;
                for (int i = 0; i < 3; i++)
                        close(fds[i]);
                r = err_set(err, e, "start the tool: pidfd_open");
        }
        if (r < 0) {
                if (t->cg)
                        cgroup_run_child_remove(t->cg, t->place, NULL);
                free(t);
                return -1;
        }
        *ret = t;
        return 0;
}

int cli_tool_pidfd(const struct cli_tool *t)
{
        return t->pidfd;
}

void cli_tool_end(struct cli_tool *t, bool kill_first, int *ret_status)
{
        if (kill_first) {
                syscall(SYS_pidfd_send_signal, t->pidfd, SIGKILL, NULL, 0);
                killpg(t->pid, SIGKILL);
        }
        siginfo_t si;
        memset(&si, 0, sizeof(si));
        while (waitid(P_PIDFD, (id_t)t->pidfd, &si, WEXITED | WNOWAIT) < 0 && errno == EINTR)
                ;
        /* What it left in its session, while its zombie pins the group id. */
        killpg(t->pid, SIGKILL);
        memset(&si, 0, sizeof(si));
        while (waitid(P_PIDFD, (id_t)t->pidfd, &si, WEXITED) < 0 && errno == EINTR)
                ;
        *ret_status = si.si_code == CLD_EXITED ? W_EXITCODE(si.si_status, 0)
                      : si.si_status | (si.si_code == CLD_DUMPED ? 0x80 : 0);
        if (t->cg)
                cgroup_run_child_remove(t->cg, t->place, NULL);
        close(t->pidfd);
        free(t);
}
