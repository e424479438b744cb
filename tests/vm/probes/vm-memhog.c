/* vm-memhog MIB: allocate MIB MiB and touch every page, then exit 0.
 * Inside a cgroup whose memory.max is smaller (and no swap) it is OOM-killed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv) {
    if (argc != 2) { fprintf(stderr, "usage: vm-memhog MIB\n"); return 2; }
    char *end;
    long mib = strtol(argv[1], &end, 10);
    if (*end || mib < 0) { fprintf(stderr, "vm-memhog: bad MIB %s\n", argv[1]); return 2; }
    long page = sysconf(_SC_PAGESIZE);
    for (long i = 0; i < mib; i++) {
        char *p = malloc(1 << 20);
        if (!p) { printf("vm-memhog: malloc failed at %ld MiB\n", i); return 3; }
        for (long off = 0; off < (1 << 20); off += page) p[off] = (char)(i + off);
        if ((i + 1) % 16 == 0) { printf("vm-memhog: %ld MiB\n", i + 1); fflush(stdout); }
    }
    printf("vm-memhog: touched %ld MiB\n", mib);
    return 0;
}
