/* effects/net/http.c — fetch through libcurl multi, guarded at connect time.
 *
 * One CURLM per engine, driven by the socket-callback API
 * (CURLMOPT_SOCKETFUNCTION / CURLMOPT_TIMERFUNCTION and
 * curl_multi_socket_action) so its sockets join the broker's poll() set.
 *
 * The SSRF guard sits in CURLOPT_OPENSOCKETFUNCTION: libcurl calls it with
 * the very sockaddr it will connect() to, once per attempt — each address of
 * a multi-address host (happy eyeballs included) and each redirect hop —
 * after DNS, so there is no second resolution for a rebinding answer to win.
 * Refusing there means no SYN is ever sent.  A reused connection skips the
 * callback, which is sound: libcurl reuses only a connection to the same
 * host name and port, which passed the same check when it was opened.
 *
 * Redirects are followed here, not by libcurl: each hop re-validates the URL
 * (http/https only, no credentials), applies the fetch rules (303, and
 * 301/302 after POST, become GET without body; Authorization, Cookie and
 * Proxy-Authorization are dropped when the origin changes), and runs as a
 * fresh transfer on the same easy handle, so the guard sees its connection
 * with the hop's own host name for the allowlist.
 */
#define _GNU_SOURCE
#include "effects/net/http.h"

#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/util.h"
#include "effects/net/ssrf.h"

#define URL_MAX_BYTES 65536
#define HEADERS_MAX 256                  /* request headers */
#define HEADERS_MAX_BYTES (256 * 1024)   /* request header bytes */
#define RESPONSE_HEADERS_MAX_BYTES (1024 * 1024)

struct sock {
        curl_socket_t fd;
        int what;  /* CURL_POLL_IN / OUT / INOUT */
};

struct http_engine {
        CURLM *multi;
        struct http_config cfg;
        struct sock *socks;
        size_t nsocks, capsocks;
        double timer_at;  /* mono_ms when libcurl wants a timeout action; < 0 none */
        struct xfer *xfers;
        size_t pending;
        bool in_perform;
        struct xfer *ended;  /* streams whose transfer is over, their buffer not yet read to the end */
};

struct xfer {
        struct http_engine *e;
        struct xfer *next, *prev;
        uint64_t id;
        http_done_fn done;
        void *arg;
        CURL *easy;
        struct curl_slist *slist;
        /* the request, as it stands for the current hop */
        char *url, *host, *origin, *method;
        struct http_header *hdrs;
        size_t nhdrs;
        unsigned char *body;
        size_t body_len;
        enum http_redirect redirect;
        int hops;
        double deadline;     /* mono_ms */
        long hop_budget_ms;  /* total time left when this hop started */
        /* the guard's verdicts for this hop */
        int refused, passed;
        /* the response being received */
        struct http_response res;
        size_t body_cap, hdr_bytes, res_hcap;  /* body_cap is counted in cfg.inflight */
        bool too_big, headers_too_big, in_body, over_inflight;
        char errbuf[CURL_ERROR_SIZE];
        /* a streamed body (http_request.stream): res.body is the buffer */
        bool stream, head_sent, paused, ended;
        /* a stream's head is complete but held until the end of this
         * perform pass (http_perform): a body that has all arrived by then
         * (up to HTTP_INLINE_BODY bytes) goes with it, one http.read less */
        bool head_pending;
        size_t streamed;       /* body bytes taken in so far (the response cap counts them all) */
        struct err *end_err;   /* how it ended, NULL: complete */
        bool reading;          /* a read waits: read_id, read_fn, read_arg */
        uint64_t read_id;
        http_read_fn read_fn;
        void *read_arg;
};

static void stream_feed(struct xfer *t);
static void stream_trim(struct xfer *t);
static void head_out(struct xfer *t);
static bool is_redirect(long status);

static pthread_once_t global_once = PTHREAD_ONCE_INIT;
static CURLcode global_rc = CURLE_FAILED_INIT;

