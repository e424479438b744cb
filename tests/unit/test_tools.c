/* tests/unit/test_tools.c — effects/proc/tools.c: the tools file's schema, the
 * child built for a call, the reading of its result, and real calls through
 * effects/proc/subproc.c — sandboxed ones through the built `chidori launch`
 * ($CHIDORI_BIN or build/chidori; those tests are skipped without it). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <netinet/in.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "effects/proc/subproc.h"
#include "effects/proc/tools.h"

extern char **environ;
#include "common/cleanup.h"
#include "common/err.h"
#include "common/util.h"

/* ---- helpers ---- */

static struct tools_registry *parse_ok(const char *json)
{
        struct tools_registry *reg = NULL;
        struct err *err = NULL;
        if (tools_parse(json, strlen(json), "tools.json", &reg, &err) < 0)
                fail_msg("unexpected error: %s", err_msg(err));
        return reg;
}

/* Parse must fail with exactly `want` (and `code`). */
static void parse_fails(const char *json, int code, const char *want)
{
        struct tools_registry *reg = NULL;
        struct err *err = NULL;
        int r = tools_parse(json, strlen(json), "tools.json", &reg, &err);
        if (r == 0)
                fail_msg("accepted: %s", json);
        assert_null(reg);
        if (strcmp(err_msg(err), want) != 0)
                fail_msg("for %s\n  got:  %s\n  want: %s", json, err_msg(err), want);
        assert_int_equal(err_code(err), code);
        err_free(err);
}

static const char *arg(const struct subproc_spec *s, size_t i)
{
        return s->argv[i];
}

static size_t argc_of(char *const *v)
{
        size_t n = 0;
        while (v && v[n])
                n++;
        return n;
}

static struct subproc_result result(bool exited, int code, int sig, const char *out, const char *errs)
{
        return (struct subproc_result){
                .exited = exited, .exit_code = code, .signal = sig,
                .out = (const unsigned char *)out, .out_len = strlen(out),
                .err = (const unsigned char *)errs, .err_len = strlen(errs),
        };
}

static void result_fails(const struct tool_def *t, const struct subproc_result *r, int code, const char *want)
{
        cJSON *v = NULL;
        struct err *err = NULL;
        assert_int_equal(tools_result(t, r, &v, &err), -1);
        assert_null(v);
        if (strcmp(err_msg(err), want) != 0)
                fail_msg("got:  %s\nwant: %s", err_msg(err), want);
        assert_int_equal(err_code(err), code);
        err_free(err);
}

/* ---- schema ---- */

static void test_minimal_defaults(void **state)
{
        (void)state;
        struct tools_registry *reg = parse_ok("{\"echo\": {\"command\": [\"/bin/cat\"]}}");
        assert_int_equal(tools_count(reg), 1);
        const struct tool_def *t = tools_find(reg, "echo");
        assert_non_null(t);
        assert_ptr_equal(t, tools_at(reg, 0));
        assert_null(tools_at(reg, 1));
        assert_string_equal(t->name, "echo");
        assert_int_equal(t->ncommand, 1);
        assert_string_equal(t->command[0], "/bin/cat");
        assert_null(t->command[1]);
        assert_int_equal(t->timeout_ms, 30000);
        assert_true(t->sandbox);
        assert_int_equal(t->max_output_bytes, 1048576);
        assert_int_equal(t->nenv, 0);
        assert_int_equal(t->nro_bind, 0);
        assert_null(tools_find(reg, "Echo"));
        assert_null(tools_find(reg, NULL));
        assert_null(tools_find(NULL, "echo"));
        tools_free(reg);
        tools_free(NULL);
        /* an empty file declares nothing, which is fine */
        reg = parse_ok(" {} ");
        assert_int_equal(tools_count(reg), 0);
        tools_free(reg);
}

static void test_full_definition(void **state)
{
        (void)state;
        struct tools_registry *reg = parse_ok(
                "{\"search\": {\"command\": [\"cat\", \"-n\"], \"timeout_ms\": 1500, \"env\": [\"HOME\", \"API_KEY\"],"
                " \"sandbox\": false, \"max_output_bytes\": 4096},"
                " \"web.fetch-2\": {\"command\": [\"/bin/sh\", \"-c\", \"x\"], \"ro_bind\": [\"/etc/hostname\", \"/usr/share\"],"
                " \"env\": []}}");
        assert_int_equal(tools_count(reg), 2);
        const struct tool_def *s = tools_find(reg, "search");
        assert_int_equal(s->timeout_ms, 1500);
        assert_false(s->sandbox);
        assert_int_equal(s->max_output_bytes, 4096);
        assert_int_equal(s->nenv, 2);
        assert_string_equal(s->env[1], "API_KEY");
        assert_string_equal(s->command[1], "-n");
        const struct tool_def *w = tools_find(reg, "web.fetch-2");
        assert_non_null(w);
        assert_true(w->sandbox);
        assert_int_equal(w->ncommand, 3);
        assert_int_equal(w->nro_bind, 2);
        assert_string_equal(w->ro_bind[1], "/usr/share");
        tools_free(reg);
}

static void test_syntax_errors(void **state)
{
        (void)state;
        parse_fails("{\n  \"a\": {,}\n}", TOOLS_E_SYNTAX, "tools.json: not valid JSON at line 2, column 9: unexpected character ',' (expected a member name in quotes or '}')");
        parse_fails("", TOOLS_E_SYNTAX, "tools.json: not valid JSON at line 1, column 1: no JSON value (the text is empty)");
        parse_fails("{} {}", TOOLS_E_SYNTAX, "tools.json: not valid JSON at line 1, column 4: trailing bytes after the JSON value");
        struct tools_registry *reg = NULL;
        struct err *err = NULL;
        assert_int_equal(tools_parse("{\"a\"\0:1}", 8, "t.json", &reg, &err), -1);
        assert_string_equal(err_msg(err), "t.json: not valid JSON at line 1, column 5 (a NUL byte)");
        err_free(err);
}

