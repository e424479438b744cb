/* privhelper/ready.h — what the supervisor waits for before it does
 * anything (its word, proto.h struct priv_ready): a TMPDIR of its own, its
 * delegated cgroup (deleg.h) and the check that the folders the broker
 * writes take an id-mapped mount.  `chidori` makes them itself, as root,
 * while the supervisor execs, when every such folder is on a file system
 * known to take one (ext4, XFS, tmpfs from 6.3), and passes them to the
 * helper (`--ready`); otherwise the helper tries (decisions 164, 174). */
#ifndef CHIDORI_PRIVHELPER_READY_H
#define CHIDORI_PRIVHELPER_READY_H

#include <stdbool.h>
#include <stddef.h>

/* The file system of fd takes id-mapped mounts without a trial. */
bool ready_known_mappable(int fd);
/* TMPDIR/chidori-sup-<owner>-XXXXXX (root's, 0711) with "tmp" in it the
 * supervisor's: its path in tmp ("" when the operator's TMPDIR does not
 * exist).  0, or -1 with the reason printed. */
int ready_make_tmp(char *tmp, size_t len);
/* Remove it and what is in it ("" : nothing). */
void ready_remove_tmp(const char *tmp);
/* The word: the supervisor's TMPDIR is tmp/tmp ("" : none). */
void ready_send(int sock, const char *tmp);

#endif
