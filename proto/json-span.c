/* proto/json-span.c — values inside validated JSON text, found without
 * a tree: members, elements, the compact form, where two values differ.
 * See json.h. */
#define _GNU_SOURCE
#include "proto/json.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool is_ws(unsigned char c)
{
        return c == ' ' || c == '\n' || c == '\r' || c == '\t';
}

static bool is_digit(unsigned char c)
{
        return c >= '0' && c <= '9';
}

/* ---- spans ---- */

struct json_span json_trim(struct json_span v)
{
        while (v.len && is_ws((unsigned char)v.p[0]))
                v.p++, v.len--;
        while (v.len && is_ws((unsigned char)v.p[v.len - 1]))
                v.len--;
        return v;
}

enum json_kind json_kind_of(struct json_span v)
{
        v = json_trim(v);
        if (!v.len)
                return JSON_INVALID;
        switch (v.p[0]) {
        case '{': return JSON_OBJECT;
        case '[': return JSON_ARRAY;
        case '"': return JSON_STRING;
        case 't': return JSON_TRUE;
        case 'f': return JSON_FALSE;
        case 'n': return JSON_NULL;
        default: return v.p[0] == '-' || is_digit((unsigned char)v.p[0]) ? JSON_NUMBER : JSON_INVALID;
        }
}

/* End of the string literal starting at p[0] == '"' (just past its closing
 * quote), or 0. */
static size_t string_len(const char *p, size_t len)
{
        for (size_t i = 1; i < len; i++) {
                if (p[i] == '\\')
                        i++;
                else if (p[i] == '"')
                        return i + 1;
        }
        return 0;
}

size_t json_value_len(const char *p, size_t len)
{
        if (!len)
                return 0;
        char c = p[0];
        if (c == '"')
                return string_len(p, len);
        if (c == '{' || c == '[') {
                size_t depth = 0;
                for (size_t i = 0; i < len; i++) {
                        char d = p[i];
                        if (d == '"') {
                                size_t n = string_len(p + i, len - i);
                                if (!n)
                                        return 0;
                                i += n - 1;
                        } else if (d == '{' || d == '[') {
                                depth++;
                        } else if (d == '}' || d == ']') {
                                if (--depth == 0)
                                        return i + 1;
                        }
                }
                return 0;
        }
        size_t i = 0;
        while (i < len && (is_digit((unsigned char)p[i]) || (p[i] >= 'a' && p[i] <= 'z') || p[i] == '-' ||
                           p[i] == '+' || p[i] == '.' || p[i] == 'E'))
                i++;
        return i;
}

int json_iter_init(struct json_iter *it, struct json_span v)
{
        v = json_trim(v);
        if (!v.len || (v.p[0] != '{' && v.p[0] != '['))
                return -1;
        *it = (struct json_iter){ .p = v.p, .len = v.len, .off = 1, .object = v.p[0] == '{', .first = true };
        return 0;
}

static void it_ws(struct json_iter *it)
{
        while (it->off < it->len && is_ws((unsigned char)it->p[it->off]))
                it->off++;
}

int json_iter_next(struct json_iter *it, struct json_span *ret_key, struct json_span *ret_value)
{
        if (it->done)
                return 0;
        it_ws(it);
        if (it->off >= it->len)
                return -1;
        char close = it->object ? '}' : ']';
        if (it->p[it->off] == close) {
                it->done = true;
                return 0;
        }
        if (!it->first) {
                if (it->p[it->off] != ',')
                        return -1;
                it->off++;
                it_ws(it);
        }
        it->first = false;
        struct json_span key = { NULL, 0 };
        if (it->object) {
                if (it->off >= it->len || it->p[it->off] != '"')
                        return -1;
                size_t n = string_len(it->p + it->off, it->len - it->off);
                if (!n)
                        return -1;
                key = (struct json_span){ it->p + it->off, n };
                it->off += n;
                it_ws(it);
                if (it->off >= it->len || it->p[it->off] != ':')
                        return -1;
                it->off++;
                it_ws(it);
        }
        size_t n = json_value_len(it->p + it->off, it->len - it->off);
        if (!n)
                return -1;
        if (ret_key)
                *ret_key = key;
        if (ret_value)
                *ret_value = (struct json_span){ it->p + it->off, n };
        it->off += n;
        return 1;
}

int json_object_get(struct json_span v, const char *key, size_t key_len, struct json_span *ret)
{
        struct json_iter it;
        if (json_kind_of(v) != JSON_OBJECT || json_iter_init(&it, v) < 0)
                return -1;
        struct json_span k, val;
        int r;
        while ((r = json_iter_next(&it, &k, &val)) > 0) {
                if (json_string_equals(k, key, key_len)) {
                        *ret = val;
                        return 1;
                }
        }
        return r < 0 ? -1 : 0;
}

char *json_compact(struct json_span v, size_t *ret_len)
{
        v = json_trim(v);
        char *out = malloc(v.len + 1);
        if (!out)
                return NULL;
        size_t o = 0;
        bool in_str = false;
        for (size_t i = 0; i < v.len; i++) {
                char c = v.p[i];
                if (in_str) {
                        out[o++] = c;
                        if (c == '\\' && i + 1 < v.len)
                                out[o++] = v.p[++i];
                        else if (c == '"')
                                in_str = false;
                        continue;
                }
                if (is_ws((unsigned char)c))
                        continue;
                if (c == '"')
                        in_str = true;
                out[o++] = c;
        }
        out[o] = '\0';
        if (ret_len)
                *ret_len = o;
        return out;
}

