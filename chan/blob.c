/* chan/blob.c — variable data of the channel: a bounded list of
 * NUL-terminated strings in a sealed memfd (see chan.h).  The receiver maps
 * it only after checking the seals (the sender can no longer change,
 * grow or shrink it) and the size. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "chan/chan.h"
#include "common/cleanup.h"

#define SEALS (F_SEAL_SEAL | F_SEAL_WRITE | F_SEAL_GROW | F_SEAL_SHRINK)
#define BLOB(...) err_setc(err, CHAN_E_PROTO, 0, "blob: " __VA_ARGS__)

int chan_blob_parse(const void *data, size_t size, size_t expect, const char **strs, struct err **err)
{
        struct chan_blob_hdr h;
        if (size < sizeof(h) || size > CHAN_BLOB_MAX)
                return BLOB("%zu bytes (expected %zu to %u)", size, sizeof(h), CHAN_BLOB_MAX);
        memcpy(&h, data, sizeof(h));
        if (h.magic != CHAN_BLOB_MAGIC || h.reserved)
                return BLOB("bad magic or reserved field");
        if ((size_t)h.bytes != size - sizeof(h))
                return BLOB("header says %u bytes of strings, the file has %zu", h.bytes, size - sizeof(h));
        if (h.nstrings != expect || expect > CHAN_BLOB_STRINGS)
                return BLOB("%u strings (expected %zu)", h.nstrings, expect);
        const char *p = (const char *)data + sizeof(h);
        const char *end = p + h.bytes;
        for (size_t i = 0; i < expect; i++) {
                const char *nul = memchr(p, '\0', (size_t)(end - p));
                if (!nul)
                        return BLOB("string %zu is not NUL-terminated", i);
                if ((size_t)(nul - p) > CHAN_STRING_MAX)
                        return BLOB("string %zu has %zu bytes (at most %u)", i, (size_t)(nul - p), CHAN_STRING_MAX);
                if (strs)
                        strs[i] = p;
                p = nul + 1;
        }
        if (p != end)
                return BLOB("%zu bytes after the last string", (size_t)(end - p));
        return 0;
}

int chan_blob_create(const char *name, const char *const *strs, size_t n, int *ret_fd, struct err **err)
{
        if (n > CHAN_BLOB_STRINGS)
                return err_set(err, E2BIG, "blob %s: %zu strings (at most %u)", name, n, CHAN_BLOB_STRINGS);
        size_t bytes = 0;
        for (size_t i = 0; i < n; i++) {
                size_t l = strlen(strs[i]);
                if (l > CHAN_STRING_MAX)
                        return err_set(err, E2BIG, "blob %s: string %zu has %zu bytes (at most %u)", name, i, l,
                                       CHAN_STRING_MAX);
                bytes += l + 1;
                if (bytes > CHAN_BLOB_MAX - sizeof(struct chan_blob_hdr))
                        return err_set(err, E2BIG, "blob %s: more than %u bytes", name, CHAN_BLOB_MAX);
        }
        _cleanup_free_ char *buf = malloc(sizeof(struct chan_blob_hdr) + bytes);
        if (!buf)
                return err_set(err, ENOMEM, "blob %s", name);
        struct chan_blob_hdr h = { .magic = CHAN_BLOB_MAGIC, .nstrings = (uint32_t)n, .bytes = (uint32_t)bytes };
        memcpy(buf, &h, sizeof(h));
        char *p = buf + sizeof(h);
        for (size_t i = 0; i < n; i++) {
                size_t l = strlen(strs[i]) + 1;
                memcpy(p, strs[i], l);
                p += l;
        }
        size_t total = sizeof(h) + bytes;
        _cleanup_close_ int fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
        if (fd < 0)
                return err_set(err, errno, "blob %s: memfd_create", name);
        for (size_t off = 0; off < total;) {
                ssize_t w = write(fd, buf + off, total - off);
                if (w < 0 && errno == EINTR)
                        continue;
                if (w <= 0)
                        return err_set(err, w < 0 ? errno : EIO, "blob %s: write", name);
                off += (size_t)w;
        }
        if (fcntl(fd, F_ADD_SEALS, SEALS) < 0)
                return err_set(err, errno, "blob %s: seal", name);
        *ret_fd = take_fd(&fd);
        return 0;
}

int chan_blob_map(int fd, size_t expect, struct chan_blob *ret, struct err **err)
{
        memset(ret, 0, sizeof(*ret));
        if (expect > CHAN_BLOB_STRINGS)
                return BLOB("%zu strings expected (at most %u)", expect, CHAN_BLOB_STRINGS);
        int seals = fcntl(fd, F_GET_SEALS);
        if (seals < 0)
                return err_setc(err, CHAN_E_PROTO, errno, "blob: not a memfd");
        if ((seals & SEALS) != SEALS)
                return BLOB("seals %#x (expected at least %#x: seal, write, grow, shrink)", (unsigned)seals,
                            (unsigned)SEALS);
        struct stat st;
        if (fstat(fd, &st) < 0)
                return err_setc(err, CHAN_E_IO, errno, "blob: fstat");
        if (!S_ISREG(st.st_mode) || st.st_size < (off_t)sizeof(struct chan_blob_hdr) || st.st_size > CHAN_BLOB_MAX)
                return BLOB("%lld bytes (expected %zu to %u)", (long long)st.st_size, sizeof(struct chan_blob_hdr),
                            CHAN_BLOB_MAX);
        size_t size = (size_t)st.st_size;
        void *map = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (map == MAP_FAILED)
                return err_setc(err, CHAN_E_IO, errno, "blob: mmap");
        const char **strs = calloc(expect ? expect : 1, sizeof(*strs));
        if (!strs) {
                munmap(map, size);
                return err_set(err, ENOMEM, "blob");
        }
        if (chan_blob_parse(map, size, expect, strs, err) < 0) {
                free(strs);
                munmap(map, size);
                return -1;
        }
        *ret = (struct chan_blob){ .map = map, .size = size, .strs = strs, .nstrings = expect };
        return 0;
}

void chan_blob_unmap(struct chan_blob *b)
{
        if (b->map)
                munmap(b->map, b->size);
        free(b->strs);
        memset(b, 0, sizeof(*b));
}