static void test_top_level_and_names(void **state)
{
        (void)state;
        parse_fails("[]", TOOLS_E_SCHEMA,
                    "tools.json: top level: must be an object mapping tool names to definitions, got an array");
        parse_fails("{\"bad name\": {\"command\": [\"cat\"]}}", TOOLS_E_SCHEMA,
                    "tools.json: [\"bad name\"]: not a valid tool name (1 to 64 of A-Z a-z 0-9 _ . -)");
        parse_fails("{\"\": {\"command\": [\"cat\"]}}", TOOLS_E_SCHEMA,
                    "tools.json: [\"\"]: not a valid tool name (1 to 64 of A-Z a-z 0-9 _ . -)");
        char name[66];
        memset(name, 'a', 65);
        name[65] = '\0';
        char doc[256];
        snprintf(doc, sizeof(doc), "{\"%s\": {\"command\": [\"cat\"]}}", name);
        struct tools_registry *reg = NULL;
        struct err *err = NULL;
        assert_int_equal(tools_parse(doc, strlen(doc), "tools.json", &reg, &err), -1);
        assert_non_null(strstr(err_msg(err), "not a valid tool name"));
        err_free(err);
        snprintf(doc, sizeof(doc), "{\"%.64s\": {\"command\": [\"cat\"]}}", name);  /* 64 is fine */
        tools_free(parse_ok(doc));
        parse_fails("{\"a\": {\"command\": [\"cat\"]}, \"a\": {\"command\": [\"cat\"]}}", TOOLS_E_SCHEMA,
                    "tools.json: top level: duplicate key \"a\"");
        parse_fails("{\"a\": [\"cat\"]}", TOOLS_E_SCHEMA, "tools.json: a: must be an object, got an array");
        /* a name with a dot is quoted in paths */
        parse_fails("{\"web.search\": {\"command\": []}}", TOOLS_E_SCHEMA,
                    "tools.json: [\"web.search\"].command: must be a non-empty array of strings");
}

static void test_command_errors(void **state)
{
        (void)state;
        parse_fails("{\"search\": {}}", TOOLS_E_SCHEMA,
                    "tools.json: search.command: missing: must be a non-empty array of strings");
        parse_fails("{\"search\": {\"command\": \"cat\"}}", TOOLS_E_SCHEMA,
                    "tools.json: search.command: must be a non-empty array of strings");
        parse_fails("{\"search\": {\"command\": []}}", TOOLS_E_SCHEMA,
                    "tools.json: search.command: must be a non-empty array of strings");
        parse_fails("{\"search\": {\"command\": [\"cat\", 1]}}", TOOLS_E_SCHEMA,
                    "tools.json: search.command[1]: must be a non-empty string, got a number");
        parse_fails("{\"search\": {\"command\": [\"cat\", \"\"]}}", TOOLS_E_SCHEMA,
                    "tools.json: search.command[1]: must be a non-empty string, got \"\"");
        parse_fails("{\"search\": {\"command\": [\"bin/cat\"]}}", TOOLS_E_SCHEMA,
                    "tools.json: search.command[0]: \"bin/cat\" must be an absolute path or a bare program name");
        parse_fails("{\"search\": {\"command\": [\"/usr/../bin/cat\"]}}", TOOLS_E_SCHEMA,
                    "tools.json: search.command[0]: \"/usr/../bin/cat\" must be an absolute path or a bare program "
                    "name");
        parse_fails("{\"search\": {\"command\": [\"no-such-tool-xyz\"]}}", TOOLS_E_SCHEMA,
                    "tools.json: search.command[0]: program \"no-such-tool-xyz\" not found in "
                    "PATH=/usr/local/bin:/usr/bin:/bin");
        parse_fails("{\"search\": {\"command\": [\"/etc/passwd\"]}}", TOOLS_E_SCHEMA,
                    "tools.json: search.command[0]: \"/etc/passwd\" is not an executable file");
}

static void test_number_and_bool_errors(void **state)
{
        (void)state;
        const char *bad_timeouts[] = { "0", "1.5", "\"10\"", "3600001", "-1", "null" };
        for (size_t i = 0; i < 6; i++) {
                char doc[128];
                snprintf(doc, sizeof(doc), "{\"t\": {\"command\": [\"cat\"], \"timeout_ms\": %s}}", bad_timeouts[i]);
                parse_fails(doc, TOOLS_E_SCHEMA, "tools.json: t.timeout_ms: must be an integer from 1 to 3600000");
        }
        parse_fails("{\"t\": {\"command\": [\"cat\"], \"max_output_bytes\": 0}}", TOOLS_E_SCHEMA,
                    "tools.json: t.max_output_bytes: must be an integer from 1 to 16777216");
        parse_fails("{\"t\": {\"command\": [\"cat\"], \"max_output_bytes\": 16777217}}", TOOLS_E_SCHEMA,
                    "tools.json: t.max_output_bytes: must be an integer from 1 to 16777216");
        parse_fails("{\"t\": {\"command\": [\"cat\"], \"sandbox\": 1}}", TOOLS_E_SCHEMA,
                    "tools.json: t.sandbox: must be true or false, got a number");
        parse_fails("{\"t\": {\"command\": [\"cat\"], \"sandbox\": \"no\"}}", TOOLS_E_SCHEMA,
                    "tools.json: t.sandbox: must be true or false, got a string");
}

static void test_env_errors(void **state)
{
        (void)state;
        parse_fails("{\"t\": {\"command\": [\"cat\"], \"sandbox\": false, \"env\": \"HOME\"}}", TOOLS_E_SCHEMA,
                    "tools.json: t.env: must be a non-empty array of variable names");
        parse_fails("{\"t\": {\"command\": [\"cat\"], \"sandbox\": false, \"env\": [\"A=B\"]}}", TOOLS_E_SCHEMA,
                    "tools.json: t.env[0]: \"A=B\" is not a variable name ([A-Za-z_][A-Za-z0-9_]*)");
        parse_fails("{\"t\": {\"command\": [\"cat\"], \"sandbox\": false, \"env\": [\"1A\"]}}", TOOLS_E_SCHEMA,
                    "tools.json: t.env[0]: \"1A\" is not a variable name ([A-Za-z_][A-Za-z0-9_]*)");
        parse_fails("{\"t\": {\"command\": [\"cat\"], \"sandbox\": false, \"env\": [\"HOME\", \"PATH\"]}}",
                    TOOLS_E_SCHEMA,
                    "tools.json: t.env[1]: PATH is always /usr/local/bin:/usr/bin:/bin and cannot be copied");
        parse_fails("{\"t\": {\"command\": [\"cat\"], \"sandbox\": false, \"env\": [\"A\", \"B\", \"A\"]}}",
                    TOOLS_E_SCHEMA, "tools.json: t.env[2]: \"A\" is listed twice");
}

