/* effects/net/http-errors.c — http_error_name(), outside http.c so that the
 * launcher can name an http error without loading libcurl (effects/net/net.h). */
#include "effects/net/http.h"

const char *http_error_name(int code)
{
        static const char *const names[HTTP_E_MAX] = {
                [HTTP_E_REQUEST] = "request", [HTTP_E_SSRF] = "ssrf",         [HTTP_E_TOO_BIG] = "too_big",
                [HTTP_E_TIMEOUT] = "timeout", [HTTP_E_REDIRECT] = "redirect", [HTTP_E_NETWORK] = "network",
                [HTTP_E_INTERNAL] = "internal", [HTTP_E_LIMIT] = "ELIMIT",
                [HTTP_E_SECRET] = "ESECRET", [HTTP_E_POLICY] = "EPOLICY",
                [HTTP_E_QUOTA] = "EQUOTA",
        };
        return code > 0 && code < HTTP_E_MAX ? names[code] : NULL;
}
