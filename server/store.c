/* server/store.c — the server's store (store.h): the backend named by the
 * store's URL (store-internal.h), and the calls forwarded to it. */
#define _GNU_SOURCE
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "server/store-internal.h"

void store_session_clear(struct store_session *s)
{
        free(s->id);
        free(s->tenant);
        free(s->agent);
        free(s->status);
        free(s->policy_profile);
        free(s->input);
        free(s->result);
        free(s->error);
        free(s->stats);
        free(s->created_at);
        free(s->updated_at);
        free(s->pending);
        free(s->quotas);
        memset(s, 0, sizeof(*s));
}

static bool has_prefix(const char *s, const char *p)
{
        return strncmp(s, p, strlen(p)) == 0;
}

int store_spec_parse(const char *spec, enum store_kind *ret_kind, struct err **err)
{
        if (spec && has_prefix(spec, "sqlite:") && spec[7]) {
                *ret_kind = STORE_SQLITE;
                return 0;
        }
        if (spec && (has_prefix(spec, "postgres://") || has_prefix(spec, "postgresql://"))) {
                *ret_kind = STORE_POSTGRES;
                return 0;
        }
        char q[80];
        snprintf(q, sizeof(q), "'%.60s%s'", spec ? spec : "", spec && strlen(spec) > 60 ? "..." : "");
        /* Never echo what could hold a password. */
        if (spec && (strchr(spec, '@') || strstr(spec, "password") || strchr(q, '\n')))
                snprintf(q, sizeof(q), "the value given (not shown: it may hold a password)");
        return err_setc(err, STORE_E_USAGE, 0,
                        "%s is not a store (expected sqlite:PATH, postgres://[USER[:PASSWORD]@]HOST[:PORT]/DB"
                        "[?PARAMS] or postgresql://...)",
                        q);
}

void store_redact(const char *url, char *out, size_t n)
{
        /* scheme://USER:PASSWORD@HOST...: the password becomes "***"; so
         * does the value of a password=... parameter (URI or key=value). */
        const char *pw = NULL, *pw_end = NULL, *scheme = strstr(url, "://");
        if (scheme) {
                const char *auth = scheme + 3, *end = auth + strcspn(auth, "/?#");
                const char *at = memrchr(auth, '@', (size_t)(end - auth));
                const char *colon = at ? memchr(auth, ':', (size_t)(at - auth)) : NULL;
                if (colon)
                        pw = colon + 1, pw_end = at;
        }
        size_t o = 0;
        const char *p = url;
        if (n == 0)
                return;
        while (*p && o + 1 < n) {
                bool key = p == url || p[-1] == '?' || p[-1] == '&' || p[-1] == ' ';
                if (p == pw || (key && strncmp(p, "password=", 9) == 0)) {
                        const char *rep = p == pw ? "***" : "password=***";
                        for (const char *r = rep; *r && o + 1 < n; r++)
                                out[o++] = *r;
                        p = p == pw ? pw_end : p + 9 + strcspn(p + 9, "& ");
                        continue;
                }
                out[o++] = *p++;
        }
        out[o] = '\0';
}

/* The URL's user and its first host (percent-decoded), as libpq reads a
 * postgres:// URI: [USER[:PASSWORD]@][HOST[:PORT][,...]][/DB][?K=V&...],
 * a host=, user= or hostaddr= parameter overriding.  The CLI's view, with
 * no libpq linked: libpq itself checks the URL in the broker. */
struct pg_url {
        char user[256], host[4096];
        bool hostaddr;
};

static void pct_decode(const char *s, size_t n, char *out, size_t cap)
{
        size_t o = 0;
        for (size_t i = 0; i < n && o + 1 < cap; i++) {
                unsigned v;
                if (s[i] == '%' && i + 2 < n && sscanf(s + i + 1, "%2x", &v) == 1) {
                        out[o++] = (char)v;
                        i += 2;
                } else {
                        out[o++] = s[i];
                }
        }
        out[o] = '\0';
}

