/* runtime/session.h — a run as an object: the session engine.
 *
 * A session is one conversation with one worker, driven by an event loop
 * (runtime/evloop.h) that several sessions may share.  Everything the run
 * needs comes in `struct session_config`; what it has to say goes to a
 * `struct session_sink` (the CLI prints it, a server records and streams
 * it); the box it talks to comes from a `struct box_provider` (the CLI's
 * sandbox in this process, an in-process engine thread, a scripted fake in
 * tests).  No file-level mutable state: many sessions per process.
 *
 *      session_new(loop, &cfg, &sink, &boxes, &s, &err);
 *      session_start(s, &err);
 *      while (session_state(s) != SESSION_ENDED)
 *              evloop_run_once(loop, -1, &err);
 *      ... session_outcome(s) ...
 *      session_free(s);
 *
 * Everything the worker sends is parsed here, through proto/, with limits.
 */
#ifndef CHIDORI_RUNTIME_SESSION_H
#define CHIDORI_RUNTIME_SESSION_H

#include <stdbool.h>
#include <signal.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/err.h"
#include "runtime/journal.h"

struct cJSON;
struct evloop;
struct memstore;
struct policy;
struct workspace;
struct ssrf_allow;
struct secrets;
struct tools_registry;
struct llm_config;
struct effect_table;
struct box_provider;
struct quota;

/* The parent's own limits: what a worker can make this process hold or do
 * (docs/sandbox.md, "The parent's limits").  The launcher fills every field
 * (its options start from these defaults); a zero field takes the default. */
#define BROKER_DEFAULT_MAX_CALLS 1024u
#define BROKER_DEFAULT_MAX_QUEUE ((uint64_t)64 << 20)
#define BROKER_DEFAULT_MAX_LOG ((uint64_t)16 << 20)
#define BROKER_DEFAULT_MAX_JOURNAL ((uint64_t)1 << 30)
#define BROKER_DEFAULT_MAX_VFS ((uint64_t)64 << 20)
#define BROKER_DEFAULT_MAX_MEMORY_STORE ((uint64_t)64 << 20)
#define BROKER_DEFAULT_MAX_WORKSPACE_WRITE ((uint64_t)1 << 30)
#define BROKER_DEFAULT_MAX_TIMERS 10000u

struct session_limits {
        uint64_t max_calls;           /* host calls in flight; more are not read until one ends */
        uint64_t max_queue;           /* bytes of answers queued for the worker (flow control), and
                                       * bytes of http responses in flight (ELIMIT) */
        uint64_t max_log;             /* bytes of log messages per run */
        uint64_t max_journal;         /* bytes of journal per run (replay refuses bigger ones) */
        uint64_t max_vfs;             /* the node:fs tree's charged bytes */
        uint64_t max_memory_store;    /* bytes of keys and values per memory namespace */
        uint64_t max_workspace_write; /* bytes written to the workspace per run */
        uint64_t max_timers;          /* timers pending at once (timer.wait); not counted in max_calls */
};

/* How this run starts its children — callAgent's nested runs and tools —
 * resolved once by the launcher when the run starts (cli/grants.c):
 * every path absolute (a relative one taken from the operator's working
 * directory), the environment built explicitly.  Nothing here is resolved
 * again against anything the agent controls, and every child starts in
 * `cwd`, never in the agent's folder.  Handed to whoever spawns: the broker
 * today, the privileged monitor of issue 10 later. */
struct broker_children {
        const char *self_exe;        /* this chidori, absolute */
        char *const *run_argv;       /* "<self> run --quiet --json <the caller's options>" */
        char *const *run_envp;       /* a nested run's environment, before the per-call entries */
        char *const *launch_opts;    /* `chidori launch` options of boxed tools: the operator's posture */
        char *const *tool_env;       /* "NAME=value" the tools' env lists may name, as at start */
        const char *cwd;             /* every child's working directory: "/" */
        unsigned max_nested;         /* nested agents running at once (--max-nested) */
        unsigned max_tools;          /* tool processes running at once (--max-tools) */
        /* The run's cgroup budget: a place for child `id` below the run's
         * cgroup node.  *ret_env: one "NAME=value" entry (malloc'd) for the
         * child's environment — the child moves itself there first thing
         * (sandbox/child.c) — or NULL when the run has no cgroup.  release
         * removes the place, killing whatever is left in it.  place NULL: no
         * budget to share. */
        int (*place)(void *arg, uint64_t id, char **ret_env, struct err **err);
        void (*release)(void *arg, uint64_t id);
        void *place_arg;
        /* Where tools start instead of as subprocesses of this process:
         * the broker's channel to the monitor (broker/config.c fills it; a
         * BOX_TOOL request, the child's stdio back in box_started).  NULL:
         * effects/proc/subproc.c starts them here (the one-process run). */
        const struct box_provider *tool_boxes;
};

