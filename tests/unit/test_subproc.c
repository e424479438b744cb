/* tests/unit/test_subproc.c — effects/proc/subproc.c with real children (sh, cat,
 * env, sleep from the host).  Every test drives the engine through its own
 * small poll() loop, the way the broker does. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/err.h"
#include "common/util.h"
#include "effects/proc/subproc.h"

struct res {
        int calls;
        uint64_t id;
        bool exited;
        int code, sig;
        bool timed_out, out_trunc, err_trunc;
        char *out, *err;
        size_t out_len, err_len;
        double elapsed;
        int order;  /* completion rank */
};

static int completions;

static void on_done(void *arg, uint64_t id, const struct subproc_result *r)
{
        struct res *x = arg;
        x->calls++;
        x->id = id;
        x->exited = r->exited;
        x->code = r->exit_code;
        x->sig = r->signal;
        x->timed_out = r->timed_out;
        x->out_trunc = r->out_truncated;
        x->err_trunc = r->err_truncated;
        free(x->out);
        free(x->err);
        x->out = malloc(r->out_len + 1);
        memcpy(x->out, r->out, r->out_len + 1);  /* the NUL is part of the contract */
        x->out_len = r->out_len;
        x->err = malloc(r->err_len + 1);
        memcpy(x->err, r->err, r->err_len + 1);
        x->err_len = r->err_len;
        x->elapsed = r->elapsed_ms;
        x->order = completions++;
}

static void res_clear(struct res *x)
{
        free(x->out);
        free(x->err);
        memset(x, 0, sizeof(*x));
}

/* The broker's loop in miniature. */
static void run(struct subproc_engine *e, double max_ms)
{
        double until = mono_ms() + max_ms;
        while (subproc_pending(e) && mono_ms() < until) {
                struct pollfd p[256];
                int t = -1;
                size_t n = subproc_fds(e, p, 256, &t);
                assert_true(n <= 256);
                if (t < 0 || t > 200)
                        t = 200;
                int r = poll(p, n, t);
                assert_true(r >= 0 || errno == EINTR);
                assert_int_equal(subproc_perform(e, p, n, NULL), 0);
        }
}

static struct subproc_engine *engine(void)
{
        struct subproc_engine *e = NULL;
        struct err *err = NULL;
        assert_int_equal(subproc_engine_new(&e, &err), 0);
        return e;
}

static char *const sh_env[] = { "PATH=/usr/bin:/bin", NULL };

/* Run argv to completion; returns the result. */
static void run_one(char *const *argv, char *const *envp, const void *in, size_t in_len, long timeout_ms,
                    size_t max_out, struct res *x)
{
        struct subproc_engine *e = engine();
        struct subproc_spec spec = {
                .argv = argv, .envp = envp, .stdin_data = in, .stdin_len = in_len,
                .timeout_ms = timeout_ms, .max_stdout_bytes = max_out,
        };
        struct err *err = NULL;
        int r = subproc_start(e, 1, &spec, on_done, x, &err);
        if (r < 0)
                fail_msg("subproc_start: %s", err_msg(err));
        run(e, 20000);
        assert_int_equal(subproc_pending(e), 0);
        assert_int_equal(x->calls, 1);
        subproc_engine_free(e);
}

static void sh(const char *script, struct res *x)
{
        char *argv[] = { "sh", "-c", (char *)script, NULL };
        run_one(argv, sh_env, NULL, 0, 10000, 0, x);
}

/* True once pid is gone or a zombie (someone else's to reap). */
static bool gone(pid_t pid, double wait_ms)
{
        double until = mono_ms() + wait_ms;
        do {
                if (kill(pid, 0) < 0 && errno == ESRCH)
                        return true;
                char path[64], buf[512];
                snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
                FILE *f = fopen(path, "r");
                if (f) {
                        size_t n = fread(buf, 1, sizeof(buf) - 1, f);
                        fclose(f);
                        buf[n] = '\0';
                        char *rp = strrchr(buf, ')');
                        if (rp && rp[1] == ' ' && (rp[2] == 'Z' || rp[2] == 'X'))
                                return true;
                }
                usleep(10000);
        } while (mono_ms() < until);
        return false;
}

static bool sigpipe_pending(void)
{
        sigset_t s;
        sigpending(&s);
        return sigismember(&s, SIGPIPE);
}

/* ---- tests ---- */

