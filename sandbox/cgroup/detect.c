#define _GNU_SOURCE
/* sandbox/cgroup/detect.c — what this host offers: cgroup2 with the memory controller
 * under our own cgroup (or the override), else the v1 memory hierarchy, else
 * nothing, with a reason.  Only reads; creates nothing. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "sandbox/cgroup/cgroup-internal.h"

/* Short reasons (what the banner prints after "memory ceiling: none"). */
#define R_NODELEG "no cgroup delegation"
#define R_NOMEM "no memory controller"
#define R_NOFS "no cgroup filesystem"
#define R_BUSY "launcher cgroup holds other processes"

struct scan {
        struct cg_mount *m;
        size_t nm;
        char *self;              /* /proc/self/cgroup */
        const char *override;    /* normalised, or NULL */
        bool override_found;
        bool deleg_fail;
        bool busy;
        char *v1_memory_why;
};

static void scan_free(struct scan *s)
{
        cg_mounts_free(s->m, s->nm);
        free(s->self);
        free(s->v1_memory_why);
}

static char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *xasprintf(const char *fmt, ...)
{
        char *s = NULL;
        va_list ap;
        va_start(ap, fmt);
        if (vasprintf(&s, fmt, ap) < 0)
                s = NULL;
        va_end(ap);
        return s;
}

static void chomp(char *s)
{
        size_t l = s ? strlen(s) : 0;
        while (l > 0 && s[l - 1] == '\n')
                s[--l] = '\0';
}

/* Deepest cgroup containing both a and b. */
static char *common_ancestor(const char *a, const char *b)
{
        size_t i = 0, last = 0;
        while (a[i] && a[i] == b[i]) {
                i++;
                if ((a[i] == '/' || a[i] == '\0') && (b[i] == '/' || b[i] == '\0'))
                        last = i;
        }
        return last <= 1 ? strdup("/") : strndup(a, last);
}

