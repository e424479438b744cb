/* effects/net/secrets.c — see secrets.h. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cleanup.h"
#include "common/text.h"
#include "proto/json.h"
#include "common/util.h"
#include "effects/net/secrets.h"

#define PLACEHOLDER "{{secret:"

struct secret_host {
        char *spec;    /* as written */
        char *host;    /* lower case, no trailing dot, no brackets; an IPv6 address in its canonical form */
        long port;     /* 0: any */
};

struct secret {
        char *name;
        char *value;
        size_t value_len;
        struct secret_host *hosts;
        size_t nhosts;
};

struct secrets {
        struct secret *v;
        size_t n;
};

static bool is_name(const char *s, size_t n)
{
        if (n == 0 || n > SECRETS_NAME_MAX)
                return false;
        for (size_t i = 0; i < n; i++) {
                char c = s[i];
                if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
                      c == '-' || c == '.'))
                        return false;
        }
        return true;
}

/* A value goes into a header line: visible ASCII, spaces and tabs inside
 * (no CR, LF, NUL or other control byte: it could split the line; no byte
 * above 0x7E: headers are byte strings and tokens are ASCII). */
static const char *check_value(const char *v, size_t n)
{
        if (n == 0)
                return "is empty";
        if (n > SECRETS_VALUE_MAX)
                return "is longer than 3500 bytes";
        for (size_t i = 0; i < n; i++) {
                unsigned char c = (unsigned char)v[i];
                if ((c < 0x20 && c != '\t') || c > 0x7e)
                        return "holds a control byte or a byte outside ASCII (a header value cannot carry it)";
        }
        if (v[0] == ' ' || v[0] == '\t' || v[n - 1] == ' ' || v[n - 1] == '\t')
                return "begins or ends with white space (a header value would lose it)";
        return NULL;
}

static void wipe_free(char *p, size_t n)
{
        if (!p)
                return;
        explicit_bzero(p, n);
        free(p);
}

void secrets_free(struct secrets *s)
{
        if (!s)
                return;
        for (size_t i = 0; i < s->n; i++) {
                struct secret *x = &s->v[i];
                free(x->name);
                wipe_free(x->value, x->value_len);
                for (size_t k = 0; k < x->nhosts; k++) {
                        free(x->hosts[k].spec);
                        free(x->hosts[k].host);
                }
                free(x->hosts);
        }
        free(s->v);
        free(s);
}

/* ---- hosts ---- */

/* A host as compared: lower case, one trailing dot dropped, brackets
 * dropped, an IPv6 address in inet_ntop's form (so "::1" and "0:0::1"
 * are one). */
static char *host_norm(const char *h, size_t n)
{
        if (n >= 2 && h[0] == '[' && h[n - 1] == ']')
                h++, n -= 2;
        if (n > 1 && h[n - 1] == '.')
                n--;
        char *out = strndup(h, n);
        if (!out)
                return NULL;
        for (char *p = out; *p; p++)
                if (*p >= 'A' && *p <= 'Z')
                        *p = (char)(*p - 'A' + 'a');
        struct in6_addr a6;
        if (strchr(out, ':') && inet_pton(AF_INET6, out, &a6) == 1) {
                char buf[INET6_ADDRSTRLEN];
                if (inet_ntop(AF_INET6, &a6, buf, sizeof(buf))) {
                        free(out);
                        out = strdup(buf);
                }
        }
        return out;
}

static bool host_chars_ok(const char *h, size_t n)
{
        for (size_t i = 0; i < n; i++) {
                char c = h[i];
                if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
                      c == '-' || c == '_' || c == ':'))
                        return false;
        }
        return true;
}

