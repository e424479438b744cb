/* cli/bundlebox.h — esbuild in a box, the monitor's side of bundling
 * (cli/bundle.h has what its outputs mean).  The box is `chidori launch`'s
 * (namespaces, the general seccomp allowlist, Landlock read-only, the
 * default cgroup ceiling: 512 MiB, 64 processes) with:
 *   - the agent's folder read-only at its own path, id-mapped (as root: a
 *     0700 folder of root's is readable by the box's root), and esbuild's
 *     working directory;
 *   - the shims of the node: modules chidori provides read-only at
 *     BUNDLE_SHIMS: the monitor writes these fixed one-line files into a
 *     fresh folder of TMPDIR (0755) for each box and removes it when the
 *     box is finished;
 *   - esbuild (the binary the monitor found) read-only at its path, the
 *     system's libraries as every box has them, none of /etc's user files;
 *   - nothing writable, no network; descriptors 0 (the entry point), 1
 *     (the bundle), 2 (diagnostics), 3 (the metafile): pipes, whose write
 *     ends are mode 0666 so esbuild can open /dev/stdout and /dev/fd/3 in
 *     its user namespace (only a holder of the pipe can reach it).
 * A syscall outside the allowlist fails (ENOSYS: the listener is closed)
 * instead of waiting for a supervisor.
 */
#ifndef CHIDORI_CLI_BUNDLEBOX_H
#define CHIDORI_CLI_BUNDLEBOX_H

#include <limits.h>
#include <stdbool.h>

#include "common/err.h"
#include "sandbox/sandbox.h"

struct bundle_box {
        struct sandbox_run sr;
        char shims[PATH_MAX];    /* the host folder of the shims, "" once removed */
        bool running;
};

/* Start `esbuild` with argv (argv[0] first) in a box over `dir`.  `base`:
 * the operator's sandbox options (only require and the cgroup parent are
 * taken).  fds: the caller's ends (stdin write, stdout, stderr, metafile
 * read).  0, or -1 with err (code BOX_E_LAYER for a missing layer). */
int bundle_box_start(const char *esbuild, char *const *argv, const char *dir, const struct sandbox_opts *base,
                     const char *run_id, struct bundle_box *b, int fds[4], struct err **err);
/* The box's pidfd (readable once it has exited). */
int bundle_box_pidfd(const struct bundle_box *b);
/* Kill it first if asked, reap it, remove the shims: its wait status and usage. */
void bundle_box_finish(struct bundle_box *b, bool kill_first, int *ret_status, struct sandbox_usage *u);

#endif
