/* proto/json-text.c — JSON string literals and numbers, exactly as
 * JavaScript writes them.  See json.h. */
#define _GNU_SOURCE
#include "proto/json.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- decoding a string literal ---- */

static int hexval(char c)
{
        if (c >= '0' && c <= '9')
                return c - '0';
        if (c >= 'a' && c <= 'f')
                return c - 'a' + 10;
        if (c >= 'A' && c <= 'F')
                return c - 'A' + 10;
        return -1;
}

/* The 4 hex digits at p[0..4) (bounds checked by the caller), or -1. */
static long hex4(const char *p)
{
        long v = 0;
        for (int k = 0; k < 4; k++) {
                int h = hexval(p[k]);
                if (h < 0)
                        return -1;
                v = v * 16 + h;
        }
        return v;
}

static size_t put_utf8(unsigned char *o, unsigned long cp)
{
        if (cp < 0x80) {
                o[0] = (unsigned char)cp;
                return 1;
        }
        if (cp < 0x800) {
                o[0] = (unsigned char)(0xc0 | (cp >> 6));
                o[1] = (unsigned char)(0x80 | (cp & 0x3f));
                return 2;
        }
        if (cp < 0x10000) {
                o[0] = (unsigned char)(0xe0 | (cp >> 12));
                o[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3f));
                o[2] = (unsigned char)(0x80 | (cp & 0x3f));
                return 3;
        }
        o[0] = (unsigned char)(0xf0 | (cp >> 18));
        o[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3f));
        o[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3f));
        o[3] = (unsigned char)(0x80 | (cp & 0x3f));
        return 4;
}

/* Decode the literal's inside into out (at least as long as the literal:
 * no escape decodes to more bytes than it takes).  Returns the length, or
 * -1 when the literal is malformed. */
static long decode_into(struct json_span v, unsigned flags, unsigned char *out)
{
        if (v.len < 2 || v.p[0] != '"')
                return -1;
        size_t o = 0;
        for (size_t i = 1; i < v.len; i++) {
                char c = v.p[i];
                if (c == '"')
                        return i + 1 == v.len ? (long)o : -1;
                if (c != '\\') {
                        out[o++] = (unsigned char)c;
                        continue;
                }
                if (++i >= v.len)
                        return -1;
                switch (v.p[i]) {
                case '"': out[o++] = '"'; break;
                case '\\': out[o++] = '\\'; break;
                case '/': out[o++] = '/'; break;
                case 'b': out[o++] = '\b'; break;
                case 'f': out[o++] = '\f'; break;
                case 'n': out[o++] = '\n'; break;
                case 'r': out[o++] = '\r'; break;
                case 't': out[o++] = '\t'; break;
                case 'u': {
                        long cp = i + 4 < v.len ? hex4(v.p + i + 1) : -1;
                        if (cp < 0)
                                return -1;
                        i += 4;
                        if (cp >= 0xd800 && cp <= 0xdbff && i + 6 < v.len && v.p[i + 1] == '\\' &&
                            v.p[i + 2] == 'u') {
                                long lo = hex4(v.p + i + 3);
                                if (lo >= 0xdc00 && lo <= 0xdfff) {
                                        cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
                                        i += 6;
                                }
                        }
                        if (cp >= 0xd800 && cp <= 0xdfff && !(flags & JSON_DECODE_WTF8))
                                cp = 0xfffd;
                        /* \uXXXX is 6 bytes of text, at most 3 of UTF-8; a
                         * pair is 12 for 4. */
                        o += put_utf8(out + o, (unsigned long)cp);
                        break;
                }
                default:
                        return -1;
                }
        }
        return -1;
}

int json_string_decode(struct json_span v, unsigned flags, char **ret, size_t *ret_len)
{
        unsigned char *out = malloc(v.len + 1);
        if (!out) {
                errno = ENOMEM;
                return -1;
        }
        long n = decode_into(v, flags, out);
        if (n < 0) {
                free(out);
                errno = EINVAL;
                return -1;
        }
        out[n] = '\0';
        *ret = (char *)out;
        if (ret_len)
                *ret_len = (size_t)n;
        return 0;
}

