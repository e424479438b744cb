/* engine/transport.c — frames between the engine and the parent: composing
 * call frames, reading and checking result frames, and the queue of results
 * that arrived while a synchronous call was waiting.
 *
 * Incoming frames are parsed once, by JSC's JSON parser
 * (JSValueMakeFromJSONString); the checks on type/id/ok use the C API on the
 * parsed object, and the object itself is what the prelude receives. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "common/cleanup.h"
#include "engine/engine-internal.h"
#include "proto/proto.h"

/* A composed call frame larger than this is not kept around for reuse. */
#define OUT_BUF_KEEP (1u << 20)

void engine_fail_protocol(struct engine *e, const char *fmt, ...)
{
        if (e->end != ENGINE_RUNNING)
                return;
        va_list ap;
        va_start(ap, fmt);
        char *msg = NULL;
        if (vasprintf(&msg, fmt, ap) < 0)
                msg = NULL;
        va_end(ap);
        free(e->protocol_msg);
        e->protocol_msg = msg;
        e->end = ENGINE_PROTOCOL;
}

/* Takes ownership of err.  A transport failure is recorded even when the run
 * already ended for another reason: done cannot be delivered either way. */
void engine_fail_transport(struct engine *e, struct err *err)
{
        if (!e->transport_err)
                e->transport_err = err;
        else
                err_free(err);
        if (e->end == ENGINE_RUNNING)
                e->end = ENGINE_TRANSPORT;
}

/* Wait until fd is readable (the frame socket is non-blocking). */
static void wait_readable(int fd)
{
        struct pollfd p = { .fd = fd, .events = POLLIN };
        while (poll(&p, 1, -1) < 0 && errno == EINTR)
                ;
}

/* Write one frame without ever waiting on the parent while its answers wait
 * on us.  The parent stops reading our frames while it holds too many
 * answers we have not read (its flow control, runtime/frames.c); so when the
 * socket is full and answers arrive, they are read into the queue the loop
 * delivers from (in arrival order, as if they had come during a synchronous
 * call) until the frame is out.  Only answers are expected here: before
 * `init` nothing is outstanding and this is a plain write. */
int engine_write_frame_draining(struct engine *e, const char *body, size_t len, struct err **err)
{
        if (len == 0 || len > FRAME_MAX_BYTES)
                return frame_write_raw(e->out_fd, body, len, err); /* refuses with the usual message */
        uint8_t hdr[FRAME_HEADER_BYTES] = { (uint8_t)(len >> 24), (uint8_t)(len >> 16), (uint8_t)(len >> 8),
                                            (uint8_t)len };
        struct iovec iov[2] = { { .iov_base = hdr, .iov_len = sizeof(hdr) }, { .iov_base = (void *)body, .iov_len = len } };
        struct iovec *v = iov;
        int cnt = 2;
        while (cnt > 0) {
                ssize_t n = writev(e->out_fd, v, cnt);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0 && errno != EAGAIN)
                        return err_setc(err, PROTO_E_IO, errno, "write frame");
                if (n < 0) {
                        struct pollfd p[2] = { { .fd = e->out_fd, .events = POLLOUT },
                                               { .fd = e->in_fd, .events = e->outstanding ? POLLIN : 0 } };
                        if (poll(p, 2, -1) < 0 && errno != EINTR)
                                return err_setc(err, PROTO_E_IO, errno, "wait to write a frame");
                        if (p[1].revents & POLLIN || (e->in_fd == e->out_fd && p[0].revents & POLLIN)) {
                                uint64_t id;
                                JSValueRef frame;
                                if (engine_read_result(e, &id, &frame) < 0)
                                        return err_set(err, 0, "the run ended while a frame was being sent");
                                if (engine_queue_push(e, id, frame) < 0)
                                        return err_set(err, ENOMEM, "queue a result");
                        }
                        continue;
                }
                size_t left = (size_t)n;
                while (cnt > 0 && left >= v->iov_len) {
                        left -= v->iov_len;
                        v++;
                        cnt--;
                }
                if (cnt > 0) {
                        v->iov_base = (char *)v->iov_base + left;
                        v->iov_len -= left;
                }
        }
        return 0;
}

int engine_write_frame(struct engine *e, const char *body, size_t len)
{
        struct err *err = NULL;
        if (engine_frame_out(e, body, len, false, &err) < 0) {
                err_wrap(&err, "send frame to parent");
                engine_fail_transport(e, err);
                return -1;
        }
        return 0;
}

