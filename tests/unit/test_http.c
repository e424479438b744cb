/* tests/unit/test_http.c — effects/net/http.c against a tiny HTTP/1.1 server run
 * by this test (one thread per connection) on 127.0.0.1 and 127.0.0.2, same
 * ephemeral port.  No traffic goes anywhere else: refusals are proven by the
 * server's accept counters staying where they were — the guard refuses
 * before connect(), so a refused request never reaches the listener.
 *
 * Routes: /hello (1 KiB, fixed header order), /big (20 MiB; ?nolen=1 without
 * Content-Length), /slow?ms=N (default 50), /hang, /redirect-to?u=URL&status=N,
 * /loop, /echo (body back; request headers as X-Req lines, method as
 * X-Method), /status?code=N, /gzip (gzip-encoded body).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <cjson/cJSON.h>

#include "common/err.h"
#include "common/util.h"
#include "effects/net/http.h"
#include "effects/net/ssrf.h"

/* ================= the test server ================= */

struct srv {
        int lfd[2];  /* 127.0.0.1:port, 127.0.0.2:port (-1 if none) */
        int port;
        int stop[2];
        pthread_t th;
        bool recorder;        /* count and hang up, never answer */
        atomic_int hits[2];   /* accepted connections per listener */
        atomic_int requests;  /* requests parsed */
        atomic_int active;    /* connection threads alive */
        pthread_mutex_t mu;   /* guards live[] */
        int live[1024];       /* open connection fds, -1 = free slot */
};

/* Track open connections so srv_stop can shut down what a failed test left
 * open (a leaked engine's keep-alive connection would block the join). */
static void conn_remember(struct srv *s, int fd)
{
        pthread_mutex_lock(&s->mu);
        for (size_t i = 0; i < sizeof(s->live) / sizeof(s->live[0]); i++)
                if (s->live[i] < 0) {
                        s->live[i] = fd;
                        break;
                }
        pthread_mutex_unlock(&s->mu);
}

static void conn_forget(struct srv *s, int fd)
{
        pthread_mutex_lock(&s->mu);
        for (size_t i = 0; i < sizeof(s->live) / sizeof(s->live[0]); i++)
                if (s->live[i] == fd)
                        s->live[i] = -1;
        pthread_mutex_unlock(&s->mu);
}

struct conn {
        struct srv *s;
        int fd;
        char *buf;
        size_t len, cap;
};

struct hreq {
        char method[16];
        char path[4096];
        char *query;  /* into path, after '?', or "" */
        char *head;   /* header lines, NUL-terminated */
        unsigned char *body;
        size_t body_len;
        bool close;
};

static const unsigned char gzip_blob[] = {
        0x1f, 0x8b, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0xff, 0xcb, 0x48, 0xcd, 0xc9, 0xc9,
        0x57, 0x48, 0xaf, 0xca, 0x2c, 0xd0, 0x51, 0x48, 0x49, 0x4d, 0xce, 0x4f, 0x49, 0x4d, 0x51,
        0x48, 0xaa, 0x54, 0xc8, 0xc9, 0x4c, 0x4a, 0x2e, 0x2d, 0xca, 0xe1, 0xca, 0x18, 0x95, 0x1e,
        0x95, 0xa6, 0x96, 0x34, 0x00, 0x3e, 0x21, 0x71, 0xae, 0x6c, 0x02, 0x00, 0x00,
};
#define GZIP_PLAIN "hello gzip, decoded by libcurl\n"
#define GZIP_PLAIN_LEN (31 * 20)

static double now_ms(void)
{
        return mono_ms();
}

static int send_all(int fd, const void *p, size_t n)
{
        const char *c = p;
        while (n) {
                ssize_t w = send(fd, c, n, MSG_NOSIGNAL);
                if (w < 0 && errno == EINTR)
                        continue;
                if (w <= 0)
                        return -1;
                c += w;
                n -= (size_t)w;
        }
        return 0;
}

static int fill(struct conn *c)
{
        if (c->len == c->cap) {
                size_t cap = c->cap ? c->cap * 2 : 8192;
                char *nb = realloc(c->buf, cap + 1);
                if (!nb)
                        return -1;
                c->buf = nb;
                c->cap = cap;
        }
        ssize_t r = recv(c->fd, c->buf + c->len, c->cap - c->len, 0);
        if (r <= 0)
                return -1;
        c->len += (size_t)r;
        c->buf[c->len] = '\0';
        return 0;
}

static const char *hdr_get(const struct hreq *r, const char *name)
{
        static __thread char val[1024];
        size_t nl = strlen(name);
        for (const char *p = r->head; *p;) {
                const char *eol = strstr(p, "\r\n");
                if (!eol)
                        break;
                if ((size_t)(eol - p) > nl && strncasecmp(p, name, nl) == 0 && p[nl] == ':') {
                        const char *v = p + nl + 1;
                        while (*v == ' ')
                                v++;
                        snprintf(val, sizeof(val), "%.*s", (int)(eol - v), v);
                        return val;
                }
                p = eol + 2;
        }
        return NULL;
}

static int read_request(struct conn *c, struct hreq *r)
{
        memset(r, 0, sizeof(*r));
        char *end;
        while (!c->buf || !(end = strstr(c->buf, "\r\n\r\n"))) {
                if (c->len > 65536 || fill(c) < 0)
                        return -1;
        }
        size_t head_len = (size_t)(end - c->buf) + 4;
        char *line_end = strstr(c->buf, "\r\n");
        *line_end = '\0';
        if (sscanf(c->buf, "%15s %4095s", r->method, r->path) != 2)
                return -1;
        char *q = strchr(r->path, '?');
        if (q)
                *q++ = '\0';
        r->query = q ? q : r->path + strlen(r->path);
        r->head = strndup(line_end + 2, head_len - (size_t)(line_end + 2 - c->buf));
        const char *cl = hdr_get(r, "Content-Length");
        size_t blen = cl ? strtoul(cl, NULL, 10) : 0;
        const char *conn = hdr_get(r, "Connection");
        r->close = conn && strcasecmp(conn, "close") == 0;
        while (c->len < head_len + blen)
                if (fill(c) < 0) {
                        free(r->head);
                        return -1;
                }
        r->body = malloc(blen ? blen : 1);
        memcpy(r->body, c->buf + head_len, blen);
        r->body_len = blen;
        memmove(c->buf, c->buf + head_len + blen, c->len - head_len - blen);
        c->len -= head_len + blen;
        c->buf[c->len] = '\0';
        return 0;
}

static const char *qparam(const char *query, const char *name, char *out, size_t outlen)
{
        size_t nl = strlen(name);
        for (const char *p = query; p && *p;) {
                const char *amp = strchr(p, '&');
                size_t len = amp ? (size_t)(amp - p) : strlen(p);
                if (len > nl && strncmp(p, name, nl) == 0 && p[nl] == '=') {
                        size_t o = 0;
                        for (size_t i = nl + 1; i < len && o + 1 < outlen; i++) {
                                if (p[i] == '%' && i + 2 < len) {
                                        char hx[3] = { p[i + 1], p[i + 2], 0 };
                                        out[o++] = (char)strtol(hx, NULL, 16);
                                        i += 2;
                                } else {
                                        out[o++] = p[i];
                                }
                        }
                        out[o] = '\0';
                        return out;
                }
                p = amp ? amp + 1 : NULL;
        }
        return NULL;
}

static const char *reason(int code)
{
        switch (code) {
        case 200: return "OK";
        case 301: return "Moved Permanently";
        case 302: return "Found";
        case 303: return "See Other";
        case 307: return "Temporary Redirect";
        case 308: return "Permanent Redirect";
        case 404: return "Not Found";
        default: return "Custom Reason";
        }
}

/* Header lines (each ending \r\n) then the body. */
static int respond(int fd, int code, const char *extra, const void *body, size_t len, bool with_len)
{
        char *head = NULL;
        int n = with_len ? asprintf(&head, "HTTP/1.1 %d %s\r\nContent-Length: %zu\r\n%s\r\n", code, reason(code), len,
                                    extra ? extra : "")
                         : asprintf(&head, "HTTP/1.1 %d %s\r\nConnection: close\r\n%s\r\n", code, reason(code),
                                    extra ? extra : "");
        if (n < 0)
                return -1;
        int r = send_all(fd, head, (size_t)n);
        free(head);
        if (r == 0 && len)
                r = send_all(fd, body, len);
        return r;
}

/* Wait `ms`, or less if the client hangs up. */
static void wait_or_hangup(int fd, int ms)
{
        double end = now_ms() + ms;
        for (;;) {
                int left = (int)(end - now_ms());
                if (left <= 0)
                        return;
                struct pollfd p = { .fd = fd, .events = POLLIN | POLLRDHUP };
                int k = poll(&p, 1, left);
                if (k > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR)))
                        return;
                if (k > 0 && (p.revents & POLLIN)) {
                        char b;
                        if (recv(fd, &b, 1, MSG_PEEK) <= 0)
                                return;
                        usleep(1000);
                }
        }
}

