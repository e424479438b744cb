/* server/api.c — the routes of `chidori serve`, their JSON, the error table
 * and the metrics (docs/serve.md).  Everything here answers one request;
 * the caller's bytes (path, headers, body) are parsed with limits and never
 * echoed unescaped. */
#define _GNU_SOURCE
#include <cjson/cJSON.h>
#include "server/mhd.h"
#include <stdarg.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/text.h"
#include "common/util.h"
#include "policy/policy.h"
#include "proto/json.h"
#include "runtime/evloop.h"
#include "server/quotas.h"
#include "server/server-internal.h"
#include "server/store.h"

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
        char msg[1024], safe[1024];
        vsnprintf(msg, sizeof(msg), fmt, ap);
        /* A caller's path or field name may hold any bytes (%FF): the answer
         * stays UTF-8 JSON, invalid bytes shown as \xNN (found by fuzz_serve). */
        const char *m = json_utf8_valid(msg, strlen(msg)) ? msg : text_term(msg, strlen(msg), safe, sizeof(safe));
        cJSON *doc = cJSON_CreateObject();
        cJSON *e = cJSON_AddObjectToObject(doc, "error");
        cJSON_AddStringToObject(e, "code", api_code_name(code));
        cJSON_AddStringToObject(e, "message", m);
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
        /* The store answers (PostgreSQL: a round trip, reconnecting once
         * when the connection was lost; SQLite: unless its disk was found
         * full and has no room yet). */
        struct err *e = NULL;
        bool ok = store_ready(srv->store, &e) == 0;
        cJSON *doc = cJSON_CreateObject();
        cJSON_AddStringToObject(doc, "status", ok ? "ready" : "unavailable");
        cJSON_AddStringToObject(doc, "store", store_kind(srv->store));
        if (!ok) {
                cJSON *er = cJSON_AddObjectToObject(doc, "error");
                cJSON_AddStringToObject(er, "code", "unavailable");
                char msg[1400];
                snprintf(msg, sizeof(msg), "the %s store %s does not answer: %s", store_kind(srv->store),
                         store_path(srv->store), err_msg(e));
                cJSON_AddStringToObject(er, "message", msg);
                err_free(e);
        }
        reply_json(r, ok ? 200 : 503, doc, NULL);
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

static void count_status(void *arg, const char *status, uint64_t n)
{
        uint64_t *counts = arg;
        for (int i = 0; i < SESS_STATUS_MAX; i++)
                if (strcmp(status, sess_status_name(i)) == 0)
                        counts[i] = n;
}

/* A Prometheus label value: backslash, quote and newline escaped. */
static const char *label(const char *v, char *buf, size_t len)
{
        size_t o = 0;
        for (; *v && o + 3 < len; v++) {
                if (*v == '\\' || *v == '"' || *v == '\n')
                        buf[o++] = '\\';
                buf[o++] = *v == '\n' ? 'n' : *v;
        }
        buf[o] = 0;
        return buf;
}

static void route_metrics(struct server *srv, struct http_req *r)
{
        char lb[600];
        uint64_t counts[SESS_STATUS_MAX] = { 0 };
        if (srv->store)
                store_status_counts(srv->store, count_status, counts, NULL);
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
                        (unsigned long long)counts[s]);
        metric_head(f, "queue_depth", "gauge", "Sessions waiting for a free run slot (--max-running).");
        fprintf(f, "chidori_queue_depth %u\n", srv->queued);
        metric_head(f, "approvals_pending", "gauge", "Sessions paused on an approval.");
        fprintf(f, "chidori_approvals_pending %llu\n", (unsigned long long)counts[SESS_AWAITING_APPROVAL]);
        metric_head(f, "runs_total", "counter", "Runs (a resume is a run) by how they ended.");
        for (int e = 0; e < RUN_ENDING_MAX; e++)
                fprintf(f, "chidori_runs_total{ending=\"%s\"} %llu\n", run_ending_name(e),
                        (unsigned long long)st->runs[e]);
        metric_head(f, "pauses_total", "counter", "Runs paused (not ended) to wait for a decision, by what they wait for.");
        fprintf(f, "chidori_pauses_total{for=\"approval\"} %llu\n", (unsigned long long)st->pauses[0]);
        fprintf(f, "chidori_pauses_total{for=\"input\"} %llu\n", (unsigned long long)st->pauses[1]);
        metric_head(f, "memory_limit_kills_total", "counter", "Runs ended by the memory ceiling.");
        fprintf(f, "chidori_memory_limit_kills_total %llu\n", (unsigned long long)st->memory_kills);
        metric_hist(f, "run_duration_seconds", "Wall time of a run, from its box's request to its end.",
                    &st->run_duration);
        metric_hist(f, "box_start_seconds", "Time from asking for a box to its worker running.", &st->box_start);
        metric_head(f, "pool_size", "gauge", "Boxes the warm pool keeps started ahead (--pool).");
        fprintf(f, "chidori_pool_size %u\n", srv->cfg.pool);
        metric_head(f, "pool_hits_total", "counter", "Runs whose box came from the warm pool.");
        fprintf(f, "chidori_pool_hits_total %llu\n",
                (unsigned long long)(srv->cfg.pool_hits ? *srv->cfg.pool_hits : 0));
        metric_head(f, "pool_misses_total", "counter",
                    "Runs that started a box of their own although --pool is set (none ready, or another posture).");
        fprintf(f, "chidori_pool_misses_total %llu\n",
                (unsigned long long)(srv->cfg.pool_misses ? *srv->cfg.pool_misses : 0));
        metric_head(f, "effects_total", "counter", "Effects by op and the policy's decision.");
        for (size_t i = 0; i < st->n_effects; i++)
                fprintf(f, "chidori_effects_total{op=\"%s\",decision=\"%s\"} %llu\n", st->effects[i].op,
                        st->effects[i].decision, (unsigned long long)st->effects[i].n);
        metric_head(f, "http_responses_total", "counter", "HTTP answers by status class.");
        for (int c = 1; c < 6; c++)
                fprintf(f, "chidori_http_responses_total{class=\"%dxx\"} %llu\n", c,
                        (unsigned long long)st->by_class[c]);
        metric_head(f, "tenant_usage", "gauge",
                    "A tenant's use of each quota in the current window (--quotas window_s), as recorded.");
        for (const struct tenant_budget *tb = srv->budgets; tb; tb = tb->next)
                for (int k = 0; k < QUOTA_KIND_MAX; k++)
                        fprintf(f, "chidori_tenant_usage{tenant=\"%s\",quota=\"%s\"} %llu\n", label(tb->tenant, lb, sizeof(lb)),
                                quota_name(k), (unsigned long long)tb->q.used[k]);
        metric_head(f, "tenant_quota_limit", "gauge", "A tenant's budget per window (--quotas), where one is set.");
        for (const struct tenant_budget *tb = srv->budgets; tb; tb = tb->next)
                for (int k = 0; k < QUOTA_KIND_MAX; k++)
                        if (tb->q.lim.v[k])
                                fprintf(f, "chidori_tenant_quota_limit{tenant=\"%s\",quota=\"%s\"} %llu\n",
                                        label(tb->tenant, lb, sizeof(lb)), quota_name(k),
                                        (unsigned long long)tb->q.lim.v[k]);
        metric_head(f, "tenant_sessions", "gauge", "A tenant's sessions queued or running now.");
        for (const struct tenant_budget *tb = srv->budgets; tb; tb = tb->next)
                fprintf(f, "chidori_tenant_sessions{tenant=\"%s\"} %u\n", label(tb->tenant, lb, sizeof(lb)),
                        budget_live_sessions(srv, tb->tenant));
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

