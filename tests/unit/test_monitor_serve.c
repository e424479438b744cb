/* tests/unit/test_monitor_serve.c — the monitor's channel loop
 * (monitor/serve.c) against a scripted broker on a socketpair, with a fake
 * box provider behind it; and the broker's channel provider
 * (broker/provider.c) driving a real session (runtime/) through
 * monitor_serve to a scripted fake worker. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "broker/config.h"
#include "broker/provider.h"
#include "chan/chan.h"
#include "common/err.h"
#include "common/exit.h"
#include "common/util.h"
#include "effects/effects.h"
#include "monitor/serve.h"
#include "proto/proto.h"
#include "runtime/evloop.h"
#include "runtime/session.h"
#include "sandbox/box.h"

/* ---- the fake box provider (runs on the monitor's thread) ---- */

struct fbox {
        struct fake *f;
        struct box_events ev;
        int exit_r, exit_w;       /* the test writes exit_w: the box "exits" */
        struct evloop *loop;
        struct ev_timer *deadline;
};

struct fake {
        bool fail_layer;
        _Atomic bool oom;         /* the box's counters say it ran out of memory */
        _Atomic int spawns, finished, killed;
        _Atomic int worker_fd;    /* the worker's end of the last box's frame socket */
        _Atomic int exit_w;       /* the last box's exit trigger */
        char tool_argv0[64];      /* the last BOX_TOOL request's */
        long tool_timeout;
        bool tool_host;
        int tool_end[3];          /* the tool's ends of its stdio pipes */
        void *_Atomic tree;       /* the last request's run tree (a box handle, or NULL) */
        void *_Atomic last;       /* the last box's handle */
};

/* The deadline as the monitor's supervisor meets it: the box is killed
 * (its socket ends at once), the report follows a moment later. */
static void fake_deadline(struct evloop *loop, struct ev_timer *t, void *arg)
{
        (void)loop, (void)t;
        struct fbox *b = arg;
        int wfd = b->f->worker_fd;
        b->f->worker_fd = -1;
        close(wfd);
        usleep(200 * 1000);
        struct box_events ev = b->ev;
        int xr = b->exit_r;
        free(b);
        ev.ended(ev.arg, &(struct box_ended){ .reason = BOX_DEADLINE, .wait_status = SIGKILL });
        close(xr);
}

static int fake_spawn(void *arg, struct evloop *loop, const struct box_request *req, const struct box_events *ev,
                      void **ret, struct err **err)
{
        struct fake *f = arg;
        f->spawns++;
        f->tree = req->tree;
        if (f->fail_layer) {
                struct err *e = NULL;
                err_setc(&e, BOX_E_LAYER, 0, "sandbox layer unavailable: fake");
                ev->failed(ev->arg, e, true);
                err_free(e);
                *ret = NULL;
                return 0;
        }
        struct fbox *b = calloc(1, sizeof(*b));
        int sv[2], p[2];
        if (!b || socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0 || pipe2(p, O_CLOEXEC) < 0)
                return err_set(err, errno, "fake spawn");
        b->f = f;
        b->ev = *ev;
        b->exit_r = p[0];
        b->exit_w = p[1];
        b->loop = loop;
        if (req->kind == BOX_TOOL) {
                /* A tool: three pipes, no deadline timer here (the test kills it). */
                snprintf(f->tool_argv0, sizeof(f->tool_argv0), "%s", req->argv[0]);
                f->tool_timeout = req->timeout_ms;
                f->tool_host = req->host;
                int in[2], out[2], er[2];
                if (pipe2(in, O_CLOEXEC) < 0 || pipe2(out, O_CLOEXEC) < 0 || pipe2(er, O_CLOEXEC) < 0)
                        return err_set(err, errno, "fake tool");
                f->tool_end[0] = in[0], f->tool_end[1] = out[1], f->tool_end[2] = er[1];
                close(sv[0]), close(sv[1]);
                f->exit_w = p[1];
                *ret = b;
                ev->started(ev->arg, &(struct box_started){ .frame_fd = -1, .stdin_fd = in[1], .stdout_fd = out[0],
                                                            .stderr_fd = er[0] });
                return 0;
        }
        if (req->deadline_at > 0 && evloop_timer_add(loop, req->deadline_at, fake_deadline, b, &b->deadline, err) < 0)
                return -1;
        f->worker_fd = sv[1];
        f->exit_w = p[1];
        f->last = b;
        *ret = b;
        ev->started(ev->arg, &(struct box_started){ .frame_fd = sv[0], .stderr_fd = -1, .banner = "fake box" });
        return 0;
}

static void fake_finish(void *arg, void *handle, bool kill_first)
{
        struct fake *f = arg;
        struct fbox *b = handle;
        f->finished++;
        if (kill_first)
                f->killed++;
        evloop_timer_del(b->loop, b->deadline);
        struct box_events ev = b->ev;
        close(b->exit_r);
        free(b); /* exit_w and the worker's end stay the test's */
        ev.ended(ev.arg, &(struct box_ended){ .reason = kill_first ? BOX_KILLED : BOX_EXITED,
                                              .wait_status = kill_first ? SIGKILL : 0, .cpu_ms = 12,
                                              .oom_killed = f->oom });
}

static int fake_exit_fd(void *arg, void *handle)
{
        (void)arg;
        return ((struct fbox *)handle)->exit_r;
}

/* ---- the monitor on a thread ---- */

struct mon {
        struct fake fake;
        struct box_provider prov;
        struct monitor_serve ms;
        volatile sig_atomic_t stop;
        pthread_t th;
        int broker;               /* the test's end: the scripted broker */
        int code;
        char msg[1024];
        bool joined;
};

static void *mon_thread(void *arg)
{
        struct mon *m = arg;
        struct err *e = NULL;
        m->code = monitor_serve(&m->ms, &e);
        snprintf(m->msg, sizeof(m->msg), "%s", err_msg(e));
        err_free(e);
        return NULL;
}

static void mon_start(struct mon *m)
{
        memset(m, 0, sizeof(*m));
        m->fake.worker_fd = -1;
        m->fake.exit_w = -1;
        m->prov = (struct box_provider){ .spawn = fake_spawn, .finish = fake_finish, .arg = &m->fake };
        int sv[2];
        assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
        m->broker = sv[1];
        m->ms = (struct monitor_serve){ .chan = sv[0], .boxes = &m->prov, .exit_fd = fake_exit_fd,
                                        .agent_dirfd = -1, .broker_pidfd = -1, .stop = &m->stop,
                                        .welcome_flags = CHAN_WELCOME_ROOTLESS, .grace_ms = 300 };
}

static void mon_run(struct mon *m)
{
        assert_int_equal(pthread_create(&m->th, NULL, mon_thread, m), 0);
}

/* Wait for monitor_serve to return; its exit code. */
static int mon_join(struct mon *m)
{
        if (!m->joined) {
                pthread_join(m->th, NULL);
                m->joined = true;
                close(m->ms.chan);
        }
        return m->code;
}

