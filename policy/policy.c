/* policy/policy.c — parse, select and evaluate permission policies.
 *
 * Contract in policy/policy.h, user-facing rules in docs/policy.md.  A parsed
 * policy keeps its cJSON tree; rules borrow their strings and match_args
 * patterns from it, so a policy is one tree plus one array.  Everything is
 * validated at load time so that policy_check() cannot fail: it walks the
 * rules, allocates nothing, and a surprise in the call's arguments (a
 * repeated key) denies rather than guesses.
 */
#define _GNU_SOURCE
#include "policy/policy.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cleanup.h"
#include "common/text.h"
#include "proto/json.h"
#include "common/util.h"

struct rule {
        const char *target;  /* "*" or an exact target */
        enum policy_decision decision;
        const cJSON *match;  /* match_args pattern (an object), NULL = any args */
        const char *reason;  /* NULL = none */
};

/* How a policy came to be; picks the banner text and the untrusted reason. */
enum origin_kind {
        ORIGIN_TEXT,            /* policy_profile()/policy_parse() caller's text */
        ORIGIN_FLAG_UNTRUSTED,
        ORIGIN_FLAG_TRUSTED,
        ORIGIN_RUN_DEFAULT,
        ORIGIN_SERVE_DEFAULT,
        ORIGIN_ENV_PROFILE,
        ORIGIN_FAIL_CLOSED,
};

struct policy {
        const char *name;           /* "permissive", "untrusted", "supervised", "custom" */
        const struct rule *rules;   /* owned_rules or a static profile table */
        struct rule *owned_rules;
        size_t n_rules;
        enum policy_decision fallback;
        char *fallback_reason;      /* NULL = none */
        char *origin;               /* banner text, already sanitized */
        char *ignored;              /* "CHIDORI_POLICY ignored" or NULL */
        bool fail_closed;
        cJSON *doc;                 /* parse tree the rules borrow from */
};

static const char *const decision_names[POLICY_DECISION_MAX] = {
        [POLICY_ALLOW] = "always_allow",
        [POLICY_ASK] = "ask_before",
        [POLICY_DENY] = "never_allow",
};

/* The workspace actions.  Left out on purpose: nothing else exists; an
 * unknown action in a file is an error so a typo cannot silently not match. */
static const char *const workspace_actions[] = { "list", "read", "write", "delete", "manifest" };

/* untrusted and supervised share this allow-list: read-only introspection of
 * the sanitized workspace root.  Left out: workspace:write/delete (mutation),
 * http (egress), tool:*, agent:*, secret:* (the operator's credentials)
 * and app_data:* (unknown powers). */
static const struct rule readonly_rules[] = {
        { "workspace:list", POLICY_ALLOW, NULL, NULL },
        { "workspace:read", POLICY_ALLOW, NULL, NULL },
        { "workspace:manifest", POLICY_ALLOW, NULL, NULL },
};

#define READONLY_TEXT "workspace:list, workspace:read and workspace:manifest"
#define AMBIGUOUS_REASON "the call's arguments repeat a key that a policy rule inspects"

const char *policy_decision_name(enum policy_decision d)
{
        return (unsigned)d < POLICY_DECISION_MAX ? decision_names[d] : "?";
}

static bool parse_decision(const char *s, enum policy_decision *ret)
{
        for (int d = 0; d < POLICY_DECISION_MAX; d++)
                if (strcmp(s, decision_names[d]) == 0) {
                        *ret = (enum policy_decision)d;
                        return true;
                }
        return false;
}


/* ---- building ---- */

void policy_free(struct policy *p)
{
        if (!p)
                return;
        free(p->owned_rules);
        free(p->fallback_reason);
        free(p->origin);
        free(p->ignored);
        cJSON_Delete(p->doc);
        free(p);
}

static struct policy *policy_new(const char *name, const char *origin)
{
        struct policy *p = calloc(1, sizeof(*p));
        char clean[512];
        if (!p)
                return NULL;
        text_sanitize(origin, 400, '`', clean, sizeof(clean));
        p->name = name;
        p->origin = strdup(clean);
        if (!p->origin) {
                free(p);
                return NULL;
        }
        return p;
}

