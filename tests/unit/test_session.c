/* tests/unit/test_session.c — the session engine (runtime/session.h)
 * driven by a scripted fake worker on a socketpair, through a fake box
 * provider: what the end-to-end suites cannot show (async ordering, parked
 * calls and approvals, replay divergence, RESUME, protocol errors, two
 * sessions on one loop). */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "common/err.h"
#include "common/exit.h"
#include "common/util.h"
#include "effects/effects.h"
#include "policy/policy.h"
#include "proto/proto.h"
#include "runtime/evloop.h"
#include "runtime/journal.h"
#include "runtime/outcome.h"
#include "runtime/runtime-internal.h"
#include "runtime/session.h"
#include "runtime/session-internal.h"

/* ---- the fake provider: a socketpair, the test holds the worker's end ---- */

struct fake_box {
        int worker_fd;            /* the test's end */
        struct box_events ev;
        bool finished, killed;
        int spawns;
        bool fail_spawn;
};

static int fake_spawn(void *arg, struct evloop *loop, const struct box_request *req, const struct box_events *ev,
                      void **ret_handle, struct err **err)
{
        (void)loop, (void)req;
        struct fake_box *f = arg;
        f->spawns++;
        f->ev = *ev;
        if (f->fail_spawn) {
                struct err *e = NULL;
                err_set(&e, 0, "no box today");
                ev->failed(ev->arg, e, false);
                err_free(e);
                *ret_handle = NULL;
                return 0;
        }
        int sv[2];
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
                return err_set(err, errno, "socketpair");
        f->worker_fd = sv[1];
        *ret_handle = f;
        ev->started(ev->arg, &(struct box_started){ .frame_fd = sv[0], .stderr_fd = -1, .banner = "fake" });
        return 0;
}

static void fake_finish(void *arg, void *handle, bool kill_first)
{
        struct fake_box *f = arg;
        assert_ptr_equal(handle, f);
        f->finished = true;
        f->killed = kill_first;
        /* The worker's end stays open: what was sent before is still read
         * by the test (t_free closes it). */
        f->ev.ended(f->ev.arg, &(struct box_ended){ .reason = kill_first ? BOX_KILLED : BOX_EXITED });
}

/* ---- the test sink ---- */

struct rec {
        uint64_t approvals[16];
        char approval_args[16][128];
        int napprovals;
        uint64_t inputs[8];
        int ninputs;
        char decisions[256];      /* "1:pending 2:allow ..." */
        bool ended;
        int notes;
};

static void rec_approval(void *arg, struct session *s, const struct session_approval *a)
{
        (void)s;
        struct rec *r = arg;
        snprintf(r->approval_args[r->napprovals], sizeof(r->approval_args[0]), "%s %s", a->target, a->args);
        r->approvals[r->napprovals++] = a->id;
}

static void rec_input(void *arg, struct session *s, uint64_t id, const char *prompt)
{
        (void)s, (void)prompt;
        struct rec *r = arg;
        r->inputs[r->ninputs++] = id;
}

static void rec_call(void *arg, struct session *s, int64_t id, const char *op, const char *decision)
{
        (void)s, (void)op;
        struct rec *r = arg;
        size_t n = strlen(r->decisions);
        snprintf(r->decisions + n, sizeof(r->decisions) - n, "%s%lld:%s", n ? " " : "", (long long)id, decision);
}

static void rec_note(void *arg, struct session *s, const char *tag, const char *msg, size_t len)
{
        (void)s, (void)tag, (void)msg, (void)len;
        ((struct rec *)arg)->notes++;
}

static void rec_ended(void *arg, struct session *s)
{
        (void)s;
        ((struct rec *)arg)->ended = true;
}

/* ---- one session under test ---- */

struct t {
        struct evloop *loop;
        struct session *s;
        struct session_config cfg;
        struct session_sink sink;
        struct box_provider prov;
        struct fake_box box;
        struct rec rec;
        struct policy *policy;
};

static void t_init(struct t *t, struct evloop *loop, const char *policy_json)
{
        memset(t, 0, sizeof(*t));
        t->loop = loop;
        t->box.worker_fd = -1;
        struct err *e = NULL;
        if (policy_json)
                assert_int_equal(policy_parse(policy_json, strlen(policy_json), NULL, &t->policy, &e), 0);
        t->cfg = (struct session_config){
                .script = "", .filename = "agent.js", .run_id = "run-test", .policy = t->policy,
                .can_approve = true, .can_input = true, .effects = &effects_table,
        };
        t->sink = (struct session_sink){ .approval = rec_approval, .input_request = rec_input, .call = rec_call,
                                         .note = rec_note, .ended = rec_ended, .arg = &t->rec };
        t->prov = (struct box_provider){ .spawn = fake_spawn, .finish = fake_finish, .arg = &t->box };
}

static void t_start(struct t *t)
{
        struct err *e = NULL;
        assert_int_equal(session_new(t->loop, &t->cfg, &t->sink, &t->prov, &t->s, &e), 0);
        assert_int_equal(session_start(t->s, &e), 0);
}

static void t_free(struct t *t)
{
        session_free(t->s);
        policy_free(t->policy);
        if (t->box.worker_fd >= 0)
                close(t->box.worker_fd);
}

static void pump(struct evloop *loop, int ms)
{
        struct err *e = NULL;
        assert_int_equal(evloop_run_once(loop, ms, &e), 0);
}

/* The worker writes a frame (JSON text). */
static void w_send(struct t *t, const char *json)
{
        struct err *e = NULL;
        assert_int_equal(frame_write_raw(t->box.worker_fd, json, strlen(json), &e), 0);
}

/* The worker reads the next frame, running the loop until one comes. */
static cJSON *w_recv(struct t *t)
{
        double until = mono_ms() + 5000;
        while (mono_ms() < until) {
                struct pollfd p = { .fd = t->box.worker_fd, .events = POLLIN };
                if (poll(&p, 1, 0) == 1) {
                        char *body = NULL;
                        size_t len = 0;
                        struct err *e = NULL;
                        assert_int_equal(frame_read_raw(t->box.worker_fd, &body, &len, &e), 0);
                        cJSON *j = cJSON_ParseWithLength(body, len);
                        free(body);
                        assert_non_null(j);
                        return j;
                }
                pump(t->loop, 10);
        }
        fail_msg("no frame from the session within 5 s");
        return NULL;
}