static void global_init(void)
{
        global_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

/* ---- small helpers ---- */

static void headers_free(struct http_header *h, size_t n)
{
        for (size_t i = 0; i < n; i++) {
                free(h[i].name);
                free(h[i].value);
        }
        free(h);
}

static void response_clear(struct http_response *r)
{
        free(r->status_text);
        free(r->url);
        headers_free(r->headers, r->nheaders);
        free(r->body);
        memset(r, 0, sizeof(*r));
}

static bool is_tchar(unsigned char c)
{
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
               strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

static bool is_token(const char *s)
{
        if (!s || !*s)
                return false;
        for (; *s; s++)
                if (!is_tchar((unsigned char)*s))
                        return false;
        return true;
}

static bool is_ows(char c)
{
        return c == ' ' || c == '\t';
}

/* Append a header (copies); -1 on OOM. */
static int header_push(struct http_header **v, size_t *n, size_t *cap, const char *name, size_t nl,
                       const char *value, size_t vl)
{
        if (*n == *cap) {
                size_t c = *cap ? *cap * 2 : 16;
                struct http_header *nv = realloc(*v, c * sizeof(*nv));
                if (!nv)
                        return -1;
                *v = nv;
                *cap = c;
        }
        char *a = strndup(name, nl), *b = strndup(value, vl);
        if (!a || !b) {
                free(a);
                free(b);
                return -1;
        }
        (*v)[*n].name = a;
        (*v)[*n].value = b;
        (*n)++;
        return 0;
}

/* ---- URL checks ---- */

/* Validate an absolute URL for a hop.  On success returns the normalised
 * URL, its host (lower case) and its origin ("scheme://host:port"). */
static int check_url(const char *url, char **ret_url, char **ret_host, char **ret_origin, struct err **err)
{
        if (!url || !*url)
                return err_setc(err, HTTP_E_REQUEST, 0, "http: empty URL");
        if (strlen(url) > URL_MAX_BYTES)
                return err_setc(err, HTTP_E_REQUEST, 0, "http: URL longer than %d bytes", URL_MAX_BYTES);
        CURLU *u = curl_url();
        if (!u)
                return err_setc(err, HTTP_E_INTERNAL, ENOMEM, "http: parse URL");
        char *scheme = NULL, *host = NULL, *port = NULL, *user = NULL, *pass = NULL, *norm = NULL;
        int r = -1;
        CURLUcode uc = curl_url_set(u, CURLUPART_URL, url, CURLU_NON_SUPPORT_SCHEME);
        if (uc != CURLUE_OK) {
                err_setc(err, HTTP_E_REQUEST, 0, "http: invalid URL '%.200s': %s", url, curl_url_strerror(uc));
                goto out;
        }
        if (curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK || !scheme) {
                err_setc(err, HTTP_E_REQUEST, 0, "http: invalid URL '%.200s': no scheme", url);
                goto out;
        }
        if (strcasecmp(scheme, "http") != 0 && strcasecmp(scheme, "https") != 0) {
                err_setc(err, HTTP_E_REQUEST, 0, "http: scheme '%.32s' is not allowed (only http and https)", scheme);
                goto out;
        }
        if (curl_url_get(u, CURLUPART_USER, &user, 0) == CURLUE_OK ||
            curl_url_get(u, CURLUPART_PASSWORD, &pass, 0) == CURLUE_OK) {
                err_setc(err, HTTP_E_REQUEST, 0,
                         "http: URLs with credentials are not allowed; send an Authorization header");
                goto out;
        }
        if (curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK || !host || !*host) {
                err_setc(err, HTTP_E_REQUEST, 0, "http: invalid URL '%.200s': no host", url);
                goto out;
        }
        if (curl_url_get(u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT) != CURLUE_OK || !port) {
                err_setc(err, HTTP_E_REQUEST, 0, "http: invalid URL '%.200s': no port", url);
                goto out;
        }
        if (curl_url_get(u, CURLUPART_URL, &norm, 0) != CURLUE_OK || !norm) {
                err_setc(err, HTTP_E_REQUEST, 0, "http: invalid URL '%.200s'", url);
                goto out;
        }
        /* A host curl decoded from %XX into a space or a control character
         * (http://0x%7f) parses here but not in its own normalised form:
         * refused now, so the host judged is the host asked for. */
        for (const unsigned char *p = (const unsigned char *)host; *p; p++)
                if (*p <= 0x20 || *p == 0x7f) {
                        err_setc(err, HTTP_E_REQUEST, 0,
                                 "http: invalid URL '%.200s': the host has a space or a control character (%%%02X)",
                                 url, *p);
                        goto out;
                }
        for (char *p = host; *p; p++)
                if (*p >= 'A' && *p <= 'Z')
                        *p = (char)(*p - 'A' + 'a');
        char *h = strdup(host), *n = strdup(norm), *o = NULL;
        if (asprintf(&o, "%s://%s:%s", scheme, host, port) < 0)
                o = NULL;
        if (!h || !n || !o) {
                free(h), free(n), free(o);
                err_setc(err, HTTP_E_INTERNAL, ENOMEM, "http: parse URL");
                goto out;
        }
        *ret_url = n;
        *ret_host = h;
        *ret_origin = o;
        r = 0;
out:
        curl_free(scheme), curl_free(host), curl_free(port), curl_free(user), curl_free(pass), curl_free(norm);
        curl_url_cleanup(u);
        return r;
}

/* ---- request validation ---- */

/* Set by libcurl from the connection or the body; letting the agent set
 * them would let it desynchronise framing (smuggling) or the connection. */
static const char *const forbidden_headers[] = {
        "host", "content-length", "transfer-encoding", "connection", "keep-alive",
        "upgrade", "te", "trailer", "expect", "proxy-connection",
};

static int check_method(const char *m, char **ret, struct err **err)
{
        static const char *const norm[] = { "DELETE", "GET", "HEAD", "OPTIONS", "POST", "PUT", "PATCH" };
        if (!m)
                m = "GET";
        if (!is_token(m) || strlen(m) > 32)
                return err_setc(err, HTTP_E_REQUEST, 0, "http: '%.40s' is not a valid method", m);
        if (!strcasecmp(m, "CONNECT") || !strcasecmp(m, "TRACE") || !strcasecmp(m, "TRACK"))
                return err_setc(err, HTTP_E_REQUEST, 0, "http: method '%s' is not allowed", m);
        const char *use = m;
        for (size_t i = 0; i < sizeof(norm) / sizeof(norm[0]); i++)
                if (strcasecmp(m, norm[i]) == 0)
                        use = norm[i];
        *ret = strdup(use);
        if (!*ret)
                return err_setc(err, HTTP_E_INTERNAL, ENOMEM, "http: method");
        return 0;
}

static int check_headers(const struct http_header *h, size_t n, struct err **err)
{
        if (n > HEADERS_MAX)
                return err_setc(err, HTTP_E_REQUEST, 0, "http: more than %d request headers", HEADERS_MAX);
        size_t total = 0;
        for (size_t i = 0; i < n; i++) {
                if (!is_token(h[i].name))
                        return err_setc(err, HTTP_E_REQUEST, 0, "http: '%.64s' is not a valid header name",
                                        h[i].name ? h[i].name : "");
                if (!h[i].value || strpbrk(h[i].value, "\r\n"))
                        return err_setc(err, HTTP_E_REQUEST, 0, "http: header '%.64s' has an invalid value",
                                        h[i].name);
                for (size_t k = 0; k < sizeof(forbidden_headers) / sizeof(forbidden_headers[0]); k++)
                        if (strcasecmp(h[i].name, forbidden_headers[k]) == 0)
                                return err_setc(err, HTTP_E_REQUEST, 0,
                                                "http: header '%s' is set by chidori and cannot be given",
                                                h[i].name);
                total += strlen(h[i].name) + strlen(h[i].value) + 4;
        }
        if (total > HEADERS_MAX_BYTES)
                return err_setc(err, HTTP_E_REQUEST, 0, "http: request headers exceed %d bytes", HEADERS_MAX_BYTES);
        return 0;
}

static bool has_header(const struct xfer *t, const char *name)
{
        for (size_t i = 0; i < t->nhdrs; i++)
                if (strcasecmp(t->hdrs[i].name, name) == 0)
                        return true;
        return false;
}

static void drop_headers(struct xfer *t, const char *const *names, size_t nn)
{
        size_t w = 0;
        for (size_t i = 0; i < t->nhdrs; i++) {
                bool drop = false;
                for (size_t k = 0; k < nn && !drop; k++)
                        drop = strcasecmp(t->hdrs[i].name, names[k]) == 0;
                if (drop) {
                        free(t->hdrs[i].name);
                        free(t->hdrs[i].value);
                } else {
                        t->hdrs[w++] = t->hdrs[i];
                }
        }
        t->nhdrs = w;
}

/* ---- libcurl callbacks ---- */

static curl_socket_t open_socket(void *p, curlsocktype purpose, struct curl_sockaddr *a)
{
        struct xfer *t = p;
        struct sockaddr_storage ss;
        memset(&ss, 0, sizeof(ss));
        /* libcurl hands a struct that holds the whole address (addrlen bytes). */
        memcpy(&ss, &a->addr, a->addrlen < sizeof(ss) ? a->addrlen : sizeof(ss));
        const struct sockaddr *sa = (const struct sockaddr *)&ss;
        char why[160] = "not an IP address";
        bool ok = purpose == CURLSOCKTYPE_IPCXN && (ss.ss_family == AF_INET || ss.ss_family == AF_INET6) &&
                  (ssrf_is_public(sa, why, sizeof(why)) || ssrf_allow_match(t->e->cfg.allow, t->host, sa));
        if (!ok) {
                char addr[SSRF_ADDR_MAX];
                ssrf_addr_format(sa, addr, sizeof(addr));
                t->refused++;
                if (purpose != CURLSOCKTYPE_IPCXN)
                        snprintf(why, sizeof(why), "not an outgoing connection");
                if (t->e->cfg.on_refuse)
                        t->e->cfg.on_refuse(t->e->cfg.hook_arg, t->id, t->url, addr, why);
                return CURL_SOCKET_BAD;
        }
        t->passed++;
        return socket(a->family, a->socktype | SOCK_CLOEXEC, a->protocol);
}

static size_t on_body(char *buf, size_t size, size_t nmemb, void *p)
{
        struct xfer *t = p;
        size_t n = size * nmemb;
        struct http_response *r = &t->res;
        t->in_body = true;
        if (t->head_pending && !t->head_sent && r->body_len + n > HTTP_INLINE_BODY)
                head_out(t);  /* too much to go with the head: a stream from here */
        if (t->head_sent) {
                /* A stream: the buffer is bounded; libcurl holds the data
                 * while it is full and gives it again once resumed.  The
                 * response cap counts the whole body. */
                if (n > t->e->cfg.max_response_bytes - t->streamed) {
                        t->too_big = true;
                        return 0;
                }
                if (r->body_len > 0 && r->body_len + n > HTTP_STREAM_BUFFER) {
                        t->paused = true;
                        return CURL_WRITEFUNC_PAUSE;
                }
                t->streamed += n;
        } else if (n > t->e->cfg.max_response_bytes - r->body_len) {
                t->too_big = true;
                return 0;
        }
        if (r->body_len + n > t->body_cap) {
                size_t cap = t->body_cap ? t->body_cap : 16384;
                while (cap < r->body_len + n)
                        cap *= 2;
                if (cap > t->e->cfg.max_response_bytes)
                        cap = t->e->cfg.max_response_bytes;
                const struct http_config *c = &t->e->cfg;
                uint64_t more = cap - t->body_cap;
                if (c->inflight && c->max_inflight &&
                    (more > c->max_inflight || *c->inflight > c->max_inflight - more)) {
                        t->over_inflight = true;
                        return 0;
                }
                unsigned char *nb = realloc(r->body, cap);
                if (!nb)
                        return 0;
                r->body = nb;
                if (c->inflight)
                        *c->inflight += more;
                t->body_cap = cap;
        }
        memcpy(r->body + r->body_len, buf, n);
        r->body_len += n;
        if (t->head_sent)
                stream_feed(t);
        return n;
}

static size_t on_header(char *buf, size_t size, size_t nmemb, void *p)
{
        struct xfer *t = p;
        size_t n = size * nmemb;
        struct http_response *r = &t->res;
        t->hdr_bytes += n;
        if (t->hdr_bytes > RESPONSE_HEADERS_MAX_BYTES) {
                t->headers_too_big = true;
                return 0;
        }
        size_t len = n;
        while (len && (buf[len - 1] == '\r' || buf[len - 1] == '\n'))
                len--;
        if (len >= 5 && memcmp(buf, "HTTP/", 5) == 0) {
                /* A new status line: an earlier block was 1xx; start over. */
                headers_free(r->headers, r->nheaders);
                r->headers = NULL;
                r->nheaders = t->res_hcap = 0;
                t->hdr_bytes = n;
                free(r->status_text);
                r->status_text = NULL;
                t->in_body = false;
                size_t i = 5;
                while (i < len && buf[i] != ' ')
                        i++;                       /* version */
                while (i < len && buf[i] == ' ')
                        i++;
                while (i < len && buf[i] >= '0' && buf[i] <= '9')
                        i++;                       /* code */
                if (i < len && buf[i] == ' ')
                        i++;
                size_t end = len;
                while (end > i && is_ows(buf[end - 1]))
                        end--;
                r->status_text = strndup(buf + i, end - i);
                return r->status_text ? n : 0;
        }
        if (len == 0 && !t->in_body && t->stream && !t->head_sent) {
                /* The end of a header block: a stream's head goes out now,
                 * unless it is an interim (1xx) or a redirect to follow. */
                long status = 0;
                curl_easy_getinfo(t->easy, CURLINFO_RESPONSE_CODE, &status);
                if (status >= 200 && !(is_redirect(status) && t->redirect != HTTP_REDIRECT_MANUAL))
                        t->head_pending = true;  /* out at the end of this pass, or with its body */
                return n;
        }
        if (len == 0 || t->in_body)
                return n;  /* end of the block, or trailers (not exposed) */
        if (is_ows(buf[0])) {
                /* obs-fold: continue the previous value */
                if (!r->nheaders)
                        return n;
                size_t s = 0;
                while (s < len && is_ows(buf[s]))
                        s++;
                struct http_header *h = &r->headers[r->nheaders - 1];
                char *nv = NULL;
                if (asprintf(&nv, "%s %.*s", h->value, (int)(len - s), buf + s) < 0)
                        return 0;
                free(h->value);
                h->value = nv;
                return n;
        }
        const char *colon = memchr(buf, ':', len);
        if (!colon)
                return n;  /* not a header line: ignore, as browsers do */
        size_t nl = (size_t)(colon - buf);
        while (nl && is_ows(buf[nl - 1]))
                nl--;
        size_t vs = (size_t)(colon - buf) + 1, ve = len;
        while (vs < ve && is_ows(buf[vs]))
                vs++;
        while (ve > vs && is_ows(buf[ve - 1]))
                ve--;
        if (header_push(&r->headers, &r->nheaders, &t->res_hcap, buf, nl, buf + vs, ve - vs) < 0)
                return 0;
        return n;
}

static int on_socket(CURL *easy, curl_socket_t s, int what, void *userp, void *socketp)
{
        (void)easy, (void)socketp;
        struct http_engine *e = userp;
        for (size_t i = 0; i < e->nsocks; i++) {
                if (e->socks[i].fd != s)
                        continue;
                if (what == CURL_POLL_REMOVE)
                        e->socks[i] = e->socks[--e->nsocks];
                else
                        e->socks[i].what = what;
                return 0;
        }
        if (what == CURL_POLL_REMOVE)
                return 0;
        if (e->nsocks == e->capsocks) {
                size_t cap = e->capsocks ? e->capsocks * 2 : 16;
                struct sock *nv = realloc(e->socks, cap * sizeof(*nv));
                if (!nv)
                        return -1;
                e->socks = nv;
                e->capsocks = cap;
        }
        e->socks[e->nsocks++] = (struct sock){ .fd = s, .what = what };
        return 0;
}

static int on_timer(CURLM *multi, long timeout_ms, void *userp)
{
        (void)multi;
        struct http_engine *e = userp;
        e->timer_at = timeout_ms < 0 ? -1 : mono_ms() + (double)timeout_ms;
        return 0;
}

/* ---- one hop ---- */

/* Milliseconds until `at` (mono_ms), rounded up; libm-free ceil. */
static long ms_until(double at)
{
        double d = at - mono_ms();
        if (d <= 0)
                return 0;
        if (d >= (double)LONG_MAX)
                return LONG_MAX;
        long l = (long)d;
        return (double)l < d ? l + 1 : l;
}

/* A header list that may hold a secret's value (on_header): wiped, then
 * freed. */
static void slist_wipe_free(struct curl_slist *sl)
{
        for (struct curl_slist *p = sl; p; p = p->next)
                if (p->data)
                        explicit_bzero(p->data, strlen(p->data));
        curl_slist_free_all(sl);
}

static void wipe_free(char *p)
{
        if (p) {
                explicit_bzero(p, strlen(p));
                free(p);
        }
}

/* The port of an origin "scheme://host:port". */
static long origin_port(const char *origin)
{
        const char *c = strrchr(origin, ':');
        long p = 0;
        return c && parse_nonneg(c + 1, &p) == 0 ? p : 0;
}

/* The hop's request headers, as t->slist (NULL before): the agent's, in
 * order, each as on_header fills it for this hop; then suppressions of
 * libcurl's defaults that fetch does not send. */
static int hop_headers(struct xfer *t, struct err **err)
{
        const struct http_config *c = &t->e->cfg;
        struct curl_slist *sl = NULL;
        for (size_t i = 0; i < t->nhdrs; i++) {
                char *filled = NULL;
                if (c->on_header && c->on_header(c->hook_arg, t->id, t->url, t->host, origin_port(t->origin),
                                                 t->hdrs[i].name, t->hdrs[i].value, &filled, err) < 0) {
                        slist_wipe_free(sl);
                        return -1;
                }
                const char *v = filled ? filled : t->hdrs[i].value;
                while (is_ows(*v))
                        v++;
                size_t vl = strlen(v);
                while (vl && is_ows(v[vl - 1]))
                        vl--;
                char *line = NULL;
                /* "Name;" is libcurl's spelling of an empty value ("Name:" removes). */
                int k = vl ? asprintf(&line, "%s: %.*s", t->hdrs[i].name, (int)vl, v)
                           : asprintf(&line, "%s;", t->hdrs[i].name);
                struct curl_slist *n = k < 0 ? NULL : curl_slist_append(sl, line);
                wipe_free(k < 0 ? NULL : line);
                wipe_free(filled);
                if (!n)
                        goto oom;
                sl = n;
        }
        struct curl_slist *n = curl_slist_append(sl, "Expect:");
        if (!n)
                goto oom;
        sl = n;
        if (t->body && !has_header(t, "content-type")) {
                /* libcurl would add application/x-www-form-urlencoded */
                if (!(n = curl_slist_append(sl, "Content-Type:")))
                        goto oom;
                sl = n;
        }
        t->slist = sl;
        return 0;
oom:
        slist_wipe_free(sl);
        return err_setc(err, HTTP_E_INTERNAL, ENOMEM, "http: request headers");
}

/* Configure the easy handle for the next hop (t->url) and add it to the
 * multi handle: the time left, the headers, the method and body, the caps. */
static int hop_setup(struct xfer *t, struct err **err)
{
        struct http_engine *e = t->e;
        CURL *c = t->easy;
        curl_easy_reset(c);
        slist_wipe_free(t->slist);
        t->slist = NULL;

        long left = ms_until(t->deadline);
        if (left <= 0)
                return err_setc(err, HTTP_E_TIMEOUT, 0, "http: request timed out after %ld ms", e->cfg.timeout_ms);
        t->hop_budget_ms = left;
        if (hop_headers(t, err) < 0)
                return -1;

        CURLcode rc = CURLE_OK;
#define SET(opt, val)                                      \
        do {                                               \
                if (rc == CURLE_OK)                        \
                        rc = curl_easy_setopt(c, opt, val); \
        } while (0)
        SET(CURLOPT_PRIVATE, t);
        SET(CURLOPT_URL, t->url);
        SET(CURLOPT_ERRORBUFFER, t->errbuf);
        SET(CURLOPT_NOSIGNAL, 1L);
        SET(CURLOPT_PROTOCOLS_STR, "http,https");
        SET(CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
        SET(CURLOPT_FOLLOWLOCATION, 0L);
        /* Ignore http_proxy, https_proxy, all_proxy and no_proxy. */
        SET(CURLOPT_PROXY, "");
        SET(CURLOPT_NOPROXY, "*");
        SET(CURLOPT_OPENSOCKETFUNCTION, open_socket);
        SET(CURLOPT_OPENSOCKETDATA, t);
        SET(CURLOPT_CONNECTTIMEOUT_MS, e->cfg.connect_timeout_ms);
        SET(CURLOPT_TIMEOUT_MS, left);
        SET(CURLOPT_WRITEFUNCTION, on_body);
        SET(CURLOPT_WRITEDATA, t);
        SET(CURLOPT_HEADERFUNCTION, on_header);
        SET(CURLOPT_HEADERDATA, t);
        SET(CURLOPT_ACCEPT_ENCODING, "");  /* decode what libcurl can; the cap counts decoded bytes */
        SET(CURLOPT_USERAGENT, e->cfg.user_agent);
        SET(CURLOPT_HTTPHEADER, t->slist);
        if (strcmp(t->method, "GET") == 0) {
                SET(CURLOPT_HTTPGET, 1L);
        } else if (strcmp(t->method, "HEAD") == 0) {
                SET(CURLOPT_NOBODY, 1L);
        } else {
                if (strcmp(t->method, "POST") != 0)
                        SET(CURLOPT_CUSTOMREQUEST, t->method);
                if (t->body || !strcmp(t->method, "POST") || !strcmp(t->method, "PUT") ||
                    !strcmp(t->method, "PATCH")) {
                        SET(CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)t->body_len);
                        SET(CURLOPT_POSTFIELDS, t->body ? (const char *)t->body : "");
                }
        }
        if (strcmp(t->method, "HEAD") != 0)
                SET(CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)e->cfg.max_response_bytes);
#undef SET
        if (rc != CURLE_OK)
                return err_setc(err, HTTP_E_INTERNAL, 0, "http: configure transfer: %s", curl_easy_strerror(rc));
        CURLMcode mc = curl_multi_add_handle(e->multi, c);
        if (mc != CURLM_OK)
                return err_setc(err, HTTP_E_INTERNAL, 0, "http: start transfer: %s", curl_multi_strerror(mc));
        return 0;
}

/* ---- transfer lifetime ---- */

/* The response body is going: stop counting it as in flight. */
static void body_release(struct xfer *t)
{
        if (t->e->cfg.inflight)
                *t->e->cfg.inflight -= t->body_cap;
        t->body_cap = 0;
}

static void xfer_free(struct xfer *t)
{
        if (!t)
                return;
        body_release(t);
        err_free(t->end_err);
        if (t->easy)
                curl_easy_cleanup(t->easy);
        slist_wipe_free(t->slist);
        free(t->url);
        free(t->host);
        free(t->origin);
        free(t->method);
        headers_free(t->hdrs, t->nhdrs);
        free(t->body);
        response_clear(&t->res);
        free(t);
}

static void xfer_unlink(struct xfer *t)
{
        struct http_engine *e = t->e;
        if (t->prev)
                t->prev->next = t->next;
        else
                e->xfers = t->next;
        if (t->next)
                t->next->prev = t->prev;
        t->next = t->prev = NULL;
        e->pending--;
}

static void deliver(struct xfer *t, const struct http_response *res, const struct err *err)
{
        xfer_unlink(t);
        t->done(t->arg, t->id, res, err);
        xfer_free(t);
}

static void fail(struct xfer *t, struct err *err)
{
        deliver(t, NULL, err);
        err_free(err);
}

static struct err *transfer_error(struct xfer *t, CURLcode rc)
{
        struct err *err = NULL;
        const struct http_config *c = &t->e->cfg;
        if (t->over_inflight) {
                err_setc(&err, HTTP_E_LIMIT, 0, "http: response bodies in flight would pass the limit of %llu bytes",
                         (unsigned long long)c->max_inflight);
        } else if (t->too_big || rc == CURLE_FILESIZE_EXCEEDED) {
                err_setc(&err, HTTP_E_TOO_BIG, 0, "http: response exceeds the %zu-byte limit", c->max_response_bytes);
        } else if (t->refused && !t->passed) {
                /* Named by the host the agent asked for, never by the
                 * address it resolved to: the agent must not learn what a
                 * name means inside the operator's network (issue 9 item
                 * 9).  The operator's stderr and the journal name the
                 * address (on_refuse). */
                err_setc(&err, HTTP_E_SSRF, 0,
                         "http: destination host '%.200s' is not public (SSRF guard); allow it with --allow-host",
                         t->host);
        } else if (t->headers_too_big) {
                err_setc(&err, HTTP_E_TOO_BIG, 0, "http: response headers exceed the %d-byte limit",
                         RESPONSE_HEADERS_MAX_BYTES);
        } else if (rc == CURLE_OPERATION_TIMEDOUT) {
                curl_off_t connected = 0;
                curl_easy_getinfo(t->easy, CURLINFO_CONNECT_TIME_T, &connected);
                if (connected == 0 && c->connect_timeout_ms < t->hop_budget_ms)
                        err_setc(&err, HTTP_E_TIMEOUT, 0, "http: connecting to %s timed out after %ld ms", t->host,
                                 c->connect_timeout_ms);
                else
                        err_setc(&err, HTTP_E_TIMEOUT, 0, "http: request timed out after %ld ms", c->timeout_ms);
        } else {
                err_setc(&err, HTTP_E_NETWORK, 0, "http: %s: %s", t->host,
                         t->errbuf[0] ? t->errbuf : curl_easy_strerror(rc));
        }
        return err;
}

static bool is_redirect(long status)
{
        return status == 301 || status == 302 || status == 303 || status == 307 || status == 308;
}

static const char *const body_headers[] = { "content-type", "content-encoding", "content-language",
                                            "content-location" };
static const char *const creds[] = { "authorization", "cookie", "proxy-authorization" };

static bool named_in(const char *name, const char *const *names, size_t n)
{
        for (size_t k = 0; k < n; k++)
                if (strcasecmp(name, names[k]) == 0)
                        return true;
        return false;
}

/* The headers a redirect drops (the body's on a change to GET, the
 * credentials on a change of origin) are shown to on_header for the new
 * hop all the same: a secret's placeholder in one of them still fails
 * the request on a hop the secret is not for, rather than going on
 * without it (docs/secrets.md).  Nothing is sent here. */
static int check_dropped(struct xfer *t, const char *url, const char *host, const char *origin, bool to_get,
                         struct err **err)
{
        const struct http_config *c = &t->e->cfg;
        bool cross = strcmp(origin, t->origin) != 0;
        for (size_t i = 0; c->on_header && i < t->nhdrs; i++) {
                const char *name = t->hdrs[i].name;
                if (!(to_get && named_in(name, body_headers, ARRAY_SIZE(body_headers))) &&
                    !(cross && named_in(name, creds, ARRAY_SIZE(creds))))
                        continue;
                char *filled = NULL;
                struct err *he = NULL;
                int r = c->on_header(c->hook_arg, t->id, url, host, origin_port(origin), name, t->hdrs[i].value,
                                     &filled, &he);
                wipe_free(filled);
                if (r < 0) {
                        err_setc(err, err_code(he), 0, "%s (redirect to %.400s)", err_msg(he), url);
                        err_free(he);
                        return -1;
                }
        }
        return 0;
}

/* Move `t` to the URL a redirect names.  0 when the next hop is running. */
static int next_hop(struct xfer *t, const char *location, long status, struct err **err)
{
        char *url = NULL, *host = NULL, *origin = NULL;
        struct err *why = NULL;
        if (check_url(location, &url, &host, &origin, &why) < 0) {
                const char *m = err_msg(why);
                if (strncmp(m, "http: ", 6) == 0)
                        m += 6;
                err_setc(err, HTTP_E_REDIRECT, 0, "http: redirect refused: %s", m);
                err_free(why);
                return -1;
        }
        const struct http_config *c = &t->e->cfg;
        if (c->on_redirect && c->on_redirect(c->hook_arg, t->id, url, &why) < 0) {
                err_setc(err, HTTP_E_REDIRECT, 0, "%s", why ? err_msg(why) : "http: redirect refused");
                err_free(why);
                free(url), free(host), free(origin);
                return -1;
        }
        bool to_get = (status == 303 && strcmp(t->method, "GET") != 0 && strcmp(t->method, "HEAD") != 0) ||
                      ((status == 301 || status == 302) && strcmp(t->method, "POST") == 0);
        if (check_dropped(t, url, host, origin, to_get, err) < 0) {
                free(url), free(host), free(origin);
                return -1;
        }
        if (to_get) {
                char *get = strdup("GET");
                if (!get) {
                        free(url), free(host), free(origin);
                        return err_setc(err, HTTP_E_INTERNAL, ENOMEM, "http: redirect");
                }
                free(t->method);
                t->method = get;
                free(t->body);
                t->body = NULL;
                t->body_len = 0;
                drop_headers(t, body_headers, sizeof(body_headers) / sizeof(body_headers[0]));
        }
        if (strcmp(origin, t->origin) != 0) {
                drop_headers(t, creds, sizeof(creds) / sizeof(creds[0]));
        }
        if (c->on_hop) {
                /* What this hop sends, what the redirect's body brought. */
                uint64_t sent = strlen(url) + t->body_len;
                for (size_t i = 0; i < t->nhdrs; i++)
                        sent += strlen(t->hdrs[i].name) + strlen(t->hdrs[i].value) + 4;
                if (c->on_hop(c->hook_arg, t->id, sent, t->res.body_len, &why) < 0) {
                        err_setc(err, err_code(why) ? err_code(why) : HTTP_E_REDIRECT, 0, "%s (redirect to %.400s)",
                                 why ? err_msg(why) : "http: redirect refused", url);
                        err_free(why);
                        free(url), free(host), free(origin);
                        return -1;
                }
        }
        free(t->url), free(t->host), free(t->origin);
        t->url = url, t->host = host, t->origin = origin;
        t->hops++;
        body_release(t);
        response_clear(&t->res);
        t->body_cap = t->hdr_bytes = t->res_hcap = 0;
        t->too_big = t->headers_too_big = t->in_body = t->over_inflight = false;
        t->refused = t->passed = 0;
        t->errbuf[0] = '\0';
        struct err *he = NULL;
        if (hop_setup(t, &he) == 0)
                return 0;
        if (err_code(he) == HTTP_E_SECRET || err_code(he) == HTTP_E_POLICY)
                /* on_header refused this hop: say it was a redirect's */
                err_setc(err, err_code(he), 0, "%s (redirect to %.400s)", err_msg(he), t->url);
        else
                *err = he, he = NULL;
        err_free(he);
        return -1;
}

static void finish(struct xfer *t, CURLcode rc)
{
        struct http_engine *e = t->e;
        curl_multi_remove_handle(e->multi, t->easy);
        if (t->head_sent) {
                /* A stream: what is buffered stays for its reads, and
                 * nothing else (a body nobody reads holds only its bytes). */
                if (rc != CURLE_OK)
                        t->end_err = transfer_error(t, rc);
                t->ended = true;
                stream_trim(t);
                xfer_unlink(t);
                t->next = e->ended;
                if (e->ended)
                        e->ended->prev = t;
                e->ended = t;
                stream_feed(t);
                return;
        }
        if (rc != CURLE_OK) {
                if (t->head_pending) {
                        /* The head was complete: it goes out as a stream's
                         * would have, and the error ends its body. */
                        head_out(t);
                        finish(t, rc);
                        return;
                }
                fail(t, transfer_error(t, rc));
                return;
        }
        long status = 0;
        char *location = NULL, *eff = NULL;
        curl_easy_getinfo(t->easy, CURLINFO_RESPONSE_CODE, &status);
        curl_easy_getinfo(t->easy, CURLINFO_REDIRECT_URL, &location);
        if (is_redirect(status) && location && t->redirect != HTTP_REDIRECT_MANUAL) {
                struct err *err = NULL;
                if (t->redirect == HTTP_REDIRECT_ERROR)
                        err_setc(&err, HTTP_E_REDIRECT, 0, "http: redirected to '%.200s' (redirect mode \"error\")",
                                 location);
                else if (t->hops >= HTTP_MAX_REDIRECTS)
                        err_setc(&err, HTTP_E_REDIRECT, 0, "http: too many redirects (more than %d)",
                                 HTTP_MAX_REDIRECTS);
                else if (next_hop(t, location, status, &err) == 0)
                        return;
                fail(t, err);
                return;
        }
        struct http_response *r = &t->res;
        curl_easy_getinfo(t->easy, CURLINFO_EFFECTIVE_URL, &eff);
        r->status = status;
        r->url = strdup(eff ? eff : t->url);
        r->redirected = t->hops > 0;
        if (!r->status_text)
                r->status_text = strdup("");
        if (!r->url || !r->status_text) {
                struct err *err = NULL;
                err_setc(&err, HTTP_E_INTERNAL, ENOMEM, "http: response");
                fail(t, err);
                return;
        }
        if (t->stream && r->body_len <= HTTP_INLINE_BODY) {
                /* Complete before its head went out: a small body comes
                 * with the head, as an unstreamed response (no http.read). */
                r->stream = false;
                deliver(t, r, NULL);
                return;
        }
        if (t->stream) {
                /* Complete before its head went out, and large (a redirect
                 * answered manually, no header block end seen): a stream. */
                head_out(t);
                finish(t, CURLE_OK);
                return;
        }
        deliver(t, r, NULL);
}

/* ---- streamed bodies ---- */

/* A stream whose transfer is over keeps its buffered bytes only: the easy
 * handle, the request and the head go, the buffer shrinks to its bytes. */
static void stream_trim(struct xfer *t)
{
        struct http_response *r = &t->res;
        curl_easy_cleanup(t->easy);
        t->easy = NULL;
        slist_wipe_free(t->slist);
        t->slist = NULL;
        free(t->body);
        t->body = NULL;
        t->body_len = 0;
        headers_free(t->hdrs, t->nhdrs);
        t->hdrs = NULL;
        t->nhdrs = 0;
        headers_free(r->headers, r->nheaders);
        r->headers = NULL;
        r->nheaders = 0;
        if (t->body_cap > r->body_len) {
                unsigned char *nb = NULL;
                if (r->body_len == 0)
                        free(r->body);
                else if (!(nb = realloc(r->body, r->body_len)))
                        return;
                r->body = nb;
                if (t->e->cfg.inflight)
                        *t->e->cfg.inflight -= t->body_cap - r->body_len;
                t->body_cap = r->body_len;
        }
}

/* The head of a stream, through done; the transfer goes on. */
static void head_out(struct xfer *t)
{
        struct http_response *r = &t->res;
        char *eff = NULL;
        long status = 0;
        curl_easy_getinfo(t->easy, CURLINFO_RESPONSE_CODE, &status);
        curl_easy_getinfo(t->easy, CURLINFO_EFFECTIVE_URL, &eff);
        r->status = status;
        free(r->url);
        r->url = strdup(eff ? eff : t->url);
        r->redirected = t->hops > 0;
        if (!r->status_text)
                r->status_text = strdup("");
        r->stream = true;
        t->head_sent = true;
        t->head_pending = false;
        size_t kept = r->body_len;
        t->streamed += kept;  /* what came before the head counts against the cap too */
        r->body_len = 0;  /* the head carries no body */
        t->done(t->arg, t->id, r, NULL);
        r->body_len = kept;
}

/* Take what a read gets now: the buffer, else the end. */
static void take(struct xfer *t, struct http_chunk *out)
{
        struct http_response *r = &t->res;
        *out = (struct http_chunk){ 0 };
        if (r->body_len > 0) {
                out->data = malloc(r->body_len);
                if (!out->data) {
                        err_setc(&out->err, HTTP_E_INTERNAL, ENOMEM, "http: stream");
                        return;
                }
                memcpy(out->data, r->body, r->body_len);
                out->len = r->body_len;
                r->body_len = 0;
                if (t->paused && !t->ended) {
                        t->paused = false;
                        curl_easy_pause(t->easy, CURLPAUSE_CONT);
                }
                /* The last piece of a complete body says so: one read less. */
                out->done = t->ended && !t->end_err;
                return;
        }
        if (t->end_err) {
                out->err = t->end_err;
                t->end_err = NULL;
        }
        out->done = out->err == NULL;
}

static void stream_free(struct xfer *t)
{
        struct http_engine *e = t->e;
        if (t->ended) {
                if (t->prev)
                        t->prev->next = t->next;
                else
                        e->ended = t->next;
                if (t->next)
                        t->next->prev = t->prev;
        } else {
                curl_multi_remove_handle(e->multi, t->easy);
                xfer_unlink(t);
        }
        xfer_free(t);
}

/* Something arrived (bytes, or the end): answer the read waiting, if any. */
static void stream_feed(struct xfer *t)
{
        if (!t->reading || (t->res.body_len == 0 && !t->ended))
                return;
        struct http_chunk c;
        take(t, &c);
        t->reading = false;
        bool over = c.done || c.err;
        uint64_t rid = t->read_id;
        http_read_fn fn = t->read_fn;
        void *arg = t->read_arg;
        if (over && t->ended)
                stream_free(t);
        fn(arg, rid, &c);
}

static struct xfer *find_stream(struct http_engine *e, uint64_t stream)
{
        for (struct xfer *t = e ? e->xfers : NULL; t; t = t->next)
                if (t->id == stream && t->head_sent)
                        return t;
        for (struct xfer *t = e ? e->ended : NULL; t; t = t->next)
                if (t->id == stream)
                        return t;
        return NULL;
}

int http_read(struct http_engine *e, uint64_t stream, uint64_t read_id, http_read_fn fn, void *arg,
              struct http_chunk *out, struct err **err)
{
        struct xfer *t = find_stream(e, stream);
        if (!t)
                return err_setc(err, HTTP_E_REQUEST, 0, "http.read: no open response body %llu",
                                (unsigned long long)stream);
        if (t->reading)
                return err_setc(err, HTTP_E_REQUEST, 0, "http.read: body %llu is being read already",
                                (unsigned long long)stream);
        if (t->res.body_len == 0 && !t->ended) {
                t->reading = true;
                t->read_id = read_id;
                t->read_fn = fn;
                t->read_arg = arg;
                return 1;
        }
        take(t, out);
        if (t->ended && (out->done || out->err))
                stream_free(t);
        return 0;
}

bool http_close(struct http_engine *e, uint64_t stream)
{
        struct xfer *t = find_stream(e, stream);
        if (!t)
                return false;
        bool reading = t->reading;
        uint64_t rid = t->read_id;
        http_read_fn fn = t->read_fn;
        void *arg = t->read_arg;
        stream_free(t);
        if (reading) {
                struct http_chunk c = { .done = true };
                fn(arg, rid, &c);
        }
        return true;
}

/* ---- the engine ---- */

int http_engine_new(const struct http_config *cfg, struct http_engine **ret, struct err **err)
{
        pthread_once(&global_once, global_init);
        if (global_rc != CURLE_OK)
                return err_setc(err, HTTP_E_INTERNAL, 0, "http: libcurl init: %s", curl_easy_strerror(global_rc));
        struct http_engine *e = calloc(1, sizeof(*e));
        if (!e)
                return err_setc(err, HTTP_E_INTERNAL, ENOMEM, "http: engine");
        if (cfg)
                e->cfg = *cfg;
        struct http_config *c = &e->cfg;
        if (c->connect_timeout_ms <= 0)
                c->connect_timeout_ms = HTTP_DEFAULT_CONNECT_TIMEOUT_MS;
        if (c->timeout_ms <= 0)
                c->timeout_ms = HTTP_DEFAULT_TIMEOUT_MS;
        if (c->max_response_bytes == 0)
                c->max_response_bytes = HTTP_DEFAULT_MAX_RESPONSE_BYTES;
        if (c->max_request_bytes == 0)
                c->max_request_bytes = HTTP_DEFAULT_MAX_REQUEST_BYTES;
        if (c->max_connections <= 0)
                c->max_connections = HTTP_DEFAULT_MAX_CONNECTIONS;
        if (!c->user_agent)
                c->user_agent = "chidori";
        e->timer_at = -1;
        e->multi = curl_multi_init();
        if (!e->multi) {
                free(e);
                return err_setc(err, HTTP_E_INTERNAL, 0, "http: curl_multi_init failed");
        }
        CURLMcode mc = CURLM_OK;
        if (mc == CURLM_OK)
                mc = curl_multi_setopt(e->multi, CURLMOPT_SOCKETFUNCTION, on_socket);
        if (mc == CURLM_OK)
                mc = curl_multi_setopt(e->multi, CURLMOPT_SOCKETDATA, e);
        if (mc == CURLM_OK)
                mc = curl_multi_setopt(e->multi, CURLMOPT_TIMERFUNCTION, on_timer);
        if (mc == CURLM_OK)
                mc = curl_multi_setopt(e->multi, CURLMOPT_TIMERDATA, e);
        if (mc == CURLM_OK)
                mc = curl_multi_setopt(e->multi, CURLMOPT_MAX_TOTAL_CONNECTIONS, c->max_connections);
        if (mc != CURLM_OK) {
                http_engine_free(e);
                return err_setc(err, HTTP_E_INTERNAL, 0, "http: configure multi: %s", curl_multi_strerror(mc));
        }
        *ret = e;
        return 0;
}

void http_engine_free(struct http_engine *e)
{
        if (!e)
                return;
        while (e->xfers) {
                struct xfer *t = e->xfers;
                curl_multi_remove_handle(e->multi, t->easy);
                xfer_unlink(t);
                xfer_free(t);
        }
        while (e->ended) {
                struct xfer *t = e->ended;
                e->ended = t->next;
                xfer_free(t);
        }
        curl_multi_cleanup(e->multi);
        free(e->socks);
        free(e);
}

static int copy_headers(const struct http_request *req, struct xfer *t)
{
        size_t cap = 0;
        for (size_t i = 0; i < req->nheaders; i++)
                if (header_push(&t->hdrs, &t->nhdrs, &cap, req->headers[i].name, strlen(req->headers[i].name),
                                req->headers[i].value, strlen(req->headers[i].value)) < 0)
                        return -1;
        return 0;
}

int http_start(struct http_engine *e, uint64_t id, const struct http_request *req, http_done_fn done, void *arg,
               struct err **err)
{
        if (!e || !req || !done)
                return err_setc(err, HTTP_E_INTERNAL, EINVAL, "http_start");
        struct xfer *t = calloc(1, sizeof(*t));
        if (!t)
                return err_setc(err, HTTP_E_INTERNAL, ENOMEM, "http: transfer");
        t->e = e;
        t->id = id;
        t->done = done;
        t->arg = arg;
        t->redirect = req->redirect;
        t->stream = req->stream;
        if (check_method(req->method, &t->method, err) < 0 || check_headers(req->headers, req->nheaders, err) < 0 ||
            check_url(req->url, &t->url, &t->host, &t->origin, err) < 0)
                goto fail;
        if (req->body_len && (!strcmp(t->method, "GET") || !strcmp(t->method, "HEAD"))) {
                err_setc(err, HTTP_E_REQUEST, 0, "http: a %s request cannot have a body", t->method);
                goto fail;
        }
        if (req->body_len > e->cfg.max_request_bytes) {
                err_setc(err, HTTP_E_REQUEST, 0, "http: request body of %zu bytes exceeds the %zu-byte limit",
                         req->body_len, e->cfg.max_request_bytes);
                goto fail;
        }
        if (req->body_len) {
                t->body = malloc(req->body_len);
                if (!t->body) {
                        err_setc(err, HTTP_E_INTERNAL, ENOMEM, "http: request body");
                        goto fail;
                }
                memcpy(t->body, req->body, req->body_len);
                t->body_len = req->body_len;
        }
        if (copy_headers(req, t) < 0) {
                err_setc(err, HTTP_E_INTERNAL, ENOMEM, "http: request headers");
                goto fail;
        }
        t->easy = curl_easy_init();
        if (!t->easy) {
                err_setc(err, HTTP_E_INTERNAL, 0, "http: curl_easy_init failed");
                goto fail;
        }
        t->deadline = mono_ms() + (double)e->cfg.timeout_ms;
        if (hop_setup(t, err) < 0)
                goto fail;
        t->next = e->xfers;
        if (e->xfers)
                e->xfers->prev = t;
        e->xfers = t;
        e->pending++;
        return 0;
fail:
        xfer_free(t);
        return -1;
}

bool http_cancel(struct http_engine *e, uint64_t id)
{
        for (struct xfer *t = e ? e->xfers : NULL; t; t = t->next) {
                if (t->id != id)
                        continue;
                curl_multi_remove_handle(e->multi, t->easy);
                xfer_unlink(t);
                xfer_free(t);
                return true;
        }
        struct xfer *st = find_stream(e, id);
        if (st) {
                stream_free(st);
                return true;
        }
        for (int pass = 0; e && pass < 2; pass++)
                for (struct xfer *t = pass ? e->ended : e->xfers; t; t = t->next)
                        if (t->reading && t->read_id == id) {
                                t->reading = false;
                                return true;
                        }
        return false;
}

size_t http_pending(const struct http_engine *e)
{
        return e ? e->pending : 0;
}

size_t http_fds(struct http_engine *e, struct pollfd *fds, size_t max, int *timeout_ms)
{
        for (size_t i = 0; i < e->nsocks && i < max; i++) {
                fds[i].fd = e->socks[i].fd;
                fds[i].events = (short)(((e->socks[i].what & CURL_POLL_IN) ? POLLIN : 0) |
                                        ((e->socks[i].what & CURL_POLL_OUT) ? POLLOUT : 0));
                fds[i].revents = 0;
        }
        if (e->timer_at >= 0 && timeout_ms) {
                long left = ms_until(e->timer_at);
                int ms = left > INT_MAX ? INT_MAX : (int)left;
                if (*timeout_ms < 0 || ms < *timeout_ms)
                        *timeout_ms = ms;
        }
        return e->nsocks;
}

static bool ours(const struct http_engine *e, int fd)
{
        for (size_t i = 0; i < e->nsocks; i++)
                if (e->socks[i].fd == fd)
                        return true;
        return false;
}

static int act(struct http_engine *e, curl_socket_t fd, int ev, struct err **err)
{
        int running = 0;
        CURLMcode mc = curl_multi_socket_action(e->multi, fd, ev, &running);
        if (mc != CURLM_OK)
                return err_setc(err, HTTP_E_INTERNAL, 0, "http: curl_multi_socket_action: %s",
                                curl_multi_strerror(mc));
        return 0;
}

/* The transfers libcurl says are over. */
static void reap(struct http_engine *e)
{
        CURLMsg *m;
        int q;
        while ((m = curl_multi_info_read(e->multi, &q))) {
                if (m->msg != CURLMSG_DONE)
                        continue;
                struct xfer *t = NULL;
                CURLcode rc = m->data.result;
                curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&t);
                if (t)
                        finish(t, rc);
        }
}

