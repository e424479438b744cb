/* tests/unit/test_policy.c — policy/policy.c: profiles, the file schema and
 * its error paths, match_args, selection order, layering and the texts the
 * user reads (docs/policy.md). */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "common/err.h"
#include "policy/policy.h"

static char tmpdir[64];

/* ---- helpers ---- */

static struct policy *parse_ok(const char *json)
{
        struct policy *p = NULL;
        struct err *e = NULL;
        if (policy_parse(json, strlen(json), NULL, &p, &e) < 0)
                fail_msg("parse %s: %s", json, err_msg(e));
        assert_non_null(p);
        return p;
}

/* Parsing must fail with exactly `want` and err code `code`. */
static void parse_err(const char *json, int code, const char *want)
{
        struct policy *p = (struct policy *)0x1;
        struct err *e = NULL;
        if (policy_parse(json, strlen(json), NULL, &p, &e) == 0)
                fail_msg("parse %s succeeded, want error '%s'", json, want);
        assert_ptr_equal(p, (struct policy *)0x1);
        if (strcmp(err_msg(e), want) != 0)
                fail_msg("parse %s\n got: %s\nwant: %s", json, err_msg(e), want);
        assert_int_equal(err_code(e), code);
        err_free(e);
}

/* Decide `target` with args given as JSON text (NULL = no args). */
static enum policy_decision decide(const struct policy *p, const char *target, const char *args_json,
                                   struct policy_verdict *ret)
{
        struct policy_verdict v;
        cJSON *args = NULL;
        if (args_json && !(args = cJSON_Parse(args_json)))
                fail_msg("test args do not parse: %s", args_json);
        enum policy_decision d = policy_check(p, target, args, ret ? ret : &v);
        cJSON_Delete(args);
        return d;
}

static void assert_decide(const struct policy *p, const char *target, const char *args, enum policy_decision want)
{
        enum policy_decision got = decide(p, target, args, NULL);
        if (got != want)
                fail_msg("%s %s: got %s, want %s", target, args ? args : "(no args)", policy_decision_name(got),
                         policy_decision_name(want));
}

/* A one-rule http policy with this match_args, default never_allow. */
static struct policy *http_rule(const char *match_args)
{
        char buf[1024];
        snprintf(buf, sizeof(buf),
                 "{\"rules\":[{\"target\":\"http\",\"decision\":\"always_allow\",\"match_args\":%s}],"
                 "\"default\":\"never_allow\"}",
                 match_args);
        return parse_ok(buf);
}

static void assert_describe(const struct policy *p, const char *want)
{
        char buf[1024];
        policy_describe(p, buf, sizeof(buf));
        if (strcmp(buf, want) != 0)
                fail_msg("describe\n got: %s\nwant: %s", buf, want);
}

static const char *write_tmp(const char *name, const char *text)
{
        static char path[128];
        snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
        FILE *f = fopen(path, "w");
        assert_non_null(f);
        fputs(text, f);
        fclose(f);
        return path;
}

struct sel {
        struct policy *p;
        char *warning;
};

static struct sel select_ok(struct policy_sources src)
{
        struct sel s = { 0 };
        struct err *e = NULL;
        s.warning = (char *)0x1;
        if (policy_select(&src, &s.p, &s.warning, &e) < 0)
                fail_msg("select: %s", err_msg(e));
        assert_non_null(s.p);
        assert_true(s.warning != (char *)0x1);
        return s;
}

static void sel_free(struct sel *s)
{
        policy_free(s->p);
        free(s->warning);
}

static void assert_warning(const struct sel *s, const char *want)
{
        if (!s->warning)
                fail_msg("no warning, want: %s", want);
        if (strcmp(s->warning, want) != 0)
                fail_msg("warning\n got: %s\nwant: %s", s->warning, want);
}

static const char permissive_json[] = "{\"rules\":[],\"default\":\"always_allow\"}";

/* ---- profiles ---- */

static void profile_permissive(void **state)
{
        (void)state;
        struct policy *p = NULL;
        assert_int_equal(policy_profile("permissive", NULL, &p, NULL), 0);
        struct policy_verdict v;
        assert_int_equal(decide(p, "http", "{\"url\":\"https://x/\"}", &v), POLICY_ALLOW);
        assert_int_equal(v.rule_index, POLICY_RULE_FALLBACK);
        assert_null(v.reason);
        assert_ptr_equal(v.policy, p);
        assert_decide(p, "workspace:write", NULL, POLICY_ALLOW);
        assert_decide(p, "workspace:delete", NULL, POLICY_ALLOW);
        assert_decide(p, "tool:shell", NULL, POLICY_ALLOW);
        assert_decide(p, "app_data:put", NULL, POLICY_ALLOW);
        assert_decide(p, "secret:API_KEY", NULL, POLICY_ALLOW);
        assert_int_equal(policy_rule_count(p), 0);
        assert_int_equal(policy_fallback(p), POLICY_ALLOW);
        assert_string_equal(policy_name(p), "permissive");
        assert_describe(p, "permissive (profile)");
        policy_free(p);
}

static void profile_untrusted(void **state)
{
        (void)state;
        struct policy *p = NULL;
        assert_int_equal(policy_profile("untrusted", "session policy_profile", &p, NULL), 0);
        struct policy_verdict v;
        assert_int_equal(decide(p, "workspace:list", NULL, &v), POLICY_ALLOW);
        assert_int_equal(v.rule_index, 0);
        assert_int_equal(decide(p, "workspace:read", "{\"path\":\"a\"}", &v), POLICY_ALLOW);
        assert_int_equal(v.rule_index, 1);
        assert_int_equal(decide(p, "workspace:manifest", NULL, &v), POLICY_ALLOW);
        assert_int_equal(v.rule_index, 2);
        assert_decide(p, "workspace:write", NULL, POLICY_DENY);
        assert_decide(p, "workspace:delete", NULL, POLICY_DENY);
        assert_decide(p, "tool:search", NULL, POLICY_DENY);
        assert_decide(p, "app_data:get", NULL, POLICY_DENY);
        assert_decide(p, "secret:API_KEY", NULL, POLICY_DENY);
        assert_int_equal(decide(p, "http", "{\"url\":\"https://api.example.com/\"}", &v), POLICY_DENY);
        assert_int_equal(v.rule_index, POLICY_RULE_FALLBACK);
        assert_string_equal(v.reason, "the untrusted profile allows only workspace:list, workspace:read and "
                                      "workspace:manifest (selected by session policy_profile)");
        assert_describe(p, "untrusted (session policy_profile)");
        assert_false(policy_is_fail_closed(p));
        policy_free(p);
}

static void profile_supervised(void **state)
{
        (void)state;
        struct policy *p = NULL;
        assert_int_equal(policy_profile("supervised", NULL, &p, NULL), 0);
        assert_decide(p, "workspace:list", NULL, POLICY_ALLOW);
        assert_decide(p, "workspace:read", NULL, POLICY_ALLOW);
        assert_decide(p, "workspace:manifest", NULL, POLICY_ALLOW);
        struct policy_verdict v;
        assert_int_equal(decide(p, "http", NULL, &v), POLICY_ASK);
        assert_int_equal(v.rule_index, POLICY_RULE_FALLBACK);
        assert_non_null(strstr(v.reason, "asks before every gated call"));
        assert_decide(p, "workspace:write", NULL, POLICY_ASK);
        assert_decide(p, "tool:x", NULL, POLICY_ASK);
        assert_decide(p, "secret:API_KEY", NULL, POLICY_ASK);
        assert_int_equal(policy_rule_count(p), 3);
        assert_int_equal(policy_fallback(p), POLICY_ASK);
        policy_free(p);
}

/* secret:NAME (--secrets, docs/secrets.md): a rule per secret, exact;
 * match_args sees {url, name} of the hop. */
