/* cli/inproc.c — the engine as a thread of this process (`chidori run
 * --no-isolate`, embedders): libchidori-engine.so opened on first use, the
 * thread started and stopped.  Reached through spawn_opts.in_process, so
 * the monitor, which never asks for it, does not link it. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "common/dlib.h"

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

static int inproc_start(struct worker *w, struct err **err)
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

static void inproc_finish(struct worker *w, bool kill_first)
{
        /* Closing our end makes the engine's next read fail, so a thread
         * still waiting for a frame returns; the stop flag ends JS that is
         * running (within a watchdog slice). */
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
}

const struct worker_inproc worker_inproc = { .start = inproc_start, .finish = inproc_finish };