static bool head_waiting(const struct http_engine *e)
{
        for (const struct xfer *t = e->xfers; t; t = t->next)
                if (t->head_pending && !t->head_sent)
                        return true;
        return false;
}

/* What is readable now, without waiting (fds NULL: every socket of ours). */
static int act_ready(struct http_engine *e, const struct pollfd *fds, size_t nfds, struct err **err)
{
        int r = 0;
        struct pollfd *own = NULL;
        if (!fds && e->nsocks) {
                own = calloc(e->nsocks, sizeof(*own));
                if (!own)
                        return err_setc(err, HTTP_E_INTERNAL, ENOMEM, "http_perform");
                nfds = http_fds(e, own, e->nsocks, NULL);
                if (poll(own, (nfds_t)nfds, 0) < 0)
                        nfds = 0;
                fds = own;
        }
        for (size_t i = 0; fds && i < nfds && r == 0; i++) {
                short re = fds[i].revents;
                if (!re || fds[i].fd < 0 || !ours(e, fds[i].fd))
                        continue;
                int ev = ((re & (POLLIN | POLLHUP)) ? CURL_CSELECT_IN : 0) | ((re & POLLOUT) ? CURL_CSELECT_OUT : 0) |
                         ((re & (POLLERR | POLLNVAL)) ? CURL_CSELECT_ERR : 0);
                r = act(e, fds[i].fd, ev, err);
        }
        free(own);
        return r;
}