static void pg_url_parse(const char *url, struct pg_url *u)
{
        memset(u, 0, sizeof(*u));
        const char *p = strstr(url, "://");
        p = p ? p + 3 : url;
        size_t alen = strcspn(p, "/?");
        const char *at = memrchr(p, '@', alen);
        if (at) {
                size_t ul = strcspn(p, ":@");
                pct_decode(p, ul < (size_t)(at - p) ? ul : (size_t)(at - p), u->user, sizeof(u->user));
        }
        const char *h = at ? at + 1 : p;
        size_t hl = (size_t)(p + alen - h);
        size_t first = strcspn(h, ",");
        if (first < hl)
                hl = first;
        if (hl && h[0] == '[') {
                const char *close = memchr(h, ']', hl);
                pct_decode(h + 1, close ? (size_t)(close - h - 1) : hl - 1, u->host, sizeof(u->host));
        } else {
                const char *colon = memchr(h, ':', hl);
                pct_decode(h, colon ? (size_t)(colon - h) : hl, u->host, sizeof(u->host));
        }
        const char *q = strchr(p, '?');
        while (q && *q) {
                q++;
                size_t kl = strcspn(q, "&");
                const char *eq = memchr(q, '=', kl);
                if (eq) {
                        size_t nl = (size_t)(eq - q), vl = kl - nl - 1;
                        if (nl == 4 && !strncmp(q, "host", 4))
                                pct_decode(eq + 1, strcspn(eq + 1, "&,") < vl ? strcspn(eq + 1, "&,") : vl, u->host,
                                           sizeof(u->host));
                        else if (nl == 4 && !strncmp(q, "user", 4))
                                pct_decode(eq + 1, vl, u->user, sizeof(u->user));
                        else if (nl == 8 && !strncmp(q, "hostaddr", 8))
                                u->hostaddr = true;
                }
                q += kl;
        }
}

int store_pg_socket_dir(const char *url, char **ret_dir, struct err **err)
{
        struct pg_url u;
        pg_url_parse(url, &u);
        const char *host = u.host[0] ? u.host : getenv("PGHOST");
        if (host && host[0] != '/')
                host = NULL; /* a name or address: TCP */
        else if (!host && (u.hostaddr || getenv("PGHOSTADDR")))
                host = NULL;
        else if (!host)
                host = "/var/run/postgresql"; /* libpq's default: its socket folder */
        *ret_dir = NULL;
        if (host && !(*ret_dir = strndup(host, strcspn(host, ","))))
                return err_set(err, ENOMEM, "store");
        return 0;
}

int store_pg_has_user(const char *url)
{
        struct pg_url u;
        pg_url_parse(url, &u);
        return u.user[0] != '\0';
}

static int (*pg_open)(const char *url, struct store **ret, struct err **err);

void store_register_pg(int (*open)(const char *url, struct store **ret, struct err **err))
{
        pg_open = open;
}

int store_memory_open(struct store *st, struct memstore **ret, struct err **err)
{
        *ret = NULL;
        return st->ops->memory_open ? st->ops->memory_open(st, ret, err) : 0;
}

int store_open(const char *dir, struct store **ret, struct err **err)
{
        return store_open_spec(NULL, dir, ret, err);
}

int store_open_spec(const char *spec, const char *dir, struct store **ret, struct err **err)
{
        if (!spec || !*spec) {
                if (mkdir(dir, 0700) < 0 && errno != EEXIST)
                        return err_set(err, errno, "create the state directory %s", dir);
                char *path = NULL;
                if (asprintf(&path, "%s/%s", dir, STORE_DB_NAME) < 0)
                        return err_set(err, ENOMEM, "state store");
                int rc = store_sqlite_open(path, ret, err);
                free(path);
                return rc;
        }
        enum store_kind kind;
        if (store_spec_parse(spec, &kind, err) < 0)
                return -1;
        if (kind == STORE_SQLITE)
                return store_sqlite_open(spec + 7, ret, err);
        if (!pg_open)
                return err_setc(err, STORE_E_USAGE, 0,
                                "a PostgreSQL store is served by the broker (chidori-broker loads libpq); the "
                                "one-process server (CHIDORI_RUN_BROKER=0) keeps its sessions in SQLite only");
        return pg_open(spec, ret, err);
}

void store_close(struct store *st)
{
        if (st) {
                store_fences_free(st);
                st->ops->close(st);
        }
}

const char *store_path(const struct store *st)
{
        return st->desc;
}

const char *store_kind(const struct store *st)
{
        return st->kind;
}

int store_ready(struct store *st, struct err **err)
{
        return st->ops->ready ? st->ops->ready(st, err) : 0;
}

bool store_recovered(struct store *st)
{
        if (!st->lost || store_ready(st, NULL) < 0)
                return false;
        st->lost = false;
        return true;
}

int store_session_insert(struct store *st, const struct store_session *s, const char *idem_key, struct err **err)
{
        return st->ops->session_insert(st, s, idem_key, err);
}

