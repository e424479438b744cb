/* server/sessions.c — the server's sessions: one `struct session`
 * (runtime/session.h) per running session on the server's one event loop,
 * a queue bounded by --max-queued in front of --max-running slots, the
 * sink that records what a session says in the store (server/store.c) and
 * wakes the requests waiting for it, and the journal over the store. */
#define _GNU_SOURCE
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "common/util.h"
#include "effects/memory/memstore.h"
#include "policy/policy.h"
#include "proto/json.h"
#include "runtime/evloop.h"
#include "runtime/header.h"
#include "runtime/journal.h"
#include "runtime/outcome.h"
#include "runtime/session.h"
#include "server/quotas.h"
#include "server/server-internal.h"
#include "server/store.h"

/* ---- the journal over the store ---- */

/* final: written whatever the size (the header, the note saying the
 * journal is full, the end line), as the file journal does. */
static int j_line_f(struct live *l, const cJSON *line, bool batch, bool final, struct err **err)
{
        if (l->deleted)
                return 0;
        if (l->jfull && !final)
                return err_setc(err, JOURNAL_E_LIMIT, 0, "the journal of session %s is full", l->id);
        char *text = cJSON_PrintUnformatted(line);
        if (!text)
                return err_set(err, ENOMEM, "journal");
        size_t len = strlen(text) + 1;
        if (!final && l->jmax && (len > l->jmax || l->jbytes > l->jmax - len)) {
                free(text);
                l->jfull = true;
                return err_setc(err, JOURNAL_E_LIMIT, 0,
                                "the journal of session %s: a line of %zu bytes would pass the limit (--max-journal)",
                                l->id, len);
        }
        l->jbytes += len;
        /* What the tenant used so far goes in this line's transaction: an
         * intent's effect is charged durably before it is performed, a
         * result's bytes with it (a kill -9 keeps both). */
        budget_flush(l->srv, l->budget, true);
        int rc = store_journal_append(l->srv->store, l->id, text, batch, err);
        free(text);
        if (rc < 0 && err && *err && err_code(*err) == STORE_E_FENCED)
                sessions_lease_lost(l, err_msg(*err)); /* the tick stops the worker */
        else if (rc < 0)
                l->store_failed = true;
        return rc;
}

static int j_line(struct live *l, const cJSON *line, bool batch, struct err **err)
{
        return j_line_f(l, line, batch, false, err);
}

static int j_header(void *j, const cJSON *line, struct err **err)
{
        return j_line_f(j, line, false, true, err);
}

/* Before an effect visible outside the box: committed (with every pure
 * result before it). */
static int j_intent(void *j, int64_t id, const char *op, const char *args_text, struct err **err)
{
        struct live *l = j;
        if (l->deleted)
                return 0;
        cJSON *line = cJSON_CreateObject();
        cJSON_AddStringToObject(line, "type", "start");
        cJSON_AddNumberToObject(line, "id", (double)id);
        cJSON_AddStringToObject(line, "op", op);
        cJSON_AddItemToObject(line, "args", json_cjson_raw_ref(args_text && *args_text ? args_text : "{}"));
        int rc = j_line(l, line, false, err);
        cJSON_Delete(line);
        if (rc == 0 && l->n_intents < sizeof(l->intents) / sizeof(l->intents[0]))
                l->intents[l->n_intents++] = id;
        return rc;
}

/* A result: committed before the worker sees it when its call had an
 * intent; a pure one goes with the next commit. */
static int j_result(void *j, const cJSON *line, struct err **err)
{
        struct live *l = j;
        const cJSON *idn = cJSON_GetObjectItemCaseSensitive(line, "id");
        bool had_intent = false;
        if (cJSON_IsNumber(idn))
                for (size_t i = 0; i < l->n_intents; i++)
                        if (l->intents[i] == (int64_t)idn->valuedouble) {
                                had_intent = true;
                                l->intents[i] = l->intents[--l->n_intents];
                                break;
                        }
        return j_line(l, line, !had_intent, err);
}

static int j_note(void *j, const cJSON *line, bool final, struct err **err)
{
        return j_line_f(j, line, false, final, err);
}

static int j_end(void *j, const cJSON *line, struct err **err)
{
        return j_line_f(j, line, false, true, err);
}

static int j_sync(void *j, struct err **err)
{
        struct live *l = j;
        return store_commit(l->srv->store, err);
}

/* The session's --max-journal, over every run of it (the store has
 * counted what earlier runs wrote: live_start). */
static void j_set_limit(void *j, uint64_t max)
{
        struct live *l = j;
        l->jmax = max;
}

static const struct journal_ops store_journal_ops = {
        .header = j_header, .intent = j_intent, .result = j_result, .note = j_note,
        .end = j_end,       .sync = j_sync,     .set_limit = j_set_limit,
};

/* ---- ids ---- */

void sessions_make_id(char out[SESSION_ID_LEN + 1])
{
        struct timeval tv;
        gettimeofday(&tv, NULL);
        unsigned long long ms = (unsigned long long)tv.tv_sec * 1000ull + (unsigned long long)tv.tv_usec / 1000ull;
        unsigned char b[8];
        if (getrandom(b, sizeof(b), 0) != sizeof(b))
                memset(b, 0, sizeof(b));
        /* "s" + 12 hex digits of milliseconds + 16 random: sortable by creation. */
        snprintf(out, SESSION_ID_LEN + 1, "s%012llx%02x%02x%02x%02x%02x%02x%02x%02x", ms & 0xffffffffffffull, b[0],
                 b[1], b[2], b[3], b[4], b[5], b[6], b[7]);
}

bool sessions_id_ok(const char *id)
{
        if (strlen(id) != SESSION_ID_LEN || id[0] != 's')
                return false;
        for (size_t i = 1; i < SESSION_ID_LEN; i++)
                if (!((id[i] >= '0' && id[i] <= '9') || (id[i] >= 'a' && id[i] <= 'f')))
                        return false;
        return true;
}

/* ---- the ending ---- */

struct ending {
        enum sess_status status;
        enum run_ending ending;
        int exit;
        const char *name;     /* error name when not the agent's */
};

/* A worker gone without `done`: code and message from its wait status, as
 * chidori run says it (runtime/outcome.c): 137, "engine crashed (signal SIGKILL)". */
static void worker_gone(const struct session_outcome *o, struct outcome_exit *x)
{
        session_outcome_exit(o, &(struct outcome_context){ .js_deadline_ms = 0 }, x);
}