int http_perform(struct http_engine *e, const struct pollfd *fds, size_t nfds, struct err **err)
{
        if (e->in_perform)
                return err_setc(err, HTTP_E_INTERNAL, EBUSY, "http_perform called from a completion callback");
        e->in_perform = true;
        int r = act_ready(e, fds, nfds, err);
        if (r == 0 && e->timer_at >= 0 && mono_ms() >= e->timer_at) {
                e->timer_at = -1;
                r = act(e, CURL_SOCKET_TIMEOUT, 0, err);
        }
        reap(e);
        /* A head complete in this pass whose body is not all in: the body
         * may have arrived while the head was parsed (a server that writes
         * them apart); one more look, without waiting, then the head goes. */
        if (r == 0 && head_waiting(e)) {
                r = act_ready(e, NULL, 0, err);
                reap(e);
        }
        /* The heads completed in this pass whose body has not all arrived:
         * they go out now, their bodies streamed.  Looked up afresh after
         * each (a completion callback may start or cancel transfers). */
        for (;;) {
                struct xfer *t = e->xfers;
                while (t && !(t->head_pending && !t->head_sent))
                        t = t->next;
                if (!t)
                        break;
                head_out(t);
        }
        e->in_perform = false;
        return r;
}

/* ---- JSON ---- */

