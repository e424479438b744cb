/* sandbox/netns/netns-internal.h — what netns.c and describe.c share. */
#ifndef CHIDORI_SANDBOX_NETNS_INTERNAL_H
#define CHIDORI_SANDBOX_NETNS_INTERNAL_H

#include <libmnl/libmnl.h>

/* Open and bind a NETLINK_ROUTE socket (extended ACKs on when the kernel
 * has them); NULL with errno set on failure. */
struct mnl_socket *netns_rtnl_open(void);
void netns_cleanup_mnlp(struct mnl_socket **nl);
#define _cleanup_mnl_ __attribute__((cleanup(netns_cleanup_mnlp)))

#endif
