/* cli/agent.c — load an agent file and turn ES modules / TypeScript into
 * one script with esbuild before launch.
 *
 * Bundling runs on the host, so it must not become a way for an agent to read
 * host files: esbuild's metafile lists every input, and any input outside the
 * agent's own directory makes the load fail (e.g. `import k from
 * '/home/u/.aws/creds.json'` would otherwise be inlined into the bundle).
 *
 * The bundle is an ES module (the only output format in which esbuild allows
 * top-level await) with neither imports nor exports, so the engine can run it
 * as the body of an async function (engine/compile.c):
 *   - the entry point is a generated file that imports the agent and hands
 *     its `default` (or `main`) export to the prelude through module.exports;
 *   - the node: modules the engine provides (node:fs, node:path, ... and
 *     the bare names fs, path, ...: `provided` below) are aliased to one-line
 *     CommonJS shims that call the prelude's require();
 *   - any other `import ... from 'node:xyz'` is refused here, naming the
 *     module; `require('node:xyz')` stays a runtime call the prelude refuses.
 * esbuild also writes a source map, which the launcher uses to report errors
 * at the agent's own files and lines (cli/sourcemap.c).
 */
#define _GNU_SOURCE
#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/cli.h"
#include "common/cleanup.h"
#include "common/dlib.h"
#include "common/util.h"

#define AGENT_MAX_BYTES (16u << 20)

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

static bool needs_bundle(const char *path, const char *src)
{
        static const char *ts[] = { ".ts", ".mts", ".cts", ".tsx", ".mjs", ".jsx" };
        for (size_t i = 0; i < ARRAY_SIZE(ts); i++)
                if (has_suffix(path, ts[i]))
                        return true;
        return looks_like_module(src);
}

char *agent_find_esbuild(void)
{
        const char *env = getenv("CHIDORI_ESBUILD");
        if (env && *env)
                return access(env, X_OK) == 0 ? strdup(env) : NULL;
        /* The build tree (tools/, from `make deps`), then beside the binary
         * or in its libexec directory (`make install` copies it there). */
        char self[PATH_MAX];
        ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
        char *slash = n > 0 ? (self[n] = '\0', strrchr(self, '/')) : NULL;
        if (slash) {
                *slash = '\0';
                char *p = NULL;
                if (asprintf(&p, "%s/../tools/node_modules/.bin/esbuild", self) >= 0 && access(p, X_OK) == 0) {
                        char *real = realpath(p, NULL);
                        if (real) {
                                free(p);
                                return real;
                        }
                        return p;
                }
                free(p);
        }
        char *p = dlib_find("esbuild", X_OK);
        if (p)
                return p;
        const char *path = getenv("PATH");
        if (!path)
                return NULL;
        _cleanup_free_ char *dup = strdup(path);
        for (char *save = NULL, *d = dup ? strtok_r(dup, ":", &save) : NULL; d; d = strtok_r(NULL, ":", &save)) {
                if (asprintf(&p, "%s/esbuild", d) >= 0 && access(p, X_OK) == 0)
                        return p;
                free(p);
                p = NULL;
        }
        return NULL;
}

