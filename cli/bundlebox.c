/* cli/bundlebox.c — esbuild in a box (bundlebox.h). */
#define _GNU_SOURCE
#include "cli/bundlebox.h"
#include "privhelper/proto.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/bundle.h"
#include "common/exit.h"
#include "common/cleanup.h"
#include "common/tmpown.h"
#include "common/util.h"

static const char *const provided[] = { BUNDLE_PROVIDED_LIST };
static const char *const subpaths[] = { BUNDLE_SUBPATH_LIST };

static void remove_shims(struct bundle_box *b)
{
        if (!b->shims[0])
                return;
        char p[PATH_MAX + 96];
        for (size_t i = 0; i < ARRAY_SIZE(subpaths); i++) {
                snprintf(p, sizeof(p), "%s/mods/%s.js", b->shims, subpaths[i]);
                unlink(p);
        }
        for (size_t i = 0; i < ARRAY_SIZE(provided); i++) {
                snprintf(p, sizeof(p), "%s/mods/%s/index.js", b->shims, provided[i]);
                unlink(p);
                snprintf(p, sizeof(p), "%s/mods/%s", b->shims, provided[i]);
                rmdir(p);
        }
        snprintf(p, sizeof(p), "%s/mods", b->shims);
        rmdir(p);
        rmdir(b->shims);
        b->shims[0] = '\0';
}

/* One shim: `require` reaches the prelude's require() (a parameter of the
 * function the engine wraps the bundle in); it is passed as a value so
 * that esbuild does not resolve the name again. */
static int write_shim(const char *path, const char *module, struct err **err)
{
        int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
        if (fd < 0)
                return err_set(err, errno, "create %s", path);
        char text[160];
        int n = snprintf(text, sizeof(text), "module.exports = ((load) => load(\"node:%s\"))(require);\n", module);
        bool ok = write(fd, text, (size_t)n) == n && fchmod(fd, 0644) == 0;
        int e = errno;
        close(fd);
        return ok ? 0 : err_set(err, e, "write %s", path);
}

static int make_shims(struct bundle_box *b, struct err **err)
{
        const char *tmpdir = tmp_dir();
        char made[PATH_MAX];
        if (tmp_owned_template(made, sizeof(made), tmpdir, TMP_KIND_SHIMS) < 0)
                return err_set(err, ENAMETOOLONG, "TMPDIR is too long");
        if (!mkdtemp(made))
                return err_set(err, errno, "create a temporary directory for bundling in %s", tmpdir);
        snprintf(b->shims, sizeof(b->shims), "%s", made);
        char p[PATH_MAX + 96];
        snprintf(p, sizeof(p), "%s/mods", made);
        if (chmod(made, 0755) < 0 || mkdir(p, 0755) < 0 || chmod(p, 0755) < 0)
                return err_set(err, errno, "create the shims' folder for bundling");
        for (size_t i = 0; i < ARRAY_SIZE(provided); i++) {
                snprintf(p, sizeof(p), "%s/mods/%s", made, provided[i]);
                if (mkdir(p, 0755) < 0 || chmod(p, 0755) < 0)
                        return err_set(err, errno, "create %s", p);
                snprintf(p, sizeof(p), "%s/mods/%s/index.js", made, provided[i]);
                if (write_shim(p, provided[i], err) < 0)
                        return -1;
        }
        for (size_t i = 0; i < ARRAY_SIZE(subpaths); i++) {
                snprintf(p, sizeof(p), "%s/mods/%s.js", made, subpaths[i]);
                if (write_shim(p, subpaths[i], err) < 0)
                        return -1;
        }
        return 0;
}

static void close_all(int *fds, size_t n)
{
        for (size_t i = 0; i < n; i++)
                if (fds[i] >= 0)
                        fds[i] = (close(fds[i]), -1);
}

