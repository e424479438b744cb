/* cli/toolbox.c — the monitor starts a tool the broker asked for (SPAWN
 * kind tool, checked against the COMMIT by monitor/commit.c first): the same
 * child the one-process run starts (effects/proc/tools.c tools_spec), from
 * the operator's configuration and the request's strings, never from text
 * the monitor parses.  No other program runs privileged for it: the monitor
 * forks, and the child (this file's tool_child) is what `chidori launch` and
 * `chidori _host-tool` would have been —
 *
 *   boxed:  sandbox_launch (sandbox/launch.c): the program in a box of the
 *           run's posture (--require-sandbox, --cgroup-parent), --deadline
 *           the tool's timeout, its ro binds, PATH/HOME/LANG and each
 *           requested variable the monitor has
 *   host:   host_tool_run (sandbox/hosttool.c) as the broker's uid and gid,
 *           never 0: no capabilities, no_new_privs, its own pid namespace
 *
 * The child dies with the monitor (PR_SET_PDEATHSIG), enters call-<n> below
 * the run's cgroup first (--memory and --pids bound it with the run), starts
 * in "/" in a session of its own, stdio on three pipes whose other ends go
 * to the broker. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/cli.h"
#include "privhelper/proto.h"
#include "common/cleanup.h"
#include "common/exit.h"
#include "common/stop.h"
#include "common/strv.h"
#include "sandbox/cgroup/cgroup.h"
#include "sandbox/sandbox.h"

#define TOOL_PATH "/usr/local/bin:/usr/bin:/bin"

struct cli_tool {
        pid_t pid;
        int pidfd;
        struct cgroup_run *cg;   /* the run's, while the place exists */
        char place[40];          /* call-<n>, "" when none */
};

#define TOOL_ENV_MAX 64

/* The tool's environment, built before the fork: PATH (and for a box HOME
 * and LANG, as `chidori launch` gives) then each requested variable the
 * monitor has, a requested name replacing a fixed one. */
static int tool_env(const struct box_request *req, struct strv *ev)
{
        static const char *const fixed[] = { ("PATH=" TOOL_PATH), "HOME=/", "LANG=C.UTF-8" };
        size_t nfixed = req->host ? 1 : ARRAY_SIZE(fixed), n = 0;
        for (size_t i = 0; i < nfixed; i++) {
                bool replaced = false;
                for (size_t k = 0; req->env_names && req->env_names[k]; k++) {
                        size_t len = strlen(req->env_names[k]);
                        replaced |= strncmp(fixed[i], req->env_names[k], len) == 0 && fixed[i][len] == '=';
                }
                if (!replaced)
                        strv_addf(ev, "%s", fixed[i]);
        }
        for (size_t k = 0; req->env_names && req->env_names[k]; k++, n++) {
                const char *v = getenv(req->env_names[k]);
                if (n == TOOL_ENV_MAX)
                        return -1;
                if (v)
                        strv_addf(ev, "%s=%s", req->env_names[k], v);
        }
        return ev->failed ? -1 : 0;
}

/* The box's read-only binds: each the operator's path, resolved as it is
 * now, at the same place inside. */
static int tool_binds(const struct box_request *req, struct box_bind *binds, size_t max, size_t *ret_n)
{
        size_t n = 0;
        for (size_t i = 0; req->ro_binds && req->ro_binds[i]; i++) {
                char *src = n < max && !strchr(req->ro_binds[i], ':') ? realpath(req->ro_binds[i], NULL) : NULL;
                if (!src) {
                        fprintf(stderr, "chidori: --ro-bind '%s': %s\n", req->ro_binds[i],
                                n >= max ? "too many binds" : strchr(req->ro_binds[i], ':') ? "a ':' in the path"
                                                                                           : strerror(errno));
                        *ret_n = n;
                        return -1;
                }
                binds[n++] = (struct box_bind){ .src = src, .dst = src };
        }
        *ret_n = n;
        return 0;
}

/* The forked child: stdio, session, death signal, cgroup place, then the
 * tool, boxed or on the host.  Never returns. */
