/* runtime/replay.c — answering calls from a journal: REPLAY (every call,
 * nothing performed) and RESUME (the journal's calls, then live; a call the
 * journal started and never answered is answered "interrupted by server
 * restart" and not performed again).  The worker must ask for the same
 * calls with the same args, in any order; answers go in the recorded order. */
#define _GNU_SOURCE
#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>

#include "proto/json.h"
#include "runtime/journal.h"
#include "runtime/session-internal.h"

/* The error of a call that was in flight when the journal's writer died. */
#define INTERRUPTED_MESSAGE "interrupted by server restart"

/* How much of s[0..len) to show in at most max bytes, not cutting a UTF-8
 * character. */
static int shown(const char *s, size_t len, size_t max)
{
        if (len <= max)
                return (int)len;
        while (max > 0 && ((unsigned char)s[max] & 0xc0) == 0x80)
                max--;
        return (int)max;
}

/* "op {args}", the args cut to what a message can show. */
static void describe(const char *op, const char *args, char *buf, size_t len)
{
        size_t n = strlen(args);
        snprintf(buf, len, "%s %.*s%s", op, shown(args, n, 300), args, n > 300 ? "..." : "");
}

/* " (args.key: the journal has "k1", the agent sent "k2")". */
static void what_differs(const char *want, const char *got, char *buf, size_t len)
{
        char path[160];
        struct json_span a, g;
        buf[0] = '\0';
        if (json_diff((struct json_span){ want, strlen(want) }, (struct json_span){ got, strlen(got) }, "args", path,
                      sizeof(path), &a, &g) != 1)
                return;
        snprintf(buf, len, " (%s: the journal has %.*s%s, the agent sent %.*s%s)", path,
                 a.p ? shown(a.p, a.len, 100) : 7, a.p ? a.p : "nothing", a.len > 100 ? "..." : "",
                 g.p ? shown(g.p, g.len, 100) : 7, g.p ? g.p : "nothing", g.len > 100 ? "..." : "");
}

/* Journals written before values were carried exactly (no "values":
 * "exact" in the header) hold args that cJSON printed again: numbers with
 * 15 significant digits, strings cut at a NUL.  They are compared as the
 * recording compared them then: both parsed, numbers within cJSON's
 * epsilon. */
static bool legacy_args_equal(const char *want, const char *got)
{
        cJSON *w = json_to_cjson((struct json_span){ want, strlen(want) }, NULL, false);
        cJSON *g = json_to_cjson((struct json_span){ got, strlen(got) }, NULL, false);
        bool eq = w && g && cJSON_Compare(w, g, true);
        cJSON_Delete(w);
        cJSON_Delete(g);
        return eq;
}

static bool replay_is_exact(const struct session_replay *src)
{
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(src->ops->header(src->r), "values");
        return cJSON_IsString(v) && strcmp(v->valuestring, "exact") == 0;
}

int session_replay_pump(struct session *s, struct err **err)
{
        struct broker *b = &s->b;
        const struct session_replay *src = &b->cfg->replay;
        struct replay_entry *e;
        while ((e = src->ops->by_seq(src->r, b->replay_next)) && e->called && !e->delivered) {
                cJSON *line = NULL;
                if (src->ops->entry_line(src->r, e, &line, err) < 0)
                        return -1;
                if (e->interrupted) {
                        /* Started, never answered: not performed again. */
                        const cJSON *args = cJSON_GetObjectItemCaseSensitive(line, "args");
                        e->delivered = true;
                        b->replay_next++;
                        int rc = session_answer(s, e->id, e->op, cJSON_IsRaw(args) ? args->valuestring : "{}", NULL,
                                                broker_error_obj("Error", INTERRUPTED_MESSAGE, "EINTERRUPTED"), err);
                        cJSON_Delete(line);
                        if (rc < 0)
                                return -1;
                        continue;
                }
                /* value, error and args are raw nodes: the recorded text. */
                const cJSON *ok = cJSON_GetObjectItemCaseSensitive(line, "ok");
                cJSON *v = cJSON_DetachItemFromObjectCaseSensitive(line, "value");
                cJSON *er = cJSON_DetachItemFromObjectCaseSensitive(line, "error");
                cJSON *value = NULL, *error = NULL;
                if (cJSON_IsTrue(ok))
                        value = v ? v : cJSON_CreateNull(), v = NULL;
                else
                        error = er ? er : broker_error_obj("Error", "recorded failure", NULL), er = NULL;
                cJSON_Delete(v);
                cJSON_Delete(er);
                const cJSON *args = cJSON_GetObjectItemCaseSensitive(line, "args");
                e->delivered = true;
                b->replay_next++;
                /* RESUME continues the journal it reads: its answers are in
                 * it already (a REPLAY records them again, if asked to). */
                s->answer_recorded = b->cfg->mode == SESSION_RESUME;
                int rc = session_answer(s, e->id, e->op, cJSON_IsRaw(args) ? args->valuestring : "{}", value, error, err);
                s->answer_recorded = false;
                cJSON_Delete(line);
                if (rc < 0)
                        return -1;
        }
        return 0;
}

