/* launcher/launcher.h — the CLI side: options, spawning the worker, mapping
 * every way a run can end to a message and an exit code. */
#ifndef CHIDORI_LAUNCHER_H
#define CHIDORI_LAUNCHER_H

#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <sys/types.h>

#include "broker/broker.h"
#include "common/err.h"
#include "launcher/options.h"

#define CHIDORI_VERSION "0.1.0"

/* Exit codes (ARCHITECTURE.md, failure mapping). */
enum {
        EXIT_OK = 0,
        EXIT_AGENT_ERROR = 1,
        EXIT_USAGE = 2,
        EXIT_PROTOCOL = 70,
        EXIT_LAYER_UNAVAILABLE = 78,
        EXIT_DEADLINE = 124,
        EXIT_OOM = 137,
        EXIT_CPU = 152,
        EXIT_SECCOMP = 159,
};

/* ---- main.c ---- */
/* The signal (SIGINT, SIGTERM, SIGHUP) that asked this launcher to stop, or
 * 0.  Waits poll it on EINTR, end the box, clean up, then exit 128+sig. */
extern volatile sig_atomic_t launcher_stop_signal;

/* ---- spawn.c ---- */
struct engine_thread;
struct worker {
        pid_t pid;         /* 0 for in-process */
        int pidfd;         /* -1 if none */
        int frame_fd;      /* parent's end of the socketpair */
        int stderr_fd;     /* read end of the worker's stderr, -1 in-process */
        bool in_process;
        struct engine_thread *et; /* in-process: what the engine thread shares (heap: it may
                                   * outlive this struct if the thread has to be abandoned) */
        pthread_t thread;
        int notify_fd;     /* seccomp listener, -1 if none */
        struct sandbox_run sr;
        bool have_sr;
};

struct spawn_opts {
        bool in_process;
        const char *worker_path; /* resolved path of chidori-worker */
        const char *run_id;
        const struct sandbox_opts *sandbox;
        char banner[1024];       /* out: the Isolation: line's text */
};

/* Start a worker.  On success *ret owns fds and the child/thread. */
int spawn_worker(struct spawn_opts *o, struct worker *ret, struct err **err);
/* Wait for the worker to end; *ret_status is a waitpid status (0 in-process).
 * Kills it first when kill_first is set (in-process: sets the engine's stop
 * flag).  Closes the worker's fds.  An in-process engine that does not stop
 * within a second (JS the watchdog cannot reach) is left running, with a
 * note on stderr: the CLI exits right after. */
int worker_finish(struct worker *w, bool kill_first, int *ret_status, struct sandbox_usage *ret_usage,
                  double *ret_cpu_ms, struct err **err);
/* In-process: the flag that stops the engine's JS (for the broker), else NULL. */
_Atomic int *worker_stop_flag(struct worker *w);
/* Find chidori-worker: $CHIDORI_WORKER, next to this binary, libexec. */
int find_worker(char **ret_path, struct err **err);

/* ---- agent.c ---- */
struct agent {
        char *path;        /* as given */
        char *abspath;     /* canonical */
        char *filename;    /* base name, for stack traces */
        char *source;      /* original bytes */
        size_t source_len;
        char *script;      /* what the worker runs (bundled when needed) */
        char sha256[65];   /* of the original bytes */
};
/* Load and, for ES modules / TypeScript, bundle with esbuild.  On a bundling
 * error, code 1 and the message carries esbuild's diagnosis (syntax errors as
 * file:line:col). */
int agent_load(const char *path, struct agent *ret, struct err **err);
void agent_free(struct agent *a);
enum { AGENT_E_NOT_FOUND = 1, AGENT_E_BUNDLE, AGENT_E_IMPORT, AGENT_E_NO_ESBUILD };

/* ---- report.c ---- */
/* Print the outcome (stdout for the value, stderr for failures) and return
 * the exit code.  status: the worker's wait status. */
int report_outcome(const struct broker_outcome *o, int status, bool json, long js_deadline_ms, long cpu_secs,
                   const char *run_id);
/* "SIGSEGV" for 11 (static buffer). */
const char *report_signame(int sig);
/* Exit code for a spawn failure (78 for a missing required layer). */
int spawn_exit_code(const struct err *e);

/* ---- commands ---- */
int cmd_run(int argc, char **argv);
int cmd_replay(int argc, char **argv);

#endif
