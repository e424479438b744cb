/* engine/natives.c — the C functions the prelude calls, and the watchdog.
 *
 * The natives reach the prelude through a hidden global that the prelude
 * deletes in its first statement, before any agent code exists: agent code
 * cannot reach the raw transport.  Each native is a callable object of one
 * JSClass whose private data says which native it is and which engine it
 * belongs to.
 *
 * The watchdog: JSC's execution time limit counts CPU time from each VM
 * entry and calls should_terminate() when an entry has run that long.  When
 * there is a CPU budget or a stop flag, it is armed on every entry with a
 * short slice (WATCHDOG_SLICE_NS, or less when less CPU budget remains), and
 * the callback decides: stop requested (the
 * in-process parent set *stop: deadline or signal), or the run's CPU budget
 * (init.limits.js_deadline_ms, CLOCK_THREAD_CPUTIME_ID since init) spent ->
 * terminate; else re-arm for another slice and let JS go on.  Time blocked in
 * a synchronous host call costs no CPU and is not charged.
 *
 * The decision is recorded (e->end) inside the callback, before JSC unwinds,
 * and it is sticky: once the callback said "terminate" it says so again, and
 * whatever the C side sees afterwards (a JSC API call inside a native that
 * returned NULL because the termination fired in it) cannot turn the ending
 * into something else (docs/decisions.md, "The watchdog's verdict is
 * recorded where it fires").  JSC swallows a termination that fires inside
 * an API call a native makes, so every native re-requests it on the way out.
 *
 * Polling traps (usePollingTraps) make a slice cheap: with JSC's default
 * signal-based traps every firing invalidates the running JIT code, which
 * cost a hot loop ~25% at 50 ms slices; with polling, nothing measurable. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/cleanup.h"
#include "engine/engine-internal.h"
#include "engine/engine.h"

static uint64_t thread_cpu_ns(void)
{
        struct timespec ts;
        if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) < 0)
                return 0;
        return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t mono_raw_ns(void)
{
        struct timespec ts;
        if (clock_gettime(CLOCK_MONOTONIC_RAW, &ts) < 0)
                return 0;
        return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* CPU used since the budget started.  Reading the thread's CPU clock is a
 * system call (no vDSO for it); it ran on every entry into JS, i.e. on every
 * awaited host call.  A thread cannot use more CPU than the time that
 * passes, so the last reading plus the (vDSO) monotonic time since then,
 * with a margin, bounds it from above: while that bound leaves a whole
 * slice of budget, it stands in for the reading.  The watchdog is armed with
 * the same slice either way, and the real clock is read again as soon as the
 * bound comes within a slice of the budget. */
static uint64_t cpu_used_ns(struct engine *e)
{
        uint64_t now = mono_raw_ns();
        if (e->cpu_seen_mono_ns && now >= e->cpu_seen_mono_ns) {
                uint64_t dt = now - e->cpu_seen_mono_ns;
                uint64_t bound = e->cpu_seen_ns + dt + dt / 32;
                if (bound < e->cpu_budget_ns && e->cpu_budget_ns - bound >= WATCHDOG_SLICE_NS)
                        return bound;
        }
        e->cpu_seen_ns = thread_cpu_ns() - e->cpu_start_ns;
        e->cpu_seen_mono_ns = mono_raw_ns();
        return e->cpu_seen_ns;
}

/* Why the run must stop now, or ENGINE_RUNNING. */
static enum engine_end over(struct engine *e, uint64_t *ret_left_ns)
{
        *ret_left_ns = WATCHDOG_SLICE_NS;
        if (e->stop && atomic_load_explicit(e->stop, memory_order_relaxed) != 0)
                return ENGINE_STOPPED;
        if (e->cpu_budget_ns == 0)
                return ENGINE_RUNNING;
        uint64_t used = cpu_used_ns(e);
        if (used >= e->cpu_budget_ns)
                return ENGINE_CPU_LIMIT;
        if (e->cpu_budget_ns - used < *ret_left_ns)
                *ret_left_ns = e->cpu_budget_ns - used;
        return ENGINE_RUNNING;
}

static bool should_terminate(JSContextRef ctx, void *data);

/* The watchdog serves the CPU budget and an in-process parent's stop flag.
 * A worker with neither has nothing for it to do (its parent kills it for
 * the deadline and signals), and a host that did not enable polling traps
 * is spared the firings (engine.h). */
static bool watchdog_wanted(const struct engine *e)
{
        return e->cpu_budget_ns > 0 || e->stop;
}

