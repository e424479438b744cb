/* runtime/quota.h — quotas and budgets: what a session (and its tenant)
 * may use through the parent, counted in one place.
 *
 * A `struct quota` holds a limit (0: none) and a use per kind.  The
 * session engine checks and charges it at dispatch (runtime/answer.c:
 * effects, http requests, tool invocations); the effect families report
 * what only they know (bytes sent and received, the provider's tokens,
 * workspace and memory-store bytes) through quota_take / quota_add.  A
 * quota may have a parent (the tenant's budget): a take must fit both and
 * charges both.  Refused: the agent's Error has code "EQUOTA" and a
 * message naming the quota, the limit and the use (docs/serve.md,
 * "Quotas").
 */
#ifndef CHIDORI_RUNTIME_QUOTA_H
#define CHIDORI_RUNTIME_QUOTA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct cJSON;

enum quota_kind {
        QUOTA_EFFECTS,          /* host calls performed (but log and call.cancel) */
        QUOTA_HTTP_REQUESTS,    /* fetch calls */
        QUOTA_EGRESS_BYTES,     /* bytes sent by fetch (URL, headers, body) */
        QUOTA_INGRESS_BYTES,    /* bytes of response bodies received by fetch */
        QUOTA_LLM_TOKENS,       /* total_tokens of the provider's usage figures */
        QUOTA_TOOL_CALLS,       /* tool invocations */
        QUOTA_WORKSPACE_BYTES,  /* bytes written to the workspace */
        QUOTA_MEMORY_BYTES,     /* bytes of memory.set keys and values */
        QUOTA_WALL_MS,          /* wall time: ends the session (a deadline) */
        QUOTA_KIND_MAX
};

struct quota_limits {
        uint64_t v[QUOTA_KIND_MAX]; /* 0: no limit */
};

struct quota {
        struct quota_limits lim;
        uint64_t used[QUOTA_KIND_MAX];
        struct quota *parent;   /* the tenant's budget, or NULL */
        const char *scope;      /* "session" or "tenant" (messages) */
};

/* "effects", "http_requests", ... (the JSON names); NULL past the end. */
const char *quota_name(enum quota_kind k);
/* The kind named `name`, or -1. */
int quota_kind_of(const char *name);

/* An object {NAME: N, ...} (N an integer from 1 to 2^53) into *ret
 * (fields it does not name are left as they are); false with `msg` (naming
 * `where` and the field) on an unknown name or a bad value.  `extra`: one
 * more name allowed (left for the caller), or NULL. */
bool quota_limits_parse(const struct cJSON *obj, const char *where, const char *extra, struct quota_limits *ret,
                        char *msg, size_t len);
/* Stricter wins: each limit of `dst` lowered to `by`'s where `by` sets one. */
void quota_limits_tighten(struct quota_limits *dst, const struct quota_limits *by);

/* Can `n` more of `k` be used (this quota and its parent)?  If not, `msg`
 * names the quota, its limit and the use. */
bool quota_check(const struct quota *q, enum quota_kind k, uint64_t n, char *msg, size_t len);
/* Charge `n` of `k` (and to the parent): no check. */
void quota_add(struct quota *q, enum quota_kind k, uint64_t n);
/* quota_check, then quota_add when it fits. */
bool quota_take(struct quota *q, enum quota_kind k, uint64_t n, char *msg, size_t len);

/* A host call `op` about to be performed: one effect, and one http request
 * (op "http") or tool invocation (op "tool"); all of them or none.  "log"
 * (bounded by --max-log) and "call.cancel" are not counted. */
bool quota_take_call(struct quota *q, const char *op, char *msg, size_t len);

/* A run's quotas (chidori run --quotas: the file's per-session part):
 * `lim`, no parent; its wall_ms (if set) lowers *deadline_ms (0: none). */
void quota_run_setup(struct quota *q, const struct quota_limits *lim, long *deadline_ms);
/* The run has ended after wall_ms: its wall time charged. */
void quota_run_end(struct quota *q, double wall_ms);
/* "NAME used/limit, ..." of the kinds with a limit (the run's report). */
void quota_usage_line(const struct quota *q, char *buf, size_t len);

/* {"NAME": {"used": N, "limit": N|null}, ...} of every kind. */
struct cJSON *quota_usage_json(const struct quota *q);
/* Set the uses from such an object (a resumed session's earlier runs). */
void quota_usage_load(struct quota *q, const struct cJSON *usage);

#endif
