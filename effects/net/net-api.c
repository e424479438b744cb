/* effects/net/net-api.c — the table libchidori-net.so exports (effects/net/net.h).
 * Built into the library only, never into the launcher. */
#include "effects/net/net.h"
#include "effects/net/ssrf.h"

__attribute__((visibility("default"))) const struct net_api chidori_net_api = {
        .version = CHIDORI_NET_API_VERSION,
        .http_engine_new = http_engine_new,
        .http_engine_free = http_engine_free,
        .http_start = http_start,
        .http_pending = http_pending,
        .http_cancel = http_cancel,
        .http_read = http_read,
        .http_close = http_close,
        .http_fds = http_fds,
        .http_perform = http_perform,
        .http_request_from_json = http_request_from_json,
        .http_request_free = http_request_free,
        .http_response_to_json = http_response_to_json,
        .http_error_name = http_error_name,
        .llm_config_from_env = llm_config_from_env,
        .llm_config_clear = llm_config_clear,
        .llm_provider_allow = llm_provider_allow,
        .ssrf_allow_free = ssrf_allow_free,
        .llm_build_request = llm_build_request,
        .llm_parse_response = llm_parse_response,
};
