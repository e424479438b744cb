/* runtime/frames.c — the frames the worker sends: ready, call, done; the
 * init frame; flow control; the worker's stderr, line by line. */
#define _GNU_SOURCE
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/util.h"
#include "proto/json.h"
#include "runtime/session-internal.h"

static int on_call(struct session *s, cJSON *j, const char *body, size_t len, struct err **err)
{
        struct broker *b = &s->b;
        const cJSON *idj = cJSON_GetObjectItemCaseSensitive(j, "id");
        const cJSON *opj = cJSON_GetObjectItemCaseSensitive(j, "op");
        const cJSON *args = cJSON_GetObjectItemCaseSensitive(j, "args");
        int64_t id;
        if (!cJSON_IsNumber(idj) || !double_to_int64(idj->valuedouble, &id))
                return broker_end_with(b, SESSION_END_PROTOCOL, "call frame without an integer \"id\"");
        if (id != b->last_id + 1)
                return broker_end_with(b, SESSION_END_PROTOCOL, "call id %lld out of order (expected %lld)", (long long)id,
                                (long long)(b->last_id + 1));
        if (!cJSON_IsString(opj) || !opj->valuestring[0] || strlen(opj->valuestring) > 128)
                return broker_end_with(b, SESSION_END_PROTOCOL, "call %lld without a string \"op\" (1..128 bytes)",
                                (long long)id);
        if (args && !cJSON_IsObject(args))
                return broker_end_with(b, SESSION_END_PROTOCOL, "call %lld: \"args\" must be an object", (long long)id);
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
        int r = 0;
        if (b->cfg->mode != SESSION_LIVE)
                r = session_replay_call(s, id, opj->valuestring, text, err);
        if (r == 0)
                r = session_perform(s, id, opj->valuestring, args, text, err);
        else if (r > 0)
                r = 0;
        b->cur_args = (struct json_span){ NULL, 0 };
        cJSON_Delete(empty);
        return r;
}

static enum session_end kind_to_end(const char *kind)
{
        if (!kind || strcmp(kind, "error") == 0 || strcmp(kind, "no_entry") == 0)
                return SESSION_END_AGENT_ERROR;
        if (strcmp(kind, "cpu_limit") == 0)
                return SESSION_END_CPU_LIMIT;
        if (strcmp(kind, "never_settled") == 0)
                return SESSION_END_NEVER_SETTLED;
        if (strcmp(kind, "protocol") == 0)
                return SESSION_END_PROTOCOL;
        return SESSION_END_AGENT_ERROR;
}

static int on_done(struct session *s, cJSON *j)
{
        struct broker *b = &s->b;
        const cJSON *ok = cJSON_GetObjectItemCaseSensitive(j, "ok");
        if (!cJSON_IsBool(ok))
                return broker_end_with(b, SESSION_END_PROTOCOL, "done frame without a boolean \"ok\"");
        if (b->cfg->mode != SESSION_LIVE && cJSON_IsTrue(ok)) {
                struct replay_entry *e = b->cfg->replay.ops->by_seq(b->cfg->replay.r, b->replay_next);
                if (e && !e->called)
                        return broker_end_with(b, SESSION_END_DIVERGED,
                                        "replay diverged at call %lld: expected %s, got <end of run>",
                                        (long long)e->id, e->op);
        }
        if (cJSON_IsTrue(ok)) {
                cJSON *v = cJSON_DetachItemFromObjectCaseSensitive(j, "value");
                b->out->value = v ? v : cJSON_CreateNull();
                return broker_end_with(b, SESSION_END_DONE_OK, "ok");
        }
        const cJSON *kind = cJSON_GetObjectItemCaseSensitive(j, "kind");
        if (cJSON_IsString(kind) && strcmp(kind->valuestring, "exit") == 0) {
                /* process.exit(n): the run ends with exit status n. */
                const cJSON *code = cJSON_GetObjectItemCaseSensitive(j, "exit");
                if (!cJSON_IsNumber(code) || code->valuedouble < 1 || code->valuedouble > 255 ||
                    code->valuedouble != (double)(int)code->valuedouble)
                        return broker_end_with(b, SESSION_END_PROTOCOL,
                                        "done frame of kind \"exit\" without an \"exit\" code from 1 to 255");
                b->out->exit_code = (int)code->valuedouble;
                return broker_end_with(b, SESSION_END_EXIT, "the agent called process.exit(%d)", b->out->exit_code);
        }
        cJSON *e = cJSON_DetachItemFromObjectCaseSensitive(j, "error");
        if (!cJSON_IsObject(e)) {
                cJSON_Delete(e);
                e = broker_error_obj("Error", "the agent failed without an error object", NULL);
        }
        b->out->error = e;
        const cJSON *msg = cJSON_GetObjectItemCaseSensitive(e, "message");
        return broker_end_with(b, kind_to_end(cJSON_IsString(kind) ? kind->valuestring : NULL), "%s",
                        cJSON_IsString(msg) ? msg->valuestring : "");
}

