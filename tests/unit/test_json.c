#define _GNU_SOURCE
/* tests/unit/test_json.c — proto/json: the validator (what it accepts,
 * what it refuses and where), spans, string decoding and encoding (against
 * node's JSON.stringify), numbers (against node's String(x)), and the
 * cJSON bridge. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/json.h"
#include "tests/unit/json_tables.h"

static struct json_span S(const char *s)
{
        return (struct json_span){ s, strlen(s) };
}

static void validate_accepts(void **state)
{
        (void)state;
        static const char *ok[] = {
                "0", "-0", "1", "-1", "0.5", "-0.5e-10", "1E5", "1e+5", "123456789012345678901234567890",
                "true", "false", "null", "\"\"", "\"a\"", " \t\r\n1 \n", "[]", "{}", "[ ]", "{ }",
                "[1,2,3]", "{\"a\":1,\"b\":[true,false,null],\"c\":{}}", "{\"a\":1,\"a\":2}",
                "\"\\\"\\\\\\/\\b\\f\\n\\r\\t\"", "\"\\u0000\"", "\"\\uD83D\\uDE00\"", "\"\\ud800\"", "\"\\udc00x\"",
                "\"\\udbff\\ud800\"", "\"h\xc3\xa9\"", "\"\xe2\x80\xa8\xe2\x80\xa9\"", "\"\xf0\x9f\x98\x80\"",
                "\"\xf4\x8f\xbf\xbf\"", "\"\x7f\"", "[[[[[[[[[[]]]]]]]]]]", "\"\xef\xbf\xbd\"",
        };
        for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
                struct json_error e = { 0 };
                if (json_validate(ok[i], strlen(ok[i]), NULL, &e, NULL) < 0)
                        fail_msg("'%s' refused: %s at %zu", ok[i], e.what, e.offset);
        }
        size_t n = 0;
        const char *t = "{\"a\":[1,{\"b\":\"x\"}],\"c\":null}";
        assert_int_equal(json_validate(t, strlen(t), NULL, NULL, &n), 0);
        assert_int_equal(n, 6); /* object, array, 1, object, "x", null */
}

