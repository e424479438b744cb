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
#include "privhelper/proto.h"
#include "runtime/evloop.h"
#include "sandbox/box.h"
#include "sandbox/tz.h"

#define GRACE_DEFAULT_MS 2000
#define TOOL_TIMEOUT_MAX_MS 3600000L  /* a tool's timeout at most (effects/proc/tools.h's limit) */
#define TOOL_BACKSTOP_MS 5000L
#define POOL_REFILL_LATEST_MS 1000L   /* a pooled box's replacement, if its run goes on that long */        /* after it, if neither its box nor the broker ended it */

struct srv;

struct mbox {
        struct mbox *next;
        struct srv *srv;
        uint64_t id;             /* the box's number on the channel */
        uint64_t req;            /* the SPAWN's request id (echoed) */
        uint32_t kind;           /* CHAN_BOX_* */
        void *handle;            /* the provider's */
        struct ev_io *exit_io;
        bool in_spawn;           /* inside boxes->spawn: freed by its caller */
        bool started, finishing, ended;
        bool killed;             /* finished with kill_first: ended by us, not on its own */
        /* Started before the broker asked (monitor_serve.prestart): no
         * message about it goes out until a SPAWN claims it. */
        bool parked;
        int frame_fd, stderr_fd; /* parked and started: its descriptors */
        bool died_parked;        /* parked, it ended on its own (killed from outside, crashed): */
        struct box_ended end;    /*   how; the SPAWN that claims it is told, as if after SPAWNED */
        char banner[CHAN_BANNER_MAX];
        struct monitor_prestart posture;
        bool pooled;             /* chidori serve's warm pool: started with no deadline, armed when claimed */
        bool bundle;             /* esbuild's box (m->bundle_*), not the provider's */
        bool root;               /* the first worker of a run tree */
        bool deadline_hit;
        struct ev_timer *deadline;
};

struct srv {
        const struct monitor_serve *m;
        struct evloop *loop;
        struct ev_timer *grace;
        struct monitor_commit commit;
        int agent_dirfd;         /* m->agent_dirfd, or OPEN_AGENT's (owned then) */
        char *agent_dir;         /* OPEN_AGENT's folder (owned); else m->agent_dir */
        struct mbox *boxes;
        struct mbox *parked;     /* the worker started ahead, until claimed */
        /* chidori serve's warm pool (m->pool): parked boxes of pool_posture,
         * refilled by `refill`; pool_deaths counts boxes that ended parked
         * on their own (or failed to start) since the last hand-out. */
        struct monitor_prestart pool_posture;
        struct ev_timer *refill;
        double refill_at;        /* mono_ms() when `refill` fires */
        unsigned pool_deaths;
        uint64_t next_box;       /* numbers given so far: 1..next_box-1 */
        uint64_t tree;           /* the run's first worker box: every later worker joins its run tree */
        bool hello, done, quiet, stop_sent, reset_seen;
        long stops_sent;         /* many_trees: stop signals forwarded so far */
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
        evloop_timer_del(s->loop, b->deadline);
        free(b);
}

/* ---- the box provider's events ---- */

/* SPAWNED for a worker: its frame socket and stderr go to the broker. */
static void send_worker(struct srv *s, struct mbox *b, int frame_fd, int stderr_fd, const char *banner)
{
        int fds[2] = { frame_fd, stderr_fd };
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
        m.spawned.flags = b->pooled ? CHAN_SPAWNED_POOLED : 0;
        snprintf(m.spawned.banner, sizeof(m.spawned.banner), "%s", banner ? banner : "");
        if (fds[1] >= 0)
                send_msg(s, &m, fds, 2);
        else
                broken(s, "could not be given the box's descriptors (%s)", strerror(errno));
        /* The broker has its copies now (the session owns them there). */
        close(frame_fd);
        if (fds[1] >= 0)
                close(fds[1]);
}

