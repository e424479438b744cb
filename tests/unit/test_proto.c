#define _GNU_SOURCE
/* tests/unit/test_proto.c — the frame codec: round trips, every precise
 * error, partial reads and writes, the incremental reader. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <cjson/cJSON.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "proto/proto.h"

static void pipe_with(const void *bytes, size_t n, int *ret_rd)
{
        int p[2];
        assert_int_equal(pipe(p), 0);
        assert_int_equal(write(p[1], bytes, n), (ssize_t)n);
        close(p[1]);
        *ret_rd = p[0];
}

static void roundtrip(void **state)
{
        (void)state;
        int sv[2];
        assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
        const char *body = "{\"type\":\"ready\",\"protocol\":1}";
        assert_int_equal(frame_write_raw(sv[0], body, strlen(body), NULL), 0);
        char *got = NULL;
        size_t len = 0;
        assert_int_equal(frame_read_raw(sv[1], &got, &len, NULL), 0);
        assert_int_equal(len, strlen(body));
        assert_string_equal(got, body);
        cJSON *j = NULL;
        enum frame_type t;
        assert_int_equal(frame_decode(got, len, &j, &t, NULL), 0);
        assert_int_equal(t, FRAME_READY);
        cJSON_Delete(j);
        free(got);
        close(sv[0]), close(sv[1]);
}

static void expect_read_error(const void *bytes, size_t n, int code, const char *msg)
{
        int fd;
        pipe_with(bytes, n, &fd);
        char *got = NULL;
        size_t len = 0;
        struct err *e = NULL;
        assert_int_equal(frame_read_raw(fd, &got, &len, &e), -1);
        assert_int_equal(err_code(e), code);
        if (msg && !strstr(err_msg(e), msg))
                fail_msg("'%s' does not contain '%s'", err_msg(e), msg);
        err_free(e);
        close(fd);
}

static void precise_errors(void **state)
{
        (void)state;
        expect_read_error("", 0, PROTO_E_EOF, "end of stream");
        expect_read_error("\0\0", 2, PROTO_E_SHORT_HEADER, "got 2 of 4 bytes");
        expect_read_error("\0\0\0\x10{\"a\"", 8, PROTO_E_SHORT_BODY, "got 4 of 16 bytes");
        expect_read_error("\x04\0\0\x01", 4, PROTO_E_OVERSIZE, "exceeds the 67108864-byte limit");
        expect_read_error("\0\0\0\0", 4, PROTO_E_EMPTY, "length 0");
}

static void expect_decode_error(const char *body, int code, const char *msg)
{
        cJSON *j = NULL;
        enum frame_type t;
        struct err *e = NULL;
        assert_int_equal(frame_decode(body, strlen(body), &j, &t, &e), -1);
        assert_null(j);
        assert_int_equal(err_code(e), code);
        if (!strstr(err_msg(e), msg))
                fail_msg("'%s' does not contain '%s'", err_msg(e), msg);
        err_free(e);
}

static void decode_errors(void **state)
{
        (void)state;
        expect_decode_error("hello", PROTO_E_BAD_JSON, "not valid JSON");
        expect_decode_error("[1,2]", PROTO_E_BAD_JSON, "not an object");
        expect_decode_error("{\"type\":\"ready\"} x", PROTO_E_BAD_JSON, "trailing bytes");
        expect_decode_error("{\"a\":1}", PROTO_E_NO_TYPE, "no string \"type\"");
        expect_decode_error("{\"type\":7}", PROTO_E_NO_TYPE, "no string \"type\"");
        expect_decode_error("{\"type\":\"bogus\"}", PROTO_E_UNKNOWN_TYPE, "unknown frame type \"bogus\"");
        static const char *ok[] = { "ready", "init", "call", "result", "done" };
        for (int i = 0; i < 5; i++) {
                char b[64];
                snprintf(b, sizeof(b), "{\"type\":\"%s\"}", ok[i]);
                cJSON *j = NULL;
                enum frame_type t;
                assert_int_equal(frame_decode(b, strlen(b), &j, &t, NULL), 0);
                assert_int_equal((int)t, i);
                assert_string_equal(frame_type_name(t), ok[i]);
                cJSON_Delete(j);
        }
}

/* The count is an upper bound on cJSON's nodes that strings cannot fool;
 * a frame over FRAME_MAX_VALUES is refused before it is parsed. */
static void value_count(void **state)
{
        (void)state;
        static const struct {
                const char *json;
                size_t n;
        } cases[] = {
                { "1", 1 }, { "[]", 2 }, { "{}", 2 }, { "[1,2,3]", 4 }, { "{\"a\":1,\"b\":[1,2]}", 5 },
                { "\"a,b,[c]{\"", 1 }, { "[\"\\\",[\",1]", 3 }, { "[[[[]]]]", 5 },
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                size_t n = json_count_values(cases[i].json, strlen(cases[i].json));
                if (n != cases[i].n)
                        fail_msg("%s: %zu, want %zu", cases[i].json, n, cases[i].n);
                cJSON *j = cJSON_Parse(cases[i].json);
                assert_non_null(j);
                cJSON_Delete(j);
        }
        /* {"type":"call","a":[0,...]} holds 3 + zeros values: FRAME_MAX_VALUES fit, one more does not */
        for (int extra = 0; extra < 2; extra++) {
                size_t zeros = FRAME_MAX_VALUES - 3 + (size_t)extra;
                const char *head = "{\"type\":\"call\",\"a\":[";
                size_t hl = strlen(head), len = hl + 2 * zeros + 1;
                char *b = malloc(len + 1);
                memcpy(b, head, hl);
                for (size_t k = 0; k < zeros; k++)
                        b[hl + 2 * k] = '0', b[hl + 2 * k + 1] = ',';
                b[hl + 2 * zeros - 1] = ']'; /* the last ',' */
                b[hl + 2 * zeros] = '}';
                b[len] = '\0';
                cJSON *j = NULL;
                enum frame_type t;
                struct err *e = NULL;
                int r = frame_decode(b, len, &j, &t, &e);
                if (extra == 0) {
                        if (r < 0)
                                fail_msg("%s", err_msg(e));
                        cJSON_Delete(j);
                } else {
                        assert_int_equal(r, -1);
                        assert_int_equal(err_code(e), PROTO_E_TOO_MANY);
                        assert_string_equal(err_msg(e), "frame holds more than 2097152 JSON values (the limit per "
                                                        "frame; send fewer, e.g. a string instead of a long array)");
                        err_free(e);
                }
                free(b);
        }
}

