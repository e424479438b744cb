/* tests/unit/test_secrets.c — effects/net/secrets.c: the --secrets file,
 * its errors (which never quote a value), hosts, and the placeholder's
 * substitution (docs/secrets.md). */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/err.h"
#include "effects/net/secrets.h"

#define VALUE "sk-live-7f3a9c2e51d8"

static char tmpdir[64];

static const char *fake_env(const char *name)
{
        if (strcmp(name, "API_KEY") == 0)
                return VALUE;
        if (strcmp(name, "BAD_KEY") == 0)
                return "abc\r\nX-Injected: " VALUE;
        if (strcmp(name, "EMPTY") == 0)
                return "";
        return NULL;
}

static struct secrets *parse_ok(const char *json)
{
        struct secrets *s = NULL;
        struct err *e = NULL;
        if (secrets_parse(json, strlen(json), "s.json", tmpdir, fake_env, &s, &e) < 0)
                fail_msg("parse %s: %s", json, err_msg(e));
        assert_non_null(s);
        return s;
}

/* Parsing fails with exactly `want`; no message ever holds the value. */
static void parse_err(const char *json, const char *want)
{
        struct secrets *s = NULL;
        struct err *e = NULL;
        if (secrets_parse(json, strlen(json), "s.json", tmpdir, fake_env, &s, &e) == 0)
                fail_msg("parse %s succeeded, want '%s'", json, want);
        assert_int_equal(err_code(e), SECRETS_E_CONFIG);
        if (strcmp(err_msg(e), want) != 0)
                fail_msg("message\n got: %s\nwant: %s", err_msg(e), want);
        assert_null(strstr(err_msg(e), VALUE));
        err_free(e);
}

static int setup(void **state)
{
        (void)state;
        snprintf(tmpdir, sizeof(tmpdir), "/tmp/test_secrets.XXXXXX");
        return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state)
{
        (void)state;
        const char *names[] = { "tok", "two-lines" };
        char path[160];
        for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
                snprintf(path, sizeof(path), "%s/%s", tmpdir, names[i]);
                unlink(path);
        }
        return rmdir(tmpdir);
}

static void write_tmp(const char *name, const char *text)
{
        char path[160];
        snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
        FILE *f = fopen(path, "w");
        assert_non_null(f);
        fputs(text, f);
        fclose(f);
}

static void file_shapes(void **state)
{
        (void)state;
        write_tmp("tok", VALUE "\n");
        struct secrets *s = parse_ok("{\"A\": {\"from_env\": \"API_KEY\", \"hosts\": [\"api.example.com\"]},"
                                     " \"b.2-x_\": {\"from_file\": \"tok\", \"hosts\": [\"127.0.0.1:8080\", \"[::1]\"]}}");
        assert_int_equal(secrets_count(s), 2);
        assert_string_equal(secrets_name(s, 0), "A");
        assert_string_equal(secrets_value(s, 0), VALUE);
        assert_string_equal(secrets_name(s, 1), "b.2-x_");
        assert_string_equal(secrets_value(s, 1), VALUE); /* the file's one trailing newline dropped */
        assert_int_equal(secrets_nhosts(s, 1), 2);
        assert_string_equal(secrets_host(s, 1, 1), "[::1]");
        secrets_free(s);
        s = parse_ok("{}");
        assert_int_equal(secrets_count(s), 0);
        secrets_free(s);
}

