/* cli/cli.h — the CLI side: options, spawning the worker, mapping
 * every way a run can end to a message and an exit code. */
#ifndef CHIDORI_CLI_H
#define CHIDORI_CLI_H

#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <sys/types.h>

#include "common/err.h"
#include "common/exit.h"
#include "runtime/session.h"
#include "sandbox/sandbox.h"

#define CHIDORI_VERSION "0.1.0"

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
        const struct worker_inproc *inproc; /* in-process: how it stops */
        struct engine_thread *et; /* in-process: what the engine thread shares (heap: it may
                                   * outlive this struct if the thread has to be abandoned) */
        pthread_t thread;
        int notify_fd;     /* seccomp listener, -1 if none */
        int loaded_fd;     /* the loader cue's read end (spawn_opts.loaded_cue), -1 if none */
        struct sandbox_run sr;
        bool have_sr;
};

/* The engine's CPU budget by default, and under a policy that is not
 * permissive (cli/run.c resolve_cpu_budget; the broker's config.c the same). */
#define CLI_JS_BUDGET_DEFAULT_MS 60000L
#define CLI_JS_BUDGET_UNTRUSTED_MS 10000L

/* The engine in a thread of this process (cli/inproc.c). */
struct worker_inproc {
        int (*start)(struct worker *w, struct err **err);
        void (*finish)(struct worker *w, bool kill_first);
};
extern const struct worker_inproc worker_inproc;

struct spawn_opts {
        const struct worker_inproc *in_process; /* &worker_inproc: --no-isolate; NULL: a box */
        const char *worker_path; /* resolved path of chidori-worker */
        const char *run_id;
        const struct sandbox_opts *sandbox;
        /* A pipe whose write end is the worker's fd 5: it hangs up once the
         * worker's main() runs (its libraries are loaded); struct worker's
         * loaded_fd is the read end. */
        bool loaded_cue;
        char banner[1024];       /* out: the Isolation: line's text */
};

/* Start a worker.  On success *ret owns fds and the child/thread. */
int spawn_worker(struct spawn_opts *o, struct worker *ret, struct err **err);
/* Wait for the worker to end; *ret_status is a waitpid status (0 in-process).
 * Kills it first when kill_first is set (in-process: sets the engine's stop
 * flag).  Closes the worker's fds.  An in-process engine that does not stop
 * within a second (JS the watchdog cannot reach) is left running, with a
 * note on stderr: the CLI exits right after.  The box's cgroup leaf (its
 * counters read) is handed over in *ret_cg (sandbox_finish_keep_cgroup), for
 * cgroup_run_destroy after the end is reported; NULL: none. */
int worker_finish(struct worker *w, bool kill_first, int *ret_status, struct sandbox_usage *ret_usage,
                  double *ret_cpu_ms, struct cgroup_run **ret_cg, struct err **err);
/* In-process: the flag that stops the engine's JS (for the broker), else NULL. */
_Atomic int *worker_stop_flag(struct worker *w);
/* Find chidori-worker: $CHIDORI_WORKER, next to this binary, libexec. */
int find_worker(char **ret_path, struct err **err);

/* ---- toolbox.c: tools the monitor starts for the broker (SPAWN kind tool) ---- */
struct cgroup_run;
struct cli_tool;
struct cli_tools {
        bool enabled;                        /* false: tools refused */
        const struct sandbox_opts *sandbox;  /* the operator's posture (--require-sandbox, --cgroup-parent) */
        bool host_ok;                        /* "sandbox": false may run, as host_uid:host_gid (never 0) */
        uid_t host_uid;
        gid_t host_gid;
        struct cgroup_run *run_cg;           /* the run's cgroup (its worker's), or NULL */
        uint64_t next_place;                 /* call-<n> places made so far */
};
/* Start the tool of a BOX_TOOL request: fds[0] its stdin's write end,
 * fds[1], fds[2] its stdout's and stderr's read ends (close-on-exec). */
int cli_tool_start(struct cli_tools *c, const struct box_request *req, struct cli_tool **ret, int fds[3],
                   struct err **err);
/* Readable once it has exited. */
int cli_tool_pidfd(const struct cli_tool *t);
/* Kill it and its session first if asked, reap it (blocking: it has exited
 * or was killed), remove its cgroup place, free it. */