static const char *untrusted_suffix(enum origin_kind kind)
{
        switch (kind) {
        case ORIGIN_FLAG_UNTRUSTED:
                return " (selected with --untrusted, which overrides CHIDORI_POLICY_FILE, CHIDORI_POLICY and "
                       "CHIDORI_POLICY_PROFILE; run without --untrusted to use another policy)";
        case ORIGIN_SERVE_DEFAULT:
                return " (chidori serve's default; opt out with CHIDORI_POLICY_FILE, CHIDORI_POLICY, "
                       "CHIDORI_POLICY_PROFILE or --trusted)";
        case ORIGIN_ENV_PROFILE:
                return " (selected with CHIDORI_POLICY_PROFILE=untrusted; CHIDORI_POLICY_FILE or CHIDORI_POLICY "
                       "take precedence over it)";
        case ORIGIN_FAIL_CLOSED:
                return " (chidori fell back to it because the configured policy is invalid; see the warning "
                       "printed at startup)";
        default:
                return NULL;
        }
}

/* A built-in profile.  `name` must already be known to be valid. */
static struct policy *make_profile(const char *name, enum origin_kind kind, const char *origin)
{
        bool permissive = strcmp(name, "permissive") == 0, untrusted = strcmp(name, "untrusted") == 0;
        const char *pname = permissive ? "permissive" : untrusted ? "untrusted" : "supervised";
        struct policy *p = policy_new(pname, origin);
        if (!p)
                return NULL;
        p->fail_closed = kind == ORIGIN_FAIL_CLOSED;
        if (permissive) {
                p->fallback = POLICY_ALLOW;
                return p;
        }
        p->rules = readonly_rules;
        p->n_rules = ARRAY_SIZE(readonly_rules);
        p->fallback = untrusted ? POLICY_DENY : POLICY_ASK;
        const char *suffix = untrusted ? untrusted_suffix(kind) : NULL;
        int n;
        if (suffix)
                n = asprintf(&p->fallback_reason, "the untrusted profile allows only " READONLY_TEXT "%s", suffix);
        else if (untrusted)
                n = asprintf(&p->fallback_reason, "the untrusted profile allows only " READONLY_TEXT
                             " (selected by %s)", p->origin);
        else
                n = asprintf(&p->fallback_reason, "the supervised profile asks before every gated call except "
                             READONLY_TEXT " (selected by %s)", p->origin);
        if (n < 0) {
                p->fallback_reason = NULL;
                policy_free(p);
                return NULL;
        }
        return p;
}

bool policy_is_profile_name(const char *name)
{
        return name && (strcmp(name, "permissive") == 0 || strcmp(name, "untrusted") == 0 ||
                        strcmp(name, "supervised") == 0);
}

#define PROFILE_NAMES "permissive, untrusted or supervised"

int policy_profile(const char *name, const char *origin, struct policy **ret, struct err **err)
{
        if (!policy_is_profile_name(name)) {
                char clean[96];
                text_sanitize(name ? name : "", 64, '`', clean, sizeof(clean));
                return err_setc(err, POLICY_ERR_PROFILE, 0, "\"%s\" is not a policy profile (expected %s)", clean,
                                PROFILE_NAMES);
        }
        struct policy *p = make_profile(name, ORIGIN_TEXT, origin ? origin : "profile");
        if (!p)
                return err_set(err, ENOMEM, "policy profile '%s'", name);
        *ret = p;
        return 0;
}

/* ---- parsing ---- */

struct parser {
        struct jpath jp;
        struct err **err;
};

static const char *type_name(const cJSON *j)
{
        if (cJSON_IsObject(j))
                return "object";
        if (cJSON_IsArray(j))
                return "array";
        if (cJSON_IsString(j))
                return "string";
        if (cJSON_IsNumber(j))
                return "number";
        if (cJSON_IsBool(j))
                return "boolean";
        if (cJSON_IsNull(j))
                return "null";
        return "value";
}



static bool is_ident(const char *s)
{
        if (!*s)
                return false;
        for (; *s; s++)
                if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
                      *s == '_' || *s == '-' || *s == '$'))
                        return false;
        return true;
}

static size_t push_key(struct parser *ps, const char *key)
{
        if (is_ident(key) && strlen(key) <= 64)
                return jpath_push(&ps->jp, "%s%s", ps->jp.len ? "." : "", key);
        char clean[96];
        text_sanitize(key, 64, '`', clean, sizeof(clean));
        return jpath_push(&ps->jp, "[\"%s\"]", clean);
}

