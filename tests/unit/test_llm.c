/* tests/unit/test_llm.c — effects/net/llm.c: configuration from the environment,
 * request shaping, answer reading, and that the API key never shows in an
 * error or a value.  The last test runs a real prompt through the http
 * engine against tests/servers/fake_http.py (skipped without python3). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <cjson/cJSON.h>
#include <cmocka.h>

#include "common/cleanup.h"
#include "common/err.h"
#include "common/util.h"
#include "effects/net/http.h"
#include "effects/net/llm.h"
#include "effects/net/ssrf.h"

#define KEY "sk-test-0123456789abcdefSECRET"

/* ---- a fake environment ---- */

static const char *env_url, *env_key, *env_model;

static const char *fake_getenv(const char *name)
{
        if (strcmp(name, "CHIDORI_LLM_BASE_URL") == 0)
                return env_url;
        if (strcmp(name, "CHIDORI_LLM_API_KEY") == 0)
                return env_key;
        if (strcmp(name, "CHIDORI_LLM_MODEL") == 0)
                return env_model;
        return NULL;
}

static void set_env(const char *url, const char *key, const char *model)
{
        env_url = url, env_key = key, env_model = model;
}

static struct llm_config config(void)
{
        struct llm_config c;
        struct err *err = NULL;
        set_env("http://127.0.0.1:8080/v1/", KEY, NULL);
        if (llm_config_from_env(fake_getenv, &c, &err) < 0)
                fail_msg("%s", err_msg(err));
        return c;
}

/* No 8-character run of the key anywhere in s. */
static void assert_no_key(const char *s)
{
        size_t kl = strlen(KEY);
        for (size_t j = 0; j + 8 <= kl; j++) {
                char run[9];
                memcpy(run, &KEY[j], 8);
                run[8] = '\0';
                if (strstr(s, run))
                        fail_msg("key material \"%s\" in: %s", run, s);
        }
}

static void config_fails(const char *url, const char *key, const char *model, const char *want)
{
        struct llm_config c = { 0 };
        struct err *err = NULL;
        set_env(url, key, model);
        assert_int_equal(llm_config_from_env(fake_getenv, &c, &err), -1);
        assert_null(c.base_url);
        if (strcmp(err_msg(err), want) != 0)
                fail_msg("got:  %s\nwant: %s", err_msg(err), want);
        assert_int_equal(err_code(err), LLM_E_CONFIG);
        if (key)
                assert_no_key(err_msg(err));
        err_free(err);
}

static struct http_response response(long status, const char *reason, const char *body)
{
        return (struct http_response){
                .status = status, .status_text = (char *)reason, .url = "http://x/",
                .body = (unsigned char *)body, .body_len = body ? strlen(body) : 0,
        };
}

static void response_fails(const struct llm_config *c, const struct http_response *r, int code, const char *want)
{
        cJSON *v = NULL;
        struct err *err = NULL;
        assert_int_equal(llm_parse_response(c, r, &v, &err), -1);
        assert_null(v);
        if (strcmp(err_msg(err), want) != 0)
                fail_msg("got:  %s\nwant: %s", err_msg(err), want);
        assert_int_equal(err_code(err), code);
        assert_no_key(err_msg(err));
        err_free(err);
}

static char *body_of(const struct http_request *r)
{
        char *s = malloc(r->body_len + 1);
        memcpy(s, r->body, r->body_len);
        s[r->body_len] = '\0';
        return s;
}

static void options_fail(const struct llm_config *c, const char *opts, const char *want)
{
        cJSON *o = cJSON_Parse(opts);
        assert_non_null(o);
        struct http_request *req = NULL;
        struct err *err = NULL;
        assert_int_equal(llm_build_request(c, "hi", o, &req, &err), -1);
        assert_null(req);
        if (strcmp(err_msg(err), want) != 0)
                fail_msg("for %s\n  got:  %s\n  want: %s", opts, err_msg(err), want);
        assert_int_equal(err_code(err), LLM_E_OPTIONS);
        err_free(err);
        cJSON_Delete(o);
}

/* ---- configuration ---- */

