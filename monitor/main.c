/* monitor/main.c — chidori-monitor: the privileged process of a run
 * through the broker (docs/architecture.md, "Processes and who holds which
 * privilege").  `chidori run`, `replay` and `serve` read the operator's
 * options, build the broker's config blob and exec this binary (same pid:
 * the process the shell waits for), which starts the broker, serves it
 * (monitor/serve.c, with the box provider of cli/provider.c) and exits with
 * the run's code.  It links no cJSON, libcurl, SQLite, JavaScriptCore or
 * ICU, and parses nothing but chan blobs.
 *
 *   chidori-monitor --handover FD
 *
 * FD is a sealed blob (chan/blob.c) of "key=value" strings written by
 * cli/handover.c (monitor_settings_keys below): the paths and ids the
 * monitor needs, the operator's sandbox options field by field, and the
 * numbers of the descriptors it inherited (the config blob, the broker's
 * extra descriptors).  Anything else is refused: exit 70. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "chan/chan.h"
#include "common/stop.h"
#include "cli/cli.h"
#include "common/exit.h"
#include "monitor/broker.h"
#include "monitor/serve.h"
#include "cli/bundle.h"
#include "cli/bundlebox.h"
#include "runtime/evloop.h"
#include "privhelper/proto.h"
#include <sys/prctl.h>

/* How long the broker's start waits for the early worker's libraries
 * (monitor_early_wait_loaded): ~15-25 ms here, far more under ASan. */
#define EARLY_LOADED_WAIT_MS 250


struct settings {
        const char *worker, *run_id, *agent_dir, *state_dir, *workspace, *json_usage, *esbuild;
        const char *store_dir, *store_socket_dir; /* serve --store (monitor/broker.h) */
        const char *remove_after;
        const char *unlink_socket;         /* chidori serve --listen unix:PATH: removed at the end */
        struct monitor_prestart prestart;
        bool agent_from_broker, quiet, have_uid;
        bool serve;                        /* chidori serve: a run tree per session, every stop forwarded */
        long stop_grace_ms;                /* after the first STOP, before the broker is killed (0: 2 s) */
        uint64_t max_trees;                /* chidori serve: run trees at once (0: no limit) */
        uint64_t pool, pool_refill_ms;     /* chidori serve --pool, --pool-refill-ms */
        sigset_t unblock;
        uid_t uid;
        gid_t gid;
        int config_fd;
        int fds[BROKER_MAX_EXTRA];
        size_t nfds;
        struct sandbox_opts sb;
};

static int number(const char *v, uint64_t max, uint64_t *ret)
{
        if (*v < '0' || *v > '9')
                return -1;
        errno = 0;
        char *end;
        unsigned long long n = strtoull(v, &end, 10);
        if (errno || *end || n > max)
                return -1;
        *ret = n;
        return 0;
}

static int inherited_fd(const char *v, int *ret)
{
        uint64_t n;
        if (number(v, INT_MAX, &n) < 0 || n < 3 || fcntl((int)n, F_SETFD, FD_CLOEXEC) < 0)
                return -1;
        *ret = (int)n;
        return 0;
}

