/* broker/gate.c — the policy gate in front of every gated effect.
 *
 * Order for a gated call: the policy decides on the call's arguments as the
 * worker sent them, before the handler looks at them (a denied call learns
 * nothing about the shape the handler wants or the state behind it).  A
 * refusal is answered as an Error the agent can catch, printed on the
 * parent's stderr and written to the journal as a note.  ask_before has no
 * one to ask on the CLI: it refuses unless CHIDORI_POLICY_AUTO_APPROVE=1
 * (the server's approval flow suspends the call at this point instead).
 */
#define _GNU_SOURCE
#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>

#include "broker/broker-internal.h"
#include "broker/policy.h"
#include "common/text.h"

bool broker_gate(struct broker *b, const char *target, const cJSON *args, char *msg, size_t len)
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
                return true;
        if (d == POLICY_ASK && b->cfg->auto_approve) {
                char note[512];
                snprintf(note, sizeof(note), "policy: `%.200s` approved by CHIDORI_POLICY_AUTO_APPROVE=1", target);
                broker_journal_note(b, "approved", note);
                return true;
        }
        if (d == POLICY_ASK)
                policy_ask_message(target, &v, msg, len);
        else
                policy_denial_message(target, &v, msg, len);
        text_fput_line(stderr, "chidori: ", msg, strlen(msg)); /* it quotes the call's arguments */
        fflush(stderr);
        broker_journal_note(b, d == POLICY_ASK ? "needs_approval" : "denied", msg);
        return false;
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