static void mon_free(struct mon *m)
{
        mon_join(m);
        if (m->broker >= 0)
                close(m->broker);
}

/* ---- the scripted broker ---- */

static void b_send(struct mon *m, union chan_msg *msg, const int *fds, size_t n)
{
        struct err *e = NULL;
        if (chan_send(m->broker, msg, fds, n, &e) < 0)
                fail_msg("send %s: %s", chan_type_name(msg->h.type), err_msg(e));
}

/* The next message from the monitor, of `type`, within 5 s. */
static void b_expect(struct mon *m, uint32_t type, union chan_msg *msg, int *fds, size_t *nfds)
{
        struct pollfd p = { .fd = m->broker, .events = POLLIN };
        assert_int_equal(poll(&p, 1, 5000), 1);
        int tmp[CHAN_MAX_FDS];
        size_t n = 0;
        struct err *e = NULL;
        if (chan_recv(m->broker, CHAN_FROM_MONITOR, msg, fds ? fds : tmp, &n, &e) < 0)
                fail_msg("recv: %s", err_msg(e));
        if (msg->h.type != type)
                fail_msg("got %s, expected %s", chan_type_name(msg->h.type), chan_type_name(type));
        if (nfds)
                *nfds = n;
        else
                for (size_t i = 0; i < n; i++)
                        close(tmp[i]);
}

static void b_hello(struct mon *m)
{
        union chan_msg msg;
        chan_init(&msg, CHAN_HELLO, 1);
        msg.hello.version = CHAN_VERSION;
        b_send(m, &msg, NULL, 0);
        b_expect(m, CHAN_WELCOME, &msg, NULL, NULL);
        assert_int_equal(msg.welcome.flags, CHAN_WELCOME_ROOTLESS);
}

static void b_commit(struct mon *m)
{
        const char *cmds[] = { "/usr/bin/jq" };
        struct err *e = NULL;
        assert_int_equal(chan_boxes_commit(m->broker, 0, "/tmp", cmds, 1, NULL, 0, NULL, 0, &e), 0);
}

static void b_spawn_full(struct mon *m, uint32_t kind, const char *program, uint64_t id, uint32_t deadline,
                         uint32_t flags, uint64_t tree)
{
        const char *spec[] = { program, program };
        int blob = -1;
        struct err *e = NULL;
        assert_int_equal(chan_blob_create("spec", spec, 2, &blob, &e), 0);
        union chan_msg msg;
        chan_init(&msg, CHAN_SPAWN, id);
        msg.spawn.kind = kind;
        msg.spawn.run_tree_id = tree;
        msg.spawn.n_argv = 1;
        msg.spawn.deadline_ms = deadline;
        msg.spawn.flags = flags;
        b_send(m, &msg, &blob, 1);
        close(blob);
}

static void b_spawn_opts(struct mon *m, uint32_t kind, const char *program, uint64_t id, uint32_t deadline,
                         uint32_t flags)
{
        b_spawn_full(m, kind, program, id, deadline, flags, 0);
}

static void b_spawn_in(struct mon *m, uint32_t kind, const char *program, uint64_t id, uint64_t tree)
{
        b_spawn_full(m, kind, program, id, 0, 0, tree);
}

static void b_spawn(struct mon *m, uint32_t kind, const char *program, uint64_t id)
{
        b_spawn_opts(m, kind, program, id, 0, 0);
}

/* SPAWN a worker and take SPAWNED: its box number; frame fd in *ffd. */
static uint64_t b_spawn_worker(struct mon *m, uint64_t id, int *ffd)
{
        b_spawn(m, CHAN_BOX_WORKER, "/usr/lib/chidori/chidori-worker", id);
        union chan_msg msg;
        int fds[CHAN_MAX_FDS];
        size_t n = 0;
        b_expect(m, CHAN_SPAWNED, &msg, fds, &n);
        assert_int_equal(n, 2);
        assert_int_equal(msg.h.id, id);
        assert_string_equal(msg.spawned.banner, "fake box");
        if (ffd)
                *ffd = fds[0];
        else
                close(fds[0]);
        close(fds[1]);
        return msg.spawned.box;
}

static void b_result(struct mon *m, int code)
{
        struct err *e = NULL;
        assert_int_equal(chan_boxes_result(m->broker, code, &e), 0);
}

/* ---- the monitor's loop ---- */

/* The whole conversation: the descriptors handed over are the box's, a box
 * that exits on its own is reaped (not killed), KILL kills, RESULT's code
 * is the monitor's. */
static void serve_happy_path(void **state)
{
        (void)state;
        struct mon m;
        mon_start(&m);
        mon_run(&m);
        b_hello(&m);
        b_commit(&m);
        int ffd = -1;
        assert_int_equal(b_spawn_worker(&m, 7, &ffd), 1);
        /* The frame socket SPAWNED carried is the box's. */
        assert_int_equal(write(ffd, "ping", 4), 4);
        char buf[8] = { 0 };
        assert_int_equal(read(m.fake.worker_fd, buf, sizeof(buf)), 4);
        assert_string_equal(buf, "ping");
        close(ffd);
        close(m.fake.worker_fd);
        /* The box exits on its own. */
        assert_int_equal(write(m.fake.exit_w, "x", 1), 1);
        union chan_msg msg;
        b_expect(&m, CHAN_BOX_ENDED, &msg, NULL, NULL);
        assert_int_equal(msg.box_ended.box, 1);
        assert_int_equal(msg.box_ended.reason, CHAN_END_EXITED);
        assert_int_equal(msg.box_ended.cpu_ms, 12);
        assert_int_equal(m.fake.killed, 0);
        close(m.fake.exit_w);
        /* A second box, killed. */
        assert_int_equal(b_spawn_worker(&m, 8, NULL), 2);
        close(m.fake.worker_fd);
        chan_init(&msg, CHAN_KILL, 0);
        msg.kill.box = 2;
        b_send(&m, &msg, NULL, 0);
        b_expect(&m, CHAN_BOX_ENDED, &msg, NULL, NULL);
        assert_int_equal(msg.box_ended.box, 2);
        assert_int_equal(msg.box_ended.reason, CHAN_END_KILLED);
        assert_int_equal(msg.box_ended.wait_status, SIGKILL);
        assert_int_equal(m.fake.killed, 1);
        close(m.fake.exit_w);
        /* A third, out of memory, killed at the broker's request after its
         * socket closed: the report still says OOM (the outcome's "memory
         * limit exceeded", not a crash). */
        m.fake.oom = true;
        assert_int_equal(b_spawn_worker(&m, 9, NULL), 3);
        close(m.fake.worker_fd);
        chan_init(&msg, CHAN_KILL, 0);
        msg.kill.box = 3;
        b_send(&m, &msg, NULL, 0);
        b_expect(&m, CHAN_BOX_ENDED, &msg, NULL, NULL);
        assert_int_equal(msg.box_ended.reason, CHAN_END_OOM);
        close(m.fake.exit_w);
        b_result(&m, 3);
        assert_int_equal(mon_join(&m), 3);
        assert_string_equal(m.msg, "");
        assert_int_equal(m.fake.spawns, 3);
        mon_free(&m);
}

