/* cli/bundle.h — turning an ES module / TypeScript agent into one script
 * with esbuild, as both `chidori` (the one-process run) and
 * `chidori-broker` (the broker's run) do it.  esbuild itself always runs in
 * a box (cli/bundlebox.c, started by the monitor): read-only access to the
 * agent's folder (at its own path, its working directory) and to the
 * shims (at BUNDLE_SHIMS), no network, no writable file.  Its four
 * descriptors: stdin (the entry point, written here), stdout (the bundle
 * with its source map inline), stderr (its diagnostics), fd 3 (the
 * metafile).  What this file does with them is what the launcher always
 * did: esbuild's error as "msg (file:line:col)", the refusal of inputs
 * outside the agent's directory and of node: modules chidori does not
 * provide (from the metafile), the source map for error positions.
 */
#ifndef CHIDORI_CLI_BUNDLE_H
#define CHIDORI_CLI_BUNDLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "common/err.h"

struct agent;

/* Where the bundle box shows the shims of the node: modules chidori
 * provides (mods/NAME/index.js, mods/NAME/SUB.js), and the entry point's
 * name (given on stdin; no such file exists). */
#define BUNDLE_SHIMS "/chidori-shims"
#define BUNDLE_ENTRY BUNDLE_SHIMS "/entry.mjs"

/* The modules the engine provides (engine/prelude.js's BUILTIN keeps the
 * same): each base has a directory of shims (index.js, and one file per
 * subpath). */
#define BUNDLE_PROVIDED_LIST                                                                                 \
        "assert", "buffer", "crypto", "events", "fs", "path", "process", "querystring", "stream",            \
                "string_decoder", "timers", "url", "util"
#define BUNDLE_SUBPATH_LIST                                                                                  \
        "assert/strict", "fs/promises", "path/posix", "stream/promises", "stream/web", "timers/promises",    \
                "util/types"

/* Bounds on what esbuild writes: the bundle (map inline), its metafile,
 * its diagnostics. */
#define BUNDLE_OUT_MAX (64u << 20)
#define BUNDLE_META_MAX (64u << 20)
#define BUNDLE_ERR_MAX (1u << 20)
/* How long esbuild may take (the bundle box's deadline, unless the run's
 * own is shorter). */
#define BUNDLE_DEADLINE_MS 60000L

/* The message when esbuild cannot be found (%s: the agent's path). */
#define AGENT_NO_ESBUILD_FMT                                                                                 \
        "%s is an ES module or TypeScript and needs bundling, but esbuild was not found; run 'make deps' "  \
        "(installs it into tools/), put esbuild on PATH, or set CHIDORI_ESBUILD=/path/to/esbuild"

/* An ES module (import/export statement) or a .ts/.mts/.cts/.tsx/.mjs/.jsx file. */
bool bundle_needed(const char *path, const char *src);

/* esbuild's arguments after argv[0], NULL-terminated (malloc'd strings in
 * a malloc'd array: bundle_argv_free). */
char **bundle_argv(void);
void bundle_argv_free(char **argv);
#define BUNDLE_ARGC_MAX 64

/* The entry point (stdin): imports the agent at its absolute path and hands
 * its default (or main) export to the prelude.  malloc'd. */
char *bundle_entry(const char *agent_abs);

/* What esbuild wrote. */
struct bundle_out {
        char *out, *err, *meta;
        size_t out_len, err_len, meta_len;
};
void bundle_out_free(struct bundle_out *o);

/* Write `entry` to fds[0] and read fds[1] (stdout), fds[2] (stderr), fds[3]
 * (metafile) to their ends, within the bounds above and `timeout_ms` (0:
 * none).  Closes the four. */
int bundle_collect(int fds[4], const char *entry, long timeout_ms, struct bundle_out *o, struct err **err);

/* esbuild ended with wait status `status`: its diagnosis (AGENT_E_BUNDLE,
 * AGENT_E_IMPORT), the metafile's checks (inputs beneath `dir`, the agent's
 * directory; its keys are relative to `cwd`, esbuild's working directory),
 * then the bundle and its map into a->script, a->esm, a->map or
 * a->map_warning. */
int bundle_finish(struct agent *a, const char *cwd, const char *dir, int status, struct bundle_out *o,
                  struct err **err);

/* A load error as `chidori run` prints it: esbuild's diagnosis as
 * "agent error: SyntaxError: ..." / "ImportError" (escaped, exit 1), other
 * errors as "chidori: ..." (exit 2).  Returns the exit code. */
int bundle_report_error(FILE *f, const struct err *e);

#endif
