/* cli/grants.h — what a run is handed beyond computation: the
 * workspace directory, the http allowlist and caps, the approval switch.
 * Options of `run` (each with its environment variable), opened before the
 * worker starts, closed after the run.  The policy still decides every
 * gated call; these only say what exists to be granted. */
#ifndef CHIDORI_CLI_GRANTS_H
#define CHIDORI_CLI_GRANTS_H

#include <getopt.h>
#include <stdbool.h>
#include <stddef.h>

#include "common/strv.h"
#include "runtime/session.h"

struct session_config;
struct session_limits;
struct cgroup_run;
struct workspace;
struct ssrf_allow;
struct tools_registry;
struct secrets;
struct llm_config;
struct policy;
struct sandbox_opts;

struct grants_opts {
        const char *workspace_dir;     /* --workspace DIR [CHIDORI_WORKSPACE] */
        const char *allow_specs[64];   /* CHIDORI_HTTP_ALLOW_HOSTS, then each --allow-host */
        size_t nallow;
        unsigned long long http_max_response; /* --http-max-response SIZE [CHIDORI_HTTP_MAX_RESPONSE] */
        long http_timeout_ms;          /* --http-timeout MS [CHIDORI_HTTP_TIMEOUT_MS] */
        bool auto_approve;             /* CHIDORI_POLICY_AUTO_APPROVE=1 */
        const char *tools_file;        /* --tools FILE [CHIDORI_TOOLS] */
        const char *secrets_file;      /* --secrets FILE [CHIDORI_SECRETS] */
        long max_nested;               /* --max-nested N [CHIDORI_MAX_NESTED], 0 = the default */
        long max_tools;                /* --max-tools N [CHIDORI_MAX_TOOLS], 0 = the default */
};

#define GRANTS_DEFAULT_MAX_NESTED 4
#define GRANTS_DEFAULT_MAX_TOOLS 4
#define GRANTS_MAX_CONCURRENT 1024     /* the largest --max-nested / --max-tools */

/* What grants_open made. */
struct grants {
        struct workspace *ws;
        struct ssrf_allow *allow;
        struct tools_registry *tools;
        struct secrets *secrets;       /* --secrets: the values, wiped by grants_close */
        struct llm_config *llm;
        char *self_exe;
        char *agent_dir;
        struct policy **layers;        /* CHIDORI_POLICY_LAYERS, NULL-terminated */
        /* How the run starts its children (nested runs, tools), resolved
         * once here: broker_config.children points at it. */
        struct broker_children children;
        struct strv run_argv, run_envp, launch_opts, tool_env;
        struct cgroup_run *cg;         /* the run's cgroup node (grants_set_cgroup), or NULL */
};

/* What a nested run (callAgent) must repeat of the caller's command line:
 * everything that limits it (paths made absolute by grants_open).  The
 * broker adds the deadline left, the input, the journal and the agent. */
struct nested_src {
        const struct sandbox_opts *sb;
        bool untrusted, trusted, in_process, quiet;
        long js_deadline_ms;
        const char *state_dir;
        const char *agent_path;        /* the caller's agent: its folder bounds the callees */
        const struct session_limits *lim; /* the parent's limits (cli/bounds.h), or NULL */
        bool virtual_time;             /* --virtual-time: nested runs too */
};

enum {
        GOPT_WORKSPACE = 800, GOPT_ALLOW_HOST, GOPT_HTTP_MAX_RESPONSE, GOPT_HTTP_TIMEOUT, GOPT_TOOLS,
        GOPT_MAX_NESTED, GOPT_MAX_TOOLS, GOPT_SECRETS,
};

#define GRANTS_LONGOPTS                                                                               \
        { "workspace", required_argument, NULL, GOPT_WORKSPACE },                                     \
        { "allow-host", required_argument, NULL, GOPT_ALLOW_HOST },                                   \
        { "http-max-response", required_argument, NULL, GOPT_HTTP_MAX_RESPONSE },                     \
        { "http-timeout", required_argument, NULL, GOPT_HTTP_TIMEOUT },                               \
        { "tools", required_argument, NULL, GOPT_TOOLS },                                             \
        { "max-nested", required_argument, NULL, GOPT_MAX_NESTED },                                   \
        { "max-tools", required_argument, NULL, GOPT_MAX_TOOLS },                                     \
        { "secrets", required_argument, NULL, GOPT_SECRETS }

#define GRANTS_OPTIONS_HELP                                                                           \
        "  --workspace DIR       the directory chidori.workspace.* works on (none by default)\n"      \
        "                        [CHIDORI_WORKSPACE]\n"                                              \
        "  --allow-host HOST[:PORT]  let fetch reach this non-public host or address despite the\n"  \
        "                        SSRF guard; repeatable, comma lists too [CHIDORI_HTTP_ALLOW_HOSTS]\n" \
        "  --http-max-response SIZE  largest response body fetch accepts, e.g. 1M (default 16M)\n"   \
        "                        [CHIDORI_HTTP_MAX_RESPONSE]\n"                                      \
        "  --http-timeout MS     whole-request timeout for fetch (default 60000)\n"                   \
        "                        [CHIDORI_HTTP_TIMEOUT_MS]\n"                                       \
        "  --tools FILE          the commands chidori.tool() may run (JSON; docs/tools.md)\n"        \
        "                        [CHIDORI_TOOLS]; prompts use CHIDORI_LLM_BASE_URL,\n"             \
        "                        CHIDORI_LLM_API_KEY and CHIDORI_LLM_MODEL (docs/llm.md)\n"      \
        "  --secrets FILE        secrets fetch may send by reference: {{secret:NAME}} in a header\n" \
        "                        value, only to the secret's hosts (JSON; docs/secrets.md)\n"       \
        "                        [CHIDORI_SECRETS]\n"                                              \
        "  --max-nested N        nested agents (chidori.callAgent) running at once, 1-1024;\n"       \
        "                        more fail with ELIMIT (default 4) [CHIDORI_MAX_NESTED]\n"          \
        "  --max-tools N         tool processes (chidori.tool) running at once, 1-1024; more\n"     \
        "                        fail with ELIMIT (default 4) [CHIDORI_MAX_TOOLS]\n"

/* Read the environment; prints and returns -1 on a malformed value. */
int grants_opts_env(struct grants_opts *o);
/* 1 handled, 0 not ours, -1 bad (printed). */
int grants_opts_parse(struct grants_opts *o, const char *cmd, int c, const char *arg);
/* Open what the options name and point the session config at it.  -1 on
 * failure, err's code GRANTS_E_USAGE (a bad value: the caller prints
 * "chidori: <message>" and exits 2). */
enum { GRANTS_E_USAGE = 1 };
int grants_open(const struct grants_opts *o, const struct nested_src *ns, struct grants *g,
                struct session_config *cfg, struct err **err);
/* The run's cgroup node, once the worker has started (NULL before the
 * node goes away): where nested runs and tools are placed. */
void grants_set_cgroup(struct grants *g, struct cgroup_run *cg);
void grants_close(struct grants *g);

/* The environment of a nested run, built from `env` (environ's shape):
 * CHIDORI_* settings pass, path-valued ones made absolute against `cwd`,
 * the ones the command line or the broker sets dropped; of the rest only
 * PATH, HOME, TMPDIR, SSL_CERT_FILE, SSL_CERT_DIR (absolute) and the
 * sanitizer and `keep` variables.  Exposed for tests.  0, or -1 (out of
 * memory, or a relative path and no cwd). */
int grants_nested_env(char *const *env, const char *cwd, char *const *keep, struct strv *ret);

#endif
