/* runtime/loop.c — the frame loop: one conversation with one worker.
 *
 * poll() over the worker's frame socket (non-blocking, read incrementally so
 * a worker stalling mid-frame cannot wedge us), its stderr pipe (forwarded
 * line by line), and the deadline.  Outgoing frames go through a queue that
 * is flushed on POLLOUT, so a worker writing a large call while we write a
 * large result cannot deadlock the pair.
 */
#define _GNU_SOURCE
#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/seccomp.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/text.h"
#include "common/util.h"
#include "effects/memory/memstore.h"
#include "proto/json.h"
#include "runtime/journal.h"
#include "runtime/runtime-internal.h"

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

/* The allocations of a queued frame beyond its bytes, roughly (a qframe,
 * two malloc headers): a flood of tiny answers costs more than its bytes. */
#define QFRAME_COST (sizeof(struct qframe) + 32)

struct errfwd {
        char line[4096];
        size_t len;
        bool eof;
};

struct loop {
        struct broker b;
        bool just_answered;
        bool peer_gone;      /* the worker hung up: answers have nowhere to go */
        struct outq q;
        struct errfwd ef;
        double deadline_at;  /* mono_ms, 0 = none */
};

static void set_nonblock(int fd)
{
        int fl = fcntl(fd, F_GETFL);
        if (fl >= 0)
                fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

static int end_with(struct broker *b, enum broker_end end, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));

static int end_with(struct broker *b, enum broker_end end, const char *fmt, ...)
{
        if (b->finished)
                return 0;
        b->finished = true;
        b->out->end = end;
        va_list ap;
        va_start(ap, fmt);
        if (vasprintf(&b->out->message, fmt, ap) < 0)
                b->out->message = NULL;
        va_end(ap);
        return 0;
}

/* ---- outgoing frames ----
 * The queue holds answers the worker has not read yet.  Its size is what
 * flow control looks at (reading(), below): while it holds max_queue bytes
 * or more, no further call is read, so it grows past the cap only by what
 * calls already in flight complete with (each bounded on its own). */

static size_t outq_pending(const struct outq *q)
{
        return q->pending;
}

static size_t outq_held(const struct outq *q)
{
        return q->held;
}

static void outq_clear(struct outq *q)
{
        for (struct qframe *f = q->head, *next; f; f = next) {
                next = f->next;
                free(f->body);
                free(f);
        }
        *q = (struct outq){ 0 };
}

/* MSG_NOSIGNAL: a worker that is gone is EPIPE here, never SIGPIPE.  It is
 * not an error of its own: the worker may have written `done` and exited
 * while we performed its last call (its CPU limit ran out just after
 * asking), or died (memory, seccomp, a crash).  Stop writing, keep reading:
 * a `done` still buffered, else EOF and the wait status decide the ending
 * (docs/decisions.md, "A worker that is gone is not a write error"). */
static int outq_flush(struct loop *l, struct err **err)
{
        struct outq *q = &l->q;
        while (q->head) {
                /* Up to 32 frames per writev. */
                struct iovec iov[64];
                int n = 0;
                for (struct qframe *f = q->head; f && n + 2 <= 64; f = f->next) {
                        size_t off = f->off;
                        if (off < 4)
                                iov[n++] = (struct iovec){ .iov_base = f->hdr + off, .iov_len = 4 - off };
                        size_t boff = off > 4 ? off - 4 : 0;
                        iov[n++] = (struct iovec){ .iov_base = f->body + boff, .iov_len = f->len - boff };
                }
                /* MSG_NOSIGNAL: a worker that has gone is EPIPE here, not a
                 * SIGPIPE that would kill the launcher. */
                struct msghdr mh = { .msg_iov = iov, .msg_iovlen = (size_t)n };
                ssize_t w = sendmsg(l->b.peer->frame_fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
                if (w < 0) {
                        if (errno == EINTR)
                                continue;
                        if (errno == EAGAIN)
                                return 0;
                        if (errno == EPIPE || errno == ECONNRESET) {
                                /* Gone: what is queued can never be read; what
                                 * it wrote before going is still read. */
                                l->peer_gone = true;
                                outq_clear(q);
                                return 0;
                        }
                        return err_set(err, errno, "write to worker");
                }
                size_t left = (size_t)w;
                q->pending -= left;
                while (left && q->head) {
                        struct qframe *f = q->head;
                        size_t rest = 4 + f->len - f->off;
                        if (left < rest) {
                                f->off += left;
                                break;
                        }
                        left -= rest;
                        q->held -= QFRAME_COST + 4 + f->len;
                        q->head = f->next;
                        if (!q->head)
                                q->tail = NULL;
                        free(f->body);
                        free(f);
                }
        }
        return 0;
}

static int send_json(struct loop *l, const cJSON *j, struct err **err)
{
        if (l->peer_gone)
                return 0; /* nobody will read it */
        char *s = cJSON_PrintUnformatted(j);
        if (!s)
                return err_set(err, ENOMEM, "serialise frame");
        size_t len = strlen(s);
        if (len > FRAME_MAX_BYTES) {
                free(s);
                return err_set(err, 0, "frame of %zu bytes exceeds the %u-byte limit", len, FRAME_MAX_BYTES);
        }
        struct qframe *f = calloc(1, sizeof(*f));
        if (!f) {
                free(s);
                return err_set(err, ENOMEM, "queue frame");
        }
        f->hdr[0] = (unsigned char)(len >> 24), f->hdr[1] = (unsigned char)(len >> 16);
        f->hdr[2] = (unsigned char)(len >> 8), f->hdr[3] = (unsigned char)len;
        f->body = s;
        f->len = len;
        struct outq *q = &l->q;
        if (q->tail)
                q->tail->next = f;
        else
                q->head = f;
        q->tail = f;
        q->pending += 4 + len;
        q->held += QFRAME_COST + 4 + len;
        return outq_flush(l, err);
}

/* ---- answering calls ---- */

/* The message may quote bytes from outside (a tool's stderr, a file name):
 * written as a string the worker can read whatever they are (invalid
 * UTF-8 as U+FFFD, as Node decodes it). */
cJSON *broker_error_obj(const char *name, const char *message, const char *code)
{
        cJSON *e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "name", name);
        cJSON_AddItemToObject(e, "message", json_cjson_string(message, strlen(message), 0));
        if (code)
                cJSON_AddStringToObject(e, "code", code);
        return e;
}

