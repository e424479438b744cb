/* server/http.c — libmicrohttpd driven by our event loop.
 *
 * MHD runs with no thread of its own (MHD_USE_EPOLL, "external select"
 * mode): its epoll fd is a watcher of the loop (readable = something for
 * MHD_run), MHD_get_timeout arms a timer of the loop, and a prepare hook
 * runs MHD first when a resumed connection or a buffered event waits.  The
 * listening socket is ours (MHD_OPTION_LISTEN_SOCKET).  Slow clients are
 * bounded by MHD_OPTION_CONNECTION_TIMEOUT and the connection limit; a
 * body over --max-body is answered 413 without being buffered. */
#define _GNU_SOURCE
#include <errno.h>
#include "server/mhd.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "common/util.h"
#include "runtime/evloop.h"
#include "server/server-internal.h"
#include "server/store.h"

static void mhd_drive(struct server *srv);

static void on_mhd_fd(struct evloop *loop, struct ev_io *io, int fd, uint32_t revents, void *arg)
{
        (void)loop, (void)io, (void)fd, (void)revents;
        mhd_drive(arg);
}

static void on_mhd_timer(struct evloop *loop, struct ev_timer *t, void *arg)
{
        (void)loop, (void)t;
        struct server *srv = arg;
        srv->mhd_timer = NULL; /* fired: gone */
        mhd_drive(srv);
}

/* Arm the timer for MHD's next timeout (connection timeouts, buffered work). */
static void rearm(struct server *srv)
{
        MHD_UNSIGNED_LONG_LONG ms = 0, hms = 0;
        bool h = srv->health && MHD_get_timeout(srv->health, &hms) == MHD_YES;
        if (MHD_get_timeout(srv->mhd, &ms) != MHD_YES) {
                ms = hms;
                if (!h) {
                        if (srv->mhd_timer) {
                                evloop_timer_del(srv->loop, srv->mhd_timer);
                                srv->mhd_timer = NULL;
                        }
                        return;
                }
        } else if (h && hms < ms) {
                ms = hms;
        }
        if (ms > 3600000)
                ms = 3600000;
        double at = mono_ms() + (double)ms;
        if (srv->mhd_timer && srv->mhd_timer_at <= at && ms > 0)
                return; /* an earlier one is armed: it runs MHD, which rearms */
        if (srv->mhd_timer)
                evloop_timer_del(srv->loop, srv->mhd_timer);
        srv->mhd_timer = NULL;
        srv->mhd_timer_at = at;
        if (evloop_timer_add(srv->loop, at, on_mhd_timer, srv, &srv->mhd_timer, NULL) < 0)
                srv->mhd_timer = NULL;
}

static void mhd_drive(struct server *srv)
{
        MHD_run(srv->mhd);
        if (srv->health)
                MHD_run(srv->health);
        rearm(srv);
}

/* Before every wait: work MHD left for "now" (a resumed connection). */
static void on_prepare(struct evloop *loop, void *arg)
{
        (void)loop;
        struct server *srv = arg;
        MHD_UNSIGNED_LONG_LONG ms = 1;
        if (MHD_get_timeout(srv->mhd, &ms) == MHD_YES && ms == 0)
                MHD_run(srv->mhd);
        ms = 1;
        if (srv->health && MHD_get_timeout(srv->health, &ms) == MHD_YES && ms == 0)
                MHD_run(srv->health);
        rearm(srv);
}

const char *http_header(struct http_req *r, const char *name)
{
        return MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, name);
}

const char *http_query(struct http_req *r, const char *name)
{
        return MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, name);
}

int http_reply(struct http_req *r, unsigned status, const char *ctype, const char *body, size_t len,
               const char *const *headers)
{
        if (r->answered)
                return -1;
        struct MHD_Response *resp = MHD_create_response_from_buffer(len, (void *)body, MHD_RESPMEM_MUST_COPY);
        if (!resp)
                return -1;
        if (ctype)
                MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, ctype);
        MHD_add_response_header(resp, "Cache-Control", "no-store");
        MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
        for (size_t i = 0; headers && headers[i] && headers[i + 1]; i += 2)
                MHD_add_response_header(resp, headers[i], headers[i + 1]);
        /* A body we did not read to its end: close after the answer. */
        if (r->too_large)
                MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "close");
        enum MHD_Result ok = MHD_queue_response(r->conn, status, resp);
        MHD_destroy_response(resp);
        if (ok != MHD_YES)
                return -1;
        r->answered = true;
        r->srv->stats.requests++;
        if (status / 100 < 6)
                r->srv->stats.by_class[status / 100]++;
        return 0;
}