static void write_refuses_bad_lengths(void **state)
{
        (void)state;
        struct err *e = NULL;
        assert_int_equal(frame_write_raw(1, "", 0, &e), -1);
        assert_int_equal(err_code(e), PROTO_E_EMPTY);
        err_free(e);
        e = NULL;
        assert_int_equal(frame_write_raw(1, "x", (size_t)FRAME_MAX_BYTES + 1, &e), -1);
        assert_int_equal(err_code(e), PROTO_E_OVERSIZE);
        err_free(e);
}

struct big {
        int fd;
        char *body;
        size_t len;
};

static void *writer(void *arg)
{
        struct big *b = arg;
        frame_write_raw(b->fd, b->body, b->len, NULL);
        return NULL;
}

/* A frame far larger than the socket buffer: partial writes and reads. */
static void large_frame_partial_io(void **state)
{
        (void)state;
        int sv[2];
        assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
        struct big b = { .fd = sv[0], .len = 8u << 20 };
        b.body = malloc(b.len);
        memset(b.body, 'a', b.len);
        b.body[0] = '"', b.body[b.len - 1] = '"';
        pthread_t th;
        pthread_create(&th, NULL, writer, &b);
        char *got = NULL;
        size_t len = 0;
        assert_int_equal(frame_read_raw(sv[1], &got, &len, NULL), 0);
        pthread_join(th, NULL);
        assert_int_equal(len, b.len);
        assert_memory_equal(got, b.body, b.len);
        free(got);
        free(b.body);
        close(sv[0]), close(sv[1]);
}

/* The incremental reader, fed one byte at a time through a non-blocking fd. */
static void incremental_reader(void **state)
{
        (void)state;
        int p[2];
        assert_int_equal(pipe2(p, O_NONBLOCK), 0);
        const char *frames = "\0\0\0\x0f{\"type\":\"done\"}\0\0\0\x10{\"type\":\"ready\"}";
        size_t total = 4 + 15 + 4 + 16;
        struct frame_reader r;
        frame_reader_init(&r);
        int got_frames = 0;
        for (size_t i = 0; i < total; i++) {
                assert_int_equal(write(p[1], frames + i, 1), 1);
                char *body = NULL;
                size_t len = 0;
                int rc = frame_reader_read(&r, p[0], &body, &len, NULL);
                assert_true(rc == 0 || rc == 1);
                if (rc == 1) {
                        got_frames++;
                        assert_string_equal(body, got_frames == 1 ? "{\"type\":\"done\"}" : "{\"type\":\"ready\"}");
                        free(body);
                }
        }
        assert_int_equal(got_frames, 2);
        close(p[1]);
        struct err *e = NULL;
        char *body = NULL;
        size_t len;
        assert_int_equal(frame_reader_read(&r, p[0], &body, &len, &e), -1);
        assert_int_equal(err_code(e), PROTO_E_EOF);
        err_free(e);
        frame_reader_reset(&r);
        close(p[0]);
}

static void incremental_reader_eof_midframe(void **state)
{
        (void)state;
        int fd;
        pipe_with("\0\0\0\x20{\"ty", 8, &fd);
        fcntl(fd, F_SETFL, O_NONBLOCK);
        struct frame_reader r;
        frame_reader_init(&r);
        struct err *e = NULL;
        char *body = NULL;
        size_t len;
        assert_int_equal(frame_reader_read(&r, fd, &body, &len, &e), -1);
        assert_int_equal(err_code(e), PROTO_E_SHORT_BODY);
        assert_non_null(strstr(err_msg(e), "got 4 of 32 bytes"));
        err_free(e);
        frame_reader_reset(&r);
        close(fd);
}

static void incremental_reader_oversize(void **state)
{
        (void)state;
        int fd;
        pipe_with("\xff\xff\xff\xff", 4, &fd);
        struct frame_reader r;
        frame_reader_init(&r);
        struct err *e = NULL;
        char *body = NULL;
        size_t len;
        assert_int_equal(frame_reader_read(&r, fd, &body, &len, &e), -1);
        assert_int_equal(err_code(e), PROTO_E_OVERSIZE);
        assert_null(r.body); /* nothing allocated for the body */
        frame_reader_reset(&r);
        err_free(e);
        close(fd);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(roundtrip),
                cmocka_unit_test(precise_errors),
                cmocka_unit_test(decode_errors),
                cmocka_unit_test(value_count),
                cmocka_unit_test(write_refuses_bad_lengths),
                cmocka_unit_test(large_frame_partial_io),
                cmocka_unit_test(incremental_reader),
                cmocka_unit_test(incremental_reader_eof_midframe),
                cmocka_unit_test(incremental_reader_oversize),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
