/* common/dlib.c — see dlib.h. */
#define _GNU_SOURCE
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/dlib.h"

#ifndef CHIDORI_LIBEXECDIR
#define CHIDORI_LIBEXECDIR "/usr/local/libexec/chidori"
#endif
#ifndef CHIDORI_LIBEXEC_REL
#define CHIDORI_LIBEXEC_REL "../libexec/chidori"
#endif

int dlib_dirs(char *ret[3])
{
        int n = 0;
        char self[PATH_MAX];
        ssize_t len = readlink("/proc/self/exe", self, sizeof(self) - 1);
        char *slash = len > 0 ? (self[len] = '\0', strrchr(self, '/')) : NULL;
        const char *cand[3] = { NULL, NULL, CHIDORI_LIBEXECDIR };
        char rel[PATH_MAX * 2] = "";
        if (slash) {
                *slash = '\0';
                cand[0] = slash == self ? "/" : self;
                snprintf(rel, sizeof(rel), "%s/%s", cand[0], CHIDORI_LIBEXEC_REL);
                cand[1] = rel;
        }
        for (int i = 0; i < 3; i++) {
                if (!cand[i])
                        continue;
                char *p = realpath(cand[i], NULL);
                if (!p)
                        p = strdup(cand[i]);
                if (!p)
                        continue;
                bool dup = false;
                for (int k = 0; k < n; k++)
                        dup = dup || strcmp(ret[k], p) == 0;
                if (dup)
                        free(p);
                else
                        ret[n++] = p;
        }
        return n;
}

char *dlib_find(const char *name, int mode)
{
        char *dirs[3];
        int n = dlib_dirs(dirs);
        char *found = NULL;
        for (int i = 0; i < n; i++) {
                char *p = NULL;
                if (!found && asprintf(&p, "%s%s%s", dirs[i], strcmp(dirs[i], "/") ? "/" : "", name) >= 0 &&
                    access(p, mode) == 0)
                        found = p;
                else
                        free(p);
                free(dirs[i]);
        }
        return found;
}

const char *dlib_dirs_text(void)
{
        static char buf[PATH_MAX * 3 + 16];
        char *dirs[3];
        int n = dlib_dirs(dirs);
        size_t k = 0;
        buf[0] = '\0';
        for (int i = 0; i < n; i++) {
                const char *sep = i == 0 ? "" : i == n - 1 ? " or " : ", ";
                if (k < sizeof(buf))
                        k += (size_t)snprintf(buf + k, sizeof(buf) - k, "%s%s", sep, dirs[i]);
                free(dirs[i]);
        }
        return buf;
}
