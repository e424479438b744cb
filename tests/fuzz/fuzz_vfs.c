/* tests/fuzz/fuzz_vfs.c — libFuzzer target for effects/fs/vfs.c: random
 * sequences of fs.* calls, as a hostile worker could send them.
 *
 * The input is a small program.  The first bytes pick tight limits (so the
 * caps, depth and name rules are reached quickly); then each step is an op
 * byte followed by operands.  Paths are built from a small alphabet of
 * components ("a", "b", "..", ".", "", a long name...) so that calls hit the
 * same nodes, plus an occasional raw byte string.  After every call the
 * tree is checked with vfs_verify(), and a failed call must leave the
 * digest unchanged.  Any violated invariant aborts (a finding).
 */
#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/err.h"
#include "common/util.h"
#include "effects/fs/vfs.h"

struct input {
        const uint8_t *p;
        size_t n;
};

static unsigned byte(struct input *in)
{
        if (!in->n)
                return 0;
        in->n--;
        return *in->p++;
}

static const char *const COMPONENTS[] = {
        "a", "b", "c", "tmp", "..", ".", "", "a.txt", "\xc3\xa9",
        "dddddddddddddddddddddddddddddddddddddddd", /* 40 bytes: over small name limits */
        "...", "%2e%2e", " ",
};

/* A path of up to 7 components, or raw bytes. */
static void path(struct input *in, char *out, size_t size)
{
        unsigned h = byte(in);
        size_t o = 0;
        if (h >= 0xf0) { /* raw bytes up to the next 0 */
                unsigned len = h & 0x0f;
                for (unsigned i = 0; i < len && o + 1 < size; i++) {
                        char c = (char)byte(in);
                        out[o++] = c ? c : '/';
                }
                out[o] = '\0';
                return;
        }
        if (h & 1)
                out[o++] = '/';
        unsigned n = (h >> 1) & 7;
        for (unsigned i = 0; i < n; i++) {
                const char *c = COMPONENTS[byte(in) % (sizeof(COMPONENTS) / sizeof(*COMPONENTS))];
                size_t l = strlen(c);
                if (o + l + 2 >= size)
                        break;
                memcpy(out + o, c, l);
                o += l;
                if (i + 1 < n || (h & 0x80))
                        out[o++] = '/';
        }
        out[o] = '\0';
}

static void add_data(struct input *in, cJSON *args)
{
        unsigned len = byte(in);
        if (len > 200) /* sometimes a large file */
                len = (len - 200) * 40;
        unsigned char *buf = malloc(len ? len : 1);
        unsigned fill = byte(in);
        for (unsigned i = 0; i < len; i++)
                buf[i] = (unsigned char)(fill + i);
        char *b64 = base64_encode(buf, len);
        if (byte(in) == 0xff && b64[0]) /* now and then, broken base64 */
                b64[0] = '=';
        cJSON_AddStringToObject(args, "data_base64", b64);
        free(b64);
        free(buf);
}

static void maybe_bool(struct input *in, cJSON *args, const char *key)
{
        unsigned b = byte(in) % 4;
        if (b == 1)
                cJSON_AddTrueToObject(args, key);
        else if (b == 2)
                cJSON_AddFalseToObject(args, key);
        else if (b == 3)
                cJSON_AddNumberToObject(args, key, 1); /* wrong type */
}

static void check(struct vfs *v, uint64_t *digest)
{
        struct err *e = NULL;
        if (vfs_verify(v, digest, &e) < 0) {
                fprintf(stderr, "vfs_verify: %s\n", err_msg(e));
                abort();
        }
}

static const char *const OPS[] = {
        "readFile", "writeFile", "appendFile", "exists", "access", "mkdir", "readdir", "stat",
        "lstat",    "unlink",    "rmdir",      "rm",     "rename", "copyFile", "chmod",
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        struct input in = { data, size };
        struct vfs_limits lim = {
                .max_total_bytes = 200 + byte(&in) * 64,
                .max_file_bytes = 1 + byte(&in) * 16,
                .max_nodes = 2 + byte(&in) % 64,
                .max_path = 8 + byte(&in),
                .max_name = 3 + byte(&in) % 48,
                .max_depth = 1 + byte(&in) % 16,
        };
        struct vfs *v = NULL;
        struct err *e = NULL;
        if (vfs_new(&lim, &v, &e) < 0) {
                err_free(e);
                return 0;
        }
        for (int steps = 0; in.n && steps < 256; steps++) {
                const char *op = OPS[byte(&in) % (sizeof(OPS) / sizeof(*OPS))];
                cJSON *args = cJSON_CreateObject();
                char p1[512], p2[512];
                path(&in, p1, sizeof(p1));
                bool two = strcmp(op, "rename") == 0 || strcmp(op, "copyFile") == 0;
                if (two) {
                        path(&in, p2, sizeof(p2));
                        cJSON_AddStringToObject(args, "from", p1);
                        cJSON_AddStringToObject(args, "to", p2);
                        if (byte(&in) & 1)
                                cJSON_AddNumberToObject(args, "flags", byte(&in) % 3);
                } else {
                        cJSON_AddStringToObject(args, "path", p1);
                }
                if (strcmp(op, "writeFile") == 0 || strcmp(op, "appendFile") == 0) {
                        add_data(&in, args);
                        static const char *const flags[] = { NULL, "w", "wx", "a", "ax", "r" };
                        const char *f = flags[byte(&in) % 6];
                        if (f)
                                cJSON_AddStringToObject(args, "flag", f);
                }
                if (strcmp(op, "mkdir") == 0 || strcmp(op, "rm") == 0)
                        maybe_bool(&in, args, "recursive");
                if (strcmp(op, "rm") == 0)
                        maybe_bool(&in, args, "force");
                if (strcmp(op, "readdir") == 0)
                        maybe_bool(&in, args, "withFileTypes");
                if (strcmp(op, "mkdir") == 0 || strcmp(op, "writeFile") == 0 || strcmp(op, "access") == 0) {
                        unsigned m = byte(&in);
                        if (m & 1)
                                cJSON_AddNumberToObject(args, "mode", strcmp(op, "access") == 0 ? m % 9 : m * 17);
                }

                uint64_t before, after;
                check(v, &before);
                cJSON *ret = NULL;
                int r = vfs_call(v, op, args, &ret, &e);
                check(v, &after);
                if (r < 0) {
                        if (ret || !e || !e->msg || !vfs_error_name(e->code)[0]) {
                                fprintf(stderr, "fs.%s failed without a proper error\n", op);
                                abort();
                        }
                        if (before != after) {
                                fprintf(stderr, "the failed fs.%s changed the VFS: %s\n", op, err_msg(e));
                                abort();
                        }
                } else if (!ret) {
                        fprintf(stderr, "fs.%s succeeded without a value\n", op);
                        abort();
                } else if (strcmp(op, "exists") == 0 || strcmp(op, "stat") == 0 || strcmp(op, "readFile") == 0 ||
                           strcmp(op, "readdir") == 0 || strcmp(op, "access") == 0) {
                        if (before != after) {
                                fprintf(stderr, "the query fs.%s changed the VFS\n", op);
                                abort();
                        }
                }
                err_free(e);
                e = NULL;
                cJSON_Delete(ret);
                cJSON_Delete(args);
        }
        vfs_free(v);
        return 0;
}
