/* tests/helpers/start_broker.c — build/start-broker: the test entry point of
 * monitor_start_broker() (tests/bats/broker.bats).  Starts a broker (the
 * binary in CHIDORI_BROKER, e.g. build/probes/broker_probe) with the given
 * folders, serves the channel as the monitor will (HELLO -> WELCOME,
 * OPEN_AGENT_FILE -> OPENED), and exits with the broker's status
 * (128 + signal when killed) after printing, on stderr,
 * "start-broker: broker exited N" or "start-broker: broker killed by SIGSYS".
 *
 *   start-broker [--control] [--state DIR] [--workspace DIR] [--agent DIR]
 *                [--store-dir DIR] [--socket-dir DIR] [--user NAME|UID] [--require] [--box] [--outside] [--close]
 *                [--config A,B,...] -- ARG...
 *
 * ARG... is the broker's argv after argv[0]; "@MONITOR" becomes this
 * process's pid and "@BOX" the pid of a box (`--box`: /usr/bin/sleep in a
 * box as `chidori launch` makes one) as this process sees them.
 * --control: the control run, with none of the lockdown (probe's --control
 * too).  --outside: print the broker's /proc status lines and whether its
 * namespaces differ from ours, as seen from outside.  --close: close the
 * channel after WELCOME (the end of a run, for chidori-broker itself).
 * --config: a sealed blob of those strings becomes the broker's fd 4.
 * --serve: the monitor's channel loop (monitor/serve.c) with the real box
 * provider (cli/provider.c: chidori-worker in a box with the default
 * sandbox options) and the agent folder: a run as chidori-broker does it
 * (config keys in broker/config.h); exits with its RESULT.
 * --journal PATH: the monitor opens PATH for writing (0600, truncated) and
 * passes it as the broker's next descriptor from 5 (config: journal_fd=5).
 * --replay PATH and --fd PATH: the monitor opens PATH for reading and passes
 * it next (config: replay_fd=N, answers_fd=N, ...); --tty: /dev/tty, read
 * and write, next (config: tty_fd=N).  Descriptors go in the order given.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "chan/chan.h"
#include "cli/cli.h"
#include "cli/brokeruser.h"
#include "monitor/broker.h"
#include "monitor/serve.h"
#include "sandbox/box.h"
#include "sandbox/seccomp.h"

static void die(const char *what, struct err *e)
{
        fprintf(stderr, "start-broker: %s: %s\n", what, err_msg(e));
        exit(err_code(e) == BROKER_E_USAGE ? 2 : err_code(e) == BROKER_E_LAYER ? 78 : 1);
}

static pid_t start_box(struct box *b)
{
        static char *const argv[] = { "sleep", "1000", NULL };
        static char *const envp[] = { NULL };
        int null = open("/dev/null", O_RDWR | O_CLOEXEC);
        struct box_opts o = {
                .program = "/usr/bin/sleep",
                .argv = argv,
                .envp = envp,
                .fd0 = null, .fd1 = null, .fd2 = null,
                .frame_fd = -1, .stage2_fd = -1,
                .filter = &seccomp_prebuilt[SECCOMP_LAUNCH][0],
                .nofile = 64,
                .cgroup_fd = -1,
        };
        struct err *e = NULL;
        if (box_spawn(&o, b, &e) < 0)
                die("start a box", e);
        close(null);
        return b->pid;
}

static void outside(pid_t pid, pid_t box)
{
        char path[64], line[256];
        snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
        FILE *f = fopen(path, "re");
        while (f && fgets(line, sizeof(line), f)) {
                static const char *const keys[] = { "Uid:", "Gid:", "CapEff:", "CapBnd:", "NoNewPrivs:", "Seccomp:",
                                                    "Seccomp_filters:" };
                for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
                        if (strncmp(line, keys[i], strlen(keys[i])) == 0)
                                printf("outside %s", line);
        }
        if (f)
                fclose(f);
        static const char *const ns[] = { "user", "pid", "mnt" };
        for (size_t i = 0; i < 3; i++) {
                char a[128] = "", b[128] = "", pa[64], pb[64];
                snprintf(pa, sizeof(pa), "/proc/self/ns/%s", ns[i]);
                snprintf(pb, sizeof(pb), "/proc/%d/ns/%s", (int)pid, ns[i]);
                ssize_t na = readlink(pa, a, sizeof(a) - 1), nb = readlink(pb, b, sizeof(b) - 1);
                printf("outside ns %s %s\n", ns[i], na > 0 && nb > 0 ? (strcmp(a, b) ? "differs" : "same") : "unknown");
        }
        if (box > 0) {
                /* Next to the box's: another uid (root) or user namespace. */
                char a[128] = "", b[128] = "", pa[64], pb[64], line2[256];
                snprintf(pa, sizeof(pa), "/proc/%d/ns/user", (int)box);
                snprintf(pb, sizeof(pb), "/proc/%d/ns/user", (int)pid);
                ssize_t na = readlink(pa, a, sizeof(a) - 1), nb = readlink(pb, b, sizeof(b) - 1);
                printf("outside box ns user %s\n", na > 0 && nb > 0 ? (strcmp(a, b) ? "differs" : "same") : "unknown");
                snprintf(pa, sizeof(pa), "/proc/%d/status", (int)box);
                FILE *g = fopen(pa, "re");
                while (g && fgets(line2, sizeof(line2), g))
                        if (strncmp(line2, "Uid:", 4) == 0)
                                printf("outside box %s", line2);
                if (g)
                        fclose(g);
        }
        fflush(stdout);
}

