/* cli/run.c — `chidori run` and `chidori replay`: options, then one
 * spawn -> broker -> wait -> report sequence shared by both. */
#define _GNU_SOURCE
#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/bounds.h"
#include "cli/bundle.h"
#include "cli/cli.h"
#include "cli/grants.h"
#include "cli/handover.h"
#include "cli/options.h"
#include "cli/suggest.h"
#include "common/budget.h"
#include "common/cleanup.h"
#include "common/dlib.h"
#include "common/text.h"
#include "common/tmpown.h"
#include "common/util.h"
#include "effects/effects.h"
#include "effects/memory/memstore.h"
#include "effects/net/secrets.h"
#include "policy/policy.h"
#include "proto/json.h"
#include "runtime/evloop.h"
#include "runtime/journal.h"
#include "runtime/header.h"
#include "runtime/outcome.h"
#include "runtime/quota.h"
#include "sandbox/seccomp.h"
#include "server/quotas.h"
#include "sandbox/tz.h"

/* The most variables --env and CHIDORI_ENV may pass together. */
#define ENV_NAMES_MAX 128

struct run_opts {
        const char *agent_path;
        const char *broker_user;  /* --broker-user NAME|UID (else CHIDORI_BROKER_USER, monitor/broker.c) */
        const char *input_json;
        const char *input_file;
        const char *journal_path;
        const char *state_dir;
        const char *answers_path;
        const char *mem_ns;
        const char *agent_name;   /* --agent-name: the name of an agent read from stdin */
        long js_deadline_ms;      /* -1 until given or defaulted (resolve_cpu_budget) */
        bool js_deadline_set;     /* given by --js-deadline or CHIDORI_JS_DEADLINE_MS */
        struct sandbox_opts sb;
        struct grants_opts gr;    /* run only: what the agent is handed */
        struct session_limits lim; /* the parent's limits (cli/bounds.h) */
        double started;           /* mono_ms() at the command's start: --deadline counts from here */
        bool json, quiet, in_process;
        bool untrusted, trusted;  /* --untrusted / --trusted */
        bool tz_flag;             /* sb.tz came from --tz (else CHIDORI_TZ or the default) */
        bool force;               /* --force: --journal may replace a file that is not a journal */
        bool pids_flag;           /* sb.pids_max came from --pids (else CHIDORI_PIDS_MAX or the default) */
        const char *env_names[ENV_NAMES_MAX]; /* --env NAME, in order (CHIDORI_ENV's are added later) */
        int n_env;
        bool virtual_time;        /* --virtual-time / CHIDORI_VIRTUAL_TIME=1: timers never wait */
        const char *quotas_file;  /* --quotas FILE [CHIDORI_QUOTAS]: its "session" part */
        struct quota_limits quotas; /* ... read and checked (check_quotas) */
};

static int usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int usage_error(const char *cmd, const char *fmt, ...)
{
        va_list ap;
        va_start(ap, fmt);
        fprintf(stderr, "chidori: ");
        vfprintf(stderr, fmt, ap);
        fprintf(stderr, "\nTry 'chidori %s --help'.\n", cmd);
        va_end(ap);
        return EXIT_USAGE;
}

static int env_ms(const char *name, long *ret)
{
        const char *v = getenv(name);
        if (!v || !*v)
                return 0;
        if (parse_nonneg(v, ret) < 0) {
                fprintf(stderr, "chidori: %s='%s' is not a number of milliseconds (expected an integer >= 0)\n",
                        name, v);
                return -1;
        }
        return 0;
}

/* CHIDORI_VIRTUAL_TIME: "1" (virtual clock) or "0" / unset (real time). */
static int env_virtual_time(bool *on)
{
        const char *v = getenv("CHIDORI_VIRTUAL_TIME");
        if (!v || !*v || strcmp(v, "0") == 0)
                return 0;
        if (strcmp(v, "1") == 0) {
                *on = true;
                return 0;
        }
        fprintf(stderr, "chidori: CHIDORI_VIRTUAL_TIME='%s' is not valid (expected '1' or '0')\n", v);
        return -1;
}

/* CHIDORI_ISOLATE: "process" (default) or "off". */
static int env_isolate(bool *in_process)
{
        const char *v = getenv("CHIDORI_ISOLATE");
        if (!v || !*v || strcmp(v, "process") == 0)
                return 0;
        if (strcmp(v, "off") == 0) {
                *in_process = true;
                return 0;
        }
        fprintf(stderr, "chidori: CHIDORI_ISOLATE='%s' is not valid (expected 'process' or 'off')\n", v);
        return -1;
}

/* The user's JSON text, checked (strict, proto/json.h) and kept as
 * written: the agent gets exactly these numbers and strings.  *ret is a raw
 * node, or (raw_children) an array or object whose entries are. */
static int parse_json_arg(const char *what, const char *text, size_t len, bool raw_children, cJSON **ret)
{
        struct json_error je;
        if (json_validate(text, len, NULL, &je, NULL) < 0) {
                size_t l, c;
                json_line_col(text, len, je.offset, &l, &c);
                char q[200];
                fprintf(stderr, "chidori: %s is not valid JSON (line %zu, column %zu): %s; quote strings, e.g. "
                                "'\"text\"'\n",
                        what, l, c, text_term(je.what, strlen(je.what), q, sizeof(q)));
                return -1;
        }
        struct json_span all = { text, len };
        cJSON *j = raw_children ? json_to_cjson(all, NULL, true) : json_cjson_raw(all);
        if (!j) {
                fprintf(stderr, "chidori: %s: out of memory\n", what);
                return -1;
        }
        *ret = j;
        return 0;
}

/* After an in-process run the engine library and its threads live in this
 * process; nothing is left to release that the kernel does not, and
 * LeakSanitizer cannot walk JavaScriptCore's reservations: leave now. */
static int in_process_exit(const struct run_opts *o, int code)
{
        if (!o->in_process)
                return code;
        code = cli_json_end(code);
        fflush(NULL);
        _exit(code);
}

void make_run_id(char out[40])
{
        unsigned char b[8];
        if (getrandom(b, sizeof(b), 0) != sizeof(b))
                memset(b, 0, sizeof(b));
        snprintf(out, 40, "run-%02x%02x%02x%02x%02x%02x%02x%02x", b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]);
}

/* Where the pids limit came from, for messages. */
static void pids_source(const struct run_opts *o, char *buf, size_t len)
{
        const char *env = getenv("CHIDORI_PIDS_MAX");
        unsigned long long n = (unsigned long long)o->sb.pids_max;
        if (o->pids_flag)
                snprintf(buf, len, "--pids %llu", n);
        else if (env && *env)
                snprintf(buf, len, "CHIDORI_PIDS_MAX=%llu", n);
        else
                snprintf(buf, len, "--pids %llu, the default", n);
}

static void banner(const struct run_opts *o, const char *isolation, const struct policy *pol)
{
        if (o->quiet)
                return;
        char desc[512];
        policy_describe(pol, desc, sizeof(desc));
        fprintf(stderr, "Isolation: %s\n", isolation);
        fprintf(stderr, "Policy: %s\n", desc);
}

/* The engine's CPU budget by default (docs/sandbox.md, "CPU"): a runaway
 * loop ends without the operator asking for it.  Code run under a policy
 * that is not permissive (--untrusted) gets less: it has no reason to compute
 * for long, and a shorter bound limits what a hostile agent burns.  There is
 * no default wall-clock deadline: waiting on a slow tool is not a runaway. */
#define JS_BUDGET_DEFAULT_MS CLI_JS_BUDGET_DEFAULT_MS
#define JS_BUDGET_UNTRUSTED_MS CLI_JS_BUDGET_UNTRUSTED_MS

static void resolve_cpu_budget(struct run_opts *o, const struct policy *pol)
{
        o->js_deadline_set = o->js_deadline_ms >= 0;
        if (!o->js_deadline_set)
                o->js_deadline_ms = policy_fallback(pol) != POLICY_ALLOW ? JS_BUDGET_UNTRUSTED_MS : JS_BUDGET_DEFAULT_MS;
        o->sb.engine_cpu_ms = o->js_deadline_ms;
}

/* Select the policy (ARCHITECTURE.md, "Policy"): --untrusted beats every
 * CHIDORI_POLICY* variable, then FILE, inline JSON, PROFILE, the surface
 * default.  A malformed source fails closed to untrusted with a warning
 * that is printed even with --quiet. */
static int select_policy(const struct run_opts *o, struct policy **ret)
{
        struct policy_sources src = {
                .surface = POLICY_SURFACE_RUN,
                .flag_untrusted = o->untrusted,
                .flag_trusted = o->trusted,
                .env_file = getenv("CHIDORI_POLICY_FILE"),
                .env_inline = getenv("CHIDORI_POLICY"),
                .env_profile = getenv("CHIDORI_POLICY_PROFILE"),
        };
        char *warning = NULL;
        struct err *err = NULL;
        if (policy_select(&src, ret, &warning, &err) < 0) {
                fprintf(stderr, "chidori: %s\n", err_msg(err));
                err_free(err);
                return -1;
        }
        if (warning)
                fprintf(stderr, "chidori: warning: %s\n", warning);
        free(warning);
        return 0;
}

