"""The Python SDK against a real ``chidori serve`` (tests/serve.py starts it)."""

import os
import sys
import time
import unittest
import uuid

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from chidori import (ApprovalEvent, BadRequest, CallEvent, ChidoriError, Client, Conflict,  # noqa: E402
                     DoneEvent, LogEvent, NotFound, ProtocolError, Session, StatusEvent, Timeout, TooManyRequests,
                     Unauthorized, Unavailable)
from serve import REPO, RawServer, Server, answer  # noqa: E402

SERVER: Server


def setUpModule() -> None:
    global SERVER
    SERVER = Server()


def tearDownModule() -> None:
    SERVER.stop()


class Sessions(unittest.TestCase):
    def setUp(self) -> None:
        self.c = Client(SERVER.url, timeout=60)

    def tearDown(self) -> None:
        self.c.close()

    def test_health_and_ready(self) -> None:
        self.assertEqual(self.c.health(), {"status": "ok"})
        self.assertIs(self.c.ready(), True)

    def test_run_waits_and_passes_values_through(self) -> None:
        value = {"n": 1.5, "big": 12345678901234, "list": [1, "two", None, True], "nested": {"a": {"b": []}}}
        s = self.c.run(value)
        self.assertIsInstance(s, Session)
        self.assertEqual(s.status, "done")
        self.assertEqual(s.result, {"echo": value})
        self.assertEqual(s.exit, 0)
        self.assertEqual(s.tenant, "default")
        self.assertIn("wall_ms", s.stats)
        self.assertTrue(s.id.startswith("s"))
        self.assertEqual(s.raw["status"], "done")  # the wire's names, untouched

    def test_run_policy_profile_is_sent(self) -> None:
        s = self.c.run({"write": 1}, policy_profile="untrusted")
        self.assertEqual(s.policy_profile, "untrusted")
        self.assertEqual(s.result["wrote"], "EPOLICY")
        with self.assertRaises(BadRequest) as cm:
            self.c.run({}, policy_profile="nosuch")
        self.assertEqual(cm.exception.status, 400)
        self.assertEqual(cm.exception.code, "unknown_profile")
        self.assertIn("nosuch", cm.exception.message)

    def test_failed_agent(self) -> None:
        s = self.c.run({"fail": "it broke"})
        self.assertEqual(s.status, "failed")
        self.assertEqual(s.error.name, "Error")
        self.assertIn("it broke", s.error.message)
        self.assertNotEqual(s.exit, 0)

    def test_create_returns_at_once_and_get_follows(self) -> None:
        s = self.c.create({"sleep": 1500})
        self.assertIn(s.status, ("queued", "running"))
        self.assertFalse(s.settled)
        got = self.c.get(s.id)
        self.assertEqual(got.id, s.id)
        deadline = time.monotonic() + 60
        while not got.settled and time.monotonic() < deadline:
            time.sleep(0.1)
            got = self.c.get(s.id)
        self.assertEqual(got.status, "done")

    def test_run_repolls_past_the_servers_wait(self) -> None:
        # Each request asks the server to wait 200 ms only: the SDK re-polls until the session settles.
        with Client(SERVER.url, timeout=60, wait_ms=200) as c:
            t0 = time.monotonic()
            s = c.run({"sleep": 2000})
            self.assertEqual(s.status, "done")
            self.assertGreaterEqual(time.monotonic() - t0, 1.9)

    def test_run_that_never_settles_raises_timeout(self) -> None:
        with Client(SERVER.url, timeout=2) as c:
            t0 = time.monotonic()
            with self.assertRaises(Timeout) as cm:
                c.run({"sleep": 30000})
            self.assertLess(time.monotonic() - t0, 10)
            sid = cm.exception.session_id
            self.assertTrue(sid)
            self.assertIn("did not settle", cm.exception.message)
        self.assertEqual(self.c.cancel(sid).status, "cancelled")

    def test_approval_and_input_flow(self) -> None:
        s = self.c.run({"write": 1, "ask": "your name?"}, policy_profile="supervised")
        self.assertEqual(s.status, "awaitingapproval")
        self.assertTrue(s.settled)
        pa = s.pending_approval
        self.assertEqual((pa.id, pa.target, pa.args["path"]), (1, "workspace:write", "a.txt"))
        self.assertIn("needs approval", pa.reason)
        with self.assertRaises(Conflict) as cm:
            self.c.input(s.id, "early")
        self.assertEqual((cm.exception.status, cm.exception.code), (409, "conflict"))
        with self.assertRaises(Conflict):
            self.c.approve(s.id, "allow", approval_id=7)
        with self.assertRaises(ValueError):
            self.c.approve(s.id, "yes")
        s = self.c.approve(s.id, "allow", approval_id=1)
        self.assertEqual(s.status, "awaitinginput")
        self.assertEqual(s.pending_input.prompt, "your name?")
        s = self.c.input(s.id, {"name": "bob", "n": 2})
        self.assertEqual(s.status, "done")
        self.assertEqual(s.result["wrote"], "written")
        self.assertEqual(s.result["answer"], {"name": "bob", "n": 2})

    def test_deny(self) -> None:
        s = self.c.run({"write": 1}, policy_profile="supervised")
        s = self.c.approve(s.id, "deny")
        self.assertEqual(s.status, "done")
        self.assertEqual(s.result["wrote"], "EPOLICY")

    def test_replay_and_journal(self) -> None:
        s = self.c.run({"write": 1}, policy_profile="supervised")
        s = self.c.approve(s.id, "allow")
        r = self.c.replay(s.id)
        self.assertIs(r.matched, True)
        self.assertEqual(r.result, s.result)
        self.assertIsNone(r.error)
        lines = list(self.c.journal(s.id))
        self.assertEqual(lines[0]["type"], "header")
        self.assertEqual(lines[0]["input"], {"write": 1})
        self.assertEqual(lines[-1]["type"], "end")
        self.assertTrue(any(l.get("op") == "workspace.write" for l in lines))

    def test_cancel_and_delete(self) -> None:
        s = self.c.create({"sleep": 30000})
        s = self.c.cancel(s.id)
        self.assertEqual(s.status, "cancelled")
        self.assertEqual(s.error.name, "Cancelled")
        with self.assertRaises(Conflict):
            self.c.cancel(s.id)
        self.assertIsNone(self.c.delete(s.id))
        with self.assertRaises(NotFound) as cm:
            self.c.get(s.id)
        self.assertEqual((cm.exception.status, cm.exception.code), (404, "not_found"))
        with self.assertRaises(NotFound):
            self.c.delete(s.id)

    def test_list_iterates_pages(self) -> None:
        tag = uuid.uuid4().hex
        ids = [self.c.run({"tag": tag, "i": i}).id for i in range(5)]
        got = [s.id for s in self.c.list(page_size=2)]
        # Newest first, every page followed: the five are there, in reverse order of creation.
        self.assertEqual([i for i in got if i in ids], list(reversed(ids)))
        self.assertEqual(len(list(self.c.list(limit=3, page_size=2))), 3)
        for s in self.c.list(status="done", limit=20):
            self.assertEqual(s.status, "done")
        with self.assertRaises(BadRequest) as cm:
            list(self.c.list(status="nosuch"))
        self.assertEqual(cm.exception.code, "invalid_field")

    def test_stream_yields_typed_events_to_done(self) -> None:
        evs = list(self.c.stream({"log": "hello from the agent"}))
        self.assertIsInstance(evs[0], StatusEvent)
        self.assertEqual(evs[0].session.status, "running")
        logs = [e for e in evs if isinstance(e, LogEvent)]
        self.assertEqual([(l.level, l.message) for l in logs], [("info", "hello from the agent")])
        self.assertIsInstance(evs[-1], DoneEvent)
        self.assertEqual(evs[-1].session.status, "done")
        self.assertEqual(evs[-1].session.result, {"echo": {"log": "hello from the agent"}})
        self.assertEqual([e.id for e in evs], list(range(1, len(evs) + 1)))

    def test_leaving_a_stream_early_closes_it(self) -> None:
        it = self.c.stream({"sleep": 1000})
        first = next(it)
        it.close()
        self.assertEqual(self.c.run({"after": 1}).status, "done")
        self.assertIsInstance(list(self.c.events(first.session.id))[-1], DoneEvent)

    def test_events_of_a_pause_and_after_an_id(self) -> None:
        s = self.c.run({"write": 1}, policy_profile="supervised")
        evs = list(self.c.events(s.id))
        self.assertEqual([e.event for e in evs], ["status", "call", "approval", "status"])
        self.assertIsInstance(evs[1], CallEvent)
        self.assertEqual((evs[1].op, evs[1].decision), ("workspace.write", "pending"))
        self.assertIsInstance(evs[2], ApprovalEvent)
        self.assertEqual(evs[2].approval.target, "workspace:write")
        self.assertEqual(evs[-1].session.status, "awaitingapproval")
        self.assertEqual([e.id for e in self.c.events(s.id, last_event_id=2)], [3, 4])
        self.c.approve(s.id, "allow")
        after = list(self.c.events(s.id, last_event_id=4))
        self.assertIsInstance(after[-1], DoneEvent)
        self.assertEqual(after[0].id, 5)

    def test_idempotency_key(self) -> None:
        key = uuid.uuid4().hex
        a = self.c.run({"k": 1}, idempotency_key=key)
        b = self.c.run({"k": 2}, idempotency_key=key)
        self.assertEqual(a.id, b.id)
        self.assertEqual(b.result, {"echo": {"k": 1}})

    def test_keep_alive_survives_an_idle_close(self) -> None:
        self.c.health()
        self.c._conn.sock.shutdown(2)  # what a server closing an idle connection leaves
        self.assertEqual(self.c.health(), {"status": "ok"})


