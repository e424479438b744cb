/* common/dltable.c — a system library's functions in a table (dlib.h,
 * dlib_table): its own file so that only the binaries that open one
 * (chidori's serve, the broker's PostgreSQL store) link it. */
#include <dlfcn.h>
#include <errno.h>
#include <string.h>

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