/* A SPAWN before COMMIT, or of a tool the COMMIT did not name, without a
 * timeout or outside a box it did not allow, is refused (SPAWN_FAILED, code
 * 100) and nothing starts; a committed tool starts with its stdio. */
static void serve_spawn_refused(void **state)
{
        (void)state;
        struct mon m;
        mon_start(&m);
        mon_run(&m);
        b_hello(&m);
        union chan_msg msg;
        b_spawn(&m, CHAN_BOX_WORKER, "/w", 1);
        b_expect(&m, CHAN_SPAWN_FAILED, &msg, NULL, NULL);
        assert_int_equal(msg.spawn_failed.code, CHAN_SPAWN_E_REFUSED);
        assert_non_null(strstr(msg.spawn_failed.message, "COMMIT"));
        b_commit(&m);
        b_spawn(&m, CHAN_BOX_TOOL, "/bin/sh", 2);
        b_expect(&m, CHAN_SPAWN_FAILED, &msg, NULL, NULL);
        assert_int_equal(msg.h.id, 2);
        assert_int_equal(msg.spawn_failed.code, CHAN_SPAWN_E_REFUSED);
        b_spawn(&m, CHAN_BOX_TOOL, "/usr/bin/jq", 3);
        b_expect(&m, CHAN_SPAWN_FAILED, &msg, NULL, NULL);
        assert_non_null(strstr(msg.spawn_failed.message, "without a timeout"));
        /* Outside a box, when the COMMIT allowed none. */
        b_spawn_opts(&m, CHAN_BOX_TOOL, "/usr/bin/jq", 3, 500, CHAN_SPAWN_HOST);
        b_expect(&m, CHAN_SPAWN_FAILED, &msg, NULL, NULL);
        assert_non_null(strstr(msg.spawn_failed.message, "allows no \"sandbox\": false tool"));
        assert_int_equal(m.fake.spawns, 0);
        /* A committed tool: the provider's BOX_TOOL, its stdio as SPAWNED's
         * three descriptors; KILL ends it. */
        b_spawn_opts(&m, CHAN_BOX_TOOL, "/usr/bin/jq", 5, 500, 0);
        int fds[CHAN_MAX_FDS];
        size_t nfds = 0;
        b_expect(&m, CHAN_SPAWNED, &msg, fds, &nfds);
        assert_int_equal(msg.spawned.kind, CHAN_BOX_TOOL);
        assert_int_equal(nfds, 3);
        assert_string_equal(m.fake.tool_argv0, "/usr/bin/jq");
        assert_int_equal(m.fake.tool_timeout, 500);
        assert_false(m.fake.tool_host);
        assert_int_equal(write(fds[0], "{}\n", 3), 3);  /* its stdin */
        char buf[8];
        assert_int_equal(read(m.fake.tool_end[0], buf, sizeof(buf)), 3);
        assert_int_equal(write(m.fake.tool_end[1], "1", 1), 1);  /* its stdout */
        assert_int_equal(read(fds[1], buf, sizeof(buf)), 1);
        for (int i = 0; i < 3; i++)
                close(fds[i]), close(m.fake.tool_end[i]);
        uint64_t box = msg.spawned.box;
        chan_init(&msg, CHAN_KILL, 0);
        msg.kill.box = box;
        b_send(&m, &msg, NULL, 0);
        b_expect(&m, CHAN_BOX_ENDED, &msg, NULL, NULL);
        assert_int_equal(msg.box_ended.box, box);
        assert_int_equal(msg.box_ended.reason, CHAN_END_KILLED);
        close(m.fake.exit_w);
        m.fake.spawns = 0;
        /* A box that cannot start: the provider's failure, layer code kept. */
        m.fake.fail_layer = true;
        b_spawn(&m, CHAN_BOX_WORKER, "/w", 4);
        b_expect(&m, CHAN_SPAWN_FAILED, &msg, NULL, NULL);
        assert_int_equal(msg.spawn_failed.code, BOX_E_LAYER);
        assert_non_null(strstr(msg.spawn_failed.message, "sandbox layer unavailable"));
        b_result(&m, 0);
        assert_int_equal(mon_join(&m), 0);
        mon_free(&m);
}

/* ---- bundle boxes: a fake bundle_start that "runs" and exits at once ---- */

static char bundle_dir[256];
static _Atomic int bundle_starts, bundle_finishes;

static int fake_bundle_start(void *arg, const char *esbuild, char *const *argv, const char *dir, void **ret,
                             int fds[4], int *ret_exit_fd, struct err **err)
{
        (void)arg, (void)esbuild, (void)argv;
        bundle_starts++;
        snprintf(bundle_dir, sizeof(bundle_dir), "%s", dir);
        int p[5][2];
        for (int i = 0; i < 5; i++)
                if (pipe2(p[i], O_CLOEXEC) < 0)
                        return err_set(err, errno, "fake bundle");
        /* stdin: the caller writes p[0][1]; stdout says "bundle". */
        fds[0] = p[0][1], close(p[0][0]);
        assert_int_equal(write(p[1][1], "bundle", 6), 6);
        for (int i = 1; i < 4; i++)
                fds[i] = p[i][0], close(p[i][1]);
        close(p[4][1]); /* it has exited */
        int *x = malloc(sizeof(int));
        *x = p[4][0];
        *ret = x;
        *ret_exit_fd = p[4][0];
        return 0;
}

static void fake_bundle_finish(void *arg, void *handle, bool kill_first, struct box_ended *ret)
{
        (void)arg;
        bundle_finishes++;
        close(*(int *)handle);
        free(handle);
        *ret = (struct box_ended){ .reason = kill_first ? BOX_KILLED : BOX_EXITED };
}

/* SPAWN {bundle}: spec = program, argv ("esbuild", args...), env, binds. */
static void b_bundle(struct mon *m, const char *program, const char *arg, const char *env, const char *bind,
                     uint64_t id)
{
        const char *spec[6];
        size_t n = 0;
        spec[n++] = program;
        spec[n++] = "esbuild";
        spec[n++] = "--bundle";
        if (arg)
                spec[n++] = arg;
        size_t nargv = n - 1;
        if (env)
                spec[n++] = env;
        if (bind)
                spec[n++] = bind;
        int blob = -1;
        struct err *e = NULL;
        assert_int_equal(chan_blob_create("spec", spec, n, &blob, &e), 0);
        union chan_msg msg;
        chan_init(&msg, CHAN_SPAWN, id);
        msg.spawn.kind = CHAN_BOX_BUNDLE;
        msg.spawn.n_argv = (uint32_t)nargv;
        msg.spawn.n_env = env ? 1 : 0;
        msg.spawn.n_binds = bind ? 1 : 0;
        b_send(m, &msg, &blob, 1);
        close(blob);
}

