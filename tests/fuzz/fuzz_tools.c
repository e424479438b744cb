/* tests/fuzz/fuzz_tools.c — libFuzzer target for the tools file
 * (effects/proc/tools.c): the `--tools FILE` loader and its checks, the child
 * each tool would get (tools_spec: argv, environment, stdin from the agent's
 * args), and the reading of a tool's stdout and ending (tools_parse_output,
 * tools_result).  The whole input is the tools file (loaded with and without
 * looking at the host's files); it is also the args of every call and the
 * stdout of every tool, the way an agent and a tool hand them over.  Nothing
 * is started.  Crashes on a broken invariant, not only on memory errors. */
#define _GNU_SOURCE
#include <cjson/cJSON.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common/err.h"
#include "effects/proc/subproc.h"
#include "effects/proc/tools.h"

static void check_err(const struct err *e, const char *prefix)
{
        int code = err_code(e);
        if (!err_msg(e) || code < 0 || code >= TOOLS_E_MAX || (prefix && strncmp(err_msg(e), prefix, strlen(prefix))))
                abort();
}

static void one_tool(const struct tools_registry *reg, const struct tool_def *t, const char *text, size_t len)
{
        if (!t->name || !*t->name || strlen(t->name) > TOOLS_NAME_MAX || t->ncommand < 1 ||
            t->ncommand > TOOLS_COMMAND_MAX || !t->command[0] || t->command[t->ncommand] || t->nenv > TOOLS_ENV_MAX ||
            t->nro_bind > TOOLS_RO_BIND_MAX || t->timeout_ms <= 0 || t->timeout_ms > TOOLS_TIMEOUT_MAX_MS ||
            t->max_output_bytes > TOOLS_OUTPUT_MAX)
                abort();
        if (tools_find(reg, t->name) != t)
                abort();
        static char *const opts[] = { "--require-sandbox", NULL };
        static char *const env[] = { "HOME=/root", "API_KEY=k", "LANG=C", NULL };
        static char *const extra[] = { "CHIDORI_DIE_WITH_PARENT=1", NULL };
        struct tools_host host = { .self_exe = "/usr/local/bin/chidori", .launch_opts = opts, .env = env,
                                   .extra_env = extra };
        /* The agent's args: the input itself (JSON or not), then none. */
        for (int k = 0; k < 2; k++) {
                struct subproc_spec *spec = NULL;
                struct err *e = NULL;
                if (tools_spec(reg, t, k == 0 ? text : NULL, &host, &spec, &e) == 0) {
                        if (!spec->argv || !spec->argv[0] || strcmp(spec->argv[0], host.self_exe) != 0)
                                abort();
                        for (char *const *p = spec->envp; p && *p; p++)
                                if (!strchr(*p, '='))
                                        abort();
                        if (spec->stdin_len < 1 || ((const char *)spec->stdin_data)[spec->stdin_len - 1] != '\n')
                                abort();
                        tools_spec_free(spec);
                } else {
                        check_err(e, NULL);
                }
                err_free(e);
        }
        /* The input as what the tool printed, in each way a call can end. */
        struct subproc_result res = { .exited = true, .out = (const unsigned char *)text, .out_len = len,
                                      .err = (const unsigned char *)text, .err_len = len };
        for (int k = 0; k < 5; k++) {
                res.exited = k != 2;
                res.exit_code = k == 1 ? 3 : k == 4 ? 124 : 0;
                res.signal = k == 2 ? SIGKILL : 0;
                res.timed_out = k == 3;
                cJSON *v = NULL;
                struct err *e = NULL;
                if (tools_result(t, &res, &v, &e) == 0) {
                        if (!v || k != 0)
                                abort();
                        cJSON_Delete(v);
                } else {
                        check_err(e, NULL);
                }
                err_free(e);
        }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        if (size > 65536)
                return 0;
        char *text = malloc(size + 1);
        if (!text)
                return 0;
        memcpy(text, data, size);
        text[size] = '\0';

        /* stdout of a tool, on its own */
        cJSON *v = NULL;
        struct err *e = NULL;
        if (tools_parse_output("t", data, size, &v, &e) == 0)
                cJSON_Delete(v);
        else
                check_err(e, "tool t ");
        err_free(e);
        e = NULL;

        /* the file, as the broker loads it (no host files) and as chidori run checks it */
        for (int k = 0; k < 2; k++) {
                struct tools_registry *reg = NULL;
                int rc;
                if (k == 0) {
                        int fd = memfd_create("tools", MFD_CLOEXEC);
                        if (fd < 0 || (size && write(fd, data, size) != (ssize_t)size) || lseek(fd, 0, SEEK_SET) != 0)
                                abort();
                        rc = tools_load_opened("tools.json", fd, 0, TOOLS_LOAD_NO_FILES, &reg, &e);
                        close(fd);
                } else {
                        rc = tools_parse(text, size, "tools.json", &reg, &e);
                }
                if (rc == 0) {
                        size_t n = tools_count(reg);
                        if (n > TOOLS_MAX)
                                abort();
                        for (size_t i = 0; i < n; i++)
                                one_tool(reg, tools_at(reg, i), text, size);
                        if (tools_at(reg, n))
                                abort();
                        (void)tools_find(reg, text);
                        tools_free(reg);
                } else {
                        check_err(e, "tools.json");
                }
                err_free(e);
                e = NULL;
        }
        free(text);
        return 0;
}
