/* effects/workspace/workspace.c — agent file operations on the --workspace directory.
 *
 * Every agent path is checked lexically (check_path) and then resolved by the
 * kernel with openat2(RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS |
 * RESOLVE_NO_XDEV) relative to the root fd.  The lexical check alone would be
 * useless against symlinks; openat2 alone would accept in-root '..', which
 * we refuse for clarity.  Nothing here resolves an agent path any other way:
 * after openat2 the code only uses single-component names relative to fds
 * that openat2 (or a non-following openat in the manifest walk) returned.
 * See docs/workspace.md.
 */
#define _GNU_SOURCE
#include "effects/workspace/workspace.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/budget.h"
#include "common/cleanup.h"
#include "common/err.h"
#include "common/text.h"
#include "common/util.h"
#include "proto/json.h"

struct workspace {
        int rootfd; /* O_PATH | O_DIRECTORY */
        struct workspace_limits lim;
};

/* openat2 reports EAGAIN when a rename or mount raced with a '..' step (in a
 * symlink target); retrying is what the man page recommends. */
#define RESOLVE_RETRIES 64
#define QUOTE_MAX 200
#define CHUNK (64u * 1024u)

const char *workspace_error_name(int code)
{
        static const char *const names[WORKSPACE_ERROR_MAX] = {
                [WORKSPACE_NOT_FOUND] = "not_found", [WORKSPACE_OUTSIDE] = "outside",
                [WORKSPACE_TOO_BIG] = "too_big",     [WORKSPACE_NOT_FILE] = "not_file",
                [WORKSPACE_INVALID] = "invalid",     [WORKSPACE_IO] = "io",
                [WORKSPACE_UNCONFIGURED] = "no_workspace",
        };
        if (code <= 0 || code >= WORKSPACE_ERROR_MAX)
                return NULL;
        return names[code];
}


/* "workspace: '<path>' <reason>" with a code.  Returns -1. */
__attribute__((format(printf, 6, 7))) static int
fail_len(struct err **err, int code, int errnum, const char *rel, size_t len, const char *fmt, ...)
{
        char q[QUOTE_MAX], reason[256];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(reason, sizeof(reason), fmt, ap);
        va_end(ap);
        return err_setc(err, code, errnum, "workspace: '%s' %s", text_quote(rel, len, q, QUOTE_MAX), reason);
}

#define fail(err, code, errnum, rel, ...) fail_len(err, code, errnum, rel, strlen(rel), __VA_ARGS__)

/* ---- path rules ------------------------------------------------------- */

struct wpath {
        char norm[WORKSPACE_PATH_MAX + 1]; /* components joined by '/', "" = root */
        size_t ncomp;
        size_t last;        /* offset of the last component in norm */
        bool trailing_slash;
};

static int parse_path(const char *rel, size_t len, bool root_ok, struct wpath *p, struct err **err)
{
        if (!rel)
                return err_setc(err, WORKSPACE_INVALID, 0, "workspace: no path given");
        if (memchr(rel, '\0', len))
                return fail_len(err, WORKSPACE_INVALID, 0, rel, len, "contains a NUL byte");
        if (len > WORKSPACE_PATH_MAX)
                return fail_len(err, WORKSPACE_INVALID, 0, rel, len, "is %zu bytes; the limit is %u", len,
                                WORKSPACE_PATH_MAX);
        if (len > 0 && rel[0] == '/')
                return fail_len(err, WORKSPACE_OUTSIDE, 0, rel, len,
                                "leaves the workspace (an absolute path; workspace paths are relative)");

        long depth = 0;
        bool outside = false, dotdot = false;
        size_t long_comp = 0, o = 0;
        p->ncomp = 0;
        p->last = 0;
        for (size_t i = 0; i < len;) {
                size_t j = i;
                while (j < len && rel[j] != '/')
                        j++;
                size_t clen = j - i;
                const char *c = rel + i;
                i = j + 1;
                if (clen == 0 || (clen == 1 && c[0] == '.'))
                        continue;
                if (clen == 2 && c[0] == '.' && c[1] == '.') {
                        dotdot = true;
                        if (--depth < 0)
                                outside = true;
                        continue;
                }
                depth++;
                if (clen > WORKSPACE_NAME_MAX && !long_comp)
                        long_comp = clen;
                if (o)
                        p->norm[o++] = '/';
                p->last = o;
                memcpy(p->norm + o, c, clen);
                o += clen;
                p->ncomp++;
        }
        p->norm[o] = '\0';
        p->trailing_slash = len > 0 && rel[len - 1] == '/';

        if (outside)
                return fail_len(err, WORKSPACE_OUTSIDE, 0, rel, len, "leaves the workspace");
        if (dotdot)
                return fail_len(err, WORKSPACE_INVALID, 0, rel, len,
                                "contains '..'; workspace paths may not use '..'");
        if (long_comp)
                return fail_len(err, WORKSPACE_INVALID, 0, rel, len,
                                "has a component of %zu bytes; the limit is %u", long_comp,
                                WORKSPACE_NAME_MAX);
        if (p->ncomp == 0 && !root_ok) {
                if (len == 0)
                        return err_setc(err, WORKSPACE_INVALID, 0, "workspace: the path is empty");
                return fail_len(err, WORKSPACE_INVALID, 0, rel, len,
                                "is the workspace root; a file name is needed");
        }
        return 0;
}