static cJSON *error_obj(const char *name, const char *message)
{
        return broker_error_obj(name, message, NULL);
}

/* The journal cannot take the answer to call `id`: the run cannot be
 * recorded completely, so it stops here (docs/decisions.md).  The call is
 * answered ELIMIT (the worker is stopped right after); the journal ends
 * with the calls before it, the limit note and (from the launcher) the end
 * line, which may pass the cap.  A replay of it diverges at call `id`. */
static int journal_full(struct loop *l, int64_t id, const char *op, struct err **err)
{
        struct broker *b = &l->b;
        char text[256], detail[192];
        broker_limit_text(b, LIMIT_JOURNAL, text, sizeof(text));
        snprintf(detail, sizeof(detail), "call %lld (%.64s) could not be recorded", (long long)id, op);
        broker_limit_report(b, LIMIT_JOURNAL, detail);
        end_with(b, BROKER_END_LIMIT, "%s: the run was stopped at call %lld, the first that could not be recorded",
                 text, (long long)id);
        cJSON *res = cJSON_CreateObject();
        cJSON_AddStringToObject(res, "type", "result");
        cJSON_AddNumberToObject(res, "id", (double)id);
        cJSON_AddBoolToObject(res, "ok", false);
        cJSON_AddItemToObject(res, "error", broker_error_obj("Error", text, "ELIMIT"));
        int r = send_json(l, res, err);
        cJSON_Delete(res);
        return r;
}

/* Deliver the answer to call `id`: frame to the worker, line in the journal.
 * args is the call's own JSON text (compact), journaled as it is.  Takes
 * ownership of value/error. */
static int answer(struct loop *l, int64_t id, const char *op, const char *args, cJSON *value,
                  cJSON *error, struct err **err)
{
        struct broker *b = &l->b;
        cJSON *res = cJSON_CreateObject();
        cJSON_AddStringToObject(res, "type", "result");
        cJSON_AddNumberToObject(res, "id", (double)id);
        cJSON_AddBoolToObject(res, "ok", error == NULL);
        if (error)
                cJSON_AddItemToObject(res, "error", error);
        else
                cJSON_AddItemToObject(res, "value", value ? value : cJSON_CreateNull());
        b->seq++;
        b->out->effects++;
        if (b->outstanding)
                b->outstanding--;
        int r = 0;
        if (b->cfg->journal) {
                cJSON *line = cJSON_CreateObject();
                cJSON_AddStringToObject(line, "type", "call");
                cJSON_AddNumberToObject(line, "seq", (double)b->seq);
                cJSON_AddNumberToObject(line, "id", (double)id);
                cJSON_AddStringToObject(line, "op", op);
                cJSON_AddItemToObject(line, "args", json_cjson_raw_ref(args ? args : "{}"));
                cJSON_AddBoolToObject(line, "ok", error == NULL);
                if (error)
                        cJSON_AddItemReferenceToObject(line, "error", error);
                else
                        cJSON_AddItemReferenceToObject(line, "value", cJSON_GetObjectItem(res, "value"));
                r = journal_append(b->cfg->journal, line, err);
                cJSON_Delete(line);
                if (r < 0 && err_code(*err) == JOURNAL_E_LIMIT) {
                        err_free(*err);
                        *err = NULL;
                        cJSON_Delete(res);
                        return journal_full(l, id, op, err);
                }
        }
        if (r == 0)
                r = send_json(l, res, err);
        cJSON_Delete(res);
        l->just_answered = true;
        return r;
}