struct run_ctx {
        struct policy *policy;
        struct grants grants;
        struct agent agent;
        cJSON *input;
        cJSON *answers;
        struct memstore *mem;
        struct journal *journal;
        struct replay *replay;
        char *ns;
        cJSON *env;               /* process.env: {NAME: value} from --env / CHIDORI_ENV, or NULL */
        char run_id[40];
        struct quota quota;       /* --quotas: the run's use */
};

static void run_ctx_free(struct run_ctx *c)
{
        policy_free(c->policy);
        grants_close(&c->grants);
        agent_free(&c->agent);
        cJSON_Delete(c->input);
        cJSON_Delete(c->answers);
        cJSON_Delete(c->env);
        memstore_close(c->mem);
        journal_close(c->journal);
        replay_free(c->replay);
        free(c->ns);
}

static void journal_header(struct run_ctx *c, const char *tz, bool virtual_time)
{
        const struct journal_header_info info = {
                .version = CHIDORI_VERSION, .run_id = c->run_id,
                .agent = c->agent.abspath ? c->agent.abspath : "-", /* "-": read from stdin */
                .agent_sha256 = c->agent.sha256, .filename = c->agent.filename, .memory_ns = c->ns, .tz = tz,
                .virtual_time = virtual_time, .input = c->input, .env = c->env,
        };
        cJSON *h = journal_header_line(&info);
        journal_file_ops.header(c->journal, h, NULL);  /* a huge --input may pass --max-journal: then the first call stops */
        cJSON_Delete(h);
}

static void journal_end(struct run_ctx *c, const struct session_outcome *o, int code)
{
        cJSON *e = session_outcome_end_line(o, NULL, code);
        journal_file_ops.end(c->journal, e, NULL);  /* also when the journal is full; synced */
        cJSON_Delete(e);
}

/* The deadline passed or a stop signal came before the worker started (a
 * long replay load): the same message and exit status as during the run. */
static int stopped_early(const struct run_opts *o, enum budget_reason why)
{
        struct session_outcome out = { .blocked_syscall = -1 };
        if (why == BUDGET_DEADLINE) {
                out.end = SESSION_END_DEADLINE;
                if (asprintf(&out.message, "deadline exceeded (%ld ms)", o->sb.deadline_ms) < 0)
                        out.message = NULL;
        } else {
                out.end = SESSION_END_INTERRUPTED;
        }
        out.wall_ms = mono_ms() - o->started;
        struct outcome_context oc = {
                .js_deadline_ms = o->js_deadline_ms, .cpu_secs = o->sb.cpu_secs,
                .stop_signal = (int)launcher_stop_signal, .syscall_name = seccomp_syscall_name,
        };
        int code = report_outcome(&out, o->json, &oc, "");
        session_outcome_clear(&out);
        return code;
}

/* spawn -> broker -> wait -> report. */
/* The box started (the session is running): the banner, then --json
 * prints the run's own outcome. */
struct started_ctx {
        const struct run_opts *o;
        const struct run_ctx *c;
        const struct spawn_opts *so;
};

static void on_running(void *arg)
{
        const struct started_ctx *k = arg;
        cli_json_stop();
        banner(k->o, k->so->banner, k->c->policy);
        if (k->o->in_process && policy_fallback(k->c->policy) != POLICY_ALLOW && !k->o->quiet)
                fprintf(stderr, "chidori: note: untrusted code is running without process isolation "
                                "(--no-isolate): a bug in the engine would land in this process; drop "
                                "--no-isolate to run it in the sandbox\n");
}

/* The checks before anything starts: a worker to start, a box for the
 * limits asked.  0, or the exit code. */
static int preflight(const struct run_opts *o, char **worker_path)
{
        struct err *err = NULL;
        if (!o->in_process && find_worker(worker_path, &err) < 0) {
                fprintf(stderr, "chidori: %s\n", err_msg(err));
                err_free(err);
                return EXIT_USAGE;
        }
        if (o->in_process && o->sb.require) {
                fprintf(stderr, "chidori: sandbox layer unavailable: process isolation (--no-isolate / "
                                "CHIDORI_ISOLATE=off runs the engine in this process)\n");
                return EXIT_LAYER_UNAVAILABLE;
        }
        /* A box limit asked for explicitly has no box to hold it in-process. */
        const char *boxlimit = !o->in_process                                     ? NULL
                               : (o->sb.set & SB_SET_MEMORY) && o->sb.memory_bytes ? "--memory"
                               : (o->sb.set & SB_SET_PIDS)                         ? "--pids"
                               : (o->sb.set & SB_SET_CPUS)                         ? "--cpus"
                               : (o->sb.set & SB_SET_CPU_SECS) && o->sb.cpu_secs   ? "--cpu-secs"
                                                                                   : NULL;
        if (boxlimit) {
                fprintf(stderr, "chidori: sandbox layer unavailable: %s (--no-isolate / CHIDORI_ISOLATE=off runs "
                                "the engine in this process: no box to hold it; drop one or the other)\n", boxlimit);
                return EXIT_LAYER_UNAVAILABLE;
        }
        return 0;
}

/* Drive the loop until the session has ended; a stop signal cancels it. */
static int drive(struct evloop *loop, struct session *s, struct err **err)
{
        bool cancelled = false;
        while (session_state(s) != SESSION_ENDED) {
                /* The handler may run just before the wait (or on another
                 * thread): never sleep longer than 100 ms unseen. */
                if (evloop_run_once(loop, 100, err) < 0)
                        return -1;
                if (launcher_stop_signal && !cancelled) {
                        char why[64];
                        snprintf(why, sizeof(why), "interrupted by signal %d", (int)launcher_stop_signal);
                        session_cancel(s, why);
                        cancelled = true;
                }
        }
        return 0;
}

/* What happened, told to the user (and the journal): the exit code. */
static int conclude(const struct run_opts *o, struct run_ctx *c, struct session_outcome *out, bool printed)
{
        struct err *err = NULL;
        if (out->end == SESSION_END_SPAWN) {
                /* Nothing ran: no outcome document, no end line. */
                if (out->spawn_layer)
                        fprintf(stderr, "chidori: %s\n", out->message ? out->message : "");
                else
                        fprintf(stderr, "chidori: start the engine worker: %s\n", out->message ? out->message : "");
                return out->spawn_layer ? EXIT_LAYER_UNAVAILABLE : EXIT_PROTOCOL;
        }
        /* The engine could not start its threads (the limit was at least
         * ENGINE_PIDS_MIN, yet this host's engine wanted more). */
        if (out->end == SESSION_END_EOF && !out->got_ready && out->pids_limit_hit) {
                char src[64];
                pids_source(o, src, sizeof(src));
                int code = report_pids_too_low(out, o->json, c->run_id, src, o->sb.pids_max);
                if (c->journal)
                        journal_end(c, out, code);
                return code;
        }
        if (out->quota) {
                quota_run_end(&c->quota, out->wall_ms);
                report_usage(out);
        }
        /* Bundled code: the error's place in the agent's own files. */
        if (out->error && c->agent.map && sourcemap_map_error(c->agent.map, c->agent.filename, out->error, &err) < 0) {
                fprintf(stderr, "chidori: warning: %s; error positions point into the bundle\n", err_msg(err));
                err_free(err);
        }
        struct outcome_context oc = {
                .js_deadline_ms = o->js_deadline_ms,
                .cpu_secs = sandbox_cpu_secs(&o->sb, !o->in_process),
                .stop_signal = (int)launcher_stop_signal,
                .syscall_name = seccomp_syscall_name,
        };
        int code = printed ? EXIT_OK : report_outcome(out, o->json, &oc, c->run_id);
        if (c->journal)
                journal_end(c, out, code);
        return code;
}

/* The clock a journal's run used: its header's "time"; a journal without
 * one is from before real timers (always virtual then). */
static bool replay_virtual_time(const struct replay *r)
{
        const cJSON *t = cJSON_GetObjectItemCaseSensitive(replay_header(r), "time");
        return !cJSON_IsString(t) || strcmp(t->valuestring, "real") != 0;
}

/* session -> loop -> outcome.  The CLI is a client of the session engine
 * (runtime/session.h): its box provider (cli/provider.c) and its sink
 * (cli/sink.c). */