static bool is_get(const char *m);
static bool settled(const char *status);
static void method_not_allowed(struct http_req *r, const char *allow);

/* ---- the session routes ---- */

/* The store failed: a full disk or a lock another process holds is 503
 * naming the file; else 500. */
static void store_error(struct http_req *r, const struct err *e)
{
        if (err_code(e) == STORE_E_FULL)
                api_error(r, API_UNAVAILABLE, "the state database cannot be written: %s; free space and retry",
                          err_msg(e));
        else if (err_code(e) == STORE_E_UNAVAILABLE)
                api_error(r, API_UNAVAILABLE, "the state database does not answer: %s; retry when /readyz says ready",
                          err_msg(e));
        else if (err_code(e) == STORE_E_CONFLICT)
                api_error(r, API_CONFLICT, "%s", err_msg(e));
        else if (err_code(e) == STORE_E_BUSY)
                api_error(r, API_UNAVAILABLE,
                          "the state database is locked by another process: %s; retry when it lets go", err_msg(e));
        else
                api_error(r, API_INTERNAL, "the state database failed: %s", err_msg(e));
}

/* The session's JSON (docs/serve.md, "Session"). */
cJSON *api_session_json(struct server *srv, const struct store_session *s)
{
        cJSON *j = cJSON_CreateObject();
        cJSON_AddStringToObject(j, "id", s->id);
        cJSON_AddStringToObject(j, "agent", s->agent);
        cJSON_AddStringToObject(j, "status", s->status);
        if (s->policy_profile)
                cJSON_AddStringToObject(j, "policy_profile", s->policy_profile);
        else
                cJSON_AddNullToObject(j, "policy_profile");
        cJSON_AddStringToObject(j, "tenant", s->tenant);
        cJSON_AddStringToObject(j, "created_at", s->created_at);
        cJSON_AddStringToObject(j, "updated_at", s->updated_at);
        if (s->result)
                cJSON_AddItemToObject(j, "result", json_cjson_raw((struct json_span){ s->result, strlen(s->result) }));
        if (s->error) {
                cJSON *e = cJSON_Parse(s->error);
                if (e)
                        cJSON_AddItemToObject(j, "error", e);
        }
        if (s->exit >= 0)
                cJSON_AddNumberToObject(j, "exit", s->exit);
        if (s->pending && settled(s->status)) {
                /* {"approval": {...}} or {"input": {...}} */
                cJSON *p = cJSON_Parse(s->pending);
                const cJSON *a = cJSON_GetObjectItemCaseSensitive(p, "approval");
                const cJSON *in = cJSON_GetObjectItemCaseSensitive(p, "input");
                if (a && strcmp(s->status, "awaitingapproval") == 0) {
                        cJSON *c = cJSON_Duplicate(a, 1);
                        cJSON_DeleteItemFromObjectCaseSensitive(c, "args_text"); /* internal: the decision's key */
                        cJSON_AddItemToObject(j, "pending_approval", c);
                }
                if (in && strcmp(s->status, "awaitinginput") == 0)
                        cJSON_AddItemToObject(j, "pending_input", cJSON_Duplicate(in, 1));
                cJSON_Delete(p);
        }
        if (s->stats) {
                cJSON *st = cJSON_Parse(s->stats);
                if (st)
                        cJSON_AddItemToObject(j, "stats", st);
        }
        /* usage: {NAME: {used, limit}} — the running session's now, else as
         * its last run left it (in the stored stats). */
        cJSON *stats = cJSON_GetObjectItemCaseSensitive(j, "stats");
        cJSON *usage = cJSON_DetachItemFromObjectCaseSensitive(stats, "usage");
        struct live *l = srv ? sessions_find(srv, s->id) : NULL;
        if (l && l->cfg.quota && !l->queued) {
                cJSON_Delete(usage);
                usage = quota_usage_json(&l->quota);
        }
        if (usage)
                cJSON_AddItemToObject(j, "usage", usage);
        return j;
}