void broker_journal_note(struct broker *b, const char *kind, const char *message)
{
        if (!b->cfg->journal)
                return;
        cJSON *line = cJSON_CreateObject();
        cJSON_AddStringToObject(line, "type", "note");
        cJSON_AddStringToObject(line, "kind", kind);
        cJSON_AddStringToObject(line, "message", message);
        /* Limit notes are written once per limit and run, so they may pass
         * the journal's cap (the one saying it is full must). */
        if (strcmp(kind, "limit") == 0)
                journal_append_final(b->cfg->journal, line, NULL);
        else
                journal_append(b->cfg->journal, line, NULL);
        cJSON_Delete(line);
}

static int add_pending(struct broker *b, int64_t id, const char *op, const cJSON *args, const char *args_text,
                       struct err **err)
{
        if (b->npend == b->pend_cap) {
                size_t cap = b->pend_cap ? 2 * b->pend_cap : 16;
                struct pending_call *np = realloc(b->pend, cap * sizeof(*np));
                if (!np)
                        return err_set(err, ENOMEM, "pending call");
                b->pend = np;
                b->pend_cap = cap;
        }
        struct pending_call *pc = &b->pend[b->npend];
        pc->id = id;
        pc->op = strdup(op);
        pc->args = cJSON_Duplicate(args, 1);
        pc->args_text = strdup(args_text);
        pc->scratch = b->pending_scratch;
        b->pending_scratch = NULL;
        if (!pc->op || !pc->args || !pc->args_text) {
                free(pc->op);
                cJSON_Delete(pc->args);
                free(pc->args_text);
                return err_set(err, ENOMEM, "pending call");
        }
        b->npend++;
        return 0;
}

static void free_pending(struct broker *b)
{
        for (size_t i = 0; i < b->npend; i++) {
                free(b->pend[i].op);
                cJSON_Delete(b->pend[i].args);
                free(b->pend[i].args_text);
                if (b->pend[i].scratch)
                        unlink(b->pend[i].scratch); /* the call's temporary file */
                free(b->pend[i].scratch);
        }
        free(b->pend);
        b->pend = NULL;
        b->npend = b->pend_cap = 0;
}

struct pending_call *broker_pending(struct broker *b, int64_t id)
{
        for (size_t i = 0; i < b->npend; i++)
                if (b->pend[i].id == id)
                        return &b->pend[i];
        return NULL;
}

void broker_complete(struct broker *b, int64_t id, cJSON *value, cJSON *error)
{
        struct loop *l = (struct loop *)b; /* b is the first member */
        for (size_t i = 0; i < b->npend; i++) {
                if (b->pend[i].id != id)
                        continue;
                struct pending_call pc = b->pend[i];
                b->pend[i] = b->pend[--b->npend];
                struct err *e = NULL;
                if (!b->finished && answer(l, id, pc.op, pc.args_text, value, error, &e) < 0 && !b->async_err)
                        b->async_err = e;
                else
                        err_free(e);
                if (b->finished) {
                        cJSON_Delete(value);
                        cJSON_Delete(error);
                }
                free(pc.op);
                free(pc.scratch);
                cJSON_Delete(pc.args);
                free(pc.args_text);
                return;
        }
        cJSON_Delete(value);
        cJSON_Delete(error);
}

static int perform(struct loop *l, int64_t id, const char *op, const cJSON *args, const char *args_text,
                   struct err **err)
{
        struct broker *b = &l->b;
        const struct effect *e = broker_effect_find(op);
        if (!e) {
                char msg[256];
                snprintf(msg, sizeof(msg), "unknown host call '%.64s': this chidori does not provide it", op);
                text_fput_line(stderr, "chidori: ", msg, strlen(msg));
                return answer(l, id, op, args_text, NULL, error_obj("Error", msg), err);
        }
        if (e->gate != GATE_NONE) {
                char target[1100], msg[1024];
                if (!broker_gate_target(e, args, target, sizeof(target))) {
                        snprintf(msg, sizeof(msg), "%s: '%s' must be a string of at most %zu bytes", op,
                                 broker_gate_arg(e), sizeof(target) - 7);
                        return answer(l, id, op, args_text, NULL, error_obj("TypeError", msg), err);
                }
                if (!broker_gate(b, target, args, msg, sizeof(msg)))
                        return answer(l, id, op, args_text, NULL, broker_error_obj("Error", msg, "EPOLICY"), err);
        }
        cJSON *value = NULL;
        struct err *ferr = NULL;
        b->cur_op = op;
        int r = e->fn(b, id, args, &value, &ferr);
        b->cur_op = NULL;
        if (r > 0)
                return add_pending(b, id, op, args, args_text, err);
        free(b->pending_scratch);
        b->pending_scratch = NULL;
        if (r < 0 && budget_over(&b->budget)) {
                /* The effect gave up because the run is ending (deadline,
                 * stop signal): no answer; the loop ends the run next. */
                err_free(ferr);
                cJSON_Delete(value);
                return 0;
        }
        if (r < 0) {
                cJSON *eo = broker_error_obj("Error", err_msg(ferr),
                                             err_code(ferr) == BROKER_E_LIMIT ? "ELIMIT"
                                             : e->code_name                   ? e->code_name(err_code(ferr))
                                                                              : NULL);
                err_free(ferr);
                cJSON_Delete(value);
                return answer(l, id, op, args_text, NULL, eo, err);
        }
        return answer(l, id, op, args_text, value, NULL, err);
}

