#!/usr/bin/env python3
"""Run every code block of README.md and docs/*.md against the built binary.

    tests/docs/run-docs.py [--build DIR] [--keep] [--list] [-v] [FILE.md ...]

A doc cannot drift from the binary if each of its code blocks is executed and
what it shows is compared with what the binary does.  Every fenced block must
either run, in one of the ways below, or carry a `norun` tag with the reason;
an untagged block that has no way to run is a failure.  The tags are HTML
comments, invisible when the Markdown is rendered.

Blocks
------
```sh with lines starting with `$ `
    A shell session.  Each `$ ` line is a command (a line ending in `\\`
    continues on the next); the lines after it, up to the next `$ ` line, are
    what it prints: stdout and stderr together, compared line by line
    (trailing spaces ignored).  `...` in an expected line matches any text
    within that line; a line that is only `...` matches any number of lines.
    A command must exit 0, unless it ends with the comment `# exit N`.
<!-- doc: file NAME -->  (before a block)
    The block's text is written to NAME (relative; folders are created), for
    later commands to use: an agent, a policy, a tools file.
<!-- doc: output        (before a block; the block shows output only)
$ command ...
-->
    The hidden commands are run and their output, all of it in order, must be
    the block's text (same comparison as a session).
<!-- doc: policy -->, <!-- doc: policy-rule -->  (before a ```json block)
    The block is a policy file (policy-rule: one rule, wrapped in
    {"rules": [...]}); it must load: `chidori run` with CHIDORI_POLICY_FILE
    set to it reports `Policy: custom ...` and no warning.
<!-- doc: tools -->  (before a ```json block)
    The block is a --tools file; `chidori run --tools FILE` must accept it.
<!-- norun: REASON -->  (before a block)
    Not run; listed with its reason.
Steps that show nothing
-----------------------
<!-- doc: sh
$ command
expected output
-->
    A hidden session, same rules as a visible one.
<!-- doc: setup
shell commands
-->
    A hidden script (bash -e), output ignored, must exit 0: helper files a
    doc mentions but does not show.
<!-- doc: server -->
    Starts tests/servers/fake_http.py on a loopback port for the rest of the
    doc: $DOC_HTTP_PORT (its /v1/chat/completions takes the key `test-key`).
<!-- doc: env NAME=VALUE ... -->
    Sets variables for the rest of the doc ($NAME in VALUE is expanded).

Where blocks run
----------------
Each doc runs in its own empty temp folder (with a copy of examples/), its
blocks in order, so a file one block writes is there for the next.  The
environment is fixed: PATH has the build folder first (`chidori` is
build/chidori), XDG_STATE_HOME and HOME are private to the doc, TZ=UTC,
LANG=C.UTF-8, no CHIDORI_* variable; $DOC_REPO is the checkout (for hidden
steps only).  Every command has 30 s (--timeout); one that
takes longer is killed with what it started, and fails.

Output: one `ok N - FILE:LINE what` / `not ok ...` line per block or hidden
step, the `norun` blocks with their reasons, and last
`# docs: P passed, F failed, N not run`.  Exit 0 when nothing failed.
"""
import argparse
import difflib
import glob
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

REPO = os.path.realpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
CMD_TIMEOUT = 30
FENCE = re.compile(r"^( {0,3})(`{3,}|~{3,})(.*)$")
EXIT_TAG = re.compile(r"#\s*exit\s+(\d+)\s*$")


class DocError(Exception):
    pass


def die_with_parent():
    """In a child: SIGKILL when this runner dies, however it dies."""
    try:
        import ctypes
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


# ------------------------------------------------------------------ parsing

class Block:
    def __init__(self, line, info, text):
        self.line, self.info, self.text = line, info.strip(), text
        self.lang = self.info.split()[0] if self.info else ""


class Step:
    """One thing to run (or list): kind is session, file, output, policy,
    policy-rule, tools, hidden-sh, setup, server, norun or bad."""

    def __init__(self, kind, line, block=None, body="", arg=""):
        self.kind, self.line, self.block, self.body, self.arg = kind, line, block, body, arg