static int grow_call_state(struct engine *e, uint64_t id)
{
        if (id < e->call_state_cap)
                return 0;
        size_t cap = e->call_state_cap ? e->call_state_cap : 256;
        while (cap <= id)
                cap *= 2;
        uint8_t *p = realloc(e->call_state, cap);
        if (!p)
                return -1;
        memset(p + e->call_state_cap, CALL_UNUSED, cap - e->call_state_cap);
        e->call_state = p;
        e->call_state_cap = cap;
        return 0;
}

/* Compose {"type":"call","id":N,"op":"<op>","args":<args>} and send it.  The
 * op is one of the prelude's constants (checked by the caller); args is the
 * prelude's JSON.stringify output and is copied verbatim.  On failure sets
 * *exception for the JS caller and returns -1. */
int engine_send_call(struct engine *e, const char *op, JSStringRef args, uint64_t *ret_id,
                     JSValueRef *exception)
{
        uint64_t id = e->last_id + 1;
        char head[128];
        int hn = snprintf(head, sizeof(head), "{\"type\":\"call\",\"id\":%" PRIu64 ",\"op\":\"%s\",\"args\":",
                          id, op);
        if (hn < 0 || (size_t)hn >= sizeof(head)) {
                *exception = engine_make_error(e->ctx, "TypeError", "bad host call op");
                return -1;
        }
        size_t max = JSStringGetMaximumUTF8CStringSize(args);
        size_t need = (size_t)hn + max + 2;
        if (need > e->out_cap) {
                char *p = realloc(e->out_buf, need);
                if (!p) {
                        *exception = engine_make_error(e->ctx, "RangeError", "out of memory composing host call '%s'",
                                                       op);
                        return -1;
                }
                e->out_buf = p;
                e->out_cap = need;
        }
        memcpy(e->out_buf, head, (size_t)hn);
        size_t n = JSStringGetUTF8CString(args, e->out_buf + hn, max);
        size_t len = (size_t)hn + (n ? n - 1 : 0);
        e->out_buf[len++] = '}';
        e->out_buf[len] = '\0';
        if (len > FRAME_MAX_BYTES) {
                *exception = engine_make_error(e->ctx, "RangeError",
                                               "host call '%s' is %zu bytes, over the %u-byte frame limit", op,
                                               len, FRAME_MAX_BYTES);
                return -1;
        }
        if (grow_call_state(e, id) < 0) {
                *exception = engine_make_error(e->ctx, "RangeError", "out of memory recording host call");
                return -1;
        }
        int r = engine_write_frame(e, e->out_buf, len);
        if (e->out_cap > OUT_BUF_KEEP) {
                free(e->out_buf);
                e->out_buf = NULL;
                e->out_cap = 0;
        }
        if (r < 0) {
                *exception = engine_make_error(e->ctx, "Error", "host call '%s' failed: %s", op,
                                               err_msg(e->transport_err));
                return -1;
        }
        e->last_id = id;
        e->call_state[id] = CALL_OUTSTANDING;
        e->outstanding++;
        *ret_id = id;
        return 0;
}

/* Read one frame, parse it and check it is an object of the expected type.
 * Returns the parsed object, or NULL with the run ended (protocol or
 * transport). */