/* The next result frame: its id; *ret_ok, and the error's message. */
static int64_t w_result(struct t *t, bool *ret_ok, char *msg, size_t len)
{
        cJSON *j = w_recv(t);
        assert_string_equal(cJSON_GetObjectItem(j, "type")->valuestring, "result");
        int64_t id = (int64_t)cJSON_GetObjectItem(j, "id")->valuedouble;
        *ret_ok = cJSON_IsTrue(cJSON_GetObjectItem(j, "ok"));
        const cJSON *m = cJSON_GetObjectItem(cJSON_GetObjectItem(j, "error"), "message");
        if (msg)
                snprintf(msg, len, "%s", cJSON_IsString(m) ? m->valuestring : "");
        cJSON_Delete(j);
        return id;
}

static void w_ready(struct t *t)
{
        w_send(t, "{\"type\":\"ready\",\"protocol\":1}");
        cJSON *init = w_recv(t);
        assert_string_equal(cJSON_GetObjectItem(init, "type")->valuestring, "init");
        cJSON_Delete(init);
}

static void run_until_ended(struct t *t)
{
        double until = mono_ms() + 5000;
        while (session_state(t->s) != SESSION_ENDED && mono_ms() < until)
                pump(t->loop, 10);
        assert_int_equal(session_state(t->s), SESSION_ENDED);
        assert_true(t->rec.ended);
}

static void run_idle(struct evloop *loop)
{
        for (int i = 0; i < 5; i++)
                pump(loop, 0);
}

static const char ask_ws[] = "{\"rules\":[{\"target\":\"workspace:write\",\"decision\":\"ask_before\"}],"
                             "\"default\":\"always_allow\"}";

/* Results go out in completion order: a parked call does not hold up the
 * calls after it, and the journal's seq follows the answers. */
static void async_ordering(void **state)
{
        (void)state;
        char dir[] = "/tmp/chidori-test-session.XXXXXX";
        assert_non_null(mkdtemp(dir));
        char path[128];
        snprintf(path, sizeof(path), "%s/j.jsonl", dir);
        struct journal *jf = NULL;
        struct err *e = NULL;
        assert_int_equal(journal_open(path, &jf, &e), 0);
        journal_set_intents(jf, true);
        struct evloop *loop = NULL;
        assert_int_equal(evloop_new(&loop, &e), 0);
        struct t t;
        t_init(&t, loop, ask_ws);
        t.cfg.journal = (struct session_journal){ &journal_file_ops, jf };
        t_start(&t);
        w_ready(&t);
        w_send(&t, "{\"type\":\"call\",\"id\":1,\"op\":\"workspace.write\",\"args\":{\"path\":\"a\",\"data_base64\":\"eA==\"}}");
        w_send(&t, "{\"type\":\"call\",\"id\":2,\"op\":\"clock.now\",\"args\":{}}");
        bool ok;
        assert_int_equal(w_result(&t, &ok, NULL, 0), 2);
        assert_true(ok);
        run_idle(loop);
        assert_int_equal(t.rec.napprovals, 1);
        assert_int_equal(t.rec.approvals[0], 1);
        assert_int_equal(session_state(t.s), SESSION_AWAITING);
        assert_int_equal(session_approve(t.s, 1, true, "by test", &e), 0);
        char msg[256];
        assert_int_equal(w_result(&t, &ok, msg, sizeof(msg)), 1);
        /* Performed (the workspace says it has none), not refused. */
        assert_false(ok);
        assert_non_null(strstr(msg, "no workspace configured"));
        assert_string_equal(t.rec.decisions, "1:pending 2:allow");
        w_send(&t, "{\"type\":\"done\",\"ok\":true,\"value\":7}");
        run_until_ended(&t);
        assert_int_equal(session_outcome(t.s)->end, SESSION_END_DONE_OK);
        assert_false(t.box.killed);
        t_free(&t);
        evloop_free(loop);
        journal_close(jf);
        /* seq 1 is call 2, seq 2 is call 1; call 1's intent came before it
         * was performed, and after the approval note. */
        char *text = NULL;
        size_t len = 0;
        assert_int_equal(read_file(path, 1 << 20, &text, &len, &e), 0);
        const char *c2 = strstr(text, "\"seq\":1,\"id\":2");
        const char *c1 = strstr(text, "\"seq\":2,\"id\":1");
        const char *appr = strstr(text, "approved by test");
        const char *start = strstr(text, "{\"type\":\"start\",\"id\":1,\"op\":\"workspace.write\"");
        assert_non_null(c2);
        assert_non_null(c1);
        assert_non_null(appr);
        assert_non_null(start);
        assert_true(c2 < appr && appr < start && start < c1);
        assert_null(strstr(text, "\"type\":\"start\",\"id\":2")); /* clock.now is pure: no intent */
        free(text);
        unlink(path);
        rmdir(dir);
}

/* Parked calls are asked one at a time, lowest id first; a decision is
 * remembered per (target, args) and covers the same call parked meanwhile. */
