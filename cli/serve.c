/* cli/serve.c — `chidori serve AGENT`: options, tokens, the listening socket
 * (bound here, by the privileged side), then chidori-monitor exec'd with the
 * broker's config (serve_broker; the server runs in the broker, broker/serve.c).
 * CHIDORI_RUN_BROKER=0: the one-process server of before, the banner and the
 * event loop here until SIGTERM (docs/serve.md). */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <pwd.h>
#include <unistd.h>

#include "cli/bounds.h"
#include "cli/cli.h"
#include "cli/grants.h"
#include "effects/net/secrets.h"
#include "server/quotas.h"
#include "cli/handover.h"
#include "cli/options.h"
#include "cli/suggest.h"
#include "common/cleanup.h"
#include "common/text.h"
#include "common/tmpown.h"
#include "common/util.h"
#include "effects/effects.h"
#include "effects/memory/memstore.h"
#include "policy/policy.h"
#include "runtime/evloop.h"
#include "sandbox/cgroup/cgroup.h"
#include "server/server.h"
#include "server/store.h"

#define SERVE_DEFAULT_LISTEN "127.0.0.1:8080"
#define SERVE_DEFAULT_MAX_BODY ((uint64_t)1 << 20)
#define SERVE_DEFAULT_CONN_TIMEOUT 30
#define SERVE_DEFAULT_MAX_CONNS 256

struct serve_opts {
        const char *agent_path;
        const char *listen;
        const char *token_file;
        uint64_t max_body;
        long conn_timeout;
        long max_conns;
        long max_running;
        long max_queued;
        const char *state_dir;
        const char *store;        /* --store SPEC [CHIDORI_STORE]: NULL, state_dir/serve.db */
        long js_deadline_ms;      /* -1: the default for the policy */
        struct sandbox_opts sb;
        struct session_limits lim;
        long grace;               /* seconds running sessions get after SIGTERM */
        long approval_ttl, session_ttl; /* seconds, 0: never */
        struct grants_opts gr;    /* --workspace, --allow-host, --tools ...: each session's */
        bool shared_workspace;
        bool trusted, untrusted, quiet, shared_memory;
        const char *quotas_file;  /* --quotas FILE [CHIDORI_QUOTAS] */
        const char *broker_user;  /* --broker-user NAME|UID (else CHIDORI_BROKER_USER, monitor/broker.c) */
        const char *health_listen; /* --health-listen HOST:PORT [CHIDORI_HEALTH_LISTEN], NULL: none */
        const char *replica_id;   /* --replica-id ID [CHIDORI_REPLICA_ID], NULL: host-pid-random */
        long lease_s;             /* --lease SECS [CHIDORI_LEASE]: a running session's lease */
        long pool, pool_refill_ms; /* --pool N, --pool-refill-ms MS: the warm pool (monitor/serve.c) */
        struct quotas *quotas;    /* ... read and checked (serve_check_args) */
};

static int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int usage_error(const char *fmt, ...)
{
        va_list ap;
        va_start(ap, fmt);
        fprintf(stderr, "chidori: ");
        vfprintf(stderr, fmt, ap);
        fprintf(stderr, "\nTry 'chidori serve --help'.\n");
        va_end(ap);
        return EXIT_USAGE;
}

static void serve_help(void)
{
        printf("Usage: chidori serve AGENT [OPTIONS]\n"
               "\n"
               "Serve one agent over HTTP: every POST /sessions is a run of AGENT in its own box,\n"
               "recorded and streamed (docs/serve.md has the routes, their JSON and the error codes).\n"
               "\n"
               "Options (environment variable in brackets):\n"
               "  --listen ADDR         HOST:PORT (default " SERVE_DEFAULT_LISTEN "; port 0 picks a free one,\n"
               "                        printed on the Listening: line) or unix:PATH (mode 0660)\n"
               "  --health-listen HOST:PORT  a second listener serving only GET /healthz and /readyz,\n"
               "                        without a token, for the kubelet's probes on the pod IP\n"
               "                        (everything else 404; port 0 picks one, printed on the Health:\n"
               "                        line) [CHIDORI_HEALTH_LISTEN]\n"
               "  --token-file FILE     bearer tokens: one token, or lines 'TENANT TOKEN' (the tenant\n"
               "                        'admin' sees every tenant's sessions); required on every route but\n"
               "                        /healthz and /readyz [CHIDORI_SERVE_TOKEN holds one token]\n"
               "                        Without a token the server listens on loopback or a unix socket\n"
               "                        only (exit 78 otherwise).\n"
               "  --max-body SIZE       largest request body, e.g. 64K or 1M (default 1M; 413 past it)\n"
               "  --conn-timeout SECS   close a connection idle this long (default 30; slow clients)\n"
               "  --max-connections N   connections at once (default 256)\n"
               "  --max-running N       sessions running at once (default 2 x CPUs)\n"
               "  --max-queued N        sessions waiting for a slot; past it 429 (default 64)\n"
               "  --pool N              keep N boxes started ahead (0-64, default 0: none), each with its\n"
               "                        worker's engine ready, each handed to one session and never\n"
               "                        again; a session takes one instead of starting a box\n"
               "                        (chidori_pool_hits_total and _misses_total in /metrics)\n"
               "  --pool-refill-ms MS   once a pooled box's run ended (or 1 s after its hand-out), wait MS\n"
               "                        more before starting its replacement (default 0; more keeps\n"
               "                        bursts from sharing the CPU with refills)\n"
               "  --state-dir DIR       where the sessions (DIR/serve.db) and agent memory are kept\n"
               "                        [default $XDG_STATE_HOME/chidori or ~/.local/state/chidori]\n"
               "  --store SPEC          where the sessions are kept: sqlite:PATH (a database file) or\n"
               "                        postgres://[USER[:PASSWORD]@]HOST[:PORT]/DB[?PARAMS] (also\n"
               "                        postgresql://; libpq's PG* variables apply; a unix socket:\n"
               "                        ?host=/DIR); default: sqlite in --state-dir [CHIDORI_STORE]\n"
               "  --replica-id ID       this server's name among the replicas sharing a PostgreSQL store\n"
               "                        (letters, digits, . _ -; at most 64); default: HOST-PID-RANDOM,\n"
               "                        new at each start; a stable id takes its own sessions back at\n"
               "                        once after a restart [CHIDORI_REPLICA_ID]\n"
               "  --lease SECS          a running session's lease on a PostgreSQL store: renewed every\n"
               "                        SECS/3, taken over by another replica once it expired (default\n"
               "                        10) [CHIDORI_LEASE]\n"
               "  --shared-memory       every session shares the agent's memory namespace (default: each\n"
               "                        session its own)\n"
               "  --grace SECS          after SIGTERM, running sessions get this long to finish (default\n"
               "                        30; a second SIGTERM stops at once); those still running are\n"
               "                        killed and resumed by replay at the next start\n"
               "  --approval-ttl SECS   a pending approval older than this is denied (default 0: never)\n"
               "  --session-ttl SECS    a finished session (done, failed, cancelled) older than this is\n"
               "                        deleted with its journal (default 0: kept)\n"
               "  --js-deadline MS      the engine's CPU-time budget per run, in ms (default 10000, 60000\n"
               "                        under a permissive policy; 0 = none) [CHIDORI_JS_DEADLINE_MS]\n"
               "  --quotas FILE         quotas per session and budgets per tenant (JSON: docs/serve.md,\n"
               "                        \"Quotas\"); a call over one fails with EQUOTA [CHIDORI_QUOTAS]\n"
               "  --shared-workspace    every session works on --workspace DIR itself (default: each\n"
               "                        session its own DIR/<session id>/)\n"
               "  What every session is handed, as for `chidori run` (--workspace: DIR/<session id>/):\n"
               GRANTS_OPTIONS_HELP
               "  Every run of a session has the options of `chidori run`'s box:\n"
               BOUNDS_OPTIONS_HELP
               SANDBOX_OPTIONS_HELP
               "  --trusted             the permissive policy when no CHIDORI_POLICY* is set (the\n"
               "                        default of serve is untrusted: deny by default)\n"
               "  --untrusted           the untrusted policy whatever CHIDORI_POLICY* says\n"
               "  --quiet               do not print the banner\n"
               "  --broker-user USER    the user the broker runs as when chidori runs as root: a name or\n"
               "                        uid, never 0 or 65534 (default: user chidori-broker, else uid\n"
               "                        65533) [CHIDORI_BROKER_USER]\n"
               "  -h, --help            show this help\n"
               "\n"
               "The server is two processes: this one keeps the privilege (the socket, the boxes), an\n"
               "unprivileged, confined broker parses HTTP, keeps the state and reads the workers' frames.\n"
               "CHIDORI_RUN_BROKER=0 runs it as one process with your privileges (comparison, debugging).\n");
}