/* Did the recorded run stop from outside, so that its journal ends where
 * the agent was cut off (its worker killed, or its writer: no end line)?
 * Then what the agent does past the journal's calls was never recorded:
 * the replay ends there, saying so, instead of calling it a divergence or
 * waiting for ever on a call that was in flight.  NULL: it did not. */
static const char *stopped_from_outside(const struct session_replay *src, char *buf, size_t len)
{
        if (!src->ops->end)
                return NULL;
        const cJSON *end = src->ops->end(src->r);
        if (!end)
                return "the journal has no end line (its writer was stopped before it could write one)";
        const cJSON *outcome = cJSON_GetObjectItemCaseSensitive(end, "outcome");
        const cJSON *code = cJSON_GetObjectItemCaseSensitive(end, "exit");
        if (!cJSON_IsString(outcome))
                return NULL;
        if (strcmp(outcome->valuestring, "worker_exited") == 0) {
                snprintf(buf, len, "its worker went away (exit %d)", cJSON_IsNumber(code) ? code->valueint : -1);
                return buf;
        }
        /* Ended by the parent, not by the agent (its journal's disk full, a
         * deadline, a limit, an interrupt): the journal stops where it did. */
        static const char *const outside[] = { "protocol_error", "deadline", "limit", "interrupted", "cpu_limit" };
        for (size_t i = 0; i < sizeof(outside) / sizeof(outside[0]); i++) {
                if (strcmp(outcome->valuestring, outside[i]) != 0)
                        continue;
                const cJSON *msg = cJSON_GetObjectItemCaseSensitive(end, "message");
                snprintf(buf, len, "it ended with %s: %.300s", outside[i],
                         cJSON_IsString(msg) ? msg->valuestring : "(no message)");
                return buf;
        }
        return NULL;
}

static bool all_called(const struct session_replay *src)
{
        struct replay_entry *e;
        for (size_t i = 0; (e = src->ops->by_seq(src->r, i)); i++)
                if (!e->called)
                        return false;
        return true;
}

/* 1: the call is the journal's (answered from it, or diverged); 0: it is
 * not (RESUME: past the journal, performed live); -1: failure. */
int session_replay_call(struct session *s, int64_t id, const char *op, const char *args, struct err **err)
{
        struct broker *b = &s->b;
        const struct session_replay *src = &b->cfg->replay;
        struct replay_entry *e = src->ops->by_id(src->r, id);
        /* RESUME: a call the journal does not have (never asked, or parked
         * for an approval when the worker stopped) is performed live. */
        if ((!e || e->unanswered) && b->cfg->mode == SESSION_RESUME)
                return 0;
        char why[400];
        const char *stopped = b->cfg->mode == SESSION_REPLAY ? stopped_from_outside(src, why, sizeof(why)) : NULL;
        if (!e && stopped) {
                broker_end_with(b, SESSION_END_DIVERGED,
                                "replay reached the end of the journal at call %lld (%s): the recorded run stopped "
                                "there; %s", (long long)id, op, stopped);
                return 1;
        }
        if (!e) {
                broker_end_with(b, SESSION_END_DIVERGED,
                                "replay diverged at call %lld: expected <end of journal>, got %s", (long long)id, op);
                return 1;
        }
        if (strcmp(e->op, op) != 0) {
                broker_end_with(b, SESSION_END_DIVERGED, "replay diverged at call %lld: expected %s, got %s",
                                (long long)id, e->op, op);
                return 1;
        }
        cJSON *line = NULL;
        if (src->ops->entry_line(src->r, e, &line, err) < 0)
                return -1;
        /* The args as text: what the worker sends now against what it sent
         * then (both compact). */
        const cJSON *wj = cJSON_GetObjectItemCaseSensitive(line, "args");
        const char *want = cJSON_IsRaw(wj) ? wj->valuestring : "{}";
        if (strcmp(want, args) != 0 && (replay_is_exact(src) || !legacy_args_equal(want, args))) {
                char w[400], g[400], d[400];
                describe(e->op, want, w, sizeof(w));
                describe(op, args, g, sizeof(g));
                what_differs(want, args, d, sizeof(d));
                cJSON_Delete(line);
                broker_end_with(b, SESSION_END_DIVERGED, "replay diverged at call %lld: expected %s, got %s%s",
                                (long long)id, w, g, d);
                return 1;
        }
        cJSON_Delete(line);
        e->called = true;
        if (s->sink->call)
                s->sink->call(s->sink->arg, s, id, op, "replayed");
        /* Pending when the recorded run ended: never answered.  When that
         * run was stopped from outside and nothing else is left to replay,
         * this is where it stopped. */
        if (e->unanswered) {
                if (stopped && all_called(src))
                        broker_end_with(b, SESSION_END_DIVERGED,
                                        "replay reached the end of the journal at call %lld (%s), in flight when the "
                                        "recorded run stopped; %s", (long long)id, op, stopped);
                return 1;
        }
        return session_replay_pump(s, err) < 0 ? -1 : 1;
}

