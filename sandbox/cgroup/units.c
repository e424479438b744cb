/* sandbox/cgroup/units.c — the knobs as users write them: sizes (--memory
 * 512M) and CPU fractions (--cpus 1.5), for the CLI's and the server's
 * options (the monitor gets numbers).  Hand-written (no strtoull/strtod): no
 * locale, no sign, no whitespace, no exponent, and overflow is an error
 * rather than a saturated value. */
#define _GNU_SOURCE
#include <ctype.h>
#include <stdbool.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "sandbox/cgroup/cgroup-internal.h"

#define CPUS_MAX 1024

static int shift_of(char c)
{
        switch (c) {
        case 'k': case 'K': return 10;
        case 'm': case 'M': return 20;
        case 'g': case 'G': return 30;
        case 't': case 'T': return 40;
        default: return -1;
        }
}

int cgroup_parse_size(const char *s, uint64_t *ret_bytes, struct err **err)
{
        if (!s || !*s)
                return err_setc(err, CGROUP_E_INVALID, 0, "empty size");
        const char *p = s;
        uint64_t v = 0;
        if (!isdigit((unsigned char)*p))
                return err_setc(err, CGROUP_E_INVALID, 0,
                                "bad size '%s' (expected digits, then K, M, G or T)", s);
        for (; isdigit((unsigned char)*p); p++) {
                unsigned d = (unsigned)(*p - '0');
                if (v > (UINT64_MAX - d) / 10)
                        return err_setc(err, CGROUP_E_INVALID, ERANGE, "size '%s'", s);
                v = v * 10 + d;
        }
        int shift = 0;
        if (*p) {
                shift = shift_of(*p);
                if (shift < 0)
                        return err_setc(err, CGROUP_E_INVALID, 0,
                                        "bad size suffix in '%s' (use K, M, G or T)", s);
                p++;
                /* optional "i", "iB" or "B", any case */
                if (*p == 'i' || *p == 'I')
                        p++;
                if (*p == 'b' || *p == 'B')
                        p++;
                if (*p)
                        return err_setc(err, CGROUP_E_INVALID, 0,
                                        "bad size suffix in '%s' (use K, M, G or T)", s);
        }
        if (v == 0)
                return err_setc(err, CGROUP_E_INVALID, 0, "size '%s' must be above 0", s);
        if (v > ((uint64_t)INT64_MAX >> shift))
                return err_setc(err, CGROUP_E_INVALID, ERANGE, "size '%s'", s);
        *ret_bytes = v << shift;
        return 0;
}

int cgroup_parse_cpus(const char *s, double *ret_cpus, struct err **err)
{
        if (!s || !*s)
                return err_setc(err, CGROUP_E_INVALID, 0, "empty CPU count");
        const char *p = s;
        uint64_t whole = 0, frac = 0, scale = 1;
        int ndig = 0, nfrac = 0;
        for (; isdigit((unsigned char)*p); p++, ndig++) {
                whole = whole * 10 + (unsigned)(*p - '0');
                if (whole > CPUS_MAX)
                        return err_setc(err, CGROUP_E_INVALID, 0,
                                        "CPU count '%s' above %d", s, CPUS_MAX);
        }
        bool dot = *p == '.';
        if (dot) {
                p++;
                for (; isdigit((unsigned char)*p); p++, nfrac++) {
                        if (nfrac == 6)
                                return err_setc(err, CGROUP_E_INVALID, 0,
                                                "CPU count '%s' has more than 6 decimals", s);
                        frac = frac * 10 + (unsigned)(*p - '0');
                        scale *= 10;
                }
        }
        /* digits, optionally '.' and more digits: "2", "0.5"; not ".5", "1.", "1e3" */
        if (*p || ndig == 0 || (dot && nfrac == 0))
                return err_setc(err, CGROUP_E_INVALID, 0,
                                "bad CPU count '%s' (expected a decimal such as 0.5 or 2)", s);
        double v = (double)whole + (double)frac / (double)scale;
        if (whole == 0 && frac == 0)
                return err_setc(err, CGROUP_E_INVALID, 0, "CPU count '%s' must be above 0", s);
        if (v > CPUS_MAX)
                return err_setc(err, CGROUP_E_INVALID, 0, "CPU count '%s' above %d", s, CPUS_MAX);
        *ret_cpus = v;
        return 0;
}