static struct ending ending_of(const struct session_outcome *o)
{
        switch (o->end) {
        case SESSION_END_DONE_OK: return (struct ending){ SESS_DONE, RUN_OK, 0, NULL };
        case SESSION_END_AGENT_ERROR: return (struct ending){ SESS_FAILED, RUN_AGENT_ERROR, 1, NULL };
        case SESSION_END_NEVER_SETTLED: return (struct ending){ SESS_FAILED, RUN_AGENT_ERROR, 1, "NeverSettled" };
        case SESSION_END_CPU_LIMIT: return (struct ending){ SESS_FAILED, RUN_CPU_LIMIT, 152, "CpuLimit" };
        case SESSION_END_DEADLINE: return (struct ending){ SESS_FAILED, RUN_DEADLINE, 124, "Deadline" };
        case SESSION_END_SECCOMP:
                return (struct ending){ SESS_FAILED, RUN_SANDBOX_VIOLATION, 159, "SandboxViolation" };
        case SESSION_END_INTERRUPTED: return (struct ending){ SESS_CANCELLED, RUN_CANCELLED, 130, "Cancelled" };
        case SESSION_END_LIMIT: return (struct ending){ SESS_FAILED, RUN_LIMIT, 1, "Limit" };
        case SESSION_END_EXIT: return (struct ending){ SESS_FAILED, RUN_AGENT_ERROR, o->exit_code, "Exit" };
        case SESSION_END_SPAWN:
                return (struct ending){ SESS_FAILED, RUN_SPAWN, o->spawn_layer ? 78 : 70, "SpawnFailed" };
        case SESSION_END_EOF:
                if (o->oom_killed)
                        return (struct ending){ SESS_FAILED, RUN_MEMORY_LIMIT, 137, "MemoryLimit" };
                {
                        struct outcome_exit x;
                        worker_gone(o, &x);
                        return (struct ending){ SESS_FAILED, RUN_WORKER_EXITED, x.code, "WorkerExited" };
                }
        case SESSION_END_PROTOCOL:
        case SESSION_END_DIVERGED:
        case SESSION_END_PARENT:
        default: return (struct ending){ SESS_FAILED, RUN_PROTOCOL, 70, "ProtocolError" };
        }
}

static char *value_text(const cJSON *v)
{
        if (!v)
                return NULL;
        if (cJSON_IsRaw(v) && v->valuestring)
                return strdup(v->valuestring);
        return cJSON_PrintUnformatted(v);
}

/* ---- the live sessions ---- */

static void live_unlink(struct server *srv, struct live *l)
{
        for (struct live **p = &srv->live; *p; p = &(*p)->next)
                if (*p == l) {
                        *p = l->next;
                        return;
                }
}

static void live_free(struct live *l)
{
        if (!l)
                return;
        if (l->epoch)
                store_unfence(l->srv->store, l->id);
        session_free(l->s);
        if (l->boxes_handle)
                l->srv->run.boxes_free(l->srv->run.boxes_arg, l->boxes_handle);
        policy_free(l->profile);
        replay_free(l->replay);
        cJSON_Delete(l->decisions);
        cJSON_Delete(l->pending);
        free(l->input_answer);
        cJSON_Delete(l->input);
        free(l->ns);
        free(l->tenant);
        free(l);
}

struct live *sessions_find(struct server *srv, const char *id)
{
        for (struct live *l = srv->live; l; l = l->next)
                if (strcmp(l->id, id) == 0)
                        return l;
        return NULL;
}

/* The event `event` carrying the session's JSON as it is now; a settled
 * session's streams end with it. */
static void emit_session(struct server *srv, const char *id, const char *event)
{
        struct store_session rec = { 0 };
        if (store_session_get(srv->store, id, &rec, NULL) != 0)
                return;
        bool settled = strcmp(rec.status, "queued") != 0 && strcmp(rec.status, "running") != 0;
        events_emit(srv, id, event, api_session_json(srv, &rec), false);
        store_session_clear(&rec);
        if (settled)
                events_settled(srv, id);
}

static void set_status(struct live *l, enum sess_status st)
{
        if (l->deleted)
                return;
        struct err *err = NULL;
        if (store_session_update(l->srv->store, l->id, sess_status_name(st), NULL, NULL, -1, NULL, &err) < 0) {
                if (err_code(err) == STORE_E_FENCED)
                        sessions_lease_lost(l, err_msg(err));
                else
                        fprintf(stderr, "chidori: serve: session %s: %s\n", l->id, err_msg(err));
                err_free(err);
                return;
        }
        emit_session(l->srv, l->id, "status");
}

static void start_queued(struct server *srv);

/* Sessions that ended are freed at the next turn (each was still in its
 * own callback), then the queue moves. */
static void on_freed(struct evloop *loop, void *arg)
{
        (void)loop;
        struct server *srv = arg;
        srv->free_deferred = false;
        while (srv->dead) {
                struct live *l = srv->dead;
                srv->dead = l->next;
                live_free(l);
        }
        start_queued(srv);
}

static void defer_free(struct server *srv, struct live *l)
{
        l->next = srv->dead;
        srv->dead = l;
        if (!srv->free_deferred && evloop_defer(srv->loop, on_freed, srv, NULL) == 0)
                srv->free_deferred = true;
}

/* The session's quotas (runtime/quota.h): the operator's, tightened by
 * the session's own (POST /sessions "quotas", stricter wins), its use in
 * earlier runs (a resume, a restart) read back from its stats; the parent
 * its tenant's budget.  Wall time is a deadline: what is left of it. */
static int quota_setup(struct live *l, struct err **err)
{
        struct server *srv = l->srv;
        memset(&l->quota, 0, sizeof(l->quota));
        l->quota.scope = "session";
        if (srv->run.quotas)
                l->quota.lim = srv->run.quotas->session;
        struct store_session rec = { 0 };
        if (store_session_get(srv->store, l->id, &rec, NULL) == 0) {
                cJSON *own = rec.quotas ? cJSON_Parse(rec.quotas) : NULL;
                struct quota_limits tight = { 0 };
                char msg[512];
                if (own && quota_limits_parse(own, "the session's quotas", NULL, &tight, msg, sizeof(msg)))
                        quota_limits_tighten(&l->quota.lim, &tight);
                cJSON_Delete(own);
                cJSON *st = rec.stats ? cJSON_Parse(rec.stats) : NULL;
                quota_usage_load(&l->quota, cJSON_GetObjectItemCaseSensitive(st, "usage"));
                cJSON_Delete(st);
        }
        store_session_clear(&rec);
        if (!(l->budget = budget_of(srv, l->tenant)))
                return err_set(err, ENOMEM, "the tenant's budget");
        l->quota.parent = &l->budget->q;
        l->cfg.quota = &l->quota;
        uint64_t wall = l->quota.lim.v[QUOTA_WALL_MS];
        if (wall) {
                uint64_t used = l->quota.used[QUOTA_WALL_MS];
                long left = used >= wall ? 1 : (long)(wall - used);
                if (l->cfg.deadline_ms <= 0 || left < l->cfg.deadline_ms)
                        l->cfg.deadline_ms = left;
        }
        return 0;
}

/* A run ended (or paused): its wall time charged, the tenant's use written. */
static void quota_end(struct live *l, const struct session_outcome *o)
{
        if (!l->cfg.quota)
                return;
        quota_add(&l->quota, QUOTA_WALL_MS, o->wall_ms > 0 ? (uint64_t)(o->wall_ms + 0.5) : 0);
        budget_save(l->srv, l->budget);
}

/* The stats of this run added to those of the session's earlier runs
 * (a resume is a run); `effects` counts the calls performed, not those
 * answered from the journal. */
