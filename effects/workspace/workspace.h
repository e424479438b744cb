/* effects/workspace/workspace.h — the directory behind chidori.workspace.{list,read,write,delete,manifest}.
 *
 * The trusted parent performs these operations on a real directory (given with
 * `--workspace DIR`) on behalf of the agent.  Every path comes from the agent
 * and is hostile; the rules (docs/workspace.md has the reasons):
 *
 *   - paths are relative, at most WORKSPACE_PATH_MAX bytes, components at most
 *     WORKSPACE_NAME_MAX bytes, no NUL; every '..' component is refused (one
 *     that climbs above the root is OUTSIDE, any other is INVALID); '.' and
 *     empty components ("a//b", "a/./b", a trailing '/') are dropped;
 *   - resolution is openat2(root, path, RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS
 *     | RESOLVE_NO_XDEV): symlinks that stay inside the root are followed
 *     (except at the final component of write/delete), a symlink that leads
 *     out, a magic link or a mount crossing fails, and the kernel checks this
 *     at every step, so swapping a symlink in during the call does not help;
 *   - without openat2 (ENOSYS, Linux < 5.6) workspace_open() fails: there is
 *     no fallback to unchecked resolution;
 *   - write replaces the final directory entry atomically (temp file in the
 *     same directory, fsync, renameat): a reader sees the old or the new
 *     content, a symlink or hard link at the target is replaced, never
 *     written through; files are created 0644, directories 0755 (the umask
 *     may narrow both);
 *   - delete removes the directory entry itself (a symlink, not its target)
 *     and never recurses: a directory must be empty.
 *
 * Error messages start with "workspace: ", name the agent's path (escaped and
 * truncated, never the host path of the root) and say why; err->code is an
 * enum workspace_error_code so the broker can map it.
 *
 * A struct workspace holds only the root fd and the limits: the operations
 * keep no other state and may be called from several threads at once.
 */
#ifndef CHIDORI_EFFECTS_WORKSPACE_H
#define CHIDORI_EFFECTS_WORKSPACE_H

#include <stdbool.h>
#include <stddef.h>

struct cJSON;
struct err;
struct workspace;

#define WORKSPACE_PATH_MAX 4095u  /* bytes, without the NUL (PATH_MAX - 1) */
#define WORKSPACE_NAME_MAX 255u   /* bytes per component (NAME_MAX) */

#define WORKSPACE_DEFAULT_MAX_FILE_BYTES ((size_t)16 << 20)
#define WORKSPACE_DEFAULT_MAX_LIST_ENTRIES ((size_t)10000)
#define WORKSPACE_DEFAULT_MAX_TOTAL_BYTES ((size_t)1 << 30)
#define WORKSPACE_DEFAULT_MAX_MANIFEST_FILES ((size_t)100000)
#define WORKSPACE_MANIFEST_DEPTH_MAX 128u

/* A zero field means "the default". */
struct workspace_limits {
        size_t max_file_bytes;     /* read and write, per file (16 MiB) */
        size_t max_list_entries;   /* entries of one directory, list and manifest (10,000) */
        size_t max_total_bytes;    /* bytes hashed by one manifest (1 GiB) */
        size_t max_manifest_files; /* files in one manifest (100,000) */
};

/* err->code of a failed workspace_* call (0 never means an error). */
enum workspace_error_code {
        WORKSPACE_NOT_FOUND = 1, /* no such entry, or a parent is missing / not a directory */
        WORKSPACE_OUTSIDE,       /* '..' above the root, absolute path, symlink out, magic link, mount */
        WORKSPACE_TOO_BIG,       /* a limit of struct workspace_limits */
        WORKSPACE_NOT_FILE,      /* wrong kind: read of a dir/fifo/device, list of a file, write onto a dir */
        WORKSPACE_INVALID,       /* malformed path (empty, NUL, too long, in-root '..'), non-empty dir */
        WORKSPACE_IO,            /* anything else the OS said (errnum set), or openat2 missing */
        WORKSPACE_UNCONFIGURED,  /* the run has no --workspace (the effect layer says so) */
        WORKSPACE_ERROR_MAX
};

