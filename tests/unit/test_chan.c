/* tests/unit/test_chan.c — chan/: the monitor <-> broker messages and the
 * sealed-memfd blobs, over a real SOCK_SEQPACKET socketpair.  Every way a
 * compromised broker can break the rules (length, descriptor count,
 * direction, fields, truncation, an unsealed or lying blob) must come back
 * as CHAN_E_PROTO with the received descriptors closed. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "chan/chan.h"

static int sv[2];

static int setup(void **state)
{
        (void)state;
        return socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv);
}

static int teardown(void **state)
{
        (void)state;
        close(sv[0]);
        close(sv[1]);
        return 0;
}

/* Send raw bytes with n descriptors, bypassing chan_send's own check. */
static void send_raw(const void *buf, size_t len, const int *fds, size_t n)
{
        struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };
        union {
                char b[CMSG_SPACE(sizeof(int) * 8)];
                struct cmsghdr a;
        } u;
        struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
        if (n) {
                memset(&u, 0, sizeof(u));
                mh.msg_control = u.b;
                mh.msg_controllen = CMSG_SPACE(sizeof(int) * n);
                struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
                c->cmsg_level = SOL_SOCKET;
                c->cmsg_type = SCM_RIGHTS;
                c->cmsg_len = CMSG_LEN(sizeof(int) * n);
                memcpy(CMSG_DATA(c), fds, sizeof(int) * n);
        }
        assert_int_equal(sendmsg(sv[0], &mh, 0), (ssize_t)len);
}

/* The monitor's receive of what was sent fails with CHAN_E_PROTO and a
 * message containing `want`. */
static void refused(const char *want)
{
        union chan_msg m;
        int fds[CHAN_MAX_FDS];
        size_t n = 99;
        struct err *e = NULL;
        int r = chan_recv(sv[1], CHAN_FROM_BROKER, &m, fds, &n, &e);
        if (r == 0 || !strstr(err_msg(e), want))
                print_error("got %d '%s', wanted '%s'\n", r, err_msg(e), want);
        assert_int_equal(r, -1);
        assert_int_equal(err_code(e), CHAN_E_PROTO);
        assert_non_null(strstr(err_msg(e), want));
        assert_int_equal(n, 0);
        err_free(e);
}

static void test_roundtrip_hello(void **state)
{
        (void)state;
        union chan_msg m, got;
        chan_init(&m, CHAN_HELLO, 7);
        m.hello.version = CHAN_VERSION;
        struct err *e = NULL;
        assert_int_equal(chan_send(sv[0], &m, NULL, 0, &e), 0);
        int fds[CHAN_MAX_FDS];
        size_t n = 9;
        assert_int_equal(chan_recv(sv[1], CHAN_FROM_BROKER, &got, fds, &n, &e), 0);
        assert_int_equal(got.h.type, CHAN_HELLO);
        assert_int_equal(got.h.id, 7);
        assert_int_equal(got.h.len, sizeof(struct chan_hello));
        assert_int_equal(n, 0);
}

/* SPAWNED of a worker carries exactly 2 descriptors, which arrive. */
static void test_roundtrip_spawned_fds(void **state)
{
        (void)state;
        int p[2];
        assert_int_equal(pipe2(p, O_CLOEXEC), 0);
        union chan_msg m, got;
        chan_init(&m, CHAN_SPAWNED, 3);
        m.spawned.box = 42;
        m.spawned.kind = CHAN_BOX_WORKER;
        snprintf(m.spawned.banner, sizeof(m.spawned.banner), "process (user,pid ns)");
        struct err *e = NULL;
        assert_int_equal(chan_send(sv[1], &m, p, 2, &e), 0);
        int fds[CHAN_MAX_FDS];
        size_t n = 0;
        assert_int_equal(chan_recv(sv[0], CHAN_FROM_MONITOR, &got, fds, &n, &e), 0);
        assert_int_equal(n, 2);
        assert_int_equal(got.spawned.box, 42);
        assert_string_equal(got.spawned.banner, "process (user,pid ns)");
        assert_int_equal(write(fds[1], "x", 1), 1);
        char c = 0;
        assert_int_equal(read(p[0], &c, 1), 1);
        assert_int_equal(c, 'x');
        assert_true(fcntl(fds[0], F_GETFD) & FD_CLOEXEC);
        close(fds[0]), close(fds[1]), close(p[0]), close(p[1]);
}

