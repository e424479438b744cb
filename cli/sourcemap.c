/* cli/sourcemap.c — map positions in an esbuild bundle back to the
 * agent's own files (source map revision 3), so an error in a TypeScript or
 * ES-module agent names the line the user wrote, not a line of the bundle.
 *
 * The map comes from esbuild, run by this launcher on the operator's side;
 * it is still parsed with limits (size, number of sources, values that fit
 * in 31 bits) and a malformed map only means positions stay unmapped.
 *
 * Lookups are rare (one error per run, a few dozen frames), so the mappings
 * are not decoded into a table: one pass over the VLQ text answers every
 * position of an error at once, in O(map size) time and O(1) memory. */
#define _GNU_SOURCE
#include <cjson/cJSON.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "common/cleanup.h"

#define SOURCEMAP_MAX_SOURCES 100000

struct sourcemap {
        char *mappings;
        char **sources;  /* relative to the agent's directory; NULL: not the agent's (chidori's entry, shims) */
        size_t nsources;
};

void sourcemap_free(struct sourcemap *m)
{
        if (!m)
                return;
        for (size_t i = 0; i < m->nsources; i++)
                free(m->sources[i]);
        free(m->sources);
        free(m->mappings);
        free(m);
}

static int b64_value(char c)
{
        if (c >= 'A' && c <= 'Z')
                return c - 'A';
        if (c >= 'a' && c <= 'z')
                return c - 'a' + 26;
        if (c >= '0' && c <= '9')
                return c - '0' + 52;
        if (c == '+')
                return 62;
        if (c == '/')
                return 63;
        return -1;
}

int sourcemap_vlq(const char **p, long *ret)
{
        const char *s = *p;
        unsigned long v = 0;
        for (unsigned shift = 0;; shift += 5) {
                int d = b64_value(*s);
                if (d < 0 || shift > 30)
                        return -1;  /* not base64 (or the string ended), or more than 31 bits */
                s++;
                v |= (unsigned long)(d & 31) << shift;
                if (v > (unsigned long)INT_MAX * 2 + 1)
                        return -1;
                if (!(d & 32))
                        break;
        }
        long mag = (long)(v >> 1);
        *ret = (v & 1) ? -mag : mag;
        *p = s;
        return 0;
}

char *sourcemap_join(const char *base, const char *rel)
{
        size_t cap = strlen(base) + strlen(rel) + 3;
        char *out = malloc(cap);
        if (!out)
                return NULL;
        size_t n = 0;
        out[n++] = '/';
        const char *parts[2] = { rel[0] == '/' ? "" : base, rel };
        for (int k = 0; k < 2; k++) {
                const char *s = parts[k];
                while (*s) {
                        while (*s == '/')
                                s++;
                        const char *e = s;
                        while (*e && *e != '/')
                                e++;
                        size_t len = (size_t)(e - s);
                        if (len == 0 || (len == 1 && s[0] == '.')) {
                                /* nothing */
                        } else if (len == 2 && s[0] == '.' && s[1] == '.') {
                                while (n > 1 && out[n - 1] != '/')
                                        n--;
                                if (n > 1)
                                        n--;  /* the slash before the dropped part */
                        } else {
                                if (n > 1)
                                        out[n++] = '/';
                                memcpy(out + n, s, len);
                                n += len;
                        }
                        s = e;
                }
        }
        out[n] = '\0';
        return out;
}

