/* broker/journal.h — the run journal: JSON lines, one header, one line per
 * answered host call, one end line.  Recording writes each line with a single
 * write(2) as soon as the call is answered, so a worker (or parent) dying
 * mid-run loses nothing already answered; fsync at every checkpoint and at
 * the end.  Replay reads a journal back and serves its results.
 */
#ifndef CHIDORI_BROKER_JOURNAL_H
#define CHIDORI_BROKER_JOURNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"

struct cJSON;

/* ---- recording ---- */
struct journal;

/* Create/truncate path (mode 0600). */
int journal_open(const char *path, struct journal **ret, struct err **err);
/* Append one JSON object as a line.  Takes no ownership. */
int journal_append(struct journal *j, const struct cJSON *line, struct err **err);
/* fsync the file. */
int journal_sync(struct journal *j, struct err **err);
void journal_close(struct journal *j);  /* NULL ok; does not fsync */

/* ---- replay ---- */
struct replay;

struct replay_entry {
        uint64_t seq;             /* delivery order, 1-based */
        int64_t id;               /* call id assigned by the worker */
        const char *op;
        const struct cJSON *args;
        const struct cJSON *line; /* the whole line: ok, value / error */
        bool called;              /* the worker has asked for it */
        bool delivered;
};

/* Parse a whole journal.  Errors name the line number. */
int replay_open(const char *path, struct replay **ret, struct err **err);
/* replay_open() that gives up when `budget` is over (common/budget.h),
 * checked at every line: the error's errnum is ETIMEDOUT or EINTR. */
struct budget;
int replay_open_until(const char *path, const struct budget *budget, struct replay **ret, struct err **err);
void replay_free(struct replay *r);
const struct cJSON *replay_header(const struct replay *r);
const struct cJSON *replay_end(const struct replay *r);  /* NULL if the run never ended */
size_t replay_count(const struct replay *r);
struct replay_entry *replay_by_seq(struct replay *r, size_t idx);  /* 0-based */
struct replay_entry *replay_by_id(struct replay *r, int64_t id);

#endif
