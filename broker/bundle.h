/* broker/bundle.h — an agent file loaded by the broker: its bytes by
 * OPEN_AGENT_FILE, and, for an ES module or TypeScript, bundled by esbuild
 * in a box the monitor starts (SPAWN of kind bundle):
 *
 *   SPAWN {bundle, deadline} + blob: esbuild (the monitor's, from the
 *         config), argv (options only: cli/bundle.c bundle_argv), no env,
 *         one bind "ro:" + the agent's own folder (its working directory)
 *   SPAWNED {box} + stdin, stdout, stderr, metafile  (SPAWN_FAILED: the error)
 *   the entry point written to stdin; the bundle (map inline), esbuild's
 *   diagnostics and the metafile read to their ends (bounded)
 *   BOX_ENDED {box, wait status}  (KILL {box} first if reading failed)
 *
 * then what `chidori run` does with them (cli/bundle.c: the diagnosis, the
 * metafile's refusals, the source map).  Synchronous on the channel: for
 * before the session's loop watches it (chan_boxes_init).
 */
#ifndef CHIDORI_BROKER_BUNDLE_H
#define CHIDORI_BROKER_BUNDLE_H

#include <signal.h>

#include "common/err.h"

struct agent;
struct chan_boxes;

struct broker_bundler {
        int chan;                  /* the broker's end of the channel */
        const char *agent_dir;     /* the committed agent folder (absolute) */
        const char *esbuild;       /* the monitor's esbuild (config esbuild=), NULL: none */
        long deadline_ms;          /* the run's deadline (0: none): esbuild's box gets no more */
        volatile sig_atomic_t *stop; /* set to STOP's signal if one comes meanwhile; may be NULL */
        /* Inside the session's loop (a nested callee): messages for others
         * (their boxes, opens) met while waiting are handed to the loop's
         * provider for later (chan_boxes_defer), not dropped.  NULL: before
         * the loop. */
        struct chan_boxes *defer_to;
};

/* Error codes besides AGENT_E_* (cli/cli.h; those are the agent's: print
 * them with bundle_report_error): */
enum {
        BROKER_BUNDLE_E_CHANNEL = 100,  /* the channel failed or the run was stopped: the broker is done */
        BROKER_BUNDLE_E_LAYER,          /* the bundle box lacks a required layer (exit 78) */
};

/* Load `relpath` (beneath the agent folder) into *out: path and abspath
 * agent_dir/relpath, filename its base name, source and sha256, and the
 * script (bundled when it is a module: out->esm, out->map or
 * out->map_warning).  -1 with err: AGENT_E_BUNDLE / AGENT_E_IMPORT
 * (esbuild's diagnosis), AGENT_E_NO_ESBUILD, AGENT_E_NOT_FOUND, the codes
 * above, or 0 (the bundle box could not be started: exit 2 as run's). */
int broker_bundle(const struct broker_bundler *b, const char *relpath, struct agent *out, struct err **err);

/* The same for an agent whose file was read already: out->path, abspath,
 * filename, source, source_len set; sha256 and the script (bundled if it
 * is a module) filled.  -1 with err as above; *out is the caller's. */
int broker_bundle_loaded(const struct broker_bundler *b, const char *relpath, struct agent *out, struct err **err);

#endif
