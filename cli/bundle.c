/* cli/bundle.c — esbuild's argv, its entry point, its outputs read and
 * checked (bundle.h); shared by chidori and chidori-broker.
 *
 * The bundle is an ES module (the only output format in which esbuild
 * allows top-level await) with neither imports nor exports, so the engine
 * can run it as the body of an async function (engine/compile.c):
 *   - the entry point (stdin) imports the agent and hands its `default` (or
 *     `main`) export to the prelude through module.exports;
 *   - the node: modules the engine provides (node:fs, node:path, ... and
 *     the bare names fs, path, ...) are aliased to one-line CommonJS shims
 *     that call the prelude's require() (BUNDLE_SHIMS, written by the
 *     monitor: cli/bundlebox.c);
 *   - any other `import ... from 'node:xyz'` is refused here, naming the
 *     module; `require('node:xyz')` stays a runtime call the prelude refuses.
 * esbuild's metafile lists every input: any outside the agent's own
 * directory makes the load fail (the box shows esbuild only the agent's
 * folder, so it cannot read such a file anyway: this names the import).
 */
#define _GNU_SOURCE
#include "cli/bundle.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/cli.h"
#include "common/cleanup.h"
#include "common/text.h"
#include "common/util.h"

static const char *const provided[] = { BUNDLE_PROVIDED_LIST };

void agent_free(struct agent *a)
{
        if (!a)
                return;
        sourcemap_free(a->map);
        free(a->map_warning);
        free(a->path);
        free(a->abspath);
        free(a->filename);
        if (a->script != a->source)
                free(a->script);
        free(a->source);
        memset(a, 0, sizeof(*a));
}


static bool has_suffix(const char *s, const char *suf)
{
        size_t a = strlen(s), b = strlen(suf);
        return a >= b && strcmp(s + a - b, suf) == 0;
}

/* A line that starts (after blanks) with an import or export statement. */
static bool looks_like_module(const char *src)
{
        const char *p = src;
        while (*p) {
                while (*p == ' ' || *p == '\t')
                        p++;
                const char *kw = NULL;
                if (strncmp(p, "import", 6) == 0)
                        kw = p + 6;
                else if (strncmp(p, "export", 6) == 0)
                        kw = p + 6;
                if (kw && (*kw == ' ' || *kw == '{' || *kw == '*' || *kw == '"' || *kw == '\'' || *kw == '\t'))
                        return true;
                p = strchr(p, '\n');
                if (!p)
                        break;
                p++;
        }
        return false;
}

bool bundle_needed(const char *path, const char *src)
{
        static const char *ts[] = { ".ts", ".mts", ".cts", ".tsx", ".mjs", ".jsx" };
        for (size_t i = 0; i < ARRAY_SIZE(ts); i++)
                if (has_suffix(path, ts[i]))
                        return true;
        return looks_like_module(src);
}

void bundle_argv_free(char **argv)
{
        for (size_t i = 0; argv && argv[i]; i++)
                free(argv[i]);
        free(argv);
}

char **bundle_argv(void)
{
        /* import() becomes require() (so that a missing module fails where
         * it is called, as require does); import.meta is {} as it was in
         * CommonJS bundles.  The bundle goes to stdout with its map inline,
         * the metafile to fd 3 (the box has no writable file). */
        static const char *const fixed[] = {
                "--bundle", "--format=esm", "--platform=neutral", "--target=es2022", "--log-level=error",
                "--color=false", "--charset=utf8", "--external:node:*", "--main-fields=module,main",
                "--legal-comments=none", "--sourcemap=inline", "--sources-content=false",
                "--supported:dynamic-import=false", "--define:import.meta={}", "--sourcefile=" BUNDLE_ENTRY,
                "--metafile=/dev/fd/3", "--outfile=/dev/stdout",
        };
        size_t n = ARRAY_SIZE(fixed) + 2 * ARRAY_SIZE(provided);
        char **argv = calloc(n + 1, sizeof(*argv));
        if (!argv)
                return NULL;
        size_t k = 0;
        for (size_t i = 0; i < ARRAY_SIZE(fixed); i++)
                if (!(argv[k++] = strdup(fixed[i])))
                        goto fail;
        /* Both node:x and x name the shim of x. */
        for (size_t i = 0; i < ARRAY_SIZE(provided); i++)
                if (asprintf(&argv[k++], "--alias:node:%s=" BUNDLE_SHIMS "/mods/%s", provided[i], provided[i]) < 0 ||
                    asprintf(&argv[k++], "--alias:%s=" BUNDLE_SHIMS "/mods/%s", provided[i], provided[i]) < 0) {
                        argv[k - 1] = NULL;
                        goto fail;
                }
        return argv;
fail:
        bundle_argv_free(argv);
        return NULL;
}

