/* effects/net/fetch.c — the `http` effect (fetch in the box): libcurl's
 * multi interface inside the session's event loop, behind the SSRF guard
 * (effects/net/http.c, effects/net/ssrf.c).
 *
 * The policy gate (`http`) has passed for the first URL when effect_http
 * runs; every redirect hop is checked again here (on_redirect), and every
 * address the guard refuses is printed and journaled (on_refuse), and
 * every header holding a secret's placeholder is filled for each hop, or
 * the hop refused (on_header).  A call
 * is answered when its transfer completes, so several fetches are in flight
 * at once and their answers arrive in completion order; the journal keeps
 * that order and replay delivers in it.
 *
 * This file also holds what the net family shares with `prompt`
 * (effects/net/prompt.c): loading libchidori-net.so on first use, and both
 * http engines' fds in the session's loop (the net family's hooks).
 */
#define _GNU_SOURCE
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/text.h"
#include "common/util.h"
#include "effects/net/net.h"
#include "effects/net/secrets.h"
#include "runtime/runtime-internal.h"

static void on_refuse(void *arg, uint64_t id, const char *url, const char *addr, const char *why)
{
        struct broker *b = arg;
        char msg[1024];
        snprintf(msg, sizeof(msg),
                 "http: refused %s for call %llu (%.400s): %s — not public (SSRF guard); allow it with --allow-host",
                 addr, (unsigned long long)id, url, why);
        broker_sink_note(b, "chidori: ", msg); /* the URL is the agent's: the sink escapes it */
        broker_journal_note(b, "ssrf", msg);
}

static int on_redirect(void *arg, uint64_t id, const char *url, struct err **err)
{
        (void)id;
        struct broker *b = arg;
        cJSON *args = cJSON_CreateObject();
        if (!args || !cJSON_AddStringToObject(args, "url", url)) {
                cJSON_Delete(args);
                return err_set(err, ENOMEM, "http: redirect");
        }
        char msg[1024];
        bool ok = broker_gate_now(b, "http", args, msg, sizeof(msg));
        cJSON_Delete(args);
        if (!ok)
                return err_set(err, 0, "%s (redirect to %.400s)", msg, url);
        return 0;
}

/* Every redirect hop is charged as the first was (effect_http): what it
 * sends, taken before (refused: nothing is sent to it), and the body of
 * the redirect response received (docs/serve.md, "Quotas"). */
static int on_hop(void *arg, uint64_t id, uint64_t sent, uint64_t received, struct err **err)
{
        (void)id;
        struct broker *b = arg;
        broker_quota_add(b, QUOTA_INGRESS_BYTES, received);
        struct err *e = NULL;
        if (broker_quota_take(b, QUOTA_EGRESS_BYTES, sent, &e) == 0)
                return 0;
        err_setc(err, HTTP_E_QUOTA, 0, "http: %s", err_msg(e));
        err_free(e);
        return -1;
}

/* secret:NAME, the policy's word for a hop to `url`: asked at once (a
 * transfer cannot wait for an approval). */
static bool secret_gate(void *arg, const char *name, const char *url, char *msg, size_t len)
{
        struct broker *b = arg;
        cJSON *args = cJSON_CreateObject();
        char target[16 + SECRETS_NAME_MAX];
        snprintf(target, sizeof(target), "secret:%s", name);
        if (!args || !cJSON_AddStringToObject(args, "url", url) || !cJSON_AddStringToObject(args, "name", name)) {
                cJSON_Delete(args);
                snprintf(msg, len, "policy: `%s`: out of memory", target);
                return false;
        }
        bool ok = broker_gate_now(b, target, args, msg, len);
        cJSON_Delete(args);
        return ok;
}

/* Secrets by reference (effects/net/secrets.h): a header value holding
 * {{secret:NAME}} gets NAME's value on a hop to one of its hosts, and the
 * request fails on any other hop.  The journal keeps the call's args (the
 * placeholder): a replay needs no secret. */
static int on_header(void *arg, uint64_t id, const char *url, const char *host, long port, const char *name,
                     const char *value, char **ret, struct err **err)
{
        struct broker *b = arg;
        *ret = NULL;
        if (!secrets_has_placeholder(value))
                return 0;
        struct err *e = NULL;
        if (secrets_fill(b->cfg->secrets, name, value, url, host, port, secret_gate, b, ret, &e) == 0)
                return 0;
        int code = err_code(e) == SECRETS_E_POLICY ? HTTP_E_POLICY : HTTP_E_SECRET;
        err_setc(err, code, 0, "http: %s", err_msg(e));
        if (err_code(e) == SECRETS_E_HOST) {
                /* The operator hears of it too (the URL is the agent's: escaped). */
                char msg[1400];
                snprintf(msg, sizeof(msg), "http: call %llu: %s (%.400s)", (unsigned long long)id, err_msg(e), url);
                broker_sink_note(b, "chidori: ", msg);
                broker_journal_note(b, "secret", msg);
        }
        err_free(e);
        return -1;
}

