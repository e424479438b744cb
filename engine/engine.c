/* engine/engine.c — one run: context set-up, the init handshake, the event
 * loop and the done frame.
 *
 * The loop is deterministic: it never looks at a real clock.
 *   1. a result frame is queued      -> deliver it (settles that call's promise)
 *   2. calls are outstanding         -> block reading the next result frame
 *   3. a virtual timer is pending    -> advance the virtual clock, fire it
 *   4. otherwise                     -> never_settled
 * and stops as soon as the agent's promise settles.  Microtasks drain each
 * time control returns to C from JSC.  Results are delivered in the order
 * they arrive; calls still outstanding when the run ends are not waited for.
 */
#define _GNU_SOURCE
#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>

#include "common/cleanup.h"
#include "engine/engine.h"
#include "engine/engine-internal.h"
#include "proto/proto.h"

static JSValueRef get_prop(JSContextRef ctx, JSObjectRef obj, const char *name)
{
        JSStringRef n = JSStringCreateWithUTF8CString(name);
        JSValueRef v = JSObjectGetProperty(ctx, obj, n, NULL);
        JSStringRelease(n);
        return v;
}

static char *exception_text(JSContextRef ctx, JSValueRef exc)
{
        char *s = exc ? engine_value_to_utf8(ctx, exc, NULL) : NULL;
        return s ? s : strdup("unknown exception");
}

/* A done frame the engine builds itself (not an agent outcome). */
char *engine_failure_done(const char *kind, const char *name, const char *message)
{
        cJSON *done = cJSON_CreateObject();
        cJSON *error = cJSON_CreateObject();
        cJSON_AddStringToObject(done, "type", "done");
        cJSON_AddFalseToObject(done, "ok");
        cJSON_AddStringToObject(done, "kind", kind);
        cJSON_AddStringToObject(error, "name", name);
        cJSON_AddStringToObject(error, "message", message ? message : "");
        cJSON_AddItemToObject(done, "error", error);
        char *text = cJSON_PrintUnformatted(done);
        cJSON_Delete(done);
        return text;
}

static int eval_embedded(struct engine *e, const char *src, const char *url, JSValueRef *ret, struct err **err)
{
        JSStringRef s = JSStringCreateWithUTF8CString(src);
        JSStringRef u = JSStringCreateWithUTF8CString(url);
        JSValueRef exc = NULL;
        JSValueRef v = JSEvaluateScript(e->ctx, s, NULL, u, 1, &exc);
        JSStringRelease(s);
        JSStringRelease(u);
        if (exc || !v) {
                _cleanup_free_ char *msg = exception_text(e->ctx, exc);
                return err_set(err, 0, "evaluate %s: %s", url, msg);
        }
        if (ret)
                *ret = v;
        return 0;
}

static JSObjectRef get_hook(struct engine *e, JSObjectRef hooks, const char *name, struct err **err)
{
        JSValueRef v = get_prop(e->ctx, hooks, name);
        if (!v || !JSValueIsObject(e->ctx, v) || !JSObjectIsFunction(e->ctx, (JSObjectRef)v)) {
                err_set(err, 0, "prelude.js returned no '%s' hook", name);
                return NULL;
        }
        JSValueProtect(e->ctx, v);
        return (JSObjectRef)v;
}

