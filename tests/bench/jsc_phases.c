/* tests/bench/jsc_phases.c — where a worker's start goes, timed inside the
 * process (issue 14, item 3, and the measured case for item 1's fork server).
 *
 *   jsc_phases [-n RUNS] [-e ENV]... phases PRELUDE...
 *       Forks and execs itself RUNS times per PRELUDE and ENV set
 *       (interleaved: each round runs every one once).  The child, linked against JavaScriptCore like
 *       chidori-worker, reads CLOCK_MONOTONIC (one clock for every process)
 *       and reports, in µs:
 *         load     execve (taken just before it) -> main: the kernel's exec,
 *                  the dynamic loader mapping and relocating JSC, ICU, glib and
 *                  the rest (28 libraries), and their constructors
 *         vm       JSContextGroupCreate: JSC's options, the VM, its heap
 *         context  JSGlobalContextCreateInGroup: the global object, builtins
 *         prelude  evaluating PRELUDE (the engine's prelude.js as embedded) with
 *                  a stub for the natives, as engine/engine.c's setup()
 *         agent    evaluating the hello-world line (an agent's first code)
 *   jsc_phases [-n RUNS] [-e ENV]... zygote PRELUDE...
 *       The same phases in a child that is only forked, not exec'd: this
 *       process has JSC loaded and relocated but never initialised (issue 14
 *       item 1's fork server, measured before it is built).  "fork" replaces
 *       "load": the parent's fork (in wall time only) and the child's first
 *       steps; its CPU and faults are the child's.
 *   jsc_phases [-n RUNS] [-e ENV]... [-s AGENT] worker WORKER...
 *       The real chidori-worker (no box, no stage-2 filter): fd 3 is a
 *       socketpair.  Reports exec -> its ready frame (loading + VM + context +
 *       prelude), ready -> the first frame after the init frame (the agent's
 *       first effect: the done frame of the default hello-world agent, a log
 *       frame of one whose first line is console.log), and the rest to its
 *       exit; with the worker's CPU (/proc/PID/task/TID/schedstat, wait4) and
 *       minor faults per phase.  AGENT: the agent's source (one line).
 *   ENV is a comma-separated list of NAME=VALUE set in the child (e.g.
 *   "JSC_useJIT=false"); "-" is none.  Without -e: one set, none.  Several
 *   PRELUDEs or WORKERs (e.g. a baseline's) are compared in the same rounds.
 * Prints per set the median (p10, p90) wall ms of every phase, and the median
 * CPU ms and minor faults (the figures a loaded machine does not inflate).
 * Exit 0, or 1 when a run fails (its reason on stderr). */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <JavaScriptCore/JavaScript.h>

#define MAX_SETS 8
#define MAX_RUNS 1000
#define MAX_PHASES 5

static uint64_t now_us(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* A point in time: wall (CLOCK_MONOTONIC), the process's CPU (all threads,
 * from the fork), its minor page faults (from the fork). */
struct mark {
        uint64_t wall, cpu;
        long flt;
};

