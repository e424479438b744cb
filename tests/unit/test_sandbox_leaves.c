/* tests/unit/test_sandbox_leaves.c — sandbox/netns/netns.c, sandbox/landlock.c and
 * sandbox/caps.c, each proved both ways: the attack fails with the layer and
 * succeeds in a child without it.
 *
 * Every probe runs in a forked child (entering a new user/net namespace
 * where needed) that reports back over a pipe in a fixed struct, so the test
 * process itself is never confined.  Children never call cmocka and always
 * leave with _exit().  A test needing a kernel feature this host lacks skips
 * and says why.  The last test prints the median cost of each call.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/capability.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/syscall.h>

#include "common/err.h"
#include "sandbox/caps.h"
#include "sandbox/landlock.h"
#include "sandbox/netns/netns.h"

#define NV 64
#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))
#define BENCH_N 50

/* What a child sends back.  v[] holds probe results: 0 = the operation
 * worked, else the errno it failed with (or a value, as each test says). */
struct report {
        int skip;      /* the child could not set up (reason in msg) */
        int rc;        /* return of the function under test */
        int errnum;    /* err->errnum when rc < 0 */
        long long v[NV];
        char msg[512]; /* err_msg() or skip reason */
        char s1[256];
        char s2[256];
};

typedef void (*child_fn)(void *arg, struct report *r);

/* Fixtures shared by all tests (made once in group setup). */
static struct {
        char dir[64];      /* mkdtemp */
        char rw[128];      /* dir/rw: the read-write path */
        char other[128];   /* dir/other: listed nowhere */
        char secret[160];  /* dir/other/secret */
        char target[160];  /* dir/other/target */
        char truebin[160]; /* dir/rw/true: a copy of /usr/bin/true */
        int tcp_fd;        /* listener on the host's 127.0.0.1 */
        int tcp_port;
        int unix_fd;       /* listener on an abstract unix socket */
        struct sockaddr_un unix_addr;
        socklen_t unix_len;
} fx = {.tcp_fd = -1, .unix_fd = -1};

/* ---- helpers usable in children (no cmocka there) ---- */

static int write_all(int fd, const void *buf, size_t len)
{
        const char *p = buf;
        while (len) {
                ssize_t n = write(fd, p, len);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        return -1;
                p += n;
                len -= (size_t)n;
        }
        return 0;
}

static ssize_t read_all(int fd, void *buf, size_t len)
{
        char *p = buf;
        size_t got = 0;
        while (got < len) {
                ssize_t n = read(fd, p + got, len - got);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        break;
                got += (size_t)n;
        }
        return (ssize_t)got;
}

static int write_str(const char *path, const char *s)
{
        int fd = open(path, O_WRONLY | O_CLOEXEC);
        if (fd < 0)
                return -1;
        int r = write_all(fd, s, strlen(s));
        int e = errno;
        close(fd);
        errno = e;
        return r;
}

/* unshare(CLONE_NEWUSER | extra) and map ourselves to root in it. */
static int enter_userns(int extra, struct report *r)
{
        uid_t uid = getuid();
        gid_t gid = getgid();
        char map[64];
        if (unshare(CLONE_NEWUSER | extra) < 0) {
                r->skip = 1;
                snprintf(r->msg, sizeof(r->msg), "unshare(CLONE_NEWUSER%s): %s (user namespaces unavailable)",
                         extra ? "|extra" : "", strerror(errno));
                return -1;
        }
        if (write_str("/proc/self/setgroups", "deny") < 0 && errno != ENOENT)
                goto fail;
        snprintf(map, sizeof(map), "0 %u 1", (unsigned)uid);
        if (write_str("/proc/self/uid_map", map) < 0)
                goto fail;
        snprintf(map, sizeof(map), "0 %u 1", (unsigned)gid);
        if (write_str("/proc/self/gid_map", map) < 0)
                goto fail;
        return 0;
fail:
        r->skip = 1;
        snprintf(r->msg, sizeof(r->msg), "write id maps: %s", strerror(errno));
        return -1;
}

/* Takes the error by address: `record_err(r, f(&e), &e)` must not read e
 * before f() has run (argument evaluation order is unspecified). */
static void record_err(struct report *r, int rc, struct err **ep)
{
        struct err *e = *ep;
        *ep = NULL;
        r->rc = rc;
        if (rc < 0) {
                r->errnum = e ? e->errnum : 0;
                snprintf(r->msg, sizeof(r->msg), "%s", err_msg(e));
        }
        err_free(e);
}

/* 0 if the call worked, else errno. */
#define PROBE(expr) ((expr) < 0 ? errno : 0)