static void pending_one_at_a_time(void **state)
{
        (void)state;
        struct evloop *loop = NULL;
        struct err *e = NULL;
        assert_int_equal(evloop_new(&loop, &e), 0);
        struct t t;
        t_init(&t, loop, ask_ws);
        t_start(&t);
        w_ready(&t);
        w_send(&t, "{\"type\":\"call\",\"id\":1,\"op\":\"workspace.write\",\"args\":{\"path\":\"b\",\"data_base64\":\"eA==\"}}");
        w_send(&t, "{\"type\":\"call\",\"id\":2,\"op\":\"workspace.write\",\"args\":{\"path\":\"a\",\"data_base64\":\"eA==\"}}");
        w_send(&t, "{\"type\":\"call\",\"id\":3,\"op\":\"workspace.write\",\"args\":{\"path\":\"b\",\"data_base64\":\"eA==\"}}");
        for (int i = 0; i < 20; i++)
                pump(loop, 5);
        assert_int_equal(t.rec.napprovals, 1); /* one at a time */
        assert_int_equal(t.rec.approvals[0], 1);
        assert_string_equal(t.rec.approval_args[0], "workspace:write {\"path\":\"b\",\"data_base64\":\"eA==\"}");
        /* Only the approval waiting can be answered. */
        assert_int_equal(session_approve(t.s, 2, true, "x", &e), -1);
        err_free(e);
        e = NULL;
        assert_int_equal(session_approve(t.s, 1, false, "x", &e), 0);
        bool ok;
        char msg[256];
        int64_t first = w_result(&t, &ok, msg, sizeof(msg));
        assert_false(ok);
        assert_non_null(strstr(msg, "workspace:write"));
        int64_t second = w_result(&t, &ok, msg, sizeof(msg));
        assert_false(ok);
        /* Calls 1 and 3 (the same target and args) are refused together. */
        assert_true((first == 1 && second == 3) || (first == 3 && second == 1));
        run_idle(loop);
        assert_int_equal(t.rec.napprovals, 2);
        assert_int_equal(t.rec.approvals[1], 2);
        assert_int_equal(session_approve(t.s, 2, true, "x", &e), 0);
        assert_int_equal(w_result(&t, &ok, msg, sizeof(msg)), 2);
        assert_non_null(strstr(msg, "no workspace configured"));
        /* The refusal is remembered: the same call again is refused unasked. */
        w_send(&t, "{\"type\":\"call\",\"id\":4,\"op\":\"workspace.write\",\"args\":{\"path\":\"b\",\"data_base64\":\"eA==\"}}");
        assert_int_equal(w_result(&t, &ok, msg, sizeof(msg)), 4);
        assert_false(ok);
        assert_non_null(strstr(msg, "workspace:write"));
        assert_int_equal(t.rec.napprovals, 2);
        w_send(&t, "{\"type\":\"done\",\"ok\":true,\"value\":null}");
        run_until_ended(&t);
        assert_int_equal(session_outcome(t.s)->end, SESSION_END_DONE_OK);
        t_free(&t);
        evloop_free(loop);
}

/* call.cancel withdraws a parked call (the one being asked: the next is
 * asked), an input wait and a timer: each is answered AbortError at once,
 * the sink hears "cancelled", and a finished or unknown id is a no-op. */
static void cancel_withdraws(void **state)
{
        (void)state;
        struct evloop *loop = NULL;
        struct err *e = NULL;
        assert_int_equal(evloop_new(&loop, &e), 0);
        struct t t;
        t_init(&t, loop, ask_ws);
        t_start(&t);
        w_ready(&t);
        w_send(&t, "{\"type\":\"call\",\"id\":1,\"op\":\"workspace.write\",\"args\":{\"path\":\"a\",\"data_base64\":\"eA==\"}}");
        w_send(&t, "{\"type\":\"call\",\"id\":2,\"op\":\"workspace.write\",\"args\":{\"path\":\"b\",\"data_base64\":\"eA==\"}}");
        w_send(&t, "{\"type\":\"call\",\"id\":3,\"op\":\"input\",\"args\":{\"prompt\":\"name?\"}}");
        w_send(&t, "{\"type\":\"call\",\"id\":4,\"op\":\"timer.wait\",\"args\":{\"ms\":60000}}");
        for (int i = 0; i < 20; i++)
                pump(loop, 5);
        assert_int_equal(t.rec.napprovals, 1);
        assert_int_equal(t.rec.approvals[0], 1);
        assert_int_equal(t.rec.ninputs, 1);
        bool ok;
        char msg[256];
        /* The approval being asked, withdrawn: AbortError, then the cancel's own answer. */
        w_send(&t, "{\"type\":\"call\",\"id\":5,\"op\":\"call.cancel\",\"args\":{\"id\":1}}");
        assert_int_equal(w_result(&t, &ok, msg, sizeof(msg)), 1);
        assert_false(ok);
        assert_string_equal(msg, "This operation was aborted");
        assert_int_equal(w_result(&t, &ok, msg, sizeof(msg)), 5);
        assert_true(ok);
        run_idle(loop);
        assert_int_equal(t.rec.napprovals, 2); /* the next parked call is asked now */
        assert_int_equal(t.rec.approvals[1], 2);
        assert_int_equal(session_approve(t.s, 1, true, "x", &e), -1); /* no longer waiting */
        err_free(e);
        e = NULL;
        /* The input wait and the timer. */
        w_send(&t, "{\"type\":\"call\",\"id\":6,\"op\":\"call.cancel\",\"args\":{\"id\":3}}");
        assert_int_equal(w_result(&t, &ok, msg, sizeof(msg)), 3);
        assert_false(ok);
        assert_int_equal(w_result(&t, &ok, msg, sizeof(msg)), 6);
        w_send(&t, "{\"type\":\"call\",\"id\":7,\"op\":\"call.cancel\",\"args\":{\"id\":4}}");
        assert_int_equal(w_result(&t, &ok, msg, sizeof(msg)), 4);
        assert_false(ok);
        assert_int_equal(w_result(&t, &ok, msg, sizeof(msg)), 7);
        /* A finished id: a no-op answered false. */
        w_send(&t, "{\"type\":\"call\",\"id\":8,\"op\":\"call.cancel\",\"args\":{\"id\":4}}");
        cJSON *j = w_recv(&t);
        assert_int_equal((int64_t)cJSON_GetObjectItem(j, "id")->valuedouble, 8);
        assert_true(cJSON_IsFalse(cJSON_GetObjectItem(j, "value")));
        cJSON_Delete(j);
        assert_non_null(strstr(t.rec.decisions, "1:cancelled"));
        assert_non_null(strstr(t.rec.decisions, "3:cancelled"));
        assert_non_null(strstr(t.rec.decisions, "4:cancelled"));
        w_send(&t, "{\"type\":\"done\",\"ok\":true,\"value\":null}");
        run_until_ended(&t);
        assert_int_equal(session_outcome(t.s)->end, SESSION_END_DONE_OK);
        t_free(&t);
        evloop_free(loop);
}

/* chidori.input without --answers: the sink is asked; session_input answers. */
static void input_from_the_sink(void **state)
{
        (void)state;
        struct evloop *loop = NULL;
        struct err *e = NULL;
        assert_int_equal(evloop_new(&loop, &e), 0);
        struct t t;
        t_init(&t, loop, NULL);
        t_start(&t);
        w_ready(&t);
        w_send(&t, "{\"type\":\"call\",\"id\":1,\"op\":\"input\",\"args\":{\"prompt\":\"name?\"}}");
        run_idle(loop);
        assert_int_equal(t.rec.ninputs, 1);
        assert_int_equal(session_input(t.s, "\"Ada\"", 5, &e), 0);
        cJSON *j = w_recv(&t);
        assert_string_equal(cJSON_GetObjectItem(j, "value")->valuestring, "Ada");
        cJSON_Delete(j);
        assert_int_equal(session_input(t.s, "1", 1, &e), -1); /* none waiting */
        err_free(e);
        session_cancel(t.s, "stopped by test");
        run_until_ended(&t);
        assert_int_equal(session_outcome(t.s)->end, SESSION_END_INTERRUPTED);
        assert_true(t.box.killed);
        t_free(&t);
        evloop_free(loop);
}

