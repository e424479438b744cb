/* runtime/outcome.h — the one map from how a session ended to an exit code
 * and a message (ARCHITECTURE.md, "Failure mapping"), used by `run`,
 * `replay` and (later) `serve`.  It prints nothing: the CLI prints what it
 * says (cli/report.c), a server puts it in the session's JSON. */
#ifndef CHIDORI_RUNTIME_OUTCOME_H
#define CHIDORI_RUNTIME_OUTCOME_H

#include "runtime/session.h"

/* What the caller shows. */
enum outcome_show {
        OUTCOME_SHOW_VALUE,        /* the agent's value on stdout */
        OUTCOME_SHOW_AGENT_ERROR,  /* the agent's error object (o->error) */
        OUTCOME_SHOW_LIMIT,        /* message, as an Error with code ELIMIT (the agent's doing: exit 1) */
        OUTCOME_SHOW_FAILURE,      /* message: one line, it may quote the worker (escape it) */
        OUTCOME_SHOW_PAUSED,       /* not an ending: the run waits to be resumed (no CLI path pauses) */
};

struct outcome_context {
        long js_deadline_ms;       /* the engine's CPU budget, for its message */
        long cpu_secs;             /* the box's CPU-seconds limit (0 = none) */
        int stop_signal;           /* INTERRUPTED: the signal that asked (0: SIGTERM is named) */
        /* The name of a syscall number (sandbox/seccomp.c), or NULL: "#N". */
        const char *(*syscall_name)(int nr);
};

struct outcome_exit {
        int code;
        enum outcome_show show;
        char message[2048];
};

void session_outcome_exit(const struct session_outcome *o, const struct outcome_context *c, struct outcome_exit *ret);

/* The journal's name of an ending ("ok", "agent_error", ...). */
const char *session_end_name(enum session_end e);

struct cJSON;
/* The journal's end line of a run: {"type":"end", outcome (`outcome_name`,
 * or session_end_name's when NULL), exit, value, error, message,
 * wait_status, ended, stats {wall_ms, effects, peak_memory_bytes,
 * memory_limit_bytes}}.  NULL when out of memory. */
struct cJSON *session_outcome_end_line(const struct session_outcome *o, const char *outcome_name, int code);

#endif
