/* tests/unit/test_workspace.c — effects/workspace/workspace.c against real directories.
 *
 * Each test gets a fresh /tmp/ws-test-XXXXXX holding `ws/` (the workspace)
 * and `outside/` (a sibling the agent must never reach: secret, passwd).
 * The traversal battery (test_trav_*) checks after every attack that
 * outside/ is byte-for-byte what setup made.  Writes are only ever aimed at
 * outside/, never at /etc, so a broken build cannot damage the host.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "common/err.h"
#include "effects/workspace/workspace.h"

#define SECRET "TOP SECRET\n"
#define OUT_PASSWD "outside passwd\n"

struct fx {
        char base[64];
        char ws[96];
        char out[96];
        struct workspace *w;
};

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
        (void)st, (void)flag, (void)ftw;
        return remove(path);
}

static void write_path(const char *path, const void *data, size_t len)
{
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0)
                fail_msg("create %s: %s", path, strerror(errno));
        assert_int_equal(write(fd, data, len), (ssize_t)len);
        close(fd);
}

/* Whole file, NUL-terminated; NULL if it cannot be opened. */
static char *slurp(const char *path, size_t *ret_len)
{
        FILE *f = fopen(path, "rb");
        if (!f)
                return NULL;
        size_t cap = 4096, len = 0;
        char *buf = malloc(cap + 1);
        size_t r;
        while (buf && (r = fread(buf + len, 1, cap - len, f)) > 0) {
                len += r;
                if (len == cap)
                        buf = realloc(buf, (cap *= 2) + 1);
        }
        fclose(f);
        assert_non_null(buf);
        buf[len] = '\0';
        if (ret_len)
                *ret_len = len;
        return buf;
}

static const char *wsp(struct fx *fx, const char *rel, char *buf, size_t size)
{
        snprintf(buf, size, "%s/%s", fx->ws, rel);
        return buf;
}

static const char *outp(struct fx *fx, const char *rel, char *buf, size_t size)
{
        snprintf(buf, size, "%s/%s", fx->out, rel);
        return buf;
}

static void put(struct fx *fx, const char *rel, const char *content)
{
        char p[512];
        write_path(wsp(fx, rel, p, sizeof(p)), content, strlen(content));
}

static void mkd(struct fx *fx, const char *rel)
{
        char p[512];
        if (mkdir(wsp(fx, rel, p, sizeof(p)), 0755) < 0)
                fail_msg("mkdir %s: %s", p, strerror(errno));
}

static void ln(struct fx *fx, const char *target, const char *rel)
{
        char p[512];
        if (symlink(target, wsp(fx, rel, p, sizeof(p))) < 0)
                fail_msg("symlink %s: %s", p, strerror(errno));
}

static bool ws_exists(struct fx *fx, const char *rel)
{
        char p[512];
        struct stat st;
        return lstat(wsp(fx, rel, p, sizeof(p)), &st) == 0;
}

static bool is_symlink(struct fx *fx, const char *rel)
{
        char p[512];
        struct stat st;
        return lstat(wsp(fx, rel, p, sizeof(p)), &st) == 0 && S_ISLNK(st.st_mode);
}

static char *ws_slurp(struct fx *fx, const char *rel)
{
        char p[512];
        return slurp(wsp(fx, rel, p, sizeof(p)), NULL);
}

static size_t count_dir(const char *path)
{
        size_t n = 0;
        DIR *d = opendir(path);
        assert_non_null(d);
        struct dirent *de;
        while ((de = readdir(d)))
                if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
                        n++;
        closedir(d);
        return n;
}

/* outside/ holds exactly what setup put there, unchanged. */
static void assert_outside_intact(struct fx *fx)
{
        char p[256];
        char *s = slurp(outp(fx, "secret", p, sizeof(p)), NULL);
        assert_non_null(s);
        assert_string_equal(s, SECRET);
        free(s);
        s = slurp(outp(fx, "passwd", p, sizeof(p)), NULL);
        assert_non_null(s);
        assert_string_equal(s, OUT_PASSWD);
        free(s);
        if (count_dir(fx->out) != 2)
                fail_msg("outside/ gained or lost entries: %zu", count_dir(fx->out));
}

static int setup(void **state)
{
        struct fx *fx = calloc(1, sizeof(*fx));
        assert_non_null(fx);
        snprintf(fx->base, sizeof(fx->base), "/tmp/ws-test-XXXXXX");
        assert_non_null(mkdtemp(fx->base));
        snprintf(fx->ws, sizeof(fx->ws), "%s/ws", fx->base);
        snprintf(fx->out, sizeof(fx->out), "%s/outside", fx->base);
        assert_int_equal(mkdir(fx->ws, 0755), 0);
        assert_int_equal(mkdir(fx->out, 0755), 0);
        char p[256];
        write_path(outp(fx, "secret", p, sizeof(p)), SECRET, strlen(SECRET));
        write_path(outp(fx, "passwd", p, sizeof(p)), OUT_PASSWD, strlen(OUT_PASSWD));
        struct err *e = NULL;
        if (workspace_open(fx->ws, NULL, &fx->w, &e) < 0)
                fail_msg("open: %s", err_msg(e));
        *state = fx;
        return 0;
}

static int teardown(void **state)
{
        struct fx *fx = *state;
        workspace_close(fx->w);
        nftw(fx->base, rm_one, 16, FTW_DEPTH | FTW_PHYS);
        free(fx);
        return 0;
}

static struct workspace *reopen(struct fx *fx, const struct workspace_limits *lim)
{
        struct err *e = NULL;
        workspace_close(fx->w);
        fx->w = NULL;
        if (workspace_open(fx->ws, lim, &fx->w, &e) < 0)
                fail_msg("open: %s", err_msg(e));
        return fx->w;
}

