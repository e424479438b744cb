/* common/dlib.h — find chidori's own files (the worker, the engine and
 * network libraries, a bundled esbuild) and open its shared libraries (the
 * engine for --no-isolate, the network side of the broker) on first use.
 *
 * Installed files are found relative to the running binary, so that
 * `make install PREFIX=/any/where` (or a copied tree) works without a
 * rebuild; the directory baked in at build time is only the last resort. */
#ifndef CHIDORI_COMMON_DLIB_H
#define CHIDORI_COMMON_DLIB_H

#include <stddef.h>

#include "common/err.h"

/* The directories searched, in order: the running binary's own directory
 * (the build tree), <that>/CHIDORI_LIBEXEC_REL (the installed layout, by
 * default ../libexec/chidori) and CHIDORI_LIBEXECDIR (baked in at build
 * time).  Returns how many were written to ret (at most 3), each malloc'd
 * and canonical where it exists; duplicates are left out. */
int dlib_dirs(char *ret[3]);

/* The first of those directories that holds `name` accessible with `mode`
 * (access(2): X_OK, R_OK): its malloc'd path, or NULL. */
char *dlib_find(const char *name, int mode);

/* "DIR1, DIR2 or DIR3" for messages (static buffer). */
const char *dlib_dirs_text(void);

/* dlopen `name` (e.g. "libchidori-net.so"): the path in the environment
 * variable `env_var` if set, else dlib_find(name); then dlsym(`symbol`).
 * NULL with err naming the file and the variable that overrides it. */
void *dlib_symbol(const char *name, const char *env_var, const char *symbol, struct err **err);

/* A system library opened on first use (server/mhd.h, server/pq.h): each
 * symbol's address stored at its offset in `table` (size bytes, written only
 * when every symbol is found).  -1 with *err naming what needs it (`who`),
 * the library and Debian's package to install. */
struct dlib_sym {
        const char *name;
        size_t off;
};
int dlib_table(const char *soname, const char *who, const char *lib, const char *pkg, const struct dlib_sym *syms,
               size_t n, void *table, size_t size, struct err **err);

#endif