/* HELLO -> WELCOME; OPEN_AGENT_FILE -> OPENED; until the channel closes. */
static void serve(struct broker *b, int agent_dir, bool show_outside, pid_t box, bool close_after_welcome)
{
        for (;;) {
                union chan_msg m, out;
                int fds[CHAN_MAX_FDS];
                size_t n = 0;
                struct err *e = NULL;
                if (chan_recv(b->chan, CHAN_FROM_BROKER, &m, fds, &n, &e) < 0) {
                        if (err_code(e) != CHAN_E_CLOSED) {
                                fprintf(stderr, "start-broker: broken broker: %s\n", err_msg(e));
                                syscall(SYS_pidfd_send_signal, b->pidfd, SIGKILL, NULL, 0);
                        }
                        err_free(e);
                        return;
                }
                for (size_t i = 0; i < n; i++)
                        close(fds[i]);
                if (m.h.type == CHAN_HELLO) {
                        if (show_outside)
                                outside(b->pid, box);
                        chan_init(&out, CHAN_WELCOME, m.h.id);
                        out.welcome.version = CHAN_VERSION;
                        if (b->mode == BROKER_ROOTLESS)
                                out.welcome.flags |= CHAN_WELCOME_ROOTLESS;
                        if (b->mode == BROKER_UID0)
                                out.welcome.flags |= CHAN_WELCOME_UID0;
                        chan_send(b->chan, &out, NULL, 0, NULL);
                        if (close_after_welcome)
                                return;
                } else if (m.h.type == CHAN_OPEN_AGENT_FILE) {
                        int fd = agent_dir >= 0 ? monitor_open_agent_file(agent_dir, m.open_agent_file.path, &e) : -1;
                        chan_init(&out, CHAN_OPENED, m.h.id);
                        out.opened.errnum = fd >= 0 ? 0 : agent_dir < 0 ? EACCES : (e && e->errnum ? e->errnum : EIO);
                        chan_send(b->chan, &out, &fd, fd >= 0 ? 1 : 0, NULL);
                        if (fd >= 0)
                                close(fd);
                        err_free(e);
                }
        }
}

static volatile sig_atomic_t stop_sig;

static void on_signal(int sig)
{
        if (!stop_sig)
                stop_sig = sig;
}

