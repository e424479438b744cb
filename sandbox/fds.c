/* sandbox/fds.c — the descriptors passed at exec (fds.h). */
#define _GNU_SOURCE
#include "sandbox/fds.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif

int fds_place(const int *src, int n, int *keep, int nkeep, struct err **err)
{
        int copy[64];
        if (n > 64)
                return err_set(err, EINVAL, "place %d descriptors (at most 64)", n);
        /* Copies at >= n first: no dup2 below can overwrite one. */
        for (int i = 0; i < nkeep; i++)
                if (keep[i] >= 0 && keep[i] < n && (keep[i] = fcntl(keep[i], F_DUPFD_CLOEXEC, n)) < 0)
                        return err_set(err, errno, "dup");
        for (int i = 0; i < n; i++) {
                copy[i] = -1;
                if (src[i] >= 0 && (copy[i] = fcntl(src[i], F_DUPFD_CLOEXEC, n)) < 0)
                        return err_set(err, errno, "dup descriptor %d", src[i]);
        }
        for (int i = 0; i < n; i++) {
                if (copy[i] < 0) {
                        close(i); /* nothing to pass here: never leak what was there */
                        continue;
                }
                if (dup2(copy[i], i) < 0)
                        return err_set(err, errno, "dup2 %d -> %d", copy[i], i);
                close(copy[i]);
        }
        if (syscall(SYS_close_range, (unsigned)n, ~0U, CLOSE_RANGE_CLOEXEC) < 0)
                return err_set(err, errno, "mark inherited descriptors close-on-exec");
        return 0;
}
