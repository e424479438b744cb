/* broker/lockdown.c — the broker's stage 2 (lockdown.h). */
#define _GNU_SOURCE
#include "broker/lockdown.h"

#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "sandbox/seccomp.h"

int broker_lockdown(struct err **err)
{
        if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
                return err_set(err, errno, "clear the dumpable flag");
        /* Set by the monitor already; one-way, and the filter needs it. */
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
                return err_set(err, errno, "set no_new_privs");
        const struct seccomp_prog *p = &seccomp_prebuilt[SECCOMP_BROKER2][1];
        struct sock_fprog prog = { .len = (unsigned short)p->len, .filter = p->insns };
        if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) < 0)
                return err_set(err, errno, "install the stage-2 seccomp filter");
        return 0;
}
