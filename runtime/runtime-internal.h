/* runtime/runtime-internal.h — what the effect families share with the
 * session engine: `struct broker` (a session as the effects see it), the
 * dispatch rows, the family hooks, the helpers handlers call. */
#ifndef CHIDORI_RUNTIME_INTERNAL_H
#define CHIDORI_RUNTIME_INTERNAL_H

#include <poll.h>
#include <stdbool.h>

#include "common/budget.h"
#include "proto/json.h"
#include "proto/proto.h"
#include "runtime/quota.h"
#include "runtime/session.h"

struct http_engine;
struct net_api;
struct ssrf_allow;
struct subproc_engine;
struct vfs;
struct timer_set;

/* A call whose answer comes later (http, tools, ...): what the journal line
 * needs when it does. */
struct pending_call {
        int64_t id;
        char *op;
        struct cJSON *args;       /* read-only tree of the args (handlers look up names in it) */
        char *args_text;          /* the args as the worker wrote them (compact): journaled verbatim */
        char *scratch;            /* a temporary file the call owns (agent.call: the nested journal);
                                   * removed if the run ends before the call does */
};

#define BROKER_AGENT_DEPTH_MAX 8

struct session;

struct broker {
        struct session *s;        /* the session this is part of */
        const struct session_config *cfg;
        struct frame_reader reader;
        int64_t last_id;          /* ids must arrive as 1, 2, 3, ... */
        uint64_t outstanding;     /* calls asked, not yet answered */
        uint64_t seq;             /* answers delivered (journal seq) */
        size_t answer_idx;        /* next --answers entry (array form) */
        size_t replay_next;       /* next journal entry to deliver */
        struct session_outcome *out;
        bool finished;
        char errbuf[64];

        /* Asynchronous effects. */
        struct http_engine *http; /* created on the first http call */
        struct pending_call *pend;
        size_t npend, pend_cap;
        struct vfs *vfs;          /* node:fs, created on the first fs.* call */
        const char *cur_op;       /* op of the call being dispatched (for family rows) */
        struct json_span cur_args; /* its args as the worker wrote them (compact), while it is dispatched */
        char *pending_scratch;    /* set by a handler returning 1: moved into its pending_call */
        struct subproc_engine *procs; /* tools and nested agents, created on first use */
        unsigned ntools, nnested; /* of them running now (--max-tools, --max-nested) */
        struct http_engine *llm_http; /* prompts: the provider only, created on first use */
        struct ssrf_allow *llm_allow;
        size_t http_split;        /* fds of b->http before those of b->llm_http */
        double deadline_at;       /* mono_ms of the parent deadline, 0 = none */
        struct budget budget;     /* the deadline and the stop flag, for long effects (common/budget.h) */
        const struct net_api *net; /* libchidori-net.so, loaded by the first http or prompt call */

        /* The parent's limits (runtime/limits.c): cfg->limits with the defaults filled in. */
        struct session_limits lim;
        unsigned limits_reported;  /* bit per enum broker_limit: stderr line and note written */
        bool quota_reported;       /* a quota refused a call: told once (broker_quota_fail) */
        uint64_t log_bytes;        /* log message bytes this run */
        uint64_t ws_written;       /* bytes written to the workspace this run */
        uint64_t http_inflight;    /* response body bytes buffered by transfers in flight */

        /* timer.wait calls pending (effects/time/timer.c); they are in pend
         * too, but --max-timers bounds them, not --max-calls. */
        struct timer_set *timers;
        uint64_t ntimers;
        double mono_origin;        /* mono_ms() when the session started: clock.mono counts from it */
};

/* ---- the parent's limits (runtime/limits.c) ---- */

enum broker_limit {
        LIMIT_CALLS,           /* flow control: calls in flight */
        LIMIT_QUEUE,           /* flow control: answers queued for the worker */
        LIMIT_LOG,
        LIMIT_JOURNAL,
        LIMIT_VFS,
        LIMIT_MEMORY_STORE,
        LIMIT_WORKSPACE_WRITE,
        LIMIT_HTTP,            /* response bodies in flight (--max-queue) */
        LIMIT_TEMPLATE,        /* output size and work budget: fixed (effects/template/template.h) */
        LIMIT_TIMERS,          /* timers pending at once (--max-timers) */
        LIMIT_MAX
};

