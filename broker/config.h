/* broker/config.h — the run the monitor hands the broker: the config blob
 * (chan/chan.h blob, sealed memfd at fd 4) of "key=value" strings, and the
 * run itself as a session over the channel.
 *
 * Keys (every one optional but agent and agent_dir; an unknown key or a
 * malformed value is an error: the monitor wrote it):
 *   agent=REL            the agent file, beneath the agent folder (OPEN_AGENT_FILE)
 *   agent_dir=/ABS       the agent folder (the COMMIT names it)
 *   run_id=run-HEX       the run's id
 *   deadline_ms=N        the run's deadline (0: none)
 *   js_deadline_ms=N     the engine's CPU budget (0: none)
 *   cpu_secs=N           the box's CPU-seconds limit, for the outcome's message
 *   json=0|1             --json
 *   quiet=0|1            --quiet
 *   untrusted=0|1, trusted=0|1, policy_profile=NAME, policy_inline=JSON
 *   state_dir=/ABS       the memory store's folder (attached by the monitor)
 *   mem_ns=TEXT          the memory namespace (default: agent_dir/agent)
 *   input=JSON           the run's input (default null)
 *   journal_fd=N         the journal to write: a descriptor the monitor opened
 *                        (the operator's path, which the broker cannot open)
 *   replay_fd=N          replay this journal (a descriptor the monitor opened for
 *                        reading): the agent must be the recorded one, the input
 *                        and run id are the journal's, no call is performed
 */
#ifndef CHIDORI_BROKER_CONFIG_H
#define CHIDORI_BROKER_CONFIG_H

#include <stdbool.h>

#include "common/err.h"

struct broker_config {
        const char *agent, *agent_dir, *run_id;
        long deadline_ms, js_deadline_ms, cpu_secs;
        bool json, quiet, untrusted, trusted;
        const char *policy_profile, *policy_inline;
        const char *state_dir, *mem_ns, *input;
        long journal_fd;                   /* -1: none */
        long replay_fd;                    /* -1: none */
};

/* Parse the strings of a config blob (pointers into it kept). */
int broker_config_parse(const char *const *strs, size_t n, struct broker_config *ret, struct err **err);

/* The run: config from config_fd, the box through the channel, the
 * outcome printed on stdout/stderr, RESULT sent.  Returns the exit code. */
int broker_run(int chan, int config_fd);

#endif