static int tcp_connect_errno(int port)
{
        int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (s < 0)
                return errno;
        struct timeval tv = {.tv_sec = 2};
        setsockopt(s, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
        struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        int r = PROBE(connect(s, (struct sockaddr *)&a, sizeof(a)));
        close(s);
        return r;
}

static int tcp_bind_errno(void)
{
        int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (s < 0)
                return errno;
        struct sockaddr_in a = {.sin_family = AF_INET};
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        int r = PROBE(bind(s, (struct sockaddr *)&a, sizeof(a)));
        close(s);
        return r;
}

static int listen_loopback(int *ret_port)
{
        int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (s < 0)
                return -1;
        struct sockaddr_in a = {.sin_family = AF_INET};
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        socklen_t len = sizeof(a);
        if (bind(s, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(s, 128) < 0 ||
            getsockname(s, (struct sockaddr *)&a, &len) < 0) {
                close(s);
                return -1;
        }
        *ret_port = ntohs(a.sin_port);
        return s;
}

/* 1 up, 0 down, -errno. */
static int lo_is_up(void)
{
        int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        if (s < 0)
                return -errno;
        struct ifreq ifr = {0};
        snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "lo");
        int r = ioctl(s, SIOCGIFFLAGS, &ifr) < 0 ? -errno : !!(ifr.ifr_flags & IFF_UP);
        close(s);
        return r;
}

static int open_errno(const char *path, int flags)
{
        int fd = open(path, flags | O_CLOEXEC, 0644);
        if (fd < 0)
                return errno;
        close(fd);
        return 0;
}

static int read_errno(const char *path)
{
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return errno;
        char c;
        int r = PROBE(read(fd, &c, 1));
        close(fd);
        return r;
}

/* fork+exec argv[0]; 0 if it ran and exited 0, the exec errno if exec
 * failed, -1 otherwise.  stdout goes to out (if non-NULL). */
static int run_prog(char *const argv[], char *out, size_t out_len)
{
        int p[2];
        if (pipe2(p, O_CLOEXEC) < 0)
                return -1;
        pid_t pid = fork();
        if (pid < 0)
                return -1;
        if (pid == 0) {
                dup2(p[1], 1);
                execv(argv[0], argv);
                _exit(200 + (errno & 0x3f));
        }
        close(p[1]);
        ssize_t n = read_all(p[0], out ? out : (char[64]){0}, out ? out_len - 1 : 63);
        if (out)
                out[n > 0 ? n : 0] = '\0';
        close(p[0]);
        int st;
        if (waitpid(pid, &st, 0) < 0 || !WIFEXITED(st))
                return -1;
        int code = WEXITSTATUS(st);
        return code == 0 ? 0 : code >= 200 ? code - 200 : -1;
}

/* Value of a "Name:\t<hex>" line of /proc/self/status, or -1. */
static long long status_field(const char *text, const char *name, int base)
{
        size_t nl = strlen(name);
        for (const char *p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
                if (!strncmp(p, name, nl) && p[nl] == ':')
                        return strtoll(p + nl + 1, NULL, base);
        return -1;
}

static int read_self_status(char *buf, size_t len)
{
        int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -1;
        ssize_t n = read_all(fd, buf, len - 1);
        close(fd);
        buf[n > 0 ? n : 0] = '\0';
        return n > 0 ? 0 : -1;
}

static int drop_effective_caps(void)
{
        cap_t none = cap_init();
        int r = none ? cap_set_proc(none) : -1;
        cap_free(none);
        return r;
}

static long long now_ns(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* ---- parent side ---- */

static void drain_listener(void)
{
        int c;
        while ((c = accept4(fx.tcp_fd, NULL, NULL, SOCK_CLOEXEC)) >= 0)
                close(c);
        while ((c = accept4(fx.unix_fd, NULL, NULL, SOCK_CLOEXEC)) >= 0)
                close(c);
}

static void run_child(child_fn fn, void *arg, struct report *out)
{
        int p[2];
        assert_int_equal(pipe2(p, O_CLOEXEC), 0);
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                close(p[0]);
                alarm(20); /* a wedged probe must not hang the suite */
                struct report r;
                memset(&r, 0, sizeof(r));
                fn(arg, &r);
                _exit(write_all(p[1], &r, sizeof(r)) < 0 ? 3 : 0);
        }
        close(p[1]);
        memset(out, 0, sizeof(*out));
        ssize_t n = read_all(p[0], out, sizeof(*out));
        close(p[0]);
        int st;
        assert_int_equal(waitpid(pid, &st, 0), pid);
        drain_listener();
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
                fail_msg("probe child died (status 0x%x)", st);
        assert_int_equal(n, (ssize_t)sizeof(*out));
}

#define SKIP_IF_CHILD_SKIPPED(r)                                                                                 \
        do {                                                                                                     \
                if ((r).skip) {                                                                                  \
                        print_message("[  SKIP    ] %s\n", (r).msg);                                             \
                        skip();                                                                                  \
                }                                                                                                \
        } while (0)

/* ======================= netns ======================= */

enum { N_UP_BEFORE, N_CONNECT_BEFORE, N_UP_AFTER, N_INNER_CONNECT, N_INNER_ACCEPT, N_HOST_CONNECT, N_AGAIN,
       N_DESCR_BEFORE, N_DESCR_AFTER };

static void child_netns(void *arg, struct report *r)
{
        bool new_netns = *(bool *)arg;
        if (new_netns && enter_userns(CLONE_NEWNET, r) < 0)
                return;
        if (!new_netns) {
                /* Control: the host's netns, where the test's listener lives. */
                r->v[N_HOST_CONNECT] = tcp_connect_errno(fx.tcp_port);
                return;
        }
        r->v[N_DESCR_BEFORE] = netns_describe(r->s1, sizeof(r->s1));
        r->v[N_UP_BEFORE] = lo_is_up();
        r->v[N_CONNECT_BEFORE] = tcp_connect_errno(fx.tcp_port);

        struct err *e = NULL;
        record_err(r, netns_lo_up(&e), &e);
        if (r->rc < 0)
                return;
        r->v[N_DESCR_AFTER] = netns_describe(r->s2, sizeof(r->s2));
        r->v[N_UP_AFTER] = lo_is_up();

        int port = 0;
        int l = listen_loopback(&port);
        if (l < 0) {
                r->v[N_INNER_CONNECT] = errno;
        } else {
                r->v[N_INNER_CONNECT] = tcp_connect_errno(port);
                int c = accept4(l, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
                r->v[N_INNER_ACCEPT] = c >= 0 ? 0 : errno;
                if (c >= 0)
                        close(c);
                close(l);
        }
        r->v[N_HOST_CONNECT] = tcp_connect_errno(fx.tcp_port);
        e = NULL;
        r->v[N_AGAIN] = netns_lo_up(&e);
        err_free(e);
}

static void test_netns_lo_up(void **state)
{
        (void)state;
        struct report r;
        bool yes = true, no = false;

        run_child(child_netns, &yes, &r);
        SKIP_IF_CHILD_SKIPPED(r);
        if (r.rc < 0)
                fail_msg("netns_lo_up: %s", r.msg);
        /* before: lo exists, is down, loopback unreachable */
        /* lo is ifindex 1; fallback tunnels (sit0, tunl0...) may follow on
         * hosts with those modules loaded. */
        assert_true(r.v[N_DESCR_BEFORE] >= 1);
        assert_memory_equal(r.s1, "1 lo down\n", 10);
        assert_int_equal(r.v[N_UP_BEFORE], 0);
        assert_int_equal(r.v[N_CONNECT_BEFORE], ENETUNREACH);
        /* after: up, a listener inside accepts, the host's stays unreachable */
        assert_int_equal(r.v[N_DESCR_AFTER], r.v[N_DESCR_BEFORE]);
        assert_memory_equal(r.s2, "1 lo up\n", 8);
        assert_int_equal(r.v[N_UP_AFTER], 1);
        assert_int_equal(r.v[N_INNER_CONNECT], 0);
        assert_int_equal(r.v[N_INNER_ACCEPT], 0);
        assert_int_equal(r.v[N_HOST_CONNECT], ECONNREFUSED);
        assert_int_equal(r.v[N_AGAIN], 0); /* idempotent */

        /* without the new netns the host's listener is reachable */
        run_child(child_netns, &no, &r);
        assert_int_equal(r.v[N_HOST_CONNECT], 0);
}

static void child_netns_nocap(void *arg, struct report *r)
{
        (void)arg;
        if (enter_userns(CLONE_NEWNET, r) < 0)
                return;
        if (drop_effective_caps() < 0) {
                r->skip = 1;
                snprintf(r->msg, sizeof(r->msg), "cap_set_proc: %s", strerror(errno));
                return;
        }
        struct err *e = NULL;
        record_err(r, netns_lo_up(&e), &e);
        r->v[0] = lo_is_up();
}

static void test_netns_lo_up_needs_net_admin(void **state)
{
        (void)state;
        struct report r;
        run_child(child_netns_nocap, NULL, &r);
        SKIP_IF_CHILD_SKIPPED(r);
        assert_int_equal(r.rc, -1);
        assert_int_equal(r.errnum, EPERM);
        assert_non_null(strstr(r.msg, "CAP_NET_ADMIN"));
        assert_int_equal(r.v[0], 0);
}

static void child_describe_small(void *arg, struct report *r)
{
        (void)arg;
        if (enter_userns(CLONE_NEWNET, r) < 0)
                return;
        char tiny[5];
        memset(tiny, 'x', sizeof(tiny));
        r->v[0] = netns_describe(tiny, sizeof(tiny));
        memcpy(r->s1, tiny, sizeof(tiny));
        r->v[1] = netns_describe(NULL, 0);
}

static void test_netns_describe_truncates(void **state)
{
        (void)state;
        struct report r;
        run_child(child_describe_small, NULL, &r);
        SKIP_IF_CHILD_SKIPPED(r);
        assert_true(r.v[0] >= 1);
        assert_string_equal(r.s1, "1 lo");
        assert_int_equal(r.v[1], r.v[0]);
}

/* ======================= Landlock ======================= */

enum { L_WRITE_OUTSIDE, L_CREATE_RW, L_UNLINK_RW, L_READ_HOSTNAME, L_READ_OTHER, L_WRITE_ETC, L_MKDIR_OTHER,
       L_EXEC_USR, L_EXEC_RW, L_READ_PASSWD, L_TCP_CONNECT, L_TCP_BIND, L_ABSTRACT, L_KILL, L_ABI, L_FS, L_NET,
       L_SCOPE_UNIX, L_SCOPE_SIGNAL, L_TRUNCATE };

struct ll_case {
        bool restrict_;
        bool set_nnp;
        bool drop_caps;
        const char *const *ro;
        const char *const *rw;
};

static void child_landlock(void *arg, struct report *r)
{
        const struct ll_case *c = arg;
        pid_t test_pid = getppid();

        if (c->drop_caps && drop_effective_caps() < 0) {
                r->skip = 1;
                snprintf(r->msg, sizeof(r->msg), "cap_set_proc: %s", strerror(errno));
                return;
        }
        if (c->set_nnp && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) {
                r->skip = 1;
                snprintf(r->msg, sizeof(r->msg), "PR_SET_NO_NEW_PRIVS: %s", strerror(errno));
                return;
        }
        if (c->restrict_) {
                struct landlock_result res;
                memset(&res, 0xa5, sizeof(res));
                struct err *e = NULL;
                record_err(r, landlock_restrict(c->ro, c->rw, &res, &e), &e);
                if (r->rc < 0)
                        return;
                r->v[L_ABI] = res.abi;
                r->v[L_FS] = res.fs;
                r->v[L_NET] = res.net;
                r->v[L_SCOPE_UNIX] = res.scope_abstract_unix;
                r->v[L_SCOPE_SIGNAL] = res.scope_signal;
        }

        char path[256];
        snprintf(path, sizeof(path), "%s/created-%d", fx.rw, (int)getpid());
        r->v[L_WRITE_OUTSIDE] = open_errno(fx.target, O_WRONLY);
        r->v[L_CREATE_RW] = open_errno(path, O_WRONLY | O_CREAT | O_EXCL);
        r->v[L_UNLINK_RW] = r->v[L_CREATE_RW] ? -1 : PROBE(unlink(path));
        r->v[L_READ_HOSTNAME] = read_errno("/etc/hostname");
        r->v[L_READ_PASSWD] = read_errno("/etc/passwd");
        r->v[L_READ_OTHER] = read_errno(fx.secret);
        /* Opened, never written: harmless even in the unconfined control. */
        r->v[L_WRITE_ETC] = open_errno("/etc/hostname", O_WRONLY);
        r->v[L_TRUNCATE] = PROBE(truncate(fx.target, 7)); /* its size already: a no-op if allowed */
        snprintf(path, sizeof(path), "%s/dir-%d", fx.other, (int)getpid());
        r->v[L_MKDIR_OTHER] = PROBE(mkdir(path, 0700));
        if (!r->v[L_MKDIR_OTHER])
                rmdir(path);
        r->v[L_EXEC_USR] = run_prog((char *[]){"/usr/bin/true", NULL}, NULL, 0);
        r->v[L_EXEC_RW] = run_prog((char *[]){fx.truebin, NULL}, NULL, 0);

        r->v[L_TCP_CONNECT] = tcp_connect_errno(fx.tcp_port);
        r->v[L_TCP_BIND] = tcp_bind_errno();

        int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        r->v[L_ABSTRACT] = s < 0 ? errno : PROBE(connect(s, (struct sockaddr *)&fx.unix_addr, fx.unix_len));
        if (s >= 0)
                close(s);
        r->v[L_KILL] = PROBE(kill(test_pid, 0));
}

static const char *const RO[] = {"/usr", "/lib", "/etc", NULL};

static int landlock_abi_or_skip(int need)
{
        char why[256];
        int abi = landlock_abi(why, sizeof(why));
        if (abi == 0) {
                print_message("[  SKIP    ] Landlock unavailable: %s\n", why);
                skip();
        }
        assert_string_equal(why, "");
        if (abi < need) {
                print_message("[  SKIP    ] Landlock ABI %d < %d on this kernel\n", abi, need);
                skip();
        }
        return abi;
}

static void test_landlock_abi(void **state)
{
        (void)state;
        char why[8] = "junk";
        int abi = landlock_abi(why, sizeof(why));
        assert_true(abi >= 0);
        if (abi > 0)
                assert_string_equal(why, "");
        else
                assert_true(strlen(why) > 0); /* truncated but said */
        print_message("           landlock abi %d\n", abi);
        assert_int_equal(landlock_abi(NULL, 0), abi);
}

/* A seccomp filter makes landlock_create_ruleset fail with the errno in arg:
 * landlock_abi() must say why, landlock_restrict() must apply nothing. */
static void child_landlock_blocked(void *arg, struct report *r)
{
        int errnum = *(int *)arg;
        struct sock_filter insns[] = {
                BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
                BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_landlock_create_ruleset, 0, 1),
                BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ((unsigned)errnum & SECCOMP_RET_DATA)),
                BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        };
        struct sock_fprog prog = {.len = ARRAY_LEN(insns), .filter = insns};
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) < 0) {
                r->skip = 1;
                snprintf(r->msg, sizeof(r->msg), "install seccomp filter: %s", strerror(errno));
                return;
        }
        r->v[0] = landlock_abi(r->s1, sizeof(r->s1));
        struct landlock_result res;
        memset(&res, 0xa5, sizeof(res));
        struct err *e = NULL;
        record_err(r, landlock_restrict(RO, NULL, &res, &e), &e);
        r->v[1] = res.abi;
        r->v[2] = res.fs || res.net || res.scope_abstract_unix || res.scope_signal;
        r->v[3] = open_errno(fx.target, O_WRONLY); /* still unconfined */
}