/* --serve: monitor_serve with a real worker; its exit code. */
static int serve_run(struct broker *b, int agent_dir)
{
        struct err *e = NULL;
        char *worker = NULL;
        if (find_worker(&worker, &e) < 0)
                die("find the worker", e);
        struct sandbox_opts sb;
        sandbox_opts_init(&sb);
        char run_id[32];
        snprintf(run_id, sizeof(run_id), "%08x", (unsigned)getpid());
        struct spawn_opts so = { .worker_path = worker, .run_id = run_id, .sandbox = &sb };
        struct cli_boxes boxes;
        cli_boxes_init(&boxes, &so, NULL);
        struct sigaction sa = { .sa_handler = on_signal };
        sigaction(SIGINT, &sa, NULL);
        sigaction(SIGTERM, &sa, NULL);
        sigaction(SIGHUP, &sa, NULL);
        struct monitor_serve ms = {
                .chan = b->chan, .boxes = &boxes.provider, .exit_fd = cli_boxes_exit_fd, .agent_dirfd = agent_dir,
                .broker_pidfd = b->pidfd, .stop = &stop_sig,
                .welcome_flags = (b->mode == BROKER_ROOTLESS ? CHAN_WELCOME_ROOTLESS : 0) |
                                 (b->mode == BROKER_UID0 ? CHAN_WELCOME_UID0 : 0),
        };
        int code = monitor_serve(&ms, &e);
        if (e)
                fprintf(stderr, "chidori: %s\n", err_msg(e));
        err_free(e);
        free(worker);
        monitor_broker_close(b);
        return code;
}

