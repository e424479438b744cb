#define _GNU_SOURCE
/* tests/unit/test_cgroup.c — sandbox/cgroup/: knob parsing, the /proc parsers,
 * detection, and real leaves on whatever this host offers (v2 with memory,
 * or v1; the v2 mechanics also on a cgroup2 hierarchy without controllers).
 * Tests that need what the host lacks are skipped with the reason printed.
 * Every directory a test creates is removed by the test's teardown, even
 * when an assertion fails.  Only processes this program forked are killed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "sandbox/cgroup/cgroup-internal.h"
#include "sandbox/cgroup/cgroup.h"

#define SKIP(fmt, ...)                                                                   \
        do {                                                                             \
                print_message("[  SKIP    ] %s: " fmt "\n", __func__, ##__VA_ARGS__);    \
                skip();                                                                  \
        } while (0)

#define MiB (1024u * 1024u)

/* ---- helpers --------------------------------------------------------------- */

static double now_ms(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
        double x = *(const double *)a, y = *(const double *)b;
        return x < y ? -1 : x > y;
}

static double median(double *v, size_t n)
{
        qsort(v, n, sizeof(*v), cmp_double);
        return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* ep, not e: the call must have run before *ep is looked at */
static void expect_err(int rc, struct err **ep, int code, const char *needle)
{
        struct err *e = *ep;
        *ep = NULL;
        assert_int_equal(rc, -1);
        assert_non_null(e);
        if (err_code(e) != code || (needle && !strstr(err_msg(e), needle)))
                fail_msg("code %d (want %d), message '%s' (want '%s')", err_code(e), code,
                         err_msg(e), needle ? needle : "");
        err_free(e);
}

/* Per-test state: whatever a test creates is undone in teardown. */
struct fx {
        struct cgroup_host *h;
        struct cgroup_run *run[4];
        pid_t kid[80];
        int nkid;
        int pidfd[80];
        int npidfd;
        char *dirs[48]; /* fake launcher dirs (stale test), removed by teardown */
        int ndirs;
};

static int fx_setup(void **state)
{
        struct fx *f = calloc(1, sizeof(*f));
        *state = f;
        return f ? 0 : -1;
}

static int fx_teardown(void **state)
{
        struct fx *f = *state;
        for (size_t i = 0; i < ARRAY_SIZE(f->run); i++)
                cgroup_run_destroy(f->run[i], NULL);
        for (int i = 0; i < f->nkid; i++) {
                kill(f->kid[i], SIGKILL);
                waitpid(f->kid[i], NULL, 0);
        }
        for (int i = 0; i < f->npidfd; i++)
                close(f->pidfd[i]);
        for (int i = f->ndirs - 1; i >= 0; i--) {
                char path[4200];
                snprintf(path, sizeof(path), "%s/run-x", f->dirs[i]);
                rmdir(path);
                rmdir(f->dirs[i]);
                free(f->dirs[i]);
        }
        cgroup_host_free(f->h);
        free(f);
        return 0;
}

static void track_kid(struct fx *f, pid_t pid)
{
        assert_true(f->nkid < (int)ARRAY_SIZE(f->kid));
        f->kid[f->nkid++] = pid;
}

static int reap(struct fx *f, pid_t pid)
{
        int st;
        assert_int_equal(waitpid(pid, &st, 0), pid);
        for (int i = 0; i < f->nkid; i++)
                if (f->kid[i] == pid)
                        f->kid[i] = f->kid[--f->nkid];
        return st;
}

static struct cgroup_host *host(struct fx *f, int force, bool memory, const char *test)
{
        struct err *e = NULL;
        struct cg_detect_opts o = { .force_version = force };
        if (cg_host_detect_opts(&o, &f->h, &e) < 0)
                fail_msg("detect: %s", err_msg(e));
        if (f->h->version == 0) {
                print_message("[  SKIP    ] %s: no usable cgroup%s: %s (%s)\n", test,
                              force == 2 ? "2" : "", cgroup_host_reason(f->h), f->h->detail);
                skip();
        }
        if (memory && f->h->ctl_hier[CGROUP_CTL_MEMORY] < 0) {
                print_message("[  SKIP    ] %s: cgroup%d without the memory controller: %s\n",
                              test, f->h->version, f->h->ctl_why[CGROUP_CTL_MEMORY]);
                skip();
        }
        return f->h;
}

struct clone_args_ {
        uint64_t flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls,
                set_tid, set_tid_size, cgroup;
};
#define CLONE_INTO_CGROUP_ 0x200000000ULL

typedef int (*kid_fn)(void *arg);

/* Start fn in the run's leaf: v2 via clone3(CLONE_INTO_CGROUP), else fork,
 * attach while the child waits on a pipe, then let it go.  The child's exit
 * status is fn's return value. */
static pid_t spawn_in(struct fx *f, struct cgroup_run *r, kid_fn fn, void *arg)
{
        int go[2];
        assert_int_equal(pipe2(go, O_CLOEXEC), 0);
        int cfd = cgroup_run_clone_fd(r);
        pid_t pid;
        if (cfd >= 0) {
                struct clone_args_ ca = { .flags = CLONE_INTO_CGROUP_, .exit_signal = SIGCHLD,
                                          .cgroup = (uint64_t)cfd };
                pid = (pid_t)syscall(SYS_clone3, &ca, sizeof(ca));
        } else {
                pid = fork();
        }
        assert_true(pid >= 0);
        if (pid == 0) {
                char c;
                close(go[1]);
                if (read(go[0], &c, 1) != 1)
                        _exit(120);
                close(go[0]);
                _exit(fn(arg));
        }
        track_kid(f, pid);
        close(go[0]);
        if (cfd < 0) {
                struct err *e = NULL;
                if (cgroup_run_attach(r, pid, &e) < 0)
                        fail_msg("attach: %s", err_msg(e));
        }
        assert_int_equal(write(go[1], "g", 1), 1);
        close(go[1]);
        return pid;
}

static int touch_mib(void *arg)
{
        size_t n = (size_t)(uintptr_t)arg * MiB;
        char *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED)
                return 3;
        for (size_t i = 0; i < n; i += 4096)
                p[i] = (char)i;
        return 0;
}

/* Directories this module may leave: chidori-* under each hierarchy's parent
 * and everything below them. */
static int count_below(const char *path, int depth)
{
        DIR *d = opendir(path);
        if (!d)
                return 0;
        int n = 0;
        struct dirent *de;
        while ((de = readdir(d))) {
                if (de->d_type != DT_DIR || de->d_name[0] == '.')
                        continue;
                if (depth == 0 && strncmp(de->d_name, CG_PREFIX, strlen(CG_PREFIX)) != 0)
                        continue;
                if (depth == 0 && strcmp(de->d_name, CG_LAUNCHER_LEAF) == 0)
                        continue;
                /* Another process's launcher directory (a chidori running
                 * beside the tests, e.g. a second suite) is not ours. */
                pid_t lp;
                uint64_t ls, ln;
                if (depth == 0 && cg_parse_launcher_name(de->d_name, &lp, &ls, &ln) && lp != getpid())
                        continue;
                char sub[4200];
                snprintf(sub, sizeof(sub), "%s/%s", path, de->d_name);
                n += 1 + count_below(sub, depth + 1);
        }
        closedir(d);
        return n;
}

static int count_ours(const struct cgroup_host *h)
{
        int n = 0;
        for (size_t i = 0; i < h->nhier; i++)
                n += count_below(h->hier[i].parent_fs, 0);
        return n;
}

static int count_fds(void)
{
        DIR *d = opendir("/proc/self/fd");
        int n = 0;
        while (d && readdir(d))
                n++;
        if (d)
                closedir(d);
        return n;
}

static bool pidfd_exited(int pfd, int ms)
{
        struct pollfd p = { .fd = pfd, .events = POLLIN };
        return poll(&p, 1, ms) == 1;
}

/* ---- parsing --------------------------------------------------------------- */

