/* sandbox/seccomp.c — allowlists as one readable table, compiled with
 * libseccomp.  See seccomp.h for the stages and docs/sandbox.md for the
 * reasoning.  Beside each list: what was left out and why. */
#define _GNU_SOURCE
#include "sandbox/seccomp.h"

#include <errno.h>
#include <linux/sched.h>
#include <linux/seccomp.h>
#include <seccomp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/cleanup.h"

/* libseccomp's SCMP_A*() macros leave datum_b unset for one-operand
 * comparisons, which clang reports; the zero it gets is what they mean. */
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

/* Profiles a row applies to. */
#define W  (1u << 0)  /* engine worker (stage 1 and stage 2) */
#define L  (1u << 1)  /* chidori launch: ordinary programs */
#define S1 (1u << 2)  /* worker stage 1 only: the loader before the worker's main */
#define B  (1u << 3)  /* the broker (stage 1 and stage 2) */
#define B1 (1u << 4)  /* broker stage 1 only: its own exec and the install of stage 2 */

struct rule {
        const char *name;
        unsigned in;
        const char *why;
};

/* The allowlist.  Rows with argument conditions are marked "(args)" and get
 * their conditions in add_conditional() below, not here. */
static const struct rule rules[] = {
        /* memory */
        { "brk", W | L | B, "malloc's heap" },
        { "mmap", W | L | B, "JSC heap, thread stacks, loader (args: no PROT_EXEC without --jit)" },
        { "munmap", W | L | B, "JSC heap returns memory" },
        { "mprotect", W | L | B, "JSC guard pages, loader relro (args: no PROT_EXEC without --jit)" },
        { "mremap", W | L | B, "realloc of large blocks" },
        { "madvise", W | L | B, "JSC/bmalloc decommit (MADV_DONTNEED)" },
        { "membarrier", W | L | B, "JSC's JIT and GC synchronise threads with it" },
        { "mincore", L | B, "some allocators probe residency" },
        { "msync", L | B, "programs that map files" },
        { "mlock", L, "harmless with RLIMIT_MEMLOCK=0" },
        { "munlock", L, "pairs with mlock" },
        /* threads, signals, time */
        { "clone", W | L | B, "threads (args: worker only with CLONE_THREAD; never CLONE_NEW*)" },
        { "futex", W | L | B, "thread synchronisation" },
        { "set_robust_list", W | L | B, "glibc at thread start" },
        { "get_robust_list", L | B, "glibc" },
        { "rseq", W | L | B, "glibc registers restartable sequences per thread" },
        { "set_tid_address", W | L | B, "glibc at start" },
        { "gettid", W | L | B, "JSC thread identity" },
        { "getpid", W | L | B, "glibc, JSC" },
        { "getppid", L | B, "ordinary programs" },
        { "tgkill", W | L | B, "JSC suspends its own threads for GC with signals (the pid ns holds only the box)" },
        { "tkill", L, "old thread signalling" },
        { "kill", L, "signals within the box's pid namespace" },
        { "rt_sigaction", W | L | B, "JSC installs its GC/JIT signal handlers (args: not SIGSYS in stage 2)" },
        { "rt_sigprocmask", W | L | B, "signal masks around critical sections" },
        { "rt_sigreturn", W | L | B, "return from a signal handler" },
        { "rt_sigtimedwait", L | B, "ordinary programs" },
        { "rt_sigpending", L | B, "ordinary programs" },
        { "rt_sigqueueinfo", L, "signals within the box" },
        { "sigaltstack", W | L | B, "JSC's signal stacks" },
        { "sched_yield", W | L | B, "JSC spin locks" },
        { "sched_getaffinity", W | L | B, "JSC sizes its thread pools from it" },
        { "sched_setscheduler", W | L | B, "JSC lowers its helper threads' priority" },
        { "rt_sigsuspend", W | L | B, "JSC's thread suspension for GC" },
        { "sched_getparam", L | B, "ordinary programs" },
        { "sched_getscheduler", L | B, "ordinary programs" },
        { "sched_get_priority_max", L | B, "ordinary programs" },
        { "sched_get_priority_min", L | B, "ordinary programs" },
        { "getpriority", L | B, "ordinary programs" },
        { "nanosleep", W | L | B, "JSC's GC helper threads" },
        { "clock_nanosleep", W | L | B, "JSC's GC helper threads" },
        { "clock_gettime", W | L | B, "CPU-time limit accounting (usually vDSO)" },
        { "clock_getres", W | L | B, "timer resolution" },
        { "gettimeofday", W | L | B, "usually vDSO" },
        { "time", L | B, "usually vDSO" },
        { "getitimer", L | B, "ordinary programs" },
        { "setitimer", L | B, "ordinary programs" },
        { "alarm", L | B, "ordinary programs" },
        { "timer_create", L | B, "ordinary programs" },
        { "timer_settime", L | B, "ordinary programs" },
        { "timer_gettime", L | B, "ordinary programs" },
        { "timer_delete", L | B, "ordinary programs" },
        { "timerfd_create", L | B, "event loops" },
        { "timerfd_settime", L | B, "event loops" },
        { "timerfd_gettime", L | B, "event loops" },
        { "getrusage", W | L | B, "CPU accounting" },
        { "times", L | B, "CPU accounting" },
        { "exit", W | L | B, "thread exit" },
        { "exit_group", W | L | B, "process exit" },
        { "restart_syscall", W | L | B, "kernel-internal restart" },
        /* files and descriptors (Landlock and the read-only root decide what) */
        { "read", W | L | B, "frames in on fd 3; /proc/self/maps" },
        { "write", W | L | B, "frames out on fd 3; stderr" },
        { "readv", W | L | B, "glibc stdio" },
        { "writev", W | L | B, "glibc stdio, frame writes" },
        { "pread64", W | L | B, "loader reads ELF headers" },
        { "pwrite64", L | B, "ordinary programs" },
        { "preadv", L | B, "ordinary programs" },
        { "pwritev", L | B, "ordinary programs" },
        { "close", W | L | B, "closing fds" },
        { "close_range", L | B, "ordinary programs" },
        { "openat", W | L | B, "loader, /proc/self/maps, /dev/urandom (Landlock: read-only)" },
        { "open", L | B, "ordinary programs" },
        { "openat2", B, "the workspace: RESOLVE_BENEATH walks below its root (Landlock still decides)" },
        { "creat", L | B, "ordinary programs (Landlock decides)" },
        { "fstat", W | L | B, "glibc, loader" },
        { "newfstatat", W | L | B, "glibc, loader" },
        { "stat", L | B, "ordinary programs" },
        { "lstat", L | B, "ordinary programs" },
        { "statx", W | L | B, "glibc stat" },
        { "statfs", W | L | B, "glibc probes /dev/shm style mounts" },
        { "fstatfs", L | B, "ordinary programs" },
        { "lseek", W | L | B, "stdio" },
        { "access", W | L | B, "loader checks ld.so.preload" },
        { "faccessat", L | B, "ordinary programs" },
        { "faccessat2", L | B, "ordinary programs" },
        { "readlink", W | L | B, "glibc resolves /proc/self/exe" },
        { "readlinkat", L | B, "ordinary programs" },
        { "getcwd", W | L | B, "glibc" },
        { "chdir", L | B, "ordinary programs" },
        { "fchdir", L | B, "ordinary programs" },
        { "getdents64", L | B, "directory listing" },
        { "getdents", L | B, "directory listing" },
        { "fcntl", W | L | B, "fd flags (CLOEXEC, NONBLOCK)" },
        { "dup", L | B, "ordinary programs" },
        { "dup2", L | B, "ordinary programs" },
        { "dup3", L | B, "ordinary programs" },
        { "pipe", L | B, "ordinary programs" },
        { "pipe2", L | B, "ordinary programs" },
        { "ioctl", W | L | B, "terminal queries (args: never TIOCSTI/TIOCLINUX; worker: TCGETS/FIONREAD only)" },
        { "poll", W | L | B, "waiting on the frame socket" },
        { "ppoll", W | L | B, "waiting on the frame socket" },
        { "select", L | B, "ordinary programs" },
        { "pselect6", L | B, "ordinary programs" },
        { "epoll_create1", L | B, "event loops" },
        { "epoll_create", L | B, "event loops" },
        { "epoll_ctl", L | B, "event loops" },
        { "epoll_wait", L | B, "event loops" },
        { "epoll_pwait", L | B, "event loops" },
        { "epoll_pwait2", L | B, "event loops" },
        { "eventfd2", W | L | B, "GLib main-context wakeups inside JSC" },
        { "eventfd", L | B, "event loops" },
        { "mkdir", L | B, "writes under --bind (Landlock decides)" },
        { "mkdirat", L | B, "writes under --bind (Landlock decides)" },
        { "unlink", L | B, "writes under --bind (Landlock decides)" },
        { "unlinkat", L | B, "writes under --bind (Landlock decides)" },
        { "rename", L | B, "writes under --bind (Landlock decides)" },
        { "renameat", L | B, "writes under --bind (Landlock decides)" },
        { "renameat2", L | B, "writes under --bind (Landlock decides)" },
        { "rmdir", L | B, "writes under --bind (Landlock decides)" },
        { "link", L | B, "writes under --bind (Landlock decides)" },
        { "linkat", L | B, "writes under --bind (Landlock decides)" },
        { "symlink", L | B, "writes under --bind (Landlock decides)" },
        { "symlinkat", L | B, "writes under --bind (Landlock decides)" },
        { "ftruncate", L | B, "writes under --bind (Landlock decides)" },
        { "truncate", L | B, "writes under --bind (Landlock decides)" },
        { "fsync", L | B, "ordinary programs" },
        { "fdatasync", L | B, "ordinary programs" },
        { "fallocate", L | B, "ordinary programs" },
        { "chmod", L | B, "own files under --bind" },
        { "fchmod", L | B, "own files under --bind" },
        { "fchmodat", L | B, "own files under --bind" },
        { "fchown", B, "SQLite as uid 0 (the broker's uid-0 fallback) gives a journal its database's owner; "
                       "without CAP_CHOWN only a no-op on its own files" },
        { "umask", L | B, "ordinary programs" },
        { "utimensat", L | B, "ordinary programs" },
        { "flock", L | B, "ordinary programs" },
        { "sendfile", L | B, "cp and friends" },
        { "copy_file_range", L | B, "cp and friends" },
        { "splice", L | B, "ordinary programs" },
        { "tee", L | B, "ordinary programs" },
        { "memfd_create", L | B, "ordinary programs" },
        { "inotify_init1", L | B, "ordinary programs" },
        { "inotify_add_watch", L | B, "ordinary programs" },
        { "inotify_rm_watch", L | B, "ordinary programs" },
        { "fadvise64", L | B, "ordinary programs" },
        { "getxattr", L | B, "ls -l and friends" },
        { "lgetxattr", L | B, "ls -l and friends" },
        { "fgetxattr", L | B, "ls -l and friends" },
        { "listxattr", L | B, "ls -l and friends" },
        { "llistxattr", L | B, "ls -l and friends" },
        /* processes (launch only: the worker never starts a process) */
        { "execve", S1 | L | B1, "the launcher's exec of the worker; programs under launch; the broker's own exec" },
        { "seccomp", S1 | L | B1, "the worker and the broker install their stage-2 filters (filters only ever add restrictions)" },
        { "execveat", L | B1, "programs under launch; the monitor execs the broker through an fd (stage 1 only)" },
        { "fork", L, "programs under launch (pids.max bounds them)" },
        { "vfork", L, "programs under launch" },
        { "wait4", L, "programs under launch" },
        { "waitid", L, "programs under launch" },
        { "setpgid", L, "shells" },
        { "getpgid", L | B, "shells" },
        { "getpgrp", L | B, "shells" },
        { "getsid", L | B, "shells" },
        { "setsid", L, "daemons" },
        /* identity (inside the user namespace) */
        { "getuid", W | L | B, "glibc" },
        { "geteuid", W | L | B, "glibc" },
        { "getgid", W | L | B, "glibc" },
        { "getegid", W | L | B, "glibc" },
        { "getresuid", L | B, "ordinary programs" },
        { "getresgid", L | B, "ordinary programs" },
        { "getgroups", L | B, "ordinary programs" },
        { "capget", L | B, "ordinary programs (all capability sets are empty)" },
        /* system information */
        { "uname", W | L | B, "glibc, JSC" },
        { "sysinfo", W | L | B, "JSC sizes its heap from total RAM" },
        { "getrandom", W | L | B, "glibc malloc, JSC's own seeds" },
        { "prlimit64", W | L | B, "JSC reads its stack limit (args: worker may only read)" },
        { "getrlimit", L | B, "ordinary programs" },
        { "prctl", W | L | B, "thread names (args: worker: PR_SET_NAME/PR_GET_NAME/PR_SET_VMA/PR_CAPBSET_READ only)" },
        { "arch_prctl", W | L | B, "glibc TLS setup" },
        { "getcpu", W | L | B, "JSC per-CPU caches" },
        /* sockets: launch only (empty network namespace; Landlock denies TCP) */
        { "socket", L | B, "programs under launch (args: AF_UNIX, AF_INET, AF_INET6)" },
        { "socketpair", L | B, "programs under launch" },
        { "connect", L | B, "programs under launch" },
        { "bind", L | B, "programs under launch" },
        { "listen", L | B, "programs under launch" },
        { "accept", L | B, "programs under launch" },
        { "accept4", L | B, "programs under launch" },
        { "getsockname", L | B, "programs under launch" },
        { "getpeername", L | B, "programs under launch" },
        { "getsockopt", L | B, "programs under launch" },
        { "setsockopt", L | B, "programs under launch" },
        { "sendto", L | B, "programs under launch" },
        { "recvfrom", L | B, "programs under launch" },
        { "sendmsg", S1 | L | B, "the launcher hands the seccomp listener to the parent before exec; programs under launch" },
        { "recvmsg", L | B, "programs under launch" },
        { "sendmmsg", B, "the broker: glibc's DNS resolver sends the A and AAAA queries in one call" },
        { "shutdown", L | B, "programs under launch" },
};
/* Sanitizer builds only (make asan): the ASan/UBSan runtime inside the
 * worker uses raw syscalls of its own.  Never compiled into a release build. */
