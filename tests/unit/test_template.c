/* tests/unit/test_template.c — effects/template/template.c, one test per rule of
 * docs/template.md. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <math.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "common/err.h"
#include "common/util.h"
#include "effects/template/template.h"

/* Render `tpl` with vars parsed from `vars_json` (NULL = no vars) and compare. */
static void check(const char *tpl, const char *vars_json, const char *want)
{
        cJSON *vars = NULL;
        if (vars_json) {
                vars = cJSON_Parse(vars_json);
                if (!vars)
                        fail_msg("test vars do not parse: %s", vars_json);
        }
        char *out = NULL;
        struct err *e = NULL;
        if (template_render(tpl, vars, &out, &e) < 0)
                fail_msg("render '%s': %s", tpl, err_msg(e));
        assert_non_null(out);
        if (strcmp(out, want) != 0)
                fail_msg("render '%s'\n got: '%s'\nwant: '%s'", tpl, out, want);
        free(out);
        cJSON_Delete(vars);
}

/* Render must fail with exactly `want` as message, or (prefix match) start with it. */
static void check_err(const char *tpl, const char *vars_json, const char *want, int exact)
{
        cJSON *vars = vars_json ? cJSON_Parse(vars_json) : NULL;
        if (vars_json && !vars)
                fail_msg("test vars do not parse: %s", vars_json);
        char *out = (char *)0x1;
        struct err *e = NULL;
        if (template_render(tpl, vars, &out, &e) >= 0)
                fail_msg("render '%s' succeeded, want error '%s'", tpl, want);
        assert_ptr_equal(out, (char *)0x1);  /* ret untouched on failure */
        const char *msg = err_msg(e);
        if (exact ? strcmp(msg, want) != 0 : strncmp(msg, want, strlen(want)) != 0)
                fail_msg("render '%s'\n got error: '%s'\nwant error: '%s'", tpl, msg, want);
        err_free(e);
        cJSON_Delete(vars);
}

static void test_simple(void **state)
{
        (void)state;
        check("Hello, {{ name }}!", "{\"name\":\"Ada\"}", "Hello, Ada!");
        check("{{name}}", "{\"name\":\"Ada\"}", "Ada");
        check("{{ \t name\t }}", "{\"name\":\"Ada\"}", "Ada");
        check("<{{\n  name\n}}>", "{\"name\":\"Ada\"}", "<Ada>");
        check("{{ $x }}{{ _y }}{{ a1 }}", "{\"$x\":\"1\",\"_y\":\"2\",\"a1\":\"3\"}", "123");
}

static void test_dotted_paths(void **state)
{
        (void)state;
        const char *vars = "{\"user\":{\"name\":\"Ada\",\"langs\":[\"en\",\"fr\"],\"addr\":{\"city\":{\"name\":\"Paris\"}}},"
                           "\"items\":[{\"title\":\"first\"},{\"title\":\"second\"}],\"m\":{\"0\":\"zero\"},"
                           "\"grid\":[[1,2],[3,4]]}";
        check("{{ user.name }}", vars, "Ada");
        check("{{ user.langs.1 }}", vars, "fr");
        check("{{ items.0.title }} then {{ items.1.title }}", vars, "first then second");
        check("{{ user.addr.city.name }}", vars, "Paris");
        check("{{ grid.1.0 }}", vars, "3");
        check("{{ m.0 }}", vars, "zero");  /* digits name a member of an object */
}