static void test_landlock_unavailable(void **state)
{
        (void)state;
        static const struct {
                int errnum;
                const char *needle;
        } cases[] = {
                {ENOSYS, "not built"},
                {EOPNOTSUPP, "disabled at boot"},
                {EPERM, "seccomp"},
                {EINVAL, "Invalid argument"},
        };
        for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
                struct report r;
                int errnum = cases[i].errnum;
                run_child(child_landlock_blocked, &errnum, &r);
                SKIP_IF_CHILD_SKIPPED(r);
                assert_int_equal(r.v[0], 0);
                if (!strstr(r.s1, cases[i].needle))
                        fail_msg("errno %d: reason '%s' lacks '%s'", errnum, r.s1, cases[i].needle);
                assert_int_equal(r.rc, 0);
                assert_int_equal(r.v[1], 0);
                assert_int_equal(r.v[2], 0);
                assert_int_equal(r.v[3], 0);
        }
}

static void test_landlock_fs(void **state)
{
        (void)state;
        int abi = landlock_abi_or_skip(1);
        const char *const rw[] = {fx.rw, NULL};
        struct report r;

        struct ll_case with = {.restrict_ = true, .set_nnp = true, .ro = RO, .rw = rw};
        run_child(child_landlock, &with, &r);
        SKIP_IF_CHILD_SKIPPED(r);
        if (r.rc < 0)
                fail_msg("landlock_restrict: %s", r.msg);
        assert_int_equal(r.v[L_ABI], abi);
        assert_int_equal(r.v[L_FS], 1);
        assert_int_equal(r.v[L_WRITE_OUTSIDE], EACCES);
        assert_int_equal(r.v[L_CREATE_RW], 0);
        assert_int_equal(r.v[L_UNLINK_RW], 0);
        assert_int_equal(r.v[L_READ_HOSTNAME], 0);
        assert_int_equal(r.v[L_READ_PASSWD], 0);
        assert_int_equal(r.v[L_READ_OTHER], EACCES);
        assert_int_equal(r.v[L_WRITE_ETC], EACCES);
        assert_int_equal(r.v[L_MKDIR_OTHER], EACCES);
        assert_int_equal(r.v[L_TRUNCATE], abi >= 3 ? EACCES : 0);
        assert_int_equal(r.v[L_EXEC_USR], 0);
        assert_int_equal(r.v[L_EXEC_RW], EACCES); /* rw is not executable */

        /* the same operations, unconfined */
        struct ll_case without = {0};
        run_child(child_landlock, &without, &r);
        assert_int_equal(r.v[L_WRITE_OUTSIDE], 0);
        assert_int_equal(r.v[L_CREATE_RW], 0);
        assert_int_equal(r.v[L_UNLINK_RW], 0);
        assert_int_equal(r.v[L_READ_HOSTNAME], 0);
        assert_int_equal(r.v[L_READ_OTHER], 0);
        if (geteuid() == 0) /* only root may open /etc/hostname for writing */
                assert_int_equal(r.v[L_WRITE_ETC], 0);
        assert_int_equal(r.v[L_MKDIR_OTHER], 0);
        assert_int_equal(r.v[L_TRUNCATE], 0);
        assert_int_equal(r.v[L_EXEC_USR], 0);
        assert_int_equal(r.v[L_EXEC_RW], 0);
}

