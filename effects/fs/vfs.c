/* effects/fs/vfs.c — the in-memory filesystem behind node:fs (contract in vfs.h).
 *
 * A tree of nodes in heap memory.  Directories keep their entries in an
 * unordered array (removal swaps the last entry in; readdir sorts a copy);
 * lookups go through one hash table keyed by (parent inode, name), so every
 * step of a path is O(1) however wide a directory grows.  Walks of a subtree
 * (rm -r, the depth check of rename) are iterative: a deep tree cannot
 * exhaust the stack whatever limits were configured.
 *
 * Every operation checks everything first (paths, kinds, limits) and
 * allocates what it needs before the first change, so a failure, ENOMEM
 * included, leaves the tree as it was.
 */
#define _GNU_SOURCE
#include "effects/fs/vfs.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cleanup.h"
#include "common/err.h"
#include "common/text.h"
#include "common/util.h"

enum node_type { NODE_FILE, NODE_DIR };

struct node {
        struct node *parent; /* NULL for "/" */
        struct node *hnext;  /* hash chain */
        char *name;          /* not NUL-free in theory: compare with name_len */
        size_t name_len;
        uint64_t ino;
        enum node_type type;
        unsigned mode;       /* permission bits only */
        uint64_t mtime, ctime, btime;
        unsigned char *data; /* file */
        size_t len, cap;
        struct node **kids;  /* directory, unordered */
        size_t nkids, kcap;
        size_t idx;          /* position in parent->kids */
};

struct vfs {
        struct vfs_limits lim;
        struct node *root;
        struct node **buckets; /* nbuckets is a power of two */
        size_t nbuckets;
        size_t nnodes;
        size_t used;           /* charged bytes, see vfs.h */
        uint64_t clock;        /* logical time */
        uint64_t next_ino;
        uint64_t seed;         /* of the name hash */
};

#define UMASK 022u
#define QUOTE_MAX 200
#define S_IFREG_ 0100000u
#define S_IFDIR_ 0040000u

/* ---- errors ----------------------------------------------------------- */

static const struct {
        int code;
        const char *name, *desc;
} ERRORS[] = {
        { ENOENT, "ENOENT", "no such file or directory" },
        { EEXIST, "EEXIST", "file already exists" },
        { ENOTDIR, "ENOTDIR", "not a directory" },
        { EISDIR, "EISDIR", "illegal operation on a directory" },
        { ENOTEMPTY, "ENOTEMPTY", "directory not empty" },
        { EINVAL, "EINVAL", "invalid argument" },
        { ENOSPC, "ENOSPC", "no space left on device" },
        { EFBIG, "EFBIG", "file too large" },
        { ENAMETOOLONG, "ENAMETOOLONG", "name too long" },
        { EBUSY, "EBUSY", "resource busy or locked" },
        { EACCES, "EACCES", "permission denied" },
        { ENOSYS, "ENOSYS", "function not implemented" },
        { ENOMEM, "ENOMEM", "not enough memory" },
};

const char *vfs_error_name(int code)
{
        for (size_t i = 0; i < ARRAY_SIZE(ERRORS); i++)
                if (ERRORS[i].code == code)
                        return ERRORS[i].name;
        return "";
}

static const char *error_desc(int code)
{
        for (size_t i = 0; i < ARRAY_SIZE(ERRORS); i++)
                if (ERRORS[i].code == code)
                        return ERRORS[i].desc;
        return "unknown error";
}


/* What an operation is doing, for its error messages. */
struct opctx {
        const char *syscall;
        const char *p1, *p2; /* p2 NULL unless two paths */
        size_t l1, l2;
};

/* "<CODE>: <description>, <syscall> '<p1>'[ -> '<p2>']" with code as
 * err->code.  Returns -1. */
static int fail_as(struct err **err, int code, const struct opctx *c, const char *syscall)
{
        char q1[QUOTE_MAX], q2[QUOTE_MAX];
        if (c->p2)
                return err_setc(err, code, 0, "%s: %s, %s '%s' -> '%s'", vfs_error_name(code), error_desc(code),
                                syscall, text_quote(c->p1, c->l1, q1, QUOTE_MAX), text_quote(c->p2, c->l2, q2, QUOTE_MAX));
        return err_setc(err, code, 0, "%s: %s, %s '%s'", vfs_error_name(code), error_desc(code), syscall,
                        text_quote(c->p1, c->l1, q1, QUOTE_MAX));
}

static int fail(struct err **err, int code, const struct opctx *c)
{
        return fail_as(err, code, c, c->syscall);
}

/* Malformed args: the worker's fault, never the agent's (engine/fs.js
 * checks types first). */
__attribute__((format(printf, 3, 4))) static int bad_args(struct err **err, const char *op, const char *fmt, ...)
{
        char why[160];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(why, sizeof(why), fmt, ap);
        va_end(ap);
        return err_setc(err, EINVAL, 0, "EINVAL: invalid argument, fs.%s: %s", op, why);
}

/* ---- paths ------------------------------------------------------------ */

struct span {
        const char *p;
        size_t len;
};

struct vpath {
        struct span *comp; /* normalised components, pointing into the raw path */
        size_t n;
        bool dir_only;     /* ended in '/', '.' or '..': must be a directory */
};

static void vpath_done(struct vpath *p)
{
        free(p->comp);
        p->comp = NULL;
}
#define _cleanup_vpath_ __attribute__((cleanup(vpath_done)))

/* Split and normalise `len` bytes of `s` (see vfs.h).  On success p->comp
 * is malloc'd (free with vpath_done). */
