/* runtime/journal.c — journal writer and reader.  See journal.h. */
#define _GNU_SOURCE
#include "runtime/journal.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/budget.h"
#include "common/cleanup.h"
#include "common/util.h"
#include "proto/json.h"
#include "proto/proto.h"

struct journal {
        int fd;
        char *path;
        uint64_t size;   /* bytes written */
        off_t base;      /* the file's size when opened (a regular file), -1 otherwise */
        uint64_t max;    /* 0 = no cap */
        bool full;
        bool intents;    /* write "start" lines */
};

/* Every journal starts with the header line journal_header() writes. */
#define JOURNAL_HEADER_PREFIX "{\"type\":\"header\""

int journal_check_replaceable(const char *path, struct err **err)
{
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        if (fd < 0) {
                if (errno == ENOENT)
                        return 0;
                return err_set(err, errno, "--journal '%s' exists but cannot be read to check that it is a journal",
                               path);
        }
        struct stat st;
        if (fstat(fd, &st) < 0)
                return err_set(err, errno, "--journal '%s'", path);
        if (!S_ISREG(st.st_mode) || st.st_size == 0)
                return 0; /* a pipe, a device or an empty file: nothing to lose */
        char head[sizeof(JOURNAL_HEADER_PREFIX)];
        ssize_t n = pread(fd, head, sizeof(head) - 1, 0);
        if (n == (ssize_t)sizeof(head) - 1 && memcmp(head, JOURNAL_HEADER_PREFIX, sizeof(head) - 1) == 0)
                return 0;
        return err_setc(err, JOURNAL_E_NOT_JOURNAL, 0,
                        "--journal '%s' exists and is not a chidori journal (its first line is not a journal "
                        "header); refusing to overwrite it: choose another file, or add --force to replace it",
                        path);
}

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
        j->base = 0;
        *ret = j;
        return 0;
}

int journal_open_fd(int fd, const char *name, struct journal **ret, struct err **err)
{
        struct journal *j = calloc(1, sizeof(*j));
        if (!j || !(j->path = strdup(name))) {
                free(j);
                close(fd);
                return err_set(err, ENOMEM, "journal");
        }
        j->fd = fd;
        struct stat st;
        j->base = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) ? st.st_size : -1;
        *ret = j;
        return 0;
}

void journal_set_limit(struct journal *j, uint64_t max)
{
        j->max = max;
}

bool journal_is_full(const struct journal *j)
{
        return j->full;
}

uint64_t journal_size(const struct journal *j)
{
        return j->size;
}

/* What failed, where, what the file still holds and what to do. */
static int journal_write_failed(const struct journal *j, int e, struct err **err)
{
        const char *todo = e == ENOSPC || e == EDQUOT ? "free space on its filesystem, or give another --journal"
                           : e == EROFS || e == EACCES || e == EPERM
                                   ? "make it writable, or give another --journal"
                                   : "check its filesystem, or give another --journal";
        err_set(err, 0,
                "write journal '%s': %s; the run was stopped, the journal keeps every line before this one "
                "(chidori replay reads it up to there); %s",
                j->path, strerror(e), todo);
        if (err && *err)
                (*err)->errnum = e;
        return -1;
}

static int append(struct journal *j, const cJSON *line, bool final, struct err **err)
{
        if (j->full && !final)
                return err_setc(err, JOURNAL_E_LIMIT, 0, "journal '%s' is full", j->path);
        char *s = cJSON_PrintUnformatted(line);
        if (!s)
                return err_set(err, ENOMEM, "serialise journal line");
        size_t len = strlen(s);
        if (!final && j->max && (len + 1 > j->max || j->size > j->max - (len + 1))) {
                free(s);
                j->full = true;
                return err_setc(err, JOURNAL_E_LIMIT, 0, "journal '%s': a line of %zu bytes would pass the limit",
                                j->path, len + 1);
        }
        char *grown = realloc(s, len + 2);
        if (!grown) {
                free(s);
                return err_set(err, ENOMEM, "serialise journal line");
        }
        s = grown;
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
                        /* A disk that filled mid-line (ENOSPC, EDQUOT, EIO): cut the
                         * part written, so the file keeps whole lines only and
                         * replays up to the last one (docs/faults.md). */
                        if (off > 0 && !(j->base >= 0 && ftruncate(j->fd, j->base + (off_t)j->size) == 0))
                                j->size += off;
                        return journal_write_failed(j, e, err);
                }
                off += (size_t)n;
        }
        j->size += len;
        free(s);
        return 0;
}

