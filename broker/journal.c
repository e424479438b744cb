/* broker/journal.c — journal writer and reader.  See journal.h. */
#define _GNU_SOURCE
#include "broker/journal.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/budget.h"
#include "common/cleanup.h"

struct journal {
        int fd;
        char *path;
};

int journal_open(const char *path, struct journal **ret, struct err **err)
{
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0600);
        if (fd < 0)
                return err_set(err, errno, "open journal '%s' for writing", path);
        struct journal *j = calloc(1, sizeof(*j));
        if (!j || !(j->path = strdup(path))) {
                free(j);
                close(fd);
                return err_set(err, ENOMEM, "journal");
        }
        j->fd = fd;
        *ret = j;
        return 0;
}

int journal_append(struct journal *j, const cJSON *line, struct err **err)
{
        char *s = cJSON_PrintUnformatted(line);
        if (!s)
                return err_set(err, ENOMEM, "serialise journal line");
        size_t len = strlen(s);
        s = realloc(s, len + 2);
        if (!s)
                return err_set(err, ENOMEM, "serialise journal line");
        s[len++] = '\n';
        /* One write per line (O_APPEND): a crash leaves whole lines only. */
        size_t off = 0;
        while (off < len) {
                ssize_t n = write(j->fd, s + off, len - off);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        int e = errno;
                        free(s);
                        return err_set(err, e, "write journal '%s'", j->path);
                }
                off += (size_t)n;
        }
        free(s);
        return 0;
}

int journal_sync(struct journal *j, struct err **err)
{
        if (fsync(j->fd) < 0)
                return err_set(err, errno, "fsync journal '%s'", j->path);
        return 0;
}

void journal_close(struct journal *j)
{
        if (!j)
                return;
        close(j->fd);
        free(j->path);
        free(j);
}

/* ---- replay ---- */

struct replay {
        cJSON *header;
        cJSON *end;
        cJSON **lines;            /* owned call lines */
        struct replay_entry *entries;
        size_t n, cap;
};

void replay_free(struct replay *r)
{
        if (!r)
                return;
        cJSON_Delete(r->header);
        cJSON_Delete(r->end);
        for (size_t i = 0; i < r->n; i++)
                cJSON_Delete(r->lines[i]);
        free(r->lines);
        free(r->entries);
        free(r);
}

static int add_call(struct replay *r, cJSON *line, size_t lineno, struct err **err)
{
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(line, "id");
        const cJSON *op = cJSON_GetObjectItemCaseSensitive(line, "op");
        const cJSON *ok = cJSON_GetObjectItemCaseSensitive(line, "ok");
        if (!cJSON_IsNumber(id) || !cJSON_IsString(op) || !cJSON_IsBool(ok))
                return err_set(err, 0, "line %zu: call line lacks id, op or ok", lineno);
        if (replay_by_id(r, (int64_t)id->valuedouble))
                return err_set(err, 0, "line %zu: call id %.0f appears twice", lineno, id->valuedouble);
        if (r->n == r->cap) {
                size_t cap = r->cap ? r->cap * 2 : 64;
                cJSON **l = realloc(r->lines, cap * sizeof(*l));
                if (!l)
                        return err_set(err, ENOMEM, "journal");
                r->lines = l;
                struct replay_entry *e = realloc(r->entries, cap * sizeof(*e));
                if (!e)
                        return err_set(err, ENOMEM, "journal");
                r->entries = e;
                r->cap = cap;
        }
        r->lines[r->n] = line;
        r->entries[r->n] = (struct replay_entry){
                .seq = r->n + 1,
                .id = (int64_t)id->valuedouble,
                .op = op->valuestring,
                .args = cJSON_GetObjectItemCaseSensitive(line, "args"),
                .line = line,
        };
        r->n++;
        return 0;
}

int replay_open(const char *path, struct replay **ret, struct err **err)
{
        return replay_open_until(path, NULL, ret, err);
}

int replay_open_until(const char *path, const struct budget *budget, struct replay **ret, struct err **err)
{
        _cleanup_fclose_ FILE *f = fopen(path, "re");
        if (!f)
                return err_set(err, errno, "open journal '%s'", path);
        struct replay *r = calloc(1, sizeof(*r));
        if (!r)
                return err_set(err, ENOMEM, "journal");
        char *buf = NULL;
        size_t bufcap = 0, lineno = 0;
        ssize_t len;
        int rc = 0;
        while ((len = getline(&buf, &bufcap, f)) >= 0) {
                lineno++;
                if (budget_check(budget, "replay: loading the journal", err) < 0) {
                        rc = -1;
                        break;
                }
                if (len == 0 || (len == 1 && buf[0] == '\n'))
                        continue;
                cJSON *line = cJSON_ParseWithLength(buf, (size_t)len);
                const cJSON *type = line ? cJSON_GetObjectItemCaseSensitive(line, "type") : NULL;
                if (!cJSON_IsString(type)) {
                        cJSON_Delete(line);
                        rc = err_set(err, 0, "journal '%s' line %zu: not a journal line (JSON object with \"type\")",
                                     path, lineno);
                        break;
                }
                if (strcmp(type->valuestring, "header") == 0 && lineno == 1) {
                        r->header = line;
                } else if (strcmp(type->valuestring, "call") == 0 && r->header && !r->end) {
                        if (add_call(r, line, lineno, err) < 0) {
                                cJSON_Delete(line);
                                rc = err_wrap(err, "journal '%s'", path);
                                break;
                        }
                } else if (strcmp(type->valuestring, "end") == 0 && r->header && !r->end) {
                        r->end = line;
                } else if (strcmp(type->valuestring, "note") == 0 && r->header) {
                        cJSON_Delete(line);  /* informational (denials, warnings) */
                } else {
                        rc = err_set(err, 0, "journal '%s' line %zu: unexpected \"%s\" line", path, lineno,
                                     type->valuestring);
                        cJSON_Delete(line);
                        break;
                }
        }
        free(buf);
        if (rc == 0 && !r->header)
                rc = err_set(err, 0, "journal '%s' is empty or has no header line", path);
        if (rc < 0) {
                replay_free(r);
                return -1;
        }
        *ret = r;
        return 0;
}

const cJSON *replay_header(const struct replay *r)
{
        return r->header;
}

const cJSON *replay_end(const struct replay *r)
{
        return r->end;
}

size_t replay_count(const struct replay *r)
{
        return r->n;
}

struct replay_entry *replay_by_seq(struct replay *r, size_t idx)
{
        return idx < r->n ? &r->entries[idx] : NULL;
}

struct replay_entry *replay_by_id(struct replay *r, int64_t id)
{
        /* Ids are dense and mostly in order: try the direct slot first. */
        if (id >= 1 && (size_t)id <= r->n && r->entries[id - 1].id == id)
                return &r->entries[id - 1];
        for (size_t i = 0; i < r->n; i++)
                if (r->entries[i].id == id)
                        return &r->entries[i];
        return NULL;
}