static void validate_rejects(void **state)
{
        (void)state;
        static const struct {
                const char *text;
                size_t len; /* 0: strlen */
                size_t offset;
                const char *what;
        } bad[] = {
                { "", 0, 0, "no JSON value (the text is empty)" },
                { "  ", 0, 2, "no JSON value (the text is only whitespace)" },
                { "{\"a\": nope}", 0, 6, "not a JSON value (expected 'null'" },
                { "{", 0, 1, "unexpected end of the text (expected a member name in quotes or '}')" },
                { "{} x", 0, 3, "trailing bytes after the JSON value" },
                { "1 2", 0, 2, "trailing bytes" },
                { "[1,]", 0, 3, "unexpected character ']' (expected a value)" },
                { "[1 2]", 0, 3, "expected ',' or ']'" },
                { "{\"a\" 1}", 0, 5, "expected ':' after a member name" },
                { "{\"a\":1,}", 0, 7, "expected a member name in quotes" },
                { "{1:2}", 0, 1, "unexpected character '1' (expected a member name in quotes or '}')" },
                { "01", 0, 0, "a number cannot start with 0 followed by a digit" },
                { "-", 0, 1, "unexpected end of the text (expected a digit)" },
                { "1.", 0, 2, "expected a digit after '.'" },
                { "1.e5", 0, 2, "unexpected character 'e' (expected a digit after '.')" },
                { "1e", 0, 2, "expected a digit in the exponent" },
                { "+1", 0, 0, "unexpected character '+' (expected a value)" },
                { ".5", 0, 0, "unexpected character '.'" },
                { "NaN", 0, 0, "unexpected character 'N'" },
                { "tru", 0, 0, "not a JSON value (expected 'true'" },
                { "nullx", 0, 0, "not a JSON value (expected 'null'" },
                { "\"abc", 0, 4, "unexpected end of the text in the string that starts at byte 0" },
                { "\"a\nb\"", 0, 2, "control character U+000A in a string (it must be written \\u000a)" },
                { "\"a\tb\"", 0, 2, "control character U+0009" },
                { "\"\\x\"", 0, 1, "invalid escape '\\x' in a string" },
                { "\"\\u12\"", 0, 1, "\\u must be followed by 4 hex digits" },
                { "\"\\u12G4\"", 0, 1, "\\u must be followed by 4 hex digits" },
                { "\"\\", 0, 2, "unexpected end of the text in an escape" },
                { "\"\xff\"", 0, 1, "invalid UTF-8 in a string (byte 0xff)" },
                { "\"\xc0\x80\"", 0, 1, "invalid UTF-8 in a string (byte 0xc0)" },
                { "\"\xe0\x80\x80\"", 0, 1, "invalid UTF-8 in a string (byte 0xe0)" },
                { "\"\xed\xa0\x80\"", 0, 1, "invalid UTF-8 in a string (byte 0xed)" },
                { "\"\xf4\x90\x80\x80\"", 0, 1, "invalid UTF-8 in a string (byte 0xf4)" },
                { "\"\xc3\"", 0, 1, "invalid UTF-8" },
                { "\"a\0b\"", 5, 2, "control character U+0000" },
                { "[1]\0", 4, 3, "trailing bytes" },
                { "\xef\xbb\xbf{}", 0, 0, "unexpected byte 0xef (expected a value)" },
                { "// c\n1", 0, 0, "unexpected character '/'" },
                { "'a'", 0, 0, "unexpected character '''" },
        };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                struct json_error e = { 0 };
                size_t len = bad[i].len ? bad[i].len : strlen(bad[i].text);
                if (json_validate(bad[i].text, len, NULL, &e, NULL) == 0)
                        fail_msg("case %zu accepted", i);
                assert_int_equal(e.code, JSON_E_SYNTAX);
                if (e.offset != bad[i].offset || !strstr(e.what, bad[i].what))
                        fail_msg("case %zu: '%s' at %zu, want '%s' at %zu", i, e.what, e.offset, bad[i].what,
                                 bad[i].offset);
        }
}

static void validate_limits(void **state)
{
        (void)state;
        char deep[2 * 12 + 1];
        memset(deep, '[', 12);
        memset(deep + 12, ']', 12);
        deep[24] = '\0';
        struct json_limits lim = { .max_depth = 12 };
        struct json_error e;
        assert_int_equal(json_validate(deep, 24, &lim, &e, NULL), 0);
        lim.max_depth = 11;
        assert_int_equal(json_validate(deep, 24, &lim, &e, NULL), -1);
        assert_int_equal(e.code, JSON_E_DEPTH);
        assert_int_equal(e.offset, 11);
        assert_string_equal(e.what, "nested deeper than 11 levels");
        /* the default: JSON_DEPTH_MAX levels, then no more */
        size_t d = JSON_DEPTH_MAX;
        char *big = malloc(2 * (d + 1));
        memset(big, '[', d + 1);
        memset(big + d + 1, ']', d + 1);
        assert_int_equal(json_validate(big + 1, 2 * d, NULL, &e, NULL), 0);
        assert_int_equal(json_validate(big, 2 * (d + 1), NULL, &e, NULL), -1);
        assert_int_equal(e.code, JSON_E_DEPTH);
        free(big);
        /* values */
        struct json_limits vl = { .max_values = 4 };
        assert_int_equal(json_validate("[1,2,3]", 7, &vl, &e, NULL), 0);
        assert_int_equal(json_validate("[1,2,3,4]", 9, &vl, &e, NULL), -1);
        assert_int_equal(e.code, JSON_E_VALUES);
        assert_int_equal(e.offset, 7);
        assert_int_equal(json_validate("{\"a\":1,\"b\":2,\"c\":3}", 19, &vl, &e, NULL), 0); /* keys do not count */
}

