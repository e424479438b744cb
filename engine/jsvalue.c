/* engine/jsvalue.c — small JavaScriptCore value helpers every engine file
 * uses (errors, strings as UTF-8).  A leaf: it calls no other engine file,
 * so transport.c and natives.c no longer depend on each other both ways. */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine-internal.h"

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

char *engine_js_to_utf8(JSStringRef s, size_t *ret_len)
{
        size_t max = JSStringGetMaximumUTF8CStringSize(s);
        char *buf = malloc(max);
        if (!buf)
                return NULL;
        size_t n = JSStringGetUTF8CString(s, buf, max);  /* counts the NUL */
        if (n == 0)
                buf[0] = '\0';
        if (ret_len)
                *ret_len = n ? n - 1 : 0;
        return buf;
}

char *engine_value_to_utf8(JSContextRef ctx, JSValueRef v, size_t *ret_len)
{
        JSStringRef s = JSValueToStringCopy(ctx, v, NULL);
        if (!s)
                return NULL;
        char *r = engine_js_to_utf8(s, ret_len);
        JSStringRelease(s);
        return r;
}
