#define _GNU_SOURCE
#include "common/err.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int vset(struct err **err, int code, int errnum, const char *fmt, va_list ap)
{
        int saved = errno;
        if (!err)
                goto out;
        char *m = NULL;
        if (vasprintf(&m, fmt, ap) < 0)
                m = NULL;
        if (m && errnum) {
                char *full = NULL;
                if (asprintf(&full, "%s: %s", m, strerror(errnum)) >= 0) {
                        free(m);
                        m = full;
                }
        }
        err_free(*err);
        *err = calloc(1, sizeof(**err));
        if (!*err) {
                free(m);
                goto out;
        }
        (*err)->errnum = errnum;
        (*err)->code = code;
        (*err)->msg = m ? m : strdup("out of memory while reporting an error");
out:
        errno = saved;
        return -1;
}

int err_set(struct err **err, int errnum, const char *fmt, ...)
{
        va_list ap;
        va_start(ap, fmt);
        vset(err, 0, errnum, fmt, ap);
        va_end(ap);
        return -1;
}

int err_setc(struct err **err, int code, int errnum, const char *fmt, ...)
{
        va_list ap;
        va_start(ap, fmt);
        vset(err, code, errnum, fmt, ap);
        va_end(ap);
        return -1;
}

int err_wrap(struct err **err, const char *fmt, ...)
{
        if (!err || !*err)
                return -1;
        int saved = errno;
        char *prefix = NULL, *full = NULL;
        va_list ap;
        va_start(ap, fmt);
        int n = vasprintf(&prefix, fmt, ap);
        va_end(ap);
        if (n >= 0 && asprintf(&full, "%s: %s", prefix, (*err)->msg ? (*err)->msg : "") >= 0) {
                free((*err)->msg);
                (*err)->msg = full;
        }
        free(prefix);
        errno = saved;
        return -1;
}

void err_free(struct err *e)
{
        if (!e)
                return;
        free(e->msg);
        free(e);
}

const char *err_msg(const struct err *e)
{
        return e && e->msg ? e->msg : "";
}

int err_code(const struct err *e)
{
        return e ? e->code : 0;
}