#define assert_ok(call)                                                                 \
        do {                                                                            \
                struct err *e_ = NULL;                                                  \
                struct err **err = &e_;                                                 \
                if ((call) < 0)                                                         \
                        fail_msg("%s: %s", #call, err_msg(e_));                         \
                err_free(e_);                                                           \
        } while (0)

/* Expect failure with `code` and a message containing `needle`. */
#define assert_fails(call, code, needle)                                                        \
        do {                                                                                    \
                struct err *e_ = NULL;                                                          \
                struct err **err = &e_;                                                         \
                if ((call) >= 0)                                                                \
                        fail_msg("%s succeeded, expected an error", #call);                     \
                if (err_code(e_) != (code))                                                     \
                        fail_msg("%s: code %s, want %s (%s)", #call,                            \
                                 workspace_error_name(err_code(e_)) ?: "-", workspace_error_name(code) ?: "-", \
                                 err_msg(e_));                                                  \
                if (!strstr(err_msg(e_), (needle)))                                             \
                        fail_msg("message '%s' lacks '%s'", err_msg(e_), (needle));             \
                err_free(e_);                                                                   \
        } while (0)

/* Read through the API; NULL plus the code when it fails. */
static char *api_read(struct workspace *w, const char *rel, int *ret_code)
{
        struct err *e = NULL;
        char *data = NULL;
        size_t len = 0;
        if (workspace_read(w, rel, &data, &len, &e) < 0) {
                *ret_code = err_code(e);
                err_free(e);
                return NULL;
        }
        *ret_code = 0;
        return data;
}

/* Every operation on `rel` is refused with `code`, and outside/ is intact. */
static void assert_all_refused(struct fx *fx, const char *rel, int code, const char *needle)
{
        char *d = NULL;
        size_t n = 0;
        bool existed = true;
        cJSON *j = NULL;
        assert_fails(workspace_read(fx->w, rel, &d, &n, err), code, needle);
        assert_fails(workspace_write(fx->w, rel, "pwned", 5, false, err), code, needle);
        assert_fails(workspace_write(fx->w, rel, "pwned", 5, true, err), code, needle);
        assert_fails(workspace_delete(fx->w, rel, &existed, err), code, needle);
        assert_fails(workspace_list(fx->w, rel, &j, err), code, needle);
        assert_null(d);
        assert_null(j);
        assert_outside_intact(fx);
}

/* ==== basic operations ================================================== */

static void test_open_errors(void **state)
{
        struct fx *fx = *state;
        struct workspace *w = NULL;
        char p[256];
        assert_fails(workspace_open(wsp(fx, "missing", p, sizeof(p)), NULL, &w, err), WORKSPACE_NOT_FOUND,
                     "workspace: open directory");
        put(fx, "file", "x");
        assert_fails(workspace_open(wsp(fx, "file", p, sizeof(p)), NULL, &w, err), WORKSPACE_IO, "file");
        assert_fails(workspace_open("", NULL, &w, err), WORKSPACE_INVALID, "no directory");
        assert_null(w);
        workspace_close(NULL);
        /* the root itself may be reached through a symlink: it is trusted */
        assert_int_equal(symlink(fx->ws, outp(fx, "../wslink", p, sizeof(p))), 0);
        assert_ok(workspace_open(p, NULL, &w, err));
        workspace_close(w);
}

static void test_write_read_roundtrip(void **state)
{
        struct fx *fx = *state;
        unsigned char bin[512];
        for (size_t i = 0; i < sizeof(bin); i++)
                bin[i] = (unsigned char)(i * 7);
        assert_ok(workspace_write(fx->w, "bin.dat", bin, sizeof(bin), false, err));
        char *d = NULL;
        size_t n = 0;
        assert_ok(workspace_read(fx->w, "bin.dat", &d, &n, err));
        assert_int_equal(n, sizeof(bin));
        assert_memory_equal(d, bin, sizeof(bin));
        assert_int_equal(d[n], '\0');
        free(d);
        size_t len = 0;
        char p[256];
        char *raw = slurp(wsp(fx, "bin.dat", p, sizeof(p)), &len);
        assert_int_equal(len, sizeof(bin));
        assert_memory_equal(raw, bin, sizeof(bin));
        free(raw);
}

static void test_write_overwrite(void **state)
{
        struct fx *fx = *state;
        assert_ok(workspace_write(fx->w, "f.txt", "first version", 13, false, err));
        assert_ok(workspace_write(fx->w, "f.txt", "v2", 2, false, err));
        char *s = ws_slurp(fx, "f.txt");
        assert_string_equal(s, "v2");
        free(s);
}

static void test_write_create_dirs(void **state)
{
        struct fx *fx = *state;
        assert_fails(workspace_write(fx->w, "x/y.txt", "1", 1, false, err), WORKSPACE_NOT_FOUND,
                     "workspace: 'x/y.txt' not found");
        assert_false(ws_exists(fx, "x"));
        assert_ok(workspace_write(fx->w, "a/b/c/file.txt", "deep", 4, true, err));
        char *s = ws_slurp(fx, "a/b/c/file.txt");
        assert_string_equal(s, "deep");
        free(s);
        /* partly existing chain */
        assert_ok(workspace_write(fx->w, "a/b/d/e.txt", "e", 1, true, err));
        assert_true(ws_exists(fx, "a/b/d/e.txt"));
        /* a file in the way of a directory */
        assert_fails(workspace_write(fx->w, "a/b/c/file.txt/z", "z", 1, true, err), WORKSPACE_NOT_FOUND,
                     "not a directory");
}

static void test_write_empty_and_onto_dir(void **state)
{
        struct fx *fx = *state;
        assert_ok(workspace_write(fx->w, "empty", NULL, 0, false, err));
        char *d = NULL;
        size_t n = 99;
        assert_ok(workspace_read(fx->w, "empty", &d, &n, err));
        assert_int_equal(n, 0);
        assert_string_equal(d, "");
        free(d);
        mkd(fx, "dir");
        assert_fails(workspace_write(fx->w, "dir", "x", 1, false, err), WORKSPACE_NOT_FILE,
                     "workspace: 'dir' is a directory");
        assert_fails(workspace_write(fx->w, "new/", "x", 1, true, err), WORKSPACE_INVALID, "ends with '/'");
        assert_false(ws_exists(fx, "new"));
        assert_fails(workspace_write(fx->w, NULL, "x", 1, true, err), WORKSPACE_INVALID, "no path");
}

static void assert_mode(struct fx *fx, const char *rel, mode_t want)
{
        char p[256];
        struct stat st;
        if (lstat(wsp(fx, rel, p, sizeof(p)), &st) < 0)
                fail_msg("stat %s: %s", p, strerror(errno));
        if ((st.st_mode & 07777) != want)
                fail_msg("%s has mode %04o, want %04o", rel, st.st_mode & 07777, want);
}

static void test_modes(void **state)
{
        struct fx *fx = *state;
        mode_t old = umask(0); /* nothing beyond 0644 / 0755 even so */
        assert_ok(workspace_write(fx->w, "m/n/f", "x", 1, true, err));
        put(fx, "exec.sh", "#!/bin/sh\n");
        char p[256];
        assert_int_equal(chmod(wsp(fx, "exec.sh", p, sizeof(p)), 04755), 0);
        assert_ok(workspace_write(fx->w, "exec.sh", "echo\n", 5, false, err));
        umask(old);
        assert_mode(fx, "m", 0755);
        assert_mode(fx, "m/n", 0755);
        assert_mode(fx, "m/n/f", 0644);
        assert_mode(fx, "exec.sh", 0644); /* no setuid or exec bit carried over */
}

static void test_write_leaves_no_temp(void **state)
{
        struct fx *fx = *state;
        mkd(fx, "d");
        for (int i = 0; i < 20; i++)
                assert_ok(workspace_write(fx->w, "t.txt", "abc", 3, false, err));
        assert_fails(workspace_write(fx->w, "d", "x", 1, false, err), WORKSPACE_NOT_FILE, "directory");
        assert_int_equal(count_dir(fx->ws), 2); /* t.txt and d */
}

static void test_read_not_found(void **state)
{
        struct fx *fx = *state;
        char *d = NULL;
        size_t n = 0;
        assert_fails(workspace_read(fx->w, "a/b.txt", &d, &n, err), WORKSPACE_NOT_FOUND,
                     "workspace: 'a/b.txt' not found");
        put(fx, "real.txt", "r");
        assert_fails(workspace_read(fx->w, "real.txt/x", &d, &n, err), WORKSPACE_NOT_FOUND,
                     "a parent is not a directory");
        assert_null(d);
}

static void test_read_dir_refused(void **state)
{
        struct fx *fx = *state;
        mkd(fx, "d");
        char *d = NULL;
        size_t n = 0;
        assert_fails(workspace_read(fx->w, "d", &d, &n, err), WORKSPACE_NOT_FILE,
                     "workspace: 'd' is a directory, not a file");
}

static void on_alarm(int sig)
{
        (void)sig;
        static const char m[] = "test_workspace: a call blocked\n";
        if (write(2, m, sizeof(m) - 1) < 0)
                _exit(3);
        _exit(2);
}

static void test_read_fifo_does_not_block(void **state)
{
        struct fx *fx = *state;
        char p[256];
        assert_int_equal(mkfifo(wsp(fx, "pipe", p, sizeof(p)), 0644), 0);
        ln(fx, "pipe", "pipelink");
        signal(SIGALRM, on_alarm);
        alarm(10);
        char *d = NULL;
        size_t n = 0;
        assert_fails(workspace_read(fx->w, "pipe", &d, &n, err), WORKSPACE_NOT_FILE,
                     "workspace: 'pipe' is not a regular file");
        assert_fails(workspace_read(fx->w, "pipelink", &d, &n, err), WORKSPACE_NOT_FILE, "not a regular file");
        cJSON *j = NULL;
        assert_ok(workspace_manifest(fx->w, &j, err)); /* skipped, not opened */
        assert_int_equal(cJSON_GetArraySize(j), 0);
        cJSON_Delete(j);
        alarm(0);
        signal(SIGALRM, SIG_DFL);
}

static void test_read_device_refused(void **state)
{
        struct fx *fx = *state;
        char p[256];
        if (mknod(wsp(fx, "null", p, sizeof(p)), S_IFCHR | 0600, makedev(1, 3)) < 0) {
                print_message("mknod: %s (needs CAP_MKNOD)\n", strerror(errno));
                skip();
        }
        char *d = NULL;
        size_t n = 0;
        assert_fails(workspace_read(fx->w, "null", &d, &n, err), WORKSPACE_NOT_FILE, "not a regular file");
}

static void test_read_too_big(void **state)
{
        struct fx *fx = *state;
        char p[256];
        int fd = open(wsp(fx, "big.bin", p, sizeof(p)), O_WRONLY | O_CREAT, 0644);
        assert_true(fd >= 0);
        assert_int_equal(ftruncate(fd, 20971520), 0); /* sparse: 20 MiB */
        close(fd);
        char *d = NULL;
        size_t n = 0;
        assert_fails(workspace_read(fx->w, "big.bin", &d, &n, err), WORKSPACE_TOO_BIG,
                     "workspace: 'big.bin' is 20971520 bytes; the limit is 16777216");
        assert_null(d);
}

static void test_size_limits_custom(void **state)
{
        struct fx *fx = *state;
        struct workspace_limits lim = { .max_file_bytes = 1000 };
        reopen(fx, &lim);
        static char buf[1001];
        memset(buf, 'x', sizeof(buf));
        assert_ok(workspace_write(fx->w, "exact", buf, 1000, false, err));
        char *d = NULL;
        size_t n = 0;
        assert_ok(workspace_read(fx->w, "exact", &d, &n, err));
        assert_int_equal(n, 1000);
        free(d);
        d = NULL;
        /* refused before anything is touched: the old content stays */
        put(fx, "keep", "old");
        assert_fails(workspace_write(fx->w, "keep", buf, 1001, false, err), WORKSPACE_TOO_BIG,
                     "workspace: 'keep' is 1001 bytes; the limit is 1000");
        char *s = ws_slurp(fx, "keep");
        assert_string_equal(s, "old");
        free(s);
        assert_fails(workspace_write(fx->w, "newdir/f", buf, 1001, true, err), WORKSPACE_TOO_BIG, "limit");
        assert_false(ws_exists(fx, "newdir"));
        put(fx, "over", "");
        char p[256];
        write_path(wsp(fx, "over", p, sizeof(p)), buf, 1001);
        assert_fails(workspace_read(fx->w, "over", &d, &n, err), WORKSPACE_TOO_BIG,
                     "'over' is 1001 bytes; the limit is 1000");
        assert_int_equal(count_dir(fx->ws), 3);
}

static void test_delete_file(void **state)
{
        struct fx *fx = *state;
        put(fx, "f", "x");
        bool existed = false;
        assert_ok(workspace_delete(fx->w, "f", &existed, err));
        assert_true(existed);
        assert_false(ws_exists(fx, "f"));
        assert_ok(workspace_delete(fx->w, "f", &existed, err));
        assert_false(existed);
        assert_ok(workspace_delete(fx->w, "no/such/parent", &existed, err));
        assert_false(existed);
        put(fx, "g", "x");
        assert_ok(workspace_delete(fx->w, "g/child", &existed, err)); /* parent is a file */
        assert_false(existed);
        assert_ok(workspace_delete(fx->w, "g", NULL, err));
}

static void test_delete_dirs(void **state)
{
        struct fx *fx = *state;
        mkd(fx, "empty");
        mkd(fx, "full");
        put(fx, "full/f", "x");
        bool existed = false;
        assert_ok(workspace_delete(fx->w, "empty", &existed, err));
        assert_true(existed);
        assert_fails(workspace_delete(fx->w, "full", &existed, err), WORKSPACE_INVALID,
                     "workspace: 'full' is a directory that is not empty");
        assert_true(ws_exists(fx, "full/f"));
        assert_fails(workspace_delete(fx->w, "", &existed, err), WORKSPACE_INVALID, "the path is empty");
        assert_fails(workspace_delete(fx->w, ".", &existed, err), WORKSPACE_INVALID, "is the workspace root");
        assert_fails(workspace_delete(fx->w, "./", &existed, err), WORKSPACE_INVALID, "is the workspace root");
}

static const char *jstr(const cJSON *o, const char *k)
{
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
        assert_true(cJSON_IsString(v));
        return v->valuestring;
}

static double jnum(const cJSON *o, const char *k)
{
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
        assert_true(cJSON_IsNumber(v));
        return v->valuedouble;
}

static void test_list_sorted_types(void **state)
{
        struct fx *fx = *state;
        put(fx, "f", "hello");
        put(fx, "Z", "");
        mkd(fx, "d");
        ln(fx, "f", "s");
        char p[256];
        assert_int_equal(mkfifo(wsp(fx, "p", p, sizeof(p)), 0644), 0);
        cJSON *j = NULL;
        assert_ok(workspace_list(fx->w, "", &j, err));
        static const struct {
                const char *name, *type;
                double size;
        } want[] = { { "Z", "file", 0 }, { "d", "dir", 0 }, { "f", "file", 5 },
                     { "p", "other", 0 }, { "s", "symlink", 0 } };
        assert_int_equal(cJSON_GetArraySize(j), 5);
        for (int i = 0; i < 5; i++) {
                const cJSON *o = cJSON_GetArrayItem(j, i);
                assert_string_equal(jstr(o, "name"), want[i].name);
                assert_string_equal(jstr(o, "type"), want[i].type);
                assert_true(jnum(o, "size") == want[i].size);
        }
        cJSON_Delete(j);
        put(fx, "d/inner", "1");
        assert_ok(workspace_list(fx->w, "d", &j, err));
        assert_int_equal(cJSON_GetArraySize(j), 1);
        assert_string_equal(jstr(cJSON_GetArrayItem(j, 0), "name"), "inner");
        cJSON_Delete(j);
}

static void test_list_root_forms(void **state)
{
        struct fx *fx = *state;
        put(fx, "a", "1");
        mkd(fx, "b");
        static const char *const forms[] = { "", ".", "./", ".//.", "././" };
        char *first = NULL;
        for (size_t i = 0; i < sizeof(forms) / sizeof(forms[0]); i++) {
                cJSON *j = NULL;
                assert_ok(workspace_list(fx->w, forms[i], &j, err));
                char *s = cJSON_PrintUnformatted(j);
                if (!first)
                        first = s;
                else {
                        assert_string_equal(s, first);
                        free(s);
                }
                cJSON_Delete(j);
        }
        assert_string_equal(first, "[{\"name\":\"a\",\"type\":\"file\",\"size\":1},"
                                   "{\"name\":\"b\",\"type\":\"dir\",\"size\":0}]");
        free(first);
}

static void test_list_errors(void **state)
{
        struct fx *fx = *state;
        put(fx, "f", "x");
        cJSON *j = NULL;
        assert_fails(workspace_list(fx->w, "f", &j, err), WORKSPACE_NOT_FILE, "workspace: 'f' is not a directory");
        assert_fails(workspace_list(fx->w, "nope", &j, err), WORKSPACE_NOT_FOUND, "workspace: 'nope' not found");
        assert_null(j);
}

static void test_list_cap(void **state)
{
        struct fx *fx = *state;
        struct workspace_limits lim = { .max_list_entries = 3 };
        reopen(fx, &lim);
        put(fx, "1", "");
        put(fx, "2", "");
        put(fx, "3", "");
        cJSON *j = NULL;
        assert_ok(workspace_list(fx->w, ".", &j, err));
        assert_int_equal(cJSON_GetArraySize(j), 3);
        cJSON_Delete(j);
        j = NULL;
        put(fx, "4", "");
        assert_fails(workspace_list(fx->w, ".", &j, err), WORKSPACE_TOO_BIG,
                     "workspace: '.' has more than 3 entries; the limit is 3");
        assert_fails(workspace_manifest(fx->w, &j, err), WORKSPACE_TOO_BIG, "more than 3 entries");
        assert_null(j);
}

#define SHA_ABC "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
#define SHA_EMPTY "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
#define SHA_MILLION_A "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"

static void test_manifest_hashes(void **state)
{
        struct fx *fx = *state;
        put(fx, "abc", "abc");
        put(fx, "empty", "");
        mkd(fx, "a");
        put(fx, "a.txt", "abc");
        put(fx, "a/b", "");
        mkd(fx, "dir");
        mkd(fx, "dir/sub");
        mkd(fx, "dir/emptydir");
        put(fx, "dir/sub/x.txt", "abc");
        put(fx, "B", "abc");
        ln(fx, "abc", "lnk");
        ln(fx, "dir", "dirlnk");
        char *million = malloc(1000000);
        assert_non_null(million);
        memset(million, 'a', 1000000);
        char p[256];
        write_path(wsp(fx, "dir/million", p, sizeof(p)), million, 1000000);
        free(million);

        cJSON *j = NULL;
        assert_ok(workspace_manifest(fx->w, &j, err));
        static const struct {
                const char *path, *sha;
                double size;
        } want[] = {
                { "B", SHA_ABC, 3 },          { "a.txt", SHA_ABC, 3 },
                { "a/b", SHA_EMPTY, 0 },      { "abc", SHA_ABC, 3 },
                { "dir/million", SHA_MILLION_A, 1000000 },
                { "dir/sub/x.txt", SHA_ABC, 3 }, { "empty", SHA_EMPTY, 0 },
        };
        char *dump = cJSON_Print(j);
        if (cJSON_GetArraySize(j) != (int)(sizeof(want) / sizeof(want[0])))
                fail_msg("manifest: %s", dump);
        free(dump);
        for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
                const cJSON *o = cJSON_GetArrayItem(j, (int)i);
                assert_string_equal(jstr(o, "path"), want[i].path);
                assert_string_equal(jstr(o, "sha256"), want[i].sha);
                assert_true(jnum(o, "size") == want[i].size);
        }
        cJSON_Delete(j);
}

static void test_manifest_caps(void **state)
{
        struct fx *fx = *state;
        struct workspace_limits lim = { .max_total_bytes = 10, .max_manifest_files = 3 };
        reopen(fx, &lim);
        put(fx, "a", "123456");
        cJSON *j = NULL;
        assert_ok(workspace_manifest(fx->w, &j, err));
        cJSON_Delete(j);
        j = NULL;
        put(fx, "b", "123456");
        assert_fails(workspace_manifest(fx->w, &j, err), WORKSPACE_TOO_BIG,
                     "would take the manifest over 10 hashed bytes, the limit");
        assert_null(j);
        assert_ok(workspace_delete(fx->w, "b", NULL, err));
        put(fx, "c", "");
        put(fx, "d", "");
        put(fx, "e", "");
        assert_fails(workspace_manifest(fx->w, &j, err), WORKSPACE_TOO_BIG,
                     "the manifest has more than 3 files; the limit is 3");
}

static void test_manifest_depth_cap(void **state)
{
        struct fx *fx = *state;
        char rel[1024] = "";
        size_t o = 0;
        for (unsigned i = 0; i <= WORKSPACE_MANIFEST_DEPTH_MAX + 1; i++) {
                o += (size_t)snprintf(rel + o, sizeof(rel) - o, "%sd", o ? "/" : "");
                mkd(fx, rel);
        }
        cJSON *j = NULL;
        assert_fails(workspace_manifest(fx->w, &j, err), WORKSPACE_TOO_BIG, "is nested deeper than 128");
}

/* ---- atomic write -------------------------------------------------------- */

#define BIG (8u << 20)

struct writer {
        struct workspace *w;
        const char *a, *b;
        atomic_bool done;
        int failures;
};

static void *writer_main(void *arg)
{
        struct writer *wr = arg;
        for (int i = 0; i < 16; i++) {
                struct err *e = NULL;
                /* 'B' content is one byte shorter: a torn file shows in the length too */
                int r = i % 2 ? workspace_write(wr->w, "big", wr->a, BIG, false, &e)
                              : workspace_write(wr->w, "big", wr->b, BIG - 1, false, &e);
                if (r < 0)
                        wr->failures++;
                err_free(e);
        }
        atomic_store(&wr->done, true);
        return NULL;
}

static bool uniform(const char *d, size_t n, char c)
{
        for (size_t i = 0; i < n; i++)
                if (d[i] != c)
                        return false;
        return true;
}

static void test_atomic_write_concurrent_reader(void **state)
{
        struct fx *fx = *state;
        char *a = malloc(BIG), *b = malloc(BIG);
        assert_non_null(a);
        assert_non_null(b);
        memset(a, 'A', BIG);
        memset(b, 'B', BIG);
        assert_ok(workspace_write(fx->w, "big", a, BIG, false, err));
        struct writer wr = { .w = fx->w, .a = a, .b = b };
        pthread_t t;
        assert_int_equal(pthread_create(&t, NULL, writer_main, &wr), 0);
        unsigned reads = 0, saw_a = 0, saw_b = 0, bad = 0;
        while (!atomic_load(&wr.done)) {
                struct err *e = NULL;
                char *d = NULL;
                size_t n = 0;
                if (workspace_read(fx->w, "big", &d, &n, &e) < 0) {
                        print_message("read failed: %s\n", err_msg(e));
                        bad++;
                } else if (n == BIG && uniform(d, n, 'A')) {
                        saw_a++;
                } else if (n == BIG - 1 && uniform(d, n, 'B')) {
                        saw_b++;
                } else {
                        print_message("torn read: %zu bytes, first %c\n", n, n ? d[0] : '-');
                        bad++;
                }
                err_free(e);
                free(d);
                reads++;
        }
        pthread_join(t, NULL);
        print_message("atomic write: %u reads (%u old-A, %u new-B), %u bad\n", reads, saw_a, saw_b, bad);
        assert_int_equal(wr.failures, 0);
        assert_int_equal(bad, 0);
        assert_true(reads > 0);
        assert_int_equal(count_dir(fx->ws), 1); /* no temp files left */
        free(a);
        free(b);
}

/* ---- misc ---------------------------------------------------------------- */

static void test_error_names(void **state)
{
        (void)state;
        assert_string_equal(workspace_error_name(WORKSPACE_NOT_FOUND), "not_found");
        assert_string_equal(workspace_error_name(WORKSPACE_OUTSIDE), "outside");
        assert_string_equal(workspace_error_name(WORKSPACE_TOO_BIG), "too_big");
        assert_string_equal(workspace_error_name(WORKSPACE_NOT_FILE), "not_file");
        assert_string_equal(workspace_error_name(WORKSPACE_INVALID), "invalid");
        assert_string_equal(workspace_error_name(WORKSPACE_IO), "io");
        assert_null(workspace_error_name(0));
        assert_string_equal(workspace_error_name(WORKSPACE_UNCONFIGURED), "no_workspace");
        assert_null(workspace_error_name(WORKSPACE_ERROR_MAX));
        assert_null(workspace_error_name(-1));
}

static void test_path_limits(void **state)
{
        struct fx *fx = *state;
        char comp[300], path[4200];
        memset(comp, 'c', 255);
        comp[255] = '\0';
        assert_ok(workspace_write(fx->w, comp, "x", 1, false, err)); /* a 255-byte name is fine */
        memset(comp, 'c', 256);
        comp[256] = '\0';
        assert_fails(workspace_write(fx->w, comp, "x", 1, false, err), WORKSPACE_INVALID,
                     "has a component of 256 bytes; the limit is 255");
        /* 16 components of 255 bytes: exactly 4095 bytes, lexically fine */
        size_t o = 0;
        for (int i = 0; i < 16; i++) {
                if (i)
                        path[o++] = '/';
                memset(path + o, 'p', 255);
                o += 255;
        }
        path[o] = '\0';
        assert_int_equal(o, 4095);
        char *d = NULL;
        size_t n = 0;
        assert_fails(workspace_read(fx->w, path, &d, &n, err), WORKSPACE_NOT_FOUND, "not found");
        path[o++] = 'p';
        path[o] = '\0';
        assert_fails(workspace_read(fx->w, path, &d, &n, err), WORKSPACE_INVALID, "is 4096 bytes; the limit is 4095");
        /* the quoted path in the message is cut short */
        struct err *e = NULL;
        assert_true(workspace_read(fx->w, path, &d, &n, &e) < 0);
        assert_true(strlen(err_msg(e)) < 300);
        assert_non_null(strstr(err_msg(e), "..."));
        err_free(e);
}

static void test_message_escapes(void **state)
{
        struct fx *fx = *state;
        char *d = NULL;
        size_t n = 0;
        assert_fails(workspace_read(fx->w, "bad\nname'\\/../../x", &d, &n, err), WORKSPACE_OUTSIDE,
                     "workspace: 'bad\\x0aname\\x27\\x5c/../../x' leaves the workspace");
}

static void test_odd_names_allowed(void **state)
{
        struct fx *fx = *state;
        static const char *const names[] = { "...", "..a", "a..", ".hidden", "a b", "back\\slash",
                                             "new\nline", "caf\xc3\xa9", "-rf", "~" };
        for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
                assert_ok(workspace_write(fx->w, names[i], names[i], strlen(names[i]), false, err));
                char *d = NULL;
                size_t n = 0;
                assert_ok(workspace_read(fx->w, names[i], &d, &n, err));
                assert_int_equal(n, strlen(names[i]));
                assert_memory_equal(d, names[i], n);
                free(d);
                assert_true(ws_exists(fx, names[i]));
        }
        assert_int_equal(count_dir(fx->ws), sizeof(names) / sizeof(names[0]));
}

