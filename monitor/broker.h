/* monitor/broker.h — the monitor starts the broker (`chidori-broker`):
 * unprivileged, confined, and talking to the monitor only over the channel
 * (chan/chan.h).  docs/architecture.md, "The broker's lockdown", lists the
 * steps and why each is there.
 *
 * Three modes, chosen by monitor_start_broker():
 *   root      the caller is root: pid + mount namespaces; the folders the
 *             broker writes (state dir, workspace) id-mapped so that on-disk
 *             uid/gid 0 is the broker uid (files it creates stay root's on
 *             disk); setgroups([]), setresgid/setresuid(broker uid).
 *   rootless  anyone else: user + pid + mount namespaces, the caller's uid
 *             and gid mapped to themselves (unchanged outside): the broker
 *             cannot signal or ptrace the monitor (other pid namespace) nor
 *             the boxes (other user namespaces).
 *   uid0      root, but a folder the broker must write cannot be id-mapped
 *             (ramfs, tmpfs before Linux 6.3, NFS): user + pid + mount
 *             namespaces with uid 0 mapped to 0 — root on disk, but with no
 *             capability (dropped) and under Landlock and seccomp.  Named in
 *             broker.notes for the banner; refused when `require`.
 * Then, in every mode, the same named steps: private mounts, the folders
 * attached at their own paths, a private tmpfs /tmp, a fresh /proc, a new
 * session, no_new_privs + not dumpable + parent-death signal, every
 * capability dropped (bounding set too), the descriptors, Landlock, the
 * broker's stage-1 seccomp filter, execveat of the binary through a
 * descriptor the monitor opened before any privilege was dropped.
 *
 * Descriptors the broker gets: 0/1/2 (given), the channel at 3, the
 * config blob at 4 (or nothing), then extra_fds at 5, 6, ...
 */
#ifndef CHIDORI_MONITOR_BROKER_H
#define CHIDORI_MONITOR_BROKER_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "common/err.h"

#define BROKER_CHAN_FD 3
#define BROKER_CONFIG_FD 4
#define BROKER_EXTRA_FD 5
#define BROKER_MAX_EXTRA 8

/* The default broker uid when no user `chidori-broker` exists: unallocated
 * on Debian (65534 is nobody, which the boxes' root maps to). */
#define BROKER_DEFAULT_UID 65533

/* Error codes (err_code()). */
enum {
        BROKER_E_USAGE = 1,  /* a malformed --broker-user / CHIDORI_BROKER_USER: exit 2 */
        BROKER_E_LAYER,      /* a layer the caller required is unavailable */
        BROKER_E_SETUP,      /* any other failure to start it */
};

enum broker_mode { BROKER_ROOT = 1, BROKER_ROOTLESS, BROKER_UID0 };

struct broker_spawn {
        const char *binary;        /* NULL: $CHIDORI_BROKER, else chidori-broker next to chidori (dlib_find) */
        char *const *argv;         /* NULL: { "chidori-broker", NULL } */
        char *const *envp;         /* NULL: PATH, LANG=C.UTF-8 only */
        uid_t uid;                 /* the broker uid and gid (root mode; monitor_broker_user()) */
        gid_t gid;
        const char *state_dir;     /* read-write; absolute; may be NULL */
        const char *workspace;     /* read-write; absolute; may be NULL */
        const char *agent_dir;     /* readable by Landlock (files come by OPEN_AGENT_FILE); may be NULL */
        const char *store_dir;     /* serve --store sqlite:PATH: its folder, read-write; may be NULL */
        const char *store_socket_dir; /* serve --store postgres: the server's unix socket folder, a
                                       * read-only copy (connect needs no write); may be NULL */
        int fd0, fd1, fd2;         /* become 0, 1, 2 */
        int config_fd;             /* sealed blob: becomes 4; -1: none */
        const int *extra_fds;      /* become 5, 6, ... */
        size_t n_extra;
        bool require;              /* --require-sandbox: refuse the uid0 fallback and a missing layer */
        /* Tests only (tests/bats/broker.bats, the control of the
         * compromised-broker test): start it with none of the lockdown —
         * no namespace, no uid change, no step but the descriptors.  Never
         * set by chidori itself. */
        bool test_no_lockdown;
};

struct broker {
        pid_t pid;                 /* as the monitor sees it */
        int pidfd;
        int chan;                  /* the monitor's end of the channel (SEQPACKET) */
        enum broker_mode mode;
        uid_t uid;                 /* the broker's uid outside */
        int landlock_abi;          /* 0: Landlock unavailable (noted) */
        char notes[256];           /* for the banner: "broker: uid 0 of its own user namespace (...)" */
};

/* The broker uid is chosen by chidori before the monitor starts: cli/brokeruser.h. */

/* Start the broker.  On success it has exec'd (its lockdown done), and *ret
 * owns pidfd and chan; the broker's first message is HELLO.  -1 with err
 * (BROKER_E_LAYER, BROKER_E_SETUP) naming the lockdown step that failed. */
int monitor_start_broker(const struct broker_spawn *s, struct broker *ret, struct err **err);

/* Close the descriptors (does not kill or reap). */
void monitor_broker_close(struct broker *b);

/* OPEN_AGENT_FILE: open `rel` beneath the folder `dirfd` (openat2 with
 * RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS: no "..", absolute path or
 * symlink leads out of it), O_RDONLY | O_NONBLOCK | O_NOCTTY, a regular
 * file only (EINVAL else).  Returns the fd (close-on-exec), or -1 with err
 * carrying the errno for OPENED. */
int monitor_open_agent_file(int dirfd, const char *rel, struct err **err);

#endif