void http_suspend(struct http_req *r)
{
        MHD_suspend_connection(r->conn);
        r->suspended = true;
}

static void on_resumed(struct evloop *loop, void *arg)
{
        (void)loop;
        struct server *srv = arg;
        srv->run_deferred = false;
        mhd_drive(srv);
}

void http_kick(struct server *srv)
{
        if (!srv->run_deferred && evloop_defer(srv->loop, on_resumed, srv, NULL) == 0)
                srv->run_deferred = true;
}

/* MHD without a thread of its own has no wake-up pipe: a resumed
 * connection is processed by the next MHD_run, which we call at the start
 * of the next turn. */
void http_resume(struct http_req *r)
{
        if (!r->suspended)
                return;
        r->suspended = false;
        r->resumed = true;
        MHD_resume_connection(r->conn);
        struct server *srv = r->srv;
        if (!srv->run_deferred && evloop_defer(srv->loop, on_resumed, srv, NULL) == 0)
                srv->run_deferred = true;
}

static bool body_append(struct http_req *r, const char *data, size_t len, size_t max)
{
        if (r->too_large || len > max - r->body_len) {
                r->too_large = true;
                free(r->body);
                r->body = NULL;
                r->body_len = r->body_cap = 0;
                return false;
        }
        if (r->body_len + len + 1 > r->body_cap) {
                size_t cap = r->body_cap ? r->body_cap : 1024;
                while (cap < r->body_len + len + 1)
                        cap *= 2;
                char *nb = realloc(r->body, cap);
                if (!nb)
                        return false;
                r->body = nb;
                r->body_cap = cap;
        }
        memcpy(r->body + r->body_len, data, len);
        r->body_len += len;
        r->body[r->body_len] = '\0';
        return true;
}

static enum MHD_Result on_any_request(struct server *srv, bool health_only, struct MHD_Connection *conn,
                                      const char *url, const char *method, const char *upload_data,
                                      size_t *upload_data_size, void **con_cls)
{
        struct http_req *r = *con_cls;
        if (!r) {
                r = calloc(1, sizeof(*r));
                if (!r)
                        return MHD_NO;
                r->srv = srv;
                r->health_only = health_only;
                r->conn = conn;
                r->method = method;
                r->url = url;
                *con_cls = r;
                /* A declared length over the limit: answered before a byte of it is read. */
                const char *cl = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
                unsigned long long n;
                char *end;
                if (cl) {
                        errno = 0;
                        n = strtoull(cl, &end, 10);
                        if ((errno || *end || n > srv->cfg.max_body)) {
                                r->too_large = true;
                                api_handle(srv, r);
                                return r->answered || r->suspended ? MHD_YES : MHD_NO;
                        }
                }
                return MHD_YES;
        }
        if (*upload_data_size) {
                if (!r->answered)
                        body_append(r, upload_data, *upload_data_size, srv->cfg.max_body);
                *upload_data_size = 0; /* consumed (or dropped) */
                return MHD_YES;
        }
        if (r->answered)
                return MHD_YES;
        api_handle(srv, r);
        return r->answered || r->suspended ? MHD_YES : MHD_NO;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
                                  const char *version, const char *upload_data, size_t *upload_data_size,
                                  void **con_cls)
{
        (void)version;
        return on_any_request(cls, false, conn, url, method, upload_data, upload_data_size, con_cls);
}

/* --health-listen: the same handling, answering only the probes' routes. */
static enum MHD_Result on_health_request(void *cls, struct MHD_Connection *conn, const char *url,
                                         const char *method, const char *version, const char *upload_data,
                                         size_t *upload_data_size, void **con_cls)
{
        (void)version;
        return on_any_request(cls, true, conn, url, method, upload_data, upload_data_size, con_cls);
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls, enum MHD_RequestTerminationCode toe)
{
        (void)cls, (void)conn, (void)toe;
        struct http_req *r = *con_cls;
        if (!r)
                return;
        free(r->body);
        free(r->canned);
        free(r);
        *con_cls = NULL;
}