static void test_value_types(void **state)
{
        (void)state;
        const char *vars = "{\"t\":true,\"f\":false,\"n\":null,\"i\":3,\"neg\":-42,\"d\":2.5,"
                           "\"o\":{\"a\":1.0,\"b\":[true,null,\"x\\\"y\\n\"],\"c\":{}},\"a\":[1,\"two\",[]],"
                           "\"s\":\"<b>&amp; \\\"quoted\\\" 'single'\\n</b>\"}";
        check("{{t}} {{f}} {{n}}", vars, "true false null");
        check("{{ i }}|{{ neg }}|{{ d }}", vars, "3|-42|2.5");
        check("{{ o }}", vars, "{\"a\":1,\"b\":[true,null,\"x\\\"y\\n\"],\"c\":{}}");
        check("{{ a }}", vars, "[1,\"two\",[]]");
        check("{{ o.c }}{{ a.2 }}", vars, "{}[]");
        /* strings go in verbatim: no HTML escaping, no JSON quoting */
        check("{{ s }}", vars, "<b>&amp; \"quoted\" 'single'\n</b>");
        check("{{ o.b.2 }}", vars, "x\"y\n");
        /* control characters and UTF-8 inside inserted JSON, as JSON.stringify */
        check("{{ x }}", "{\"x\":[\"tab\\there\",\"\\u0001\",\"é日🎉\",\"\\\\\"]}",
              "[\"tab\\there\",\"\\u0001\",\"é日🎉\",\"\\\\\"]");
        /* a lone surrogate (WTF-8, as a frame carries a JS string's) as JSON.stringify: \udXXX */
        cJSON *v = cJSON_CreateObject(), *arr = cJSON_AddArrayToObject(v, "x");
        cJSON_AddItemToArray(arr, cJSON_CreateString("a\xed\xa0\x80" "b"));
        char *out = NULL;
        struct err *e = NULL;
        assert_int_equal(template_render("{{ x }}", v, &out, &e), 0);
        assert_string_equal(out, "[\"a\\ud800b\"]");
        free(out);
        cJSON_Delete(v);
}

static void test_numbers_like_js(void **state)
{
        (void)state;
        /* expected strings are String(x) from node */
        static const char *const cases[][2] = {
                { "3", "3" },
                { "-0", "0" },
                { "2.5", "2.5" },
                { "1e21", "1e+21" },
                { "1e20", "100000000000000000000" },
                { "0.1", "0.1" },
                { "1e-7", "1e-7" },
                { "0.000001", "0.000001" },
                { "0.0000015", "0.0000015" },
                { "123456789012345680000", "123456789012345680000" },
                { "9007199254740993", "9007199254740992" },
                { "-1.5e-10", "-1.5e-10" },
                { "5e-324", "5e-324" },
                { "1.7976931348623157e308", "1.7976931348623157e+308" },
                { "0.30000000000000004", "0.30000000000000004" },
                { "100", "100" },
                { "1234.5678", "1234.5678" },
                { "123e-20", "1.23e-18" },
                { "4.35", "4.35" },
                { "0.3333333333333333", "0.3333333333333333" },
                { "1.0", "1" },
                { "-100.0e0", "-100" },
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                char vars[96];
                snprintf(vars, sizeof(vars), "{\"x\":%s,\"arr\":[%s]}", cases[i][0], cases[i][0]);
                check("{{ x }}", vars, cases[i][1]);
                char want[96];
                snprintf(want, sizeof(want), "[%s]", cases[i][1]);
                check("{{ arr }}", vars, want);  /* same digits nested in JSON */
        }
        /* NaN and infinities cannot come from JSON; built by hand, they print as JSON.stringify would */
        cJSON *vars = cJSON_CreateObject();
        cJSON_AddNumberToObject(vars, "inf", INFINITY);
        char *out = NULL;
        assert_int_equal(template_render("{{inf}}", vars, &out, NULL), 0);
        assert_string_equal(out, "null");
        free(out);
        cJSON_Delete(vars);
}

