/* common/cleanup.h — scope-exit helpers (GCC/Clang cleanup attribute).
 * Hand ownership out with take_fd(&fd) / take_ptr(&p). */
#ifndef CHIDORI_COMMON_CLEANUP_H
#define CHIDORI_COMMON_CLEANUP_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static inline void cleanup_freep(void *p)
{
        free(*(void **)p);
}
static inline void cleanup_closep(int *fd)
{
        if (*fd >= 0) {
                int saved = errno;
                close(*fd);
                errno = saved;
        }
}
static inline void cleanup_fclosep(FILE **f)
{
        if (*f)
                fclose(*f);
}

#define _cleanup_free_ __attribute__((cleanup(cleanup_freep)))
#define _cleanup_close_ __attribute__((cleanup(cleanup_closep)))
#define _cleanup_fclose_ __attribute__((cleanup(cleanup_fclosep)))

static inline int take_fd(int *fd)
{
        int r = *fd;
        *fd = -1;
        return r;
}
static inline void *take_ptr_(void **p)
{
        void *r = *p;
        *p = NULL;
        return r;
}
#define take_ptr(pp) take_ptr_((void **)(pp))

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

#endif
