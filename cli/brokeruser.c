/* cli/brokeruser.c — the broker's uid and gid (brokeruser.h). */
#define _GNU_SOURCE
#include "cli/brokeruser.h"

#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "monitor/broker.h"

static int refuse_id(const char *what, unsigned id, struct err **err)
{
        return err_setc(err, BROKER_E_USAGE, 0,
                        "the broker's %s must not be %u (%s); choose another with --broker-user or "
                        "CHIDORI_BROKER_USER",
                        what, id, id == 0 ? "root" : "the boxes' nobody");
}

int passwd_file_user(const char *path, const char *name, uid_t *ret_uid, gid_t *ret_gid)
{
        FILE *f = fopen(path, "re");
        if (!f)
                return 0;
        struct passwd *pw;
        int found = 0;
        /* fgetpwent parses the file itself: no NSS module is loaded. */
        while (!found && (pw = fgetpwent(f)))
                if (pw->pw_name && strcmp(pw->pw_name, name) == 0) {
                        *ret_uid = pw->pw_uid;
                        *ret_gid = pw->pw_gid;
                        found = 1;
                }
        fclose(f);
        return found;
}

int monitor_broker_user(const char *spec, uid_t *ret_uid, gid_t *ret_gid, struct err **err)
{
        const char *from = "--broker-user";
        if (!spec || !*spec) {
                spec = getenv("CHIDORI_BROKER_USER");
                from = "CHIDORI_BROKER_USER";
        }
        uid_t uid;
        gid_t gid;
        if (spec && *spec) {
                long n;
                if (parse_nonneg(spec, &n) == 0) {
                        if (n > 0x7fffffffL)
                                return err_setc(err, BROKER_E_USAGE, 0, "%s: uid %s is out of range", from, spec);
                        uid = (uid_t)n;
                        struct passwd *pw = getpwuid(uid);
                        gid = pw ? pw->pw_gid : (gid_t)n;
                } else {
                        struct passwd *pw = getpwnam(spec);
                        if (!pw)
                                return err_setc(err, BROKER_E_USAGE, 0,
                                                "%s: no user '%s' (expected a user name or a numeric uid)", from,
                                                spec);
                        uid = pw->pw_uid;
                        gid = pw->pw_gid;
                }
        } else if (!passwd_file_user("/etc/passwd", "chidori-broker", &uid, &gid)) {
                uid = BROKER_DEFAULT_UID;
                gid = BROKER_DEFAULT_UID;
        }
        if (uid == 0 || uid == 65534)
                return refuse_id("uid", (unsigned)uid, err);
        if (gid == 0 || gid == 65534)
                return refuse_id("gid", (unsigned)gid, err);
        *ret_uid = uid;
        *ret_gid = gid;
        return 0;
}