/* Run argv with cwd, collect stdout and stderr (bounded). */
static int run_capture(char *const argv[], const char *cwd, char **ret_out, char **ret_err, int *ret_status,
                       struct err **err)
{
        int po[2], pe[2];
        if (pipe2(po, O_CLOEXEC) < 0)
                return err_set(err, errno, "pipe");
        if (pipe2(pe, O_CLOEXEC) < 0) {
                close(po[0]), close(po[1]);
                return err_set(err, errno, "pipe");
        }
        pid_t pid = fork();
        if (pid < 0) {
                close(po[0]), close(po[1]), close(pe[0]), close(pe[1]);
                return err_set(err, errno, "fork");
        }
        if (pid == 0) {
                int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
                if (null < 0 || dup2(null, 0) < 0 || dup2(po[1], 1) < 0 || dup2(pe[1], 2) < 0 ||
                    chdir(cwd) < 0)
                        _exit(127);
                execv(argv[0], argv);
                _exit(127);
        }
        close(po[1]), close(pe[1]);
        char *buf[2] = { NULL, NULL };
        size_t len[2] = { 0, 0 }, cap[2] = { 0, 0 };
        struct pollfd p[2] = { { .fd = po[0], .events = POLLIN }, { .fd = pe[0], .events = POLLIN } };
        int open_fds = 2, rc = 0;
        while (open_fds > 0 && rc == 0) {
                if (poll(p, 2, -1) < 0) {
                        if (errno == EINTR)
                                continue;
                        rc = err_set(err, errno, "poll");
                        break;
                }
                for (int i = 0; i < 2; i++) {
                        if (p[i].fd < 0 || !p[i].revents)
                                continue;
                        if (len[i] + 65536 + 1 > cap[i]) {
                                cap[i] = cap[i] ? cap[i] * 2 : 131072;
                                if (cap[i] > (size_t)AGENT_MAX_BYTES * 4) {
                                        rc = err_set(err, EFBIG, "bundler output too large");
                                        break;
                                }
                                char *nb = realloc(buf[i], cap[i]);
                                if (!nb) {
                                        rc = err_set(err, ENOMEM, "bundle");
                                        break;
                                }
                                buf[i] = nb;
                        }
                        ssize_t n = read(p[i].fd, buf[i] + len[i], cap[i] - len[i] - 1);
                        if (n < 0 && errno == EINTR)
                                continue;
                        if (n <= 0) {
                                close(p[i].fd);
                                p[i].fd = -1;
                                open_fds--;
                                continue;
                        }
                        len[i] += (size_t)n;
                }
        }
        for (int i = 0; i < 2; i++)
                if (p[i].fd >= 0)
                        close(p[i].fd);
        int status = 0;
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
                ;
        for (int i = 0; i < 2; i++) {
                if (!buf[i])
                        buf[i] = calloc(1, 1);
                else
                        buf[i][len[i]] = '\0';
        }
        if (rc < 0) {
                free(buf[0]), free(buf[1]);
                return -1;
        }
        *ret_out = buf[0];
        *ret_err = buf[1];
        *ret_status = status;
        return 0;
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

/* The modules the engine provides (engine/prelude.js's BUILTIN keeps the
 * same): each base has a directory of shims under the temporary folder's
 * mods/ (index.js, and one file per subpath). */
static const char *const provided[] = { "assert", "buffer", "crypto",      "events",         "fs",
                                        "path",   "process", "querystring", "stream",         "string_decoder",
                                        "timers", "url",     "util" };
static const char *const provided_subpaths[] = { "assert/strict",   "fs/promises", "path/posix",      "stream/promises",
                                                 "stream/web",      "timers/promises", "util/types" };

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

/* Turn esbuild's "✘ [ERROR] msg\n\n    file:line:col:" into "msg (file:line:col)". */
static char *esbuild_diagnosis(const char *text)
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

/* A metafile key (relative to the agent's directory) that names one of the
 * files this launcher generated in its temporary directory. */
static bool is_ours(const char *key, const char *dir, const char *tmp)
{
        _cleanup_free_ char *abs = sourcemap_join(dir, key);
        size_t n = strlen(tmp);
        return abs && strncmp(abs, tmp, n) == 0 && abs[n] == '/';
}

/* Which input imports `path` (for the message). */
static const char *importer_of(const cJSON *inputs, const char *path, const char *dir, const char *tmp)
{
        const cJSON *in;
        cJSON_ArrayForEach(in, inputs)
        {
                const cJSON *imp;
                cJSON_ArrayForEach(imp, cJSON_GetObjectItemCaseSensitive(in, "imports"))
                {
                        const cJSON *p = cJSON_GetObjectItemCaseSensitive(imp, "path");
                        if (cJSON_IsString(p) && strcmp(p->valuestring, path) == 0 && !is_ours(in->string, dir, tmp))
                                return in->string;
                }
        }
        return "the agent";
}

/* Every input is beneath the agent's directory (or is one of ours), and the
 * bundle imports nothing: an import statement left in it names a module
 * chidori does not provide. */
static int check_meta(const char *meta_path, const char *dir, const char *tmp, struct err **err)
{
        _cleanup_free_ char *text = NULL;
        if (read_file(meta_path, 64u << 20, &text, NULL, err) < 0)
                return err_wrap(err, "read esbuild metafile");
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
                if ((k[0] == '/' || strncmp(k, "../", 3) == 0 || strcmp(k, "..") == 0 || strstr(k, "/../")) &&
                    !is_ours(k, dir, tmp)) {
                        rc = err_setc(err, AGENT_E_IMPORT, 0,
                                      "the agent imports '%s', which is outside its directory %s; agents may "
                                      "only bundle files beneath their own directory",
                                      k, dir);
                        break;
                }
        }
        const cJSON *out;
        cJSON_ArrayForEach(out, outputs)
        {
                if (rc < 0 || !has_suffix(out->string, ".js"))
                        continue;
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
                                      importer_of(inputs, path->valuestring, dir, tmp), path->valuestring);
                        break;
                }
        }
        cJSON_Delete(meta);
        return rc;
}

