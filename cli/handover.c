/* cli/handover.c — a run as monitor + broker (issue 10 item 1): the run's
 * options become the broker's config blob (broker/config.h: key=value
 * strings), the files the operator names become descriptors the monitor
 * opened, and the broker is started (monitor/broker.c) and served
 * (monitor/serve.c, with the CLI's box provider) until its RESULT.  No file
 * is parsed here: the broker reads them. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "chan/chan.h"
#include "cli/bundle.h"
#include "cli/bundlebox.h"
#include "cli/cli.h"
#include "cli/handover.h"
#include "common/cleanup.h"
#include "common/exit.h"
#include "monitor/broker.h"
#include "monitor/serve.h"
#include "runtime/evloop.h"

void handover_init(struct handover *h)
{
        memset(h, 0, sizeof(*h));
}

void handover_add(struct handover *h, const char *fmt, ...)
{
        if (h->n == HANDOVER_MAX_STRINGS) {
                h->failed = true;
                return;
        }
        va_list ap;
        va_start(ap, fmt);
        char *s = NULL;
        if (vasprintf(&s, fmt, ap) < 0)
                s = NULL;
        va_end(ap);
        if (!s) {
                h->failed = true;
                return;
        }
        h->strs[h->n++] = s;
}

int handover_fd(struct handover *h, const char *key, int fd)
{
        if (fd < 0 || h->nfds == BROKER_MAX_EXTRA) {
                if (fd >= 0)
                        close(fd);
                h->failed = true;
                return -1;
        }
        h->fds[h->nfds] = fd;
        handover_add(h, "%s=%zu", key, BROKER_EXTRA_FD + h->nfds);
        h->nfds++;
        return 0;
}

void handover_file(struct handover *h, const char *name, const char *path)
{
        handover_add(h, "%s_file=%s", name, path);
        int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        if (fd < 0) {
                handover_add(h, "%s_errno=%d", name, errno);
                return;
        }
        /* Reads block as a file's do (a FIFO's writer may be slow). */
        int fl = fcntl(fd, F_GETFL);
        if (fl >= 0)
                fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
        char key[48];
        snprintf(key, sizeof(key), "%s_fd", name);
        handover_fd(h, key, fd);
}

void handover_free(struct handover *h)
{
        for (size_t i = 0; i < h->n; i++)
                free(h->strs[i]);
        for (size_t i = 0; i < h->nfds; i++)
                close(h->fds[i]);
        memset(h, 0, sizeof(*h));
}

static int fail(const char *what, struct err *e, int code)
{
        fprintf(stderr, "chidori: %s: %s\n", what, err_msg(e));
        err_free(e);
        return code;
}

/* The bundle box (cli/bundlebox.c) behind monitor_serve's bundle hooks. */
static int bundle_start(void *arg, const char *esbuild, char *const *argv, const char *dir, void **ret_handle,
                        int fds[4], int *ret_exit_fd, struct err **err)
{
        struct bundle_box *b = calloc(1, sizeof(*b));
        if (!b)
                return err_set(err, ENOMEM, "start esbuild");
        if (bundle_box_start(esbuild, argv, dir, arg, "bundle", b, fds, err) < 0) {
                free(b);
                return -1;
        }
        *ret_handle = b;
        *ret_exit_fd = bundle_box_pidfd(b);
        return 0;
}

static void bundle_end(void *arg, void *handle, bool kill_first, struct box_ended *ret)
{
        (void)arg;
        struct bundle_box *b = handle;
        struct sandbox_usage u;
        int status = 0;
        bundle_box_finish(b, kill_first, &status, &u);
        free(b);
        *ret = (struct box_ended){
                .reason = u.oom_killed ? BOX_OOM : kill_first ? BOX_KILLED : BOX_EXITED, .wait_status = status,
                .oom_killed = u.oom_killed, .pids_limit_hit = u.pids_limit_hit, .peak_bytes = u.peak_bytes,
                .memory_limit = u.memory_limit,
        };
}

