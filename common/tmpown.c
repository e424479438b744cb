/* common/tmpown.c — temporary names that say whose they are (tmpown.h). */
#define _GNU_SOURCE
#include "common/tmpown.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

const char *tmp_dir(void)
{
        const char *t = getenv("TMPDIR");
        return t && *t ? t : "/tmp";
}

/* Field 22 of /proc/PID/stat (0: this process).  0, -ENOENT (no such
 * process) or another -errno. */
int tmp_starttime(pid_t pid, unsigned long long *ret)
{
        char path[64], buf[1024];
        if (pid > 0)
                snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
        else
                snprintf(path, sizeof(path), "/proc/self/stat");
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return errno == ESRCH ? -ENOENT : -errno;
        ssize_t n = read(fd, buf, sizeof(buf) - 1);
        int e = errno;
        close(fd);
        if (n <= 0)
                return n < 0 && e != ESRCH ? -e : -ENOENT;  /* a process that just went */
        buf[n] = '\0';
        /* After the command's closing parenthesis: field 3 onwards. */
        const char *p = strrchr(buf, ')');
        if (!p)
                return -EINVAL;
        p++;
        for (int field = 3; field < 22; field++) {
                p = strchr(p + 1, ' ');
                if (!p)
                        return -EINVAL;
        }
        char *end;
        errno = 0;
        unsigned long long v = strtoull(p + 1, &end, 10);
        if (errno || end == p + 1)
                return -EINVAL;
        *ret = v;
        return 0;
}

int tmp_pidns(unsigned long long *ret)
{
        struct stat st;
        if (stat("/proc/self/ns/pid", &st) < 0)
                return -errno;
        *ret = (unsigned long long)st.st_ino;
        return 0;
}

int tmp_owned_template(char *buf, size_t len, const char *dir, const char *kind)
{
        unsigned long long start = 0, ns = 0;
        int n;
        if (tmp_starttime(0, &start) < 0 || tmp_pidns(&ns) < 0)
                n = snprintf(buf, len, "%s/chidori-%s-XXXXXX", dir, kind); /* no /proc: not reapable */
        else
                n = snprintf(buf, len, "%s/chidori-%s-%d-%llu-%llu-XXXXXX", dir, kind, (int)getpid(), start, ns);
        if (n < 0 || (size_t)n >= len) {
                errno = ENAMETOOLONG;
                return -1;
        }
        return 0;
}
