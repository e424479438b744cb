/* cli/handover.c — a run as monitor + broker (issue 10 item 1): the run's
 * options become the broker's config blob (broker/config.h: key=value
 * strings), the files the operator names become descriptors the monitor
 * opened, and this process becomes chidori-monitor (monitor/main.c: exec,
 * same pid), which starts the broker (monitor/broker.c) and serves it
 * (monitor/serve.c, with the box provider of cli/provider.c) until its
 * RESULT.  No file is parsed here: the broker reads them. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "chan/chan.h"
#include "cli/cli.h"
#include "cli/grants.h"
#include "cli/handover.h"
#include "effects/net/secrets.h"
#include "cli/suggest.h"
#include "cli/supervisor.h"
#include "common/cleanup.h"
#include "common/dlib.h"
#include "common/exit.h"
#include "cli/brokeruser.h"
#include "monitor/broker.h"
#include "privhelper/deleg.h"
#include "privhelper/proto.h"
#include "privhelper/ready.h"
#include "sandbox/idmap.h"
#include <sys/capability.h>

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
        for (size_t i = 0; i < h->n; i++) {
                explicit_bzero(h->strs[i], strlen(h->strs[i])); /* secret= strings hold values */
                free(h->strs[i]);
        }
        for (size_t i = 0; i < h->nfds; i++)
                close(h->fds[i]);
        memset(h, 0, sizeof(*h));
}

/* A copy of a library in a sealed memfd: Landlock lets the broker map an
 * anonymous file, not one of the install folder it has no rule for. */
static int lib_memfd(const char *path)
{
        _cleanup_close_ int in = open(path, O_RDONLY | O_CLOEXEC);
        int fd = in >= 0 ? memfd_create("libchidori-net.so", MFD_CLOEXEC | MFD_ALLOW_SEALING) : -1;
        if (fd < 0)
                return -1;
        char buf[65536];
        ssize_t n;
        while ((n = read(in, buf, sizeof(buf))) > 0)
                if (write(fd, buf, (size_t)n) != n) {
                        n = -1;
                        break;
                }
        if (n < 0 || fcntl(fd, F_ADD_SEALS, F_SEAL_SEAL | F_SEAL_WRITE | F_SEAL_GROW | F_SEAL_SHRINK) < 0) {
                close(fd);
                return -1;
        }
        return fd;
}

void handover_net_lib(struct handover *h)
{
        /* The network library, which the broker cannot reach where it is
         * installed (or built). */
        const char *nl = getenv("CHIDORI_NET_LIB");
        _cleanup_free_ char *found = nl && *nl ? NULL : dlib_find("libchidori-net.so", R_OK);
        const char *netlib = nl && *nl ? nl : found;
        int nfd = netlib ? lib_memfd(netlib) : -1;
        if (nfd >= 0)
                handover_fd(h, "net_lib_fd", nfd);
}

static int fail(const char *what, struct err *e, int code)
{
        fprintf(stderr, "chidori: %s: %s\n", what, err_msg(e));
        err_free(e);
        return code;
}

/* chidori-monitor: $CHIDORI_MONITOR, else next to chidori or in its libexec
 * directory (common/dlib.h), as chidori-broker is found. */
static char *find_monitor(struct err **err)
{
        const char *p = getenv("CHIDORI_MONITOR");
        if (p && *p) {
                char *d = strdup(p);
                if (!d)
                        err_set(err, ENOMEM, "monitor path");
                return d;
        }
        char *f = dlib_find("chidori-monitor", X_OK);
        if (!f)
                err_set(err, 0, "cannot find chidori-monitor in %s (set CHIDORI_MONITOR to its path, or reinstall)",
                        dlib_dirs_text());
        return f;
}

/* Whether root's run keeps root only in chidori-privhelper (decision 163):
 * the default as root when it is possible; CHIDORI_PRIVSEP=1 requires it,
 * 0 declines it.  It needs what the helper does: CAP_SETUID/SETGID with
 * 65532, the broker's and the boxes' ids mapped (its user namespace's
 * maps), CAP_SYS_ADMIN (detached mounts) and CAP_CHOWN (the delegated
 * cgroup).  1: use it; 0: the monitor keeps root (*why set when it was not
 * declined: a container without those); -1: required and not possible. */