static void parse_size_ok(void **state)
{
        (void)state;
        static const struct {
                const char *s;
                uint64_t v;
        } ok[] = {
                { "512M", 512ull << 20 },     { "1G", 1ull << 30 },
                { "1048576", 1048576 },       { "512MiB", 512ull << 20 },
                { "512mib", 512ull << 20 },   { "512Mi", 512ull << 20 },
                { "512MB", 512ull << 20 },    { "64kb", 64ull << 10 },
                { "1K", 1024 },               { "2t", 2ull << 40 },
                { "1TiB", 1ull << 40 },       { "1", 1 },
                { "007M", 7ull << 20 },       { "9223372036854775807", INT64_MAX },
                { "8589934591G", 8589934591ull << 30 },
        };
        for (size_t i = 0; i < ARRAY_SIZE(ok); i++) {
                uint64_t v = 0;
                struct err *e = NULL;
                if (cgroup_parse_size(ok[i].s, &v, &e) < 0)
                        fail_msg("'%s': %s", ok[i].s, err_msg(e));
                assert_int_equal(v, ok[i].v);
        }
}

static void parse_size_errors(void **state)
{
        (void)state;
        static const char *const bad[] = {
                "",        "0",       "0M",       "-1",        "+1",       " 1",
                "1 ",      "1.5G",    "1X",       "1MM",       "1MiBB",    "1iB",
                "1B",      "M",       "0x10",     "1e3",       "1P",       "1m b",
                "18446744073709551616", "9223372036854775808", "8589934592G",
                "99999999999999999999999999", "1Gi B", "1\n",
        };
        for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
                uint64_t v = 42;
                struct err *e = NULL;
                if (cgroup_parse_size(bad[i], &v, &e) != -1)
                        fail_msg("'%s' accepted as %" PRIu64, bad[i], v);
                assert_int_equal(err_code(e), CGROUP_E_INVALID);
                assert_int_equal(v, 42); /* ret_ untouched on failure */
                err_free(e);
        }
        struct err *e = NULL;
        expect_err(cgroup_parse_size(NULL, &(uint64_t){ 0 }, &e), &e, CGROUP_E_INVALID, "empty");
        expect_err(cgroup_parse_size("0", &(uint64_t){ 0 }, &e), &e, CGROUP_E_INVALID, "above 0");
        assert_int_equal(cgroup_parse_size("bad", &(uint64_t){ 0 }, NULL), -1); /* err NULL ok */
}

static void parse_cpus(void **state)
{
        (void)state;
        static const struct {
                const char *s;
                double v;
        } ok[] = { { "0.5", 0.5 }, { "2", 2 },       { "1024", 1024 },   { "0.000001", 1e-6 },
                   { "1.25", 1.25 }, { "01.50", 1.5 }, { "1024.000", 1024 } };
        for (size_t i = 0; i < ARRAY_SIZE(ok); i++) {
                double v = 0;
                struct err *e = NULL;
                if (cgroup_parse_cpus(ok[i].s, &v, &e) < 0)
                        fail_msg("'%s': %s", ok[i].s, err_msg(e));
                assert_float_equal(v, ok[i].v, 1e-9);
        }
        static const char *const bad[] = { "",     "0",   "0.0",       "-1",  "1024.5", "1025",
                                           ".5",   "1.",  "1e3",       "inf", "nan",    "abc",
                                           " 1",   "1 ",  "0.0000001", "1,5", "+1",     "0x1",
                                           "99999999999999999999" };
        for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
                double v = 42;
                struct err *e = NULL;
                if (cgroup_parse_cpus(bad[i], &v, &e) != -1)
                        fail_msg("'%s' accepted as %g", bad[i], v);
                assert_int_equal(err_code(e), CGROUP_E_INVALID);
                assert_float_equal(v, 42, 0);
                err_free(e);
        }
}

static void format_size(void **state)
{
        (void)state;
        char b[32];
        static const struct {
                uint64_t v;
                const char *s;
        } t[] = { { 512ull << 20, "512M" }, { 1ull << 30, "1G" }, { 1536, "1536" },
                  { 3072, "3K" },          { 0, "0" },           { 1ull << 40, "1T" },
                  { 1536ull << 20, "1536M" }, { 4097, "4097" } };
        for (size_t i = 0; i < ARRAY_SIZE(t); i++) {
                cgroup_format_size(t[i].v, b, sizeof(b));
                assert_string_equal(b, t[i].s);
        }
}

/* ---- /proc parsers ------------------------------------------------------- */

static void parse_mountinfo(void **state)
{
        (void)state;
        const char *mi =
                "22 1 0:21 / /proc rw,nosuid - proc proc rw\n"
                "30 22 0:27 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
                "31 30 0:28 / /sys/fs/cgroup/cpu,cpuacct rw shared:9 - cgroup cgroup rw,cpu,cpuacct\n"
                "33 30 0:30 / /sys/fs/cgroup/cpuset rw - cgroup cgroup rw,cpuset\n"
                "34 30 0:31 /docker/abc /sys/fs/cgroup/mem\\040ory rw - cgroup cgroup rw,memory\n"
                "40 30 0:37 / /sys/fs/cgroup/unified rw,relatime shared:1 master:2 - cgroup2 cgroup2 rw,nsdelegate\n"
                "garbage line\n"
                "41 30 0:38 / /x rw - cgroup2";
        struct cg_mount *m = NULL;
        size_t n = 0;
        assert_int_equal(cg_parse_mountinfo(mi, &m, &n), 0);
        assert_int_equal(n, 4);
        assert_string_equal(m[0].mount, "/sys/fs/cgroup/cpu,cpuacct");
        assert_false(m[0].v2);
        assert_int_equal(m[0].ctls, CTL_BIT(CGROUP_CTL_CPU)); /* cpuacct is not cpu */
        assert_int_equal(m[1].ctls, 0);                      /* cpuset is not cpu */
        assert_string_equal(m[2].mount, "/sys/fs/cgroup/mem ory");
        assert_string_equal(m[2].root, "/docker/abc");
        assert_int_equal(m[2].ctls, CTL_BIT(CGROUP_CTL_MEMORY));
        assert_true(m[3].v2);
        assert_string_equal(m[3].mount, "/sys/fs/cgroup/unified");
        cg_mounts_free(m, n);
}

static void parse_proc_cgroup(void **state)
{
        (void)state;
        const char *t = "9:name=systemd:/\n8:pids:/a\n4:memory:/process_api/2f82\n"
                        "1:cpu,cpuacct:/c d\n0::/user.slice/x.scope\n";
        char *p = NULL, *list = NULL;
        assert_int_equal(cg_proc_cgroup_path(t, NULL, &p, NULL), 0);
        assert_string_equal(p, "/user.slice/x.scope");
        free(p);
        assert_int_equal(cg_proc_cgroup_path(t, "memory", &p, &list), 0);
        assert_string_equal(p, "/process_api/2f82");
        assert_string_equal(list, "memory");
        free(p);
        free(list);
        assert_int_equal(cg_proc_cgroup_path(t, "cpu", &p, NULL), 0);
        assert_string_equal(p, "/c d");
        free(p);
        assert_int_equal(cg_proc_cgroup_path(t, "cpuset", &p, NULL), -ENOENT);
        assert_int_equal(cg_proc_cgroup_path("4:memory:/x\n", NULL, &p, NULL), -ENOENT);
}

static void resolve_paths(void **state)
{
        (void)state;
        char *p = NULL;
        assert_int_equal(cg_resolve("/sys/fs/cgroup", "/", "/", &p), 0);
        assert_string_equal(p, "/sys/fs/cgroup");
        free(p);
        assert_int_equal(cg_resolve("/sys/fs/cgroup", "/", "/a/b", &p), 0);
        assert_string_equal(p, "/sys/fs/cgroup/a/b");
        free(p);
        assert_int_equal(cg_resolve("/m", "/docker/abc", "/docker/abc/x", &p), 0);
        assert_string_equal(p, "/m/x");
        free(p);
        assert_int_equal(cg_resolve("/m", "/docker/abc", "/docker/abc", &p), 0);
        assert_string_equal(p, "/m");
        free(p);
        assert_int_equal(cg_resolve("/m", "/docker/abc", "/docker/abcd", &p), -EXDEV);
        assert_int_equal(cg_resolve("/m", "/docker/abc", "/", &p), -EXDEV);
        assert_int_equal(cg_resolve("/m", "/", "rel", &p), -EINVAL);
}

