/* effects/proc/subproc.h — child processes run asynchronously inside the broker's
 * single poll() loop: the engine behind chidori.tool (effects/proc/tools.h).
 *
 * Shape of use (the same as effects/net/http.h):
 *
 *      subproc_engine_new(&e, &err);
 *      subproc_start(e, call_id, &spec, on_done, arg, &err);  // returns at once
 *      loop {
 *              n = fixed fds; timeout = own deadline;
 *              k = subproc_fds(e, pfd + n, cap - n, &timeout);  // adds our fds, lowers timeout
 *              poll(pfd, n + k, timeout);
 *              subproc_perform(e, pfd + n, k, &err);            // may call on_done
 *      }
 *      subproc_engine_free(e);                                 // kills what is left
 *
 * Per child, what is guaranteed:
 *   - it is started with posix_spawn (vfork-like, no copy of the broker's
 *     page tables; an exec failure is reported by subproc_start itself) in a
 *     new session and process group (setsid), with every signal at its
 *     default disposition and an empty signal mask, its stdin/stdout/stderr on
 *     pipes and every other descriptor closed (closefrom(3), i.e.
 *     close_range; our own ends are O_CLOEXEC as well);
 *   - it is watched through a pidfd (pidfd_open on our own unreaped child:
 *     its pid cannot be recycled before we reap it, so signalling and
 *     reaping are race-free and no SIGCHLD handler is involved);
 *   - stdin is written as the pipe accepts it (non-blocking); a child that
 *     never reads it, or exits early, costs nothing: the rest is dropped.
 *     A write to a pipe whose reader is gone raises SIGPIPE: we block SIGPIPE
 *     in the calling thread around each write and, on EPIPE, consume the
 *     signal we caused with sigtimedwait (only if it was not already pending),
 *     so the process-wide disposition is never touched;
 *   - stdout and stderr are read as they come, up to their caps; more is
 *     read and discarded (so the child never blocks on a full pipe) and the
 *     result says truncated;
 *   - when the child exits, whatever is left in its process group (background
 *     jobs holding the pipes) is killed with SIGKILL before the child is
 *     reaped (the zombie keeps the group id from being reused), and the pipes
 *     are drained for at most SUBPROC_DRAIN_MS more;
 *   - on timeout the child and its whole process group are killed (SIGKILL
 *     through the pidfd and killpg; or SIGTERM first, see kill_grace_ms), the
 *     child is reaped, and the result says timed_out.  A descendant that left the group (setsid) is out of reach
 *     here: tools are contained by what they run under (chidori launch's
 *     box, chidori _host-tool's pid namespace), whose pid 1 takes every
 *     descendant along when it goes (docs/tools.md, "No orphans").
 * Requirement: SIGCHLD must not be ignored (SIG_IGN or SA_NOCLDWAIT would let
 * the kernel reap our children); subproc_start checks and refuses.
 * Single-threaded: call from one thread only.  Leaf code: never prints,
 * never exits.
 */
#ifndef CHIDORI_EFFECTS_PROC_SUBPROC_H
#define CHIDORI_EFFECTS_PROC_SUBPROC_H

#include <poll.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/err.h"

struct subproc_engine;

#define SUBPROC_DEFAULT_MAX_OUTPUT ((size_t)16 << 20) /* per stream, when the spec says 0 */
#define SUBPROC_DRAIN_MS 1000                         /* pipes left open after the child ended */
#define SUBPROC_DEFAULT_PATH "/usr/local/bin:/usr/bin:/bin"

/* err_code() of the errors subproc_start reports. */
enum subproc_errc {
        SUBPROC_E_OK = 0,
        SUBPROC_E_SPEC,      /* bad spec: no argv, relative argv[0] with '/', duplicate id, bad cwd */
        SUBPROC_E_NOT_FOUND, /* argv[0] not found in PATH, or not executable */
        SUBPROC_E_SPAWN,     /* pipe, posix_spawn, pidfd_open failed (errnum set) */
        SUBPROC_E_MAX
};

struct subproc_spec {
        /* NULL-terminated, argv[0] non-empty.  argv[0] is either an absolute
         * path, or a bare name (no '/') looked up, at subproc_start, in the
         * PATH of `envp` — or in SUBPROC_DEFAULT_PATH when envp has none — the
         * first regular executable file wins.  "./x" or "a/b" are refused. */
        char *const *argv;
        char *const *envp;          /* the exact environment; NULL = empty */
        const void *stdin_data;     /* copied; NULL/0 = the child reads EOF at once */
        size_t stdin_len;
        const char *cwd;            /* must be a directory; NULL = "/" */
        long timeout_ms;            /* wall clock from subproc_start; 0 = none */
        size_t max_stdout_bytes;    /* 0 = SUBPROC_DEFAULT_MAX_OUTPUT */
        size_t max_stderr_bytes;    /* 0 = SUBPROC_DEFAULT_MAX_OUTPUT */
        /* 0: stopping (timeout, cancel, engine_free) is SIGKILL to the child
         * and its group at once.  > 0: SIGTERM to the child alone first, and
         * SIGKILL to the group this many ms later if it is still there — for
         * a child that must clean up, like chidori launch (its cgroup). */
        long kill_grace_ms;
};