/* Returns false when the connection must close. */
static bool route(struct conn *c, struct hreq *r)
{
        char v[4096];
        int fd = c->fd;
        if (!strcmp(r->path, "/hello")) {
                char body[1024];
                for (size_t i = 0; i < sizeof(body); i++)
                        body[i] = "hello world\n"[i % 12];
                return respond(fd, 200,
                               "Content-Type: text/plain\r\nX-B: 2\r\nX-A: 1\r\nSet-Cookie: a=1\r\nX-C: 3\r\n"
                               "Set-Cookie: b=2\r\nX-Folded: one\r\n two\r\n",
                               body, sizeof(body), true) == 0;
        }
        if (!strcmp(r->path, "/big")) {
                /* 20 MiB: with Content-Length, or (?nolen=1) delimited by close */
                unsigned total = 20u << 20;
                bool nolen = qparam(r->query, "nolen", v, sizeof(v)) != NULL;
                char head[128];
                int n = nolen ? snprintf(head, sizeof(head), "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n")
                              : snprintf(head, sizeof(head), "HTTP/1.1 200 OK\r\nContent-Length: %u\r\n\r\n", total);
                if (send_all(fd, head, (size_t)n) < 0 || !strcmp(r->method, "HEAD"))
                        return false;
                static const char chunk[65536];
                for (unsigned sent = 0; sent < total; sent += sizeof(chunk))
                        if (send_all(fd, chunk, sizeof(chunk)) < 0)
                                break;
                return false;
        }
        if (!strcmp(r->path, "/slow")) {
                int ms = qparam(r->query, "ms", v, sizeof(v)) ? (int)strtol(v, NULL, 10) : 50;
                wait_or_hangup(fd, ms);
                return respond(fd, 200, NULL, "slow", 4, true) == 0;
        }
        if (!strcmp(r->path, "/hang")) {
                wait_or_hangup(fd, 10000);
                return false;
        }
        if (!strcmp(r->path, "/redirect-to")) {
                int code = qparam(r->query, "status", v, sizeof(v)) ? (int)strtol(v, NULL, 10) : 302;
                char u[4096], *extra = NULL;
                if (!qparam(r->query, "u", u, sizeof(u)))
                        return respond(fd, 404, NULL, NULL, 0, true) == 0;
                if (asprintf(&extra, "Location: %s\r\n", u) < 0)
                        return false;
                int k = respond(fd, code, extra, "redirecting", 11, true);
                free(extra);
                return k == 0;
        }
        if (!strcmp(r->path, "/loop"))
                return respond(fd, 302, "Location: /loop\r\n", NULL, 0, true) == 0;
        if (!strcmp(r->path, "/echo")) {
                size_t cap = strlen(r->head) * 2 + 256;
                char *extra = calloc(1, cap);
                size_t o = (size_t)snprintf(extra, cap, "X-Method: %s\r\n", r->method);
                for (const char *p = r->head; *p;) {
                        const char *eol = strstr(p, "\r\n");
                        if (!eol || eol == p)
                                break;
                        o += (size_t)snprintf(extra + o, cap - o, "X-Req: %.*s\r\n", (int)(eol - p), p);
                        p = eol + 2;
                }
                int k = respond(fd, 200, extra, r->body, r->body_len, true);
                free(extra);
                return k == 0;
        }
        if (!strcmp(r->path, "/status")) {
                int code = qparam(r->query, "code", v, sizeof(v)) ? (int)strtol(v, NULL, 10) : 200;
                return respond(fd, code, NULL, NULL, 0, true) == 0;
        }
        if (!strcmp(r->path, "/gzip"))
                return respond(fd, 200, "Content-Encoding: gzip\r\nContent-Type: text/plain\r\n", gzip_blob,
                               sizeof(gzip_blob), true) == 0;
        return respond(fd, 404, NULL, "no such route", 13, true) == 0;
}

static void *conn_main(void *p)
{
        struct conn *c = p;
        struct srv *s = c->s;
        struct timeval tv = { .tv_sec = 15 };
        setsockopt(c->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
        if (!s->recorder) {
                for (;;) {
                        struct hreq r;
                        if (read_request(c, &r) < 0)
                                break;
                        atomic_fetch_add(&s->requests, 1);
                        bool keep = route(c, &r) && !r.close;
                        free(r.head);
                        free(r.body);
                        if (!keep)
                                break;
                }
        }
        conn_forget(s, c->fd);
        close(c->fd);
        free(c->buf);
        free(c);
        atomic_fetch_sub(&s->active, 1);
        return NULL;
}

static void *accept_main(void *p)
{
        struct srv *s = p;
        for (;;) {
                struct pollfd pf[3] = {
                        { .fd = s->stop[0], .events = POLLIN },
                        { .fd = s->lfd[0], .events = POLLIN },
                        { .fd = s->lfd[1], .events = POLLIN },
                };
                if (poll(pf, 3, -1) < 0 && errno != EINTR)
                        break;
                if (pf[0].revents)
                        break;
                for (int i = 0; i < 2; i++) {
                        if (!(pf[i + 1].revents & POLLIN))
                                continue;
                        int fd = accept4(s->lfd[i], NULL, NULL, SOCK_CLOEXEC);
                        if (fd < 0)
                                continue;
                        atomic_fetch_add(&s->hits[i], 1);
                        conn_remember(s, fd);
                        struct conn *c = calloc(1, sizeof(*c));
                        c->s = s;
                        c->fd = fd;
                        atomic_fetch_add(&s->active, 1);
                        pthread_t th;
                        pthread_attr_t at;
                        pthread_attr_init(&at);
                        pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
                        pthread_attr_setstacksize(&at, 256 * 1024);
                        if (pthread_create(&th, &at, conn_main, c) != 0) {
                                conn_forget(s, fd);
                                close(fd);
                                free(c);
                                atomic_fetch_sub(&s->active, 1);
                        }
                        pthread_attr_destroy(&at);
                }
        }
        return NULL;
}

static int listen_on(const char *ip, int port, int backlog)
{
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        int one = 1;
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
        struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
        inet_pton(AF_INET, ip, &a.sin_addr);
        if (bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(fd, backlog) < 0) {
                close(fd);
                return -1;
        }
        return fd;
}

static int port_of_fd(int fd)
{
        struct sockaddr_in a;
        socklen_t l = sizeof(a);
        getsockname(fd, (struct sockaddr *)&a, &l);
        return ntohs(a.sin_port);
}

static struct srv *srv_start(bool second, bool recorder)
{
        struct srv *s = calloc(1, sizeof(*s));
        s->recorder = recorder;
        s->lfd[1] = -1;
        pthread_mutex_init(&s->mu, NULL);
        for (size_t i = 0; i < sizeof(s->live) / sizeof(s->live[0]); i++)
                s->live[i] = -1;
        for (int tries = 0; tries < 20; tries++) {
                s->lfd[0] = listen_on("127.0.0.1", 0, 512);
                assert_true(s->lfd[0] >= 0);
                s->port = port_of_fd(s->lfd[0]);
                if (!second)
                        break;
                s->lfd[1] = listen_on("127.0.0.2", s->port, 512);
                if (s->lfd[1] >= 0)
                        break;
                close(s->lfd[0]);
        }
        assert_true(!second || s->lfd[1] >= 0);
        assert_int_equal(pipe2(s->stop, O_CLOEXEC), 0);
        assert_int_equal(pthread_create(&s->th, NULL, accept_main, s), 0);
        return s;
}

static void srv_stop(struct srv *s)
{
        if (!s)
                return;
        assert_int_equal(write(s->stop[1], "x", 1), 1);
        pthread_join(s->th, NULL);
        close(s->lfd[0]);
        if (s->lfd[1] >= 0)
                close(s->lfd[1]);
        close(s->stop[0]);
        close(s->stop[1]);
        pthread_mutex_lock(&s->mu);
        for (size_t i = 0; i < sizeof(s->live) / sizeof(s->live[0]); i++)
                if (s->live[i] >= 0)
                        shutdown(s->live[i], SHUT_RDWR);
        pthread_mutex_unlock(&s->mu);
        for (int i = 0; i < 2000 && atomic_load(&s->active) > 0; i++)
                usleep(5000);
        assert_int_equal(atomic_load(&s->active), 0);
        pthread_mutex_destroy(&s->mu);
        free(s);
}

static int total_hits(struct srv *s)
{
        return atomic_load(&s->hits[0]) + atomic_load(&s->hits[1]);
}

/* ================= client side helpers ================= */

static struct srv *S;  /* the group's server: 127.0.0.1:port and 127.0.0.2:port */

struct result {
        int calls;
        uint64_t id;
        long status;
        char *status_text, *url;
        bool redirected;
        struct http_header *h;
        size_t nh;
        unsigned char *body;
        size_t len;
        char *err;
        int code;
        double at;  /* completion time */
};

static void result_clear(struct result *r)
{
        free(r->status_text);
        free(r->url);
        for (size_t i = 0; i < r->nh; i++) {
                free(r->h[i].name);
                free(r->h[i].value);
        }
        free(r->h);
        free(r->body);
        free(r->err);
        memset(r, 0, sizeof(*r));
}

static void on_done(void *arg, uint64_t id, const struct http_response *res, const struct err *err)
{
        struct result *r = arg;
        r->calls++;
        r->id = id;
        r->at = now_ms();
        assert_true((res == NULL) != (err == NULL));
        if (err) {
                r->err = strdup(err_msg(err));
                r->code = err_code(err);
                return;
        }
        r->status = res->status;
        r->status_text = strdup(res->status_text);
        r->url = strdup(res->url);
        r->redirected = res->redirected;
        r->nh = res->nheaders;
        r->h = calloc(res->nheaders + 1, sizeof(*r->h));
        for (size_t i = 0; i < res->nheaders; i++) {
                r->h[i].name = strdup(res->headers[i].name);
                r->h[i].value = strdup(res->headers[i].value);
        }
        r->len = res->body_len;
        r->body = malloc(res->body_len + 1);
        if (res->body_len)
                memcpy(r->body, res->body, res->body_len);
        r->body[res->body_len] = '\0';
}

static const char *rhdr(const struct result *r, const char *name)
{
        for (size_t i = 0; i < r->nh; i++)
                if (strcasecmp(r->h[i].name, name) == 0)
                        return r->h[i].value;
        return NULL;
}

/* The broker's loop in miniature: our own fds (none) + the engine's. */
static void run_until_idle(struct http_engine *e, int max_ms)
{
        double end = now_ms() + max_ms;
        struct pollfd pfd[512];
        while (http_pending(e)) {
                int timeout = (int)(end - now_ms());
                if (timeout <= 0)
                        fail_msg("transfers still pending after %d ms", max_ms);
                size_t n = http_fds(e, pfd, 512, &timeout);
                assert_true(n <= 512);
                if (poll(pfd, n, timeout) < 0 && errno != EINTR)
                        fail_msg("poll: %s", strerror(errno));
                struct err *err = NULL;
                if (http_perform(e, pfd, n, &err) < 0)
                        fail_msg("perform: %s", err_msg(err));
        }
}

static struct http_engine *engine(const char *allow_spec, struct ssrf_allow **ret_allow, const struct http_config *base)
{
        struct err *err = NULL;
        struct ssrf_allow *a = NULL;
        if (ssrf_allow_parse(allow_spec, &a, &err) < 0)
                fail_msg("allow: %s", err_msg(err));
        struct http_config cfg = { 0 };
        if (base)
                cfg = *base;
        cfg.allow = a;
        struct http_engine *e = NULL;
        if (http_engine_new(&cfg, &e, &err) < 0)
                fail_msg("engine: %s", err_msg(err));
        *ret_allow = a;
        return e;
}

static char *url_of(const char *host, const char *path)
{
        char *u = NULL;
        assert_true(asprintf(&u, "http://%s:%d%s", host, S->port, path) > 0);
        return u;
}

static void pct(const char *in, char *out, size_t len)
{
        size_t o = 0;
        for (; *in && o + 4 < len; in++) {
                unsigned char c = (unsigned char)*in;
                if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || strchr("-._~", c))
                        out[o++] = (char)c;
                else
                        o += (size_t)snprintf(out + o, len - o, "%%%02X", c);
        }
        out[o] = '\0';
}