static void parse_stat_and_names(void **state)
{
        (void)state;
        uint64_t v = 0;
        const char *st = "1234 (a) b) (c) S 1 1234 1234 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 "
                         "987654 1000 200 18446744073709551615\n";
        assert_int_equal(cg_stat_starttime(st, &v), 0);
        assert_int_equal(v, 987654);
        assert_int_equal(cg_stat_starttime("1 (x) S 1 2 3", &v), -EINVAL);
        assert_int_equal(cg_stat_starttime("no paren", &v), -EINVAL);
        assert_int_equal(cg_pid_starttime(getpid(), &v), 0);
        assert_true(v > 0);
        uint64_t self;
        assert_int_equal(cg_pid_starttime(0, &self), 0);
        assert_int_equal(self, v);

        pid_t pid;
        uint64_t start, ns;
        assert_true(cg_parse_launcher_name("chidori-42-123-4026531836", &pid, &start, &ns));
        assert_int_equal(pid, 42);
        assert_int_equal(start, 123);
        assert_int_equal(ns, 4026531836u);
        static const char *const bad[] = {
                "chidori-launcher", "chidori-42-123",     "chidori-42-123-",  "chidori-042-1-2",
                "chidori-0-1-2",    "chidori-42-1-2-3",   "chidori--1-2-3",   "run-42-1-2",
                "chidori-42-1-2x",  "chidori-9999999999-1-2", "chidori-4 2-1-2", "",
        };
        for (size_t i = 0; i < ARRAY_SIZE(bad); i++)
                if (cg_parse_launcher_name(bad[i], &pid, &start, &ns))
                        fail_msg("'%s' parsed as a launcher name", bad[i]);
}

static void kv_and_words(void **state)
{
        (void)state;
        const char *ev = "low 0\nhigh 3\nmax 17\noom 1\noom_kill 2\noom_group_kill 1\n";
        uint64_t v;
        assert_int_equal(cg_kv_get(ev, "max", &v), 0);
        assert_int_equal(v, 17);
        assert_int_equal(cg_kv_get(ev, "oom", &v), 0);
        assert_int_equal(v, 1);
        assert_int_equal(cg_kv_get(ev, "oom_kill", &v), 0);
        assert_int_equal(v, 2);
        assert_int_equal(cg_kv_get(ev, "oom_group", &v), -ENOENT);
        assert_int_equal(cg_kv_get("oom_kill_disable 0\nunder_oom 0\noom_kill 5", "oom_kill", &v), 0);
        assert_int_equal(v, 5);
        assert_true(cg_has_word("cpuset cpu io memory", "cpu", ' '));
        assert_false(cg_has_word("cpuset io memory", "cpu", ' '));
        assert_false(cg_has_word("", "cpu", ' '));
}

static void banner_text(void **state)
{
        (void)state;
        struct cgroup_host h = { .version = 0, .reason = "no cgroup delegation" };
        char b[128];
        struct cgroup_limits lim = { .memory_bytes = 512ull << 20, .pids_max = 64 };
        cgroup_banner(&h, &lim, b, sizeof(b));
        assert_string_equal(b, "memory ceiling: none (no cgroup delegation)");
        h.version = 2;
        cgroup_banner(&h, &lim, b, sizeof(b));
        assert_string_equal(b, "cgroup2 memory.max=512M pids.max=64");
        h.version = 1;
        lim.cpus = 0.5;
        cgroup_banner(&h, &lim, b, sizeof(b));
        assert_string_equal(b, "cgroup1 memory.limit_in_bytes=512M pids.max=64 cpus=0.5");
        cgroup_banner(&h, NULL, b, sizeof(b));
        assert_string_equal(b, "cgroup1");
        char small[8];
        assert_true(cgroup_banner(&h, &lim, small, sizeof(small)) > 8);
        assert_string_equal(small, "cgroup1");
}

/* ---- detection ------------------------------------------------------------ */

static void detect_this_host(void **state)
{
        struct fx *f = *state;
        struct err *e = NULL;
        assert_int_equal(cgroup_host_detect(NULL, &f->h, &e), 0);
        struct cgroup_info in;
        cgroup_host_describe(f->h, &in);
        print_message("  version %d, delegated %d, reason %s\n  detail: %s\n", in.version,
                      in.delegated, in.reason ? in.reason : "-", in.detail);
        print_message("  cgroup2 mount: %s; note: %s\n", in.v2_mount ? in.v2_mount : "none",
                      in.v2_note ? in.v2_note : "-");
        for (int c = 0; c < CGROUP_CTL_MAX; c++)
                print_message("  %-6s %s %s\n", cgroup_ctl_name(c),
                              in.ctl[c].usable ? "usable at" : "unusable:",
                              in.ctl[c].usable ? in.ctl[c].path : in.ctl[c].why);
        char b[160];
        struct cgroup_limits lim = { .memory_bytes = 512ull << 20, .pids_max = 64 };
        cgroup_banner(f->h, &lim, b, sizeof(b));
        print_message("  banner: %s\n", b);
        assert_string_equal(in.launcher, f->h->launcher);
        assert_true(in.detail && *in.detail);
        if (in.version == 0) {
                assert_non_null(in.reason);
                assert_non_null(strstr(b, "memory ceiling: none ("));
                if (geteuid() != 0)
                        assert_string_equal(in.reason, "no cgroup delegation");
                SKIP("no usable cgroup here: %s", in.reason);
        }
        assert_null(in.reason);
        assert_true(in.delegated);
        assert_true(in.ctl[CGROUP_CTL_MEMORY].usable);
        if (in.version == 1) {
                assert_string_equal(b, "cgroup1 memory.limit_in_bytes=512M pids.max=64");
                if (in.v2_mount) /* hybrid: say why cgroup2 was not used */
                        assert_non_null(strstr(in.v2_note, "memory"));
        } else {
                assert_int_equal(in.version, 2);
                assert_string_equal(b, "cgroup2 memory.max=512M pids.max=64");
        }
}

/* An unprivileged user gets no delegation on a host that did not delegate. */
static void detect_rootless(void **state)
{
        (void)state;
        if (geteuid() != 0)
                SKIP("not root: cannot switch to an unprivileged uid");
        int p[2];
        assert_int_equal(pipe(p), 0);
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                close(p[0]);
                if (setgid(65534) < 0 || setuid(65534) < 0)
                        _exit(2);
                struct cgroup_host *h = NULL;
                if (cgroup_host_detect(NULL, &h, NULL) < 0)
                        _exit(3);
                char b[512];
                int n = snprintf(b, sizeof(b), "%d|%s|%s", cgroup_host_version(h),
                                 cgroup_host_reason(h) ? cgroup_host_reason(h) : "-",
                                 h->detail);
                if (write(p[1], b, (size_t)n) < 0)
                        _exit(4);
                _exit(0);
        }
        close(p[1]);
        char b[512] = "";
        ssize_t n = read(p[0], b, sizeof(b) - 1);
        close(p[0]);
        int st;
        assert_int_equal(waitpid(pid, &st, 0), pid);
        assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
        assert_true(n > 0);
        print_message("  uid 65534: %s\n", b);
        if (b[0] != '0')
                SKIP("uid 65534 has a delegated cgroup here");
        assert_non_null(strstr(b, "|no cgroup delegation|"));
}