int journal_append(struct journal *j, const cJSON *line, struct err **err)
{
        return append(j, line, false, err);
}

int journal_append_final(struct journal *j, const cJSON *line, struct err **err)
{
        return append(j, line, true, err);
}

int journal_sync(struct journal *j, struct err **err)
{
        if (fsync(j->fd) < 0)
                return err_set(err, errno, "fsync journal '%s'", j->path);
        return 0;
}

void journal_set_intents(struct journal *j, bool on)
{
        j->intents = on;
}

/* ---- the file behind struct journal_ops ---- */

static int file_header(void *j, const cJSON *line, struct err **err)
{
        /* A huge --input may pass --max-journal: then the first call stops. */
        return append(j, line, true, err);
}

static int file_intent(void *jv, int64_t id, const char *op, const char *args_text, struct err **err)
{
        struct journal *j = jv;
        if (!j->intents)
                return 0;
        cJSON *line = cJSON_CreateObject();
        cJSON_AddStringToObject(line, "type", "start");
        cJSON_AddNumberToObject(line, "id", (double)id);
        cJSON_AddStringToObject(line, "op", op);
        cJSON_AddItemToObject(line, "args", json_cjson_raw_ref(args_text ? args_text : "{}"));
        int r = append(j, line, false, err);
        cJSON_Delete(line);
        /* The intent is durable before the effect is performed. */
        return r < 0 ? r : journal_sync(j, err);
}

static int file_result(void *j, const cJSON *line, struct err **err)
{
        return append(j, line, false, err);
}

static int file_note(void *j, const cJSON *line, bool final, struct err **err)
{
        return append(j, line, final, err);
}

static int file_end(void *j, const cJSON *line, struct err **err)
{
        if (append(j, line, true, err) < 0)  /* also when the journal is full */
                return -1;
        return journal_sync(j, err);
}

static int file_sync(void *j, struct err **err)
{
        return journal_sync(j, err);
}

static void file_set_limit(void *j, uint64_t max)
{
        journal_set_limit(j, max);
}

const struct journal_ops journal_file_ops = {
        .header = file_header, .intent = file_intent, .result = file_result, .note = file_note,
        .end = file_end, .sync = file_sync, .set_limit = file_set_limit,
};

void journal_close(struct journal *j)
{
        if (!j)
                return;
        close(j->fd);
        free(j->path);
        free(j);
}

/* ---- replay ---- */

/* A call line holds its args and its value (or error), each at most one
 * frame's worth of JSON values. */
#define LINE_MAX_VALUES (2u * FRAME_MAX_VALUES + 1024u)
_Static_assert(JOURNAL_DEPTH_MAX == JSON_DEPTH_MAX + 64u, "journal.h's depth follows proto/json.h's");

struct replay {
        int fd;
        char *path;
        cJSON *header;
        cJSON *end;
        struct replay_entry *entries;
        size_t n, cap;
        size_t *slots;            /* id hash table: entry index + 1, 0 = empty; nslots a power of two */
        size_t nslots;
        struct replay_entry *starts;  /* "start" lines (intents), matched with calls after loading */
        size_t nstarts, starts_cap;
        struct replay_entry *opens;   /* "unanswered" lines: calls pending when the run ended */
        size_t nopens, opens_cap;
};

