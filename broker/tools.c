/* broker/tools.c — the broker's tools (issue 10): what it commits to before
 * reading anything hostile, and how its session starts them (the monitor,
 * over the channel: SPAWN kind tool). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "broker/provider.h"
#include "broker/tools.h"
#include "chan/chan.h"
#include "cli/grants.h"
#include "effects/proc/tools.h"

static bool listed(char *const *v, size_t n, const char *s)
{
        for (size_t i = 0; i < n; i++)
                if (strcmp(v[i], s) == 0)
                        return true;
        return false;
}

int broker_tools_commit(int chan, const char *agent_dir, const struct tools_registry *reg, struct err **err)
{
        size_t nt = tools_count(reg), cap = 1;
        for (size_t i = 0; i < nt; i++)
                cap += 1 + tools_at(reg, i)->nro_bind + tools_at(reg, i)->nenv;
        char **cmds = calloc(cap, sizeof(char *)), **binds = calloc(cap, sizeof(char *)),
             **names = calloc(cap, sizeof(char *));
        size_t nc = 0, nb = 0, ne = 0;
        unsigned flags = 0;
        int r = 0;
        if (!cmds || !binds || !names)
                r = err_set(err, ENOMEM, "COMMIT");
        for (size_t i = 0; r == 0 && i < nt; i++) {
                const struct tool_def *t = tools_at(reg, i);
                char *prog = tools_program(t);
                if (!prog) {
                        r = err_set(err, 0, "--tools: %s: program '%s' not found in PATH=%s", t->name, t->command[0],
                                    TOOLS_PATH);
                        break;
                }
                if (listed(cmds, nc, prog))
                        free(prog);
                else
                        cmds[nc++] = prog;
                for (size_t k = 0; k < t->nro_bind; k++)
                        if (!listed(binds, nb, t->ro_bind[k]))
                                binds[nb++] = t->ro_bind[k];
                for (size_t k = 0; k < t->nenv; k++)
                        if (!listed(names, ne, t->env[k]))
                                names[ne++] = t->env[k];
                if (!t->sandbox)
                        flags |= CHAN_COMMIT_UNSANDBOXED_TOOLS;
        }
        if (r == 0)
                r = chan_boxes_commit(chan, flags, agent_dir, (const char *const *)cmds, nc,
                                      (const char *const *)binds, nb, (const char *const *)names, ne, err);
        for (size_t i = 0; i < nc; i++)
                free(cmds[i]);
        free(cmds);
        free(binds);
        free(names);
        return r;
}

void broker_tools_children(struct broker_children *ch, const struct box_provider *boxes, long max_tools)
{
        *ch = (struct broker_children){
                /* Never executed here: tools_spec wants an absolute path
                 * for the argv it builds, which the monitor does not take
                 * (it builds its own from the request). */
                .self_exe = "/proc/self/exe",
                .cwd = "/",
                .max_tools = (unsigned)(max_tools > 0 ? max_tools : GRANTS_DEFAULT_MAX_TOOLS),
                .tool_boxes = boxes,
        };
}
