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