/* ---- replay ---- */

/* How much of s[0..len) to show in at most max bytes, not cutting a UTF-8
 * character. */
static int shown(const char *s, size_t len, size_t max)
{
        if (len <= max)
                return (int)len;
        while (max > 0 && ((unsigned char)s[max] & 0xc0) == 0x80)
                max--;
        return (int)max;
}

/* "op {args}", the args cut to what a message can show. */
static void describe(const char *op, const char *args, char *buf, size_t len)
{
        size_t n = strlen(args);
        snprintf(buf, len, "%s %.*s%s", op, shown(args, n, 300), args, n > 300 ? "..." : "");
}

/* " (args.key: the journal has "k1", the agent sent "k2")". */
static void what_differs(const char *want, const char *got, char *buf, size_t len)
{
        char path[160];
        struct json_span a, g;
        buf[0] = '\0';
        if (json_diff((struct json_span){ want, strlen(want) }, (struct json_span){ got, strlen(got) }, "args", path,
                      sizeof(path), &a, &g) != 1)
                return;
        snprintf(buf, len, " (%s: the journal has %.*s%s, the agent sent %.*s%s)", path,
                 a.p ? shown(a.p, a.len, 100) : 7, a.p ? a.p : "nothing", a.len > 100 ? "..." : "",
                 g.p ? shown(g.p, g.len, 100) : 7, g.p ? g.p : "nothing", g.len > 100 ? "..." : "");
}

/* Journals written before values were carried exactly (no "values":
 * "exact" in the header) hold args that cJSON printed again: numbers with
 * 15 significant digits, strings cut at a NUL.  They are compared as the
 * recording compared them then: both parsed, numbers within cJSON's
 * epsilon. */
static bool legacy_args_equal(const char *want, const char *got)
{
        cJSON *w = json_to_cjson((struct json_span){ want, strlen(want) }, NULL, false);
        cJSON *g = json_to_cjson((struct json_span){ got, strlen(got) }, NULL, false);
        bool eq = w && g && cJSON_Compare(w, g, true);
        cJSON_Delete(w);
        cJSON_Delete(g);
        return eq;
}

static bool replay_is_exact(struct replay *r)
{
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(replay_header(r), "values");
        return cJSON_IsString(v) && strcmp(v->valuestring, "exact") == 0;
}

static int replay_pump(struct loop *l, struct err **err)
{
        struct broker *b = &l->b;
        struct replay *r = b->cfg->replay;
        struct replay_entry *e;
        while ((e = replay_by_seq(r, b->replay_next)) && e->called && !e->delivered) {
                cJSON *line = NULL;
                if (replay_entry_line(r, e, &line, err) < 0)
                        return -1;
                /* value, error and args are raw nodes: the recorded text. */
                const cJSON *ok = cJSON_GetObjectItemCaseSensitive(line, "ok");
                cJSON *v = cJSON_DetachItemFromObjectCaseSensitive(line, "value");
                cJSON *er = cJSON_DetachItemFromObjectCaseSensitive(line, "error");
                cJSON *value = NULL, *error = NULL;
                if (cJSON_IsTrue(ok))
                        value = v ? v : cJSON_CreateNull(), v = NULL;
                else
                        error = er ? er : error_obj("Error", "recorded failure"), er = NULL;
                cJSON_Delete(v);
                cJSON_Delete(er);
                const cJSON *args = cJSON_GetObjectItemCaseSensitive(line, "args");
                e->delivered = true;
                b->replay_next++;
                int rc = answer(l, e->id, e->op, cJSON_IsRaw(args) ? args->valuestring : "{}", value, error, err);
                cJSON_Delete(line);
                if (rc < 0)
                        return -1;
        }
        return 0;
}

static int replay_call(struct loop *l, int64_t id, const char *op, const char *args, struct err **err)
{
        struct broker *b = &l->b;
        struct replay_entry *e = replay_by_id(b->cfg->replay, id);
        if (!e)
                return end_with(b, BROKER_END_DIVERGED,
                                "replay diverged at call %lld: expected <end of journal>, got %s", (long long)id, op);
        if (strcmp(e->op, op) != 0)
                return end_with(b, BROKER_END_DIVERGED, "replay diverged at call %lld: expected %s, got %s",
                                (long long)id, e->op, op);
        cJSON *line = NULL;
        if (replay_entry_line(b->cfg->replay, e, &line, err) < 0)
                return -1;
        /* The args as text: what the worker sends now against what it sent
         * then (both compact). */
        const cJSON *wj = cJSON_GetObjectItemCaseSensitive(line, "args");
        const char *want = cJSON_IsRaw(wj) ? wj->valuestring : "{}";
        if (strcmp(want, args) != 0 && (replay_is_exact(b->cfg->replay) || !legacy_args_equal(want, args))) {
                char w[400], g[400], d[400];
                describe(e->op, want, w, sizeof(w));
                describe(op, args, g, sizeof(g));
                what_differs(want, args, d, sizeof(d));
                cJSON_Delete(line);
                return end_with(b, BROKER_END_DIVERGED, "replay diverged at call %lld: expected %s, got %s%s",
                                (long long)id, w, g, d);
        }
        cJSON_Delete(line);
        e->called = true;
        return replay_pump(l, err);
}

