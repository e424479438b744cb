/* cli/handover.h — a run handed to chidori-broker (cli/handover.c): the
 * config blob's strings and the descriptors, then chidori-monitor exec'd
 * (monitor/main.c), which starts the broker and serves it until its RESULT.
 * Keys: broker/config.h (the broker's), monitor/main.c (the monitor's). */
#ifndef CHIDORI_CLI_HANDOVER_H
#define CHIDORI_CLI_HANDOVER_H

#include <stdbool.h>

#include "monitor/serve.h"
#include <stddef.h>
#include <sys/types.h>

#include "monitor/broker.h"

struct sandbox_opts;

#define HANDOVER_MAX_STRINGS 512

struct handover {
        char *strs[HANDOVER_MAX_STRINGS];   /* "key=value" */
        size_t n;
        int fds[BROKER_MAX_EXTRA];          /* the broker's 5, 6, ... */
        size_t nfds;
        bool failed;                        /* out of memory or too many: handover_run refuses */
};

void handover_init(struct handover *h);
/* One "key=value" (printf format). */
void handover_add(struct handover *h, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* `fd` (taken) becomes the broker's next descriptor: "key=N". */
int handover_fd(struct handover *h, const char *key, int fd);
/* The operator's file `path`, opened here for reading: "NAME_file=PATH" and
 * "NAME_fd=N", or "NAME_errno=E" when it cannot be opened (the broker
 * reports it as the one-process run did). */
void handover_file(struct handover *h, const char *name, const char *path);
void handover_free(struct handover *h);
/* libchidori-net.so as a sealed memfd copy: "net_lib_fd=N" (fetch, prompt). */
void handover_net_lib(struct handover *h);

/* Root's run keeps root only in chidori-privhelper (decision 163)?  1: yes;
 * 0: the monitor keeps root (*why says why unless CHIDORI_PRIVSEP=0
 * declined it, or the caller is not root); -1: CHIDORI_PRIVSEP=1 and not
 * possible (*why).  What `chidori doctor` reports as the monitor's row. */
int handover_privsep(uid_t broker_uid, char *why, size_t len);
/* chidori-privhelper: $CHIDORI_PRIVHELPER, else next to chidori or in its
 * libexec directory; NULL with *err saying where it looked. */
char *handover_find_privhelper(struct err **err);

struct handover_run {
        const struct sandbox_opts *sb;     /* the operator's box options */
        const char *run_id;                /* the cgroup leaf's suffix (hex) */
        const char *agent_dir;             /* absolute: OPEN_AGENT_FILE beneath it; NULL: agent_from_broker */
        bool agent_from_broker;            /* chidori replay without --agent (monitor/serve.h) */
        bool quiet;                        /* --quiet: no note of a weakened broker posture */
        struct monitor_prestart prestart;  /* the worker to start while the broker starts */
        const char *remove_after;          /* a file (an agent read from stdin) the monitor removes, and its folder */
        const char *state_dir, *workspace; /* absolute or NULL: attached read-write */
        const char *broker_user;           /* --broker-user, or NULL */
        /* chidori serve: a run tree per session, every stop signal
         * forwarded, the broker killed stop_grace_ms after the first; the
         * unix socket removed at the end. */
        bool serve;
        long stop_grace_ms;
        long max_trees;                    /* run trees at once: sessions and replays (2 x --max-running) */
        long pool, pool_refill_ms;         /* --pool N (workers of prestart's posture; prestart.on false) */
        const char *unlink_socket;
        /* serve --store: sqlite:PATH's folder (read-write) and a PostgreSQL
         * unix socket's folder (a read-only copy), absolute or NULL. */
        const char *store_dir, *store_socket_dir;
};

/* Exec chidori-monitor with the strings (sealed), the descriptors and the
 * monitor's settings: returns only when that cannot be done, with the exit
 * code (the message printed).  The monitor exits with the run's code. */
int handover_run(struct handover *h, const struct handover_run *r);

/* --secrets FILE read as the operator (its values from the operator's
 * environment and files) into the config: secret=NAME VALUE, then each
 * secret_host=NAME HOST.  -1 after printing why (a usage error). */
int handover_secrets(struct handover *h, const char *file);

/* What `run` and `serve` hand every session alike from the grants' options
 * (cli/grants.h): allowed hosts, http caps, auto-approve, the tools file,
 * the secrets (handover_secrets), max_tools, the model's CHIDORI_LLM_*.
 * -1 after printing why. */
struct grants_opts;
int handover_grants_common(struct handover *h, const struct grants_opts *g);

#endif
