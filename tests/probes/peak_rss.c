/* tests/probes/peak_rss.c — run a command and report the peak RSS of that
 * process alone (not of its children), for the parent-bound tests.
 *
 *   peak_rss OUTFILE COMMAND [ARGS...]
 *
 * Runs COMMAND as a traced child and stops it at its exit (ptrace
 * PTRACE_O_TRACEEXIT), when its memory is still mapped, to read VmHWM from
 * /proc/<pid>/status: the high-water mark of the launcher itself, which
 * getrusage cannot give (a waited-for child's ru_maxrss also covers the
 * grandchildren it reaped — here, the worker).  Writes the figure in KiB
 * to OUTFILE and exits with COMMAND's status (128 + signal if killed).
 * Signals COMMAND receives are passed on unchanged. */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <unistd.h>

static long vm_hwm_kb(pid_t pid)
{
        char path[64], line[256];
        snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
        FILE *f = fopen(path, "re");
        if (!f)
                return -1;
        long kb = -1;
        while (fgets(line, sizeof(line), f))
                if (strncmp(line, "VmHWM:", 6) == 0)
                        kb = strtol(line + 6, NULL, 10);
        fclose(f);
        return kb;
}

int main(int argc, char **argv)
{
        if (argc < 3) {
                fprintf(stderr, "usage: peak_rss OUTFILE COMMAND [ARGS...]\n");
                return 2;
        }
        pid_t pid = fork();
        if (pid < 0)
                return perror("fork"), 2;
        if (pid == 0) {
                if (ptrace(PTRACE_TRACEME, 0, NULL, NULL) < 0)
                        _exit(126);
                raise(SIGSTOP);
                execvp(argv[2], argv + 2);
                _exit(127);
        }
        int st;
        if (waitpid(pid, &st, 0) < 0 || !WIFSTOPPED(st))
                return fprintf(stderr, "peak_rss: child did not stop\n"), 2;
        ptrace(PTRACE_SETOPTIONS, pid, NULL, (void *)(long)(PTRACE_O_TRACEEXIT | PTRACE_O_TRACEEXEC | PTRACE_O_EXITKILL));
        ptrace(PTRACE_CONT, pid, NULL, NULL);
        long peak = -1;
        for (;;) {
                if (waitpid(pid, &st, __WALL) < 0)
                        return perror("waitpid"), 2;
                if (WIFEXITED(st) || WIFSIGNALED(st))
                        break;
                if (!WIFSTOPPED(st))
                        continue;
                int sig = WSTOPSIG(st), event = st >> 16;
                if (event == PTRACE_EVENT_EXIT) {
                        peak = vm_hwm_kb(pid);
                        sig = 0;
                } else if (event || sig == SIGTRAP) {
                        sig = 0; /* our own exec stop */
                }
                ptrace(PTRACE_CONT, pid, NULL, (void *)(long)sig);
        }
        FILE *out = fopen(argv[1], "we");
        if (out) {
                fprintf(out, "%ld\n", peak);
                fclose(out);
        }
        return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}