/* "not_found", "outside", "too_big", "not_file", "invalid", "io", "no_workspace"; NULL
 * otherwise (no code on the error). */
const char *workspace_error_name(int code);

/* Open the workspace rooted at `dir` (trusted: absolute or relative to the
 * cwd, symlinks in it are followed once, here).  `lim` may be NULL (all
 * defaults).  Fails when dir is not a directory or openat2 with the
 * RESOLVE_* flags above is unavailable.  On success *ret owns an
 * O_PATH|O_DIRECTORY fd of the root; free with workspace_close(). */
int workspace_open(const char *dir, const struct workspace_limits *lim, struct workspace **ret,
                   struct err **err);

/* Close the root fd and free.  NULL is ok. */
void workspace_close(struct workspace *w);

/* Check an agent path of `len` bytes (the length as received, so an embedded
 * NUL is caught) against the rules above.  `root_ok`: "" and "." (the root)
 * are accepted.  Every workspace_* operation calls this with strlen(rel);
 * callers that know the received length should call it first. */
int workspace_check_path(const char *rel, size_t len, bool root_ok, struct err **err);

/* The entries of directory `rel` ("" or "." = the root; in-root symlinks are
 * followed): *ret is a cJSON array of {name, type, size} sorted by name
 * bytes, type one of "file", "dir", "symlink", "other" (the entry itself, not
 * followed); size is st_size for files, 0 for the rest.  More than
 * max_list_entries entries is TOO_BIG.  Caller frees *ret with cJSON_Delete. */
int workspace_list(struct workspace *w, const char *rel, struct cJSON **ret, struct err **err);

/* The bytes of regular file `rel` (in-root symlinks followed).  Other kinds
 * (dir, fifo, socket, device) are NOT_FILE and opening them never blocks;
 * more than max_file_bytes is TOO_BIG.  *ret_data is malloc'd, holds *ret_len
 * bytes plus a NUL not counted in *ret_len; caller frees. */
int workspace_read(struct workspace *w, const char *rel, char **ret_data, size_t *ret_len,
                   struct err **err);

/* Replace (or create) file `rel` with `len` bytes of `data`, atomically.
 * len > max_file_bytes is refused before anything is touched.  Missing parent
 * directories are created (0755) only when `create_dirs`.  The final
 * component is never followed: a symlink there is replaced by the file.
 * A directory there is NOT_FILE.  A path ending in '/' is INVALID. */
int workspace_write(struct workspace *w, const char *rel, const void *data, size_t len,
                    bool create_dirs, struct err **err);

/* Remove the entry `rel`: a file, a symlink (the link, never its target) or
 * an empty directory.  A missing entry (or missing parent) is not an error:
 * *ret_existed (may be NULL) says whether something was removed. */
int workspace_delete(struct workspace *w, const char *rel, bool *ret_existed, struct err **err);

/* Every regular file under the root, recursively: *ret is a cJSON array of
 * {path, size, sha256 (lower-case hex)} sorted by path bytes.  Symlinks are
 * not followed, other mounts are not entered, fifos/devices are skipped.
 * TOO_BIG when more than max_total_bytes would be hashed, more than
 * max_manifest_files files are found, a directory holds more than
 * max_list_entries entries or nesting exceeds WORKSPACE_MANIFEST_DEPTH_MAX.
 * Caller frees *ret with cJSON_Delete. */
int workspace_manifest(struct workspace *w, struct cJSON **ret, struct err **err);
/* workspace_manifest() that gives up when `budget` is over (common/budget.h),
 * checked per file and per chunk read: code WORKSPACE_IO, errnum ETIMEDOUT
 * or EINTR.  budget may be NULL. */
struct budget;
int workspace_manifest_until(struct workspace *w, const struct budget *budget, struct cJSON **ret,
                             struct err **err);

#endif