char *bundle_entry(const char *agent_abs)
{
        cJSON *s = cJSON_CreateString(agent_abs);
        _cleanup_free_ char *quoted = s ? cJSON_PrintUnformatted(s) : NULL;
        cJSON_Delete(s);
        char *entry = NULL;
        if (!quoted ||
            asprintf(&entry,
                     "import * as agent from %s;\n"
                     "if (typeof agent.default === \"function\") module.exports = agent;\n"
                     "else if (typeof agent.main === \"function\") module.exports = { default: agent.main };\n",
                     quoted) < 0)
                return NULL;
        return entry;
}

void bundle_out_free(struct bundle_out *o)
{
        free(o->out);
        free(o->err);
        free(o->meta);
        memset(o, 0, sizeof(*o));
}

int bundle_collect(int fds[4], const char *entry, long timeout_ms, struct bundle_out *o, struct err **err)
{
        memset(o, 0, sizeof(*o));
        /* The entry is a few hundred bytes: within any pipe's buffer. */
        size_t elen = strlen(entry);
        ssize_t w;
        while ((w = write(fds[0], entry, elen)) < 0 && errno == EINTR)
                ;
        close(fds[0]);
        fds[0] = -1;
        char **buf[3] = { &o->out, &o->err, &o->meta };
        size_t *len[3] = { &o->out_len, &o->err_len, &o->meta_len };
        const size_t max[3] = { BUNDLE_OUT_MAX, BUNDLE_ERR_MAX, BUNDLE_META_MAX };
        size_t cap[3] = { 0, 0, 0 };
        struct pollfd p[3];
        for (int i = 0; i < 3; i++)
                p[i] = (struct pollfd){ .fd = fds[i + 1], .events = POLLIN };
        int open_fds = 3, rc = w == (ssize_t)elen ? 0 : err_set(err, errno ? errno : EPIPE, "give esbuild its entry point");
        double end = timeout_ms > 0 ? mono_ms() + (double)timeout_ms : 0;
        while (open_fds > 0 && rc == 0) {
                int wait = -1;
                if (end > 0) {
                        double left = end - mono_ms();
                        if (left <= 0) {
                                rc = err_set(err, 0, "esbuild did not finish within %ld s (its box's deadline); the agent was not run",
                                             timeout_ms / 1000);
                                break;
                        }
                        wait = (int)left + 1;
                }
                int r = poll(p, 3, wait);
                if (r < 0 && errno == EINTR)
                        continue;
                if (r < 0) {
                        rc = err_set(err, errno, "poll");
                        break;
                }
                for (int i = 0; i < 3 && rc == 0; i++) {
                        if (p[i].fd < 0 || !p[i].revents)
                                continue;
                        if (*len[i] + 65536 + 1 > cap[i]) {
                                size_t nc = cap[i] ? cap[i] * 2 : 131072;
                                if (*len[i] >= max[i]) {
                                        rc = err_setc(err, AGENT_E_BUNDLE, EFBIG,
                                                      "esbuild wrote more than %zu MiB; the bundle is too large",
                                                      max[i] >> 20);
                                        break;
                                }
                                char *nb = realloc(*buf[i], nc);
                                if (!nb) {
                                        rc = err_set(err, ENOMEM, "bundle");
                                        break;
                                }
                                *buf[i] = nb;
                                cap[i] = nc;
                        }
                        ssize_t n = read(p[i].fd, *buf[i] + *len[i], cap[i] - *len[i] - 1);
                        if (n < 0 && (errno == EINTR || errno == EAGAIN))
                                continue;
                        if (n <= 0) {
                                close(p[i].fd);
                                p[i].fd = fds[i + 1] = -1;
                                open_fds--;
                                continue;
                        }
                        *len[i] += (size_t)n;
                }
        }
        for (int i = 0; i < 3; i++) {
                if (p[i].fd >= 0)
                        close(p[i].fd);
                fds[i + 1] = -1;
                if (!*buf[i])
                        *buf[i] = calloc(1, 1);
                if (*buf[i])
                        (*buf[i])[*len[i]] = '\0';
                else if (rc == 0)
                        rc = err_set(err, ENOMEM, "bundle");
        }
        if (rc < 0)
                bundle_out_free(o);
        return rc;
}

