/* monitor/serve.h — the monitor's side of the channel (chan/chan.h): it
 * reads what the broker asks, with chan_recv() only, and answers it.
 *
 *   HELLO            -> WELCOME (first message; once)
 *   COMMIT           -> the spawn allowlist (monitor/commit.c); refused: broken broker
 *   SPAWN worker     -> a box from `boxes` (the monitor's own posture: the
 *                       worker it found, the operator's sandbox options),
 *                       the deadline the broker asks for only within the
 *                       operator's -> SPAWNED + fds, or SPAWN_FAILED
 *   SPAWN tool       -> checked against the COMMIT, then a BOX_TOOL request to
 *                       `boxes` (program, argv, env names, ro binds, "sandbox":
 *                       false, its timeout) -> SPAWNED + stdin, stdout, stderr
 *                       (or SPAWN_FAILED); its exit fd watched like a worker's
 *   SPAWN bundle     -> checked (monitor_bundle_allowed), esbuild in a box over
 *                       the agent folder (bundle_start: cli/bundlebox.c) ->
 *                       SPAWNED + stdin, stdout, stderr, metafile; its own
 *                       deadline (bundle_deadline_ms or a shorter one asked);
 *                       BOX_ENDED when it exits
 *   OPEN_AGENT_FILE  -> OPENED (+ fd) beneath agent_dirfd (monitor/agentfile.c)
 *   OPEN_AGENT       -> (agent_from_broker only, once) OPENED (+ fd) of the
 *                       journal's agent; its folder becomes the agent folder
 *   KILL {box}       -> the box killed; its BOX_ENDED follows
 *   RESULT {code}    -> every box still running killed and reaped, the broker
 *                       reaped; monitor_serve returns the code
 * and, unasked: BOX_ENDED when a box ends (on its own: its exit fd became
 * readable; deadline, seccomp notification, memory watchdog: the box
 * provider's supervisor), STOP {signal} when *stop is set (SIGINT, SIGTERM,
 * SIGHUP): the broker cancels its session and answers RESULT; one that does
 * not within grace_ms is killed.
 *
 * A broker that breaks the protocol, closes the channel or dies without a
 * RESULT: every box is killed and reaped, the broker killed and reaped, and
 * monitor_serve returns EXIT_PROTOCOL (70) with err naming what it did.
 */
#ifndef CHIDORI_MONITOR_SERVE_H
#define CHIDORI_MONITOR_SERVE_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/err.h"
#include "runtime/session.h"

/* The worker a run will ask for, started before it asks (monitor/serve.c
 * prestart): taken by the first worker SPAWN of the same posture. */
struct monitor_prestart {
        bool on;
        bool no_jit;
        long cpu_budget_ms;
        char tz[64];                       /* CHAN_TZ_MAX; "" = UTC */
};

/* chidori serve --pool N and --pool-refill-ms MS: the bounds. */
#define SERVE_POOL_MAX 64
#define SERVE_POOL_REFILL_MAX_MS 3600000L

