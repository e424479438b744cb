/* common/strv.h — a growable NULL-terminated vector of owned strings (an
 * argv or an environment being built). */
#ifndef CHIDORI_COMMON_STRV_H
#define CHIDORI_COMMON_STRV_H

#include <stdbool.h>
#include <stddef.h>

struct strv {
        char **v;     /* NULL-terminated once anything was added */
        size_t n, cap;
        bool failed;  /* out of memory on the way: v is incomplete */
};

/* Append a formatted string (no-op once failed). */
void strv_addf(struct strv *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Free the strings and the vector; s is empty again. */
void strv_clear(struct strv *s);

#endif
