/* sandbox/netns/netns.c — bring "lo" up over rtnetlink (libmnl); listing the
 * links (netns_describe, for the tests) is describe.c.
 *
 * Runs in the sandbox child between clone3 and execve: no stdio, no exit,
 * fixed-size buffers.  Only RTM_NEWLINK (set IFF_UP on lo) and RTM_GETLINK
 * (dump) are sent; no address, route or other interface is ever touched.
 */
#define _GNU_SOURCE
#include "sandbox/netns/netns.h"
#include "sandbox/netns/netns-internal.h"

#include <errno.h>
#include <net/if.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <libmnl/libmnl.h>
#include <linux/if_link.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>

#include "common/cleanup.h"

/* Not MNL_SOCKET_BUFFER_SIZE: that macro calls sysconf() and would make a VLA. */
#define ACK_BUF_SIZE 8192

void netns_cleanup_mnlp(struct mnl_socket **nl)
{
        if (*nl) {
                int saved = errno;
                mnl_socket_close(*nl);
                errno = saved;
        }
}

/* Open and bind a NETLINK_ROUTE socket; errno is set on failure. */
struct mnl_socket *netns_rtnl_open(void)
{
        struct mnl_socket *nl = mnl_socket_open2(NETLINK_ROUTE, SOCK_CLOEXEC);
        if (!nl)
                return NULL;
        if (mnl_socket_bind(nl, 0, MNL_SOCKET_AUTOPID) < 0) {
                int saved = errno;
                mnl_socket_close(nl);
                errno = saved;
                return NULL;
        }
        /* Extended ACKs carry the kernel's own error text; best effort
         * (kernels before 4.12 lack it, and then we simply get less detail). */
        int one = 1;
        (void)mnl_socket_setsockopt(nl, NETLINK_EXT_ACK, &one, sizeof(one));
        return nl;
}

/* Copy NLMSGERR_ATTR_MSG of an extended ACK into msg (empty if none). */
static void ext_ack_msg(const struct nlmsghdr *nlh, char *msg, size_t len)
{
        msg[0] = '\0';
        if (!(nlh->nlmsg_flags & NLM_F_ACK_TLVS))
                return;
        const struct nlmsgerr *e = mnl_nlmsg_get_payload(nlh);
        size_t off = sizeof(*e);
        if (!(nlh->nlmsg_flags & NLM_F_CAPPED))
                off += e->msg.nlmsg_len - sizeof(struct nlmsghdr);
        off = MNL_ALIGN(off);
        size_t plen = mnl_nlmsg_get_payload_len(nlh);
        if (off >= plen)
                return;
        const struct nlattr *a = (const struct nlattr *)((const char *)e + off);
        int left = (int)(plen - off);
        for (; mnl_attr_ok(a, left); a = mnl_attr_next(a)) {
                if (mnl_attr_get_type(a) != NLMSGERR_ATTR_MSG)
                        continue;
                if (mnl_attr_validate(a, MNL_TYPE_NUL_STRING) < 0)
                        return;
                snprintf(msg, len, "%s", mnl_attr_get_str(a));
                return;
        }
}

/* Wait for the NLMSG_ERROR that answers (seq, portid).  Returns 0 on a
 * positive ACK, else -1 with *ret_errno and kmsg (extended ACK text) set. */
static int wait_ack(struct mnl_socket *nl, uint32_t seq, int *ret_errno, char *kmsg, size_t kmsg_len)
{
        _Alignas(struct nlmsghdr) char buf[ACK_BUF_SIZE];
        uint32_t portid = mnl_socket_get_portid(nl);

        kmsg[0] = '\0';
        /* The kernel handles the request inside sendmsg, so the ACK is already
         * queued; the bound only guards against a confused peer. */
        for (int round = 0; round < 8; round++) {
                ssize_t n = mnl_socket_recvfrom(nl, buf, sizeof(buf));
                if (n < 0) {
                        *ret_errno = errno;
                        snprintf(kmsg, kmsg_len, "receive ACK");
                        return -1;
                }
                const struct nlmsghdr *nlh = (const struct nlmsghdr *)buf;
                int left = (int)n;
                for (; mnl_nlmsg_ok(nlh, left); nlh = mnl_nlmsg_next(nlh, &left)) {
                        if (nlh->nlmsg_seq != seq || nlh->nlmsg_pid != portid)
                                continue;
                        if (nlh->nlmsg_type != NLMSG_ERROR)
                                continue;
                        if (mnl_nlmsg_get_payload_len(nlh) < sizeof(struct nlmsgerr)) {
                                *ret_errno = EBADMSG;
                                snprintf(kmsg, kmsg_len, "truncated ACK");
                                return -1;
                        }
                        const struct nlmsgerr *e = mnl_nlmsg_get_payload(nlh);
                        if (e->error == 0)
                                return 0;
                        *ret_errno = -e->error;
                        ext_ack_msg(nlh, kmsg, kmsg_len);
                        return -1;
                }
        }
        *ret_errno = EPROTO;
        snprintf(kmsg, kmsg_len, "no ACK for the request");
        return -1;
}

int netns_lo_up(struct err **err)
{
        _cleanup_mnl_ struct mnl_socket *nl = netns_rtnl_open();
        if (!nl)
                return err_set(err, errno, "bring 'lo' up: open rtnetlink socket");

        /* ifindex 0 + IFLA_IFNAME: the kernel resolves "lo" itself (one round
         * trip instead of if_nametoindex()'s socket+ioctl). */
        _Alignas(struct nlmsghdr) char req[256];
        memset(req, 0, sizeof(req));
        struct nlmsghdr *nlh = mnl_nlmsg_put_header(req);
        nlh->nlmsg_type = RTM_NEWLINK;
        nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK;
        nlh->nlmsg_seq = (uint32_t)time(NULL);
        struct ifinfomsg *ifi = mnl_nlmsg_put_extra_header(nlh, sizeof(*ifi));
        ifi->ifi_family = AF_UNSPEC;
        ifi->ifi_index = 0;
        ifi->ifi_change = IFF_UP;
        ifi->ifi_flags = IFF_UP;
        mnl_attr_put_strz(nlh, IFLA_IFNAME, "lo");

        if (mnl_socket_sendto(nl, nlh, nlh->nlmsg_len) < 0)
                return err_set(err, errno, "bring 'lo' up: send RTM_NEWLINK");

        int e = 0;
        char kmsg[160];
        if (wait_ack(nl, nlh->nlmsg_seq, &e, kmsg, sizeof(kmsg)) < 0) {
                const char *sep = kmsg[0] ? " (" : "";
                const char *end = kmsg[0] ? ")" : "";
                if (e == EPERM)
                        return err_set(err, e,
                                       "bring 'lo' up: RTM_NEWLINK refused%s%s%s: needs CAP_NET_ADMIN in the "
                                       "user namespace owning this network namespace",
                                       sep, kmsg, end);
                if (e == ENODEV)
                        return err_set(err, e, "bring 'lo' up: no 'lo' interface in this network namespace%s%s%s",
                                       sep, kmsg, end);
                return err_set(err, e, "bring 'lo' up: RTM_NEWLINK%s%s%s", sep, kmsg, end);
        }
        return 0;
}
