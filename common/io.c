/* common/io.c — reading a whole file or descriptor, bounded (common/util.h). */
#define _GNU_SOURCE
#include "common/util.h"

#include <errno.h>
#include <stdbool.h>
#include <signal.h>
#include <stdint.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/cleanup.h"

int read_file(const char *path, size_t max, char **ret, size_t *ret_len, struct err **err)
{
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return err_set(err, errno, "open '%s'", path);
        return read_fd(fd, path, max, ret, ret_len, err);
}

int read_opened(const char *path, int fd, int errnum, size_t max, char **ret, size_t *ret_len, struct err **err)
{
        if (fd > 0)
                return read_fd(fd, path, max, ret, ret_len, err);
        if (errnum)
                return err_set(err, errnum, "open '%s'", path);
        return read_file(path, max, ret, ret_len, err);
}

int read_fd(int fd, const char *path, size_t max, char **ret, size_t *ret_len, struct err **err)
{
        struct stat st;
        if (fstat(fd, &st) < 0)
                return err_set(err, errno, "stat '%s'", path);
        if (S_ISDIR(st.st_mode))
                return err_set(err, EISDIR, "read '%s'", path);
        size_t cap = 4096, len = 0;
        char *buf = malloc(cap + 1);
        if (!buf)
                return err_set(err, ENOMEM, "read '%s'", path);
        for (;;) {
                if (len == cap) {
                        if (cap > max) {
                                free(buf);
                                return err_set(err, EFBIG, "read '%s' (limit %zu bytes)", path, max);
                        }
                        cap *= 2;
                        char *n = realloc(buf, cap + 1);
                        if (!n) {
                                free(buf);
                                return err_set(err, ENOMEM, "read '%s'", path);
                        }
                        buf = n;
                }
                ssize_t n = read(fd, buf + len, cap - len);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        int e = errno;
                        free(buf);
                        return err_set(err, e, "read '%s'", path);
                }
                if (n == 0)
                        break;
                len += (size_t)n;
        }
        if (len > max) {
                free(buf);
                return err_set(err, EFBIG, "read '%s' (limit %zu bytes)", path, max);
        }
        buf[len] = '\0';
        *ret = buf;
        if (ret_len)
                *ret_len = len;
        return 0;
}