#if defined(__SANITIZE_ADDRESS__)
#define CHIDORI_SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CHIDORI_SANITIZER 1
#endif
#endif
#ifdef CHIDORI_SANITIZER
static const char *const sanitizer_extra[] = { "open", "readlinkat", "getdents64", "mincore", "sched_yield" };
#endif

/* Left out of every list, on purpose (the fixed prefix kills them first):
 * ptrace, process_vm_readv/writev, bpf, io_uring_*, userfaultfd, keyctl,
 * add_key, request_key, perf_event_open, mount, umount2, pivot_root, chroot,
 * setns, unshare, fsopen/fsmount/fsconfig/fspick/move_mount/open_tree/
 * mount_setattr, personality, open_by_handle_at, name_to_handle_at,
 * kexec_*, *_module, reboot, swapon/off, acct, quotactl, iopl, ioperm,
 * settimeofday, clock_settime, adjtimex, syslog, vhangup, lookup_dcookie.
 * clone3 answers ENOSYS so glibc falls back to clone(2), whose flags we can
 * check.  Left out of the worker list: every socket call, fork/vfork/execve
 * (stage 2), setsid, kill (the worker signals only its own threads). */

static const char *const deny_always[] = {
        "ptrace", "process_vm_readv", "process_vm_writev", "bpf", "io_uring_setup", "io_uring_enter",
        "io_uring_register", "userfaultfd", "keyctl", "add_key", "request_key", "perf_event_open",
        "mount", "umount2", "pivot_root", "chroot", "setns", "unshare", "fsopen", "fsmount", "fsconfig",
        "fspick", "move_mount", "open_tree", "mount_setattr", "personality", "open_by_handle_at",
        "name_to_handle_at", "kexec_load", "kexec_file_load", "init_module", "finit_module",
        "delete_module", "reboot", "swapon", "swapoff", "acct", "quotactl", "iopl", "ioperm",
        "settimeofday", "clock_settime", "adjtimex", "clock_adjtime", "syslog", "vhangup",
        "lookup_dcookie", "landlock_create_ruleset", "landlock_add_rule", "landlock_restrict_self",
        "pidfd_getfd", "kcmp", "move_pages", "migrate_pages", "mbind", "set_mempolicy",
        "uselib", "ustat", "sysfs", "_sysctl", "nfsservctl", "create_module", "get_kernel_syms",
        "query_module",
};