static int execute(const struct run_opts *o, struct run_ctx *c)
{
        struct err *err = NULL;
        _cleanup_free_ char *worker_path = NULL;
        if (c->agent.map_warning)
                fprintf(stderr, "chidori: warning: %s\n", c->agent.map_warning);
        int pc = preflight(o, &worker_path);
        if (pc)
                return pc;
        bool tty = isatty(0) == 1;
        struct session_config cfg = {
                .script = c->agent.script,
                .filename = c->agent.filename,
                .esm = c->agent.esm,
                .input = c->input,
                .env = c->env,
                .run_id = c->run_id,
                .js_deadline_ms = o->js_deadline_ms,
                .mem = c->mem,
                .mem_ns = c->ns,
                .answers = c->answers,
                .can_input = tty,
                .can_approve = tty,
                .journal = { c->journal ? &journal_file_ops : NULL, c->journal },
                .mode = c->replay ? SESSION_REPLAY : SESSION_LIVE,
                .replay = { c->replay ? &replay_file_ops : NULL, c->replay },
                .deadline_ms = o->sb.deadline_ms,
                .deadline_from = o->started,
                .quiet_logs = c->replay != NULL,
                .virtual_time = c->replay ? replay_virtual_time(c->replay) : o->virtual_time,
                .stop = &launcher_stop_signal,
                .policy = c->policy,
                .limits = o->lim,
                .effects = &effects_table,
        };
        if (o->quotas_file && !c->replay) {
                quota_run_setup(&c->quota, &o->quotas, &cfg.deadline_ms);
                cfg.quota = &c->quota;
        }
        if (!c->replay) {
                struct nested_src ns = {
                        .sb = &o->sb, .untrusted = o->untrusted, .trusted = o->trusted,
                        .in_process = o->in_process, .js_deadline_ms = o->js_deadline_set ? o->js_deadline_ms : -1,
                        .state_dir = o->state_dir, .lim = &o->lim, .virtual_time = o->virtual_time,
                        .agent_path = strcmp(o->agent_path, "-") == 0 ? NULL : o->agent_path,
                };
                if (grants_open(&o->gr, &ns, &c->grants, &cfg, &err) < 0) {
                        fprintf(stderr, "chidori: %s\n", err_msg(err));
                        err_free(err);
                        return EXIT_USAGE;
                }
        }
        struct spawn_opts so = {
                .in_process = o->in_process ? &worker_inproc : NULL, .worker_path = worker_path,
                /* the cgroup leaf is "run-<hex>" */
                .run_id = strncmp(c->run_id, "run-", 4) == 0 ? c->run_id + 4 : c->run_id, .sandbox = &o->sb,
        };
        struct cli_boxes boxes;
        cli_boxes_init(&boxes, &so, &c->grants);
        struct cli_sink sink;
        struct started_ctx started = { o, c, &so };
        cli_sink_init(&sink, o->json, o->sb.deadline_ms > 0 ? o->started + (double)o->sb.deadline_ms : 0,
                      &launcher_stop_signal);
        sink.running = on_running;
        sink.running_arg = &started;
        struct evloop *loop = NULL;
        struct session *s = NULL;
        int code = EXIT_PROTOCOL;
        if (evloop_new(&loop, &err) < 0 || session_new(loop, &cfg, &sink.sink, &boxes.provider, &s, &err) < 0 ||
            session_start(s, &err) < 0 || drive(loop, s, &err) < 0) {
                fprintf(stderr, "chidori: %s\n", err_msg(err));
                err_free(err);
        } else {
                code = conclude(o, c, session_outcome(s), sink.printed_value);
        }
        session_free(s);
        evloop_free(loop);
        return code;
}

static int open_memory(const struct run_opts *o, struct run_ctx *c)
{
        struct err *err = NULL;
        _cleanup_free_ char *dir = NULL;
        if (o->state_dir && state_dir_check(o->state_dir) < 0)
                return -1;
        if (o->state_dir)
                dir = strdup(o->state_dir);
        else if (memstore_default_dir(&dir, &err) < 0)
                goto fail;
        if (memstore_open(dir, &c->mem, &err) < 0)
                goto fail;
        return 0;
fail:
        fprintf(stderr, "chidori: open the memory store: %s; choose another place with --state-dir DIR\n",
                err_msg(err));
        err_free(err);
        return -1;
}

static void run_help(void)
{
        printf("Usage: chidori run [OPTIONS] AGENT [--input JSON | --input-file FILE]\n"
               "\n"
               "Run one agent (AGENT.js, .mjs, .cjs or .ts) to completion in the sandbox and print its\n"
               "result as JSON on stdout.  AGENT '-' reads the agent from stdin.\n"
               "\n"
               "Options (environment variable in brackets):\n"
               "  --input JSON          the agent's input (default null)\n"
               "  --input-file FILE     read the input JSON from FILE ('-': stdin)\n"
               "  --agent-name NAME     the file name of an agent read from stdin, for stack traces and\n"
               "                        the journal; .ts or .mjs bundles it (default stdin.js); its memory\n"
               "                        namespace is stdin:NAME unless --memory-ns\n"
               "  --journal FILE        record every host call to FILE (JSON lines) for replay; an existing\n"
               "                        journal is replaced, any other non-empty file only with --force\n"
               "  --force               let --journal replace a file that is not a journal\n"
               "  --answers FILE        answers for chidori.input(): a JSON array (in order) or an\n"
               "                        object mapping prompts to answers\n"
               "  --state-dir DIR       where agent memory is kept; DIR is created if its parent exists\n"
               "                        [default $XDG_STATE_HOME/chidori or ~/.local/state/chidori]\n"
               "  --memory-ns NAME      memory namespace (default: the agent's absolute path)\n"
               "  --js-deadline MS      the engine's CPU-time budget in ms (exit 152); default 60000,\n"
               "                        10000 under a policy that is not permissive (--untrusted);\n"
               "                        0 = none [CHIDORI_JS_DEADLINE_MS]\n"
               "  --tz ZONE             the time zone the agent's local-time Date and Intl see: a zone of\n"
               "                        the tz database such as Europe/Paris, or UTC (default) [CHIDORI_TZ]\n"
               "  --env NAME            pass the variable NAME of this environment to the agent's\n"
               "                        process.env (repeatable; process.env is empty otherwise); the\n"
               "                        journal records the values [CHIDORI_ENV=NAME,NAME...]\n"
               "  --virtual-time        timers never wait: a virtual clock jumps to the next timer when\n"
               "                        nothing else can happen (tests, fast simulations); default: timers\n"
               "                        wait in real time [CHIDORI_VIRTUAL_TIME=1]\n"
               GRANTS_OPTIONS_HELP
               "  --quotas FILE         quotas for this run: the \"session\" part of serve's --quotas file\n"
               "                        (JSON; docs/serve.md, \"Quotas\"); calls over one fail with EQUOTA,\n"
               "                        wall_ms is a deadline; tenant budgets do not apply to a run\n"
               "                        [CHIDORI_QUOTAS]\n"
               BOUNDS_OPTIONS_HELP
               SANDBOX_OPTIONS_HELP
               "  --no-isolate          run the engine inside this process (embedders, debugging)\n"
               "  --broker-user USER    the user the broker (the process that parses the worker's frames\n"
               "                        and does http) runs as when chidori runs as root: a name or uid,\n"
               "                        never 0 or 65534 (default: user chidori-broker, else uid 65533)\n"
               "                        [CHIDORI_BROKER_USER]\n"
               "                        [CHIDORI_ISOLATE=off]\n"
               "  --isolate             run the engine in a separate worker process (default)\n"
               "                        [CHIDORI_ISOLATE=process]\n"
               "  --untrusted           deny-by-default policy for code you do not trust; beats every\n"
               "                        CHIDORI_POLICY* variable [CHIDORI_POLICY_PROFILE=untrusted]\n"
               "  --trusted             the permissive policy (the run default)\n"
               "                        Policy sources: CHIDORI_POLICY_FILE, CHIDORI_POLICY (inline JSON),\n"
               "                        CHIDORI_POLICY_PROFILE (permissive|untrusted|supervised),\n"
               "                        CHIDORI_POLICY_AUTO_APPROVE=1 (ask_before rules pass)\n"
               "  --json                print {ok, value|error, exit, stats} instead of the bare value\n"
               "  --quiet               do not print the Isolation:/Policy: banner\n"
               "  -h, --help            show this help\n"
               "\n"
               "Other environment: CHIDORI_WORKER (path of chidori-worker), CHIDORI_NET_LIB (the\n"
               "network library, loaded by the first fetch or prompt), CHIDORI_ENGINE_LIB (the\n"
               "engine library for --no-isolate), CHIDORI_ESBUILD (path of\n"
               "esbuild, used for ES modules and TypeScript).\n"
               "\n"
               "Exit status: 0 ok, 1 agent error, 2 usage, 70 protocol error, 78 sandbox layer\n"
               "unavailable, 124 deadline, 134/139 engine crash, 152 CPU limit, 159 blocked syscall.\n");
}

enum {
        OPT_INPUT = 256, OPT_INPUT_FILE, OPT_JOURNAL, OPT_ANSWERS, OPT_STATE_DIR, OPT_MEM_NS,
        OPT_JS_DEADLINE, OPT_NO_ISOLATE, OPT_ISOLATE, OPT_JSON, OPT_QUIET, OPT_UNTRUSTED, OPT_TRUSTED, OPT_TZ,
        OPT_FORCE, OPT_AGENT_NAME, OPT_ENV, OPT_VIRTUAL_TIME, OPT_BROKER_USER, OPT_QUOTAS,
};