int session_send_init(struct session *s, struct err **err)
{
        const struct session_config *c = s->b.cfg;
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
        /* "real": timers are timer.wait calls; "virtual": they never wait. */
        cJSON_AddStringToObject(init, "time", c->virtual_time ? "virtual" : "real");
        int r = session_send_json(s, init, err);
        cJSON_Delete(init);
        return r;
}

static int on_frame(struct session *s, char *body, size_t len, struct err **err)
{
        struct broker *b = &s->b;
        cJSON *j = NULL;
        enum frame_type t;
        struct err *perr = NULL;
        if (frame_decode(body, len, &j, &t, &perr) < 0) {
                broker_end_with(b, SESSION_END_PROTOCOL, "%s", err_msg(perr));
                err_free(perr);
                return 0;
        }
        int r = 0;
        if (!b->out->got_ready) {
                if (t != FRAME_READY)
                        r = broker_end_with(b, SESSION_END_PROTOCOL, "expected a ready frame first, got %s",
                                     frame_type_name(t));
                else
                        b->out->got_ready = true; /* init went with the channel (session_send_init) */
        } else if (t == FRAME_CALL) {
                r = on_call(s, j, body, len, err);
        } else if (t == FRAME_DONE) {
                r = on_done(s, j);
        } else {
                r = broker_end_with(b, SESSION_END_PROTOCOL, "unexpected %s frame from the worker", frame_type_name(t));
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
bool session_reading(struct session *s)
{
        struct broker *b = &s->b;
        if (s->peer_gone)
                return true;
        if (s->pausing)
                return false;
        if (session_outq_held(&s->q) >= b->lim.max_queue) {
                broker_limit_report(b, LIMIT_QUEUE, NULL);
                return false;
        }
        /* Pending timers are bounded by --max-timers instead (effects/time/). */
        if (b->cfg->mode != SESSION_REPLAY && b->npend - b->ntimers + s->nparked >= b->lim.max_calls) {
                broker_limit_report(b, LIMIT_CALLS, NULL);
                return false;
        }
        return true;
}

bool session_reader_has_bytes(const struct frame_reader *r)
{
        return r->off < r->len || r->body;
}

int session_read_frames(struct session *s, struct err **err)
{
        struct broker *b = &s->b;
        while (!b->finished && session_reading(s)) {
                char *body = NULL;
                size_t len = 0;
                struct err *rerr = NULL;
                int r = frame_reader_read(&b->reader, s->frame_fd, &body, &len, &rerr);
                if (r == 0)
                        return 0;
                if (r < 0) {
                        if (err_code(rerr) == PROTO_E_EOF)
                                broker_end_with(b, SESSION_END_EOF, "worker closed the frame channel before done");
                        else if (err_code(rerr) == PROTO_E_IO && rerr->errnum == ECONNRESET)
                                broker_end_with(b, SESSION_END_EOF, "worker reset the frame channel before done");
                        else
                                broker_end_with(b, SESSION_END_PROTOCOL, "%s", err_msg(rerr));
                        err_free(rerr);
                        return 0;
                }
                int hr = on_frame(s, body, len, err);
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

void session_errfwd_flush(struct session *s)
{
        struct errfwd *f = &s->ef;
        if (f->len == 0)
                return;
        int nr;
        if (marker_number(f, SIGSYS_MARK, &nr)) {
                /* The worker's stage-2 SIGSYS reporter: remember, do not echo. */
                s->b.out->blocked_syscall = nr;
                f->len = 0;
                return;
        }
        if (f->len == sizeof(CPU_ABORT_MARK) - 1 && memcmp(f->line, CPU_ABORT_MARK, f->len) == 0) {
                s->b.out->cpu_limit_abort = true;
                f->len = 0;
                return;
        }
        if (marker_number(f, "chidori-worker: fatal signal ", &nr)) {
                s->b.out->fatal_signal = nr;
                f->len = 0;
                return;
        }
        /* What the worker writes is the box's text: the sink escapes it. */
        if (s->sink->note)
                s->sink->note(s->sink->arg, s, "[worker] ", f->line, f->len);
        f->len = 0;
}

void session_read_stderr(struct session *s, int fd)
{
        struct errfwd *f = &s->ef;
        char buf[4096];
        for (;;) {
                ssize_t n = read(fd, buf, sizeof(buf));
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0) {
                        if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) {
                                session_errfwd_flush(s);
                                f->eof = true;
                        }
                        return;
                }
                for (ssize_t i = 0; i < n; i++) {
                        if (buf[i] == '\n') {
                                if (f->len == 0 && s->sink->note)
                                        s->sink->note(s->sink->arg, s, "[worker]", "", 0);
                                session_errfwd_flush(s);
                                continue;
                        }
                        if (f->len == sizeof(f->line))
                                session_errfwd_flush(s);
                        f->line[f->len++] = buf[i];
                }
        }
}