static bool settled(const char *status)
{
        return strcmp(status, "queued") != 0 && strcmp(status, "running") != 0;
}

/* Answer with session id's JSON (status `code`); 404 when it is gone. */
static void reply_session(struct server *srv, struct http_req *r, const char *id, unsigned code, bool location)
{
        struct store_session s = { 0 };
        struct err *err = NULL;
        int rc = store_session_get(srv->store, id, &s, &err);
        if (rc < 0) {
                store_error(r, err);
                err_free(err);
                return;
        }
        if (rc > 0) {
                api_error(r, API_NOT_FOUND, "no session '%s'", id);
                return;
        }
        char loc[64];
        snprintf(loc, sizeof(loc), "/sessions/%s", id);
        const char *const h[] = { "Location", loc, NULL };
        reply_json(r, code, api_session_json(srv, &s), location ? h : NULL);
        store_session_clear(&s);
}

/* The session `id` as `tenant` may see it: 0 (*ret filled), or answered
 * (404 for a missing one and for another tenant's alike). */
static int visible(struct server *srv, struct http_req *r, const char *id, struct store_session *ret)
{
        struct err *err = NULL;
        int rc = sessions_id_ok(id) ? store_session_get(srv->store, id, ret, &err) : 1;
        if (rc < 0) {
                store_error(r, err);
                err_free(err);
                return -1;
        }
        if (rc > 0 || !auth_sees(r->tenant, ret->tenant)) {
                char q[128];
                api_error(r, API_NOT_FOUND, "no session '%s'", text_quote(id, strlen(id), q, sizeof(q)));
                if (rc == 0)
                        store_session_clear(ret);
                return -1;
        }
        return 0;
}

/* ---- waiting for a session to settle ---- */

static void waiter_remove(struct server *srv, struct waiter *w)
{
        for (struct waiter **p = &srv->waiters; *p; p = &(*p)->next)
                if (*p == w) {
                        *p = w->next;
                        break;
                }
        if (w->timer)
                evloop_timer_del(srv->loop, w->timer);
        free(w);
}

static void on_wait_timeout(struct evloop *loop, struct ev_timer *t, void *arg)
{
        (void)loop, (void)t;
        struct waiter *w = arg;
        struct server *srv = w->srv;
        w->timer = NULL;
        w->r->wait_code = 202; /* not settled in time */
        http_resume(w->r);
        waiter_remove(srv, w);
}

int waiters_add(struct server *srv, struct http_req *r, const char *id, long ms, unsigned settled_code)
{
        struct waiter *w = calloc(1, sizeof(*w));
        if (!w)
                return -1;
        w->srv = srv;
        w->r = r;
        snprintf(w->id, sizeof(w->id), "%s", id);
        if (evloop_timer_add(srv->loop, mono_ms() + (double)ms, on_wait_timeout, w, &w->timer, NULL) < 0) {
                free(w);
                return -1;
        }
        r->wait_code = settled_code;
        snprintf(r->wait_id, sizeof(r->wait_id), "%s", id);
        w->next = srv->waiters;
        srv->waiters = w;
        http_suspend(r);
        return 0;
}

void waiters_wake(struct server *srv, const char *id)
{
        struct waiter **p = &srv->waiters;
        while (*p) {
                struct waiter *w = *p;
                if (strcmp(w->id, id) == 0) {
                        *p = w->next;
                        if (w->timer)
                                evloop_timer_del(srv->loop, w->timer);
                        http_resume(w->r);
                        free(w);
                } else {
                        p = &w->next;
                }
        }
}

void waiters_free_all(struct server *srv)
{
        while (srv->waiters) {
                struct waiter *w = srv->waiters;
                srv->waiters = w->next;
                if (w->timer)
                        evloop_timer_del(srv->loop, w->timer);
                w->r->wait_shutdown = true;
                http_resume(w->r);
                free(w);
        }
}

void waiters_poll(struct server *srv)
{
        for (bool again = true; again;) {
                again = false;
                for (struct waiter *w = srv->waiters; w; w = w->next) {
                        if (sessions_find(srv, w->id))
                                continue;
                        struct store_session s = { 0 };
                        int rc = store_session_get(srv->store, w->id, &s, NULL);
                        bool done = rc > 0 || (rc == 0 && settled(s.status));
                        store_session_clear(&s);
                        if (done) {
                                char id[SESSION_ID_LEN + 1];
                                snprintf(id, sizeof(id), "%s", w->id);
                                waiters_wake(srv, id); /* changes the list */
                                again = true;
                                break;
                        }
                }
        }
}

/* The wait is over: the session as it is now. */
static void answer_wait(struct server *srv, struct http_req *r)
{
        if (r->wait_shutdown) {
                api_error(r, API_DRAINING, "the server is stopping; session %s goes on at its next start",
                          r->wait_id);
                return;
        }
        reply_session(srv, r, r->wait_id, r->wait_code, r->wait_code == 201 || r->wait_code == 202);
}

/* ---- bodies ---- */

/* The body as a JSON object whose fields are all in `known` (NULL-ended);
 * `raw` fields are kept as the caller wrote them.  NULL: answered. */
