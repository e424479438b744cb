/* sandbox/landlock.c — Landlock ruleset for the sandbox child.
 *
 * Raw syscalls with the structs of <linux/landlock.h>.  Debian 12 ships the
 * Linux 6.1 UAPI headers (Landlock ABI 2), so everything newer is defined
 * here, each with the kernel release that introduced it; the ABI probe at run
 * time decides what is actually used.
 */
#define _GNU_SOURCE
#include "sandbox/landlock.h"

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <linux/landlock.h>
#include <linux/types.h>

#include "common/cleanup.h"

/* Syscall numbers are the same on every architecture (Linux 5.13). */
#ifndef SYS_landlock_create_ruleset
#define SYS_landlock_create_ruleset 444
#endif
#ifndef SYS_landlock_add_rule
#define SYS_landlock_add_rule 445
#endif
#ifndef SYS_landlock_restrict_self
#define SYS_landlock_restrict_self 446
#endif

/* ABI 3, Linux 6.2. */
#ifndef LANDLOCK_ACCESS_FS_TRUNCATE
#define LANDLOCK_ACCESS_FS_TRUNCATE (1ULL << 14)
#endif
/* ABI 5, Linux 6.10. */
#ifndef LANDLOCK_ACCESS_FS_IOCTL_DEV
#define LANDLOCK_ACCESS_FS_IOCTL_DEV (1ULL << 15)
#endif
/* ABI 4, Linux 6.7 (with ruleset_attr.handled_access_net). */
#ifndef LANDLOCK_ACCESS_NET_BIND_TCP
#define LANDLOCK_ACCESS_NET_BIND_TCP (1ULL << 0)
#endif
#ifndef LANDLOCK_ACCESS_NET_CONNECT_TCP
#define LANDLOCK_ACCESS_NET_CONNECT_TCP (1ULL << 1)
#endif
/* ABI 6, Linux 6.12 (with ruleset_attr.scoped). */
#ifndef LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET
#define LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET (1ULL << 0)
#endif
#ifndef LANDLOCK_SCOPE_SIGNAL
#define LANDLOCK_SCOPE_SIGNAL (1ULL << 1)
#endif
/* ABI 7, Linux 6.15, adds LANDLOCK_RESTRICT_SELF_LOG_* flags for
 * landlock_restrict_self(); we pass 0, i.e. the kernel's default audit
 * logging, so none of them is needed here. */

/* struct landlock_ruleset_attr as of ABI 6.  Our own name: the 6.1 header
 * declares the one-field version.  The kernel takes the size we pass and
 * requires any bytes it does not know to be zero, so we pass exactly the
 * prefix the running ABI understands. */
struct ruleset_attr {
        __u64 handled_access_fs;
        __u64 handled_access_net; /* ABI 4 */
        __u64 scoped;             /* ABI 6 */
};
#define ATTR_SIZE_UPTO(field) (offsetof(struct ruleset_attr, field) + sizeof(((struct ruleset_attr *)0)->field))

#define FS_ABI1                                                                                                  \
        (LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_READ_FILE |             \
         LANDLOCK_ACCESS_FS_READ_DIR | LANDLOCK_ACCESS_FS_REMOVE_DIR | LANDLOCK_ACCESS_FS_REMOVE_FILE |          \
         LANDLOCK_ACCESS_FS_MAKE_CHAR | LANDLOCK_ACCESS_FS_MAKE_DIR | LANDLOCK_ACCESS_FS_MAKE_REG |              \
         LANDLOCK_ACCESS_FS_MAKE_SOCK | LANDLOCK_ACCESS_FS_MAKE_FIFO | LANDLOCK_ACCESS_FS_MAKE_BLOCK |           \
         LANDLOCK_ACCESS_FS_MAKE_SYM)

/* Rights that may be granted on a file (as opposed to a directory). */
#define FS_FILE_RIGHTS                                                                                           \
        (LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_READ_FILE |             \
         LANDLOCK_ACCESS_FS_TRUNCATE | LANDLOCK_ACCESS_FS_IOCTL_DEV)

#define FS_RO (LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR)

/* Left out of FS_RW on purpose: EXECUTE (what the box writes, it cannot run),
 * MAKE_SYM (no symlinks for the parent to trip over when it reads the
 * directory back), MAKE_SOCK / MAKE_FIFO (no rendezvous points),
 * MAKE_CHAR / MAKE_BLOCK (device nodes), IOCTL_DEV (device ioctls). */
#define FS_RW                                                                                                    \
        (LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR | LANDLOCK_ACCESS_FS_WRITE_FILE |            \
         LANDLOCK_ACCESS_FS_TRUNCATE | LANDLOCK_ACCESS_FS_MAKE_REG | LANDLOCK_ACCESS_FS_MAKE_DIR |               \
         LANDLOCK_ACCESS_FS_REMOVE_FILE | LANDLOCK_ACCESS_FS_REMOVE_DIR | LANDLOCK_ACCESS_FS_REFER)

static __u64 fs_rights_for_abi(int abi)
{
        __u64 r = FS_ABI1;
        if (abi >= 2)
                r |= LANDLOCK_ACCESS_FS_REFER;
        if (abi >= 3)
                r |= LANDLOCK_ACCESS_FS_TRUNCATE;
        if (abi >= 5)
                r |= LANDLOCK_ACCESS_FS_IOCTL_DEV;
        return r;
}

