/* sandbox/rootfs.h — a minimal root filesystem, built inside a new mount
 * namespace: the box's (rootfs_setup, box-internal.h) and the broker's
 * (monitor/broker.c) are made of these pieces, in this order:
 *   rootfs_new_root   / private, a small tmpfs, pivot_root into it; the old
 *                     root stays at /oldroot
 *   rootfs_bind       a host path (as /oldroot sees it, or an fd opened
 *                     before) at dst: read-only (or rw, noexec), nosuid,
 *                     nodev unless dev; a symlink is recreated
 *   rootfs_dev        /dev: null, zero, full, random, urandom and the fd links
 *   rootfs_proc       a fresh procfs of the pid namespace (or the host's,
 *                     read-only, without one)
 *   rootfs_finish     the old root detached, the new root read-only
 * Each returns 0 or -1 with err. */
#ifndef CHIDORI_SANDBOX_ROOTFS_H
#define CHIDORI_SANDBOX_ROOTFS_H

#include <stdbool.h>

#include "common/err.h"

int rootfs_new_root(struct err **err);
int rootfs_bind(const char *src, int fd, const char *dst, bool rw, bool dev, struct err **err);
int rootfs_dev(struct err **err);
int rootfs_proc(bool own_pidns, struct err **err);
int rootfs_finish(struct err **err);

#endif