int workspace_check_path(const char *rel, size_t len, bool root_ok, struct err **err)
{
        _cleanup_free_ struct wpath *p = malloc(sizeof(*p));
        if (!p)
                return err_setc(err, WORKSPACE_IO, ENOMEM, "workspace: checking a path");
        return parse_path(rel, len, root_ok, p, err);
}

/* ---- resolution ------------------------------------------------------- */

/* openat2 beneath dirfd, `extra` added to the RESOLVE_ flags every lookup
 * uses.  Returns an fd or -errno; never falls back. */
static int resolve_ex(int dirfd, const char *path, uint64_t flags, uint64_t extra)
{
        struct open_how how = {
                .flags = flags | O_CLOEXEC,
                .mode = 0,
                .resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV | extra,
        };
        for (int i = 0; i < RESOLVE_RETRIES; i++) {
                long fd = syscall(SYS_openat2, dirfd, path, &how, sizeof(how));
                if (fd >= 0)
                        return (int)fd;
                if (errno != EAGAIN && errno != EINTR)
                        return -errno;
        }
        return -EAGAIN;
}

static int resolve(int dirfd, const char *path, uint64_t flags)
{
        return resolve_ex(dirfd, path, flags, 0);
}

static int resolve_error(struct err **err, int e, const char *rel)
{
        switch (e) {
        case ENOENT:
                return fail(err, WORKSPACE_NOT_FOUND, 0, rel, "not found");
        case ENOTDIR:
                return fail(err, WORKSPACE_NOT_FOUND, 0, rel, "not found (a parent is not a directory)");
        case EXDEV:
                return fail(err, WORKSPACE_OUTSIDE, 0, rel, "resolves outside the workspace");
        case ELOOP:
                return fail(err, WORKSPACE_OUTSIDE, 0, rel,
                            "cannot be resolved safely (a symlink loop, too many symlinks or a magic link)");
        case ENAMETOOLONG:
                return fail(err, WORKSPACE_INVALID, 0, rel, "is too long once symlinks are expanded");
        case EAGAIN:
                return fail(err, WORKSPACE_IO, 0, rel,
                            "could not be resolved: the directory tree kept changing; try again");
        case ENOSYS:
        case E2BIG:
                return fail(err, WORKSPACE_IO, e, rel,
                            "cannot be resolved: openat2 is not available (Linux 5.6 or newer is needed)");
        default:
                return fail(err, WORKSPACE_IO, e, rel, "cannot be opened");
        }
}

/* The directory that holds the last component of p, as an O_PATH fd.  With
 * `create`, missing directories are made (0755) one at a time; each new
 * prefix is resolved again from the root, so a symlink swapped in between
 * mkdirat and the next step is still checked. */
