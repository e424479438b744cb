/* runtime/evloop.c — epoll watchers, a timer heap, deferred calls, hooks.
 *
 * Removal while dispatching: a removed watcher or timer is marked dead and
 * freed at the end of the turn, so an event already returned by epoll_wait
 * for it is skipped, never delivered to freed memory.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "common/util.h"
#include "runtime/evloop.h"

struct ev_io {
        struct ev_io *next_dead;
        int fd;
        uint32_t events;
        ev_io_fn fn;
        void *arg;
        bool dead;
};

struct ev_timer {
        double at;
        size_t idx;          /* place in the heap; SIZE_MAX once fired or cancelled */
        uint64_t order;      /* ties fire in the order they were added */
        ev_timer_fn fn;
        void *arg;
};

struct ev_call {
        ev_fn fn;
        void *arg;
};

struct ev_calls {
        struct ev_call *v;
        size_t n, cap;
};

struct evloop {
        int epfd;
        struct ev_io *dead;          /* removed watchers, freed at the end of the turn */
        struct ev_timer **heap;
        size_t nheap, heap_cap;
        uint64_t timer_order;
        struct ev_calls deferred;
        struct ev_calls prepare, check;
        bool dispatching;
};

static int calls_push(struct ev_calls *c, ev_fn fn, void *arg, struct err **err)
{
        if (c->n == c->cap) {
                size_t cap = c->cap ? 2 * c->cap : 8;
                struct ev_call *nv = realloc(c->v, cap * sizeof(*nv));
                if (!nv)
                        return err_set(err, ENOMEM, "event loop");
                c->v = nv;
                c->cap = cap;
        }
        c->v[c->n++] = (struct ev_call){ fn, arg };
        return 0;
}

int evloop_new(struct evloop **ret, struct err **err)
{
        struct evloop *l = calloc(1, sizeof(*l));
        if (!l)
                return err_set(err, ENOMEM, "event loop");
        l->epfd = epoll_create1(EPOLL_CLOEXEC);
        if (l->epfd < 0) {
                int e = errno;
                free(l);
                return err_set(err, e, "epoll_create1");
        }
        *ret = l;
        return 0;
}

static void free_dead(struct evloop *l)
{
        while (l->dead) {
                struct ev_io *io = l->dead;
                l->dead = io->next_dead;
                free(io);
        }
}

void evloop_free(struct evloop *l)
{
        if (!l)
                return;
        free_dead(l);
        for (size_t i = 0; i < l->nheap; i++)
                free(l->heap[i]);
        free(l->heap);
        free(l->deferred.v);
        free(l->prepare.v);
        free(l->check.v);
        close(l->epfd);
        free(l);
}

/* ---- fd watchers ---- */

int evloop_io_add(struct evloop *l, int fd, uint32_t events, ev_io_fn fn, void *arg, struct ev_io **ret,
                  struct err **err)
{
        struct ev_io *io = calloc(1, sizeof(*io));
        if (!io)
                return err_set(err, ENOMEM, "event loop");
        *io = (struct ev_io){ .fd = fd, .events = events, .fn = fn, .arg = arg };
        struct epoll_event ev = { .events = events, .data.ptr = io };
        if (epoll_ctl(l->epfd, EPOLL_CTL_ADD, fd, &ev) < 0) {
                int e = errno;
                free(io);
                return err_set(err, e, "watch fd %d", fd);
        }
        *ret = io;
        return 0;
}

int evloop_io_set(struct evloop *l, struct ev_io *io, uint32_t events, struct err **err)
{
        if (io->events == events)
                return 0;
        struct epoll_event ev = { .events = events, .data.ptr = io };
        if (epoll_ctl(l->epfd, EPOLL_CTL_MOD, io->fd, &ev) < 0)
                return err_set(err, errno, "watch fd %d", io->fd);
        io->events = events;
        return 0;
}

uint32_t evloop_io_events(const struct ev_io *io)
{
        return io->events;
}

void evloop_io_del(struct evloop *l, struct ev_io *io)
{
        if (!io || io->dead)
                return;
        epoll_ctl(l->epfd, EPOLL_CTL_DEL, io->fd, NULL);
        io->dead = true;
        io->next_dead = l->dead;
        l->dead = io;
        if (!l->dispatching)
                free_dead(l);
}

/* ---- timers: a binary min-heap on (at, order) ---- */

static bool before(const struct ev_timer *a, const struct ev_timer *b)
{
        return a->at < b->at || (a->at == b->at && a->order < b->order);
}

static void heap_set(struct evloop *l, size_t i, struct ev_timer *t)
{
        l->heap[i] = t;
        t->idx = i;
}

static void sift_up(struct evloop *l, size_t i)
{
        struct ev_timer *t = l->heap[i];
        while (i > 0 && before(t, l->heap[(i - 1) / 2])) {
                heap_set(l, i, l->heap[(i - 1) / 2]);
                i = (i - 1) / 2;
        }
        heap_set(l, i, t);
}

static void sift_down(struct evloop *l, size_t i)
{
        struct ev_timer *t = l->heap[i];
        for (;;) {
                size_t c = 2 * i + 1;
                if (c >= l->nheap)
                        break;
                if (c + 1 < l->nheap && before(l->heap[c + 1], l->heap[c]))
                        c++;
                if (!before(l->heap[c], t))
                        break;
                heap_set(l, i, l->heap[c]);
                i = c;
        }
        heap_set(l, i, t);
}

