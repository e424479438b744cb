/* cli/doctor.c — `chidori doctor`: which isolation layers this host can
 * apply, one line per layer, found by trying each (in a throwaway child), not
 * by reading version numbers alone. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <linux/seccomp.h>
#include <linux/sched.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "cli/cli.h"
#include "cli/suggest.h"
#include "common/cleanup.h"
#include "common/dlib.h"
#include "cli/brokeruser.h"
#include "monitor/broker.h"
#include "privhelper/proto.h"
#include "cli/handover.h"
#include "sandbox/cgroup/cgroup.h"
#include "sandbox/idmap.h"
#include "sandbox/landlock.h"
#include "sandbox/sandbox.h"
#include "sandbox/seccomp.h"

static void emit_row(const char *name, const char *why, void *arg)
{
        (void)arg;
        printf("| `%s` | %s |\n", name, why);
}

/* One line per file chidori needs besides itself: where it was found (the
 * same search a run makes), or what is lost without it and how to fix it. */
static void print_files(void)
{
        static const struct {
                const char *name, *env, *label, *use;
                int mode;
        } f[] = {
                { "chidori-worker", "CHIDORI_WORKER", "worker", "runs every agent", X_OK },
                { "libchidori-engine.so", "CHIDORI_ENGINE_LIB", "engine library", "--no-isolate", R_OK },
                { "libchidori-net.so", "CHIDORI_NET_LIB", "network library", "fetch and chidori.prompt", R_OK },
        };
        for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++) {
                const char *env = getenv(f[i].env);
                char *p = !(env && *env)                  ? dlib_find(f[i].name, f[i].mode)
                          : access(env, f[i].mode) == 0 ? strdup(env)
                                                          : NULL;
                if (p)
                        printf("  %-26s %-4s %s (%s)\n", f[i].label, "ok", p, f[i].use);
                else if (env && *env)
                        printf("  %-26s %-4s %s=%s is not usable; %s needs it: fix or unset %s\n", f[i].label, "FAIL",
                               f[i].env, env, f[i].use, f[i].env);
                else
                        printf("  %-26s %-4s %s not found in %s; %s needs it: reinstall chidori (make install) "
                               "or set %s=/path/to/%s\n",
                               f[i].label, "FAIL", f[i].name, dlib_dirs_text(), f[i].use, f[i].env, f[i].name);
                free(p);
        }
        char *e = agent_find_esbuild();
        if (e)
                printf("  %-26s %-4s %s (bundles ES-module and TypeScript agents)\n", "esbuild", "ok", e);
        else
                printf("  %-26s %-4s not found: ES-module (.mjs) and TypeScript (.ts) agents cannot run (plain .js and "
                       "CommonJS agents can); install esbuild on PATH, run 'make deps && make install' from the "
                       "source tree, or set CHIDORI_ESBUILD=/path/to/esbuild\n",
                       "esbuild", "no");
        free(e);
}

static int print_tables(void)
{
        static const struct {
                enum seccomp_profile p;
                const char *title;
        } t[] = {
                { SECCOMP_STAGE2_WORKER, "engine worker (stage 2, installed by the worker itself)" },
                { SECCOMP_STAGE1_WORKER, "engine worker start-up (stage 1: stage 2 plus the loader's needs)" },
                { SECCOMP_LAUNCH, "chidori launch (ordinary programs; with --seccomp-errno the same list, "
                                  "other calls fail with EPERM)" },
        };
        for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
                printf("### %s\n\n| syscall | why |\n| --- | --- |\n", t[i].title);
                seccomp_dump_table(t[i].p, emit_row, NULL);
                printf("\n");
        }
        return EXIT_OK;
}

struct probe {
        const char *layer;
        const char *key;        /* the --json name */
        bool core;
        bool ok;
        bool degraded;          /* applies, with less than it would elsewhere (the reason in detail) */
        char detail[512];
};