/* Header names and values are byte strings.  JSON carries text, so, as
 * fetch does, bytes map one to one onto U+0000..U+00FF ("isomorphic"
 * encoding): a code point above U+00FF cannot be sent, and a byte above
 * 0x7F received becomes that code point in UTF-8. */
static int iso_encode(const char *in, char **ret)
{
        size_t n = strlen(in);
        char *out = malloc(n + 1), *o = out;
        if (!out)
                return -ENOMEM;
        for (const unsigned char *p = (const unsigned char *)in; *p;) {
                if (*p < 0x80) {
                        *o++ = (char)*p++;
                } else if ((p[0] & 0xe0) == 0xc0 && (p[1] & 0xc0) == 0x80 && p[0] <= 0xc3 && p[0] >= 0xc2) {
                        *o++ = (char)(((p[0] & 0x1f) << 6) | (p[1] & 0x3f));
                        p += 2;
                } else {
                        free(out);
                        return -EINVAL;
                }
        }
        *o = '\0';
        *ret = out;
        return 0;
}

static char *iso_decode(const char *in)
{
        size_t n = strlen(in);
        char *out = malloc(2 * n + 1), *o = out;
        if (!out)
                return NULL;
        for (const unsigned char *p = (const unsigned char *)in; *p; p++) {
                if (*p < 0x80) {
                        *o++ = (char)*p;
                } else {
                        *o++ = (char)(0xc0 | (*p >> 6));
                        *o++ = (char)(0x80 | (*p & 0x3f));
                }
        }
        *o = '\0';
        return out;
}