static int parse_path(const struct vfs *v, const char *s, size_t len, const struct opctx *c, struct vpath *p,
                      struct err **err)
{
        p->comp = NULL;
        p->n = 0;
        p->dir_only = false;
        if (memchr(s, '\0', len))
                return fail(err, EINVAL, c);
        if (len == 0)
                return fail(err, ENOENT, c);
        if (len > v->lim.max_path)
                return fail(err, ENAMETOOLONG, c);
        p->comp = malloc((len / 2 + 1) * sizeof(*p->comp));
        if (!p->comp)
                return fail(err, ENOMEM, c);
        for (size_t i = 0; i < len;) {
                size_t j = i;
                while (j < len && s[j] != '/')
                        j++;
                struct span comp = { s + i, j - i };
                i = j + 1;
                if (comp.len == 0 || (comp.len == 1 && comp.p[0] == '.'))
                        continue;
                if (comp.len == 2 && comp.p[0] == '.' && comp.p[1] == '.') {
                        if (p->n)
                                p->n--; /* clamps at the root */
                        continue;
                }
                if (comp.len > v->lim.max_name) {
                        vpath_done(p);
                        return fail(err, ENAMETOOLONG, c);
                }
                p->comp[p->n++] = comp;
        }
        /* "x/", "x/." and "x/.." name directories */
        const char *b = s + len;
        while (b > s && b[-1] != '/')
                b--;
        size_t last = len - (size_t)(b - s);
        p->dir_only = last == 0 || (last == 1 && b[0] == '.') || (last == 2 && b[0] == '.' && b[1] == '.');
        if (p->n > v->lim.max_depth) {
                vpath_done(p);
                return fail(err, ENAMETOOLONG, c);
        }
        return 0;
}

int vfs_check_path(const struct vfs *v, const char *path, size_t len, const char *syscall, struct err **err)
{
        if (!path)
                return err_setc(err, EINVAL, 0, "EINVAL: invalid argument, %s: no path", syscall);
        struct opctx c = { .syscall = syscall, .p1 = path, .l1 = len };
        struct vpath p;
        if (parse_path(v, path, len, &c, &p, err) < 0)
                return -1;
        vpath_done(&p);
        return 0;
}

/* ---- the node table --------------------------------------------------- */

/* The agent picks the names: under a seed it cannot know (random per
 * process), it cannot pile its files into one chain and make every lookup
 * walk all of them. */
static uint64_t hash(const struct vfs *v, uint64_t parent_ino, const char *name, size_t len)
{
        return hash_bytes(name, len, v->seed ^ (parent_ino * 0x9e3779b97f4a7c15ull));
}

static struct node **bucket_of(const struct vfs *v, const struct node *parent, const char *name, size_t len)
{
        return &v->buckets[hash(v, parent->ino, name, len) & (v->nbuckets - 1)];
}

static struct node *child(const struct vfs *v, const struct node *dir, const char *name, size_t len)
{
        for (struct node *n = *bucket_of(v, dir, name, len); n; n = n->hnext)
                if (n->parent == dir && n->name_len == len && memcmp(n->name, name, len) == 0)
                        return n;
        return NULL;
}

static void hash_insert(struct vfs *v, struct node *n)
{
        struct node **b = bucket_of(v, n->parent, n->name, n->name_len);
        n->hnext = *b;
        *b = n;
}

static void hash_remove(struct vfs *v, struct node *n)
{
        for (struct node **pp = bucket_of(v, n->parent, n->name, n->name_len); *pp; pp = &(*pp)->hnext)
                if (*pp == n) {
                        *pp = n->hnext;
                        return;
                }
}

/* Double the table when it is full.  Best effort: without memory the
 * chains just grow longer. */
static void maybe_grow(struct vfs *v)
{
        if (v->nnodes < v->nbuckets || v->nbuckets > SIZE_MAX / 4 / sizeof(*v->buckets))
                return;
        size_t nb = v->nbuckets * 2;
        struct node **b = calloc(nb, sizeof(*b));
        if (!b)
                return;
        struct node **old = v->buckets;
        size_t on = v->nbuckets;
        v->buckets = b;
        v->nbuckets = nb;
        for (size_t i = 0; i < on; i++)
                for (struct node *n = old[i], *next; n; n = next) {
                        next = n->hnext;
                        hash_insert(v, n);
                }
        free(old);
}

static size_t node_cost(size_t name_len)
{
        return VFS_NODE_COST + name_len;
}

/* Room for one more entry in dir (so linking cannot fail later). */
static int reserve_kid(struct node *dir)
{
        if (dir->nkids < dir->kcap)
                return 0;
        size_t cap = dir->kcap ? dir->kcap * 2 : 4;
        struct node **k = reallocarray(dir->kids, cap, sizeof(*k));
        if (!k)
                return -ENOMEM;
        dir->kids = k;
        dir->kcap = cap;
        return 0;
}

static void link_kid(struct vfs *v, struct node *dir, struct node *n)
{
        n->parent = dir;
        n->idx = dir->nkids;
        dir->kids[dir->nkids++] = n;
        hash_insert(v, n);
}

static void unlink_kid(struct vfs *v, struct node *n)
{
        struct node *dir = n->parent;
        hash_remove(v, n);
        struct node *last = dir->kids[--dir->nkids];
        dir->kids[n->idx] = last;
        last->idx = n->idx;
}

/* A new, unlinked node; the caller has checked the limits and links it. */
static struct node *node_new(struct vfs *v, const char *name, size_t len, enum node_type type, unsigned mode)
{
        struct node *n = calloc(1, sizeof(*n));
        if (!n)
                return NULL;
        n->name = malloc(len + 1);
        if (!n->name) {
                free(n);
                return NULL;
        }
        memcpy(n->name, name, len);
        n->name[len] = '\0';
        n->name_len = len;
        n->type = type;
        n->mode = mode & 07777;
        n->ino = v->next_ino++;
        return n;
}

static void node_free(struct node *n)
{
        if (!n)
                return;
        free(n->name);
        free(n->data);
        free(n->kids);
        free(n);
}

/* Create and link a node under dir (reserve_kid done, limits checked).
 * Charges it.  NULL on ENOMEM, nothing changed. */
