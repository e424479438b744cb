/* broker/bundle.c — load an agent and bundle it through the monitor (bundle.h). */
#define _GNU_SOURCE
#include "broker/bundle.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "broker/provider.h"
#include "chan/chan.h"
#include "cli/bundle.h"
#include "cli/cli.h"
#include "common/cleanup.h"
#include "common/util.h"

#define AGENT_MAX_BYTES (16u << 20)
#define BUNDLE_REQ 0x62756e646c65ull /* "bundle": the SPAWN's request id */

/* The channel failed (or STOP came): the error's code says so. */
static int chan_failed(struct err **err)
{
        if (err && *err)
                (*err)->code = BROKER_BUNDLE_E_CHANNEL;
        return -1;
}

/* The next message for this bundle (SPAWNED/SPAWN_FAILED of its request,
 * BOX_ENDED of `box`) or any other when not in the loop; STOP ends the
 * wait (the run is being stopped).  In the loop (defer_to) the others are
 * handed to the provider for later. */
static int recv_for(const struct broker_bundler *b, uint64_t box, union chan_msg *m, int fds[CHAN_MAX_FDS],
                    size_t *nfds, struct err **err)
{
        int chan = b->chan;
        for (;;) {
                if (chan_recv(chan, CHAN_FROM_MONITOR, m, fds, nfds, err) < 0)
                        return err_wrap(err, "the monitor's channel"), chan_failed(err);
                if (m->h.type == CHAN_STOP && b->stop)
                        *b->stop = m->stop.signal;
                if (m->h.type == CHAN_STOP)
                        return err_setc(err, BROKER_BUNDLE_E_CHANNEL, 0, "stopped by %s", strsignal(m->stop.signal));
                bool mine = ((m->h.type == CHAN_SPAWNED || m->h.type == CHAN_SPAWN_FAILED) && m->h.id == BUNDLE_REQ) ||
                            (m->h.type == CHAN_BOX_ENDED && box && m->box_ended.box == box);
                if (mine || !b->defer_to)
                        return 0;
                chan_boxes_defer(b->defer_to, m, fds, *nfds);
        }
}

static void close_fds(int *fds, size_t n)
{
        for (size_t i = 0; i < n; i++)
                if (fds[i] >= 0)
                        close(fds[i]);
}

/* SPAWN {bundle} and its answer: the box's number and its four descriptors. */
static int spawn_bundle(const struct broker_bundler *b, const char *dir, uint64_t *ret_box, int fds[4],
                        struct err **err)
{
        char **args = bundle_argv();
        if (!args)
                return err_set(err, ENOMEM, "bundle");
        const char *strs[BUNDLE_ARGC_MAX + 4];
        size_t n = 0, nargv = 0;
        strs[n++] = b->esbuild;
        strs[n++] = "esbuild";
        for (size_t i = 0; args[i] && n < BUNDLE_ARGC_MAX + 2; i++)
                strs[n++] = args[i];
        nargv = n - 1;
        _cleanup_free_ char *bind = NULL;
        if (asprintf(&bind, "ro:%s", dir) < 0) {
                bundle_argv_free(args);
                return err_set(err, ENOMEM, "bundle");
        }
        strs[n++] = bind;
        int blob = -1;
        int r = chan_blob_create("bundle", strs, n, &blob, err);
        bundle_argv_free(args);
        if (r < 0)
                return chan_failed(err);
        union chan_msg m;
        chan_init(&m, CHAN_SPAWN, BUNDLE_REQ);
        m.spawn.kind = CHAN_BOX_BUNDLE;
        m.spawn.deadline_ms = b->deadline_ms > 0 && b->deadline_ms < BUNDLE_DEADLINE_MS ? (uint32_t)b->deadline_ms
                                                                                       : (uint32_t)BUNDLE_DEADLINE_MS;
        m.spawn.n_argv = (uint32_t)nargv;
        m.spawn.n_binds = 1;
        r = chan_send(b->chan, &m, &blob, 1, err);
        close(blob);
        if (r < 0)
                return chan_failed(err);
        size_t nfds = 0;
        int got[CHAN_MAX_FDS];
        if (recv_for(b, 0, &m, got, &nfds, err) < 0)
                return -1;
        if (m.h.type == CHAN_SPAWN_FAILED && m.h.id == BUNDLE_REQ) {
                if (m.spawn_failed.code == CHAN_SPAWN_E_NO_BUNDLER)
                        return err_setc(err, AGENT_E_NO_ESBUILD, 0, "esbuild was not found by the monitor");
                return err_setc(err, m.spawn_failed.code == BOX_E_LAYER ? BROKER_BUNDLE_E_LAYER : 0, 0,
                                "start esbuild in its box: %s", m.spawn_failed.message);
        }
        if (m.h.type != CHAN_SPAWNED || m.h.id != BUNDLE_REQ || m.spawned.kind != CHAN_BOX_BUNDLE || nfds != 4) {
                close_fds(got, nfds);
                return err_setc(err, BROKER_BUNDLE_E_CHANNEL, 0,
                                "the monitor's channel: %s where SPAWNED (bundle) was expected",
                                chan_type_name(m.h.type));
        }
        memcpy(fds, got, 4 * sizeof(int));
        *ret_box = m.spawned.box;
        return 0;
}

