/* sandbox/netns/netns.h — the sandbox's network namespace: lo up (an
 * interface ioctl, netns.c) and the list of links (rtnetlink over libmnl,
 * describe.c: the tests only, so the monitor links no libmnl).
 *
 * Runs in the freshly cloned child, inside its new network namespace, before
 * capabilities are dropped.  Never prints, never exits; allocation is bounded
 * (none for netns_lo_up, one 32 KiB heap buffer for netns_describe).
 */
#ifndef CHIDORI_SANDBOX_NETNS_H
#define CHIDORI_SANDBOX_NETNS_H

#include <stddef.h>

#include "common/err.h"

/* Bring the loopback interface "lo" of the CURRENT network namespace up
 * (SIOCGIFFLAGS, then SIOCSIFFLAGS with IFF_UP added unless it is there
 * already).  Adds no address: lo keeps the 127.0.0.1/8 and ::1 the kernel gives it
 * when it goes up.  Idempotent.
 *
 * Needs CAP_NET_ADMIN in the user namespace that owns the network namespace
 * (so: call it before caps_drop_all()).  Returns 0, or -1 with *err set
 * (errnum EPERM = missing CAP_NET_ADMIN, ENODEV = no "lo", other = the
 * socket or the ioctl failing). */
int netns_lo_up(struct err **err);

/* Describe the interfaces of the current network namespace into buf, one per
 * line: "<ifindex> <name> up|down\n" (administrative IFF_UP flag), via an
 * RTM_GETLINK dump.  Output is truncated to len-1 bytes and always
 * NUL-terminated when len > 0.  For tests and `chidori doctor`.
 * Returns the number of interfaces (>= 0), or -errno on failure. */
int netns_describe(char *buf, size_t len);

#endif