static void test_concurrent_ops_share_workspace(void **state)
{
        /* The struct keeps no mutable state: list/manifest while writing. */
        struct fx *fx = *state;
        for (int i = 0; i < 50; i++) {
                char name[32];
                snprintf(name, sizeof(name), "d/f%02d", i);
                assert_ok(workspace_write(fx->w, name, name, strlen(name), true, err));
                cJSON *j = NULL;
                assert_ok(workspace_list(fx->w, "d", &j, err));
                assert_int_equal(cJSON_GetArraySize(j), i + 1);
                cJSON_Delete(j);
        }
        cJSON *j = NULL;
        assert_ok(workspace_manifest(fx->w, &j, err));
        assert_int_equal(cJSON_GetArraySize(j), 50);
        cJSON_Delete(j);
}

/* Run fn in a forked child; returns its exit status (77 = skip). */
static int in_child(void (*fn)(struct fx *), struct fx *fx)
{
        fflush(NULL);
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                fn(fx);
                _exit(0);
        }
        int status = 0;
        assert_int_equal(waitpid(pid, &status, 0), pid);
        if (WIFSIGNALED(status))
                fail_msg("child died of signal %d", WTERMSIG(status));
        return WEXITSTATUS(status);
}

#define CHILD_CHECK(cond)                                                                    \
        do {                                                                                 \
                if (!(cond)) {                                                               \
                        fprintf(stderr, "%s:%d: child check failed: %s\n", __FILE__, __LINE__, #cond); \
                        _exit(1);                                                            \
                }                                                                            \
        } while (0)

#if defined(__x86_64__)
#define TEST_AUDIT_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define TEST_AUDIT_ARCH AUDIT_ARCH_AARCH64
#endif

static void enosys_child(struct fx *fx)
{
#ifdef TEST_AUDIT_ARCH
        struct sock_filter f[] = {
                BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
                BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, TEST_AUDIT_ARCH, 1, 0),
                BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
                BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
                BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_openat2, 0, 1),
                BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
                BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        };
        struct sock_fprog prog = { .len = sizeof(f) / sizeof(f[0]), .filter = f };
        CHILD_CHECK(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0);
        CHILD_CHECK(prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) == 0);
        /* a workspace opened before: every call fails closed, none falls back */
        char p[256];
        put(fx, "ok.txt", "fine");
        struct err *e = NULL;
        char *d = NULL;
        size_t n = 0;
        CHILD_CHECK(workspace_read(fx->w, "ok.txt", &d, &n, &e) < 0);
        CHILD_CHECK(err_code(e) == WORKSPACE_IO && strstr(err_msg(e), "openat2 is not available"));
        CHILD_CHECK(workspace_write(fx->w, "new.txt", "x", 1, true, &e) < 0);
        CHILD_CHECK(strstr(err_msg(e), "openat2"));
        CHILD_CHECK(!ws_exists(fx, "new.txt"));
        cJSON *j = NULL;
        CHILD_CHECK(workspace_list(fx->w, "", &j, &e) < 0);
        CHILD_CHECK(workspace_manifest(fx->w, &j, &e) < 0);
        bool existed;
        CHILD_CHECK(workspace_delete(fx->w, "ok.txt", &existed, &e) < 0);
        CHILD_CHECK(ws_exists(fx, "ok.txt"));
        /* and a new one is refused at open */
        struct workspace *w = NULL;
        CHILD_CHECK(workspace_open(wsp(fx, "", p, sizeof(p)), NULL, &w, &e) < 0);
        CHILD_CHECK(err_code(e) == WORKSPACE_IO);
        CHILD_CHECK(strstr(err_msg(e), "openat2 with RESOLVE_BENEATH is not available"));
        err_free(e);