struct proto_case {
        const char *frames[3];
        const char *message;
};

/* A worker that breaks the protocol ends the run with the message that
 * says how, exit 70, and its box killed. */
static void protocol_errors(void **state)
{
        (void)state;
        static const struct proto_case cases[] = {
                { { "{\"type\":\"call\",\"id\":1,\"op\":\"clock.now\"}" }, "expected a ready frame first, got call" },
                { { "{\"type\":\"ready\",\"protocol\":1}", "{\"type\":\"call\",\"id\":2,\"op\":\"clock.now\"}" },
                  "call id 2 out of order (expected 1)" },
                { { "{\"type\":\"ready\",\"protocol\":1}", "{\"type\":\"call\",\"id\":1,\"op\":7}" },
                  "call 1 without a string \"op\" (1..128 bytes)" },
                { { "{\"type\":\"ready\",\"protocol\":1}", "{\"type\":\"done\"}" },
                  "done frame without a boolean \"ok\"" },
                { { "not json" }, "" },
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                struct evloop *loop = NULL;
                struct err *e = NULL;
                assert_int_equal(evloop_new(&loop, &e), 0);
                struct t t;
                t_init(&t, loop, NULL);
                t_start(&t);
                for (int k = 0; k < 3 && cases[i].frames[k]; k++)
                        w_send(&t, cases[i].frames[k]);
                run_until_ended(&t);
                struct session_outcome *o = session_outcome(t.s);
                assert_int_equal(o->end, SESSION_END_PROTOCOL);
                if (cases[i].message[0])
                        assert_string_equal(o->message, cases[i].message);
                struct outcome_exit x;
                session_outcome_exit(o, &(struct outcome_context){ 0 }, &x);
                assert_int_equal(x.code, EXIT_PROTOCOL);
                assert_true(t.box.killed);
                t_free(&t);
                evloop_free(loop);
        }
}

/* The init frame comes with the channel, before the worker's ready (one
 * round trip less per run); the broker still requires ready first. */
static void init_before_ready(void **state)
{
        (void)state;
        struct evloop *loop = NULL;
        struct err *e = NULL;
        assert_int_equal(evloop_new(&loop, &e), 0);
        struct t t;
        t_init(&t, loop, NULL);
        t_start(&t);
        cJSON *init = w_recv(&t); /* nothing sent by the worker yet */
        assert_string_equal(cJSON_GetObjectItem(init, "type")->valuestring, "init");
        assert_string_equal(cJSON_GetObjectItem(init, "run_id")->valuestring, "run-test");
        cJSON_Delete(init);
        assert_false(session_outcome(t.s)->got_ready);
        w_send(&t, "{\"type\":\"ready\",\"protocol\":1}");
        w_send(&t, "{\"type\":\"done\",\"ok\":true,\"value\":7}");
        run_until_ended(&t);
        struct session_outcome *o = session_outcome(t.s);
        assert_true(o->got_ready);
        assert_int_equal(o->end, SESSION_END_DONE_OK);
        /* Exactly one init: nothing more was sent after ready. */
        char c;
        ssize_t n = recv(t.box.worker_fd, &c, 1, MSG_DONTWAIT);
        assert_true(n == 0 || (n < 0 && errno == EAGAIN));
        t_free(&t);
        evloop_free(loop);
}

/* The result frame composed without cJSON (runtime/answer.c) is the bytes
 * cJSON prints, over a corpus of scalars: edge numbers, random doubles of
 * every bit pattern, random strings of every byte. */
static void result_text_check(int64_t id, cJSON *v)
{
        cJSON *res = cJSON_CreateObject();
        cJSON_AddStringToObject(res, "type", "result");
        cJSON_AddNumberToObject(res, "id", (double)id);
        cJSON_AddBoolToObject(res, "ok", true);
        cJSON_AddItemToObject(res, "value", v);
        char *want = cJSON_PrintUnformatted(res);
        char *got = NULL;
        size_t len = 0;
        assert_int_equal(session_result_text(id, v, &got, &len), 1);
        assert_int_equal(len, strlen(got));
        if (strcmp(got, want) != 0)
                fail_msg("result text differs from cJSON's:\n got  %s\n want %s", got, want);
        free(got);
        free(want);
        cJSON_Delete(res);
}

static uint64_t xs_state = 0x9e3779b97f4a7c15ull;
static uint64_t xs(void)
{
        xs_state ^= xs_state << 13;
        xs_state ^= xs_state >> 7;
        xs_state ^= xs_state << 17;
        return xs_state;
}

