/* effects/memory/memstore.h — the agent memory behind chidori.memory.{get,set,delete,list}.
 *
 * A key/value store persisted in SQLite (dir/memory.sqlite3), one table:
 *   memory(ns TEXT, key TEXT, value TEXT, updated_at INTEGER, bytes INTEGER, PRIMARY KEY(ns, key))
 *   memory_ns(ns TEXT PRIMARY KEY, keys INTEGER, bytes INTEGER)   -- kept by triggers
 * `ns` is chosen by the broker (which agent's memory), `key` by the agent,
 * `value` is JSON text, `updated_at` is Unix time in milliseconds.
 *
 * Limits (each refusal is an error whose message names the limit):
 *   key        1..MEMSTORE_KEY_MAX bytes of valid UTF-8 (no NUL: C strings)
 *   value      valid JSON text of at most MEMSTORE_VALUE_MAX bytes
 *   namespace  at most MEMSTORE_KEYS_MAX keys (overwriting an existing key at
 *              the limit still works; adding a new one does not), and at most
 *              max_bytes of keys and values together (memstore_set_max;
 *              MEMSTORE_DEFAULT_NS_BYTES): a set that would pass it fails with
 *              code MEMSTORE_E_LIMIT and changes nothing.  Each row records its
 *              own size (key bytes + value bytes); a namespace's key count
 *              and bytes are kept in memory_ns by triggers, so both checks
 *              cost one lookup whatever the namespace holds.
 *
 * A struct memstore is not thread-safe: use it from one thread at a time.
 * Several processes may open the same database (WAL mode, 5 s busy timeout).
 */
#ifndef CHIDORI_EFFECTS_MEMORY_MEMSTORE_H
#define CHIDORI_EFFECTS_MEMORY_MEMSTORE_H

#include <stdbool.h>
#include <stddef.h>

struct err;
struct memstore;

#define MEMSTORE_KEY_MAX 1024u
#define MEMSTORE_VALUE_MAX (1024u * 1024u)
#define MEMSTORE_KEYS_MAX 10000u
#define MEMSTORE_DB_NAME "memory.sqlite3"
#define MEMSTORE_DEFAULT_NS_BYTES ((unsigned long long)64 << 20)

/* err->code of a refusal by the bytes-per-namespace limit (other errors
 * carry no code). */
enum { MEMSTORE_E_LIMIT = 1 };

/* Open the store in `dir`, creating `dir` (and missing parents) with mode
 * 0700 and dir/memory.sqlite3 with mode 0600 if absent (an existing database
 * readable by group or others is narrowed to 0600).  Sets WAL journal mode,
 * synchronous=NORMAL and a 5000 ms busy timeout, creates the schema if absent
 * and prepares the statements once.  The database file must not be a
 * symlink.  On success *ret owns the store; free with memstore_close(). */
int memstore_open(const char *dir, struct memstore **ret, struct err **err);

/* Bytes of keys and values one namespace may hold (0 = the default). */
void memstore_set_max(struct memstore *m, unsigned long long max_bytes);

/* Finalize the statements and close the database.  NULL is ok. */
void memstore_close(struct memstore *m);

/* Look up `key` in `ns`.  On success *ret_json is the stored JSON text
 * (malloc'd, caller frees) or NULL when the key is absent. */
int memstore_get(struct memstore *m, const char *ns, const char *key, char **ret_json,
                 struct err **err);

/* Insert or overwrite `key` in `ns` with `value_json` (checked to be JSON). */
int memstore_set(struct memstore *m, const char *ns, const char *key, const char *value_json,
                 struct err **err);

/* Remove `key` from `ns`.  *ret_existed (may be NULL) says whether it was there. */
int memstore_delete(struct memstore *m, const char *ns, const char *key, bool *ret_existed,
                    struct err **err);

/* Remove every key of `ns` in one transaction.  *ret_n (may be NULL) is the
 * number of keys removed. */
int memstore_clear(struct memstore *m, const char *ns, size_t *ret_n, struct err **err);

/* Keys of `ns` that start with `prefix` (NULL or "" = all keys).  The match is
 * a literal byte prefix: '%' and '_' are ordinary characters.  Sorted by key
 * bytes ascending.  *ret_keys is a NULL-terminated malloc'd array of malloc'd
 * strings (never NULL on success, possibly empty); free with
 * memstore_keys_free().  *ret_n (may be NULL) is the number of keys. */
int memstore_list(struct memstore *m, const char *ns, const char *prefix, char ***ret_keys,
                  size_t *ret_n, struct err **err);

/* Free an array from memstore_list().  NULL is ok. */
void memstore_keys_free(char **keys);

/* Another backend behind the same functions (chidori serve --store
 * postgres://...: server/store-pg.c): the checks above (key, value, limits'
 * messages) stay here; the backend reads and writes.  set gets the key's and
 * value's lengths and the namespace's byte limit, and refuses as SQLite's
 * does (MEMSTORE_E_LIMIT, or the key count). */
struct memstore_backend {
        void (*close)(void *h);
        int (*get)(void *h, const char *ns, const char *key, char **ret_json, struct err **err);
        int (*set)(void *h, const char *ns, const char *key, const char *value_json, size_t klen, size_t vlen,
                   unsigned long long max_bytes, struct err **err);
        int (*del)(void *h, const char *ns, const char *key, bool *ret_existed, struct err **err);
        int (*clear)(void *h, const char *ns, size_t *ret_n, struct err **err);
        int (*list)(void *h, const char *ns, const char *prefix, char ***ret_keys, size_t *ret_n,
                    struct err **err);
};
int memstore_open_backend(const struct memstore_backend *be, void *handle, struct memstore **ret,
                          struct err **err);

/* The default directory: $XDG_STATE_HOME/chidori if XDG_STATE_HOME is set to
 * an absolute path, else $HOME/.local/state/chidori.  *ret_dir is malloc'd.
 * Fails when neither variable gives an absolute path. */
int memstore_default_dir(char **ret_dir, struct err **err);
/* The store's folder made as memstore_open makes it (mkdir -p, 0700 for
 * each folder created): the monitor makes it before the broker starts. */
int memstore_make_dir(const char *dir, struct err **err);

#endif