static void test_echo_cat(void **state)
{
        (void)state;
        struct res x = { 0 };
        char *argv[] = { "/bin/cat", NULL };
        run_one(argv, NULL, "hello\n", 6, 5000, 0, &x);
        assert_true(x.exited);
        assert_int_equal(x.code, 0);
        assert_int_equal(x.out_len, 6);
        assert_string_equal(x.out, "hello\n");
        assert_int_equal(x.err_len, 0);
        assert_false(x.timed_out);
        res_clear(&x);
}

static void test_large_stdin_stdout(void **state)
{
        (void)state;
        size_t n = 1 << 20;
        unsigned char *buf = malloc(n);
        for (size_t i = 0; i < n; i++)
                buf[i] = (unsigned char)(i * 7 + (i >> 11));
        struct res x = { 0 };
        char *argv[] = { "cat", NULL };
        run_one(argv, sh_env, buf, n, 10000, 0, &x);
        assert_true(x.exited);
        assert_int_equal(x.code, 0);
        assert_int_equal(x.out_len, n);
        assert_memory_equal(x.out, buf, n);
        free(buf);
        res_clear(&x);
}

static void test_child_not_reading_stdin(void **state)
{
        (void)state;
        size_t n = 4 << 20;
        unsigned char *buf = calloc(1, n);
        sigset_t before, after;
        pthread_sigmask(SIG_SETMASK, NULL, &before);
        /* exits at once: the write end sees EPIPE */
        struct res x = { 0 };
        char *argv1[] = { "true", NULL };
        run_one(argv1, sh_env, buf, n, 5000, 0, &x);
        assert_true(x.exited);
        assert_int_equal(x.code, 0);
        res_clear(&x);
        /* lives a while without reading: the pipe fills, we must not block */
        char *argv2[] = { "sleep", "0.3", NULL };
        double t0 = mono_ms();
        run_one(argv2, sh_env, buf, n, 5000, 0, &x);
        assert_true(x.exited);
        assert_int_equal(x.code, 0);
        assert_true(mono_ms() - t0 < 3000);
        /* the SIGPIPE we caused was consumed, the mask is as it was */
        assert_false(sigpipe_pending());
        pthread_sigmask(SIG_SETMASK, NULL, &after);
        assert_int_equal(sigismember(&before, SIGPIPE), sigismember(&after, SIGPIPE));
        struct sigaction sa;
        sigaction(SIGPIPE, NULL, &sa);
        assert_true(sa.sa_handler == SIG_DFL);
        free(buf);
        res_clear(&x);
}

static void test_exit_codes_and_stderr(void **state)
{
        (void)state;
        struct res x = { 0 };
        sh("echo out; echo err >&2; exit 7", &x);
        assert_true(x.exited);
        assert_int_equal(x.code, 7);
        assert_string_equal(x.out, "out\n");
        assert_string_equal(x.err, "err\n");
        res_clear(&x);
        char *argv[] = { "false", NULL };
        run_one(argv, sh_env, NULL, 0, 5000, 0, &x);
        assert_true(x.exited);
        assert_int_equal(x.code, 1);
        res_clear(&x);
        sh("exit 255", &x);
        assert_int_equal(x.code, 255);
        res_clear(&x);
}

static void test_signals(void **state)
{
        (void)state;
        struct res x = { 0 };
        sh("kill -TERM $$", &x);
        assert_false(x.exited);
        assert_int_equal(x.sig, SIGTERM);
        assert_false(x.timed_out);
        res_clear(&x);
        sh("kill -SEGV $$", &x);
        assert_false(x.exited);
        assert_int_equal(x.sig, SIGSEGV);
        res_clear(&x);
}

static void test_timeout(void **state)
{
        (void)state;
        struct res x = { 0 };
        char *argv[] = { "sleep", "30", NULL };
        double t0 = mono_ms();
        run_one(argv, sh_env, NULL, 0, 150, 0, &x);
        double took = mono_ms() - t0;
        assert_true(x.timed_out);
        assert_false(x.exited);
        assert_int_equal(x.sig, SIGKILL);
        assert_true(took >= 140 && took < 3000);
        res_clear(&x);
}

static void test_timeout_kills_grandchildren(void **state)
{
        (void)state;
        struct res x = { 0 };
        /* the background sleep holds stdout open and is in the group */
        char *argv[] = { "sh", "-c", "sleep 60 & echo $!; sleep 60", NULL };
        run_one(argv, sh_env, NULL, 0, 300, 0, &x);
        assert_true(x.timed_out);
        pid_t g = (pid_t)strtol(x.out, NULL, 10);
        assert_true(g > 1);
        assert_true(gone(g, 2000));
        res_clear(&x);
}

