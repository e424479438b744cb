/* effects/proc/tools.c — the tools file, the child for a call, the call's result.
 *
 * Validation is strict, in the style of policy/policy.c: every problem is
 * reported with the JSON path that has it, unknown keys and repeated keys
 * are errors, and nothing is guessed.
 */
#define _GNU_SOURCE
#include "effects/proc/tools.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/strv.h"
#include "common/text.h"
#include "common/util.h"
#include "effects/proc/subproc.h"
#include "proto/json.h"

struct tool {
        struct tool_def def;  /* points into the owned arrays below */
        char *name;
        char **command;
        char **env;
        char **ro_bind;
};

struct tools_registry {
        struct tool *tools;
        size_t n;
};

/* ---- text helpers ---- */

static const char *type_name(const cJSON *j)
{
        if (cJSON_IsObject(j))
                return "an object";
        if (cJSON_IsArray(j))
                return "an array";
        if (cJSON_IsString(j))
                return "a string";
        if (cJSON_IsNumber(j))
                return "a number";
        if (cJSON_IsBool(j))
                return "a boolean";
        if (cJSON_IsNull(j))
                return "null";
        return "a value";
}

static void strv_free(char **v)
{
        for (size_t i = 0; v && v[i]; i++)
                free(v[i]);
        free(v);
}

/* ---- parsing ---- */

struct parser {
        const char *origin;
        struct jpath jp;
        struct err **err;
        bool no_files;  /* TOOLS_LOAD_NO_FILES */
};



/* Tool names with a '.' (or anything not a plain word) are shown quoted,
 * so that "web.search.command" cannot be misread. */
static size_t push_name(struct parser *ps, const char *name)
{
        bool plain = *name && strlen(name) <= TOOLS_NAME_MAX;
        for (const char *c = name; *c && plain; c++)
                plain = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
                        *c == '_' || *c == '-';
        if (plain)
                return jpath_push(&ps->jp, "%s", name);
        char clean[96];
        text_sanitize(name, TOOLS_NAME_MAX, 0, clean, sizeof(clean));
        return jpath_push(&ps->jp, "[\"%s\"]", clean);
}

static int perr(struct parser *ps, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int perr(struct parser *ps, const char *fmt, ...)
{
        char msg[512];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        return err_setc(ps->err, TOOLS_E_SCHEMA, 0, "%s: %s: %s", ps->origin, jpath_str(&ps->jp),
                        msg);
}

static int oom(struct parser *ps)
{
        return err_setc(ps->err, TOOLS_E_IO, ENOMEM, "%s", ps->origin);
}

static int check_unique_keys(struct parser *ps, const cJSON *obj)
{
        for (const cJSON *a = obj->child; a; a = a->next)
                for (const cJSON *b = a->next; b; b = b->next)
                        if (strcmp(a->string, b->string) == 0) {
                                char clean[96];
                                text_sanitize(a->string, 64, 0, clean, sizeof(clean));
                                return perr(ps, "duplicate key \"%s\"", clean);
                        }
        return 0;
}

static bool is_tool_name(const char *s)
{
        size_t n = strlen(s);
        if (n < 1 || n > TOOLS_NAME_MAX)
                return false;
        for (; *s; s++)
                if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') || *s == '_' ||
                      *s == '.' || *s == '-'))
                        return false;
        return true;
}

static bool is_env_name(const char *s)
{
        if (!*s || strlen(s) > 128 || (*s >= '0' && *s <= '9'))
                return false;
        for (; *s; s++)
                if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') || *s == '_'))
                        return false;
        return true;
}

/* An absolute path with no empty, "." or ".." component (and no ':' unless
 * allowed: it separates launch's --ro-bind SRC:DST). */