static void detect_bad_override(void **state)
{
        (void)state;
        struct cgroup_host *h = NULL;
        struct err *e = NULL;
        expect_err(cgroup_host_detect("relative/path", &h, &e), &e, CGROUP_E_INVALID, "absolute");
        expect_err(cgroup_host_detect("/a/../b", &h, &e), &e, CGROUP_E_INVALID, "'..'");
        expect_err(cgroup_host_detect("/a//b", &h, &e), &e, CGROUP_E_INVALID, NULL);
        e = NULL;
        int rc = cgroup_host_detect("/chidori-test-no-such-cgroup", &h, &e);
        if (rc == 0) { /* no cgroup fs at all: nothing to look in */
                assert_int_equal(cgroup_host_version(h), 0);
                cgroup_host_free(h);
                return;
        }
        expect_err(rc, &e, CGROUP_E_INVALID, "does not exist");
}

/* The override, given as the filesystem path of our own cgroup, lands where
 * the default does. */
static void detect_override_same_as_default(void **state)
{
        struct fx *f = *state;
        struct cgroup_host *h = host(f, 0, false, __func__);
        const char *parent = h->hier[0].parent_fs;
        struct cgroup_host *o = NULL;
        struct err *e = NULL;
        if (cgroup_host_detect(parent, &o, &e) < 0)
                fail_msg("override %s: %s", parent, err_msg(e));
        assert_int_equal(o->version, h->version);
        assert_string_equal(o->hier[0].parent_fs, parent);
        assert_string_equal(o->hier[0].parent_cg, h->hier[0].parent_cg);
        cgroup_host_free(o);
        o = NULL;
        assert_int_equal(cgroup_host_detect(h->hier[0].parent_cg, &o, &e), 0);
        assert_string_equal(o->hier[0].parent_fs, parent);
        cgroup_host_free(o);
}

/* ---- leaves ---------------------------------------------------------------- */

static void run_errors(void **state)
{
        struct fx *f = *state;
        struct err *e = NULL;
        struct cgroup_run *r = NULL;
        struct cgroup_host h0 = { .version = 0, .reason = "no cgroup delegation" };
        expect_err(cgroup_run_create(&h0, "a", NULL, &r, &e), &e, CGROUP_E_UNAVAILABLE,
                   "no cgroup delegation");
        struct cgroup_host *h = host(f, 0, false, __func__);
        static const char *const bad[] = { "", "../x", ".a", "a/b", "a b", "x\n",
                "0123456789012345678901234567890123456789012345678901234567890123456789" };
        for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
                expect_err(cgroup_run_create(h, bad[i], NULL, &r, &e), &e, CGROUP_E_INVALID,
                           "bad run id");
        }
        expect_err(cgroup_run_create(h, NULL, NULL, &r, &e), &e, CGROUP_E_INVALID, NULL);
        assert_int_equal(cgroup_run_create(h, "dup", NULL, &f->run[0], &e), 0);
        expect_err(cgroup_run_create(h, "dup", NULL, &r, &e), &e, CGROUP_E_EXISTS, "run-dup");
        assert_int_equal(cgroup_run_destroy(take_ptr(&f->run[0]), NULL), 0);
        assert_int_equal(cgroup_run_destroy(NULL, NULL), 0);
        int before = count_ours(h);
        for (int c = 0; c < CGROUP_CTL_MAX; c++) {
                if (h->ctl_hier[c] >= 0)
                        continue;
                struct cgroup_limits lim = { 0 };
                if (c == CGROUP_CTL_MEMORY)
                        lim.memory_bytes = 32 * MiB;
                else if (c == CGROUP_CTL_PIDS)
                        lim.pids_max = 8;
                else
                        lim.cpus = 0.5;
                expect_err(cgroup_run_create(h, "x", &lim, &r, &e), &e, CGROUP_E_CONTROLLER,
                           cgroup_ctl_name(c));
        }
        assert_int_equal(count_ours(h), before); /* failures leave nothing */
}

static void oom_kill(void **state)
{
        struct fx *f = *state;
        struct cgroup_host *h = host(f, 0, true, __func__);
        struct err *e = NULL;
        struct cgroup_limits lim = { .memory_bytes = 32 * MiB, .pids_max = 64 };
        if (cgroup_run_create(h, "oom", &lim, &f->run[0], &e) < 0)
                fail_msg("create: %s", err_msg(e));
        double t0 = now_ms();
        pid_t pid = spawn_in(f, f->run[0], touch_mib, (void *)(uintptr_t)96);
        int st = reap(f, pid);
        double t1 = now_ms();
        struct cgroup_stats s;
        assert_int_equal(cgroup_run_stats(f->run[0], &s, &e), 0);
        print_message("  cgroup%d: child %s after %.1f ms; oom_kills %" PRIu64
                      " (known %d), limit hit %d, limit %" PRIu64 ", peak %" PRIu64
                      " (known %d), overshoot %+" PRId64 " bytes, swap limited %d\n",
                      h->version, WIFSIGNALED(st) ? strsignal(WTERMSIG(st)) : "exited", t1 - t0,
                      s.oom_kills, s.oom_known, s.memory_limit_hit, s.memory_limit, s.peak_bytes,
                      s.peak_known, (int64_t)(s.peak_bytes - s.memory_limit), s.swap_limited);
        assert_true(WIFSIGNALED(st));
        assert_int_equal(WTERMSIG(st), SIGKILL);
        assert_int_equal(s.memory_limit, 32 * MiB);
        assert_true(s.memory_limit_hit);
        if (s.oom_known) {
                assert_true(s.oom_killed);
                assert_true(s.oom_kills >= 1);
        }
        if (s.peak_known)
                assert_true(s.peak_bytes <= s.memory_limit + 4096);
        assert_false(s.pids_limit_hit);
        assert_int_equal(cgroup_run_destroy(take_ptr(&f->run[0]), &e), 0);
}

static void under_limit_not_killed(void **state)
{
        struct fx *f = *state;
        struct cgroup_host *h = host(f, 0, true, __func__);
        struct err *e = NULL;
        struct cgroup_limits lim = { .memory_bytes = 32 * MiB };
        if (cgroup_run_create(h, "fits", &lim, &f->run[0], &e) < 0)
                fail_msg("create: %s", err_msg(e));
        pid_t pid = spawn_in(f, f->run[0], touch_mib, (void *)(uintptr_t)8);
        int st = reap(f, pid);
        assert_true(WIFEXITED(st));
        assert_int_equal(WEXITSTATUS(st), 0);
        struct cgroup_stats s;
        assert_int_equal(cgroup_run_stats(f->run[0], &s, &e), 0);
        print_message("  cgroup%d: 8 MiB touched under 32 MiB: peak %" PRIu64
                      " (%.1f MiB), oom_kills %" PRIu64 "\n",
                      h->version, s.peak_bytes, (double)s.peak_bytes / MiB, s.oom_kills);
        assert_false(s.oom_killed);
        assert_int_equal(s.oom_kills, 0);
        if (s.peak_known)
                assert_true(s.peak_bytes >= 8 * MiB && s.peak_bytes <= 32 * MiB);
        assert_int_equal(cgroup_run_destroy(take_ptr(&f->run[0]), &e), 0);
}

/* A process tree that reports every pid on a pipe, then sleeps (bounded by
 * alarm so a broken test cannot leave it behind for long). */
static int report_fd = -1;

static void report_self(void)
{
        pid_t me = getpid();
        if (write(report_fd, &me, sizeof(me)) != sizeof(me))
                _exit(9);
}

static int fork_bomb(void *arg)
{
        (void)arg;
        report_self();
        int ok = 0, refused = 0;
        double end = now_ms() + 5000;
        for (int i = 0; i < 64 && now_ms() < end; i++) {
                pid_t p = fork();
                if (p == 0) {
                        report_self();
                        alarm(20);
                        pause();
                        _exit(0);
                }
                if (p > 0)
                        ok++;
                else if (errno == EAGAIN)
                        refused++;
        }
        /* exit code: how many forks the kernel refused (0 = limit never hit) */
        return refused > 100 ? 100 : refused;
}