static int perr(struct parser *ps, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int perr(struct parser *ps, int code, const char *fmt, ...)
{
        char msg[512];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        return err_setc(ps->err, code, 0, "%s: %s", jpath_str(&ps->jp), msg);
}

static int want_type(struct parser *ps, const cJSON *j, bool ok, const char *what)
{
        if (ok)
                return 0;
        return perr(ps, POLICY_ERR_SCHEMA, "expected %s, got %s", what, type_name(j));
}

static int cmp_keys(const void *a, const void *b)
{
        return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Objects with a repeated key are refused: JSON leaves their meaning open
 * (cJSON keeps the first, JavaScript the last). */
static int check_unique_keys(struct parser *ps, const cJSON *obj)
{
        size_t n = 0, i = 0;
        for (const cJSON *c = obj->child; c; c = c->next)
                n++;
        if (n < 2)
                return 0;
        _cleanup_free_ const char **keys = malloc(n * sizeof(*keys));
        if (!keys)
                return err_set(ps->err, ENOMEM, "policy");
        for (const cJSON *c = obj->child; c; c = c->next)
                keys[i++] = c->string;
        qsort(keys, n, sizeof(*keys), cmp_keys);
        for (i = 1; i < n; i++)
                if (strcmp(keys[i - 1], keys[i]) == 0) {
                        char clean[96];
                        text_sanitize(keys[i], 64, '`', clean, sizeof(clean));
                        return perr(ps, POLICY_ERR_SCHEMA, "duplicate key \"%s\"", clean);
                }
        return 0;
}

/* Index of `key` in `names`, or -1. */
static int key_index(const char *key, const char *const *names, int n)
{
        for (int i = 0; i < n; i++)
                if (strcmp(key, names[i]) == 0)
                        return i;
        return -1;
}

static int unknown_key(struct parser *ps, const char *key, const char *expected)
{
        size_t old = push_key(ps, key);
        int r = perr(ps, POLICY_ERR_SCHEMA, "unknown key (expected %s)", expected);
        jpath_pop(&ps->jp, old);
        return r;
}

/* tool:<name> and app_data:<action>: 1..128 printable non-space ASCII bytes.
 * '*' is refused so that "tool:*" is an error rather than a literal name
 * that matches nothing (a never_allow rule that silently never fires). */
static const char *check_name(const char *s)
{
        size_t n = strlen(s);
        if (n == 0)
                return "needs a name after the colon";
        if (n > 128)
                return "has a name longer than 128 bytes";
        for (const char *c = s; *c; c++) {
                if (*c == '*')
                        return "is not a target (a wildcard is only allowed as the whole target \"*\")";
                if (*c <= 0x20 || *c >= 0x7f)
                        return "has a name with a space or a byte outside printable ASCII";
        }
        return NULL;
}

/* agent:<path>: the callee as the agent writes it in callAgent (relative to
 * its folder, compared byte for byte): 1..1024 bytes, no control bytes, and
 * no '*' for the same reason as check_name.  Spaces and UTF-8 are fine:
 * they are file names. */
static const char *check_agent_path(const char *s)
{
        size_t n = strlen(s);
        if (n == 0)
                return "needs a path after the colon (the callee as callAgent names it, e.g. agent:sub/child.js)";
        if (n > 1024)
                return "has a path longer than 1024 bytes";
        for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
                if (*c == '*')
                        return "is not a target (a wildcard is only allowed as the whole target \"*\")";
                if (*c < 0x20 || *c == 0x7f)
                        return "has a path with a control character";
        }
        return NULL;
}

/* secret:<name>: a name as --secrets declares it (effects/net/secrets.h):
 * 1..64 letters, digits, '_', '-', '.'. */
static const char *check_secret_name(const char *s)
{
        size_t n = strlen(s);
        if (n == 0)
                return "needs a name after the colon (a secret --secrets declares)";
        if (n > 64)
                return "has a name longer than 64 bytes";
        for (const char *c = s; *c; c++) {
                if (*c == '*')
                        return "is not a target (a wildcard is only allowed as the whole target \"*\")";
                if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') || *c == '_' ||
                      *c == '-' || *c == '.'))
                        return "has a name with a byte other than a letter, digit, '_', '-' or '.'";
        }
        return NULL;
}

static int check_target(struct parser *ps, const char *t)
{
        const char *why = NULL;
        if (strcmp(t, "*") == 0 || strcmp(t, "http") == 0)
                return 0;
        if (strncmp(t, "workspace:", 10) == 0) {
                if (key_index(t + 10, workspace_actions, (int)ARRAY_SIZE(workspace_actions)) >= 0)
                        return 0;
                why = "is not a target (workspace actions are list, read, write, delete and manifest)";
        } else if (strncmp(t, "tool:", 5) == 0) {
                why = check_name(t + 5);
        } else if (strncmp(t, "app_data:", 9) == 0) {
                why = check_name(t + 9);
        } else if (strncmp(t, "agent:", 6) == 0) {
                why = check_agent_path(t + 6);
        } else if (strncmp(t, "secret:", 7) == 0) {
                why = check_secret_name(t + 7);
        } else {
                why = "is not a target (expected http, workspace:<action>, tool:<name>, agent:<path>, "
                      "secret:<name>, app_data:<action> or *)";
        }
        if (!why)
                return 0;
        char clean[96];
        text_sanitize(t, 64, '`', clean, sizeof(clean));
        return perr(ps, POLICY_ERR_SCHEMA, "\"%s\" %s", clean, why);
}

