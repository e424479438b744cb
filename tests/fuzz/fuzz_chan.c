/* tests/fuzz/fuzz_chan.c — libFuzzer target for the monitor's side of the
 * channel (chan/): what a compromised broker can send.  The first byte picks
 * the direction and the descriptor count; the rest is one message for
 * chan_decode(), and (from its 2nd byte on) a blob for chan_blob_parse()
 * with the string count taken from the message. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "chan/chan.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        if (size < 1)
                return 0;
        enum chan_dir dir = (data[0] & 0x80) ? CHAN_FROM_MONITOR : CHAN_FROM_BROKER;
        size_t nfds = data[0] & 0x7;
        union chan_msg m;
        struct err *e = NULL;
        if (chan_decode(data + 1, size - 1, nfds, dir, &m, &e) == 0) {
                /* What a decoded message promises must hold. */
                if (m.h.len != chan_size_of(m.h.type) || chan_fds_for(&m) != nfds)
                        abort();
                if (m.h.type == CHAN_OPEN_AGENT_FILE &&
                    (m.open_agent_file.path[0] == '/' || !memchr(m.open_agent_file.path, 0, CHAN_PATH_MAX)))
                        abort();
        }
        err_free(e);
        e = NULL;
        /* The same bytes as a blob: strings expected = the low 12 bits of
         * bytes 1-2 (0..4095). */
        size_t expect = size >= 3 ? (size_t)(((data[1] << 8) | data[2]) & 0xfff) : 0;
        const char **strs = calloc(expect + 1, sizeof(*strs));
        if (!strs)
                return 0;
        if (size > 3 && chan_blob_parse(data + 3, size - 3, expect, strs, &e) == 0) {
                for (size_t i = 0; i < expect; i++)
                        if (strlen(strs[i]) > CHAN_STRING_MAX)
                                abort();
        }
        err_free(e);
        free(strs);
        return 0;
}
