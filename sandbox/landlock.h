/* sandbox/landlock.h — Landlock for the sandbox child (raw syscalls).
 *
 * Never prints, never exits, allocates nothing.  Works with any Landlock ABI
 * from 1 (Linux 5.13) up: each right or scope is used only where the running
 * kernel's ABI knows it, and what was applied is reported back.
 */
#ifndef CHIDORI_SANDBOX_LANDLOCK_H
#define CHIDORI_SANDBOX_LANDLOCK_H

#include <stdbool.h>
#include <stddef.h>

#include "common/err.h"

/* Best ABI the running kernel offers: 0 if Landlock is unavailable, with the
 * reason written to reason (NUL-terminated, truncated to reason_len; may be
 * NULL): not built into the kernel or the syscall filtered (ENOSYS), built but
 * not enabled at boot (EOPNOTSUPP: "landlock" missing from lsm=), refused by a
 * seccomp filter or LSM (EPERM), or another errno.  On success reason is "". */
int landlock_abi(char *reason, size_t reason_len);

struct landlock_result {
        int abi;                  /* kernel's Landlock ABI (features past 7 unused); 0 = unavailable, nothing applied */
        bool fs;                  /* filesystem rights handled (abi >= 1) */
        bool net;                 /* TCP bind/connect denied (abi >= 4) */
        bool scope_abstract_unix; /* abstract unix sockets outside the domain unreachable (abi >= 6) */
        bool scope_signal;        /* signals to processes outside the domain denied (abi >= 6) */
};

/* Restrict the calling process (single-threaded: Landlock applies to the
 * calling thread and its future children; threads that already exist keep
 * their old domain).
 *
 * Filesystem: every access right the ABI knows is handled (EXECUTE ...
 * MAKE_SYM, REFER (abi 2), TRUNCATE (abi 3), IOCTL_DEV (abi 5)), so nothing is
 * allowed except:
 *   - beneath each path of ro_paths (NULL-terminated, required):
 *     EXECUTE, READ_FILE, READ_DIR;
 *   - beneath each path of rw_paths (NULL-terminated, may be NULL):
 *     READ_FILE, READ_DIR, WRITE_FILE, TRUNCATE, MAKE_REG, MAKE_DIR,
 *     REMOVE_FILE, REMOVE_DIR, REFER — deliberately not EXECUTE (nothing
 *     written in the box can be run), MAKE_SYM/SOCK/FIFO/CHAR/BLOCK and
 *     IOCTL_DEV.
 * A path naming a file (not a directory) gets only the file rights of its set.
 * Paths that do not exist are skipped; it is an error if no path of ro_paths
 * exists.  Paths are resolved now, in the current mount namespace and root
 * (call it after pivot_root).  Files already open are not affected.
 * Network (abi >= 4): LANDLOCK_ACCESS_NET_BIND_TCP and _CONNECT_TCP handled
 * with no rule: every TCP bind and connect fails with EACCES.
 * Scopes (abi >= 6): LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET and
 * LANDLOCK_SCOPE_SIGNAL: no connect/send to abstract unix sockets created
 * outside the domain, no signal to processes outside it (EPERM).
 * Abi 7 logging flags are left at their defaults (restrict_self flags = 0).
 *
 * REQUIRES no_new_privs set first (caps_lock_process()), or CAP_SYS_ADMIN in
 * the current user namespace; otherwise it fails with EPERM and says so.
 *
 * Returns 0 and fills *ret (only on success).  If the kernel has no usable
 * Landlock, returns 0 with ret->abi = 0 and nothing applied: the caller
 * decides whether that is fatal (landlock_abi() gives the reason).  Returns
 * -1 with *err set on any other failure; the process is then unrestricted. */
int landlock_restrict(const char *const *ro_paths, const char *const *rw_paths, struct landlock_result *ret,
                      struct err **err);

/* The same with more choices (the broker's lockdown, monitor/broker.c):
 * ro without EXECUTE when ro_noexec; rx paths and rx_fds (files or folders
 * opened O_PATH, e.g. the broker's binary opened before the uid drop) get
 * the read-only rights with EXECUTE; allow_tcp leaves TCP bind/connect
 * unhandled (the broker does HTTP).  landlock_restrict(ro, rw) is
 * {.ro = ro, .rw = rw}. */
struct landlock_rules {
        const char *const *ro;
        const char *const *rw;
        const char *const *rx;
        const int *rx_fds;
        size_t n_rx_fds;
        bool ro_noexec;
        bool allow_tcp;
};
int landlock_restrict_rules(const struct landlock_rules *r, struct landlock_result *ret, struct err **err);

#endif