static void secret_targets(void **state)
{
        (void)state;
        struct policy *p = parse_ok("{\"rules\":[{\"target\":\"secret:GH_TOKEN\",\"decision\":\"always_allow\","
                                    "\"match_args\":{\"url_prefix\":\"https://api.github.com/\"}}],"
                                    "\"default\":\"never_allow\"}");
        assert_decide(p, "secret:GH_TOKEN", "{\"url\":\"https://api.github.com/user\",\"name\":\"GH_TOKEN\"}",
                      POLICY_ALLOW);
        assert_decide(p, "secret:GH_TOKEN", "{\"url\":\"https://evil.example/\",\"name\":\"GH_TOKEN\"}",
                      POLICY_DENY);
        assert_decide(p, "secret:OTHER", "{\"url\":\"https://api.github.com/user\",\"name\":\"OTHER\"}",
                      POLICY_DENY);
        assert_decide(p, "secret:gh_token", "{\"url\":\"https://api.github.com/user\",\"name\":\"gh_token\"}",
                      POLICY_DENY);
        policy_free(p);
}

static void profile_unknown(void **state)
{
        (void)state;
        struct policy *p = (struct policy *)0x1;
        struct err *e = NULL;
        assert_int_equal(policy_profile("Untrusted", NULL, &p, &e), -1);
        assert_ptr_equal(p, (struct policy *)0x1);
        assert_int_equal(err_code(e), POLICY_ERR_PROFILE);
        assert_string_equal(err_msg(e),
                            "\"Untrusted\" is not a policy profile (expected permissive, untrusted or supervised)");
        err_free(e);
        assert_true(policy_is_profile_name("supervised"));
        assert_false(policy_is_profile_name("strict"));
        assert_false(policy_is_profile_name(""));
        assert_false(policy_is_profile_name(NULL));
}

/* ---- the file schema ---- */

static void schema_minimal_and_defaults(void **state)
{
        (void)state;
        struct policy *p = parse_ok("{\"rules\":[]}");
        struct policy_verdict v;
        assert_int_equal(decide(p, "http", NULL, &v), POLICY_ALLOW);  /* default: always_allow */
        assert_null(v.reason);
        assert_string_equal(policy_name(p), "custom");
        policy_free(p);

        p = parse_ok("{\"rules\":[],\"default\":\"never_allow\",\"default_reason\":\"ops only\"}");
        assert_int_equal(decide(p, "workspace:read", NULL, &v), POLICY_DENY);
        assert_string_equal(v.reason, "ops only");
        assert_int_equal(v.rule_index, POLICY_RULE_FALLBACK);
        policy_free(p);

        p = parse_ok("{\"rules\":[],\"default\":\"ask_before\"}");
        assert_decide(p, "tool:x", NULL, POLICY_ASK);
        policy_free(p);
}

static void schema_full_example(void **state)
{
        (void)state;
        /* The example of docs/policy.md. */
        struct policy *p = parse_ok(
                "{\n"
                "  \"rules\": [\n"
                "    { \"target\": \"http\", \"decision\": \"always_allow\",\n"
                "      \"match_args\": { \"url_prefix\": \"http://ops.internal:9911/\" }, \"reason\": \"ops API only\" },\n"
                "    { \"target\": \"workspace:write\", \"decision\": \"always_allow\" },\n"
                "    { \"target\": \"workspace:read\",  \"decision\": \"always_allow\" },\n"
                "    { \"target\": \"workspace:list\",  \"decision\": \"always_allow\" }\n"
                "  ],\n"
                "  \"default\": \"never_allow\",\n"
                "  \"default_reason\": \"this server allows only the ops API and workspace writes\"\n"
                "}\n");
        struct policy_verdict v;
        assert_int_equal(decide(p, "http", "{\"url\":\"http://ops.internal:9911/status\"}", &v), POLICY_ALLOW);
        assert_string_equal(v.reason, "ops API only");
        assert_int_equal(v.rule_index, 0);
        assert_int_equal(decide(p, "http", "{\"url\":\"http://ops.internal:9912/\"}", &v), POLICY_DENY);
        assert_string_equal(v.reason, "this server allows only the ops API and workspace writes");
        assert_decide(p, "workspace:write", NULL, POLICY_ALLOW);
        assert_decide(p, "workspace:delete", NULL, POLICY_DENY);
        assert_describe(p, "custom from policy (4 rules, default never_allow)");
        policy_free(p);
}

static void schema_errors_top_level(void **state)
{
        (void)state;
        parse_err("[]", POLICY_ERR_SCHEMA, "top level: expected an object, got array");
        parse_err("{}", POLICY_ERR_SCHEMA, "rules: missing (a policy needs a \"rules\" array, which may be empty)");
        parse_err("{\"rules\":{}}", POLICY_ERR_SCHEMA, "rules: expected an array, got object");
        parse_err("{\"rules\":[],\"defualt\":\"never_allow\"}", POLICY_ERR_SCHEMA,
                  "defualt: unknown key (expected rules, default or default_reason)");
        parse_err("{\"rules\":[],\"default\":\"deny\"}", POLICY_ERR_SCHEMA,
                  "default: \"deny\" is not a decision (expected always_allow, ask_before or never_allow)");
        parse_err("{\"rules\":[],\"default\":false}", POLICY_ERR_SCHEMA, "default: expected a string, got boolean");
        parse_err("{\"rules\":[],\"default_reason\":7}", POLICY_ERR_SCHEMA,
                  "default_reason: expected a string, got number");
        parse_err("{\"rules\":[],\"rules\":[]}", POLICY_ERR_SCHEMA, "top level: duplicate key \"rules\"");
}

static void schema_errors_rules(void **state)
{
        (void)state;
        parse_err("{\"rules\":[\"http\"]}", POLICY_ERR_SCHEMA, "rules[0]: expected an object, got string");
        parse_err("{\"rules\":[{\"target\":\"http\",\"decision\":\"never_allow\"},"
                  "{\"target\":\"http\",\"decision\":\"never_allow\"},"
                  "{\"target\":\"http\",\"decision\":\"allow\"}]}",
                  POLICY_ERR_SCHEMA,
                  "rules[2].decision: \"allow\" is not a decision (expected always_allow, ask_before or never_allow)");
        parse_err("{\"rules\":[{\"target\":\"http\",\"desicion\":\"never_allow\"}]}", POLICY_ERR_SCHEMA,
                  "rules[0].desicion: unknown key (expected target, decision, match_args or reason)");
        parse_err("{\"rules\":[{\"target\":\"http\"}]}", POLICY_ERR_SCHEMA,
                  "rules[0].decision: missing (every rule needs a target and a decision)");
        parse_err("{\"rules\":[{\"decision\":\"never_allow\"}]}", POLICY_ERR_SCHEMA,
                  "rules[0].target: missing (every rule needs a target and a decision)");
        parse_err("{\"rules\":[{\"target\":\"http\",\"decision\":1}]}", POLICY_ERR_SCHEMA,
                  "rules[0].decision: expected a string, got number");
        parse_err("{\"rules\":[{\"target\":null,\"decision\":\"never_allow\"}]}", POLICY_ERR_SCHEMA,
                  "rules[0].target: expected a string, got null");
        parse_err("{\"rules\":[{\"target\":\"http\",\"decision\":\"never_allow\",\"reason\":[]}]}",
                  POLICY_ERR_SCHEMA, "rules[0].reason: expected a string, got array");
        parse_err("{\"rules\":[{\"target\":\"http\",\"decision\":\"never_allow\",\"decision\":\"always_allow\"}]}",
                  POLICY_ERR_SCHEMA, "rules[0]: duplicate key \"decision\"");
        parse_err("{\"rules\":[{\"target\":\"http\",\"decision\":\"never_allow\",\"match_args\":\"x\"}]}",
                  POLICY_ERR_SCHEMA, "rules[0].match_args: expected an object, got string");
}

