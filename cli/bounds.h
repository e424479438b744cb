/* cli/bounds.h — the options that bound the parent itself (what a
 * worker can make the broker hold or do: docs/sandbox.md, "The parent's
 * limits").  Options of `run` and `replay`, each with its environment
 * variable; a malformed value is a usage error (exit 2). */
#ifndef CHIDORI_CLI_BOUNDS_H
#define CHIDORI_CLI_BOUNDS_H

#include <getopt.h>

#include "runtime/session.h"

enum {
        BOPT_MAX_CALLS = 950, BOPT_MAX_QUEUE, BOPT_MAX_LOG, BOPT_MAX_JOURNAL, BOPT_MAX_VFS, BOPT_MAX_MEMORY_STORE,
        BOPT_MAX_WORKSPACE_WRITE, BOPT_MAX_TIMERS,
};

#define BOUNDS_LONGOPTS                                                                               \
        { "max-calls", required_argument, NULL, BOPT_MAX_CALLS },                                     \
        { "max-queue", required_argument, NULL, BOPT_MAX_QUEUE },                                     \
        { "max-log", required_argument, NULL, BOPT_MAX_LOG },                                         \
        { "max-journal", required_argument, NULL, BOPT_MAX_JOURNAL },                                 \
        { "max-vfs", required_argument, NULL, BOPT_MAX_VFS },                                         \
        { "max-memory-store", required_argument, NULL, BOPT_MAX_MEMORY_STORE },                       \
        { "max-workspace-write", required_argument, NULL, BOPT_MAX_WORKSPACE_WRITE },                 \
        { "max-timers", required_argument, NULL, BOPT_MAX_TIMERS }

#define BOUNDS_OPTIONS_HELP                                                                           \
        "  The parent's limits (SIZE as 64M, 1G...; docs/sandbox.md, \"The parent's limits\"):\n"    \
        "  --max-calls N         host calls in flight; more wait until one ends (default 1024)\n"    \
        "                        [CHIDORI_MAX_CALLS]\n"                                             \
        "  --max-queue SIZE      answers the worker has not read before calls wait, and response\n"  \
        "                        bodies of fetches in flight (default 64M) [CHIDORI_MAX_QUEUE]\n"   \
        "  --max-log SIZE        log and console output per run (default 16M) [CHIDORI_MAX_LOG]\n"   \
        "  --max-journal SIZE    journal size; the run stops when it cannot be recorded, replay\n"   \
        "                        refuses a bigger journal (default 1G) [CHIDORI_MAX_JOURNAL]\n"      \
        "  --max-vfs SIZE        node:fs in-memory files per run (default 64M) [CHIDORI_MAX_VFS]\n"  \
        "  --max-memory-store SIZE  chidori.memory keys and values per namespace (default 64M)\n"    \
        "                        [CHIDORI_MAX_MEMORY_STORE]\n"                                      \
        "  --max-workspace-write SIZE  bytes written to the workspace per run (default 1G)\n"       \
        "                        [CHIDORI_MAX_WORKSPACE_WRITE]\n"                                  \
        "  --max-timers N        timers (setTimeout, setInterval) pending at once; more fail with\n" \
        "                        ELIMIT (default 10000) [CHIDORI_MAX_TIMERS]\n"

/* The defaults (BROKER_DEFAULT_*). */
void bounds_opts_init(struct session_limits *o);
/* Read CHIDORI_MAX_*; prints and returns -1 on a malformed value. */
int bounds_opts_env(struct session_limits *o);
/* 1 handled, 0 not ours, -1 bad (printed). */
int bounds_opts_parse(struct session_limits *o, const char *cmd, int c, const char *arg);

#endif
