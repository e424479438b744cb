/* sandbox/child.c — what a chidori started by a run does before anything
 * else: a nested `chidori run`, a boxed tool's `chidori launch`, a host
 * tool's `chidori _host-tool` (effects/proc/ starts them).
 *
 *   CHIDORI_PARENT_PID=<pid>   die with the run: PR_SET_PDEATHSIG(SIGKILL),
 *                              then make sure that pid is still our parent
 *                              (it may have died before the prctl).  A run
 *                              killed with SIGKILL thereby takes its whole
 *                              tree down: each level's box child has the same
 *                              death signal (sandbox/box.c).
 *   CHIDORI_CGROUP_ENTER=<dirs> move into the place the run made for us in
 *                              its cgroup budget (cgroup_run_child_create),
 *                              before anything else runs or allocates; the
 *                              cgroups of this process's own runs then go
 *                              below it, whatever --cgroup-parent says.
 *
 * Both are the run's to set; they are removed from the environment at once,
 * so nothing started later inherits them.  A malformed value or a failed
 * move ends the process (70): a child that cannot be held to the run's
 * budget must not run outside it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "common/exit.h"
#include "common/util.h"
#include "sandbox/cgroup/cgroup.h"
#include "sandbox/sandbox.h"

int launcher_child_setup(void)
{
        const char *ppid = getenv("CHIDORI_PARENT_PID");
        if (ppid && *ppid) {
                long p = 0;
                if (parse_nonneg(ppid, &p) < 0 || p < 1 || p > 1 << 22) {
                        fprintf(stderr, "chidori: CHIDORI_PARENT_PID='%s' is not a process id (it is set by a "
                                        "running chidori for the children it starts)\n", ppid);
                        return EXIT_PROTOCOL;
                }
                if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0) {
                        fprintf(stderr, "chidori: PR_SET_PDEATHSIG: %s\n", strerror(errno));
                        return EXIT_PROTOCOL;
                }
                if (getppid() != (pid_t)p)
                        _exit(128 + SIGKILL); /* the run is gone already: as if the signal had come */
        }
        unsetenv("CHIDORI_PARENT_PID");
        const char *enter = getenv("CHIDORI_CGROUP_ENTER");
        if (enter && *enter) {
                struct err *e = NULL;
                if (cgroup_enter(enter, &e) < 0) {
                        fprintf(stderr, "chidori: enter the calling run's cgroup: %s\n", err_msg(e));
                        err_free(e);
                        return EXIT_PROTOCOL;
                }
                launcher_cgroup_entered = true;
        }
        unsetenv("CHIDORI_CGROUP_ENTER");
        return 0;
}
