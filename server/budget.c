/* server/budget.c — the tenants' budgets (docs/serve.md, "Quotas"): each
 * tenant's use over the current window (--quotas window_s, from the unix
 * epoch: windows start at multiples of it), the parent of every session's
 * quota (runtime/quota.h), read from the store when first needed.  What
 * is used is added to the store's row with each journal line a session of
 * the tenant writes, in that line's transaction (an effect's intent is
 * committed before it is performed: its use with it), when a run ends and
 * when the server stops, so a restart — a kill -9 too — goes on from what
 * was used.  An add, never an overwrite: replicas sharing the store each
 * add their part. */
#define _GNU_SOURCE
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "server/quotas.h"
#include "server/server-internal.h"
#include "server/store.h"

static int64_t window_now(const struct server *srv)
{
        uint64_t w = srv->run.quotas ? srv->run.quotas->window_s : QUOTAS_DEFAULT_WINDOW_S;
        int64_t now = (int64_t)time(NULL);
        return now - now % (int64_t)w;
}

static void load(struct server *srv, struct tenant_budget *tb)
{
        memset(tb->q.used, 0, sizeof(tb->q.used));
        char *text = NULL;
        struct err *err = NULL;
        int rc = srv->store ? store_tenant_usage_get(srv->store, tb->tenant, tb->window, &text, &err) : 1;
        if (rc < 0) {
                fprintf(stderr, "chidori: serve: tenant %s: %s\n", tb->tenant, err_msg(err));
                err_free(err);
        }
        if (rc == 0) {
                cJSON *u = cJSON_Parse(text);
                quota_usage_load(&tb->q, u);
                cJSON_Delete(u);
        }
        free(text);
        memcpy(tb->saved, tb->q.used, sizeof(tb->saved));
}

struct tenant_budget *budget_of(struct server *srv, const char *tenant)
{
        int64_t w = window_now(srv);
        struct tenant_budget *tb = srv->budgets;
        while (tb && strcmp(tb->tenant, tenant) != 0)
                tb = tb->next;
        if (!tb) {
                tb = calloc(1, sizeof(*tb));
                if (!tb || !(tb->tenant = strdup(tenant))) {
                        free(tb);
                        return NULL;
                }
                tb->q.scope = "tenant";
                if (srv->run.quotas)
                        tb->q.lim = quotas_tenant(srv->run.quotas, tenant)->lim;
                tb->window = w;
                load(srv, tb);
                tb->next = srv->budgets;
                srv->budgets = tb;
        } else if (tb->window != w) {
                /* A new window: the last one's use is kept (written), this one's read. */
                budget_save(srv, tb);
                tb->window = w;
                load(srv, tb);
        }
        return tb;
}

void budget_flush(struct server *srv, struct tenant_budget *tb, bool batch)
{
        if (!srv->store || !tb)
                return;
        cJSON *d = cJSON_CreateObject();
        bool any = false;
        for (int k = 0; d && k < QUOTA_KIND_MAX; k++)
                if (tb->q.used[k] > tb->saved[k]) {
                        cJSON_AddNumberToObject(d, quota_name(k), (double)(tb->q.used[k] - tb->saved[k]));
                        any = true;
                }
        char *text = d && any ? cJSON_PrintUnformatted(d) : NULL;
        cJSON_Delete(d);
        if (!any)
                return;
        char *now = NULL;
        struct err *err = NULL;
        if (!text || store_tenant_usage_add(srv->store, tb->tenant, tb->window, text, batch, &now, &err) < 0) {
                /* Kept: added with the next flush. */
                fprintf(stderr, "chidori: serve: tenant %s: its usage cannot be recorded: %s\n", tb->tenant,
                        text ? err_msg(err) : "out of memory");
                err_free(err);
                free(text);
                return;
        }
        free(text);
        /* The row now: this server's use and what others sharing the store added. */
        cJSON *u = cJSON_Parse(now);
        free(now);
        quota_usage_load(&tb->q, u);
        cJSON_Delete(u);
        memcpy(tb->saved, tb->q.used, sizeof(tb->saved));
}

void budget_save(struct server *srv, struct tenant_budget *tb)
{
        budget_flush(srv, tb, false);
}

void budgets_free_all(struct server *srv)
{
        while (srv->budgets) {
                struct tenant_budget *tb = srv->budgets;
                srv->budgets = tb->next;
                budget_save(srv, tb);
                free(tb->tenant);
                free(tb);
        }
}

unsigned budget_live_sessions(const struct server *srv, const char *tenant)
{
        unsigned n = 0;
        for (const struct live *l = srv->live; l; l = l->next)
                if (!l->ended && strcmp(l->tenant, tenant) == 0)
                        n++;
        return n;
}

bool budget_may_start(const struct server *srv, const char *tenant)
{
        unsigned max = srv->run.quotas ? quotas_tenant(srv->run.quotas, tenant)->concurrent : 0;
        unsigned n = 0;
        for (const struct live *l = srv->live; max && l; l = l->next)
                if (!l->ended && !l->queued && strcmp(l->tenant, tenant) == 0)
                        n++;
        return !max || n < max;
}
