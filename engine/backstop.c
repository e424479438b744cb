/* engine/backstop.c — the CPU budget when JSC's watchdog cannot act.
 *
 * JSC's execution time limit counts CPU time per VM entry.  Two things
 * escape it: JS that runs as a chain of short microtasks (each one is an
 * entry of its own, so `for (;;) await null` never reaches a slice), and a
 * long builtin that never checks for traps.  The backstop is a thread that
 * looks at the engine thread's CPU clock every BACKSTOP_PERIOD_MS; once the
 * run's budget is spent by BACKSTOP_GRACE_NS more and the run is still
 * going, it writes the same cpu_limit done frame the engine would have
 * written, under the output lock, and ends the worker process (_exit) — in
 * process it leaves the engine thread to its host (docs/decisions.md, "The
 * CPU budget has a backstop").  It runs only when a budget is set. */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/uio.h>
#include <unistd.h>

#include "engine/engine.h"
#include "engine/engine-internal.h"

#define BACKSTOP_PERIOD_MS 50
#define BACKSTOP_GRACE_NS (100u * 1000000u)

static uint64_t clock_ns(clockid_t c)
{
        struct timespec ts;
        if (clock_gettime(c, &ts) < 0)
                return 0;
        return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Write one whole frame on the (non-blocking) socket from this thread,
 * waiting up to a second at a time for room; nothing is read here (the
 * engine thread owns reading). */
static int write_frame_waiting(int fd, const char *body, size_t len, struct err **err)
{
        uint8_t hdr[FRAME_HEADER_BYTES] = { (uint8_t)(len >> 24), (uint8_t)(len >> 16), (uint8_t)(len >> 8),
                                            (uint8_t)len };
        struct iovec iov[2] = { { .iov_base = hdr, .iov_len = sizeof(hdr) },
                                { .iov_base = (void *)body, .iov_len = len } };
        struct iovec *v = iov;
        int cnt = 2;
        while (cnt > 0) {
                ssize_t n = writev(fd, v, cnt);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0 && errno != EAGAIN)
                        return err_setc(err, PROTO_E_IO, errno, "write frame");
                if (n < 0) {
                        struct pollfd p = { .fd = fd, .events = POLLOUT };
                        if (poll(&p, 1, 1000) == 0)
                                return err_setc(err, PROTO_E_IO, EAGAIN, "the parent reads no more");
                        continue;
                }
                size_t left = (size_t)n;
                while (cnt > 0 && left >= v->iov_len) {
                        left -= v->iov_len;
                        v++;
                        cnt--;
                }
                if (cnt > 0) {
                        v->iov_base = (char *)v->iov_base + left;
                        v->iov_len -= left;
                }
        }
        return 0;
}

static void *backstop_main(void *arg)
{
        struct engine *e = arg;
        pthread_mutex_lock(&e->out_lock);
        while (!e->backstop_quit && !e->done_sent) {
                struct timespec until;
                clock_gettime(CLOCK_MONOTONIC, &until);
                until.tv_nsec += BACKSTOP_PERIOD_MS * 1000000L;
                if (until.tv_nsec >= 1000000000L) {
                        until.tv_sec++;
                        until.tv_nsec -= 1000000000L;
                }
                pthread_cond_timedwait(&e->backstop_wake, &e->out_lock, &until);
                if (e->backstop_quit || e->done_sent)
                        break;
                if (clock_ns(e->engine_clock) - e->cpu_start_ns < e->cpu_budget_ns + BACKSTOP_GRACE_NS)
                        continue;
                /* The engine thread is past its budget and still running. */
                const char *text = e->backstop_done;
                struct err *err = NULL;
                e->done_sent = true;
                if (write_frame_waiting(e->out_fd, text, strlen(text), &err) < 0)
                        err_free(err);
                if (engine_exit_after_done)
                        engine_exit_done(e->in_fd, e->out_fd);
                break;
        }
        pthread_mutex_unlock(&e->out_lock);
        return NULL;
}

int engine_backstop_start(struct engine *e)
{
        if (e->cpu_budget_ns == 0 || e->backstop_running)
                return 0;
        char msg[128];
        snprintf(msg, sizeof(msg), "CPU time limit exceeded (%" PRIu64 " ms)", e->deadline_ms);
        e->backstop_done = engine_failure_done("cpu_limit", "Error", msg);
        if (!e->backstop_done || pthread_getcpuclockid(pthread_self(), &e->engine_clock) != 0)
                return -1;
        pthread_condattr_t ca;
        pthread_condattr_init(&ca);
        pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
        pthread_cond_init(&e->backstop_wake, &ca);
        pthread_condattr_destroy(&ca);
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setstacksize(&attr, 64u << 10);
        int r = pthread_create(&e->backstop, &attr, backstop_main, e);
        pthread_attr_destroy(&attr);
        if (r != 0) {
                pthread_cond_destroy(&e->backstop_wake);
                return -1;
        }
        e->backstop_running = true;
        return 0;
}

void engine_backstop_stop(struct engine *e)
{
        if (!e->backstop_running)
                return;
        pthread_mutex_lock(&e->out_lock);
        e->backstop_quit = true;
        pthread_cond_signal(&e->backstop_wake);
        pthread_mutex_unlock(&e->out_lock);
        pthread_join(e->backstop, NULL);
        pthread_cond_destroy(&e->backstop_wake);
        e->backstop_running = false;
}

int engine_frame_out(struct engine *e, const char *body, size_t len, bool is_done, struct err **err)
{
        pthread_mutex_lock(&e->out_lock);
        int r;
        if (e->done_sent) {
                /* The backstop ended the run: nothing more goes out. */
                r = err_set(err, EPIPE, "the run has ended (CPU limit)");
        } else {
                /* The socket is non-blocking: a write that would block reads
                 * the parent's answers meanwhile (engine_write_frame_draining). */
                r = engine_write_frame_draining(e, body, len, err);
                if (is_done)
                        e->done_sent = true;
        }
        pthread_mutex_unlock(&e->out_lock);
        return r;
}