static void read_line(const char *path, char *buf, size_t len)
{
        buf[0] = '\0';
        FILE *f = fopen(path, "re");
        if (!f)
                return;
        if (fgets(buf, (int)len, f))
                buf[strcspn(buf, "\n")] = '\0';
        fclose(f);
}

/* Try unshare(flags) in a child; returns 0 or the errno it failed with. */
static int try_unshare(int flags)
{
        int p[2];
        if (pipe2(p, O_CLOEXEC) < 0)
                return errno;
        pid_t pid = fork();
        if (pid == 0) {
                int e = unshare(flags) < 0 ? errno : 0;
                if (write(p[1], &e, sizeof(e)) < 0)
                        _exit(1);
                _exit(0);
        }
        close(p[1]);
        int e = EIO;
        if (pid < 0 || read(p[0], &e, sizeof(e)) != sizeof(e))
                e = pid < 0 ? errno : EIO;
        close(p[0]);
        if (pid > 0)
                waitpid(pid, NULL, 0);
        return e;
}

static void probe_ns(struct probe *p, const char *name, const char *key, int flag, bool core)
{
        p->layer = name;
        p->key = key;
        p->core = core;
        int e = try_unshare(CLONE_NEWUSER | flag);
        p->ok = e == 0;
        if (p->ok) {
                snprintf(p->detail, sizeof(p->detail), "available (created inside a new user namespace)");
                return;
        }
        char sysctl[32] = "";
        read_line("/proc/sys/kernel/unprivileged_userns_clone", sysctl, sizeof(sysctl));
        char maxns[32] = "";
        read_line("/proc/sys/user/max_user_namespaces", maxns, sizeof(maxns));
        snprintf(p->detail, sizeof(p->detail), "unavailable: %s (kernel.unprivileged_userns_clone=%s, "
                 "user.max_user_namespaces=%s)", strerror(e), sysctl[0] ? sysctl : "n/a", maxns[0] ? maxns : "n/a");
}

static void probe_seccomp(struct probe *s)
{
        s->layer = "seccomp";
        s->key = "seccomp";
        s->core = true;
        char actions[256] = "";
        read_line("/proc/sys/kernel/seccomp/actions_avail", actions, sizeof(actions));
        s->ok = prctl(PR_GET_SECCOMP) >= 0 && actions[0];
        bool notif = strstr(actions, "user_notif") != NULL;
        snprintf(s->detail, sizeof(s->detail), "%s (actions: %s)%s",
                 s->ok ? "available, allowlist filters" : "unavailable", actions[0] ? actions : "unknown",
                 s->ok ? (notif ? "; blocked syscalls are named through user notification"
                                : "; no user notification: blocked syscalls kill without a name")
                       : "");
}

static void probe_landlock(struct probe *l)
{
        l->layer = "landlock";
        l->key = "landlock";
        char why[128] = "";
        int abi = landlock_abi(why, sizeof(why));
        l->ok = abi > 0;
        l->core = true;
        if (l->ok)
                snprintf(l->detail, sizeof(l->detail), "available, ABI %d (%s%s%s)", abi, "filesystem",
                         abi >= 4 ? ", TCP bind/connect" : "", abi >= 6 ? ", abstract unix and signal scoping" : "");
        else {
                snprintf(l->detail, sizeof(l->detail), "unavailable: %s", why);
                /* A kernel without Landlock built in is not a failure of --require. */
                l->core = strstr(why, "not built") == NULL && strstr(why, "ENOSYS") == NULL;
        }
}

struct cg_state {
        int version;
        bool writable;
};