/* A url_prefix must pin the host: "https://api.example.com" would also match
 * "https://api.example.com.evil.example/", so the "/" after the host is
 * required whenever the prefix names a scheme. */
static int check_url_prefix(struct parser *ps, const cJSON *v)
{
        if (want_type(ps, v, cJSON_IsString(v), "a string") < 0)
                return -1;
        const char *s = v->valuestring;
        if (!*s)
                return perr(ps, POLICY_ERR_SCHEMA, "is empty (it would match every url)");
        const char *sep = strstr(s, "://");
        if (!sep)
                return 0;
        const char *host = sep + 3, *end = host + strcspn(host, "/?#\\");
        if (end == host || *end != '/') {
                char clean[128], upto[128], head[97];
                size_t n = (size_t)(end - s) < sizeof(head) - 1 ? (size_t)(end - s) : sizeof(head) - 1;
                memcpy(head, s, n);
                head[n] = '\0';
                text_sanitize(s, 96, '`', clean, sizeof(clean));
                text_sanitize(head, 96, '`', upto, sizeof(upto));
                return perr(ps, POLICY_ERR_SCHEMA,
                            "\"%s\" must end the host with \"/\" (otherwise \"%s.evil.example/\" matches too)",
                            clean, upto);
        }
        return 0;
}

/* Validate a match_args pattern: depth, unique keys, url_prefix.  `depth` is
 * 1 for match_args itself.  In arrays, values are compared for equality, so
 * url_prefix is an ordinary key there. */
static int check_pattern(struct parser *ps, const cJSON *pat, int depth, bool in_array)
{
        bool obj = cJSON_IsObject(pat);
        if (!obj && !cJSON_IsArray(pat))
                return 0;
        if (depth > POLICY_MATCH_DEPTH_MAX)
                return perr(ps, POLICY_ERR_LIMIT, "match_args nested deeper than %d levels",
                            POLICY_MATCH_DEPTH_MAX);
        if (obj && check_unique_keys(ps, pat) < 0)
                return -1;
        size_t i = 0;
        for (const cJSON *c = pat->child; c; c = c->next, i++) {
                size_t old = obj ? push_key(ps, c->string) : jpath_push(&ps->jp, "[%zu]", i);
                int r = obj && !in_array && strcmp(c->string, "url_prefix") == 0
                                ? check_url_prefix(ps, c)
                                : check_pattern(ps, c, depth + 1, in_array || !obj);
                jpath_pop(&ps->jp, old);
                if (r < 0)
                        return -1;
        }
        return 0;
}

static const char *const rule_keys[] = { "target", "decision", "match_args", "reason" };
static const char *const top_keys[] = { "rules", "default", "default_reason" };

static int parse_decision_at(struct parser *ps, const cJSON *v, enum policy_decision *ret)
{
        if (want_type(ps, v, cJSON_IsString(v), "a string") < 0)
                return -1;
        if (parse_decision(v->valuestring, ret))
                return 0;
        char clean[96];
        text_sanitize(v->valuestring, 64, '`', clean, sizeof(clean));
        return perr(ps, POLICY_ERR_SCHEMA, "\"%s\" is not a decision (expected always_allow, ask_before or never_allow)",
                    clean);
}

