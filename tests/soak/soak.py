#!/usr/bin/env python3
"""make soak: SOAK_RUNS runs of a mixed corpus through `chidori run` and one
long-lived `chidori serve`, sampling what could leak (docs/soak.md).

Environment (a malformed value is a usage error, exit 2):
  SOAK_RUNS      runs in all (default 10000)
  SOAK_JOBS      runs at once (default 2)
  SOAK_SAMPLE    runs between samples (default 500)
  SOAK_WARMUP    runs before the slopes are fitted (default: 2 samples, at most half the runs)
  SOAK_SEED      the random mix and kill moments (default: the time)
  SOAK_OUT       where the report goes (default build/soak)
  SOAK_LIMITS    METRIC=N,... overrides a metric's limit (the table in docs/soak.md)
  SOAK_SIMULATE_LEAK    tmpfile | process: the driver itself leaks one per run
                        (proves the slope check fires; tests/bats/soak.bats)
  CHIDORI_BIN    the chidori binary (default build/chidori)

Exit: 0 every outcome right and no metric past its slope; 1 otherwise; 2 usage.
python3 standard library only.
"""
import ctypes
import http.client
import json
import os
import random
import re
import signal
import sqlite3
import struct
import subprocess
import sys
import threading
import time
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
AGENTS = os.path.join(HERE, "agents")
PRIVATE_MARK = "CHIDORI_SOAK_PRIVATE_TMP"
BOUND_IN = set()  # names in the private /tmp that are folders of the host's /tmp bound back in


def usage(msg):
    sys.stderr.write("soak: %s\n" % msg)
    sys.exit(2)


def env_int(name, default, lo, hi):
    v = os.environ.get(name)
    if v is None or v == "":
        return default
    if not re.fullmatch(r"[0-9]+", v) or not lo <= int(v) <= hi:
        usage("%s=%r: expected an integer from %d to %d" % (name, v, lo, hi))
    return int(v)


def env_float(name, default):
    v = os.environ.get(name)
    if v is None or v == "":
        return default
    if not re.fullmatch(r"[0-9]+(\.[0-9]+)?", v):
        usage("%s=%r: expected a non-negative number" % (name, v))
    return float(v)


# ------------------------------------------------------------------ setup


libc = ctypes.CDLL(None, use_errno=True)
MS_BIND, MS_REC, MS_PRIVATE = 4096, 16384, 1 << 18


def mount(src, target, fstype, flags, data):
    if libc.mount(src and src.encode(), target.encode(), fstype and fstype.encode(), flags,
                  data and data.encode()) != 0:
        e = ctypes.get_errno()
        raise OSError(e, "mount %s on %s: %s" % (src, target, os.strerror(e)))


def private_tmp(keep_paths):
    """Run in a mount namespace of our own with an empty tmpfs on /tmp, so the
    temp-file count is this soak's alone (other users of the machine write
    /tmp/chidori-* too). KEEP_PATHS (the report's folder, chidori's), when
    beneath /tmp, are bound back in."""
    if os.environ.get(PRIVATE_MARK) != "1":
        if os.geteuid() != 0 or os.environ.get("SOAK_PRIVATE_TMP") == "0":
            return False
        env = dict(os.environ, **{PRIVATE_MARK: "1"})
        try:
            os.execvpe("unshare", ["unshare", "--mount", "--propagation", "private", "--",
                                   sys.executable, os.path.abspath(__file__)], env)
        except OSError as e:
            sys.stderr.write("soak: unshare: %s; counting /tmp as shared\n" % e)
            return False
    global BOUND_IN
    keep = []
    for p in keep_paths:
        if os.path.realpath(p).startswith("/tmp/") and os.path.exists(p):
            keep.append((os.path.realpath(p), os.open(p, os.O_PATH)))
    mount("soak", "/tmp", "tmpfs", 0, "mode=1777,size=512m")
    for path, fd in keep:
        os.makedirs(path, exist_ok=True)
        mount("/proc/self/fd/%d" % fd, path, None, MS_BIND | MS_REC, None)
        os.close(fd)
        BOUND_IN.add(path[len("/tmp/"):].split("/")[0])
    return True


def set_subreaper():
    # Orphans (a killed run's broker and worker) come to us, not to pid 1, so
    # they count as ours and are reaped here.
    libc.prctl(36, 1, 0, 0, 0)