static void line_col(void **state)
{
        (void)state;
        size_t l, c;
        const char *t = "{\n  \"a\": 1,\n  oops\n}";
        struct json_error e;
        assert_int_equal(json_validate(t, strlen(t), NULL, &e, NULL), -1);
        json_line_col(t, strlen(t), e.offset, &l, &c);
        assert_int_equal(l, 3);
        assert_int_equal(c, 3);
}

static void spans(void **state)
{
        (void)state;
        const char *t = " { \"type\" : \"call\", \"a\\u0062\":[1, {\"x\":2}], \"n\":-1.5e3 , \"s\":\"\\\"}\", \"type\":7} ";
        struct json_span v;
        assert_int_equal(json_kind_of(S(t)), JSON_OBJECT);
        assert_int_equal(json_object_get(S(t), "type", 4, &v), 1);
        assert_int_equal(v.len, 6);
        assert_memory_equal(v.p, "\"call\"", 6); /* the first of two */
        assert_int_equal(json_object_get(S(t), "ab", 2, &v), 1); /* names compare decoded */
        assert_int_equal(json_kind_of(v), JSON_ARRAY);
        assert_int_equal(v.len, 12);
        assert_int_equal(json_object_get(S(t), "n", 1, &v), 1);
        assert_int_equal(json_kind_of(v), JSON_NUMBER);
        assert_memory_equal(v.p, "-1.5e3", v.len);
        assert_int_equal(json_object_get(S(t), "s", 1, &v), 1);
        assert_memory_equal(v.p, "\"\\\"}\"", v.len);
        assert_int_equal(json_object_get(S(t), "zz", 2, &v), 0);
        assert_int_equal(json_object_get(S("[1]"), "a", 1, &v), -1);

        struct json_iter it;
        struct json_span k, val;
        assert_int_equal(json_iter_init(&it, S("[ 1 , \"a,]\" ,[2,[3]] ,{}]")), 0);
        const char *want[] = { "1", "\"a,]\"", "[2,[3]]", "{}" };
        for (int i = 0; i < 4; i++) {
                assert_int_equal(json_iter_next(&it, &k, &val), 1);
                assert_null(k.p);
                assert_int_equal(val.len, strlen(want[i]));
                assert_memory_equal(val.p, want[i], val.len);
        }
        assert_int_equal(json_iter_next(&it, &k, &val), 0);
        assert_int_equal(json_iter_init(&it, S("{}")), 0);
        assert_int_equal(json_iter_next(&it, &k, &val), 0);
        assert_int_equal(json_iter_init(&it, S("\"x\"")), -1);

        size_t n;
        char *c = json_compact(S(" { \"a b\" : [ 1 ,\t2 ] ,\n \"c\":\"x \\\" y\" } "), &n);
        assert_string_equal(c, "{\"a b\":[1,2],\"c\":\"x \\\" y\"}");
        assert_int_equal(n, strlen(c));
        free(c);
        assert_int_equal(json_value_len("1.5e3,", 6), 5);
        assert_int_equal(json_value_len("\"ab", 3), 0);
        assert_int_equal(json_value_len("[1,[2]", 6), 0);
}

