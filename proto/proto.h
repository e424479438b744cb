/* proto/proto.h — the frame codec shared by the broker (parent) and the engine
 * worker (child).  See docs/protocol.md.
 *
 * A frame is a 4-byte big-endian length N (1 <= N <= FRAME_MAX_BYTES) followed
 * by N bytes of UTF-8 JSON, an object with a string member "type".
 *
 * Two layers:
 *  - raw transport: frame_write_raw / frame_read_raw (blocking fds) and the
 *    incremental struct frame_reader (non-blocking fds in the parent's poll
 *    loop, so a worker that stalls mid-frame cannot wedge the parent);
 *  - decoding: frame_decode parses a body and checks its type.  This is the
 *    one place the parent parses untrusted bytes from the box.
 */
#ifndef CHIDORI_PROTO_H
#define CHIDORI_PROTO_H

#include <stddef.h>
#include <stdint.h>

#include "common/err.h"

struct cJSON;

#define FRAME_MAX_BYTES (64u * 1024u * 1024u)
/* JSON values in one frame.  A parsed value costs the parent ~80 bytes
 * (a cJSON node and its allocation) for as little as 2 bytes of text
 * ("0,"), so a frame of 64 MiB could become ~2.5 GiB of tree; this bounds
 * one parsed frame near 170 MiB. */
#define FRAME_MAX_VALUES (2u * 1024u * 1024u)
#define FRAME_HEADER_BYTES 4u
#define PROTO_VERSION 1

enum frame_type {
        FRAME_READY,   /* worker -> parent: engine is up */
        FRAME_INIT,    /* parent -> worker: script, input, limits */
        FRAME_CALL,    /* worker -> parent: host call (id, op, args) */
        FRAME_RESULT,  /* parent -> worker: answer to a call */
        FRAME_DONE,    /* worker -> parent: final outcome */
        FRAME_TYPE_MAX
};

/* Error codes carried in struct err.code by this module. */
enum proto_error {
        PROTO_E_IO = 1,        /* read/write failed (errno set) */
        PROTO_E_EOF,           /* clean EOF before any byte of a frame */
        PROTO_E_SHORT_HEADER,  /* EOF inside the 4-byte header */
        PROTO_E_SHORT_BODY,    /* EOF inside the body */
        PROTO_E_OVERSIZE,      /* declared length > FRAME_MAX_BYTES */
        PROTO_E_EMPTY,         /* declared length 0 */
        PROTO_E_BAD_JSON,      /* body is not a JSON object */
        PROTO_E_NO_TYPE,       /* no string "type" member */
        PROTO_E_UNKNOWN_TYPE,  /* "type" names no known frame */
        PROTO_E_TOO_MANY,      /* more than FRAME_MAX_VALUES JSON values */
};

const char *frame_type_name(enum frame_type t);

/* Write one frame (header + body) to a blocking fd.  Handles partial writes
 * and EINTR.  Refuses len == 0 or len > FRAME_MAX_BYTES.  0 / -1. */
int frame_write_raw(int fd, const char *body, size_t len, struct err **err);

/* Read one frame from a blocking fd.  On success returns 0 and hands out a
 * malloc'd, NUL-terminated body in *ret_body (length *ret_len).  On clean EOF
 * at a frame boundary returns -1 with code PROTO_E_EOF. */
int frame_read_raw(int fd, char **ret_body, size_t *ret_len, struct err **err);

/* Incremental, buffered reader.  On a non-blocking fd it returns 0 when more
 * bytes are needed; on a blocking fd it simply waits.  Small frames (the
 * common case) come out of one read(2) together with their header; a frame
 * larger than the buffer is read straight into its own allocation. */
#define FRAME_READER_BUF 65536u
struct frame_reader {
        char *buf;       /* FRAME_READER_BUF bytes, allocated on first use */
        size_t off, len; /* unconsumed bytes are buf[off..len) */
        char *body;      /* a large frame in progress (header consumed) */
        size_t body_len;
        size_t body_have;
};

void frame_reader_init(struct frame_reader *r);
void frame_reader_reset(struct frame_reader *r);  /* frees buffers and a partial body */
/* Read what is available.  Returns 1 when a whole frame is ready (ownership
 * of the body passes to the caller through ret_body and ret_len, and the
 * reader is ready for the next frame), 0 when more bytes are needed (EAGAIN),
 * -1 on error or EOF (code tells which; PROTO_E_EOF only at a frame boundary). */
int frame_reader_read(struct frame_reader *r, int fd, char **ret_body, size_t *ret_len,
                      struct err **err);

/* An upper bound on the number of values cJSON would build from these
 * `len` bytes of JSON text (1 + commas + brackets and braces outside
 * strings), in one pass, without parsing: check it before a parse whose
 * size matters. */
size_t json_count_values(const char *text, size_t len);

/* Parse a frame body: must be one JSON value (proto/json.h: strict, lone
 * surrogate escapes allowed), an object with a known string "type",
 * holding at most FRAME_MAX_VALUES values (PROTO_E_TOO_MANY).
 * On success *ret_json owns the parsed tree (cJSON_Delete it); a done
 * frame's "value" in it is a raw node holding the worker's own text
 * (whitespace outside strings removed), so it is printed exactly as sent. */
int frame_decode(const char *body, size_t len, struct cJSON **ret_json,
                 enum frame_type *ret_type, struct err **err);

/* Serialise a JSON tree compactly and write it as one frame. */
int frame_write_json(int fd, const struct cJSON *json, struct err **err);

#endif
