/* tests/unit/test_text.c — common/text.c: terminal escaping of agent text
 * (issue 9 item 6).  What must never reach a terminal raw: ESC, CR, BEL and
 * the other C0 controls, DEL, C1 controls, bidi overrides and isolates,
 * invalid UTF-8; what must pass: tab, ASCII, valid UTF-8. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/text.h"

static const char *term(const char *s)
{
        static char out[512];
        return text_term(s, strlen(s), out, sizeof(out));
}

static void test_controls_escaped(void **state)
{
        (void)state;
        assert_string_equal(term("\x1b]0;pwned\x07"), "\\x1b]0;pwned\\x07");
        assert_string_equal(term("a\rb"), "a\\x0db");
        assert_string_equal(term("x\nchidori: fake"), "x\\x0achidori: fake");
        assert_string_equal(term("\x7f\x01\x1f"), "\\x7f\\x01\\x1f");
        assert_string_equal(term("tab\tkept"), "tab\tkept");
        assert_string_equal(term("back\\slash"), "back\\slash");
}

static void test_unicode(void **state)
{
        (void)state;
        /* valid UTF-8 passes */
        assert_string_equal(term("caf\xc3\xa9 \xe6\x97\xa5 \xf0\x9f\x98\x80"), "caf\xc3\xa9 \xe6\x97\xa5 \xf0\x9f\x98\x80");
        /* C1 controls (CSI U+009B, NEL U+0085), bidi overrides and isolates */
        assert_string_equal(term("\xc2\x9b" "2J"), "\\u009b2J");
        assert_string_equal(term("\xc2\x85"), "\\u0085");
        assert_string_equal(term("a\xe2\x80\xae" "b"), "a\\u202eb");
        assert_string_equal(term("\xe2\x80\xaa\xe2\x81\xa6\xe2\x81\xa9"), "\\u202a\\u2066\\u2069");
        /* neighbours of those ranges pass */
        assert_string_equal(term("\xc2\xa0\xe2\x80\xaf\xe2\x81\xaa"), "\xc2\xa0\xe2\x80\xaf\xe2\x81\xaa");
        /* invalid: stray continuation, truncated, overlong, surrogate, > U+10FFFF, 0xff */
        assert_string_equal(term("\x80"), "\\x80");
        assert_string_equal(term("\xe2\x80"), "\\xe2\\x80");
        assert_string_equal(term("\xc0\x9b"), "\\xc0\\x9b");
        assert_string_equal(term("\xe0\x80\x9b"), "\\xe0\\x80\\x9b");
        assert_string_equal(term("\xed\xa0\x80"), "\\xed\\xa0\\x80");
        assert_string_equal(term("\xf4\x90\x80\x80"), "\\xf4\\x90\\x80\\x80");
        assert_string_equal(term("\xff"), "\\xff");
}

static void test_truncation(void **state)
{
        (void)state;
        char out[16];
        text_term("\x1b\x1b\x1b\x1b\x1b\x1b", 6, out, sizeof(out));
        assert_string_equal(out, "\\x1b\\x1b\\x1b...");
        text_term("abc", 3, out, sizeof(out));
        assert_string_equal(out, "abc");
        /* a length, not a C string: NUL is escaped too */
        text_term("a\0b", 3, out, sizeof(out));
        assert_string_equal(out, "a\\x00b");
}

static char *lines(const char *prefix, const char *s, bool newline_last)
{
        char *buf = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&buf, &len);
        assert_non_null(f);
        text_fput_lines(f, prefix, s, strlen(s), newline_last);
        fclose(f);
        return buf;
}

static void test_lines_prefixed(void **state)
{
        (void)state;
        char *o = lines("[agent] ", "x\nchidori: agent error: fake", true);
        assert_string_equal(o, "[agent] x\n[agent] chidori: agent error: fake\n");
        free(o);
        o = lines("[agent] ", "one\n", true);
        assert_string_equal(o, "[agent] one\n");
        free(o);
        o = lines("[agent] ", "", true);
        assert_string_equal(o, "[agent] \n");
        free(o);
        o = lines("[agent] ", "a\n\nb\r\n", true);
        assert_string_equal(o, "[agent] a\n[agent] \n[agent] b\\x0d\n");
        free(o);
        o = lines("? ", "Password:\n\x1b[2Kreal", false);
        assert_string_equal(o, "? Password:\n? \\x1b[2Kreal");
        free(o);
        /* a long line is escaped whole (the buffer is flushed as it fills) */
        char big[3001];
        memset(big, '\x1b', 3000);
        big[3000] = '\0';
        o = lines("", big, true);
        assert_int_equal(strlen(o), 3000 * 4 + 1);
        assert_null(strchr(o, '\x1b'));
        free(o);
}

static void test_one_line(void **state)
{
        (void)state;
        char *buf = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&buf, &len);
        const char *msg = "denied x\nchidori: fake\x1b[2J";
        text_fput_line(f, "chidori: ", msg, strlen(msg));
        fclose(f);
        assert_string_equal(buf, "chidori: denied x\\x0achidori: fake\\x1b[2J\n");
        free(buf);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_controls_escaped), cmocka_unit_test(test_unicode),
                cmocka_unit_test(test_truncation),       cmocka_unit_test(test_lines_prefixed),
                cmocka_unit_test(test_one_line),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