#else
        (void)fx;
        _exit(77);
#endif
}

static void test_openat2_missing_fails_closed(void **state)
{
        int r = in_child(enosys_child, *state);
        if (r == 77)
                skip();
        assert_int_equal(r, 0);
}

/* ==== traversal battery ================================================== */

static void test_trav_dotdot_etc_passwd(void **state)
{
        assert_all_refused(*state, "../etc/passwd", WORKSPACE_OUTSIDE,
                           "workspace: '../etc/passwd' leaves the workspace");
        assert_all_refused(*state, "../outside/secret", WORKSPACE_OUTSIDE, "leaves the workspace");
}

static void test_trav_nested_dotdot(void **state)
{
        struct fx *fx = *state;
        mkd(fx, "a");
        assert_all_refused(fx, "a/../../etc/passwd", WORKSPACE_OUTSIDE,
                           "workspace: 'a/../../etc/passwd' leaves the workspace");
        assert_all_refused(fx, "a/../../outside/secret", WORKSPACE_OUTSIDE, "leaves the workspace");
}

static void test_trav_absolute(void **state)
{
        struct fx *fx = *state;
        assert_all_refused(fx, "/etc/passwd", WORKSPACE_OUTSIDE,
                           "workspace: '/etc/passwd' leaves the workspace (an absolute path");
        assert_all_refused(fx, "//etc/passwd", WORKSPACE_OUTSIDE, "absolute");
        char abs[256];
        snprintf(abs, sizeof(abs), "%s/secret", fx->out);
        assert_all_refused(fx, abs, WORKSPACE_OUTSIDE, "absolute");
        cJSON *j = NULL;
        assert_fails(workspace_list(fx->w, "/", &j, err), WORKSPACE_OUTSIDE, "absolute");
}