#define CLONE_NS_FLAGS                                                                                    \
        (CLONE_NEWNS | CLONE_NEWCGROUP | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWUSER | CLONE_NEWPID |     \
         CLONE_NEWNET | 0x00000080ULL /* CLONE_NEWTIME */)

static int add(scmp_filter_ctx ctx, uint32_t action, const char *name, unsigned n, const struct scmp_arg_cmp *a,
               struct err **err)
{
        int nr = seccomp_syscall_resolve_name(name);
        if (nr == __NR_SCMP_ERROR)
                return 0; /* not on this architecture: nothing to allow or deny */
        int r = seccomp_rule_add_array(ctx, action, nr, n, a);
        if (r < 0 && r != -EEXIST)
                return err_set(err, -r, "seccomp rule for %s", name);
        return 0;
}

/* Allow `name` when argument `arg` lies in [lo, hi] (lo, hi < 2^32), as a
 * set of aligned blocks compared on all 64 bits: a value with any of the
 * high 32 bits set never matches, so nothing the kernel truncates to a
 * refused number can pass (CVE-2019-10063).  libseccomp's SCMP_A*_32
 * helpers do not mask the high half, and one rule takes one comparison per
 * argument, hence the blocks. */
static int allow_range(scmp_filter_ctx ctx, const char *name, unsigned arg, uint64_t lo, uint64_t hi,
                       struct err **err)
{
        uint64_t x = lo;
        while (x <= hi) {
                uint64_t size = 1;
                while ((x & (size * 2 - 1)) == 0 && x + size * 2 - 1 <= hi && size < (1ull << 32))
                        size *= 2;
                struct scmp_arg_cmp c = { .arg = arg, .op = SCMP_CMP_MASKED_EQ, .datum_a = ~(size - 1), .datum_b = x };
                if (add(ctx, SCMP_ACT_ALLOW, name, 1, &c, err) < 0)
                        return -1;
                x += size;
        }
        return 0;
}

