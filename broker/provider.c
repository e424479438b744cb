/* broker/provider.c — the box provider over the monitor's channel (provider.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "broker/provider.h"
#include "chan/chan.h"
#include "common/util.h"
#include "runtime/evloop.h"
#include "sandbox/box.h"

struct chan_box {
        struct chan_box *next;
        uint64_t req;            /* the SPAWN's id */
        uint64_t box;            /* the monitor's number, once SPAWNED */
        struct box_events ev;
        bool tool;               /* SPAWN kind tool: 3 fds, no banner */
        uint64_t *tree;          /* its run tree's first box, set at SPAWNED if 0 (NULL: forgotten) */
        bool started, kill_on_start, finish_asked;
};

struct chan_open {
        struct chan_open *next;
        uint64_t req;
        chan_opened_fn done;      /* NULL: cancelled */
        void *arg;
};

/* The open waiting for OPENED `req`, unlinked; NULL if none. */
static struct chan_open *take_open(struct chan_boxes *o, uint64_t req)
{
        for (struct chan_open **p = &o->opens; *p; p = &(*p)->next)
                if ((*p)->req == req) {
                        struct chan_open *op = *p;
                        *p = op->next;
                        return op;
                }
        return NULL;
}

static void unlink_box(struct chan_boxes *o, struct chan_box *b)
{
        for (struct chan_box **p = &o->boxes; *p; p = &(*p)->next)
                if (*p == b) {
                        *p = b->next;
                        break;
                }
        free(b);
}

static void send_kill(struct chan_boxes *o, struct chan_box *b);