static char *stats_sum(struct live *l, const struct session_outcome *o)
{
        double wall = o->wall_ms, cpu = o->cpu_ms, peak = (double)o->peak_bytes;
        double effects = o->effects > l->replayed ? (double)(o->effects - l->replayed) : 0;
        struct store_session rec = { 0 };
        if (l->resume && store_session_get(l->srv->store, l->id, &rec, NULL) == 0 && rec.stats) {
                cJSON *p = cJSON_Parse(rec.stats);
                const cJSON *w = cJSON_GetObjectItemCaseSensitive(p, "wall_ms");
                const cJSON *c = cJSON_GetObjectItemCaseSensitive(p, "cpu_ms");
                const cJSON *k = cJSON_GetObjectItemCaseSensitive(p, "peak_bytes");
                const cJSON *e = cJSON_GetObjectItemCaseSensitive(p, "effects");
                wall += cJSON_IsNumber(w) ? w->valuedouble : 0;
                cpu += cJSON_IsNumber(c) ? c->valuedouble : 0;
                if (cJSON_IsNumber(k) && k->valuedouble > peak)
                        peak = k->valuedouble;
                effects += cJSON_IsNumber(e) ? e->valuedouble : 0;
                cJSON_Delete(p);
        }
        store_session_clear(&rec);
        cJSON *stats = cJSON_CreateObject();
        cJSON_AddNumberToObject(stats, "wall_ms", (double)(long long)(wall + 0.5));
        cJSON_AddNumberToObject(stats, "cpu_ms", (double)(long long)(cpu + 0.5));
        cJSON_AddNumberToObject(stats, "peak_bytes", peak);
        cJSON_AddNumberToObject(stats, "effects", effects);
        cJSON_AddItemToObject(stats, "usage", quota_usage_json(&l->quota));
        char *text = cJSON_PrintUnformatted(stats);
        cJSON_Delete(stats);
        return text;
}

/* The pending column: {"decisions": [...]} and what the session waits for. */
static void save_pending(struct live *l, const cJSON *what)
{
        cJSON *p = cJSON_CreateObject();
        cJSON_AddItemToObject(p, "decisions", l->decisions ? cJSON_Duplicate(l->decisions, 1) : cJSON_CreateArray());
        cJSON_AddNumberToObject(p, "calls_seen", (double)l->calls_seen);
        for (const cJSON *c = what ? what->child : NULL; c; c = c->next)
                cJSON_AddItemToObject(p, c->string, cJSON_Duplicate(c, 1));
        char *text = cJSON_PrintUnformatted(p);
        cJSON_Delete(p);
        struct err *err = NULL;
        if (!text || store_session_set_pending(l->srv->store, l->id, text, &err) < 0) {
                fprintf(stderr, "chidori: serve: session %s: %s\n", l->id, text ? err_msg(err) : "out of memory");
                err_free(err);
        }
        free(text);
}

/* store_release after a session's pause or end: a failed commit lost the
 * record, said on stderr as each write's failure is. */
static void release_record(struct live *l)
{
        struct err *err = NULL;
        if (store_release(l->srv->store, &err) < 0) {
                fprintf(stderr, "chidori: serve: session %s: %s\n", l->id, err_msg(err));
                err_free(err);
        }
}

/* Paused ("pause is the worker exiting"): the box is gone, the journal
 * holds everything; the session waits for approve / input. */
static void ended_paused(struct live *l, const struct session_outcome *o)
{
        struct server *srv = l->srv;
        srv->running--;
        histogram_observe(&srv->stats.run_duration, o->wall_ms / 1000.0);
        if (!l->deleted) {
                struct err *err = NULL;
                /* The pause is one record (store_hold): the journal's pure
                 * lines, the pending request, the use, the status, its event. */
                store_hold(srv->store);
                if (store_commit(srv->store, &err) < 0) {
                        fprintf(stderr, "chidori: serve: session %s: %s\n", l->id, err_msg(err));
                        err_free(err);
                        err = NULL;
                }
                bool approval = cJSON_GetObjectItemCaseSensitive(l->pending, "approval") != NULL;
                srv->stats.pauses[approval ? 0 : 1]++;
                save_pending(l, l->pending);
                quota_end(l, o);
                char *stats = stats_sum(l, o);
                if (store_session_update(srv->store, l->id,
                                         sess_status_name(approval ? SESS_AWAITING_APPROVAL : SESS_AWAITING_INPUT), NULL,
                                         NULL, -1, stats, &err) < 0) {
                        fprintf(stderr, "chidori: serve: session %s: %s\n", l->id, err_msg(err));
                        err_free(err);
                }
                free(stats);
                emit_session(srv, l->id, "status");
                release_record(l);
        }
        live_unlink(srv, l);
        waiters_wake(srv, l->id);
        defer_free(srv, l);
}

static void sink_ended(void *arg, struct session *s)
{
        struct live *l = arg;
        struct server *srv = l->srv;
        l->ended = true;
        if (l->shutting)
                return; /* sessions_free_all frees it */
        struct session_outcome *o = session_outcome(s);
        if (o->end == SESSION_END_PAUSED && l->pending) {
                ended_paused(l, o);
                return;
        }
        struct ending e = ending_of(o);
        srv->running--;
        srv->stats.runs[e.ending]++;
        if (e.ending == RUN_MEMORY_LIMIT)
                srv->stats.memory_kills++;
        histogram_observe(&srv->stats.run_duration, o->wall_ms / 1000.0);
        if (!l->deleted) {
                /* The end is one record (store_hold): the journal's end line,
                 * the tenant's use, the outcome and the "done" event,
                 * committed before any waiter is answered. */
                store_hold(srv->store);
                char *result = o->end == SESSION_END_DONE_OK ? value_text(o->value) : NULL;
                if (o->end == SESSION_END_DONE_OK && !result)
                        result = strdup("null");
                char *error = NULL;
                struct outcome_exit gone = { .message = "" };
                if (e.ending == RUN_WORKER_EXITED)
                        worker_gone(o, &gone);
                if (e.status != SESS_DONE) {
                        cJSON *err = cJSON_CreateObject();
                        const cJSON *n = o->error ? cJSON_GetObjectItemCaseSensitive(o->error, "name") : NULL;
                        const cJSON *m = o->error ? cJSON_GetObjectItemCaseSensitive(o->error, "message") : NULL;
                        cJSON_AddStringToObject(err, "name",
                                                cJSON_IsString(n) ? n->valuestring : e.name ? e.name : "Error");
                        cJSON_AddStringToObject(err, "message", cJSON_IsString(m) ? m->valuestring
                                                                : gone.message[0]    ? gone.message
                                                                : o->message         ? o->message
                                                                                     : "the run ended");
                        error = cJSON_PrintUnformatted(err);
                        cJSON_Delete(err);
                }
                quota_end(l, o);
                char *stats_text = stats_sum(l, o);
                cJSON *stats = stats_text ? cJSON_Parse(stats_text) : cJSON_CreateObject();
                /* The journal's end line, as `run` writes it, with the stats
                 * summed over every run of the session. */
                cJSON *end = session_outcome_end_line(o, e.status == SESS_DONE ? "ok" : run_ending_name(e.ending),
                                                      e.exit);
                cJSON_DeleteItemFromObjectCaseSensitive(end, "stats");
                cJSON_AddItemToObject(end, "stats", stats);
                j_end(l, end, NULL);
                cJSON_Delete(end);
                struct err *err = NULL;
                if (store_session_update(srv->store, l->id, sess_status_name(e.status), result, error, e.exit,
                                         stats_text, &err) < 0) {
                        fprintf(stderr, "chidori: serve: session %s: %s\n", l->id, err_msg(err));
                        err_free(err);
                }
                free(result);
                free(error);
                free(stats_text);
                emit_session(srv, l->id, "done");
                release_record(l);
        }
        live_unlink(srv, l);
        waiters_wake(srv, l->id);
        defer_free(srv, l);
}