/* Allow every 32-bit value of `arg` except those in `refused` (sorted). */
static int allow_all_but(scmp_filter_ctx ctx, const char *name, unsigned arg, const uint64_t *refused, size_t n,
                         struct err **err)
{
        uint64_t from = 0;
        for (size_t i = 0; i < n; i++) {
                if (refused[i] > from && allow_range(ctx, name, arg, from, refused[i] - 1, err) < 0)
                        return -1;
                from = refused[i] + 1;
        }
        return allow_range(ctx, name, arg, from, 0xffffffffull, err);
}

/* Exactly v, on all 64 bits. */
#define EQ64(a, v) ((struct scmp_arg_cmp){ .arg = (a), .op = SCMP_CMP_EQ, .datum_a = (v), .datum_b = 0 })

/* The broker (sandbox/seccomp.h): threads only, no new namespace; any
 * ioctl but the terminal-injection ones; executable mappings (dlopen of
 * libchidori-net.so, the engine's JIT in process); rlimits read-only; the
 * prctl options glibc, threads and its own lockdown use; sockets of the
 * families HTTP and name resolution need; signals only to itself: it is
 * pid 1 of its own pid namespace, so kill/tgkill must name pid 1. */
static int add_broker_conditional(scmp_filter_ctx ctx, struct err **err)
{
        const uint32_t allow = SCMP_ACT_ALLOW;
        struct scmp_arg_cmp thr[] = { SCMP_A0_64(SCMP_CMP_MASKED_EQ, CLONE_THREAD | CLONE_NS_FLAGS, CLONE_THREAD) };
        if (add(ctx, allow, "clone", 1, thr, err) < 0 || add(ctx, SCMP_ACT_ERRNO(ENOSYS), "clone3", 0, NULL, err) < 0)
                return -1;
        static const uint64_t refused[] = { TIOCSCTTY, TIOCSTI, TIOCLINUX };
        if (allow_all_but(ctx, "ioctl", 1, refused, ARRAY_SIZE(refused), err) < 0)
                return -1;
        if (add(ctx, allow, "mmap", 0, NULL, err) < 0 || add(ctx, allow, "mprotect", 0, NULL, err) < 0 ||
            add(ctx, allow, "pkey_mprotect", 0, NULL, err) < 0 || add(ctx, allow, "rt_sigaction", 0, NULL, err) < 0)
                return -1;
#ifdef CHIDORI_SANITIZER
        if (add(ctx, allow, "prlimit64", 0, NULL, err) < 0)
                return -1;
#else
        struct scmp_arg_cmp ro[] = { SCMP_A2_64(SCMP_CMP_EQ, 0) };
        if (add(ctx, allow, "prlimit64", 1, ro, err) < 0)
                return -1;
#endif
        static const int opts[] = { PR_SET_NAME,     PR_GET_NAME,         0x53564d41 /* PR_SET_VMA */,
                                    PR_CAPBSET_READ, PR_GET_DUMPABLE,     PR_GET_NO_NEW_PRIVS,
                                    PR_GET_SECCOMP,  PR_SET_NO_NEW_PRIVS, PR_GET_PDEATHSIG };
        for (size_t i = 0; i < ARRAY_SIZE(opts); i++) {
                struct scmp_arg_cmp o[] = { SCMP_A0_32(SCMP_CMP_EQ, (uint32_t)opts[i]) };
                if (add(ctx, allow, "prctl", 1, o, err) < 0)
                        return -1;
        }
        struct scmp_arg_cmp dmp[] = { SCMP_A0_32(SCMP_CMP_EQ, PR_SET_DUMPABLE), SCMP_A1_64(SCMP_CMP_EQ, 0) };
        if (add(ctx, allow, "prctl", 2, dmp, err) < 0)
                return -1;
        static const int fams[] = { AF_UNIX, AF_INET, AF_INET6 };
        for (size_t i = 0; i < ARRAY_SIZE(fams); i++) {
                struct scmp_arg_cmp c[] = { SCMP_A0_32(SCMP_CMP_EQ, (uint32_t)fams[i]) };
                if (add(ctx, allow, "socket", 1, c, err) < 0)
                        return -1;
        }
        /* glibc's getaddrinfo asks rtnetlink which address families are up. */
        struct scmp_arg_cmp nl[] = { SCMP_A0_32(SCMP_CMP_EQ, AF_NETLINK), SCMP_A2_32(SCMP_CMP_EQ, 0 /* NETLINK_ROUTE */) };
        if (add(ctx, allow, "socket", 2, nl, err) < 0)
                return -1;
        struct scmp_arg_cmp self[] = { EQ64(0, 1) };
        if (add(ctx, allow, "kill", 1, self, err) < 0 || add(ctx, allow, "tgkill", 1, self, err) < 0)
                return -1;
        return 0;
}