static void test_missing_variable(void **state)
{
        (void)state;
        const char *vars = "{\"user\":{\"name\":\"Ada\"},\"items\":[\"a\",\"b\"],\"name\":\"x\"}";
        check_err("Dear\nfriend,\n{{ user.nmae }}", vars, "template: no variable 'user.nmae' (line 3)", 1);
        check_err("{{ nobody }}", vars, "template: no variable 'nobody' (line 1)", 1);
        check_err("{{ items.2 }}", vars, "template: no variable 'items.2' (line 1)", 1);
        check_err("{{ items.01 }}", vars, "template: no variable 'items.01' (line 1)", 1);
        check_err("{{ items.length }}", vars, "template: no variable 'items.length' (line 1)", 1);
        check_err("{{ name.first }}", vars, "template: no variable 'name.first' (line 1)", 1);
        check_err("{{ items.99999999999999999999 }}", vars, "template: no variable 'items.99999999999999999999'", 0);
        check_err("{{ Name }}", vars, "template: no variable 'Name' (line 1)", 1);  /* case matters */
        check_err("{{ x }}", NULL, "template: no variable 'x' (line 1)", 1);
        check_err("{{ x }}", "{}", "template: no variable 'x' (line 1)", 1);
        check("no tags, no vars", NULL, "no tags, no vars");

        /* a very long name is cut in the message */
        char tpl[400], want[300];
        int n = snprintf(tpl, sizeof(tpl), "{{ ");
        for (int i = 0; i < 300; i++)
                tpl[n++] = 'a';
        snprintf(tpl + n, sizeof(tpl) - (size_t)n, " }}");
        snprintf(want, sizeof(want), "template: no variable '%.*s...' (line 1)", 200, tpl + 3);
        check_err(tpl, "{}", want, 1);
}

static void test_escapes(void **state)
{
        (void)state;
        const char *vars = "{\"name\":\"Ada\"}";
        check("\\{{ name }}", vars, "{{ name }}");
        check("\\\\{{ name }}", vars, "\\Ada");
        check("\\\\\\{{ name }}", vars, "\\{{ name }}");
        check("\\\\\\\\{{ name }}", vars, "\\\\Ada");
        check("a \\{{ literal }} and {{ name }}", vars, "a {{ literal }} and Ada");
        check("\\{{", NULL, "{{");  /* a literal "{{" needs no closing "}}" */
        /* backslashes anywhere else are plain text */
        check("C:\\path\\new \\} \\}} \\{ x \\\\ {{ name }}", vars, "C:\\path\\new \\} \\}} \\{ x \\\\ Ada");
        check("trailing \\", NULL, "trailing \\");
        check("}} } { {x", NULL, "}} } { {x");
        check("{\\{{", NULL, "{{{");
}

static void test_unterminated(void **state)
{
        (void)state;
        check_err("one\ntwo {{ name", "{\"name\":1}", "template: unterminated '{{' (line 2)", 0);
        check_err("{{ name }", "{\"name\":1}", "template: unterminated '{{' (line 1)", 0);
        check_err("end {{", NULL, "template: unterminated '{{' (line 1)", 0);
        check_err("a\n\n\\\\{{", NULL, "template: unterminated '{{' (line 3)", 0);
        check_err("{{ a }}\n{{ b", "{\"a\":1}", "template: unterminated '{{' (line 2)", 0);
}

static void test_bad_names(void **state)
{
        (void)state;
        const char *vars = "{\"a\":{\"b\":1},\"x\":1}";
        const char *bad[] = {
                "{{ 0 }}", "{{ a b }}", "{{ a..b }}", "{{ .a }}", "{{ a. }}", "{{ a-b }}",
                "{{ 1a }}", "{{ a.0b }}", "{{ a[0] }}", "{{{ x }}}", "{{ a.b() }}", "{{ é }}",
                "{{ a . b }}", "{{ # x }}", "{{ x {{ x }}",
        };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
                check_err(bad[i], vars, "template: bad variable name '", 0);
        check_err("\n{{ a b }}", vars,
                  "template: bad variable name 'a b' (line 2); a name is letters, digits, '_' and '$' in parts "
                  "joined by dots, e.g. {{ user.name }} or {{ items.0 }}",
                  1);
        check_err("{{}}", vars, "template: empty tag '{{}}' (line 1)", 0);
        check_err("x\n{{ \n }}", vars, "template: empty tag '{{ \n }}' (line 2)", 0);
}

