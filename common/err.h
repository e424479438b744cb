/* common/err.h — the error type every fallible function in chidori uses.
 *
 * A fallible function returns int (negative on failure) and takes
 * `struct err **err` last.  The error carries errno and a message; callers add
 * context on the way up with err_wrap(); only the top level prints.
 * Passing err == NULL is allowed: the error is then dropped.
 */
#ifndef CHIDORI_COMMON_ERR_H
#define CHIDORI_COMMON_ERR_H

#include <stdarg.h>

struct err {
        int errnum;  /* errno at the point of failure, 0 if not an OS error */
        int code;    /* optional module-specific code (0 = none) */
        char *msg;   /* "context: context: what failed[: strerror]" */
};

/* Set *err (replacing any earlier error).  Appends strerror(errnum) when
 * errnum != 0.  Always returns -1 so callers can `return err_set(...)`. */
int err_set(struct err **err, int errnum, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));

/* Like err_set, with a module-specific code (see the module's header). */
int err_setc(struct err **err, int code, int errnum, const char *fmt, ...)
        __attribute__((format(printf, 4, 5)));

/* Prefix the existing message with "<fmt>: ".  Returns -1. */
int err_wrap(struct err **err, const char *fmt, ...)
        __attribute__((format(printf, 2, 3)));

void err_free(struct err *e);
const char *err_msg(const struct err *e);  /* "" for NULL */
int err_code(const struct err *e);         /* 0 for NULL */

#endif