enum {
        SVOPT_LISTEN = 1200, SVOPT_TOKEN_FILE, SVOPT_MAX_BODY, SVOPT_CONN_TIMEOUT, SVOPT_MAX_CONNS,
        SVOPT_MAX_RUNNING, SVOPT_MAX_QUEUED, SVOPT_TRUSTED, SVOPT_UNTRUSTED, SVOPT_QUIET, SVOPT_STATE_DIR,
        SVOPT_SHARED_MEMORY, SVOPT_JS_DEADLINE, SVOPT_GRACE, SVOPT_APPROVAL_TTL, SVOPT_SESSION_TTL,
        SVOPT_SHARED_WORKSPACE, SVOPT_QUOTAS, SVOPT_BROKER_USER, SVOPT_HEALTH_LISTEN, SVOPT_STORE, SVOPT_REPLICA_ID, SVOPT_LEASE,
        SVOPT_POOL, SVOPT_POOL_REFILL,
};

/* ---- the box of a session: the CLI's provider, as `run` uses it ---- */

struct serve_box {
        struct spawn_opts so;
        struct cli_boxes boxes;
        struct grants grants;
        bool granted;
        char run_id[64];
};

struct serve_boxes {
        const char *worker_path;
        const struct sandbox_opts *sb;
        const struct serve_opts *o;
        const struct secrets *secrets; /* --secrets, read once (serve_check_grants) */
};

/* What a session is handed: the grants of `run`, its workspace being
 * DIR/<session id>/ (made 0700) unless --shared-workspace. */
static int session_grants(struct serve_boxes *sbx, const char *id, struct grants *g, struct session_config *cfg,
                          struct err **err)
{
        const struct serve_opts *o = sbx->o;
        struct grants_opts go = o->gr;
        char *ws = NULL;
        if (go.workspace_dir && !o->shared_workspace && id) {
                if (asprintf(&ws, "%s/%s", go.workspace_dir, id) < 0)
                        return err_set(err, ENOMEM, "workspace");
                if (mkdir(ws, 0700) < 0 && errno != EEXIST) {
                        err_set(err, errno, "create the session's workspace %s", ws);
                        free(ws);
                        return -1;
                }
                go.workspace_dir = ws;
        }
        struct nested_src ns = {
                .sb = sbx->sb, .untrusted = o->untrusted, .trusted = o->trusted, .js_deadline_ms = o->js_deadline_ms,
                .state_dir = o->state_dir, .lim = &o->lim, .agent_path = o->agent_path,
        };
        if (sbx->secrets)
                go.secrets_file = NULL; /* read once at start: every session gets that table */
        int rc = grants_open(&go, &ns, g, cfg, err);
        if (rc == 0 && sbx->secrets)
                cfg->secrets = sbx->secrets;
        free(ws);
        return rc;
}

static int boxes_new(void *arg, const char *run_id, struct session_config *cfg, const struct box_provider **ret,
                     void **ret_handle, struct err **err)
{
        struct serve_boxes *sbx = arg;
        struct serve_box *b = calloc(1, sizeof(*b));
        if (!b)
                return err_set(err, ENOMEM, "a box for session %s", run_id);
        if (cfg) {
                if (session_grants(sbx, run_id, &b->grants, cfg, err) < 0) {
                        free(b);
                        return -1;
                }
                b->granted = true;
        }
        snprintf(b->run_id, sizeof(b->run_id), "%s", run_id);
        b->so = (struct spawn_opts){ .worker_path = sbx->worker_path, .run_id = b->run_id, .sandbox = sbx->sb };
        cli_boxes_init(&b->boxes, &b->so, &b->grants);
        *ret = &b->boxes.provider;
        *ret_handle = b;
        return 0;
}

static void boxes_free(void *arg, void *handle)
{
        (void)arg;
        struct serve_box *b = handle;
        if (b && b->granted)
                grants_close(&b->grants);
        free(b);
}

static int parse_count(const char *opt, const char *arg, long min, long max, long *ret)
{
        long v;
        if (parse_nonneg(arg, &v) < 0 || v < min || v > max) {
                char q[128];
                usage_error("%s '%s' is not valid (expected an integer from %ld to %ld)", opt,
                            text_quote(arg, strnlen(arg, 64), q, sizeof(q)), min, max);
                return -1;
        }
        *ret = v;
        return 0;
}

/* --replica-id: what an operator can name a pod by (StatefulSet names,
 * host names), and nothing a log line or SQL could trip on. */
static int parse_replica_id(const char *opt, const char *arg, const char **ret)
{
        size_t n = strlen(arg), ok = strspn(arg, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-");
        if (n == 0 || n > SERVE_REPLICA_ID_MAX || ok != n) {
                char q[128];
                usage_error("%s '%s' is not a replica id (expected 1 to %d letters, digits, '.', '_' or '-', e.g. "
                            "the pod's name)",
                            opt, text_quote(arg, strnlen(arg, 80), q, sizeof(q)), SERVE_REPLICA_ID_MAX);
                return -1;
        }
        *ret = arg;
        return 0;
}

/* ---- the listening socket ---- */

static bool addr_is_loopback(const struct sockaddr *sa)
{
        if (sa->sa_family == AF_INET)
                return (ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr) >> 24) == 127;
        if (sa->sa_family == AF_INET6) {
                const struct in6_addr *a = &((const struct sockaddr_in6 *)sa)->sin6_addr;
                if (IN6_IS_ADDR_LOOPBACK(a))
                        return true;
                return IN6_IS_ADDR_V4MAPPED(a) && a->s6_addr[12] == 127;
        }
        return false;
}

/* unix:PATH: a stale socket left by a killed server is replaced; a live one
 * (something answers) is an error. */
static int listen_unix(const char *path, char *desc, size_t dlen)
{
        struct sockaddr_un sun = { .sun_family = AF_UNIX };
        char q[PATH_MAX];
        text_quote(path, strlen(path), q, sizeof(q));
        if (!*path || strlen(path) >= sizeof(sun.sun_path)) {
                usage_error("--listen unix:%s: a socket path must be 1 to %zu bytes", q, sizeof(sun.sun_path) - 1);
                return -1;
        }
        memcpy(sun.sun_path, path, strlen(path) + 1);
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0) {
                fprintf(stderr, "chidori: serve: socket: %s\n", strerror(errno));
                return -1;
        }
        struct stat st;
        if (lstat(path, &st) == 0) {
                if (!S_ISSOCK(st.st_mode)) {
                        fprintf(stderr, "chidori: serve: --listen unix:%s: the path exists and is not a socket; "
                                        "remove it or choose another path\n", q);
                        close(fd);
                        return -1;
                }
                int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
                if (probe >= 0 && connect(probe, (struct sockaddr *)&sun, sizeof(sun)) == 0) {
                        close(probe);
                        fprintf(stderr, "chidori: serve: --listen unix:%s: another server is listening on "
                                        "this socket; stop it or choose another path\n", q);
                        close(fd);
                        return -1;
                }
                if (probe >= 0)
                        close(probe);
                unlink(path); /* stale: nobody listens */
        }
        mode_t old = umask(0117); /* the socket is made 0660, never wider for a moment */
        int rc = bind(fd, (struct sockaddr *)&sun, sizeof(sun));
        umask(old);
        if (rc < 0 || chmod(path, 0660) < 0 || listen(fd, 128) < 0) {
                fprintf(stderr, "chidori: serve: --listen unix:%s: %s\n", q, strerror(errno));
                close(fd);
                return -1;
        }
        snprintf(desc, dlen, "unix:%s", q);
        return fd;
}

