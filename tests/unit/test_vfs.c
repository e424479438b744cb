/* tests/unit/test_vfs.c — effects/fs/vfs.c: the in-memory filesystem of node:fs.
 *
 * Each test gets a fresh VFS (V); tests of the limits make their own.
 * Calls go through vfs_call with args written as JSON text, as the broker
 * would receive them, and errors are checked by code and, where node's
 * wording matters, by the whole message.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "common/err.h"
#include "common/util.h"
#include "effects/fs/vfs.h"

static struct vfs *V;

static int setup(void **state)
{
        (void)state;
        struct err *e = NULL;
        if (vfs_new(NULL, &V, &e) < 0) {
                fprintf(stderr, "vfs_new: %s\n", err_msg(e));
                err_free(e);
                return -1;
        }
        return 0;
}

static void verify(struct vfs *v, uint64_t *ret_digest)
{
        struct err *e = NULL;
        if (vfs_verify(v, ret_digest, &e) < 0)
                fail_msg("%s", err_msg(e));
}

static int teardown(void **state)
{
        (void)state;
        verify(V, NULL);
        vfs_free(V);
        V = NULL;
        return 0;
}

static struct vfs *new_vfs(const struct vfs_limits *lim)
{
        struct vfs *v = NULL;
        struct err *e = NULL;
        if (vfs_new(lim, &v, &e) < 0)
                fail_msg("vfs_new: %s", err_msg(e));
        return v;
}

/* ---- helpers ------------------------------------------------------------ */

__attribute__((format(printf, 5, 0))) static int vcall(struct vfs *v, const char *op, cJSON **ret, struct err **e,
                                                       const char *fmt, va_list ap)
{
        char *json = NULL;
        assert_true(vasprintf(&json, fmt, ap) >= 0);
        cJSON *args = cJSON_Parse(json);
        if (!args)
                fail_msg("bad test JSON: %s", json);
        free(json);
        int r = vfs_call(v, op, args, ret, e);
        cJSON_Delete(args);
        return r;
}

/* The value of a call that must succeed (caller frees). */
__attribute__((format(printf, 3, 4))) static cJSON *okv(struct vfs *v, const char *op, const char *fmt, ...)
{
        cJSON *ret = NULL;
        struct err *e = NULL;
        va_list ap;
        va_start(ap, fmt);
        int r = vcall(v, op, &ret, &e, fmt, ap);
        va_end(ap);
        if (r < 0)
                fail_msg("fs.%s failed: %s", op, err_msg(e));
        assert_non_null(ret);
        return ret;
}

__attribute__((format(printf, 3, 4))) static void ok(struct vfs *v, const char *op, const char *fmt, ...)
{
        cJSON *ret = NULL;
        struct err *e = NULL;
        va_list ap;
        va_start(ap, fmt);
        int r = vcall(v, op, &ret, &e, fmt, ap);
        va_end(ap);
        if (r < 0)
                fail_msg("fs.%s failed: %s", op, err_msg(e));
        cJSON_Delete(ret);
}

/* A call that must fail with `code`; `msg` (if not NULL) is the whole
 * message.  Returns nothing: the message is checked here. */
__attribute__((format(printf, 5, 6))) static void fails(struct vfs *v, const char *op, int code, const char *msg,
                                                        const char *fmt, ...)
{
        cJSON *ret = NULL;
        struct err *e = NULL;
        uint64_t before, after;
        verify(v, &before);
        va_list ap;
        va_start(ap, fmt);
        int r = vcall(v, op, &ret, &e, fmt, ap);
        va_end(ap);
        verify(v, &after);
        if (before != after)
                fail_msg("the failed fs.%s changed the VFS", op);
        if (r == 0) {
                char *s = cJSON_PrintUnformatted(ret);
                fail_msg("fs.%s succeeded (%s); expected %s", op, s, vfs_error_name(code));
        }
        assert_null(ret);
        if (err_code(e) != code)
                fail_msg("fs.%s: expected %s, got code %d: %s", op, vfs_error_name(code), err_code(e), err_msg(e));
        assert_int_equal(e->errnum, 0);
        assert_true(strncmp(err_msg(e), vfs_error_name(code), strlen(vfs_error_name(code))) == 0);
        if (msg)
                assert_string_equal(err_msg(e), msg);
        err_free(e);
}

static void put(struct vfs *v, const char *path, const void *data, size_t len)
{
        char *b64 = base64_encode(data, len);
        ok(v, "writeFile", "{\"path\":\"%s\",\"data_base64\":\"%s\"}", path, b64);
        free(b64);
}

static void puts_(struct vfs *v, const char *path, const char *s)
{
        put(v, path, s, strlen(s));
}

/* The bytes of a file, NUL-terminated (caller frees). */
static char *get(struct vfs *v, const char *path, size_t *ret_len)
{
        cJSON *r = okv(v, "readFile", "{\"path\":\"%s\"}", path);
        const cJSON *d = cJSON_GetObjectItem(r, "data_base64");
        assert_true(cJSON_IsString(d));
        unsigned char *buf;
        size_t len;
        assert_int_equal(base64_decode(d->valuestring, strlen(d->valuestring), &buf, &len), 0);
        cJSON_Delete(r);
        char *s = malloc(len + 1);
        memcpy(s, buf, len);
        s[len] = '\0';
        free(buf);
        if (ret_len)
                *ret_len = len;
        return s;
}

static void assert_content(struct vfs *v, const char *path, const char *want)
{
        char *s = get(v, path, NULL);
        assert_string_equal(s, want);
        free(s);
}

static bool exists(struct vfs *v, const char *path)
{
        cJSON *r = okv(v, "exists", "{\"path\":\"%s\"}", path);
        assert_true(cJSON_IsBool(r));
        bool b = cJSON_IsTrue(r);
        cJSON_Delete(r);
        return b;
}

static double stat_num(struct vfs *v, const char *path, const char *field)
{
        cJSON *r = okv(v, "stat", "{\"path\":\"%s\"}", path);
        const cJSON *f = cJSON_GetObjectItem(r, field);
        assert_true(cJSON_IsNumber(f));
        double d = f->valuedouble;
        cJSON_Delete(r);
        return d;
}

static const char *stat_type(struct vfs *v, const char *path)
{
        cJSON *r = okv(v, "stat", "{\"path\":\"%s\"}", path);
        const char *t = strcmp(cJSON_GetObjectItem(r, "type")->valuestring, "dir") == 0 ? "dir" : "file";
        cJSON_Delete(r);
        return t;
}

/* readdir as "a,b,c" (caller frees). */
static char *list(struct vfs *v, const char *path)
{
        cJSON *r = okv(v, "readdir", "{\"path\":\"%s\"}", path);
        assert_true(cJSON_IsArray(r));
        size_t cap = 16, len = 0;
        char *out = calloc(1, cap);
        const cJSON *it;
        cJSON_ArrayForEach(it, r)
        {
                size_t l = strlen(it->valuestring);
                while (len + l + 2 > cap)
                        out = realloc(out, cap *= 2);
                if (len)
                        out[len++] = ',';
                memcpy(out + len, it->valuestring, l + 1);
                len += l;
        }
        cJSON_Delete(r);
        return out;
}

static void assert_list(struct vfs *v, const char *path, const char *want)
{
        char *s = list(v, path);
        assert_string_equal(s, want);
        free(s);
}

static struct vfs_usage usage(struct vfs *v)
{
        struct vfs_usage u;
        vfs_usage(v, &u);
        return u;
}

/* ---- basics ------------------------------------------------------------- */

