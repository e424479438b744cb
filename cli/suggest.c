/* cli/suggest.c — see cli/suggest.h. */
#define _GNU_SOURCE
#include "cli/suggest.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "common/cleanup.h"
#include "common/text.h"

size_t cli_distance(const char *a, const char *b)
{
        size_t n = strlen(a), m = strlen(b);
        if (n > 64 || m > 64) /* option names are short; anything longer is far */
                return n > m ? n : m;
        size_t d[65][65];
        for (size_t i = 0; i <= n; i++)
                d[i][0] = i;
        for (size_t j = 0; j <= m; j++)
                d[0][j] = j;
        for (size_t i = 1; i <= n; i++) {
                for (size_t j = 1; j <= m; j++) {
                        size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
                        size_t v = d[i - 1][j] + 1;
                        if (d[i][j - 1] + 1 < v)
                                v = d[i][j - 1] + 1;
                        if (d[i - 1][j - 1] + cost < v)
                                v = d[i - 1][j - 1] + cost;
                        if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] && d[i - 2][j - 2] + 1 < v)
                                v = d[i - 2][j - 2] + 1;
                        d[i][j] = v;
                }
        }
        return d[n][m];
}

const char *cli_nearest(const char *word, const char *const *cands, size_t n)
{
        size_t len = strlen(word);
        size_t limit = len <= 3 ? 1 : len <= 6 ? 2 : 3;
        const char *best = NULL;
        size_t best_d = limit + 1;
        for (size_t i = 0; i < n; i++) {
                size_t d = cli_distance(word, cands[i]);
                if (d < best_d) {
                        best = cands[i];
                        best_d = d;
                }
        }
        return best;
}

static void try_help(const char *cmd)
{
        fprintf(stderr, "Try 'chidori %s --help'.\n", cmd);
}

int cli_bad_option(const char *cmd, int argc, char **argv, const struct option *longopts)
{
        char q[256];
        const char *arg = optind >= 1 && optind <= argc ? argv[optind - 1] : NULL;
        if (!arg || strncmp(arg, "--", 2) != 0 || arg[2] == '\0') {
                /* A short option: unknown, or its value is missing. */
                const struct option *o = NULL;
                for (const struct option *l = longopts; l->name; l++)
                        if (optopt && l->val == optopt && l->has_arg == required_argument)
                                o = l;
                if (o)
                        fprintf(stderr, "chidori: option '-%c' needs a value\n", optopt);
                else if (optopt > 0x20 && optopt < 0x7f)
                        fprintf(stderr, "chidori: unknown option '-%c'\n", optopt);
                else
                        fprintf(stderr, "chidori: unknown option '%s'\n",
                                arg ? text_quote(arg, strlen(arg), q, sizeof(q)) : "?");
                try_help(cmd);
                return EXIT_USAGE;
        }
        const char *name = arg + 2;
        const char *eq = strchr(name, '=');
        size_t len = eq ? (size_t)(eq - name) : strlen(name);
        _cleanup_free_ char *word = strndup(name, len);
        if (!word)
                return EXIT_USAGE;
        text_quote(word, len, q, sizeof(q));
        const struct option *exact = NULL;
        size_t nprefix = 0, nopts = 0;
        for (const struct option *l = longopts; l->name; l++, nopts++) {
                if (strcmp(l->name, word) == 0)
                        exact = l;
                else if (strncmp(l->name, word, len) == 0)
                        nprefix++;
        }
        if (exact && exact->has_arg == no_argument && eq) {
                char v[256];
                fprintf(stderr, "chidori: option '--%s' takes no value (got '%s')\n", exact->name,
                        text_quote(arg, strlen(arg), v, sizeof(v)));
        } else if (exact) {
                fprintf(stderr, "chidori: option '--%s' needs a value (--%s VALUE or --%s=VALUE)\n", exact->name,
                        exact->name, exact->name);
        } else if (nprefix > 1) {
                char list[512] = "";
                size_t k = 0;
                for (const struct option *l = longopts; l->name; l++)
                        if (strncmp(l->name, word, len) == 0 && k < sizeof(list))
                                k += (size_t)snprintf(list + k, sizeof(list) - k, "%s--%s", k ? ", " : "", l->name);
                fprintf(stderr, "chidori: option '--%s' is ambiguous: it abbreviates %s\n", q, list);
        } else {
                const char **names = calloc(nopts + 1, sizeof(*names));
                size_t n = 0;
                for (const struct option *l = longopts; names && l->name; l++) {
                        bool dup = false;
                        for (size_t i = 0; i < n; i++)
                                dup |= strcmp(names[i], l->name) == 0;
                        if (!dup)
                                names[n++] = l->name;
                }
                const char *near = names ? cli_nearest(word, names, n) : NULL;
                if (near)
                        fprintf(stderr, "chidori: unknown option '--%s'; did you mean '--%s'?\n", q, near);
                else
                        fprintf(stderr, "chidori: unknown option '--%s'\n", q);
                free(names);
        }
        try_help(cmd);
        return EXIT_USAGE;
}