int bundle_box_start(const char *esbuild, char *const *argv, const char *dir, const struct sandbox_opts *base,
                     const char *run_id, struct bundle_box *b, int fds[4], struct err **err)
{
        memset(b, 0, sizeof(*b));
        /* The box binds the file itself at its real path (a symlink's
         * target would not be there). */
        char *real = realpath(esbuild, NULL);
        if (!real && errno == EACCES && priv_helper_fd >= 0 && esbuild[0] == '/')
                real = strdup(esbuild); /* the helper binds it (privhelper/) */
        if (!real)
                return err_set(err, errno, "esbuild %s", esbuild);
        /* p[2k] read end, p[2k+1] write end: stdin, stdout, stderr, metafile. */
        int p[8] = { -1, -1, -1, -1, -1, -1, -1, -1 };
        for (int i = 0; i < 4; i++)
                if (pipe2(p + 2 * i, O_CLOEXEC) < 0) {
                        int e = errno;
                        close_all(p, 8);
                        free(real);
                        return err_set(err, e, "pipe");
                }
        /* The box's root is not the pipes' owner: esbuild reopens the
         * write ends by name (/dev/stdout, /dev/fd/3). */
        if (fchmod(p[3], 0666) < 0 || fchmod(p[7], 0666) < 0 || make_shims(b, err) < 0) {
                if (!*err)
                        err_set(err, errno, "prepare the bundle box");
                close_all(p, 8);
                remove_shims(b);
                free(real);
                return -1;
        }
        struct sandbox_opts so;
        sandbox_opts_init(&so);
        so.require = base ? base->require : false;
        so.cgroup_parent = base ? base->cgroup_parent : NULL;
        struct box_bind binds[2] = {
                { .src = dir, .dst = dir, .rw = false, .idmap = true },
                { .src = b->shims, .dst = BUNDLE_SHIMS, .rw = false },
        };
        static char *const env[] = { "PATH=/usr/bin:/bin", "HOME=/", "LANG=C.UTF-8", NULL };
        struct box_opts bo = {
                .program = real, .argv = argv, .envp = env, .binds = binds, .nbinds = 2, .cwd = dir, .no_etc = true,
                .fd0 = p[0], .fd1 = p[3], .fd2 = p[5], .frame_fd = p[7], .stage2_fd = -1,
        };
        /* Its own cgroup leaf: two bundle boxes of one launcher never share a name. */
        static _Atomic unsigned boxes;
        char id[64];
        snprintf(id, sizeof(id), "%.40s-%u", run_id, ++boxes);
        int code = sandbox_start(&so, &bo, id, &b->sr, err);
        free(real);
        /* The box has its ends now. */
        close(p[0]), close(p[3]), close(p[5]), close(p[7]);
        if (code != 0) {
                close(p[1]), close(p[2]), close(p[4]), close(p[6]);
                remove_shims(b);
                if (code == EXIT_LAYER_UNAVAILABLE && err_code(*err) != BOX_E_LAYER) {
                        struct err *e = *err;
                        *err = NULL;
                        err_setc(err, BOX_E_LAYER, e ? e->errnum : 0, "%s", err_msg(e));
                        err_free(e);
                }
                return err_wrap(err, "start esbuild in its box");
        }
        /* No supervisor answers the seccomp listener here: a call outside
         * the allowlist fails instead (ENOSYS). */
        if (b->sr.box.notify_fd >= 0)
                b->sr.box.notify_fd = (close(b->sr.box.notify_fd), -1);
        b->running = true;
        fds[0] = p[1], fds[1] = p[2], fds[2] = p[4], fds[3] = p[6];
        return 0;
}

int bundle_box_pidfd(const struct bundle_box *b)
{
        return b->running ? b->sr.box.pidfd : -1;
}

void bundle_box_finish(struct bundle_box *b, bool kill_first, int *ret_status, struct sandbox_usage *u)
{
        int status = 0;
        if (b->running) {
                if (kill_first)
                        sandbox_kill(&b->sr);
                while (waitpid(b->sr.box.pid, &status, __WALL) < 0 && errno == EINTR)
                        ;
                sandbox_finish(&b->sr, u);
                b->running = false;
        } else if (u) {
                memset(u, 0, sizeof(*u));
        }
        remove_shims(b);
        if (ret_status)
                *ret_status = status;
}