static const struct option run_longopts[] = {
        { "input", required_argument, NULL, OPT_INPUT },
        { "input-file", required_argument, NULL, OPT_INPUT_FILE },
        { "journal", required_argument, NULL, OPT_JOURNAL },
        { "answers", required_argument, NULL, OPT_ANSWERS },
        { "state-dir", required_argument, NULL, OPT_STATE_DIR },
        { "memory-ns", required_argument, NULL, OPT_MEM_NS },
        { "js-deadline", required_argument, NULL, OPT_JS_DEADLINE },
        { "no-isolate", no_argument, NULL, OPT_NO_ISOLATE },
        { "isolate", no_argument, NULL, OPT_ISOLATE },
        { "json", no_argument, NULL, OPT_JSON },
        { "quiet", no_argument, NULL, OPT_QUIET },
        { "untrusted", no_argument, NULL, OPT_UNTRUSTED },
        { "trusted", no_argument, NULL, OPT_TRUSTED },
        { "tz", required_argument, NULL, OPT_TZ },
        { "force", no_argument, NULL, OPT_FORCE },
        { "agent-name", required_argument, NULL, OPT_AGENT_NAME },
        { "env", required_argument, NULL, OPT_ENV },
        { "virtual-time", no_argument, NULL, OPT_VIRTUAL_TIME },
        { "broker-user", required_argument, NULL, OPT_BROKER_USER },
        { "quotas", required_argument, NULL, OPT_QUOTAS },
        { "help", no_argument, NULL, 'h' },
        SANDBOX_LONGOPTS,
        GRANTS_LONGOPTS,
        BOUNDS_LONGOPTS,
        { NULL, 0, NULL, 0 },
};

/* Options common to run and replay; returns 1 if handled, 0 if not, -1 bad. */
static int common_opt(const char *cmd, int c, struct run_opts *o)
{
        int h = sandbox_opts_parse(&o->sb, cmd, c, optarg);
        if (h == 0)
                h = bounds_opts_parse(&o->lim, cmd, c, optarg);
        if (h != 0)
                return h;
        switch (c) {
        case OPT_JS_DEADLINE:
                if (parse_nonneg(optarg, &o->js_deadline_ms) < 0)
                        return usage_error(cmd, "--js-deadline '%s' is not a number of milliseconds", optarg), -1;
                return 1;
        case OPT_NO_ISOLATE: o->in_process = true; return 1;
        case OPT_ISOLATE: o->in_process = false; return 1;
        case OPT_JSON: o->json = true; return 1;
        case OPT_UNTRUSTED: o->untrusted = true; return 1;
        case OPT_TRUSTED: o->trusted = true; return 1;
        case OPT_QUIET: o->quiet = true; return 1;
        case OPT_BROKER_USER:
                if (!*optarg)
                        return usage_error(cmd, "--broker-user: expected a user name or a uid"), -1;
                o->broker_user = optarg;
                return 1;
        }
        return 0;
}

static int env_defaults(struct run_opts *o)
{
        sandbox_opts_init(&o->sb);
        o->js_deadline_ms = -1;
        bounds_opts_init(&o->lim);
        if (env_ms("CHIDORI_JS_DEADLINE_MS", &o->js_deadline_ms) < 0 || sandbox_opts_env(&o->sb) < 0 ||
            bounds_opts_env(&o->lim) < 0 || env_isolate(&o->in_process) < 0 || env_virtual_time(&o->virtual_time) < 0)
                return -1;
        return 0;
}

static bool agent_name_ok(const char *n)
{
        size_t len = strlen(n);
        if (len == 0 || len > 255 || strcmp(n, ".") == 0 || strcmp(n, "..") == 0)
                return false;
        for (const unsigned char *p = (const unsigned char *)n; *p; p++)
                if (*p == '/' || *p < 0x20 || *p == 0x7f)
                        return false;
        return true;
}

/* The engine needs a few tasks of its own (ENGINE_PIDS_MIN): a pids limit
 * below that is refused before anything starts. */
static int pids_check(const char *cmd, const struct run_opts *o)
{
        if ((o->sb.disable & (1u << LAYER_CGROUP)) || o->in_process || o->sb.pids_max >= ENGINE_PIDS_MIN)
                return 0;
        char src[64];
        pids_source(o, src, sizeof(src));
        usage_error(cmd, "process limit too low to start the engine (%s; at least %d needed)", src, ENGINE_PIDS_MIN);
        return -1;
}

/* A name for --env / CHIDORI_ENV: [A-Za-z_][A-Za-z0-9_]*. */
static bool env_name_ok(const char *n, size_t len)
{
        if (len == 0 || len > 255 || (n[0] >= '0' && n[0] <= '9'))
                return false;
        for (size_t i = 0; i < len; i++) {
                char c = n[i];
                if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_'))
                        return false;
        }
        return true;
}

static int env_add(cJSON *env, const char *name, size_t len, const char *from)
{
        char q[320], nm[256];
        if (!env_name_ok(name, len)) {
                usage_error("run", "%s '%s' is not a variable name (expected letters, digits and _, not starting "
                                   "with a digit)", from, text_quote(name, len < 280 ? len : 280, q, sizeof(q)));
                return -1;
        }
        memcpy(nm, name, len);
        nm[len] = '\0';
        const char *v = getenv(nm);
        if (!v) {
                usage_error("run", "%s %s: the variable is not set in this environment (set it, or do not pass it)",
                            from, nm);
                return -1;
        }
        cJSON_DeleteItemFromObjectCaseSensitive(env, nm);
        if (!cJSON_AddStringToObject(env, nm, v)) {
                fprintf(stderr, "chidori: out of memory\n");
                return -1;
        }
        return 0;
}

/* process.env of the run: CHIDORI_ENV's names, then --env's; NULL if none. */
static int run_env(const struct run_opts *o, cJSON **ret)
{
        *ret = NULL;
        const char *list = getenv("CHIDORI_ENV");
        if (o->n_env == 0 && (!list || !*list))
                return 0;
        cJSON *env = cJSON_CreateObject();
        if (!env)
                return fprintf(stderr, "chidori: out of memory\n"), -1;
        for (const char *p = list && *list ? list : NULL; p;) {
                const char *comma = strchr(p, ',');
                size_t len = comma ? (size_t)(comma - p) : strlen(p);
                if (env_add(env, p, len, "CHIDORI_ENV:") < 0)
                        return cJSON_Delete(env), -1;
                p = comma ? comma + 1 : NULL;
        }
        for (int i = 0; i < o->n_env; i++)
                if (env_add(env, o->env_names[i], strlen(o->env_names[i]), "--env") < 0)
                        return cJSON_Delete(env), -1;
        *ret = env;
        return 0;
}

/* --input / --input-file and --answers, checked and kept as written.
 * -1 (printed) on a bad one. */
static int load_inputs(const struct run_opts *o, struct run_ctx *c)
{
        struct err *err = NULL;
        _cleanup_free_ char *text = NULL;
        size_t tlen = 0;
        if (o->input_file) {
                if (strcmp(o->input_file, "-") == 0 ? read_fd(STDIN_FILENO, "stdin", 64u << 20, &text, &tlen, &err) < 0
                                                    : read_file(o->input_file, 64u << 20, &text, &tlen, &err) < 0) {
                        fprintf(stderr, "chidori: --input-file: %s\n", err_msg(err));
                        err_free(err);
                        return -1;
                }
                if (parse_json_arg("--input-file", text, tlen, false, &c->input) < 0)
                        return -1;
        } else if (o->input_json) {
                if (parse_json_arg("--input", o->input_json, strlen(o->input_json), false, &c->input) < 0)
                        return -1;
        } else {
                c->input = cJSON_CreateNull();
        }
        if (!o->answers_path)
                return 0;
        free(text);
        text = NULL;
        if (read_file(o->answers_path, 64u << 20, &text, &tlen, &err) < 0) {
                fprintf(stderr, "chidori: --answers: %s\n", err_msg(err));
                err_free(err);
                return -1;
        }
        if (parse_json_arg("--answers", text, tlen, true, &c->answers) < 0)
                return -1;
        if (!cJSON_IsArray(c->answers) && !cJSON_IsObject(c->answers)) {
                fprintf(stderr, "chidori: --answers must hold a JSON array or object\n");
                return -1;
        }
        return 0;
}

/* Load (and bundle) the agent: 0, or the exit code (printed). */
static int load_run_agent(const struct run_opts *o, struct run_ctx *c, bool agent_stdin)
{
        struct err *err = NULL;
        if ((agent_stdin ? agent_load_stdin(o->agent_name ? o->agent_name : "stdin.js", &c->agent, &err)
                         : agent_load(o->agent_path, &c->agent, &err)) == 0)
                return 0;
        int code = bundle_report_error(stderr, err);
        err_free(err);
        return code;
}

