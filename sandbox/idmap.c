/* sandbox/idmap.c — id-mapped mounts and their user namespaces (idmap.h). */
#define _GNU_SOURCE
#include "sandbox/idmap.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/capability.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/syscall.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/cleanup.h"

int idmap_write_proc(pid_t pid, const char *file, const char *text, struct err **err)
{
        char path[64];
        snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, file);
        _cleanup_close_ int fd = open(path, O_WRONLY | O_CLOEXEC);
        ssize_t n = (ssize_t)strlen(text);
        if (fd < 0 || write(fd, text, (size_t)n) != n)
                return err_set(err, errno, "write %s", path);
        return 0;
}

/* The holder of an id-mapping user namespace: it only waits to be killed.
 * It shares our memory (CLONE_VM: nothing is copied) and runs on its own
 * small stack; it makes raw system calls only. */
#define HOLDER_STACK (64 * 1024)

__attribute__((no_sanitize("address", "undefined"))) static int ns_holder(void *arg)
{
        pid_t parent = *(const pid_t *)arg;
        /* Killed with its parent: a parent killed before its kill() below
         * left this process paused forever (found by make soak). */
        if (syscall(SYS_prctl, PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0 || syscall(SYS_getppid) != parent)
                syscall(SYS_exit, 1);
        for (;;)
                syscall(SYS_pause);
        return 0;
}

int idmap_userns(uid_t uid, gid_t gid, struct err **err)
{
        /* The namespace exists when clone returns: its maps are written at
         * once, without waiting for the holder to run. */
        void *stack = mmap(NULL, HOLDER_STACK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
        if (stack == MAP_FAILED)
                return err_set(err, errno, "map a stack for the id-mapping namespace's holder");
        /* Every signal blocked in the holder: a handler of ours must not
         * run in it (it would write our memory). */
        pid_t parent = getpid();
        sigset_t all, old;
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &old);
        pid_t c = clone(ns_holder, (char *)stack + HOLDER_STACK, CLONE_VM | CLONE_NEWUSER | SIGCHLD, &parent);
        int e = errno;
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        if (c < 0) {
                munmap(stack, HOLDER_STACK);
                return err_set(err, e, "the helper could not create a user namespace (clone)");
        }
        int fd = -1;
        char umap[64], gmap[64];
        snprintf(umap, sizeof(umap), "0 %u 1\n", (unsigned)uid);
        snprintf(gmap, sizeof(gmap), "0 %u 1\n", (unsigned)gid);
        if (idmap_write_proc(c, "setgroups", "deny", err) == 0 && idmap_write_proc(c, "uid_map", umap, err) == 0 &&
            idmap_write_proc(c, "gid_map", gmap, err) == 0) {
                char path[64];
                snprintf(path, sizeof(path), "/proc/%d/ns/user", (int)c);
                fd = open(path, O_RDONLY | O_CLOEXEC);
                if (fd < 0)
                        err_set(err, errno, "open %s", path);
        }
        kill(c, SIGKILL);
        while (waitpid(c, NULL, 0) < 0 && errno == EINTR)
                ;
        munmap(stack, HOLDER_STACK);
        return fd;
}

int idmap_tree(const char *path, int userns, unsigned long long attr, struct err **err)
{
        int t = open_tree(AT_FDCWD, path, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE);
        if (t < 0)
                return err_set(err, errno, "open_tree");
        struct mount_attr a = { .attr_set = attr };
        if (userns >= 0) {
                a.attr_set |= MOUNT_ATTR_IDMAP;
                a.userns_fd = (uint64_t)userns;
        }
        if (a.attr_set && mount_setattr(t, "", AT_EMPTY_PATH | AT_RECURSIVE, &a, sizeof(a)) < 0) {
                int e = errno;
                close(t);
                return err_set(err, e, "mount_setattr");
        }
        return t;
}

int mkdir_parents(const char *path, mode_t mode, struct err **err)
{
        char buf[4096];
        if (snprintf(buf, sizeof(buf), "%s", path) >= (int)sizeof(buf))
                return err_set(err, ENAMETOOLONG, "mkdir %s", path);
        for (char *p = buf + 1; *p; p++) {
                if (*p != '/')
                        continue;
                *p = '\0';
                if (mkdir(buf, mode) < 0 && errno != EEXIST)
                        return err_set(err, errno, "mkdir %s", buf);
                *p = '/';
        }
        if (mkdir(buf, mode) < 0 && errno != EEXIST)
                return err_set(err, errno, "mkdir %s", buf);
        return 0;
}

int idmap_attach(int tree, const char *dst, struct err **err)
{
        struct stat st;
        if (fstat(tree, &st) < 0)
                return err_set(err, errno, "stat the tree for %s", dst);
        char parent[4096];
        snprintf(parent, sizeof(parent), "%s", dst);
        char *s = strrchr(parent, '/');
        if (s && s != parent) {
                *s = '\0';
                if (mkdir_parents(parent, 0755, err) < 0)
                        return -1;
        }
        if (S_ISDIR(st.st_mode)) {
                if (mkdir_parents(dst, 0755, err) < 0)
                        return -1;
        } else {
                int mp = open(dst, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
                if (mp < 0 && errno != EEXIST)
                        return err_set(err, errno, "create mount point %s", dst);
                if (mp >= 0)
                        close(mp);
        }
        if (move_mount(tree, "", AT_FDCWD, dst, MOVE_MOUNT_F_EMPTY_PATH) < 0)
                return err_set(err, errno, "attach %s", dst);
        return 0;
}

static bool id_mapped(const char *file, unsigned id) /* in a range of /proc/self/<file> */
{
        char path[32];
        snprintf(path, sizeof(path), "/proc/self/%s", file);
        FILE *f = fopen(path, "re");
        unsigned in, out, count;
        bool found = false;
        while (f && !found && fscanf(f, "%u %u %u", &in, &out, &count) == 3)
                found = id >= in && id - in < count;
        if (f)
                fclose(f);
        return found;
}

enum idmap_root idmap_root_mapping(uid_t other, char *why, size_t len)
{
        char buf[200];
        cap_t c = getuid() == 0 ? cap_get_proc() : NULL;
        cap_flag_value_t su = CAP_CLEAR, sg = CAP_CLEAR, fc = CAP_CLEAR;
        if (c && (cap_get_flag(c, CAP_SETUID, CAP_EFFECTIVE, &su) | cap_get_flag(c, CAP_SETGID, CAP_EFFECTIVE, &sg) |
                  cap_get_flag(c, CAP_SETFCAP, CAP_EFFECTIVE, &fc)) != 0)
                su = CAP_CLEAR;
        if (c)
                cap_free(c);
        bool setid = su == CAP_SET && sg == CAP_SET;
        enum idmap_root r = getuid() != 0                                                           ? IDMAP_SELF
                            : setid && id_mapped("uid_map", other) && id_mapped("gid_map", other) ? IDMAP_OTHER
                            : fc == CAP_SET                                                         ? IDMAP_SELF
                                                                                                    : IDMAP_NONE;
        snprintf(buf, sizeof(buf), setid ? "uid %u is not mapped in this user namespace"
                                         : "no CAP_SETUID/CAP_SETGID to map it to uid %u", (unsigned)other);
        if (why && len)
                snprintf(why, len, r == IDMAP_NONE ? "root with %s nor CAP_SETFCAP to map it to uid 0" : "%s",
                         getuid() != 0 || r == IDMAP_OTHER ? "" : buf);
        return r;
}