static cJSON *parse_body(struct http_req *r, const char *const *known, const char *const *raw)
{
        const char *text = r->body ? r->body : "";
        size_t len = r->body_len;
        size_t i = 0;
        while (i < len && (text[i] == ' ' || text[i] == '\t' || text[i] == '\r' || text[i] == '\n'))
                i++;
        if (i == len)
                return cJSON_CreateObject(); /* no body: every field takes its default */
        struct json_error je;
        if (json_validate(text, len, NULL, &je, NULL) < 0) {
                size_t l, c;
                json_line_col(text, len, je.offset, &l, &c);
                char q[200];
                api_error(r, API_INVALID_JSON, "the body is not valid JSON (line %zu, column %zu): %s", l, c,
                          text_quote(je.what, strlen(je.what), q, sizeof(q)));
                return NULL;
        }
        cJSON *doc = json_to_cjson((struct json_span){ text, len }, raw, false);
        if (!doc) {
                api_error(r, API_INTERNAL, "out of memory");
                return NULL;
        }
        if (!cJSON_IsObject(doc)) {
                cJSON_Delete(doc);
                api_error(r, API_INVALID_JSON, "the body must be a JSON object");
                return NULL;
        }
        for (cJSON *f = doc->child; f; f = f->next) {
                bool ok = false;
                for (size_t k = 0; known[k]; k++)
                        ok |= strcmp(f->string, known[k]) == 0;
                char q[128];
                if (!ok) {
                        api_error(r, API_UNKNOWN_FIELD, "unknown field '%s'",
                                  text_quote(f->string, strnlen(f->string, 64), q, sizeof(q)));
                        cJSON_Delete(doc);
                        return NULL;
                }
                for (cJSON *g = f->next; g; g = g->next)
                        if (strcmp(f->string, g->string) == 0) {
                                api_error(r, API_INVALID_FIELD, "field '%s' is given twice", f->string);
                                cJSON_Delete(doc);
                                return NULL;
                        }
        }
        return doc;
}

/* wait and wait_ms of a body: -1 answered. */
static int wait_fields(struct http_req *r, const cJSON *doc, bool dflt, bool *ret_wait, long *ret_ms)
{
        const cJSON *w = cJSON_GetObjectItemCaseSensitive(doc, "wait");
        const cJSON *ms = cJSON_GetObjectItemCaseSensitive(doc, "wait_ms");
        *ret_wait = dflt;
        *ret_ms = 30000;
        if (w && !cJSON_IsBool(w)) {
                api_error(r, API_INVALID_FIELD, "field 'wait' must be true or false");
                return -1;
        }
        if (w)
                *ret_wait = cJSON_IsTrue(w);
        if (ms) {
                if (!cJSON_IsNumber(ms) || ms->valuedouble < 0 || ms->valuedouble > 600000 ||
                    ms->valuedouble != (double)(long)ms->valuedouble) {
                        api_error(r, API_INVALID_FIELD, "field 'wait_ms' must be an integer from 0 to 600000");
                        return -1;
                }
                *ret_ms = (long)ms->valuedouble;
        }
        return 0;
}

/* policy_profile (or policyProfile) of a POST /sessions body: -1 answered;
 * *ret the field (a profile name or null), or NULL when absent. */
static int profile_field(struct http_req *r, const cJSON *doc, const cJSON **ret)
{
        const cJSON *p1 = cJSON_GetObjectItemCaseSensitive(doc, "policy_profile");
        const cJSON *p2 = cJSON_GetObjectItemCaseSensitive(doc, "policyProfile");
        const cJSON *prof = p1 ? p1 : p2;
        char q[256];
        if (p1 && p2) {
                api_error(r, API_INVALID_FIELD, "give 'policy_profile' or 'policyProfile', not both");
                return -1;
        }
        if (prof && !cJSON_IsString(prof) && !cJSON_IsNull(prof)) {
                api_error(r, API_INVALID_FIELD, "field '%s' must be a profile name (a string)", prof->string);
                return -1;
        }
        if (cJSON_IsString(prof) && !policy_is_profile_name(prof->valuestring)) {
                api_error(r, API_UNKNOWN_PROFILE, "unknown policy profile '%s' (expected permissive, untrusted or "
                                                  "supervised)",
                          text_quote(prof->valuestring, strnlen(prof->valuestring, 64), q, sizeof(q)));
                return -1;
        }
        *ret = prof;
        return 0;
}

/* The Idempotency-Key header (key, may be NULL): 1 answered — a malformed
 * key, a store error, or a repeat, answered with the first session as it
 * is now (its events when `stream`) — else 0. */
static int idempotent_repeat(struct server *srv, struct http_req *r, const char *key, bool stream)
{
        if (!key)
                return 0;
        size_t kl = strlen(key);
        bool ok = kl > 0 && kl <= 255;
        for (size_t i = 0; ok && i < kl; i++)
                ok = key[i] > 0x20 && key[i] < 0x7f;
        if (!ok) {
                api_error(r, API_INVALID_FIELD, "the Idempotency-Key header must be 1 to 255 printable "
                                                "ASCII characters");
                return 1;
        }
        char *idem_id = NULL;
        struct err *err = NULL;
        int rc = store_idem_get(srv->store, r->tenant, key, &idem_id, &err);
        if (rc < 0)
                store_error(r, err);
        else if (rc == 0 && stream)
                events_stream(srv, r, idem_id, 0, 200);
        else if (rc == 0)
                reply_session(srv, r, idem_id, 200, true);
        free(idem_id);
        err_free(err);
        return rc <= 0;
}

/* A new session is refused while draining (503) and past --max-queued
 * (429): -1 answered. */
