/* cli/provider.c — the CLI's box provider (runtime/session.h, struct
 * box_provider): the worker in a box started by this process
 * (sandbox_start through spawn_worker), or the in-process engine thread
 * (--no-isolate).  The supervisor lives here: the deadline (a timer of the
 * loop), the seccomp notification (a watcher on the listener), the memory
 * watchdog (inside sandbox_start), kill and reaping; the session learns what
 * happened from the one `ended` report.  The privilege split of issue 10
 * adds a provider over the monitor's channel beside this one.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/seccomp.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cli/cli.h"
#include "runtime/evloop.h"
#include "sandbox/cgroup/cgroup.h"

struct cli_box {
        struct cli_boxes *owner;
        struct evloop *loop;
        struct box_events ev;
        struct worker w;
        struct ev_io *notify_io;
        struct ev_timer *deadline;
        bool ended;
        bool have_cg;            /* owner->tools.run_cg is this worker's cgroup */
        struct cli_tool *tool;   /* a tool (BOX_TOOL), not a worker */
        struct cgroup_run *under; /* a tool: the run cgroup its place is below (NULL: none) */
        struct cli_box *tnext;   /* in owner->live_tools */
};

static void box_free(struct cli_box *b)
{
        evloop_io_del(b->loop, b->notify_io);
        evloop_timer_del(b->loop, b->deadline);
        free(b);
}

/* Reap the worker (kill first if asked), release its box, report. */
static void reap(struct cli_box *b, bool kill_first, enum box_end_reason reason, int nr)
{
        if (b->ended)
                return;
        b->ended = true;
        evloop_io_del(b->loop, b->notify_io);
        b->notify_io = NULL;
        evloop_timer_del(b->loop, b->deadline);
        b->deadline = NULL;
        struct box_ended e = { .reason = reason, .syscall_nr = nr };
        if (b->tool) {
                for (struct cli_box **p = &b->owner->live_tools; *p; p = &(*p)->tnext)
                        if (*p == b) {
                                *p = b->tnext;
                                break;
                        }
                cli_tool_end(b->tool, kill_first, &e.wait_status);
                struct box_events ev = b->ev;
                box_free(b);
                ev.ended(ev.arg, &e);
                return;
        }
        /* The tools' places below the worker's cgroup go first. */
        for (struct cli_box *t = b->owner->live_tools, *next; b->w.have_sr && b->w.sr.cg && t; t = next) {
                next = t->tnext;
                if (t->under == b->w.sr.cg)
                        reap(t, true, BOX_KILLED, 0);
        }
        if (b->have_cg)
                b->owner->tools.run_cg = NULL;
        struct sandbox_usage usage;
        struct err *err = NULL;
        if (b->owner->set_cgroup)
                b->owner->set_cgroup(b->owner->grants, NULL); /* worker_finish removes it */
        /* The cgroup leaf is removed after the end is reported (BOX_ENDED
         * goes out first): a session's answer does not wait for the rmdir. */
        struct cgroup_run *cg = NULL;
        if (worker_finish(&b->w, kill_first, &e.wait_status, &usage, &e.cpu_ms, &cg, &err) < 0) {
                fprintf(stderr, "chidori: %s\n", err_msg(err));
                err_free(err);
        }
        e.oom_killed = usage.oom_killed;
        e.pids_limit_hit = usage.pids_limit_hit;
        /* The box's own counters say why it ended when nobody here killed it. */
        if (e.reason == BOX_EXITED && usage.oom_killed)
                e.reason = BOX_OOM;
        else if (e.reason == BOX_EXITED && usage.pids_limit_hit)
                e.reason = BOX_PIDS;
        e.peak_bytes = usage.peak_bytes;
        e.memory_limit = usage.memory_limit;
        struct box_events ev = b->ev;
        box_free(b);
        ev.ended(ev.arg, &e);
        cgroup_run_destroy(cg, NULL);
}

static void no_report(void *arg, const struct box_ended *e)
{
        (void)arg, (void)e;
}

static void on_deadline(struct evloop *loop, struct ev_timer *t, void *arg)
{
        (void)loop, (void)t;
        struct cli_box *b = arg;
        b->deadline = NULL;
        reap(b, true, BOX_DEADLINE, 0);
}