/* One "key=value".  -1: unknown key or malformed value. */
static int setting(struct settings *s, const char *kv)
{
        const char *eq = strchr(kv, '=');
        if (!eq)
                return -1;
        size_t kl = (size_t)(eq - kv);
        const char *v = eq + 1;
        uint64_t n = 0;
        struct sandbox_opts *sb = &s->sb;
#define KEY(k) (kl == sizeof(k) - 1 && memcmp(kv, k, kl) == 0)
#define NUM(max) (number(v, (max), &n) == 0)
        if (KEY("worker"))
                s->worker = v;
        else if (KEY("run_id"))
                s->run_id = v;
        else if (KEY("agent_dir"))
                s->agent_dir = v;
        else if (KEY("state_dir"))
                s->state_dir = v;
        else if (KEY("workspace"))
                s->workspace = v;
        else if (KEY("store_dir") && v[0] == '/')
                s->store_dir = v;
        else if (KEY("store_socket_dir") && v[0] == '/')
                s->store_socket_dir = v;
        else if (KEY("json_usage"))
                s->json_usage = v;
        else if (KEY("esbuild") && v[0] == '/')
                s->esbuild = v;
        else if (KEY("remove_after") && v[0] == '/')
                s->remove_after = v;
        else if (KEY("serve") && NUM(1))
                s->serve = n;
        else if (KEY("stop_grace_ms") && NUM(86400000 + 60000))
                s->stop_grace_ms = (long)n;
        else if (KEY("max_trees") && NUM(UINT32_MAX))
                s->max_trees = n;
        else if (KEY("pool") && NUM(SERVE_POOL_MAX))
                s->pool = n;
        else if (KEY("pool_refill_ms") && NUM(SERVE_POOL_REFILL_MAX_MS))
                s->pool_refill_ms = n;
        else if (KEY("unlink_socket") && v[0] == '/')
                s->unlink_socket = v;
        else if (KEY("prestart") && NUM(1))
                s->prestart.on = n;
        else if (KEY("prestart_no_jit") && NUM(1))
                s->prestart.no_jit = n;
        else if (KEY("prestart_cpu_ms") && NUM(LONG_MAX))
                s->prestart.cpu_budget_ms = (long)n;
        else if (KEY("prestart_tz") && strlen(v) < sizeof(s->prestart.tz))
                snprintf(s->prestart.tz, sizeof(s->prestart.tz), "%s", v);
        else if (KEY("agent_from_broker") && NUM(1))
                s->agent_from_broker = n;
        else if (KEY("quiet") && NUM(1))
                s->quiet = n;
        else if (KEY("unblock") && NUM(64) && (n == SIGINT || n == SIGTERM || n == SIGHUP))
                sigaddset(&s->unblock, (int)n);
        else if (KEY("stop") && NUM(64))
                launcher_stop_signal = (int)n;
        else if (KEY("broker_uid") && NUM(UINT32_MAX - 1))
                s->uid = (uid_t)n, s->have_uid = true;
        else if (KEY("broker_gid") && NUM(UINT32_MAX - 1))
                s->gid = (gid_t)n;
        else if (KEY("config_fd"))
                return inherited_fd(v, &s->config_fd);
        else if (KEY("fd") && s->nfds < BROKER_MAX_EXTRA)
                return inherited_fd(v, &s->fds[s->nfds++]);
        else if (KEY("deadline_ms") && NUM(LONG_MAX))
                sb->deadline_ms = (long)n;
        else if (KEY("cpu_secs") && NUM(LONG_MAX))
                sb->cpu_secs = (long)n;
        else if (KEY("nofile") && NUM(LONG_MAX))
                sb->nofile = (long)n;
        else if (KEY("fsize") && NUM(LONG_MAX))
                sb->fsize = (long)n;
        else if (KEY("require") && NUM(1))
                sb->require = n;
        else if (KEY("disable") && NUM(UINT_MAX))
                sb->disable = (unsigned)n;
        else if (KEY("jit") && (strcmp(v, "-1") == 0 || NUM(1)))
                sb->jit = *v == '-' ? -1 : (int)n;
        else if (KEY("memory_bytes") && NUM(UINT64_MAX))
                sb->memory_bytes = n;
        else if (KEY("pids_max") && NUM(UINT64_MAX))
                sb->pids_max = n;
        else if (KEY("cpus_micro") && NUM(UINT32_MAX))
                sb->cpus = (double)n / 1e6;
        else if (KEY("cgroup_parent"))
                sb->cgroup_parent = v;
        else if (KEY("tz"))
                sb->tz = v;
        else if (KEY("set") && NUM(UINT_MAX))
                sb->set = (unsigned)n;
        else if (KEY("engine_cpu_ms") && NUM(LONG_MAX))
                sb->engine_cpu_ms = (long)n;
        else
                return -1;
#undef KEY
#undef NUM
        return 0;
}