static void ev_started(void *arg, const struct box_started *st)
{
        struct mbox *b = arg;
        struct srv *s = b->srv;
        b->started = true;
        if (b->kind == CHAN_BOX_TOOL) {
                union chan_msg m;
                chan_init(&m, CHAN_SPAWNED, b->req);
                m.spawned.box = b->id;
                m.spawned.kind = CHAN_BOX_TOOL;
                int fds[3] = { st->stdin_fd, st->stdout_fd, st->stderr_fd };
                send_msg(s, &m, fds, 3);
                for (int i = 0; i < 3; i++)
                        close(fds[i]);
                return;
        }
        if (b->parked) {
                b->frame_fd = st->frame_fd;
                b->stderr_fd = st->stderr_fd;
                snprintf(b->banner, sizeof(b->banner), "%s", st->banner ? st->banner : "");
                return;
        }
        send_worker(s, b, st->frame_fd, st->stderr_fd, st->banner);
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
        if (!b->parked) /* a parked one failing is forgotten: the SPAWN starts another */
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

static void send_ended(struct srv *s, struct mbox *b, const struct box_ended *be);
static void pool_lost(struct srv *s);
static void pool_refill_soon(struct srv *s);

static void ev_ended(void *arg, const struct box_ended *be)
{
        struct mbox *b = arg;
        struct srv *s = b->srv;
        if (b->parked && s && s->parked == b && b->started && !b->killed) {
                /* The run's worker, ended before the broker claimed it: the
                 * SPAWN that claims it hears of it (claim_parked), never a
                 * second worker in its place.  Its descriptors stay open
                 * for that (the broker reads what it wrote, then EOF). */
                b->died_parked = true;
                b->end = *be;
                b->ended = true;
                return;
        }
        if (b->parked) {
                if (b->started) {
                        close(b->frame_fd);
                        if (b->stderr_fd >= 0)
                                close(b->stderr_fd);
                }
                b->ended = true;
                if (!s) { /* started early, never adopted (monitor_early_discard) */
                        if (!b->in_spawn)
                                free(b);
                        return;
                }
                if (s->parked == b)
                        s->parked = NULL;
                bool lost = b->pooled && !b->killed && !b->in_spawn;
                if (!b->in_spawn)
                        box_unlink(s, b);
                if (lost) /* a pool box that ended parked on its own: refilled, later each time */
                        pool_lost(s);
                return;
        }
        send_ended(s, b, be);
        b->ended = true;
        bool was_pooled = b->pooled;
        if (!b->in_spawn)
                box_unlink(s, b);
        if (was_pooled && s) /* a pooled box's run ended: its replacement starts now */
                pool_refill_soon(s);
}

static void send_ended(struct srv *s, struct mbox *b, const struct box_ended *be)
{
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
}

/* Kill (or only reap) a box that has started; its ended event follows. */
static void box_finish(struct srv *s, struct mbox *b, bool kill_first)
{
        if (!b->started || b->finishing || b->ended)
                return;
        b->finishing = true;
        b->killed = kill_first;
        if (b->bundle) {
                struct box_ended be;
                s->m->bundle_finish(s->m->bundle_arg, b->handle, kill_first, &be);
                if (b->deadline_hit)
                        be.reason = BOX_DEADLINE;
                ev_ended(b, &be);
                return;
        }
        s->m->boxes->finish(s->m->boxes->arg, b->handle, kill_first);
}

static void on_bundle_deadline(struct evloop *loop, struct ev_timer *t, void *arg)
{
        (void)loop, (void)t;
        struct mbox *b = arg;
        b->deadline = NULL;
        b->deadline_hit = true;
        box_finish(b->srv, b, true);
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

static bool zone_exists(const char *tz)
{
        if (strcmp(tz, "UTC") == 0)
                return true;
        int dfd = open(TZ_ZONEINFO, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0)
                return false;
        struct err *e = NULL;
        int fd = monitor_open_agent_file(dfd, tz, &e); /* beneath, a regular file */
        err_free(e);
        close(dfd);
        if (fd < 0)
                return false;
        close(fd);
        return true;
}

/* A tool's request from its checked spec: program, argv, env names, "ro:"
 * binds (monitor_spawn_allowed has vouched for each).  The vectors point
 * into the spec (NULL-terminated copies of the pointers, in *ret_v). */
static int tool_request(const struct chan_spawn *sp, const struct chan_blob *spec, struct box_request *req,
                        char ***ret_v)
{
        size_t na = sp->n_argv, ne = sp->n_env, nb = sp->n_binds;
        char **v = calloc(na + 1 + ne + 1 + nb + 1, sizeof(*v));
        if (!(*ret_v = v))
                return -1;
        const char *const *s = spec->strs;
        v[0] = (char *)s[0];  /* the program, absolute, for argv[0] as declared */
        for (size_t i = 1; i < na; i++)
                v[i] = (char *)s[1 + i];
        for (size_t i = 0; i < ne; i++)
                v[na + 1 + i] = (char *)s[1 + na + i];
        for (size_t i = 0; i < nb; i++)
                v[na + 1 + ne + 1 + i] = (char *)s[1 + na + ne + i] + 3;  /* past "ro:" */
        long t = sp->deadline_ms > TOOL_TIMEOUT_MAX_MS ? TOOL_TIMEOUT_MAX_MS : (long)sp->deadline_ms;
        *req = (struct box_request){
                .kind = BOX_TOOL, .argv = v, .env_names = v + na + 1, .ro_binds = v + na + 1 + ne + 1,
                .host = (sp->flags & CHAN_SPAWN_HOST) != 0, .timeout_ms = t, .tree = req->tree,
                /* The box's deadline (launch --deadline) and the broker's
                 * KILL come first; this is the backstop. */
                .deadline_at = mono_ms() + (double)(t + TOOL_BACKSTOP_MS),
        };
        return 0;
}

/* `dir` is `top` or a folder below it (both absolute, no ".."). */
static bool below(const char *dir, const char *top)
{
        if (!dir || !top)
                return false;
        size_t n = strlen(top);
        if (strcmp(top, "/") == 0)
                return dir[0] == '/';
        return strncmp(dir, top, n) == 0 && (dir[n] == '\0' || dir[n] == '/');
}

#define BUNDLE_ARGV_MAX 128

/* esbuild in a box over the agent folder (or a folder below it), asked by
 * the broker to bundle an agent; only the monitor's esbuild, only that
 * folder (monitor_bundle_allowed). */
static void on_bundle(struct srv *s, const struct chan_spawn *sp, const struct chan_blob *spec)
{
        struct err *e = NULL;
        const char *dir = NULL;
        if (!s->m->esbuild || !s->m->bundle_start) {
                send_failed(s, sp->h.id, ENOENT, CHAN_SPAWN_E_NO_BUNDLER, "the monitor found no esbuild");
                return;
        }
        /* The folder is checked against the COMMIT and then against the
         * monitor's own agent folder: a broker cannot name another one. */
        const char *own = s->agent_dir ? s->agent_dir : s->m->agent_dir;
        if (monitor_bundle_allowed(&s->commit, sp, spec, s->m->esbuild, &dir, &e) == 0 && !below(dir, own))
                err_setc(&e, CHAN_SPAWN_E_REFUSED, 0, "SPAWN of a bundle: '%.200s' is not the agent's folder", dir);
        if (e ||
            (sp->n_argv > BUNDLE_ARGV_MAX && err_setc(&e, CHAN_SPAWN_E_REFUSED, 0, "SPAWN of a bundle: too many arguments") < 0)) {
                send_failed(s, sp->h.id, 0, CHAN_SPAWN_E_REFUSED, err_msg(e));
                err_free(e);
                return;
        }
        char *argv[BUNDLE_ARGV_MAX + 1];
        for (size_t i = 0; i < sp->n_argv; i++)
                argv[i] = (char *)spec->strs[1 + i];
        argv[sp->n_argv] = NULL;
        struct mbox *b = calloc(1, sizeof(*b));
        int fds[4], xfd = -1;
        if (!b) {
                send_failed(s, sp->h.id, ENOMEM, BOX_E_SETUP, "start esbuild: out of memory");
                return;
        }
        if (s->m->bundle_start(s->m->bundle_arg, s->m->esbuild, argv, dir, &b->handle, fds, &xfd, &e) < 0) {
                send_failed(s, sp->h.id, e ? e->errnum : 0, err_code(e), err_msg(e));
                err_free(e);
                free(b);
                return;
        }
        *b = (struct mbox){ .srv = s, .id = s->next_box++, .req = sp->h.id, .handle = b->handle, .bundle = true,
                            .started = true };
        b->next = s->boxes;
        s->boxes = b;
        union chan_msg m;
        chan_init(&m, CHAN_SPAWNED, sp->h.id);
        m.spawned.box = b->id;
        m.spawned.kind = CHAN_BOX_BUNDLE;
        send_msg(s, &m, fds, 4);
        for (int i = 0; i < 4; i++)
                close(fds[i]);
        /* Its own deadline, the operator's run deadline, or a shorter one asked. */
        long d = s->m->bundle_deadline_ms;
        if (s->m->deadline_ms > 0 && (d <= 0 || s->m->deadline_ms < d))
                d = s->m->deadline_ms;
        if (sp->deadline_ms > 0 && (d <= 0 || (long)sp->deadline_ms < d))
                d = (long)sp->deadline_ms;
        if (evloop_io_add(s->loop, xfd, EPOLLIN, on_box_exit, b, &b->exit_io, &e) < 0 ||
            (d > 0 && evloop_timer_add(s->loop, mono_ms() + (double)d, on_bundle_deadline, b, &b->deadline, &e) < 0)) {
                broken(s, "could not be served: watch its box (%s)", err_msg(e));
                err_free(e);
        }
}

/* Start box b (filled, not linked yet) with the provider; a failure is
 * reported by ev_failed (or here) and the box forgotten. */
static bool start_box(struct srv *s, struct mbox *b, const struct box_request *req)
{
        struct err *e = NULL;
        b->in_spawn = true;
        b->next = s->boxes;
        s->boxes = b;
        struct box_events ev = { .started = ev_started, .failed = ev_failed, .ended = ev_ended, .arg = b };
        const struct box_provider *p = s->m->boxes;
        if (p->spawn(p->arg, s->loop, req, &ev, &b->handle, &e) < 0) {
                if (!b->parked)
                        send_failed(s, b->req, e ? e->errnum : 0, err_code(e), err_msg(e));
                err_free(e);
                e = NULL;
                b->ended = true;
        }
        b->in_spawn = false;
        if (b->ended || !b->started) {
                box_unlink(s, b);
                return false;
        }
        int xfd = s->m->exit_fd ? s->m->exit_fd(p->arg, b->handle) : -1;
        if (xfd >= 0 && evloop_io_add(s->loop, xfd, EPOLLIN, on_box_exit, b, &b->exit_io, &e) < 0) {
                broken(s, "could not be served: watch its box (%s)", err_msg(e));
                err_free(e);
        }
        return true;
}

/* The worker started ahead (monitor_serve.prestart), while the broker
 * started: the first worker SPAWN takes it when it asks for the same
 * posture; otherwise it is killed unseen and a box started as asked. */
static bool same_posture(const struct monitor_prestart *w, const struct chan_spawn *sp)
{
        return w->no_jit == (sp->jit == 0) && (uint64_t)w->cpu_budget_ms == sp->cpu_budget_ms &&
               strcmp(w->tz, sp->tz) == 0;
}

static bool claim_pooled(struct srv *s, const struct chan_spawn *sp);

static bool claim_parked(struct srv *s, const struct chan_spawn *sp)
{
        struct mbox *b = s->parked;
        if (sp->kind != CHAN_BOX_WORKER)
                return false;
        if (!b)
                return s->m->pool > 0 && s->m->boxes->deadline && claim_pooled(s, sp);
        s->parked = NULL;
        bool same = same_posture(&b->posture, sp);
        if (b->died_parked) {
                b->parked = false;
                if (!same) { /* not the worker asked for: a box as asked */
                        close(b->frame_fd);
                        if (b->stderr_fd >= 0)
                                close(b->stderr_fd);
                        box_unlink(s, b);
                        return false;
                }
                b->req = sp->h.id;
                s->tree = b->id;
                send_worker(s, b, b->frame_fd, b->stderr_fd, b->banner);
                send_ended(s, b, &b->end);
                box_unlink(s, b);
                return true;
        }
        if (b->ended || !b->started || !same) {
                box_finish(s, b, true); /* still parked: its end goes unreported */
                return false;
        }
        b->parked = false;
        b->req = sp->h.id;
        b->root = true;
        s->tree = b->id;
        send_worker(s, b, b->frame_fd, b->stderr_fd, b->banner);
        return true;
}

/* ---- chidori serve's warm pool (m->pool) ----
 * Up to m->pool worker boxes of s->pool_posture, started ahead and parked
 * (their worker has its context and prelude ready and waits for its init
 * frame), each handed to exactly one session: a claimed box is a run
 * tree's first worker like any other and ends with its session.  The
 * pool is refilled one box per loop turn, m->pool_refill_ms after the
 * run of a box it handed out ended (or 1 s after the hand-out, if the run
 * goes on), so a refill does not share the CPU with that run; a box that ended parked on its own (or failed to start) makes
 * the next refill wait longer (250 ms doubling, at most 30 s), so a
 * broken worker cannot spin.  A SPAWN of another posture is a miss and
 * the pool turns to that posture.  No refill once a stop came. */

static size_t pool_parked(struct srv *s)
{
        size_t n = 0;
        for (struct mbox *b = s->boxes; b; b = b->next)
                n += b->pooled && b->parked && !b->finishing && !b->ended;
        return n;
}

static void pool_schedule(struct srv *s, long delay_ms);

static void on_refill(struct evloop *loop, struct ev_timer *t, void *arg)
{
        (void)loop, (void)t;
        struct srv *s = arg;
        s->refill = NULL;
        if (s->done || s->stop_sent || pool_parked(s) >= s->m->pool)
                return;
        struct mbox *b = calloc(1, sizeof(*b));
        if (!b) {
                pool_lost(s);
                return;
        }
        const struct monitor_prestart *w = &s->pool_posture;
        *b = (struct mbox){ .srv = s, .id = s->next_box++, .kind = CHAN_BOX_WORKER, .parked = true, .pooled = true,
                            .posture = *w };
        struct box_request req = {
                .kind = BOX_WORKER, .pooled = true, .tz = w->tz[0] ? w->tz : NULL, .no_jit = w->no_jit,
                .cpu_budget_ms = w->cpu_budget_ms,
        };
        if (!start_box(s, b, &req)) {
                pool_lost(s);
                return;
        }
        if (pool_parked(s) < s->m->pool)
                pool_schedule(s, 0);
}

static void pool_schedule(struct srv *s, long delay_ms)
{
        if (s->refill || s->done || s->stop_sent)
                return;
        struct err *e = NULL;
        s->refill_at = mono_ms() + (double)delay_ms;
        if (evloop_timer_add(s->loop, s->refill_at, on_refill, s, &s->refill, &e) < 0)
                err_free(e); /* no refill: SPAWNs start boxes as asked */
}

/* A claimed box's run ended: the refill it scheduled comes now (after
 * --pool-refill-ms), not while the session's run had the CPU. */
static void pool_refill_soon(struct srv *s)
{
        if (s->pool_deaths || !s->refill || s->refill_at <= mono_ms() + (double)s->m->pool_refill_ms)
                return;
        evloop_timer_del(s->loop, s->refill);
        s->refill = NULL;
        pool_schedule(s, s->m->pool_refill_ms);
}

static void pool_lost(struct srv *s)
{
        unsigned d = s->pool_deaths < 7 ? s->pool_deaths : 7;
        s->pool_deaths++;
        evloop_timer_del(s->loop, s->refill);
        s->refill = NULL;
        pool_schedule(s, 250L << d);
}

/* A worker SPAWN starting a run tree: the oldest parked box of its
 * posture, its deadline armed from now, or false (a miss). */
static bool claim_pooled(struct srv *s, const struct chan_spawn *sp)
{
        const struct box_provider *p = s->m->boxes;
        struct mbox *hit = NULL;
        bool other = false;
        for (struct mbox *b = s->boxes; b; b = b->next) {
                if (!b->pooled || !b->parked || b->finishing || b->ended || !b->started)
                        continue;
                if (same_posture(&b->posture, sp))
                        hit = b; /* the list is newest first: the last is the oldest */
                else
                        other = true;
        }
        if (!hit && other) {
                /* The sessions ask for another posture than the pool's (a
                 * policy the CLI could not tell): the pool turns to theirs. */
                for (struct mbox *b = s->boxes, *nx; b; b = nx) {
                        nx = b->next; /* its end unlinks and frees it */
                        if (b->pooled && b->parked)
                                box_finish(s, b, true);
                }
                s->pool_posture = (struct monitor_prestart){ .no_jit = sp->jit == 0,
                                                             .cpu_budget_ms = (long)sp->cpu_budget_ms };
                snprintf(s->pool_posture.tz, sizeof(s->pool_posture.tz), "%s", sp->tz);
        }
        long d = s->m->deadline_ms;
        if (sp->deadline_ms > 0 && (d <= 0 || (long)sp->deadline_ms < d))
                d = (long)sp->deadline_ms;
        struct err *e = NULL;
        if (hit && p->deadline(p->arg, hit->handle, d > 0 ? mono_ms() + (double)d : 0, &e) < 0) {
                err_free(e);
                box_finish(s, hit, true);
                hit = NULL;
        }
        /* The replacement: when this run ends (pool_refill_soon), so that
         * its start does not share the CPU with the session's, or after
         * POOL_REFILL_LATEST_MS if the run goes on. */
        long later = s->m->pool_refill_ms > POOL_REFILL_LATEST_MS ? s->m->pool_refill_ms : POOL_REFILL_LATEST_MS;
        pool_schedule(s, hit ? later : s->m->pool_refill_ms);
        if (!hit)
                return false;
        s->pool_deaths = 0;
        hit->parked = false;
        hit->req = sp->h.id;
        hit->root = true;
        s->tree = hit->id;
        send_worker(s, hit, hit->frame_fd, hit->stderr_fd, hit->banner);
        return true;
}

struct monitor_early {
        struct mbox *b;
};

static int prestart_box(const struct box_provider *p, struct evloop *loop, long deadline_ms,
                        const struct monitor_prestart *w, bool cue, struct monitor_early **ret);

int monitor_prestart_box(const struct box_provider *p, struct evloop *loop, long deadline_ms,
                         const struct monitor_prestart *w, struct monitor_early **ret)
{
        return prestart_box(p, loop, deadline_ms, w, true, ret);
}


/* cue: give the worker its loader cue (only a box started before the
 * broker has one awaited: monitor_early_wait_loaded). */
static int prestart_box(const struct box_provider *p, struct evloop *loop, long deadline_ms,
                        const struct monitor_prestart *w, bool cue, struct monitor_early **ret)
{
        *ret = NULL;
        struct monitor_early *x = calloc(1, sizeof(*x));
        struct mbox *b = x ? calloc(1, sizeof(*b)) : NULL;
        if (!b) {
                free(x);
                return -1;
        }
        /* No srv yet: a parked box sends nothing and its provider reports
         * nothing but started/failed until the loop runs (monitor_serve). */
        *b = (struct mbox){ .kind = CHAN_BOX_WORKER, .parked = true, .posture = *w, .in_spawn = true };
        struct box_request req = {
                .kind = BOX_WORKER, .deadline_at = deadline_ms > 0 ? mono_ms() + (double)deadline_ms : 0,
                .loaded_cue = cue,
                .tz = w->tz[0] ? w->tz : NULL, .no_jit = w->no_jit, .cpu_budget_ms = w->cpu_budget_ms,
        };
        struct box_events ev = { .started = ev_started, .failed = ev_failed, .ended = ev_ended, .arg = b };
        struct err *e = NULL;
        int r = p->spawn(p->arg, loop, &req, &ev, &b->handle, &e);
        err_free(e); /* a failed early start is forgotten: the SPAWN starts a box as asked */
        b->in_spawn = false;
        if (r < 0 || b->ended || !b->started) {
                free(b);
                free(x);
                return -1;
        }
        x->b = b;
        *ret = x;
        return 0;
}

void monitor_early_wait_loaded(const struct box_provider *p, int (*loaded_fd)(void *, void *),
                               const struct monitor_early *x, int cap_ms)
{
        int lfd = x && loaded_fd ? loaded_fd(p->arg, x->b->handle) : -1;
        if (lfd < 0)
                return;
        /* The cue hangs up when the worker's main() runs or the worker ends;
         * a worker that writes first (a test's) ends the wait too. */
        struct pollfd pf[2] = { { .fd = lfd, .events = POLLIN }, { .fd = x->b->frame_fd, .events = POLLIN } };
        double until = mono_ms() + cap_ms;
        for (;;) {
                double left = until - mono_ms();
                if (left <= 0)
                        return;
                int n = poll(pf, x->b->frame_fd >= 0 ? 2 : 1, (int)left + 1);
                /* EINTR: a stop signal; the broker's start (and the stop) goes on. */
                if (n != 0)
                        return;
        }
}

void monitor_early_discard(const struct box_provider *p, struct monitor_early *x)
{
        if (!x)
                return;
        struct mbox *b = x->b;
        free(x);
        b->finishing = true;
        p->finish(p->arg, b->handle, true); /* its ended event frees it */
}

/* The early box joins the boxes: number 1, parked until a SPAWN claims it. */
static void adopt_early(struct srv *s, struct monitor_early *x)
{
        struct mbox *b = x->b;
        free(x);
        b->srv = s;
        b->id = s->next_box++;
        b->next = s->boxes;
        s->boxes = b;
        s->parked = b;
        struct err *e = NULL;
        const struct box_provider *p = s->m->boxes;
        int xfd = s->m->exit_fd ? s->m->exit_fd(p->arg, b->handle) : -1;
        if (xfd >= 0 && evloop_io_add(s->loop, xfd, EPOLLIN, on_box_exit, b, &b->exit_io, &e) < 0) {
                broken(s, "could not be served: watch its box (%s)", err_msg(e));
                err_free(e);
        }
}

static void prestart(struct srv *s)
{
        struct monitor_early *x = NULL;
        /* The broker runs already: no loader cue to wait for. */
        if (prestart_box(s->m->boxes, s->loop, s->m->deadline_ms, &s->m->prestart, false, &x) == 0)
                adopt_early(s, x);
}

/* The running first box of run tree `id`, or NULL. */
static struct mbox *running_root(struct srv *s, uint64_t id)
{
        for (struct mbox *t = s->boxes; id && t; t = t->next)
                if (t->id == id && t->root && t->started && !t->finishing && !t->ended)
                        return t;
        return NULL;
}

/* The run tree a worker or tool SPAWN goes in (*ret NULL: a worker starts
 * one), or false with why.  One run tree: while its first worker runs,
 * every other worker names it (its cgroup node goes below the first
 * box's: the run's --memory and --pids bound them together; they die with
 * it); with none running, a worker names none and starts the tree; tools
 * and bundles go in the run's cgroup as the provider places them.
 * chidori serve (many_trees): a worker naming no tree starts one of its
 * own, at most max_trees at once; a tool must name its session's tree. */
static bool spawn_tree(struct srv *s, const struct chan_spawn *sp, struct mbox **ret, char *why, size_t n)
{
        struct mbox *tree = NULL;
        if (sp->kind == CHAN_BOX_TOOL && s->m->many_trees && !(tree = running_root(s, sp->run_tree_id))) {
                snprintf(why, n, "SPAWN of a tool: no such run tree runs");
                return false;
        }
        if (sp->kind == CHAN_BOX_WORKER) {
                tree = running_root(s, s->m->many_trees ? sp->run_tree_id : s->tree);
                size_t roots = 0;
                for (struct mbox *t = s->boxes; !tree && t; t = t->next)
                        roots += t->root && !t->ended;
                if (!sp->run_tree_id && s->m->max_trees && roots >= s->m->max_trees) {
                        snprintf(why, n, "SPAWN of a new run tree: as many run as the operator allows (2 x --max-running)");
                        return false;
                }
                if (sp->run_tree_id != (tree ? tree->id : 0)) {
                        snprintf(why, n, "SPAWN in run tree %llu: %s %llu", (unsigned long long)sp->run_tree_id,
                                 tree ? "the run's tree is box" : "no such box runs; expected",
                                 (unsigned long long)(tree ? tree->id : 0));
                        return false;
                }
        }
        *ret = tree;
        return true;
}

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
        if (sp->kind == CHAN_BOX_BUNDLE) {
                on_bundle(s, sp, &spec);
                chan_blob_unmap(&spec);
                return;
        }
        if (monitor_spawn_allowed(&s->commit, sp, &spec, &e) < 0) {
                chan_blob_unmap(&spec);
                send_failed(s, sp->h.id, 0, CHAN_SPAWN_E_REFUSED, err_msg(e));
                err_free(e);
                return;
        }

        /* The monitor's posture: its own worker and the operator's sandbox
         * options (the provider's); of the broker's limits only a shorter
         * deadline, a shorter CPU budget and the JIT off are taken. */
        /* The zone: a name chan_decode checked, of a file the host has
         * beneath its zoneinfo (the box shows it read-only with /usr). */
        if (sp->tz[0] && !zone_exists(sp->tz)) {
                chan_blob_unmap(&spec);
                send_failed(s, sp->h.id, ENOENT, BOX_E_SETUP, "the time zone asked for is not one this host has");
                return;
        }
        struct mbox *tree = NULL;
        char why[160];
        if (!spawn_tree(s, sp, &tree, why, sizeof(why))) {
                chan_blob_unmap(&spec);
                send_failed(s, sp->h.id, 0, CHAN_SPAWN_E_REFUSED, why);
                return;
        }
        if (!tree && claim_parked(s, sp)) {
                chan_blob_unmap(&spec);
                return;
        }
        long d = s->m->deadline_ms;
        if (sp->deadline_ms > 0 && (d <= 0 || (long)sp->deadline_ms < d))
                d = (long)sp->deadline_ms;
        struct box_request req = {
                .kind = BOX_WORKER, .deadline_at = d > 0 ? mono_ms() + (double)d : 0, .tz = sp->tz[0] ? sp->tz : NULL,
                .no_jit = sp->jit == 0,
                .cpu_budget_ms = sp->cpu_budget_ms > (uint64_t)LONG_MAX ? 0 : (long)sp->cpu_budget_ms,
                .tree = tree ? tree->handle : NULL,
        };
        char **tv = NULL;
        struct mbox *b = calloc(1, sizeof(*b));
        if (!b || (sp->kind == CHAN_BOX_TOOL && tool_request(sp, &spec, &req, &tv) < 0)) {
                free(b);
                chan_blob_unmap(&spec);
                send_failed(s, sp->h.id, ENOMEM, BOX_E_SETUP, "start the box: out of memory");
                return;
        }
        *b = (struct mbox){ .srv = s, .id = s->next_box++, .req = sp->h.id, .kind = sp->kind,
                            .root = sp->kind == CHAN_BOX_WORKER && !tree };
        uint64_t id = b->id;
        if (start_box(s, b, &req) && sp->kind == CHAN_BOX_WORKER && !tree)
                s->tree = id;
        free(tv);
        chan_blob_unmap(&spec);
}

/* Under the privileged helper: the committed tools' commands and binds
 * become paths it opens for their boxes (this uid may not reach them);
 * then the list is closed.  A path it refuses is left to the box's own
 * open, which says why. */
static void allow_tools(const struct monitor_commit *c)
{
        for (size_t i = 0; i < c->n_commands + c->n_ro_binds; i++) {
                const char *p = i < c->n_commands ? c->commands[i] : c->ro_binds[i - c->n_commands];
                (void)priv_request(PRIV_ALLOW, p, -1, -1, 0, NULL);
        }
        (void)priv_request(PRIV_ALLOW_DONE, "", -1, -1, 0, NULL);
}

static void on_open(struct srv *s, const struct chan_open_agent_file *o)
{
        union chan_msg m;
        chan_init(&m, CHAN_OPENED, o->h.id);
        int fd = -1;
        struct err *e = NULL;
        if (priv_helper_fd >= 0) /* the supervisor's uid may not read the agent's folder */
                fd = priv_request(PRIV_AGENT_FILE, o->path, -1, -1, 0, &e), m.opened.errnum = fd < 0 ? (e && e->errnum > 0 ? e->errnum : EIO) : 0;
        else if (s->agent_dirfd < 0)
                m.opened.errnum = EACCES;
        else if ((fd = monitor_open_agent_file(s->agent_dirfd, o->path, &e)) < 0)
                m.opened.errnum = e && e->errnum > 0 ? e->errnum : EINVAL;
        err_free(e);
        send_msg(s, &m, fd >= 0 ? &fd : NULL, fd >= 0 ? 1 : 0);
        if (fd >= 0)
                close(fd);
}

/* The journal's agent (chidori replay without --agent): the path is the
 * journal's, opened with the operator's rights as `chidori replay` always
 * did; the file goes to the broker, which runs it only if its sha256 is the
 * recorded one (docs/decisions.md). */
static void on_open_agent(struct srv *s, const struct chan_open_agent *o)
{
        if (!s->m->agent_from_broker || s->agent_dir) {
                broken(s, "sent OPEN_AGENT, which this run does not take (or twice)");
                return;
        }
        union chan_msg m;
        chan_init(&m, CHAN_OPENED, o->h.id);
        int fd = -1;
        struct err *e = NULL;
        char *dir = strdup(o->path);
        char *slash = dir ? strrchr(dir, '/') : NULL;
        if (slash && priv_helper_fd >= 0) {
                /* the helper opens it, once, and the agent's other files after */
                fd = priv_request(PRIV_AGENT, o->path, -1, -1, 0, &e);
                m.opened.errnum = fd < 0 ? (e && e->errnum > 0 ? e->errnum : EIO) : 0;
                if (fd >= 0) {
                        *slash = '\0';
                        if (slash == dir)
                                memcpy(dir, "/", 2);
                        s->agent_dir = dir;
                        dir = NULL;
                }
        } else if (!slash) {
                m.opened.errnum = ENOMEM;
        } else {
                *slash = '\0';
                int dfd = open(slash == dir ? "/" : dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
                if (dfd < 0)
                        m.opened.errnum = errno;
                else if ((fd = monitor_open_agent_file(dfd, slash + 1, &e)) < 0)
                        m.opened.errnum = e && e->errnum > 0 ? e->errnum : EINVAL;
                if (fd >= 0) {
                        if (slash == dir)
                                memcpy(dir, "/", 2);
                        s->agent_dirfd = dfd;
                        s->agent_dir = dir;
                        dir = NULL;
                } else if (dfd >= 0) {
                        close(dfd);
                }
        }
        free(dir);
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
                } else if (priv_helper_fd >= 0) {
                        allow_tools(&s->commit);
                }
                return;
        case CHAN_SPAWN: on_spawn(s, &m->spawn, nfds ? fds[0] : -1); return;
        case CHAN_OPEN_AGENT_FILE: on_open(s, &m->open_agent_file); return;
        case CHAN_OPEN_AGENT: on_open_agent(s, &m->open_agent); return;
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
        if (!s->m->stop || !*s->m->stop || s->done)
                return;
        long n = s->m->stop_count ? (long)*s->m->stop_count : 1;
        if (s->stop_sent && (!s->m->many_trees || n <= s->stops_sent))
                return;
        s->stops_sent = n;
        bool first = !s->stop_sent;
        s->stop_sent = true;
        union chan_msg m;
        chan_init(&m, CHAN_STOP, 0);
        m.stop.signal = (int32_t)*s->m->stop;
        send_msg(s, &m, NULL, 0);
        if (!first)
                return;
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
        struct srv s = { .m = m, .next_box = 1, .agent_dirfd = m->agent_dirfd, .loop = m->loop };
        struct ev_io *chan_io = NULL;
        if (!s.loop && evloop_new(&s.loop, err) < 0)
                return EXIT_PROTOCOL;
        if (evloop_io_add(s.loop, m->chan, EPOLLIN, on_chan, &s, &chan_io, err) < 0) {
                if (!m->loop)
                        evloop_free(s.loop);
                return EXIT_PROTOCOL;
        }
        if (m->early)
                adopt_early(&s, m->early);
        /* The worker's box starts while the broker does (it reads its
         * config, the policy, the agent): the slow part of a run's start
         * is done once, in parallel. */
        if (m->prestart.on && !m->early)
                prestart(&s);
        if (m->pool > 0 && m->boxes->deadline) {
                s.pool_posture = m->prestart;
                pool_schedule(&s, 0);
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
                        if (b->died_parked) { /* never claimed: its descriptors were kept for a SPAWN */
                                close(b->frame_fd);
                                if (b->stderr_fd >= 0)
                                        close(b->stderr_fd);
                        }
                        b->ended = true;
                        box_unlink(&s, b);
                }
        }
        evloop_timer_del(s.loop, s.grace);
        evloop_timer_del(s.loop, s.refill);
        if (!m->loop)
                evloop_free(s.loop);
        monitor_commit_free(&s.commit);
        if (s.agent_dir) {
                close(s.agent_dirfd);
                free(s.agent_dir);
        }
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