int sourcemap_parse(const char *json, const char *map_dir, const char *agent_dir, struct sourcemap **ret,
                    struct err **err)
{
        cJSON *j = cJSON_Parse(json);
        if (!j)
                return err_set(err, 0, "the source map is not JSON");
        const cJSON *version = cJSON_GetObjectItemCaseSensitive(j, "version");
        const cJSON *sources = cJSON_GetObjectItemCaseSensitive(j, "sources");
        const cJSON *mappings = cJSON_GetObjectItemCaseSensitive(j, "mappings");
        const cJSON *root = cJSON_GetObjectItemCaseSensitive(j, "sourceRoot");
        int rc = 0;
        if (!cJSON_IsNumber(version) || version->valuedouble != 3)
                rc = err_set(err, 0, "the source map is not version 3");
        else if (!cJSON_IsArray(sources) || cJSON_GetArraySize(sources) > SOURCEMAP_MAX_SOURCES)
                rc = err_set(err, 0, "the source map has no \"sources\" array (or more than %d)",
                             SOURCEMAP_MAX_SOURCES);
        else if (!cJSON_IsString(mappings))
                rc = err_set(err, 0, "the source map has no \"mappings\" string");
        else if (root && !cJSON_IsString(root))
                rc = err_set(err, 0, "the source map's \"sourceRoot\" is not a string");
        if (rc < 0) {
                cJSON_Delete(j);
                return rc;
        }
        struct sourcemap *m = calloc(1, sizeof(*m));
        size_t n = (size_t)cJSON_GetArraySize(sources);
        if (m) {
                m->mappings = strdup(mappings->valuestring);
                m->sources = calloc(n ? n : 1, sizeof(char *));
        }
        if (!m || !m->mappings || !m->sources) {
                sourcemap_free(m);
                cJSON_Delete(j);
                return err_set(err, ENOMEM, "source map");
        }
        m->nsources = n;
        size_t dlen = strlen(agent_dir);
        while (dlen > 1 && agent_dir[dlen - 1] == '/')
                dlen--;
        const cJSON *s;
        size_t i = 0;
        cJSON_ArrayForEach(s, sources)
        {
                size_t k = i++;
                if (!cJSON_IsString(s))
                        continue;
                _cleanup_free_ char *rel = NULL;
                if (root && *root->valuestring && asprintf(&rel, "%s/%s", root->valuestring, s->valuestring) < 0)
                        rel = NULL;
                _cleanup_free_ char *abs = sourcemap_join(map_dir, rel ? rel : s->valuestring);
                if (!abs)
                        continue;
                /* Beneath the agent's directory: the agent's own file. */
                if (dlen == 1 && abs[0] == '/' && abs[1])
                        m->sources[k] = strdup(abs + 1);
                else if (strncmp(abs, agent_dir, dlen) == 0 && abs[dlen] == '/' && abs[dlen + 1])
                        m->sources[k] = strdup(abs + dlen + 1);
        }
        cJSON_Delete(j);
        *ret = m;
        return 0;
}

const char *sourcemap_source(const struct sourcemap *m, int index)
{
        return index >= 0 && (size_t)index < m->nsources ? m->sources[index] : NULL;
}

static int cmp_pos(const void *a, const void *b)
{
        const struct sourcemap_pos *x = *(const struct sourcemap_pos *const *)a;
        const struct sourcemap_pos *y = *(const struct sourcemap_pos *const *)b;
        return x->line < y->line ? -1 : x->line > y->line;
}

/* Give each query of one generated line the segment that covers its column:
 * the last one at or before it, else the line's first (a column before the
 * first token of the line). */
static void settle(struct sourcemap_pos **q, size_t nq, const long seg[5], int fields, long seg_col)
{
        for (size_t i = 0; i < nq; i++) {
                struct sourcemap_pos *p = q[i];
                long want = (long)p->col - 1;
                bool better;
                if (p->best_col < 0)
                        better = true;
                else if (p->best_col <= want)
                        better = seg_col <= want && seg_col >= p->best_col;
                else
                        better = seg_col <= want || seg_col < p->best_col;
                if (!better)
                        continue;
                p->best_col = seg_col;
                if (fields >= 4) {
                        p->src = (int)seg[1];
                        p->orig_line = (unsigned)seg[2] + 1;
                        p->orig_col = (unsigned)seg[3] + 1;
                } else {
                        p->src = -1;
                }
        }
}

