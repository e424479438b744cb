/* broker/nested.c — callAgent as a second session in the broker (nested.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "broker/bundle.h"
#include "broker/config.h"
#include "cli/bundle.h"
#include "cli/cli.h"
#include "broker/nested.h"
#include "broker/provider.h"
#include "common/text.h"
#include "common/util.h"
#include "effects/proc/proc.h"
#include "policy/policy.h"
#include "proto/json.h"
#include "runtime/evloop.h"
#include "runtime/journal.h"
#include "runtime/outcome.h"
#include "runtime/runtime-internal.h"
#include "sandbox/seccomp.h"

#define NESTED_AGENT_MAX (16u << 20)

struct nested_run {
        struct nested_run *next;
        struct nested_ctx *x;
        struct broker *caller;           /* NULL once the caller has gone */
        int64_t id;                      /* the caller's call */
        char *path;                      /* as the agent wrote it (messages, the note) */
        char *abs;                       /* the callee's path, lexically beneath the caller's folder */
        char *dir;                       /* its folder: its own callees are beneath it */
        char *layers_text;               /* CHIDORI_POLICY_LAYERS of the nested run */
        struct policy *layer;            /* the stricter layer asked for (owned), or NULL */
        const struct policy **layers;    /* the caller's layers + layer, NULL-terminated */
        cJSON *input;
        char *script;
        bool esm;                        /* the script is a bundle (an ES module or TypeScript callee) */
        struct sourcemap *map;           /* the bundle's source map, or NULL */
        char run_id[40];
        char tag[320];                   /* "[path] ", escaped */
        uint64_t open_req;
        bool opening;
        int jcopy;                       /* the journal memfd, read back at the end; -1: none */
        struct journal *journal;
        struct session_config cfg;
        struct session_sink sink;
        struct session *s;
};

/* The file name of an absolute path. */
static const char *nested_base(const char *abs)
{
        const char *slash = strrchr(abs, '/');
        return slash ? slash + 1 : abs;
}

static void finish(struct evloop *loop, void *arg);

static void run_free(struct nested_run *n)
{
        if (n->opening)
                chan_boxes_open_cancel(n->x->cb, n->open_req);
        evloop_defer_cancel(n->x->loop, finish, n); /* a finish not run yet */
        session_free(n->s);
        journal_close(n->journal);
        if (n->jcopy >= 0)
                close(n->jcopy);
        policy_free(n->layer);
        free(n->layers);
        free(n->layers_text);
        cJSON_Delete(n->input);
        free(n->script);
        sourcemap_free(n->map);
        free(n->path);
        free(n->abs);
        free(n->dir);
        free(n);
}

static void unlink_run(struct nested_ctx *x, struct nested_run *n)
{
        for (struct nested_run **p = &x->runs; *p; p = &(*p)->next)
                if (*p == n) {
                        *p = n->next;
                        return;
                }
}

/* Answer the caller's call with an Error (code NULL or "EAGENT"); the run
 * is over. */