static void test_exit_kills_leftovers(void **state)
{
        (void)state;
        struct res x = { 0 };
        /* exits at once, leaving a job that holds the pipe: we must not wait for it */
        char *argv[] = { "sh", "-c", "sleep 60 & echo $!", NULL };
        double t0 = mono_ms();
        run_one(argv, sh_env, NULL, 0, 20000, 0, &x);
        assert_true(mono_ms() - t0 < 3000);
        assert_true(x.exited);
        assert_int_equal(x.code, 0);
        assert_false(x.timed_out);
        pid_t g = (pid_t)strtol(x.out, NULL, 10);
        assert_true(g > 1);
        assert_true(gone(g, 2000));
        res_clear(&x);
}

static void test_escaped_descendant_does_not_hang(void **state)
{
        (void)state;
        struct res x = { 0 };
        /* setsid: leaves our group, keeps stdout; completion waits at most
         * SUBPROC_DRAIN_MS after the child's exit. */
        char *argv[] = { "sh", "-c", "setsid sleep 3 & echo started", NULL };
        double t0 = mono_ms();
        run_one(argv, sh_env, NULL, 0, 20000, 0, &x);
        double took = mono_ms() - t0;
        assert_true(x.exited);
        assert_string_equal(x.out, "started\n");
        assert_true(took < SUBPROC_DRAIN_MS + 1500);
        res_clear(&x);
}

static void test_output_cap(void **state)
{
        (void)state;
        struct res x = { 0 };
        char *argv[] = { "head", "-c", "300000", "/dev/zero", NULL };
        run_one(argv, sh_env, NULL, 0, 5000, 1000, &x);
        assert_true(x.exited);
        assert_int_equal(x.code, 0);  /* it was not stopped: we drained the rest */
        assert_int_equal(x.out_len, 1000);
        assert_true(x.out_trunc);
        res_clear(&x);
        /* exactly the cap is not truncated */
        char *argv2[] = { "head", "-c", "1000", "/dev/zero", NULL };
        run_one(argv2, sh_env, NULL, 0, 5000, 1000, &x);
        assert_int_equal(x.out_len, 1000);
        assert_false(x.out_trunc);
        res_clear(&x);
}

static void test_stderr_cap(void **state)
{
        (void)state;
        struct subproc_engine *e = engine();
        struct res x = { 0 };
        char *argv[] = { "sh", "-c", "head -c 50000 /dev/zero >&2", NULL };
        struct subproc_spec spec = { .argv = argv, .envp = sh_env, .max_stderr_bytes = 10 };
        assert_int_equal(subproc_start(e, 9, &spec, on_done, &x, NULL), 0);
        run(e, 5000);
        assert_int_equal(x.calls, 1);
        assert_int_equal(x.err_len, 10);
        assert_true(x.err_trunc);
        assert_int_equal(x.out_len, 0);
        assert_false(x.out_trunc);
        subproc_engine_free(e);
        res_clear(&x);
}

static void test_concurrent_out_of_order(void **state)
{
        (void)state;
        enum { N = 20 };
        struct subproc_engine *e = engine();
        struct res x[N];
        char scripts[N][64];
        memset(x, 0, sizeof(x));
        completions = 0;
        for (int i = 0; i < N; i++) {
                /* the first started sleeps longest */
                snprintf(scripts[i], sizeof(scripts[i]), "sleep %d.%02d; echo %d", (N - i) * 6 / 100,
                         (N - i) * 6 % 100, i);
                char *argv[] = { "sh", "-c", scripts[i], NULL };
                struct subproc_spec spec = { .argv = argv, .envp = sh_env, .timeout_ms = 20000 };
                assert_int_equal(subproc_start(e, 100 + (uint64_t)i, &spec, on_done, &x[i], NULL), 0);
        }
        assert_int_equal(subproc_pending(e), N);
        run(e, 20000);
        assert_int_equal(subproc_pending(e), 0);
        int inversions = 0;
        for (int i = 0; i < N; i++) {
                assert_int_equal(x[i].calls, 1);
                assert_int_equal(x[i].id, 100 + (uint64_t)i);
                assert_int_equal(strtol(x[i].out, NULL, 10), i);
                for (int j = i + 1; j < N; j++)
                        inversions += x[i].order > x[j].order;
        }
        assert_true(x[N - 1].order < x[0].order);
        assert_true(inversions > N * (N - 1) / 4);
        for (int i = 0; i < N; i++)
                res_clear(&x[i]);
        subproc_engine_free(e);
}