void replay_free(struct replay *r)
{
        if (!r)
                return;
        if (r->fd >= 0)
                close(r->fd);
        free(r->path);
        cJSON_Delete(r->header);
        cJSON_Delete(r->end);
        for (size_t i = 0; i < r->n; i++)
                free((char *)r->entries[i].op);
        free(r->entries);
        free(r->slots);
        for (size_t i = 0; i < r->nstarts; i++)
                free((char *)r->starts[i].op);
        free(r->starts);
        for (size_t i = 0; i < r->nopens; i++)
                free((char *)r->opens[i].op);
        free(r->opens);
        free(r);
}

static size_t slot_of(int64_t id, size_t nslots)
{
        uint64_t h = (uint64_t)id * 0x9e3779b97f4a7c15ull;
        return (size_t)(h ^ (h >> 32)) & (nslots - 1);
}

/* Rebuild the table at twice the size when it is half full. */
static int index_grow(struct replay *r)
{
        size_t nslots = r->nslots ? r->nslots * 2 : 256;
        size_t *slots = calloc(nslots, sizeof(*slots));
        if (!slots)
                return -1;
        for (size_t i = 0; i < r->n; i++) {
                size_t s = slot_of(r->entries[i].id, nslots);
                while (slots[s])
                        s = (s + 1) & (nslots - 1);
                slots[s] = i + 1;
        }
        free(r->slots);
        r->slots = slots;
        r->nslots = nslots;
        return 0;
}

static struct replay_entry *answered_by_id(struct replay *r, int64_t id)
{
        if (!r->nslots)
                return NULL;
        for (size_t s = slot_of(id, r->nslots); r->slots[s]; s = (s + 1) & (r->nslots - 1))
                if (r->entries[r->slots[s] - 1].id == id)
                        return &r->entries[r->slots[s] - 1];
        return NULL;
}

struct replay_entry *replay_by_id(struct replay *r, int64_t id)
{
        struct replay_entry *e = answered_by_id(r, id);
        for (size_t i = 0; !e && i < r->nopens; i++)
                if (r->opens[i].id == id)
                        e = &r->opens[i];
        return e;
}

/* An "unanswered" line {id, op, args}: a call still pending when the run
 * ended (a timer or a fetch the agent raced and left behind).  Replay
 * expects the call and never answers it. */
static int add_unanswered(struct replay *r, const cJSON *line, off_t off, size_t len, size_t lineno, struct err **err)
{
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(line, "id");
        const cJSON *op = cJSON_GetObjectItemCaseSensitive(line, "op");
        int64_t cid;
        if (!cJSON_IsNumber(id) || !double_to_int64(id->valuedouble, &cid) || !cJSON_IsString(op))
                return err_setc(err, JOURNAL_E_FORMAT, 0, "line %zu: unanswered line lacks an integer id or op", lineno);
        if (replay_by_id(r, cid))
                return err_setc(err, JOURNAL_E_FORMAT, 0, "line %zu: call id %lld appears twice", lineno,
                                (long long)cid);
        if (r->nopens == r->opens_cap) {
                size_t cap = r->opens_cap ? r->opens_cap * 2 : 16;
                struct replay_entry *e = realloc(r->opens, cap * sizeof(*e));
                if (!e)
                        return err_set(err, ENOMEM, "journal");
                r->opens = e;
                r->opens_cap = cap;
        }
        char *opc = strdup(op->valuestring);
        if (!opc)
                return err_set(err, ENOMEM, "journal");
        r->opens[r->nopens++] = (struct replay_entry){
                .id = cid, .op = opc, .off = off, .len = len, .lineno = lineno, .unanswered = true,
        };
        return 0;
}

static int add_entry(struct replay *r, int64_t cid, const char *opname, off_t off, size_t len, size_t lineno,
                     bool interrupted, struct err **err);

/* A "start" line: kept aside; one without its call line becomes an
 * interrupted entry at the end of loading. */
