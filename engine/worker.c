/* engine/worker.c — main of chidori-worker: one run over fd 3.
 *
 * The parent passes one end of a SOCK_STREAM socketpair as fd 3 and speaks
 * the frame protocol on it in both directions.  stdout is never written.
 * Exit status: 0 once the done frame was written; 70 when the transport
 * failed or the engine could not start (message on stderr). */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "common/err.h"
#include "engine/engine.h"

#define WORKER_FD 3

int main(void)
{
        /* The loader cue (sandbox/box.h, loaded_fd): the engine's libraries
         * are mapped and relocated by now; the monitor starts the broker on
         * this hang-up.  Closed when not passed. */
        close(5);
        /* A box of chidori serve's warm pool: named apart from a session's
         * worker until its init frame comes (engine.c start_run). */
        if (getenv("CHIDORI_POOLED"))
                prctl(PR_SET_NAME, "chidori-pooled", 0, 0, 0);
        /* A parent that goes away shows up as EPIPE on the next write. */
        signal(SIGPIPE, SIG_IGN);
        /* The watchdog's slices are cheap with polling traps (engine.h). */
        setenv("JSC_usePollingTraps", "true", 0);

        /* Sandbox self-lockdown, before any input is read: the tight
         * stage-2 seccomp allowlist (no execve, no new processes, no
         * sockets) replaces nothing — it stacks on the launcher's filter. */
        struct err *err = NULL;
        engine_exit_after_done = true;
        if (engine_lockdown(&err) < 0) {
                fprintf(stderr, "chidori-worker: %s\n", err_msg(err));
                err_free(err);
                _exit(78);
        }

        if (engine_serve(WORKER_FD, WORKER_FD, &err) < 0) {
                fprintf(stderr, "chidori-worker: %s\n", err_msg(err));
                err_free(err);
                _exit(70);
        }
        /* The done frame is out: skip exit handlers and library teardown. */
        _exit(0);
}