static void test_unknown_keys_and_ro_bind(void **state)
{
        (void)state;
        parse_fails("{\"search\": {\"comand\": [\"cat\"]}}", TOOLS_E_SCHEMA,
                    "tools.json: search.comand: unknown key (expected command, timeout_ms, env, sandbox, "
                    "max_output_bytes, ro_bind)");
        parse_fails("{\"search\": {\"command\": [\"cat\"], \"command\": [\"cat\"]}}", TOOLS_E_SCHEMA,
                    "tools.json: search: duplicate key \"command\"");
        parse_fails("{\"t\": {\"command\": [\"cat\"], \"ro_bind\": [\"etc\"]}}", TOOLS_E_SCHEMA,
                    "tools.json: t.ro_bind[0]: \"etc\" must be an absolute path other than /, without ':', '.' or "
                    "'..' components");
        parse_fails("{\"t\": {\"command\": [\"cat\"], \"ro_bind\": [\"/\"]}}", TOOLS_E_SCHEMA,
                    "tools.json: t.ro_bind[0]: \"/\" must be an absolute path other than /, without ':', '.' or "
                    "'..' components");
        parse_fails("{\"t\": {\"command\": [\"cat\"], \"ro_bind\": [\"/a:b\"]}}", TOOLS_E_SCHEMA,
                    "tools.json: t.ro_bind[0]: \"/a:b\" must be an absolute path other than /, without ':', '.' or "
                    "'..' components");
        parse_fails("{\"t\": {\"command\": [\"cat\"], \"ro_bind\": [\"/no/such/dir-xyz\"]}}", TOOLS_E_SCHEMA,
                    "tools.json: t.ro_bind[0]: \"/no/such/dir-xyz\" does not exist");
        parse_fails("{\"t\": {\"command\": [\"cat\"], \"sandbox\": false, \"ro_bind\": [\"/usr\"]}}", TOOLS_E_SCHEMA,
                    "tools.json: t.ro_bind: only applies to sandboxed tools (\"sandbox\": false sees the whole host)");
}

static void test_load_file(void **state)
{
        (void)state;
        struct tools_registry *reg = NULL;
        struct err *err = NULL;
        assert_int_equal(tools_load("/nonexistent/tools.json", &reg, &err), -1);
        assert_string_equal(err_msg(err), "/nonexistent/tools.json: cannot be read: No such file or directory");
        assert_int_equal(err_code(err), TOOLS_E_IO);
        char path[] = "/tmp/tools-test-XXXXXX";
        int fd = mkstemp(path);
        assert_true(fd >= 0);
        const char *doc = "{\"cat\": {\"command\": [\"cat\"], \"oops\": 1}}";
        assert_int_equal(write(fd, doc, strlen(doc)), (ssize_t)strlen(doc));
        assert_int_equal(tools_load(path, &reg, &err), -1);
        char want[256];
        snprintf(want, sizeof(want), "%s: cat.oops: unknown key (expected command, timeout_ms, env, sandbox, "
                 "max_output_bytes, ro_bind)", path);
        assert_string_equal(err_msg(err), want);
        /* over 1 MiB */
        assert_int_equal(ftruncate(fd, 2 << 20), 0);
        assert_int_equal(tools_load(path, &reg, &err), -1);
        snprintf(want, sizeof(want), "%s: larger than the 1 MiB limit", path);
        assert_string_equal(err_msg(err), want);
        assert_int_equal(ftruncate(fd, 0), 0);
        assert_int_equal(pwrite(fd, "{\"c\":{\"command\":[\"cat\"]}}", 25, 0), 25);
        assert_int_equal(tools_load(path, &reg, &err), 0);
        assert_non_null(tools_find(reg, "c"));
        tools_free(reg);
        close(fd);
        unlink(path);
        err_free(err);
}

/* ---- the child for a call ---- */

static void test_spec_sandboxed(void **state)
{
        (void)state;
        setenv("TOOLS_TEST_SECRET", "s3cret", 1);
        struct tools_registry *reg = parse_ok("{\"s\": {\"command\": [\"cat\", \"-n\"], \"timeout_ms\": 5000}}");
        const struct tool_def *t = tools_find(reg, "s");
        const char *args = "{\"q\": \"hello\", \"n\": [1, 2]}";
        struct subproc_spec *sp = NULL;
        struct err *err = NULL;
        struct tools_host host = { .self_exe = "/opt/chidori/bin/chidori" };
        assert_int_equal(tools_spec(reg, t, args, &host, &sp, &err), 0);
        const char *want[] = { "/opt/chidori/bin/chidori", "launch", "--quiet", "--deadline", "5000", "--", "cat", "-n" };
        assert_int_equal(argc_of(sp->argv), 8);
        for (size_t i = 0; i < 8; i++)
                assert_string_equal(arg(sp, i), want[i]);
        assert_int_equal(argc_of(sp->envp), 1);
        assert_string_equal(sp->envp[0], "PATH=/usr/local/bin:/usr/bin:/bin");
        const char *in = "{\"q\":\"hello\",\"n\":[1,2]}\n";
        assert_int_equal(sp->stdin_len, strlen(in));
        assert_memory_equal(sp->stdin_data, in, strlen(in));
        assert_int_equal(sp->timeout_ms, 5000 + TOOLS_LAUNCH_GRACE_MS);
        assert_int_equal(sp->max_stdout_bytes, 1048576);
        assert_int_equal(sp->max_stderr_bytes, TOOLS_STDERR_MAX);
        assert_string_equal(sp->cwd, "/");
        assert_int_equal(sp->kill_grace_ms, TOOLS_KILL_GRACE_MS);
        tools_spec_free(sp);
        /* no self_exe: refused rather than run unsandboxed */
        assert_int_equal(tools_spec(reg, t, args, NULL, &sp, &err), -1);
        assert_non_null(strstr(err_msg(err), "tool s: the chidori binary's absolute path is needed to sandbox it"));
        err_free(err);
        err = NULL;
        host.self_exe = "chidori";
        assert_int_equal(tools_spec(reg, t, args, &host, &sp, &err), -1);
        err_free(err);
        err = NULL;
        /* not JSON text: refused (the broker only passes what it validated) */
        host.self_exe = "/opt/chidori/bin/chidori";
        assert_int_equal(tools_spec(reg, t, "{\"q\":", &host, &sp, &err), -1);
        assert_int_equal(err_code(err), TOOLS_E_ARGS);
        err_free(err);
        tools_free(reg);
        unsetenv("TOOLS_TEST_SECRET");
}