static struct node *add_node(struct vfs *v, struct node *dir, const char *name, size_t len, enum node_type type,
                             unsigned mode, uint64_t now)
{
        struct node *n = node_new(v, name, len, type, mode);
        if (!n)
                return NULL;
        n->mtime = n->ctime = n->btime = now;
        link_kid(v, dir, n);
        v->nnodes++;
        v->used += node_cost(len);
        dir->mtime = dir->ctime = now;
        maybe_grow(v);
        return n;
}

/* Pre-order successor of n inside the subtree of top (NULL when done);
 * *depth follows the level relative to top. */
static struct node *next_in(struct node *n, const struct node *top, size_t *depth)
{
        if (n->type == NODE_DIR && n->nkids) {
                (*depth)++;
                return n->kids[0];
        }
        while (n != top) {
                struct node *p = n->parent;
                if (n->idx + 1 < p->nkids)
                        return p->kids[n->idx + 1];
                n = p;
                (*depth)--;
        }
        return NULL;
}

/* Levels below n (0 for a file or an empty directory). */
static size_t height(struct node *n)
{
        size_t d = 0, max = 0;
        for (struct node *m = n; m; m = next_in(m, n, &d))
                if (d > max)
                        max = d;
        return max;
}

static size_t depth_of(const struct node *n)
{
        size_t d = 0;
        for (; n->parent; n = n->parent)
                d++;
        return d;
}

/* Unlink top from its parent and free it with everything below, uncharging
 * all of it.  Post-order, always taking the last entry, so no stack. */
static void destroy(struct vfs *v, struct node *top)
{
        if (top->parent)
                unlink_kid(v, top);
        struct node *n = top;
        for (;;) {
                if (n->type == NODE_DIR && n->nkids) {
                        n = n->kids[n->nkids - 1];
                        continue;
                }
                struct node *p = n->parent;
                v->used -= node_cost(n->name_len) + n->len;
                v->nnodes--;
                if (n == top) {
                        node_free(n);
                        return;
                }
                hash_remove(v, n);
                p->nkids--;
                node_free(n);
                n = p;
        }
}

/* Walk every component but the last.  n == 0: *ret_parent = NULL and
 * *ret_node = "/".  Otherwise *ret_node is the last component or NULL when
 * missing.  -ENOENT / -ENOTDIR when an earlier component is missing / a
 * file. */
static int resolve(const struct vfs *v, const struct vpath *p, struct node **ret_parent, struct node **ret_node)
{
        struct node *d = v->root;
        if (p->n == 0) {
                *ret_parent = NULL;
                *ret_node = d;
                return 0;
        }
        for (size_t i = 0; i + 1 < p->n; i++) {
                struct node *c = child(v, d, p->comp[i].p, p->comp[i].len);
                if (!c)
                        return -ENOENT;
                if (c->type != NODE_DIR)
                        return -ENOTDIR;
                d = c;
        }
        *ret_parent = d;
        *ret_node = child(v, d, p->comp[p->n - 1].p, p->comp[p->n - 1].len);
        return 0;
}

/* An existing node at p, or a failure: missing (ENOENT), a file component
 * (ENOTDIR), a file named with a trailing slash (ENOTDIR). */
static int lookup(const struct vfs *v, const struct vpath *p, struct node **ret, const struct opctx *c,
                  struct err **err)
{
        struct node *parent, *n;
        int r = resolve(v, p, &parent, &n);
        if (r < 0)
                return fail(err, -r, c);
        if (!n)
                return fail(err, ENOENT, c);
        if (n->type == NODE_FILE && p->dir_only)
                return fail(err, ENOTDIR, c);
        *ret = n;
        return 0;
}

static uint64_t tick(struct vfs *v)
{
        return ++v->clock;
}

/* ---- args ------------------------------------------------------------- */

static int arg_str(const cJSON *args, const char *op, const char *key, const char **ret, struct err **err)
{
        const cJSON *j = cJSON_GetObjectItemCaseSensitive(args, key);
        if (!cJSON_IsString(j) || !j->valuestring)
                return bad_args(err, op, "'%s' must be a string", key);
        *ret = j->valuestring;
        return 0;
}

static int arg_bool(const cJSON *args, const char *op, const char *key, bool *ret, struct err **err)
{
        const cJSON *j = cJSON_GetObjectItemCaseSensitive(args, key);
        if (!j || cJSON_IsNull(j)) {
                *ret = false;
                return 0;
        }
        if (!cJSON_IsBool(j))
                return bad_args(err, op, "'%s' must be a boolean", key);
        *ret = cJSON_IsTrue(j);
        return 0;
}

/* An integer in [0, max]; absent or null gives def. */
static int arg_uint(const cJSON *args, const char *op, const char *key, unsigned max, unsigned def, unsigned *ret,
                    struct err **err)
{
        const cJSON *j = cJSON_GetObjectItemCaseSensitive(args, key);
        if (!j || cJSON_IsNull(j)) {
                *ret = def;
                return 0;
        }
        if (!cJSON_IsNumber(j) || !(j->valuedouble >= 0) || j->valuedouble > max ||
            (double)(unsigned)j->valuedouble != j->valuedouble)
                return bad_args(err, op, "'%s' must be an integer from 0 to %u", key, max);
        *ret = (unsigned)j->valuedouble;
        return 0;
}

/* args.<key> as a parsed path; c->p1/l1 (or p2/l2 when second) set to it. */
static int arg_path(const struct vfs *v, const cJSON *args, const char *op, const char *key, struct opctx *c,
                    bool second, struct vpath *ret, struct err **err)
{
        const char *s = NULL;
        if (arg_str(args, op, key, &s, err) < 0)
                return -1;
        if (second) {
                c->p2 = s;
                c->l2 = strlen(s);
                return parse_path(v, s, c->l2, c, ret, err);
        }
        c->p1 = s;
        c->l1 = strlen(s);
        return parse_path(v, s, c->l1, c, ret, err);
}

