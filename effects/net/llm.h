/* effects/net/llm.h — chidori.prompt(text, options): one chat completion from an
 * OpenAI-compatible provider, shaped here and performed by the http engine
 * (effects/net/http.h).  Pure: no I/O, no globals; the caller supplies getenv.
 *
 * Flow in the broker:
 *
 *      llm_config_from_env(getenv, &cfg, &err);             // once, at start
 *      llm_provider_allow(&cfg, &allow, &err);               // the provider's host only
 *      ... a call {op:"prompt", args:{text, options?}}:
 *      llm_build_request(&cfg, text, options, &req, &err);   // refusal = error reply
 *      http_start(llm_engine, id, req, on_done, ...);         // req copied; free it
 *      ... on_done(res): llm_parse_response(&cfg, res, &value, &err)
 *
 * The API key lives only in the config and in the Authorization header of
 * the request built here (which nobody journals).  It never appears in an
 * error message or a value returned by this module: messages never quote
 * it, and text that came back from the provider (error messages, the
 * answer) has every occurrence of the key replaced by "[redacted]" — in
 * provider error messages also any run of 8 or more of its characters.
 *
 * frame shape:
 *   args:  {"text": s, "options"?: {"system"?: s, "model"?: s, "temperature"?: n,
 *                                   "max_tokens"?: n, "messages"?: [{role, content}...]}}
 *   value: {"text": s, "model": s|null, "finish_reason": s|null,
 *           "usage": {"prompt_tokens": n|null, "completion_tokens": n|null,
 *                     "total_tokens": n|null}}
 */
#ifndef CHIDORI_EFFECTS_NET_LLM_H
#define CHIDORI_EFFECTS_NET_LLM_H

#include <stddef.h>

#include "common/err.h"

struct cJSON;
struct http_request;
struct http_response;
struct ssrf_allow;

#define LLM_DEFAULT_MODEL "gpt-4o-mini"
#define LLM_MAX_MESSAGES 1000
#define LLM_MAX_TOKENS_LIMIT 1000000
#define LLM_TIMEOUT_MS 120000L  /* suggested http timeout for an answer */

/* err_code() of the errors this module reports. */
enum llm_errc {
        LLM_E_OK = 0,
        LLM_E_CONFIG,    /* no provider configured, or a malformed variable */
        LLM_E_OPTIONS,   /* the call's text or options are invalid */
        LLM_E_PROVIDER,  /* the provider answered non-2xx; its error.message is quoted */
        LLM_E_RESPONSE,  /* a 2xx answer we cannot read */
        LLM_E_INTERNAL,  /* out of memory */
        LLM_E_MAX
};

struct llm_config {
        char *base_url;  /* "http(s)://host[:port][/path]", no trailing '/' */
        char *api_key;
        char *model;     /* CHIDORI_LLM_MODEL or LLM_DEFAULT_MODEL */
};

typedef const char *(*llm_getenv_fn)(const char *name);

/* Read CHIDORI_LLM_BASE_URL (e.g. http://127.0.0.1:8080/v1), CHIDORI_LLM_API_KEY
 * and CHIDORI_LLM_MODEL through `get` (NULL or "" = unset).  Without URL or
 * key: LLM_E_CONFIG "prompt: no model provider configured: set
 * CHIDORI_LLM_BASE_URL and CHIDORI_LLM_API_KEY".  The URL must be http or
 * https, with a host, without credentials, query or fragment; the key and
 * model must be printable ASCII without spaces.  On success *ret is filled
 * (free with llm_config_clear); on failure it is untouched. */
int llm_config_from_env(llm_getenv_fn get, struct llm_config *ret, struct err **err);
void llm_config_clear(struct llm_config *cfg);

/* An allowlist (effects/net/ssrf.h) holding the provider's host and port only, for
 * the http engine that performs prompts: a provider on loopback or the LAN
 * (a local model server) is then reachable for prompts without opening it
 * to the agent's own fetch(). */
int llm_provider_allow(const struct llm_config *cfg, struct ssrf_allow **ret, struct err **err);

/* The request for one prompt: POST {base_url}/chat/completions with
 * Authorization: Bearer <key>, Content-Type and Accept application/json, a
 * redirect failing the request, and the body
 *   {"model", "messages": [system?, ...options.messages, {"role":"user","content":text}],
 *    "temperature"?, "max_tokens"?}
 * `options` may be NULL; unknown keys, wrong types and out-of-range values
 * are LLM_E_OPTIONS errors naming the option ("prompt: options.temperature:
 * must be a number from 0 to 2").  *ret is freed with http_request_free. */
int llm_build_request(const struct llm_config *cfg, const char *text, const struct cJSON *options,
                      struct http_request **ret, struct err **err);

/* The value for a provider's answer (shape above).  Non-2xx: LLM_E_PROVIDER
 * "prompt: the model provider answered 401 Unauthorized: <error.message>"
 * (the message when the body is OpenAI-shaped JSON, else the body's first
 * line; cleaned, at most 300 bytes).  `cfg` is used only to redact its key.
 * *ret is freed with cJSON_Delete. */
int llm_parse_response(const struct llm_config *cfg, const struct http_response *res, struct cJSON **ret,
                       struct err **err);

#endif
