/* common/stop.c — the stop and SIGPIPE handlers (stop.h). */
#include "common/stop.h"

#include <string.h>

volatile sig_atomic_t launcher_stop_signal;
volatile sig_atomic_t launcher_stop_count;

static void on_stop(int sig)
{
        launcher_stop_signal = sig;
        launcher_stop_count++;
}

static void on_sigpipe(int sig)
{
        (void)sig;
}

void stop_handlers_install(void)
{
        struct sigaction sa;
        memset(&sa, 0, sizeof(sa));
        sa.sa_handler = on_stop;
        sigemptyset(&sa.sa_mask);
        static const int sigs[] = { SIGINT, SIGTERM, SIGHUP };
        for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
                sigaction(sigs[i], &sa, NULL);
        sa.sa_handler = on_sigpipe;
        sa.sa_flags = SA_RESTART;
        sigaction(SIGPIPE, &sa, NULL);
}