static int open_parent(struct workspace *w, const struct wpath *p, bool create, const char *rel,
                       int *ret_fd, struct err **err)
{
        char parent[WORKSPACE_PATH_MAX + 1];
        size_t plen = p->last ? p->last - 1 : 0;
        memcpy(parent, p->norm, plen);
        parent[plen] = '\0';

        int fd = resolve(w->rootfd, plen ? parent : ".", O_PATH | O_DIRECTORY);
        if (fd != -ENOENT || !create) {
                if (fd < 0)
                        return resolve_error(err, -fd, rel);
                *ret_fd = fd;
                return 0;
        }

        _cleanup_close_ int cur = resolve(w->rootfd, ".", O_PATH | O_DIRECTORY);
        if (cur < 0)
                return resolve_error(err, -cur, rel);
        for (size_t i = 0; i < plen;) {
                size_t j = i;
                while (j < plen && parent[j] != '/')
                        j++;
                char saved = parent[j];
                parent[j] = '\0';
                int next = resolve(w->rootfd, parent, O_PATH | O_DIRECTORY);
                if (next == -ENOENT) {
                        if (mkdirat(cur, parent + i, 0755) < 0 && errno != EEXIST) {
                                char qp[QUOTE_MAX];
                                return fail(err, WORKSPACE_IO, errno, rel,
                                            "cannot be written: creating directory '%s'",
                                            text_quote(parent, j, qp, QUOTE_MAX));
                        }
                        next = resolve(w->rootfd, parent, O_PATH | O_DIRECTORY);
                }
                parent[j] = saved;
                if (next < 0)
                        return resolve_error(err, -next, rel);
                close(cur);
                cur = next;
                i = j + 1;
        }
        *ret_fd = take_fd(&cur);
        return 0;
}

/* ---- open / close ----------------------------------------------------- */

static void fill_limits(struct workspace_limits *out, const struct workspace_limits *in)
{
        *out = in ? *in : (struct workspace_limits){ 0 };
        if (!out->max_file_bytes)
                out->max_file_bytes = WORKSPACE_DEFAULT_MAX_FILE_BYTES;
        if (!out->max_list_entries)
                out->max_list_entries = WORKSPACE_DEFAULT_MAX_LIST_ENTRIES;
        if (!out->max_total_bytes)
                out->max_total_bytes = WORKSPACE_DEFAULT_MAX_TOTAL_BYTES;
        if (!out->max_manifest_files)
                out->max_manifest_files = WORKSPACE_DEFAULT_MAX_MANIFEST_FILES;
}

int workspace_open(const char *dir, const struct workspace_limits *lim, struct workspace **ret,
                   struct err **err)
{
        if (!dir || !*dir)
                return err_setc(err, WORKSPACE_INVALID, 0, "workspace: no directory given");
        _cleanup_close_ int fd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return err_setc(err, errno == ENOENT ? WORKSPACE_NOT_FOUND : WORKSPACE_IO, errno,
                                "workspace: open directory '%s'", dir);
        /* Probe once, so a kernel without openat2 (or without these RESOLVE_
         * flags) is refused here rather than on the first agent call. */
        int probe = resolve(fd, ".", O_PATH | O_DIRECTORY);
        if (probe < 0)
                return err_setc(err, WORKSPACE_IO, -probe,
                                "workspace: openat2 with RESOLVE_BENEATH is not available (Linux 5.6 or "
                                "newer is needed); refusing to use '%s' without it", dir);
        close(probe);

        struct workspace *w = calloc(1, sizeof(*w));
        if (!w)
                return err_setc(err, WORKSPACE_IO, ENOMEM, "workspace: open '%s'", dir);
        w->rootfd = take_fd(&fd);
        fill_limits(&w->lim, lim);
        *ret = w;
        return 0;
}

void workspace_close(struct workspace *w)
{
        if (!w)
                return;
        if (w->rootfd >= 0)
                close(w->rootfd);
        free(w);
}

/* ---- list ------------------------------------------------------------- */

struct entry {
        char *name;
        const char *type;
        off_t size;
};

static int cmp_entry(const void *a, const void *b)
{
        return strcmp(((const struct entry *)a)->name, ((const struct entry *)b)->name);
}

static void free_entries(struct entry *v, size_t n)
{
        for (size_t i = 0; i < n; i++)
                free(v[i].name);
        free(v);
}

static const char *type_of(mode_t m)
{
        if (S_ISREG(m))
                return "file";
        if (S_ISDIR(m))
                return "dir";
        if (S_ISLNK(m))
                return "symlink";
        return "other";
}

/* Read the names of directory `dfd` (consumed) into a sorted vector.  Entries
 * that vanish before fstatat are skipped. */