static void test_config_missing(void **state)
{
        (void)state;
        const char *want = "prompt: no model provider configured: set CHIDORI_LLM_BASE_URL and CHIDORI_LLM_API_KEY";
        config_fails(NULL, NULL, NULL, want);
        config_fails("http://127.0.0.1:8080/v1", NULL, NULL, want);
        config_fails(NULL, KEY, NULL, want);
        config_fails("", KEY, "m", want);
        config_fails("http://127.0.0.1:8080/v1", "", NULL, want);
}

static void test_config_ok(void **state)
{
        (void)state;
        struct llm_config c = config();
        assert_string_equal(c.base_url, "http://127.0.0.1:8080/v1");  /* trailing '/' dropped */
        assert_string_equal(c.api_key, KEY);
        assert_string_equal(c.model, "gpt-4o-mini");
        llm_config_clear(&c);
        assert_null(c.api_key);
        llm_config_clear(&c);  /* twice is fine */
        set_env("https://api.example.com", KEY, "my-model-1");
        assert_int_equal(llm_config_from_env(fake_getenv, &c, NULL), 0);
        assert_string_equal(c.base_url, "https://api.example.com");
        assert_string_equal(c.model, "my-model-1");
        llm_config_clear(&c);
        set_env("http://[::1]:9000/openai/v1///", KEY, "");
        assert_int_equal(llm_config_from_env(fake_getenv, &c, NULL), 0);
        assert_string_equal(c.base_url, "http://[::1]:9000/openai/v1");
        assert_string_equal(c.model, "gpt-4o-mini");
        llm_config_clear(&c);
}

static void test_config_bad_values(void **state)
{
        (void)state;
        config_fails("ftp://example.com/v1", KEY, NULL,
                     "prompt: CHIDORI_LLM_BASE_URL='ftp://example.com/v1' must be an http:// or https:// URL with a "
                     "host and no credentials, query or fragment (e.g. http://127.0.0.1:8080/v1)");
        config_fails("127.0.0.1:8080", KEY, NULL,
                     "prompt: CHIDORI_LLM_BASE_URL='127.0.0.1:8080' must be an http:// or https:// URL with a host "
                     "and no credentials, query or fragment (e.g. http://127.0.0.1:8080/v1)");
        config_fails("http://user:pw@example.com/v1", KEY, NULL,
                     "prompt: CHIDORI_LLM_BASE_URL='http://user:pw@example.com/v1' must be an http:// or https:// "
                     "URL with a host and no credentials, query or fragment (e.g. http://127.0.0.1:8080/v1)");
        /* the key pasted into the URL is not repeated in the message */
        config_fails("http://example.com/v1?key=" KEY, KEY, NULL,
                     "prompt: CHIDORI_LLM_BASE_URL='http://example.com/v1?key=[redacted]' must be an http:// or "
                     "https:// URL with a host and no credentials, query or fragment (e.g. http://127.0.0.1:8080/v1)");
        config_fails("http://example.com/v1", "sk with space", NULL,
                     "prompt: CHIDORI_LLM_API_KEY must be 1 to 4096 printable ASCII characters without spaces");
        config_fails("http://example.com/v1", KEY "\r\nX-Evil: 1", NULL,
                     "prompt: CHIDORI_LLM_API_KEY must be 1 to 4096 printable ASCII characters without spaces");
        config_fails("http://example.com/v1", KEY, "bad model",
                     "prompt: CHIDORI_LLM_MODEL must be 1 to 256 printable ASCII characters without spaces");
}

