/* tests/fuzz/fuzz_url.c — libFuzzer target for what an agent's fetch hands the
 * parent before any socket exists: the URL checks of effects/net/http.c
 * (check_url: scheme, credentials, host, port, normalised form — the same
 * function judges every redirect's Location), the request's JSON
 * (http_request_from_json, check_method, check_headers, the isomorphic header
 * codec), and the SSRF guard of effects/net/ssrf.c (the strict address
 * parser, the classifier, the allowlist).  http.c is included so its static
 * checks are reachable; nothing here opens a socket or resolves a name.
 *
 * The input is used whole as each of: a URL, an address literal, an
 * allowlist, request JSON; and its first 16 bytes as a raw IPv4/IPv6
 * address.  Crashes on a broken invariant, not only on memory errors. */
#include "effects/net/http.c"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdint.h>

static void lower_only(const char *s)
{
        for (; *s; s++)
                if (*s >= 'A' && *s <= 'Z')
                        abort();
}

/* The verdict of a classified address: `why` always says something, and
 * says "public" exactly when the address is. */
static bool judge(const struct sockaddr *sa)
{
        char why[256] = "unset", text[SSRF_ADDR_MAX];
        bool pub = ssrf_is_public(sa, why, sizeof(why));
        if (!why[0] || (strcmp(why, "public") == 0) != pub)
                abort();
        ssrf_addr_format(sa, text, sizeof(text));
        if (strlen(text) >= SSRF_ADDR_MAX)
                abort();
        /* what the formatter prints parses back to the same address (no scope id) */
        struct sockaddr_storage again;
        if (sa->sa_family == AF_INET || (sa->sa_family == AF_INET6 && !((const struct sockaddr_in6 *)sa)->sin6_scope_id)) {
                if (ssrf_addr_parse(text, &again) != 0 || again.ss_family != sa->sa_family)
                        abort();
                if (sa->sa_family == AF_INET &&
                    memcmp(&((struct sockaddr_in *)&again)->sin_addr, &((const struct sockaddr_in *)sa)->sin_addr, 4))
                        abort();
                if (sa->sa_family == AF_INET6 && memcmp(&((struct sockaddr_in6 *)&again)->sin6_addr,
                                                        &((const struct sockaddr_in6 *)sa)->sin6_addr, 16))
                        abort();
        }
        char small[8];
        ssrf_addr_format(sa, small, sizeof(small));
        if (strlen(small) >= sizeof(small))
                abort();
        char tiny[1] = "x";
        (void)ssrf_is_public(sa, tiny, sizeof(tiny));
        if (tiny[0])
                abort();
        return pub;
}

/* An IPv4 address and its IPv4-mapped IPv6 form get the same verdict. */
static void judge_v4(uint32_t be)
{
        struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = be };
        struct sockaddr_in6 m = { .sin6_family = AF_INET6 };
        m.sin6_addr.s6_addr[10] = m.sin6_addr.s6_addr[11] = 0xff;
        memcpy(&m.sin6_addr.s6_addr[12], &be, 4);
        if (judge((struct sockaddr *)&a) != judge((struct sockaddr *)&m))
                abort();
}

static void url_checks(const char *text)
{
        char *url = NULL, *host = NULL, *origin = NULL;
        struct err *e = NULL;
        if (check_url(text, &url, &host, &origin, &e) == 0) {
                if (!*url || !*host || (strncmp(origin, "http://", 7) != 0 && strncmp(origin, "https://", 8) != 0))
                        abort();
                lower_only(host);
                /* The normalised URL is a URL this check accepts with the same
                 * host and origin: a redirect to it is judged the same. */
                char *url2 = NULL, *host2 = NULL, *origin2 = NULL;
                struct err *e2 = NULL;
                if (check_url(url, &url2, &host2, &origin2, &e2) != 0 || strcmp(host, host2) != 0 ||
                    strcmp(origin, origin2) != 0)
                        abort();
                free(url2), free(host2), free(origin2);
                /* A host that is an address literal is classified like any address. */
                struct sockaddr_storage ss;
                if (ssrf_addr_parse(host, &ss) == 0)
                        (void)judge((struct sockaddr *)&ss);
                char *ascii = url_ascii(url);
                for (const unsigned char *p = (const unsigned char *)ascii; p && *p; p++)
                        if (*p >= 0x80)
                                abort();
                free(ascii);
                free(url), free(host), free(origin);
        } else if (!err_msg(e) || strncmp(err_msg(e), "http: ", 6) != 0) {
                abort();
        }
        err_free(e);
}