static int read_pids(struct fx *f, int fd, int want_at_least, double ms)
{
        int n = 0;
        double end = now_ms() + ms;
        while (now_ms() < end && f->npidfd < (int)ARRAY_SIZE(f->pidfd)) {
                struct pollfd p = { .fd = fd, .events = POLLIN };
                if (poll(&p, 1, n >= want_at_least ? 50 : 200) != 1)
                        if (n >= want_at_least)
                                break;
                pid_t pid;
                if (!(p.revents & POLLIN))
                        continue;
                if (read(fd, &pid, sizeof(pid)) != sizeof(pid))
                        break;
                n++;
                int pfd = (int)syscall(SYS_pidfd_open, pid, 0);
                if (pfd < 0 && errno == ESRCH)
                        continue; /* already gone (the bomb's root exits) */
                assert_true(pfd >= 0);
                f->pidfd[f->npidfd++] = pfd;
        }
        return n;
}

static void pids_limit(void **state)
{
        struct fx *f = *state;
        struct cgroup_host *h = host(f, 0, false, __func__);
        if (h->ctl_hier[CGROUP_CTL_PIDS] < 0)
                SKIP("pids controller unusable: %s", h->ctl_why[CGROUP_CTL_PIDS]);
        struct err *e = NULL;
        struct cgroup_limits lim = { .pids_max = 16 };
        if (cgroup_run_create(h, "bomb", &lim, &f->run[0], &e) < 0)
                fail_msg("create: %s", err_msg(e));
        int p[2];
        assert_int_equal(pipe2(p, O_CLOEXEC), 0);
        report_fd = p[1];
        pid_t pid = spawn_in(f, f->run[0], fork_bomb, NULL);
        close(p[1]);
        int st = reap(f, pid);
        int n = read_pids(f, p[0], 16, 3000);
        close(p[0]);
        struct cgroup_stats s;
        assert_int_equal(cgroup_run_stats(f->run[0], &s, &e), 0);
        print_message("  cgroup%d: pids.max=16: %d processes ran, %d forks refused, limit hit %d\n",
                      h->version, n, WIFEXITED(st) ? WEXITSTATUS(st) : -1, s.pids_limit_hit);
        assert_true(WIFEXITED(st));
        assert_true(WEXITSTATUS(st) > 0);
        assert_true(n <= 16);
        assert_true(s.pids_limit_hit);
        assert_int_equal(s.pids_limit, 16);
        assert_int_equal(cgroup_run_destroy(take_ptr(&f->run[0]), &e), 0);
        for (int i = 0; i < f->npidfd; i++)
                assert_true(pidfd_exited(f->pidfd[i], 0)); /* nobody survived */
}

static int tree(void *arg)
{
        int depth = (int)(uintptr_t)arg;
        report_self();
        for (int i = 0; i < 2 && depth > 0; i++) {
                pid_t p = fork();
                if (p == 0) {
                        tree((void *)(uintptr_t)(depth - 1));
                        alarm(20);
                        pause();
                        _exit(0);
                }
        }
        alarm(20);
        pause();
        return 0;
}

static void kill_tree(struct fx *f, const char *test, bool kill_file)
{
        struct cgroup_host *h = f->h;
        h->no_kill_file = !kill_file;
        struct err *e = NULL;
        if (cgroup_run_create(h, "kill", NULL, &f->run[0], &e) < 0)
                fail_msg("create: %s", err_msg(e));
        int p[2];
        assert_int_equal(pipe2(p, O_CLOEXEC), 0);
        report_fd = p[1];
        pid_t pid = spawn_in(f, f->run[0], tree, (void *)(uintptr_t)2); /* 1+2+4 = 7 */
        close(p[1]);
        int n = read_pids(f, p[0], 7, 3000);
        close(p[0]);
        assert_int_equal(n, 7);
        double t0 = now_ms();
        assert_int_equal(cgroup_run_kill(f->run[0], &e), 0);
        double t1 = now_ms();
        for (int i = 0; i < f->npidfd; i++)
                assert_true(pidfd_exited(f->pidfd[i], 2000));
        double t2 = now_ms();
        int st = reap(f, pid);
        assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
        print_message("  %s: cgroup%d %s: kill %.3f ms, all 7 gone after %.3f ms\n", test,
                      h->version, kill_file && h->version == 2 ? "cgroup.kill" : "pid by pid",
                      t1 - t0, t2 - t0);
        assert_int_equal(cgroup_run_kill(f->run[0], &e), 0); /* again: harmless */
        assert_int_equal(cgroup_run_destroy(take_ptr(&f->run[0]), &e), 0);
}

static void kill_leaves_nothing(void **state)
{
        struct fx *f = *state;
        host(f, 0, false, __func__);
        kill_tree(f, __func__, true);
}

/* v2 before 5.14 (no cgroup.kill): the pid-by-pid path. */
static void kill_without_kill_file(void **state)
{
        struct fx *f = *state;
        struct cgroup_host *h = host(f, 0, false, __func__);
        if (h->version != 2) {
                cgroup_host_free(f->h);
                f->h = NULL;
                h = host(f, 2, false, __func__);
        }
        kill_tree(f, __func__, false);
}

static void cpu_limit(void **state)
{
        struct fx *f = *state;
        struct cgroup_host *h = host(f, 0, false, __func__);
        if (h->ctl_hier[CGROUP_CTL_CPU] < 0)
                SKIP("cpu controller unusable: %s", h->ctl_why[CGROUP_CTL_CPU]);
        struct err *e = NULL;
        struct cgroup_limits lim = { .cpus = 0.5 };
        if (cgroup_run_create(h, "cpu", &lim, &f->run[0], &e) < 0)
                fail_msg("create: %s", err_msg(e));
        struct cgroup_run *r = f->run[0];
        int fd = r->leaf_fd[h->ctl_hier[CGROUP_CTL_CPU]];
        char *s = NULL;
        if (h->version == 2) {
                assert_int_equal(cg_read_at(fd, "cpu.max", &s), 0);
                assert_string_equal(s, "50000 100000\n");
        } else {
                assert_int_equal(cg_read_at(fd, "cpu.cfs_quota_us", &s), 0);
                assert_string_equal(s, "50000\n");
                free(s);
                assert_int_equal(cg_read_at(fd, "cpu.cfs_period_us", &s), 0);
                assert_string_equal(s, "100000\n");
        }
        free(s);
        assert_int_equal(cgroup_run_destroy(take_ptr(&f->run[0]), &e), 0);
}

/* The v2 mechanics (CLONE_INTO_CGROUP, cgroup.kill, populated, rmdir) on
 * whatever cgroup2 hierarchy exists, even one without controllers. */
static int print_cgroup(void *arg)
{
        (void)arg;
        char b[512];
        int fd = open("/proc/self/cgroup", O_RDONLY);
        ssize_t n = fd >= 0 ? read(fd, b, sizeof(b)) : -1;
        if (n > 0 && write(report_fd, b, (size_t)n) != n)
                return 2;
        pause();
        return 0;
}

/* ---- the run tree: a place below the run for a child launcher ---- */

struct enter_arg {
        const char *enter;
        bool bomb;
};

/* Fork a child that enters `enter` itself (as sandbox/child.c does), then
 * reports its /proc/self/cgroup, or fork-bombs. */
static pid_t spawn_entering(struct fx *f, const char *enter, bool bomb)
{
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                struct err *e = NULL;
                if (cgroup_enter(enter, &e) < 0) {
                        fprintf(stderr, "cgroup_enter: %s\n", err_msg(e));
                        _exit(120);
                }
                _exit(bomb ? fork_bomb(NULL) : print_cgroup(NULL));
        }
        track_kid(f, pid);
        return pid;
}

