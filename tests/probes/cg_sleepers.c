/* tests/probes/cg_sleepers.c — start N children that sleep long (each
 * re-execs itself with a marker argument so the test can look for them),
 * then sleep itself: the deadline must leave none of them alive. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
        if (argc > 2 && strcmp(argv[1], "child") == 0) {
                sleep(60);
                return 0;
        }
        if (argc < 2)
                return 2;
        for (int i = 0; i < 4; i++) {
                if (fork() == 0) {
                        char *a[] = { argv[0], "child", argv[1], NULL };
                        execv("/proc/self/exe", a);
                        _exit(1);
                }
        }
        sleep(60);
        return 0;
}
