/* effects/core.c — the dispatch table: op name -> handler.
 *
 * Every power the worker can ask the parent to use is a row of this table.
 * Handler order: shape (args) -> effect -> answer.  (Policy and quotas hook in
 * before the effect for the gated ops.)  Each row says why it is safe.
 */
#define _GNU_SOURCE
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <poll.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/text.h"
#include "common/util.h"
#include "effects/effects.h"
#include "effects/net/http.h"
#include "effects/workspace/workspace.h"
#include "runtime/journal.h"
#include "runtime/runtime-internal.h"

const char *broker_arg_str(const cJSON *args, const char *name)
{
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(args, name);
        return cJSON_IsString(v) ? v->valuestring : NULL;
}

int broker_arg_raw(const struct broker *b, const char *name, struct json_span *ret)
{
        if (!b->cur_args.p)
                return 0;
        return json_object_get(b->cur_args, name, strlen(name), ret) == 1 ? 1 : 0;
}

int broker_need_str(const cJSON *args, const char *op, const char *name, const char **ret, struct err **err)
{
        const char *s = broker_arg_str(args, name);
        if (!s)
                return err_set(err, 0, "%s: argument '%s' must be a string", op, name);
        *ret = s;
        return 0;
}

/* log: writes a line on the parent's stderr.  Safe: output only, no input. */
static int do_log(struct broker *b, int64_t id, const cJSON *args, cJSON **ret, struct err **err)
{
        (void)id;
        const char *msg = NULL, *level = broker_arg_str(args, "level");
        if (broker_need_str(args, "log", "message", &msg, err) < 0)
                return -1;
        if (!level)
                level = "info";
        /* The message's own bytes, a NUL included (the tree's string stops
         * there); a lone surrogate is U+FFFD, as on Node's stderr. */
        struct json_span raw;
        _cleanup_free_ char *exact = NULL;
        size_t len = strlen(msg);
        if (broker_arg_raw(b, "message", &raw) == 1 && json_string_decode(raw, JSON_DECODE_REPLACE, &exact, &len) == 0)
                msg = exact;
        /* Log volume per run (--max-log): the message is refused whole, so
         * what is printed is always what the agent wrote. */
        if (len > b->lim.max_log - b->log_bytes)
                return broker_limit_fail(b, LIMIT_LOG, err);
        b->log_bytes += len;
        if (!b->cfg->quiet_logs) {
                /* Agent text: escaped, and every line under the tag, so a
                 * message cannot drive the terminal or forge our lines. */
                char tag[96], lv[64];
                if (strcmp(level, "info") == 0)
                        snprintf(tag, sizeof(tag), "[agent] ");
                else
                        snprintf(tag, sizeof(tag), "[agent:%s] ", text_term(level, strlen(level), lv, sizeof(lv)));
                broker_sink_log(b, tag, msg, len);
        }
        *ret = cJSON_CreateNull();
        return 0;
}

/* checkpoint: makes the journal durable up to here.  Safe: no input. */
static int do_checkpoint(struct broker *b, int64_t id, const cJSON *args, cJSON **ret, struct err **err)
{
        (void)id;
        (void)args;
        const struct session_journal *jr = &b->cfg->journal;
        if (jr->ops && jr->ops->sync(jr->j, err) < 0)
                return err_wrap(err, "checkpoint");
        *ret = cJSON_CreateNull();
        return 0;
}

#define INPUT_LINE_MAX (1 << 20)

static int answer_from_file(struct broker *b, const char *prompt, cJSON **ret, struct err **err)
{
        const cJSON *a = b->cfg->answers;
        const cJSON *v = NULL;
        if (cJSON_IsArray(a)) {
                v = cJSON_GetArrayItem(a, (int)b->answer_idx);
                if (!v)
                        return err_set(err, 0, "input: --answers has %d answers and all were used; add one for \"%s\"",
                                       cJSON_GetArraySize(a), prompt);
                b->answer_idx++;
        } else {
                v = cJSON_GetObjectItemCaseSensitive(a, prompt);
                if (!v)
                        return err_set(err, 0, "input: --answers has no answer for \"%s\"; add that key", prompt);
        }
        *ret = cJSON_Duplicate(v, 1); /* a raw node: the answer as the file has it */
        return *ret ? 0 : err_set(err, ENOMEM, "input");
}

/* input: asks the human running chidori (through the sink: the CLI's
 * terminal, a server's input route).  Safe: the answer is data. */