static void sink_status(void *arg, struct session *s, enum session_state st)
{
        (void)s;
        struct live *l = arg;
        if (st == SESSION_RUNNING && !l->box_started) {
                l->box_started = true;
                histogram_observe(&l->srv->stats.box_start, (mono_ms() - l->started) / 1000.0);
        }
}

/* The agent's log and console lines: event `log` {level, message}. */
static void sink_log(void *arg, struct session *s, const char *tag, const char *msg, size_t len)
{
        (void)s;
        struct live *l = arg;
        if (l->deleted)
                return;
        cJSON *d = cJSON_CreateObject();
        cJSON_AddStringToObject(d, "level", tag && strstr(tag, ":warn") ? "warn" : "info");
        char *m = strndup(msg, len);
        cJSON_AddStringToObject(d, "message", m ? m : "");
        free(m);
        events_emit(l->srv, l->id, "log", d, true);
}

static void sink_call(void *arg, struct session *s, int64_t id, const char *op, const char *decision)
{
        (void)s;
        struct live *l = arg;
        struct server_stats *st = &l->srv->stats;
        if (strcmp(decision, "replayed") == 0)
                l->replayed++;
        /* A call answered from the journal during a resume was sent when it
         * was made; a log call is its `log` event; the reads of a streamed
         * response body (http.read, http.close) are part of its `http` call,
         * not one event per chunk. */
        bool again = id <= l->calls_before; /* announced by an earlier run of the session */
        if (id > l->calls_seen)
                l->calls_seen = id;
        bool part = strcmp(op, "http.read") == 0 || strcmp(op, "http.close") == 0;
        if (!l->deleted && !again && !part && strcmp(decision, "replayed") != 0 && strcmp(op, "log") != 0) {
                cJSON *d = cJSON_CreateObject();
                cJSON_AddNumberToObject(d, "id", (double)id);
                cJSON_AddStringToObject(d, "op", op);
                cJSON_AddStringToObject(d, "decision", decision);
                events_emit(l->srv, l->id, "call", d, true);
        }
        for (size_t i = 0; i < st->n_effects; i++)
                if (strcmp(st->effects[i].op, op) == 0 && strcmp(st->effects[i].decision, decision) == 0) {
                        st->effects[i].n++;
                        return;
                }
        if (st->n_effects >= 256)
                return;
        struct effect_count *ne = realloc(st->effects, (st->n_effects + 1) * sizeof(*ne));
        if (!ne)
                return;
        st->effects = ne;
        struct effect_count *c = &ne[st->n_effects++];
        snprintf(c->op, sizeof(c->op), "%s", op);
        snprintf(c->decision, sizeof(c->decision), "%s", decision);
        c->n = 1;
}

/* A decision taken for (target, args) in this session: 1 allow, -1 deny, 0 none. */
static int decided(struct live *l, const char *target, const char *args, const char **who)
{
        const cJSON *d;
        cJSON_ArrayForEach(d, l->decisions)
        {
                const cJSON *t = cJSON_GetObjectItemCaseSensitive(d, "target");
                const cJSON *a = cJSON_GetObjectItemCaseSensitive(d, "args");
                const cJSON *w = cJSON_GetObjectItemCaseSensitive(d, "who");
                if (cJSON_IsString(t) && cJSON_IsString(a) && strcmp(t->valuestring, target) == 0 &&
                    strcmp(a->valuestring, args) == 0) {
                        *who = cJSON_IsString(w) ? w->valuestring : "";
                        return cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(d, "allow")) ? 1 : -1;
                }
        }
        return 0;
}

static void pause_now(struct live *l, struct session *s, const char *kind, cJSON *what)
{
        cJSON_Delete(l->pending);
        l->pending = cJSON_CreateObject();
        cJSON_AddItemToObject(l->pending, kind, cJSON_Duplicate(what, 1));
        cJSON_DeleteItemFromObjectCaseSensitive(what, "args_text");
        if (!l->deleted)
                events_emit(l->srv, l->id, kind, what, false);
        else
                cJSON_Delete(what);
        struct err *err = NULL;
        if (session_pause(s, &err) < 0) {
                fprintf(stderr, "chidori: serve: session %s: cannot pause: %s\n", l->id, err_msg(err));
                err_free(err);
        }
}

/* A gated call needs approval: a decision this session took for the same
 * (target, args) answers it; else the session pauses, asking. */
static void sink_approval(void *arg, struct session *s, const struct session_approval *a)
{
        struct live *l = arg;
        const char *who = NULL;
        int d = decided(l, a->target, a->args, &who);
        if (d) {
                struct err *err = NULL;
                char by[160];
                snprintf(by, sizeof(by), "by tenant %s", who);
                if (session_approve(s, a->id, d > 0, by, &err) < 0) {
                        fprintf(stderr, "chidori: serve: session %s: %s\n", l->id, err_msg(err));
                        err_free(err);
                }
                return;
        }
        cJSON *what = cJSON_CreateObject();
        cJSON_AddNumberToObject(what, "id", (double)a->id);
        cJSON_AddStringToObject(what, "target", a->target);
        cJSON *args = cJSON_Parse(a->args);
        cJSON_AddItemToObject(what, "args", args ? args : cJSON_CreateString(a->args));
        cJSON_AddStringToObject(what, "reason", a->reason ? a->reason : "");
        /* The args as the worker wrote them: what a decision is remembered by. */
        cJSON_AddStringToObject(what, "args_text", a->args);
        pause_now(l, s, "approval", what);
}

static void sink_input(void *arg, struct session *s, uint64_t id, const char *prompt)
{
        (void)id;
        struct live *l = arg;
        if (l->input_answer) {
                char *answer = l->input_answer;
                l->input_answer = NULL;
                save_pending(l, NULL); /* taken: a later input is asked anew */
                struct err *err = NULL;
                if (session_input(s, answer, strlen(answer), &err) < 0) {
                        fprintf(stderr, "chidori: serve: session %s: %s\n", l->id, err_msg(err));
                        err_free(err);
                }
                free(answer);
                return;
        }
        cJSON *what = cJSON_CreateObject();
        cJSON_AddStringToObject(what, "prompt", prompt ? prompt : "");
        pause_now(l, s, "input", what);
}

