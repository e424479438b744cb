/*
 * jsrun: minimal JavaScriptCore test runner for chidori's JS polyfills.
 *
 * Creates a bare JSC global context, installs print(str), evaluates
 * engine/web.js (timing it), then tests/js/harness.js, then each file named
 * on the command line. JSC drains the microtask queue whenever
 * JSEvaluateScript returns, so promise-based tests settle between files.
 * Finally calls the harness's __jsrunDone(loadErrors), which prints the
 * summary line and returns the number of failures (load errors included).
 *
 * Usage (from the repo root): build/jsrun tests/js/web_*.test.js
 *                              build/jsrun --bench N   (web.js timing only)
 * Environment: JSRUN_WEB / JSRUN_HARNESS override the two preloaded paths.
 * Exit status: 0 if every test passed, 1 otherwise, 2 on setup errors.
 */
#include <JavaScriptCore/JavaScript.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static JSValueRef
js_print(JSContextRef ctx, JSObjectRef fn, JSObjectRef self, size_t argc,
         const JSValueRef argv[], JSValueRef *exc)
{
        JSStringRef s;
        size_t cap, i;
        char *buf;

        (void)fn;
        (void)self;
        for (i = 0; i < argc; i++) {
                s = JSValueToStringCopy(ctx, argv[i], exc);
                if (!s)
                        return JSValueMakeUndefined(ctx);
                cap = JSStringGetMaximumUTF8CStringSize(s);
                buf = malloc(cap);
                if (buf) {
                        JSStringGetUTF8CString(s, buf, cap);
                        fputs(buf, stdout);
                        if (i + 1 < argc)
                                fputc(' ', stdout);
                        free(buf);
                }
                JSStringRelease(s);
        }
        fputc('\n', stdout);
        fflush(stdout);
        return JSValueMakeUndefined(ctx);
}

static char *
read_file(const char *path)
{
        FILE *f = fopen(path, "rb");
        char *buf = NULL;
        long len;

        if (!f)
                return NULL;
        if (fseek(f, 0, SEEK_END) == 0 && (len = ftell(f)) >= 0 &&
            fseek(f, 0, SEEK_SET) == 0 && (buf = malloc((size_t)len + 1))) {
                if (fread(buf, 1, (size_t)len, f) != (size_t)len) {
                        free(buf);
                        buf = NULL;
                } else {
                        buf[len] = '\0';
                }
        }
        fclose(f);
        return buf;
}

static void
print_exception(JSContextRef ctx, const char *where, JSValueRef exc)
{
        JSStringRef s = JSValueToStringCopy(ctx, exc, NULL);
        JSStringRef key = JSStringCreateWithUTF8CString("stack");
        JSValueRef stack = NULL;
        char msg[2048] = "?", st[4096] = "";

        if (s) {
                JSStringGetUTF8CString(s, msg, sizeof msg);
                JSStringRelease(s);
        }
        if (JSValueIsObject(ctx, exc))
                stack = JSObjectGetProperty(ctx, (JSObjectRef)exc, key, NULL);
        if (stack && JSValueIsString(ctx, stack)) {
                s = JSValueToStringCopy(ctx, stack, NULL);
                if (s) {
                        JSStringGetUTF8CString(s, st, sizeof st);
                        JSStringRelease(s);
                }
        }
        JSStringRelease(key);
        printf("not ok - uncaught exception in %s: %s\n", where, msg);
        if (st[0])
                printf("# %s\n", st);
        fflush(stdout);
}

