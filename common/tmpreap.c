/* common/tmpreap.c — removing what a killed chidori left in TMPDIR
 * (tmpown.h).  Apart from tmpown.c so that the monitor, which only makes
 * such names, does not link it (`chidori` reaps before it execs the monitor). */
#define _GNU_SOURCE
#include "common/tmpown.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *const kinds[] = { TMP_KIND_STDIN, TMP_KIND_SHIMS, TMP_KIND_BUNDLE, TMP_KIND_NESTED, TMP_KIND_SUPERVISOR };

/* A decimal number without leading zeros, then '-'. */
static bool number(const char **p, unsigned long long *ret)
{
        const char *s = *p;
        if (!isdigit((unsigned char)s[0]) || (s[0] == '0' && isdigit((unsigned char)s[1])))
                return false;
        char *end;
        errno = 0;
        unsigned long long v = strtoull(s, &end, 10);
        if (errno || *end != '-')
                return false;
        *ret = v;
        *p = end + 1;
        return true;
}

/* chidori-KIND-<pid>-<start>-<pidns>-XXXXXX of a known KIND: its owner. */
static bool parse_name(const char *name, pid_t *pid, unsigned long long *start, unsigned long long *ns)
{
        if (strncmp(name, "chidori-", 8) != 0)
                return false;
        const char *p = name + 8;
        bool known = false;
        for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]) && !known; i++) {
                size_t kl = strlen(kinds[i]);
                if (strncmp(p, kinds[i], kl) == 0 && p[kl] == '-') {
                        p += kl + 1;
                        known = true;
                }
        }
        unsigned long long v;
        if (!known || !number(&p, &v) || v == 0 || v > INT32_MAX || !number(&p, start) || !number(&p, ns))
                return false;
        *pid = (pid_t)v;
        /* mkstemp's six characters, nothing else */
        if (strlen(p) != 6)
                return false;
        for (; *p; p++)
                if (!isalnum((unsigned char)*p))
                        return false;
        return true;
}

/* Removes NAME below dfd: a file, or a folder and what it holds (at most
 * a few levels: the shims' folder is the deepest). */
void tmp_remove_at(int dfd, const char *name, int depth)
{
        if (unlinkat(dfd, name, 0) == 0 || errno != EISDIR || depth > 8)
                return;
        int fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
        if (!d) {
                if (fd >= 0)
                        close(fd);
                return;
        }
        struct dirent *de;
        while ((de = readdir(d)))
                if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
                        tmp_remove_at(dirfd(d), de->d_name, depth + 1);
        closedir(d);
        unlinkat(dfd, name, AT_REMOVEDIR);
}

int tmp_reap_stale(const char *dir)
{
        unsigned long long ours = 0;
        if (tmp_pidns(&ours) < 0)
                return 0;
        int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
        if (!d) {
                if (dfd >= 0)
                        close(dfd);
                return 0;
        }
        int removed = 0;
        struct dirent *de;
        while ((de = readdir(d))) {
                pid_t pid;
                unsigned long long start, ns, now;
                if (!parse_name(de->d_name, &pid, &start, &ns) || ns != ours || pid == getpid())
                        continue;
                struct stat st;
                if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || st.st_uid != geteuid() ||
                    !(S_ISREG(st.st_mode) || S_ISDIR(st.st_mode)))
                        continue;
                int r = tmp_starttime(pid, &now);
                if (!(r == -ENOENT || (r == 0 && now != start)))
                        continue; /* alive, or unknown: theirs to remove */
                tmp_remove_at(dirfd(d), de->d_name, 0);
                removed++;
        }
        closedir(d);
        return removed;
}
