/* tests/unit/test_ssrf.c — effects/net/ssrf.c: address classification (one
 * cmocka test per address, so the count says how many ranges are covered)
 * and the allowlist.  Pure functions: nothing here opens a socket. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <cmocka.h>

#include "common/err.h"
#include "effects/net/ssrf.h"

struct ccase {
        const char *addr;
        bool public;
        const char *why;  /* substring of the reason, or NULL */
};

static const struct ccase cases[] = {
        /* public controls: classification only, nothing connects */
        { "8.8.8.8", true, "public" },
        { "1.1.1.1", true, NULL },
        { "2606:4700::1111", true, NULL },
        { "2001:4860:4860::8888", true, NULL },
        { "93.184.216.34", true, NULL },
        { "11.0.0.1", true, NULL },
        { "100.63.255.255", true, NULL },
        { "100.128.0.0", true, NULL },
        { "169.253.255.255", true, NULL },
        { "172.15.255.255", true, NULL },
        { "172.32.0.0", true, NULL },
        { "192.0.1.1", true, NULL },
        { "192.169.0.1", true, NULL },
        { "198.17.255.255", true, NULL },
        { "198.20.0.1", true, NULL },
        { "223.255.255.255", true, NULL },
        { "::ffff:8.8.8.8", true, NULL },
        { "64:ff9b::808:808", true, NULL },
        { "2002:808:808::1", true, NULL },
        { "2001:0:808:808::fefe:fefe", true, NULL },  /* Teredo: server 8.8.8.8, client ~1.1.1.1 */
        /* IPv4 */
        { "127.0.0.1", false, "loopback 127.0.0.0/8" },
        { "127.255.255.254", false, "loopback" },
        { "0.0.0.0", false, "unspecified" },
        { "0.1.2.3", false, "0.0.0.0/8" },
        { "10.0.0.1", false, "10.0.0.0/8" },
        { "10.255.255.255", false, "RFC 1918" },
        { "172.16.0.1", false, "172.16.0.0/12" },
        { "172.31.255.255", false, "172.16.0.0/12" },
        { "192.168.1.1", false, "192.168.0.0/16" },
        { "169.254.169.254", false, "cloud metadata" },
        { "169.254.1.1", false, "link-local 169.254.0.0/16" },
        { "100.64.0.1", false, "100.64.0.0/10" },
        { "100.127.255.255", false, "CGNAT" },
        { "192.0.0.8", false, "192.0.0.0/24" },
        { "192.0.2.1", false, "192.0.2.0/24" },
        { "198.51.100.7", false, "198.51.100.0/24" },
        { "203.0.113.9", false, "203.0.113.0/24" },
        { "198.18.0.1", false, "benchmarking" },
        { "198.19.255.255", false, "198.18.0.0/15" },
        { "224.0.0.1", false, "multicast" },
        { "239.255.255.250", false, "224.0.0.0/4" },
        { "255.255.255.255", false, "broadcast" },
        { "240.0.0.1", false, "reserved 240.0.0.0/4" },
        { "254.1.2.3", false, "240.0.0.0/4" },
        { "192.88.99.1", false, "6to4 relay" },
        /* IPv6 */
        { "::1", false, "loopback ::1" },
        { "::", false, "unspecified" },
        { "fe80::1", false, "link-local fe80::/10" },
        { "febf:ffff::1", false, "fe80::/10" },
        { "fc00::1", false, "unique-local" },
        { "fd12:3456:789a::1", false, "fc00::/7" },
        { "ff02::1", false, "multicast" },
        { "ff05::1:3", false, "ff00::/8" },
        { "2001:db8::1", false, "documentation 2001:db8::/32" },
        { "2001:db8:ffff:ffff::1", false, "2001:db8::/32" },
        { "fec0::1", false, "site-local" },
        { "100::1", false, "discard" },
        { "100::ffff:ffff:ffff:ffff", false, "100::/64" },
        { "2001:2::1", false, "benchmarking" },
        { "2001:20::1", false, "ORCHID" },
        { "3fff::1", false, "3fff::/20" },
        { "4000::1", false, "outside global unicast" },
        { "5f00::1", false, "reserved" },
        /* IPv4-mapped */
        { "::ffff:127.0.0.1", false, "IPv4-mapped ::ffff:0:0/96 of 127.0.0.1: loopback" },
        { "::ffff:10.0.0.1", false, "RFC 1918" },
        { "::ffff:169.254.169.254", false, "cloud metadata" },
        { "::ffff:192.168.0.1", false, "mapped" },
        { "::ffff:0.0.0.0", false, "unspecified" },
        { "::ffff:255.255.255.255", false, "broadcast" },
        { "::ffff:100.64.0.1", false, "CGNAT" },
        /* IPv4-compatible (deprecated): never public */
        { "::127.0.0.1", false, "IPv4-compatible" },
        { "::10.0.0.1", false, "10.0.0.0/8" },
        { "::169.254.169.254", false, "cloud metadata" },
        { "::8.8.8.8", false, "IPv4-compatible ::/96 (deprecated)" },
        /* SIIT */
        { "::ffff:0:127.0.0.1", false, "IPv4-translated" },
        /* NAT64 */
        { "64:ff9b::127.0.0.1", false, "NAT64 64:ff9b::/96 of 127.0.0.1" },
        { "64:ff9b::10.1.2.3", false, "RFC 1918" },
        { "64:ff9b::169.254.169.254", false, "cloud metadata" },
        { "64:ff9b::c0a8:1", false, "192.168.0.0/16" },
        { "64:ff9b:1::10.0.0.1", false, "local-use NAT64" },
        { "64:ff9b:1::8.8.8.8", false, "64:ff9b:1::/48" },
        /* 6to4 */
        { "2002:7f00:1::1", false, "6to4 2002::/16 of 127.0.0.1" },
        { "2002:c0a8:101::", false, "192.168.0.0/16" },
        { "2002:a9fe:a9fe::1", false, "cloud metadata" },
        { "2002:a00:1::", false, "10.0.0.0/8" },
        /* Teredo: server at bits 32..63, client is ~(last 32 bits) */
        { "2001:0:808:808::80ff:fffe", false, "Teredo 2001::/32 client 127.0.0.1: loopback" },
        { "2001:0:808:808::f5ff:fffe", false, "client 10.0.0.1" },
        { "2001:0:a00:1::fefe:fefe", false, "Teredo 2001::/32 server 10.0.0.1" },
        { "2001:0:808:808::5601:5601", false, "client 169.254.169.254" },
        { "2001:0:7f00:1::fefe:fefe", false, "server 127.0.0.1" },
};

