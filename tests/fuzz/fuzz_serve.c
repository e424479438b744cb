/* tests/fuzz/fuzz_serve.c — libFuzzer target for `chidori serve`'s request
 * handling (server/api.c: routes, the bearer check, the bodies and their
 * fields, the store lookups behind them; server/sessions.c queueing,
 * cancelling, deleting, resuming), from the request as libmicrohttpd hands
 * it over: method, path, query, headers, body.  libmicrohttpd's own parser
 * is not what is tested: the harness plays server/http.c (http_header,
 * http_query, http_reply, suspend/resume) over a plain struct instead of a
 * connection, so server/http.c and server/mhd.c are not linked.
 *
 * Each input runs against a fresh state directory (in /dev/shm) holding
 * sessions of two tenants in every status (a done one with a journal and
 * events, paused ones with a pending approval and input); --max-running 0,
 * so sessions queue and no box is ever started.  Not covered: the event
 * streams (events_stream answers an empty 200 here) and POST
 * /sessions/ID/replay's run (replay_route answers 501 here) — both need a
 * connection or a box.
 *
 * The input is up to 6 requests separated by "\n===\n", each
 *     METHOD PATH[?QUERY]\n(Name: value\n)*\nBODY
 * Every request is answered exactly once (a waiting one when the sessions
 * it waits for settle or the server stops), with a status of 200-599 and,
 * for JSON, a valid document; an error is {"error": {"code", "message"}}
 * with the status its code has.  Crashes on a broken invariant, not only on
 * memory errors. */
#define _GNU_SOURCE
#include <cjson/cJSON.h>
#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/err.h"
#include "common/util.h"
#include "proto/json.h"
#include "runtime/evloop.h"
#include "server/mhd.h"
#include "server/server-internal.h"
#include "server/store.h"

/* events.c's streams are not reached (events_stream is wrapped below). */
struct mhd_api mhd_api;

#define MAX_HEADERS 16
#define MAX_QUERY 8
#define MAX_REQS 6

struct fake {
        struct http_req r;     /* first: http_* get the struct http_req * */
        char *method, *path;
        const char *hname[MAX_HEADERS], *hvalue[MAX_HEADERS];
        size_t nh;
        const char *qname[MAX_QUERY], *qvalue[MAX_QUERY];
        size_t nq;
        unsigned replies;
        unsigned status;
};

const char *http_header(struct http_req *r, const char *name)
{
        struct fake *f = (struct fake *)r;
        for (size_t i = 0; i < f->nh; i++)
                if (strcasecmp(f->hname[i], name) == 0)
                        return f->hvalue[i];
        return NULL;
}

const char *http_query(struct http_req *r, const char *name)
{
        struct fake *f = (struct fake *)r;
        for (size_t i = 0; i < f->nq; i++)
                if (strcmp(f->qname[i], name) == 0)
                        return f->qvalue[i];
        return NULL;
}

static void check_reply(unsigned status, const char *ctype, const char *body, size_t len)
{
        if (status < 200 || status > 599)
                abort();
        if (!ctype || strcmp(ctype, "application/json") != 0)
                return;
        if (json_validate(body, len, NULL, NULL, NULL) != 0)
                abort(); /* a JSON answer that is not JSON */
        if (status < 400)
                return;
        cJSON *doc = cJSON_ParseWithLength(body, len);
        const cJSON *e = cJSON_GetObjectItemCaseSensitive(doc, "error");
        const cJSON *code = cJSON_GetObjectItemCaseSensitive(e, "code");
        const cJSON *msg = cJSON_GetObjectItemCaseSensitive(e, "message");
        if (!cJSON_IsString(code) || !cJSON_IsString(msg) || !msg->valuestring[0])
                abort();
        enum api_code c = 0;
        while (c < API_CODE_MAX && strcmp(api_code_name(c), code->valuestring) != 0)
                c++;
        if (c == API_CODE_MAX || api_code_status(c) != status)
                abort(); /* an unknown code, or one answered with another status */
        cJSON_Delete(doc);
}

int http_reply(struct http_req *r, unsigned status, const char *ctype, const char *body, size_t len,
               const char *const *headers)
{
        struct fake *f = (struct fake *)r;
        if (r->answered)
                return -1;
        for (size_t i = 0; headers && headers[i]; i += 2)
                if (!headers[i + 1] || strpbrk(headers[i + 1], "\r\n"))
                        abort(); /* a header value that would split the answer */
        check_reply(status, ctype, body, len);
        r->answered = true;
        f->replies++;
        f->status = status;
        return 0;
}

void http_suspend(struct http_req *r)
{
        r->suspended = true;
}

void http_resume(struct http_req *r)
{
        if (!r->suspended)
                return;
        r->suspended = false;
        r->resumed = true;
}

void http_kick(struct server *srv)
{
        (void)srv;
}

