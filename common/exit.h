/* common/exit.h — the exit codes of a chidori process (ARCHITECTURE.md,
 * failure mapping): the CLI maps every way a run ends to one of them, and the
 * sandbox layer returns them from a failed start. */
#ifndef CHIDORI_COMMON_EXIT_H
#define CHIDORI_COMMON_EXIT_H

enum {
        EXIT_OK = 0,
        EXIT_AGENT_ERROR = 1,
        EXIT_USAGE = 2,
        EXIT_PROTOCOL = 70,
        EXIT_LAYER_UNAVAILABLE = 78,
        EXIT_DEADLINE = 124,
        EXIT_OOM = 137,
        EXIT_CPU = 152,
        EXIT_SECCOMP = 159,
};

#endif
