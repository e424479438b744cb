/* effects/net/llm.c — OpenAI-compatible chat completions: configuration, the
 * request for one prompt, the value from one answer.  See effects/net/llm.h. */
#define _GNU_SOURCE
#include "effects/net/llm.h"

#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/cleanup.h"
#include "effects/net/http.h"
#include "effects/net/ssrf.h"

#define NO_PROVIDER "prompt: no model provider configured: set CHIDORI_LLM_BASE_URL and CHIDORI_LLM_API_KEY"
#define REDACTED "[redacted]"
#define PROVIDER_MSG_MAX 300
#define KEY_RUN_MIN 8  /* a run of the key this long in provider text is masked */

/* ---- redaction ---- */

/* s with every run of at least `minrun` bytes that also occurs in `key`
 * replaced by REDACTED (minrun >= strlen(key): whole occurrences only, in
 * linear time).  NULL on OOM. */
static char *redact(const char *s, size_t n, const char *key, size_t minrun)
{
        size_t kl = key ? strlen(key) : 0;
        if (minrun > kl)
                minrun = kl;
        _cleanup_free_ bool *mark = calloc(n + 1, sizeof(*mark));
        if (!mark)
                return NULL;
        if (kl > 0 && minrun == kl) {
                for (const char *p = s; (p = memmem(p, n - (size_t)(p - s), key, kl)) != NULL; p += kl)
                        for (size_t k = 0; k < kl; k++)
                                mark[(size_t)(p - s) + k] = true;
        } else if (kl > 0) {
                for (size_t i = 0; i < n; i++)
                        for (size_t j = 0; j < kl; j++) {
                                size_t l = 0;
                                while (i + l < n && j + l < kl && s[i + l] == key[j + l])
                                        l++;
                                if (l >= minrun)
                                        for (size_t k = 0; k < l; k++)
                                                mark[i + k] = true;
                        }
        }
        size_t runs = 0;
        for (size_t i = 0; i < n; i++)
                runs += mark[i] && (i == 0 || !mark[i - 1]);
        char *out = malloc(n + runs * sizeof(REDACTED) + 1);
        if (!out)
                return NULL;
        size_t o = 0;
        for (size_t i = 0; i < n; i++) {
                if (!mark[i]) {
                        out[o++] = s[i];
                } else if (i == 0 || !mark[i - 1]) {
                        memcpy(out + o, REDACTED, sizeof(REDACTED) - 1);
                        o += sizeof(REDACTED) - 1;
                }
        }
        out[o] = '\0';
        return out;
}

/* Provider text fit for a message: key runs masked, control bytes as '?',
 * the first line only, at most PROVIDER_MSG_MAX bytes (not cutting a UTF-8
 * sequence).  Never NULL ("" on OOM). */
static void provider_text(const char *s, size_t n, const char *key, char *out, size_t outlen)
{
        out[0] = '\0';
        const char *nl = memchr(s, '\n', n);
        if (nl)
                n = (size_t)(nl - s);
        if (n > 0 && s[n - 1] == '\r')
                n--;
        _cleanup_free_ char *r = redact(s, n, key, KEY_RUN_MIN);
        if (!r)
                return;
        size_t len = strlen(r), max = outlen - 1 < PROVIDER_MSG_MAX ? outlen - 1 : PROVIDER_MSG_MAX, o = 0;
        for (; o < len && o < max; o++)
                out[o] = ((unsigned char)r[o] < 0x20 || r[o] == 0x7f) ? '?' : r[o];
        if (o < len && ((unsigned char)r[o] & 0xc0) == 0x80) {
                while (o > 0 && ((unsigned char)r[o - 1] & 0xc0) == 0x80)
                        o--;
                if (o > 0)
                        o--;
        }
        while (o > 0 && out[o - 1] == ' ')
                o--;
        out[o] = '\0';
}

/* ---- configuration ---- */