static int parse_rule(struct parser *ps, const cJSON *j, struct rule *r)
{
        const cJSON *v[ARRAY_SIZE(rule_keys)] = { 0 };
        if (want_type(ps, j, cJSON_IsObject(j), "an object") < 0)
                return -1;
        for (const cJSON *c = j->child; c; c = c->next) {
                int k = key_index(c->string, rule_keys, (int)ARRAY_SIZE(rule_keys));
                if (k < 0)
                        return unknown_key(ps, c->string, "target, decision, match_args or reason");
                if (v[k])
                        return perr(ps, POLICY_ERR_SCHEMA, "duplicate key \"%s\"", c->string);
                v[k] = c;
        }
        for (int k = 0; k < 2; k++)
                if (!v[k]) {
                        size_t old = push_key(ps, rule_keys[k]);
                        perr(ps, POLICY_ERR_SCHEMA, "missing (every rule needs a target and a decision)");
                        jpath_pop(&ps->jp, old);
                        return -1;
                }
        size_t old = jpath_push(&ps->jp, ".target");
        int rc = want_type(ps, v[0], cJSON_IsString(v[0]), "a string");
        if (rc == 0)
                rc = check_target(ps, v[0]->valuestring);
        jpath_pop(&ps->jp, old);
        if (rc < 0)
                return -1;
        r->target = v[0]->valuestring;

        old = jpath_push(&ps->jp, ".decision");
        rc = parse_decision_at(ps, v[1], &r->decision);
        jpath_pop(&ps->jp, old);
        if (rc < 0)
                return -1;

        if (v[2]) {
                old = jpath_push(&ps->jp, ".match_args");
                rc = want_type(ps, v[2], cJSON_IsObject(v[2]), "an object");
                if (rc == 0)
                        rc = check_pattern(ps, v[2], 1, false);
                jpath_pop(&ps->jp, old);
                if (rc < 0)
                        return -1;
                r->match = v[2];
        }
        if (v[3]) {
                old = jpath_push(&ps->jp, ".reason");
                rc = want_type(ps, v[3], cJSON_IsString(v[3]), "a string");
                jpath_pop(&ps->jp, old);
                if (rc < 0)
                        return -1;
                r->reason = v[3]->valuestring;
        }
        return 0;
}

static int parse_doc(struct parser *ps, struct policy *p)
{
        const cJSON *root = p->doc, *v[ARRAY_SIZE(top_keys)] = { 0 };
        if (want_type(ps, root, cJSON_IsObject(root), "an object") < 0)
                return -1;
        for (const cJSON *c = root->child; c; c = c->next) {
                int k = key_index(c->string, top_keys, (int)ARRAY_SIZE(top_keys));
                if (k < 0)
                        return unknown_key(ps, c->string, "rules, default or default_reason");
                if (v[k])
                        return perr(ps, POLICY_ERR_SCHEMA, "duplicate key \"%s\"", c->string);
                v[k] = c;
        }
        if (!v[0]) {
                jpath_push(&ps->jp, "rules");
                return perr(ps, POLICY_ERR_SCHEMA, "missing (a policy needs a \"rules\" array, which may be empty)");
        }
        jpath_push(&ps->jp, "rules");
        if (want_type(ps, v[0], cJSON_IsArray(v[0]), "an array") < 0)
                return -1;
        size_t n = 0;
        for (const cJSON *c = v[0]->child; c; c = c->next)
                if (++n > POLICY_RULES_MAX)
                        return perr(ps, POLICY_ERR_LIMIT, "more than %d rules", POLICY_RULES_MAX);
        p->owned_rules = calloc(n ? n : 1, sizeof(*p->owned_rules));
        if (!p->owned_rules)
                return err_set(ps->err, ENOMEM, "policy");
        size_t i = 0;
        for (const cJSON *c = v[0]->child; c; c = c->next, i++) {
                size_t old = jpath_push(&ps->jp, "[%zu]", i);
                if (parse_rule(ps, c, &p->owned_rules[i]) < 0)
                        return -1;
                jpath_pop(&ps->jp, old);
        }
        jpath_pop(&ps->jp, 0);
        p->rules = p->owned_rules;
        p->n_rules = n;

        p->fallback = POLICY_ALLOW;
        if (v[1]) {
                jpath_push(&ps->jp, "default");
                if (parse_decision_at(ps, v[1], &p->fallback) < 0)
                        return -1;
                jpath_pop(&ps->jp, 0);
        }
        if (v[2]) {
                jpath_push(&ps->jp, "default_reason");
                if (want_type(ps, v[2], cJSON_IsString(v[2]), "a string") < 0)
                        return -1;
                jpath_pop(&ps->jp, 0);
                p->fallback_reason = strdup(v[2]->valuestring);
                if (!p->fallback_reason)
                        return err_set(ps->err, ENOMEM, "policy");
        }
        return 0;
}


int policy_parse(const char *json, size_t len, const char *origin, struct policy **ret, struct err **err)
{
        cJSON *doc;
        char msg[256];
        int jr = json_file_parse(json, len, POLICY_FILE_MAX, &doc, msg, sizeof(msg));
        if (jr == JSON_FILE_NOMEM)
                return err_set(err, ENOMEM, "policy");
        if (jr)
                return err_setc(err, jr == JSON_FILE_TOO_BIG ? POLICY_ERR_LIMIT : POLICY_ERR_SYNTAX, 0, "%s", msg);
        struct policy *p = policy_new("custom", origin ? origin : "policy");
        if (!p) {
                cJSON_Delete(doc);
                return err_set(err, ENOMEM, "policy");
        }
        p->doc = doc;
        struct parser ps = { .err = err };
        if (parse_doc(&ps, p) < 0) {
                policy_free(p);
                return -1;
        }
        *ret = p;
        return 0;
}