static int write_text(int dfd, const char *name, const char *text, struct err **err)
{
        _cleanup_close_ int fd = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        if (fd < 0)
                return err_set(err, errno, "create %s for bundling", name);
        size_t len = strlen(text);
        while (len > 0) {
                ssize_t n = write(fd, text, len);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return err_set(err, errno, "write %s for bundling", name);
                text += n;
                len -= (size_t)n;
        }
        return 0;
}

/* The files of the temporary directory besides mods/, removed last. */
static const char *const tmp_files[] = { "entry.mjs", "meta.json", "bundle.js", "bundle.js.map" };

static void remove_tmp(int dfd)
{
        char name[96];
        for (size_t i = 0; i < ARRAY_SIZE(provided_subpaths); i++) {
                snprintf(name, sizeof(name), "mods/%s.js", provided_subpaths[i]);
                unlinkat(dfd, name, 0);
        }
        for (size_t i = 0; i < ARRAY_SIZE(provided); i++) {
                snprintf(name, sizeof(name), "mods/%s/index.js", provided[i]);
                unlinkat(dfd, name, 0);
                snprintf(name, sizeof(name), "mods/%s", provided[i]);
                unlinkat(dfd, name, AT_REMOVEDIR);
        }
        unlinkat(dfd, "mods", AT_REMOVEDIR);
        for (size_t i = 0; i < ARRAY_SIZE(tmp_files); i++)
                unlinkat(dfd, tmp_files[i], 0);
}

static int write_shim(int dfd, const char *file, const char *module, struct err **err)
{
        char text[160];
        snprintf(text, sizeof(text), "module.exports = ((load) => load(\"node:%s\"))(require);\n", module);
        return write_text(dfd, file, text, err);
}

/* What the bundle's entry point and the shims say.  `require` reaches the
 * prelude's require() (a parameter of the function the engine wraps the
 * bundle in); it is passed as a value so that esbuild does not resolve the
 * name again. */
static int write_inputs(int dfd, const char *agent_abs, struct err **err)
{
        char name[96];
        if (mkdirat(dfd, "mods", 0700) < 0)
                return err_set(err, errno, "create a directory for bundling");
        for (size_t i = 0; i < ARRAY_SIZE(provided); i++) {
                snprintf(name, sizeof(name), "mods/%s", provided[i]);
                if (mkdirat(dfd, name, 0700) < 0)
                        return err_set(err, errno, "create a directory for bundling");
                snprintf(name, sizeof(name), "mods/%s/index.js", provided[i]);
                if (write_shim(dfd, name, provided[i], err) < 0)
                        return -1;
        }
        for (size_t i = 0; i < ARRAY_SIZE(provided_subpaths); i++) {
                snprintf(name, sizeof(name), "mods/%s.js", provided_subpaths[i]);
                if (write_shim(dfd, name, provided_subpaths[i], err) < 0)
                        return -1;
        }
        cJSON *s = cJSON_CreateString(agent_abs);
        _cleanup_free_ char *quoted = s ? cJSON_PrintUnformatted(s) : NULL;
        cJSON_Delete(s);
        _cleanup_free_ char *entry = NULL;
        if (!quoted ||
            asprintf(&entry,
                     "import * as agent from %s;\n"
                     "if (typeof agent.default === \"function\") module.exports = agent;\n"
                     "else if (typeof agent.main === \"function\") module.exports = { default: agent.main };\n",
                     quoted) < 0)
                return err_set(err, ENOMEM, "bundle");
        return write_text(dfd, "entry.mjs", entry, err);
}

