/* tests/probes/cg_forkbomb.c — fork until refused (bounded: 3 s or 200
 * refusals), children sleep; prints how many forks worked and failed. */
#include <stdio.h>
#include <time.h>
#include <unistd.h>

int main(void)
{
        int ok = 0, refused = 0;
        time_t t0 = time(NULL);
        while (time(NULL) - t0 < 3 && refused < 200) {
                pid_t p = fork();
                if (p == 0) {
                        sleep(10);
                        _exit(0);
                }
                if (p < 0)
                        refused++;
                else
                        ok++;
        }
        printf("forked %d, refused %d\n", ok, refused);
        fflush(stdout);
        /* No exit handlers: an instrumented (make asan) build's leak check
         * at exit uses ptrace, which launch's filter refuses. */
        _exit(refused ? 3 : 0);
}
