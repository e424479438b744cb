/* effects/proc/agent-call.c — the `agent.call` effect (callAgent): another
 * agent in a fresh box, this chidori binary running `run` again.  What every
 * child shares (environment, cgroup place, caps): effects/proc/proc.c.
 *
 * The callee must be a file inside the calling agent's folder (the same
 * rule as bundling); it runs with the caller's sandbox options, grants and
 * policy sources, the deadline left, plus the stricter policy the caller may
 * ask for, and one level deeper (at most BROKER_AGENT_DEPTH_MAX).  The policy
 * gate sees it as `agent:<path as written>` before this file does.  Its
 * journal is copied into ours as a "nested" note; its result is this call's
 * value.
 */
#define _GNU_SOURCE
#include <cjson/cJSON.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/text.h"
#include "common/tmpown.h"
#include "common/util.h"
#include "effects/proc/proc.h"
#include "effects/proc/subproc.h"
#include "policy/policy.h"
#include "proto/json.h"
#include "runtime/journal.h"
#include "runtime/runtime-internal.h"

#define NESTED_OUT_MAX ((size_t)64 << 20)

/* A nested run's journal text, copied into ours as one note. */
void proc_nested_note(struct broker *b, int64_t id, const char *text, const char *callee)
{
        if (!b->cfg->journal.ops || !text)
                return;
        /* Each line as the nested run wrote it (its values exactly). */
        cJSON *lines = cJSON_CreateArray();
        for (const char *p = text, *nl; p && *p; p = nl ? nl + 1 : NULL) {
                nl = strchr(p, '\n');
                size_t n = nl ? (size_t)(nl - p) : strlen(p);
                struct json_limits lim = { .max_depth = JOURNAL_DEPTH_MAX };
                if (json_validate(p, n, &lim, NULL, NULL) == 0) {
                        cJSON *l = json_cjson_raw((struct json_span){ p, n });
                        if (l)
                                cJSON_AddItemToArray(lines, l);
                }
        }
        cJSON *note = cJSON_CreateObject();
        cJSON_AddStringToObject(note, "type", "note");
        cJSON_AddStringToObject(note, "kind", "nested");
        cJSON_AddNumberToObject(note, "id", (double)id);
        cJSON_AddStringToObject(note, "agent", callee);
        cJSON_AddItemToObject(note, "journal", lines);
        broker_journal_line(b, note, false);
        cJSON_Delete(note);
}

/* The nested run's journal file, copied into ours as one note. */
static void copy_journal(struct broker *b, int64_t id, const char *path, const char *callee)
{
        _cleanup_free_ char *text = NULL;
        size_t len = 0;
        if (!b->cfg->journal.ops || read_file(path, (size_t)256 << 20, &text, &len, NULL) < 0)
                return;
        proc_nested_note(b, id, text, callee);
}

static void on_agent_done(void *arg, uint64_t id, const struct subproc_result *res)
{
        struct broker *b = arg;
        b->nnested--;
        proc_release_place(b, (int64_t)id);
        struct pending_call *pc = broker_pending(b, (int64_t)id);
        const char *callee = pc ? broker_arg_str(pc->args, "path") : NULL;
        char *jpath = pc ? pc->scratch : NULL;
        if (!callee)
                callee = "?";
        if (jpath) {
                copy_journal(b, (int64_t)id, jpath, callee);
                unlink(jpath);
        }
        /* The nested run's stderr (its agent's logs, warnings): shown here,
         * line by line, under the callee's name. */
        if (res->err_len && !b->cfg->quiet_logs) {
                /* Escaped (the callee's name is a file name in the agent's
                 * folder, its text the nested agent's): common/text.h. */
                char tag[320], name[300];
                snprintf(tag, sizeof(tag), "[%s] ", text_term(callee, strlen(callee), name, sizeof(name)));
                broker_sink_log(b, tag, (const char *)res->err, res->err_len);
        }
        char msg[1024];
        /* Its --json document; "value" carried as the nested run printed it. */
        static const char *const raw_value[] = { "value", NULL };
        struct json_span doc = { (const char *)res->out, res->out_len };
        cJSON *out = res->out_len && json_validate(doc.p, doc.len, NULL, NULL, NULL) == 0
                             ? json_to_cjson(doc, raw_value, false)
                             : NULL;
        const cJSON *ok = cJSON_GetObjectItemCaseSensitive(out, "ok");
        if (cJSON_IsTrue(ok)) {
                cJSON *v = cJSON_DetachItemFromObjectCaseSensitive(out, "value");
                cJSON_Delete(out);
                broker_complete(b, (int64_t)id, v ? v : cJSON_CreateNull(), NULL);
                return;
        }
        if (cJSON_IsFalse(ok)) {
                const cJSON *e = cJSON_GetObjectItemCaseSensitive(out, "error");
                const char *name = broker_arg_str(e, "name"), *m = broker_arg_str(e, "message");
                snprintf(msg, sizeof(msg), "callAgent %.200s failed: %s%s%.600s", callee, name ? name : "",
                         name ? ": " : "", m ? m : "");
        } else if (res->timed_out) {
                snprintf(msg, sizeof(msg), "callAgent %.200s: deadline exceeded", callee);
        } else {
                /* No --json document: the nested chidori itself failed
                 * (usage, a layer unavailable): its last stderr line says why. */
                const char *last = "";
                _cleanup_free_ char *errtext = res->err_len ? strndup((const char *)res->err, res->err_len) : NULL;
                if (errtext) {
                        size_t n = strlen(errtext);
                        while (n && errtext[n - 1] == '\n')
                                errtext[--n] = '\0';
                        const char *nl = strrchr(errtext, '\n');
                        last = nl ? nl + 1 : errtext;
                }
                snprintf(msg, sizeof(msg), "callAgent %.200s: the nested run ended with status %d: %.600s", callee,
                         res->exited ? res->exit_code : 128 + res->signal, last);
        }
        cJSON_Delete(out);
        broker_complete(b, (int64_t)id, NULL, broker_error_obj("Error", msg, "EAGENT"));
}

