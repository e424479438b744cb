/* runtime/evloop.h — one event loop: epoll fd watchers, monotonic timers
 * (a min-heap), deferred callbacks, and prepare/check hooks run around
 * every wait.  It names no effect and no session: several sessions (and
 * their effect families) register with one loop.
 *
 * Shape of use:
 *
 *      evloop_new(&loop, &err);
 *      evloop_io_add(loop, fd, EPOLLIN, on_readable, arg, &io, &err);
 *      evloop_timer_add(loop, mono_ms() + 1000, on_timer, arg, &t, &err);
 *      while (!done)
 *              evloop_run_once(loop, 100, &err);
 *      evloop_free(loop);
 *
 * Callbacks run on the loop's thread, one at a time; any of them may add or
 * remove watchers, timers and deferred calls (a watcher removed while its
 * event is waiting in the same batch is not called).  Single-threaded.
 */
#ifndef CHIDORI_RUNTIME_EVLOOP_H
#define CHIDORI_RUNTIME_EVLOOP_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/epoll.h>

#include "common/err.h"

struct evloop;
struct ev_io;
struct ev_timer;

typedef void (*ev_io_fn)(struct evloop *loop, struct ev_io *io, int fd, uint32_t revents, void *arg);
typedef void (*ev_timer_fn)(struct evloop *loop, struct ev_timer *t, void *arg);
typedef void (*ev_fn)(struct evloop *loop, void *arg);

int evloop_new(struct evloop **ret, struct err **err);
/* Frees what is still registered (callbacks are not called).  NULL ok. */
void evloop_free(struct evloop *loop);

/* Watch fd for `events` (EPOLLIN, EPOLLOUT; EPOLLHUP/EPOLLERR are always
 * reported), level-triggered.  The fd is not owned. */
int evloop_io_add(struct evloop *loop, int fd, uint32_t events, ev_io_fn fn, void *arg, struct ev_io **ret,
                  struct err **err);
/* Change the events watched (0: none but HUP/ERR).  No system call when unchanged. */
int evloop_io_set(struct evloop *loop, struct ev_io *io, uint32_t events, struct err **err);
uint32_t evloop_io_events(const struct ev_io *io);
/* Stop watching (before the fd is closed).  NULL ok. */
void evloop_io_del(struct evloop *loop, struct ev_io *io);

/* Call fn once at mono_ms() `at_ms` or later. */
int evloop_timer_add(struct evloop *loop, double at_ms, ev_timer_fn fn, void *arg, struct ev_timer **ret,
                     struct err **err);
/* Cancel a timer that has not fired (NULL ok; a fired timer is already gone:
 * do not pass it). */
void evloop_timer_del(struct evloop *loop, struct ev_timer *t);

/* Call fn at the start of the next turn (before waiting), in order. */
int evloop_defer(struct evloop *loop, ev_fn fn, void *arg, struct err **err);
/* Drop the queued calls of fn with arg (before arg is freed). */
void evloop_defer_cancel(struct evloop *loop, ev_fn fn, void *arg);

/* Hooks around every wait: prepare runs before it (a family adds its fds,
 * a session sets the events it wants), check after the ready callbacks.
 * remove takes the same fn and arg. */
int evloop_hook_add(struct evloop *loop, bool check, ev_fn fn, void *arg, struct err **err);
void evloop_hook_remove(struct evloop *loop, bool check, ev_fn fn, void *arg);

/* One turn: deferred calls, prepare hooks, wait (at most max_wait_ms, -1 =
 * until something happens; 0 when deferred calls are queued), the ready
 * watchers' and due timers' callbacks, check hooks, the calls they deferred.  Returns 0, or -1 when
 * epoll fails (EINTR is not a failure: the turn ends early). */
int evloop_run_once(struct evloop *loop, int max_wait_ms, struct err **err);

#endif