static bool is_token_text(const char *s, size_t max)
{
        size_t n = strlen(s);
        if (n == 0 || n > max)
                return false;
        for (; *s; s++)
                if ((unsigned char)*s <= 0x20 || (unsigned char)*s >= 0x7f)
                        return false;
        return true;
}

/* Host and port of an http(s) URL without credentials, query or fragment;
 * -1 (no err: the caller words it) otherwise. */
static int url_host_port(const char *url, char **ret_host, char **ret_port)
{
        CURLU *u = curl_url();
        if (!u)
                return -1;
        char *scheme = NULL, *host = NULL, *port = NULL, *user = NULL, *pass = NULL, *query = NULL, *frag = NULL;
        int r = -1;
        if (curl_url_set(u, CURLUPART_URL, url, CURLU_NON_SUPPORT_SCHEME) != CURLUE_OK)
                goto out;
        if (curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK ||
            (strcasecmp(scheme, "http") != 0 && strcasecmp(scheme, "https") != 0))
                goto out;
        if (curl_url_get(u, CURLUPART_USER, &user, 0) == CURLUE_OK ||
            curl_url_get(u, CURLUPART_PASSWORD, &pass, 0) == CURLUE_OK ||
            curl_url_get(u, CURLUPART_QUERY, &query, 0) == CURLUE_OK ||
            curl_url_get(u, CURLUPART_FRAGMENT, &frag, 0) == CURLUE_OK)
                goto out;
        if (curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK || !host || !*host ||
            curl_url_get(u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT) != CURLUE_OK || !port)
                goto out;
        if (ret_host && !(*ret_host = strdup(host)))
                goto out;
        if (ret_port && !(*ret_port = strdup(port))) {
                if (ret_host)
                        free(*ret_host);
                goto out;
        }
        r = 0;
out:
        curl_free(scheme), curl_free(host), curl_free(port), curl_free(user), curl_free(pass), curl_free(query),
                curl_free(frag);
        curl_url_cleanup(u);
        return r;
}

void llm_config_clear(struct llm_config *cfg)
{
        if (!cfg)
                return;
        free(cfg->base_url);
        if (cfg->api_key) {
                explicit_bzero(cfg->api_key, strlen(cfg->api_key));
                free(cfg->api_key);
        }
        free(cfg->model);
        memset(cfg, 0, sizeof(*cfg));
}

int llm_config_from_env(llm_getenv_fn get, struct llm_config *ret, struct err **err)
{
        const char *url = get("CHIDORI_LLM_BASE_URL"), *key = get("CHIDORI_LLM_API_KEY");
        const char *model = get("CHIDORI_LLM_MODEL");
        if (!url || !*url || !key || !*key)
                return err_setc(err, LLM_E_CONFIG, 0, NO_PROVIDER);
        if (!is_token_text(key, 4096))
                return err_setc(err, LLM_E_CONFIG, 0,
                                "prompt: CHIDORI_LLM_API_KEY must be 1 to 4096 printable ASCII characters without "
                                "spaces");
        if (strlen(url) > 2048 || !is_token_text(url, 2048) || url_host_port(url, NULL, NULL) < 0) {
                _cleanup_free_ char *shown = redact(url, strlen(url), key, KEY_RUN_MIN);
                char clean[256];
                provider_text(shown ? shown : "", shown ? strlen(shown) : 0, NULL, clean, sizeof(clean));
                return err_setc(err, LLM_E_CONFIG, 0,
                                "prompt: CHIDORI_LLM_BASE_URL='%s' must be an http:// or https:// URL with a host "
                                "and no credentials, query or fragment (e.g. http://127.0.0.1:8080/v1)",
                                clean);
        }
        if (model && *model && !is_token_text(model, 256))
                return err_setc(err, LLM_E_CONFIG, 0,
                                "prompt: CHIDORI_LLM_MODEL must be 1 to 256 printable ASCII characters without spaces");
        struct llm_config c = {
                .base_url = strdup(url),
                .api_key = strdup(key),
                .model = strdup(model && *model ? model : LLM_DEFAULT_MODEL),
        };
        if (!c.base_url || !c.api_key || !c.model) {
                llm_config_clear(&c);
                return err_setc(err, LLM_E_INTERNAL, ENOMEM, "prompt");
        }
        size_t n = strlen(c.base_url);
        while (n > 0 && c.base_url[n - 1] == '/')
                c.base_url[--n] = '\0';
        *ret = c;
        return 0;
}