/* err->code of a handler stopped by a parent limit: the agent's Error gets
 * code "ELIMIT" (a value no module uses for its own codes). */
#define BROKER_E_LIMIT 0x4c494d

/* err->code of a call refused by a quota (runtime/quota.h): the agent's
 * Error gets code "EQUOTA". */
#define BROKER_E_QUOTA 0x51554f
/* A quota refused a call: `msg` (quota_check's) told once per quota kind
 * to the sink and the journal (note kind "quota"), then err set with code
 * BROKER_E_QUOTA.  Returns -1. */
int broker_quota_fail(struct broker *b, const char *msg, struct err **err);
/* For a handler: take `n` of quota `k` (0 with no quota configured), or
 * fail as broker_quota_fail (-1).  n 0: refused only when it is used up. */
int broker_quota_take(struct broker *b, enum quota_kind k, uint64_t n, struct err **err);
/* Charge what only the outcome tells (bytes received, tokens): no check. */
void broker_quota_add(struct broker *b, enum quota_kind k, uint64_t n);

/* Fill b->lim from cfg->limits and the defaults. */
void broker_limits_init(struct broker *b);
/* "log limit reached (16 MiB per run; raise it with --max-log)". */
void broker_limit_text(const struct broker *b, enum broker_limit k, char *buf, size_t len);
/* The first time a limit is reached in a run: one "chidori: " line on
 * stderr and a journal note of kind "limit" (`detail` may be NULL). */
void broker_limit_report(struct broker *b, enum broker_limit k, const char *detail);
/* For a handler: report, then set err to the text with code BROKER_E_LIMIT.
 * Returns -1. */
int broker_limit_fail(struct broker *b, enum broker_limit k, struct err **err);

/* One host call handler: validate args (shape), perform, answer.
 *   0  answered: *ret_value is the result;
 *  -1  answered with an Error the agent can catch (err says why);
 *   1  pending: the handler started the effect and broker_complete() will
 *      answer call `id` later (the broker keeps op and args for the journal). */
typedef int (*effect_fn)(struct broker *b, int64_t id, const struct cJSON *args, struct cJSON **ret_value,
                         struct err **err);

/* How a gated op names its policy target. */
enum effect_gate {
        GATE_NONE,      /* pure: never checked */
        GATE_FIXED,     /* target is the `target` string */
        GATE_TOOL,      /* "tool:" + args.name */
        GATE_AGENT,     /* "agent:" + args.path, as the agent wrote it */
};

/* One row of the dispatch table: {op, family, gate, target, handler, code_name}. */
struct effect {
        const char *op;
        const char *family;       /* the folder under effects/ it lives in */
        enum effect_gate gate;
        const char *target;
        effect_fn fn;
        /* err_code() of a failed handler -> the error's `code` for the agent
         * ("not_found", "ssrf", ...); NULL = no code. */
        const char *(*code_name)(int code);
        /* Visible outside the box (http, workspace writes, tools, prompts,
         * nested agents): its intent is journaled before it is performed. */
        bool intent;
};


/* An effect family's hooks (effects/core.c, effect_families).  A family that
 * waits on fds (http transfers, tool pipes) gives them to the session
 * before every wait of the loop (fds: adds up to `max`, returns how many it
 * wants, lowers *timeout_ms) and is called after it (perform: the same fds
 * with their revents; may complete calls).  detach frees what the family
 * holds for the session.  Any hook may be NULL. */
struct effect_family {
        const char *name;
        void (*attach)(struct broker *b);   /* the session starts: set up what the family needs */
        size_t (*fds)(struct broker *b, struct pollfd *fds, size_t max, int *timeout_ms);
        int (*perform)(struct broker *b, const struct pollfd *fds, size_t n, struct err **err);
        void (*detach)(struct broker *b);
        /* Stop the effect of pending call `id` (call.cancel): the timer
         * removed, the transfer aborted.  The session answers the call. */
        void (*cancel)(struct broker *b, int64_t id);
};

