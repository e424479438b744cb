/* monitor/serve.c — the monitor's channel loop (serve.h): one evloop with
 * the channel, each box's exit descriptor and the STOP grace timer. */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "chan/chan.h"
#include "common/exit.h"
#include "common/util.h"
#include "monitor/broker.h"
#include "monitor/commit.h"
#include "monitor/serve.h"
#include "runtime/evloop.h"
#include "sandbox/box.h"

#define GRACE_DEFAULT_MS 2000

struct srv;

struct mbox {
        struct mbox *next;
        struct srv *srv;
        uint64_t id;             /* the box's number on the channel */
        uint64_t req;            /* the SPAWN's request id (echoed) */
        void *handle;            /* the provider's */
        struct ev_io *exit_io;
        bool in_spawn;           /* inside boxes->spawn: freed by its caller */
        bool started, finishing, ended;
};

struct srv {
        const struct monitor_serve *m;
        struct evloop *loop;
        struct ev_timer *grace;
        struct monitor_commit commit;
        struct mbox *boxes;
        uint64_t next_box;       /* numbers given so far: 1..next_box-1 */
        uint64_t tree;           /* the run's first box: every later one joins its run tree */
        bool hello, done, quiet, stop_sent, reset_seen;
        enum { END_RESULT, END_BROKEN, END_GRACE } end;
        int code;
        char why[640];           /* END_BROKEN: what the broker did */
};

