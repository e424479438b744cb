#define _GNU_SOURCE
/* tests/fuzz/fuzz_json.c — libFuzzer target for proto/json: the validator,
 * the span walkers, the tree builder and the string codec must not crash
 * on any bytes, and must agree with each other:
 *  - validate says yes  =>  the walkers reach the end, json_compact is
 *    valid again and equal under json_diff, json_to_cjson builds a tree;
 *  - a valid string literal decodes (WTF-8) and encodes back to a literal
 *    that decodes to the same bytes (encode(decode(x)) round trip);
 *  - any bytes encode to a valid literal that decodes to the same bytes
 *    when they are valid UTF-8 without encoded surrogates;
 *  - the raw encoding (bytes >= 0x80 as they are) is as long as measured,
 *    and the same as the default one for valid UTF-8. */
#include <cjson/cJSON.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proto/json.h"

/* Walk every array and object inside v, to the bottom. */
static void walk(struct json_span v, int depth)
{
        if (depth > 64)
                return;
        struct json_iter it;
        if (json_iter_init(&it, v) < 0)
                return;
        struct json_span k, val;
        int r;
        while ((r = json_iter_next(&it, &k, &val)) > 0) {
                if (k.p) {
                        char *key = NULL;
                        size_t n;
                        if (json_string_decode(k, JSON_DECODE_WTF8, &key, &n) != 0)
                                __builtin_trap(); /* a name the validator let through */
                        struct json_span found;
                        if (json_object_get(v, key, n, &found) != 1)
                                __builtin_trap();
                        free(key);
                }
                walk(val, depth + 1);
        }
        if (r < 0)
                __builtin_trap();
}

static void check_string(struct json_span lit)
{
        char *bytes = NULL;
        size_t n = 0;
        if (json_string_decode(lit, JSON_DECODE_WTF8, &bytes, &n) != 0)
                __builtin_trap();
        size_t elen = 0;
        char *again = json_string_encode(bytes, n, JSON_ENCODE_WTF8, &elen);
        if (!again || json_validate(again, elen, NULL, NULL, NULL) != 0)
                __builtin_trap();
        char *bytes2 = NULL;
        size_t n2 = 0;
        if (json_string_decode((struct json_span){ again, elen }, JSON_DECODE_WTF8, &bytes2, &n2) != 0 || n2 != n ||
            memcmp(bytes, bytes2, n) != 0)
                __builtin_trap();
        /* and encoding what came back is stable */
        char *third = json_string_encode(bytes2, n2, JSON_ENCODE_WTF8, NULL);
        if (!third || strcmp(third, again) != 0)
                __builtin_trap();
        free(third);
        free(bytes2);
        free(again);
        free(bytes);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        const char *text = (const char *)data;
        struct json_span all = { text, size };
        struct json_limits lim = { .max_depth = 256, .max_values = 100000 };
        struct json_error e;
        size_t values = 0;
        bool valid = json_validate(text, size, &lim, &e, &values) == 0;
        if (!valid && e.offset > size)
                __builtin_trap();

        /* The walkers take any bytes. */
        struct json_span v;
        (void)json_kind_of(all);
        (void)json_value_len(text, size);
        (void)json_object_get(all, "a", 1, &v);
        char path[64];
        struct json_span a, b;
        (void)json_diff(all, (struct json_span){ "{\"a\":1}", 7 }, "x", path, sizeof(path), &a, &b);
        cJSON *t = json_to_cjson(all, NULL, false);
        cJSON_Delete(t);

        if (valid) {
                walk(all, 0);
                size_t clen = 0;
                char *c = json_compact(all, &clen);
                if (!c || json_validate(c, clen, &lim, NULL, NULL) != 0)
                        __builtin_trap();
                if (json_diff(all, (struct json_span){ c, clen }, "x", path, sizeof(path), &a, &b) != 0)
                        __builtin_trap();
                static const char *const raw[] = { "a", NULL };
                t = json_to_cjson(all, raw, false);
                if (!t)
                        __builtin_trap();
                char *printed = cJSON_PrintUnformatted(t);
                free(printed);
                cJSON_Delete(t);
                t = json_to_cjson(all, NULL, true);
                cJSON_Delete(t);
                if (json_kind_of(all) == JSON_STRING)
                        check_string(json_trim(all));
                free(c);
        }

        /* Any bytes as a string: always a valid literal. */
        size_t elen = 0;
        char *lit = json_string_encode(text, size, 0, &elen);
        if (!lit || json_validate(lit, elen, NULL, NULL, NULL) != 0)
                __builtin_trap();
        char *back = NULL;
        size_t blen = 0;
        if (json_string_decode((struct json_span){ lit, elen }, JSON_DECODE_REPLACE, &back, &blen) != 0)
                __builtin_trap();
        if (json_utf8_valid(text, size) && (blen != size || memcmp(back, text, size) != 0))
                __builtin_trap();
        free(back);
        free(lit);
        lit = json_string_encode(text, size, JSON_ENCODE_WTF8, &elen);
        if (!lit || json_validate(lit, elen, NULL, NULL, NULL) != 0)
                __builtin_trap();
        free(lit);
        /* Into a buffer, bytes >= 0x80 as they are (the result frame's
         * strings): measured as written; for valid UTF-8, the same literal
         * as the default encoding (nothing to replace). */
        size_t rlen = json_string_encode_to(text, size, JSON_ENCODE_RAW, NULL);
        char *raw = malloc(rlen + 1);
        if (!raw || json_string_encode_to(text, size, JSON_ENCODE_RAW, raw) != rlen)
                __builtin_trap();
        if (json_utf8_valid(text, size)) {
                lit = json_string_encode(text, size, 0, &elen);
                if (!lit || elen != rlen || memcmp(lit, raw, rlen) != 0)
                        __builtin_trap();
                free(lit);
        }
        free(raw);

        char num[JSON_NUMBER_MAX];
        if (size >= sizeof(double)) {
                double d;
                memcpy(&d, data, sizeof(d));
                size_t n = json_format_number(d, num);
                if (n >= JSON_NUMBER_MAX || json_validate(num, n, NULL, NULL, NULL) != 0)
                        __builtin_trap();
                if (d == d && d - d == 0 && strtod(num, NULL) != d)
                        __builtin_trap(); /* finite: reads back as the same double */
        }
        return 0;
}
