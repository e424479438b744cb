/* effects/workspace/ops.c — workspace.{list,read,write,delete,manifest}:
 * the directory given with --workspace, through effects/workspace/workspace.c (which
 * owns path checking and openat2 resolution).  The policy gate
 * (workspace:<action>) has already passed when these run.
 *
 * Frames (docs/workspace.md):
 *   workspace.list     {path?}                          -> [{name, type, size}]
 *   workspace.read     {path}                           -> {size, data_base64}
 *   workspace.write    {path, data_base64, create_dirs?} -> null
 *   workspace.delete   {path}                           -> bool (existed)
 *   workspace.manifest {}                               -> [{path, size, sha256}]
 * Errors carry code "ENOWORKSPACE" or the module's reason ("not_found",
 * "outside", "too_big", "not_file", "invalid", "io").
 */
#define _GNU_SOURCE
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/cleanup.h"
#include "common/util.h"
#include "effects/workspace/workspace.h"
#include "runtime/runtime-internal.h"

static int need_ws(struct broker *b, const char *op, struct err **err)
{
        if (!b->cfg->workspace)
                return err_setc(err, WORKSPACE_UNCONFIGURED, 0, "%s: no workspace configured (start chidori with --workspace DIR)", op);
        return 0;
}

int effect_workspace_list(struct broker *b, int64_t id, const cJSON *args, cJSON **ret, struct err **err)
{
        (void)id;
        const cJSON *p = cJSON_GetObjectItemCaseSensitive(args, "path");
        if (p && !cJSON_IsString(p) && !cJSON_IsNull(p))
                return err_set(err, 0, "workspace.list: 'path' must be a string");
        if (need_ws(b, "workspace.list", err) < 0)
                return -1;
        return workspace_list(b->cfg->workspace, cJSON_IsString(p) ? p->valuestring : "", ret, err);
}

int effect_workspace_read(struct broker *b, int64_t id, const cJSON *args, cJSON **ret, struct err **err)
{
        (void)id;
        const char *path = NULL;
        if (broker_need_str(args, "workspace.read", "path", &path, err) < 0 ||
            need_ws(b, "workspace.read", err) < 0)
                return -1;
        _cleanup_free_ char *data = NULL;
        size_t len = 0;
        if (workspace_read(b->cfg->workspace, path, &data, &len, err) < 0)
                return -1;
        _cleanup_free_ char *b64 = base64_encode((const unsigned char *)data, len);
        cJSON *o = cJSON_CreateObject();
        if (!b64 || !o || !cJSON_AddNumberToObject(o, "size", (double)len) ||
            !cJSON_AddStringToObject(o, "data_base64", b64)) {
                cJSON_Delete(o);
                return err_set(err, ENOMEM, "workspace.read");
        }
        *ret = o;
        return 0;
}

int effect_workspace_write(struct broker *b, int64_t id, const cJSON *args, cJSON **ret, struct err **err)
{
        (void)id;
        const char *path = NULL, *data = NULL;
        if (broker_need_str(args, "workspace.write", "path", &path, err) < 0 ||
            broker_need_str(args, "workspace.write", "data_base64", &data, err) < 0)
                return -1;
        const cJSON *cd = cJSON_GetObjectItemCaseSensitive(args, "create_dirs");
        if (cd && !cJSON_IsBool(cd))
                return err_set(err, 0, "workspace.write: 'create_dirs' must be a boolean");
        if (need_ws(b, "workspace.write", err) < 0)
                return -1;
        _cleanup_free_ unsigned char *bytes = NULL;
        size_t len = 0;
        if (base64_decode(data, strlen(data), &bytes, &len) < 0)
                return err_set(err, 0, "workspace.write: 'data_base64' is not valid base64");
        /* Bytes written per run (--max-workspace-write): the host's disk is
         * not the box's to fill.  Checked before anything is touched. */
        if (len > b->lim.max_workspace_write - b->ws_written)
                return broker_limit_fail(b, LIMIT_WORKSPACE_WRITE, err);
        if (broker_quota_take(b, QUOTA_WORKSPACE_BYTES, len, err) < 0)
                return -1;
        if (workspace_write(b->cfg->workspace, path, bytes, len, cd ? cJSON_IsTrue(cd) : true, err) < 0)
                return -1;
        b->ws_written += len;
        *ret = cJSON_CreateNull();
        return 0;
}

int effect_workspace_delete(struct broker *b, int64_t id, const cJSON *args, cJSON **ret, struct err **err)
{
        (void)id;
        const char *path = NULL;
        bool existed = false;
        if (broker_need_str(args, "workspace.delete", "path", &path, err) < 0 ||
            need_ws(b, "workspace.delete", err) < 0)
                return -1;
        if (workspace_delete(b->cfg->workspace, path, &existed, err) < 0)
                return -1;
        *ret = cJSON_CreateBool(existed);
        return 0;
}

int effect_workspace_manifest(struct broker *b, int64_t id, const cJSON *args, cJSON **ret, struct err **err)
{
        (void)id, (void)args;
        if (need_ws(b, "workspace.manifest", err) < 0)
                return -1;
        return workspace_manifest_until(b->cfg->workspace, &b->budget, ret, err);
}
