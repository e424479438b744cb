/* tests/probes/cg_hog.c — allocate and touch N MiB, then report survival. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
        if (argc < 2)
                return 2;
        char *end;
        unsigned long mb = strtoul(argv[1], &end, 10);
        if (*end)
                return 2;
        for (unsigned long i = 0; i < mb; i++) {
                char *p = malloc(1 << 20);
                if (!p) {
                        printf("malloc failed at %lu MiB\n", i);
                        return 3;
                }
                memset(p, (int)i, 1 << 20);
        }
        printf("survived %lu MiB\n", mb);
        return 0;
}
