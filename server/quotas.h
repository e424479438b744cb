/* server/quotas.h — the operator's quotas and budgets (--quotas FILE,
 * CHIDORI_QUOTAS): every session's quotas, every tenant's budget over a
 * window, per-tenant overrides and the concurrent sessions of a tenant
 * (docs/serve.md, "Quotas").  JSON:
 *
 *   {"session": {NAME: N, ...},
 *    "tenant":  {NAME: N, ..., "concurrent_sessions": N},
 *    "tenants": {"TENANT": {NAME: N, ..., "concurrent_sessions": N}},
 *    "window_s": N}
 *
 * NAME one of runtime/quota.h's (effects, http_requests, egress_bytes,
 * ingress_bytes, llm_tokens, tool_calls, workspace_bytes, memory_bytes,
 * wall_ms).  A tenant in "tenants" takes "tenant"'s values, then its own.
 */
#ifndef CHIDORI_SERVER_QUOTAS_H
#define CHIDORI_SERVER_QUOTAS_H

#include <stdint.h>

#include "common/err.h"
#include "runtime/quota.h"

#define QUOTAS_MAX_FILE (1u << 20)
#define QUOTAS_MAX_TENANTS 1024
#define QUOTAS_DEFAULT_WINDOW_S 86400u

struct quotas_tenant {
        char *name;
        struct quota_limits lim;
        unsigned concurrent;      /* 0: no limit */
};

struct quotas {
        struct quota_limits session;
        struct quotas_tenant all;         /* "tenant": every tenant (name NULL) */
        struct quotas_tenant *tenants;
        size_t ntenants;
        uint64_t window_s;
};

/* Parse the JSON text; `where` names it in messages (the file).  An
 * unknown field, a bad value or a malformed file is an error naming it. */
int quotas_parse(const char *text, size_t len, const char *where, struct quotas **ret, struct err **err);
int quotas_load_file(const char *path, struct quotas **ret, struct err **err);
/* The same from a descriptor opened by the caller (not closed); `path` for messages. */
int quotas_load_fd(int fd, const char *path, struct quotas **ret, struct err **err);
void quotas_free(struct quotas *q);
/* The budget of `tenant`: its own entry, else "tenant"'s. */
const struct quotas_tenant *quotas_tenant(const struct quotas *q, const char *tenant);

#endif