static void file_errors(void **state)
{
        (void)state;
        parse_err("[]", "s.json: expected an object of secrets, {\"NAME\": {\"from_env\": \"VAR\", \"hosts\": "
                        "[\"api.example.com\"]}}");
        parse_err("{\"A\": {\"from_env\": \"API_KEY\"", "s.json: not valid JSON at line 1, column 29: unexpected end of the text (expected ',' or '}')");
        parse_err("{\"A\": {\"from_env\": \"API_KEY\", \"hosts\": [\"h\"], \"host\": 1}}",
                  "s.json: secret \"A\": unknown key \"host\" (expected from_env or from_file, and hosts)");
        parse_err("{\"A\": {\"from_env\": \"API_KEY\", \"from_file\": \"x\", \"hosts\": [\"h\"]}}",
                  "s.json: secret \"A\": needs exactly one of from_env and from_file");
        parse_err("{\"A\": {\"hosts\": [\"h\"]}}", "s.json: secret \"A\": needs exactly one of from_env and from_file");
        parse_err("{\"A\": {\"from_env\": \"API_KEY\", \"hosts\": []}}",
                  "s.json: secret \"A\": needs \"hosts\": a non-empty array of HOST[:PORT] strings (where the value "
                  "may be sent)");
        parse_err("{\"A\": {\"from_env\": \"NOPE\", \"hosts\": [\"h\"]}}",
                  "s.json: secret \"A\": the environment variable 'NOPE' (from_env) is not set or empty");
        parse_err("{\"A\": {\"from_env\": \"EMPTY\", \"hosts\": [\"h\"]}}",
                  "s.json: secret \"A\": the environment variable 'EMPTY' (from_env) is not set or empty");
        parse_err("{\"A\": {\"from_env\": \"BAD_KEY\", \"hosts\": [\"h\"]}}",
                  "s.json: the value of secret 'A' holds a control byte or a byte outside ASCII (a header value "
                  "cannot carry it) (from_env)");
        parse_err("{\"A b\": {\"from_env\": \"API_KEY\", \"hosts\": [\"h\"]}}",
                  "s.json: secret \"A b\": the name must be 1 to 64 letters, digits, '_', '-' or '.' (it is "
                  "written {{secret:NAME}} in a header)");
        parse_err("{\"A\": {\"from_env\": \"API_KEY\", \"hosts\": [\"https://api.example.com/\"]}}",
                  "s.json: secret 'A': host 'https://api.example.com/' is not HOST[:PORT] (write the host alone, "
                  "without a scheme, path or user) (hosts[0]; expected HOST[:PORT], e.g. api.example.com or "
                  "127.0.0.1:8080)");
        parse_err("{\"A\": {\"from_env\": \"API_KEY\", \"hosts\": [\"h\", \"h:0\"]}}",
                  "s.json: secret 'A': host 'h:0' has a port that is not a number from 1 to 65535 (hosts[1]; "
                  "expected HOST[:PORT], e.g. api.example.com or 127.0.0.1:8080)");
        parse_err("{\"A\": {\"from_env\": \"API_KEY\", \"hosts\": [\"127.1\"]}}",
                  "s.json: secret 'A': host '127.1' is all digits but not a dotted-quad IPv4 address (hosts[0]; "
                  "expected HOST[:PORT], e.g. api.example.com or 127.0.0.1:8080)");
        parse_err("{\"A\": {\"from_env\": \"API_KEY\", \"hosts\": [\"h\"]}, \"A\": {\"from_env\": \"API_KEY\", "
                  "\"hosts\": [\"h\"]}}",
                  "s.json: duplicate key \"A\"");
        char want[256];
        snprintf(want, sizeof(want), "s.json: secret \"A\": from_file '%s/missing' cannot be read (No such file or "
                                     "directory)", tmpdir);
        parse_err("{\"A\": {\"from_file\": \"missing\", \"hosts\": [\"h\"]}}", want);
        write_tmp("two-lines", VALUE "\nsecond\n");
        parse_err("{\"A\": {\"from_file\": \"two-lines\", \"hosts\": [\"h\"]}}",
                  "s.json: the value of secret 'A' holds a control byte or a byte outside ASCII (a header value "
                  "cannot carry it) (from_file)");
}

static void load_missing_file(void **state)
{
        (void)state;
        struct secrets *s = NULL;
        struct err *e = NULL;
        assert_int_equal(secrets_load("/nonexistent/s.json", fake_env, &s, &e), -1);
        assert_string_equal(err_msg(e), "/nonexistent/s.json: cannot be read: No such file or directory");
        err_free(e);
}

struct gate_rec {
        int calls;
        bool allow;
        char last[128];
};

static bool gate(void *arg, const char *name, const char *url, char *msg, size_t len)
{
        struct gate_rec *g = arg;
        g->calls++;
        snprintf(g->last, sizeof(g->last), "%s %s", name, url);
        if (!g->allow)
                snprintf(msg, len, "policy: `secret:%s` denied", name);
        return g->allow;
}

/* secrets_fill: 0 and the filled text, or -1 with its code and message. */
static int fill(const struct secrets *s, const char *value, const char *host, long port, struct gate_rec *g,
                char **out, char *msg, size_t len)
{
        struct err *e = NULL;
        *out = NULL;
        int r = secrets_fill(s, "Authorization", value, "http://x/", host, port, g ? gate : NULL, g, out, &e);
        if (r < 0) {
                snprintf(msg, len, "%s", err_msg(e));
                assert_null(strstr(err_msg(e), VALUE));
                r = -err_code(e);
                err_free(e);
        }
        return r;
}

