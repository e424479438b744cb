/* common/digest.c — base64, SHA-256 and the seeded table hash (common/util.h):
 * encodings and digests of what the broker handles, not linked by the monitor. */
#define _GNU_SOURCE
#include "common/util.h"

#include <errno.h>
#include <stdbool.h>
#include <signal.h>
#include <stdint.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/cleanup.h"

char *base64_encode(const unsigned char *in, size_t len)
{
        static const char tbl[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        char *out = malloc(4 * ((len + 2) / 3) + 1), *p = out;
        if (!out)
                return NULL;
        size_t i = 0;
        for (; i + 2 < len; i += 3) {
                uint32_t v = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8 | in[i + 2];
                *p++ = tbl[v >> 18];
                *p++ = tbl[(v >> 12) & 63];
                *p++ = tbl[(v >> 6) & 63];
                *p++ = tbl[v & 63];
        }
        if (i < len) {
                uint32_t v = (uint32_t)in[i] << 16 | (i + 1 < len ? (uint32_t)in[i + 1] << 8 : 0);
                *p++ = tbl[v >> 18];
                *p++ = tbl[(v >> 12) & 63];
                *p++ = i + 1 < len ? tbl[(v >> 6) & 63] : '=';
                *p++ = '=';
        }
        *p = '\0';
        return out;
}

static int b64_digit(unsigned char c)
{
        if (c >= 'A' && c <= 'Z')
                return c - 'A';
        if (c >= 'a' && c <= 'z')
                return c - 'a' + 26;
        if (c >= '0' && c <= '9')
                return c - '0' + 52;
        if (c == '+')
                return 62;
        if (c == '/')
                return 63;
        return -1;
}

int base64_decode(const char *s, size_t len, unsigned char **ret, size_t *ret_len)
{
        if (len % 4)
                return -EINVAL;
        size_t pad = 0;
        if (len && s[len - 1] == '=')
                pad = s[len - 2] == '=' ? 2 : 1;
        size_t out_len = len / 4 * 3 - pad, o = 0;
        unsigned char *out = malloc(out_len ? out_len : 1);
        if (!out)
                return -ENOMEM;
        for (size_t i = 0; i < len; i += 4) {
                size_t real = i + 4 == len ? 4 - pad : 4;
                uint32_t w = 0;
                for (size_t k = 0; k < 4; k++) {
                        int d = k < real ? b64_digit((unsigned char)s[i + k]) : 0;
                        if (d < 0) {
                                free(out);
                                return -EINVAL;
                        }
                        w = w << 6 | (uint32_t)d;
                }
                /* the bits a shorter final group leaves unused must be 0 */
                if ((real == 3 && (w & 0xff)) || (real == 2 && (w & 0xffff))) {
                        free(out);
                        return -EINVAL;
                }
                unsigned char b[3] = { (unsigned char)(w >> 16), (unsigned char)(w >> 8), (unsigned char)w };
                for (size_t k = 0; k < real - 1; k++)
                        out[o++] = b[k];
        }
        *ret = out;
        *ret_len = out_len;
        return 0;
}

static const uint32_t K[64] = {
        0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
        0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
        0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
        0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
        0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
        0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
        0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
        0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

#define ROR(x, n) (((x) >> (n)) | ((x) << (32 - (n))))

static void sha256_block(struct sha256 *s, const unsigned char *p)
{
        uint32_t w[64];
        for (int i = 0; i < 16; i++)
                w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 | (uint32_t)p[4 * i + 2] << 8 |
                       p[4 * i + 3];
        for (int i = 16; i < 64; i++) {
                uint32_t s0 = ROR(w[i - 15], 7) ^ ROR(w[i - 15], 18) ^ (w[i - 15] >> 3);
                uint32_t s1 = ROR(w[i - 2], 17) ^ ROR(w[i - 2], 19) ^ (w[i - 2] >> 10);
                w[i] = w[i - 16] + s0 + w[i - 7] + s1;
        }
        uint32_t a = s->h[0], b = s->h[1], c = s->h[2], d = s->h[3], e = s->h[4], f = s->h[5], g = s->h[6],
                 h = s->h[7];
        for (int i = 0; i < 64; i++) {
                uint32_t t1 = h + (ROR(e, 6) ^ ROR(e, 11) ^ ROR(e, 25)) + ((e & f) ^ (~e & g)) + K[i] + w[i];
                uint32_t t2 = (ROR(a, 2) ^ ROR(a, 13) ^ ROR(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
                h = g, g = f, f = e, e = d + t1, d = c, c = b, b = a, a = t1 + t2;
        }
        s->h[0] += a, s->h[1] += b, s->h[2] += c, s->h[3] += d;
        s->h[4] += e, s->h[5] += f, s->h[6] += g, s->h[7] += h;
}

void sha256_init(struct sha256 *s)
{
        static const uint32_t iv[8] = { 0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                        0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19 };
        memcpy(s->h, iv, sizeof(iv));
        s->len = 0;
        s->used = 0;
}

void sha256_update(struct sha256 *s, const void *data, size_t len)
{
        const unsigned char *p = data;
        s->len += len;
        while (len > 0) {
                size_t take = 64 - s->used < len ? 64 - s->used : len;
                memcpy(s->buf + s->used, p, take);
                s->used += take, p += take, len -= take;
                if (s->used == 64) {
                        sha256_block(s, s->buf);
                        s->used = 0;
                }
        }
}

void sha256_final(struct sha256 *s, unsigned char out[32])
{
        uint64_t bits = s->len * 8;
        unsigned char pad = 0x80;
        sha256_update(s, &pad, 1);
        unsigned char zero = 0;
        while (s->used != 56)
                sha256_update(s, &zero, 1);
        unsigned char lenb[8];
        for (int i = 0; i < 8; i++)
                lenb[i] = (unsigned char)(bits >> (56 - 8 * i));
        sha256_update(s, lenb, 8);
        for (int i = 0; i < 8; i++) {
                out[4 * i] = (unsigned char)(s->h[i] >> 24);
                out[4 * i + 1] = (unsigned char)(s->h[i] >> 16);
                out[4 * i + 2] = (unsigned char)(s->h[i] >> 8);
                out[4 * i + 3] = (unsigned char)s->h[i];
        }
}

void sha256_hex(const void *buf, size_t len, char out[65])
{
        struct sha256 s;
        unsigned char d[32];
        sha256_init(&s);
        sha256_update(&s, buf, len);
        sha256_final(&s, d);
        for (int i = 0; i < 32; i++)
                snprintf(out + 2 * i, 3, "%02x", d[i]);
}

/* The final mix of MurmurHash3: every input bit reaches every output bit. */
static uint64_t fmix64(uint64_t h)
{
        h ^= h >> 33;
        h *= 0xff51afd7ed558ccdull;
        h ^= h >> 33;
        h *= 0xc4ceb9fe1a85ec53ull;
        return h ^ (h >> 33);
}

uint64_t hash_bytes(const void *p, size_t n, uint64_t seed)
{
        const unsigned char *s = p;
        uint64_t h = seed ^ (n * 0x9e3779b97f4a7c15ull);
        size_t i = 0;
        for (; i + 8 <= n; i += 8) {
                uint64_t w;
                memcpy(&w, s + i, 8);
                h = fmix64(h ^ w) + 0x9e3779b97f4a7c15ull;
        }
        uint64_t w = 0;
        memcpy(&w, s + i, n - i);
        return fmix64(h ^ w ^ ((uint64_t)(n - i) << 56));
}

uint64_t hash_seed(void)
{
        static uint64_t seed;
        if (!seed) {
                uint64_t v = 0;
                if (getrandom(&v, sizeof(v), GRND_NONBLOCK) != sizeof(v)) {
                        struct timespec ts;
                        clock_gettime(CLOCK_MONOTONIC, &ts);
                        v = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 32) ^ (uint64_t)getpid();
                }
                seed = v | 1;
        }
        return seed;
}