void __wrap_events_stream(struct server *srv, struct http_req *r, const char *id, uint64_t after, unsigned status)
{
        (void)srv, (void)id, (void)after;
        http_reply(r, status, "text/event-stream", "", 0, NULL);
}

void __wrap_replay_route(struct server *srv, struct http_req *r, const struct store_session *rec)
{
        (void)srv, (void)rec;
        api_error(r, API_NOT_IMPLEMENTED, "replay is not run by the fuzz harness");
}

/* ---- the server's state ---- */

static char base[64];
static struct auth *auth;

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *f)
{
        (void)st, (void)flag, (void)f;
        return remove(p);
}

static void remove_base(void)
{
        nftw(base, rm_one, 16, FTW_DEPTH | FTW_PHYS);
        auth_free(auth);
}

static void must(int rc, struct err *e)
{
        if (rc < 0) {
                fprintf(stderr, "fuzz_serve: setup: %s\n", err_msg(e));
                abort();
        }
}

static void seed(struct store *st, const char *id, const char *tenant, const char *status, const char *pending,
                 const char *result, const char *error)
{
        struct err *e = NULL;
        struct store_session s = {
                .id = (char *)id, .tenant = (char *)tenant, .agent = "agent.js", .status = (char *)status,
                .input = "{\"q\":1}", .exit = -1,
                .created_at = "2026-12-01T00:00:00.000Z", .updated_at = "2026-12-01T00:00:00.000Z",
        };
        must(store_session_insert(st, &s, NULL, &e), e);
        if (result || error)
                must(store_session_update(st, id, status, result, error, result ? 0 : 1,
                                          "{\"wall_ms\":5,\"cpu_ms\":1,\"peak_bytes\":100,\"effects\":2}", &e),
                     e);
        if (pending)
                must(store_session_set_pending(st, id, pending, &e), e);
}

#define S_DONE "s0000000000aa0000000000000001"
#define S_FAILED "s0000000000aa0000000000000002"
#define S_QUEUED "s0000000000aa0000000000000003"
#define S_APPROVAL "s0000000000aa0000000000000004"
#define S_INPUT "s0000000000aa0000000000000005"
#define S_CANCELLED "s0000000000aa0000000000000006"
#define S_OTHER "s0000000000aa0000000000000007"

static struct store *fresh_store(void)
{
        struct err *e = NULL;
        if (!base[0]) {
                snprintf(base, sizeof(base), "/dev/shm/chidori-fuzz-serve.XXXXXX");
                if (!mkdtemp(base))
                        abort();
                char tokens[128];
                snprintf(tokens, sizeof(tokens), "%s/tokens", base);
                FILE *f = fopen(tokens, "w");
                if (!f)
                        abort();
                fputs("# tenant token\ndefault tok-default\nacme tok-acme\nadmin tok-admin\n", f);
                fclose(f);
                must(auth_load_file(tokens, &auth, &e), e);
                atexit(remove_base);
        }
        char dir[128];
        snprintf(dir, sizeof(dir), "%s/state", base);
        nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
        struct store *st = NULL;
        must(store_open(dir, &st, &e), e);
        seed(st, S_DONE, "default", "done", NULL, "{\"answer\":42}", NULL);
        seed(st, S_FAILED, "default", "failed", NULL, NULL, "{\"name\":\"Error\",\"message\":\"boom\"}");
        seed(st, S_QUEUED, "default", "queued", NULL, NULL, NULL);
        seed(st, S_APPROVAL, "default", "awaitingapproval",
             "{\"approval\":{\"id\":3,\"target\":\"http\",\"args_text\":\"{\\\"url\\\":\\\"https://api.example.com/\\\"}\"},"
             "\"calls_seen\":3,\"decisions\":[]}",
             NULL, NULL);
        seed(st, S_INPUT, "default", "awaitinginput", "{\"input\":{\"id\":2,\"prompt\":\"name?\"},\"calls_seen\":1}",
             NULL, NULL);
        seed(st, S_CANCELLED, "default", "cancelled", NULL, NULL, NULL);
        seed(st, S_OTHER, "acme", "done", NULL, "null", NULL);
        must(store_journal_append(st, S_DONE, "{\"type\":\"header\",\"chidori\":\"0.1.0\",\"protocol\":1}", false, &e), e);
        must(store_journal_append(st, S_DONE, "{\"type\":\"call\",\"seq\":1,\"id\":1,\"op\":\"clock.now\",\"args\":{},"
                                              "\"ok\":true,\"value\":1}",
                                  false, &e),
             e);
        uint64_t seq;
        must(store_event_append(st, S_DONE, "status", "{\"status\":\"done\"}", false, &seq, &e), e);
        return st;
}

/* ---- the requests ---- */

/* "METHOD PATH[?QUERY]\n(Name: value\n)*\nBODY": fields point into `text`
 * (modified).  False when there is no request line. */