static void test_trav_dot_then_dotdot(void **state)
{
        assert_all_refused(*state, "./../x", WORKSPACE_OUTSIDE, "workspace: './../x' leaves the workspace");
        assert_all_refused(*state, "./../outside/secret", WORKSPACE_OUTSIDE, "leaves the workspace");
}

static void test_trav_dot_inside_dotdot(void **state)
{
        struct fx *fx = *state;
        mkd(fx, "a");
        assert_all_refused(fx, "a/./../../x", WORKSPACE_OUTSIDE, "workspace: 'a/./../../x' leaves the workspace");
        assert_all_refused(fx, "a/.//./../..//outside/secret", WORKSPACE_OUTSIDE, "leaves the workspace");
}

static void test_trav_bare_dotdot(void **state)
{
        struct fx *fx = *state;
        assert_all_refused(fx, "..", WORKSPACE_OUTSIDE, "workspace: '..' leaves the workspace");
        assert_all_refused(fx, "../", WORKSPACE_OUTSIDE, "leaves the workspace");
        assert_all_refused(fx, "../..", WORKSPACE_OUTSIDE, "leaves the workspace");
        assert_all_refused(fx, "../ws/../outside", WORKSPACE_OUTSIDE, "leaves the workspace");
}

static void test_trav_dot_is_root(void **state)
{
        struct fx *fx = *state;
        put(fx, "f", "x");
        char *d = NULL;
        size_t n = 0;
        bool existed = false;
        assert_fails(workspace_read(fx->w, ".", &d, &n, err), WORKSPACE_INVALID,
                     "workspace: '.' is the workspace root; a file name is needed");
        assert_fails(workspace_read(fx->w, "", &d, &n, err), WORKSPACE_INVALID, "the path is empty");
        assert_fails(workspace_write(fx->w, ".", "x", 1, true, err), WORKSPACE_INVALID, "workspace root");
        assert_fails(workspace_write(fx->w, "", "x", 1, true, err), WORKSPACE_INVALID, "empty");
        assert_fails(workspace_delete(fx->w, ".", &existed, err), WORKSPACE_INVALID, "workspace root");
        cJSON *j = NULL;
        assert_ok(workspace_list(fx->w, ".", &j, err));
        assert_int_equal(cJSON_GetArraySize(j), 1);
        cJSON_Delete(j);
        assert_true(ws_exists(fx, "f"));
        assert_outside_intact(fx);
}

static void test_trav_inroot_dotdot_refused(void **state)
{
        /* Documented rule: every '..' is refused, even one that stays inside. */
        struct fx *fx = *state;
        mkd(fx, "a");
        put(fx, "b", "b");
        char *d = NULL;
        size_t n = 0;
        assert_fails(workspace_read(fx->w, "a/../b", &d, &n, err), WORKSPACE_INVALID,
                     "workspace: 'a/../b' contains '..'; workspace paths may not use '..'");
        assert_fails(workspace_write(fx->w, "a/../c", "x", 1, true, err), WORKSPACE_INVALID, "'..'");
        assert_false(ws_exists(fx, "c"));
        cJSON *j = NULL;
        assert_fails(workspace_list(fx->w, "a/..", &j, err), WORKSPACE_INVALID, "'..'");
        assert_ok(workspace_check_path("a/b", 3, false, err));
        assert_fails(workspace_check_path("a/../b", 6, false, err), WORKSPACE_INVALID, "'..'");
}

static void test_trav_encoded_names_are_literal(void **state)
{
        struct fx *fx = *state;
        assert_ok(workspace_write(fx->w, "%2e%2e/x", "lit", 3, true, err));
        assert_true(ws_exists(fx, "%2e%2e/x"));
        assert_ok(workspace_write(fx->w, "..%2f..%2fsecret", "lit", 3, false, err));
        assert_true(ws_exists(fx, "..%2f..%2fsecret"));
        assert_ok(workspace_write(fx->w, "%252e%252e", "lit", 3, false, err));
        assert_ok(workspace_write(fx->w, "..\\..\\secret", "lit", 3, false, err)); /* backslash is a byte */
        assert_ok(workspace_write(fx->w, "\xc0\xae\xc0\xae", "lit", 3, true, err)); /* overlong "..": bytes */
        char *d = NULL;
        size_t n = 0;
        assert_ok(workspace_read(fx->w, "%2e%2e/x", &d, &n, err));
        assert_string_equal(d, "lit");
        free(d);
        assert_int_equal(count_dir(fx->ws), 5);
        assert_outside_intact(fx);
}

static void test_trav_slashes_normalised(void **state)
{
        struct fx *fx = *state;
        assert_ok(workspace_write(fx->w, "a//b", "ab", 2, true, err));
        char *s = ws_slurp(fx, "a/b");
        assert_string_equal(s, "ab");
        free(s);
        char *d = NULL;
        size_t n = 0;
        assert_ok(workspace_read(fx->w, "a/b/", &d, &n, err)); /* trailing '/' dropped */
        assert_string_equal(d, "ab");
        free(d);
        assert_ok(workspace_read(fx->w, "./a/./b", &d, &n, err));
        free(d);
        cJSON *j = NULL;
        assert_ok(workspace_list(fx->w, "a//", &j, err));
        assert_int_equal(cJSON_GetArraySize(j), 1);
        cJSON_Delete(j);
        assert_fails(workspace_write(fx->w, "a/b/", "x", 1, false, err), WORKSPACE_INVALID, "ends with '/'");
        assert_int_equal(count_dir(fx->ws), 1);
}

