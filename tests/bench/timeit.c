/* tests/bench/timeit.c — time commands side by side: fork/exec/wait, medians.
 *
 * Usage: timeit [-n N] [-w W] [-p MS] [-b] CMD ARGS... [::: CMD ARGS...]...
 *
 * Every command gets W warm-up runs (default 2, not counted), then N timed
 * runs (default 20).  Commands separated by ':::' run interleaved — round r
 * runs each command once, starting at command r mod K — so a load burst on
 * the shared machine hits all of them alike instead of one whole series.
 * stdin/stdout/stderr of each run go to /dev/null; a run that does not exit 0
 * makes timeit fail (exit 1) and name it.  -p MS sleeps MS ms before every
 * timed run, to measure a cold start (e.g. a cgroup v1 migration that waits
 * for an RCU grace period when none happened recently).
 *
 * Output: one line per command, in the order given:
 *     median_ms p10_ms p90_ms cpu_ms faults [sys_ms]
 * cpu_ms is the median user+system CPU of the command and every descendant
 * it waited for (wait4 rusage), faults the median count of their minor page
 * faults (on a paravirtualised guest each one is a trip to the hypervisor,
 * so this column explains much of the wall time and does not vary with load).  It misses work the kernel does later on its
 * own threads, e.g. tearing down a network namespace.  -b adds sys_ms:
 * commands then run in blocks (all N runs of one command, then a 300 ms
 * settle) instead of interleaved, and sys_ms is the machine-wide busy CPU per
 * run over the block and its settle (from /proc/stat, all CPUs, kernel
 * threads included), less the busy CPU of an idle 300 ms measured before.
 * /proc/stat ticks are 10 ms: use N >= 50 for a figure to ~0.2 ms. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAXCMD 32

struct cmd {
        char **argv;
        double *wall, *cpu, *flt;
        double sys_ms;
};

static int cmp(const void *a, const void *b)
{
        double x = *(const double *)a, y = *(const double *)b;
        return x < y ? -1 : x > y;
}

static double now_ms(void)
{
        struct timespec t;
        clock_gettime(CLOCK_MONOTONIC, &t);
        return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

/* Busy CPU of the whole machine so far, in ms (all CPUs). */
static double busy_ms(void)
{
        FILE *f = fopen("/proc/stat", "r");
        if (!f)
                return 0;
        unsigned long long v[10] = { 0 };
        int n = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3],
                       &v[4], &v[5], &v[6], &v[7], &v[8], &v[9]);
        fclose(f);
        if (n < 4)
                return 0;
        unsigned long long busy = 0;
        for (int i = 0; i < 8 && i < n; i++)
                if (i != 3 && i != 4) /* idle, iowait */
                        busy += v[i];
        return (double)busy * 1000.0 / (double)sysconf(_SC_CLK_TCK);
}

static void settle(int ms)
{
        struct timespec t = { ms / 1000, (long)(ms % 1000) * 1000000L };
        while (nanosleep(&t, &t) != 0)
                ;
}