/* The callee as an absolute path inside the caller's folder. */
static int resolve_callee(struct broker *b, const char *path, char **ret, struct err **err)
{
        const char *dir = b->cfg->agent_dir;
        if (!dir)
                return err_set(err, 0, "callAgent: not available here (no agent folder)");
        _cleanup_free_ char *joined = NULL;
        if (asprintf(&joined, "%s/%s", dir, path) < 0)
                return err_set(err, ENOMEM, "callAgent");
        char *real = realpath(path[0] == '/' ? path : joined, NULL);
        if (!real)
                return err_set(err, errno, "callAgent %s: cannot open the agent", path);
        size_t dl = strlen(dir);
        struct stat st;
        if (strncmp(real, dir, dl) != 0 || (real[dl] != '/' && strcmp(dir, "/") != 0) || stat(real, &st) < 0 ||
            !S_ISREG(st.st_mode)) {
                free(real);
                /* The caller's folder is the operator's path: not for the agent
                 * (it would learn where it lives on the host). */
                return err_set(err, 0, "callAgent %s: the agent must be a file inside the calling agent's folder",
                               path);
        }
        *ret = real;
        return 0;
}

/* callAgent as `chidori run` again, a subprocess of this one (the
 * one-process parent): argv and environment from the run's children, the
 * callee's journal in a temporary file copied in when it ends. */
