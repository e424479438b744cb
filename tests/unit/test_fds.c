/* tests/unit/test_fds.c — sandbox/fds.c: descriptors placed for exec,
 * whatever numbers they start at (swapped, shared, missing, sources above
 * and below the targets), with every other descriptor close-on-exec.  Each
 * case runs in a forked child (it rearranges 0-4). */
#define _GNU_SOURCE
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "sandbox/fds.h"

static ino_t ino(int fd)
{
        struct stat st;
        return fstat(fd, &st) == 0 ? st.st_ino : 0;
}

/* In a child: pipes at known inodes, src built from `map` (index into the
 * pipe ends, -1 = none, 100+k = descriptor k as it is), then checks. */
static int run_case(const int *map, int n, bool low_nofile)
{
        pid_t p = fork();
        if (p == 0) {
                int ends[8];
                for (int i = 0; i < 4; i++) {
                        int pp[2];
                        if (pipe2(pp, O_CLOEXEC) < 0)
                                _exit(10);
                        ends[2 * i] = pp[0], ends[2 * i + 1] = pp[1];
                }
                /* Put one source at a low number on purpose: 0 = ends[0]. */
                if (dup3(ends[0], 0, O_CLOEXEC) < 0)
                        _exit(11);
                close(ends[0]);
                ends[0] = 0;
                if (low_nofile) {
                        /* Sources far above the targets, then a small
                         * RLIMIT_NOFILE: few free numbers are left. */
                        for (int i = 1; i < 8; i++) {
                                int d = fcntl(ends[i], F_DUPFD_CLOEXEC, 40 + i);
                                close(ends[i]);
                                ends[i] = d;
                        }
                        struct rlimit rl = { 8, 8 };
                        if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
                                _exit(13);
                }
                ino_t want[8];
                int src[8];
                for (int i = 0; i < n; i++) {
                        src[i] = map[i] < 0 ? -1 : ends[map[i]];
                        want[i] = map[i] < 0 ? 0 : ino(ends[map[i]]);
                }
                int keep = 1; /* a descriptor the caller needs, sitting at a target */
                ino_t kino = ino(keep);
                struct err *e = NULL;
                if (fds_place(src, n, &keep, 1, &e) < 0)
                        _exit(12);
                for (int i = 0; i < n; i++) {
                        if (map[i] < 0) {
                                if (fcntl(i, F_GETFD) >= 0)
                                        _exit(20 + i);
                                continue;
                        }
                        int fl = fcntl(i, F_GETFD);
                        if (fl < 0 || (fl & FD_CLOEXEC) || ino(i) != want[i])
                                _exit(30 + i);
                }
                if (keep < n || ino(keep) != kino || !(fcntl(keep, F_GETFD) & FD_CLOEXEC))
                        _exit(40);
                for (int fd = n; fd < 64 && !low_nofile; fd++) {
                        int fl = fcntl(fd, F_GETFD);
                        if (fl >= 0 && !(fl & FD_CLOEXEC))
                                _exit(50);
                }
                _exit(0);
        }
        int st = 0;
        waitpid(p, &st, 0);
        return WIFEXITED(st) ? WEXITSTATUS(st) : 99;
}

static void test_straight(void **state)
{
        (void)state;
        const int map[] = { 1, 2, 3, 4, 5 };
        assert_int_equal(run_case(map, 5, false), 0);
}

/* Only sources in the way are copied: with RLIMIT_NOFILE 8 and the sources
 * above it, five targets still work (copying all five first would not). */
static void test_low_nofile(void **state)
{
        (void)state;
        const int map[] = { 1, 2, 3, 4, 5 };
        assert_int_equal(run_case(map, 5, true), 0);
}

static void test_swapped_shared_missing(void **state)
{
        (void)state;
        const int a[] = { 3, 0, 0, -1, 7 }; /* 0's source moves to 1 and 2; 3 closed */
        assert_int_equal(run_case(a, 5, false), 0);
        const int b[] = { 0, 0, 0 };          /* one source at its place, shared */
        assert_int_equal(run_case(b, 3, false), 0);
        const int c[] = { -1, -1, -1, 0 };    /* the only source moves up */
        assert_int_equal(run_case(c, 4, false), 0);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_straight),
                cmocka_unit_test(test_swapped_shared_missing),
                cmocka_unit_test(test_low_nofile),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