/* HOST:PORT, [V6]:PORT.  *ret_loopback: every address it listens on is loopback. */
static int listen_tcp(const char *flag, const char *spec, char *desc, size_t dlen, bool *ret_loopback)
{
        char q[256];
        text_quote(spec, strnlen(spec, 200), q, sizeof(q));
        char host[256];
        const char *port;
        if (spec[0] == '[') {
                const char *close_b = strchr(spec, ']');
                if (!close_b || close_b[1] != ':' || (size_t)(close_b - spec - 1) >= sizeof(host)) {
                        usage_error("%s '%s' is not valid (expected HOST:PORT, [IPV6]:PORT%s)", flag, q,
                                    strcmp(flag, "--listen") == 0 ? " or unix:PATH" : "");
                        return -1;
                }
                memcpy(host, spec + 1, (size_t)(close_b - spec - 1));
                host[close_b - spec - 1] = '\0';
                port = close_b + 2;
        } else {
                const char *colon = strrchr(spec, ':');
                if (!colon || colon == spec || (size_t)(colon - spec) >= sizeof(host) || strchr(spec, ':') != colon) {
                        usage_error("%s '%s' is not valid (expected HOST:PORT, [IPV6]:PORT%s)", flag, q,
                                    strcmp(flag, "--listen") == 0 ? " or unix:PATH" : "");
                        return -1;
                }
                memcpy(host, spec, (size_t)(colon - spec));
                host[colon - spec] = '\0';
                port = colon + 1;
        }
        long p;
        if (parse_nonneg(port, &p) < 0 || p > 65535) {
                usage_error("%s '%s': the port is not a number from 0 to 65535", flag, q);
                return -1;
        }
        struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
                                  .ai_flags = AI_PASSIVE | AI_NUMERICSERV };
        struct addrinfo *ai = NULL;
        int g = getaddrinfo(host, port, &hints, &ai);
        if (g != 0 || !ai) {
                usage_error("%s '%s': the host cannot be resolved (%s)", flag, q, gai_strerror(g));
                return -1;
        }
        int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0) {
                fprintf(stderr, "chidori: serve: socket: %s\n", strerror(errno));
                freeaddrinfo(ai);
                return -1;
        }
        int one = 1;
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
        *ret_loopback = addr_is_loopback(ai->ai_addr);
        if (bind(fd, ai->ai_addr, ai->ai_addrlen) < 0 || listen(fd, 128) < 0) {
                fprintf(stderr, "chidori: serve: %s %s: %s%s\n", flag, q, strerror(errno),
                        errno == EADDRINUSE ? " (choose another port, or stop what listens there)" : "");
                close(fd);
                freeaddrinfo(ai);
                return -1;
        }
        freeaddrinfo(ai);
        struct sockaddr_storage ss;
        socklen_t sl = sizeof(ss);
        char ip[INET6_ADDRSTRLEN] = "?";
        unsigned short bound = 0;
        if (getsockname(fd, (struct sockaddr *)&ss, &sl) == 0) {
                if (ss.ss_family == AF_INET) {
                        struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
                        inet_ntop(AF_INET, &s4->sin_addr, ip, sizeof(ip));
                        bound = ntohs(s4->sin_port);
                } else if (ss.ss_family == AF_INET6) {
                        struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
                        inet_ntop(AF_INET6, &s6->sin6_addr, ip, sizeof(ip));
                        bound = ntohs(s6->sin6_port);
                }
        }
        snprintf(desc, dlen, ss.ss_family == AF_INET6 ? "http://[%s]:%u" : "http://%s:%u", ip, bound);
        return fd;
}

/* ---- signals: SIGTERM/SIGINT/SIGHUP wake the loop through a pipe ---- */

static int stop_pipe[2] = { -1, -1 };

static void on_serve_signal(int sig)
{
        int e = errno;
        launcher_stop_signal = sig;
        if (stop_pipe[1] >= 0) {
                char b = (char)sig;
                ssize_t w = write(stop_pipe[1], &b, 1);
                (void)w;
        }
        errno = e;
}

struct serve_state {
        struct server *srv;
        bool stop;
        bool draining;
        double drain_until;       /* mono_ms() */
        long grace_s;
};

/* The first stop signal drains (no new sessions, /readyz 503; running
 * sessions get --grace); the second one, or the end of the grace, stops. */
static void on_stop_pipe(struct evloop *loop, struct ev_io *io, int fd, uint32_t revents, void *arg)
{
        (void)loop, (void)io, (void)revents;
        struct serve_state *st = arg;
        char buf[16];
        ssize_t n, got = 0;
        while ((n = read(fd, buf, sizeof(buf))) > 0)
                got += n;
        if (st->draining || got > 1 || !st->srv || st->grace_s == 0 || server_running(st->srv) == 0) {
                st->stop = true;
                return;
        }
        st->draining = true;
        st->drain_until = mono_ms() + (double)st->grace_s * 1000.0;
        server_set_draining(st->srv, true);
        fprintf(stderr, "chidori: serve: draining: %u running session(s) get %ld s to finish (a second SIGTERM stops "
                        "at once)\n", server_running(st->srv), st->grace_s);
}

/* ---- the command line ---- */

static const struct option serve_longopts[] = {
        { "listen", required_argument, NULL, SVOPT_LISTEN },
        { "token-file", required_argument, NULL, SVOPT_TOKEN_FILE },
        { "max-body", required_argument, NULL, SVOPT_MAX_BODY },
        { "conn-timeout", required_argument, NULL, SVOPT_CONN_TIMEOUT },
        { "max-connections", required_argument, NULL, SVOPT_MAX_CONNS },
        { "max-running", required_argument, NULL, SVOPT_MAX_RUNNING },
        { "max-queued", required_argument, NULL, SVOPT_MAX_QUEUED },
        { "pool", required_argument, NULL, SVOPT_POOL },
        { "pool-refill-ms", required_argument, NULL, SVOPT_POOL_REFILL },
        { "trusted", no_argument, NULL, SVOPT_TRUSTED },
        { "untrusted", no_argument, NULL, SVOPT_UNTRUSTED },
        { "quiet", no_argument, NULL, SVOPT_QUIET },
        { "state-dir", required_argument, NULL, SVOPT_STATE_DIR },
        { "shared-memory", no_argument, NULL, SVOPT_SHARED_MEMORY },
        { "js-deadline", required_argument, NULL, SVOPT_JS_DEADLINE },
        { "grace", required_argument, NULL, SVOPT_GRACE },
        { "approval-ttl", required_argument, NULL, SVOPT_APPROVAL_TTL },
        { "session-ttl", required_argument, NULL, SVOPT_SESSION_TTL },
        { "shared-workspace", no_argument, NULL, SVOPT_SHARED_WORKSPACE },
        { "quotas", required_argument, NULL, SVOPT_QUOTAS },
        { "broker-user", required_argument, NULL, SVOPT_BROKER_USER },
        { "health-listen", required_argument, NULL, SVOPT_HEALTH_LISTEN },
        { "store", required_argument, NULL, SVOPT_STORE },
        { "replica-id", required_argument, NULL, SVOPT_REPLICA_ID },
        { "lease", required_argument, NULL, SVOPT_LEASE },
        SANDBOX_LONGOPTS,
        BOUNDS_LONGOPTS,
        GRANTS_LONGOPTS,
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
};

