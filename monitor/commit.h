/* monitor/commit.h — the spawn allowlist the broker commits to (COMMIT),
 * once and first, before it reads anything hostile; every later SPAWN of a
 * tool is checked against it, so a compromised broker can start only what
 * the operator's configuration named.  Pure checks over chan/ messages and
 * blobs: the channel server (issue 10 part 2) calls them. */
#ifndef CHIDORI_MONITOR_COMMIT_H
#define CHIDORI_MONITOR_COMMIT_H

#include <stdbool.h>
#include <stddef.h>

#include "chan/chan.h"
#include "common/err.h"

enum { COMMIT_E_REFUSED = CHAN_SPAWN_E_REFUSED };

struct monitor_commit {
        bool set;
        unsigned flags;                /* CHAN_COMMIT_* */
        struct chan_blob blob;         /* owns the strings below */
        const char *agent_dir;
        const char *const *commands;
        size_t n_commands;
        const char *const *ro_binds;
        size_t n_ro_binds;
        const char *const *env_names;
        size_t n_env_names;
};

/* Accept the COMMIT `m` with its blob (fd stays the caller's): at most once
 * (a second one is refused), every path absolute and without "..", every
 * env name [A-Za-z_][A-Za-z0-9_]*.  -1 with err (COMMIT_E_REFUSED, or
 * CHAN_E_PROTO for a bad blob) and *c unchanged. */
int monitor_commit_accept(struct monitor_commit *c, const struct chan_commit *m, int blob_fd, struct err **err);

/* A SPAWN of a tool (kind CHAN_BOX_TOOL) with its mapped spec blob
 * (1 + n_argv + n_env + n_binds strings: program, argv, env, binds): before
 * COMMIT, or a program not among the commands, an env entry whose name was
 * not committed (tools' env entries are names: the monitor takes the values
 * from its own environment), a bind that is not "ro:" + a committed ro
 * bind, CHAN_SPAWN_HOST without CHAN_COMMIT_UNSANDBOXED_TOOLS, or no
 * deadline, is refused
 * (COMMIT_E_REFUSED) with the reason.  Other kinds: only "after COMMIT". */
int monitor_spawn_allowed(const struct monitor_commit *c, const struct chan_spawn *m, const struct chan_blob *spec,
                          struct err **err);

/* A SPAWN of a bundle box (kind CHAN_BOX_BUNDLE) with its spec: after
 * COMMIT; the program is `esbuild` (the one the monitor found: the broker
 * does not choose it); no environment; exactly one bind, "ro:" + the
 * committed agent folder or a folder beneath it (*ret_dir points at it:
 * the box's only folder of the host and esbuild's working directory);
 * every argument after argv[0] an option ("--..."): the entry point comes
 * on stdin.  Else refused (COMMIT_E_REFUSED) with the reason. */
int monitor_bundle_allowed(const struct monitor_commit *c, const struct chan_spawn *m, const struct chan_blob *spec,
                           const char *esbuild, const char **ret_dir, struct err **err);

void monitor_commit_free(struct monitor_commit *c);

#endif
