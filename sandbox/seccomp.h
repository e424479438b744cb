/* sandbox/seccomp.h — the seccomp allowlists, compiled once per launcher
 * process with libseccomp into a BPF program the child loads with seccomp(2).
 *
 * Three filters (see docs/sandbox.md, "seccomp"):
 *   SECCOMP_STAGE1_WORKER  installed by the launcher just before it execs the
 *                          engine worker: the worker allowlist plus what the
 *                          dynamic loader needs, plus execve (once).
 *   SECCOMP_STAGE2_WORKER  installed by the worker itself as its first act,
 *                          before it reads any input: the tight allowlist, no
 *                          execve, no new processes, no sockets.  Loaded from
 *                          the BPF the parent passes on fd 4.
 *   SECCOMP_LAUNCH         `chidori launch`: a general allowlist for ordinary
 *                          programs, with the same dangerous families denied.
 *   SECCOMP_LAUNCH_ERRNO   `chidori launch --seccomp-errno`: the same list,
 *                          but a call outside it returns EPERM (as container
 *                          runtimes do) and the program goes on; only the
 *                          fixed prefix still kills and is named.
 *   SECCOMP_BROKER1        installed by the monitor in the broker's child just
 *                          before it execs chidori-broker (monitor/broker.c):
 *                          the broker list plus execve/execveat and seccomp.
 *   SECCOMP_BROKER2        installed by chidori-broker itself as its first act
 *                          (broker/lockdown.c), before it reads anything: the
 *                          same list without execve/execveat/seccomp.  Files,
 *                          sockets (unix, inet, inet6, rtnetlink), epoll,
 *                          threads (clone with CLONE_THREAD only), executable
 *                          mappings (dlopen, the in-process engine's JIT);
 *                          signals only to itself (pid 1 of its own pid
 *                          namespace); no process creation, ptrace, mount,
 *                          namespaces, module loading, keyring, bpf,
 *                          perf_event_open, setuid family, personality.  A
 *                          call outside it kills the broker (no listener).
 * Every filter starts with the fixed prefix no option can lift.
 *
 * Verdicts: a call outside the allowlist is reported to the parent through a
 * seccomp user-notification listener (stage 1 and launch): the parent names
 * the syscall and kills the box.  Stage 2 traps (SIGSYS) into the worker's
 * handler, which reports the number on stderr and kills the process.
 */
#ifndef CHIDORI_SANDBOX_SECCOMP_H
#define CHIDORI_SANDBOX_SECCOMP_H

#include <linux/filter.h>
#include <stdbool.h>
#include <stddef.h>

#include "common/err.h"

enum seccomp_profile {
        SECCOMP_STAGE1_WORKER,
        SECCOMP_STAGE2_WORKER,
        SECCOMP_LAUNCH,
        SECCOMP_LAUNCH_ERRNO,
        SECCOMP_BROKER1,
        SECCOMP_BROKER2,
        SECCOMP_PROFILE_MAX
};

struct seccomp_prog {
        struct sock_filter *insns;
        size_t len;
        bool notify;   /* default action is SECCOMP_RET_USER_NOTIF */
};

/* Compile a profile.  jit=false also denies new executable mappings
 * (mmap/mprotect with PROT_EXEC) in stage 2.  notify=false uses
 * kill-process instead of the user-notification verdict. */
int seccomp_compile(enum seccomp_profile p, bool jit, bool notify, struct seccomp_prog *ret, struct err **err);
void seccomp_prog_free(struct seccomp_prog *p);

/* Every profile compiled at build time ($(BUILD)/gen/seccomp_bpf.c, made by
 * sandbox/seccomp-gen.c): [profile][jit], user-notification verdicts. */
extern const struct seccomp_prog seccomp_prebuilt[SECCOMP_PROFILE_MAX][2];
/* The same with kill-process verdicts where a profile has a listener, for a
 * kernel without seccomp user notification (the others are seccomp_prebuilt's). */
extern const struct seccomp_prog seccomp_prebuilt_kill[SECCOMP_PROFILE_MAX][2];
/* Syscall names by number on this architecture, NULL where there is none
 * (generated; seccomp_syscall_name in sandbox/seccomp-names.c reads it). */
#define SECCOMP_SYSCALL_NAMES 1024
extern const char *const seccomp_syscall_names[SECCOMP_SYSCALL_NAMES];

/* Name of syscall nr on this architecture ("nr 999" if unknown); static buf. */
const char *seccomp_syscall_name(int nr);

/* One line per allowed syscall, "name<TAB>reason", for docs and --check. */
void seccomp_dump_table(enum seccomp_profile p, void (*emit)(const char *name, const char *why, void *arg), void *arg);

#endif