/* The defaults, then the environment: 0, or -1 after a usage error. */
static int serve_opts_init(struct serve_opts *o)
{
        long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
        *o = (struct serve_opts){
                .listen = SERVE_DEFAULT_LISTEN,
                .max_body = SERVE_DEFAULT_MAX_BODY,
                .conn_timeout = SERVE_DEFAULT_CONN_TIMEOUT,
                .max_conns = SERVE_DEFAULT_MAX_CONNS,
                .max_running = 2 * (ncpu > 0 ? ncpu : 1),
                .max_queued = 64,
                .js_deadline_ms = -1,
                .grace = 30,
                .lease_s = SERVE_DEFAULT_LEASE_S,
        };
        sandbox_opts_init(&o->sb);
        bounds_opts_init(&o->lim);
        const char *env_js = getenv("CHIDORI_JS_DEADLINE_MS");
        if (env_js && *env_js && parse_nonneg(env_js, &o->js_deadline_ms) < 0) {
                fprintf(stderr, "chidori: CHIDORI_JS_DEADLINE_MS='%s' is not a number of milliseconds (expected an "
                                "integer >= 0)\n", env_js);
                return -1;
        }
        if (sandbox_opts_env(&o->sb) < 0 || bounds_opts_env(&o->lim) < 0 || grants_opts_env(&o->gr) < 0)
                return -1;
        const char *env_store = getenv("CHIDORI_STORE");
        if (env_store && *env_store)
                o->store = env_store;
        const char *env_q = getenv("CHIDORI_QUOTAS");
        if (env_q && *env_q)
                o->quotas_file = env_q;
        const char *env_h = getenv("CHIDORI_HEALTH_LISTEN");
        if (env_h && *env_h)
                o->health_listen = env_h;
        const char *env_r = getenv("CHIDORI_REPLICA_ID");
        if (env_r && *env_r && parse_replica_id("CHIDORI_REPLICA_ID", env_r, &o->replica_id) < 0)
                return -1;
        const char *env_l = getenv("CHIDORI_LEASE");
        if (env_l && *env_l && parse_count("CHIDORI_LEASE", env_l, 1, 3600, &o->lease_s) < 0)
                return -1;
        return 0;
}

static int parse_max_body(const char *arg, uint64_t *ret)
{
        struct err *e = NULL;
        if (cgroup_parse_size(arg, ret, &e) < 0 || *ret == 0 || *ret > ((uint64_t)1 << 30)) {
                char q[128];
                usage_error("--max-body '%s' is not valid (expected a size from 1 byte to 1G, e.g. 64K or 1M)%s%s",
                            text_quote(arg, strnlen(arg, 64), q, sizeof(q)), e ? ": " : "", e ? err_msg(e) : "");
                err_free(e);
                return -1;
        }
        return 0;
}

/* One of serve's own options: 0 taken, -1 a usage error (printed), 1 not
 * one of them. */
static int serve_option(struct serve_opts *o, int c, const char *arg)
{
        switch (c) {
        case SVOPT_STATE_DIR: o->state_dir = arg; return 0;
        case SVOPT_SHARED_MEMORY: o->shared_memory = true; return 0;
        case SVOPT_JS_DEADLINE: return parse_count("--js-deadline", arg, 0, 86400000L, &o->js_deadline_ms);
        case SVOPT_GRACE: return parse_count("--grace", arg, 0, 86400, &o->grace);
        case SVOPT_SHARED_WORKSPACE: o->shared_workspace = true; return 0;
        case SVOPT_QUOTAS: o->quotas_file = arg; return 0;
        case SVOPT_BROKER_USER:
                if (!*arg)
                        return usage_error("--broker-user needs a user name or uid (e.g. chidori-broker)");
                o->broker_user = arg;
                return 0;
        case SVOPT_HEALTH_LISTEN: o->health_listen = arg; return 0;
        case SVOPT_STORE: o->store = arg; return 0;
        case SVOPT_REPLICA_ID: return parse_replica_id("--replica-id", arg, &o->replica_id);
        case SVOPT_LEASE: return parse_count("--lease", arg, 1, 3600, &o->lease_s);
        case SVOPT_APPROVAL_TTL: return parse_count("--approval-ttl", arg, 0, 31536000L, &o->approval_ttl);
        case SVOPT_SESSION_TTL: return parse_count("--session-ttl", arg, 0, 315360000L, &o->session_ttl);
        case SVOPT_LISTEN: o->listen = arg; return 0;
        case SVOPT_TOKEN_FILE: o->token_file = arg; return 0;
        case SVOPT_MAX_BODY: return parse_max_body(arg, &o->max_body);
        case SVOPT_CONN_TIMEOUT: return parse_count("--conn-timeout", arg, 1, 3600, &o->conn_timeout);
        case SVOPT_MAX_CONNS: return parse_count("--max-connections", arg, 1, 65536, &o->max_conns);
        case SVOPT_MAX_RUNNING: return parse_count("--max-running", arg, 1, 4096, &o->max_running);
        case SVOPT_MAX_QUEUED: return parse_count("--max-queued", arg, 0, 1000000, &o->max_queued);
        case SVOPT_POOL: return parse_count("--pool", arg, 0, SERVE_POOL_MAX, &o->pool);
        case SVOPT_POOL_REFILL: return parse_count("--pool-refill-ms", arg, 0, SERVE_POOL_REFILL_MAX_MS, &o->pool_refill_ms);
        case SVOPT_TRUSTED: o->trusted = true; return 0;
        case SVOPT_UNTRUSTED: o->untrusted = true; return 0;
        case SVOPT_QUIET: o->quiet = true; return 0;
        default: return 1;
        }
}

/* The operands and the checks across options, after getopt. */
static int serve_check_args(int argc, char **argv, struct serve_opts *o)
{
        if (optind >= argc)
                return usage_error("no agent file given (chidori serve AGENT [OPTIONS])");
        if (argc - optind > 1) {
                char q[256];
                return usage_error("one agent file expected, got also '%s'",
                                   text_quote(argv[optind + 1], strnlen(argv[optind + 1], 200), q, sizeof(q)));
        }
        if (o->trusted && o->untrusted)
                return usage_error("give --trusted or --untrusted, not both");
        if (sandbox_opts_check(&o->sb) < 0)
                return EXIT_USAGE;
        if (!(o->sb.disable & (1u << LAYER_CGROUP)) && o->sb.pids_max < ENGINE_PIDS_MIN)
                return usage_error("process limit too low to start the engine (--pids %llu; at least %d needed)",
                                   (unsigned long long)o->sb.pids_max, ENGINE_PIDS_MIN);
        if (o->state_dir && state_dir_check(o->state_dir) < 0)
                return EXIT_USAGE;
        if (o->store) {
                enum store_kind kind;
                struct err *e = NULL;
                char *dir = NULL;
                int rc = store_spec_parse(o->store, &kind, &e);
                if (rc == 0 && kind == STORE_POSTGRES)
                        rc = store_pg_socket_dir(o->store, &dir, &e);
                free(dir);
                if (rc < 0) {
                        usage_error("--store (or CHIDORI_STORE): %s", err_msg(e));
                        err_free(e);
                        return EXIT_USAGE;
                }
                /* sqlite:PATH: a file name in a folder that exists. */
                const char *path = o->store + 7, *slash = strrchr(path, '/');
                char folder[PATH_MAX];
                snprintf(folder, sizeof(folder), "%.*s", slash ? (int)(slash - path) : 1, !slash ? "." : slash == path ? "/" : path);
                struct stat sb;
                int bad = kind != STORE_SQLITE ? 0 : !*(slash ? slash + 1 : path) ? EINVAL
                                                  : stat(folder, &sb) < 0        ? errno
                                                  : !S_ISDIR(sb.st_mode)         ? ENOTDIR
                                                                                 : 0;
                if (bad) {
                        char q[PATH_MAX];
                        return usage_error("--store %s: %s (expected sqlite:PATH, a database file in an existing "
                                           "folder)", text_quote(o->store, strlen(o->store), q, sizeof(q)),
                                           bad == EINVAL ? "no file name" : strerror(bad));
                }
        }
        if (o->quotas_file) {
                struct err *e = NULL;
                if (quotas_load_file(o->quotas_file, &o->quotas, &e) < 0) {
                        char q[1200];
                        snprintf(q, sizeof(q), "--quotas %s", err_msg(e));
                        err_free(e);
                        text_fput_line(stderr, "chidori: serve: ", q, strlen(q));
                        fprintf(stderr, "Try 'chidori serve --help'.\n");
                        return EXIT_USAGE;
                }
        }
        o->agent_path = argv[optind];
        if (strcmp(o->agent_path, "-") == 0)
                return usage_error("serve runs an agent file; it cannot be read from stdin ('-')");
        return -1;
}

