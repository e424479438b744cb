/* cli/brokeruser.h — the broker's uid and gid, chosen by chidori as root
 * before the supervisor starts (its id map lists them). */
#ifndef CHIDORI_CLI_BROKERUSER_H
#define CHIDORI_CLI_BROKERUSER_H

#include <sys/types.h>

#include "common/err.h"

/* The broker uid: `spec` (--broker-user NAME|UID), else
 * $CHIDORI_BROKER_USER, else the user `chidori-broker` if /etc/passwd lists
 * it, else BROKER_DEFAULT_UID (gid: the user's group, or the same number).
 * A NAME or UID given is looked up through NSS (getpwnam, getpwuid); the
 * default reads /etc/passwd only (decision 170: NSS costs every run 1-3 ms
 * when the user does not exist).  Never 0 or 65534, as uid or gid.
 * BROKER_E_USAGE for an unknown name, a malformed number or a refused id. */
int monitor_broker_user(const char *spec, uid_t *ret_uid, gid_t *ret_gid, struct err **err);

/* The user `name` in the passwd-format file at `path`, read directly (no
 * NSS): 1 found (uid, gid set), 0 not listed or the file unreadable. */
int passwd_file_user(const char *path, const char *name, uid_t *ret_uid, gid_t *ret_gid);

#endif