static void on_done(void *arg, uint64_t id, const struct http_response *res, const struct err *herr)
{
        struct broker *b = arg;
        if (res) {
                broker_quota_add(b, QUOTA_INGRESS_BYTES, res->body_len);
                cJSON *v = b->net->http_response_to_json(res);
                /* A streamed body: the head now, the body through http.read. */
                if (v && res->stream && !cJSON_AddNumberToObject(v, "stream", (double)id)) {
                        cJSON_Delete(v);
                        v = NULL;
                }
                if (v)
                        broker_complete(b, (int64_t)id, v, NULL);
                else
                        broker_complete(b, (int64_t)id, NULL, broker_error_obj("Error", "http: out of memory", "internal"));
                return;
        }
        if (herr && herr->code == HTTP_E_LIMIT) {
                char text[256];
                broker_limit_text(b, LIMIT_HTTP, text, sizeof(text));
                broker_limit_report(b, LIMIT_HTTP, NULL);
                broker_complete(b, (int64_t)id, NULL, broker_error_obj("Error", text, "ELIMIT"));
                return;
        }
        broker_complete(b, (int64_t)id, NULL,
                        broker_error_obj("Error", herr && herr->msg ? herr->msg : "http: request failed",
                                         herr ? b->net->http_error_name(herr->code) : NULL));
}

/* The network library, on the first call that needs it. */
int broker_net_need(struct broker *b, struct err **err)
{
        if (!b->net && !(b->net = net_api(err)))
                return -1;
        return 0;
}

static int engine(struct broker *b, struct err **err)
{
        if (b->http)
                return 0;
        struct http_config hc = {
                .timeout_ms = b->cfg->http_timeout_ms,
                .max_response_bytes = b->cfg->http_max_response_bytes,
                .allow = b->cfg->http_allow,
                .on_refuse = on_refuse,
                .on_redirect = on_redirect,
                .on_header = on_header,
                .on_hop = on_hop,
                .hook_arg = b,
                .inflight = &b->http_inflight,
                .max_inflight = b->lim.max_queue,
        };
        return b->net->http_engine_new(&hc, &b->http, err);
}

int effect_http(struct broker *b, int64_t id, const cJSON *args, cJSON **ret, struct err **err)
{
        (void)ret;
        struct http_request *req = NULL;
        if (broker_net_need(b, err) < 0 || b->net->http_request_from_json(args, &req, err) < 0)
                return -1;
        /* Quotas: what is sent, taken before; what comes back, charged as it
         * arrives (a call is refused once the received bytes are used up). */
        uint64_t out = strlen(req->url) + req->body_len;
        for (size_t i = 0; i < req->nheaders; i++)
                out += strlen(req->headers[i].name) + strlen(req->headers[i].value) + 4;
        if (broker_quota_take(b, QUOTA_INGRESS_BYTES, 0, err) < 0 ||
            broker_quota_take(b, QUOTA_EGRESS_BYTES, out, err) < 0) {
                b->net->http_request_free(req);
                return -1;
        }
        int r = engine(b, err);
        if (r == 0)
                r = b->net->http_start(b->http, (uint64_t)id, req, on_done, b, err);
        b->net->http_request_free(req);
        return r < 0 ? -1 : 1;
}

/* A chunk of a streamed body as the answer of an http.read call:
 * {data_base64} (what arrived), with "done": true when it is the last, or
 * {done: true}, or the error it broke off with. */
static int chunk_answer(struct broker *b, struct http_chunk *c, cJSON **value, cJSON **error)
{
        *value = *error = NULL;
        if (c->err && err_code(c->err) == HTTP_E_LIMIT) {
                /* --max-queue, as for a whole body (on_done) */
                char text[256];
                broker_limit_text(b, LIMIT_HTTP, text, sizeof(text));
                broker_limit_report(b, LIMIT_HTTP, NULL);
                *error = broker_error_obj("Error", text, "ELIMIT");
                err_free(c->err);
                c->err = NULL;
                return 0;
        }
        if (c->err) {
                *error = broker_error_obj("Error", err_msg(c->err), b->net->http_error_name(err_code(c->err)));
                err_free(c->err);
                c->err = NULL;
                return 0;
        }
        broker_quota_add(b, QUOTA_INGRESS_BYTES, c->len);
        cJSON *v = cJSON_CreateObject();
        if (c->len) {
                char *b64 = base64_encode(c->data, c->len);
                if (!b64 || !cJSON_AddStringToObject(v, "data_base64", b64)) {
                        cJSON_Delete(v);
                        v = NULL;
                }
                free(b64);
        }
        if (v && c->done)
                cJSON_AddTrueToObject(v, "done");
        free(c->data);
        c->data = NULL;
        if (!v) {
                *error = broker_error_obj("Error", "http.read: out of memory", "internal");
                return 0;
        }
        *value = v;
        return 0;
}

