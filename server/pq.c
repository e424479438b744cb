/* server/pq.c — libpq's functions, looked up when a PostgreSQL store is
 * opened (pq.h). */
#define CHIDORI_PQ_IMPL
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

#include "common/dlib.h"
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
        static const struct dlib_sym fns[] = {
#define PQ_ENTRY(fn) { #fn, offsetof(struct pq_api, fn) },
                PQ_FUNCS(PQ_ENTRY)
#undef PQ_ENTRY
        };
        if (dlib_table("libpq.so.5", "a PostgreSQL store", "libpq", "libpq5", fns, sizeof(fns) / sizeof(fns[0]),
                       &pq_api, sizeof(pq_api), err) < 0) {
                pthread_mutex_unlock(&lock);
                return -1;
        }
        loaded = true;
        pthread_mutex_unlock(&lock);
        return 0;
}
