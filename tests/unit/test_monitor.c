/* tests/unit/test_monitor.c — monitor/commit.c: the spawn allowlist a broker
 * commits to once, and the checks every tool SPAWN goes through; and
 * monitor_broker_user's defaults. */
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

#include "cli/brokeruser.h"
#include "monitor/broker.h"
#include "monitor/commit.h"

static int blob(const char *const *strs, size_t n)
{
        int fd = -1;
        struct err *e = NULL;
        assert_int_equal(chan_blob_create("t", strs, n, &fd, &e), 0);
        return fd;
}

static void commit(struct monitor_commit *c)
{
        const char *s[] = { "/srv/agent", "/usr/bin/jq", "/usr/bin/git", "/srv/data", "PATH", "GIT_DIR" };
        union chan_msg m;
        chan_init(&m, CHAN_COMMIT, 1);
        m.commit.n_commands = 2;
        m.commit.n_ro_binds = 1;
        m.commit.n_env_names = 2;
        int fd = blob(s, 6);
        struct err *e = NULL;
        assert_int_equal(monitor_commit_accept(c, &m.commit, fd, &e), 0);
        close(fd);
}

/* A tool SPAWN of strs (program, argv..., env..., binds...) with the counts given. */
static int spawn_flags(const struct monitor_commit *c, const char *const *strs, uint32_t argv, uint32_t env,
                       uint32_t binds, uint32_t flags, uint32_t deadline, const char *want)
{
        union chan_msg m;
        chan_init(&m, CHAN_SPAWN, 2);
        m.spawn.kind = CHAN_BOX_TOOL;
        m.spawn.flags = flags;
        m.spawn.deadline_ms = deadline;
        m.spawn.n_argv = argv, m.spawn.n_env = env, m.spawn.n_binds = binds;
        int fd = blob(strs, 1 + argv + env + binds);
        struct chan_blob b;
        struct err *e = NULL;
        assert_int_equal(chan_blob_map(fd, 1 + argv + env + binds, &b, &e), 0);
        int r = monitor_spawn_allowed(c, &m.spawn, &b, &e);
        if (want) {
                if (r == 0 || !strstr(err_msg(e), want))
                        print_error("got %d '%s', wanted '%s'\n", r, err_msg(e), want);
                assert_int_equal(r, -1);
                assert_int_equal(err_code(e), COMMIT_E_REFUSED);
                assert_non_null(strstr(err_msg(e), want));
        }
        err_free(e);
        chan_blob_unmap(&b);
        close(fd);
        return r;
}

static int spawn(const struct monitor_commit *c, const char *const *strs, uint32_t argv, uint32_t env, uint32_t binds,
                 const char *want)
{
        return spawn_flags(c, strs, argv, env, binds, 0, 1000, want);
}

static void test_spawn_before_commit(void **state)
{
        (void)state;
        struct monitor_commit c = { 0 };
        const char *s[] = { "/usr/bin/jq", "jq" };
        spawn(&c, s, 1, 0, 0, "SPAWN before COMMIT");
}

static void test_allowed_and_refused(void **state)
{
        (void)state;
        struct monitor_commit c = { 0 };
        commit(&c);
        assert_string_equal(c.agent_dir, "/srv/agent");
        const char *ok[] = { "/usr/bin/jq", "jq", ".", "PATH", "ro:/srv/data" };
        assert_int_equal(spawn(&c, ok, 2, 1, 1, NULL), 0);
        const char *prog[] = { "/bin/sh", "sh", "-c", "id" };
        spawn(&c, prog, 3, 0, 0, "'/bin/sh' is not a committed command");
        const char *env[] = { "/usr/bin/jq", "jq", "LD_PRELOAD" };
        spawn(&c, env, 1, 1, 0, "environment variable 'LD_PRELOAD' is not committed");
        /* Values are the monitor's: a broker cannot set one. */
        const char *val[] = { "/usr/bin/jq", "jq", "PATH=/tmp" };
        spawn(&c, val, 1, 1, 0, "environment variable 'PATH=/tmp' is not committed");
        /* "sandbox": false only when the COMMIT allows it; a timeout always. */
        spawn_flags(&c, ok, 2, 1, 1, CHAN_SPAWN_HOST, 1000, "the COMMIT allows no \"sandbox\": false tool");
        spawn_flags(&c, ok, 2, 1, 1, 0, 0, "without a timeout");
        c.flags |= CHAN_COMMIT_UNSANDBOXED_TOOLS;
        assert_int_equal(spawn_flags(&c, ok, 2, 1, 1, CHAN_SPAWN_HOST, 1000, NULL), 0);
        const char *rw[] = { "/usr/bin/git", "git", "rw:/srv/data" };
        spawn(&c, rw, 1, 0, 1, "bind 'rw:/srv/data' is not a committed read-only bind");
        const char *other[] = { "/usr/bin/git", "git", "ro:/etc" };
        spawn(&c, other, 1, 0, 1, "bind 'ro:/etc' is not a committed read-only bind");
        monitor_commit_free(&c);
}