static void parse_sa(const char *s, struct sockaddr_storage *ss)
{
        memset(ss, 0, sizeof(*ss));
        if (strchr(s, ':')) {
                struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;
                in6->sin6_family = AF_INET6;
                assert_int_equal(inet_pton(AF_INET6, s, &in6->sin6_addr), 1);
        } else {
                struct sockaddr_in *in = (struct sockaddr_in *)ss;
                in->sin_family = AF_INET;
                assert_int_equal(inet_pton(AF_INET, s, &in->sin_addr), 1);
        }
}

static void test_classify(void **state)
{
        const struct ccase *c = *state;
        struct sockaddr_storage ss;
        parse_sa(c->addr, &ss);
        char why[160] = "unset";
        bool pub = ssrf_is_public((struct sockaddr *)&ss, why, sizeof(why));
        if (pub != c->public)
                fail_msg("%s: expected %s, got %s (%s)", c->addr, c->public ? "public" : "not public",
                         pub ? "public" : "not public", why);
        if (c->why && !strstr(why, c->why))
                fail_msg("%s: reason '%s' does not mention '%s'", c->addr, why, c->why);
        /* why may be NULL */
        assert_int_equal(ssrf_is_public((struct sockaddr *)&ss, NULL, 0), c->public);
}

static void test_not_ip(void **state)
{
        (void)state;
        struct sockaddr_un un = { .sun_family = AF_UNIX, .sun_path = "/run/x" };
        char why[128];
        assert_false(ssrf_is_public((struct sockaddr *)&un, why, sizeof(why)));
        assert_non_null(strstr(why, "not an IP address"));
        assert_false(ssrf_is_public(NULL, why, sizeof(why)));
}