static void schema_errors_targets(void **state)
{
        (void)state;
#define T(target) "{\"rules\":[{\"target\":\"" target "\",\"decision\":\"never_allow\"}]}"
        parse_err(T("HTTP"), POLICY_ERR_SCHEMA,
                  "rules[0].target: \"HTTP\" is not a target (expected http, workspace:<action>, tool:<name>, "
                  "agent:<path>, secret:<name>, app_data:<action> or *)");
        parse_err(T("workspace:remove"), POLICY_ERR_SCHEMA,
                  "rules[0].target: \"workspace:remove\" is not a target (workspace actions are list, read, write, "
                  "delete and manifest)");
        parse_err(T("workspace:*"), POLICY_ERR_SCHEMA,
                  "rules[0].target: \"workspace:*\" is not a target (workspace actions are list, read, write, "
                  "delete and manifest)");
        parse_err(T("tool:"), POLICY_ERR_SCHEMA, "rules[0].target: \"tool:\" needs a name after the colon");
        parse_err(T("tool:*"), POLICY_ERR_SCHEMA,
                  "rules[0].target: \"tool:*\" is not a target (a wildcard is only allowed as the whole target "
                  "\"*\")");
        parse_err(T("app_data:a b"), POLICY_ERR_SCHEMA,
                  "rules[0].target: \"app_data:a b\" has a name with a space or a byte outside printable ASCII");
        parse_err(T(""), POLICY_ERR_SCHEMA,
                  "rules[0].target: \"\" is not a target (expected http, workspace:<action>, tool:<name>, "
                  "agent:<path>, secret:<name>, app_data:<action> or *)");
        parse_err(T("secret:"), POLICY_ERR_SCHEMA,
                  "rules[0].target: \"secret:\" needs a name after the colon (a secret --secrets declares)");
        parse_err(T("secret:*"), POLICY_ERR_SCHEMA,
                  "rules[0].target: \"secret:*\" is not a target (a wildcard is only allowed as the whole target "
                  "\"*\")");
        parse_err(T("secret:a b"), POLICY_ERR_SCHEMA,
                  "rules[0].target: \"secret:a b\" has a name with a byte other than a letter, digit, '_', '-' or "
                  "'.'");
        parse_err(T("agent:"), POLICY_ERR_SCHEMA,
                  "rules[0].target: \"agent:\" needs a path after the colon (the callee as callAgent names it, "
                  "e.g. agent:sub/child.js)");
        parse_err(T("agent:*"), POLICY_ERR_SCHEMA,
                  "rules[0].target: \"agent:*\" is not a target (a wildcard is only allowed as the whole target "
                  "\"*\")");
        parse_err(T("agent:a\\tb.js"), POLICY_ERR_SCHEMA,
                  "rules[0].target: \"agent:a\\x09b.js\" has a path with a control character");
        /* every accepted shape */
        const char *ok[] = { T("*"), T("http"), T("workspace:list"), T("workspace:read"), T("workspace:write"),
                             T("workspace:delete"), T("workspace:manifest"), T("tool:web.search-v2"),
                             T("app_data:put"), T("agent:sub/child.js"), T("agent:my agent/ünï.mjs") };
#undef T
        for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
                policy_free(parse_ok(ok[i]));
}

static void schema_errors_match_args(void **state)
{
        (void)state;
#define M(m) "{\"rules\":[{\"target\":\"http\",\"decision\":\"always_allow\",\"match_args\":" m "}]}"
        parse_err(M("{\"url_prefix\":5}"), POLICY_ERR_SCHEMA, "rules[0].match_args.url_prefix: expected a string, got number");
        parse_err(M("{\"url_prefix\":\"\"}"), POLICY_ERR_SCHEMA,
                  "rules[0].match_args.url_prefix: is empty (it would match every url)");
        parse_err(M("{\"url_prefix\":\"https://api.example.com\"}"), POLICY_ERR_SCHEMA,
                  "rules[0].match_args.url_prefix: \"https://api.example.com\" must end the host with \"/\" "
                  "(otherwise \"https://api.example.com.evil.example/\" matches too)");
        parse_err(M("{\"url_prefix\":\"https://api.example.com?x=/\"}"), POLICY_ERR_SCHEMA,
                  "rules[0].match_args.url_prefix: \"https://api.example.com?x=/\" must end the host with \"/\" "
                  "(otherwise \"https://api.example.com.evil.example/\" matches too)");
        parse_err(M("{\"url\":\"a\",\"url\":\"b\"}"), POLICY_ERR_SCHEMA,
                  "rules[0].match_args: duplicate key \"url\"");
        parse_err(M("{\"headers\":{\"x-a\":1,\"x-a\":2}}"), POLICY_ERR_SCHEMA,
                  "rules[0].match_args.headers: duplicate key \"x-a\"");
        parse_err(M("{\"a b\":{\"c\":[1,{\"d\":1,\"d\":1}]}}"), POLICY_ERR_SCHEMA,
                  "rules[0].match_args[\"a b\"].c[1]: duplicate key \"d\"");
        /* url_prefix is reserved in pattern objects only; inside an array it is a plain key */
        policy_free(parse_ok(M("{\"list\":[{\"url_prefix\":5}]}")));
        policy_free(parse_ok(M("{\"url_prefix\":\"/v1/\"}")));
#undef M
}

static void syntax_errors_line_col(void **state)
{
        (void)state;
        parse_err("{\"rules\": x}", POLICY_ERR_SYNTAX, "not valid JSON at line 1, column 11: unexpected character 'x' (expected a value)");
        parse_err("{\n  \"rules\": [\n    {\"target\" \"http\"}\n  ]\n}", POLICY_ERR_SYNTAX,
                  "not valid JSON at line 3, column 15: unexpected character '\"' (expected ':' after a member name)");
        parse_err("", POLICY_ERR_SYNTAX, "not valid JSON at line 1, column 1: no JSON value (the text is empty)");
        parse_err("{\"rules\":[]} trailing", POLICY_ERR_SYNTAX, "not valid JSON at line 1, column 14: trailing bytes after the JSON value");
        /* columns count characters, not bytes */
        parse_err("{\"r\xc3\xa9gles\": ?}", POLICY_ERR_SYNTAX, "not valid JSON at line 1, column 12: unexpected character '?' (expected a value)");
        /* a NUL byte cannot hide a suffix */
        struct policy *p = NULL;
        struct err *e = NULL;
        const char nul[] = "{\"rules\":[]}\0{\"x\":1}";
        assert_int_equal(policy_parse(nul, sizeof(nul) - 1, NULL, &p, &e), -1);
        assert_string_equal(err_msg(e), "not valid JSON at line 1, column 13 (a NUL byte)");
        assert_int_equal(err_code(e), POLICY_ERR_SYNTAX);
        err_free(e);
}

static void limits(void **state)
{
        (void)state;
        struct policy *p = NULL;
        struct err *e = NULL;
        /* size */
        size_t big = POLICY_FILE_MAX + 1;
        char *buf = malloc(big);
        assert_non_null(buf);
        memset(buf, ' ', big);
        memcpy(buf, "{\"rules\":[]}", 12);
        assert_int_equal(policy_parse(buf, big, NULL, &p, &e), -1);
        assert_int_equal(err_code(e), POLICY_ERR_LIMIT);
        assert_string_equal(err_msg(e), "larger than the 1 MiB limit (1048577 bytes)");
        err_free(e), e = NULL;
        assert_int_equal(policy_parse(buf, big - 1, NULL, &p, &e), 0);  /* exactly 1 MiB is fine */
        policy_free(p), p = NULL;
        free(buf);

        /* rule count */
        const char rule[] = "{\"target\":\"*\",\"decision\":\"never_allow\"},";
        size_t rl = sizeof(rule) - 1;
        for (int n = POLICY_RULES_MAX; n <= POLICY_RULES_MAX + 1; n++) {
                buf = malloc(16 + rl * (size_t)n + 4);
                assert_non_null(buf);
                size_t o = 0;
                memcpy(buf + o, "{\"rules\":[", 10), o += 10;
                for (int i = 0; i < n; i++)
                        memcpy(buf + o, rule, rl), o += rl;
                buf[o - 1] = ']', buf[o++] = '}';
                int r = policy_parse(buf, o, NULL, &p, &e);
                if (n == POLICY_RULES_MAX) {
                        assert_int_equal(r, 0);
                        assert_int_equal(policy_rule_count(p), POLICY_RULES_MAX);
                        policy_free(p), p = NULL;
                } else {
                        assert_int_equal(r, -1);
                        assert_int_equal(err_code(e), POLICY_ERR_LIMIT);
                        assert_string_equal(err_msg(e), "rules: more than 10000 rules");
                        err_free(e), e = NULL;
                }
                free(buf);
        }
}

/* match_args nested `depth` levels deep: {"a":{"a":...{}}} */
static char *nested(int depth)
{
        size_t cap = (size_t)depth * 8 + 128, o = 0;
        char *s = malloc(cap);
        assert_non_null(s);
        o += (size_t)snprintf(s, cap, "{\"rules\":[{\"target\":\"http\",\"decision\":\"never_allow\",\"match_args\":");
        for (int i = 1; i < depth; i++)
                o += (size_t)snprintf(s + o, cap - o, "{\"a\":");
        o += (size_t)snprintf(s + o, cap - o, "{}");
        for (int i = 1; i < depth; i++)
                s[o++] = '}';
        snprintf(s + o, cap - o, "}]}");
        return s;
}