/* ---- where two values differ ---- */

#define DIFF_DEPTH_MAX 64

struct diff {
        char *path;
        size_t cap, len;  /* len < cap whenever cap > 0 */
        bool full;        /* cut: "..." ends the path */
        struct json_span a, b;
};

static void path_put(struct diff *d, const char *s, size_t n)
{
        if (d->cap == 0 || d->full)
                return;
        if (d->len + n + 1 > d->cap) {
                size_t room = d->cap - 1 - d->len;
                if (room < 3 && d->cap >= 4) {
                        d->len = d->cap - 4; /* make room for the mark */
                        room = 3;
                }
                if (room >= 3) {
                        size_t take = room - 3;
                        while (take > 0 && take < n && ((unsigned char)s[take] & 0xc0) == 0x80)
                                take--; /* not inside a UTF-8 character */
                        memcpy(d->path + d->len, s, take);
                        memcpy(d->path + d->len + take, "...", 3);
                        d->len += take + 3;
                }
                d->path[d->len] = '\0';
                d->full = true;
                return;
        }
        memcpy(d->path + d->len, s, n);
        d->len += n;
        d->path[d->len] = '\0';
}

static void path_cut(struct diff *d, size_t mark)
{
        if (d->cap == 0)
                return;
        d->len = mark;
        d->path[mark] = '\0';
        d->full = false;
}

static bool is_ident(struct json_span key)
{
        if (key.len < 3)
                return false;
        for (size_t i = 1; i + 1 < key.len; i++) {
                char c = key.p[i];
                if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == '$' ||
                      (i > 1 && is_digit((unsigned char)c))))
                        return false;
        }
        return true;
}

static bool span_text_eq(struct json_span a, struct json_span b)
{
        /* Compare ignoring whitespace outside strings: both are valid. */
        size_t i = 0, j = 0;
        bool in_str = false;
        for (;;) {
                if (!in_str) {
                        while (i < a.len && is_ws((unsigned char)a.p[i]))
                                i++;
                        while (j < b.len && is_ws((unsigned char)b.p[j]))
                                j++;
                }
                if (i >= a.len || j >= b.len)
                        return i >= a.len && j >= b.len;
                if (a.p[i] != b.p[j])
                        return false;
                if (in_str && a.p[i] == '\\') {
                        i++, j++;
                        if (i >= a.len || j >= b.len || a.p[i] != b.p[j])
                                return i >= a.len && j >= b.len;
                } else if (a.p[i] == '"') {
                        in_str = !in_str;
                }
                i++, j++;
        }
}

static int diff_at(struct diff *d, struct json_span a, struct json_span b, int depth)
{
        a = json_trim(a), b = json_trim(b);
        if (span_text_eq(a, b))
                return 0;
        enum json_kind ka = json_kind_of(a), kb = json_kind_of(b);
        struct json_iter ia, ib;
        if (ka != kb || (ka != JSON_ARRAY && ka != JSON_OBJECT) || depth >= DIFF_DEPTH_MAX ||
            json_iter_init(&ia, a) < 0 || json_iter_init(&ib, b) < 0) {
                d->a = a, d->b = b;
                return 1;
        }
        for (size_t idx = 0;; idx++) {
                struct json_span kx, vx, ky, vy;
                int ra = json_iter_next(&ia, &kx, &vx), rb = json_iter_next(&ib, &ky, &vy);
                if (ra <= 0 && rb <= 0) {
                        d->a = a, d->b = b; /* not valid JSON: the whole of it */
                        return 1;
                }
                if (ra <= 0 || rb <= 0) {
                        char buf[32];
                        int n = snprintf(buf, sizeof(buf), "[%zu]", idx);
                        if (ka == JSON_ARRAY)
                                path_put(d, buf, (size_t)n);
                        else
                                path_put(d, " (member names)", 15);
                        d->a = ra > 0 ? (ka == JSON_OBJECT ? kx : vx) : (struct json_span){ NULL, 0 };
                        d->b = rb > 0 ? (ka == JSON_OBJECT ? ky : vy) : (struct json_span){ NULL, 0 };
                        return 1;
                }
                size_t mark = d->len;
                if (ka == JSON_OBJECT) {
                        if (!span_text_eq(kx, ky)) {
                                path_put(d, " (member names)", 15);
                                d->a = kx, d->b = ky;
                                return 1;
                        }
                        if (is_ident(kx)) {
                                path_put(d, ".", 1);
                                path_put(d, kx.p + 1, kx.len - 2);
                        } else {
                                path_put(d, "[", 1);
                                path_put(d, kx.p, kx.len);
                                path_put(d, "]", 1);
                        }
                } else {
                        char buf[32];
                        int n = snprintf(buf, sizeof(buf), "[%zu]", idx);
                        path_put(d, buf, (size_t)n);
                }
                if (diff_at(d, vx, vy, depth + 1))
                        return 1;
                path_cut(d, mark);
        }
}

int json_diff(struct json_span a, struct json_span b, const char *root, char *path, size_t path_len,
              struct json_span *ret_a, struct json_span *ret_b)
{
        struct diff d = { .path = path, .cap = path_len };
        if (path_len)
                path[0] = '\0';
        if (path_len && root)
                path_put(&d, root, strlen(root));
        if (!diff_at(&d, a, b, 0))
                return 0;
        *ret_a = d.a;
        *ret_b = d.b;
        return 1;
}
