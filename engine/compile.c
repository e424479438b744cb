/* engine/compile.c — turning the agent's source into a function.
 *
 * The script is wrapped CommonJS-style,
 *     (function(module, exports, require){<script>
 *     ;return typeof main === 'function' ? main : undefined;
 *     })
 * with the prefix on the script's first line, so line numbers in stack
 * traces and errors equal the file's; only columns on line 1 are shifted by
 * the prefix, which the prelude subtracts when it reports a location.
 *
 * An ES-module bundle (init's "esm", cli/agent.c) is the body of a
 * module without imports or exports; it is wrapped in an async function
 * instead, so that top-level await works (the C API evaluates scripts, not
 * modules), and the wrapper returns a promise of `main`.  Not in strict
 * mode, as CommonJS bundles ran before: JavaScriptCore eliminates tail calls
 * in strict code, and `return helper(x)` would vanish from stack traces.
 *
 * JSC's SyntaxError objects carry a line but no column.  The column is
 * recovered by parsing prefixes of the source: the shortest prefix that
 * still ends in the same error (same message, same line) ends at the
 * offending token, since a parser that fails before the end of its input
 * failed on what it had read.  That costs O(log line length) extra parses,
 * on the error path only. */
#define _GNU_SOURCE
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cleanup.h"
#include "engine/engine-internal.h"

static const char wrap_prefix[] = "(function(module, exports, require){";
static const char esm_prefix[] = "(async function(module, exports, require){";
static const char wrap_suffix[] = "\n;return typeof main === 'function' ? main : undefined;\n})";

static JSStringRef prop_string(JSContextRef ctx, JSValueRef obj, const char *name)
{
        if (!obj || !JSValueIsObject(ctx, obj))
                return NULL;
        JSStringRef n = JSStringCreateWithUTF8CString(name);
        JSValueRef v = JSObjectGetProperty(ctx, (JSObjectRef)obj, n, NULL);
        JSStringRelease(n);
        if (!v || !JSValueIsString(ctx, v))
                return NULL;
        return JSValueToStringCopy(ctx, v, NULL);
}

static double prop_number(JSContextRef ctx, JSValueRef obj, const char *name)
{
        if (!obj || !JSValueIsObject(ctx, obj))
                return -1;
        JSStringRef n = JSStringCreateWithUTF8CString(name);
        JSValueRef v = JSObjectGetProperty(ctx, (JSObjectRef)obj, n, NULL);
        JSStringRelease(n);
        if (!v || !JSValueIsNumber(ctx, v))
                return -1;
        return JSValueToNumber(ctx, v, NULL);
}

static bool is_line_break(JSChar c)
{
        return c == '\n' || c == '\r' || c == 0x2028 || c == 0x2029;
}

static bool is_word(JSChar c)
{
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '$' ||
               c >= 0x80;
}

/* Offsets of the start and end (exclusive, before the break) of a 1-based
 * line, counting breaks the way JSC does (\r\n is one). */
static size_t line_span(const JSChar *p, size_t n, unsigned line, size_t *ret_end)
{
        size_t i = 0;
        for (unsigned cur = 1; cur < line && i < n;) {
                JSChar c = p[i++];
                if (c == '\r' && i < n && p[i] == '\n')
                        i++;
                if (is_line_break(c))
                        cur++;
        }
        size_t end = i;
        while (end < n && !is_line_break(p[end]))
                end++;
        *ret_end = end;
        return i;
}

static unsigned count_lines(const JSChar *p, size_t n)
{
        unsigned lines = 1;
        for (size_t i = 0; i < n; i++) {
                if (p[i] == '\r' && i + 1 < n && p[i + 1] == '\n')
                        i++;
                if (is_line_break(p[i]))
                        lines++;
        }
        return lines;
}

/* Does the prefix p[0..len) fail with the same message on the same line? */
static bool same_error(JSContextRef ctx, const JSChar *p, size_t len, JSStringRef url, JSStringRef msg,
                       double line)
{
        JSStringRef s = JSStringCreateWithCharacters(p, len);
        JSValueRef exc = NULL;
        bool ok = JSCheckScriptSyntax(ctx, s, url, 1, &exc);
        JSStringRelease(s);
        if (ok || !exc || prop_number(ctx, exc, "line") != line)
                return false;
        JSStringRef m = prop_string(ctx, exc, "message");
        bool same = m && JSStringIsEqual(m, msg);
        if (m)
                JSStringRelease(m);
        return same;
}