int store_session_get(struct store *st, const char *id, struct store_session *ret, struct err **err)
{
        return st->ops->session_get(st, id, ret, err);
}

int store_session_update(struct store *st, const char *id, const char *status, const char *result,
                         const char *error, int exit, const char *stats, struct err **err)
{
        return st->ops->session_update(st, id, status, result, error, exit, stats, err);
}

int store_session_delete(struct store *st, const char *id, struct err **err)
{
        return st->ops->session_delete(st, id, err);
}

int store_session_list(struct store *st, const char *tenant, const char *status, const char *after, unsigned limit,
                       int (*fn)(void *arg, const struct store_session *s), void *arg, struct err **err)
{
        return st->ops->session_list(st, tenant, status, after, limit, fn, arg, err);
}

int store_session_ids(struct store *st, const char *status, int (*fn)(void *arg, const char *id), void *arg,
                      struct err **err)
{
        return st->ops->session_ids(st, status, fn, arg, err);
}

int store_session_ids_before(struct store *st, const char *status, const char *before,
                             int (*fn)(void *arg, const char *id), void *arg, struct err **err)
{
        return st->ops->session_ids_before(st, status, before, fn, arg, err);
}

int store_status_counts(struct store *st, void (*fn)(void *arg, const char *status, uint64_t n), void *arg,
                        struct err **err)
{
        return st->ops->status_counts(st, fn, arg, err);
}

int store_idem_get(struct store *st, const char *tenant, const char *key, char **ret_id, struct err **err)
{
        return st->ops->idem_get(st, tenant, key, ret_id, err);
}

int store_journal_append(struct store *st, const char *id, const char *line, bool batch, struct err **err)
{
        return st->ops->journal_append(st, id, line, batch, err);
}

int store_commit(struct store *st, struct err **err)
{
        return st->ops->commit(st, err);
}

void store_hold(struct store *st)
{
        if (st->ops->hold)
                st->ops->hold(st);
}

int store_release(struct store *st, struct err **err)
{
        return st->ops->release ? st->ops->release(st, err) : 0;
}

int store_journal_bytes(struct store *st, const char *id, uint64_t *ret, struct err **err)
{
        return st->ops->journal_bytes(st, id, ret, err);
}

int store_journal_each(struct store *st, const char *id, int (*fn)(void *arg, const char *line, size_t len),
                       void *arg, struct err **err)
{
        return st->ops->journal_each(st, id, fn, arg, err);
}

int store_session_set_pending(struct store *st, const char *id, const char *pending, struct err **err)
{
        return st->ops->session_set_pending(st, id, pending, err);
}

int store_event_append(struct store *st, const char *id, const char *event, const char *data, bool batch,
                       uint64_t *ret_seq, struct err **err)
{
        return st->ops->event_append(st, id, event, data, batch, ret_seq, err);
}

int store_events_each(struct store *st, const char *id, uint64_t after,
                      int (*fn)(void *arg, uint64_t seq, const char *event, const char *data), void *arg,
                      struct err **err)
{
        return st->ops->events_each(st, id, after, fn, arg, err);
}

int store_tenant_usage_get(struct store *st, const char *tenant, int64_t window_start, char **ret, struct err **err)
{
        return st->ops->tenant_usage_get(st, tenant, window_start, ret, err);
}

int store_tenant_usage_put(struct store *st, const char *tenant, int64_t window_start, const char *usage,
                           struct err **err)
{
        return st->ops->tenant_usage_put(st, tenant, window_start, usage, err);
}

/* The row {NAME: {"used": N}} after adding delta {NAME: N} to it (row NULL
 * or not an object: from nothing); malloc'd, NULL: no memory. */