static int can_take_session(struct server *srv, struct http_req *r)
{
        if (srv->draining) {
                api_error(r, API_DRAINING, "the server is draining (SIGTERM): it takes no new sessions");
                return -1;
        }
        if (!sessions_can_queue(srv)) {
                const char *const h[] = { "Retry-After", "1", NULL };
                api_error_hdr(r, API_QUEUE_FULL, h, "%u sessions run and %u wait (--max-running, --max-queued): retry later",
                              srv->running, srv->queued);
                return -1;
        }
        return 0;
}

/* A tenant's concurrent sessions (--quotas "concurrent_sessions"): past
 * it, 429 like --max-queued, for a new session and for a resume alike
 * (approve, input): -1 answered. */
static int tenant_can_take(struct server *srv, struct http_req *r, const char *tenant)
{
        const struct quotas *q = srv->run.quotas;
        unsigned max = q ? quotas_tenant(q, tenant)->concurrent : 0;
        unsigned now = max ? budget_live_sessions(srv, tenant) : 0;
        if (!max || now < max)
                return 0;
        const char *const h[] = { "Retry-After", "1", NULL };
        api_error_hdr(r, API_QUEUE_FULL, h,
                      "tenant quota exceeded: concurrent_sessions limit %u, used %u (sessions of tenant '%s' queued or "
                      "running; the operator's --quotas): retry when one ends",
                      max, now, tenant);
        return -1;
}

/* The answer to a session just made: its events (`stream`, 201), 202 at
 * once (wait false), 201 once it settles within wait_ms, else 202. */
static void created_answer(struct server *srv, struct http_req *r, const char *id, bool stream, bool wait,
                           long wait_ms)
{
        if (stream) {
                events_stream(srv, r, id, 0, 201);
                return;
        }
        if (!wait) {
                reply_session(srv, r, id, 202, true);
                return;
        }
        struct store_session now = { 0 };
        if (store_session_get(srv->store, id, &now, NULL) == 0 && settled(now.status)) {
                store_session_clear(&now);
                reply_session(srv, r, id, 201, true);
                return;
        }
        store_session_clear(&now);
        if (waiters_add(srv, r, id, wait_ms, 201) < 0)
                reply_session(srv, r, id, 202, true);
}

/* POST /sessions, and POST /sessions/stream (`stream`: the answer is the
 * session's events from its creation until it settles). */
static void route_create(struct server *srv, struct http_req *r, bool stream)
{
        static const char *const known[] = { "input", "policy_profile", "policyProfile", "wait", "wait_ms", "quotas",
                                             NULL };
        static const char *const raw[] = { "input", NULL };
        cJSON *doc = parse_body(r, known, raw);
        if (!doc)
                return;
        const cJSON *prof = NULL;
        bool wait;
        long wait_ms;
        struct policy *profile = NULL;
        struct err *err = NULL;
        const char *key = NULL;
        char *quotas_text = NULL;
        if (profile_field(r, doc, &prof) < 0 || wait_fields(r, doc, true, &wait, &wait_ms) < 0)
                goto out;
        /* The session's own quotas: stricter wins over the operator's
         * (a looser value is no use, not an error: docs/serve.md, "Quotas"). */
        const cJSON *qj = cJSON_GetObjectItemCaseSensitive(doc, "quotas");
        if (qj && !cJSON_IsNull(qj)) {
                struct quota_limits ql = { 0 };
                char qmsg[512];
                if (!quota_limits_parse(qj, "quotas", NULL, &ql, qmsg, sizeof(qmsg))) {
                        api_error(r, API_INVALID_FIELD, "%s", qmsg);
                        goto out;
                }
                quotas_text = cJSON_PrintUnformatted(qj);
        }
        key = http_header(r, "Idempotency-Key");
        if (idempotent_repeat(srv, r, key, stream) || can_take_session(srv, r) < 0 ||
            tenant_can_take(srv, r, r->tenant) < 0)
                goto out;
        if (cJSON_IsString(prof) && policy_profile(prof->valuestring, "session policy_profile", &profile, &err) < 0) {
                api_error(r, API_INTERNAL, "%s", err_msg(err));
                goto out;
        }
        const cJSON *in = cJSON_GetObjectItemCaseSensitive(doc, "input");
        char id[SESSION_ID_LEN + 1], ts[40];
        sessions_make_id(id);
        utc_iso8601(ts, sizeof(ts));
        struct store_session rec = {
                .id = id, .tenant = (char *)r->tenant, .agent = (char *)srv->cfg.agent, .status = "queued",
                .policy_profile = cJSON_IsString(prof) ? prof->valuestring : NULL,
                .input = in && cJSON_IsRaw(in) ? in->valuestring : "null",
                .created_at = ts, .updated_at = ts, .quotas = quotas_text,
        };
        if (store_session_insert(srv->store, &rec, key, &err) < 0) {
                store_error(r, err);
                goto out;
        }
        cJSON *input = in ? cJSON_Duplicate(in, 1) : cJSON_CreateNull();
        /* A PostgreSQL store: the row was inserted owned by this replica, epoch 1. */
        int rc = sessions_create(srv, id, r->tenant, input, profile, store_leases(srv->store) ? 1 : 0, &err);
        profile = NULL; /* sessions_create's, whatever happens */
        if (rc < 0) {
                api_error(r, API_INTERNAL, "%s", err_msg(err));
                goto out;
        }
        created_answer(srv, r, id, stream, wait, wait_ms);
out:
        free(quotas_text);
        policy_free(profile);
        err_free(err);
        cJSON_Delete(doc);
}

