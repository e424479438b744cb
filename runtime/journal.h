/* runtime/journal.h — the run journal: JSON lines, one header, one line per
 * answered host call, one end line.  Recording writes each line with a single
 * write(2) as soon as the call is answered, so a worker (or parent) dying
 * mid-run loses nothing already answered; fsync at every checkpoint and at
 * the end.  Replay reads a journal back and serves its results.
 */
#ifndef CHIDORI_RUNTIME_JOURNAL_H
#define CHIDORI_RUNTIME_JOURNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/err.h"

struct cJSON;

/* err->code of the journal's own refusals. */
enum journal_errc {
        JOURNAL_E_LIMIT = 1,  /* recording: the line would pass the size limit; replay: the file is over it */
        JOURNAL_E_FORMAT,     /* replay: not a journal, or a line it cannot use */
};

/* Nesting a journal line may have: a frame's (JSON_DEPTH_MAX) and room for
 * the lines of nested runs copied into notes. */
#define JOURNAL_DEPTH_MAX (10000u + 64u)

/* ---- the journal as an interface ----
 * What a session writes, whatever keeps it: today's JSON-lines file (below,
 * journal_file_ops), a server's database later.  Each line is a JSON object
 * in the file's format; an implementation may store it as it likes.
 *
 * Durability (the server's resume, issue 11): before an effect visible
 * outside the box is performed (http, workspace writes, tools, prompts,
 * nested agents, input) the session calls `intent`; its `result` is written
 * before the worker sees it.  Pure results (clock, random, memory reads,
 * template) have no intent.  A journal read back with an intent and no
 * result is a call that was in flight when the writer died: RESUME answers
 * it "interrupted by server restart" and does not perform it again. */
struct journal_ops {
        int (*header)(void *j, const struct cJSON *line, struct err **err);
        /* {"type":"start","id":N,"op":...,"args":...}; args_text is the
         * call's args as the worker wrote them. */
        int (*intent)(void *j, int64_t id, const char *op, const char *args_text, struct err **err);
        /* A call line; fails with JOURNAL_E_LIMIT when the journal is full. */
        int (*result)(void *j, const struct cJSON *line, struct err **err);
        /* A note (denials, approvals, limits); `final`: written even when full. */
        int (*note)(void *j, const struct cJSON *line, bool final, struct err **err);
        int (*end)(void *j, const struct cJSON *line, struct err **err);
        int (*sync)(void *j, struct err **err);
        void (*set_limit)(void *j, uint64_t max_bytes);
};

struct session_journal {
        const struct journal_ops *ops;  /* NULL: nothing is recorded */
        void *j;
};

/* ---- recording ---- */
struct journal;

/* The file journal behind the interface: j is a struct journal *. */
extern const struct journal_ops journal_file_ops;
/* Write intents ("start" lines) too (off by default: a CLI journal stays
 * as it was, one line per answered call). */
void journal_set_intents(struct journal *j, bool on);

/* May `path` be replaced by a new journal?  Yes (0) when it does not exist,
 * is empty, is not a regular file (a pipe, /dev/null), or is a chidori
 * journal (its first line is a journal header); else -1 with code
 * JOURNAL_E_NOT_JOURNAL (the caller asks for --force).  Reads at most the
 * first line's first bytes. */
enum { JOURNAL_E_NOT_JOURNAL = 1 };
int journal_check_replaceable(const char *path, struct err **err);

/* Create/truncate path (mode 0600). */
int journal_open(const char *path, struct journal **ret, struct err **err);
/* A journal on a descriptor opened elsewhere (the monitor opens the
 * operator's path for the broker); `name` is for messages.  Takes fd. */
int journal_open_fd(int fd, const char *name, struct journal **ret, struct err **err);
/* Cap the file at `max` bytes (0 = no cap).  A line that would pass it is
 * not written: journal_append fails with JOURNAL_E_LIMIT and the journal
 * is full from then on (every later journal_append fails the same way). */