static void test_nested_repeated_adjacent(void **state)
{
        (void)state;
        const char *vars = "{\"a\":\"A\",\"b\":\"B\",\"p\":{\"q\":{\"r\":\"R\"}}}";
        check("{{a}}{{b}}{{a}}", vars, "ABA");
        check("{{ a }}{{ a }}{{ a }}-{{ a }}", vars, "AAA-A");
        check("[{{p.q.r}}{{ p.q.r }}]", vars, "[RR]");
        check("{{ p.q }}", vars, "{\"r\":\"R\"}");
        /* an inserted value is not itself expanded */
        check("{{ t }}", "{\"t\":\"{{ a }} \\\\{{\"}", "{{ a }} \\{{");
}

static void test_lines_counted_through_tags(void **state)
{
        (void)state;
        check_err("{{\na\n}}\nx {{ missing }}", "{\"a\":1}", "template: no variable 'missing' (line 4)", 1);
        check_err("\\{{\n}}\n{{ missing }}", "{}", "template: no variable 'missing' (line 3)", 1);
}

static void test_utf8_untouched(void **state)
{
        (void)state;
        check("héllo 日本 {{ name }} 🎉 \xff\xfe raw", "{\"name\":\"ünïcode 🙂\"}", "héllo 日本 ünïcode 🙂 🎉 \xff\xfe raw");
}

static void test_empty_and_plain(void **state)
{
        (void)state;
        check("", NULL, "");
        check("", "{}", "");
        check("just text, { braces } and }} and a lone {", "{}", "just text, { braces } and }} and a lone {");
        check("multi\nline\n", NULL, "multi\nline\n");
}

static void test_bad_arguments(void **state)
{
        (void)state;
        char *out = NULL;
        struct err *e = NULL;
        assert_int_equal(template_render(NULL, NULL, &out, &e), -1);
        assert_non_null(strstr(err_msg(e), "no template"));
        err_free(e);
        e = NULL;
        cJSON *arr = cJSON_Parse("[1]");
        assert_int_equal(template_render("x", arr, &out, &e), -1);
        assert_non_null(strstr(err_msg(e), "vars must be a JSON object"));
        err_free(e);
        cJSON_Delete(arr);
        assert_null(out);
}

static void test_output_cap(void **state)
{
        (void)state;
        size_t mib = 1024 * 1024;
        char *s = malloc(mib + 1);
        assert_non_null(s);
        memset(s, 'x', mib);
        s[mib] = '\0';
        cJSON *vars = cJSON_CreateObject();
        cJSON_AddStringToObject(vars, "m", s);
        free(s);

        char tpl[160];
        size_t n = 0;
        for (int i = 0; i < 16; i++)
                n += (size_t)snprintf(tpl + n, sizeof(tpl) - n, "{{ m }}");
        char *out = NULL;
        struct err *e = NULL;
        if (template_render(tpl, vars, &out, &e) < 0)
                fail_msg("16 MiB exactly: %s", err_msg(e));
        assert_int_equal(strlen(out), TEMPLATE_OUTPUT_MAX);
        free(out);

        snprintf(tpl + n, sizeof(tpl) - n, "\n!");  /* one byte over, reported on line 2 */
        out = NULL;
        assert_int_equal(template_render(tpl, vars, &out, &e), -1);
        assert_null(out);
        assert_string_equal(err_msg(e),
                            "template: output would exceed 16 MiB (line 2); shorten the template or the values it inserts");
        err_free(e);
        e = NULL;

        n = (size_t)snprintf(tpl, sizeof(tpl), "{{ m }}");
        for (int i = 0; i < 16; i++)
                n += (size_t)snprintf(tpl + n, sizeof(tpl) - n, "{{m}}");
        assert_int_equal(template_render(tpl, vars, &out, &e), -1);
        assert_non_null(strstr(err_msg(e), "exceed 16 MiB (line 1)"));
        err_free(e);
        e = NULL;

        /* a plain template above the cap */
        char *big = malloc(TEMPLATE_OUTPUT_MAX + 2);
        assert_non_null(big);
        memset(big, 'y', TEMPLATE_OUTPUT_MAX + 1);
        big[TEMPLATE_OUTPUT_MAX + 1] = '\0';
        assert_int_equal(template_render(big, NULL, &out, &e), -1);
        assert_non_null(strstr(err_msg(e), "exceed 16 MiB"));
        err_free(e);
        free(big);
        cJSON_Delete(vars);
}