class Tokens(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        cls.srv = Server(env={"CHIDORI_SERVE_TOKEN": "s3cret-token"})

    @classmethod
    def tearDownClass(cls) -> None:
        cls.srv.stop()

    def test_wrong_and_missing_token(self) -> None:
        with Client(self.srv.url, token="wrong") as c:
            with self.assertRaises(Unauthorized) as cm:
                c.run({})
            self.assertEqual((cm.exception.status, cm.exception.code), (401, "unauthorized"))
            self.assertEqual(c.health(), {"status": "ok"})  # probes need no token
        old = os.environ.pop("CHIDORI_SERVE_TOKEN", None)
        try:
            with Client(self.srv.url) as c, self.assertRaises(Unauthorized):
                c.get("s0")
        finally:
            if old is not None:
                os.environ["CHIDORI_SERVE_TOKEN"] = old

    def test_token_from_environment(self) -> None:
        os.environ["CHIDORI_SERVE_TOKEN"] = "s3cret-token"
        try:
            with Client(self.srv.url) as c:
                self.assertEqual(c.run({"a": 1}).result, {"echo": {"a": 1}})
        finally:
            del os.environ["CHIDORI_SERVE_TOKEN"]


class Retries(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        cls.srv = Server("--max-running", "1", "--max-queued", "0")

    @classmethod
    def tearDownClass(cls) -> None:
        cls.srv.stop()

    def test_429_is_retried_honouring_retry_after(self) -> None:
        with Client(self.srv.url, retries=0) as c:
            busy = c.create({"sleep": 2500})
            with self.assertRaises(TooManyRequests) as cm:
                c.run({"x": 1})
            e = cm.exception
            self.assertEqual((e.status, e.code, e.retry_after), (429, "queue_full", 1.0))
            self.assertIsInstance(e, ChidoriError)
        # With retries the same call waits Retry-After (1 s) between tries until the slot is free.
        with Client(self.srv.url, retries=10) as c:
            t0 = time.monotonic()
            s = c.run({"x": 2})
            self.assertEqual(s.result, {"echo": {"x": 2}})
            self.assertGreaterEqual(time.monotonic() - t0, 0.9)
            self.assertEqual(c.get(busy.id).status, "done")
        # Bounded: a queue that stays full is an error after the retries.
        with Client(self.srv.url, retries=1) as c:
            busy = c.create({"sleep": 20000})
            t0 = time.monotonic()
            with self.assertRaises(TooManyRequests):
                c.run({"x": 3})
            self.assertLess(time.monotonic() - t0, 10)
            c.cancel(busy.id)


class Unix(unittest.TestCase):
    def test_unix_socket(self) -> None:
        srv = Server(unix=True)
        try:
            self.assertTrue(srv.url.startswith("unix:"))
            with Client(srv.url) as c:
                self.assertEqual(c.health(), {"status": "ok"})
                self.assertEqual(c.run({"u": 1}).result, {"echo": {"u": 1}})
                self.assertIsInstance(list(c.stream({}))[-1], DoneEvent)
        finally:
            srv.stop()


class Example(unittest.TestCase):
    def test_supervised_example(self) -> None:
        import subprocess
        srv = Server(agent=os.path.join(REPO, "sdk", "examples", "note.js"))
        try:
            env = dict(os.environ, PYTHONPATH=os.path.join(REPO, "sdk", "python", "src"))
            r = subprocess.run([sys.executable, os.path.join(REPO, "sdk", "python", "examples", "supervised.py"),
                                srv.url], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               timeout=120)
            self.assertEqual(r.returncode, 0, r.stdout)
            lines = r.stdout.splitlines()
            self.assertEqual(lines[0], "pending approval 1: workspace:write note.txt")
            self.assertIn("needs approval", lines[1])
            self.assertEqual(lines[2], "approved")
            self.assertRegex(lines[3], r"^session s[0-9a-f]+ done: \{'saved': 'note.txt', 'bytes': 8\}$")
        finally:
            srv.stop()


class BadAnswers(unittest.TestCase):
    """What a proxy or a broken network gives: a typed error with a clear message, never a hang."""

    def test_unreachable(self) -> None:
        import socket
        s = socket.socket()
        s.bind(("127.0.0.1", 0))  # bound, never listening: refused
        port = s.getsockname()[1]
        try:
            with Client("http://127.0.0.1:%d" % port, timeout=5) as c, self.assertRaises(Unavailable) as cm:
                c.health()
            self.assertEqual(cm.exception.code, "unreachable")
            self.assertIn("cannot reach chidori serve at http://127.0.0.1:%d" % port, cm.exception.message)
            self.assertIsNone(cm.exception.status)
        finally:
            s.close()
        with Client("unix:/nonexistent/chidori.sock") as c, self.assertRaises(Unavailable) as cm:
            c.health()
        self.assertIn("unix:/nonexistent/chidori.sock", str(cm.exception))

    def test_bad_base_url(self) -> None:
        with self.assertRaises(ValueError):
            Client("ftp://x")
        with self.assertRaises(ValueError):
            Client("unix:")

    def test_html_from_a_proxy(self) -> None:
        page = b"<html><body><h1>502 Bad Gateway</h1></body></html>"
        srv = RawServer(lambda conn, head: conn.sendall(answer("502 Bad Gateway", "text/html", page)))
        try:
            with Client(srv.url, timeout=5) as c, self.assertRaises(Unavailable) as cm:
                c.get("s1")
            e = cm.exception
            self.assertEqual((e.status, e.code), (502, None))
            self.assertIn("not chidori serve's JSON error (text/html)", e.message)
            self.assertIn("502 Bad Gateway", e.message)
        finally:
            srv.stop()
        srv = RawServer(lambda conn, head: conn.sendall(answer("200 OK", "text/html", page)))
        try:
            with Client(srv.url, timeout=5) as c, self.assertRaises(ProtocolError) as cm:
                c.get("s1")
            self.assertEqual(cm.exception.code, "not_json")
            self.assertIn("expected JSON from chidori serve, got text/html", cm.exception.message)
        finally:
            srv.stop()

    def test_non_json_body(self) -> None:
        srv = RawServer(lambda conn, head: conn.sendall(answer("200 OK", "application/json", b"{\"id\": ")))
        try:
            with Client(srv.url, timeout=5) as c, self.assertRaises(ProtocolError) as cm:
                c.health()
            self.assertIn("not valid JSON", cm.exception.message)
        finally:
            srv.stop()

    def test_503_html_is_retried_then_raised(self) -> None:
        srv = RawServer(lambda conn, head: conn.sendall(
            answer("503 Service Unavailable", "text/html", b"<h1>down</h1>", "Retry-After: 0\r\n")))
        try:
            with Client(srv.url, timeout=10, retries=2) as c, self.assertRaises(Unavailable) as cm:
                c.run({})
            self.assertEqual(cm.exception.status, 503)
            self.assertEqual(len(srv.requests), 3)  # the first try and two retries
        finally:
            srv.stop()

    def test_silent_server_times_out(self) -> None:
        srv = RawServer(lambda conn, head: time.sleep(8))
        try:
            with Client(srv.url, timeout=1) as c:
                t0 = time.monotonic()
                with self.assertRaises(Timeout) as cm:
                    c.health()
                self.assertLess(time.monotonic() - t0, 5)
                self.assertEqual(cm.exception.code, "timeout")
        finally:
            srv.stop()

    def test_cut_stream_is_reopened_after_the_last_event(self) -> None:
        sid = "s01a2329f41b4ec49e7fcfe3ef9ee"
        running = '{"id":"%s","status":"running"}' % sid
        done = '{"id":"%s","status":"done","result":{"ok":true}}' % sid

        def handler(conn, head):
            sse = "HTTP/1.1 %s\r\nContent-Type: text/event-stream\r\nLocation: /sessions/%s\r\nConnection: close\r\n\r\n"
            if head.startswith(b"POST /sessions/stream"):
                # One event, then a second cut in its middle.
                conn.sendall((sse % ("201 Created", sid) + "id: 1\nevent: status\ndata: %s\n\nid: 2\nevent: lo"
                              % running).encode())
            elif b"Last-Event-ID: 1" in head:
                conn.sendall((sse % ("200 OK", sid) + "id: 2\nevent: log\ndata: {\"level\":\"info\",\"message\":\"m\"}"
                              "\n\n: keep-alive\n\nid: 3\nevent: done\ndata: %s\n\n" % done).encode())
        srv = RawServer(handler)
        try:
            with Client(srv.url, timeout=10) as c:
                evs = list(c.stream({}))
            self.assertEqual([(e.id, e.event) for e in evs], [(1, "status"), (2, "log"), (3, "done")])
            self.assertEqual(evs[-1].session.result, {"ok": True})
        finally:
            srv.stop()

    def test_stream_cut_for_good_raises(self) -> None:
        sid = "s01a2329f41b4ec49e7fcfe3ef9ee"

        def handler(conn, head):
            if head.startswith(b"GET /sessions/%s " % sid.encode()):
                conn.sendall(answer("200 OK", "application/json", b'{"id":"%s","status":"running"}' % sid.encode()))
            else:  # every stream: the head, then cut
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\nid: 1\n")
        srv = RawServer(handler)
        try:
            with Client(srv.url, timeout=20) as c, self.assertRaises(ProtocolError) as cm:
                list(c.events(sid))
            self.assertEqual(cm.exception.code, "truncated")
            self.assertIn("ended 4 times without an event while it is running", cm.exception.message)
        finally:
            srv.stop()


if __name__ == "__main__":
    unittest.main()