/* The posture comes from the run's parsed options, never from the
 * environment at call time. */
static void test_spec_sandboxed_binds_and_posture(void **state)
{
        (void)state;
        setenv("CHIDORI_ISOLATE_REQUIRE_SANDBOX", "1", 1);
        setenv("CHIDORI_CGROUP_PARENT", "/sys/fs/cgroup/y", 1);
        setenv("CHIDORI_ISOLATE_DEADLINE_MS", "1", 1);
        struct tools_registry *reg =
                parse_ok("{\"s\": {\"command\": [\"/bin/cat\"], \"ro_bind\": [\"/usr/share\", \"/etc/hostname\"],"
                         " \"env\": [\"TOK\", \"NOPE\"]}}");
        struct subproc_spec *sp = NULL;
        char *opts[] = { "--require-sandbox", "--cgroup-parent=/sys/fs/cgroup/x", NULL };
        char *env[] = { "TOKEN=no", "TOK=t0k", NULL };
        char *extra[] = { "CHIDORI_PARENT_PID=1", "CHIDORI_CGROUP_ENTER=/a", NULL };
        struct tools_host host = { .self_exe = "/c", .launch_opts = opts, .env = env, .extra_env = extra };
        assert_int_equal(tools_spec(reg, tools_find(reg, "s"), NULL, &host, &sp, NULL), 0);
        const char *want[] = { "/c", "launch", "--quiet", "--deadline", "30000", "--require-sandbox",
                               "--cgroup-parent=/sys/fs/cgroup/x", "--ro-bind", "/usr/share", "--ro-bind",
                               "/etc/hostname", "--setenv", "TOK", "--", "/bin/cat" };
        assert_int_equal(argc_of(sp->argv), ARRAY_SIZE(want));
        for (size_t i = 0; i < ARRAY_SIZE(want); i++)
                assert_string_equal(arg(sp, i), want[i]);
        const char *wenv[] = { "PATH=/usr/local/bin:/usr/bin:/bin", "TOK=t0k", "CHIDORI_PARENT_PID=1",
                               "CHIDORI_CGROUP_ENTER=/a" };
        assert_int_equal(argc_of(sp->envp), ARRAY_SIZE(wenv));
        for (size_t i = 0; i < ARRAY_SIZE(wenv); i++)
                assert_string_equal(sp->envp[i], wenv[i]);
        assert_int_equal(sp->stdin_len, 3);
        assert_memory_equal(sp->stdin_data, "{}\n", 3);
        tools_spec_free(sp);
        tools_free(reg);
        unsetenv("CHIDORI_ISOLATE_REQUIRE_SANDBOX");
        unsetenv("CHIDORI_CGROUP_PARENT");
        unsetenv("CHIDORI_ISOLATE_DEADLINE_MS");
}

static void test_spec_unsandboxed_env_allowlist(void **state)
{
        (void)state;
        setenv("TOOLS_B", "from the environment: never read", 1);
        struct tools_registry *reg = parse_ok("{\"u\": {\"command\": [\"cat\", \"x y\"], \"sandbox\": false,"
                                              " \"env\": [\"TOOLS_A\", \"TOOLS_UNSET\", \"TOOLS_EMPTY\", \"TOOLS_B\"],"
                                              " \"timeout_ms\": 700, \"max_output_bytes\": 10}}");
        const char *args = "\"just a string\"";
        struct subproc_spec *sp = NULL;
        char *env[] = { "TOOLS_A=alpha", "TOOLS_EMPTY=", "TOOLS_NOT_LISTED=nope", NULL };
        struct tools_host host = { .self_exe = "/c", .env = env };
        assert_int_equal(tools_spec(reg, tools_find(reg, "u"), args, &host, &sp, NULL), 0);
        const char *want[] = { "/c", "_host-tool", "--", "cat", "x y" };
        assert_int_equal(argc_of(sp->argv), ARRAY_SIZE(want));
        for (size_t i = 0; i < ARRAY_SIZE(want); i++)
                assert_string_equal(arg(sp, i), want[i]);
        assert_int_equal(argc_of(sp->envp), 3);
        assert_string_equal(sp->envp[0], "PATH=/usr/local/bin:/usr/bin:/bin");
        assert_string_equal(sp->envp[1], "TOOLS_A=alpha");
        assert_string_equal(sp->envp[2], "TOOLS_EMPTY=");
        assert_int_equal(sp->timeout_ms, 700);
        assert_int_equal(sp->max_stdout_bytes, 10);
        assert_int_equal(sp->kill_grace_ms, 0);
        assert_memory_equal(sp->stdin_data, "\"just a string\"\n", sp->stdin_len);
        tools_spec_free(sp);
        tools_spec_free(NULL);
        tools_free(reg);        unsetenv("TOOLS_B");
}

/* A tool's value is a raw node of its text: a tree to look into. */
static cJSON *as_tree(cJSON *raw)
{
        assert_true(cJSON_IsRaw(raw));
        cJSON *t = cJSON_Parse(raw->valuestring);
        cJSON_Delete(raw);
        return t;
}

/* ---- reading the result ---- */

