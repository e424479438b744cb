/* cli/agent.c — load an agent file and, for ES modules / TypeScript, turn
 * it into one script with esbuild before launch.
 *
 * esbuild runs in a box that shows it only the agent's folder, read-only
 * (cli/bundlebox.c): the same box the monitor starts when the broker asks
 * for a SPAWN of kind bundle.  What its outputs mean (the diagnosis, the
 * metafile's checks, the source map) is cli/bundle.c, shared with the
 * broker (broker/bundle.c).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/bundle.h"
#include "cli/bundlebox.h"
#include "cli/cli.h"
#include "common/cleanup.h"
#include "common/dlib.h"
#include "common/tmpown.h"
#include "common/util.h"

#define AGENT_MAX_BYTES (16u << 20)

char *agent_find_esbuild(void)
{
        const char *env = getenv("CHIDORI_ESBUILD");
        if (env && *env)
                return access(env, X_OK) == 0 ? strdup(env) : NULL;
        /* The build tree (tools/, from `make deps`), then beside the binary
         * or in its libexec directory (`make install` copies it there). */
        char self[PATH_MAX];
        ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
        char *slash = n > 0 ? (self[n] = '\0', strrchr(self, '/')) : NULL;
        if (slash) {
                *slash = '\0';
                char *p = NULL;
                if (asprintf(&p, "%s/../tools/node_modules/.bin/esbuild", self) >= 0 && access(p, X_OK) == 0) {
                        char *real = realpath(p, NULL);
                        if (real) {
                                free(p);
                                return real;
                        }
                        return p;
                }
                free(p);
        }
        char *p = dlib_find("esbuild", X_OK);
        if (p)
                return p;
        const char *path = getenv("PATH");
        if (!path)
                return NULL;
        _cleanup_free_ char *dup = strdup(path);
        for (char *save = NULL, *d = dup ? strtok_r(dup, ":", &save) : NULL; d; d = strtok_r(NULL, ":", &save)) {
                if (asprintf(&p, "%s/esbuild", d) >= 0 && access(p, X_OK) == 0)
                        return p;
                free(p);
                p = NULL;
        }
        return NULL;
}

static int write_text(int dfd, const char *name, const char *text, struct err **err)
{
        _cleanup_close_ int fd = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        if (fd < 0)
                return err_set(err, errno, "create %s for bundling", name);
        size_t len = strlen(text);
        while (len > 0) {
                ssize_t n = write(fd, text, len);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return err_set(err, errno, "write %s for bundling", name);
                text += n;
                len -= (size_t)n;
        }
        return 0;
}

/* esbuild in its box over `dir` (cli/bundlebox.c), as the broker asks the
 * monitor for it: esbuild never runs unboxed on the host. */
static int bundle_in_box(struct agent *a, const char *esbuild, const char *dir, const char *agent_abs,
                         struct err **err)
{
        char **args = bundle_argv();
        _cleanup_free_ char *entry = bundle_entry(agent_abs);
        if (!args || !entry) {
                bundle_argv_free(args);
                return err_set(err, ENOMEM, "bundle");
        }
        char *argv[BUNDLE_ARGC_MAX + 2] = { "esbuild" };
        size_t n = 1;
        for (size_t i = 0; args[i] && n < BUNDLE_ARGC_MAX + 1; i++)
                argv[n++] = args[i];
        argv[n] = NULL;
        struct bundle_box bb;
        int fds[4];
        int rc = bundle_box_start(esbuild, argv, dir, NULL, "bundle", &bb, fds, err);
        bundle_argv_free(args);
        if (rc < 0) {
                if (err && *err)
                        (*err)->code = 0; /* BOX_E_*: not the agent's error (AGENT_E_*) */
                return -1;
        }
        struct bundle_out out;
        int status = 0;
        rc = bundle_collect(fds, entry, BUNDLE_DEADLINE_MS, &out, err);
        bundle_box_finish(&bb, rc < 0, &status, NULL);
        if (rc == 0)
                rc = bundle_finish(a, dir, dir, status, &out, err);
        bundle_out_free(&out);
        return rc;
}

