/* tests/bench/timeit.c — time commands side by side: fork/exec/wait, medians.
 *
 * Usage: timeit [-n N] [-w W] [-p MS] [-T SECS] [-b] CMD ARGS... [::: CMD ARGS...]...
 *
 * Every command gets W warm-up runs (default 2, not counted), then N timed
 * runs (default 20).  Commands separated by ':::' run interleaved — each
 * round runs every command once, in a fresh random order — so a load burst
 * on the shared machine hits all of them alike instead of one whole series.
 * stdin/stdout/stderr of each run go to /dev/null.  A run that does not exit
 * 0 is named on stderr (with the first lines of its stderr) and its command
 * is dropped: its output line reads "fail", the others are still measured,
 * and timeit exits 1.  -p MS sleeps MS ms before every
 * timed run, to measure a cold start (e.g. a cgroup v1 migration that waits
 * for an RCU grace period when none happened recently).  -T SECS is a time
 * budget for the interleaved rounds: past it, timeit stops after the current
 * round (5 rounds at least), so a busy machine cannot stretch a table
 * without bound; the count of runs actually made is printed.
 *
 * Output: one line per command, in the order given:
 *     median_ms p10_ms p90_ms cpu_ms faults runs [kthr_ms]
 * cpu_ms is the median user+system CPU of the command and every descendant
 * it waited for (wait4 rusage), faults the median count of their minor page
 * faults (on a paravirtualised guest each one is a trip to the hypervisor,
 * so this column explains much of the wall time and does not vary with load).  It misses work the kernel does later on its
 * own threads, e.g. tearing down a network namespace.  -b adds kthr_ms:
 * commands then run in blocks instead of interleaved — up to 5 rounds, each
 * an idle 300 ms and then, per command, a block of runs and a 300 ms settle —
 * and kthr_ms is the CPU that kernel threads (kworkers, RCU...) used per run
 * over a block and its settle, less the rate seen in that round's idle 300
 * ms; median over the rounds (from /proc/PID/schedstat, ns; work done in
 * softirq context on other tasks' time is not seen). */
#define _GNU_SOURCE
#include <dirent.h>
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
        int failed;
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

/* CPU time used so far by all kernel threads (kworkers, RCU, ...), in ms,
 * from /proc/PID/schedstat (ns).  A kernel thread that exits in between takes
 * its time with it; they rarely do. */
static double kthread_ms(void)
{
        DIR *d = opendir("/proc");
        if (!d)
                return 0;
        double total = 0;
        struct dirent *e;
        while ((e = readdir(d))) {
                if (e->d_name[0] < '0' || e->d_name[0] > '9')
                        continue;
                char path[300], buf[1024];
                snprintf(path, sizeof(path), "/proc/%s/stat", e->d_name);
                FILE *f = fopen(path, "r");
                if (!f)
                        continue;
                size_t n = fread(buf, 1, sizeof(buf) - 1, f);
                fclose(f);
                buf[n] = '\0';
                char *p = strrchr(buf, ')'); /* comm may hold spaces */
                unsigned long flags = 0;
                if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %lu", &flags) != 1 || !(flags & 0x00200000))
                        continue; /* not PF_KTHREAD */
                snprintf(path, sizeof(path), "/proc/%s/schedstat", e->d_name);
                f = fopen(path, "r");
                unsigned long long ns = 0;
                if (f) {
                        if (fscanf(f, "%llu", &ns) != 1)
                                ns = 0;
                        fclose(f);
                }
                total += (double)ns / 1e6;
        }
        closedir(d);
        return total;
}

static void settle(int ms)
{
        struct timespec t = { ms / 1000, (long)(ms % 1000) * 1000000L };
        while (nanosleep(&t, &t) != 0)
                ;
}

/* Run argv once; wall and CPU time in ms.  -1 on a failed run. */
static int errfd = -1; /* the last run's stderr, shown when it fails */

