/* runtime/gate.c — the policy gate in front of every gated effect.
 *
 * Order for a gated call: the policy decides on the call's arguments as the
 * worker sent them, before the handler looks at them (a denied call learns
 * nothing about the shape the handler wants or the state behind it).  A
 * refusal is answered as an Error the agent can catch, told to the sink and
 * written to the journal as a note.  ask_before: CHIDORI_POLICY_AUTO_APPROVE=1
 * approves; a decision already taken in this session for the same (target,
 * args) is taken again; else, when someone can approve (cfg->can_approve:
 * the CLI on a terminal, the server), the call is PENDING: parked until
 * session_approve (runtime/pending.c); else it is refused.
 */
#define _GNU_SOURCE
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/text.h"
#include "policy/policy.h"
#include "runtime/runtime-internal.h"
#include "runtime/session-internal.h"

static enum gate_answer refuse(struct broker *b, const char *kind, const char *msg)
{
        broker_sink_note(b, "chidori: ", msg); /* it quotes the call's arguments: the sink escapes it */
        broker_journal_note(b, kind, msg);
        return GATE_ANSWER_DENY;
}

enum gate_answer broker_gate(struct broker *b, const char *target, const cJSON *args, const char *args_text,
                             char *msg, size_t len, char *reason, size_t reason_len)
{
        struct policy_verdict v;
        enum policy_decision d = policy_check(b->cfg->policy, target, args, &v);
        /* A nested agent's layers (callAgent options.policy): the stricter wins. */
        for (const struct policy *const *l = b->cfg->layers; l && *l; l++) {
                struct policy_verdict lv;
                if (policy_check(*l, target, args, &lv) > d) {
                        v = lv;
                        d = lv.decision;
                }
        }
        if (d == POLICY_ALLOW)
                return GATE_ANSWER_ALLOW;
        if (d != POLICY_ASK) {
                policy_denial_message(target, &v, msg, len);
                return refuse(b, "denied", msg);
        }
        if (b->cfg->auto_approve) {
                char note[512];
                snprintf(note, sizeof(note), "policy: `%.200s` approved by CHIDORI_POLICY_AUTO_APPROVE=1", target);
                broker_journal_note(b, "approved", note);
                return GATE_ANSWER_ALLOW;
        }
        if (!b->cfg->can_approve) {
                policy_ask_message(target, &v, msg, len);
                return refuse(b, "needs_approval", msg);
        }
        policy_declined_message(target, &v, msg, len);
        int known = session_remembered(b->s, target, args_text);
        if (known > 0)
                return GATE_ANSWER_ALLOW;
        if (known < 0)
                return refuse(b, "needs_approval", msg);
        policy_pending_message(target, &v, reason, reason_len);
        return GATE_ANSWER_PENDING;
}

bool broker_gate_now(struct broker *b, const char *target, const cJSON *args, char *msg, size_t len)
{
        char *text = cJSON_PrintUnformatted(args);
        char reason[1024];
        enum gate_answer g = broker_gate(b, target, args, text ? text : "{}", msg, len, reason, sizeof(reason));
        free(text);
        if (g == GATE_ANSWER_PENDING) {
                /* A call that cannot wait (a redirect): refused as policy_ask_message says. */
                snprintf(msg, len, "%s; nothing can approve it here (set CHIDORI_POLICY_AUTO_APPROVE=1 to approve "
                                   "such calls)", reason);
                refuse(b, "needs_approval", msg);
        }
        return g == GATE_ANSWER_ALLOW;
}

const char *broker_gate_arg(const struct effect *e)
{
        return e->gate == GATE_AGENT ? "path" : "name";
}

/* The target a gated row names for this call; false when the call is so
 * malformed that it names none (a tool call without a string name, a
 * callAgent without a string path) or the name does not fit `buf`. */
bool broker_gate_target(const struct effect *e, const cJSON *args, char *buf, size_t len)
{
        if (e->gate == GATE_FIXED) {
                snprintf(buf, len, "%s", e->target);
                return true;
        }
        const char *prefix = e->gate == GATE_AGENT ? "agent:" : "tool:";
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(args, broker_gate_arg(e));
        if (!cJSON_IsString(name))
                return false;
        snprintf(buf, len, "%s%s", prefix, name->valuestring);
        return strlen(prefix) + strlen(name->valuestring) < len;
}