int sourcemap_lookup(const struct sourcemap *m, struct sourcemap_pos *pos, size_t n, struct err **err)
{
        if (n == 0)
                return 0;
        _cleanup_free_ struct sourcemap_pos **q = calloc(n, sizeof(*q));
        if (!q)
                return err_set(err, ENOMEM, "source map lookup");
        for (size_t i = 0; i < n; i++) {
                pos[i].src = -1;
                pos[i].best_col = -1;
                q[i] = &pos[i];
        }
        qsort(q, n, sizeof(*q), cmp_pos);
        /* seg: generated column, source, original line, original column, name;
         * all but the first are relative to the previous segment anywhere in
         * the map, the first to the previous segment of the same line. */
        long seg[5] = { 0, 0, 0, 0, 0 };
        unsigned line = 1;
        size_t qi = 0;
        const char *p = m->mappings;
        while (qi < n && q[qi]->line < line)
                qi++;
        for (;;) {
                size_t qe = qi;
                while (qe < n && q[qe]->line == line)
                        qe++;
                seg[0] = 0;
                while (*p && *p != ';') {
                        long v[5];
                        int fields = 0;
                        while (*p && *p != ',' && *p != ';') {
                                if (fields == 5 || sourcemap_vlq(&p, &v[fields]) < 0)
                                        return err_set(err, 0, "the source map's mappings are malformed at offset %zu",
                                                       (size_t)(p - m->mappings));
                                fields++;
                        }
                        if (fields != 1 && fields != 4 && fields != 5)
                                return err_set(err, 0, "a source map segment has %d fields (expected 1, 4 or 5)",
                                               fields);
                        for (int f = 0; f < fields; f++) {
                                seg[f] += v[f];
                                if (seg[f] < 0 || seg[f] > INT_MAX)
                                        return err_set(err, 0, "a source map value is out of range");
                        }
                        if (fields >= 4 && (size_t)seg[1] >= m->nsources)
                                return err_set(err, 0, "a source map segment names source %ld of %zu", seg[1],
                                               m->nsources);
                        if (qe > qi)
                                settle(q + qi, qe - qi, seg, fields, seg[0]);
                        if (*p == ',')
                                p++;
                }
                qi = qe;
                if (qi >= n || !*p)
                        break;
                p++;  /* ';' */
                if (line == UINT_MAX)
                        break;
                line++;
                while (qi < n && q[qi]->line < line)
                        qi++;
        }
        return 0;
}

/* ------------------------------------------------------------------ errors */

/* A stack frame "name@file:line:column" or "file:line:column" in the bundle
 * named `bundle`: the offsets of the file and of the numbers. */
static bool parse_frame(const char *l, size_t len, const char *bundle, size_t *ret_file, unsigned *ret_line,
                        unsigned *ret_col)
{
        size_t c2 = len;
        while (c2 > 0 && l[c2 - 1] != ':')
                c2--;
        if (c2 < 2)
                return false;
        size_t c1 = c2 - 1;
        while (c1 > 0 && l[c1 - 1] != ':')
                c1--;
        if (c1 < 1)
                return false;
        size_t blen = strlen(bundle);
        size_t fend = c1 - 1;
        if (fend < blen || memcmp(l + fend - blen, bundle, blen) != 0)
                return false;
        size_t fstart = fend - blen;
        if (fstart > 0 && l[fstart - 1] != '@')
                return false;
        unsigned long nums[2];
        const size_t starts[2] = { c1, c2 }, ends[2] = { c2 - 1, len };
        for (int k = 0; k < 2; k++) {
                if (starts[k] >= ends[k] || ends[k] - starts[k] > 9)
                        return false;
                nums[k] = 0;
                for (size_t i = starts[k]; i < ends[k]; i++) {
                        if (l[i] < '0' || l[i] > '9')
                                return false;
                        nums[k] = nums[k] * 10 + (unsigned long)(l[i] - '0');
                }
        }
        if (nums[0] == 0 || nums[1] == 0)
                return false;
        *ret_file = fstart;
        *ret_line = (unsigned)nums[0];
        *ret_col = (unsigned)nums[1];
        return true;
}

#define MAX_FRAMES 256

struct frame {
        size_t start, len, file;
        bool in_bundle;
};

/* Split the stack `st` into its lines (the last one takes the rest past
 * MAX_FRAMES - 1): those in the bundle get a position to look up, in order,
 * in pos[].  Returns the number of lines; *ret_npos that of positions. */
static size_t split_stack(const char *st, const char *bundle, struct frame *fr, struct sourcemap_pos *pos,
                          size_t *ret_npos)
{
        size_t nf = 0, npos = 0;
        for (const char *p = st; *p;) {
                const char *nl = strchr(p, '\n');
                size_t len = nl ? (size_t)(nl - p) : strlen(p);
                if (nf == MAX_FRAMES - 1)
                        len = strlen(p), nl = NULL;  /* the rest, as it is */
                struct frame *f = &fr[nf++];
                f->start = (size_t)(p - st);
                f->len = len;
                unsigned l, c;
                f->in_bundle = nf < MAX_FRAMES && parse_frame(p, len, bundle, &f->file, &l, &c);
                if (f->in_bundle)
                        pos[npos++] = (struct sourcemap_pos){ .line = l, .col = c };
                p += len + (nl ? 1 : 0);
        }
        *ret_npos = npos;
        return nf;
}