static void test_initial_tree(void **state)
{
        (void)state;
        assert_list(V, "/", "tmp");
        assert_list(V, "/tmp", "");
        assert_string_equal(stat_type(V, "/"), "dir");
        assert_string_equal(stat_type(V, "/tmp"), "dir");
        assert_int_equal(usage(V).nodes, 2);
        assert_int_equal(usage(V).bytes, 2 * VFS_NODE_COST + 3);
}

static void test_write_read_text(void **state)
{
        (void)state;
        puts_(V, "/tmp/a.txt", "hello, world\n");
        assert_content(V, "/tmp/a.txt", "hello, world\n");
        assert_int_equal((int)stat_num(V, "/tmp/a.txt", "size"), 13);
        assert_string_equal(stat_type(V, "/tmp/a.txt"), "file");
}

static void test_write_read_binary(void **state)
{
        (void)state;
        unsigned char all[256];
        for (int i = 0; i < 256; i++)
                all[i] = (unsigned char)i;
        put(V, "/bin.dat", all, sizeof(all));
        size_t len;
        char *s = get(V, "/bin.dat", &len);
        assert_int_equal(len, 256);
        assert_memory_equal(s, all, 256);
        free(s);
}

static void test_write_empty_and_overwrite(void **state)
{
        (void)state;
        size_t base = usage(V).bytes;
        puts_(V, "/e", "");
        assert_content(V, "/e", "");
        assert_int_equal((int)stat_num(V, "/e", "size"), 0);
        assert_int_equal(usage(V).bytes, base + VFS_NODE_COST + 1);
        puts_(V, "/e", "a longer content");
        puts_(V, "/e", "short");
        assert_content(V, "/e", "short");
        assert_int_equal(usage(V).bytes, base + VFS_NODE_COST + 1 + 5);
        assert_int_equal(usage(V).nodes, 3);
}

static void test_write_flags(void **state)
{
        (void)state;
        ok(V, "writeFile", "{\"path\":\"/x\",\"data_base64\":\"YQ==\",\"flag\":\"wx\"}");
        fails(V, "writeFile", EEXIST, "EEXIST: file already exists, open '/x'",
              "{\"path\":\"/x\",\"data_base64\":\"Yg==\",\"flag\":\"wx\"}");
        assert_content(V, "/x", "a");
        ok(V, "writeFile", "{\"path\":\"/x\",\"data_base64\":\"Yg==\",\"flag\":\"a\"}");
        assert_content(V, "/x", "ab");
        fails(V, "writeFile", EEXIST, NULL, "{\"path\":\"/x\",\"data_base64\":\"Yg==\",\"flag\":\"ax\"}");
        ok(V, "writeFile", "{\"path\":\"/y\",\"data_base64\":\"Yg==\",\"flag\":\"ax\"}");
        assert_content(V, "/y", "b");
        ok(V, "writeFile", "{\"path\":\"/x\",\"data_base64\":\"Yw==\",\"flag\":null}");
        assert_content(V, "/x", "c");
}

static void test_append(void **state)
{
        (void)state;
        ok(V, "appendFile", "{\"path\":\"/log\",\"data_base64\":\"YQ==\"}");
        for (int i = 0; i < 999; i++)
                ok(V, "appendFile", "{\"path\":\"/log\",\"data_base64\":\"Yg==\"}");
        size_t len;
        char *s = get(V, "/log", &len);
        assert_int_equal(len, 1000);
        assert_int_equal(s[0], 'a');
        for (size_t i = 1; i < len; i++)
                assert_int_equal(s[i], 'b');
        free(s);
        assert_int_equal(usage(V).bytes, 2 * VFS_NODE_COST + 3 + VFS_NODE_COST + 3 + 1000);
        fails(V, "appendFile", EISDIR, "EISDIR: illegal operation on a directory, open '/tmp'",
              "{\"path\":\"/tmp\",\"data_base64\":\"\"}");
        fails(V, "appendFile", EEXIST, NULL, "{\"path\":\"/log\",\"data_base64\":\"\",\"flag\":\"ax\"}");
        ok(V, "appendFile", "{\"path\":\"/log\",\"data_base64\":\"eA==\",\"flag\":\"w\"}"); /* the flag decides */
        assert_content(V, "/log", "x");
}

static void test_read_errors(void **state)
{
        (void)state;
        fails(V, "readFile", ENOENT, "ENOENT: no such file or directory, open '/nope'", "{\"path\":\"/nope\"}");
        fails(V, "readFile", EISDIR, "EISDIR: illegal operation on a directory, read '/tmp'", "{\"path\":\"/tmp\"}");
        fails(V, "readFile", EISDIR, NULL, "{\"path\":\"/\"}");
        puts_(V, "/f", "x");
        fails(V, "readFile", ENOTDIR, "ENOTDIR: not a directory, open '/f/x'", "{\"path\":\"/f/x\"}");
        fails(V, "readFile", ENOTDIR, "ENOTDIR: not a directory, open '/f/'", "{\"path\":\"/f/\"}");
        fails(V, "readFile", ENOENT, "ENOENT: no such file or directory, open '/no/such/file'",
              "{\"path\":\"/no/such/file\"}");
        fails(V, "readFile", ENOENT, "ENOENT: no such file or directory, open ''", "{\"path\":\"\"}");
}

static void test_write_errors(void **state)
{
        (void)state;
        const char *d = "\"data_base64\":\"YQ==\"";
        fails(V, "writeFile", ENOENT, "ENOENT: no such file or directory, open '/a/b'", "{\"path\":\"/a/b\",%s}", d);
        fails(V, "writeFile", EISDIR, "EISDIR: illegal operation on a directory, open '/tmp'",
              "{\"path\":\"/tmp\",%s}", d);
        fails(V, "writeFile", EISDIR, NULL, "{\"path\":\"/\",%s}", d);
        fails(V, "writeFile", EISDIR, NULL, "{\"path\":\"/new/\",%s}", d);
        fails(V, "writeFile", EISDIR, NULL, "{\"path\":\"/tmp/..\",%s}", d);
        puts_(V, "/f", "x");
        fails(V, "writeFile", ENOTDIR, NULL, "{\"path\":\"/f/\",%s}", d);
        fails(V, "writeFile", ENOTDIR, NULL, "{\"path\":\"/f/g\",%s}", d);
        assert_content(V, "/f", "x");
        assert_int_equal(usage(V).nodes, 3);
}

static void test_exists(void **state)
{
        (void)state;
        puts_(V, "/tmp/f", "x");
        assert_true(exists(V, "/"));
        assert_true(exists(V, "/tmp"));
        assert_true(exists(V, "/tmp/"));
        assert_true(exists(V, "/tmp/f"));
        assert_true(exists(V, "tmp/f"));
        assert_false(exists(V, "/tmp/f/"));
        assert_false(exists(V, "/tmp/f/g"));
        assert_false(exists(V, "/nope"));
        assert_false(exists(V, ""));
        char longp[5000];
        memset(longp, 'a', sizeof(longp) - 1);
        longp[sizeof(longp) - 1] = '\0';
        assert_false(exists(V, longp));
        /* exists answers for any path but still wants a string */
        fails(V, "exists", EINVAL, NULL, "{\"path\":1}");
}

/* ---- directories -------------------------------------------------------- */

