/* sandbox/sandbox.c — the sandbox options' defaults, and starting and
 * supervising a box (limits, filters, deadline kill, seccomp notifications,
 * endings). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/exit.h"
#include "common/util.h"
#include "sandbox/cgroup/cgroup.h"
#include "sandbox/memwatch.h"
#include "sandbox/sandbox.h"
#include "sandbox/tz.h"

void sandbox_opts_init(struct sandbox_opts *o)
{
        memset(o, 0, sizeof(*o));
        o->nofile = 256;
        o->jit = -1;
        o->memory_bytes = 512ull << 20;
        o->pids_max = 64;
}

/* The filters are compiled at build time, twice: with user-notification
 * verdicts, and with kill-process ones for a kernel without seccomp user
 * notification (before 5.0). */
/* Set once this process has entered the cgroup place of the run that
 * started it (sandbox/child.c, cli/toolbox.c): its boxes' cgroups go below. */
bool launcher_cgroup_entered;

static bool kernel_has_user_notif(void)
{
        static int known = -1;
        if (known < 0) {
                char buf[256] = "";
                FILE *f = fopen("/proc/sys/kernel/seccomp/actions_avail", "re");
                if (f) {
                        if (!fgets(buf, sizeof(buf), f))
                                buf[0] = '\0';
                        fclose(f);
                }
                known = strstr(buf, "user_notif") != NULL;
        }
        return known;
}

static int get_filter(enum seccomp_profile p, bool jit, const struct seccomp_prog **ret, struct err **err)
{
        (void)err;
        *ret = kernel_has_user_notif() ? &seccomp_prebuilt[p][jit] : &seccomp_prebuilt_kill[p][jit];
        return 0;
}

static int stage2_memfd(bool jit, struct err **err)
{
        const struct seccomp_prog *p;
        if (get_filter(SECCOMP_STAGE2_WORKER, jit, &p, err) < 0)
                return -1;
        int fd = memfd_create("chidori-stage2", MFD_CLOEXEC | MFD_ALLOW_SEALING);
        if (fd < 0)
                return err_set(err, errno, "memfd_create");
        size_t len = p->len * sizeof(*p->insns);
        if (write(fd, p->insns, len) != (ssize_t)len || lseek(fd, 0, SEEK_SET) < 0 ||
            fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_GROW | F_SEAL_SHRINK | F_SEAL_SEAL) < 0) {
                int e = errno;
                close(fd);
                return err_set(err, e, "write the stage-2 filter");
        }
        return fd;
}

char **sandbox_worker_env(bool jit, bool stage2, const char *tz, bool pooled)
{
        static char *env[9];
        static const char *pass[] = { "ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS" };
        static char buf[3][1024], tzbuf[TZ_NAME_MAX + 4];
        size_t n = 0;
        env[n++] = "LANG=C.UTF-8";
        /* A fixed zone: ICU takes it from TZ instead of listing the host's
         * zoneinfo, which the filter denies (sandbox/tz.h). */
        snprintf(tzbuf, sizeof(tzbuf), "TZ=%s", tz ? tz : TZ_DEFAULT);
        env[n++] = tzbuf;
        if (!jit)
                env[n++] = "JSC_useJIT=false";
        if (stage2)
                env[n++] = "CHIDORI_STAGE2_FD=4";
        if (pooled)
                env[n++] = "CHIDORI_POOLED=1";
        /* The sanitizer variables pass through: sanitizer builds' test runs need them. */
        for (size_t i = 0; i < ARRAY_SIZE(pass); i++) {
                const char *v = getenv(pass[i]);
                if (v && snprintf(buf[i], sizeof(buf[i]), "%s=%s", pass[i], v) < (int)sizeof(buf[i]))
                        env[n++] = buf[i];
        }
        env[n] = NULL;
        return env;
}

/* The cgroup host, detected once per launcher process. */
static struct cgroup_host *cg_host;