/* The first quoted part of a message ("Unexpected identifier 'bar'"). */
static bool quoted_token(JSStringRef msg, const JSChar **ret_tok, size_t *ret_len)
{
        const JSChar *m = JSStringGetCharactersPtr(msg);
        size_t n = JSStringGetLength(msg);
        for (size_t i = 0; i < n; i++) {
                if (m[i] != '\'' && m[i] != '"')
                        continue;
                for (size_t j = i + 1; j < n; j++) {
                        if (m[j] == m[i]) {
                                *ret_tok = m + i + 1;
                                *ret_len = j - i - 1;
                                return j > i + 1;
                        }
                }
                return false;
        }
        return false;
}

/* 1-based column (UTF-16 units) of the token a syntax error points at. */
static unsigned error_column(JSContextRef ctx, const JSChar *p, size_t n, JSStringRef url, JSStringRef msg,
                             unsigned line)
{
        size_t end;
        size_t start = line_span(p, n, line, &end);
        if (JSStringIsEqualToUTF8CString(msg, "Unexpected end of script"))
                return (unsigned)(end - start + 1);
        if (!same_error(ctx, p, end, url, msg, line) || same_error(ctx, p, start, url, msg, line))
                return 1;  /* the error depends on text past its line */
        size_t lo = start, hi = end;
        while (hi - lo > 1) {
                size_t mid = lo + (hi - lo) / 2;
                if (same_error(ctx, p, mid, url, msg, line))
                        hi = mid;
                else
                        lo = mid;
        }
        /* hi is the end of the offending token; find its start: the token
         * the message quotes, else a whole word, else the last character. */
        size_t tok = hi - 1;
        const JSChar *t;
        size_t tl;
        if (quoted_token(msg, &t, &tl) && hi - start >= tl && memcmp(p + hi - tl, t, tl * sizeof(JSChar)) == 0) {
                tok = hi - tl;
        } else if (quoted_token(msg, &t, &tl) && hi - start >= tl + 2 && (p[hi - 1] == '"' || p[hi - 1] == '\'') &&
                   memcmp(p + hi - 1 - tl, t, tl * sizeof(JSChar)) == 0) {
                tok = hi - tl - 2;
        } else {
                while (tok > start && is_word(p[tok]) && is_word(p[tok - 1]))
                        tok--;
        }
        return (unsigned)(tok - start + 1);
}

/* Build the done frame for a syntax error at the script's line and column. */
static char *syntax_done(JSContextRef ctx, JSValueRef exc, JSStringRef filename, unsigned line, unsigned column)
{
        _cleanup_free_ char *name = NULL, *msg = NULL, *file = NULL;
        JSStringRef s = prop_string(ctx, exc, "name");
        if (s) {
                name = engine_js_to_utf8(s, NULL);
                JSStringRelease(s);
        }
        s = prop_string(ctx, exc, "message");
        if (s) {
                msg = engine_js_to_utf8(s, NULL);
                JSStringRelease(s);
        }
        file = engine_js_to_utf8(filename, NULL);
        char stack[512];
        snprintf(stack, sizeof(stack), "%s:%u:%u", file ? file : "", line, column);

        cJSON *done = cJSON_CreateObject();
        cJSON *error = cJSON_CreateObject();
        cJSON_AddStringToObject(done, "type", "done");
        cJSON_AddFalseToObject(done, "ok");
        cJSON_AddStringToObject(done, "kind", "error");
        cJSON_AddStringToObject(error, "name", name ? name : "SyntaxError");
        cJSON_AddStringToObject(error, "message", msg ? msg : "");
        cJSON_AddStringToObject(error, "stack", stack);
        cJSON_AddStringToObject(error, "file", file ? file : "");
        cJSON_AddNumberToObject(error, "line", line);
        cJSON_AddNumberToObject(error, "column", column);
        cJSON_AddItemToObject(done, "error", error);
        char *text = cJSON_PrintUnformatted(done);
        cJSON_Delete(done);
        return text;
}

static bool is_syntax_error(JSContextRef ctx, JSValueRef exc)
{
        JSStringRef name = prop_string(ctx, exc, "name");
        bool r = name && JSStringIsEqualToUTF8CString(name, "SyntaxError");
        if (name)
                JSStringRelease(name);
        return r && prop_number(ctx, exc, "line") >= 1;
}

