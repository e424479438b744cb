/* cli/doctor.c — `chidori doctor`: which isolation layers this host can
 * apply, one line per layer, found by trying each (in a throwaway child), not
 * by reading version numbers alone. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/suggest.h"
#include "common/cleanup.h"
#include "common/dlib.h"
#include "sandbox/cgroup/cgroup.h"
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
        bool core;
        bool ok;
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

static void probe_ns(struct probe *p, const char *name, int flag, bool core)
{
        p->layer = name;
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

static void probe_cgroup(struct probe *cg)
{
        cg->layer = "cgroup (memory ceiling)";
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

static void doctor_help(void)
{
        printf("Usage: chidori doctor [--require] [--seccomp-table]\n\n"
               "Report which isolation layers this host can apply, one line per layer, and why\n"
               "a layer is unavailable.  --require exits 78 when a core layer (user, pid, mount\n"
               "or net namespace, seccomp, Landlock on kernels that have it) is missing.\n"
               "--seccomp-table prints the seccomp allowlists with the reason for each syscall.\n"
               "It also says where the worker, the engine and network libraries and esbuild\n"
               "were found (esbuild bundles ES-module and TypeScript agents).\n"
               "Environment: CHIDORI_CGROUP_PARENT (where run cgroups go), CHIDORI_WORKER,\n"
               "CHIDORI_ENGINE_LIB, CHIDORI_NET_LIB, CHIDORI_ESBUILD (override those paths).\n");
}

int cmd_doctor(int argc, char **argv)
{
        bool require = false;
        static const struct option longopts[] = {
                { "require", no_argument, NULL, 'r' },
                { "seccomp-table", no_argument, NULL, 's' },
                { "help", no_argument, NULL, 'h' },
                { NULL, 0, NULL, 0 },
        };
        optind = 1;
        opterr = 0;
        int c;
        while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
                if (c == 'r')
                        require = true;
                else if (c == 's')
                        return print_tables();
                else if (c == 'h') {
                        doctor_help();
                        return EXIT_OK;
                } else {
                        return cli_bad_option("doctor", argc, argv, longopts);
                }
        }
        struct utsname u;
        uname(&u);
        printf("chidori %s doctor — kernel %s %s, running as uid %d\n", CHIDORI_VERSION, u.release, u.machine,
               (int)getuid());

        struct probe pr[16];
        int n = 0;
        probe_ns(&pr[n++], "user namespace", 0, true);
        probe_ns(&pr[n++], "pid namespace", CLONE_NEWPID, true);
        probe_ns(&pr[n++], "mount namespace", CLONE_NEWNS, true);
        probe_ns(&pr[n++], "net namespace", CLONE_NEWNET, true);
        probe_ns(&pr[n++], "ipc namespace", CLONE_NEWIPC, false);
        probe_ns(&pr[n++], "uts namespace", CLONE_NEWUTS, false);
        probe_ns(&pr[n++], "cgroup namespace", CLONE_NEWCGROUP, false);

        probe_seccomp(&pr[n++]);
        probe_landlock(&pr[n++]);
        probe_cgroup(&pr[n++]);

        int missing = 0;
        for (int i = 0; i < n; i++) {
                printf("  %-26s %-4s %s\n", pr[i].layer, pr[i].ok ? "ok" : pr[i].core ? "FAIL" : "no",
                       pr[i].detail);
                if (!pr[i].ok && pr[i].core)
                        missing++;
        }
        printf("  %-26s %-4s %s\n", "capabilities", "ok", "dropped with libcap in every box (no kernel support needed)");
        printf("  %-26s %-4s %s\n", "no_new_privs, rlimits", "ok", "always applied");
        print_files();
        if (missing)
                printf("%d core layer%s unavailable: `chidori run --require-sandbox` would refuse to run.\n", missing,
                       missing == 1 ? "" : "s");
        else
                printf("All core layers are available.\n");
        return require && missing ? EXIT_LAYER_UNAVAILABLE : EXIT_OK;
}