void journal_set_limit(struct journal *j, uint64_t max);
/* Append one JSON object as a line.  Takes no ownership. */
int journal_append(struct journal *j, const struct cJSON *line, struct err **err);
/* Append whatever the size: the header, the note saying why the journal is
 * full, the end line.  The cap can therefore be passed by these lines. */
int journal_append_final(struct journal *j, const struct cJSON *line, struct err **err);
bool journal_is_full(const struct journal *j);
uint64_t journal_size(const struct journal *j);  /* bytes written */
/* fsync the file. */
int journal_sync(struct journal *j, struct err **err);
void journal_close(struct journal *j);  /* NULL ok; does not fsync */

/* ---- replay ----
 * Loading reads the file once, in linear time: every call line is parsed,
 * checked and indexed by seq (its position) and by id (a hash table), and
 * then dropped; only its offset in the file is kept.  A line is read and
 * parsed again when the replay needs it (replay_entry_line), so memory does
 * not grow with the journal (docs/decisions.md). */
struct replay;

struct replay_entry {
        uint64_t seq;             /* delivery order, 1-based */
        int64_t id;               /* call id assigned by the worker */
        const char *op;           /* owned by the replay */
        bool called;              /* the worker has asked for it */
        bool delivered;
        bool interrupted;         /* a "start" line without its call line: the writer died mid-call */
        bool unanswered;          /* an "unanswered" line: pending when the run ended; never delivered */
        off_t off;                /* where its line starts in the file */
        size_t len;               /* bytes of the line, without the newline */
        size_t lineno;
};

/* The replay source as an interface (the session reads through it; the
 * server's database will be another implementation): the header, the
 * answered calls in delivery order (seq, 0-based) and by id, and one
 * call's line read back.  replay_file_ops: the file below (r is a struct
 * replay *). */
struct replay_ops {
        const struct cJSON *(*header)(void *r);
        struct replay_entry *(*by_seq)(void *r, size_t idx);
        struct replay_entry *(*by_id)(void *r, int64_t id);
        int (*entry_line)(void *r, const struct replay_entry *e, struct cJSON **ret, struct err **err);
        /* The end line, NULL when the journal has none (its writer was
         * killed); a source without this member says nothing of its end. */
        const struct cJSON *(*end)(void *r);
};

struct session_replay {
        const struct replay_ops *ops;   /* NULL: no replay source */
        void *r;
};

extern const struct replay_ops replay_file_ops;

/* Read a whole journal.  A file of more than max_bytes (0 = no limit) is
 * refused before it is read (JOURNAL_E_LIMIT).  Errors name the line. */
int replay_open(const char *path, uint64_t max_bytes, struct replay **ret, struct err **err);
/* replay_open() that gives up when `budget` is over (common/budget.h),
 * checked at every line: the error's errnum is ETIMEDOUT or EINTR. */
struct budget;
int replay_open_until(const char *path, uint64_t max_bytes, const struct budget *budget, struct replay **ret, struct err **err);
/* The same on a descriptor opened elsewhere (the monitor opens the
 * operator's journal for the broker); `path` names it in messages.  Takes fd. */
int replay_open_fd(int fd, const char *path, uint64_t max_bytes, const struct budget *budget, struct replay **ret,
                   struct err **err);
void replay_free(struct replay *r);
const struct cJSON *replay_header(const struct replay *r);
const struct cJSON *replay_end(const struct replay *r);  /* NULL if the run never ended */
size_t replay_count(const struct replay *r);
struct replay_entry *replay_by_seq(struct replay *r, size_t idx);  /* 0-based */
struct replay_entry *replay_by_id(struct replay *r, int64_t id);   /* O(1) */
/* Entry e's whole line, read and parsed again: *ret (the caller
 * cJSON_Deletes it) has "args" and "ok" with "value" or "error".  Fails if
 * the file changed under the replay. */
int replay_entry_line(struct replay *r, const struct replay_entry *e, struct cJSON **ret, struct err **err);

#endif
