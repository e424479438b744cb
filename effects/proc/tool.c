/* effects/proc/tool.c — the `tool` effect: a command from --tools, boxed by
 * default (effects/proc/tools.c), its args on stdin, its output the value.
 * What every child shares (environment, cgroup place, caps): proc.c.
 * One process: the subprocess engine starts it here.  Under the broker
 * (cfg->children->tool_boxes, issue 10) the monitor starts it (SPAWN kind
 * tool) and the engine drives the stdio it hands back (a remote child);
 * the result is built the same way either way.
 */
#define _GNU_SOURCE
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "effects/proc/proc.h"
#include "effects/proc/subproc.h"
#include "effects/proc/tools.h"
#include "proto/json.h"
#include "runtime/runtime-internal.h"

const char *effect_tool_code(int code)
{
        switch (code) {
        case EFFECT_E_LIMIT: return "ELIMIT";
        case TOOLS_E_TIMEOUT: return "timeout";
        case TOOLS_E_EXIT: return "exit";
        case TOOLS_E_SIGNAL: return "signal";
        case TOOLS_E_OUTPUT: return "output";
        case TOOLS_E_ARGS: return "args";
        case TOOLS_E_SCHEMA: return "unknown_tool";
        default: return NULL;
        }
}

static void on_tool_done(void *arg, uint64_t id, const struct subproc_result *res)
{
        struct broker *b = arg;
        b->ntools--;
        proc_release_place(b, (int64_t)id);
        struct pending_call *pc = broker_pending(b, (int64_t)id);
        const cJSON *name = pc ? cJSON_GetObjectItemCaseSensitive(pc->args, "name") : NULL;
        const struct tool_def *t = cJSON_IsString(name) ? tools_find(b->cfg->tools, name->valuestring) : NULL;
        if (!t) {
                broker_complete(b, (int64_t)id, NULL, broker_error_obj("Error", "tool: lost track of the call", NULL));
                return;
        }
        cJSON *value = NULL;
        struct err *e = NULL;
        if (tools_result(t, res, &value, &e) < 0) {
                broker_complete(b, (int64_t)id, NULL, broker_error_obj("Error", err_msg(e), effect_tool_code(err_code(e))));
                err_free(e);
                return;
        }
        broker_complete(b, (int64_t)id, value, NULL);
}

/* ---- a tool the monitor starts (ch->tool_boxes: the broker, issue 10) ----
 * The box provider starts it and hands back its stdio; the subprocess
 * engine drives that as for a child of its own (subproc_remote_*). */

struct tool_box {
        struct broker *b;   /* NULL once the session's engine is gone */
        int64_t id;
        void *handle;
        bool started;
};

static void tb_started(void *arg, const struct box_started *st)
{
        struct tool_box *tb = arg;
        int fds[3] = { st->stdin_fd, st->stdout_fd, st->stderr_fd };
        tb->started = true;
        if (!tb->b || subproc_remote_started(tb->b->procs, (uint64_t)tb->id, fds) < 0)
                for (int i = 0; i < 3; i++)
                        if (fds[i] >= 0)
                                close(fds[i]);
}

static void tb_failed(void *arg, const struct err *e, bool layer)
{
        (void)layer;
        struct tool_box *tb = arg;
        struct broker *b = tb->b;
        if (b && subproc_remote_forget(b->procs, (uint64_t)tb->id)) {
                b->ntools--;
                struct pending_call *pc = broker_pending(b, tb->id);
                const cJSON *name = pc ? cJSON_GetObjectItemCaseSensitive(pc->args, "name") : NULL;
                char msg[700];
                snprintf(msg, sizeof(msg), "tool %s could not be started: %s",
                         cJSON_IsString(name) ? name->valuestring : "?", err_msg(e));
                broker_complete(b, tb->id, NULL, broker_error_obj("Error", msg, NULL));
        }
        free(tb);
}

static void tb_ended(void *arg, const struct box_ended *be)
{
        struct tool_box *tb = arg;
        if (tb->b)
                subproc_remote_ended(tb->b->procs, (uint64_t)tb->id, tb->started, be->wait_status);
        free(tb);
}