static void test_env_exact(void **state)
{
        (void)state;
        struct res x = { 0 };
        char *envp[] = { "A=1", "B=two words", "PATH=/usr/bin:/bin", NULL };
        char *argv[] = { "env", NULL };
        run_one(argv, envp, NULL, 0, 5000, 0, &x);
        assert_string_equal(x.out, "A=1\nB=two words\nPATH=/usr/bin:/bin\n");
        res_clear(&x);
        /* NULL = empty; the bare name is found in the default PATH */
        char *argv2[] = { "env", NULL };
        setenv("SUBPROC_TEST_LEAK", "leak", 1);
        run_one(argv2, NULL, NULL, 0, 5000, 0, &x);
        assert_int_equal(x.out_len, 0);
        assert_int_equal(x.code, 0);
        unsetenv("SUBPROC_TEST_LEAK");
        res_clear(&x);
}

static void test_no_fd_leak(void **state)
{
        (void)state;
        /* descriptors of ours without O_CLOEXEC must not reach the child */
        int a = open("/dev/null", O_RDONLY);
        int p[2];
        assert_true(a >= 0);
        assert_int_equal(pipe(p), 0);
        struct res x = { 0 };
        sh("ls /proc/$$/fd; true", &x);
        assert_true(x.exited);
        assert_string_equal(x.out, "0\n1\n2\n");
        res_clear(&x);
        close(a);
        close(p[0]);
        close(p[1]);
}

static void test_session_and_signal_state(void **state)
{
        (void)state;
        /* our own mask blocks SIGUSR2, SIGUSR1 is ignored: the child gets neither */
        sigset_t m, old;
        sigemptyset(&m);
        sigaddset(&m, SIGUSR2);
        pthread_sigmask(SIG_BLOCK, &m, &old);
        struct sigaction ign = { .sa_handler = SIG_IGN }, prev;
        sigaction(SIGUSR1, &ign, &prev);
        struct res x = { 0 };
        char *argv[] = { "grep", "-E", "^(SigBlk|SigIgn):", "/proc/self/status", NULL };
        run_one(argv, sh_env, NULL, 0, 5000, 0, &x);
        unsigned long long blk = 1, ignored = 1;
        assert_int_equal(sscanf(x.out, "SigBlk:\t%llx\nSigIgn:\t%llx", &blk, &ignored), 2);
        assert_true(blk == 0);
        /* glibc's posix_spawn leaves its two internal signals (32, 33: thread
         * cancellation and setxid) ignored; glibc programs reinstall them. */
        assert_true((ignored & ~0x180000000ULL) == 0);
        res_clear(&x);
        sigaction(SIGUSR1, &prev, NULL);
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        /* new session: sid == pgid == pid */
        sh("read -r l < /proc/$$/stat; set -- ${l##*) }; echo $$ $3 $4", &x);
        int pid, pgrp, sid;
        assert_int_equal(sscanf(x.out, "%d %d %d", &pid, &pgrp, &sid), 3);
        assert_int_equal(pid, pgrp);
        assert_int_equal(pid, sid);
        assert_int_not_equal(sid, getsid(0));
        res_clear(&x);
}

static void test_cwd(void **state)
{
        (void)state;
        struct res x = { 0 };
        char *argv[] = { "pwd", NULL };
        run_one(argv, sh_env, NULL, 0, 5000, 0, &x);
        assert_string_equal(x.out, "/\n");
        res_clear(&x);
        struct subproc_engine *e = engine();
        struct subproc_spec spec = { .argv = argv, .envp = sh_env, .cwd = "/tmp" };
        assert_int_equal(subproc_start(e, 1, &spec, on_done, &x, NULL), 0);
        run(e, 5000);
        assert_string_equal(x.out, "/tmp\n");
        res_clear(&x);
        struct err *err = NULL;
        spec.cwd = "/nonexistent-dir-xyz";
        assert_int_equal(subproc_start(e, 2, &spec, on_done, &x, &err), -1);
        assert_int_equal(err_code(err), SUBPROC_E_SPEC);
        assert_non_null(strstr(err_msg(err), "nonexistent-dir-xyz"));
        err_free(err);
        err = NULL;
        spec.cwd = "tmp";
        assert_int_equal(subproc_start(e, 2, &spec, on_done, &x, &err), -1);
        assert_int_equal(err_code(err), SUBPROC_E_SPEC);
        err_free(err);
        assert_int_equal(subproc_pending(e), 0);
        subproc_engine_free(e);
}

