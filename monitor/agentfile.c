/* monitor/agentfile.c — OPEN_AGENT_FILE: the broker's uid may not read the
 * agent's files (a 0700 home, say), so the monitor opens one for it, beneath
 * the agent folder only, and hands the descriptor over. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "monitor/broker.h"

int monitor_open_agent_file(int dirfd, const char *rel, struct err **err)
{
        if (!rel[0] || rel[0] == '/')
                return err_set(err, EINVAL, "agent file '%s': not a relative path", rel);
        struct open_how how = {
                .flags = O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC,
                .resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS,
        };
        int fd = (int)syscall(SYS_openat2, dirfd, rel, &how, sizeof(how));
        if (fd < 0)
                return err_set(err, errno, "agent file '%s'", rel);
        struct stat st;
        if (fstat(fd, &st) < 0) {
                int e = errno;
                close(fd);
                return err_set(err, e, "agent file '%s'", rel);
        }
        if (!S_ISREG(st.st_mode)) {
                close(fd);
                return err_set(err, EINVAL, "agent file '%s': not a regular file", rel);
        }
        return fd;
}