static int start_subprocess(struct broker *b, int64_t id, const char *path, const char *layer, struct err **err)
{
        const struct broker_children *ch = b->cfg->children;
        _cleanup_free_ char *callee = NULL;
        if (resolve_callee(b, path, &callee, err) < 0)
                return -1;
        /* The input as the agent wrote it: the nested run's --input-file. */
        struct json_span raw;
        _cleanup_free_ char *in = broker_arg_raw(b, "input", &raw) == 1 ? json_compact(raw, NULL) : strdup("null");
        if (!in)
                return err_set(err, ENOMEM, "callAgent");
        char jtmpl[PATH_MAX];
        if (tmp_owned_template(jtmpl, sizeof(jtmpl), tmp_dir(), TMP_KIND_NESTED) < 0)
                return err_set(err, errno, "callAgent: journal for the nested run");
        int jfd = mkstemp(jtmpl);
        if (jfd < 0)
                return err_set(err, errno, "callAgent: journal for the nested run");
        close(jfd);

        /* argv: the run's prefix, then this call's parts. */
        size_t n = 0;
        while (ch->run_argv[n])
                n++;
        char **argv = calloc(n + 8, sizeof(*argv));
        char deadline[32];
        if (!argv) {
                unlink(jtmpl);
                return err_set(err, ENOMEM, "callAgent");
        }
        memcpy(argv, ch->run_argv, n * sizeof(*argv));
        long left = 0;
        if (b->deadline_at > 0) {
                left = (long)(b->deadline_at - mono_ms());
                if (left < 1)
                        left = 1;
                snprintf(deadline, sizeof(deadline), "%ld", left);
                argv[n++] = "--deadline";
                argv[n++] = deadline;
        }
        argv[n++] = "--input-file=/dev/stdin";
        argv[n++] = "--journal";
        argv[n++] = jtmpl;
        argv[n++] = "--";
        argv[n++] = callee;

        /* Environment: the run's (built explicitly at start), one level
         * deeper, the policy layers so far plus the one asked for, and the
         * per-call entries (die with us, the place in our cgroup). */
        size_t ne = 0;
        while (ch->run_envp[ne])
                ne++;
        char **envp = calloc(ne + 6, sizeof(*envp));
        _cleanup_free_ char *depth = NULL, *layers = NULL, *place = NULL;
        char ppid[32], *extra[3] = { NULL, NULL, NULL };
        const char *prev = b->cfg->policy_layers;
        if (!envp || asprintf(&depth, "CHIDORI_AGENT_DEPTH=%d", b->cfg->agent_depth + 1) < 0 ||
            asprintf(&layers, "CHIDORI_POLICY_LAYERS=%s%s%s", prev ? prev : "", prev && *prev && layer ? "," : "",
                     layer ? layer : "") < 0) {
                free(argv);
                free(envp);
                unlink(jtmpl);
                return err_set(err, ENOMEM, "callAgent");
        }
        if (proc_child_env(b, id, ppid, &place, extra, err) < 0) {
                free(argv);
                free(envp);
                unlink(jtmpl);
                return -1;
        }
        memcpy(envp, ch->run_envp, ne * sizeof(*envp));
        size_t k = ne;
        envp[k++] = depth;
        envp[k++] = layers;
        for (size_t i = 0; extra[i]; i++)
                envp[k++] = extra[i];
        envp[k] = NULL;

        struct subproc_spec spec = {
                .argv = argv,
                .envp = envp,
                .stdin_data = in,
                .stdin_len = strlen(in),
                .cwd = ch->cwd,
                .timeout_ms = left ? left + 2000 : 0,
                .max_stdout_bytes = NESTED_OUT_MAX,
                .max_stderr_bytes = (size_t)64 << 10,
                .kill_grace_ms = 2000,
        };
        int r = proc_engine(b, err);
        if (r == 0)
                r = subproc_start(b->procs, (uint64_t)id, &spec, on_agent_done, b, err);
        free(argv);
        free(envp);
        if (r < 0) {
                proc_release_place(b, id);
                unlink(jtmpl);
                return -1;
        }
        b->nnested++;
        b->pending_scratch = strdup(jtmpl);
        return 1;
}

int effect_agent_call(struct broker *b, int64_t id, const cJSON *args, cJSON **ret, struct err **err)
{
        (void)ret;
        const char *path = NULL;
        if (broker_need_str(args, "agent.call", "path", &path, err) < 0)
                return -1;
        const cJSON *options = cJSON_GetObjectItemCaseSensitive(args, "options");
        const char *layer = broker_arg_str(options, "policy");
        if (layer && !policy_is_profile_name(layer))
                return err_set(err, 0, "callAgent: options.policy '%s' is not a profile (permissive, untrusted, "
                                       "supervised)", layer);
        const struct broker_children *ch = b->cfg->children;
        const struct session_nested *nest = b->cfg->nested;
        if (!nest && (!ch || !ch->run_argv))
                return err_set(err, 0, "callAgent: nested agents are not available in this mode");
        if (b->cfg->agent_depth >= BROKER_AGENT_DEPTH_MAX)
                return err_set(err, 0, "callAgent %s: agents nest at most %d deep", path, BROKER_AGENT_DEPTH_MAX);
        unsigned max_nested = nest ? nest->max_nested : ch->max_nested;
        if (b->nnested >= max_nested)
                return proc_limit_refused(b, err, "nested agent limit reached (%u at once per run; raise it with "
                                             "--max-nested)", max_nested);
        if (nest) {
                /* A session of the embedder's (broker/nested.c): it answers
                 * the call and counts it down (b->nnested). */
                struct json_span raw;
                _cleanup_free_ char *input =
                        broker_arg_raw(b, "input", &raw) == 1 ? json_compact(raw, NULL) : strdup("null");
                if (!input)
                        return err_set(err, ENOMEM, "callAgent");
                if (nest->start(nest->arg, b, id, path, layer, input, err) < 0)
                        return -1;
                b->nnested++;
                return 1;
        }
        return start_subprocess(b, id, path, layer, err);
}

const char *effect_agent_code(int code)
{
        return code == EFFECT_E_LIMIT ? "ELIMIT" : NULL;
}
