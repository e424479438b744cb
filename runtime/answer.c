/* runtime/answer.c — answering calls: the queue of frames for the worker,
 * the journal lines, calls answered later (broker_complete), and the
 * dispatch of one call through the gate to its handler. */
#define _GNU_SOURCE
#include <cjson/cJSON.h>
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "common/text.h"
#include "common/util.h"
#include "proto/json.h"
#include "runtime/evloop.h"
#include "runtime/journal.h"
#include "runtime/quota.h"
#include "runtime/session-internal.h"

/* The allocations of a queued frame beyond its bytes, roughly (a qframe,
 * two malloc headers): a flood of tiny answers costs more than its bytes. */
#define QFRAME_COST (sizeof(struct qframe) + 32)

/* ---- outgoing frames ----
 * The queue holds answers the worker has not read yet.  Its size is what
 * flow control looks at (reading(), below): while it holds max_queue bytes
 * or more, no further call is read, so it grows past the cap only by what
 * calls already in flight complete with (each bounded on its own). */

size_t session_outq_pending(const struct outq *q)
{
        return q->pending;
}

size_t session_outq_held(const struct outq *q)
{
        return q->held;
}

void session_outq_clear(struct outq *q)
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
int session_outq_flush(struct session *s, struct err **err)
{
        struct outq *q = &s->q;
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
                ssize_t w = sendmsg(s->frame_fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
                if (w < 0) {
                        if (errno == EINTR)
                                continue;
                        if (errno == EAGAIN)
                                return 0;
                        if (errno == EPIPE || errno == ECONNRESET) {
                                /* Gone: what is queued can never be read; what
                                 * it wrote before going is still read. */
                                s->peer_gone = true;
                                session_outq_clear(q);
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

int session_send_json(struct session *s, const cJSON *j, struct err **err)
{
        if (s->peer_gone)
                return 0; /* nobody will read it */
        char *text = cJSON_PrintUnformatted(j);
        if (!text)
                return err_set(err, ENOMEM, "serialise frame");
        return session_send_text(s, text, strlen(text), err);
}

int session_send_text(struct session *s, char *text, size_t len, struct err **err)
{
        if (s->peer_gone) {
                free(text);
                return 0;
        }
        if (len > FRAME_MAX_BYTES) {
                free(text);
                return err_set(err, 0, "frame of %zu bytes exceeds the %u-byte limit", len, FRAME_MAX_BYTES);
        }
        struct qframe *f = calloc(1, sizeof(*f));
        if (!f) {
                free(text);
                return err_set(err, ENOMEM, "queue frame");
        }
        f->hdr[0] = (unsigned char)(len >> 24), f->hdr[1] = (unsigned char)(len >> 16);
        f->hdr[2] = (unsigned char)(len >> 8), f->hdr[3] = (unsigned char)len;
        f->body = text;
        f->len = len;
        struct outq *q = &s->q;
        if (q->tail)
                q->tail->next = f;
        else
                q->head = f;
        q->tail = f;
        q->pending += 4 + len;
        q->held += QFRAME_COST + 4 + len;
        return session_outq_flush(s, err);
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
static int journal_full(struct session *s, int64_t id, const char *op, struct err **err)
{
        struct broker *b = &s->b;
        char text[256], detail[192];
        broker_limit_text(b, LIMIT_JOURNAL, text, sizeof(text));
        snprintf(detail, sizeof(detail), "call %lld (%.64s) could not be recorded", (long long)id, op);
        broker_limit_report(b, LIMIT_JOURNAL, detail);
        broker_end_with(b, SESSION_END_LIMIT, "%s: the run was stopped at call %lld, the first that could not be recorded",
                 text, (long long)id);
        cJSON *res = cJSON_CreateObject();
        cJSON_AddStringToObject(res, "type", "result");
        cJSON_AddNumberToObject(res, "id", (double)id);
        cJSON_AddBoolToObject(res, "ok", false);
        cJSON_AddItemToObject(res, "error", broker_error_obj("Error", text, "ELIMIT"));
        int r = session_send_json(s, res, err);
        cJSON_Delete(res);
        return r;
}

/* ---- the result frame of a scalar answer, without a cJSON tree ----
 * The same bytes as cJSON 1.7's print (its number and string rules, checked
 * against cJSON_PrintUnformatted over a corpus in tests/unit/test_session.c). */

static bool close_double(double a, double b)
{
        double m = fabs(a) > fabs(b) ? fabs(a) : fabs(b);
        return fabs(a - b) <= m * DBL_EPSILON;
}

static int number_text(double d, char buf[40])
{
        if (isnan(d) || isinf(d))
                return snprintf(buf, 40, "null");
        int n = snprintf(buf, 40, "%1.15g", d);
        double back;
        if (sscanf(buf, "%lg", &back) != 1 || !close_double(back, d))
                n = snprintf(buf, 40, "%1.17g", d);
        return n;
}

int session_result_text(int64_t id, const cJSON *v, char **ret, size_t *ret_len)
{
        char idbuf[40], num[40];
        const char *lit = NULL;
        size_t vlen;
        switch (v->type & 0xFF) {
        case cJSON_NULL: lit = "null"; break;
        case cJSON_True: lit = "true"; break;
        case cJSON_False: lit = "false"; break;
        case cJSON_Number: number_text(v->valuedouble, num), lit = num; break;
        case cJSON_Raw:
                if (!v->valuestring)
                        return 0;
                lit = v->valuestring;
                break;
        case cJSON_String:
                if (!v->valuestring)
                        return 0;
                break;
        default: return 0;
        }
        /* a string escaped as cJSON prints it: bytes >= 0x80 as they are */
        size_t slen = lit ? 0 : strlen(v->valuestring);
        vlen = lit ? strlen(lit) : json_string_encode_to(v->valuestring, slen, JSON_ENCODE_RAW, NULL);
        int idn = number_text((double)id, idbuf);
        static const char head[] = "{\"type\":\"result\",\"id\":", mid[] = ",\"ok\":true,\"value\":";
        size_t len = sizeof(head) - 1 + (size_t)idn + sizeof(mid) - 1 + vlen + 1;
        char *t = malloc(len + 1);
        if (!t)
                return -1;
        char *p = t;
        memcpy(p, head, sizeof(head) - 1), p += sizeof(head) - 1;
        memcpy(p, idbuf, (size_t)idn), p += idn;
        memcpy(p, mid, sizeof(mid) - 1), p += sizeof(mid) - 1;
        if (lit)
                memcpy(p, lit, vlen);
        else
                json_string_encode_to(v->valuestring, slen, JSON_ENCODE_RAW, p);
        p += vlen;
        *p++ = '}';
        *p = 0;
        *ret = t;
        *ret_len = len;
        return 1;
}

/* Deliver the answer to call `id`: frame to the worker, line in the journal.
 * args is the call's own JSON text (compact), journaled as it is.  Takes
 * ownership of value/error. */
int session_answer(struct session *s, int64_t id, const char *op, const char *args, cJSON *value,
                   cJSON *error, struct err **err)
{
        struct broker *b = &s->b;
        if (!error && !value)
                value = cJSON_CreateNull();
        b->seq++;
        b->out->effects++;
        if (b->outstanding)
                b->outstanding--;
        int r = 0;
        const struct session_journal *jr = &b->cfg->journal;
        if (jr->ops && !s->answer_recorded) {
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
                        cJSON_AddItemReferenceToObject(line, "value", value);
                r = jr->ops->result(jr->j, line, err);
                cJSON_Delete(line);
                if (r < 0 && err_code(*err) == JOURNAL_E_LIMIT) {
                        err_free(*err);
                        *err = NULL;
                        cJSON_Delete(error);
                        cJSON_Delete(value);
                        return journal_full(s, id, op, err);
                }
        }
        /* A scalar value (most answers): the frame's text directly. */
        char *text = NULL;
        size_t len = 0;
        int fast = r == 0 && !error ? session_result_text(id, value, &text, &len) : 0;
        if (fast < 0) {
                r = err_set(err, ENOMEM, "serialise frame");
        } else if (fast > 0) {
                r = session_send_text(s, text, len, err);
        } else if (r == 0) {
                cJSON *res = cJSON_CreateObject();
                cJSON_AddStringToObject(res, "type", "result");
                cJSON_AddNumberToObject(res, "id", (double)id);
                cJSON_AddBoolToObject(res, "ok", error == NULL);
                if (error)
                        cJSON_AddItemToObject(res, "error", error);
                else
                        cJSON_AddItemToObject(res, "value", value);
                error = value = NULL;
                r = session_send_json(s, res, err);
                cJSON_Delete(res);
        }
        cJSON_Delete(error);
        cJSON_Delete(value);
        return r;
}

void broker_journal_line(struct broker *b, const cJSON *line, bool final)
{
        const struct session_journal *jr = &b->cfg->journal;
        if (jr->ops)
                jr->ops->note(jr->j, line, final, NULL);
}

void broker_journal_note(struct broker *b, const char *kind, const char *message)
{
        if (!b->cfg->journal.ops)
                return;
        cJSON *line = cJSON_CreateObject();
        cJSON_AddStringToObject(line, "type", "note");
        cJSON_AddStringToObject(line, "kind", kind);
        cJSON_AddStringToObject(line, "message", message);
        /* Limit notes are written once per limit and run, so they may pass
         * the journal's cap (the one saying it is full must). */
        broker_journal_line(b, line, strcmp(kind, "limit") == 0);
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

void session_free_async(struct broker *b)
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

static void unanswered_line(struct broker *b, int64_t id, const char *op, const char *args_text)
{
        cJSON *line = cJSON_CreateObject();
        cJSON_AddStringToObject(line, "type", "unanswered");
        cJSON_AddNumberToObject(line, "id", (double)id);
        cJSON_AddStringToObject(line, "op", op);
        cJSON_AddItemToObject(line, "args", json_cjson_raw_ref(args_text ? args_text : "{}"));
        broker_journal_line(b, line, true);
        cJSON_Delete(line);
}

void session_journal_unanswered(struct session *s)
{
        struct broker *b = &s->b;
        if (!b->cfg->journal.ops || b->cfg->mode == SESSION_REPLAY)
                return;
        for (size_t i = 0; i < b->npend; i++)
                unanswered_line(b, b->pend[i].id, b->pend[i].op, b->pend[i].args_text);
        for (size_t i = 0; i < s->nparked; i++)
                unanswered_line(b, s->parked[i].id, s->parked[i].op, s->parked[i].args_text);
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
        struct session *s = b->s;
        for (size_t i = 0; i < b->npend; i++) {
                if (b->pend[i].id != id)
                        continue;
                struct pending_call pc = b->pend[i];
                b->pend[i] = b->pend[--b->npend];
                struct err *e = NULL;
                /* session_answer owns value and error, even when it fails
                 * (a journal write the store refused): only a session that
                 * had finished before frees them here. */
                bool finished = b->finished;
                if (!finished && session_answer(s, id, pc.op, pc.args_text, value, error, &e) < 0)
                        session_fail(s, e);
                else
                        err_free(e);
                if (finished) {
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

/* The answer of a cancelled call: the DOMException the worker turns into
 * what AbortController.abort() rejects with. */
static cJSON *abort_error(void)
{
        return broker_error_obj("AbortError", "This operation was aborted", "ABORT_ERR");
}

bool broker_cancel_call(struct broker *b, int64_t id)
{
        struct session *s = b->s;
        if (b->finished)
                return false;
        struct pending_call *pc = broker_pending(b, id);
        if (!pc) {
                struct err *e = NULL;
                int r = session_withdraw(s, id, abort_error(), &e);
                if (r < 0)
                        session_fail(s, e);
                return r > 0;
        }
        /* Stop the effect: its family knows how (the transfer, the timer). */
        const struct effect *e = s->cfg->effects->find(pc->op);
        const struct effect_table *fx = s->cfg->effects;
        for (size_t k = 0; e && k < fx->nfamilies; k++)
                if (strcmp(fx->families[k].name, e->family) == 0 && fx->families[k].cancel)
                        fx->families[k].cancel(b, id);
        if (s->sink->call)
                s->sink->call(s->sink->arg, s, id, pc->op, "cancelled");
        broker_complete(b, id, NULL, abort_error());
        return true;
}

/* Record the intent of an effect visible outside the box before it is
 * performed (journal.h).  A journal that cannot take it refuses the call. */
static int write_intent(struct session *s, const struct effect *e, int64_t id, const char *op,
                        const char *args_text, struct err **err)
{
        const struct session_journal *jr = &s->cfg->journal;
        if (!e->intent || !jr->ops || !jr->ops->intent)
                return 0;
        return jr->ops->intent(jr->j, id, op, args_text, err);
}

static void emit_call(struct session *s, int64_t id, const char *op, const char *decision)
{
        if (s->sink->call)
                s->sink->call(s->sink->arg, s, id, op, decision);
}

/* Run the handler of a call that passed its gate (now or after approval). */
int session_perform_gated(struct session *s, int64_t id, const struct effect *e, const char *op, const cJSON *args,
                          const char *args_text, struct err **err)
{
        struct broker *b = &s->b;
        cJSON *value = NULL;
        struct err *ferr = NULL;
        struct json_span saved = b->cur_args;
        b->cur_args = (struct json_span){ args_text, strlen(args_text) };
        b->cur_op = op;
        int r = 0;
        char qmsg[512];
        if (s->cfg->quota && !quota_take_call(s->cfg->quota, op, qmsg, sizeof(qmsg)))
                r = broker_quota_fail(b, qmsg, &ferr);
        if (r == 0)
                r = write_intent(s, e, id, op, args_text, &ferr);
        if (r == 0)
                r = e->fn(b, id, args, &value, &ferr);
        b->cur_op = NULL;
        b->cur_args = saved;
        if (r > 0)
                return add_pending(b, id, op, args, args_text, err);
        free(b->pending_scratch);
        b->pending_scratch = NULL;
        if (r < 0 && budget_over(&b->budget)) {
                /* The effect gave up because the run is ending (deadline,
                 * stop signal): no answer; the session ends the run next. */
                err_free(ferr);
                cJSON_Delete(value);
                return 0;
        }
        if (r < 0) {
                cJSON *eo = broker_error_obj("Error", err_msg(ferr),
                                             err_code(ferr) == BROKER_E_LIMIT ? "ELIMIT"
                                             : err_code(ferr) == BROKER_E_QUOTA ? "EQUOTA"
                                             : e->code_name                   ? e->code_name(err_code(ferr))
                                                                              : NULL);
                err_free(ferr);
                cJSON_Delete(value);
                return session_answer(s, id, op, args_text, NULL, eo, err);
        }
        return session_answer(s, id, op, args_text, value, NULL, err);
}

/* One call, live: find its row, ask the gate, perform, park or refuse. */
int session_perform(struct session *s, int64_t id, const char *op, const cJSON *args, const char *args_text,
                    struct err **err)
{
        struct broker *b = &s->b;
        const struct effect *e = s->cfg->effects->find(op);
        if (!e) {
                char msg[256];
                snprintf(msg, sizeof(msg), "unknown host call '%.64s': this chidori does not provide it", op);
                broker_sink_note(b, "chidori: ", msg);
                emit_call(s, id, op, "deny");
                return session_answer(s, id, op, args_text, NULL, error_obj("Error", msg), err);
        }
        if (e->gate != GATE_NONE) {
                char target[1100], msg[1024], reason[1024];
                if (!broker_gate_target(e, args, target, sizeof(target))) {
                        snprintf(msg, sizeof(msg), "%s: '%s' must be a string of at most %zu bytes", op,
                                 broker_gate_arg(e), sizeof(target) - 7);
                        emit_call(s, id, op, "deny");
                        return session_answer(s, id, op, args_text, NULL, error_obj("TypeError", msg), err);
                }
                enum gate_answer g = broker_gate(b, target, args, args_text, msg, sizeof(msg), reason, sizeof(reason));
                if (g == GATE_ANSWER_DENY) {
                        emit_call(s, id, op, "deny");
                        return session_answer(s, id, op, args_text, NULL, broker_error_obj("Error", msg, "EPOLICY"),
                                              err);
                }
                if (g == GATE_ANSWER_PENDING) {
                        emit_call(s, id, op, "pending");
                        return session_park(s, id, op, args, args_text, target, msg, reason, err);
                }
        }
        emit_call(s, id, op, "allow");
        return session_perform_gated(s, id, e, op, args, args_text, err);
}