static void test_mkdir(void **state)
{
        (void)state;
        cJSON *r = okv(V, "mkdir", "{\"path\":\"/a\"}");
        assert_true(cJSON_IsNull(r));
        cJSON_Delete(r);
        puts_(V, "/a/f", "x");
        fails(V, "mkdir", EEXIST, "EEXIST: file already exists, mkdir '/a'", "{\"path\":\"/a\"}");
        fails(V, "mkdir", EEXIST, NULL, "{\"path\":\"/a/f\"}");
        fails(V, "mkdir", EEXIST, NULL, "{\"path\":\"/\"}");
        fails(V, "mkdir", ENOENT, "ENOENT: no such file or directory, mkdir '/b/c'", "{\"path\":\"/b/c\"}");
        fails(V, "mkdir", ENOTDIR, "ENOTDIR: not a directory, mkdir '/a/f/g'", "{\"path\":\"/a/f/g\"}");
        ok(V, "mkdir", "{\"path\":\"/a/sub/\"}");
        assert_list(V, "/a", "f,sub");
}

static void test_mkdir_recursive(void **state)
{
        (void)state;
        cJSON *r = okv(V, "mkdir", "{\"path\":\"/tmp/x/y/z\",\"recursive\":true}");
        assert_true(cJSON_IsString(r));
        assert_string_equal(r->valuestring, "/tmp/x");
        cJSON_Delete(r);
        assert_string_equal(stat_type(V, "/tmp/x/y/z"), "dir");
        r = okv(V, "mkdir", "{\"path\":\"/tmp/x/y\",\"recursive\":true}");
        assert_true(cJSON_IsNull(r)); /* nothing created */
        cJSON_Delete(r);
        r = okv(V, "mkdir", "{\"path\":\"/\",\"recursive\":true}");
        assert_true(cJSON_IsNull(r));
        cJSON_Delete(r);
        r = okv(V, "mkdir", "{\"path\":\"q/../r/./s\",\"recursive\":true}");
        assert_string_equal(r->valuestring, "/r");
        cJSON_Delete(r);
        puts_(V, "/tmp/file", "x");
        fails(V, "mkdir", ENOTDIR, NULL, "{\"path\":\"/tmp/file/a/b\",\"recursive\":true}");
        fails(V, "mkdir", EEXIST, "EEXIST: file already exists, mkdir '/tmp/file'",
              "{\"path\":\"/tmp/file\",\"recursive\":true}");
}

static void test_modes(void **state)
{
        (void)state;
        puts_(V, "/f", "x");
        ok(V, "mkdir", "{\"path\":\"/d\"}");
        assert_int_equal((int)stat_num(V, "/f", "mode"), 0100644);
        assert_int_equal((int)stat_num(V, "/d", "mode"), 040755);
        assert_int_equal((int)stat_num(V, "/tmp", "mode"), 041777);
        ok(V, "writeFile", "{\"path\":\"/p\",\"data_base64\":\"\",\"mode\":384}"); /* 0600 */
        assert_int_equal((int)stat_num(V, "/p", "mode"), 0100600);
        ok(V, "mkdir", "{\"path\":\"/e\",\"mode\":511}"); /* 0777 minus umask */
        assert_int_equal((int)stat_num(V, "/e", "mode"), 040755);
        fails(V, "mkdir", EINVAL, NULL, "{\"path\":\"/g\",\"mode\":4096}");
        fails(V, "mkdir", EINVAL, NULL, "{\"path\":\"/g\",\"mode\":1.5}");
        fails(V, "mkdir", EINVAL, NULL, "{\"path\":\"/g\",\"mode\":-1}");
}

static void test_readdir_sorted(void **state)
{
        (void)state;
        const char *names[] = { "b", "a", "B", "a.txt", "a-b", "\xc3\xa9", "aa", "a b", "~", "0" };
        for (size_t i = 0; i < sizeof(names) / sizeof(*names); i++) {
                char p[32];
                snprintf(p, sizeof(p), "/d/%s", names[i]);
                if (i == 0)
                        ok(V, "mkdir", "{\"path\":\"/d\"}");
                puts_(V, p, "x");
        }
        assert_list(V, "/d", "0,B,a,a b,a-b,a.txt,aa,b,~,\xc3\xa9");
}

static void test_readdir_types(void **state)
{
        (void)state;
        ok(V, "mkdir", "{\"path\":\"/d/sub\",\"recursive\":true}");
        puts_(V, "/d/file", "x");
        cJSON *r = okv(V, "readdir", "{\"path\":\"/d\",\"withFileTypes\":true}");
        char *s = cJSON_PrintUnformatted(r);
        assert_string_equal(s, "[{\"name\":\"file\",\"type\":\"file\"},{\"name\":\"sub\",\"type\":\"dir\"}]");
        free(s);
        cJSON_Delete(r);
        fails(V, "readdir", ENOENT, "ENOENT: no such file or directory, scandir '/nope'", "{\"path\":\"/nope\"}");
        fails(V, "readdir", ENOTDIR, "ENOTDIR: not a directory, scandir '/d/file'", "{\"path\":\"/d/file\"}");
        fails(V, "readdir", EINVAL, NULL, "{\"path\":\"/d\",\"withFileTypes\":1}");
}

static void test_readdir_wide(void **state)
{
        (void)state;
        /* 10,000 entries in one directory: every lookup stays a hash probe */
        for (int i = 9999; i >= 0; i--) {
                char p[32];
                snprintf(p, sizeof(p), "/tmp/f%05d", i);
                ok(V, "writeFile", "{\"path\":\"%s\",\"data_base64\":\"\"}", p);
        }
        cJSON *r = okv(V, "readdir", "{\"path\":\"/tmp\"}");
        assert_int_equal(cJSON_GetArraySize(r), 10000);
        for (int i = 0; i < 10000; i++) {
                char want[16];
                snprintf(want, sizeof(want), "f%05d", i);
                assert_string_equal(cJSON_GetArrayItem(r, i)->valuestring, want);
        }
        cJSON_Delete(r);
        for (int i = 0; i < 10000; i += 2) {
                char p[32];
                snprintf(p, sizeof(p), "/tmp/f%05d", i);
                ok(V, "unlink", "{\"path\":\"%s\"}", p);
        }
        assert_true(exists(V, "/tmp/f00001"));
        assert_false(exists(V, "/tmp/f00002"));
        assert_int_equal(usage(V).nodes, 2 + 5000);
}

/* ---- stat and time ------------------------------------------------------ */

static void test_stat_fields(void **state)
{
        (void)state;
        puts_(V, "/f", "hello");
        cJSON *r = okv(V, "stat", "{\"path\":\"/f\"}");
        const char *keys[] = { "type",  "size",    "mode",    "ino",        "nlink",
                               "atimeMs", "mtimeMs", "ctimeMs", "birthtimeMs" };
        for (size_t i = 0; i < sizeof(keys) / sizeof(*keys); i++)
                assert_non_null(cJSON_GetObjectItem(r, keys[i]));
        assert_int_equal(cJSON_GetArraySize(r), 9);
        assert_int_equal(cJSON_GetObjectItem(r, "size")->valueint, 5);
        assert_int_equal(cJSON_GetObjectItem(r, "nlink")->valueint, 1);
        cJSON_Delete(r);
        assert_true(stat_num(V, "/", "ino") != stat_num(V, "/tmp", "ino"));
        assert_true(stat_num(V, "/f", "ino") != stat_num(V, "/tmp", "ino"));
        fails(V, "stat", ENOENT, "ENOENT: no such file or directory, stat '/g'", "{\"path\":\"/g\"}");
        fails(V, "lstat", ENOENT, "ENOENT: no such file or directory, lstat '/g'", "{\"path\":\"/g\"}");
        fails(V, "stat", ENOTDIR, NULL, "{\"path\":\"/f/\"}");
        cJSON *a = okv(V, "stat", "{\"path\":\"/f\"}"), *b = okv(V, "lstat", "{\"path\":\"/f\"}");
        assert_true(cJSON_Compare(a, b, true));
        cJSON_Delete(a);
        cJSON_Delete(b);
}

