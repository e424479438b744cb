/* engine/natives.c — the C functions the prelude calls, and the CPU budget.
 *
 * The natives reach the prelude through a hidden global that the prelude
 * deletes in its first statement, before any agent code exists: agent code
 * cannot reach the raw transport.  Each native is a callable object of one
 * JSClass whose private data says which native it is and which engine it
 * belongs to.
 *
 * CPU budget: JSC's watchdog counts CPU time from each VM entry and re-arms
 * on every entry, so before each C->JS entry the engine installs the budget
 * that remains, measured with CLOCK_THREAD_CPUTIME_ID since init.  The total
 * across the run is therefore bounded by init.limits.js_deadline_ms.  Time
 * blocked in a synchronous host call costs no CPU and is not charged. */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/cleanup.h"
#include "engine/engine-internal.h"

static uint64_t thread_cpu_ns(void)
{
        struct timespec ts;
        if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) < 0)
                return 0;
        return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static bool should_terminate(JSContextRef ctx, void *data)
{
        (void)ctx;
        struct engine *e = data;
        e->terminated = true;
        return true;
}

void engine_set_cpu_budget(struct engine *e, uint64_t deadline_ms)
{
        e->deadline_ms = deadline_ms;
        e->cpu_budget_ns = deadline_ms * 1000000u;
        e->cpu_start_ns = thread_cpu_ns();
}

/* Install the remaining budget before entering JS.  false (and the run ends
 * with cpu_limit) when nothing remains. */
bool engine_arm(struct engine *e)
{
        if (e->cpu_budget_ns == 0)
                return true;
        uint64_t used = thread_cpu_ns() - e->cpu_start_ns;
        if (used >= e->cpu_budget_ns) {
                if (e->end == ENGINE_RUNNING)
                        e->end = ENGINE_CPU_LIMIT;
                return false;
        }
        JSContextGroupSetExecutionTimeLimit(e->group, (double)(e->cpu_budget_ns - used) / 1e9,
                                            should_terminate, e);
        e->watchdog_armed = true;
        return true;
}

/* Stop the JS that is running now (called from inside a native once the run
 * has ended for a protocol or transport reason).  A zero limit makes the
 * watchdog fire at once, which JS cannot catch.  The watchdog only notices
 * a limit set mid-entry if it already existed when the entry began, i.e.
 * when a CPU budget is in force; without one, every native throws from now
 * on and the C loop stops as soon as control returns to it. */
void engine_request_abort(struct engine *e)
{
        if (e->watchdog_armed)
                JSContextGroupSetExecutionTimeLimit(e->group, 0, should_terminate, e);
}

/* Every C->JS entry of a run goes through here.  Returns the function's
 * result; NULL when the run ended (CPU limit, abort) or when the function
 * threw (*exception set). */
JSValueRef engine_enter(struct engine *e, JSObjectRef fn, size_t argc, const JSValueRef argv[],
                        JSValueRef *exception)
{
        *exception = NULL;
        if (e->end != ENGINE_RUNNING || !engine_arm(e))
                return NULL;
        JSValueRef r = JSObjectCallAsFunction(e->ctx, fn, NULL, argc, argv, exception);
        if (e->terminated) {
                if (e->end == ENGINE_RUNNING)
                        e->end = ENGINE_CPU_LIMIT;
                *exception = NULL;
                return NULL;
        }
        return r;
}

JSValueRef engine_make_error(JSContextRef ctx, const char *name, const char *fmt, ...)
{
        va_list ap;
        va_start(ap, fmt);
        char *msg = NULL;
        if (vasprintf(&msg, fmt, ap) < 0)
                msg = NULL;
        va_end(ap);
        JSStringRef ms = JSStringCreateWithUTF8CString(msg ? msg : "out of memory");
        free(msg);
        JSValueRef mv = JSValueMakeString(ctx, ms);
        JSStringRelease(ms);
        JSObjectRef err = JSObjectMakeError(ctx, 1, &mv, NULL);
        if (err && strcmp(name, "Error") != 0) {
                JSStringRef n = JSStringCreateWithUTF8CString("name");
                JSStringRef nv = JSStringCreateWithUTF8CString(name);
                JSObjectSetProperty(ctx, err, n, JSValueMakeString(ctx, nv), kJSPropertyAttributeDontEnum, NULL);
                JSStringRelease(n);
                JSStringRelease(nv);
        }
        return err;
}

/* op must be a short name of [a-zA-Z.]: it goes into the frame unescaped. */
static bool get_op(JSContextRef ctx, JSValueRef v, char *buf, size_t size)
{
        if (!v || !JSValueIsString(ctx, v))
                return false;
        JSStringRef s = JSValueToStringCopy(ctx, v, NULL);
        if (!s)
                return false;
        bool ok = JSStringGetLength(s) < size && JSStringGetUTF8CString(s, buf, size) > 1;
        JSStringRelease(s);
        for (const char *p = buf; ok && *p; p++)
                ok = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || *p == '.';
        return ok;
}

