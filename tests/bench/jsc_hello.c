/* tests/bench/jsc_hello.c — benchmark baseline: the cost of a bare
 * JavaScriptCore context with nothing of chidori around it.  Creates a global
 * context, evaluates one line, prints the result as a C string, releases
 * everything and exits 0 (1 if the engine fails).
 *
 * Build: gcc -O2 -Wall -Wextra -Werror $(pkg-config --cflags javascriptcoregtk-4.1) \
 *          tests/bench/jsc_hello.c -o build/jsc_hello $(pkg-config --libs javascriptcoregtk-4.1)
 */
#include <stdio.h>
#include <stdlib.h>

#include <JavaScriptCore/JavaScript.h>

/* Copy a JS string into a malloc'd UTF-8 C string. */
static char *js_to_cstr(JSStringRef s)
{
        size_t cap = JSStringGetMaximumUTF8CStringSize(s);
        char *buf = malloc(cap);
        if (buf)
                JSStringGetUTF8CString(s, buf, cap);
        return buf;
}

int main(void)
{
        JSGlobalContextRef ctx = JSGlobalContextCreate(NULL);
        if (!ctx) {
                fputs("jsc_hello: cannot create a JavaScriptCore context\n", stderr);
                return 1;
        }
        JSStringRef script = JSStringCreateWithUTF8CString("\"hello \" + (1+1)");
        JSValueRef exc = NULL;
        JSValueRef v = JSEvaluateScript(ctx, script, NULL, NULL, 1, &exc);
        JSStringRelease(script);

        /* on failure, convert the exception instead, to say what went wrong */
        int rc = 0;
        JSStringRef str = JSValueToStringCopy(ctx, v ? v : exc, NULL);
        char *text = str ? js_to_cstr(str) : NULL;
        if (!v || !text) {
                fprintf(stderr, "jsc_hello: evaluation failed: %s\n", text ? text : "(no message)");
                rc = 1;
        } else {
                puts(text);
        }
        free(text);
        if (str)
                JSStringRelease(str);
        JSGlobalContextRelease(ctx);
        return rc;
}
