/* proto/json.c — validating JSON text and finding values in it without a
 * tree.  See json.h. */
#define _GNU_SOURCE
#include "proto/json.h"

#include <stdarg.h>
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

static bool is_hex(unsigned char c)
{
        return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/* ---- validation ---- */

struct vstate {
        const unsigned char *s;
        size_t len, i;
        struct json_error *err;
};

static int verr(struct vstate *v, enum json_errc code, size_t at, const char *fmt, ...)
        __attribute__((format(printf, 4, 5)));

static int verr(struct vstate *v, enum json_errc code, size_t at, const char *fmt, ...)
{
        if (v->err) {
                v->err->code = code;
                v->err->offset = at;
                va_list ap;
                va_start(ap, fmt);
                vsnprintf(v->err->what, sizeof(v->err->what), fmt, ap);
                va_end(ap);
        }
        return -1;
}

/* "unexpected character 'x'" / "unexpected byte 0xff" / "unexpected end of the text". */
static int unexpected(struct vstate *v, const char *expected)
{
        if (v->i >= v->len)
                return verr(v, JSON_E_SYNTAX, v->len, "unexpected end of the text (expected %s)", expected);
        unsigned char c = v->s[v->i];
        if (c > 0x20 && c < 0x7f)
                return verr(v, JSON_E_SYNTAX, v->i, "unexpected character '%c' (expected %s)", c, expected);
        return verr(v, JSON_E_SYNTAX, v->i, "unexpected byte 0x%02x (expected %s)", c, expected);
}

static void skip_ws(struct vstate *v)
{
        while (v->i < v->len && is_ws(v->s[v->i]))
                v->i++;
}

/* Length of the UTF-8 sequence at s[0..n) (n >= 1, s[0] >= 0x80), or 0 if
 * it is not one (overlong forms, surrogates and code points past U+10FFFF
 * are not). */
static size_t utf8_seq(const unsigned char *s, size_t n)
{
        unsigned char c = s[0];
        unsigned char lo = 0x80, hi = 0xbf;
        size_t need;
        if (c >= 0xc2 && c <= 0xdf)
                need = 1;
        else if (c >= 0xe0 && c <= 0xef) {
                need = 2;
                if (c == 0xe0)
                        lo = 0xa0;
                else if (c == 0xed)
                        hi = 0x9f;
        } else if (c >= 0xf0 && c <= 0xf4) {
                need = 3;
                if (c == 0xf0)
                        lo = 0x90;
                else if (c == 0xf4)
                        hi = 0x8f;
        } else {
                return 0;
        }
        if (n < need + 1 || s[1] < lo || s[1] > hi)
                return 0;
        for (size_t k = 2; k <= need; k++)
                if ((s[k] & 0xc0) != 0x80)
                        return 0;
        return need + 1;
}

static int v_string(struct vstate *v)
{
        size_t start = v->i++;
        for (;;) {
                /* The common case: a run of plain ASCII. */
                while (v->i < v->len && v->s[v->i] >= 0x20 && v->s[v->i] < 0x80 && v->s[v->i] != '"' &&
                       v->s[v->i] != '\\')
                        v->i++;
                if (v->i >= v->len)
                        return verr(v, JSON_E_SYNTAX, v->len,
                                    "unexpected end of the text in the string that starts at byte %zu", start);
                unsigned char c = v->s[v->i];
                if (c == '"') {
                        v->i++;
                        return 0;
                }
                if (c == '\\') {
                        if (v->i + 1 >= v->len)
                                return verr(v, JSON_E_SYNTAX, v->len, "unexpected end of the text in an escape");
                        unsigned char e = v->s[v->i + 1];
                        if (e == 'u') {
                                for (size_t k = 2; k < 6; k++)
                                        if (v->i + k >= v->len || !is_hex(v->s[v->i + k]))
                                                return verr(v, JSON_E_SYNTAX, v->i,
                                                            "\\u must be followed by 4 hex digits");
                                v->i += 6;
                                continue;
                        }
                        if (!strchr("\"\\/bfnrt", e) || e == '\0') {
                                if (e > 0x20 && e < 0x7f)
                                        return verr(v, JSON_E_SYNTAX, v->i, "invalid escape '\\%c' in a string", e);
                                return verr(v, JSON_E_SYNTAX, v->i, "invalid escape (byte 0x%02x after '\\')", e);
                        }
                        v->i += 2;
                        continue;
                }
                if (c < 0x20)
                        return verr(v, JSON_E_SYNTAX, v->i,
                                    "control character U+%04X in a string (it must be written \\u%04x)", c, c);
                size_t n = utf8_seq(v->s + v->i, v->len - v->i);
                if (n == 0)
                        return verr(v, JSON_E_SYNTAX, v->i, "invalid UTF-8 in a string (byte 0x%02x)", c);
                v->i += n;
        }
}

static int v_digits(struct vstate *v, const char *what)
{
        if (v->i >= v->len || !is_digit(v->s[v->i]))
                return unexpected(v, what);
        while (v->i < v->len && is_digit(v->s[v->i]))
                v->i++;
        return 0;
}

static int v_number(struct vstate *v)
{
        if (v->s[v->i] == '-')
                v->i++;
        if (v->i < v->len && v->s[v->i] == '0') {
                v->i++;
                if (v->i < v->len && is_digit(v->s[v->i]))
                        return verr(v, JSON_E_SYNTAX, v->i - 1, "a number cannot start with 0 followed by a digit");
        } else if (v_digits(v, "a digit") < 0) {
                return -1;
        }
        if (v->i < v->len && v->s[v->i] == '.') {
                v->i++;
                if (v_digits(v, "a digit after '.'") < 0)
                        return -1;
        }
        if (v->i < v->len && (v->s[v->i] == 'e' || v->s[v->i] == 'E')) {
                v->i++;
                if (v->i < v->len && (v->s[v->i] == '+' || v->s[v->i] == '-'))
                        v->i++;
                if (v_digits(v, "a digit in the exponent") < 0)
                        return -1;
        }
        return 0;
}

/* true, false, null: an error points at the word's first byte. */
static int v_literal(struct vstate *v, const char *word)
{
        size_t n = strlen(word);
        if (v->len - v->i < n || memcmp(v->s + v->i, word, n) != 0 ||
            (v->i + n < v->len && v->s[v->i + n] >= 'a' && v->s[v->i + n] <= 'z'))
                return verr(v, JSON_E_SYNTAX, v->i, "not a JSON value (expected '%s', or a string in quotes)", word);
        v->i += n;
        return 0;
}

int json_validate(const char *text, size_t len, const struct json_limits *lim, struct json_error *ret_err,
                  size_t *ret_values)
{
        struct vstate v = { .s = (const unsigned char *)text, .len = len, .err = ret_err };
        size_t max_depth = lim && lim->max_depth ? lim->max_depth : JSON_DEPTH_MAX;
        size_t max_values = lim && lim->max_values ? lim->max_values : SIZE_MAX;
        size_t depth = 0, values = 0;
        /* One bit per open container: set for an object. */
        unsigned char small[256];
        unsigned char *stack = small;
        if (max_depth / 8 + 1 > sizeof(small)) {
                stack = calloc(max_depth / 8 + 1, 1);
                if (!stack)
                        return verr(&v, JSON_E_DEPTH, 0, "out of memory");
        }
        int rc = -1;
        skip_ws(&v);
        if (v.i >= len) {
                verr(&v, JSON_E_SYNTAX, len, "no JSON value (the text is %s)", len ? "only whitespace" : "empty");
                goto out;
        }
        for (;;) {
                /* A value starts at v.i (whitespace skipped). */
                if (++values > max_values) {
                        verr(&v, JSON_E_VALUES, v.i, "more than %zu values", max_values);
                        goto out;
                }
                unsigned char c = v.i < len ? v.s[v.i] : 0;
                if (c == '{' || c == '[') {
                        if (depth >= max_depth) {
                                verr(&v, JSON_E_DEPTH, v.i, "nested deeper than %zu levels", max_depth);
                                goto out;
                        }
                        if (c == '{')
                                stack[depth / 8] |= (unsigned char)(1u << (depth % 8));
                        else
                                stack[depth / 8] &= (unsigned char)~(1u << (depth % 8));
                        depth++;
                        v.i++;
                        skip_ws(&v);
                        if (v.i < len && v.s[v.i] == (c == '{' ? '}' : ']')) {
                                v.i++;
                                depth--;
                        } else if (c == '{') {
                                if (v.i >= len || v.s[v.i] != '"') {
                                        unexpected(&v, "a member name in quotes or '}'");
                                        goto out;
                                }
                                if (v_string(&v) < 0)
                                        goto out;
                                skip_ws(&v);
                                if (v.i >= len || v.s[v.i] != ':') {
                                        unexpected(&v, "':' after a member name");
                                        goto out;
                                }
                                v.i++;
                                skip_ws(&v);
                                continue;
                        } else {
                                continue;
                        }
                } else if (c == '"') {
                        if (v_string(&v) < 0)
                                goto out;
                } else if (c == '-' || is_digit(c)) {
                        if (v_number(&v) < 0)
                                goto out;
                } else if (c == 't' || c == 'f' || c == 'n') {
                        if (v_literal(&v, c == 't' ? "true" : c == 'f' ? "false" : "null") < 0)
                                goto out;
                } else {
                        unexpected(&v, "a value");
                        goto out;
                }
                /* After a value: close containers, or go on to the next one. */
                for (;;) {
                        skip_ws(&v);
                        if (depth == 0) {
                                if (v.i < len) {
                                        verr(&v, JSON_E_SYNTAX, v.i, "trailing bytes after the JSON value");
                                        goto out;
                                }
                                rc = 0;
                                goto out;
                        }
                        bool obj = stack[(depth - 1) / 8] & (1u << ((depth - 1) % 8));
                        if (v.i < len && v.s[v.i] == (obj ? '}' : ']')) {
                                v.i++;
                                depth--;
                                continue;
                        }
                        if (v.i >= len || v.s[v.i] != ',') {
                                unexpected(&v, obj ? "',' or '}'" : "',' or ']'");
                                goto out;
                        }
                        v.i++;
                        skip_ws(&v);
                        if (obj) {
                                if (v.i >= len || v.s[v.i] != '"') {
                                        unexpected(&v, "a member name in quotes");
                                        goto out;
                                }
                                if (v_string(&v) < 0)
                                        goto out;
                                skip_ws(&v);
                                if (v.i >= len || v.s[v.i] != ':') {
                                        unexpected(&v, "':' after a member name");
                                        goto out;
                                }
                                v.i++;
                                skip_ws(&v);
                        }
                        break;
                }
        }
out:
        if (stack != small)
                free(stack);
        if (rc == 0 && ret_values)
                *ret_values = values;
        return rc;
}

bool json_utf8_valid(const char *s, size_t len)
{
        const unsigned char *u = (const unsigned char *)s;
        for (size_t i = 0; i < len;) {
                if (u[i] < 0x80) {
                        i++;
                        continue;
                }
                size_t n = utf8_seq(u + i, len - i);
                if (!n)
                        return false;
                i += n;
        }
        return true;
}

void json_line_col(const char *text, size_t len, size_t offset, size_t *ret_line, size_t *ret_col)
{
        size_t line = 1, col = 1;
        for (size_t i = 0; i < offset && i < len; i++) {
                if (text[i] == '\n')
                        line++, col = 1;
                else
                        col++;
        }
        *ret_line = line;
        *ret_col = col;
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
                        memcpy(d->path + d->len, s, room - 3);
                        memcpy(d->path + d->len + room - 3, "...", 3);
                        d->len += room;
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