/* -1 to go on, or the exit code (--help, a usage error). */
static int serve_parse(int argc, char **argv, struct serve_opts *o)
{
        if (serve_opts_init(o) < 0)
                return EXIT_USAGE;
        optind = 1;
        opterr = 0;
        int c;
        while ((c = getopt_long(argc, argv, ":h", serve_longopts, NULL)) != -1) {
                if (c == '?' || c == ':')
                        return cli_bad_option("serve", argc, argv, serve_longopts);
                if (c == 'h') {
                        serve_help();
                        return EXIT_OK;
                }
                int h = sandbox_opts_parse(&o->sb, "serve", c, optarg);
                if (h == 0)
                        h = bounds_opts_parse(&o->lim, "serve", c, optarg);
                if (h == 0)
                        h = grants_opts_parse(&o->gr, "serve", c, optarg);
                if (h == 0 && (h = serve_option(o, c, optarg)) > 0)
                        return cli_bad_option("serve", argc, argv, serve_longopts);
                if (h < 0)
                        return EXIT_USAGE;
        }
        return serve_check_args(argc, argv, o);
}

/* ---- the run: each step returns -1 to go on, or the exit code ---- */

/* What serve holds while it runs; serve_close frees it. */
struct serve_run {
        struct auth *auth;
        struct agent agent;
        struct policy *pol;
        char *worker_path;
        char *state_dir;
        struct memstore *mem;
        struct memstore *db_mem;  /* --store postgres: agent memory in the database */
        struct store *store;
        int fd;                   /* the listening socket until the server has it */
        int health_fd;            /* --health-listen's, -1: none */
        char health_desc[128];    /* http://HOST:PORT */
        char *unix_path;          /* unlinked at the end */
        char desc[PATH_MAX + 16]; /* http://HOST:PORT or unix:PATH */
        struct evloop *loop;
        struct ev_io *stop_io;
        struct serve_state st;
        struct serve_boxes sbx;   /* the server's boxes_arg */
        struct secrets *secrets;  /* --secrets (wiped at the end) */
        struct err *err;
};

/* Tokens first: the listening decision depends on them. */
static int serve_tokens(struct serve_opts *o, struct serve_run *r)
{
        const char *env_token = getenv("CHIDORI_SERVE_TOKEN");
        if (o->token_file && env_token && *env_token)
                return usage_error("give --token-file or CHIDORI_SERVE_TOKEN, not both");
        if (o->token_file) {
                if (auth_load_file(o->token_file, &r->auth, &r->err) < 0) {
                        char q[PATH_MAX];
                        fprintf(stderr, "chidori: serve: --token-file '%s': %s\n",
                                text_quote(o->token_file, strlen(o->token_file), q, sizeof(q)), err_msg(r->err));
                        return EXIT_USAGE;
                }
        } else if (env_token && *env_token) {
                if (auth_new_token(env_token, &r->auth, &r->err) < 0) {
                        fprintf(stderr, "chidori: serve: CHIDORI_SERVE_TOKEN: %s\n", err_msg(r->err));
                        return EXIT_USAGE;
                }
        } else if (auth_new_open(&r->auth, &r->err) < 0) {
                fprintf(stderr, "chidori: serve: %s\n", err_msg(r->err));
                return EXIT_USAGE;
        }
        return -1;
}

/* The agent, the policy (and what it implies for the JIT and the CPU
 * budget), and the engine worker's binary. */
static int serve_load(struct serve_opts *o, struct serve_run *r)
{
        if (agent_load(o->agent_path, &r->agent, &r->err) < 0) {
                text_fput_line(stderr, "chidori: serve: ", err_msg(r->err), strlen(err_msg(r->err)));
                return err_code(r->err) == AGENT_E_BUNDLE || err_code(r->err) == AGENT_E_IMPORT ? EXIT_AGENT_ERROR
                                                                                               : EXIT_USAGE;
        }
        struct policy_sources src = {
                .surface = POLICY_SURFACE_SERVE,
                .flag_untrusted = o->untrusted,
                .flag_trusted = o->trusted,
                .env_file = getenv("CHIDORI_POLICY_FILE"),
                .env_inline = getenv("CHIDORI_POLICY"),
                .env_profile = getenv("CHIDORI_POLICY_PROFILE"),
        };
        char *warning = NULL;
        if (policy_select(&src, &r->pol, &warning, &r->err) < 0) {
                fprintf(stderr, "chidori: %s\n", err_msg(r->err));
                return EXIT_USAGE;
        }
        if (warning)
                fprintf(stderr, "chidori: warning: %s\n", warning);
        free(warning);
        /* As `run`: no JIT and a shorter CPU budget under a policy that is not permissive. */
        if (o->sb.jit < 0 && policy_fallback(r->pol) != POLICY_ALLOW)
                o->sb.jit = 0;
        if (o->js_deadline_ms < 0)
                o->js_deadline_ms = policy_fallback(r->pol) != POLICY_ALLOW ? 10000 : 60000;
        o->sb.engine_cpu_ms = o->js_deadline_ms;
        if (find_worker(&r->worker_path, &r->err) < 0) {
                fprintf(stderr, "chidori: serve: %s\n", err_msg(r->err));
                return EXIT_USAGE;
        }
        return -1;
}

/* The state directory, the agent memory and the sessions' store in it. */
static int serve_open_state(struct serve_opts *o, struct serve_run *r)
{
        if (o->state_dir ? !(r->state_dir = strdup(o->state_dir)) : memstore_default_dir(&r->state_dir, &r->err) < 0) {
                fprintf(stderr, "chidori: serve: %s; choose a place with --state-dir DIR\n", err_msg(r->err));
                return EXIT_USAGE;
        }
        /* The memory store first: it makes the state directory (and its parents, 0700). */
        if (memstore_open(r->state_dir, &r->mem, &r->err) < 0) {
                fprintf(stderr, "chidori: serve: open the memory store: %s; choose another place with --state-dir "
                                "DIR\n", err_msg(r->err));
                return EXIT_USAGE;
        }
        if (store_open_spec(o->store, r->state_dir, &r->store, &r->err) < 0) {
                fprintf(stderr, "chidori: serve: %s\n", err_msg(r->err));
                return err_code(r->err) == STORE_E_USAGE         ? EXIT_USAGE
                       : err_code(r->err) == STORE_E_UNAVAILABLE ? EXIT_LAYER_UNAVAILABLE
                       : err_code(r->err) == STORE_E_VERSION     ? EXIT_LAYER_UNAVAILABLE
                                                                 : EXIT_PROTOCOL;
        }
        if (store_memory_open(r->store, &r->db_mem, &r->err) < 0) {
                fprintf(stderr, "chidori: serve: %s\n", err_msg(r->err));
                return EXIT_PROTOCOL;
        }
        return -1;
}

