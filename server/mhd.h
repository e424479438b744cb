/* server/mhd.h — libmicrohttpd, loaded on first use.
 *
 * `chidori` is started for every run, and libmicrohttpd brings GnuTLS and
 * nine more libraries with it (about 200 page faults and 1 ms at every
 * start, `make bench`).  Only `serve` needs it, so the server's files
 * include this header instead of <microhttpd.h>: it declares the library's
 * types as usual and turns each MHD_ function the server calls into a call
 * through a table that mhd_load() fills with dlopen("libmicrohttpd.so.12").
 * A function used here and missing from the table is a link error. */
#ifndef CHIDORI_SERVER_MHD_H
#define CHIDORI_SERVER_MHD_H

#include <microhttpd.h>

#include "common/err.h"

struct mhd_api {
        __typeof__(&MHD_start_daemon) start_daemon;
        __typeof__(&MHD_stop_daemon) stop_daemon;
        __typeof__(&MHD_run) run;
        __typeof__(&MHD_get_timeout) get_timeout;
        __typeof__(&MHD_get_daemon_info) get_daemon_info;
        __typeof__(&MHD_lookup_connection_value) lookup_connection_value;
        __typeof__(&MHD_suspend_connection) suspend_connection;
        __typeof__(&MHD_resume_connection) resume_connection;
        __typeof__(&MHD_queue_response) queue_response;
        __typeof__(&MHD_create_response_from_buffer) create_response_from_buffer;
        __typeof__(&MHD_create_response_from_callback) create_response_from_callback;
        __typeof__(&MHD_add_response_header) add_response_header;
        __typeof__(&MHD_destroy_response) destroy_response;
};

extern struct mhd_api mhd_api;

/* Open libmicrohttpd (once per process).  -1: not installed (err says
 * which package), or a function missing. */
int mhd_load(struct err **err);

#ifndef CHIDORI_MHD_IMPL
#define MHD_start_daemon mhd_api.start_daemon
#define MHD_stop_daemon mhd_api.stop_daemon
#define MHD_run mhd_api.run
#define MHD_get_timeout mhd_api.get_timeout
#define MHD_get_daemon_info mhd_api.get_daemon_info
#define MHD_lookup_connection_value mhd_api.lookup_connection_value
#define MHD_suspend_connection mhd_api.suspend_connection
#define MHD_resume_connection mhd_api.resume_connection
#define MHD_queue_response mhd_api.queue_response
#define MHD_create_response_from_buffer mhd_api.create_response_from_buffer
#define MHD_create_response_from_callback mhd_api.create_response_from_callback
#define MHD_add_response_header mhd_api.add_response_header
#define MHD_destroy_response mhd_api.destroy_response
#endif

#endif