def parse_directive(text):
    """`doc: WORD REST` or `norun: REASON` from a comment's text, else None."""
    t = text.strip()
    m = re.match(r"^norun:\s*(.*)$", t, re.S)
    if m:
        return ("norun", m.group(1).strip(), "")
    m = re.match(r"^doc:\s*([a-z-]+)([^\n]*)\n?(.*)$", t, re.S)
    if m:
        return (m.group(1), m.group(2).strip(), m.group(3))
    return None


BEFORE_BLOCK = {"file", "output", "policy", "policy-rule", "tools", "norun"}
STANDALONE = {"sh", "setup", "server", "env"}


def parse(path):
    lines = open(path, encoding="utf-8").read().split("\n")
    steps, pending, i = [], None, 0
    while i < len(lines):
        ln = lines[i]
        if ln.lstrip().startswith("<!--"):
            start = i
            buf = ln.lstrip()[4:]
            while "-->" not in buf and i + 1 < len(lines):
                i += 1
                buf += "\n" + lines[i]
            if "-->" not in buf:
                raise DocError("%s:%d: unterminated HTML comment" % (path, start + 1))
            d = parse_directive(buf[:buf.index("-->")])
            i += 1
            if d is None:
                continue
            kind, arg, body = d
            if pending:
                raise DocError("%s:%d: a doc directive follows the one at line %d, which needs a block"
                               % (path, start + 1, pending[1]))
            if kind in BEFORE_BLOCK:
                pending = (kind, start + 1, arg, body)
            elif kind in STANDALONE:
                steps.append(Step("hidden-sh" if kind == "sh" else kind, start + 1, body=body, arg=arg))
            else:
                raise DocError("%s:%d: unknown directive 'doc: %s'" % (path, start + 1, kind))
            continue
        m = FENCE.match(ln)
        if m:
            indent, fence, info = m.groups()
            start, body = i, []
            i += 1
            while i < len(lines):
                c = FENCE.match(lines[i])
                if c and c.group(2)[0] == fence[0] and len(c.group(2)) >= len(fence) and not c.group(3).strip():
                    break
                body.append(lines[i][len(indent):] if lines[i].startswith(indent) else lines[i])
                i += 1
            if i >= len(lines):
                raise DocError("%s:%d: unterminated code block" % (path, start + 1))
            i += 1
            b = Block(start + 1, info, "\n".join(body))
            if pending:
                kind, _, arg, pbody = pending
                steps.append(Step(kind, b.line, b, body=pbody, arg=arg))
                pending = None
            elif b.lang in ("sh", "console", "shell") and any(l.startswith("$ ") for l in body):
                steps.append(Step("session", b.line, b))
            else:
                steps.append(Step("bad", b.line, b))
            continue
        if pending and ln.strip():
            raise DocError("%s:%d: the directive at line %d must come right before its code block"
                           % (path, i + 1, pending[1]))
        i += 1
    if pending:
        raise DocError("%s:%d: the directive is not followed by a code block" % (path, pending[1]))
    return steps


def parse_session(text, where):
    """[(command, expected_lines, exit_code)] from `$ ` lines and what follows."""
    out, cur = [], None
    lines = text.split("\n")
    k = 0
    while k < len(lines):
        ln = lines[k]
        if ln.startswith("$ "):
            cmd = ln[2:]
            while cmd.endswith("\\") and k + 1 < len(lines):
                k += 1
                cmd = cmd + "\n" + lines[k]
            m = EXIT_TAG.search(cmd)
            cur = [cmd, [], int(m.group(1)) if m else 0]
            out.append(cur)
        elif cur is None:
            if ln.strip():
                raise DocError("%s: text before the first `$ ` command: %r" % (where, ln))
        else:
            cur[1].append(ln)
        k += 1
    if not out:
        raise DocError("%s: no `$ ` command" % where)
    return out


