/* cli/sink.c — the CLI's events sink (runtime/session.h, struct
 * session_sink): the agent's logs and the operator's notes on stderr,
 * escaped (common/text.h); approvals and chidori.input asked on the
 * terminal (/dev/tty) when stdin is one; the agent's value printed as soon
 * as the outcome is known, before the box's teardown.
 */
#define _GNU_SOURCE
#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "cli/cli.h"
#include "common/budget.h"
#include "common/cleanup.h"
#include "common/text.h"
#include "common/util.h"
#include "proto/json.h"

#define INPUT_LINE_MAX (1 << 20)

/* One line from the terminal, waiting in poll() so that the run's deadline
 * and a stop signal still end it (a read(2) blocked on a terminal would
 * not return).  A canonical-mode terminal makes a line readable at once. */
static int read_tty_line(int fd, const struct budget *budget, char **ret, struct err **err)
{
        size_t len = 0, cap = 256;
        _cleanup_free_ char *line = malloc(cap);
        if (!line)
                return err_set(err, ENOMEM, "input");
        for (;;) {
                if (budget_check(budget, "input", err) < 0)
                        return -1;
                struct pollfd p = { .fd = fd, .events = POLLIN };
                int n = poll(&p, 1, 100);
                if (n < 0 && errno != EINTR)
                        return err_set(err, errno, "input: wait for the terminal");
                if (n <= 0)
                        continue;
                if (len + 1 >= cap) {
                        if (cap >= INPUT_LINE_MAX)
                                return err_set(err, 0, "input: the answer is longer than %d bytes", INPUT_LINE_MAX);
                        char *nl = realloc(line, cap * 2);
                        if (!nl)
                                return err_set(err, ENOMEM, "input");
                        line = nl;
                        cap *= 2;
                }
                ssize_t r = read(fd, line + len, cap - 1 - len);
                if (r < 0 && (errno == EINTR || errno == EAGAIN))
                        continue;
                if (r < 0)
                        return err_set(err, errno, "input: read the terminal");
                if (r == 0) {
                        if (len == 0)
                                return 1;  /* end of input */
                        break;
                }
                char *nl = memchr(line + len, '\n', (size_t)r);
                len += (size_t)r;
                if (nl) {
                        len = (size_t)(nl - line);  /* what follows the line is dropped */
                        break;
                }
        }
        line[len] = '\0';
        *ret = take_ptr(&line);
        return 0;
}

/* The terminal: the one handed over (a copy, closed by the caller), or
 * /dev/tty. */
static int open_tty(const struct cli_sink *o)
{
        if (o->tty_fd >= 0)
                return fcntl(o->tty_fd, F_DUPFD_CLOEXEC, 0);
        return open("/dev/tty", O_RDWR | O_CLOEXEC | O_NOCTTY);
}

static int answer_from_tty(const struct cli_sink *o, const char *prompt, const struct budget *budget, cJSON **ret,
                           struct err **err)
{
        int tfd = open_tty(o);
        _cleanup_fclose_ FILE *tty = tfd >= 0 ? fdopen(tfd, "r+") : NULL;
        if (tfd >= 0 && !tty)
                close(tfd);
        if (!tty)
                return err_set(err, errno, "input: cannot open the terminal");
        /* The prompt is the agent's text: escaped, each line tagged, so it
         * cannot pass for a prompt of the system's (a fake password ask). */
        text_fput_lines(tty, "[agent] ", prompt, strlen(prompt), false);
        fputc(' ', tty);
        fflush(tty);
        _cleanup_free_ char *line = NULL;
        int r = read_tty_line(fileno(tty), budget, &line, err);
        if (r < 0)
                return -1;
        if (r > 0)
                return err_set(err, 0, "input: end of input on the terminal while asking \"%s\"", prompt);
        size_t n = strlen(line);
        while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
                line[--n] = '\0';
        *ret = json_cjson_string(line, n, 0); /* what was typed, as a string (invalid UTF-8: U+FFFD) */
        return *ret ? 0 : err_set(err, ENOMEM, "input");
}

enum tty_answer { TTY_NO, TTY_YES, TTY_ENDED };

/* Ask on the terminal: "chidori: allow <target> <args>? [y/N] ".  Both come
 * from the agent: printable ASCII only, the rest as \xNN, the arguments cut
 * to a summary.  YES only for y or yes.  ENDED: the run's deadline passed
 * or a stop signal came while asking — nobody answered, and the run is
 * ending for that reason (answering "no" would let the agent go on and
 * finish first). */
