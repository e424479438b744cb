/* effects/template/template.c — chidori.template: one pass over the template, appending
 * literal runs and substitutions to a growing buffer capped at
 * TEMPLATE_OUTPUT_MAX.  See template.h and docs/template.md. */
#define _GNU_SOURCE
#include "effects/template/template.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "common/budget.h"
#include "common/cleanup.h"
#include "common/err.h"
#include "common/util.h"
#include "proto/json.h"

#define SHOW_MAX 200  /* bytes of a name quoted in an error message */

enum out_fail {
        OUT_OK,
        OUT_TOO_BIG,   /* would pass TEMPLATE_OUTPUT_MAX */
        OUT_NO_MEM,
        OUT_TOO_DEEP,  /* inserted value nested deeper than TEMPLATE_DEPTH_MAX */
        OUT_INVALID,   /* a cJSON node of no known type */
};

struct out {
        char *p;
        size_t len, cap;  /* cap > len always leaves room for the NUL */
        enum out_fail fail;
};

static void out_freep(struct out *o)
{
        free(o->p);
}
#define _cleanup_out_ __attribute__((cleanup(out_freep)))

static int out_grow(struct out *o, size_t n)
{
        if (n > TEMPLATE_OUTPUT_MAX - o->len) {
                o->fail = OUT_TOO_BIG;
                return -1;
        }
        size_t need = o->len + n + 1;
        if (need <= o->cap)
                return 0;
        size_t cap = o->cap ? o->cap : 256;
        while (cap < need)
                cap *= 2;
        if (cap > TEMPLATE_OUTPUT_MAX + 1)
                cap = TEMPLATE_OUTPUT_MAX + 1;
        char *p = realloc(o->p, cap);
        if (!p) {
                o->fail = OUT_NO_MEM;
                return -1;
        }
        o->p = p;
        o->cap = cap;
        return 0;
}

static int out_put(struct out *o, const char *s, size_t n)
{
        if (n == 0)
                return 0;
        if (out_grow(o, n) < 0)
                return -1;
        memcpy(o->p + o->len, s, n);
        o->len += n;
        return 0;
}

static int out_str(struct out *o, const char *s)
{
        return out_put(o, s, strlen(s));
}

static int out_repeat(struct out *o, char c, size_t n)
{
        if (out_grow(o, n) < 0)
                return -1;
        memset(o->p + o->len, c, n);
        o->len += n;
        return 0;
}

/* A number the way JavaScript's String(x) prints it: 3 is "3", 1e21
 * "1e+21", 0.1 + 0.2 "0.30000000000000004" (proto/json.h). */
static int out_number(struct out *o, double d)
{
        char buf[JSON_NUMBER_MAX];
        size_t n = json_format_number(d, buf);
        return out_put(o, buf, n);
}

/* A JSON string literal as JSON.stringify writes it (proto/json.h): a
 * lone surrogate (WTF-8 from the worker's frame) as \udXXX. */
static int out_json_string(struct out *o, const char *s)
{
        size_t len = strlen(s), n = json_string_encode_to(s, len, JSON_ENCODE_WTF8, NULL);
        if (out_grow(o, n) < 0)
                return -1;
        o->len += json_string_encode_to(s, len, JSON_ENCODE_WTF8, o->p + o->len);
        return 0;
}

/* Compact JSON, as JSON.stringify(v) would give it (numbers included). */
static int out_json(struct out *o, const cJSON *v, int depth)
{
        if (depth > TEMPLATE_DEPTH_MAX) {
                o->fail = OUT_TOO_DEEP;
                return -1;
        }
        if (cJSON_IsFalse(v))
                return out_put(o, "false", 5);
        if (cJSON_IsTrue(v))
                return out_put(o, "true", 4);
        if (cJSON_IsNull(v))
                return out_put(o, "null", 4);
        if (cJSON_IsNumber(v))
                return out_number(o, v->valuedouble);
        if (cJSON_IsString(v))
                return out_json_string(o, v->valuestring ? v->valuestring : "");
        if (cJSON_IsRaw(v))
                return out_str(o, v->valuestring ? v->valuestring : "");
        bool obj = cJSON_IsObject(v);
        if (!obj && !cJSON_IsArray(v)) {
                o->fail = OUT_INVALID;
                return -1;
        }
        if (out_put(o, obj ? "{" : "[", 1) < 0)
                return -1;
        for (const cJSON *c = v->child; c; c = c->next) {
                if (c != v->child && out_put(o, ",", 1) < 0)
                        return -1;
                if (obj && (out_json_string(o, c->string ? c->string : "") < 0 || out_put(o, ":", 1) < 0))
                        return -1;
                if (out_json(o, c, depth + 1) < 0)
                        return -1;
        }
        return out_put(o, obj ? "}" : "]", 1);
}