/* HOST[:PORT], "[V6]:PORT", or a bare IPv6 address. */
static int parse_host(const char *spec, struct secret_host *ret, char *why, size_t len)
{
        size_t n = strlen(spec);
        const char *h = spec, *port = NULL;
        size_t hl = n;
        if (n == 0 || n > SECRETS_HOST_MAX) {
                snprintf(why, len, "is empty or longer than %d bytes", SECRETS_HOST_MAX);
                return -1;
        }
        if (strstr(spec, "://") || strchr(spec, '/') || strchr(spec, '@')) {
                snprintf(why, len, "is not HOST[:PORT] (write the host alone, without a scheme, path or user)");
                return -1;
        }
        if (spec[0] == '[') {
                const char *close = strchr(spec, ']');
                if (!close) {
                        snprintf(why, len, "has '[' without ']'");
                        return -1;
                }
                hl = (size_t)(close - spec) + 1;
                if (close[1] == ':')
                        port = close + 2;
                else if (close[1]) {
                        snprintf(why, len, "has text after ']' that is not :PORT");
                        return -1;
                }
                struct in6_addr a6;
                char inner[64] = "";
                size_t il = hl - 2;
                if (il < sizeof(inner))
                        memcpy(inner, spec + 1, il);
                if (il >= sizeof(inner) || inet_pton(AF_INET6, inner, &a6) != 1) {
                        snprintf(why, len, "has brackets around something that is not an IPv6 address");
                        return -1;
                }
        } else {
                const char *c = strchr(spec, ':');
                if (c && !strchr(c + 1, ':')) {
                        hl = (size_t)(c - spec);
                        port = c + 1;
                } else if (c) {
                        struct in6_addr a6;
                        if (inet_pton(AF_INET6, spec, &a6) != 1) {
                                snprintf(why, len, "is not HOST[:PORT] (an IPv6 address with a port is written [ADDR]:PORT)");
                                return -1;
                        }
                }
                if (hl == 0 || !host_chars_ok(h, hl)) {
                        snprintf(why, len, "is not a host name or address");
                        return -1;
                }
                /* Only a full dotted quad is IPv4: "127.1" would be a name
                 * that never matches (libcurl normalises the URL's). */
                bool digits = true;
                for (size_t i = 0; i < hl; i++)
                        digits = digits && ((h[i] >= '0' && h[i] <= '9') || h[i] == '.');
                struct in_addr a4;
                char quad[32] = "";
                if (hl < sizeof(quad))
                        memcpy(quad, h, hl);
                if (digits && (hl >= sizeof(quad) || inet_pton(AF_INET, quad, &a4) != 1)) {
                        snprintf(why, len, "is all digits but not a dotted-quad IPv4 address");
                        return -1;
                }
        }
        long p = 0;
        if (port && (parse_nonneg(port, &p) < 0 || p < 1 || p > 65535)) {
                snprintf(why, len, "has a port that is not a number from 1 to 65535");
                return -1;
        }
        char *norm = host_norm(h, hl), *copy = strdup(spec);
        if (!norm || !copy) {
                free(norm), free(copy);
                snprintf(why, len, "out of memory");
                return -1;
        }
        *ret = (struct secret_host){ .spec = copy, .host = norm, .port = p };
        return 0;
}

/* ---- building the table ---- */

static struct secret *find(const struct secrets *s, const char *name, size_t n)
{
        for (size_t i = 0; s && i < s->n; i++)
                if (strlen(s->v[i].name) == n && memcmp(s->v[i].name, name, n) == 0)
                        return &s->v[i];
        return NULL;
}

int secrets_add(struct secrets **sp, const char *name, const char *value, struct err **err)
{
        if (!is_name(name, strlen(name)))
                return err_setc(err, SECRETS_E_CONFIG, 0,
                                "secret name '%.64s' is not 1 to 64 letters, digits, '_', '-' or '.'", name);
        size_t vl = strlen(value);
        const char *why = check_value(value, vl);
        if (why)
                return err_setc(err, SECRETS_E_CONFIG, 0, "the value of secret '%s' %s", name, why);
        if (!*sp && !(*sp = calloc(1, sizeof(**sp))))
                return err_setc(err, SECRETS_E_CONFIG, ENOMEM, "secrets");
        struct secrets *s = *sp;
        if (find(s, name, strlen(name)))
                return err_setc(err, SECRETS_E_CONFIG, 0, "secret '%s' is declared twice", name);
        if (s->n == SECRETS_MAX)
                return err_setc(err, SECRETS_E_CONFIG, 0, "more than %d secrets", SECRETS_MAX);
        struct secret *v = realloc(s->v, (s->n + 1) * sizeof(*v));
        if (!v)
                return err_setc(err, SECRETS_E_CONFIG, ENOMEM, "secrets");
        s->v = v;
        struct secret *x = &s->v[s->n];
        *x = (struct secret){ .name = strdup(name), .value = strndup(value, vl), .value_len = vl };
        if (!x->name || !x->value) {
                free(x->name);
                wipe_free(x->value, vl);
                return err_setc(err, SECRETS_E_CONFIG, ENOMEM, "secrets");
        }
        s->n++;
        return 0;
}

