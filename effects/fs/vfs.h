/* effects/fs/vfs.h — the in-memory filesystem behind the agent's node:fs.
 *
 * The parent owns the whole tree; the worker only sends fs.* host calls
 * (engine/fs.js).  Nothing here touches the host disk: a struct vfs is
 * plain heap memory, so a path can never reach a real file whatever it
 * says.  Because every operation is a host call recorded in the journal with
 * its args and result, replay serves the same answers and the state never
 * needs saving.  docs/vfs.md has the agent's view.
 *
 * Paths (hostile, from the agent):
 *   - POSIX strings; a relative path resolves against "/" (the VFS cwd);
 *   - normalised lexically: empty and '.' components are dropped, '..' pops
 *     one component and clamps at the root ("/../../etc/passwd" is
 *     "/etc/passwd" inside the VFS, "a/../../b" is "/b");
 *   - a path that ends in '/', '/.' or '/..' names a directory: ENOTDIR
 *     when it is a file, EISDIR when a file would be created there;
 *   - more than max_path bytes, or a component (even one a later '..'
 *     removes) of more than max_name bytes, or more than max_depth components
 *     after normalisation: ENAMETOOLONG;  a NUL byte: EINVAL (only catchable
 *     with the received length, vfs_check_path); "" is ENOENT, as in node.
 * There are no symlinks, hard links, owners or devices: a node is a file or
 * a directory.  "/" and "/tmp" exist initially.
 *
 * Time is a logical clock, never the wall clock: it starts at 0 and every
 * operation that changes something advances it by 1; the nodes it changes
 * get that value as mtimeMs/ctimeMs (birthtimeMs when created).  So the
 * state after a sequence of calls depends on nothing but the calls.
 *
 * Size: every node is charged VFS_NODE_COST + the length of its name, every
 * file its length in bytes.  A call that would exceed max_total_bytes (or
 * max_nodes nodes, or max_file_bytes for one file) fails with ENOSPC (EFBIG
 * for one file) and changes nothing.  "/" and "/tmp" count too.
 *
 * Errors: err->code is the errno value (ENOENT, EEXIST, ENOTDIR, EISDIR,
 * ENOTEMPTY, EINVAL, ENOSPC, EFBIG, ENAMETOOLONG, EBUSY, EACCES, ENOSYS,
 * ENOMEM), err->errnum is 0 and the message is node's
 * "<CODE>: <description>, <syscall> '<path>'" (rename and copyFile:
 * "... '<from>' -> '<to>'") with the path as the agent gave it, control
 * bytes, quote and backslash escaped as \xNN, cut after ~200 bytes.
 * vfs_error_name() turns the code into "ENOENT" etc. for the JS Error.
 * Malformed args (a worker bug, not an agent error) are EINVAL too.
 *
 * Not thread-safe: one struct vfs per run, used from the broker loop.
 *
 * ---- ops: vfs_call(v, op, args) -> value ---------------------------------
 * (op is the host-call op without "fs."; args is a JSON object; optional
 *  members may be absent or null; numbers are JSON numbers)
 *
 *   readFile   {path}                       -> {data_base64}
 *   writeFile  {path, data_base64, flag?, mode?}   -> null
 *                flag "w" (default) | "wx" (EEXIST if present)
 *                     | "a" | "ax" (append; ax: EEXIST if present)
 *                mode: permission bits for a new file (umask 022 applied)
 *   appendFile {path, data_base64, flag?, mode?}  -> null; the same with
 *                flag "a" as the default (creates the file if missing)
 *   exists     {path}                       -> true | false (never fails
 *                                              on a bad path: false)
 *   access     {path, mode?}                -> null; mode is F_OK(0) or an
 *                                              OR of R_OK(4) W_OK(2) X_OK(1)
 *                                              checked against the owner
 *                                              bits: EACCES when missing
 *   mkdir      {path, recursive?, mode?}    -> null, or with recursive the
 *                                              normalised path of the first
 *                                              directory created (null if
 *                                              none was)
 *   readdir    {path, withFileTypes?}       -> ["name", ...] or, with
 *                                              withFileTypes,
 *                                              [{name, type}, ...]; sorted by
 *                                              name bytes
 *   stat       {path}                       -> {type: "file"|"dir", size,
 *   lstat      (same; there are no links)       mode (with S_IFREG/S_IFDIR),
 *                                              ino, nlink, mtimeMs, ctimeMs,
 *                                              atimeMs (= mtimeMs),
 *                                              birthtimeMs}
 *   unlink     {path}                       -> null (a file; dir: EISDIR)
 *   rmdir      {path}                       -> null (an empty directory)
 *   rm         {path, recursive?, force?}   -> null; a directory needs
 *                                              recursive; force: a missing
 *                                              path is not an error
 *   rename     {from, to}                   -> null; moves subtrees; replaces
 *                                              a file, or an empty directory
 *                                              with a directory; to == from,
 *                                              or to inside from: EINVAL
 *   copyFile   {from, to, flags?}           -> null; flags & 1
 *                                              (COPYFILE_EXCL): EEXIST if to
 *                                              exists; other bits ignored
 *
 * "/" itself cannot be removed, renamed or written (EBUSY / EISDIR).
 */