static void limit_match_depth(void **state)
{
        (void)state;
        char *s = nested(POLICY_MATCH_DEPTH_MAX);
        struct policy *p = parse_ok(s);
        policy_free(p);
        free(s);
        s = nested(POLICY_MATCH_DEPTH_MAX + 1);
        char want[512];
        int o = snprintf(want, sizeof(want), "rules[0].match_args");
        for (int i = 0; i < POLICY_MATCH_DEPTH_MAX; i++)
                o += snprintf(want + o, sizeof(want) - (size_t)o, ".a");
        snprintf(want + o, sizeof(want) - (size_t)o, ": match_args nested deeper than 32 levels");
        parse_err(s, POLICY_ERR_LIMIT, want);
        free(s);
        /* arrays count as levels too */
        parse_err("{\"rules\":[{\"target\":\"http\",\"decision\":\"never_allow\",\"match_args\":{\"a\":"
                  "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}}]}",
                  POLICY_ERR_LIMIT,
                  "rules[0].match_args.a[0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0]"
                  "[0][0][0][0][0][0][0]: match_args nested deeper than 32 levels");
}

/* ---- rule order and targets ---- */

static void first_match_wins(void **state)
{
        (void)state;
        struct policy *p = parse_ok("{\"rules\":["
                                    "{\"target\":\"http\",\"decision\":\"always_allow\",\"reason\":\"first\"},"
                                    "{\"target\":\"http\",\"decision\":\"never_allow\",\"reason\":\"second\"}]}");
        struct policy_verdict v;
        assert_int_equal(decide(p, "http", NULL, &v), POLICY_ALLOW);
        assert_int_equal(v.rule_index, 0);
        assert_string_equal(v.reason, "first");
        policy_free(p);
        p = parse_ok("{\"rules\":["
                     "{\"target\":\"http\",\"decision\":\"never_allow\",\"reason\":\"first\"},"
                     "{\"target\":\"http\",\"decision\":\"always_allow\",\"reason\":\"second\"}]}");
        assert_int_equal(decide(p, "http", NULL, &v), POLICY_DENY);
        assert_string_equal(v.reason, "first");
        policy_free(p);
}

static void first_match_skips_non_matching_args(void **state)
{
        (void)state;
        struct policy *p = parse_ok("{\"rules\":["
                                    "{\"target\":\"tool:shell\",\"decision\":\"never_allow\",\"match_args\":{\"cmd\":\"rm \"}},"
                                    "{\"target\":\"tool:shell\",\"decision\":\"ask_before\"}],"
                                    "\"default\":\"always_allow\"}");
        struct policy_verdict v;
        assert_int_equal(decide(p, "tool:shell", "{\"cmd\":\"rm -rf /\"}", &v), POLICY_DENY);
        assert_int_equal(v.rule_index, 0);
        assert_int_equal(decide(p, "tool:shell", "{\"cmd\":\"ls\"}", &v), POLICY_ASK);
        assert_int_equal(v.rule_index, 1);
        assert_int_equal(decide(p, "tool:other", "{\"cmd\":\"rm \"}", &v), POLICY_ALLOW);
        assert_int_equal(v.rule_index, POLICY_RULE_FALLBACK);
        policy_free(p);
}

static void star_target(void **state)
{
        (void)state;
        struct policy *p = parse_ok("{\"rules\":["
                                    "{\"target\":\"workspace:read\",\"decision\":\"always_allow\"},"
                                    "{\"target\":\"*\",\"decision\":\"never_allow\",\"reason\":\"star\"},"
                                    "{\"target\":\"http\",\"decision\":\"always_allow\"}]}");
        struct policy_verdict v;
        assert_decide(p, "workspace:read", NULL, POLICY_ALLOW);
        assert_int_equal(decide(p, "http", NULL, &v), POLICY_DENY);  /* * comes first */
        assert_int_equal(v.rule_index, 1);
        assert_decide(p, "tool:anything", NULL, POLICY_DENY);
        assert_decide(p, "app_data:x", NULL, POLICY_DENY);
        policy_free(p);
        /* "*" with match_args */
        p = parse_ok("{\"rules\":[{\"target\":\"*\",\"decision\":\"always_allow\",\"match_args\":{\"dry_run\":true}}],"
                     "\"default\":\"never_allow\"}");
        assert_decide(p, "tool:deploy", "{\"dry_run\":true}", POLICY_ALLOW);
        assert_decide(p, "tool:deploy", "{\"dry_run\":false}", POLICY_DENY);
        policy_free(p);
}

static void targets_are_exact(void **state)
{
        (void)state;
        struct policy *p = parse_ok("{\"rules\":[{\"target\":\"tool:search\",\"decision\":\"always_allow\"}],"
                                    "\"default\":\"never_allow\"}");
        assert_decide(p, "tool:search", NULL, POLICY_ALLOW);
        assert_decide(p, "tool:search2", NULL, POLICY_DENY);
        assert_decide(p, "tool:searc", NULL, POLICY_DENY);
        assert_decide(p, "Tool:search", NULL, POLICY_DENY);
        policy_free(p);
}

static void empty_rules_never_allow(void **state)
{
        (void)state;
        struct policy *p = parse_ok("{\"rules\":[],\"default\":\"never_allow\"}");
        const char *t[] = { "http", "workspace:list", "workspace:read", "tool:x", "app_data:y" };
        for (size_t i = 0; i < 5; i++)
                assert_decide(p, t[i], NULL, POLICY_DENY);
        policy_free(p);
}

static void null_policy_or_target_denies(void **state)
{
        (void)state;
        struct policy_verdict v;
        assert_int_equal(policy_check(NULL, "http", NULL, &v), POLICY_DENY);
        assert_string_equal(v.reason, "no policy is loaded");
        struct policy *p = parse_ok(permissive_json);
        assert_int_equal(policy_check(p, NULL, NULL, &v), POLICY_DENY);
        assert_int_equal(v.rule_index, POLICY_RULE_FALLBACK);
        policy_free(p);
}

/* ---- match_args ---- */

static void match_subset(void **state)
{
        (void)state;
        struct policy *p = http_rule("{\"method\":\"GET\"}");
        assert_decide(p, "http", "{\"method\":\"GET\",\"url\":\"https://x/\",\"headers\":{}}", POLICY_ALLOW);
        assert_decide(p, "http", "{\"url\":\"https://x/\"}", POLICY_DENY);  /* key missing */
        assert_decide(p, "http", "{\"method\":\"POST\"}", POLICY_DENY);
        assert_decide(p, "http", NULL, POLICY_DENY);                         /* no args = {} */
        policy_free(p);
        p = http_rule("{}");
        assert_decide(p, "http", NULL, POLICY_ALLOW);
        assert_decide(p, "http", "{\"anything\":[1]}", POLICY_ALLOW);
        policy_free(p);
        /* several keys: all must match */
        p = http_rule("{\"method\":\"GET\",\"url_prefix\":\"https://a.example/\"}");
        assert_decide(p, "http", "{\"method\":\"GET\",\"url\":\"https://a.example/x\"}", POLICY_ALLOW);
        assert_decide(p, "http", "{\"method\":\"GET\",\"url\":\"https://b.example/x\"}", POLICY_DENY);
        assert_decide(p, "http", "{\"method\":\"PUT\",\"url\":\"https://a.example/x\"}", POLICY_DENY);
        policy_free(p);
}

static void match_nested_objects(void **state)
{
        (void)state;
        struct policy *p = http_rule("{\"headers\":{\"authorization\":\"Bearer \"},\"opts\":{\"a\":{\"b\":1}}}");
        assert_decide(p, "http",
                      "{\"headers\":{\"authorization\":\"Bearer xyz\",\"accept\":\"*/*\"},"
                      "\"opts\":{\"a\":{\"b\":1,\"c\":2},\"d\":3}}",
                      POLICY_ALLOW);
        assert_decide(p, "http", "{\"headers\":{\"authorization\":\"Bearer xyz\"},\"opts\":{\"a\":{\"c\":2}}}",
                      POLICY_DENY);
        assert_decide(p, "http", "{\"headers\":\"authorization: Bearer x\",\"opts\":{\"a\":{\"b\":1}}}",
                      POLICY_DENY);  /* object pattern vs string */
        assert_decide(p, "http", "{\"headers\":{\"Authorization\":\"Bearer x\"},\"opts\":{\"a\":{\"b\":1}}}",
                      POLICY_DENY);  /* keys are case-sensitive */
        policy_free(p);
}