static int arg_data(const cJSON *args, const char *op, unsigned char **ret, size_t *ret_len, struct err **err)
{
        const char *s = NULL;
        if (arg_str(args, op, "data_base64", &s, err) < 0)
                return -1;
        int r = base64_decode(s, strlen(s), ret, ret_len);
        if (r == -ENOMEM)
                return err_setc(err, ENOMEM, 0, "ENOMEM: not enough memory, fs.%s", op);
        if (r < 0)
                return bad_args(err, op, "'data_base64' is not valid base64");
        return 0;
}

static cJSON *json_or_nomem(cJSON *j, struct err **err, const struct opctx *c)
{
        if (!j)
                fail(err, ENOMEM, c);
        return j;
}

/* ---- files ------------------------------------------------------------ */

/* Write (or append) len bytes at path p: the one body of writeFile,
 * appendFile and copyFile. */
static int put_file(struct vfs *v, const struct vpath *p, const struct opctx *c, const unsigned char *data,
                    size_t len, bool append, bool excl, unsigned mode, struct err **err)
{
        struct node *parent, *n;
        if (p->n == 0)
                return fail(err, EISDIR, c);
        int r = resolve(v, p, &parent, &n);
        if (r < 0)
                return fail(err, -r, c);
        if (n) {
                if (n->type == NODE_DIR)
                        return fail(err, EISDIR, c);
                if (p->dir_only)
                        return fail(err, ENOTDIR, c);
                if (excl)
                        return fail(err, EEXIST, c);
        } else if (p->dir_only) {
                return fail(err, EISDIR, c);
        }

        size_t old = n ? n->len : 0, keep = append ? old : 0;
        if (len > v->lim.max_file_bytes || keep > v->lim.max_file_bytes - len)
                return fail_as(err, EFBIG, c, "write");
        size_t newlen = keep + len;
        size_t add = n ? 0 : node_cost(p->comp[p->n - 1].len);
        if (!n && v->nnodes >= v->lim.max_nodes)
                return fail(err, ENOSPC, c);
        if (v->used - old > v->lim.max_total_bytes || add + newlen > v->lim.max_total_bytes - (v->used - old))
                return fail_as(err, ENOSPC, c, "write");

        unsigned char *buf = NULL;
        size_t cap = newlen;
        if (append && n && newlen <= n->cap) {
                buf = n->data; /* fits in place */
                cap = n->cap;
        } else {
                if (append && n) /* appends grow geometrically, capped at one file's limit */
                        cap = newlen > n->cap / 2 * 3 ? newlen :
                              n->cap / 2 * 3 < v->lim.max_file_bytes ? n->cap / 2 * 3 :
                                                                       v->lim.max_file_bytes;
                buf = malloc(cap ? cap : 1);
                if (!buf)
                        return fail(err, ENOMEM, c);
                if (keep)
                        memcpy(buf, n->data, keep);
        }
        if (!n) {
                if (reserve_kid(parent) < 0) {
                        free(buf);
                        return fail(err, ENOMEM, c);
                }
                n = add_node(v, parent, p->comp[p->n - 1].p, p->comp[p->n - 1].len, NODE_FILE,
                             (mode ? mode : 0666) & ~UMASK, v->clock + 1);
                if (!n) {
                        free(buf);
                        return fail(err, ENOMEM, c);
                }
        }
        if (len)
                memcpy(buf + keep, data, len);
        if (buf != n->data)
                free(n->data);
        n->data = buf;
        n->cap = cap;
        v->used = v->used - old + newlen;
        n->len = newlen;
        n->mtime = n->ctime = tick(v);
        return 0;
}

static int op_read_file(struct vfs *v, const cJSON *args, cJSON **ret, struct err **err)
{
        struct opctx c = { .syscall = "open" };
        _cleanup_vpath_ struct vpath p = { 0 };
        struct node *n;
        if (arg_path(v, args, "readFile", "path", &c, false, &p, err) < 0 || lookup(v, &p, &n, &c, err) < 0)
                return -1;
        if (n->type == NODE_DIR)
                return fail_as(err, EISDIR, &c, "read");
        _cleanup_free_ char *b64 = base64_encode(n->data ? n->data : (const unsigned char *)"", n->len);
        if (!b64)
                return fail(err, ENOMEM, &c);
        cJSON *o = cJSON_CreateObject();
        if (!o || !cJSON_AddStringToObject(o, "data_base64", b64)) {
                cJSON_Delete(o);
                return fail(err, ENOMEM, &c);
        }
        *ret = o;
        return 0;
}

static int write_common(struct vfs *v, const cJSON *args, const char *op, bool append_op, struct err **err)
{
        struct opctx c = { .syscall = "open" };
        _cleanup_vpath_ struct vpath p = { 0 };
        _cleanup_free_ unsigned char *data = NULL;
        size_t len;
        unsigned mode;
        bool append = append_op, excl = false;
        if (arg_path(v, args, op, "path", &c, false, &p, err) < 0 ||
            arg_uint(args, op, "mode", 07777, 0, &mode, err) < 0)
                return -1;
        const cJSON *flag = cJSON_GetObjectItemCaseSensitive(args, "flag");
        if (flag && !cJSON_IsNull(flag)) {
                const char *f = cJSON_IsString(flag) ? flag->valuestring : NULL;
                if (!f)
                        return bad_args(err, op, "'flag' must be a string");
                if (strcmp(f, "w") == 0 || strcmp(f, "wx") == 0 || strcmp(f, "xw") == 0)
                        append = false;
                else if (strcmp(f, "a") == 0 || strcmp(f, "ax") == 0 || strcmp(f, "xa") == 0)
                        append = true;
                else
                        return bad_args(err, op, "'flag' must be one of w, wx, a, ax");
                excl = strchr(f, 'x') != NULL;
        }
        if (arg_data(args, op, &data, &len, err) < 0)
                return -1;
        if (put_file(v, &p, &c, data, len, append, excl, mode, err) < 0)
                return -1;
        return 0;
}