char *store_usage_merge(const char *row, const char *delta)
{
        cJSON *d = cJSON_Parse(delta);
        cJSON *u = row ? cJSON_Parse(row) : NULL;
        if (!cJSON_IsObject(u)) {
                cJSON_Delete(u);
                u = cJSON_CreateObject();
        }
        for (const cJSON *c = d ? d->child : NULL; u && c; c = c->next) {
                if (!cJSON_IsNumber(c) || c->valuedouble < 0)
                        continue;
                cJSON *e = cJSON_GetObjectItemCaseSensitive(u, c->string);
                if (!cJSON_IsObject(e)) {
                        cJSON_DeleteItemFromObjectCaseSensitive(u, c->string);
                        e = cJSON_AddObjectToObject(u, c->string);
                }
                cJSON *n = cJSON_GetObjectItemCaseSensitive(e, "used");
                double sum = (cJSON_IsNumber(n) ? n->valuedouble : 0) + c->valuedouble;
                if (cJSON_IsNumber(n))
                        cJSON_SetNumberValue(n, sum);
                else if (e && !cJSON_AddNumberToObject(e, "used", sum))
                        e = NULL;
                if (!e) {
                        cJSON_Delete(u);
                        u = NULL;
                }
        }
        char *text = u ? cJSON_PrintUnformatted(u) : NULL;
        cJSON_Delete(u);
        cJSON_Delete(d);
        return text;
}

int store_tenant_usage_add(struct store *st, const char *tenant, int64_t window_start, const char *delta, bool batch,
                           char **ret, struct err **err)
{
        if (ret)
                *ret = NULL;
        cJSON *d = cJSON_Parse(delta);
        bool ok = cJSON_IsObject(d);
        cJSON_Delete(d);
        if (!ok)
                return err_set(err, EINVAL, "the tenant's usage: the amount to add is not a JSON object");
        return st->ops->tenant_usage_add(st, tenant, window_start, delta, batch, ret, err);
}

/* ---- leases ---- */

bool store_leases(const struct store *st)
{
        return st->ops->lease_claim != NULL;
}

int store_lease_setup(struct store *st, const char *owner, unsigned lease_ms, struct err **err)
{
        free(st->owner);
        if (!(st->owner = strdup(owner)))
                return err_set(err, ENOMEM, "the replica's id");
        st->lease_ms = lease_ms;
        return 0;
}

const char *store_owner(const struct store *st)
{
        return st->owner;
}

unsigned store_lease_ms(const struct store *st)
{
        return st->lease_ms;
}

struct store_fence *store_fence_of(struct store *st, const char *id)
{
        for (struct store_fence *f = st->fences; f; f = f->next)
                if (strcmp(f->id, id) == 0)
                        return f;
        return NULL;
}

int store_fence(struct store *st, const char *id, uint64_t epoch, struct err **err)
{
        if (!store_leases(st) || !st->owner)
                return 0;
        struct store_fence *f = store_fence_of(st, id);
        if (!f) {
                if (!(f = calloc(1, sizeof(*f))) || !(f->id = strdup(id))) {
                        free(f);
                        return err_set(err, ENOMEM, "session %s: its lease", id);
                }
                f->next = st->fences;
                st->fences = f;
        }
        f->epoch = epoch;
        f->locked_tx = 0;
        return 0;
}

void store_unfence(struct store *st, const char *id)
{
        for (struct store_fence **p = &st->fences; *p; p = &(*p)->next)
                if (strcmp((*p)->id, id) == 0) {
                        struct store_fence *f = *p;
                        *p = f->next;
                        free(f->id);
                        free(f);
                        return;
                }
}

void store_fences_free(struct store *st)
{
        while (st->fences) {
                struct store_fence *f = st->fences;
                st->fences = f->next;
                free(f->id);
                free(f);
        }
        free(st->owner);
        st->owner = NULL;
}

int store_lease_renew(struct store *st, int (*fn)(void *arg, const struct store_lease *l), void *arg,
                      struct err **err)
{
        return st->ops->lease_renew && st->owner ? st->ops->lease_renew(st, fn, arg, err) : 0;
}

int store_lease_claim(struct store *st, bool mine_too, unsigned max,
                      int (*fn)(void *arg, const struct store_lease *l), void *arg, struct err **err)
{
        return st->ops->lease_claim && st->owner && max ? st->ops->lease_claim(st, mine_too, max, fn, arg, err) : 0;
}

int store_session_resume_claim(struct store *st, const char *id, const char *status, const char *pending,
                               const char *new_pending, uint64_t *ret_epoch, struct err **err)
{
        *ret_epoch = 0;
        if (!st->ops->resume_claim || !st->owner)
                return err_set(err, ENOTSUP, "the store has no leases");
        return st->ops->resume_claim(st, id, status, pending, new_pending, ret_epoch, err);
}

int store_cancel_request(struct store *st, const char *id, const char *why, const char *error_json,
                         struct err **err)
{
        if (!st->ops->cancel_request || !st->owner)
                return err_set(err, ENOTSUP, "the store has no leases");
        return st->ops->cancel_request(st, id, why, error_json, err);
}