static void broken(struct srv *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void broken(struct srv *s, const char *fmt, ...)
{
        if (s->done && s->end != END_RESULT)
                return;
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(s->why, sizeof(s->why), fmt, ap);
        va_end(ap);
        s->end = END_BROKEN;
        s->done = s->quiet = true;
        s->code = EXIT_PROTOCOL;
}

static void send_msg(struct srv *s, union chan_msg *m, const int *fds, size_t nfds)
{
        if (s->quiet)
                return;
        struct err *e = NULL;
        if (chan_send(s->m->chan, m, fds, nfds, &e) < 0) {
                /* A broker that has gone may have sent RESULT before it
                 * went (a nested agent's box ended after it): the channel
                 * read says, RESULT or EOF.  Nothing more is sent. */
                if (e && e->errnum == EPIPE)
                        s->quiet = true;
                else if (!s->done)
                        broken(s, "stopped reading the channel (%s)", err_msg(e));
                err_free(e);
        }
}

static void box_unlink(struct srv *s, struct mbox *b)
{
        for (struct mbox **p = &s->boxes; *p; p = &(*p)->next)
                if (*p == b) {
                        *p = b->next;
                        break;
                }
        evloop_io_del(s->loop, b->exit_io);
        free(b);
}

/* ---- the box provider's events ---- */

static void ev_started(void *arg, const struct box_started *st)
{
        struct mbox *b = arg;
        struct srv *s = b->srv;
        b->started = true;
        int fds[2] = { st->frame_fd, st->stderr_fd };
        if (fds[1] < 0) {
                /* No stderr (a fake or in-process box): an empty pipe says so. */
                int p[2];
                if (pipe2(p, O_CLOEXEC) == 0) {
                        close(p[1]);
                        fds[1] = p[0];
                }
        }
        union chan_msg m;
        chan_init(&m, CHAN_SPAWNED, b->req);
        m.spawned.box = b->id;
        m.spawned.kind = CHAN_BOX_WORKER;
        snprintf(m.spawned.banner, sizeof(m.spawned.banner), "%s", st->banner ? st->banner : "");
        if (fds[1] >= 0)
                send_msg(s, &m, fds, 2);
        else
                broken(s, "could not be given the box's descriptors (%s)", strerror(errno));
        /* The broker has its copies now (the session owns them there). */
        close(st->frame_fd);
        if (fds[1] >= 0)
                close(fds[1]);
}

static void send_failed(struct srv *s, uint64_t req, int errnum, int code, const char *msg)
{
        union chan_msg m;
        chan_init(&m, CHAN_SPAWN_FAILED, req);
        m.spawn_failed.errnum = errnum > 0 ? errnum : 0;
        m.spawn_failed.code = code;
        snprintf(m.spawn_failed.message, sizeof(m.spawn_failed.message), "%s", msg);
        send_msg(s, &m, NULL, 0);
}

static void ev_failed(void *arg, const struct err *e, bool layer)
{
        struct mbox *b = arg;
        send_failed(b->srv, b->req, e ? e->errnum : 0, layer ? BOX_E_LAYER : err_code(e), err_msg(e));
        b->ended = true;
}

static uint32_t chan_reason(enum box_end_reason r)
{
        switch (r) {
        case BOX_DEADLINE: return CHAN_END_DEADLINE;
        case BOX_SECCOMP: return CHAN_END_SECCOMP;
        case BOX_OOM: return CHAN_END_OOM;
        case BOX_KILLED: return CHAN_END_KILLED;
        case BOX_EXITED:
        case BOX_PIDS: break;
        }
        return CHAN_END_EXITED;
}

static void ev_ended(void *arg, const struct box_ended *be)
{
        struct mbox *b = arg;
        struct srv *s = b->srv;
        union chan_msg m;
        chan_init(&m, CHAN_BOX_ENDED, 0);
        m.box_ended.box = b->id;
        m.box_ended.wait_status = be->wait_status;
        m.box_ended.reason = chan_reason(be->reason);
        /* The box's own counters say it ran out of memory even when it was
         * killed at the broker's request after its socket closed (the
         * one-process run reads oom_killed whatever the reason). */
        if (be->oom_killed && (m.box_ended.reason == CHAN_END_EXITED || m.box_ended.reason == CHAN_END_KILLED))
                m.box_ended.reason = CHAN_END_OOM;
        m.box_ended.seccomp_nr = be->reason == BOX_SECCOMP ? be->syscall_nr : -1;
        m.box_ended.pids_hit = be->pids_limit_hit || be->reason == BOX_PIDS;
        m.box_ended.cpu_ms = be->cpu_ms > 0 ? (uint64_t)(be->cpu_ms + 0.5) : 0;
        m.box_ended.peak_bytes = be->peak_bytes;
        m.box_ended.memory_limit = be->memory_limit;
        send_msg(s, &m, NULL, 0);
        b->ended = true;
        if (!b->in_spawn)
                box_unlink(s, b);
}

/* Kill (or only reap) a box that has started; its ended event follows. */
static void box_finish(struct srv *s, struct mbox *b, bool kill_first)
{
        if (!b->started || b->finishing || b->ended)
                return;
        b->finishing = true;
        s->m->boxes->finish(s->m->boxes->arg, b->handle, kill_first);
}

static void on_box_exit(struct evloop *loop, struct ev_io *io, int fd, uint32_t rev, void *arg)
{
        (void)fd, (void)rev;
        struct mbox *b = arg;
        evloop_io_del(loop, io);
        b->exit_io = NULL;
        box_finish(b->srv, b, false);
}

/* ---- the broker's requests ---- */

static void on_spawn(struct srv *s, const struct chan_spawn *sp, int blob_fd)
{
        struct chan_blob spec;
        struct err *e = NULL;
        size_t n = 1 + (size_t)sp->n_argv + sp->n_env + sp->n_binds;
        if (chan_blob_map(blob_fd, n, &spec, &e) < 0) {
                broken(s, "sent a SPAWN whose spec is malformed (%s)", err_msg(e));
                err_free(e);
                return;
        }
        int r = monitor_spawn_allowed(&s->commit, sp, &spec, &e);
        chan_blob_unmap(&spec);
        if (r < 0) {
                send_failed(s, sp->h.id, 0, CHAN_SPAWN_E_REFUSED, err_msg(e));
                err_free(e);
                return;
        }
        /* One run tree: while its first box runs, every other box names it
         * (its cgroup node goes below the first box's: the run's --memory
         * and --pids bound them together; they die with it); with none
         * running, a box names none and starts the tree. */
        struct mbox *tree = NULL;
        for (struct mbox *t = s->boxes; s->tree && t; t = t->next)
                if (t->id == s->tree && t->started && !t->finishing && !t->ended)
                        tree = t;
        if (sp->run_tree_id != (tree ? tree->id : 0)) {
                char why[160];
                snprintf(why, sizeof(why), "SPAWN in run tree %llu: %s %llu", (unsigned long long)sp->run_tree_id,
                         tree ? "the run's tree is box" : "no such box runs; expected",
                         (unsigned long long)(tree ? tree->id : 0));
                send_failed(s, sp->h.id, 0, CHAN_SPAWN_E_REFUSED, why);
                return;
        }
        if (sp->kind != CHAN_BOX_WORKER) {
                send_failed(s, sp->h.id, ENOSYS, CHAN_SPAWN_E_REFUSED,
                            "the monitor does not start tool or bundle boxes yet (issue 10 part 2)");
                return;
        }
        /* The monitor's posture: its own worker and the operator's sandbox
         * options (the provider's); of the broker's limits only a shorter
         * deadline, a shorter CPU budget and the JIT off are taken. */
        long d = s->m->deadline_ms;
        if (sp->deadline_ms > 0 && (d <= 0 || (long)sp->deadline_ms < d))
                d = (long)sp->deadline_ms;
        struct mbox *b = calloc(1, sizeof(*b));
        if (!b) {
                send_failed(s, sp->h.id, ENOMEM, BOX_E_SETUP, "start the worker: out of memory");
                return;
        }
        *b = (struct mbox){ .srv = s, .id = s->next_box++, .req = sp->h.id, .in_spawn = true };
        b->next = s->boxes;
        s->boxes = b;
        struct box_request req = {
                .kind = BOX_WORKER, .deadline_at = d > 0 ? mono_ms() + (double)d : 0,
                .no_jit = sp->jit == 0,
                .cpu_budget_ms = sp->cpu_budget_ms > (uint64_t)LONG_MAX ? 0 : (long)sp->cpu_budget_ms,
                .tree = tree ? tree->handle : NULL,
        };
        struct box_events ev = { .started = ev_started, .failed = ev_failed, .ended = ev_ended, .arg = b };
        const struct box_provider *p = s->m->boxes;
        if (p->spawn(p->arg, s->loop, &req, &ev, &b->handle, &e) < 0) {
                send_failed(s, sp->h.id, e ? e->errnum : 0, err_code(e), err_msg(e));
                err_free(e);
                b->ended = true;
        }
        b->in_spawn = false;
        if (!tree && b->started)
                s->tree = b->id;
        if (b->ended || !b->started) {
                box_unlink(s, b);
                return;
        }
        int xfd = s->m->exit_fd ? s->m->exit_fd(p->arg, b->handle) : -1;
        if (xfd >= 0 && evloop_io_add(s->loop, xfd, EPOLLIN, on_box_exit, b, &b->exit_io, &e) < 0) {
                broken(s, "could not be served: watch its box (%s)", err_msg(e));
                err_free(e);
        }
}

static void on_open(struct srv *s, const struct chan_open_agent_file *o)
{
        union chan_msg m;
        chan_init(&m, CHAN_OPENED, o->h.id);
        int fd = -1;
        struct err *e = NULL;
        if (s->m->agent_dirfd < 0)
                m.opened.errnum = EACCES;
        else if ((fd = monitor_open_agent_file(s->m->agent_dirfd, o->path, &e)) < 0)
                m.opened.errnum = e && e->errnum > 0 ? e->errnum : EINVAL;
        err_free(e);
        send_msg(s, &m, fd >= 0 ? &fd : NULL, fd >= 0 ? 1 : 0);
        if (fd >= 0)
                close(fd);
}

static void on_kill(struct srv *s, uint64_t id)
{
        for (struct mbox *b = s->boxes; b; b = b->next)
                if (b->id == id) {
                        box_finish(s, b, true);
                        return;
                }
        if (id == 0 || id >= s->next_box)
                broken(s, "asked to KILL box %llu, which it was never given", (unsigned long long)id);
        /* Else it has ended already: its BOX_ENDED is on the way. */
}

static void on_message(struct srv *s, const union chan_msg *m, const int *fds, size_t nfds)
{
        if (!s->hello && m->h.type != CHAN_HELLO) {
                broken(s, "sent %s before HELLO", chan_type_name(m->h.type));
                return;
        }
        if (s->quiet && m->h.type == CHAN_SPAWN) {
                /* It stopped reading (EPIPE): what it sent before it went
                 * (a KILL, its RESULT) is taken, but no box starts. */
                broken(s, "sent SPAWN after it stopped reading the channel");
                return;
        }
        struct err *e = NULL;
        switch (m->h.type) {
        case CHAN_HELLO: {
                if (s->hello) {
                        broken(s, "sent HELLO twice");
                        return;
                }
                s->hello = true;
                union chan_msg w;
                chan_init(&w, CHAN_WELCOME, m->h.id);
                w.welcome.version = CHAN_VERSION;
                w.welcome.flags = s->m->welcome_flags;
                send_msg(s, &w, NULL, 0);
                return;
        }
        case CHAN_COMMIT:
                if (monitor_commit_accept(&s->commit, &m->commit, fds[0], &e) < 0) {
                        broken(s, "sent a COMMIT that was refused (%s)", err_msg(e));
                        err_free(e);
                }
                return;
        case CHAN_SPAWN: on_spawn(s, &m->spawn, nfds ? fds[0] : -1); return;
        case CHAN_OPEN_AGENT_FILE: on_open(s, &m->open_agent_file); return;
        case CHAN_KILL: on_kill(s, m->kill.box); return;
        case CHAN_RESULT:
                s->code = m->result.exit_code;
                s->done = true;
                return;
        default: broken(s, "sent %s, which the monitor does not take", chan_type_name(m->h.type)); return;
        }
}

static void on_chan(struct evloop *loop, struct ev_io *io, int fd, uint32_t rev, void *arg)
{
        (void)loop, (void)io, (void)rev;
        struct srv *s = arg;
        if (s->done)
                return;
        union chan_msg m;
        int fds[CHAN_MAX_FDS];
        size_t nfds = 0;
        struct err *e = NULL;
        if (chan_recv(fd, CHAN_FROM_BROKER, &m, fds, &nfds, &e) < 0) {
                if (e && e->errnum == ECONNRESET && !s->reset_seen) {
                        /* The broker exited with our BOX_ENDED unread: the
                         * error comes first, what it sent (its RESULT) after. */
                        s->reset_seen = true;
                        s->quiet = true;
                        err_free(e);
                        return;
                }
                if (err_code(e) == CHAN_E_PROTO)
                        broken(s, "broke the protocol (%s)", err_msg(e));
                else if (err_code(e) == CHAN_E_CLOSED)
                        broken(s, "closed the channel without a result");
                else
                        broken(s, "could not be read (%s)", err_msg(e));
                err_free(e);
                return;
        }
        on_message(s, &m, fds, nfds);
        for (size_t i = 0; i < nfds; i++)
                close(fds[i]);
}

static void on_grace(struct evloop *loop, struct ev_timer *t, void *arg)
{
        (void)loop, (void)t;
        struct srv *s = arg;
        s->grace = NULL;
        int sig = s->m->stop ? (int)*s->m->stop : SIGTERM;
        s->end = END_GRACE;
        s->done = s->quiet = true;
        s->code = 128 + sig;
}

static void check_stop(struct srv *s)
{
        if (s->stop_sent || !s->m->stop || !*s->m->stop || s->done)
                return;
        s->stop_sent = true;
        union chan_msg m;
        chan_init(&m, CHAN_STOP, 0);
        m.stop.signal = (int32_t)*s->m->stop;
        send_msg(s, &m, NULL, 0);
        long g = s->m->grace_ms > 0 ? s->m->grace_ms : GRACE_DEFAULT_MS;
        struct err *e = NULL;
        if (evloop_timer_add(s->loop, mono_ms() + (double)g, on_grace, s, &s->grace, &e) < 0) {
                err_free(e);
                on_grace(s->loop, NULL, s);
        }
}

/* How the broker ended, for the message: "exited with status 3". */
static void describe_exit(const siginfo_t *si, char *buf, size_t n)
{
        if (si->si_code == CLD_EXITED)
                snprintf(buf, n, "exited with status %d", si->si_status);
        else
                snprintf(buf, n, "was killed by %s", strsignal(si->si_status));
}

/* Reap the broker: wait up to wait_ms for it to exit, then kill it.  Its
 * own end (before any kill) is described in `how` when asked. */
static void reap_broker(int pidfd, long wait_ms, char *how, size_t n)
{
        if (how && n)
                how[0] = '\0';
        if (pidfd < 0)
                return;
        struct pollfd p = { .fd = pidfd, .events = POLLIN };
        int r;
        while ((r = poll(&p, 1, (int)wait_ms)) < 0 && errno == EINTR)
                ;
        bool on_its_own = r == 1;
        if (!on_its_own)
                syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0);
        siginfo_t si;
        memset(&si, 0, sizeof(si));
        while (waitid(P_PIDFD, (id_t)pidfd, &si, WEXITED) < 0 && errno == EINTR)
                ;
        if (on_its_own && how && n)
                describe_exit(&si, how, n);
}

