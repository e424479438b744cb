/* broker/config.h — the run the monitor hands the broker: the config blob
 * (chan/chan.h blob, sealed memfd at fd 4) of "key=value" strings, and the
 * run itself as a session over the channel.
 *
 * Keys (every one optional but agent and agent_dir; an unknown key or a
 * malformed value is an error: the monitor wrote it):
 *   agent=REL            the agent file, beneath the agent folder (OPEN_AGENT_FILE)
 *   agent_dir=/ABS       the agent folder (the COMMIT names it)
 *   agent_path=PATH      the agent as the operator named it, for messages
 *   agent_stdin=1        the agent was read from stdin (AGENT '-'): the CLI
 *                        saved it as agent= (--agent-name, stdin.js) in a fresh
 *                        folder, agent_dir=; the journal says "-", the memory
 *                        namespace is stdin:NAME
 *   run_id=run-HEX       the run's id
 *   deadline_ms=N        the run's deadline (0: none)
 *   js_deadline_ms=N     the engine's CPU budget (0: none; absent: 60000, or
 *                        10000 under a policy that is not permissive, as run's)
 *   jit=auto|0|1         --jit / --no-jit; auto: off under a policy that is not
 *                        permissive (the SPAWN asks the monitor for it off)
 *   cpu_secs=N           the box's CPU-seconds limit, for the outcome's message
 *   json=0|1             --json
 *   quiet=0|1            --quiet
 *   untrusted=0|1, trusted=0|1, policy_profile=NAME, policy_inline=JSON
 *   state_dir=/ABS       the memory store's folder (attached by the monitor)
 *   mem_ns=TEXT          the memory namespace (default: agent_dir/agent)
 *   input=JSON           the run's input (default null), kept as written
 *   input_file=PATH, input_fd=N   --input-file (stdin too: the monitor passes a
 *                        copy of it), instead of input=
 *   input_arg_fd=N       --input's text in a sealed memfd (longer than a blob
 *                        string may be), instead of input=
 *   journal_fd=N         the journal to write: a descriptor the monitor opened
 *                        (the operator's path, which the broker cannot open)
 *   journal_file=PATH    that journal's path as the operator gave it (messages)
 *   replay_fd=N          replay this journal (a descriptor the monitor opened for
 *                        reading): the agent must be the recorded one, the input
 *                        and run id are the journal's, no call is performed
 *   replay_file=PATH     the journal's path as the operator gave it (messages)
 *   replay_agent_given=0|1  replay's --agent named the agent: a changed one is
 *                        replayed with a warning instead of refused
 *   agent_from_journal=1 replay without --agent: no agent/agent_dir; the agent
 *                        is the journal header's, asked of the monitor by
 *                        OPEN_AGENT (an absolute path) once the header is read
 *   virtual_time=0|1     --virtual-time (a replay takes the journal's clock)
 *   answers_file=PATH, answers_fd=N   --answers: its path (for messages) and
 *                        the descriptor the monitor opened
 *   policy_file=PATH, policy_fd=N | policy_errno=E   CHIDORI_POLICY_FILE: its
 *                        path, and the descriptor the monitor opened or the
 *                        errno of its failed open (fails closed, as before)
 *   tools_file=PATH, tools_fd=N | tools_errno=E      --tools, the same way
 *   quotas_file=PATH, quotas_fd=N | quotas_errno=E   serve's --quotas, the same way
 *   workspace=/ABS       --workspace (attached at its path by the monitor)
 *   max_calls=N, max_queue=N, max_log=N, max_journal=N, max_vfs=N,
 *   max_memory_store=N, max_workspace_write=N, max_timers=N   the parent's
 *                        limits (0: default)
 *   max_tools=N          --max-tools (0: the default, 4)
 *   tz=ZONE              --tz: the box's zone, in the journal's header ("" or
 *                        absent: UTC; a replay takes the journal's)
 *   env=NAME=VALUE       one entry of process.env (--env); repeatable
 *   allow_host=SPEC      --allow-host; repeatable
 *   secret=NAME VALUE, secret_host=NAME HOST   --secrets, as the CLI read it
 *                        (effects/net/secrets.h): a secret's value, then each
 *                        of its hosts; repeatable, in that order
 *   llm=CHIDORI_LLM_NAME=VALUE   the model provider's settings (docs/llm.md),
 *                        as the monitor's environment has them; repeatable
 *   http_max_response=N, http_timeout_ms=N, auto_approve=0|1
 *   max_nested=N         --max-nested: nested agents (callAgent) at once (0: 4)
 *   pids_source=TEXT, pids_max=N   where the box's pids limit came from and its
 *                        value, for "the engine could not start its threads"
 *   net_lib_fd=N         libchidori-net.so, opened by the monitor (fetch, prompt)
 *   esbuild=/ABS         the esbuild the monitor found (absent: none): a SPAWN of
 *                        kind bundle names it (broker/bundle.c)
 *   tty_fd=N             the terminal (opened by the monitor when stdin is one):
 *                        ask_before and chidori.input() ask there
 *   serve=1              chidori serve (broker/serve.h): the server instead of
 *                        one run; with it:
 *   health_fd=N, health_desc=TEXT   --health-listen's socket (serve only; optional)
 *   listen_fd=N, listen_desc=TEXT   the listening socket the CLI bound, and
 *                        its Listening: text
 *   token_file=PATH, token_fd=N | serve_token=TOKEN   --token-file (opened by
 *                        the CLI) or CHIDORI_SERVE_TOKEN; neither: no token
 *   max_body=N, conn_timeout=N, max_conns=N, max_running=N, max_queued=N,
 *   grace=N, approval_ttl=N, session_ttl=N, lease=N, replica_id=ID, shared_memory=0|1,
 *   shared_workspace=0|1   serve's options (docs/serve.md)
 *   store=SPEC           serve --store: sqlite:PATH or postgres://... (server/store.h)
 *   store_env=NAME=VALUE libpq's PG* variables of the CLI's environment, set
 *                        in the broker's before it connects (repeatable)
 * Every descriptor is at 5 or above and named once.
 */
