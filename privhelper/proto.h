/* privhelper/proto.h — the requests the unprivileged supervisor
 * (chidori-monitor under CHIDORI_PRIVSEP=1) sends to the root helper
 * (chidori-privhelper), and the client side of them.
 *
 * One SOCK_SEQPACKET socket, inherited by the supervisor (and the launcher
 * children it forks).  The helper's first message on it is its word to go
 * on (priv_wait_ready).  A request is one fixed-size `struct priv_req` with
 * exactly one SCM_RIGHTS descriptor: one end of a fresh socketpair, on which
 * the helper answers with one `struct priv_rep` and, when err is 0, one
 * descriptor.  Requests from several processes can therefore never receive
 * each other's answers.  Everything is checked by the helper
 * (privhelper/main.c): the op, the exact size, the path (NUL-terminated,
 * absolute, beneath one of the folders the operator named), the ids of an
 * id-mapped tree (the boxes' 65534 or the broker's), the attributes. */
#ifndef CHIDORI_PRIVHELPER_PROTO_H
#define CHIDORI_PRIVHELPER_PROTO_H

#include <stdint.h>
#include <sys/types.h>

#include "common/err.h"

#define PRIV_MAGIC 0x63687076u /* "chpv" */
#define PRIV_PATH_MAX 4096

/* The supervisor's uid and gid (and its user namespace's root):
 * unallocated on Debian, never the boxes' 65534 nor the broker's
 * (docs/decisions.md 163). */
#define PRIV_SUPERVISOR_ID 65532u

enum priv_op {
        PRIV_TREE = 1,       /* a detached mount of path (open_tree), maybe id-mapped */
        PRIV_AGENT_FILE = 2, /* a regular file beneath the agent folder (relative path) */
        PRIV_AGENT = 3,      /* chidori replay without --agent: the journal's agent file, once */
        PRIV_BROKER = 4,     /* chidori-broker (O_PATH, to exec): $CHIDORI_BROKER, else beside the monitor */
        PRIV_ALLOW = 5,      /* a tool's command or read-only bind from the COMMIT becomes one of the operator's */
        PRIV_ALLOW_DONE = 6, /* no more PRIV_ALLOW: the COMMIT is accepted once, so is this list */
};

struct priv_req {
        uint32_t magic, op;
        int32_t map_uid, map_gid; /* PRIV_TREE: -1, or the ids on-disk root appears as */
        uint64_t attr;            /* PRIV_TREE: MOUNT_ATTR_RDONLY / NOEXEC (NOSUID and NODEV always) */
        char path[PRIV_PATH_MAX];
};

struct priv_rep {
        uint32_t magic;
        int32_t err; /* 0: one descriptor follows; else an errno */
};

/* The helper's socket, or -1 when there is none (every run but
 * CHIDORI_PRIVSEP=1 as root). */
extern int priv_helper_fd;

/* The helper's word to go on, its first message on the socket. */
struct priv_ready {
        uint32_t magic;
        int32_t err;                  /* 0 */
        char tmpdir[PRIV_PATH_MAX];   /* the supervisor's TMPDIR (a folder of its own), or "" */
};

/* The supervisor's first step: wait for the helper's word that its cgroup
 * is delegated and the checks passed (one struct priv_ready, sent once on
 * the socket: the helper does both while the supervisor execs), and take
 * the TMPDIR it made.  0, or -1: the helper said why and will stop us. */
int priv_wait_ready(void);

/* Ask the helper; the descriptor (0 for PRIV_ALLOW and PRIV_ALLOW_DONE),
 * or -1 with *err set (its errno says why: EPERM for a path outside the
 * operator's folders). */
int priv_request(enum priv_op op, const char *path, long map_uid, long map_gid, uint64_t attr, struct err **err);

#endif
