/* effects/net/ssrf.c — destination classification and the allowlist.
 *
 * Classification is by table, first match wins, so the specific entries
 * (169.254.169.254, 255.255.255.255) sit before the blocks that contain
 * them.  IPv6 forms that carry an IPv4 address are unwrapped and the IPv4
 * address is judged by the same table: an attacker who cannot say
 * 127.0.0.1 must not be able to say ::ffff:127.0.0.1, 64:ff9b::7f00:1,
 * 2002:7f00:1::, or a Teredo address whose client bits are ~127.0.0.1.
 *
 * Left out on purpose (treated as public): nothing in 2000::/3 beyond the
 * listed blocks — global unicast is what fetch is for.  Refused beyond the
 * brief's list, because nothing legitimate lives there: 192.88.99.0/24 (6to4
 * relay anycast), 2001:2::/48 (benchmarking), 2001:10::/28 and 2001:20::/28
 * (ORCHID), 3fff::/20 (documentation, RFC 9637), the whole IPv4-compatible
 * ::/96 block (deprecated; Linux does not route it), the whole local-use
 * NAT64 prefix 64:ff9b:1::/48 (RFC 8215: it translates to whatever the local
 * operator decides, embedding rules vary with the prefix length), and any
 * IPv6 address outside 2000::/3 not listed (reserved by the IETF).
 */
#define _GNU_SOURCE
#include "effects/net/ssrf.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ---- IPv4 ---- */

struct v4_range {
        uint32_t net;
        unsigned bits;
        const char *why;
};

static const struct v4_range v4_ranges[] = {
        { 0x00000000, 8, "unspecified 0.0.0.0/8 (\"this network\")" },
        { 0x0a000000, 8, "private 10.0.0.0/8 (RFC 1918)" },
        { 0x64400000, 10, "shared address space 100.64.0.0/10 (CGNAT, RFC 6598)" },
        { 0x7f000000, 8, "loopback 127.0.0.0/8" },
        { 0xa9fea9fe, 32, "link-local 169.254.169.254 (cloud metadata)" },
        { 0xa9fe0000, 16, "link-local 169.254.0.0/16" },
        { 0xac100000, 12, "private 172.16.0.0/12 (RFC 1918)" },
        { 0xc0000000, 24, "IETF protocol assignments 192.0.0.0/24" },
        { 0xc0000200, 24, "documentation 192.0.2.0/24 (TEST-NET-1)" },
        { 0xc0586300, 24, "6to4 relay anycast 192.88.99.0/24 (deprecated)" },
        { 0xc0a80000, 16, "private 192.168.0.0/16 (RFC 1918)" },
        { 0xc6120000, 15, "benchmarking 198.18.0.0/15" },
        { 0xc6336400, 24, "documentation 198.51.100.0/24 (TEST-NET-2)" },
        { 0xcb007100, 24, "documentation 203.0.113.0/24 (TEST-NET-3)" },
        { 0xe0000000, 4, "multicast 224.0.0.0/4" },
        { 0xffffffff, 32, "broadcast 255.255.255.255" },
        { 0xf0000000, 4, "reserved 240.0.0.0/4" },
};

