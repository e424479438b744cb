/* runtime/session.c — a session: one conversation with one worker, driven
 * by an event loop (runtime/evloop.h) that other sessions may share.
 *
 * Its life: NEW -> STARTING (the box is asked of the provider) -> RUNNING
 * (watchers on the worker's frame socket and stderr pipe; frames in
 * runtime/frames.c, answers in answer.c, replay in replay.c, parked calls
 * and input in pending.c, the effect families' fds in families.c) <->
 * AWAITING (an approval or an input is asked) -> FINISHING (the outcome is
 * known: the frame socket is dropped, the worker's last stderr lines are
 * read for up to 250 ms, the provider ends the box) -> ENDED (the box's end
 * report is in: sink->ended).  The supervisor (deadline, seccomp
 * notification, memory, kill) is the provider's; the session learns what it
 * did from the box's end report.
 */
#define _GNU_SOURCE
#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/util.h"
#include "runtime/evloop.h"
#include "runtime/session-internal.h"

/* How long the worker's last stderr lines are waited for once the outcome
 * is known (it exits right after its last frame). */
#define DRAIN_MS 250

static void begin_finish(struct evloop *loop, void *arg);

static void set_nonblock(int fd)
{
        int fl = fcntl(fd, F_GETFL);
        if (fl >= 0)
                fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

void session_set_state(struct session *s, enum session_state st)
{
        if (s->state == st)
                return;
        s->state = st;
        if (s->sink->status)
                s->sink->status(s->sink->arg, s, st);
}

int broker_end_with(struct broker *b, enum session_end end, const char *fmt, ...)
{
        if (b->finished)
                return 0;
        b->finished = true;
        b->out->end = end;
        session_journal_unanswered(b->s);
        va_list ap;
        va_start(ap, fmt);
        if (vasprintf(&b->out->message, fmt, ap) < 0)
                b->out->message = NULL;
        va_end(ap);
        struct err *e = NULL;
        if (evloop_defer(b->s->loop, begin_finish, b->s, &e) < 0)
                err_free(e); /* the check hook starts it too */
        return 0;
}

void session_fail(struct session *s, struct err *e)
{
        broker_end_with(&s->b, SESSION_END_PARENT, "%s", err_msg(e));
        err_free(e);
}

void broker_sink_log(struct broker *b, const char *tag, const char *msg, size_t len)
{
        if (b->s->sink->log)
                b->s->sink->log(b->s->sink->arg, b->s, tag, msg, len);
}

void broker_sink_note(struct broker *b, const char *tag, const char *msg)
{
        if (b->s->sink->note)
                b->s->sink->note(b->s->sink->arg, b->s, tag, msg, strlen(msg));
}

/* ---- the worker's fds ---- */

static void on_frame_fd(struct evloop *loop, struct ev_io *io, int fd, uint32_t rev, void *arg)
{
        (void)loop, (void)io, (void)fd;
        struct session *s = arg;
        struct err *e = NULL;
        if (s->b.finished)
                return;
        if (rev & (EPOLLHUP | EPOLLERR)) {
                /* Hung up: what is queued can never be delivered; what it
                 * wrote before is still read, below. */
                s->peer_gone = true;
                session_outq_clear(&s->q);
        }
        if (!s->peer_gone && (rev & EPOLLOUT) && session_outq_flush(s, &e) < 0) {
                session_fail(s, e);
                return;
        }
        if ((rev & (EPOLLIN | EPOLLHUP | EPOLLERR)) && session_read_frames(s, &e) < 0)
                session_fail(s, e);
}

static void on_stderr_fd(struct evloop *loop, struct ev_io *io, int fd, uint32_t rev, void *arg)
{
        (void)loop, (void)io, (void)rev;
        struct session *s = arg;
        session_read_stderr(s, fd);
        if (s->ef.eof) {
                evloop_io_del(s->loop, s->err_io);
                s->err_io = NULL;
                if (s->drain_timer) /* draining: that was the last of it */
                        begin_finish(s->loop, s);
        }
}

/* Frames already in our buffer are read as soon as flow control allows:
 * epoll would not report them again. */
static void read_buffered(struct evloop *loop, void *arg)
{
        (void)loop;
        struct session *s = arg;
        struct err *e = NULL;
        if (!s->b.finished && session_read_frames(s, &e) < 0)
                session_fail(s, e);
}

/* Before every wait: the events the frame socket is watched for and the
 * families' fds.  No spin after an answer (decision 17 had one): the wait
 * sleeps, docs/decisions.md "The broker sleeps between calls". */
static void prepare(struct evloop *loop, void *arg)
{
        struct session *s = arg;
        if (!s->frame_io || s->b.finished)
                return;
        bool rd = session_reading(s);
        uint32_t ev = (rd ? EPOLLIN : 0) | (session_outq_pending(&s->q) ? EPOLLOUT : 0);
        struct err *e = NULL;
        if (evloop_io_set(loop, s->frame_io, ev, &e) < 0) {
                session_fail(s, e);
                return;
        }
        if (rd && session_reader_has_bytes(&s->b.reader) && evloop_defer(loop, read_buffered, s, &e) < 0) {
                session_fail(s, e);
                return;
        }
        session_families_prepare(s);
}

/* Pausing: the effects in flight (not the parked calls, not the input
 * waits and the timers, which are b->pend entries too) have all been
 * answered.  A pending timer does not hold a pause up: the resumed run
 * waits for it again, whole (it is journaled as unanswered). */
static void check_pause(struct session *s)
{
        if (!s->pausing || s->b.finished || s->b.npend > s->ninputs + s->b.ntimers)
                return;
        broker_end_with(&s->b, SESSION_END_PAUSED, "paused: %s",
                        s->asking ? "an approval is waiting" : s->ninputs ? "an input is waiting" : "by request");
}

static void check(struct evloop *loop, void *arg)
{
        (void)loop;
        struct session *s = arg;
        if (s->frame_io && !s->b.finished)
                session_families_check(s);
        check_pause(s);
}

/* ---- the box ---- */

static void box_started(void *arg, const struct box_started *bs)
{
        struct session *s = arg;
        struct err *e = NULL;
        s->box_started = true;
        s->frame_fd = bs->frame_fd;
        s->stderr_fd = bs->stderr_fd;
        set_nonblock(s->frame_fd);
        if (evloop_io_add(s->loop, s->frame_fd, EPOLLIN, on_frame_fd, s, &s->frame_io, &e) < 0) {
                session_fail(s, e);
                return;
        }
        if (s->stderr_fd >= 0) {
                set_nonblock(s->stderr_fd);
                if (evloop_io_add(s->loop, s->stderr_fd, EPOLLIN, on_stderr_fd, s, &s->err_io, &e) < 0) {
                        session_fail(s, e);
                        return;
                }
        }
        /* init now, not after the worker's ready: it waits in the socket
         * while the worker starts its engine, one round trip less per run.
         * A worker gone before reading it is EPIPE here (peer_gone), and
         * its ending is told as before ("exited before ready"). */
        if (!s->b.finished && session_send_init(s, &e) < 0) {
                session_fail(s, e);
                return;
        }
        session_set_state(s, SESSION_RUNNING);
}

static void report_ended(struct session *s)
{
        if (s->ended_reported || !s->b.finished || s->box || s->drain_timer || !s->finish_asked)
                return;
        s->ended_reported = true;
        session_set_state(s, SESSION_ENDED);
        if (s->sink->ended)
                s->sink->ended(s->sink->arg, s);
}

static void box_failed(void *arg, const struct err *e, bool layer)
{
        struct session *s = arg;
        s->box = NULL;
        s->spawn_failed = true;
        s->out.spawn_layer = layer;
        broker_end_with(&s->b, SESSION_END_SPAWN, "%s", err_msg(e));
}

static void box_ended(void *arg, const struct box_ended *be)
{
        struct session *s = arg;
        struct session_outcome *o = &s->out;
        s->box = NULL;
        s->box_ended = true;
        o->wait_status = be->wait_status;
        o->cpu_ms = be->cpu_ms;
        o->oom_killed = be->oom_killed;
        o->pids_limit_hit = be->pids_limit_hit;
        o->peak_bytes = be->peak_bytes;
        o->memory_limit = be->memory_limit;
        /* A provider across a channel (broker/provider.c) reports the box's
         * end after its frame socket has closed: an EOF read first is the
         * kill's effect, and the report says why. */
        if (s->b.finished && o->end == SESSION_END_EOF &&
            (be->reason == BOX_DEADLINE || be->reason == BOX_SECCOMP)) {
                s->b.finished = false;
                free(o->message);
                o->message = NULL;
        }
        if (be->reason == BOX_DEADLINE) {
                broker_end_with(&s->b, SESSION_END_DEADLINE, "deadline exceeded (%ld ms)", s->cfg->deadline_ms);
        } else if (be->reason == BOX_SECCOMP) {
                if (!s->b.finished)
                        o->blocked_syscall = be->syscall_nr;
                broker_end_with(&s->b, SESSION_END_SECCOMP, "blocked syscall %d", be->syscall_nr);
        }
        /* Otherwise the frame socket's end says the rest (EOF, or a done
         * frame still buffered). */
        report_ended(s);
}

/* The worker's fds are the session's: closed once it is done with them
 * (an in-process engine reading its end sees EOF). */
static void close_fds(struct session *s)
{
        if (s->frame_fd >= 0)
                close(s->frame_fd);
        if (s->stderr_fd >= 0)
                close(s->stderr_fd);
        s->frame_fd = s->stderr_fd = -1;
}

/* Ask the provider, once, to end the box (its `ended` report follows). */
static void finish_box(struct session *s, bool kill_first)
{
        if (!s->box || s->box_finish_called)
                return;
        s->box_finish_called = true;
        s->boxes->finish(s->boxes->arg, s->box, kill_first);
}

static void drain_over(struct evloop *loop, struct ev_timer *t, void *arg)
{
        (void)t;
        struct session *s = arg;
        s->drain_timer = NULL;
        begin_finish(loop, s);
}

/* The outcome is known.  First call: drop the frame socket and the
 * families, wait for the worker's last stderr lines (DRAIN_MS); then (on
 * EOF or time) tell the sink and ask the provider to end the box. */
static void begin_finish(struct evloop *loop, void *arg)
{
        struct session *s = arg;
        if (s->finish_asked || !s->b.finished)
                return;
        if (s->frame_io) {
                evloop_io_del(loop, s->frame_io);
                s->frame_io = NULL;
                session_families_free(s);
                /* Stopped from outside: the box goes now, not after the drain. */
                if (s->b.out->end == SESSION_END_INTERRUPTED)
                        finish_box(s, true);
                if (s->err_io && !s->ef.eof) {
                        struct err *e = NULL;
                        if (evloop_timer_add(loop, mono_ms() + DRAIN_MS, drain_over, s, &s->drain_timer, &e) == 0)
                                return;
                        err_free(e);
                }
        }
        if (s->drain_timer) {
                evloop_timer_del(loop, s->drain_timer);
                s->drain_timer = NULL;
        }
        evloop_io_del(loop, s->err_io);
        s->err_io = NULL;
        session_errfwd_flush(s);
        close_fds(s);
        s->out.wall_ms = mono_ms() - s->start;
        s->out.quota = s->cfg->quota;
        s->finish_asked = true;
        session_set_state(s, SESSION_FINISHING);
        finish_box(s, s->out.end != SESSION_END_DONE_OK);
        report_ended(s);
}

/* ---- the API ---- */

int session_new(struct evloop *loop, const struct session_config *cfg, const struct session_sink *sink,
                const struct box_provider *boxes, struct session **ret, struct err **err)
{
        struct session *s = calloc(1, sizeof(*s));
        if (!s)
                return err_set(err, ENOMEM, "new session");
        s->loop = loop;
        s->cfg = cfg;
        s->sink = sink;
        s->boxes = boxes;
        s->frame_fd = s->stderr_fd = -1;
        s->out.blocked_syscall = -1;
        s->b.s = s;
        s->b.cfg = cfg;
        s->b.out = &s->out;
        frame_reader_init(&s->b.reader);
        broker_limits_init(&s->b);
        if (evloop_hook_add(loop, false, prepare, s, err) < 0 || evloop_hook_add(loop, true, check, s, err) < 0) {
                evloop_hook_remove(loop, false, prepare, s);
                free(s);
                return -1;
        }
        *ret = s;
        return 0;
}

int session_start(struct session *s, struct err **err)
{
        const struct session_config *cfg = s->cfg;
        if (s->state != SESSION_NEW)
                return err_set(err, 0, "session already started");
        s->start = mono_ms();
        s->b.mono_origin = s->start;
        if (cfg->deadline_ms > 0)
                s->deadline_at = (cfg->deadline_from > 0 ? cfg->deadline_from : s->start) + (double)cfg->deadline_ms;
        s->b.deadline_at = s->deadline_at;
        if (cfg->journal.ops && cfg->journal.ops->set_limit)
                cfg->journal.ops->set_limit(cfg->journal.j, s->b.lim.max_journal);
        const struct effect_table *fx = cfg->effects;
        for (size_t k = 0; k < fx->nfamilies; k++)
                if (fx->families[k].attach)
                        fx->families[k].attach(&s->b);
        s->b.budget = (struct budget){ .deadline_at = s->deadline_at, .stop = cfg->stop ? cfg->stop : &s->cancelled };
        session_set_state(s, SESSION_STARTING);
        struct box_request req = { .kind = BOX_WORKER, .run_id = cfg->run_id, .deadline_at = s->deadline_at };
        struct box_events ev = { .started = box_started, .failed = box_failed, .ended = box_ended, .arg = s };
        void *h = NULL;
        if (s->boxes->spawn(s->boxes->arg, s->loop, &req, &ev, &h, err) < 0)
                return -1;
        if (!s->spawn_failed && !s->box_ended)
                s->box = h;
        return 0;
}

void session_cancel(struct session *s, const char *reason)
{
        s->cancelled = 1;
        broker_end_with(&s->b, SESSION_END_INTERRUPTED, "%s", reason);
}

int session_pause(struct session *s, struct err **err)
{
        if (s->b.finished)
                return err_set(err, 0, "the session has already ended");
        s->pausing = true;
        check_pause(s);
        return 0;
}

enum session_state session_state(const struct session *s)
{
        return s->state;
}

struct session_outcome *session_outcome(struct session *s)
{
        return &s->out;
}

void session_free(struct session *s)
{
        if (!s)
                return;
        finish_box(s, true); /* still running: end it without waiting to hear from it */
        evloop_hook_remove(s->loop, false, prepare, s);
        evloop_hook_remove(s->loop, true, check, s);
        evloop_defer_cancel(s->loop, begin_finish, s);
        evloop_defer_cancel(s->loop, read_buffered, s);
        evloop_io_del(s->loop, s->frame_io);
        evloop_io_del(s->loop, s->err_io);
        evloop_timer_del(s->loop, s->drain_timer);
        close_fds(s);
        session_families_free(s);
        session_free_async(&s->b);
        session_pending_free(s);
        frame_reader_reset(&s->b.reader);
        session_outq_clear(&s->q);
        session_outcome_clear(&s->out);
        free(s);
}

void session_outcome_clear(struct session_outcome *o)
{
        cJSON_Delete(o->value);
        cJSON_Delete(o->error);
        free(o->message);
        memset(o, 0, sizeof(*o));
}