/* Read and parse; messages without the file name (the caller adds it). */
static int load_file(const char *path, int fd, int errnum, const char *origin, struct policy **ret, struct err **err)
{
        _cleanup_free_ char *text = NULL;
        size_t len = 0;
        struct err *rerr = NULL;
        if (read_opened(path, fd, errnum, POLICY_FILE_MAX, &text, &len, &rerr) < 0) {
                int e = rerr ? rerr->errnum : EIO;
                err_free(rerr);
                if (e == EFBIG)
                        return err_setc(err, POLICY_ERR_LIMIT, 0, "larger than the 1 MiB limit");
                return err_setc(err, POLICY_ERR_IO, e, "cannot be read");
        }
        return policy_parse(text, len, origin, ret, err);
}

int policy_load_file(const char *path, struct policy **ret, struct err **err)
{
        if (load_file(path, 0, 0, path, ret, err) < 0)
                return err_wrap(err, "policy file '%s'", path);
        return 0;
}

/* ---- selection ---- */

static const char *set_or_null(const char *v)
{
        return v && *v ? v : NULL;
}

/* "A, B ignored" for the sources that are set but were not consulted. */
static char *ignored_list(const char *const *names, const char *const *vals, size_t n)
{
        char buf[128] = "";
        size_t used = 0;
        for (size_t i = 0; i < n; i++) {
                if (!set_or_null(vals[i]))
                        continue;
                int w = snprintf(buf + used, sizeof(buf) - used, "%s%s", used ? ", " : "", names[i]);
                if (w > 0)
                        used += (size_t)w;
        }
        if (!used)
                return NULL;
        char *s = NULL;
        return asprintf(&s, "%s ignored", buf) < 0 ? NULL : s;
}

int policy_select(const struct policy_sources *src, struct policy **ret, char **ret_warning, struct err **err)
{
        if (src->flag_untrusted && src->flag_trusted)
                return err_setc(err, POLICY_ERR_USAGE, 0,
                                "--trusted and --untrusted contradict each other; pass only one (--untrusted alone "
                                "confines the run whatever CHIDORI_POLICY* says)");
        const char *file = set_or_null(src->env_file), *inl = set_or_null(src->env_inline),
                   *prof = set_or_null(src->env_profile);
        static const char *const names[] = { "CHIDORI_POLICY_FILE", "CHIDORI_POLICY", "CHIDORI_POLICY_PROFILE" };
        const char *vals[] = { file, inl, prof };
        struct policy *p = NULL;
        struct err *perr_ = NULL;
        char source[480] = "", *problem = NULL;
        size_t consulted;  /* sources before this index were looked at */
        int r = 0;

        if (src->flag_untrusted) {
                p = make_profile("untrusted", ORIGIN_FLAG_UNTRUSTED, "--untrusted");
                consulted = 0;
        } else if (file) {
                char clean[400];
                text_sanitize(file, 300, '`', clean, sizeof(clean));
                snprintf(source, sizeof(source), "CHIDORI_POLICY_FILE=%s", clean);
                r = load_file(file, src->env_file_fd, src->env_file_errno, source, &p, &perr_);
                consulted = 1;
        } else if (inl) {
                snprintf(source, sizeof(source), "CHIDORI_POLICY");
                r = policy_parse(inl, strlen(inl), source, &p, &perr_);
                consulted = 2;
        } else if (prof) {
                char clean[96];
                text_sanitize(prof, 64, '`', clean, sizeof(clean));
                snprintf(source, sizeof(source), "CHIDORI_POLICY_PROFILE=%s", clean);
                if (policy_is_profile_name(prof))
                        p = make_profile(prof, ORIGIN_ENV_PROFILE, source);
                else
                        r = err_setc(&perr_, POLICY_ERR_PROFILE, 0, "not a profile (expected " PROFILE_NAMES ")");
                consulted = 3;
        } else {
                consulted = 3;
                if (src->flag_trusted)
                        p = make_profile("permissive", ORIGIN_FLAG_TRUSTED, "--trusted");
                else if (src->surface == POLICY_SURFACE_SERVE)
                        p = make_profile("untrusted", ORIGIN_SERVE_DEFAULT, "chidori serve default");
                else
                        p = make_profile("permissive", ORIGIN_RUN_DEFAULT, "chidori run default");
        }

        if (r < 0) {
                if (err_code(perr_) == 0 && perr_ && perr_->errnum == ENOMEM) {
                        err_free(perr_);
                        return err_set(err, ENOMEM, "policy");
                }
                bool syntax = err_code(perr_) == POLICY_ERR_SYNTAX;
                if (asprintf(&problem, "%s%s%s", source, syntax ? " is " : ": ", err_msg(perr_)) < 0)
                        problem = NULL;
                err_free(perr_);
                if (!problem)
                        return err_set(err, ENOMEM, "policy");
                char *origin = NULL;
                if (asprintf(&origin, "fail-closed: %s", problem) >= 0) {
                        p = make_profile("untrusted", ORIGIN_FAIL_CLOSED, origin);
                        free(origin);
                }
        }
        if (!p) {
                free(problem);
                return err_set(err, ENOMEM, "policy");
        }
        if (consulted < ARRAY_SIZE(names))
                p->ignored = ignored_list(names + consulted, vals + consulted, ARRAY_SIZE(names) - consulted);
        char *warning = NULL;
        if (problem && asprintf(&warning, "%s; using the untrusted profile (deny by default) instead", problem) < 0)
                warning = NULL;
        bool oom = problem && !warning;
        free(problem);
        if (oom) {
                policy_free(p);
                return err_set(err, ENOMEM, "policy");
        }
        *ret = p;
        *ret_warning = warning;
        return 0;
}