/* SPAWNED of a bundle box carries 4 descriptors (stdin, stdout, stderr,
 * the metafile); 3 is refused. */
static void test_spawned_bundle_fds(void **state)
{
        (void)state;
        int p[2][2];
        assert_int_equal(pipe2(p[0], O_CLOEXEC), 0);
        assert_int_equal(pipe2(p[1], O_CLOEXEC), 0);
        int four[4] = { p[0][0], p[0][1], p[1][0], p[1][1] };
        union chan_msg m, got;
        chan_init(&m, CHAN_SPAWNED, 5);
        m.spawned.box = 2;
        m.spawned.kind = CHAN_BOX_BUNDLE;
        assert_int_equal(chan_fds_for(&m), 4);
        struct err *e = NULL;
        assert_int_equal(chan_send(sv[1], &m, four, 3, &e), -1);
        err_free(e);
        e = NULL;
        assert_int_equal(chan_send(sv[1], &m, four, 4, &e), 0);
        int fds[CHAN_MAX_FDS];
        size_t n = 0;
        assert_int_equal(chan_recv(sv[0], CHAN_FROM_MONITOR, &got, fds, &n, &e), 0);
        assert_int_equal(n, 4);
        assert_int_equal(got.spawned.kind, CHAN_BOX_BUNDLE);
        for (size_t i = 0; i < n; i++)
                close(fds[i]);
        for (int i = 0; i < 4; i++)
                close(four[i]);
}

/* SPAWNED's flags: POOLED on a worker arrives; on a tool, or an unknown
 * bit, is refused (chan_send checks what the peer would). */
static void test_spawned_flags(void **state)
{
        (void)state;
        int p[2], q[2];
        assert_int_equal(pipe2(p, O_CLOEXEC), 0);
        assert_int_equal(pipe2(q, O_CLOEXEC), 0);
        int three[3] = { p[0], p[1], q[0] };
        union chan_msg m, got;
        struct err *e = NULL;
        chan_init(&m, CHAN_SPAWNED, 7);
        m.spawned.box = 9;
        m.spawned.kind = CHAN_BOX_WORKER;
        m.spawned.flags = CHAN_SPAWNED_POOLED | 2u;
        assert_int_equal(chan_send(sv[1], &m, p, 2, &e), -1);
        assert_non_null(strstr(err_msg(e), "flags"));
        err_free(e);
        e = NULL;
        m.spawned.kind = CHAN_BOX_TOOL;
        m.spawned.flags = CHAN_SPAWNED_POOLED;
        assert_int_equal(chan_send(sv[1], &m, three, 3, &e), -1);
        err_free(e);
        e = NULL;
        m.spawned.kind = CHAN_BOX_WORKER;
        assert_int_equal(chan_send(sv[1], &m, p, 2, &e), 0);
        int fds[CHAN_MAX_FDS];
        size_t n = 0;
        assert_int_equal(chan_recv(sv[0], CHAN_FROM_MONITOR, &got, fds, &n, &e), 0);
        assert_int_equal(got.spawned.flags, CHAN_SPAWNED_POOLED);
        for (size_t i = 0; i < n; i++)
                close(fds[i]);
        close(p[0]), close(p[1]), close(q[0]), close(q[1]);
}

/* chan_send refuses to build what the peer would refuse. */
static void test_send_checks(void **state)
{
        (void)state;
        union chan_msg m;
        chan_init(&m, CHAN_COMMIT, 1);
        struct err *e = NULL;
        assert_int_equal(chan_send(sv[0], &m, NULL, 0, &e), -1); /* COMMIT needs its blob */
        assert_non_null(strstr(err_msg(e), "COMMIT with 0 descriptors (expected 1)"));
        err_free(e);
}