# ------------------------------------------------------------------ comparing

def norm(lines):
    lines = [l.rstrip() for l in lines]
    while lines and not lines[-1]:
        lines.pop()
    while lines and not lines[0]:
        lines.pop(0)
    return lines


def pattern(expected):
    parts = []
    for l in expected:
        if l.strip() == "...":
            parts.append(r"(?:[^\n]*\n)*?")
        else:
            parts.append(".*?".join(re.escape(p) for p in l.split("...")) + r"\n")
    return re.compile("".join(parts))


def matches(expected, actual):
    e, a = norm(expected), norm(actual)
    return pattern(e).fullmatch("".join(x + "\n" for x in a)) is not None


def diff(expected, actual):
    e, a = norm(expected), norm(actual)
    # An actual line that a wildcard line matches is shown as that line, so
    # the diff points at the lines that really differ.
    wild = [(l, pattern([l])) for l in e if "..." in l and l.strip() != "..."]
    for i, l in enumerate(a):
        for w, rx in wild:
            if rx.fullmatch(l + "\n"):
                a[i] = w
                break
    return "\n".join(difflib.unified_diff(e, a, "shown in the doc", "printed", lineterm="", n=2))


# ------------------------------------------------------------------ running

class Runner:
    def __init__(self, build, keep, verbose, timeout):
        self.build, self.keep, self.verbose, self.timeout = build, keep, verbose, timeout
        self.n = self.passed = self.failed = 0
        self.norun = []
        self.ndocs = 0
        self.top = tempfile.mkdtemp(prefix="chidori-docs.")

    def env(self, d, extra=None):
        e = {
            "PATH": self.build + ":/usr/local/bin:/usr/bin:/bin",
            "HOME": os.path.join(d, ".home"),
            "XDG_STATE_HOME": os.path.join(d, ".state"),
            "TMPDIR": os.path.join(d, ".tmp"),
            "LANG": "C.UTF-8",
            "TZ": "UTC",
            "DOC_REPO": REPO,
        }
        for k in ("ASAN_OPTIONS", "LSAN_OPTIONS", "UBSAN_OPTIONS", "TERM"):
            if k in os.environ:
                e[k] = os.environ[k]
        e.update(self.extra_env)
        if extra:
            e.update(extra)
        return e

    def report(self, ok, where, what, detail=""):
        self.n += 1
        if ok:
            self.passed += 1
            print("ok %d - %s %s" % (self.n, where, what))
        else:
            self.failed += 1
            print("not ok %d - %s %s" % (self.n, where, what))
        if detail and (not ok or self.verbose):
            for l in detail.rstrip("\n").split("\n"):
                print("#   " + l)
        sys.stdout.flush()

    def sh(self, d, cmd, extra=None):
        timeout = self.timeout
        # Its own process group, so a command that times out is ended with
        # everything it started (the group of the bash this runner started).
        p = subprocess.Popen(["bash", "-o", "pipefail", "-c", cmd], cwd=d, env=self.env(d, extra),
                             stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             start_new_session=True)
        try:
            out, _ = p.communicate(timeout=timeout)
            return p.returncode, out.decode("utf-8", "replace")
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            out, _ = p.communicate()
            return None, out.decode("utf-8", "replace") + "\n[timed out after %d s]" % timeout

    def session(self, d, text, where):
        """Run `$ ` commands; returns (ok, detail)."""
        detail = []
        ok = True
        for cmd, expected, code in parse_session(text, where):
            rc, out = self.sh(d, cmd)
            lines = out.split("\n")
            good = matches(expected, lines)
            if rc != code:
                ok = False
                detail.append("$ %s\nexit %s, expected %d; it printed:\n%s" % (cmd, rc, code, out.rstrip()))
            elif not good:
                ok = False
                detail.append("$ %s\n%s" % (cmd, diff(expected, lines)))
            elif self.verbose:
                detail.append("$ %s\n%s" % (cmd, out.rstrip()))
        return ok, "\n".join(detail)

    def output(self, d, step, where):
        detail, ok, got = [], True, []
        for cmd, expected, code in parse_session(step.body, where):
            if norm(expected):
                raise DocError("%s: a doc: output command shows no output of its own (the block does)" % where)
            rc, out = self.sh(d, cmd)
            if rc != code:
                ok = False
                detail.append("$ %s\nexit %s, expected %d; it printed:\n%s" % (cmd, rc, code, out.rstrip()))
            got.extend(norm(out.split("\n")))
        shown = step.block.text.split("\n")
        if not matches(shown, got):
            ok = False
            detail.append(diff(shown, got))
        return ok, "\n".join(detail)

    def write(self, d, name, text, where):
        if not name or name.startswith("/") or ".." in name.split("/"):
            raise DocError("%s: doc: file needs a relative NAME, got %r" % (where, name))
        p = os.path.join(d, name)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "w", encoding="utf-8") as f:
            f.write(text + "\n")
        return p

    def noop(self, d):
        p = os.path.join(d, ".doc-noop.js")
        if not os.path.exists(p):
            with open(p, "w") as f:
                f.write("module.exports = async () => null;\n")
        return p

    def policy(self, d, step, where):
        text = step.block.text
        if step.kind == "policy-rule":
            text = '{"rules": [\n' + text + "\n]}"
        p = self.write(d, ".doc-policy-%d.json" % step.line, text, where)
        rc, out = self.sh(d, "chidori run %s" % self.noop(d), extra={"CHIDORI_POLICY_FILE": p})
        good = rc == 0 and "Policy: custom from CHIDORI_POLICY_FILE=" in out and "warning" not in out
        return good, "" if good else "exit %s; chidori printed:\n%s" % (rc, out.rstrip())

    def tools(self, d, step, where):
        p = self.write(d, ".doc-tools-%d.json" % step.line, step.block.text, where)
        rc, out = self.sh(d, "chidori run --quiet --tools %s %s" % (p, self.noop(d)))
        good = rc == 0 and out.strip() == "null"
        return good, "" if good else "exit %s; chidori printed:\n%s" % (rc, out.rstrip())

    def server(self, d):
        if self.server_proc:
            return True, ""
        p = subprocess.Popen([sys.executable, os.path.join(REPO, "tests/servers/fake_http.py"), "--port", "0"],
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, start_new_session=True,
                             preexec_fn=die_with_parent)
        port = p.stdout.readline().decode().strip()
        if not port.isdigit():
            p.kill()
            p.wait()
            return False, "tests/servers/fake_http.py did not start"
        self.server_proc = p
        self.extra_env["DOC_HTTP_PORT"] = port
        return True, "port " + port

    def stop_server(self):
        p = self.server_proc
        if p:
            p.kill()  # the server this runner started, by its pid
            p.wait()
        self.server_proc = None
        self.extra_env.pop("DOC_HTTP_PORT", None)

    def run_doc(self, path):
        rel = os.path.relpath(path, REPO)
        try:
            steps = parse(path)
        except DocError as e:
            self.report(False, rel, "cannot be read", str(e))
            return
        d = os.path.join(self.top, "%02d-%s" % (self.ndocs, os.path.basename(path)))
        self.ndocs += 1
        os.makedirs(d)
        for sub in (".home", ".state", ".tmp"):
            os.makedirs(os.path.join(d, sub))
        if os.path.isdir(os.path.join(REPO, "examples")):
            shutil.copytree(os.path.join(REPO, "examples"), os.path.join(d, "examples"))
        self.extra_env, self.server_proc = {}, None
        try:
            for s in steps:
                self.run_step(d, rel, s)
        finally:
            self.stop_server()

    def run_step(self, d, rel, s):
        where = "%s:%d" % (rel, s.line)
        lang = s.block.lang if s.block else ""
        try:
            if s.kind == "norun":
                if not s.arg:
                    return self.report(False, where, "norun", "a norun tag needs a reason")
                self.norun.append((where, lang or "plain", s.arg))
            elif s.kind == "bad":
                self.report(False, where, "```%s block" % lang,
                            "no way to run it: make it a `$ ` session, precede it with a doc: directive, "
                            "or tag it <!-- norun: REASON --> (tests/docs/run-docs.py)")
            elif s.kind == "session":
                ok, detail = self.session(d, s.block.text, where)
                self.report(ok, where, "session", detail)
            elif s.kind == "hidden-sh":
                ok, detail = self.session(d, s.body, where)
                self.report(ok, where, "hidden session", detail)
            elif s.kind == "setup":
                rc, out = self.sh(d, "set -e\n" + s.body)
                self.report(rc == 0, where, "setup", "" if rc == 0 else "exit %s:\n%s" % (rc, out.rstrip()))
            elif s.kind == "env":
                for kv in s.arg.split():
                    k, _, v = kv.partition("=")
                    if not re.match(r"^[A-Za-z_][A-Za-z0-9_]*$", k) or not _:
                        raise DocError("%s: doc: env takes NAME=VALUE words, got %r" % (where, kv))
                    self.extra_env[k] = re.sub(r"\$(\w+)", lambda m: self.env(d).get(m.group(1), ""), v)
                self.report(True, where, "env " + s.arg)
            elif s.kind == "server":
                ok, detail = self.server(d)
                self.report(ok, where, "server", detail)
            elif s.kind == "file":
                self.write(d, s.arg, s.block.text, where)
                self.report(True, where, "file " + s.arg)
            elif s.kind == "output":
                ok, detail = self.output(d, s, where)
                self.report(ok, where, "output", detail)
            elif s.kind in ("policy", "policy-rule"):
                ok, detail = self.policy(d, s, where)
                self.report(ok, where, s.kind, detail)
            elif s.kind == "tools":
                ok, detail = self.tools(d, s, where)
                self.report(ok, where, "tools file", detail)
        except DocError as e:
            self.report(False, where, s.kind, str(e))

    def finish(self):
        for where, lang, why in self.norun:
            print("# norun %s (%s): %s" % (where, lang, why))
        print("# docs: %d passed, %d failed, %d not run" % (self.passed, self.failed, len(self.norun)))
        if self.keep:
            print("# kept: " + self.top)
        else:
            shutil.rmtree(self.top, ignore_errors=True)
        return self.failed == 0


