/* server/replay.c — POST /sessions/ID/replay: the session's agent run again
 * in a fresh box in REPLAY mode (runtime/session.h), every call answered
 * from the session's journal and nothing performed, nothing recorded.  The
 * request waits (suspended) and is answered {matched, result} at the end:
 * matched when the run asked for exactly the journal's calls and ended as
 * the journal says it ended. */
#define _GNU_SOURCE
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "policy/policy.h"
#include "proto/json.h"
#include "runtime/evloop.h"
#include "runtime/journal.h"
#include "runtime/session.h"
#include "server/server-internal.h"
#include "server/store.h"

struct replayer {
        struct replayer *next;
        struct server *srv;
        struct http_req *r;
        char id[SESSION_ID_LEN + 1];
        char run_id[SESSION_ID_LEN + 16];
        cJSON *input;
        char *ns;
        struct policy *profile;
        const struct policy *layers[2];
        struct replay *replay;
        struct session_config cfg;
        struct session_sink sink;
        const struct box_provider *boxes;
        void *boxes_handle;
        struct session *s;
        bool ended;
};

static void replayer_unlink(struct server *srv, struct replayer *p)
{
        for (struct replayer **q = &srv->replayers; *q; q = &(*q)->next)
                if (*q == p) {
                        *q = p->next;
                        return;
                }
}

static void replayer_free(struct replayer *p)
{
        session_free(p->s);
        if (p->boxes_handle)
                p->srv->run.boxes_free(p->srv->run.boxes_arg, p->boxes_handle);
        replay_free(p->replay);
        policy_free(p->profile);
        cJSON_Delete(p->input);
        free(p->ns);
        free(p);
}

static void on_free(struct evloop *loop, void *arg)
{
        (void)loop;
        replayer_free(arg);
}

/* Answer the waiting request with `doc` (consumed). */
static void answer(struct replayer *p, unsigned code, cJSON *doc)
{
        if (!p->r)
                return;
        p->r->canned = cJSON_PrintUnformatted(doc);
        p->r->canned_code = code;
        cJSON_Delete(doc);
        http_resume(p->r);
        p->r = NULL;
}

static void sink_ended(void *arg, struct session *s)
{
        struct replayer *p = arg;
        struct server *srv = p->srv;
        p->ended = true;
        struct session_outcome *o = session_outcome(s);
        const cJSON *end = replay_end(p->replay);
        const cJSON *want_outcome = cJSON_GetObjectItemCaseSensitive(end, "outcome");
        const cJSON *want_value = cJSON_GetObjectItemCaseSensitive(end, "value");
        bool ok = o->end == SESSION_END_DONE_OK;
        bool matched = o->end != SESSION_END_DIVERGED && o->end != SESSION_END_PROTOCOL &&
                       o->end != SESSION_END_SPAWN && o->end != SESSION_END_PARENT;
        /* It ended as the journal says (when the journal has an end). */
        if (matched && cJSON_IsString(want_outcome)) {
                bool want_ok = strcmp(want_outcome->valuestring, "ok") == 0;
                if (want_ok != ok)
                        matched = false;
                else if (ok && want_value && o->value && !cJSON_Compare(want_value, o->value, true)) {
                        char *a = cJSON_PrintUnformatted(want_value), *b = cJSON_PrintUnformatted(o->value);
                        matched = a && b && strcmp(a, b) == 0;
                        free(a);
                        free(b);
                }
        }
        cJSON *doc = cJSON_CreateObject();
        cJSON_AddBoolToObject(doc, "matched", matched);
        if (ok && o->value)
                cJSON_AddItemToObject(doc, "result", cJSON_Duplicate(o->value, 1));
        else
                cJSON_AddNullToObject(doc, "result");
        if (!ok) {
                cJSON *e = cJSON_AddObjectToObject(doc, "error");
                const cJSON *n = o->error ? cJSON_GetObjectItemCaseSensitive(o->error, "name") : NULL;
                const cJSON *m = o->error ? cJSON_GetObjectItemCaseSensitive(o->error, "message") : NULL;
                cJSON_AddStringToObject(e, "name", cJSON_IsString(n) ? n->valuestring
                                                   : o->end == SESSION_END_DIVERGED ? "Diverged"
                                                                                    : "Error");
                cJSON_AddStringToObject(e, "message", cJSON_IsString(m) ? m->valuestring
                                                      : o->message      ? o->message
                                                                        : "the replay ended");
        }
        answer(p, 200, doc);
        replayer_unlink(srv, p);
        if (evloop_defer(srv->loop, on_free, p, NULL) < 0)
                fprintf(stderr, "chidori: serve: a replay of %s is not freed\n", p->id);
}

/* A replay is refused while the session is queued or running (409), while
 * draining (503) and past --max-running replays at once (429): -1 answered. */