static void test_why_truncates(void **state)
{
        (void)state;
        struct sockaddr_storage ss;
        parse_sa("::ffff:169.254.169.254", &ss);
        char why[8];
        assert_false(ssrf_is_public((struct sockaddr *)&ss, why, sizeof(why)));
        assert_int_equal(strlen(why), 7);
}

static void test_format(void **state)
{
        (void)state;
        struct sockaddr_storage ss;
        char buf[SSRF_ADDR_MAX];
        parse_sa("127.0.0.1", &ss);
        ssrf_addr_format((struct sockaddr *)&ss, buf, sizeof(buf));
        assert_string_equal(buf, "127.0.0.1");
        parse_sa("::1", &ss);
        ssrf_addr_format((struct sockaddr *)&ss, buf, sizeof(buf));
        assert_string_equal(buf, "[::1]");
        parse_sa("::ffff:127.0.0.1", &ss);
        ssrf_addr_format((struct sockaddr *)&ss, buf, sizeof(buf));
        assert_string_equal(buf, "[::ffff:127.0.0.1]");
        parse_sa("fe80::1", &ss);
        ((struct sockaddr_in6 *)&ss)->sin6_scope_id = 2;
        ssrf_addr_format((struct sockaddr *)&ss, buf, sizeof(buf));
        assert_string_equal(buf, "[fe80::1%2]");
}

static void test_addr_parse_strict(void **state)
{
        (void)state;
        struct sockaddr_storage ss;
        assert_int_equal(ssrf_addr_parse("127.0.0.1", &ss), 0);
        assert_int_equal(ss.ss_family, AF_INET);
        assert_int_equal(ssrf_addr_parse("[::1]", &ss), 0);
        assert_int_equal(ss.ss_family, AF_INET6);
        assert_int_equal(ssrf_addr_parse("::1", &ss), 0);
        const char *bad[] = { "127.1", "0x7f.1", "2130706433", "017700000001", "[127.0.0.1]", "", "[::1",
                              "localhost", "1.2.3.4.5", "::g" };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
                if (ssrf_addr_parse(bad[i], &ss) == 0)
                        fail_msg("'%s' parsed as an address", bad[i]);
        assert_int_equal(ssrf_addr_parse(NULL, &ss), -1);
}

/* ---- allowlist ---- */

static void sa_port(struct sockaddr_storage *ss, const char *addr, unsigned port)
{
        parse_sa(addr, ss);
        if (ss->ss_family == AF_INET)
                ((struct sockaddr_in *)ss)->sin_port = htons((uint16_t)port);
        else
                ((struct sockaddr_in6 *)ss)->sin6_port = htons((uint16_t)port);
}

static bool allows(const struct ssrf_allow *a, const char *host, const char *addr, unsigned port)
{
        struct sockaddr_storage ss;
        sa_port(&ss, addr, port);
        return ssrf_allow_match(a, host, (struct sockaddr *)&ss);
}

static void test_allow_parse_and_match(void **state)
{
        (void)state;
        struct ssrf_allow *a = NULL;
        struct err *e = NULL;
        int r = ssrf_allow_parse(" example.com, API.Example.COM:8443,127.0.0.1,[::1]:8080,::2 ,10.0.0.1:80,, "
                                 "internal.corp.",
                                 &a, &e);
        if (r < 0)
                fail_msg("%s", err_msg(e));
        assert_int_equal(ssrf_allow_count(a), 7);
        /* names: case-insensitive, any address, trailing dot ignored */
        assert_true(allows(a, "example.com", "10.9.9.9", 443));
        assert_true(allows(a, "EXAMPLE.com.", "10.9.9.9", 80));
        assert_false(allows(a, "evilexample.com", "10.9.9.9", 443));
        assert_false(allows(a, "example.com.evil", "10.9.9.9", 443));
        assert_false(allows(a, "sub.example.com", "10.9.9.9", 443));
        assert_true(allows(a, "api.example.com", "192.168.0.5", 8443));
        assert_false(allows(a, "api.example.com", "192.168.0.5", 443));
        assert_true(allows(a, "internal.corp", "172.16.0.1", 1));
        assert_false(allows(a, NULL, "172.16.0.1", 1));
        /* addresses: compared as addresses, any host */
        assert_true(allows(a, "anything", "127.0.0.1", 1234));
        assert_true(allows(a, NULL, "::ffff:127.0.0.1", 1234));
        assert_false(allows(a, "127.0.0.1", "127.0.0.2", 1234));
        assert_true(allows(a, NULL, "::1", 8080));
        assert_false(allows(a, NULL, "::1", 8081));
        assert_true(allows(a, NULL, "::2", 9));
        assert_true(allows(a, NULL, "10.0.0.1", 80));
        assert_false(allows(a, NULL, "10.0.0.1", 81));
        assert_false(allows(a, "10.0.0.1", "10.0.0.2", 80));
        ssrf_allow_free(a);
}

