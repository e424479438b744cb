/* cli/launch.c — `chidori launch [options] -- PROGRAM ARGS`: any program
 * in the same box as the engine worker, with a general seccomp allowlist.
 * For wrappers (another engine speaking the frame protocol) and for tests. */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/options.h"
#include "cli/suggest.h"
#include "common/cleanup.h"
#include "common/util.h"
#include "sandbox/box.h"

/* "chidori launch", or "chidori-launch" when called by that name (cli/main.c):
 * only --help says which; the options, messages and exit codes are the same. */
static const char *launch_name = "chidori launch";

static void launch_help(void)
{
        printf("Usage: %s [OPTIONS] -- PROGRAM [ARGS...]\n"
               "\n"
               "Run any program inside the same box as the engine worker: user, pid, mount, net, ipc,\n"
               "uts and cgroup namespaces, a minimal read-only root (system libraries, the program,\n"
               "a private /dev, a fresh /proc), an empty network with only lo, no capabilities,\n"
               "no_new_privs, Landlock (read-only), a general seccomp allowlist, and rlimits.\n"
               "The program's stdin, stdout and stderr are this command's.  Its exit status is\n"
               "passed through; a sandbox ending uses the codes below.\n"
               "\n"
               "Options (environment variable in brackets):\n"
               "  --ro-bind SRC[:DST]   make host path SRC visible read-only at DST (default SRC)\n"
               "  --bind SRC[:DST]      make host path SRC visible read-write at DST\n"
               SANDBOX_OPTIONS_HELP
               "  --setenv NAME         pass NAME=value from this environment into the box (repeatable);\n"
               "                        the box's environment is otherwise PATH, HOME=/ and LANG only\n"
               "  --seccomp-errno       a syscall outside the allowlist fails with EPERM and the program\n"
               "                        goes on (as in container runtimes), instead of ending the box\n"
               "                        with exit 159; the fixed prefix (ptrace, bpf, mount, namespaces,\n"
               "                        keyctl, ...) still ends it, named\n"
               "  --quiet               do not print the Isolation: banner\n"
               "  -h, --help            show this help\n"
               "\n"
               "Exit status: the program's, or 124 deadline, 152 CPU limit, 159 blocked syscall,\n"
               "78 required sandbox layer unavailable, 2 usage, 127 program not found.\n"
               "\n"
               "chidori-launch [OPTIONS] -- PROGRAM [ARGS...] is the same command (put it in front of\n"
               "any command line, as bwrap or firejail).\n",
               launch_name);
}

