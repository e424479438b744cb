/* common/stop.h — how chidori and chidori-monitor meet SIGINT, SIGTERM,
 * SIGHUP and SIGPIPE (one copy for both binaries). */
#ifndef CHIDORI_COMMON_STOP_H
#define CHIDORI_COMMON_STOP_H

#include <signal.h>

/* The stop signal that arrived (SIGINT, SIGTERM, SIGHUP), or 0. */
extern volatile sig_atomic_t launcher_stop_signal;
/* How many have arrived (chidori serve: the second one stops at once). */
extern volatile sig_atomic_t launcher_stop_count;

/* A stop signal is noted in launcher_stop_signal (no SA_RESTART: the wait
 * in progress returns EINTR) so the normal teardown runs and the process
 * exits 128+sig; SIGPIPE is caught, never fatal (an exec'd child starts
 * with the default action again).  docs/decisions.md, "SIGPIPE: caught,
 * never fatal". */
void stop_handlers_install(void);

#endif