int main(int argc, char **argv)
{
        struct broker_spawn s = { .fd0 = 0, .fd1 = 1, .fd2 = 2, .config_fd = -1 };
        const char *user = NULL, *config = NULL, *files[8];
        int file_flags[8], nfiles = 0;
        bool box = false, show_outside = false, close_after_welcome = false, serve_flag = false;
        int i = 1;
        for (; i < argc && strcmp(argv[i], "--"); i++) {
                if (strcmp(argv[i], "--control") == 0)
                        s.test_no_lockdown = true;
                else if (strcmp(argv[i], "--require") == 0)
                        s.require = true;
                else if (strcmp(argv[i], "--box") == 0)
                        box = true;
                else if (strcmp(argv[i], "--close") == 0)
                        close_after_welcome = true;
                else if (strcmp(argv[i], "--serve") == 0)
                        serve_flag = true;
                else if (strcmp(argv[i], "--outside") == 0)
                        show_outside = true;
                else if (i + 1 < argc && strcmp(argv[i], "--state") == 0)
                        s.state_dir = argv[++i];
                else if (i + 1 < argc && strcmp(argv[i], "--workspace") == 0)
                        s.workspace = argv[++i];
                else if (i + 1 < argc && strcmp(argv[i], "--agent") == 0)
                        s.agent_dir = argv[++i];
                else if (i + 1 < argc && strcmp(argv[i], "--store-dir") == 0)
                        s.store_dir = argv[++i]; /* serve --store sqlite:PATH's folder */
                else if (i + 1 < argc && strcmp(argv[i], "--socket-dir") == 0)
                        s.store_socket_dir = argv[++i]; /* a PostgreSQL socket's folder */
                else if (i + 1 < argc && strcmp(argv[i], "--user") == 0)
                        user = argv[++i];
                else if (nfiles < 8 && i + 1 < argc && strcmp(argv[i], "--journal") == 0) {
                        file_flags[nfiles] = O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC;
                        files[nfiles++] = argv[++i];
                } else if (nfiles < 8 && i + 1 < argc && (!strcmp(argv[i], "--replay") || !strcmp(argv[i], "--fd"))) {
                        file_flags[nfiles] = O_RDONLY | O_CLOEXEC;
                        files[nfiles++] = argv[++i];
                } else if (nfiles < 8 && strcmp(argv[i], "--tty") == 0) {
                        file_flags[nfiles] = O_RDWR | O_NOCTTY | O_CLOEXEC;
                        files[nfiles++] = "/dev/tty";
                }
                else if (i + 1 < argc && strcmp(argv[i], "--config") == 0)
                        config = argv[++i];
                else {
                        fprintf(stderr, "start-broker: unknown option %s\n", argv[i]);
                        return 2;
                }
        }
        if (i >= argc) {
                fprintf(stderr, "usage: start-broker [options] -- ARG...\n");
                return 2;
        }
        struct err *e = NULL;
        if (monitor_broker_user(user, &s.uid, &s.gid, &e) < 0)
                die("broker user", e);
        struct box bx = { .pidfd = -1, .notify_fd = -1 };
        pid_t box_pid = box ? start_box(&bx) : 0;
        char mon[16], boxs[16];
        snprintf(mon, sizeof(mon), "%d", (int)getpid());
        snprintf(boxs, sizeof(boxs), "%d", (int)box_pid);
        char *bargv[32];
        int n = 0;
        bargv[n++] = "chidori-broker";
        if (s.test_no_lockdown)
                bargv[n++] = "--control";
        for (i++; i < argc && n < 31; i++)
                bargv[n++] = strcmp(argv[i], "@MONITOR") == 0 ? mon : strcmp(argv[i], "@BOX") == 0 ? boxs : argv[i];
        bargv[n] = NULL;
        s.argv = bargv;
        if (config) {
                /* A comma-separated list becomes the config blob on fd 4. */
                const char *strs[64];
                size_t ns = 0;
                char *dup = strdup(config);
                for (char *save = NULL, *w = strtok_r(dup, ",", &save); w && ns < 64; w = strtok_r(NULL, ",", &save))
                        strs[ns++] = w;
                if (chan_blob_create("config", strs, ns, &s.config_fd, &e) < 0)
                        die("config blob", e);
                free(dup);
        }
        int agent_dir = s.agent_dir ? open(s.agent_dir, O_PATH | O_DIRECTORY | O_CLOEXEC) : -1;
        int extra[8], nextra = 0;
        for (int k = 0; k < nfiles; k++) {
                int fd = open(files[k], file_flags[k], 0600);
                if (fd < 0) {
                        fprintf(stderr, "start-broker: open %s: %s\n", files[k], strerror(errno));
                        return 2;
                }
                extra[nextra++] = fd;
        }
        s.extra_fds = extra;
        s.n_extra = (size_t)nextra;
        struct broker b;
        if (monitor_start_broker(&s, &b, &e) < 0)
                die("start the broker", e);
        for (int k = 0; k < nextra; k++)
                close(extra[k]);
        fprintf(stderr, "start-broker: mode %s, uid %u%s%s\n",
                s.test_no_lockdown ? "control (no lockdown)" : b.mode == BROKER_ROOT ? "root"
                : b.mode == BROKER_ROOTLESS                  ? "rootless"
                                                             : "uid0",
                (unsigned)b.uid,
                b.notes[0] ? "; " : "", b.notes);
        if (serve_flag)
                return serve_run(&b, agent_dir);
        serve(&b, agent_dir, show_outside, box_pid, close_after_welcome);
        close(b.chan), b.chan = -1;
        int st = 0;
        while (waitpid(b.pid, &st, 0) < 0 && errno == EINTR)
                ;
        monitor_broker_close(&b);
        if (box_pid > 0) {
                syscall(SYS_pidfd_send_signal, bx.pidfd, SIGKILL, NULL, 0);
                while (waitpid(box_pid, NULL, 0) < 0 && errno == EINTR)
                        ;
                box_close(&bx);
        }
        if (WIFSIGNALED(st)) {
                const char *sn = sigabbrev_np(WTERMSIG(st));
                fprintf(stderr, "start-broker: broker killed by SIG%s\n", sn ? sn : "?");
                return 128 + WTERMSIG(st);
        }
        fprintf(stderr, "start-broker: broker exited %d\n", WEXITSTATUS(st));
        return WEXITSTATUS(st);
}
