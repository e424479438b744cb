/* cli/report.c — every way a run can end, mapped to what the user reads
 * (ARCHITECTURE.md, "Failure mapping").  Only this file and main.c print. */
#define _GNU_SOURCE
#include <cjson/cJSON.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "common/text.h"
#include "common/util.h"
#include "proto/json.h"
#include "runtime/outcome.h"
#include "runtime/quota.h"
#include "sandbox/seccomp.h"

void report_value(const cJSON *value)
{
        if (cJSON_IsRaw(value) && value->valuestring) {
                fputs(value->valuestring, stdout);
                fputc('\n', stdout);
                return;
        }
        char *s = value ? cJSON_PrintUnformatted(value) : NULL;
        printf("%s\n", s ? s : "null");
        free(s);
}

static const char *str_member(const cJSON *o, const char *k)
{
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
        return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* Everything in the error is the agent's (name, message, file, stack): it
 * is escaped for the terminal and every line carries its prefix, so a
 * message cannot forge a `chidori:` line of ours or drive the terminal
 * (common/text.h). */
static void print_agent_error(const cJSON *e)
{
        const char *name = str_member(e, "name"), *msg = str_member(e, "message");
        const char *file = str_member(e, "file"), *stack = str_member(e, "stack");
        const cJSON *line = cJSON_GetObjectItemCaseSensitive(e, "line");
        const cJSON *col = cJSON_GetObjectItemCaseSensitive(e, "column");
        char ename[128], where[400] = "", fname[300];
        if (!name)
                name = "Error";
        text_term(name, strlen(name), ename, sizeof(ename));
        if (file && cJSON_IsNumber(line)) {
                text_term(file, strlen(file), fname, sizeof(fname));
                if (cJSON_IsNumber(col))
                        snprintf(where, sizeof(where), " (at %s:%d:%d)", fname, line->valueint, col->valueint);
                else
                        snprintf(where, sizeof(where), " (at %s:%d)", fname, line->valueint);
        }
        /* "chidori: agent error: Name: first line", then each further line of
         * the message under "chidori: agent error: ", then where it was. */
        if (!msg)
                msg = "";
        const char *nl = strchr(msg, '\n');
        size_t first = nl ? (size_t)(nl - msg) : strlen(msg);
        fprintf(stderr, "chidori: agent error: %s: ", ename);
        text_fput_lines(stderr, "", msg, first, false);
        if (nl && nl[1])
                fputc('\n', stderr), text_fput_lines(stderr, "chidori: agent error: ", nl + 1, strlen(nl + 1), false);
        fprintf(stderr, "%s\n", where);
        if (stack && *stack) {
                /* Indent the engine's stack (one frame per line). */
                const char *p = stack;
                while (*p) {
                        const char *snl = strchr(p, '\n');
                        size_t n = snl ? (size_t)(snl - p) : strlen(p);
                        if (n)
                                text_fput_line(stderr, "    at ", p, n);
                        p += n + (snl ? 1 : 0);
                }
        }
}

static void print_json(bool ok, const cJSON *value, const cJSON *error, const char *message, int code,
                       const struct session_outcome *o, const char *run_id)
{
        cJSON *j = cJSON_CreateObject();
        cJSON_AddBoolToObject(j, "ok", ok);
        if (ok) /* a raw node: the worker's JSON text, as it wrote it */
                cJSON_AddItemToObject(j, "value", value ? cJSON_Duplicate(value, 1) : cJSON_CreateNull());
        else {
                cJSON *e = error ? cJSON_Duplicate(error, 1) : cJSON_CreateObject();
                if (!cJSON_GetObjectItem(e, "message"))
                        cJSON_AddStringToObject(e, "message", message ? message : "");
                cJSON_AddItemToObject(j, "error", e);
        }
        cJSON_AddNumberToObject(j, "exit", code);
        cJSON *st = cJSON_AddObjectToObject(j, "stats");
        cJSON_AddStringToObject(st, "run_id", run_id ? run_id : "");
        cJSON_AddItemToObject(st, "wall_ms", json_cjson_number((double)(long)(o->wall_ms * 1000) / 1000.0));
        cJSON_AddNumberToObject(st, "effects", (double)o->effects);
        if (o->peak_bytes)
                cJSON_AddNumberToObject(st, "peak_memory_bytes", (double)o->peak_bytes);
        if (o->memory_limit)
                cJSON_AddNumberToObject(st, "memory_limit_bytes", (double)o->memory_limit);
        if (o->quota)
                cJSON_AddItemToObject(st, "usage", quota_usage_json(o->quota));
        char *s = cJSON_PrintUnformatted(j);
        if (s)
                printf("%s\n", s);
        free(s);
        cJSON_Delete(j);
}

static int fail(const struct session_outcome *o, bool json, const char *run_id, int code, const char *fmt, ...)
        __attribute__((format(printf, 5, 6)));

static int fail(const struct session_outcome *o, bool json, const char *run_id, int code, const char *fmt, ...)
{
        char msg[2048];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        /* The message may quote what the worker sent (a protocol error, a
         * replay divergence): one line, escaped. */
        text_fput_line(stderr, "chidori: ", msg, strlen(msg));
        if (json)
                print_json(false, NULL, NULL, msg, code, o, run_id);
        return code;
}

int report_pids_too_low(const struct session_outcome *o, bool json, const char *run_id, const char *source,
                        uint64_t pids)
{
        unsigned long long need = pids >= ENGINE_PIDS_MIN ? (unsigned long long)pids + 1 : ENGINE_PIDS_MIN;
        return fail(o, json, run_id, EXIT_USAGE, "process limit too low to start the engine (%s; at least %llu needed)",
                    source, need);
}

int report_outcome(const struct session_outcome *o, bool json, const struct outcome_context *c, const char *run_id)
{
        struct outcome_exit r;
        session_outcome_exit(o, c, &r);
        switch (r.show) {
        case OUTCOME_SHOW_VALUE:
                if (json)
                        print_json(true, o->value, NULL, NULL, r.code, o, run_id);
                else
                        report_value(o->value);
                fflush(stdout);
                return r.code;
        case OUTCOME_SHOW_AGENT_ERROR:
                print_agent_error(o->error);
                if (json)
                        print_json(false, NULL, o->error, o->message, r.code, o, run_id);
                return r.code;
        case OUTCOME_SHOW_LIMIT: {
                /* A parent limit stopped the run (the journal's): the
                 * agent's doing, so exit 1, with the limit's code. */
                fprintf(stderr, "chidori: %s\n", r.message);
                if (json) {
                        cJSON *e = cJSON_CreateObject();
                        cJSON_AddStringToObject(e, "name", "Error");
                        cJSON_AddStringToObject(e, "code", "ELIMIT");
                        cJSON_AddStringToObject(e, "message", r.message);
                        print_json(false, NULL, e, o->message, r.code, o, run_id);
                        cJSON_Delete(e);
                }
                return r.code;
        }
        case OUTCOME_SHOW_PAUSED: /* the CLI never pauses */
        case OUTCOME_SHOW_FAILURE: break;
        }
        return fail(o, json, run_id, r.code, "%s", r.message);
}

void report_usage(const struct session_outcome *o)
{
        if (!o->quota)
                return;
        char line[1024];
        quota_usage_line(o->quota, line, sizeof(line));
        fprintf(stderr, "chidori: quotas: %s\n", line);
}