/* ---- `chidori run` and `replay` as monitor + broker (issue 10) ----
 * The run's options become the broker's config (cli/handover.c); this
 * process keeps what needs privilege (docs/architecture.md). */

/* --broker-user names the broker's user; --no-isolate runs no broker. */
static int broker_user_check(const char *cmd, const struct run_opts *o)
{
        if (o->broker_user && o->in_process)
                return usage_error(cmd, "--broker-user names the user of the broker process, and --no-isolate runs "
                                        "none (the engine runs in this process): drop one of them"), -1;
        return 0;
}

/* Through the broker unless --no-isolate (the engine in this process) or
 * CHIDORI_RUN_BROKER=0: the one-process parent of before the split, kept
 * for comparison (make bench) and debugging, said with a warning.  -1: a
 * bad value (printed). */
int cli_broker_switch(bool *off)
{
        const char *v = getenv("CHIDORI_RUN_BROKER");
        if (v && *v && strcmp(v, "0") != 0 && strcmp(v, "1") != 0) {
                char q[96];
                fprintf(stderr, "chidori: CHIDORI_RUN_BROKER=%s: expected 1 (the default: the worker's frames are "
                                "parsed by the unprivileged broker) or 0 (one process, for comparison and debugging)\n",
                        text_quote(v, strnlen(v, 64), q, sizeof(q)));
                return -1;
        }
        *off = v && strcmp(v, "0") == 0;
        return 0;
}

static int broker_mode(const struct run_opts *o, bool *use)
{
        bool off;
        if (cli_broker_switch(&off) < 0)
                return -1;
        *use = !o->in_process && !off;
        if (off && !o->in_process)
                fprintf(stderr, "chidori: WARNING: CHIDORI_RUN_BROKER=0: this run's parent is one process with your "
                                "privileges that parses what the worker sends (no broker); use only for comparison and "
                                "debugging\n");
        return 0;
}

/* The policy's sources, as select_policy reads them: the broker chooses. */
static void handover_policy(struct handover *h, const struct run_opts *o)
{
        const char *file = getenv("CHIDORI_POLICY_FILE"), *inl = getenv("CHIDORI_POLICY"),
                   *prof = getenv("CHIDORI_POLICY_PROFILE");
        if (o->untrusted)
                handover_add(h, "untrusted=1");
        if (o->trusted)
                handover_add(h, "trusted=1");
        if (file && *file)
                handover_file(h, "policy", file);
        if (inl && *inl)
                handover_add(h, "policy_inline=%s", inl);
        if (prof && *prof)
                handover_add(h, "policy_profile=%s", prof);
}

static void handover_limits(struct handover *h, const struct run_opts *o)
{
        const struct session_limits *l = &o->lim;
        handover_add(h, "max_calls=%llu", (unsigned long long)l->max_calls);
        handover_add(h, "max_queue=%llu", (unsigned long long)l->max_queue);
        handover_add(h, "max_log=%llu", (unsigned long long)l->max_log);
        handover_add(h, "max_journal=%llu", (unsigned long long)l->max_journal);
        handover_add(h, "max_vfs=%llu", (unsigned long long)l->max_vfs);
        handover_add(h, "max_memory_store=%llu", (unsigned long long)l->max_memory_store);
        handover_add(h, "max_workspace_write=%llu", (unsigned long long)l->max_workspace_write);
        handover_add(h, "max_timers=%llu", (unsigned long long)l->max_timers);
        handover_add(h, "max_nested=%ld", o->gr.max_nested ? o->gr.max_nested : GRANTS_DEFAULT_MAX_NESTED);
}

/* What the agent is handed: the workspace, hosts, http caps, process.env. */
static int handover_grants(struct handover *h, const struct run_opts *o, char **ret_ws)
{
        const struct grants_opts *g = &o->gr;
        if (g->workspace_dir) {
                *ret_ws = realpath(g->workspace_dir, NULL);
                if (!*ret_ws) {
                        fprintf(stderr, "chidori: --workspace %s: %s (expected an existing directory)\n",
                                g->workspace_dir, strerror(errno));
                        return -1;
                }
                handover_add(h, "workspace=%s", *ret_ws);
        }
        if (handover_grants_common(h, g) < 0)
                return -1;
        cJSON *env = NULL, *ev;
        if (run_env(o, &env) < 0)
                return -1;
        cJSON_ArrayForEach(ev, env)
                handover_add(h, "env=%s=%s", ev->string, ev->valuestring);
        cJSON_Delete(env);
        return 0;
}

/* Bytes in a sealed memfd, read from its start. */
static int bytes_memfd(const char *name, const char *text, size_t len, int *ret, struct err **err)
{
        int fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
        size_t off = 0;
        while (fd >= 0 && off < len) {
                ssize_t n = write(fd, text + off, len - off);
                if (n <= 0) {
                        close(fd);
                        fd = -1;
                        break;
                }
                off += (size_t)n;
        }
        if (fd < 0 || lseek(fd, 0, SEEK_SET) < 0 ||
            fcntl(fd, F_ADD_SEALS, F_SEAL_SEAL | F_SEAL_WRITE | F_SEAL_GROW | F_SEAL_SHRINK) < 0) {
                if (fd >= 0)
                        close(fd);
                return err_set(err, errno, "hand it to the broker");
        }
        *ret = fd;
        return 0;
}