static void test_provider_allow(void **state)
{
        (void)state;
        struct llm_config c = config();
        struct ssrf_allow *a = NULL;
        assert_int_equal(llm_provider_allow(&c, &a, NULL), 0);
        assert_int_equal(ssrf_allow_count(a), 1);
        struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(8080) };
        inet_pton(AF_INET, "127.0.0.1", &sin.sin_addr);
        assert_true(ssrf_allow_match(a, "127.0.0.1", (struct sockaddr *)&sin));
        sin.sin_port = htons(8081);
        assert_false(ssrf_allow_match(a, "127.0.0.1", (struct sockaddr *)&sin));
        ssrf_allow_free(a);
        llm_config_clear(&c);
        /* a name, default https port */
        set_env("https://llm.internal/v1", KEY, NULL);
        assert_int_equal(llm_config_from_env(fake_getenv, &c, NULL), 0);
        assert_int_equal(llm_provider_allow(&c, &a, NULL), 0);
        sin.sin_port = htons(443);
        inet_pton(AF_INET, "10.1.2.3", &sin.sin_addr);
        assert_true(ssrf_allow_match(a, "llm.internal", (struct sockaddr *)&sin));
        assert_false(ssrf_allow_match(a, "other.internal", (struct sockaddr *)&sin));
        ssrf_allow_free(a);
        llm_config_clear(&c);
        /* IPv6 literal */
        set_env("http://[::1]:9000/v1", KEY, NULL);
        assert_int_equal(llm_config_from_env(fake_getenv, &c, NULL), 0);
        assert_int_equal(llm_provider_allow(&c, &a, NULL), 0);
        struct sockaddr_in6 s6 = { .sin6_family = AF_INET6, .sin6_port = htons(9000), .sin6_addr = IN6ADDR_LOOPBACK_INIT };
        assert_true(ssrf_allow_match(a, "::1", (struct sockaddr *)&s6));
        ssrf_allow_free(a);
        llm_config_clear(&c);
}

/* ---- the request ---- */

static void test_request_plain(void **state)
{
        (void)state;
        struct llm_config c = config();
        struct http_request *req = NULL;
        assert_int_equal(llm_build_request(&c, "Hello \"world\"\n", NULL, &req, NULL), 0);
        assert_string_equal(req->url, "http://127.0.0.1:8080/v1/chat/completions");
        assert_string_equal(req->method, "POST");
        assert_int_equal(req->redirect, HTTP_REDIRECT_ERROR);
        assert_int_equal(req->nheaders, 3);
        assert_string_equal(req->headers[0].name, "Authorization");
        assert_string_equal(req->headers[0].value, "Bearer " KEY);
        assert_string_equal(req->headers[1].name, "Content-Type");
        assert_string_equal(req->headers[1].value, "application/json");
        assert_string_equal(req->headers[2].name, "Accept");
        char *b = body_of(req);
        assert_string_equal(b, "{\"model\":\"gpt-4o-mini\",\"messages\":[{\"role\":\"user\",\"content\":"
                               "\"Hello \\\"world\\\"\\n\"}]}");
        assert_no_key(b);
        free(b);
        http_request_free(req);
        /* an empty options object and JSON null are the same as none */
        cJSON *o = cJSON_Parse("{}");
        assert_int_equal(llm_build_request(&c, "", o, &req, NULL), 0);
        http_request_free(req);
        cJSON_Delete(o);
        o = cJSON_CreateNull();
        assert_int_equal(llm_build_request(&c, "x", o, &req, NULL), 0);
        http_request_free(req);
        cJSON_Delete(o);
        llm_config_clear(&c);
}

static void test_request_options(void **state)
{
        (void)state;
        struct llm_config c = config();
        cJSON *o = cJSON_Parse("{\"system\": \"Be brief.\", \"model\": \"m-2\", \"temperature\": 0.5, \"max_tokens\": 64,"
                               " \"messages\": [{\"role\": \"user\", \"content\": \"2+2?\"},"
                               " {\"content\": \"4\", \"role\": \"assistant\"}]}");
        struct http_request *req = NULL;
        assert_int_equal(llm_build_request(&c, "and 3+3?", o, &req, NULL), 0);
        char *b = body_of(req);
        assert_string_equal(b, "{\"model\":\"m-2\",\"messages\":[{\"role\":\"system\",\"content\":\"Be brief.\"},"
                               "{\"role\":\"user\",\"content\":\"2+2?\"},{\"role\":\"assistant\",\"content\":\"4\"},"
                               "{\"role\":\"user\",\"content\":\"and 3+3?\"}],\"temperature\":0.5,\"max_tokens\":64}");
        free(b);
        http_request_free(req);
        cJSON_Delete(o);
        /* temperature 0 and 2 are the ends of the range */
        o = cJSON_Parse("{\"temperature\": 0}");
        assert_int_equal(llm_build_request(&c, "x", o, &req, NULL), 0);
        http_request_free(req);
        cJSON_Delete(o);
        o = cJSON_Parse("{\"temperature\": 2, \"max_tokens\": 1000000}");
        assert_int_equal(llm_build_request(&c, "x", o, &req, NULL), 0);
        http_request_free(req);
        cJSON_Delete(o);
        llm_config_clear(&c);
}

