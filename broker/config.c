/* broker/config.c — the run the monitor hands the broker (config.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "broker/config.h"
#include "broker/provider.h"
#include "chan/chan.h"
#include "cli/cli.h"
#include "common/exit.h"
#include "common/util.h"
#include "effects/effects.h"
#include "effects/memory/memstore.h"
#include "proto/json.h"
#include "runtime/journal.h"
#include "policy/policy.h"
#include "runtime/evloop.h"
#include "runtime/outcome.h"
#include "runtime/session.h"
#include "sandbox/seccomp.h"

#define AGENT_MAX (16u << 20)

static int num(const char *k, const char *v, long *ret, struct err **err)
{
        char *end = NULL;
        errno = 0;
        long n = strtol(v, &end, 10);
        if (errno || end == v || *end || n < 0)
                return err_set(err, 0, "config: %s=%s is not a number", k, v);
        *ret = n;
        return 0;
}

static int flag(const char *k, const char *v, bool *ret, struct err **err)
{
        if (strcmp(v, "0") && strcmp(v, "1"))
                return err_set(err, 0, "config: %s=%s (expected 0 or 1)", k, v);
        *ret = v[0] == '1';
        return 0;
}

int broker_config_parse(const char *const *strs, size_t n, struct broker_config *c, struct err **err)
{
        *c = (struct broker_config){ .run_id = "run-0", .journal_fd = -1, .replay_fd = -1 };
        for (size_t i = 0; i < n; i++) {
                const char *eq = strchr(strs[i], '=');
                if (!eq)
                        return err_set(err, 0, "config: '%s' is not key=value", strs[i]);
                size_t kl = (size_t)(eq - strs[i]);
                const char *v = eq + 1;
                char k[32];
                if (kl >= sizeof(k))
                        return err_set(err, 0, "config: unknown key in '%s'", strs[i]);
                memcpy(k, strs[i], kl);
                k[kl] = '\0';
                int r = 0;
                if (!strcmp(k, "agent"))
                        c->agent = v;
                else if (!strcmp(k, "agent_dir"))
                        c->agent_dir = v;
                else if (!strcmp(k, "run_id"))
                        c->run_id = v;
                else if (!strcmp(k, "deadline_ms"))
                        r = num(k, v, &c->deadline_ms, err);
                else if (!strcmp(k, "js_deadline_ms"))
                        r = num(k, v, &c->js_deadline_ms, err);
                else if (!strcmp(k, "cpu_secs"))
                        r = num(k, v, &c->cpu_secs, err);
                else if (!strcmp(k, "json"))
                        r = flag(k, v, &c->json, err);
                else if (!strcmp(k, "quiet"))
                        r = flag(k, v, &c->quiet, err);
                else if (!strcmp(k, "untrusted"))
                        r = flag(k, v, &c->untrusted, err);
                else if (!strcmp(k, "trusted"))
                        r = flag(k, v, &c->trusted, err);
                else if (!strcmp(k, "policy_profile"))
                        c->policy_profile = v;
                else if (!strcmp(k, "policy_inline"))
                        c->policy_inline = v;
                else if (!strcmp(k, "state_dir"))
                        c->state_dir = v;
                else if (!strcmp(k, "mem_ns"))
                        c->mem_ns = v;
                else if (!strcmp(k, "input"))
                        c->input = v;
                else if (!strcmp(k, "journal_fd"))
                        r = num(k, v, &c->journal_fd, err);
                else if (!strcmp(k, "replay_fd"))
                        r = num(k, v, &c->replay_fd, err);
                else
                        return err_set(err, 0, "config: unknown key '%s'", k);
                if (r < 0)
                        return -1;
        }
        if (!c->agent || !c->agent[0] || c->agent[0] == '/')
                return err_set(err, 0, "config: no agent (a path relative to the agent folder)");
        if (!c->agent_dir || c->agent_dir[0] != '/')
                return err_set(err, 0, "config: no agent_dir (an absolute path)");
        if ((c->journal_fd >= 0 && c->journal_fd < 5) || (c->replay_fd >= 0 && c->replay_fd < 5))
                return err_set(err, 0, "config: journal_fd and replay_fd are descriptors passed at 5 and up");
        if (c->journal_fd >= 0 && c->replay_fd >= 0)
                return err_set(err, 0, "config: journal_fd and replay_fd together (a replay writes no journal)");
        if (c->state_dir && c->state_dir[0] != '/')
                return err_set(err, 0, "config: state_dir=%s is not an absolute path", c->state_dir);
        return 0;
}

/* The blob at fd: its string count from its header (chan_blob_map checks
 * the rest: seals, size, strings). */