/* clone: never a new namespace; the worker only threads.  clone3 hides its
 * flags in memory: answer ENOSYS so glibc uses clone. */
static int cond_clone(scmp_filter_ctx ctx, bool worker, struct err **err)
{
        const uint32_t allow = SCMP_ACT_ALLOW;
        if (worker) {
                struct scmp_arg_cmp c[] = { SCMP_A0_64(SCMP_CMP_MASKED_EQ, CLONE_THREAD | CLONE_NS_FLAGS, CLONE_THREAD) };
                if (add(ctx, allow, "clone", 1, c, err) < 0)
                        return -1;
        } else {
                struct scmp_arg_cmp c[] = { SCMP_A0_64(SCMP_CMP_MASKED_EQ, CLONE_NS_FLAGS, 0) };
                if (add(ctx, allow, "clone", 1, c, err) < 0)
                        return -1;
        }
        return add(ctx, SCMP_ACT_ERRNO(ENOSYS), "clone3", 0, NULL, err);
}

/* ioctl: never TIOCSTI (type into a terminal), TIOCLINUX, or TIOCSCTTY
 * (take a terminal over after setsid); a number with any high bit set is
 * refused too, since the kernel would truncate it (CVE-2019-10063).  The
 * worker gets a short list of harmless ones only. */
