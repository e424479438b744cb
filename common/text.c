/* common/text.c — see text.h. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "common/text.h"

const char *text_quote(const char *s, size_t len, char *out, size_t cap)
{
        size_t o = 0;
        for (size_t i = 0; i < len; i++) {
                unsigned char c = (unsigned char)s[i];
                if (o + 8 >= cap) {
                        memcpy(out + o, "...", 4);
                        return out;
                }
                if (c < 0x20 || c == 0x7f || c == '\'' || c == '\\')
                        o += (size_t)snprintf(out + o, cap - o, "\\x%02x", c);
                else
                        out[o++] = (char)c;
        }
        out[o] = '\0';
        return out;
}

void text_sanitize(const char *s, size_t max, char extra, char *out, size_t outlen)
{
        size_t o = 0, i = 0;
        if (!outlen)
                return;
        for (; s[i] && i < max; i++) {
                unsigned char c = (unsigned char)s[i];
                char tmp[5];
                int n = 1;
                if (c < 0x20 || c >= 0x7f || (extra && c == (unsigned char)extra))
                        n = snprintf(tmp, sizeof(tmp), "\\x%02x", c);
                else
                        tmp[0] = (char)c;
                if (o + (size_t)n + 1 > outlen)
                        break;
                memcpy(out + o, tmp, (size_t)n);
                o += (size_t)n;
        }
        if (s[i] && o + 4 <= outlen) {
                memcpy(out + o, "...", 3);
                o += 3;
        }
        out[o] = '\0';
}

/* The next unit of s (one byte, or one UTF-8 sequence) as terminal-safe
 * text in out[12]; returns its length and sets *used to the bytes read. */
static size_t term_unit(const unsigned char *s, size_t len, size_t *used, char *out)
{
        unsigned char c = s[0];
        *used = 1;
        if (c == '\t' || (c >= 0x20 && c < 0x7f)) {
                out[0] = (char)c;
                return 1;
        }
        size_t n = c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3 : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
        bool ok = n > 0 && n <= len;
        for (size_t i = 1; ok && i < n; i++)
                ok = (s[i] & 0xc0) == 0x80;
        /* No overlong forms, no surrogates, nothing above U+10FFFF. */
        if (ok && n == 3)
                ok = !(c == 0xe0 && s[1] < 0xa0) && !(c == 0xed && s[1] > 0x9f);
        if (ok && n == 4)
                ok = !(c == 0xf0 && s[1] < 0x90) && !(c == 0xf4 && s[1] > 0x8f);
        if (!ok)
                return (size_t)snprintf(out, 12, "\\x%02x", c);
        unsigned cp = n == 2 ? (c & 0x1fu) : n == 3 ? (c & 0x0fu) : (c & 0x07u);
        for (size_t i = 1; i < n; i++)
                cp = cp << 6 | (s[i] & 0x3fu);
        *used = n;
        if (cp <= 0x9f || (cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069))
                return (size_t)snprintf(out, 12, "\\u%04x", cp);
        memcpy(out, s, n);
        return n;
}

const char *text_term(const char *s, size_t len, char *out, size_t cap)
{
        size_t o = 0, i = 0;
        if (!cap)
                return out;
        while (i < len) {
                char u[12];
                size_t used;
                size_t n = term_unit((const unsigned char *)s + i, len - i, &used, u);
                if (o + n + 4 > cap) {
                        if (o + 4 <= cap) {
                                memcpy(out + o, "...", 3);
                                o += 3;
                        }
                        break;
                }
                memcpy(out + o, u, n);
                o += n;
                i += used;
        }
        out[o] = '\0';
        return out;
}

/* One line of s (no '\n' handled specially: it is escaped) onto f. */
static void fput_escaped(FILE *f, const char *s, size_t len)
{
        char buf[512];
        size_t o = 0;
        for (size_t i = 0; i < len;) {
                size_t used;
                o += term_unit((const unsigned char *)s + i, len - i, &used, buf + o);
                i += used;
                if (o > sizeof(buf) - 12) {
                        fwrite(buf, 1, o, f);
                        o = 0;
                }
        }
        fwrite(buf, 1, o, f);
}

void text_fput_lines(FILE *f, const char *prefix, const char *s, size_t len, bool newline_last)
{
        const char *p = s, *end = s + len;
        do {
                const char *nl = memchr(p, '\n', (size_t)(end - p));
                size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
                fputs(prefix, f);
                fput_escaped(f, p, n);
                p += n + (nl ? 1 : 0);
                if (p < end || newline_last)
                        fputc('\n', f);
        } while (p < end);
}

void text_fput_line(FILE *f, const char *prefix, const char *s, size_t len)
{
        fputs(prefix, f);
        fput_escaped(f, s, len);
        fputc('\n', f);
}

void text_line_col(const char *text, const char *at, int *line, int *col)
{
        const unsigned char *p = (const unsigned char *)text;
        *line = 1, *col = 1;
        if (p[0] == 0xef && p[1] == 0xbb && p[2] == 0xbf && (const char *)p + 3 <= at)
                p += 3;
        for (; (const char *)p < at && *p; p++) {
                if (*p == '\n')
                        (*line)++, *col = 1;
                else if ((*p & 0xc0) != 0x80)
                        (*col)++;
        }
}

size_t jpath_push(struct jpath *p, const char *fmt, ...)
{
        size_t old = p->len;
        if (p->len + 1 < sizeof(p->buf)) {
                va_list ap;
                va_start(ap, fmt);
                int n = vsnprintf(p->buf + p->len, sizeof(p->buf) - p->len, fmt, ap);
                va_end(ap);
                if (n > 0)
                        p->len += (size_t)n;
                if (p->len >= sizeof(p->buf))
                        p->len = sizeof(p->buf) - 1;
        }
        return old;
}

void jpath_pop(struct jpath *p, size_t old)
{
        p->len = old;
        p->buf[old] = '\0';
}

const char *jpath_str(const struct jpath *p)
{
        return p->len ? p->buf : "top level";
}
