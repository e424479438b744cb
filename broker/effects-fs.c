/* broker/effects-fs.c — fs.<op>: the agent's node:fs, an in-memory tree
 * owned by this process (broker/vfs.c).  Nothing here touches the host
 * disk; the tree lives as long as the run and every op is journaled, so a
 * replay reproduces what the agent saw without the tree.  Not gated: like
 * memory, it is the agent's own scratch space. */
#define _GNU_SOURCE
#include <cjson/cJSON.h>
#include <string.h>

#include "broker/broker-internal.h"
#include "broker/vfs.h"

int effect_fs(struct broker *b, int64_t id, const cJSON *args, cJSON **ret, struct err **err)
{
        (void)id;
        if (!b->vfs && vfs_new(NULL, &b->vfs, err) < 0)
                return -1;
        return vfs_call(b->vfs, b->cur_op + 3, args, ret, err);
}

/* "ENOENT" for node's error.code. */
const char *effect_fs_code(int code)
{
        const char *n = vfs_error_name(code);
        return n[0] ? n : NULL;
}

void broker_fs_free(struct broker *b)
{
        vfs_free(b->vfs);
        b->vfs = NULL;
}
