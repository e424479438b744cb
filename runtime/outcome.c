/* runtime/outcome.c — how a session ended -> exit code and message.  See
 * outcome.h.  The worker's wait status and the box's report (memory, pids,
 * CPU) decide the endings the frames cannot (the worker went away). */
#define _GNU_SOURCE
#include <cjson/cJSON.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/wait.h>

#include "common/exit.h"
#include "common/util.h"
#include "proto/json.h"
#include "runtime/outcome.h"

static void set(struct outcome_exit *r, int code, enum outcome_show show, const char *fmt, ...)
        __attribute__((format(printf, 4, 5)));

static void set(struct outcome_exit *r, int code, enum outcome_show show, const char *fmt, ...)
{
        r->code = code;
        r->show = show;
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(r->message, sizeof(r->message), fmt, ap);
        va_end(ap);
}

static const char *syscall_of(const struct outcome_context *c, int nr, char buf[32])
{
        const char *n = c->syscall_name && nr >= 0 ? c->syscall_name(nr) : NULL;
        if (n)
                return n;
        if (nr < 0)
                return "(unknown)";
        snprintf(buf, 32, "#%d", nr);
        return buf;
}

/* The worker went away without `done`: its wait status and the box say why. */
static void gone(const struct session_outcome *o, const struct outcome_context *c, struct outcome_exit *r)
{
        int status = o->wait_status;
        char nb[32];
        if (o->oom_killed && (WIFSIGNALED(status) || o->end == SESSION_END_EOF))
                return set(r, EXIT_OOM, OUTCOME_SHOW_FAILURE, "memory limit exceeded (limit %llu MiB)",
                           (unsigned long long)(o->memory_limit >> 20));
        if (WIFSIGNALED(status)) {
                int sig = WTERMSIG(status);
                if (sig == SIGKILL && o->pids_limit_hit)
                        return set(r, 128 + sig, OUTCOME_SHOW_FAILURE,
                                   "process limit reached (the engine could not start a thread)");
                if (sig == SIGSYS)
                        return set(r, EXIT_SECCOMP, OUTCOME_SHOW_FAILURE, "sandbox violation: blocked syscall %s",
                                   syscall_of(c, o->blocked_syscall, nb));
                if (sig == SIGXCPU || (sig == SIGKILL && c->cpu_secs > 0 && o->end == SESSION_END_EOF &&
                                       o->cpu_ms >= (double)c->cpu_secs * 950.0))
                        return set(r, EXIT_CPU, OUTCOME_SHOW_FAILURE,
                                   "CPU limit exceeded (%ld s); raise it with --cpu-secs N (0 = none)", c->cpu_secs);
                return set(r, 128 + sig, OUTCOME_SHOW_FAILURE, "engine crashed (signal %s)", signal_name(sig));
        }
        if (o->fatal_signal == SIGABRT && o->cpu_limit_abort && c->js_deadline_ms > 0)
                return set(r, EXIT_CPU, OUTCOME_SHOW_FAILURE,
                           "CPU limit exceeded (%g s); raise it with --js-deadline MS (0 = none)",
                           (double)c->js_deadline_ms / 1000.0);
        if (o->fatal_signal > 0 && o->fatal_signal < 64)
                return set(r, 128 + o->fatal_signal, OUTCOME_SHOW_FAILURE, "engine crashed (signal %s)",
                           signal_name(o->fatal_signal));
        set(r, EXIT_PROTOCOL, OUTCOME_SHOW_FAILURE, "protocol error: worker exited before %s (exit status %d)",
            o->got_ready ? "done" : "ready", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
}

void session_outcome_exit(const struct session_outcome *o, const struct outcome_context *c, struct outcome_exit *r)
{
        const char *m = o->message ? o->message : "";
        char nb[32];
        switch (o->end) {
        case SESSION_END_DONE_OK: return set(r, EXIT_OK, OUTCOME_SHOW_VALUE, "ok");
        case SESSION_END_AGENT_ERROR: return set(r, EXIT_AGENT_ERROR, OUTCOME_SHOW_AGENT_ERROR, "%s", m);
        case SESSION_END_NEVER_SETTLED:
                return set(r, EXIT_AGENT_ERROR, OUTCOME_SHOW_FAILURE,
                           "agent never settled: its promise is still pending and nothing is left to run "
                           "(no outstanding host call, no timer)");
        case SESSION_END_CPU_LIMIT:
                return set(r, EXIT_CPU, OUTCOME_SHOW_FAILURE,
                           "CPU limit exceeded (%g s); raise it with --js-deadline MS (0 = none)",
                           (double)c->js_deadline_ms / 1000.0);
        case SESSION_END_DEADLINE: return set(r, EXIT_DEADLINE, OUTCOME_SHOW_FAILURE, "%s", m);
        case SESSION_END_DIVERGED: return set(r, EXIT_AGENT_ERROR, OUTCOME_SHOW_FAILURE, "%s", m);
        case SESSION_END_PROTOCOL: return set(r, EXIT_PROTOCOL, OUTCOME_SHOW_FAILURE, "protocol error: %s", m);
        case SESSION_END_INTERRUPTED: {
                int sig = c->stop_signal ? c->stop_signal : SIGTERM;
                return set(r, 128 + sig, OUTCOME_SHOW_FAILURE, "interrupted by %s: the run was stopped",
                           signal_name(sig));
        }
        case SESSION_END_SECCOMP:
                return set(r, EXIT_SECCOMP, OUTCOME_SHOW_FAILURE, "sandbox violation: blocked syscall %s",
                           syscall_of(c, o->blocked_syscall, nb));
        case SESSION_END_LIMIT:
                return set(r, EXIT_AGENT_ERROR, OUTCOME_SHOW_LIMIT, "%s", o->message ? m : "limit reached");
        case SESSION_END_PARENT: return set(r, EXIT_PROTOCOL, OUTCOME_SHOW_FAILURE, "%s", m);
        case SESSION_END_SPAWN:
                if (o->spawn_layer)
                        return set(r, EXIT_LAYER_UNAVAILABLE, OUTCOME_SHOW_FAILURE, "%s", m);
                return set(r, EXIT_PROTOCOL, OUTCOME_SHOW_FAILURE, "start the engine worker: %s", m);
        case SESSION_END_PAUSED: return set(r, EXIT_OK, OUTCOME_SHOW_PAUSED, "%s", m);
        case SESSION_END_EXIT:
                return set(r, o->exit_code, OUTCOME_SHOW_FAILURE, "agent called process.exit(%d)", o->exit_code);
        case SESSION_END_EOF:
        case SESSION_END_MAX: break;
        }
        gone(o, c, r);
}

const char *session_end_name(enum session_end e)
{
        static const char *const n[SESSION_END_MAX] = {
                [SESSION_END_SECCOMP] = "sandbox_violation", [SESSION_END_INTERRUPTED] = "interrupted",
                [SESSION_END_DONE_OK] = "ok",                 [SESSION_END_AGENT_ERROR] = "agent_error",
                [SESSION_END_NEVER_SETTLED] = "never_settled", [SESSION_END_CPU_LIMIT] = "cpu_limit",
                [SESSION_END_PROTOCOL] = "protocol_error",    [SESSION_END_EOF] = "worker_exited",
                [SESSION_END_DEADLINE] = "deadline",          [SESSION_END_DIVERGED] = "replay_diverged",
                [SESSION_END_LIMIT] = "limit",                [SESSION_END_PARENT] = "protocol_error",
                [SESSION_END_SPAWN] = "spawn_failed",        [SESSION_END_PAUSED] = "paused",
                [SESSION_END_EXIT] = "exit",
        };
        return (unsigned)e < SESSION_END_MAX ? n[e] : "unknown";
}

cJSON *session_outcome_end_line(const struct session_outcome *o, const char *outcome_name, int code)
{
        char ts[40];
        utc_iso8601(ts, sizeof(ts));
        cJSON *e = cJSON_CreateObject();
        if (!e)
                return NULL;
        cJSON_AddStringToObject(e, "type", "end");
        cJSON_AddStringToObject(e, "outcome", outcome_name ? outcome_name : session_end_name(o->end));
        cJSON_AddNumberToObject(e, "exit", code);
        if (o->value)
                cJSON_AddItemToObject(e, "value", cJSON_Duplicate(o->value, 1));
        if (o->error)
                cJSON_AddItemToObject(e, "error", cJSON_Duplicate(o->error, 1));
        if (o->end != SESSION_END_DONE_OK && o->message)
                cJSON_AddStringToObject(e, "message", o->message);
        if (o->end == SESSION_END_EOF)
                cJSON_AddNumberToObject(e, "wait_status", o->wait_status);
        cJSON_AddStringToObject(e, "ended", ts);
        cJSON *st = cJSON_AddObjectToObject(e, "stats");
        cJSON_AddItemToObject(st, "wall_ms", json_cjson_number((double)(long)(o->wall_ms * 1000) / 1000.0));
        cJSON_AddNumberToObject(st, "effects", (double)o->effects);
        if (o->peak_bytes)
                cJSON_AddNumberToObject(st, "peak_memory_bytes", (double)o->peak_bytes);
        if (o->memory_limit)
                cJSON_AddNumberToObject(st, "memory_limit_bytes", (double)o->memory_limit);
        return e;
}