/* Create the context and evaluate prelude.js (web.js loads on first use). */
static int setup(struct engine *e, struct err **err)
{
        e->group = JSContextGroupCreate();
        if (!e->group)
                return err_set(err, 0, "create JSC context group");
        e->ctx = JSGlobalContextCreateInGroup(e->group, NULL);
        if (!e->ctx)
                return err_set(err, 0, "create JSC context");
        e->str_type = JSStringCreateWithUTF8CString("type");
        e->str_id = JSStringCreateWithUTF8CString("id");
        e->str_ok = JSStringCreateWithUTF8CString("ok");

        /* The natives go in as a hidden global that the prelude's first
         * statement captures and deletes; the prelude's completion value is
         * the hooks object.  No agent code has run yet. */
        JSObjectRef global = JSContextGetGlobalObject(e->ctx);
        JSStringRef name = JSStringCreateWithUTF8CString("__chidoriNative");
        JSObjectSetProperty(e->ctx, global, name, engine_make_natives(e), kJSPropertyAttributeDontEnum, NULL);
        JSValueRef hooks = NULL;
        int r = eval_embedded(e, chidori_prelude_js, "chidori:prelude.js", &hooks, err);
        bool leaked = JSObjectHasProperty(e->ctx, global, name);
        JSStringRelease(name);
        if (r < 0)
                return -1;
        if (leaked)
                return err_set(err, 0, "prelude.js left __chidoriNative on the global object");
        if (!JSValueIsObject(e->ctx, hooks))
                return err_set(err, 0, "prelude.js did not evaluate to the hooks object");
        JSObjectRef h = (JSObjectRef)hooks;
        if (!(e->hook_start = get_hook(e, h, "start", err)) || !(e->hook_deliver = get_hook(e, h, "deliver", err)) ||
            !(e->hook_fire_timer = get_hook(e, h, "fireTimer", err)) || !(e->hook_fail = get_hook(e, h, "fail", err)))
                return -1;
        return 0;
}

static void teardown(struct engine *e)
{
        if (e->ctx) {
                engine_queue_clear(e);
                JSObjectRef hooks[] = { e->hook_start, e->hook_deliver, e->hook_fire_timer, e->hook_fail };
                for (size_t i = 0; i < ARRAY_SIZE(hooks); i++)
                        if (hooks[i])
                                JSValueUnprotect(e->ctx, hooks[i]);
                JSGlobalContextRelease(e->ctx);
        }
        if (e->group)
                JSContextGroupRelease(e->group);
        if (e->native_class)
                JSClassRelease(e->native_class);
        JSStringRef strs[] = { e->str_type, e->str_id, e->str_ok };
        for (size_t i = 0; i < ARRAY_SIZE(strs); i++)
                if (strs[i])
                        JSStringRelease(strs[i]);
        free(e->call_state);
        free(e->out_buf);
        free(e->done_text);
        free(e->protocol_msg);
        err_free(e->transport_err);
}

/* Enter JS through a hook.  An exception escaping a hook (they catch what the
 * agent throws, so this means e.g. the stack ran out inside the prelude) ends
 * the run as an agent error. */
static JSValueRef call_hook(struct engine *e, JSObjectRef hook, size_t argc, const JSValueRef argv[])
{
        JSValueRef exc = NULL;
        JSValueRef r = engine_enter(e, hook, argc, argv, &exc);
        if (!exc || e->end != ENGINE_RUNNING)
                return r;
        JSValueProtect(e->ctx, exc);
        JSValueRef exc2 = NULL;
        engine_enter(e, e->hook_fail, 1, &exc, &exc2);
        if (e->end == ENGINE_RUNNING) {
                _cleanup_free_ char *msg = exception_text(e->ctx, exc);
                e->done_text = engine_failure_done("error", "Error", msg);
                e->end = ENGINE_SETTLED;
        }
        JSValueUnprotect(e->ctx, exc);
        return NULL;
}

static void deliver(struct engine *e, uint64_t id, JSValueRef frame)
{
        JSValueRef argv[2] = { JSValueMakeNumber(e->ctx, (double)id), frame };
        call_hook(e, e->hook_deliver, 2, argv);
}

static void run_loop(struct engine *e)
{
        while (e->end == ENGINE_RUNNING) {
                uint64_t id;
                JSValueRef frame;
                if (engine_queue_pop(e, &id, &frame)) {
                        deliver(e, id, frame);
                        JSValueUnprotect(e->ctx, frame);
                        continue;
                }
                if (e->outstanding > 0) {
                        /* setImmediate's queued run before the wait (in
                         * real time the only timers in the box).  With
                         * none queued, no entry into JS: each costs the
                         * watchdog's CPU-clock reads, on every host call. */
                        if (e->timers_queued) {
                                JSValueRef busy = JSValueMakeBoolean(e->ctx, true);
                                JSValueRef ran = call_hook(e, e->hook_fire_timer, 1, &busy);
                                if (e->end != ENGINE_RUNNING)
                                        break;
                                if (ran && JSValueToBoolean(e->ctx, ran))
                                        continue;
                        }
                        if (engine_read_result(e, &id, &frame) < 0)
                                break;
                        deliver(e, id, frame);
                        continue;
                }
                JSValueRef fired = call_hook(e, e->hook_fire_timer, 0, NULL);
                if (e->end != ENGINE_RUNNING)
                        break;
                if (fired && JSValueToBoolean(e->ctx, fired))
                        continue;
                e->end = ENGINE_NEVER_SETTLED;
        }
}