static void b_bundle_refused(struct mon *m, const char *program, const char *arg, const char *env, const char *bind,
                             const char *why)
{
        union chan_msg msg;
        b_bundle(m, program, arg, env, bind, 7);
        b_expect(m, CHAN_SPAWN_FAILED, &msg, NULL, NULL);
        assert_int_equal(msg.h.id, 7);
        assert_int_equal(msg.spawn_failed.code, CHAN_SPAWN_E_REFUSED);
        if (!strstr(msg.spawn_failed.message, why))
                fail_msg("'%s' does not say '%s'", msg.spawn_failed.message, why);
}

/* A bundle SPAWN: only the monitor's esbuild, no env, options only, one
 * read-only bind of the agent folder (or below it); then esbuild's box with
 * four descriptors, and BOX_ENDED when it exits.  Without an esbuild the
 * monitor says so. */
static void serve_spawn_bundle(void **state)
{
        (void)state;
        struct mon m;
        union chan_msg msg;
        mon_start(&m);
        mon_run(&m);
        b_hello(&m);
        b_commit(&m);
        b_bundle(&m, "/opt/esbuild", NULL, NULL, "ro:/tmp", 3);
        b_expect(&m, CHAN_SPAWN_FAILED, &msg, NULL, NULL);
        assert_int_equal(msg.spawn_failed.code, CHAN_SPAWN_E_NO_BUNDLER);
        b_result(&m, 0);
        assert_int_equal(mon_join(&m), 0);
        mon_free(&m);

        mon_start(&m);
        m.ms.esbuild = "/opt/esbuild";
        m.ms.bundle_deadline_ms = 60000;
        m.ms.bundle_start = fake_bundle_start;
        m.ms.bundle_finish = fake_bundle_finish;
        m.ms.agent_dir = "/tmp/sub"; /* the monitor's own: the COMMIT's "/tmp" is the broker's word */
        mon_run(&m);
        b_hello(&m);
        b_bundle_refused(&m, "/opt/esbuild", NULL, NULL, "ro:/tmp", "before COMMIT");
        b_commit(&m);
        b_bundle_refused(&m, "/bin/sh", NULL, NULL, "ro:/tmp", "not the esbuild the monitor found");
        b_bundle_refused(&m, "/opt/esbuild", "/etc/passwd", NULL, "ro:/tmp", "not an option");
        b_bundle_refused(&m, "/opt/esbuild", NULL, "A=1", "ro:/tmp", "no environment");
        b_bundle_refused(&m, "/opt/esbuild", NULL, NULL, "ro:/etc", "agent folder");
        b_bundle_refused(&m, "/opt/esbuild", NULL, NULL, "ro:/tmpx", "agent folder");
        b_bundle_refused(&m, "/opt/esbuild", NULL, NULL, "ro:/tmp/../etc", "agent folder");
        b_bundle_refused(&m, "/opt/esbuild", NULL, NULL, "rw:/tmp", "agent folder");
        b_bundle_refused(&m, "/opt/esbuild", NULL, NULL, NULL, "agent folder");
        b_bundle_refused(&m, "/opt/esbuild", NULL, NULL, "ro:/tmp", "is not the agent's folder");
        assert_int_equal(bundle_starts, 0);
        b_bundle(&m, "/opt/esbuild", "--outfile=/dev/stdout", NULL, "ro:/tmp/sub", 8);
        int fds[CHAN_MAX_FDS];
        size_t n = 0;
        b_expect(&m, CHAN_SPAWNED, &msg, fds, &n);
        assert_int_equal(msg.h.id, 8);
        assert_int_equal(msg.spawned.kind, CHAN_BOX_BUNDLE);
        assert_int_equal(n, 4);
        assert_string_equal(bundle_dir, "/tmp/sub");
        char buf[16] = "";
        assert_int_equal(read(fds[1], buf, sizeof(buf)), 6);
        assert_memory_equal(buf, "bundle", 6);
        uint64_t box = msg.spawned.box;
        b_expect(&m, CHAN_BOX_ENDED, &msg, NULL, NULL);
        assert_int_equal(msg.box_ended.box, box);
        assert_int_equal(msg.box_ended.reason, CHAN_END_EXITED);
        for (size_t i = 0; i < n; i++)
                close(fds[i]);
        b_result(&m, 0);
        assert_int_equal(mon_join(&m), 0);
        assert_int_equal(bundle_starts, 1);
        assert_int_equal(bundle_finishes, 1);
        mon_free(&m);
}

/* One run tree: while the run's first box runs, a second one (a nested
 * agent's) must name it and is placed in it; one that names none, or
 * another, is refused; with the first ended, a new box starts a new tree. */
static void serve_run_tree(void **state)
{
        (void)state;
        struct mon m;
        mon_start(&m);
        mon_run(&m);
        b_hello(&m);
        b_commit(&m);
        assert_int_equal(b_spawn_worker(&m, 1, NULL), 1);
        assert_null(m.fake.tree);
        void *first = m.fake.last;
        int first_exit = m.fake.exit_w, first_worker = m.fake.worker_fd;
        union chan_msg msg;
        b_spawn_in(&m, CHAN_BOX_WORKER, "/w", 2, 0);
        b_expect(&m, CHAN_SPAWN_FAILED, &msg, NULL, NULL);
        assert_int_equal(msg.spawn_failed.code, CHAN_SPAWN_E_REFUSED);
        assert_non_null(strstr(msg.spawn_failed.message, "the run's tree is box 1"));
        b_spawn_in(&m, CHAN_BOX_WORKER, "/w", 3, 7);
        b_expect(&m, CHAN_SPAWN_FAILED, &msg, NULL, NULL);
        assert_int_equal(m.fake.spawns, 1);
        b_spawn_in(&m, CHAN_BOX_WORKER, "/w", 4, 1);
        int fds[CHAN_MAX_FDS];
        size_t n = 0;
        b_expect(&m, CHAN_SPAWNED, &msg, fds, &n);
        for (size_t i = 0; i < n; i++)
                close(fds[i]);
        assert_int_equal(msg.spawned.box, 2);
        assert_ptr_equal(m.fake.tree, first);
        close(m.fake.worker_fd);
        /* The first box exits: a box naming it is refused, one naming none
         * starts a tree of its own. */
        assert_int_equal(write(first_exit, "x", 1), 1);
        b_expect(&m, CHAN_BOX_ENDED, &msg, NULL, NULL);
        assert_int_equal(msg.box_ended.box, 1);
        b_spawn_in(&m, CHAN_BOX_WORKER, "/w", 5, 1);
        b_expect(&m, CHAN_SPAWN_FAILED, &msg, NULL, NULL);
        assert_non_null(strstr(msg.spawn_failed.message, "no such box runs"));
        assert_int_equal(b_spawn_worker(&m, 6, NULL), 3);
        assert_null(m.fake.tree);
        close(m.fake.worker_fd);
        close(first_worker);
        close(first_exit);
        b_result(&m, 0);
        assert_int_equal(mon_join(&m), 0);
        assert_string_equal(m.msg, "");
        mon_free(&m);
}

