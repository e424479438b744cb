/* chan/chan.h — the channel between the monitor (`chidori`, privileged) and
 * the broker (`chidori-broker`, unprivileged and confined): fixed,
 * size-checked messages over a SOCK_SEQPACKET socketpair, descriptors by
 * SCM_RIGHTS, variable data in a sealed memfd ("blob").  No JSON, no
 * allocation in the decoder: the monitor reads what a compromised broker
 * may send with chan_decode() and nothing else (tests/fuzz/fuzz_chan.c).
 *
 * Every message starts with struct chan_hdr; hdr.len must equal the size of
 * the type's struct exactly and the number of descriptors must be the one
 * the type carries (chan_fds_for()).  A message that breaks either rule,
 * an unknown type, a type sent in the wrong direction, a truncated message
 * or truncated control data (MSG_TRUNC, MSG_CTRUNC) is a protocol error:
 * the receiver treats the peer as broken (the monitor kills the run, exit 70).
 *
 * broker -> monitor: HELLO, COMMIT (once, first after HELLO: the spawn
 * allowlist), SPAWN, OPEN_AGENT_FILE, OPEN_AGENT (replay), KILL, RESULT.
 * monitor -> broker: WELCOME (answer to HELLO), SPAWNED, SPAWN_FAILED,
 * OPENED, BOX_ENDED, STOP.  docs/architecture.md lists them with their
 * fields and descriptors.
 */
#ifndef CHIDORI_CHAN_CHAN_H
#define CHIDORI_CHAN_CHAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"

#define CHAN_VERSION 1
#define CHAN_MAX_FDS 4            /* most descriptors one message carries */
#define CHAN_PATH_MAX 1024        /* OPEN_AGENT_FILE's relative path, NUL included */
#define CHAN_TEXT_MAX 512         /* SPAWN_FAILED's message, NUL included */
#define CHAN_BANNER_MAX 1024      /* SPAWNED's banner, NUL included */
#define CHAN_TZ_MAX 64            /* SPAWN's time zone name, NUL included */
#define CHAN_BLOB_MAX (1u << 20)  /* a blob's bytes, header included */
#define CHAN_BLOB_STRINGS 4096    /* strings in one blob */
#define CHAN_STRING_MAX 4096      /* one string, NUL excluded */

/* Error codes (err_code()) of the receive and decode functions. */
enum {
        CHAN_E_PROTO = 1,  /* the peer broke the protocol: treat it as broken */
        CHAN_E_CLOSED,     /* orderly end of the channel (recv: EOF) */
        CHAN_E_IO,         /* the socket failed (errno set) */
        CHAN_E_STOPPED,    /* the broker waited for an answer and got STOP (provider.c: the signal in errnum) */
};

enum chan_type {
        /* broker -> monitor */
        CHAN_HELLO = 1,
        CHAN_COMMIT,
        CHAN_SPAWN,
        CHAN_OPEN_AGENT_FILE,
        CHAN_KILL,
        CHAN_RESULT,
        CHAN_OPEN_AGENT,
        /* monitor -> broker */
        CHAN_WELCOME = 64,
        CHAN_SPAWNED,
        CHAN_SPAWN_FAILED,
        CHAN_OPENED,
        CHAN_BOX_ENDED,
        CHAN_STOP,
};

/* Who sends a type; the receiver refuses the other direction. */
enum chan_dir { CHAN_FROM_BROKER, CHAN_FROM_MONITOR };

struct chan_hdr {
        uint32_t type;
        uint32_t len;  /* sizeof the whole message, header included */
        uint64_t id;   /* request id, echoed in the answer (0: none) */
};

/* HELLO: the broker is up, its stage-2 filter installed. */
struct chan_hello {
        struct chan_hdr h;
        uint32_t version;  /* CHAN_VERSION */
        uint32_t flags;    /* 0 */
};

/* WELCOME: the monitor's answer to HELLO. */
struct chan_welcome {
        struct chan_hdr h;
        uint32_t version;
        uint32_t flags;    /* CHAN_WELCOME_* */
};
#define CHAN_WELCOME_ROOTLESS 1u   /* the broker runs in its own user namespace */
#define CHAN_WELCOME_UID0 2u       /* fallback: uid 0 of its own user namespace (docs/architecture.md) */

/* COMMIT: the spawn allowlist, sent once, before the broker reads anything
 * hostile.  1 fd: a blob of 1 + n_commands + n_ro_binds + n_env_names
 * strings, in that order: the agent folder (absolute), the tools' commands
 * (absolute paths), their read-only binds (absolute), the environment
 * variable names tools may get. */
