/* common/util.c — small helpers: sizes, numbers, signal names, clocks (common/util.h;
 * reading files in io.c, encodings and digests in digest.c). */
#define _GNU_SOURCE
#include "common/util.h"

#include <errno.h>
#include <stdbool.h>
#include <signal.h>
#include <stdint.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/cleanup.h"

void format_size(uint64_t bytes, char *buf, size_t len)
{
        static const char *const units[] = { "TiB", "GiB", "MiB", "KiB" };
        for (int i = 0; i < 4; i++) {
                unsigned shift = (unsigned)(40 - 10 * i);
                if (bytes && bytes % ((uint64_t)1 << shift) == 0) {
                        snprintf(buf, len, "%llu %s", (unsigned long long)(bytes >> shift), units[i]);
                        return;
                }
        }
        snprintf(buf, len, "%llu byte%s", (unsigned long long)bytes, bytes == 1 ? "" : "s");
}

bool double_to_int64(double d, int64_t *ret)
{
        /* Both bounds are powers of two, exact as doubles; NaN fails both. */
        if (!(d >= -9223372036854775808.0 && d < 9223372036854775808.0) || d != (double)(int64_t)d)
                return false;
        *ret = (int64_t)d;
        return true;
}

int parse_nonneg(const char *s, long *ret)
{
        if (!s || !*s || *s == '-' || *s == '+')
                return -1;
        char *end;
        errno = 0;
        long v = strtol(s, &end, 10);
        if (errno || *end || v < 0)
                return -1;
        *ret = v;
        return 0;
}

const char *signal_name(int sig)
{
        const char *n = sigabbrev_np(sig);
        static char buf[32];
        if (n) {
                snprintf(buf, sizeof(buf), "SIG%s", n);
                return buf;
        }
        snprintf(buf, sizeof(buf), "signal %d", sig);
        return buf;
}

double mono_ms(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

void utc_iso8601(char *out, size_t size)
{
        struct timespec ts;
        struct tm tm;
        clock_gettime(CLOCK_REALTIME, &ts);
        gmtime_r(&ts.tv_sec, &tm);
        char base[32];
        strftime(base, sizeof(base), "%Y-%m-%dT%H:%M:%S", &tm);
        snprintf(out, size, "%s.%03ldZ", base, ts.tv_nsec / 1000000);
}
