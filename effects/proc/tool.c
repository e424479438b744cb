/* effects/proc/tool.c — the `tool` effect: a command from --tools, boxed by
 * default (effects/proc/tools.c), its args on stdin, its output the value.
 * What every child shares (environment, cgroup place, caps): proc.c.
 */
#define _GNU_SOURCE
#include <cjson/cJSON.h>
#include <stdlib.h>

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
        if (r == 0)
                r = subproc_start(b->procs, (uint64_t)id, spec, on_tool_done, b, err);
        tools_spec_free(spec);
        if (r < 0) {
                proc_release_place(b, id);
                return -1;
        }
        b->ntools++;
        return 1;
}