/* The fields of the init frame the prelude's start hook is given. */
struct init_fields {
        JSValueRef script, filename, run_id, input, env;
        bool esm, virtual_time;
        double deadline_ms;
};

/* A string field of the init frame, `dflt` when absent or null; NULL after
 * a protocol failure. */
static JSValueRef init_string(struct engine *e, JSObjectRef init, const char *name, const char *dflt)
{
        JSValueRef v = get_prop(e->ctx, init, name);
        if (JSValueIsUndefined(e->ctx, v) || JSValueIsNull(e->ctx, v)) {
                JSStringRef d = JSStringCreateWithUTF8CString(dflt);
                v = JSValueMakeString(e->ctx, d);
                JSStringRelease(d);
        } else if (!JSValueIsString(e->ctx, v)) {
                engine_fail_protocol(e, "init frame: \"%s\" is not a string", name);
                return NULL;
        }
        return v;
}

/* "time": "real" (timers are timer.wait calls) or "virtual" (decision 6;
 * the default of a parent that does not say).  -1 after a protocol failure. */
static int init_time_mode(struct engine *e, JSObjectRef init, bool *ret_virtual)
{
        JSContextRef ctx = e->ctx;
        JSValueRef time_mode = get_prop(ctx, init, "time");
        *ret_virtual = true;
        if (JSValueIsUndefined(ctx, time_mode))
                return 0;
        JSStringRef real = JSStringCreateWithUTF8CString("real");
        JSStringRef virt = JSStringCreateWithUTF8CString("virtual");
        bool is_real = JSValueIsString(ctx, time_mode) && JSValueIsStrictEqual(ctx, time_mode, JSValueMakeString(ctx, real));
        bool is_virt = JSValueIsString(ctx, time_mode) && JSValueIsStrictEqual(ctx, time_mode, JSValueMakeString(ctx, virt));
        JSStringRelease(real);
        JSStringRelease(virt);
        if (!is_real && !is_virt) {
                engine_fail_protocol(e, "init frame: \"time\" must be \"real\" or \"virtual\"");
                return -1;
        }
        *ret_virtual = is_virt;
        return 0;
}

/* limits.js_deadline_ms: the CPU budget in ms (0: none, the default);
 * -1 after a protocol failure. */
static int init_deadline(struct engine *e, JSObjectRef init, double *ret_ms)
{
        JSContextRef ctx = e->ctx;
        double deadline_ms = 0;
        JSValueRef limits = get_prop(ctx, init, "limits");
        if (JSValueIsObject(ctx, limits)) {
                JSValueRef d = get_prop(ctx, (JSObjectRef)limits, "js_deadline_ms");
                if (JSValueIsNumber(ctx, d))
                        deadline_ms = JSValueToNumber(ctx, d, NULL);
                else if (!JSValueIsUndefined(ctx, d) && !JSValueIsNull(ctx, d))
                        deadline_ms = -1;
        } else if (!JSValueIsUndefined(ctx, limits) && !JSValueIsNull(ctx, limits)) {
                deadline_ms = -1;
        }
        if (!(deadline_ms >= 0 && deadline_ms <= 1e12)) {
                engine_fail_protocol(e, "init frame: limits.js_deadline_ms must be a number of milliseconds >= 0");
                return -1;
        }
        *ret_ms = deadline_ms;
        return 0;
}

/* Check and read the init frame's fields, in the order a bad one is
 * reported: -1 after a protocol failure. */
