/* broker/main.c — chidori-broker, the unprivileged, confined half of a run
 * (docs/architecture.md).  Started only by the monitor
 * (monitor/monitor_start_broker), which has already locked it down and
 * passes the channel on fd 3 and the config blob on fd 4.
 *
 * Part 1 of issue 10 (this skeleton): the stage-2 lockdown, HELLO, then the
 * channel served until the monitor closes it or says STOP.  The session
 * engine (runtime/) is connected here in part 2. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "broker/lockdown.h"
#include "chan/chan.h"
#include "common/exit.h"

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

#define CHAN_FD 3

int main(void)
{
        struct err *e = NULL;
        if (broker_lockdown(&e) < 0) {
                fprintf(stderr, "chidori-broker: %s\n", err_msg(e));
                return EXIT_PROTOCOL;
        }
        union chan_msg m;
        chan_init(&m, CHAN_HELLO, 1);
        m.hello.version = CHAN_VERSION;
        if (chan_send(CHAN_FD, &m, NULL, 0, &e) < 0) {
                fprintf(stderr, "chidori-broker: %s (started by hand? only chidori starts it)\n", err_msg(e));
                return EXIT_PROTOCOL;
        }
        for (;;) {
                int fds[CHAN_MAX_FDS];
                size_t nfds = 0;
                if (chan_recv(CHAN_FD, CHAN_FROM_MONITOR, &m, fds, &nfds, &e) < 0) {
                        if (err_code(e) == CHAN_E_CLOSED)
                                return 0;
                        fprintf(stderr, "chidori-broker: %s\n", err_msg(e));
                        return EXIT_PROTOCOL;
                }
                for (size_t i = 0; i < nfds; i++)
                        close(fds[i]); /* nothing uses them yet */
                if (m.h.type == CHAN_STOP)
                        return 128 + m.stop.signal;
        }
}
