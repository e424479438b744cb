/* effects/fs/ops.c — fs.<op>: the agent's node:fs, an in-memory tree
 * owned by this process (effects/fs/vfs.c).  Nothing here touches the host
 * disk; the tree lives as long as the run and every op is journaled, so a
 * replay reproduces what the agent saw without the tree.  Not gated: like
 * memory, it is the agent's own scratch space. */
#define _GNU_SOURCE
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "effects/fs/vfs.h"
#include "runtime/runtime-internal.h"

int effect_fs(struct broker *b, int64_t id, const cJSON *args, cJSON **ret, struct err **err)
{
        (void)id;
        struct vfs_limits lim = { .max_total_bytes = (size_t)b->lim.max_vfs };
        if (!b->vfs && vfs_new(&lim, &b->vfs, err) < 0)
                return -1;
        if (vfs_call(b->vfs, b->cur_op + 3, args, ret, err) == 0)
                return 0;
        /* The tree is full (--max-vfs, or its node count): node's ENOSPC,
         * so fs code that handles a full disk keeps working, with the
         * limit and the option named. */
        if (err_code(*err) == ENOSPC) {
                char text[256];
                struct vfs_usage u;
                vfs_usage(b->vfs, &u);
                if (u.nodes + VFS_DEFAULT_MAX_DEPTH >= VFS_DEFAULT_MAX_NODES) {
                        snprintf(text, sizeof(text), "VFS limit reached (%zu files and directories)",
                                 VFS_DEFAULT_MAX_NODES);
                } else {
                        broker_limit_text(b, LIMIT_VFS, text, sizeof(text));
                        broker_limit_report(b, LIMIT_VFS, NULL);
                }
                char *msg = strdup(err_msg(*err));
                err_setc(err, ENOSPC, 0, "%s (%s)", msg ? msg : "ENOSPC", text);
                free(msg);
        }
        return -1;
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
