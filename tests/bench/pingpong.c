/* tests/bench/pingpong.c — the floor under a chidori host call: a bare C
 * round trip over a socketpair with chidori's framing (4-byte big-endian
 * length + body), no JSON, no engine.
 *
 * The parent plays the broker: non-blocking socket, poll() then read the
 * header and body, then writev() the answer frame.  The child plays the
 * worker: blocking reads, writev() of header + body.  One round trip = the
 * child sends a call frame and blocks until the answer frame is read back —
 * what an awaited host call costs the worker at the very least.
 *
 * Usage: pingpong [-n N] [-s BYTES] [-t thread|process] [-c CPU]
 *   -n   round trips timed (default 10000; 200 warm-up ones come first)
 *   -s   body size of each frame (default 64, about a memory.get call)
 *   -t   peer is a forked process (default) or a thread of this process
 *        (what `chidori run --no-isolate` does)
 *   -c   pin both ends to this CPU (default: no pinning)
 * Prints: "median_us p10_us p90_us mean_us". */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static long n_trips = 10000, warm = 200;
static size_t body = 64;

static int cmp(const void *a, const void *b)
{
        double x = *(const double *)a, y = *(const double *)b;
        return x < y ? -1 : x > y;
}

static double now_us(void)
{
        struct timespec t;
        clock_gettime(CLOCK_MONOTONIC, &t);
        return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

static void die(const char *what)
{
        perror(what);
        exit(1);
}

static void write_frame(int fd, char *buf, size_t len)
{
        uint32_t h = htonl((uint32_t)len);
        struct iovec v[2] = { { &h, 4 }, { buf, len } };
        size_t want = 4 + len;
        ssize_t w = writev(fd, v, 2);
        if (w < 0 || (size_t)w != want) /* small frames: all or nothing */
                die("writev");
}

/* Blocking read of exactly len bytes; 0 on EOF at the start. */
static int read_full(int fd, void *p, size_t len)
{
        size_t have = 0;
        while (have < len) {
                ssize_t r = read(fd, (char *)p + have, len - have);
                if (r == 0 && have == 0)
                        return 0;
                if (r <= 0) {
                        if (r < 0 && errno == EINTR)
                                continue;
                        die("read");
                }
                have += (size_t)r;
        }
        return 1;
}

/* The broker side: answer every frame, reading as a poll loop does. */
static void serve(int fd)
{
        fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
        char *buf = malloc(body);
        for (;;) {
                uint8_t hdr[4];
                size_t have = 0, need = 4, blen = 0;
                int in_body = 0;
                while (have < need) {
                        struct pollfd p = { .fd = fd, .events = POLLIN };
                        if (poll(&p, 1, -1) < 0) {
                                if (errno == EINTR)
                                        continue;
                                die("poll");
                        }
                        ssize_t r = read(fd, in_body ? buf + have : (char *)hdr + have, need - have);
                        if (r == 0)
                                return; /* peer done */
                        if (r < 0) {
                                if (errno == EAGAIN || errno == EINTR)
                                        continue;
                                die("read");
                        }
                        have += (size_t)r;
                        if (!in_body && have == 4) {
                                uint32_t l;
                                memcpy(&l, hdr, 4);
                                blen = ntohl(l);
                                if (blen > body)
                                        exit(1);
                                in_body = 1, have = 0, need = blen;
                        }
                }
                write_frame(fd, buf, blen);
        }
}

static void *serve_thread(void *arg)
{
        serve(*(int *)arg);
        return NULL;
}

static void pin(int cpu)
{
        if (cpu < 0)
                return;
        cpu_set_t s;
        CPU_ZERO(&s);
        CPU_SET(cpu, &s);
        if (sched_setaffinity(0, sizeof(s), &s) < 0)
                die("sched_setaffinity");
}

int main(int argc, char **argv)
{
        int thread = 0, cpu = -1, opt;
        while ((opt = getopt(argc, argv, "n:s:t:c:")) != -1) {
                switch (opt) {
                case 'n': n_trips = strtol(optarg, NULL, 10); break;
                case 's': body = (size_t)strtoul(optarg, NULL, 10); break;
                case 't': thread = strcmp(optarg, "thread") == 0; break;
                case 'c': cpu = (int)strtol(optarg, NULL, 10); break;
                default:
                        fprintf(stderr, "usage: pingpong [-n N] [-s BYTES] [-t thread|process] [-c CPU]\n");
                        return 2;
                }
        }
        if (n_trips < 1 || body < 1 || body > (1u << 20))
                return 2;
        pin(cpu); /* inherited by the child process and the thread */

        int sv[2];
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
                die("socketpair");
        pthread_t th;
        pid_t pid = -1;
        if (thread) {
                if (pthread_create(&th, NULL, serve_thread, &sv[0]) != 0)
                        die("pthread_create");
        } else {
                pid = fork();
                if (pid < 0)
                        die("fork");
                if (pid == 0) {
                        close(sv[1]);
                        serve(sv[0]);
                        _exit(0);
                }
                close(sv[0]);
        }

        /* The worker side: send a call frame, block until its answer. */
        int fd = sv[1];
        char *buf = malloc(body);
        memset(buf, 'x', body);
        double *t = calloc((size_t)n_trips, sizeof(double));
        double sum = 0;
        for (long i = -warm; i < n_trips; i++) {
                double a = now_us();
                write_frame(fd, buf, body);
                uint32_t h;
                if (!read_full(fd, &h, 4) || ntohl(h) != body || !read_full(fd, buf, body))
                        die("short answer");
                double d = now_us() - a;
                if (i >= 0) {
                        t[i] = d;
                        sum += d;
                }
        }
        shutdown(fd, SHUT_WR);
        if (thread)
                pthread_join(th, NULL);
        else
                waitpid(pid, NULL, 0);
        qsort(t, (size_t)n_trips, sizeof(double), cmp);
        printf("%.2f %.2f %.2f %.2f\n", t[n_trips / 2], t[n_trips / 10], t[(n_trips * 9) / 10],
               sum / (double)n_trips);
        return 0;
}