#ifndef CHIDORI_EFFECTS_FS_VFS_H
#define CHIDORI_EFFECTS_FS_VFS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct cJSON;
struct err;
struct vfs;

#define VFS_DEFAULT_MAX_TOTAL_BYTES ((size_t)64 << 20)
#define VFS_DEFAULT_MAX_FILE_BYTES ((size_t)16 << 20)
#define VFS_DEFAULT_MAX_NODES ((size_t)100000)
#define VFS_DEFAULT_MAX_PATH ((size_t)4096)
#define VFS_DEFAULT_MAX_NAME ((size_t)255)
#define VFS_DEFAULT_MAX_DEPTH ((size_t)256)

/* Bytes charged per node on top of its name (and a file's data). */
#define VFS_NODE_COST ((size_t)64)

/* A zero field means "the default". */
struct vfs_limits {
        size_t max_total_bytes; /* file bytes + per-node cost (64 MiB) */
        size_t max_file_bytes;  /* one file (16 MiB) */
        size_t max_nodes;       /* files + directories, "/" included (100,000) */
        size_t max_path;        /* bytes of a path as given (4096) */
        size_t max_name;        /* bytes of one component (255) */
        size_t max_depth;       /* components of a normalised path (256) */
};

/* A VFS holding "/" and "/tmp".  `lim` may be NULL (all defaults).  Fails
 * only on ENOMEM or limits too small for the two initial nodes (EINVAL:
 * fewer than 2 nodes, 3 bytes of name or 2 * VFS_NODE_COST + 3 bytes).
 * Free with vfs_free(). */
int vfs_new(const struct vfs_limits *lim, struct vfs **ret, struct err **err);

/* Free every node.  NULL is ok. */
void vfs_free(struct vfs *v);

/* Run one fs.<op> (see the table above).  On success *ret is a new cJSON
 * value the caller frees with cJSON_Delete (a JSON null for "null").  On
 * failure the VFS is unchanged, *ret is untouched and *err says why. */
int vfs_call(struct vfs *v, const char *op, const struct cJSON *args, struct cJSON **ret, struct err **err);

/* Check an agent path of `len` bytes (the length as received, so an
 * embedded NUL is caught) against the path rules: 0, or -1 with *err set
 * as a vfs_call would (syscall name `syscall`). */
int vfs_check_path(const struct vfs *v, const char *path, size_t len, const char *syscall, struct err **err);

/* "ENOENT" etc. for an err->code of vfs_call; "" for anything else. */
const char *vfs_error_name(int code);

/* Usage figures, for status output and tests. */
struct vfs_usage {
        size_t bytes; /* charged against max_total_bytes */
        size_t nodes;
};
void vfs_usage(const struct vfs *v, struct vfs_usage *ret);

/* Walk the whole tree and check its invariants (links between parents and
 * entries, the hash table, the charged bytes and node count against the
 * limits, depth).  For tests and the fuzzer: O(nodes).  On success
 * *ret_digest (may be NULL) is a hash of everything an agent can observe
 * (names, kinds, bytes, modes, times, the clock), so a caller can check
 * that a failed call changed nothing. */
int vfs_verify(const struct vfs *v, uint64_t *ret_digest, struct err **err);

#endif