static void match_substring_strings(void **state)
{
        (void)state;
        struct policy *p = http_rule("{\"url\":\"/status/\"}");
        assert_decide(p, "http", "{\"url\":\"https://h.example/status/1\"}", POLICY_ALLOW);
        assert_decide(p, "http", "{\"url\":\"/status/\"}", POLICY_ALLOW);
        assert_decide(p, "http", "{\"url\":\"https://h.example/STATUS/1\"}", POLICY_DENY);  /* case-sensitive */
        assert_decide(p, "http", "{\"url\":\"https://h.example/status\"}", POLICY_DENY);
        assert_decide(p, "http", "{\"url\":7}", POLICY_DENY);
        policy_free(p);
        p = http_rule("{\"body\":\"\"}");  /* empty string: any string */
        assert_decide(p, "http", "{\"body\":\"x\"}", POLICY_ALLOW);
        assert_decide(p, "http", "{\"body\":\"\"}", POLICY_ALLOW);
        assert_decide(p, "http", "{\"body\":null}", POLICY_DENY);
        policy_free(p);
}

static void match_scalars_equal(void **state)
{
        (void)state;
        struct policy *p = http_rule("{\"n\":3,\"t\":true,\"f\":false,\"z\":null}");
        assert_decide(p, "http", "{\"n\":3,\"t\":true,\"f\":false,\"z\":null}", POLICY_ALLOW);
        assert_decide(p, "http", "{\"n\":3.0,\"t\":true,\"f\":false,\"z\":null}", POLICY_ALLOW);
        assert_decide(p, "http", "{\"n\":30,\"t\":true,\"f\":false,\"z\":null}", POLICY_DENY);
        assert_decide(p, "http", "{\"n\":\"3\",\"t\":true,\"f\":false,\"z\":null}", POLICY_DENY);
        assert_decide(p, "http", "{\"n\":3,\"t\":1,\"f\":false,\"z\":null}", POLICY_DENY);
        assert_decide(p, "http", "{\"n\":3,\"t\":true,\"f\":null,\"z\":null}", POLICY_DENY);
        assert_decide(p, "http", "{\"n\":3,\"t\":true,\"f\":false}", POLICY_DENY);  /* null needs the key */
        assert_decide(p, "http", "{\"n\":3,\"t\":true,\"f\":false,\"z\":false}", POLICY_DENY);
        assert_decide(p, "http", "{\"n\":3.0000001,\"t\":true,\"f\":false,\"z\":null}", POLICY_DENY);
        policy_free(p);
}

static void match_arrays_exact(void **state)
{
        (void)state;
        struct policy *p = http_rule("{\"argv\":[\"git\",\"status\",{\"k\":1}]}");
        assert_decide(p, "http", "{\"argv\":[\"git\",\"status\",{\"k\":1}]}", POLICY_ALLOW);
        assert_decide(p, "http", "{\"argv\":[\"git\",\"status\",{\"k\":1.0}]}", POLICY_ALLOW);
        assert_decide(p, "http", "{\"argv\":[\"git\",\"status\"]}", POLICY_DENY);                 /* shorter */
        assert_decide(p, "http", "{\"argv\":[\"git\",\"status\",{\"k\":1},4]}", POLICY_DENY);     /* longer */
        assert_decide(p, "http", "{\"argv\":[\"git-evil\",\"status\",{\"k\":1}]}", POLICY_DENY);  /* no substring */
        assert_decide(p, "http", "{\"argv\":[\"status\",\"git\",{\"k\":1}]}", POLICY_DENY);       /* order */
        assert_decide(p, "http", "{\"argv\":[\"git\",\"status\",{\"k\":1,\"j\":2}]}", POLICY_DENY); /* no subset */
        assert_decide(p, "http", "{\"argv\":[\"git\",\"status\",{\"k\":1,\"k\":1}]}", POLICY_DENY);
        assert_decide(p, "http", "{\"argv\":\"git status\"}", POLICY_DENY);
        policy_free(p);
        p = http_rule("{\"a\":[]}");
        assert_decide(p, "http", "{\"a\":[]}", POLICY_ALLOW);
        assert_decide(p, "http", "{\"a\":{}}", POLICY_DENY);
        assert_decide(p, "http", "{\"a\":[null]}", POLICY_DENY);
        policy_free(p);
}

static const char hostile[] = "{\"url\":\"https://evil.example/?x=https://api.example.com/\"}";

static void url_prefix_anchors(void **state)
{
        (void)state;
        struct policy *p = http_rule("{\"url_prefix\":\"https://api.example.com/\"}");
        assert_decide(p, "http", "{\"url\":\"https://api.example.com/v1/items\"}", POLICY_ALLOW);
        assert_decide(p, "http", "{\"url\":\"https://api.example.com/\"}", POLICY_ALLOW);
        assert_decide(p, "http", hostile, POLICY_DENY);
        assert_decide(p, "http", "{\"url\":\"https://api.example.com.evil.example/\"}", POLICY_DENY);
        assert_decide(p, "http", "{\"url\":\"https://api.example.com@evil.example/\"}", POLICY_DENY);
        assert_decide(p, "http", "{\"url\":\"http://api.example.com/\"}", POLICY_DENY);
        assert_decide(p, "http", "{\"url\":\"https://api.example.co\"}", POLICY_DENY);  /* shorter than prefix */
        assert_decide(p, "http", "{\"url\":[\"https://api.example.com/\"]}", POLICY_DENY);
        assert_decide(p, "http", "{\"href\":\"https://api.example.com/\"}", POLICY_DENY);
        /* url_prefix never looks at an argument called url_prefix */
        assert_decide(p, "http", "{\"url_prefix\":\"https://api.example.com/\",\"url\":\"https://evil/\"}",
                      POLICY_DENY);
        policy_free(p);
}

static void url_substring_trap(void **state)
{
        (void)state;
        /* Documented trap: a plain string matches anywhere in the url, so the
         * hostile url carrying the host in its query string passes. */
        struct policy *p = http_rule("{\"url\":\"api.example.com\"}");
        assert_decide(p, "http", hostile, POLICY_ALLOW);
        assert_decide(p, "http", "{\"url\":\"https://api.example.com/\"}", POLICY_ALLOW);
        policy_free(p);
}

static void url_prefix_nested(void **state)
{
        (void)state;
        struct policy *p = http_rule("{\"request\":{\"url_prefix\":\"https://api.example.com/\"}}");
        assert_decide(p, "http", "{\"request\":{\"url\":\"https://api.example.com/x\"}}", POLICY_ALLOW);
        assert_decide(p, "http", "{\"request\":{\"url\":\"https://evil.example/\"}}", POLICY_DENY);
        assert_decide(p, "http", "{\"url\":\"https://api.example.com/x\"}", POLICY_DENY);
        policy_free(p);
}

static void duplicate_arg_keys_deny(void **state)
{
        (void)state;
        struct policy *p = http_rule("{\"url_prefix\":\"https://api.example.com/\"}");
        struct policy_verdict v;
        assert_int_equal(decide(p, "http", "{\"url\":\"https://api.example.com/\",\"url\":\"https://evil/\"}", &v),
                         POLICY_DENY);
        assert_int_equal(v.rule_index, 0);
        assert_string_equal(v.reason, "the call's arguments repeat a key that a policy rule inspects");
        policy_free(p);
        /* a deny rule cannot be dodged by repeating the key either */
        p = parse_ok("{\"rules\":[{\"target\":\"http\",\"decision\":\"never_allow\",\"match_args\":{\"url\":\"evil\"}}]}");
        assert_decide(p, "http", "{\"url\":\"https://ok/\",\"url\":\"https://evil/\"}", POLICY_DENY);
        assert_decide(p, "http", "{\"url\":\"https://ok/\"}", POLICY_ALLOW);
        /* repeated keys the rules do not inspect are fine */
        assert_decide(p, "http", "{\"url\":\"https://ok/\",\"x\":1,\"x\":2}", POLICY_ALLOW);
        policy_free(p);
        /* a definite mismatch elsewhere means the rule cannot match either way */
        p = http_rule("{\"url\":\"a\",\"method\":\"GET\"}");
        assert_decide(p, "http", "{\"url\":\"a\",\"url\":\"b\",\"method\":\"POST\"}", POLICY_DENY);
        assert_int_equal(decide(p, "http", "{\"url\":\"a\",\"url\":\"b\",\"method\":\"POST\"}", &v), POLICY_DENY);
        assert_int_equal(v.rule_index, POLICY_RULE_FALLBACK);
        policy_free(p);
}