struct list_ctx {
        struct server *srv;
        cJSON *arr;
        unsigned limit, n;
        char last[SESSION_ID_LEN + 1];
        bool more;
};

static int list_one(void *arg, const struct store_session *s)
{
        struct list_ctx *c = arg;
        if (c->n == c->limit) {
                c->more = true;
                return 1;
        }
        cJSON_AddItemToArray(c->arr, api_session_json(c->srv, s));
        snprintf(c->last, sizeof(c->last), "%s", s->id);
        c->n++;
        return 0;
}

static void route_list(struct server *srv, struct http_req *r)
{
        const char *status = http_query(r, "status");
        const char *limit_s = http_query(r, "limit");
        const char *after = http_query(r, "after");
        char q[128];
        if (status) {
                bool ok = false;
                for (int i = 0; i < SESS_STATUS_MAX; i++)
                        ok |= strcmp(status, sess_status_name(i)) == 0;
                if (!ok) {
                        api_error(r, API_INVALID_FIELD, "status '%s' is not a session status (queued, running, "
                                                        "awaitingapproval, awaitinginput, done, failed, cancelled)",
                                  text_quote(status, strnlen(status, 64), q, sizeof(q)));
                        return;
                }
        }
        long limit = 50;
        if (limit_s && (parse_nonneg(limit_s, &limit) < 0 || limit < 1 || limit > 1000)) {
                api_error(r, API_INVALID_FIELD, "limit '%s' is not an integer from 1 to 1000",
                          text_quote(limit_s, strnlen(limit_s, 64), q, sizeof(q)));
                return;
        }
        if (after && !sessions_id_ok(after)) {
                api_error(r, API_INVALID_FIELD, "after '%s' is not a cursor (the 'next' of a previous page)",
                          text_quote(after, strnlen(after, 64), q, sizeof(q)));
                return;
        }
        struct list_ctx c = { .srv = srv, .arr = cJSON_CreateArray(), .limit = (unsigned)limit };
        struct err *err = NULL;
        const char *tenant = strcmp(r->tenant, AUTH_ADMIN_TENANT) == 0 ? NULL : r->tenant;
        if (store_session_list(srv->store, tenant, status, after, c.limit, list_one, &c, &err) < 0) {
                cJSON_Delete(c.arr);
                store_error(r, err);
                err_free(err);
                return;
        }
        cJSON *doc = cJSON_CreateObject();
        cJSON_AddItemToObject(doc, "sessions", c.arr);
        if (c.more)
                cJSON_AddStringToObject(doc, "next", c.last);
        else
                cJSON_AddNullToObject(doc, "next");
        reply_json(r, 200, doc, NULL);
}

struct journal_ctx {
        FILE *f;
};

static int journal_line(void *arg, const char *line, size_t len)
{
        struct journal_ctx *c = arg;
        fwrite(line, 1, len, c->f);
        fputc('\n', c->f);
        return 0;
}

static void route_journal(struct server *srv, struct http_req *r, const char *id)
{
        char *text = NULL;
        size_t len = 0;
        struct journal_ctx c = { open_memstream(&text, &len) };
        if (!c.f) {
                api_error(r, API_INTERNAL, "out of memory");
                return;
        }
        struct err *err = NULL;
        int rc = store_journal_each(srv->store, id, journal_line, &c, &err);
        fclose(c.f);
        if (rc < 0) {
                store_error(r, err);
                err_free(err);
        } else {
                http_reply(r, 200, "application/x-ndjson", text ? text : "", text ? len : 0, NULL);
        }
        free(text);
}

static void route_cancel(struct server *srv, struct http_req *r, const struct store_session *s)
{
        struct live *l = sessions_find(srv, s->id);
        if (!l && !settled(s->status) && store_leases(srv->store)) {
                /* Run by another replica: its owner is asked (it polls), or,
                 * when no live replica owns it, it is cancelled here. */
                char why[128], msg[192];
                snprintf(why, sizeof(why), "cancelled by tenant %s", r->tenant);
                snprintf(msg, sizeof(msg), "%s (no live replica ran it)", why);
                cJSON *e = cJSON_CreateObject();
                cJSON_AddStringToObject(e, "name", "Cancelled");
                cJSON_AddStringToObject(e, "message", msg);
                char *error = cJSON_PrintUnformatted(e);
                cJSON_Delete(e);
                struct err *err = NULL;
                int rc = error ? store_cancel_request(srv->store, s->id, why, error, &err) : -1;
                free(error);
                if (rc < 0 && !err)
                        err_set(&err, ENOMEM, "cancel");
                if (rc < 0) {
                        store_error(r, err);
                        err_free(err);
                } else if (rc == 2) {
                        api_error(r, API_CONFLICT, "session %s has already settled: nothing to cancel", s->id);
                } else if (rc == 1) {
                        /* Its streams (on any replica) get the ending, as from an owner. */
                        struct store_session now = { 0 };
                        if (store_session_get(srv->store, s->id, &now, NULL) == 0)
                                events_emit(srv, s->id, "done", api_session_json(srv, &now), false);
                        store_session_clear(&now);
                        reply_session(srv, r, s->id, 200, false);
                } else if (waiters_add(srv, r, s->id, 30000, 200) < 0) {
                        reply_session(srv, r, s->id, 200, false);
                }
                return;
        }
        if (!l || settled(s->status)) {
                api_error(r, API_CONFLICT, "session %s has already settled (%s): nothing to cancel", s->id, s->status);
                return;
        }
        char why[128];
        snprintf(why, sizeof(why), "cancelled by tenant %s", r->tenant);
        bool queued = l->queued;
        sessions_cancel(srv, l, why);
        if (queued || !sessions_find(srv, s->id) || waiters_add(srv, r, s->id, 30000, 200) < 0)
                reply_session(srv, r, s->id, 200, false);
}

