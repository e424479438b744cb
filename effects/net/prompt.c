/* effects/net/prompt.c — the `prompt` effect: one chat completion,
 * performed by the parent (effects/net/llm.c builds the request and reads
 * the provider's answer).
 *
 * Its own http engine, whose allowlist holds the provider only: a model
 * server on loopback is reachable for prompts without opening loopback to
 * the agent's fetch().  The key is in the request header, never in the
 * args, the value or the journal.  The engine runs in the session's loop beside
 * fetch's (effects/net/fetch.c, broker_http_fds).
 */
#define _GNU_SOURCE
#include <cjson/cJSON.h>
#include <stdio.h>

#include "effects/net/net.h"
#include "runtime/runtime-internal.h"

const char *effect_prompt_code(int code)
{
        switch (code) {
        case LLM_E_CONFIG: return "no_provider";
        case LLM_E_OPTIONS: return "options";
        case LLM_E_PROVIDER: return "provider";
        case LLM_E_RESPONSE: return "response";
        default: return NULL;
        }
}

static void on_prompt_done(void *arg, uint64_t id, const struct http_response *res, const struct err *herr)
{
        struct broker *b = arg;
        if (!res) {
                char msg[1024];
                snprintf(msg, sizeof(msg), "prompt: %s", herr && herr->msg ? herr->msg : "request failed");
                broker_complete(b, (int64_t)id, NULL,
                                broker_error_obj("Error", msg, herr ? b->net->http_error_name(herr->code) : NULL));
                return;
        }
        cJSON *v = NULL;
        struct err *e = NULL;
        if (b->net->llm_parse_response(b->cfg->llm, res, &v, &e) < 0) {
                broker_complete(b, (int64_t)id, NULL,
                                broker_error_obj("Error", err_msg(e), effect_prompt_code(err_code(e))));
                err_free(e);
                return;
        }
        /* The provider's own figure (usage.total_tokens), when it gives one. */
        const cJSON *t = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(v, "usage"), "total_tokens");
        if (cJSON_IsNumber(t) && t->valuedouble > 0 && t->valuedouble < 9007199254740992.0)
                broker_quota_add(b, QUOTA_LLM_TOKENS, (uint64_t)t->valuedouble);
        broker_complete(b, (int64_t)id, v, NULL);
}

int effect_prompt(struct broker *b, int64_t id, const cJSON *args, cJSON **ret, struct err **err)
{
        (void)ret;
        const char *text = NULL;
        if (broker_need_str(args, "prompt", "text", &text, err) < 0)
                return -1;
        if (!b->cfg->llm)
                return err_setc(err, LLM_E_CONFIG, 0,
                                "prompt: no model provider configured: set CHIDORI_LLM_BASE_URL and CHIDORI_LLM_API_KEY");
        if (broker_quota_take(b, QUOTA_LLM_TOKENS, 0, err) < 0)
                return -1;
        const cJSON *options = cJSON_GetObjectItemCaseSensitive(args, "options");
        struct http_request *req = NULL;
        if (broker_net_need(b, err) < 0 ||
            b->net->llm_build_request(b->cfg->llm, text, cJSON_IsNull(options) ? NULL : options, &req, err) < 0)
                return -1;
        int r = 0;
        if (!b->llm_http) {
                r = b->net->llm_provider_allow(b->cfg->llm, &b->llm_allow, err);
                struct http_config hc = { .timeout_ms = LLM_TIMEOUT_MS, .allow = b->llm_allow,
                                          .inflight = &b->http_inflight, .max_inflight = b->lim.max_queue };
                if (r == 0)
                        r = b->net->http_engine_new(&hc, &b->llm_http, err);
        }
        if (r == 0)
                r = b->net->http_start(b->llm_http, (uint64_t)id, req, on_prompt_done, b, err);
        b->net->http_request_free(req);
        return r < 0 ? -1 : 1;
}