/* chidori serve (many_trees): a worker naming no tree starts a tree of its
 * own while others run, at most max_trees at once; one naming a running
 * tree's first box joins it, one naming a box that is no tree's first is
 * refused; every stop signal goes to the broker as a STOP. */
static void serve_many_trees(void **state)
{
        (void)state;
        struct mon m;
        mon_start(&m);
        volatile sig_atomic_t count = 0;
        m.ms.many_trees = true;
        m.ms.max_trees = 2;
        m.ms.stop_count = &count;
        m.ms.grace_ms = 30000;
        mon_run(&m);
        b_hello(&m);
        b_commit(&m);
        int keep[8], nkeep = 0;
        assert_int_equal(b_spawn_worker(&m, 1, NULL), 1);
        void *first = m.fake.last;
        keep[nkeep++] = m.fake.exit_w, keep[nkeep++] = m.fake.worker_fd;
        assert_int_equal(b_spawn_worker(&m, 2, NULL), 2);
        assert_null(m.fake.tree);
        keep[nkeep++] = m.fake.exit_w, keep[nkeep++] = m.fake.worker_fd;
        union chan_msg msg;
        b_spawn_in(&m, CHAN_BOX_WORKER, "/w", 3, 0);
        b_expect(&m, CHAN_SPAWN_FAILED, &msg, NULL, NULL);
        assert_int_equal(msg.spawn_failed.code, CHAN_SPAWN_E_REFUSED);
        assert_non_null(strstr(msg.spawn_failed.message, "2 x --max-running"));
        assert_int_equal(m.fake.spawns, 2);
        int fds[CHAN_MAX_FDS];
        size_t n = 0;
        b_spawn_in(&m, CHAN_BOX_WORKER, "/w", 4, 1);
        b_expect(&m, CHAN_SPAWNED, &msg, fds, &n);
        for (size_t i = 0; i < n; i++)
                close(fds[i]);
        assert_int_equal(msg.spawned.box, 3);
        assert_ptr_equal(m.fake.tree, first);
        keep[nkeep++] = m.fake.exit_w, keep[nkeep++] = m.fake.worker_fd;
        b_spawn_in(&m, CHAN_BOX_WORKER, "/w", 5, 3);
        b_expect(&m, CHAN_SPAWN_FAILED, &msg, NULL, NULL);
        assert_non_null(strstr(msg.spawn_failed.message, "no such box runs"));
        /* The first tree's first box exits: a new tree may start. */
        assert_int_equal(write(keep[0], "x", 1), 1);
        b_expect(&m, CHAN_BOX_ENDED, &msg, NULL, NULL);
        assert_int_equal(msg.box_ended.box, 1);
        assert_int_equal(b_spawn_worker(&m, 6, NULL), 4);
        keep[nkeep++] = m.fake.exit_w, keep[nkeep++] = m.fake.worker_fd;
        /* Two stop signals: two STOPs (the broker drains, then stops). */
        count = 1;
        m.stop = SIGTERM;
        b_expect(&m, CHAN_STOP, &msg, NULL, NULL);
        assert_int_equal(msg.stop.signal, SIGTERM);
        count = 2;
        b_expect(&m, CHAN_STOP, &msg, NULL, NULL);
        b_result(&m, 0);
        assert_int_equal(mon_join(&m), 0);
        for (int i = 0; i < nkeep; i++)
                if (keep[i] >= 0)
                        close(keep[i]);
        mon_free(&m);
}

/* A broker that breaks the protocol: every box is killed, exit 70 naming it. */
static void serve_protocol_break(void **state)
{
        (void)state;
        struct mon m;
        mon_start(&m);
        mon_run(&m);
        b_hello(&m);
        b_commit(&m);
        b_spawn_worker(&m, 1, NULL);
        close(m.fake.worker_fd);
        struct chan_hdr bad = { .type = CHAN_KILL, .len = 5, .id = 0 };
        assert_int_equal(send(m.broker, &bad, sizeof(bad), 0), (ssize_t)sizeof(bad));
        assert_int_equal(mon_join(&m), EXIT_PROTOCOL);
        assert_non_null(strstr(m.msg, "the broker (chidori-broker) broke the protocol"));
        assert_non_null(strstr(m.msg, "every box was killed"));
        assert_int_equal(m.fake.killed, 1);
        close(m.fake.exit_w);
        mon_free(&m);
}

/* Out of order: a message before HELLO, a KILL of a box never given. */
static void serve_out_of_order(void **state)
{
        (void)state;
        struct mon m;
        mon_start(&m);
        mon_run(&m);
        b_commit(&m);
        assert_int_equal(mon_join(&m), EXIT_PROTOCOL);
        assert_non_null(strstr(m.msg, "sent COMMIT before HELLO"));
        mon_free(&m);

        mon_start(&m);
        mon_run(&m);
        b_hello(&m);
        union chan_msg msg;
        chan_init(&msg, CHAN_KILL, 0);
        msg.kill.box = 9;
        b_send(&m, &msg, NULL, 0);
        assert_int_equal(mon_join(&m), EXIT_PROTOCOL);
        assert_non_null(strstr(m.msg, "KILL box 9, which it was never given"));
        mon_free(&m);
}

/* The broker closes the channel (or dies) without a RESULT: 70, its own
 * end named, boxes killed. */
static void serve_broker_dies(void **state)
{
        (void)state;
        struct mon m;
        mon_start(&m);
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0)
                _exit(3);
        int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
        assert_true(pidfd >= 0);
        m.ms.broker_pidfd = pidfd;
        mon_run(&m);
        b_hello(&m);
        b_commit(&m);
        b_spawn_worker(&m, 1, NULL);
        close(m.fake.worker_fd);
        close(m.broker);
        m.broker = -1;
        assert_int_equal(mon_join(&m), EXIT_PROTOCOL);
        assert_non_null(strstr(m.msg, "closed the channel without a result (it exited with status 3)"));
        assert_int_equal(m.fake.killed, 1);
        /* Reaped by the monitor. */
        assert_int_equal(waitpid(pid, NULL, WNOHANG), -1);
        assert_int_equal(errno, ECHILD);
        close(pidfd);
        close(m.fake.exit_w);
        mon_free(&m);
}

/* SIGTERM: STOP goes to the broker, whose RESULT is the exit code; a
 * broker that does not answer is killed after the grace period (128+sig). */
