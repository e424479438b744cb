/* policy/policy.h — the permission policy that gates the powerful effects.
 *
 * A policy is an ordered list of rules plus a fallback decision.  Gated
 * targets are "http", "workspace:<list|read|write|delete|manifest>",
 * "tool:<name>" and "app_data:<action>"; the pure effects (log, memory,
 * template, clock, random, ...) are never checked.  The first rule whose
 * target and match_args both match decides; no match -> the fallback.
 * Built-in profiles: permissive, untrusted, supervised.  File format,
 * match_args semantics and the selection order: docs/policy.md.
 *
 * A struct policy is immutable once built: policy_check() allocates nothing,
 * never fails and may be called from several threads at once.
 */
#ifndef CHIDORI_POLICY_H
#define CHIDORI_POLICY_H

#include <stdbool.h>
#include <stddef.h>

#include "common/err.h"

struct cJSON;
struct policy;

/* Ordered by strictness, so the stricter of two is the larger. */
enum policy_decision {
        POLICY_ALLOW,  /* always_allow */
        POLICY_ASK,    /* ask_before: the server suspends for approval; the CLI refuses
                        * unless CHIDORI_POLICY_AUTO_APPROVE=1 */
        POLICY_DENY,   /* never_allow */
        POLICY_DECISION_MAX
};

#define POLICY_RULE_FALLBACK (-1)

struct policy_verdict {
        enum policy_decision decision;
        const char *reason;          /* the rule's or the fallback's reason, NULL if none;
                                      * borrowed from the policy (valid while it lives) */
        int rule_index;              /* index of the deciding rule, POLICY_RULE_FALLBACK = fallback */
        const struct policy *policy; /* which policy decided (the layer, for _layered) */
};

/* err_code() of the errors this module returns. */
enum policy_err {
        POLICY_ERR_SYNTAX = 1, /* not JSON; the message has "line L, column C" */
        POLICY_ERR_SCHEMA,     /* valid JSON, not a policy; the message starts with the JSON path */
        POLICY_ERR_LIMIT,      /* more than 1 MiB, 10,000 rules or match_args depth 32 */
        POLICY_ERR_IO,         /* the file cannot be read (errnum set) */
        POLICY_ERR_PROFILE,    /* not the name of a built-in profile */
        POLICY_ERR_USAGE,      /* --trusted together with --untrusted (exit 2) */
};

#define POLICY_FILE_MAX (1024 * 1024)
#define POLICY_RULES_MAX 10000
#define POLICY_MATCH_DEPTH_MAX 32

/* Parse a policy document (`len` bytes, need not be NUL-terminated; a NUL byte
 * inside is an error).  `origin` names the source for policy_describe(), e.g.
 * "CHIDORI_POLICY_FILE=/etc/x.json"; NULL = "policy".  On failure *ret is
 * untouched and err says what is wrong, starting with the JSON path
 * ("rules[2].decision: ...") or with "line L, column C" for bad JSON. */
int policy_parse(const char *json, size_t len, const char *origin, struct policy **ret, struct err **err);

/* Read (at most POLICY_FILE_MAX bytes) and parse `path`. */
int policy_load_file(const char *path, struct policy **ret, struct err **err);

/* Build a built-in profile: "permissive", "untrusted" or "supervised".
 * `origin` says who chose it, shown by policy_describe() and in the untrusted
 * profile's denial reason ("session policy_profile"); NULL = "profile". */
int policy_profile(const char *name, const char *origin, struct policy **ret, struct err **err);
bool policy_is_profile_name(const char *name);

enum policy_surface {
        POLICY_SURFACE_RUN,   /* chidori run: default permissive */
        POLICY_SURFACE_SERVE, /* chidori serve: default untrusted */
};

/* Everything policy_select() looks at; the caller fills it from argv and
 * getenv() (NULL or "" = unset), so tests never touch the environment. */