static void test_logical_clock(void **state)
{
        (void)state;
        assert_int_equal((int)stat_num(V, "/tmp", "mtimeMs"), 0);
        puts_(V, "/tmp/a", "1"); /* tick 1 */
        assert_int_equal((int)stat_num(V, "/tmp/a", "mtimeMs"), 1);
        assert_int_equal((int)stat_num(V, "/tmp/a", "birthtimeMs"), 1);
        assert_int_equal((int)stat_num(V, "/tmp", "mtimeMs"), 1);
        puts_(V, "/tmp/b", "2"); /* tick 2 */
        puts_(V, "/tmp/a", "3"); /* tick 3: content only, /tmp unchanged */
        assert_int_equal((int)stat_num(V, "/tmp/a", "mtimeMs"), 3);
        assert_int_equal((int)stat_num(V, "/tmp/a", "birthtimeMs"), 1);
        assert_int_equal((int)stat_num(V, "/tmp", "mtimeMs"), 2);
        /* reads, stats, lists and failures do not advance the clock */
        free(get(V, "/tmp/a", NULL));
        free(list(V, "/tmp"));
        fails(V, "readFile", ENOENT, NULL, "{\"path\":\"/nope\"}");
        fails(V, "mkdir", EEXIST, NULL, "{\"path\":\"/tmp\"}");
        ok(V, "rename", "{\"from\":\"/tmp/b\",\"to\":\"/c\"}"); /* tick 4 */
        assert_int_equal((int)stat_num(V, "/c", "ctimeMs"), 4);
        assert_int_equal((int)stat_num(V, "/c", "mtimeMs"), 2);
        assert_int_equal((int)stat_num(V, "/tmp", "mtimeMs"), 4);
        assert_int_equal((int)stat_num(V, "/", "mtimeMs"), 4);
}

/* The same calls on two VFSs give byte-identical answers: what replay
 * relies on. */
static void test_deterministic(void **state)
{
        (void)state;
        struct vfs *w = new_vfs(NULL);
        struct vfs *both[2] = { V, w };
        for (int k = 0; k < 2; k++) {
                struct vfs *v = both[k];
                ok(v, "mkdir", "{\"path\":\"/a/b/c\",\"recursive\":true}");
                puts_(v, "/a/b/c/x", "xx");
                puts_(v, "/a/y", "y");
                ok(v, "rename", "{\"from\":\"/a/b\",\"to\":\"/tmp/b\"}");
                ok(v, "copyFile", "{\"from\":\"/a/y\",\"to\":\"/tmp/b/y\"}");
                ok(v, "rm", "{\"path\":\"/a\",\"recursive\":true}");
        }
        const char *paths[] = { "/", "/tmp", "/tmp/b", "/tmp/b/c", "/tmp/b/c/x", "/tmp/b/y" };
        for (size_t i = 0; i < sizeof(paths) / sizeof(*paths); i++) {
                cJSON *a = okv(V, "stat", "{\"path\":\"%s\"}", paths[i]);
                cJSON *b = okv(w, "stat", "{\"path\":\"%s\"}", paths[i]);
                char *sa = cJSON_PrintUnformatted(a), *sb = cJSON_PrintUnformatted(b);
                assert_string_equal(sa, sb);
                free(sa), free(sb);
                cJSON_Delete(a), cJSON_Delete(b);
        }
        assert_int_equal(usage(V).bytes, usage(w).bytes);
        uint64_t a, b;
        verify(V, &a);
        verify(w, &b);
        assert_true(a == b);
        puts_(w, "/tmp/b/y", "different");
        verify(w, &b);
        assert_true(a != b);
        vfs_free(w);
}

/* ---- removal ------------------------------------------------------------ */

static void test_unlink(void **state)
{
        (void)state;
        size_t base = usage(V).bytes;
        puts_(V, "/tmp/f", "12345");
        ok(V, "unlink", "{\"path\":\"/tmp/f\"}");
        assert_false(exists(V, "/tmp/f"));
        assert_int_equal(usage(V).bytes, base);
        fails(V, "unlink", ENOENT, "ENOENT: no such file or directory, unlink '/tmp/f'", "{\"path\":\"/tmp/f\"}");
        fails(V, "unlink", EISDIR, "EISDIR: illegal operation on a directory, unlink '/tmp'", "{\"path\":\"/tmp\"}");
        fails(V, "unlink", EISDIR, NULL, "{\"path\":\"/\"}");
}

static void test_rmdir(void **state)
{
        (void)state;
        ok(V, "mkdir", "{\"path\":\"/d/e\",\"recursive\":true}");
        fails(V, "rmdir", ENOTEMPTY, "ENOTEMPTY: directory not empty, rmdir '/d'", "{\"path\":\"/d\"}");
        ok(V, "rmdir", "{\"path\":\"/d/e\"}");
        ok(V, "rmdir", "{\"path\":\"/d\"}");
        puts_(V, "/f", "");
        fails(V, "rmdir", ENOTDIR, "ENOTDIR: not a directory, rmdir '/f'", "{\"path\":\"/f\"}");
        fails(V, "rmdir", ENOENT, NULL, "{\"path\":\"/d\"}");
        fails(V, "rmdir", EBUSY, "EBUSY: resource busy or locked, rmdir '/'", "{\"path\":\"/\"}");
}

static void test_rm(void **state)
{
        (void)state;
        size_t base = usage(V).bytes;
        puts_(V, "/f", "x");
        ok(V, "rm", "{\"path\":\"/f\"}");
        assert_false(exists(V, "/f"));
        ok(V, "mkdir", "{\"path\":\"/d/e/f\",\"recursive\":true}");
        for (int i = 0; i < 50; i++) {
                char p[32];
                snprintf(p, sizeof(p), "/d/e/f/%d", i);
                puts_(V, p, "data");
                snprintf(p, sizeof(p), "/d/x%d", i);
                ok(V, "mkdir", "{\"path\":\"%s/y\",\"recursive\":true}", p);
        }
        fails(V, "rm", EISDIR, "EISDIR: illegal operation on a directory, rm '/d'", "{\"path\":\"/d\"}");
        ok(V, "rm", "{\"path\":\"/d\",\"recursive\":true}");
        assert_false(exists(V, "/d"));
        assert_list(V, "/", "tmp");
        assert_int_equal(usage(V).bytes, base);
        assert_int_equal(usage(V).nodes, 2);
}

static void test_rm_force(void **state)
{
        (void)state;
        fails(V, "rm", ENOENT, "ENOENT: no such file or directory, lstat '/nope'", "{\"path\":\"/nope\"}");
        ok(V, "rm", "{\"path\":\"/nope\",\"force\":true}");
        ok(V, "rm", "{\"path\":\"/no/such/thing\",\"force\":true,\"recursive\":true}");
        puts_(V, "/f", "x");
        fails(V, "rm", ENOTDIR, NULL, "{\"path\":\"/f/g\"}");
        ok(V, "rm", "{\"path\":\"/f/g\",\"force\":true}");
        ok(V, "rm", "{\"path\":\"/f/\",\"force\":true}");
        assert_true(exists(V, "/f")); /* "/f/" names a directory: there is none */
        ok(V, "mkdir", "{\"path\":\"/d\"}");
        fails(V, "rm", EISDIR, NULL, "{\"path\":\"/d\",\"force\":true}");
        /* force does not hide a malformed path */
        char longp[300];
        memset(longp, 'n', sizeof(longp) - 1);
        longp[0] = '/';
        longp[sizeof(longp) - 1] = '\0';
        fails(V, "rm", ENAMETOOLONG, NULL, "{\"path\":\"%s\",\"force\":true}", longp);
}

