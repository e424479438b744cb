/* tests/bench/jsc_files.c — diagnostic baseline between jsc_hello and
 * chidori: a bare JavaScriptCore context that first evaluates the given
 * script files (e.g. engine/web.js and engine/prelude.js), then the same one
 * line as jsc_hello, prints it and exits.  So `jsc_files web.js prelude.js`
 * minus `jsc_hello` is what evaluating the engine's own JavaScript costs at
 * every start, with nothing else of chidori around it.
 *
 * prelude.js expects the engine's natives as __chidoriNative; a stub object
 * whose methods throw stands in (the prelude only captures it at start-up).
 * Usage: jsc_files FILE...   exit 0, or 1 with the exception on stderr. */
#include <stdio.h>
#include <stdlib.h>

#include <JavaScriptCore/JavaScript.h>

static char *slurp(const char *path)
{
        FILE *f = fopen(path, "rb");
        if (!f)
                return NULL;
        size_t cap = 1 << 16, len = 0;
        char *buf = malloc(cap);
        size_t n;
        while (buf && (n = fread(buf + len, 1, cap - len - 1, f)) > 0) {
                len += n;
                if (cap - len < 2) {
                        char *nb = realloc(buf, cap *= 2);
                        if (!nb) {
                                free(buf);
                                buf = NULL;
                        } else {
                                buf = nb;
                        }
                }
        }
        fclose(f);
        if (buf)
                buf[len] = '\0';
        return buf;
}

static int eval(JSGlobalContextRef ctx, const char *src, const char *name, int print)
{
        JSStringRef s = JSStringCreateWithUTF8CString(src);
        JSStringRef url = JSStringCreateWithUTF8CString(name);
        JSValueRef exc = NULL;
        JSValueRef v = JSEvaluateScript(ctx, s, NULL, url, 1, &exc);
        JSStringRelease(s);
        JSStringRelease(url);
        if (v && !print)
                return 0;
        JSStringRef str = JSValueToStringCopy(ctx, v ? v : exc, NULL);
        char text[512] = "(no message)";
        if (str) {
                JSStringGetUTF8CString(str, text, sizeof(text));
                JSStringRelease(str);
        }
        if (!v) {
                fprintf(stderr, "jsc_files: %s: %s\n", name, text);
                return 1;
        }
        puts(text);
        return 0;
}

int main(int argc, char **argv)
{
        JSGlobalContextRef ctx = JSGlobalContextCreate(NULL);
        if (!ctx)
                return 1;
        int rc = eval(ctx,
                      "Object.defineProperty(globalThis, '__chidoriNative', { configurable: true, value: {"
                      " call() { throw new Error('stub'); }, callSync() { throw new Error('stub'); },"
                      " finish() { throw new Error('stub'); } } });",
                      "stub", 0);
        for (int i = 1; i < argc && rc == 0; i++) {
                char *src = slurp(argv[i]);
                if (!src) {
                        perror(argv[i]);
                        rc = 1;
                        break;
                }
                rc = eval(ctx, src, argv[i], 0);
                free(src);
        }
        if (rc == 0)
                rc = eval(ctx, "\"hello \" + (1+1)", "hello", 1);
        JSGlobalContextRelease(ctx);
        return rc;
}