/* Nested agents run by the embedder in this process (the broker of issue
 * 10: a session of its own on the same loop, its worker a box asked of the
 * monitor), instead of `chidori run` again through `children`.  The
 * handler (effects/proc/agent-call.c) checks the options, the depth and
 * the cap; `start` finds the callee (`path` as the agent wrote it,
 * relative to the caller's folder) and answers call `id` of `caller` later
 * with broker_complete, or fails now (0 started, -1 err set: the call's
 * Error).  `stop`: the caller is going away; no call of its may be answered
 * any more (its nested runs are cancelled). */
struct broker;
struct session_nested {
        int (*start)(void *arg, struct broker *caller, int64_t id, const char *path, const char *layer,
                     const char *input_json, struct err **err);
        void (*stop)(void *arg, struct broker *caller);
        /* call.cancel of call `id`: that nested run ends now, unanswered
         * (the session answers the call).  May be NULL. */
        void (*cancel)(void *arg, struct broker *caller, int64_t id);
        unsigned max_nested;      /* nested agents running at once per run (--max-nested) */
        void *arg;
};

/* How a session runs: live (perform every effect), replay (answer every
 * call from a journal, perform nothing), or resume (answer the journal's
 * calls from it, then perform live; a call the journal started and never
 * answered gets the error "interrupted by server restart").  A resumed
 * session continues the journal it reads: cfg.journal gets the new lines
 * only (the interrupted calls' answers and what is performed live). */
enum session_mode {
        SESSION_LIVE,
        SESSION_REPLAY,
        SESSION_RESUME,
};

struct session_config {
        const char *script;       /* source handed to the worker (bundled if needed) */
        const char *filename;     /* shown in stack traces: the agent's base name */
        bool esm;                 /* script is an ES-module bundle (init "esm": strict, top-level await) */
        const struct cJSON *input;
        const struct cJSON *env;  /* process.env: {NAME: value} (--env), or NULL: none */
        const char *run_id;
        long js_deadline_ms;      /* engine CPU-time limit, 0 = none */
        struct memstore *mem;     /* may be NULL when replaying */
        const char *mem_ns;       /* memory namespace of this agent */
        const struct cJSON *answers; /* --answers FILE contents: array or object, or NULL */
        bool can_input;           /* the sink can answer input (session_input); else input() fails */
        bool can_approve;         /* the sink can answer approvals (session_approve); else ask_before refuses */
        struct session_journal journal; /* record here (ops NULL: nothing recorded) */
        enum session_mode mode;
        struct session_replay replay; /* REPLAY, RESUME: the journal read back (runtime/journal.h) */
        long deadline_ms;         /* parent wall-clock deadline, 0 = none */
        double deadline_from;     /* mono_ms() it counts from (the command's start), 0 = session_start's */
        bool quiet_logs;          /* replay: agent logs are effects, not performed */
        /* --virtual-time: the worker's timers never wait (a virtual clock,
         * decision 6); else they are timer.wait calls answered when due.
         * Replay uses what the journal header says the run used. */
        bool virtual_time;
        /* Set (to a signal number) by the embedder from anywhere, a signal
         * handler included: long effects stop early, the owner then calls
         * session_cancel.  NULL: none. */
        volatile sig_atomic_t *stop;
        struct session_limits limits; /* the parent's limits; zero fields take the defaults */
        /* Quotas and budgets (runtime/quota.h), checked and charged as calls
         * are performed; NULL: none.  The embedder's: it reads the use. */
        struct quota *quota;
        /* The effects: the dispatch table and the families (effects/core.c,
         * effects_table).  Required. */
        const struct effect_table *effects;

