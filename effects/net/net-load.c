/* effects/net/net-load.c — net_api(): libchidori-net.so on first use. */
#include "common/dlib.h"
#include "effects/net/net.h"

const struct net_api *net_api(struct err **err)
{
        static const struct net_api *api;
        if (api)
                return api;
        const struct net_api *a = dlib_symbol("libchidori-net.so", "CHIDORI_NET_LIB", "chidori_net_api", err);
        if (!a)
                return NULL;
        if (a->version != CHIDORI_NET_API_VERSION) {
                err_set(err, 0, "libchidori-net.so is version %d, this chidori needs %d: reinstall chidori",
                        a->version, CHIDORI_NET_API_VERSION);
                return NULL;
        }
        api = a;
        return api;
}
