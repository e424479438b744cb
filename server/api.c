/* server/api.c — the routes of `chidori serve`, their JSON, the error table
 * and the metrics (docs/serve.md).  Everything here answers one request;
 * the caller's bytes (path, headers, body) are parsed with limits and never
 * echoed unescaped. */
#define _GNU_SOURCE
#include <cjson/cJSON.h>
#include <microhttpd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/text.h"
#include "common/util.h"
#include "server/server-internal.h"

static const struct {
        const char *name;
        unsigned status;
} codes[API_CODE_MAX] = {
        [API_INVALID_JSON] = { "invalid_json", 400 },
        [API_UNKNOWN_FIELD] = { "unknown_field", 400 },
        [API_INVALID_FIELD] = { "invalid_field", 400 },
        [API_UNKNOWN_PROFILE] = { "unknown_profile", 400 },
        [API_UNAUTHORIZED] = { "unauthorized", 401 },
        [API_NOT_FOUND] = { "not_found", 404 },
        [API_METHOD_NOT_ALLOWED] = { "method_not_allowed", 405 },
        [API_CONFLICT] = { "conflict", 409 },
        [API_TOO_LARGE] = { "too_large", 413 },
        [API_UNSUPPORTED_MEDIA] = { "unsupported_media_type", 415 },
        [API_QUEUE_FULL] = { "queue_full", 429 },
        [API_INTERNAL] = { "internal", 500 },
        [API_NOT_IMPLEMENTED] = { "not_implemented", 501 },
        [API_DRAINING] = { "draining", 503 },
        [API_UNAVAILABLE] = { "unavailable", 503 },
};

const char *api_code_name(enum api_code c)
{
        return (unsigned)c < API_CODE_MAX ? codes[c].name : "internal";
}

unsigned api_code_status(enum api_code c)
{
        return (unsigned)c < API_CODE_MAX ? codes[c].status : 500;
}

const char *sess_status_name(enum sess_status s)
{
        static const char *const n[SESS_STATUS_MAX] = {
                "queued", "running", "awaitingapproval", "awaitinginput", "done", "failed", "cancelled",
        };
        return (unsigned)s < SESS_STATUS_MAX ? n[s] : "unknown";
}

const char *run_ending_name(enum run_ending e)
{
        static const char *const n[RUN_ENDING_MAX] = {
                "ok",       "agent_error",   "deadline",  "cpu_limit", "memory_limit", "sandbox_violation",
                "protocol", "worker_exited", "cancelled", "limit",     "spawn",        "server",
        };
        return (unsigned)e < RUN_ENDING_MAX ? n[e] : "unknown";
}

const double hist_bounds[HIST_BUCKETS] = { 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30 };

void histogram_observe(struct histogram *h, double seconds)
{
        size_t i = 0;
        while (i < HIST_BUCKETS && seconds > hist_bounds[i])
                i++;
        h->count[i]++;
        h->sum += seconds;
}

/* Send a cJSON document (consumed). */
static void reply_json(struct http_req *r, unsigned status, cJSON *doc, const char *const *headers)
{
        char *text = doc ? cJSON_PrintUnformatted(doc) : NULL;
        cJSON_Delete(doc);
        if (!text) {
                static const char oom[] = "{\"error\":{\"code\":\"internal\",\"message\":\"out of memory\"}}";
                http_reply(r, 500, "application/json", oom, sizeof(oom) - 1, NULL);
                return;
        }
        size_t len = strlen(text);
        text[len] = '\0';
        char *with_nl = realloc(text, len + 2);
        if (with_nl) {
                text = with_nl;
                text[len++] = '\n';
                text[len] = '\0';
        }
        http_reply(r, status, "application/json", text, len, headers);
        free(text);
}

static void api_error_h(struct http_req *r, enum api_code code, const char *const *headers, const char *fmt,
                        va_list ap) __attribute__((format(printf, 4, 0)));
static void api_error_h(struct http_req *r, enum api_code code, const char *const *headers, const char *fmt,
                        va_list ap)
{
        char msg[1024];
        vsnprintf(msg, sizeof(msg), fmt, ap);
        cJSON *doc = cJSON_CreateObject();
        cJSON *e = cJSON_AddObjectToObject(doc, "error");
        cJSON_AddStringToObject(e, "code", api_code_name(code));
        cJSON_AddStringToObject(e, "message", msg);
        reply_json(r, api_code_status(code), doc, headers);
}