int secrets_add_host(struct secrets *s, const char *name, const char *host, struct err **err)
{
        struct secret *x = find(s, name, strlen(name));
        if (!x)
                return err_setc(err, SECRETS_E_CONFIG, 0, "a host for secret '%.64s', which is not declared", name);
        if (x->nhosts == SECRETS_HOSTS_MAX)
                return err_setc(err, SECRETS_E_CONFIG, 0, "secret '%s' has more than %d hosts", name,
                                SECRETS_HOSTS_MAX);
        char why[160];
        struct secret_host h;
        if (parse_host(host, &h, why, sizeof(why)) < 0) {
                char clean[96];
                text_sanitize(host, 64, '\'', clean, sizeof(clean));
                return err_setc(err, SECRETS_E_CONFIG, 0, "secret '%s': host '%s' %s", name, clean, why);
        }
        struct secret_host *v = realloc(x->hosts, (x->nhosts + 1) * sizeof(*v));
        if (!v) {
                free(h.spec), free(h.host);
                return err_setc(err, SECRETS_E_CONFIG, ENOMEM, "secrets");
        }
        x->hosts = v;
        x->hosts[x->nhosts++] = h;
        return 0;
}

size_t secrets_count(const struct secrets *s)
{
        return s ? s->n : 0;
}

const char *secrets_name(const struct secrets *s, size_t i)
{
        return s && i < s->n ? s->v[i].name : NULL;
}

const char *secrets_value(const struct secrets *s, size_t i)
{
        return s && i < s->n ? s->v[i].value : NULL;
}

size_t secrets_nhosts(const struct secrets *s, size_t i)
{
        return s && i < s->n ? s->v[i].nhosts : 0;
}

const char *secrets_host(const struct secrets *s, size_t i, size_t k)
{
        return s && i < s->n && k < s->v[i].nhosts ? s->v[i].hosts[k].spec : NULL;
}

/* ---- the file ---- */

struct parser {
        const char *origin, *dir;
        secrets_getenv_fn get;
        struct err **err;
};

