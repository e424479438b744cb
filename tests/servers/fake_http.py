#!/usr/bin/env python3
"""A small HTTP/1.1 server for chidori's tests (python3 standard library only).

    python3 tests/servers/fake_http.py --port 0 --host 127.0.0.1

prints the bound port on its first stdout line, then serves (one thread per
connection, keep-alive) until it is killed.  Loopback addresses only.

Endpoints (GET unless said otherwise; HEAD works wherever GET does):
  /bytes?n=N            N bytes, byte i = i % 251 (a prime, so a slip by any
                        power of two shows), application/octet-stream
  /text?s=...           the text s (default "hello"), text/plain; charset=utf-8
  /delay?ms=N           sleeps N ms (at most 60000), then "ok"
  /status?code=N        status N (200..599), body "status N" (none for 204/304)
  /redirect?to=URL&code=302
                        Location: URL with 301/302/303/307/308 (default 302)
  /echo                 any method: {"method", "path", "query" (the raw query
                        string), "headers" (lower-case names, repeated headers
                        joined with ", "), "body_base64"}
  /v1/chat/completions  POST, a fake OpenAI-compatible model: needs
                        "Authorization: Bearer test-key" (else 401 with an
                        OpenAI-shaped error); answers "echo: <content of the
                        last user message>" with the request's model and a
                        word-count usage
  /json                 a fixed JSON document (FIXED_JSON below)
  /stall?ms=N&tag=T     sends the head (chunked), then nothing for up to N ms
                        (at most 60000) while watching the connection; prints
                        "fake_http: stall T: closed by the client" (or
                        "... not closed") on stderr when it ends
  /chunks?n=K&ms=N&tag=T  a chunked body of K chunks "chunk i\n" (K <= 100),
                        N ms apart (<= 10000); before each it prints
                        "fake_http: chunks T: sending i" on stderr
  /gated?n=K&tag=T      a chunked body of K chunks "chunk i\n" (K <= 100); after
                        each but the last it waits (at most 10 s) until
                        /release?tag=T is asked, then prints "fake_http: gated
                        T: released after chunk i" (or "... not released
                        after chunk i") on stderr: a client that reads the
                        body as it arrives can release it, one that waits for
                        the whole body cannot
  /release?tag=T        lets /gated?tag=T send its next chunk; "released"
Anything else is 404 with {"error": "not found"}.

--record FILE appends one JSON line per request received, before it is
answered: {"method", "path" (with the query), "headers" ([name, value] pairs
as sent)} — what a test can grep for a value the server must (or must not)
have been sent.
"""
import argparse
import base64
import ipaddress
import json
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

API_KEY = "test-key"
FIXED_JSON = {
    "name": "chidori",
    "items": [1, 2, 3],
    "nested": {"ok": True, "none": None},
    "unicode": "h\u00e9llo \u2713",
}
MAX_BYTES = 256 << 20
MAX_BODY = 64 << 20