static void test_rm_root(void **state)
{
        (void)state;
        fails(V, "rm", EBUSY, "EBUSY: resource busy or locked, rm '/'",
              "{\"path\":\"/\",\"recursive\":true,\"force\":true}");
        fails(V, "rm", EBUSY, NULL, "{\"path\":\"/../..\",\"recursive\":true}");
        assert_true(exists(V, "/tmp"));
        ok(V, "rm", "{\"path\":\"/tmp\",\"recursive\":true}");
        assert_list(V, "/", "");
        assert_int_equal(usage(V).nodes, 1);
}

/* ---- rename ------------------------------------------------------------- */

static void test_rename_file(void **state)
{
        (void)state;
        puts_(V, "/a", "A");
        ok(V, "rename", "{\"from\":\"/a\",\"to\":\"/tmp/b\"}");
        assert_false(exists(V, "/a"));
        assert_content(V, "/tmp/b", "A");
        puts_(V, "/c", "C");
        size_t before = usage(V).bytes;
        ok(V, "rename", "{\"from\":\"/tmp/b\",\"to\":\"/c\"}"); /* replaces /c */
        assert_content(V, "/c", "A");
        assert_int_equal(usage(V).nodes, 3);
        assert_int_equal(usage(V).bytes, before - VFS_NODE_COST - 1 - 1);
        ok(V, "rename", "{\"from\":\"/c\",\"to\":\"/a-much-longer-name\"}");
        assert_int_equal(usage(V).bytes, before - VFS_NODE_COST - 2 + strlen("a-much-longer-name") - 1);
}

static void test_rename_dir_subtree(void **state)
{
        (void)state;
        ok(V, "mkdir", "{\"path\":\"/src/a/b\",\"recursive\":true}");
        puts_(V, "/src/a/b/f", "deep");
        puts_(V, "/src/top", "top");
        ok(V, "mkdir", "{\"path\":\"/dst\"}");
        ok(V, "rename", "{\"from\":\"/src\",\"to\":\"/dst/moved\"}");
        assert_false(exists(V, "/src"));
        assert_false(exists(V, "/src/a/b/f"));
        assert_content(V, "/dst/moved/a/b/f", "deep");
        assert_content(V, "/dst/moved/top", "top");
        assert_list(V, "/dst/moved", "a,top");
        assert_list(V, "/", "dst,tmp");
        /* the moved nodes are still removable (the hash knows their new home) */
        ok(V, "rm", "{\"path\":\"/dst\",\"recursive\":true}");
        assert_int_equal(usage(V).nodes, 2);
}

static void test_rename_invalid(void **state)
{
        (void)state;
        ok(V, "mkdir", "{\"path\":\"/d/e\",\"recursive\":true}");
        puts_(V, "/f", "x");
        fails(V, "rename", EINVAL, "EINVAL: invalid argument, rename '/d' -> '/d/e/x'",
              "{\"from\":\"/d\",\"to\":\"/d/e/x\"}");
        fails(V, "rename", EINVAL, NULL, "{\"from\":\"/d\",\"to\":\"/d/x\"}");
        fails(V, "rename", EINVAL, NULL, "{\"from\":\"/d\",\"to\":\"/d\"}");
        fails(V, "rename", EINVAL, NULL, "{\"from\":\"/f\",\"to\":\"/tmp/../f\"}");
        fails(V, "rename", EBUSY, NULL, "{\"from\":\"/\",\"to\":\"/x\"}");
        fails(V, "rename", EBUSY, NULL, "{\"from\":\"/f\",\"to\":\"/\"}");
        assert_list(V, "/", "d,f,tmp");
        assert_list(V, "/d", "e");
}

static void test_rename_kinds(void **state)
{
        (void)state;
        ok(V, "mkdir", "{\"path\":\"/d/full/x\",\"recursive\":true}");
        ok(V, "mkdir", "{\"path\":\"/empty\"}");
        ok(V, "mkdir", "{\"path\":\"/d2\"}");
        puts_(V, "/f", "x");
        fails(V, "rename", ENOTDIR, "ENOTDIR: not a directory, rename '/d2' -> '/f'", "{\"from\":\"/d2\",\"to\":\"/f\"}");
        fails(V, "rename", EISDIR, NULL, "{\"from\":\"/f\",\"to\":\"/empty\"}");
        fails(V, "rename", ENOTEMPTY, NULL, "{\"from\":\"/d2\",\"to\":\"/d/full\"}");
        fails(V, "rename", ENOTDIR, NULL, "{\"from\":\"/f\",\"to\":\"/g/\"}");
        fails(V, "rename", ENOTDIR, NULL, "{\"from\":\"/f/\",\"to\":\"/g\"}");
        fails(V, "rename", ENOTDIR, NULL, "{\"from\":\"/d2\",\"to\":\"/f/x\"}");
        ok(V, "rename", "{\"from\":\"/d2\",\"to\":\"/empty\"}"); /* dir onto an empty dir */
        assert_false(exists(V, "/d2"));
        assert_string_equal(stat_type(V, "/empty"), "dir");
        ok(V, "rename", "{\"from\":\"/d/full/\",\"to\":\"/full/\"}");
        assert_true(exists(V, "/full/x"));
}

static void test_rename_missing(void **state)
{
        (void)state;
        fails(V, "rename", ENOENT, "ENOENT: no such file or directory, rename '/a' -> '/b'",
              "{\"from\":\"/a\",\"to\":\"/b\"}");
        puts_(V, "/a", "x");
        fails(V, "rename", ENOENT, "ENOENT: no such file or directory, rename '/a' -> '/no/b'",
              "{\"from\":\"/a\",\"to\":\"/no/b\"}");
        fails(V, "rename", EINVAL, NULL, "{\"from\":\"/a\"}");
        fails(V, "rename", EINVAL, NULL, "{\"to\":\"/a\"}");
        assert_content(V, "/a", "x");
}

static void test_rename_depth_cap(void **state)
{
        (void)state;
        struct vfs *v = new_vfs(&(struct vfs_limits){ .max_depth = 8 });
        ok(v, "mkdir", "{\"path\":\"/a/b/c/d\",\"recursive\":true}");
        ok(v, "mkdir", "{\"path\":\"/x/y/z/w/v\",\"recursive\":true}");
        /* /x/y/z/w/v + a/b/c/d = 9 levels */
        fails(v, "rename", ENAMETOOLONG, NULL, "{\"from\":\"/a\",\"to\":\"/x/y/z/w/v/a\"}");
        ok(v, "rename", "{\"from\":\"/a\",\"to\":\"/x/y/z/w/a\"}"); /* 8: fits */
        assert_true(exists(v, "/x/y/z/w/a/b/c/d"));
        verify(v, NULL);
        vfs_free(v);
}

/* ---- copyFile and access ------------------------------------------------ */