static void test_bad_specs(void **state)
{
        (void)state;
        struct subproc_engine *e = engine();
        struct err *err = NULL;
        struct res x = { 0 };
        char *a1[] = { "no-such-program-xyz", NULL };
        struct subproc_spec spec = { .argv = a1, .envp = sh_env };
        assert_int_equal(subproc_start(e, 1, &spec, on_done, &x, &err), -1);
        assert_int_equal(err_code(err), SUBPROC_E_NOT_FOUND);
        assert_non_null(strstr(err_msg(err), "'no-such-program-xyz' not found in PATH=/usr/bin:/bin"));
        char *a2[] = { "/nonexistent/prog", NULL };
        spec.argv = a2;
        assert_int_equal(subproc_start(e, 1, &spec, on_done, &x, &err), -1);
        assert_int_equal(err_code(err), SUBPROC_E_NOT_FOUND);
        assert_non_null(strstr(err_msg(err), "No such file"));
        char *a3[] = { "./prog", NULL };
        spec.argv = a3;
        assert_int_equal(subproc_start(e, 1, &spec, on_done, &x, &err), -1);
        assert_int_equal(err_code(err), SUBPROC_E_SPEC);
        char *a4[] = { NULL };
        spec.argv = a4;
        assert_int_equal(subproc_start(e, 1, &spec, on_done, &x, &err), -1);
        assert_int_equal(err_code(err), SUBPROC_E_SPEC);
        char *a5[] = { "/etc/passwd", NULL };  /* not executable */
        spec.argv = a5;
        assert_int_equal(subproc_start(e, 1, &spec, on_done, &x, &err), -1);
        assert_int_equal(err_code(err), SUBPROC_E_NOT_FOUND);
        /* a duplicate id */
        char *a6[] = { "sleep", "5", NULL };
        spec.argv = a6;
        assert_int_equal(subproc_start(e, 1, &spec, on_done, &x, &err), 0);
        assert_int_equal(subproc_start(e, 1, &spec, on_done, &x, &err), -1);
        assert_int_equal(err_code(err), SUBPROC_E_SPEC);
        assert_int_equal(subproc_pending(e), 1);
        err_free(err);
        subproc_engine_free(e);
        assert_int_equal(x.calls, 0);
}

static void test_cancel(void **state)
{
        (void)state;
        struct subproc_engine *e = engine();
        struct res x = { 0 };
        char *argv[] = { "sh", "-c", "sleep 60 & sleep 60", NULL };
        struct subproc_spec spec = { .argv = argv, .envp = sh_env };
        assert_int_equal(subproc_start(e, 5, &spec, on_done, &x, NULL), 0);
        usleep(100000);
        pid_t pid = subproc_pid(e, 5);
        assert_true(pid > 0);
        assert_false(subproc_cancel(e, 6));
        assert_true(subproc_cancel(e, 5));
        assert_false(subproc_cancel(e, 5));
        assert_int_equal(subproc_pending(e), 0);
        assert_int_equal(subproc_pid(e, 5), 0);
        /* the engine keeps reaping it; no callback ever */
        double until = mono_ms() + 2000;
        while (mono_ms() < until) {
                struct pollfd p[8];
                int t = 50;
                size_t n = subproc_fds(e, p, 8, &t);
                poll(p, n, t);
                subproc_perform(e, p, n, NULL);
                if (n == 0)
                        break;
        }
        assert_true(kill(pid, 0) < 0 && errno == ESRCH);
        assert_int_equal(x.calls, 0);
        /* the id can be used again */
        char *argv2[] = { "true", NULL };
        spec.argv = argv2;
        assert_int_equal(subproc_start(e, 5, &spec, on_done, &x, NULL), 0);
        run(e, 5000);
        assert_int_equal(x.calls, 1);
        subproc_engine_free(e);
        res_clear(&x);
}

