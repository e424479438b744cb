/* server/budget.c — the tenants' budgets (docs/serve.md, "Quotas"): each
 * tenant's use over the current window (--quotas window_s, from the unix
 * epoch: windows start at multiples of it), the parent of every session's
 * quota (runtime/quota.h), read from the store when first needed and
 * written back when a run ends and when the server stops, so a restart
 * goes on from what was used. */
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

void budget_save(struct server *srv, struct tenant_budget *tb)
{
        if (!srv->store || !tb)
                return;
        cJSON *u = quota_usage_json(&tb->q);
        char *text = u ? cJSON_PrintUnformatted(u) : NULL;
        cJSON_Delete(u);
        struct err *err = NULL;
        if (!text || store_tenant_usage_put(srv->store, tb->tenant, tb->window, text, &err) < 0)
                fprintf(stderr, "chidori: serve: tenant %s: its usage cannot be recorded: %s\n", tb->tenant,
                        text ? err_msg(err) : "out of memory");
        err_free(err);
        free(text);
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