static void test_too_deep(void **state)
{
        (void)state;
        cJSON *vars = cJSON_CreateObject();
        cJSON *cur = cJSON_AddArrayToObject(vars, "deep");
        for (int i = 0; i < TEMPLATE_DEPTH_MAX + 5; i++) {
                cJSON *next = cJSON_CreateArray();
                cJSON_AddItemToArray(cur, next);
                cur = next;
        }
        char *out = NULL;
        struct err *e = NULL;
        assert_int_equal(template_render("{{ deep }}", vars, &out, &e), -1);
        assert_string_equal(err_msg(e), "template: value of 'deep' is nested deeper than 1000 levels (line 1)");
        err_free(e);
        cJSON_Delete(vars);
}

static void test_linear_time(void **state)
{
        (void)state;
        /* 200,000 tags and 200,000 escaped "{{" in one template: a quadratic
         * pass would take minutes, a linear one milliseconds. */
        enum { N = 200000 };
        const char *unit = "{{ a }}\\{{\n";
        size_t ul = strlen(unit);
        char *tpl = malloc(N * ul + 1);
        assert_non_null(tpl);
        for (size_t i = 0; i < N; i++)
                memcpy(tpl + i * ul, unit, ul);
        tpl[N * ul] = '\0';
        cJSON *vars = cJSON_Parse("{\"a\":\"v\"}");
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        char *out = NULL;
        assert_int_equal(template_render(tpl, vars, &out, NULL), 0);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        assert_int_equal(strlen(out), (size_t)N * strlen("v{{\n"));
        double ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
        printf("template: %d tags + %d escapes rendered in %.1f ms\n", N, N, ms);
        assert_true(ms < 2000);
        free(out);
        free(tpl);
        cJSON_Delete(vars);
}

static double ms_since(const struct timespec *t0)
{
        struct timespec t1;
        clock_gettime(CLOCK_MONOTONIC, &t1);
        return (double)(t1.tv_sec - t0->tv_sec) * 1e3 + (double)(t1.tv_nsec - t0->tv_nsec) / 1e6;
}

/* A lookup repeated over a big object or array costs one hash probe, not a
 * walk to the member: 20,000 tags over 20,000 members each. */
static void test_big_containers_linear(void **state)
{
        (void)state;
        enum { N = 20000 };
        cJSON *vars = cJSON_CreateObject(), *o = cJSON_AddObjectToObject(vars, "o"),
              *a = cJSON_AddArrayToObject(vars, "a");
        char key[32];
        for (int i = 0; i < N; i++) {
                snprintf(key, sizeof(key), "k%d", i);
                cJSON_AddNumberToObject(o, key, i);
                cJSON_AddItemToArray(a, cJSON_CreateNumber(i));
        }
        const char *unit = "{{o.k19999}}{{ a.19999 }}";
        size_t ul = strlen(unit);
        char *tpl = malloc(N * ul + 1);
        for (size_t i = 0; i < N; i++)
                memcpy(tpl + i * ul, unit, ul);
        tpl[N * ul] = '\0';
        struct timespec t0;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        char *out = NULL;
        struct err *e = NULL;
        if (template_render(tpl, vars, &out, &e) < 0)
                fail_msg("%s", err_msg(e));
        double ms = ms_since(&t0);
        printf("template: %d lookups in a %d-member object and array in %.1f ms\n", 2 * N, N, ms);
        assert_int_equal(strlen(out), (size_t)N * 10);
        assert_memory_equal(out, "1999919999", 10);
        assert_true(ms < 1000); /* ~7 s when each lookup walked the members */
        free(out);
        free(tpl);
        cJSON_Delete(vars);
}