static void result_text_matches_cjson(void **state)
{
        (void)state;
        static const double nums[] = { 0.0, -0.0, 1, -1, 0.1, -0.1, 1.0 / 3, 2.5, 1e15, 1e16, 1e17, 1e21, 1e-7,
                                       123456789012345678.0, 9007199254740992.0, 9007199254740993.0, 2147483647.0,
                                       2147483648.0, -2147483648.0, -2147483649.0, 4294967296.5, 1.7976931348623157e308,
                                       -1.7976931348623157e308, 5e-324, 2.2250738585072014e-308, 0.30000000000000004,
                                       1e300 * 1e300, -1e300 * 1e300, 0.5, 100, 1e-5, 123.456, 3.14159265358979 };
        static const int64_t ids[] = { 1, 2, 1000, 2147483647, 2147483648LL, 9007199254740991LL };
        for (size_t k = 0; k < sizeof(ids) / sizeof(ids[0]); k++) {
                result_text_check(ids[k], cJSON_CreateNull());
                result_text_check(ids[k], cJSON_CreateTrue());
                result_text_check(ids[k], cJSON_CreateFalse());
                result_text_check(ids[k], cJSON_CreateNumber(ids[k]));
        }
        for (size_t k = 0; k < sizeof(nums) / sizeof(nums[0]); k++)
                result_text_check(7, cJSON_CreateNumber(nums[k]));
        result_text_check(7, cJSON_CreateNumber(NAN));
        for (int k = 0; k < 20000; k++) {
                uint64_t bits = xs();
                double d;
                memcpy(&d, &bits, sizeof(d));
                result_text_check(k + 1, cJSON_CreateNumber(d));
                /* and numbers of a more usual shape: integers, cents, ratios */
                result_text_check(k + 1, cJSON_CreateNumber((double)(int64_t)(xs() >> (xs() % 64))));
                result_text_check(k + 1, cJSON_CreateNumber((double)(int64_t)(xs() % 2000000) / 100.0 - 10000));
                result_text_check(k + 1, cJSON_CreateNumber((double)(xs() % 1000) / (double)(xs() % 997 + 1)));
        }
        char str[64];
        for (int c = 1; c < 256; c++) {
                str[0] = (char)c, str[1] = 0;
                result_text_check(3, cJSON_CreateString(str));
        }
        result_text_check(3, cJSON_CreateString(""));
        result_text_check(3, cJSON_CreateString("h\xc3\xa9llo \"w\\orld\"\n\t\x01\x7f\xff"));
        for (int k = 0; k < 20000; k++) {
                size_t n = xs() % 60;
                for (size_t i = 0; i < n; i++) {
                        uint64_t r = xs();
                        /* mostly controls, quotes, backslashes and high bytes */
                        str[i] = (char)(r % 4 == 0   ? (int)(r % 32 + 1)
                                        : r % 4 == 1 ? (int)"\"\\/\x7f"[r / 4 % 4]
                                                     : (int)((r >> 8) % 255 + 1));
                }
                str[n] = 0;
                result_text_check(k + 1, cJSON_CreateString(str));
        }
        result_text_check(9, cJSON_CreateRaw("{\"a\":[1,2]}"));
        /* Not a scalar: the tree is built as before. */
        char *t = NULL;
        size_t len = 0;
        cJSON *a = cJSON_CreateArray(), *o = cJSON_CreateObject();
        assert_int_equal(session_result_text(1, a, &t, &len), 0);
        assert_int_equal(session_result_text(1, o, &t, &len), 0);
        assert_null(t);
        cJSON_Delete(a);
        cJSON_Delete(o);
}

static char *write_journal(char *dir, const char *text)
{
        assert_non_null(mkdtemp(dir));
        char *path = NULL;
        assert_true(asprintf(&path, "%s/j.jsonl", dir) > 0);
        FILE *f = fopen(path, "w");
        assert_non_null(f);
        fputs(text, f);
        fclose(f);
        return path;
}

#define HEADER "{\"type\":\"header\",\"chidori\":\"0.1.0\",\"values\":\"exact\",\"input\":null}\n"

/* Replay: a call the journal does not have at that place ends the run. */
static void replay_divergence(void **state)
{
        (void)state;
        char dir[] = "/tmp/chidori-test-session.XXXXXX";
        char *path = write_journal(dir, HEADER "{\"type\":\"call\",\"seq\":1,\"id\":1,\"op\":\"clock.now\",\"args\":{},"
                                               "\"ok\":true,\"value\":5}\n");
        struct replay *r = NULL;
        struct err *e = NULL;
        assert_int_equal(replay_open(path, 0, &r, &e), 0);
        struct evloop *loop = NULL;
        assert_int_equal(evloop_new(&loop, &e), 0);
        struct t t;
        t_init(&t, loop, NULL);
        t.cfg.mode = SESSION_REPLAY;
        t.cfg.replay = (struct session_replay){ &replay_file_ops, r };
        t_start(&t);
        w_ready(&t);
        w_send(&t, "{\"type\":\"call\",\"id\":1,\"op\":\"random.seed\",\"args\":{}}");
        run_until_ended(&t);
        struct session_outcome *o = session_outcome(t.s);
        assert_int_equal(o->end, SESSION_END_DIVERGED);
        assert_string_equal(o->message, "replay diverged at call 1: expected clock.now, got random.seed");
        struct outcome_exit x;
        session_outcome_exit(o, &(struct outcome_context){ 0 }, &x);
        assert_int_equal(x.code, EXIT_AGENT_ERROR);
        t_free(&t);
        evloop_free(loop);
        replay_free(r);
        unlink(path);
        rmdir(dir);
        free(path);
}

/* RESUME: the journal's answers first, then live; a call the journal
 * started and never answered gets "interrupted by server restart" and is
 * not performed (a live workspace.write would say "no workspace"). */
static void resume_then_live(void **state)
{
        (void)state;
        char dir[] = "/tmp/chidori-test-session.XXXXXX";
        char *path = write_journal(
                dir, HEADER "{\"type\":\"call\",\"seq\":1,\"id\":1,\"op\":\"clock.now\",\"args\":{},\"ok\":true,\"value\":5}\n"
                            "{\"type\":\"start\",\"id\":2,\"op\":\"workspace.write\",\"args\":{\"path\":\"a\",\"data_base64\":\"eA==\"}}\n");
        struct replay *r = NULL;
        struct err *e = NULL;
        assert_int_equal(replay_open(path, 0, &r, &e), 0);
        struct evloop *loop = NULL;
        assert_int_equal(evloop_new(&loop, &e), 0);
        struct t t;
        t_init(&t, loop, "{\"rules\":[],\"default\":\"always_allow\"}");
        t.cfg.mode = SESSION_RESUME;
        t.cfg.replay = (struct session_replay){ &replay_file_ops, r };
        t_start(&t);
        w_ready(&t);
        w_send(&t, "{\"type\":\"call\",\"id\":1,\"op\":\"clock.now\",\"args\":{}}");
        cJSON *j = w_recv(&t);
        assert_int_equal(cJSON_GetObjectItem(j, "value")->valueint, 5); /* the recorded value */
        cJSON_Delete(j);
        w_send(&t, "{\"type\":\"call\",\"id\":2,\"op\":\"workspace.write\",\"args\":{\"path\":\"a\",\"data_base64\":\"eA==\"}}");
        bool ok;
        char msg[256];
        assert_int_equal(w_result(&t, &ok, msg, sizeof(msg)), 2);
        assert_false(ok);
        assert_string_equal(msg, "interrupted by server restart");
        w_send(&t, "{\"type\":\"call\",\"id\":3,\"op\":\"clock.now\",\"args\":{}}");
        j = w_recv(&t);
        assert_true(cJSON_GetObjectItem(j, "value")->valuedouble > 1e12); /* live: now, not 5 */
        cJSON_Delete(j);
        w_send(&t, "{\"type\":\"call\",\"id\":4,\"op\":\"workspace.write\",\"args\":{\"path\":\"a\",\"data_base64\":\"eA==\"}}");
        assert_int_equal(w_result(&t, &ok, msg, sizeof(msg)), 4);
        assert_non_null(strstr(msg, "no workspace configured")); /* live: performed */
        assert_string_equal(t.rec.decisions, "1:replayed 2:replayed 3:allow 4:allow");
        w_send(&t, "{\"type\":\"done\",\"ok\":true,\"value\":1}");
        run_until_ended(&t);
        assert_int_equal(session_outcome(t.s)->end, SESSION_END_DONE_OK);
        t_free(&t);
        evloop_free(loop);
        replay_free(r);
        unlink(path);
        rmdir(dir);
        free(path);
}

