/* sandbox/idmap.h — id-mapped mounts (mount_setattr MOUNT_ATTR_IDMAP) and
 * the helper user namespaces that carry their maps.  Used by the box
 * (root's rw --bind folders: on-disk 0 <-> 65534, the box's root) and by
 * the broker's start (its state dir and workspace: on-disk 0 <-> the broker
 * uid), so what they write stays owned by root on disk. */
#ifndef CHIDORI_SANDBOX_IDMAP_H
#define CHIDORI_SANDBOX_IDMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "common/err.h"

/* A user namespace whose uid 0 / gid 0 are `uid` / `gid` outside (setgroups
 * denied).  A short-lived child makes it; the namespace outlives it through
 * the returned fd.  -1 with err set. */
int idmap_userns(uid_t uid, gid_t gid, struct err **err);
/* Write text to /proc/PID/FILE (uid_map, gid_map, setgroups) in one write. */
int idmap_write_proc(pid_t pid, const char *file, const char *text, struct err **err);

/* A detached copy of the mount tree at `path` (open_tree OPEN_TREE_CLONE,
 * recursive), id-mapped through `userns` and given `attr` (MOUNT_ATTR_*,
 * e.g. NOSUID | NODEV | NOEXEC).  userns < 0: a plain copy.  Returns its fd,
 * or -1 with err ("open_tree: ..." or "mount_setattr: ...": a filesystem
 * that cannot be id-mapped, e.g. tmpfs before Linux 6.3, ramfs, NFS). */
int idmap_tree(const char *path, int userns, unsigned long long attr, struct err **err);

/* Attach a tree from idmap_tree() at `dst` (created, with its parents, when
 * missing: a folder, or an empty file for a file).  Closes nothing. */
int idmap_attach(int tree, const char *dst, struct err **err);

/* How the box's (or the broker's) root can be mapped by this process.
 * IDMAP_OTHER: to another id (65534, the broker uid): root with CAP_SETUID
 * and CAP_SETGID in its user namespace, both ids mapped there.
 * IDMAP_SELF: to the caller's own uid, the rootless mapping: any non-root
 * caller; root without CAP_SETUID/CAP_SETGID (a container runtime's
 * default capability set) but with CAP_SETFCAP, which the kernel (5.12+)
 * asks of whoever maps uid 0 into a new user namespace.
 * IDMAP_NONE: root with neither: no user namespace can be given any map.
 * why (root, not IDMAP_OTHER): what is missing, for the banner and errors. */
enum idmap_root { IDMAP_OTHER, IDMAP_SELF, IDMAP_NONE };
enum idmap_root idmap_root_mapping(uid_t other, char *why, size_t len);

/* Appended to a clone3 or unshare error that a container's seccomp
 * profile may have caused (ENOSYS, EPERM). */
#define SECCOMP_PROFILE_HINT                                                                                  \
        "; in a container, a seccomp profile that refuses clone3 or namespaces (a runtime's default) does "  \
        "this: give it deploy/seccomp/chidori.json, docs/pod.md"

/* mkdir -p with `mode`. */
int mkdir_parents(const char *path, mode_t mode, struct err **err);

#endif