int monitor_serve(const struct monitor_serve *m, struct err **err)
{
        struct srv s = { .m = m, .next_box = 1 };
        struct ev_io *chan_io = NULL;
        if (evloop_new(&s.loop, err) < 0)
                return EXIT_PROTOCOL;
        if (evloop_io_add(s.loop, m->chan, EPOLLIN, on_chan, &s, &chan_io, err) < 0) {
                evloop_free(s.loop);
                return EXIT_PROTOCOL;
        }
        while (!s.done) {
                check_stop(&s);
                struct err *e = NULL;
                /* A stop signal interrupts the wait (EINTR); the bound covers
                 * one that came between the check and the wait. */
                if (evloop_run_once(s.loop, 200, &e) < 0) {
                        broken(&s, "could not be served (%s)", err_msg(e));
                        err_free(e);
                }
        }
        /* Nothing is read from the broker any more; every box still there
         * is killed and reaped (BOX_ENDED still goes to a broker that sent
         * RESULT: it may be listening, or not). */
        evloop_io_del(s.loop, chan_io);
        while (s.boxes) {
                struct mbox *b = s.boxes;
                if (b->started && !b->finishing && !b->ended) {
                        box_finish(&s, b, true);
                } else {
                        b->ended = true;
                        box_unlink(&s, b);
                }
        }
        evloop_timer_del(s.loop, s.grace);
        evloop_free(s.loop);
        monitor_commit_free(&s.commit);
        long g = m->grace_ms > 0 ? m->grace_ms : GRACE_DEFAULT_MS;
        char how[128];
        switch (s.end) {
        case END_RESULT: reap_broker(m->broker_pidfd, g, NULL, 0); break;
        case END_GRACE:
                reap_broker(m->broker_pidfd, 0, NULL, 0);
                err_set(err, 0, "the broker (chidori-broker) did not end the run within %ld ms of %s; killed it", g,
                        strsignal(s.code - 128));
                break;
        case END_BROKEN:
                /* How it ended, if it did on its own (a crash says more than EOF). */
                reap_broker(m->broker_pidfd, 300, how, sizeof(how));
                err_set(err, 0, "the broker (chidori-broker) %s%s%s%s; every box was killed", s.why,
                        how[0] ? " (it " : "", how, how[0] ? ")" : "");
                break;
        }
        return s.code;
}