static int op_write_file(struct vfs *v, const cJSON *args, cJSON **ret, struct err **err)
{
        (void)ret; /* answers null */
        return write_common(v, args, "writeFile", false, err);
}

static int op_append_file(struct vfs *v, const cJSON *args, cJSON **ret, struct err **err)
{
        (void)ret; /* answers null */
        return write_common(v, args, "appendFile", true, err);
}

static int op_copy_file(struct vfs *v, const cJSON *args, cJSON **ret, struct err **err)
{
        (void)ret; /* answers null */
        struct opctx c = { .syscall = "copyfile" };
        _cleanup_vpath_ struct vpath from = { 0 };
        _cleanup_vpath_ struct vpath to = { 0 };
        unsigned flags;
        struct node *src, *parent, *dst;
        if (arg_path(v, args, "copyFile", "from", &c, false, &from, err) < 0 ||
            arg_path(v, args, "copyFile", "to", &c, true, &to, err) < 0 ||
            arg_uint(args, "copyFile", "flags", 7, 0, &flags, err) < 0 || lookup(v, &from, &src, &c, err) < 0)
                return -1;
        if (src->type == NODE_DIR)
                return fail(err, EISDIR, &c);
        if (to.n && !to.dir_only && resolve(v, &to, &parent, &dst) == 0 && dst == src) {
                if (flags & 1)
                        return fail(err, EEXIST, &c);
                return 0; /* as libuv: nothing to do */
        }
        if (put_file(v, &to, &c, src->data, src->len, false, flags & 1, src->mode, err) < 0)
                return -1;
        return 0;
}

/* ---- queries ---------------------------------------------------------- */

static int op_exists(struct vfs *v, const cJSON *args, cJSON **ret, struct err **err)
{
        struct opctx c = { .syscall = "access" };
        const char *s = NULL;
        struct vpath p;
        struct node *parent, *n = NULL;
        if (arg_str(args, "exists", "path", &s, err) < 0)
                return -1;
        bool yes = false;
        if (parse_path(v, s, strlen(s), &c, &p, NULL) == 0) {
                yes = resolve(v, &p, &parent, &n) == 0 && n && !(n->type == NODE_FILE && p.dir_only);
                vpath_done(&p);
        }
        return (*ret = json_or_nomem(cJSON_CreateBool(yes), err, &c)) ? 0 : -1;
}

static int op_access(struct vfs *v, const cJSON *args, cJSON **ret, struct err **err)
{
        (void)ret; /* answers null */
        struct opctx c = { .syscall = "access" };
        _cleanup_vpath_ struct vpath p = { 0 };
        unsigned mode;
        struct node *n;
        if (arg_path(v, args, "access", "path", &c, false, &p, err) < 0 ||
            arg_uint(args, "access", "mode", 7, 0, &mode, err) < 0 || lookup(v, &p, &n, &c, err) < 0)
                return -1;
        if (mode & ~(n->mode >> 6) & 7)
                return fail(err, EACCES, &c);
        return 0;
}

static cJSON *stat_json(const struct node *n)
{
        cJSON *o = cJSON_CreateObject();
        bool ok = o && cJSON_AddStringToObject(o, "type", n->type == NODE_DIR ? "dir" : "file") &&
                  cJSON_AddNumberToObject(o, "size", (double)n->len) &&
                  cJSON_AddNumberToObject(o, "mode", (n->type == NODE_DIR ? S_IFDIR_ : S_IFREG_) | n->mode) &&
                  cJSON_AddNumberToObject(o, "ino", (double)n->ino) &&
                  cJSON_AddNumberToObject(o, "nlink", n->type == NODE_DIR ? 2 : 1) &&
                  cJSON_AddNumberToObject(o, "atimeMs", (double)n->mtime) &&
                  cJSON_AddNumberToObject(o, "mtimeMs", (double)n->mtime) &&
                  cJSON_AddNumberToObject(o, "ctimeMs", (double)n->ctime) &&
                  cJSON_AddNumberToObject(o, "birthtimeMs", (double)n->btime);
        if (!ok) {
                cJSON_Delete(o);
                return NULL;
        }
        return o;
}

static int stat_common(struct vfs *v, const cJSON *args, const char *op, cJSON **ret, struct err **err)
{
        struct opctx c = { .syscall = op };
        _cleanup_vpath_ struct vpath p = { 0 };
        struct node *n;
        if (arg_path(v, args, op, "path", &c, false, &p, err) < 0 || lookup(v, &p, &n, &c, err) < 0)
                return -1;
        return (*ret = json_or_nomem(stat_json(n), err, &c)) ? 0 : -1;
}

static int op_stat(struct vfs *v, const cJSON *args, cJSON **ret, struct err **err)
{
        return stat_common(v, args, "stat", ret, err);
}

static int op_lstat(struct vfs *v, const cJSON *args, cJSON **ret, struct err **err)
{
        return stat_common(v, args, "lstat", ret, err);
}

static int by_name(const void *a, const void *b)
{
        const struct node *x = *(struct node *const *)a, *y = *(struct node *const *)b;
        size_t l = x->name_len < y->name_len ? x->name_len : y->name_len;
        int r = memcmp(x->name, y->name, l);
        if (r)
                return r;
        return x->name_len < y->name_len ? -1 : x->name_len > y->name_len;
}