static void test_engine_free_kills(void **state)
{
        (void)state;
        struct subproc_engine *e = engine();
        struct res x = { 0 };
        pid_t pids[3];
        char *argv[] = { "sleep", "60", NULL };
        struct subproc_spec spec = { .argv = argv, .envp = sh_env };
        for (int i = 0; i < 3; i++) {
                assert_int_equal(subproc_start(e, (uint64_t)i, &spec, on_done, &x, NULL), 0);
                pids[i] = subproc_pid(e, (uint64_t)i);
        }
        assert_true(subproc_cancel(e, 1));  /* one waiting to be reaped too */
        double t0 = mono_ms();
        subproc_engine_free(e);
        assert_true(mono_ms() - t0 < 2000);
        for (int i = 0; i < 3; i++)
                assert_true(kill(pids[i], 0) < 0 && errno == ESRCH);  /* reaped, not zombies */
        assert_int_equal(x.calls, 0);
}

static struct subproc_engine *chain_engine;
static struct res chain_second;

static void chain_done(void *arg, uint64_t id, const struct subproc_result *r)
{
        on_done(arg, id, r);
        char *argv[] = { "echo", "second", NULL };
        struct subproc_spec spec = { .argv = argv, .envp = sh_env };
        assert_int_equal(subproc_start(chain_engine, id + 1, &spec, on_done, &chain_second, NULL), 0);
}

static void test_callback_starts_another(void **state)
{
        (void)state;
        chain_engine = engine();
        struct res first = { 0 };
        memset(&chain_second, 0, sizeof(chain_second));
        char *argv[] = { "echo", "first", NULL };
        struct subproc_spec spec = { .argv = argv, .envp = sh_env };
        assert_int_equal(subproc_start(chain_engine, 1, &spec, chain_done, &first, NULL), 0);
        run(chain_engine, 5000);
        assert_string_equal(first.out, "first\n");
        assert_int_equal(chain_second.calls, 1);
        assert_int_equal(chain_second.id, 2);
        assert_string_equal(chain_second.out, "second\n");
        subproc_engine_free(chain_engine);
        res_clear(&first);
        res_clear(&chain_second);
}

static void test_perform_polls_itself(void **state)
{
        (void)state;
        struct subproc_engine *e = engine();
        struct res x = { 0 };
        char *argv[] = { "echo", "self", NULL };
        struct subproc_spec spec = { .argv = argv, .envp = sh_env };
        assert_int_equal(subproc_start(e, 1, &spec, on_done, &x, NULL), 0);
        double until = mono_ms() + 5000;
        while (subproc_pending(e) && mono_ms() < until) {
                assert_int_equal(subproc_perform(e, NULL, 0, NULL), 0);
                usleep(5000);
        }
        assert_int_equal(x.calls, 1);
        assert_string_equal(x.out, "self\n");
        subproc_engine_free(e);
        res_clear(&x);
}

static void test_fds_growth_and_timeout(void **state)
{
        (void)state;
        struct subproc_engine *e = engine();
        struct res x = { 0 };
        char *argv[] = { "sleep", "5", NULL };
        struct subproc_spec spec = { .argv = argv, .envp = sh_env, .timeout_ms = 400 };
        assert_int_equal(subproc_start(e, 1, &spec, on_done, &x, NULL), 0);
        assert_int_equal(subproc_start(e, 2, &spec, on_done, &x, NULL), 0);
        struct pollfd p[2];
        int t = -1;
        /* per child: pidfd, stdout, stderr (stdin is closed: no input) */
        assert_int_equal(subproc_fds(e, p, 2, &t), 6);
        assert_true(t > 0 && t <= 401);
        t = 50;
        struct pollfd big[6];
        assert_int_equal(subproc_fds(e, big, 6, &t), 6);
        assert_int_equal(t, 50);  /* only ever lowered */
        subproc_engine_free(e);
}

static void test_sigchld_ignored_refused(void **state)
{
        (void)state;
        struct sigaction ign = { .sa_handler = SIG_IGN }, prev;
        sigaction(SIGCHLD, &ign, &prev);
        struct subproc_engine *e = engine();
        struct err *err = NULL;
        char *argv[] = { "true", NULL };
        struct subproc_spec spec = { .argv = argv, .envp = sh_env };
        int r = subproc_start(e, 1, &spec, on_done, NULL, &err);
        sigaction(SIGCHLD, &prev, NULL);
        assert_int_equal(r, -1);
        assert_non_null(strstr(err_msg(err), "SIGCHLD is ignored"));
        err_free(err);
        subproc_engine_free(e);
}