/* Run argv once; wall and CPU time in ms.  -1 on a failed run. */
static int run_once(char **argv, double *wall, double *cpu, double *flt)
{
        double a = now_ms();
        pid_t pid = fork();
        if (pid < 0) {
                perror("timeit: fork");
                return -1;
        }
        if (pid == 0) {
                int null = open("/dev/null", O_RDWR);
                dup2(null, 0), dup2(null, 1), dup2(null, 2);
                execvp(argv[0], argv);
                _exit(127);
        }
        int st;
        struct rusage ru;
        if (wait4(pid, &st, 0, &ru) < 0) {
                perror("timeit: wait4");
                return -1;
        }
        double b = now_ms();
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
                fprintf(stderr, "timeit: '%s", argv[0]);
                for (char **p = argv + 1; *p; p++)
                        fprintf(stderr, " %s", *p);
                if (WIFEXITED(st))
                        fprintf(stderr, "' exited %d\n", WEXITSTATUS(st));
                else
                        fprintf(stderr, "' killed by signal %d\n", WTERMSIG(st));
                return -1;
        }
        *wall = b - a;
        *cpu = (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 +
               (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3;
        *flt = (double)ru.ru_minflt;
        return 0;
}

static void usage(void)
{
        fprintf(stderr, "usage: timeit [-n N] [-w WARMUP] [-p MS] [-b] CMD ARGS... [::: CMD ARGS...]...\n");
        exit(2);
}

int main(int argc, char **argv)
{
        long n = 20, warm = 2, pause = 0;
        int blocks = 0, i = 1;
        for (; i < argc && argv[i][0] == '-'; i++) {
                char *end;
                if (strcmp(argv[i], "-b") == 0) {
                        blocks = 1;
                } else if ((strcmp(argv[i], "-n") == 0 || strcmp(argv[i], "-w") == 0 ||
                            strcmp(argv[i], "-p") == 0) && i + 1 < argc) {
                        long v = strtol(argv[i + 1], &end, 10);
                        if (*end || v < 0 || v > 100000)
                                usage();
                        if (argv[i][1] == 'n')
                                n = v;
                        else if (argv[i][1] == 'w')
                                warm = v;
                        else
                                pause = v;
                        i++;
                } else if (strcmp(argv[i], "--") == 0) {
                        i++;
                        break;
                } else {
                        usage();
                }
        }
        if (i >= argc || n < 1)
                usage();

        struct cmd c[MAXCMD];
        int k = 0;
        while (i < argc) {
                if (k == MAXCMD) {
                        fprintf(stderr, "timeit: at most %d commands\n", MAXCMD);
                        return 2;
                }
                c[k].argv = &argv[i];
                int j = i;
                while (j < argc && strcmp(argv[j], ":::") != 0)
                        j++;
                if (j == i)
                        usage();
                if (j < argc)
                        argv[j] = NULL; /* terminates this command's argv */
                c[k].wall = calloc((size_t)n, sizeof(double));
                c[k].cpu = calloc((size_t)n, sizeof(double));
                c[k].flt = calloc((size_t)n, sizeof(double));
                c[k].sys_ms = 0;
                k++;
                i = j + 1;
        }

        for (int j = 0; j < k; j++)
                for (long w = 0; w < warm; w++) {
                        double x, y, z;
                        if (run_once(c[j].argv, &x, &y, &z) < 0)
                                return 1;
                }

        if (blocks) {
                settle(300);
                double b0 = busy_ms();
                settle(300);
                double idle = busy_ms() - b0; /* background busy CPU per 300 ms */
                for (int j = 0; j < k; j++) {
                        double t0 = now_ms(), s0 = busy_ms();
                        for (long r = 0; r < n; r++) {
                                if (pause)
                                        settle((int)pause);
                                if (run_once(c[j].argv, &c[j].wall[r], &c[j].cpu[r], &c[j].flt[r]) < 0)
                                        return 1;
                        }
                        double runs_ms = now_ms() - t0;
                        settle(300);
                        double busy = busy_ms() - s0;
                        /* background load scales with the elapsed time */
                        double bg = idle * (runs_ms + 300.0) / 300.0;
                        c[j].sys_ms = (busy - bg) / (double)n;
                }
        } else {
                for (long r = 0; r < n; r++)
                        for (int q = 0; q < k; q++) {
                                int j = (int)((q + r) % k);
                                if (pause)
                                        settle((int)pause);
                                if (run_once(c[j].argv, &c[j].wall[r], &c[j].cpu[r], &c[j].flt[r]) < 0)
                                        return 1;
                        }
        }

        for (int j = 0; j < k; j++) {
                qsort(c[j].wall, (size_t)n, sizeof(double), cmp);
                qsort(c[j].cpu, (size_t)n, sizeof(double), cmp);
                qsort(c[j].flt, (size_t)n, sizeof(double), cmp);
                printf("%.3f %.3f %.3f %.3f %.0f", c[j].wall[n / 2], c[j].wall[n / 10], c[j].wall[(n * 9) / 10],
                       c[j].cpu[n / 2], c[j].flt[n / 2]);
                if (blocks)
                        printf(" %.3f", c[j].sys_ms);
                printf("\n");
        }
        return 0;
}