static int op_readdir(struct vfs *v, const cJSON *args, cJSON **ret, struct err **err)
{
        struct opctx c = { .syscall = "scandir" };
        _cleanup_vpath_ struct vpath p = { 0 };
        bool types;
        struct node *n;
        if (arg_path(v, args, "readdir", "path", &c, false, &p, err) < 0 ||
            arg_bool(args, "readdir", "withFileTypes", &types, err) < 0 || lookup(v, &p, &n, &c, err) < 0)
                return -1;
        if (n->type != NODE_DIR)
                return fail(err, ENOTDIR, &c);
        _cleanup_free_ struct node **kids = malloc((n->nkids ? n->nkids : 1) * sizeof(*kids));
        cJSON *a = cJSON_CreateArray();
        if (!kids || !a)
                goto nomem;
        if (n->nkids)
                memcpy(kids, n->kids, n->nkids * sizeof(*kids));
        qsort(kids, n->nkids, sizeof(*kids), by_name);
        for (size_t i = 0; i < n->nkids; i++) {
                cJSON *e;
                if (types) {
                        e = cJSON_CreateObject();
                        if (e && (!cJSON_AddStringToObject(e, "name", kids[i]->name) ||
                                  !cJSON_AddStringToObject(e, "type", kids[i]->type == NODE_DIR ? "dir" : "file"))) {
                                cJSON_Delete(e);
                                e = NULL;
                        }
                } else {
                        e = cJSON_CreateString(kids[i]->name);
                }
                if (!e || !cJSON_AddItemToArray(a, e)) {
                        cJSON_Delete(e);
                        goto nomem;
                }
        }
        *ret = a;
        return 0;
nomem:
        cJSON_Delete(a);
        return fail(err, ENOMEM, &c);
}

/* ---- directories and removal ------------------------------------------ */

/* "/a/b" for the first k components of p; NULL on ENOMEM. */
static char *join(const struct vpath *p, size_t k)
{
        size_t len = 1;
        for (size_t i = 0; i < k; i++)
                len += p->comp[i].len + 1;
        char *s = malloc(len + 1), *o = s;
        if (!s)
                return NULL;
        for (size_t i = 0; i < k; i++) {
                *o++ = '/';
                memcpy(o, p->comp[i].p, p->comp[i].len);
                o += p->comp[i].len;
        }
        if (o == s)
                *o++ = '/';
        *o = '\0';
        return s;
}

static int op_mkdir(struct vfs *v, const cJSON *args, cJSON **ret, struct err **err)
{
        struct opctx c = { .syscall = "mkdir" };
        _cleanup_vpath_ struct vpath p = { 0 };
        bool recursive;
        unsigned mode;
        if (arg_path(v, args, "mkdir", "path", &c, false, &p, err) < 0 ||
            arg_bool(args, "mkdir", "recursive", &recursive, err) < 0 ||
            arg_uint(args, "mkdir", "mode", 07777, 0777, &mode, err) < 0)
                return -1;

        /* the existing prefix */
        struct node *d = v->root;
        size_t i = 0;
        for (; i < p.n; i++) {
                struct node *k = child(v, d, p.comp[i].p, p.comp[i].len);
                if (!k)
                        break;
                if (k->type != NODE_DIR)
                        return fail(err, i + 1 == p.n ? EEXIST : ENOTDIR, &c);
                d = k;
        }
        if (i == p.n) {
                if (!recursive)
                        return fail(err, EEXIST, &c);
                return 0;
        }
        if (!recursive && i + 1 < p.n)
                return fail(err, ENOENT, &c);

        size_t want = p.n - i, cost = 0;
        for (size_t k = i; k < p.n; k++)
                cost += node_cost(p.comp[k].len);
        if (want > v->lim.max_nodes - v->nnodes || cost > v->lim.max_total_bytes - v->used)
                return fail(err, ENOSPC, &c);
        _cleanup_free_ char *first = recursive ? join(&p, i + 1) : NULL;
        if ((recursive && !first) || reserve_kid(d) < 0)
                return fail(err, ENOMEM, &c);

        uint64_t now = v->clock + 1, dm = d->mtime, dc = d->ctime;
        struct node *top = NULL, *base = d;
        for (size_t k = i; k < p.n; k++) {
                struct node *n = k == i || reserve_kid(d) == 0 ?
                                         add_node(v, d, p.comp[k].p, p.comp[k].len, NODE_DIR, mode & ~UMASK, now) :
                                         NULL;
                if (!n) {
                        if (top)
                                destroy(v, top);
                        base->mtime = dm;
                        base->ctime = dc;
                        return fail(err, ENOMEM, &c);
                }
                if (!top)
                        top = n;
                d = n;
        }
        tick(v);
        if (!recursive)
                return 0;
        /* without memory for the string the directories exist all the
         * same: answer null rather than fail after the change */
        *ret = cJSON_CreateString(first);
        return 0;
}

/* Remove n (a file, or a directory with everything in it). */
static void remove_node(struct vfs *v, struct node *n)
{
        struct node *parent = n->parent;
        destroy(v, n);
        parent->mtime = parent->ctime = tick(v);
}

static int op_unlink(struct vfs *v, const cJSON *args, cJSON **ret, struct err **err)
{
        (void)ret; /* answers null */
        struct opctx c = { .syscall = "unlink" };
        _cleanup_vpath_ struct vpath p = { 0 };
        struct node *n;
        if (arg_path(v, args, "unlink", "path", &c, false, &p, err) < 0 || lookup(v, &p, &n, &c, err) < 0)
                return -1;
        if (n->type == NODE_DIR)
                return fail(err, EISDIR, &c);
        remove_node(v, n);
        return 0;
}

static int op_rmdir(struct vfs *v, const cJSON *args, cJSON **ret, struct err **err)
{
        (void)ret; /* answers null */
        struct opctx c = { .syscall = "rmdir" };
        _cleanup_vpath_ struct vpath p = { 0 };
        struct node *n;
        if (arg_path(v, args, "rmdir", "path", &c, false, &p, err) < 0 || lookup(v, &p, &n, &c, err) < 0)
                return -1;
        if (n->type != NODE_DIR)
                return fail(err, ENOTDIR, &c);
        if (n == v->root)
                return fail(err, EBUSY, &c);
        if (n->nkids)
                return fail(err, ENOTEMPTY, &c);
        remove_node(v, n);
        return 0;
}