/* Evaluates a file; returns 0 on success, -1 on read error or exception. */
static int
eval_file(JSGlobalContextRef ctx, const char *path, double *ms)
{
        struct timespec t0, t1;
        JSStringRef src, url;
        JSValueRef exc = NULL;
        char *text = read_file(path);

        if (!text) {
                printf("not ok - cannot read %s\n", path);
                return -1;
        }
        src = JSStringCreateWithUTF8CString(text);
        url = JSStringCreateWithUTF8CString(path);
        free(text);
        clock_gettime(CLOCK_MONOTONIC, &t0);
        JSEvaluateScript(ctx, src, NULL, url, 1, &exc);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        JSStringRelease(src);
        JSStringRelease(url);
        if (ms)
                *ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 +
                      (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
        if (exc) {
                print_exception(ctx, path, exc);
                return -1;
        }
        return 0;
}

/*
 * Extra natives for a runner built from this file plus another one (see
 * tests/js/vfsrun.c); jsrun itself has none.
 */
void jsrun_install_natives(JSGlobalContextRef ctx) __attribute__((weak));

/*
 * A global context with print() installed, after a warm-up evaluation: the
 * first script and the first function call in a fresh VM pay one-time setup
 * that any engine start pays anyway and that is not web.js's cost.
 */
static JSGlobalContextRef
new_context(JSContextGroupRef group)
{
        JSGlobalContextRef ctx = JSGlobalContextCreateInGroup(group, NULL);
        JSStringRef name = JSStringCreateWithUTF8CString("print");
        JSObjectRef fn = JSObjectMakeFunctionWithCallback(ctx, name, js_print);

        JSObjectSetProperty(ctx, JSContextGetGlobalObject(ctx), name, fn,
                            kJSPropertyAttributeDontEnum, NULL);
        JSStringRelease(name);
        if (jsrun_install_natives)
                jsrun_install_natives(ctx);
        name = JSStringCreateWithUTF8CString("(function () { return 0; })()");
        JSEvaluateScript(ctx, name, NULL, NULL, 1, NULL);
        JSStringRelease(name);
        return ctx;
}

static int
cmp_double(const void *a, const void *b)
{
        double x = *(const double *)a, y = *(const double *)b;

        return x < y ? -1 : x > y;
}

/*
 * --bench N: evaluate web.js in N fresh VMs (a new context group each), then
 * in N contexts sharing one group (JSC's code cache then skips reparsing).
 */
static int
bench(const char *web, int n)
{
        JSContextGroupRef group;
        JSGlobalContextRef ctx;
        double *ms = calloc((size_t)n, sizeof *ms);
        int pass, i;

        if (!ms || n < 1)
                return 2;
        for (pass = 0; pass < 2; pass++) {
                group = pass ? JSContextGroupCreate() : NULL;
                for (i = 0; i < n; i++) {
                        JSContextGroupRef g = pass ? group : JSContextGroupCreate();

                        ctx = new_context(g);
                        if (eval_file(ctx, web, &ms[i]) != 0) {
                                free(ms);
                                return 2;
                        }
                        JSGlobalContextRelease(ctx);
                        if (!pass)
                                JSContextGroupRelease(g);
                }
                if (group)
                        JSContextGroupRelease(group);
                qsort(ms, (size_t)n, sizeof *ms, cmp_double);
                printf("# web.js %s: min %.3f ms, median %.3f ms, max %.3f ms (n=%d)\n",
                       pass ? "in a shared context group" : "in a fresh VM",
                       ms[0], ms[n / 2], ms[n - 1], n);
        }
        free(ms);
        return 0;
}

int
main(int argc, char **argv)
{
        const char *web = getenv("JSRUN_WEB");
        const char *harness = getenv("JSRUN_HARNESS");
        JSGlobalContextRef ctx;
        JSStringRef done;
        JSValueRef res, exc = NULL;
        double ms = 0, failed;
        char call[64];
        int i, errors = 0;

        if (!web)
                web = "engine/web.js";
        if (!harness)
                harness = "tests/js/harness.js";
        if (argc == 3 && strcmp(argv[1], "--bench") == 0)
                return bench(web, (int)strtol(argv[2], NULL, 10));

        ctx = new_context(NULL);
        if (eval_file(ctx, web, &ms) != 0) {
                JSGlobalContextRelease(ctx);
                return 2;
        }
        printf("# web.js evaluated in %.3f ms (first VM in this process; "
               "build/jsrun --bench N for steady-state numbers)\n", ms);
        if (eval_file(ctx, harness, NULL) != 0) {
                JSGlobalContextRelease(ctx);
                return 2;
        }
        for (i = 1; i < argc; i++) {
                printf("# %s\n", argv[i]);
                if (eval_file(ctx, argv[i], NULL) != 0)
                        errors++;
        }

        /* load errors count as failures in the harness summary */
        snprintf(call, sizeof call, "__jsrunDone(%d)", errors);
        done = JSStringCreateWithUTF8CString(call);
        res = JSEvaluateScript(ctx, done, NULL, NULL, 1, &exc);
        JSStringRelease(done);
        if (exc) {
                print_exception(ctx, "__jsrunDone", exc);
                JSGlobalContextRelease(ctx);
                return 2;
        }
        failed = JSValueToNumber(ctx, res, NULL);
        JSGlobalContextRelease(ctx);
        return failed == 0 && errors == 0 ? 0 : 1;
}