static int replay_refused(struct server *srv, struct http_req *r, const struct store_session *rec)
{
        if (strcmp(rec->status, "queued") == 0 || strcmp(rec->status, "running") == 0) {
                api_error(r, API_CONFLICT, "session %s is %s: replay it once it has settled", rec->id, rec->status);
                return -1;
        }
        if (srv->draining) {
                api_error(r, API_DRAINING, "the server is draining (SIGTERM): it starts no replay");
                return -1;
        }
        unsigned n = 0;
        for (struct replayer *q = srv->replayers; q; q = q->next)
                n++;
        if (n >= srv->cfg.max_running) {
                api_error(r, API_QUEUE_FULL, "%u replays run already (--max-running): retry later", n);
                return -1;
        }
        return 0;
}

/* The replay's session: the server's run, with the session's recorded
 * input, its memory namespace and its policy profile (untrusted if the
 * recorded one is unknown now).  p->input or p->ns NULL: out of memory. */
static void replayer_config(struct server *srv, struct replayer *p, const struct store_session *rec)
{
        p->input = json_cjson_raw((struct json_span){ rec->input, strlen(rec->input) });
        if (srv->run.shared_memory ? asprintf(&p->ns, "%s", srv->run.agent_abspath) < 0
                                   : asprintf(&p->ns, "%s#%s", srv->run.agent_abspath, rec->id) < 0)
                p->ns = NULL;
        if (rec->policy_profile && policy_profile(rec->policy_profile, "session policy_profile", &p->profile, NULL) < 0)
                policy_profile("untrusted", "session policy_profile", &p->profile, NULL);
        p->layers[0] = p->profile;
        p->cfg = (struct session_config){
                .script = srv->run.script,
                .filename = srv->run.filename,
                .esm = srv->run.esm,
                .input = p->input,
                .run_id = p->run_id,
                .js_deadline_ms = srv->run.js_deadline_ms,
                .mem_ns = p->ns,
                .mode = SESSION_REPLAY,
                .replay = { &replay_file_ops, p->replay },
                .quiet_logs = true,
                .deadline_ms = srv->run.deadline_ms,
                .limits = srv->run.limits,
                .effects = srv->run.effects,
                .policy = srv->run.policy,
                .layers = p->profile ? p->layers : NULL,
        };
        p->sink = (struct session_sink){ .ended = sink_ended, .arg = p };
}

void replay_route(struct server *srv, struct http_req *r, const struct store_session *rec)
{
        if (replay_refused(srv, r, rec) < 0)
                return;
        struct replayer *p = calloc(1, sizeof(*p));
        struct err *err = NULL;
        if (!p) {
                api_error(r, API_INTERNAL, "out of memory");
                return;
        }
        p->srv = srv;
        snprintf(p->id, sizeof(p->id), "%s", rec->id);
        snprintf(p->run_id, sizeof(p->run_id), "%s-replay", rec->id);
        int rc = sessions_open_journal(srv, rec->id, &p->replay, &err);
        if (rc != 0) {
                if (rc > 0)
                        api_error(r, API_CONFLICT, "session %s has no journal to replay", rec->id);
                else
                        api_error(r, API_CONFLICT, "session %s cannot be replayed: %s", rec->id, err_msg(err));
                err_free(err);
                replayer_free(p);
                return;
        }
        replayer_config(srv, p, rec);
        if (!p->input || !p->ns ||
            srv->run.boxes_new(srv->run.boxes_arg, p->run_id, NULL, &p->boxes, &p->boxes_handle, &err) < 0 ||
            session_new(srv->loop, &p->cfg, &p->sink, p->boxes, &p->s, &err) < 0) {
                api_error(r, API_INTERNAL, "the replay cannot start: %s", err ? err_msg(err) : "out of memory");
                err_free(err);
                replayer_free(p);
                return;
        }
        p->r = r;
        http_suspend(r);
        p->next = srv->replayers;
        srv->replayers = p;
        if (session_start(p->s, &err) < 0) {
                fprintf(stderr, "chidori: serve: replay of %s: %s\n", p->id, err_msg(err));
                err_free(err);
                /* session_start failing ends the session (sink ended) or not at all */
                if (!p->ended) {
                        cJSON *d = cJSON_CreateObject();
                        cJSON_AddBoolToObject(d, "matched", false);
                        cJSON_AddNullToObject(d, "result");
                        answer(p, 200, d);
                        replayer_unlink(srv, p);
                        replayer_free(p);
                }
        }
}

void replayers_free_all(struct server *srv)
{
        while (srv->replayers) {
                struct replayer *p = srv->replayers;
                srv->replayers = p->next;
                if (p->r) {
                        p->r->wait_shutdown = true;
                        http_resume(p->r);
                        p->r = NULL;
                }
                p->sink.ended = NULL;
                if (!p->ended)
                        session_cancel(p->s, "the server stopped");
                replayer_free(p);
        }
}