static void cg_host_free(void)
{
        cgroup_host_free(cg_host);
        cg_host = NULL;
}

static int cg_host_get(const struct sandbox_opts *o, struct err **err)
{
        if (cg_host) /* once per process; a nested run or tool lives in its caller's budget */
                return 0;
        if (cgroup_host_detect(launcher_cgroup_entered ? NULL : o->cgroup_parent, &cg_host, err) < 0)
                return -1;
        atexit(cg_host_free);
        if (cgroup_host_version(cg_host) > 0)
                cgroup_cleanup_stale(cg_host, NULL);
        return 0;
}

void sandbox_cgroup_early(const struct sandbox_opts *o)
{
        struct err *e = NULL;
        struct cgroup_info info = { 0 };
        if (!(o->disable & (1u << LAYER_CGROUP)) && !o->cgroup_below && cg_host_get(o, &e) == 0)
                cgroup_host_describe(cg_host, &info);
        if (info.version == 2 && info.launcher_move) /* errors: the first run meets them */
                cgroup_host_prepare(cg_host, NULL, &e);
        err_free(e);
}

static int cg_attach(void *arg, pid_t pid, struct err **err)
{
        return cgroup_run_attach(arg, pid, err);
}

/* Whether RLIMIT_NPROC can stand in for pids.max: NULL if so, else why not.
 * Since Linux 5.14 the count behind it is per user namespace and uid
 * (ucounts), and the box has a user namespace of its own with one uid in it:
 * the count is the box's tasks (threads included, as pids.max counts them).
 * Without that namespace it would count every process of the uid, and would
 * not bind root at all. */
static const char *nproc_unavailable(const struct sandbox_opts *o)
{
        if (o->disable & (1u << LAYER_RLIMITS))
                return "the rlimits layer that would set RLIMIT_NPROC is disabled by --unsafe-disable";
        if (o->disable & (1u << LAYER_USERNS))
                return "RLIMIT_NPROC counts per box only in the box's own user namespace, disabled by --unsafe-disable";
        struct utsname u;
        int maj = 0, min = 0;
        if (uname(&u) == 0 && sscanf(u.release, "%d.%d", &maj, &min) == 2 && (maj > 5 || (maj == 5 && min >= 14)))
                return NULL;
        return "before Linux 5.14 RLIMIT_NPROC counts every process of the uid, not the box's";
}

/* How the run's limits are held: by the cgroup leaf, or by the fallbacks
 * (docs/sandbox.md, "Limits without a cgroup"). */
struct limits_plan {
        struct cgroup_limits cg;  /* what the leaf holds */
        uint64_t watch_memory;    /* the watchdog's limit, 0 = none */
        char why[200];            /* why the cgroup holds less than asked, "" if it holds all */
};