class Cgroups:
    """A cgroup of our own, a child of our cgroup in each hierarchy (v1 memory
    and pids, v2 unified), that the driver moves into: everything it starts,
    and every cgroup chidori makes, is beneath it."""

    def __init__(self):
        self.dirs = []  # (hierarchy name, our old cgroup dir, our soak dir)
        mounts = {}
        with open("/proc/self/mountinfo") as f:
            for line in f:
                a, b = line.split(" - ", 1)
                fstype, _src, opts = b.split()[:3]
                mp = a.split()[4]
                if fstype == "cgroup2":
                    mounts["unified"] = mp
                elif fstype == "cgroup":
                    for o in opts.split(","):
                        if o in ("memory", "pids"):
                            mounts[o] = mp
        with open("/proc/self/cgroup") as f:
            for line in f:
                _hid, ctrls, path = line.rstrip("\n").split(":", 2)
                names = ["unified"] if ctrls == "" else [c for c in ctrls.split(",") if c in ("memory", "pids")]
                for n in names:
                    if n not in mounts:
                        continue
                    old = os.path.join(mounts[n], path.lstrip("/"))
                    new = os.path.join(old, "soak-%d" % os.getpid())
                    try:
                        os.mkdir(new)
                        with open(os.path.join(new, "cgroup.procs"), "w") as p:
                            p.write(str(os.getpid()))
                        self.dirs.append((n, old, new))
                    except OSError as e:
                        sys.stderr.write("soak: no cgroup of our own in %s (%s): its directories are not counted\n" % (n, e))
                        try:
                            os.rmdir(new)
                        except OSError:
                            pass

    def count(self):
        n = 0
        for _h, _old, new in self.dirs:
            for _root, subdirs, _files in os.walk(new):
                n += len(subdirs)
        return n

    def pids(self):
        got = set()
        for _h, _old, new in self.dirs:
            for root, _subdirs, files in os.walk(new):
                if "cgroup.procs" in files:
                    try:
                        with open(os.path.join(root, "cgroup.procs")) as f:
                            got.update(int(x) for x in f.read().split())
                    except OSError:
                        pass
        return got

    def close(self):
        """Leave our cgroups and remove them; a process still in them (ours:
        every process in them descends from the driver) is killed and named."""
        left = []
        stray = self.pids() - {os.getpid()}
        for pid in stray:
            st = stat_of(pid)
            left.append("process %d (%s) still in our cgroup: killed" % (pid, st[0] if st else "?"))
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        t0 = time.time()
        while self.pids() - {os.getpid()} and time.time() - t0 < 5:
            time.sleep(0.05)
        dirs, self.dirs = self.dirs, []
        for h, old, new in dirs:
            try:
                with open(os.path.join(old, "cgroup.procs"), "w") as p:
                    p.write(str(os.getpid()))
            except OSError:
                pass
            for root, subdirs, _files in os.walk(new, topdown=False):
                try:
                    os.rmdir(root)
                except OSError:
                    left.append(root)
        return left


# ------------------------------------------------------------------ processes