static void tree_places(struct fx *f, int force, const char *test)
{
        struct cgroup_host *h = host(f, force, false, test);
        struct err *e = NULL;
        struct cgroup_limits lim = { .pids_max = h->ctl_hier[CGROUP_CTL_PIDS] >= 0 ? 16 : 0 };
        if (cgroup_run_create(h, "tree", &lim, &f->run[0], &e) < 0)
                fail_msg("create: %s", err_msg(e));
        struct cgroup_run *r = f->run[0];
        char *enter = NULL;
        if (cgroup_run_child_create(r, "call-1", &enter, &e) < 0)
                fail_msg("child: %s", err_msg(e));
        /* one directory per hierarchy the run uses; on v2 the child's own leaf */
        size_t lines = 1;
        for (const char *c = enter; *c; c++)
                lines += *c == '\n';
        size_t used = 0;
        for (size_t i = 0; i < h->nhier; i++)
                used += r->leaf_fd[i] >= 0;
        assert_int_equal(lines, used);
        assert_non_null(strstr(enter, h->version == 2 ? "/call-1/" CG_LAUNCHER_LEAF : "/call-1"));
        char *again = NULL;
        expect_err(cgroup_run_child_create(r, "call-1", &again, &e), &e, CGROUP_E_EXISTS, "call-1");
        expect_err(cgroup_run_child_create(r, "../x", &again, &e), &e, CGROUP_E_INVALID, NULL);
        expect_err(cgroup_enter("relative/dir", &e), &e, CGROUP_E_INVALID, "not a directory on a cgroup");
        expect_err(cgroup_enter("/tmp", &e), &e, CGROUP_E_INVALID, "not a directory on a cgroup");

        /* the child moves itself below the run's node */
        int p[2];
        assert_int_equal(pipe2(p, O_CLOEXEC), 0);
        report_fd = p[1];
        pid_t pid = spawn_entering(f, enter, false);
        close(p[1]);
        char b[1024] = "";
        assert_true(read(p[0], b, sizeof(b) - 1) > 0);
        close(p[0]);
        for (size_t i = 0; i < h->nhier; i++) {
                if (r->leaf_fd[i] < 0)
                        continue;
                char want[600];
                snprintf(want, sizeof(want), ":%s/call-1%s\n", r->leaf_cg[i],
                         h->hier[i].v2 ? "/" CG_LAUNCHER_LEAF : "");
                if (!strstr(b, want))
                        fail_msg("child's /proc/self/cgroup:\n%swant %s", b, want);
        }
        /* removing the place kills what is in it */
        assert_int_equal(cgroup_run_child_remove(r, "call-1", &e), 0);
        int st = reap(f, pid);
        assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
        assert_int_equal(cgroup_run_child_remove(r, "call-1", &e), 0); /* gone already: fine */
        free(enter);

        /* the node's pids.max holds for what a child place runs */
        if (lim.pids_max) {
                assert_int_equal(cgroup_run_child_create(r, "call-2", &enter, &e), 0);
                assert_int_equal(pipe2(p, O_CLOEXEC), 0);
                report_fd = p[1];
                pid = spawn_entering(f, enter, true);
                close(p[1]);
                st = reap(f, pid);
                int n = read_pids(f, p[0], 16, 3000);
                close(p[0]);
                print_message("  cgroup%d: a fork bomb in <run>/call-2 under the node's pids.max=16: %d ran\n",
                              h->version, n);
                assert_true(WIFEXITED(st) && WEXITSTATUS(st) > 0); /* forks were refused */
                assert_true(n <= 16);
                free(enter);
        }
        /* destroying the run takes the places along */
        assert_int_equal(cgroup_run_destroy(take_ptr(&f->run[0]), &e), 0);
        for (int i = 0; i < f->npidfd; i++)
                assert_true(pidfd_exited(f->pidfd[i], 0));
}

static void tree_child_places(void **state)
{
        tree_places(*state, 0, __func__);
}

static void tree_child_places_v2(void **state)
{
        tree_places(*state, 2, __func__);
}

/* A second worker of a run tree (a nested agent's box through the
 * broker): its run node below the first's, its own limits, the first's
 * bounding it too; destroying the first takes it along. */
static pid_t fork_sleeper(struct fx *f);

static void tree_runs(struct fx *f, int force, const char *test)
{
        struct cgroup_host *h = host(f, force, false, test);
        if (h->ctl_hier[CGROUP_CTL_PIDS] < 0)
                SKIP("pids controller unusable: %s", h->ctl_why[CGROUP_CTL_PIDS]);
        struct err *e = NULL;
        struct cgroup_limits top = { .pids_max = 16 }, own = { .pids_max = 64 };
        if (cgroup_run_create(h, "tree", &top, &f->run[0], &e) < 0)
                fail_msg("create: %s", err_msg(e));
        expect_err(cgroup_run_create_below(NULL, "tree-2", &own, &f->run[1], &e), &e, CGROUP_E_INVALID, NULL);
        if (cgroup_run_create_below(f->run[0], "tree-2", &own, &f->run[1], &e) < 0)
                fail_msg("create below: %s", err_msg(e));
        struct cgroup_run *r = f->run[0], *c = f->run[1];
        for (size_t i = 0; i < h->nhier; i++) {
                if (c->leaf_fd[i] < 0)
                        continue;
                char want[600];
                snprintf(want, sizeof(want), "%s/run-tree-2", r->leaf_cg[i]);
                assert_string_equal(c->leaf_cg[i], want);
        }
        /* its own pids.max is 64; the node above holds it at 16 */
        int p[2];
        assert_int_equal(pipe2(p, O_CLOEXEC), 0);
        report_fd = p[1];
        pid_t pid = spawn_in(f, c, fork_bomb, NULL);
        close(p[1]);
        int st = reap(f, pid);
        int n = read_pids(f, p[0], 16, 3000);
        close(p[0]);
        print_message("  cgroup%d: a fork bomb in <run>/run-tree-2 (pids.max=64) under the node's 16: %d ran\n",
                      h->version, n);
        assert_true(WIFEXITED(st) && WEXITSTATUS(st) > 0);
        assert_true(n <= 16);
        /* one alive in it when the first goes: killed, its node removed */
        pid = fork_sleeper(f);
        assert_int_equal(cgroup_run_attach(c, pid, &e), 0);
        assert_int_equal(cgroup_run_destroy(take_ptr(&f->run[0]), &e), 0);
        st = reap(f, pid);
        assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
        assert_int_equal(cgroup_run_destroy(take_ptr(&f->run[1]), &e), 0); /* gone already: fine */
}

static void tree_run_below(void **state)
{
        tree_runs(*state, 0, __func__);
}

static void tree_run_below_v2(void **state)
{
        tree_runs(*state, 2, __func__);
}

static void v2_clone_into_cgroup(void **state)
{
        struct fx *f = *state;
        struct cgroup_host *h = host(f, 2, false, __func__);
        struct err *e = NULL;
        if (cgroup_run_create(h, "v2", NULL, &f->run[0], &e) < 0)
                fail_msg("create: %s", err_msg(e));
        assert_true(cgroup_run_clone_fd(f->run[0]) >= 0);
        int p[2];
        assert_int_equal(pipe2(p, O_CLOEXEC), 0);
        report_fd = p[1];
        pid_t pid = spawn_in(f, f->run[0], print_cgroup, NULL);
        close(p[1]);
        char b[512] = "";
        assert_true(read(p[0], b, sizeof(b) - 1) > 0);
        close(p[0]);
        char want[600];
        snprintf(want, sizeof(want), "0::%s/" CG_BOX_LEAF "\n", f->run[0]->leaf_cg[0]);
        if (!strstr(b, want))
                fail_msg("child's /proc/self/cgroup:\n%swant %s", b, want);
        print_message("  born in %s (controllers: %s)\n", f->run[0]->leaf_cg[0],
                      h->hier[0].ctls ? "some" : "none on this hierarchy");
        assert_int_equal(cgroup_run_destroy(take_ptr(&f->run[0]), &e), 0);
        int st = reap(f, pid);
        assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
}