/* ---- incoming frames ---- */

static int on_call(struct loop *l, cJSON *j, const char *body, size_t len, struct err **err)
{
        struct broker *b = &l->b;
        const cJSON *idj = cJSON_GetObjectItemCaseSensitive(j, "id");
        const cJSON *opj = cJSON_GetObjectItemCaseSensitive(j, "op");
        const cJSON *args = cJSON_GetObjectItemCaseSensitive(j, "args");
        if (!cJSON_IsNumber(idj) || idj->valuedouble != (double)(int64_t)idj->valuedouble)
                return end_with(b, BROKER_END_PROTOCOL, "call frame without an integer \"id\"");
        int64_t id = (int64_t)idj->valuedouble;
        if (id != b->last_id + 1)
                return end_with(b, BROKER_END_PROTOCOL, "call id %lld out of order (expected %lld)", (long long)id,
                                (long long)(b->last_id + 1));
        if (!cJSON_IsString(opj) || !opj->valuestring[0] || strlen(opj->valuestring) > 128)
                return end_with(b, BROKER_END_PROTOCOL, "call %lld without a string \"op\" (1..128 bytes)",
                                (long long)id);
        if (args && !cJSON_IsObject(args))
                return end_with(b, BROKER_END_PROTOCOL, "call %lld: \"args\" must be an object", (long long)id);
        b->last_id = id;
        b->outstanding++;
        /* The args as the worker wrote them: what the journal records, what
         * replay compares, what handlers that carry values take (b->cur_args). */
        struct json_span raw;
        _cleanup_free_ char *text = json_object_get((struct json_span){ body, len }, "args", 4, &raw) == 1
                                            ? json_compact(raw, NULL)
                                            : strdup("{}");
        if (!text)
                return err_set(err, ENOMEM, "call %lld", (long long)id);
        cJSON *empty = NULL;
        if (!args)
                args = empty = cJSON_CreateObject();
        b->cur_args = (struct json_span){ text, strlen(text) };
        int r = b->cfg->replay ? replay_call(l, id, opj->valuestring, text, err)
                               : perform(l, id, opj->valuestring, args, text, err);
        b->cur_args = (struct json_span){ NULL, 0 };
        cJSON_Delete(empty);
        return r;
}

static enum broker_end kind_to_end(const char *kind)
{
        if (!kind || strcmp(kind, "error") == 0 || strcmp(kind, "no_entry") == 0)
                return BROKER_END_AGENT_ERROR;
        if (strcmp(kind, "cpu_limit") == 0)
                return BROKER_END_CPU_LIMIT;
        if (strcmp(kind, "never_settled") == 0)
                return BROKER_END_NEVER_SETTLED;
        if (strcmp(kind, "protocol") == 0)
                return BROKER_END_PROTOCOL;
        return BROKER_END_AGENT_ERROR;
}

static int on_done(struct loop *l, cJSON *j)
{
        struct broker *b = &l->b;
        const cJSON *ok = cJSON_GetObjectItemCaseSensitive(j, "ok");
        if (!cJSON_IsBool(ok))
                return end_with(b, BROKER_END_PROTOCOL, "done frame without a boolean \"ok\"");
        if (b->cfg->replay && cJSON_IsTrue(ok)) {
                struct replay_entry *e = replay_by_seq(b->cfg->replay, b->replay_next);
                if (e && !e->called)
                        return end_with(b, BROKER_END_DIVERGED,
                                        "replay diverged at call %lld: expected %s, got <end of run>",
                                        (long long)e->id, e->op);
        }
        if (cJSON_IsTrue(ok)) {
                cJSON *v = cJSON_DetachItemFromObjectCaseSensitive(j, "value");
                b->out->value = v ? v : cJSON_CreateNull();
                return end_with(b, BROKER_END_DONE_OK, "ok");
        }
        const cJSON *kind = cJSON_GetObjectItemCaseSensitive(j, "kind");
        cJSON *e = cJSON_DetachItemFromObjectCaseSensitive(j, "error");
        if (!cJSON_IsObject(e)) {
                cJSON_Delete(e);
                e = error_obj("Error", "the agent failed without an error object");
        }
        b->out->error = e;
        const cJSON *msg = cJSON_GetObjectItemCaseSensitive(e, "message");
        return end_with(b, kind_to_end(cJSON_IsString(kind) ? kind->valuestring : NULL), "%s",
                        cJSON_IsString(msg) ? msg->valuestring : "");
}