static int cond_ioctl(scmp_filter_ctx ctx, bool worker, struct err **err)
{
        if (worker) {
                static const unsigned long ok[] = { TCGETS, FIONREAD, FIOCLEX, FIONCLEX, TIOCGWINSZ };
                for (size_t i = 0; i < ARRAY_SIZE(ok); i++) {
                        struct scmp_arg_cmp c[] = { EQ64(1, ok[i]) };
                        if (add(ctx, SCMP_ACT_ALLOW, "ioctl", 1, c, err) < 0)
                                return -1;
                }
                return 0;
        }
        static const uint64_t refused[] = { TIOCSCTTY, TIOCSTI, TIOCLINUX };
        _Static_assert(TIOCSCTTY < TIOCSTI && TIOCSTI < TIOCLINUX, "sorted");
        return allow_all_but(ctx, "ioctl", 1, refused, ARRAY_SIZE(refused), err);
}

/* mmap/mprotect: no new executable memory in stage 2 unless the JIT is on. */
static int cond_mmap(scmp_filter_ctx ctx, enum seccomp_profile p, bool jit, struct err **err)
{
        const uint32_t allow = SCMP_ACT_ALLOW;
        bool exec_ok = jit || !(p == SECCOMP_STAGE2_WORKER);
        if (exec_ok) {
                if (add(ctx, allow, "mmap", 0, NULL, err) < 0 || add(ctx, allow, "mprotect", 0, NULL, err) < 0 ||
                    add(ctx, allow, "pkey_mprotect", 0, NULL, err) < 0)
                        return -1;
                return 0;
        }
        struct scmp_arg_cmp c[] = { SCMP_A2_32(SCMP_CMP_MASKED_EQ, PROT_EXEC, 0) };
        if (add(ctx, allow, "mmap", 1, c, err) < 0 || add(ctx, allow, "mprotect", 1, c, err) < 0)
                return -1;
        return 0;
}

/* rt_sigaction: stage 2 keeps its SIGSYS reporter in place. */
static int cond_sigaction(scmp_filter_ctx ctx, enum seccomp_profile p, struct err **err)
{
        if (p != SECCOMP_STAGE2_WORKER)
                return add(ctx, SCMP_ACT_ALLOW, "rt_sigaction", 0, NULL, err);
        /* Any signal but SIGSYS (compared on all 64 bits); SIGSYS only to
         * read the current action. */
        static const uint64_t refused[] = { SIGSYS };
        struct scmp_arg_cmp q[] = { EQ64(0, SIGSYS), EQ64(1, 0) };
        if (allow_all_but(ctx, "rt_sigaction", 0, refused, 1, err) < 0 ||
            add(ctx, SCMP_ACT_ALLOW, "rt_sigaction", 2, q, err) < 0)
                return -1;
        return 0;
}

/* The worker's process controls: rlimits read-only, the prctl options
 * glibc and the engine use, and in stage 1 its own one-way lockdown. */
static int cond_worker_prctl(scmp_filter_ctx ctx, enum seccomp_profile p, struct err **err)
{
        const uint32_t allow = SCMP_ACT_ALLOW;
        /* prlimit64: read-only (new_limit == NULL).  The ASan runtime of a
         * sanitizer build sets limits of its own. */
        struct scmp_arg_cmp c[] = { SCMP_A2_64(SCMP_CMP_EQ, 0) };
#ifdef CHIDORI_SANITIZER
        if (add(ctx, allow, "prlimit64", 0, NULL, err) < 0)
                return -1;
        (void)c;
#else
        if (add(ctx, allow, "prlimit64", 1, c, err) < 0)
                return -1;
#endif
        static const int opts[] = { PR_SET_NAME, PR_GET_NAME, 0x53564d41 /* PR_SET_VMA */, PR_CAPBSET_READ,
                                    PR_GET_DUMPABLE, PR_GET_NO_NEW_PRIVS, PR_GET_SECCOMP };
        for (size_t i = 0; i < ARRAY_SIZE(opts); i++) {
                struct scmp_arg_cmp o[] = { SCMP_A0_32(SCMP_CMP_EQ, (uint32_t)opts[i]) };
                if (add(ctx, allow, "prctl", 1, o, err) < 0)
                        return -1;
        }
        if (p != SECCOMP_STAGE1_WORKER)
                return 0;
        /* The worker's lockdown: no_new_privs (already set) and not
         * dumpable, both one-way. */
        struct scmp_arg_cmp nnp[] = { SCMP_A0_32(SCMP_CMP_EQ, PR_SET_NO_NEW_PRIVS) };
        struct scmp_arg_cmp dmp[] = { SCMP_A0_32(SCMP_CMP_EQ, PR_SET_DUMPABLE), SCMP_A1_64(SCMP_CMP_EQ, 0) };
        if (add(ctx, allow, "prctl", 1, nnp, err) < 0 || add(ctx, allow, "prctl", 2, dmp, err) < 0)
                return -1;
        return 0;
}

