/* chan/chan.c — the monitor <-> broker messages: checks, send, receive.
 * See chan.h for the rules; the blob (sealed memfd) is in blob.c. */
#define _GNU_SOURCE
#include "chan/chan.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/cleanup.h"

static const struct {
        uint32_t type;
        const char *name;
        size_t size;
        enum chan_dir from;
} types[] = {
        { CHAN_HELLO, "HELLO", sizeof(struct chan_hello), CHAN_FROM_BROKER },
        { CHAN_COMMIT, "COMMIT", sizeof(struct chan_commit), CHAN_FROM_BROKER },
        { CHAN_SPAWN, "SPAWN", sizeof(struct chan_spawn), CHAN_FROM_BROKER },
        { CHAN_OPEN_AGENT_FILE, "OPEN_AGENT_FILE", sizeof(struct chan_open_agent_file), CHAN_FROM_BROKER },
        { CHAN_KILL, "KILL", sizeof(struct chan_kill), CHAN_FROM_BROKER },
        { CHAN_RESULT, "RESULT", sizeof(struct chan_result), CHAN_FROM_BROKER },
        { CHAN_OPEN_AGENT, "OPEN_AGENT", sizeof(struct chan_open_agent), CHAN_FROM_BROKER },
        { CHAN_WELCOME, "WELCOME", sizeof(struct chan_welcome), CHAN_FROM_MONITOR },
        { CHAN_SPAWNED, "SPAWNED", sizeof(struct chan_spawned), CHAN_FROM_MONITOR },
        { CHAN_SPAWN_FAILED, "SPAWN_FAILED", sizeof(struct chan_spawn_failed), CHAN_FROM_MONITOR },
        { CHAN_OPENED, "OPENED", sizeof(struct chan_opened), CHAN_FROM_MONITOR },
        { CHAN_BOX_ENDED, "BOX_ENDED", sizeof(struct chan_box_ended), CHAN_FROM_MONITOR },
        { CHAN_STOP, "STOP", sizeof(struct chan_stop), CHAN_FROM_MONITOR },
};

static int find(uint32_t type)
{
        for (size_t i = 0; i < ARRAY_SIZE(types); i++)
                if (types[i].type == type)
                        return (int)i;
        return -1;
}

const char *chan_type_name(uint32_t type)
{
        static char buf[32];
        int i = find(type);
        if (i >= 0)
                return types[i].name;
        snprintf(buf, sizeof(buf), "type %u", type);
        return buf;
}

size_t chan_size_of(uint32_t type)
{
        int i = find(type);
        return i >= 0 ? types[i].size : 0;
}

void chan_init(union chan_msg *m, uint32_t type, uint64_t id)
{
        memset(m, 0, sizeof(*m));
        m->h.type = type;
        m->h.len = (uint32_t)chan_size_of(type);
        m->h.id = id;
}

size_t chan_fds_for(const union chan_msg *m)
{
        switch (m->h.type) {
        case CHAN_COMMIT:
        case CHAN_SPAWN: return 1;
        case CHAN_SPAWNED: return m->spawned.kind == CHAN_BOX_WORKER ? 2 : m->spawned.kind == CHAN_BOX_BUNDLE ? 4 : 3;
        case CHAN_OPENED: return m->opened.errnum == 0 ? 1 : 0;
        default: return 0;
        }
}

/* A fixed char array holds a NUL-terminated string. */
static bool terminated(const char *s, size_t cap)
{
        return memchr(s, '\0', cap) != NULL;
}

#define PROTO(...) err_setc(err, CHAN_E_PROTO, 0, __VA_ARGS__)

