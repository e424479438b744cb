/* sandbox/seccomp-names.c — a syscall's name for the messages, from the
 * table generated at build time (sandbox/seccomp-gen.c): no libseccomp at
 * run time in the processes that only load prebuilt filters. */
#include <stdio.h>

#include "sandbox/seccomp.h"

const char *seccomp_syscall_name(int nr)
{
        static char buf[64];
        if (nr >= 0 && nr < SECCOMP_SYSCALL_NAMES && seccomp_syscall_names[nr])
                snprintf(buf, sizeof(buf), "%s", seccomp_syscall_names[nr]);
        else
                snprintf(buf, sizeof(buf), "nr %d", nr);
        return buf;
}