static bool is_dir(const char *p)
{
        struct stat st;
        return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

/* Can we create children under dir and write the files we need there? */
static bool writable(const char *dir, const char *const *files, char **ret_what)
{
        if (faccessat(AT_FDCWD, dir, W_OK | X_OK, AT_EACCESS) < 0) {
                *ret_what = xasprintf("%s: %s", dir, strerror(errno));
                return false;
        }
        for (; files && *files; files++) {
                _cleanup_free_ char *p = xasprintf("%s/%s", dir, *files);
                if (p && faccessat(AT_FDCWD, p, W_OK, AT_EACCESS) < 0) {
                        *ret_what = xasprintf("%s: %s", p, strerror(errno));
                        return false;
                }
        }
        return true;
}

/* Override: "/a/b" (cgroup path) or a directory below a cgroup mount.
 * Refuse "." and ".." components and relative paths. */
static int normalise_override(const char *in, char **ret, struct err **err)
{
        if (in[0] != '/')
                return err_setc(err, CGROUP_E_INVALID, 0,
                                "cgroup parent '%s' must be an absolute path", in);
        char *s = strdup(in);
        if (!s)
                return err_set(err, ENOMEM, "cgroup parent");
        size_t l = strlen(s);
        while (l > 1 && s[l - 1] == '/')
                s[--l] = '\0';
        for (const char *p = s; *p; p++) {
                if (p[0] != '/')
                        continue;
                if (p[1] == '/' || (p[1] == '.' && (p[2] == '/' || p[2] == '\0')) ||
                    (p[1] == '.' && p[2] == '.' && (p[3] == '/' || p[3] == '\0'))) {
                        free(s);
                        return err_setc(err, CGROUP_E_INVALID, 0,
                                        "cgroup parent '%s' has an empty, '.' or '..' component",
                                        in);
                }
        }
        *ret = s;
        return 0;
}

/* The cgroup path the override names in hierarchy `m`: a filesystem path
 * under some cgroup mount is taken relative to that mount (and refused for
 * a hierarchy of the other version); anything else is a cgroup path. */
static int override_cg(const struct scan *s, const struct cg_mount *m, char **ret)
{
        const struct cg_mount *best = NULL;
        size_t best_len = 0;
        for (size_t i = 0; i < s->nm; i++) {
                size_t ml = strlen(s->m[i].mount);
                if (ml > best_len && strncmp(s->override, s->m[i].mount, ml) == 0 &&
                    (s->override[ml] == '/' || s->override[ml] == '\0')) {
                        best = &s->m[i];
                        best_len = ml;
                }
        }
        if (!best)
                return (*ret = strdup(s->override)) ? 0 : -ENOMEM;
        if (best->v2 != m->v2)
                return -EXDEV;
        const char *rel = s->override + best_len;
        const char *root = strcmp(best->root, "/") == 0 ? "" : best->root;
        *ret = xasprintf("%s%s", root, *rel ? rel : (*root ? "" : "/"));
        return *ret ? 0 : -ENOMEM;
}

/* 0 set, 1 not usable (*ret_why says why), <0 -errno */
static int set_parent(struct scan *s, const struct cg_mount *m, const char *own_cg,
                      struct hier *hi, char **ret_why)
{
        int r;
        if (s->override) {
                r = override_cg(s, m, &hi->parent_cg);
                if (r == -EXDEV) {
                        *ret_why = xasprintf("cgroup parent %s is not in this hierarchy",
                                             s->override);
                        return 1;
                }
        } else {
                hi->parent_cg = strdup(own_cg);
                r = hi->parent_cg ? 0 : -ENOMEM;
        }
        if (r < 0)
                return r;
        r = cg_resolve(m->mount, m->root, hi->parent_cg, &hi->parent_fs);
        if (r == -EXDEV || r == -EINVAL) {
                *ret_why = xasprintf("cgroup %s is outside the mount %s (root %s)",
                                     hi->parent_cg, m->mount, m->root);
                return 1;
        }
        if (r < 0)
                return r;
        if (!is_dir(hi->parent_fs)) {
                *ret_why = xasprintf("%s does not exist", hi->parent_fs);
                return 1;
        }
        if (s->override)
                s->override_found = true;
        hi->mount = strdup(m->mount);
        return hi->mount ? 0 : -ENOMEM;
}

void cg_hier_clear(struct hier *hi)
{
        free(hi->ctl_list);
        free(hi->mount);
        free(hi->parent_cg);
        free(hi->parent_fs);
        free(hi->launcher_cg);
        memset(hi, 0, sizeof(*hi));
        hi->launcher_fd = -1;
}

/* The cgroup2 mount where our own cgroup `own` is visible, or NULL
 * (h->v2_note says why when there is a cgroup2 at all). */
static const struct cg_mount *v2_mount(struct cgroup_host *h, struct scan *s, const char *own)
{
        for (size_t i = 0; i < s->nm; i++) {
                _cleanup_free_ char *p = NULL;
                if (s->m[i].v2 && cg_resolve(s->m[i].mount, s->m[i].root, own, &p) == 0 && is_dir(p))
                        return &s->m[i];
        }
        for (size_t i = 0; i < s->nm; i++)
                if (s->m[i].v2) {
                        h->v2_note = xasprintf("our cgroup2 path %s is not visible under %s", own, s->m[i].mount);
                        return NULL;
                }
        return NULL;
}

/* The controllers offered in the parent's cgroup.controllers (bits). */
static unsigned v2_available(const struct hier *hi, char **ret_ctls)
{
        _cleanup_close_ int fd = open(hi->parent_fs, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd >= 0)
                (void)cg_read_at(fd, "cgroup.controllers", ret_ctls);
        chomp(*ret_ctls);
        unsigned avail = 0;
        for (int c = 0; c < CGROUP_CTL_MAX; c++)
                if (*ret_ctls && cg_has_word(*ret_ctls, cgroup_ctl_name(c), ' '))
                        avail |= CTL_BIT(c);
        return avail;
}

/* Our uid as the cgroup files' owners see it: outside our user namespace
 * (the supervisor's root is uid 65532 there, decision 163). */
static int outside_uid(void)
{
        unsigned in, out, count, me = (unsigned)geteuid();
        FILE *f = fopen("/proc/self/uid_map", "re");
        int r = (int)me;
        while (f && fscanf(f, "%u %u %u", &in, &out, &count) == 3)
                if (me >= in && me - in < count) {
                        r = (int)(out + (me - in));
                        break;
                }
        if (f)
                fclose(f);
        return r;
}

/* Can we create run cgroups below the parent and move processes there?
 * true, or false with h->v2_note saying why. */
static bool v2_delegated(struct cgroup_host *h, struct scan *s, const struct cg_mount *m, const struct hier *hi,
                         const char *own)
{
        static const char *const need[] = { "cgroup.procs", "cgroup.subtree_control", NULL };
        char *what = NULL;
        if (!writable(hi->parent_fs, need, &what)) {
                h->v2_note = xasprintf("no cgroup delegation (uid %d): %s", outside_uid(), what ? what : "");
                free(what);
                s->deleg_fail = true;
                return false;
        }
        /* clone3/attach move a process from our cgroup to the leaf: the
         * kernel wants write access to cgroup.procs of their common ancestor. */
        h->parent_is_own = strcmp(hi->parent_cg, own) == 0;
        if (h->parent_is_own)
                return true;
        _cleanup_free_ char *anc_cg = common_ancestor(own, hi->parent_cg), *anc = NULL;
        if (anc_cg && cg_resolve(m->mount, m->root, anc_cg, &anc) == 0) {
                static const char *const procs[] = { "cgroup.procs", NULL };
                if (!writable(anc, procs, &what)) {
                        h->v2_note = xasprintf("no cgroup delegation (uid %d) to move processes from %s: %s",
                                               outside_uid(), own, what ? what : "");
                        free(what);
                        s->deleg_fail = true;
                        return false;
                }
        }
        return true;
}

/* No-internal-processes: enabling controllers below a non-root cgroup
 * needs it empty.  Only this launcher there: it moves itself (at prepare
 * time).  Anyone else: we cannot.  true, or false with h->v2_note. */
static bool v2_no_internal(struct cgroup_host *h, struct scan *s, const struct hier *hi, unsigned avail)
{
        _cleanup_close_ int pfd = open(hi->parent_fs, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        /* the root cgroup (exempt from the rule) is the one without cgroup.type */
        h->parent_is_root = pfd >= 0 && faccessat(pfd, "cgroup.type", F_OK, 0) < 0 && errno == ENOENT;
        _cleanup_free_ char *sub = NULL, *procs = NULL;
        unsigned want = avail & (CTL_BIT(CGROUP_CTL_MEMORY) | CTL_BIT(CGROUP_CTL_PIDS));
        bool missing = false;
        if (pfd >= 0 && cg_read_at(pfd, "cgroup.subtree_control", &sub) == 0) {
                chomp(sub);
                for (int c = 0; c < CGROUP_CTL_MAX; c++)
                        if ((want & CTL_BIT(c)) && !cg_has_word(sub, cgroup_ctl_name(c), ' '))
                                missing = true;
        }
        if (!missing || h->parent_is_root || pfd < 0 || cg_read_at(pfd, "cgroup.procs", &procs) != 0 || !procs[0])
                return true;
        char self[32];
        snprintf(self, sizeof(self), "%d\n", (int)getpid());
        if (h->parent_is_own && strcmp(procs, self) == 0) {
                h->launcher_move = true;
                return true;
        }
        h->v2_note = xasprintf("%s holds other processes, so controllers cannot be enabled below it; start chidori "
                               "in a cgroup of its own (systemd-run --scope -p Delegate=yes ...) or pass "
                               "--cgroup-parent",
                               hi->parent_fs);
        s->busy = true;
        return false;
}

/* 1 chosen, 0 not (h->v2_note says why, NULL when there is no cgroup2), <0 -errno */
static int try_v2(struct cgroup_host *h, struct scan *s, int force)
{
        _cleanup_free_ char *own = NULL;
        if (cg_proc_cgroup_path(s->self, NULL, &own, NULL) < 0)
                return 0;
        const struct cg_mount *m = v2_mount(h, s, own);
        if (!m)
                return 0;
        if (!(h->v2_mount = strdup(m->mount)))
                return -ENOMEM;
        /* Already moved into <P>/chidori-launcher (by an earlier host of this
         * process, or inherited from the launcher that started us): the runs
         * go beside it, under P, not below it. */
        _cleanup_free_ char *base = strdup(own);
        if (!base)
                return -ENOMEM;
        char *slash = strrchr(base, '/');
        if (slash && slash != base && strcmp(slash + 1, CG_LAUNCHER_LEAF) == 0) {
                *slash = '\0';
                h->moved = true;
        }
        struct hier hi = { .v2 = true, .launcher_fd = -1 };
        char *why = NULL;
        int r = set_parent(s, m, base, &hi, &why);
        if (r != 0) {
                h->v2_note = why;
                cg_hier_clear(&hi);
                return r < 0 ? r : 0;
        }
        _cleanup_free_ char *ctls = NULL;
        unsigned avail = v2_available(&hi, &ctls);
        if (!(avail & CTL_BIT(CGROUP_CTL_MEMORY)) && force != 2) {
                const char *v1mem = NULL;
                for (size_t i = 0; i < s->nm; i++)
                        if (!s->m[i].v2 && (s->m[i].ctls & CTL_BIT(CGROUP_CTL_MEMORY)))
                                v1mem = s->m[i].mount;
                h->v2_note = xasprintf(
                        "cgroup2 at %s has no memory controller (%s/cgroup.controllers: \"%s\")%s%s",
                        m->mount, hi.parent_fs, ctls ? ctls : "",
                        v1mem ? "; memory is bound to the cgroup v1 hierarchy at " : "",
                        v1mem ? v1mem : "");
                cg_hier_clear(&hi);
                return 0;
        }
        if (!v2_delegated(h, s, m, &hi, own) || !v2_no_internal(h, s, &hi, avail)) {
                cg_hier_clear(&hi);
                return 0;
        }
        hi.ctls = avail;
        h->hier[0] = hi;
        h->nhier = 1;
        for (int c = 0; c < CGROUP_CTL_MAX; c++) {
                if (avail & CTL_BIT(c))
                        h->ctl_hier[c] = 0;
                else
                        h->ctl_why[c] = xasprintf("not offered in %s/cgroup.controllers",
                                                  hi.parent_fs);
        }
        h->version = 2;
        h->delegated = true;
        return 1;
}

/* 1 chosen, 0 not, <0 -errno */
static int try_v1(struct cgroup_host *h, struct scan *s)
{
        for (int c = 0; c < CGROUP_CTL_MAX; c++) {
                const char *name = cgroup_ctl_name(c);
                const struct cg_mount *m = NULL;
                for (size_t i = 0; i < s->nm && !m; i++)
                        if (!s->m[i].v2 && (s->m[i].ctls & CTL_BIT(c)))
                                m = &s->m[i];
                if (!m) {
                        h->ctl_why[c] = xasprintf("no cgroup v1 %s hierarchy mounted", name);
                        continue;
                }
                /* co-mounted with a controller already placed: share the hierarchy */
                bool shared = false;
                for (size_t k = 0; k < h->nhier; k++)
                        if (strcmp(h->hier[k].mount, m->mount) == 0) {
                                h->hier[k].ctls |= CTL_BIT(c);
                                h->ctl_hier[c] = (int)k;
                                shared = true;
                        }
                if (shared)
                        continue;
                _cleanup_free_ char *own = NULL, *list = NULL;
                if (cg_proc_cgroup_path(s->self, name, &own, &list) < 0) {
                        h->ctl_why[c] = xasprintf("no %s line in /proc/self/cgroup", name);
                        continue;
                }
                struct hier hi = { .launcher_fd = -1 };
                char *why = NULL;
                int r = set_parent(s, m, own, &hi, &why);
                if (r < 0) {
                        cg_hier_clear(&hi);
                        return r;
                }
                if (r != 0) {
                        h->ctl_why[c] = why;
                        cg_hier_clear(&hi);
                        continue;
                }
                static const char *const need[] = { "cgroup.procs", NULL };
                char *what = NULL;
                if (!writable(hi.parent_fs, need, &what)) {
                        h->ctl_why[c] = xasprintf("no cgroup delegation (uid %d): %s",
                                                  outside_uid(), what ? what : "");
                        free(what);
                        if (c == CGROUP_CTL_MEMORY)
                                s->deleg_fail = true;
                        cg_hier_clear(&hi);
                        continue;
                }
                hi.ctl_list = take_ptr(&list);
                hi.ctls = CTL_BIT(c);
                h->ctl_hier[c] = (int)h->nhier;
                h->hier[h->nhier++] = hi;
        }
        if (h->ctl_hier[CGROUP_CTL_MEMORY] < 0) {
                s->v1_memory_why = h->ctl_why[CGROUP_CTL_MEMORY]
                                           ? strdup(h->ctl_why[CGROUP_CTL_MEMORY])
                                           : NULL;
                return 0;
        }
        h->version = 1;
        h->delegated = true;
        return 1;
}

/* v1 not usable: drop the hierarchies, keep the per-controller reasons */
static void reset_hiers(struct cgroup_host *h)
{
        for (size_t i = 0; i < h->nhier; i++)
                cg_hier_clear(&h->hier[i]);
        h->nhier = 0;
        for (int c = 0; c < CGROUP_CTL_MAX; c++)
                h->ctl_hier[c] = -1;
}

static int host_new(struct cgroup_host **ret, struct err **err)
{
        struct cgroup_host *h = calloc(1, sizeof(*h));
        if (!h)
                return err_set(err, ENOMEM, "cgroup host");
        pthread_mutex_init(&h->lock, NULL);
        for (int c = 0; c < CGROUP_CTL_MAX; c++) {
                h->ctl_hier[c] = -1;
                h->hier[c].launcher_fd = -1;
        }
        *ret = h;
        uint64_t start;
        int r = cg_pid_starttime(0, &start);
        if (r < 0)
                return err_setc(err, CGROUP_E_IO, -r, "read /proc/self/stat");
        struct stat st;
        if (stat("/proc/self/ns/pid", &st) < 0)
                return err_setc(err, CGROUP_E_IO, errno, "stat /proc/self/ns/pid");
        h->pidns = (uint64_t)st.st_ino;
        snprintf(h->launcher, sizeof(h->launcher), CG_PREFIX "%d-%" PRIu64 "-%" PRIu64,
                 (int)getpid(), start, h->pidns);
        return 0;
}

int cg_host_detect_opts(const struct cg_detect_opts *o, struct cgroup_host **ret,
                        struct err **err)
{
        struct cgroup_host *h = NULL;
        struct scan s = { 0 };
        _cleanup_free_ char *ov = NULL, *mi = NULL;
        int r;
        if (host_new(&h, err) < 0)
                goto fail;
        if (o->parent && normalise_override(o->parent, &ov, err) < 0)
                goto fail;
        s.override = ov;
        r = cg_read_at(AT_FDCWD, "/proc/self/mountinfo", &mi);
        if (r < 0) {
                err_setc(err, CGROUP_E_IO, -r, "read /proc/self/mountinfo");
                goto fail;
        }
        r = cg_parse_mountinfo(mi, &s.m, &s.nm);
        if (r == 0)
                r = cg_read_at(AT_FDCWD, "/proc/self/cgroup", &s.self);
        if (r < 0) {
                err_setc(err, CGROUP_E_IO, -r, "read /proc/self/cgroup");
                goto fail;
        }
        r = 0;
        if (o->force_version != 1)
                r = try_v2(h, &s, o->force_version);
        if (r == 0 && o->force_version != 2) {
                r = try_v1(h, &s);
                if (r == 0)
                        reset_hiers(h);
        }
        if (r < 0) {
                err_setc(err, CGROUP_E_IO, -r, "detect cgroups");
                goto fail;
        }
        if (s.override && !s.override_found) {
                err_setc(err, CGROUP_E_INVALID, 0,
                         "cgroup parent '%s' does not exist in any cgroup hierarchy", o->parent);
                goto fail;
        }
        if (h->version == 2) {
                h->detail = xasprintf("cgroup2 at %s, runs under %s%s", h->v2_mount,
                                      h->hier[0].parent_fs,
                                      h->launcher_move ? " (the launcher moves into "
                                                         CG_LAUNCHER_LEAF " first)" : "");
        } else if (h->version == 1) {
                h->detail = xasprintf("cgroup v1: memory under %s%s%s%s", h->hier[h->ctl_hier[0]].parent_fs,
                                      h->ctl_hier[CGROUP_CTL_PIDS] >= 0 ? ", pids under " : "",
                                      h->ctl_hier[CGROUP_CTL_PIDS] >= 0
                                              ? h->hier[h->ctl_hier[CGROUP_CTL_PIDS]].parent_fs
                                              : "",
                                      h->v2_note ? " (cgroup2 not used)" : "");
        } else {
                bool any = s.nm > 0, v1 = false;
                for (size_t i = 0; i < s.nm; i++)
                        v1 = v1 || !s.m[i].v2;
                const char *v1why = v1 ? s.v1_memory_why : NULL;
                h->reason = s.deleg_fail ? R_NODELEG : s.busy ? R_BUSY : any ? R_NOMEM : R_NOFS;
                if (h->v2_note || v1why)
                        h->detail = xasprintf("%s%s%s", h->v2_note ? h->v2_note : "",
                                              h->v2_note && v1why ? "; v1: " : "",
                                              v1why ? v1why : "");
                else
                        h->detail = strdup(any ? "no cgroup hierarchy with a memory controller"
                                               : "no cgroup filesystem mounted");
        }
        if (!h->detail) {
                err_set(err, ENOMEM, "detect cgroups");
                goto fail;
        }
        scan_free(&s);
        *ret = h;
        return 0;
fail:
        scan_free(&s);
        cg_host_release(h); /* no launcher directory made yet */
        return -1;
}

void cg_host_release(struct cgroup_host *h)
{
        if (!h)
                return;
        for (size_t i = 0; i < CGROUP_CTL_MAX; i++)
                cg_hier_clear(&h->hier[i]);
        for (int c = 0; c < CGROUP_CTL_MAX; c++)
                free(h->ctl_why[c]);
        free(h->detail);
        free(h->v2_note);
        free(h->v2_mount);
        pthread_mutex_destroy(&h->lock);
        free(h);
}

int cgroup_host_detect(const char *parent_override, struct cgroup_host **ret, struct err **err)
{
        struct cg_detect_opts o = { .parent = parent_override };
        return cg_host_detect_opts(&o, ret, err);
}

int cgroup_host_version(const struct cgroup_host *h)
{
        return h ? h->version : 0;
}

const char *cgroup_host_reason(const struct cgroup_host *h)
{
        if (!h)
                return R_NOFS;
        return h->version ? NULL : h->reason;
}

void cgroup_host_describe(const struct cgroup_host *h, struct cgroup_info *ret)
{
        memset(ret, 0, sizeof(*ret));
        ret->version = h->version;
        ret->delegated = h->delegated;
        ret->reason = cgroup_host_reason(h);
        ret->detail = h->detail;
        ret->v2_mount = h->v2_mount;
        ret->v2_note = h->version == 2 ? NULL : h->v2_note;
        ret->launcher = h->launcher;
        ret->launcher_move = h->launcher_move && !h->moved;
        for (int c = 0; c < CGROUP_CTL_MAX; c++) {
                int i = h->ctl_hier[c];
                ret->ctl[c].usable = i >= 0 && h->version != 0;
                ret->ctl[c].path = ret->ctl[c].usable ? h->hier[i].parent_fs : NULL;
                ret->ctl[c].why = ret->ctl[c].usable ? NULL
                                  : h->ctl_why[c]    ? h->ctl_why[c]
                                                     : h->reason;
        }
}

int cgroup_banner(const struct cgroup_host *h, const struct cgroup_limits *lim, char *buf,
                  size_t len)
{
        if (!h || h->version == 0)
                return snprintf(buf, len, "memory ceiling: none (%s)", cgroup_host_reason(h));
        char mem[64] = "", pids[40] = "", cpus[40] = "";
        if (lim && lim->memory_bytes) {
                char sz[24];
                cgroup_format_size(lim->memory_bytes, sz, sizeof(sz));
                snprintf(mem, sizeof(mem), " %s=%s",
                         h->version == 2 ? "memory.max" : "memory.limit_in_bytes", sz);
        }
        if (lim && lim->pids_max)
                snprintf(pids, sizeof(pids), " pids.max=%" PRIu64, lim->pids_max);
        if (lim && lim->cpus > 0)
                snprintf(cpus, sizeof(cpus), " cpus=%g", lim->cpus);
        return snprintf(buf, len, "cgroup%d%s%s%s", h->version, mem, pids, cpus);
}
