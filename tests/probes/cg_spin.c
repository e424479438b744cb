/* tests/probes/cg_spin.c — spin for MS milliseconds of wall time, then print
 * the CPU milliseconds this process got. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(clockid_t c)
{
        struct timespec ts;
        clock_gettime(c, &ts);
        return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

int main(int argc, char **argv)
{
        double ms = argc > 1 ? strtod(argv[1], NULL) : 1000;
        double t0 = now(CLOCK_MONOTONIC);
        volatile unsigned long x = 0;
        while (now(CLOCK_MONOTONIC) - t0 < ms)
                for (int i = 0; i < 10000; i++)
                        x += (unsigned long)i;
        printf("cpu_ms %.0f\n", now(CLOCK_PROCESS_CPUTIME_ID) + (double)(x & 0));
        return 0;
}
