/* sandbox/netns/describe.c — the links of the current network namespace over an
 * RTM_GETLINK dump (netns_describe): for the tests, not linked by the monitor. */
#define _GNU_SOURCE
#include "sandbox/netns/netns.h"

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

static void cleanup_mnlp(struct mnl_socket **nl)
{
        if (*nl) {
                int saved = errno;
                mnl_socket_close(*nl);
                errno = saved;
        }
}

/* Open and bind a NETLINK_ROUTE socket; errno is set on failure. */
static struct mnl_socket *rtnl_open(void)
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
#define _cleanup_mnl_ __attribute__((cleanup(cleanup_mnlp)))

/* A dump may hand back up to 32 KiB per recvmsg (MNL_SOCKET_DUMP_SIZE in
 * libmnl >= 1.0.5; Debian 12 ships 1.0.4). */
#define DUMP_BUF_SIZE 32768

struct describe_ctx {
        char *buf;
        size_t len;
        size_t used;
        int count;
};

static int attr_ifname_cb(const struct nlattr *a, void *data)
{
        const char **name = data;
        if (mnl_attr_get_type(a) == IFLA_IFNAME && mnl_attr_validate(a, MNL_TYPE_NUL_STRING) >= 0)
                *name = mnl_attr_get_str(a);
        return MNL_CB_OK;
}

static int link_cb(const struct nlmsghdr *nlh, void *data)
{
        struct describe_ctx *ctx = data;
        if (nlh->nlmsg_type != RTM_NEWLINK)
                return MNL_CB_OK;
        if (mnl_nlmsg_get_payload_len(nlh) < sizeof(struct ifinfomsg))
                return MNL_CB_OK;
        const struct ifinfomsg *ifi = mnl_nlmsg_get_payload(nlh);
        const char *name = "?";
        mnl_attr_parse(nlh, sizeof(*ifi), attr_ifname_cb, &name);
        ctx->count++;
        if (ctx->len == 0 || ctx->used + 1 >= ctx->len)
                return MNL_CB_OK;
        int n = snprintf(ctx->buf + ctx->used, ctx->len - ctx->used, "%d %s %s\n", ifi->ifi_index, name,
                         (ifi->ifi_flags & IFF_UP) ? "up" : "down");
        if (n > 0)
                ctx->used += (size_t)n < ctx->len - ctx->used ? (size_t)n : ctx->len - ctx->used - 1;
        return MNL_CB_OK;
}

int netns_describe(char *buf, size_t len)
{
        struct describe_ctx ctx = {.buf = buf, .len = len};
        if (buf && len)
                buf[0] = '\0';
        else
                ctx.len = 0;

        _cleanup_mnl_ struct mnl_socket *nl = rtnl_open();
        if (!nl)
                return -errno;
        _cleanup_free_ char *rx = malloc(DUMP_BUF_SIZE);
        if (!rx)
                return -ENOMEM;

        _Alignas(struct nlmsghdr) char req[128];
        memset(req, 0, sizeof(req));
        struct nlmsghdr *nlh = mnl_nlmsg_put_header(req);
        nlh->nlmsg_type = RTM_GETLINK;
        nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
        nlh->nlmsg_seq = (uint32_t)time(NULL);
        struct ifinfomsg *ifi = mnl_nlmsg_put_extra_header(nlh, sizeof(*ifi));
        ifi->ifi_family = AF_UNSPEC;
        /* Skip per-link statistics: smaller replies, nothing we print. */
        mnl_attr_put_u32(nlh, IFLA_EXT_MASK, RTEXT_FILTER_SKIP_STATS);
        uint32_t seq = nlh->nlmsg_seq, portid = mnl_socket_get_portid(nl);

        if (mnl_socket_sendto(nl, nlh, nlh->nlmsg_len) < 0)
                return -errno;
        for (;;) {
                ssize_t n = mnl_socket_recvfrom(nl, rx, DUMP_BUF_SIZE);
                if (n < 0)
                        return -errno;
                int r = mnl_cb_run(rx, (size_t)n, seq, portid, link_cb, &ctx);
                if (r < 0)
                        return -errno;
                if (r == MNL_CB_STOP)
                        break;
        }
        return ctx.count;
}