#ifndef CHIDORI_BROKER_CONFIG_H
#define CHIDORI_BROKER_CONFIG_H

#include <stdbool.h>

#include "common/err.h"

#define BROKER_CONFIG_ENV_MAX 128
#define BROKER_CONFIG_ALLOW_MAX 64
#define BROKER_CONFIG_SECRETS_MAX 2048  /* secret= and secret_host= strings */
#define BROKER_CONFIG_STORE_ENV_MAX 32

struct broker_config {
        const char *agent, *agent_dir, *run_id;
        const char *agent_path;            /* as the operator named it (messages); NULL: agent_dir/agent */
        const char *esbuild;               /* the monitor's esbuild, or NULL */
        long deadline_ms, js_deadline_ms, cpu_secs;
        long jit;                          /* -1 auto, 0, 1 */
        bool json, quiet, untrusted, trusted, replay_agent_given, auto_approve, virtual_time, agent_from_journal;
        bool agent_stdin;                  /* the agent came from stdin (saved in a folder of its own) */
        const char *policy_profile, *policy_inline;
        const char *state_dir, *mem_ns, *input;
        long journal_fd;                   /* -1: none */
        long replay_fd;                    /* -1: none */
        const char *answers_file, *policy_file, *tools_file, *input_file, *replay_file, *journal_file;
        long answers_fd, policy_fd, tools_fd, tty_fd, input_fd, net_lib_fd, input_arg_fd; /* -1: none */
        long policy_errno, tools_errno;
        const char *quotas_file;  /* serve's --quotas (server/quotas.h) */
        long quotas_fd, quotas_errno;
        const char *workspace, *tz;
        long max_calls, max_queue, max_log, max_journal, max_vfs, max_memory_store, max_workspace_write, max_timers;
        long max_tools;
        long http_max_response, http_timeout_ms;
        const char *pids_source;           /* "--pids 8" etc., for the pids-too-low report */
        long pids_max;
        long max_nested;                   /* --max-nested (0: the default) */
        const char *env[BROKER_CONFIG_ENV_MAX];       /* "NAME=VALUE" */
        size_t n_env;
        const char *allow_host[BROKER_CONFIG_ALLOW_MAX];
        size_t n_allow;
        const char *llm[BROKER_CONFIG_ALLOW_MAX];    /* "CHIDORI_LLM_NAME=VALUE" */
        size_t n_llm;
        const char *secret[BROKER_CONFIG_SECRETS_MAX]; /* "secret=NAME VALUE" / "secret_host=NAME HOST", in order */
        size_t n_secret;
        /* chidori serve (serve=1) */
        bool serve, shared_memory, shared_workspace;
        long listen_fd, token_fd;          /* -1: none */
        long health_fd;                    /* --health-listen's socket, -1: none */
        const char *health_desc;           /* its http://HOST:PORT */
        const char *listen_desc, *token_file, *serve_token;
        const char *store;                 /* --store, or NULL: serve.db in state_dir */
        const char *store_env[BROKER_CONFIG_STORE_ENV_MAX]; /* "PGNAME=VALUE" */
        size_t n_store_env;
        long max_body, conn_timeout, max_conns, max_running, max_queued, grace, approval_ttl, session_ttl, lease;
        long pool;                         /* --pool: the monitor's warm pool (for /metrics) */
        const char *replica_id;            /* --replica-id, or NULL: made up */
};

struct journal;
struct cJSON;
/* A journal's first line as `chidori run` writes it: agent is the file's
 * absolute path; sha256 gets the script's. */
void broker_journal_header(struct journal *j, const char *run_id, const char *agent, const char *filename,
                           const char *ns, const char *tz, bool virtual_time, const struct cJSON *input,
                           const struct cJSON *env, const char *script, char sha256[65]);

/* Parse the strings of a config blob (pointers into it kept). */
int broker_config_parse(const char *const *strs, size_t n, struct broker_config *ret, struct err **err);

/* The run: config from config_fd, the box through the channel, the
 * outcome printed on stdout/stderr, RESULT sent.  Returns the exit code. */
int broker_run(int chan, int config_fd);

#endif
