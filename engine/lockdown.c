/* engine/lockdown.c — the worker's first act: install the tight stage-2
 * seccomp allowlist the parent compiled (fd 4), with a SIGSYS reporter, before
 * any input is read.  See sandbox/seccomp.h for the stages. */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>

#include "engine/engine.h"
#include "engine/engine-internal.h"

#define STAGE2_FD 4
#define STAGE2_MAX_INSNS 4096

/* A call outside the allowlist traps here.  Report its number on stderr in
 * the form the parent recognises, then make another forbidden call: SIGSYS
 * is blocked inside this handler, so the kernel kills the process with it. */
static void on_sigsys(int sig, siginfo_t *si, void *uc)
{
        (void)sig, (void)uc;
        char buf[64] = "chidori-worker: blocked syscall ";
        size_t n = strlen(buf);
        char digits[16];
        int d = 0;
        unsigned v = (unsigned)si->si_syscall;
        do {
                digits[d++] = (char)('0' + v % 10);
                v /= 10;
        } while (v && d < (int)sizeof(digits));
        while (d > 0)
                buf[n++] = digits[--d];
        buf[n++] = '\n';
        ssize_t w = write(2, buf, n);
        (void)w;
        syscall(SYS_ptrace, 0, 0, 0, 0);
        _exit(159); /* not reached */
}

/* The worker is pid 1 of its pid namespace, where a signal it sends itself
 * with the default action is ignored: abort() would not end the process.
 * Report the abort the way the parent recognises and exit with its code. */
/* The CPU budget, for the abort handler: JavaScriptCore has been seen to
 * abort (rarely, under load) while it unwinds the termination the budget
 * started.  Such an abort is the budget's ending, not a crash: say so first
 * (docs/decisions.md, "An abort past the CPU budget is the budget's
 * ending").  Set once per process before JS runs; read in the handler. */
static clockid_t abort_clock;
static uint64_t abort_start_ns, abort_budget_ns;
static volatile sig_atomic_t abort_info_set;

void engine_abort_budget(clockid_t engine_clock, uint64_t start_ns, uint64_t budget_ns)
{
        abort_clock = engine_clock;
        abort_start_ns = start_ns;
        abort_budget_ns = budget_ns;
        abort_info_set = budget_ns > 0;
}

static bool past_budget(void)
{
        struct timespec ts;
        if (!abort_info_set || clock_gettime(abort_clock, &ts) < 0)
                return false;
        uint64_t now = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
        return now - abort_start_ns >= abort_budget_ns;
}

static void on_sigabrt(int sig)
{
        (void)sig;
        static const char cpu[] = "chidori-worker: cpu limit reached\n";
        static const char m[] = "chidori-worker: fatal signal 6\n";
        if (past_budget()) {
                ssize_t c = write(2, cpu, sizeof(cpu) - 1);
                (void)c;
        }
        ssize_t w = write(2, m, sizeof(m) - 1);
        (void)w;
        _exit(134);
}

int engine_lockdown(struct err **err)
{
        if (getpid() == 1) {
                struct sigaction ab;
                memset(&ab, 0, sizeof(ab));
                ab.sa_handler = on_sigabrt;
                sigfillset(&ab.sa_mask);
                sigaction(SIGABRT, &ab, NULL);
        }
        /* Only a worker the launcher started in a box has the filter on fd 4;
         * the launcher says so in the (fixed) environment.  Never read
         * whatever else fd 4 happens to be. */
        const char *flag = getenv("CHIDORI_STAGE2_FD");
        if (!flag || strcmp(flag, "4") != 0)
                return 0;
        struct sock_filter insns[STAGE2_MAX_INSNS];
        size_t have = 0;
        for (;;) {
                ssize_t n = read(STAGE2_FD, (char *)insns + have, sizeof(insns) - have);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return err_set(err, errno, "read the stage-2 filter from fd 4");
                }
                if (n == 0)
                        break;
                have += (size_t)n;
                if (have == sizeof(insns))
                        return err_set(err, E2BIG, "stage-2 filter larger than %d instructions", STAGE2_MAX_INSNS);
        }
        close(STAGE2_FD);
        if (have == 0 || have % sizeof(struct sock_filter))
                return err_set(err, EINVAL, "stage-2 filter has %zu bytes", have);
        struct sigaction sa;
        memset(&sa, 0, sizeof(sa));
        sa.sa_sigaction = on_sigsys;
        sa.sa_flags = SA_SIGINFO;
        sigfillset(&sa.sa_mask);
        if (sigaction(SIGSYS, &sa, NULL) < 0)
                return err_set(err, errno, "install the SIGSYS reporter");
        struct sock_fprog prog = { .len = (unsigned short)(have / sizeof(struct sock_filter)), .filter = insns };
        /* Dumpability does not survive execve: set it again here. */
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 || prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
                return err_set(err, errno, "no_new_privs / not dumpable");
        if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) < 0)
                return err_set(err, errno, "install the stage-2 seccomp filter");
        return 0;
}