/* The stage-1 filter stopped a syscall: the calling thread waits in the
 * kernel until we answer; we never do — the box dies with it. */
static void on_notify(struct evloop *loop, struct ev_io *io, int fd, uint32_t rev, void *arg)
{
        (void)io;
        struct cli_box *b = arg;
        if (rev & EPOLLIN) {
                struct seccomp_notif req;
                memset(&req, 0, sizeof(req));
                if (ioctl(fd, SECCOMP_IOCTL_NOTIF_RECV, &req) == 0) {
                        reap(b, true, BOX_SECCOMP, req.data.nr);
                        return;
                }
        }
        if (rev & (EPOLLHUP | EPOLLERR)) {
                /* The box has exited: stop watching the listener. */
                evloop_io_del(loop, b->notify_io);
                b->notify_io = NULL;
        }
}

/* A tool for the broker (cli/toolbox.c); the deadline is the backstop. */
static int spawn_tool(struct cli_boxes *o, struct cli_box *b, const struct box_request *req, void **ret_handle,
                      struct err **err)
{
        int fds[3];
        struct err *terr = NULL;
        /* chidori serve: below the run tree the broker named (its session's). */
        const struct cli_box *tree = req->tree;
        struct cgroup_run *run_cg = o->tools.run_cg;
        if (tree && !tree->ended && tree->w.have_sr)
                o->tools.run_cg = tree->w.sr.cg;
        b->under = o->tools.run_cg;
        int r = cli_tool_start(&o->tools, req, &b->tool, fds, &terr);
        o->tools.run_cg = run_cg;
        if (r < 0) {
                struct box_events ev = b->ev;
                free(b);
                ev.failed(ev.arg, terr, false);
                err_free(terr);
                *ret_handle = NULL;
                return 0;
        }
        b->tnext = o->live_tools;
        o->live_tools = b;
        if (req->deadline_at > 0 && evloop_timer_add(b->loop, req->deadline_at, on_deadline, b, &b->deadline, err) < 0) {
                for (int i = 0; i < 3; i++)
                        close(fds[i]);
                b->ev.ended = no_report;
                struct box_events ev = b->ev;
                reap(b, true, BOX_KILLED, 0);
                ev.failed(ev.arg, *err, false);
                err_free(*err);
                *err = NULL;
                *ret_handle = NULL;
                return 0;
        }
        *ret_handle = b;
        b->ev.started(b->ev.arg, &(struct box_started){ .frame_fd = -1, .stdin_fd = fds[0], .stdout_fd = fds[1],
                                                        .stderr_fd = fds[2], .banner = "" });
        return 0;
}

