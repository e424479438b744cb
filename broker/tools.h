/* broker/tools.h — the broker's tools: the COMMIT of what --tools declared
 * (each tool's program, absolute; the ro binds; the env names; whether
 * any is "sandbox": false), and the children configuration that makes its
 * session start them through the monitor (broker_children.tool_boxes). */
#ifndef CHIDORI_BROKER_TOOLS_H
#define CHIDORI_BROKER_TOOLS_H

#include "common/err.h"
#include "runtime/session.h"

struct tools_registry;

/* COMMIT the agent folder and the tools of `reg` (NULL: none). */
int broker_tools_commit(int chan, const char *agent_dir, const struct tools_registry *reg, struct err **err);
/* Tools start through `boxes`; at most max_tools at once (0: the default). */
void broker_tools_children(struct broker_children *ch, const struct box_provider *boxes, long max_tools);

#endif
