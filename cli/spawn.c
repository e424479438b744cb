/* cli/spawn.c — start the engine worker: a child process (isolated
 * mode) or a thread of this process (in-process mode, for embedders), both
 * talking frames over one end of a socketpair.
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

typedef int (*engine_serve_fn)(int in_fd, int out_fd, const _Atomic int *stop, struct err **err);
static engine_serve_fn engine_serve_ptr;

/* --no-isolate: the engine library, opened on first use (the launcher itself
 * does not link JavaScriptCore). */
static int load_engine(struct err **err)
{
        if (engine_serve_ptr)
                return 0;
        void *sym = dlib_symbol("libchidori-engine.so", "CHIDORI_ENGINE_LIB", "engine_serve_until", err);
        if (!sym)
                return err_wrap(err, "in-process mode needs the engine library");
        engine_serve_ptr = (engine_serve_fn)sym;
        return 0;
}

/* Shared by the launcher and the in-process engine thread. */
struct engine_thread {
        int fd;           /* the engine's end of the socketpair */
        _Atomic int stop; /* non-zero: the broker ended the run (deadline, signal): stop JS */
};

static void *engine_thread(void *arg)
{
        struct engine_thread *t = arg;
        struct err *e = NULL;
        engine_serve_ptr(t->fd, t->fd, &t->stop, &e);
        err_free(e);  /* the broker reports the run; a broken transport is its to see */
        return NULL;
}

_Atomic int *worker_stop_flag(struct worker *w)
{
        return w->et ? &w->et->stop : NULL;
}

static int spawn_in_process(struct worker *w, struct err **err)
{
        /* Before JSC initialises in this process: the watchdog's slices
         * are cheap with polling traps (engine/engine.h). */
        setenv("JSC_usePollingTraps", "true", 0);
        if (load_engine(err) < 0)
                return -1;
        struct engine_thread *t = calloc(1, sizeof(*t));
        if (!t)
                return err_set(err, ENOMEM, "start the in-process engine");
        int sv[2];
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) {
                free(t);
                return err_set(err, errno, "socketpair");
        }
        w->frame_fd = sv[0];
        t->fd = sv[1];
        w->et = t;
        w->in_process = true;
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setstacksize(&attr, 16u << 20); /* JSC sizes its recursion limit from this */
        /* The engine thread and the threads JSC starts from it inherit a
         * mask without SIGINT/SIGTERM/SIGHUP, so a stop signal interrupts
         * this thread's wait (the broker's poll), not JS. */
        sigset_t stops, old;
        sigemptyset(&stops);
        sigaddset(&stops, SIGINT);
        sigaddset(&stops, SIGTERM);
        sigaddset(&stops, SIGHUP);
        pthread_sigmask(SIG_BLOCK, &stops, &old);
        int r = pthread_create(&w->thread, &attr, engine_thread, t);
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        pthread_attr_destroy(&attr);
        if (r != 0) {
                close(sv[0]);
                close(sv[1]);
                free(t);
                w->et = NULL;
                w->frame_fd = -1;
                return err_set(err, r, "start the in-process engine thread");
        }
        return 0;
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
        if (o->in_process) {
                snprintf(o->banner, sizeof(o->banner), "off (in-process engine: --no-isolate / CHIDORI_ISOLATE=off)");
                /* The engine reads TZ from this process: the same zone as a
                 * worker's, set before its thread (or ICU) starts. */
                const char *tz = o->sandbox && o->sandbox->tz ? o->sandbox->tz : TZ_DEFAULT;
                if (setenv("TZ", tz, 1) < 0)
                        return err_set(err, errno, "set TZ=%s for the in-process engine", tz);
                tzset();
                return spawn_in_process(w, err);
        }
        int sv[2], ep[2];
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
                return err_set(err, errno, "socketpair");
        if (pipe2(ep, O_CLOEXEC) < 0) {
                int e = errno;
                close(sv[0]), close(sv[1]);
                return err_set(err, e, "pipe");
        }
        int null = open("/dev/null", O_RDWR | O_CLOEXEC);
        /* argv[0] is the path as found: a test worker reads its mode from it. */
        char *argv[] = { (char *)o->worker_path, NULL };
        /* Bind and exec the real file; argv[0] keeps the name as given. */
        char *real = realpath(o->worker_path, NULL);
        if (!real) {
                int e = errno;
                close(sv[0]), close(sv[1]), close(ep[0]), close(ep[1]);
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
        };
        struct sandbox_run *sr = &w->sr;
        int code = sandbox_start(o->sandbox, &bo, o->run_id, sr, err);
        free(real);
        close(sv[1]), close(ep[1]);
        if (null >= 0)
                close(null);
        if (code != 0) {
                close(sv[0]), close(ep[0]);
                return -1;
        }
        snprintf(o->banner, sizeof(o->banner), "%s", sr->banner);
        w->have_sr = true;
        w->pid = sr->box.pid;
        w->pidfd = sr->box.pidfd;
        w->notify_fd = sr->box.notify_fd;
        w->frame_fd = sv[0];
        w->stderr_fd = ep[0];
        return 0;
}

/* Join the engine thread; false if it is still running after a second
 * (it is then detached and its state leaked: it may still read it). */
static bool join_engine(struct worker *w)
{
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += 1;
        int r;
        while ((r = pthread_timedjoin_np(w->thread, NULL, &until)) == EINTR)
                ;
        if (r == 0)
                return true;
        pthread_detach(w->thread);
        return false;
}

int worker_finish(struct worker *w, bool kill_first, int *ret_status, struct sandbox_usage *ret_usage,
                  double *ret_cpu_ms, struct err **err)
{
        int status = 0;
        if (ret_usage)
                memset(ret_usage, 0, sizeof(*ret_usage));
        if (ret_cpu_ms)
                *ret_cpu_ms = 0;
        if (w->in_process) {
                /* Closing our end makes the engine's next read fail, so a
                 * thread still waiting for a frame returns; the stop flag
                 * ends JS that is running (within a watchdog slice). */
                if (kill_first)
                        atomic_store(&w->et->stop, 1);
                if (w->frame_fd >= 0)
                        shutdown(w->frame_fd, SHUT_RDWR);
                if (join_engine(w)) {
                        close(w->et->fd);
                        free(w->et);
                } else {
                        fprintf(stderr, "chidori: the in-process engine did not stop (JS the watchdog cannot "
                                        "interrupt); leaving it to the exit of this process\n");
                }
                w->et = NULL;
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
                        sandbox_finish(&w->sr, ret_usage); /* closes pidfd and notify fd */
                w->have_sr = false;
                if (w->stderr_fd >= 0)
                        close(w->stderr_fd);
        }
        if (w->frame_fd >= 0)
                close(w->frame_fd);
        w->frame_fd = w->stderr_fd = w->pidfd = w->notify_fd = -1;
        *ret_status = status;
        return 0;
}