static bool is_clean_abs(const char *p, bool colon_ok)
{
        if (p[0] != '/' || strlen(p) > 4095 || (!colon_ok && strchr(p, ':')))
                return false;
        if (p[1] == '\0')
                return true;  /* "/" itself; callers refuse it where it matters */
        for (const char *c = p; *c; c++)
                if (c[0] == '/') {
                        const char *s = c + 1;
                        size_t len = strcspn(s, "/");
                        if (len == 0 || (len == 1 && s[0] == '.') || (len == 2 && s[0] == '.' && s[1] == '.'))
                                return false;
                }
        return true;
}

static bool is_exec_file(const char *path)
{
        struct stat st;
        return stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0;
}

static bool found_in_path(const char *name)
{
        char dirs[] = TOOLS_PATH;
        for (char *save = NULL, *d = strtok_r(dirs, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
                _cleanup_free_ char *p = NULL;
                if (asprintf(&p, "%s/%s", d, name) >= 0 && is_exec_file(p))
                        return true;
        }
        return false;
}

/* A non-empty array of non-empty strings, at most `max`; *ret NULL-terminated. */
static int string_array(struct parser *ps, const cJSON *j, size_t max, const char *what, char ***ret,
                        size_t *ret_n)
{
        if (!cJSON_IsArray(j) || !j->child)
                return perr(ps, "must be a non-empty array of %s", what);
        size_t n = (size_t)cJSON_GetArraySize(j);
        if (n > max)
                return perr(ps, "more than %zu entries", max);
        char **v = calloc(n + 1, sizeof(*v));
        if (!v)
                return oom(ps);
        size_t i = 0;
        for (const cJSON *c = j->child; c; c = c->next, i++) {
                if (!cJSON_IsString(c) || !c->valuestring[0]) {
                        size_t old = jpath_push(&ps->jp, "[%zu]", i);
                        perr(ps, "must be a non-empty string, got %s", cJSON_IsString(c) ? "\"\"" : type_name(c));
                        jpath_pop(&ps->jp, old);
                        strv_free(v);
                        return -1;
                }
                if (!(v[i] = strdup(c->valuestring))) {
                        strv_free(v);
                        return oom(ps);
                }
        }
        *ret = v;
        *ret_n = n;
        return 0;
}

static int integer(struct parser *ps, const cJSON *j, double lo, double hi, double *ret)
{
        /* range first (NaN fails it too), so the cast cannot overflow */
        if (!cJSON_IsNumber(j) || !(j->valuedouble >= lo && j->valuedouble <= hi) ||
            (double)(long long)j->valuedouble != j->valuedouble)
                return perr(ps, "must be an integer from %.0f to %.0f", lo, hi);
        *ret = j->valuedouble;
        return 0;
}

static const char *const known_keys = "command, timeout_ms, env, sandbox, max_output_bytes, ro_bind";

static int parse_command(struct parser *ps, const cJSON *j, struct tool *t)
{
        if (string_array(ps, j, TOOLS_COMMAND_MAX, "strings", &t->command, &t->def.ncommand) < 0)
                return -1;
        const char *prog = t->command[0];
        size_t old = jpath_push(&ps->jp, "[0]");
        int r = 0;
        char clean[160];
        text_sanitize(prog, 128, 0, clean, sizeof(clean));
        if (strchr(prog, '/')) {
                if (!is_clean_abs(prog, true))
                        r = perr(ps, "\"%s\" must be an absolute path or a bare program name", clean);
                else if (!ps->no_files && !is_exec_file(prog))
                        r = perr(ps, "\"%s\" is not an executable file", clean);
        } else if (!found_in_path(prog)) {
                r = perr(ps, "program \"%s\" not found in PATH=%s", clean, TOOLS_PATH);
        }
        jpath_pop(&ps->jp, old);
        return r;
}

static int parse_env(struct parser *ps, const cJSON *j, struct tool *t)
{
        if (cJSON_IsArray(j) && !j->child)
                return 0;  /* [] = the default */
        if (string_array(ps, j, TOOLS_ENV_MAX, "variable names", &t->env, &t->def.nenv) < 0)
                return -1;
        for (size_t i = 0; i < t->def.nenv; i++) {
                size_t old = jpath_push(&ps->jp, "[%zu]", i);
                char clean[160];
                text_sanitize(t->env[i], 128, 0, clean, sizeof(clean));
                int r = 0;
                if (!is_env_name(t->env[i]))
                        r = perr(ps, "\"%s\" is not a variable name ([A-Za-z_][A-Za-z0-9_]*)", clean);
                else if (strcmp(t->env[i], "PATH") == 0)
                        r = perr(ps, "PATH is always %s and cannot be copied", TOOLS_PATH);
                for (size_t k = 0; k < i && r == 0; k++)
                        if (strcmp(t->env[k], t->env[i]) == 0)
                                r = perr(ps, "\"%s\" is listed twice", clean);
                jpath_pop(&ps->jp, old);
                if (r < 0)
                        return -1;
        }
        return 0;
}

static int parse_ro_bind(struct parser *ps, const cJSON *j, struct tool *t)
{
        if (cJSON_IsArray(j) && !j->child)
                return 0;
        if (string_array(ps, j, TOOLS_RO_BIND_MAX, "absolute paths", &t->ro_bind, &t->def.nro_bind) < 0)
                return -1;
        for (size_t i = 0; i < t->def.nro_bind; i++) {
                size_t old = jpath_push(&ps->jp, "[%zu]", i);
                char clean[160];
                text_sanitize(t->ro_bind[i], 128, 0, clean, sizeof(clean));
                struct stat st;
                int r = 0;
                if (!is_clean_abs(t->ro_bind[i], false) || strcmp(t->ro_bind[i], "/") == 0)
                        r = perr(ps, "\"%s\" must be an absolute path other than /, without ':', '.' or '..' "
                                     "components", clean);
                else if (!ps->no_files && stat(t->ro_bind[i], &st) < 0)
                        r = perr(ps, "\"%s\" does not exist", clean);
                jpath_pop(&ps->jp, old);
                if (r < 0)
                        return -1;
        }
        return 0;
}

static int parse_tool(struct parser *ps, const cJSON *def, struct tool *t)
{
        if (!cJSON_IsObject(def))
                return perr(ps, "must be an object, got %s", type_name(def));
        if (cJSON_GetArraySize(def) > 32)
                return perr(ps, "more than 32 keys (expected %s)", known_keys);
        if (check_unique_keys(ps, def) < 0)
                return -1;
        t->def.timeout_ms = TOOLS_DEFAULT_TIMEOUT_MS;
        t->def.sandbox = true;
        t->def.max_output_bytes = TOOLS_DEFAULT_MAX_OUTPUT;
        bool have_command = false;
        for (const cJSON *k = def->child; k; k = k->next) {
                size_t old = jpath_push(&ps->jp, ".%s", k->string);
                int r = 0;
                double v = 0;
                if (strcmp(k->string, "command") == 0) {
                        r = parse_command(ps, k, t);
                        have_command = true;
                } else if (strcmp(k->string, "timeout_ms") == 0) {
                        r = integer(ps, k, 1, (double)TOOLS_TIMEOUT_MAX_MS, &v);
                        t->def.timeout_ms = (long)v;
                } else if (strcmp(k->string, "max_output_bytes") == 0) {
                        r = integer(ps, k, 1, (double)TOOLS_OUTPUT_MAX, &v);
                        t->def.max_output_bytes = (size_t)v;
                } else if (strcmp(k->string, "sandbox") == 0) {
                        if (!cJSON_IsBool(k))
                                r = perr(ps, "must be true or false, got %s", type_name(k));
                        t->def.sandbox = cJSON_IsTrue(k);
                } else if (strcmp(k->string, "env") == 0) {
                        r = parse_env(ps, k, t);
                } else if (strcmp(k->string, "ro_bind") == 0) {
                        r = parse_ro_bind(ps, k, t);
                } else {
                        jpath_pop(&ps->jp, old);
                        char clean[96];
                        text_sanitize(k->string, 64, 0, clean, sizeof(clean));
                        old = jpath_push(&ps->jp, ".%s", clean);
                        r = perr(ps, "unknown key (expected %s)", known_keys);
                }
                jpath_pop(&ps->jp, old);
                if (r < 0)
                        return -1;
        }
        if (!have_command) {
                size_t old = jpath_push(&ps->jp, ".command");
                perr(ps, "missing: must be a non-empty array of strings");
                jpath_pop(&ps->jp, old);
                return -1;
        }
        if (!t->def.sandbox && t->def.nro_bind > 0) {
                size_t old = jpath_push(&ps->jp, ".ro_bind");
                perr(ps, "only applies to sandboxed tools (\"sandbox\": false sees the whole host)");
                jpath_pop(&ps->jp, old);
                return -1;
        }
        t->def.command = t->command;
        t->def.env = t->env;
        t->def.ro_bind = t->ro_bind;
        return 0;
}

static void tool_clear(struct tool *t)
{
        free(t->name);
        strv_free(t->command);
        strv_free(t->env);
        strv_free(t->ro_bind);
}

void tools_free(struct tools_registry *reg)
{
        if (!reg)
                return;
        for (size_t i = 0; i < reg->n; i++)
                tool_clear(&reg->tools[i]);
        free(reg->tools);
        free(reg);
}

static int parse_doc(struct parser *ps, const cJSON *doc, struct tools_registry *reg)
{
        if (!cJSON_IsObject(doc))
                return perr(ps, "must be an object mapping tool names to definitions, got %s", type_name(doc));
        size_t n = (size_t)cJSON_GetArraySize(doc);
        if (n > TOOLS_MAX)
                return perr(ps, "more than %d tools", TOOLS_MAX);
        if (check_unique_keys(ps, doc) < 0)  /* quadratic: after the count check */
                return -1;
        reg->tools = calloc(n ? n : 1, sizeof(*reg->tools));
        if (!reg->tools)
                return oom(ps);
        for (const cJSON *d = doc->child; d; d = d->next) {
                size_t old = push_name(ps, d->string);
                if (!is_tool_name(d->string)) {
                        perr(ps, "not a valid tool name (1 to %d of A-Z a-z 0-9 _ . -)", TOOLS_NAME_MAX);
                        return -1;
                }
                struct tool *t = &reg->tools[reg->n++];
                if (!(t->name = strdup(d->string)))
                        return oom(ps);
                t->def.name = t->name;
                if (parse_tool(ps, d, t) < 0)
                        return -1;
                jpath_pop(&ps->jp, old);
        }
        return 0;
}

static int parse_flags(const char *json, size_t len, const char *origin, unsigned flags,
                       struct tools_registry **ret, struct err **err);

int tools_parse(const char *json, size_t len, const char *origin, struct tools_registry **ret, struct err **err)
{
        return parse_flags(json, len, origin, 0, ret, err);
}

static int parse_flags(const char *json, size_t len, const char *origin, unsigned flags,
                       struct tools_registry **ret, struct err **err)
{
        if (!origin)
                origin = "tools";
        cJSON *doc;
        char msg[256];
        int jr = json_file_parse(json, len, TOOLS_FILE_MAX, &doc, msg, sizeof(msg));
        if (jr)
                return err_setc(err, jr == JSON_FILE_SYNTAX ? TOOLS_E_SYNTAX : TOOLS_E_IO,
                                jr == JSON_FILE_NOMEM ? ENOMEM : 0, "%s: %s", origin, msg);
        struct tools_registry *reg = calloc(1, sizeof(*reg));
        if (!reg) {
                cJSON_Delete(doc);
                return err_setc(err, TOOLS_E_IO, ENOMEM, "%s", origin);
        }
        struct parser ps = { .origin = origin, .err = err, .no_files = (flags & TOOLS_LOAD_NO_FILES) != 0 };
        int r = parse_doc(&ps, doc, reg);
        cJSON_Delete(doc);
        if (r < 0) {
                tools_free(reg);
                return -1;
        }
        *ret = reg;
        return 0;
}

int tools_load(const char *path, struct tools_registry **ret, struct err **err)
{
        return tools_load_opened(path, 0, 0, 0, ret, err);
}

int tools_load_opened(const char *path, int fd, int errnum, unsigned flags, struct tools_registry **ret,
                      struct err **err)
{
        _cleanup_free_ char *text = NULL;
        size_t len = 0;
        struct err *rerr = NULL;
        if (read_opened(path, fd, errnum, TOOLS_FILE_MAX, &text, &len, &rerr) < 0) {
                int e = rerr ? rerr->errnum : EIO;
                err_free(rerr);
                if (e == EFBIG)
                        return err_setc(err, TOOLS_E_IO, 0, "%s: larger than the 1 MiB limit", path);
                return err_setc(err, TOOLS_E_IO, e, "%s: cannot be read", path);
        }
        return parse_flags(text, len, path, flags, ret, err);
}

char *tools_program(const struct tool_def *t)
{
        const char *prog = t->command[0];
        if (strchr(prog, '/'))
                return strdup(prog);
        char dirs[] = TOOLS_PATH;
        for (char *save = NULL, *d = strtok_r(dirs, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
                char *p = NULL;
                if (asprintf(&p, "%s/%s", d, prog) >= 0 && is_exec_file(p))
                        return p;
                free(p);
        }
        return NULL;
}

const struct tool_def *tools_find(const struct tools_registry *reg, const char *name)
{
        for (size_t i = 0; reg && name && i < reg->n; i++)
                if (strcmp(reg->tools[i].name, name) == 0)
                        return &reg->tools[i].def;
        return NULL;
}

size_t tools_count(const struct tools_registry *reg)
{
        return reg ? reg->n : 0;
}

const struct tool_def *tools_at(const struct tools_registry *reg, size_t i)
{
        return reg && i < reg->n ? &reg->tools[i].def : NULL;
}

/* ---- the child for a call ---- */

/* A subproc_spec and the storage its pointers use. */
struct owned_spec {
        struct subproc_spec spec;  /* first: tools_spec_free casts back */
        char **argv;
        char **envp;
        char *stdin_buf;
};

void tools_spec_free(struct subproc_spec *spec)
{
        struct owned_spec *o = (struct owned_spec *)spec;
        if (!o)
                return;
        strv_free(o->argv);
        strv_free(o->envp);
        free(o->stdin_buf);
        free(o);
}

static const char *env_lookup(char *const *env, const char *name)
{
        size_t n = strlen(name);
        for (size_t i = 0; env && env[i]; i++)
                if (strncmp(env[i], name, n) == 0 && env[i][n] == '=')
                        return env[i] + n + 1;
        return NULL;
}

int tools_spec(const struct tools_registry *reg, const struct tool_def *t, const char *args,
               const struct tools_host *host, struct subproc_spec **ret, struct err **err)
{
        (void)reg;  /* per-registry settings would come from here */
        if (!t)
                return err_setc(err, TOOLS_E_ARGS, 0, "tool: no such tool");
        const char *self_exe = host ? host->self_exe : NULL;
        if (!self_exe || self_exe[0] != '/')
                return err_setc(err, TOOLS_E_ARGS, 0, "tool %s: the chidori binary's absolute path is needed to "
                                "%s it", t->name, t->sandbox ? "sandbox" : "contain");
        struct owned_spec *o = calloc(1, sizeof(*o));
        if (!o)
                return err_setc(err, TOOLS_E_ARGS, ENOMEM, "tool %s", t->name);
        /* The agent's JSON text as it wrote it, on one line. */
        if (!args)
                args = "{}";
        if (json_validate(args, strlen(args), NULL, NULL, NULL) < 0) {
                free(o);
                return err_setc(err, TOOLS_E_ARGS, 0, "tool %s: the arguments are not JSON text", t->name);
        }
        size_t jl = 0;
        char *json = json_compact((struct json_span){ args, strlen(args) }, &jl);
        if (!json) {
                free(o);
                return err_setc(err, TOOLS_E_ARGS, ENOMEM, "tool %s", t->name);
        }
        o->stdin_buf = malloc(jl + 2);
        if (o->stdin_buf) {
                memcpy(o->stdin_buf, json, jl);
                o->stdin_buf[jl] = '\n';
                o->stdin_buf[jl + 1] = '\0';
        }
        free(json);

        struct strv av = { 0 }, ev = { 0 };
        strv_addf(&ev, "PATH=%s", TOOLS_PATH);
        /* The allowlisted variables: with their values as the run started. */
        for (size_t i = 0; i < t->nenv; i++) {
                const char *v = env_lookup(host->env, t->env[i]);
                if (v)
                        strv_addf(&ev, "%s=%s", t->env[i], v);
        }
        for (size_t i = 0; host->extra_env && host->extra_env[i]; i++)
                strv_addf(&ev, "%s", host->extra_env[i]);
        strv_addf(&av, "%s", self_exe);
        if (t->sandbox) {
                strv_addf(&av, "launch");
                strv_addf(&av, "--quiet");
                strv_addf(&av, "--deadline");
                strv_addf(&av, "%ld", t->timeout_ms);
                for (size_t i = 0; host->launch_opts && host->launch_opts[i]; i++)
                        strv_addf(&av, "%s", host->launch_opts[i]);
                for (size_t i = 0; i < t->nro_bind; i++) {
                        strv_addf(&av, "--ro-bind");
                        strv_addf(&av, "%s", t->ro_bind[i]);
                }
                /* launch passes these into the box by name. */
                for (size_t i = 0; i < t->nenv; i++) {
                        if (!env_lookup(host->env, t->env[i]))
                                continue;
                        strv_addf(&av, "--setenv");
                        strv_addf(&av, "%s", t->env[i]);
                }
        } else {
                strv_addf(&av, "_host-tool");
        }
        strv_addf(&av, "--");
        for (size_t i = 0; i < t->ncommand; i++)
                strv_addf(&av, "%s", t->command[i]);
        o->argv = av.v;
        o->envp = ev.v;
        if (av.failed || ev.failed || !o->stdin_buf) {
                tools_spec_free(&o->spec);
                return err_setc(err, TOOLS_E_ARGS, ENOMEM, "tool %s", t->name);
        }
        o->spec = (struct subproc_spec){
                .argv = o->argv,
                .envp = o->envp,
                .stdin_data = o->stdin_buf,
                .stdin_len = jl + 1,
                .cwd = "/",
                .timeout_ms = t->timeout_ms + (t->sandbox ? TOOLS_LAUNCH_GRACE_MS : 0),
                .max_stdout_bytes = t->max_output_bytes,
                .max_stderr_bytes = TOOLS_STDERR_MAX,
                .kill_grace_ms = t->sandbox ? TOOLS_KILL_GRACE_MS : 0,
        };
        *ret = &o->spec;
        return 0;
}

/* ---- the result ---- */

int tools_parse_output(const char *name, const void *out, size_t len, struct cJSON **ret, struct err **err)
{
        const char *s = out;
        size_t i = 0;
        while (i < len && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r'))
                i++;
        if (i == len)
                return err_setc(err, TOOLS_E_OUTPUT, 0, "tool %s printed nothing on stdout (expected one JSON value)",
                                name);
        _cleanup_free_ char *buf = malloc(len + 1);
        if (!buf)
                return err_setc(err, TOOLS_E_OUTPUT, ENOMEM, "tool %s", name);
        memcpy(buf, s, len);
        buf[len] = '\0';
        /* Carried to the agent as the tool wrote it (whitespace outside
         * strings dropped), never reprinted. */
        struct json_error je;
        if (json_validate(buf, len, NULL, &je, NULL) < 0) {
                size_t line, col;
                json_line_col(buf, len, je.offset, &line, &col);
                return err_setc(err, TOOLS_E_OUTPUT, 0,
                                "tool %s printed invalid JSON on stdout (line %zu, column %zu): %s", name, line, col,
                                je.what);
        }
        cJSON *v = json_cjson_raw((struct json_span){ buf, len });
        if (!v)
                return err_setc(err, TOOLS_E_OUTPUT, ENOMEM, "tool %s", name);
        *ret = v;
        return 0;
}

/* The stderr line to quote, cleaned: control bytes become '?', at most 200
 * bytes, never cutting a UTF-8 sequence. */
static void quote_line(const unsigned char *p, size_t len, char *out, size_t outlen)
{
        const unsigned char *nl = memchr(p, '\n', len);
        size_t end = nl ? (size_t)(nl - p) : len, o = 0;
        if (end > 0 && p[end - 1] == '\r')
                end--;
        size_t max = outlen - 1 < 200 ? outlen - 1 : 200;
        for (; o < end && o < max; o++)
                out[o] = (p[o] < 0x20 || p[o] == 0x7f) ? '?' : (char)p[o];
        if (o < end && (p[o] & 0xc0) == 0x80) {
                while (o > 0 && (p[o - 1] & 0xc0) == 0x80)
                        o--;
                if (o > 0)
                        o--;  /* the lead byte of the cut sequence */
        }
        out[o] = '\0';
}

/* launch's own exit codes: usage, not found, setup, layer missing, deadline,
 * OOM, CPU, blocked syscall. */
static bool is_launch_code(int code)
{
        return code == 2 || code == 70 || code == 78 || code == 124 || code == 127 || code == 137 || code == 152 ||
               code == 159;
}

/* Start of the last line beginning "chidori: " in stderr, or NULL. */
static const unsigned char *last_launch_line(const unsigned char *p, size_t len, size_t *ret_len)
{
        const unsigned char *found = NULL;
        for (size_t i = 0; i < len; i++)
                if ((i == 0 || p[i - 1] == '\n') && len - i >= 9 && memcmp(p + i, "chidori: ", 9) == 0)
                        found = p + i;
        if (found)
                *ret_len = len - (size_t)(found - p);
        return found;
}

int tools_result(const struct tool_def *t, const struct subproc_result *r, struct cJSON **ret, struct err **err)
{
        size_t ll = 0;
        const unsigned char *launch_line = t->sandbox ? last_launch_line(r->err, r->err_len, &ll) : NULL;
        if (r->timed_out ||
            (t->sandbox && r->exited && r->exit_code == 124 && launch_line &&
             memmem(launch_line, ll, "deadline exceeded", 17)))
                return err_setc(err, TOOLS_E_TIMEOUT, 0, "tool %s timed out after %ld ms", t->name, t->timeout_ms);
        if (!r->exited)
                return err_setc(err, TOOLS_E_SIGNAL, 0, "tool %s was killed by signal %d (SIG%s)", t->name, r->signal,
                                sigabbrev_np(r->signal) ? sigabbrev_np(r->signal) : "?");
        if (r->exit_code != 0) {
                char line[256];
                if (launch_line && is_launch_code(r->exit_code))
                        quote_line(launch_line, ll, line, sizeof(line));
                else
                        quote_line(r->err, r->err_len, line, sizeof(line));
                if (line[0])
                        return err_setc(err, TOOLS_E_EXIT, 0, "tool %s exited with status %d: %s", t->name,
                                        r->exit_code, line);
                return err_setc(err, TOOLS_E_EXIT, 0, "tool %s exited with status %d", t->name, r->exit_code);
        }
        if (r->out_truncated)
                return err_setc(err, TOOLS_E_OUTPUT, 0, "tool %s printed more than %zu bytes on stdout", t->name,
                                t->max_output_bytes);
        return tools_parse_output(t->name, r->out, r->out_len, ret, err);
}