int handover_privsep(uid_t broker_uid, char *why, size_t len)
{
        const char *v = getenv("CHIDORI_PRIVSEP");
        if (geteuid() != 0 || (v && strcmp(v, "0") == 0))
                return 0;
        bool required = v && strcmp(v, "1") == 0;
        cap_t c = cap_get_proc();
        cap_flag_value_t adm = CAP_CLEAR, own = CAP_CLEAR;
        if (c) {
                cap_get_flag(c, CAP_SYS_ADMIN, CAP_EFFECTIVE, &adm);
                cap_get_flag(c, CAP_CHOWN, CAP_EFFECTIVE, &own);
                cap_free(c);
        }
        char m[160] = "";
        if (idmap_root_mapping(PRIV_SUPERVISOR_ID, m, sizeof(m)) != IDMAP_OTHER ||
            idmap_root_mapping(65534, m, sizeof(m)) != IDMAP_OTHER ||
            idmap_root_mapping(broker_uid, m, sizeof(m)) != IDMAP_OTHER)
                snprintf(why, len, "%s", m[0] ? m : "the ids it maps are not mapped here");
        else if (adm != CAP_SET || own != CAP_SET)
                snprintf(why, len, "no CAP_SYS_ADMIN or CAP_CHOWN");
        else
                return 1;
        return required ? -1 : 0;
}

/* chidori-privhelper: $CHIDORI_PRIVHELPER, else next to chidori or in its
 * libexec directory. */
char *handover_find_privhelper(struct err **err)
{
        const char *p = getenv("CHIDORI_PRIVHELPER");
        char *f = p && *p ? strdup(p) : dlib_find("chidori-privhelper", X_OK);
        if (!f)
                err_set(err, 0, "cannot find chidori-privhelper in %s (CHIDORI_PRIVSEP=1; set CHIDORI_PRIVHELPER to "
                                "its path, or reinstall)", dlib_dirs_text());
        return f;
}

/* A copy of fd at 3 or above without close-on-exec: inherited by the
 * monitor; "key=N" among its settings. */
static void pass_fd(struct handover *set, const char *key, int fd, int *kept, size_t *nkept)
{
        int d = fcntl(fd, F_DUPFD, 3);
        if (d < 0) {
                set->failed = true;
                return;
        }
        kept[(*nkept)++] = d;
        handover_add(set, "%s=%d", key, d);
}

/* The monitor's settings (monitor/main.c): what it needs while the agent
 * runs, the operator's sandbox options field by field. */
