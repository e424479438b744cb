/* launcher/sandbox.c — options shared by run and launch, and starting and
 * supervising a box (deadline kill, seccomp notifications, endings). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/util.h"
#include "launcher/launcher.h"
#include "launcher/options.h"

int parse_nonneg(const char *s, long *ret)
{
        if (!s || !*s || *s == '-' || *s == '+')
                return -1;
        char *end;
        errno = 0;
        long v = strtol(s, &end, 10);
        if (errno || *end || v < 0)
                return -1;
        *ret = v;
        return 0;
}

void sandbox_opts_init(struct sandbox_opts *o)
{
        memset(o, 0, sizeof(*o));
        o->nofile = 256;
        o->jit = -1;
}

static int env_long(const char *name, long *ret, const char *what)
{
        const char *v = getenv(name);
        if (!v || !*v)
                return 0;
        if (parse_nonneg(v, ret) < 0) {
                fprintf(stderr, "chidori: %s='%s' is not %s (expected an integer >= 0)\n", name, v, what);
                return -1;
        }
        return 0;
}

int sandbox_opts_env(struct sandbox_opts *o)
{
        if (env_long("CHIDORI_ISOLATE_DEADLINE_MS", &o->deadline_ms, "a number of milliseconds") < 0 ||
            env_long("CHIDORI_ISOLATE_CPU_SECS", &o->cpu_secs, "a number of seconds") < 0)
                return -1;
        const char *r = getenv("CHIDORI_ISOLATE_REQUIRE_SANDBOX");
        if (r && *r) {
                if (strcmp(r, "1") == 0 || strcmp(r, "true") == 0)
                        o->require = true;
                else if (strcmp(r, "0") == 0 || strcmp(r, "false") == 0)
                        o->require = false;
                else {
                        fprintf(stderr, "chidori: CHIDORI_ISOLATE_REQUIRE_SANDBOX='%s' is not valid (expected 1 or 0)\n",
                                r);
                        return -1;
                }
        }
        return 0;
}

int sandbox_opts_parse(struct sandbox_opts *o, const char *cmd, int c, const char *arg)
{
        long *dst = NULL;
        const char *what = NULL;
        switch (c) {
        case SOPT_DEADLINE: dst = &o->deadline_ms, what = "--deadline"; break;
        case SOPT_CPU_SECS: dst = &o->cpu_secs, what = "--cpu-secs"; break;
        case SOPT_NOFILE: dst = &o->nofile, what = "--nofile"; break;
        case SOPT_FSIZE: dst = &o->fsize, what = "--fsize"; break;
        case SOPT_REQUIRE: o->require = true; return 1;
        case SOPT_JIT: o->jit = 1; return 1;
        case SOPT_NO_JIT: o->jit = 0; return 1;
        case SOPT_UNSAFE_DISABLE: {
                struct err *e = NULL;
                unsigned m = 0;
                if (box_parse_layers(arg, &m, &e) < 0) {
                        fprintf(stderr, "chidori: --unsafe-disable: %s\nTry 'chidori %s --help'.\n", err_msg(e), cmd);
                        err_free(e);
                        return -1;
                }
                o->disable |= m;
                return 1;
        }
        default: return 0;
        }
        if (parse_nonneg(arg, dst) < 0) {
                fprintf(stderr, "chidori: %s '%s' is not a non-negative integer\nTry 'chidori %s --help'.\n", what,
                        arg, cmd);
                return -1;
        }
        if (c == SOPT_NOFILE && (*dst < 16 || *dst > 65536)) {
                fprintf(stderr, "chidori: --nofile %ld is out of range (16..65536)\n", *dst);
                return -1;
        }
        return 1;
}

int sandbox_opts_check(const struct sandbox_opts *o)
{
        if (o->disable && o->require) {
                fprintf(stderr, "chidori: --unsafe-disable cannot be combined with --require-sandbox "
                                "(CHIDORI_ISOLATE_REQUIRE_SANDBOX): a required sandbox has every layer\n");
                return -1;
        }
        if (o->disable) {
                char names[256] = "";
                size_t n = 0;
                for (int l = 0; l < LAYER_MAX; l++)
                        if (o->disable & (1u << l))
                                n += (size_t)snprintf(names + n, sizeof(names) - n, "%s%s", n ? "," : "",
                                                      box_layer_name((enum box_layer)l));
                fprintf(stderr, "chidori: WARNING: sandbox layers DISABLED (%s) by --unsafe-disable: "
                                "this run is less confined; use only for tests and debugging\n",
                        names);
        }
        return 0;
}

/* Compiled filters, built once per launcher process. */
static struct seccomp_prog cache[SECCOMP_PROFILE_MAX][2];

