/* effects/net/http.h — the http effect: fetch() performed by the trusted parent
 * through libcurl's multi interface, asynchronously, inside the broker's own
 * poll() loop, behind the SSRF guard (effects/net/ssrf.h).
 *
 * Shape of use (the broker's loop):
 *
 *      http_engine_new(&cfg, &e, &err);
 *      http_start(e, call_id, req, on_done, arg, &err);   // returns at once
 *      loop {
 *              n = fixed fds; timeout = own deadline;
 *              k = http_fds(e, pfd + n, cap - n, &timeout);  // adds curl's fds, lowers timeout
 *              poll(pfd, n + k, timeout);
 *              http_perform(e, pfd + n, k, &err);         // may call on_done
 *      }
 *      http_engine_free(e);                               // cancels what is left
 *
 * What is guaranteed, per transfer:
 *   - only http and https, also after a redirect; proxies from the
 *     environment are ignored; no cookies, no netrc, no credentials in URLs;
 *   - every socket is opened by the guard (CURLOPT_OPENSOCKETFUNCTION) on
 *     the final address libcurl is about to connect to: every address of
 *     a multi-address host, every redirect hop.  A non-public address is
 *     refused before connect() unless the URL's host or the address is on
 *     the allowlist;
 *   - redirects are followed by this module, not by libcurl (up to 10);
 *     each hop is a new transfer on the same handle and passes the guard;
 *   - connect and total timeouts; caps on the request body and on the
 *     (decoded) response body.
 * Everything here is single-threaded: call it from one thread only.  Leaf
 * code: never prints, never exits.
 */
#ifndef CHIDORI_EFFECTS_NET_HTTP_H
#define CHIDORI_EFFECTS_NET_HTTP_H

#include <poll.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"

struct cJSON;
struct ssrf_allow;
struct http_engine;

#define HTTP_DEFAULT_CONNECT_TIMEOUT_MS 10000L
#define HTTP_DEFAULT_TIMEOUT_MS 60000L
#define HTTP_DEFAULT_MAX_RESPONSE_BYTES ((size_t)16 << 20)
#define HTTP_DEFAULT_MAX_REQUEST_BYTES ((size_t)16 << 20)
#define HTTP_DEFAULT_MAX_CONNECTIONS 64L
#define HTTP_MAX_REDIRECTS 10

/* err_code() of the errors this module reports. */
enum http_errc {
        HTTP_E_OK = 0,
        HTTP_E_REQUEST,   /* the request itself: URL, scheme, method, header, body size */
        HTTP_E_SSRF,      /* the guard refused every address of the destination */
        HTTP_E_TOO_BIG,   /* response body over the cap */
        HTTP_E_TIMEOUT,   /* connect or total timeout */
        HTTP_E_REDIRECT,  /* too many, to a refused URL, or redirect "error" */
        HTTP_E_NETWORK,   /* anything else libcurl reports (DNS, refused, TLS...) */
        HTTP_E_INTERNAL,  /* out of memory, libcurl misuse */
        HTTP_E_LIMIT,     /* response bodies in flight would pass max_inflight */
        HTTP_E_SECRET,    /* on_header refused a header value (a secret not for this host, or unknown) */
        HTTP_E_POLICY,    /* on_header: the policy refused it */
        HTTP_E_QUOTA,     /* on_hop: a quota refused a redirect hop */
        HTTP_E_MAX
};

/* "request", "ssrf", "too_big", "timeout", "redirect", "network",
 * "internal", "ELIMIT", "ESECRET", "EPOLICY"; NULL for anything else (0
 * included). */
const char *http_error_name(int code);

/* Optional hooks, both called with http_config.hook_arg and the caller's id.
 * on_refuse: the guard refused address `addr` ("127.0.0.1", "[::1]") for
 *   `url` because it is `why` ("loopback 127.0.0.0/8") — once per refused
 *   address; for the broker's denial note on stderr and in the journal.
 *   Runs inside libcurl: it must not call any http_* function.
 * on_redirect: a redirect to `url` (absolute, already checked to be
 *   http/https) is about to be followed; return -1 with err to refuse it
 *   (the policy gate for every hop), 0 to follow.  The request then fails
 *   with that message (code HTTP_E_REDIRECT).  Runs inside http_perform:
 *   it must not call any http_* function either. */