/* A time zone name as tz(5) spells it: letters, digits, _ - + /, no "..". */
static bool tz_ok(const char *tz)
{
        if (tz[0] == '/' || strstr(tz, ".."))
                return false;
        for (const char *p = tz; *p; p++)
                if (!((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') ||
                      *p == '_' || *p == '-' || *p == '+' || *p == '/'))
                        return false;
        return true;
}

/* Strings a blob of 1 + a + b + c holds, within CHAN_BLOB_STRINGS. */
static bool counts_ok(uint32_t a, uint32_t b, uint32_t c)
{
        return 1ull + a + b + c <= CHAN_BLOB_STRINGS;
}

static int check_fields(const union chan_msg *m, struct err **err)
{
        switch (m->h.type) {
        case CHAN_HELLO:
                if (m->hello.version != CHAN_VERSION || m->hello.flags)
                        return PROTO("HELLO: version %u flags %#x (expected version %u, flags 0)", m->hello.version,
                                     m->hello.flags, CHAN_VERSION);
                return 0;
        case CHAN_WELCOME:
                if (m->welcome.version != CHAN_VERSION ||
                    (m->welcome.flags & ~(CHAN_WELCOME_ROOTLESS | CHAN_WELCOME_UID0)))
                        return PROTO("WELCOME: version %u flags %#x", m->welcome.version, m->welcome.flags);
                return 0;
        case CHAN_COMMIT:
                if (m->commit.flags & ~CHAN_COMMIT_UNSANDBOXED_TOOLS)
                        return PROTO("COMMIT: unknown flags %#x", m->commit.flags);
                if (!counts_ok(m->commit.n_commands, m->commit.n_ro_binds, m->commit.n_env_names))
                        return PROTO("COMMIT: more than %u strings", CHAN_BLOB_STRINGS);
                return 0;
        case CHAN_SPAWN: {
                const struct chan_spawn *s = &m->spawn;
                if (s->kind < CHAN_BOX_WORKER || s->kind > CHAN_BOX_BUNDLE)
                        return PROTO("SPAWN: unknown box kind %u", s->kind);
                if (s->jit > 1)
                        return PROTO("SPAWN: jit %u (expected 0 or 1)", s->jit);
                if ((s->flags & ~CHAN_SPAWN_HOST) || (s->flags && s->kind != CHAN_BOX_TOOL))
                        return PROTO("SPAWN: flags %#x for kind %u", s->flags, s->kind);
                if (!terminated(s->tz, sizeof(s->tz)) || !tz_ok(s->tz))
                        return PROTO("SPAWN: the time zone is not a zone name");
                if (s->n_argv == 0)
                        return PROTO("SPAWN: no argv");
                if (!counts_ok(s->n_argv, s->n_env, s->n_binds))
                        return PROTO("SPAWN: more than %u strings", CHAN_BLOB_STRINGS);
                return 0;
        }
        case CHAN_SPAWNED:
                if (m->spawned.kind < CHAN_BOX_WORKER || m->spawned.kind > CHAN_BOX_BUNDLE)
                        return PROTO("SPAWNED: unknown box kind %u", m->spawned.kind);
                if (m->spawned.flags & ~CHAN_SPAWNED_POOLED ||
                    (m->spawned.flags && m->spawned.kind != CHAN_BOX_WORKER))
                        return PROTO("SPAWNED: flags %#x for kind %u", m->spawned.flags, m->spawned.kind);
                if (!terminated(m->spawned.banner, sizeof(m->spawned.banner)))
                        return PROTO("SPAWNED: the banner is not NUL-terminated");
                return 0;
        case CHAN_SPAWN_FAILED:
                if (m->spawn_failed.errnum < 0 || !terminated(m->spawn_failed.message, CHAN_TEXT_MAX))
                        return PROTO("SPAWN_FAILED: negative errno or unterminated message");
                return 0;
        case CHAN_OPEN_AGENT_FILE: {
                const char *p = m->open_agent_file.path;
                if (!terminated(p, CHAN_PATH_MAX))
                        return PROTO("OPEN_AGENT_FILE: the path is not NUL-terminated within %d bytes",
                                     CHAN_PATH_MAX);
                if (p[0] == '\0' || p[0] == '/')
                        return PROTO("OPEN_AGENT_FILE: the path must be relative and not empty");
                return 0;
        }
        case CHAN_OPEN_AGENT: {
                const char *p = m->open_agent.path;
                if (!terminated(p, CHAN_PATH_MAX))
                        return PROTO("OPEN_AGENT: the path is not NUL-terminated within %d bytes", CHAN_PATH_MAX);
                if (p[0] != '/' || p[1] == '\0')
                        return PROTO("OPEN_AGENT: the path must be absolute and name a file");
                for (const char *d = p; (d = strstr(d, "..")); d += 2)
                        if (d[-1] == '/' && (d[2] == '/' || d[2] == '\0'))
                                return PROTO("OPEN_AGENT: the path has a '..' component");
                return 0;
        }
        case CHAN_OPENED:
                if (m->opened.errnum < 0 || m->opened.pad)
                        return PROTO("OPENED: negative errno");
                return 0;
        case CHAN_KILL: return 0;
        case CHAN_RESULT:
                if (m->result.exit_code < 0 || m->result.exit_code > 255 || m->result.pad)
                        return PROTO("RESULT: exit code %d (expected 0..255)", m->result.exit_code);
                return 0;
        case CHAN_BOX_ENDED:
                if (m->box_ended.reason < CHAN_END_EXITED || m->box_ended.reason > CHAN_END_KILLED ||
                    m->box_ended.pids_hit > 1)
                        return PROTO("BOX_ENDED: unknown reason %u", m->box_ended.reason);
                return 0;
        case CHAN_STOP:
                if (m->stop.signal < 1 || m->stop.signal > 64 || m->stop.pad)
                        return PROTO("STOP: signal %d", m->stop.signal);
                return 0;
        default: return PROTO("unknown message type %u", m->h.type);
        }
}

int chan_decode(const void *buf, size_t n, size_t nfds, enum chan_dir from, union chan_msg *out, struct err **err)
{
        struct chan_hdr h;
        if (n < sizeof(h))
                return PROTO("a message of %zu bytes (shorter than its header)", n);
        memcpy(&h, buf, sizeof(h));
        int i = find(h.type);
        if (i < 0)
                return PROTO("unknown message type %u", h.type);
        if (types[i].from != from)
                return PROTO("%s sent by the %s", types[i].name, from == CHAN_FROM_BROKER ? "broker" : "monitor");
        if (h.len != types[i].size || n != types[i].size)
                return PROTO("%s of %zu bytes (header says %u; expected %zu)", types[i].name, n, h.len,
                             types[i].size);
        union chan_msg m;
        memset(&m, 0, sizeof(m));
        memcpy(&m, buf, n);
        if (check_fields(&m, err) < 0)
                return -1;
        size_t want = chan_fds_for(&m);
        if (nfds != want)
                return PROTO("%s with %zu descriptors (expected %zu)", types[i].name, nfds, want);
        *out = m;
        return 0;
}

int chan_send(int sock, const union chan_msg *m, const int *fds, size_t nfds, struct err **err)
{
        enum chan_dir from = m->h.type >= CHAN_WELCOME ? CHAN_FROM_MONITOR : CHAN_FROM_BROKER;
        union chan_msg chk;
        if (nfds > CHAN_MAX_FDS)
                return err_setc(err, CHAN_E_PROTO, 0, "send %s: %zu descriptors", chan_type_name(m->h.type), nfds);
        if (chan_decode(m, m->h.len <= sizeof(*m) ? m->h.len : sizeof(*m), nfds, from, &chk, err) < 0)
                return err_wrap(err, "send");
        struct iovec iov = { .iov_base = (void *)m, .iov_len = m->h.len };
        union {
                char buf[CMSG_SPACE(sizeof(int) * CHAN_MAX_FDS)];
                struct cmsghdr align;
        } u;
        struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
        if (nfds) {
                memset(&u, 0, sizeof(u));
                mh.msg_control = u.buf;
                mh.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
                struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
                c->cmsg_level = SOL_SOCKET;
                c->cmsg_type = SCM_RIGHTS;
                c->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
                memcpy(CMSG_DATA(c), fds, sizeof(int) * nfds);
        }
        ssize_t w;
        while ((w = sendmsg(sock, &mh, MSG_NOSIGNAL)) < 0 && errno == EINTR)
                ;
        if (w < 0)
                return err_setc(err, CHAN_E_IO, errno, "send %s", chan_type_name(m->h.type));
        if ((size_t)w != m->h.len)
                return err_setc(err, CHAN_E_IO, 0, "send %s: short write", chan_type_name(m->h.type));
        return 0;
}

static void close_all(int *fds, size_t n)
{
        for (size_t i = 0; i < n; i++)
                if (fds[i] >= 0)
                        fds[i] = (close(fds[i]), -1);
}

int chan_recv(int sock, enum chan_dir from, union chan_msg *m, int fds[CHAN_MAX_FDS], size_t *nfds,
              struct err **err)
{
        /* One byte more than the largest message: a longer one shows as
         * MSG_TRUNC or as a length no type has. */
        union {
                union chan_msg m;
                char raw[sizeof(union chan_msg) + 1];
        } in;
        union {
                char buf[CMSG_SPACE(sizeof(int) * CHAN_MAX_FDS)];
                struct cmsghdr align;
        } u;
        struct iovec iov = { .iov_base = &in, .iov_len = sizeof(in) };
        struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof(u.buf) };
        *nfds = 0;
        ssize_t n;
        while ((n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC)) < 0 && errno == EINTR)
                ;
        if (n < 0)
                return err_setc(err, CHAN_E_IO, errno, "receive from the channel");
        int got[CHAN_MAX_FDS];
        size_t ngot = 0;
        bool bad_cmsg = false;
        for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
                if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS || c->cmsg_len < CMSG_LEN(0)) {
                        bad_cmsg = true;
                        continue;
                }
                size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
                for (size_t j = 0; j < k; j++) {
                        int fd;
                        memcpy(&fd, CMSG_DATA(c) + j * sizeof(int), sizeof(int));
                        if (ngot < CHAN_MAX_FDS)
                                got[ngot++] = fd;
                        else
                                close(fd), bad_cmsg = true;
                }
        }
        if (n == 0 && ngot == 0)
                return err_setc(err, CHAN_E_CLOSED, 0, "the channel was closed");
        if (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC) || bad_cmsg) {
                close_all(got, ngot);
                return PROTO("a message with %s", (mh.msg_flags & MSG_CTRUNC) || bad_cmsg
                                                          ? "too many descriptors or other control data"
                                                          : "more bytes than any message has");
        }
        if (chan_decode(&in, (size_t)n, ngot, from, m, err) < 0) {
                close_all(got, ngot);
                return -1;
        }
        memcpy(fds, got, ngot * sizeof(int));
        *nfds = ngot;
        return 0;
}
