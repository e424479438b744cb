/* broker/main.c — chidori-broker, the unprivileged, confined half of a run
 * (docs/architecture.md).  Started only by the monitor
 * (monitor/monitor_start_broker), which has already locked it down and
 * passes the channel on fd 3 and the config blob on fd 4.
 *
 * With a config blob (broker/config.c): the run as a session (runtime/)
 * whose box comes over the channel (broker/provider.c): HELLO, COMMIT,
 * the agent file by OPEN_AGENT_FILE, the session driven to its end, the
 * outcome printed on the stdout/stderr it was given (escaped, cli/report.c),
 * RESULT.  Without one (the posture tests): HELLO, then the channel served
 * until the monitor closes it or says STOP. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "broker/config.h"
#include "broker/lockdown.h"
#include "broker/provider.h"
#include "chan/chan.h"
#include "common/exit.h"
#include "monitor/broker.h"

/* In a sanitizer build (make asan): LeakSanitizer's exit-time scan stops
 * the world with ptrace, which the broker's seccomp filter kills. */
__attribute__((used, visibility("default"))) const char *__asan_default_options(void);
__attribute__((used, visibility("default"))) const char *__asan_default_options(void)
{
        return "detect_leaks=0";
}
__attribute__((used, visibility("default"))) const char *__lsan_default_options(void);
__attribute__((used, visibility("default"))) const char *__lsan_default_options(void)
{
        return "detect_leaks=0";
}

/* No config: the skeleton of part 1 (broker.bats' `--close`). */
static int serve_until_closed(void)
{
        struct err *e = NULL;
        union chan_msg m;
        chan_init(&m, CHAN_HELLO, 1);
        m.hello.version = CHAN_VERSION;
        if (chan_send(BROKER_CHAN_FD, &m, NULL, 0, &e) < 0) {
                fprintf(stderr, "chidori-broker: %s (started by hand? only chidori starts it)\n", err_msg(e));
                return EXIT_PROTOCOL;
        }
        for (;;) {
                int fds[CHAN_MAX_FDS];
                size_t nfds = 0;
                if (chan_recv(BROKER_CHAN_FD, CHAN_FROM_MONITOR, &m, fds, &nfds, &e) < 0) {
                        if (err_code(e) == CHAN_E_CLOSED)
                                return 0;
                        fprintf(stderr, "chidori-broker: %s\n", err_msg(e));
                        return EXIT_PROTOCOL;
                }
                for (size_t i = 0; i < nfds; i++)
                        close(fds[i]);
                if (m.h.type == CHAN_STOP)
                        return 128 + m.stop.signal;
        }
}

int main(void)
{
        struct err *e = NULL;
        if (broker_lockdown(&e) < 0) {
                fprintf(stderr, "chidori-broker: %s\n", err_msg(e));
                return EXIT_PROTOCOL;
        }
        if (fcntl(BROKER_CONFIG_FD, F_GETFD) < 0)
                return serve_until_closed();
        signal(SIGPIPE, SIG_IGN);
        int code = broker_run(BROKER_CHAN_FD, BROKER_CONFIG_FD);
        fflush(stdout);
        fflush(stderr);
        return code;
}
