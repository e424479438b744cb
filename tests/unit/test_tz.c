/* tests/unit/test_tz.c — sandbox/tz.c: which names may become the worker's
 * TZ.  A name passes only if ICU will take it from TZ as it stands (else ICU
 * lists /usr/share/zoneinfo and the worker's filter kills the run), the host
 * has the zone file the box shows, and the engine's ICU knows the zone (else
 * it would silently be UTC).  Cases needing the host's tzdata skip without it.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "sandbox/tz.h"

static bool host_has(const char *zone)
{
        char p[256];
        snprintf(p, sizeof(p), "%s/%s", TZ_ZONEINFO, zone);
        return access(p, R_OK) == 0;
}

/* tz_check fails and its message contains `want`. */
static void refused(const char *zone, const char *want)
{
        struct err *e = NULL;
        int r = tz_check(zone, &e);
        if (r == 0 || !strstr(err_msg(e), want))
                print_error("zone '%s': got %d '%s', wanted '%s'\n", zone, r, err_msg(e), want);
        assert_int_equal(r, -1);
        assert_non_null(strstr(err_msg(e), want));
        err_free(e);
}

static void accepted(const char *zone)
{
        struct err *e = NULL;
        int r = tz_check(zone, &e);
        if (r != 0)
                print_error("zone '%s': %s\n", zone ? zone : "(null)", err_msg(e));
        assert_int_equal(r, 0);
        err_free(e);
}

static void test_utc_needs_nothing(void **state)
{
        (void)state;
        accepted(NULL);
        accepted("UTC");
}

static void test_zones_of_the_database(void **state)
{
        (void)state;
        if (!host_has("Europe/Paris"))
                skip();
        const char *ok[] = { "Europe/Paris", "Asia/Tokyo", "America/Argentina/Buenos_Aires", "Etc/GMT+10",
                             "Etc/GMT-14", "EST5EDT", "GMT0", "Asia/Calcutta", "America/Port-au-Prince" };
        for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
                accepted(ok[i]);
}

static void test_malformed_names(void **state)
{
        (void)state;
        char longname[TZ_NAME_MAX + 2];
        memset(longname, 'A', sizeof(longname) - 1);
        longname[sizeof(longname) - 1] = '\0';
        const char *bad[] = {
                "", "/etc/localtime", "Europe//Paris", "Europe/Paris/", "Europe/../../etc/passwd", "../x",
                "zone.tab", "Europe/Paris\n", "Europe/Paris ", ":Europe/Paris", "-05", "5",
                /* ICU reads no TZ with digits inside, or more than two at the end */
                "SystemV/AST4ADT", "CST6CDT5", "A1B", "Etc/GMT+100", longname,
        };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
                refused(bad[i], "is not a time-zone name");
}

static void test_control_bytes_are_not_printed(void **state)
{
        (void)state;
        struct err *e = NULL;
        assert_int_equal(tz_check("Asia/Tokyo\033[2J", &e), -1);
        assert_null(strchr(err_msg(e), '\033'));
        assert_non_null(strstr(err_msg(e), "'Asia/Tokyo\\x1b[2J'"));
        err_free(e);
}

static void test_not_in_the_database(void **state)
{
        (void)state;
        refused("Europe/Pariss", "is not a zone of the tz database (no such zone in /usr/share/zoneinfo)");
        refused("Nowhere", "is not a zone of the tz database");
        refused("JST-9", "is not a zone of the tz database"); /* a POSIX rule, not a zone name */
        /* Directories and links that leave zoneinfo are no zones either. */
        if (host_has("Europe"))
                refused("Europe", "is not a zone of the tz database");
        if (host_has("localtime")) /* -> /etc/localtime, outside what the box shows */
                refused("localtime", "is not a zone of the tz database");
}

static void test_zone_the_engine_lacks(void **state)
{
        (void)state;
        /* A TZif file of the directory that is no zone of ICU's. */
        if (!host_has("posixrules"))
                skip();
        refused("posixrules", "is not a zone the engine knows (ICU ");
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_utc_needs_nothing),
                cmocka_unit_test(test_zones_of_the_database),
                cmocka_unit_test(test_malformed_names),
                cmocka_unit_test(test_control_bytes_are_not_printed),
                cmocka_unit_test(test_not_in_the_database),
                cmocka_unit_test(test_zone_the_engine_lacks),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