/* A substituted value: strings verbatim (no HTML escaping, see
 * docs/template.md), everything else as compact JSON. */
static int out_value(struct out *o, const cJSON *v)
{
        if (cJSON_IsString(v))
                return out_str(o, v->valuestring ? v->valuestring : "");
        return out_json(o, v, 0);
}

static bool is_ident_start(char c)
{
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == '$';
}

static bool is_digit(char c)
{
        return c >= '0' && c <= '9';
}

static bool is_space(char c)
{
        return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* [A-Za-z_$][A-Za-z0-9_$]* segments separated by dots; segments after the
 * first may instead be all digits (array indexes). */
static bool is_valid_name(const char *s, size_t n)
{
        size_t i = 0;
        for (bool first = true;; first = false) {
                if (i < n && is_ident_start(s[i])) {
                        for (i++; i < n && (is_ident_start(s[i]) || is_digit(s[i])); i++)
                                ;
                } else if (!first && i < n && is_digit(s[i])) {
                        for (i++; i < n && is_digit(s[i]); i++)
                                ;
                } else {
                        return false;
                }
                if (i == n)
                        return true;
                if (s[i] != '.')
                        return false;
                i++;
        }
}

/* ---- member lookup ----
 * cJSON keeps an object's members and an array's elements in a linked list,
 * so walking to one costs its position: a template repeating {{ big.last }}
 * over an object of n members would cost tags x n.  Instead the first
 * lookup in a container indexes all of it in one pass (objects: a hash
 * table of its members, under a per-process random seed; arrays: a vector),
 * and every later step is O(1).  Probes and indexed members are counted as
 * work against TEMPLATE_WORK_PER_UNIT x (template bytes + members indexed),
 * so not even keys that collide can make a render quadratic. */

struct cindex {
        const cJSON *c;      /* NULL: a free slot of the set */
        const cJSON **tab;   /* objects: open addressing, mask + 1 slots; arrays: the n elements */
        size_t mask, n;
};

struct lookups {
        struct cindex *set;  /* open addressing by container pointer: setmask + 1 slots */
        size_t setmask, nset;
        uint64_t seed;
        uint64_t work, budget;
        bool over_budget, no_mem;
};

static void lookups_free(struct lookups *L)
{
        for (size_t i = 0; L->set && i <= L->setmask; i++)
                free(L->set[i].tab);
        free(L->set);
}

#define _cleanup_lookups_ __attribute__((cleanup(lookups_free)))

static size_t ptr_slot(const void *p, size_t mask)
{
        uint64_t h = (uint64_t)(uintptr_t)p * 0x9e3779b97f4a7c15ull;
        return (size_t)(h ^ (h >> 29)) & mask;
}

/* Count work; false once over the budget. */
static bool spend(struct lookups *L, uint64_t n)
{
        L->work += n;
        if (L->work > L->budget)
                L->over_budget = true;
        return !L->over_budget;
}

static bool same_name(const cJSON *m, const char *seg, size_t len)
{
        return m->string && strncmp(m->string, seg, len) == 0 && m->string[len] == '\0';
}

static size_t count_kids(const cJSON *c)
{
        size_t n = 0;
        for (const cJSON *k = c->child; k; k = k->next)
                n++;
        return n;
}

/* Index container c (an object or an array): one pass over it. */
static struct cindex *index_container(struct lookups *L, const cJSON *c)
{
        if (2 * (L->nset + 1) > L->setmask + 1) {
                size_t nmask = L->set ? 2 * L->setmask + 1 : 15;
                struct cindex *ns = calloc(nmask + 1, sizeof(*ns));
                if (!ns) {
                        L->no_mem = true;
                        return NULL;
                }
                for (size_t i = 0; L->set && i <= L->setmask; i++) {
                        if (!L->set[i].c)
                                continue;
                        size_t s = ptr_slot(L->set[i].c, nmask);
                        while (ns[s].c)
                                s = (s + 1) & nmask;
                        ns[s] = L->set[i];
                }
                free(L->set);
                L->set = ns;
                L->setmask = nmask;
        }
        size_t n = count_kids(c);
        /* Indexing is work too, and each member indexed adds to the budget. */
        L->budget += (uint64_t)TEMPLATE_WORK_PER_UNIT * n;
        if (!spend(L, n))
                return NULL;
        struct cindex ci = { .c = c, .n = n };
        if (cJSON_IsArray(c)) {
                ci.tab = malloc((n ? n : 1) * sizeof(*ci.tab));
                if (!ci.tab) {
                        L->no_mem = true;
                        return NULL;
                }
                size_t i = 0;
                for (const cJSON *k = c->child; k; k = k->next)
                        ci.tab[i++] = k;
        } else {
                size_t cap = 8;
                while (cap < 2 * n)
                        cap *= 2;
                ci.mask = cap - 1;
                ci.tab = calloc(cap, sizeof(*ci.tab));
                if (!ci.tab) {
                        L->no_mem = true;
                        return NULL;
                }
                for (const cJSON *k = c->child; k; k = k->next) {
                        if (!k->string)
                                continue;
                        size_t len = strlen(k->string);
                        size_t s = (size_t)hash_bytes(k->string, len, L->seed) & ci.mask;
                        /* The first of duplicate names wins, as a walk would find it. */
                        bool dup = false;
                        for (; ci.tab[s]; s = (s + 1) & ci.mask) {
                                if (!spend(L, 1)) {
                                        free(ci.tab);
                                        return NULL;
                                }
                                if (same_name(ci.tab[s], k->string, len)) {
                                        dup = true;
                                        break;
                                }
                        }
                        if (!dup)
                                ci.tab[s] = k;
                }
        }
        size_t s = ptr_slot(c, L->setmask);
        while (L->set[s].c)
                s = (s + 1) & L->setmask;
        L->set[s] = ci;
        L->nset++;
        return &L->set[s];
}

static struct cindex *find_index(struct lookups *L, const cJSON *c)
{
        if (L->set)
                for (size_t s = ptr_slot(c, L->setmask); L->set[s].c; s = (s + 1) & L->setmask)
                        if (L->set[s].c == c)
                                return &L->set[s];
        return index_container(L, c);
}

/* One step down a path: an object member named exactly `seg`, or an array
 * element whose canonical decimal index is `seg` ("0", "12"; not "012").
 * NULL when absent, over the budget or out of memory (L says which). */
static const cJSON *child(struct lookups *L, const cJSON *v, const char *seg, size_t len)
{
        bool arr = cJSON_IsArray(v);
        if (!arr && !cJSON_IsObject(v))
                return NULL;
        size_t idx = 0;
        if (arr) {
                if (!is_digit(seg[0]) || (len > 1 && seg[0] == '0') || len > 9)
                        return NULL;  /* 9 digits: more elements than any array we could hold */
                for (size_t i = 0; i < len; i++) {
                        if (!is_digit(seg[i]))
                                return NULL;
                        idx = idx * 10 + (size_t)(seg[i] - '0');
                }
        }
        struct cindex *ci = find_index(L, v);
        if (!ci)
                return NULL;
        if (arr)
                return idx < ci->n ? ci->tab[idx] : NULL;
        for (size_t s = (size_t)hash_bytes(seg, len, L->seed) & ci->mask; ci->tab[s]; s = (s + 1) & ci->mask) {
                if (!spend(L, 1))
                        return NULL;
                if (same_name(ci->tab[s], seg, len))
                        return ci->tab[s];
        }
        return NULL;
}

static const cJSON *lookup(struct lookups *L, const cJSON *vars, const char *name, size_t n)
{
        const cJSON *cur = vars;
        size_t i = 0;
        while (cur) {
                const char *dot = memchr(name + i, '.', n - i);
                size_t end = dot ? (size_t)(dot - name) : n;
                cur = child(L, cur, name + i, end - i);
                if (!dot)
                        return cur;
                i = end + 1;
        }
        return NULL;
}

static size_t count_newlines(const char *s, size_t n)
{
        size_t k = 0;
        for (const char *e = s + n; (s = memchr(s, '\n', (size_t)(e - s))); s++)
                k++;
        return k;
}

static int out_failed(const struct out *o, const char *name, size_t name_len, size_t line, struct err **err)
{
        switch (o->fail) {
        case OUT_TOO_BIG:
                return err_setc(err, TEMPLATE_E_LIMIT, 0,
                               "template: output would exceed %u MiB (line %zu); shorten the template or the values it inserts",
                               TEMPLATE_OUTPUT_MAX / (1024u * 1024u), line);
        case OUT_TOO_DEEP:
                return err_set(err, 0, "template: value of '%.*s' is nested deeper than %d levels (line %zu)",
                               name_len > SHOW_MAX ? SHOW_MAX : (int)name_len, name, TEMPLATE_DEPTH_MAX, line);
        case OUT_INVALID:
                return err_set(err, 0, "template: value of '%.*s' is not a JSON value (line %zu)",
                               name_len > SHOW_MAX ? SHOW_MAX : (int)name_len, name, line);
        case OUT_NO_MEM:
        case OUT_OK:
        default:
                return err_set(err, ENOMEM, "template: cannot grow the output (line %zu)", line);
        }
}

/* Render the tag whose "{{" starts at `open`; on success *ret_next points
 * past its "}}".  `line` is the line of the "{{". */
static int render_tag(struct out *o, struct lookups *L, const char *open, const cJSON *vars, size_t line,
                      const char **ret_next, struct err **err)
{
        const char *body = open + 2;
        /* a plain loop: strstr may measure the whole rest of the template
         * (sanitizer interceptors do), which would make many tags quadratic */
        const char *close = body;
        while (*close && !(close[0] == '}' && close[1] == '}'))
                close++;
        if (!*close)
                return err_set(err, 0,
                               "template: unterminated '{{' (line %zu); close it with '}}', or write '\\{{' for a literal '{{'",
                               line);
        const char *s = body, *e = close;
        while (s < e && is_space(*s))
                s++;
        while (e > s && is_space(e[-1]))
                e--;
        size_t n = (size_t)(e - s), blank = (size_t)(close - body);
        /* names in messages are cut at SHOW_MAX bytes to keep them readable */
        int shown = n > SHOW_MAX ? SHOW_MAX : (int)n;
        const char *more = n > SHOW_MAX ? "..." : "";
        if (n == 0)
                return err_set(err, 0,
                               "template: empty tag '{{%.*s}}' (line %zu); put a variable name inside, e.g. {{ name }}",
                               blank > 16 ? 16 : (int)blank, body, line);
        if (!is_valid_name(s, n))
                return err_set(err, 0,
                               "template: bad variable name '%.*s%s' (line %zu); a name is letters, digits, '_' and '$' in parts joined by dots, e.g. {{ user.name }} or {{ items.0 }}",
                               shown, s, more, line);
        const cJSON *v = lookup(L, vars, s, n);
        if (L->over_budget)
                return err_setc(err, TEMPLATE_E_LIMIT, 0,
                                "template work limit reached (%llu steps at line %zu; the budget is %u per byte of "
                                "template and per member of the objects and arrays it looks into): simplify the "
                                "template or its variables",
                                (unsigned long long)L->work, line, TEMPLATE_WORK_PER_UNIT);
        if (L->no_mem)
                return err_set(err, ENOMEM, "template: cannot index the variables (line %zu)", line);
        if (!v)
                return err_set(err, 0, "template: no variable '%.*s%s' (line %zu)", shown, s, more, line);
        if (out_value(o, v) < 0)
                return out_failed(o, s, n, line, err);
        *ret_next = close + 2;
        return 0;
}

int template_render(const char *tpl, const struct cJSON *vars, char **ret, struct err **err)
{
        return template_render_until(tpl, vars, NULL, ret, err);
}

int template_render_until(const char *tpl, const struct cJSON *vars, const struct budget *budget, char **ret,
                          struct err **err)
{
        if (!tpl)
                return err_set(err, 0, "template: no template given; pass a string");
        if (vars && !cJSON_IsObject(vars))
                return err_set(err, 0, "template: vars must be a JSON object of variables, e.g. { name: 'Ada' }");

        _cleanup_out_ struct out o = { 0 };
        _cleanup_lookups_ struct lookups L = { .seed = hash_seed() };
        size_t line = 1;
        const char *p = tpl;
        L.budget = (uint64_t)TEMPLATE_WORK_PER_UNIT * (strlen(tpl) + 1);

        if (out_grow(&o, 0) < 0)
                return out_failed(&o, "", 0, line, err);
        while (*p) {
                size_t run = strcspn(p, "\\{\n");
                if (out_put(&o, p, run) < 0)
                        return out_failed(&o, "", 0, line, err);
                p += run;
                if (*p == '\0')
                        break;
                int r;
                if (*p == '\n') {
                        line++;
                        r = out_put(&o, "\n", 1);
                        p++;
                } else if (*p == '\\') {
                        /* Backslashes escape only "{{": n of them before it
                         * emit n/2, and an odd one makes the "{{" literal.
                         * An even run leaves p on the "{{" for the next turn. */
                        size_t n = strspn(p, "\\");
                        bool tag = p[n] == '{' && p[n + 1] == '{';
                        r = out_repeat(&o, '\\', tag ? n / 2 : n);
                        p += n;
                        if (r == 0 && tag && n % 2 == 1) {
                                r = out_put(&o, "{{", 2);
                                p += 2;
                        }
                } else if (p[1] == '{') {
                        /* A tag can walk a long array or object: look at
                         * the clock before each one. */
                        if (budget_check(budget, "template", err) < 0)
                                return -1;
                        const char *next = NULL;
                        if (render_tag(&o, &L, p, vars, line, &next, err) < 0)
                                return -1;
                        line += count_newlines(p, (size_t)(next - p));
                        p = next;
                        r = 0;
                } else {
                        r = out_put(&o, "{", 1);
                        p++;
                }
                if (r < 0)
                        return out_failed(&o, "", 0, line, err);
        }
        o.p[o.len] = '\0';
        *ret = take_ptr(&o.p);
        return 0;
}
