/* sandbox/layers.c — the layer names of --unsafe-disable as a list: parsed
 * from the operator's text, formatted for messages (the CLI's; the monitor
 * gets the mask). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cleanup.h"
#include "sandbox/box-internal.h"

size_t box_layers_format(unsigned mask, char *buf, size_t len)
{
        size_t n = 0;
        if (len)
                buf[0] = '\0';
        for (int l = 0; l < LAYER_MAX; l++)
                if (mask & (1u << l))
                        n += (size_t)snprintf(buf + (n < len ? n : len), n < len ? len - n : 0, "%s%s", n ? "," : "",
                                              box_layer_name((enum box_layer)l));
        return n;
}

int box_parse_layers(const char *list, unsigned *ret_mask, struct err **err)
{
        unsigned mask = 0;
        _cleanup_free_ char *dup = strdup(list);
        if (!dup)
                return err_set(err, ENOMEM, "parse layers");
        for (char *save = NULL, *w = strtok_r(dup, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
                int found = -1;
                for (int i = 0; i < LAYER_MAX; i++)
                        if (strcmp(w, box_layer_name((enum box_layer)i)) == 0)
                                found = i;
                if (found < 0)
                        return err_set(err, 0,
                                       "unknown layer '%s' (expected user, pid, mnt, net, ipc, uts, cgroupns, caps, "
                                       "landlock, seccomp, rlimits or cgroup)",
                                       w);
                mask |= LAYER_BIT(found);
        }
        *ret_mask = mask;
        return 0;
}