/* Node's built-in modules, for the message when an agent asks for one the
 * sandbox does not have.  engine/prelude.js keeps the same list. */
static const char *const node_builtins[] = {
        "assert", "async_hooks", "buffer", "child_process", "cluster", "console", "constants", "crypto",
        "dgram", "diagnostics_channel", "dns", "domain", "events", "fs", "http", "http2", "https",
        "inspector", "module", "net", "os", "path", "perf_hooks", "process", "punycode", "querystring",
        "readline", "repl", "sea", "sqlite", "stream", "string_decoder", "sys", "test", "timers", "tls",
        "trace_events", "tty", "url", "util", "v8", "vm", "wasi", "worker_threads", "zlib",
};
#define PROVIDED                                                                                             \
        "node:assert, node:buffer, node:crypto, node:events, node:fs, node:fs/promises, node:path, "          \
        "node:process, node:querystring, node:stream, node:string_decoder, node:timers, node:url, node:util"

static bool is_node_builtin(const char *name, size_t len)
{
        if (len > 5 && strncmp(name, "node:", 5) == 0)
                return true;
        const char *slash = memchr(name, '/', len);
        size_t base = slash ? (size_t)(slash - name) : len;
        for (size_t i = 0; i < ARRAY_SIZE(node_builtins); i++)
                if (strlen(node_builtins[i]) == base && strncmp(node_builtins[i], name, base) == 0)
                        return true;
        return false;
}

static bool is_beneath(const char *key, const char *cwd, const char *dir);

/* 'Could not resolve "X"' where X is a path outside the agent's directory
 * (from the importer's folder, lexically): the box has no such file to
 * show esbuild; say why.  `file` (relative to cwd) is the importer, flen
 * its name's length, loclen its "file:line:col"'s. */
static char *outside(const char *m, size_t mlen, const char *file, size_t flen, size_t loclen, const char *cwd,
                     const char *dir)
{
        if (!cwd || mlen <= 19 || strncmp(m, "Could not resolve \"", 19) != 0)
                return NULL;
        const char *x = m + 19, *q = memchr(x, '"', mlen - 19);
        if (!q || !(x[0] == '/' || strncmp(x, "./", 2) == 0 || strncmp(x, "../", 3) == 0))
                return NULL;
        _cleanup_free_ char *spec = strndup(x, (size_t)(q - x)), *importer = strndup(file, flen);
        _cleanup_free_ char *from = importer ? sourcemap_join(cwd, importer) : NULL;
        char *slash = from ? strrchr(from, '/') : NULL;
        if (!spec || !slash)
                return NULL;
        slash[slash == from ? 1 : 0] = '\0';
        _cleanup_free_ char *rel = spec[0] == '/' ? NULL : sourcemap_join(from, spec);
        _cleanup_free_ char *abs = sourcemap_join("/", spec[0] == '/' ? spec : rel ? rel : "");
        if (!abs || is_beneath(abs, "/", dir))
                return NULL;
        char *s = NULL;
        if (asprintf(&s, "the agent imports '%s', which is outside its directory %s; agents may only bundle files "
                         "beneath their own directory (%.*s)",
                     spec, dir, (int)loclen, file) < 0)
                return NULL;
        return s;
}

/* Turn esbuild's "✘ [ERROR] msg\n\n    file:line:col:" into "msg (file:line:col)". */
static char *esbuild_diagnosis(const char *text, const char *cwd, const char *dir)
{
        const char *m = strstr(text, "[ERROR] ");
        if (!m)
                return strdup(text);
        m += 8;
        const char *eol = strchr(m, '\n');
        size_t mlen = eol ? (size_t)(eol - m) : strlen(m);
        const char *loc = eol;
        char where[512] = "";
        while (loc && *loc) {
                while (*loc == '\n' || *loc == ' ')
                        loc++;
                const char *le = strchr(loc, '\n');
                size_t ll = le ? (size_t)(le - loc) : strlen(loc);
                if (ll > 1 && loc[ll - 1] == ':' && memchr(loc, ':', ll - 1)) {
                        snprintf(where, sizeof(where), " (%.*s)", (int)(ll - 1), loc);
                        const char *colon = memchr(loc, ':', ll - 1);
                        char *o = outside(m, mlen, loc, (size_t)(colon - loc), ll - 1, cwd, dir);
                        if (o)
                                return o;
                        break;
                }
                loc = le;
        }
        /* 'Could not resolve "os"': say that the sandbox has no such module
         * (esbuild's own hint, --platform=node, does not apply here). */
        char hint[512] = "";
        if (mlen > 19 && strncmp(m, "Could not resolve \"", 19) == 0) {
                const char *q = memchr(m + 19, '"', mlen - 19);
                if (q && is_node_builtin(m + 19, (size_t)(q - m - 19)))
                        snprintf(hint, sizeof(hint),
                                 "; '%.*s' is a Node.js built-in module, which is not available in the chidori "
                                 "sandbox (it provides " PROVIDED ")",
                                 (int)(q - m - 19), m + 19);
        }
        char *s = NULL;
        if (asprintf(&s, "%.*s%s%s", (int)mlen, m, where, hint) < 0)
                return NULL;
        return s;
}

