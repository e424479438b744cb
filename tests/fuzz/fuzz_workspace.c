/* tests/fuzz/fuzz_workspace.c — libFuzzer target for workspace path
 * resolution (effects/workspace/workspace.c): every path comes from the agent.
 *
 * Each input runs on a fresh temp tree (in /dev/shm: writes fsync): a root with files, directories, a
 * fifo and symlinks that stay inside and that lead out (to a sibling
 * "outside" directory holding a secret, to "..", to /etc), and the sibling
 * itself.  The input is lines "OP PATH": OP one of c (check the path), l
 * (list), r (read), w (write PATH's own bytes, parents not created), W (the
 * same, parents created), d (delete), m (manifest).  After each op: the
 * error code is one the header lists and the message starts "workspace: ";
 * a path workspace_check_path refuses is refused by the op with the same
 * code; nothing outside the root changed, and no read returned the secret.
 * Crashes on a broken invariant, not only on memory errors. */
#define _GNU_SOURCE
#include <cjson/cJSON.h>
#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/err.h"
#include "effects/workspace/workspace.h"

#define SECRET "chidori-fuzz-secret-outside-the-root"

static char base[64];
static char root[128], outside[128];

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *f)
{
        (void)st, (void)flag, (void)f;
        return remove(p);
}

static void put(const char *rel, const char *text)
{
        char p[256];
        snprintf(p, sizeof(p), "%s/%s", root, rel);
        int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd < 0 || write(fd, text, strlen(text)) != (ssize_t)strlen(text))
                abort();
        close(fd);
}

static void in_root(int (*fn)(const char *, const char *), const char *a, const char *rel)
{
        char p[256];
        snprintf(p, sizeof(p), "%s/%s", root, rel);
        if (fn(a, p) != 0)
                abort();
}

static int mkdir_at(const char *unused, const char *p)
{
        (void)unused;
        return mkdir(p, 0755);
}

static int fifo_at(const char *unused, const char *p)
{
        (void)unused;
        return mkfifo(p, 0644);
}

