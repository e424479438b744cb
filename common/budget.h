/* common/budget.h — how a long piece of work in the parent learns that the
 * run has to stop.
 *
 * The parent's long operations (template rendering, the workspace manifest,
 * loading a journal for replay, waiting for an answer on the terminal) take
 * a `const struct budget *` and ask budget_over() now and then: every tag,
 * file, chunk or line, whatever keeps the gap well under ~100 ms.  A check
 * costs one clock_gettime(CLOCK_MONOTONIC) (vDSO, ~20 ns).  The owner of the
 * budget decides what "over" means; the run's is its --deadline and the
 * launcher's stop signal (SIGINT/SIGTERM/SIGHUP).  NULL is "never over".
 *
 * Work that stops for its budget fails with an error whose errnum is
 * ETIMEDOUT (deadline) or EINTR (stop signal); its caller does not report
 * that error as the outcome: the owner ends the run for its own reason. */
#ifndef CHIDORI_COMMON_BUDGET_H
#define CHIDORI_COMMON_BUDGET_H

#include <signal.h>

#include "common/err.h"

enum budget_reason {
        BUDGET_OK = 0,
        BUDGET_DEADLINE,  /* the wall-clock deadline passed */
        BUDGET_STOPPED,   /* a stop signal arrived */
};

struct budget {
        double deadline_at;                /* mono_ms() of the deadline, 0 = none */
        volatile sig_atomic_t *stop;       /* non-zero: stop (a signal number), or NULL */
};

/* BUDGET_OK, or why the work must stop now.  b may be NULL. */
enum budget_reason budget_over(const struct budget *b);

/* budget_over() as an error: 0, or -1 with *err set to "<what>: stopped
 * (deadline exceeded | interrupted by signal N)", errnum ETIMEDOUT/EINTR. */
int budget_check(const struct budget *b, const char *what, struct err **err);

#endif