static void test_parse_output(void **state)
{
        (void)state;
        cJSON *v = NULL;
        struct err *err = NULL;
        /* Carried as the tool printed it: a raw node of its text, whitespace
         * outside strings dropped, numbers and escapes as written. */
        assert_int_equal(tools_parse_output("t", " {\"a\": [1, true]}\n\n", 19, &v, &err), 0);
        assert_true(cJSON_IsRaw(v));
        assert_string_equal(v->valuestring, "{\"a\":[1,true]}");
        cJSON_Delete(v);
        assert_int_equal(tools_parse_output("t", "42", 2, &v, &err), 0);
        assert_string_equal(v->valuestring, "42");
        cJSON_Delete(v);
        assert_int_equal(tools_parse_output("t", "\"s\"\n", 4, &v, &err), 0);
        assert_string_equal(v->valuestring, "\"s\"");
        cJSON_Delete(v);
        const char *exact = "[0.30000000000000004, 1e-7, 1.0, \"a\\u0000b\", \"\\ud800\", \"\xe2\x80\xa8\"]\n";
        assert_int_equal(tools_parse_output("t", exact, strlen(exact), &v, &err), 0);
        assert_string_equal(v->valuestring, "[0.30000000000000004,1e-7,1.0,\"a\\u0000b\",\"\\ud800\",\"\xe2\x80\xa8\"]");
        cJSON_Delete(v);
        struct {
                const char *out;
                const char *want;
        } bad[] = {
                { "{\"a\":}", "tool t printed invalid JSON on stdout (line 1, column 6): unexpected character '}' "
                              "(expected a value)" },
                { "{\n  \"a\": 1,\n  oops\n}", "tool t printed invalid JSON on stdout (line 3, column 3): unexpected "
                                             "character 'o' (expected a member name in quotes)" },
                { "{} x", "tool t printed invalid JSON on stdout (line 1, column 4): trailing bytes after the JSON "
                          "value" },
                { "1\n2\n", "tool t printed invalid JSON on stdout (line 2, column 1): trailing bytes after the JSON "
                            "value" },
                { "hello", "tool t printed invalid JSON on stdout (line 1, column 1): unexpected character 'h' "
                           "(expected a value)" },
                { "\"caf\xe9\"", "tool t printed invalid JSON on stdout (line 1, column 5): invalid UTF-8 in a string "
                                "(byte 0xe9)" },
                { "", "tool t printed nothing on stdout (expected one JSON value)" },
                { " \n\t", "tool t printed nothing on stdout (expected one JSON value)" },
        };
        for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
                v = NULL;
                assert_int_equal(tools_parse_output("t", bad[i].out, strlen(bad[i].out), &v, &err), -1);
                assert_null(v);
                assert_string_equal(err_msg(err), bad[i].want);
                assert_int_equal(err_code(err), TOOLS_E_OUTPUT);
        }
        assert_int_equal(tools_parse_output("t", "[1,\0 2]", 7, &v, &err), -1);
        assert_string_equal(err_msg(err), "tool t printed invalid JSON on stdout (line 1, column 4): unexpected byte "
                                          "0x00 (expected a value)");
        err_free(err);
}

static void test_result_mapping(void **state)
{
        (void)state;
        struct tools_registry *reg = parse_ok("{\"u\": {\"command\": [\"cat\"], \"sandbox\": false, \"timeout_ms\": 250,"
                                              " \"max_output_bytes\": 5}, \"s\": {\"command\": [\"cat\"]}}");
        const struct tool_def *u = tools_find(reg, "u"), *s = tools_find(reg, "s");
        struct subproc_result r = result(true, 0, 0, "{\"ok\":1}", "");
        cJSON *v = NULL;
        assert_int_equal(tools_result(u, &r, &v, NULL), 0);
        v = as_tree(v);
        assert_int_equal(cJSON_GetObjectItem(v, "ok")->valueint, 1);
        cJSON_Delete(v);
        r = result(false, 0, 9, "", "");
        r.timed_out = true;
        result_fails(u, &r, TOOLS_E_TIMEOUT, "tool u timed out after 250 ms");
        r = result(false, 0, 11, "{}", "");
        result_fails(u, &r, TOOLS_E_SIGNAL, "tool u was killed by signal 11 (SIGSEGV)");
        r = result(true, 3, 0, "{}", "boom: no such thing\nsecond line\n");
        result_fails(u, &r, TOOLS_E_EXIT, "tool u exited with status 3: boom: no such thing");
        r = result(true, 1, 0, "", "");
        result_fails(u, &r, TOOLS_E_EXIT, "tool u exited with status 1");
        r = result(true, 2, 0, "", "bad\x01\x1b[31mred\r\n");
        result_fails(u, &r, TOOLS_E_EXIT, "tool u exited with status 2: bad??[31mred");
        r = result(true, 0, 0, "{\"a\":1}", "");
        r.out_truncated = true;
        result_fails(u, &r, TOOLS_E_OUTPUT, "tool u printed more than 5 bytes on stdout");
        r = result(true, 0, 0, "{\"a\":", "warnings are fine\n");
        result_fails(u, &r, TOOLS_E_OUTPUT, "tool u printed invalid JSON on stdout (line 1, column 6): unexpected end of "
                                            "the text (expected a value)");
        /* a long line is cut at 200 bytes, never inside a UTF-8 character */
        char longline[512];
        memset(longline, 'x', 199);
        snprintf(longline + 199, sizeof(longline) - 199, "%s", "\xc3\xa9 and more");
        r = result(true, 4, 0, "", longline);
        char want[300];
        snprintf(want, sizeof(want), "tool u exited with status 4: %.199s", longline);
        result_fails(u, &r, TOOLS_E_EXIT, want);
        /* sandboxed: launch's deadline is a timeout, launch's own codes quote its line */
        r = result(true, 124, 0, "", "tool noise\nchidori: deadline exceeded (30000 ms)\n");
        result_fails(s, &r, TOOLS_E_TIMEOUT, "tool s timed out after 30000 ms");
        r = result(true, 124, 0, "", "I exit 124 myself\n");
        result_fails(s, &r, TOOLS_E_EXIT, "tool s exited with status 124: I exit 124 myself");
        r = result(true, 159, 0, "", "partial\nchidori: sandbox violation: blocked syscall mount\n");
        result_fails(s, &r, TOOLS_E_EXIT, "tool s exited with status 159: chidori: sandbox violation: blocked "
                                          "syscall mount");
        r = result(true, 3, 0, "", "first\nchidori: not launch's\n");
        result_fails(s, &r, TOOLS_E_EXIT, "tool s exited with status 3: first");
        /* unsandboxed tools do not get the launch reading */
        r = result(true, 124, 0, "", "chidori: deadline exceeded (1 ms)\n");
        result_fails(u, &r, TOOLS_E_EXIT, "tool u exited with status 124: chidori: deadline exceeded (1 ms)");
        tools_free(reg);
}