static int write_all(int fd, const char *p, size_t n)
{
        while (n) {
                ssize_t w = write(fd, p, n);
                if (w < 0 && errno == EINTR)
                        continue;
                if (w <= 0)
                        return -1;
                p += w;
                n -= (size_t)w;
        }
        return 0;
}

static int journal_to_fd(void *arg, const char *line, size_t len)
{
        int fd = *(int *)arg;
        if (write_all(fd, line, len) < 0 || write_all(fd, "\n", 1) < 0)
                return 1;
        return 0;
}

/* The journal of session id in the store, read back as a replay source:
 * 0 (*ret set), 1 it has none.  A journal of another format or chidori is
 * refused (never a wrong replay). */
int sessions_open_journal(struct server *srv, const char *id, struct replay **ret, struct err **err)
{
        *ret = NULL;
        int fd = memfd_create("chidori-journal", MFD_CLOEXEC);
        if (fd < 0)
                return err_set(err, errno, "memfd_create");
        int rc = store_journal_each(srv->store, id, journal_to_fd, &fd, err);
        off_t size = lseek(fd, 0, SEEK_END);
        if (rc < 0 || size <= 0) {
                close(fd);
                return rc < 0 ? -1 : 1;
        }
        char path[64];
        snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
        uint64_t max = srv->run.limits.max_journal ? srv->run.limits.max_journal : BROKER_DEFAULT_MAX_JOURNAL;
        struct replay *r = NULL;
        rc = replay_open(path, max, &r, err);
        close(fd);
        if (rc < 0)
                return -1;
        const cJSON *h = replay_header(r);
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(h, "chidori");
        const cJSON *p = cJSON_GetObjectItemCaseSensitive(h, "protocol");
        if (!cJSON_IsString(v) || strcmp(v->valuestring, srv->run.version) != 0 || !cJSON_IsNumber(p) ||
            p->valueint != 1) {
                err_set(err, 0,
                        "the journal of this session was written by chidori %s (journal format %d); this is "
                        "chidori %s (format 1): it cannot replay it safely",
                        cJSON_IsString(v) ? v->valuestring : "?", cJSON_IsNumber(p) ? p->valueint : 0,
                        srv->run.version);
                replay_free(r);
                return -1;
        }
        *ret = r;
        return 0;
}

/* The session ran before (paused, or the server stopped): RESUME. */
static int open_resume(struct live *l, bool *ret_resume, struct err **err)
{
        int rc = sessions_open_journal(l->srv, l->id, &l->replay, err);
        *ret_resume = rc == 0;
        return rc < 0 ? -1 : 0;
}

/* The journal's header: what a replay needs to know. */
static int live_header(struct live *l, struct err **err)
{
        const struct server_run *run = &l->srv->run;
        /* A server's sessions run in UTC, on real time. */
        const struct journal_header_info info = {
                .version = run->version, .run_id = l->id, .agent = run->agent_abspath,
                .agent_sha256 = run->agent_sha256, .filename = run->filename, .memory_ns = l->ns,
                .virtual_time = l->cfg.virtual_time, .input = l->input,
        };
        cJSON *h = journal_header_line(&info);
        if (!h)
                return err_set(err, ENOMEM, "journal header");
        int rc = j_header(l, h, err);
        cJSON_Delete(h);
        return rc;
}

static int live_start(struct live *l, struct err **err)
{
        struct server *srv = l->srv;
        const struct server_run *run = &srv->run;
        l->profile_layers[0] = l->profile;
        l->profile_layers[1] = NULL;
        if (open_resume(l, &l->resume, err) < 0 ||
            store_journal_bytes(srv->store, l->id, &l->jbytes, err) < 0)
                return -1;
        l->cfg = (struct session_config){
                .script = run->script,
                .filename = run->filename,
                .esm = run->esm,
                .input = l->input,
                .run_id = l->id,
                .js_deadline_ms = run->js_deadline_ms,
                .mem = run->mem,
                .mem_ns = l->ns,
                .journal = { &store_journal_ops, l },
                .mode = l->resume ? SESSION_RESUME : SESSION_LIVE,
                .replay = { l->resume ? &replay_file_ops : NULL, l->replay },
                .can_approve = true,
                .can_input = true,
                .deadline_ms = run->deadline_ms,
                .limits = run->limits,
                .effects = run->effects,
                .policy = run->policy,
                .layers = l->profile ? l->profile_layers : NULL,
        };
        if (quota_setup(l, err) < 0)
                return -1;
        l->sink = (struct session_sink){
                .log = sink_log,
                .call = sink_call,
                .approval = sink_approval,
                .input_request = sink_input,
                .status = sink_status,
                .ended = sink_ended,
                .arg = l,
        };
        if (run->boxes_new(run->boxes_arg, l->id, &l->cfg, &l->boxes, &l->boxes_handle, err) < 0)
                return -1;
        /* The operator's CHIDORI_POLICY_LAYERS (set by the grants) and the
         * session's profile: the stricter wins among all of them. */
        if (l->profile) {
                size_t n = 0;
                for (const struct policy *const *g = l->cfg.layers; g && *g && n < 16; g++)
                        l->profile_layers[n++] = *g;
                l->profile_layers[n++] = l->profile;
                l->profile_layers[n] = NULL;
                l->cfg.layers = l->profile_layers;
        }
        if (session_new(srv->loop, &l->cfg, &l->sink, l->boxes, &l->s, err) < 0)
                return -1;
        /* The start is one record (store_hold): the journal's header (a
         * resumed session's journal goes on; a new one starts with it), the
         * status and its event, committed before the box is asked for. */
        store_hold(srv->store);
        if (!l->resume && live_header(l, err) < 0) {
                store_release(srv->store, NULL);
                return -1;
        }
        l->queued = false;
        srv->running++;
        l->started = mono_ms();
        set_status(l, SESS_RUNNING);
        if (store_release(srv->store, err) < 0) {
                srv->running--;
                return -1;
        }
        if (session_start(l->s, err) < 0) {
                srv->running--;
                return -1;
        }
        return 0;
}

/* A session that could not start: failed, with why. */
static void live_fail(struct live *l, const char *why)
{
        struct server *srv = l->srv;
        if (!l->deleted) {
                cJSON *e = cJSON_CreateObject();
                cJSON_AddStringToObject(e, "name", "ServerError");
                cJSON_AddStringToObject(e, "message", why);
                char *text = cJSON_PrintUnformatted(e);
                cJSON_Delete(e);
                store_session_update(srv->store, l->id, "failed", NULL, text, 70, NULL, NULL);
                free(text);
                emit_session(srv, l->id, "done");
        }
        srv->stats.runs[RUN_SERVER]++;
        live_unlink(srv, l);
        waiters_wake(srv, l->id);
        live_free(l);
}