static bool parse_request(char *text, size_t len, struct fake *f)
{
        char *end = text + len;
        char *nl = memchr(text, '\n', len);
        char *line_end = nl ? nl : end;
        *line_end = '\0';
        char *sp = strchr(text, ' ');
        if (!sp)
                return false;
        *sp = '\0';
        f->method = text;
        f->path = sp + 1;
        char *q = strchr(f->path, '?');
        if (q) {
                *q++ = '\0';
                while (q && *q && f->nq < MAX_QUERY) {
                        char *amp = strchr(q, '&');
                        if (amp)
                                *amp = '\0';
                        char *eq = strchr(q, '=');
                        if (eq)
                                *eq = '\0';
                        f->qname[f->nq] = q;
                        f->qvalue[f->nq++] = eq ? eq + 1 : "";
                        q = amp ? amp + 1 : NULL;
                }
        }
        char *p = nl ? nl + 1 : end;
        while (p < end) {
                char *e2 = memchr(p, '\n', (size_t)(end - p));
                char *le = e2 ? e2 : end;
                if (le == p) { /* blank line: the body follows */
                        p = e2 ? e2 + 1 : end;
                        break;
                }
                *le = '\0';
                char *colon = strchr(p, ':');
                if (colon && f->nh < MAX_HEADERS) {
                        *colon = '\0';
                        char *v = colon + 1;
                        while (*v == ' ')
                                v++;
                        f->hname[f->nh] = p;
                        f->hvalue[f->nh++] = v;
                }
                p = e2 ? e2 + 1 : end;
        }
        size_t blen = p < end ? (size_t)(end - p) : 0;
        f->r.body_len = blen;
        f->r.too_large = blen > 4096; /* --max-body 4096 */
        if (f->r.too_large)
                blen = 0;
        f->r.body = malloc(blen + 1);
        if (!f->r.body)
                abort();
        memcpy(f->r.body, p < end ? p : "", blen);
        f->r.body[blen] = '\0';
        if (f->r.too_large)
                f->r.body_len = 0;
        return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        if (size > 32768)
                return 0;
        char *text = malloc(size + 1);
        if (!text)
                return 0;
        memcpy(text, data, size);
        text[size] = '\0';

        struct err *e = NULL;
        struct store *st = fresh_store();
        struct evloop *loop = NULL;
        must(evloop_new(&loop, &e), e);
        struct server *srv = calloc(1, sizeof(*srv));
        if (!srv)
                abort();
        srv->loop = loop;
        srv->store = st;
        srv->cfg.store = st;
        srv->cfg.auth = auth;
        srv->cfg.max_body = 4096;
        srv->cfg.agent = "agent.js";
        srv->cfg.max_running = 0;
        srv->cfg.max_queued = 3;
        srv->cfg.run.version = "0.1.0";
        srv->cfg.run.agent_abspath = "/srv/agent.js";
        srv->run = srv->cfg.run;
        srv->started = mono_ms();

        struct fake *reqs[MAX_REQS] = { 0 };
        size_t n = 0;
        char *p = text, *end = text + size;
        while (p <= end && n < MAX_REQS) {
                char *sep = memmem(p, (size_t)(end - p), "\n===\n", 5);
                size_t len = sep ? (size_t)(sep - p) : (size_t)(end - p);
                struct fake *f = calloc(1, sizeof(*f));
                if (!f)
                        abort();
                if (sep)
                        *sep = '\0';
                if (!parse_request(p, len, f)) {
                        free(f);
                } else {
                        f->r.srv = srv;
                        f->r.method = f->method;
                        f->r.url = f->path;
                        reqs[n++] = f;
                        api_handle(srv, &f->r);
                        if (!f->r.answered && !f->r.suspended)
                                abort(); /* neither answered nor waiting */
                        /* MHD runs a resumed connection's handler again. */
                        for (size_t i = 0; i < n; i++)
                                if (reqs[i]->r.resumed && !reqs[i]->r.answered)
                                        api_handle(srv, &reqs[i]->r);
                }
                if (!sep)
                        break;
                p = sep + 5;
        }
        /* The server stops: every waiting request is answered. */
        waiters_free_all(srv);
        for (size_t i = 0; i < n; i++) {
                if (reqs[i]->r.resumed && !reqs[i]->r.answered)
                        api_handle(srv, &reqs[i]->r);
                if (reqs[i]->replies != 1)
                        abort(); /* every request answered exactly once */
        }
        sessions_free_all(srv);
        events_free_all(srv);
        for (size_t i = 0; i < n; i++) {
                free(reqs[i]->r.body);
                free(reqs[i]->r.canned);
                free(reqs[i]);
        }
        free(srv->stats.effects);
        free(srv);
        evloop_free(loop);
        store_close(st);
        free(text);
        return 0;
}