static void on_read(void *arg, uint64_t read_id, struct http_chunk *c)
{
        struct broker *b = arg;
        cJSON *value, *error;
        chunk_answer(b, c, &value, &error);
        broker_complete(b, (int64_t)read_id, value, error);
}

static int need_stream(struct broker *b, const cJSON *args, const char *op, uint64_t *ret, struct err **err)
{
        const cJSON *s = cJSON_GetObjectItemCaseSensitive(args, "stream");
        int64_t sid;
        if (!cJSON_IsNumber(s) || !double_to_int64(s->valuedouble, &sid) || sid < 1)
                return err_set(err, 0, "%s: 'stream' must be the id of a streamed fetch", op);
        if (!b->net || !b->http)
                return err_set(err, 0, "%s: no open response body %.0f", op, s->valuedouble);
        *ret = (uint64_t)sid;
        return 0;
}

/* http.read {stream}: the next piece of a streamed response body, as it
 * arrives (answered later when nothing is buffered yet). */
int effect_http_read(struct broker *b, int64_t id, const cJSON *args, cJSON **ret, struct err **err)
{
        uint64_t stream;
        if (need_stream(b, args, "http.read", &stream, err) < 0)
                return -1;
        struct http_chunk c;
        int r = b->net->http_read(b->http, stream, (uint64_t)id, on_read, b, &c, err);
        if (r != 0)
                return r;
        if (c.err) {
                /* The body broke off: its code (timeout, too_big, ...) for the agent. */
                if (err_code(c.err) == HTTP_E_LIMIT) {
                        err_free(c.err);
                        return broker_limit_fail(b, LIMIT_HTTP, err);
                }
                *err = c.err;
                return -1;
        }
        cJSON *error = NULL;
        chunk_answer(b, &c, ret, &error);
        if (error) {
                cJSON_Delete(error);
                return err_set(err, ENOMEM, "http.read");
        }
        return 0;
}

/* http.close {stream}: the agent gives the body up (the stream cancelled):
 * the transfer is aborted; a read waiting on it is answered {done: true}. */
int effect_http_close(struct broker *b, int64_t id, const cJSON *args, cJSON **ret, struct err **err)
{
        (void)id;
        uint64_t stream;
        if (need_stream(b, args, "http.close", &stream, err) < 0)
                return -1;
        *ret = cJSON_CreateBool(b->net->http_close(b->http, stream));
        return 0;
}

/* Both engines (fetch, prompts) share the loop: the fetch engine's fds
 * first, then the prompt engine's; b->http_split remembers where. */
size_t broker_http_fds(struct broker *b, struct pollfd *fds, size_t max, int *timeout_ms)
{
        size_t k = 0;
        const struct net_api *n = b->net;
        if (b->http && n->http_pending(b->http))
                k = n->http_fds(b->http, fds, max, timeout_ms);
        b->http_split = k;
        if (b->llm_http && n->http_pending(b->llm_http))
                k += n->http_fds(b->llm_http, k <= max ? fds + k : NULL, k <= max ? max - k : 0, timeout_ms);
        return k;
}

int broker_http_perform(struct broker *b, const struct pollfd *fds, size_t n, struct err **err)
{
        size_t split = fds ? b->http_split : 0;
        const struct net_api *a = b->net;
        if (b->http && a->http_pending(b->http) && a->http_perform(b->http, fds, fds ? split : 0, err) < 0)
                return -1;
        if (b->llm_http && a->http_pending(b->llm_http) &&
            a->http_perform(b->llm_http, fds ? fds + split : NULL, fds ? n - split : 0, err) < 0)
                return -1;
        return 0;
}

/* call.cancel of a fetch or a prompt: the transfer leaves the multi
 * handle and its connection is closed; the session answers the call. */
void broker_http_cancel(struct broker *b, int64_t id)
{
        if (!b->net)
                return;
        if (!b->net->http_cancel(b->http, (uint64_t)id))
                b->net->http_cancel(b->llm_http, (uint64_t)id);
}

void broker_http_free(struct broker *b)
{
        if (!b->net)
                return;
        b->net->http_engine_free(b->http);
        b->http = NULL;
        b->net->http_engine_free(b->llm_http);
        b->llm_http = NULL;
        b->net->ssrf_allow_free(b->llm_allow);
        b->llm_allow = NULL;
}
