/* effects/net/ssrf.h — the SSRF guard: which destination addresses the parent may
 * connect to on an agent's behalf, and the operator's allowlist of exceptions.
 *
 * Brokered http runs in the trusted parent, with the parent's network reach.
 * The guard classifies the socket address libcurl is about to connect to (see
 * effects/net/http.c: it runs in CURLOPT_OPENSOCKETFUNCTION, so every address of
 * every hop is checked, and a DNS answer cannot change between the check and
 * the connect).  Everything here is pure: no I/O, no DNS, no allocation
 * except in the allowlist.
 */
#ifndef CHIDORI_EFFECTS_NET_SSRF_H
#define CHIDORI_EFFECTS_NET_SSRF_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>

#include "common/err.h"

/* Room for any address as ssrf_addr_format writes it ("[v6%scope]" included). */
#define SSRF_ADDR_MAX 64

/* True when `sa` (AF_INET or AF_INET6; anything else is not public) is a
 * globally routable unicast address.  When it is not, `why` (if non-NULL)
 * names the range, e.g. "loopback 127.0.0.0/8" or
 * "IPv4-mapped ::ffff:0:0/96 of 10.0.0.1: private 10.0.0.0/8 (RFC 1918)";
 * when it is, `why` is "public".  IPv6 forms that embed an IPv4 address
 * (mapped, compatible, SIIT, NAT64, 6to4, Teredo) are judged by the embedded
 * address.  The full list, and what was left out, is in docs/http.md. */
bool ssrf_is_public(const struct sockaddr *sa, char *why, size_t len);

/* "127.0.0.1" or "[::1]" (IPv6 in brackets, as in a URL), without the port.
 * Never fails: an unknown family prints as "<family N>". */
void ssrf_addr_format(const struct sockaddr *sa, char *buf, size_t len);

/* Parse a numeric address, strictly: dotted-quad IPv4 or RFC 4291 IPv6
 * (brackets allowed), never the inet_aton shorthands ("127.1", "0x7f.1").
 * Port 0.  Returns 0, or -1 when `text` is not such a literal (no err: the
 * caller decides whether that is a hostname or a mistake). */
int ssrf_addr_parse(const char *text, struct sockaddr_storage *ret);

/* ---- allowlist ---- */

struct ssrf_allow;

/* Parse a comma-separated list of HOST[:PORT] entries (the format of
 * CHIDORI_HTTP_ALLOW_HOSTS and of one --allow-host value).  HOST is a DNS
 * name (lower-cased, one trailing dot dropped; letters, digits, '-', '_',
 * '.'), a dotted-quad IPv4 address, or an IPv6 address — in brackets when a
 * port follows ("[::1]:8080"; a bare "::1" is an address without port).
 * Blank entries are skipped.  `spec` may be NULL or empty: an empty list.
 * On success *ret is a new list the caller frees with ssrf_allow_free. */
int ssrf_allow_parse(const char *spec, struct ssrf_allow **ret, struct err **err);

/* Append the entries of `spec` (same format) to `a`.  On failure `a` is
 * unchanged. */
int ssrf_allow_add(struct ssrf_allow *a, const char *spec, struct err **err);

/* Number of entries (NULL counts as 0). */
size_t ssrf_allow_count(const struct ssrf_allow *a);

/* Does the allowlist let us connect to `sa` for a URL whose host is `host`?
 * An address entry matches when `sa` is that address (an IPv4-mapped IPv6
 * address counts as its IPv4 address); a name entry matches when `host`
 * equals it, case-insensitively, ignoring one trailing dot.  `host` may be
 * NULL or an IP literal (name entries then do not match).  A port in the
 * entry must equal `sa`'s port.  NULL `a` allows nothing. */
bool ssrf_allow_match(const struct ssrf_allow *a, const char *host, const struct sockaddr *sa);

void ssrf_allow_free(struct ssrf_allow *a);

#endif