static void test_copy_file(void **state)
{
        (void)state;
        puts_(V, "/a", "original");
        ok(V, "copyFile", "{\"from\":\"/a\",\"to\":\"/tmp/b\"}");
        puts_(V, "/a", "changed");
        assert_content(V, "/tmp/b", "original");
        ok(V, "copyFile", "{\"from\":\"/a\",\"to\":\"/tmp/b\"}");
        assert_content(V, "/tmp/b", "changed");
        fails(V, "copyFile", EEXIST, "EEXIST: file already exists, copyfile '/a' -> '/tmp/b'",
              "{\"from\":\"/a\",\"to\":\"/tmp/b\",\"flags\":1}");
        ok(V, "copyFile", "{\"from\":\"/a\",\"to\":\"/a\"}");
        assert_content(V, "/a", "changed");
        fails(V, "copyFile", EISDIR, NULL, "{\"from\":\"/tmp\",\"to\":\"/x\"}");
        fails(V, "copyFile", EISDIR, NULL, "{\"from\":\"/a\",\"to\":\"/tmp\"}");
        fails(V, "copyFile", ENOENT, NULL, "{\"from\":\"/nope\",\"to\":\"/x\"}");
        fails(V, "copyFile", ENOENT, NULL, "{\"from\":\"/a\",\"to\":\"/no/x\"}");
        fails(V, "copyFile", EINVAL, NULL, "{\"from\":\"/a\",\"to\":\"/x\",\"flags\":8}");
}

static void test_access(void **state)
{
        (void)state;
        puts_(V, "/f", "x");
        ok(V, "access", "{\"path\":\"/f\"}");
        ok(V, "access", "{\"path\":\"/f\",\"mode\":6}");
        fails(V, "access", EACCES, "EACCES: permission denied, access '/f'", "{\"path\":\"/f\",\"mode\":1}");
        ok(V, "access", "{\"path\":\"/tmp\",\"mode\":7}");
        fails(V, "access", ENOENT, "ENOENT: no such file or directory, access '/g'", "{\"path\":\"/g\"}");
        ok(V, "writeFile", "{\"path\":\"/x\",\"data_base64\":\"\",\"mode\":448}"); /* 0700 */
        ok(V, "access", "{\"path\":\"/x\",\"mode\":1}");
}

/* ---- paths and traversal ------------------------------------------------ */

static void test_traversal_clamps(void **state)
{
        (void)state;
        ok(V, "mkdir", "{\"path\":\"/etc\"}");
        puts_(V, "/../../etc/passwd", "vfs passwd");
        assert_content(V, "/etc/passwd", "vfs passwd");
        assert_content(V, "/../../../../../../etc/passwd", "vfs passwd");
        assert_content(V, "../etc/passwd", "vfs passwd");
        assert_content(V, "etc/../../etc/./passwd", "vfs passwd");
        puts_(V, "a/../../b", "b");
        assert_content(V, "/b", "b");
        puts_(V, "//x", "x");
        assert_content(V, "/x", "x");
        assert_content(V, "/./x", "x");
        assert_content(V, "x", "x");
        assert_content(V, "///tmp/..//x", "x");
        fails(V, "readFile", EISDIR, "EISDIR: illegal operation on a directory, read '/..'", "{\"path\":\"/..\"}");
        assert_list(V, "/", "b,etc,tmp,x");
}

static void test_traversal_root_forms(void **state)
{
        (void)state;
        const char *roots[] = { "/", "//", "/.", "/..", "/../..", ".", "..", "./", "/tmp/..", "tmp/../.." };
        for (size_t i = 0; i < sizeof(roots) / sizeof(*roots); i++) {
                assert_string_equal(stat_type(V, roots[i]), "dir");
                assert_int_equal((int)stat_num(V, roots[i], "ino"), (int)stat_num(V, "/", "ino"));
                assert_list(V, roots[i], "tmp");
        }
        /* literal names, no decoding */
        const char *odd[] = { "...", "..a", "%2e%2e", "..%2f..%2fetc", "..\\\\..\\\\x", " ", ".hidden" };
        for (size_t i = 0; i < sizeof(odd) / sizeof(*odd); i++) {
                char p[64];
                snprintf(p, sizeof(p), "/tmp/%s", odd[i]);
                puts_(V, p, "lit");
                assert_content(V, p, "lit");
        }
        assert_list(V, "/tmp", " ,%2e%2e,..%2f..%2fetc,...,..\\..\\x,..a,.hidden");
}

static void test_traversal_trailing(void **state)
{
        (void)state;
        ok(V, "mkdir", "{\"path\":\"/d\"}");
        puts_(V, "/d/f", "x");
        assert_string_equal(stat_type(V, "/d/"), "dir");
        assert_string_equal(stat_type(V, "/d/."), "dir");
        assert_string_equal(stat_type(V, "/d/f/.."), "dir"); /* lexical: /d */
        fails(V, "stat", ENOTDIR, NULL, "{\"path\":\"/d/f/\"}");
        fails(V, "stat", ENOTDIR, NULL, "{\"path\":\"/d/f/.\"}");
        fails(V, "readFile", ENOTDIR, NULL, "{\"path\":\"/d/f//\"}");
}

/* Whatever the path says, the host disk is never touched. */
static void test_host_disk_untouched(void **state)
{
        (void)state;
        char probe[128], evil[256];
        snprintf(probe, sizeof(probe), "/tmp/chidori-vfs-probe-%d", (int)getpid());
        struct stat st;
        assert_int_equal(stat(probe, &st), -1);
        puts_(V, probe, "should stay in memory");
        snprintf(evil, sizeof(evil), "/../../..%s-evil", probe);
        puts_(V, evil, "x");
        ok(V, "mkdir", "{\"path\":\"%s-dir/a/b\",\"recursive\":true}", probe);
        ok(V, "appendFile", "{\"path\":\"%s-app\",\"data_base64\":\"eA==\"}", probe);
        ok(V, "copyFile", "{\"from\":\"%s\",\"to\":\"%s-copy\"}", probe, probe);
        ok(V, "rename", "{\"from\":\"%s-copy\",\"to\":\"%s-renamed\"}", probe, probe);
        assert_content(V, probe, "should stay in memory");
        const char *sfx[] = { "", "-evil", "-dir", "-app", "-copy", "-renamed" };
        for (size_t i = 0; i < sizeof(sfx) / sizeof(*sfx); i++) {
                char real[160];
                snprintf(real, sizeof(real), "%s%s", probe, sfx[i]);
                assert_int_equal(stat(real, &st), -1);
                assert_int_equal(errno, ENOENT);
        }
        /* and a real file is not visible through the VFS */
        assert_int_equal(stat("/etc/passwd", &st), 0);
        assert_false(exists(V, "/etc/passwd"));
        fails(V, "readFile", ENOENT, NULL, "{\"path\":\"/etc/passwd\"}");
        fails(V, "unlink", ENOENT, NULL, "{\"path\":\"/etc/passwd\"}");
        assert_int_equal(stat("/etc/passwd", &st), 0);
}

static void test_nul_and_empty(void **state)
{
        (void)state;
        struct err *e = NULL;
        assert_int_equal(vfs_check_path(V, "/a\0b", 4, "open", &e), -1);
        assert_int_equal(err_code(e), EINVAL);
        assert_string_equal(err_msg(e), "EINVAL: invalid argument, open '/a\\x00b'");
        err_free(e);
        e = NULL;
        assert_int_equal(vfs_check_path(V, "/a/b", 4, "open", &e), 0);
        assert_int_equal(vfs_check_path(V, "", 0, "open", &e), -1);
        assert_int_equal(err_code(e), ENOENT);
        err_free(e);
        e = NULL;
        assert_int_equal(vfs_check_path(V, NULL, 0, "open", &e), -1);
        assert_int_equal(err_code(e), EINVAL);
        err_free(e);
        /* cJSON ends a decoded "\u0000" string at the NUL: the name is cut
         * there, still inside the VFS (engine/fs.js refuses NUL first) */
        ok(V, "writeFile", "{\"path\":\"/tmp/a\\u0000b\",\"data_base64\":\"\"}");
        assert_list(V, "/tmp", "a");
        fails(V, "mkdir", ENOENT, "ENOENT: no such file or directory, mkdir ''", "{\"path\":\"\"}");
}