static int spawn(void *arg, struct evloop *loop, const struct box_request *req, const struct box_events *ev,
                 void **ret_handle, struct err **err)
{
        struct cli_boxes *o = arg;
        struct cli_box *b = calloc(1, sizeof(*b));
        if (!b)
                return err_set(err, ENOMEM, "start the worker");
        b->owner = o;
        b->loop = loop;
        b->ev = *ev;
        if (req->kind == BOX_TOOL)
                return spawn_tool(o, b, req, ret_handle, err);
        struct err *serr = NULL;
        /* A request narrows the operator's posture, never widens it. */
        struct spawn_opts so = *o->spawn;
        struct sandbox_opts sb = *so.sandbox;
        if (req->no_jit)
                sb.jit = 0;
        if (req->cpu_budget_ms > 0 && (sb.engine_cpu_ms <= 0 || req->cpu_budget_ms < sb.engine_cpu_ms))
                sb.engine_cpu_ms = req->cpu_budget_ms;
        if (req->tz)
                sb.tz = req->tz;
        so.loaded_cue = req->loaded_cue;
        sb.pooled = req->pooled;
        /* A second box of the run (a nested agent's, asked by the broker):
         * a run id of its own (its cgroup leaf), its node below the tree's
         * box's, so that the run's --memory and --pids bound both. */
        char rid[96];
        if (o->nboxes++ > 0 && so.run_id) {
                snprintf(rid, sizeof(rid), "%.60s-%u", so.run_id, o->nboxes);
                so.run_id = rid;
        }
        const struct cli_box *tree = req->tree;
        if (tree && !tree->ended && tree->w.have_sr)
                sb.cgroup_below = tree->w.sr.cg;
        so.sandbox = &sb;
        int sr = spawn_worker(&so, &b->w, &serr);
        memcpy(o->spawn->banner, so.banner, sizeof(so.banner));
        if (sr < 0) {
                free(b);
                ev->failed(ev->arg, serr, spawn_exit_code(serr) == EXIT_LAYER_UNAVAILABLE);
                err_free(serr);
                *ret_handle = NULL;
                return 0;
        }
        /* Nested runs and tools go below the run's cgroup (one budget). */
        if (o->set_cgroup)
                o->set_cgroup(o->grants, b->w.have_sr ? b->w.sr.cg : NULL);
        /* Tools the monitor starts go below the run's (first worker's) cgroup. */
        if (!o->tools.run_cg && b->w.have_sr && b->w.sr.cg) {
                o->tools.run_cg = b->w.sr.cg;
                b->have_cg = true;
        }
        if ((b->w.notify_fd >= 0 &&
             evloop_io_add(loop, b->w.notify_fd, EPOLLIN, on_notify, b, &b->notify_io, err) < 0) ||
            (req->deadline_at > 0 && evloop_timer_add(loop, req->deadline_at, on_deadline, b, &b->deadline, err) < 0)) {
                b->ev.ended = no_report;
                reap(b, true, BOX_KILLED, 0);
                ev->failed(ev->arg, *err, false);
                err_free(*err);
                *err = NULL;
                *ret_handle = NULL;
                return 0;
        }
        /* The session gets its own descriptors (it closes them); ours go
         * with the worker (worker_finish), so an in-process engine can be
         * woken by shutdown() whatever the session did. */
        int ffd = fcntl(b->w.frame_fd, F_DUPFD_CLOEXEC, 3);
        int efd = b->w.stderr_fd >= 0 ? fcntl(b->w.stderr_fd, F_DUPFD_CLOEXEC, 3) : -1;
        if (ffd < 0 || (b->w.stderr_fd >= 0 && efd < 0)) {
                int e = errno;
                if (ffd >= 0)
                        close(ffd);
                b->ev.ended = no_report;
                reap(b, true, BOX_KILLED, 0);
                err_set(err, e, "start the worker");
                ev->failed(ev->arg, *err, false);
                err_free(*err);
                *err = NULL;
                *ret_handle = NULL;
                return 0;
        }
        *ret_handle = b;
        ev->started(ev->arg, &(struct box_started){ .frame_fd = ffd, .stderr_fd = efd, .banner = o->spawn->banner });
        return 0;
}

static void finish(void *arg, void *handle, bool kill_first)
{
        (void)arg;
        reap(handle, kill_first, kill_first ? BOX_KILLED : BOX_EXITED, 0);
}

static int set_deadline(void *arg, void *handle, double deadline_at, struct err **err)
{
        (void)arg;
        struct cli_box *b = handle;
        if (b->tool || b->ended)
                return err_set(err, EINVAL, "arm the deadline: not a running worker");
        evloop_timer_del(b->loop, b->deadline);
        b->deadline = NULL;
        return deadline_at > 0 ? evloop_timer_add(b->loop, deadline_at, on_deadline, b, &b->deadline, err) : 0;
}

void cli_boxes_setup(struct cli_boxes *o, struct spawn_opts *so)
{
        *o = (struct cli_boxes){ .spawn = so };
        o->provider = (struct box_provider){ .spawn = spawn, .finish = finish, .deadline = set_deadline, .arg = o };
}

int cli_boxes_loaded_fd(void *arg, void *handle)
{
        (void)arg;
        const struct cli_box *b = handle;
        return b->tool ? -1 : b->w.loaded_fd;
}

int cli_boxes_exit_fd(void *arg, void *handle)
{
        (void)arg;
        struct cli_box *b = handle;
        if (b->tool)
                return cli_tool_pidfd(b->tool);
        return b->w.in_process ? -1 : b->w.pidfd;
}