def stat_of(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            s = f.read()
    except OSError:
        return None
    r = s.rindex(")")
    comm = s[s.index("(") + 1:r]
    rest = s[r + 2:].split()
    return comm, rest[0], int(rest[1])  # comm, state, ppid


def all_procs():
    out = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            st = stat_of(int(d))
            if st:
                out[int(d)] = st
    return out


def descendants(root, procs):
    kids = {}
    for pid, (_c, _s, ppid) in procs.items():
        kids.setdefault(ppid, []).append(pid)
    seen, todo = set(), [root]
    while todo:
        p = todo.pop()
        for k in kids.get(p, []):
            if k not in seen:
                seen.add(k)
                todo.append(k)
    return seen


def rss_kib(pid):
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def fds_of(pid):
    try:
        names = os.listdir("/proc/%d/fd" % pid)
    except OSError:
        return []
    out = []
    for n in names:
        try:
            out.append(os.readlink("/proc/%d/fd/%s" % (pid, n)))
        except OSError:
            pass
    return out


def db_rows(path, live):
    """Rows in every table of SQLite file PATH, read-only: through the WAL
    when a live connection holds it (the server's), else the file alone
    (immutable: nothing is created beside it)."""
    uri = "file:%s?%s" % (path, "mode=ro" if live else "immutable=1")
    try:
        db = sqlite3.connect(uri, uri=True, timeout=10)
    except sqlite3.Error:
        return 0
    try:
        n = 0
        for (t,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall():
            n += db.execute('SELECT count(*) FROM "%s"' % t.replace('"', '""')).fetchone()[0]
        return n
    except sqlite3.Error:
        return 0
    finally:
        db.close()


# ------------------------------------------------------------------ the corpus


class Outcome(Exception):
    pass


class Soak:
    def __init__(self):
        self.runs = env_int("SOAK_RUNS", 10000, 1, 10 ** 7)
        self.jobs = env_int("SOAK_JOBS", 2, 1, 64)
        self.sample_every = env_int("SOAK_SAMPLE", 500, 1, 10 ** 7)
        # every kind has run once (a first memory key, a first cgroup) and at
        # least 2 samples, leaving 3 samples or more to fit
        per = self.sample_every
        default_warm = max(0, min(max(2 * per, -(-len(self.MIX) // per) * per), self.runs - 2 * per))
        self.warmup = env_int("SOAK_WARMUP", default_warm, 0, 10 ** 7)
        self.seed = env_int("SOAK_SEED", int(time.time()) % 1000000, 0, 2 ** 32)
        self.limits = dict(self.LIMITS)
        for item in filter(None, os.environ.get("SOAK_LIMITS", "").split(",")):
            m, _eq, v = item.partition("=")
            if m not in self.limits or not re.fullmatch(r"[0-9]+(\.[0-9]+)?", v):
                usage("SOAK_LIMITS: %r: expected METRIC=N with METRIC one of %s" % (item, ", ".join(self.LIMITS)))
            self.limits[m] = (self.limits[m][0], float(v))
        self.leak = os.environ.get("SOAK_SIMULATE_LEAK", "")
        if self.leak not in ("", "tmpfile", "process"):
            usage("SOAK_SIMULATE_LEAK=%r: expected tmpfile or process" % self.leak)
        self.out = os.path.abspath(os.environ.get("SOAK_OUT") or os.path.join(REPO, "build", "soak"))
        self.chidori = os.path.abspath(os.environ.get("CHIDORI_BIN") or os.path.join(REPO, "build", "chidori"))
        if not os.access(self.chidori, os.X_OK):
            usage("CHIDORI_BIN %s is not an executable: run make all first" % self.chidori)
        self.probes = os.path.join(os.path.dirname(self.chidori), "probes")
        self.rng = random.Random(self.seed)
        self.lock = threading.Lock()
        self.halt = threading.Event()
        self.threads = []
        self.failures = []
        self.counts = {}
        self.orphans = 0
        self.leaked = []
        self.popen_pids = set()

    # -- process helpers

    def spawn(self, argv, env=None, new_session=False):
        p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             env=env or self.env, cwd=self.work, start_new_session=new_session)
        with self.lock:
            self.popen_pids.add(p.pid)
        return p

    def finish(self, p, timeout=120):
        try:
            out, err = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            out, err = p.communicate()
            raise Outcome("did not end within %d s" % timeout)
        finally:
            with self.lock:
                self.popen_pids.discard(p.pid)
        return p.returncode, out.decode("utf-8", "replace"), err.decode("utf-8", "replace")

    def reap_orphans(self):
        """Reap zombies that came to us as the subreaper (a killed run's
        broker and worker): they are not ours to count as leaks once dead."""
        me = os.getpid()
        for pid, (_c, state, ppid) in all_procs().items():
            if ppid == me and state == "Z":
                with self.lock:
                    if pid in self.popen_pids:
                        continue
                try:
                    if os.waitpid(pid, os.WNOHANG)[0] == pid:
                        self.orphans += 1
                except ChildProcessError:
                    pass

    def cli(self, args, expect_rc, expect_out=None, expect_err=None, env=None, agent=None):
        p = self.spawn([self.chidori] + args, env=env)
        rc, out, err = self.finish(p)
        if rc != expect_rc or (expect_out is not None and out.strip() != expect_out) or \
                (expect_err is not None and expect_err not in err):
            raise Outcome("expected exit %d%s%s, got exit %d\nstdout: %s\nstderr: %s" % (
                expect_rc, ", stdout %s" % expect_out if expect_out is not None else "",
                ", stderr with %r" % expect_err if expect_err else "", rc, out[-2000:], err[-2000:]))

    def a(self, name):
        return os.path.join(AGENTS, name)

    # -- chidori run

    def run_ok(self, n):
        self.cli(["run", "--quiet", self.a("ok.js"), "--input", json.dumps({"n": n})], 0,
                 json.dumps({"ok": True, "n": n, "t": "ok %d" % n}, separators=(",", ":")))

    def run_throw(self, n):
        self.cli(["run", "--quiet", self.a("throw.js"), "--input", json.dumps({"n": n})], 1,
                 expect_err="chidori: agent error: Error: soak boom %d" % n)

    def run_memory(self, n):
        self.cli(["run", "--quiet", "--memory", "64M", self.a("bomb.js")], 137,
                 expect_err="chidori: memory limit exceeded (limit 64 MiB)")

    def run_deadline(self, n):
        self.cli(["run", "--quiet", "--deadline", "300", self.a("sleep.js")], 124,
                 expect_err="chidori: deadline exceeded (300 ms)")

    def run_pids(self, n):
        self.cli(["launch", "--quiet", "--pids", "16", "--", os.path.join(self.probes, "cg_forkbomb")], 3,
                 expect_err="process limit reached (pids.max 16)")

    def run_seccomp(self, n):
        env = dict(self.env, CHIDORI_WORKER=self.probe_fork)
        self.cli(["run", "--quiet", self.a("ok.js")], 159, env=env,
                 expect_err="chidori: sandbox violation: blocked syscall fork")

    def run_nested(self, n):
        self.cli(["run", "--quiet", self.a("nested.js"), "--input", json.dumps({"n": n})], 0,
                 json.dumps({"nested": {"child": True, "got": 2 * n}}, separators=(",", ":")))

    def run_tool(self, n):
        self.cli(["run", "--quiet", "--tools", self.a("tools.json"), self.a("tool.js"), "--input", json.dumps({"n": n})],
                 0, json.dumps({"tool": "SOAK %d" % n}, separators=(",", ":")))

    def run_fetch(self, n):
        url = "%s/text?s=soak%d" % (self.fake_url, n)
        self.cli(["run", "--quiet", "--allow-host", self.fake_host, self.a("fetch.js"), "--input", json.dumps({"url": url})],
                 0, json.dumps({"status": 200, "text": "soak%d" % n}, separators=(",", ":")))

    def run_kill(self, n):
        # SIGKILL at a random moment of a run's life (bundle, box start, the
        # agent waiting): the top process we started, or its whole group.
        group = self.rng.random() < 0.5
        delay = self.rng.uniform(0, 0.4)
        p = self.spawn([self.chidori, "run", "--quiet", self.a("sleep.js")], new_session=True)
        time.sleep(delay)
        try:
            if group:
                os.killpg(p.pid, signal.SIGKILL)
            else:
                p.kill()
        except ProcessLookupError:
            pass
        rc, out, err = self.finish(p)
        if rc != -signal.SIGKILL:
            raise Outcome("SIGKILL after %.3f s: expected death by SIGKILL, got exit %d\nstdout: %s\nstderr: %s"
                          % (delay, rc, out[-2000:], err[-2000:]))

    # -- chidori serve

    def http(self, method, path, body=None, timeout=120):
        c = http.client.HTTPConnection("127.0.0.1", self.serve_port, timeout=timeout)
        try:
            c.request(method, path, body=json.dumps(body) if body is not None else None,
                      headers={"Content-Type": "application/json"} if body is not None else {})
            r = c.getresponse()
            data = r.read()
        finally:
            c.close()
        try:
            doc = json.loads(data) if data else None
        except ValueError:
            doc = data.decode("utf-8", "replace")
        return r.status, doc

    def expect(self, what, got_code, doc, code, **fields):
        bad = got_code != code
        for k, v in fields.items():
            if not isinstance(doc, dict) or doc.get(k) != v:
                bad = True
        if bad:
            raise Outcome("%s: expected HTTP %d %s, got HTTP %d: %s" % (
                what, code, json.dumps(fields), got_code, json.dumps(doc)[-2000:]))

    def session(self, body, code, **fields):
        c, doc = self.http("POST", "/sessions", body)
        self.expect("POST /sessions", c, doc, code, **fields)
        return doc["id"]

    def delete(self, sid):
        c, doc = self.http("DELETE", "/sessions/" + sid)
        self.expect("DELETE /sessions/" + sid, c, doc, 204)
        c, doc = self.http("GET", "/sessions/" + sid)
        self.expect("GET after DELETE", c, doc, 404)

    def s_ok(self, n):
        sid = self.session({"input": {"kind": "ok", "n": n}}, 201, status="done", result={"ok": True, "n": n})
        self.delete(sid)

    def s_throw(self, n):
        sid = self.session({"input": {"kind": "throw", "n": n}}, 201, status="failed", exit=1)
        c, doc = self.http("GET", "/sessions/" + sid)
        err = (doc or {}).get("error") or {}
        if err.get("name") != "Error" or "soak boom %d" % n not in err.get("message", ""):
            raise Outcome("a throwing session: expected error Error: soak boom %d, got %s" % (n, json.dumps(doc)))
        self.delete(sid)

    def s_fetch(self, n):
        url = "%s/text?s=s%d" % (self.fake_url, n)
        sid = self.session({"input": {"kind": "fetch", "url": url}}, 201, status="done", result={"text": "s%d" % n})
        self.delete(sid)

    def s_nested(self, n):
        sid = self.session({"input": {"kind": "nested", "n": n}}, 201, status="done",
                           result={"nested": {"child": True, "got": 2 * n}})
        self.delete(sid)

    def s_tool(self, n):
        sid = self.session({"input": {"kind": "tool", "n": n}}, 201, status="done", result={"tool": "SOAK %d" % n})
        self.delete(sid)

    def s_memory(self, n):
        sid = self.session({"input": {"kind": "memory", "n": n}}, 201, status="done", result=n)
        self.delete(sid)

    def s_approve(self, n):
        # supervised: the fetch is asked; the session pauses (its worker exits), approve resumes it.
        url = "%s/text?s=a%d" % (self.fake_url, n)
        sid = self.session({"input": {"kind": "fetch", "url": url}, "policy_profile": "supervised"}, 201,
                           status="awaitingapproval")
        decision = "allow" if n % 4 else "deny"
        c, doc = self.http("POST", "/sessions/%s/approve" % sid, {"decision": decision})
        if decision == "allow":
            self.expect("approve allow", c, doc, 200, status="done", result={"text": "a%d" % n})
        else:
            self.expect("approve deny", c, doc, 200, status="failed", exit=1)
        self.delete(sid)

    def s_input(self, n):
        sid = self.session({"input": {"kind": "input"}}, 201, status="awaitinginput")
        c, doc = self.http("POST", "/sessions/%s/input" % sid, {"value": "soak %d" % n})
        self.expect("input", c, doc, 200, status="done", result={"hello": "soak %d" % n})
        self.delete(sid)

    def s_cancel(self, n):
        sid = self.session({"input": {"kind": "sleep"}, "wait": False}, 202)
        time.sleep(self.rng.uniform(0, 0.3))
        c, doc = self.http("POST", "/sessions/%s/cancel" % sid)
        self.expect("cancel", c, doc, 200, status="cancelled")
        self.delete(sid)

    def s_delete_running(self, n):
        sid = self.session({"input": {"kind": "sleep"}, "wait": False}, 202)
        time.sleep(self.rng.uniform(0, 0.3))
        self.delete(sid)

    def s_replay(self, n):
        # a fresh box answered from the session's journal (memory, clock)
        sid = self.session({"input": {"kind": "memory", "n": n}}, 201, status="done", result=n)
        c, doc = self.http("POST", "/sessions/%s/replay" % sid)
        self.expect("replay", c, doc, 200, matched=True, result=n)
        self.delete(sid)

    def s_stream(self, n):
        # POST /sessions/stream: the events of the session until it settles
        c = http.client.HTTPConnection("127.0.0.1", self.serve_port, timeout=120)
        try:
            c.request("POST", "/sessions/stream", body=json.dumps({"input": {"kind": "ok", "n": n}}),
                      headers={"Content-Type": "application/json"})
            r = c.getresponse()
            text = r.read().decode("utf-8", "replace")
            loc = r.getheader("Location") or ""
        finally:
            c.close()
        ok = r.status == 201 and "event: done" in text and '"result":{"ok":true,"n":%d}' % n in text \
            and 'event: log\ndata: {"level":"info","message":"ok %d"}' % n in text
        if not ok or not loc.startswith("/sessions/"):
            raise Outcome("POST /sessions/stream: expected 201, a log and a done event with the result, got HTTP %d "
                          "(Location %r):\n%s" % (r.status, loc, text[-2000:]))
        self.delete(loc[len("/sessions/"):])

    def s_bomb(self, n):
        sid = self.session({"input": {"kind": "bomb"}}, 201, status="failed", exit=137)
        self.delete(sid)

    MIX = [  # (weight, kind): about half through run, half through serve
        (12, "run_ok"), (4, "run_throw"), (3, "run_memory"), (3, "run_deadline"), (3, "run_pids"),
        (3, "run_seccomp"), (4, "run_nested"), (4, "run_tool"), (4, "run_fetch"), (6, "run_kill"),
        (12, "s_ok"), (4, "s_throw"), (4, "s_fetch"), (3, "s_nested"), (3, "s_tool"), (2, "s_memory"),
        (6, "s_approve"), (5, "s_input"), (5, "s_cancel"), (3, "s_delete_running"), (2, "s_bomb"),
        (3, "s_replay"), (3, "s_stream"),
    ]

    def one(self, n, kind):
        try:
            getattr(self, kind)(n)
        except Outcome as e:
            self.fail(n, kind, str(e))
        except Exception as e:  # noqa: BLE001 - any surprise is a wrong outcome, never a lost worker
            self.fail(n, kind, "%s: %s" % (type(e).__name__, e))
        self.simulate_leak(n)
        self.reap_orphans()

    def fail(self, n, kind, text):
        with self.lock:
            self.failures.append((n, kind, text))
            if len(self.failures) <= 20:
                sys.stderr.write("soak: run %d (%s) failed: %s\n" % (n, kind, text))

    def simulate_leak(self, n):
        if self.leak == "tmpfile":
            with open(os.path.join(self.tmpdir, "chidori-soak-leak-%d" % n), "w") as f:
                f.write("leak\n")
        elif self.leak == "process":
            self.leaked.append(subprocess.Popen(["sleep", "3600"]))

    # -- sampling

    def sample(self, done):
        # Let the processes of runs that ended go (a killed run's broker and
        # worker die by their parent-death signal): at most 5 s.
        t0 = time.time()
        while True:
            self.reap_orphans()
            m = self.measure(done)
            if (m["procs"] == 0 and m["zombies"] == 0) or time.time() - t0 > 5:
                break
            time.sleep(0.1)
        self.samples.append(m)
        sys.stderr.write("soak: %s\n" % " ".join("%s=%s" % (k, m[k]) for k in self.METRICS + ["elapsed_s"]))
        return m

    METRICS = ["runs", "server_rss_kib", "server_fds", "sqlite_fds", "procs", "zombies", "chidori_procs",
               "cgroup_dirs", "tmp_files", "state_kib", "wal_kib", "db_rows"]

    def measure(self, done):
        procs = all_procs()
        me = os.getpid()
        server = {self.serve.pid} | {p for p in descendants(self.serve.pid, procs)
                                     if procs[p][0] == "chidori-broker" and procs[p][2] == self.serve.pid}
        keep = server | {self.fake.pid} | {p.pid for p in self.leaked if hasattr(p, "pid")}
        ours = (descendants(me, procs) | self.cg.pids()) - {me}
        ours = {p for p in ours if p in procs}
        # what a run left: any process of ours but the server (monitor + broker) and fake_http
        left = ours - keep
        left_live = {p for p in left if procs[p][1] != "Z"}
        zombies = {p for p in ours if procs[p][1] == "Z"}
        leaked_procs = {p.pid for p in self.leaked if hasattr(p, "pid")}
        rss = sum(rss_kib(p) for p in server)
        fds = [f for p in server for f in fds_of(p)]
        sqlite = [f for f in fds if re.search(r"\.db(-wal|-shm)?$", f)]
        tmp = 0
        for d in {"/tmp", self.tmpdir}:
            try:
                tmp += sum(1 for e in os.listdir(d) if e.startswith("chidori-") and not (d == "/tmp" and e in BOUND_IN))
            except OSError:
                pass
        state = wal = 0
        for root, _dirs, files in os.walk(self.state):
            for f in files:
                try:
                    size = os.lstat(os.path.join(root, f)).st_blocks * 512
                except OSError:
                    continue
                if f.endswith(("-wal", "-shm")):
                    wal += size
                else:
                    state += size
        return {
            "runs": done,
            "server_rss_kib": rss,
            "server_fds": len(fds),
            "sqlite_fds": len(sqlite),
            "procs": len(left_live) + len(leaked_procs & set(procs)),
            "zombies": len(zombies),
            "chidori_procs": sum(1 for p in left if procs[p][0].startswith("chidori")),
            "cgroup_dirs": self.cg.count(),
            "tmp_files": tmp,
            "state_kib": state // 1024,
            "wal_kib": wal // 1024,
            "db_rows": sum(db_rows(os.path.join(self.state, "serve", f), True) for f in ("serve.db", "memory.sqlite3"))
            + db_rows(os.path.join(self.state, "run", "chidori", "memory.sqlite3"), False),
            "elapsed_s": round(time.time() - self.t_start, 1),
            "left": sorted("%d:%s:%s" % (p, procs[p][0], procs[p][1]) for p in left)[:10],
        }

    # -- the slopes

    LIMITS = {  # metric: (kind, limit); "per_run": least-squares slope per run; "allowance":
        # the fitted growth over the runs after warm-up, and last minus first, at most the allowance;
        # "bound": every sample at most the limit
        "server_rss_kib": ("per_run", 2.0),
        "server_fds": ("allowance", 2),
        "sqlite_fds": ("allowance", 0),
        "procs": ("allowance", 1),
        "zombies": ("allowance", 0),
        "chidori_procs": ("allowance", 1),
        "cgroup_dirs": ("allowance", None),  # 3 per hierarchy for each of SOAK_JOBS killed runs
        "tmp_files": ("allowance", 2),
        "state_kib": ("per_run", 0.25),
        # SQLite's autocheckpoint restarts a WAL past 1000 pages (4 MiB); two live databases
        "wal_kib": ("bound", 3 * 4096),
        # every session is deleted once checked: what the databases hold stays
        "db_rows": ("allowance", 0),
    }

    def slopes(self):
        pts = [s for s in self.samples if s["runs"] >= self.warmup]
        rows = []
        ok = True
        for m, (kind, lim) in self.limits.items():
            if lim is None:
                lim = 3 * max(1, len(self.cg.dirs)) * self.jobs
            if len(pts) < 3:
                rows.append((m, None, None, kind, lim, "too few samples"))
                continue
            xs = [s["runs"] for s in pts]
            ys = [s[m] for s in pts]
            n = len(xs)
            mx, my = sum(xs) / n, sum(ys) / n
            sxx = sum((x - mx) ** 2 for x in xs)
            slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx if sxx else 0.0
            growth = slope * (xs[-1] - xs[0])
            if kind == "per_run":
                good = slope <= lim
            elif kind == "bound":
                good = max(s[m] for s in self.samples) <= lim
            else:
                good = growth <= lim + 0.5 and ys[-1] - ys[0] <= lim
            ok = ok and good
            rows.append((m, slope, growth, kind, lim, "pass" if good else "FAIL"))
        if len(pts) < 3:
            ok = False
        return ok, rows

    # -- main

    def start(self):
        os.makedirs(self.out, exist_ok=True)
        self.private = private_tmp([self.out, REPO, os.path.dirname(self.chidori)])
        set_subreaper()
        self.cg = Cgroups()
        self.work = os.path.join(self.out, "work")
        self.state = os.path.join(self.out, "state")
        subprocess.run(["rm", "-rf", self.work, self.state], check=True)
        os.makedirs(self.work)
        os.makedirs(self.state)
        self.tmpdir = "/tmp/soak-tmpdir" if self.private else os.path.join(self.out, "tmp")
        os.makedirs(self.tmpdir, exist_ok=True)
        # CHIDORI_RUN_BROKER=0 soaks the one-process parent instead (docs/serve.md)
        self.env = {k: v for k, v in os.environ.items()
                    if not k.startswith(("CHIDORI_", "SOAK_")) or k == "CHIDORI_RUN_BROKER"}
        self.env.update(XDG_STATE_HOME=os.path.join(self.state, "run"), TMPDIR=self.tmpdir)
        self.probe_fork = os.path.join(self.work, "probe-worker-fork")
        os.symlink(os.path.join(self.probes, "probe"), self.probe_fork)
        self.fake = subprocess.Popen([sys.executable, os.path.join(REPO, "tests/servers/fake_http.py"), "--port", "0",
                                      "--host", "127.0.0.1"], stdout=subprocess.PIPE, stdin=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL, env=self.env)
        with open(os.path.join(self.out, "fake_http.pid"), "w") as f:
            f.write("%d\n" % self.fake.pid)
        with open(os.path.join(self.out, "driver.pid"), "w") as f:  # its cgroups are soak-PID
            f.write("%d\n" % os.getpid())
        port = int(self.fake.stdout.readline())
        self.fake_host = "127.0.0.1:%d" % port
        self.fake_url = "http://" + self.fake_host
        self.serve_err = open(os.path.join(self.out, "serve.err"), "w+")
        self.serve = subprocess.Popen(
            [self.chidori, "serve", self.a("serve.js"), "--listen", "127.0.0.1:0", "--trusted",
             "--state-dir", os.path.join(self.state, "serve"), "--allow-host", self.fake_host,
             "--tools", self.a("tools.json"), "--memory", "128M", "--max-running", str(max(2, self.jobs)),
             "--grace", "0"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=self.serve_err, env=self.env, cwd=self.work)
        t0 = time.time()
        while True:
            with open(self.serve_err.name) as f:
                mm = re.search(r"^Listening: http://127\.0\.0\.1:([0-9]+)$", f.read(), re.M)
            if mm:
                self.serve_port = int(mm.group(1))
                break
            if self.serve.poll() is not None or time.time() - t0 > 30:
                with open(self.serve_err.name) as f:
                    sys.stderr.write("soak: chidori serve did not start:\n" + f.read())
                self.stop()
                sys.exit(1)
            time.sleep(0.05)

    def halt_workers(self):
        # ^C or SIGTERM interrupts only the main thread: the workers would go
        # on starting runs while the cgroups are closed under them (an empty
        # soak-PID cgroup was left). They take no new run; the one each is in
        # ends within its own deadline.
        self.halt.set()
        for t in self.threads:
            t.join(timeout=120)

    def stop(self):
        for p in (getattr(self, "serve", None), getattr(self, "fake", None)):
            if p and p.poll() is None:
                p.send_signal(signal.SIGTERM)
                try:
                    p.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
        for p in self.leaked:
            if hasattr(p, "kill"):
                p.kill()
                p.wait()
            else:
                p.close()
        self.leaked = []

    def main(self):
        # whatever happens (a failed start, an exception, ^C), nothing we
        # started outlives us: the servers are stopped, our cgroups removed
        try:
            return self.soak()
        finally:
            self.halt_workers()
            self.stop()
            if getattr(self, "cg", None):
                self.cg.close()

    def soak(self):
        self.start()
        self.t_start = time.time()
        self.samples = []
        sys.stderr.write("soak: %d runs, %d at once, a sample every %d, warm-up %d runs, seed %d, private /tmp: %s\n"
                         % (self.runs, self.jobs, self.sample_every, self.warmup, self.seed, self.private))
        weights = [w for w, _k in self.MIX]
        kinds = [k for _w, k in self.MIX]
        # every kind once first (in a random order), then the weighted mix
        first = kinds[:]
        self.rng.shuffle(first)
        plan = (first + self.rng.choices(kinds, weights, k=self.runs))[:self.runs]
        for k in plan:
            self.counts[k] = self.counts.get(k, 0) + 1
        self.sample(0)
        done = 0
        while done < self.runs:
            batch = plan[done:done + self.sample_every - done % self.sample_every]
            it = iter(enumerate(batch, done + 1))
            it_lock = threading.Lock()

            def worker():
                while not self.halt.is_set():
                    with it_lock:
                        nxt = next(it, None)
                    if nxt is None:
                        return
                    self.one(*nxt)

            ts = self.threads = [threading.Thread(target=worker) for _ in range(self.jobs)]
            for t in ts:
                t.start()
            for t in ts:
                t.join()
            done += len(batch)
            if self.serve.poll() is not None:
                self.fail(done, "serve", "chidori serve exited (status %s); its stderr is %s"
                          % (self.serve.returncode, self.serve_err.name))
                break
            if len(self.failures) > 200:
                sys.stderr.write("soak: more than 200 wrong outcomes, stopping\n")
                break
            self.sample(done)
        self.elapsed = time.time() - self.t_start
        slopes_ok, rows = self.slopes()
        self.stop()
        left = self.cg.close()
        self.report(rows, slopes_ok, left)
        ok = slopes_ok and not self.failures and not left
        sys.stderr.write("soak: %s: %d runs in %.0f s, %d wrong outcomes, slopes %s; report in %s\n" % (
            "PASS" if ok else "FAIL", done, self.elapsed, len(self.failures), "pass" if slopes_ok else "FAIL",
            os.path.join(self.out, "report.md")))
        return 0 if ok else 1

    # -- the report

    def report(self, rows, slopes_ok, left):
        L = []
        L.append("# chidori soak report\n")
        L.append("- runs: %d (planned %d), %d at once, a sample every %d runs, warm-up %d runs, seed %d"
                 % (self.samples[-1]["runs"], self.runs, self.jobs, self.sample_every, self.warmup, self.seed))
        L.append("- time: %.0f s (%.1f runs/s); private /tmp: %s; simulated leak: %s"
                 % (self.elapsed, self.samples[-1]["runs"] / max(self.elapsed, 0.001), self.private, self.leak or "none"))
        L.append("- mix: " + ", ".join("%s %d" % (k, self.counts.get(k, 0)) for _w, k in self.MIX))
        L.append("- orphans reaped as subreaper (a killed run's broker and worker): %d" % self.orphans)
        L.append("- wrong outcomes: %d" % len(self.failures))
        L.append("- cgroup directories left at the end: %s" % (", ".join(left) if left else "none"))
        L.append("- result: **%s**\n" % ("PASS" if slopes_ok and not self.failures and not left else "FAIL"))
        L.append("## Samples\n")
        cols = self.METRICS + ["elapsed_s"]
        L.append("| " + " | ".join(cols) + " |")
        L.append("|" + "---|" * len(cols))
        for s in self.samples:
            L.append("| " + " | ".join(str(s[c]) for c in cols) + " |")
        L.append("\n## Slopes (least squares over the samples from run %d on)\n" % self.warmup)
        L.append("| metric | slope per run | fitted growth | rule | limit | result |")
        L.append("|---|---|---|---|---|---|")
        for m, slope, growth, kind, lim, res in rows:
            rule = {"per_run": "slope per run <= limit", "allowance": "fitted growth and last - first <= limit",
                    "bound": "every sample <= limit"}[kind]
            L.append("| %s | %s | %s | %s | %s | %s |" % (
                m, "-" if slope is None else "%.5f" % slope, "-" if growth is None else "%.2f" % growth, rule, lim, res))
        if self.failures:
            L.append("\n## Wrong outcomes (first 50)\n")
            for n, kind, text in self.failures[:50]:
                L.append("- run %d `%s`:\n\n```\n%s\n```" % (n, kind, text.replace("```", "'''")))
        lefts = [s for s in self.samples if s["left"]]
        if lefts:
            L.append("\n## Processes left at a sample (pid:comm:state)\n")
            for s in lefts[:20]:
                L.append("- after run %d: %s" % (s["runs"], " ".join(s["left"])))
        with open(os.path.join(self.out, "report.md"), "w") as f:
            f.write("\n".join(L) + "\n")
        with open(os.path.join(self.out, "samples.json"), "w") as f:
            json.dump(self.samples, f, indent=1)
        plot(os.path.join(self.out, "samples.png"), self.samples, self.METRICS[1:], self.warmup)


# ------------------------------------------------------------------ a tiny PNG plot

FONT = {  # 3x5 glyphs, rows top to bottom, 3 bits each
    "A": "010101111101101", "B": "110101110101110", "C": "011100100100011", "D": "110101101101110",
    "E": "111100110100111", "F": "111100110100100", "G": "011100101101011", "H": "101101111101101",
    "I": "111010010010111", "J": "001001001101010", "K": "101101110101101", "L": "100100100100111",
    "M": "101111111101101", "N": "110101101101101", "O": "010101101101010", "P": "110101110100100",
    "Q": "010101101110011", "R": "110101110101101", "S": "011100010001110", "T": "111010010010010",
    "U": "101101101101111", "V": "101101101101010", "W": "101101111111101", "X": "101101010101101",
    "Y": "101101010010010", "Z": "111001010100111", "0": "111101101101111", "1": "010110010010111",
    "2": "110001010100111", "3": "110001010001110", "4": "101101111001001", "5": "111100110001110",
    "6": "011100111101111", "7": "111001010010010", "8": "111101111101111", "9": "111101111001110",
    "_": "000000000000111", "-": "000000111000000", ".": "000000000000010", " ": "000000000000000",
    ":": "000010000010000", "/": "001001010100100",
}


def plot(path, samples, metrics, warmup):
    pw, ph, pad = 360, 150, 24
    cols = 3
    rows = (len(metrics) + cols - 1) // cols
    W, H = cols * (pw + pad) + pad, rows * (ph + 2 * pad) + pad
    img = bytearray(b"\xff" * (W * H * 3))

    def px(x, y, c):
        if 0 <= x < W and 0 <= y < H:
            i = (y * W + x) * 3
            img[i:i + 3] = bytes(c)

    def line(x0, y0, x1, y1, c):
        dx, dy = abs(x1 - x0), -abs(y1 - y0)
        sx, sy = (1 if x0 < x1 else -1), (1 if y0 < y1 else -1)
        err = dx + dy
        while True:
            px(x0, y0, c)
            if x0 == x1 and y0 == y1:
                return
            e2 = 2 * err
            if e2 >= dy:
                err += dy
                x0 += sx
            if e2 <= dx:
                err += dx
                y0 += sy

    def text(x, y, s, c=(0, 0, 0), scale=2):
        for ch in s.upper():
            g = FONT.get(ch, FONT[" "])
            for r in range(5):
                for k in range(3):
                    if g[r * 3 + k] == "1":
                        for a in range(scale):
                            for b in range(scale):
                                px(x + k * scale + a, y + r * scale + b, c)
            x += 4 * scale

    xs = [s["runs"] for s in samples]
    xmax = max(xs[-1], 1)
    for i, m in enumerate(metrics):
        ox = pad + (i % cols) * (pw + pad)
        oy = pad + (i // cols) * (ph + 2 * pad) + 14
        ys = [s[m] for s in samples]
        lo, hi = min(ys), max(ys)
        if hi == lo:
            hi = lo + 1
        text(ox, oy - 14, "%s %s-%s" % (m, min(ys), max(ys)))
        for x in range(pw):
            px(ox + x, oy + ph, (0, 0, 0))
        for y in range(ph):
            px(ox, oy + y, (0, 0, 0))
        wx = ox + int(warmup / xmax * (pw - 1))
        for y in range(0, ph, 4):
            px(wx, oy + y, (160, 160, 160))
        pts = [(ox + int(x / xmax * (pw - 1)), oy + ph - 1 - int((y - lo) / (hi - lo) * (ph - 1))) for x, y in zip(xs, ys)]
        for (a, b), (c, d) in zip(pts, pts[1:]):
            line(a, b, c, d, (200, 30, 30))
        for a, b in pts:
            for dx in (-1, 0, 1):
                for dy in (-1, 0, 1):
                    px(a + dx, b + dy, (30, 30, 200))
        text(ox, oy + ph + 4, "RUNS 0-%d" % xmax, (90, 90, 90), 1)
    raw = b"".join(b"\x00" + bytes(img[y * W * 3:(y + 1) * W * 3]) for y in range(H))

    def chunk(t, d):
        return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d) & 0xffffffff)

    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", W, H, 8, 2, 0, 0, 0))
                + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b""))


def _terminated(_sig, _frame):
    raise KeyboardInterrupt  # SIGTERM stops the soak as ^C does: servers stopped, cgroups removed


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, _terminated)
    s = Soak()
    try:
        rc = s.main()
    except KeyboardInterrupt:
        s.halt_workers()
        s.stop()
        rc = 130
    sys.exit(rc)
