/* cli/spawn.c — start the engine worker: a child process (isolated
 * mode) or a thread of this process (in-process mode, for embedders:
 * cli/inproc.c, linked only where --no-isolate exists), both talking frames
 * over one end of a socketpair.
 *
 * The OS confinement layers (namespaces, rootfs, Landlock, seccomp) plug in
 * between fork and exec here; see docs/sandbox.md.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/dlib.h"
#include <dlfcn.h>
#include "cli/cli.h"
#include "privhelper/proto.h"
#include "sandbox/box.h"
#include "sandbox/sandbox.h"
#include "sandbox/tz.h"

int find_worker(char **ret_path, struct err **err)
{
        const char *env = getenv("CHIDORI_WORKER");
        if (env && *env) {
                if (access(env, X_OK) < 0)
                        return err_set(err, errno, "CHIDORI_WORKER='%s' is not an executable file", env);
                *ret_path = strdup(env);
                return *ret_path ? 0 : err_set(err, ENOMEM, "find worker");
        }
        char *p = dlib_find("chidori-worker", X_OK);
        if (p) {
                *ret_path = p;
                return 0;
        }
        return err_set(err, 0, "cannot find chidori-worker in %s; reinstall chidori or set "
                               "CHIDORI_WORKER=/path/to/chidori-worker",
                       dlib_dirs_text());
}

int spawn_exit_code(const struct err *e)
{
        return err_code(e) == BOX_E_LAYER || strstr(err_msg(e), "sandbox layer unavailable") ? EXIT_LAYER_UNAVAILABLE
                                                                                           : EXIT_PROTOCOL;
}

int spawn_worker(struct spawn_opts *o, struct worker *w, struct err **err)
{
        memset(w, 0, sizeof(*w));
        w->pidfd = -1;
        w->stderr_fd = -1;
        w->frame_fd = -1;
        w->notify_fd = -1;
        w->loaded_fd = -1;
        if (o->in_process) {
                snprintf(o->banner, sizeof(o->banner), "off (in-process engine: --no-isolate / CHIDORI_ISOLATE=off)");
                /* The engine reads TZ from this process: the same zone as a
                 * worker's, set before its thread (or ICU) starts. */
                const char *tz = o->sandbox && o->sandbox->tz ? o->sandbox->tz : TZ_DEFAULT;
                if (setenv("TZ", tz, 1) < 0)
                        return err_set(err, errno, "set TZ=%s for the in-process engine", tz);
                tzset();
                w->inproc = o->in_process;
                return o->in_process->start(w, err);
        }
        int sv[2], ep[2];
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
                return err_set(err, errno, "socketpair");
        if (pipe2(ep, O_CLOEXEC) < 0) {
                int e = errno;
                close(sv[0]), close(sv[1]);
                return err_set(err, e, "pipe");
        }
        int lp[2] = { -1, -1 };
        if (o->loaded_cue && pipe2(lp, O_CLOEXEC) < 0) {
                int e = errno;
                close(sv[0]), close(sv[1]), close(ep[0]), close(ep[1]);
                return err_set(err, e, "pipe");
        }
        int null = open("/dev/null", O_RDWR | O_CLOEXEC);
        /* argv[0] is the path as found: a test worker reads its mode from it. */
        char *argv[] = { (char *)o->worker_path, NULL };
        /* Bind and exec the real file; argv[0] keeps the name as given. */
        char *real = realpath(o->worker_path, NULL);
        /* Under the privileged helper this uid may not see the path (a 0700
         * /root): chidori resolved it, the helper binds it (privhelper/). */
        if (!real && errno == EACCES && priv_helper_fd >= 0 && o->worker_path[0] == '/')
                real = strdup(o->worker_path);
        if (!real) {
                int e = errno;
                close(sv[0]), close(sv[1]), close(ep[0]), close(ep[1]);
                if (lp[0] >= 0)
                        close(lp[0]), close(lp[1]);
                if (null >= 0)
                        close(null);
                return err_set(err, e, "resolve the worker path '%s'", o->worker_path);
        }
        struct box_opts bo = {
                .worker = true,
                .program = real,
                .argv = argv,
                .envp = NULL, /* sandbox_start sets it (it depends on the JIT posture) */
                .fd0 = null,
                .fd1 = null,
                .fd2 = ep[1],
                .frame_fd = sv[1],
                .loaded_fd = lp[1],
        };
        struct sandbox_run *sr = &w->sr;
        int code = sandbox_start(o->sandbox, &bo, o->run_id, sr, err);
        free(real);
        close(sv[1]), close(ep[1]);
        if (lp[1] >= 0)
                close(lp[1]);
        if (null >= 0)
                close(null);
        if (code != 0) {
                close(sv[0]), close(ep[0]);
                if (lp[0] >= 0)
                        close(lp[0]);
                return -1;
        }
        snprintf(o->banner, sizeof(o->banner), "%s", sr->banner);
        w->have_sr = true;
        w->pid = sr->box.pid;
        w->pidfd = sr->box.pidfd;
        w->notify_fd = sr->box.notify_fd;
        w->frame_fd = sv[0];
        w->stderr_fd = ep[0];
        w->loaded_fd = lp[0];
        return 0;
}

int worker_finish(struct worker *w, bool kill_first, int *ret_status, struct sandbox_usage *ret_usage,
                  double *ret_cpu_ms, struct cgroup_run **ret_cg, struct err **err)
{
        int status = 0;
        *ret_cg = NULL;
        if (ret_usage)
                memset(ret_usage, 0, sizeof(*ret_usage));
        if (ret_cpu_ms)
                *ret_cpu_ms = 0;
        if (w->in_process) {
                w->inproc->finish(w, kill_first);
        } else {
                if (kill_first && w->have_sr)
                        sandbox_kill(&w->sr);
                struct rusage ru;
                while (wait4(w->pid, &status, 0, &ru) < 0) {
                        if (errno != EINTR) {
                                int e = errno;
                                return err_set(err, e, "wait for the worker (pid %d)", (int)w->pid);
                        }
                }
                if (ret_cpu_ms)
                        *ret_cpu_ms = (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 +
                                      (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3;
                if (w->have_sr)
                        sandbox_finish_keep_cgroup(&w->sr, ret_usage, ret_cg); /* closes pidfd and notify fd */
                w->have_sr = false;
                if (w->stderr_fd >= 0)
                        close(w->stderr_fd);
        }
        if (w->frame_fd >= 0)
                close(w->frame_fd);
        if (w->loaded_fd >= 0)
                close(w->loaded_fd);
        w->frame_fd = w->stderr_fd = w->pidfd = w->notify_fd = w->loaded_fd = -1;
        *ret_status = status;
        return 0;
}
