/* broker/provider.h — the broker's box provider (runtime/session.h, struct
 * box_provider) over the monitor's channel (chan/chan.h): the session asks
 * for a box, the monitor starts it.
 *
 *   spawn   -> SPAWN {kind worker, deadline ms left} + spec blob
 *   started <- SPAWNED {box, banner} + frame socket, stderr
 *   failed  <- SPAWN_FAILED {errno, code, message}
 *   ended   <- BOX_ENDED {box, wait status, reason, ...}
 *   finish  -> KILL {box} when the box is to be killed; otherwise the
 *              monitor reaps it when it exits and BOX_ENDED follows
 *
 * The channel is one watcher on the session's loop.  STOP from the monitor
 * calls on_stop; a channel that breaks (EOF, protocol error) calls
 * on_broken, and every box not ended yet fails or ends (KILLED).  The
 * handshake (HELLO/WELCOME), COMMIT, OPEN_AGENT_FILE and RESULT are
 * synchronous calls for the broker's main, before and after the loop.
 */
#ifndef CHIDORI_BROKER_PROVIDER_H
#define CHIDORI_BROKER_PROVIDER_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "runtime/session.h"

struct evloop;
struct ev_io;
struct chan_box;
union chan_msg;
struct chan_open;

/* OPENED for an asynchronous OPEN_AGENT_FILE: the file (the callee owns
 * it), or -1 and the monitor's errno (or EPIPE: the channel broke). */
typedef void (*chan_opened_fn)(void *arg, int fd, int errnum);

struct chan_boxes {
        struct box_provider provider;      /* give this to session_new */
        int chan;                          /* the broker's end (not owned) */
        struct evloop *loop;
        struct ev_io *io;
        uint64_t next_req;
        uint64_t tree_box;                 /* the first box SPAWNED: every later SPAWN joins its run tree */
        struct chan_box *boxes;
        struct chan_open *opens;           /* OPEN_AGENT_FILE asked in the loop, not answered yet */
        struct chan_deferred *deferred;    /* messages met by a blocking wait, for the loop (oldest first) */
        void (*on_stop)(void *arg, int sig);                  /* may be NULL */
        void (*on_broken)(void *arg, const char *why);        /* may be NULL */
        void *cb_arg;
        bool broken;
        char why[512];                     /* when broken */
        char banner[1024];                 /* the last SPAWNED's banner (the Isolation: text) */
        /* What every SPAWN asks beyond the deadline (the monitor takes it
         * only when it narrows the operator's posture): */
        bool no_jit;                       /* the JIT off */
        long cpu_budget_ms;                /* the engine's CPU budget; 0: the monitor's */
        const char *tz;                    /* the box's zone (a replay's: the journal's); NULL: the monitor's */
        /* chidori serve --pool: run trees whose first worker came from the
         * monitor's warm pool (SPAWNED's CHAN_SPAWNED_POOLED), and not. */
        bool pool_on;
        uint64_t pool_hits, pool_misses;
};

/* chidori serve: one session's provider over the channel `o` serves; its
 * first worker starts a run tree of its own (the monitor's many_trees),
 * its later ones (nested agents) join it.  Free it (it forgets its boxes'
 * tree) before `o`. */
struct chan_tree {
        struct box_provider provider;      /* give this to session_new */
        struct chan_boxes *o;
        uint64_t tree_box;
};
void chan_tree_init(struct chan_tree *t, struct chan_boxes *o);
void chan_tree_free(struct chan_tree *t);

/* Watch `chan` on `loop` and fill o->provider.  Set on_stop/on_broken/cb_arg after. */
int chan_boxes_init(struct chan_boxes *o, int chan, struct evloop *loop, struct err **err);
/* Stop watching; boxes not ended are forgotten (their events never come). */
void chan_boxes_free(struct chan_boxes *o);

/* A message read by a blocking wait inside the loop (a nested callee's
 * bundle) that is not for it: handled by the loop later, in order, as if
 * it had come then.  Its descriptors are the provider's now. */
void chan_boxes_defer(struct chan_boxes *o, const union chan_msg *m, const int *fds, size_t nfds);

/* OPEN_AGENT (chidori replay without --agent): the journal's agent, an
 * absolute path; the file's descriptor, or -1 with err.  Blocking. */
int chan_boxes_open_agent(int chan, const char *abs, volatile sig_atomic_t *stop, struct err **err);

/* The signal of a STOP that came while a blocking call below waited for
 * its answer (the call failed with code CHAN_E_STOPPED), else 0. */
int chan_boxes_stop_signal(const struct err *e);

/* HELLO, then WELCOME (its flags in *ret_flags).  Blocking; before the loop. */
int chan_boxes_hello(int chan, unsigned *ret_flags, struct err **err);
/* COMMIT the spawn allowlist: the agent folder, the tools' commands, their
 * read-only binds, the env names; `flags` CHAN_COMMIT_*.  No answer. */
int chan_boxes_commit(int chan, unsigned flags, const char *agent_dir, const char *const *commands,
                      size_t n_commands, const char *const *ro_binds, size_t n_ro_binds,
                      const char *const *env_names, size_t n_env_names, struct err **err);
/* OPEN_AGENT_FILE `rel` and wait for OPENED: the fd, or -1 with err
 * carrying the monitor's errno.  Blocking; before the loop watches the
 * channel (chan_boxes_init). */
int chan_boxes_open(int chan, const char *rel, volatile sig_atomic_t *stop, struct err **err);
/* OPEN_AGENT_FILE `rel` from inside the loop (a nested agent's file):
 * `done` is called from the channel's watcher when OPENED comes.  The
 * request's id in *ret_req, for chan_boxes_open_cancel (then `done` is
 * never called and the file is closed when it comes). */
int chan_boxes_open_async(struct chan_boxes *o, const char *rel, chan_opened_fn done, void *arg, uint64_t *ret_req,
                          struct err **err);
void chan_boxes_open_cancel(struct chan_boxes *o, uint64_t req);
/* RESULT {exit code}: the last message; the monitor exits with it. */
int chan_boxes_result(int chan, int code, struct err **err);

#endif
