/* effects/net/net.h — the network side of the broker (fetch and prompts:
 * effects/net/http.c, effects/net/llm.c, libcurl) lives in libchidori-net.so, opened
 * on the first call that needs it.
 *
 * Why: libcurl pulls ~30 shared libraries (TLS, HTTP/2, IDN, LDAP, GSSAPI…)
 * whose loading cost every `chidori` start ~18 ms — `chidori launch` and
 * every run that never fetches included (make bench, table 2).  The launcher
 * therefore does not link libcurl; it reaches these functions through one
 * table of pointers the library exports (docs/decisions.md #30).
 */
#ifndef CHIDORI_EFFECTS_NET_H
#define CHIDORI_EFFECTS_NET_H

#include <poll.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "effects/net/http.h"
#include "effects/net/llm.h"

#define CHIDORI_NET_API_VERSION 4  /* 2: http_config.inflight, max_inflight; 3: http_cancel, streams;
                                      4: http_config.on_header */

struct net_api {
        int version;
        int (*http_engine_new)(const struct http_config *cfg, struct http_engine **ret, struct err **err);
        void (*http_engine_free)(struct http_engine *e);
        int (*http_start)(struct http_engine *e, uint64_t id, const struct http_request *req, http_done_fn done,
                          void *arg, struct err **err);
        size_t (*http_pending)(const struct http_engine *e);
        bool (*http_cancel)(struct http_engine *e, uint64_t id);
        int (*http_read)(struct http_engine *e, uint64_t stream, uint64_t read_id, http_read_fn fn, void *arg,
                         struct http_chunk *out, struct err **err);
        bool (*http_close)(struct http_engine *e, uint64_t stream);
        size_t (*http_fds)(struct http_engine *e, struct pollfd *fds, size_t max, int *timeout_ms);
        int (*http_perform)(struct http_engine *e, const struct pollfd *fds, size_t nfds, struct err **err);
        int (*http_request_from_json)(const struct cJSON *args, struct http_request **ret, struct err **err);
        void (*http_request_free)(struct http_request *req);
        struct cJSON *(*http_response_to_json)(const struct http_response *res);
        const char *(*http_error_name)(int code);
        int (*llm_config_from_env)(llm_getenv_fn get, struct llm_config *ret, struct err **err);
        void (*llm_config_clear)(struct llm_config *cfg);
        int (*llm_provider_allow)(const struct llm_config *cfg, struct ssrf_allow **ret, struct err **err);
        void (*ssrf_allow_free)(struct ssrf_allow *a);
        int (*llm_build_request)(const struct llm_config *cfg, const char *text, const struct cJSON *options,
                                 struct http_request **ret, struct err **err);
        int (*llm_parse_response)(const struct llm_config *cfg, const struct http_response *res,
                                  struct cJSON **ret, struct err **err);
};

/* The table, loading libchidori-net.so on first use: next to the chidori
 * binary, else in $(LIBEXECDIR), or CHIDORI_NET_LIB.  NULL with err when it
 * cannot be loaded (the message says how to fix it). */
const struct net_api *net_api(struct err **err);

#endif