/* Start one request and run it to completion.  Returns http_start's result;
 * on -1 *ret_err holds the message. */
struct opts {
        const char *method;
        struct http_header *h;
        size_t nh;
        const void *body;
        size_t len;
        enum http_redirect redirect;
        int max_ms;
};

static int fetch(struct http_engine *e, const char *url, const struct opts *o, struct result *res, char **ret_err)
{
        struct http_request rq = { .url = (char *)url };
        if (o) {
                rq.method = (char *)o->method;
                rq.headers = o->h;
                rq.nheaders = o->nh;
                rq.body = (unsigned char *)o->body;
                rq.body_len = o->len;
                rq.redirect = o->redirect;
        }
        memset(res, 0, sizeof(*res));
        struct err *err = NULL;
        if (http_start(e, 7, &rq, on_done, res, &err) < 0) {
                if (ret_err)
                        *ret_err = strdup(err_msg(err));
                int code = err_code(err);
                err_free(err);
                assert_int_equal(code, HTTP_E_REQUEST);
                return -1;
        }
        run_until_idle(e, o && o->max_ms ? o->max_ms : 20000);
        assert_int_equal(res->calls, 1);
        assert_int_equal(res->id, 7);
        return 0;
}

/* The agent's error names the host it asked for, never the address that
 * host resolved to (issue 9 item 9: no oracle into the operator's network). */
#define SSRF_MSG(host) "http: destination host '" host "' is not public (SSRF guard); allow it with --allow-host"

/* ================= tests ================= */

static void test_refused_without_allowlist(void **state)
{
        (void)state;
        struct ssrf_allow *a;
        struct http_engine *e = engine(NULL, &a, NULL);
        char *u = url_of("127.0.0.1", "/hello");
        int before = total_hits(S);
        struct result r;
        assert_int_equal(fetch(e, u, NULL, &r, NULL), 0);
        assert_non_null(r.err);
        assert_string_equal(r.err, SSRF_MSG("127.0.0.1"));
        assert_int_equal(r.code, HTTP_E_SSRF);
        assert_int_equal(total_hits(S), before);
        result_clear(&r);
        free(u);
        http_engine_free(e);
        ssrf_allow_free(a);
}

static void test_allowed_get(void **state)
{
        (void)state;
        struct ssrf_allow *a;
        struct http_engine *e = engine("127.0.0.1", &a, NULL);
        char *u = url_of("127.0.0.1", "/hello");
        struct result r;
        assert_int_equal(fetch(e, u, NULL, &r, NULL), 0);
        if (r.err)
                fail_msg("%s", r.err);
        assert_int_equal(r.status, 200);
        assert_string_equal(r.status_text, "OK");
        assert_string_equal(r.url, u);
        assert_false(r.redirected);
        assert_int_equal(r.len, 1024);
        assert_memory_equal(r.body, "hello world\nhello", 17);
        result_clear(&r);
        free(u);
        http_engine_free(e);
        ssrf_allow_free(a);
}

static void test_allowlist_port(void **state)
{
        (void)state;
        char spec[64];
        snprintf(spec, sizeof(spec), "127.0.0.1:%d", S->port);
        struct ssrf_allow *a;
        struct http_engine *e = engine(spec, &a, NULL);
        char *u = url_of("127.0.0.1", "/hello");
        struct result r;
        assert_int_equal(fetch(e, u, NULL, &r, NULL), 0);
        assert_null(r.err);
        assert_int_equal(r.status, 200);
        result_clear(&r);
        http_engine_free(e);
        ssrf_allow_free(a);

        e = engine("127.0.0.1:1", &a, NULL);
        int before = total_hits(S);
        assert_int_equal(fetch(e, u, NULL, &r, NULL), 0);
        assert_string_equal(r.err, SSRF_MSG("127.0.0.1"));
        assert_int_equal(total_hits(S), before);
        result_clear(&r);
        free(u);
        http_engine_free(e);
        ssrf_allow_free(a);
}

static void test_literal_forms_refused(void **state)
{
        (void)state;
        /* addr: the host as the URL parser normalises it (IPv4 spellings
         * become dotted quads): the agent's own literal, nothing resolved. */
        static const struct {
                const char *host, *addr;
        } forms[] = {
                { "2130706433", "127.0.0.1" },
                { "0x7f.1", "127.0.0.1" },
                { "017700000001", "127.0.0.1" },
                { "[::ffff:127.0.0.1]", "[::ffff:127.0.0.1]" },
                { "127.1", "127.0.0.1" },
                { "0", "0.0.0.0" },
                { "127.000.000.001", "127.0.0.1" },
                { "0x7f000001", "127.0.0.1" },
                { "[::1]", "[::1]" },
                { "[::ffff:7f00:1]", "[::ffff:7f00:1]" },
                { "127.0.0.2", "127.0.0.2" },
        };
        /* A name entry must not make the numeric spellings pass. */
        struct ssrf_allow *a;
        struct http_engine *e = engine("localhost.example", &a, NULL);
        int before = total_hits(S);
        for (size_t i = 0; i < sizeof(forms) / sizeof(forms[0]); i++) {
                char *u = url_of(forms[i].host, "/hello"), *serr = NULL;
                struct result r;
                int k = fetch(e, u, NULL, &r, &serr);
                if (k < 0)
                        fail_msg("%s: refused up front: %s", u, serr);
                if (!r.err)
                        fail_msg("%s: answered %ld", u, r.status);
                char want[256];
                snprintf(want, sizeof(want), SSRF_MSG("%s"), forms[i].addr);
                if (strcmp(r.err, want) != 0)
                        fail_msg("%s: got '%s', want '%s'", u, r.err, want);
                result_clear(&r);
                free(u);
        }
        assert_int_equal(total_hits(S), before);
        http_engine_free(e);
        ssrf_allow_free(a);
}

static void test_localhost_refused(void **state)
{
        (void)state;
        struct ssrf_allow *a;
        struct http_engine *e = engine(NULL, &a, NULL);
        char *u = url_of("localhost", "/hello");
        int before = total_hits(S);
        struct result r;
        assert_int_equal(fetch(e, u, NULL, &r, NULL), 0);
        assert_non_null(r.err);
        /* named as asked; neither of its addresses is revealed */
        assert_string_equal(r.err, SSRF_MSG("localhost"));
        assert_null(strstr(r.err, "127.0.0.1"));
        assert_null(strstr(r.err, "::1"));
        assert_int_equal(total_hits(S), before);
        result_clear(&r);
        http_engine_free(e);
        ssrf_allow_free(a);

        /* allowed by name: both addresses pass, ::1 has no listener, 127.0.0.1 answers */
        e = engine("LOCALHOST", &a, NULL);
        assert_int_equal(fetch(e, u, NULL, &r, NULL), 0);
        if (r.err)
                fail_msg("%s", r.err);
        assert_int_equal(r.status, 200);
        result_clear(&r);
        free(u);
        http_engine_free(e);
        ssrf_allow_free(a);
}