        /* What the run is handed (the gated effects).  The policy decides
         * every gated call; NULL denies them all. */
        const struct policy *policy;
        bool auto_approve;        /* CHIDORI_POLICY_AUTO_APPROVE=1: ask_before passes */
        struct workspace *workspace;  /* --workspace DIR, or NULL: workspace.* fail */
        const struct ssrf_allow *http_allow; /* --allow-host / CHIDORI_HTTP_ALLOW_HOSTS, or NULL */
        size_t http_max_response_bytes;      /* 0 = the http module's default (16 MiB) */
        long http_timeout_ms;                /* whole request; 0 = default */
        /* --secrets FILE (effects/net/secrets.h): the values fetch puts in
         * place of {{secret:NAME}} for their hosts; NULL: none declared.
         * Nested agents (callAgent) are not handed them. */
        const struct secrets *secrets;
        const struct tools_registry *tools;  /* --tools FILE, or NULL */
        const struct llm_config *llm;        /* CHIDORI_LLM_*, or NULL: prompt fails, saying so */
        const struct broker_children *children; /* tools and nested agents; NULL: neither can start */
        const struct session_nested *nested; /* nested agents in this process; NULL: through children */

        /* Nested agents (chidori.callAgent). */
        const char *agent_dir;               /* the agent's folder: callees must be inside */
        int agent_depth;                     /* 0 for the top-level run */
        const char *policy_layers;           /* CHIDORI_POLICY_LAYERS in force ("" or NULL = none) */
        const struct policy *const *layers;  /* those layers, stricter-wins over `policy`; NULL-terminated */
};

enum session_end {
        SESSION_END_DONE_OK,      /* done frame, ok: value set */
        SESSION_END_AGENT_ERROR,  /* done frame, agent threw / rejected / syntax / no entry */
        SESSION_END_NEVER_SETTLED,
        SESSION_END_CPU_LIMIT,    /* engine execution time limit */
        SESSION_END_PROTOCOL,     /* either side broke the protocol (detail in message) */
        SESSION_END_EOF,          /* worker went away without `done`: ask the wait status */
        SESSION_END_DEADLINE,     /* parent deadline elapsed; worker killed */
        SESSION_END_DIVERGED,     /* replay: the worker asked for something else */
        SESSION_END_SECCOMP,      /* a blocked syscall: blocked_syscall says which */
        SESSION_END_INTERRUPTED,  /* session_cancel (the CLI: SIGINT/SIGTERM/SIGHUP); worker killed */
        SESSION_END_LIMIT,        /* a parent limit that ends the run (the journal's): message says which */
        SESSION_END_PARENT,       /* a failure of the parent itself (message says which) */
        SESSION_END_SPAWN,        /* the box could not start (message; spawn_layer: a layer missing) */
        SESSION_END_EXIT,         /* the agent called process.exit(n), n from 1 to 255: exit_code */
        SESSION_END_PAUSED,       /* session_pause: the box is gone, the journal resumes it (RESUME) */
        SESSION_END_MAX
};

struct session_outcome {
        enum session_end end;
        struct cJSON *value;     /* DONE_OK: the agent's result (owned) */
        struct cJSON *error;     /* AGENT_ERROR: {name,message,stack,file,line,column} (owned) */
        char *message;           /* human detail for the other ends (owned) */
        bool got_ready;
        int blocked_syscall;     /* syscall nr a seccomp filter stopped, or -1 */
        int exit_code;           /* EXIT: the code the agent gave process.exit */
        int fatal_signal;        /* the worker reported dying of this signal, or 0 */
        bool cpu_limit_abort;    /* ... and that it happened past its CPU budget */
        bool spawn_layer;        /* SPAWN: a required sandbox layer is unavailable */
        uint64_t effects;        /* host calls answered */
        double wall_ms;
        /* From the box's end (struct box_ended). */
        int wait_status;         /* the worker's wait status (0 in-process) */
        double cpu_ms;           /* the worker's CPU time */
        bool oom_killed;
        bool pids_limit_hit;
        uint64_t peak_bytes;     /* 0 if unknown */
        uint64_t memory_limit;   /* 0 if none */
        const struct quota *quota; /* the config's quota (its use, for the run's report), or NULL */
};

