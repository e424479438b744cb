/* common/tmpown.h — temporary files and folders that name their owner, so
 * the next chidori can remove what a killed one left (docs/faults.md).
 *
 * A name is DIR/chidori-KIND-<pid>-<starttime>-<pidns>-XXXXXX: the process
 * that made it (pid, its start time: field 22 of /proc/PID/stat, and the
 * inode of its pid namespace, as the cgroup directories are named,
 * docs/cgroups.md).  tmp_reap_stale() removes only such names of a KIND it
 * knows, owned by this uid, of this pid namespace, whose process is gone
 * (no such pid, or another start time); anything else is left alone. */
#ifndef CHIDORI_COMMON_TMPOWN_H
#define CHIDORI_COMMON_TMPOWN_H

#include <stddef.h>

/* The folder temporary files go in: $TMPDIR when set and not empty, else /tmp. */
const char *tmp_dir(void);

/* Writes the mkstemp/mkdtemp template DIR/chidori-KIND-<owner>-XXXXXX
 * into buf.  0, or -1 with errno (ENAMETOOLONG). */
int tmp_owned_template(char *buf, size_t len, const char *dir, const char *kind);

/* Removes the stale entries of DIR (see above; common/tmpreap.c).  The
 * number removed. */
int tmp_reap_stale(const char *dir);

/* Field 22 of /proc/PID/stat (pid 0: this process): 0, -ENOENT when there
 * is no such process, another -errno; the inode of our pid namespace. */
#include <sys/types.h>
int tmp_starttime(pid_t pid, unsigned long long *ret);
int tmp_pidns(unsigned long long *ret);

/* The kinds tmp_reap_stale() knows. */
#define TMP_KIND_STDIN "stdin"   /* an agent read from stdin (cli/run.c) */
#define TMP_KIND_SHIMS "shims"   /* the node: shims of a bundle box (cli/bundlebox.c) */
#define TMP_KIND_BUNDLE "bundle" /* a copy of a stdin agent to bundle (cli/agent.c) */
#define TMP_KIND_NESTED "nested" /* a nested run's journal (effects/proc/agent-call.c) */
#define TMP_KIND_SUPERVISOR "sup" /* the supervisor's TMPDIR, made by chidori-privhelper */

/* Removes NAME below dfd: a file, or a folder and what it holds (depth:
 * 0; at most a few levels). */
void tmp_remove_at(int dfd, const char *name, int depth);

#endif