JSValueRef engine_read_json_frame(struct engine *e, const char *expect_type)
{
        _cleanup_free_ char *body = NULL;
        size_t len = 0;
        struct err *err = NULL;
        int got;
        /* Nothing buffered: wait first.  The worker reads when it has a call
         * out, and the answer is rarely there yet (the parent sleeps between
         * calls): a read first would mostly say EAGAIN, a system call more. */
        if (e->reader.off == e->reader.len && !e->reader.body)
                wait_readable(e->in_fd);
        while ((got = frame_reader_read(&e->reader, e->in_fd, &body, &len, &err)) == 0)
                wait_readable(e->in_fd); /* the socket is non-blocking (engine_write_frame_draining) */
        if (got < 0) {
                switch (err_code(err)) {
                case PROTO_E_OVERSIZE:
                case PROTO_E_EMPTY:
                        /* The stream is out of step, but the parent is still
                         * there to read why. */
                        engine_fail_protocol(e, "%s", err_msg(err));
                        err_free(err);
                        break;
                default:
                        err_wrap(&err, "read frame from parent");
                        engine_fail_transport(e, err);
                        break;
                }
                return NULL;
        }
        if (strlen(body) != len) {
                engine_fail_protocol(e, "frame contains a NUL byte");
                return NULL;
        }
        JSStringRef s = JSStringCreateWithUTF8CString(body);
        JSValueRef v = JSValueMakeFromJSONString(e->ctx, s);
        JSStringRelease(s);
        if (!v || !JSValueIsObject(e->ctx, v) || JSValueIsArray(e->ctx, v)) {
                engine_fail_protocol(e, "frame is not a JSON object (%zu bytes)", len);
                return NULL;
        }
        JSValueRef t = JSObjectGetProperty(e->ctx, (JSObjectRef)v, e->str_type, NULL);
        if (!t || !JSValueIsString(e->ctx, t)) {
                engine_fail_protocol(e, "frame has no string \"type\" member");
                return NULL;
        }
        JSStringRef ts = JSValueToStringCopy(e->ctx, t, NULL);
        bool match = JSStringIsEqualToUTF8CString(ts, expect_type);
        if (!match) {
                _cleanup_free_ char *tn = engine_js_to_utf8(ts, NULL);
                JSStringRelease(ts);
                engine_fail_protocol(e, "unexpected frame type \"%.64s\" (expected %s)", tn ? tn : "?",
                                     expect_type);
                return NULL;
        }
        JSStringRelease(ts);
        return v;
}

/* Read one result frame for an outstanding call and mark the call answered.
 * 0 with the id and the parsed frame ({type, id, ok, value|error}), or -1
 * with the run ended. */
int engine_read_result(struct engine *e, uint64_t *ret_id, JSValueRef *ret_frame)
{
        JSValueRef v = engine_read_json_frame(e, "result");
        if (!v)
                return -1;
        JSObjectRef o = (JSObjectRef)v;
        JSValueRef idv = JSObjectGetProperty(e->ctx, o, e->str_id, NULL);
        if (!idv || !JSValueIsNumber(e->ctx, idv)) {
                engine_fail_protocol(e, "result frame has no numeric \"id\"");
                return -1;
        }
        double d = JSValueToNumber(e->ctx, idv, NULL);
        if (!(d >= 1 && d <= (double)e->last_id && d == (double)(uint64_t)d)) {
                engine_fail_protocol(e, "result for unknown call id %.17g", d);
                return -1;
        }
        uint64_t id = (uint64_t)d;
        if (e->call_state[id] != CALL_OUTSTANDING) {
                engine_fail_protocol(e, "second result for call id %" PRIu64, id);
                return -1;
        }
        JSValueRef ok = JSObjectGetProperty(e->ctx, o, e->str_ok, NULL);
        if (!ok || !JSValueIsBoolean(e->ctx, ok)) {
                engine_fail_protocol(e, "result for call id %" PRIu64 " has no boolean \"ok\"", id);
                return -1;
        }
        e->call_state[id] = CALL_ANSWERED;
        e->outstanding--;
        *ret_id = id;
        *ret_frame = v;
        return 0;
}

int engine_queue_push(struct engine *e, uint64_t id, JSValueRef frame)
{
        if (e->queue_head + e->queue_len == e->queue_cap) {
                if (e->queue_head > 0) {
                        memmove(e->queue, e->queue + e->queue_head, e->queue_len * sizeof(*e->queue));
                        e->queue_head = 0;
                } else {
                        size_t cap = e->queue_cap ? e->queue_cap * 2 : 16;
                        struct engine_result *q = realloc(e->queue, cap * sizeof(*q));
                        if (!q)
                                return -1;
                        e->queue = q;
                        e->queue_cap = cap;
                }
        }
        JSValueProtect(e->ctx, frame);
        e->queue[e->queue_head + e->queue_len++] = (struct engine_result){ .id = id, .frame = frame };
        return 0;
}

/* The caller owns one protection of *ret_frame and must JSValueUnprotect it. */
bool engine_queue_pop(struct engine *e, uint64_t *ret_id, JSValueRef *ret_frame)
{
        if (e->queue_len == 0)
                return false;
        struct engine_result r = e->queue[e->queue_head++];
        if (--e->queue_len == 0)
                e->queue_head = 0;
        *ret_id = r.id;
        *ret_frame = r.frame;
        return true;
}

void engine_queue_clear(struct engine *e)
{
        uint64_t id;
        JSValueRef frame;
        while (engine_queue_pop(e, &id, &frame))
                JSValueUnprotect(e->ctx, frame);
        free(e->queue);
        e->queue = NULL;
        e->queue_cap = 0;
}
