/* privhelper/main.c — chidori-privhelper: the only code that keeps root
 * while an agent runs under CHIDORI_PRIVSEP=1 (docs/architecture.md,
 * "Privilege separation of the monitor").
 *
 *   chidori-privhelper --monitor PATH --handover FD
 *
 * `chidori run`, `replay` and `serve`, as root, exec this instead of
 * chidori-monitor (same pid).  It reads from the handover only the folders
 * and ids the operator named, then starts the supervisor — chidori-monitor,
 * unchanged — in a user namespace of its own where its root is uid 65532
 * outside and only the boxes' 65534 and the broker's uid are mapped besides,
 * with no supplementary groups, in a cgroup delegated to it (deleg.c).
 * From then on this process only answers the supervisor's requests
 * (proto.h): detached mounts of the operator's folders (id-mapped for the
 * boxes or the broker), the agent's files, and forwards the operator's stop
 * signals; when the supervisor exits it removes the cgroup and the
 * operator's temporary names and exits with the supervisor's status.
 * With `--ready TMP|- FD`, chidori made the supervisor's TMPDIR and cgroup
 * and sent its word already (ready.h, decision 174): FD describes the
 * cgroup (deleg_load) for the end. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <linux/openat2.h>
#include <linux/sched.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/utsname.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "chan/chan.h"
#include "common/exit.h"
#include "common/fdpass.h"
#include "common/tmpown.h"
#include "monitor/broker.h"
#include "privhelper/deleg.h"
#include "privhelper/proto.h"
#include "privhelper/ready.h"
#include "sandbox/idmap.h"

#define MAX_ROOTS 64 /* the run's folders and binaries, its tools' commands and binds */

struct root {
        char path[PATH_MAX];
        int fd;      /* O_PATH */
        bool file;   /* only the path itself (a binary) */
        bool writes; /* the broker writes it (state dir, workspace, store): id-mapped to its uid */
};

struct helper {
        struct root roots[MAX_ROOTS];
        size_t nroots;
        const char *agent_dir, *remove_after, *unlink_socket, *cgroup_parent;
        bool agent_from_broker, agent_given, allow_done, quiet;
        int agent_dirfd;
        const char *monitor;
        unsigned broker_uid, broker_gid;
        bool have_broker;
        int userns_box, userns_broker; /* id-mapping namespaces, made on first use */
        int inherited[BROKER_MAX_EXTRA + 2];
        size_t ninherited;
        pid_t sup;
        int sup_pidfd, sock;
        char tmp[PATH_MAX]; /* TMPDIR/chidori-sup-<owner>-XXXXXX: root's, 0711; its "tmp" the supervisor's TMPDIR */
        struct deleg cg;
};

static void add_root(struct helper *h, const char *path, bool file)
{
        if (h->nroots >= MAX_ROOTS || path[0] != '/')
                return;
        struct root *r = &h->roots[h->nroots];
        snprintf(r->path, sizeof(r->path), "%s", path);
        size_t l = strlen(r->path);
        while (l > 1 && r->path[l - 1] == '/')
                r->path[--l] = '\0';
        r->fd = open(r->path, O_PATH | O_CLOEXEC | (file ? 0 : O_DIRECTORY));
        r->file = file;
        if (r->fd >= 0)
                h->nroots++;
}

static bool number(const char *v, unsigned long max, unsigned long *ret)
{
        char *end;
        errno = 0;
        unsigned long n = strtoul(v, &end, 10);
        if (*v < '0' || *v > '9' || errno || *end || n > max)
                return false;
        *ret = n;
        return true;
}

/* What this process takes from the monitor's settings (monitor/main.c
 * reads them all again, as the supervisor). */