static void test_trav_nul_inside(void **state)
{
        struct fx *fx = *state;
        static const char p1[] = "a\0/../../outside/secret";
        static const char p2[] = "x.txt\0.png";
        assert_fails(workspace_check_path(p1, sizeof(p1) - 1, false, err), WORKSPACE_INVALID,
                     "workspace: 'a\\x00/../../outside/secret' contains a NUL byte");
        assert_fails(workspace_check_path(p2, sizeof(p2) - 1, false, err), WORKSPACE_INVALID, "NUL");
        assert_fails(workspace_check_path("\0", 1, true, err), WORKSPACE_INVALID, "NUL");
        assert_ok(workspace_check_path(p2, 5, false, err)); /* the part before the NUL alone is fine */
        assert_outside_intact(fx);
}

static void test_trav_symlink_absolute(void **state)
{
        struct fx *fx = *state;
        ln(fx, "/etc/passwd", "link");
        char *d = NULL;
        size_t n = 0;
        assert_fails(workspace_read(fx->w, "link", &d, &n, err), WORKSPACE_OUTSIDE,
                     "workspace: 'link' resolves outside the workspace");
        char abs[256];
        snprintf(abs, sizeof(abs), "%s/secret", fx->out);
        ln(fx, abs, "link2");
        assert_fails(workspace_read(fx->w, "link2", &d, &n, err), WORKSPACE_OUTSIDE, "resolves outside");
        /* RESOLVE_BENEATH refuses absolute targets even when they point inside */
        put(fx, "real.txt", "in");
        snprintf(abs, sizeof(abs), "%s/real.txt", fx->ws);
        ln(fx, abs, "abs-inside");
        assert_fails(workspace_read(fx->w, "abs-inside", &d, &n, err), WORKSPACE_OUTSIDE, "resolves outside");
        assert_null(d);
        assert_outside_intact(fx);
}

static void test_trav_symlink_relative(void **state)
{
        struct fx *fx = *state;
        ln(fx, "../outside/secret", "up1");
        mkd(fx, "a");
        ln(fx, "../../outside/secret", "a/up2");
        ln(fx, "../../../../../../../../../../etc/passwd", "a/deep");
        int code;
        assert_null(api_read(fx->w, "up1", &code));
        assert_int_equal(code, WORKSPACE_OUTSIDE);
        char *d = NULL;
        size_t n = 0;
        assert_fails(workspace_read(fx->w, "a/up2", &d, &n, err), WORKSPACE_OUTSIDE,
                     "workspace: 'a/up2' resolves outside the workspace");
        assert_fails(workspace_read(fx->w, "a/deep", &d, &n, err), WORKSPACE_OUTSIDE, "resolves outside");
        assert_outside_intact(fx);
}

static void test_trav_symlink_chain(void **state)
{
        struct fx *fx = *state;
        mkd(fx, "x");
        mkd(fx, "x/y");
        ln(fx, "l2", "l1");
        ln(fx, "x/l3", "l2");
        ln(fx, "y/l4", "x/l3");
        ln(fx, "../../../outside/secret", "x/y/l4"); /* only the last hop leaves */
        char *d = NULL;
        size_t n = 0;
        assert_fails(workspace_read(fx->w, "l1", &d, &n, err), WORKSPACE_OUTSIDE,
                     "workspace: 'l1' resolves outside the workspace");
        /* the same chain ending inside is followed */
        assert_int_equal(unlink(wsp(fx, "x/y/l4", (char[256]){ 0 }, 256)), 0);
        put(fx, "target", "chained");
        ln(fx, "../../target", "x/y/l4");
        assert_ok(workspace_read(fx->w, "l1", &d, &n, err));
        assert_string_equal(d, "chained");
        free(d);
        assert_outside_intact(fx);
}

static void test_trav_dir_symlink_as_parent(void **state)
{
        struct fx *fx = *state;
        ln(fx, "../outside", "linkdir");
        assert_all_refused(fx, "linkdir/secret", WORKSPACE_OUTSIDE,
                           "workspace: 'linkdir/secret' resolves outside the workspace");
        assert_all_refused(fx, "linkdir/newfile", WORKSPACE_OUTSIDE, "resolves outside");
        assert_all_refused(fx, "linkdir/newdir/f", WORKSPACE_OUTSIDE, "resolves outside");
        cJSON *j = NULL;
        assert_fails(workspace_list(fx->w, "linkdir", &j, err), WORKSPACE_OUTSIDE, "resolves outside");
        ln(fx, "/etc", "etc");
        assert_all_refused(fx, "etc/passwd", WORKSPACE_OUTSIDE, "resolves outside");
        assert_true(is_symlink(fx, "linkdir"));
}

static void test_trav_inroot_symlinks_followed(void **state)
{
        struct fx *fx = *state;
        mkd(fx, "sub");
        put(fx, "real.txt", "real");
        ln(fx, "real.txt", "alias");
        ln(fx, "sub", "dirlink");
        ln(fx, "../real.txt", "sub/up"); /* '..' inside a target is fine while it stays beneath */
        char *d = NULL;
        size_t n = 0;
        assert_ok(workspace_read(fx->w, "alias", &d, &n, err));
        assert_string_equal(d, "real");
        free(d);
        assert_ok(workspace_read(fx->w, "sub/up", &d, &n, err));
        assert_string_equal(d, "real");
        free(d);
        assert_ok(workspace_write(fx->w, "dirlink/g", "g", 1, false, err)); /* parent link followed */
        assert_true(ws_exists(fx, "sub/g"));
        cJSON *j = NULL;
        assert_ok(workspace_list(fx->w, "dirlink", &j, err));
        assert_int_equal(cJSON_GetArraySize(j), 2);
        cJSON_Delete(j);
}

static void test_trav_hardlink_to_outside(void **state)
{
        /* Path resolution cannot see hard links: the inode is inside.  Only
         * the workspace owner can make one (the agent has no link op). */
        struct fx *fx = *state;
        char o[256], w[256];
        if (link(outp(fx, "secret", o, sizeof(o)), wsp(fx, "hl", w, sizeof(w))) < 0) {
                print_message("link: %s\n", strerror(errno));
                skip();
        }
        char *d = NULL;
        size_t n = 0;
        assert_ok(workspace_read(fx->w, "hl", &d, &n, err));
        assert_string_equal(d, SECRET); /* documented: the owner put it there */
        free(d);
        /* but a write replaces the directory entry: it never writes through */
        assert_ok(workspace_write(fx->w, "hl", "overwritten", 11, false, err));
        char *s = ws_slurp(fx, "hl");
        assert_string_equal(s, "overwritten");
        free(s);
        assert_outside_intact(fx);
        /* and delete removes only the in-workspace name */
        assert_int_equal(unlink(w), 0);
        assert_int_equal(link(o, w), 0);
        bool existed = false;
        assert_ok(workspace_delete(fx->w, "hl", &existed, err));
        assert_true(existed);
        assert_outside_intact(fx);
}

static void test_trav_magic_link_symlinks(void **state)
{
        struct fx *fx = *state;
        ln(fx, "/proc/self/root", "root");
        ln(fx, "/proc/self/cwd", "cwd");
        ln(fx, "/proc/self/fd", "fds");
        ln(fx, "../../../../../../../../../../proc/self/root", "relroot");
        assert_all_refused(fx, "root/etc/passwd", WORKSPACE_OUTSIDE, "resolves outside");
        assert_all_refused(fx, "cwd/x", WORKSPACE_OUTSIDE, "resolves outside");
        assert_all_refused(fx, "fds/0", WORKSPACE_OUTSIDE, "resolves outside");
        assert_all_refused(fx, "relroot/etc/passwd", WORKSPACE_OUTSIDE, "resolves outside");
}