static void set_limit(struct engine *e, uint64_t ns)
{
        if (e->armed_ns == ns)
                return;  /* JSC restarts the same limit on every entry by itself */
        JSContextGroupSetExecutionTimeLimit(e->group, (double)ns / 1e9, should_terminate, e);
        e->armed_ns = ns;
}

/* Called by JSC on the engine thread, with the VM lock held, when one entry
 * has used the armed limit of CPU time (or at once after a zero limit). */
static bool should_terminate(JSContextRef ctx, void *data)
{
        (void)ctx;
        struct engine *e = data;
        if (e->terminated)
                return true;
        uint64_t left;
        enum engine_end why = e->end != ENGINE_RUNNING ? e->end : over(e, &left);
        if (why == ENGINE_RUNNING) {
                /* JSC does not restart the timer after a false return unless
                 * the callback sets a limit: set it even when unchanged. */
                e->armed_ns = 0;
                set_limit(e, left);
                return false;
        }
        e->terminated = true;
        if (e->end == ENGINE_RUNNING)
                e->end = why;
        return true;
}

void engine_set_cpu_budget(struct engine *e, uint64_t deadline_ms)
{
        e->deadline_ms = deadline_ms;
        e->cpu_budget_ns = deadline_ms * 1000000u;
        e->cpu_start_ns = thread_cpu_ns();
        e->cpu_seen_ns = 0;
        e->cpu_seen_mono_ns = 0;
        clockid_t self;
        if (pthread_getcpuclockid(pthread_self(), &self) == 0)
                engine_abort_budget(self, e->cpu_start_ns, e->cpu_budget_ns);
}

/* Arm the watchdog before entering JS.  false (and the run ends, e->end
 * says why) when the run must not enter JS again. */
bool engine_arm(struct engine *e)
{
        if (e->terminated || e->end != ENGINE_RUNNING)
                return false;
        uint64_t left;
        enum engine_end why = over(e, &left);
        if (why != ENGINE_RUNNING) {
                e->end = why;
                return false;
        }
        if (watchdog_wanted(e))
                set_limit(e, left);
        return true;
}

/* Stop the JS that is running now: called from inside a native once the run
 * has ended (protocol or transport failure, or a termination JSC swallowed
 * inside an API call).  A zero limit makes the watchdog fire at the next
 * check, and the callback, seeing the run ended, terminates: JS cannot catch
 * it.  Outside JS this only leaves a zero limit for the next entry, which
 * engine_arm() refuses anyway. */
void engine_request_abort(struct engine *e)
{
        if (!watchdog_wanted(e))
                return;  /* every native throws from now on; the C loop stops when JS returns */
        e->armed_ns = 0;
        JSContextGroupSetExecutionTimeLimit(e->group, 0, should_terminate, e);
}

/* Every C->JS entry of a run goes through here.  Returns the function's
 * result; NULL when the run ended (CPU limit, stop, abort) or when the
 * function threw (*exception set). */
JSValueRef engine_enter(struct engine *e, JSObjectRef fn, size_t argc, const JSValueRef argv[],
                        JSValueRef *exception)
{
        *exception = NULL;
        if (!engine_arm(e))
                return NULL;
        JSValueRef r = JSObjectCallAsFunction(e->ctx, fn, NULL, argc, argv, exception);
        if (e->terminated) {
                *exception = NULL;
                return NULL;
        }
        return r;
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
        /* finish(text, true): process.exit() — no more JS of this run, not
         * even the rest of the caller: terminate it (uncatchable when the
         * watchdog runs; otherwise every native throws from here on). */
        if (argc > 1 && JSValueToBoolean(e->ctx, argv[1])) {
                e->terminated = true;
                engine_request_abort(e);
                *exception = engine_make_error(e->ctx, "Error", "process.exit() ended the run");
                return NULL;
        }
        return JSValueMakeUndefined(e->ctx);
}

/* The engine's own modules, evaluated when the prelude first needs them
 * (web.js, fetch, node:crypto, node:fs, process, format.js, the Node/Web surface's parts): a run
 * that uses none pays nothing. */
_Atomic unsigned engine_modules_loaded;

