/* tests/bench/timeit.c — run a command N times (stdout/stderr to /dev/null)
 * and print its median wall time in ms.  Used by scripts/bench.sh so every
 * figure in one table comes from the same clock and the same method.
 * Usage: timeit N CMD ARGS...   prints "median_ms p10_ms p90_ms" */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int cmp(const void *a, const void *b)
{
        double x = *(const double *)a, y = *(const double *)b;
        return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
        if (argc < 3) {
                fprintf(stderr, "usage: timeit N CMD ARGS...\n");
                return 2;
        }
        char *end;
        long n = strtol(argv[1], &end, 10);
        if (*end || n < 1 || n > 100000)
                return 2;
        double *t = calloc((size_t)n, sizeof(*t));
        for (long i = 0; i < n; i++) {
                struct timespec a, b;
                clock_gettime(CLOCK_MONOTONIC, &a);
                pid_t pid = fork();
                if (pid == 0) {
                        int null = open("/dev/null", O_RDWR);
                        dup2(null, 0), dup2(null, 1), dup2(null, 2);
                        execvp(argv[2], argv + 2);
                        _exit(127);
                }
                int st;
                waitpid(pid, &st, 0);
                clock_gettime(CLOCK_MONOTONIC, &b);
                if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
                        fprintf(stderr, "timeit: %s failed (status %d)\n", argv[2], st);
                        return 1;
                }
                t[i] = (double)(b.tv_sec - a.tv_sec) * 1e3 + (double)(b.tv_nsec - a.tv_nsec) / 1e6;
        }
        qsort(t, (size_t)n, sizeof(*t), cmp);
        printf("%.3f %.3f %.3f\n", t[n / 2], t[n / 10], t[(n * 9) / 10]);
        return 0;
}