static void start_queued(struct server *srv)
{
        while (srv->running < srv->cfg.max_running && !srv->draining) {
                /* The oldest queued whose tenant is under its concurrent_sessions
                 * (the others wait queued for one of theirs to end): the list
                 * is newest first. */
                struct live *oldest = NULL;
                for (struct live *l = srv->live; l; l = l->next)
                        if (l->queued && budget_may_start(srv, l->tenant))
                                oldest = l;
                if (!oldest)
                        return;
                srv->queued--;
                struct err *err = NULL;
                if (live_start(oldest, &err) < 0) {
                        live_fail(oldest, err_msg(err));
                        err_free(err);
                }
        }
}

int sessions_create(struct server *srv, const char *id, const char *tenant, cJSON *input, struct policy *profile,
                    uint64_t epoch, struct err **err)
{
        struct live *l = calloc(1, sizeof(*l));
        if (!l) {
                cJSON_Delete(input);
                policy_free(profile);
                return err_set(err, ENOMEM, "session");
        }
        l->srv = srv;
        snprintf(l->id, sizeof(l->id), "%s", id);
        if (epoch && store_fence(srv->store, id, epoch, err) < 0) {
                cJSON_Delete(input);
                policy_free(profile);
                free(l);
                return -1;
        }
        l->epoch = epoch;
        l->renewed = srv->renew_gen;
        l->tenant = strdup(tenant);
        l->input = input;
        l->profile = profile;
        /* Each session its own memory namespace unless --shared-memory. */
        if (srv->run.shared_memory ? asprintf(&l->ns, "%s", srv->run.agent_abspath) < 0
                                   : asprintf(&l->ns, "%s#%s", srv->run.agent_abspath, id) < 0)
                l->ns = NULL;
        if (!l->tenant || !l->ns) {
                live_free(l);
                return err_set(err, ENOMEM, "session");
        }
        /* The approvals it took in earlier runs (a resume, a restart). */
        struct store_session rec = { 0 };
        if (store_session_get(srv->store, id, &rec, NULL) == 0 && rec.pending) {
                cJSON *p = cJSON_Parse(rec.pending);
                l->decisions = cJSON_DetachItemFromObjectCaseSensitive(p, "decisions");
                const cJSON *cs = cJSON_GetObjectItemCaseSensitive(p, "calls_seen");
                if (cJSON_IsNumber(cs))
                        l->calls_seen = l->calls_before = (int64_t)cs->valuedouble;
                const cJSON *ia = cJSON_GetObjectItemCaseSensitive(p, "input_answer");
                if (cJSON_IsString(ia))
                        l->input_answer = strdup(ia->valuestring);
                cJSON_Delete(p);
        }
        store_session_clear(&rec);
        l->queued = true;
        l->next = srv->live;
        srv->live = l;
        srv->queued++;
        start_queued(srv);
        return 0;
}

int sessions_resume(struct server *srv, const char *id, cJSON *decision, const char *input_answer,
                    const struct store_session *seen, uint64_t epoch, struct err **err)
{
        struct store_session rec = { 0 };
        int rc = store_session_get(srv->store, id, &rec, err);
        if (rc != 0) {
                cJSON_Delete(decision);
                return rc < 0 ? -1 : err_set(err, ENOENT, "no session %s", id);
        }
        cJSON *p = rec.pending ? cJSON_Parse(rec.pending) : NULL;
        cJSON *decisions = cJSON_DetachItemFromObjectCaseSensitive(p, "decisions");
        if (!cJSON_IsArray(decisions)) {
                cJSON_Delete(decisions);
                decisions = cJSON_CreateArray();
        }
        char *nt = NULL;
        if (decision) {
                /* Who decided, in the journal (an allow is noted again by the
                 * session when it performs the call, a deny is not). */
                const cJSON *t = cJSON_GetObjectItemCaseSensitive(decision, "target");
                const cJSON *w = cJSON_GetObjectItemCaseSensitive(decision, "who");
                char msg[512];
                snprintf(msg, sizeof(msg), "policy: `%.200s` %s by %s%.200s",
                         cJSON_IsString(t) ? t->valuestring : "?",
                         cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(decision, "allow")) ? "allowed" : "denied",
                         cJSON_IsString(w) && strncmp(w->valuestring, "nobody", 6) != 0 ? "tenant " : "",
                         cJSON_IsString(w) ? w->valuestring : "?");
                cJSON *note = cJSON_CreateObject();
                cJSON_AddStringToObject(note, "type", "note");
                cJSON_AddStringToObject(note, "kind", "decided");
                cJSON_AddStringToObject(note, "message", msg);
                nt = cJSON_PrintUnformatted(note);
                cJSON_Delete(note);
                cJSON_AddItemToArray(decisions, decision);
        }
        const cJSON *cs = cJSON_GetObjectItemCaseSensitive(p, "calls_seen");
        double calls_seen = cJSON_IsNumber(cs) ? cs->valuedouble : 0;
        cJSON_Delete(p);
        cJSON *np = cJSON_CreateObject();
        cJSON_AddItemToObject(np, "decisions", decisions);
        cJSON_AddNumberToObject(np, "calls_seen", calls_seen);
        /* Kept until the session takes it: a restart before that keeps it too. */
        if (input_answer)
                cJSON_AddStringToObject(np, "input_answer", input_answer);
        char *text = cJSON_PrintUnformatted(np);
        cJSON_Delete(np);
        rc = text && (!decision || nt) ? 0 : err_set(err, ENOMEM, "session");
        if (rc == 0 && store_leases(srv->store) && epoch == 0) {
                /* An answer (approve, input) at any replica: applied once.  The
                 * change is conditional on the session still paused as the
                 * caller saw it (the question it answers), and this replica
                 * takes its lease: it runs it. */
                const struct store_session *as = seen ? seen : &rec;
                bool paused = strcmp(as->status, "awaitingapproval") == 0 || strcmp(as->status, "awaitinginput") == 0;
                int c = paused ? store_session_resume_claim(srv->store, id, as->status, as->pending, text, &epoch, err)
                               : 1;
                if (c > 0)
                        rc = err_setc(err, STORE_E_CONFLICT, 0,
                                      "session %s was answered meanwhile (through another request or replica): it is "
                                      "no longer %s with that question",
                                      id, rec.status);
                else if (c < 0)
                        rc = -1;
                if (rc == 0)
                        rc = store_fence(srv->store, id, epoch, err);
                if (rc == 0 && nt)
                        rc = store_journal_append(srv->store, id, nt, false, err);
        } else if (rc == 0) {
                /* SQLite (one server), or a session this replica took over. */
                if (epoch)
                        rc = store_fence(srv->store, id, epoch, err);
                if (rc == 0 && nt)
                        rc = store_journal_append(srv->store, id, nt, false, err);
                if (rc == 0)
                        rc = store_session_set_pending(srv->store, id, text, err);
                if (rc == 0)
                        rc = store_session_update(srv->store, id, "queued", NULL, NULL, -1, NULL, err);
        }
        free(text);
        free(nt);
        cJSON *input = rc == 0 ? json_cjson_raw((struct json_span){ rec.input, strlen(rec.input) }) : NULL;
        struct policy *profile = NULL;
        if (rc == 0 && rec.policy_profile &&
            policy_profile(rec.policy_profile, "session policy_profile", &profile, NULL) < 0)
                policy_profile("untrusted", "session policy_profile (the stored name no longer resolves)", &profile,
                               NULL);
        if (rc == 0 && !input)
                rc = err_set(err, ENOMEM, "session");
        if (rc == 0)
                rc = sessions_create(srv, id, rec.tenant, input, profile, epoch, err);
        else
                policy_free(profile);
        if (rc < 0 && epoch)
                store_unfence(srv->store, id);
        store_session_clear(&rec);
        return rc;
}