static void test_redirect_followed(void **state)
{
        (void)state;
        struct ssrf_allow *a;
        struct http_engine *e = engine("127.0.0.1", &a, NULL);
        char *u = url_of("127.0.0.1", "/redirect-to?u=%2Fhello");
        struct result r;
        assert_int_equal(fetch(e, u, NULL, &r, NULL), 0);
        assert_null(r.err);
        assert_int_equal(r.status, 200);
        assert_true(r.redirected);
        char *want = url_of("127.0.0.1", "/hello");
        assert_string_equal(r.url, want);
        assert_int_equal(r.len, 1024);
        result_clear(&r);
        free(want);
        free(u);
        http_engine_free(e);
        ssrf_allow_free(a);
}

static void test_redirect_to_private_refused(void **state)
{
        (void)state;
        char spec[64], target[256], enc[512], path[600];
        snprintf(spec, sizeof(spec), "127.0.0.1:%d", S->port);
        snprintf(target, sizeof(target), "http://127.0.0.2:%d/hello", S->port);
        pct(target, enc, sizeof(enc));
        snprintf(path, sizeof(path), "/redirect-to?u=%s", enc);
        struct ssrf_allow *a;
        struct http_engine *e = engine(spec, &a, NULL);
        char *u = url_of("127.0.0.1", path);
        int h0 = atomic_load(&S->hits[0]), h1 = atomic_load(&S->hits[1]);
        struct result r;
        assert_int_equal(fetch(e, u, NULL, &r, NULL), 0);
        assert_non_null(r.err);
        assert_string_equal(r.err, SSRF_MSG("127.0.0.2"));
        assert_int_equal(r.code, HTTP_E_SSRF);
        assert_true(atomic_load(&S->hits[0]) >= h0);  /* the first hop may reuse a connection */
        assert_int_equal(atomic_load(&S->hits[1]), h1);
        result_clear(&r);
        free(u);

        /* and to a name that resolves to loopback, on a port the allowlist
         * does not name: refused by the guard (not "connection refused") */
        pct("http://localhost:1/hello", enc, sizeof(enc));
        snprintf(path, sizeof(path), "/redirect-to?u=%s&status=307", enc);
        u = url_of("127.0.0.1", path);
        assert_int_equal(fetch(e, u, NULL, &r, NULL), 0);
        assert_non_null(r.err);
        assert_string_equal(r.err, SSRF_MSG("localhost"));
        result_clear(&r);
        free(u);
        http_engine_free(e);
        ssrf_allow_free(a);
}

static void test_redirect_bad_scheme_and_loop(void **state)
{
        (void)state;
        struct ssrf_allow *a;
        struct http_engine *e = engine("127.0.0.1", &a, NULL);
        const char *bad[] = { "file%3A%2F%2F%2Fetc%2Fpasswd", "gopher%3A%2F%2F127.0.0.1%3A70%2F",
                              "ftp%3A%2F%2F127.0.0.1%2F" };
        for (size_t i = 0; i < 3; i++) {
                char path[256];
                snprintf(path, sizeof(path), "/redirect-to?u=%s", bad[i]);
                char *u = url_of("127.0.0.1", path);
                struct result r;
                assert_int_equal(fetch(e, u, NULL, &r, NULL), 0);
                assert_non_null(r.err);
                if (!strstr(r.err, "http: redirect refused: scheme '") || !strstr(r.err, "is not allowed"))
                        fail_msg("%s", r.err);
                assert_int_equal(r.code, HTTP_E_REDIRECT);
                result_clear(&r);
                free(u);
        }
        char *u = url_of("127.0.0.1", "/loop");
        int req0 = atomic_load(&S->requests);
        struct result r;
        assert_int_equal(fetch(e, u, NULL, &r, NULL), 0);
        assert_string_equal(r.err, "http: too many redirects (more than 10)");
        assert_int_equal(atomic_load(&S->requests) - req0, 11);
        result_clear(&r);
        free(u);
        http_engine_free(e);
        ssrf_allow_free(a);
}

static size_t count_req(const struct result *r, const char *prefix)
{
        size_t n = 0;
        for (size_t i = 0; i < r->nh; i++)
                if (!strcasecmp(r->h[i].name, "X-Req") && !strncasecmp(r->h[i].value, prefix, strlen(prefix)))
                        n++;
        return n;
}

static void test_redirect_method_rules(void **state)
{
        (void)state;
        struct ssrf_allow *a;
        struct http_engine *e = engine("127.0.0.1", &a, NULL);
        struct http_header h[] = { { "Content-Type", "text/plain" } };
        struct opts o = { .method = "POST", .h = h, .nh = 1, .body = "data", .len = 4 };
        struct result r;
        static const struct {
                int status;
                const char *method;
                size_t len;
        } rules[] = { { 303, "GET", 0 }, { 302, "GET", 0 }, { 301, "GET", 0 }, { 307, "POST", 4 }, { 308, "POST", 4 } };
        for (size_t i = 0; i < sizeof(rules) / sizeof(rules[0]); i++) {
                char path[128];
                snprintf(path, sizeof(path), "/redirect-to?u=%%2Fecho&status=%d", rules[i].status);
                char *u = url_of("127.0.0.1", path);
                assert_int_equal(fetch(e, u, &o, &r, NULL), 0);
                if (r.err)
                        fail_msg("%d: %s", rules[i].status, r.err);
                assert_string_equal(rhdr(&r, "X-Method"), rules[i].method);
                assert_int_equal(r.len, rules[i].len);
                assert_int_equal(count_req(&r, "Content-Type:"), rules[i].len ? 1 : 0);
                assert_true(r.redirected);
                result_clear(&r);
                free(u);
        }
        /* PUT through 303 becomes GET too; through 302 it stays PUT */
        o.method = "PUT";
        char *u = url_of("127.0.0.1", "/redirect-to?u=%2Fecho&status=302");
        assert_int_equal(fetch(e, u, &o, &r, NULL), 0);
        assert_string_equal(rhdr(&r, "X-Method"), "PUT");
        assert_int_equal(r.len, 4);
        result_clear(&r);
        free(u);
        http_engine_free(e);
        ssrf_allow_free(a);
}

static void test_redirect_cross_origin_drops_credentials(void **state)
{
        (void)state;
        struct ssrf_allow *a;
        struct http_engine *e = engine("127.0.0.1,127.0.0.2", &a, NULL);
        struct http_header h[] = { { "Authorization", "Bearer s3cret" }, { "Cookie", "sid=1" }, { "X-Keep", "yes" } };
        struct opts o = { .h = h, .nh = 3 };
        char target[128], enc[256], path[400];
        snprintf(target, sizeof(target), "http://127.0.0.2:%d/echo", S->port);
        pct(target, enc, sizeof(enc));
        snprintf(path, sizeof(path), "/redirect-to?u=%s", enc);
        char *u = url_of("127.0.0.1", path);
        int h1 = atomic_load(&S->hits[1]);
        struct result r;
        assert_int_equal(fetch(e, u, &o, &r, NULL), 0);
        if (r.err)
                fail_msg("%s", r.err);
        assert_true(atomic_load(&S->hits[1]) > h1);
        assert_int_equal(count_req(&r, "X-Keep: yes"), 1);
        assert_int_equal(count_req(&r, "Authorization:"), 0);
        assert_int_equal(count_req(&r, "Cookie:"), 0);
        result_clear(&r);
        free(u);
        /* same origin: kept */
        u = url_of("127.0.0.1", "/redirect-to?u=%2Fecho");
        assert_int_equal(fetch(e, u, &o, &r, NULL), 0);
        assert_int_equal(count_req(&r, "Authorization: Bearer s3cret"), 1);
        assert_int_equal(count_req(&r, "Cookie: sid=1"), 1);
        result_clear(&r);
        free(u);
        http_engine_free(e);
        ssrf_allow_free(a);
}

/* on_header: the secret's place (effects/net/secrets.h).  The hook fills
 * "{{T}}" with "filled" on a hop to 127.0.0.1 and refuses any other hop;
 * a refused hop is never connected to, the first one included, and a
 * header a cross-origin redirect drops is shown to it all the same. */
struct hdr_hook {
        int calls;
        char host[64];
};

static int hook_header(void *arg, uint64_t id, const char *url, const char *host, long port, const char *name,
                       const char *value, char **ret, struct err **err)
{
        (void)id, (void)url, (void)name;
        struct hdr_hook *h = arg;
        *ret = NULL;
        if (!strstr(value, "{{T}}"))
                return 0;
        h->calls++;
        snprintf(h->host, sizeof(h->host), "%s", host);
        if (strcmp(host, "127.0.0.1") != 0 || port != S->port)
                return err_setc(err, HTTP_E_SECRET, 0, "http: T may not go to %s", host);
        *ret = strdup("Bearer filled");
        return 0;
}