static void test_request_bad_options(void **state)
{
        (void)state;
        struct llm_config c = config();
        options_fail(&c, "[]", "prompt: options must be an object");
        options_fail(&c, "\"sys\"", "prompt: options must be an object");
        options_fail(&c, "{\"stream\": true}",
                     "prompt: options.stream: unknown option (expected system, model, temperature, max_tokens, "
                     "messages)");
        options_fail(&c, "{\"system\": 1}", "prompt: options.system: must be a string");
        options_fail(&c, "{\"model\": \"\"}",
                     "prompt: options.model: must be a model name (1 to 256 printable ASCII characters without "
                     "spaces)");
        options_fail(&c, "{\"model\": \"a b\"}",
                     "prompt: options.model: must be a model name (1 to 256 printable ASCII characters without "
                     "spaces)");
        options_fail(&c, "{\"temperature\": 2.5}", "prompt: options.temperature: must be a number from 0 to 2");
        options_fail(&c, "{\"temperature\": -0.1}", "prompt: options.temperature: must be a number from 0 to 2");
        options_fail(&c, "{\"temperature\": \"1\"}", "prompt: options.temperature: must be a number from 0 to 2");
        options_fail(&c, "{\"max_tokens\": 0}", "prompt: options.max_tokens: must be an integer from 1 to 1000000");
        options_fail(&c, "{\"max_tokens\": 1.5}", "prompt: options.max_tokens: must be an integer from 1 to 1000000");
        options_fail(&c, "{\"max_tokens\": 1000001}",
                     "prompt: options.max_tokens: must be an integer from 1 to 1000000");
        options_fail(&c, "{\"messages\": {}}", "prompt: options.messages: must be an array of {role, content}");
        options_fail(&c, "{\"messages\": [\"hi\"]}", "prompt: options.messages[0]: must be an object {role, content}");
        options_fail(&c, "{\"messages\": [{\"role\": \"user\", \"content\": \"a\"}, {\"role\": \"tool\", \"content\": \"b\"}]}",
                     "prompt: options.messages[1].role: must be \"system\", \"user\" or \"assistant\"");
        options_fail(&c, "{\"messages\": [{\"role\": \"user\", \"content\": 5}]}",
                     "prompt: options.messages[0].content: must be a string");
        options_fail(&c, "{\"messages\": [{\"role\": \"user\", \"content\": \"a\", \"name\": \"x\"}]}",
                     "prompt: options.messages[0].name: unknown key (expected role, content)");
        struct http_request *req = NULL;
        struct err *err = NULL;
        assert_int_equal(llm_build_request(&c, NULL, NULL, &req, &err), -1);
        assert_string_equal(err_msg(err), "prompt: the text must be a string");
        err_free(err);
        llm_config_clear(&c);
}

static void test_request_too_many_messages(void **state)
{
        (void)state;
        struct llm_config c = config();
        cJSON *o = cJSON_CreateObject(), *m = cJSON_AddArrayToObject(o, "messages");
        for (int i = 0; i <= LLM_MAX_MESSAGES; i++) {
                cJSON *x = cJSON_CreateObject();
                cJSON_AddStringToObject(x, "role", "user");
                cJSON_AddStringToObject(x, "content", "x");
                cJSON_AddItemToArray(m, x);
        }
        struct http_request *req = NULL;
        struct err *err = NULL;
        assert_int_equal(llm_build_request(&c, "x", o, &req, &err), -1);
        assert_string_equal(err_msg(err), "prompt: options.messages: more than 1000 messages");
        err_free(err);
        cJSON_Delete(o);
        llm_config_clear(&c);
}

/* ---- the answer ---- */

static void test_response_ok(void **state)
{
        (void)state;
        struct llm_config c = config();
        struct http_response r = response(200, "OK",
                "{\"id\":\"x\",\"model\":\"gpt-4o-mini-2024\",\"choices\":[{\"index\":0,\"message\":{\"role\":"
                "\"assistant\",\"content\":\"Hi there.\"},\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":"
                "9,\"completion_tokens\":3,\"total_tokens\":12}}");
        cJSON *v = NULL;
        assert_int_equal(llm_parse_response(&c, &r, &v, NULL), 0);
        char *s = cJSON_PrintUnformatted(v);
        assert_string_equal(s, "{\"text\":\"Hi there.\",\"model\":\"gpt-4o-mini-2024\",\"finish_reason\":\"stop\","
                               "\"usage\":{\"prompt_tokens\":9,\"completion_tokens\":3,\"total_tokens\":12}}");
        cJSON_free(s);
        cJSON_Delete(v);
        llm_config_clear(&c);
}