static void probe_cgroup(struct probe *cg, struct cg_state *cs)
{
        cg->layer = "cgroup (memory ceiling)";
        cg->key = "cgroup";
        cg->core = true; /* --require-sandbox refuses to run without it */
        struct cgroup_host *h = NULL;
        struct err *err = NULL;
        if (cgroup_host_detect(getenv("CHIDORI_CGROUP_PARENT"), &h, &err) < 0) {
                cg->ok = false;
                snprintf(cg->detail, sizeof(cg->detail), "unavailable: %s", err_msg(err));
                err_free(err);
        } else {
                struct cgroup_info info;
                cgroup_host_describe(h, &info);
                cg->ok = info.version > 0;
                cs->version = info.version;
                cs->writable = info.delegated;
                size_t k = (size_t)snprintf(cg->detail, sizeof(cg->detail), "%s",
                                            info.version == 2   ? "cgroup v2"
                                            : info.version == 1 ? "cgroup v1"
                                                                : "none");
                for (int i = 0; i < CGROUP_CTL_MAX && k < sizeof(cg->detail); i++)
                        k += (size_t)snprintf(cg->detail + k, sizeof(cg->detail) - k, "%s %s %s", i ? "," : ";",
                                              cgroup_ctl_name((enum cgroup_ctl)i),
                                              info.ctl[i].usable ? "usable" : "not usable");
                if (k < sizeof(cg->detail))
                        k += (size_t)snprintf(cg->detail + k, sizeof(cg->detail) - k, "; delegation %s; %s",
                                              info.delegated ? "yes" : "no", info.detail);
                cgroup_host_free(h);
        }
}

/* The real path: a box started as a run starts its worker (clone3 with the
 * namespaces, the id maps written, the cgroup leaf or its fallback, the
 * root filesystem with a fresh /proc, Landlock, seccomp), running
 * /usr/bin/true.  0 with *r filled (the box has exited), or an exit code
 * with why. */
static int probe_box(struct sandbox_run *r, bool *had_cg, char *why, size_t len)
{
        const char *prog = access("/usr/bin/true", X_OK) == 0 ? "/usr/bin/true" : "/bin/true";
        char *argv[] = { (char *)"true", NULL };
        char *envp[] = { (char *)"PATH=/usr/bin:/bin", NULL };
        int null = open("/dev/null", O_RDWR | O_CLOEXEC);
        struct box_opts bo = {
                .program = prog, .argv = argv, .envp = envp, .fd0 = null, .fd1 = null, .fd2 = null,
                .frame_fd = -1, .stage2_fd = -1,
        };
        struct sandbox_opts so;
        sandbox_opts_init(&so);
        so.cgroup_parent = getenv("CHIDORI_CGROUP_PARENT");
        char run_id[40];
        unsigned char rb[4] = { 0 };
        if (getrandom(rb, sizeof(rb), 0) != (ssize_t)sizeof(rb))
                memset(rb, 0, sizeof(rb));
        snprintf(run_id, sizeof(run_id), "doctor-%02x%02x%02x%02x", rb[0], rb[1], rb[2], rb[3]);
        struct err *err = NULL;
        int code = sandbox_start(&so, &bo, run_id, r, &err);
        if (null >= 0)
                close(null);
        if (code != 0) {
                snprintf(why, len, "%s", err_msg(err));
                err_free(err);
                return code;
        }
        *had_cg = r->cg != NULL;
        int st = 0;
        while (waitpid(r->box.pid, &st, 0) < 0 && errno == EINTR)
                ;
        sandbox_finish(r, NULL);
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
                snprintf(why, len, "the box started but %s did not exit 0 (status %d)", prog, st);
                return EXIT_PROTOCOL;
        }
        return 0;
}

/* The namespace layers and the layers the child applies, as the real box
 * got them (over the unshare probes: a namespace that unshare can make may
 * still fail in a box, e.g. its maps or its /proc). */