/* ---- selection ---- */

static void select_run_default(void **state)
{
        (void)state;
        struct sel s = select_ok((struct policy_sources){ .surface = POLICY_SURFACE_RUN });
        assert_null(s.warning);
        assert_string_equal(policy_name(s.p), "permissive");
        assert_describe(s.p, "permissive (chidori run default)");
        assert_decide(s.p, "http", NULL, POLICY_ALLOW);
        sel_free(&s);
}

static void select_serve_default(void **state)
{
        (void)state;
        struct sel s = select_ok((struct policy_sources){ .surface = POLICY_SURFACE_SERVE });
        assert_null(s.warning);
        assert_describe(s.p, "untrusted (chidori serve default)");
        struct policy_verdict v;
        assert_int_equal(decide(s.p, "http", NULL, &v), POLICY_DENY);
        assert_string_equal(v.reason, "the untrusted profile allows only workspace:list, workspace:read and "
                                      "workspace:manifest (chidori serve's default; opt out with CHIDORI_POLICY_FILE, "
                                      "CHIDORI_POLICY, CHIDORI_POLICY_PROFILE or --trusted)");
        assert_decide(s.p, "workspace:read", NULL, POLICY_ALLOW);
        sel_free(&s);
}

static void select_trusted(void **state)
{
        (void)state;
        struct sel s = select_ok((struct policy_sources){ .surface = POLICY_SURFACE_SERVE, .flag_trusted = true });
        assert_describe(s.p, "permissive (--trusted)");
        assert_decide(s.p, "http", NULL, POLICY_ALLOW);
        sel_free(&s);
        /* --trusted restores run's resolution: the variables still count */
        s = select_ok((struct policy_sources){
                .surface = POLICY_SURFACE_SERVE, .flag_trusted = true, .env_profile = "untrusted" });
        assert_describe(s.p, "untrusted (CHIDORI_POLICY_PROFILE=untrusted)");
        assert_decide(s.p, "http", NULL, POLICY_DENY);
        sel_free(&s);
}

static void select_both_flags_usage_error(void **state)
{
        (void)state;
        struct policy_sources src = { .surface = POLICY_SURFACE_RUN, .flag_trusted = true, .flag_untrusted = true };
        struct policy *p = (struct policy *)0x1;
        char *w = (char *)0x1;
        struct err *e = NULL;
        assert_int_equal(policy_select(&src, &p, &w, &e), -1);
        assert_ptr_equal(p, (struct policy *)0x1);
        assert_ptr_equal(w, (char *)0x1);
        assert_int_equal(err_code(e), POLICY_ERR_USAGE);
        assert_string_equal(err_msg(e), "--trusted and --untrusted contradict each other; pass only one "
                                        "(--untrusted alone confines the run whatever CHIDORI_POLICY* says)");
        err_free(e);
}

static void select_untrusted_beats_permissive_file(void **state)
{
        (void)state;
        const char *f = write_tmp("permissive.json", permissive_json);
        struct sel s = select_ok((struct policy_sources){
                .surface = POLICY_SURFACE_RUN, .flag_untrusted = true, .env_file = f });
        assert_null(s.warning);
        assert_describe(s.p, "untrusted (--untrusted; CHIDORI_POLICY_FILE ignored)");
        struct policy_verdict v;
        assert_int_equal(decide(s.p, "http", NULL, &v), POLICY_DENY);
        assert_non_null(strstr(v.reason, "selected with --untrusted, which overrides CHIDORI_POLICY_FILE"));
        sel_free(&s);
}

static void select_untrusted_beats_everything(void **state)
{
        (void)state;
        /* nothing is even read: a missing file or bad JSON gives no warning */
        struct sel s = select_ok((struct policy_sources){ .surface = POLICY_SURFACE_RUN,
                                                          .flag_untrusted = true,
                                                          .env_file = "/nonexistent/policy.json",
                                                          .env_inline = permissive_json,
                                                          .env_profile = "permissive" });
        assert_null(s.warning);
        assert_describe(s.p,
                        "untrusted (--untrusted; CHIDORI_POLICY_FILE, CHIDORI_POLICY, CHIDORI_POLICY_PROFILE ignored)");
        assert_decide(s.p, "workspace:write", NULL, POLICY_DENY);
        sel_free(&s);
}

static void select_file_beats_inline(void **state)
{
        (void)state;
        const char *f = write_tmp("one.json", "{\"rules\":[{\"target\":\"http\",\"decision\":\"never_allow\"}]}");
        struct sel s = select_ok((struct policy_sources){
                .surface = POLICY_SURFACE_RUN, .env_file = f, .env_inline = permissive_json, .env_profile = "untrusted" });
        assert_null(s.warning);
        char want[256];
        snprintf(want, sizeof(want),
                 "custom from CHIDORI_POLICY_FILE=%s (1 rule, default always_allow; CHIDORI_POLICY, "
                 "CHIDORI_POLICY_PROFILE ignored)",
                 f);
        assert_describe(s.p, want);
        assert_decide(s.p, "http", NULL, POLICY_DENY);
        assert_decide(s.p, "workspace:write", NULL, POLICY_ALLOW);
        sel_free(&s);
}

static void select_inline_beats_profile(void **state)
{
        (void)state;
        struct sel s = select_ok((struct policy_sources){
                .surface = POLICY_SURFACE_SERVE,
                .env_inline = "{\"rules\":[{\"target\":\"http\",\"decision\":\"always_allow\"},"
                              "{\"target\":\"tool:x\",\"decision\":\"ask_before\"}],\"default\":\"never_allow\"}",
                .env_profile = "permissive" });
        assert_null(s.warning);
        assert_describe(s.p, "custom from CHIDORI_POLICY (2 rules, default never_allow; CHIDORI_POLICY_PROFILE ignored)");
        assert_decide(s.p, "http", NULL, POLICY_ALLOW);
        assert_decide(s.p, "tool:x", NULL, POLICY_ASK);
        assert_decide(s.p, "workspace:read", NULL, POLICY_DENY);
        sel_free(&s);
}

static void select_profile_beats_default(void **state)
{
        (void)state;
        struct sel s = select_ok((struct policy_sources){ .surface = POLICY_SURFACE_RUN, .env_profile = "untrusted" });
        assert_describe(s.p, "untrusted (CHIDORI_POLICY_PROFILE=untrusted)");
        struct policy_verdict v;
        assert_int_equal(decide(s.p, "http", NULL, &v), POLICY_DENY);
        assert_non_null(strstr(v.reason, "selected with CHIDORI_POLICY_PROFILE=untrusted"));
        sel_free(&s);
        s = select_ok((struct policy_sources){ .surface = POLICY_SURFACE_SERVE, .env_profile = "permissive" });
        assert_describe(s.p, "permissive (CHIDORI_POLICY_PROFILE=permissive)");
        assert_decide(s.p, "http", NULL, POLICY_ALLOW);
        sel_free(&s);
        s = select_ok((struct policy_sources){ .surface = POLICY_SURFACE_RUN, .env_profile = "supervised" });
        assert_describe(s.p, "supervised (CHIDORI_POLICY_PROFILE=supervised)");
        assert_decide(s.p, "http", NULL, POLICY_ASK);
        sel_free(&s);
}

static void select_empty_values_are_unset(void **state)
{
        (void)state;
        struct sel s = select_ok(
                (struct policy_sources){ .surface = POLICY_SURFACE_RUN, .env_file = "", .env_inline = "", .env_profile = "" });
        assert_null(s.warning);
        assert_describe(s.p, "permissive (chidori run default)");
        sel_free(&s);
}