static void test_response_variants(void **state)
{
        (void)state;
        struct llm_config c = config();
        /* no usage, no model, content as parts, finish_reason missing */
        struct http_response r = response(200, "",
                "{\"choices\":[{\"message\":{\"content\":[{\"type\":\"text\",\"text\":\"a\"},{\"type\":\"image\"},"
                "{\"type\":\"text\",\"text\":\"b\"}]}}]}");
        cJSON *v = NULL;
        assert_int_equal(llm_parse_response(&c, &r, &v, NULL), 0);
        char *s = cJSON_PrintUnformatted(v);
        assert_string_equal(s, "{\"text\":\"ab\",\"model\":null,\"finish_reason\":null,\"usage\":{\"prompt_tokens\":null,"
                               "\"completion_tokens\":null,\"total_tokens\":null}}");
        cJSON_free(s);
        cJSON_Delete(v);
        /* an empty answer is still an answer */
        r = response(201, "Created", "{\"choices\":[{\"message\":{\"content\":\"\"},\"finish_reason\":\"length\"}]}");
        assert_int_equal(llm_parse_response(&c, &r, &v, NULL), 0);
        assert_string_equal(cJSON_GetObjectItem(v, "text")->valuestring, "");
        assert_string_equal(cJSON_GetObjectItem(v, "finish_reason")->valuestring, "length");
        cJSON_Delete(v);
        llm_config_clear(&c);
}

static void test_response_unreadable(void **state)
{
        (void)state;
        struct llm_config c = config();
        struct http_response r = response(200, "OK", "<html>hi</html>");
        response_fails(&c, &r, LLM_E_RESPONSE, "prompt: the model provider's answer (status 200) is not a JSON object");
        r = response(200, "OK", "");
        response_fails(&c, &r, LLM_E_RESPONSE, "prompt: the model provider's answer (status 200) is not a JSON object");
        r = response(200, "OK", "{\"choices\":[]}");
        response_fails(&c, &r, LLM_E_RESPONSE,
                       "prompt: the model provider's answer has no choices[0].message.content text");
        r = response(200, "OK", "{\"choices\":[{\"message\":{\"content\":null,\"tool_calls\":[]}}]}");
        response_fails(&c, &r, LLM_E_RESPONSE,
                       "prompt: the model provider's answer has no choices[0].message.content text");
        r = response(200, "OK", "{\"choices\":[{\"message\":{\"content\":null,\"refusal\":\"I can't help.\"}}]}");
        response_fails(&c, &r, LLM_E_RESPONSE, "prompt: the model refused: I can't help.");
        llm_config_clear(&c);
}

static void test_response_provider_errors(void **state)
{
        (void)state;
        struct llm_config c = config();
        struct http_response r = response(429, "Too Many Requests",
                "{\"error\":{\"message\":\"Rate limit reached for requests\",\"type\":\"requests\"}}");
        response_fails(&c, &r, LLM_E_PROVIDER,
                       "prompt: the model provider answered 429 Too Many Requests: Rate limit reached for requests");
        r = response(500, "", "{\"error\":\"boom\"}");
        response_fails(&c, &r, LLM_E_PROVIDER, "prompt: the model provider answered 500: boom");
        r = response(502, "Bad Gateway", "upstream died\r\nsecond line");
        response_fails(&c, &r, LLM_E_PROVIDER, "prompt: the model provider answered 502 Bad Gateway: upstream died");
        r = response(503, "Service Unavailable", NULL);
        response_fails(&c, &r, LLM_E_PROVIDER, "prompt: the model provider answered 503 Service Unavailable");
        r = response(404, "Not Found", "{\"detail\":\"nope\"}");
        response_fails(&c, &r, LLM_E_PROVIDER, "prompt: the model provider answered 404 Not Found");
        r = response(302, "Found", "");
        response_fails(&c, &r, LLM_E_PROVIDER, "prompt: the model provider answered 302 Found");
        /* a long message is cut at 300 bytes */
        char body[1200];
        char longmsg[700];
        memset(longmsg, 'm', 600);
        longmsg[600] = '\0';
        snprintf(body, sizeof(body), "{\"error\":{\"message\":\"%s\"}}", longmsg);
        r = response(400, "Bad Request", body);
        char want[512];
        snprintf(want, sizeof(want), "prompt: the model provider answered 400 Bad Request: %.300s", longmsg);
        response_fails(&c, &r, LLM_E_PROVIDER, want);
        llm_config_clear(&c);
}

