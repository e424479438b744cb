/* common/dlib.h — open one of chidori's own shared libraries (the engine
 * for --no-isolate, the network side of the broker) on first use. */
#ifndef CHIDORI_COMMON_DLIB_H
#define CHIDORI_COMMON_DLIB_H

#include "common/err.h"

/* dlopen `name` (e.g. "libchidori-net.so"): the path in the environment
 * variable `env_var` if set, else next to the running binary, else in
 * CHIDORI_LIBEXECDIR; then dlsym(`symbol`).  NULL with err naming the file
 * and the variable that overrides it. */
void *dlib_symbol(const char *name, const char *env_var, const char *symbol, struct err **err);

#endif