static int read_settings(const char *arg, struct settings *s, struct chan_blob *blob)
{
        uint64_t fd;
        struct chan_blob_hdr h;
        if (number(arg, INT_MAX, &fd) < 0 || pread((int)fd, &h, sizeof(h), 0) != (ssize_t)sizeof(h)) {
                fprintf(stderr, "chidori: the monitor's settings: '%s' is not a settings descriptor\n", arg);
                return -1;
        }
        struct err *e = NULL;
        if (chan_blob_map((int)fd, h.nstrings, blob, &e) < 0) {
                fprintf(stderr, "chidori: the monitor's settings: %s\n", err_msg(e));
                err_free(e);
                return -1;
        }
        close((int)fd);
        for (size_t i = 0; i < blob->nstrings; i++)
                if (setting(s, blob->strs[i]) < 0) {
                        fprintf(stderr, "chidori: the monitor's settings: '%.200s' is not one it knows\n",
                                blob->strs[i]);
                        return -1;
                }
        if (!s->worker || !s->run_id || !s->have_uid || s->config_fd < 0) {
                fprintf(stderr, "chidori: the monitor's settings lack the worker, the run id, the broker's user "
                                "or the configuration\n");
                return -1;
        }
        return 0;
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

/* The threads of this process (/proc/self/status), 0 if unknown. */
static int threads_running(void)
{
        FILE *f = fopen("/proc/self/status", "re");
        char line[128];
        int n = 0;
        while (f && fgets(line, sizeof(line), f))
                if (sscanf(line, "Threads: %d", &n) == 1)
                        break;
        if (f)
                fclose(f);
        return n;
}

static int fail(const char *what, struct err *e, int code)
{
        fprintf(stderr, "chidori: %s: %s\n", what, err_msg(e));
        err_free(e);
        return code;
}

/* The broker started and served until its RESULT (cli/handover.c before
 * the split). */
static int serve(struct settings *st)
{
        struct err *e = NULL;
        struct broker_spawn s = {
                .fd0 = 0, .fd1 = 1, .fd2 = 2, .config_fd = st->config_fd,
                /* The agent folder is not attached: its files come by
                 * OPEN_AGENT_FILE (agent_dirfd below), and the host's folder
                 * at its path would put its owner and mode (a 0700 folder
                 * of root's) on the way to a state dir or workspace below
                 * it, out of the broker uid's reach. */
                .state_dir = st->state_dir, .workspace = st->workspace, .uid = st->uid, .gid = st->gid,
                .store_dir = st->store_dir, .store_socket_dir = st->store_socket_dir,
                .extra_fds = st->fds, .n_extra = st->nfds, .require = st->sb.require,
        };
        int agent_dirfd = st->agent_dir ? open(st->agent_dir, O_PATH | O_DIRECTORY | O_CLOEXEC) : -1;
        struct evloop *loop = NULL;
        if (evloop_new(&loop, &e) < 0) {
                if (agent_dirfd >= 0)
                        close(agent_dirfd);
                return fail("start the run", e, EXIT_PROTOCOL);
        }
        struct spawn_opts so = { .worker_path = st->worker, .run_id = st->run_id, .sandbox = &st->sb };
        struct cli_boxes boxes;
        cli_boxes_setup(&boxes, &so);
        /* The worker's box first: its setup and the engine's start overlap
         * the broker's (clone3, exec, lockdown, the config, the agent). */
        struct monitor_early *early = NULL;
        if (st->prestart.on && monitor_prestart_box(&boxes.provider, loop, st->sb.deadline_ms, &st->prestart,
                                                    &early) == 0 && threads_running() > 1) {
                /* The box came with a thread in this process (the memory
                 * watchdog, without a cgroup): the broker's clone3 must not
                 * happen while one runs (a lock it holds would stay held in
                 * the child forever).  No early box then. */
                monitor_early_discard(&boxes.provider, early);
                early = NULL;
        }
        if (!early) /* else the broker shares our cgroup: no run could have it */
                sandbox_cgroup_early(&st->sb);
        monitor_early_wait_loaded(&boxes.provider, cli_boxes_loaded_fd, early, EARLY_LOADED_WAIT_MS);
        struct broker b;
        int rc = monitor_start_broker(&s, &b, &e);
        close(st->config_fd);
        for (size_t i = 0; i < st->nfds; i++)
                close(st->fds[i]);
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
        if (b.notes[0] && !st->quiet)
                fprintf(stderr, "chidori: note: %s\n", b.notes);
        /* Tools (SPAWN kind tool): forked by this process, boxed or, for
         * "sandbox": false, as the broker's uid and gid — the broker uid as
         * root, the caller rootless — never as uid 0 (the uid-0 fallback
         * refuses them); cli/toolbox.c.  (Field by field: the worker
         * started early has set run_cg.) */
        boxes.tools.enabled = true;
        boxes.tools.sandbox = &st->sb;
        boxes.tools.host_uid = b.mode == BROKER_ROOT ? s.uid : getuid();
        boxes.tools.host_gid = b.mode == BROKER_ROOT ? s.gid : getgid();
        boxes.tools.host_ok = b.mode != BROKER_UID0 && boxes.tools.host_uid != 0 && boxes.tools.host_gid != 0;
        struct monitor_serve ms = {
                .chan = b.chan, .boxes = &boxes.provider, .exit_fd = cli_boxes_exit_fd,
                .agent_dirfd = agent_dirfd, .agent_dir = st->agent_dir, .agent_from_broker = st->agent_from_broker,
                .deadline_ms = st->sb.deadline_ms, .broker_pidfd = b.pidfd,
                .stop = &launcher_stop_signal, .prestart = st->prestart, .loop = loop, .early = early,
                .many_trees = st->serve, .stop_count = &launcher_stop_count, .grace_ms = st->stop_grace_ms,
                .max_trees = (size_t)st->max_trees, .pool = (size_t)st->pool, .pool_refill_ms = (long)st->pool_refill_ms,
                .esbuild = st->esbuild, .bundle_deadline_ms = BUNDLE_DEADLINE_MS, .bundle_start = bundle_start,
                .bundle_finish = bundle_end, .bundle_arg = (void *)&st->sb,
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

int main(int argc, char **argv)
{
        stop_handlers_install();
        /* Under chidori-privhelper (CHIDORI_PRIVSEP=1): "--helper FD", its
         * socket, and "--cgroup-delegated": our own cgroup is the one it
         * delegated (the operator's --cgroup-parent is above it). */
        bool delegated = false;
        if (argc >= 5 && strcmp(argv[3], "--helper") == 0) {
                uint64_t n;
                if (number(argv[4], INT_MAX, &n) < 0 || n < 3 || fcntl((int)n, F_SETFD, FD_CLOEXEC) < 0) {
                        fprintf(stderr, "chidori-monitor: --helper %s is not the helper's socket\n", argv[4]);
                        return EXIT_USAGE;
                }
                priv_helper_fd = (int)n;
                delegated = argc == 6 && strcmp(argv[5], "--cgroup-delegated") == 0;
                /* Other processes of uid 65532 (other runs' supervisors) may not ptrace us. */
                prctl(PR_SET_DUMPABLE, 0);
                argc = argc == 5 || delegated ? 3 : argc;
        }
        if (argc != 3 || strcmp(argv[1], "--handover") != 0) {
                fprintf(stderr, "chidori-monitor: started by 'chidori run' and 'chidori replay' only (usage: "
                                "chidori-monitor --handover FD); run 'chidori run AGENT'\n");
                return EXIT_USAGE;
        }
        struct settings st = { .config_fd = -1 };
        sandbox_opts_init(&st.sb);
        sigemptyset(&st.unblock);
        struct chan_blob blob = { 0 };
        int rc = read_settings(argv[2], &st, &blob);
        /* Under the helper: nothing that makes a process or touches a cgroup
         * before its word (it moves us into the delegated cgroup meanwhile). */
        if (rc == 0 && priv_helper_fd >= 0 && priv_wait_ready() < 0)
                rc = -1;
        if (delegated)
                st.sb.cgroup_parent = NULL;
        sigprocmask(SIG_UNBLOCK, &st.unblock, NULL);
        int code = rc < 0 ? EXIT_PROTOCOL : serve(&st);
        if (st.unlink_socket)
                unlink(st.unlink_socket);
        if (st.remove_after) {
                /* An agent read from stdin, saved by chidori in a folder of its own. */
                char dir[PATH_MAX];
                snprintf(dir, sizeof(dir), "%s", st.remove_after);
                unlink(dir);
                char *slash = strrchr(dir, '/');
                if (slash && slash != dir) {
                        *slash = '\0';
                        rmdir(dir);
                }
        }
        /* chidori run --json: a usage error is one JSON line on stdout, as
         * chidori's own (cli/suggest.c cli_json_end, written there). */
        if (code == EXIT_USAGE && st.json_usage) {
                printf("%s\n", st.json_usage);
                fflush(stdout);
        }
        chan_blob_unmap(&blob);
        return code;
}
