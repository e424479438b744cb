/* effects/memory/ops.c — the memory.* effects (get, set, delete, list): a
 * per-agent namespace in the parent's SQLite store (effects/memory/memstore.c).
 * Values are carried as the worker wrote them: stored and handed back as JSON
 * text, never reprinted.
 */
#define _GNU_SOURCE
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/cleanup.h"
#include "effects/memory/memstore.h"
#include "proto/json.h"
#include "runtime/runtime-internal.h"

/* The family's attach hook: the store's cap per namespace (--max-memory-store). */
void broker_memory_attach(struct broker *b)
{
        if (b->cfg->mem)
                memstore_set_max(b->cfg->mem, b->lim.max_memory_store);
}

static int need_mem(struct broker *b, const char *op, struct err **err)
{
        if (!b->cfg->mem)
                return err_set(err, 0, "%s: the memory store is not open", op);
        return 0;
}

/* memory.*: a per-agent namespace in the parent's SQLite store.  Safe: the
 * namespace is chosen by the parent, keys and sizes are bounded by memstore. */
int effect_memory_get(struct broker *b, int64_t id, const cJSON *args, cJSON **ret, struct err **err)
{
        (void)id;
        const char *key = NULL;
        if (broker_need_str(args, "memory.get", "key", &key, err) < 0 || need_mem(b, "memory.get", err) < 0)
                return -1;
        _cleanup_free_ char *json = NULL;
        if (memstore_get(b->cfg->mem, b->cfg->mem_ns, key, &json, err) < 0)
                return -1;
        if (!json) {
                *ret = cJSON_CreateNull();
                return 0;
        }
        /* The text memory.set stored, handed back as it is. */
        struct json_error je;
        if (json_validate(json, strlen(json), NULL, &je, NULL) < 0)
                return err_set(err, 0, "memory.get: stored value for '%s' is not valid JSON (%s at byte %zu)", key,
                               je.what, je.offset);
        *ret = json_cjson_raw((struct json_span){ json, strlen(json) });
        return *ret ? 0 : err_set(err, ENOMEM, "memory.get");
}

int effect_memory_set(struct broker *b, int64_t id, const cJSON *args, cJSON **ret, struct err **err)
{
        (void)id;
        const char *key = NULL;
        if (broker_need_str(args, "memory.set", "key", &key, err) < 0 || need_mem(b, "memory.set", err) < 0)
                return -1;
        /* The value's text as the worker wrote it: stored, never reprinted. */
        struct json_span raw;
        _cleanup_free_ char *json = broker_arg_raw(b, "value", &raw) == 1 ? json_compact(raw, NULL) : strdup("null");
        if (!json)
                return err_set(err, ENOMEM, "memory.set");
        if (broker_quota_take(b, QUOTA_MEMORY_BYTES, strlen(key) + strlen(json), err) < 0)
                return -1;
        if (memstore_set(b->cfg->mem, b->cfg->mem_ns, key, json, err) < 0) {
                if (err_code(*err) == MEMSTORE_E_LIMIT) {
                        err_free(*err);
                        *err = NULL;
                        return broker_limit_fail(b, LIMIT_MEMORY_STORE, err);
                }
                return -1;
        }
        *ret = cJSON_CreateNull();
        return 0;
}

int effect_memory_delete(struct broker *b, int64_t id, const cJSON *args, cJSON **ret, struct err **err)
{
        (void)id;
        const char *key = NULL;
        bool existed = false;
        if (broker_need_str(args, "memory.delete", "key", &key, err) < 0 ||
            need_mem(b, "memory.delete", err) < 0)
                return -1;
        if (memstore_delete(b->cfg->mem, b->cfg->mem_ns, key, &existed, err) < 0)
                return -1;
        *ret = cJSON_CreateBool(existed);
        return 0;
}

int effect_memory_list(struct broker *b, int64_t id, const cJSON *args, cJSON **ret, struct err **err)
{
        (void)id;
        const char *prefix = broker_arg_str(args, "prefix");
        if (need_mem(b, "memory.list", err) < 0)
                return -1;
        char **keys = NULL;
        size_t n = 0;
        if (memstore_list(b->cfg->mem, b->cfg->mem_ns, prefix ? prefix : "", &keys, &n, err) < 0)
                return -1;
        cJSON *arr = cJSON_CreateArray();
        for (size_t i = 0; arr && i < n; i++)
                cJSON_AddItemToArray(arr, cJSON_CreateString(keys[i]));
        memstore_keys_free(keys);
        if (!arr)
                return err_set(err, ENOMEM, "memory.list");
        *ret = arr;
        return 0;
}
