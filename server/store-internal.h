/* server/store-internal.h — what a backend of the server's store fills in
 * (store.h stays the one interface the server calls): a table of
 * operations, chosen when the store is opened.  Each backend's handle
 * starts with a struct store.  store-sqlite.c: SQLite under the state
 * directory (the default); store-pg.c: PostgreSQL through libpq. */
#ifndef CHIDORI_SERVER_STORE_INTERNAL_H
#define CHIDORI_SERVER_STORE_INTERNAL_H

#include "server/store.h"

struct memstore;

struct store_ops {
        void (*close)(struct store *st);
        int (*ready)(struct store *st, struct err **err); /* NULL: always ready */
        int (*session_insert)(struct store *st, const struct store_session *s, const char *idem_key,
                              struct err **err);
        int (*session_get)(struct store *st, const char *id, struct store_session *ret, struct err **err);
        int (*session_update)(struct store *st, const char *id, const char *status, const char *result,
                              const char *error, int exit, const char *stats, struct err **err);
        int (*session_delete)(struct store *st, const char *id, struct err **err);
        int (*session_list)(struct store *st, const char *tenant, const char *status, const char *after,
                            unsigned limit, int (*fn)(void *arg, const struct store_session *s), void *arg,
                            struct err **err);
        int (*session_ids)(struct store *st, const char *status, int (*fn)(void *arg, const char *id), void *arg,
                           struct err **err);
        int (*session_ids_before)(struct store *st, const char *status, const char *before,
                                  int (*fn)(void *arg, const char *id), void *arg, struct err **err);
        int (*status_counts)(struct store *st, void (*fn)(void *arg, const char *status, uint64_t n), void *arg,
                             struct err **err);
        int (*idem_get)(struct store *st, const char *tenant, const char *key, char **ret_id, struct err **err);
        int (*journal_append)(struct store *st, const char *id, const char *line, bool batch, struct err **err);
        int (*commit)(struct store *st, struct err **err);
        /* store_hold / store_release: NULL for a backend that commits each
         * write as it comes (PostgreSQL: each write is its own round trip). */
        void (*hold)(struct store *st);
        int (*release)(struct store *st, struct err **err);
        int (*journal_bytes)(struct store *st, const char *id, uint64_t *ret, struct err **err);
        int (*journal_each)(struct store *st, const char *id, int (*fn)(void *arg, const char *line, size_t len),
                            void *arg, struct err **err);
        int (*session_set_pending)(struct store *st, const char *id, const char *pending, struct err **err);
        int (*event_append)(struct store *st, const char *id, const char *event, const char *data, bool batch,
                            uint64_t *ret_seq, struct err **err);
        int (*events_each)(struct store *st, const char *id, uint64_t after,
                           int (*fn)(void *arg, uint64_t seq, const char *event, const char *data), void *arg,
                           struct err **err);
        int (*tenant_usage_get)(struct store *st, const char *tenant, int64_t window_start, char **ret,
                                struct err **err);
        int (*tenant_usage_put)(struct store *st, const char *tenant, int64_t window_start, const char *usage,
                                struct err **err);
        /* store_tenant_usage_add: the row read under a write lock, merged
         * (store_usage_merge), written, in the batch when one is open. */
        int (*tenant_usage_add)(struct store *st, const char *tenant, int64_t window_start, const char *delta,
                                bool batch, char **ret, struct err **err);
        int (*memory_open)(struct store *st, struct memstore **ret, struct err **err); /* NULL: none */
        /* Leases (store.h): NULL for a backend without (SQLite). */
        int (*lease_renew)(struct store *st, int (*fn)(void *arg, const struct store_lease *l), void *arg,
                           struct err **err);
        int (*lease_claim)(struct store *st, bool mine_too, unsigned max,
                           int (*fn)(void *arg, const struct store_lease *l), void *arg, struct err **err);
        int (*resume_claim)(struct store *st, const char *id, const char *status, const char *pending,
                            const char *new_pending, uint64_t *ret_epoch, struct err **err);
        int (*cancel_request)(struct store *st, const char *id, const char *why, const char *error_json,
                              struct err **err);
};

struct store {
        const struct store_ops *ops;
        const char *kind;    /* "sqlite", "postgres" */
        char *desc;          /* the file, or the URL with its password redacted: for messages */
        bool lost;           /* the connection was lost since store_recovered last said so */
        char *owner;         /* store_lease_setup: this replica's id, or NULL */
        unsigned lease_ms;
        struct store_fence *fences; /* store_fence: the sessions run here, with their epochs */
};

struct store_fence {
        struct store_fence *next;
        char *id;
        uint64_t epoch;
        uint64_t locked_tx;  /* the backend's transaction that holds its row (pg: FOR SHARE), 0 none */
};
/* The fence of session id, or NULL (not run here, or no leases). */
struct store_fence *store_fence_of(struct store *st, const char *id);
void store_fences_free(struct store *st);

/* The tenant-usage row {NAME: {"used": N}} after adding delta {NAME: N}
 * (row NULL: from nothing); malloc'd, NULL: no memory. */
char *store_usage_merge(const char *row, const char *delta);

/* SQLite at `path` (the database file); its folder must exist. */
int store_sqlite_open(const char *path, struct store **ret, struct err **err);
/* PostgreSQL at `url` (a libpq URI); migrates the schema.  Only
 * chidori-broker links libpq: it registers this (store_register_pg). */
int store_pg_open(const char *url, struct store **ret, struct err **err);

#endif