/* Duplicate names: the first one wins, as a walk would find it. */
static void test_duplicate_members(void **state)
{
        (void)state;
        check("{{ a }} {{ o.b }}", "{\"a\":1,\"a\":2,\"o\":{\"b\":\"x\",\"b\":\"y\"}}", "1 x");
}

/* Keys that all land in one slot (found here against this process's seed,
 * as an attacker who knew it might) cost a probe per key each: the work
 * budget stops the render instead of letting it go quadratic. */
static void test_work_budget(void **state)
{
        (void)state;
        enum { N = 3000 };
        const uint64_t mask = 8191; /* the table of an object of 3,000 members */
        cJSON *vars = cJSON_CreateObject(), *o = cJSON_AddObjectToObject(vars, "o");
        char key[32], last[32] = "";
        int found = 0;
        for (uint64_t i = 0; found < N; i++) {
                int n = snprintf(key, sizeof(key), "c%llu", (unsigned long long)i);
                if ((hash_bytes(key, (size_t)n, hash_seed()) & mask) != 0)
                        continue;
                cJSON_AddNumberToObject(o, key, found++);
                memcpy(last, key, sizeof(key));
        }
        char tpl[64];
        snprintf(tpl, sizeof(tpl), "{{ o.%s }}", last);
        char *out = (char *)0x1;
        struct err *e = NULL;
        assert_int_equal(template_render(tpl, vars, &out, &e), -1);
        assert_ptr_equal(out, (char *)0x1);
        assert_int_equal(err_code(e), TEMPLATE_E_LIMIT);
        if (!strstr(err_msg(e), "template work limit reached (") ||
            !strstr(err_msg(e), " at line 1; the budget is 16 per byte of template and per member of the objects and "
                                "arrays it looks into): simplify the template or its variables"))
                fail_msg("%s", err_msg(e));
        err_free(e);
        /* the same members spread normally are fine */
        snprintf(tpl, sizeof(tpl), "{{ o.%s }}", last);
        cJSON *spread = cJSON_CreateObject(), *so = cJSON_AddObjectToObject(spread, "o");
        for (int i = 0; i < N; i++) {
                snprintf(key, sizeof(key), "s%d", i);
                cJSON_AddNumberToObject(so, key, i);
        }
        cJSON_AddNumberToObject(so, last, 7);
        out = NULL;
        assert_int_equal(template_render(tpl, spread, &out, NULL), 0);
        assert_string_equal(out, "7");
        free(out);
        cJSON_Delete(spread);
        cJSON_Delete(vars);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_simple),
                cmocka_unit_test(test_dotted_paths),
                cmocka_unit_test(test_value_types),
                cmocka_unit_test(test_numbers_like_js),
                cmocka_unit_test(test_missing_variable),
                cmocka_unit_test(test_escapes),
                cmocka_unit_test(test_unterminated),
                cmocka_unit_test(test_bad_names),
                cmocka_unit_test(test_nested_repeated_adjacent),
                cmocka_unit_test(test_lines_counted_through_tags),
                cmocka_unit_test(test_utf8_untouched),
                cmocka_unit_test(test_empty_and_plain),
                cmocka_unit_test(test_bad_arguments),
                cmocka_unit_test(test_output_cap),
                cmocka_unit_test(test_too_deep),
                cmocka_unit_test(test_linear_time),
                cmocka_unit_test(test_big_containers_linear),
                cmocka_unit_test(test_duplicate_members),
                cmocka_unit_test(test_work_budget),
        };
        return cmocka_run_group_tests_name("template", tests, NULL, NULL);
}
