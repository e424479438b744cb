#define _GNU_SOURCE
/* sandbox/cgroup/util.c — small file helpers and the /proc parsers (pure functions on
 * text, so the tests can feed them any host's files). */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "sandbox/cgroup/cgroup-internal.h"

int cg_write_at(int dirfd, const char *file, const char *s)
{
        _cleanup_close_ int fd = openat(dirfd, file, O_WRONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return -errno;
        size_t len = strlen(s);
        ssize_t n;
        do
                n = write(fd, s, len);
        while (n < 0 && errno == EINTR);
        if (n < 0)
                return -errno;
        if ((size_t)n != len)
                return -EIO;
        return 0;
}

int cg_read_at(int dirfd, const char *file, char **ret)
{
        _cleanup_close_ int fd = openat(dirfd, file, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return -errno;
        size_t cap = 512, len = 0;
        _cleanup_free_ char *buf = malloc(cap);
        if (!buf)
                return -ENOMEM;
        for (;;) {
                if (len + 1 >= cap) {
                        if (cap >= (16u << 20))
                                return -EFBIG;
                        char *n = realloc(buf, cap * 2);
                        if (!n)
                                return -ENOMEM;
                        buf = n;
                        cap *= 2;
                }
                ssize_t n = read(fd, buf + len, cap - 1 - len);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                if (n == 0)
                        break;
                len += (size_t)n;
        }
        buf[len] = '\0';
        *ret = take_ptr(&buf);
        return 0;
}

static int parse_u64(const char *s, const char **end, uint64_t *ret)
{
        if (!isdigit((unsigned char)*s))
                return -EINVAL;
        uint64_t v = 0;
        for (; isdigit((unsigned char)*s); s++) {
                unsigned d = (unsigned)(*s - '0');
                if (v > (UINT64_MAX - d) / 10)
                        return -ERANGE;
                v = v * 10 + d;
        }
        *end = s;
        *ret = v;
        return 0;
}

int cg_read_u64_at(int dirfd, const char *file, uint64_t *ret)
{
        _cleanup_free_ char *s = NULL;
        int r = cg_read_at(dirfd, file, &s);
        if (r < 0)
                return r;
        if (strncmp(s, "max", 3) == 0 && (s[3] == '\n' || s[3] == '\0')) {
                *ret = UINT64_MAX;
                return 0;
        }
        const char *end;
        uint64_t v;
        r = parse_u64(s, &end, &v);
        if (r < 0)
                return r;
        if (*end != '\n' && *end != '\0')
                return -EINVAL;
        *ret = v;
        return 0;
}

int cg_kv_get(const char *text, const char *key, uint64_t *ret)
{
        size_t kl = strlen(key);
        for (const char *l = text; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : NULL) {
                if (strncmp(l, key, kl) != 0 || l[kl] != ' ')
                        continue;
                const char *end;
                uint64_t v;
                if (parse_u64(l + kl + 1, &end, &v) < 0)
                        return -EINVAL;
                *ret = v;
                return 0;
        }
        return -ENOENT;
}

bool cg_has_word(const char *list, const char *word, char sep)
{
        size_t wl = strlen(word);
        for (const char *p = list; p && *p;) {
                const char *e = strchr(p, sep);
                size_t l = e ? (size_t)(e - p) : strlen(p);
                if (l == wl && strncmp(p, word, wl) == 0)
                        return true;
                p = e ? e + 1 : NULL;
        }
        return false;
}

/* mountinfo escapes space, tab, newline and backslash as \ooo. */
static char *unescape(const char *s, size_t n)
{
        char *out = malloc(n + 1), *o = out;
        if (!out)
                return NULL;
        for (size_t i = 0; i < n; i++) {
                if (s[i] == '\\' && i + 3 < n && s[i + 1] >= '0' &&
                    s[i + 1] <= '3' && s[i + 2] >= '0' && s[i + 2] <= '7' && s[i + 3] >= '0' &&
                    s[i + 3] <= '7') {
                        *o++ = (char)((s[i + 1] - '0') * 64 + (s[i + 2] - '0') * 8 +
                                      (s[i + 3] - '0'));
                        i += 3;
                } else {
                        *o++ = s[i];
                }
        }
        *o = '\0';
        return out;
}

static unsigned ctls_of(const char *opts)
{
        unsigned m = 0;
        for (int c = 0; c < CGROUP_CTL_MAX; c++)
                if (cg_has_word(opts, cgroup_ctl_name(c), ','))
                        m |= CTL_BIT(c);
        return m;
}

void cg_mounts_free(struct cg_mount *m, size_t n)
{
        if (!m)
                return;
        for (size_t i = 0; i < n; i++) {
                free(m[i].mount);
                free(m[i].root);
        }
        free(m);
}

/* One line: id parent maj:min root mountpoint opts [optional...] - fstype source superopts */
static int parse_mount_line(const char *line, size_t len, struct cg_mount *ret, bool *ret_is)
{
        const char *f[5];
        size_t fl[5];
        const char *p = line, *end = line + len;
        for (int i = 0; i < 5; i++) {
                while (p < end && *p == ' ')
                        p++;
                f[i] = p;
                while (p < end && *p != ' ')
                        p++;
                fl[i] = (size_t)(p - f[i]);
                if (fl[i] == 0)
                        return -EINVAL;
        }
        const char *sep = NULL;
        for (const char *q = p; q + 2 < end; q++)
                if (q[0] == ' ' && q[1] == '-' && q[2] == ' ') {
                        sep = q + 3;
                        break;
                }
        if (!sep)
                return -EINVAL;
        const char *fs = sep, *fse = memchr(fs, ' ', (size_t)(end - fs));
        if (!fse)
                return -EINVAL;
        size_t fsl = (size_t)(fse - fs);
        bool v2 = fsl == 7 && strncmp(fs, "cgroup2", 7) == 0;
        bool v1 = fsl == 6 && strncmp(fs, "cgroup", 6) == 0;
        *ret_is = v1 || v2;
        if (!*ret_is)
                return 0;
        const char *src = fse + 1, *srce = memchr(src, ' ', (size_t)(end - src));
        unsigned ctls = 0;
        if (v1 && srce) {
                _cleanup_free_ char *opts = strndup(srce + 1, (size_t)(end - srce - 1));
                if (!opts)
                        return -ENOMEM;
                ctls = ctls_of(opts);
        }
        ret->v2 = v2;
        ret->ctls = ctls;
        ret->root = unescape(f[3], fl[3]);
        ret->mount = unescape(f[4], fl[4]);
        if (!ret->root || !ret->mount) {
                free(ret->root);
                free(ret->mount);
                return -ENOMEM;
        }
        return 0;
}

int cg_parse_mountinfo(const char *text, struct cg_mount **ret, size_t *ret_n)
{
        struct cg_mount *m = NULL;
        size_t n = 0;
        for (const char *l = text; l && *l;) {
                const char *e = strchr(l, '\n');
                size_t len = e ? (size_t)(e - l) : strlen(l);
                struct cg_mount one = { 0 };
                bool is = false;
                int r = parse_mount_line(l, len, &one, &is);
                if (r == -ENOMEM) {
                        cg_mounts_free(m, n);
                        return r;
                }
                if (r == 0 && is) {
                        struct cg_mount *nm = realloc(m, (n + 1) * sizeof(*m));
                        if (!nm) {
                                free(one.mount);
                                free(one.root);
                                cg_mounts_free(m, n);
                                return -ENOMEM;
                        }
                        m = nm;
                        m[n++] = one;
                }
                l = e ? e + 1 : NULL;
        }
        *ret = m;
        *ret_n = n;
        return 0;
}

int cg_proc_cgroup_path(const char *text, const char *ctl, char **ret, char **ret_list)
{
        for (const char *l = text; l && *l;) {
                const char *e = strchr(l, '\n');
                size_t len = e ? (size_t)(e - l) : strlen(l);
                const char *c1 = memchr(l, ':', len);
                const char *c2 = c1 ? memchr(c1 + 1, ':', len - (size_t)(c1 + 1 - l)) : NULL;
                if (c2) {
                        _cleanup_free_ char *list = strndup(c1 + 1, (size_t)(c2 - c1 - 1));
                        if (!list)
                                return -ENOMEM;
                        bool hit = ctl ? cg_has_word(list, ctl, ',')
                                       : (c1 - l == 1 && l[0] == '0' && list[0] == '\0');
                        if (hit) {
                                char *path = strndup(c2 + 1, (size_t)(l + len - c2 - 1));
                                if (!path)
                                        return -ENOMEM;
                                *ret = path;
                                if (ret_list)
                                        *ret_list = take_ptr(&list);
                                return 0;
                        }
                }
                l = e ? e + 1 : NULL;
        }
        return -ENOENT;
}

int cg_resolve(const char *mount, const char *root, const char *cg, char **ret)
{
        if (cg[0] != '/')
                return -EINVAL;
        const char *rest = cg;
        if (strcmp(root, "/") != 0) {
                size_t rl = strlen(root);
                if (strncmp(cg, root, rl) != 0 || (cg[rl] != '/' && cg[rl] != '\0'))
                        return -EXDEV;
                rest = cg + rl;
        }
        if (strcmp(rest, "/") == 0)
                rest = "";
        char *p = NULL;
        if (asprintf(&p, "%s%s", mount, rest) < 0)
                return -ENOMEM;
        *ret = p;
        return 0;
}

int cg_stat_starttime(const char *stat_text, uint64_t *ret)
{
        const char *p = strrchr(stat_text, ')');
        if (!p)
                return -EINVAL;
        p++;
        /* p now sits before field 3; field 22 is the 20th from here. */
        for (int field = 3; field < 22; field++) {
                while (*p == ' ')
                        p++;
                if (!*p)
                        return -EINVAL;
                while (*p && *p != ' ')
                        p++;
        }
        while (*p == ' ')
                p++;
        const char *end;
        uint64_t v;
        if (parse_u64(p, &end, &v) < 0 || (*end != ' ' && *end != '\n' && *end != '\0'))
                return -EINVAL;
        *ret = v;
        return 0;
}

int cg_pid_starttime(pid_t pid, uint64_t *ret)
{
        char path[64];
        if (pid > 0)
                snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
        else
                snprintf(path, sizeof(path), "/proc/self/stat");
        _cleanup_free_ char *s = NULL;
        int r = cg_read_at(AT_FDCWD, path, &s);
        if (r < 0)
                return r == -ESRCH ? -ENOENT : r;
        return cg_stat_starttime(s, ret);
}

bool cg_parse_launcher_name(const char *name, pid_t *ret_pid, uint64_t *ret_start,
                            uint64_t *ret_pidns)
{
        size_t pl = strlen(CG_PREFIX);
        if (strncmp(name, CG_PREFIX, pl) != 0)
                return false;
        const char *p = name + pl, *end;
        uint64_t v[3];
        for (int i = 0; i < 3; i++) {
                /* no leading zeros: one name per launcher, exactly as we print it */
                if (p[0] == '0' && isdigit((unsigned char)p[1]))
                        return false;
                if (parse_u64(p, &end, &v[i]) < 0)
                        return false;
                if (i < 2 && *end != '-')
                        return false;
                p = end + (i < 2);
        }
        if (*end != '\0' || v[0] == 0 || v[0] > INT32_MAX)
                return false;
        *ret_pid = (pid_t)v[0];
        *ret_start = v[1];
        *ret_pidns = v[2];
        return true;
}
