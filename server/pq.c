/* server/pq.c — libpq's functions, looked up when a PostgreSQL store is
 * opened (pq.h). */
#define CHIDORI_PQ_IMPL
#include <dlfcn.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include "server/pq.h"

struct pq_api pq_api;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static bool loaded;

int pq_load(struct err **err)
{
        pthread_mutex_lock(&lock);
        if (loaded) {
                pthread_mutex_unlock(&lock);
                return 0;
        }
        void *h = dlopen("libpq.so.5", RTLD_NOW | RTLD_LOCAL);
        if (!h) {
                pthread_mutex_unlock(&lock);
                return err_set(err, 0, "a PostgreSQL store needs libpq (%s): install Debian's libpq5", dlerror());
        }
        static const struct {
                const char *name;
                size_t off;
        } fns[] = {
#define PQ_ENTRY(fn) { #fn, offsetof(struct pq_api, fn) },
                PQ_FUNCS(PQ_ENTRY)
#undef PQ_ENTRY
        };
        struct pq_api a;
        for (size_t i = 0; i < sizeof(fns) / sizeof(fns[0]); i++) {
                void *p = dlsym(h, fns[i].name);
                if (!p) {
                        dlclose(h);
                        pthread_mutex_unlock(&lock);
                        return err_set(err, 0, "libpq.so.5 has no %s: install Debian 12's libpq5", fns[i].name);
                }
                memcpy((char *)&a + fns[i].off, &p, sizeof(p));
        }
        pq_api = a;
        loaded = true;
        pthread_mutex_unlock(&lock);
        return 0;
}
