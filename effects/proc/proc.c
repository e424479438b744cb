/* effects/proc/proc.c — what the effects that run a child process share:
 * `tool` (effects/proc/tool.c) and `agent.call` (effects/proc/agent-call.c).
 * Both run asynchronously in the session's loop (effects/proc/subproc.c) and are
 * answered when the child ends.
 *
 * Every child is described by the run's children configuration
 * (cfg->children, resolved once by the launcher: absolute paths, an
 * explicit environment), starts in its cwd ("/", never the agent's folder),
 * carries CHIDORI_PARENT_PID (it dies with this process, even a SIGKILLed
 * one) and, when the run has a cgroup, the place below it that the child
 * enters first (one budget for the run tree).  At most max_nested nested
 * agents and max_tools tools run at once; beyond that a call fails with
 * code ELIMIT.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "effects/proc/proc.h"
#include "effects/proc/subproc.h"
#include "runtime/runtime-internal.h"

int proc_engine(struct broker *b, struct err **err)
{
        if (!b->procs && subproc_engine_new(&b->procs, err) < 0)
                return -1;
        return 0;
}

/* A per-run cap refused the call: the agent's error, one stderr line and
 * a journal note say which cap and how to raise it. */
int proc_limit_refused(struct broker *b, struct err **err, const char *fmt, ...)
{
        char msg[256];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        broker_sink_note(b, "chidori: ", msg);
        broker_journal_note(b, "limit", msg);
        return err_setc(err, EFFECT_E_LIMIT, 0, "%s", msg);
}

/* The per-call part of a child's environment: die with us, and the place in
 * the run's cgroup (NULL-terminated in `extra`; *ret_place owned by the
 * caller, released with proc_release_place). */
int proc_child_env(struct broker *b, int64_t id, char ppid[32], char **ret_place, char *extra[3],
                   struct err **err)
{
        const struct broker_children *ch = b->cfg->children;
        *ret_place = NULL;
        if (ch->place && ch->place(ch->place_arg, (uint64_t)id, ret_place, err) < 0)
                return -1;
        snprintf(ppid, 32, "CHIDORI_PARENT_PID=%d", (int)getpid());
        extra[0] = ppid;
        extra[1] = *ret_place;
        extra[2] = NULL;
        return 0;
}

void proc_release_place(struct broker *b, int64_t id)
{
        const struct broker_children *ch = b->cfg->children;
        if (ch && ch->release)
                ch->release(ch->place_arg, (uint64_t)id);
}

/* ---- the family's hooks (effects/core.c, effects_table) ---- */

size_t broker_procs_fds(struct broker *b, struct pollfd *fds, size_t max, int *timeout_ms)
{
        if (!b->procs || subproc_pending(b->procs) == 0)
                return 0;
        return subproc_fds(b->procs, fds, max, timeout_ms);
}

int broker_procs_perform(struct broker *b, const struct pollfd *fds, size_t n, struct err **err)
{
        if (!b->procs || subproc_pending(b->procs) == 0)
                return 0;
        return subproc_perform(b->procs, fds, n, err);
}

/* call.cancel of a tool or a nested run: the child (and its process
 * group, or its box through the monitor) is killed now; its result would
 * be dropped anyway, its cost is not.  The session answers the call. */
void broker_procs_cancel(struct broker *b, int64_t id)
{
        struct pending_call *pc = broker_pending(b, id);
        if (!pc)
                return;
        const struct session_nested *nest = b->cfg->nested;
        if (nest && nest->cancel && strcmp(pc->op, "agent.call") == 0) {
                nest->cancel(nest->arg, b, id); /* a nested session of the embedder */
                return;
        }
        if (!subproc_cancel(b->procs, (uint64_t)id))
                return;
        if (strcmp(pc->op, "tool") == 0)
                b->ntools--;
        else if (strcmp(pc->op, "agent.call") == 0)
                b->nnested--;
        proc_release_place(b, id);
        if (pc->scratch)
                unlink(pc->scratch); /* the nested run's journal, never to be copied */
}

void broker_procs_free(struct broker *b)
{
        if (b->cfg->nested) /* nested sessions of the embedder: never answered now */
                b->cfg->nested->stop(b->cfg->nested->arg, b);
        subproc_engine_free(b->procs);
        b->procs = NULL;
}
