/* common/dlib.c — see dlib.h. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/dlib.h"

#ifndef CHIDORI_LIBEXECDIR
#define CHIDORI_LIBEXECDIR "/usr/local/libexec/chidori"
#endif

void *dlib_symbol(const char *name, const char *env_var, const char *symbol, struct err **err)
{
        char path[PATH_MAX] = "";
        const char *env = getenv(env_var);
        if (env && *env) {
                snprintf(path, sizeof(path), "%s", env);
        } else {
                char self[PATH_MAX];
                ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
                if (n > 0) {
                        self[n] = '\0';
                        char *slash = strrchr(self, '/');
                        size_t dir = slash ? (size_t)(slash - self) + 1 : 0, nl = strlen(name);
                        if (slash && dir + nl < sizeof(path)) {
                                memcpy(path, self, dir);
                                memcpy(path + dir, name, nl + 1);
                        }
                }
                if (!path[0] || access(path, R_OK) < 0)
                        snprintf(path, sizeof(path), "%s/%s", CHIDORI_LIBEXECDIR, name);
        }
        void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
        if (!h) {
                err_set(err, 0, "cannot load %s: %s; reinstall chidori or set %s=/path/to/%s", name, dlerror(),
                        env_var, name);
                return NULL;
        }
        void *sym = dlsym(h, symbol);
        if (!sym) {
                err_set(err, 0, "%s has no %s: %s", path, symbol, dlerror());
                return NULL;
        }
        return sym;
}
