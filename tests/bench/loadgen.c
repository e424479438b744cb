/* tests/bench/loadgen.c — the serve table of `make bench`: C clients at
 * once, each sending POST /sessions (wait: the answer comes once the
 * session settled) one after another on its own keep-alive connection,
 * N sessions in all.  Prints one line:
 *
 *      sessions  seconds  sessions_per_s  p50_ms  p99_ms  errors
 *
 * Usage: loadgen -p PORT [-c CLIENTS] [-n SESSIONS] [-b BODY] [-g GAP_MS]  (host 127.0.0.1)
 * A session answered with anything but 201 counts as an error.  -g: each
 * client waits GAP_MS before each request (not counted in its latency; the
 * seconds and rate then include the gaps): with -c 1, sessions that find
 * serve's warm pool full again. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static int port = 8080, clients = 1, total = 100, gap_ms;
static const char *body = "{\"input\": 1}";
static int next_job;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static double *lat;
static int nlat, errors;

static double now_ms(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int dial(void)
{
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((unsigned short)port) };
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        if (connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
                close(fd);
                return -1;
        }
        return fd;
}

/* One request on fd: the status, or -1 (the connection is to be redialed). */
static int one(int fd)
{
        char req[1024];
        int n = snprintf(req, sizeof(req),
                         "POST /sessions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                         "Content-Length: %zu\r\n\r\n%s",
                         strlen(body), body);
        if (write(fd, req, (size_t)n) != n)
                return -1;
        char buf[65536];
        size_t got = 0;
        char *hend = NULL;
        while (!hend) {
                ssize_t r = read(fd, buf + got, sizeof(buf) - 1 - got);
                if (r <= 0)
                        return -1;
                got += (size_t)r;
                buf[got] = '\0';
                hend = strstr(buf, "\r\n\r\n");
                if (!hend && got >= sizeof(buf) - 1)
                        return -1;
        }
        int status = 0;
        sscanf(buf, "HTTP/1.%*d %d", &status);
        const char *cl = strcasestr(buf, "\r\nContent-Length:");
        size_t len = cl && cl < hend ? strtoul(cl + 17, NULL, 10) : 0;
        size_t have = got - (size_t)(hend + 4 - buf);
        while (have < len) {
                ssize_t r = read(fd, buf, sizeof(buf) - 1);
                if (r <= 0)
                        return -1;
                have += (size_t)r;
        }
        return status;
}

static void *client(void *arg)
{
        (void)arg;
        int fd = dial();
        for (;;) {
                pthread_mutex_lock(&mu);
                int job = next_job < total ? next_job++ : -1;
                pthread_mutex_unlock(&mu);
                if (job < 0)
                        break;
                if (gap_ms > 0)
                        nanosleep(&(struct timespec){ gap_ms / 1000, (long)(gap_ms % 1000) * 1000000 }, NULL);
                double t0 = now_ms();
                int st = fd >= 0 ? one(fd) : -1;
                if (st < 0) { /* closed by the server: once more on a new connection */
                        if (fd >= 0)
                                close(fd);
                        fd = dial();
                        st = fd >= 0 ? one(fd) : -1;
                }
                double dt = now_ms() - t0;
                pthread_mutex_lock(&mu);
                if (st == 201)
                        lat[nlat++] = dt;
                else
                        errors++;
                pthread_mutex_unlock(&mu);
        }
        if (fd >= 0)
                close(fd);
        return NULL;
}

static int cmp(const void *a, const void *b)
{
        double x = *(const double *)a, y = *(const double *)b;
        return x < y ? -1 : x > y;
}

/* A positive int, or -1. */
static int number(const char *s)
{
        char *end;
        errno = 0;
        long v = strtol(s, &end, 10);
        return errno || *end || end == s || v < 1 || v > 1000000 ? -1 : (int)v;
}

int main(int argc, char **argv)
{
        int c;
        while ((c = getopt(argc, argv, "p:c:n:b:g:")) != -1) {
                switch (c) {
                case 'p': port = number(optarg); break;
                case 'c': clients = number(optarg); break;
                case 'n': total = number(optarg); break;
                case 'b': body = optarg; break;
                case 'g': gap_ms = number(optarg); break;
                default:
                        fprintf(stderr, "usage: loadgen -p PORT [-c CLIENTS] [-n SESSIONS] [-b BODY] [-g GAP_MS]\n");
                        return 2;
                }
        }
        if (clients < 1 || total < 1 || port < 1 || gap_ms < 0) {
                fprintf(stderr, "loadgen: -c, -n, -p and -g must be positive\n");
                return 2;
        }
        lat = calloc((size_t)total, sizeof(*lat));
        pthread_t *t = calloc((size_t)clients, sizeof(*t));
        if (!lat || !t)
                return 1;
        double t0 = now_ms();
        for (int i = 0; i < clients; i++)
                pthread_create(&t[i], NULL, client, NULL);
        for (int i = 0; i < clients; i++)
                pthread_join(t[i], NULL);
        double secs = (now_ms() - t0) / 1e3;
        qsort(lat, (size_t)nlat, sizeof(*lat), cmp);
        double p50 = nlat ? lat[(nlat - 1) / 2] : 0, p99 = nlat ? lat[(int)((nlat - 1) * 0.99)] : 0;
        printf("%d %.2f %.1f %.1f %.1f %d\n", nlat, secs, nlat / secs, p50, p99, errors);
        free(lat);
        free(t);
        return nlat ? 0 : 1;
}