static int add_start(struct replay *r, const cJSON *line, off_t off, size_t len, size_t lineno, struct err **err)
{
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(line, "id");
        const cJSON *op = cJSON_GetObjectItemCaseSensitive(line, "op");
        int64_t cid;
        if (!cJSON_IsNumber(id) || !double_to_int64(id->valuedouble, &cid) || !cJSON_IsString(op))
                return err_setc(err, JOURNAL_E_FORMAT, 0, "line %zu: start line lacks an integer id or op", lineno);
        if (r->nstarts == r->starts_cap) {
                size_t cap = r->starts_cap ? r->starts_cap * 2 : 16;
                struct replay_entry *e = realloc(r->starts, cap * sizeof(*e));
                if (!e)
                        return err_set(err, ENOMEM, "journal");
                r->starts = e;
                r->starts_cap = cap;
        }
        char *opc = strdup(op->valuestring);
        if (!opc)
                return err_set(err, ENOMEM, "journal");
        r->starts[r->nstarts++] = (struct replay_entry){
                .id = cid, .op = opc, .off = off, .len = len, .lineno = lineno,
        };
        return 0;
}

/* Intents without results, in the order they were written, after every
 * answered call. */
static int add_interrupted(struct replay *r, struct err **err)
{
        for (size_t i = 0; i < r->nstarts; i++) {
                struct replay_entry *st = &r->starts[i];
                if (replay_by_id(r, st->id))
                        continue;
                if (add_entry(r, st->id, st->op, st->off, st->len, st->lineno, true, err) < 0)
                        return -1;
        }
        return 0;
}

static int add_call(struct replay *r, const cJSON *line, off_t off, size_t len, size_t lineno, struct err **err)
{
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(line, "id");
        const cJSON *op = cJSON_GetObjectItemCaseSensitive(line, "op");
        const cJSON *ok = cJSON_GetObjectItemCaseSensitive(line, "ok");
        int64_t cid;
        if (!cJSON_IsNumber(id) || !double_to_int64(id->valuedouble, &cid) || !cJSON_IsString(op) ||
            !cJSON_IsBool(ok))
                return err_setc(err, JOURNAL_E_FORMAT, 0, "line %zu: call line lacks an integer id, op or ok", lineno);
        return add_entry(r, cid, op->valuestring, off, len, lineno, false, err);
}

static int add_entry(struct replay *r, int64_t cid, const char *opname, off_t off, size_t len, size_t lineno,
                     bool interrupted, struct err **err)
{
        if (answered_by_id(r, cid))
                return err_setc(err, JOURNAL_E_FORMAT, 0, "line %zu: call id %lld appears twice", lineno, (long long)cid);
        /* A resumed run answered a call the first one left unanswered. */
        for (size_t i = 0; i < r->nopens; i++)
                if (r->opens[i].id == cid) {
                        free((char *)r->opens[i].op);
                        r->opens[i] = r->opens[--r->nopens];
                        break;
                }
        if (r->n == r->cap) {
                size_t cap = r->cap ? r->cap * 2 : 64;
                struct replay_entry *e = realloc(r->entries, cap * sizeof(*e));
                if (!e)
                        return err_set(err, ENOMEM, "journal");
                r->entries = e;
                r->cap = cap;
        }
        if (2 * (r->n + 1) > r->nslots && index_grow(r) < 0)
                return err_set(err, ENOMEM, "journal");
        char *opc = strdup(opname);
        if (!opc)
                return err_set(err, ENOMEM, "journal");
        r->entries[r->n] = (struct replay_entry){
                .seq = r->n + 1, .id = cid, .op = opc, .off = off, .len = len, .lineno = lineno,
                .interrupted = interrupted,
        };
        size_t s = slot_of(cid, r->nslots);
        while (r->slots[s])
                s = (s + 1) & (r->nslots - 1);
        r->slots[s] = r->n + 1;
        r->n++;
        return 0;
}

/* Parse one line, refusing one that would build an outsized tree.  The
 * recorded values (a call's args, value and error; the header's input)
 * stay raw nodes of their text: replay hands them to the worker as they
 * were written, and compares args as text. */