/* ---- real calls ---- */

struct fx {
        char dir[64];
        char chidori[PATH_MAX];
        bool have_chidori;
};

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
        (void)st, (void)flag, (void)ftw;
        return remove(path);
}

static int fx_setup(void **state)
{
        struct fx *f = calloc(1, sizeof(*f));
        snprintf(f->dir, sizeof(f->dir), "/tmp/tools-e2e-XXXXXX");
        if (!mkdtemp(f->dir))
                return -1;
        chmod(f->dir, 0755);  /* the box maps root to nobody: keep it readable */
        const char *bin = getenv("CHIDORI_BIN");
        if (!bin || !*bin)
                bin = "build/chidori";
        f->have_chidori = realpath(bin, f->chidori) != NULL && access(f->chidori, X_OK) == 0;
        *state = f;
        return 0;
}

static int fx_teardown(void **state)
{
        struct fx *f = *state;
        nftw(f->dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
        free(f);
        return 0;
}

static void write_script(const struct fx *f, const char *name, const char *body)
{
        char path[256];
        snprintf(path, sizeof(path), "%s/%s", f->dir, name);
        FILE *fp = fopen(path, "w");
        assert_non_null(fp);
        fputs(body, fp);
        fclose(fp);
        assert_int_equal(chmod(path, 0755), 0);
}

struct call {
        bool done;
        cJSON *value;
        struct err *err;
        const struct tool_def *t;
        double ms;
};

static void call_done(void *arg, uint64_t id, const struct subproc_result *r)
{
        (void)id;
        struct call *c = arg;
        c->done = true;
        c->ms = r->elapsed_ms;
        if (tools_result(c->t, r, &c->value, &c->err) == 0)
                c->value = as_tree(c->value);
}

/* One tool call end to end: registry text -> spec -> subproc -> result. */
static void call_tool(const struct fx *f, const char *doc, const char *name, const char *args_json, struct call *c)
{
        struct tools_registry *reg = parse_ok(doc);
        const struct tool_def *t = tools_find(reg, name);
        assert_non_null(t);
        memset(c, 0, sizeof(*c));
        c->t = t;
        struct subproc_spec *sp = NULL;
        struct err *err = NULL;
        struct tools_host host = { .self_exe = f->chidori, .env = environ };
        if (tools_spec(reg, t, args_json, &host, &sp, &err) < 0)
                fail_msg("tools_spec: %s", err_msg(err));
        struct subproc_engine *e = NULL;
        assert_int_equal(subproc_engine_new(&e, NULL), 0);
        if (subproc_start(e, 1, sp, call_done, c, &err) < 0)
                fail_msg("subproc_start: %s", err_msg(err));
        tools_spec_free(sp);
        double until = mono_ms() + 30000;
        while (subproc_pending(e) && mono_ms() < until) {
                struct pollfd p[16];
                int tmo = -1;
                size_t n = subproc_fds(e, p, 16, &tmo);
                poll(p, n, tmo < 0 || tmo > 200 ? 200 : tmo);
                subproc_perform(e, p, n, NULL);
        }
        assert_true(c->done);
        subproc_engine_free(e);
        c->t = NULL;
        tools_free(reg);
}

static void call_clear(struct call *c)
{
        cJSON_Delete(c->value);
        err_free(c->err);
        memset(c, 0, sizeof(*c));
}

#define NEED_CHIDORI(f)                                                          \
        do {                                                                     \
                if (!(f)->have_chidori) {                                        \
                        fprintf(stderr, "no chidori binary: build it first\n");  \
                        skip();                                                  \
                }                                                                \
        } while (0)

static const char echo_tool[] = "#!/bin/sh\n"
                                "read -r line\n"
                                "echo 'a warning on stderr' >&2\n"
                                "printf '{\"got\": %s, \"path\": \"%s\"}\\n' \"$line\" \"$PATH\"\n";

static void test_e2e_sandboxed_echo(void **state)
{
        struct fx *f = *state;
        NEED_CHIDORI(f);
        write_script(f, "echo.sh", echo_tool);
        char doc[512];
        snprintf(doc, sizeof(doc), "{\"echo\": {\"command\": [\"%s/echo.sh\"], \"timeout_ms\": 10000}}", f->dir);
        struct call c;
        call_tool(f, doc, "echo", "{\"q\": \"hi \\\"there\\\"\", \"n\": 3}", &c);
        if (c.err)
                fail_msg("%s", err_msg(c.err));
        cJSON *got = cJSON_GetObjectItem(c.value, "got");
        assert_string_equal(cJSON_GetObjectItem(got, "q")->valuestring, "hi \"there\"");
        assert_int_equal(cJSON_GetObjectItem(got, "n")->valueint, 3);
        assert_string_equal(cJSON_GetObjectItem(c.value, "path")->valuestring, TOOLS_PATH);
        call_clear(&c);
}

/* Tries to write in /tmp, at /, in /etc, and beside itself. */
static const char write_tool[] = "#!/bin/sh\n"
                                 "n=0\n"
                                 "for p in /tmp/tool-wrote /tool-wrote /etc/tool-wrote \"$(dirname \"$0\")/wrote\"; do\n"
                                 "  if (echo x > \"$p\") 2>/dev/null; then n=$((n+1)); rm -f \"$p\"; fi\n"
                                 "done\n"
                                 "echo \"{\\\"wrote\\\": $n}\"\n";

static void test_e2e_sandbox_read_only(void **state)
{
        struct fx *f = *state;
        NEED_CHIDORI(f);
        write_script(f, "write.sh", write_tool);
        char doc[512];
        snprintf(doc, sizeof(doc),
                 "{\"w\": {\"command\": [\"%s/write.sh\"]}, \"w_host\": {\"command\": [\"%s/write.sh\"], "
                 "\"sandbox\": false}}", f->dir, f->dir);
        struct call c;
        call_tool(f, doc, "w", NULL, &c);
        if (c.err)
                fail_msg("%s", err_msg(c.err));
        assert_int_equal(cJSON_GetObjectItem(c.value, "wrote")->valueint, 0);
        call_clear(&c);
        /* the control: on the host, /tmp and its own folder are writable */
        call_tool(f, doc, "w_host", NULL, &c);
        if (c.err)
                fail_msg("%s", err_msg(c.err));
        assert_true(cJSON_GetObjectItem(c.value, "wrote")->valueint >= 2);
        call_clear(&c);
}

static const char net_tool[] = "import json, socket, sys\n"
                               "port = json.load(sys.stdin)['port']\n"
                               "try:\n"
                               "    socket.create_connection(('127.0.0.1', port), timeout=2).close()\n"
                               "    r = 'connected'\n"
                               "except OSError as e:\n"
                               "    r = 'refused: %s' % e\n"
                               "print(json.dumps({'net': r}))\n";

static void test_e2e_sandbox_no_network(void **state)
{
        struct fx *f = *state;
        NEED_CHIDORI(f);
        if (access("/usr/bin/python3", X_OK) < 0)
                skip();
        write_script(f, "net.py", net_tool);
        int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        assert_int_equal(bind(s, (struct sockaddr *)&a, sizeof(a)), 0);
        assert_int_equal(listen(s, 8), 0);
        socklen_t al = sizeof(a);
        getsockname(s, (struct sockaddr *)&a, &al);
        char args[64], doc[512];
        snprintf(args, sizeof(args), "{\"port\": %d}", ntohs(a.sin_port));
        /* the script is not the program: it is made visible with ro_bind */
        snprintf(doc, sizeof(doc),
                 "{\"net\": {\"command\": [\"python3\", \"%s/net.py\"], \"ro_bind\": [\"%s\"]},"
                 " \"net_host\": {\"command\": [\"python3\", \"%s/net.py\"], \"sandbox\": false}}",
                 f->dir, f->dir, f->dir);
        struct call c;
        call_tool(f, doc, "net", args, &c);
        if (c.err)
                fail_msg("%s", err_msg(c.err));
        const char *r = cJSON_GetObjectItem(c.value, "net")->valuestring;
        if (strncmp(r, "refused", 7) != 0)
                fail_msg("the box reached the host's loopback: %s", r);
        call_clear(&c);
        call_tool(f, doc, "net_host", args, &c);  /* the control */
        if (c.err)
                fail_msg("%s", err_msg(c.err));
        assert_string_equal(cJSON_GetObjectItem(c.value, "net")->valuestring, "connected");
        call_clear(&c);
        close(s);
}

static void test_e2e_sandboxed_failures(void **state)
{
        struct fx *f = *state;
        NEED_CHIDORI(f);
        write_script(f, "fail.sh", "#!/bin/sh\necho 'oops: it broke' >&2\necho more >&2\nexit 3\n");
        write_script(f, "slow.sh", "#!/bin/sh\nsleep 20\necho '{}'\n");
        write_script(f, "garbage.sh", "#!/bin/sh\necho '{\"a\": 1,'\n");
        write_script(f, "helper.sh", "#!/bin/sh\n. \"$(dirname \"$0\")/lib.sh\"\necho \"{\\\"v\\\": $V}\"\n");
        write_script(f, "lib.sh", "V=7\n");
        char doc[1024];
        snprintf(doc, sizeof(doc),
                 "{\"fail\": {\"command\": [\"%s/fail.sh\"]}, \"slow\": {\"command\": [\"%s/slow.sh\"], "
                 "\"timeout_ms\": 300}, \"garbage\": {\"command\": [\"%s/garbage.sh\"]},"
                 " \"helper\": {\"command\": [\"%s/helper.sh\"]}, \"helper_bound\": {\"command\": [\"%s/helper.sh\"],"
                 " \"ro_bind\": [\"%s\"]}}",
                 f->dir, f->dir, f->dir, f->dir, f->dir, f->dir);
        struct call c;
        call_tool(f, doc, "fail", NULL, &c);
        assert_non_null(c.err);
        assert_string_equal(err_msg(c.err), "tool fail exited with status 3: oops: it broke");
        call_clear(&c);
        call_tool(f, doc, "slow", NULL, &c);
        assert_non_null(c.err);
        assert_string_equal(err_msg(c.err), "tool slow timed out after 300 ms");
        assert_int_equal(err_code(c.err), TOOLS_E_TIMEOUT);
        assert_true(c.ms < 300 + TOOLS_LAUNCH_GRACE_MS);  /* the box's deadline, not our backstop */
        call_clear(&c);
        call_tool(f, doc, "garbage", NULL, &c);
        assert_non_null(c.err);
        assert_string_equal(err_msg(c.err), "tool garbage printed invalid JSON on stdout (line 2, column 1): unexpected "
                                            "end of the text (expected a member name in quotes)");
        call_clear(&c);
        /* only the program itself is visible in the box, not its folder... */
        call_tool(f, doc, "helper", NULL, &c);
        assert_non_null(c.err);
        assert_int_equal(err_code(c.err), TOOLS_E_EXIT);
        call_clear(&c);
        /* ...unless the folder is bound */
        call_tool(f, doc, "helper_bound", NULL, &c);
        if (c.err)
                fail_msg("%s", err_msg(c.err));
        assert_int_equal(cJSON_GetObjectItem(c.value, "v")->valueint, 7);
        call_clear(&c);
}

static void test_e2e_unsandboxed(void **state)
{
        struct fx *f = *state;
        NEED_CHIDORI(f);
        write_script(f, "env.sh", "#!/bin/sh\nread -r a\nprintf '{\"args\": %s, \"secret\": \"%s\", \"home\": \"%s\"}\\n'"
                                  " \"$a\" \"$TOOLS_E2E_SECRET\" \"${HOME-unset}\"\n");
        setenv("TOOLS_E2E_SECRET", "xyz", 1);
        char doc[512];
        snprintf(doc, sizeof(doc), "{\"env\": {\"command\": [\"%s/env.sh\"], \"sandbox\": false,"
                 " \"env\": [\"TOOLS_E2E_SECRET\"]}}", f->dir);
        struct call c;
        call_tool(f, doc, "env", "[1, \"two\"]", &c);
        if (c.err)
                fail_msg("%s", err_msg(c.err));
        assert_string_equal(cJSON_GetObjectItem(c.value, "secret")->valuestring, "xyz");
        assert_string_equal(cJSON_GetObjectItem(c.value, "home")->valuestring, "unset");
        assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(c.value, "args")), 2);
        call_clear(&c);
        unsetenv("TOOLS_E2E_SECRET");
}