/* ---- evaluation ---- */

enum match { M_NO, M_YES, M_AMBIGUOUS };

/* The member `key` of obj; *dup set if it occurs more than once. */
static const cJSON *member(const cJSON *obj, const char *key, bool *dup)
{
        const cJSON *found = NULL;
        *dup = false;
        for (const cJSON *c = obj->child; c; c = c->next)
                if (c->string && strcmp(c->string, key) == 0) {
                        if (found) {
                                *dup = true;
                                return found;
                        }
                        found = c;
                }
        return found;
}

/* Plain JSON equality; patterns have unique keys, so equal member counts
 * plus every pattern key found means the arg object has no repeats. */
static bool json_equal(const cJSON *pat, const cJSON *arg)
{
        if (cJSON_IsString(pat))
                return cJSON_IsString(arg) && arg->valuestring && strcmp(pat->valuestring, arg->valuestring) == 0;
        if (cJSON_IsNumber(pat))
                return cJSON_IsNumber(arg) && pat->valuedouble == arg->valuedouble;
        if (cJSON_IsTrue(pat) || cJSON_IsFalse(pat) || cJSON_IsNull(pat))
                return (arg->type & 0xff) == (pat->type & 0xff);
        if (cJSON_IsArray(pat)) {
                if (!cJSON_IsArray(arg))
                        return false;
                const cJSON *a = pat->child, *b = arg->child;
                for (; a && b; a = a->next, b = b->next)
                        if (!json_equal(a, b))
                                return false;
                return !a && !b;
        }
        if (cJSON_IsObject(pat)) {
                if (!cJSON_IsObject(arg))
                        return false;
                size_t na = 0, nb = 0;
                for (const cJSON *c = pat->child; c; c = c->next)
                        na++;
                for (const cJSON *c = arg->child; c; c = c->next)
                        nb++;
                if (na != nb)
                        return false;
                for (const cJSON *c = pat->child; c; c = c->next) {
                        bool dup;
                        const cJSON *v = member(arg, c->string, &dup);
                        if (!v || dup || !json_equal(c, v))
                                return false;
                }
                return true;
        }
        return false;
}

/* Subset match: every pattern key present and matching, strings by
 * substring, url_prefix anchored on the object's "url", arrays and scalars
 * by equality.  A definite mismatch anywhere beats an ambiguity. */
static enum match match(const cJSON *pat, const cJSON *arg)
{
        if (cJSON_IsString(pat))
                return cJSON_IsString(arg) && arg->valuestring && strstr(arg->valuestring, pat->valuestring)
                               ? M_YES
                               : M_NO;
        if (!cJSON_IsObject(pat))
                return json_equal(pat, arg) ? M_YES : M_NO;
        if (!cJSON_IsObject(arg))
                return M_NO;
        bool ambiguous = false;
        for (const cJSON *c = pat->child; c; c = c->next) {
                bool dup;
                enum match m;
                if (strcmp(c->string, "url_prefix") == 0) {
                        const cJSON *u = member(arg, "url", &dup);
                        size_t n = strlen(c->valuestring);
                        m = cJSON_IsString(u) && u->valuestring && strncmp(u->valuestring, c->valuestring, n) == 0
                                    ? M_YES
                                    : M_NO;
                } else {
                        const cJSON *v = member(arg, c->string, &dup);
                        m = v ? match(c, v) : M_NO;
                }
                if (m == M_NO && !dup)
                        return M_NO;
                if (dup || m == M_AMBIGUOUS)
                        ambiguous = true;
        }
        return ambiguous ? M_AMBIGUOUS : M_YES;
}