static enum tty_answer ask_terminal(const struct cli_sink *o, const char *target, const char *args)
{
        _cleanup_close_ int fd = open_tty(o);
        if (fd < 0)
                return TTY_NO;
        char t[256], a[320];
        text_sanitize(target, 200, 0, t, sizeof(t));
        /* The args as the agent wrote them (its numbers, not a reprint). */
        text_sanitize(args ? args : "{}", 240, 0, a, sizeof(a));
        char q[640];
        int n = snprintf(q, sizeof(q), "chidori: allow %s %s? [y/N] ", t, a);
        if (n < 0 || write(fd, q, (size_t)n < sizeof(q) ? (size_t)n : sizeof(q) - 1) < 0)
                return TTY_NO;
        char line[16];
        size_t len = 0;
        bool eol = false, ended = false;
        for (;;) {
                int timeout = -1;
                if (o->deadline_at > 0) {
                        double left = o->deadline_at - mono_ms();
                        if (left <= 0) {
                                ended = true;
                                break;
                        }
                        timeout = (int)left + 1;
                }
                if (o->stop && *o->stop) {
                        ended = true;
                        break;
                }
                struct pollfd p = { .fd = fd, .events = POLLIN };
                int r = poll(&p, 1, timeout);
                if (r < 0 && errno == EINTR)
                        continue; /* a stop signal is seen at the top */
                if (r == 0)
                        continue; /* the deadline: seen at the top */
                if (r < 0)
                        break;
                char c;
                ssize_t got = read(fd, &c, 1);
                if (got < 0 && errno == EINTR)
                        continue;
                if (got <= 0)
                        break;
                if (c == '\n' || c == '\r') {
                        eol = true;
                        break;
                }
                if (len < sizeof(line) - 1)
                        line[len++] = c;
        }
        line[len] = '\0';
        if (!eol && write(fd, "\n", 1) < 0) /* end the prompt's line */
                return ended ? TTY_ENDED : TTY_NO;
        if (ended)
                return TTY_ENDED;
        return eol && (strcasecmp(line, "y") == 0 || strcasecmp(line, "yes") == 0) ? TTY_YES : TTY_NO;
}

static void on_log(void *arg, struct session *s, const char *tag, const char *msg, size_t len)
{
        (void)arg, (void)s;
        text_fput_lines(stderr, tag, msg, len, true);
        fflush(stderr);
}

static void on_note(void *arg, struct session *s, const char *tag, const char *msg, size_t len)
{
        (void)arg, (void)s;
        text_fput_line(stderr, tag, msg, len);
        fflush(stderr);
}

static void on_approval(void *arg, struct session *s, const struct session_approval *a)
{
        struct cli_sink *o = arg;
        enum tty_answer t = ask_terminal(o, a->target, a->args);
        if (t == TTY_ENDED)
                return; /* the run is ending (deadline, signal): the loop says why */
        struct err *err = NULL;
        if (session_approve(s, a->id, t == TTY_YES, "at the terminal", &err) < 0) {
                fprintf(stderr, "chidori: %s\n", err_msg(err));
                err_free(err);
        }
}

static void on_input(void *arg, struct session *s, uint64_t id, const char *prompt)
{
        (void)id;
        struct cli_sink *o = arg;
        struct budget budget = { .deadline_at = o->deadline_at, .stop = o->stop };
        cJSON *v = NULL;
        struct err *err = NULL;
        int r;
        if (answer_from_tty(o, prompt, &budget, &v, &err) < 0) {
                if (budget_over(&budget) != BUDGET_OK) {
                        err_free(err); /* the run is ending: the loop says why */
                        return;
                }
                r = session_input_fail(s, err_msg(err), NULL);
        } else {
                char *text = cJSON_PrintUnformatted(v);
                r = text ? session_input(s, text, strlen(text), NULL) : session_input_fail(s, "input: out of memory", NULL);
                free(text);
        }
        (void)r;
        err_free(err);
        cJSON_Delete(v);
}

/* The outcome is known: the value goes out before the teardown (reaping,
 * the cgroup's counters and removal), which the user need not wait for. */
static void on_status(void *arg, struct session *s, enum session_state st)
{
        struct cli_sink *o = arg;
        struct session_outcome *out = session_outcome(s);
        if (st == SESSION_RUNNING && o->running && !o->started) {
                o->started = true;
                o->running(o->running_arg);
        }
        if (st != SESSION_FINISHING || o->json || out->end != SESSION_END_DONE_OK)
                return;
        report_value(out->value); /* the worker's own text */
        fflush(stdout);
        o->printed_value = true;
}

void cli_sink_init(struct cli_sink *o, bool json, double deadline_at, volatile sig_atomic_t *stop)
{
        *o = (struct cli_sink){ .json = json, .deadline_at = deadline_at, .stop = stop, .tty_fd = -1 };
        o->sink = (struct session_sink){
                .log = on_log, .note = on_note, .approval = on_approval, .input_request = on_input,
                .status = on_status, .arg = o,
        };
}