static void tb_kill(void *arg, bool engine_gone)
{
        struct tool_box *tb = arg;
        const struct box_provider *p = tb->b->cfg->children->tool_boxes;
        if (engine_gone)
                tb->b = NULL;
        p->finish(p->arg, tb->handle, true);
}

/* What tools_spec would run, for the provider: the program (absolute), the
 * command, the tool's env names and ro binds. */
static int start_remote(struct broker *b, int64_t id, const struct tool_def *t, const struct subproc_spec *spec,
                        struct err **err)
{
        const struct box_provider *p = b->cfg->children->tool_boxes;
        _cleanup_free_ char *prog = tools_program(t);
        if (!prog)
                return err_set(err, 0, "tool %s: program '%s' not found", t->name, t->command[0]);
        _cleanup_free_ char **argv = calloc(t->ncommand + 1, sizeof(*argv));
        struct tool_box *tb = calloc(1, sizeof(*tb));
        if (!argv || !tb) {
                free(tb);
                return err_set(err, ENOMEM, "tool %s", t->name);
        }
        argv[0] = prog;
        for (size_t i = 1; i < t->ncommand; i++)
                argv[i] = t->command[i];
        *tb = (struct tool_box){ .b = b, .id = id };
        if (subproc_remote_new(b->procs, (uint64_t)id, spec, tb_kill, tb, on_tool_done, b, err) < 0) {
                free(tb);
                return -1;
        }
        struct box_request req = {
                .kind = BOX_TOOL, .argv = argv, .env_names = t->env, .ro_binds = t->ro_bind, .host = !t->sandbox,
                .timeout_ms = t->timeout_ms,
        };
        struct box_events ev = { .started = tb_started, .failed = tb_failed, .ended = tb_ended, .arg = tb };
        if (p->spawn(p->arg, NULL, &req, &ev, &tb->handle, err) < 0) {
                subproc_remote_forget(b->procs, (uint64_t)id);
                free(tb);
                return -1;
        }
        return 0;
}

int effect_tool(struct broker *b, int64_t id, const cJSON *args, cJSON **ret, struct err **err)
{
        (void)id;
        (void)ret;
        const char *name = NULL;
        if (broker_need_str(args, "tool", "name", &name, err) < 0)
                return -1;
        if (!b->cfg->tools)
                return err_set(err, 0, "tool %s: no tools are declared (start chidori with --tools FILE)", name);
        const struct tool_def *t = tools_find(b->cfg->tools, name);
        if (!t)
                return err_setc(err, TOOLS_E_SCHEMA, 0, "tool %s: no such tool in the --tools file", name);
        const struct broker_children *ch = b->cfg->children;
        if (!ch)
                return err_set(err, 0, "tool %s: tools cannot be started in this mode", name);
        if (b->ntools >= ch->max_tools)
                return proc_limit_refused(b, err, "tool limit reached (%u at once per run; raise it with --max-tools)",
                                     ch->max_tools);
        /* The tool's args as the agent wrote them: its stdin. */
        struct json_span raw;
        _cleanup_free_ char *targs = broker_arg_raw(b, "args", &raw) == 1 ? json_compact(raw, NULL) : NULL;
        if (proc_engine(b, err) < 0)
                return -1;
        char ppid[32], *extra[3];
        _cleanup_free_ char *place = NULL;
        if (proc_child_env(b, id, ppid, &place, extra, err) < 0)
                return -1;
        const struct tools_host host = {
                .self_exe = ch->self_exe, .launch_opts = ch->launch_opts, .env = ch->tool_env, .extra_env = extra,
        };
        struct subproc_spec *spec = NULL;
        int r = tools_spec(b->cfg->tools, t, targs, &host, &spec, err);
        if (r == 0 && ch->tool_boxes)
                r = start_remote(b, id, t, spec, err);
        else if (r == 0)
                r = subproc_start(b->procs, (uint64_t)id, spec, on_tool_done, b, err);
        tools_spec_free(spec);
        if (r < 0) {
                proc_release_place(b, id);
                return -1;
        }
        b->ntools++;
        return 1;
}