int handover_run(struct handover *h, const struct handover_run *r)
{
        /* esbuild is the monitor's choice (the broker only names it back in
         * a SPAWN of kind bundle). */
        _cleanup_free_ char *esbuild = agent_find_esbuild();
        if (esbuild)
                handover_add(h, "esbuild=%s", esbuild);
        struct err *e = NULL;
        if (h->failed) {
                fprintf(stderr, "chidori: hand the run to the broker: out of memory or too many settings\n");
                return EXIT_PROTOCOL;
        }
        _cleanup_free_ char *worker = NULL;
        if (find_worker(&worker, &e) < 0)
                return fail("find the worker", e, EXIT_USAGE);
        struct broker_spawn s = {
                .fd0 = 0, .fd1 = 1, .fd2 = 2, .config_fd = -1,
                /* The agent folder is not attached: its files come by
                 * OPEN_AGENT_FILE (agent_dirfd below), and the host's folder
                 * at its path would put its owner and mode (a 0700 folder
                 * of root's) on the way to a state dir or workspace below
                 * it, out of the broker uid's reach. */
                .state_dir = r->state_dir, .workspace = r->workspace,
                .extra_fds = h->fds, .n_extra = h->nfds, .require = r->sb->require,
        };
        if (monitor_broker_user(r->broker_user, &s.uid, &s.gid, &e) < 0)
                return fail("the broker's user", e, err_code(e) == BROKER_E_USAGE ? EXIT_USAGE : EXIT_PROTOCOL);
        if (chan_blob_create("config", (const char *const *)h->strs, h->n, &s.config_fd, &e) < 0)
                return fail("the broker's configuration", e, EXIT_PROTOCOL);
        int agent_dirfd = r->agent_dir ? open(r->agent_dir, O_PATH | O_DIRECTORY | O_CLOEXEC) : -1;
        struct evloop *loop = NULL;
        if (evloop_new(&loop, &e) < 0) {
                if (agent_dirfd >= 0)
                        close(agent_dirfd);
                close(s.config_fd);
                return fail("start the run", e, EXIT_PROTOCOL);
        }
        struct spawn_opts so = { .worker_path = worker, .run_id = r->run_id, .sandbox = r->sb };
        struct cli_boxes boxes;
        cli_boxes_init(&boxes, &so, NULL);
        /* The worker's box first: its setup and the engine's start overlap
         * the broker's (clone3, exec, lockdown, the config, the agent). */
        struct monitor_early *early = NULL;
        if (r->prestart.on)
                monitor_prestart_box(&boxes.provider, loop, r->sb->deadline_ms, &r->prestart, &early);
        struct broker b;
        int rc = monitor_start_broker(&s, &b, &e);
        close(s.config_fd);
        for (size_t i = 0; i < h->nfds; i++)
                close(h->fds[i]);
        h->nfds = 0;
        if (rc < 0) {
                monitor_early_discard(&boxes.provider, early);
                evloop_free(loop);
                if (agent_dirfd >= 0)
                        close(agent_dirfd);
                return fail("start the broker (chidori-broker)", e,
                            err_code(e) == BROKER_E_LAYER ? EXIT_LAYER_UNAVAILABLE : EXIT_PROTOCOL);
        }
        /* A broker weaker than designed (the uid-0 fallback, no Landlock)
         * is said with the banner; --require-sandbox refused it already. */
        if (b.notes[0] && !r->quiet)
                fprintf(stderr, "chidori: note: %s\n", b.notes);
        /* Tools (SPAWN kind tool): "sandbox": false ones run as the
         * broker's uid and gid — the broker uid as root, the caller rootless
         * — never as uid 0 (the uid-0 fallback refuses them). */
        _cleanup_free_ char *self = realpath("/proc/self/exe", NULL);
        boxes.tools = (struct cli_tools){
                .self_exe = self, .sandbox = r->sb,
                .host_uid = b.mode == BROKER_ROOT ? s.uid : getuid(),
                .host_gid = b.mode == BROKER_ROOT ? s.gid : getgid(),
        };
        boxes.tools.host_ok = b.mode != BROKER_UID0 && boxes.tools.host_uid != 0 && boxes.tools.host_gid != 0;
        struct monitor_serve ms = {
                .chan = b.chan, .boxes = &boxes.provider, .exit_fd = cli_boxes_exit_fd,
                .agent_dirfd = agent_dirfd, .agent_dir = r->agent_dir, .agent_from_broker = r->agent_from_broker,
                .deadline_ms = r->sb->deadline_ms, .broker_pidfd = b.pidfd,
                .stop = &launcher_stop_signal, .prestart = r->prestart, .loop = loop, .early = early,
                .esbuild = esbuild, .bundle_deadline_ms = BUNDLE_DEADLINE_MS, .bundle_start = bundle_start,
                .bundle_finish = bundle_end, .bundle_arg = (void *)r->sb,
                .welcome_flags = (b.mode == BROKER_ROOTLESS ? CHAN_WELCOME_ROOTLESS : 0) |
                                 (b.mode == BROKER_UID0 ? CHAN_WELCOME_UID0 : 0),
        };
        int code = monitor_serve(&ms, &e);
        evloop_free(loop);
        if (e)
                fprintf(stderr, "chidori: %s\n", err_msg(e));
        err_free(e);
        if (agent_dirfd >= 0)
                close(agent_dirfd);
        monitor_broker_close(&b);
        return code;
}