/* The input, the answers, the journal, the terminal. */
static int handover_io(struct handover *h, const struct run_opts *o)
{
        if (o->input_json && strlen(o->input_json) < 3000) {
                handover_add(h, "input=%s", o->input_json);
        } else if (o->input_json) {
                /* Longer than a blob string may be: a sealed memfd of its own. */
                int fd = -1;
                struct err *err = NULL;
                if (bytes_memfd("input", o->input_json, strlen(o->input_json), &fd, &err) < 0) {
                        fprintf(stderr, "chidori: --input: %s\n", err_msg(err));
                        err_free(err);
                        return -1;
                }
                handover_fd(h, "input_arg_fd", fd);
        }
        if (o->input_file && strcmp(o->input_file, "-") == 0) {
                handover_add(h, "input_file=stdin");
                handover_fd(h, "input_fd", fcntl(STDIN_FILENO, F_DUPFD_CLOEXEC, 3));
        } else if (o->input_file) {
                int fd = open(o->input_file, O_RDONLY | O_CLOEXEC | O_NOCTTY);
                if (fd < 0) {
                        fprintf(stderr, "chidori: --input-file: open '%s': %s\n", o->input_file, strerror(errno));
                        return -1;
                }
                handover_add(h, "input_file=%s", o->input_file);
                handover_fd(h, "input_fd", fd);
        }
        if (o->answers_path) {
                int fd = open(o->answers_path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
                if (fd < 0) {
                        fprintf(stderr, "chidori: --answers: open '%s': %s\n", o->answers_path, strerror(errno));
                        return -1;
                }
                handover_add(h, "answers_file=%s", o->answers_path);
                handover_fd(h, "answers_fd", fd);
        }
        if (o->journal_path) {
                struct err *err = NULL;
                if (!o->force && journal_check_replaceable(o->journal_path, &err) < 0) {
                        fprintf(stderr, "chidori: %s\n", err_msg(err));
                        err_free(err);
                        return -1;
                }
                int fd = open(o->journal_path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0600);
                if (fd < 0) {
                        fprintf(stderr, "chidori: --journal: open journal '%s' for writing: %s\n", o->journal_path,
                                strerror(errno));
                        return -1;
                }
                handover_add(h, "journal_file=%s", o->journal_path);
                handover_fd(h, "journal_fd", fd);
        }
        handover_net_lib(h);
        if (isatty(STDIN_FILENO) == 1) {
                int fd = open("/dev/tty", O_RDWR | O_CLOEXEC | O_NOCTTY);
                if (fd >= 0)
                        handover_fd(h, "tty_fd", fd);
        }
        return 0;
}

/* The memory store's folder, made as memstore_open would (0700). */
static int handover_state_dir(const struct run_opts *o, char **ret)
{
        struct err *err = NULL;
        if (o->state_dir && state_dir_check(o->state_dir) < 0)
                return -1;
        char *dir = NULL;
        if (o->state_dir)
                dir = strdup(o->state_dir);
        else if (memstore_default_dir(&dir, &err) < 0)
                goto fail;
        if (!dir || memstore_make_dir(dir, &err) < 0 || !(*ret = realpath(dir, NULL))) {
                if (!err)
                        err_set(&err, errno, "memory: cannot use directory '%s'", dir ? dir : "");
                free(dir);
                goto fail;
        }
        free(dir);
        return 0;
fail:
        fprintf(stderr, "chidori: open the memory store: %s; choose another place with --state-dir DIR\n",
                err_msg(err));
        err_free(err);
        return -1;
}

/* What a run and a replay hand over alike: the run id, the engine's limits,
 * the output, the policy's sources, the parent's limits. */
static void handover_common(struct handover *h, const struct run_opts *o, const char *run_id)
{
        handover_add(h, "run_id=%s", run_id);
        if (o->sb.deadline_ms > 0)
                handover_add(h, "deadline_ms=%ld", o->sb.deadline_ms);
        if (o->js_deadline_ms >= 0)
                handover_add(h, "js_deadline_ms=%ld", o->js_deadline_ms);
        handover_add(h, "jit=%s", o->sb.jit < 0 ? "auto" : o->sb.jit ? "1" : "0");
        handover_add(h, "cpu_secs=%ld", sandbox_cpu_secs(&o->sb, true));
        char src[64];
        pids_source(o, src, sizeof(src));
        handover_add(h, "pids_source=%s", src);
        handover_add(h, "pids_max=%llu", (unsigned long long)o->sb.pids_max);
        handover_add(h, "json=%d", o->json);
        handover_add(h, "quiet=%d", o->quiet);
        handover_policy(h, o);
        handover_limits(h, o);
}

/* The agent file as the operator named it: its folder and name, printed
 * in agent_load's words when it cannot be resolved.  *ret owns both. */
static int handover_agent(struct handover *h, const char *path, const char *who, char **ret)
{
        char *agent = realpath(path, NULL);
        if (!agent) {
                /* agent_load's words (escaped: the path is the caller's). */
                char msg[PATH_MAX + 128];
                int e = errno;
                snprintf(msg, sizeof(msg), e == ENOENT ? "%sagent file '%s' not found: %s" : "%sload agent: open '%s': %s",
                         who, path, strerror(e));
                text_fput_line(stderr, "chidori: ", msg, strlen(msg));
                return -1;
        }
        char *slash = strrchr(agent, '/');
        *slash = '\0';
        handover_add(h, "agent=%s", slash + 1);
        *ret = strdup(slash == agent ? "/" : agent);
        free(agent);
        if (!*ret)
                return -1;
        handover_add(h, "agent_dir=%s", *ret);
        return 0;
}

/* The worker the broker will ask for, when the CLI can tell its posture
 * without reading a policy: chidori run's default (permissive) or
 * --untrusted, with no CHIDORI_POLICY* source.  The broker resolves it the
 * same way (broker/config.c); a different ask only costs the early box. */
static void prestart_posture(const struct run_opts *o, struct monitor_prestart *w)
{
        const char *f = getenv("CHIDORI_POLICY_FILE"), *i = getenv("CHIDORI_POLICY"),
                   *p = getenv("CHIDORI_POLICY_PROFILE");
        if ((f && *f) || (i && *i) || (p && *p) || (o->untrusted && o->trusted) ||
            (o->sb.tz && strlen(o->sb.tz) >= sizeof(w->tz)))
                return;
        /* Without the cgroup layer the box brings a watchdog thread, and
         * the broker's start must come first (monitor_prestart_box). */
        if (o->sb.disable & (1u << LAYER_CGROUP))
                return;
        bool strict = o->untrusted;
        w->on = true;
        w->no_jit = o->sb.jit == 0 || (o->sb.jit < 0 && strict);
        w->cpu_budget_ms = o->js_deadline_ms >= 0 ? o->js_deadline_ms
                           : strict             ? CLI_JS_BUDGET_UNTRUSTED_MS
                                                : CLI_JS_BUDGET_DEFAULT_MS;
        snprintf(w->tz, sizeof(w->tz), "%s", o->sb.tz ? o->sb.tz : "");
}

/* An agent read from stdin: saved as NAME in a fresh folder of its own
 * (0755: the broker, the bundle box and the worker read it as files), so it
 * is loaded and bundled as any agent, and imports nothing of the host's.
 * *ret_dir is that folder (removed by stdin_agent_remove). */
static int handover_stdin_agent(struct handover *h, const char *name, char **ret_dir)
{
        _cleanup_free_ char *text = NULL;
        size_t len = 0;
        struct err *err = NULL;
        char dir[PATH_MAX];
        if (read_fd(STDIN_FILENO, "stdin", (size_t)16 << 20, &text, &len, &err) < 0) {
                fprintf(stderr, "chidori: read the agent from stdin: %s\n", err_msg(err));
                err_free(err);
                return -1;
        }
        if (tmp_owned_template(dir, sizeof(dir), tmp_dir(), TMP_KIND_STDIN) < 0 || !mkdtemp(dir) ||
            chmod(dir, 0755) < 0) {
                fprintf(stderr, "chidori: a folder for the agent read from stdin: %s\n", strerror(errno));
                return -1;
        }
        *ret_dir = strdup(dir);
        int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        int fd = dfd < 0 ? -1 : openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
        size_t off = 0;
        while (fd >= 0 && off < len) {
                ssize_t n = write(fd, text + off, len - off);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        break;
                off += (size_t)n;
        }
        bool ok = fd >= 0 && off == len;
        if (fd >= 0 && close(fd) < 0)
                ok = false;
        if (dfd >= 0)
                close(dfd);
        if (!ok || !*ret_dir) {
                fprintf(stderr, "chidori: save the agent read from stdin in %s: %s\n", dir, strerror(errno));
                return -1;
        }
        handover_add(h, "agent_stdin=1");
        handover_add(h, "agent=%s", name);
        handover_add(h, "agent_dir=%s", dir);
        return 0;
}

static void stdin_agent_remove(const char *dir, const char *name)
{
        if (!dir)
                return;
        int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd >= 0) {
                unlinkat(dfd, name, 0);
                close(dfd);
        }
        rmdir(dir);
}

static int run_broker(struct run_opts *o, bool agent_stdin)
{
        struct handover h;
        handover_init(&h);
        _cleanup_free_ char *agent = NULL, *ws = NULL, *state = NULL, *stdin_file = NULL;
        char run_id[40];
        int code = EXIT_USAGE;
        const char *stdin_name = o->agent_name ? o->agent_name : "stdin.js";
        if (agent_stdin ? handover_stdin_agent(&h, stdin_name, &agent) < 0
                        : handover_agent(&h, o->agent_path, "", &agent) < 0)
                goto out;
        make_run_id(run_id);
        handover_common(&h, o, run_id);
        if (o->sb.tz)
                handover_add(&h, "tz=%s", o->sb.tz);
        if (o->virtual_time)
                handover_add(&h, "virtual_time=1");
        if (o->mem_ns)
                handover_add(&h, "mem_ns=%s", o->mem_ns);
        if (handover_grants(&h, o, &ws) < 0 || handover_io(&h, o) < 0 || handover_state_dir(o, &state) < 0)
                goto out;
        handover_add(&h, "state_dir=%s", state);
        if (o->quotas_file)
                handover_file(&h, "quotas", o->quotas_file);
        struct handover_run r = {
                .sb = &o->sb, .run_id = run_id + 4, .agent_dir = agent, .state_dir = state, .workspace = ws,
                .broker_user = o->broker_user, .quiet = o->quiet,
        };
        if (agent_stdin && asprintf(&stdin_file, "%s/%s", agent, stdin_name) >= 0)
                r.remove_after = stdin_file; /* the monitor removes it (and its folder) at the end */
        prestart_posture(o, &r.prestart);
        code = handover_run(&h, &r);
out:
        handover_free(&h);
        if (agent_stdin)
                stdin_agent_remove(agent, stdin_name);
        return code;
}

/* chidori replay through the broker: the journal is opened here and read
 * there (it is hostile input); without --agent the broker names the
 * journal's agent back (OPEN_AGENT). */
static int replay_broker(struct run_opts *o, const char *journal, const char *agent_override)
{
        struct handover h;
        handover_init(&h);
        _cleanup_free_ char *agent = NULL, *stdin_file = NULL;
        int code = EXIT_USAGE;
        bool from_stdin = agent_override && strcmp(agent_override, "-") == 0;
        int fd = open(journal, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0) {
                char msg[PATH_MAX + 128];
                snprintf(msg, sizeof(msg), "replay: open journal '%s': %s", journal, strerror(errno));
                text_fput_line(stderr, "chidori: ", msg, strlen(msg));
                goto out;
        }
        handover_add(&h, "replay_file=%s", journal);
        handover_fd(&h, "replay_fd", fd);
        if (from_stdin) {
                if (handover_stdin_agent(&h, "stdin.js", &agent) < 0)
                        goto out;
                handover_add(&h, "replay_agent_given=1");
        } else if (agent_override) {
                if (handover_agent(&h, agent_override, "replay: ", &agent) < 0)
                        goto out;
                handover_add(&h, "replay_agent_given=1");
                handover_add(&h, "agent_path=%s", agent_override);
        } else {
                handover_add(&h, "agent_from_journal=1");
        }
        char run_id[40];
        make_run_id(run_id); /* the cgroup's; the run keeps the journal's id */
        handover_common(&h, o, run_id);
        struct handover_run r = {
                .sb = &o->sb, .run_id = run_id + 4, .agent_dir = agent, .agent_from_broker = !agent_override,
                .broker_user = o->broker_user, .quiet = o->quiet,
        };
        if (from_stdin && asprintf(&stdin_file, "%s/stdin.js", agent) >= 0)
                r.remove_after = stdin_file;
        code = handover_run(&h, &r);
out:
        handover_free(&h);
        if (from_stdin)
                stdin_agent_remove(agent, "stdin.js");
        return code;
}

