/* runtime/limits.c — the parent's limits: their values, the text the agent
 * and the operator read, and reporting a limit once per run.
 *
 * Every cap on what a worker can make this process hold or do lives in
 * struct session_limits (docs/sandbox.md, "The parent's limits").  Two are
 * flow control (the frame loop stops reading calls, nothing fails); the
 * others answer the call that would pass them with an Error whose code is
 * "ELIMIT".  Either way the first time in a run prints one "chidori: " line
 * and writes one journal note of kind "limit": never silent, never a flood.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>

#include "common/util.h"
#include "effects/template/template.h"
#include "runtime/quota.h"
#include "runtime/runtime-internal.h"

static const struct {
        const char *what;   /* "<what> limit reached" */
        const char *unit;   /* after the value: "per run" */
        const char *option;
        bool count;         /* a number, not a size */
        const char *then;   /* what happens from now on (stderr only) */
} LIMITS[LIMIT_MAX] = {
        [LIMIT_CALLS] = { "host call", "in flight", "--max-calls", true,
                          "further calls wait until one ends" },
        [LIMIT_QUEUE] = { "answer queue", "waiting for the worker to read", "--max-queue", false,
                          "further calls wait until the worker reads its answers" },
        [LIMIT_LOG] = { "log", "per run", "--max-log", false, "further log calls fail with ELIMIT" },
        [LIMIT_JOURNAL] = { "journal", "per run", "--max-journal", false,
                            "the run is stopped: it can no longer be recorded" },
        [LIMIT_VFS] = { "VFS", "per run", "--max-vfs", false, "fs calls that need more space fail with ENOSPC" },
        [LIMIT_MEMORY_STORE] = { "memory store", "per namespace", "--max-memory-store", false,
                                 "memory.set calls that need more space fail with ELIMIT" },
        [LIMIT_WORKSPACE_WRITE] = { "workspace write", "per run", "--max-workspace-write", false,
                                    "further workspace writes fail with ELIMIT" },
        [LIMIT_HTTP] = { "http", "of responses in flight", "--max-queue", false,
                         "fetches that would pass it fail with ELIMIT" },
        [LIMIT_TEMPLATE] = { "template", NULL, NULL, false, "template calls over it fail with ELIMIT" },
        [LIMIT_TIMERS] = { "timer", "pending", "--max-timers", true,
                           "further timers fail with ELIMIT until one fires or is cleared" },
};

static uint64_t or_default(uint64_t v, uint64_t def)
{
        return v ? v : def;
}

void broker_limits_init(struct broker *b)
{
        const struct session_limits *c = &b->cfg->limits;
        b->lim = (struct session_limits){
                .max_calls = or_default(c->max_calls, BROKER_DEFAULT_MAX_CALLS),
                .max_queue = or_default(c->max_queue, BROKER_DEFAULT_MAX_QUEUE),
                .max_log = or_default(c->max_log, BROKER_DEFAULT_MAX_LOG),
                .max_journal = or_default(c->max_journal, BROKER_DEFAULT_MAX_JOURNAL),
                .max_vfs = or_default(c->max_vfs, BROKER_DEFAULT_MAX_VFS),
                .max_memory_store = or_default(c->max_memory_store, BROKER_DEFAULT_MAX_MEMORY_STORE),
                .max_workspace_write = or_default(c->max_workspace_write, BROKER_DEFAULT_MAX_WORKSPACE_WRITE),
                .max_timers = or_default(c->max_timers, BROKER_DEFAULT_MAX_TIMERS),
        };
}

static uint64_t value_of(const struct broker *b, enum broker_limit k)
{
        switch (k) {
        case LIMIT_CALLS: return b->lim.max_calls;
        case LIMIT_QUEUE: return b->lim.max_queue;
        case LIMIT_LOG: return b->lim.max_log;
        case LIMIT_JOURNAL: return b->lim.max_journal;
        case LIMIT_VFS: return b->lim.max_vfs;
        case LIMIT_MEMORY_STORE: return b->lim.max_memory_store;
        case LIMIT_WORKSPACE_WRITE: return b->lim.max_workspace_write;
        case LIMIT_HTTP: return b->lim.max_queue;
        case LIMIT_TIMERS: return b->lim.max_timers;
        case LIMIT_TEMPLATE:
        case LIMIT_MAX: break;
        }
        return 0;
}

void broker_limit_text(const struct broker *b, enum broker_limit k, char *buf, size_t len)
{
        if ((unsigned)k >= LIMIT_MAX) {
                snprintf(buf, len, "limit reached");
                return;
        }
        if (k == LIMIT_TEMPLATE) {
                snprintf(buf, len,
                         "template limit reached (%u MiB of output, %u steps of work per byte of template and per "
                         "member looked into; not configurable: simplify the template or its variables)",
                         TEMPLATE_OUTPUT_MAX >> 20, TEMPLATE_WORK_PER_UNIT);
                return;
        }
        char v[48];
        uint64_t n = value_of(b, k);
        const char *noun = k == LIMIT_TIMERS ? "timer" : "call";
        if (LIMITS[k].count)
                snprintf(v, sizeof(v), "%llu %s%s", (unsigned long long)n, noun, n == 1 ? "" : "s");
        else
                format_size(n, v, sizeof(v));
        snprintf(buf, len, "%s limit reached (%s %s; raise it with %s)", LIMITS[k].what, v, LIMITS[k].unit,
                 LIMITS[k].option);
}

void broker_limit_report(struct broker *b, enum broker_limit k, const char *detail)
{
        if ((unsigned)k >= LIMIT_MAX || b->limits_reported & (1u << k))
                return;
        b->limits_reported |= 1u << k;
        char text[256], line[512];
        broker_limit_text(b, k, text, sizeof(text));
        snprintf(line, sizeof(line), "%s%s%s; %s", text, detail ? ": " : "", detail ? detail : "", LIMITS[k].then);
        /* The journal's limit ends the run, and the launcher's closing
         * message says so: one line, not two. */
        if (k != LIMIT_JOURNAL) {
                broker_sink_note(b, "chidori: ", line);
        }
        broker_journal_note(b, "limit", line);
}

int broker_limit_fail(struct broker *b, enum broker_limit k, struct err **err)
{
        char text[256];
        broker_limit_text(b, k, text, sizeof(text));
        broker_limit_report(b, k, NULL);
        return err_setc(err, BROKER_E_LIMIT, 0, "%s", text);
}

int broker_quota_fail(struct broker *b, const char *msg, struct err **err)
{
        if (!b->quota_reported) {
                b->quota_reported = true;
                char line[640];
                snprintf(line, sizeof(line), "%s; calls over it fail with EQUOTA", msg);
                broker_sink_note(b, "chidori: ", line);
                broker_journal_note(b, "quota", line);
        }
        return err_setc(err, BROKER_E_QUOTA, 0, "%s", msg);
}

int broker_quota_take(struct broker *b, enum quota_kind k, uint64_t n, struct err **err)
{
        char msg[512];
        if (!b->cfg->quota || quota_take(b->cfg->quota, k, n, msg, sizeof(msg)))
                return 0;
        return broker_quota_fail(b, msg, err);
}

void broker_quota_add(struct broker *b, enum quota_kind k, uint64_t n)
{
        if (b->cfg->quota)
                quota_add(b->cfg->quota, k, n);
}