/* A launched program: any rlimit and prctl, sockets of the unix and IP
 * families (the box has only lo). */
static int cond_launch_prctl_socket(scmp_filter_ctx ctx, struct err **err)
{
        const uint32_t allow = SCMP_ACT_ALLOW;
        if (add(ctx, allow, "prlimit64", 0, NULL, err) < 0 || add(ctx, allow, "prctl", 0, NULL, err) < 0)
                return -1;
        static const int fams[] = { AF_UNIX, AF_INET, AF_INET6 };
        for (size_t i = 0; i < ARRAY_SIZE(fams); i++) {
                struct scmp_arg_cmp c[] = { SCMP_A0_32(SCMP_CMP_EQ, (uint32_t)fams[i]) };
                if (add(ctx, allow, "socket", 1, c, err) < 0)
                        return -1;
        }
        return 0;
}

/* The rules on arguments (is_conditional lists their syscalls), in the
 * order they have always been added. */
static int add_conditional(scmp_filter_ctx ctx, enum seccomp_profile p, bool jit, uint32_t deny,
                           struct err **err)
{
        (void)deny;
        bool worker = p == SECCOMP_STAGE1_WORKER || p == SECCOMP_STAGE2_WORKER;
        if (p == SECCOMP_BROKER1 || p == SECCOMP_BROKER2)
                return add_broker_conditional(ctx, err);
        if (cond_clone(ctx, worker, err) < 0 || cond_ioctl(ctx, worker, err) < 0 ||
            cond_mmap(ctx, p, jit, err) < 0 || cond_sigaction(ctx, p, err) < 0)
                return -1;
        return worker ? cond_worker_prctl(ctx, p, err) : cond_launch_prctl_socket(ctx, err);
}

static bool is_conditional(const char *name, enum seccomp_profile p)
{
        static const char *const c[] = { "clone", "ioctl", "mmap", "mprotect", "rt_sigaction", "prlimit64",
                                         "prctl", "socket" };
        for (size_t i = 0; i < ARRAY_SIZE(c); i++)
                if (strcmp(c[i], name) == 0)
                        return true;
        /* The broker signals only itself (add_broker_conditional). */
        return (p == SECCOMP_BROKER1 || p == SECCOMP_BROKER2) && (strcmp(name, "tgkill") == 0 || strcmp(name, "kill") == 0);
}

static bool in_profile(const struct rule *r, enum seccomp_profile p)
{
        switch (p) {
        case SECCOMP_STAGE1_WORKER: return r->in & (W | S1);
        case SECCOMP_STAGE2_WORKER: return r->in & W;
        case SECCOMP_LAUNCH:
        case SECCOMP_LAUNCH_ERRNO: return r->in & L;
        case SECCOMP_BROKER1: return r->in & (B | B1);
        case SECCOMP_BROKER2: return r->in & B;
        default: return false;
        }
}

static int export_bpf(scmp_filter_ctx ctx, struct seccomp_prog *ret, struct err **err)
{
        _cleanup_close_ int fd = memfd_create("chidori-bpf", MFD_CLOEXEC);
        if (fd < 0)
                return err_set(err, errno, "memfd_create");
        int r = seccomp_export_bpf(ctx, fd);
        if (r < 0)
                return err_set(err, -r, "export the seccomp filter");
        off_t len = lseek(fd, 0, SEEK_END);
        if (len <= 0 || len % (off_t)sizeof(struct sock_filter))
                return err_set(err, EINVAL, "exported seccomp filter has %lld bytes", (long long)len);
        struct sock_filter *insns = malloc((size_t)len);
        if (!insns)
                return err_set(err, ENOMEM, "seccomp filter");
        if (pread(fd, insns, (size_t)len, 0) != len) {
                free(insns);
                return err_set(err, errno, "read back the seccomp filter");
        }
        ret->insns = insns;
        ret->len = (size_t)len / sizeof(struct sock_filter);
        return 0;
}

/* launch --seccomp-errno: what is outside the allowlist answers EPERM, but
 * the fixed prefix keeps the kill verdict (notified, so the parent names
 * it): these rules give it that verdict explicitly, since it is no longer
 * the default.  Clone with a namespace flag and the terminal-injection
 * ioctls (compared on the low 32 bits, so high bits cannot hide them) are
 * part of the prefix. */