void api_error(struct http_req *r, enum api_code code, const char *fmt, ...)
{
        va_list ap;
        va_start(ap, fmt);
        const char *const *headers = NULL;
        static const char *const bearer[] = { "WWW-Authenticate", "Bearer realm=\"chidori\"", NULL };
        if (code == API_UNAUTHORIZED)
                headers = bearer;
        api_error_h(r, code, headers, fmt, ap);
        va_end(ap);
}

static void api_error_hdr(struct http_req *r, enum api_code code, const char *const *headers, const char *fmt, ...)
        __attribute__((format(printf, 4, 5)));
static void api_error_hdr(struct http_req *r, enum api_code code, const char *const *headers, const char *fmt, ...)
{
        va_list ap;
        va_start(ap, fmt);
        api_error_h(r, code, headers, fmt, ap);
        va_end(ap);
}

/* The caller's path, quoted for a message (bounded, escaped). */
static const char *qpath(const char *p, char *buf, size_t len)
{
        return text_quote(p, strnlen(p, 200), buf, len);
}

/* ---- the routes ---- */

static void route_healthz(struct http_req *r)
{
        cJSON *doc = cJSON_CreateObject();
        cJSON_AddStringToObject(doc, "status", "ok");
        reply_json(r, 200, doc, NULL);
}

static void route_readyz(struct server *srv, struct http_req *r)
{
        if (srv->draining) {
                api_error(r, API_DRAINING, "the server is draining (SIGTERM): it takes no new sessions");
                return;
        }
        cJSON *doc = cJSON_CreateObject();
        cJSON_AddStringToObject(doc, "status", "ready");
        reply_json(r, 200, doc, NULL);
}

static void metric_head(FILE *f, const char *name, const char *type, const char *help)
{
        fprintf(f, "# HELP chidori_%s %s\n# TYPE chidori_%s %s\n", name, help, name, type);
}

static void metric_hist(FILE *f, const char *name, const char *help, const struct histogram *h)
{
        metric_head(f, name, "histogram", help);
        uint64_t cum = 0;
        for (size_t i = 0; i < HIST_BUCKETS; i++) {
                cum += h->count[i];
                fprintf(f, "chidori_%s_bucket{le=\"%g\"} %llu\n", name, hist_bounds[i], (unsigned long long)cum);
        }
        cum += h->count[HIST_BUCKETS];
        fprintf(f, "chidori_%s_bucket{le=\"+Inf\"} %llu\n", name, (unsigned long long)cum);
        fprintf(f, "chidori_%s_sum %.6f\nchidori_%s_count %llu\n", name, h->sum, name, (unsigned long long)cum);
}

