/* tests/unit/test_memwatch.c — sandbox/memwatch.c, the memory ceiling
 * without a cgroup: what it counts, that it kills a child over the limit
 * (its descendants counted), and that it leaves one under the limit alone. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "sandbox/memwatch.h"

#define MiB (1024 * 1024)

static void touch(size_t mib)
{
        char *p = mmap(NULL, mib * MiB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED)
                _exit(3);
        memset(p, 1, mib * MiB);
}

static void test_counts_anonymous_memory(void **state)
{
        (void)state;
        int64_t before = memwatch_rss(-1, getpid());
        assert_true(before > 0);
        touch(32);
        int64_t after = memwatch_rss(-1, getpid());
        assert_true(after - before >= 30 * MiB);
        /* shared anonymous memory (memfd-like) counts as well */
        char *s = mmap(NULL, 16 * MiB, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        assert_true(s != MAP_FAILED);
        memset(s, 1, 16 * MiB);
        assert_true(memwatch_rss(-1, getpid()) - after >= 15 * MiB);
        munmap(s, 16 * MiB);
        assert_int_equal(memwatch_rss(-1, 0x3ffffff0), -1);
}

/* A child that makes `procs` processes each holding `mib` MiB, then waits. */
static pid_t hog(size_t mib, int procs, int *ret_pidfd)
{
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                setpgid(0, 0); /* the test kills the group when done */
                for (int k = 1; k < procs; k++)
                        if (fork() == 0)
                                break;
                touch(mib);
                sleep(5);
                _exit(0);
        }
        setpgid(pid, pid);
        *ret_pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
        assert_true(*ret_pidfd >= 0);
        return pid;
}

static void test_kills_over_the_limit(void **state)
{
        (void)state;
        int pidfd;
        pid_t pid = hog(96, 1, &pidfd);
        struct memwatch *w = NULL;
        struct err *err = NULL;
        assert_int_equal(memwatch_start(pid, pidfd, 64ull * MiB, false, false, &w, &err), 0);
        int st;
        assert_int_equal(waitpid(pid, &st, 0), pid);
        struct memwatch_result r;
        memwatch_stop(w, &r);
        assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
        assert_true(r.killed);
        assert_true(r.peak_bytes > 64ull * MiB);
        assert_int_equal(r.limit_bytes, 64ull * MiB);
        close(pidfd);
}

static void test_counts_descendants(void **state)
{
        (void)state;
        int pidfd;
        /* three processes of 40 MiB: each under 96M, together over */
        pid_t pid = hog(40, 3, &pidfd);
        struct memwatch *w = NULL;
        struct err *err = NULL;
        assert_int_equal(memwatch_start(pid, pidfd, 96ull * MiB, true, true, &w, &err), 0);
        int st;
        assert_int_equal(waitpid(pid, &st, 0), pid);
        struct memwatch_result r;
        memwatch_stop(w, &r);
        assert_true(r.killed);
        assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
        kill(-pid, SIGKILL);
        close(pidfd);
        /* without the tree the root alone (40 MiB) is under the limit */
        pid = hog(40, 3, &pidfd);
        assert_int_equal(memwatch_start(pid, pidfd, 96ull * MiB, false, false, &w, &err), 0);
        usleep(300 * 1000);
        kill(-pid, SIGKILL);
        assert_int_equal(waitpid(pid, &st, 0), pid);
        memwatch_stop(w, &r);
        assert_false(r.killed);
        assert_true(r.peak_bytes >= 38ull * MiB && r.peak_bytes < 96ull * MiB);
        close(pidfd);
}

static void test_leaves_a_small_one_alone(void **state)
{
        (void)state;
        int pidfd;
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                touch(8);
                usleep(200 * 1000);
                _exit(7);
        }
        pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
        struct memwatch *w = NULL;
        struct err *err = NULL;
        assert_int_equal(memwatch_start(pid, pidfd, 64ull * MiB, false, false, &w, &err), 0);
        int st;
        assert_int_equal(waitpid(pid, &st, 0), pid);
        struct memwatch_result r;
        memwatch_stop(w, &r);
        assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 7);
        assert_false(r.killed);
        assert_true(r.peak_bytes >= 8ull * MiB && r.peak_bytes < 64ull * MiB);
        memwatch_stop(NULL, &r);
        assert_false(r.killed);
        close(pidfd);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_counts_anonymous_memory),
                cmocka_unit_test(test_kills_over_the_limit),
                cmocka_unit_test(test_counts_descendants),
                cmocka_unit_test(test_leaves_a_small_one_alone),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