static void route_delete(struct server *srv, struct http_req *r, const struct store_session *s)
{
        struct live *l = sessions_find(srv, s->id);
        if (l) {
                l->deleted = true; /* nothing more is recorded for it */
                sessions_cancel(srv, l, "deleted");
        }
        struct err *err = NULL;
        if (sessions_delete(srv, s->id, &err) < 0) {
                store_error(r, err);
                err_free(err);
                return;
        }
        http_reply(r, 204, NULL, "", 0, NULL);
}

/* The answer of approve / input: the session resumed, waiting like create. */
static void answer_resumed(struct server *srv, struct http_req *r, const char *id, bool wait, long wait_ms)
{
        struct store_session now = { 0 };
        if (!wait || (store_session_get(srv->store, id, &now, NULL) == 0 && settled(now.status))) {
                store_session_clear(&now);
                reply_session(srv, r, id, 200, false);
                return;
        }
        store_session_clear(&now);
        if (waiters_add(srv, r, id, wait_ms, 200) < 0)
                reply_session(srv, r, id, 200, false);
}

/* Can paused session s be resumed now?  No: answered (503, 429: the
 * queue, or its tenant's concurrent_sessions; it stays paused). */
static bool can_resume(struct server *srv, struct http_req *r, const struct store_session *s)
{
        if (srv->draining) {
                api_error(r, API_DRAINING, "the server is draining (SIGTERM): it resumes no session");
                return false;
        }
        if (!sessions_can_queue(srv)) {
                const char *const h[] = { "Retry-After", "1", NULL };
                api_error_hdr(r, API_QUEUE_FULL, h,
                              "%u sessions run and %u wait (--max-running, --max-queued): retry later", srv->running,
                              srv->queued);
                return false;
        }
        if (tenant_can_take(srv, r, s->tenant) < 0)
                return false;
        return true;
}

/* POST /sessions/ID/approve {decision, approval_id?, wait?, wait_ms?} */
static void route_approve(struct server *srv, struct http_req *r, const struct store_session *s)
{
        static const char *const known[] = { "decision", "approval_id", "wait", "wait_ms", NULL };
        cJSON *doc = parse_body(r, known, NULL);
        if (!doc)
                return;
        cJSON *pending = NULL;
        bool wait;
        long wait_ms;
        const cJSON *d = cJSON_GetObjectItemCaseSensitive(doc, "decision");
        const cJSON *aid = cJSON_GetObjectItemCaseSensitive(doc, "approval_id");
        if (!cJSON_IsString(d) || (strcmp(d->valuestring, "allow") != 0 && strcmp(d->valuestring, "deny") != 0)) {
                api_error(r, API_INVALID_FIELD, "field 'decision' must be \"allow\" or \"deny\"");
                goto out;
        }
        int64_t aid_n;
        if (aid && (!cJSON_IsNumber(aid) || !double_to_int64(aid->valuedouble, &aid_n) || aid_n < 0)) {
                api_error(r, API_INVALID_FIELD, "field 'approval_id' must be the id of the pending approval (an integer)");
                goto out;
        }
        if (wait_fields(r, doc, true, &wait, &wait_ms) < 0)
                goto out;
        pending = s->pending ? cJSON_Parse(s->pending) : NULL;
        const cJSON *a = cJSON_GetObjectItemCaseSensitive(pending, "approval");
        const cJSON *pid = cJSON_GetObjectItemCaseSensitive(a, "id");
        if (strcmp(s->status, "awaitingapproval") != 0 || !cJSON_IsNumber(pid)) {
                api_error(r, API_CONFLICT, "session %s has no pending approval (it is %s)", s->id, s->status);
                goto out;
        }
        if (aid && aid->valuedouble != pid->valuedouble) {
                api_error(r, API_CONFLICT, "approval %lld is not the pending one of session %s (%lld is)",
                          (long long)aid->valuedouble, s->id, (long long)pid->valuedouble);
                goto out;
        }
        if (!can_resume(srv, r, s))
                goto out;
        const cJSON *t = cJSON_GetObjectItemCaseSensitive(a, "target");
        const cJSON *at = cJSON_GetObjectItemCaseSensitive(a, "args_text");
        cJSON *dec = cJSON_CreateObject();
        cJSON_AddStringToObject(dec, "target", cJSON_IsString(t) ? t->valuestring : "");
        cJSON_AddStringToObject(dec, "args", cJSON_IsString(at) ? at->valuestring : "{}");
        cJSON_AddBoolToObject(dec, "allow", strcmp(d->valuestring, "allow") == 0);
        cJSON_AddStringToObject(dec, "who", r->tenant);
        struct err *err = NULL;
        if (sessions_resume(srv, s->id, dec, NULL, s, 0, &err) < 0) {
                store_error(r, err);
                err_free(err);
                goto out;
        }
        answer_resumed(srv, r, s->id, wait, wait_ms);
out:
        cJSON_Delete(pending);
        cJSON_Delete(doc);
}