static void test_e2e_big_args_unread_and_output_cap(void **state)
{
        struct fx *f = *state;
        NEED_CHIDORI(f);
        write_script(f, "deaf.sh", "#!/bin/sh\necho '{\"heard\": false}'\n");
        write_script(f, "loud.sh", "#!/bin/sh\nhead -c 5000 /dev/zero | tr '\\0' x\n");
        char doc[512];
        snprintf(doc, sizeof(doc), "{\"deaf\": {\"command\": [\"%s/deaf.sh\"]}, \"loud\": {\"command\": "
                 "[\"%s/loud.sh\"], \"max_output_bytes\": 100}}", f->dir, f->dir);
        /* 512 KiB of arguments to a tool that never reads them */
        size_t n = 512 * 1024;
        char *big = malloc(n + 16);
        memset(big, 'a', n + 16);
        memcpy(big, "{\"s\": \"", 7);
        memcpy(big + n + 7, "\"}", 3);
        struct call c;
        call_tool(f, doc, "deaf", big, &c);
        free(big);
        if (c.err)
                fail_msg("%s", err_msg(c.err));
        assert_true(cJSON_IsFalse(cJSON_GetObjectItem(c.value, "heard")));
        call_clear(&c);
        call_tool(f, doc, "loud", NULL, &c);
        assert_non_null(c.err);
        assert_string_equal(err_msg(c.err), "tool loud printed more than 100 bytes on stdout");
        call_clear(&c);
}