static void diff(void **state)
{
        (void)state;
        char path[128];
        struct json_span a, b;
        assert_int_equal(json_diff(S("{\"k\":[1, 2]}"), S(" {\"k\":[1,2]}"), "args", path, sizeof(path), &a, &b), 0);
        assert_int_equal(json_diff(S("{\"key\":\"k1\"}"), S("{\"key\":\"k2\"}"), "args", path, sizeof(path), &a, &b), 1);
        assert_string_equal(path, "args.key");
        assert_memory_equal(a.p, "\"k1\"", a.len);
        assert_memory_equal(b.p, "\"k2\"", b.len);
        assert_int_equal(json_diff(S("{\"v\":[0,{\"a b\":0.3}]}"), S("{\"v\":[0,{\"a b\":0.30000000000000004}]}"),
                                   "args", path, sizeof(path), &a, &b),
                         1);
        assert_string_equal(path, "args.v[1][\"a b\"]");
        assert_memory_equal(a.p, "0.3", a.len);
        assert_int_equal(json_diff(S("[1,2]"), S("[1,2,3]"), "x", path, sizeof(path), &a, &b), 1);
        assert_string_equal(path, "x[2]");
        assert_null(a.p);
        assert_memory_equal(b.p, "3", b.len);
        assert_int_equal(json_diff(S("{\"a\":1}"), S("{\"b\":1}"), "x", path, sizeof(path), &a, &b), 1);
        assert_string_equal(path, "x (member names)");
        assert_memory_equal(a.p, "\"a\"", a.len);
        assert_int_equal(json_diff(S("1"), S("\"1\""), "x", path, sizeof(path), &a, &b), 1);
        assert_string_equal(path, "x");
        /* a path too long for the buffer is cut, and says so */
        char small[8];
        assert_int_equal(json_diff(S("{\"abcdefgh\":1}"), S("{\"abcdefgh\":2}"), "args", small, sizeof(small), &a, &b),
                         1);
        assert_string_equal(small, "args...");
}

static void decode_one(const char *lit, unsigned flags, const char *want, size_t want_len)
{
        char *out = NULL;
        size_t n = 0;
        if (json_string_decode(S(lit), flags, &out, &n) < 0)
                fail_msg("%s: not decoded", lit);
        if (n != want_len || memcmp(out, want, n) != 0 || out[n] != '\0')
                fail_msg("%s: decoded to %zu bytes", lit, n);
        if (flags == JSON_DECODE_WTF8 || !strstr(lit, "\\ud") || strstr(lit, "\\ude00"))
                assert_true(json_string_equals(S(lit), want, want_len)); /* (it compares WTF-8) */
        free(out);
}

static void string_decode(void **state)
{
        (void)state;
        decode_one("\"\"", 0, "", 0);
        decode_one("\"abc\"", 0, "abc", 3);
        decode_one("\"\\\"\\\\\\/\\b\\f\\n\\r\\t\"", 0, "\"\\/\b\f\n\r\t", 8);
        decode_one("\"a\\u0000b\"", 0, "a\0b", 3);
        decode_one("\"\\u0041\\u00e9\\u20AC\"", 0, "A\xc3\xa9\xe2\x82\xac", 6);
        decode_one("\"\\ud83d\\ude00\"", 0, "\xf0\x9f\x98\x80", 4);
        decode_one("\"\\uD83D\\uDE00\"", 0, "\xf0\x9f\x98\x80", 4);
        decode_one("\"\xf0\x9f\x98\x80\xe2\x80\xa8\"", 0, "\xf0\x9f\x98\x80\xe2\x80\xa8", 7);
        /* lone surrogates: U+FFFD, or their generalized UTF-8 (WTF-8) */
        decode_one("\"\\ud800\"", JSON_DECODE_REPLACE, "\xef\xbf\xbd", 3);
        decode_one("\"\\ud800\"", JSON_DECODE_WTF8, "\xed\xa0\x80", 3);
        decode_one("\"\\udc00\\ud800\"", JSON_DECODE_WTF8, "\xed\xb0\x80\xed\xa0\x80", 6);
        decode_one("\"\\udbffx\"", JSON_DECODE_REPLACE, "\xef\xbf\xbdx", 4);
        decode_one("\"\\ud800\\u0041\"", JSON_DECODE_REPLACE, "\xef\xbf\xbd" "A", 4);
        char *out = NULL;
        assert_int_equal(json_string_decode(S("abc"), 0, &out, NULL), -1);
        assert_int_equal(json_string_decode(S("\"ab"), 0, &out, NULL), -1);
        assert_int_equal(json_string_decode(S("\"a\\qb\""), 0, &out, NULL), -1);
        assert_int_equal(json_string_decode(S("\"\\u12\""), 0, &out, NULL), -1);
        assert_int_equal(json_string_decode(S("\"a\"b\""), 0, &out, NULL), -1);
        assert_false(json_string_equals(S("\"ab\""), "a", 1));
        assert_false(json_string_equals(S("\"a\\u0062\""), "abc", 3));
}

