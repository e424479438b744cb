#!/usr/bin/env python3
"""Run a command with a pseudo-terminal as its controlling terminal and stdin,
answer the first prompt that ends in "[y/N] ", and report what the terminal
showed.  For the ask_before prompt tests (tests/bats/approve.bats).

    tty_answer.py ANSWER OUT ERR -- COMMAND [ARGS...]

The command's stdout and stderr go to the files OUT and ERR; what it wrote on
/dev/tty is printed on our stdout.  ANSWER "-" answers nothing (the prompt
waits until the command ends it).  Exits with the command's status, or 99
when no prompt came within 60 s although an answer was expected.
"""
import os
import pty
import select
import sys
import time


def main():
    answer, out, err = sys.argv[1], sys.argv[2], sys.argv[3]
    cmd = sys.argv[5:] if sys.argv[4] == "--" else sys.argv[4:]
    pid, master = pty.fork()
    if pid == 0:
        fo = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        fe = os.open(err, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(fo, 1)
        os.dup2(fe, 2)
        os.execvp(cmd[0], cmd)
    seen = b""
    answered = answer == "-"
    deadline = time.monotonic() + 60
    while True:
        left = deadline - time.monotonic()
        if left <= 0 and not answered:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
            sys.stdout.write(seen.decode("utf-8", "replace"))
            sys.exit(99)
        r, _, _ = select.select([master], [], [], max(left, 0.1))
        if not r:
            continue
        try:
            data = os.read(master, 4096)
        except OSError:
            break  # EIO: the command closed the terminal
        if not data:
            break
        seen += data
        if not answered and seen.rstrip().endswith(b"[y/N]"):
            os.write(master, answer.encode() + b"\n")
            answered = True
    _, status = os.waitpid(pid, 0)
    sys.stdout.write(seen.decode("utf-8", "replace"))
    sys.exit(os.waitstatus_to_exitcode(status) if hasattr(os, "waitstatus_to_exitcode") else status >> 8)


if __name__ == "__main__":
    main()