/* Two sessions on one loop, their calls interleaved: each gets its own. */
static void two_sessions_one_loop(void **state)
{
        (void)state;
        struct evloop *loop = NULL;
        struct err *e = NULL;
        assert_int_equal(evloop_new(&loop, &e), 0);
        struct t a, b;
        t_init(&a, loop, ask_ws);
        t_init(&b, loop, NULL);
        t_start(&a);
        t_start(&b);
        w_ready(&a);
        w_ready(&b);
        w_send(&a, "{\"type\":\"call\",\"id\":1,\"op\":\"workspace.write\",\"args\":{\"path\":\"a\",\"data_base64\":\"eA==\"}}");
        w_send(&b, "{\"type\":\"call\",\"id\":1,\"op\":\"random.bytes\",\"args\":{\"n\":3}}");
        bool ok;
        assert_int_equal(w_result(&b, &ok, NULL, 0), 1);
        assert_true(ok);
        w_send(&b, "{\"type\":\"done\",\"ok\":true,\"value\":\"b\"}");
        run_until_ended(&b);
        /* a is still waiting for its approval, b has ended. */
        assert_int_equal(session_state(a.s), SESSION_AWAITING);
        assert_int_equal(a.rec.napprovals, 1);
        assert_int_equal(b.rec.napprovals, 0);
        assert_int_equal(session_approve(a.s, 1, false, "x", &e), 0);
        char msg[256];
        assert_int_equal(w_result(&a, &ok, msg, sizeof(msg)), 1);
        assert_false(ok);
        w_send(&a, "{\"type\":\"done\",\"ok\":false,\"kind\":\"error\",\"error\":{\"name\":\"Error\",\"message\":\"no\"}}");
        run_until_ended(&a);
        assert_int_equal(session_outcome(a.s)->end, SESSION_END_AGENT_ERROR);
        assert_int_equal(session_outcome(b.s)->end, SESSION_END_DONE_OK);
        t_free(&a);
        t_free(&b);
        evloop_free(loop);
}

/* A box that cannot start ends the session with SPAWN, no event lost. */
static void spawn_failure(void **state)
{
        (void)state;
        struct evloop *loop = NULL;
        struct err *e = NULL;
        assert_int_equal(evloop_new(&loop, &e), 0);
        struct t t;
        t_init(&t, loop, NULL);
        t.box.fail_spawn = true;
        t_start(&t);
        run_until_ended(&t);
        assert_int_equal(session_outcome(t.s)->end, SESSION_END_SPAWN);
        assert_string_equal(session_outcome(t.s)->message, "no box today");
        t_free(&t);
        evloop_free(loop);
}

/* ---- a family of the test's own: "test.slow" answers when the test
 * writes the call's id (one digit) into a pipe; its fd joins the loop
 * through the family hooks, as http's and the tools' do ---- */

static int slow_pipe[2] = { -1, -1 };
static int64_t slow_ids[8];
static size_t slow_n;

static int do_slow(struct broker *b, int64_t id, const cJSON *args, cJSON **ret, struct err **err)
{
        (void)b, (void)args, (void)ret, (void)err;
        slow_ids[slow_n++] = id;
        return 1;
}

static size_t slow_fds(struct broker *b, struct pollfd *fds, size_t max, int *timeout_ms)
{
        (void)b, (void)timeout_ms;
        if (!slow_n)
                return 0;
        if (max >= 1)
                fds[0] = (struct pollfd){ .fd = slow_pipe[0], .events = POLLIN };
        return 1;
}

static int slow_perform(struct broker *b, const struct pollfd *fds, size_t n, struct err **err)
{
        (void)err;
        char c;
        if (!n || !(fds[0].revents & POLLIN) || read(slow_pipe[0], &c, 1) != 1)
                return 0;
        for (size_t i = 0; i < slow_n; i++)
                if (slow_ids[i] == c - '0') {
                        slow_ids[i] = slow_ids[--slow_n];
                        broker_complete(b, c - '0', cJSON_CreateNumber(c - '0'), NULL);
                        break;
                }
        return 0;
}

static const struct effect slow_row = { "test.slow", "test", GATE_NONE, NULL, do_slow, NULL, false };

static const struct effect *slow_find(const char *op)
{
        return strcmp(op, "test.slow") == 0 ? &slow_row : effects_table.find(op);
}

static struct effect_family slow_families[16];
static struct effect_table slow_table;

static void slow_setup(void)
{
        assert_int_equal(pipe(slow_pipe), 0);
        slow_n = 0;
        assert_true(effects_table.nfamilies < 15);
        memcpy(slow_families, effects_table.families, effects_table.nfamilies * sizeof(slow_families[0]));
        slow_families[effects_table.nfamilies] =
                (struct effect_family){ "test", NULL, slow_fds, slow_perform, NULL, NULL };
        slow_table = (struct effect_table){ slow_find, slow_families, effects_table.nfamilies + 1 };
}

static void slow_teardown(void)
{
        close(slow_pipe[0]);
        close(slow_pipe[1]);
}

/* A family's calls complete in the order their effects finish, not the
 * order they were asked; the journal's seq follows the answers. */
