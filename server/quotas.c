/* server/quotas.c — the operator's quotas file (quotas.h). */
#define _GNU_SOURCE
#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "server/quotas.h"

#include "proto/json.h"

#define CONCURRENT "concurrent_sessions"

static int tenant_entry(const cJSON *o, const char *where, struct quotas_tenant *t, struct err **err)
{
        char msg[512];
        if (!quota_limits_parse(o, where, CONCURRENT, &t->lim, msg, sizeof(msg)))
                return err_set(err, 0, "%s", msg);
        const cJSON *c = cJSON_GetObjectItemCaseSensitive(o, CONCURRENT);
        if (c) {
                if (!cJSON_IsNumber(c) || c->valuedouble < 1 || c->valuedouble > 100000 ||
                    c->valuedouble != (double)(unsigned)c->valuedouble)
                        return err_set(err, 0, "%s: '" CONCURRENT "' must be an integer from 1 to 100000", where);
                t->concurrent = (unsigned)c->valuedouble;
        }
        return 0;
}

int quotas_parse(const char *text, size_t len, const char *where, struct quotas **ret, struct err **err)
{
        cJSON *doc;
        char jmsg[256];
        int jr = json_file_parse(text, len, QUOTAS_MAX_FILE, &doc, jmsg, sizeof(jmsg));
        if (jr)
                return err_set(err, jr == JSON_FILE_NOMEM ? ENOMEM : 0, "%s: %s", where, jmsg);
        struct quotas *q = calloc(1, sizeof(*q));
        int rc = -1;
        char w[600];
        if (!q) {
                err_set(err, ENOMEM, "%s", where);
                goto out;
        }
        q->window_s = QUOTAS_DEFAULT_WINDOW_S;
        if (!cJSON_IsObject(doc)) {
                err_set(err, 0, "%s: expected an object {\"session\", \"tenant\", \"tenants\", \"window_s\"}", where);
                goto out;
        }
        for (const cJSON *c = doc->child; c; c = c->next) {
                if (strcmp(c->string, "session") == 0) {
                        char msg[512];
                        snprintf(w, sizeof(w), "%s: session", where);
                        if (!quota_limits_parse(c, w, NULL, &q->session, msg, sizeof(msg))) {
                                err_set(err, 0, "%s", msg);
                                goto out;
                        }
                } else if (strcmp(c->string, "tenant") == 0) {
                        snprintf(w, sizeof(w), "%s: tenant", where);
                        if (tenant_entry(c, w, &q->all, err) < 0)
                                goto out;
                } else if (strcmp(c->string, "window_s") == 0) {
                        if (!cJSON_IsNumber(c) || c->valuedouble < 1 || c->valuedouble > 31622400.0 ||
                            c->valuedouble != (double)(uint64_t)c->valuedouble) {
                                err_set(err, 0, "%s: 'window_s' must be an integer number of seconds from 1 to "
                                                "31622400 (366 days)", where);
                                goto out;
                        }
                        q->window_s = (uint64_t)c->valuedouble;
                } else if (strcmp(c->string, "tenants") != 0) {
                        err_set(err, 0, "%s: unknown field '%.64s' (expected session, tenant, tenants, window_s)", where,
                                c->string);
                        goto out;
                }
        }
        const cJSON *ts = cJSON_GetObjectItemCaseSensitive(doc, "tenants");
        if (ts) {
                int n = cJSON_GetArraySize(ts);
                if (!cJSON_IsObject(ts) || n > QUOTAS_MAX_TENANTS) {
                        err_set(err, 0, "%s: 'tenants' must be an object {\"TENANT\": {...}} of at most %d tenants",
                                where, QUOTAS_MAX_TENANTS);
                        goto out;
                }
                q->tenants = calloc((size_t)n + 1, sizeof(*q->tenants));
                if (!q->tenants) {
                        err_set(err, ENOMEM, "%s", where);
                        goto out;
                }
                for (const cJSON *c = ts->child; c; c = c->next) {
                        struct quotas_tenant *t = &q->tenants[q->ntenants];
                        *t = q->all;
                        if (!(t->name = strdup(c->string))) {
                                err_set(err, ENOMEM, "%s", where);
                                goto out;
                        }
                        q->ntenants++;
                        snprintf(w, sizeof(w), "%s: tenants.%.64s", where, c->string);
                        if (tenant_entry(c, w, t, err) < 0)
                                goto out;
                }
        }
        *ret = q;
        q = NULL;
        rc = 0;
out:
        quotas_free(q);
        cJSON_Delete(doc);
        return rc;
}

int quotas_load_file(const char *path, struct quotas **ret, struct err **err)
{
        int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return err_set(err, errno, "cannot open %s", path);
        int rc = quotas_load_fd(fd, path, ret, err);
        close(fd);
        return rc;
}

int quotas_load_fd(int fd, const char *path, struct quotas **ret, struct err **err)
{
        char *buf = malloc(QUOTAS_MAX_FILE + 1);
        size_t n = 0;
        ssize_t r = 0;
        while (buf && n <= QUOTAS_MAX_FILE && (r = read(fd, buf + n, QUOTAS_MAX_FILE + 1 - n)) > 0)
                n += (size_t)r;
        int e = errno;
        if (!buf)
                return err_set(err, ENOMEM, "%s", path);
        if (r < 0) {
                free(buf);
                return err_set(err, e, "cannot read %s", path);
        }
        if (n > QUOTAS_MAX_FILE) {
                free(buf);
                return err_set(err, 0, "%s: larger than %u bytes", path, QUOTAS_MAX_FILE);
        }
        int rc = quotas_parse(buf, n, path, ret, err);
        free(buf);
        return rc;
}

void quotas_free(struct quotas *q)
{
        if (!q)
                return;
        for (size_t i = 0; i < q->ntenants; i++)
                free(q->tenants[i].name);
        free(q->tenants);
        free(q);
}

const struct quotas_tenant *quotas_tenant(const struct quotas *q, const char *tenant)
{
        for (size_t i = 0; i < q->ntenants; i++)
                if (strcmp(q->tenants[i].name, tenant) == 0)
                        return &q->tenants[i];
        return &q->all;
}