/* Every case against what node's JSON.stringify prints (json_tables.h). */
static void string_encode(void **state)
{
        (void)state;
        for (size_t i = 0; i < sizeof(string_table) / sizeof(string_table[0]); i++) {
                size_t n = 0;
                char *out = json_string_encode(string_table[i].bytes, string_table[i].len, 0, &n);
                assert_non_null(out);
                if (strcmp(out, string_table[i].json) != 0 || n != strlen(out))
                        fail_msg("case %zu: got %s, node prints %s", i, out, string_table[i].json);
                struct json_error e;
                if (json_validate(out, n, NULL, &e, NULL) < 0)
                        fail_msg("case %zu: not valid: %s", i, e.what);
                free(out);
        }
        /* WTF-8: encoded surrogates are escaped (lowercase), a pair joins */
        char *o = json_string_encode("\xed\xa0\x80|\xed\xbf\xbf|\xed\xa0\xbd\xed\xb8\x80", 14, JSON_ENCODE_WTF8, NULL);
        assert_string_equal(o, "\"\\ud800|\\udfff|\xf0\x9f\x98\x80\"");
        free(o);
        o = json_string_encode("\xed\xa0\x80", 3, 0, NULL); /* not WTF-8: invalid, three U+FFFD as node */
        assert_string_equal(o, "\"\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\"");
        free(o);
        /* into a buffer, measured first; RAW copies bytes >= 0x80 as they are (as cJSON prints) */
        const char raw[] = "a\"\xed\xa0\x80\xff\x01\n";
        char buf[64];
        size_t n = json_string_encode_to(raw, sizeof(raw) - 1, JSON_ENCODE_RAW, NULL);
        assert_int_equal(json_string_encode_to(raw, sizeof(raw) - 1, JSON_ENCODE_RAW, buf), n);
        buf[n] = '\0';
        assert_string_equal(buf, "\"a\\\"\xed\xa0\x80\xff\\u0001\\n\"");
}

/* encode(decode(x)) == x for literals in the form JSON.stringify writes. */
static void string_roundtrip(void **state)
{
        (void)state;
        static const char *lits[] = {
                "\"\"", "\"plain\"", "\"\\\"\\\\\\b\\f\\n\\r\\t\"", "\"\\u0000\\u0001\\u001f\x7f\"",
                "\"\\ud800\"", "\"\\udfff\"", "\"a\\udbff\\ud800b\"", "\"\xf0\x9f\x98\x80\xe2\x80\xa8\xe2\x80\xa9\"",
                "\"/ \xc3\xa9\"",
        };
        for (size_t i = 0; i < sizeof(lits) / sizeof(lits[0]); i++) {
                char *bytes = NULL;
                size_t n;
                assert_int_equal(json_string_decode(S(lits[i]), JSON_DECODE_WTF8, &bytes, &n), 0);
                char *again = json_string_encode(bytes, n, JSON_ENCODE_WTF8, NULL);
                if (strcmp(again, lits[i]) != 0)
                        fail_msg("%s came back as %s", lits[i], again);
                free(again);
                free(bytes);
        }
}