static int read_dir(int dfd, size_t max, const char *rel, struct entry **ret, size_t *ret_n,
                    struct err **err)
{
        DIR *d = fdopendir(dfd);
        if (!d) {
                int e = errno;
                close(dfd);
                return fail(err, WORKSPACE_IO, e, rel, "cannot be listed");
        }
        struct entry *v = NULL;
        size_t n = 0, cap = 0;
        int r = 0;
        for (;;) {
                errno = 0;
                struct dirent *de = readdir(d);
                if (!de) {
                        if (errno)
                                r = fail(err, WORKSPACE_IO, errno, rel, "cannot be listed");
                        break;
                }
                if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
                        continue;
                if (n >= max) {
                        r = fail(err, WORKSPACE_TOO_BIG, 0, rel, "has more than %zu entries; the limit is %zu",
                                 max, max);
                        break;
                }
                struct stat st;
                if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
                        if (errno == ENOENT)
                                continue;
                        char qn[QUOTE_MAX];
                        r = fail(err, WORKSPACE_IO, errno, rel, "cannot be listed: stat '%s'",
                                 text_quote(de->d_name, strlen(de->d_name), qn, QUOTE_MAX));
                        break;
                }
                if (n == cap) {
                        size_t ncap = cap ? cap * 2 : 32;
                        struct entry *nv = realloc(v, ncap * sizeof(*v));
                        if (!nv) {
                                r = fail(err, WORKSPACE_IO, ENOMEM, rel, "cannot be listed");
                                break;
                        }
                        v = nv;
                        cap = ncap;
                }
                v[n].name = strdup(de->d_name);
                if (!v[n].name) {
                        r = fail(err, WORKSPACE_IO, ENOMEM, rel, "cannot be listed");
                        break;
                }
                v[n].type = type_of(st.st_mode);
                v[n].size = st.st_size;
                n++;
        }
        closedir(d);
        if (r < 0) {
                free_entries(v, n);
                return r;
        }
        if (n)
                qsort(v, n, sizeof(*v), cmp_entry);
        *ret = v;
        *ret_n = n;
        return 0;
}

/* A new object appended to arr (which owns it), or NULL. */
static cJSON *add_object(cJSON *arr)
{
        cJSON *o = cJSON_CreateObject();
        if (o && !cJSON_AddItemToArray(arr, o)) {
                cJSON_Delete(o);
                o = NULL;
        }
        return o;
}

/* Name used in messages for a path that may be the root. */
static const char *shown(const char *rel)
{
        return *rel ? rel : ".";
}

int workspace_list(struct workspace *w, const char *rel, struct cJSON **ret, struct err **err)
{
        _cleanup_free_ struct wpath *p = malloc(sizeof(*p));
        if (!p)
                return err_setc(err, WORKSPACE_IO, ENOMEM, "workspace: list");
        if (parse_path(rel, rel ? strlen(rel) : 0, true, p, err) < 0)
                return -1;
        /* O_PATH first: a fifo or device named here is never opened. */
        _cleanup_close_ int fd = resolve(w->rootfd, p->ncomp ? p->norm : ".", O_PATH);
        if (fd < 0)
                return resolve_error(err, -fd, shown(rel));
        struct stat st;
        if (fstat(fd, &st) < 0)
                return fail(err, WORKSPACE_IO, errno, shown(rel), "cannot be listed");
        if (!S_ISDIR(st.st_mode))
                return fail(err, WORKSPACE_NOT_FILE, 0, shown(rel), "is not a directory");
        /* "." relative to the resolved directory: no further lookup. */
        int dfd = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0)
                return fail(err, WORKSPACE_IO, errno, shown(rel), "cannot be listed");

        struct entry *v = NULL;
        size_t n = 0;
        if (read_dir(dfd, w->lim.max_list_entries, shown(rel), &v, &n, err) < 0)
                return -1;
        cJSON *arr = cJSON_CreateArray();
        for (size_t i = 0; arr && i < n; i++) {
                double size = strcmp(v[i].type, "file") == 0 ? (double)v[i].size : 0;
                cJSON *o = add_object(arr);
                /* A name on disk may be any bytes: invalid UTF-8 reaches the
                 * agent as U+FFFD, as Node would decode it. */
                if (!o || !cJSON_AddItemToObject(o, "name", json_cjson_string(v[i].name, strlen(v[i].name), 0)) ||
                    !cJSON_AddStringToObject(o, "type", v[i].type) || !cJSON_AddNumberToObject(o, "size", size)) {
                        cJSON_Delete(arr);
                        arr = NULL;
                }
        }
        free_entries(v, n);
        if (!arr)
                return fail(err, WORKSPACE_IO, ENOMEM, shown(rel), "cannot be listed");
        *ret = arr;
        return 0;
}

/* ---- read ------------------------------------------------------------- */