static void apply_box(struct probe *pr, int n, bool started, const struct sandbox_run *r, const char *why)
{
        static const struct {
                const char *key;
                enum box_layer l;
        } m[] = {
                { "user", LAYER_USERNS }, { "pid", LAYER_PIDNS },     { "mount", LAYER_MNTNS },
                { "net", LAYER_NETNS },   { "ipc", LAYER_IPCNS },     { "uts", LAYER_UTSNS },
                { "cgroupns", LAYER_CGROUPNS }, { "seccomp", LAYER_SECCOMP }, { "landlock", LAYER_LANDLOCK },
        };
        for (int i = 0; i < n; i++)
                for (size_t k = 0; k < sizeof(m) / sizeof(m[0]); k++) {
                        if (strcmp(pr[i].key, m[k].key) != 0)
                                continue;
                        if (!started) {
                                pr[i].ok = false;
                                snprintf(pr[i].detail, sizeof(pr[i].detail), "no box could start: %s", why);
                        } else if (!(r->box.applied & (1u << m[k].l))) {
                                if (pr[i].ok || r->box.skipped[m[k].l][0]) {
                                        pr[i].ok = false;
                                        snprintf(pr[i].detail, sizeof(pr[i].detail), "not applied in a real box: %s",
                                                 r->box.skipped[m[k].l][0] ? r->box.skipped[m[k].l] : "unknown");
                                }
                        }
                }
}

/* Who keeps root while a run goes on (decision 163): as root, the small
 * helper (the monitor runs as uid 65532), or the monitor itself. */
static void probe_monitor(struct probe *p, uid_t buid)
{
        p->layer = "monitor";
        p->key = "monitor";
        const char *v = getenv("CHIDORI_PRIVSEP");
        p->core = v && strcmp(v, "1") == 0;
        p->ok = true;
        if (geteuid() != 0) {
                snprintf(p->detail, sizeof(p->detail), "runs as you (uid %u); root is not involved", (unsigned)geteuid());
                return;
        }
        char why[200] = "";
        int ps = handover_privsep(buid, why, sizeof(why));
        struct err *e = NULL;
        char *helper = ps > 0 ? handover_find_privhelper(&e) : NULL;
        if (ps > 0 && helper && access(helper, X_OK) != 0) {
                p->ok = false;
                snprintf(p->detail, sizeof(p->detail), "cannot start chidori-privhelper: %.300s: %s (set "
                         "CHIDORI_PRIVHELPER to its path, or reinstall)", helper, strerror(errno));
        } else if (ps > 0 && helper)
                snprintf(p->detail, sizeof(p->detail), "uid %u in its own user namespace; root stays in %.300s",
                         PRIV_SUPERVISOR_ID, helper);
        else if (ps > 0) {
                p->ok = false;
                snprintf(p->detail, sizeof(p->detail), "cannot start: %.400s", err_msg(e));
        } else if (ps < 0) {
                p->ok = false;
                snprintf(p->detail, sizeof(p->detail), "CHIDORI_PRIVSEP=1 but not possible here: %.300s", why);
        } else {
                p->degraded = true;
                snprintf(p->detail, sizeof(p->detail), "keeps root: %.300s",
                         why[0] ? why : "CHIDORI_PRIVSEP=0 declines the privileged helper");
        }
        free(helper);
        err_free(e);
}

/* clone3 as the broker's start makes it; 0 or the errno. */
static int try_clone3(uint64_t flags)
{
        struct clone_args a = { 0 };
        a.flags = flags;
        a.exit_signal = SIGCHLD;
        pid_t p = (pid_t)syscall(SYS_clone3, &a, sizeof(a));
        if (p == 0)
                _exit(0);
        if (p < 0)
                return errno;
        while (waitpid(p, NULL, 0) < 0 && errno == EINTR)
                ;
        return 0;
}

