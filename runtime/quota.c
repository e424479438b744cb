/* runtime/quota.c — quotas and budgets (quota.h). */
#define _GNU_SOURCE
#include <cjson/cJSON.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "runtime/quota.h"

static const char *const NAMES[QUOTA_KIND_MAX] = {
        [QUOTA_EFFECTS] = "effects",
        [QUOTA_HTTP_REQUESTS] = "http_requests",
        [QUOTA_EGRESS_BYTES] = "egress_bytes",
        [QUOTA_INGRESS_BYTES] = "ingress_bytes",
        [QUOTA_LLM_TOKENS] = "llm_tokens",
        [QUOTA_TOOL_CALLS] = "tool_calls",
        [QUOTA_WORKSPACE_BYTES] = "workspace_bytes",
        [QUOTA_MEMORY_BYTES] = "memory_bytes",
        [QUOTA_WALL_MS] = "wall_ms",
};

#define QUOTA_VALUE_MAX 9007199254740992.0 /* 2^53: exact in a JSON number */

const char *quota_name(enum quota_kind k)
{
        return (unsigned)k < QUOTA_KIND_MAX ? NAMES[k] : NULL;
}

int quota_kind_of(const char *name)
{
        for (int k = 0; k < QUOTA_KIND_MAX; k++)
                if (name && strcmp(name, NAMES[k]) == 0)
                        return k;
        return -1;
}

bool quota_limits_parse(const cJSON *obj, const char *where, const char *extra, struct quota_limits *ret,
                        char *msg, size_t len)
{
        if (!cJSON_IsObject(obj)) {
                snprintf(msg, len, "%s: expected an object of quotas {\"NAME\": N}", where);
                return false;
        }
        struct quota_limits l = *ret;
        for (const cJSON *c = obj->child; c; c = c->next) {
                if (extra && strcmp(c->string, extra) == 0)
                        continue;
                int k = quota_kind_of(c->string);
                if (k < 0) {
                        char names[256] = "";
                        for (int i = 0; i < QUOTA_KIND_MAX; i++)
                                snprintf(names + strlen(names), sizeof(names) - strlen(names), "%s%s", i ? ", " : "",
                                         NAMES[i]);
                        snprintf(msg, len, "%s: unknown quota '%.64s' (expected %s%s%s)", where, c->string, names,
                                 extra ? ", " : "", extra ? extra : "");
                        return false;
                }
                if (!cJSON_IsNumber(c) || c->valuedouble < 1 || c->valuedouble > QUOTA_VALUE_MAX ||
                    c->valuedouble != (double)(uint64_t)c->valuedouble) {
                        snprintf(msg, len, "%s: quota '%s' must be an integer from 1 to 2^53", where, NAMES[k]);
                        return false;
                }
                l.v[k] = (uint64_t)c->valuedouble;
        }
        *ret = l;
        return true;
}

void quota_limits_tighten(struct quota_limits *dst, const struct quota_limits *by)
{
        for (int k = 0; k < QUOTA_KIND_MAX; k++)
                if (by->v[k] && (!dst->v[k] || by->v[k] < dst->v[k]))
                        dst->v[k] = by->v[k];
}

bool quota_check(const struct quota *q, enum quota_kind k, uint64_t n, char *msg, size_t len)
{
        for (const struct quota *p = q; p; p = p->parent) {
                uint64_t lim = p->lim.v[k], used = p->used[k];
                if (!lim || (used < lim && n <= lim - used))
                        continue;
                char need[64] = "";
                if (n > 1)
                        snprintf(need, sizeof(need), ", this call needs %llu more", (unsigned long long)n);
                snprintf(msg, len, "%s quota exceeded: %s limit %llu, used %llu%s (%s)", p->scope ? p->scope : "session",
                         NAMES[k], (unsigned long long)lim, (unsigned long long)used, need,
                         p == q ? "the session's quotas: --quotas or the session's 'quotas'"
                                : "the tenant's budget over its window: --quotas");
                return false;
        }
        return true;
}