static void test_wrong_length(void **state)
{
        (void)state;
        union chan_msg m;
        chan_init(&m, CHAN_HELLO, 1);
        m.hello.version = CHAN_VERSION;
        m.h.len = sizeof(struct chan_hello) + 8; /* lies about its length */
        send_raw(&m, sizeof(struct chan_hello) + 8, NULL, 0);
        refused("HELLO of 32 bytes (header says 32; expected 24)");
        m.h.len = sizeof(struct chan_hello);
        send_raw(&m, sizeof(struct chan_hello) - 4, NULL, 0); /* short */
        refused("HELLO of 20 bytes");
        send_raw(&m, 10, NULL, 0);
        refused("shorter than its header");
}

/* A KILL with a descriptor: the count is wrong, the descriptor is closed
 * on the receiving side (only the sender's copy stays open). */
static void test_wrong_fd_count(void **state)
{
        (void)state;
        union chan_msg m;
        chan_init(&m, CHAN_KILL, 1);
        int p[2];
        assert_int_equal(pipe2(p, O_CLOEXEC), 0);
        send_raw(&m, m.h.len, p, 1);
        refused("KILL with 1 descriptors (expected 0)");
        /* The receiver's copy is gone: the write end's only copy is ours. */
        close(p[0]);
        assert_int_equal(write(p[1], "x", 1), -1);
        assert_int_equal(errno, EPIPE);
        close(p[1]);
}

/* Five descriptors: more than any message carries (MSG_CTRUNC). */
static void test_too_many_fds(void **state)
{
        (void)state;
        union chan_msg m;
        chan_init(&m, CHAN_KILL, 1);
        int fds[5];
        for (int i = 0; i < 5; i++)
                fds[i] = open("/dev/null", O_RDONLY | O_CLOEXEC);
        int before = fcntl(0, F_DUPFD_CLOEXEC, 0);
        close(before);
        send_raw(&m, m.h.len, fds, 5);
        refused("too many descriptors");
        /* Nothing leaked: the next free descriptor is the same as before. */
        int after = fcntl(0, F_DUPFD_CLOEXEC, 0);
        assert_int_equal(after, before);
        close(after);
        for (int i = 0; i < 5; i++)
                close(fds[i]);
}

static void test_oversize(void **state)
{
        (void)state;
        char big[sizeof(union chan_msg) + 64];
        memset(big, 0, sizeof(big));
        struct chan_hdr h = { .type = CHAN_SPAWN, .len = sizeof(big) };
        memcpy(big, &h, sizeof(h));
        send_raw(big, sizeof(big), NULL, 0);
        refused("more bytes than any message has");
}

static void test_wrong_direction_and_type(void **state)
{
        (void)state;
        union chan_msg m;
        chan_init(&m, CHAN_STOP, 1);
        m.stop.signal = 15;
        send_raw(&m, m.h.len, NULL, 0);
        refused("STOP sent by the broker");
        struct chan_hdr h = { .type = 999, .len = sizeof(h) };
        send_raw(&h, sizeof(h), NULL, 0);
        refused("unknown message type 999");
}

