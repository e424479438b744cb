/* engine/engine.h — the JavaScript engine worker (JavaScriptCore embedding).
 *
 * The engine runs one agent with no ambient authority: every effect the
 * agent asks for is a `call` frame to the parent (see proto/proto.h and
 * docs/protocol.md).  The same entry point serves the separate
 * `chidori-worker` process and the in-process mode, where it runs on a
 * pthread.
 */
#ifndef CHIDORI_ENGINE_H
#define CHIDORI_ENGINE_H

#include <stdbool.h>

#include "common/err.h"

/* Serve exactly one run over a connected transport: in_fd to read frames,
 * out_fd to write (may be the same fd: a SOCK_STREAM socketpair end).
 * Creates the JSC context, evaluates prelude.js (web.js on first use), sends `ready`,
 * reads `init`, runs the agent, drives promises and virtual timers until the
 * agent's promise settles (or the CPU budget runs out, or the parent breaks
 * the protocol), then sends `done`.
 *
 * Returns 0 once `done` was written, -1 on a transport error (err set: the
 * parent went away, a read or write failed, or the engine could not start).
 * The fds stay open and owned by the caller.  Never calls exit(), never
 * writes stdout.  Unless SIGPIPE is ignored, it is blocked on the calling
 * thread for the duration of the call, so a vanished parent is reported as
 * an error rather than a signal.  Callable from any thread with a stack of
 * at least 8 MiB; one run per call; each call creates and releases its own
 * context group.
 *
 * The watchdog looks at the budget and the stop flag every 50 ms of CPU;
 * that is cheap only with JSC's polling traps: a host should have
 * JSC_usePollingTraps=true in its environment before JSC initialises
 * (chidori-worker and the in-process launcher set it), else every slice
 * invalidates the running JIT code (a hot loop runs ~25% slower).
 *
 * JSC installs SIGSEGV, SIGBUS and SIGUSR1 handlers the first time a context
 * group is created and relies on them (the GC suspends threads with
 * SIGUSR1).  A host process must not replace them afterwards. */
int engine_serve(int in_fd, int out_fd, struct err **err);

/* engine_serve() for an in-process engine its parent can stop: once *stop
 * (written by another thread) is non-zero, the running JS is terminated
 * within one watchdog slice of CPU time (50 ms) and the run ends with a
 * done frame of kind "stopped".  A thread blocked reading a frame is not
 * woken by it: the parent shuts the socket down for that. */
int engine_serve_until(int in_fd, int out_fd, const _Atomic int *stop, struct err **err);

/* The worker's first act inside the box (engine/lockdown.c): if the parent
 * passed the stage-2 seccomp filter on fd 4, install a SIGSYS reporter and
 * the filter, and mark the process not dumpable.  0 when there is no fd 4
 * (seccomp disabled, or not in a box). */
int engine_lockdown(struct err **err);

/* Set by chidori-worker: _exit(0) right after the done frame is written
 * instead of tearing the context down (saves a GC per run). */
extern bool engine_exit_after_done;
/* The worker's end once its done frame is out: its descriptors closed
 * first (the parent sees the end of its output and channel at once, not
 * after the kernel has torn down the engine's memory, ~6 ms), then _exit. */
__attribute__((noreturn)) void engine_exit_done(int in_fd, int out_fd);

/* The engine's own modules evaluated in this process so far, one bit each
 * (ENGINE_MOD_*): the tests check that a run which does not touch a module
 * never evaluates it (laziness, docs/api.md). */
enum {
        ENGINE_MOD_FETCH = 1u << 0, ENGINE_MOD_CRYPTO = 1u << 1, ENGINE_MOD_FS = 1u << 2, ENGINE_MOD_PROCESS = 1u << 3,
        ENGINE_MOD_NODE = 1u << 4, ENGINE_MOD_WEB = 1u << 5, ENGINE_MOD_FORMAT = 1u << 6,
};
extern _Atomic unsigned engine_modules_loaded;

#endif