bool json_string_equals(struct json_span v, const char *s, size_t len)
{
        if (v.len < 2 || v.p[0] != '"' || v.p[v.len - 1] != '"')
                return false;
        if (!memchr(v.p + 1, '\\', v.len - 2))
                return v.len - 2 == len && memcmp(v.p + 1, s, len) == 0;
        if (v.len - 2 < len)
                return false; /* escapes only make it shorter */
        unsigned char small[256];
        unsigned char *out = v.len <= sizeof(small) ? small : malloc(v.len);
        if (!out)
                return false;
        long n = decode_into(v, JSON_DECODE_WTF8, out);
        bool eq = n >= 0 && (size_t)n == len && memcmp(out, s, len) == 0;
        if (out != small)
                free(out);
        return eq;
}

/* ---- encoding bytes as a string literal ---- */

/* What comes next in the bytes, as the WHATWG UTF-8 decoder sees it. */
enum unit_kind {
        UNIT_ASCII,      /* one byte < 0x80 */
        UNIT_CHAR,       /* a valid sequence of n bytes: copied */
        UNIT_BAD,        /* an invalid subpart of n bytes: U+FFFD */
        UNIT_SURROGATE,  /* (WTF-8) an encoded surrogate, 3 bytes, code point cp */
};

struct unit {
        enum unit_kind kind;
        size_t n;
        unsigned cp;
};

static struct unit next_unit(const unsigned char *s, size_t len, unsigned flags)
{
        unsigned char c = s[0];
        if (c < 0x80)
                return (struct unit){ UNIT_ASCII, 1, c };
        unsigned char lo = 0x80, hi = 0xbf;
        size_t need;
        bool wtf8_ed = false;
        if (c >= 0xc2 && c <= 0xdf) {
                need = 1;
        } else if (c >= 0xe0 && c <= 0xef) {
                need = 2;
                if (c == 0xe0)
                        lo = 0xa0;
                else if (c == 0xed && !(flags & JSON_ENCODE_WTF8))
                        hi = 0x9f;
                else if (c == 0xed)
                        wtf8_ed = true;
        } else if (c >= 0xf0 && c <= 0xf4) {
                need = 3;
                if (c == 0xf0)
                        lo = 0x90;
                else if (c == 0xf4)
                        hi = 0x8f;
        } else {
                return (struct unit){ UNIT_BAD, 1, 0 };
        }
        /* A byte that does not fit ends the invalid subpart before it; it
         * is read again as the start of what follows. */
        for (size_t k = 1; k <= need; k++) {
                unsigned char b = k < len ? s[k] : 0;
                unsigned char l = k == 1 ? lo : 0x80, h = k == 1 ? hi : 0xbf;
                if (k >= len || b < l || b > h)
                        return (struct unit){ UNIT_BAD, k, 0 };
        }
        if (wtf8_ed && s[1] >= 0xa0)
                return (struct unit){ UNIT_SURROGATE, 3,
                                      0xd000u | ((unsigned)(s[1] & 0x3f) << 6) | (unsigned)(s[2] & 0x3f) };
        return (struct unit){ UNIT_CHAR, need + 1, 0 };
}

/* Bytes of text for one ASCII byte inside a literal. */
static size_t ascii_len(unsigned char c)
{
        if (c == '"' || c == '\\' || c == '\b' || c == '\f' || c == '\n' || c == '\r' || c == '\t')
                return 2;
        return c < 0x20 ? 6 : 1;
}

