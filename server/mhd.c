/* server/mhd.c — libmicrohttpd's functions, looked up on first use (mhd.h). */
#define CHIDORI_MHD_IMPL
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

#include "common/dlib.h"
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
        static const struct dlib_sym fns[] = {
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
        if (dlib_table("libmicrohttpd.so.12", "serve", "libmicrohttpd", "libmicrohttpd12", fns,
                       sizeof(fns) / sizeof(fns[0]), &mhd_api, sizeof(mhd_api), err) < 0) {
                pthread_mutex_unlock(&lock);
                return -1;
        }
        loaded = true;
        pthread_mutex_unlock(&lock);
        return 0;
}