static int op_rm(struct vfs *v, const cJSON *args, cJSON **ret, struct err **err)
{
        (void)ret; /* answers null */
        struct opctx c = { .syscall = "rm" };
        _cleanup_vpath_ struct vpath p = { 0 };
        bool recursive, force;
        struct node *parent, *n;
        if (arg_path(v, args, "rm", "path", &c, false, &p, err) < 0 ||
            arg_bool(args, "rm", "recursive", &recursive, err) < 0 ||
            arg_bool(args, "rm", "force", &force, err) < 0)
                return -1;
        /* node's rm starts with an lstat; force hides "nothing there" */
        int r = resolve(v, &p, &parent, &n);
        int missing = r < 0 ? -r : !n ? ENOENT : n->type == NODE_FILE && p.dir_only ? ENOTDIR : 0;
        if (missing) {
                if (!force)
                        return fail_as(err, missing, &c, "lstat");
        } else if (n == v->root) {
                return fail(err, EBUSY, &c);
        } else if (n->type == NODE_DIR && !recursive) {
                return fail(err, EISDIR, &c);
        } else {
                remove_node(v, n);
        }
        return 0;
}

static bool is_within(const struct node *n, const struct node *top)
{
        for (; n; n = n->parent)
                if (n == top)
                        return true;
        return false;
}

static int op_rename(struct vfs *v, const cJSON *args, cJSON **ret, struct err **err)
{
        (void)ret; /* answers null */
        struct opctx c = { .syscall = "rename" };
        _cleanup_vpath_ struct vpath from = { 0 };
        _cleanup_vpath_ struct vpath to = { 0 };
        struct node *src, *dparent, *dst;
        if (arg_path(v, args, "rename", "from", &c, false, &from, err) < 0 ||
            arg_path(v, args, "rename", "to", &c, true, &to, err) < 0 || lookup(v, &from, &src, &c, err) < 0)
                return -1;
        if (src == v->root || to.n == 0)
                return fail(err, EBUSY, &c);
        int r = resolve(v, &to, &dparent, &dst);
        if (r < 0)
                return fail(err, -r, &c);
        if (is_within(dparent, src) || dst == src)
                return fail(err, EINVAL, &c);
        if (src->type == NODE_FILE && to.dir_only)
                return fail(err, ENOTDIR, &c);
        if (dst) {
                if (src->type == NODE_DIR && dst->type == NODE_FILE)
                        return fail(err, ENOTDIR, &c);
                if (src->type == NODE_FILE && dst->type == NODE_DIR)
                        return fail(err, EISDIR, &c);
                if (dst->type == NODE_DIR && dst->nkids)
                        return fail(err, ENOTEMPTY, &c);
        }
        if (depth_of(dparent) + 1 + height(src) > v->lim.max_depth)
                return fail(err, ENAMETOOLONG, &c);
        const struct span *name = &to.comp[to.n - 1];
        size_t freed = src->name_len + (dst ? node_cost(dst->name_len) + dst->len : 0);
        if (name->len > freed && name->len - freed > v->lim.max_total_bytes - v->used)
                return fail(err, ENOSPC, &c);
        char *nm = malloc(name->len + 1);
        if (!nm || reserve_kid(dparent) < 0) {
                free(nm);
                return fail(err, ENOMEM, &c);
        }
        memcpy(nm, name->p, name->len);
        nm[name->len] = '\0';

        uint64_t now = tick(v);
        if (dst)
                destroy(v, dst);
        struct node *oldp = src->parent;
        unlink_kid(v, src);
        v->used = v->used - src->name_len + name->len;
        free(src->name);
        src->name = nm;
        src->name_len = name->len;
        link_kid(v, dparent, src);
        src->ctime = now;
        oldp->mtime = oldp->ctime = dparent->mtime = dparent->ctime = now;
        return 0;
}

/* ---- the table -------------------------------------------------------- */

static const struct {
        const char *op;
        int (*fn)(struct vfs *v, const cJSON *args, cJSON **ret, struct err **err);
} OPS[] = {
        { "readFile", op_read_file }, { "writeFile", op_write_file }, { "appendFile", op_append_file },
        { "copyFile", op_copy_file }, { "exists", op_exists },        { "access", op_access },
        { "stat", op_stat },          { "lstat", op_lstat },          { "readdir", op_readdir },
        { "mkdir", op_mkdir },        { "unlink", op_unlink },        { "rmdir", op_rmdir },
        { "rm", op_rm },              { "rename", op_rename },
};

/* An op sets *ret only for a value other than null.  The null answer is
 * allocated before the op runs, so an op that changed the tree cannot then
 * fail for want of memory. */
int vfs_call(struct vfs *v, const char *op, const cJSON *args, cJSON **ret, struct err **err)
{
        if (!op)
                op = "";
        for (size_t i = 0; i < ARRAY_SIZE(OPS); i++) {
                if (strcmp(OPS[i].op, op) != 0)
                        continue;
                if (!cJSON_IsObject(args))
                        return bad_args(err, op, "the arguments must be an object");
                cJSON *value = NULL, *null = cJSON_CreateNull();
                if (!null)
                        return err_setc(err, ENOMEM, 0, "ENOMEM: not enough memory, fs.%s", op);
                if (OPS[i].fn(v, args, &value, err) < 0) {
                        cJSON_Delete(value);
                        cJSON_Delete(null);
                        return -1;
                }
                if (value)
                        cJSON_Delete(null);
                *ret = value ? value : null;
                return 0;
        }
        char q[QUOTE_MAX];
        return err_setc(err, ENOSYS, 0, "ENOSYS: function not implemented, fs.%s", text_quote(op, strlen(op), q, QUOTE_MAX));
}

