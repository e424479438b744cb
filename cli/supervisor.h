/* cli/supervisor.h — the supervisor started by `chidori` as root, before it
 * execs chidori-privhelper (decision 164): chidori-monitor in a user
 * namespace of its own (uid and gid 65532 outside, root inside; the broker's
 * ids and the boxes' 65534 mapped besides), no supplementary groups, dying
 * with its parent.  Its exec runs while the helper's does; the helper (our
 * pid after the exec) adopts it, delegates its cgroup, checks the folders,
 * and sends its word (privhelper/proto.h) before the supervisor does
 * anything. */
#ifndef CHIDORI_CLI_SUPERVISOR_H
#define CHIDORI_CLI_SUPERVISOR_H

#include <sys/types.h>

#include "common/err.h"

struct supervisor {
        pid_t pid;
        int pidfd; /* without close-on-exec: the helper's */
        int sock;  /* the helper's end of the requests' socket, likewise */
        void *stack; /* the child's stack until it has exec'd (ours: CLONE_VM) */
};

/* Start it: monitor is the binary (opened here, as root: its folder may be
 * 0700), handover_fd the settings it reads.  0, or -1 with *err. */
int supervisor_start(const char *monitor, int handover_fd, uid_t broker_uid, gid_t broker_gid,
                     struct supervisor *s, struct err **err);
/* Kill and reap it (the helper could not be started). */
void supervisor_stop(struct supervisor *s);

#endif
