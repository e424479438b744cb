#!/usr/bin/env python3
"""scripts/containerfile-lint.py — a small offline check of deploy/Containerfile
(no hadolint, no registry here; tests/bats/k8s.bats runs it).

Usage: containerfile-lint.py [--context DIR] [--packages] CONTAINERFILE

Checks that every instruction is one a Containerfile knows, that the first is
ARG or FROM, that each stage a COPY --from names comes before it, that every
file a plain COPY or ADD takes exists in the context (DIR, default: the
current directory) and is not left out by .containerignore, that the exec
forms (ENTRYPOINT, CMD ...) are JSON arrays of strings, and that the final
stage runs as a non-root numeric USER. With --packages it prints the packages
the final stage's `apt-get install` installs, one a line.
Exit 0: fine; 1: each problem as CONTAINERFILE:LINE: message; 2: usage.
"""
import fnmatch
import glob
import json
import os
import re
import shlex
import sys

KNOWN = {"FROM", "RUN", "CMD", "LABEL", "MAINTAINER", "EXPOSE", "ENV", "ADD", "COPY", "ENTRYPOINT",
         "VOLUME", "USER", "WORKDIR", "ARG", "ONBUILD", "STOPSIGNAL", "HEALTHCHECK", "SHELL"}
EXEC_FORM = {"CMD", "ENTRYPOINT", "SHELL"}


def instructions(text):
    """(line number, keyword, rest) per instruction, continuation lines joined."""
    out, buf, start = [], "", 0
    for n, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if not buf and (not stripped or stripped.startswith("#")):
            continue
        if buf and stripped.startswith("#"):  # a comment inside a continued instruction
            continue
        if not buf:
            start = n
        if stripped.endswith("\\"):
            buf += stripped[:-1] + " "
            continue
        buf += stripped
        kw, _, rest = buf.partition(" ")
        out.append((start, kw, rest.strip()))
        buf = ""
    if buf:
        out.append((start, "<unterminated>", buf))
    return out


def ignored(path, patterns):
    """Whether .containerignore leaves PATH (relative to the context) out."""
    parts = path.split("/")
    for p in patterns:
        p = p.rstrip("/")
        for i in range(1, len(parts) + 1):
            if fnmatch.fnmatch("/".join(parts[:i]), p):
                return True
    return False


def main(argv):
    ctx, packages, files = ".", False, []
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == "--context" and i + 1 < len(argv):
            ctx = argv[i + 1]
            i += 2
            continue
        if a == "--packages":
            packages = True
        elif a.startswith("--"):
            print(f"containerfile-lint: unknown option '{a}'\n{__doc__.splitlines()[3]}", file=sys.stderr)
            return 2
        else:
            files.append(a)
        i += 1
    if len(files) != 1:
        print(f"containerfile-lint: give one Containerfile\n{__doc__.splitlines()[3]}", file=sys.stderr)
        return 2
    name = files[0]
    try:
        with open(name, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        print(f"containerfile-lint: cannot read '{name}': {e.strerror}", file=sys.stderr)
        return 2
    patterns = []
    for ign in (".containerignore", ".dockerignore"):
        p = os.path.join(ctx, ign)
        if os.path.exists(p):
            with open(p, encoding="utf-8") as f:
                patterns = [ln.strip() for ln in f if ln.strip() and not ln.startswith("#")]
            break

    problems, stages, stage_pkgs, user = [], [], [], None
    ins = instructions(text)
    if not ins:
        problems.append((1, "no instructions"))
    for n, kw, rest in ins:
        if kw.upper() not in KNOWN:
            problems.append((n, f"unknown instruction '{kw}'"))
            continue
        if kw != kw.upper():
            problems.append((n, f"write the instruction in capitals: '{kw.upper()}'"))
        kw = kw.upper()
        if not stages and kw not in ("ARG", "FROM"):
            problems.append((n, f"{kw} before the first FROM"))
        if kw == "FROM":
            m = re.match(r"(?:--platform=\S+\s+)?(\S+)(?:\s+AS\s+(\S+))?$", rest, re.I)
            if not m:
                problems.append((n, f"FROM '{rest}': expected IMAGE [AS NAME]"))
                continue
            stages.append(m.group(2) or str(len(stages)))
            stage_pkgs, user = [], None
        elif kw in ("COPY", "ADD"):
            try:
                words = shlex.split(rest)
            except ValueError as e:
                problems.append((n, f"{kw}: {e}"))
                continue
            flags = [w for w in words if w.startswith("--")]
            args = [w for w in words if not w.startswith("--")]
            if len(args) < 2:
                problems.append((n, f"{kw} needs a source and a destination"))
                continue
            frm = [f.split("=", 1)[1] for f in flags if f.startswith("--from=")]
            if frm:
                if frm[0] not in stages[:-1]:
                    problems.append((n, f"{kw} --from={frm[0]}: no earlier stage is called that"))
                continue
            for src in args[:-1]:
                if re.match(r"https?://", src):
                    continue
                rel = os.path.normpath(src).lstrip("/")
                if rel.startswith(".."):
                    problems.append((n, f"{kw} {src}: outside the build context"))
                    continue
                found = glob.glob(os.path.join(ctx, rel))
                if not found:
                    problems.append((n, f"{kw} {src}: no such file in the build context {ctx}"))
                elif rel != "." and all(ignored(os.path.relpath(p, ctx), patterns) for p in found):
                    problems.append((n, f"{kw} {src}: left out of the build context by .containerignore"))
        elif kw in EXEC_FORM and rest.startswith("["):
            try:
                v = json.loads(rest)
                if not (isinstance(v, list) and v and all(isinstance(x, str) for x in v)):
                    raise ValueError("not a list of strings")
            except ValueError as e:
                problems.append((n, f"{kw}: the exec form must be a JSON array of strings ({e})"))
        elif kw == "USER":
            user = rest
        elif kw == "RUN":
            for m in re.finditer(r"apt-get install((?:\s+(?!&&)\S+)+)", rest):
                stage_pkgs += [w for w in m.group(1).split() if not w.startswith("-") and w != "\\"]
    if stages and (user is None or not re.match(r"^[1-9][0-9]*(:[0-9]+)?$", user)):
        problems.append((ins[-1][0], f"the final stage must run as a non-root numeric USER (is {user!r})"))
    for n, msg in problems:
        print(f"{name}:{n}: {msg}", file=sys.stderr)
    if problems:
        return 1
    if packages:
        print("\n".join(stage_pkgs))
    else:
        print(f"containerfile-lint: {name}: {len(ins)} instructions, {len(stages)} stages: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