/* A URL with any byte above 0x7F percent-encoded (a raw Location header
 * may carry them); always valid UTF-8. */
static char *url_ascii(const char *in)
{
        size_t n = strlen(in);
        char *out = malloc(3 * n + 1), *o = out;
        if (!out)
                return NULL;
        for (const unsigned char *p = (const unsigned char *)in; *p; p++) {
                if (*p < 0x80) {
                        *o++ = (char)*p;
                } else {
                        static const char hex[] = "0123456789ABCDEF";
                        *o++ = '%';
                        *o++ = hex[*p >> 4];
                        *o++ = hex[*p & 15];
                }
        }
        *o = '\0';
        return out;
}

void http_request_free(struct http_request *req)
{
        if (!req)
                return;
        free(req->url);
        free(req->method);
        headers_free(req->headers, req->nheaders);
        free(req->body);
        free(req);
}

/* The request's headers from `list` ([name, value] string pairs, or NULL):
 * -1 with *err set (HTTP_E_REQUEST for a bad pair, HTTP_E_INTERNAL out of
 * memory). */
static int request_headers(struct http_request *r, const cJSON *list, struct err **err)
{
        size_t cap = 0;
        const cJSON *h;
        cJSON_ArrayForEach(h, list)
        {
                const cJSON *k = cJSON_GetArrayItem(h, 0), *v = cJSON_GetArrayItem(h, 1);
                if (!cJSON_IsArray(h) || cJSON_GetArraySize(h) != 2 || !cJSON_IsString(k) || !cJSON_IsString(v))
                        return err_setc(err, HTTP_E_REQUEST, 0,
                                        "http: 'headers' must be an array of [name, value] string pairs");
                if (r->nheaders >= HEADERS_MAX)
                        return err_setc(err, HTTP_E_REQUEST, 0, "http: more than %d request headers", HEADERS_MAX);
                char *kb = NULL, *vb = NULL;
                int ek = iso_encode(k->valuestring, &kb), ev = ek < 0 ? ek : iso_encode(v->valuestring, &vb);
                if (ek == -EINVAL || ev == -EINVAL) {
                        free(kb);
                        return err_setc(err, HTTP_E_REQUEST, 0,
                                        "http: header '%.64s' has characters above U+00FF", k->valuestring);
                }
                int pushed = ek < 0 || ev < 0 ? -1
                                              : header_push(&r->headers, &r->nheaders, &cap, kb, strlen(kb), vb,
                                                            strlen(vb));
                free(kb);
                free(vb);
                if (pushed < 0)
                        return err_setc(err, HTTP_E_INTERNAL, ENOMEM, "http: request");
        }
        return 0;
}

