/* cli/main.c — argv[1] selects a subcommand; everything else is in the
 * subcommand's file. */
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "common/stop.h"
#include "cli/cli.h"
#include "cli/suggest.h"
#include "common/text.h"
#include "sandbox/sandbox.h"

static void help(FILE *f)
{
        fprintf(f, "chidori %s — a sandboxed runtime for JavaScript agents\n"
                   "\n"
                   "Usage: chidori COMMAND [OPTIONS] ...\n"
                   "\n"
                   "Commands:\n"
                   "  run AGENT        run one agent to completion and print its result\n"
                   "  replay JOURNAL   re-run a recorded run from its journal, performing no effect\n"
                   "  launch -- PROG   run any program inside the same sandbox\n"
                   "  doctor           report which isolation layers this host can apply\n"
                   "  memory ACTION    list, show, delete or clear an agent's memory (chidori.memory)\n"
                   "  serve AGENT      serve an agent over HTTP: sessions, approvals, streaming\n"
                   "\n"
                   "  chidori COMMAND --help   shows the options of a command\n"
                   "  chidori --version        prints the version\n",
                CHIDORI_VERSION);
}


/* The name this binary was called by: "chidori-launch" is `chidori launch`. */
static bool called_as(const char *argv0, const char *name)
{
        const char *base = argv0 ? strrchr(argv0, '/') : NULL;
        base = base ? base + 1 : argv0;
        return base && strcmp(base, name) == 0;
}

int main(int argc, char **argv)
{
        stop_handlers_install();
        if (called_as(argv[0], "chidori-launch")) {
                int setup = launcher_child_setup();
                return setup ? setup : cmd_launch_wrapper(argc, argv);
        }
        if (argc < 2) {
                help(stderr);
                return EXIT_USAGE;
        }
        /* A child of a run (nested run, tool): die with it and enter its
         * cgroup budget before anything else (sandbox/child.c). */
        int setup = launcher_child_setup();
        if (setup)
                return setup;
        const char *cmd = argv[1];
        if (strcmp(cmd, "--version") == 0 || strcmp(cmd, "-V") == 0 || strcmp(cmd, "version") == 0) {
                printf("chidori %s\n", CHIDORI_VERSION);
                return EXIT_OK;
        }
        if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0) {
                help(stdout);
                return EXIT_OK;
        }
        /* run and replay have --json: their usage errors are JSON too. */
        if (strcmp(cmd, "run") == 0 || strcmp(cmd, "replay") == 0) {
                cli_json_begin(argc - 1, argv + 1);
                int code = cmd[1] == 'u' ? cmd_run(argc - 1, argv + 1) : cmd_replay(argc - 1, argv + 1);
                return cli_json_end(code);
        }
        if (strcmp(cmd, "launch") == 0)
                return cmd_launch(argc - 1, argv + 1);
        if (strcmp(cmd, "doctor") == 0)
                return cmd_doctor(argc - 1, argv + 1);
        if (strcmp(cmd, "_host-tool") == 0) /* internal: how a "sandbox": false tool runs */
                return cmd_host_tool(argc - 1, argv + 1);
        if (strcmp(cmd, "memory") == 0)
                return cmd_memory(argc - 1, argv + 1);
        if (strcmp(cmd, "serve") == 0)
                return cmd_serve(argc - 1, argv + 1);
        static const char *const cmds[] = { "run", "replay", "launch", "doctor", "memory", "serve", "help", "version" };
        const char *near = cli_nearest(cmd, cmds, sizeof(cmds) / sizeof(cmds[0]));
        char q[256];
        text_quote(cmd, strlen(cmd), q, sizeof(q));
        if (near)
                fprintf(stderr, "chidori: unknown command '%s'; did you mean '%s'?\nTry 'chidori --help'.\n", q, near);
        else
                fprintf(stderr, "chidori: unknown command '%s'\nTry 'chidori --help'.\n", q);
        return EXIT_USAGE;
}
