/* sandbox/steps.h — a lockdown written once as a list of named steps, run
 * in order (nsjail's containProc() shape): the box's child (sandbox/box.c)
 * and the broker's (monitor/broker.c).  Each step is a function; the first
 * that fails stops the list, and its name goes to the parent with the
 * error, so a report reads "lockdown step 'drop every capability': ...". */
#ifndef CHIDORI_SANDBOX_STEPS_H
#define CHIDORI_SANDBOX_STEPS_H

#include <stddef.h>

#include "common/err.h"

struct lockdown_step {
        const char *name;
        int (*fn)(void *ctx, struct err **err);  /* 0, or -1 with err set */
};

/* Run steps[0..n) with ctx.  0 when all succeeded; else -1, *ret_failed =
 * the failing step's name (static), err as the step set it. */
int lockdown_run(const struct lockdown_step *steps, size_t n, void *ctx, const char **ret_failed, struct err **err);

#endif