static int do_input(struct broker *b, int64_t id, const cJSON *args, cJSON **ret, struct err **err)
{
        const char *prompt = broker_arg_str(args, "prompt");
        if (!prompt)
                prompt = "";
        if (b->cfg->answers)
                return answer_from_file(b, prompt, ret, err);
        if (b->cfg->can_input)
                return broker_input_wait(b, id, prompt, err) < 0 ? -1 : 1;
        return err_set(err, 0,
                       "input: no answer for \"%s\": pass --answers FILE (a JSON array of answers, or an "
                       "object mapping prompts to answers) or run chidori in a terminal",
                       prompt);
}

/* clock.now: the parent's wall clock, recorded so replay is exact. */
static int do_clock_now(struct broker *b, int64_t id, const cJSON *args, cJSON **ret, struct err **err)
{
        (void)id;
        (void)b, (void)args, (void)err;
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        *ret = cJSON_CreateNumber((double)ts.tv_sec * 1000.0 + (double)(ts.tv_nsec / 1000000));
        return 0;
}

/* clock.mono: milliseconds since the session started, monotonic (not
 * moved by changes of the wall clock), to the microsecond: performance.now()
 * and process.hrtime.  Recorded like clock.now. */
static int do_clock_mono(struct broker *b, int64_t id, const cJSON *args, cJSON **ret, struct err **err)
{
        (void)id, (void)args, (void)err;
        double ms = mono_ms() - b->mono_origin;
        *ret = cJSON_CreateNumber((double)(int64_t)(ms * 1000.0) / 1000.0);
        return 0;
}

/* call.cancel {id}: the worker gives up one of its own pending calls
 * (clearTimeout, AbortController.abort).  The call is answered at once with
 * an AbortError and its effect stopped (runtime/answer.c); an id that is not
 * pending (answered already, never made) is a no-op.  The value says which. */
static int do_call_cancel(struct broker *b, int64_t id, const cJSON *args, cJSON **ret, struct err **err)
{
        const cJSON *target = cJSON_GetObjectItemCaseSensitive(args, "id");
        int64_t t;
        if (!cJSON_IsNumber(target) || !double_to_int64(target->valuedouble, &t))
                return err_set(err, 0, "call.cancel: 'id' must be an integer call id");
        *ret = cJSON_CreateBool(t > 0 && t < id && broker_cancel_call(b, t));
        return 0;
}

static int fill_random(void *buf, size_t n, struct err **err)
{
        size_t have = 0;
        while (have < n) {
                ssize_t r = getrandom((char *)buf + have, n - have, 0);
                if (r < 0) {
                        if (errno == EINTR)
                                continue;
                        return err_set(err, errno, "getrandom");
                }
                have += (size_t)r;
        }
        return 0;
}

/* random.seed / random.bytes: kernel randomness, recorded.  Bounded size. */
static int do_random_seed(struct broker *b, int64_t id, const cJSON *args, cJSON **ret, struct err **err)
{
        (void)id;
        (void)b, (void)args;
        unsigned char seed[32];
        char hex[65];
        if (fill_random(seed, sizeof(seed), err) < 0)
                return -1;
        for (size_t i = 0; i < sizeof(seed); i++)
                snprintf(hex + 2 * i, 3, "%02x", seed[i]);
        *ret = cJSON_CreateString(hex);
        return 0;
}

#define RANDOM_BYTES_MAX 65536

static int do_random_bytes(struct broker *b, int64_t id, const cJSON *args, cJSON **ret, struct err **err)
{
        (void)id;
        (void)b;
        const cJSON *n = cJSON_GetObjectItemCaseSensitive(args, "n");
        if (!cJSON_IsNumber(n) || n->valuedouble < 0 || n->valuedouble > RANDOM_BYTES_MAX ||
            n->valuedouble != (double)(size_t)n->valuedouble)
                return err_set(err, 0, "random.bytes: 'n' must be an integer from 0 to %d", RANDOM_BYTES_MAX);
        size_t len = (size_t)n->valuedouble;
        _cleanup_free_ unsigned char *buf = malloc(len ? len : 1);
        if (!buf || fill_random(buf, len, err) < 0)
                return buf ? -1 : err_set(err, ENOMEM, "random.bytes");
        _cleanup_free_ char *b64 = base64_encode(buf, len);
        if (!b64)
                return err_set(err, ENOMEM, "random.bytes");
        *ret = cJSON_CreateString(b64);
        return 0;
}