void cli_tool_end(struct cli_tool *t, bool kill_first, int *ret_status);

/* ---- provider.c: the box provider of `run` and `replay` ---- */
struct grants;
struct cli_box;
struct cli_boxes {
        struct box_provider provider;
        struct spawn_opts *spawn;   /* how to start the worker; its banner is filled in */
        struct grants *grants;      /* told the run's cgroup (nested runs and tools go below it) */
        void (*set_cgroup)(struct grants *g, struct cgroup_run *cg); /* grants_set_cgroup, or NULL */
        struct cli_tools tools;     /* BOX_TOOL requests (the monitor's; not enabled: refused) */
        struct cli_box *live_tools; /* tools running: ended before the worker's cgroup goes */
        unsigned nboxes;            /* boxes started: the second and later get run ids of their own */
};
/* Without grants: chidori-monitor (monitor/main.c) links no cli/grants.c. */
void cli_boxes_setup(struct cli_boxes *o, struct spawn_opts *so);
void grants_set_cgroup(struct grants *g, struct cgroup_run *cg);
static inline void cli_boxes_init(struct cli_boxes *o, struct spawn_opts *so, struct grants *grants)
{
        cli_boxes_setup(o, so);
        o->grants = grants;
        o->set_cgroup = grants ? grants_set_cgroup : NULL;
}
/* The box's pidfd (readable once the worker has exited), -1 in-process: the
 * monitor's channel server watches it (monitor/serve.h).  grants may be NULL. */
int cli_boxes_exit_fd(void *arg, void *handle);
/* The worker's loader cue (spawn_opts.loaded_cue): readable (hung up) once
 * its main() runs, or once it ended; -1 if it has none. */
int cli_boxes_loaded_fd(void *arg, void *handle);

/* ---- sink.c: the CLI's events sink ---- */
struct cli_sink {
        struct session_sink sink;
        bool json;                  /* --json: the value is printed with the outcome, not early */
        double deadline_at;         /* mono_ms: a question on the terminal ends then (0 = none) */
        volatile sig_atomic_t *stop;
        bool printed_value;         /* the value was printed when the outcome was known */
        void (*running)(void *arg);  /* the box has started (the banner), or NULL */
        void *running_arg;
        bool started;
        int tty_fd;                 /* the terminal to ask on (the broker's, from the monitor); -1: /dev/tty */
};
void cli_sink_init(struct cli_sink *o, bool json, double deadline_at, volatile sig_atomic_t *stop);

/* ---- agent.c ---- */
struct agent {
        char *path;        /* as given */
        char *abspath;     /* canonical; NULL for an agent read from stdin */
        char *filename;    /* base name, for stack traces */
        char *source;      /* original bytes */
        size_t source_len;
        char *script;      /* what the worker runs (bundled when needed) */
        char sha256[65];   /* of the original bytes */
        bool esm;          /* script is an ES-module bundle: strict, may use top-level await */
        struct sourcemap *map;  /* the bundle's source map, or NULL */
        char *map_warning; /* why there is no map for a bundle, or NULL */
};
/* Load and, for ES modules / TypeScript, bundle with esbuild (in its box:
 * cli/bundlebox.c, cli/bundle.c).  On a bundling
 * error, code 1 and the message carries esbuild's diagnosis (syntax errors as
 * file:line:col). */
int agent_load(const char *path, struct agent *ret, struct err **err);
/* The same for an agent read from stdin (`chidori run -`): path "-",
 * filename `name` (stack traces, and .ts/.mjs select bundling), abspath
 * NULL.  A bundled stdin agent can import no file of its own. */
int agent_load_stdin(const char *name, struct agent *ret, struct err **err);
/* esbuild: $CHIDORI_ESBUILD, the build tree's tools/, beside the binary or in
 * its libexec directory (common/dlib.h), then $PATH.  malloc'd, or NULL. */
char *agent_find_esbuild(void);
void agent_free(struct agent *a);
enum { AGENT_E_NOT_FOUND = 1, AGENT_E_BUNDLE, AGENT_E_IMPORT, AGENT_E_NO_ESBUILD };

/* ---- sourcemap.c ---- */
/* A source map (revision 3) of a bundle, with its sources made relative to
 * the agent's directory (sources outside it are chidori's own and map to
 * nothing). */