static void test_e2e_concurrent_calls(void **state)
{
        struct fx *f = *state;
        NEED_CHIDORI(f);
        write_script(f, "echo.sh", echo_tool);
        char doc[512];
        snprintf(doc, sizeof(doc), "{\"echo\": {\"command\": [\"%s/echo.sh\"]}, \"host\": {\"command\": "
                 "[\"%s/echo.sh\"], \"sandbox\": false}}", f->dir, f->dir);
        struct tools_registry *reg = parse_ok(doc);
        struct subproc_engine *e = NULL;
        assert_int_equal(subproc_engine_new(&e, NULL), 0);
        enum { N = 6 };
        struct call c[N];
        memset(c, 0, sizeof(c));
        for (int i = 0; i < N; i++) {
                c[i].t = tools_find(reg, i % 2 ? "host" : "echo");
                char args[32];
                snprintf(args, sizeof(args), "{\"i\":%d}", i);
                struct subproc_spec *sp = NULL;
                struct tools_host host = { .self_exe = f->chidori, .env = environ };
                assert_int_equal(tools_spec(reg, c[i].t, args, &host, &sp, NULL), 0);
                assert_int_equal(subproc_start(e, (uint64_t)i, sp, call_done, &c[i], NULL), 0);
                tools_spec_free(sp);
        }
        double until = mono_ms() + 30000;
        while (subproc_pending(e) && mono_ms() < until) {
                struct pollfd p[64];
                int tmo = -1;
                size_t k = subproc_fds(e, p, 64, &tmo);
                poll(p, k, tmo < 0 || tmo > 200 ? 200 : tmo);
                subproc_perform(e, p, k, NULL);
        }
        for (int i = 0; i < N; i++) {
                assert_true(c[i].done);
                if (c[i].err)
                        fail_msg("call %d: %s", i, err_msg(c[i].err));
                cJSON *got = cJSON_GetObjectItem(c[i].value, "got");
                assert_int_equal(cJSON_GetObjectItem(got, "i")->valueint, i);
                call_clear(&c[i]);
        }
        subproc_engine_free(e);
        tools_free(reg);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_minimal_defaults),
                cmocka_unit_test(test_full_definition),
                cmocka_unit_test(test_syntax_errors),
                cmocka_unit_test(test_top_level_and_names),
                cmocka_unit_test(test_command_errors),
                cmocka_unit_test(test_number_and_bool_errors),
                cmocka_unit_test(test_env_errors),
                cmocka_unit_test(test_unknown_keys_and_ro_bind),
                cmocka_unit_test(test_load_file),
                cmocka_unit_test(test_spec_sandboxed),
                cmocka_unit_test(test_spec_sandboxed_binds_and_posture),
                cmocka_unit_test(test_spec_unsandboxed_env_allowlist),
                cmocka_unit_test(test_parse_output),
                cmocka_unit_test(test_result_mapping),
                cmocka_unit_test_setup_teardown(test_e2e_sandboxed_echo, fx_setup, fx_teardown),
                cmocka_unit_test_setup_teardown(test_e2e_sandbox_read_only, fx_setup, fx_teardown),
                cmocka_unit_test_setup_teardown(test_e2e_sandbox_no_network, fx_setup, fx_teardown),
                cmocka_unit_test_setup_teardown(test_e2e_sandboxed_failures, fx_setup, fx_teardown),
                cmocka_unit_test_setup_teardown(test_e2e_unsandboxed, fx_setup, fx_teardown),
                cmocka_unit_test_setup_teardown(test_e2e_big_args_unread_and_output_cap, fx_setup, fx_teardown),
                cmocka_unit_test_setup_teardown(test_e2e_concurrent_calls, fx_setup, fx_teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