/* Gated rows name their policy target; the session checks it before the
 * handler runs (shape errors of a denied call are never reached).
 * {op, family, gate, target, handler, code_name, intent}. */
static const struct effect effects[] = {
        { "log", "core", GATE_NONE, NULL, do_log, NULL, false },
        { "memory.get", "memory", GATE_NONE, NULL, effect_memory_get, NULL, false },
        { "memory.set", "memory", GATE_NONE, NULL, effect_memory_set, NULL, false },
        { "memory.delete", "memory", GATE_NONE, NULL, effect_memory_delete, NULL, false },
        { "memory.list", "memory", GATE_NONE, NULL, effect_memory_list, NULL, false },
        { "template", "template", GATE_NONE, NULL, effect_template, NULL, false },
        { "checkpoint", "core", GATE_NONE, NULL, do_checkpoint, NULL, false },
        { "input", "core", GATE_NONE, NULL, do_input, NULL, false },
        { "clock.now", "core", GATE_NONE, NULL, do_clock_now, NULL, false },
        { "clock.mono", "core", GATE_NONE, NULL, do_clock_mono, NULL, false },
        { "timer.wait", "time", GATE_NONE, NULL, effect_timer_wait, NULL, false },
        { "call.cancel", "core", GATE_NONE, NULL, do_call_cancel, NULL, false },
        { "random.seed", "core", GATE_NONE, NULL, do_random_seed, NULL, false },
        { "random.bytes", "core", GATE_NONE, NULL, do_random_bytes, NULL, false },
        { "workspace.list", "workspace", GATE_FIXED, "workspace:list", effect_workspace_list, workspace_error_name, false },
        { "workspace.read", "workspace", GATE_FIXED, "workspace:read", effect_workspace_read, workspace_error_name, false },
        { "workspace.write", "workspace", GATE_FIXED, "workspace:write", effect_workspace_write, workspace_error_name, true },
        { "workspace.delete", "workspace", GATE_FIXED, "workspace:delete", effect_workspace_delete, workspace_error_name,
          true },
        { "workspace.manifest", "workspace", GATE_FIXED, "workspace:manifest", effect_workspace_manifest,
          workspace_error_name, false },
        { "http", "net", GATE_FIXED, "http", effect_http, http_error_name, true },
        { "http.read", "net", GATE_NONE, NULL, effect_http_read, http_error_name, false },
        { "http.close", "net", GATE_NONE, NULL, effect_http_close, http_error_name, false },
        { "tool", "proc", GATE_TOOL, NULL, effect_tool, effect_tool_code, true },
        { "prompt", "net", GATE_NONE, NULL, effect_prompt, effect_prompt_code, true },
        { "agent.call", "proc", GATE_AGENT, NULL, effect_agent_call, effect_agent_code, true },
};

/* node:fs is a family: every "fs.<op>" goes to one handler, which knows
 * the ops (effects/fs/vfs.c) and answers an unknown one with ENOSYS.  The
 * tree lives in the session's memory: nothing outside the box changes. */
static const struct effect fs_family = { "fs.*", "fs", GATE_NONE, NULL, effect_fs, effect_fs_code, false };

static const struct effect *find(const char *op)
{
        for (size_t i = 0; i < ARRAY_SIZE(effects); i++)
                if (strcmp(effects[i].op, op) == 0)
                        return &effects[i];
        if (strncmp(op, "fs.", 3) == 0 && op[3])
                return &fs_family;
        return NULL;
}

/* The families, each the folder of its rows' handlers; the session calls
 * their hooks without knowing what they are.  core, workspace and template
 * hold nothing per session beyond struct broker and wait on no fd. */
static const struct effect_family families[] = {
        { "core", NULL, NULL, NULL, NULL, NULL },
        { "memory", broker_memory_attach, NULL, NULL, NULL, NULL },
        { "workspace", NULL, NULL, NULL, NULL, NULL },
        { "template", NULL, NULL, NULL, NULL, NULL },
        { "net", NULL, broker_http_fds, broker_http_perform, broker_http_free, broker_http_cancel },
        { "proc", NULL, broker_procs_fds, broker_procs_perform, broker_procs_free, broker_procs_cancel },
        { "fs", NULL, NULL, NULL, broker_fs_free, NULL },
        { "time", NULL, broker_timers_fds, broker_timers_perform, broker_timers_free, broker_timers_cancel },
};

const struct effect_table effects_table = { find, families, ARRAY_SIZE(families) };