static enum policy_decision verdict(struct policy_verdict *ret, const struct policy *p, enum policy_decision d,
                                    const char *reason, int idx)
{
        *ret = (struct policy_verdict){ .decision = d, .reason = reason, .rule_index = idx, .policy = p };
        return d;
}

enum policy_decision policy_check(const struct policy *p, const char *target, const cJSON *args,
                                  struct policy_verdict *ret)
{
        static const cJSON empty = { .type = cJSON_Object };
        if (!p)
                return verdict(ret, p, POLICY_DENY, "no policy is loaded", POLICY_RULE_FALLBACK);
        if (!target)
                return verdict(ret, p, POLICY_DENY, "the call has no target", POLICY_RULE_FALLBACK);
        if (!args)
                args = &empty;
        for (size_t i = 0; i < p->n_rules; i++) {
                const struct rule *r = &p->rules[i];
                if (strcmp(r->target, "*") != 0 && strcmp(r->target, target) != 0)
                        continue;
                enum match m = r->match ? match(r->match, args) : M_YES;
                if (m == M_AMBIGUOUS)
                        return verdict(ret, p, POLICY_DENY, AMBIGUOUS_REASON, (int)i);
                if (m == M_YES)
                        return verdict(ret, p, r->decision, r->reason, (int)i);
        }
        return verdict(ret, p, p->fallback, p->fallback_reason, POLICY_RULE_FALLBACK);
}

enum policy_decision policy_check_layered(const struct policy *server, const struct policy *session,
                                          const char *target, const cJSON *args, struct policy_verdict *ret)
{
        struct policy_verdict a, b;
        policy_check(server, target, args, &a);
        if (!session) {
                *ret = a;
                return a.decision;
        }
        policy_check(session, target, args, &b);
        *ret = b.decision > a.decision ? b : a;
        return ret->decision;
}

/* ---- text ---- */

const char *policy_name(const struct policy *p)
{
        return p ? p->name : "none";
}

size_t policy_rule_count(const struct policy *p)
{
        return p ? p->n_rules : 0;
}

enum policy_decision policy_fallback(const struct policy *p)
{
        return p ? p->fallback : POLICY_DENY;
}

bool policy_is_fail_closed(const struct policy *p)
{
        return p && p->fail_closed;
}

static size_t finish(int n)
{
        return n < 0 ? 0 : (size_t)n;
}

size_t policy_describe(const struct policy *p, char *buf, size_t len)
{
        if (!p)
                return finish(snprintf(buf, len, "none (every gated call is denied)"));
        const char *sep = p->ignored ? "; " : "", *ign = p->ignored ? p->ignored : "";
        if (strcmp(p->name, "custom") == 0)
                return finish(snprintf(buf, len, "custom from %s (%zu rule%s, default %s%s%s)", p->origin, p->n_rules,
                                       p->n_rules == 1 ? "" : "s", policy_decision_name(p->fallback), sep, ign));
        return finish(snprintf(buf, len, "%s (%s%s%s)", p->name, p->origin, sep, ign));
}

static size_t message(const char *target, const struct policy_verdict *v, const char *what, const char *tail,
                      char *buf, size_t len)
{
        char clean[256];
        text_sanitize(target ? target : "", 200, '`', clean, sizeof(clean));
        const char *reason = v && v->reason && *v->reason ? v->reason : NULL;
        return finish(snprintf(buf, len, "policy: `%s` %s%s%s%s", clean, what, reason ? ": " : "",
                               reason ? reason : "", tail));
}

size_t policy_denial_message(const char *target, const struct policy_verdict *v, char *buf, size_t len)
{
        return message(target, v, "denied", "", buf, len);
}

size_t policy_ask_message(const char *target, const struct policy_verdict *v, char *buf, size_t len)
{
        return message(target, v, "needs approval",
                       "; nothing can approve it here (set CHIDORI_POLICY_AUTO_APPROVE=1 to approve such calls)", buf,
                       len);
}

size_t policy_pending_message(const char *target, const struct policy_verdict *v, char *buf, size_t len)
{
        return message(target, v, "needs approval", "", buf, len);
}

size_t policy_declined_message(const char *target, const struct policy_verdict *v, char *buf, size_t len)
{
        return message(target, v, "needs approval", "; declined at the terminal", buf, len);
}
