/* privhelper/ready.c — the supervisor's TMPDIR, the id-mapping check
 * without a trial, and the word (ready.h). */
#define _GNU_SOURCE
#include "privhelper/ready.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/magic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "common/tmpown.h"
#include "privhelper/proto.h"

/* ext4 and XFS took id-mapped mounts in 5.12, with mount_setattr itself;
 * tmpfs in 6.3: those need no trial. */
bool ready_known_mappable(int fd)
{
        struct statfs sf;
        if (fstatfs(fd, &sf) < 0)
                return false;
        if (sf.f_type == EXT4_SUPER_MAGIC || sf.f_type == XFS_SUPER_MAGIC)
                return true;
        struct utsname u;
        unsigned major = 0, minor = 0;
        return sf.f_type == TMPFS_MAGIC && uname(&u) == 0 && sscanf(u.release, "%u.%u", &major, &minor) == 2 &&
               (major > 6 || (major == 6 && minor >= 3));
}

/* The supervisor's TMPDIR (the bundle box's shims, a nested run's
 * journal): a folder of its own in the operator's TMPDIR, which it may not
 * be able to write; named so that the next run removes it if we are killed. */
static bool others_can_search(const char *dir) /* every folder on the way: o+x */
{
        char buf[PATH_MAX];
        if (snprintf(buf, sizeof(buf), "%s", dir) >= (int)sizeof(buf) || buf[0] != '/')
                return false;
        for (char *p = buf + strlen(buf);; *p = '\0') {
                struct stat st;
                if (stat(buf[0] ? buf : "/", &st) < 0 || !(st.st_mode & S_IXOTH))
                        return false;
                p = strrchr(buf, '/');
                if (!p || p == buf)
                        return stat("/", &st) == 0 && (st.st_mode & S_IXOTH);
        }
}

int ready_make_tmp(char *tmp, size_t len)
{
        char sub[PATH_MAX + 8];
        tmp[0] = '\0';
        /* The operator's TMPDIR when the supervisor can reach it, else /tmp
         * (a TMPDIR inside a 0700 folder of root's) */
        struct stat st;
        if (stat(tmp_dir(), &st) < 0)
                return 0; /* the supervisor says so where it needs one (bundling) */
        const char *dir = others_can_search(tmp_dir()) ? tmp_dir() : "/tmp";
        if (tmp_owned_template(tmp, len, dir, TMP_KIND_SUPERVISOR) < 0 || !mkdtemp(tmp)) {
                fprintf(stderr, "chidori: make the supervisor's temporary folder in %s: %s\n", dir, strerror(errno));
                tmp[0] = '\0';
                return -1;
        }
        snprintf(sub, sizeof(sub), "%s/tmp", tmp);
        if (chmod(tmp, 0711) < 0 || mkdir(sub, 0700) < 0 || chown(sub, PRIV_SUPERVISOR_ID, PRIV_SUPERVISOR_ID) < 0) {
                fprintf(stderr, "chidori: make the supervisor's temporary folder %s: %s\n", sub, strerror(errno));
                return -1;
        }
        return 0;
}

void ready_remove_tmp(const char *tmp)
{
        const char *slash = strrchr(tmp, '/');
        if (!tmp[0] || !slash)
                return;
        char dir[PATH_MAX];
        snprintf(dir, sizeof(dir), "%.*s", slash == tmp ? 1 : (int)(slash - tmp), tmp);
        int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd >= 0) {
                tmp_remove_at(dfd, slash + 1, 0);
                close(dfd);
        }
}

void ready_send(int sock, const char *tmp)
{
        static struct priv_ready r;
        r.magic = PRIV_MAGIC;
        r.err = 0;
        r.tmpdir[0] = '\0';
        if (tmp[0])
                snprintf(r.tmpdir, sizeof(r.tmpdir), "%s/tmp", tmp);
        /* Not sent: the supervisor has already exited (its settings were
         * refused, and it said so); its status is collected by the caller. */
        (void)!send(sock, &r, sizeof(r), MSG_NOSIGNAL);
}