static void numbers(void **state)
{
        (void)state;
        for (size_t i = 0; i < sizeof(number_table) / sizeof(number_table[0]); i++) {
                double d;
                uint64_t bits = number_table[i].bits;
                memcpy(&d, &bits, sizeof(d));
                char buf[JSON_NUMBER_MAX];
                size_t n = json_format_number(d, buf);
                if (strcmp(buf, number_table[i].js) != 0 || n != strlen(buf))
                        fail_msg("%016llx: got %s, node prints %s", (unsigned long long)bits, buf,
                                 number_table[i].js);
        }
        char buf[JSON_NUMBER_MAX];
        json_format_number(0.0 / 0.0, buf);
        assert_string_equal(buf, "null");
        json_format_number(-1.0 / 0.0, buf);
        assert_string_equal(buf, "null");
}

static void cjson_bridge(void **state)
{
        (void)state;
        const char *t = "{\"type\":\"done\",\"ok\":true,\"value\": [0.30000000000000004, 1e-7, \"a\\u0000b\", \"\\ud800\"],"
                        "\"n\":41,\"s\":\"x\\u0000y\",\"lone\":\"\\udc00\"}";
        static const char *const raw[] = { "value", NULL };
        cJSON *j = json_to_cjson(S(t), raw, false);
        assert_non_null(j);
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, "value");
        assert_true(cJSON_IsRaw(v));
        assert_string_equal(v->valuestring, "[0.30000000000000004,1e-7,\"a\\u0000b\",\"\\ud800\"]");
        assert_int_equal(cJSON_GetObjectItemCaseSensitive(j, "n")->valuedouble, 41);
        assert_string_equal(cJSON_GetObjectItemCaseSensitive(j, "s")->valuestring, "x"); /* read only: cut */
        assert_string_equal(cJSON_GetObjectItemCaseSensitive(j, "lone")->valuestring, "\xef\xbf\xbd");
        char *p = cJSON_PrintUnformatted(j);
        assert_string_equal(p, "{\"type\":\"done\",\"ok\":true,\"value\":[0.30000000000000004,1e-7,\"a\\u0000b\",\"\\ud800\"],"
                               "\"n\":41,\"s\":\"x\",\"lone\":\"\xef\xbf\xbd\"}");
        free(p);
        cJSON_Delete(j);

        /* raw children: each answer carried as written */
        j = json_to_cjson(S("[1.0, {\"a\" : 1e2}, \"\\ud800\"]"), NULL, true);
        assert_non_null(j);
        assert_string_equal(cJSON_GetArrayItem(j, 0)->valuestring, "1.0");
        assert_string_equal(cJSON_GetArrayItem(j, 1)->valuestring, "{\"a\":1e2}");
        assert_string_equal(cJSON_GetArrayItem(j, 2)->valuestring, "\"\\ud800\"");
        cJSON_Delete(j);

        /* deep: no recursion in the builder */
        size_t d = JSON_DEPTH_MAX;
        char *big = malloc(2 * d);
        memset(big, '[', d);
        memset(big + d, ']', d);
        j = json_to_cjson((struct json_span){ big, 2 * d }, NULL, false);
        assert_non_null(j);
        cJSON_Delete(j);
        free(big);
        assert_null(json_to_cjson(S("[1,"), NULL, false));

        cJSON *n = json_cjson_number(0.1 + 0.2);
        p = cJSON_PrintUnformatted(n);
        assert_string_equal(p, "0.30000000000000004");
        free(p);
        cJSON_Delete(n);
        n = json_cjson_number(42);
        assert_true(cJSON_IsNumber(n));
        cJSON_Delete(n);
        n = json_cjson_string("a\0\xff", 3, 0);
        p = json_cjson_text(n);
        assert_string_equal(p, "\"a\\u0000\xef\xbf\xbd\"");
        free(p);
        cJSON_Delete(n);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(validate_accepts), cmocka_unit_test(validate_rejects),
                cmocka_unit_test(validate_limits),  cmocka_unit_test(line_col),
                cmocka_unit_test(spans),            cmocka_unit_test(diff),
                cmocka_unit_test(string_decode),    cmocka_unit_test(string_encode),
                cmocka_unit_test(string_roundtrip), cmocka_unit_test(numbers),
                cmocka_unit_test(cjson_bridge),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