struct chan_commit {
        struct chan_hdr h;
        uint32_t flags;         /* CHAN_COMMIT_* */
        uint32_t n_commands;
        uint32_t n_ro_binds;
        uint32_t n_env_names;
};
#define CHAN_COMMIT_UNSANDBOXED_TOOLS 1u  /* tools may run outside a box (never as root) */

enum chan_box_kind { CHAN_BOX_WORKER = 1, CHAN_BOX_TOOL, CHAN_BOX_BUNDLE };

/* SPAWN: start a box.  1 fd: a blob of 1 + n_argv + n_env + n_binds strings:
 * the program (absolute), argv, env, then binds as "ro:/path" or "rw:/path".
 * A tool's env entries are variable NAMES from the COMMIT: the monitor gives
 * each the value it has in its own environment (the operator's, as the run
 * started), so the values never pass through the broker.  A tool's
 * deadline_ms is its timeout (required).  Limits are ceilings the monitor
 * clamps to the operator's (0 = the operator's). */
struct chan_spawn {
        struct chan_hdr h;
        uint32_t kind;          /* enum chan_box_kind */
        uint32_t jit;           /* 0 or 1 */
        uint64_t run_tree_id;   /* the run's tree: 0 starts it (no box of it runs), else its first
                                 * box, which must be running: the new box's cgroup node goes below it */
        uint64_t memory_bytes;
        uint64_t cpu_budget_ms;
        uint32_t deadline_ms;
        uint32_t pids;
        uint32_t nofile;
        uint32_t n_argv;
        uint32_t n_env;
        uint32_t n_binds;
        uint32_t flags;         /* CHAN_SPAWN_* */
        char tz[CHAN_TZ_MAX];   /* NUL-terminated, "" = UTC */
};
#define CHAN_SPAWN_HOST 1u      /* kind tool only: "sandbox": false (COMMIT must allow it) */

/* SPAWNED: the box runs.  fds: worker 2 (frame socket, stderr read end),
 * tool 3 (stdin write end, stdout and stderr read ends), bundle 4 (the
 * same 3, then the read end of esbuild's fd 3: its metafile). */
struct chan_spawned {
        struct chan_hdr h;
        uint64_t box;                  /* the monitor's handle of the box */
        uint32_t kind;                 /* as asked */
        uint32_t flags;                /* CHAN_SPAWNED_POOLED (a worker only) */
        char banner[CHAN_BANNER_MAX];  /* the Isolation: text, NUL-terminated */
};
/* The worker came from chidori serve's warm pool (monitor/serve.c). */
#define CHAN_SPAWNED_POOLED 1u

struct chan_spawn_failed {
        struct chan_hdr h;
        int32_t errnum;
        int32_t code;                  /* BOX_E_* or CHAN_SPAWN_E_* */
        char message[CHAN_TEXT_MAX];   /* NUL-terminated */
};
enum {
        CHAN_SPAWN_E_REFUSED = 100,     /* outside the COMMIT, or before it */
        CHAN_SPAWN_E_NO_BUNDLER,        /* a bundle SPAWN: the monitor found no esbuild */
};

/* OPEN_AGENT_FILE: the monitor opens the path beneath the agent folder
 * (openat2 RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS, O_RDONLY, regular files
 * only) and answers OPENED. */
struct chan_open_agent_file {
        struct chan_hdr h;
        char path[CHAN_PATH_MAX];      /* relative, NUL-terminated, not empty */
};

/* OPEN_AGENT: `chidori replay` without --agent only (the monitor refuses it
 * otherwise, and a second time): the agent the journal's header names, an
 * absolute path without "..".  The monitor opens it (a regular file) and
 * makes its folder the agent folder; answer OPENED. */
struct chan_open_agent {
        struct chan_hdr h;
        char path[CHAN_PATH_MAX];      /* absolute, NUL-terminated */
};

/* OPENED: 1 fd when errnum == 0, else none. */
struct chan_opened {
        struct chan_hdr h;
        int32_t errnum;
        uint32_t pad;
};

struct chan_kill {
        struct chan_hdr h;
        uint64_t box;
};

/* RESULT: the run's exit status; the monitor exits with it after cleanup. */
struct chan_result {
        struct chan_hdr h;
        int32_t exit_code;             /* 0..255 */
        uint32_t pad;
};

enum chan_end_reason {
        CHAN_END_EXITED = 1,
        CHAN_END_DEADLINE,
        CHAN_END_SECCOMP,
        CHAN_END_OOM,
        CHAN_END_KILLED,
};