/* The checks between options once they are all read (printed). */
static int check_run_opts(const struct run_opts *o, bool agent_stdin)
{
        const char *why = NULL;
        if (o->input_json && o->input_file)
                why = "give --input or --input-file, not both";
        else if (agent_stdin && o->input_file && strcmp(o->input_file, "-") == 0)
                why = "the agent and its input cannot both come from stdin (AGENT '-' and --input-file -): put one "
                      "of them in a file, or pass the input with --input";
        if (why) {
                usage_error("run", "%s", why);
                return -1;
        }
        if (o->agent_name && !agent_stdin) {
                usage_error("run", "--agent-name names an agent read from stdin (AGENT '-'); the file '%s' has its own "
                                   "name", o->agent_path);
                return -1;
        }
        if (o->agent_name && !agent_name_ok(o->agent_name)) {
                char q[320];
                usage_error("run", "--agent-name '%s' is not a file name (expected a name such as agent.ts: no '/', no "
                                   "control characters, at most 255 bytes)",
                            text_quote(o->agent_name, strnlen(o->agent_name, 280), q, sizeof(q)));
                return -1;
        }
        if (pids_check("run", o) < 0)
                return -1;
        struct err *tzerr = NULL;
        if (tz_check(o->sb.tz, &tzerr) < 0) {
                if (o->tz_flag)
                        usage_error("run", "--tz %s", err_msg(tzerr));
                else
                        fprintf(stderr, "chidori: CHIDORI_TZ=%s\n", err_msg(tzerr));
                err_free(tzerr);
                return -1;
        }
        return 0;
}

/* --quotas FILE: serve's file; a run takes its "session" part.  A file
 * with none is a usage error (its tenant budgets would be silently
 * ignored); tenant parts beside it are said to be ignored. */
static int check_quotas(struct run_opts *o)
{
        if (!o->quotas_file)
                return 0;
        struct quotas *q = NULL;
        struct err *e = NULL;
        if (quotas_load_file(o->quotas_file, &q, &e) < 0) {
                usage_error("run", "--quotas %s", err_msg(e));
                err_free(e);
                return -1;
        }
        bool session = false, tenant = q->ntenants > 0 || q->all.concurrent;
        for (int k = 0; k < QUOTA_KIND_MAX; k++) {
                session = session || q->session.v[k];
                tenant = tenant || q->all.lim.v[k];
        }
        o->quotas = q->session;
        quotas_free(q);
        /* wall_ms is the run's deadline: the smaller of it and --deadline
         * (the monitor's kill, whichever parent runs the session). */
        uint64_t wall = o->quotas.v[QUOTA_WALL_MS];
        if (wall && (o->sb.deadline_ms <= 0 || wall < (uint64_t)o->sb.deadline_ms))
                o->sb.deadline_ms = wall > (uint64_t)LONG_MAX ? LONG_MAX : (long)wall;
        if (!session) {
                usage_error("run", "--quotas %s: no \"session\" quotas; a run applies only the file's \"session\" "
                                   "part (tenant budgets are chidori serve's): add {\"session\": {\"NAME\": N}}",
                            o->quotas_file);
                return -1;
        }
        if (tenant && !o->quiet)
                fprintf(stderr, "chidori: --quotas %s: its tenant budgets do not apply to a run (only \"session\")\n",
                        o->quotas_file);
        return 0;
}

/* chidori run with the one-process parent (CHIDORI_RUN_BROKER=0,
 * --no-isolate): the agent, the policy and every effect in this process. */
static int run_one_process(struct run_opts *o_, bool agent_stdin)
{
        struct run_opts o = *o_;
        struct run_ctx ctx = { 0 };
        int code = EXIT_USAGE;
        struct err *err = NULL;
        if (run_env(&o, &ctx.env) < 0)
                goto out;
        if (load_inputs(&o, &ctx) < 0)
                goto out;
        int lc = load_run_agent(&o, &ctx, agent_stdin);
        if (lc) {
                code = lc;
                goto out;
        }
        if (select_policy(&o, &ctx.policy) < 0)
                goto out;
        /* Code run under a deny-by-default policy gets no JIT unless --jit
         * says so (docs/sandbox.md, "JIT and W^X"). */
        if (o.sb.jit < 0 && policy_fallback(ctx.policy) != POLICY_ALLOW)
                o.sb.jit = 0;
        resolve_cpu_budget(&o, ctx.policy);
        if (o.mem_ns)
                ctx.ns = strdup(o.mem_ns);
        else if (ctx.agent.abspath)
                ctx.ns = strdup(ctx.agent.abspath);
        else if (asprintf(&ctx.ns, "stdin:%s", ctx.agent.filename) < 0)
                ctx.ns = NULL;
        if (open_memory(&o, &ctx) < 0)
                goto out;
        make_run_id(ctx.run_id);
        if (o.journal_path) {
                if (!o.force && journal_check_replaceable(o.journal_path, &err) < 0) {
                        fprintf(stderr, "chidori: %s\n", err_msg(err));
                        goto out;
                }
                if (journal_open(o.journal_path, &ctx.journal, &err) < 0) {
                        fprintf(stderr, "chidori: --journal: %s\n", err_msg(err));
                        goto out;
                }
                journal_header(&ctx, o.sb.tz, o.virtual_time);
        }
        code = execute(&o, &ctx);
out:
        err_free(err);
        run_ctx_free(&ctx);
        return in_process_exit(&o, code);
}

int cmd_run(int argc, char **argv)
{
        struct run_opts o = { .started = mono_ms() };
        if (env_defaults(&o) < 0 || grants_opts_env(&o.gr) < 0)
                return EXIT_USAGE;
        const char *tz_env = getenv("CHIDORI_TZ");
        if (tz_env && *tz_env)
                o.sb.tz = tz_env;
        const char *q_env = getenv("CHIDORI_QUOTAS");
        if (q_env && *q_env)
                o.quotas_file = q_env;
        optind = 1;
        opterr = 0;
        int c;
        while ((c = getopt_long(argc, argv, ":h", run_longopts, NULL)) != -1) {
                if (c == '?' || c == ':')
                        return cli_bad_option("run", argc, argv, run_longopts);
                if (c == SOPT_PIDS)
                        o.pids_flag = true;
                int h = common_opt("run", c, &o);
                if (h == 0)
                        h = grants_opts_parse(&o.gr, "run", c, optarg);
                if (h < 0)
                        return EXIT_USAGE;
                if (h > 0)
                        continue;
                switch (c) {
                case OPT_INPUT: o.input_json = optarg; break;
                case OPT_INPUT_FILE: o.input_file = optarg; break;
                case OPT_JOURNAL: o.journal_path = optarg; break;
                case OPT_ANSWERS: o.answers_path = optarg; break;
                case OPT_STATE_DIR: o.state_dir = optarg; break;
                case OPT_MEM_NS: o.mem_ns = optarg; break;
                case OPT_TZ: o.sb.tz = optarg, o.tz_flag = true; break;
                case OPT_FORCE: o.force = true; break;
                case OPT_AGENT_NAME: o.agent_name = optarg; break;
                case OPT_ENV:
                        if (o.n_env == ENV_NAMES_MAX)
                                return usage_error("run", "--env: at most %d variables", ENV_NAMES_MAX);
                        o.env_names[o.n_env++] = optarg;
                        break;
                case OPT_VIRTUAL_TIME: o.virtual_time = true; break;
                case OPT_QUOTAS: o.quotas_file = optarg; break;
                case 'h': run_help(); return EXIT_OK;
                default: return cli_bad_option("run", argc, argv, run_longopts);
                }
        }
        if (optind >= argc)
                return usage_error("run", "no agent file given");
        if (sandbox_opts_check(&o.sb) < 0)
                return EXIT_USAGE;
        if (argc - optind > 1)
                return usage_error("run", "one agent file expected, got also '%s'", argv[optind + 1]);
        o.agent_path = argv[optind];
        bool agent_stdin = strcmp(o.agent_path, "-") == 0;
        bool via_broker = false;
        if (check_run_opts(&o, agent_stdin) < 0 || check_quotas(&o) < 0 || broker_user_check("run", &o) < 0 ||
            broker_mode(&o, &via_broker) < 0)
                return EXIT_USAGE;
        tmp_reap_stale(tmp_dir()); /* what a killed chidori left (docs/faults.md) */
        if (via_broker)
                return run_broker(&o, agent_stdin);

        return run_one_process(&o, agent_stdin);
}