/* Write (out != NULL) or measure the literal. */
static size_t encode(const unsigned char *s, size_t len, unsigned flags, char *out)
{
        static const char hex[] = "0123456789abcdef";
        size_t o = 0;
#define PUT(ch)                                 \
        do {                                    \
                if (out)                        \
                        out[o] = (char)(ch);    \
                o++;                            \
        } while (0)
        PUT('"');
        for (size_t i = 0; i < len;) {
                if ((flags & JSON_ENCODE_RAW) && s[i] >= 0x80) {
                        PUT(s[i]);
                        i++;
                        continue;
                }
                struct unit u = next_unit(s + i, len - i, flags);
                if (u.kind == UNIT_ASCII) {
                        unsigned char c = s[i];
                        size_t n = ascii_len(c);
                        if (n == 1) {
                                PUT(c);
                        } else if (n == 2) {
                                PUT('\\');
                                PUT(c == '"' ? '"' : c == '\\' ? '\\' : c == '\b' ? 'b' : c == '\f' ? 'f'
                                    : c == '\n' ? 'n' : c == '\r' ? 'r' : 't');
                        } else {
                                PUT('\\'); PUT('u'); PUT('0'); PUT('0'); PUT(hex[c >> 4]); PUT(hex[c & 15]);
                        }
                } else if (u.kind == UNIT_CHAR) {
                        for (size_t k = 0; k < u.n; k++)
                                PUT(s[i + k]);
                } else if (u.kind == UNIT_BAD) {
                        PUT(0xef); PUT(0xbf); PUT(0xbd);
                } else {
                        /* A high surrogate then a low one: the character they pair into. */
                        struct unit nx = u.cp < 0xdc00 && i + 3 < len ? next_unit(s + i + 3, len - i - 3, flags)
                                                                        : (struct unit){ UNIT_ASCII, 0, 0 };
                        if (nx.kind == UNIT_SURROGATE && nx.cp >= 0xdc00) {
                                unsigned char b[4];
                                put_utf8(b, 0x10000ul + ((unsigned long)(u.cp - 0xd800) << 10) + (nx.cp - 0xdc00));
                                PUT(b[0]); PUT(b[1]); PUT(b[2]); PUT(b[3]);
                                i += 3;
                        } else {
                                PUT('\\'); PUT('u'); PUT(hex[(u.cp >> 12) & 15]); PUT(hex[(u.cp >> 8) & 15]);
                                PUT(hex[(u.cp >> 4) & 15]); PUT(hex[u.cp & 15]);
                        }
                }
                i += u.n;
        }
        PUT('"');
#undef PUT
        return o;
}

size_t json_string_encode_to(const char *bytes, size_t len, unsigned flags, char *out)
{
        return encode((const unsigned char *)bytes, len, flags, out);
}

char *json_string_encode(const char *bytes, size_t len, unsigned flags, size_t *ret_len)
{
        size_t n = encode((const unsigned char *)bytes, len, flags, NULL);
        char *out = malloc(n + 1);
        if (!out)
                return NULL;
        encode((const unsigned char *)bytes, len, flags, out);
        out[n] = '\0';
        if (ret_len)
                *ret_len = n;
        return out;
}

/* ---- numbers ---- */

/* ECMA-262 Number::toString: the shortest digits that read back as d (the
 * closest such, which is what correctly rounded %.*e gives), as
 * 0.DIGITS x 10^n; positional for -6 < n <= 21, else exponential. */
size_t json_format_number(double d, char buf[JSON_NUMBER_MAX])
{
        if (isnan(d) || isinf(d))
                return (size_t)snprintf(buf, JSON_NUMBER_MAX, "null");
        if (d == 0)
                return (size_t)snprintf(buf, JSON_NUMBER_MAX, "0"); /* also -0 */
        char e[40];
        for (int prec = 1; prec <= 17; prec++) {
                snprintf(e, sizeof(e), "%.*e", prec - 1, d);
                if (strtod(e, NULL) == d)
                        break;
        }
        /* e is "[-]D[.DDD]e[+-]XX" */
        char digits[24];
        int k = 0;
        const char *s = e;
        for (; *s && *s != 'e'; s++)
                if (*s >= '0' && *s <= '9' && k < 20)
                        digits[k++] = *s;
        long exp10 = *s == 'e' ? strtol(s + 1, NULL, 10) : 0;
        while (k > 1 && digits[k - 1] == '0')
                k--;
        int n = (int)exp10 + 1;
        char *w = buf;
        if (d < 0)
                *w++ = '-';
        if (k <= n && n <= 21) {
                memcpy(w, digits, (size_t)k);
                w += k;
                for (int i = k; i < n; i++)
                        *w++ = '0';
        } else if (0 < n && n <= 21) {
                memcpy(w, digits, (size_t)n);
                w += n;
                *w++ = '.';
                memcpy(w, digits + n, (size_t)(k - n));
                w += k - n;
        } else if (-6 < n && n <= 0) {
                *w++ = '0';
                *w++ = '.';
                for (int i = n; i < 0; i++)
                        *w++ = '0';
                memcpy(w, digits, (size_t)k);
                w += k;
        } else {
                *w++ = digits[0];
                if (k > 1) {
                        *w++ = '.';
                        memcpy(w, digits + 1, (size_t)(k - 1));
                        w += k - 1;
                }
                w += snprintf(w, 8, "e%c%d", n - 1 < 0 ? '-' : '+', abs(n - 1));
        }
        *w = '\0';
        return (size_t)(w - buf);
}
