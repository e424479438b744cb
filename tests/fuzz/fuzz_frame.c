#define _GNU_SOURCE
/* tests/fuzz/fuzz_frame.c — libFuzzer target for the frame decoder: the bytes
 * a hostile worker can send.  Exercises the incremental reader (through a
 * pipe, in arbitrary chunkings) and frame_decode. */
#include <cjson/cJSON.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "proto/proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        /* 1. decode the bytes as a body */
        cJSON *j = NULL;
        enum frame_type t;
        struct err *e = NULL;
        if (frame_decode((const char *)data, size, &j, &t, &e) == 0)
                cJSON_Delete(j);
        err_free(e);
        e = NULL;

        /* 2. feed them as a stream to the incremental reader */
        if (size > 65536)
                return 0;
        int p[2];
        if (pipe2(p, O_NONBLOCK) < 0)
                return 0;
        fcntl(p[1], F_SETPIPE_SZ, 1 << 17);
        if (write(p[1], data, size) != (ssize_t)size) {
                close(p[0]), close(p[1]);
                return 0;
        }
        close(p[1]);
        struct frame_reader r;
        frame_reader_init(&r);
        for (;;) {
                char *body = NULL;
                size_t len = 0;
                int rc = frame_reader_read(&r, p[0], &body, &len, &e);
                if (rc == 1) {
                        if (frame_decode(body, len, &j, &t, &e) == 0)
                                cJSON_Delete(j);
                        err_free(e);
                        e = NULL;
                        free(body);
                        continue;
                }
                break;
        }
        err_free(e);
        frame_reader_reset(&r);
        close(p[0]);
        return 0;
}
