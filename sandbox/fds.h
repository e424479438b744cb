/* sandbox/fds.h — the descriptors a child passes to the program it execs. */
#ifndef CHIDORI_SANDBOX_FDS_H
#define CHIDORI_SANDBOX_FDS_H

#include "common/err.h"

/* Make src[i] descriptor i for i in [0, n) (src[i] < 0: i is closed), each
 * without close-on-exec, and mark every descriptor >= n close-on-exec.
 * Sources may sit anywhere, targets included; *keep (nkeep of them, may
 * be NULL) are descriptors the caller still needs until exec (its sync
 * socket, the binary it execs): moved to numbers >= n when below, updated
 * in place, close-on-exec. */
int fds_place(const int *src, int n, int *keep, int nkeep, struct err **err);

#endif
