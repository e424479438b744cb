/* effects/proc/tools.h — the `--tools FILE` registry behind chidori.tool(name, args).
 *
 * A tool is a host command the operator declared; the agent can only name
 * it and hand it arguments.  The call runs the command with the arguments as
 * one JSON document (+ "\n") on stdin and takes one JSON value from its
 * stdout.  By default the command runs inside the box (`chidori launch`:
 * read-only root with the system folders, no network, no capabilities,
 * seccomp, Landlock, cgroup limits); "sandbox": false runs it directly on
 * the host, for commands the operator trusts with everything the broker
 * can do.  File format, the sandbox's view and the messages: docs/tools.md.
 *
 * Flow in the broker (policy check "tool:<name>" comes first):
 *
 *      t = tools_find(reg, name);                       // NULL: unknown tool
 *      tools_spec(reg, t, args, &host, &spec, &err);     // argv, env, stdin
 *      subproc_start(e, id, spec, on_done, ..., &err);   // effects/proc/subproc.h
 *      tools_spec_free(spec);
 *      ... on_done(res): tools_result(t, res, &value, &err) -> the answer
 *
 * A registry is immutable once loaded; nothing here keeps state between
 * calls.  Leaf code: never prints, never exits.
 */
#ifndef CHIDORI_EFFECTS_PROC_TOOLS_H
#define CHIDORI_EFFECTS_PROC_TOOLS_H

#include <stdbool.h>
#include <stddef.h>

#include "common/err.h"

struct cJSON;
struct subproc_spec;
struct subproc_result;
struct tools_registry;

#define TOOLS_FILE_MAX (1024 * 1024)
#define TOOLS_MAX 1024                          /* tools in one file */
#define TOOLS_NAME_MAX 64
#define TOOLS_COMMAND_MAX 256                   /* argv entries */
#define TOOLS_ENV_MAX 64
#define TOOLS_RO_BIND_MAX 16
#define TOOLS_DEFAULT_TIMEOUT_MS 30000L
#define TOOLS_TIMEOUT_MAX_MS 3600000L
#define TOOLS_DEFAULT_MAX_OUTPUT ((size_t)1 << 20)
#define TOOLS_OUTPUT_MAX ((size_t)16 << 20)
#define TOOLS_STDERR_MAX ((size_t)64 << 10)     /* kept for the error message */
/* The box's own deadline (chidori launch --deadline) fires first, so launch
 * cleans up its cgroup; ours is the backstop this much later. */
#define TOOLS_LAUNCH_GRACE_MS 2000L
/* Stopping a sandboxed call (backstop timeout, cancel) sends chidori launch
 * SIGTERM first — it then ends the box and removes the cgroup — and SIGKILL
 * this much later. */
#define TOOLS_KILL_GRACE_MS 2000L
/* The only PATH a tool ever sees, sandboxed or not (also the box's). */
#define TOOLS_PATH "/usr/local/bin:/usr/bin:/bin"

/* err_code() of the errors this module reports. */
enum tools_errc {
        TOOLS_E_OK = 0,
        TOOLS_E_SYNTAX,   /* the file is not JSON; "line L, column C" */
        TOOLS_E_SCHEMA,   /* valid JSON, not a tools file; the message has the JSON path */
        TOOLS_E_IO,       /* the file cannot be read (errnum set) or is too large */
        TOOLS_E_ARGS,     /* the call's arguments cannot be sent (not serialisable) */
        TOOLS_E_TIMEOUT,  /* "tool <name> timed out after N ms" */
        TOOLS_E_EXIT,     /* "tool <name> exited with status N: <first line of stderr>" */
        TOOLS_E_SIGNAL,   /* "tool <name> was killed by signal N (SIGxxx)" (sandbox: false) */
        TOOLS_E_OUTPUT,   /* stdout is not one JSON value, or over max_output_bytes */
        TOOLS_E_MAX
};

/* One declared tool; read-only, owned by the registry. */
struct tool_def {
        const char *name;
        char *const *command;      /* NULL-terminated, ncommand >= 1 */
        size_t ncommand;
        long timeout_ms;           /* default TOOLS_DEFAULT_TIMEOUT_MS */
        char *const *env;          /* variable names copied from the broker's environment */
        size_t nenv;
        bool sandbox;              /* default true */
        size_t max_output_bytes;   /* stdout cap, default TOOLS_DEFAULT_MAX_OUTPUT */
        char *const *ro_bind;      /* host paths made visible (read-only) in the box */
        size_t nro_bind;
};