static int add_prefix(scmp_filter_ctx ctx, uint32_t action, struct err **err)
{
        for (size_t i = 0; i < ARRAY_SIZE(deny_always); i++)
                if (add(ctx, action, deny_always[i], 0, NULL, err) < 0)
                        return -1;
        static const uint64_t ns_flags[] = { CLONE_NEWNS, CLONE_NEWCGROUP, CLONE_NEWUTS, CLONE_NEWIPC,
                                             CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET, 0x00000080ULL };
        for (size_t i = 0; i < ARRAY_SIZE(ns_flags); i++) {
                struct scmp_arg_cmp c[] = { SCMP_A0_64(SCMP_CMP_MASKED_EQ, ns_flags[i], ns_flags[i]) };
                if (add(ctx, action, "clone", 1, c, err) < 0)
                        return -1;
        }
        static const uint64_t tty[] = { TIOCSCTTY, TIOCSTI, TIOCLINUX };
        for (size_t i = 0; i < ARRAY_SIZE(tty); i++) {
                struct scmp_arg_cmp c[] = { SCMP_A1_64(SCMP_CMP_MASKED_EQ, 0xffffffffULL, tty[i]) };
                if (add(ctx, action, "ioctl", 1, c, err) < 0)
                        return -1;
        }
        return 0;
}

int seccomp_compile(enum seccomp_profile p, bool jit, bool notify, struct seccomp_prog *ret, struct err **err)
{
        memset(ret, 0, sizeof(*ret));
        /* Stage 2 traps into the worker's reporter; the others notify the
         * parent (or kill when notification is unavailable).  With
         * --seccomp-errno, only the prefix does; the rest answers EPERM. */
        uint32_t kill = notify ? SCMP_ACT_NOTIFY : SCMP_ACT_KILL_PROCESS;
        /* The broker has no listener: a call outside its list kills it
         * (SIGSYS), and the monitor ends the run as for a broken broker. */
        uint32_t deny = p == SECCOMP_BROKER1 || p == SECCOMP_BROKER2 ? SCMP_ACT_KILL_PROCESS
                        : p == SECCOMP_STAGE2_WORKER ? SCMP_ACT_TRAP
                        : p == SECCOMP_LAUNCH_ERRNO ? SCMP_ACT_ERRNO(EPERM)
                                                    : kill;
        scmp_filter_ctx ctx = seccomp_init(deny);
        if (!ctx)
                return err_set(err, ENOMEM, "seccomp_init");
        int rc = 0;
        /* Other architectures (x32, i386 numbers) never match the native
         * arch: libseccomp's arch check kills them. */
        if (seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS) < 0 ||
            seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 0) < 0) {
                rc = err_set(err, EINVAL, "seccomp attributes");
                goto out;
        }
        /* The fixed prefix: the dangerous families get the deny verdict,
         * which is also the default (libseccomp refuses a rule equal to the
         * default), so the check below makes sure no allow rule names them. */
        for (size_t i = 0; i < ARRAY_SIZE(rules) && rc == 0; i++) {
                if (!in_profile(&rules[i], p) || is_conditional(rules[i].name, p))
                        continue;
                for (size_t k = 0; k < ARRAY_SIZE(deny_always); k++)
                        if (strcmp(deny_always[k], rules[i].name) == 0)
                                rc = err_set(err, EINVAL, "seccomp table allows %s, which the fixed prefix denies",
                                             rules[i].name);
                if (rc == 0)
                        rc = add(ctx, SCMP_ACT_ALLOW, rules[i].name, 0, NULL, err);
        }
#ifdef CHIDORI_SANITIZER
        for (size_t i = 0; i < ARRAY_SIZE(sanitizer_extra) && rc == 0; i++)
                rc = add(ctx, SCMP_ACT_ALLOW, sanitizer_extra[i], 0, NULL, err);
#endif
        if (rc == 0)
                rc = add_conditional(ctx, p, jit, deny, err);
        if (rc == 0 && p == SECCOMP_LAUNCH_ERRNO)
                rc = add_prefix(ctx, kill, err);
        if (rc == 0)
                rc = export_bpf(ctx, ret, err);
        ret->notify = deny == SCMP_ACT_NOTIFY || (p == SECCOMP_LAUNCH_ERRNO && kill == SCMP_ACT_NOTIFY);
out:
        seccomp_release(ctx);
        return rc;
}

void seccomp_prog_free(struct seccomp_prog *p)
{
        if (!p)
                return;
        free(p->insns);
        p->insns = NULL;
        p->len = 0;
}

void seccomp_dump_table(enum seccomp_profile p, void (*emit)(const char *, const char *, void *), void *arg)
{
        for (size_t i = 0; i < ARRAY_SIZE(rules); i++)
                if (in_profile(&rules[i], p))
                        emit(rules[i].name, rules[i].why, arg);
}