static void test_key_never_leaks(void **state)
{
        (void)state;
        struct llm_config c = config();
        /* providers that quote the key back, whole or in part */
        struct http_response r = response(401, "Unauthorized",
                "{\"error\":{\"message\":\"Incorrect API key provided: " KEY ". You can find your key...\"}}");
        response_fails(&c, &r, LLM_E_PROVIDER,
                       "prompt: the model provider answered 401 Unauthorized: Incorrect API key provided: [redacted]. "
                       "You can find your key...");
        r = response(401, "Unauthorized", "{\"error\":{\"message\":\"Incorrect API key provided: sk-test-0123****CRET\"}}");
        response_fails(&c, &r, LLM_E_PROVIDER,
                       "prompt: the model provider answered 401 Unauthorized: Incorrect API key provided: "
                       "[redacted]****CRET");
        r = response(403, KEY, "bearer " KEY);
        response_fails(&c, &r, LLM_E_PROVIDER, "prompt: the model provider answered 403 [redacted]: bearer [redacted]");
        /* ... or in an answer */
        r = response(200, "OK", "{\"model\":\"" KEY "\",\"choices\":[{\"message\":{\"content\":\"the key is " KEY
                                "!\"},\"finish_reason\":\"" KEY "\"}]}");
        cJSON *v = NULL;
        assert_int_equal(llm_parse_response(&c, &r, &v, NULL), 0);
        char *s = cJSON_PrintUnformatted(v);
        assert_string_equal(s, "{\"text\":\"the key is [redacted]!\",\"model\":\"[redacted]\",\"finish_reason\":"
                               "\"[redacted]\",\"usage\":{\"prompt_tokens\":null,\"completion_tokens\":null,"
                               "\"total_tokens\":null}}");
        assert_no_key(s);
        cJSON_free(s);
        cJSON_Delete(v);
        /* option errors never carry it either */
        cJSON *o = cJSON_Parse("{\"" KEY "\": 1}");
        struct http_request *req = NULL;
        struct err *err = NULL;
        assert_int_equal(llm_build_request(&c, "x", o, &req, &err), -1);
        cJSON_Delete(o);
        err_free(err);
        llm_config_clear(&c);
}

/* ---- a real prompt through the http engine and the fake server ---- */

static pid_t start_fake(int *ret_port)
{
        if (access("tests/servers/fake_http.py", R_OK) < 0)
                return -1;
        int p[2];
        if (pipe2(p, O_CLOEXEC) < 0)
                return -1;
        posix_spawn_file_actions_t fa;
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_adddup2(&fa, p[1], 1);
        char *argv[] = { "python3", "tests/servers/fake_http.py", "--port", "0", NULL };
        extern char **environ;
        pid_t pid;
        int e = posix_spawnp(&pid, "python3", &fa, NULL, argv, environ);
        posix_spawn_file_actions_destroy(&fa);
        close(p[1]);
        if (e) {
                close(p[0]);
                return -1;
        }
        char line[32] = "";
        size_t n = 0;
        struct pollfd pf = { .fd = p[0], .events = POLLIN };
        while (n < sizeof(line) - 1 && poll(&pf, 1, 15000) > 0) {
                ssize_t r = read(p[0], line + n, 1);
                if (r <= 0 || line[n] == '\n')
                        break;
                n++;
        }
        line[n] = '\0';
        close(p[0]);
        *ret_port = (int)strtol(line, NULL, 10);
        if (*ret_port <= 0) {
                kill(pid, SIGKILL);
                waitpid(pid, NULL, 0);
                return -1;
        }
        return pid;
}

struct answer {
        bool done;
        cJSON *value;
        struct err *err;
        const struct llm_config *cfg;
};

