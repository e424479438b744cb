/* launcher/agent.c — load an agent file and turn ES modules / TypeScript into
 * one CommonJS script with esbuild before launch.
 *
 * Bundling runs on the host, so it must not become a way for an agent to read
 * host files: esbuild's metafile lists every input, and any input outside the
 * agent's own directory makes the load fail (e.g. `import k from
 * '/home/u/.aws/creds.json'` would otherwise be inlined into the bundle).
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
#include <sys/wait.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/util.h"
#include "launcher/launcher.h"

#define AGENT_MAX_BYTES (16u << 20)

#ifndef CHIDORI_LIBEXECDIR
#define CHIDORI_LIBEXECDIR "/usr/local/libexec/chidori"
#endif

void agent_free(struct agent *a)
{
        if (!a)
                return;
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

static char *find_esbuild(void)
{
        const char *env = getenv("CHIDORI_ESBUILD");
        if (env && *env)
                return access(env, X_OK) == 0 ? strdup(env) : NULL;
        char self[PATH_MAX];
        ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
        if (n > 0) {
                self[n] = '\0';
                char *slash = strrchr(self, '/');
                if (slash) {
                        *slash = '\0';
                        const char *rel[] = { "/../tools/node_modules/.bin/esbuild", "/esbuild" };
                        for (size_t i = 0; i < ARRAY_SIZE(rel); i++) {
                                char *p = NULL;
                                if (asprintf(&p, "%s%s", self, rel[i]) >= 0 && access(p, X_OK) == 0)
                                        return p;
                                free(p);
                        }
                }
        }
        if (access(CHIDORI_LIBEXECDIR "/esbuild", X_OK) == 0)
                return strdup(CHIDORI_LIBEXECDIR "/esbuild");
        const char *path = getenv("PATH");
        if (!path)
                return NULL;
        _cleanup_free_ char *dup = strdup(path);
        for (char *save = NULL, *d = strtok_r(dup, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
                char *p = NULL;
                if (asprintf(&p, "%s/esbuild", d) >= 0 && access(p, X_OK) == 0)
                        return p;
                free(p);
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
        char *s = NULL;
        if (asprintf(&s, "%.*s%s", (int)mlen, m, where) < 0)
                return NULL;
        return s;
}

static int check_inputs(const char *meta_path, const char *dir, struct err **err)
{
        _cleanup_free_ char *text = NULL;
        if (read_file(meta_path, 64u << 20, &text, NULL, err) < 0)
                return err_wrap(err, "read esbuild metafile");
        cJSON *meta = cJSON_Parse(text);
        const cJSON *inputs = cJSON_GetObjectItemCaseSensitive(meta, "inputs");
        int rc = 0;
        const cJSON *in;
        cJSON_ArrayForEach(in, inputs)
        {
                const char *k = in->string;
                if (k[0] == '/' || strncmp(k, "../", 3) == 0 || strcmp(k, "..") == 0 || strstr(k, "/../")) {
                        rc = err_setc(err, AGENT_E_IMPORT, 0,
                                      "the agent imports '%s', which is outside its directory %s; agents may "
                                      "only bundle files beneath their own directory",
                                      k, dir);
                        break;
                }
        }
        cJSON_Delete(meta);
        return rc;
}

static int bundle(struct agent *a, struct err **err)
{
        _cleanup_free_ char *esbuild = find_esbuild();
        if (!esbuild)
                return err_setc(err, AGENT_E_NO_ESBUILD, 0,
                                "%s is an ES module or TypeScript and needs bundling, but esbuild was not found; "
                                "run 'make deps' (installs it into tools/) or set CHIDORI_ESBUILD=/path/to/esbuild",
                                a->path);
        _cleanup_free_ char *dir = strdup(a->abspath);
        char *slash = strrchr(dir, '/');
        if (slash == dir)
                slash[1] = '\0';
        else
                *slash = '\0';
        char tmpl[] = "/tmp/chidori-bundle-XXXXXX";
        if (!mkdtemp(tmpl))
                return err_set(err, errno, "create a temporary directory for bundling");
        _cleanup_free_ char *meta = NULL, *metaarg = NULL, *outfile = NULL, *outarg = NULL;
        if (asprintf(&meta, "%s/meta.json", tmpl) < 0 || asprintf(&metaarg, "--metafile=%s", meta) < 0 ||
            asprintf(&outfile, "%s/bundle.js", tmpl) < 0 || asprintf(&outarg, "--outfile=%s", outfile) < 0)
                return err_set(err, ENOMEM, "bundle");
        char *argv[] = { esbuild, a->abspath, "--bundle", "--format=cjs", "--platform=neutral",
                         "--target=es2022", "--log-level=error", "--color=false", "--charset=utf8",
                         "--external:node:*", "--external:fs", "--external:fs/promises", "--external:crypto",
                         "--main-fields=module,main", "--legal-comments=none", metaarg, outarg, NULL };
        char *out = NULL, *errtext = NULL;
        int status = 0;
        int rc = run_capture(argv, dir, &out, &errtext, &status, err);
        if (rc == 0 && !(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
                _cleanup_free_ char *d = esbuild_diagnosis(errtext);
                const char *m = d ? d : errtext;
                rc = err_setc(err, strncmp(m, "Could not resolve", 17) == 0 ? AGENT_E_IMPORT : AGENT_E_BUNDLE, 0,
                              "%s", m);
        }
        if (rc == 0)
                rc = check_inputs(meta, dir, err);
        char *script = NULL;
        if (rc == 0 && read_file(outfile, (size_t)AGENT_MAX_BYTES * 4, &script, NULL, err) < 0)
                rc = err_wrap(err, "read the bundle");
        unlink(meta);
        unlink(outfile);
        rmdir(tmpl);
        free(errtext);
        free(out);
        if (rc < 0)
                return -1;
        a->script = script;
        return 0;
}

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
