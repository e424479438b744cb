/* runtime/runtime.h — the parent side of a run: the frame loop, the dispatch
 * table of effects, the journal (record) and the replay source.
 *
 * The broker never spawns anything: the launcher hands it a connected frame
 * fd (and, for a child process, its stderr pipe and pidfd); the broker runs
 * the conversation to its end and reports what happened.  Everything the
 * worker sends is parsed here, through proto/, with limits.
 */
#ifndef CHIDORI_RUNTIME_H
#define CHIDORI_RUNTIME_H

#include <stdbool.h>
#include <signal.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/err.h"

struct cJSON;
struct memstore;
struct journal;
struct replay;
struct policy;
struct workspace;
struct ssrf_allow;
struct tools_registry;
struct llm_config;

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

struct broker_limits {
        uint64_t max_calls;           /* host calls in flight; more are not read until one ends */
        uint64_t max_queue;           /* bytes of answers queued for the worker (flow control), and
                                       * bytes of http responses in flight (ELIMIT) */
        uint64_t max_log;             /* bytes of log messages per run */
        uint64_t max_journal;         /* bytes of journal per run (replay refuses bigger ones) */
        uint64_t max_vfs;             /* the node:fs tree's charged bytes */
        uint64_t max_memory_store;    /* bytes of keys and values per memory namespace */
        uint64_t max_workspace_write; /* bytes written to the workspace per run */
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
};

struct broker_config {
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
        bool interactive;         /* stdin is a TTY: prompt there for `input` */
        struct journal *journal;  /* record here, or NULL */
        struct replay *replay;    /* serve results from here instead of performing, or NULL */
        long deadline_ms;         /* parent wall-clock deadline, 0 = none */
        double deadline_from;     /* mono_ms() it counts from (the command's start), 0 = broker_run's */
        bool quiet_logs;          /* replay: agent logs are effects, not performed */
        volatile sig_atomic_t *stop;  /* non-zero: the launcher was asked to stop (signal number) */
        struct broker_limits limits;  /* the parent's limits; zero fields take the defaults */

        /* What the run is handed (the gated effects).  The policy decides
         * every gated call; NULL denies them all. */
        const struct policy *policy;
        bool auto_approve;        /* CHIDORI_POLICY_AUTO_APPROVE=1: ask_before passes */
        struct workspace *workspace;  /* --workspace DIR, or NULL: workspace.* fail */
        const struct ssrf_allow *http_allow; /* --allow-host / CHIDORI_HTTP_ALLOW_HOSTS, or NULL */
        size_t http_max_response_bytes;      /* 0 = the http module's default (16 MiB) */
        long http_timeout_ms;                /* whole request; 0 = default */
        const struct tools_registry *tools;  /* --tools FILE, or NULL */
        const struct llm_config *llm;        /* CHIDORI_LLM_*, or NULL: prompt fails, saying so */
        const struct broker_children *children; /* tools and nested agents; NULL: neither can start */

        /* Nested agents (chidori.callAgent). */
        const char *agent_dir;               /* the agent's folder: callees must be inside */
        int agent_depth;                     /* 0 for the top-level run */
        const char *policy_layers;           /* CHIDORI_POLICY_LAYERS in force ("" or NULL = none) */
        const struct policy *const *layers;  /* those layers, stricter-wins over `policy`; NULL-terminated */
};

/* The worker's end as the launcher set it up. */
struct broker_peer {
        int frame_fd;    /* connected SOCK_STREAM socket, made non-blocking by the broker */
        int stderr_fd;   /* worker's stderr pipe (forwarded line by line), or -1 */
        int pidfd;       /* pidfd of the child (deadline kill), or -1 */
        int notify_fd;   /* seccomp user-notification listener, or -1 */
        pid_t pid;       /* child pid, or 0 for an in-process worker */
        _Atomic int *engine_stop; /* in-process: set to stop the engine's JS, or NULL */
};

enum broker_end {
        BROKER_END_DONE_OK,      /* done frame, ok: value set */
        BROKER_END_AGENT_ERROR,  /* done frame, agent threw / rejected / syntax / no entry */
        BROKER_END_NEVER_SETTLED,
        BROKER_END_CPU_LIMIT,    /* engine execution time limit */
        BROKER_END_PROTOCOL,     /* either side broke the protocol (detail in message) */
        BROKER_END_EOF,          /* worker went away without `done`: ask the wait status */
        BROKER_END_DEADLINE,     /* parent deadline elapsed; worker killed */
        BROKER_END_DIVERGED,     /* replay: the worker asked for something else */
        BROKER_END_SECCOMP,      /* a blocked syscall: blocked_syscall says which */
        BROKER_END_INTERRUPTED,  /* the launcher got SIGINT/SIGTERM/SIGHUP; worker killed */
        BROKER_END_LIMIT,        /* a parent limit that ends the run (the journal's): message says which */
        BROKER_END_MAX
};

struct broker_outcome {
        enum broker_end end;
        struct cJSON *value;     /* DONE_OK: the agent's result (owned) */
        struct cJSON *error;     /* AGENT_ERROR: {name,message,stack,file,line,column} (owned) */
        char *message;           /* human detail for the other ends (owned) */
        bool got_ready;
        int blocked_syscall;     /* syscall nr a seccomp filter stopped, or -1 */
        int fatal_signal;        /* the worker reported dying of this signal, or 0 */
        bool cpu_limit_abort;    /* ... and that it happened past its CPU budget */
        uint64_t effects;        /* host calls answered */
        double wall_ms;
        double cpu_ms;           /* the worker's CPU time (filled by the launcher after wait) */
        /* Filled by the launcher from the run's cgroup after the wait. */
        bool oom_killed;
        bool pids_limit_hit;
        uint64_t peak_bytes;     /* 0 if unknown */
        uint64_t memory_limit;   /* 0 if none */
};

/* Run the whole conversation with one worker.  Returns 0 when the outcome is
 * known (whatever it is), -1 only for a parent-side failure (err set).  The
 * broker does not close the peer's fds. */
int broker_run(const struct broker_config *cfg, const struct broker_peer *peer,
               struct broker_outcome *ret, struct err **err);

void broker_outcome_clear(struct broker_outcome *o);

#endif