static void test_landlock_no_rw(void **state)
{
        (void)state;
        landlock_abi_or_skip(1);
        struct report r;
        struct ll_case c = {.restrict_ = true, .set_nnp = true, .ro = RO, .rw = NULL};
        run_child(child_landlock, &c, &r);
        SKIP_IF_CHILD_SKIPPED(r);
        if (r.rc < 0)
                fail_msg("landlock_restrict: %s", r.msg);
        assert_int_equal(r.v[L_CREATE_RW], EACCES);
        assert_int_equal(r.v[L_WRITE_OUTSIDE], EACCES);
        assert_int_equal(r.v[L_READ_HOSTNAME], 0);
}

static void test_landlock_file_rule_and_missing_paths(void **state)
{
        (void)state;
        landlock_abi_or_skip(1);
        struct report r;
        /* a file as ro path (gets file rights only), a missing ro and rw path */
        const char *const ro[] = {"/nonexistent-chidori-ro", "/usr", "/lib", "/etc/hostname", NULL};
        const char *const rw[] = {"/nonexistent-chidori-rw", fx.rw, NULL};
        struct ll_case c = {.restrict_ = true, .set_nnp = true, .ro = ro, .rw = rw};
        run_child(child_landlock, &c, &r);
        SKIP_IF_CHILD_SKIPPED(r);
        if (r.rc < 0)
                fail_msg("landlock_restrict: %s", r.msg);
        assert_int_equal(r.v[L_READ_HOSTNAME], 0);
        assert_int_equal(r.v[L_READ_PASSWD], EACCES);
        assert_int_equal(r.v[L_WRITE_ETC], EACCES);
        assert_int_equal(r.v[L_CREATE_RW], 0);

        /* no read-only path exists: an error, nothing applied */
        const char *const none[] = {"/nonexistent-chidori-a", "/nonexistent-chidori-b", NULL};
        struct ll_case bad = {.restrict_ = true, .set_nnp = true, .ro = none, .rw = rw};
        run_child(child_landlock, &bad, &r);
        assert_int_equal(r.rc, -1);
        assert_int_equal(r.errnum, ENOENT);
        assert_non_null(strstr(r.msg, "none of the read-only paths"));

        const char *const empty[] = {NULL};
        struct ll_case bad2 = {.restrict_ = true, .set_nnp = true, .ro = empty};
        run_child(child_landlock, &bad2, &r);
        assert_int_equal(r.rc, -1);
        assert_int_equal(r.errnum, EINVAL);
}