int workspace_read(struct workspace *w, const char *rel, char **ret_data, size_t *ret_len,
                   struct err **err)
{
        _cleanup_free_ struct wpath *p = malloc(sizeof(*p));
        if (!p)
                return err_setc(err, WORKSPACE_IO, ENOMEM, "workspace: read");
        if (parse_path(rel, rel ? strlen(rel) : 0, false, p, err) < 0)
                return -1;
        size_t max = w->lim.max_file_bytes;

        /* Look before opening: a fifo or device is refused without open(2)
         * ever reaching its driver. */
        struct stat st;
        {
                _cleanup_close_ int pfd = resolve(w->rootfd, p->norm, O_PATH);
                if (pfd < 0)
                        return resolve_error(err, -pfd, rel);
                if (fstat(pfd, &st) < 0)
                        return fail(err, WORKSPACE_IO, errno, rel, "cannot be read");
                if (S_ISDIR(st.st_mode))
                        return fail(err, WORKSPACE_NOT_FILE, 0, rel, "is a directory, not a file");
                if (!S_ISREG(st.st_mode))
                        return fail(err, WORKSPACE_NOT_FILE, 0, rel, "is not a regular file");
                if ((uint64_t)st.st_size > max)
                        return fail(err, WORKSPACE_TOO_BIG, 0, rel, "is %lld bytes; the limit is %zu",
                                    (long long)st.st_size, max);
        }
        /* The entry may be swapped between the two lookups; O_NONBLOCK keeps a
         * fifo from blocking, and the fstat below refuses anything but the
         * same kind of object. */
        _cleanup_close_ int fd = resolve(w->rootfd, p->norm, O_RDONLY | O_NONBLOCK | O_NOCTTY);
        if (fd < 0)
                return resolve_error(err, -fd, rel);
        if (fstat(fd, &st) < 0)
                return fail(err, WORKSPACE_IO, errno, rel, "cannot be read");
        if (!S_ISREG(st.st_mode))
                return fail(err, WORKSPACE_NOT_FILE, 0, rel, "is not a regular file");
        if ((uint64_t)st.st_size > max)
                return fail(err, WORKSPACE_TOO_BIG, 0, rel, "is %lld bytes; the limit is %zu",
                            (long long)st.st_size, max);

        /* The file may grow while we read: never hold more than max bytes. */
        size_t cap = (size_t)st.st_size + 1, len = 0;
        _cleanup_free_ char *buf = malloc(cap + 1);
        if (!buf)
                return fail(err, WORKSPACE_IO, ENOMEM, rel, "cannot be read");
        for (;;) {
                if (len == cap) {
                        if (cap > max)
                                return fail(err, WORKSPACE_TOO_BIG, 0, rel,
                                            "grew beyond the limit of %zu bytes while being read", max);
                        size_t ncap = cap * 2 > max + 1 ? max + 1 : cap * 2;
                        char *nb = realloc(buf, ncap + 1);
                        if (!nb)
                                return fail(err, WORKSPACE_IO, ENOMEM, rel, "cannot be read");
                        buf = nb;
                        cap = ncap;
                }
                ssize_t r = read(fd, buf + len, cap - len);
                if (r < 0) {
                        if (errno == EINTR)
                                continue;
                        return fail(err, WORKSPACE_IO, errno, rel, "cannot be read");
                }
                if (r == 0)
                        break;
                len += (size_t)r;
        }
        if (len > max)
                return fail(err, WORKSPACE_TOO_BIG, 0, rel, "grew beyond the limit of %zu bytes while being read",
                            max);
        buf[len] = '\0';
        *ret_data = take_ptr(&buf);
        *ret_len = len;
        return 0;
}

/* ---- write ------------------------------------------------------------ */

static int write_all(int fd, const void *data, size_t len)
{
        const char *p = data;
        while (len) {
                ssize_t r = write(fd, p, len > (1u << 30) ? (1u << 30) : len);
                if (r < 0) {
                        if (errno == EINTR)
                                continue;
                        return -1;
                }
                p += r;
                len -= (size_t)r;
        }
        return 0;
}