static int perr(struct parser *ps, const char *name, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int perr(struct parser *ps, const char *name, const char *fmt, ...)
{
        char msg[512];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        if (!name)
                return err_setc(ps->err, SECRETS_E_CONFIG, 0, "%s: %s", ps->origin, msg);
        char clean[96];
        text_sanitize(name, 64, '"', clean, sizeof(clean));
        return err_setc(ps->err, SECRETS_E_CONFIG, 0, "%s: secret \"%s\": %s", ps->origin, clean, msg);
}

static int unique_keys(struct parser *ps, const cJSON *obj, const char *name)
{
        for (const cJSON *a = obj->child; a; a = a->next)
                for (const cJSON *b = a->next; b; b = b->next)
                        if (strcmp(a->string, b->string) == 0) {
                                char clean[96];
                                text_sanitize(a->string, 64, '"', clean, sizeof(clean));
                                return perr(ps, name, "duplicate key \"%s\"", clean);
                        }
        return 0;
}

/* from_file's value: the file's bytes, one trailing "\n" or "\r\n" dropped. */
static int value_from_file(struct parser *ps, const char *name, const char *path, char **ret)
{
        _cleanup_free_ char *full = NULL;
        if (path[0] != '/' && ps->dir && asprintf(&full, "%s/%s", ps->dir, path) < 0)
                return perr(ps, name, "out of memory");
        char *text = NULL;
        size_t len = 0;
        struct err *e = NULL;
        if (read_file(full ? full : path, SECRETS_VALUE_MAX + 2, &text, &len, &e) < 0) {
                char clean[200];
                text_sanitize(full ? full : path, 160, '\'', clean, sizeof(clean));
                int errnum = e ? e->errnum : EIO;
                err_free(e);
                return perr(ps, name, "from_file '%s' cannot be read (%s)", clean,
                            errnum == EFBIG ? "longer than 3500 bytes" : strerror(errnum));
        }
        if (len && text[len - 1] == '\n')
                text[--len] = '\0';
        if (len && text[len - 1] == '\r')
                text[--len] = '\0';
        if (memchr(text, '\0', len)) {
                wipe_free(text, len);
                return perr(ps, name, "from_file's value holds a NUL byte");
        }
        *ret = text;
        return 0;
}

static int parse_entry(struct parser *ps, const char *name, const cJSON *def, struct secrets **s)
{
        if (!is_name(name, strlen(name)))
                return perr(ps, name, "the name must be 1 to 64 letters, digits, '_', '-' or '.' (it is written "
                                      "{{secret:NAME}} in a header)");
        if (!cJSON_IsObject(def))
                return perr(ps, name, "expected an object {\"from_env\": VAR | \"from_file\": PATH, \"hosts\": "
                                      "[HOST[:PORT], ...]}");
        if (unique_keys(ps, def, name) < 0)
                return -1;
        const cJSON *env = NULL, *file = NULL, *hosts = NULL, *k;
        cJSON_ArrayForEach(k, def)
        {
                if (!strcmp(k->string, "from_env"))
                        env = k;
                else if (!strcmp(k->string, "from_file"))
                        file = k;
                else if (!strcmp(k->string, "hosts"))
                        hosts = k;
                else {
                        char clean[96];
                        text_sanitize(k->string, 64, '"', clean, sizeof(clean));
                        return perr(ps, name, "unknown key \"%s\" (expected from_env or from_file, and hosts)", clean);
                }
        }
        if (!!env == !!file)
                return perr(ps, name, "needs exactly one of from_env and from_file");
        if ((env && (!cJSON_IsString(env) || !env->valuestring[0])) ||
            (file && (!cJSON_IsString(file) || !file->valuestring[0])))
                return perr(ps, name, "%s must be a non-empty string", env ? "from_env" : "from_file");
        if (!cJSON_IsArray(hosts) || cJSON_GetArraySize(hosts) == 0)
                return perr(ps, name, "needs \"hosts\": a non-empty array of HOST[:PORT] strings (where the value "
                                      "may be sent)");
        char *value = NULL;
        size_t vlen = 0;
        if (env) {
                const char *v = ps->get ? ps->get(env->valuestring) : NULL;
                if (!v || !*v) {
                        char clean[96];
                        text_sanitize(env->valuestring, 64, '\'', clean, sizeof(clean));
                        return perr(ps, name, "the environment variable '%s' (from_env) is not set or empty", clean);
                }
                value = strdup(v);
                if (!value)
                        return perr(ps, name, "out of memory");
        } else if (value_from_file(ps, name, file->valuestring, &value) < 0) {
                return -1;
        }
        vlen = strlen(value);
        struct err *e = NULL;
        int r = secrets_add(s, name, value, &e);
        wipe_free(value, vlen);
        if (r < 0) {
                /* Its message names the secret and the problem, not the value. */
                err_setc(ps->err, SECRETS_E_CONFIG, 0, "%s: %s (%s)", ps->origin, err_msg(e),
                         env ? "from_env" : "from_file");
                err_free(e);
                return -1;
        }
        const cJSON *h;
        int i = 0;
        cJSON_ArrayForEach(h, hosts)
        {
                if (!cJSON_IsString(h))
                        return perr(ps, name, "hosts[%d] is not a string", i);
                if (secrets_add_host(*s, name, h->valuestring, &e) < 0) {
                        err_setc(ps->err, SECRETS_E_CONFIG, 0, "%s: %s (hosts[%d]; expected HOST[:PORT], e.g. "
                                                                "api.example.com or 127.0.0.1:8080)",
                                 ps->origin, err_msg(e), i);
                        err_free(e);
                        return -1;
                }
                i++;
        }
        return 0;
}

int secrets_parse(const char *json, size_t len, const char *origin, const char *dir, secrets_getenv_fn get,
                  struct secrets **ret, struct err **err)
{
        if (!origin)
                origin = "secrets";
        cJSON *doc;
        char msg[256];
        int jr = json_file_parse(json, len, SECRETS_FILE_MAX, &doc, msg, sizeof(msg));
        if (jr)
                return err_setc(err, SECRETS_E_CONFIG, jr == JSON_FILE_NOMEM ? ENOMEM : 0, "%s: %s", origin, msg);
        struct parser ps = { .origin = origin, .dir = dir, .get = get, .err = err };
        struct secrets *s = NULL;
        int r = 0;
        if (!cJSON_IsObject(doc))
                r = perr(&ps, NULL, "expected an object of secrets, {\"NAME\": {\"from_env\": \"VAR\", \"hosts\": "
                                    "[\"api.example.com\"]}}");
        else
                r = unique_keys(&ps, doc, NULL);
        const cJSON *def;
        if (r == 0)
                cJSON_ArrayForEach(def, doc)
                {
                        if ((r = parse_entry(&ps, def->string, def, &s)) < 0)
                                break;
                }
        cJSON_Delete(doc);
        if (r < 0) {
                secrets_free(s);
                return -1;
        }
        if (!s && !(s = calloc(1, sizeof(*s))))
                return err_setc(err, SECRETS_E_CONFIG, ENOMEM, "%s", origin);
        *ret = s;
        return 0;
}

int secrets_load(const char *path, secrets_getenv_fn get, struct secrets **ret, struct err **err)
{
        char *text = NULL;
        size_t len = 0;
        struct err *e = NULL;
        if (read_file(path, SECRETS_FILE_MAX, &text, &len, &e) < 0) {
                int errnum = e ? e->errnum : EIO;
                err_free(e);
                if (errnum == EFBIG)
                        return err_setc(err, SECRETS_E_CONFIG, 0, "%s: larger than the 1 MiB limit", path);
                return err_setc(err, SECRETS_E_CONFIG, errnum, "%s: cannot be read", path);
        }
        _cleanup_free_ char *dir = strdup(path);
        char *slash = dir ? strrchr(dir, '/') : NULL;
        if (slash)
                slash[slash == dir ? 1 : 0] = '\0';
        int r = secrets_parse(text, len, path, slash ? dir : NULL, get, ret, err);
        wipe_free(text, len);
        return r;
}

/* ---- substitution ---- */

bool secrets_has_placeholder(const char *value)
{
        return value && strstr(value, PLACEHOLDER) != NULL;
}

static bool host_matches(const struct secret *x, const char *host, long port)
{
        _cleanup_free_ char *h = host_norm(host, strlen(host));
        if (!h)
                return false;
        for (size_t k = 0; k < x->nhosts; k++)
                if (strcmp(x->hosts[k].host, h) == 0 && (x->hosts[k].port == 0 || x->hosts[k].port == port))
                        return true;
        return false;
}

static void hosts_text(const struct secret *x, char *buf, size_t len)
{
        size_t off = 0;
        buf[0] = '\0';
        for (size_t k = 0; k < x->nhosts && off < len; k++) {
                int w = snprintf(buf + off, len - off, "%s%s", k ? ", " : "", x->hosts[k].spec);
                if (w < 0)
                        break;
                off += (size_t)w;
        }
}

/* One placeholder at p (after "{{secret:"): its name's length, or 0 when
 * it is not NAME}}. */
static size_t name_len(const char *p)
{
        size_t n = 0;
        while (is_name(p + n, 1))
                n++;
        return n > 0 && n <= SECRETS_NAME_MAX && p[n] == '}' && p[n + 1] == '}' ? n : 0;
}

int secrets_fill(const struct secrets *s, const char *header, const char *value, const char *url, const char *host,
                 long port, secrets_gate_fn gate, void *gate_arg, char **ret, struct err **err)
{
        char hclean[96], host_clean[300];
        text_sanitize(header, 64, '\'', hclean, sizeof(hclean));
        text_sanitize(host, 255, '\'', host_clean, sizeof(host_clean));
        /* First pass: every placeholder checked, the length counted. */
        size_t out_len = 0;
        const char *p = value;
        for (const char *q; (q = strstr(p, PLACEHOLDER));) {
                out_len += (size_t)(q - p);
                const char *nm = q + strlen(PLACEHOLDER);
                size_t nl = name_len(nm);
                if (!nl)
                        return err_setc(err, SECRETS_E_SYNTAX, 0,
                                        "header '%s' has a malformed secret placeholder (expected {{secret:NAME}}, "
                                        "NAME of letters, digits, '_', '-' or '.')",
                                        hclean);
                char name[SECRETS_NAME_MAX + 1];
                memcpy(name, nm, nl);
                name[nl] = '\0';
                char msg[1024];
                if (gate && !gate(gate_arg, name, url, msg, sizeof(msg)))
                        return err_setc(err, SECRETS_E_POLICY, 0, "%s", msg);
                const struct secret *x = find(s, name, nl);
                if (!x)
                        return err_setc(err, SECRETS_E_UNKNOWN, 0,
                                        "secret '%s' is not declared (the operator declares secrets with --secrets "
                                        "FILE)",
                                        name);
                if (!host_matches(x, host, port)) {
                        char hosts[512];
                        hosts_text(x, hosts, sizeof(hosts));
                        return err_setc(err, SECRETS_E_HOST, 0,
                                        "secret '%s' may not be sent to host '%s' port %ld (it is declared for %s); "
                                        "the request was not sent there",
                                        name, host_clean, port, hosts);
                }
                out_len += x->value_len;
                p = nm + nl + 2;
        }
        out_len += strlen(p);
        char *out = malloc(out_len + 1), *o = out;
        if (!out)
                return err_setc(err, SECRETS_E_CONFIG, ENOMEM, "secrets");
        p = value;
        for (const char *q; (q = strstr(p, PLACEHOLDER));) {
                memcpy(o, p, (size_t)(q - p));
                o += q - p;
                const char *nm = q + strlen(PLACEHOLDER);
                size_t nl = name_len(nm);
                const struct secret *x = find(s, nm, nl);
                memcpy(o, x->value, x->value_len);
                o += x->value_len;
                p = nm + nl + 2;
        }
        size_t rest = strlen(p);
        memcpy(o, p, rest);
        o[rest] = '\0';
        *ret = out;
        return 0;
}