static int read_handover(struct helper *h, int fd)
{
        struct chan_blob_hdr hdr;
        struct chan_blob blob = { 0 };
        struct err *e = NULL;
        if (pread(fd, &hdr, sizeof(hdr), 0) != (ssize_t)sizeof(hdr) || chan_blob_map(fd, hdr.nstrings, &blob, &e) < 0) {
                fprintf(stderr, "chidori: the privileged helper's settings: %s\n", e ? err_msg(e) : "not a settings descriptor");
                err_free(e);
                return -1;
        }
        for (size_t i = 0; i < blob.nstrings; i++) {
                const char *kv = blob.strs[i], *v = strchr(kv, '=');
                if (!v)
                        continue;
                size_t kl = (size_t)(v++ - kv);
                unsigned long n;
#define KEY(k) (kl == sizeof(k) - 1 && memcmp(kv, k, kl) == 0)
                if (KEY("worker") || KEY("esbuild"))
                        add_root(h, v, true);
                else if (KEY("state_dir") || KEY("workspace") || KEY("store_dir"))
                        add_root(h, v, false), h->nroots ? h->roots[h->nroots - 1].writes = true : 0;
                else if (KEY("store_socket_dir"))
                        add_root(h, v, false);
                else if (KEY("agent_dir"))
                        h->agent_dir = strdup(v), add_root(h, v, false);
                else if (KEY("quiet"))
                        h->quiet = strcmp(v, "1") == 0;
                else if (KEY("agent_from_broker"))
                        h->agent_from_broker = strcmp(v, "1") == 0;
                else if (KEY("remove_after"))
                        h->remove_after = strdup(v);
                else if (KEY("unlink_socket"))
                        h->unlink_socket = strdup(v);
                else if (KEY("cgroup_parent"))
                        h->cgroup_parent = strdup(v);
                else if (KEY("broker_uid") && number(v, UINT32_MAX - 1, &n))
                        h->broker_uid = (unsigned)n, h->have_broker = true;
                else if (KEY("broker_gid") && number(v, UINT32_MAX - 1, &n))
                        h->broker_gid = (unsigned)n;
                else if ((KEY("config_fd") || KEY("fd")) && number(v, INT_MAX, &n) && n > 2 &&
                         h->ninherited < sizeof(h->inherited) / sizeof(h->inherited[0]))
                        h->inherited[h->ninherited++] = (int)n;
#undef KEY
        }
        chan_blob_unmap(&blob);
        if (h->agent_dir)
                h->agent_dirfd = open(h->agent_dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (!h->have_broker || h->broker_uid == PRIV_SUPERVISOR_ID || h->broker_gid == PRIV_SUPERVISOR_ID) {
                fprintf(stderr, "chidori: the broker's user must not be uid or gid %u (the supervisor's under "
                                "CHIDORI_PRIVSEP=1); choose another with --broker-user\n", PRIV_SUPERVISOR_ID);
                return -1;
        }
        return 0;
}

static int do_tree(struct helper *h, const struct priv_req *q);

/* ---- the supervisor ---- */

/* A folder the broker writes that cannot be id-mapped to its uid (ramfs,
 * tmpfs before Linux 6.3) would need the broker's uid-0 fallback, which is
 * root's own uid: only the monitor's own mode has it.  The folder, or NULL. */
static const char *unmappable(struct helper *h)
{
        for (size_t i = 0; i < h->nroots; i++) {
                if (!h->roots[i].writes || ready_known_mappable(h->roots[i].fd))
                        continue;
                struct priv_req q = { .magic = PRIV_MAGIC, .op = PRIV_TREE, .map_uid = (int32_t)h->broker_uid,
                                      .map_gid = (int32_t)h->broker_gid };
                snprintf(q.path, sizeof(q.path), "%s", h->roots[i].path);
                int t = do_tree(h, &q);
                if (t < 0)
                        return h->roots[i].path;
                close(t);
        }
        return NULL;
}

/* The monitor's own mode: it keeps root (as without this helper). */
__attribute__((noreturn)) static void monitor_keeps_root(const char *monitor, const char *handover, const char *why,
                                                         bool quiet)
{
        if (!quiet)
                fprintf(stderr, "chidori: note: the monitor keeps root: %s\n", why);
        char *argv[] = { "chidori-monitor", "--handover", (char *)handover, NULL };
        execv(monitor, argv);
        fprintf(stderr, "chidori: start the monitor (chidori-monitor): exec %s: %s\n", monitor, strerror(errno));
        _exit(EXIT_PROTOCOL);
}

static void stop_supervisor(struct helper *h)
{
        kill(h->sup, SIGKILL);
        while (waitpid(h->sup, NULL, 0) < 0 && errno == EINTR)
                ;
        h->sup = 0;
}

/* While the supervisor starts (it waits for our word before it does
 * anything), the checks and the cgroup: both off the critical path.
 * 0, or the folder that cannot be id-mapped (unmapped), or -1. */
static int ready_supervisor(struct helper *h, const char **unmapped)
{
        *unmapped = unmappable(h);
        if (*unmapped)
                return 0;
        struct err *e = NULL;
        if (deleg_create(&h->cg, h->cgroup_parent, h->sup, PRIV_SUPERVISOR_ID, PRIV_SUPERVISOR_ID, &e) < 0) {
                fprintf(stderr, "chidori: delegate a cgroup to the supervisor: %s\n", err_msg(e));
                err_free(e);
                return -1;
        }
        /* Not sent: the supervisor has already exited (its settings were
         * refused, and it said so); the loop collects its status. */
        ready_send(h->sock, h->tmp);
        return 0;
}

/* ---- requests ---- */

static int idmap_ns(struct helper *h, long uid, long gid)
{
        int *slot = uid == 65534 && gid == 65534 ? &h->userns_box
                    : uid == (long)h->broker_uid && gid == (long)h->broker_gid ? &h->userns_broker
                                                                               : NULL;
        if (!slot)
                return -EPERM;
        if (*slot < 0) {
                struct err *e = NULL;
                *slot = idmap_userns((uid_t)uid, (gid_t)gid, &e);
                int r = *slot < 0 ? -(e && e->errnum ? e->errnum : EIO) : 0;
                err_free(e);
                if (r < 0)
                        return r;
        }
        return *slot;
}

/* The operator's folder (or binary) holding path, and path beneath it. */
static int beneath_root(const struct helper *h, const char *path, int flags)
{
        /* The path itself first (a binary inside an operator's folder is
         * its own root: its symlinks were the operator's to follow), then
         * beneath each folder holding it, the first that resolves. */
        for (size_t i = 0; i < h->nroots; i++)
                if (strcmp(path, h->roots[i].path) == 0)
                        return fcntl(h->roots[i].fd, F_DUPFD_CLOEXEC, 3);
        int err = -EPERM;
        for (size_t i = 0; i < h->nroots; i++) {
                const struct root *r = &h->roots[i];
                size_t l = strlen(r->path);
                if (strncmp(path, r->path, l) != 0 || (path[l] != '\0' && path[l] != '/'))
                        continue;
                if (strcmp(r->path, "/") == 0)
                        l = 0;
                const char *rel = path + l;
                while (*rel == '/')
                        rel++;
                if (r->file && *rel)
                        continue;
                if (!*rel)
                        return fcntl(r->fd, F_DUPFD_CLOEXEC, 3);
                struct open_how how = { .flags = flags | O_CLOEXEC,
                                        .resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS };
                int fd = (int)syscall(SYS_openat2, r->fd, rel, &how, sizeof(how));
                if (fd >= 0)
                        return fd;
                err = -errno;
        }
        return err;
}

static int do_tree(struct helper *h, const struct priv_req *q)
{
        const uint64_t allowed = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOEXEC | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;
        if (q->attr & ~allowed)
                return -EINVAL;
        int ns = -1;
        if (q->map_uid >= 0 || q->map_gid >= 0) {
                ns = idmap_ns(h, q->map_uid, q->map_gid);
                if (ns < 0)
                        return ns;
        }
        int src = beneath_root(h, q->path, O_PATH);
        if (src < 0)
                return src;
        int t = open_tree(src, "", AT_EMPTY_PATH | OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE);
        int e = errno;
        close(src);
        if (t < 0)
                return -e;
        struct mount_attr a = { .attr_set = q->attr | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV };
        if (ns >= 0) {
                a.attr_set |= MOUNT_ATTR_IDMAP;
                a.userns_fd = (uint64_t)ns;
        }
        if (mount_setattr(t, "", AT_EMPTY_PATH | AT_RECURSIVE, &a, sizeof(a)) < 0) {
                e = errno;
                close(t);
                return -e;
        }
        return t;
}

static int do_agent(struct helper *h, const struct priv_req *q)
{
        struct err *e = NULL;
        int fd;
        if (q->op == PRIV_AGENT_FILE) {
                if (h->agent_dirfd < 0)
                        return -EACCES;
                fd = monitor_open_agent_file(h->agent_dirfd, q->path, &e);
        } else {
                /* the journal's agent, as chidori replay always opened it: once */
                const char *slash = strrchr(q->path, '/');
                if (!h->agent_from_broker || h->agent_dir || h->agent_given || q->path[0] != '/' || !slash[1])
                        return -EPERM;
                h->agent_given = true;
                char dir[PRIV_PATH_MAX];
                snprintf(dir, sizeof(dir), "%.*s", slash == q->path ? 1 : (int)(slash - q->path), q->path);
                int dfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
                if (dfd < 0)
                        return -errno;
                fd = monitor_open_agent_file(dfd, slash + 1, &e);
                if (fd >= 0) {
                        /* its other files (imports) come by PRIV_AGENT_FILE, and
                         * the bundle box binds its folder: one of the operator's now */
                        h->agent_dirfd = dfd;
                        add_root(h, dir, false);
                } else {
                        close(dfd);
                }
        }
        int r = fd >= 0 ? fd : -(e && e->errnum > 0 ? e->errnum : EINVAL);
        err_free(e);
        return r;
}

/* The tools' commands and read-only binds, from the COMMIT the supervisor
 * accepted (once, before the broker read anything the agent wrote): paths
 * as the tools file named them, which the supervisor's uid may not reach. */
static int do_allow(struct helper *h, const struct priv_req *q)
{
        if (h->allow_done)
                return -EPERM;
        if (q->op == PRIV_ALLOW_DONE) {
                h->allow_done = true;
                return 0;
        }
        struct stat st;
        if (q->path[0] != '/' || strstr(q->path, "/../") || stat(q->path, &st) < 0)
                return -EINVAL;
        size_t n = h->nroots;
        add_root(h, q->path, !S_ISDIR(st.st_mode));
        return h->nroots > n ? 0 : -ENOSPC;
}

/* The broker's binary, found as the monitor was (the same folder). */
static int do_broker(const struct helper *h)
{
        const char *env = getenv("CHIDORI_BROKER");
        char path[PATH_MAX];
        const char *slash = strrchr(h->monitor, '/');
        if (env && *env)
                snprintf(path, sizeof(path), "%s", env);
        else
                snprintf(path, sizeof(path), "%.*s/chidori-broker", slash ? (int)(slash - h->monitor) : 1,
                         slash ? h->monitor : ".");
        int fd = open(path, O_PATH | O_CLOEXEC);
        struct stat st;
        if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
                int e = fd < 0 ? errno : EACCES;
                if (fd >= 0)
                        close(fd);
                return -e;
        }
        return fd;
}