static void test_landlock_needs_nnp(void **state)
{
        (void)state;
        landlock_abi_or_skip(1);
        struct report r;
        /* no no_new_privs and no CAP_SYS_ADMIN: refused, and it says why */
        struct ll_case c = {.restrict_ = true, .drop_caps = true, .ro = RO};
        run_child(child_landlock, &c, &r);
        SKIP_IF_CHILD_SKIPPED(r);
        assert_int_equal(r.rc, -1);
        assert_int_equal(r.errnum, EPERM);
        assert_non_null(strstr(r.msg, "no_new_privs"));
}

static void test_landlock_net(void **state)
{
        (void)state;
        landlock_abi_or_skip(4);
        struct report r;
        struct ll_case with = {.restrict_ = true, .set_nnp = true, .ro = RO};
        run_child(child_landlock, &with, &r);
        SKIP_IF_CHILD_SKIPPED(r);
        if (r.rc < 0)
                fail_msg("landlock_restrict: %s", r.msg);
        assert_int_equal(r.v[L_NET], 1);
        assert_int_equal(r.v[L_TCP_CONNECT], EACCES);
        assert_int_equal(r.v[L_TCP_BIND], EACCES);

        struct ll_case without = {0};
        run_child(child_landlock, &without, &r);
        assert_int_equal(r.v[L_TCP_CONNECT], 0);
        assert_int_equal(r.v[L_TCP_BIND], 0);
}

static void test_landlock_scopes(void **state)
{
        (void)state;
        landlock_abi_or_skip(6);
        struct report r;
        struct ll_case with = {.restrict_ = true, .set_nnp = true, .ro = RO};
        run_child(child_landlock, &with, &r);
        SKIP_IF_CHILD_SKIPPED(r);
        if (r.rc < 0)
                fail_msg("landlock_restrict: %s", r.msg);
        assert_int_equal(r.v[L_SCOPE_UNIX], 1);
        assert_int_equal(r.v[L_SCOPE_SIGNAL], 1);
        assert_int_equal(r.v[L_ABSTRACT], EPERM);
        assert_int_equal(r.v[L_KILL], EPERM);

        struct ll_case without = {0};
        run_child(child_landlock, &without, &r);
        assert_int_equal(r.v[L_ABSTRACT], 0);
        assert_int_equal(r.v[L_KILL], 0);
}

/* ======================= caps ======================= */

enum { C_INH, C_PRM, C_EFF, C_BND, C_AMB, C_SECBITS, C_UNSHARE_NS, C_CLEAR_SECBITS, C_RAISE, C_EXEC_EFF,
       C_EXEC_BND };

