/* common/text.h — text for diagnostics: untrusted bytes made safe to print,
 * positions in a document, and the JSON path of a schema error. */
#ifndef CHIDORI_COMMON_TEXT_H
#define CHIDORI_COMMON_TEXT_H

#include <stddef.h>

/* `len` bytes of s for a message: control bytes, DEL, quote and backslash
 * as \xNN; bytes >= 0x80 pass (UTF-8 names); cut with "..." once fewer than
 * 8 bytes of `cap` remain.  Returns out. */
const char *text_quote(const char *s, size_t len, char *out, size_t cap);

/* At most `max` bytes of NUL-terminated s as printable ASCII: other bytes,
 * and `extra` (0 = none), as \xNN; "..." when s was cut. */
void text_sanitize(const char *s, size_t max, char extra, char *out, size_t outlen);

/* Line and column (1-based) of `at` in `text`; columns count characters
 * (UTF-8 sequences), not bytes; a leading byte-order mark is not counted. */
void text_line_col(const char *text, const char *at, int *line, int *col);

/* The JSON path being checked ("rules[2].decision"), for schema errors. */
struct jpath {
        char buf[512];
        size_t len;
};

/* Append (truncating quietly); returns the old length for jpath_pop. */
size_t jpath_push(struct jpath *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void jpath_pop(struct jpath *p, size_t old);
/* The path, or "top level" when empty. */
const char *jpath_str(const struct jpath *p);

#endif