static int bundle(struct agent *a, struct err **err)
{
        _cleanup_free_ char *esbuild = agent_find_esbuild();
        if (!esbuild)
                return err_setc(err, AGENT_E_NO_ESBUILD, 0, AGENT_NO_ESBUILD_FMT, a->path);
        if (a->abspath) {
                _cleanup_free_ char *dir = strdup(a->abspath);
                if (!dir)
                        return err_set(err, ENOMEM, "bundle");
                char *slash = strrchr(dir, '/');
                slash[slash == dir ? 1 : 0] = '\0';
                return bundle_in_box(a, esbuild, dir, a->abspath, err);
        }
        /* An agent read from stdin is bundled from a copy in a temporary
         * folder, which is then its directory: it imports nothing of the
         * host's. */
        const char *tmpdir = tmp_dir();
        char made[PATH_MAX];
        if (tmp_owned_template(made, sizeof(made), tmpdir, TMP_KIND_BUNDLE) < 0)
                return err_set(err, ENAMETOOLONG, "TMPDIR is too long");
        if (!mkdtemp(made))
                return err_set(err, errno, "create a temporary directory for bundling in %s", tmpdir);
        /* esbuild names files by their real paths; so do we. */
        _cleanup_free_ char *dir = realpath(made, NULL);
        _cleanup_free_ char *copy = NULL;
        int rc = 0;
        if (!dir || asprintf(&copy, "%s/%s", dir, a->filename) < 0) {
                copy = NULL;
                rc = err_set(err, ENOMEM, "bundle");
        }
        _cleanup_close_ int dfd = open(made, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (rc == 0 && dfd < 0)
                rc = err_set(err, errno, "open %s", made);
        if (rc == 0)
                rc = write_text(dfd, a->filename, a->source, err);
        if (rc == 0)
                rc = bundle_in_box(a, esbuild, dir, copy, err);
        if (dfd >= 0)
                unlinkat(dfd, a->filename, 0);
        rmdir(made);
        return rc;
}

static int finish_load(struct agent *a, const char *path, struct err **err);

int agent_load(const char *path, struct agent *a, struct err **err)
{
        memset(a, 0, sizeof(*a));
        a->path = strdup(path);
        if (read_file(path, AGENT_MAX_BYTES, &a->source, &a->source_len, err) < 0) {
                int e = (*err) ? (*err)->errnum : 0;
                agent_free(a);
                if (e == ENOENT)
                        return err_setc(err, AGENT_E_NOT_FOUND, e, "agent file '%s' not found", path);
                return err_wrap(err, "load agent");
        }
        a->abspath = realpath(path, NULL);
        if (!a->abspath && errno != ENOMEM) {
                int e = errno;
                agent_free(a);
                return err_set(err, e, "agent file '%s' has no path on disk (a pipe?); save the agent to a file and run that", path);
        }
        const char *base = strrchr(path, '/');
        a->filename = strdup(base ? base + 1 : path);
        if (!a->path || !a->abspath || !a->filename) {
                agent_free(a);
                return err_set(err, ENOMEM, "load agent");
        }
        return finish_load(a, path, err);
}

int agent_load_stdin(const char *name, struct agent *a, struct err **err)
{
        memset(a, 0, sizeof(*a));
        a->path = strdup("-");
        a->filename = strdup(name);
        if (!a->path || !a->filename) {
                agent_free(a);
                return err_set(err, ENOMEM, "load agent");
        }
        if (read_fd(STDIN_FILENO, "stdin", AGENT_MAX_BYTES, &a->source, &a->source_len, err) < 0) {
                agent_free(a);
                return err_wrap(err, "read the agent from stdin");
        }
        return finish_load(a, name, err);
}

/* The part of loading shared by files and stdin: hash, check, bundle. */
static int finish_load(struct agent *a, const char *path, struct err **err)
{
        sha256_hex(a->source, a->source_len, a->sha256);
        if (memchr(a->source, '\0', a->source_len)) {
                agent_free(a);
                return err_setc(err, AGENT_E_BUNDLE, 0, "agent file '%s' contains NUL bytes; expected JavaScript source", path);
        }
        if (bundle_needed(path, a->source)) {
                if (bundle(a, err) < 0) {
                        agent_free(a);
                        return -1;
                }
        } else {
                a->script = a->source;
        }
        return 0;
}