static void child_caps(void *arg, struct report *r)
{
        bool drop = *(bool *)arg;
        if (enter_userns(0, r) < 0)
                return;
        if (drop) {
                struct err *e = NULL;
                record_err(r, caps_drop_all(&e), &e);
                if (r->rc < 0)
                        return;
        }
        char st[4096];
        if (read_self_status(st, sizeof(st)) < 0) {
                r->skip = 1;
                snprintf(r->msg, sizeof(r->msg), "read /proc/self/status: %s", strerror(errno));
                return;
        }
        r->v[C_INH] = status_field(st, "CapInh", 16);
        r->v[C_PRM] = status_field(st, "CapPrm", 16);
        r->v[C_EFF] = status_field(st, "CapEff", 16);
        r->v[C_BND] = status_field(st, "CapBnd", 16);
        r->v[C_AMB] = status_field(st, "CapAmb", 16);
        r->v[C_SECBITS] = prctl(PR_GET_SECUREBITS, 0, 0, 0, 0);

        /* attacks: a privileged op, undoing securebits, re-raising a capability */
        r->v[C_UNSHARE_NS] = PROBE(unshare(CLONE_NEWNS));
        r->v[C_CLEAR_SECBITS] = PROBE(prctl(PR_SET_SECUREBITS, 0, 0, 0, 0));
        cap_t c = cap_init();
        cap_value_t v = CAP_SYS_ADMIN;
        cap_set_flag(c, CAP_PERMITTED, 1, &v, CAP_SET);
        cap_set_flag(c, CAP_EFFECTIVE, 1, &v, CAP_SET);
        r->v[C_RAISE] = PROBE(cap_set_proc(c));
        cap_free(c);
        /* and what a program exec'd as uid 0 gets */
        char out[4096];
        if (run_prog((char *[]){"/usr/bin/cat", "/proc/self/status", NULL}, out, sizeof(out)) == 0) {
                r->v[C_EXEC_EFF] = status_field(out, "CapEff", 16);
                r->v[C_EXEC_BND] = status_field(out, "CapBnd", 16);
        } else {
                r->v[C_EXEC_EFF] = r->v[C_EXEC_BND] = -2;
        }
}

static void test_caps_drop_all(void **state)
{
        (void)state;
        struct report r;
        bool yes = true, no = false;

        run_child(child_caps, &yes, &r);
        SKIP_IF_CHILD_SKIPPED(r);
        if (r.rc < 0)
                fail_msg("caps_drop_all: %s", r.msg);
        assert_int_equal(r.v[C_INH], 0);
        assert_int_equal(r.v[C_PRM], 0);
        assert_int_equal(r.v[C_EFF], 0);
        assert_int_equal(r.v[C_BND], 0);
        assert_int_equal(r.v[C_AMB], 0);
        assert_int_equal(r.v[C_SECBITS], CAPS_SECUREBITS);
        assert_int_equal(r.v[C_SECBITS], 0xef);
        assert_int_equal(r.v[C_UNSHARE_NS], EPERM);
        assert_int_equal(r.v[C_CLEAR_SECBITS], EPERM);
        assert_int_equal(r.v[C_RAISE], EPERM);
        assert_int_equal(r.v[C_EXEC_EFF], 0);
        assert_int_equal(r.v[C_EXEC_BND], 0);

        /* without the call: root in the userns holds everything */
        run_child(child_caps, &no, &r);
        assert_true(r.v[C_EFF] > 0);
        assert_true(r.v[C_BND] > 0);
        assert_int_equal(r.v[C_SECBITS], 0);
        assert_int_equal(r.v[C_UNSHARE_NS], 0);
        assert_int_equal(r.v[C_CLEAR_SECBITS], 0);
        assert_int_equal(r.v[C_RAISE], 0);
        assert_true(r.v[C_EXEC_EFF] > 0);
}

static void child_caps_nocap(void *arg, struct report *r)
{
        (void)arg;
        if (enter_userns(0, r) < 0)
                return;
        if (drop_effective_caps() < 0) {
                r->skip = 1;
                snprintf(r->msg, sizeof(r->msg), "cap_set_proc: %s", strerror(errno));
                return;
        }
        struct err *e = NULL;
        record_err(r, caps_drop_all(&e), &e);
}

static void test_caps_drop_all_needs_setpcap(void **state)
{
        (void)state;
        struct report r;
        run_child(child_caps_nocap, NULL, &r);
        SKIP_IF_CHILD_SKIPPED(r);
        assert_int_equal(r.rc, -1);
        assert_int_equal(r.errnum, EPERM);
        assert_non_null(strstr(r.msg, "CAP_SETPCAP"));
}

static void child_lock(void *arg, struct report *r)
{
        bool lock = *(bool *)arg;
        if (lock) {
                struct err *e = NULL;
                record_err(r, caps_lock_process(getppid(), &e), &e);
                if (r->rc < 0)
                        return;
        }
        char st[4096];
        if (read_self_status(st, sizeof(st)) < 0) {
                r->skip = 1;
                snprintf(r->msg, sizeof(r->msg), "read /proc/self/status: %s", strerror(errno));
                return;
        }
        r->v[0] = status_field(st, "NoNewPrivs", 10);
        r->v[1] = prctl(PR_GET_DUMPABLE, 0, 0, 0, 0);
        int sig = -1;
        r->v[2] = prctl(PR_GET_PDEATHSIG, &sig, 0, 0, 0) < 0 ? -errno : sig;
}

static void test_caps_lock_process(void **state)
{
        (void)state;
        struct report r;
        bool yes = true, no = false;
        run_child(child_lock, &yes, &r);
        SKIP_IF_CHILD_SKIPPED(r);
        if (r.rc < 0)
                fail_msg("caps_lock_process: %s", r.msg);
        assert_int_equal(r.v[0], 1);
        assert_int_equal(r.v[1], 0);
        assert_int_equal(r.v[2], SIGKILL);

        run_child(child_lock, &no, &r);
        assert_int_equal(r.v[0], 0);
        assert_int_equal(r.v[1], 1);
        assert_int_equal(r.v[2], 0);
}

/* The parent dies before the child arms its death signal: caps_lock_process
 * must notice.  A forks B and exits at once; B, reparented, reports. */