static void select_malformed_file(void **state)
{
        (void)state;
        const char *f = write_tmp("bad.json", "{\n  \"rules\": [\n    {\"target\": \"http\" \"decision\": 1}\n  ]\n}\n");
        struct sel s = select_ok((struct policy_sources){
                .surface = POLICY_SURFACE_RUN, .env_file = f, .env_inline = permissive_json });
        char want[512];
        snprintf(want, sizeof(want),
                 "CHIDORI_POLICY_FILE=%s is not valid JSON at line 3, column 23: unexpected character '\"' (expected ',' or '}'); using the untrusted profile "
                 "(deny by default) instead",
                 f);
        assert_warning(&s, want);
        snprintf(want, sizeof(want),
                 "untrusted (fail-closed: CHIDORI_POLICY_FILE=%s is not valid JSON at line 3, column 23: unexpected character '\"' (expected ',' or '}'); "
                 "CHIDORI_POLICY ignored)",
                 f);
        assert_describe(s.p, want);
        assert_true(policy_is_fail_closed(s.p));
        /* the inline permissive policy is not a fallback: deny */
        assert_decide(s.p, "http", NULL, POLICY_DENY);
        assert_decide(s.p, "workspace:read", NULL, POLICY_ALLOW);
        sel_free(&s);
}

static void select_malformed_inline(void **state)
{
        (void)state;
        struct sel s = select_ok((struct policy_sources){ .surface = POLICY_SURFACE_RUN, .env_inline = "{\"rules\"]" });
        assert_warning(&s, "CHIDORI_POLICY is not valid JSON at line 1, column 9: unexpected character ']' (expected ':' after a "
                           "member name); using the untrusted profile "
                           "(deny by default) instead");
        assert_describe(s.p, "untrusted (fail-closed: CHIDORI_POLICY is not valid JSON at line 1, column 9: unexpected character "
                           "']' (expected ':' after a member name))");
        struct policy_verdict v;
        assert_int_equal(decide(s.p, "http", NULL, &v), POLICY_DENY);
        assert_string_equal(v.reason, "the untrusted profile allows only workspace:list, workspace:read and "
                                      "workspace:manifest (chidori fell back to it because the configured policy is "
                                      "invalid; see the warning printed at startup)");
        sel_free(&s);
        /* the brief's example: column 7 */
        s = select_ok((struct policy_sources){ .surface = POLICY_SURFACE_RUN, .env_inline = "{\"a\": nope}" });
        assert_describe(s.p, "untrusted (fail-closed: CHIDORI_POLICY is not valid JSON at line 1, column 7: not a JSON value "
                           "(expected 'null', or a string in quotes))");
        sel_free(&s);
}

static void select_schema_error_inline(void **state)
{
        (void)state;
        struct sel s = select_ok((struct policy_sources){
                .surface = POLICY_SURFACE_RUN,
                .env_inline = "{\"rules\":[{\"target\":\"http\",\"decision\":\"allow\"}]}" });
        assert_warning(&s, "CHIDORI_POLICY: rules[0].decision: \"allow\" is not a decision (expected always_allow, "
                           "ask_before or never_allow); using the untrusted profile (deny by default) instead");
        assert_decide(s.p, "http", NULL, POLICY_DENY);
        sel_free(&s);
}

static void select_unknown_profile(void **state)
{
        (void)state;
        struct sel s = select_ok((struct policy_sources){ .surface = POLICY_SURFACE_RUN, .env_profile = "strict" });
        assert_warning(&s, "CHIDORI_POLICY_PROFILE=strict: not a profile (expected permissive, untrusted or "
                           "supervised); using the untrusted profile (deny by default) instead");
        assert_describe(s.p, "untrusted (fail-closed: CHIDORI_POLICY_PROFILE=strict: not a profile (expected "
                             "permissive, untrusted or supervised))");
        assert_decide(s.p, "http", NULL, POLICY_DENY);
        sel_free(&s);
}

static void select_missing_file(void **state)
{
        (void)state;
        struct sel s = select_ok((struct policy_sources){
                .surface = POLICY_SURFACE_RUN, .env_file = "/nonexistent/policy.json", .env_profile = "permissive" });
        assert_warning(&s, "CHIDORI_POLICY_FILE=/nonexistent/policy.json: cannot be read: No such file or directory; "
                           "using the untrusted profile (deny by default) instead");
        assert_decide(s.p, "http", NULL, POLICY_DENY);
        assert_true(policy_is_fail_closed(s.p));
        sel_free(&s);
        /* a directory is not a policy either */
        s = select_ok((struct policy_sources){ .surface = POLICY_SURFACE_RUN, .env_file = tmpdir });
        assert_non_null(s.warning);
        assert_non_null(strstr(s.warning, ": cannot be read: Is a directory;"));
        sel_free(&s);
}

static void select_control_chars_escaped(void **state)
{
        (void)state;
        struct sel s = select_ok(
                (struct policy_sources){ .surface = POLICY_SURFACE_RUN, .env_profile = "x\033[31m" });
        assert_warning(&s, "CHIDORI_POLICY_PROFILE=x\\x1b[31m: not a profile (expected permissive, untrusted or "
                           "supervised); using the untrusted profile (deny by default) instead");
        sel_free(&s);
}

static void load_file_public(void **state)
{
        (void)state;
        struct policy *p = NULL;
        struct err *e = NULL;
        const char *f = write_tmp("three.json", "{\"rules\":[{\"target\":\"http\",\"decision\":\"never_allow\"},"
                                                "{\"target\":\"tool:a\",\"decision\":\"never_allow\"},"
                                                "{\"target\":\"*\",\"decision\":\"ask_before\"}],"
                                                "\"default\":\"never_allow\"}");
        assert_int_equal(policy_load_file(f, &p, &e), 0);
        assert_int_equal(policy_rule_count(p), 3);
        policy_free(p);
        assert_int_equal(policy_load_file("/nonexistent/p.json", &p, &e), -1);
        assert_int_equal(err_code(e), POLICY_ERR_IO);
        assert_string_equal(err_msg(e),
                            "policy file '/nonexistent/p.json': cannot be read: No such file or directory");
        err_free(e);
}

/* ---- layering ---- */

static void layered_stricter_wins(void **state)
{
        (void)state;
        struct policy *perm = NULL, *untr = NULL, *sup = NULL;
        assert_int_equal(policy_profile("permissive", NULL, &perm, NULL), 0);
        assert_int_equal(policy_profile("untrusted", NULL, &untr, NULL), 0);
        assert_int_equal(policy_profile("supervised", NULL, &sup, NULL), 0);
        struct policy_verdict v;
        /* a session can tighten */
        assert_int_equal(policy_check_layered(perm, untr, "http", NULL, &v), POLICY_DENY);
        assert_ptr_equal(v.policy, untr);
        assert_int_equal(policy_check_layered(perm, sup, "http", NULL, &v), POLICY_ASK);
        assert_ptr_equal(v.policy, sup);
        /* ... and never relax */
        assert_int_equal(policy_check_layered(untr, perm, "http", NULL, &v), POLICY_DENY);
        assert_ptr_equal(v.policy, untr);
        assert_int_equal(policy_check_layered(sup, perm, "tool:x", NULL, &v), POLICY_ASK);
        assert_int_equal(policy_check_layered(untr, sup, "http", NULL, &v), POLICY_DENY);  /* deny > ask */
        assert_ptr_equal(v.policy, untr);
        /* both allow: the server's verdict */
        assert_int_equal(policy_check_layered(untr, perm, "workspace:read", NULL, &v), POLICY_ALLOW);
        assert_ptr_equal(v.policy, untr);
        assert_int_equal(v.rule_index, 1);
        /* no session: the server alone */
        assert_int_equal(policy_check_layered(perm, NULL, "http", NULL, &v), POLICY_ALLOW);
        assert_ptr_equal(v.policy, perm);
        policy_free(perm);
        policy_free(untr);
        policy_free(sup);
}