static void serve_stop(void **state)
{
        (void)state;
        struct mon m;
        mon_start(&m);
        mon_run(&m);
        b_hello(&m);
        m.stop = SIGTERM;
        union chan_msg msg;
        b_expect(&m, CHAN_STOP, &msg, NULL, NULL);
        assert_int_equal(msg.stop.signal, SIGTERM);
        b_result(&m, 143);
        assert_int_equal(mon_join(&m), 143);
        assert_string_equal(m.msg, "");
        mon_free(&m);

        mon_start(&m);
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                pause();
                _exit(0);
        }
        int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
        m.ms.broker_pidfd = pidfd;
        mon_run(&m);
        b_hello(&m);
        b_commit(&m);
        b_spawn_worker(&m, 1, NULL);
        close(m.fake.worker_fd);
        m.stop = SIGINT;
        b_expect(&m, CHAN_STOP, &msg, NULL, NULL);
        assert_int_equal(mon_join(&m), 128 + SIGINT);
        assert_non_null(strstr(m.msg, "did not end the run within 300 ms"));
        assert_int_equal(m.fake.killed, 1);
        int st = 0;
        assert_int_equal(waitpid(pid, &st, WNOHANG), -1); /* killed and reaped */
        close(pidfd);
        close(m.fake.exit_w);
        mon_free(&m);
}

/* The worker started ahead: the first worker SPAWN of its posture takes
 * it (no second box); one of another posture kills it unreported. */
static void serve_prestart(void **state)
{
        (void)state;
        struct mon m;
        mon_start(&m);
        m.ms.prestart = (struct monitor_prestart){ .on = true, .no_jit = true };
        mon_run(&m);
        b_hello(&m);
        b_commit(&m);
        /* Started before any SPAWN. */
        for (int i = 0; i < 500 && m.fake.spawns < 1; i++)
                usleep(10 * 1000);
        assert_int_equal(m.fake.spawns, 1);
        int ffd = -1;
        assert_int_equal(b_spawn_worker(&m, 5, &ffd), 1);
        assert_int_equal(m.fake.spawns, 1);
        assert_int_equal(write(ffd, "ping", 4), 4);
        char buf[8] = { 0 };
        assert_int_equal(read(m.fake.worker_fd, buf, sizeof(buf)), 4);
        assert_string_equal(buf, "ping");
        close(ffd);
        close(m.fake.worker_fd);
        b_result(&m, 0);
        assert_int_equal(mon_join(&m), 0);
        close(m.fake.exit_w);
        mon_free(&m);

        mon_start(&m);
        m.ms.prestart = (struct monitor_prestart){ .on = true, .no_jit = false, .cpu_budget_ms = 60000 };
        mon_run(&m);
        b_hello(&m);
        b_commit(&m);
        int first_worker = -1;
        /* The SPAWN asks for the JIT off: another box; the early one is
         * killed and its end never reaches the broker (b_expect would see
         * BOX_ENDED before SPAWNED). */
        for (int i = 0; i < 500 && m.fake.spawns < 1; i++)
                usleep(10 * 1000);
        first_worker = m.fake.worker_fd;
        assert_int_equal(b_spawn_worker(&m, 6, NULL), 2);
        assert_int_equal(m.fake.spawns, 2);
        assert_int_equal(m.fake.killed, 1);
        close(first_worker);
        close(m.fake.worker_fd);
        b_result(&m, 0);
        assert_int_equal(mon_join(&m), 0);
        mon_free(&m);

        /* The early worker ends on its own (killed from outside, a crash)
         * before the broker asks: the SPAWN gets it, what it wrote, and
         * its end — never a second worker in its place. */
        mon_start(&m);
        m.ms.prestart = (struct monitor_prestart){ .on = true, .no_jit = true };
        mon_run(&m);
        b_hello(&m);
        b_commit(&m);
        for (int i = 0; i < 500 && m.fake.spawns < 1; i++)
                usleep(10 * 1000);
        assert_int_equal(write(m.fake.worker_fd, "last", 4), 4);
        close(m.fake.worker_fd);
        close(m.fake.exit_w); /* it exits */
        for (int i = 0; i < 500 && m.fake.finished < 1; i++)
                usleep(10 * 1000);
        assert_int_equal(m.fake.finished, 1);
        int dfd = -1;
        assert_int_equal(b_spawn_worker(&m, 7, &dfd), 1);
        assert_int_equal(m.fake.spawns, 1);
        union chan_msg msg;
        b_expect(&m, CHAN_BOX_ENDED, &msg, NULL, NULL);
        assert_int_equal(msg.box_ended.box, 1);
        assert_int_equal(msg.box_ended.reason, CHAN_END_EXITED);
        char got[8] = { 0 };
        assert_int_equal(read(dfd, got, sizeof(got)), 4);
        assert_string_equal(got, "last");
        assert_int_equal(read(dfd, got, sizeof(got)), 0);
        close(dfd);
        b_result(&m, 137);
        assert_int_equal(mon_join(&m), 137);
        assert_int_equal(m.fake.killed, 0);
        mon_free(&m);
}

/* OPEN_AGENT (chidori replay without --agent): taken once, only when the
 * run says so; its folder becomes the agent folder for OPEN_AGENT_FILE. */
static void serve_open_agent(void **state)
{
        (void)state;
        char dir[] = "/tmp/chidori-test-serve.XXXXXX";
        assert_non_null(mkdtemp(dir));
        char path[128], other[128];
        snprintf(path, sizeof(path), "%s/a.js", dir);
        FILE *f = fopen(path, "w");
        fputs("hi", f);
        fclose(f);
        snprintf(other, sizeof(other), "%s/b.js", dir);
        f = fopen(other, "w");
        fputs("bee", f);
        fclose(f);
        struct mon m;
        struct err *e = NULL;
        /* Not a replay without --agent: refused, the broker is broken. */
        mon_start(&m);
        mon_run(&m);
        b_hello(&m);
        union chan_msg msg;
        chan_init(&msg, CHAN_OPEN_AGENT, 1);
        snprintf(msg.open_agent.path, sizeof(msg.open_agent.path), "%s", path);
        b_send(&m, &msg, NULL, 0);
        assert_int_equal(mon_join(&m), 70);
        assert_non_null(strstr(m.msg, "sent OPEN_AGENT, which this run does not take"));
        mon_free(&m);
        /* A replay's: the agent, then its folder's files; a second one is refused. */
        mon_start(&m);
        m.ms.agent_from_broker = true;
        mon_run(&m);
        b_hello(&m);
        assert_int_equal(chan_boxes_open(m.broker, "b.js", NULL, &e), -1); /* no folder yet */
        assert_int_equal(e->errnum, EACCES);
        err_free(e);
        e = NULL;
        int fd = chan_boxes_open_agent(m.broker, path, NULL, &e);
        assert_true(fd >= 0);
        char buf[8] = { 0 };
        assert_int_equal(read(fd, buf, sizeof(buf)), 2);
        assert_string_equal(buf, "hi");
        close(fd);
        fd = chan_boxes_open(m.broker, "b.js", NULL, &e);
        assert_true(fd >= 0);
        close(fd);
        snprintf(msg.open_agent.path, sizeof(msg.open_agent.path), "%s", other);
        b_send(&m, &msg, NULL, 0);
        assert_int_equal(mon_join(&m), 70);
        assert_non_null(strstr(m.msg, "(or twice)"));
        mon_free(&m);
        unlink(path);
        unlink(other);
        rmdir(dir);
}

