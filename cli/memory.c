/* cli/memory.c — `chidori memory list|get|delete|clear`: the store
 * behind chidori.memory, seen from outside a run (effects/memory/memstore.h), and
 * the --state-dir check shared with `run`.
 *
 * Keys and values were written by agents: keys print one per line with
 * control characters, DEL, C1 controls and backslash as \xNN; values print
 * as their JSON text with those characters \u-escaped inside strings (the
 * same JSON value, safe on a terminal). */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/suggest.h"
#include "common/cleanup.h"
#include "common/text.h"
#include "effects/memory/memstore.h"

int state_dir_check(const char *dir)
{
        struct stat st;
        if (stat(dir, &st) == 0)
                return 0; /* exists: memstore_open says if it is not a folder */
        _cleanup_free_ char *parent = strdup(dir);
        if (!parent)
                return -1;
        size_t n = strlen(parent);
        while (n > 1 && parent[n - 1] == '/')
                parent[--n] = '\0';
        char *slash = strrchr(parent, '/');
        const char *p = parent;
        if (!slash)
                p = ".";
        else if (slash == parent)
                slash[1] = '\0';
        else
                *slash = '\0';
        if (stat(p, &st) == 0 && S_ISDIR(st.st_mode))
                return 0; /* the folder itself is made, 0700, by the store */
        char qd[PATH_MAX], qp[PATH_MAX];
        text_quote(dir, strlen(dir), qd, sizeof(qd));
        text_quote(p, strlen(p), qp, sizeof(qp));
        fprintf(stderr,
                "chidori: --state-dir '%s': its parent folder '%s' %s; --state-dir creates only the last "
                "folder: create '%s' first (mkdir -p) or choose another --state-dir\n",
                qd, qp, errno == ENOENT || errno == ENOTDIR ? "does not exist" : "is not a usable folder", qp);
        return -1;
}

/* A key for one line of output. */
static void print_key(const char *k)
{
        for (const unsigned char *p = (const unsigned char *)k; *p; p++) {
                if (*p < 0x20 || *p == 0x7f || *p == '\\')
                        printf("\\x%02x", *p);
                else if (*p == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f) /* C1 control, U+0080..U+009F */
                        printf("\\xc2\\x%02x", *++p);
                else
                        putchar(*p);
        }
        putchar('\n');
}

/* JSON text with control characters, DEL and C1 controls inside strings
 * written as \u escapes: the same value, nothing a terminal acts on. */
static void print_json_text(const char *j)
{
        bool in_str = false, esc = false;
        for (const unsigned char *p = (const unsigned char *)j; *p; p++) {
                unsigned c = *p;
                if (in_str && !esc && (c < 0x20 || c == 0x7f)) {
                        printf("\\u%04x", c);
                        continue;
                }
                if (in_str && c == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f) {
                        printf("\\u%04x", *++p);
                        continue;
                }
                if (!in_str && c < 0x20 && c != '\n' && c != '\t' && c != '\r')
                        continue; /* not JSON: nothing of it reaches the terminal */
                putchar((int)c);
                if (esc)
                        esc = false;
                else if (in_str && c == '\\')
                        esc = true;
                else if (c == '"')
                        in_str = !in_str;
        }
        putchar('\n');
}

static void memory_help(void)
{
        printf("Usage: chidori memory list   [OPTIONS] (--ns NAMESPACE | AGENT)\n"
               "       chidori memory get    [OPTIONS] (--ns NAMESPACE | AGENT) KEY\n"
               "       chidori memory delete [OPTIONS] (--ns NAMESPACE | AGENT) KEY\n"
               "       chidori memory clear  [OPTIONS] (--ns NAMESPACE | AGENT) --yes\n"
               "\n"
               "The agent memory behind chidori.memory, outside a run.  The namespace is the agent's\n"
               "absolute path, as `chidori run AGENT` uses it, or the one --ns names (run's --memory-ns).\n"
               "list prints the keys, one per line (control characters and backslash as \\xNN); get prints\n"
               "a key's JSON value; delete removes one key; clear removes every key of the namespace.\n"
               "A store that does not exist yet is not created: it has no keys.\n"
               "\n"
               "Options (environment variable in brackets):\n"
               "  --state-dir DIR       where agent memory is kept\n"
               "                        [default $XDG_STATE_HOME/chidori or ~/.local/state/chidori]\n"
               "  --ns NAMESPACE        the namespace (instead of AGENT); --memory-ns is the same\n"
               "  --prefix PREFIX       list: only keys that start with PREFIX\n"
               "  --yes                 clear: yes, remove every key of the namespace\n"
               "  -h, --help            show this help\n"
               "\n"
               "Exit status: 0 ok, 1 no such key (get, delete), 2 usage or an unusable store.\n");
}