static void cycles_leave_nothing(void **state)
{
        struct fx *f = *state;
        struct cgroup_host *h = host(f, 0, false, __func__);
        int before = count_ours(h), fds = count_fds();
        struct err *e = NULL;
        struct cgroup_limits lim = { .memory_bytes = h->ctl_hier[0] >= 0 ? 64 * MiB : 0,
                                     .pids_max = h->ctl_hier[1] >= 0 ? 32 : 0 };
        char id[32];
        for (int i = 0; i < 200; i++) {
                snprintf(id, sizeof(id), "cycle-%d", i);
                if (cgroup_run_create(h, id, &lim, &f->run[0], &e) < 0)
                        fail_msg("create %d: %s", i, err_msg(e));
                if (cgroup_run_destroy(take_ptr(&f->run[0]), &e) < 0)
                        fail_msg("destroy %d: %s", i, err_msg(e));
        }
        /* only the launcher directory, one per hierarchy used, and its fd */
        int used = 0;
        for (size_t i = 0; i < h->nhier; i++)
                used += h->hier[i].launcher_fd >= 0;
        assert_true(used >= 1);
        assert_int_equal(count_ours(h), before + used);
        assert_int_equal(count_fds(), fds + used);
        cgroup_host_free(take_ptr(&f->h));
        struct cgroup_host *again = host(f, 0, false, __func__);
        assert_int_equal(count_ours(again), before);
        print_message("  cgroup%d: 200 create/destroy cycles, %d chidori dirs before and after\n",
                      again->version, before);
}

/* serve mode: several threads create and destroy runs on one host */
struct worker_arg {
        struct cgroup_host *h;
        int n;
        int failures;
        char msg[256];
};

static void *cycle_worker(void *p)
{
        struct worker_arg *a = p;
        struct cgroup_limits lim = { .pids_max = a->h->ctl_hier[CGROUP_CTL_PIDS] >= 0 ? 8 : 0 };
        for (int i = 0; i < 25; i++) {
                char id[32];
                snprintf(id, sizeof(id), "t%d-%d", a->n, i);
                struct cgroup_run *r = NULL;
                struct err *e = NULL;
                if (cgroup_run_create(a->h, id, &lim, &r, &e) < 0 ||
                    cgroup_run_destroy(r, &e) < 0) {
                        a->failures++;
                        snprintf(a->msg, sizeof(a->msg), "%s", err_msg(e));
                        err_free(e);
                }
        }
        return NULL;
}

static void concurrent_runs(void **state)
{
        struct fx *f = *state;
        struct cgroup_host *h = host(f, 0, false, __func__);
        int before = count_ours(h);
        pthread_t t[4];
        struct worker_arg a[4];
        for (int i = 0; i < 4; i++) {
                a[i] = (struct worker_arg){ .h = h, .n = i };
                assert_int_equal(pthread_create(&t[i], NULL, cycle_worker, &a[i]), 0);
        }
        for (int i = 0; i < 4; i++) {
                assert_int_equal(pthread_join(t[i], NULL), 0);
                if (a[i].failures)
                        fail_msg("thread %d: %d failures, last: %s", i, a[i].failures, a[i].msg);
        }
        cgroup_host_free(take_ptr(&f->h));
        struct cgroup_host *again = host(f, 0, false, __func__);
        assert_int_equal(count_ours(again), before);
}

/* ---- stale cleanup --------------------------------------------------------- */

static void fake_launcher(struct fx *f, const char *parent, const char *name, bool with_leaf)
{
        char path[4200];
        snprintf(path, sizeof(path), "%s/%s", parent, name);
        assert_int_equal(mkdir(path, 0755), 0);
        f->dirs[f->ndirs++] = strdup(path);
        if (with_leaf) {
                snprintf(path, sizeof(path), "%s/%s/run-x", parent, name);
                assert_int_equal(mkdir(path, 0755), 0);
        }
}

static bool exists_in(const char *parent, const char *name)
{
        char path[4200];
        snprintf(path, sizeof(path), "%s/%s", parent, name);
        struct stat st;
        return stat(path, &st) == 0;
}

static pid_t fork_sleeper(struct fx *f)
{
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                alarm(20);
                pause();
                _exit(0);
        }
        track_kid(f, pid);
        return pid;
}

static void stale_cleanup(void **state)
{
        struct fx *f = *state;
        struct cgroup_host *h = host(f, 0, false, __func__);
        uint64_t ns = h->pidns, st;
        /* dead: a child that has exited and been reaped */
        pid_t dead = fork_sleeper(f);
        assert_int_equal(cg_pid_starttime(dead, &st), 0);
        kill(dead, SIGKILL);
        reap(f, dead);
        char n_dead[96], n_alive[96], n_reused[96], n_foreign[96];
        snprintf(n_dead, sizeof(n_dead), CG_PREFIX "%d-%" PRIu64 "-%" PRIu64, (int)dead, st, ns);
        /* alive: a sleeping child with its true start time */
        pid_t alive = fork_sleeper(f);
        assert_int_equal(cg_pid_starttime(alive, &st), 0);
        snprintf(n_alive, sizeof(n_alive), CG_PREFIX "%d-%" PRIu64 "-%" PRIu64, (int)alive, st, ns);
        /* reused: a live pid with another start time */
        snprintf(n_reused, sizeof(n_reused), CG_PREFIX "%d-%" PRIu64 "-%" PRIu64, (int)alive,
                 st + 1, ns);
        /* another pid namespace: never judged */
        snprintf(n_foreign, sizeof(n_foreign), CG_PREFIX "%d-1-%" PRIu64, (int)dead, ns + 1);
        const char *keep[] = { n_alive, n_foreign, "chidori-notours", CG_LAUNCHER_LEAF "-x" };
        for (size_t i = 0; i < h->nhier; i++) {
                const char *parent = h->hier[i].parent_fs;
                fake_launcher(f, parent, n_dead, true);
                fake_launcher(f, parent, n_reused, false);
                for (size_t k = 0; k < ARRAY_SIZE(keep); k++)
                        fake_launcher(f, parent, keep[k], k == 0);
        }
        /* a process the dead launcher left behind in its run leaf */
        pid_t orphan = fork_sleeper(f);
        char buf[24];
        snprintf(buf, sizeof(buf), "%d", (int)orphan);
        for (size_t i = 0; i < h->nhier; i++) {
                char path[4200];
                snprintf(path, sizeof(path), "%s/%s/run-x/cgroup.procs", h->hier[i].parent_fs,
                         n_dead);
                int fd = open(path, O_WRONLY | O_CLOEXEC);
                assert_true(fd >= 0);
                assert_int_equal(write(fd, buf, strlen(buf)), (ssize_t)strlen(buf));
                close(fd);
        }
        struct err *e = NULL;
        int n = cgroup_cleanup_stale(h, &e);
        if (n < 0)
                fail_msg("cleanup: %s", err_msg(e));
        assert_int_equal(n, 2);
        for (size_t i = 0; i < h->nhier; i++) {
                const char *parent = h->hier[i].parent_fs;
                assert_false(exists_in(parent, n_dead));
                assert_false(exists_in(parent, n_reused));
                for (size_t k = 0; k < ARRAY_SIZE(keep); k++)
                        assert_true(exists_in(parent, keep[k]));
        }
        int stt = reap(f, orphan);
        assert_true(WIFSIGNALED(stt) && WTERMSIG(stt) == SIGKILL);
        assert_int_equal(cgroup_cleanup_stale(h, &e), 0); /* nothing left to do */
        print_message("  cgroup%d: removed %d stale launcher dirs (dead pid, reused pid), "
                      "kept live/foreign/other names; the orphan was killed\n",
                      h->version, n);
}

/* ---- costs ------------------------------------------------------------------ */

static pid_t fork_waiter(struct fx *f, int *ret_go)
{
        int go[2];
        assert_int_equal(pipe2(go, O_CLOEXEC), 0);
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                char c;
                close(go[1]);
                (void)!read(go[0], &c, 1);
                _exit(0);
        }
        close(go[0]);
        track_kid(f, pid);
        *ret_go = go[1];
        return pid;
}