static void test_header_hook(void **state)
{
        (void)state;
        struct hdr_hook hk = { 0 };
        struct http_config c = { .on_header = hook_header, .hook_arg = &hk };
        struct ssrf_allow *a;
        struct http_engine *e = engine("127.0.0.1,127.0.0.2", &a, &c);
        struct http_header h[] = { { "X-Tok", "{{T}}" }, { "Authorization", "{{T}}" }, { "X-Plain", "p" } };
        struct opts o = { .h = h, .nh = 3 };
        struct result r;
        /* the allowed host gets the filled value, in both headers */
        char *u = url_of("127.0.0.1", "/echo");
        assert_int_equal(fetch(e, u, &o, &r, NULL), 0);
        if (r.err)
                fail_msg("%s", r.err);
        assert_int_equal(count_req(&r, "X-Tok: Bearer filled"), 1);
        assert_int_equal(count_req(&r, "Authorization: Bearer filled"), 1);
        assert_int_equal(count_req(&r, "X-Tok: {{T}}"), 0);
        assert_int_equal(count_req(&r, "X-Plain: p"), 1);
        assert_int_equal(hk.calls, 2);
        result_clear(&r);
        free(u);
        /* a redirect to 127.0.0.2: refused before it is connected to */
        char target[128], enc[256], path[400];
        snprintf(target, sizeof(target), "http://127.0.0.2:%d/echo", S->port);
        pct(target, enc, sizeof(enc));
        snprintf(path, sizeof(path), "/redirect-to?u=%s", enc);
        u = url_of("127.0.0.1", path);
        int h1 = atomic_load(&S->hits[1]);
        assert_int_equal(fetch(e, u, &o, &r, NULL), 0);
        assert_int_equal(r.code, HTTP_E_SECRET);
        char want[256];
        snprintf(want, sizeof(want), "http: T may not go to 127.0.0.2 (redirect to %s)", target);
        assert_string_equal(r.err, want);
        result_clear(&r);
        /* only Authorization (which that redirect drops): refused all the same */
        struct opts o2 = { .h = h + 1, .nh = 2 };
        assert_int_equal(fetch(e, u, &o2, &r, NULL), 0);
        assert_int_equal(r.code, HTTP_E_SECRET);
        assert_string_equal(r.err, want);
        result_clear(&r);
        free(u);
        assert_int_equal(atomic_load(&S->hits[1]), h1);
        /* the first hop: http_start refuses at once */
        u = url_of("127.0.0.2", "/echo");
        struct http_request rq = { .url = u, .headers = h, .nheaders = 3 };
        struct err *err = NULL;
        assert_int_equal(http_start(e, 9, &rq, on_done, &r, &err), -1);
        assert_int_equal(err_code(err), HTTP_E_SECRET);
        assert_string_equal(err_msg(err), "http: T may not go to 127.0.0.2");
        err_free(err);
        free(u);
        assert_int_equal(atomic_load(&S->hits[1]), h1);
        http_engine_free(e);
        ssrf_allow_free(a);
}

static void test_redirect_modes(void **state)
{
        (void)state;
        struct ssrf_allow *a;
        struct http_engine *e = engine("127.0.0.1", &a, NULL);
        char *u = url_of("127.0.0.1", "/redirect-to?u=%2Fhello");
        struct opts o = { .redirect = HTTP_REDIRECT_ERROR };
        struct result r;
        assert_int_equal(fetch(e, u, &o, &r, NULL), 0);
        assert_non_null(r.err);
        assert_int_equal(r.code, HTTP_E_REDIRECT);
        assert_non_null(strstr(r.err, "redirect mode \"error\""));
        result_clear(&r);
        o.redirect = HTTP_REDIRECT_MANUAL;
        assert_int_equal(fetch(e, u, &o, &r, NULL), 0);
        assert_null(r.err);
        assert_int_equal(r.status, 302);
        assert_string_equal(r.status_text, "Found");
        assert_string_equal(rhdr(&r, "Location"), "/hello");
        assert_false(r.redirected);
        assert_string_equal((char *)r.body, "redirecting");
        result_clear(&r);
        free(u);
        http_engine_free(e);
        ssrf_allow_free(a);
}

static void test_size_cap(void **state)
{
        (void)state;
        struct ssrf_allow *a;
        struct http_engine *e = engine("127.0.0.1", &a, NULL);
        const char *paths[] = { "/big", "/big?nolen=1" };
        for (size_t i = 0; i < 2; i++) {
                char *u = url_of("127.0.0.1", paths[i]);
                struct result r;
                double t0 = now_ms();
                assert_int_equal(fetch(e, u, NULL, &r, NULL), 0);
                if (!r.err || strcmp(r.err, "http: response exceeds the 16777216-byte limit") != 0)
                        fail_msg("%s: %s", paths[i], r.err ? r.err : "no error");
                assert_int_equal(r.code, HTTP_E_TOO_BIG);
                print_message("      %s refused after %.0f ms\n", paths[i], now_ms() - t0);
                result_clear(&r);
                free(u);
        }
        http_engine_free(e);
        ssrf_allow_free(a);

        /* configurable; the cap counts decoded bytes (gzip: 58 on the wire, 620 decoded) */
        struct http_config c = { .max_response_bytes = 1000 };
        e = engine("127.0.0.1", &a, &c);
        char *u = url_of("127.0.0.1", "/hello");
        struct result r;
        assert_int_equal(fetch(e, u, NULL, &r, NULL), 0);
        assert_string_equal(r.err, "http: response exceeds the 1000-byte limit");
        result_clear(&r);
        free(u);
        u = url_of("127.0.0.1", "/gzip");
        assert_int_equal(fetch(e, u, NULL, &r, NULL), 0);
        assert_null(r.err);
        assert_int_equal(r.len, GZIP_PLAIN_LEN);
        assert_memory_equal(r.body, GZIP_PLAIN, strlen(GZIP_PLAIN));
        result_clear(&r);
        http_engine_free(e);
        ssrf_allow_free(a);
        c.max_response_bytes = 600;
        e = engine("127.0.0.1", &a, &c);
        assert_int_equal(fetch(e, u, NULL, &r, NULL), 0);
        assert_string_equal(r.err, "http: response exceeds the 600-byte limit");
        result_clear(&r);
        free(u);
        /* exactly at the cap is fine */
        http_engine_free(e);
        ssrf_allow_free(a);
        c.max_response_bytes = 1024;
        e = engine("127.0.0.1", &a, &c);
        u = url_of("127.0.0.1", "/hello");
        assert_int_equal(fetch(e, u, NULL, &r, NULL), 0);
        assert_null(r.err);
        assert_int_equal(r.len, 1024);
        result_clear(&r);
        free(u);
        http_engine_free(e);
        ssrf_allow_free(a);
}

/* Bodies in flight count against a shared cap (the broker's --max-queue):
 * a transfer whose body would pass it fails with HTTP_E_LIMIT, and every
 * byte counted is given back when the transfer ends, however it ends. */
static void test_inflight_cap(void **state)
{
        (void)state;
        uint64_t inflight = 0;
        struct ssrf_allow *a;
        struct http_config c = { .inflight = &inflight, .max_inflight = 16384 };
        struct http_engine *e = engine("127.0.0.1", &a, &c);
        char *u = url_of("127.0.0.1", "/hello");
        struct result r;
        assert_int_equal(fetch(e, u, NULL, &r, NULL), 0); /* one buffer of 16 KiB fits */
        assert_null(r.err);
        assert_int_equal(r.len, 1024);
        assert_int_equal(inflight, 0);
        result_clear(&r);
        http_engine_free(e);
        ssrf_allow_free(a);

        c.max_inflight = 16383;
        e = engine("127.0.0.1", &a, &c);
        assert_int_equal(fetch(e, u, NULL, &r, NULL), 0);
        assert_string_equal(r.err, "http: response bodies in flight would pass the limit of 16383 bytes");
        assert_int_equal(r.code, HTTP_E_LIMIT);
        assert_string_equal(http_error_name(r.code), "ELIMIT");
        assert_int_equal(inflight, 0);
        result_clear(&r);
        free(u);
        http_engine_free(e);
        ssrf_allow_free(a);

        /* a big body stops at the shared cap before its own */
        c.max_inflight = 1 << 20;
        e = engine("127.0.0.1", &a, &c);
        u = url_of("127.0.0.1", "/big?nolen=1"); /* with its length, libcurl refuses it up front (too_big) */
        assert_int_equal(fetch(e, u, NULL, &r, NULL), 0);
        assert_int_equal(r.code, HTTP_E_LIMIT);
        assert_int_equal(inflight, 0);
        result_clear(&r);
        free(u);
        http_engine_free(e);
        ssrf_allow_free(a);
}

static void test_request_body_cap(void **state)
{
        (void)state;
        struct http_config c = { .max_request_bytes = 100 };
        struct ssrf_allow *a;
        struct http_engine *e = engine("127.0.0.1", &a, &c);
        char body[101];
        memset(body, 'b', sizeof(body));
        char *u = url_of("127.0.0.1", "/echo"), *serr = NULL;
        struct opts o = { .method = "POST", .body = body, .len = 101 };
        struct result r;
        assert_int_equal(fetch(e, u, &o, &r, &serr), -1);
        assert_string_equal(serr, "http: request body of 101 bytes exceeds the 100-byte limit");
        free(serr);
        assert_int_equal(http_pending(e), 0);
        o.len = 100;
        assert_int_equal(fetch(e, u, &o, &r, NULL), 0);
        assert_null(r.err);
        assert_int_equal(r.len, 100);
        result_clear(&r);
        free(u);
        http_engine_free(e);
        ssrf_allow_free(a);
}

