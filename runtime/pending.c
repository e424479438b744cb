/* runtime/pending.c — calls waiting for a person: gated calls parked for
 * an approval, and chidori.input calls waiting for an answer.
 *
 * Parked calls are asked one at a time, lowest call id first; the answer
 * (session_approve) is remembered for the session per (target, args), so
 * the same call is not asked twice, and parked calls it covers are decided
 * with it.  An answer may come from inside the sink's callback (the CLI asks
 * on the terminal there): it is only recorded, and the call is performed or
 * refused from a deferred callback of the loop, never re-entering the
 * handler that was running.
 */
#define _GNU_SOURCE
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/text.h"
#include "proto/json.h"
#include "runtime/evloop.h"
#include "runtime/session-internal.h"

static void parked_clear(struct parked_call *p)
{
        free(p->op);
        cJSON_Delete(p->args);
        free(p->args_text);
        free(p->target);
        free(p->declined);
        free(p->reason);
        free(p->who);
}

size_t session_parked_count(const struct session *s)
{
        return s->nparked;
}

int session_remembered(const struct session *s, const char *target, const char *args)
{
        for (size_t i = 0; i < s->nmemo; i++)
                if (strcmp(s->memo[i].target, target) == 0 && strcmp(s->memo[i].args, args) == 0)
                        return s->memo[i].allow ? 1 : -1;
        return 0;
}

static int remember(struct session *s, const char *target, const char *args, bool allow, struct err **err)
{
        if (session_remembered(s, target, args))
                return 0;
        if (s->nmemo == s->memo_cap) {
                size_t cap = s->memo_cap ? 2 * s->memo_cap : 8;
                struct remembered *nm = realloc(s->memo, cap * sizeof(*nm));
                if (!nm)
                        return err_set(err, ENOMEM, "approval");
                s->memo = nm;
                s->memo_cap = cap;
        }
        struct remembered *m = &s->memo[s->nmemo];
        m->target = strdup(target);
        m->args = strdup(args);
        m->allow = allow;
        if (!m->target || !m->args) {
                free(m->target);
                free(m->args);
                return err_set(err, ENOMEM, "approval");
        }
        s->nmemo++;
        return 0;
}

/* Ask the sink about the parked call with the lowest id, if none is out. */
static void ask_next(struct session *s)
{
        if (s->asking || s->b.finished)
                return;
        struct parked_call *best = NULL;
        for (size_t i = 0; i < s->nparked; i++)
                if (!s->parked[i].decided && (!best || s->parked[i].id < best->id))
                        best = &s->parked[i];
        if (!best)
                return;
        s->asking = true;
        s->asked_id = best->id;
        s->approval = (struct session_approval){
                .id = (uint64_t)best->id, .target = best->target, .args = best->args_text, .reason = best->reason,
        };
        session_set_state(s, SESSION_AWAITING);
        if (s->sink->approval)
                s->sink->approval(s->sink->arg, s, &s->approval);
}

const struct session_approval *session_pending_approval(const struct session *s)
{
        return s->asking ? &s->approval : NULL;
}

/* Perform or refuse one decided call; it leaves the parked list first. */
static int resolve_one(struct session *s, size_t i, struct err **err)
{
        struct parked_call p = s->parked[i];
        memmove(&s->parked[i], &s->parked[i + 1], (s->nparked - i - 1) * sizeof(s->parked[0]));
        s->nparked--;
        int r;
        if (p.decided > 0) {
                char note[512], clean[256];
                text_sanitize(p.target, 200, '`', clean, sizeof(clean));
                snprintf(note, sizeof(note), "policy: `%s` approved %s", clean, p.who ? p.who : "");
                broker_journal_note(&s->b, "approved", note);
                r = session_perform_gated(s, p.id, s->cfg->effects->find(p.op), p.op, p.args, p.args_text, err);
        } else {
                broker_sink_note(&s->b, "chidori: ", p.declined);
                broker_journal_note(&s->b, "needs_approval", p.declined);
                r = session_answer(s, p.id, p.op, p.args_text, NULL, broker_error_obj("Error", p.declined, "EPOLICY"),
                                   err);
        }
        parked_clear(&p);
        return r;
}