static int map_config(int fd, struct chan_blob *b, struct err **err)
{
        struct chan_blob_hdr h;
        if (pread(fd, &h, sizeof(h), 0) != (ssize_t)sizeof(h))
                return err_set(err, errno, "config: read its header");
        if (h.nstrings > CHAN_BLOB_STRINGS)
                return err_set(err, 0, "config: %u strings", h.nstrings);
        return chan_blob_map(fd, h.nstrings, b, err);
}

struct run {
        struct session *s;
        struct journal *journal;
        struct replay *replay;
        char sha256[65];
        struct memstore *mem;
        cJSON *input;
        char *ns;
        volatile sig_atomic_t stop;
        const struct broker_config *c;
        struct policy *policy;
        struct chan_boxes *cb;
};

static void on_stop(void *arg, int sig)
{
        struct run *r = arg;
        if (r->stop)
                return;
        r->stop = sig;
        char why[64];
        snprintf(why, sizeof(why), "interrupted by signal %d", sig);
        session_cancel(r->s, why);
}

static void on_broken(void *arg, const char *why)
{
        (void)arg;
        fprintf(stderr, "chidori: the monitor's channel broke: %s\n", why);
}

static void on_running(void *arg)
{
        struct run *r = arg;
        if (r->c->quiet)
                return;
        char desc[512];
        policy_describe(r->policy, desc, sizeof(desc));
        fprintf(stderr, "Isolation: %s\n", r->cb->banner);
        fprintf(stderr, "Policy: %s\n", desc);
}

/* The journal's first and last lines, as `chidori run` writes them. */
static void journal_header(struct run *r, const char *script)
{
        const struct broker_config *c = r->c;
        char ts[40], agent[4200];
        utc_iso8601(ts, sizeof(ts));
        sha256_hex(script, strlen(script), r->sha256);
        snprintf(agent, sizeof(agent), "%s/%s", c->agent_dir, c->agent);
        const char *slash = strrchr(c->agent, '/');
        cJSON *h = cJSON_CreateObject();
        cJSON_AddStringToObject(h, "type", "header");
        cJSON_AddStringToObject(h, "chidori", CHIDORI_VERSION);
        cJSON_AddNumberToObject(h, "protocol", 1);
        cJSON_AddStringToObject(h, "run_id", c->run_id);
        cJSON_AddStringToObject(h, "agent", agent);
        cJSON_AddStringToObject(h, "agent_sha256", r->sha256);
        cJSON_AddStringToObject(h, "filename", slash ? slash + 1 : c->agent);
        cJSON_AddStringToObject(h, "memory_ns", r->ns);
        cJSON_AddStringToObject(h, "tz", "UTC");
        cJSON_AddStringToObject(h, "values", "exact");
        cJSON_AddItemToObject(h, "input", cJSON_Duplicate(r->input, 1));
        cJSON_AddStringToObject(h, "started", ts);
        journal_file_ops.header(r->journal, h, NULL);
        cJSON_Delete(h);
}

static void journal_end(struct run *r, const struct session_outcome *o, int code)
{
        cJSON *e = session_outcome_end_line(o, NULL, code);
        journal_file_ops.end(r->journal, e, NULL);
        cJSON_Delete(e);
}

