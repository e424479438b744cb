/* proto/json-cjson.c — cJSON trees from validated JSON text, and raw nodes
 * that carry text through cJSON verbatim.  See json.h.
 *
 * cJSON's own parser is not used on what a worker or a user sends: it
 * rejects `\ud800` (which JSON.stringify writes) and keeps numbers only as
 * doubles that it prints again with %.15g.  Here the text is validated
 * first (json_validate) and the tree is built without recursion, so its
 * depth is bounded only by the validator's limit. */
#define _GNU_SOURCE
#include "proto/json.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A raw node owning `text` (malloc'd, NUL-terminated), or NULL (text freed). */
static cJSON *raw_take(char *text)
{
        if (!text)
                return NULL;
        cJSON *n = cJSON_CreateRaw("");
        if (!n) {
                free(text);
                return NULL;
        }
        cJSON_free(n->valuestring);
        n->valuestring = text;
        return n;
}

cJSON *json_cjson_raw(struct json_span v)
{
        return raw_take(json_compact(v, NULL));
}

cJSON *json_cjson_raw_ref(const char *text)
{
        cJSON *n = cJSON_CreateRaw("");
        if (!n)
                return NULL;
        cJSON_free(n->valuestring);
        n->valuestring = (char *)text;
        n->type |= cJSON_IsReference; /* cJSON_Delete does not free a reference's text */
        return n;
}

cJSON *json_cjson_string(const char *bytes, size_t len, unsigned flags)
{
        /* cJSON escapes what JSON.stringify escapes; it cannot hold a NUL
         * and copies invalid UTF-8 as it is. */
        if (!memchr(bytes, '\0', len) && json_utf8_valid(bytes, len)) {
                char *copy = strndup(bytes, len);
                cJSON *n = copy ? cJSON_CreateString("") : NULL;
                if (!n) {
                        free(copy);
                        return NULL;
                }
                cJSON_free(n->valuestring);
                n->valuestring = copy;
                return n;
        }
        return raw_take(json_string_encode(bytes, len, flags, NULL));
}

cJSON *json_cjson_number(double d)
{
        /* cJSON prints a double that equals its int member with %d: exact. */
        if (d >= -2147483648.0 && d <= 2147483647.0 && d == (double)(int)d && !(d == 0 && signbit(d)))
                return cJSON_CreateNumber(d);
        char buf[JSON_NUMBER_MAX];
        json_format_number(d, buf);
        return raw_take(strdup(buf));
}

char *json_cjson_text(const cJSON *node)
{
        if (cJSON_IsRaw(node))
                return strdup(node->valuestring ? node->valuestring : "null");
        return cJSON_PrintUnformatted(node);
}

/* ---- building a tree ---- */

struct builder {
        const char *s;
        size_t len, i;
        cJSON **stack;   /* open containers */
        size_t depth, cap;
        char *key;       /* name of the member whose value comes next (malloc'd) */
        const char *const *raw_members;
        bool raw_children;
};

static bool ws(char c)
{
        return c == ' ' || c == '\n' || c == '\r' || c == '\t';
}

static void skip_ws(struct builder *b)
{
        while (b->i < b->len && ws(b->s[b->i]))
                b->i++;
}

static cJSON *string_node(struct json_span lit)
{
        char *text = NULL;
        if (json_string_decode(lit, JSON_DECODE_REPLACE, &text, NULL) < 0)
                return NULL;
        cJSON *n = cJSON_CreateString("");
        if (!n) {
                free(text);
                return NULL;
        }
        cJSON_free(n->valuestring);
        n->valuestring = text; /* a C string: cut at a NUL it holds */
        return n;
}

static cJSON *number_node(const char *p, size_t n)
{
        char small[64];
        char *buf = n < sizeof(small) ? small : malloc(n + 1);
        if (!buf)
                return NULL;
        memcpy(buf, p, n);
        buf[n] = '\0';
        char *end = NULL;
        double d = strtod(buf, &end);
        bool ok = end == buf + n;
        if (buf != small)
                free(buf);
        return ok ? cJSON_CreateNumber(d) : NULL;
}

/* The member name at b->i (a string literal), then ':' — into b->key. */
static int read_key(struct builder *b)
{
        size_t n = b->i < b->len && b->s[b->i] == '"' ? json_value_len(b->s + b->i, b->len - b->i) : 0;
        if (!n)
                return -1;
        free(b->key);
        b->key = NULL;
        if (json_string_decode((struct json_span){ b->s + b->i, n }, JSON_DECODE_REPLACE, &b->key, NULL) < 0)
                return -1;
        b->i += n;
        skip_ws(b);
        if (b->i >= b->len || b->s[b->i] != ':')
                return -1;
        b->i++;
        skip_ws(b);
        return 0;
}

static bool want_raw(const struct builder *b)
{
        if (b->depth != 1)
                return false;
        if (b->raw_children)
                return true;
        if (!b->key || !b->raw_members || !cJSON_IsObject(b->stack[0]))
                return false;
        for (const char *const *m = b->raw_members; *m; m++)
                if (strcmp(*m, b->key) == 0)
                        return true;
        return false;
}