int landlock_abi(char *reason, size_t reason_len)
{
        long abi = syscall(SYS_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);
        int e = errno;
        const char *why = NULL;
        char other[96];

        if (abi > 0) {
                if (reason && reason_len)
                        reason[0] = '\0';
                return (int)abi;
        }
        if (abi == 0) {
                why = "kernel reports Landlock ABI 0";
        } else if (e == ENOSYS) {
                why = "not built into this kernel (CONFIG_SECURITY_LANDLOCK=n), or a seccomp filter answers ENOSYS";
        } else if (e == EOPNOTSUPP) {
                why = "built into the kernel but disabled at boot (\"landlock\" missing from the lsm= list)";
        } else if (e == EPERM) {
                why = "landlock_create_ruleset refused (EPERM): a seccomp filter or another LSM denies it";
        } else {
                snprintf(other, sizeof(other), "landlock_create_ruleset: %s", strerror(e));
                why = other;
        }
        if (reason && reason_len)
                snprintf(reason, reason_len, "%s", why);
        return 0;
}

/* Add one PATH_BENEATH rule per existing path.  *ret_added counts them. */
static int add_rule(int rfd, int fd, __u64 allowed, const char *what, const char *name, struct err **err)
{
        struct stat st;
        if (fstat(fd, &st) < 0)
                return err_set(err, errno, "landlock: stat %s path '%s'", what, name);
        struct landlock_path_beneath_attr pb = {
                .allowed_access = S_ISDIR(st.st_mode) ? allowed : (allowed & FS_FILE_RIGHTS),
                .parent_fd = fd,
        };
        if (syscall(SYS_landlock_add_rule, rfd, LANDLOCK_RULE_PATH_BENEATH, &pb, 0) < 0)
                return err_set(err, errno, "landlock: add %s rule for '%s'", what, name);
        return 0;
}

static int add_paths(int rfd, const char *const *paths, __u64 allowed, const char *what, int *ret_added,
                     struct err **err)
{
        int added = 0;
        for (size_t i = 0; paths && paths[i]; i++) {
                _cleanup_close_ int fd = open(paths[i], O_PATH | O_CLOEXEC);
                if (fd < 0) {
                        if (errno == ENOENT || errno == ENOTDIR)
                                continue; /* not in this root: nothing to allow */
                        return err_set(err, errno, "landlock: open %s path '%s'", what, paths[i]);
                }
                if (add_rule(rfd, fd, allowed, what, paths[i], err) < 0)
                        return -1;
                added++;
        }
        *ret_added = added;
        return 0;
}

int landlock_restrict(const char *const *ro_paths, const char *const *rw_paths, struct landlock_result *ret,
                      struct err **err)
{
        struct landlock_rules r = { .ro = ro_paths, .rw = rw_paths };
        return landlock_restrict_rules(&r, ret, err);
}

int landlock_restrict_rules(const struct landlock_rules *r, struct landlock_result *ret, struct err **err)
{
        const char *const *ro_paths = r->ro;
        if (!ro_paths || !ro_paths[0] || !ret)
                return err_set(err, EINVAL, "landlock: no read-only path given");

        int abi = landlock_abi(NULL, 0);
        if (abi <= 0) {
                *ret = (struct landlock_result){.abi = 0};
                return 0;
        }

        struct ruleset_attr attr = {.handled_access_fs = fs_rights_for_abi(abi)};
        size_t attr_size = ATTR_SIZE_UPTO(handled_access_fs);
        if (abi >= 4 && !r->allow_tcp) {
                attr.handled_access_net = LANDLOCK_ACCESS_NET_BIND_TCP | LANDLOCK_ACCESS_NET_CONNECT_TCP;
                attr_size = ATTR_SIZE_UPTO(handled_access_net);
        }
        if (abi >= 6) {
                attr.scoped = LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | LANDLOCK_SCOPE_SIGNAL;
                attr_size = ATTR_SIZE_UPTO(scoped);
        }

        /* Ruleset fds are always close-on-exec. */
        _cleanup_close_ int rfd = (int)syscall(SYS_landlock_create_ruleset, &attr, attr_size, 0);
        if (rfd < 0)
                return err_set(err, errno, "landlock: create ruleset (abi %d)", abi);

        int n_ro = 0, n_rw = 0, n_rx = 0;
        __u64 ro = r->ro_noexec ? (FS_RO & ~(__u64)LANDLOCK_ACCESS_FS_EXECUTE) : FS_RO;
        if (add_paths(rfd, ro_paths, ro & attr.handled_access_fs, "read-only", &n_ro, err) < 0)
                return -1;
        if (n_ro == 0)
                return err_set(err, ENOENT, "landlock: none of the read-only paths exists (first: '%s')",
                               ro_paths[0]);
        if (add_paths(rfd, r->rw, FS_RW & attr.handled_access_fs, "read-write", &n_rw, err) < 0 ||
            add_paths(rfd, r->rx, FS_RO & attr.handled_access_fs, "read-execute", &n_rx, err) < 0)
                return -1;
        for (size_t i = 0; i < r->n_rx_fds; i++)
                if (add_rule(rfd, r->rx_fds[i], FS_RO & attr.handled_access_fs, "read-execute", "(fd)", err) < 0)
                        return -1;

        if (syscall(SYS_landlock_restrict_self, rfd, 0) < 0) {
                int e = errno;
                if (e == EPERM && prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) != 1)
                        return err_set(err, e,
                                       "landlock: restrict_self needs no_new_privs (call caps_lock_process() "
                                       "first) or CAP_SYS_ADMIN in the current user namespace");
                if (e == E2BIG)
                        return err_set(err, e, "landlock: restrict_self: already 16 stacked Landlock domains");
                return err_set(err, e, "landlock: restrict_self");
        }

        *ret = (struct landlock_result){
                .abi = abi,
                .fs = true,
                .net = abi >= 4 && !r->allow_tcp,
                .scope_abstract_unix = abi >= 6,
                .scope_signal = abi >= 6,
        };
        return 0;
}