/* The listening socket; anything but loopback or a unix socket needs a token. */
static int serve_listen(struct serve_opts *o, struct serve_run *r)
{
        bool loopback = true;
        if (strncmp(o->listen, "unix:", 5) == 0) {
                r->fd = listen_unix(o->listen + 5, r->desc, sizeof(r->desc));
                if (r->fd >= 0)
                        r->unix_path = strdup(o->listen + 5);
        } else {
                r->fd = listen_tcp("--listen", o->listen, r->desc, sizeof(r->desc), &loopback);
        }
        if (r->fd < 0)
                return EXIT_USAGE; /* printed; a usage error or a bind failure: 2 */
        if (o->health_listen) {
                bool lb;
                if (strncmp(o->health_listen, "unix:", 5) == 0)
                        return usage_error("--health-listen takes HOST:PORT (the kubelet probes over TCP), not "
                                           "a unix socket");
                r->health_fd = listen_tcp("--health-listen", o->health_listen, r->health_desc,
                                          sizeof(r->health_desc), &lb);
                if (r->health_fd < 0)
                        return EXIT_USAGE;
                fprintf(stderr, "Health: %s (GET /healthz and /readyz only, no token)\n", r->health_desc);
        }
        if (!loopback && !auth_required(r->auth)) {
                fprintf(stderr, "chidori: serve: refusing to listen on %s without a token: anyone who reaches it "
                                "could run the agent; set a token (--token-file FILE or CHIDORI_SERVE_TOKEN), or "
                                "listen on loopback (127.0.0.1) or a unix socket\n", r->desc);
                return EXIT_LAYER_UNAVAILABLE;
        }
        return -1;
}

/* The event loop, and SIGINT/SIGTERM/SIGHUP writing to its stop pipe. */
static int serve_signals(struct serve_opts *o, struct serve_run *r)
{
        (void)o;
        if (evloop_new(&r->loop, &r->err) < 0 || pipe2(stop_pipe, O_CLOEXEC | O_NONBLOCK) < 0 ||
            evloop_io_add(r->loop, stop_pipe[0], EPOLLIN, on_stop_pipe, &r->st, &r->stop_io, &r->err) < 0) {
                fprintf(stderr, "chidori: serve: %s\n", r->err ? err_msg(r->err) : strerror(errno));
                return EXIT_PROTOCOL;
        }
        struct sigaction sa = { .sa_handler = on_serve_signal };
        sigemptyset(&sa.sa_mask);
        static const int sigs[] = { SIGINT, SIGTERM, SIGHUP };
        for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
                sigaction(sigs[i], &sa, NULL);
        return -1;
}

/* What the sessions will be handed, checked once now: a bad --workspace,
 * --tools, --allow-host or --secrets is a usage error.  The secrets are
 * kept: read from the server's environment and files once. */
static int serve_check_grants(struct serve_opts *o, struct serve_run *r)
{
        r->sbx = (struct serve_boxes){ .worker_path = r->worker_path, .sb = &o->sb, .o = o };
        struct grants g;
        struct session_config probe = { 0 };
        if (session_grants(&r->sbx, NULL, &g, &probe, &r->err) < 0) {
                fprintf(stderr, "chidori: serve: %s\n", err_msg(r->err));
                return err_code(r->err) == GRANTS_E_USAGE ? EXIT_USAGE : EXIT_PROTOCOL;
        }
        r->secrets = g.secrets;
        g.secrets = NULL;
        r->sbx.secrets = r->secrets;
        grants_close(&g);
        return -1;
}

/* The server on the loop, handed the listening socket; then the banner. */
static int serve_start(struct serve_opts *o, struct serve_run *r)
{
        struct server_config cfg = {
                .listen_fd = r->fd,
                .listen_desc = r->desc,
                .health_fd = r->health_fd,
                .health_desc = r->health_desc,
                .max_body = (size_t)o->max_body,
                .conn_timeout_s = (unsigned)o->conn_timeout,
                .max_conns = (unsigned)o->max_conns,
                .auth = r->auth,
                .agent = o->agent_path,
                .max_running = (unsigned)o->max_running,
                .max_queued = (unsigned)o->max_queued,
                .store = r->store,
                .approval_ttl_s = (unsigned)o->approval_ttl,
                .session_ttl_s = (unsigned)o->session_ttl,
                .replica_id = o->replica_id,
                .lease_ms = (unsigned)o->lease_s * 1000u,
                .run = {
                        .version = CHIDORI_VERSION,
                        .script = r->agent.script,
                        .filename = r->agent.filename,
                        .agent_abspath = r->agent.abspath,
                        .agent_sha256 = r->agent.sha256,
                        .esm = r->agent.esm,
                        .policy = r->pol,
                        .js_deadline_ms = o->js_deadline_ms,
                        .deadline_ms = o->sb.deadline_ms,
                        .limits = o->lim,
                        .quotas = o->quotas,
                        .effects = &effects_table,
                        .mem = r->db_mem ? r->db_mem : r->mem,
                        .shared_memory = o->shared_memory,
                        .boxes_new = boxes_new,
                        .boxes_free = boxes_free,
                        .boxes_arg = &r->sbx,
                },
        };
        r->fd = r->health_fd = -1; /* the server's now, whatever happens */
        if (server_new(r->loop, &cfg, &r->st.srv, &r->err) < 0) {
                fprintf(stderr, "chidori: serve: %s\n", err_msg(r->err));
                return EXIT_PROTOCOL;
        }
        server_banner(r->pol, r->auth, r->store, r->desc, o->quiet);
        r->st.grace_s = o->grace;
        return -1;
}

/* Until a stop signal (on_stop_pipe), or the end of the drain: 0, or
 * EXIT_PROTOCOL if the loop fails. */
static int serve_loop(struct serve_opts *o, struct serve_run *r)
{
        (void)o;
        struct serve_state *st = &r->st;
        while (!st->stop) {
                int timeout = -1;
                if (st->draining) {
                        double left = st->drain_until - mono_ms();
                        if (server_running(st->srv) == 0 || left <= 0)
                                break;
                        timeout = left < 200 ? (int)left + 1 : 200;
                }
                if (evloop_run_once(r->loop, timeout, &r->err) < 0) {
                        fprintf(stderr, "chidori: serve: %s\n", err_msg(r->err));
                        return EXIT_PROTOCOL;
                }
        }
        return EXIT_OK;
}

static void serve_close(struct serve_run *r)
{
        server_free(r->st.srv);
        if (r->stop_io)
                evloop_io_del(r->loop, r->stop_io);
        evloop_free(r->loop);
        if (stop_pipe[0] >= 0) {
                close(stop_pipe[0]);
                close(stop_pipe[1]);
                stop_pipe[0] = stop_pipe[1] = -1;
        }
        if (r->fd >= 0)
                close(r->fd);
        if (r->health_fd >= 0)
                close(r->health_fd);
        if (r->unix_path) {
                unlink(r->unix_path);
                free(r->unix_path);
        }
        memstore_close(r->db_mem);
        store_close(r->store);
        memstore_close(r->mem);
        free(r->state_dir);
        free(r->worker_path);
        policy_free(r->pol);
        agent_free(&r->agent);
        auth_free(r->auth);
        secrets_free(r->secrets);
        err_free(r->err);
}

/* ---- serve as monitor + broker (the default): what is the operator's is
 * opened here, the rest is the broker's (broker/serve.c) ---- */

/* The agent file: its folder and name for the broker (OPEN_AGENT_FILE
 * beneath the folder), in agent_load's words when it cannot be resolved. */
static int broker_agent(const struct serve_opts *o, struct handover *h, char **ret_dir)
{
        char *abs = realpath(o->agent_path, NULL);
        if (!abs) {
                char msg[PATH_MAX + 128];
                int e = errno;
                snprintf(msg, sizeof(msg), e == ENOENT ? "agent file '%s' not found: %s" : "load agent: open '%s': %s",
                         o->agent_path, strerror(e));
                text_fput_line(stderr, "chidori: serve: ", msg, strlen(msg));
                return -1;
        }
        char *slash = strrchr(abs, '/');
        *slash = '\0';
        handover_add(h, "agent=%s", slash + 1);
        handover_add(h, "agent_path=%s", o->agent_path);
        *ret_dir = strdup(slash == abs ? "/" : abs);
        free(abs);
        if (!*ret_dir)
                return -1;
        handover_add(h, "agent_dir=%s", *ret_dir);
        return 0;
}