static void doctor_help(void)
{
        printf("Usage: chidori doctor [--require] [--json] [--seccomp-table]\n\n"
               "Report which isolation layers this host can apply, one line per layer, and why\n"
               "a layer is unavailable: it starts a real box, as a run does (namespaces, id maps,\n"
               "cgroup, root filesystem, Landlock, seccomp), and says what the box got.\n"
               "--require exits 78 when a core layer (user, pid, mount or net namespace, seccomp,\n"
               "Landlock on kernels that have it, the memory ceiling's cgroup) is missing.\n"
               "--json prints the same as one JSON object (docs/cli.md, \"doctor --json\").\n"
               "--seccomp-table prints the seccomp allowlists with the reason for each syscall.\n"
               "It also says where the worker, the engine and network libraries and esbuild\n"
               "were found (esbuild bundles ES-module and TypeScript agents).\n"
               "Environment: CHIDORI_CGROUP_PARENT (where run cgroups go), CHIDORI_WORKER,\n"
               "CHIDORI_ENGINE_LIB, CHIDORI_NET_LIB, CHIDORI_ESBUILD (override those paths).\n");
}

static const char *state_of(const struct probe *p)
{
        return !p->ok ? "missing" : p->degraded ? "degraded" : "ok";
}

static int print_json(const struct utsname *u, const struct probe *pr, int n, int missing, int code,
                      const char *mapping, unsigned outside, const char *map_why, bool box_ok, const char *box_why,
                      const struct cg_state *cs)
{
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "version", CHIDORI_VERSION);
        cJSON_AddStringToObject(o, "kernel", u->release);
        cJSON_AddStringToObject(o, "machine", u->machine);
        cJSON_AddNumberToObject(o, "uid", (double)getuid());
        cJSON *m = cJSON_AddObjectToObject(o, "mapping");
        cJSON_AddStringToObject(m, "box_root", mapping);
        if (strcmp(mapping, "none") != 0)
                cJSON_AddNumberToObject(m, "outside_uid", (double)outside);
        else
                cJSON_AddNullToObject(m, "outside_uid");
        cJSON_AddStringToObject(m, "reason", map_why);
        cJSON *b = cJSON_AddObjectToObject(o, "box");
        cJSON_AddBoolToObject(b, "started", box_ok);
        if (box_ok)
                cJSON_AddNullToObject(b, "error");
        else
                cJSON_AddStringToObject(b, "error", box_why);
        cJSON *ls = cJSON_AddArrayToObject(o, "layers");
        for (int i = 0; i < n; i++) {
                cJSON *l = cJSON_CreateObject();
                cJSON_AddStringToObject(l, "name", pr[i].key);
                cJSON_AddStringToObject(l, "state", state_of(&pr[i]));
                cJSON_AddBoolToObject(l, "core", pr[i].core);
                cJSON_AddStringToObject(l, "reason", pr[i].detail);
                cJSON_AddItemToArray(ls, l);
        }
        cJSON *c = cJSON_AddObjectToObject(o, "cgroup");
        cJSON_AddNumberToObject(c, "version", cs->version);
        cJSON_AddBoolToObject(c, "writable", cs->writable);
        cJSON_AddNumberToObject(o, "missing_core", missing);
        cJSON_AddNumberToObject(o, "exit", code);
        char *text = cJSON_PrintUnformatted(o);
        cJSON_Delete(o);
        if (!text)
                return EXIT_PROTOCOL;
        printf("%s\n", text);
        free(text);
        return code;
}