/* OPEN_AGENT_FILE: a file beneath the agent folder, nothing outside it. */
static void serve_open_agent_file(void **state)
{
        (void)state;
        char dir[] = "/tmp/chidori-test-serve.XXXXXX";
        assert_non_null(mkdtemp(dir));
        char path[128];
        snprintf(path, sizeof(path), "%s/a.js", dir);
        FILE *f = fopen(path, "w");
        fputs("hi", f);
        fclose(f);
        snprintf(path, sizeof(path), "%s/sub", dir);
        assert_int_equal(mkdir(path, 0700), 0);
        struct mon m;
        mon_start(&m);
        m.ms.agent_dirfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
        mon_run(&m);
        b_hello(&m);
        struct err *e = NULL;
        int fd = chan_boxes_open(m.broker, "a.js", NULL, &e);
        assert_true(fd >= 0);
        char buf[8] = { 0 };
        assert_int_equal(read(fd, buf, sizeof(buf)), 2);
        assert_string_equal(buf, "hi");
        close(fd);
        assert_int_equal(chan_boxes_open(m.broker, "../../etc/passwd", NULL, &e), -1);
        assert_int_equal(e->errnum, EXDEV);
        assert_int_equal(chan_boxes_open(m.broker, "sub", NULL, &e), -1);
        assert_int_equal(e->errnum, EINVAL);
        err_free(e);
        b_result(&m, 0);
        assert_int_equal(mon_join(&m), 0);
        close(m.ms.agent_dirfd);
        mon_free(&m);
        rmdir(path);
        snprintf(path, sizeof(path), "%s/a.js", dir);
        unlink(path);
        rmdir(dir);
}

/* ---- the broker's provider: a session through the channel ---- */

struct sess {
        struct mon m;
        struct evloop *loop;
        struct chan_boxes cb;
        struct session_config cfg;
        struct session_sink sink;
        struct session *s;
        int stopped;
        char broken[256];
};

static void s_stop(void *arg, int sig)
{
        struct sess *t = arg;
        t->stopped = sig;
        session_cancel(t->s, "interrupted");
}

static void s_broken(void *arg, const char *why)
{
        struct sess *t = arg;
        snprintf(t->broken, sizeof(t->broken), "%s", why);
}

static void s_start(struct sess *t, long deadline_ms)
{
        memset(t, 0, sizeof(*t));
        mon_start(&t->m);
        mon_run(&t->m);
        struct err *e = NULL;
        unsigned flags = 0;
        assert_int_equal(chan_boxes_hello(t->m.broker, &flags, &e), 0);
        assert_int_equal(flags, CHAN_WELCOME_ROOTLESS);
        assert_int_equal(chan_boxes_commit(t->m.broker, 0, "/tmp", NULL, 0, NULL, 0, NULL, 0, &e), 0);
        assert_int_equal(evloop_new(&t->loop, &e), 0);
        assert_int_equal(chan_boxes_init(&t->cb, t->m.broker, t->loop, &e), 0);
        t->cb.on_stop = s_stop;
        t->cb.on_broken = s_broken;
        t->cb.cb_arg = t;
        t->cfg = (struct session_config){ .script = "", .filename = "agent.js", .run_id = "run-test",
                                          .effects = &effects_table, .deadline_ms = deadline_ms };
        t->sink = (struct session_sink){ .arg = t };
        assert_int_equal(session_new(t->loop, &t->cfg, &t->sink, &t->cb.provider, &t->s, &e), 0);
        assert_int_equal(session_start(t->s, &e), 0);
}

static void s_pump_until(struct sess *t, bool (*cond)(struct sess *))
{
        double until = mono_ms() + 5000;
        struct err *e = NULL;
        while (!cond(t) && mono_ms() < until)
                assert_int_equal(evloop_run_once(t->loop, 10, &e), 0);
        assert_true(cond(t));
}

static bool worker_there(struct sess *t)
{
        return t->m.fake.worker_fd >= 0 && session_state(t->s) == SESSION_RUNNING;
}

static bool ended(struct sess *t)
{
        return session_state(t->s) == SESSION_ENDED;
}

static bool broken_seen(struct sess *t)
{
        return t->broken[0] != '\0';
}

static void w_send(int fd, const char *json)
{
        struct err *e = NULL;
        assert_int_equal(frame_write_raw(fd, json, strlen(json), &e), 0);
}

static void s_free(struct sess *t)
{
        session_free(t->s);
        chan_boxes_free(&t->cb);
        evloop_free(t->loop);
        if (t->m.fake.worker_fd >= 0)
                close(t->m.fake.worker_fd);
        if (t->m.fake.exit_w >= 0)
                close(t->m.fake.exit_w);
        mon_free(&t->m);
}

/* A run: the session's box comes through SPAWN/SPAWNED, its value through
 * the frames, its end through BOX_ENDED after the worker exits; RESULT. */
static void provider_session_done(void **state)
{
        (void)state;
        struct sess t;
        s_start(&t, 0);
        s_pump_until(&t, worker_there);
        assert_string_equal(t.cb.banner, "fake box");
        int wfd = t.m.fake.worker_fd;
        w_send(wfd, "{\"type\":\"ready\",\"protocol\":1}");
        w_send(wfd, "{\"type\":\"done\",\"ok\":true,\"value\":42}");
        /* Not killed: the box ends when the worker exits. */
        double until = mono_ms() + 300;
        struct err *e = NULL;
        while (mono_ms() < until)
                assert_int_equal(evloop_run_once(t.loop, 10, &e), 0);
        assert_int_not_equal(session_state(t.s), SESSION_ENDED);
        assert_int_equal(t.m.fake.finished, 0);
        assert_int_equal(write(t.m.fake.exit_w, "x", 1), 1);
        s_pump_until(&t, ended);
        struct session_outcome *o = session_outcome(t.s);
        assert_int_equal(o->end, SESSION_END_DONE_OK);
        char *v = cJSON_PrintUnformatted(o->value);
        assert_string_equal(v, "42");
        free(v);
        assert_true(o->cpu_ms == 12);
        assert_int_equal(t.m.fake.killed, 0);
        assert_int_equal(chan_boxes_result(t.m.broker, 0, &e), 0);
        assert_int_equal(mon_join(&t.m), 0);
        s_free(&t);
}

/* STOP from the monitor cancels the session: the box is killed through
 * KILL, BOX_ENDED ends the session, RESULT goes back. */
static void provider_session_stop(void **state)
{
        (void)state;
        struct sess t;
        s_start(&t, 0);
        s_pump_until(&t, worker_there);
        t.m.stop = SIGINT;
        s_pump_until(&t, ended);
        assert_int_equal(t.stopped, SIGINT);
        assert_int_equal(session_outcome(t.s)->end, SESSION_END_INTERRUPTED);
        assert_int_equal(t.m.fake.killed, 1);
        struct err *e = NULL;
        assert_int_equal(chan_boxes_result(t.m.broker, 130, &e), 0);
        assert_int_equal(mon_join(&t.m), 130);
        s_free(&t);
}

