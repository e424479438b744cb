/* tests/probes/bad_worker.c — a deliberately broken engine worker, for the
 * parent's bad-input tests.  Selected with CHIDORI_WORKER=<symlink>, where the
 * symlink's name ("bad-<mode>") picks the misbehaviour; argv[0] carries it. */
#define _GNU_SOURCE
#include <poll.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define FD 3

static void put(const void *b, size_t n)
{
        const char *p = b;
        while (n) {
                ssize_t w = write(FD, p, n);
                if (w <= 0)
                        exit(9);
                p += w, n -= (size_t)w;
        }
}

static void frame(const char *json)
{
        size_t n = strlen(json);
        unsigned char h[4] = { (unsigned char)(n >> 24), (unsigned char)(n >> 16), (unsigned char)(n >> 8),
                               (unsigned char)n };
        put(h, 4);
        put(json, n);
}

/* Read and discard one frame (the init); returns its body. */
static char *read_frame(void)
{
        unsigned char h[4];
        if (read(FD, h, 4) != 4)
                exit(8);
        size_t n = (size_t)h[0] << 24 | (size_t)h[1] << 16 | (size_t)h[2] << 8 | h[3];
        char *b = malloc(n + 1);
        size_t have = 0;
        while (have < n) {
                ssize_t r = read(FD, b + have, n - have);
                if (r <= 0)
                        exit(8);
                have += (size_t)r;
        }
        b[n] = 0;
        return b;
}

/* pause() is not on the worker's seccomp allowlist; poll is. */
static void wait_forever(void)
{
        for (;;)
                poll(NULL, 0, 1000);
}

/* What engine/lockdown.c does for SIGABRT: the worker is pid 1 of its pid
 * namespace, where a self-sent SIGABRT with the default action is ignored. */
static void on_abort(int sig)
{
        (void)sig;
        static const char m[] = "chidori-worker: fatal signal 6\n";
        if (write(2, m, sizeof(m) - 1) < 0)
                _exit(134);
        _exit(134);
}

static void *sleeper(void *arg)
{
        (void)arg;
        wait_forever();
        return NULL;
}

/* Ask for a template whose answer is ~2 MB, far more than the socket
 * buffers hold, and read only the start of it: the parent is then still
 * writing the rest when this worker does what the mode says. */
static void big_answer_pending(void)
{
        static const char head[] = "{\"type\":\"call\",\"id\":1,\"op\":\"template\",\"args\":{\"template\":\"";
        static const char mid[] = "\",\"vars\":{\"s\":\"", tail[] = "\"}}}";
        size_t cap = sizeof(head) + 100 * 5 + sizeof(mid) + 20000 + sizeof(tail);
        char *f = malloc(cap), *p = f;
        memcpy(p, head, sizeof(head) - 1);
        p += sizeof(head) - 1;
        for (int i = 0; i < 100; i++, p += 5)
                memcpy(p, "{{s}}", 5);
        memcpy(p, mid, sizeof(mid) - 1);
        p += sizeof(mid) - 1;
        memset(p, 'x', 20000);
        p += 20000;
        memcpy(p, tail, sizeof(tail));
        frame(f);
        free(f);
        unsigned char h[4];
        if (read(FD, h, 4) != 4)
                exit(8);
}

static void ready_init(void)
{
        frame("{\"type\":\"ready\",\"protocol\":1}");
        free(read_frame());
}