/* Parse a tools document (`len` bytes; a NUL inside is an error).  `origin`
 * starts every message ("tools.json: search.command: must be ..."); NULL =
 * "tools".  Programs are looked up (command[0] must exist: absolute, or a bare
 * name found in TOOLS_PATH) and ro_bind paths must exist, so a typo fails at
 * start rather than at the first call.  On failure *ret is untouched. */
int tools_parse(const char *json, size_t len, const char *origin, struct tools_registry **ret, struct err **err);

/* Read (at most TOOLS_FILE_MAX bytes) and parse `path`; messages start with
 * the path as given. */
int tools_load(const char *path, struct tools_registry **ret, struct err **err);
/* The same from a descriptor the monitor opened (read_opened: fd > 0, or
 * the errno of its failed open); messages name `path`.  flags
 * TOOLS_LOAD_NO_FILES: absolute programs and ro_bind paths are not looked
 * at (the broker cannot see the host's files: the monitor starts the tool,
 * and a missing one fails at its call). */
#define TOOLS_LOAD_NO_FILES 1u
int tools_load_opened(const char *path, int fd, int errnum, unsigned flags, struct tools_registry **ret,
                      struct err **err);

/* The tool's program, absolute: command[0] itself, or a bare name's first
 * match in TOOLS_PATH; NULL when not found (malloc'd). */
char *tools_program(const struct tool_def *t);

void tools_free(struct tools_registry *reg);

/* The tool called `name`, NULL if there is none (or reg is NULL). */
const struct tool_def *tools_find(const struct tools_registry *reg, const char *name);
size_t tools_count(const struct tools_registry *reg);
const struct tool_def *tools_at(const struct tools_registry *reg, size_t i);  /* file order */

/* What a tool's child takes from the run, resolved once when the run starts
 * (cli/grants.c): nothing is read from the environment or resolved
 * against a working directory at call time. */
struct tools_host {
        const char *self_exe;        /* chidori, absolute: the box (launch) and the host-tool init */
        char *const *launch_opts;    /* options for `chidori launch` after --deadline: the operator's
                                      * posture (--require-sandbox, --cgroup-parent=...); NULL = none */
        char *const *env;            /* "NAME=value": where a tool's env list takes its values; NULL = none */
        char *const *extra_env;      /* appended to the child's environment as they are (the run's
                                      * cgroup placement, die-with-parent); NULL = none */
};

/* Build the child for one call.  stdin = args, the agent's JSON text as it
 * wrote it without whitespace outside strings, + "\n" (args NULL = {}; not
 * JSON text: TOOLS_E_ARGS); envp = PATH=TOOLS_PATH, the tool's env names found in
 * host->env, then host->extra_env; cwd "/".
 * Sandboxed, argv is
 *      <self_exe> launch --quiet --deadline <timeout_ms> [launch_opts]... [--ro-bind P]...
 *                 [--setenv NAME]... -- <command...>
 * the child's timeout TOOLS_LAUNCH_GRACE_MS after the box's, and
 * kill_grace_ms TOOLS_KILL_GRACE_MS.
 * Unsandboxed, argv is
 *      <self_exe> _host-tool -- <command...>
 * (sandbox/hosttool.c: the command in a pid namespace of its own that dies
 * with the call, so nothing it starts outlives it).  Both need self_exe
 * absolute.  *ret is freed with tools_spec_free. */
int tools_spec(const struct tools_registry *reg, const struct tool_def *t, const char *args,
               const struct tools_host *host, struct subproc_spec **ret, struct err **err);
void tools_spec_free(struct subproc_spec *spec);

/* The one JSON value a tool printed (strict JSON, UTF-8): surrounding
 * whitespace is fine, nothing else.  *ret is a raw node of its text as
 * printed, whitespace outside strings dropped (proto/json.h): the agent
 * gets exactly those numbers and strings.  Errors (TOOLS_E_OUTPUT): "tool
 * <name> printed invalid JSON on stdout (line L, column C): <what>", "tool
 * <name> printed nothing on stdout (expected one JSON value)".  *ret is
 * freed with cJSON_Delete. */
int tools_parse_output(const char *name, const void *out, size_t len, struct cJSON **ret, struct err **err);

/* Turn a finished child into the call's value or error, in this order:
 * timeout (ours, or the box's deadline: exit 124 with launch's "deadline
 * exceeded" line) -> signal -> non-zero exit -> stdout over the cap ->
 * tools_parse_output.  The stderr line quoted in an exit error is its first
 * line — or, for a sandboxed tool ending with one of launch's own codes, the
 * last "chidori: " line (launch's diagnosis) — control bytes shown as '?',
 * cut at 200 bytes. */
int tools_result(const struct tool_def *t, const struct subproc_result *res, struct cJSON **ret,
                 struct err **err);

#endif