static void test_grace_term_first(void **state)
{
        (void)state;
        struct subproc_engine *e = engine();
        struct res x = { 0 };
        /* cleans up on SIGTERM: its own exit status is reported, with timed_out */
        char *argv[] = { "sh", "-c", "trap 'echo cleaned; exit 5' TERM; while :; do sleep 0.05; done", NULL };
        struct subproc_spec spec = { .argv = argv, .envp = sh_env, .timeout_ms = 200, .kill_grace_ms = 5000 };
        assert_int_equal(subproc_start(e, 1, &spec, on_done, &x, NULL), 0);
        run(e, 10000);
        assert_int_equal(x.calls, 1);
        assert_true(x.timed_out);
        assert_true(x.exited);
        assert_int_equal(x.code, 5);
        assert_string_equal(x.out, "cleaned\n");
        assert_true(x.elapsed < 3000);
        res_clear(&x);
        /* ignores SIGTERM: SIGKILL to the group once the grace is over */
        char *argv2[] = { "sh", "-c", "trap '' TERM; sleep 30", NULL };
        spec.argv = argv2;
        spec.timeout_ms = 100;
        spec.kill_grace_ms = 300;
        assert_int_equal(subproc_start(e, 2, &spec, on_done, &x, NULL), 0);
        run(e, 10000);
        assert_true(x.timed_out);
        assert_false(x.exited);
        assert_int_equal(x.sig, SIGKILL);
        assert_true(x.elapsed >= 390 && x.elapsed < 3000);
        res_clear(&x);
        subproc_engine_free(e);
}

static void test_grace_cancel_and_free(void **state)
{
        (void)state;
        struct subproc_engine *e = engine();
        struct res x = { 0 };
        char *argv[] = { "sh", "-c", "trap '' TERM; sleep 30", NULL };
        struct subproc_spec spec = { .argv = argv, .envp = sh_env, .kill_grace_ms = 300 };
        assert_int_equal(subproc_start(e, 1, &spec, on_done, &x, NULL), 0);
        usleep(100000);  /* let sh install its trap */
        pid_t pid = subproc_pid(e, 1);
        assert_true(subproc_cancel(e, 1));
        assert_int_equal(subproc_pending(e), 0);
        struct pollfd p[4];
        int t = -1;
        assert_int_equal(subproc_fds(e, p, 4, &t), 1);  /* its pidfd, until reaped */
        assert_true(t >= 0 && t <= 301);
        double t0 = mono_ms();
        while (mono_ms() - t0 < 3000) {
                t = -1;
                size_t n = subproc_fds(e, p, 4, &t);
                if (n == 0)
                        break;
                poll(p, n, t);
                subproc_perform(e, p, n, NULL);
        }
        double took = mono_ms() - t0;
        assert_true(took >= 150 && took < 2500);
        assert_true(kill(pid, 0) < 0 && errno == ESRCH);
        assert_int_equal(x.calls, 0);
        /* engine_free: one that leaves on SIGTERM goes at once... */
        char *argv2[] = { "sh", "-c", "trap 'exit 0' TERM; while :; do sleep 0.02; done", NULL };
        spec.argv = argv2;
        spec.kill_grace_ms = 5000;
        assert_int_equal(subproc_start(e, 2, &spec, on_done, &x, NULL), 0);
        usleep(100000);
        t0 = mono_ms();
        subproc_engine_free(e);
        assert_true(mono_ms() - t0 < 2000);
        /* ...one that does not is killed when its grace is over */
        e = engine();
        spec.argv = argv;
        spec.kill_grace_ms = 300;
        assert_int_equal(subproc_start(e, 3, &spec, on_done, &x, NULL), 0);
        usleep(100000);
        pid = subproc_pid(e, 3);
        t0 = mono_ms();
        subproc_engine_free(e);
        took = mono_ms() - t0;
        assert_true(took >= 250 && took < 2500);
        assert_true(kill(pid, 0) < 0 && errno == ESRCH);
        assert_int_equal(x.calls, 0);
}

/* ---- children started elsewhere (the monitor starts a broker's tools) ---- */

static int remote_kills, remote_gone;

static void remote_kill(void *arg, bool engine_gone)
{
        (void)arg;
        remote_kills++;
        remote_gone += engine_gone;
}

/* Its stdio comes later; stdin is written, stdout read to EOF, the exit
 * status is the one reported; the timeout asks for a kill once. */
