/* proto/json.c — validating JSON text.  See json.h. */
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

/* A member name and its ':' (at v->i, whitespace skipped), then the
 * whitespace before its value.  `expected` names what may stand there. */
static int v_member(struct vstate *v, const char *expected)
{
        if (v->i >= v->len || v->s[v->i] != '"')
                return unexpected(v, expected);
        if (v_string(v) < 0)
                return -1;
        skip_ws(v);
        if (v->i >= v->len || v->s[v->i] != ':')
                return unexpected(v, "':' after a member name");
        v->i++;
        skip_ws(v);
        return 0;
}

/* A string, number or literal at v->i (c is its first byte). */
static int v_scalar(struct vstate *v, unsigned char c)
{
        if (c == '"')
                return v_string(v);
        if (c == '-' || is_digit(c))
                return v_number(v);
        if (c == 't' || c == 'f' || c == 'n')
                return v_literal(v, c == 't' ? "true" : c == 'f' ? "false" : "null");
        return unexpected(v, "a value");
}

/* Iterative (an explicit stack of one bit per open container), so a deep
 * document cannot exhaust the C stack; one loop keeps the state machine in
 * one place. */
int json_validate(const char *text, size_t len, const struct json_limits *lim, struct json_error *ret_err,
                  size_t *ret_values)
{
        struct vstate v = { .s = (const unsigned char *)text, .len = len, .err = ret_err };
        size_t max_depth = lim && lim->max_depth ? lim->max_depth : JSON_DEPTH_MAX;
        size_t max_values = lim && lim->max_values ? lim->max_values : SIZE_MAX;
        size_t depth = 0, values = 0;
        /* One bit per open container: set for an object. */
        unsigned char small[(JSON_DEPTH_MAX + 1024) / 8];
        unsigned char *stack = small;
        if (max_depth / 8 + 1 > sizeof(small)) {
                stack = calloc(max_depth / 8 + 1, 1);
                if (!stack)
                        return verr(&v, JSON_E_NOMEM, 0, "out of memory for %zu levels", max_depth);
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
                                if (v_member(&v, "a member name in quotes or '}'") < 0)
                                        goto out;
                                continue;
                        } else {
                                continue;
                        }
                } else if (v_scalar(&v, c) < 0) {
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
                        if (obj && v_member(&v, "a member name in quotes") < 0)
                                goto out;
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
