/* sandbox/tz.c — see tz.h. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdbool.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <unicode/ucal.h>

#include "common/cleanup.h"
#include "common/text.h"
#include "sandbox/tz.h"

#define STR2(x) #x
#define STR(x) STR2(x)
/* The ICU JavaScriptCore links (Debian builds both against the same one);
 * the header renames every entry point with the version suffix. */
#define ICU_I18N_SONAME "libicui18n.so." STR(U_ICU_VERSION_MAJOR_NUM)

static bool is_name_char(char c)
{
        return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '/' || c == '_' ||
               c == '+' || c == '-';
}

/* The shape ICU accepts from TZ as a zone name (putil.cpp, isValidOlsonID):
 * no digit but up to two at the very end ("Etc/GMT+10"), or one of four
 * legacy names.  Anything else makes ICU ignore TZ and go looking for the
 * host's zone: /etc/localtime, then a listing of /usr/share/zoneinfo. */
static bool icu_takes_from_tz(const char *z)
{
        static const char *const legacy[] = { "PST8PDT", "MST7MDT", "CST6CDT", "EST5EDT" };
        for (size_t i = 0; i < sizeof(legacy) / sizeof(legacy[0]); i++)
                if (strcmp(z, legacy[i]) == 0)
                        return true;
        size_t i = strcspn(z, "0123456789"), digits = strspn(z + i, "0123456789");
        return z[i + digits] == '\0' && digits <= 2;
}

/* A name of the tz database: letters, digits, '_', '+', '-', components
 * separated by single slashes, starting with a letter.  No '.', so no ".."
 * and none of the table files (zone.tab, tzdata.zi) beside the zones. */
static bool is_zone_name(const char *z)
{
        size_t n = strlen(z);
        if (n == 0 || n > TZ_NAME_MAX || !((z[0] >= 'A' && z[0] <= 'Z') || (z[0] >= 'a' && z[0] <= 'z')))
                return false;
        for (size_t i = 0; i < n; i++) {
                if (!is_name_char(z[i]) || (z[i] == '/' && (z[i + 1] == '/' || z[i + 1] == '\0')))
                        return false;
        }
        return icu_takes_from_tz(z);
}

/* A TZif file beneath /usr/share/zoneinfo: symlinks may not leave it (the
 * box shows /usr, not /etc/localtime that zoneinfo/localtime points to). */
static int host_has_zone(const char *zone, struct err **err)
{
        _cleanup_close_ int dir = open(TZ_ZONEINFO, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (dir < 0)
                return err_set(err, errno, "'%s' cannot be checked: no %s on this host (install the tzdata package, "
                                           "or use UTC)", zone, TZ_ZONEINFO);
        struct open_how how = { .flags = O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK,
                                .resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS };
        _cleanup_close_ int fd = (int)syscall(SYS_openat2, dir, zone, &how, sizeof(how));
        char magic[4];
        if (fd < 0 || read(fd, magic, sizeof(magic)) != (ssize_t)sizeof(magic) || memcmp(magic, "TZif", 4) != 0)
                return err_set(err, 0, "'%s' is not a zone of the tz database (no such zone in %s); use a name "
                                       "such as Europe/Paris or America/New_York, or UTC", zone, TZ_ZONEINFO);
        return 0;
}

/* Does the engine's ICU know the zone by this name?  ICU keeps its own copy
 * of the tz database, which may be older than the host's: a zone it lacks
 * would silently become UTC in the box. */
static int engine_has_zone(const char *zone, struct err **err)
{
        static __typeof__(&ucal_getCanonicalTimeZoneID) canonical;
        if (!canonical) {
                void *h = dlopen(ICU_I18N_SONAME, RTLD_NOW | RTLD_LOCAL);
                if (h)
                        canonical = (__typeof__(canonical))dlsym(h, STR(ucal_getCanonicalTimeZoneID));
                if (!canonical)
                        return err_set(err, 0, "'%s' cannot be checked against the engine's time-zone data (%s: %s); "
                                               "use UTC", zone, ICU_I18N_SONAME, dlerror());
        }
        UChar id[TZ_NAME_MAX], out[TZ_NAME_MAX * 2];
        int32_t n = (int32_t)strlen(zone);
        for (int32_t i = 0; i < n; i++)
                id[i] = (UChar)zone[i]; /* ASCII: checked by is_zone_name */
        UBool is_system = 0;
        UErrorCode st = U_ZERO_ERROR;
        canonical(id, n, out, (int32_t)(sizeof(out) / sizeof(out[0])), &is_system, &st);
        if (U_FAILURE(st) || !is_system)
                return err_set(err, 0, "'%s' is not a zone the engine knows (ICU %s keeps its own copy of the tz "
                                       "database, which can be older than this host's); use another zone with the "
                                       "same rules, or UTC", zone, U_ICU_VERSION);
        return 0;
}

int tz_check(const char *zone, struct err **err)
{
        if (!zone || strcmp(zone, TZ_DEFAULT) == 0)
                return 0;
        if (!is_zone_name(zone)) {
                char shown[TZ_NAME_MAX * 4 + 4]; /* from a command line, or a journal someone sent */
                text_sanitize(zone, TZ_NAME_MAX, '\'', shown, sizeof(shown));
                return err_set(err, 0, "'%s' is not a time-zone name (expected a zone of the tz database such as "
                                       "Europe/Paris or Asia/Tokyo, or UTC)", shown);
        }
        if (host_has_zone(zone, err) < 0 || engine_has_zone(zone, err) < 0)
                return -1;
        return 0;
}