static JSValueRef do_load(struct engine *e, size_t argc, const JSValueRef argv[], JSValueRef *exception)
{
        static const struct {
                const char *name, *src, *url;
                unsigned bit;
        } mods[] = {
                { "web", chidori_web_js, "chidori:web.js", ENGINE_MOD_WEB },
                { "fetch", chidori_fetch_js, "chidori:fetch.js", ENGINE_MOD_FETCH },
                { "crypto", chidori_crypto_js, "chidori:crypto.js", ENGINE_MOD_CRYPTO },
                { "fs", chidori_fs_js, "chidori:fs.js", ENGINE_MOD_FS },
                { "process", chidori_process_js, "chidori:process.js", ENGINE_MOD_PROCESS },
                { "format", chidori_format_js, "chidori:format.js", ENGINE_MOD_FORMAT },
        };
        char name[32];
        if (argc < 1 || !get_op(e->ctx, argv[0], name, sizeof(name))) {
                *exception = engine_make_error(e->ctx, "TypeError", "load: bad module name");
                return NULL;
        }
        if (strncmp(name, "node.", 5) == 0) {
                for (const struct engine_node_part *p = chidori_node_parts; p->name; p++) {
                        if (strcmp(p->name, name + 5) != 0)
                                continue;
                        engine_modules_loaded |= ENGINE_MOD_NODE;
                        char url[48];
                        snprintf(url, sizeof(url), "chidori:node/%s.js", p->name);
                        JSStringRef s = JSStringCreateWithUTF8CString(p->src);
                        JSStringRef u = JSStringCreateWithUTF8CString(url);
                        JSValueRef v = JSEvaluateScript(e->ctx, s, NULL, u, 1, exception);
                        JSStringRelease(s);
                        JSStringRelease(u);
                        return v;
                }
        }
        /* load(name, self): the script's `this` is self when given (an
         * object from the prelude: format.js's intrinsics), not the global. */
        JSObjectRef self = argc > 1 && JSValueIsObject(e->ctx, argv[1]) ? (JSObjectRef)argv[1] : NULL;
        for (size_t i = 0; i < sizeof(mods) / sizeof(mods[0]); i++) {
                if (strcmp(mods[i].name, name) != 0)
                        continue;
                engine_modules_loaded |= mods[i].bit;
                JSStringRef s = JSStringCreateWithUTF8CString(mods[i].src);
                JSStringRef u = JSStringCreateWithUTF8CString(mods[i].url);
                JSValueRef v = JSEvaluateScript(e->ctx, s, self, u, 1, exception);
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
        JSValueRef r;
        if (n->kind == NATIVE_FINISH)
                r = do_finish(e, argc, argv, exception);
        else if (n->kind == NATIVE_LOAD)
                r = do_load(e, argc, argv, exception);
        else if (e->end == ENGINE_RUNNING)
                r = do_call(e, argc, argv, n->kind == NATIVE_CALL_SYNC, exception);
        else
                r = NULL;  /* settled, out of budget or broken transport: no more effects */
        /* The run ended while we were in here: the watchdog fired inside one
         * of the API calls above (JSC cleared that termination when the call
         * returned), or the transport or the protocol failed.  Ask for the
         * termination again, as the last thing before JS runs on: an API call
         * made after the request could swallow it once more. */
        if (e->terminated || (e->end != ENGINE_RUNNING && e->end != ENGINE_SETTLED)) {
                if (!*exception)
                        *exception = engine_make_error(ctx, "Error", "the run has ended");
                engine_request_abort(e);
                return NULL;
        }
        if (!r && !*exception)
                *exception = engine_make_error(ctx, "Error", "the run has ended");
        return r;
}

/* The object handed to the prelude: {call, callSync, finish, load, timers}. */
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
        /* timers[0]: the prelude's timer heap is not empty (it keeps this
         * up to date): only then does the loop enter JS to run a due
         * setImmediate before it waits for an answer. */
        JSObjectRef due = JSObjectMakeTypedArrayWithBytesNoCopy(e->ctx, kJSTypedArrayTypeUint8Array, &e->timers_queued,
                                                                 1, NULL, NULL, NULL);
        if (due) {
                JSStringRef tn = JSStringCreateWithUTF8CString("timers");
                JSObjectSetProperty(e->ctx, obj, tn, due, kJSPropertyAttributeReadOnly, NULL);
                JSStringRelease(tn);
        } else {
                e->timers_queued = 1;  /* no flag: ask JS every time, as before */
        }
        for (int i = 0; i < NATIVE_MAX; i++) {
                e->natives[i] = (struct engine_native){ .e = e, .kind = (enum native_kind)i };
                JSObjectRef fn = JSObjectMake(e->ctx, e->native_class, &e->natives[i]);
                JSStringRef name = JSStringCreateWithUTF8CString(names[i]);
                JSObjectSetProperty(e->ctx, obj, name, fn, kJSPropertyAttributeReadOnly, NULL);
                JSStringRelease(name);
        }
        return obj;
}
