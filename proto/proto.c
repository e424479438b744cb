/* proto/proto.c — frame codec.  See proto.h and docs/protocol.md. */
#define _GNU_SOURCE
#include "proto/proto.h"
#include "proto/json.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

static const char *const type_names[FRAME_TYPE_MAX] = {
        [FRAME_READY] = "ready",   [FRAME_INIT] = "init", [FRAME_CALL] = "call",
        [FRAME_RESULT] = "result", [FRAME_DONE] = "done",
};

const char *frame_type_name(enum frame_type t)
{
        return (unsigned)t < FRAME_TYPE_MAX ? type_names[t] : "?";
}

static void put_be32(uint8_t *p, uint32_t v)
{
        p[0] = (uint8_t)(v >> 24);
        p[1] = (uint8_t)(v >> 16);
        p[2] = (uint8_t)(v >> 8);
        p[3] = (uint8_t)v;
}

static uint32_t get_be32(const uint8_t *p)
{
        return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static int check_len(uint32_t len, struct err **err)
{
        if (len == 0)
                return err_setc(err, PROTO_E_EMPTY, 0, "frame has length 0 (expected 1..%u bytes)",
                                FRAME_MAX_BYTES);
        if (len > FRAME_MAX_BYTES)
                return err_setc(err, PROTO_E_OVERSIZE, 0,
                                "frame of %u bytes exceeds the %u-byte limit", len, FRAME_MAX_BYTES);
        return 0;
}

int frame_write_raw(int fd, const char *body, size_t len, struct err **err)
{
        if (len == 0 || len > FRAME_MAX_BYTES)
                return check_len(len > FRAME_MAX_BYTES ? FRAME_MAX_BYTES + 1u : 0, err);
        uint8_t hdr[FRAME_HEADER_BYTES];
        put_be32(hdr, (uint32_t)len);
        struct iovec iov[2] = {
                { .iov_base = hdr, .iov_len = sizeof(hdr) },
                { .iov_base = (void *)body, .iov_len = len },
        };
        struct iovec *v = iov;
        int cnt = 2;
        while (cnt > 0) {
                ssize_t n = writev(fd, v, cnt);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return err_setc(err, PROTO_E_IO, errno, "write frame");
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

/* Read exactly len bytes; returns bytes read before EOF (== len on success), -1 on error. */
static ssize_t read_full(int fd, void *buf, size_t len)
{
        size_t have = 0;
        while (have < len) {
                ssize_t n = read(fd, (char *)buf + have, len - have);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return -1;
                }
                if (n == 0)
                        break;
                have += (size_t)n;
        }
        return (ssize_t)have;
}

int frame_read_raw(int fd, char **ret_body, size_t *ret_len, struct err **err)
{
        uint8_t hdr[FRAME_HEADER_BYTES];
        ssize_t n = read_full(fd, hdr, sizeof(hdr));
        if (n < 0)
                return err_setc(err, PROTO_E_IO, errno, "read frame header");
        if (n == 0)
                return err_setc(err, PROTO_E_EOF, 0, "end of stream");
        if ((size_t)n < sizeof(hdr))
                return err_setc(err, PROTO_E_SHORT_HEADER, 0,
                                "short frame header: got %zd of %u bytes before end of stream", n,
                                FRAME_HEADER_BYTES);
        uint32_t len = get_be32(hdr);
        if (check_len(len, err) < 0)
                return -1;
        char *body = malloc((size_t)len + 1);
        if (!body)
                return err_setc(err, PROTO_E_IO, ENOMEM, "allocate %u-byte frame", len);
        n = read_full(fd, body, len);
        if (n < 0 || (size_t)n < len) {
                int e = errno;
                free(body);
                if (n < 0)
                        return err_setc(err, PROTO_E_IO, e, "read frame body");
                return err_setc(err, PROTO_E_SHORT_BODY, 0,
                                "short frame body: got %zd of %u bytes before end of stream", n, len);
        }
        body[len] = '\0';
        *ret_body = body;
        *ret_len = len;
        return 0;
}

void frame_reader_init(struct frame_reader *r)
{
        memset(r, 0, sizeof(*r));
}

void frame_reader_reset(struct frame_reader *r)
{
        free(r->buf);
        free(r->body);
        frame_reader_init(r);
}

static int eof_error(const struct frame_reader *r, struct err **err)
{
        size_t have = r->len - r->off;
        if (r->body)
                return err_setc(err, PROTO_E_SHORT_BODY, 0,
                                "short frame body: got %zu of %zu bytes before end of stream", r->body_have,
                                r->body_len);
        if (have == 0)
                return err_setc(err, PROTO_E_EOF, 0, "end of stream");
        if (have < FRAME_HEADER_BYTES)
                return err_setc(err, PROTO_E_SHORT_HEADER, 0,
                                "short frame header: got %zu of %u bytes before end of stream", have,
                                FRAME_HEADER_BYTES);
        uint32_t len = get_be32((const uint8_t *)r->buf + r->off);
        return err_setc(err, PROTO_E_SHORT_BODY, 0, "short frame body: got %zu of %u bytes before end of stream",
                        have - FRAME_HEADER_BYTES, len);
}

/* One read(2): > 0 bytes read, 0 would block (EAGAIN), -1 error or EOF
 * (err tells which). */
static ssize_t read_some(const struct frame_reader *r, int fd, void *dst, size_t want, struct err **err)
{
        for (;;) {
                ssize_t n = read(fd, dst, want);
                if (n > 0)
                        return n;
                if (n == 0)
                        return eof_error(r, err);
                if (errno == EINTR)
                        continue;
                if (errno == EAGAIN || errno == EWOULDBLOCK)
                        return 0;
                return err_setc(err, PROTO_E_IO, errno, "read frame");
        }
}

int frame_reader_read(struct frame_reader *r, int fd, char **ret_body, size_t *ret_len, struct err **err)
{
        if (!r->buf && !(r->buf = malloc(FRAME_READER_BUF)))
                return err_setc(err, PROTO_E_IO, ENOMEM, "allocate the frame buffer");
        for (;;) {
                if (r->body) {
                        /* A large frame: drain what is buffered, then read
                         * straight into the body. */
                        size_t take = r->len - r->off;
                        if (take > r->body_len - r->body_have)
                                take = r->body_len - r->body_have;
                        memcpy(r->body + r->body_have, r->buf + r->off, take);
                        r->off += take;
                        r->body_have += take;
                        if (r->body_have == r->body_len) {
                                r->body[r->body_len] = '\0';
                                *ret_body = r->body;
                                *ret_len = r->body_len;
                                r->body = NULL;
                                r->body_len = r->body_have = 0;
                                return 1;
                        }
                        ssize_t n = read_some(r, fd, r->body + r->body_have, r->body_len - r->body_have, err);
                        if (n <= 0)
                                return (int)n;
                        r->body_have += (size_t)n;
                        continue;
                }
                size_t have = r->len - r->off;
                if (have >= FRAME_HEADER_BYTES) {
                        uint32_t len = get_be32((const uint8_t *)r->buf + r->off);
                        if (check_len(len, err) < 0)
                                return -1;
                        if (have >= FRAME_HEADER_BYTES + (size_t)len) {
                                char *body = malloc((size_t)len + 1);
                                if (!body)
                                        return err_setc(err, PROTO_E_IO, ENOMEM, "allocate %u-byte frame", len);
                                memcpy(body, r->buf + r->off + FRAME_HEADER_BYTES, len);
                                body[len] = '\0';
                                r->off += FRAME_HEADER_BYTES + (size_t)len;
                                *ret_body = body;
                                *ret_len = len;
                                return 1;
                        }
                        if ((size_t)len + FRAME_HEADER_BYTES > FRAME_READER_BUF) {
                                r->body = malloc((size_t)len + 1);
                                if (!r->body)
                                        return err_setc(err, PROTO_E_IO, ENOMEM, "allocate %u-byte frame", len);
                                r->body_len = len;
                                r->body_have = 0;
                                r->off += FRAME_HEADER_BYTES;
                                continue;
                        }
                }
                /* Need more bytes: compact, then read as much as fits. */
                if (r->off > 0) {
                        memmove(r->buf, r->buf + r->off, r->len - r->off);
                        r->len -= r->off;
                        r->off = 0;
                }
                ssize_t n = read_some(r, fd, r->buf + r->len, FRAME_READER_BUF - r->len, err);
                if (n <= 0)
                        return (int)n;
                r->len += (size_t)n;
        }
}

size_t json_count_values(const char *text, size_t len)
{
        size_t n = 1;
        bool in_str = false;
        for (const char *p = text, *e = text + len; p < e; p++) {
                char c = *p;
                if (in_str) {
                        if (c == '\\')
                                p++;
                        else if (c == '"')
                                in_str = false;
                        continue;
                }
                if (c == '"')
                        in_str = true;
                else if (c == ',' || c == '[' || c == '{')
                        n++;
        }
        return n;
}

int frame_decode(const char *body, size_t len, cJSON **ret_json, enum frame_type *ret_type,
                 struct err **err)
{
        struct json_limits lim = { .max_values = FRAME_MAX_VALUES };
        struct json_error je;
        if (json_validate(body, len, &lim, &je, NULL) < 0) {
                if (je.code == JSON_E_VALUES)
                        return err_setc(err, PROTO_E_TOO_MANY, 0,
                                        "frame holds more than %u JSON values (the limit per frame; send fewer, "
                                        "e.g. a string instead of a long array)",
                                        FRAME_MAX_VALUES);
                if (je.code == JSON_E_NOMEM)
                        return err_setc(err, PROTO_E_IO, ENOMEM, "check a frame of %zu bytes", len);
                return err_setc(err, PROTO_E_BAD_JSON, 0, "frame is not valid JSON (%s at byte %zu of %zu)", je.what,
                                je.offset, len);
        }
        struct json_span all = { body, len }, t;
        if (json_kind_of(all) != JSON_OBJECT)
                return err_setc(err, PROTO_E_BAD_JSON, 0, "frame is JSON but not an object");
        if (json_object_get(all, "type", 4, &t) != 1 || json_kind_of(t) != JSON_STRING)
                return err_setc(err, PROTO_E_NO_TYPE, 0, "frame has no string \"type\" member");
        int type = -1;
        for (int i = 0; i < FRAME_TYPE_MAX && type < 0; i++)
                if (json_string_equals(t, type_names[i], strlen(type_names[i])))
                        type = i;
        if (type < 0) {
                char *name = NULL;
                json_string_decode(t, JSON_DECODE_REPLACE, &name, NULL);
                int r = err_setc(err, PROTO_E_UNKNOWN_TYPE, 0,
                                 "unknown frame type \"%.64s\" (expected ready, init, call, result or done)",
                                 name ? name : "?");
                free(name);
                return r;
        }
        /* The agent's result is carried as the worker wrote it, never
         * rebuilt (docs/decisions.md, "Values are carried as the worker's
         * JSON text"). */
        static const char *const done_raw[] = { "value", NULL };
        cJSON *j = json_to_cjson(all, type == FRAME_DONE ? done_raw : NULL, false);
        if (!j)
                return err_setc(err, PROTO_E_IO, ENOMEM, "decode a frame of %zu bytes", len);
        *ret_type = (enum frame_type)type;
        *ret_json = j;
        return 0;
}

int frame_write_json(int fd, const cJSON *json, struct err **err)
{
        char *s = cJSON_PrintUnformatted(json);
        if (!s)
                return err_setc(err, PROTO_E_IO, ENOMEM, "serialise frame");
        int r = frame_write_raw(fd, s, strlen(s), err);
        free(s);
        return r;
}