static _Noreturn void tool_child(const struct cli_tools *c, const struct box_request *req, int p[3][2],
                                 pid_t monitor, const char *enter, char **env)
{
        if (dup2(p[0][0], 0) < 0 || dup2(p[1][1], 1) < 0 || dup2(p[2][1], 2) < 0)
                _exit(EXIT_PROTOCOL);
        /* Under the privileged helper its socket stays, at 3, close-on-exec:
         * the tool's box asks it for the program and the binds. */
        if (priv_helper_fd >= 0 && (priv_helper_fd == 3 || dup3(priv_helper_fd, 3, O_CLOEXEC) == 3))
                priv_helper_fd = 3;
        else
                priv_helper_fd = -1;
        close_range(priv_helper_fd == 3 ? 4 : 3, ~0u, 0);
        if (chdir("/") < 0 || setsid() < 0)
                _exit(EXIT_PROTOCOL);
        sigset_t none;
        sigemptyset(&none);
        for (int sig = 1; sig < NSIG; sig++)
                signal(sig, SIG_DFL);
        sigprocmask(SIG_SETMASK, &none, NULL);
        launcher_stop_signal = 0;
        stop_handlers_install();
        if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0)
                _exit(EXIT_PROTOCOL);
        if (getppid() != monitor)
                _exit(128 + SIGKILL); /* the run is gone already */
        if (enter) {
                struct err *e = NULL;
                if (cgroup_enter(enter, &e) < 0) {
                        fprintf(stderr, "chidori: enter the calling run's cgroup: %s\n", err_msg(e));
                        _exit(EXIT_PROTOCOL);
                }
                launcher_cgroup_entered = true;
        }
        if (req->host) {
                environ = env;
                _exit(host_tool_run(true, c->host_uid, c->host_gid, (char **)req->argv));
        }
        struct sandbox_opts so;
        sandbox_opts_init(&so);
        so.deadline_ms = req->timeout_ms;
        so.require = c->sandbox->require;
        so.cgroup_parent = c->sandbox->cgroup_parent;
        struct box_bind binds[64];
        size_t nbinds = 0;
        if (tool_binds(req, binds, ARRAY_SIZE(binds), &nbinds) < 0)
                _exit(EXIT_USAGE); /* as `chidori launch --ro-bind` */
        _exit(sandbox_launch(&so, binds, nbinds, req->argv[0], (char **)req->argv, env, true));
}

static int fork_tool(const struct cli_tools *c, const struct box_request *req, const char *enter, char **env,
                     pid_t *ret_pid, int ret_fds[3], struct err **err)
{
        int p[3][2] = { { -1, -1 }, { -1, -1 }, { -1, -1 } }, r = -1;
        for (int i = 0; i < 3; i++)
                if (pipe2(p[i], O_CLOEXEC) < 0) {
                        err_set(err, errno, "start the tool: pipe");
                        goto out;
                }
        pid_t monitor = getpid();
        pid_t pid = fork();
        if (pid < 0) {
                err_set(err, errno, "start the tool: fork");
                goto out;
        }
        if (pid == 0)
                tool_child(c, req, p, monitor, enter, env);
        *ret_pid = pid;
        ret_fds[0] = take_fd(&p[0][1]);
        ret_fds[1] = take_fd(&p[1][0]);
        ret_fds[2] = take_fd(&p[2][0]);
        r = 0;
out:
        for (int i = 0; i < 3; i++)
                for (int k = 0; k < 2; k++)
                        if (p[i][k] >= 0)
                                close(p[i][k]);
        return r;
}

int cli_tool_start(struct cli_tools *c, const struct box_request *req, struct cli_tool **ret, int fds[3],
                   struct err **err)
{
        if (!c->enabled)
                return err_set(err, 0, "start the tool: tools are not enabled for this run");
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
        struct strv ev = { 0 };
        if (tool_env(req, &ev) < 0) {
                strv_clear(&ev), free(t);
                return err_set(err, ENOMEM, "start the tool: its environment (at most %d variables)", TOOL_ENV_MAX);
        }
        _cleanup_free_ char *enter = NULL;
        if (c->run_cg) {
                snprintf(t->place, sizeof(t->place), "call-%llu", (unsigned long long)++c->next_place);
                if (cgroup_run_child_create(c->run_cg, t->place, &enter, err) < 0) {
                        strv_clear(&ev), free(t);
                        return err_wrap(err, "start the tool: a place in the run's cgroup");
                }
                t->cg = c->run_cg;
        }
        int r = fork_tool(c, req, enter, ev.v, &t->pid, fds, err);
        strv_clear(&ev);
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