bool sessions_can_queue(const struct server *srv)
{
        return srv->running < srv->cfg.max_running || srv->queued < srv->cfg.max_queued;
}

int sessions_cancel(struct server *srv, struct live *l, const char *why)
{
        if (l->queued) {
                l->queued = false;
                srv->queued--;
                if (!l->deleted)
                        store_session_update(srv->store, l->id, "cancelled", NULL,
                                             "{\"name\":\"Cancelled\",\"message\":\"cancelled before it started\"}",
                                             130, NULL, NULL);
                if (!l->deleted)
                        emit_session(srv, l->id, "done");
                srv->stats.runs[RUN_CANCELLED]++;
                live_unlink(srv, l);
                waiters_wake(srv, l->id);
                live_free(l);
                return 0;
        }
        if (l->s && !l->ended)
                session_cancel(l->s, why);
        return 0;
}

/* At start: sessions a previous server left queued are queued again;
 * sessions it left running are resumed by replay. */
struct recover {
        struct server *srv;
        unsigned requeued, failed;
        uint64_t epoch;       /* leases: the one just taken */
};

static int recover_queued(void *arg, const char *id)
{
        struct recover *r = arg;
        struct store_session s = { 0 };
        if (store_session_get(r->srv->store, id, &s, NULL) != 0)
                return 0;
        cJSON *input = json_cjson_raw((struct json_span){ s.input, strlen(s.input) });
        struct policy *profile = NULL;
        if (s.policy_profile && policy_profile(s.policy_profile, "session policy_profile", &profile, NULL) < 0)
                policy_profile("untrusted", "session policy_profile (the stored name no longer resolves)", &profile,
                               NULL);
        if (input && sessions_create(r->srv, id, s.tenant, input, profile, r->epoch, NULL) == 0)
                r->requeued++;
        store_session_clear(&s);
        return 0;
}

/* A session the server was running when it stopped: resumed by replay of
 * its journal (an effect in flight then is answered "interrupted by server
 * restart", not performed again). */
static int recover_running(void *arg, const char *id)
{
        struct recover *r = arg;
        struct err *err = NULL;
        if (sessions_find(r->srv, id))
                return 0; /* queued a moment ago (recover_queued) and started */
        if (sessions_resume(r->srv, id, NULL, NULL, NULL, r->epoch, &err) < 0) {
                fprintf(stderr, "chidori: serve: session %s cannot be resumed: %s\n", id, err_msg(err));
                err_free(err);
                store_session_update(r->srv->store, id, "failed", NULL,
                                     "{\"name\":\"ServerRestart\",\"message\":\"interrupted by server restart, and "
                                     "it could not be resumed\"}",
                                     70, NULL, NULL);
        }
        r->failed++;
        return 0;
}

/* ---- leases (several replicas on one PostgreSQL store) ---- */

void sessions_lease_lost(struct live *l, const char *why)
{
        if (!l->lease_lost)
                fprintf(stderr, "chidori: serve: session %s: %s; its worker is stopped\n", l->id, why);
        l->lease_lost = true;
        l->deleted = true; /* nothing more is recorded for it here */
}

/* A session this replica just took (its lease): queued again, or resumed
 * by replay when it was running (the effect in flight on the replica
 * that died is answered "interrupted", never performed twice). */
static int adopt(void *arg, const struct store_lease *ls)
{
        struct recover *r = arg;
        if (sessions_find(r->srv, ls->id))
                return 0;
        r->epoch = ls->epoch;
        if (strcmp(ls->status, "queued") == 0)
                recover_queued(r, ls->id);
        else
                recover_running(r, ls->id);
        r->epoch = 0;
        return 0;
}

struct renew {
        struct server *srv;
        struct recover orphans;
};

/* A lease of this replica, renewed: its session still runs here (and a
 * cancellation asked elsewhere reaches it), or it is an orphan (its run
 * ended while the database could not record it): resumed by replay. */
static int renewed(void *arg, const struct store_lease *ls)
{
        struct renew *rn = arg;
        struct live *l = sessions_find(rn->srv, ls->id);
        if (l && l->epoch == ls->epoch) {
                l->renewed = rn->srv->renew_gen;
                if (ls->cancel && !l->deleted && !l->lease_stopping) {
                        if (!l->queued)
                                l->lease_stopping = true; /* asked once */
                        sessions_cancel(rn->srv, l, ls->cancel);
                }
                return 0;
        }
        if (!l && !rn->srv->draining)
                adopt(&rn->orphans, ls);
        return 0;
}

static unsigned free_slots(const struct server *srv)
{
        unsigned cap = srv->cfg.max_running + srv->cfg.max_queued, used = srv->running + srv->queued;
        return used >= cap ? 0 : cap - used > 32 ? 32 : cap - used;
}

void sessions_lease_tick(struct server *srv)
{
        struct store *st = srv->store;
        if (!store_leases(st))
                return;
        struct err *err = NULL;
        double now = mono_ms();
        /* The database does not answer: a retry every 2 s (a reconnection
         * may block the server's thread up to libpq's connect_timeout). */
        if (now < srv->lease_retry_at)
                return;
        if (now - srv->renewed_at >= srv->cfg.lease_ms / 3.0) {
                srv->renew_gen++;
                struct renew rn = { .srv = srv, .orphans = { .srv = srv } };
                if (store_lease_renew(st, renewed, &rn, &err) < 0) {
                        if (!srv->lease_failing)
                                fprintf(stderr, "chidori: serve: renew the leases: %s (retried every 2 s)\n",
                                        err_msg(err));
                        srv->lease_failing = true;
                        srv->lease_retry_at = now + 2000.0;
                        err_free(err);
                        return;
                } else {
                        if (srv->lease_failing)
                                fprintf(stderr, "chidori: serve: the leases are renewed again\n");
                        srv->lease_failing = false;
                        srv->renewed_at = now;
                        if (rn.orphans.requeued || rn.orphans.failed)
                                fprintf(stderr,
                                        "chidori: serve: the store answers again: %u session(s) resumed by replay, %u "
                                        "queued again (their end or start could not be recorded)\n",
                                        rn.orphans.failed, rn.orphans.requeued);
                        /* A session run here whose lease is not this replica's
                         * any more (taken over after it expired, deleted). */
                        for (struct live *l = srv->live; l; l = l->next)
                                if (l->epoch && l->renewed != srv->renew_gen && !l->lease_lost)
                                        sessions_lease_lost(l, "this replica lost its lease (it expired and another "
                                                               "replica took the session over, or the session was "
                                                               "deleted)");
                }
        }
        /* Stop what lost its lease: a queued one leaves the queue. */
        for (bool again = true; again;) {
                again = false;
                for (struct live *l = srv->live; l; l = l->next)
                        if (l->lease_lost && (l->queued || (l->s && !l->ended && !l->lease_stopping))) {
                                if (!l->queued)
                                        l->lease_stopping = true;
                                sessions_cancel(srv, l, "this replica lost the session's lease");
                                again = true;
                                break;
                        }
        }
        if (!srv->draining) {
                struct recover r = { .srv = srv };
                if (store_lease_claim(st, false, free_slots(srv), adopt, &r, &err) < 0) {
                        fprintf(stderr, "chidori: serve: take over sessions: %s\n", err_msg(err));
                        err_free(err);
                        err = NULL;
                } else if (r.requeued || r.failed) {
                        fprintf(stderr,
                                "chidori: serve: took over %u queued and %u running session(s) whose replica's lease "
                                "expired (running ones resumed by replay)\n",
                                r.requeued, r.failed);
                }
        }
        waiters_poll(srv);
        events_poll(srv);
}