static void substitution(void **state)
{
        (void)state;
        struct secrets *s = parse_ok("{\"K\": {\"from_env\": \"API_KEY\", \"hosts\": [\"api.example.com\", "
                                     "\"127.0.0.1:8080\", \"[::1]:9\", \"Upper.Example.\"]}}");
        struct gate_rec g = { .allow = true };
        char *out, msg[512];
        assert_true(secrets_has_placeholder("Bearer {{secret:K}}"));
        assert_false(secrets_has_placeholder("Bearer {secret:K}"));
        assert_int_equal(fill(s, "Bearer {{secret:K}}", "api.example.com", 443, &g, &out, msg, sizeof(msg)), 0);
        assert_string_equal(out, "Bearer " VALUE);
        free(out);
        assert_int_equal(g.calls, 1);
        assert_string_equal(g.last, "K http://x/");
        /* two placeholders, text around; any port for an entry without one */
        assert_int_equal(fill(s, "{{secret:K}}:{{secret:K}}!", "api.example.com", 8443, &g, &out, msg, sizeof(msg)),
                         0);
        assert_string_equal(out, VALUE ":" VALUE "!");
        free(out);
        /* a port pins it; case, a trailing dot and brackets do not matter */
        assert_int_equal(fill(s, "{{secret:K}}", "127.0.0.1", 8080, &g, &out, msg, sizeof(msg)), 0);
        free(out);
        assert_int_equal(fill(s, "{{secret:K}}", "upper.example", 80, &g, &out, msg, sizeof(msg)), 0);
        free(out);
        assert_int_equal(fill(s, "{{secret:K}}", "[0:0::1]", 9, &g, &out, msg, sizeof(msg)), 0);
        free(out);
        assert_int_equal(fill(s, "{{secret:K}}", "127.0.0.1", 8081, &g, &out, msg, sizeof(msg)), -SECRETS_E_HOST);
        assert_string_equal(msg, "secret 'K' may not be sent to host '127.0.0.1' port 8081 (it is declared for "
                                 "api.example.com, 127.0.0.1:8080, [::1]:9, Upper.Example.); the request was not "
                                 "sent there");
        assert_int_equal(fill(s, "{{secret:K}}", "api.example.com.evil.example", 443, &g, &out, msg, sizeof(msg)),
                         -SECRETS_E_HOST);
        assert_null(out);
        assert_int_equal(fill(s, "x {{secret:NOPE}}", "api.example.com", 443, &g, &out, msg, sizeof(msg)),
                         -SECRETS_E_UNKNOWN);
        assert_string_equal(msg, "secret 'NOPE' is not declared (the operator declares secrets with --secrets FILE)");
        assert_int_equal(fill(s, "{{secret:K}", "api.example.com", 443, &g, &out, msg, sizeof(msg)),
                         -SECRETS_E_SYNTAX);
        assert_string_equal(msg, "header 'Authorization' has a malformed secret placeholder (expected "
                                 "{{secret:NAME}}, NAME of letters, digits, '_', '-' or '.')");
        assert_int_equal(fill(s, "{{secret:}}", "api.example.com", 443, &g, &out, msg, sizeof(msg)),
                         -SECRETS_E_SYNTAX);
        /* the policy is asked first: a refused agent learns nothing more */
        g.allow = false;
        assert_int_equal(fill(s, "{{secret:NOPE}}", "api.example.com", 443, &g, &out, msg, sizeof(msg)),
                         -SECRETS_E_POLICY);
        assert_string_equal(msg, "policy: `secret:NOPE` denied");
        /* no table: every name is unknown */
        assert_int_equal(fill(NULL, "{{secret:K}}", "api.example.com", 443, NULL, &out, msg, sizeof(msg)),
                         -SECRETS_E_UNKNOWN);
        secrets_free(s);
}

/* The blob's form: secret= and secret_host= entries, checked as the file's. */
static void add_entries(void **state)
{
        (void)state;
        struct secrets *s = NULL;
        struct err *e = NULL;
        assert_int_equal(secrets_add(&s, "K", VALUE, &e), 0);
        assert_int_equal(secrets_add_host(s, "K", "api.example.com:443", &e), 0);
        assert_int_equal(secrets_add(&s, "K", VALUE, &e), -1);
        assert_string_equal(err_msg(e), "secret 'K' is declared twice");
        err_free(e);
        e = NULL;
        assert_int_equal(secrets_add_host(s, "J", "h", &e), -1);
        assert_string_equal(err_msg(e), "a host for secret 'J', which is not declared");
        err_free(e);
        e = NULL;
        assert_int_equal(secrets_add(&s, "V", " padded", &e), -1);
        assert_string_equal(err_msg(e), "the value of secret 'V' begins or ends with white space (a header value "
                                        "would lose it)");
        err_free(e);
        char out_msg[8];
        char *out = NULL;
        assert_int_equal(fill(s, "{{secret:K}}", "api.example.com", 80, NULL, &out, out_msg, sizeof(out_msg)),
                         -SECRETS_E_HOST);
        secrets_free(s);
        secrets_free(NULL);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(file_shapes),
                cmocka_unit_test(file_errors),
                cmocka_unit_test(load_missing_file),
                cmocka_unit_test(substitution),
                cmocka_unit_test(add_entries),
        };
        return cmocka_run_group_tests(tests, setup, teardown);
}