static void test_total_timeout(void **state)
{
        (void)state;
        struct http_config c = { .timeout_ms = 300 };
        struct ssrf_allow *a;
        struct http_engine *e = engine("127.0.0.1", &a, &c);
        char *u = url_of("127.0.0.1", "/hang");
        struct result r;
        double t0 = now_ms();
        assert_int_equal(fetch(e, u, NULL, &r, NULL), 0);
        double dt = now_ms() - t0;
        assert_non_null(r.err);
        assert_string_equal(r.err, "http: request timed out after 300 ms");
        assert_int_equal(r.code, HTTP_E_TIMEOUT);
        assert_true(dt >= 280 && dt < 2000);
        print_message("      total timeout fired after %.0f ms\n", dt);
        result_clear(&r);
        free(u);
        /* the budget covers every hop: a redirect to /slow?ms=400 still times out */
        u = url_of("127.0.0.1", "/redirect-to?u=%2Fslow%3Fms%3D400");
        assert_int_equal(fetch(e, u, NULL, &r, NULL), 0);
        assert_string_equal(r.err, "http: request timed out after 300 ms");
        result_clear(&r);
        free(u);
        http_engine_free(e);
        ssrf_allow_free(a);
}

/* A listener whose accept queue is full drops further SYNs (Linux, with
 * tcp_abort_on_overflow = 0): connect() hangs until the connect timeout. */
static void test_connect_timeout(void **state)
{
        (void)state;
        int lfd = listen_on("127.0.0.1", 0, 0);
        assert_true(lfd >= 0);
        int port = port_of_fd(lfd);
        struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
        inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
        int fill_fds[8], nfill = 0;
        for (; nfill < 8; nfill++) {
                fill_fds[nfill] = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
                connect(fill_fds[nfill], (struct sockaddr *)&sa, sizeof(sa));
        }
        usleep(50000);
        struct http_config c = { .connect_timeout_ms = 200, .timeout_ms = 5000 };
        struct ssrf_allow *a;
        struct http_engine *e = engine("127.0.0.1", &a, &c);
        char u[64];
        snprintf(u, sizeof(u), "http://127.0.0.1:%d/", port);
        struct result r;
        double t0 = now_ms();
        assert_int_equal(fetch(e, u, NULL, &r, NULL), 0);
        double dt = now_ms() - t0;
        assert_non_null(r.err);
        if (strcmp(r.err, "http: connecting to 127.0.0.1 timed out after 200 ms") != 0)
                fail_msg("got '%s' after %.0f ms", r.err, dt);
        assert_true(dt < 2000);
        print_message("      connect timeout fired after %.0f ms\n", dt);
        result_clear(&r);
        http_engine_free(e);
        ssrf_allow_free(a);
        for (int i = 0; i < nfill; i++)
                close(fill_fds[i]);
        close(lfd);
}

static void test_schemes_refused(void **state)
{
        (void)state;
        struct ssrf_allow *a;
        struct http_engine *e = engine("127.0.0.1,localhost", &a, NULL);
        char p[64];
        snprintf(p, sizeof(p), "%d", S->port);
        const char *fmt[] = { "file:///etc/passwd", "gopher://127.0.0.1:%s/", "ftp://127.0.0.1:%s/",
                              "dict://127.0.0.1:%s/", "ldap://127.0.0.1:%s/", "ws://127.0.0.1:%s/",
                              "FILE:///etc/passwd", "telnet://127.0.0.1:%s/" };
        int before = total_hits(S);
        for (size_t i = 0; i < sizeof(fmt) / sizeof(fmt[0]); i++) {
                char u[128], *serr = NULL;
                snprintf(u, sizeof(u), fmt[i], p);
                struct result r;
                if (fetch(e, u, NULL, &r, &serr) != -1)
                        fail_msg("%s: was started", u);
                if (!strstr(serr, "is not allowed (only http and https)"))
                        fail_msg("%s: %s", u, serr);
                free(serr);
        }
        assert_int_equal(total_hits(S), before);
        assert_int_equal(http_pending(e), 0);
        http_engine_free(e);
        ssrf_allow_free(a);
}

static void test_bad_requests(void **state)
{
        (void)state;
        struct ssrf_allow *a;
        struct http_engine *e = engine("127.0.0.1", &a, NULL);
        char *u = url_of("127.0.0.1", "/echo");
        char *cred = url_of("user:pw@127.0.0.1", "/echo");
        struct http_header crlf[] = { { "X-A", "a\r\nInjected: 1" } };
        struct http_header badname[] = { { "X A", "1" } };
        struct http_header host[] = { { "Host", "evil" } };
        struct http_header cl[] = { { "content-length", "5" } };
        struct http_header te[] = { { "Transfer-Encoding", "chunked" } };
        const struct {
                const char *url;
                struct opts o;
                const char *msg;
        } bad[] = {
                { NULL, { .method = "GE T" }, "is not a valid method" },
                { NULL, { .method = "CONNECT" }, "method 'CONNECT' is not allowed" },
                { NULL, { .method = "trace" }, "is not allowed" },
                { NULL, { .h = crlf, .nh = 1 }, "has an invalid value" },
                { NULL, { .h = badname, .nh = 1 }, "not a valid header name" },
                { NULL, { .h = host, .nh = 1 }, "header 'Host' is set by chidori" },
                { NULL, { .h = cl, .nh = 1 }, "set by chidori" },
                { NULL, { .h = te, .nh = 1 }, "set by chidori" },
                { NULL, { .body = "x", .len = 1 }, "a GET request cannot have a body" },
                { NULL, { .method = "head", .body = "x", .len = 1 }, "a HEAD request cannot have a body" },
                { "not a url", { 0 }, "invalid URL" },
                { "", { 0 }, "empty URL" },
                { "http://", { 0 }, "invalid URL" },
                { "/relative", { 0 }, "invalid URL" },
                /* fuzz_url's finding: a host decoded into a control character */
                { "http://0x%7f", { 0 }, "the host has a space or a control character (%7F)" },
                { "http://a%01b/", { 0 }, "invalid URL" }, /* curl refuses these itself */
                { "http://a%20b/", { 0 }, "invalid URL" },
        };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                char *serr = NULL;
                struct result r;
                if (fetch(e, bad[i].url ? bad[i].url : u, &bad[i].o, &r, &serr) != -1)
                        fail_msg("case %zu was started", i);
                if (!strstr(serr, bad[i].msg))
                        fail_msg("case %zu: '%s' lacks '%s'", i, serr, bad[i].msg);
                free(serr);
        }
        char *serr = NULL;
        struct result r;
        assert_int_equal(fetch(e, cred, NULL, &r, &serr), -1);
        assert_string_equal(serr, "http: URLs with credentials are not allowed; send an Authorization header");
        free(serr);
        assert_int_equal(http_pending(e), 0);
        free(cred);
        free(u);
        http_engine_free(e);
        ssrf_allow_free(a);
}

static void test_proxy_env_ignored(void **state)
{
        (void)state;
        struct srv *rec = srv_start(false, true);
        char proxy[64];
        snprintf(proxy, sizeof(proxy), "http://127.0.0.1:%d", rec->port);
        const char *vars[] = { "http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY" };
        for (size_t i = 0; i < 6; i++)
                setenv(vars[i], proxy, 1);
        unsetenv("no_proxy");
        unsetenv("NO_PROXY");
        struct ssrf_allow *a;
        struct http_engine *e = engine("127.0.0.1", &a, NULL);
        char *u = url_of("127.0.0.1", "/hello");
        char *u2 = url_of("127.0.0.1", "/redirect-to?u=%2Fhello");
        struct result r;
        assert_int_equal(fetch(e, u, NULL, &r, NULL), 0);
        if (r.err)
                fail_msg("%s", r.err);
        assert_int_equal(r.status, 200);
        result_clear(&r);
        assert_int_equal(fetch(e, u2, NULL, &r, NULL), 0);
        assert_int_equal(r.status, 200);
        result_clear(&r);
        for (size_t i = 0; i < 6; i++)
                unsetenv(vars[i]);
        assert_int_equal(total_hits(rec), 0);
        free(u);
        free(u2);
        http_engine_free(e);
        ssrf_allow_free(a);
        srv_stop(rec);
}

static void test_binary_body_roundtrip(void **state)
{
        (void)state;
        struct ssrf_allow *a;
        struct http_engine *e = engine("127.0.0.1", &a, NULL);
        size_t n = 256 * 1024 + 7;
        unsigned char *body = malloc(n);
        for (size_t i = 0; i < n; i++)
                body[i] = (unsigned char)(i * 7 + (i >> 8));
        body[0] = 0;
        char *u = url_of("127.0.0.1", "/echo");
        struct opts o = { .method = "post", .body = body, .len = n };
        struct result r;
        assert_int_equal(fetch(e, u, &o, &r, NULL), 0);
        assert_null(r.err);
        assert_string_equal(rhdr(&r, "X-Method"), "POST");
        assert_int_equal(r.len, n);
        assert_memory_equal(r.body, body, n);
        /* no form content type invented, no Expect: 100-continue */
        assert_int_equal(count_req(&r, "Content-Type:"), 0);
        assert_int_equal(count_req(&r, "Expect:"), 0);
        result_clear(&r);
        free(u);
        free(body);
        http_engine_free(e);
        ssrf_allow_free(a);
}

