/* common/util.h — small helpers shared by the parent-side modules. */
#ifndef CHIDORI_COMMON_UTIL_H
#define CHIDORI_COMMON_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"

/* Read a whole file (at most max bytes, else error).  *ret is NUL-terminated. */
int read_file(const char *path, size_t max, char **ret, size_t *ret_len, struct err **err);
/* The same from an open fd (not closed) until end of file; `path` names it
 * in messages ("stdin"). */
int read_fd(int fd, const char *path, size_t max, char **ret, size_t *ret_len, struct err **err);
/* A file another process may have opened for us (the monitor, for the
 * broker): fd > 0 reads it (read_fd, not closed); else errnum != 0 is the
 * error of that open, reported as read_file would; else read_file(path). */
int read_opened(const char *path, int fd, int errnum, size_t max, char **ret, size_t *ret_len, struct err **err);

/* Standard base64 with padding; malloc'd, NULL on OOM. */
char *base64_encode(const unsigned char *buf, size_t len);

/* Strict inverse of base64_encode: the standard alphabet, length a multiple
 * of 4, '=' only as the last one or two bytes, unused bits zero (so every
 * byte string has exactly one accepted encoding); no whitespace.  `len`
 * bytes of `s` (an embedded NUL is invalid).  On success *ret is malloc'd
 * (at least 1 byte, even when *ret_len is 0); caller frees.  Returns 0,
 * -EINVAL or -ENOMEM; *ret and *ret_len are written only on success. */
int base64_decode(const char *s, size_t len, unsigned char **ret, size_t *ret_len);

/* SHA-256 (FIPS 180-4). */
struct sha256 {
        uint32_t h[8];
        uint64_t len;
        unsigned char buf[64];
        size_t used;
};
void sha256_init(struct sha256 *s);
void sha256_update(struct sha256 *s, const void *data, size_t len);
void sha256_final(struct sha256 *s, unsigned char out[32]);
/* Lower-case hex of the digest of buf; out must hold 65 bytes. */
void sha256_hex(const void *buf, size_t len, char out[65]);

/* A byte count as a person reads it: "16 MiB", "1 GiB", "512 KiB" when it is
 * an exact multiple, else "1500000 bytes".  Always NUL-terminates. */
void format_size(uint64_t bytes, char *buf, size_t len);

/* A 64-bit hash of n bytes under a seed, for in-memory tables whose keys an
 * agent chooses: with a seed it cannot know (hash_seed(), random per
 * process) it cannot line its keys up in one chain. */
uint64_t hash_bytes(const void *p, size_t n, uint64_t seed);
uint64_t hash_seed(void);

/* s is a decimal integer >= 0 written without a sign, with nothing after
 * it: 0 and *ret set, else -1 (also on overflow of a long). */
int parse_nonneg(const char *s, long *ret);

/* d is a whole number an int64_t holds (-2^63 <= d < 2^63): true and *ret
 * set.  Use it before converting a JSON number: converting a double out of
 * that range (1e300, NaN) is undefined behaviour, not a failed round trip. */
bool double_to_int64(double d, int64_t *ret);

/* "SIGSEGV" for 11, "signal 77" for a number without a name (static
 * buffer). */
const char *signal_name(int sig);

/* Monotonic milliseconds (double). */
double mono_ms(void);
/* UTC time as "2026-11-29T20:11:36.123Z" into out (>= 32 bytes). */
void utc_iso8601(char *out, size_t size);

#endif