static void test_path_length(void **state)
{
        (void)state;
        /* 16 components of 255 bytes: 16 * 256 = 4096 bytes, the limit */
        char *p = malloc(8192), *o = p;
        for (int i = 0; i < 16; i++) {
                *o++ = '/';
                memset(o, 'a' + i, 255);
                o += 255;
        }
        *o = '\0';
        assert_int_equal(strlen(p), 4096);
        ok(V, "mkdir", "{\"path\":\"%s\",\"recursive\":true}", p);
        assert_true(exists(V, p));
        memcpy(o, "/", 2); /* 4097 bytes */
        fails(V, "stat", ENAMETOOLONG, NULL, "{\"path\":\"%s\"}", p);
        fails(V, "mkdir", ENAMETOOLONG, NULL, "{\"path\":\"%sx\",\"recursive\":true}", p);
        /* the message quotes at most ~200 bytes of it */
        cJSON *args = cJSON_CreateObject();
        cJSON_AddStringToObject(args, "path", p);
        struct err *e = NULL;
        cJSON *ret = NULL;
        assert_int_equal(vfs_call(V, "stat", args, &ret, &e), -1);
        assert_true(strlen(err_msg(e)) < 260);
        assert_non_null(strstr(err_msg(e), "...'"));
        err_free(e);
        cJSON_Delete(args);
        free(p);
}

static void test_name_length(void **state)
{
        (void)state;
        char name[300];
        memset(name, 'n', 255);
        name[255] = '\0';
        puts_(V, name, "255 is fine");
        assert_true(exists(V, name));
        memset(name, 'n', 256);
        name[256] = '\0';
        fails(V, "writeFile", ENAMETOOLONG, NULL, "{\"path\":\"/%s\",\"data_base64\":\"\"}", name);
        /* even when a later '..' removes the component */
        fails(V, "stat", ENAMETOOLONG, NULL, "{\"path\":\"/%s/..\"}", name);
        /* the message quotes the first 192 bytes */
        char want[300];
        snprintf(want, sizeof(want), "ENAMETOOLONG: name too long, mkdir '/%.191s...'", name);
        fails(V, "mkdir", ENAMETOOLONG, want, "{\"path\":\"/%s\"}", name);
}

static void test_depth_limit(void **state)
{
        (void)state;
        char p[1100], *o = p;
        for (int i = 0; i < 256; i++) {
                *o++ = '/';
                *o++ = 'd';
        }
        *o = '\0';
        ok(V, "mkdir", "{\"path\":\"%s\",\"recursive\":true}", p);
        puts_(V, "/d/d/f", "x");
        fails(V, "mkdir", ENAMETOOLONG, NULL, "{\"path\":\"%s/d\",\"recursive\":true}", p);
        fails(V, "writeFile", ENAMETOOLONG, NULL, "{\"path\":\"%s/f\",\"data_base64\":\"\"}", p);
        ok(V, "stat", "{\"path\":\"%s/d/..\"}", p); /* 256 after normalising */
        /* moving the 256-deep chain one level down would make it 257 */
        ok(V, "mkdir", "{\"path\":\"/e\"}");
        fails(V, "rename", ENAMETOOLONG, NULL, "{\"from\":\"/d\",\"to\":\"/e/d\"}");
        ok(V, "rm", "{\"path\":\"/d\",\"recursive\":true}");
        assert_int_equal(usage(V).nodes, 3);
}

static void test_message_quoting(void **state)
{
        (void)state;
        fails(V, "readFile", ENOENT, "ENOENT: no such file or directory, open '/a\\x0ab\\x27c\\x5cd\\x7f'",
              "{\"path\":\"/a\\nb'c\\\\d\\u007f\"}");
        fails(V, "readFile", ENOENT, "ENOENT: no such file or directory, open '/\xc3\xa9t\xc3\xa9'",
              "{\"path\":\"/\xc3\xa9t\xc3\xa9\"}");
        /* the path as given, not normalised */
        fails(V, "readFile", ENOENT, "ENOENT: no such file or directory, open 'a/../b'", "{\"path\":\"a/../b\"}");
}

/* ---- limits ------------------------------------------------------------- */

static void test_total_cap(void **state)
{
        (void)state;
        struct vfs_limits lim = { .max_total_bytes = 1000 };
        struct vfs *v = new_vfs(&lim);
        size_t base = usage(v).bytes; /* 131 */
        char *big = calloc(1, 2000);
        put(v, "/a", big, 1000 - base - VFS_NODE_COST - 1); /* exactly full */
        assert_int_equal(usage(v).bytes, 1000);
        /* nothing more fits, and a failure changes nothing */
        char *b64 = base64_encode((unsigned char *)"x", 1);
        fails(v, "writeFile", ENOSPC, "ENOSPC: no space left on device, write '/b'",
              "{\"path\":\"/b\",\"data_base64\":\"\"}");
        fails(v, "appendFile", ENOSPC, NULL, "{\"path\":\"/a\",\"data_base64\":\"%s\"}", b64);
        fails(v, "mkdir", ENOSPC, "ENOSPC: no space left on device, mkdir '/d'", "{\"path\":\"/d\"}");
        fails(v, "copyFile", ENOSPC, NULL, "{\"from\":\"/a\",\"to\":\"/c\"}");
        fails(v, "rename", ENOSPC, NULL, "{\"from\":\"/a\",\"to\":\"/ab\"}");
        assert_int_equal(usage(v).bytes, 1000);
        assert_int_equal(usage(v).nodes, 3);
        size_t len;
        free(get(v, "/a", &len));
        assert_int_equal(len, 1000 - base - VFS_NODE_COST - 1);
        /* overwriting with less frees room; a same-length rename still works */
        put(v, "/a", big, 10);
        ok(v, "rename", "{\"from\":\"/a\",\"to\":\"/z\"}");
        puts_(v, "/b", "now it fits");
        /* a write that replaces may use the room the old content held */
        put(v, "/b", big, 1000 - usage(v).bytes + strlen("now it fits"));
        assert_int_equal(usage(v).bytes, 1000);
        free(b64);
        free(big);
        verify(v, NULL);
        vfs_free(v);
}

static void test_file_cap(void **state)
{
        (void)state;
        struct vfs *v = new_vfs(&(struct vfs_limits){ .max_file_bytes = 100 });
        char buf[101] = { 0 };
        put(v, "/a", buf, 100);
        char *b64 = base64_encode((unsigned char *)buf, 101);
        fails(v, "writeFile", EFBIG, "EFBIG: file too large, write '/b'", "{\"path\":\"/b\",\"data_base64\":\"%s\"}",
              b64);
        free(b64);
        fails(v, "appendFile", EFBIG, NULL, "{\"path\":\"/a\",\"data_base64\":\"AA==\"}");
        assert_false(exists(v, "/b"));
        size_t len;
        free(get(v, "/a", &len));
        assert_int_equal(len, 100);
        verify(v, NULL);
        vfs_free(v);
}

