/* sandbox/steps.c — run a lockdown's named steps in order (steps.h). */
#include "sandbox/steps.h"

int lockdown_run(const struct lockdown_step *steps, size_t n, void *ctx, const char **ret_failed, struct err **err)
{
        for (size_t i = 0; i < n; i++) {
                if (steps[i].fn(ctx, err) < 0) {
                        if (ret_failed)
                                *ret_failed = steps[i].name;
                        return -1;
                }
        }
        if (ret_failed)
                *ret_failed = NULL;
        return 0;
}