class Handler(BaseHTTPRequestHandler):
    # Headers and body go out as separate writes; with Nagle on, the body waits
    # for the ACK the client delays (40 ms per keep-alive request).
    disable_nagle_algorithm = True
    protocol_version = "HTTP/1.1"  # keep-alive: every answer has a Content-Length
    server_version = "fake_http/1"

    def version_string(self):
        return self.server_version

    def log_message(self, fmt, *args):  # quiet unless --verbose
        if self.server.verbose:
            sys.stderr.write("fake_http: " + (fmt % args) + "\n")

    # ---- helpers ----

    def read_body(self):
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            out = bytearray()
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass  # trailers
                    return bytes(out)
                out += self.rfile.read(size)
                self.rfile.readline()
                if len(out) > MAX_BODY:
                    raise ValueError("body too large")
        n = int(self.headers.get("Content-Length") or 0)
        if n > MAX_BODY:
            raise ValueError("body too large")
        return self.rfile.read(n) if n > 0 else b""

    def send(self, code, body=b"", ctype="text/plain; charset=utf-8", extra=()):
        self.send_response(code)
        if code not in (204, 304):
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
        for k, v in extra:
            self.send_header(k, v)
        self.end_headers_with(body if self.command != "HEAD" and code not in (204, 304) else b"")

    def end_headers_with(self, body):
        """The head and a body in one write, as most servers answer a small
        body (chidori sends such a body with the fetch's head)."""
        self._headers_buffer.append(b"\r\n" + body)
        self.flush_headers()

    def send_json(self, code, doc):
        self.send(code, json.dumps(doc).encode(), "application/json")

    def query(self):
        return parse_qs(urlsplit(self.path).query, keep_blank_values=True)

    def qint(self, q, name, default, lo, hi):
        try:
            v = int(q.get(name, [str(default)])[0])
        except ValueError:
            return None
        return v if lo <= v <= hi else None

    # ---- dispatch ----

    def record(self):
        if not self.server.record:
            return
        line = json.dumps({"method": self.command, "path": self.path,
                           "headers": [[k, v] for k, v in self.headers.items()]})
        with RECORD_LOCK, open(self.server.record, "a") as f:
            f.write(line + "\n")

    def handle_any(self):
        self.record()
        try:
            body = self.read_body()
        except (ValueError, OSError):
            self.close_connection = True
            return self.send(400, b"bad request body")
        path = urlsplit(self.path).path
        routes = {
            "/bytes": self.do_bytes,
            "/text": self.do_text,
            "/delay": self.do_delay,
            "/status": self.do_status,
            "/redirect": self.do_redirect,
            "/echo": self.do_echo,
            "/v1/chat/completions": self.do_chat,
            "/json": self.do_json,
            "/stall": self.do_stall,
            "/chunks": self.do_chunks,
            "/gated": self.do_gated,
            "/release": self.do_release,
        }
        route = routes.get(path)
        if route is None:
            return self.send_json(404, {"error": "not found"})
        return route(body)

    do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = do_OPTIONS = do_HEAD = handle_any

    # ---- endpoints ----

    def do_bytes(self, _body):
        n = self.qint(self.query(), "n", 0, 0, MAX_BYTES)
        if n is None:
            return self.send(400, b"n must be an integer from 0 to %d" % MAX_BYTES)
        self.send_response(200)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(n))
        if self.command == "HEAD":
            return self.end_headers()
        period = bytes(i % 251 for i in range(251))
        chunk = period * 261  # 65511 bytes, a whole number of periods
        sent = min(len(chunk), n)
        self.end_headers_with(chunk[:sent])  # the first piece with the head
        while sent < n:
            k = min(len(chunk), n - sent)
            self.wfile.write(chunk[:k])
            sent += k

    def do_text(self, _body):
        s = self.query().get("s", ["hello"])[0]
        self.send(200, s.encode())

    def do_delay(self, _body):
        ms = self.qint(self.query(), "ms", 0, 0, 60000)
        if ms is None:
            return self.send(400, b"ms must be an integer from 0 to 60000")
        time.sleep(ms / 1000.0)
        self.send(200, b"ok")

    def do_status(self, _body):
        code = self.qint(self.query(), "code", 200, 200, 599)
        if code is None:
            return self.send(400, b"code must be an integer from 200 to 599")
        self.send(code, b"status %d" % code)

    def do_redirect(self, _body):
        q = self.query()
        to = q.get("to", [None])[0]
        code = self.qint(q, "code", 302, 301, 308)
        if not to or code not in (301, 302, 303, 307, 308):
            return self.send(400, b"need to=URL and code in 301 302 303 307 308")
        self.send(code, b"redirect", extra=[("Location", to)])

    def do_echo(self, body):
        headers = {}
        for k, v in self.headers.items():
            k = k.lower()
            headers[k] = headers[k] + ", " + v if k in headers else v
        parts = urlsplit(self.path)
        self.send_json(200, {
            "method": self.command,
            "path": parts.path,
            "query": parts.query,
            "headers": headers,
            "body_base64": base64.b64encode(body).decode(),
        })

    def do_chat(self, body):
        if self.command != "POST":
            return self.send_json(405, {"error": {"message": "use POST", "type": "invalid_request_error"}})
        if self.headers.get("Authorization") != "Bearer " + API_KEY:
            return self.send_json(401, {"error": {
                "message": "Incorrect API key provided. You can find your API key in your account settings.",
                "type": "invalid_request_error", "param": None, "code": "invalid_api_key"}})
        try:
            req = json.loads(body)
            messages = req["messages"]
            model = req.get("model", "fake-model")
            if not isinstance(messages, list) or not all(
                    isinstance(m, dict) and isinstance(m.get("content"), str) for m in messages):
                raise ValueError
        except (ValueError, KeyError, TypeError):
            return self.send_json(400, {"error": {"message": "invalid request body",
                                                  "type": "invalid_request_error"}})
        last = next((m["content"] for m in reversed(messages) if m.get("role") == "user"), "")
        answer = "echo: " + last
        prompt_tokens = sum(len(m["content"].split()) for m in messages)
        completion_tokens = len(answer.split())
        self.send_json(200, {
            "id": "chatcmpl-fake",
            "object": "chat.completion",
            "created": 0,
            "model": model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": answer},
                         "finish_reason": "stop"}],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                      "total_tokens": prompt_tokens + completion_tokens},
        })

    def do_json(self, _body):
        self.send_json(200, FIXED_JSON)

    def note(self, text):
        sys.stderr.write("fake_http: " + text + "\n")
        sys.stderr.flush()

    def do_stall(self, _body):
        q = self.query()
        ms = self.qint(q, "ms", 10000, 0, 60000)
        tag = q.get("tag", ["-"])[0][:40]
        if ms is None:
            return self.send(400, b"ms must be an integer from 0 to 60000")
        self.send_response(200)
        self.send_header("Content-Type", "text/plain; charset=utf-8")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self.wfile.flush()
        self.close_connection = True
        end = time.monotonic() + ms / 1000.0
        conn = self.connection
        while time.monotonic() < end:
            conn.settimeout(max(0.001, min(0.05, end - time.monotonic())))
            try:
                data = conn.recv(1, socket.MSG_PEEK)
            except socket.timeout:
                continue
            except OSError:
                data = b""
            if not data:
                self.note("stall %s: closed by the client" % tag)
                return
        self.note("stall %s: not closed" % tag)
        try:
            self.wfile.write(b"0\r\n\r\n")
        except OSError:
            pass

    def do_gated(self, _body):
        q = self.query()
        n = self.qint(q, "n", 3, 0, 100)
        tag = q.get("tag", ["-"])[0][:40]
        if n is None:
            return self.send(400, b"n must be 0..100")
        self.send_response(200)
        self.send_header("Content-Type", "text/plain; charset=utf-8")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self.wfile.flush()
        g = gate(tag)
        try:
            for i in range(n):
                piece = b"chunk %d\n" % i
                self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
                self.wfile.flush()
                if i + 1 < n:
                    ok = g.acquire(timeout=10)
                    self.note("gated %s: %s after chunk %d" % (tag, "released" if ok else "not released", i))
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except OSError:
            self.close_connection = True

    def do_release(self, _body):
        gate(self.query().get("tag", ["-"])[0][:40]).release()
        self.send(200, b"released")

    def do_chunks(self, _body):
        q = self.query()
        n = self.qint(q, "n", 3, 0, 100)
        ms = self.qint(q, "ms", 0, 0, 10000)
        tag = q.get("tag", ["-"])[0][:40]
        if n is None or ms is None:
            return self.send(400, b"n must be 0..100 and ms 0..10000")
        self.send_response(200)
        self.send_header("Content-Type", "text/plain; charset=utf-8")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self.wfile.flush()
        try:
            for i in range(n):
                if i:
                    time.sleep(ms / 1000.0)
                self.note("chunks %s: sending %d" % (tag, i))
                piece = b"chunk %d\n" % i
                self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except OSError:
            self.close_connection = True


GATES = {}
GATES_LOCK = threading.Lock()


def gate(tag):
    with GATES_LOCK:
        return GATES.setdefault(tag, threading.Semaphore(0))


RECORD_LOCK = threading.Lock()


class Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    # socketserver's default backlog is 5: a burst of connections beyond it
    # waits for SYN retransmission (1 s), which would look like a client queue.
    request_queue_size = 1024


def main():
    ap = argparse.ArgumentParser(description="fake HTTP server for chidori's tests (loopback only)")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--verbose", action="store_true")
    ap.add_argument("--record", default=None, help="append each request's method, path and headers (JSON lines)")
    a = ap.parse_args()
    try:
        loopback = ipaddress.ip_address(a.host).is_loopback
    except ValueError:
        loopback = False
    if not loopback:
        sys.exit("fake_http: --host must be a loopback address (127.0.0.0/8 or ::1), not %r" % a.host)
    Server.address_family = socket.AF_INET6 if ":" in a.host else socket.AF_INET
    srv = Server((a.host, a.port), Handler)
    srv.verbose = a.verbose
    srv.record = a.record
    print(srv.server_address[1], flush=True)
    try:
        srv.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