static void family_completion_order(void **state)
{
        (void)state;
        slow_setup();
        char dir[] = "/tmp/chidori-test-session.XXXXXX";
        assert_non_null(mkdtemp(dir));
        char path[128];
        snprintf(path, sizeof(path), "%s/j.jsonl", dir);
        struct journal *jf = NULL;
        struct err *e = NULL;
        assert_int_equal(journal_open(path, &jf, &e), 0);
        struct evloop *loop = NULL;
        assert_int_equal(evloop_new(&loop, &e), 0);
        struct t t;
        t_init(&t, loop, NULL);
        t.cfg.effects = &slow_table;
        t.cfg.journal = (struct session_journal){ &journal_file_ops, jf };
        t_start(&t);
        w_ready(&t);
        w_send(&t, "{\"type\":\"call\",\"id\":1,\"op\":\"test.slow\",\"args\":{}}");
        w_send(&t, "{\"type\":\"call\",\"id\":2,\"op\":\"test.slow\",\"args\":{}}");
        w_send(&t, "{\"type\":\"call\",\"id\":3,\"op\":\"clock.now\",\"args\":{}}");
        bool ok;
        assert_int_equal(w_result(&t, &ok, NULL, 0), 3);
        assert_int_equal(write(slow_pipe[1], "2", 1), 1);
        assert_int_equal(w_result(&t, &ok, NULL, 0), 2);
        assert_int_equal(write(slow_pipe[1], "1", 1), 1);
        assert_int_equal(w_result(&t, &ok, NULL, 0), 1);
        w_send(&t, "{\"type\":\"done\",\"ok\":true,\"value\":0}");
        run_until_ended(&t);
        assert_int_equal(session_outcome(t.s)->end, SESSION_END_DONE_OK);
        t_free(&t);
        evloop_free(loop);
        journal_close(jf);
        char *text = NULL;
        size_t len = 0;
        assert_int_equal(read_file(path, 1 << 20, &text, &len, &e), 0);
        const char *a = strstr(text, "\"seq\":1,\"id\":3"), *b = strstr(text, "\"seq\":2,\"id\":2");
        const char *c = strstr(text, "\"seq\":3,\"id\":1");
        assert_true(a && b && c && a < b && b < c);
        free(text);
        unlink(path);
        rmdir(dir);
        slow_teardown();
}

/* session_pause: no further call is read; the effect in flight finishes and
 * is journaled first; then the box is killed and the session ends PAUSED,
 * still naming the approval it waits for.  RESUME over that journal asks
 * the parked call again, replays the finished one, performs the rest live. */
static void pause_then_resume(void **state)
{
        (void)state;
        slow_setup();
        char dir[] = "/tmp/chidori-test-session.XXXXXX";
        assert_non_null(mkdtemp(dir));
        char path[128];
        snprintf(path, sizeof(path), "%s/j.jsonl", dir);
        struct journal *jf = NULL;
        struct err *e = NULL;
        assert_int_equal(journal_open(path, &jf, &e), 0);
        journal_set_intents(jf, true);
        cJSON *h = cJSON_Parse("{\"type\":\"header\",\"values\":\"exact\",\"input\":null}");
        assert_int_equal(journal_file_ops.header(jf, h, &e), 0);
        cJSON_Delete(h);
        struct evloop *loop = NULL;
        assert_int_equal(evloop_new(&loop, &e), 0);
        struct t t;
        t_init(&t, loop, ask_ws);
        t.cfg.effects = &slow_table;
        t.cfg.journal = (struct session_journal){ &journal_file_ops, jf };
        t_start(&t);
        w_ready(&t);
        w_send(&t, "{\"type\":\"call\",\"id\":1,\"op\":\"workspace.write\",\"args\":{\"path\":\"a\",\"data_base64\":\"eA==\"}}");
        w_send(&t, "{\"type\":\"call\",\"id\":2,\"op\":\"test.slow\",\"args\":{}}");
        for (int i = 0; i < 10; i++)
                pump(loop, 5);
        assert_int_equal(t.rec.napprovals, 1);
        assert_int_equal(session_pause(t.s, &e), 0);
        w_send(&t, "{\"type\":\"call\",\"id\":3,\"op\":\"clock.now\",\"args\":{}}");
        for (int i = 0; i < 10; i++)
                pump(loop, 5);
        assert_int_not_equal(session_state(t.s), SESSION_ENDED); /* call 2 is still in flight */
        assert_false(t.box.finished);
        assert_int_equal(write(slow_pipe[1], "2", 1), 1);
        bool ok;
        assert_int_equal(w_result(&t, &ok, NULL, 0), 2); /* delivered before the box goes */
        run_until_ended(&t);
        assert_int_equal(session_outcome(t.s)->end, SESSION_END_PAUSED);
        assert_string_equal(session_outcome(t.s)->message, "paused: an approval is waiting");
        assert_true(t.box.killed);
        assert_non_null(session_pending_approval(t.s));
        assert_int_equal(session_pending_approval(t.s)->id, 1);
        t_free(&t);
        journal_close(jf);
        /* The journal: call 2 only (1 parked, 3 never read). */
        struct replay *r = NULL;
        assert_int_equal(replay_open(path, 0, &r, &e), 0);
        assert_int_equal(replay_count(r), 1);
        assert_int_equal(replay_by_seq(r, 0)->id, 2);
        /* Resume in a fresh box; it continues the journal (here a second
         * file, to see what it adds). */
        char path2[160];
        snprintf(path2, sizeof(path2), "%s/j2.jsonl", dir);
        assert_int_equal(journal_open(path2, &jf, &e), 0);
        t_init(&t, loop, ask_ws);
        t.cfg.effects = &slow_table;
        t.cfg.mode = SESSION_RESUME;
        t.cfg.replay = (struct session_replay){ &replay_file_ops, r };
        t.cfg.journal = (struct session_journal){ &journal_file_ops, jf };
        t_start(&t);
        w_ready(&t);
        w_send(&t, "{\"type\":\"call\",\"id\":1,\"op\":\"workspace.write\",\"args\":{\"path\":\"a\",\"data_base64\":\"eA==\"}}");
        w_send(&t, "{\"type\":\"call\",\"id\":2,\"op\":\"test.slow\",\"args\":{}}");
        cJSON *j = w_recv(&t);
        assert_int_equal(cJSON_GetObjectItem(j, "id")->valueint, 2);
        assert_int_equal(cJSON_GetObjectItem(j, "value")->valueint, 2); /* the journal's answer */
        cJSON_Delete(j);
        assert_int_equal(slow_n, 0); /* not performed again */
        run_idle(loop);
        assert_int_equal(t.rec.napprovals, 1); /* asked again */
        assert_int_equal(session_approve(t.s, 1, true, "x", &e), 0);
        char msg[256];
        assert_int_equal(w_result(&t, &ok, msg, sizeof(msg)), 1);
        assert_non_null(strstr(msg, "no workspace configured"));
        w_send(&t, "{\"type\":\"call\",\"id\":3,\"op\":\"clock.now\",\"args\":{}}");
        assert_int_equal(w_result(&t, &ok, NULL, 0), 3);
        w_send(&t, "{\"type\":\"done\",\"ok\":true,\"value\":0}");
        run_until_ended(&t);
        assert_int_equal(session_outcome(t.s)->end, SESSION_END_DONE_OK);
        t_free(&t);
        evloop_free(loop);
        replay_free(r);
        journal_close(jf);
        /* New lines only: calls 1 and 3 (seq 2 and 3, after the journal's 1). */
        char *text = NULL;
        size_t len = 0;
        assert_int_equal(read_file(path2, 1 << 20, &text, &len, &e), 0);
        assert_null(strstr(text, "\"id\":2,"));
        assert_non_null(strstr(text, "\"seq\":2,\"id\":1"));
        assert_non_null(strstr(text, "\"seq\":3,\"id\":3"));
        free(text);
        unlink(path2);
        unlink(path);
        rmdir(dir);
        slow_teardown();
}

