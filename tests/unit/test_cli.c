/* tests/unit/test_cli.c — cli/suggest.c: the distance behind "did you
 * mean", and which option it picks. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "cli/suggest.h"

static void test_distance(void **state)
{
        (void)state;
        assert_int_equal(cli_distance("journal", "journal"), 0);
        assert_int_equal(cli_distance("jounral", "journal"), 1);  /* a transposition is one edit */
        assert_int_equal(cli_distance("jurnal", "journal"), 1);   /* a deletion */
        assert_int_equal(cli_distance("journall", "journal"), 1); /* an insertion */
        assert_int_equal(cli_distance("jaurnal", "journal"), 1);  /* a substitution */
        assert_int_equal(cli_distance("", "json"), 4);
        assert_int_equal(cli_distance("kitten", "sitting"), 3);
        assert_int_equal(cli_distance("ca", "abc"), 3);          /* OSA, not unrestricted Damerau (2) */
}

static void test_nearest(void **state)
{
        (void)state;
        static const char *const opts[] = { "input", "input-file", "journal", "json", "jit", "js-deadline",
                                            "quiet", "memory", "memory-ns", "state-dir" };
        size_t n = sizeof(opts) / sizeof(opts[0]);
        assert_string_equal(cli_nearest("jounral", opts, n), "journal");
        assert_string_equal(cli_nearest("jsn", opts, n), "json");
        assert_string_equal(cli_nearest("qiet", opts, n), "quiet");
        assert_string_equal(cli_nearest("memroy", opts, n), "memory");
        assert_string_equal(cli_nearest("stat-dir", opts, n), "state-dir");
        assert_string_equal(cli_nearest("inptu-file", opts, n), "input-file");
        /* too far to be a typo of anything */
        assert_null(cli_nearest("frobnicate", opts, n));
        assert_null(cli_nearest("xyz", opts, n));
        /* three edits are close enough for a long word, not for a short one */
        assert_string_equal(cli_nearest("deadline", opts, n), "js-deadline");
        assert_string_equal(cli_nearest("jt", opts, n), "jit");
        assert_null(cli_nearest("jx", opts, n)); /* two edits from "jit" and "json": too many for 2 letters */
        assert_null(cli_nearest("quit-all", opts, n));
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_distance),
                cmocka_unit_test(test_nearest),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
