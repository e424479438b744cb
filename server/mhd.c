/* server/mhd.c — libmicrohttpd's functions, looked up on first use (mhd.h). */
#define CHIDORI_MHD_IMPL
#include <dlfcn.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include "server/mhd.h"

struct mhd_api mhd_api;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static bool loaded;

int mhd_load(struct err **err)
{
        pthread_mutex_lock(&lock);
        if (loaded) {
                pthread_mutex_unlock(&lock);
                return 0;
        }
        void *h = dlopen("libmicrohttpd.so.12", RTLD_NOW | RTLD_LOCAL);
        if (!h) {
                pthread_mutex_unlock(&lock);
                return err_set(err, 0, "serve needs libmicrohttpd (%s): install Debian's libmicrohttpd12", dlerror());
        }
        static const struct {
                const char *name;
                size_t off;
        } fns[] = {
#define F(field, fn) { #fn, offsetof(struct mhd_api, field) }
                F(start_daemon, MHD_start_daemon),
                F(stop_daemon, MHD_stop_daemon),
                F(run, MHD_run),
                F(get_timeout, MHD_get_timeout),
                F(get_daemon_info, MHD_get_daemon_info),
                F(lookup_connection_value, MHD_lookup_connection_value),
                F(suspend_connection, MHD_suspend_connection),
                F(resume_connection, MHD_resume_connection),
                F(queue_response, MHD_queue_response),
                F(create_response_from_buffer, MHD_create_response_from_buffer),
                F(create_response_from_callback, MHD_create_response_from_callback),
                F(add_response_header, MHD_add_response_header),
                F(destroy_response, MHD_destroy_response),
#undef F
        };
        struct mhd_api a;
        for (size_t i = 0; i < sizeof(fns) / sizeof(fns[0]); i++) {
                void *p = dlsym(h, fns[i].name);
                if (!p) {
                        dlclose(h);
                        pthread_mutex_unlock(&lock);
                        return err_set(err, 0, "libmicrohttpd.so.12 has no %s: install Debian 12's libmicrohttpd12",
                                       fns[i].name);
                }
                memcpy((char *)&a + fns[i].off, &p, sizeof(p));
        }
        mhd_api = a;
        loaded = true;
        pthread_mutex_unlock(&lock);
        return 0;
}