static int read_init(struct engine *e, JSObjectRef init, struct init_fields *f)
{
        JSContextRef ctx = e->ctx;
        f->script = get_prop(ctx, init, "script");
        if (!f->script || !JSValueIsString(ctx, f->script)) {
                engine_fail_protocol(e, "init frame has no string \"script\"");
                return -1;
        }
        if (!(f->filename = init_string(e, init, "filename", "agent.js")) ||
            !(f->run_id = init_string(e, init, "run_id", "")))
                return -1;
        JSValueRef esm = get_prop(ctx, init, "esm");
        if (!JSValueIsUndefined(ctx, esm) && !JSValueIsBoolean(ctx, esm)) {
                engine_fail_protocol(e, "init frame: \"esm\" is not a boolean");
                return -1;
        }
        f->esm = JSValueToBoolean(ctx, esm);
        if (init_time_mode(e, init, &f->virtual_time) < 0)
                return -1;
        f->input = get_prop(ctx, init, "input");
        if (JSValueIsUndefined(ctx, f->input))
                f->input = JSValueMakeNull(ctx);
        /* process.env: the variables the operator passed with --env (an
         * object of strings; the prelude checks each value). */
        f->env = get_prop(ctx, init, "env");
        if (JSValueIsUndefined(ctx, f->env) || JSValueIsNull(ctx, f->env)) {
                f->env = JSValueMakeNull(ctx);
        } else if (!JSValueIsObject(ctx, f->env) || JSValueIsArray(ctx, f->env)) {
                engine_fail_protocol(e, "init frame: \"env\" is not an object");
                return -1;
        }
        return init_deadline(e, init, &f->deadline_ms);
}

/* Read the init frame and start the agent.  The run may end right here
 * (protocol error, syntax error, synchronous agent). */
static void start_run(struct engine *e)
{
        JSContextRef ctx = e->ctx;
        JSValueRef v = engine_read_json_frame(e, "init");
        if (!v)
                return;
        /* A warm pool's box (worker.c) is a session's worker from now. */
        if (getenv("CHIDORI_POOLED"))
                prctl(PR_SET_NAME, "chidori-worker", 0, 0, 0);
        struct init_fields f;
        if (read_init(e, (JSObjectRef)v, &f) < 0)
                return;
        uint64_t ms = (uint64_t)f.deadline_ms;
        engine_set_cpu_budget(e, ms + ((double)ms < f.deadline_ms));  /* round up */
        if (engine_backstop_start(e) < 0) {
                engine_fail_protocol(e, "cannot start the CPU-limit backstop thread");
                return;
        }

        JSStringRef src = JSValueToStringCopy(ctx, f.script, NULL);
        JSStringRef file = JSValueToStringCopy(ctx, f.filename, NULL);
        unsigned prefix_len = 0;
        JSValueRef exc = NULL;
        JSObjectRef wrapper = engine_compile(e, src, file, f.esm, &prefix_len, &exc);
        JSStringRelease(src);
        JSStringRelease(file);
        if (exc) {
                call_hook(e, e->hook_fail, 1, &exc);
                return;
        }
        if (!wrapper)
                return;
        JSValueRef argv[8] = { wrapper, f.input, f.run_id, f.filename, JSValueMakeNumber(ctx, prefix_len),
                               JSValueMakeBoolean(ctx, f.esm), f.env, JSValueMakeBoolean(ctx, f.virtual_time) };
        call_hook(e, e->hook_start, 8, argv);
}

bool engine_exit_after_done;

void engine_exit_done(int in_fd, int out_fd)
{
        close(out_fd);
        if (in_fd != out_fd)
                close(in_fd);
        close(STDOUT_FILENO);
        close(STDERR_FILENO);
        _exit(0);
}

