/* common/fdpass.c — one message with at most one descriptor (fdpass.h). */
#define _GNU_SOURCE
#include "common/fdpass.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>

ssize_t fd_send(int sock, const void *buf, size_t len, int fd, int flags)
{
        union {
                char buf[CMSG_SPACE(sizeof(int))];
                struct cmsghdr align;
        } u;
        memset(&u, 0, sizeof(u));
        struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };
        struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1 };
        if (fd >= 0) {
                m.msg_control = u.buf;
                m.msg_controllen = sizeof(u.buf);
                struct cmsghdr *c = CMSG_FIRSTHDR(&m);
                c->cmsg_level = SOL_SOCKET;
                c->cmsg_type = SCM_RIGHTS;
                c->cmsg_len = CMSG_LEN(sizeof(int));
                memcpy(CMSG_DATA(c), &fd, sizeof(int));
        }
        ssize_t n;
        while ((n = sendmsg(sock, &m, MSG_NOSIGNAL | flags)) < 0 && errno == EINTR)
                ;
        return n;
}