void quota_add(struct quota *q, enum quota_kind k, uint64_t n)
{
        for (struct quota *p = q; p; p = p->parent)
                p->used[k] = p->used[k] + n < p->used[k] ? UINT64_MAX : p->used[k] + n;
}

bool quota_take(struct quota *q, enum quota_kind k, uint64_t n, char *msg, size_t len)
{
        if (!quota_check(q, k, n, msg, len))
                return false;
        quota_add(q, k, n);
        return true;
}

cJSON *quota_usage_json(const struct quota *q)
{
        cJSON *o = cJSON_CreateObject();
        for (int k = 0; o && k < QUOTA_KIND_MAX; k++) {
                cJSON *e = cJSON_AddObjectToObject(o, NAMES[k]);
                if (!e)
                        break;
                cJSON_AddNumberToObject(e, "used", (double)q->used[k]);
                if (q->lim.v[k])
                        cJSON_AddNumberToObject(e, "limit", (double)q->lim.v[k]);
                else
                        cJSON_AddNullToObject(e, "limit");
        }
        return o;
}

void quota_usage_load(struct quota *q, const cJSON *usage)
{
        for (int k = 0; k < QUOTA_KIND_MAX; k++) {
                const cJSON *e = cJSON_GetObjectItemCaseSensitive(usage, NAMES[k]);
                const cJSON *u = cJSON_GetObjectItemCaseSensitive(e, "used");
                if (cJSON_IsNumber(u) && u->valuedouble >= 0 && u->valuedouble <= QUOTA_VALUE_MAX)
                        q->used[k] = (uint64_t)u->valuedouble;
        }
}

bool quota_take_call(struct quota *q, const char *op, char *msg, size_t len)
{
        /* A log line is bounded by --max-log, and withdrawing a call must
         * always be possible: neither is an effect here. */
        if (strcmp(op, "log") == 0 || strcmp(op, "call.cancel") == 0)
                return true;
        enum quota_kind also = QUOTA_KIND_MAX;
        if (strcmp(op, "http") == 0)
                also = QUOTA_HTTP_REQUESTS;
        else if (strcmp(op, "tool") == 0)
                also = QUOTA_TOOL_CALLS;
        if (!quota_check(q, QUOTA_EFFECTS, 1, msg, len) ||
            (also != QUOTA_KIND_MAX && !quota_check(q, also, 1, msg, len)))
                return false;
        quota_add(q, QUOTA_EFFECTS, 1);
        if (also != QUOTA_KIND_MAX)
                quota_add(q, also, 1);
        return true;
}

void quota_run_setup(struct quota *q, const struct quota_limits *lim, long *deadline_ms)
{
        *q = (struct quota){ .lim = *lim, .scope = "session" };
        uint64_t wall = lim->v[QUOTA_WALL_MS];
        if (wall && (*deadline_ms <= 0 || wall < (uint64_t)*deadline_ms))
                *deadline_ms = wall > (uint64_t)LONG_MAX ? LONG_MAX : (long)wall;
}

void quota_run_end(struct quota *q, double wall_ms)
{
        quota_add(q, QUOTA_WALL_MS, wall_ms > 0 ? (uint64_t)(wall_ms + 0.5) : 0);
}

void quota_usage_line(const struct quota *q, char *buf, size_t len)
{
        size_t n = 0;
        if (len)
                buf[0] = '\0';
        for (int k = 0; k < QUOTA_KIND_MAX && n < len; k++) {
                if (!q->lim.v[k])
                        continue;
                int w = snprintf(buf + n, len - n, "%s%s %llu/%llu", n ? ", " : "", NAMES[k],
                                 (unsigned long long)q->used[k], (unsigned long long)q->lim.v[k]);
                if (w < 0)
                        break;
                n += (size_t)w;
        }
}
