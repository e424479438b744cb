/* runtime/session-internal.h — the session's state, shared by the runtime's
 * own files (session.c: frames, answers, the box; pending.c: parked calls,
 * approvals and input).  Effects see `struct broker` only. */
#ifndef CHIDORI_RUNTIME_SESSION_INTERNAL_H
#define CHIDORI_RUNTIME_SESSION_INTERNAL_H

#include <cjson/cJSON.h>
#include <poll.h>

#include "runtime/runtime-internal.h"
#include "runtime/session.h"

struct evloop;
struct ev_io;
struct ev_timer;

/* A frame waiting to be written: its header and its JSON text, written
 * from `off` on (counting the header's 4 bytes first). */
struct qframe {
        struct qframe *next;
        unsigned char hdr[4];
        char *body;          /* from cJSON_PrintUnformatted */
        size_t len;          /* of body */
        size_t off;
};

/* Frames in order; each is freed once written, so the memory held is what
 * the worker has not read yet (never a buffer that only grows). */
struct outq {
        struct qframe *head, *tail;
        size_t pending;      /* bytes not yet written */
        size_t held;         /* what the frames cost in memory, for flow control */
};

struct errfwd {
        char line[4096];
        size_t len;
        bool eof;
};

/* A gated call the policy wants approved: parked until session_approve. */
struct parked_call {
        int64_t id;
        char *op;
        cJSON *args;
        char *args_text;
        char *target;
        char *declined;      /* the agent's error text if it is refused */
        char *reason;        /* why approval is needed (the ask text) */
        int decided;         /* 0 waiting, 1 allowed, -1 refused */
        char *who;           /* who decided */
};

/* A decision remembered for the session: (target, args) -> allow. */
struct remembered {
        char *target;
        char *args;
        bool allow;
};

/* chidori.input calls waiting for session_input, oldest first. */
struct input_wait {
        int64_t id;
        char *prompt;
};

/* The effect families' fds in the loop (effects/core.c, effects_table):
 * asked again before every wait. */
struct family_fds {
        struct pollfd *pfd;
        size_t n, cap;
        size_t *start, *count;   /* per family */
        struct ev_io **io;       /* one watcher per distinct fd */
        int *io_fd;
        uint32_t *io_rev;
        size_t nio, io_cap;
        struct ev_timer *timer;  /* the families' own timeout */
};

struct session {
        struct broker b;             /* what the effects see */
        struct evloop *loop;
        const struct session_config *cfg;
        const struct session_sink *sink;
        const struct box_provider *boxes;
        void *box;                   /* the provider's handle, NULL until spawned / after ended */
        enum session_state state;
        struct session_outcome out;
        double start;
        double deadline_at;          /* mono_ms, 0 = none */
        volatile sig_atomic_t cancelled;  /* the budget's stop flag when cfg->stop is NULL */
        bool pausing;                /* session_pause: ends PAUSED once nothing is in flight */
        bool answer_recorded;        /* RESUME: the answer being sent is the journal's already */

        int frame_fd, stderr_fd;
        struct ev_io *frame_io, *err_io;
        bool peer_gone;              /* the worker hung up: answers have nowhere to go */
        struct outq q;
        struct errfwd ef;

        bool box_started, box_ended, spawn_failed, box_finish_called, finish_asked, ended_reported;
        struct ev_timer *drain_timer;

        struct parked_call *parked;
        size_t nparked, parked_cap;
        bool asking;                 /* an approval is out (parked[asked]) */
        int64_t asked_id;
        struct session_approval approval;
        struct remembered *memo;
        size_t nmemo, memo_cap;
        struct input_wait *inputs;
        size_t ninputs, inputs_cap;
        bool input_asked;

        struct family_fds fam;
};

/* answer.c */
size_t session_outq_pending(const struct outq *q);
size_t session_outq_held(const struct outq *q);
void session_outq_clear(struct outq *q);
int session_outq_flush(struct session *s, struct err **err);
int session_send_json(struct session *s, const cJSON *j, struct err **err);
/* Queue a frame's text (taken, malloc'd; freed on every path). */
int session_send_text(struct session *s, char *text, size_t len, struct err **err);
/* The result frame of a scalar answer (null, true, false, a number, a
 * string, raw JSON text) without a cJSON tree: the bytes cJSON would print.
 * 1 with *ret (malloc'd) and *ret_len, 0 when v is not one, -1 on ENOMEM. */
int session_result_text(int64_t id, const cJSON *v, char **ret, size_t *ret_len);
int session_perform(struct session *s, int64_t id, const char *op, const cJSON *args, const char *args_text,
                    struct err **err);
void session_free_async(struct broker *b);
/* The run ends with calls still pending (a timer or a fetch the agent
 * raced and left): one "unanswered" journal line each, so replay expects
 * them and answers none. */
void session_journal_unanswered(struct session *s);

/* replay.c */
int session_replay_call(struct session *s, int64_t id, const char *op, const char *args, struct err **err);
int session_replay_pump(struct session *s, struct err **err);

/* frames.c */
bool session_reading(struct session *s);
bool session_reader_has_bytes(const struct frame_reader *r);
int session_read_frames(struct session *s, struct err **err);
/* The init frame, sent as soon as the worker's channel exists: the worker
 * reads it after its ready frame, which the broker still requires first. */
int session_send_init(struct session *s, struct err **err);
void session_read_stderr(struct session *s, int fd);
void session_errfwd_flush(struct session *s);

/* families.c */
void session_families_prepare(struct session *s);
void session_families_check(struct session *s);
void session_families_free(struct session *s);

/* session.c */
int session_perform_gated(struct session *s, int64_t id, const struct effect *e, const char *op, const cJSON *args,
                          const char *args_text, struct err **err);
void session_fail(struct session *s, struct err *e);
void session_set_state(struct session *s, enum session_state st);

/* answer.c: the answer to call `id`: frame to the worker, line in the journal (owns value/error). */
int session_answer(struct session *s, int64_t id, const char *op, const char *args, cJSON *value, cJSON *error,
                   struct err **err);

/* pending.c */
int session_park(struct session *s, int64_t id, const char *op, const cJSON *args, const char *args_text,
                 const char *target, const char *declined, const char *reason, struct err **err);
/* ask_before with a remembered decision for (target, args): 1 allow, -1 refuse, 0 none. */
int session_remembered(const struct session *s, const char *target, const char *args);
void session_pending_free(struct session *s);
/* call.cancel of a parked call or an input wait: answered with `error`
 * (owned).  1 withdrawn, 0 not there, -1 failure. */
int session_withdraw(struct session *s, int64_t id, cJSON *error, struct err **err);
size_t session_parked_count(const struct session *s);

#endif