static void test_remote_child(void **state)
{
        (void)state;
        struct subproc_engine *e = engine();
        struct res x = { 0 };
        struct err *err = NULL;
        remote_kills = remote_gone = 0;
        struct subproc_spec spec = { .stdin_data = "{}\n", .stdin_len = 3, .timeout_ms = 10000 };
        assert_int_equal(subproc_remote_new(e, 7, &spec, remote_kill, NULL, on_done, &x, &err), 0);
        assert_int_equal(subproc_pending(e), 1);
        run(e, 100);  /* nothing to do until it starts */
        assert_int_equal(x.calls, 0);
        int in[2], out[2], er[2];
        assert_int_equal(pipe2(in, O_CLOEXEC), 0);
        assert_int_equal(pipe2(out, O_CLOEXEC), 0);
        assert_int_equal(pipe2(er, O_CLOEXEC), 0);
        int fds[3] = { in[1], out[0], er[0] };
        assert_int_equal(subproc_remote_started(e, 7, fds), 0);
        assert_int_equal(subproc_remote_started(e, 7, fds), -1);  /* once */
        char buf[8];
        assert_int_equal(read(in[0], buf, sizeof(buf)), 3);
        assert_int_equal(write(out[1], "[1]", 3), 3);
        assert_int_equal(write(er[1], "warn", 4), 4);
        close(in[0]), close(out[1]), close(er[1]);
        subproc_remote_ended(e, 7, true, 3 << 8);
        run(e, 2000);
        assert_int_equal(x.calls, 1);
        assert_true(x.exited);
        assert_int_equal(x.code, 3);
        assert_string_equal(x.out, "[1]");
        assert_string_equal(x.err, "warn");
        assert_int_equal(remote_kills, 0);
        res_clear(&x);

        /* Its timeout: one kill; then the end it reports (SIGKILL). */
        spec.timeout_ms = 50;
        assert_int_equal(subproc_remote_new(e, 8, &spec, remote_kill, NULL, on_done, &x, &err), 0);
        run(e, 300);
        assert_int_equal(remote_kills, 1);
        assert_int_equal(x.calls, 0);
        subproc_remote_ended(e, 8, false, SIGKILL);
        run(e, 1000);
        assert_int_equal(x.calls, 1);
        assert_true(x.timed_out);
        assert_false(x.exited);
        assert_int_equal(x.sig, SIGKILL);
        res_clear(&x);

        /* Never started: forgotten, no callback; one left at engine_free
         * hears that the engine is gone. */
        assert_int_equal(subproc_remote_new(e, 9, &spec, remote_kill, NULL, on_done, &x, &err), 0);
        assert_true(subproc_remote_forget(e, 9));
        assert_false(subproc_remote_forget(e, 9));
        spec.timeout_ms = 0;
        assert_int_equal(subproc_remote_new(e, 10, &spec, remote_kill, NULL, on_done, &x, &err), 0);
        subproc_engine_free(e);
        assert_int_equal(remote_gone, 1);
        assert_int_equal(x.calls, 0);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_echo_cat),
                cmocka_unit_test(test_remote_child),
                cmocka_unit_test(test_large_stdin_stdout),
                cmocka_unit_test(test_child_not_reading_stdin),
                cmocka_unit_test(test_exit_codes_and_stderr),
                cmocka_unit_test(test_signals),
                cmocka_unit_test(test_timeout),
                cmocka_unit_test(test_timeout_kills_grandchildren),
                cmocka_unit_test(test_exit_kills_leftovers),
                cmocka_unit_test(test_escaped_descendant_does_not_hang),
                cmocka_unit_test(test_output_cap),
                cmocka_unit_test(test_stderr_cap),
                cmocka_unit_test(test_concurrent_out_of_order),
                cmocka_unit_test(test_env_exact),
                cmocka_unit_test(test_no_fd_leak),
                cmocka_unit_test(test_session_and_signal_state),
                cmocka_unit_test(test_cwd),
                cmocka_unit_test(test_bad_specs),
                cmocka_unit_test(test_cancel),
                cmocka_unit_test(test_engine_free_kills),
                cmocka_unit_test(test_callback_starts_another),
                cmocka_unit_test(test_perform_polls_itself),
                cmocka_unit_test(test_fds_growth_and_timeout),
                cmocka_unit_test(test_sigchld_ignored_refused),
                cmocka_unit_test(test_grace_term_first),
                cmocka_unit_test(test_grace_cancel_and_free),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