/* A new, empty temp file in pfd; its name goes to tmp (>= 40 bytes). */
static int make_temp(int pfd, char tmp[40])
{
        for (int tries = 0; tries < 16; tries++) {
                uint64_t rnd;
                if (getrandom(&rnd, sizeof(rnd), 0) != sizeof(rnd))
                        return -1;
                snprintf(tmp, 40, ".chidori-%016llx.tmp", (unsigned long long)rnd);
                int fd = openat(pfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
                if (fd >= 0 || errno != EEXIST)
                        return fd;
        }
        errno = EEXIST;
        return -1;
}

int workspace_write(struct workspace *w, const char *rel, const void *data, size_t len,
                    bool create_dirs, struct err **err)
{
        _cleanup_free_ struct wpath *p = malloc(sizeof(*p));
        if (!p)
                return err_setc(err, WORKSPACE_IO, ENOMEM, "workspace: write");
        if (parse_path(rel, rel ? strlen(rel) : 0, false, p, err) < 0)
                return -1;
        if (p->trailing_slash)
                return fail(err, WORKSPACE_INVALID, 0, rel, "ends with '/'; a file name is needed");
        if (len > w->lim.max_file_bytes)
                return fail(err, WORKSPACE_TOO_BIG, 0, rel, "is %zu bytes; the limit is %zu", len,
                            w->lim.max_file_bytes);
        if (len && !data)
                return fail(err, WORKSPACE_INVALID, 0, rel, "cannot be written: no data");

        _cleanup_close_ int pfd = -1;
        if (open_parent(w, p, create_dirs, rel, &pfd, err) < 0)
                return -1;
        const char *name = p->norm + p->last;

        /* Only a directory blocks the rename; a symlink, hard link, fifo or
         * file there is replaced as a directory entry, never written through. */
        struct stat st;
        if (fstatat(pfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode))
                return fail(err, WORKSPACE_NOT_FILE, 0, rel, "is a directory");

        char tmp[40];
        _cleanup_close_ int fd = make_temp(pfd, tmp);
        if (fd < 0)
                return fail(err, WORKSPACE_IO, errno, rel, "cannot be written: creating a temporary file");
        int e = 0;
        const char *what = NULL;
        if (write_all(fd, data, len) < 0)
                e = errno, what = "writing";
        else if (fsync(fd) < 0)
                e = errno, what = "syncing";
        else if (close(take_fd(&fd)) < 0)
                e = errno, what = "closing";
        else if (renameat(pfd, tmp, pfd, name) < 0)
                e = errno, what = "renaming into place";
        if (e) {
                unlinkat(pfd, tmp, 0);
                if (e == EISDIR || e == ENOTEMPTY || e == EEXIST)
                        return fail(err, WORKSPACE_NOT_FILE, 0, rel, "is a directory");
                return fail(err, WORKSPACE_IO, e, rel, "cannot be written: %s", what);
        }
        /* Make the rename durable.  EINVAL: the filesystem cannot sync dirs. */
        _cleanup_close_ int dfd = openat(pfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0 || (fsync(dfd) < 0 && errno != EINVAL))
                return fail(err, WORKSPACE_IO, errno, rel, "was written but its directory cannot be synced");
        return 0;
}

/* ---- delete ----------------------------------------------------------- */

int workspace_delete(struct workspace *w, const char *rel, bool *ret_existed, struct err **err)
{
        _cleanup_free_ struct wpath *p = malloc(sizeof(*p));
        if (!p)
                return err_setc(err, WORKSPACE_IO, ENOMEM, "workspace: delete");
        if (parse_path(rel, rel ? strlen(rel) : 0, false, p, err) < 0)
                return -1;
        _cleanup_close_ int pfd = -1;
        struct err *perr = NULL;
        if (open_parent(w, p, false, rel, &pfd, &perr) < 0) {
                /* A missing parent means a missing entry; anything else (a
                 * parent outside, ...) is reported. */
                if (err_code(perr) != WORKSPACE_NOT_FOUND) {
                        if (err) {
                                err_free(*err);
                                *err = perr;
                        } else {
                                err_free(perr);
                        }
                        return -1;
                }
                err_free(perr);
                if (ret_existed)
                        *ret_existed = false;
                return 0;
        }
        const char *name = p->norm + p->last;
        /* unlinkat never follows a symlink at `name`: the link goes, its
         * target stays.  Directories only when empty: no recursion. */
        int r = unlinkat(pfd, name, 0);
        if (r < 0 && errno == EISDIR)
                r = unlinkat(pfd, name, AT_REMOVEDIR);
        if (r < 0) {
                if (errno == ENOENT) {
                        if (ret_existed)
                                *ret_existed = false;
                        return 0;
                }
                if (errno == ENOTEMPTY || errno == EEXIST)
                        return fail(err, WORKSPACE_INVALID, 0, rel,
                                    "is a directory that is not empty; delete its entries first");
                return fail(err, WORKSPACE_IO, errno, rel, "cannot be deleted");
        }
        if (ret_existed)
                *ret_existed = true;
        return 0;
}

/* ---- manifest --------------------------------------------------------- */

struct mfile {
        char *path;
        uint64_t size;
        char sha[65];
};

struct mstate {
        struct workspace *w;
        const struct budget *budget;
        struct mfile *v;
        size_t n, cap;
        uint64_t total;
        char path[WORKSPACE_PATH_MAX + 1];
};

static int cmp_mfile(const void *a, const void *b)
{
        return strcmp(((const struct mfile *)a)->path, ((const struct mfile *)b)->path);
}

static void hex32(const unsigned char d[32], char out[65])
{
        static const char x[] = "0123456789abcdef";
        for (int i = 0; i < 32; i++) {
                out[2 * i] = x[d[i] >> 4];
                out[2 * i + 1] = x[d[i] & 15];
        }
        out[64] = '\0';
}

static int over_budget(const struct mstate *m, struct err **err)
{
        return fail(err, WORKSPACE_TOO_BIG, 0, m->path,
                    "would take the manifest over %zu hashed bytes, the limit", m->w->lim.max_total_bytes);
}

/* The run is ending (deadline, stop signal): give up. */
static bool stopped(const struct mstate *m, struct err **err)
{
        if (budget_over(m->budget) == BUDGET_OK)
                return false;
        struct err *e = NULL;
        budget_check(m->budget, "workspace: manifest", &e);
        err_setc(err, WORKSPACE_IO, e ? e->errnum : EINTR, "%s", err_msg(e));
        err_free(e);
        return true;
}

/* One entry of a directory the walk holds: no symlink at all, no mount
 * crossing (a bind mount keeps st_dev, so only the kernel can tell). */
static int walk_open(int dfd, const char *name, uint64_t flags)
{
        return resolve_ex(dfd, name, flags | O_NOFOLLOW, RESOLVE_NO_SYMLINKS);
}

/* An entry that vanished, turned into a symlink or is a mount point: skip. */
static bool is_skippable(int e)
{
        return e == ENOENT || e == ELOOP || e == EXDEV || e == ENXIO || e == ENOTDIR;
}

/* Hash regular file `name` in dfd into m->v.  Not following, not blocking;
 * an entry that vanished or changed kind since the listing is skipped. */
static int hash_file(struct mstate *m, int dfd, const char *name, struct err **err)
{
        _cleanup_close_ int fd = walk_open(dfd, name, O_RDONLY | O_NONBLOCK | O_NOCTTY);
        if (fd < 0) {
                if (is_skippable(-fd))
                        return 0;
                return fail(err, WORKSPACE_IO, -fd, m->path, "cannot be read for the manifest");
        }
        struct stat st;
        if (fstat(fd, &st) < 0)
                return fail(err, WORKSPACE_IO, errno, m->path, "cannot be read for the manifest");
        if (!S_ISREG(st.st_mode))
                return 0;
        if (m->n >= m->w->lim.max_manifest_files)
                return err_setc(err, WORKSPACE_TOO_BIG, 0,
                                "workspace: the manifest has more than %zu files; the limit is %zu",
                                m->w->lim.max_manifest_files, m->w->lim.max_manifest_files);
        uint64_t budget = m->w->lim.max_total_bytes;
        if ((uint64_t)st.st_size > budget - m->total)
                return over_budget(m, err);

        struct sha256 s;
        sha256_init(&s);
        _cleanup_free_ unsigned char *buf = malloc(CHUNK);
        if (!buf)
                return fail(err, WORKSPACE_IO, ENOMEM, m->path, "cannot be read for the manifest");
        uint64_t size = 0;
        for (;;) {
                ssize_t r = read(fd, buf, CHUNK);
                if (r < 0) {
                        if (errno == EINTR)
                                continue;
                        return fail(err, WORKSPACE_IO, errno, m->path, "cannot be read for the manifest");
                }
                if (r == 0)
                        break;
                size += (uint64_t)r;
                if (size > budget - m->total)
                        return over_budget(m, err);
                if (stopped(m, err))
                        return -1;
                sha256_update(&s, buf, (size_t)r);
        }
        m->total += size;

        if (m->n == m->cap) {
                size_t ncap = m->cap ? m->cap * 2 : 64;
                struct mfile *nv = realloc(m->v, ncap * sizeof(*nv));
                if (!nv)
                        return fail(err, WORKSPACE_IO, ENOMEM, m->path, "cannot be added to the manifest");
                m->v = nv;
                m->cap = ncap;
        }
        struct mfile *f = &m->v[m->n];
        f->path = strdup(m->path);
        if (!f->path)
                return fail(err, WORKSPACE_IO, ENOMEM, m->path, "cannot be added to the manifest");
        f->size = size;
        unsigned char d[32];
        sha256_final(&s, d);
        hex32(d, f->sha);
        m->n++;
        return 0;
}

/* Walk directory dfd, whose path is m->path[0..plen). */
static int walk(struct mstate *m, int dfd, size_t plen, unsigned depth, struct err **err)
{
        if (depth > WORKSPACE_MANIFEST_DEPTH_MAX)
                return fail(err, WORKSPACE_TOO_BIG, 0, m->path, "is nested deeper than %u directories",
                            WORKSPACE_MANIFEST_DEPTH_MAX);
        /* A second fd for readdir: read_dir consumes it, dfd stays ours. */
        int lfd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (lfd < 0)
                return fail(err, WORKSPACE_IO, errno, shown(m->path), "cannot be listed");
        struct entry *v = NULL;
        size_t n = 0;
        if (read_dir(lfd, m->w->lim.max_list_entries, shown(m->path), &v, &n, err) < 0)
                return -1;
        int r = 0;
        for (size_t i = 0; i < n && r == 0; i++) {
                if (stopped(m, err)) {
                        r = -1;
                        break;
                }
                bool is_dir = strcmp(v[i].type, "dir") == 0;
                if (!is_dir && strcmp(v[i].type, "file") != 0)
                        continue; /* symlinks, fifos, devices, sockets */
                size_t nlen = strlen(v[i].name);
                size_t need = plen + (plen ? 1 : 0) + nlen;
                if (need > WORKSPACE_PATH_MAX) {
                        r = fail(err, WORKSPACE_TOO_BIG, 0, shown(m->path),
                                 "holds a path longer than %u bytes", WORKSPACE_PATH_MAX);
                        break;
                }
                size_t o = plen;
                if (plen)
                        m->path[o++] = '/';
                memcpy(m->path + o, v[i].name, nlen + 1);
                if (is_dir) {
                        _cleanup_close_ int sub = walk_open(dfd, v[i].name, O_RDONLY | O_DIRECTORY);
                        if (sub >= 0)
                                r = walk(m, sub, need, depth + 1, err);
                        else if (!is_skippable(-sub))
                                r = fail(err, WORKSPACE_IO, -sub, m->path, "cannot be listed");
                } else {
                        r = hash_file(m, dfd, v[i].name, err);
                }
                m->path[plen] = '\0';
        }
        free_entries(v, n);
        return r;
}

int workspace_manifest(struct workspace *w, struct cJSON **ret, struct err **err)
{
        return workspace_manifest_until(w, NULL, ret, err);
}

int workspace_manifest_until(struct workspace *w, const struct budget *budget, struct cJSON **ret,
                             struct err **err)
{
        _cleanup_free_ struct mstate *m = calloc(1, sizeof(*m));
        if (!m)
                return err_setc(err, WORKSPACE_IO, ENOMEM, "workspace: manifest");
        m->w = w;
        m->budget = budget;
        int r = -1;
        cJSON *arr = NULL;
        _cleanup_close_ int dfd = resolve(w->rootfd, ".", O_RDONLY | O_DIRECTORY);
        if (dfd < 0) {
                resolve_error(err, -dfd, ".");
                goto out;
        }
        if (walk(m, dfd, 0, 0, err) < 0)
                goto out;
        if (m->n)
                qsort(m->v, m->n, sizeof(*m->v), cmp_mfile);
        arr = cJSON_CreateArray();
        for (size_t i = 0; arr && i < m->n; i++) {
                cJSON *o = add_object(arr);
                if (!o || !cJSON_AddItemToObject(o, "path", json_cjson_string(m->v[i].path, strlen(m->v[i].path), 0)) ||
                    !cJSON_AddNumberToObject(o, "size", (double)m->v[i].size) ||
                    !cJSON_AddStringToObject(o, "sha256", m->v[i].sha)) {
                        cJSON_Delete(arr);
                        arr = NULL;
                }
        }
        if (!arr) {
                err_setc(err, WORKSPACE_IO, ENOMEM, "workspace: manifest");
                goto out;
        }
        *ret = arr;
        r = 0;
out:
        for (size_t i = 0; i < m->n; i++)
                free(m->v[i].path);
        free(m->v);
        return r;
}
