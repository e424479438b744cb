/* sandbox/netns/netns.c — bring "lo" up (SIOCSIFFLAGS); listing the links
 * over rtnetlink (netns_describe, for the tests) is describe.c, the only
 * user of libmnl, which the monitor does not link.
 *
 * Runs in the sandbox child between clone3 and execve: no stdio, no exit,
 * no allocation.  Only lo's IFF_UP flag is set; no address, route or other
 * interface is ever touched. */
#define _GNU_SOURCE
#include "sandbox/netns/netns.h"

#include <errno.h>
#include <net/if.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/cleanup.h"

int netns_lo_up(struct err **err)
{
        /* Any socket reaches the device ioctls of its network namespace;
         * a datagram socket of AF_INET is what ifconfig(8) uses. */
        _cleanup_close_ int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return err_set(err, errno, "bring 'lo' up: open a socket for the interface ioctls");
        struct ifreq ifr;
        memset(&ifr, 0, sizeof(ifr));
        memcpy(ifr.ifr_name, "lo", 3);
        if (ioctl(fd, SIOCGIFFLAGS, &ifr) < 0) {
                if (errno == ENODEV)
                        return err_set(err, errno, "bring 'lo' up: no 'lo' interface in this network namespace");
                return err_set(err, errno, "bring 'lo' up: read its flags (SIOCGIFFLAGS)");
        }
        if (ifr.ifr_flags & IFF_UP)
                return 0;
        ifr.ifr_flags = (short)(ifr.ifr_flags | IFF_UP);
        if (ioctl(fd, SIOCSIFFLAGS, &ifr) < 0) {
                if (errno == EPERM)
                        return err_set(err, errno,
                                       "bring 'lo' up: SIOCSIFFLAGS refused: needs CAP_NET_ADMIN in the user "
                                       "namespace owning this network namespace");
                return err_set(err, errno, "bring 'lo' up: set IFF_UP (SIOCSIFFLAGS)");
        }
        return 0;
}