static void monitor_settings(struct handover *set, const struct handover_run *r, const char *worker, uid_t uid,
                             gid_t gid)
{
        const struct sandbox_opts *sb = r->sb;
        handover_add(set, "worker=%s", worker);
        handover_add(set, "run_id=%s", r->run_id);
        if (r->agent_dir)
                handover_add(set, "agent_dir=%s", r->agent_dir);
        if (r->state_dir)
                handover_add(set, "state_dir=%s", r->state_dir);
        if (r->workspace)
                handover_add(set, "workspace=%s", r->workspace);
        handover_add(set, "agent_from_broker=%d", r->agent_from_broker);
        if (r->serve) {
                handover_add(set, "serve=1");
                handover_add(set, "stop_grace_ms=%ld", r->stop_grace_ms);
                handover_add(set, "max_trees=%ld", r->max_trees);
                if (r->unlink_socket)
                        handover_add(set, "unlink_socket=%s", r->unlink_socket);
                if (r->store_dir)
                        handover_add(set, "store_dir=%s", r->store_dir);
                if (r->store_socket_dir)
                        handover_add(set, "store_socket_dir=%s", r->store_socket_dir);
        }
        handover_add(set, "quiet=%d", r->quiet);
        handover_add(set, "broker_uid=%u", (unsigned)uid);
        handover_add(set, "broker_gid=%u", (unsigned)gid);
        handover_add(set, "deadline_ms=%ld", sb->deadline_ms);
        handover_add(set, "cpu_secs=%ld", sb->cpu_secs);
        handover_add(set, "nofile=%ld", sb->nofile);
        handover_add(set, "fsize=%ld", sb->fsize);
        handover_add(set, "require=%d", sb->require);
        handover_add(set, "disable=%u", sb->disable);
        handover_add(set, "jit=%d", sb->jit);
        handover_add(set, "memory_bytes=%llu", (unsigned long long)sb->memory_bytes);
        handover_add(set, "pids_max=%llu", (unsigned long long)sb->pids_max);
        handover_add(set, "cpus_micro=%lld", (long long)(sb->cpus * 1e6 + 0.5));
        if (sb->cgroup_parent)
                handover_add(set, "cgroup_parent=%s", sb->cgroup_parent);
        if (sb->tz)
                handover_add(set, "tz=%s", sb->tz);
        handover_add(set, "set=%u", sb->set);
        handover_add(set, "engine_cpu_ms=%ld", sb->engine_cpu_ms);
        if (launcher_stop_signal)
                handover_add(set, "stop=%d", (int)launcher_stop_signal);
        _cleanup_free_ char *usage = cli_json_usage_line();
        if (usage)
                handover_add(set, "json_usage=%s", usage);
        if (r->remove_after)
                handover_add(set, "remove_after=%s", r->remove_after);
        /* The worker to start before the broker (monitor/serve.h). */
        const struct monitor_prestart *w = &r->prestart;
        if (r->pool > 0) {
                handover_add(set, "pool=%ld", r->pool);
                handover_add(set, "pool_refill_ms=%ld", r->pool_refill_ms);
        }
        if (w->on || r->pool > 0) {
                handover_add(set, "prestart=%d", w->on);
                handover_add(set, "prestart_no_jit=%d", w->no_jit);
                handover_add(set, "prestart_cpu_ms=%ld", w->cpu_budget_ms);
                if (w->tz[0])
                        handover_add(set, "prestart_tz=%s", w->tz);
        }
}

/* Decision 174: when every folder the broker writes is on a file system
 * known to take an id-mapped mount (no trial, privhelper/ready.h), make the
 * supervisor's TMPDIR and cgroup here and send it its word while it execs,
 * instead of after the helper's own exec.  1 done (cg, *deleg_fd and tmp
 * for the helper), 0 not possible (the helper does it all, as before), -1
 * with *err.  tmp is "" unless made. */
static int ready_early(const struct handover *set, const struct supervisor *sup, char *tmp, size_t tmplen,
                       struct deleg *cg, int *deleg_fd, struct err **err)
{
        tmp[0] = '\0';
        const char *cgroup_parent = NULL;
        for (size_t i = 0; i < set->n; i++) {
                const char *kv = set->strs[i];
                static const char *const writes[] = { "state_dir=", "workspace=", "store_dir=" };
                if (strncmp(kv, "cgroup_parent=", 14) == 0)
                        cgroup_parent = kv + 14;
                for (size_t k = 0; k < sizeof(writes) / sizeof(writes[0]); k++) {
                        size_t l = strlen(writes[k]);
                        if (strncmp(kv, writes[k], l) != 0)
                                continue;
                        int fd = open(kv + l, O_PATH | O_DIRECTORY | O_CLOEXEC);
                        bool known = fd >= 0 && ready_known_mappable(fd);
                        if (fd >= 0)
                                close(fd);
                        if (!known)
                                return 0;
                }
        }
        if (ready_make_tmp(tmp, tmplen) < 0)
                return err_setc(err, EXIT_PROTOCOL, 0, "the supervisor's temporary folder (said above)");
        if (deleg_create(cg, cgroup_parent, sup->pid, PRIV_SUPERVISOR_ID, PRIV_SUPERVISOR_ID, err) < 0) {
                err_wrap(err, "delegate a cgroup to the supervisor");
                return -1;
        }
        if (deleg_save(cg, deleg_fd, err) < 0)
                return -1;
        ready_send(sup->sock, tmp);
        return 1;
}