/* Deferred: perform or refuse what was decided, then ask the next one. */
static void resolve(struct evloop *loop, void *arg)
{
        (void)loop;
        struct session *s = arg;
        if (s->b.finished)
                return;
        for (size_t i = 0; i < s->nparked;) {
                if (!s->parked[i].decided) {
                        i++;
                        continue;
                }
                struct err *e = NULL;
                if (resolve_one(s, i, &e) < 0) {
                        session_fail(s, e);
                        return;
                }
        }
        if (!s->asking && !s->input_asked && s->state == SESSION_AWAITING)
                session_set_state(s, SESSION_RUNNING);
        ask_next(s);
}

int session_park(struct session *s, int64_t id, const char *op, const cJSON *args, const char *args_text,
                 const char *target, const char *declined, const char *reason, struct err **err)
{
        if (s->nparked == s->parked_cap) {
                size_t cap = s->parked_cap ? 2 * s->parked_cap : 8;
                struct parked_call *np = realloc(s->parked, cap * sizeof(*np));
                if (!np)
                        return err_set(err, ENOMEM, "park call %lld", (long long)id);
                s->parked = np;
                s->parked_cap = cap;
        }
        struct parked_call p = {
                .id = id, .op = strdup(op), .args = cJSON_Duplicate(args, 1), .args_text = strdup(args_text),
                .target = strdup(target), .declined = strdup(declined), .reason = strdup(reason),
        };
        if (!p.op || !p.args || !p.args_text || !p.target || !p.declined || !p.reason) {
                parked_clear(&p);
                return err_set(err, ENOMEM, "park call %lld", (long long)id);
        }
        s->parked[s->nparked++] = p;
        /* Asked from the loop, not from inside the handler's dispatch. */
        return evloop_defer(s->loop, resolve, s, err);
}

int session_approve(struct session *s, uint64_t id, bool allow, const char *who, struct err **err)
{
        if (!s->asking || (uint64_t)s->asked_id != id)
                return err_set(err, 0, "no approval %llu is waiting (the one waiting is %s)", (unsigned long long)id,
                               s->asking ? "another" : "none");
        struct parked_call *asked = NULL;
        for (size_t i = 0; i < s->nparked; i++)
                if (s->parked[i].id == s->asked_id)
                        asked = &s->parked[i];
        if (!asked)
                return err_set(err, 0, "approval %llu is gone", (unsigned long long)id);
        if (remember(s, asked->target, asked->args_text, allow, err) < 0)
                return -1;
        /* The same (target, args) parked meanwhile is decided with it. */
        for (size_t i = 0; i < s->nparked; i++) {
                struct parked_call *p = &s->parked[i];
                if (p->decided || strcmp(p->target, asked->target) != 0 || strcmp(p->args_text, asked->args_text) != 0)
                        continue;
                p->decided = allow ? 1 : -1;
                free(p->who);
                p->who = who ? strdup(who) : NULL;
        }
        s->asking = false;
        return evloop_defer(s->loop, resolve, s, err);
}

/* ---- input ---- */

static void ask_input(struct session *s)
{
        if (s->input_asked || !s->ninputs || s->b.finished)
                return;
        s->input_asked = true;
        session_set_state(s, SESSION_AWAITING);
        if (s->sink->input_request)
                s->sink->input_request(s->sink->arg, s, (uint64_t)s->inputs[0].id, s->inputs[0].prompt);
}

static void ask_input_deferred(struct evloop *loop, void *arg)
{
        (void)loop;
        ask_input(arg);
}

int broker_input_wait(struct broker *b, int64_t id, const char *prompt, struct err **err)
{
        struct session *s = b->s;
        if (s->ninputs == s->inputs_cap) {
                size_t cap = s->inputs_cap ? 2 * s->inputs_cap : 4;
                struct input_wait *ni = realloc(s->inputs, cap * sizeof(*ni));
                if (!ni)
                        return err_set(err, ENOMEM, "input");
                s->inputs = ni;
                s->inputs_cap = cap;
        }
        char *p = strdup(prompt);
        if (!p)
                return err_set(err, ENOMEM, "input");
        s->inputs[s->ninputs++] = (struct input_wait){ .id = id, .prompt = p };
        return evloop_defer(s->loop, ask_input_deferred, s, err);
}

