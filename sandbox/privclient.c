/* sandbox/privclient.c — the supervisor's side of privhelper/proto.h (here: every
 * binary that makes boxes links it; the socket is -1 but under the helper). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/fdpass.h"
#include "privhelper/proto.h"

int priv_helper_fd = -1;


int priv_request(enum priv_op op, const char *path, long map_uid, long map_gid, uint64_t attr, struct err **err)
{
        if (priv_helper_fd < 0)
                return err_set(err, ENOTCONN, "no privileged helper");
        struct priv_req q;
        memset(&q, 0, sizeof(q));
        q.magic = PRIV_MAGIC;
        q.op = op;
        q.map_uid = (int32_t)map_uid;
        q.map_gid = (int32_t)map_gid;
        q.attr = attr;
        if (snprintf(q.path, sizeof(q.path), "%s", path) >= (int)sizeof(q.path))
                return err_set(err, ENAMETOOLONG, "%.200s", path);
        int sv[2];
        if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
                return err_set(err, errno, "socketpair");
        if (fd_send(priv_helper_fd, &q, sizeof(q), sv[1], 0) != (ssize_t)sizeof(q)) {
                int e = errno;
                close(sv[0]), close(sv[1]);
                return err_set(err, e, "ask the privileged helper (chidori-privhelper)");
        }
        close(sv[1]);
        struct priv_rep r;
        union {
                char buf[CMSG_SPACE(sizeof(int))];
                struct cmsghdr align;
        } u;
        struct iovec iov = { .iov_base = &r, .iov_len = sizeof(r) };
        struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof(u.buf) };
        ssize_t n;
        while ((n = recvmsg(sv[0], &m, MSG_CMSG_CLOEXEC)) < 0 && errno == EINTR)
                ;
        int e = errno;
        close(sv[0]);
        int fd = -1;
        for (struct cmsghdr *c = CMSG_FIRSTHDR(&m); n > 0 && c; c = CMSG_NXTHDR(&m, c))
                if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS && c->cmsg_len == CMSG_LEN(sizeof(int)))
                        memcpy(&fd, CMSG_DATA(c), sizeof(int));
        if (n != (ssize_t)sizeof(r) || r.magic != PRIV_MAGIC) {
                if (fd >= 0)
                        close(fd);
                return err_set(err, n < 0 ? e : EPROTO, "the privileged helper (chidori-privhelper) did not answer");
        }
        if (r.err == 0 && fd < 0 && (op == PRIV_ALLOW || op == PRIV_ALLOW_DONE))
                return 0;
        if (r.err != 0 || fd < 0) {
                if (fd >= 0)
                        close(fd);
                return err_set(err, r.err ? r.err : EPROTO, "the privileged helper refused %.200s", path);
        }
        return fd;
}

int priv_wait_ready(void)
{
        static struct priv_ready r;
        ssize_t n;
        while ((n = recv(priv_helper_fd, &r, sizeof(r), 0)) < 0 && errno == EINTR)
                ;
        if (n != (ssize_t)sizeof(r) || r.magic != PRIV_MAGIC || r.err != 0 || !memchr(r.tmpdir, '\0', sizeof(r.tmpdir)))
                return -1;
        return r.tmpdir[0] && setenv("TMPDIR", r.tmpdir, 1) < 0 ? -1 : 0;
}
