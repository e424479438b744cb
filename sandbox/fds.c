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
        int cur[64];
        if (n > 64)
                return err_set(err, EINVAL, "place %d descriptors (at most 64)", n);
        for (int i = 0; i < nkeep; i++)
                if (keep[i] >= 0 && keep[i] < n && (keep[i] = fcntl(keep[i], F_DUPFD_CLOEXEC, n)) < 0)
                        return err_set(err, errno, "dup");
        for (int i = 0; i < n; i++)
                cur[i] = src[i];
        /* A source below n but not at its place would be overwritten by a
         * dup2 below: move it up first (only those: a small RLIMIT_NOFILE
         * leaves few free numbers). */
        for (int i = 0; i < n; i++) {
                if (cur[i] < 0 || cur[i] >= n || cur[i] == i)
                        continue;
                int d = fcntl(cur[i], F_DUPFD_CLOEXEC, n);
                if (d < 0)
                        return err_set(err, errno, "dup descriptor %d", cur[i]);
                for (int j = i + 1; j < n; j++)
                        if (cur[j] == cur[i])
                                cur[j] = d;
                cur[i] = d;
        }
        for (int i = 0; i < n; i++) {
                if (cur[i] < 0) {
                        close(i); /* nothing to pass here: never leak what was there */
                } else if (cur[i] == i) {
                        int fl = fcntl(i, F_GETFD);
                        if (fl < 0 || fcntl(i, F_SETFD, fl & ~FD_CLOEXEC) < 0)
                                return err_set(err, errno, "descriptor %d", i);
                } else if (dup2(cur[i], i) < 0) {
                        return err_set(err, errno, "dup2 %d -> %d", cur[i], i);
                }
        }
        if (syscall(SYS_close_range, (unsigned)n, ~0U, CLOSE_RANGE_CLOEXEC) < 0)
                return err_set(err, errno, "mark inherited descriptors close-on-exec");
        return 0;
}