static char *resolve_program(const char *name)
{
        if (strchr(name, '/'))
                return realpath(name, NULL);
        const char *path = getenv("PATH");
        _cleanup_free_ char *dup = strdup(path && *path ? path : "/usr/bin:/bin");
        for (char *save = NULL, *d = strtok_r(dup, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
                _cleanup_free_ char *p = NULL;
                if (asprintf(&p, "%s/%s", d, name) >= 0 && access(p, X_OK) == 0)
                        return realpath(p, NULL);
        }
        return NULL;
}

static int parse_bind(const char *arg, bool rw, struct box_bind *b)
{
        char *dup = strdup(arg);
        char *colon = strchr(dup, ':');
        if (colon)
                *colon = '\0';
        char *src = realpath(dup, NULL);
        if (!src) {
                fprintf(stderr, "chidori: --%s '%s': %s\n", rw ? "bind" : "ro-bind", dup, strerror(errno));
                free(dup);
                return -1;
        }
        const char *dst = colon ? colon + 1 : src;
        bool bad = dst[0] != '/' || strcmp(dst, "/") == 0;
        for (const char *c = dst; *c && !bad; c++) /* no "." or ".." component */
                if (c[0] == '/' && c[1] == '.' && (c[2] == '/' || c[2] == '\0' || (c[2] == '.' && (c[3] == '/' || c[3] == '\0'))))
                        bad = true;
        if (bad) {
                fprintf(stderr, "chidori: --%s destination '%s' must be an absolute path other than /, without . or .. components\n",
                        rw ? "bind" : "ro-bind", dst);
                free(dup), free(src);
                return -1;
        }
        b->src = src;
        b->dst = strdup(dst);
        b->rw = rw;
        b->idmap = false;
        free(dup);
        return 0;
}

enum { OPT_RO_BIND = 600, OPT_BIND, OPT_QUIET_L, OPT_SETENV, OPT_SECCOMP_ERRNO };

#define LAUNCH_ENV_MAX 64

static bool env_name_ok(const char *n)
{
        if (!*n || (*n >= '0' && *n <= '9'))
                return false;
        for (; *n; n++)
                if (!((*n >= 'A' && *n <= 'Z') || (*n >= 'a' && *n <= 'z') || (*n >= '0' && *n <= '9') || *n == '_'))
                        return false;
        return true;
}

/* The box's environment: fixed, plus what --setenv names (a name given
 * there replaces a fixed one; unset names are left out).  env gets
 * LAUNCH_FIXED_ENV + n + 1 entries at most; the strings malloc'd for it are
 * in owned (their count returned). */
#define LAUNCH_FIXED_ENV 3
static size_t launch_env(const char *const *names, size_t n, char **env, char **owned)
{
        static const char *const fixed[LAUNCH_FIXED_ENV] = { "PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/",
                                                             "LANG=C.UTF-8" };
        size_t nenv = 0, nowned = 0;
        for (size_t i = 0; i < ARRAY_SIZE(fixed); i++) {
                bool replaced = false;
                for (size_t k = 0; k < n; k++)
                        replaced |= strncmp(fixed[i], names[k], strlen(names[k])) == 0 &&
                                    fixed[i][strlen(names[k])] == '=';
                if (!replaced)
                        env[nenv++] = (char *)fixed[i];
        }
        for (size_t k = 0; k < n; k++) {
                const char *v = getenv(names[k]);
                char *kv = NULL;
                if (v && asprintf(&kv, "%s=%s", names[k], v) >= 0)
                        env[nenv++] = owned[nowned++] = kv;
        }
        env[nenv] = NULL;
        return nowned;
}

/* What the command line asks for; launch_args_clear frees the binds. */
struct launch_args {
        struct sandbox_opts so;
        struct box_bind binds[64];
        size_t nbinds;
        bool quiet;
        const char *setenv_names[LAUNCH_ENV_MAX];
        size_t nsetenv;
};

static void launch_args_clear(struct launch_args *a)
{
        for (size_t i = 0; i < a->nbinds; i++) {
                free((char *)a->binds[i].src);
                free((char *)a->binds[i].dst);
        }
        a->nbinds = 0;
}

static int add_bind(struct launch_args *a, const char *arg, bool rw)
{
        if (a->nbinds == ARRAY_SIZE(a->binds)) {
                fprintf(stderr, "chidori: at most %zu binds\n", ARRAY_SIZE(a->binds));
                return -1;
        }
        if (parse_bind(arg, rw, &a->binds[a->nbinds]) < 0)
                return -1;
        a->nbinds++;
        return 0;
}

static int add_setenv(struct launch_args *a, const char *name)
{
        if (!env_name_ok(name) || a->nsetenv == LAUNCH_ENV_MAX) {
                fprintf(stderr, "chidori: --setenv '%s': expected a variable name ([A-Za-z_][A-Za-z0-9_]*), "
                                "at most %d of them\n", name, LAUNCH_ENV_MAX);
                return -1;
        }
        a->setenv_names[a->nsetenv++] = name;
        return 0;
}

/* The options, up to PROGRAM (argv[optind] after it): -1 to go on, or the
 * exit code (--help, a usage error). */
static int launch_parse(int argc, char **argv, struct launch_args *a)
{
        static const struct option longopts[] = {
                { "ro-bind", required_argument, NULL, OPT_RO_BIND },
                { "bind", required_argument, NULL, OPT_BIND },
                { "quiet", no_argument, NULL, OPT_QUIET_L },
                { "setenv", required_argument, NULL, OPT_SETENV },
                { "seccomp-errno", no_argument, NULL, OPT_SECCOMP_ERRNO },
                { "help", no_argument, NULL, 'h' },
                SANDBOX_LONGOPTS,
                { NULL, 0, NULL, 0 },
        };
        sandbox_opts_init(&a->so);
        if (sandbox_opts_env(&a->so) < 0)
                return EXIT_USAGE;
        optind = 1;
        opterr = 0;
        int c;
        /* '+': stop at the first non-option, so PROGRAM's own flags pass through. */
        while ((c = getopt_long(argc, argv, "+:h", longopts, NULL)) != -1) {
                if (c == '?' || c == ':')
                        return cli_bad_option("launch", argc, argv, longopts);
                int h = sandbox_opts_parse(&a->so, "launch", c, optarg);
                if (h < 0)
                        return EXIT_USAGE;
                if (h > 0)
                        continue;
                switch (c) {
                case OPT_RO_BIND:
                case OPT_BIND:
                        if (add_bind(a, optarg, c == OPT_BIND) < 0)
                                return EXIT_USAGE;
                        break;
                case OPT_QUIET_L: a->quiet = true; break;
                case OPT_SECCOMP_ERRNO: a->so.seccomp_errno = true; break;
                case OPT_SETENV:
                        if (add_setenv(a, optarg) < 0)
                                return EXIT_USAGE;
                        break;
                case 'h': launch_help(); return EXIT_OK;
                default: return cli_bad_option("launch", argc, argv, longopts);
                }
        }
        if (optind >= argc) {
                fprintf(stderr, "chidori: launch needs a program: chidori launch [OPTIONS] -- PROGRAM [ARGS]\n");
                return EXIT_USAGE;
        }
        if (sandbox_opts_check(&a->so) < 0)
                return EXIT_USAGE;
        return -1;
}

/* Start PROGRAM (resolved to prog) in a box and wait for it: its exit
 * status, or the sandbox's code. */
static int launch_box(struct launch_args *a, const char *prog, char **prog_argv)
{
        char *env[LAUNCH_FIXED_ENV + LAUNCH_ENV_MAX + 1];
        char *owned[LAUNCH_ENV_MAX];
        size_t nowned = launch_env(a->setenv_names, a->nsetenv, env, owned);
        int code = sandbox_launch(&a->so, a->binds, a->nbinds, prog, prog_argv, env, a->quiet);
        for (size_t i = 0; i < nowned; i++)
                free(owned[i]);
        return code;
}

int cmd_launch_wrapper(int argc, char **argv)
{
        launch_name = "chidori-launch";
        return cmd_launch(argc, argv);
}

int cmd_launch(int argc, char **argv)
{
        struct launch_args a = { .nbinds = 0 };
        int code = launch_parse(argc, argv, &a);
        if (code < 0) {
                _cleanup_free_ char *prog = resolve_program(argv[optind]);
                if (prog) {
                        code = launch_box(&a, prog, argv + optind);
                } else {
                        fprintf(stderr, "chidori: launch: program '%s' not found\n", argv[optind]);
                        code = 127;
                }
        }
        launch_args_clear(&a);
        return code;
}

/* `chidori _host-tool [--as UID:GID] -- PROGRAM [ARGS...]` (internal): how
 * the one-process run starts a "sandbox": false tool (sandbox/hosttool.c). */
static int parse_as(const char *spec, uid_t *ret_uid, gid_t *ret_gid)
{
        unsigned long u, g;
        char *end;
        errno = 0;
        u = strtoul(spec, &end, 10);
        if (errno || end == spec || *end != ':' || u == 0 || u > 0xfffffffeul)
                return -1;
        const char *gs = end + 1;
        g = strtoul(gs, &end, 10);
        if (errno || end == gs || *end || g == 0 || g > 0xfffffffeul)
                return -1;
        *ret_uid = (uid_t)u;
        *ret_gid = (gid_t)g;
        return 0;
}

int cmd_host_tool(int argc, char **argv)
{
        int i = 1;
        bool as = false;
        uid_t as_uid = 0;
        gid_t as_gid = 0;
        if (i + 1 < argc && strcmp(argv[i], "--as") == 0) {
                if (parse_as(argv[i + 1], &as_uid, &as_gid) < 0) {
                        fprintf(stderr, "chidori: _host-tool: --as %s: expected UID:GID, neither 0\n", argv[i + 1]);
                        return EXIT_USAGE;
                }
                as = true;
                i += 2;
        }
        if (i < argc && strcmp(argv[i], "--") == 0)
                i++;
        if (i >= argc) {
                fprintf(stderr, "chidori: _host-tool is internal: chidori _host-tool [--as UID:GID] -- PROGRAM "
                                "[ARGS...]\n");
                return EXIT_USAGE;
        }
        return host_tool_run(as, as_uid, as_gid, argv + i);
}