/* ---- the event loop on its own ---- */

struct ev_rec {
        char order[64];
        struct evloop *loop;
        struct ev_io *other;      /* removed by the first callback that runs */
        int fired_other;
};

static void ev_note(struct ev_rec *r, char c)
{
        size_t n = strlen(r->order);
        r->order[n] = c;
        r->order[n + 1] = '\0';
}

static void t_a(struct evloop *l, struct ev_timer *t, void *arg) { (void)l, (void)t; ev_note(arg, 'a'); }
static void t_b(struct evloop *l, struct ev_timer *t, void *arg) { (void)l, (void)t; ev_note(arg, 'b'); }
static void t_c(struct evloop *l, struct ev_timer *t, void *arg) { (void)l, (void)t; ev_note(arg, 'c'); }
static void d_x(struct evloop *l, void *arg) { (void)l; ev_note(arg, 'x'); }

/* Timers fire in time order (ties in the order added); a cancelled one
 * never; deferred calls run first, and a cancelled one not at all. */
static void evloop_timers_and_deferred(void **state)
{
        (void)state;
        struct evloop *loop = NULL;
        struct err *e = NULL;
        assert_int_equal(evloop_new(&loop, &e), 0);
        struct ev_rec r = { .loop = loop };
        struct ev_timer *tb = NULL, *gone = NULL;
        double now = mono_ms();
        assert_int_equal(evloop_timer_add(loop, now + 30, t_c, &r, NULL, &e), 0);
        assert_int_equal(evloop_timer_add(loop, now + 10, t_a, &r, NULL, &e), 0);
        assert_int_equal(evloop_timer_add(loop, now + 10, t_b, &r, &tb, &e), 0);
        assert_int_equal(evloop_timer_add(loop, now + 20, t_c, &r, &gone, &e), 0);
        evloop_timer_del(loop, gone);
        assert_int_equal(evloop_defer(loop, d_x, &r, &e), 0);
        assert_int_equal(evloop_defer(loop, d_x, &r, &e), 0);
        evloop_defer_cancel(loop, d_x, &r);
        assert_int_equal(evloop_defer(loop, d_x, &r, &e), 0);
        double until = mono_ms() + 2000;
        while (strlen(r.order) < 4 && mono_ms() < until)
                pump(loop, 100);
        assert_string_equal(r.order, "xabc");
        (void)tb;
        evloop_free(loop);
}

struct pair {
        struct ev_io *a, *b;
        char order[8];
};

static void io_a(struct evloop *l, struct ev_io *io, int fd, uint32_t rev, void *arg)
{
        (void)io, (void)fd, (void)rev;
        struct pair *p = arg;
        p->order[strlen(p->order)] = 'a';
        evloop_io_del(l, p->b); /* b's event may be in this very batch */
        evloop_io_del(l, p->a);
        p->a = p->b = NULL;
}

static void io_b(struct evloop *l, struct ev_io *io, int fd, uint32_t rev, void *arg)
{
        (void)io, (void)fd, (void)rev;
        struct pair *p = arg;
        p->order[strlen(p->order)] = 'b';
        evloop_io_del(l, p->a);
        evloop_io_del(l, p->b);
        p->a = p->b = NULL;
}

/* Two fds ready in one turn; each callback removes both watchers: exactly
 * one runs, the removed one is never called (nor touched after it is freed). */
static void evloop_removed_watcher_is_not_called(void **state)
{
        (void)state;
        struct evloop *loop = NULL;
        struct err *e = NULL;
        assert_int_equal(evloop_new(&loop, &e), 0);
        int a[2], b[2];
        assert_int_equal(pipe(a), 0);
        assert_int_equal(pipe(b), 0);
        struct pair p = { 0 };
        assert_int_equal(evloop_io_add(loop, a[0], EPOLLIN, io_a, &p, &p.a, &e), 0);
        assert_int_equal(evloop_io_add(loop, b[0], EPOLLIN, io_b, &p, &p.b, &e), 0);
        assert_int_equal(write(a[1], "1", 1), 1);
        assert_int_equal(write(b[1], "1", 1), 1);
        for (int i = 0; i < 3; i++)
                pump(loop, 50);
        assert_int_equal(strlen(p.order), 1);
        close(a[0]), close(a[1]), close(b[0]), close(b[1]);
        evloop_free(loop);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(async_ordering),        cmocka_unit_test(pending_one_at_a_time),
                cmocka_unit_test(input_from_the_sink),   cmocka_unit_test(protocol_errors),
                cmocka_unit_test(init_before_ready), cmocka_unit_test(result_text_matches_cjson),
                cmocka_unit_test(replay_divergence),     cmocka_unit_test(resume_then_live),
                cmocka_unit_test(two_sessions_one_loop), cmocka_unit_test(spawn_failure),
                cmocka_unit_test(family_completion_order), cmocka_unit_test(pause_then_resume),
                cmocka_unit_test(cancel_withdraws),
                cmocka_unit_test(evloop_timers_and_deferred), cmocka_unit_test(evloop_removed_watcher_is_not_called),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