int sessions_recover(struct server *srv, unsigned *ret_requeued, unsigned *ret_failed, struct err **err)
{
        struct recover r = { srv, 0, 0, 0 };
        if (store_leases(srv->store)) {
                /* Several replicas: only what no live replica owns (and, with a
                 * stable --replica-id, what this one owned before). */
                unsigned max = srv->cfg.max_running + srv->cfg.max_queued;
                if (store_lease_claim(srv->store, true, max ? max : 1, adopt, &r, err) < 0)
                        return -1;
                *ret_requeued = r.requeued;
                *ret_failed = r.failed;
                return 0;
        }
        if (store_session_ids(srv->store, "queued", recover_queued, &r, err) < 0 ||
            store_session_ids(srv->store, "running", recover_running, &r, err) < 0)
                return -1;
        *ret_requeued = r.requeued;
        *ret_failed = r.failed;
        return 0;
}

void sessions_free_all(struct server *srv)
{
        evloop_defer_cancel(srv->loop, on_freed, srv);
        srv->free_deferred = false;
        while (srv->live) {
                struct live *l = srv->live;
                srv->live = l->next;
                l->shutting = true;
                if (l->s && !l->ended) {
                        l->deleted = true; /* nothing more is recorded */
                        session_cancel(l->s, "the server stopped");
                }
                live_free(l);
        }
        while (srv->dead) {
                struct live *l = srv->dead;
                srv->dead = l->next;
                live_free(l);
        }
}

/* ---- time to live ---- */

/* now - secs, RFC 3339 as updated_at is written. */
static void iso_ago(unsigned secs, char out[96])
{
        struct timeval tv;
        gettimeofday(&tv, NULL);
        time_t t = tv.tv_sec - (time_t)secs;
        struct tm tm;
        gmtime_r(&t, &tm);
        snprintf(out, 96, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                 tm.tm_hour, tm.tm_min, tm.tm_sec, (int)(tv.tv_usec / 1000));
}

static int expire_approval(void *arg, const char *id)
{
        struct server *srv = arg;
        if (sessions_find(srv, id) || srv->draining)
                return 0;
        struct store_session rec = { 0 };
        if (store_session_get(srv->store, id, &rec, NULL) != 0)
                return 0;
        cJSON *p = rec.pending ? cJSON_Parse(rec.pending) : NULL;
        const cJSON *a = cJSON_GetObjectItemCaseSensitive(p, "approval");
        const cJSON *t = cJSON_GetObjectItemCaseSensitive(a, "target");
        const cJSON *at = cJSON_GetObjectItemCaseSensitive(a, "args_text");
        if (cJSON_IsString(t) && cJSON_IsString(at)) {
                cJSON *dec = cJSON_CreateObject();
                cJSON_AddStringToObject(dec, "target", t->valuestring);
                cJSON_AddStringToObject(dec, "args", at->valuestring);
                cJSON_AddBoolToObject(dec, "allow", false);
                cJSON_AddStringToObject(dec, "who", "nobody: it expired (--approval-ttl)");
                struct err *err = NULL;
                /* A conflict: another replica answered (or expired) it first. */
                if (sessions_resume(srv, id, dec, NULL, &rec, 0, &err) < 0 && err_code(err) != STORE_E_CONFLICT)
                        fprintf(stderr, "chidori: serve: session %s: expire its approval: %s\n", id, err_msg(err));
                err_free(err);
        }
        cJSON_Delete(p);
        store_session_clear(&rec);
        return 0;
}

/* The namespace first: if it cannot be cleared, the session is still there
 * and a retry of the DELETE does both. */
int sessions_delete(struct server *srv, const char *id, struct err **err)
{
        if (!srv->run.shared_memory && srv->run.mem) {
                char *ns = NULL;
                if (asprintf(&ns, "%s#%s", srv->run.agent_abspath, id) < 0)
                        return err_set(err, ENOMEM, "session %s: its memory namespace", id);
                int r = memstore_clear(srv->run.mem, ns, NULL, err);
                free(ns);
                if (r < 0)
                        return -1;
        }
        return store_session_delete(srv->store, id, err);
}

static int expire_session(void *arg, const char *id)
{
        struct server *srv = arg;
        if (sessions_find(srv, id))
                return 0;
        struct err *err = NULL;
        if (sessions_delete(srv, id, &err) < 0) {
                fprintf(stderr, "chidori: serve: session %s: delete past --session-ttl: %s\n", id, err_msg(err));
                err_free(err);
        }
        return 0;
}

void sessions_sweep(struct server *srv)
{
        char before[96];
        struct err *err = NULL;
        /* The database is back after an outage: a session whose run ended
         * while it could not be recorded is still `running` there with no
         * run here: resumed by replay, as at a restart. */
        if (!store_leases(srv->store) && store_recovered(srv->store) && !srv->draining) {
                struct recover r = { .srv = srv };
                if (store_session_ids(srv->store, "running", recover_running, &r, &err) < 0) {
                        fprintf(stderr, "chidori: serve: %s\n", err_msg(err));
                        err_free(err);
                        err = NULL;
                } else if (r.failed) {
                        fprintf(stderr, "chidori: serve: the store answers again: %u session(s) resumed by replay\n",
                                r.failed);
                }
        }
        if (srv->cfg.approval_ttl_s && !srv->draining) {
                iso_ago(srv->cfg.approval_ttl_s, before);
                if (store_session_ids_before(srv->store, "awaitingapproval", before, expire_approval, srv, &err) < 0) {
                        fprintf(stderr, "chidori: serve: %s\n", err_msg(err));
                        err_free(err);
                        err = NULL;
                }
        }
        if (srv->cfg.session_ttl_s) {
                iso_ago(srv->cfg.session_ttl_s, before);
                static const char *const finished[] = { "done", "failed", "cancelled" };
                for (size_t i = 0; i < 3; i++)
                        if (store_session_ids_before(srv->store, finished[i], before, expire_session, srv, &err) < 0) {
                                fprintf(stderr, "chidori: serve: %s\n", err_msg(err));
                                err_free(err);
                                err = NULL;
                        }
        }
}
