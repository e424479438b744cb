/* runtime/families.c — the effect families' fds in the session's loop.
 *
 * Before every wait (a prepare hook) each family with an `fds` hook says
 * which fds it waits on and for how long (effects/core.c, effects_table:
 * http transfers, tool and nested-agent pipes); they become watchers of the
 * loop.  After the wait (a check hook) each family's `perform` gets its fds
 * back with what happened to them.  The session knows no family by name;
 * a family with nothing in flight gives no fds and costs no system call.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "runtime/evloop.h"
#include "runtime/session-internal.h"

static void on_fd(struct evloop *loop, struct ev_io *io, int fd, uint32_t revents, void *arg)
{
        (void)loop, (void)fd;
        struct session *s = arg;
        for (size_t i = 0; i < s->fam.nio; i++)
                if (s->fam.io[i] == io)
                        s->fam.io_rev[i] |= revents;
}

static void on_timeout(struct evloop *loop, struct ev_timer *t, void *arg)
{
        (void)loop;
        struct session *s = arg;
        if (s->fam.timer == t)
                s->fam.timer = NULL;
}

static void drop_watchers(struct session *s)
{
        for (size_t i = 0; i < s->fam.nio; i++)
                evloop_io_del(s->loop, s->fam.io[i]);
        s->fam.nio = 0;
        evloop_timer_del(s->loop, s->fam.timer);
        s->fam.timer = NULL;
}

static int grow(void **p, size_t *cap, size_t need, size_t size)
{
        if (need <= *cap)
                return 0;
        size_t c = *cap ? *cap : 16;
        while (c < need)
                c *= 2;
        void *np = realloc(*p, c * size);
        if (!np)
                return -1;
        *p = np;
        *cap = c;
        return 0;
}

/* Ask every family for its fds (again while the array was too small). */
static int collect(struct session *s, int *timeout)
{
        const struct effect_table *fx = s->cfg->effects;
        struct family_fds *f = &s->fam;
        if (!f->start) {
                f->start = calloc(fx->nfamilies, sizeof(*f->start));
                f->count = calloc(fx->nfamilies, sizeof(*f->count));
                if (!f->start || !f->count)
                        return -1;
        }
        /* Never a NULL array: a family may do pointer arithmetic on it. */
        if (!f->pfd && grow((void **)&f->pfd, &f->cap, 16, sizeof(*f->pfd)) < 0)
                return -1;
        for (;;) {
                size_t n = 0;
                *timeout = -1;
                for (size_t k = 0; k < fx->nfamilies; k++) {
                        f->start[k] = n;
                        f->count[k] = 0;
                        if (!fx->families[k].fds)
                                continue;
                        size_t room = n <= f->cap ? f->cap - n : 0;
                        f->count[k] = fx->families[k].fds(&s->b, f->pfd + (room ? n : 0), room, timeout);
                        n += f->count[k];
                }
                if (n <= f->cap) {
                        f->n = n;
                        return 0;
                }
                if (grow((void **)&f->pfd, &f->cap, n, sizeof(*f->pfd)) < 0)
                        return -1;
        }
}

/* One watcher per distinct fd, for the union of the events asked. */
static int watch(struct session *s, struct err **err)
{
        struct family_fds *f = &s->fam;
        for (size_t i = 0; i < f->n; i++) {
                int fd = f->pfd[i].fd;
                uint32_t ev = (f->pfd[i].events & POLLIN ? EPOLLIN : 0) | (f->pfd[i].events & POLLOUT ? EPOLLOUT : 0);
                if (fd < 0)
                        continue;
                size_t j = 0;
                while (j < f->nio && f->io_fd[j] != fd)
                        j++;
                if (j < f->nio) {
                        if (evloop_io_set(s->loop, f->io[j], evloop_io_events(f->io[j]) | ev, err) < 0)
                                return -1;
                        continue;
                }
                if (grow((void **)&f->io, &f->io_cap, f->nio + 1, sizeof(*f->io)) < 0 ||
                    !(f->io_fd = realloc(f->io_fd, f->io_cap * sizeof(*f->io_fd))) ||
                    !(f->io_rev = realloc(f->io_rev, f->io_cap * sizeof(*f->io_rev))))
                        return err_set(err, ENOMEM, "watch the effects' fds");
                if (evloop_io_add(s->loop, fd, ev, on_fd, s, &f->io[j], err) < 0)
                        return -1;
                f->io_fd[j] = fd;
                f->io_rev[j] = 0;
                f->nio++;
        }
        return 0;
}

void session_families_prepare(struct session *s)
{
        drop_watchers(s);
        if (s->b.finished)
                return;
        int timeout = -1;
        struct err *e = NULL;
        if (collect(s, &timeout) < 0) {
                err_set(&e, ENOMEM, "watch the effects' fds");
                session_fail(s, e);
                return;
        }
        if (watch(s, &e) < 0 ||
            (timeout >= 0 && evloop_timer_add(s->loop, mono_ms() + timeout, on_timeout, s, &s->fam.timer, &e) < 0)) {
                session_fail(s, e);
                return;
        }
}

void session_families_check(struct session *s)
{
        const struct effect_table *fx = s->cfg->effects;
        struct family_fds *f = &s->fam;
        if (s->b.finished)
                return;
        for (size_t i = 0; i < f->n; i++) {
                f->pfd[i].revents = 0;
                for (size_t j = 0; j < f->nio; j++)
                        if (f->io_fd[j] == f->pfd[i].fd) {
                                uint32_t r = f->io_rev[j];
                                f->pfd[i].revents = (short)((r & EPOLLIN ? POLLIN : 0) | (r & EPOLLOUT ? POLLOUT : 0) |
                                                            (r & EPOLLHUP ? POLLHUP : 0) | (r & EPOLLERR ? POLLERR : 0));
                        }
        }
        for (size_t k = 0; k < fx->nfamilies; k++) {
                if (!fx->families[k].perform)
                        continue;
                struct err *e = NULL;
                const struct pollfd *p = f->count && f->count[k] ? f->pfd + f->start[k] : NULL;
                if (fx->families[k].perform(&s->b, p, p ? f->count[k] : 0, &e) < 0) {
                        session_fail(s, e);
                        return;
                }
                if (s->b.finished)
                        return;
        }
}

void session_families_free(struct session *s)
{
        const struct effect_table *fx = s->cfg->effects;
        drop_watchers(s);
        for (size_t k = 0; k < fx->nfamilies; k++)
                if (fx->families[k].detach)
                        fx->families[k].detach(&s->b);
        free(s->fam.pfd);
        free(s->fam.start);
        free(s->fam.count);
        free(s->fam.io);
        free(s->fam.io_fd);
        free(s->fam.io_rev);
        memset(&s->fam, 0, sizeof(s->fam));
}