static void test_commit_once_and_checked(void **state)
{
        (void)state;
        struct monitor_commit c = { 0 };
        commit(&c);
        const char *s[] = { "/srv/agent" };
        union chan_msg m;
        chan_init(&m, CHAN_COMMIT, 3);
        int fd = blob(s, 1);
        struct err *e = NULL;
        assert_int_equal(monitor_commit_accept(&c, &m.commit, fd, &e), -1);
        assert_non_null(strstr(err_msg(e), "a second COMMIT"));
        err_free(e), e = NULL;
        assert_string_equal(c.commands[0], "/usr/bin/jq"); /* unchanged */
        monitor_commit_free(&c);
        close(fd);

        struct monitor_commit d = { 0 };
        const char *bad[] = { "/srv/agent", "/usr/bin/../../bin/sh" };
        m.commit.n_commands = 1;
        fd = blob(bad, 2);
        assert_int_equal(monitor_commit_accept(&d, &m.commit, fd, &e), -1);
        assert_non_null(strstr(err_msg(e), "COMMIT: a command is not an absolute path without .."));
        err_free(e), e = NULL;
        close(fd);
        const char *badenv[] = { "/srv/agent", "A=B" };
        m.commit.n_commands = 0;
        m.commit.n_env_names = 1;
        fd = blob(badenv, 2);
        assert_int_equal(monitor_commit_accept(&d, &m.commit, fd, &e), -1);
        assert_non_null(strstr(err_msg(e), "an environment variable name is not letters, digits and _"));
        err_free(e), e = NULL;
        close(fd);
        /* The counts must match the blob. */
        m.commit.n_env_names = 2;
        fd = blob(badenv, 2);
        assert_int_equal(monitor_commit_accept(&d, &m.commit, fd, &e), -1);
        assert_int_equal(err_code(e), CHAN_E_PROTO);
        err_free(e);
        close(fd);
        assert_false(d.set);
}

static void test_broker_user(void **state)
{
        (void)state;
        uid_t u;
        gid_t g;
        struct err *e = NULL;
        unsetenv("CHIDORI_BROKER_USER");
        assert_int_equal(monitor_broker_user("4242", &u, &g, &e), 0);
        assert_int_equal(u, 4242);
        setenv("CHIDORI_BROKER_USER", "0", 1);
        assert_int_equal(monitor_broker_user(NULL, &u, &g, &e), -1);
        assert_int_equal(err_code(e), BROKER_E_USAGE);
        err_free(e), e = NULL;
        /* The flag wins over the variable. */
        assert_int_equal(monitor_broker_user("4243", &u, &g, &e), 0);
        assert_int_equal(u, 4243);
        unsetenv("CHIDORI_BROKER_USER");
        assert_int_equal(monitor_broker_user(NULL, &u, &g, &e), 0);
        assert_true(u != 0 && u != 65534); /* chidori-broker's, or 65533 */
        assert_int_equal(monitor_broker_user("12x", &u, &g, &e), -1);
        assert_non_null(strstr(err_msg(e), "no user '12x'"));
        err_free(e);
}

/* The default broker user is read from /etc/passwd itself (no NSS): the
 * lookup finds a listed user among others and malformed lines, and says
 * "not listed" for a missing user or file. */
static void test_passwd_file_user(void **state)
{
        (void)state;
        char path[] = "/tmp/chidori-test-passwd-XXXXXX";
        int fd = mkstemp(path);
        assert_true(fd >= 0);
        const char text[] = "root:x:0:0:root:/root:/bin/bash\n"
                            "garbage line without colons\n"
                            "chidori-brokerx:x:7001:7001::/:/usr/sbin/nologin\n"
                            "chidori-broker:x:4321:4322:chidori broker:/nonexistent:/usr/sbin/nologin\n"
                            "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n";
        assert_int_equal(write(fd, text, sizeof(text) - 1), (ssize_t)(sizeof(text) - 1));
        close(fd);
        uid_t u = 1;
        gid_t g = 1;
        assert_int_equal(passwd_file_user(path, "chidori-broker", &u, &g), 1);
        assert_int_equal(u, 4321);
        assert_int_equal(g, 4322);
        assert_int_equal(passwd_file_user(path, "chidori-brok", &u, &g), 0);
        assert_int_equal(passwd_file_user(path, "nosuchuser", &u, &g), 0);
        assert_int_equal(u, 4321); /* untouched when not found */
        unlink(path);
        assert_int_equal(passwd_file_user(path, "chidori-broker", &u, &g), 0);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_spawn_before_commit),
                cmocka_unit_test(test_allowed_and_refused),
                cmocka_unit_test(test_commit_once_and_checked),
                cmocka_unit_test(test_broker_user),
                cmocka_unit_test(test_passwd_file_user),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