static int load_agent(int chan, const struct broker_config *c, char **ret, struct err **err)
{
        int fd = chan_boxes_open(chan, c->agent, err);
        if (fd < 0)
                return -1;
        size_t len = 0;
        int r = read_fd(fd, c->agent, AGENT_MAX, ret, &len, err);
        close(fd);
        return r;
}

static int run_session(int chan, const struct broker_config *c, struct run *r, char *script, int *ret_code,
                       struct err **err)
{
        struct evloop *loop = NULL;
        struct chan_boxes cb;
        if (evloop_new(&loop, err) < 0)
                return -1;
        if (chan_boxes_init(&cb, chan, loop, err) < 0) {
                evloop_free(loop);
                return -1;
        }
        r->cb = &cb;
        cb.on_stop = on_stop;
        cb.on_broken = on_broken;
        cb.cb_arg = r;
        const char *slash = strrchr(c->agent, '/');
        struct session_config cfg = {
                .script = script,
                .filename = slash ? slash + 1 : c->agent,
                .run_id = c->run_id,
                .js_deadline_ms = c->js_deadline_ms,
                .deadline_ms = c->deadline_ms,
                .stop = &r->stop,
                .policy = r->policy,
                .effects = &effects_table,
                .input = r->input,
                .mem = r->mem,
                .mem_ns = r->ns,
                .journal = { r->journal ? &journal_file_ops : NULL, r->journal },
                .mode = r->replay ? SESSION_REPLAY : SESSION_LIVE,
                .replay = { r->replay ? &replay_file_ops : NULL, r->replay },
                .quiet_logs = r->replay != NULL,
        };
        struct cli_sink sink;
        cli_sink_init(&sink, c->json, c->deadline_ms > 0 ? mono_ms() + (double)c->deadline_ms : 0, &r->stop);
        sink.running = on_running;
        sink.running_arg = r;
        int rc = -1;
        if (session_new(loop, &cfg, &sink.sink, &cb.provider, &r->s, err) == 0 && session_start(r->s, err) == 0) {
                rc = 0;
                while (session_state(r->s) != SESSION_ENDED)
                        if (evloop_run_once(loop, -1, err) < 0) {
                                rc = -1;
                                break;
                        }
        }
        if (rc == 0) {
                struct outcome_context oc = {
                        .js_deadline_ms = c->js_deadline_ms,
                        .cpu_secs = c->cpu_secs,
                        .stop_signal = (int)r->stop,
                        .syscall_name = seccomp_syscall_name,
                };
                struct session_outcome *o = session_outcome(r->s);
                if (o->end == SESSION_END_SPAWN) {
                        fprintf(stderr, "chidori: %s%s\n", o->spawn_layer ? "" : "start the engine worker: ",
                                o->message ? o->message : "");
                        *ret_code = o->spawn_layer ? EXIT_LAYER_UNAVAILABLE : EXIT_PROTOCOL;
                } else {
                        *ret_code = sink.printed_value ? EXIT_OK : report_outcome(o, c->json, &oc, c->run_id);
                        if (r->journal)
                                journal_end(r, o, *ret_code);
                }
        }
        session_free(r->s);
        chan_boxes_free(&cb);
        evloop_free(loop);
        return rc;
}

/* What the run reads besides the agent (after COMMIT: a journal and the
 * memory store hold what agents wrote): the replay source, the input, the
 * memory namespace and store, the journal.  *code is set for a failure
 * that is not EXIT_PROTOCOL. */