static void heap_remove(struct evloop *l, struct ev_timer *t)
{
        size_t i = t->idx;
        struct ev_timer *last = l->heap[--l->nheap];
        t->idx = SIZE_MAX;
        if (i == l->nheap)
                return;
        heap_set(l, i, last);
        sift_down(l, i);
        sift_up(l, last->idx);
}

int evloop_timer_add(struct evloop *l, double at_ms, ev_timer_fn fn, void *arg, struct ev_timer **ret,
                     struct err **err)
{
        if (l->nheap == l->heap_cap) {
                size_t cap = l->heap_cap ? 2 * l->heap_cap : 8;
                struct ev_timer **nh = realloc(l->heap, cap * sizeof(*nh));
                if (!nh)
                        return err_set(err, ENOMEM, "event loop timer");
                l->heap = nh;
                l->heap_cap = cap;
        }
        struct ev_timer *t = calloc(1, sizeof(*t));
        if (!t)
                return err_set(err, ENOMEM, "event loop timer");
        *t = (struct ev_timer){ .at = at_ms, .order = l->timer_order++, .fn = fn, .arg = arg };
        heap_set(l, l->nheap++, t);
        sift_up(l, t->idx);
        if (ret)
                *ret = t;
        return 0;
}

void evloop_timer_del(struct evloop *l, struct ev_timer *t)
{
        if (!t || t->idx == SIZE_MAX)
                return;
        heap_remove(l, t);
        free(t);
}

/* Fire the timers due now; each is out of the heap before its callback. */
static void run_timers(struct evloop *l)
{
        double now = mono_ms();
        while (l->nheap && l->heap[0]->at <= now) {
                struct ev_timer *t = l->heap[0];
                heap_remove(l, t);
                t->fn(l, t, t->arg);  /* evloop_timer_del(t) in it is a no-op */
                free(t);
        }
}

/* ---- deferred calls and hooks ---- */

int evloop_defer(struct evloop *l, ev_fn fn, void *arg, struct err **err)
{
        return calls_push(&l->deferred, fn, arg, err);
}

void evloop_defer_cancel(struct evloop *l, ev_fn fn, void *arg)
{
        for (size_t i = 0; i < l->deferred.n; i++)
                if (l->deferred.v[i].fn == fn && l->deferred.v[i].arg == arg)
                        l->deferred.v[i].fn = NULL; /* skipped: the queue may be running */
}

int evloop_hook_add(struct evloop *l, bool check, ev_fn fn, void *arg, struct err **err)
{
        return calls_push(check ? &l->check : &l->prepare, fn, arg, err);
}

void evloop_hook_remove(struct evloop *l, bool check, ev_fn fn, void *arg)
{
        struct ev_calls *c = check ? &l->check : &l->prepare;
        for (size_t i = 0; i < c->n; i++)
                if (c->v[i].fn == fn && c->v[i].arg == arg) {
                        memmove(&c->v[i], &c->v[i + 1], (c->n - i - 1) * sizeof(c->v[0]));
                        c->n--;
                        return;
                }
}

/* Run hooks by index: a hook may remove itself or add others meanwhile. */
static void run_hooks(struct evloop *l, struct ev_calls *c)
{
        for (size_t i = 0; i < c->n; i++) {
                struct ev_call k = c->v[i];
                k.fn(l, k.arg);
                if (i < c->n && (c->v[i].fn != k.fn || c->v[i].arg != k.arg))
                        i--; /* it removed itself: the next one moved here */
        }
}

static void run_deferred(struct evloop *l)
{
        /* Calls queued by these calls wait for the next turn. */
        size_t n = l->deferred.n;
        if (n == 0)
                return;
        for (size_t i = 0; i < n; i++) {
                struct ev_call k = l->deferred.v[i];
                if (k.fn)
                        k.fn(l, k.arg);
        }
        memmove(l->deferred.v, l->deferred.v + n, (l->deferred.n - n) * sizeof(l->deferred.v[0]));
        l->deferred.n -= n;
}

static int wait_ms(struct evloop *l, int max_wait_ms)
{
        for (size_t i = 0; i < l->deferred.n; i++)
                if (l->deferred.v[i].fn)
                        return 0;
        int t = max_wait_ms;
        if (l->nheap) {
                double left = ceil(l->heap[0]->at - mono_ms());
                if (left < 0)
                        left = 0;
                if (t < 0 || left < (double)t)
                        t = left > 1e9 ? 1000000000 : (int)left;
        }
        return t;
}

#define EV_BATCH 64

int evloop_run_once(struct evloop *l, int max_wait_ms, struct err **err)
{
        run_deferred(l);
        run_hooks(l, &l->prepare);
        struct epoll_event evs[EV_BATCH];
        int timeout = wait_ms(l, max_wait_ms);
        int n = epoll_wait(l->epfd, evs, EV_BATCH, timeout);
        if (n < 0) {
                if (errno == EINTR)
                        return 0;
                return err_set(err, errno, "epoll_wait");
        }
        l->dispatching = true;
        for (int i = 0; i < n; i++) {
                struct ev_io *io = evs[i].data.ptr;
                if (!io->dead)
                        io->fn(l, io, io->fd, evs[i].events, io->arg);
        }
        run_timers(l);
        run_hooks(l, &l->check);
        /* What the callbacks deferred runs in this turn too: the caller
         * sees its effect (a session that ended) before waiting again. */
        run_deferred(l);
        l->dispatching = false;
        free_dead(l);
        return 0;
}