static int send_init(struct loop *l, struct err **err)
{
        const struct broker_config *c = l->b.cfg;
        cJSON *init = cJSON_CreateObject();
        cJSON_AddStringToObject(init, "type", "init");
        cJSON_AddStringToObject(init, "script", c->script);
        cJSON_AddStringToObject(init, "filename", c->filename);
        if (c->esm)
                cJSON_AddTrueToObject(init, "esm");
        cJSON_AddItemToObject(init, "input", c->input ? cJSON_Duplicate(c->input, 1) : cJSON_CreateNull());
        cJSON_AddStringToObject(init, "run_id", c->run_id ? c->run_id : "");
        if (c->env)
                cJSON_AddItemToObject(init, "env", cJSON_Duplicate(c->env, 1));
        cJSON *lim = cJSON_AddObjectToObject(init, "limits");
        cJSON_AddNumberToObject(lim, "js_deadline_ms", (double)c->js_deadline_ms);
        int r = send_json(l, init, err);
        cJSON_Delete(init);
        return r;
}

static int on_frame(struct loop *l, char *body, size_t len, struct err **err)
{
        struct broker *b = &l->b;
        cJSON *j = NULL;
        enum frame_type t;
        struct err *perr = NULL;
        if (frame_decode(body, len, &j, &t, &perr) < 0) {
                end_with(b, BROKER_END_PROTOCOL, "%s", err_msg(perr));
                err_free(perr);
                return 0;
        }
        int r = 0;
        if (!b->out->got_ready) {
                if (t != FRAME_READY)
                        r = end_with(b, BROKER_END_PROTOCOL, "expected a ready frame first, got %s",
                                     frame_type_name(t));
                else {
                        b->out->got_ready = true;
                        r = send_init(l, err);
                }
        } else if (t == FRAME_CALL) {
                r = on_call(l, j, body, len, err);
        } else if (t == FRAME_DONE) {
                r = on_done(l, j);
        } else {
                r = end_with(b, BROKER_END_PROTOCOL, "unexpected %s frame from the worker", frame_type_name(t));
        }
        cJSON_Delete(j);
        return r;
}

/* Flow control: whether to read the next call now.  Not while the worker
 * leaves max_queue bytes of answers unread, nor while max_calls calls are
 * in flight (replay keeps no state per waiting call, so there only the
 * queue counts).  The worker keeps reading answers while its own writes
 * wait (engine/transport.c), so stopping here never deadlocks the pair.
 * A worker that hung up is read to the end whatever the caps: it cannot
 * read answers any more, and its `done` may be in what is left. */
static bool reading(struct loop *l)
{
        struct broker *b = &l->b;
        if (l->peer_gone)
                return true;
        if (outq_held(&l->q) >= b->lim.max_queue) {
                broker_limit_report(b, LIMIT_QUEUE, NULL);
                return false;
        }
        if (!b->cfg->replay && b->npend >= b->lim.max_calls) {
                broker_limit_report(b, LIMIT_CALLS, NULL);
                return false;
        }
        return true;
}

static bool reader_has_bytes(const struct frame_reader *r)
{
        return r->off < r->len || r->body;
}

static int read_frames(struct loop *l, struct err **err)
{
        struct broker *b = &l->b;
        while (!b->finished && reading(l)) {
                char *body = NULL;
                size_t len = 0;
                struct err *rerr = NULL;
                int r = frame_reader_read(&b->reader, b->peer->frame_fd, &body, &len, &rerr);
                if (r == 0)
                        return 0;
                if (r < 0) {
                        if (err_code(rerr) == PROTO_E_EOF)
                                end_with(b, BROKER_END_EOF, "worker closed the frame channel before done");
                        else if (err_code(rerr) == PROTO_E_IO && rerr->errnum == ECONNRESET)
                                end_with(b, BROKER_END_EOF, "worker reset the frame channel before done");
                        else
                                end_with(b, BROKER_END_PROTOCOL, "%s", err_msg(rerr));
                        err_free(rerr);
                        return 0;
                }
                int hr = on_frame(l, body, len, err);
                free(body);
                if (hr < 0)
                        return -1;
                /* Nothing buffered: let poll say when more arrives, rather
                 * than a read(2) that would only return EAGAIN. */
                if (b->reader.off == b->reader.len && !b->reader.body)
                        return 0;
        }
        return 0;
}

/* ---- worker stderr ---- */

/* The worker aborted past its CPU budget (engine/lockdown.c). */
#define CPU_ABORT_MARK "chidori-worker: cpu limit reached"
#define SIGSYS_MARK "chidori-worker: blocked syscall "

/* A line "<marker><digits>" from the worker's own reporters (at most 7 digits). */
static bool marker_number(const struct errfwd *f, const char *marker, int *ret)
{
        size_t ml = strlen(marker);
        if (f->len <= ml || f->len > ml + 7 || memcmp(f->line, marker, ml) != 0)
                return false;
        int n = 0;
        for (size_t i = ml; i < f->len && f->line[i] >= '0' && f->line[i] <= '9'; i++)
                n = n * 10 + (f->line[i] - '0');
        *ret = n;
        return true;
}