static int open_inputs(struct broker_config *c, struct run *r, int *code, struct err **err)
{
        if (c->replay_fd >= 0 && replay_open_fd((int)c->replay_fd, "the journal", 0, NULL, &r->replay, err) < 0) {
                *code = EXIT_USAGE;
                return err_wrap(err, "replay");
        }
        const cJSON *h = r->replay ? replay_header(r->replay) : NULL;
        const cJSON *hin = h ? cJSON_GetObjectItemCaseSensitive(h, "input") : NULL;
        const cJSON *hid = h ? cJSON_GetObjectItemCaseSensitive(h, "run_id") : NULL;
        if (cJSON_IsString(hid))
                c->run_id = hid->valuestring;
        if (h)
                r->input = hin ? cJSON_Duplicate(hin, 1) : cJSON_CreateNull();
        else
                r->input = c->input ? cJSON_Parse(c->input) : cJSON_CreateNull();
        if (!r->input)
                return err_set(err, 0, "config: input is not JSON");
        if (c->mem_ns)
                r->ns = strdup(c->mem_ns);
        else if (asprintf(&r->ns, "%s/%s", c->agent_dir, c->agent) < 0)
                r->ns = NULL;
        if (!r->ns)
                return err_set(err, ENOMEM, "config");
        if (c->state_dir && !r->replay && memstore_open(c->state_dir, &r->mem, err) < 0)
                return err_wrap(err, "open the memory store");
        if (c->journal_fd >= 0 && journal_open_fd((int)c->journal_fd, "the journal", &r->journal, err) < 0)
                return -1;
        return 0;
}

/* Replay needs the agent that was recorded. */
static int replay_same_agent(const struct run *r, const char *script, struct err **err)
{
        const cJSON *sha = cJSON_GetObjectItemCaseSensitive(replay_header(r->replay), "agent_sha256");
        char now[65];
        sha256_hex(script, strlen(script), now);
        if (cJSON_IsString(sha) && strcmp(sha->valuestring, now) != 0)
                return err_set(err, 0, "replay: %s has changed since the journal was recorded (sha256 %s, journal "
                                       "has %s); replay needs the same agent", r->c->agent, now, sha->valuestring);
        return 0;
}

int broker_run(int chan, int config_fd)
{
        struct err *e = NULL;
        struct chan_blob blob = { 0 };
        struct broker_config c;
        struct run r = { .c = &c };
        char *script = NULL, *warning = NULL;
        int code = EXIT_PROTOCOL;
        unsigned welcome = 0;
        if (map_config(config_fd, &blob, &e) < 0 || broker_config_parse(blob.strs, blob.nstrings, &c, &e) < 0 ||
            chan_boxes_hello(chan, &welcome, &e) < 0)
                goto fail;
        struct policy_sources src = {
                .surface = POLICY_SURFACE_RUN, .flag_untrusted = c.untrusted, .flag_trusted = c.trusted,
                .env_inline = c.policy_inline, .env_profile = c.policy_profile,
        };
        if (policy_select(&src, &r.policy, &warning, &e) < 0)
                goto fail;
        if (warning)
                fprintf(stderr, "chidori: warning: %s\n", warning);
        /* The operator's configuration is parsed: commit to what may be
         * spawned before reading anything an agent wrote. */
        if (chan_boxes_commit(chan, 0, c.agent_dir, NULL, 0, NULL, 0, NULL, 0, &e) < 0)
                goto fail;
        if (open_inputs(&c, &r, &code, &e) < 0)
                goto fail_code;
        if (load_agent(chan, &c, &script, &e) < 0)
                goto fail;
        if (r.replay && replay_same_agent(&r, script, &e) < 0) {
                code = EXIT_AGENT_ERROR;
                goto fail_code;
        }
        if (r.journal)
                journal_header(&r, script);
        if (run_session(chan, &c, &r, script, &code, &e) < 0)
                goto fail;
        goto out;
fail:
        code = EXIT_PROTOCOL;
fail_code:
        fprintf(stderr, "chidori: %s\n", err_msg(e));
        err_free(e);
        e = NULL;
out:
        fflush(stdout);
        fflush(stderr);
        if (chan_boxes_result(chan, code, &e) < 0)
                err_free(e);
        free(script);
        free(warning);
        policy_free(r.policy);
        memstore_close(r.mem);
        journal_close(r.journal);
        replay_free(r.replay);
        cJSON_Delete(r.input);
        free(r.ns);
        chan_blob_unmap(&blob);
        return code;
}
