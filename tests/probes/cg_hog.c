/* tests/probes/cg_hog.c — allocate and touch N MiB, then report survival.
 *   cg_hog MIB [HOLD_SECS [PROCS]]
 * HOLD_SECS: keep the memory that long before reporting; PROCS: that many
 * processes (this one and PROCS-1 children) each do it at once, so a limit
 * must count the whole tree. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* Where each block escapes to: without it clang removes the malloc and
 * memset of memory nothing reads (the probe then touched nothing). */
static char *volatile sink;

static unsigned long num(const char *s)
{
        char *end;
        unsigned long v = strtoul(s, &end, 10);
        if (*end)
                exit(2);
        return v;
}

int main(int argc, char **argv)
{
        if (argc < 2)
                return 2;
        unsigned long mb = num(argv[1]);
        unsigned long hold = argc > 2 ? num(argv[2]) : 0, procs = argc > 3 ? num(argv[3]) : 1;
        int child = 0;
        for (unsigned long k = 1; k < procs && !child; k++) {
                pid_t p = fork();
                if (p < 0)
                        return 4;
                child = p == 0;
        }
        for (unsigned long i = 0; i < mb; i++) {
                char *p = malloc(1 << 20);
                if (!p) {
                        printf("malloc failed at %lu MiB\n", i);
                        return 3;
                }
                memset(p, (int)i, 1 << 20);
                sink = p;
        }
        if (hold)
                sleep((unsigned)hold);
        if (child)
                return 0;
        int st, bad = 0;
        while (wait(&st) > 0)
                bad |= !WIFEXITED(st) || WEXITSTATUS(st) != 0;
        if (bad)
                return 5;
        printf("survived %lu MiB%s\n", mb * procs, procs > 1 ? " in all" : "");
        return 0;
}