static int send_done(struct engine *e, struct err **err)
{
        if (e->end == ENGINE_TRANSPORT || e->transport_err) {
                *err = take_ptr(&e->transport_err);
                if (!*err)
                        err_set(err, 0, "transport failed");
                return -1;
        }
        _cleanup_free_ char *own = NULL;
        const char *text = NULL;
        char msg[128];
        switch (e->end) {
        case ENGINE_SETTLED:
                text = e->done_text;
                /* A value that does not fit in a frame is the agent's doing:
                 * an error it can read, not a protocol failure. */
                if (text && strlen(text) > FRAME_MAX_BYTES) {
                        size_t len = strlen(text);
                        static const char ok_prefix[] = "{\"type\":\"done\",\"ok\":true";
                        bool ok = strncmp(text, ok_prefix, sizeof(ok_prefix) - 1) == 0;
                        char big[128], size[48];
                        /* Whole MiB when that already says "over"; bytes just above the limit. */
                        if ((len >> 20) > (FRAME_MAX_BYTES >> 20))
                                snprintf(size, sizeof(size), "%zu MiB", len >> 20);
                        else
                                snprintf(size, sizeof(size), "%zu bytes", len);
                        snprintf(big, sizeof(big), "%s too large (%s, limit %u MiB)", ok ? "result" : "error", size,
                                 FRAME_MAX_BYTES >> 20);
                        text = own = engine_failure_done("error", "RangeError", big);
                }
                break;
        case ENGINE_CPU_LIMIT:
                snprintf(msg, sizeof(msg), "CPU time limit exceeded (%" PRIu64 " ms)", e->deadline_ms);
                text = own = engine_failure_done("cpu_limit", "Error", msg);
                break;
        case ENGINE_STOPPED:
                text = own = engine_failure_done("stopped", "Error", "the run was stopped by the parent");
                break;
        case ENGINE_NEVER_SETTLED:
                text = own = engine_failure_done("never_settled", "Error", "agent never settled");
                break;
        case ENGINE_PROTOCOL:
                text = own = engine_failure_done("protocol", "ProtocolError", e->protocol_msg);
                break;
        default:
                text = own = engine_failure_done("error", "Error", "internal error: the run loop stopped early");
                break;
        }
        if (!text)
                return err_set(err, ENOMEM, "compose done frame");
        if (engine_frame_out(e, text, strlen(text), true, err) < 0)
                return err_wrap(err, "send done frame");
        /* The worker process ends here: no context teardown (a GC) once the
         * outcome is out.  In-process callers get the normal return. */
        if (engine_exit_after_done)
                engine_exit_done(e->in_fd, e->out_fd);
        return 0;
}

/* JavaScriptCore's, exported but not in its public headers: a full
 * collection, now (JSGarbageCollect only hints). */
void JSSynchronousGarbageCollectForDebugging(JSContextRef ctx);

/* A warm pool's box, before it waits for its init frame (worker.c): run the
 * shape of a typical agent once in a throwaway context of the same group —
 * its own global object, released after, so nothing of it is reachable
 * from the agent's context — so that what JavaScriptCore does on a VM's
 * first use of its builtins (async functions, promises, JSON, property
 * definitions: they are JS compiled on first call) is not on the session's
 * path; then a full collection, so that neither this garbage nor the
 * prelude's is collected during the session.  Measured with the init →
 * done time of a one-liner (docs/bench.md): 4.9 → 3.1 ms median. */