typedef void (*http_refuse_fn)(void *arg, uint64_t id, const char *url, const char *addr, const char *why);
typedef int (*http_redirect_fn)(void *arg, uint64_t id, const char *url, struct err **err);
/* on_header: a request header's value as it is sent on this hop (`url`,
 * its `host` in lower case as libcurl parsed it, its `port`), called for
 * every header of every hop, the first included: 0 with *ret NULL sends
 * `value` as it is; 0 with *ret (malloc'd, taken: wiped and freed here)
 * sends that instead; -1 with err (its code, e.g. HTTP_E_SECRET) fails the
 * request before anything is sent to this hop.  For secrets by reference
 * (effects/net/secrets.h): the placeholder stays in the request and each
 * hop gets the value only when it may. */
typedef int (*http_header_fn)(void *arg, uint64_t id, const char *url, const char *host, long port,
                              const char *name, const char *value, char **ret, struct err **err);
/* on_hop: a redirect is about to be followed (on_redirect said yes):
 * `sent` is what the next hop's request sends — the URL, each header's
 * name and value as the request holds it (a secret's placeholder, not its
 * value) plus 4, and the body (none after a change to GET) — and
 * `received` the body bytes of the redirect response just received.
 * -1 with err (its code, e.g. HTTP_E_QUOTA) fails the request before
 * anything is sent to that hop.  For quotas: every hop is counted, not
 * the first only.  Runs inside http_perform: no http_* call. */
typedef int (*http_hop_fn)(void *arg, uint64_t id, uint64_t sent, uint64_t received, struct err **err);

struct http_config {
        long connect_timeout_ms;        /* per connection attempt; 0 = 10 s */
        long timeout_ms;                /* whole request, all hops; 0 = 60 s */
        size_t max_response_bytes;      /* decoded body; 0 = 16 MiB */
        size_t max_request_bytes;       /* request body; 0 = 16 MiB */
        long max_connections;           /* open at once, more wait in line; 0 = 64 */
        const struct ssrf_allow *allow; /* borrowed, must outlive the engine; NULL = none */
        const char *user_agent;         /* default User-Agent; NULL = "chidori" */
        http_refuse_fn on_refuse;       /* may be NULL */
        http_redirect_fn on_redirect;   /* may be NULL */
        http_header_fn on_header;       /* may be NULL */
        http_hop_fn on_hop;             /* may be NULL */
        void *hook_arg;
        /* Response bodies buffered by transfers in flight, counted in
         * *inflight (which several engines may share); a transfer whose
         * body would take it past max_inflight fails with HTTP_E_LIMIT.
         * NULL / 0: not counted. */
        uint64_t *inflight;
        uint64_t max_inflight;
};

struct http_header {
        char *name;
        char *value;
};

enum http_redirect {
        HTTP_REDIRECT_FOLLOW,  /* follow up to HTTP_MAX_REDIRECTS hops */
        HTTP_REDIRECT_ERROR,   /* a redirect fails the request */
        HTTP_REDIRECT_MANUAL,  /* the 3xx response is the result */
};

struct http_request {
        char *url;                   /* absolute http(s) URL */
        char *method;                /* NULL = GET; the six standard ones are upper-cased */
        struct http_header *headers; /* sent in this order after libcurl's own */
        size_t nheaders;
        unsigned char *body;         /* may hold any bytes; NULL when body_len == 0 */
        size_t body_len;
        enum http_redirect redirect;
        bool stream;                 /* the body piece by piece: done gets the head, http_read the rest */
};

struct http_response {
        long status;
        char *status_text;           /* reason phrase; "" over HTTP/2 */
        char *url;                   /* final URL, after redirects */
        bool redirected;
        struct http_header *headers; /* in arrival order, duplicates kept */
        size_t nheaders;
        unsigned char *body;
        size_t body_len;
        bool stream;                 /* the head of a streamed response: no body here (http_read) */
};

/* Called once per started transfer that is neither refused by http_start
 * nor cancelled: exactly one of `res` and `err` is non-NULL.  Both are
 * freed when the callback returns (copy what you keep).  The callback may
 * call http_start and http_cancel, not http_perform or http_engine_free. */
typedef void (*http_done_fn)(void *arg, uint64_t id, const struct http_response *res, const struct err *err);

/* A new engine (one CURLM).  `cfg` is copied; zero fields take the defaults. */
int http_engine_new(const struct http_config *cfg, struct http_engine **ret, struct err **err);

/* Cancel everything in flight (no callbacks) and free.  NULL is fine. */
void http_engine_free(struct http_engine *e);

