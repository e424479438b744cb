/* tests/fuzz/fuzz_journal.c — libFuzzer target for the journal reader behind
 * `chidori replay` and serve's resume (runtime/journal.c): a journal file is
 * whatever is on disk, so every byte of it is hostile.  The input is the
 * file (a memfd, read through replay_open_fd as the broker reads the
 * descriptor the monitor opened), once without a size limit and once with a
 * limit under its size.  Every entry loaded must be found again by id and
 * its line read back.  Crashes on a broken invariant, not only on memory
 * errors. */
#define _GNU_SOURCE
#include <cjson/cJSON.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common/err.h"
#include "runtime/journal.h"

static int memfd_of(const uint8_t *data, size_t size)
{
        int fd = memfd_create("journal", MFD_CLOEXEC);
        if (fd < 0)
                abort();
        if (size && write(fd, data, size) != (ssize_t)size)
                abort();
        if (lseek(fd, 0, SEEK_SET) != 0)
                abort();
        return fd;
}

static void read_all(struct replay *r, size_t size)
{
        size_t n = replay_count(r);
        if (n > size)
                abort(); /* an entry per line at most */
        for (size_t i = 0; i < n; i++) {
                struct replay_entry *e = replay_by_seq(r, i);
                if (!e || e->seq != i + 1 || !e->op)
                        abort();
                struct replay_entry *byid = replay_by_id(r, e->id);
                if (byid != e)
                        abort(); /* ids are unique: the index finds this one */
                if ((uint64_t)e->off + e->len > size)
                        abort();
                cJSON *line = NULL;
                struct err *err = NULL;
                if (replay_entry_line(r, e, &line, &err) == 0) {
                        const cJSON *id = cJSON_GetObjectItemCaseSensitive(line, "id");
                        if (!cJSON_IsNumber(id) || id->valuedouble != (double)e->id)
                                abort();
                        cJSON_Delete(line);
                } else if (!e->unanswered && !e->interrupted) {
                        abort(); /* a call line that loaded reads back */
                }
                err_free(err);
        }
        if (replay_by_seq(r, n))
                abort();
        (void)replay_header(r);
        (void)replay_end(r);
        /* the same through the interface the session uses */
        if (replay_file_ops.by_seq(r, 0) != (n ? replay_by_seq(r, 0) : NULL))
                abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        for (int pass = 0; pass < 2; pass++) {
                uint64_t max = pass == 0 ? 0 : (size > 1 ? size - 1 : 1);
                struct replay *r = NULL;
                struct err *err = NULL;
                if (replay_open_fd(memfd_of(data, size), "fuzz.jsonl", max, NULL, &r, &err) == 0) {
                        if (pass == 1 && size > 1)
                                abort(); /* over the limit, yet loaded */
                        read_all(r, size);
                        replay_free(r);
                } else if (!err_msg(err) || !strstr(err_msg(err), "fuzz.jsonl")) {
                        abort(); /* every error names the file */
                }
                err_free(err);
                if (size <= 1)
                        break;
        }
        return 0;
}