static void errfwd_flush(struct loop *l)
{
        struct errfwd *f = &l->ef;
        if (f->len == 0)
                return;
        int nr;
        if (marker_number(f, SIGSYS_MARK, &nr)) {
                /* The worker's stage-2 SIGSYS reporter: remember, do not echo. */
                l->b.out->blocked_syscall = nr;
                f->len = 0;
                return;
        }
        if (f->len == sizeof(CPU_ABORT_MARK) - 1 && memcmp(f->line, CPU_ABORT_MARK, f->len) == 0) {
                l->b.out->cpu_limit_abort = true;
                f->len = 0;
                return;
        }
        if (marker_number(f, "chidori-worker: fatal signal ", &nr)) {
                l->b.out->fatal_signal = nr;
                f->len = 0;
                return;
        }
        /* What the worker writes is the box's text: escaped for the terminal. */
        text_fput_line(stderr, "[worker] ", f->line, f->len);
        fflush(stderr);
        f->len = 0;
}

static void read_stderr(struct loop *l, int fd)
{
        struct errfwd *f = &l->ef;
        char buf[4096];
        for (;;) {
                ssize_t n = read(fd, buf, sizeof(buf));
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0) {
                        if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) {
                                errfwd_flush(l);
                                f->eof = true;
                        }
                        return;
                }
                for (ssize_t i = 0; i < n; i++) {
                        if (buf[i] == '\n') {
                                if (f->len == 0)
                                        fprintf(stderr, "[worker]\n");
                                errfwd_flush(l);
                                continue;
                        }
                        if (f->len == sizeof(f->line))
                                errfwd_flush(l);
                        f->line[f->len++] = buf[i];
                }
        }
}

/* ---- the loop ---- */

/* The longest poll() sleep while a stop flag is watched (ms). */
#define STOP_POLL_MS 100

static void kill_worker(const struct broker_peer *p)
{
        if (p->engine_stop)
                atomic_store(p->engine_stop, 1);
        if (p->pidfd >= 0)
                syscall(SYS_pidfd_send_signal, p->pidfd, SIGKILL, NULL, 0);
        else if (p->pid > 0)
                kill(p->pid, SIGKILL);
}

