/* common/fdpass.h — one message with at most one descriptor (SCM_RIGHTS):
 * the privileged helper's answers, its clients' requests, a box's setup
 * report.  The channel's many-descriptor frames are chan/chan.c's. */
#ifndef CHIDORI_COMMON_FDPASS_H
#define CHIDORI_COMMON_FDPASS_H

#include <stddef.h>
#include <sys/types.h>

/* Send len bytes of buf on sock with fd attached (none when fd < 0), as
 * one sendmsg with MSG_NOSIGNAL | flags; EINTR is retried.  sendmsg's
 * result: len, or -1 with errno. */
ssize_t fd_send(int sock, const void *buf, size_t len, int fd, int flags);

#endif
