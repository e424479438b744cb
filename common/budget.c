/* common/budget.c — see budget.h. */
#include "common/budget.h"

#include <errno.h>

#include "common/util.h"

enum budget_reason budget_over(const struct budget *b)
{
        if (!b)
                return BUDGET_OK;
        if (b->stop && *b->stop)
                return BUDGET_STOPPED;
        if (b->deadline_at > 0 && mono_ms() >= b->deadline_at)
                return BUDGET_DEADLINE;
        return BUDGET_OK;
}

int budget_check(const struct budget *b, const char *what, struct err **err)
{
        switch (budget_over(b)) {
        case BUDGET_OK:
                return 0;
        case BUDGET_DEADLINE:
                return err_set(err, ETIMEDOUT, "%s: stopped: deadline exceeded", what);
        case BUDGET_STOPPED:
        default:
                return err_set(err, EINTR, "%s: stopped: interrupted by signal %d", what, (int)*b->stop);
        }
}