static void on_mhd_log(void *cls, const char *fmt, va_list ap)
{
        (void)cls, (void)fmt, (void)ap;
        /* MHD's own diagnostics (a client that reset its connection...)
         * are not the operator's concern; answers say what went wrong. */
}

#define SWEEP_MS 1000.0

static void on_sweep(struct evloop *loop, struct ev_timer *t, void *arg)
{
        (void)t;
        struct server *srv = arg;
        srv->sweep = NULL;
        sessions_sweep(srv);
        evloop_timer_add(loop, mono_ms() + SWEEP_MS, on_sweep, srv, &srv->sweep, NULL);
}

/* Leases: every LEASE_TICK_MS (or lease/3 when shorter) renew, take
 * over, poll the waits and streams of other replicas' sessions. */
#define LEASE_TICK_MS 500.0

static double lease_tick_ms(const struct server *srv)
{
        double third = srv->cfg.lease_ms / 3.0;
        return third < LEASE_TICK_MS ? third : LEASE_TICK_MS;
}

static void on_lease_tick(struct evloop *loop, struct ev_timer *t, void *arg)
{
        (void)t;
        struct server *srv = arg;
        srv->lease_tick = NULL;
        sessions_lease_tick(srv);
        evloop_timer_add(loop, mono_ms() + lease_tick_ms(srv), on_lease_tick, srv, &srv->lease_tick, NULL);
}

/* --replica-id, or HOST-PID-RANDOM: new at each start, so a restarted
 * server never mistakes the sessions of its previous life for its own
 * (they are taken over once their leases expire). */
