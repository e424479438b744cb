/*
 * vfsrun: build/jsrun plus two natives that reach effects/fs/vfs.c, so the JS
 * node:fs tests run against the real parent-side filesystem instead of the
 * JS fake (tests/js/fs_api.test.js picks the real one when __vfsNew
 * exists).  Linked from tests/js/jsrun.c, this file, effects/fs/vfs.c,
 * common/util.c and common/err.c.
 *
 *   __vfsNew() -> handle                    a fresh VFS (default limits)
 *   __vfsCall(handle, "fs.<op>", argsJson) -> resultJson
 *       {"ok":true,"value":...} or
 *       {"ok":false,"error":{"name":"Error","message":...,"code":"ENOENT"}}
 *       which is the result frame the broker sends for a host call.
 *
 * Usage (from the repo root): build/vfsrun engine/fs.js tests/js/fs_*.test.js
 */
#include <JavaScriptCore/JavaScript.h>
#include <cjson/cJSON.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/err.h"
#include "effects/fs/vfs.h"

void jsrun_install_natives(JSGlobalContextRef ctx);

static struct vfs **vfss;
static size_t nvfs;

static void free_all(void)
{
        for (size_t i = 0; i < nvfs; i++)
                vfs_free(vfss[i]);
        free(vfss);
}

static char *string_of(JSContextRef ctx, JSValueRef v, JSValueRef *exc)
{
        JSStringRef s = JSValueToStringCopy(ctx, v, exc);
        if (!s)
                return NULL;
        size_t cap = JSStringGetMaximumUTF8CStringSize(s);
        char *buf = malloc(cap);
        if (buf)
                JSStringGetUTF8CString(s, buf, cap);
        JSStringRelease(s);
        return buf;
}

static JSValueRef throw_msg(JSContextRef ctx, JSValueRef *exc, const char *msg)
{
        JSStringRef s = JSStringCreateWithUTF8CString(msg);
        JSValueRef arg = JSValueMakeString(ctx, s);
        JSStringRelease(s);
        *exc = JSObjectMakeError(ctx, 1, &arg, NULL);
        return JSValueMakeUndefined(ctx);
}

static JSValueRef js_vfs_new(JSContextRef ctx, JSObjectRef fn, JSObjectRef self, size_t argc,
                             const JSValueRef argv[], JSValueRef *exc)
{
        (void)fn, (void)self, (void)argc, (void)argv;
        struct vfs *v = NULL, **grown = realloc(vfss, (nvfs + 1) * sizeof(*vfss));
        struct err *e = NULL;
        if (!grown)
                return throw_msg(ctx, exc, "out of memory");
        vfss = grown;
        if (vfs_new(NULL, &v, &e) < 0) {
                JSValueRef r = throw_msg(ctx, exc, err_msg(e));
                err_free(e);
                return r;
        }
        vfss[nvfs] = v;
        return JSValueMakeNumber(ctx, (double)nvfs++);
}

static JSValueRef js_vfs_call(JSContextRef ctx, JSObjectRef fn, JSObjectRef self, size_t argc,
                              const JSValueRef argv[], JSValueRef *exc)
{
        (void)fn, (void)self;
        if (argc < 3)
                return throw_msg(ctx, exc, "__vfsCall(handle, op, argsJson)");
        double h = JSValueToNumber(ctx, argv[0], exc);
        if (!(h >= 0 && h < (double)nvfs))
                return throw_msg(ctx, exc, "__vfsCall: bad handle");
        char *op = string_of(ctx, argv[1], exc), *json = string_of(ctx, argv[2], exc);
        if (!op || !json || strncmp(op, "fs.", 3) != 0) {
                free(op), free(json);
                return throw_msg(ctx, exc, "__vfsCall: op must be fs.<op>");
        }
        cJSON *args = cJSON_Parse(json), *value = NULL, *res = cJSON_CreateObject();
        struct err *e = NULL;
        if (vfs_call(vfss[(size_t)h], op + 3, args, &value, &e) == 0) {
                cJSON_AddTrueToObject(res, "ok");
                cJSON_AddItemToObject(res, "value", value);
        } else {
                cJSON_AddFalseToObject(res, "ok");
                cJSON *er = cJSON_AddObjectToObject(res, "error");
                cJSON_AddStringToObject(er, "name", "Error");
                cJSON_AddStringToObject(er, "message", err_msg(e));
                cJSON_AddStringToObject(er, "code", vfs_error_name(err_code(e)));
                err_free(e);
        }
        char *out = cJSON_PrintUnformatted(res);
        JSStringRef s = JSStringCreateWithUTF8CString(out ? out : "null");
        JSValueRef r = JSValueMakeString(ctx, s);
        JSStringRelease(s);
        free(out), free(op), free(json);
        cJSON_Delete(args);
        cJSON_Delete(res);
        return r;
}

static void define(JSGlobalContextRef ctx, const char *name, JSObjectCallAsFunctionCallback cb)
{
        JSStringRef n = JSStringCreateWithUTF8CString(name);
        JSObjectSetProperty(ctx, JSContextGetGlobalObject(ctx), n, JSObjectMakeFunctionWithCallback(ctx, n, cb),
                            kJSPropertyAttributeDontEnum, NULL);
        JSStringRelease(n);
}

void jsrun_install_natives(JSGlobalContextRef ctx)
{
        static int once;
        if (!once++)
                atexit(free_all);
        define(ctx, "__vfsNew", js_vfs_new);
        define(ctx, "__vfsCall", js_vfs_call);
}