static void allow_checks(const char *text, const struct sockaddr *sa)
{
        struct ssrf_allow *a = NULL;
        struct err *e = NULL;
        if (ssrf_allow_parse(text, &a, &e) == 0) {
                size_t n = ssrf_allow_count(a);
                (void)ssrf_allow_match(a, "api.example.com", sa);
                (void)ssrf_allow_match(a, NULL, sa);
                (void)ssrf_allow_match(a, text, sa);
                /* adding what parsed once more doubles it, or fails and changes nothing */
                struct err *e2 = NULL;
                if (ssrf_allow_add(a, text, &e2) == 0) {
                        if (ssrf_allow_count(a) != 2 * n)
                                abort();
                } else if (ssrf_allow_count(a) != n) {
                        abort();
                }
                err_free(e2);
                ssrf_allow_free(a);
        } else if (!err_msg(e)) {
                abort();
        }
        err_free(e);
}

static void request_checks(const char *text, size_t len)
{
        cJSON *args = cJSON_ParseWithLength(text, len);
        if (!args)
                return;
        struct http_request *req = NULL;
        struct err *e = NULL;
        if (http_request_from_json(args, &req, &e) == 0) {
                char *m = NULL;
                struct err *e2 = NULL;
                if (check_method(req->method, &m, &e2) == 0) {
                        if (!is_token(m))
                                abort();
                        free(m);
                }
                err_free(e2);
                e2 = NULL;
                (void)check_headers(req->headers, req->nheaders, &e2);
                err_free(e2);
                e2 = NULL;
                url_checks(req->url);
                /* header bytes go back to the same JSON text they came from */
                for (size_t i = 0; i < req->nheaders; i++) {
                        char *dec = iso_decode(req->headers[i].value), *enc = NULL;
                        if (!dec || iso_encode(dec, &enc) != 0 || strcmp(enc, req->headers[i].value) != 0)
                                abort();
                        free(dec), free(enc);
                }
                http_request_free(req);
        }
        err_free(e);
        cJSON_Delete(args);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        if (size > 8192)
                return 0;
        char *text = malloc(size + 1);
        if (!text)
                return 0;
        memcpy(text, data, size);
        text[size] = '\0';

        url_checks(text);

        struct sockaddr_storage ss = { 0 };
        if (ssrf_addr_parse(text, &ss) == 0) {
                if (ss.ss_family != AF_INET && ss.ss_family != AF_INET6)
                        abort();
                (void)judge((struct sockaddr *)&ss);
        }

        /* The raw bytes as addresses. */
        if (size >= 4) {
                uint32_t be;
                memcpy(&be, data, 4);
                judge_v4(be);
        }
        if (size >= 16) {
                struct sockaddr_in6 s6 = { .sin6_family = AF_INET6, .sin6_port = htons(443) };
                memcpy(&s6.sin6_addr, data, 16);
                (void)judge((struct sockaddr *)&s6);
                allow_checks(text, (struct sockaddr *)&s6);
        } else {
                struct sockaddr_in s4 = { .sin_family = AF_INET, .sin_port = htons(8080) };
                if (size >= 4)
                        memcpy(&s4.sin_addr, data, 4);
                allow_checks(text, (struct sockaddr *)&s4);
        }
        struct sockaddr un = { .sa_family = AF_UNIX };
        if (judge(&un))
                abort();

        request_checks(text, size);
        free(text);
        return 0;
}