struct policy_sources {
        enum policy_surface surface;
        bool flag_untrusted;     /* --untrusted */
        bool flag_trusted;       /* --trusted */
        const char *env_file;    /* CHIDORI_POLICY_FILE */
        int env_file_fd;         /* > 0: env_file as opened by the monitor (the broker reads it) */
        int env_file_errno;      /* != 0: the monitor's open of env_file failed so */
        const char *env_inline;  /* CHIDORI_POLICY */
        const char *env_profile; /* CHIDORI_POLICY_PROFILE */
};

/* Choose the policy: --untrusted, then CHIDORI_POLICY_FILE, CHIDORI_POLICY,
 * CHIDORI_POLICY_PROFILE, then the surface default (--trusted makes serve's
 * default permissive, like run's).  A source that is set but bad (unreadable
 * or malformed file, malformed inline JSON, unknown profile) fails closed to
 * the untrusted profile: the call still succeeds and *ret_warning (malloc'd)
 * says what was wrong; otherwise *ret_warning is set to NULL.  Returns -1
 * only for --trusted with --untrusted (POLICY_ERR_USAGE) or out of memory. */
int policy_select(const struct policy_sources *src, struct policy **ret, char **ret_warning,
                  struct err **err);

void policy_free(struct policy *p);

/* Decide one gated call.  `target` is e.g. "http" or "tool:search"; `args`
 * is the call's argument object exactly as the effect will use it (NULL =
 * {}).  A NULL policy or target denies.  Arguments that repeat a key a rule
 * inspects are ambiguous and deny.  Fills *ret and returns its decision. */
enum policy_decision policy_check(const struct policy *p, const char *target, const struct cJSON *args,
                                  struct policy_verdict *ret);

/* Check against the server policy and a session's profile (NULL = none);
 * the stricter decision wins (never_allow > ask_before > always_allow), a
 * tie is reported as the server's verdict. */
enum policy_decision policy_check_layered(const struct policy *server, const struct policy *session,
                                          const char *target, const struct cJSON *args,
                                          struct policy_verdict *ret);

/* One line for the banner, e.g. "untrusted (--untrusted)" or
 * "custom from CHIDORI_POLICY_FILE=/etc/x.json (3 rules, default never_allow)".
 * snprintf semantics: returns the full length, truncates to `len`. */
size_t policy_describe(const struct policy *p, char *buf, size_t len);

/* "policy: `<target>` denied" plus ": <reason>" when there is one — the text
 * the agent gets as its Error and the parent prints on stderr.  Bytes of the
 * target outside printable ASCII are shown as \xNN (the agent picks tool
 * names).  snprintf semantics. */
size_t policy_denial_message(const char *target, const struct policy_verdict *v, char *buf, size_t len);

/* The CLI's refusal of an ask_before call when CHIDORI_POLICY_AUTO_APPROVE is
 * not 1 and stdin is not a terminal: "policy: `<target>` needs approval[:
 * <reason>]; nothing can approve it here (set CHIDORI_POLICY_AUTO_APPROVE=1
 * to approve such calls)". */
size_t policy_ask_message(const char *target, const struct policy_verdict *v, char *buf, size_t len);
/* The question put to whoever approves (a parked call's reason):
 * "policy: `<target>` needs approval[: <reason>]". */
size_t policy_pending_message(const char *target, const struct policy_verdict *v, char *buf, size_t len);
/* The same when the person at the terminal said no: "policy: `<target>`
 * needs approval[: <reason>]; declined at the terminal". */
size_t policy_declined_message(const char *target, const struct policy_verdict *v, char *buf, size_t len);

/* "always_allow", "ask_before", "never_allow". */
const char *policy_decision_name(enum policy_decision d);

/* "permissive", "untrusted", "supervised" or "custom". */
const char *policy_name(const struct policy *p);
size_t policy_rule_count(const struct policy *p);
enum policy_decision policy_fallback(const struct policy *p);
/* True for the untrusted profile chosen because a source was bad. */
bool policy_is_fail_closed(const struct policy *p);

#endif
