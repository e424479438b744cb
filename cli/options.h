/* cli/options.h — the command-line side of the sandbox options shared by
 * `run`, `replay` and `launch`: the long options, their --help text, and the
 * environment variables.  Each option has an environment variable; a
 * malformed value is a usage error, never ignored.  What they fill is
 * struct sandbox_opts (sandbox/sandbox.h). */
#ifndef CHIDORI_CLI_OPTIONS_H
#define CHIDORI_CLI_OPTIONS_H

#include <getopt.h>

#include "sandbox/sandbox.h"

enum {
        SOPT_DEADLINE = 700, SOPT_CPU_SECS, SOPT_NOFILE, SOPT_FSIZE, SOPT_REQUIRE, SOPT_UNSAFE_DISABLE,
        SOPT_JIT, SOPT_NO_JIT, SOPT_MEMORY, SOPT_PIDS, SOPT_CPUS, SOPT_CGROUP_PARENT,
};

#define SANDBOX_LONGOPTS                                                                              \
        { "deadline", required_argument, NULL, SOPT_DEADLINE },                                       \
        { "cpu-secs", required_argument, NULL, SOPT_CPU_SECS },                                       \
        { "nofile", required_argument, NULL, SOPT_NOFILE },                                           \
        { "fsize", required_argument, NULL, SOPT_FSIZE },                                             \
        { "require-sandbox", no_argument, NULL, SOPT_REQUIRE },                                       \
        { "unsafe-disable", required_argument, NULL, SOPT_UNSAFE_DISABLE },                           \
        { "jit", no_argument, NULL, SOPT_JIT },                                                       \
        { "no-jit", no_argument, NULL, SOPT_NO_JIT },                                                 \
        { "memory", required_argument, NULL, SOPT_MEMORY },                                           \
        { "pids", required_argument, NULL, SOPT_PIDS },                                               \
        { "cpus", required_argument, NULL, SOPT_CPUS },                                               \
        { "cgroup-parent", required_argument, NULL, SOPT_CGROUP_PARENT }

#define SANDBOX_OPTIONS_HELP                                                                          \
        "  --deadline MS         wall-clock deadline; the box is killed (exit 124), 0 = none\n"      \
        "                        [CHIDORI_ISOLATE_DEADLINE_MS]\n"                                    \
        "  --cpu-secs N          RLIMIT_CPU in seconds (exit 152), 0 = none [CHIDORI_ISOLATE_CPU_SECS];\n" \
        "                        run: default 1.5 x --js-deadline + 2 s, a backstop for what the\n" \
        "                        engine cannot interrupt (a regular expression)\n"                    \
        "  --nofile N            RLIMIT_NOFILE (default 256)\n"                                      \
        "  --fsize SIZE          RLIMIT_FSIZE, e.g. 1M or 4096 (bytes); opt-in, 0 = none\n"           \
        "  --require-sandbox     fail (exit 78) unless user, pid, mount and net namespaces, seccomp,\n" \
        "                        Landlock (where the kernel has it) and the memory ceiling apply\n"  \
        "                        [CHIDORI_ISOLATE_REQUIRE_SANDBOX=1]\n"                              \
        "  --unsafe-disable=L,.. turn single layers off, for tests and debugging only (user, pid,\n" \
        "                        mnt, net, ipc, uts, cgroupns, caps, landlock, seccomp, rlimits,\n"  \
        "                        cgroup = the memory/pids/cpu ceiling)\n"                            \
        "  --jit / --no-jit      JavaScriptCore's JIT; --no-jit also denies new executable memory\n"  \
        "  --memory SIZE         memory ceiling, e.g. 256M or 1G (default 512M; exit 137): the cgroup's,\n" \
        "                        else a watchdog on the box's resident memory\n"                    \
        "                        [CHIDORI_JS_MEM_CAP_MB, in MiB]\n"                                 \
        "  --pids N              processes and threads (default 64): cgroup pids.max, else\n"       \
        "                        RLIMIT_NPROC in the box's user namespace [CHIDORI_PIDS_MAX]\n"     \
        "  --cpus FRACTION       cgroup cpu.max as a fraction of one CPU, e.g. 0.5 (needs a cgroup)\n" \
        "                        --memory, --pids or --cpus given (flag or variable) but impossible to\n" \
        "                        apply fails the run (exit 78); a default that cannot is noted in the\n" \
        "                        banner\n"                                                           \
        "  --cgroup-parent PATH  cgroup under which run cgroups are created\n"                      \
        "                        [CHIDORI_CGROUP_PARENT] (default: below this process's cgroup)\n"

/* Read the CHIDORI_* variables; prints and returns -1 on a malformed one. */
int sandbox_opts_env(struct sandbox_opts *o);
/* 1 handled, 0 not ours, -1 bad (printed). */
int sandbox_opts_parse(struct sandbox_opts *o, const char *cmd, int c, const char *arg);
/* Cross-option checks (--unsafe-disable with --require-sandbox...); prints
 * the warning of --unsafe-disable. */
int sandbox_opts_check(const struct sandbox_opts *o);

#endif