enum { MOPT_STATE_DIR = 900, MOPT_NS, MOPT_PREFIX, MOPT_YES };

static int usage(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int usage(const char *fmt, ...)
{
        va_list ap;
        va_start(ap, fmt);
        fprintf(stderr, "chidori: memory: ");
        vfprintf(stderr, fmt, ap);
        fprintf(stderr, "\nTry 'chidori memory --help'.\n");
        va_end(ap);
        return EXIT_USAGE;
}

enum memory_action { ACT_LIST, ACT_GET, ACT_DELETE, ACT_CLEAR };

struct memory_cmd {
        const char *state_dir, *ns_opt, *prefix;
        bool yes;
        enum memory_action act;
        const char *action;
        char *ns;                 /* the namespace (malloc'd) */
        const char *key;          /* get, delete */
        char qk[4096], qn[4096];  /* key and namespace, quoted for messages */
};

/* The action word: 0, or the exit code (printed). */
static int parse_action(struct memory_cmd *m, const char *action)
{
        static const char *const actions[] = { "list", "get", "delete", "clear" };
        m->action = action;
        for (int i = 0; i < 4; i++)
                if (strcmp(action, actions[i]) == 0) {
                        m->act = (enum memory_action)i;
                        return 0;
                }
        const char *near = cli_nearest(action, actions, 4);
        char q[256];
        fprintf(stderr, "chidori: memory: unknown action '%s'%s%s%s (expected list, get, delete or clear)\n",
                text_quote(action, strlen(action), q, sizeof(q)), near ? "; did you mean '" : "", near ? near : "",
                near ? "'?" : "");
        fprintf(stderr, "Try 'chidori memory --help'.\n");
        return EXIT_USAGE;
}

/* The operands after the action: [AGENT] [KEY].  0, or the exit code (printed). */
static int parse_operands(struct memory_cmd *m, int argc, char **argv, int i)
{
        bool needs_key = m->act == ACT_GET || m->act == ACT_DELETE;
        int want = (m->ns_opt ? 0 : 1) + (needs_key ? 1 : 0);
        int have = argc - i;
        char q[512];
        if (have < want) {
                if (!m->ns_opt && have == 0)
                        return usage("name the agent (its path) or the namespace (--ns NAMESPACE)");
                return usage("%s: which key? (chidori memory %s AGENT KEY, or --ns NAMESPACE KEY)", m->action,
                             m->action);
        }
        if (have > want)
                return usage("unexpected argument '%s'%s",
                             text_quote(argv[i + want], strlen(argv[i + want]), q, sizeof(q)),
                             m->ns_opt ? " (--ns names the namespace: give no AGENT)" : "");
        if (m->prefix && m->act != ACT_LIST)
                return usage("--prefix is for list, not %s", m->action);
        if (m->act == ACT_CLEAR && !m->yes)
                return usage("clear removes every key of the namespace: add --yes to do it");
        if (m->ns_opt) {
                m->ns = strdup(m->ns_opt);
        } else {
                m->ns = realpath(argv[i], NULL);
                if (!m->ns) {
                        int e = errno;
                        fprintf(stderr, "chidori: memory: agent file '%s': %s (the namespace is the agent's absolute "
                                        "path; use --ns NAMESPACE for one without a file)\n",
                                text_quote(argv[i], strlen(argv[i]), q, sizeof(q)), strerror(e));
                        return EXIT_USAGE;
                }
                i++;
        }
        if (!m->ns)
                return EXIT_USAGE;
        m->key = needs_key ? argv[i] : NULL;
        if (m->key)
                text_quote(m->key, strlen(m->key), m->qk, sizeof(m->qk));
        text_quote(m->ns, strlen(m->ns), m->qn, sizeof(m->qn));
        return 0;
}

/* Options, action and operands: 0, EXIT_OK after --help (*done), or the exit code (printed). */
static int parse_memory(struct memory_cmd *m, int argc, char **argv, bool *done)
{
        static const struct option longopts[] = {
                { "state-dir", required_argument, NULL, MOPT_STATE_DIR },
                { "ns", required_argument, NULL, MOPT_NS },
                { "memory-ns", required_argument, NULL, MOPT_NS },
                { "prefix", required_argument, NULL, MOPT_PREFIX },
                { "yes", no_argument, NULL, MOPT_YES },
                { "help", no_argument, NULL, 'h' },
                { NULL, 0, NULL, 0 },
        };
        optind = 1;
        opterr = 0;
        int c;
        while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
                switch (c) {
                case MOPT_STATE_DIR: m->state_dir = optarg; break;
                case MOPT_NS: m->ns_opt = optarg; break;
                case MOPT_PREFIX: m->prefix = optarg; break;
                case MOPT_YES: m->yes = true; break;
                case 'h': memory_help(); *done = true; return EXIT_OK;
                default: return cli_bad_option("memory", argc, argv, longopts);
                }
        }
        if (optind >= argc)
                return usage("no action given (list, get, delete or clear)");
        int r = parse_action(m, argv[optind++]);
        return r ? r : parse_operands(m, argc, argv, optind);
}