static void fail_run(struct nested_run *n, const char *code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void fail_run(struct nested_run *n, const char *code, const char *fmt, ...)
{
        char msg[1024];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        struct broker *caller = n->caller;
        unlink_run(n->x, n);
        if (caller) {
                caller->nnested--;
                broker_complete(caller, n->id, NULL, broker_error_obj("Error", msg, code));
        }
        run_free(n);
}

/* `p` (absolute) with "//", "." and ".." resolved lexically (no symlink
 * is followed: OPEN_AGENT_FILE's RESOLVE_BENEATH walks the real one). */
static char *normalize(const char *p)
{
        size_t o = 0;
        char *out = malloc(strlen(p) + 2);
        if (!out)
                return NULL;
        for (const char *s = p; *s;) {
                while (*s == '/')
                        s++;
                size_t len = strcspn(s, "/");
                if (len == 0)
                        break;
                if (len == 2 && s[0] == '.' && s[1] == '.') {
                        while (o > 0 && out[o - 1] != '/')
                                o--;
                        if (o > 0)
                                o--;
                } else if (!(len == 1 && s[0] == '.')) {
                        out[o++] = '/';
                        memcpy(out + o, s, len);
                        o += len;
                }
                s += len;
        }
        if (o == 0)
                out[o++] = '/';
        out[o] = '\0';
        return out;
}

/* `child` is strictly below `dir` (both normalized). */
static bool beneath(const char *dir, const char *child)
{
        size_t dl = strlen(dir);
        if (strcmp(dir, "/") == 0)
                return child[0] == '/' && child[1] != '\0';
        return strncmp(child, dir, dl) == 0 && child[dl] == '/' && child[dl + 1] != '\0';
}

char *nested_agent_folder(const char *dir, const char *rel)
{
        char *joined = NULL;
        if (asprintf(&joined, "%s/%s", dir, rel) < 0)
                return NULL;
        char *n = normalize(joined);
        free(joined);
        if (!n)
                return NULL;
        char *slash = strrchr(n, '/');
        if (slash == n)
                n[1] = '\0';
        else
                *slash = '\0';
        return n;
}

/* ---- the nested session's sink: its lines under the callee's name ---- */

static void on_log(void *arg, struct session *s, const char *tag, const char *msg, size_t len)
{
        (void)s;
        struct nested_run *n = arg;
        if (!n->caller)
                return;
        char t[400];
        snprintf(t, sizeof(t), "%s%s", n->tag, tag);
        broker_sink_log(n->caller, t, msg, len);
}

static void on_note(void *arg, struct session *s, const char *tag, const char *msg, size_t len)
{
        (void)s;
        struct nested_run *n = arg;
        char t[400], *copy = n->caller ? strndup(msg, len) : NULL;
        if (!copy)
                return;
        snprintf(t, sizeof(t), "%s%s", n->tag, tag);
        broker_sink_note(n->caller, t, copy);
        free(copy);
}

/* The journal as the nested run wrote it, from its memfd. */
static char *journal_text(struct nested_run *n)
{
        if (n->jcopy < 0 || lseek(n->jcopy, 0, SEEK_SET) < 0)
                return NULL;
        char *text = NULL;
        size_t len = 0;
        if (read_fd(n->jcopy, "the nested journal", (size_t)NESTED_JOURNAL_MAX + 4096, &text, &len, NULL) < 0)
                return NULL;
        return text;
}

/* The nested session has ended: its journal into the caller's, its value
 * or error as the call's answer (agent-call.c's shapes), then it goes. */
/* "agent error: Name: message (at file:line:col)" and the stack, one note
 * a frame, as the nested `chidori run` of the one-process path prints them:
 * a bundled callee's error placed in its own files first (its source map). */
static void agent_error_note(struct nested_run *n, struct broker *caller, cJSON *error, const char *tag)
{
        struct err *me = NULL;
        if (n->map && sourcemap_map_error(n->map, nested_base(n->abs), error, &me) < 0) {
                char w[1200];
                snprintf(w, sizeof(w), "warning: %s; error positions point into the bundle", err_msg(me));
                broker_sink_note(caller, tag, w);
                err_free(me);
        }
        const char *name = broker_arg_str(error, "name"), *m = broker_arg_str(error, "message");
        const char *file = broker_arg_str(error, "file"), *stack = broker_arg_str(error, "stack");
        const cJSON *ln = cJSON_GetObjectItemCaseSensitive(error, "line");
        const cJSON *col = cJSON_GetObjectItemCaseSensitive(error, "column");
        char where[400] = "", line[1024];
        if (file && cJSON_IsNumber(ln) && cJSON_IsNumber(col))
                snprintf(where, sizeof(where), " (at %.300s:%d:%d)", file, ln->valueint, col->valueint);
        else if (file && cJSON_IsNumber(ln))
                snprintf(where, sizeof(where), " (at %.300s:%d)", file, ln->valueint);
        snprintf(line, sizeof(line), "agent error: %.100s: %.500s%s", name ? name : "Error", m ? m : "", where);
        broker_sink_note(caller, tag, line);
        for (const char *p = stack ? stack : ""; *p;) {
                const char *nl = strchr(p, '\n');
                size_t len = nl ? (size_t)(nl - p) : strlen(p);
                if (len) {
                        snprintf(line, sizeof(line), "    at %.*s", (int)(len > 900 ? 900 : len), p);
                        broker_sink_note(caller, n->tag, line);
                }
                p += len + (nl ? 1 : 0);
        }
}

static void finish(struct evloop *loop, void *arg)
{
        (void)loop;
        struct nested_run *n = arg;
        struct nested_ctx *x = n->x;
        struct broker *caller = n->caller;
        unlink_run(x, n);
        if (!caller) {
                run_free(n);
                return;
        }
        struct session_outcome *o = session_outcome(n->s);
        struct outcome_context oc = {
                .js_deadline_ms = n->cfg.js_deadline_ms,
                .cpu_secs = x->cpu_secs,
                .stop_signal = x->stop ? (int)*x->stop : 0,
                .syscall_name = seccomp_syscall_name,
        };
        struct outcome_exit r;
        session_outcome_exit(o, &oc, &r);
        if (n->journal) {
                cJSON *e = session_outcome_end_line(o, NULL, r.code);
                if (e)
                        journal_file_ops.end(n->journal, e, NULL);
                cJSON_Delete(e);
                char *text = journal_text(n);
                proc_nested_note(caller, n->id, text, n->path);
                free(text);
        }
        caller->nnested--;
        char msg[1024];
        const char *p = n->path;
        if (r.show == OUTCOME_SHOW_VALUE) {
                cJSON *v = o->value; /* the worker's text, as it wrote it */
                o->value = NULL;
                int64_t id = n->id;
                run_free(n);
                broker_complete(caller, id, v ? v : cJSON_CreateNull(), NULL);
                return;
        }
        /* What the nested `chidori run` printed on its stderr, under the
         * callee's name as before: how it ended. */
        char line[1024], tag[400];
        snprintf(tag, sizeof(tag), "%schidori: ", n->tag);
        if (r.show == OUTCOME_SHOW_AGENT_ERROR) {
                agent_error_note(n, caller, o->error, tag);
        } else {
                snprintf(line, sizeof(line), "%.1000s", o->end == SESSION_END_SPAWN && o->message ? o->message : r.message);
                broker_sink_note(caller, tag, line);
        }
        if (r.show == OUTCOME_SHOW_AGENT_ERROR) {
                const char *name = broker_arg_str(o->error, "name"), *m = broker_arg_str(o->error, "message");
                snprintf(msg, sizeof(msg), "callAgent %.200s failed: %s%s%.600s", p, name ? name : "",
                         name ? ": " : "", m ? m : "");
        } else if (r.show == OUTCOME_SHOW_LIMIT) {
                snprintf(msg, sizeof(msg), "callAgent %.200s failed: Error: %.600s", p, r.message);
        } else if (o->end == SESSION_END_SPAWN) {
                snprintf(msg, sizeof(msg), "callAgent %.200s: the nested run ended with status %d: %.600s", p,
                         o->spawn_layer ? 78 : 70, o->message ? o->message : "");
        } else {
                snprintf(msg, sizeof(msg), "callAgent %.200s failed: %.600s", p, r.message);
        }
        int64_t id = n->id;
        run_free(n);
        broker_complete(caller, id, NULL, broker_error_obj("Error", msg, "EAGENT"));
}

static void on_ended(void *arg, struct session *s)
{
        (void)s;
        struct nested_run *n = arg;
        struct err *e = NULL;
        if (evloop_defer(n->x->loop, finish, n, &e) < 0) {
                err_free(e);
                if (n->caller) /* cannot be answered later: the caller's run fails */
                        broker_end_with(n->caller, SESSION_END_PARENT, "callAgent %s: out of memory", n->path);
                n->caller = NULL;
        }
}


/* The nested session: the caller's configuration, narrowed. */
static int start_session(struct nested_run *n, struct err **err)
{
        struct broker *caller = n->caller;
        struct nested_ctx *x = n->x;
        const char *slash = strrchr(n->abs, '/');
        unsigned char rnd[8];
        if (getrandom(rnd, sizeof(rnd), 0) != sizeof(rnd))
                memset(rnd, 0, sizeof(rnd));
        snprintf(n->run_id, sizeof(n->run_id), "run-%02x%02x%02x%02x%02x%02x%02x%02x", rnd[0], rnd[1], rnd[2],
                 rnd[3], rnd[4], rnd[5], rnd[6], rnd[7]);
        n->cfg = *caller->cfg;
        struct session_config *c = &n->cfg;
        c->script = n->script;
        c->filename = slash + 1;
        c->esm = n->esm;
        c->input = n->input;
        c->env = NULL;           /* process.env is the top run's */
        c->run_id = n->run_id;
        c->mem_ns = n->abs;      /* a nested run's namespace: its own path */
        c->answers = NULL;
        c->secrets = NULL;       /* a callee is not handed the caller's secrets (docs/secrets.md) */
        c->can_input = c->can_approve = false; /* no terminal: ask_before refuses, input() fails */
        c->mode = SESSION_LIVE;
        c->replay = (struct session_replay){ 0 };
        c->quiet_logs = false;
        c->deadline_from = 0;
        c->deadline_ms = 0;
        if (caller->deadline_at > 0) {
                double left = caller->deadline_at - mono_ms();
                c->deadline_ms = left < 1 ? 1 : (long)left;
        }
        c->agent_dir = n->dir;
        c->agent_depth = caller->cfg->agent_depth + 1;
        c->policy_layers = n->layers_text;
        c->layers = n->layers;
        c->journal = (struct session_journal){ 0 };
        if (caller->cfg->journal.ops) {
                int fd = memfd_create("chidori-nested-journal", MFD_CLOEXEC);
                if (fd < 0)
                        return err_set(err, errno, "a journal for the nested run");
                n->jcopy = fcntl(fd, F_DUPFD_CLOEXEC, 3);
                if (n->jcopy < 0) {
                        close(fd);
                        return err_set(err, errno, "a journal for the nested run");
                }
                if (journal_open_fd(fd, "the nested journal", &n->journal, err) < 0)
                        return -1;
                char sha[65];
                broker_journal_header(n->journal, n->run_id, n->abs, nested_base(n->abs), n->abs, x->tz, x->virtual_time, n->input, NULL,
                                      n->script, sha);
                c->journal = (struct session_journal){ &journal_file_ops, n->journal };
                if (!c->limits.max_journal || c->limits.max_journal > NESTED_JOURNAL_MAX)
                        c->limits.max_journal = NESTED_JOURNAL_MAX;
        }
        n->sink = (struct session_sink){ .log = on_log, .note = on_note, .ended = on_ended, .arg = n };
        if (session_new(x->loop, c, &n->sink, x->boxes ? x->boxes : &x->cb->provider, &n->s, err) < 0)
                return -1;
        return session_start(n->s, err);
}

/* The callee's source, bundled if it is a module (broker/bundle.c: esbuild
 * in a box over the agent folder), as the top agent is.  The bundle is
 * made while the loop waits: messages for others are kept for it. */
static int bundle_callee(struct nested_run *n, size_t len, struct err **err)
{
        struct nested_ctx *x = n->x;
        struct agent a = { 0 };
        a.source = n->script;
        a.source_len = len;
        n->script = NULL;
        a.path = strdup(n->path);
        a.abspath = strdup(n->abs);
        a.filename = strdup(nested_base(n->abs));
        long left = 0;
        if (n->caller && n->caller->deadline_at > 0) {
                double d = n->caller->deadline_at - mono_ms();
                left = d < 1 ? 1 : (long)d;
        }
        const char *rel = strcmp(x->top_dir, "/") == 0 ? n->abs + 1 : n->abs + strlen(x->top_dir) + 1;
        struct broker_bundler bb = { .chan = x->cb->chan, .agent_dir = x->top_dir, .esbuild = x->esbuild,
                                     .deadline_ms = left, .stop = x->stop, .defer_to = x->cb };
        int r = !a.path || !a.abspath || !a.filename ? err_set(err, ENOMEM, "callAgent")
                                                       : broker_bundle_loaded(&bb, rel, &a, err);
        if (r == 0) {
                n->script = strdup(a.script);
                n->esm = a.esm;
                n->map = a.map; /* its errors are placed in the callee's own files */
                a.map = NULL;
                if (!n->script)
                        r = err_set(err, ENOMEM, "callAgent");
        }
        agent_free(&a);
        return r;
}

/* OPENED: read the callee and start its session. */
static void on_opened(void *arg, int fd, int errnum)
{
        struct nested_run *n = arg;
        n->opening = false;
        if (fd < 0) {
                if (errnum == EXDEV || errnum == ELOOP || errnum == EINVAL)
                        fail_run(n, NULL, "callAgent %s: the agent must be a file inside the calling agent's folder",
                                 n->path);
                else
                        fail_run(n, NULL, "callAgent %s: cannot open the agent: %s", n->path, strerror(errnum));
                return;
        }
        size_t len = 0;
        struct err *e = NULL;
        int r = read_fd(fd, n->path, NESTED_AGENT_MAX, &n->script, &len, &e);
        close(fd);
        if (r == 0 && bundle_callee(n, len, &e) < 0) {
                fail_run(n, "EAGENT", "callAgent %s failed: %s", n->path, err_msg(e));
                err_free(e);
                return;
        }
        if (r < 0 || start_session(n, &e) < 0) {
                fail_run(n, r < 0 ? NULL : "EAGENT", "callAgent %s: %s", n->path, err_msg(e));
                err_free(e);
        }
}

static int start(void *arg, struct broker *caller, int64_t id, const char *path, const char *layer,
                 const char *input_json, struct err **err)
{
        struct nested_ctx *x = arg;
        const char *base = caller->cfg->agent_dir;
        if (!base)
                return err_set(err, 0, "callAgent: not available here (no agent folder)");
        struct nested_run *n = calloc(1, sizeof(*n));
        if (!n)
                return err_set(err, ENOMEM, "callAgent");
        n->x = x;
        n->caller = caller;
        n->id = id;
        n->jcopy = -1;
        char *joined = NULL;
        if (asprintf(&joined, "%s/%s", path[0] == '/' ? "" : base, path) < 0)
                joined = NULL;
        n->path = strdup(path);
        n->abs = joined ? normalize(joined) : NULL;
        free(joined);
        if (!n->path || !n->abs) {
                run_free(n);
                return err_set(err, ENOMEM, "callAgent");
        }
        /* The rule of the one-process path (agent-call.c resolve_callee):
         * beneath the caller's folder; its folder is not for the agent (it
         * would learn where it lives on the host). */
        if (!beneath(base, n->abs) || !beneath(x->top_dir, n->abs)) {
                run_free(n);
                return err_set(err, 0, "callAgent %s: the agent must be a file inside the calling agent's folder",
                               path);
        }
        char *slash = strrchr(n->abs, '/');
        n->dir = slash == n->abs ? strdup("/") : strndup(n->abs, (size_t)(slash - n->abs));
        const char *prev = caller->cfg->policy_layers;
        if (asprintf(&n->layers_text, "%s%s%s", prev ? prev : "", prev && *prev && layer ? "," : "",
                     layer ? layer : "") < 0)
                n->layers_text = NULL;
        size_t nl = 0;
        while (caller->cfg->layers && caller->cfg->layers[nl])
                nl++;
        n->layers = calloc(nl + 2, sizeof(*n->layers));
        n->input = json_cjson_raw((struct json_span){ input_json, strlen(input_json) });
        if (!n->dir || !n->layers_text || !n->layers || !n->input) {
                run_free(n);
                return err_set(err, ENOMEM, "callAgent");
        }
        for (size_t i = 0; i < nl; i++)
                n->layers[i] = caller->cfg->layers[i];
        if (layer && policy_profile(layer, "callAgent options.policy", &n->layer, err) < 0) {
                run_free(n);
                return -1;
        }
        n->layers[nl] = n->layer;
        char name[300];
        snprintf(n->tag, sizeof(n->tag), "[%s] ", text_term(path, strlen(path), name, sizeof(name)));
        const char *rel = strcmp(x->top_dir, "/") == 0 ? n->abs + 1 : n->abs + strlen(x->top_dir) + 1;
        if (chan_boxes_open_async(x->cb, rel, on_opened, n, &n->open_req, err) < 0) {
                run_free(n);
                return err_wrap(err, "callAgent %s", path);
        }
        n->opening = true;
        n->next = x->runs;
        x->runs = n;
        return 0;
}

/* The caller is going away: its nested runs end now, unanswered.  One
 * whose box may still be running is cancelled, and freed when it has ended
 * (finish): the provider's events for its box come later (BOX_ENDED over
 * the channel), to a session that must still be there. */
static void stop(void *arg, struct broker *caller)
{
        struct nested_ctx *x = arg;
        for (struct nested_run **p = &x->runs; *p;) {
                struct nested_run *n = *p;
                if (n->caller != caller) {
                        p = &n->next;
                        continue;
                }
                n->caller = NULL;
                if (n->s) {
                        session_cancel(n->s, "the calling agent's run ended");
                        p = &x->runs; /* the list may have changed below us */
                        continue;
                }
                *p = n->next;
                run_free(n); /* still opening its file: nothing runs */
                p = &x->runs;
        }
}

/* call.cancel of one nested run (options.signal): as stop, for that call. */
static void cancel(void *arg, struct broker *caller, int64_t id)
{
        struct nested_ctx *x = arg;
        for (struct nested_run **p = &x->runs; *p; p = &(*p)->next) {
                struct nested_run *n = *p;
                if (n->caller != caller || n->id != id)
                        continue;
                n->caller = NULL;
                caller->nnested--;
                if (n->s) {
                        session_cancel(n->s, "the calling agent gave the call up");
                } else {
                        *p = n->next;
                        run_free(n); /* still opening its file: nothing runs */
                }
                return;
        }
}

void nested_init(struct nested_ctx *x, struct chan_boxes *cb, struct evloop *loop, const char *top_dir,
                 unsigned max_nested)
{
        *x = (struct nested_ctx){ .cb = cb, .loop = loop, .top_dir = top_dir };
        x->hook = (struct session_nested){ .start = start, .stop = stop, .cancel = cancel, .max_nested = max_nested,
                                           .arg = x };
}

void nested_free(struct nested_ctx *x)
{
        while (x->runs) {
                struct nested_run *n = x->runs;
                x->runs = n->next;
                n->caller = NULL;
                run_free(n);
        }
}