struct subproc_result {
        bool exited;                /* exited normally: exit_code is valid */
        int exit_code;
        int signal;                 /* killed by this signal (exited == false) */
        bool timed_out;             /* we killed it at timeout_ms (signal is then SIGKILL,
                                     * unless it ended on its own in the same instant) */
        const unsigned char *out;   /* stdout bytes, NUL-terminated (not counted) */
        size_t out_len;
        bool out_truncated;         /* more than max_stdout_bytes was written */
        const unsigned char *err;   /* stderr bytes, NUL-terminated (not counted) */
        size_t err_len;
        bool err_truncated;
        double elapsed_ms;          /* from subproc_start to the end */
};

/* Called once per started child that is not cancelled, from
 * subproc_perform.  `res` and its buffers are freed when the callback
 * returns (copy what you keep).  The callback may call subproc_start and
 * subproc_cancel, not subproc_perform or subproc_engine_free. */
typedef void (*subproc_done_fn)(void *arg, uint64_t id, const struct subproc_result *res);

int subproc_engine_new(struct subproc_engine **ret, struct err **err);

/* Stop every child, reap them — blocking until they are gone: up to the
 * longest kill_grace_ms for those that have one, then SIGKILL to every
 * group, which makes it prompt — close everything, free.  No callbacks.
 * NULL is fine. */
void subproc_engine_free(struct subproc_engine *e);

/* Start a child for the caller's `id` (unique among the running ones); `spec`
 * is copied.  Returns 0, or -1 with err (codes above) when nothing was
 * started; `done` is then never called. */
int subproc_start(struct subproc_engine *e, uint64_t id, const struct subproc_spec *spec, subproc_done_fn done,
                  void *arg, struct err **err);

/* Stop child `id` (SIGKILL to it and its group, or SIGTERM first with
 * kill_grace_ms) without calling its callback; its pipes are closed at once;
 * it is reaped now if it is already gone, else by a later subproc_perform
 * (never blocking).  False if `id` is not running. */
bool subproc_cancel(struct subproc_engine *e, uint64_t id);

/* Children started and not yet completed or cancelled. */
size_t subproc_pending(const struct subproc_engine *e);

/* The pid of running child `id`, 0 if unknown (for logs and tests). */
pid_t subproc_pid(const struct subproc_engine *e, uint64_t id);

/* Fill up to `max` pollfds with the fds we wait on (revents cleared) and
 * lower *timeout_ms (-1 = infinite) to our next deadline.  Returns how many
 * entries are needed: when that exceeds `max`, grow the array and call
 * again. */
size_t subproc_fds(struct subproc_engine *e, struct pollfd *fds, size_t max, int *timeout_ms);

/* Act on the fds subproc_fds returned (with poll's revents) and on the
 * deadlines, then complete finished children (callbacks run here).  Call it
 * after every poll() that used subproc_fds, also when poll timed out.
 * Readiness is only a hint (everything is non-blocking), so entries of a
 * child cancelled meanwhile are harmless.  fds == NULL: poll our own fds
 * without waiting.  Returns 0, or -1 with err if poll itself failed. */
int subproc_perform(struct subproc_engine *e, const struct pollfd *fds, size_t nfds, struct err **err);

/* ---- children started elsewhere (issue 10: the monitor starts a broker's
 * tools; the broker drives their stdio here, as for its own) ----
 *
 *      subproc_remote_new(e, id, &spec, kill, karg, on_done, arg, &err);  // asked, not started yet
 *      ... subproc_remote_started(e, id, fds);    // its stdin, stdout, stderr (taken)
 *      ... subproc_remote_ended(e, id, true, ws); // its wait status; then as a reaped child
 *      or  subproc_remote_forget(e, id);          // it never started: no callback
 *
 * Only spec's stdin, timeout and output caps are used.  Stopping it (its
 * timeout, subproc_cancel) calls kill(karg, false) once: the caller has it
 * killed and reports the end later; subproc_engine_free calls
 * kill(karg, true) for each one left: the engine is gone, its events must
 * not come here any more.  The result is as for a child of its own. */
typedef void (*subproc_kill_fn)(void *arg, bool engine_gone);
int subproc_remote_new(struct subproc_engine *e, uint64_t id, const struct subproc_spec *spec, subproc_kill_fn kill,
                       void *kill_arg, subproc_done_fn done, void *arg, struct err **err);
/* -1 (nothing taken) if `id` is not a remote child waiting to start. */
int subproc_remote_started(struct subproc_engine *e, uint64_t id, int fds[3]);
/* started false: it ended before its stdio came (nothing to drain). */
void subproc_remote_ended(struct subproc_engine *e, uint64_t id, bool started, int wait_status);
bool subproc_remote_forget(struct subproc_engine *e, uint64_t id);

#endif