static void set_why(char *why, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void set_why(char *why, size_t len, const char *fmt, ...)
{
        if (!why || !len)
                return;
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(why, len, fmt, ap);
        va_end(ap);
}

/* `a` in host byte order.  Returns the range's description, NULL if public. */
static const char *v4_class(uint32_t a)
{
        for (size_t i = 0; i < sizeof(v4_ranges) / sizeof(v4_ranges[0]); i++) {
                const struct v4_range *r = &v4_ranges[i];
                uint32_t mask = r->bits == 0 ? 0 : 0xffffffffu << (32 - r->bits);
                if ((a & mask) == r->net)
                        return r->why;
        }
        return NULL;
}

static uint32_t be32_at(const unsigned char *p)
{
        return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

static void v4_text(uint32_t a, char *buf, size_t len)
{
        snprintf(buf, len, "%u.%u.%u.%u", a >> 24, (a >> 16) & 0xff, (a >> 8) & 0xff, a & 0xff);
}

/* ---- IPv6 ---- */

enum v6_kind {
        V6_PLAIN,      /* the range itself is not public */
        V6_EMBED_LOW,  /* IPv4 in the last 32 bits decides */
        V6_COMPAT,     /* ::/96: never public; the IPv4 names the reason */
        V6_6TO4,       /* IPv4 in bits 16..47 decides */
        V6_TEREDO,     /* server IPv4 in bits 32..63, client ~IPv4 in bits 96..127 */
};

struct v6_range {
        unsigned char net[16];
        unsigned bits;
        enum v6_kind kind;
        const char *why;
};

/* Order matters: ::/128 and ::1/128 before ::/96; ::ffff:0:0/96 before ::/8-ish catch-alls. */
static const struct v6_range v6_ranges[] = {
        { { 0 }, 128, V6_PLAIN, "unspecified ::" },
        { { [15] = 1 }, 128, V6_PLAIN, "loopback ::1" },
        { { [10] = 0xff, [11] = 0xff }, 96, V6_EMBED_LOW, "IPv4-mapped ::ffff:0:0/96" },
        { { [8] = 0xff, [9] = 0xff }, 96, V6_EMBED_LOW, "IPv4-translated ::ffff:0:0:0/96 (SIIT)" },
        { { 0 }, 96, V6_COMPAT, "IPv4-compatible ::/96 (deprecated)" },
        { { 0x00, 0x64, 0xff, 0x9b }, 96, V6_EMBED_LOW, "NAT64 64:ff9b::/96" },
        { { 0x00, 0x64, 0xff, 0x9b, 0x00, 0x01 }, 48, V6_PLAIN, "local-use NAT64 64:ff9b:1::/48 (RFC 8215)" },
        { { 0x01, 0x00 }, 64, V6_PLAIN, "discard-only 100::/64" },
        { { 0x20, 0x01, 0x00, 0x00 }, 32, V6_TEREDO, "Teredo 2001::/32" },
        { { 0x20, 0x01, 0x00, 0x02, 0x00, 0x00 }, 48, V6_PLAIN, "benchmarking 2001:2::/48" },
        { { 0x20, 0x01, 0x00, 0x10 }, 28, V6_PLAIN, "ORCHID 2001:10::/28 (deprecated)" },
        { { 0x20, 0x01, 0x00, 0x20 }, 28, V6_PLAIN, "ORCHIDv2 2001:20::/28" },
        { { 0x20, 0x01, 0x0d, 0xb8 }, 32, V6_PLAIN, "documentation 2001:db8::/32" },
        { { 0x20, 0x02 }, 16, V6_6TO4, "6to4 2002::/16" },
        { { 0x3f, 0xff }, 20, V6_PLAIN, "documentation 3fff::/20 (RFC 9637)" },
        { { 0xfc }, 7, V6_PLAIN, "unique-local fc00::/7" },
        { { 0xfe, 0x80 }, 10, V6_PLAIN, "link-local fe80::/10" },
        { { 0xfe, 0xc0 }, 10, V6_PLAIN, "site-local fec0::/10 (deprecated)" },
        { { 0xff }, 8, V6_PLAIN, "multicast ff00::/8" },
};

static bool v6_in(const unsigned char *a, const struct v6_range *r)
{
        unsigned full = r->bits / 8, rest = r->bits % 8;
        if (memcmp(a, r->net, full) != 0)
                return false;
        if (rest) {
                unsigned char mask = (unsigned char)(0xff << (8 - rest));
                if ((a[full] & mask) != (r->net[full] & mask))
                        return false;
        }
        return true;
}

/* Judge an embedded IPv4 address; false (and why) when it is not public. */
static bool embedded_public(const char *form, const char *role, uint32_t v4, char *why, size_t len)
{
        const char *c = v4_class(v4);
        if (!c)
                return true;
        char t[INET_ADDRSTRLEN];
        v4_text(v4, t, sizeof(t));
        set_why(why, len, "%s %s%s%s: %s", form, role, role[0] ? " " : "of ", t, c);
        return false;
}

static bool v6_is_public(const unsigned char *a, char *why, size_t len)
{
        for (size_t i = 0; i < sizeof(v6_ranges) / sizeof(v6_ranges[0]); i++) {
                const struct v6_range *r = &v6_ranges[i];
                if (!v6_in(a, r))
                        continue;
                switch (r->kind) {
                case V6_PLAIN:
                        set_why(why, len, "%s", r->why);
                        return false;
                case V6_EMBED_LOW:
                        if (!embedded_public(r->why, "", be32_at(a + 12), why, len))
                                return false;
                        set_why(why, len, "public");
                        return true;
                case V6_COMPAT:
                        if (embedded_public(r->why, "", be32_at(a + 12), why, len))
                                set_why(why, len, "%s", r->why);
                        return false;
                case V6_6TO4:
                        if (!embedded_public(r->why, "", be32_at(a + 2), why, len))
                                return false;
                        set_why(why, len, "public");
                        return true;
                case V6_TEREDO:
                        if (!embedded_public(r->why, "server", be32_at(a + 4), why, len))
                                return false;
                        if (!embedded_public(r->why, "client", ~be32_at(a + 12), why, len))
                                return false;
                        set_why(why, len, "public");
                        return true;
                }
        }
        /* Global unicast is 2000::/3; IANA has allocated nothing else for it. */
        if ((a[0] & 0xe0) != 0x20) {
                set_why(why, len, "reserved (outside global unicast 2000::/3)");
                return false;
        }
        set_why(why, len, "public");
        return true;
}

bool ssrf_is_public(const struct sockaddr *sa, char *why, size_t len)
{
        if (!sa) {
                set_why(why, len, "no address");
                return false;
        }
        if (sa->sa_family == AF_INET) {
                struct sockaddr_in in;
                memcpy(&in, sa, sizeof(in));
                const char *c = v4_class(ntohl(in.sin_addr.s_addr));
                set_why(why, len, "%s", c ? c : "public");
                return c == NULL;
        }
        if (sa->sa_family == AF_INET6) {
                struct sockaddr_in6 in6;
                memcpy(&in6, sa, sizeof(in6));
                return v6_is_public(in6.sin6_addr.s6_addr, why, len);
        }
        set_why(why, len, "not an IP address (address family %d)", sa->sa_family);
        return false;
}

void ssrf_addr_format(const struct sockaddr *sa, char *buf, size_t len)
{
        if (!buf || !len)
                return;
        char t[INET6_ADDRSTRLEN];
        if (sa && sa->sa_family == AF_INET) {
                struct sockaddr_in in;
                memcpy(&in, sa, sizeof(in));
                inet_ntop(AF_INET, &in.sin_addr, t, sizeof(t));
                snprintf(buf, len, "%s", t);
        } else if (sa && sa->sa_family == AF_INET6) {
                struct sockaddr_in6 in6;
                memcpy(&in6, sa, sizeof(in6));
                inet_ntop(AF_INET6, &in6.sin6_addr, t, sizeof(t));
                if (in6.sin6_scope_id)
                        snprintf(buf, len, "[%s%%%u]", t, (unsigned)in6.sin6_scope_id);
                else
                        snprintf(buf, len, "[%s]", t);
        } else {
                snprintf(buf, len, "<family %d>", sa ? sa->sa_family : -1);
        }
}

int ssrf_addr_parse(const char *text, struct sockaddr_storage *ret)
{
        char buf[INET6_ADDRSTRLEN + 2];
        size_t n = text ? strlen(text) : 0;
        if (n == 0 || n >= sizeof(buf))
                return -1;
        memcpy(buf, text, n + 1);
        char *s = buf;
        bool bracketed = s[0] == '[';
        if (bracketed) {
                if (n < 3 || s[n - 1] != ']')
                        return -1;
                s[n - 1] = '\0';
                s++;
        }
        struct sockaddr_storage ss;
        memset(&ss, 0, sizeof(ss));
        if (strchr(s, ':')) {
                struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;
                if (inet_pton(AF_INET6, s, &in6->sin6_addr) != 1)
                        return -1;
                in6->sin6_family = AF_INET6;
        } else {
                struct sockaddr_in *in = (struct sockaddr_in *)&ss;
                if (bracketed || inet_pton(AF_INET, s, &in->sin_addr) != 1)
                        return -1;
                in->sin_family = AF_INET;
        }
        *ret = ss;
        return 0;
}

/* ---- allowlist ---- */

struct allow_entry {
        bool is_addr;
        struct sockaddr_storage addr;  /* is_addr: normalised (mapped -> IPv4) */
        char *name;                    /* !is_addr: lower case, no trailing dot */
        unsigned port;                 /* 0 = any */
};

struct ssrf_allow {
        struct allow_entry *v;
        size_t n, cap;
};

/* Rewrite ::ffff:a.b.c.d as a.b.c.d so both spellings compare equal. */
static void normalise(const struct sockaddr *sa, struct sockaddr_storage *out)
{
        memset(out, 0, sizeof(*out));
        if (sa->sa_family == AF_INET) {
                memcpy(out, sa, sizeof(struct sockaddr_in));
        } else if (sa->sa_family == AF_INET6) {
                struct sockaddr_in6 in6;
                memcpy(&in6, sa, sizeof(in6));
                static const unsigned char mapped[12] = { [10] = 0xff, [11] = 0xff };
                if (memcmp(in6.sin6_addr.s6_addr, mapped, 12) == 0) {
                        struct sockaddr_in *in = (struct sockaddr_in *)out;
                        in->sin_family = AF_INET;
                        in->sin_port = in6.sin6_port;
                        memcpy(&in->sin_addr, in6.sin6_addr.s6_addr + 12, 4);
                } else {
                        memcpy(out, &in6, sizeof(in6));
                }
        } else {
                out->ss_family = sa->sa_family;
        }
}

static unsigned port_of(const struct sockaddr_storage *ss)
{
        if (ss->ss_family == AF_INET)
                return ntohs(((const struct sockaddr_in *)ss)->sin_port);
        if (ss->ss_family == AF_INET6)
                return ntohs(((const struct sockaddr_in6 *)ss)->sin6_port);
        return 0;
}

static bool same_addr(const struct sockaddr_storage *a, const struct sockaddr_storage *b)
{
        if (a->ss_family != b->ss_family)
                return false;
        if (a->ss_family == AF_INET)
                return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
                       ((const struct sockaddr_in *)b)->sin_addr.s_addr;
        if (a->ss_family == AF_INET6)
                return memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
                              &((const struct sockaddr_in6 *)b)->sin6_addr, 16) == 0;
        return false;
}

/* The WHATWG URL parser reads a host whose last label is a number as IPv4
 * ("127.1", "0x7f.1", "2130706433"), and so does curl: such an entry would
 * never match by name.  Refuse it rather than let it silently do nothing. */
static bool ends_in_number(const char *name)
{
        const char *last = strrchr(name, '.');
        last = last ? last + 1 : name;
        if (!*last)
                return false;
        if (last[0] == '0' && (last[1] == 'x' || last[1] == 'X')) {
                for (const char *p = last + 2; *p; p++)
                        if (!isxdigit((unsigned char)*p))
                                return false;
                return true;
        }
        for (const char *p = last; *p; p++)
                if (!isdigit((unsigned char)*p))
                        return false;
        return true;
}

static int parse_port(const char *entry, const char *s, unsigned *ret, struct err **err)
{
        unsigned long v = 0;
        if (!*s)
                return err_set(err, 0, "allow-host '%s': empty port", entry);
        for (const char *p = s; *p; p++) {
                if (!isdigit((unsigned char)*p) || (v = v * 10 + (unsigned long)(*p - '0')) > 65535)
                        return err_set(err, 0, "allow-host '%s': port must be 1..65535", entry);
        }
        if (v == 0)
                return err_set(err, 0, "allow-host '%s': port must be 1..65535", entry);
        *ret = (unsigned)v;
        return 0;
}

/* One entry, already trimmed and non-empty. */
static int parse_entry(const char *entry, struct allow_entry *ret, struct err **err)
{
        struct allow_entry e;
        memset(&e, 0, sizeof(e));
        size_t n = strlen(entry);
        if (strstr(entry, "://") || strchr(entry, '/'))
                return err_set(err, 0, "allow-host '%s': give HOST[:PORT], not a URL", entry);
        char *host = strndup(entry, n);
        if (!host)
                return err_set(err, ENOMEM, "allow-host");
        const char *colon = NULL;
        if (host[0] == '[') {
                char *close = strchr(host, ']');
                if (!close) {
                        free(host);
                        return err_set(err, 0, "allow-host '%s': missing ']'", entry);
                }
                if (close[1] == ':')
                        colon = close + 1;
                else if (close[1]) {
                        free(host);
                        return err_set(err, 0, "allow-host '%s': unexpected text after ']'", entry);
                }
        } else {
                const char *first = strchr(host, ':');
                if (first && !strchr(first + 1, ':'))
                        colon = first;  /* exactly one: HOST:PORT; two or more: a bare IPv6 */
        }
        if (colon) {
                if (parse_port(entry, colon + 1, &e.port, err) < 0) {
                        free(host);
                        return -1;
                }
                host[colon - host] = '\0';
        }
        if (ssrf_addr_parse(host, &e.addr) == 0) {
                struct sockaddr_storage norm;
                normalise((struct sockaddr *)&e.addr, &norm);
                e.addr = norm;
                e.is_addr = true;
                free(host);
                *ret = e;
                return 0;
        }
        if (host[0] == '[' || strchr(host, ':')) {
                free(host);
                return err_set(err, 0, "allow-host '%s': not a valid IPv6 address", entry);
        }
        size_t hl = strlen(host);
        if (hl && host[hl - 1] == '.')
                host[--hl] = '\0';
        if (hl == 0 || hl > 253) {
                free(host);
                return err_set(err, 0, "allow-host '%s': host name must be 1..253 bytes", entry);
        }
        for (char *p = host; *p; p++) {
                unsigned char c = (unsigned char)*p;
                if (!isalnum(c) && c != '-' && c != '_' && c != '.') {
                        free(host);
                        return err_set(err, 0,
                                       "allow-host '%s': host names may hold letters, digits, '-', '_' and '.' "
                                       "(write internationalised names in their xn-- form)",
                                       entry);
                }
                *p = (char)tolower(c);
        }
        if (strstr(host, "..") || host[0] == '.') {
                free(host);
                return err_set(err, 0, "allow-host '%s': empty label in host name", entry);
        }
        if (ends_in_number(host)) {
                free(host);
                return err_set(err, 0, "allow-host '%s': a numeric host must be a full dotted-quad IPv4 address",
                               entry);
        }
        e.name = host;
        *ret = e;
        return 0;
}

int ssrf_allow_add(struct ssrf_allow *a, const char *spec, struct err **err)
{
        if (!a)
                return err_set(err, EINVAL, "allow-host: no list");
        if (!spec)
                return 0;
        size_t old_n = a->n;
        const char *p = spec;
        while (*p) {
                const char *end = strchr(p, ',');
                size_t len = end ? (size_t)(end - p) : strlen(p);
                const char *s = p, *t = p + len;
                while (s < t && isspace((unsigned char)*s))
                        s++;
                while (t > s && isspace((unsigned char)t[-1]))
                        t--;
                if (t > s) {
                        char *entry = strndup(s, (size_t)(t - s));
                        if (!entry)
                                goto oom;
                        if (a->n == a->cap) {
                                size_t cap = a->cap ? a->cap * 2 : 8;
                                struct allow_entry *nv = realloc(a->v, cap * sizeof(*nv));
                                if (!nv) {
                                        free(entry);
                                        goto oom;
                                }
                                a->v = nv;
                                a->cap = cap;
                        }
                        int r = parse_entry(entry, &a->v[a->n], err);
                        free(entry);
                        if (r < 0)
                                goto fail;
                        a->n++;
                }
                p += len;
                if (*p == ',')
                        p++;
        }
        return 0;
oom:
        err_set(err, ENOMEM, "allow-host");
fail:
        while (a->n > old_n)
                free(a->v[--a->n].name);
        return -1;
}

int ssrf_allow_parse(const char *spec, struct ssrf_allow **ret, struct err **err)
{
        struct ssrf_allow *a = calloc(1, sizeof(*a));
        if (!a)
                return err_set(err, ENOMEM, "allow-host");
        if (ssrf_allow_add(a, spec, err) < 0) {
                ssrf_allow_free(a);
                return -1;
        }
        *ret = a;
        return 0;
}

size_t ssrf_allow_count(const struct ssrf_allow *a)
{
        return a ? a->n : 0;
}

static bool name_equal(const char *entry, const char *host)
{
        size_t el = strlen(entry), hl = strlen(host);
        if (hl && host[hl - 1] == '.')
                hl--;
        return el == hl && strncasecmp(entry, host, hl) == 0;
}

bool ssrf_allow_match(const struct ssrf_allow *a, const char *host, const struct sockaddr *sa)
{
        if (!a || !sa || (sa->sa_family != AF_INET && sa->sa_family != AF_INET6))
                return false;
        struct sockaddr_storage norm;
        normalise(sa, &norm);
        unsigned port = port_of(&norm);
        for (size_t i = 0; i < a->n; i++) {
                const struct allow_entry *e = &a->v[i];
                if (e->port && e->port != port)
                        continue;
                if (e->is_addr ? same_addr(&e->addr, &norm) : (host && name_equal(e->name, host)))
                        return true;
        }
        return false;
}

void ssrf_allow_free(struct ssrf_allow *a)
{
        if (!a)
                return;
        for (size_t i = 0; i < a->n; i++)
                free(a->v[i].name);
        free(a->v);
        free(a);
}
