#define _GNU_SOURCE
/* sandbox/cgroup/parse.c — the controllers' names and a size as a person
 * reads it, for messages; parsing the operator's units is units.c. */
#include <ctype.h>
#include <stdbool.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "sandbox/cgroup/cgroup-internal.h"

const char *cgroup_ctl_name(enum cgroup_ctl c)
{
        static const char *const names[CGROUP_CTL_MAX] = {
                [CGROUP_CTL_MEMORY] = "memory",
                [CGROUP_CTL_PIDS] = "pids",
                [CGROUP_CTL_CPU] = "cpu",
        };
        return (unsigned)c < CGROUP_CTL_MAX ? names[c] : "?";
}

void cgroup_format_size(uint64_t bytes, char *buf, size_t len)
{
        static const char units[] = "TGMK";
        static const int shifts[] = { 40, 30, 20, 10 };
        for (size_t i = 0; i < 4; i++) {
                uint64_t unit = (uint64_t)1 << shifts[i];
                if (bytes >= unit && bytes % unit == 0) {
                        snprintf(buf, len, "%" PRIu64 "%c", bytes / unit, units[i]);
                        return;
                }
        }
        snprintf(buf, len, "%" PRIu64, bytes);
}