/* Validate and start a transfer; `req` is copied.  Returns 0, or -1 with
 * err (code HTTP_E_REQUEST) for a request refused up front — a bad URL, a
 * scheme other than http/https, credentials in the URL, a bad or forbidden
 * method or header, a body with GET/HEAD, a body over the cap; `done` is
 * then never called.  Network outcomes, the SSRF guard included, arrive
 * through `done`.  `id` is the caller's (the broker's call id). */
int http_start(struct http_engine *e, uint64_t id, const struct http_request *req, http_done_fn done,
               void *arg, struct err **err);

/* Abort transfer `id` without calling its callback (a streamed one too,
 * after its head; a read waiting on it is dropped without its callback);
 * or, when `id` is a read waiting on a stream, drop that read.  False if
 * neither. */
bool http_cancel(struct http_engine *e, uint64_t id);

/* ---- streamed bodies (http_request.stream) ----
 * The head goes out through `done` (res->stream set, no body) at the end
 * of the perform pass in which the response's headers came in (a small body
 * complete by then comes whole instead, HTTP_INLINE_BODY); the body then waits in a buffer of at most
 * HTTP_STREAM_BUFFER bytes per stream (libcurl is paused while it is full,
 * CURL_WRITEFUNC_PAUSE) and is taken with http_read, the stream named by
 * the transfer's id.  The stream ends when a read returns `done` or an
 * error, or with http_close. */
#define HTTP_STREAM_BUFFER (1u << 20)
/* A streamed response whose body has all arrived when its head is complete
 * (by the end of that perform pass) and is at most this big is answered
 * whole, as an unstreamed one: one host call per fetch, not two. */
#define HTTP_INLINE_BODY (64u << 10)

struct http_chunk {
        unsigned char *data;         /* malloc'd (the caller frees), NULL when len == 0 */
        size_t len;
        bool done;                   /* the body is complete: nothing more */
        struct err *err;             /* the body broke off (owned by the caller) */
};

/* A chunk that came later for read `read_id` (the caller's id of the read). */
typedef void (*http_read_fn)(void *arg, uint64_t read_id, struct http_chunk *chunk);

/* 0: *out has what is buffered (or done, or the error); 1: nothing yet,
 * fn is called once something arrives; -1: no such stream, or a read is
 * already waiting on it (err, code HTTP_E_REQUEST). */
int http_read(struct http_engine *e, uint64_t stream, uint64_t read_id, http_read_fn fn, void *arg,
              struct http_chunk *out, struct err **err);

/* Give up stream `stream`: the transfer is aborted (its connection closed)
 * and a read waiting on it gets `done`.  False if unknown. */
bool http_close(struct http_engine *e, uint64_t stream);

/* Transfers started and not yet completed or cancelled. */
size_t http_pending(const struct http_engine *e);

/* Fill up to `max` pollfds with the sockets libcurl waits on (revents
 * cleared) and lower *timeout_ms (-1 = infinite) to when libcurl next
 * wants http_perform called.  Returns how many entries are needed: when
 * that exceeds `max`, grow the array and call again. */
size_t http_fds(struct http_engine *e, struct pollfd *fds, size_t max, int *timeout_ms);

/* Let libcurl act on the fds http_fds returned (with poll's revents) and on
 * its timer, then complete finished transfers (callbacks run here).  Call it
 * after every poll() that used http_fds — also when poll timed out.  fds ==
 * NULL: poll the engine's sockets itself without waiting.  Returns 0, or -1
 * with err when libcurl's multi handle fails (the engine is then unusable). */
int http_perform(struct http_engine *e, const struct pollfd *fds, size_t nfds, struct err **err);

/* ---- the frame shape ----
 * request args: {"url": s, "method"?: s, "headers"?: [[name, value]...],
 *                "body_base64"?: s, "redirect"?: "follow"|"error"|"manual"}
 * result value: {"status": n, "statusText": s, "url": s, "redirected": b,
 *                "headers": [[name, value]...], "body_base64": s}
 * ("stream": true in the args: no body_base64 in the value; the broker
 *  adds "stream": <id> and http.read {stream} calls bring the body)
 */

/* Convert call args to a request (err code HTTP_E_REQUEST on bad shape). */
int http_request_from_json(const struct cJSON *args, struct http_request **ret, struct err **err);
void http_request_free(struct http_request *req);

/* The result value for a response; NULL on out of memory. */
struct cJSON *http_response_to_json(const struct http_response *res);

#endif