static int run(int argc, char **argv)
{
        (void)argc;
        const char *mode = strrchr(argv[0], '/');
        mode = mode ? mode + 1 : argv[0];
        if (strncmp(mode, "bad-", 4) == 0)
                mode += 4;

        if (!strcmp(mode, "exit-before-ready"))
                return 3;
        if (!strcmp(mode, "oversize")) {
                put("\x7f\xff\xff\xff", 4);
                wait_forever();
        }
        if (!strcmp(mode, "zero-length")) {
                put("\0\0\0\0", 4);
                wait_forever();
        }
        if (!strcmp(mode, "short-header")) {
                put("\0\0", 2);
                return 0;
        }
        if (!strcmp(mode, "short-body")) {
                put("\0\0\0\x64{\"type\":", 13);
                return 0;
        }
        if (!strcmp(mode, "garbage")) {
                put("\0\0\0\x05hello", 9);
                wait_forever();
        }
        if (!strcmp(mode, "unknown-type")) {
                frame("{\"type\":\"bogus\"}");
                wait_forever();
        }
        if (!strcmp(mode, "call-before-ready")) {
                frame("{\"type\":\"call\",\"id\":1,\"op\":\"log\",\"args\":{}}");
                wait_forever();
        }
        if (!strcmp(mode, "threads-before-ready")) {
                /* Start 16 threads before saying ready, as the engine starts
                 * its own; when the pids limit refuses one, crash the way
                 * JavaScriptCore does (a trap instruction: SIGILL). */
                for (int i = 0; i < 16; i++) {
                        pthread_t t;
                        if (pthread_create(&t, NULL, sleeper, NULL) != 0)
                                __builtin_trap();
                }
                ready_init();
                frame("{\"type\":\"done\",\"ok\":true,\"value\":\"16 threads started\"}");
                return 0;
        }
        if (!strcmp(mode, "late-loader")) {
                /* A worker whose libraries take 20 ms to load: fd 5 (the
                 * loader cue) stays open that long.  The monitor starts the
                 * broker only on its hang-up, so no init frame may come
                 * before (broker.bats). */
                struct stat st;
                int pipe5 = fstat(5, &st) == 0 && S_ISFIFO(st.st_mode);
                struct pollfd p = { .fd = FD, .events = POLLIN };
                int early = poll(&p, 1, 20);
                close(5);
                ready_init();
                char v[128];
                snprintf(v, sizeof(v), "{\"type\":\"done\",\"ok\":true,\"value\":\"fd 5 %s, init before the cue: %s\"}",
                         pipe5 ? "a pipe" : "not a pipe", early > 0 ? "yes" : "no");
                frame(v);
                return 0;
        }
        if (!strcmp(mode, "stall-midframe")) {
                frame("{\"type\":\"ready\",\"protocol\":1}");
                put("\0\0", 2);
                wait_forever();
        }
        ready_init();
        if (!strcmp(mode, "bad-id")) {
                frame("{\"type\":\"call\",\"id\":5,\"op\":\"log\",\"args\":{\"message\":\"x\"}}");
                wait_forever();
        }
        if (!strcmp(mode, "many-values")) {
                /* A 12 MiB call whose args are 6 million tiny JSON values:
                 * parsed as is, ~500 MiB of tree in the parent. */
                size_t n = 6u << 20;
                const char *head = "{\"type\":\"call\",\"id\":1,\"op\":\"log\",\"args\":{\"message\":\"x\",\"a\":[";
                size_t hl = strlen(head), len = hl + 2 * n + 2;
                char *b = malloc(len + 1);
                memcpy(b, head, hl);
                for (size_t i = 0; i < n; i++)
                        b[hl + 2 * i] = '0', b[hl + 2 * i + 1] = ',';
                b[hl + 2 * n - 1] = ']';
                b[hl + 2 * n] = '}';
                b[hl + 2 * n + 1] = '}';
                b[len] = 0;
                frame(b);
                wait_forever();
        }
        if (!strcmp(mode, "result-frame")) {
                frame("{\"type\":\"result\",\"id\":1,\"ok\":true,\"value\":1}");
                wait_forever();
        }
        if (!strcmp(mode, "crash")) {
                /* A real fault (delivered even to pid 1), on a page mapped
                 * without access so no sanitizer flags the store first; the
                 * default action, not a sanitizer's SEGV handler. */
                signal(SIGSEGV, SIG_DFL);
                int *volatile p = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
                *p = 1;
        }
        if (!strcmp(mode, "abort")) {
                signal(SIGABRT, on_abort);
                abort();
        }
        if (!strcmp(mode, "exit-before-done"))
                return 4;
        /* The parent has a large answer half written when the worker goes. */
        if (!strcmp(mode, "exit-mid-answer")) {
                big_answer_pending();
                return 4;
        }
        if (!strcmp(mode, "done-mid-answer")) {
                big_answer_pending();
                frame("{\"type\":\"done\",\"ok\":true,\"value\":\"done\"}");
                return 0;
        }
        if (!strcmp(mode, "crash-mid-answer")) {
                big_answer_pending();
                signal(SIGSEGV, SIG_DFL);
                int *volatile p = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
                *p = 1;
        }
        if (!strcmp(mode, "abort-mid-answer")) {
                big_answer_pending();
                signal(SIGABRT, on_abort);
                abort();
        }
        if (!strcmp(mode, "abort-past-budget")) {
                /* What chidori-worker's SIGABRT handler says when the engine
                 * aborts after its CPU budget ran out (engine/lockdown.c). */
                static const char m[] = "chidori-worker: cpu limit reached\nchidori-worker: fatal signal 6\n";
                ssize_t w = write(2, m, sizeof(m) - 1);
                (void)w;
                _exit(134);
        }
        if (!strcmp(mode, "syscall-mid-answer")) {
                big_answer_pending();
                syscall(SYS_ptrace, 0, 0, 0, 0);  /* in the fixed prefix: never allowed */
                return 5;
        }
        if (!strcmp(mode, "hang"))
                wait_forever();
        if (!strcmp(mode, "trap")) {
                /* What JavaScriptCore does on a failed internal check
                 * (RELEASE_ASSERT, CRASH()): a trap instruction, SIGILL,
                 * which the kernel delivers even to pid 1. */
                __builtin_trap();
        }
        if (!strcmp(mode, "threads-after-ready")) {
                /* Start threads until the process limit refuses one, say
                 * so in a log call, and wait (to be killed). */
                int n = 0;
                pthread_t t;
                while (n < 4096 && pthread_create(&t, NULL, sleeper, NULL) == 0)
                        n++;
                char msg[160];
                snprintf(msg, sizeof(msg),
                         "{\"type\":\"call\",\"id\":1,\"op\":\"log\",\"args\":{\"level\":\"info\","
                         "\"message\":\"%d threads, then refused\"}}", n);
                frame(msg);
                wait_forever();
        }
        if (!strcmp(mode, "unknown-op")) {
                frame("{\"type\":\"call\",\"id\":1,\"op\":\"nope\",\"args\":{}}");
                char *r = read_frame();
                /* Echo the parent's answer back as the run's value. */
                size_t cap = strlen(r) + 64;
                char *out = malloc(cap);
                snprintf(out, cap, "{\"type\":\"done\",\"ok\":true,\"value\":%s}", r);
                frame(out);
                return 0;
        }
        if (!strcmp(mode, "stderr-escapes")) {
                /* A compromised worker writing to the terminal through the
                 * parent's [worker] forwarding. */
                static const char m[] = "\x1b]0;pwned\x07\r\nchidori: memory limit exceeded (limit 1 MiB)\n"
                                        "\xe2\x80\xae\xc2\x9b" "2J\x7f\n";
                if (write(2, m, sizeof(m) - 1) < 0)
                        return 9;
                frame("{\"type\":\"done\",\"ok\":true,\"value\":1}");
                return 0;
        }
        if (!strcmp(mode, "escape-op")) {
                /* An op name the real engine never sends (it checks [a-zA-Z.]). */
                frame("{\"type\":\"call\",\"id\":1,\"op\":\"\\u001b]0;pwned\\u0007\\nchidori: fake\",\"args\":{}}");
                free(read_frame());
                frame("{\"type\":\"done\",\"ok\":true,\"value\":2}");
                return 0;
        }
        fprintf(stderr, "bad_worker: unknown mode '%s'\n", mode);
        return 99;
}

/* Exit without atexit handlers, like the real worker: a sanitizer's leak
 * checker would otherwise start a tracer thread the worker profile refuses. */
int main(int argc, char **argv)
{
        _exit(run(argc, argv));
}
