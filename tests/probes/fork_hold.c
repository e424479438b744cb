/* tests/probes/fork_hold.c — a tool for the run-tree tests: fork children
 * (which only wait, stdio closed) until a fork is refused or MAX of them
 * run, then let RELEASE of them go again (headroom for the rest of the run
 * tree, whose engines still need threads), hold the others for HOLD_MS,
 * print {"forked": N, "held": H} on stdout, kill them and exit.
 * Usage: fork_hold HOLD_MS MAX RELEASE */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* A sanitizer build (make asan) runs this in the box: LeakSanitizer's
 * exit-time scan stops the world with ptrace, which the box refuses. */
__attribute__((used, visibility("default"))) const char *__asan_default_options(void);
__attribute__((used, visibility("default"))) const char *__asan_default_options(void)
{
        return "detect_leaks=0";
}

int main(int argc, char **argv)
{
        long hold = argc > 1 ? strtol(argv[1], NULL, 10) : 2000, max = argc > 2 ? strtol(argv[2], NULL, 10) : 100;
        long release = argc > 3 ? strtol(argv[3], NULL, 10) : 0;
        char buf[4096];
        while (read(0, buf, sizeof(buf)) > 0)
                ;
        static pid_t kids[4096];
        int ok = 0, refused = 0;
        if (max > 4096)
                max = 4096;
        while (ok < max && refused < 20) {
                pid_t p = fork();
                if (p == 0) {
                        int null = open("/dev/null", O_RDWR);
                        dup2(null, 0), dup2(null, 1), dup2(null, 2);
                        for (;;)
                                sleep(1000);
                }
                if (p < 0)
                        refused++;
                else
                        kids[ok++] = p;
        }
        int held = ok;
        for (; held > 0 && release > 0; release--) {
                kill(kids[--held], SIGKILL);
                waitpid(kids[held], NULL, 0);
        }
        struct timespec ts = { hold / 1000, (hold % 1000) * 1000000 };
        nanosleep(&ts, NULL);
        printf("{\"forked\": %d, \"held\": %d}\n", ok, held);
        fflush(stdout);
        for (int i = 0; i < held; i++)
                kill(kids[i], SIGKILL);
        return 0;
}