int cmd_doctor(int argc, char **argv)
{
        bool require = false, json = false;
        static const struct option longopts[] = {
                { "require", no_argument, NULL, 'r' },
                { "json", no_argument, NULL, 'j' },
                { "seccomp-table", no_argument, NULL, 's' },
                { "help", no_argument, NULL, 'h' },
                { NULL, 0, NULL, 0 },
        };
        optind = 1;
        opterr = 0;
        int c;
        bool tables = false;
        while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
                if (c == 'r')
                        require = true;
                else if (c == 'j')
                        json = true;
                else if (c == 's')
                        tables = true;
                else if (c == 'h') {
                        doctor_help();
                        return EXIT_OK;
                } else {
                        return cli_bad_option("doctor", argc, argv, longopts);
                }
        }
        if (optind < argc) {
                fprintf(stderr, "chidori: doctor takes no arguments (got '%s')\nTry 'chidori doctor --help'.\n",
                        argv[optind]);
                return EXIT_USAGE;
        }
        if (tables)
                return print_tables();
        struct utsname u;
        uname(&u);
        if (!json)
                printf("chidori %s doctor — kernel %s %s, running as uid %d\n", CHIDORI_VERSION, u.release,
                       u.machine, (int)getuid());

        struct probe pr[16];
        memset(pr, 0, sizeof(pr));
        int n = 0;
        probe_ns(&pr[n++], "user namespace", "user", 0, true);
        probe_ns(&pr[n++], "pid namespace", "pid", CLONE_NEWPID, true);
        probe_ns(&pr[n++], "mount namespace", "mount", CLONE_NEWNS, true);
        probe_ns(&pr[n++], "net namespace", "net", CLONE_NEWNET, true);
        probe_ns(&pr[n++], "ipc namespace", "ipc", CLONE_NEWIPC, false);
        probe_ns(&pr[n++], "uts namespace", "uts", CLONE_NEWUTS, false);
        probe_ns(&pr[n++], "cgroup namespace", "cgroupns", CLONE_NEWCGROUP, false);

        probe_seccomp(&pr[n++]);
        probe_landlock(&pr[n++]);
        struct cg_state cs = { 0, false };
        probe_cgroup(&pr[n++], &cs);

        /* The id mapping a box (and the broker) will get. */
        char map_why[192] = "", broker_why[192] = "";
        enum idmap_root mp = idmap_root_mapping(65534, map_why, sizeof(map_why));
        uid_t buid = BROKER_DEFAULT_UID;
        gid_t bgid;
        struct err *berr = NULL;
        if (getuid() == 0 && monitor_broker_user(NULL, &buid, &bgid, &berr) < 0)
                err_free(berr);
        enum idmap_root bmp = idmap_root_mapping(buid, broker_why, sizeof(broker_why));
        const char *mapping = mp == IDMAP_OTHER ? "65534" : mp == IDMAP_SELF ? "self" : "none";
        unsigned outside = mp == IDMAP_OTHER ? 65534u : (unsigned)getuid();
        char tmp[192];
        snprintf(tmp, sizeof(tmp), "%s", map_why);
        if (mp == IDMAP_OTHER)
                snprintf(map_why, sizeof(map_why), "uid 65534 outside (root with CAP_SETUID/CAP_SETGID)");
        else if (mp == IDMAP_SELF && getuid() != 0)
                snprintf(map_why, sizeof(map_why), "uid %u outside, the rootless mapping", outside);
        else if (mp == IDMAP_SELF)
                snprintf(map_why, sizeof(map_why), "uid 0 outside, the rootless mapping (%.150s)", tmp);
        else
                snprintf(map_why, sizeof(map_why), "nothing: %.150s", tmp);
        struct sandbox_run r;
        memset(&r, 0, sizeof(r));
        char box_why[600] = "";
        bool had_cg = false;
        bool box_ok = probe_box(&r, &had_cg, box_why, sizeof(box_why)) == 0;
        apply_box(pr, n, box_ok, &r, box_why);
        if (mp == IDMAP_SELF && getuid() == 0)
                for (int i = 0; i < n; i++)
                        if (strcmp(pr[i].key, "user") == 0 && pr[i].ok) {
                                pr[i].degraded = true;
                                snprintf(pr[i].detail, sizeof(pr[i].detail), "applied; box root is %s", map_why);
                        }
        /* The broker: its own uid (root with CAP_SETUID/CAP_SETGID), or uid 0
         * of its own user namespace, or nothing can start it. */
        struct probe *bp = &pr[n++];
        bp->layer = "broker";
        bp->key = "broker";
        bp->core = true;
        bp->ok = bmp != IDMAP_NONE;
        bp->degraded = getuid() == 0 && bmp == IDMAP_SELF;
        int ce = bmp == IDMAP_NONE ? 0
                                   : try_clone3(CLONE_NEWPID | CLONE_NEWNS | (bmp == IDMAP_OTHER ? 0 : CLONE_NEWUSER));
        if (ce) {
                bp->ok = false;
                bp->degraded = false;
                snprintf(bp->detail, sizeof(bp->detail), "cannot start: clone3 of its namespaces: %s%s", strerror(ce),
                         ce == ENOSYS || ce == EPERM ? SECCOMP_PROFILE_HINT : "");
        } else if (bmp == IDMAP_OTHER)
                snprintf(bp->detail, sizeof(bp->detail), "runs as uid %u, no capabilities", (unsigned)buid);
        else if (bmp == IDMAP_SELF && getuid() == 0)
                snprintf(bp->detail, sizeof(bp->detail), "uid 0 of its own user namespace, no capabilities (%s)",
                         broker_why);
        else if (bmp == IDMAP_SELF)
                snprintf(bp->detail, sizeof(bp->detail), "your uid in its own user namespace, no capabilities");
        else
                snprintf(bp->detail, sizeof(bp->detail), "cannot start: %s; run as a non-root user (the rootless "
                         "path needs no capability) or grant CAP_SETUID and CAP_SETGID", broker_why);
        probe_monitor(&pr[n++], buid);
        for (int i = 0; i < n; i++)
                if (strcmp(pr[i].key, "cgroup") == 0 && !pr[i].ok) {
                        size_t k = strlen(pr[i].detail);
                        snprintf(pr[i].detail + k, sizeof(pr[i].detail) - k,
                                 "; without --require-sandbox a run's memory ceiling is held by the watchdog");
                }
        if (box_ok)
                for (int i = 0; i < n; i++)
                        if (strcmp(pr[i].key, "cgroup") == 0 && pr[i].ok && !had_cg) {
                                pr[i].degraded = true;
                                size_t k = strlen(pr[i].detail);
                                snprintf(pr[i].detail + k, sizeof(pr[i].detail) - k,
                                         "; a run's box got no cgroup leaf: the memory watchdog holds the ceiling");
                        }

        int missing = 0;
        for (int i = 0; i < n; i++)
                if (!pr[i].ok && pr[i].core)
                        missing++;
        if (!box_ok)
                missing++;
        int code = require && missing ? EXIT_LAYER_UNAVAILABLE : EXIT_OK;
        if (json)
                return print_json(&u, pr, n, missing, code, mapping, outside, map_why, box_ok, box_why, &cs);
        printf("  %-26s %-4s %s\n", "box (a real start)", box_ok ? "ok" : "FAIL",
               box_ok ? "started /usr/bin/true in a box as a run starts its worker" : box_why);
        printf("  %-26s %-4s box root -> %s\n", "id mapping", mp == IDMAP_NONE ? "FAIL" : "ok", map_why);
        for (int i = 0; i < n; i++)
                printf("  %-26s %-4s %s\n", pr[i].layer, pr[i].ok ? "ok" : pr[i].core ? "FAIL" : "no",
                       pr[i].detail);
        printf("  %-26s %-4s %s\n", "capabilities", box_ok ? "ok" : "FAIL",
               box_ok ? "dropped with libcap in every box (no kernel support needed)" : "no box could start");
        printf("  %-26s %-4s %s\n", "no_new_privs, rlimits", box_ok ? "ok" : "FAIL",
               box_ok ? "always applied" : "no box could start");
        print_files();
        if (missing)
                printf("%d core layer%s unavailable: `chidori run --require-sandbox` would refuse to run.\n", missing,
                       missing == 1 ? "" : "s");
        else
                printf("All core layers are available.\n");
        return code;
}