static int replica_setup(struct server *srv, struct err **err)
{
        if (!srv->cfg.lease_ms)
                srv->cfg.lease_ms = SERVE_DEFAULT_LEASE_S * 1000u;
        char id[SERVE_REPLICA_ID_MAX + 1];
        if (srv->cfg.replica_id) {
                snprintf(id, sizeof(id), "%s", srv->cfg.replica_id);
        } else {
                char host[256] = "";
                if (gethostname(host, sizeof(host) - 1) < 0 || !host[0])
                        snprintf(host, sizeof(host), "chidori");
                host[strspn(host, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")] = '\0';
                host[40] = '\0';
                unsigned char b[3] = { 0 };
                if (getrandom(b, sizeof(b), 0) != sizeof(b))
                        memset(b, 0, sizeof(b));
                snprintf(id, sizeof(id), "%s-%ld-%02x%02x%02x", host[0] ? host : "chidori", (long)getpid(), b[0], b[1],
                         b[2]);
        }
        return store_lease_setup(srv->store, id, srv->cfg.lease_ms, err);
}

int server_new(struct evloop *loop, const struct server_config *cfg, struct server **ret, struct err **err)
{
        if (mhd_load(err) < 0)
                return -1;
        struct server *srv = calloc(1, sizeof(*srv));
        if (!srv)
                return err_set(err, ENOMEM, "server");
        srv->loop = loop;
        srv->cfg = *cfg;
        srv->store = cfg->store;
        srv->run = cfg->run;
        srv->started = mono_ms();
        srv->mhd = MHD_start_daemon(MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG, 0, NULL, NULL,
                                    on_request, srv, MHD_OPTION_LISTEN_SOCKET, (MHD_socket)cfg->listen_fd,
                                    MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)cfg->conn_timeout_s,
                                    MHD_OPTION_CONNECTION_LIMIT, (unsigned int)cfg->max_conns,
                                    MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)(64 * 1024),
                                    MHD_OPTION_NOTIFY_COMPLETED, on_completed, srv,
                                    MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, srv, MHD_OPTION_END);
        if (!srv->mhd) {
                close(cfg->listen_fd);
                if (cfg->health_desc && cfg->health_fd >= 0)
                        close(cfg->health_fd);
                free(srv);
                return err_set(err, 0, "libmicrohttpd could not start on %s", cfg->listen_desc);
        }
        if (cfg->health_desc && cfg->health_fd >= 0) {
                srv->health = MHD_start_daemon(MHD_USE_EPOLL | MHD_USE_ERROR_LOG, 0, NULL, NULL, on_health_request,
                                               srv, MHD_OPTION_LISTEN_SOCKET, (MHD_socket)cfg->health_fd,
                                               MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)cfg->conn_timeout_s,
                                               MHD_OPTION_CONNECTION_LIMIT, 16u,
                                               MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)(16 * 1024),
                                               MHD_OPTION_NOTIFY_COMPLETED, on_completed, srv,
                                               MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, srv, MHD_OPTION_END);
                const union MHD_DaemonInfo *hi =
                        srv->health ? MHD_get_daemon_info(srv->health, MHD_DAEMON_INFO_EPOLL_FD) : NULL;
                if (!hi || evloop_io_add(loop, hi->epoll_fd, EPOLLIN, on_mhd_fd, srv, &srv->health_io, err) < 0) {
                        if (!srv->health)
                                close(cfg->health_fd);
                        if (!hi)
                                err_set(err, 0, "libmicrohttpd could not start on %s", cfg->health_desc);
                        server_free(srv);
                        return -1;
                }
        }
        const union MHD_DaemonInfo *info = MHD_get_daemon_info(srv->mhd, MHD_DAEMON_INFO_EPOLL_FD);
        if (!info || evloop_io_add(loop, info->epoll_fd, EPOLLIN, on_mhd_fd, srv, &srv->mhd_io, err) < 0 ||
            evloop_hook_add(loop, false, on_prepare, srv, err) < 0) {
                if (!info)
                        err_set(err, 0, "libmicrohttpd has no epoll fd");
                server_free(srv);
                return -1;
        }
        unsigned requeued = 0, failed = 0;
        if (srv->store && store_leases(srv->store) &&
            (replica_setup(srv, err) < 0 ||
             evloop_timer_add(loop, mono_ms() + lease_tick_ms(srv), on_lease_tick, srv, &srv->lease_tick, err) < 0)) {
                server_free(srv);
                return -1;
        }
        if (srv->store && sessions_recover(srv, &requeued, &failed, err) < 0) {
                server_free(srv);
                return -1;
        }
        /* The sweep: the TTLs, and the store's recovery after an outage
         * (PostgreSQL unreachable, SQLite's disk full). */
        if (srv->store &&
            evloop_timer_add(loop, mono_ms() + SWEEP_MS, on_sweep, srv, &srv->sweep, err) < 0) {
                server_free(srv);
                return -1;
        }
        if (requeued || failed)
                fprintf(stderr, "chidori: serve: from the last run of the server: %u queued session(s) queued again, "
                                "%u running session(s) resumed by replay\n", requeued, failed);
        *ret = srv;
        return 0;
}

void server_free(struct server *srv)
{
        if (!srv)
                return;
        /* Waiting requests are answered (503), sessions cancelled. */
        waiters_free_all(srv);
        replayers_free_all(srv);
        sessions_free_all(srv);
        budgets_free_all(srv);
        events_free_all(srv);
        if (srv->mhd)
                MHD_run(srv->mhd);
        evloop_defer_cancel(srv->loop, on_resumed, srv);
        evloop_hook_remove(srv->loop, false, on_prepare, srv);
        evloop_io_del(srv->loop, srv->mhd_io);
        if (srv->health_io)
                evloop_io_del(srv->loop, srv->health_io);
        if (srv->mhd_timer)
                evloop_timer_del(srv->loop, srv->mhd_timer);
        if (srv->sweep)
                evloop_timer_del(srv->loop, srv->sweep);
        if (srv->lease_tick)
                evloop_timer_del(srv->loop, srv->lease_tick);
        if (srv->mhd)
                MHD_stop_daemon(srv->mhd); /* closes the listening socket too */
        if (srv->health)
                MHD_stop_daemon(srv->health);
        free(srv->stats.effects);
        free(srv);
}

void server_set_draining(struct server *srv, bool draining)
{
        srv->draining = draining;
}

bool server_draining(const struct server *srv)
{
        return srv->draining;
}

unsigned server_running(const struct server *srv)
{
        return srv->running;
}