/* The channel cannot be trusted any more: every box fails or ends. */
static void go_broken(struct chan_boxes *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void go_broken(struct chan_boxes *o, const char *fmt, ...)
{
        if (o->broken)
                return;
        o->broken = true;
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(o->why, sizeof(o->why), fmt, ap);
        va_end(ap);
        evloop_io_del(o->loop, o->io);
        o->io = NULL;
        while (o->boxes) {
                struct chan_box *b = o->boxes;
                o->boxes = b->next;
                struct box_events ev = b->ev;
                bool started = b->started;
                free(b);
                if (!started) {
                        struct err *e = NULL;
                        err_set(&e, 0, "the monitor's channel: %s", o->why);
                        ev.failed(ev.arg, e, false);
                        err_free(e);
                } else {
                        ev.ended(ev.arg, &(struct box_ended){ .reason = BOX_KILLED, .syscall_nr = -1 });
                }
        }
        while (o->opens) {
                struct chan_open *op = o->opens;
                o->opens = op->next;
                if (op->done)
                        op->done(op->arg, -1, EPIPE);
                free(op);
        }
        if (o->on_broken)
                o->on_broken(o->cb_arg, o->why);
}

static struct chan_box *by_req(struct chan_boxes *o, uint64_t req)
{
        for (struct chan_box *b = o->boxes; b; b = b->next)
                if (!b->started && b->req == req)
                        return b;
        return NULL;
}

static struct chan_box *by_box(struct chan_boxes *o, uint64_t box)
{
        for (struct chan_box *b = o->boxes; b; b = b->next)
                if (b->started && b->box == box)
                        return b;
        return NULL;
}

static enum box_end_reason box_reason(const struct chan_box_ended *m)
{
        switch (m->reason) {
        case CHAN_END_DEADLINE: return BOX_DEADLINE;
        case CHAN_END_SECCOMP: return BOX_SECCOMP;
        case CHAN_END_OOM: return BOX_OOM;
        case CHAN_END_KILLED: return BOX_KILLED;
        default: return m->pids_hit ? BOX_PIDS : BOX_EXITED;
        }
}

/* One message; returns the number of its fds it kept. */
static size_t on_message(struct chan_boxes *o, const union chan_msg *m, const int *fds)
{
        struct chan_box *b;
        switch (m->h.type) {
        case CHAN_SPAWNED: {
                if (!(b = by_req(o, m->h.id))) {
                        go_broken(o, "SPAWNED for request %llu, which is not waiting", (unsigned long long)m->h.id);
                        return 0;
                }
                if ((m->spawned.kind == CHAN_BOX_TOOL) != b->tool) {
                        go_broken(o, "SPAWNED of kind %u for request %llu", m->spawned.kind,
                                  (unsigned long long)m->h.id);
                        return 0;
                }
                b->started = true;
                b->box = m->spawned.box;
                if (b->tree && !*b->tree && !b->tool) { /* kept after it ends: a later box never starts a tree of its own */
                        *b->tree = b->box;
                        if (m->spawned.flags & CHAN_SPAWNED_POOLED)
                                o->pool_hits++;
                        else if (o->pool_on)
                                o->pool_misses++;
                }
                if (b->kill_on_start)
                        send_kill(o, b);
                if (b->tool) {
                        b->ev.started(b->ev.arg, &(struct box_started){ .frame_fd = -1, .stdin_fd = fds[0],
                                                                        .stdout_fd = fds[1], .stderr_fd = fds[2],
                                                                        .banner = "" });
                        return 3;
                }
                snprintf(o->banner, sizeof(o->banner), "%s", m->spawned.banner);
                b->ev.started(b->ev.arg,
                              &(struct box_started){ .frame_fd = fds[0], .stderr_fd = fds[1], .banner = m->spawned.banner });
                return 2;
        }
        case CHAN_SPAWN_FAILED: {
                if (!(b = by_req(o, m->h.id))) {
                        go_broken(o, "SPAWN_FAILED for request %llu, which is not waiting", (unsigned long long)m->h.id);
                        return 0;
                }
                struct box_events ev = b->ev;
                unlink_box(o, b);
                struct err *e = NULL;
                const struct chan_spawn_failed *f = &m->spawn_failed;
                /* The monitor's message has its strerror already. */
                err_setc(&e, f->code, 0, "%s", f->message);
                e->errnum = f->errnum;
                ev.failed(ev.arg, e, f->code == BOX_E_LAYER);
                err_free(e);
                return 0;
        }
        case CHAN_BOX_ENDED: {
                const struct chan_box_ended *x = &m->box_ended;
                if (!(b = by_box(o, x->box))) {
                        go_broken(o, "BOX_ENDED for box %llu, which is not running", (unsigned long long)x->box);
                        return 0;
                }
                struct box_events ev = b->ev;
                unlink_box(o, b);
                struct box_ended e = {
                        .reason = box_reason(x),
                        .syscall_nr = x->reason == CHAN_END_SECCOMP ? x->seccomp_nr : -1,
                        .wait_status = x->wait_status,
                        .cpu_ms = (double)x->cpu_ms,
                        .oom_killed = x->reason == CHAN_END_OOM,
                        .pids_limit_hit = x->pids_hit != 0,
                        .peak_bytes = x->peak_bytes,
                        .memory_limit = x->memory_limit,
                };
                ev.ended(ev.arg, &e);
                return 0;
        }
        case CHAN_OPENED: {
                struct chan_open *op = take_open(o, m->h.id);
                if (!op) {
                        go_broken(o, "OPENED for request %llu, which is not waiting", (unsigned long long)m->h.id);
                        return 0;
                }
                int fd = m->opened.errnum == 0 && fds ? fds[0] : -1;
                size_t kept = 0;
                if (op->done) {
                        op->done(op->arg, fd, fd >= 0 ? 0 : m->opened.errnum > 0 ? m->opened.errnum : EIO);
                        kept = fd >= 0 ? 1 : 0;
                }
                free(op);
                return kept;
        }
        case CHAN_STOP:
                if (o->on_stop)
                        o->on_stop(o->cb_arg, m->stop.signal);
                return 0;
        default: go_broken(o, "unexpected %s", chan_type_name(m->h.type)); return 0;
        }
}

static void on_chan(struct evloop *loop, struct ev_io *io, int fd, uint32_t rev, void *arg)
{
        (void)loop, (void)io, (void)rev;
        struct chan_boxes *o = arg;
        union chan_msg m;
        int fds[CHAN_MAX_FDS];
        size_t nfds = 0;
        struct err *e = NULL;
        if (chan_recv(fd, CHAN_FROM_MONITOR, &m, fds, &nfds, &e) < 0) {
                go_broken(o, "%s", err_code(e) == CHAN_E_CLOSED ? "the monitor closed the channel" : err_msg(e));
                err_free(e);
                return;
        }
        size_t kept = on_message(o, &m, fds);
        for (size_t i = kept; i < nfds; i++)
                close(fds[i]);
}

struct chan_deferred {
        struct chan_deferred *next;
        union chan_msg m;
        int fds[CHAN_MAX_FDS];
        size_t nfds;
};

static void deliver_deferred(struct evloop *loop, void *arg)
{
        (void)loop;
        struct chan_boxes *o = arg;
        while (o->deferred) {
                struct chan_deferred *d = o->deferred;
                o->deferred = d->next;
                size_t kept = on_message(o, &d->m, d->fds);
                for (size_t i = kept; i < d->nfds; i++)
                        close(d->fds[i]);
                free(d);
        }
}

void chan_boxes_defer(struct chan_boxes *o, const union chan_msg *m, const int *fds, size_t nfds)
{
        struct chan_deferred *d = calloc(1, sizeof(*d));
        struct err *e = NULL;
        if (!d) {
                for (size_t i = 0; i < nfds; i++)
                        close(fds[i]);
                go_broken(o, "out of memory keeping a message for later");
                return;
        }
        d->m = *m;
        d->nfds = nfds;
        memcpy(d->fds, fds, nfds * sizeof(int));
        struct chan_deferred **p = &o->deferred;
        while (*p)
                p = &(*p)->next;
        *p = d;
        evloop_defer_cancel(o->loop, deliver_deferred, o);
        if (evloop_defer(o->loop, deliver_deferred, o, &e) < 0) {
                go_broken(o, "%s", err_msg(e));
                err_free(e);
        }
}


static void send_kill(struct chan_boxes *o, struct chan_box *b)
{
        union chan_msg m;
        chan_init(&m, CHAN_KILL, 0);
        m.kill.box = b->box;
        struct err *e = NULL;
        if (chan_send(o->chan, &m, NULL, 0, &e) < 0) {
                go_broken(o, "KILL: %s", err_msg(e));
                err_free(e);
        }
}

static size_t count(char *const *v)
{
        size_t n = 0;
        while (v && v[n])
                n++;
        return n;
}

/* A tool's spec: program, argv, env names, "ro:" binds (chan.h, SPAWN). */
static int tool_spec(const struct box_request *req, union chan_msg *m, int *blob, struct err **err)
{
        size_t na = count(req->argv), ne = count(req->env_names), nb = count(req->ro_binds);
        if (na == 0)
                return err_set(err, 0, "start the tool: no program");
        if (1 + na + ne + nb > CHAN_BLOB_STRINGS)
                return err_set(err, E2BIG, "start the tool: more than %u strings", CHAN_BLOB_STRINGS);
        char **strs = calloc(1 + na + ne + nb, sizeof(*strs));
        if (!strs)
                return err_set(err, ENOMEM, "start the tool");
        size_t k = 0;
        strs[k++] = req->argv[0];
        for (size_t i = 0; i < na; i++)
                strs[k++] = req->argv[i];
        for (size_t i = 0; i < ne; i++)
                strs[k++] = req->env_names[i];
        int r = 0;
        for (size_t i = 0; i < nb && r == 0; i++)
                if (asprintf(&strs[k++], "ro:%s", req->ro_binds[i]) < 0)
                        strs[--k] = NULL, r = err_set(err, ENOMEM, "start the tool");
        if (r == 0)
                r = chan_blob_create("spawn", (const char *const *)strs, k, blob, err);
        for (size_t i = 1 + na + ne; i < k; i++)
                free(strs[i]);
        free(strs);
        m->spawn.kind = CHAN_BOX_TOOL;
        m->spawn.n_argv = (uint32_t)na;
        m->spawn.n_env = (uint32_t)ne;
        m->spawn.n_binds = (uint32_t)nb;
        m->spawn.flags = req->host ? CHAN_SPAWN_HOST : 0;
        m->spawn.deadline_ms = req->timeout_ms <= 0 ? 1 : req->timeout_ms > UINT32_MAX ? UINT32_MAX
                                                                                         : (uint32_t)req->timeout_ms;
        return r;
}

static int spawn_in(struct chan_boxes *o, uint64_t *tree, const struct box_request *req, const struct box_events *ev,
                    void **ret_handle, struct err **err)
{
        bool tool = req->kind == BOX_TOOL;
        if (o->broken)
                return err_set(err, 0, "start the %s: the monitor's channel: %s", tool ? "tool" : "worker", o->why);
        union chan_msg m;
        chan_init(&m, CHAN_SPAWN, ++o->next_req);
        int blob = -1;
        if (tool) {
                if (tool_spec(req, &m, &blob, err) < 0)
                        return -1;
                m.spawn.run_tree_id = *tree; /* chidori serve: below the session's tree */
                goto send;
        }
        /* The monitor starts its own worker: the spec names it, nothing more. */
        const char *spec[] = { "chidori-worker", "chidori-worker" };
        if (chan_blob_create("spawn", spec, 2, &blob, err) < 0)
                return -1;
        m.spawn.kind = CHAN_BOX_WORKER;
        m.spawn.run_tree_id = *tree;
        m.spawn.n_argv = 1;
        m.spawn.jit = o->no_jit ? 0 : 1;
        m.spawn.cpu_budget_ms = o->cpu_budget_ms > 0 ? (uint64_t)o->cpu_budget_ms : 0;
        if (o->tz && strlen(o->tz) < sizeof(m.spawn.tz))
                memcpy(m.spawn.tz, o->tz, strlen(o->tz) + 1);
        if (req->deadline_at > 0) {
                double left = ceil(req->deadline_at - mono_ms());
                m.spawn.deadline_ms = left < 1 ? 1 : left > (double)UINT32_MAX ? UINT32_MAX : (uint32_t)left;
        }
send:;
        struct chan_box *b = calloc(1, sizeof(*b));
        if (!b) {
                close(blob);
                return err_set(err, ENOMEM, "start the %s", tool ? "tool" : "worker");
        }
        b->tool = tool;
        b->tree = tree;
        int r = chan_send(o->chan, &m, &blob, 1, err);
        close(blob);
        if (r < 0) {
                free(b);
                return err_wrap(err, "start the %s: ask the monitor", tool ? "tool" : "worker");
        }
        b->req = m.h.id;
        b->ev = *ev;
        b->next = o->boxes;
        o->boxes = b;
        *ret_handle = b;
        return 0;
}

static int spawn(void *arg, struct evloop *loop, const struct box_request *req, const struct box_events *ev,
                 void **ret_handle, struct err **err)
{
        (void)loop;
        struct chan_boxes *o = arg;
        return spawn_in(o, &o->tree_box, req, ev, ret_handle, err);
}

static void finish_in(struct chan_boxes *o, void *handle, bool kill_first)
{
        for (struct chan_box *b = o->boxes; b; b = b->next) {
                if (b != handle)
                        continue;
                if (b->finish_asked)
                        return;
                b->finish_asked = true;
                if (!kill_first)
                        return; /* it exits on its own: the monitor reaps it, BOX_ENDED follows */
                if (b->started)
                        send_kill(o, b);
                else
                        b->kill_on_start = true;
                return;
        }
}

static void finish(void *arg, void *handle, bool kill_first)
{
        finish_in(arg, handle, kill_first);
}

/* ---- chidori serve: a provider per session over the one channel ---- */

static int tree_spawn(void *arg, struct evloop *loop, const struct box_request *req, const struct box_events *ev,
                      void **ret_handle, struct err **err)
{
        (void)loop;
        struct chan_tree *t = arg;
        return spawn_in(t->o, &t->tree_box, req, ev, ret_handle, err);
}

static void tree_finish(void *arg, void *handle, bool kill_first)
{
        struct chan_tree *t = arg;
        finish_in(t->o, handle, kill_first);
}

void chan_tree_init(struct chan_tree *t, struct chan_boxes *o)
{
        *t = (struct chan_tree){ .o = o };
        t->provider = (struct box_provider){ .spawn = tree_spawn, .finish = tree_finish, .arg = t };
}

/* The events of a box whose session is gone: its descriptors closed. */
static void gone_started(void *arg, const struct box_started *st)
{
        (void)arg;
        /* A worker's: frame and stderr; a tool's (frame -1): stdin, stdout, stderr. */
        const int fds[] = { st->frame_fd, st->stderr_fd, st->frame_fd < 0 ? st->stdin_fd : -1,
                            st->frame_fd < 0 ? st->stdout_fd : -1 };
        for (size_t i = 0; i < sizeof(fds) / sizeof(fds[0]); i++)
                if (fds[i] >= 0)
                        close(fds[i]);
}

static void gone_failed(void *arg, const struct err *e, bool layer)
{
        (void)arg, (void)e, (void)layer;
}

static void gone_ended(void *arg, const struct box_ended *e)
{
        (void)arg, (void)e;
}

void chan_tree_free(struct chan_tree *t)
{
        /* The session freed before its boxes ended (the server's end):
         * they were asked to be killed; what the monitor says of them
         * later goes nowhere. */
        for (struct chan_box *b = t->o->boxes; b; b = b->next)
                if (b->tree == &t->tree_box) {
                        b->tree = NULL;
                        b->ev = (struct box_events){ .started = gone_started, .failed = gone_failed,
                                                     .ended = gone_ended };
                }
}

int chan_boxes_init(struct chan_boxes *o, int chan, struct evloop *loop, struct err **err)
{
        *o = (struct chan_boxes){ .chan = chan, .loop = loop };
        o->provider = (struct box_provider){ .spawn = spawn, .finish = finish, .arg = o };
        return evloop_io_add(loop, chan, EPOLLIN, on_chan, o, &o->io, err);
}

void chan_boxes_free(struct chan_boxes *o)
{
        evloop_io_del(o->loop, o->io);
        o->io = NULL;
        while (o->opens) {
                struct chan_open *op = o->opens;
                o->opens = op->next;
                free(op);
        }
        evloop_defer_cancel(o->loop, deliver_deferred, o);
        while (o->deferred) {
                struct chan_deferred *d = o->deferred;
                o->deferred = d->next;
                for (size_t i = 0; i < d->nfds; i++)
                        close(d->fds[i]);
                free(d);
        }
        while (o->boxes) {
                struct chan_box *b = o->boxes;
                o->boxes = b->next;
                free(b);
        }
}

/* ---- the synchronous messages ---- */

static int recv_one(int chan, uint32_t type, union chan_msg *m, int *fd, struct err **err)
{
        int fds[CHAN_MAX_FDS];
        size_t nfds = 0;
        if (chan_recv(chan, CHAN_FROM_MONITOR, m, fds, &nfds, err) < 0)
                return err_wrap(err, "the monitor's channel");
        if (m->h.type != type) {
                for (size_t i = 0; i < nfds; i++)
                        close(fds[i]);
                if (m->h.type == CHAN_STOP) {
                        /* The run is being stopped: the signal for the caller
                         * (chan_boxes_stop_signal), not an errno. */
                        err_setc(err, CHAN_E_STOPPED, 0, "interrupted by %s", strsignal(m->stop.signal));
                        if (err && *err)
                                (*err)->errnum = m->stop.signal;
                        return -1;
                }
                return err_setc(err, CHAN_E_PROTO, 0, "the monitor's channel: %s where %s was expected",
                                chan_type_name(m->h.type), chan_type_name(type));
        }
        if (fd)
                *fd = nfds ? fds[0] : -1;
        else
                for (size_t i = 0; i < nfds; i++)
                        close(fds[i]);
        return 0;
}

int chan_boxes_hello(int chan, unsigned *ret_flags, struct err **err)
{
        union chan_msg m;
        chan_init(&m, CHAN_HELLO, 1);
        m.hello.version = CHAN_VERSION;
        if (chan_send(chan, &m, NULL, 0, err) < 0 || recv_one(chan, CHAN_WELCOME, &m, NULL, err) < 0)
                return -1;
        if (ret_flags)
                *ret_flags = m.welcome.flags;
        return 0;
}

int chan_boxes_commit(int chan, unsigned flags, const char *agent_dir, const char *const *commands,
                      size_t n_commands, const char *const *ro_binds, size_t n_ro_binds,
                      const char *const *env_names, size_t n_env_names, struct err **err)
{
        size_t n = 1 + n_commands + n_ro_binds + n_env_names;
        if (n > CHAN_BLOB_STRINGS)
                return err_set(err, E2BIG, "COMMIT: more than %u strings", CHAN_BLOB_STRINGS);
        const char **strs = calloc(n, sizeof(*strs));
        if (!strs)
                return err_set(err, ENOMEM, "COMMIT");
        size_t k = 0;
        strs[k++] = agent_dir;
        for (size_t i = 0; i < n_commands; i++)
                strs[k++] = commands[i];
        for (size_t i = 0; i < n_ro_binds; i++)
                strs[k++] = ro_binds[i];
        for (size_t i = 0; i < n_env_names; i++)
                strs[k++] = env_names[i];
        int blob = -1;
        int r = chan_blob_create("commit", strs, n, &blob, err);
        free(strs);
        if (r < 0)
                return -1;
        union chan_msg m;
        chan_init(&m, CHAN_COMMIT, 0);
        m.commit.flags = flags;
        m.commit.n_commands = (uint32_t)n_commands;
        m.commit.n_ro_binds = (uint32_t)n_ro_binds;
        m.commit.n_env_names = (uint32_t)n_env_names;
        r = chan_send(chan, &m, &blob, 1, err);
        close(blob);
        return r;
}

/* OPEN_AGENT_FILE or OPEN_AGENT {path}, then its OPENED: the file, or -1
 * with err (OPENED's errno; a STOP met instead is noted in *stop). */
static int open_request(int chan, uint32_t type, const char *path, volatile sig_atomic_t *stop, struct err **err)
{
        union chan_msg m;
        chan_init(&m, type, 1);
        char *dst = type == CHAN_OPEN_AGENT ? m.open_agent.path : m.open_agent_file.path;
        if (strlen(path) >= CHAN_PATH_MAX)
                return err_set(err, ENAMETOOLONG, "agent file '%s'", path);
        memcpy(dst, path, strlen(path) + 1);
        int fd = -1;
        if (chan_send(chan, &m, NULL, 0, err) < 0)
                return -1;
        if (recv_one(chan, CHAN_OPENED, &m, &fd, err) < 0) {
                if (m.h.type == CHAN_STOP && stop)
                        *stop = m.stop.signal; /* the run is being stopped */
                return -1;
        }
        if (m.opened.errnum)
                return err_set(err, m.opened.errnum, "agent file '%s'", path);
        return fd;
}

int chan_boxes_open(int chan, const char *rel, volatile sig_atomic_t *stop, struct err **err)
{
        return open_request(chan, CHAN_OPEN_AGENT_FILE, rel, stop, err);
}

int chan_boxes_open_agent(int chan, const char *abs, volatile sig_atomic_t *stop, struct err **err)
{
        return open_request(chan, CHAN_OPEN_AGENT, abs, stop, err);
}

int chan_boxes_stop_signal(const struct err *e)
{
        return e && e->code == CHAN_E_STOPPED ? e->errnum : 0;
}

int chan_boxes_open_async(struct chan_boxes *o, const char *rel, chan_opened_fn done, void *arg, uint64_t *ret_req,
                          struct err **err)
{
        if (o->broken)
                return err_set(err, EPIPE, "the monitor's channel: %s", o->why);
        union chan_msg m;
        chan_init(&m, CHAN_OPEN_AGENT_FILE, ++o->next_req);
        if (!rel[0] || strlen(rel) >= sizeof(m.open_agent_file.path))
                return err_set(err, ENAMETOOLONG, "agent file '%s'", rel);
        memcpy(m.open_agent_file.path, rel, strlen(rel) + 1);
        struct chan_open *op = calloc(1, sizeof(*op));
        if (!op)
                return err_set(err, ENOMEM, "agent file '%s'", rel);
        if (chan_send(o->chan, &m, NULL, 0, err) < 0) {
                free(op);
                return err_wrap(err, "the monitor's channel");
        }
        *op = (struct chan_open){ .next = o->opens, .req = m.h.id, .done = done, .arg = arg };
        o->opens = op;
        if (ret_req)
                *ret_req = op->req;
        return 0;
}

void chan_boxes_open_cancel(struct chan_boxes *o, uint64_t req)
{
        for (struct chan_open *op = o->opens; op; op = op->next)
                if (op->req == req)
                        op->done = NULL;
}

int chan_boxes_result(int chan, int code, struct err **err)
{
        union chan_msg m;
        chan_init(&m, CHAN_RESULT, 0);
        m.result.exit_code = code < 0 ? 70 : code > 255 ? 255 : code;
        return chan_send(chan, &m, NULL, 0, err);
}