struct sourcemap;
struct cJSON;
/* Parse the map's JSON text; map_dir is where the map's relative source
 * paths start (the bundle's directory).  *ret is freed with sourcemap_free. */
int sourcemap_parse(const char *json, const char *map_dir, const char *agent_dir, struct sourcemap **ret,
                    struct err **err);
void sourcemap_free(struct sourcemap *m);
struct sourcemap_pos {
        unsigned line, col;            /* in: 1-based position in the bundle */
        int src;                       /* out: index of the source, -1 if unmapped */
        unsigned orig_line, orig_col;  /* out: 1-based position in that source */
        long best_col;                 /* internal */
};
/* Map n positions in one pass over the mappings.  Fails only on a malformed map. */
int sourcemap_lookup(const struct sourcemap *m, struct sourcemap_pos *pos, size_t n, struct err **err);
/* The source's path relative to the agent's directory; NULL for chidori's
 * own generated code or an index out of range. */
const char *sourcemap_source(const struct sourcemap *m, int index);
/* Rewrite a done frame's error {stack, file, line, column}: frames and the
 * position in the bundle named `bundle` become the agent's own files and
 * lines; frames in generated code are dropped. */
int sourcemap_map_error(const struct sourcemap *m, const char *bundle, struct cJSON *error, struct err **err);
/* One base64 VLQ value at *p (advanced past it); -1 if malformed or over 31 bits. */
int sourcemap_vlq(const char **p, long *ret);
/* Lexically join and normalise: "/a/b" + "../c/./d" -> "/a/c/d" (malloc'd). */
char *sourcemap_join(const char *base, const char *rel);

/* ---- report.c ---- */
/* Print the outcome (stdout for the value, stderr for failures) and return
 * the exit code (runtime/outcome.c maps it). */
struct outcome_context;
int report_outcome(const struct session_outcome *o, bool json, const struct outcome_context *c, const char *run_id);
/* A run with --quotas: "chidori: quotas: NAME used/limit, ..." on stderr
 * (--json has them as stats.usage). */
void report_usage(const struct session_outcome *o);
/* The agent's result and a newline on stdout: the worker's own JSON text
 * (a raw node) as it is, without a copy. */
void report_value(const struct cJSON *value);
/* Exit code for a spawn failure (78 for a missing required layer). */
int spawn_exit_code(const struct err *e);
/* The worker died before `ready` and the cgroup's pids limit was hit:
 * "process limit too low to start the engine (<source>; at least M
 * needed)", exit 2 (a configuration the user chose).  source: where the
 * limit came from, e.g. "--pids 5" or "CHIDORI_PIDS_MAX=5". */
int report_pids_too_low(const struct session_outcome *o, bool json, const char *run_id, const char *source,
                        uint64_t pids);

/* The fewest tasks (pids.max) the engine worker can run with: its main
 * thread, the worker's helper thread, JavaScriptCore's heap helper and two
 * JIT compiler threads, measured with the JIT on, on 2 CPUs.  JSC sizes its
 * pools by the CPU count, so a larger host may need more: a worker that
 * still fails to start says so (report_pids_too_low). */
#define ENGINE_PIDS_MIN 7

/* ---- commands ---- */
int cmd_run(int argc, char **argv);
int cmd_replay(int argc, char **argv);
int cmd_memory(int argc, char **argv);
int cmd_launch(int argc, char **argv);
/* chidori-launch (a link to chidori): `chidori launch`, its --help naming chidori-launch. */
int cmd_launch_wrapper(int argc, char **argv);
int cmd_doctor(int argc, char **argv);
int cmd_serve(int argc, char **argv);
/* "run-" and 16 hex digits (run.c): a run's id, its cgroup leaf's suffix. */
void make_run_id(char out[40]);
/* CHIDORI_RUN_BROKER (run.c): 0 the one-process parent (*off), 1 or unset
 * the broker; -1 for another value (printed). */
int cli_broker_switch(bool *off);

/* ---- memory.c ---- */
/* --state-dir DIR: DIR exists, or its parent does (DIR itself is then
 * created by the store); else prints the error naming the missing parent
 * and returns -1. */
int state_dir_check(const char *dir);

#endif