static void test_json_roundtrip(void **state)
{
        (void)state;
        struct ssrf_allow *a;
        struct http_engine *e = engine("127.0.0.1", &a, NULL);
        unsigned char bin[300];
        for (size_t i = 0; i < sizeof(bin); i++)
                bin[i] = (unsigned char)(255 - i);
        char *b64 = base64_encode(bin, sizeof(bin));
        char *u = url_of("127.0.0.1", "/echo");
        cJSON *args = cJSON_CreateObject();
        cJSON_AddStringToObject(args, "url", u);
        cJSON_AddStringToObject(args, "method", "PUT");
        cJSON *hs = cJSON_AddArrayToObject(args, "headers");
        const char *pairs[][2] = { { "X-Z", "1" }, { "X-Y", "2" }, { "X-Z", "3" }, { "X-Latin", "caf\u00e9" } };
        for (size_t i = 0; i < 4; i++) {
                cJSON *p = cJSON_CreateArray();
                cJSON_AddItemToArray(p, cJSON_CreateString(pairs[i][0]));
                cJSON_AddItemToArray(p, cJSON_CreateString(pairs[i][1]));
                cJSON_AddItemToArray(hs, p);
        }
        cJSON_AddStringToObject(args, "body_base64", b64);
        struct http_request *rq = NULL;
        struct err *err = NULL;
        if (http_request_from_json(args, &rq, &err) < 0)
                fail_msg("%s", err_msg(err));
        assert_int_equal(rq->body_len, sizeof(bin));
        struct result r = { 0 };
        assert_int_equal(http_start(e, 42, rq, on_done, &r, &err), 0);
        http_request_free(rq);
        run_until_idle(e, 10000);
        assert_int_equal(r.calls, 1);
        assert_int_equal(r.id, 42);
        assert_null(r.err);
        struct http_response res = { .status = r.status, .status_text = r.status_text, .url = r.url,
                                     .redirected = r.redirected, .headers = r.h, .nheaders = r.nh,
                                     .body = r.body, .body_len = r.len };
        cJSON *v = http_response_to_json(&res);
        assert_non_null(v);
        assert_int_equal(cJSON_GetObjectItem(v, "status")->valueint, 200);
        assert_string_equal(cJSON_GetObjectItem(v, "statusText")->valuestring, "OK");
        assert_string_equal(cJSON_GetObjectItem(v, "url")->valuestring, u);
        assert_true(cJSON_IsFalse(cJSON_GetObjectItem(v, "redirected")));
        assert_string_equal(cJSON_GetObjectItem(v, "body_base64")->valuestring, b64);
        /* X-Req lines keep the order we sent, duplicates included */
        cJSON *rh = cJSON_GetObjectItem(v, "headers"), *pair;
        const char *want[] = { "X-Z: 1", "X-Y: 2", "X-Z: 3", "X-Latin: caf\u00e9" };
        size_t k = 0;
        cJSON_ArrayForEach(pair, rh)
        {
                assert_int_equal(cJSON_GetArraySize(pair), 2);
                if (strcmp(cJSON_GetArrayItem(pair, 0)->valuestring, "X-Req") == 0 &&
                    strncmp(cJSON_GetArrayItem(pair, 1)->valuestring, "X-", 2) == 0) {
                        assert_true(k < 4);
                        assert_string_equal(cJSON_GetArrayItem(pair, 1)->valuestring, want[k]);
                        k++;
                }
        }
        assert_int_equal(k, 4);
        /* on the wire the value was the single byte 0xE9 */
        size_t lat = 0;
        for (size_t i = 0; i < r.nh; i++)
                if (!strcmp(r.h[i].value, "X-Latin: caf\xe9"))
                        lat++;
        assert_int_equal(lat, 1);
        cJSON_Delete(v);
        result_clear(&r);

        /* bad shapes */
        static const char *bad[] = {
                "{}", "{\"url\":1}", "{\"url\":\"http://x/\",\"method\":2}", "{\"url\":\"http://x/\",\"headers\":{}}",
                "{\"url\":\"http://x/\",\"headers\":[[\"a\"]]}", "{\"url\":\"http://x/\",\"headers\":[[\"a\",1]]}",
                "{\"url\":\"http://x/\",\"body_base64\":\"abc\"}", "{\"url\":\"http://x/\",\"body_base64\":\"ab$=\"}",
                "{\"url\":\"http://x/\",\"redirect\":\"sometimes\"}", "[]",
                "{\"url\":\"http://x/\",\"headers\":[[\"X-E\",\"\u20ac\"]]}",
        };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                cJSON *j = cJSON_Parse(bad[i]);
                assert_non_null(j);
                rq = NULL;
                if (http_request_from_json(j, &rq, &err) == 0)
                        fail_msg("accepted %s", bad[i]);
                assert_int_equal(err_code(err), HTTP_E_REQUEST);
                cJSON_Delete(j);
        }
        /* good minimal shapes */
        cJSON *j = cJSON_Parse("{\"url\":\"http://x/\",\"body_base64\":\"\",\"redirect\":\"manual\",\"headers\":[]}");
        assert_int_equal(http_request_from_json(j, &rq, &err), 0);
        assert_null(rq->body);
        assert_int_equal(rq->redirect, HTTP_REDIRECT_MANUAL);
        http_request_free(rq);
        cJSON_Delete(j);
        j = cJSON_Parse("{\"url\":\"http://x/\",\"body_base64\":\"AAE=\"}");
        assert_int_equal(http_request_from_json(j, &rq, &err), 0);
        assert_int_equal(rq->body_len, 2);
        assert_int_equal(rq->body[0], 0);
        assert_int_equal(rq->body[1], 1);
        http_request_free(rq);
        cJSON_Delete(j);
        err_free(err);
        cJSON_Delete(args);
        free(b64);
        free(u);
        http_engine_free(e);
        ssrf_allow_free(a);
}

static void test_concurrent_slow(void **state)
{
        (void)state;
        struct ssrf_allow *a;
        struct http_engine *e = engine("127.0.0.1", &a, NULL);
        enum { N = 100 };
        struct result *r = calloc(N, sizeof(*r));
        char *u = url_of("127.0.0.1", "/slow");
        double t0 = now_ms();
        for (int i = 0; i < N; i++) {
                struct http_request rq = { .url = u };
                struct err *err = NULL;
                if (http_start(e, (uint64_t)i, &rq, on_done, &r[i], &err) < 0)
                        fail_msg("%s", err_msg(err));
        }
        assert_int_equal(http_pending(e), N);
        run_until_idle(e, 10000);
        double dt = now_ms() - t0;
        for (int i = 0; i < N; i++) {
                assert_int_equal(r[i].calls, 1);
                assert_int_equal(r[i].id, (uint64_t)i);
                if (r[i].err)
                        fail_msg("%d: %s", i, r[i].err);
                assert_int_equal(r[i].status, 200);
                assert_string_equal((char *)r[i].body, "slow");
                result_clear(&r[i]);
        }
        print_message("      %d concurrent /slow (50 ms each) took %.0f ms\n", N, dt);
        assert_true(dt < 1000);
        free(r);
        free(u);
        http_engine_free(e);
        ssrf_allow_free(a);
}

static void test_header_order(void **state)
{
        (void)state;
        struct ssrf_allow *a;
        struct http_engine *e = engine("127.0.0.1", &a, NULL);
        char *u = url_of("127.0.0.1", "/hello");
        struct result r;
        assert_int_equal(fetch(e, u, NULL, &r, NULL), 0);
        assert_null(r.err);
        const char *want[][2] = { { "Content-Length", "1024" }, { "Content-Type", "text/plain" }, { "X-B", "2" },
                                  { "X-A", "1" },          { "Set-Cookie", "a=1" },          { "X-C", "3" },
                                  { "Set-Cookie", "b=2" }, { "X-Folded", "one two" } };
        assert_int_equal(r.nh, 8);
        for (size_t i = 0; i < 8; i++) {
                assert_string_equal(r.h[i].name, want[i][0]);
                assert_string_equal(r.h[i].value, want[i][1]);
        }
        result_clear(&r);
        free(u);
        /* request side: our order, after libcurl's own; empty values survive */
        u = url_of("127.0.0.1", "/echo");
        struct http_header h[] = { { "X-Z", "1" }, { "X-Y", "  2  " }, { "X-Empty", "" }, { "X-Z", "3" },
                                   { "User-Agent", "agent/1" } };
        struct opts o = { .h = h, .nh = 5 };
        assert_int_equal(fetch(e, u, &o, &r, NULL), 0);
        assert_null(r.err);
        const char *wreq[] = { "X-Z: 1", "X-Y: 2", "X-Empty:", "X-Z: 3", "User-Agent: agent/1" };
        size_t k = 0;
        for (size_t i = 0; i < r.nh; i++) {
                if (strcasecmp(r.h[i].name, "X-Req") != 0)
                        continue;
                const char *v = r.h[i].value;
                if (!strncmp(v, "X-", 2) || !strncmp(v, "User-Agent", 10)) {
                        assert_true(k < 5);
                        if (strncmp(v, wreq[k], strlen(wreq[k])) != 0)
                                fail_msg("request header %zu: '%s', want '%s'", k, v, wreq[k]);
                        k++;
                }
        }
        assert_int_equal(k, 5);
        result_clear(&r);
        free(u);
        http_engine_free(e);
        ssrf_allow_free(a);
}