void session_outcome_clear(struct session_outcome *o);

/* ---- the box: struct box_provider ----
 * The session asks for a box and gets its fds through a callback; the
 * supervisor (deadline, seccomp notification, memory watchdog, kill) lives
 * behind the provider, which reports the box's end once, with why. */

enum box_kind {
        BOX_WORKER,
        BOX_TOOL,                 /* a command from --tools (issue 10: the monitor starts it) */
};

struct box_request {
        enum box_kind kind;
        const char *run_id;
        double deadline_at;       /* mono_ms(): the provider kills the box then (reason DEADLINE); 0 = none */
        /* Less than the provider's own posture, asked for over the channel
         * (monitor/serve.c; a request can only narrow): */
        bool no_jit;              /* the JIT off (the broker's policy is not permissive) */
        long cpu_budget_ms;       /* the engine's CPU budget, if shorter than the provider's; 0 = its own */
        const char *tz;           /* the box's time zone (a replay's is the journal's); NULL = the provider's */
        /* BOX_WORKER: keep a descriptor that hangs up once the worker's
         * libraries are loaded (its main() runs): the CLI provider's
         * cli_boxes_loaded_fd, for monitor_early_wait_loaded. */
        bool loaded_cue;
        /* BOX_WORKER: a box of chidori serve's warm pool (monitor/serve.c):
         * the worker calls itself chidori-pooled until its init frame comes
         * (CHIDORI_POOLED in its environment), so a paused session's "no
         * worker runs" stays checkable.  Its deadline is armed when it is
         * handed out (box_provider.deadline). */
        bool pooled;

        /* BOX_TOOL (the provider checks it against what the operator
         * declared: monitor/commit.c): */
        char *const *argv;        /* argv[0] the program, absolute; NULL-terminated */
        char *const *env_names;   /* variables it gets, with the provider's values; NULL-terminated or NULL */
        char *const *ro_binds;    /* host paths bound read-only into its box; NULL-terminated or NULL */
        bool host;                /* "sandbox": false: no box (never as root) */
        long timeout_ms;          /* the tool's timeout (the box's deadline) */
        /* The provider's handle of a running box whose run tree this one
         * joins (a nested agent's worker: its cgroup node goes below that
         * box's, whose --memory/--pids bound both); NULL = a tree of its own. */
        void *tree;
};

enum box_end_reason {
        BOX_EXITED,               /* it ended on its own (or after kill for a session end) */
        BOX_DEADLINE,             /* the request's deadline passed: killed */
        BOX_SECCOMP,              /* the stage-1 filter stopped a syscall (nr): killed */
        BOX_OOM,
        BOX_PIDS,
        BOX_KILLED,               /* killed through box_provider.kill */
};

struct box_ended {
        enum box_end_reason reason;
        int syscall_nr;           /* BOX_SECCOMP */
        int wait_status;          /* 0 in-process */
        double cpu_ms;
        bool oom_killed, pids_limit_hit;
        uint64_t peak_bytes, memory_limit;
};

struct box_started {
        int frame_fd;             /* connected SOCK_STREAM socket: the session's from now (it closes it); tool: -1 */
        int stderr_fd;            /* the worker's stderr, or -1: the session's from now */
        const char *banner;       /* the Isolation: line's text */
        int stdin_fd, stdout_fd;  /* BOX_TOOL: its stdin's write end, stdout's read end (and stderr_fd) */
};

struct box_events {
        /* Exactly one of started and failed, then (after started) ended once. */
        void (*started)(void *arg, const struct box_started *b);
        void (*failed)(void *arg, const struct err *e, bool layer_unavailable);
        void (*ended)(void *arg, const struct box_ended *e);
        void *arg;
};

struct box_provider {
        /* Start a box; events come through `ev` (started may be called
         * before spawn returns).  *ret_handle identifies it.  -1: nothing
         * started and no event will come (err set). */
        int (*spawn)(void *arg, struct evloop *loop, const struct box_request *req, const struct box_events *ev,
                     void **ret_handle, struct err **err);
        /* The session is done with the box: kill it if `kill_first` (the
         * run ended otherwise than by `done`), reap it, report `ended` (if
         * not already).  The handle is freed after `ended`. */
        void (*finish)(void *arg, void *handle, bool kill_first);
        /* (Re)arm a running box's deadline: killed at deadline_at (mono_ms(),
         * reason DEADLINE), 0 = none.  May be NULL (then boxes of the warm
         * pool are not offered). */
        int (*deadline)(void *arg, void *handle, double deadline_at, struct err **err);
        void *arg;
};