static void test_caps_lock_process_parent_gone(void **state)
{
        (void)state;
        int p[2];
        assert_int_equal(pipe2(p, O_CLOEXEC), 0);
        pid_t a = fork();
        assert_true(a >= 0);
        if (a == 0) {
                pid_t a_pid = getpid();
                pid_t b = fork();
                if (b != 0)
                        _exit(b < 0);
                alarm(20);
                struct report r;
                memset(&r, 0, sizeof(r));
                for (int i = 0; i < 5000 && getppid() == a_pid; i++)
                        usleep(1000);
                struct err *e = NULL;
                record_err(&r, caps_lock_process(a_pid, &e), &e);
                _exit(write_all(p[1], &r, sizeof(r)) < 0);
        }
        close(p[1]);
        int st;
        assert_int_equal(waitpid(a, &st, 0), a);
        struct report r;
        assert_int_equal(read_all(p[0], &r, sizeof(r)), (ssize_t)sizeof(r));
        close(p[0]);
        assert_int_equal(r.rc, -1);
        assert_int_equal(r.errnum, ESRCH);
        assert_non_null(strstr(r.msg, "is gone"));
}

/* The death signal really fires: A (a subreaper) forks B, B forks C, C arms
 * (or not), B exits; C must die of SIGKILL, and survives without the lock. */
static void child_pdeath(void *arg, struct report *r)
{
        bool lock = *(bool *)arg;
        if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) < 0) {
                r->skip = 1;
                snprintf(r->msg, sizeof(r->msg), "PR_SET_CHILD_SUBREAPER: %s", strerror(errno));
                return;
        }
        int p[2];
        if (pipe2(p, O_CLOEXEC) < 0)
                return;
        pid_t b = fork();
        if (b == 0) {
                int armed[2];
                if (pipe2(armed, O_CLOEXEC) < 0)
                        _exit(1);
                pid_t b_pid = getpid();
                pid_t c = fork();
                if (c == 0) {
                        struct err *e = NULL;
                        int rc = lock ? caps_lock_process(b_pid, &e) : 0;
                        err_free(e);
                        (void)!write(armed[1], &rc, sizeof(rc));
                        for (;;)
                                pause();
                }
                int rc = -1;
                (void)!read(armed[0], &rc, sizeof(rc));
                (void)!write(p[1], &c, sizeof(c));
                (void)!write(p[1], &rc, sizeof(rc));
                _exit(0); /* the death that C must follow */
        }
        close(p[1]);
        pid_t c = -1;
        int rc = -1;
        read_all(p[0], &c, sizeof(c));
        read_all(p[0], &rc, sizeof(rc));
        close(p[0]);
        waitpid(b, NULL, 0);
        r->rc = rc;
        r->v[0] = 0; /* signal that ended C, 0 = still alive after 500 ms */
        for (int i = 0; i < 500; i++) {
                int st;
                pid_t w = waitpid(c, &st, WNOHANG);
                if (w == c) {
                        r->v[0] = WIFSIGNALED(st) ? WTERMSIG(st) : -1;
                        return;
                }
                usleep(1000);
        }
        kill(c, SIGKILL);
        waitpid(c, NULL, 0);
}

static void test_caps_pdeathsig_fires(void **state)
{
        (void)state;
        struct report r;
        bool yes = true, no = false;
        run_child(child_pdeath, &yes, &r);
        SKIP_IF_CHILD_SKIPPED(r);
        assert_int_equal(r.rc, 0);
        assert_int_equal(r.v[0], SIGKILL);

        run_child(child_pdeath, &no, &r);
        assert_int_equal(r.v[0], 0);
}

/* ======================= cost ======================= */

static int cmp_ll(const void *a, const void *b)
{
        long long x = *(const long long *)a, y = *(const long long *)b;
        return (x > y) - (x < y);
}

static double median_us(long long *ns, int n)
{
        qsort(ns, (size_t)n, sizeof(*ns), cmp_ll);
        return (n % 2 ? (double)ns[n / 2] : (ns[n / 2 - 1] + ns[n / 2]) / 2.0) / 1000.0;
}

static void child_bench_netns(void *arg, struct report *r)
{
        (void)arg;
        if (enter_userns(CLONE_NEWNET, r) < 0)
                return;
        for (int i = 0; i < BENCH_N; i++) {
                if (i && unshare(CLONE_NEWNET) < 0) {
                        r->skip = 1;
                        snprintf(r->msg, sizeof(r->msg), "unshare(CLONE_NEWNET): %s", strerror(errno));
                        return;
                }
                struct err *e = NULL;
                long long t0 = now_ns();
                int rc = netns_lo_up(&e);
                r->v[i] = now_ns() - t0;
                if (rc < 0) {
                        record_err(r, rc, &e);
                        return;
                }
                err_free(e);
        }
}

/* v[0]: first call in a fresh child (what the sandbox child pays, page
 * faults included); v[1]: a second call in the same child (a second stacked
 * domain: the syscalls themselves, warm). */
static void child_bench_landlock(void *arg, struct report *r)
{
        (void)arg;
        const char *const rw[] = {fx.rw, NULL};
        struct landlock_result res;
        struct err *e = NULL;
        prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
        for (int i = 0; i < 2; i++) {
                long long t0 = now_ns();
                int rc = landlock_restrict(RO, rw, &res, &e);
                r->v[i] = now_ns() - t0;
                record_err(r, rc, &e);
                if (rc < 0)
                        return;
        }
}

/* arg true: pre-fault what caps_drop_all touches (libcap, malloc, the
 * /proc file) so only its own work is timed. */
static void child_bench_caps(void *arg, struct report *r)
{
        bool warm = *(bool *)arg;
        if (enter_userns(0, r) < 0)
                return;
        if (warm) {
                cap_t c = cap_init();
                cap_t g = cap_get_proc();
                cap_compare(c, g);
                cap_free(c);
                cap_free(g);
                char st[64];
                int fd = open("/proc/sys/kernel/cap_last_cap", O_RDONLY | O_CLOEXEC);
                if (fd >= 0) {
                        (void)!read(fd, st, sizeof(st));
                        close(fd);
                }
        }
        struct err *e = NULL;
        long long t0 = now_ns();
        int rc = caps_drop_all(&e);
        r->v[0] = now_ns() - t0;
        record_err(r, rc, &e);
}

