/* sandbox/caps.h — capabilities, securebits and process locks for the
 * sandbox child.  Never prints, never exits; libcap allocates a little.
 *
 * Both functions act on the calling thread's credentials (capabilities and
 * no_new_privs are per thread): call them while the child is single-threaded.
 */
#ifndef CHIDORI_SANDBOX_CAPS_H
#define CHIDORI_SANDBOX_CAPS_H

#include <linux/securebits.h>
#include <sys/types.h>

#include "common/err.h"

/* The securebits caps_drop_all() sets and locks (0xef): every bit and lock of
 * Linux 4.3 except SECBIT_KEEP_CAPS itself, which stays off (and locked). */
#define CAPS_SECUREBITS                                                                                          \
        (SECBIT_NOROOT | SECBIT_NOROOT_LOCKED | SECBIT_NO_SETUID_FIXUP | SECBIT_NO_SETUID_FIXUP_LOCKED |         \
         SECBIT_KEEP_CAPS_LOCKED | SECBIT_NO_CAP_AMBIENT_RAISE | SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED)

/* Drop every capability for good, in this order (it matters: the bounding set
 * and securebits can only be changed while CAP_SETPCAP is still effective):
 *   1. bounding set: PR_CAPBSET_DROP of every capability 0..last_cap except
 *      CAP_SETPCAP (last_cap from /proc/sys/kernel/cap_last_cap, probed with
 *      PR_CAPBSET_READ when /proc is not there);
 *   2. ambient set: PR_CAP_AMBIENT_CLEAR_ALL;
 *   3. PR_SET_SECUREBITS: SECBIT_NOROOT, SECBIT_NO_SETUID_FIXUP,
 *      SECBIT_NO_CAP_AMBIENT_RAISE, each with its _LOCKED bit, and
 *      SECBIT_KEEP_CAPS_LOCKED (KEEP_CAPS itself off): uid 0 gains nothing at
 *      execve and nothing can undo these bits;
 *   4. PR_CAPBSET_DROP(CAP_SETPCAP);
 *   5. inheritable, permitted, effective cleared (libcap cap_init + cap_set_proc),
 *      then read back and checked.
 * Needs CAP_SETPCAP (effective) in the current user namespace, so it must
 * come after everything else that needs a capability (netns_lo_up: NET_ADMIN;
 * mounts and pivot_root: SYS_ADMIN; setgroups/setresgid/setresuid:
 * SETGID/SETUID).  Returns 0, or -1 with *err set (EPERM = CAP_SETPCAP
 * missing; a failure after step 1 leaves the process partly stripped: treat
 * it as fatal). */
int caps_drop_all(struct err **err);

/* no_new_privs, not dumpable, parent-death signal SIGKILL; then checks that
 * getppid() still equals expected_ppid, which closes the race where the
 * parent died before the death signal was armed (-1 with ESRCH).  Pass
 * expected_ppid < 0 to skip the check.  In a new PID namespace getppid() is
 * always 0 (the parent lives outside), so the check cannot see the parent's
 * death there: pass 0, and close that race with the parent sync pipe (EOF =
 * parent gone) read after this call.
 * Kernel facts the caller must respect: the death signal is cleared by any
 * later change of euid/egid/fsuid/fsgid and by exec of a set-id binary, and
 * fires when the parent THREAD that forked us exits; dumpable goes back to 1
 * at execve (the exec'd program must set it again if it matters);
 * no_new_privs is permanent and survives execve.  Returns 0, or -1 with *err. */
int caps_lock_process(pid_t expected_ppid, struct err **err);

#endif