static void test_node_cap(void **state)
{
        (void)state;
        struct vfs *v = new_vfs(&(struct vfs_limits){ .max_nodes = 6 });
        puts_(v, "/a", "");
        puts_(v, "/b", "");
        /* 4 nodes: a recursive mkdir of 3 would make 7 and creates nothing */
        fails(v, "mkdir", ENOSPC, NULL, "{\"path\":\"/x/y/z\",\"recursive\":true}");
        assert_false(exists(v, "/x"));
        ok(v, "mkdir", "{\"path\":\"/x/y\",\"recursive\":true}");
        fails(v, "writeFile", ENOSPC, "ENOSPC: no space left on device, open '/c'", "{\"path\":\"/c\",\"data_base64\":\"\"}");
        fails(v, "copyFile", ENOSPC, NULL, "{\"from\":\"/a\",\"to\":\"/c\"}");
        puts_(v, "/a", "overwrite needs no node");
        ok(v, "unlink", "{\"path\":\"/a\"}");
        puts_(v, "/c", "");
        assert_int_equal(usage(v).nodes, 6);
        verify(v, NULL);
        vfs_free(v);
}

static void test_bad_limits(void **state)
{
        (void)state;
        struct vfs *v = NULL;
        struct err *e = NULL;
        assert_int_equal(vfs_new(&(struct vfs_limits){ .max_nodes = 1 }, &v, &e), -1);
        assert_int_equal(err_code(e), EINVAL);
        err_free(e);
        e = NULL;
        assert_int_equal(vfs_new(&(struct vfs_limits){ .max_total_bytes = 10 }, &v, &e), -1);
        err_free(e);
        assert_null(v);
        vfs_free(NULL);
}

/* ---- malformed calls ---------------------------------------------------- */

static void test_bad_args(void **state)
{
        (void)state;
        fails(V, "readFile", EINVAL, "EINVAL: invalid argument, fs.readFile: 'path' must be a string", "{}");
        fails(V, "readFile", EINVAL, NULL, "{\"path\":null}");
        fails(V, "readFile", EINVAL, NULL, "{\"path\":[\"/x\"]}");
        fails(V, "writeFile", EINVAL, NULL, "{\"path\":\"/x\"}");
        fails(V, "writeFile", EINVAL, "EINVAL: invalid argument, fs.writeFile: 'data_base64' is not valid base64",
              "{\"path\":\"/x\",\"data_base64\":\"abc\"}");
        fails(V, "writeFile", EINVAL, NULL, "{\"path\":\"/x\",\"data_base64\":\"YQ==\",\"flag\":\"r\"}");
        fails(V, "writeFile", EINVAL, NULL, "{\"path\":\"/x\",\"data_base64\":\"YQ==\",\"flag\":1}");
        fails(V, "mkdir", EINVAL, NULL, "{\"path\":\"/x\",\"recursive\":\"yes\"}");
        fails(V, "rm", EINVAL, NULL, "{\"path\":\"/x\",\"force\":0}");
        fails(V, "access", EINVAL, NULL, "{\"path\":\"/x\",\"mode\":8}");
        assert_false(exists(V, "/x"));

        cJSON *ret = NULL;
        struct err *e = NULL;
        cJSON *arr = cJSON_CreateArray();
        assert_int_equal(vfs_call(V, "stat", arr, &ret, &e), -1);
        assert_int_equal(err_code(e), EINVAL);
        assert_int_equal(vfs_call(V, "stat", NULL, &ret, &e), -1);
        assert_int_equal(err_code(e), EINVAL);
        assert_int_equal(vfs_call(V, "chmod", arr, &ret, &e), -1);
        assert_int_equal(err_code(e), ENOSYS);
        assert_string_equal(err_msg(e), "ENOSYS: function not implemented, fs.chmod");
        assert_int_equal(vfs_call(V, "fs.stat", arr, &ret, &e), -1);
        assert_int_equal(err_code(e), ENOSYS);
        assert_int_equal(vfs_call(V, NULL, arr, &ret, &e), -1);
        assert_null(ret);
        err_free(e);
        cJSON_Delete(arr);
        assert_int_equal(vfs_call(V, "stat", cJSON_GetObjectItem(NULL, "x"), &ret, NULL), -1); /* err may be NULL */
}

static void test_error_names(void **state)
{
        (void)state;
        assert_string_equal(vfs_error_name(ENOENT), "ENOENT");
        assert_string_equal(vfs_error_name(ENOTEMPTY), "ENOTEMPTY");
        assert_string_equal(vfs_error_name(ENAMETOOLONG), "ENAMETOOLONG");
        assert_string_equal(vfs_error_name(ENOSPC), "ENOSPC");
        assert_string_equal(vfs_error_name(0), "");
        assert_string_equal(vfs_error_name(-2), "");
        assert_string_equal(vfs_error_name(EPIPE), "");
}

static void test_base64_decode(void **state)
{
        (void)state;
        unsigned char *out = NULL;
        size_t len = 99;
        const char *bad[] = { "a", "abc", "ab=c", "a===", "====", "YQ=", "Y===", "YR==", "YWI=x", "YW J", "YWJ\n",
                              "YW-_", "YWJ=YWJj" };
        for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++)
                if (base64_decode(bad[i], strlen(bad[i]), &out, &len) != -EINVAL)
                        fail_msg("accepted '%s'", bad[i]);
        assert_int_equal(base64_decode("YWJj\0YWJj", 9, &out, &len), -EINVAL);
        assert_int_equal(base64_decode("YWI\0", 4, &out, &len), -EINVAL);
        assert_int_equal(len, 99); /* untouched on failure */
        assert_int_equal(base64_decode("", 0, &out, &len), 0);
        assert_int_equal(len, 0);
        free(out);
        unsigned char all[300];
        for (size_t n = 0; n < sizeof(all); n++) {
                for (size_t i = 0; i < n; i++)
                        all[i] = (unsigned char)(i * 7 + n);
                char *b = base64_encode(all, n);
                assert_int_equal(base64_decode(b, strlen(b), &out, &len), 0);
                assert_int_equal(len, n);
                assert_memory_equal(out, all, n);
                free(out);
                free(b);
        }
}

int main(void)
{
        const struct CMUnitTest tests[] = {
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
                T(test_initial_tree),
                T(test_write_read_text),
                T(test_write_read_binary),
                T(test_write_empty_and_overwrite),
                T(test_write_flags),
                T(test_append),
                T(test_read_errors),
                T(test_write_errors),
                T(test_exists),
                T(test_mkdir),
                T(test_mkdir_recursive),
                T(test_modes),
                T(test_readdir_sorted),
                T(test_readdir_types),
                T(test_readdir_wide),
                T(test_stat_fields),
                T(test_logical_clock),
                T(test_deterministic),
                T(test_unlink),
                T(test_rmdir),
                T(test_rm),
                T(test_rm_force),
                T(test_rm_root),
                T(test_rename_file),
                T(test_rename_dir_subtree),
                T(test_rename_invalid),
                T(test_rename_kinds),
                T(test_rename_missing),
                T(test_rename_depth_cap),
                T(test_copy_file),
                T(test_access),
                T(test_traversal_clamps),
                T(test_traversal_root_forms),
                T(test_traversal_trailing),
                T(test_host_disk_untouched),
                T(test_nul_and_empty),
                T(test_path_length),
                T(test_name_length),
                T(test_depth_limit),
                T(test_message_quoting),
                T(test_total_cap),
                T(test_file_cap),
                T(test_node_cap),
                T(test_bad_limits),
                T(test_bad_args),
                T(test_error_names),
                T(test_base64_decode),
#undef T
        };
        return cmocka_run_group_tests_name("vfs", tests, NULL, NULL);
}
