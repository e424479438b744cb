/* effects/time/timer.c — `timer.wait {ms}`: the worker's setTimeout and
 * setInterval in a live run (issue 18).
 *
 * The call is pending until it is due; the session's loop wakes for the
 * earliest (the time family's fds hook lowers its timeout, no fd) and the
 * perform hook answers every call that is due, earliest first (ties by call
 * id).  The answer is journaled like any other, so replay delivers it in
 * the recorded order without waiting (decision 5).  call.cancel removes a
 * timer (broker_timers_cancel) and the session answers it with an
 * AbortError.  At most --max-timers are pending at once; they are not
 * counted in --max-calls, so timers cannot starve the agent's other calls.
 *
 * With --virtual-time the worker never asks for timer.wait (its timers run
 * on a virtual clock, decision 6).
 */
#define _GNU_SOURCE
#include <cjson/cJSON.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>

#include "common/util.h"
#include "runtime/runtime-internal.h"

/* As setTimeout's: a 32-bit signed number of milliseconds. */
#define TIMER_MS_MAX 2147483647.0

struct timer {
        double due;      /* mono_ms() */
        int64_t id;      /* the call's */
};

/* A binary min-heap on (due, id). */
struct timer_set {
        struct timer *h;
        size_t n, cap;
};

static bool before(const struct timer *a, const struct timer *b)
{
        return a->due < b->due || (a->due == b->due && a->id < b->id);
}

static void swap(struct timer *a, struct timer *b)
{
        struct timer x = *a;
        *a = *b;
        *b = x;
}

static void sift_up(struct timer_set *t, size_t i)
{
        while (i > 0) {
                size_t p = (i - 1) / 2;
                if (!before(&t->h[i], &t->h[p]))
                        break;
                swap(&t->h[i], &t->h[p]);
                i = p;
        }
}

static void sift_down(struct timer_set *t, size_t i)
{
        for (;;) {
                size_t l = 2 * i + 1, r = l + 1, m = i;
                if (l < t->n && before(&t->h[l], &t->h[m]))
                        m = l;
                if (r < t->n && before(&t->h[r], &t->h[m]))
                        m = r;
                if (m == i)
                        return;
                swap(&t->h[i], &t->h[m]);
                i = m;
        }
}

static void remove_at(struct timer_set *t, size_t i)
{
        t->h[i] = t->h[--t->n];
        if (i < t->n) {
                sift_down(t, i);
                sift_up(t, i);
        }
}

int effect_timer_wait(struct broker *b, int64_t id, const cJSON *args, cJSON **ret, struct err **err)
{
        (void)ret;
        const cJSON *ms = cJSON_GetObjectItemCaseSensitive(args, "ms");
        if (!cJSON_IsNumber(ms) || !(ms->valuedouble >= 0 && ms->valuedouble <= TIMER_MS_MAX))
                return err_set(err, 0, "timer.wait: 'ms' must be a number of milliseconds from 0 to %.0f",
                               TIMER_MS_MAX);
        if (b->ntimers >= b->lim.max_timers)
                return broker_limit_fail(b, LIMIT_TIMERS, err);
        struct timer_set *t = b->timers;
        if (!t && !(t = b->timers = calloc(1, sizeof(*t))))
                return err_set(err, ENOMEM, "timer.wait");
        if (t->n == t->cap) {
                size_t cap = t->cap ? 2 * t->cap : 16;
                struct timer *nh = realloc(t->h, cap * sizeof(*nh));
                if (!nh)
                        return err_set(err, ENOMEM, "timer.wait");
                t->h = nh;
                t->cap = cap;
        }
        t->h[t->n] = (struct timer){ .due = mono_ms() + ms->valuedouble, .id = id };
        sift_up(t, t->n++);
        b->ntimers++;
        return 1;
}

/* No fd: the loop's timeout, rounded up so the wake-up is never early. */
size_t broker_timers_fds(struct broker *b, struct pollfd *fds, size_t max, int *timeout_ms)
{
        (void)fds, (void)max;
        const struct timer_set *t = b->timers;
        if (!t || t->n == 0)
                return 0;
        double left = t->h[0].due - mono_ms();
        int ms = left <= 0 ? 0 : left >= INT_MAX ? INT_MAX : (int)left + ((double)(int)left < left);
        if (*timeout_ms < 0 || ms < *timeout_ms)
                *timeout_ms = ms;
        return 0;
}

int broker_timers_perform(struct broker *b, const struct pollfd *fds, size_t n, struct err **err)
{
        (void)fds, (void)n, (void)err;
        struct timer_set *t = b->timers;
        if (!t || t->n == 0)
                return 0;
        double now = mono_ms();
        while (t->n > 0 && t->h[0].due <= now && !b->finished) {
                int64_t id = t->h[0].id;
                remove_at(t, 0);
                b->ntimers--;
                broker_complete(b, id, cJSON_CreateNull(), NULL);
        }
        return 0;
}

void broker_timers_cancel(struct broker *b, int64_t id)
{
        struct timer_set *t = b->timers;
        for (size_t i = 0; t && i < t->n; i++)
                if (t->h[i].id == id) {
                        remove_at(t, i);
                        b->ntimers--;
                        return;
                }
}

void broker_timers_free(struct broker *b)
{
        if (b->timers)
                free(b->timers->h);
        free(b->timers);
        b->timers = NULL;
        b->ntimers = 0;
}