static int get_filter(enum seccomp_profile p, bool jit, const struct seccomp_prog **ret, struct err **err)
{
        struct seccomp_prog *c = &cache[p][jit];
        if (!c->insns && seccomp_compile(p, jit, true, c, err) < 0)
                return -1;
        *ret = c;
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

int sandbox_start(const struct sandbox_opts *o, struct box_opts *bo, const char *surface, struct sandbox_run *r,
                  struct err **err)
{
        (void)surface;
        memset(r, 0, sizeof(*r));
        r->stage2_fd = -1;
        r->jit = o->jit == 1 || (o->jit < 0 && bo->worker);
        bo->disable = o->disable;
        bo->require = o->require;
        bo->nofile = o->nofile;
        bo->cpu_secs = o->cpu_secs;
        bo->fsize = o->fsize;
        bo->cgroup_fd = -1;
        const struct seccomp_prog *filter = NULL;
        if (!(o->disable & (1u << LAYER_SECCOMP))) {
                if (get_filter(bo->worker ? SECCOMP_STAGE1_WORKER : SECCOMP_LAUNCH, true, &filter, err) < 0)
                        return err_wrap(err, "build the seccomp filter"), EXIT_PROTOCOL;
                if (bo->worker) {
                        r->stage2_fd = stage2_memfd(r->jit, err);
                        if (r->stage2_fd < 0)
                                return EXIT_PROTOCOL;
                }
        }
        bo->filter = filter;
        bo->stage2_fd = r->stage2_fd;
        if (box_spawn(bo, &r->box, err) < 0) {
                if (r->stage2_fd >= 0)
                        close(r->stage2_fd);
                r->stage2_fd = -1;
                return err_code(*err) == BOX_E_LAYER ? EXIT_LAYER_UNAVAILABLE
                       : err_code(*err) == BOX_E_EXEC ? 127
                                                      : EXIT_LAYER_UNAVAILABLE;
        }
        if (r->stage2_fd >= 0) {
                close(r->stage2_fd);
                r->stage2_fd = -1;
        }
        char extra[64] = "";
        if (bo->worker)
                snprintf(extra, sizeof(extra), "%s", r->jit ? "jit on" : "jit off, no executable memory");
        box_describe(&r->box, extra, r->banner, sizeof(r->banner));
        return 0;
}

void sandbox_run_free(struct sandbox_run *r)
{
        box_close(&r->box);
}

static const char *signame(int sig)
{
        static char buf[32];
        const char *n = sigabbrev_np(sig);
        if (n)
                snprintf(buf, sizeof(buf), "SIG%s", n);
        else
                snprintf(buf, sizeof(buf), "signal %d", sig);
        return buf;
}

int sandbox_wait(const struct sandbox_opts *o, struct sandbox_run *r, int *ret_status)
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
                                syscall(SYS_pidfd_send_signal, b->pidfd, SIGKILL, NULL, 0);
                                break;
                        }
                        timeout = (int)left + 1;
                }
                int n = poll(p, 2, timeout);
                if (n < 0 && errno != EINTR)
                        break;
                if (n > 0 && (p[1].revents & POLLIN)) {
                        blocked = box_notify_read(b->notify_fd);
                        syscall(SYS_pidfd_send_signal, b->pidfd, SIGKILL, NULL, 0);
                        break;
                }
                if (n > 0 && p[0].revents)
                        break;
        }
        int status = 0;
        struct rusage ru;
        while (wait4(b->pid, &status, 0, &ru) < 0 && errno == EINTR)
                ;
        sandbox_run_free(r);
        if (ret_status)
                *ret_status = status;
        double cpu = (double)ru.ru_utime.tv_sec + (double)ru.ru_stime.tv_sec +
                     ((double)ru.ru_utime.tv_usec + (double)ru.ru_stime.tv_usec) / 1e6;
        if (blocked >= 0) {
                fprintf(stderr, "chidori: sandbox violation: blocked syscall %s\n", seccomp_syscall_name(blocked));
                return EXIT_SECCOMP;
        }
        if (deadline_hit) {
                fprintf(stderr, "chidori: deadline exceeded (%ld ms)\n", o->deadline_ms);
                return EXIT_DEADLINE;
        }
        if (WIFEXITED(status))
                return WEXITSTATUS(status);
        int sig = WTERMSIG(status);
        if (sig == SIGXCPU || (sig == SIGKILL && o->cpu_secs > 0 && cpu >= (double)o->cpu_secs)) {
                fprintf(stderr, "chidori: CPU limit exceeded (%ld s)\n", o->cpu_secs);
                return EXIT_CPU;
        }
        if (sig == SIGSYS) {
                fprintf(stderr, "chidori: sandbox violation: blocked syscall (unknown)\n");
                return EXIT_SECCOMP;
        }
        fprintf(stderr, "chidori: program killed by %s\n", signame(sig));
        return 128 + sig;
}