static void mark(struct mark *m)
{
        struct timespec ts;
        struct rusage ru;
        m->wall = now_us();
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
        m->cpu = (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
        getrusage(RUSAGE_SELF, &ru);
        m->flt = ru.ru_minflt;
}

static char *slurp(const char *path)
{
        FILE *f = fopen(path, "rb");
        if (!f)
                return NULL;
        size_t cap = 1 << 16, len = 0, n;
        char *buf = malloc(cap);
        while (buf && (n = fread(buf + len, 1, cap - len - 1, f)) > 0) {
                len += n;
                if (cap - len < 2) {
                        char *nb = realloc(buf, cap *= 2);
                        if (!nb)
                                free(buf);
                        buf = nb;
                }
        }
        fclose(f);
        if (buf)
                buf[len] = '\0';
        return buf;
}

static int eval(JSGlobalContextRef ctx, const char *src, const char *name)
{
        JSStringRef s = JSStringCreateWithUTF8CString(src);
        JSStringRef url = JSStringCreateWithUTF8CString(name);
        JSValueRef exc = NULL;
        JSValueRef v = JSEvaluateScript(ctx, s, NULL, url, 1, &exc);
        JSStringRelease(s);
        JSStringRelease(url);
        if (v)
                return 0;
        char text[512] = "(no message)";
        JSStringRef str = JSValueToStringCopy(ctx, exc, NULL);
        if (str) {
                JSStringGetUTF8CString(str, text, sizeof(text));
                JSStringRelease(str);
        }
        fprintf(stderr, "jsc_phases: %s: %s\n", name, text);
        return -1;
}

/* The child of `phases`: argv = self --child T0 PRELUDE.  Prints, per
 * phase, wall µs, CPU µs and minor faults (the load phase's CPU and faults
 * count from the fork). */
static int child_phases(const char *t0s, const char *prelude_path)
{
        struct mark m[MAX_PHASES + 1];
        mark(&m[1]);
        m[0] = (struct mark){ .wall = strtoull(t0s, NULL, 10) };
        char *prelude = slurp(prelude_path);
        if (!prelude) {
                perror(prelude_path);
                return 1;
        }
        JSContextGroupRef group = JSContextGroupCreate();
        mark(&m[2]);
        JSGlobalContextRef ctx = JSGlobalContextCreateInGroup(group, NULL);
        mark(&m[3]);
        if (eval(ctx,
                 "Object.defineProperty(globalThis, '__chidoriNative', { configurable: true, value: {"
                 " call() { throw new Error('stub'); }, callSync() { throw new Error('stub'); },"
                 " finish() { throw new Error('stub'); }, load() { throw new Error('stub'); } } });",
                 "stub") < 0 ||
            eval(ctx, prelude, "prelude.js") < 0)
                return 1;
        mark(&m[4]);
        if (eval(ctx, "(function main() { return \"hello \" + (1 + 1); })()", "agent.js") < 0)
                return 1;
        mark(&m[5]);
        for (int i = 1; i <= MAX_PHASES; i++)
                printf("%" PRIu64 " %" PRIu64 " %ld%c", m[i].wall - m[i - 1].wall, m[i].cpu - m[i - 1].cpu,
                       m[i].flt - m[i - 1].flt, i == MAX_PHASES ? '\n' : ' ');
        fflush(stdout);
        _exit(0);  /* as the worker: no teardown */
}

static void apply_env(const char *set)
{
        if (strcmp(set, "-") == 0)
                return;
        char *copy = strdup(set), *save = NULL;
        for (char *kv = strtok_r(copy, ",", &save); kv; kv = strtok_r(NULL, ",", &save)) {
                char *eq = strchr(kv, '=');
                if (eq) {
                        *eq = '\0';
                        setenv(kv, eq + 1, 1);
                }
        }
        free(copy);
}

/* One run of `phases`: the child's figures into out[]. */
static int run_phases(const char *self, bool zygote, const char *set, const char *prelude, double out[])
{
        int p[2];
        if (pipe(p) < 0)
                return -1;
        char t0[32];
        snprintf(t0, sizeof(t0), "%" PRIu64, now_us());
        pid_t pid = fork();
        if (pid < 0)
                return -1;
        if (pid == 0) {
                dup2(p[1], 1);
                close(p[0]);
                close(p[1]);
                apply_env(set);
                if (zygote)  /* this process has JSC loaded, not initialised */
                        _exit(child_phases(t0, prelude));
                snprintf(t0, sizeof(t0), "%" PRIu64, now_us());
                execl(self, self, "--child", t0, prelude, (char *)NULL);
                _exit(127);
        }
        close(p[1]);
        char buf[256] = "";
        ssize_t n, len = 0;
        while ((n = read(p[0], buf + len, sizeof(buf) - 1 - (size_t)len)) > 0)
                len += n;
        close(p[0]);
        int st;
        waitpid(pid, &st, 0);
        buf[len > 0 ? len : 0] = '\0';
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
                return -1;
        char *q = buf;
        for (int i = 0; i < 3 * MAX_PHASES; i++) {
                char *end;
                double v = strtod(q, &end);
                if (end == q)
                        return -1;
                out[i] = i % 3 == 2 ? v : v / 1000.0;
                q = end;
        }
        return 0;
}

static int write_frame(int fd, const char *body)
{
        uint32_t len = htonl((uint32_t)strlen(body));
        if (write(fd, &len, 4) != 4 || write(fd, body, strlen(body)) != (ssize_t)strlen(body))
                return -1;
        return 0;
}

/* Read one whole frame (discarding its body). */
static int read_frame(int fd)
{
        unsigned char hdr[4];
        size_t have = 0;
        while (have < 4) {
                ssize_t n = read(fd, hdr + have, 4 - have);
                if (n <= 0)
                        return -1;
                have += (size_t)n;
        }
        size_t len = ((size_t)hdr[0] << 24) | ((size_t)hdr[1] << 16) | ((size_t)hdr[2] << 8) | hdr[3];
        char buf[4096];
        while (len > 0) {
                ssize_t n = read(fd, buf, len < sizeof(buf) ? len : sizeof(buf));
                if (n <= 0)
                        return -1;
                len -= (size_t)n;
        }
        return 0;
}

/* A running child's CPU so far (the sum of its threads' run time in
 * /proc/PID/task/TID/schedstat, ns) and minor faults (/proc/PID/stat). */
static void sample(pid_t pid, double *cpu_ms, double *flt)
{
        char path[64], buf[1024];
        *cpu_ms = 0;
        *flt = 0;
        snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
        DIR *d = opendir(path);
        for (struct dirent *de; d && (de = readdir(d));) {
                if (de->d_name[0] == '.')
                        continue;
                snprintf(buf, sizeof(buf), "%s/%s/schedstat", path, de->d_name);
                FILE *f = fopen(buf, "r");
                unsigned long long ns;
                if (f && fscanf(f, "%llu", &ns) == 1)
                        *cpu_ms += (double)ns / 1e6;
                if (f)
                        fclose(f);
        }
        if (d)
                closedir(d);
        snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
        FILE *f = fopen(path, "r");
        size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;
        if (f)
                fclose(f);
        buf[n] = '\0';
        char *p = strrchr(buf, ')');  /* comm may hold spaces */
        unsigned long minflt;
        if (p && sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %lu", &minflt) == 1)
                *flt = (double)minflt;
}

/* One run of `worker`, three phases: exec -> ready, ready -> the first frame
 * of the agent, the rest to its exit: out[3 * phase] wall ms, out[3 * phase
 * + 1] the worker's CPU ms, out[3 * phase + 2] its minor faults. */
static const char *agent_src = "function main() { return 'hello ' + (1 + 1); }";

/* The init frame for agent_src (a JSON string: quotes and backslashes escaped). */
static char *init_frame(void)
{
        static const char head[] = "{\"type\":\"init\",\"filename\":\"agent.js\",\"script\":\"";
        size_t n = strlen(agent_src);
        char *f = malloc(sizeof(head) + 2 * n + 3), *o = f;
        if (!f)
                return NULL;
        memcpy(o, head, sizeof(head) - 1);
        o += sizeof(head) - 1;
        for (const char *c = agent_src; *c; c++) {
                if (*c == '"' || *c == '\\')
                        *o++ = '\\';
                *o++ = *c == '\n' ? ' ' : *c;
        }
        memcpy(o, "\"}", 3);
        return f;
}

static int run_worker(const char *worker, const char *set, double out[])
{
        int sp[2];
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) < 0)
                return -1;
        uint64_t t0 = now_us();  /* fork + execve included: tens of µs */
        pid_t pid = fork();
        if (pid < 0)
                return -1;
        if (pid == 0) {
                dup2(sp[1], 3);
                int null = open("/dev/null", 0);
                dup2(null, 1);
                apply_env(set);
                execl(worker, worker, (char *)NULL);
                _exit(127);
        }
        close(sp[1]);
        int rc = -1;
        double c1, f1, c2, f2;
        if (read_frame(sp[0]) == 0) {
                uint64_t t1 = now_us();
                sample(pid, &c1, &f1);
                char *init = init_frame();
                int w = init ? write_frame(sp[0], init) : -1;
                free(init);
                if (w == 0 && read_frame(sp[0]) == 0) {
                        uint64_t t2 = now_us();
                        sample(pid, &c2, &f2);
                        out[0] = (double)(t1 - t0) / 1000.0;
                        out[1] = c1;
                        out[2] = f1;
                        out[3] = (double)(t2 - t1) / 1000.0;
                        out[4] = c2 - c1;
                        out[5] = f2 - f1;
                        rc = 0;
                        while (read_frame(sp[0]) == 0)  /* the rest, to the done frame and EOF */
                                ;
                }
        }
        close(sp[0]);
        int st;
        struct rusage ru;
        uint64_t t_end = 0;
        if (wait4(pid, &st, 0, &ru) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
                rc = -1;
        t_end = now_us();
        double cpu = (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000.0 +
                     (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1000.0;
        out[6] = (double)(t_end - t0) / 1000.0 - out[0] - out[3];
        out[7] = cpu - out[1] - out[4];
        out[8] = (double)ru.ru_minflt - out[2] - out[5];
        return rc;
}

static int cmp(const void *a, const void *b)
{
        double x = *(const double *)a, y = *(const double *)b;
        return (x > y) - (x < y);
}

static double pct(double *v, int n, double q)
{
        qsort(v, (size_t)n, sizeof(*v), cmp);
        return v[(int)(q * (n - 1) + 0.5)];
}

int main(int argc, char **argv)
{
        if (argc == 4 && strcmp(argv[1], "--child") == 0)
                return child_phases(argv[2], argv[3]);
        int runs = 20, nenv = 0, opt;
        const char *envs[MAX_SETS];
        while ((opt = getopt(argc, argv, "+n:e:s:")) != -1) {
                if (opt == 'n')
                        runs = (int)strtol(optarg, NULL, 10);
                else if (opt == 's')
                        agent_src = optarg;
                else if (opt == 'e' && nenv < MAX_SETS)
                        envs[nenv++] = optarg;
                else
                        goto usage;
        }
        if (nenv == 0)
                envs[nenv++] = "-";
        int ntargets = argc - optind - 1;
        if (runs < 1 || runs > MAX_RUNS || ntargets < 1 || ntargets * nenv > MAX_SETS)
                goto usage;
        bool worker = strcmp(argv[optind], "worker") == 0, zygote = strcmp(argv[optind], "zygote") == 0;
        if (!worker && !zygote && strcmp(argv[optind], "phases") != 0)
                goto usage;
        /* The sets: every target under every environment. */
        int nsets = ntargets * nenv;
        const char *target[MAX_SETS], *sets[MAX_SETS];
        for (int t = 0; t < ntargets; t++)
                for (int k = 0; k < nenv; k++) {
                        target[t * nenv + k] = argv[optind + 1 + t];
                        sets[t * nenv + k] = envs[k];
                }
        char self[4096];
        ssize_t sl = readlink("/proc/self/exe", self, sizeof(self) - 1);
        if (sl <= 0)
                return 1;
        self[sl] = '\0';
        int nph = worker ? 3 : MAX_PHASES, nfig = 3 * nph;
        static double fig[MAX_SETS][3 * MAX_PHASES][MAX_RUNS];
        for (int r = 0; r < runs; r++)
                for (int k = 0; k < nsets; k++) {
                        int s = (k + r) % nsets;  /* rotate the order each round */
                        double out[3 * MAX_PHASES];
                        if ((worker ? run_worker(target[s], sets[s], out) : run_phases(self, zygote, sets[s], target[s], out)) < 0) {
                                fprintf(stderr, "jsc_phases: run %d of %s (environment '%s') failed\n", r, target[s], sets[s]);
                                return 1;
                        }
                        for (int i = 0; i < nfig; i++)
                                fig[s][i][r] = out[i];
                }
        static const char *const names_p[] = { "load", "vm", "context", "prelude", "agent" };
        static const char *const names_z[] = { "fork", "vm", "context", "prelude", "agent" };
        static const char *const names_w[] = { "exec->ready", "ready->first frame", "first frame->exit" };
        for (int s = 0; s < nsets; s++) {
                printf("%s%s%s\n", target[s], strcmp(sets[s], "-") ? "  with " : "", strcmp(sets[s], "-") ? sets[s] : "");
                double total[3] = { 0, 0, 0 };
                for (int i = 0; i < nph; i++) {
                        double w = pct(fig[s][3 * i], runs, 0.5), p10 = pct(fig[s][3 * i], runs, 0.1),
                               p90 = pct(fig[s][3 * i], runs, 0.9), c = pct(fig[s][3 * i + 1], runs, 0.5),
                               f = pct(fig[s][3 * i + 2], runs, 0.5);
                        total[0] += w;
                        total[1] += c;
                        total[2] += f;
                        printf("  %-20s wall %8.2f ms (p10 %6.2f, p90 %6.2f)  cpu %8.2f ms  faults %6.0f\n",
                               worker ? names_w[i] : zygote ? names_z[i] : names_p[i], w, p10, p90, c, f);
                }
                printf("  %-20s wall %8.2f ms %27s cpu %8.2f ms  faults %6.0f", "sum of medians", total[0], "", total[1],
                       total[2]);
                printf("   (n %d)\n", runs);
        }
        return 0;
usage:
        fprintf(stderr, "usage: jsc_phases [-n RUNS] [-e NAME=VALUE,...]... [-s AGENT] phases|zygote PRELUDE... | worker WORKER...\n");
        return 2;
}