static void test_fields(void **state)
{
        (void)state;
        union chan_msg m;
        chan_init(&m, CHAN_OPEN_AGENT_FILE, 1);
        snprintf(m.open_agent_file.path, CHAN_PATH_MAX, "/etc/shadow");
        send_raw(&m, m.h.len, NULL, 0);
        refused("the path must be relative");
        memset(m.open_agent_file.path, 'a', CHAN_PATH_MAX);
        send_raw(&m, m.h.len, NULL, 0);
        refused("not NUL-terminated");
        /* OPEN_AGENT (a replay's agent): absolute, a file, no "..". */
        chan_init(&m, CHAN_OPEN_AGENT, 1);
        snprintf(m.open_agent.path, CHAN_PATH_MAX, "agent.js");
        send_raw(&m, m.h.len, NULL, 0);
        refused("OPEN_AGENT: the path must be absolute");
        snprintf(m.open_agent.path, CHAN_PATH_MAX, "/");
        send_raw(&m, m.h.len, NULL, 0);
        refused("OPEN_AGENT: the path must be absolute and name a file");
        snprintf(m.open_agent.path, CHAN_PATH_MAX, "/tmp/../etc/shadow");
        send_raw(&m, m.h.len, NULL, 0);
        refused("OPEN_AGENT: the path has a '..' component");
        snprintf(m.open_agent.path, CHAN_PATH_MAX, "/tmp/a..b/..c/agent.js");
        assert_int_equal(chan_send(sv[0], &m, NULL, 0, NULL), 0); /* ".." only as a whole component */
        union chan_msg got;
        int fds[CHAN_MAX_FDS];
        size_t nfds = 0;
        assert_int_equal(chan_recv(sv[1], CHAN_FROM_BROKER, &got, fds, &nfds, NULL), 0);
        assert_string_equal(got.open_agent.path, "/tmp/a..b/..c/agent.js");
        chan_init(&m, CHAN_RESULT, 1);
        m.result.exit_code = 256;
        send_raw(&m, m.h.len, NULL, 0);
        refused("RESULT: exit code 256");
        chan_init(&m, CHAN_SPAWN, 1);
        m.spawn.kind = 9;
        send_raw(&m, m.h.len, NULL, 0);
        refused("unknown box kind 9");
        m.spawn.kind = CHAN_BOX_TOOL;
        m.spawn.n_argv = 1;
        snprintf(m.spawn.tz, sizeof(m.spawn.tz), "../../etc/shadow");
        send_raw(&m, m.h.len, NULL, 0);
        refused("not a zone name");
        snprintf(m.spawn.tz, sizeof(m.spawn.tz), "Europe/Paris");
        m.spawn.n_env = 0xffffffffu;
        send_raw(&m, m.h.len, NULL, 0);
        refused("more than 4096 strings");
        m.spawn.n_env = 0;
        m.spawn.flags = 2;
        send_raw(&m, m.h.len, NULL, 0);
        refused("SPAWN: flags 0x2");
        m.spawn.kind = CHAN_BOX_WORKER;
        m.spawn.flags = CHAN_SPAWN_HOST;
        send_raw(&m, m.h.len, NULL, 0);
        refused("SPAWN: flags 0x1 for kind 1");
        chan_init(&m, CHAN_HELLO, 1);
        m.hello.version = 2;
        send_raw(&m, m.h.len, NULL, 0);
        refused("HELLO: version 2");
}

static void test_closed(void **state)
{
        (void)state;
        close(sv[0]);
        sv[0] = -1;
        union chan_msg m;
        int fds[CHAN_MAX_FDS];
        size_t n;
        struct err *e = NULL;
        assert_int_equal(chan_recv(sv[1], CHAN_FROM_BROKER, &m, fds, &n, &e), -1);
        assert_int_equal(err_code(e), CHAN_E_CLOSED);
        err_free(e);
}

static void test_blob_roundtrip(void **state)
{
        (void)state;
        const char *in[] = { "/srv/agent", "/usr/bin/jq", "", "PATH" };
        int fd = -1;
        struct err *e = NULL;
        assert_int_equal(chan_blob_create("spec", in, 4, &fd, &e), 0);
        /* Sealed: the sender cannot change it any more. */
        assert_int_equal(write(fd, "x", 1), -1);
        assert_int_equal(errno, EPERM);
        assert_int_equal(ftruncate(fd, 4), -1);
        struct chan_blob b;
        assert_int_equal(chan_blob_map(fd, 4, &b, &e), 0);
        for (int i = 0; i < 4; i++)
                assert_string_equal(b.strs[i], in[i]);
        chan_blob_unmap(&b);
        /* Expecting another count is refused. */
        assert_int_equal(chan_blob_map(fd, 3, &b, &e), -1);
        assert_int_equal(err_code(e), CHAN_E_PROTO);
        assert_non_null(strstr(err_msg(e), "4 strings (expected 3)"));
        err_free(e);
        close(fd);
}