/* Take the oldest input call: its id, and the next one is asked. */
static int take_input(struct session *s, int64_t *ret_id, struct err **err)
{
        if (!s->input_asked || !s->ninputs)
                return err_set(err, 0, "no input is waiting");
        *ret_id = s->inputs[0].id;
        free(s->inputs[0].prompt);
        memmove(&s->inputs[0], &s->inputs[1], (s->ninputs - 1) * sizeof(s->inputs[0]));
        s->ninputs--;
        s->input_asked = false;
        if (!s->asking && s->state == SESSION_AWAITING)
                session_set_state(s, SESSION_RUNNING);
        return evloop_defer(s->loop, ask_input_deferred, s, err);
}

int session_input(struct session *s, const char *json, size_t len, struct err **err)
{
        struct json_error je;
        if (json_validate(json, len, NULL, &je, NULL) < 0)
                return err_set(err, 0, "input: not JSON: %s at byte %zu", je.what, je.offset);
        cJSON *v = json_cjson_raw((struct json_span){ json, len });
        if (!v)
                return err_set(err, ENOMEM, "input");
        int64_t id;
        if (take_input(s, &id, err) < 0) {
                cJSON_Delete(v);
                return -1;
        }
        broker_complete(&s->b, id, v, NULL);
        return 0;
}

int session_input_fail(struct session *s, const char *message, struct err **err)
{
        int64_t id;
        if (take_input(s, &id, err) < 0)
                return -1;
        broker_complete(&s->b, id, NULL, broker_error_obj("Error", message, NULL));
        return 0;
}

/* call.cancel of a call waiting for a person: it leaves the list (the one
 * being asked is no longer asked; the sink hears "cancelled" for it) and is
 * answered with `error` (owned).  1 withdrawn, 0 not waiting here, -1 fail. */
int session_withdraw(struct session *s, int64_t id, cJSON *error, struct err **err)
{
        for (size_t i = 0; i < s->nparked; i++) {
                if (s->parked[i].id != id || s->parked[i].decided)
                        continue;
                struct parked_call p = s->parked[i];
                memmove(&s->parked[i], &s->parked[i + 1], (s->nparked - i - 1) * sizeof(s->parked[0]));
                s->nparked--;
                if (s->asking && s->asked_id == id) {
                        s->asking = false;
                        if (evloop_defer(s->loop, resolve, s, err) < 0) {
                                parked_clear(&p);
                                cJSON_Delete(error);
                                return -1;
                        }
                }
                if (s->sink->call)
                        s->sink->call(s->sink->arg, s, id, p.op, "cancelled");
                int r = session_answer(s, id, p.op, p.args_text, NULL, error, err);
                parked_clear(&p);
                return r < 0 ? -1 : 1;
        }
        for (size_t i = 0; i < s->ninputs; i++) {
                if (s->inputs[i].id != id)
                        continue;
                free(s->inputs[i].prompt);
                memmove(&s->inputs[i], &s->inputs[i + 1], (s->ninputs - i - 1) * sizeof(s->inputs[0]));
                s->ninputs--;
                if (i == 0 && s->input_asked) {
                        s->input_asked = false;
                        if (!s->asking && s->state == SESSION_AWAITING)
                                session_set_state(s, SESSION_RUNNING);
                        if (evloop_defer(s->loop, ask_input_deferred, s, err) < 0) {
                                cJSON_Delete(error);
                                return -1;
                        }
                }
                if (s->sink->call)
                        s->sink->call(s->sink->arg, s, id, "input", "cancelled");
                broker_complete(&s->b, id, NULL, error);
                return 1;
        }
        cJSON_Delete(error);
        return 0;
}

void session_pending_free(struct session *s)
{
        for (size_t i = 0; i < s->nparked; i++)
                parked_clear(&s->parked[i]);
        free(s->parked);
        for (size_t i = 0; i < s->nmemo; i++) {
                free(s->memo[i].target);
                free(s->memo[i].args);
        }
        free(s->memo);
        for (size_t i = 0; i < s->ninputs; i++)
                free(s->inputs[i].prompt);
        free(s->inputs);
        evloop_defer_cancel(s->loop, resolve, s);
        evloop_defer_cancel(s->loop, ask_input_deferred, s);
}