struct chan_box_ended {
        struct chan_hdr h;
        uint64_t box;
        int32_t wait_status;
        uint32_t reason;               /* enum chan_end_reason */
        int32_t seccomp_nr;            /* reason SECCOMP: the call, else -1 */
        uint32_t pids_hit;             /* the pids ceiling was reached */
        uint64_t cpu_ms;
        uint64_t peak_bytes;
        uint64_t memory_limit;
};

/* STOP: the user interrupted (SIGINT/SIGTERM/SIGHUP): end the run. */
struct chan_stop {
        struct chan_hdr h;
        int32_t signal;
        uint32_t pad;
};

/* Any message; the receive buffer. */
union chan_msg {
        struct chan_hdr h;
        struct chan_hello hello;
        struct chan_welcome welcome;
        struct chan_commit commit;
        struct chan_spawn spawn;
        struct chan_spawned spawned;
        struct chan_spawn_failed spawn_failed;
        struct chan_open_agent_file open_agent_file;
        struct chan_open_agent open_agent;
        struct chan_opened opened;
        struct chan_kill kill;
        struct chan_result result;
        struct chan_box_ended box_ended;
        struct chan_stop stop;
};

/* "SPAWN", or "type 99" (static buffer for unknown types). */
const char *chan_type_name(uint32_t type);

/* Size of the type's struct, 0 for an unknown type. */
size_t chan_size_of(uint32_t type);

/* A message of `type`, header filled (len, id), the rest zeroed. */
void chan_init(union chan_msg *m, uint32_t type, uint64_t id);

/* Check one received message: `buf`/`n` as received, `nfds` descriptors
 * with it, expected direction `from`.  Checks the type, the direction, the
 * exact length, the descriptor count, and each field's range (kinds,
 * reasons, NUL-terminated strings, relative path, counts within the blob
 * limits).  On success copies it into *out.  -1 with err code
 * CHAN_E_PROTO naming what was wrong.  Pure: no I/O, no allocation but err. */
int chan_decode(const void *buf, size_t n, size_t nfds, enum chan_dir from, union chan_msg *out, struct err **err);

/* Descriptors a decoded message carries (the count chan_decode checks). */
size_t chan_fds_for(const union chan_msg *m);

/* Send one message (len taken from the header) with nfds descriptors.
 * Checks it with chan_decode() first, so a sender cannot build a message its
 * peer would refuse.  MSG_NOSIGNAL; EINTR retried. */
int chan_send(int sock, const union chan_msg *m, const int *fds, size_t nfds, struct err **err);

/* Receive one message from a peer sending in direction `from`: *m decoded,
 * fds[0..*nfds) owned by the caller (close-on-exec).  On any error every
 * received descriptor is closed.  Error codes CHAN_E_PROTO, CHAN_E_CLOSED,
 * CHAN_E_IO. */
int chan_recv(int sock, enum chan_dir from, union chan_msg *m, int fds[CHAN_MAX_FDS], size_t *nfds,
              struct err **err);

/* ---- blobs: a bounded list of strings in a sealed memfd ---- */

#define CHAN_BLOB_MAGIC 0x43424c31u  /* "CBL1" */

struct chan_blob_hdr {
        uint32_t magic;
        uint32_t nstrings;
        uint32_t bytes;     /* of strings, after the header */
        uint32_t reserved;  /* 0 */
};

/* Write strs[0..n) into a new memfd (header, then each string and its NUL),
 * seal it (F_SEAL_SEAL | F_SEAL_WRITE | F_SEAL_GROW | F_SEAL_SHRINK) and
 * return its fd (close-on-exec).  -1 with err if a limit is exceeded. */
int chan_blob_create(const char *name, const char *const *strs, size_t n, int *ret_fd, struct err **err);

struct chan_blob {
        void *map;
        size_t size;
        const char **strs;   /* nstrings pointers into map */
        size_t nstrings;
};

/* Verify and map a blob received from the peer: a memfd whose seals include
 * all four above, a regular file whose size is within CHAN_BLOB_MAX and
 * equals the header's, exactly `expect` strings (chan_blob_parse).  The fd
 * stays the caller's. */
int chan_blob_map(int fd, size_t expect, struct chan_blob *ret, struct err **err);
void chan_blob_unmap(struct chan_blob *b);

/* Check a blob's bytes: magic, reserved 0, size == header + bytes, exactly
 * nstrings NUL-terminated strings each at most CHAN_STRING_MAX long, filling
 * the bytes exactly, nstrings == expect.  strs (may be NULL) receives
 * pointers into data (room for expect).  Pure. */
int chan_blob_parse(const void *data, size_t size, size_t expect, const char **strs, struct err **err);

#endif
