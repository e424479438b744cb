/* tests/unit/test_grants.c — the nested run's environment (cli/grants.c,
 * grants_nested_env): built explicitly, every path absolute against the
 * operator's working directory, nothing of the agent's folder.  The bats
 * suite (tests/bats/tree.bats) shows each variable end to end; this pins the
 * whole table, including what bats cannot reach (PATH lookups, LD_*). */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cli/cli.h"
#include "cli/grants.h"

/* main.c's, which a unit test does not link. */
volatile sig_atomic_t launcher_stop_signal;

static const char *find(const struct strv *s, const char *name)
{
        size_t n = strlen(name);
        for (size_t i = 0; i < s->n; i++)
                if (strncmp(s->v[i], name, n) == 0 && s->v[i][n] == '=')
                        return s->v[i] + n + 1;
        return NULL;
}

static void paths_absolute(void **state)
{
        (void)state;
        char *env[] = {
                "CHIDORI_POLICY_FILE=policy.json",
                "CHIDORI_WORKER=bin/chidori-worker",
                "CHIDORI_NET_LIB=../lib/libchidori-net.so",
                "CHIDORI_ENGINE_LIB=/opt/lib/libchidori-engine.so",
                "CHIDORI_ESBUILD=./esbuild",
                "PATH=bin::/usr/bin:.",
                "HOME=home",
                "TMPDIR=/var/tmp",
                "SSL_CERT_FILE=certs/ca.pem",
                NULL,
        };
        struct strv s = { 0 };
        assert_int_equal(grants_nested_env(env, "/srv/op", NULL, &s), 0);
        assert_string_equal(find(&s, "CHIDORI_POLICY_FILE"), "/srv/op/policy.json");
        assert_string_equal(find(&s, "CHIDORI_WORKER"), "/srv/op/bin/chidori-worker");
        assert_string_equal(find(&s, "CHIDORI_NET_LIB"), "/srv/op/../lib/libchidori-net.so");
        assert_string_equal(find(&s, "CHIDORI_ENGINE_LIB"), "/opt/lib/libchidori-engine.so");
        assert_string_equal(find(&s, "CHIDORI_ESBUILD"), "/srv/op/./esbuild");
        /* an empty PATH entry and "." are the working directory to execvp */
        assert_string_equal(find(&s, "PATH"), "/srv/op/bin:/srv/op/.:/usr/bin:/srv/op/.");
        assert_string_equal(find(&s, "HOME"), "/srv/op/home");
        assert_string_equal(find(&s, "TMPDIR"), "/var/tmp");
        assert_string_equal(find(&s, "SSL_CERT_FILE"), "/srv/op/certs/ca.pem");
        assert_int_equal(s.n, 9);
        strv_clear(&s);
        /* cwd "/" does not double the slash */
        char *one[] = { "CHIDORI_WORKER=w", NULL };
        assert_int_equal(grants_nested_env(one, "/", NULL, &s), 0);
        assert_string_equal(find(&s, "CHIDORI_WORKER"), "/w");
        strv_clear(&s);
}

static void only_what_is_needed(void **state)
{
        (void)state;
        char *env[] = {
                "CHIDORI_POLICY=inline",                 /* settings pass as they are */
                "CHIDORI_POLICY_PROFILE=untrusted",
                "CHIDORI_LLM_MODEL=m",
                "CHIDORI_MAX_LOG=1M",                    /* a setting added later: passes */
                "CHIDORI_WORKSPACE=ws",                  /* on the command line instead */
                "CHIDORI_TOOLS=tools.json",
                "CHIDORI_SECRETS=secrets.json",          /* a callee gets no secrets */
                "CHIDORI_HTTP_ALLOW_HOSTS=a,b",
                "CHIDORI_MAX_NESTED=2",
                "CHIDORI_AGENT_DEPTH=3",                 /* set per call */
                "CHIDORI_POLICY_LAYERS=untrusted",
                "CHIDORI_CGROUP_ENTER=/sys/fs/cgroup/x",
                "CHIDORI_PARENT_PID=1",
                "LD_PRELOAD=./evil.so",                  /* never */
                "LD_LIBRARY_PATH=lib",
                "XDG_STATE_HOME=/x",                     /* --state-dir is on the command line */
                "LOCPATH=loc",
                "OPENSSL_CONF=ssl.cnf",
                "SECRET=s",
                "TOOL_TOKEN=t0k",                        /* a tool's env list names it */
                "ASAN_OPTIONS=detect_leaks=1",
                "CHIDORI_POLICY_FILE=",                  /* empty: passes empty */
                "noequals",
                NULL,
        };
        char *keep[] = { "TOOL_TOKEN", NULL };
        struct strv s = { 0 };
        assert_int_equal(grants_nested_env(env, "/op", keep, &s), 0);
        const char *want[] = { "CHIDORI_POLICY=inline", "CHIDORI_POLICY_PROFILE=untrusted", "CHIDORI_LLM_MODEL=m",
                               "CHIDORI_MAX_LOG=1M", "TOOL_TOKEN=t0k", "ASAN_OPTIONS=detect_leaks=1",
                               "CHIDORI_POLICY_FILE=" };
        assert_int_equal(s.n, sizeof(want) / sizeof(want[0]));
        for (size_t i = 0; i < s.n; i++)
                assert_string_equal(s.v[i], want[i]);
        assert_null(s.v[s.n]);
        strv_clear(&s);
        /* nothing at all: an empty, NULL-terminated vector */
        char *none[] = { NULL };
        assert_int_equal(grants_nested_env(none, "/op", NULL, &s), 0);
        assert_non_null(s.v);
        assert_null(s.v[0]);
        strv_clear(&s);
}

static void relative_without_cwd(void **state)
{
        (void)state;
        char *env[] = { "CHIDORI_WORKER=bin/w", NULL };
        struct strv s = { 0 };
        assert_int_equal(grants_nested_env(env, NULL, NULL, &s), -1);
        /* an absolute one needs no cwd; relative PATH entries are left out */
        char *abs[] = { "CHIDORI_WORKER=/bin/w", "PATH=bin:/usr/bin", NULL };
        assert_int_equal(grants_nested_env(abs, NULL, NULL, &s), 0);
        assert_string_equal(find(&s, "CHIDORI_WORKER"), "/bin/w");
        assert_string_equal(find(&s, "PATH"), "/usr/bin");
        strv_clear(&s);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(paths_absolute),
                cmocka_unit_test(only_what_is_needed),
                cmocka_unit_test(relative_without_cwd),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