/* The deadline: the monitor kills the box, whose socket ends before
 * BOX_ENDED {DEADLINE} arrives: the run still ends DEADLINE, not as a
 * crash (EOF). */
static void provider_session_deadline(void **state)
{
        (void)state;
        struct sess t;
        s_start(&t, 300);
        s_pump_until(&t, ended);
        assert_int_equal(session_outcome(t.s)->end, SESSION_END_DEADLINE);
        struct err *e = NULL;
        assert_int_equal(chan_boxes_result(t.m.broker, 124, &e), 0);
        assert_int_equal(mon_join(&t.m), 124);
        s_free(&t);
}

/* The monitor goes away mid-run: the provider ends the box (KILLED) and
 * says why; the session ends. */
static void provider_monitor_gone(void **state)
{
        (void)state;
        struct sess t;
        s_start(&t, 0);
        s_pump_until(&t, worker_there);
        /* The monitor ends (a RESULT from elsewhere), closing its end. */
        struct err *e = NULL;
        union chan_msg msg;
        chan_init(&msg, CHAN_RESULT, 0);
        assert_int_equal(chan_send(t.m.broker, &msg, NULL, 0, &e), 0);
        assert_int_equal(mon_join(&t.m), 0);
        /* A killed worker's socket ends: the fake's does when it is closed. */
        close(t.m.fake.worker_fd);
        t.m.fake.worker_fd = -1;
        s_pump_until(&t, ended);
        s_pump_until(&t, broken_seen);
        assert_string_equal(t.broken, "the monitor closed the channel");
        assert_int_not_equal(session_outcome(t.s)->end, SESSION_END_DONE_OK);
        s_free(&t);
}

/* The broker's config: every key known, every value checked. */
static void config_parse(void **state)
{
        (void)state;
        struct broker_config c;
        struct err *e = NULL;
        const char *ok[] = { "agent=a.js", "agent_dir=/srv/a", "deadline_ms=1500", "json=1", "state_dir=/var/s",
                             "journal_fd=5", "input={\"x\":1}" };
        assert_int_equal(broker_config_parse(ok, 7, &c, &e), 0);
        assert_string_equal(c.agent, "a.js");
        assert_int_equal(c.deadline_ms, 1500);
        assert_true(c.json);
        assert_int_equal(c.journal_fd, 5);
        assert_int_equal(c.replay_fd, -1);
        static const char *const bad[][3] = {
                { "agent=a.js", "agent_dir=/a", "colour=red" },     /* unknown key */
                { "agent=a.js", "agent_dir=/a", "deadline_ms=10x" }, /* not a number */
                { "agent=a.js", "agent_dir=/a", "json=yes" },        /* not 0 or 1 */
                { "agent=/etc/passwd", "agent_dir=/a", "json=0" },   /* absolute agent */
                { "agent=a.js", "agent_dir=rel", "json=0" },         /* relative folder */
                { "agent=a.js", "agent_dir=/a", "journal_fd=3" },    /* the channel's descriptor */
                { "agent=a.js", "agent_dir=/a", "state_dir=s" },     /* relative state dir */
                { "agent=a.js", "agent_dir=/a", "noequals" },
        };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                assert_int_equal(broker_config_parse(bad[i], 3, &c, &e), -1);
                assert_non_null(strstr(err_msg(e), "config: "));
        }
        const char *both[] = { "agent=a.js", "agent_dir=/a", "journal_fd=5", "replay_fd=6" };
        assert_int_equal(broker_config_parse(both, 4, &c, &e), -1);
        err_free(e);
        /* The rest of what `chidori run` takes (h-wire2). */
        const char *more[] = { "agent=a.js", "agent_dir=/a", "answers_file=ans.json", "answers_fd=5",
                               "policy_file=/p.json", "policy_errno=2", "tools_file=t.json", "tools_fd=6",
                               "tty_fd=7", "workspace=/w", "max_log=1048576", "tz=Europe/Paris",
                               "env=A=1=2", "env=B=", "allow_host=127.0.0.1:8080", "auto_approve=1", "jit=0" };
        assert_int_equal(broker_config_parse(more, 17, &c, &e), 0);
        assert_int_equal(c.jit, 0);
        assert_int_equal(c.answers_fd, 5);
        assert_int_equal(c.policy_fd, -1);
        assert_int_equal(c.policy_errno, 2);
        assert_int_equal(c.tools_fd, 6);
        assert_int_equal(c.tty_fd, 7);
        assert_int_equal(c.max_log, 1048576);
        assert_int_equal(c.n_env, 2);
        assert_string_equal(c.env[0], "A=1=2");
        assert_int_equal(c.n_allow, 1);
        assert_true(c.auto_approve);
        static const char *const bad2[][4] = {
                { "agent=a.js", "agent_dir=/a", "answers_fd=5", "json=0" },            /* no answers_file */
                { "agent=a.js", "agent_dir=/a", "policy_file=/p", "json=0" },          /* neither fd nor errno */
                { "agent=a.js", "agent_dir=/a", "tools_file=t", "tools_fd=4" },        /* fd below 5 */
                { "agent=a.js", "agent_dir=/a", "tty_fd=6", "journal_fd=6" },          /* one fd named twice */
                { "agent=a.js", "agent_dir=/a", "workspace=rel", "json=0" },           /* relative workspace */
                { "agent=a.js", "agent_dir=/a", "env=NOVALUE", "json=0" },             /* env without = */
                { "agent=a.js", "agent_dir=/a", "max_calls=-1", "json=0" },            /* negative */
                { "agent=a.js", "agent_dir=/a", "jit=yes", "json=0" },                 /* not auto, 0 or 1 */
        };
        for (size_t i = 0; i < sizeof(bad2) / sizeof(bad2[0]); i++) {
                e = NULL;
                assert_int_equal(broker_config_parse(bad2[i], 4, &c, &e), -1);
                assert_non_null(strstr(err_msg(e), "config: "));
                err_free(e);
        }
}

int main(void)
{
        signal(SIGPIPE, SIG_IGN);
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(serve_happy_path),      cmocka_unit_test(serve_spawn_refused), cmocka_unit_test(serve_spawn_bundle),
                cmocka_unit_test(serve_run_tree),
                cmocka_unit_test(serve_many_trees),
                cmocka_unit_test(serve_protocol_break),  cmocka_unit_test(serve_out_of_order),
                cmocka_unit_test(serve_broker_dies),     cmocka_unit_test(serve_stop),
                cmocka_unit_test(serve_open_agent_file), cmocka_unit_test(serve_open_agent), cmocka_unit_test(serve_prestart), cmocka_unit_test(provider_session_done),
                cmocka_unit_test(provider_session_stop), cmocka_unit_test(provider_monitor_gone),
                cmocka_unit_test(provider_session_deadline), cmocka_unit_test(config_parse),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