/* ---- the events sink ----
 * What a session has to tell: the CLI prints it (escaped) and prompts on a
 * terminal; a server records and streams it.  Every callback may be NULL.
 * Texts are the agent's or the worker's: the sink escapes what it prints. */

enum session_state {
        SESSION_NEW,
        SESSION_STARTING,         /* the box is being started */
        SESSION_RUNNING,
        SESSION_AWAITING,         /* an approval or an input is asked and not answered */
        SESSION_FINISHING,        /* the outcome is known; the box is being ended */
        SESSION_ENDED,
};

struct session_approval {
        uint64_t id;              /* approval id: the call's id */
        const char *target;       /* policy target ("http", "tool:x") */
        const char *args;         /* the call's args as the worker wrote them (compact JSON) */
        const char *reason;       /* why approval is needed (the policy's text) */
};

struct session;

struct session_sink {
        /* The agent's log line (`tag` "[agent] " or "[agent:warn] ", or a
         * nested run's "[agent:<path>] "), its bytes as written. */
        void (*log)(void *arg, struct session *s, const char *tag, const char *msg, size_t len);
        /* A "chidori: ..." line for the operator (a denial, a limit, a
         * worker's stderr line with tag "[worker] "). */
        void (*note)(void *arg, struct session *s, const char *tag, const char *msg, size_t len);
        /* A call was decided: op, and "allow" | "deny" | "pending" |
         * "replayed" (never args or bodies); "cancelled" when call.cancel
         * withdrew it (a parked approval, an input wait) or stopped it. */
        void (*call)(void *arg, struct session *s, int64_t id, const char *op, const char *decision);
        /* A parked call needs an answer: session_approve later (or now). */
        void (*approval)(void *arg, struct session *s, const struct session_approval *a);
        /* chidori.input(prompt): session_input / session_input_fail later (or now). */
        void (*input_request)(void *arg, struct session *s, uint64_t id, const char *prompt);
        void (*status)(void *arg, struct session *s, enum session_state st);
        /* The session has ended: session_outcome(s) is final. */
        void (*ended)(void *arg, struct session *s);
        void *arg;
};

/* ---- the session ---- */

/* cfg, sink and boxes must outlive the session. */
int session_new(struct evloop *loop, const struct session_config *cfg, const struct session_sink *sink,
                const struct box_provider *boxes, struct session **ret, struct err **err);
/* Ask for the box; the rest happens in the loop's callbacks. */
int session_start(struct session *s, struct err **err);
/* Answer approval `id` (the id of struct session_approval): allow performs
 * the call, deny answers it with the EPOLICY error.  `who` goes in the
 * journal.  The decision is remembered for the same (target, args).
 * -1 when no such approval is waiting. */
int session_approve(struct session *s, uint64_t id, bool allow, const char *who, struct err **err);
/* Answer the oldest input request with JSON text (the answer value). */
int session_input(struct session *s, const char *json, size_t len, struct err **err);
/* Answer it with an Error for the agent instead (the terminal closed...). */
int session_input_fail(struct session *s, const char *message, struct err **err);
/* End the run now (SESSION_END_INTERRUPTED, `reason` the message); the box is killed. */
void session_cancel(struct session *s, const char *reason);
/* Pause (the server's "pause is the worker exiting"): read no further call;
 * once the effects in flight have finished and are journaled (parked calls
 * and input waits are not in flight), end with SESSION_END_PAUSED and kill
 * the box.  session_pending_approval still names what was being asked; a
 * new session in RESUME mode over the journal continues the run. */
int session_pause(struct session *s, struct err **err);
enum session_state session_state(const struct session *s);
/* The outcome (final once the state is SESSION_ENDED). */
struct session_outcome *session_outcome(struct session *s);
/* The approval waiting for an answer, or NULL. */
const struct session_approval *session_pending_approval(const struct session *s);
void session_free(struct session *s);

#endif
