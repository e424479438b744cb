/* common/dltable.c — what opens a library (dlib.h): one of chidori's own
 * (dlib_symbol: the engine for --no-isolate, the broker's network side) and
 * a system library's functions in a table (dlib_table: chidori's serve, the
 * broker's PostgreSQL store).  Its own file so that a binary that only finds
 * files (the monitor, a static PIE: decision 171) links no dlopen. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/dlib.h"

int dlib_table(const char *soname, const char *who, const char *lib, const char *pkg, const struct dlib_sym *syms,
               size_t n, void *table, size_t size, struct err **err)
{
        void *h = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
        if (!h)
                return err_set(err, 0, "%s needs %s (%s): install Debian's %s", who, lib, dlerror(), pkg);
        char tmp[512];
        if (size > sizeof(tmp)) {
                dlclose(h);
                return err_set(err, EINVAL, "%s: a table of %zu bytes", soname, size);
        }
        for (size_t i = 0; i < n; i++) {
                void *p = dlsym(h, syms[i].name);
                if (!p) {
                        dlclose(h);
                        return err_set(err, 0, "%s has no %s: install Debian 12's %s", soname, syms[i].name, pkg);
                }
                memcpy(tmp + syms[i].off, &p, sizeof(p));
        }
        memcpy(table, tmp, size);
        return 0;
}

void *dlib_symbol(const char *name, const char *env_var, const char *symbol, struct err **err)
{
        const char *env = getenv(env_var);
        char *found = env && *env ? strdup(env) : dlib_find(name, R_OK);
        void *h = found ? dlopen(found, RTLD_NOW | RTLD_LOCAL) : NULL;
        if (!h) {
                if (found)
                        err_set(err, 0, "cannot load %s: %s; reinstall chidori or set %s=/path/to/%s", found, dlerror(),
                                env_var, name);
                else
                        err_set(err, 0, "cannot find %s in %s; reinstall chidori or set %s=/path/to/%s", name,
                                dlib_dirs_text(), env_var, name);
                free(found);
                return NULL;
        }
        void *sym = dlsym(h, symbol);
        if (!sym)
                err_set(err, 0, "%s has no %s: %s", found, symbol, dlerror());
        free(found);
        return sym;
}