static void costs(struct fx *f, int force, const char *test)
{
        struct cgroup_host *h = host(f, force, false, test);
        struct err *e = NULL;
        struct cgroup_limits lim = { .memory_bytes = h->ctl_hier[0] >= 0 ? 256 * MiB : 0,
                                     .pids_max = h->ctl_hier[1] >= 0 ? 64 : 0 };
        if (cgroup_host_prepare(h, &lim, &e) < 0)
                fail_msg("prepare: %s", err_msg(e));
        enum { N = 50, NCOLD = 8 };
        double create[N], attach[N], destroy[N], total[N];
        for (int i = 0; i < N; i++) {
                int go;
                pid_t pid = fork_waiter(f, &go);
                char id[16];
                snprintf(id, sizeof(id), "c%d", i);
                double t0 = now_ms();
                if (cgroup_run_create(h, id, &lim, &f->run[0], &e) < 0)
                        fail_msg("create: %s", err_msg(e));
                double t1 = now_ms();
                if (cgroup_run_attach(f->run[0], pid, &e) < 0)
                        fail_msg("attach: %s", err_msg(e));
                double t2 = now_ms();
                if (cgroup_run_destroy(take_ptr(&f->run[0]), &e) < 0)
                        fail_msg("destroy: %s", err_msg(e));
                double t3 = now_ms();
                create[i] = t1 - t0, attach[i] = t2 - t1, destroy[i] = t3 - t2, total[i] = t3 - t0;
                close(go);
                reap(f, pid);
        }
        print_message("  cgroup%d back to back, median of %d: create %.3f ms, attach %.3f ms, "
                      "destroy (kill+wait+rmdir) %.3f ms, total %.3f ms\n",
                      h->version, N, median(create, N), median(attach, N), median(destroy, N),
                      median(total, N));
        /* attach alone, cold (no migration for 100 ms) and hot (right after one) */
        assert_int_equal(cgroup_run_create(h, "a", &lim, &f->run[0], &e), 0);
        assert_int_equal(cgroup_run_create(h, "b", &lim, &f->run[1], &e), 0);
        int go;
        pid_t pid = fork_waiter(f, &go);
        double cold[NCOLD], hot[N], cold_total[NCOLD];
        for (int i = 0; i < NCOLD; i++) {
                usleep(100000);
                double t0 = now_ms();
                assert_int_equal(cgroup_run_attach(f->run[i % 2], pid, &e), 0);
                cold[i] = now_ms() - t0;
        }
        for (int i = 0; i < N; i++) {
                double t0 = now_ms();
                assert_int_equal(cgroup_run_attach(f->run[i % 2], pid, &e), 0);
                hot[i] = now_ms() - t0;
        }
        close(go);
        reap(f, pid);
        assert_int_equal(cgroup_run_destroy(take_ptr(&f->run[0]), &e), 0);
        assert_int_equal(cgroup_run_destroy(take_ptr(&f->run[1]), &e), 0);
        /* the whole cycle when launches are sparse (a CLI run per process) */
        for (int i = 0; i < NCOLD; i++) {
                int g;
                pid_t p = fork_waiter(f, &g);
                usleep(100000);
                double t0 = now_ms();
                assert_int_equal(cgroup_run_create(h, "sparse", &lim, &f->run[0], &e), 0);
                assert_int_equal(cgroup_run_attach(f->run[0], p, &e), 0);
                assert_int_equal(cgroup_run_destroy(take_ptr(&f->run[0]), &e), 0);
                cold_total[i] = now_ms() - t0;
                close(g);
                reap(f, p);
        }
        int used = 0;
        for (size_t i = 0; i < h->nhier; i++)
                used += h->hier[i].launcher_fd >= 0;
        double cold_med = median(cold, NCOLD), cold_max = cold[NCOLD - 1];
        print_message("  cgroup%d attach (%d hierarch%s): cold median %.3f ms (max %.3f) over %d, "
                      "hot median %.3f ms over %d; sparse create+attach+destroy median %.3f ms\n",
                      h->version, used, used == 1 ? "y" : "ies", cold_med, cold_max, NCOLD,
                      median(hot, N), N, median(cold_total, NCOLD));
        if (h->version != 2)
                return;
        /* v2: clone3 straight into the leaf instead of a migration */
        double born[NCOLD];
        assert_int_equal(cgroup_run_create(h, "clone", &lim, &f->run[0], &e), 0);
        for (int i = 0; i < NCOLD; i++) {
                usleep(100000);
                struct clone_args_ ca = { .flags = CLONE_INTO_CGROUP_, .exit_signal = SIGCHLD,
                                          .cgroup = (uint64_t)cgroup_run_clone_fd(f->run[0]) };
                double t0 = now_ms();
                pid_t c = (pid_t)syscall(SYS_clone3, &ca, sizeof(ca));
                if (c == 0)
                        _exit(0);
                born[i] = now_ms() - t0;
                assert_true(c > 0);
                track_kid(f, c);
                reap(f, c);
        }
        int g2;
        pid_t p2 = fork_waiter(f, &g2);
        double fk[NCOLD];
        close(g2);
        reap(f, p2);
        for (int i = 0; i < NCOLD; i++) {
                usleep(100000);
                double t0 = now_ms();
                pid_t c = fork();
                if (c == 0)
                        _exit(0);
                fk[i] = now_ms() - t0;
                track_kid(f, c);
                reap(f, c);
        }
        print_message("  cgroup2 clone3(CLONE_INTO_CGROUP) cold median %.3f ms vs plain fork %.3f ms\n",
                      median(born, NCOLD), median(fk, NCOLD));
        assert_int_equal(cgroup_run_destroy(take_ptr(&f->run[0]), &e), 0);
}

static void costs_default(void **state)
{
        costs(*state, 0, __func__);
}

static void costs_v2_mechanics(void **state)
{
        struct fx *f = *state;
        struct cgroup_host *h = host(f, 0, false, __func__);
        if (h->version == 2)
                SKIP("the default already is cgroup2 (measured in costs_default)");
        cgroup_host_free(take_ptr(&f->h));
        costs(f, 2, __func__);
}

/* Leftovers of an earlier run of this program that crashed are stale now. */
static int group_setup(void **state)
{
        (void)state;
        for (int force = 1; force <= 2; force++) {
                struct cgroup_host *h = NULL;
                struct cg_detect_opts o = { .force_version = force };
                if (cg_host_detect_opts(&o, &h, NULL) == 0 && h->version)
                        (void)cgroup_cleanup_stale(h, NULL);
                cgroup_host_free(h);
        }
        return 0;
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, fx_setup, fx_teardown)

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(parse_size_ok),
                cmocka_unit_test(parse_size_errors),
                cmocka_unit_test(parse_cpus),
                cmocka_unit_test(format_size),
                cmocka_unit_test(parse_mountinfo),
                cmocka_unit_test(parse_proc_cgroup),
                cmocka_unit_test(resolve_paths),
                cmocka_unit_test(parse_stat_and_names),
                cmocka_unit_test(kv_and_words),
                cmocka_unit_test(banner_text),
                T(detect_this_host),
                cmocka_unit_test(detect_rootless),
                cmocka_unit_test(detect_bad_override),
                T(detect_override_same_as_default),
                T(run_errors),
                T(oom_kill),
                T(under_limit_not_killed),
                T(pids_limit),
                T(kill_leaves_nothing),
                T(kill_without_kill_file),
                T(cpu_limit),
                T(v2_clone_into_cgroup),
                T(tree_child_places),
                T(tree_child_places_v2),
                T(tree_run_below),
                T(tree_run_below_v2),
                T(cycles_leave_nothing),
                T(concurrent_runs),
                T(stale_cleanup),
                T(costs_default),
                T(costs_v2_mechanics),
        };
        /* CGROUP_TEST_FILTER=oom_* runs a subset (cmocka glob) */
        if (getenv("CGROUP_TEST_FILTER"))
                cmocka_set_test_filter(getenv("CGROUP_TEST_FILTER"));
        return cmocka_run_group_tests(tests, group_setup, NULL);
}