/* r: a descriptor to send, -errno, or NOFD (success without one) */
#define NOFD (-0x10000)
static void answer(int reply, int r)
{
        struct priv_rep rep = { .magic = PRIV_MAGIC, .err = r < 0 && r != NOFD ? -r : 0 };
        (void)fd_send(reply, &rep, sizeof(rep), r >= 0 && r != NOFD ? r : -1, MSG_DONTWAIT);
        if (r >= 0 && r != NOFD)
                close(r);
}

/* One request: exactly a struct priv_req and one descriptor, a socket;
 * anything else is dropped (its descriptors closed). */
static void serve_one(struct helper *h)
{
        static struct priv_req q;
        union {
                char buf[CMSG_SPACE(sizeof(int) * 4)];
                struct cmsghdr align;
        } u;
        struct iovec iov = { .iov_base = &q, .iov_len = sizeof(q) };
        struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof(u.buf) };
        ssize_t n = recvmsg(h->sock, &m, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
        if (n <= 0) {
                if (n == 0 || (errno != EAGAIN && errno != EINTR))
                        h->sock = (close(h->sock), -1); /* the supervisor is gone */
                return;
        }
        int fds[4], nfds = 0;
        for (struct cmsghdr *c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c))
                if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS)
                        for (size_t k = 0; k < (c->cmsg_len - CMSG_LEN(0)) / sizeof(int) && nfds < 4; k++)
                                memcpy(&fds[nfds++], CMSG_DATA(c) + k * sizeof(int), sizeof(int));
        struct stat st;
        bool ok = n == (ssize_t)sizeof(q) && !(m.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) && nfds == 1 &&
                  q.magic == PRIV_MAGIC && memchr(q.path, '\0', sizeof(q.path)) && fstat(fds[0], &st) == 0 &&
                  S_ISSOCK(st.st_mode);
        if (ok) {
                int r = q.op == PRIV_TREE ? do_tree(h, &q)
                        : q.op == PRIV_AGENT_FILE || q.op == PRIV_AGENT ? do_agent(h, &q)
                        : q.op == PRIV_BROKER                           ? do_broker(h)
                        : q.op == PRIV_ALLOW || q.op == PRIV_ALLOW_DONE ? do_allow(h, &q)
                                                                        : -EINVAL;
                if (r == 0 && (q.op == PRIV_ALLOW || q.op == PRIV_ALLOW_DONE))
                        r = NOFD;
                answer(fds[0], r);
        }
        for (int i = 0; i < nfds; i++)
                close(fds[i]);
}