static int unavailable(struct err **err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int unavailable(struct err **err, const char *fmt, ...)
{
        char msg[600];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        err_setc(err, BOX_E_LAYER, 0, "sandbox layer unavailable: %s", msg);
        return EXIT_LAYER_UNAVAILABLE;
}

/* The limits the cgroup does not hold: each one's fallback, or exit 78 when
 * the user asked for it and it has none. */
static int plan_fallbacks(const struct sandbox_opts *o, struct box_opts *bo, struct limits_plan *p, struct err **err)
{
        if (o->memory_bytes && !p->cg.memory_bytes)
                p->watch_memory = o->memory_bytes;
        if (!p->cg.pids_max) {
                const char *no = nproc_unavailable(o);
                if (!no) {
                        bo->nproc = (long)o->pids_max;
                        bo->nproc_required = o->set & SB_SET_PIDS;
                } else if (o->set & SB_SET_PIDS) {
                        return unavailable(err, "--pids %llu (no cgroup pids.max: %s; %s)",
                                           (unsigned long long)o->pids_max, p->why, no);
                } /* else the default goes unheld: "pids: none" in the banner */
        }
        if (o->cpus > 0 && !(p->cg.cpus > 0))
                return unavailable(err,
                                   "--cpus %g (no cgroup cpu.max: %s; nothing else bounds a share of the CPU: "
                                   "drop --cpus or give chidori a cgroup, docs/cgroups.md)",
                                   o->cpus, p->why);
        return 0;
}

/* Create the run's leaf with what the cgroup can hold, and plan the
 * fallbacks for the rest.  Returns 0 or an exit code (err set). */
static int limits_setup(const struct sandbox_opts *o, struct box_opts *bo, const char *run_id, struct sandbox_run *r,
                        struct limits_plan *p, struct err **err)
{
        memset(p, 0, sizeof(*p));
        bool usable[CGROUP_CTL_MAX] = { false };
        if (o->disable & (1u << LAYER_CGROUP)) {
                snprintf(p->why, sizeof(p->why), "disabled by --unsafe-disable");
        } else {
                if (cg_host_get(o, err) < 0)
                        return err_wrap(err, "cgroup parent"), EXIT_USAGE;
                if (cgroup_host_version(cg_host) == 0) {
                        const char *why = cgroup_host_reason(cg_host);
                        snprintf(p->why, sizeof(p->why), "%s", why ? why : "no cgroup");
                } else {
                        struct cgroup_info info;
                        cgroup_host_describe(cg_host, &info);
                        size_t n = 0;
                        for (int c = 0; c < CGROUP_CTL_MAX; c++) {
                                usable[c] = info.ctl[c].usable;
                                if (!usable[c] && n < sizeof(p->why))
                                        n += (size_t)snprintf(p->why + n, sizeof(p->why) - n, "%s%s controller: %s",
                                                              n ? "; " : "", cgroup_ctl_name((enum cgroup_ctl)c),
                                                              info.ctl[c].why ? info.ctl[c].why : "not usable");
                        }
                }
        }
        if (o->require && !usable[CGROUP_CTL_MEMORY])
                return unavailable(err, "memory ceiling (%s)", p->why);
        p->cg.memory_bytes = usable[CGROUP_CTL_MEMORY] ? o->memory_bytes : 0;
        p->cg.pids_max = usable[CGROUP_CTL_PIDS] ? o->pids_max : 0;
        p->cg.cpus = usable[CGROUP_CTL_CPU] ? o->cpus : 0;
        if (p->cg.memory_bytes || p->cg.pids_max || p->cg.cpus > 0) {
                int cr = o->cgroup_below ? cgroup_run_create_below(o->cgroup_below, run_id, &p->cg, &r->cg, err)
                                         : cgroup_run_create(cg_host, run_id, &p->cg, &r->cg, err);
                if (cr < 0) {
                        if (o->require || err_code(*err) == CGROUP_E_INVALID)
                                return err_wrap(err, "sandbox layer unavailable: memory ceiling"),
                                       EXIT_LAYER_UNAVAILABLE;
                        /* An unwritable --cgroup-parent, a full hierarchy:
                         * every limit takes its fallback. */
                        snprintf(p->why, sizeof(p->why), "%s", err_msg(*err));
                        err_free(*err);
                        *err = NULL;
                        memset(&p->cg, 0, sizeof(p->cg));
                }
        }
        int code = plan_fallbacks(o, bo, p, err);
        if (code != 0) {
                cgroup_run_destroy(r->cg, NULL);
                r->cg = NULL;
                return code;
        }
        if (r->cg) {
                bo->cgroup_fd = cgroup_run_clone_fd(r->cg);
                if (bo->cgroup_fd < 0) {
                        bo->attach = cg_attach;
                        bo->attach_arg = r->cg;
                }
        }
        return 0;
}

/* The banner's limits fragment, once the box runs (RLIMIT_NPROC needed its
 * user namespace):
 *   "cgroup1 memory.limit_in_bytes=512M pids.max=64"
 *   "no cgroup (no cgroup delegation): memory watchdog 512M, pids rlimit 64"
 *   "cgroup2 memory.max=512M; pids rlimit 64 (pids controller: ...)" */
static void limits_banner(const struct sandbox_opts *o, const struct limits_plan *p, const struct box *b,
                          char *buf, size_t len)
{
        char cg[160] = "", fb[160] = "";
        size_t n = 0;
        if (p->cg.memory_bytes || p->cg.pids_max || p->cg.cpus > 0)
                cgroup_banner(cg_host, &p->cg, cg, sizeof(cg));
        if (p->watch_memory) {
                char sz[24];
                cgroup_format_size(p->watch_memory, sz, sizeof(sz));
                n += (size_t)snprintf(fb + n, sizeof(fb) - n, "memory watchdog %s", sz);
        } else if (!o->memory_bytes && !cg[0] && n < sizeof(fb)) {
                n += (size_t)snprintf(fb + n, sizeof(fb) - n, "memory ceiling: none");
        }
        if (!p->cg.pids_max && n < sizeof(fb)) {
                if (b->nproc_applied)
                        n += (size_t)snprintf(fb + n, sizeof(fb) - n, "%spids rlimit %llu", n ? ", " : "",
                                              (unsigned long long)o->pids_max);
                else
                        n += (size_t)snprintf(fb + n, sizeof(fb) - n, "%spids: none", n ? ", " : "");
        }
        if (!fb[0])
                snprintf(buf, len, "%s", cg);
        else if (!cg[0])
                snprintf(buf, len, "no cgroup (%s): %s", p->why, fb);
        else
                snprintf(buf, len, "%s; %s (%s)", cg, fb, p->why);
}

long sandbox_cpu_secs(const struct sandbox_opts *o, bool worker)
{
        if (o->set & SB_SET_CPU_SECS)
                return o->cpu_secs;
        if (worker && o->engine_cpu_ms > 0)
                return (o->engine_cpu_ms * 3 / 2 + 999) / 1000 + 2;
        return o->cpu_secs;
}

int sandbox_start(const struct sandbox_opts *o, struct box_opts *bo, const char *run_id, struct sandbox_run *r,
                  struct err **err)
{
        memset(r, 0, sizeof(*r));
        r->stage2_fd = -1;
        r->jit = o->jit == 1 || (o->jit < 0 && bo->worker);
        bo->disable = o->disable;
        bo->require = o->require;
        bo->nofile = o->nofile;
        bo->cpu_secs = sandbox_cpu_secs(o, bo->worker);
        bo->fsize = o->fsize;
        bo->cgroup_fd = -1;
        if (bo->worker)
                bo->envp = sandbox_worker_env(r->jit, !(o->disable & (1u << LAYER_SECCOMP)), o->tz, o->pooled);
        struct limits_plan plan;
        int code = limits_setup(o, bo, run_id, r, &plan, err);
        if (code != 0)
                return code;
        const struct seccomp_prog *filter = NULL;
        if (!(o->disable & (1u << LAYER_SECCOMP))) {
                enum seccomp_profile prof = bo->worker         ? SECCOMP_STAGE1_WORKER
                                            : o->seccomp_errno ? SECCOMP_LAUNCH_ERRNO
                                                               : SECCOMP_LAUNCH;
                if (get_filter(prof, true, &filter, err) < 0) {
                        err_wrap(err, "build the seccomp filter");
                        code = EXIT_PROTOCOL;
                        goto fail;
                }
                if (bo->worker) {
                        r->stage2_fd = stage2_memfd(r->jit, err);
                        if (r->stage2_fd < 0) {
                                code = EXIT_PROTOCOL;
                                goto fail;
                        }
                }
        }
        bo->filter = filter;
        bo->stage2_fd = r->stage2_fd;
        if (box_spawn(bo, &r->box, err) < 0) {
                code = err_code(*err) == BOX_E_LAYER ? EXIT_LAYER_UNAVAILABLE
                       : err_code(*err) == BOX_E_EXEC ? 127
                                                      : EXIT_PROTOCOL;
                goto fail;
        }
        if (r->stage2_fd >= 0)
                close(r->stage2_fd);
        r->stage2_fd = -1;
        /* No cgroup for the memory ceiling: the watchdog holds it, for the
         * whole box (the worker starts no process; a launched program may). */
        if (plan.watch_memory &&
            memwatch_start(r->box.pid, r->box.pidfd, plan.watch_memory, !bo->worker,
                           !(r->box.applied & (1u << LAYER_PIDNS)), &r->mw, err) < 0) {
                sandbox_kill(r);
                while (waitpid(r->box.pid, NULL, 0) < 0 && errno == EINTR)
                        ;
                box_close(&r->box);
                err_wrap(err, "sandbox layer unavailable: memory watchdog");
                code = EXIT_LAYER_UNAVAILABLE;
                goto fail;
        }
        char cgbanner[320], extra[64] = "";
        limits_banner(o, &plan, &r->box, cgbanner, sizeof(cgbanner));
        if (bo->worker && o->engine_cpu_ms > 0)
                snprintf(extra, sizeof(extra), "%s; cpu budget %g s", r->jit ? "jit on" : "jit off, no executable memory",
                         (double)o->engine_cpu_ms / 1000.0);
        else if (bo->worker)
                snprintf(extra, sizeof(extra), "%s; cpu budget none", r->jit ? "jit on" : "jit off, no executable memory");
        else if (o->seccomp_errno && filter)
                snprintf(extra, sizeof(extra), "other syscalls fail with EPERM");
        box_describe(&r->box, cgbanner, extra, r->banner, sizeof(r->banner));
        return 0;
fail:
        if (r->stage2_fd >= 0)
                close(r->stage2_fd);
        r->stage2_fd = -1;
        cgroup_run_destroy(r->cg, NULL);
        r->cg = NULL;
        return code;
}

void sandbox_kill(struct sandbox_run *r)
{
        if (r->box.pidfd >= 0)
                syscall(SYS_pidfd_send_signal, r->box.pidfd, SIGKILL, NULL, 0);
        if (r->cg)
                cgroup_run_kill(r->cg, NULL);
}

void sandbox_finish(struct sandbox_run *r, struct sandbox_usage *u)
{
        struct cgroup_run *cg = NULL;
        sandbox_finish_keep_cgroup(r, u, &cg);
        cgroup_run_destroy(cg, NULL);
}

void sandbox_finish_keep_cgroup(struct sandbox_run *r, struct sandbox_usage *u, struct cgroup_run **ret_cg)
{
        *ret_cg = NULL;
        if (u)
                memset(u, 0, sizeof(*u));
        struct memwatch_result mr = { 0 };
        bool watched = r->mw != NULL;
        memwatch_stop(r->mw, &mr);
        r->mw = NULL;
        if (r->cg) {
                struct cgroup_stats st;
                if (u && cgroup_run_stats(r->cg, &st, NULL) == 0) {
                        u->known = true;
                        u->oom_killed = st.oom_killed || (!st.oom_known && st.memory_limit_hit);
                        u->pids_limit_hit = st.pids_limit_hit;
                        u->peak_bytes = st.peak_known ? st.peak_bytes : 0;
                        u->memory_limit = st.memory_limit;
                }
                *ret_cg = r->cg;
                r->cg = NULL;
        }
        /* The watchdog held the memory ceiling (the cgroup, if any, only
         * pids or cpu). */
        if (u && watched) {
                u->known = true;
                u->oom_killed = mr.killed;
                u->peak_bytes = mr.peak_bytes;
                u->memory_limit = mr.limit_bytes;
        }
        box_close(&r->box);
}

int sandbox_wait(const struct sandbox_opts *o, struct sandbox_run *r, const volatile sig_atomic_t *stop,
                 int *ret_status)
{
        struct box *b = &r->box;
        double deadline_at = o->deadline_ms > 0 ? mono_ms() + (double)o->deadline_ms : 0;
        int blocked = -1;
        bool deadline_hit = false;
        for (;;) {
                struct pollfd p[2] = { { .fd = b->pidfd, .events = POLLIN }, { .fd = b->notify_fd, .events = POLLIN } };
                int timeout = -1;
                if (deadline_at > 0) {
                        double left = deadline_at - mono_ms();
                        if (left <= 0) {
                                deadline_hit = true;
                                sandbox_kill(r);
                                break;
                        }
                        timeout = (int)left + 1;
                }
                int n = *stop ? (errno = EINTR, -1) : poll(p, 2, timeout);
                if (n < 0 && errno == EINTR && *stop) {
                        sandbox_kill(r);
                        break;
                }
                if (n < 0 && errno != EINTR)
                        break;
                if (n > 0 && (p[1].revents & (POLLHUP | POLLERR | POLLNVAL)) && !(p[1].revents & POLLIN)) {
                        /* The listener hangs up once the box has exited:
                         * stop watching it, or poll would spin. */
                        b->notify_fd = (close(b->notify_fd), -1);
                        continue;
                }
                if (n > 0 && (p[1].revents & POLLIN)) {
                        blocked = box_notify_read(b->notify_fd);
                        sandbox_kill(r);
                        break;
                }
                if (n > 0 && p[0].revents)
                        break;
        }
        int status = 0;
        struct rusage ru;
        while (wait4(b->pid, &status, 0, &ru) < 0 && errno == EINTR)
                ;
        struct sandbox_usage u;
        sandbox_finish(r, &u);
        if (ret_status)
                *ret_status = status;
        double cpu = (double)ru.ru_utime.tv_sec + (double)ru.ru_stime.tv_sec +
                     ((double)ru.ru_utime.tv_usec + (double)ru.ru_stime.tv_usec) / 1e6;
        if (*stop && !deadline_hit && blocked < 0 && WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) {
                fprintf(stderr, "chidori: interrupted by %s: the box was stopped\n", signal_name((int)*stop));
                return 128 + (int)*stop;
        }
        if (blocked >= 0) {
                fprintf(stderr, "chidori: sandbox violation: blocked syscall %s\n", seccomp_syscall_name(blocked));
                return EXIT_SECCOMP;
        }
        if (deadline_hit) {
                fprintf(stderr, "chidori: deadline exceeded (%ld ms)\n", o->deadline_ms);
                return EXIT_DEADLINE;
        }
        if (u.oom_killed && WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) {
                fprintf(stderr, "chidori: memory limit exceeded (limit %llu MiB)\n",
                        (unsigned long long)(u.memory_limit >> 20));
                return EXIT_OOM;
        }
        if (u.pids_limit_hit)
                fprintf(stderr, "chidori: process limit reached (pids.max %llu): a fork in the box failed\n",
                        (unsigned long long)o->pids_max);
        if (WIFEXITED(status))
                return WEXITSTATUS(status);
        int sig = WTERMSIG(status);
        if (sig == SIGXCPU || (sig == SIGKILL && o->cpu_secs > 0 && cpu >= (double)o->cpu_secs * 0.95)) {
                fprintf(stderr, "chidori: CPU limit exceeded (%ld s)\n", o->cpu_secs);
                return EXIT_CPU;
        }
        if (sig == SIGSYS) {
                fprintf(stderr, "chidori: sandbox violation: blocked syscall (unknown)\n");
                return EXIT_SECCOMP;
        }
        fprintf(stderr, "chidori: program killed by %s\n", signal_name(sig));
        return 128 + sig;
}