def main():
    ap = argparse.ArgumentParser(description="run the code blocks of the docs against the built binary")
    ap.add_argument("--build", default=os.environ.get("CHIDORI_BUILD", os.path.join(REPO, "build")))
    ap.add_argument("--keep", action="store_true", help="keep the temp folders")
    ap.add_argument("--list", action="store_true", help="list the blocks and how each one runs")
    ap.add_argument("-v", "--verbose", action="store_true", help="show every command's output")
    ap.add_argument("--timeout", type=int, default=CMD_TIMEOUT, help="seconds per command (default %(default)s)")
    ap.add_argument("files", nargs="*")
    a = ap.parse_args()
    files = a.files or [os.path.join(REPO, "README.md")] + sorted(glob.glob(os.path.join(REPO, "docs", "*.md")))
    if a.list:
        for f in files:
            for s in parse(f):
                print("%s:%d %s%s" % (os.path.relpath(f, REPO), s.line, s.kind, (" " + s.arg) if s.arg else ""))
        return 0
    build = os.path.realpath(a.build)
    if not os.access(os.path.join(build, "chidori"), os.X_OK):
        sys.exit("run-docs: no %s/chidori; run make all first" % build)
    r = Runner(build, a.keep, a.verbose, a.timeout)
    t0 = time.monotonic()
    for f in files:
        r.run_doc(os.path.realpath(f))
    print("# time: %.1f s" % (time.monotonic() - t0))
    return 0 if r.finish() else 1


if __name__ == "__main__":
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    sys.exit(main())