static void remove_base(void)
{
        nftw(base, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static void fresh_tree(void)
{
        if (!base[0]) {
                snprintf(base, sizeof(base), "/dev/shm/chidori-fuzz-ws.XXXXXX");
                if (!mkdtemp(base))
                        abort();
                atexit(remove_base);
                snprintf(root, sizeof(root), "%s/root", base);
                snprintf(outside, sizeof(outside), "%s/outside", base);
        }
        nftw(root, rm_one, 16, FTW_DEPTH | FTW_PHYS);
        nftw(outside, rm_one, 16, FTW_DEPTH | FTW_PHYS);
        if (mkdir(root, 0755) != 0 || mkdir(outside, 0755) != 0)
                abort();
        char p[256];
        snprintf(p, sizeof(p), "%s/secret", outside);
        int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd < 0 || write(fd, SECRET, strlen(SECRET)) != (ssize_t)strlen(SECRET))
                abort();
        close(fd);
        put("a.txt", "hello");
        in_root(mkdir_at, NULL, "dir");
        in_root(mkdir_at, NULL, "dir/sub");
        in_root(mkdir_at, NULL, "empty");
        put("dir/b.txt", "bee");
        in_root(fifo_at, NULL, "fifo");
        in_root(symlink, "dir/b.txt", "link-in");
        in_root(symlink, "dir", "link-dir");
        in_root(symlink, "../outside/secret", "link-out");
        in_root(symlink, "../outside", "link-outdir");
        in_root(symlink, "..", "link-up");
        in_root(symlink, "/etc", "link-abs");
        in_root(symlink, "/proc/self/root", "link-magic");
        in_root(symlink, "nowhere", "link-dangling");
        in_root(symlink, "../../root/a.txt", "dir/link-back");
}

/* The outside directory holds exactly its secret, unchanged, and the base
 * holds only root and outside. */
static void outside_intact(void)
{
        char p[256], buf[128];
        snprintf(p, sizeof(p), "%s/secret", outside);
        int fd = open(p, O_RDONLY | O_NOFOLLOW);
        if (fd < 0)
                abort();
        ssize_t n = read(fd, buf, sizeof(buf));
        close(fd);
        if (n != (ssize_t)strlen(SECRET) || memcmp(buf, SECRET, (size_t)n) != 0)
                abort();
        const char *dirs[] = { outside, base };
        for (int i = 0; i < 2; i++) {
                DIR *d = opendir(dirs[i]);
                if (!d)
                        abort();
                struct dirent *de;
                int count = 0;
                while ((de = readdir(d)))
                        if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
                                count++;
                closedir(d);
                if (count != (i == 0 ? 1 : 2))
                        abort();
        }
}

static void check_err(const struct err *e, int rc)
{
        if (rc == 0)
                return;
        int code = err_code(e);
        if (code <= 0 || code >= WORKSPACE_ERROR_MAX || !workspace_error_name(code) ||
            strncmp(err_msg(e), "workspace: ", 11) != 0)
                abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        if (size > 8192)
                return 0;
        fresh_tree();
        struct workspace_limits lim = { .max_file_bytes = 4096, .max_list_entries = 64, .max_total_bytes = 1 << 20,
                                        .max_manifest_files = 64 };
        struct workspace *w = NULL;
        struct err *e = NULL;
        if (workspace_open(root, &lim, &w, &e) != 0)
                abort();
        bool wrote_secret = false;
        size_t pos = 0;
        for (int ops = 0; ops < 16 && pos < size; ops++) {
                const char *line = (const char *)data + pos;
                const char *nl = memchr(line, '\n', size - pos);
                size_t len = nl ? (size_t)(nl - line) : size - pos;
                pos += len + 1;
                if (len < 1)
                        continue;
                char op = line[0];
                size_t plen = len > 1 ? len - 2 : 0; /* "OP PATH": skip the op and one separator */
                const char *path = len > 1 ? line + 2 : "";
                char *p = malloc(plen + 1);
                if (!p)
                        abort();
                memcpy(p, path, plen);
                p[plen] = '\0';
                /* The length as received: an embedded NUL is refused here. */
                struct err *ce = NULL;
                int crc = workspace_check_path(path, plen, op == 'l', &ce);
                check_err(ce, crc);
                if (memchr(path, 0, plen) && crc == 0)
                        abort();
                int rc = 0;
                struct err *oe = NULL;
                cJSON *j = NULL;
                switch (op) {
                case 'l':
                        rc = workspace_list(w, p, &j, &oe);
                        if (rc == 0 && !cJSON_IsArray(j))
                                abort();
                        break;
                case 'r': {
                        char *buf = NULL;
                        size_t n = 0;
                        rc = workspace_read(w, p, &buf, &n, &oe);
                        if (rc == 0) {
                                if (n > lim.max_file_bytes || buf[n] != '\0')
                                        abort();
                                if (!wrote_secret && memmem(buf, n, SECRET, strlen(SECRET)))
                                        abort(); /* read through to the outside */
                                free(buf);
                        }
                        break;
                }
                case 'w':
                case 'W':
                        wrote_secret |= memmem(p, plen, SECRET, strlen(SECRET)) != NULL;
                        rc = workspace_write(w, p, p, plen, op == 'W', &oe);
                        break;
                case 'd': {
                        bool existed = false;
                        rc = workspace_delete(w, p, &existed, &oe);
                        break;
                }
                case 'm':
                        rc = workspace_manifest(w, &j, &oe);
                        if (rc == 0 && !cJSON_IsArray(j))
                                abort();
                        break;
                default:
                        break;
                }
                check_err(oe, rc);
                /* A path with no NUL that the check refuses, every op refuses the same way. */
                if (op && strchr("lrwWd", op) && crc != 0 && !memchr(path, 0, plen) &&
                    (rc == 0 || err_code(oe) != err_code(ce)))
                        abort();
                cJSON_Delete(j);
                err_free(ce);
                err_free(oe);
                free(p);
                outside_intact();
        }
        workspace_close(w);
        err_free(e);
        return 0;
}