static int parse_line(const char *buf, size_t len, size_t lineno, cJSON **ret, struct err **err)
{
        static const char *const raw[] = { "args", "value", "error", "input", NULL };
        /* A line nests a frame's values a level or two deeper than the frame
         * did, and a nested run's journal (a note) a few more per level. */
        struct json_limits lim = { .max_depth = JOURNAL_DEPTH_MAX, .max_values = LINE_MAX_VALUES };
        struct json_error je;
        if (json_validate(buf, len, &lim, &je, NULL) < 0) {
                if (je.code == JSON_E_VALUES)
                        return err_setc(err, JOURNAL_E_FORMAT, 0, "line %zu holds more than %u JSON values", lineno,
                                        LINE_MAX_VALUES);
                return err_setc(err, JOURNAL_E_FORMAT, 0,
                                "line %zu: not a journal line (JSON object with \"type\"): %s at byte %zu", lineno,
                                je.what, je.offset);
        }
        cJSON *line = json_to_cjson((struct json_span){ buf, len }, raw, false);
        const cJSON *type = line ? cJSON_GetObjectItemCaseSensitive(line, "type") : NULL;
        if (!cJSON_IsString(type)) {
                cJSON_Delete(line);
                return err_setc(err, JOURNAL_E_FORMAT, 0,
                                "line %zu: not a journal line (JSON object with \"type\")", lineno);
        }
        *ret = line;
        return 0;
}

static int load(struct replay *r, FILE *f, const struct budget *budget, struct err **err)
{
        _cleanup_free_ char *buf = NULL;
        size_t bufcap = 0, lineno = 0;
        off_t off = 0;
        ssize_t len;
        while ((len = getline(&buf, &bufcap, f)) >= 0) {
                off_t start = off;
                off += len;
                lineno++;
                if (budget_check(budget, "replay: loading the journal", err) < 0)
                        return -1;
                size_t n = (size_t)len;
                if (n > 0 && buf[n - 1] == '\n')
                        n--;
                if (n == 0)
                        continue;
                cJSON *line = NULL;
                if (parse_line(buf, n, lineno, &line, err) < 0)
                        return -1;
                const char *type = cJSON_GetObjectItemCaseSensitive(line, "type")->valuestring;
                int rc = 0;
                if (strcmp(type, "header") == 0 && lineno == 1) {
                        r->header = line;
                        continue;
                } else if (strcmp(type, "call") == 0 && r->header && !r->end) {
                        rc = add_call(r, line, start, n, lineno, err);
                } else if (strcmp(type, "end") == 0 && r->header && !r->end) {
                        r->end = line;
                        continue;
                } else if (strcmp(type, "start") == 0 && r->header && !r->end) {
                        rc = add_start(r, line, start, n, lineno, err);
                } else if (strcmp(type, "unanswered") == 0 && r->header && !r->end) {
                        rc = add_unanswered(r, line, start, n, lineno, err);
                } else if (strcmp(type, "note") == 0 && r->header) {
                        /* informational (denials, warnings, limits) */
                } else {
                        rc = err_setc(err, JOURNAL_E_FORMAT, 0, "line %zu: unexpected \"%s\" line", lineno, type);
                }
                cJSON_Delete(line);
                if (rc < 0)
                        return -1;
        }
        if (ferror(f))
                return err_set(err, errno, "read");
        if (!r->header)
                return err_setc(err, JOURNAL_E_FORMAT, 0, "empty or has no header line");
        return add_interrupted(r, err);
}

int replay_open(const char *path, uint64_t max_bytes, struct replay **ret, struct err **err)
{
        return replay_open_until(path, max_bytes, NULL, ret, err);
}

int replay_open_until(const char *path, uint64_t max_bytes, const struct budget *budget, struct replay **ret,
                      struct err **err)
{
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return err_set(err, errno, "open journal '%s'", path);
        return replay_open_fd(fd, path, max_bytes, budget, ret, err);
}

