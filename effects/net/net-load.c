/* effects/net/net-load.c — net_api(): libchidori-net.so on first use.
 *
 * The one piece of process-wide state of the net family: the library is
 * opened once per process (dlopen is process-wide anyway) and its API table
 * kept; the lock lets sessions on several threads ask at once. */
#include <pthread.h>
#include <stdatomic.h>

#include "common/dlib.h"
#include "effects/net/net.h"

const struct net_api *net_api(struct err **err)
{
        static _Atomic(const struct net_api *) api;
        static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
        const struct net_api *a = atomic_load(&api);
        if (a)
                return a;
        pthread_mutex_lock(&lock);
        a = atomic_load(&api);
        if (!a) {
                a = dlib_symbol("libchidori-net.so", "CHIDORI_NET_LIB", "chidori_net_api", err);
                if (a && a->version != CHIDORI_NET_API_VERSION) {
                        err_set(err, 0, "libchidori-net.so is version %d, this chidori needs %d: reinstall chidori",
                                a->version, CHIDORI_NET_API_VERSION);
                        a = NULL;
                }
                if (a)
                        atomic_store(&api, a);
        }
        pthread_mutex_unlock(&lock);
        return a;
}