int handover_run(struct handover *h, const struct handover_run *r)
{
        /* esbuild is the monitor's choice (the broker only names it back in
         * a SPAWN of kind bundle). */
        _cleanup_free_ char *esbuild = agent_find_esbuild();
        if (esbuild) {
                /* CHIDORI_ESBUILD=bin/esbuild: the operator's, from their cwd;
                 * and the file itself, not a symlink to it, which the
                 * supervisor may be unable to follow (decision 163). */
                char *abs = realpath(esbuild, NULL);
                free(esbuild);
                esbuild = abs;
        }
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
        if (worker[0] != '/') {
                /* the operator's cwd, which the supervisor may not be able
                 * to search (decision 163): absolute, the name kept */
                char cwd[PATH_MAX], *abs = NULL;
                if (getcwd(cwd, sizeof(cwd)) && asprintf(&abs, "%s/%s", cwd, worker) > 0) {
                        free(worker);
                        worker = abs;
                }
        }
        uid_t uid;
        gid_t gid;
        if (monitor_broker_user(r->broker_user, &uid, &gid, &e) < 0)
                return fail("the broker's user", e, err_code(e) == BROKER_E_USAGE ? EXIT_USAGE : EXIT_PROTOCOL);
        int config_fd = -1;
        if (chan_blob_create("config", (const char *const *)h->strs, h->n, &config_fd, &e) < 0)
                return fail("the broker's configuration", e, EXIT_PROTOCOL);
        _cleanup_free_ char *monitor = find_monitor(&e);
        if (!monitor) {
                close(config_fd);
                return fail("start the monitor (chidori-monitor)", e, EXIT_PROTOCOL);
        }
        /* Stop signals wait, blocked, until the monitor has its handlers
         * (monitor/main.c): one before the exec is passed as "stop". */
        sigset_t stops, old;
        sigemptyset(&stops);
        sigaddset(&stops, SIGINT);
        sigaddset(&stops, SIGTERM);
        sigaddset(&stops, SIGHUP);
        sigprocmask(SIG_BLOCK, &stops, &old);
        struct handover set;
        handover_init(&set);
        int kept[BROKER_MAX_EXTRA + 1];
        size_t nkept = 0;
        monitor_settings(&set, r, worker, uid, gid);
        if (esbuild)
                handover_add(&set, "esbuild=%s", esbuild);
        pass_fd(&set, "config_fd", config_fd, kept, &nkept);
        for (size_t i = 0; i < h->nfds; i++)
                pass_fd(&set, "fd", h->fds[i], kept, &nkept);
        for (int s = 1; s < 32; s++)
                if (sigismember(&stops, s) && !sigismember(&old, s))
                        handover_add(&set, "unblock=%d", s);
        int set_fd = -1;
        if (!set.failed && chan_blob_create("monitor", (const char *const *)set.strs, set.n, &set_fd, &e) == 0) {
                char fdtext[16];
                snprintf(fdtext, sizeof(fdtext), "%d", set_fd);
                /* CHIDORI_PRIVSEP=1 as root: chidori-privhelper keeps root and
                 * runs the monitor as an unprivileged supervisor
                 * (privhelper/main.c, decision 163). */
                char why[200] = "";
                int privsep = handover_privsep(uid, why, sizeof(why));
                _cleanup_free_ char *helper = privsep > 0 ? handover_find_privhelper(&e) : NULL;
                if (privsep == 0 && why[0] && !r->quiet)
                        fprintf(stderr, "chidori: note: the monitor keeps root: privilege separation is not possible "
                                        "here (%s)\n", why);
                if (privsep < 0) {
                        err_setc(&e, EXIT_LAYER_UNAVAILABLE, 0, "CHIDORI_PRIVSEP=1: privilege separation is not "
                                 "possible here (%s); unset it to let the monitor keep root", why);
                } else if (privsep > 0 && !helper) {
                        /* e says where it looked */
                } else if (fcntl(set_fd, F_SETFD, 0) == 0) {
                        char *argv[] = { "chidori-monitor", "--handover", fdtext, NULL };
                        cli_json_stop();
                        fflush(NULL);
                        struct supervisor sup;
                        if (!helper) {
                                execv(monitor, argv);
                                err_set(&e, errno, "exec %s", monitor);
                        } else if (supervisor_start(monitor, set_fd, uid, gid, &sup, &e) == 0) {
                                /* The supervisor execs while the helper does (decision 164);
                                 * its word comes from here when nothing needs a trial (174). */
                                char ptext[16], pfdtext[16], stext[16], dtext[16], tmp[PATH_MAX];
                                struct deleg cg = { 0 };
                                int deleg_fd = -1;
                                int early = ready_early(&set, &sup, tmp, sizeof(tmp), &cg, &deleg_fd, &e);
                                snprintf(ptext, sizeof(ptext), "%d", (int)sup.pid);
                                snprintf(pfdtext, sizeof(pfdtext), "%d", sup.pidfd);
                                snprintf(stext, sizeof(stext), "%d", sup.sock);
                                snprintf(dtext, sizeof(dtext), "%d", deleg_fd);
                                char *hargv[] = { "chidori-privhelper", "--monitor", monitor, "--handover", fdtext,
                                                  "--supervisor", ptext, pfdtext, stext, early > 0 ? "--ready" : NULL,
                                                  tmp[0] ? tmp : "-", dtext, NULL };
                                if (early >= 0) {
                                        execv(helper, hargv);
                                        err_set(&e, errno, "exec %s", helper);
                                }
                                supervisor_stop(&sup);
                                if (deleg_fd >= 0)
                                        close(deleg_fd);
                                deleg_remove(&cg);
                                ready_remove_tmp(tmp);
                        }
                } else {
                        err_set(&e, errno, "exec %s", monitor);
                }
        } else if (!e) {
                err_set(&e, ENOMEM, "its settings");
        }
        sigprocmask(SIG_SETMASK, &old, NULL);
        if (set_fd >= 0)
                close(set_fd);
        for (size_t i = 0; i < nkept; i++)
                close(kept[i]);
        close(config_fd);
        handover_free(&set);
        return fail("start the monitor (chidori-monitor)", e,
                    err_code(e) == EXIT_LAYER_UNAVAILABLE ? EXIT_LAYER_UNAVAILABLE : EXIT_PROTOCOL);
}