/* The dispatch table and the families, handed to the session in its config
 * (effects/core.c: effects_table): the runtime calls no effect by name, so
 * effects/ depends on runtime/ and never the reverse. */
struct effect_table {
        const struct effect *(*find)(const char *op);  /* NULL if unknown */
        const struct effect_family *families;
        size_t nfamilies;
};


/* End the run with `end` (once; later calls do nothing). */
int broker_end_with(struct broker *b, enum session_end end, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Tell the sink: an agent's log text under `tag`; an operator's line. */
void broker_sink_log(struct broker *b, const char *tag, const char *msg, size_t len);
void broker_sink_note(struct broker *b, const char *tag, const char *msg);

/* chidori.input without --answers: ask the sink; the call is answered by
 * session_input.  The handler returns 1 (pending) after this. */
int broker_input_wait(struct broker *b, int64_t id, const char *prompt, struct err **err);

/* Answer pending call `id` (from a completion callback): exactly one of
 * value and error (both owned).  A parent-side failure ends the run. */
void broker_complete(struct broker *b, int64_t id, struct cJSON *value, struct cJSON *error);

/* call.cancel: stop pending call `id` of this worker (its family's cancel
 * hook; a parked call or an input wait is withdrawn) and answer it with an
 * AbortError.  False when there is no such call (finished, or never made). */
bool broker_cancel_call(struct broker *b, int64_t id);

/* The pending call `id`, or NULL. */
struct pending_call *broker_pending(struct broker *b, int64_t id);

/* An error object {name, message[, code]} for an answer. */
struct cJSON *broker_error_obj(const char *name, const char *message, const char *code);

/* The policy gate (runtime/gate.c): ALLOW (go ahead), DENY (`msg` holds
 * the text for the agent's Error, already told and journaled), PENDING (an
 * approval is needed: `reason` says why, `msg` is the error if refused). */
enum gate_answer { GATE_ANSWER_ALLOW, GATE_ANSWER_DENY, GATE_ANSWER_PENDING };
enum gate_answer broker_gate(struct broker *b, const char *target, const struct cJSON *args, const char *args_text,
                             char *msg, size_t len, char *reason, size_t reason_len);
/* The gate for a check that cannot wait (a redirect inside a transfer):
 * PENDING is refused, with the text saying approval is needed. */
bool broker_gate_now(struct broker *b, const char *target, const struct cJSON *args, char *msg, size_t len);
bool broker_gate_target(const struct effect *e, const struct cJSON *args, char *buf, size_t len);
/* The argument a GATE_TOOL / GATE_AGENT target is made of ("name", "path"). */
const char *broker_gate_arg(const struct effect *e);

/* Write a journal note line (denials, warnings); best effort. */
void broker_journal_note(struct broker *b, const char *kind, const char *message);
/* Any other non-call line (a nested run's journal); final: even when full. */
void broker_journal_line(struct broker *b, const struct cJSON *line, bool final);

/* Argument helpers for handlers. */
const char *broker_arg_str(const struct cJSON *args, const char *name);
/* The JSON text of member `name` of the current call's args, exactly as
 * the worker wrote it (compact): values the parent carries without reading
 * them (memory.set's value, a tool's args, a nested agent's input).
 * 1 found, 0 absent. */
int broker_arg_raw(const struct broker *b, const char *name, struct json_span *ret);
int broker_need_str(const struct cJSON *args, const char *op, const char *name, const char **ret,
                    struct err **err);

/* The effect families (effects/<family>/), each op a row of the dispatch
 * table in effects/core.c. */

/* effects/memory/ops.c */
void broker_memory_attach(struct broker *b);
int effect_memory_get(struct broker *b, int64_t id, const struct cJSON *args, struct cJSON **ret, struct err **err);
int effect_memory_set(struct broker *b, int64_t id, const struct cJSON *args, struct cJSON **ret, struct err **err);
int effect_memory_delete(struct broker *b, int64_t id, const struct cJSON *args, struct cJSON **ret,
                         struct err **err);
int effect_memory_list(struct broker *b, int64_t id, const struct cJSON *args, struct cJSON **ret, struct err **err);

/* effects/template/ops.c */
int effect_template(struct broker *b, int64_t id, const struct cJSON *args, struct cJSON **ret, struct err **err);

/* effects/workspace/ops.c */
int effect_workspace_list(struct broker *b, int64_t id, const struct cJSON *args, struct cJSON **ret,
                          struct err **err);
int effect_workspace_read(struct broker *b, int64_t id, const struct cJSON *args, struct cJSON **ret,
                          struct err **err);
int effect_workspace_write(struct broker *b, int64_t id, const struct cJSON *args, struct cJSON **ret,
                           struct err **err);
int effect_workspace_delete(struct broker *b, int64_t id, const struct cJSON *args, struct cJSON **ret,
                            struct err **err);
int effect_workspace_manifest(struct broker *b, int64_t id, const struct cJSON *args, struct cJSON **ret,
                              struct err **err);

/* effects/fs/ops.c */
int effect_fs(struct broker *b, int64_t id, const struct cJSON *args, struct cJSON **ret, struct err **err);
const char *effect_fs_code(int code);
void broker_fs_free(struct broker *b);

/* effects/net/fetch.c, effects/net/prompt.c */
int effect_http(struct broker *b, int64_t id, const struct cJSON *args, struct cJSON **ret, struct err **err);
int effect_http_read(struct broker *b, int64_t id, const struct cJSON *args, struct cJSON **ret, struct err **err);
int effect_http_close(struct broker *b, int64_t id, const struct cJSON *args, struct cJSON **ret, struct err **err);
int effect_prompt(struct broker *b, int64_t id, const struct cJSON *args, struct cJSON **ret, struct err **err);
const char *effect_prompt_code(int code);
/* libchidori-net.so (b->net), loaded by the first call that needs it. */
int broker_net_need(struct broker *b, struct err **err);
/* Both http engines' (fetch, prompts) fds in the loop (fetch.c): the net family's hooks. */
size_t broker_http_fds(struct broker *b, struct pollfd *fds, size_t max, int *timeout_ms);
int broker_http_perform(struct broker *b, const struct pollfd *fds, size_t n, struct err **err);
void broker_http_free(struct broker *b);

/* effects/time/timer.c: timer.wait and the time family's hooks */
int effect_timer_wait(struct broker *b, int64_t id, const struct cJSON *args, struct cJSON **ret, struct err **err);
size_t broker_timers_fds(struct broker *b, struct pollfd *fds, size_t max, int *timeout_ms);
int broker_timers_perform(struct broker *b, const struct pollfd *fds, size_t n, struct err **err);
void broker_timers_free(struct broker *b);
void broker_timers_cancel(struct broker *b, int64_t id);
void broker_http_cancel(struct broker *b, int64_t id);

/* effects/proc/tool.c, effects/proc/agent-call.c, effects/proc/proc.c */
int effect_tool(struct broker *b, int64_t id, const struct cJSON *args, struct cJSON **ret, struct err **err);
const char *effect_tool_code(int code);
int effect_agent_call(struct broker *b, int64_t id, const struct cJSON *args, struct cJSON **ret,
                      struct err **err);
const char *effect_agent_code(int code);
/* err_code() of a call refused by a per-run cap (answered with code ELIMIT). */
#define EFFECT_E_LIMIT 1000
/* The children's (tools, nested agents) fds in the loop (proc.c): the proc family's hooks. */
size_t broker_procs_fds(struct broker *b, struct pollfd *fds, size_t max, int *timeout_ms);
int broker_procs_perform(struct broker *b, const struct pollfd *fds, size_t n, struct err **err);
void broker_procs_free(struct broker *b);
void broker_procs_cancel(struct broker *b, int64_t id);

#endif
