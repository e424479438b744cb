/* sandbox/tz.h — the time zone the engine worker runs in.
 *
 * The worker's environment carries a fixed TZ: UTC unless `--tz ZONE` /
 * CHIDORI_TZ chooses another, recorded in the journal header so a replay
 * runs in the same zone.  With TZ set, ICU (which JavaScriptCore asks for
 * local time and Intl) takes the zone from it and reads its own data; without
 * it, ICU would look for /etc/localtime and then list /usr/share/zoneinfo
 * (getdents64), which the worker's seccomp filter denies.  See
 * docs/sandbox.md, "Time zones".
 */
#ifndef CHIDORI_SANDBOX_TZ_H
#define CHIDORI_SANDBOX_TZ_H

#include "common/err.h"

#define TZ_DEFAULT "UTC"
#define TZ_NAME_MAX 64
#define TZ_ZONEINFO "/usr/share/zoneinfo"

/* 0 if `zone` may be the worker's TZ: "UTC", or a zone of the tz database
 * that this host has (a TZif file beneath /usr/share/zoneinfo, which the box
 * shows read-only with the rest of /usr) and the engine's ICU knows under
 * that name.  -1 with err saying why and what to use instead; the caller
 * names the option or file the value came from.  Loads ICU (~1.5 ms) for
 * any zone but UTC. */
int tz_check(const char *zone, struct err **err);

#endif