int replay_open_fd(int fd, const char *path, uint64_t max_bytes, const struct budget *budget, struct replay **ret,
                   struct err **err)
{
        struct stat st;
        if (fstat(fd, &st) < 0) {
                int e = errno;
                close(fd);
                return err_set(err, e, "journal '%s'", path);
        }
        if (max_bytes && S_ISREG(st.st_mode) && (uint64_t)st.st_size > max_bytes) {
                char have[48], lim[48];
                format_size((uint64_t)st.st_size, have, sizeof(have));
                format_size(max_bytes, lim, sizeof(lim));
                close(fd);
                return err_setc(err, JOURNAL_E_LIMIT, 0,
                                "journal '%s' is %s, over the journal limit of %s; raise it with --max-journal",
                                path, have, lim);
        }
        /* A second descriptor for the reads while replaying (pread), so
         * the stream's position never matters. */
        int rfd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
        if (rfd < 0) {
                int e = errno;
                close(fd);
                return err_set(err, e, "journal '%s'", path);
        }
        FILE *f = fdopen(fd, "r");
        if (!f) {
                int e = errno;
                close(fd);
                close(rfd);
                return err_set(err, e, "journal '%s'", path);
        }
        struct replay *r = calloc(1, sizeof(*r));
        if (!r || !(r->path = strdup(path))) {
                free(r);
                fclose(f);
                close(rfd);
                return err_set(err, ENOMEM, "journal");
        }
        r->fd = rfd;
        int rc = load(r, f, budget, err);
        if (rc < 0)
                err_wrap(err, "journal '%s'", path);
        /* A stream that grew past the limit while we read it (a file still
         * being written) is refused too. */
        off_t end = ftello(f);
        if (rc == 0 && max_bytes && end > 0 && (uint64_t)end > max_bytes) {
                char have[48], lim[48];
                format_size((uint64_t)end, have, sizeof(have));
                format_size(max_bytes, lim, sizeof(lim));
                rc = err_setc(err, JOURNAL_E_LIMIT, 0,
                              "journal '%s' is %s, over the journal limit of %s; raise it with --max-journal", path,
                              have, lim);
        }
        fclose(f);
        if (rc < 0) {
                replay_free(r);
                return -1;
        }
        *ret = r;
        return 0;
}

int replay_entry_line(struct replay *r, const struct replay_entry *e, cJSON **ret, struct err **err)
{
        _cleanup_free_ char *buf = malloc(e->len + 1);
        if (!buf)
                return err_set(err, ENOMEM, "journal line %zu", e->lineno);
        size_t have = 0;
        while (have < e->len) {
                ssize_t n = pread(r->fd, buf + have, e->len - have, e->off + (off_t)have);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return err_set(err, errno, "journal '%s' line %zu: read", r->path, e->lineno);
                if (n == 0)
                        return err_setc(err, JOURNAL_E_FORMAT, 0, "journal '%s' changed during the replay (line %zu)",
                                        r->path, e->lineno);
                have += (size_t)n;
        }
        buf[e->len] = '\0';
        cJSON *line = NULL;
        const cJSON *id;
        if (parse_line(buf, e->len, e->lineno, &line, err) < 0 ||
            !cJSON_IsNumber(id = cJSON_GetObjectItemCaseSensitive(line, "id")) || id->valuedouble != (double)e->id) {
                cJSON_Delete(line);
                return err_setc(err, JOURNAL_E_FORMAT, 0, "journal '%s' changed during the replay (line %zu)",
                                r->path, e->lineno);
        }
        *ret = line;
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

/* ---- the file behind struct replay_ops ---- */

static const cJSON *file_replay_header(void *r)
{
        return replay_header(r);
}

static struct replay_entry *file_by_seq(void *r, size_t idx)
{
        return replay_by_seq(r, idx);
}

static struct replay_entry *file_by_id(void *r, int64_t id)
{
        return replay_by_id(r, id);
}

static int file_entry_line(void *r, const struct replay_entry *e, cJSON **ret, struct err **err)
{
        return replay_entry_line(r, e, ret, err);
}

static const cJSON *file_replay_end(void *r)
{
        return replay_end(r);
}

const struct replay_ops replay_file_ops = {
        .header = file_replay_header, .by_seq = file_by_seq, .by_id = file_by_id, .entry_line = file_entry_line,
        .end = file_replay_end,
};
