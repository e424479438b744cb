/* broker/effects-http.c — the `http` effect (fetch in the box): libcurl's
 * multi interface inside the broker's poll loop, behind the SSRF guard
 * (broker/http.c, broker/ssrf.c).
 *
 * The policy gate (`http`) has passed for the first URL when effect_http
 * runs; every redirect hop is checked again here (on_redirect), and every
 * address the guard refuses is printed and journaled (on_refuse).  A call
 * is answered when its transfer completes, so several fetches are in flight
 * at once and their answers arrive in completion order; the journal keeps
 * that order and replay delivers in it.
 */
#define _GNU_SOURCE
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/broker-internal.h"
#include "broker/http.h"

static void on_refuse(void *arg, uint64_t id, const char *url, const char *addr, const char *why)
{
        struct broker *b = arg;
        char msg[1024];
        snprintf(msg, sizeof(msg),
                 "http: refused %s for call %llu (%.400s): %s — not public (SSRF guard); allow it with --allow-host",
                 addr, (unsigned long long)id, url, why);
        fprintf(stderr, "chidori: %s\n", msg);
        fflush(stderr);
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
        bool ok = broker_gate(b, "http", args, msg, sizeof(msg));
        cJSON_Delete(args);
        if (!ok)
                return err_set(err, 0, "%s (redirect to %.400s)", msg, url);
        return 0;
}

static void on_done(void *arg, uint64_t id, const struct http_response *res, const struct err *herr)
{
        struct broker *b = arg;
        if (res) {
                cJSON *v = http_response_to_json(res);
                if (v)
                        broker_complete(b, (int64_t)id, v, NULL);
                else
                        broker_complete(b, (int64_t)id, NULL, broker_error_obj("Error", "http: out of memory", "internal"));
                return;
        }
        broker_complete(b, (int64_t)id, NULL,
                        broker_error_obj("Error", herr && herr->msg ? herr->msg : "http: request failed",
                                         herr ? http_error_name(herr->code) : NULL));
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
                .hook_arg = b,
        };
        return http_engine_new(&hc, &b->http, err);
}

int effect_http(struct broker *b, int64_t id, const cJSON *args, cJSON **ret, struct err **err)
{
        (void)ret;
        struct http_request *req = NULL;
        if (http_request_from_json(args, &req, err) < 0)
                return -1;
        int r = engine(b, err);
        if (r == 0)
                r = http_start(b->http, (uint64_t)id, req, on_done, b, err);
        http_request_free(req);
        return r < 0 ? -1 : 1;
}

size_t broker_http_fds(struct broker *b, struct pollfd *fds, size_t max, int *timeout_ms)
{
        if (!b->http || http_pending(b->http) == 0)
                return 0;
        return http_fds(b->http, fds, max, timeout_ms);
}

int broker_http_perform(struct broker *b, const struct pollfd *fds, size_t n, struct err **err)
{
        if (!b->http || http_pending(b->http) == 0)
                return 0;
        return http_perform(b->http, fds, n, err);
}

void broker_http_free(struct broker *b)
{
        http_engine_free(b->http);
        b->http = NULL;
}
