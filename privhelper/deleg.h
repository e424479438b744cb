/* privhelper/deleg.h — the supervisor's cgroup, delegated to its uid.
 *
 * In every cgroup hierarchy chidori uses (v1 memory, pids, cpu; v2), the
 * helper makes D = <parent>/chidori-<pid>-<starttime>-<pidns> (its own
 * pid: the name `chidori` and the next runs judge stale, as the monitor's
 * own folder always was), gives D and the files a process needs to manage
 * it (cgroup.procs, tasks, cgroup.subtree_control, cgroup.threads) to the
 * supervisor's uid, enables the controllers below the parent (v2) and moves
 * the supervisor into D before it runs.  The supervisor's own cgroup code
 * then works below D as a delegated, unprivileged manager does.  <parent>
 * is the helper's own cgroup, or the operator's --cgroup-parent. */
#ifndef CHIDORI_PRIVHELPER_DELEG_H
#define CHIDORI_PRIVHELPER_DELEG_H

#include <stdbool.h>
#include <sys/types.h>

#include "common/err.h"

#define DELEG_MAX 8

struct deleg {
        size_t n;
        struct {
                bool v2;
                unsigned ctls;
                char *mount, *parent_cg, *parent_fs;
        } h[DELEG_MAX];
        char name[96];
};

/* Make D in each hierarchy and move pid into it.  A hierarchy it cannot
 * use is left out (the supervisor's detection then names what is missing). */
int deleg_create(struct deleg *d, const char *override, pid_t pid, uid_t uid, gid_t gid, struct err **err);
/* Hand d to the helper across its exec (decision 174): a sealed memfd
 * (chan/chan.h's blob) without close-on-exec, and take it back there.
 * 0, or -1 with *err. */
int deleg_save(const struct deleg *d, int *ret_fd, struct err **err);
int deleg_load(struct deleg *d, int fd, struct err **err);
/* Remove what deleg_create made, with everything below it. */
void deleg_remove(struct deleg *d);

#endif