/* BOX_ENDED of `box`: its wait status (and why it ended). */
static int wait_ended(const struct broker_bundler *b, uint64_t box, int *ret_status, uint32_t *ret_reason, struct err **err)
{
        for (;;) {
                union chan_msg m;
                int fds[CHAN_MAX_FDS];
                size_t nfds = 0;
                if (recv_for(b, box, &m, fds, &nfds, err) < 0)
                        return -1;
                close_fds(fds, nfds);
                if (m.h.type == CHAN_BOX_ENDED && m.box_ended.box == box) {
                        *ret_status = m.box_ended.wait_status;
                        *ret_reason = m.box_ended.reason;
                        return 0;
                }
                if (m.h.type != CHAN_BOX_ENDED)
                        return err_setc(err, BROKER_BUNDLE_E_CHANNEL, 0,
                                        "the monitor's channel: %s where BOX_ENDED (bundle) was expected",
                                        chan_type_name(m.h.type));
        }
}

static int bundle_through_monitor(const struct broker_bundler *b, struct agent *a, const char *dir,
                                  struct err **err)
{
        if (!b->esbuild)
                return err_setc(err, AGENT_E_NO_ESBUILD, 0, AGENT_NO_ESBUILD_FMT, a->path);
        _cleanup_free_ char *entry = bundle_entry(a->abspath);
        if (!entry)
                return err_set(err, ENOMEM, "bundle");
        uint64_t box = 0;
        int fds[4];
        if (spawn_bundle(b, dir, &box, fds, err) < 0) {
                if (err_code(*err) == AGENT_E_NO_ESBUILD) {
                        err_free(*err);
                        *err = NULL;
                        return err_setc(err, AGENT_E_NO_ESBUILD, 0, AGENT_NO_ESBUILD_FMT, a->path);
                }
                return -1;
        }
        struct bundle_out out;
        /* The monitor holds the box's deadline; this bound only keeps a
         * broken monitor from holding the broker forever. */
        int rc = bundle_collect(fds, entry, BUNDLE_DEADLINE_MS + 5000, &out, err);
        if (rc < 0) {
                union chan_msg k;
                chan_init(&k, CHAN_KILL, 0);
                k.kill.box = box;
                struct err *e2 = NULL;
                if (chan_send(b->chan, &k, NULL, 0, &e2) < 0)
                        err_free(e2);
        }
        int status = 0;
        uint32_t reason = 0;
        struct err *e3 = NULL;
        if (wait_ended(b, box, &status, &reason, rc < 0 ? &e3 : err) < 0) {
                err_free(e3);
                if (rc == 0)
                        rc = -1;
        }
        if (rc == 0 && reason == CHAN_END_DEADLINE)
                rc = err_setc(err, 0, 0, "esbuild did not finish within %ld s (its box's deadline); the agent was not run",
                              (b->deadline_ms > 0 && b->deadline_ms < BUNDLE_DEADLINE_MS ? b->deadline_ms
                                                                                          : BUNDLE_DEADLINE_MS) /
                                      1000);
        else if (rc == 0 && reason == CHAN_END_OOM)
                rc = err_setc(err, 0, 0, "esbuild ran out of memory in its box; the agent was not run");
        if (rc == 0)
                rc = bundle_finish(a, dir, dir, status, &out, err);
        bundle_out_free(&out);
        return rc;
}

int broker_bundle(const struct broker_bundler *b, const char *relpath, struct agent *a, struct err **err)
{
        memset(a, 0, sizeof(*a));
        if (asprintf(&a->abspath, "%s%s%s", b->agent_dir, strcmp(b->agent_dir, "/") ? "/" : "", relpath) < 0) {
                a->abspath = NULL;
                return err_set(err, ENOMEM, "load agent");
        }
        const char *base = strrchr(relpath, '/');
        a->path = strdup(a->abspath);
        a->filename = strdup(base ? base + 1 : relpath);
        if (!a->path || !a->filename) {
                agent_free(a);
                return err_set(err, ENOMEM, "load agent");
        }
        int fd = chan_boxes_open(b->chan, relpath, b->stop, err);
        if (fd < 0) {
                /* OPENED's errno (code 0), or the channel's error. */
                int e = *err ? (*err)->errnum : 0;
                if (err_code(*err) != 0)
                        chan_failed(err);
                else if (e == ENOENT) {
                        err_free(*err);
                        *err = NULL;
                        err_setc(err, AGENT_E_NOT_FOUND, e, "agent file '%s' not found", a->path);
                }
                agent_free(a);
                return -1;
        }
        int r = read_fd(fd, a->path, AGENT_MAX_BYTES, &a->source, &a->source_len, err);
        close(fd);
        if (r < 0) {
                agent_free(a);
                return err_wrap(err, "load agent");
        }
        if (broker_bundle_loaded(b, relpath, a, err) < 0) {
                agent_free(a);
                return -1;
        }
        return 0;
}

int broker_bundle_loaded(const struct broker_bundler *b, const char *relpath, struct agent *a, struct err **err)
{
        sha256_hex(a->source, a->source_len, a->sha256);
        if (memchr(a->source, '\0', a->source_len))
                return err_setc(err, AGENT_E_BUNDLE, 0, "agent file '%s' contains NUL bytes; expected JavaScript source",
                                a->path);
        if (!bundle_needed(relpath, a->source)) {
                a->script = a->source;
                return 0;
        }
        _cleanup_free_ char *dir = strdup(a->abspath);
        if (!dir)
                return err_set(err, ENOMEM, "bundle");
        char *slash = strrchr(dir, '/');
        slash[slash == dir ? 1 : 0] = '\0';
        return bundle_through_monitor(b, a, dir, err);
}