static void test_trav_magic_links_in_proc_root(void **state)
{
        /* A workspace whose root is /proc/self: its entries are real magic
         * links, and RESOLVE_NO_MAGICLINKS must stop them. */
        struct fx *fx = *state;
        struct workspace *w = NULL;
        assert_ok(workspace_open("/proc/self", NULL, &w, err));
        char *d = NULL;
        size_t n = 0;
        char rel[64];
        assert_fails(workspace_read(w, "root/etc/passwd", &d, &n, err), WORKSPACE_OUTSIDE,
                     "workspace: 'root/etc/passwd' cannot be resolved safely");
        assert_fails(workspace_read(w, "cwd/etc/passwd", &d, &n, err), WORKSPACE_OUTSIDE, "resolved safely");
        assert_fails(workspace_read(w, "exe", &d, &n, err), WORKSPACE_OUTSIDE, "resolved safely");
        int slash = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
        assert_true(slash >= 0);
        snprintf(rel, sizeof(rel), "fd/%d/etc/passwd", slash);
        assert_fails(workspace_read(w, rel, &d, &n, err), WORKSPACE_OUTSIDE, "resolved safely");
        close(slash);
        assert_outside_intact(fx);
        cJSON *j = NULL;
        assert_fails(workspace_list(w, "root", &j, err), WORKSPACE_OUTSIDE, "resolved safely");
        assert_fails(workspace_list(w, "cwd", &j, err), WORKSPACE_OUTSIDE, "resolved safely");
        assert_null(d);
        workspace_close(w);
}

/* ---- a symlink swapped in during the call -------------------------------- */

struct flipper {
        int dirfd;
        atomic_bool stop;
        unsigned long flips;
};

static void *flip_main(void *arg)
{
        struct flipper *f = arg;
        while (!atomic_load(&f->stop)) {
                /* "flip" is a real directory or a symlink leading out, swapped atomically */
                if (renameat2(f->dirfd, "flip", f->dirfd, "flip.alt", RENAME_EXCHANGE) == 0)
                        f->flips++;
        }
        return NULL;
}

static void start_flip(struct fx *fx, const char *target, struct flipper *f, pthread_t *t)
{
        mkd(fx, "flip");
        put(fx, "flip/passwd", "inside\n");
        put(fx, "flip/victim", "v");
        ln(fx, target, "flip.alt");
        f->dirfd = open(fx->ws, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        assert_true(f->dirfd >= 0);
        atomic_store(&f->stop, false);
        f->flips = 0;
        assert_int_equal(pthread_create(t, NULL, flip_main, f), 0);
}

static void stop_flip(struct fx *fx, struct flipper *f, pthread_t t)
{
        char a[256], b[256];
        atomic_store(&f->stop, true);
        pthread_join(t, NULL);
        close(f->dirfd);
        unlink(wsp(fx, is_symlink(fx, "flip") ? "flip" : "flip.alt", a, sizeof(a)));
        nftw(wsp(fx, ws_exists(fx, "flip") ? "flip" : "flip.alt", b, sizeof(b)), rm_one, 16,
             FTW_DEPTH | FTW_PHYS);
}

static void flip_reads(struct fx *fx, const char *target)
{
        struct flipper f;
        pthread_t t;
        start_flip(fx, target, &f, &t);
        unsigned ok = 0, outside = 0, other = 0;
        for (int i = 0; i < 10000; i++) {
                int code;
                char *d = api_read(fx->w, "flip/passwd", &code);
                if (d) {
                        if (strcmp(d, "inside\n") != 0) {
                                atomic_store(&f.stop, true);
                                fail_msg("read %d returned outside content: %.40s", i, d);
                        }
                        ok++;
                } else if (code == WORKSPACE_OUTSIDE) {
                        outside++;
                } else if (code == WORKSPACE_NOT_FOUND || code == WORKSPACE_IO) {
                        other++; /* mid-exchange / rename retries exhausted: still a refusal */
                } else {
                        fail_msg("unexpected code %d", code);
                }
                free(d);
        }
        stop_flip(fx, &f, t);
        print_message("flip -> %s: %lu flips; 10000 reads: %u inside, %u refused outside, %u other\n", target,
                      f.flips, ok, outside, other);
        assert_int_equal(ok + outside + other, 10000);
        assert_true(f.flips > 0);
        assert_outside_intact(fx);
}

static void test_trav_race_symlink_swap_read(void **state)
{
        struct fx *fx = *state;
        flip_reads(fx, "/etc");
        flip_reads(fx, "../outside");
        flip_reads(fx, "../../../../../../../../../etc");
}

static void test_trav_race_symlink_swap_write_list_delete(void **state)
{
        struct fx *fx = *state;
        struct flipper f;
        pthread_t t;
        start_flip(fx, "../outside", &f, &t);
        unsigned listed = 0, wrote = 0, deleted = 0, codes[WORKSPACE_ERROR_MAX] = { 0 };
        for (int i = 0; i < 1000; i++) {
                char name[32];
                snprintf(name, sizeof(name), "flip/w%d", i);
                struct err *e = NULL;
                if (workspace_write(fx->w, name, "pwned", 5, false, &e) == 0)
                        wrote++;
                else if (err_code(e) > 0 && err_code(e) < WORKSPACE_ERROR_MAX)
                        codes[err_code(e)]++;
                if (err_code(e) == WORKSPACE_IO)
                        print_message("%s\n", err_msg(e));
                err_free(e);
                e = NULL;
                cJSON *j = NULL;
                if (workspace_list(fx->w, "flip", &j, &e) == 0) {
                        const cJSON *it;
                        cJSON_ArrayForEach(it, j)
                        {
                                const char *nm = jstr(it, "name");
                                if (strcmp(nm, "secret") == 0) {
                                        atomic_store(&f.stop, true);
                                        fail_msg("list saw the outside directory");
                                }
                        }
                        cJSON_Delete(j);
                        listed++;
                }
                err_free(e);
                e = NULL;
                bool existed = false;
                if (workspace_delete(fx->w, "flip/secret", &existed, &e) == 0 && existed)
                        deleted++;
                err_free(e);
        }
        stop_flip(fx, &f, t);
        print_message("flip write/list/delete: %lu flips, %u writes (%u refused outside, %u other), "
                      "%u lists inside, %u deletes\n",
                      f.flips, wrote, codes[WORKSPACE_OUTSIDE], 1000 - wrote - codes[WORKSPACE_OUTSIDE],
                      listed, deleted);
        assert_int_equal(deleted, 0); /* there is no "secret" inside */
        assert_true(f.flips > 0);
        assert_outside_intact(fx); /* no w%d landed outside, secret still there */
}

static void test_trav_write_final_symlink_out(void **state)
{
        struct fx *fx = *state;
        ln(fx, "../outside/secret", "link");
        ln(fx, "../outside/newfile", "dangling");
        ln(fx, "/etc/passwd", "etcp");
        assert_ok(workspace_write(fx->w, "link", "replaced", 8, false, err));
        assert_ok(workspace_write(fx->w, "dangling", "replaced", 8, false, err));
        assert_ok(workspace_write(fx->w, "etcp", "replaced", 8, false, err));
        assert_outside_intact(fx); /* secret unchanged, no newfile */
        assert_false(is_symlink(fx, "link"));
        char *s = ws_slurp(fx, "link");
        assert_string_equal(s, "replaced");
        free(s);
        assert_false(is_symlink(fx, "dangling"));
        assert_false(is_symlink(fx, "etcp"));
}

static void test_trav_write_final_symlink_inside(void **state)
{
        /* Even an in-root link is replaced, not written through: the rule
         * is the same for every final component. */
        struct fx *fx = *state;
        put(fx, "target", "orig");
        ln(fx, "target", "alias");
        assert_ok(workspace_write(fx->w, "alias", "new", 3, false, err));
        assert_false(is_symlink(fx, "alias"));
        char *s = ws_slurp(fx, "target");
        assert_string_equal(s, "orig");
        free(s);
}

static void test_trav_delete_symlink_only(void **state)
{
        struct fx *fx = *state;
        ln(fx, "../outside/secret", "link");
        ln(fx, "../outside", "linkdir");
        put(fx, "real", "r");
        ln(fx, "real", "alias");
        bool existed = false;
        assert_ok(workspace_delete(fx->w, "link", &existed, err));
        assert_true(existed);
        assert_false(ws_exists(fx, "link"));
        assert_ok(workspace_delete(fx->w, "linkdir/", &existed, err)); /* '/' does not make it follow */
        assert_true(existed);
        assert_false(ws_exists(fx, "linkdir"));
        assert_ok(workspace_delete(fx->w, "alias", &existed, err));
        assert_true(ws_exists(fx, "real"));
        assert_outside_intact(fx);
}

static void bind_child(struct fx *fx)
{
        if (unshare(CLONE_NEWNS) < 0)
                _exit(77);
        CHILD_CHECK(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) == 0);
        mkd(fx, "mnt");
        char m[256];
        CHILD_CHECK(mount(fx->out, wsp(fx, "mnt", m, sizeof(m)), NULL, MS_BIND, NULL) == 0);
        /* a root fd from before unshare() sees the old namespace's tree:
         * open the workspace again in this one */
        struct workspace *w = NULL;
        struct err *e = NULL;
        CHILD_CHECK(workspace_open(fx->ws, NULL, &w, &e) == 0);
        char *d = NULL;
        size_t n = 0;
        CHILD_CHECK(workspace_read(w, "mnt/secret", &d, &n, &e) < 0);
        CHILD_CHECK(err_code(e) == WORKSPACE_OUTSIDE);
        CHILD_CHECK(strstr(err_msg(e), "'mnt/secret' resolves outside the workspace"));
        CHILD_CHECK(workspace_write(w, "mnt/x", "x", 1, false, &e) < 0);
        CHILD_CHECK(err_code(e) == WORKSPACE_OUTSIDE);
        cJSON *j = NULL;
        CHILD_CHECK(workspace_list(w, "mnt", &j, &e) < 0);
        CHILD_CHECK(err_code(e) == WORKSPACE_OUTSIDE);
        CHILD_CHECK(workspace_manifest(w, &j, &e) == 0);
        CHILD_CHECK(cJSON_GetArraySize(j) == 0); /* the mount is not entered */
        cJSON_Delete(j);
        err_free(e);
        workspace_close(w);
        umount2(m, MNT_DETACH);
}