/* ---- the end ---- */

static void finish(struct helper *h, int status)
{
        deleg_remove(&h->cg);
        ready_remove_tmp(h->tmp);
        if (h->unlink_socket)
                unlink(h->unlink_socket);
        if (h->remove_after) {
                char dir[PATH_MAX];
                snprintf(dir, sizeof(dir), "%s", h->remove_after);
                unlink(dir);
                char *slash = strrchr(dir, '/');
                if (slash && slash != dir) {
                        *slash = '\0';
                        rmdir(dir);
                }
        }
        fflush(NULL);
        if (WIFSIGNALED(status)) {
                int sig = WTERMSIG(status);
                signal(sig, SIG_DFL);
                sigset_t s;
                sigemptyset(&s);
                sigaddset(&s, sig);
                sigprocmask(SIG_UNBLOCK, &s, NULL);
                raise(sig);
                _exit(128 + sig);
        }
        _exit(WIFEXITED(status) ? WEXITSTATUS(status) : EXIT_PROTOCOL);
}

/* The supervisor chidori started before its exec (cli/supervisor.c): our
 * child, its pidfd and the requests' socket, made ours here. */
static int adopt(struct helper *h, unsigned long pid, unsigned long pidfd, unsigned long sock)
{
        char path[64], *line = NULL;
        size_t cap = 0;
        long fpid = -1;
        snprintf(path, sizeof(path), "/proc/self/fdinfo/%lu", pidfd);
        FILE *f = fopen(path, "re");
        while (f && getline(&line, &cap, f) > 0 && sscanf(line, "Pid: %ld", &fpid) != 1)
                ;
        free(line);
        if (f)
                fclose(f);
        siginfo_t si;
        memset(&si, 0, sizeof(si));
        struct stat st;
        if (fpid != (long)pid || waitid(P_PIDFD, (id_t)pidfd, &si, WEXITED | WNOHANG | WNOWAIT) < 0 ||
            fstat((int)sock, &st) < 0 || !S_ISSOCK(st.st_mode) || fcntl((int)pidfd, F_SETFD, FD_CLOEXEC) < 0 ||
            fcntl((int)sock, F_SETFD, FD_CLOEXEC) < 0) {
                fprintf(stderr, "chidori-privhelper: --supervisor %lu %lu %lu is not the supervisor chidori started\n",
                        pid, pidfd, sock);
                return -1;
        }
        h->sup = (pid_t)pid;
        h->sup_pidfd = (int)pidfd;
        h->sock = (int)sock;
        return 0;
}