int http_request_from_json(const cJSON *args, struct http_request **ret, struct err **err)
{
        if (!cJSON_IsObject(args))
                return err_setc(err, HTTP_E_REQUEST, 0, "http: arguments must be an object");
        const cJSON *url = cJSON_GetObjectItemCaseSensitive(args, "url");
        const cJSON *method = cJSON_GetObjectItemCaseSensitive(args, "method");
        const cJSON *headers = cJSON_GetObjectItemCaseSensitive(args, "headers");
        const cJSON *body = cJSON_GetObjectItemCaseSensitive(args, "body_base64");
        const cJSON *redirect = cJSON_GetObjectItemCaseSensitive(args, "redirect");
        const cJSON *stream = cJSON_GetObjectItemCaseSensitive(args, "stream");
        if (stream && !cJSON_IsBool(stream))
                return err_setc(err, HTTP_E_REQUEST, 0, "http: 'stream' must be a boolean");
        if (!cJSON_IsString(url))
                return err_setc(err, HTTP_E_REQUEST, 0, "http: 'url' must be a string");
        if (method && !cJSON_IsNull(method) && !cJSON_IsString(method))
                return err_setc(err, HTTP_E_REQUEST, 0, "http: 'method' must be a string");
        if (headers && !cJSON_IsNull(headers) && !cJSON_IsArray(headers))
                return err_setc(err, HTTP_E_REQUEST, 0, "http: 'headers' must be an array of [name, value] pairs");
        if (body && !cJSON_IsNull(body) && !cJSON_IsString(body))
                return err_setc(err, HTTP_E_REQUEST, 0, "http: 'body_base64' must be a string");
        enum http_redirect mode = HTTP_REDIRECT_FOLLOW;
        if (redirect && !cJSON_IsNull(redirect)) {
                const char *m = cJSON_IsString(redirect) ? redirect->valuestring : "";
                if (!strcmp(m, "follow"))
                        mode = HTTP_REDIRECT_FOLLOW;
                else if (!strcmp(m, "error"))
                        mode = HTTP_REDIRECT_ERROR;
                else if (!strcmp(m, "manual"))
                        mode = HTTP_REDIRECT_MANUAL;
                else
                        return err_setc(err, HTTP_E_REQUEST, 0,
                                        "http: 'redirect' must be \"follow\", \"error\" or \"manual\"");
        }
        struct http_request *r = calloc(1, sizeof(*r));
        if (!r)
                return err_setc(err, HTTP_E_INTERNAL, ENOMEM, "http: request");
        r->redirect = mode;
        r->stream = cJSON_IsTrue(stream);
        r->url = strdup(url->valuestring);
        if (!r->url)
                goto oom;
        if (cJSON_IsString(method) && !(r->method = strdup(method->valuestring)))
                goto oom;
        if (request_headers(r, cJSON_IsArray(headers) ? headers : NULL, err) < 0) {
                http_request_free(r);
                return -1;
        }
        if (cJSON_IsString(body) && body->valuestring[0]) {
                if (base64_decode(body->valuestring, strlen(body->valuestring), &r->body, &r->body_len) < 0) {
                        http_request_free(r);
                        return err_setc(err, HTTP_E_REQUEST, 0, "http: 'body_base64' is not valid base64");
                }
                if (r->body_len == 0) {
                        free(r->body);
                        r->body = NULL;
                }
        }
        *ret = r;
        return 0;
oom:
        http_request_free(r);
        return err_setc(err, HTTP_E_INTERNAL, ENOMEM, "http: request");
}