static void test_allow_add_and_empty(void **state)
{
        (void)state;
        struct ssrf_allow *a = NULL;
        assert_int_equal(ssrf_allow_parse(NULL, &a, NULL), 0);
        assert_int_equal(ssrf_allow_count(a), 0);
        assert_false(allows(a, "localhost", "127.0.0.1", 80));
        assert_int_equal(ssrf_allow_add(a, "localhost:8080", NULL), 0);
        assert_int_equal(ssrf_allow_add(a, "", NULL), 0);
        assert_int_equal(ssrf_allow_count(a), 1);
        /* a failing add leaves the list as it was */
        struct err *e = NULL;
        assert_int_equal(ssrf_allow_add(a, "good.example, bad host", &e), -1);
        assert_non_null(strstr(err_msg(e), "bad host"));
        err_free(e);
        assert_int_equal(ssrf_allow_count(a), 1);
        assert_true(allows(a, "LOCALHOST", "::1", 8080));
        assert_false(allows(a, "good.example", "10.0.0.1", 80));
        ssrf_allow_free(a);
        assert_false(allows(NULL, "localhost", "127.0.0.1", 80));
        ssrf_allow_free(NULL);
        assert_int_equal(ssrf_allow_count(NULL), 0);
}

static void test_allow_errors(void **state)
{
        (void)state;
        static const struct {
                const char *spec, *msg;
        } bad[] = {
                { "http://example.com", "not a URL" },
                { "example.com/path", "not a URL" },
                { "host:0", "1..65535" },
                { "host:70000", "1..65535" },
                { "host:", "empty port" },
                { "host:8x", "1..65535" },
                { "[::1", "missing ']'" },
                { "[::1]x", "after ']'" },
                { "[zz]:1", "IPv6" },
                { "127.1", "dotted-quad" },
                { "0x7f.1", "dotted-quad" },
                { "2130706433", "dotted-quad" },
                { "ex ample", "letters, digits" },
                { "a..b", "empty label" },
                { ".a", "empty label" },
                { "bücher.example", "xn--" },
        };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                struct ssrf_allow *a = NULL;
                struct err *e = NULL;
                if (ssrf_allow_parse(bad[i].spec, &a, &e) == 0)
                        fail_msg("'%s' was accepted", bad[i].spec);
                if (!strstr(err_msg(e), bad[i].msg))
                        fail_msg("'%s': message '%s' lacks '%s'", bad[i].spec, err_msg(e), bad[i].msg);
                err_free(e);
        }
}

int main(void)
{
        size_t nc = sizeof(cases) / sizeof(cases[0]);
        static const struct CMUnitTest fixed[] = {
                cmocka_unit_test(test_not_ip),
                cmocka_unit_test(test_why_truncates),
                cmocka_unit_test(test_format),
                cmocka_unit_test(test_addr_parse_strict),
                cmocka_unit_test(test_allow_parse_and_match),
                cmocka_unit_test(test_allow_add_and_empty),
                cmocka_unit_test(test_allow_errors),
        };
        size_t nf = sizeof(fixed) / sizeof(fixed[0]);
        struct CMUnitTest *tests = calloc(nc + nf, sizeof(*tests));
        if (!tests)
                return 1;
        for (size_t i = 0; i < nc; i++) {
                tests[i].name = cases[i].addr;
                tests[i].test_func = test_classify;
                tests[i].initial_state = (void *)&cases[i];
        }
        memcpy(tests + nc, fixed, sizeof(fixed));
        int r = _cmocka_run_group_tests("ssrf", tests, nc + nf, NULL, NULL);
        free(tests);
        return r;
}
