/* effects/proc/proc.h — what the proc family's effects (tool.c,
 * agent-call.c) share, in effects/proc/proc.c: the subprocess engine, a
 * child's per-call environment and place in the run's cgroup, the per-run
 * caps.  Their fds in the session's loop (broker_procs_*, the proc family's hooks) are in
 * runtime/runtime-internal.h with the other families'. */
#ifndef CHIDORI_EFFECTS_PROC_H
#define CHIDORI_EFFECTS_PROC_H

#include <stdint.h>

#include "common/err.h"

struct broker;

/* The subprocess engine (b->procs), created on first use. */
int proc_engine(struct broker *b, struct err **err);
/* A per-run cap refused the call: the agent's error (code EFFECT_E_LIMIT),
 * one stderr line and a journal note say which cap and how to raise it.
 * Returns -1. */
int proc_limit_refused(struct broker *b, struct err **err, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));
/* The per-call part of a child's environment: die with us, and the place in
 * the run's cgroup (NULL-terminated in `extra`; *ret_place owned by the
 * caller, released with proc_release_place). */
int proc_child_env(struct broker *b, int64_t id, char ppid[32], char **ret_place, char *extra[3],
                   struct err **err);
void proc_release_place(struct broker *b, int64_t id);
/* agent.call: a nested run's journal (JSON lines) into ours as the
 * "nested" note of call `id` (nothing when we keep no journal). */
void proc_nested_note(struct broker *b, int64_t id, const char *text, const char *callee);

#endif
