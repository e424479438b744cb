/* common/strv.c — see strv.h. */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/strv.h"

void strv_addf(struct strv *s, const char *fmt, ...)
{
        if (s->failed)
                return;
        if (s->n + 2 > s->cap) {
                size_t cap = s->cap ? s->cap * 2 : 16;
                char **nv = realloc(s->v, cap * sizeof(*nv));
                if (!nv) {
                        s->failed = true;
                        return;
                }
                s->v = nv;
                s->cap = cap;
        }
        va_list ap;
        va_start(ap, fmt);
        int r = vasprintf(&s->v[s->n], fmt, ap);
        va_end(ap);
        if (r < 0) {
                s->failed = true;
                return;
        }
        s->v[++s->n] = NULL;
}

void strv_clear(struct strv *s)
{
        for (size_t i = 0; i < s->n; i++)
                free(s->v[i]);
        free(s->v);
        memset(s, 0, sizeof(*s));
}
