/* runtime/gate.c — the policy gate in front of every gated effect.
 *
 * Order for a gated call: the policy decides on the call's arguments as the
 * worker sent them, before the handler looks at them (a denied call learns
 * nothing about the shape the handler wants or the state behind it).  A
 * refusal is answered as an Error the agent can catch, printed on the
 * parent's stderr and written to the journal as a note.  ask_before on the
 * CLI: CHIDORI_POLICY_AUTO_APPROVE=1 approves; else, when stdin is a
 * terminal, the person at it is asked on /dev/tty (y approves, anything
 * else refuses); else it refuses (the server's approval flow suspends the
 * call at this point instead).
 */
#define _GNU_SOURCE
#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/text.h"
#include "common/util.h"
#include "policy/policy.h"
#include "runtime/runtime-internal.h"

/* Ask on the terminal: "chidori: allow <target> <args>? [y/N] ".  Both come
 * from the agent: printable ASCII only, the rest as \xNN, the arguments cut
 * to a summary.  The wait ends at the run's deadline or a stop signal (a
 * refusal).  True only for y or yes. */
static bool ask_terminal(struct broker *b, const char *target, const cJSON *args)
{
        _cleanup_close_ int fd = open("/dev/tty", O_RDWR | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return false;
        char t[256], a[320];
        text_sanitize(target, 200, 0, t, sizeof(t));
        /* The args as the agent wrote them (its numbers, not a reprint). */
        _cleanup_free_ char *json = b->cur_args.p ? strndup(b->cur_args.p, b->cur_args.len)
                                    : args       ? cJSON_PrintUnformatted(args)
                                                 : NULL;
        text_sanitize(json ? json : "{}", 240, 0, a, sizeof(a));
        char q[640];
        int n = snprintf(q, sizeof(q), "chidori: allow %s %s? [y/N] ", t, a);
        if (n < 0 || write(fd, q, (size_t)n < sizeof(q) ? (size_t)n : sizeof(q) - 1) < 0)
                return false;
        char line[16];
        size_t len = 0;
        bool eol = false;
        for (;;) {
                int timeout = -1;
                if (b->deadline_at > 0) {
                        double left = b->deadline_at - mono_ms();
                        if (left <= 0)
                                break;
                        timeout = (int)left + 1;
                }
                bool stop = b->cfg->stop && *b->cfg->stop;
                struct pollfd p = { .fd = fd, .events = POLLIN };
                int r = stop ? 0 : poll(&p, 1, timeout);
                if (r < 0 && errno == EINTR)
                        continue; /* a stop signal is seen at the top */
                if (r <= 0)
                        break;
                char c;
                ssize_t got = read(fd, &c, 1);
                if (got < 0 && errno == EINTR)
                        continue;
                if (got <= 0)
                        break;
                if (c == '\n' || c == '\r') {
                        eol = true;
                        break;
                }
                if (len < sizeof(line) - 1)
                        line[len++] = c;
        }
        line[len] = '\0';
        if (!eol && write(fd, "\n", 1) < 0) /* end the prompt's line */
                return false;
        return eol && (strcasecmp(line, "y") == 0 || strcasecmp(line, "yes") == 0);
}

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
        bool asked = false;
        if (d == POLICY_ASK && b->cfg->interactive) {
                asked = true;
                if (ask_terminal(b, target, args)) {
                        char note[512];
                        char clean[256];
                        text_sanitize(target, 200, '`', clean, sizeof(clean));
                        snprintf(note, sizeof(note), "policy: `%s` approved at the terminal", clean);
                        broker_journal_note(b, "approved", note);
                        return true;
                }
        }
        if (d == POLICY_ASK && asked)
                policy_declined_message(target, &v, msg, len);
        else if (d == POLICY_ASK)
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