static void layered_with_custom_server(void **state)
{
        (void)state;
        struct policy *server = parse_ok("{\"rules\":[{\"target\":\"workspace:read\",\"decision\":\"never_allow\","
                                         "\"reason\":\"no reads here\"}]}");
        struct policy *sess = NULL;
        assert_int_equal(policy_profile("untrusted", NULL, &sess, NULL), 0);
        struct policy_verdict v;
        /* the session allows reads, the server denies them: deny, with the server's reason */
        assert_int_equal(policy_check_layered(server, sess, "workspace:read", NULL, &v), POLICY_DENY);
        assert_string_equal(v.reason, "no reads here");
        /* server allows http, session denies */
        assert_int_equal(policy_check_layered(server, sess, "http", NULL, &v), POLICY_DENY);
        assert_ptr_equal(v.policy, sess);
        policy_free(server);
        policy_free(sess);
}

/* ---- texts ---- */

static void describe_strings(void **state)
{
        (void)state;
        struct policy *p = NULL;
        struct err *e = NULL;
        const char j[] = "{\"rules\":[{\"target\":\"http\",\"decision\":\"never_allow\"}],\"default\":\"ask_before\"}";
        assert_int_equal(policy_parse(j, strlen(j), "CHIDORI_POLICY_FILE=/etc/x.json", &p, &e), 0);
        assert_describe(p, "custom from CHIDORI_POLICY_FILE=/etc/x.json (1 rule, default ask_before)");
        /* snprintf contract: full length returned, output truncated */
        char small[8];
        size_t n = policy_describe(p, small, sizeof(small));
        assert_int_equal(n, strlen("custom from CHIDORI_POLICY_FILE=/etc/x.json (1 rule, default ask_before)"));
        assert_string_equal(small, "custom ");
        policy_free(p);
        assert_int_equal(policy_profile("untrusted", "--untrusted", &p, NULL), 0);
        assert_describe(p, "untrusted (--untrusted)");
        policy_free(p);
        assert_describe(NULL, "none (every gated call is denied)");
}

static void denial_message_text(void **state)
{
        (void)state;
        char buf[512];
        struct policy_verdict v = { .decision = POLICY_DENY, .reason = "ops API only", .rule_index = 0 };
        policy_denial_message("http", &v, buf, sizeof(buf));
        assert_string_equal(buf, "policy: `http` denied: ops API only");
        v.reason = NULL;
        policy_denial_message("workspace:write", &v, buf, sizeof(buf));
        assert_string_equal(buf, "policy: `workspace:write` denied");
        v.reason = "";
        policy_denial_message("workspace:write", &v, buf, sizeof(buf));
        assert_string_equal(buf, "policy: `workspace:write` denied");
        /* the agent names tools: control bytes and backticks cannot reach the terminal raw */
        policy_denial_message("tool:x\033[2J`y\n", NULL, buf, sizeof(buf));
        assert_string_equal(buf, "policy: `tool:x\\x1b[2J\\x60y\\x0a` denied");
        /* from a real check */
        struct sel s = select_ok((struct policy_sources){ .surface = POLICY_SURFACE_SERVE });
        policy_check(s.p, "http", NULL, &v);
        policy_denial_message("http", &v, buf, sizeof(buf));
        assert_string_equal(buf, "policy: `http` denied: the untrusted profile allows only workspace:list, "
                                 "workspace:read and workspace:manifest (chidori serve's default; opt out with "
                                 "CHIDORI_POLICY_FILE, CHIDORI_POLICY, CHIDORI_POLICY_PROFILE or --trusted)");
        sel_free(&s);
}

static void ask_message_text(void **state)
{
        (void)state;
        char buf[512];
        struct policy_verdict v = { .decision = POLICY_ASK, .reason = "deploys need a human" };
        policy_ask_message("tool:deploy", &v, buf, sizeof(buf));
        assert_string_equal(buf, "policy: `tool:deploy` needs approval: deploys need a human; nothing can approve it "
                                 "here (set CHIDORI_POLICY_AUTO_APPROVE=1 to approve such calls)");
        v.reason = NULL;
        policy_ask_message("http", &v, buf, sizeof(buf));
        assert_string_equal(buf, "policy: `http` needs approval; nothing can approve it here (set "
                                 "CHIDORI_POLICY_AUTO_APPROVE=1 to approve such calls)");
}

static void long_target_truncated(void **state)
{
        (void)state;
        char target[600], buf[1024];
        memset(target, 'a', sizeof(target) - 1);
        target[sizeof(target) - 1] = '\0';
        size_t n = policy_denial_message(target, NULL, buf, sizeof(buf));
        assert_int_equal(n, strlen("policy: `") + 200 + 3 + strlen("` denied"));
        assert_non_null(strstr(buf, "aaa...` denied"));
}

static void decision_names(void **state)
{
        (void)state;
        assert_string_equal(policy_decision_name(POLICY_ALLOW), "always_allow");
        assert_string_equal(policy_decision_name(POLICY_ASK), "ask_before");
        assert_string_equal(policy_decision_name(POLICY_DENY), "never_allow");
        assert_string_equal(policy_decision_name(POLICY_DECISION_MAX), "?");
        assert_true(POLICY_DENY > POLICY_ASK && POLICY_ASK > POLICY_ALLOW);
}

static int setup(void **state)
{
        (void)state;
        snprintf(tmpdir, sizeof(tmpdir), "/tmp/test_policy.XXXXXX");
        return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state)
{
        (void)state;
        char cmd[128];
        snprintf(cmd, sizeof(cmd), "%s/%s", tmpdir, "permissive.json");
        const char *names[] = { "permissive.json", "one.json", "bad.json", "three.json" };
        for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
                snprintf(cmd, sizeof(cmd), "%s/%s", tmpdir, names[i]);
                unlink(cmd);
        }
        rmdir(tmpdir);
        return 0;
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(profile_permissive),
                cmocka_unit_test(secret_targets),
                cmocka_unit_test(profile_untrusted),
                cmocka_unit_test(profile_supervised),
                cmocka_unit_test(profile_unknown),
                cmocka_unit_test(schema_minimal_and_defaults),
                cmocka_unit_test(schema_full_example),
                cmocka_unit_test(schema_errors_top_level),
                cmocka_unit_test(schema_errors_rules),
                cmocka_unit_test(schema_errors_targets),
                cmocka_unit_test(schema_errors_match_args),
                cmocka_unit_test(syntax_errors_line_col),
                cmocka_unit_test(limits),
                cmocka_unit_test(limit_match_depth),
                cmocka_unit_test(first_match_wins),
                cmocka_unit_test(first_match_skips_non_matching_args),
                cmocka_unit_test(star_target),
                cmocka_unit_test(targets_are_exact),
                cmocka_unit_test(empty_rules_never_allow),
                cmocka_unit_test(null_policy_or_target_denies),
                cmocka_unit_test(match_subset),
                cmocka_unit_test(match_nested_objects),
                cmocka_unit_test(match_substring_strings),
                cmocka_unit_test(match_scalars_equal),
                cmocka_unit_test(match_arrays_exact),
                cmocka_unit_test(url_prefix_anchors),
                cmocka_unit_test(url_substring_trap),
                cmocka_unit_test(url_prefix_nested),
                cmocka_unit_test(duplicate_arg_keys_deny),
                cmocka_unit_test(select_run_default),
                cmocka_unit_test(select_serve_default),
                cmocka_unit_test(select_trusted),
                cmocka_unit_test(select_both_flags_usage_error),
                cmocka_unit_test(select_untrusted_beats_permissive_file),
                cmocka_unit_test(select_untrusted_beats_everything),
                cmocka_unit_test(select_file_beats_inline),
                cmocka_unit_test(select_inline_beats_profile),
                cmocka_unit_test(select_profile_beats_default),
                cmocka_unit_test(select_empty_values_are_unset),
                cmocka_unit_test(select_malformed_file),
                cmocka_unit_test(select_malformed_inline),
                cmocka_unit_test(select_schema_error_inline),
                cmocka_unit_test(select_unknown_profile),
                cmocka_unit_test(select_missing_file),
                cmocka_unit_test(select_control_chars_escaped),
                cmocka_unit_test(load_file_public),
                cmocka_unit_test(layered_stricter_wins),
                cmocka_unit_test(layered_with_custom_server),
                cmocka_unit_test(describe_strings),
                cmocka_unit_test(denial_message_text),
                cmocka_unit_test(ask_message_text),
                cmocka_unit_test(long_target_truncated),
                cmocka_unit_test(decision_names),
        };
        return cmocka_run_group_tests(tests, setup, teardown);
}