int broker_run(const struct broker_config *cfg, const struct broker_peer *peer, struct broker_outcome *out,
               struct err **err)
{
        memset(out, 0, sizeof(*out));
        out->blocked_syscall = -1;
        struct loop l = { 0 };
        l.b.cfg = cfg;
        l.b.peer = peer;
        l.b.out = out;
        frame_reader_init(&l.b.reader);
        set_nonblock(peer->frame_fd);
        bool have_err = peer->stderr_fd >= 0;
        if (have_err)
                set_nonblock(peer->stderr_fd);
        double start = mono_ms();
        bool notify_gone = false;
        if (cfg->deadline_ms > 0)
                l.deadline_at = (cfg->deadline_from > 0 ? cfg->deadline_from : start) + (double)cfg->deadline_ms;
        l.b.deadline_at = l.deadline_at;
        broker_limits_init(&l.b);
        if (cfg->journal)
                journal_set_limit(cfg->journal, l.b.lim.max_journal);
        if (cfg->mem)
                memstore_set_max(cfg->mem, l.b.lim.max_memory_store);
        l.b.budget = (struct budget){ .deadline_at = l.deadline_at, .stop = cfg->stop };
        int rc = 0;
        struct pollfd *pfd = NULL;
        size_t pfd_cap = 0;
        while (!l.b.finished) {
                int timeout = -1;
                size_t nfd = 3, nhttp = 0;
                for (;;) {
                        if (pfd_cap < nfd) {
                                size_t cap = pfd_cap ? pfd_cap * 2 : 16;
                                while (cap < nfd)
                                        cap *= 2;
                                struct pollfd *np = realloc(pfd, cap * sizeof(*np));
                                if (!np) {
                                        rc = err_set(err, ENOMEM, "poll set");
                                        goto out;
                                }
                                pfd = np, pfd_cap = cap;
                        }
                        int t = -1;
                        size_t k = broker_http_fds(&l.b, pfd + 3, pfd_cap - 3, &t);
                        size_t kp = 3 + k <= pfd_cap ? broker_procs_fds(&l.b, pfd + 3 + k, pfd_cap - 3 - k, &t) : 0;
                        if (3 + k + kp <= pfd_cap) {
                                nfd = 3 + k + kp;
                                nhttp = k;
                                timeout = t;
                                break;
                        }
                        nfd = 3 + k + kp;
                }
                bool rd = reading(&l);
                pfd[0] = (struct pollfd){ .fd = peer->frame_fd,
                                          .events = (rd ? POLLIN : 0) | (outq_pending(&l.q) ? POLLOUT : 0) };
                pfd[1] = (struct pollfd){ .fd = have_err && !l.ef.eof ? peer->stderr_fd : -1, .events = POLLIN };
                pfd[2] = (struct pollfd){ .fd = notify_gone ? -1 : peer->notify_fd, .events = POLLIN };
                /* A stop signal first: checked on every turn, so a worker
                 * that keeps the frame socket busy cannot keep us from it. */
                if (cfg->stop && *cfg->stop) {
                        kill_worker(peer);
                        end_with(&l.b, BROKER_END_INTERRUPTED, "interrupted by signal %d", (int)*cfg->stop);
                        break;
                }
                /* The handler may run just before poll() (or on another
                 * thread): never sleep longer than STOP_POLL_MS unseen. */
                if (cfg->stop && (timeout < 0 || timeout > STOP_POLL_MS))
                        timeout = STOP_POLL_MS;
                if (l.deadline_at > 0) {
                        double left = l.deadline_at - mono_ms();
                        if (left <= 0) {
                                kill_worker(peer);
                                end_with(&l.b, BROKER_END_DEADLINE, "deadline exceeded (%ld ms)", cfg->deadline_ms);
                                break;
                        }
                        if (timeout < 0 || (int)left + 1 < timeout)
                                timeout = (int)left + 1;
                }
                /* Right after an answer the worker usually asks again within
                 * microseconds: look before sleeping, so the common round
                 * trip avoids a cross-CPU wake-up (docs/decisions.md #17). */
                int n = 0;
                if (l.just_answered) {
                        l.just_answered = false;
                        double until = mono_ms() + 0.05;
                        while ((n = poll(pfd, nfd, 0)) == 0 && mono_ms() < until)
                                ;
                }
                if (n == 0)
                        n = poll(pfd, nfd, timeout);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        rc = err_set(err, errno, "poll");
                        break;
                }
                if ((pfd[2].revents & (POLLHUP | POLLERR | POLLNVAL)) && !(pfd[2].revents & POLLIN))
                        notify_gone = true; /* the box has exited: stop watching the listener */
                if (pfd[2].revents & POLLIN) {
                        /* The stage-1 filter stopped a syscall: the calling
                         * thread waits in the kernel until we answer; we
                         * never do — the box dies with it. */
                        struct seccomp_notif req;
                        memset(&req, 0, sizeof(req));
                        if (ioctl(peer->notify_fd, SECCOMP_IOCTL_NOTIF_RECV, &req) == 0) {
                                out->blocked_syscall = req.data.nr;
                                kill_worker(peer);
                                end_with(&l.b, BROKER_END_SECCOMP, "blocked syscall %d", req.data.nr);
                                break;
                        }
                }
                if (pfd[1].revents)
                        read_stderr(&l, peer->stderr_fd);
                /* Completed transfers answer their calls (queued frames). */
                if (nfd > 3 || l.b.http || l.b.llm_http || l.b.procs) {
                        if (broker_http_perform(&l.b, nhttp ? pfd + 3 : NULL, nhttp, err) < 0 ||
                            broker_procs_perform(&l.b, nfd > 3 + nhttp ? pfd + 3 + nhttp : NULL, nfd - 3 - nhttp, err) < 0) {
                                rc = -1;
                                break;
                        }
                        if (l.b.async_err) {
                                rc = -1;
                                *err = l.b.async_err;
                                l.b.async_err = NULL;
                                break;
                        }
                }
                if (pfd[0].revents & (POLLHUP | POLLERR)) {
                        /* Hung up: what is queued can never be delivered;
                         * what it wrote before is still read, below. */
                        l.peer_gone = true;
                        outq_clear(&l.q);
                }
                if (!l.peer_gone && pfd[0].revents & POLLOUT && outq_flush(&l, err) < 0) {
                        rc = -1;
                        break;
                }
                /* Frames already in our buffer are read as soon as flow
                 * control allows: poll would not report them again. */
                if ((pfd[0].revents & (POLLIN | POLLHUP | POLLERR) || reader_has_bytes(&l.b.reader)) &&
                    read_frames(&l, err) < 0) {
                        rc = -1;
                        break;
                }
        }
out:
        free(pfd);
        broker_http_free(&l.b);
        broker_procs_free(&l.b);
        broker_fs_free(&l.b);
        /* Drain what the worker still has to say on stderr (it exits right
         * after its last frame), briefly. */
        if (have_err) {
                double until = mono_ms() + 250;
                while (!l.ef.eof) {
                        int left = (int)(until - mono_ms());
                        if (left <= 0)
                                break;
                        struct pollfd p = { .fd = peer->stderr_fd, .events = POLLIN };
                        if (poll(&p, 1, left) <= 0)
                                break;
                        read_stderr(&l, peer->stderr_fd);
                }
                errfwd_flush(&l);
        }
        out->wall_ms = mono_ms() - start;
        free_pending(&l.b);
        err_free(l.b.async_err);
        frame_reader_reset(&l.b.reader);
        outq_clear(&l.q);
        return rc;
}

void broker_outcome_clear(struct broker_outcome *o)
{
        cJSON_Delete(o->value);
        cJSON_Delete(o->error);
        free(o->message);
        memset(o, 0, sizeof(*o));
}