static void warm_up(struct engine *e)
{
        static const char shapes[] =
                "var __defProp = Object.defineProperty;"
                "var __export = (t, all) => { for (var n in all) __defProp(t, n, { get: all[n], enumerable: true }); };"
                "(async function (n) { const o = JSON.parse('{\"a\":[1,2,3],\"s\":\"x\"}');"
                " const t = JSON.stringify({ ...o, b: o.a.map((x) => x + n).filter(Boolean) });"
                " const m = {}; __export(m, { f: () => 1 }); Object.getOwnPropertyNames(m); Object.entries(o);"
                " await Promise.resolve(t); await new Promise((r) => r(1));"
                " try { throw new Error('x'); } catch (err) { err.stack; }"
                " for (const k of Object.keys(o)) `${k}`.padStart(2).split('').join('');"
                " const [a, ...rest] = o.a; new Set(rest).has(a);"
                " return t.length + new Map([[1, 2]]).size; })(1).then(String).catch(String).finally(() => 0);";
        /* The wrapper engine_compile makes, around a bundle's usual prologue. */
        static const char agent[] =
                "(async function(module, exports, require){var __defProp = Object.defineProperty;\n"
                "var __export = (target, all) => { for (var name in all) __defProp(target, name, { get: all[name], "
                "enumerable: true }); };\nvar agent_exports = {};\n__export(agent_exports, { default: () => agent_default "
                "});\nvar agent_default = async (n) => n + 1;\n;return typeof main === 'function' ? main : undefined;\n})";
        JSGlobalContextRef w = JSGlobalContextCreateInGroup(e->group, NULL);
        if (!w)
                return;
        JSStringRef s1 = JSStringCreateWithUTF8CString(shapes);
        JSStringRef s2 = JSStringCreateWithUTF8CString(agent);
        JSStringRef url = JSStringCreateWithUTF8CString("chidori:warm-up.js");
        JSEvaluateScript(w, s1, NULL, url, 1, NULL);
        JSValueRef fn = JSEvaluateScript(w, s2, NULL, url, 1, NULL);
        if (fn && JSValueIsObject(w, fn) && JSObjectIsFunction(w, (JSObjectRef)fn))
                JSObjectCallAsFunction(w, (JSObjectRef)fn, NULL, 0, NULL, NULL);
        JSStringRelease(s1);
        JSStringRelease(s2);
        JSStringRelease(url);
        JSGlobalContextRelease(w);
        JSSynchronousGarbageCollectForDebugging(e->ctx);
}

static int serve(struct engine *e, struct err **err)
{
        if (setup(e, err) < 0)
                return err_wrap(err, "start engine");
        if (getenv("CHIDORI_POOLED"))
                warm_up(e);
        static const char ready[] = "{\"type\":\"ready\",\"protocol\":1}";
        if (engine_frame_out(e, ready, sizeof(ready) - 1, false, err) < 0)
                return err_wrap(err, "send ready frame");
        start_run(e);
        run_loop(e);
        return send_done(e, err);
}

int engine_serve(int in_fd, int out_fd, struct err **err)
{
        return engine_serve_until(in_fd, out_fd, NULL, err);
}

int engine_serve_until(int in_fd, int out_fd, const _Atomic int *stop, struct err **err)
{
        /* A vanished parent must show up as EPIPE, not kill the process.  If
         * SIGPIPE is not ignored already (chidori-worker ignores it), block it
         * on this thread and discard one we raised before unblocking.  The
         * worker thus needs only rt_sigaction here, no rt_sigprocmask or
         * rt_sigtimedwait, which keeps its seccomp allowlist short. */
        struct sigaction old_action;
        bool guard = sigaction(SIGPIPE, NULL, &old_action) == 0 && old_action.sa_handler != SIG_IGN;
        sigset_t pipe_set, old_set;
        sigemptyset(&pipe_set);
        sigaddset(&pipe_set, SIGPIPE);
        if (guard)
                pthread_sigmask(SIG_BLOCK, &pipe_set, &old_set);

        struct engine e = { .in_fd = in_fd, .out_fd = out_fd, .stop = stop };
        pthread_mutex_init(&e.out_lock, NULL);
        frame_reader_init(&e.reader);
        /* Non-blocking both ways: a write that cannot go on reads answers
         * meanwhile (engine_write_frame_draining), reads wait in poll. */
        int fl = fcntl(out_fd, F_GETFL);
        if (fl >= 0)
                fcntl(out_fd, F_SETFL, fl | O_NONBLOCK);
        fl = fcntl(in_fd, F_GETFL);
        if (fl >= 0)
                fcntl(in_fd, F_SETFL, fl | O_NONBLOCK);
        int r = serve(&e, err);
        engine_backstop_stop(&e);
        teardown(&e);
        free(e.backstop_done);
        pthread_mutex_destroy(&e.out_lock);
        frame_reader_reset(&e.reader);

        if (guard) {
                if (!sigismember(&old_set, SIGPIPE)) {
                        struct timespec zero = { 0, 0 };
                        while (sigtimedwait(&pipe_set, NULL, &zero) > 0)
                                ;
                }
                pthread_sigmask(SIG_SETMASK, &old_set, NULL);
        }
        return r;
}