/* POST /sessions/ID/input {value, wait?, wait_ms?} */
static void route_input(struct server *srv, struct http_req *r, const struct store_session *s)
{
        static const char *const known[] = { "value", "wait", "wait_ms", NULL };
        static const char *const raw[] = { "value", NULL };
        cJSON *doc = parse_body(r, known, raw);
        if (!doc)
                return;
        bool wait;
        long wait_ms;
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(doc, "value");
        if (!v) {
                api_error(r, API_INVALID_FIELD, "field 'value' is missing: the answer to the agent's input()");
                goto out;
        }
        if (wait_fields(r, doc, true, &wait, &wait_ms) < 0)
                goto out;
        if (strcmp(s->status, "awaitinginput") != 0) {
                api_error(r, API_CONFLICT, "session %s is not waiting for input (it is %s)", s->id, s->status);
                goto out;
        }
        if (!can_resume(srv, r, s))
                goto out;
        struct err *err = NULL;
        if (sessions_resume(srv, s->id, NULL, cJSON_IsRaw(v) ? v->valuestring : "null", s, 0, &err) < 0) {
                store_error(r, err);
                err_free(err);
                goto out;
        }
        answer_resumed(srv, r, s->id, wait, wait_ms);
out:
        cJSON_Delete(doc);
}

/* GET /sessions/ID/events: SSE; Last-Event-ID resumes after that event. */
static void route_events(struct server *srv, struct http_req *r, const struct store_session *s)
{
        const char *last = http_header(r, "Last-Event-ID");
        long after = 0;
        char q[128];
        if (last && parse_nonneg(last, &after) < 0) {
                api_error(r, API_INVALID_FIELD, "the Last-Event-ID header '%s' is not an event id (a number)",
                          text_quote(last, strnlen(last, 64), q, sizeof(q)));
                return;
        }
        events_stream(srv, r, s->id, (uint64_t)after, 200);
}

static void route_sessions(struct server *srv, struct http_req *r)
{
        const char *url = r->url;
        const char *m = r->method;
        bool post = strcmp(m, MHD_HTTP_METHOD_POST) == 0;
        if (strcmp(url, "/sessions") == 0) {
                if (post)
                        route_create(srv, r, false);
                else if (is_get(m))
                        route_list(srv, r);
                else
                        method_not_allowed(r, "GET, HEAD, POST");
                return;
        }
        if (strcmp(url, "/sessions/stream") == 0) {
                if (!post)
                        method_not_allowed(r, "POST");
                else
                        route_create(srv, r, true);
                return;
        }
        /* /sessions/ID or /sessions/ID/ACTION */
        const char *rest = url + strlen("/sessions/");
        const char *slash = strchr(rest, '/');
        char id[SESSION_ID_LEN + 8];
        size_t idlen = slash ? (size_t)(slash - rest) : strlen(rest);
        char q[256];
        if (idlen == 0 || idlen >= sizeof(id)) {
                api_error(r, API_NOT_FOUND, "no session '%s'", text_quote(rest, strnlen(rest, 64), q, sizeof(q)));
                return;
        }
        memcpy(id, rest, idlen);
        id[idlen] = '\0';
        const char *action = slash ? slash + 1 : "";
        static const struct {
                const char *action, *allow;
        } actions[] = {
                { "", "GET, HEAD, DELETE" }, { "journal", "GET, HEAD" }, { "events", "GET, HEAD" },
                { "cancel", "POST" },        { "approve", "POST" },      { "input", "POST" },
                { "replay", "POST" },
        };
        size_t ai = 0;
        while (ai < sizeof(actions) / sizeof(actions[0]) && strcmp(actions[ai].action, action) != 0)
                ai++;
        if (ai == sizeof(actions) / sizeof(actions[0])) {
                api_error(r, API_NOT_FOUND, "no route '%s'", text_quote(url, strnlen(url, 200), q, sizeof(q)));
                return;
        }
        bool get = is_get(m), del = strcmp(m, MHD_HTTP_METHOD_DELETE) == 0;
        bool allowed = strstr(actions[ai].allow, "POST") ? post : get || (del && !*action);
        if (!allowed) {
                method_not_allowed(r, actions[ai].allow);
                return;
        }
        struct store_session s = { 0 };
        if (visible(srv, r, id, &s) < 0)
                return;
        if (!*action && get)
                reply_json(r, 200, api_session_json(srv, &s), NULL);
        else if (!*action)
                route_delete(srv, r, &s);
        else if (strcmp(action, "journal") == 0)
                route_journal(srv, r, s.id);
        else if (strcmp(action, "cancel") == 0)
                route_cancel(srv, r, &s);
        else if (strcmp(action, "events") == 0)
                route_events(srv, r, &s);
        else if (strcmp(action, "approve") == 0)
                route_approve(srv, r, &s);
        else if (strcmp(action, "input") == 0)
                route_input(srv, r, &s);
        else if (strcmp(action, "replay") == 0) {
                static const char *const known[] = { NULL };
                cJSON *doc = parse_body(r, known, NULL);
                if (doc)
                        replay_route(srv, r, &s);
                cJSON_Delete(doc);
        } else
                api_error(r, API_NOT_IMPLEMENTED, "%s %s is not served by this build yet", m, url);
        store_session_clear(&s);
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
        if (r->resumed && r->canned) {
                http_reply(r, r->canned_code, "application/json", r->canned, strlen(r->canned), NULL);
                return;
        }
        if (r->resumed) {
                answer_wait(srv, r);
                return;
        }
        if (r->health_only && strcmp(url, "/healthz") != 0 && strcmp(url, "/readyz") != 0) {
                api_error(r, API_NOT_FOUND, "no route '%s' on --health-listen (routes: /healthz, /readyz)",
                          qpath(url, q, sizeof(q)));
                return;
        }
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
        r->tenant = tenant;
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
                route_sessions(srv, r);
                return;
        }
        api_error(r, API_NOT_FOUND, "no route '%s' (routes: /sessions, /healthz, /readyz, /metrics)",
                  qpath(url, q, sizeof(q)));
}