/* A metafile key (relative to esbuild's working directory) that names one
 * of chidori's own files: the entry point or a shim. */
static bool is_ours(const char *key, const char *cwd)
{
        _cleanup_free_ char *abs = sourcemap_join(cwd, key);
        size_t n = strlen(BUNDLE_SHIMS);
        return abs && strncmp(abs, BUNDLE_SHIMS, n) == 0 && abs[n] == '/';
}

/* A metafile key beneath the agent's directory. */
static bool is_beneath(const char *key, const char *cwd, const char *dir)
{
        _cleanup_free_ char *abs = sourcemap_join(cwd, key);
        size_t n = strlen(dir);
        if (n == 1 && dir[0] == '/')
                return abs != NULL;
        return abs && strncmp(abs, dir, n) == 0 && (abs[n] == '/' || abs[n] == '\0');
}

/* Which input imports `path` (for the message). */
static const char *importer_of(const cJSON *inputs, const char *path, const char *cwd)
{
        const cJSON *in;
        cJSON_ArrayForEach(in, inputs)
        {
                const cJSON *imp;
                cJSON_ArrayForEach(imp, cJSON_GetObjectItemCaseSensitive(in, "imports"))
                {
                        const cJSON *p = cJSON_GetObjectItemCaseSensitive(imp, "path");
                        if (cJSON_IsString(p) && strcmp(p->valuestring, path) == 0 && !is_ours(in->string, cwd))
                                return in->string;
                }
        }
        return "the agent";
}

/* Every input is beneath the agent's directory (or is one of ours), and the
 * bundle imports nothing: an import statement left in it names a module
 * chidori does not provide. */
static int check_meta(const char *text, const char *cwd, const char *dir, struct err **err)
{
        cJSON *meta = cJSON_Parse(text);
        const cJSON *inputs = cJSON_GetObjectItemCaseSensitive(meta, "inputs");
        const cJSON *outputs = cJSON_GetObjectItemCaseSensitive(meta, "outputs");
        int rc = 0;
        if (!cJSON_IsObject(inputs) || !cJSON_IsObject(outputs)) {
                cJSON_Delete(meta);
                return err_setc(err, AGENT_E_BUNDLE, 0, "esbuild's metafile has no inputs or outputs");
        }
        const cJSON *in;
        cJSON_ArrayForEach(in, inputs)
        {
                const char *k = in->string;
                if (!is_ours(k, cwd) && !is_beneath(k, cwd, dir)) {
                        rc = err_setc(err, AGENT_E_IMPORT, 0,
                                      "the agent imports '%s', which is outside its directory %s; agents may "
                                      "only bundle files beneath their own directory",
                                      k, dir);
                        break;
                }
        }
        /* One output: the bundle (its map is inline). */
        const cJSON *out;
        cJSON_ArrayForEach(out, outputs)
        {
                if (rc < 0)
                        break;
                const cJSON *imp;
                cJSON_ArrayForEach(imp, cJSON_GetObjectItemCaseSensitive(out, "imports"))
                {
                        const cJSON *path = cJSON_GetObjectItemCaseSensitive(imp, "path");
                        const cJSON *kind = cJSON_GetObjectItemCaseSensitive(imp, "kind");
                        if (!cJSON_IsString(path) || !cJSON_IsString(kind) ||
                            strcmp(kind->valuestring, "require-call") == 0 ||
                            strcmp(kind->valuestring, "require-resolve") == 0)
                                continue;
                        rc = err_setc(err, AGENT_E_IMPORT, 0,
                                      "%s imports '%s', which is not available in the chidori sandbox (it "
                                      "provides " PROVIDED ")",
                                      importer_of(inputs, path->valuestring, cwd), path->valuestring);
                        break;
                }
        }
        cJSON_Delete(meta);
        return rc;
}

