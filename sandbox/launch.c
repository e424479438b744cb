/* sandbox/launch.c — one program in a box, waited for: `chidori launch`
 * (cli/launch.c, from its command line) and a boxed tool the monitor starts
 * (cli/toolbox.c, from the operator's configuration), the same code. */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>
#include <sys/random.h>

#include "common/stop.h"
#include "sandbox/sandbox.h"

int sandbox_launch(const struct sandbox_opts *so, const struct box_bind *binds, size_t nbinds, const char *prog,
                   char **argv, char **envp, bool quiet)
{
        struct sandbox_run sr;
        struct err *err = NULL;
        struct box_opts bo = {
                .worker = false,
                .program = prog,
                .argv = argv,
                .envp = envp,
                .binds = binds,
                .nbinds = nbinds,
                .fd0 = 0, .fd1 = 1, .fd2 = 2,
                .frame_fd = -1, .stage2_fd = -1,
        };
        char run_id[40];
        unsigned char rb[6];
        if (getrandom(rb, sizeof(rb), 0) != (ssize_t)sizeof(rb))
                memset(rb, 0, sizeof(rb));
        snprintf(run_id, sizeof(run_id), "launch-%02x%02x%02x%02x%02x%02x", rb[0], rb[1], rb[2], rb[3], rb[4], rb[5]);
        int code = sandbox_start(so, &bo, run_id, &sr, &err);
        if (code != 0) {
                fprintf(stderr, "chidori: %s\n", err_msg(err));
                err_free(err);
                return code;
        }
        if (!quiet)
                fprintf(stderr, "Isolation: %s\n", sr.banner);
        return sandbox_wait(so, &sr, &launcher_stop_signal, NULL);
}