static void test_status_and_head(void **state)
{
        (void)state;
        struct ssrf_allow *a;
        struct http_engine *e = engine("127.0.0.1", &a, NULL);
        char *u = url_of("127.0.0.1", "/status?code=418");
        struct result r;
        assert_int_equal(fetch(e, u, NULL, &r, NULL), 0);
        assert_int_equal(r.status, 418);
        assert_string_equal(r.status_text, "Custom Reason");
        result_clear(&r);
        free(u);
        u = url_of("127.0.0.1", "/nowhere");
        assert_int_equal(fetch(e, u, NULL, &r, NULL), 0);
        assert_int_equal(r.status, 404);
        assert_string_equal((char *)r.body, "no such route");
        result_clear(&r);
        free(u);
        /* HEAD of a 20 MiB resource: headers only, no size-cap failure */
        u = url_of("127.0.0.1", "/big");
        struct opts o = { .method = "HEAD" };
        assert_int_equal(fetch(e, u, &o, &r, NULL), 0);
        if (r.err)
                fail_msg("%s", r.err);
        assert_int_equal(r.status, 200);
        assert_int_equal(r.len, 0);
        result_clear(&r);
        free(u);
        http_engine_free(e);
        ssrf_allow_free(a);
}

struct chain {
        struct http_engine *e;
        char *url;
        struct result second;
        int firsts;
};

static void on_first(void *arg, uint64_t id, const struct http_response *res, const struct err *err)
{
        (void)id, (void)res, (void)err;
        struct chain *c = arg;
        c->firsts++;
        struct http_request rq = { .url = c->url };
        assert_int_equal(http_start(c->e, 2, &rq, on_done, &c->second, NULL), 0);
        /* perform may not be re-entered from a callback */
        struct err *perr = NULL;
        assert_int_equal(http_perform(c->e, NULL, 0, &perr), -1);
        err_free(perr);
}

static void test_cancel_and_chaining(void **state)
{
        (void)state;
        struct ssrf_allow *a;
        struct http_engine *e = engine("127.0.0.1", &a, NULL);
        char *hang = url_of("127.0.0.1", "/hang");
        struct result r = { 0 };
        struct http_request rq = { .url = hang };
        assert_int_equal(http_start(e, 5, &rq, on_done, &r, NULL), 0);
        assert_int_equal(http_start(e, 6, &rq, on_done, &r, NULL), 0);
        /* let them connect */
        for (int i = 0; i < 20; i++) {
                struct pollfd pfd[16];
                int t = 10;
                size_t n = http_fds(e, pfd, 16, &t);
                poll(pfd, n, t);
                assert_int_equal(http_perform(e, pfd, n, NULL), 0);
        }
        assert_true(http_cancel(e, 5));
        assert_false(http_cancel(e, 5));
        assert_false(http_cancel(e, 99));
        assert_int_equal(http_pending(e), 1);
        assert_int_equal(r.calls, 0);

        /* a callback may start the next request */
        struct chain c = { .e = e, .url = url_of("127.0.0.1", "/hello") };
        rq.url = c.url;
        assert_int_equal(http_start(e, 1, &rq, on_first, &c, NULL), 0);
        double end = now_ms() + 5000;
        while (c.second.calls == 0 && now_ms() < end) {
                struct pollfd pfd[16];
                int t = 50;
                size_t n = http_fds(e, pfd, 16, &t);
                poll(pfd, n, t);
                assert_int_equal(http_perform(e, pfd, n, NULL), 0);
        }
        assert_int_equal(c.firsts, 1);
        assert_int_equal(c.second.calls, 1);
        assert_int_equal(c.second.status, 200);
        result_clear(&c.second);
        free(c.url);
        /* transfer 6 is still hanging: freeing the engine cancels it quietly */
        assert_int_equal(http_pending(e), 1);
        http_engine_free(e);
        assert_int_equal(r.calls, 0);
        free(hang);
        ssrf_allow_free(a);
}

static void test_perform_polls_itself(void **state)
{
        (void)state;
        struct ssrf_allow *a;
        struct http_engine *e = engine("127.0.0.1", &a, NULL);
        char *u = url_of("127.0.0.1", "/hello");
        struct result r = { 0 };
        struct http_request rq = { .url = u };
        assert_int_equal(http_start(e, 3, &rq, on_done, &r, NULL), 0);
        double end = now_ms() + 5000;
        while (http_pending(e) && now_ms() < end) {
                int t = -1;
                struct pollfd one;
                size_t need = http_fds(e, &one, 0, &t);  /* sizing call: nothing written */
                (void)need;
                usleep(2000);
                assert_int_equal(http_perform(e, NULL, 0, NULL), 0);
        }
        assert_int_equal(r.calls, 1);
        assert_int_equal(r.status, 200);
        result_clear(&r);
        free(u);
        http_engine_free(e);
        ssrf_allow_free(a);
}

struct hooks {
        int refusals, redirects;
        char addr[SSRF_ADDR_MAX], why[160], url[512];
        uint64_t id;
};

static void hook_refuse(void *arg, uint64_t id, const char *url, const char *addr, const char *why)
{
        struct hooks *h = arg;
        h->refusals++;
        h->id = id;
        snprintf(h->addr, sizeof(h->addr), "%s", addr);
        snprintf(h->why, sizeof(h->why), "%s", why);
        snprintf(h->url, sizeof(h->url), "%s", url);
}

/* The policy gate's place: refuse hops to /echo, let others through. */
static int hook_redirect(void *arg, uint64_t id, const char *url, struct err **err)
{
        struct hooks *h = arg;
        h->redirects++;
        h->id = id;
        if (strstr(url, "/echo"))
                return err_set(err, 0, "policy: http to '%s' is not allowed", url);
        return 0;
}

static void test_hooks(void **state)
{
        (void)state;
        struct hooks h = { 0 };
        struct http_config c = { .on_refuse = hook_refuse, .on_redirect = hook_redirect, .hook_arg = &h };
        struct ssrf_allow *a;
        struct http_engine *e = engine(NULL, &a, &c);
        char *u = url_of("127.0.0.1", "/hello");
        struct result r;
        assert_int_equal(fetch(e, u, NULL, &r, NULL), 0);
        assert_string_equal(r.err, SSRF_MSG("127.0.0.1"));
        assert_int_equal(h.refusals, 1);
        assert_int_equal(h.id, 7);
        assert_string_equal(h.addr, "127.0.0.1");
        assert_string_equal(h.why, "loopback 127.0.0.0/8");
        assert_string_equal(h.url, u);
        result_clear(&r);
        free(u);
        http_engine_free(e);
        ssrf_allow_free(a);

        e = engine("127.0.0.1", &a, &c);
        u = url_of("127.0.0.1", "/redirect-to?u=%2Fredirect-to%3Fu%3D%252Fhello");
        assert_int_equal(fetch(e, u, NULL, &r, NULL), 0);
        if (r.err)
                fail_msg("%s", r.err);
        assert_int_equal(r.status, 200);
        assert_int_equal(h.redirects, 2);
        result_clear(&r);
        free(u);
        u = url_of("127.0.0.1", "/redirect-to?u=%2Fecho");
        assert_int_equal(fetch(e, u, NULL, &r, NULL), 0);
        assert_non_null(r.err);
        assert_int_equal(r.code, HTTP_E_REDIRECT);
        assert_non_null(strstr(r.err, "policy: http to 'http://127.0.0.1:"));
        assert_int_equal(h.redirects, 3);
        result_clear(&r);
        free(u);
        http_engine_free(e);
        ssrf_allow_free(a);
}

static int group_setup(void **state)
{
        (void)state;
        S = srv_start(true, false);
        return 0;
}

static int group_teardown(void **state)
{
        (void)state;
        srv_stop(S);
        S = NULL;
        return 0;
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_refused_without_allowlist),
                cmocka_unit_test(test_allowed_get),
                cmocka_unit_test(test_allowlist_port),
                cmocka_unit_test(test_literal_forms_refused),
                cmocka_unit_test(test_localhost_refused),
                cmocka_unit_test(test_redirect_followed),
                cmocka_unit_test(test_redirect_to_private_refused),
                cmocka_unit_test(test_redirect_bad_scheme_and_loop),
                cmocka_unit_test(test_redirect_method_rules),
                cmocka_unit_test(test_redirect_cross_origin_drops_credentials),
                cmocka_unit_test(test_header_hook),
                cmocka_unit_test(test_redirect_modes),
                cmocka_unit_test(test_size_cap),
                cmocka_unit_test(test_request_body_cap),
                cmocka_unit_test(test_total_timeout),
                cmocka_unit_test(test_connect_timeout),
                cmocka_unit_test(test_schemes_refused),
                cmocka_unit_test(test_bad_requests),
                cmocka_unit_test(test_proxy_env_ignored),
                cmocka_unit_test(test_binary_body_roundtrip),
                cmocka_unit_test(test_json_roundtrip),
                cmocka_unit_test(test_concurrent_slow),
                cmocka_unit_test(test_header_order),
                cmocka_unit_test(test_status_and_head),
                cmocka_unit_test(test_cancel_and_chaining),
                cmocka_unit_test(test_perform_polls_itself),
                cmocka_unit_test(test_hooks),
                cmocka_unit_test(test_inflight_cap),
        };
        return cmocka_run_group_tests_name("http", tests, group_setup, group_teardown);
}