/* The store's folder: --state-dir or the default.  0, or the exit code (printed). */
static int memory_dir(const struct memory_cmd *m, char **ret)
{
        struct err *err = NULL;
        if (m->state_dir) {
                if (state_dir_check(m->state_dir) < 0)
                        return EXIT_USAGE;
                *ret = strdup(m->state_dir);
        } else if (memstore_default_dir(ret, &err) < 0) {
                fprintf(stderr, "chidori: %s\n", err_msg(err));
                err_free(err);
                return EXIT_USAGE;
        }
        return *ret ? 0 : EXIT_USAGE;
}

static int no_key(const struct memory_cmd *m)
{
        fprintf(stderr, "chidori: memory: no key '%s' in namespace '%s'\n", m->qk, m->qn);
        return EXIT_AGENT_ERROR;
}

/* The action on an open store: the exit code (printed). */
static int perform(const struct memory_cmd *m, struct memstore *st)
{
        struct err *err = NULL;
        int code = EXIT_OK;
        switch (m->act) {
        case ACT_LIST: {
                char **keys = NULL;
                if (memstore_list(st, m->ns, m->prefix, &keys, NULL, &err) < 0)
                        break;
                for (char **k = keys; *k; k++)
                        print_key(*k);
                memstore_keys_free(keys);
                break;
        }
        case ACT_GET: {
                _cleanup_free_ char *json = NULL;
                if (memstore_get(st, m->ns, m->key, &json, &err) < 0)
                        break;
                if (!json)
                        code = no_key(m);
                else
                        print_json_text(json);
                break;
        }
        case ACT_DELETE: {
                bool existed = false;
                if (memstore_delete(st, m->ns, m->key, &existed, &err) < 0)
                        break;
                if (!existed)
                        code = no_key(m);
                break;
        }
        case ACT_CLEAR: {
                size_t n = 0;
                if (memstore_clear(st, m->ns, &n, &err) < 0)
                        break;
                fprintf(stderr, "chidori: memory: cleared %zu key%s from '%s'\n", n, n == 1 ? "" : "s", m->qn);
                break;
        }
        }
        if (err) {
                fprintf(stderr, "chidori: memory: %s\n", err_msg(err));
                err_free(err);
                code = EXIT_USAGE;
        }
        return code;
}

int cmd_memory(int argc, char **argv)
{
        struct memory_cmd m = { 0 };
        bool done = false;
        int code = parse_memory(&m, argc, argv, &done);
        _cleanup_free_ char *ns = m.ns, *dir = NULL, *db = NULL;
        (void)ns; /* owns m.ns: freed on every return */
        if (code || done)
                return code;
        if ((code = memory_dir(&m, &dir)) != 0)
                return code;
        if (asprintf(&db, "%s/%s", dir, MEMSTORE_DB_NAME) < 0)
                return EXIT_USAGE;
        if (access(db, F_OK) < 0 && errno == ENOENT) {
                /* Nothing stored yet: do not create a store to say so. */
                if (m.act == ACT_GET || m.act == ACT_DELETE)
                        return no_key(&m);
                if (m.act == ACT_CLEAR)
                        fprintf(stderr, "chidori: memory: cleared 0 keys from '%s'\n", m.qn);
                return EXIT_OK;
        }
        struct memstore *st = NULL;
        struct err *err = NULL;
        if (memstore_open(dir, &st, &err) < 0) {
                fprintf(stderr, "chidori: open the memory store: %s\n", err_msg(err));
                err_free(err);
                return EXIT_USAGE;
        }
        code = perform(&m, st);
        memstore_close(st);
        fflush(stdout);
        return code;
}