static void test_trav_bind_mount_inside(void **state)
{
        struct fx *fx = *state;
        int r = in_child(bind_child, fx);
        if (r == 77) {
                print_message("unshare(CLONE_NEWNS) not permitted\n");
                skip();
        }
        assert_int_equal(r, 0);
        assert_outside_intact(fx);
}

static void test_trav_symlink_loop(void **state)
{
        struct fx *fx = *state;
        ln(fx, "b", "a");
        ln(fx, "a", "b");
        ln(fx, "self/x", "self");
        char *d = NULL;
        size_t n = 0;
        assert_fails(workspace_read(fx->w, "a", &d, &n, err), WORKSPACE_OUTSIDE,
                     "workspace: 'a' cannot be resolved safely");
        assert_fails(workspace_read(fx->w, "self", &d, &n, err), WORKSPACE_OUTSIDE, "resolved safely");
        cJSON *j = NULL;
        assert_ok(workspace_manifest(fx->w, &j, err)); /* links are never followed there */
        cJSON_Delete(j);
}

static void test_trav_manifest_does_not_follow(void **state)
{
        struct fx *fx = *state;
        put(fx, "in.txt", "abc");
        ln(fx, "../outside", "linkdir");
        ln(fx, "../outside/secret", "link");
        ln(fx, "/etc", "etc");
        mkd(fx, "sub");
        ln(fx, "..", "sub/up");
        cJSON *j = NULL;
        assert_ok(workspace_manifest(fx->w, &j, err));
        assert_int_equal(cJSON_GetArraySize(j), 1);
        assert_string_equal(jstr(cJSON_GetArrayItem(j, 0), "path"), "in.txt");
        cJSON_Delete(j);
}

static void test_trav_create_dirs_through_link(void **state)
{
        struct fx *fx = *state;
        mkd(fx, "a");
        ln(fx, "../../outside", "a/out");
        assert_fails(workspace_write(fx->w, "a/out/newdir/deeper/f", "x", 1, true, err), WORKSPACE_OUTSIDE,
                     "resolves outside the workspace");
        assert_fails(workspace_write(fx->w, "a/out/f", "x", 1, true, err), WORKSPACE_OUTSIDE, "resolves outside");
        assert_outside_intact(fx);
        /* a missing component that is a dangling link leading out */
        ln(fx, "../outside/made", "dl");
        assert_fails(workspace_write(fx->w, "dl/f", "x", 1, true, err), WORKSPACE_OUTSIDE, "resolves outside");
        assert_outside_intact(fx);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_open_errors, setup, teardown),
                cmocka_unit_test_setup_teardown(test_write_read_roundtrip, setup, teardown),
                cmocka_unit_test_setup_teardown(test_write_overwrite, setup, teardown),
                cmocka_unit_test_setup_teardown(test_write_create_dirs, setup, teardown),
                cmocka_unit_test_setup_teardown(test_write_empty_and_onto_dir, setup, teardown),
                cmocka_unit_test_setup_teardown(test_modes, setup, teardown),
                cmocka_unit_test_setup_teardown(test_write_leaves_no_temp, setup, teardown),
                cmocka_unit_test_setup_teardown(test_read_not_found, setup, teardown),
                cmocka_unit_test_setup_teardown(test_read_dir_refused, setup, teardown),
                cmocka_unit_test_setup_teardown(test_read_fifo_does_not_block, setup, teardown),
                cmocka_unit_test_setup_teardown(test_read_device_refused, setup, teardown),
                cmocka_unit_test_setup_teardown(test_read_too_big, setup, teardown),
                cmocka_unit_test_setup_teardown(test_size_limits_custom, setup, teardown),
                cmocka_unit_test_setup_teardown(test_delete_file, setup, teardown),
                cmocka_unit_test_setup_teardown(test_delete_dirs, setup, teardown),
                cmocka_unit_test_setup_teardown(test_list_sorted_types, setup, teardown),
                cmocka_unit_test_setup_teardown(test_list_root_forms, setup, teardown),
                cmocka_unit_test_setup_teardown(test_list_errors, setup, teardown),
                cmocka_unit_test_setup_teardown(test_list_cap, setup, teardown),
                cmocka_unit_test_setup_teardown(test_manifest_hashes, setup, teardown),
                cmocka_unit_test_setup_teardown(test_manifest_caps, setup, teardown),
                cmocka_unit_test_setup_teardown(test_manifest_depth_cap, setup, teardown),
                cmocka_unit_test_setup_teardown(test_atomic_write_concurrent_reader, setup, teardown),
                cmocka_unit_test(test_error_names),
                cmocka_unit_test_setup_teardown(test_path_limits, setup, teardown),
                cmocka_unit_test_setup_teardown(test_message_escapes, setup, teardown),
                cmocka_unit_test_setup_teardown(test_odd_names_allowed, setup, teardown),
                cmocka_unit_test_setup_teardown(test_concurrent_ops_share_workspace, setup, teardown),
                cmocka_unit_test_setup_teardown(test_openat2_missing_fails_closed, setup, teardown),
                /* traversal battery */
                cmocka_unit_test_setup_teardown(test_trav_dotdot_etc_passwd, setup, teardown),
                cmocka_unit_test_setup_teardown(test_trav_nested_dotdot, setup, teardown),
                cmocka_unit_test_setup_teardown(test_trav_absolute, setup, teardown),
                cmocka_unit_test_setup_teardown(test_trav_dot_then_dotdot, setup, teardown),
                cmocka_unit_test_setup_teardown(test_trav_dot_inside_dotdot, setup, teardown),
                cmocka_unit_test_setup_teardown(test_trav_bare_dotdot, setup, teardown),
                cmocka_unit_test_setup_teardown(test_trav_dot_is_root, setup, teardown),
                cmocka_unit_test_setup_teardown(test_trav_inroot_dotdot_refused, setup, teardown),
                cmocka_unit_test_setup_teardown(test_trav_encoded_names_are_literal, setup, teardown),
                cmocka_unit_test_setup_teardown(test_trav_slashes_normalised, setup, teardown),
                cmocka_unit_test_setup_teardown(test_trav_nul_inside, setup, teardown),
                cmocka_unit_test_setup_teardown(test_trav_symlink_absolute, setup, teardown),
                cmocka_unit_test_setup_teardown(test_trav_symlink_relative, setup, teardown),
                cmocka_unit_test_setup_teardown(test_trav_symlink_chain, setup, teardown),
                cmocka_unit_test_setup_teardown(test_trav_dir_symlink_as_parent, setup, teardown),
                cmocka_unit_test_setup_teardown(test_trav_inroot_symlinks_followed, setup, teardown),
                cmocka_unit_test_setup_teardown(test_trav_hardlink_to_outside, setup, teardown),
                cmocka_unit_test_setup_teardown(test_trav_magic_link_symlinks, setup, teardown),
                cmocka_unit_test_setup_teardown(test_trav_magic_links_in_proc_root, setup, teardown),
                cmocka_unit_test_setup_teardown(test_trav_race_symlink_swap_read, setup, teardown),
                cmocka_unit_test_setup_teardown(test_trav_race_symlink_swap_write_list_delete, setup, teardown),
                cmocka_unit_test_setup_teardown(test_trav_write_final_symlink_out, setup, teardown),
                cmocka_unit_test_setup_teardown(test_trav_write_final_symlink_inside, setup, teardown),
                cmocka_unit_test_setup_teardown(test_trav_delete_symlink_only, setup, teardown),
                cmocka_unit_test_setup_teardown(test_trav_bind_mount_inside, setup, teardown),
                cmocka_unit_test_setup_teardown(test_trav_symlink_loop, setup, teardown),
                cmocka_unit_test_setup_teardown(test_trav_manifest_does_not_follow, setup, teardown),
                cmocka_unit_test_setup_teardown(test_trav_create_dirs_through_link, setup, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