/* The state directory, made as the memory store makes it (0700): the
 * monitor attaches it in the broker's root, where serve.db is opened. */
static int broker_state_dir(const struct serve_opts *o, char **ret)
{
        struct err *err = NULL;
        char *dir = NULL;
        if (o->state_dir)
                dir = strdup(o->state_dir);
        else if (memstore_default_dir(&dir, &err) < 0) {
                fprintf(stderr, "chidori: serve: %s; choose a place with --state-dir DIR\n", err_msg(err));
                err_free(err);
                return -1;
        }
        if (!dir || memstore_make_dir(dir, &err) < 0 || !(*ret = realpath(dir, NULL))) {
                if (!err)
                        err_set(&err, errno, "memory: cannot use directory '%s'", dir ? dir : "");
                fprintf(stderr, "chidori: serve: open the memory store: %s; choose another place with --state-dir "
                                "DIR\n", err_msg(err));
                err_free(err);
                free(dir);
                return -1;
        }
        free(dir);
        return 0;
}

/* The policy's sources, the engine's limits and the parent's: the broker
 * chooses and applies them as the one-process server did. */
static void broker_policy_limits(const struct serve_opts *o, struct handover *h)
{
        const char *file = getenv("CHIDORI_POLICY_FILE"), *inl = getenv("CHIDORI_POLICY"),
                   *prof = getenv("CHIDORI_POLICY_PROFILE");
        if (o->untrusted)
                handover_add(h, "untrusted=1");
        if (o->trusted)
                handover_add(h, "trusted=1");
        if (file && *file)
                handover_file(h, "policy", file);
        if (inl && *inl)
                handover_add(h, "policy_inline=%s", inl);
        if (prof && *prof)
                handover_add(h, "policy_profile=%s", prof);
        if (o->sb.deadline_ms > 0)
                handover_add(h, "deadline_ms=%ld", o->sb.deadline_ms);
        if (o->js_deadline_ms >= 0)
                handover_add(h, "js_deadline_ms=%ld", o->js_deadline_ms);
        handover_add(h, "jit=%s", o->sb.jit < 0 ? "auto" : o->sb.jit ? "1" : "0");
        handover_add(h, "cpu_secs=%ld", sandbox_cpu_secs(&o->sb, true));
        handover_add(h, "pids_max=%llu", (unsigned long long)o->sb.pids_max);
        if (o->sb.tz)
                handover_add(h, "tz=%s", o->sb.tz);
        const struct session_limits *l = &o->lim;
        handover_add(h, "max_calls=%llu", (unsigned long long)l->max_calls);
        handover_add(h, "max_queue=%llu", (unsigned long long)l->max_queue);
        handover_add(h, "max_log=%llu", (unsigned long long)l->max_log);
        handover_add(h, "max_journal=%llu", (unsigned long long)l->max_journal);
        handover_add(h, "max_vfs=%llu", (unsigned long long)l->max_vfs);
        handover_add(h, "max_memory_store=%llu", (unsigned long long)l->max_memory_store);
        handover_add(h, "max_workspace_write=%llu", (unsigned long long)l->max_workspace_write);
        handover_add(h, "max_timers=%llu", (unsigned long long)l->max_timers);
}

/* What every session is handed (cli/grants.c's options), and the model's settings. */
static int broker_grants(const struct serve_opts *o, struct handover *h, char **ret_ws)
{
        const struct grants_opts *g = &o->gr;
        if (g->workspace_dir) {
                struct stat st;
                *ret_ws = realpath(g->workspace_dir, NULL);
                if (!*ret_ws || stat(*ret_ws, &st) < 0 || !S_ISDIR(st.st_mode)) {
                        char q[PATH_MAX];
                        fprintf(stderr, "chidori: serve: --workspace %s: %s (expected an existing directory)\n",
                                text_quote(g->workspace_dir, strlen(g->workspace_dir), q, sizeof(q)),
                                strerror(*ret_ws ? ENOTDIR : errno));
                        return -1;
                }
                handover_add(h, "workspace=%s", *ret_ws);
        }
        if (handover_grants_common(h, g) < 0)
                return -1;
        if (o->quotas_file)
                handover_file(h, "quotas", o->quotas_file);
        handover_add(h, "max_nested=%ld", g->max_nested ? g->max_nested : GRANTS_DEFAULT_MAX_NESTED);
        return 0;
}

/* --store for the broker: the spec (sqlite:PATH made absolute), libpq's
 * PG* variables (the broker's environment has none; the user defaults to
 * the caller's name, as libpq's would: the broker uid has no name), and
 * the folder the monitor attaches: sqlite's (read-write) or the
 * PostgreSQL socket's (read-only).  Nothing else of the host is added. */
/* 0, or the exit code (printed). */
static int broker_store(const struct serve_opts *o, struct handover *h, char **ret_dir, char **ret_sock)
{
        if (!o->store)
                return 0;
        enum store_kind kind;
        struct err *e = NULL;
        if (store_spec_parse(o->store, &kind, &e) < 0) { /* checked at parse time */
                err_free(e);
                return EXIT_USAGE;
        }
        if (kind == STORE_SQLITE) {
                char *dup = strdup(o->store + 7), *slash = dup ? strrchr(dup, '/') : NULL;
                const char *base = slash ? slash + 1 : o->store + 7;
                if (slash)
                        *slash = '\0';
                *ret_dir = dup ? realpath(slash ? (*dup ? dup : "/") : ".", NULL) : NULL;
                if (!*ret_dir || !*base) {
                        fprintf(stderr, "chidori: serve: --store %s: %s (expected sqlite:PATH, a database file in an "
                                        "existing folder)\n", o->store, *base ? strerror(errno) : "no file name");
                        free(dup);
                        return EXIT_USAGE;
                }
                handover_add(h, "store=sqlite:%s%s%s", *ret_dir, strcmp(*ret_dir, "/") ? "/" : "", base);
                free(dup);
                return 0;
        }
        if (store_pg_socket_dir(o->store, ret_sock, &e) < 0) {
                err_free(e);
                return EXIT_USAGE;
        }
        /* The socket's folder must exist for the monitor to attach it: as
         * for a database that does not answer, 78 naming it. */
        struct stat sb;
        int bad = !*ret_sock ? 0 : stat(*ret_sock, &sb) < 0 ? errno : !S_ISDIR(sb.st_mode) ? ENOTDIR : 0;
        if (bad) {
                char url[1024], q[PATH_MAX];
                store_redact(o->store, url, sizeof(url));
                fprintf(stderr, "chidori: serve: cannot connect to the PostgreSQL database %s (host %s): its socket "
                                "folder: %s; check that it runs and that the URL (or PGHOST) names its socket folder\n",
                        url, text_quote(*ret_sock, strlen(*ret_sock), q, sizeof(q)),
                        strerror(bad));
                return EXIT_LAYER_UNAVAILABLE;
        }
        handover_add(h, "store=%s", o->store);
        static const char *const pgenv[] = { "PGHOST", "PGHOSTADDR", "PGPORT", "PGDATABASE", "PGUSER",
                                             "PGPASSWORD", "PGOPTIONS", "PGAPPNAME", "PGSSLMODE",
                                             "PGCONNECT_TIMEOUT", "PGTARGETSESSIONATTRS", "PGGSSENCMODE",
                                             "PGCHANNELBINDING" };
        for (size_t i = 0; i < ARRAY_SIZE(pgenv); i++) {
                const char *v = getenv(pgenv[i]);
                if (v && *v)
                        handover_add(h, "store_env=%s=%s", pgenv[i], v);
        }
        const char *user = getenv("PGUSER");
        struct passwd *pw = getpwuid(getuid());
        if ((!user || !*user) && !store_pg_has_user(o->store) && pw)
                handover_add(h, "store_env=PGUSER=%s", pw->pw_name);
        return 0;
}

