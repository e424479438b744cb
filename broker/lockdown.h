/* broker/lockdown.h — chidori-broker's first act, before it reads
 * anything: not dumpable again (execve reset the flag the monitor cleared)
 * and its stage-2 seccomp filter (sandbox/seccomp.h, SECCOMP_BROKER2: the
 * stage-1 list without execve, execveat and seccomp), compiled at build time
 * and linked in.  The monitor did the rest before the exec
 * (monitor/broker.c). */
#ifndef CHIDORI_BROKER_LOCKDOWN_H
#define CHIDORI_BROKER_LOCKDOWN_H

#include "common/err.h"

int broker_lockdown(struct err **err);

#endif
