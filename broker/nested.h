/* broker/nested.h — callAgent in the broker: a nested agent is a second
 * session in this process, on the same loop, whose worker is a box asked
 * of the monitor (broker/provider.c), its file read by OPEN_AGENT_FILE.
 *
 * What it gets is what a nested `chidori run` gets from the one-process
 * path (cli/grants.c): the caller's policy plus the stricter layer asked
 * for, one level deeper, the deadline left, the memory store (its own
 * namespace: its path), the workspace, the allowed hosts and http caps,
 * the tools, the parent's limits; no process.env, no --answers, no
 * terminal.  Its journal lines are collected in memory (a memfd, at most
 * NESTED_JOURNAL_MAX) and copied into the caller's as the "nested" note;
 * its value, or its error, is the call's answer, with the messages of
 * effects/proc/agent-call.c's subprocess path.
 */
#ifndef CHIDORI_BROKER_NESTED_H
#define CHIDORI_BROKER_NESTED_H

#include <signal.h>
#include <stdint.h>

#include "runtime/session.h"

#define NESTED_JOURNAL_MAX ((uint64_t)64 << 20)

struct chan_boxes;
struct evloop;
struct nested_run;

struct nested_ctx {
        struct session_nested hook;       /* give &hook to every session's config */
        struct chan_boxes *cb;
        /* Where the nested workers' boxes come from: chidori serve's
         * session provider (a chan_tree: its run tree); NULL: cb's. */
        const struct box_provider *boxes;
        struct evloop *loop;
        const char *top_dir;              /* the COMMIT's agent folder: OPEN_AGENT_FILE is beneath it */
        const char *esbuild;              /* the monitor's esbuild (a callee that needs bundling), or NULL */
        const char *tz;                   /* the journal header's zone */
        bool virtual_time;                /* --virtual-time: the nested sessions' clock too */
        long js_deadline_ms, cpu_secs;    /* for the outcome's messages */
        volatile sig_atomic_t *stop;
        struct nested_run *runs;
};

void nested_init(struct nested_ctx *x, struct chan_boxes *cb, struct evloop *loop, const char *top_dir,
                 unsigned max_nested);
/* Every nested run left is ended (its box killed) and freed: right before
 * chan_boxes_free and evloop_free, with no loop iteration between (the
 * provider's later events for their boxes are dropped with it). */
void nested_free(struct nested_ctx *x);

/* `dir/rel`'s folder as an absolute path (for a session's agent_dir). */
char *nested_agent_folder(const char *dir, const char *rel);

#endif