static const char *secrets_env(const char *name)
{
        return getenv(name);
}

/* --secrets: the values are read here, as the operator (the broker can
 * reach neither the operator's environment nor the files), and go in the
 * sealed config blob (secret=NAME VALUE, secret_host=NAME HOST), never in
 * an argv or an environment.  A bad file is a usage error, as in the
 * one-process run (cli/grants.c). */
int handover_secrets(struct handover *h, const char *file)
{
        struct secrets *s = NULL;
        struct err *e = NULL;
        if (secrets_load(file, secrets_env, &s, &e) < 0) {
                fprintf(stderr, "chidori: --secrets %s\n", err_msg(e));
                err_free(e);
                return -1;
        }
        for (size_t i = 0; i < secrets_count(s); i++) {
                handover_add(h, "secret=%s %s", secrets_name(s, i), secrets_value(s, i));
                for (size_t k = 0; k < secrets_nhosts(s, i); k++)
                        handover_add(h, "secret_host=%s %s", secrets_name(s, i), secrets_host(s, i, k));
        }
        secrets_free(s);
        return 0;
}

int handover_grants_common(struct handover *h, const struct grants_opts *g)
{
        for (size_t i = 0; i < g->nallow; i++)
                handover_add(h, "allow_host=%s", g->allow_specs[i]);
        if (g->http_max_response)
                handover_add(h, "http_max_response=%llu", g->http_max_response);
        if (g->http_timeout_ms)
                handover_add(h, "http_timeout_ms=%ld", g->http_timeout_ms);
        if (g->auto_approve)
                handover_add(h, "auto_approve=1");
        if (g->tools_file)
                handover_file(h, "tools", g->tools_file);
        if (g->secrets_file && handover_secrets(h, g->secrets_file) < 0)
                return -1;
        if (g->max_tools)
                handover_add(h, "max_tools=%ld", g->max_tools);
        for (char **e = environ; *e; e++)
                if (strncmp(*e, "CHIDORI_LLM_", 12) == 0 && strchr(*e, '='))
                        handover_add(h, "llm=%s", *e);
        return 0;
}
