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
                text_fput_lines(stderr, tag, msg, len, true);
                fflush(stderr);
        }
        *ret = cJSON_CreateNull();
        return 0;
}

/* checkpoint: makes the journal durable up to here.  Safe: no input. */
static int do_checkpoint(struct broker *b, int64_t id, const cJSON *args, cJSON **ret, struct err **err)
{
        (void)id;
        (void)args;
        if (b->cfg->journal && journal_sync(b->cfg->journal, err) < 0)
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

/* One line from the terminal, waiting in poll() so that the run's deadline
 * and a stop signal still end it (a read(2) blocked on a terminal would
 * not return).  A canonical-mode terminal makes a line readable at once. */
static int read_tty_line(int fd, const struct budget *budget, char **ret, struct err **err)
{
        size_t len = 0, cap = 256;
        _cleanup_free_ char *line = malloc(cap);
        if (!line)
                return err_set(err, ENOMEM, "input");
        for (;;) {
                if (budget_check(budget, "input", err) < 0)
                        return -1;
                struct pollfd p = { .fd = fd, .events = POLLIN };
                int n = poll(&p, 1, 100);
                if (n < 0 && errno != EINTR)
                        return err_set(err, errno, "input: wait for the terminal");
                if (n <= 0)
                        continue;
                if (len + 1 >= cap) {
                        if (cap >= INPUT_LINE_MAX)
                                return err_set(err, 0, "input: the answer is longer than %d bytes", INPUT_LINE_MAX);
                        char *nl = realloc(line, cap * 2);
                        if (!nl)
                                return err_set(err, ENOMEM, "input");
                        line = nl;
                        cap *= 2;
                }
                ssize_t r = read(fd, line + len, cap - 1 - len);
                if (r < 0 && (errno == EINTR || errno == EAGAIN))
                        continue;
                if (r < 0)
                        return err_set(err, errno, "input: read the terminal");
                if (r == 0) {
                        if (len == 0)
                                return 1;  /* end of input */
                        break;
                }
                char *nl = memchr(line + len, '\n', (size_t)r);
                len += (size_t)r;
                if (nl) {
                        len = (size_t)(nl - line);  /* what follows the line is dropped */
                        break;
                }
        }
        line[len] = '\0';
        *ret = take_ptr(&line);
        return 0;
}

static int answer_from_tty(const char *prompt, const struct budget *budget, cJSON **ret, struct err **err)
{
        _cleanup_fclose_ FILE *tty = fopen("/dev/tty", "r+e");
        if (!tty)
                return err_set(err, errno, "input: cannot open the terminal");
        /* The prompt is the agent's text: escaped, each line tagged, so it
         * cannot pass for a prompt of the system's (a fake password ask). */
        text_fput_lines(tty, "[agent] ", prompt, strlen(prompt), false);
        fputc(' ', tty);
        fflush(tty);
        _cleanup_free_ char *line = NULL;
        int r = read_tty_line(fileno(tty), budget, &line, err);
        if (r < 0)
                return -1;
        if (r > 0)
                return err_set(err, 0, "input: end of input on the terminal while asking \"%s\"", prompt);
        size_t n = strlen(line);
        while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
                line[--n] = '\0';
        *ret = json_cjson_string(line, n, 0); /* what was typed, as a string (invalid UTF-8: U+FFFD) */
        return *ret ? 0 : err_set(err, ENOMEM, "input");
}

/* input: asks the human running chidori.  Safe: the answer is data. */
static int do_input(struct broker *b, int64_t id, const cJSON *args, cJSON **ret, struct err **err)
{
        (void)id;
        const char *prompt = broker_arg_str(args, "prompt");
        if (!prompt)
                prompt = "";
        if (b->cfg->answers)
                return answer_from_file(b, prompt, ret, err);
        if (b->cfg->interactive)
                return answer_from_tty(prompt, &b->budget, ret, err);
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

/* Gated rows name their policy target; the loop checks it before the
 * handler runs (shape errors of a denied call are never reached). */
static const struct effect effects[] = {
        { "log", do_log, GATE_NONE, NULL, NULL },
        { "memory.get", effect_memory_get, GATE_NONE, NULL, NULL },
        { "memory.set", effect_memory_set, GATE_NONE, NULL, NULL },
        { "memory.delete", effect_memory_delete, GATE_NONE, NULL, NULL },
        { "memory.list", effect_memory_list, GATE_NONE, NULL, NULL },
        { "template", effect_template, GATE_NONE, NULL, NULL },
        { "checkpoint", do_checkpoint, GATE_NONE, NULL, NULL },
        { "input", do_input, GATE_NONE, NULL, NULL },
        { "clock.now", do_clock_now, GATE_NONE, NULL, NULL },
        { "random.seed", do_random_seed, GATE_NONE, NULL, NULL },
        { "random.bytes", do_random_bytes, GATE_NONE, NULL, NULL },
        { "workspace.list", effect_workspace_list, GATE_FIXED, "workspace:list", workspace_error_name },
        { "workspace.read", effect_workspace_read, GATE_FIXED, "workspace:read", workspace_error_name },
        { "workspace.write", effect_workspace_write, GATE_FIXED, "workspace:write", workspace_error_name },
        { "workspace.delete", effect_workspace_delete, GATE_FIXED, "workspace:delete", workspace_error_name },
        { "workspace.manifest", effect_workspace_manifest, GATE_FIXED, "workspace:manifest", workspace_error_name },
        { "http", effect_http, GATE_FIXED, "http", http_error_name },
        { "tool", effect_tool, GATE_TOOL, NULL, effect_tool_code },
        { "prompt", effect_prompt, GATE_NONE, NULL, effect_prompt_code },
        { "agent.call", effect_agent_call, GATE_AGENT, NULL, effect_agent_code },
};

/* node:fs is a family: every "fs.<op>" goes to one handler, which knows
 * the ops (effects/fs/vfs.c) and answers an unknown one with ENOSYS. */
static const struct effect fs_family = { "fs.*", effect_fs, GATE_NONE, NULL, effect_fs_code };

const struct effect *broker_effect_find(const char *op)
{
        for (size_t i = 0; i < ARRAY_SIZE(effects); i++)
                if (strcmp(effects[i].op, op) == 0)
                        return &effects[i];
        if (strncmp(op, "fs.", 3) == 0 && op[3])
                return &fs_family;
        return NULL;
}