/* ---- lifetime --------------------------------------------------------- */

static size_t or_default(size_t v, size_t def)
{
        return v ? v : def;
}

int vfs_new(const struct vfs_limits *lim, struct vfs **ret, struct err **err)
{
        struct vfs_limits l = lim ? *lim : (struct vfs_limits){ 0 };
        l.max_total_bytes = or_default(l.max_total_bytes, VFS_DEFAULT_MAX_TOTAL_BYTES);
        l.max_file_bytes = or_default(l.max_file_bytes, VFS_DEFAULT_MAX_FILE_BYTES);
        l.max_nodes = or_default(l.max_nodes, VFS_DEFAULT_MAX_NODES);
        l.max_path = or_default(l.max_path, VFS_DEFAULT_MAX_PATH);
        l.max_name = or_default(l.max_name, VFS_DEFAULT_MAX_NAME);
        l.max_depth = or_default(l.max_depth, VFS_DEFAULT_MAX_DEPTH);
        if (l.max_nodes < 2 || l.max_total_bytes < node_cost(0) + node_cost(3) || l.max_name < 3)
                return err_setc(err, EINVAL, 0, "vfs: the limits leave no room for / and /tmp");

        struct vfs *v = calloc(1, sizeof(*v));
        if (!v)
                return err_setc(err, ENOMEM, ENOMEM, "vfs: creating the filesystem");
        v->lim = l;
        v->next_ino = 1;
        v->seed = hash_seed();
        v->nbuckets = 64;
        v->buckets = calloc(v->nbuckets, sizeof(*v->buckets));
        v->root = node_new(v, "", 0, NODE_DIR, 0755);
        if (!v->buckets || !v->root || reserve_kid(v->root) < 0)
                goto nomem;
        v->nnodes = 1;
        v->used = node_cost(0);
        if (!add_node(v, v->root, "tmp", 3, NODE_DIR, 01777, 0))
                goto nomem;
        *ret = v;
        return 0;
nomem:
        vfs_free(v);
        return err_setc(err, ENOMEM, ENOMEM, "vfs: creating the filesystem");
}

void vfs_free(struct vfs *v)
{
        if (!v)
                return;
        if (v->root)
                destroy(v, v->root);
        free(v->buckets);
        free(v);
}

void vfs_usage(const struct vfs *v, struct vfs_usage *ret)
{
        ret->bytes = v->used;
        ret->nodes = v->nnodes;
}

static uint64_t mix(uint64_t h, const void *p, size_t len)
{
        const unsigned char *b = p;
        for (size_t i = 0; i < len; i++) {
                h ^= b[i];
                h *= 0x100000001b3ull;
        }
        return h;
}

#define MIX(h, x) mix(h, &(x), sizeof(x))

int vfs_verify(const struct vfs *v, uint64_t *ret_digest, struct err **err)
{
        uint64_t h = 0xcbf29ce484222325ull;
        size_t nodes = 0, used = 0, depth = 0;
        h = MIX(h, v->clock);
        for (struct node *n = v->root; n; n = next_in(n, v->root, &depth)) {
                nodes++;
                used += node_cost(n->name_len) + n->len;
                if (depth > v->lim.max_depth)
                        return err_setc(err, EINVAL, 0, "vfs: '%s' at depth %zu", n->name, depth);
                if (n->parent) {
                        if (n->parent->type != NODE_DIR || n->idx >= n->parent->nkids ||
                            n->parent->kids[n->idx] != n)
                                return err_setc(err, EINVAL, 0, "vfs: '%s' is not linked to its parent", n->name);
                        if (child(v, n->parent, n->name, n->name_len) != n)
                                return err_setc(err, EINVAL, 0, "vfs: '%s' is not found by name", n->name);
                        if (n->name_len == 0 || n->name_len > v->lim.max_name || memchr(n->name, '/', n->name_len) ||
                            (n->name_len <= 2 && n->name[0] == '.' && (n->name_len == 1 || n->name[1] == '.')))
                                return err_setc(err, EINVAL, 0, "vfs: bad name '%s'", n->name);
                } else if (n != v->root) {
                        return err_setc(err, EINVAL, 0, "vfs: a second root");
                }
                if (n->type == NODE_FILE && (n->nkids || n->len > n->cap || n->len > v->lim.max_file_bytes))
                        return err_setc(err, EINVAL, 0, "vfs: file '%s' is malformed", n->name);
                if (n->type == NODE_DIR && (n->len || n->nkids > n->kcap))
                        return err_setc(err, EINVAL, 0, "vfs: directory '%s' is malformed", n->name);
                h = MIX(h, depth);
                h = mix(h, n->name, n->name_len + 1);
                h = MIX(h, n->type);
                h = MIX(h, n->mode);
                h = MIX(h, n->mtime);
                h = MIX(h, n->ctime);
                h = MIX(h, n->btime);
                h = MIX(h, n->len);
                if (n->len)
                        h = mix(h, n->data, n->len);
        }
        size_t hashed = 0;
        for (size_t i = 0; i < v->nbuckets; i++)
                for (const struct node *n = v->buckets[i]; n; n = n->hnext)
                        hashed++;
        if (nodes != v->nnodes || hashed + 1 != nodes)
                return err_setc(err, EINVAL, 0, "vfs: %zu nodes in the tree, %zu counted, %zu hashed", nodes,
                                v->nnodes, hashed);
        if (used != v->used)
                return err_setc(err, EINVAL, 0, "vfs: %zu bytes in the tree, %zu charged", used, v->used);
        if (nodes > v->lim.max_nodes || used > v->lim.max_total_bytes)
                return err_setc(err, EINVAL, 0, "vfs: over the limits (%zu nodes, %zu bytes)", nodes, used);
        if (ret_digest)
                *ret_digest = h;
        return 0;
}