int llm_provider_allow(const struct llm_config *cfg, struct ssrf_allow **ret, struct err **err)
{
        _cleanup_free_ char *host = NULL, *port = NULL, *spec = NULL;
        if (!cfg || !cfg->base_url || url_host_port(cfg->base_url, &host, &port) < 0)
                return err_setc(err, LLM_E_CONFIG, 0, "prompt: the provider URL cannot be parsed");
        /* libcurl gives an IPv6 host in brackets, as the allowlist wants it */
        if (asprintf(&spec, "%s:%s", host, port) < 0)
                return err_setc(err, LLM_E_INTERNAL, ENOMEM, "prompt");
        if (ssrf_allow_parse(spec, ret, err) < 0)
                return err_wrap(err, "prompt: allow the provider");
        return 0;
}

/* ---- the request ---- */

static int opt_err(struct err **err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int opt_err(struct err **err, const char *fmt, ...)
{
        char msg[512];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        return err_setc(err, LLM_E_OPTIONS, 0, "prompt: %s", msg);
}

/* Key names from the agent, shown safely. */
static void clean_key(const char *k, char *out, size_t outlen)
{
        size_t o = 0;
        for (; *k && o + 1 < outlen && o < 64; k++)
                out[o++] = ((unsigned char)*k < 0x20 || (unsigned char)*k >= 0x7f) ? '?' : *k;
        out[o] = '\0';
}

static int add_message(cJSON *msgs, const char *role, const char *content)
{
        cJSON *m = cJSON_CreateObject();
        if (!m || !cJSON_AddItemToArray(msgs, m) || !cJSON_AddStringToObject(m, "role", role) ||
            !cJSON_AddStringToObject(m, "content", content))
                return -1;
        return 0;
}

static int check_messages(const cJSON *v, struct err **err)
{
        if (!cJSON_IsArray(v))
                return opt_err(err, "options.messages: must be an array of {role, content}");
        int n = cJSON_GetArraySize(v);
        if (n > LLM_MAX_MESSAGES)
                return opt_err(err, "options.messages: more than %d messages", LLM_MAX_MESSAGES);
        int i = 0;
        for (const cJSON *m = v->child; m; m = m->next, i++) {
                if (!cJSON_IsObject(m))
                        return opt_err(err, "options.messages[%d]: must be an object {role, content}", i);
                for (const cJSON *k = m->child; k; k = k->next)
                        if (strcmp(k->string, "role") != 0 && strcmp(k->string, "content") != 0) {
                                char ck[80];
                                clean_key(k->string, ck, sizeof(ck));
                                return opt_err(err, "options.messages[%d].%s: unknown key (expected role, content)",
                                               i, ck);
                        }
                const cJSON *role = cJSON_GetObjectItemCaseSensitive(m, "role");
                const cJSON *content = cJSON_GetObjectItemCaseSensitive(m, "content");
                if (!cJSON_IsString(role) || (strcmp(role->valuestring, "system") != 0 &&
                                              strcmp(role->valuestring, "user") != 0 &&
                                              strcmp(role->valuestring, "assistant") != 0))
                        return opt_err(err, "options.messages[%d].role: must be \"system\", \"user\" or \"assistant\"",
                                       i);
                if (!cJSON_IsString(content))
                        return opt_err(err, "options.messages[%d].content: must be a string", i);
        }
        return 0;
}

/* Validate the options; borrowed pointers into `options` come back. */
struct opts {
        const char *system, *model;
        const cJSON *temperature, *max_tokens, *messages;
};

static int read_options(const cJSON *options, struct opts *o, struct err **err)
{
        memset(o, 0, sizeof(*o));
        if (!options || cJSON_IsNull(options))
                return 0;
        if (!cJSON_IsObject(options))
                return opt_err(err, "options must be an object");
        for (const cJSON *k = options->child; k; k = k->next) {
                const char *name = k->string;
                if (strcmp(name, "system") == 0) {
                        if (!cJSON_IsString(k))
                                return opt_err(err, "options.system: must be a string");
                        o->system = k->valuestring;
                } else if (strcmp(name, "model") == 0) {
                        if (!cJSON_IsString(k) || !is_token_text(k->valuestring, 256))
                                return opt_err(err, "options.model: must be a model name (1 to 256 printable ASCII "
                                                    "characters without spaces)");
                        o->model = k->valuestring;
                } else if (strcmp(name, "temperature") == 0) {
                        if (!cJSON_IsNumber(k) || !(k->valuedouble >= 0 && k->valuedouble <= 2))
                                return opt_err(err, "options.temperature: must be a number from 0 to 2");
                        o->temperature = k;
                } else if (strcmp(name, "max_tokens") == 0) {
                        if (!cJSON_IsNumber(k) || !(k->valuedouble >= 1 && k->valuedouble <= LLM_MAX_TOKENS_LIMIT) ||
                            (double)(long)k->valuedouble != k->valuedouble)
                                return opt_err(err, "options.max_tokens: must be an integer from 1 to %d",
                                               LLM_MAX_TOKENS_LIMIT);
                        o->max_tokens = k;
                } else if (strcmp(name, "messages") == 0) {
                        if (check_messages(k, err) < 0)
                                return -1;
                        o->messages = k;
                } else {
                        char ck[80];
                        clean_key(name, ck, sizeof(ck));
                        return opt_err(err,
                                       "options.%s: unknown option (expected system, model, temperature, max_tokens, "
                                       "messages)", ck);
                }
        }
        return 0;
}

static cJSON *request_body(const struct llm_config *cfg, const char *text, const struct opts *o)
{
        cJSON *body = cJSON_CreateObject(), *msgs = NULL;
        if (!body || !cJSON_AddStringToObject(body, "model", o->model ? o->model : cfg->model) ||
            !(msgs = cJSON_AddArrayToObject(body, "messages")))
                goto fail;
        if (o->system && add_message(msgs, "system", o->system) < 0)
                goto fail;
        for (const cJSON *m = o->messages ? o->messages->child : NULL; m; m = m->next)
                if (add_message(msgs, cJSON_GetObjectItemCaseSensitive(m, "role")->valuestring,
                                cJSON_GetObjectItemCaseSensitive(m, "content")->valuestring) < 0)
                        goto fail;
        if (add_message(msgs, "user", text) < 0)
                goto fail;
        if (o->temperature && !cJSON_AddNumberToObject(body, "temperature", o->temperature->valuedouble))
                goto fail;
        if (o->max_tokens && !cJSON_AddNumberToObject(body, "max_tokens", o->max_tokens->valuedouble))
                goto fail;
        return body;
fail:
        cJSON_Delete(body);
        return NULL;
}

int llm_build_request(const struct llm_config *cfg, const char *text, const struct cJSON *options,
                      struct http_request **ret, struct err **err)
{
        if (!cfg || !cfg->base_url || !cfg->api_key)
                return err_setc(err, LLM_E_CONFIG, 0, NO_PROVIDER);
        if (!text)
                return opt_err(err, "the text must be a string");
        struct opts o;
        if (read_options(options, &o, err) < 0)
                return -1;
        cJSON *body = request_body(cfg, text, &o);
        char *json = body ? cJSON_PrintUnformatted(body) : NULL;
        cJSON_Delete(body);
        struct http_request *req = calloc(1, sizeof(*req));
        struct http_header *h = calloc(3, sizeof(*h));
        if (!json || !req || !h)
                goto oom;
        req->headers = h;
        req->nheaders = 3;
        req->body = (unsigned char *)json;
        req->body_len = strlen(json);
        json = NULL;
        req->method = strdup("POST");
        req->redirect = HTTP_REDIRECT_ERROR;
        if (asprintf(&req->url, "%s/chat/completions", cfg->base_url) < 0)
                req->url = NULL;
        h[0].name = strdup("Authorization");
        if (asprintf(&h[0].value, "Bearer %s", cfg->api_key) < 0)
                h[0].value = NULL;
        h[1].name = strdup("Content-Type");
        h[1].value = strdup("application/json");
        h[2].name = strdup("Accept");
        h[2].value = strdup("application/json");
        if (!req->method || !req->url || !h[0].name || !h[0].value || !h[1].name || !h[1].value || !h[2].name ||
            !h[2].value)
                goto oom;
        *ret = req;
        return 0;
oom:
        cJSON_free(json);
        if (req)
                http_request_free(req);
        else
                free(h);
        return err_setc(err, LLM_E_INTERNAL, ENOMEM, "prompt: build the request");
}

/* ---- the answer ---- */

/* The provider's message in an error body: {"error": {"message": s}},
 * {"error": s} or {"message": s}; NULL if none. */
static const char *error_message(const cJSON *doc)
{
        const cJSON *e = cJSON_GetObjectItemCaseSensitive(doc, "error");
        const cJSON *m = cJSON_GetObjectItemCaseSensitive(e, "message");
        if (cJSON_IsString(m))
                return m->valuestring;
        if (cJSON_IsString(e))
                return e->valuestring;
        m = cJSON_GetObjectItemCaseSensitive(doc, "message");
        return cJSON_IsString(m) ? m->valuestring : NULL;
}

static int provider_error(const struct llm_config *cfg, const struct http_response *res, struct err **err)
{
        char status[96], msg[PROVIDER_MSG_MAX + 32] = "";
        char reason[64] = "";
        if (res->status_text && *res->status_text)
                provider_text(res->status_text, strlen(res->status_text), cfg->api_key, reason, sizeof(reason));
        snprintf(status, sizeof(status), "%ld%s%s", res->status, reason[0] ? " " : "", reason);
        cJSON *doc = res->body_len ? cJSON_ParseWithLength((const char *)res->body, res->body_len) : NULL;
        const char *m = doc ? error_message(doc) : NULL;
        if (m)
                provider_text(m, strlen(m), cfg->api_key, msg, sizeof(msg));
        else if (!doc && res->body_len && !memchr(res->body, '\0', res->body_len))
                provider_text((const char *)res->body, res->body_len, cfg->api_key, msg, sizeof(msg));
        cJSON_Delete(doc);
        if (msg[0])
                return err_setc(err, LLM_E_PROVIDER, 0, "prompt: the model provider answered %s: %s", status, msg);
        return err_setc(err, LLM_E_PROVIDER, 0, "prompt: the model provider answered %s", status);
}

/* A string from the provider for the value, the key masked; NULL on OOM. */
static cJSON *provider_string(const struct llm_config *cfg, const char *s)
{
        _cleanup_free_ char *r = redact(s, strlen(s), cfg->api_key, (size_t)-1);
        return r ? cJSON_CreateString(r) : NULL;
}

/* message.content: a string, or (some providers) an array of parts whose
 * "text" members are joined.  NULL when there is no text at all. */
static char *content_text(const cJSON *content)
{
        if (cJSON_IsString(content))
                return strdup(content->valuestring);
        if (!cJSON_IsArray(content))
                return NULL;
        size_t len = 0;
        bool any = false;
        for (const cJSON *p = content->child; p; p = p->next) {
                const cJSON *t = cJSON_GetObjectItemCaseSensitive(p, "text");
                if (cJSON_IsString(t))
                        len += strlen(t->valuestring), any = true;
        }
        char *out = any ? malloc(len + 1) : NULL;
        if (!out)
                return NULL;
        size_t o = 0;
        for (const cJSON *p = content->child; p; p = p->next) {
                const cJSON *t = cJSON_GetObjectItemCaseSensitive(p, "text");
                if (cJSON_IsString(t)) {
                        size_t l = strlen(t->valuestring);
                        memcpy(out + o, t->valuestring, l);
                        o += l;
                }
        }
        out[o] = '\0';
        return out;
}

static cJSON *number_or_null(const cJSON *v)
{
        return cJSON_IsNumber(v) ? cJSON_CreateNumber(v->valuedouble) : cJSON_CreateNull();
}

static cJSON *string_or_null(const struct llm_config *cfg, const cJSON *v)
{
        return cJSON_IsString(v) ? provider_string(cfg, v->valuestring) : cJSON_CreateNull();
}

int llm_parse_response(const struct llm_config *cfg, const struct http_response *res, struct cJSON **ret,
                       struct err **err)
{
        if (res->status < 200 || res->status > 299)
                return provider_error(cfg, res, err);
        cJSON *doc = res->body_len ? cJSON_ParseWithLength((const char *)res->body, res->body_len) : NULL;
        if (!cJSON_IsObject(doc)) {
                cJSON_Delete(doc);
                return err_setc(err, LLM_E_RESPONSE, 0, "prompt: the model provider's answer (status %ld) is not a "
                                "JSON object", res->status);
        }
        const cJSON *choices = cJSON_GetObjectItemCaseSensitive(doc, "choices");
        const cJSON *first = cJSON_IsArray(choices) ? choices->child : NULL;
        const cJSON *message = cJSON_GetObjectItemCaseSensitive(first, "message");
        _cleanup_free_ char *text = content_text(cJSON_GetObjectItemCaseSensitive(message, "content"));
        if (!text) {
                const cJSON *refusal = cJSON_GetObjectItemCaseSensitive(message, "refusal");
                char why[PROVIDER_MSG_MAX + 32] = "";
                if (cJSON_IsString(refusal))
                        provider_text(refusal->valuestring, strlen(refusal->valuestring), cfg->api_key, why,
                                      sizeof(why));
                cJSON_Delete(doc);
                if (why[0])
                        return err_setc(err, LLM_E_RESPONSE, 0, "prompt: the model refused: %s", why);
                return err_setc(err, LLM_E_RESPONSE, 0,
                                "prompt: the model provider's answer has no choices[0].message.content text");
        }
        const cJSON *usage = cJSON_GetObjectItemCaseSensitive(doc, "usage");
        cJSON *v = cJSON_CreateObject(), *u = NULL;
        bool ok = v && cJSON_AddItemToObject(v, "text", provider_string(cfg, text)) &&
                  cJSON_AddItemToObject(v, "model", string_or_null(cfg, cJSON_GetObjectItemCaseSensitive(doc, "model"))) &&
                  cJSON_AddItemToObject(v, "finish_reason",
                                        string_or_null(cfg, cJSON_GetObjectItemCaseSensitive(first, "finish_reason"))) &&
                  (u = cJSON_AddObjectToObject(v, "usage")) != NULL &&
                  cJSON_AddItemToObject(u, "prompt_tokens",
                                        number_or_null(cJSON_GetObjectItemCaseSensitive(usage, "prompt_tokens"))) &&
                  cJSON_AddItemToObject(u, "completion_tokens",
                                        number_or_null(cJSON_GetObjectItemCaseSensitive(usage, "completion_tokens"))) &&
                  cJSON_AddItemToObject(u, "total_tokens",
                                        number_or_null(cJSON_GetObjectItemCaseSensitive(usage, "total_tokens")));
        cJSON_Delete(doc);
        if (!ok) {
                cJSON_Delete(v);
                return err_setc(err, LLM_E_INTERNAL, ENOMEM, "prompt: read the answer");
        }
        *ret = v;
        return 0;
}