/* Report a syntax error of the wrapped source at the script's real place. */
static void report_syntax_error(struct engine *e, JSValueRef exc, const JSChar *wrapped, size_t wrapped_len,
                                unsigned plen, const JSChar *src, size_t src_len, JSStringRef filename)
{
        JSContextRef ctx = e->ctx;
        unsigned line = (unsigned)prop_number(ctx, exc, "line");
        unsigned column = 1;
        unsigned src_lines = count_lines(src, src_len);
        char *text = NULL;
        if (line <= src_lines) {
                JSStringRef msg = prop_string(ctx, exc, "message");
                if (msg) {
                        column = error_column(ctx, wrapped, wrapped_len, filename, msg, line);
                        JSStringRelease(msg);
                }
                if (line == 1)
                        column = column > plen ? column - plen : 1;
                text = syntax_done(ctx, exc, filename, line, column);
        } else {
                /* Reported on the wrapper's closing line: the script ended
                 * early (an unclosed block, a trailing operator).  The bare
                 * script says where. */
                JSStringRef s = JSStringCreateWithCharacters(src, src_len);
                JSValueRef exc2 = NULL;
                bool ok = JSCheckScriptSyntax(ctx, s, filename, 1, &exc2);
                JSStringRelease(s);
                if (!ok && exc2 && is_syntax_error(ctx, exc2)) {
                        line = (unsigned)prop_number(ctx, exc2, "line");
                        JSStringRef msg = prop_string(ctx, exc2, "message");
                        if (msg) {
                                column = error_column(ctx, src, src_len, filename, msg, line);
                                JSStringRelease(msg);
                        }
                        text = syntax_done(ctx, exc2, filename, line, column);
                } else {
                        size_t end;
                        size_t start = line_span(src, src_len, src_lines, &end);
                        text = syntax_done(ctx, exc, filename, src_lines, (unsigned)(end - start + 1));
                }
        }
        if (e->end == ENGINE_RUNNING && text) {
                e->done_text = text;
                e->end = ENGINE_SETTLED;
        } else {
                free(text);
        }
}

static JSChar *append_ascii(JSChar *d, const char *s)
{
        while (*s)
                *d++ = (JSChar)(unsigned char)*s++;
        return d;
}

/* Compile the agent.  Returns the wrapper function (it returns the script's
 * `main`, if any), or NULL when the run is over (a syntax error became the
 * done frame, or the CPU budget ran out) or *ret_exception is set (some other
 * exception while compiling, e.g. the parser ran out of stack). */
JSObjectRef engine_compile(struct engine *e, JSStringRef script, JSStringRef filename, bool esm,
                           unsigned *ret_prefix_len, JSValueRef *ret_exception)
{
        JSContextRef ctx = e->ctx;
        const char *prefix = esm ? esm_prefix : wrap_prefix;
        *ret_exception = NULL;
        *ret_prefix_len = (unsigned)strlen(prefix);
        const JSChar *src = JSStringGetCharactersPtr(script);
        size_t src_len = JSStringGetLength(script);
        size_t len = strlen(prefix) + src_len + strlen(wrap_suffix);
        _cleanup_free_ JSChar *buf = malloc(len * sizeof(JSChar));
        if (!buf) {
                *ret_exception = engine_make_error(ctx, "RangeError", "out of memory compiling the agent");
                return NULL;
        }
        JSChar *d = append_ascii(buf, prefix);
        memcpy(d, src, src_len * sizeof(JSChar));
        append_ascii(d + src_len, wrap_suffix);

        JSStringRef wrapped = JSStringCreateWithCharacters(buf, len);
        JSValueRef exc = NULL;
        JSValueRef fn = NULL;
        if (engine_arm(e))
                fn = JSEvaluateScript(ctx, wrapped, NULL, filename, 1, &exc);
        JSStringRelease(wrapped);
        if (e->terminated) {
                if (e->end == ENGINE_RUNNING)
                        e->end = ENGINE_CPU_LIMIT;
                return NULL;
        }
        if (e->end != ENGINE_RUNNING)
                return NULL;
        if (exc) {
                if (is_syntax_error(ctx, exc))
                        report_syntax_error(e, exc, buf, len, *ret_prefix_len, src, src_len, filename);
                else
                        *ret_exception = exc;
                return NULL;
        }
        if (!fn || !JSValueIsObject(ctx, fn) || !JSObjectIsFunction(ctx, (JSObjectRef)fn)) {
                /* A script like "}); (0" closes the wrapper early. */
                *ret_exception = engine_make_error(ctx, "SyntaxError",
                                                   "the agent script closes its module wrapper early (unbalanced '}')");
                return NULL;
        }
        return (JSObjectRef)fn;
}