/* The new stack (malloc'd; NULL out of memory): a frame in the bundle names
 * its source position, one in generated code (no source) is dropped.
 * *ret_first: the index in pos[] of the first frame in the agent's files,
 * -1 if none. */
static char *mapped_stack(const struct sourcemap *m, const char *st, const struct frame *fr, size_t nf,
                          const struct sourcemap_pos *pos, size_t npos, int *ret_first)
{
        size_t cap = strlen(st) + 1;
        for (size_t i = 0; i < npos; i++)
                if (sourcemap_source(m, pos[i].src))
                        cap += strlen(sourcemap_source(m, pos[i].src)) + 24;
        char *out = malloc(cap);
        if (!out)
                return NULL;
        size_t o = 0, k = 0;
        int first = -1;
        for (size_t i = 0; i < nf; i++) {
                const struct frame *f = &fr[i];
                const char *src = NULL;
                if (f->in_bundle) {
                        src = sourcemap_source(m, pos[k].src);
                        if (src && first < 0)
                                first = (int)k;
                        k++;
                        if (!src)
                                continue;
                }
                if (o)
                        out[o++] = '\n';
                if (f->in_bundle) {
                        memcpy(out + o, st + f->start, f->file);
                        o += f->file;
                        o += (size_t)snprintf(out + o, cap - o, "%s:%u:%u", src, pos[k - 1].orig_line,
                                              pos[k - 1].orig_col);
                } else {
                        memcpy(out + o, st + f->start, f->len);
                        o += f->len;
                }
        }
        out[o] = '\0';
        *ret_first = first;
        return out;
}

/* Rewrite error.stack, .file, .line and .column of a done frame's error.
 * Frames in generated code (esbuild's helpers, chidori's entry and shims) are
 * dropped, as the prelude drops its own. */
int sourcemap_map_error(const struct sourcemap *m, const char *bundle, cJSON *error, struct err **err)
{
        if (!cJSON_IsObject(error))
                return 0;
        cJSON *stack = cJSON_GetObjectItemCaseSensitive(error, "stack");
        cJSON *file = cJSON_GetObjectItemCaseSensitive(error, "file");
        cJSON *line = cJSON_GetObjectItemCaseSensitive(error, "line");
        cJSON *col = cJSON_GetObjectItemCaseSensitive(error, "column");
        const char *st = cJSON_IsString(stack) ? stack->valuestring : "";
        struct frame fr[MAX_FRAMES];
        struct sourcemap_pos pos[MAX_FRAMES + 1];
        size_t npos;
        size_t nf = split_stack(st, bundle, fr, pos, &npos);
        bool at = cJSON_IsString(file) && strcmp(file->valuestring, bundle) == 0 && cJSON_IsNumber(line) &&
                  cJSON_IsNumber(col) && line->valuedouble >= 1 && line->valuedouble <= UINT_MAX &&
                  col->valuedouble >= 1 && col->valuedouble <= UINT_MAX;
        size_t at_index = npos;
        if (at)
                pos[npos++] = (struct sourcemap_pos){ .line = (unsigned)line->valuedouble,
                                                      .col = (unsigned)col->valuedouble };
        if (npos == 0)
                return 0;
        if (sourcemap_lookup(m, pos, npos, err) < 0)
                return -1;

        int first;
        _cleanup_free_ char *out = mapped_stack(m, st, fr, nf, pos, npos, &first);
        if (!out)
                return err_set(err, ENOMEM, "source map");
        if (cJSON_IsString(stack) && !cJSON_SetValuestring(stack, out))
                return err_set(err, ENOMEM, "source map");
        if (!at)
                return 0;

        /* The error's own position: where it was thrown, else the first
         * frame in the agent's files; none if neither is mapped. */
        const struct sourcemap_pos *where = NULL;
        if (sourcemap_source(m, pos[at_index].src))
                where = &pos[at_index];
        else if (first >= 0)
                where = &pos[first];
        if (!where) {
                cJSON_DeleteItemFromObjectCaseSensitive(error, "file");
                cJSON_DeleteItemFromObjectCaseSensitive(error, "line");
                cJSON_DeleteItemFromObjectCaseSensitive(error, "column");
                return 0;
        }
        if (!cJSON_SetValuestring(file, sourcemap_source(m, where->src)))
                return err_set(err, ENOMEM, "source map");
        cJSON_SetNumberValue(line, where->orig_line);
        cJSON_SetNumberValue(col, where->orig_col);
        return 0;
}