/* A blob the sender could still change: refused before it is mapped. */
static void test_blob_unsealed(void **state)
{
        (void)state;
        int fd = memfd_create("x", MFD_CLOEXEC | MFD_ALLOW_SEALING);
        struct chan_blob_hdr h = { .magic = CHAN_BLOB_MAGIC, .nstrings = 1, .bytes = 2 };
        assert_int_equal(write(fd, &h, sizeof(h)), sizeof(h));
        assert_int_equal(write(fd, "a", 2), 2);
        struct chan_blob b;
        struct err *e = NULL;
        assert_int_equal(chan_blob_map(fd, 1, &b, &e), -1);
        assert_non_null(strstr(err_msg(e), "seals 0"));
        err_free(e), e = NULL;
        /* Write sealed but still growable: refused too. */
        assert_int_equal(fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_SHRINK), 0);
        assert_int_equal(chan_blob_map(fd, 1, &b, &e), -1);
        assert_non_null(strstr(err_msg(e), "seal, write, grow, shrink"));
        err_free(e), e = NULL;
        assert_int_equal(fcntl(fd, F_ADD_SEALS, F_SEAL_GROW | F_SEAL_SEAL), 0);
        assert_int_equal(chan_blob_map(fd, 1, &b, &e), 0);
        assert_string_equal(b.strs[0], "a");
        chan_blob_unmap(&b);
        close(fd);
        /* Not a memfd at all. */
        int p[2];
        assert_int_equal(pipe2(p, O_CLOEXEC), 0);
        assert_int_equal(chan_blob_map(p[0], 1, &b, &e), -1);
        assert_non_null(strstr(err_msg(e), "not a memfd"));
        err_free(e);
        close(p[0]), close(p[1]);
}

static void parse_refused(const void *data, size_t size, size_t expect, const char *want)
{
        struct err *e = NULL;
        const char *strs[8];
        int r = chan_blob_parse(data, size, expect, strs, &e);
        if (r == 0 || !strstr(err_msg(e), want))
                print_error("got %d '%s', wanted '%s'\n", r, err_msg(e), want);
        assert_int_equal(r, -1);
        assert_non_null(strstr(err_msg(e), want));
        err_free(e);
}

static void test_blob_parse(void **state)
{
        (void)state;
        char buf[64];
        struct chan_blob_hdr h = { .magic = CHAN_BLOB_MAGIC, .nstrings = 2, .bytes = 4 };
        memcpy(buf, &h, sizeof(h));
        memcpy(buf + sizeof(h), "a\0b\0", 4);
        const char *strs[2];
        assert_int_equal(chan_blob_parse(buf, sizeof(h) + 4, 2, strs, NULL), 0);
        assert_string_equal(strs[1], "b");
        parse_refused(buf, sizeof(h) + 3, 2, "header says 4 bytes of strings, the file has 3");
        memcpy(buf + sizeof(h), "a\0bc", 4);
        parse_refused(buf, sizeof(h) + 4, 2, "string 1 is not NUL-terminated");
        memcpy(buf + sizeof(h), "a\0\0\0", 4);
        parse_refused(buf, sizeof(h) + 4, 2, "1 bytes after the last string");
        h.magic = 0;
        memcpy(buf, &h, sizeof(h));
        parse_refused(buf, sizeof(h) + 4, 2, "bad magic");
        parse_refused(buf, 3, 0, "3 bytes");
}

int main(void)
{
        signal(SIGPIPE, SIG_IGN); /* test_wrong_fd_count writes to a pipe without readers */
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_roundtrip_hello, setup, teardown),
                cmocka_unit_test_setup_teardown(test_roundtrip_spawned_fds, setup, teardown),
                cmocka_unit_test_setup_teardown(test_spawned_flags, setup, teardown),
                cmocka_unit_test_setup_teardown(test_spawned_bundle_fds, setup, teardown),
                cmocka_unit_test_setup_teardown(test_send_checks, setup, teardown),
                cmocka_unit_test_setup_teardown(test_wrong_length, setup, teardown),
                cmocka_unit_test_setup_teardown(test_wrong_fd_count, setup, teardown),
                cmocka_unit_test_setup_teardown(test_too_many_fds, setup, teardown),
                cmocka_unit_test_setup_teardown(test_oversize, setup, teardown),
                cmocka_unit_test_setup_teardown(test_wrong_direction_and_type, setup, teardown),
                cmocka_unit_test_setup_teardown(test_fields, setup, teardown),
                cmocka_unit_test_setup_teardown(test_closed, setup, teardown),
                cmocka_unit_test(test_blob_roundtrip),
                cmocka_unit_test(test_blob_unsealed),
                cmocka_unit_test(test_blob_parse),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