/* ---- --json for usage errors ---- */

#define CAPTURE_MAX 16384

static struct {
        bool on;
        FILE *real;      /* the process's stderr, restored by cli_json_stop */
        char buf[CAPTURE_MAX];
        size_t len;
} cap;

/* stderr while capturing: every write goes to fd 2 as before, and the tail
 * of the text is kept for the message. */
static ssize_t capture_write(void *c, const char *data, size_t n)
{
        (void)c;
        size_t off = 0;
        while (off < n) {
                ssize_t w = write(STDERR_FILENO, data + off, n - off);
                if (w < 0 && errno == EINTR)
                        continue;
                if (w <= 0)
                        break;
                off += (size_t)w;
        }
        if (n >= CAPTURE_MAX) {
                memcpy(cap.buf, data + n - (CAPTURE_MAX - 1), CAPTURE_MAX - 1);
                cap.len = CAPTURE_MAX - 1;
        } else {
                if (cap.len + n >= CAPTURE_MAX) {
                        size_t drop = cap.len + n - (CAPTURE_MAX - 1);
                        memmove(cap.buf, cap.buf + drop, cap.len - drop);
                        cap.len -= drop;
                }
                memcpy(cap.buf + cap.len, data, n);
                cap.len += n;
        }
        cap.buf[cap.len] = '\0';
        return (ssize_t)n;
}

void cli_json_begin(int argc, char **argv)
{
        bool want = false;
        for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++)
                want |= strcmp(argv[i], "--json") == 0;
        if (!want || cap.on)
                return;
        cookie_io_functions_t io = { .write = capture_write };
        FILE *f = fopencookie(NULL, "w", io);
        if (!f)
                return; /* the plain stderr message still says it */
        setvbuf(f, NULL, _IONBF, 0);
        fflush(stderr);
        cap.real = stderr;
        stderr = f;
        cap.on = true;
}

void cli_json_stop(void)
{
        if (!cap.on)
                return;
        FILE *f = stderr;
        stderr = cap.real;
        fclose(f);
        cap.on = false;
}

static bool starts(const char *s, const char *prefix)
{
        return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* The last "chidori: " line that is not a warning or note, and the lines
 * that continue it (not "Try 'chidori ..."), without the prefix. */
static char *last_message(void)
{
        const char *best = NULL;
        for (const char *p = cap.buf; p && *p;) {
                if (starts(p, "chidori: ") && !starts(p, "chidori: warning: ") && !starts(p, "chidori: WARNING") &&
                    !starts(p, "chidori: note: "))
                        best = p;
                p = strchr(p, '\n');
                if (p)
                        p++;
        }
        if (!best)
                return strdup("usage error (see stderr)");
        best += strlen("chidori: ");
        size_t n = 0;
        for (const char *p = best; *p;) {
                const char *nl = strchr(p, '\n');
                const char *next = nl ? nl + 1 : p + strlen(p);
                if (p != best && (starts(p, "chidori: ") || starts(p, "Try 'chidori")))
                        break;
                n = (size_t)((nl ? nl : next) - best);
                p = next;
        }
        return strndup(best, n);
}

char *cli_json_usage_line(void)
{
        if (!cap.on)
                return NULL;
        _cleanup_free_ char *msg = last_message();
        cJSON *j = cJSON_CreateObject();
        cJSON_AddBoolToObject(j, "ok", false);
        cJSON *e = cJSON_AddObjectToObject(j, "error");
        cJSON_AddStringToObject(e, "name", "UsageError");
        cJSON_AddStringToObject(e, "message", msg ? msg : "usage error");
        cJSON_AddNumberToObject(j, "exit", EXIT_USAGE);
        char *s = cJSON_PrintUnformatted(j);
        cJSON_Delete(j);
        return s;
}

int cli_json_end(int code)
{
        if (!cap.on)
                return code;
        char *s = code == EXIT_USAGE ? cli_json_usage_line() : NULL;
        cli_json_stop();
        if (s)
                printf("%s\n", s);
        fflush(stdout);
        free(s);
        return code;
}