static JSValueRef do_call(struct engine *e, size_t argc, const JSValueRef argv[], bool sync,
                          JSValueRef *exception)
{
        JSContextRef ctx = e->ctx;
        char op[32];
        if (argc < 2 || !get_op(ctx, argv[0], op, sizeof(op)) || !JSValueIsString(ctx, argv[1])) {
                *exception = engine_make_error(ctx, "TypeError", "host call: bad arguments");
                return NULL;
        }
        JSStringRef args = JSValueToStringCopy(ctx, argv[1], NULL);
        uint64_t id;
        int r = engine_send_call(e, op, args, &id, exception);
        JSStringRelease(args);
        if (r < 0)
                return NULL;
        if (!sync)
                return JSValueMakeNumber(ctx, (double)id);

        /* Wait for this call's result; results of other calls that arrive
         * meanwhile are queued for the loop, in arrival order. */
        for (;;) {
                uint64_t rid;
                JSValueRef frame;
                if (engine_read_result(e, &rid, &frame) < 0) {
                        *exception = engine_make_error(ctx, "Error", "host call '%s' failed: the run is ending",
                                                       op);
                        return NULL;
                }
                if (rid == id)
                        return frame;
                if (engine_queue_push(e, rid, frame) < 0) {
                        *exception = engine_make_error(ctx, "RangeError", "out of memory queueing a result");
                        return NULL;
                }
        }
}

static JSValueRef do_finish(struct engine *e, size_t argc, const JSValueRef argv[], JSValueRef *exception)
{
        if (argc < 1 || !JSValueIsString(e->ctx, argv[0])) {
                *exception = engine_make_error(e->ctx, "TypeError", "finish: expected a string");
                return NULL;
        }
        if (e->end == ENGINE_RUNNING) {
                char *text = engine_value_to_utf8(e->ctx, argv[0], NULL);
                if (!text) {
                        *exception = engine_make_error(e->ctx, "RangeError", "out of memory");
                        return NULL;
                }
                e->done_text = text;
                e->end = ENGINE_SETTLED;
        }
        return JSValueMakeUndefined(e->ctx);
}

/* The engine's own modules, evaluated when the prelude first needs them
 * (fetch, node:crypto, node:fs): a run that uses none pays nothing. */
static JSValueRef do_load(struct engine *e, size_t argc, const JSValueRef argv[], JSValueRef *exception)
{
        static const struct {
                const char *name, *src, *url;
        } mods[] = {
                { "fetch", chidori_fetch_js, "chidori:fetch.js" },
                { "crypto", chidori_crypto_js, "chidori:crypto.js" },
                { "fs", chidori_fs_js, "chidori:fs.js" },
        };
        char name[16];
        if (argc < 1 || !get_op(e->ctx, argv[0], name, sizeof(name))) {
                *exception = engine_make_error(e->ctx, "TypeError", "load: bad module name");
                return NULL;
        }
        for (size_t i = 0; i < sizeof(mods) / sizeof(mods[0]); i++) {
                if (strcmp(mods[i].name, name) != 0)
                        continue;
                JSStringRef s = JSStringCreateWithUTF8CString(mods[i].src);
                JSStringRef u = JSStringCreateWithUTF8CString(mods[i].url);
                JSValueRef v = JSEvaluateScript(e->ctx, s, NULL, u, 1, exception);
                JSStringRelease(s);
                JSStringRelease(u);
                return v;
        }
        *exception = engine_make_error(e->ctx, "TypeError", "load: no module '%s'", name);
        return NULL;
}

static JSValueRef native_invoke(JSContextRef ctx, JSObjectRef function, JSObjectRef self, size_t argc,
                                const JSValueRef argv[], JSValueRef *exception)
{
        (void)self;
        struct engine_native *n = JSObjectGetPrivate(function);
        if (!n)
                return JSValueMakeUndefined(ctx);
        struct engine *e = n->e;
        if (n->kind == NATIVE_FINISH)
                return do_finish(e, argc, argv, exception);
        if (n->kind == NATIVE_LOAD)
                return do_load(e, argc, argv, exception);
        if (e->end != ENGINE_RUNNING) {
                /* Settled, out of budget or broken transport: no more effects. */
                *exception = engine_make_error(ctx, "Error", "the run has ended");
                return NULL;
        }
        return do_call(e, argc, argv, n->kind == NATIVE_CALL_SYNC, exception);
}

/* The object handed to the prelude: {call, callSync, finish, load}. */
JSObjectRef engine_make_natives(struct engine *e)
{
        static const char *const names[NATIVE_MAX] = {
                [NATIVE_CALL] = "call",
                [NATIVE_CALL_SYNC] = "callSync",
                [NATIVE_FINISH] = "finish",
                [NATIVE_LOAD] = "load",
        };
        if (!e->native_class) {
                JSClassDefinition def = kJSClassDefinitionEmpty;
                def.className = "ChidoriNative";
                def.callAsFunction = native_invoke;
                e->native_class = JSClassCreate(&def);
        }
        JSObjectRef obj = JSObjectMake(e->ctx, NULL, NULL);
        for (int i = 0; i < NATIVE_MAX; i++) {
                e->natives[i] = (struct engine_native){ .e = e, .kind = (enum native_kind)i };
                JSObjectRef fn = JSObjectMake(e->ctx, e->native_class, &e->natives[i]);
                JSStringRef name = JSStringCreateWithUTF8CString(names[i]);
                JSObjectSetProperty(e->ctx, obj, name, fn, kJSPropertyAttributeReadOnly, NULL);
                JSStringRelease(name);
        }
        return obj;
}