static void route_metrics(struct server *srv, struct http_req *r)
{
        char *text = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&text, &len);
        if (!f) {
                api_error(r, API_INTERNAL, "out of memory");
                return;
        }
        const struct server_stats *st = &srv->stats;
        metric_head(f, "sessions", "gauge", "Sessions by status.");
        for (int s = 0; s < SESS_STATUS_MAX; s++)
                fprintf(f, "chidori_sessions{status=\"%s\"} %llu\n", sess_status_name(s),
                        (unsigned long long)st->sessions[s]);
        metric_head(f, "queue_depth", "gauge", "Sessions waiting for a free run slot (--max-running).");
        fprintf(f, "chidori_queue_depth %llu\n", (unsigned long long)st->sessions[SESS_QUEUED]);
        metric_head(f, "approvals_pending", "gauge", "Sessions paused on an approval.");
        fprintf(f, "chidori_approvals_pending %llu\n", (unsigned long long)st->sessions[SESS_AWAITING_APPROVAL]);
        metric_head(f, "runs_total", "counter", "Runs (a resume is a run) by how they ended.");
        for (int e = 0; e < RUN_ENDING_MAX; e++)
                fprintf(f, "chidori_runs_total{ending=\"%s\"} %llu\n", run_ending_name(e),
                        (unsigned long long)st->runs[e]);
        metric_head(f, "memory_limit_kills_total", "counter", "Runs ended by the memory ceiling.");
        fprintf(f, "chidori_memory_limit_kills_total %llu\n", (unsigned long long)st->memory_kills);
        metric_hist(f, "run_duration_seconds", "Wall time of a run, from its box's request to its end.",
                    &st->run_duration);
        metric_hist(f, "box_start_seconds", "Time from asking for a box to its worker running.", &st->box_start);
        metric_head(f, "effects_total", "counter", "Effects by op and the policy's decision.");
        for (size_t i = 0; i < st->n_effects; i++)
                fprintf(f, "chidori_effects_total{op=\"%s\",decision=\"%s\"} %llu\n", st->effects[i].op,
                        st->effects[i].decision, (unsigned long long)st->effects[i].n);
        metric_head(f, "http_responses_total", "counter", "HTTP answers by status class.");
        for (int c = 1; c < 6; c++)
                fprintf(f, "chidori_http_responses_total{class=\"%dxx\"} %llu\n", c,
                        (unsigned long long)st->by_class[c]);
        metric_head(f, "draining", "gauge", "1 while the server drains (SIGTERM).");
        fprintf(f, "chidori_draining %d\n", srv->draining ? 1 : 0);
        metric_head(f, "uptime_seconds", "gauge", "Seconds since the server started.");
        fprintf(f, "chidori_uptime_seconds %.3f\n", (mono_ms() - srv->started) / 1000.0);
        if (fclose(f) != 0 || !text) {
                free(text);
                api_error(r, API_INTERNAL, "out of memory");
                return;
        }
        http_reply(r, 200, "text/plain; version=0.0.4; charset=utf-8", text, len, NULL);
        free(text);
}

static bool is_get(const char *m)
{
        return strcmp(m, MHD_HTTP_METHOD_GET) == 0 || strcmp(m, MHD_HTTP_METHOD_HEAD) == 0;
}

static void method_not_allowed(struct http_req *r, const char *allow)
{
        const char *const h[] = { "Allow", allow, NULL };
        char q[256], qp[512];
        api_error_hdr(r, API_METHOD_NOT_ALLOWED, h, "'%s' is not a method of '%s' (allowed: %s)",
                      text_quote(r->method, strnlen(r->method, 20), q, sizeof(q)), qpath(r->url, qp, sizeof(qp)),
                      allow);
}

void api_handle(struct server *srv, struct http_req *r)
{
        const char *url = r->url;
        char q[512];
        if (strcmp(url, "/healthz") == 0 || strcmp(url, "/readyz") == 0) {
                if (!is_get(r->method)) {
                        method_not_allowed(r, "GET, HEAD");
                        return;
                }
                if (url[1] == 'h')
                        route_healthz(r);
                else
                        route_readyz(srv, r);
                return;
        }
        /* Every other route needs the token when one is configured. */
        const char *tenant = auth_check(srv->cfg.auth, http_header(r, MHD_HTTP_HEADER_AUTHORIZATION));
        if (!tenant) {
                api_error(r, API_UNAUTHORIZED,
                          http_header(r, MHD_HTTP_HEADER_AUTHORIZATION)
                                  ? "the bearer token is not one this server accepts"
                                  : "this server needs a bearer token: send 'Authorization: Bearer TOKEN'");
                return;
        }
        if (r->too_large) {
                api_error(r, API_TOO_LARGE, "the request body is larger than --max-body (%zu bytes)",
                          srv->cfg.max_body);
                return;
        }
        if (strcmp(url, "/metrics") == 0) {
                if (!is_get(r->method)) {
                        method_not_allowed(r, "GET, HEAD");
                        return;
                }
                route_metrics(srv, r);
                return;
        }
        if (strcmp(url, "/sessions") == 0 || strncmp(url, "/sessions/", 10) == 0) {
                api_error(r, API_NOT_IMPLEMENTED, "'%s': sessions are not served by this build yet",
                          qpath(url, q, sizeof(q)));
                return;
        }
        api_error(r, API_NOT_FOUND, "no route '%s' (routes: /sessions, /healthz, /readyz, /metrics)",
                  qpath(url, q, sizeof(q)));
}