static void on_http(void *arg, uint64_t id, const struct http_response *res, const struct err *herr)
{
        (void)id;
        struct answer *a = arg;
        a->done = true;
        if (herr)
                err_set(&a->err, 0, "%s", err_msg(herr));
        else
                llm_parse_response(a->cfg, res, &a->value, &a->err);
}

static void prompt(struct http_engine *e, const struct llm_config *c, const char *text, const char *opts,
                   struct answer *a)
{
        memset(a, 0, sizeof(*a));
        a->cfg = c;
        cJSON *o = opts ? cJSON_Parse(opts) : NULL;
        struct http_request *req = NULL;
        struct err *err = NULL;
        if (llm_build_request(c, text, o, &req, &err) < 0)
                fail_msg("%s", err_msg(err));
        cJSON_Delete(o);
        if (http_start(e, 1, req, on_http, a, &err) < 0)
                fail_msg("%s", err_msg(err));
        http_request_free(req);
        double until = mono_ms() + 15000;
        while (!a->done && mono_ms() < until) {
                struct pollfd p[16];
                int t = 100;
                size_t n = http_fds(e, p, 16, &t);
                poll(p, n, t < 0 || t > 100 ? 100 : t);
                http_perform(e, p, n, NULL);
        }
        assert_true(a->done);
}

static void test_fake_server_roundtrip(void **state)
{
        (void)state;
        int port = 0;
        pid_t srv = start_fake(&port);
        if (srv < 0) {
                fprintf(stderr, "python3 or tests/servers/fake_http.py missing\n");
                skip();
        }
        char url[64];
        snprintf(url, sizeof(url), "http://127.0.0.1:%d/v1", port);
        struct llm_config c;
        set_env(url, "test-key", NULL);
        assert_int_equal(llm_config_from_env(fake_getenv, &c, NULL), 0);
        struct ssrf_allow *allow = NULL;
        assert_int_equal(llm_provider_allow(&c, &allow, NULL), 0);
        struct http_config hc = { .allow = allow, .timeout_ms = 10000 };
        struct http_engine *e = NULL;
        assert_int_equal(http_engine_new(&hc, &e, NULL), 0);

        struct answer a;
        prompt(e, &c, "what is up?", "{\"model\": \"tiny\", \"system\": \"be kind\"}", &a);
        if (a.err)
                fail_msg("%s", err_msg(a.err));
        char *s = cJSON_PrintUnformatted(a.value);
        assert_string_equal(s, "{\"text\":\"echo: what is up?\",\"model\":\"tiny\",\"finish_reason\":\"stop\","
                               "\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":4,\"total_tokens\":9}}");
        cJSON_free(s);
        cJSON_Delete(a.value);

        /* the wrong key: the provider's 401 message, no key material */
        struct llm_config bad;
        set_env(url, "sk-wrong-key-123456789", NULL);
        assert_int_equal(llm_config_from_env(fake_getenv, &bad, NULL), 0);
        prompt(e, &bad, "hi", NULL, &a);
        assert_non_null(a.err);
        assert_string_equal(err_msg(a.err), "prompt: the model provider answered 401 Unauthorized: Incorrect API key "
                                            "provided. You can find your API key in your account settings.");
        assert_null(strstr(err_msg(a.err), "sk-wrong"));
        err_free(a.err);
        llm_config_clear(&bad);

        http_engine_free(e);
        ssrf_allow_free(allow);
        llm_config_clear(&c);
        kill(srv, SIGTERM);
        waitpid(srv, NULL, 0);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_config_missing),
                cmocka_unit_test(test_config_ok),
                cmocka_unit_test(test_config_bad_values),
                cmocka_unit_test(test_provider_allow),
                cmocka_unit_test(test_request_plain),
                cmocka_unit_test(test_request_options),
                cmocka_unit_test(test_request_bad_options),
                cmocka_unit_test(test_request_too_many_messages),
                cmocka_unit_test(test_response_ok),
                cmocka_unit_test(test_response_variants),
                cmocka_unit_test(test_response_unreadable),
                cmocka_unit_test(test_response_provider_errors),
                cmocka_unit_test(test_key_never_leaks),
                cmocka_unit_test(test_fake_server_roundtrip),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
