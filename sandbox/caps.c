/* sandbox/caps.c — drop every capability for good; lock the process.
 *
 * Runs in the sandbox child after the privileged setup (lo up, mounts,
 * pivot_root, id changes) and before Landlock, seccomp and execve.
 */
#define _GNU_SOURCE
#include "sandbox/caps.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <sys/capability.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "common/cleanup.h"

/* Highest capability number the kernel knows.  /proc may be absent (after
 * pivot_root, before a new /proc is mounted): then probe the bounding set,
 * where PR_CAPBSET_READ answers EINVAL past the last capability. */
static int last_cap(void)
{
        _cleanup_close_ int fd = open("/proc/sys/kernel/cap_last_cap", O_RDONLY | O_CLOEXEC);
        if (fd >= 0) {
                char buf[16];
                ssize_t n = read(fd, buf, sizeof(buf) - 1);
                int v = 0;
                bool ok = n > 0;
                for (ssize_t i = 0; ok && i < n && buf[i] != '\n'; i++) {
                        if (buf[i] < '0' || buf[i] > '9' || v > 63)
                                ok = false;
                        else
                                v = v * 10 + (buf[i] - '0');
                }
                if (ok && v <= 63)
                        return v;
        }
        int c = 0;
        while (c < 64 && prctl(PR_CAPBSET_READ, (unsigned long)c, 0, 0, 0) >= 0)
                c++;
        return c - 1;
}

static void cleanup_capp(cap_t *c)
{
        if (*c)
                cap_free(*c);
}
#define _cleanup_cap_ __attribute__((cleanup(cleanup_capp)))

static int bset_drop(int c, struct err **err)
{
        if (prctl(PR_CAPBSET_DROP, (unsigned long)c, 0, 0, 0) < 0) {
                if (errno == EPERM)
                        return err_set(err, errno, "drop capability %d from the bounding set: needs CAP_SETPCAP", c);
                return err_set(err, errno, "drop capability %d from the bounding set", c);
        }
        return 0;
}

int caps_drop_all(struct err **err)
{
        int last = last_cap();
        if (last < CAP_SETPCAP)
                return err_set(err, EINVAL, "cannot tell the last capability (got %d)", last);

        /* 1. Bounding set, keeping CAP_SETPCAP for steps 3 and 4. */
        for (int c = 0; c <= last; c++)
                if (c != CAP_SETPCAP && bset_drop(c, err) < 0)
                        return -1;

        /* 2. Ambient set.  EINVAL: kernel < 4.3, which has no ambient set. */
        if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
                return err_set(err, errno, "clear the ambient capability set");

        /* 3. Securebits, while CAP_SETPCAP is still effective. */
        int bits = prctl(PR_GET_SECUREBITS, 0, 0, 0, 0);
        if (bits < 0)
                return err_set(err, errno, "read securebits");
        if ((bits & CAPS_SECUREBITS) != CAPS_SECUREBITS &&
            prctl(PR_SET_SECUREBITS, (unsigned long)(bits | CAPS_SECUREBITS), 0, 0, 0) < 0)
                return err_set(err, errno, "set securebits 0x%x (have 0x%x)%s", bits | CAPS_SECUREBITS, bits,
                               errno == EPERM ? ": needs CAP_SETPCAP, or a bit is already locked the other way"
                                              : "");

        /* 4. Last bounding capability. */
        if (bset_drop(CAP_SETPCAP, err) < 0)
                return -1;

        /* 5. Inheritable, permitted, effective. */
        _cleanup_cap_ cap_t none = cap_init();
        if (!none)
                return err_set(err, errno, "cap_init");
        if (cap_set_proc(none) < 0)
                return err_set(err, errno, "clear the capability sets");

        _cleanup_cap_ cap_t now = cap_get_proc();
        if (!now)
                return err_set(err, errno, "read back the capability sets");
        if (cap_compare(now, none) != 0)
                return err_set(err, EPERM, "capability sets still non-empty after cap_set_proc");
        if (prctl(PR_CAPBSET_READ, (unsigned long)CAP_SETPCAP, 0, 0, 0) != 0)
                return err_set(err, EPERM, "CAP_SETPCAP still in the bounding set");
        return 0;
}

int caps_lock_process(pid_t expected_ppid, struct err **err)
{
        /* Arm the death signal first, then look at the parent: if it died
         * before the signal was armed we are already reparented and see it. */
        if (prctl(PR_SET_PDEATHSIG, (unsigned long)SIGKILL, 0, 0, 0) < 0)
                return err_set(err, errno, "set parent-death signal");
        if (expected_ppid >= 0) {
                pid_t ppid = getppid();
                if (ppid != expected_ppid)
                        return err_set(err, ESRCH, "parent %d is gone (parent is now %d)", (int)expected_ppid,
                                       (int)ppid);
        }
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
                return err_set(err, errno, "set no_new_privs");
        if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
                return err_set(err, errno, "clear the dumpable flag");
        return 0;
}