/* serve's own settings, the listening socket and the tokens' source. */
static int broker_server(const struct serve_opts *o, struct serve_run *r, struct handover *h)
{
        handover_add(h, "serve=1");
        handover_add(h, "listen_desc=%s", r->desc);
        handover_fd(h, "listen_fd", r->fd);
        r->fd = -1;
        if (r->health_fd >= 0) {
                handover_add(h, "health_desc=%s", r->health_desc);
                handover_fd(h, "health_fd", r->health_fd);
                r->health_fd = -1;
        }
        const char *env_token = getenv("CHIDORI_SERVE_TOKEN");
        if (o->token_file) {
                /* Read here already (serve_tokens); the broker reads its own copy. */
                int fd = open(o->token_file, O_RDONLY | O_CLOEXEC | O_NOCTTY);
                if (fd < 0) {
                        char q[PATH_MAX];
                        fprintf(stderr, "chidori: serve: --token-file '%s': %s\n",
                                text_quote(o->token_file, strlen(o->token_file), q, sizeof(q)), strerror(errno));
                        return -1;
                }
                handover_add(h, "token_file=%s", o->token_file);
                handover_fd(h, "token_fd", fd);
        } else if (env_token && *env_token) {
                handover_add(h, "serve_token=%s", env_token);
        }
        handover_add(h, "max_body=%llu", (unsigned long long)o->max_body);
        handover_add(h, "conn_timeout=%ld", o->conn_timeout);
        handover_add(h, "max_conns=%ld", o->max_conns);
        handover_add(h, "max_running=%ld", o->max_running);
        handover_add(h, "pool=%ld", o->pool);
        handover_add(h, "max_queued=%ld", o->max_queued);
        handover_add(h, "grace=%ld", o->grace);
        handover_add(h, "approval_ttl=%ld", o->approval_ttl);
        handover_add(h, "session_ttl=%ld", o->session_ttl);
        handover_add(h, "lease=%ld", o->lease_s);
        if (o->replica_id)
                handover_add(h, "replica_id=%s", o->replica_id);
        handover_add(h, "shared_memory=%d", o->shared_memory);
        handover_add(h, "shared_workspace=%d", o->shared_workspace);
        handover_add(h, "quiet=%d", o->quiet);
        return 0;
}

/* The posture of the pool's boxes: what the broker will ask for every
 * session (broker/config.c): the JIT and the CPU budget follow the
 * policy's strictness, strict unless --trusted (a policy file the broker
 * finds permissive costs one miss: the pool then turns to what is asked). */
static void pool_posture(const struct serve_opts *o, struct monitor_prestart *w)
{
        bool strict = !o->trusted;
        w->on = false;
        w->no_jit = o->sb.jit == 0 || (o->sb.jit < 0 && strict);
        w->cpu_budget_ms = o->js_deadline_ms >= 0 ? o->js_deadline_ms
                           : strict               ? CLI_JS_BUDGET_UNTRUSTED_MS
                                                  : CLI_JS_BUDGET_DEFAULT_MS;
        snprintf(w->tz, sizeof(w->tz), "%s", o->sb.tz && strlen(o->sb.tz) < sizeof(w->tz) ? o->sb.tz : "");
}

/* chidori serve through the broker: the tokens (checked here: listening
 * beyond loopback needs one), the agent's folder, the state directory,
 * the workspace and the listening socket (bound here, by the privileged
 * side: a low port works) are the operator's; then chidori-monitor is
 * exec'd (same pid), which starts the broker in serve mode.  Returns
 * only on failure, with the exit code (printed). */
static int serve_broker(struct serve_opts *o)
{
        struct serve_run r = { .fd = -1, .health_fd = -1 };
        struct handover h;
        handover_init(&h);
        char *agent_dir = NULL, *state = NULL, *ws = NULL, *store_dir = NULL, *store_sock = NULL;
        char run_id[40];
        int code = serve_tokens(o, &r);
        if (code >= 0)
                goto out;
        code = EXIT_USAGE;
        if (broker_agent(o, &h, &agent_dir) < 0 || broker_state_dir(o, &state) < 0 || broker_grants(o, &h, &ws) < 0)
                goto out;
        if ((code = broker_store(o, &h, &store_dir, &store_sock)) != 0)
                goto out;
        code = EXIT_USAGE;
        if ((code = serve_listen(o, &r)) >= 0)
                goto out;
        code = EXIT_USAGE;
        make_run_id(run_id);
        handover_add(&h, "run_id=%s", run_id);
        handover_add(&h, "state_dir=%s", state);
        broker_policy_limits(o, &h);
        handover_net_lib(&h);
        if (broker_server(o, &r, &h) < 0)
                goto out;
        /* The monitor removes the unix socket at the end: by an absolute path. */
        char sock[PATH_MAX + 2], cwd[PATH_MAX];
        if (r.unix_path && r.unix_path[0] != '/' && getcwd(cwd, sizeof(cwd)))
                snprintf(sock, sizeof(sock), "%.*s/%s", (int)(sizeof(sock) / 2), cwd, r.unix_path);
        else
                snprintf(sock, sizeof(sock), "%s", r.unix_path ? r.unix_path : "");
        struct handover_run hr = {
                .sb = &o->sb, .run_id = run_id + 4, .agent_dir = agent_dir, .state_dir = state, .workspace = ws,
                .quiet = o->quiet, .serve = true, .max_trees = 2 * o->max_running, .broker_user = o->broker_user,
                /* The drain's --grace, and time to end the sessions after it. */
                .stop_grace_ms = o->grace * 1000 + 10000, .unlink_socket = sock[0] == '/' ? sock : NULL,
                .store_dir = store_dir, .store_socket_dir = store_sock,
                .pool = o->pool, .pool_refill_ms = o->pool_refill_ms,
        };
        pool_posture(o, &hr.prestart);
        code = handover_run(&h, &hr);
out:
        handover_free(&h);
        free(agent_dir);
        free(state);
        free(ws);
        free(store_dir);
        free(store_sock);
        serve_close(&r);
        return code;
}

/* The steps of serve in their order (the comment of each says why there):
 * each returns -1 to go on, or the exit code; serve_loop always ends it.
 * By default serve is monitor + broker (serve_broker); CHIDORI_RUN_BROKER=0
 * keeps this one-process server, for comparison and debugging. */
int cmd_serve(int argc, char **argv)
{
        static int (*const steps[])(struct serve_opts *, struct serve_run *) = {
                serve_tokens,  serve_load,         serve_open_state, serve_listen,
                serve_signals, serve_check_grants, serve_start,      serve_loop,
        };
        struct serve_opts o;
        int code = serve_parse(argc, argv, &o);
        if (code >= 0)
                return code;
        bool one_process;
        if (cli_broker_switch(&one_process) < 0)
                return EXIT_USAGE;
        if (one_process && o.pool > 0) {
                quotas_free(o.quotas);
                return usage_error("--pool keeps boxes started ahead by the monitor, and CHIDORI_RUN_BROKER=0 runs "
                                   "none (the server is one process): drop one of them");
        }
        if (one_process && o.broker_user) {
                quotas_free(o.quotas);
                return usage_error("--broker-user names the user of the broker process, and CHIDORI_RUN_BROKER=0 "
                                   "runs none (the server is one process): drop one of them");
        }
        tmp_reap_stale(tmp_dir()); /* what a killed chidori left (docs/faults.md) */
        if (!one_process) {
                code = serve_broker(&o);
                quotas_free(o.quotas);
                return code;
        }
        fprintf(stderr, "chidori: WARNING: CHIDORI_RUN_BROKER=0: this server is one process with your privileges that "
                        "parses HTTP, its state database and what the workers send (no broker); use only for "
                        "comparison and debugging\n");
        struct serve_run r = { .fd = -1, .health_fd = -1 };
        for (size_t i = 0; code < 0 && i < ARRAY_SIZE(steps); i++)
                code = steps[i](&o, &r);
        serve_close(&r);
        quotas_free(o.quotas);
        return code;
}