static void load_map(struct agent *a, const char *tmp, const char *dir)
{
        _cleanup_free_ char *path = NULL, *text = NULL;
        struct err *err = NULL;
        if (asprintf(&path, "%s/bundle.js.map", tmp) < 0)
                path = NULL;
        if (!path)
                err_set(&err, ENOMEM, "read the map");
        if (!path || read_file(path, (size_t)AGENT_MAX_BYTES * 4, &text, NULL, &err) < 0 ||
            sourcemap_parse(text, tmp, dir, &a->map, &err) < 0) {
                if (asprintf(&a->map_warning,
                             "esbuild's source map for %s is unusable (%s); error positions will point into the bundle",
                             a->path, err_msg(err)) < 0)
                        a->map_warning = NULL;
                a->map = NULL;
        }
        err_free(err);
}

static int bundle(struct agent *a, struct err **err)
{
        _cleanup_free_ char *esbuild = agent_find_esbuild();
        if (!esbuild)
                return err_setc(err, AGENT_E_NO_ESBUILD, 0,
                                "%s is an ES module or TypeScript and needs bundling, but esbuild was not found; "
                                "run 'make deps' (installs it into tools/), put esbuild on PATH, or set "
                                "CHIDORI_ESBUILD=/path/to/esbuild",
                                a->path);
        _cleanup_free_ char *dir = a->abspath ? strdup(a->abspath) : NULL;
        if (a->abspath && !dir)
                return err_set(err, ENOMEM, "bundle");
        char *slash = dir ? strrchr(dir, '/') : NULL;
        if (slash == dir && dir)
                slash[1] = '\0';
        else if (slash)
                *slash = '\0';
        const char *tmpdir = getenv("TMPDIR");
        char made[PATH_MAX];
        if (snprintf(made, sizeof(made), "%s/chidori-bundle-XXXXXX", tmpdir && *tmpdir ? tmpdir : "/tmp") >=
            (int)sizeof(made))
                return err_set(err, ENAMETOOLONG, "TMPDIR is too long");
        if (!mkdtemp(made))
                return err_set(err, errno, "create a temporary directory for bundling in %s",
                               tmpdir && *tmpdir ? tmpdir : "/tmp");
        /* esbuild names files by their real paths; so do we. */
        _cleanup_free_ char *tmp = realpath(made, NULL);
        _cleanup_free_ char *meta = NULL, *metaarg = NULL, *outfile = NULL, *outarg = NULL, *entry = NULL;
        /* Both node:x and x name the shim of x. */
        char *alias[2 * ARRAY_SIZE(provided)] = { NULL };
        int rc = 0;
        if (!tmp || asprintf(&meta, "%s/meta.json", tmp) < 0 || asprintf(&metaarg, "--metafile=%s", meta) < 0 ||
            asprintf(&outfile, "%s/bundle.js", tmp) < 0 || asprintf(&outarg, "--outfile=%s", outfile) < 0 ||
            asprintf(&entry, "%s/entry.mjs", tmp) < 0)
                rc = err_set(err, ENOMEM, "bundle");
        for (size_t i = 0; rc == 0 && i < ARRAY_SIZE(provided); i++)
                if (asprintf(&alias[2 * i], "--alias:node:%s=%s/mods/%s", provided[i], tmp, provided[i]) < 0 ||
                    asprintf(&alias[2 * i + 1], "--alias:%s=%s/mods/%s", provided[i], tmp, provided[i]) < 0)
                        rc = err_set(err, ENOMEM, "bundle");
        _cleanup_close_ int dfd = open(made, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (rc == 0 && dfd < 0)
                rc = err_set(err, errno, "open %s", made);
        /* An agent read from stdin is bundled from a copy in the temporary
         * folder's agent/, which is then its directory: it imports nothing
         * of the host's. */
        _cleanup_free_ char *stdin_copy = NULL;
        if (rc == 0 && !a->abspath) {
                if (asprintf(&dir, "%s/agent", tmp) < 0 || asprintf(&stdin_copy, "%s/%s", dir, a->filename) < 0)
                        rc = err_set(err, ENOMEM, "bundle");
                else if (mkdirat(dfd, "agent", 0700) < 0)
                        rc = err_set(err, errno, "create a directory for bundling");
                else {
                        _cleanup_close_ int afd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                        rc = afd < 0 ? err_set(err, errno, "open %s", dir) : write_text(afd, a->filename, a->source, err);
                }
        }
        if (rc == 0)
                rc = write_inputs(dfd, a->abspath ? a->abspath : stdin_copy, err);
        char *out = NULL, *errtext = NULL;
        if (rc == 0) {
                /* import() becomes require() (so that a missing module fails
                 * where it is called, as require does); import.meta is {} as
                 * it was in CommonJS bundles. */
                char *fixed[] = { esbuild, entry, "--bundle", "--format=esm", "--platform=neutral",
                                  "--target=es2022", "--log-level=error", "--color=false", "--charset=utf8",
                                  "--external:node:*", "--main-fields=module,main", "--legal-comments=none",
                                  "--sourcemap=external", "--sources-content=false",
                                  "--supported:dynamic-import=false", "--define:import.meta={}", metaarg, outarg };
                char *argv[ARRAY_SIZE(fixed) + ARRAY_SIZE(alias) + 1];
                memcpy(argv, fixed, sizeof(fixed));
                memcpy(argv + ARRAY_SIZE(fixed), alias, sizeof(alias));
                argv[ARRAY_SIZE(fixed) + ARRAY_SIZE(alias)] = NULL;
                int status = 0;
                rc = run_capture(argv, dir, &out, &errtext, &status, err);
                if (rc == 0 && !(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
                        _cleanup_free_ char *d = esbuild_diagnosis(errtext);
                        const char *m = d ? d : errtext;
                        rc = err_setc(err, strncmp(m, "Could not resolve", 17) == 0 ? AGENT_E_IMPORT : AGENT_E_BUNDLE,
                                      0, "%s", m);
                }
        }
        if (rc == 0)
                rc = check_meta(meta, dir, tmp, err);
        char *script = NULL;
        if (rc == 0 && read_file(outfile, (size_t)AGENT_MAX_BYTES * 4, &script, NULL, err) < 0)
                rc = err_wrap(err, "read the bundle");
        if (rc == 0)
                load_map(a, tmp, dir);
        if (stdin_copy) {
                unlink(stdin_copy);
                rmdir(dir);
        }
        if (dfd >= 0)
                remove_tmp(dfd);
        rmdir(made);
        free(errtext);
        free(out);
        for (size_t i = 0; i < ARRAY_SIZE(alias); i++)
                free(alias[i]);
        if (rc < 0)
                return -1;
        a->script = script;
        a->esm = true;
        return 0;
}

static int finish_load(struct agent *a, const char *path, struct err **err);

int agent_load(const char *path, struct agent *a, struct err **err)
{
        memset(a, 0, sizeof(*a));
        a->path = strdup(path);
        if (read_file(path, AGENT_MAX_BYTES, &a->source, &a->source_len, err) < 0) {
                int e = (*err) ? (*err)->errnum : 0;
                agent_free(a);
                if (e == ENOENT)
                        return err_setc(err, AGENT_E_NOT_FOUND, e, "agent file '%s' not found", path);
                return err_wrap(err, "load agent");
        }
        a->abspath = realpath(path, NULL);
        if (!a->abspath && errno != ENOMEM) {
                int e = errno;
                agent_free(a);
                return err_set(err, e, "agent file '%s' has no path on disk (a pipe?); save the agent to a file and run that", path);
        }
        const char *base = strrchr(path, '/');
        a->filename = strdup(base ? base + 1 : path);
        if (!a->path || !a->abspath || !a->filename) {
                agent_free(a);
                return err_set(err, ENOMEM, "load agent");
        }
        return finish_load(a, path, err);
}

int agent_load_stdin(const char *name, struct agent *a, struct err **err)
{
        memset(a, 0, sizeof(*a));
        a->path = strdup("-");
        a->filename = strdup(name);
        if (!a->path || !a->filename) {
                agent_free(a);
                return err_set(err, ENOMEM, "load agent");
        }
        if (read_fd(STDIN_FILENO, "stdin", AGENT_MAX_BYTES, &a->source, &a->source_len, err) < 0) {
                agent_free(a);
                return err_wrap(err, "read the agent from stdin");
        }
        return finish_load(a, name, err);
}

/* The part of loading shared by files and stdin: hash, check, bundle. */
static int finish_load(struct agent *a, const char *path, struct err **err)
{
        sha256_hex(a->source, a->source_len, a->sha256);
        if (memchr(a->source, '\0', a->source_len)) {
                agent_free(a);
                return err_setc(err, AGENT_E_BUNDLE, 0, "agent file '%s' contains NUL bytes; expected JavaScript source", path);
        }
        if (needs_bundle(path, a->source)) {
                if (bundle(a, err) < 0) {
                        agent_free(a);
                        return -1;
                }
        } else {
                a->script = a->source;
        }
        return 0;
}