static int b64(unsigned char c)
{
        if (c >= 'A' && c <= 'Z')
                return c - 'A';
        if (c >= 'a' && c <= 'z')
                return c - 'a' + 26;
        if (c >= '0' && c <= '9')
                return c - '0' + 52;
        return c == '+' ? 62 : c == '/' ? 63 : -1;
}

/* Decode base64 text (padding optional) into a malloc'd NUL-terminated string. */
static char *b64_decode(const char *s, size_t n)
{
        char *out = malloc(n / 4 * 3 + 4);
        if (!out)
                return NULL;
        size_t k = 0;
        unsigned acc = 0;
        int bits = 0;
        for (size_t i = 0; i < n; i++) {
                if (s[i] == '=')
                        break;
                int v = b64((unsigned char)s[i]);
                if (v < 0) {
                        free(out);
                        return NULL;
                }
                acc = (acc << 6) | (unsigned)v;
                bits += 6;
                if (bits >= 8) {
                        bits -= 8;
                        out[k++] = (char)((acc >> bits) & 0xff);
                }
        }
        out[k] = '\0';
        return out;
}

/* The inline map at the end of the bundle: cut off, decoded and parsed
 * (its sources are relative to the output's folder, /dev). */
static void load_map(struct agent *a, char *script, const char *dir)
{
        static const char tag[] = "//# sourceMappingURL=data:application/json;base64,";
        char *at = NULL;
        for (char *p = script; (p = strstr(p, tag)); p++)
                at = p;
        struct err *err = NULL;
        _cleanup_free_ char *json = NULL;
        if (!at) {
                err_set(&err, 0, "no inline map");
        } else {
                const char *b = at + strlen(tag);
                size_t n = strcspn(b, "\r\n");
                json = b64_decode(b, n);
                *at = '\0';
                if (!json)
                        err_set(&err, 0, "its base64 is malformed");
        }
        if (!json || sourcemap_parse(json, "/dev", dir, &a->map, &err) < 0) {
                if (asprintf(&a->map_warning,
                             "esbuild's source map for %s is unusable (%s); error positions will point into the bundle",
                             a->path, err_msg(err)) < 0)
                        a->map_warning = NULL;
                a->map = NULL;
        }
        err_free(err);
}

int bundle_finish(struct agent *a, const char *cwd, const char *dir, int status, struct bundle_out *o,
                  struct err **err)
{
        if (!(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
                if (!strstr(o->err, "[ERROR] "))
                        return err_setc(err, AGENT_E_BUNDLE, 0, "esbuild failed (%s)%s%.300s",
                                        WIFSIGNALED(status) ? strsignal(WTERMSIG(status)) : "exit status",
                                        o->err[0] ? ": " : "", o->err);
                _cleanup_free_ char *d = esbuild_diagnosis(o->err, cwd, dir);
                const char *m = d ? d : o->err;
                bool import = strncmp(m, "Could not resolve", 17) == 0 || strncmp(m, "the agent imports", 17) == 0;
                return err_setc(err, import ? AGENT_E_IMPORT : AGENT_E_BUNDLE, 0,
                                "%s", m);
        }
        if (check_meta(o->meta, cwd, dir, err) < 0)
                return -1;
        char *script = o->out;
        o->out = NULL;
        load_map(a, script, dir);
        a->script = script;
        a->esm = true;
        return 0;
}

int bundle_report_error(FILE *f, const struct err *e)
{
        /* The bundler's text quotes the agent's source and file names:
         * escaped, each line under the prefix. */
        if (err_code(e) == AGENT_E_BUNDLE || err_code(e) == AGENT_E_IMPORT) {
                const char *m = err_msg(e);
                fprintf(f, "chidori: agent error: %s: ", err_code(e) == AGENT_E_BUNDLE ? "SyntaxError" : "ImportError");
                const char *nl = strchr(m, '\n');
                text_fput_lines(f, "", m, nl ? (size_t)(nl - m) : strlen(m), true);
                if (nl && nl[1])
                        text_fput_lines(f, "chidori: agent error: ", nl + 1, strlen(nl + 1), true);
                return EXIT_AGENT_ERROR;
        }
        text_fput_line(f, "chidori: ", err_msg(e), strlen(err_msg(e)));
        return EXIT_USAGE;
}