static void test_cost(void **state)
{
        (void)state;
        struct report r;
        long long ns[BENCH_N], warm[BENCH_N];

        run_child(child_bench_netns, NULL, &r);
        SKIP_IF_CHILD_SKIPPED(r);
        if (r.rc < 0)
                fail_msg("netns_lo_up: %s", r.msg);
        memcpy(ns, r.v, sizeof(ns));
        print_message("           cost: netns_lo_up       median %7.1f us (n=%d, a fresh netns each;"
                      " first call %.1f us)\n",
                      median_us(ns + 1, BENCH_N - 1), BENCH_N - 1, ns[0] / 1000.0);

        if (landlock_abi(NULL, 0) > 0) {
                for (int i = 0; i < BENCH_N; i++) {
                        run_child(child_bench_landlock, NULL, &r);
                        if (r.rc < 0)
                                fail_msg("landlock_restrict: %s", r.msg);
                        ns[i] = r.v[0];
                        warm[i] = r.v[1];
                }
                print_message("           cost: landlock_restrict median %7.1f us cold, %.1f us warm"
                              " (n=%d, 3 ro + 1 rw path)\n",
                              median_us(ns, BENCH_N), median_us(warm, BENCH_N), BENCH_N);
        } else {
                print_message("           cost: landlock_restrict skipped (no Landlock)\n");
        }

        for (int w = 0; w < 2; w++) {
                bool pre = w == 1;
                long long *out = pre ? warm : ns;
                for (int i = 0; i < BENCH_N; i++) {
                        run_child(child_bench_caps, &pre, &r);
                        SKIP_IF_CHILD_SKIPPED(r);
                        if (r.rc < 0)
                                fail_msg("caps_drop_all: %s", r.msg);
                        out[i] = r.v[0];
                }
        }
        print_message("           cost: caps_drop_all     median %7.1f us cold, %.1f us warm (n=%d)\n",
                      median_us(ns, BENCH_N), median_us(warm, BENCH_N), BENCH_N);
}

/* ======================= fixtures ======================= */

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
        (void)st, (void)flag, (void)ftw;
        return remove(path);
}

static int put_file(const char *path, const char *text, mode_t mode)
{
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
        if (fd < 0)
                return -1;
        int r = write_all(fd, text, strlen(text));
        close(fd);
        return r;
}

static int copy_file(const char *from, const char *to, mode_t mode)
{
        int in = open(from, O_RDONLY | O_CLOEXEC);
        int out = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
        int r = in >= 0 && out >= 0 ? 0 : -1;
        char buf[65536];
        ssize_t n;
        while (r == 0 && (n = read(in, buf, sizeof(buf))) > 0)
                r = write_all(out, buf, (size_t)n);
        if (in >= 0)
                close(in);
        if (out >= 0)
                close(out);
        return r;
}

static int group_setup(void **state)
{
        (void)state;
        snprintf(fx.dir, sizeof(fx.dir), "/tmp/sandbox-leaves-XXXXXX");
        if (!mkdtemp(fx.dir))
                return -1;
        snprintf(fx.rw, sizeof(fx.rw), "%s/rw", fx.dir);
        snprintf(fx.other, sizeof(fx.other), "%s/other", fx.dir);
        snprintf(fx.secret, sizeof(fx.secret), "%s/secret", fx.other);
        snprintf(fx.target, sizeof(fx.target), "%s/target", fx.other);
        snprintf(fx.truebin, sizeof(fx.truebin), "%s/true", fx.rw);
        if (mkdir(fx.rw, 0755) < 0 || mkdir(fx.other, 0755) < 0 || put_file(fx.secret, "secret\n", 0644) < 0 ||
            put_file(fx.target, "target\n", 0644) < 0 || copy_file("/usr/bin/true", fx.truebin, 0755) < 0)
                return -1;

        fx.tcp_fd = listen_loopback(&fx.tcp_port);
        if (fx.tcp_fd < 0 || fcntl(fx.tcp_fd, F_SETFL, O_NONBLOCK) < 0)
                return -1;

        fx.unix_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fx.unix_fd < 0)
                return -1;
        fx.unix_addr.sun_family = AF_UNIX;
        int n = snprintf(fx.unix_addr.sun_path + 1, sizeof(fx.unix_addr.sun_path) - 1, "chidori-leaves-%d",
                         (int)getpid());
        fx.unix_len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n);
        if (bind(fx.unix_fd, (struct sockaddr *)&fx.unix_addr, fx.unix_len) < 0 || listen(fx.unix_fd, 128) < 0)
                return -1;
        return 0;
}

static int group_teardown(void **state)
{
        (void)state;
        if (fx.tcp_fd >= 0)
                close(fx.tcp_fd);
        if (fx.unix_fd >= 0)
                close(fx.unix_fd);
        if (fx.dir[0])
                nftw(fx.dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
        return 0;
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_netns_lo_up),
                cmocka_unit_test(test_netns_lo_up_needs_net_admin),
                cmocka_unit_test(test_netns_describe_truncates),
                cmocka_unit_test(test_landlock_abi),
                cmocka_unit_test(test_landlock_unavailable),
                cmocka_unit_test(test_landlock_fs),
                cmocka_unit_test(test_landlock_no_rw),
                cmocka_unit_test(test_landlock_file_rule_and_missing_paths),
                cmocka_unit_test(test_landlock_needs_nnp),
                cmocka_unit_test(test_landlock_net),
                cmocka_unit_test(test_landlock_scopes),
                cmocka_unit_test(test_caps_drop_all),
                cmocka_unit_test(test_caps_drop_all_needs_setpcap),
                cmocka_unit_test(test_caps_lock_process),
                cmocka_unit_test(test_caps_lock_process_parent_gone),
                cmocka_unit_test(test_caps_pdeathsig_fires),
                cmocka_unit_test(test_cost),
        };
        return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