static void replay_help(void)
{
        printf("Usage: chidori replay [OPTIONS] JOURNAL\n"
               "\n"
               "Re-run a recorded run: the same agent and input, every host call answered from the\n"
               "journal, no effect performed.  Prints the same stdout byte for byte.  A call that differs\n"
               "from the journal stops the replay with 'replay diverged at call N' (exit 1).\n"
               "\n"
               "Options (environment variable in brackets):\n"
               "  --agent FILE          the agent to replay (default: the path in the journal header);\n"
               "                        '-' reads it from stdin (needed for a run of an agent read from stdin)\n"
               "                        The time zone is the one recorded in the journal (--tz of the\n"
               "                        run); CHIDORI_TZ does not apply.\n"
               "  --js-deadline MS      the engine's CPU-time budget in ms (default 60000, 10000 under\n"
               "                        --untrusted; 0 = none) [CHIDORI_JS_DEADLINE_MS]\n"
               BOUNDS_OPTIONS_HELP
               SANDBOX_OPTIONS_HELP
               "  --no-isolate          run the engine inside this process [CHIDORI_ISOLATE=off]\n"
               "  --broker-user USER    the broker's user as root (see chidori run --help) [CHIDORI_BROKER_USER]\n"
               "  --isolate             run the engine in a worker process (default)\n"
               "  --json                print {ok, value|error, exit, stats}\n"
               "  --quiet               do not print the banner\n"
               "  -h, --help            show this help\n");
}

enum { OPT_AGENT = 400 };

/* The agent the journal names (or --agent), the same bytes as recorded:
 * 0, or the exit code (printed). */
static int load_replay_agent(const char *agent_override, struct run_ctx *c)
{
        struct err *err = NULL;
        const cJSON *h = replay_header(c->replay);
        const cJSON *agent = cJSON_GetObjectItemCaseSensitive(h, "agent");
        const cJSON *sha = cJSON_GetObjectItemCaseSensitive(h, "agent_sha256");
        const cJSON *fname = cJSON_GetObjectItemCaseSensitive(h, "filename");
        const char *path = agent_override ? agent_override : cJSON_IsString(agent) ? agent->valuestring : NULL;
        if (!path) {
                fprintf(stderr, "chidori: replay: the journal header names no agent; pass --agent FILE\n");
                return EXIT_USAGE;
        }
        if (!agent_override && strcmp(path, "-") == 0) {
                fprintf(stderr, "chidori: replay: the journal's agent was read from stdin; give it again with "
                                "--agent FILE, or --agent - to read it from stdin\n");
                return EXIT_USAGE;
        }
        if (strcmp(path, "-") == 0
                    ? agent_load_stdin(cJSON_IsString(fname) && agent_name_ok(fname->valuestring) ? fname->valuestring
                                                                                                 : "stdin.js",
                                       &c->agent, &err) < 0
                    : agent_load(path, &c->agent, &err) < 0) {
                fprintf(stderr, "chidori: replay: %s\n", err_msg(err));
                err_free(err);
                return EXIT_USAGE;
        }
        if (cJSON_IsString(sha) && strcmp(sha->valuestring, c->agent.sha256) != 0 && agent_override) {
                fprintf(stderr, "chidori: replay: warning: %s differs from the recorded agent (sha256 %s, journal has "
                                "%s); replaying it anyway because --agent names it\n",
                        path, c->agent.sha256, sha->valuestring);
        } else if (cJSON_IsString(sha) && strcmp(sha->valuestring, c->agent.sha256) != 0) {
                fprintf(stderr,
                        "chidori: replay: %s has changed since the journal was recorded (sha256 %s, journal has "
                        "%s); replay needs the same agent\n",
                        path, c->agent.sha256, sha->valuestring);
                return EXIT_AGENT_ERROR;
        }
        return 0;
}

/* chidori replay with the one-process parent (CHIDORI_RUN_BROKER=0,
 * --no-isolate): the journal read here. */
static int replay_one_process(struct run_opts *o_, const char *journal, const char *agent_override)
{
        struct run_opts o = *o_;
        struct run_ctx ctx = { 0 };
        struct err *err = NULL;
        int code = EXIT_USAGE;
        struct budget load_budget = {
                .deadline_at = o.sb.deadline_ms > 0 ? o.started + (double)o.sb.deadline_ms : 0,
                .stop = &launcher_stop_signal,
        };
        if (replay_open_until(journal, o.lim.max_journal, &load_budget, &ctx.replay, &err) < 0) {
                enum budget_reason why = budget_over(&load_budget);
                if (why != BUDGET_OK)
                        code = stopped_early(&o, why);
                else
                        fprintf(stderr, "chidori: replay: %s\n", err_msg(err));
                goto out;
        }
        int lc = load_replay_agent(agent_override, &ctx);
        if (lc) {
                code = lc;
                goto out;
        }
        const cJSON *h = replay_header(ctx.replay);
        const cJSON *rid = cJSON_GetObjectItemCaseSensitive(h, "run_id");
        /* The zone the run had (journals from before --tz existed: UTC). */
        const cJSON *tz = cJSON_GetObjectItemCaseSensitive(h, "tz");
        if (tz && !cJSON_IsString(tz)) {
                fprintf(stderr, "chidori: replay: the journal header's \"tz\" is not a string\n");
                goto out;
        }
        o.sb.tz = tz ? tz->valuestring : NULL;
        if (tz_check(o.sb.tz, &err) < 0) {
                fprintf(stderr, "chidori: replay: the journal's time zone %s\n", err_msg(err));
                goto out;
        }
        const cJSON *in = cJSON_GetObjectItemCaseSensitive(h, "input");
        ctx.input = in ? cJSON_Duplicate(in, 1) : cJSON_CreateNull();
        /* process.env as recorded (--env); journals without it had none. */
        const cJSON *env = cJSON_GetObjectItemCaseSensitive(h, "env"), *ev;
        if (env && !cJSON_IsObject(env)) {
                fprintf(stderr, "chidori: replay: the journal header's \"env\" is not an object\n");
                goto out;
        }
        cJSON_ArrayForEach(ev, env)
        {
                if (!cJSON_IsString(ev)) {
                        fprintf(stderr, "chidori: replay: the journal header's \"env\" has a value that is not a string\n");
                        goto out;
                }
        }
        ctx.env = env ? cJSON_Duplicate(env, 1) : NULL;
        snprintf(ctx.run_id, sizeof(ctx.run_id), "%s", cJSON_IsString(rid) ? rid->valuestring : "replay");
        if (select_policy(&o, &ctx.policy) < 0)
                goto out;
        if (o.sb.jit < 0 && policy_fallback(ctx.policy) != POLICY_ALLOW)
                o.sb.jit = 0;
        resolve_cpu_budget(&o, ctx.policy);
        code = execute(&o, &ctx);
out:
        err_free(err);
        run_ctx_free(&ctx);
        return in_process_exit(&o, code);
}

int cmd_replay(int argc, char **argv)
{
        static const struct option longopts[] = {
                { "agent", required_argument, NULL, OPT_AGENT },
                { "js-deadline", required_argument, NULL, OPT_JS_DEADLINE },
                { "tz", required_argument, NULL, OPT_TZ },
                SANDBOX_LONGOPTS,
                BOUNDS_LONGOPTS,
                { "no-isolate", no_argument, NULL, OPT_NO_ISOLATE },
                { "isolate", no_argument, NULL, OPT_ISOLATE },
                { "json", no_argument, NULL, OPT_JSON },
                { "quiet", no_argument, NULL, OPT_QUIET },
                { "broker-user", required_argument, NULL, OPT_BROKER_USER },
                { "help", no_argument, NULL, 'h' },
                { NULL, 0, NULL, 0 },
        };
        struct run_opts o = { .started = mono_ms() };
        const char *agent_override = NULL;
        if (env_defaults(&o) < 0)
                return EXIT_USAGE;
        optind = 1;
        opterr = 0;
        int c;
        while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
                if (c == '?' || c == ':')
                        return cli_bad_option("replay", argc, argv, longopts);
                if (c == SOPT_PIDS)
                        o.pids_flag = true;
                int h = common_opt("replay", c, &o);
                if (h < 0)
                        return EXIT_USAGE;
                if (h > 0)
                        continue;
                switch (c) {
                case OPT_AGENT: agent_override = optarg; break;
                case OPT_TZ:
                        return usage_error("replay", "--tz: a replay runs in the time zone recorded in the journal "
                                                     "(its header's \"tz\"); choose the zone when recording, with "
                                                     "chidori run --tz");
                case 'h': replay_help(); return EXIT_OK;
                default: return cli_bad_option("replay", argc, argv, longopts);
                }
        }
        if (optind >= argc)
                return usage_error("replay", "no journal file given");
        bool via_broker = false;
        if (sandbox_opts_check(&o.sb) < 0 || pids_check("replay", &o) < 0 || broker_user_check("replay", &o) < 0 ||
            broker_mode(&o, &via_broker) < 0)
                return EXIT_USAGE;
        tmp_reap_stale(tmp_dir());
        if (via_broker)
                return replay_broker(&o, argv[optind], agent_override);
        return replay_one_process(&o, argv[optind], agent_override);
}