static int run_once(char **argv, double *wall, double *cpu, double *flt)
{
        if (errfd >= 0) {
                if (ftruncate(errfd, 0) < 0)
                        return -1;
                lseek(errfd, 0, SEEK_SET);
        }
        double a = now_ms();
        pid_t pid = fork();
        if (pid < 0) {
                perror("timeit: fork");
                return -1;
        }
        if (pid == 0) {
                int null = open("/dev/null", O_RDWR);
                dup2(null, 0), dup2(null, 1);
                dup2(errfd >= 0 ? errfd : null, 2);
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
                char buf[512];
                ssize_t r = errfd >= 0 ? pread(errfd, buf, sizeof(buf) - 1, 0) : 0;
                if (r > 0) {
                        buf[r] = '\0';
                        fprintf(stderr, "timeit: its stderr: %s%s", buf, buf[r - 1] == '\n' ? "" : "\n");
                }
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
        fprintf(stderr, "usage: timeit [-n N] [-w WARMUP] [-p MS] [-T SECS] [-b] CMD ARGS... [::: CMD ARGS...]...\n");
        exit(2);
}

int main(int argc, char **argv)
{
        long n = 20, warm = 2, pause = 0, budget = 0;
        int blocks = 0, i = 1;
        for (; i < argc && argv[i][0] == '-'; i++) {
                char *end;
                if (strcmp(argv[i], "-b") == 0) {
                        blocks = 1;
                } else if ((strcmp(argv[i], "-n") == 0 || strcmp(argv[i], "-w") == 0 ||
                            strcmp(argv[i], "-p") == 0 || strcmp(argv[i], "-T") == 0) && i + 1 < argc) {
                        long v = strtol(argv[i + 1], &end, 10);
                        if (*end || v < 0 || v > 100000)
                                usage();
                        if (argv[i][1] == 'n')
                                n = v;
                        else if (argv[i][1] == 'w')
                                warm = v;
                        else if (argv[i][1] == 'p')
                                pause = v;
                        else
                                budget = v;
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
                c[k].failed = 0;
                k++;
                i = j + 1;
        }

        char tmpl[] = "/tmp/timeit-err.XXXXXX";
        errfd = mkostemp(tmpl, O_CLOEXEC);
        if (errfd >= 0)
                unlink(tmpl);

        for (int j = 0; j < k; j++)
                for (long w = 0; w < warm && !c[j].failed; w++) {
                        double x, y, z;
                        if (run_once(c[j].argv, &x, &y, &z) < 0)
                                c[j].failed = 1;
                }

        if (blocks) {
                /* R rounds; each round: an idle 300 ms (the background rate of
                 * kernel-thread CPU now), then per command a block of n/R runs
                 * followed by a 300 ms settle so its deferred work lands in
                 * its own block.  Per command: median over rounds. */
                long rounds = n >= 25 ? 5 : n >= 9 ? 3 : 1, per = n / rounds;
                double *kr = calloc((size_t)(k * rounds), sizeof(double));
                long done[MAXCMD] = { 0 };
                for (long q = 0; q < rounds; q++) {
                        double i0 = now_ms(), k0 = kthread_ms();
                        settle(300);
                        double rate = (kthread_ms() - k0) / (now_ms() - i0); /* ms CPU per ms */
                        for (int j = 0; j < k; j++) {
                                if (c[j].failed)
                                        continue;
                                long cnt = q == rounds - 1 ? n - done[j] : per;
                                double t0 = now_ms(), s0 = kthread_ms();
                                for (long r = 0; r < cnt && !c[j].failed; r++) {
                                        if (pause)
                                                settle((int)pause);
                                        long x = done[j]++;
                                        if (run_once(c[j].argv, &c[j].wall[x], &c[j].cpu[x], &c[j].flt[x]) < 0)
                                                c[j].failed = 1;
                                }
                                settle(300);
                                double used = kthread_ms() - s0, span = now_ms() - t0;
                                kr[j * rounds + q] = (used - rate * span) / (double)cnt;
                        }
                }
                for (int j = 0; j < k; j++) {
                        qsort(kr + j * rounds, (size_t)rounds, sizeof(double), cmp);
                        c[j].sys_ms = kr[j * rounds + rounds / 2];
                }
                free(kr);
        } else {
                double t0 = now_ms();
                int order[MAXCMD];
                for (int j = 0; j < k; j++)
                        order[j] = j;
                srand((unsigned)getpid() ^ (unsigned)now_ms());
                for (long r = 0; r < n; r++) {
                        for (int j = k - 1; j > 0; j--) { /* a fresh random order every round */
                                int x = rand() % (j + 1), t = order[j];
                                order[j] = order[x], order[x] = t;
                        }
                        for (int q = 0; q < k; q++) {
                                int j = order[q];
                                if (c[j].failed)
                                        continue;
                                if (pause)
                                        settle((int)pause);
                                if (run_once(c[j].argv, &c[j].wall[r], &c[j].cpu[r], &c[j].flt[r]) < 0)
                                        c[j].failed = 1;
                        }
                        /* over the time budget: stop after whole rounds, 5 at least */
                        if (budget > 0 && r + 1 >= 5 && now_ms() - t0 > (double)budget * 1000.0) {
                                n = r + 1;
                                break;
                        }
                }
        }

        int failed = 0;
        for (int j = 0; j < k; j++) {
                if (c[j].failed) {
                        printf("fail\n");
                        failed = 1;
                        continue;
                }
                qsort(c[j].wall, (size_t)n, sizeof(double), cmp);
                qsort(c[j].cpu, (size_t)n, sizeof(double), cmp);
                qsort(c[j].flt, (size_t)n, sizeof(double), cmp);
                printf("%.3f %.3f %.3f %.3f %.0f %ld", c[j].wall[n / 2], c[j].wall[n / 10], c[j].wall[(n * 9) / 10],
                       c[j].cpu[n / 2], c[j].flt[n / 2], n);
                if (blocks)
                        printf(" %.3f", c[j].sys_ms);
                printf("\n");
        }
        return failed;
}
