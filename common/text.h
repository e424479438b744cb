/* common/text.h — text for diagnostics: untrusted bytes made safe to print,
 * positions in a document, and the JSON path of a schema error. */
#ifndef CHIDORI_COMMON_TEXT_H
#define CHIDORI_COMMON_TEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* `len` bytes of s for a message: control bytes, DEL, quote and backslash
 * as \xNN; bytes >= 0x80 pass (UTF-8 names); cut with "..." once fewer than
 * 8 bytes of `cap` remain.  Returns out. */
const char *text_quote(const char *s, size_t len, char *out, size_t cap);

/* At most `max` bytes of NUL-terminated s as printable ASCII: other bytes,
 * and `extra` (0 = none), as \xNN; "..." when s was cut. */
void text_sanitize(const char *s, size_t max, char extra, char *out, size_t outlen);

/* ---- text bound for a terminal (stderr, /dev/tty) ----
 *
 * Agent-controlled text must never drive the terminal: it could forge
 * `chidori:` lines, clear the screen, set the window title or paint a fake
 * password prompt.  The escaping below keeps tab, printable ASCII and valid
 * UTF-8, and turns everything else into visible text:
 *   C0 controls (ESC, CR, BEL, ... and, in one-line mode, LF) and DEL -> \x1b
 *   invalid UTF-8 (stray, overlong, surrogate, > U+10FFFF) bytes        -> \xNN
 *   C1 controls U+0080-U+009F                                           -> \u009b
 *   bidi overrides and isolates U+202A-U+202E, U+2066-U+2069            -> \u202e
 * Backslash passes unchanged: escaping is for the terminal's sake, not a
 * reversible encoding, and text that is already escaped stays as it is. */

/* `len` bytes of s escaped as above, newline included (one line), into out
 * (always NUL-terminated; "..." when cut).  Returns out. */
const char *text_term(const char *s, size_t len, char *out, size_t cap);

/* Print s on f, one output line per line of s (split on '\n'), each one
 * `prefix` (trusted text) followed by the escaped line.  A trailing newline
 * in s does not make an extra empty line; empty s prints the prefix alone.
 * newline_last false: no '\n' after the last line (a prompt). */
void text_fput_lines(FILE *f, const char *prefix, const char *s, size_t len, bool newline_last);

/* Print prefix and s as one line on f: newlines in s escaped too. */
void text_fput_line(FILE *f, const char *prefix, const char *s, size_t len);

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
