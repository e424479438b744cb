/* tests/unit/test_server_auth.c — server/auth.c: bearer tokens, tenants,
 * the token file's format, who sees whose sessions. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "server/server.h"

static void test_equal(void **state)
{
        (void)state;
        assert_true(auth_equal("abc", 3, "abc", 3));
        assert_false(auth_equal("abd", 3, "abc", 3));
        assert_false(auth_equal("ab", 2, "abc", 3));  /* a prefix */
        assert_false(auth_equal("abcd", 4, "abc", 3)); /* longer */
        assert_false(auth_equal("", 0, "", 0));        /* empty never matches */
        assert_false(auth_equal("", 0, "abc", 3));
}

static char *write_tmp(const char *text)
{
        char *path = strdup("/tmp/test_server_auth.XXXXXX");
        int fd = mkstemp(path);
        assert_true(fd >= 0);
        assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
        close(fd);
        return path;
}

static void test_open(void **state)
{
        (void)state;
        struct auth *a = NULL;
        assert_int_equal(auth_new_open(&a, NULL), 0);
        assert_false(auth_required(a));
        assert_string_equal(auth_check(a, NULL), AUTH_DEFAULT_TENANT);
        assert_string_equal(auth_check(a, "Bearer whatever"), AUTH_DEFAULT_TENANT);
        auth_free(a);
}

static void test_single_token(void **state)
{
        (void)state;
        struct auth *a = NULL;
        assert_int_equal(auth_new_token("tok-1", &a, NULL), 0);
        assert_true(auth_required(a));
        assert_null(auth_check(a, NULL));
        assert_null(auth_check(a, "tok-1"));
        assert_null(auth_check(a, "Basic tok-1"));
        assert_null(auth_check(a, "Bearer tok-"));
        assert_null(auth_check(a, "Bearer tok-12"));
        assert_null(auth_check(a, "Bearer "));
        assert_string_equal(auth_check(a, "Bearer tok-1"), AUTH_DEFAULT_TENANT);
        assert_string_equal(auth_check(a, "bearer tok-1"), AUTH_DEFAULT_TENANT);
        auth_free(a);
        struct err *err = NULL;
        assert_int_equal(auth_new_token("has space", &a, &err), -1);
        assert_non_null(strstr(err_msg(err), "printable ASCII"));
        err_free(err);
}

static void test_tenants_file(void **state)
{
        (void)state;
        char *p = write_tmp("# comment\n\nacme   tok-a\r\nglobex\ttok-g\nadmin tok-root  \n");
        struct auth *a = NULL;
        struct err *err = NULL;
        assert_int_equal(auth_load_file(p, &a, &err), 0);
        assert_int_equal(auth_tenant_count(a), 3);
        assert_string_equal(auth_check(a, "Bearer tok-a"), "acme");
        assert_string_equal(auth_check(a, "Bearer tok-g"), "globex");
        assert_string_equal(auth_check(a, "Bearer tok-root"), "admin");
        assert_null(auth_check(a, "Bearer acme"));
        auth_free(a);
        unlink(p);
        free(p);

        p = write_tmp("just-one-token\n");
        assert_int_equal(auth_load_file(p, &a, &err), 0);
        assert_string_equal(auth_check(a, "Bearer just-one-token"), AUTH_DEFAULT_TENANT);
        auth_free(a);
        unlink(p);
        free(p);

        static const struct {
                const char *text, *msg;
        } bad[] = {
                { "", "holds no token" },
                { "# only a comment\n", "holds no token" },
                { "a b c\n", "line 1 has more than two fields" },
                { "acme tok\nglobex tok\n", "the same token is given twice" },
                { "t1\nt2\n", "mixes bare tokens" },
                { "t1\nacme t2\n", "mixes bare tokens" },
                { "acme tok\x01x\n", "line 1: a token must be" },
        };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                p = write_tmp(bad[i].text);
                a = NULL;
                assert_int_equal(auth_load_file(p, &a, &err), -1);
                assert_null(a);
                if (!strstr(err_msg(err), bad[i].msg))
                        fail_msg("case %zu: '%s' lacks '%s'", i, err_msg(err), bad[i].msg);
                err_free(err);
                err = NULL;
                unlink(p);
                free(p);
        }
}

static void test_sees(void **state)
{
        (void)state;
        assert_true(auth_sees("acme", "acme"));
        assert_false(auth_sees("acme", "globex"));
        assert_true(auth_sees("admin", "globex"));
        assert_false(auth_sees("globex", "admin"));
        assert_false(auth_sees(NULL, "acme"));
}

static void test_codes(void **state)
{
        (void)state;
        assert_string_equal(api_code_name(API_INVALID_JSON), "invalid_json");
        assert_int_equal(api_code_status(API_INVALID_JSON), 400);
        assert_string_equal(api_code_name(API_QUEUE_FULL), "queue_full");
        assert_int_equal(api_code_status(API_QUEUE_FULL), 429);
        assert_int_equal(api_code_status(API_TOO_LARGE), 413);
        assert_int_equal(api_code_status(API_DRAINING), 503);
        for (int c = 0; c < API_CODE_MAX; c++) {
                assert_non_null(api_code_name(c));
                assert_true(api_code_status(c) >= 400 && api_code_status(c) < 600);
        }
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_equal),        cmocka_unit_test(test_open),
                cmocka_unit_test(test_single_token), cmocka_unit_test(test_tenants_file),
                cmocka_unit_test(test_sees),         cmocka_unit_test(test_codes),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