cJSON *http_response_to_json(const struct http_response *res)
{
        cJSON *o = cJSON_CreateObject();
        if (!o)
                return NULL;
        char *b64 = base64_encode(res->body ? res->body : (const unsigned char *)"", res->body_len);
        char *text = iso_decode(res->status_text ? res->status_text : "");
        char *url = url_ascii(res->url ? res->url : "");
        cJSON *hs = cJSON_AddArrayToObject(o, "headers");
        bool ok = b64 && text && url && hs && cJSON_AddNumberToObject(o, "status", (double)res->status) &&
                  cJSON_AddStringToObject(o, "statusText", text) && cJSON_AddStringToObject(o, "url", url) &&
                  cJSON_AddBoolToObject(o, "redirected", res->redirected) &&
                  (res->stream || cJSON_AddStringToObject(o, "body_base64", b64));
        for (size_t i = 0; ok && i < res->nheaders; i++) {
                cJSON *pair = cJSON_CreateArray();
                ok = pair && cJSON_AddItemToArray(hs, pair);
                if (!ok) {
                        cJSON_Delete(pair);
                        break;
                }
                char *kt = iso_decode(res->headers[i].name), *vt = iso_decode(res->headers[i].value);
                cJSON *k = kt ? cJSON_CreateString(kt) : NULL, *v = vt ? cJSON_CreateString(vt) : NULL;
                free(kt);
                free(vt);
                ok = k && v && cJSON_AddItemToArray(pair, k);
                if (!ok) {
                        cJSON_Delete(k);
                        cJSON_Delete(v);
                        break;
                }
                ok = cJSON_AddItemToArray(pair, v);
                if (!ok)
                        cJSON_Delete(v);
        }
        free(b64);
        free(text);
        free(url);
        if (!ok) {
                cJSON_Delete(o);
                return NULL;
        }
        return o;
}