/* Put node into the open container (or make it the root). */
static int attach(struct builder *b, cJSON **root, cJSON *node)
{
        if (!node)
                return -1;
        if (b->depth == 0) {
                *root = node;
                return 0;
        }
        cJSON *parent = b->stack[b->depth - 1];
        if (cJSON_IsObject(parent)) {
                node->string = b->key; /* the node owns the name now */
                b->key = NULL;
        }
        if (!cJSON_AddItemToArray(parent, node)) {
                cJSON_Delete(node);
                return -1;
        }
        return 0;
}

static int push(struct builder *b, cJSON *node)
{
        if (b->depth == b->cap) {
                size_t cap = b->cap ? b->cap * 2 : 64;
                cJSON **st = realloc(b->stack, cap * sizeof(*st));
                if (!st)
                        return -1;
                b->stack = st;
                b->cap = cap;
        }
        b->stack[b->depth++] = node;
        return 0;
}

static int build(struct builder *b, cJSON **root)
{
        skip_ws(b);
        for (;;) {
                /* A value starts at b->i. */
                if (b->i >= b->len)
                        return -1;
                char c = b->s[b->i];
                bool raw = want_raw(b);
                /* (Measuring a container would read all of it: only a raw one is.) */
                size_t n = raw || (c != '{' && c != '[') ? json_value_len(b->s + b->i, b->len - b->i) : 1;
                if (!n)
                        return -1;
                if (raw) {
                        if (attach(b, root, json_cjson_raw((struct json_span){ b->s + b->i, n })) < 0)
                                return -1;
                        b->i += n;
                } else if (c == '{' || c == '[') {
                        cJSON *node = c == '{' ? cJSON_CreateObject() : cJSON_CreateArray();
                        if (attach(b, root, node) < 0 || push(b, node) < 0)
                                return -1;
                        b->i++;
                        skip_ws(b);
                        if (b->i < b->len && b->s[b->i] == (c == '{' ? '}' : ']')) {
                                b->i++;
                                b->depth--;
                        } else if (c == '{') {
                                if (read_key(b) < 0)
                                        return -1;
                                continue;
                        } else {
                                continue;
                        }
                } else {
                        cJSON *node = c == '"'   ? string_node((struct json_span){ b->s + b->i, n })
                                      : c == 't' ? cJSON_CreateTrue()
                                      : c == 'f' ? cJSON_CreateFalse()
                                      : c == 'n' ? cJSON_CreateNull()
                                                 : number_node(b->s + b->i, n);
                        if (attach(b, root, node) < 0)
                                return -1;
                        b->i += n;
                }
                /* After a value. */
                for (;;) {
                        skip_ws(b);
                        if (b->depth == 0)
                                return b->i == b->len ? 0 : -1;
                        if (b->i >= b->len)
                                return -1;
                        char d = b->s[b->i];
                        if (d == '}' || d == ']') {
                                b->i++;
                                b->depth--;
                                continue;
                        }
                        if (d != ',')
                                return -1;
                        b->i++;
                        skip_ws(b);
                        if (cJSON_IsObject(b->stack[b->depth - 1]) && read_key(b) < 0)
                                return -1;
                        break;
                }
        }
}

cJSON *json_to_cjson(struct json_span v, const char *const *raw_members, bool raw_children)
{
        struct builder b = { .s = v.p, .len = v.len, .raw_members = raw_members, .raw_children = raw_children };
        cJSON *root = NULL;
        int r = build(&b, &root);
        free(b.stack);
        free(b.key);
        if (r < 0) {
                cJSON_Delete(root);
                return NULL;
        }
        return root;
}

/* Line and column (1-based; a tab is one column) of text + off. */
static void line_col(const char *text, size_t off, int *line, int *col)
{
        *line = 1;
        *col = 1;
        for (size_t i = 0; i < off; i++) {
                if (text[i] == '\n') {
                        (*line)++;
                        *col = 1;
                } else if (((unsigned char)text[i] & 0xc0) != 0x80) {
                        (*col)++;
                }
        }
}

int json_file_parse(const char *text, size_t len, size_t max, cJSON **ret, char *msg, size_t msgsz)
{
        *ret = NULL;
        int line, col;
        if (len > max) {
                if (max % (1024 * 1024) == 0)
                        snprintf(msg, msgsz, "larger than the %zu MiB limit (%zu bytes)", max / (1024 * 1024), len);
                else
                        snprintf(msg, msgsz, "larger than the %zu-byte limit (%zu bytes)", max, len);
                return JSON_FILE_TOO_BIG;
        }
        /* A byte-order mark, as editors on some systems write: skipped (columns count after it). */
        if (len >= 3 && memcmp(text, "\xef\xbb\xbf", 3) == 0) {
                text += 3;
                len -= 3;
        }
        const char *nul = memchr(text, '\0', len);
        if (nul) {
                line_col(text, (size_t)(nul - text), &line, &col);
                snprintf(msg, msgsz, "not valid JSON at line %d, column %d (a NUL byte)", line, col);
                return JSON_FILE_SYNTAX;
        }
        struct json_error je;
        if (json_validate(text, len, NULL, &je, NULL) < 0) {
                line_col(text, je.offset <= len ? je.offset : len, &line, &col);
                snprintf(msg, msgsz, "not valid JSON at line %d, column %d: %s", line, col, je.what);
                return JSON_FILE_SYNTAX;
        }
        *ret = json_to_cjson((struct json_span){ text, len }, NULL, false);
        if (!*ret) {
                snprintf(msg, msgsz, "out of memory");
                return JSON_FILE_NOMEM;
        }
        return 0;
}