int main(int argc, char **argv)
{
        unsigned long handover, sup_pid, sup_pidfd, sup_sock;
        /* --ready TMP|- FD: chidori made the supervisor's TMPDIR and cgroup
         * and sent its word (privhelper/ready.h); FD describes the cgroup. */
        unsigned long deleg_fd = 0;
        bool ready = argc == 12 && strcmp(argv[9], "--ready") == 0 && strlen(argv[10]) < PATH_MAX &&
                     number(argv[11], INT_MAX, &deleg_fd) && deleg_fd > 2;
        if ((argc != 9 && !ready) || strcmp(argv[1], "--monitor") != 0 || strcmp(argv[3], "--handover") != 0 ||
            !number(argv[4], INT_MAX, &handover) || strcmp(argv[5], "--supervisor") != 0 ||
            !number(argv[6], INT_MAX, &sup_pid) || !number(argv[7], INT_MAX, &sup_pidfd) ||
            !number(argv[8], INT_MAX, &sup_sock)) {
                fprintf(stderr, "chidori-privhelper: started by 'chidori run', 'replay' and 'serve' as root with "
                                "CHIDORI_PRIVSEP=1 only; run 'chidori run AGENT'\n");
                return EXIT_USAGE;
        }
        static struct helper h = { .agent_dirfd = -1, .userns_box = -1, .userns_broker = -1, .sup_pidfd = -1,
                                   .sock = -1 };
        if (geteuid() != 0) {
                fprintf(stderr, "chidori-privhelper: needs root (it is what keeps it); run chidori-monitor instead\n");
                return EXIT_USAGE;
        }
        /* The stop signals stay blocked (chidori blocked them before the
         * exec): read here and forwarded, unless the terminal sent them to
         * the supervisor as well (it is in our process group). */
        sigset_t old, sigs;
        sigprocmask(SIG_SETMASK, NULL, &old);
        sigemptyset(&sigs);
        sigaddset(&sigs, SIGINT);
        sigaddset(&sigs, SIGTERM);
        sigaddset(&sigs, SIGHUP);
        sigprocmask(SIG_BLOCK, &sigs, NULL);
        int sfd = signalfd(-1, &sigs, SFD_CLOEXEC | SFD_NONBLOCK);
        h.monitor = argv[2];
        if (adopt(&h, sup_pid, sup_pidfd, sup_sock) < 0)
                return EXIT_PROTOCOL;
        if (read_handover(&h, (int)handover) < 0)
                return EXIT_PROTOCOL;
        const char *unmapped = NULL;
        if (ready) {
                struct err *e = NULL;
                snprintf(h.tmp, sizeof(h.tmp), "%s", strcmp(argv[10], "-") == 0 ? "" : argv[10]);
                if (sfd < 0 || deleg_load(&h.cg, (int)deleg_fd, &e) < 0) {
                        fprintf(stderr, "chidori: the privileged helper's settings: %s\n",
                                e ? err_msg(e) : "no signalfd");
                        err_free(e);
                        deleg_remove(&h.cg);
                        stop_supervisor(&h);
                        ready_remove_tmp(h.tmp);
                        return EXIT_PROTOCOL;
                }
                close((int)deleg_fd);
        }
        if (!ready && (sfd < 0 || ready_make_tmp(h.tmp, sizeof(h.tmp)) < 0 ||
                       ready_supervisor(&h, &unmapped) < 0 || unmapped)) {
                if (h.sup > 0)
                        stop_supervisor(&h);
                deleg_remove(&h.cg); /* made before a later step failed */
                ready_remove_tmp(h.tmp);
                if (!unmapped)
                        return EXIT_PROTOCOL;
        }
        if (unmapped) {
                char why[PATH_MAX + 128];
                snprintf(why, sizeof(why), "%s cannot be id-mapped for the broker (ramfs, tmpfs before Linux 6.3)",
                         unmapped);
                const char *ps = getenv("CHIDORI_PRIVSEP");
                if (ps && strcmp(ps, "1") == 0) {
                        fprintf(stderr, "chidori: CHIDORI_PRIVSEP=1: privilege separation is not possible here "
                                        "(%s); unset it to let the monitor keep root\n", why);
                        return EXIT_LAYER_UNAVAILABLE;
                }
                close(h.sup_pidfd), close(h.sock);
                sigprocmask(SIG_SETMASK, &old, NULL);
                monitor_keeps_root(argv[2], argv[4], why, h.quiet);
        }
        close((int)handover);
        for (size_t i = 0; i < h.ninherited; i++)
                close(h.inherited[i]);
        for (;;) {
                struct pollfd p[3] = { { .fd = h.sup_pidfd, .events = POLLIN }, { .fd = sfd, .events = POLLIN },
                                       { .fd = h.sock, .events = POLLIN } };
                if (poll(p, h.sock >= 0 ? 3 : 2, -1) < 0 && errno != EINTR)
                        break;
                if (p[2].revents && h.sock >= 0)
                        serve_one(&h);
                struct signalfd_siginfo si;
                while (p[1].revents && read(sfd, &si, sizeof(si)) == (ssize_t)sizeof(si))
                        if (si.ssi_code != SI_KERNEL) /* the terminal's reached the supervisor already */
                                syscall(SYS_pidfd_send_signal, h.sup_pidfd, (int)si.ssi_signo, NULL, 0);
                if (p[0].revents)
                        break;
        }
        int status = 0;
        while (waitpid(h.sup, &status, 0) < 0 && errno == EINTR)
                ;
        finish(&h, status);
        return EXIT_PROTOCOL;
}