struct monitor_serve {
        int chan;                          /* the monitor's end (not closed here) */
        /* How boxes start and end: the CLI's provider (cli/provider.c:
         * sandbox_start, its supervisor) in chidori, a fake in the tests.
         * Its `started` must give a stderr fd or -1 (then an empty pipe goes). */
        const struct box_provider *boxes;
        /* A descriptor readable once the box has exited on its own (the
         * worker's pidfd), -1 if none: the monitor then finishes the box
         * without killing it.  May be NULL. */
        int (*exit_fd)(void *provider_arg, void *handle);
        int agent_dirfd;                   /* OPEN_AGENT_FILE beneath it; -1: refused (EACCES) */
        const char *agent_dir;             /* its path, as the monitor resolved it; NULL: none yet */
        /* chidori replay without --agent: the agent is the journal's, which
         * only the broker reads; one OPEN_AGENT names it (agent_dirfd -1). */
        bool agent_from_broker;
        long deadline_ms;                  /* the operator's ceiling per box (0 = none) */
        unsigned welcome_flags;            /* CHAN_WELCOME_* */
        int broker_pidfd;                  /* the broker (killed and reaped at the end); -1: none (tests) */
        const volatile sig_atomic_t *stop; /* the signal that asked the monitor to stop, or 0; may be NULL */
        long grace_ms;                     /* after STOP, before the broker is killed (0: 2000) */
        /* chidori serve: every worker SPAWN naming no tree starts a run
         * tree of its own (one per session, any number at once; a later
         * worker may join a running one), and every stop signal (counted
         * in *stop_count) is forwarded as a STOP: the second stops at once. */
        bool many_trees;
        size_t max_trees;                  /* run trees at once (0: no limit): chidori serve's 2 x --max-running */
        const volatile sig_atomic_t *stop_count;
        struct monitor_prestart prestart;  /* .on: start the first worker ahead */
        /* chidori serve --pool N: N workers of prestart's posture kept
         * started ahead, each handed to one session (its SPAWNED says
         * CHAN_SPAWNED_POOLED), refilled pool_refill_ms after a hand-out
         * (monitor/serve.c).  Needs boxes->deadline. */
        size_t pool;
        long pool_refill_ms;
        /* The loop to serve on (the boxes' watchers may be on it already),
         * NULL: monitor_serve makes its own; and a worker started before
         * the broker (monitor_prestart_box), adopted and freed here. */
        struct evloop *loop;
        struct monitor_early *early;
        /* Bundle boxes: esbuild as the monitor found it (NULL: SPAWN of a
         * bundle fails with CHAN_SPAWN_E_NO_BUNDLER); bundle_start puts it
         * in a box over `dir` (fds: stdin write end, stdout, stderr,
         * metafile read ends; exit_fd readable once it exited);
         * bundle_finish kills it first if asked, reaps it, reports. */
        const char *esbuild;
        long bundle_deadline_ms;
        int (*bundle_start)(void *arg, const char *esbuild, char *const *argv, const char *dir, void **ret_handle,
                            int fds[4], int *ret_exit_fd, struct err **err);
        void (*bundle_finish)(void *arg, void *handle, bool kill_first, struct box_ended *ret);
        void *bundle_arg;
};

struct monitor_early;
/* Start the worker box of posture `w` now, on `loop`, before the broker
 * exists: its setup and the engine's start then overlap the broker's start.
 * 0 and *ret (give it to monitor_serve.early), or -1: none (a SPAWN starts
 * one as usual). */
int monitor_prestart_box(const struct box_provider *p, struct evloop *loop, long deadline_ms,
                         const struct monitor_prestart *w, struct monitor_early **ret);

/* Wait, at most cap_ms, until the early worker's libraries are loaded (its
 * main() runs: loaded_fd, cli_boxes_loaded_fd, hangs up), it wrote a frame
 * or it ended.  The broker is started after it: its start (a mount
 * namespace, an exec, its libraries) on the other CPU slowed the dynamic
 * loading of the engine's libraries by more than it saved (docs/bench.md,
 * decision 166).  x NULL or without a cue: returns at once. */
void monitor_early_wait_loaded(const struct box_provider *p, int (*loaded_fd)(void *, void *),
                               const struct monitor_early *x, int cap_ms);

/* Kill and forget an early box monitor_serve will not adopt (the broker
 * did not start).  NULL is fine. */
void monitor_early_discard(const struct box_provider *p, struct monitor_early *x);

/* Serve the broker until the run ends (above).  Returns the exit code:
 * RESULT's; 128 + signal when the broker did not answer STOP in time;
 * EXIT_PROTOCOL with *err set when the broker broke the protocol, closed
 * the channel or died without a RESULT. */
int monitor_serve(const struct monitor_serve *m, struct err **err);

#endif
