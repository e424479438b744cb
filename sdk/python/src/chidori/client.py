"""The client of ``chidori serve``'s HTTP API (docs/serve.md), standard library only."""

import email.utils
import http.client
import json
import os
import socket
import time
import urllib.parse
from typing import Any, Dict, Iterator, Optional, Tuple

from .errors import (ChidoriError, ProtocolError, Timeout, Unavailable, error_for_status)
from .sse import RawEvent, SSEParser
from .types import (DoneEvent, Event, ReplayResult, Session, SessionError, StatusEvent,
                    event_from_wire)

__all__ = ["Client"]


def _loads(text: Any) -> Any:
    """json.loads, with JSON nested too deeply for Python's parser (RecursionError) a ValueError too:
    what a server sends never escapes as another exception than the SDK's."""
    try:
        return json.loads(text)
    except RecursionError:
        raise ValueError("JSON nested too deeply") from None


def decode_event(raw: RawEvent, what: str) -> Event:
    """The typed event of one server-sent event; ProtocolError when it is not chidori's JSON."""
    try:
        data = _loads(raw.data)
        eid = int(raw.id) if raw.id is not None and raw.id.isascii() else None
        if raw.id is not None and eid is None:
            raise ValueError("the id %r is not a number" % raw.id[:40])
        return event_from_wire(eid, raw.event, data)
    except ValueError as e:
        raise ProtocolError("%s: event %r (id %s) is not chidori's JSON: %s"
                            % (what, raw.event[:80], (raw.id or "")[:40], str(e)[:200]), code="not_json") from None

_PAUSED = frozenset(["awaitingapproval", "awaitinginput"])
_SNIPPET = 200


class _UnixConnection(http.client.HTTPConnection):
    """HTTP/1.1 over a unix socket (``unix:/path`` base URLs)."""

    def __init__(self, path: str, timeout: float) -> None:
        super().__init__("localhost", timeout=timeout)
        self._unix_path = path

    def connect(self) -> None:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(self.timeout)
        try:
            s.connect(self._unix_path)
        except BaseException:
            s.close()
            raise
        self.sock = s


def _snippet(body: bytes) -> str:
    """The start of a body, printable (for messages)."""
    text = body[:_SNIPPET].decode("utf-8", errors="replace")
    text = "".join(c if c.isprintable() else " " for c in text).strip()
    return repr(text) + ("..." if len(body) > _SNIPPET else "")


def _retry_after(value: Optional[str]) -> Optional[float]:
    """Seconds of a Retry-After header (delta-seconds or an HTTP date)."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when is None:
        return None
    return max(0.0, when.timestamp() - time.time())


class _Answer:
    """One HTTP answer, read whole."""

    def __init__(self, status: int, reason: str, headers: http.client.HTTPMessage, body: bytes) -> None:
        self.status = status
        self.reason = reason
        self.headers = headers
        self.body = body

    @property
    def content_type(self) -> str:
        return (self.headers.get("Content-Type") or "").split(";")[0].strip().lower()


class Client:
    """A client of one ``chidori serve``.

    ``base_url``: ``http://HOST:PORT`` (a path prefix is kept, for a reverse
    proxy), ``https://...``, or ``unix:/path/to/socket``.  ``token``: the
    bearer token; None reads ``CHIDORI_SERVE_TOKEN``.  ``timeout``: seconds
    any one call may take, waiting included (``run(wait=True)`` re-polls the
    session until then, then raises ``Timeout``).  ``retries``: how many times
    a 429 or 503 answer is retried (honouring ``Retry-After``, at most
    ``max_retry_wait`` seconds each); nothing else is retried.  ``wait_ms``:
    the longest a request asks the server to wait for a session to settle
    (``wait_ms`` of the API, at most 600000) before the client re-polls.

    One connection is kept alive between calls; a client is for one thread.
    """

    def __init__(self, base_url: str = "http://127.0.0.1:8080", token: Optional[str] = None,
                 timeout: float = 60.0, retries: int = 3, max_retry_wait: float = 30.0,
                 max_response: int = 256 << 20, wait_ms: int = 600000) -> None:
        if timeout <= 0:
            raise ValueError("timeout must be a positive number of seconds")
        if retries < 0:
            raise ValueError("retries must be 0 or more")
        if not 0 <= wait_ms <= 600000:
            raise ValueError("wait_ms must be from 0 to 600000 (the server's bound)")
        self.wait_ms = wait_ms
        self.base_url = base_url
        self.timeout = float(timeout)
        self.retries = retries
        self.max_retry_wait = float(max_retry_wait)
        self.max_response = max_response
        self.token = token if token is not None else (os.environ.get("CHIDORI_SERVE_TOKEN") or None)
        self._unix: Optional[str] = None
        self._prefix = ""
        if base_url.startswith("unix:"):
            path = base_url[len("unix:"):]
            if path.startswith("//"):
                path = path[2:]
            if not path:
                raise ValueError("base_url %r: expected unix:/path/to/socket" % base_url)
            self._unix = path
            self._scheme, self._host = "http", "localhost"
        else:
            u = urllib.parse.urlsplit(base_url)
            if u.scheme not in ("http", "https") or not u.netloc:
                raise ValueError("base_url %r: expected http://HOST:PORT, https://HOST:PORT or unix:/path" % base_url)
            self._scheme, self._host = u.scheme, u.netloc
            self._prefix = u.path.rstrip("/")
        self._conn: Optional[http.client.HTTPConnection] = None

    # ------------------------------------------------------------------ lifecycle

    def close(self) -> None:
        """Closes the kept-alive connection (a later call opens another)."""
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # ------------------------------------------------------------------ transport

    def _new_conn(self, timeout: float) -> http.client.HTTPConnection:
        if self._unix is not None:
            return _UnixConnection(self._unix, timeout)
        if self._scheme == "https":
            return http.client.HTTPSConnection(self._host, timeout=timeout)
        return http.client.HTTPConnection(self._host, timeout=timeout)

    def _where(self) -> str:
        return "unix:" + self._unix if self._unix is not None else "%s://%s" % (self._scheme, self._host)

    def _headers(self, extra: Optional[Dict[str, str]]) -> Dict[str, str]:
        h = {"Accept": "application/json", "User-Agent": "chidori-python"}
        if self.token:
            h["Authorization"] = "Bearer " + self.token
        if extra:
            h.update(extra)
        return h

    @staticmethod
    def _remaining(deadline: float, what: str) -> float:
        left = deadline - time.monotonic()
        if left <= 0:
            raise Timeout("%s: no answer within the client's timeout" % what, code="timeout")
        return left

    def _open(self, method: str, path: str, body: Optional[bytes], headers: Optional[Dict[str, str]],
              deadline: float, stream: bool) -> Tuple[http.client.HTTPConnection, http.client.HTTPResponse]:
        """Sends one request and reads the head of its answer.  A stream gets
        a connection of its own; a kept-alive connection the server closed
        while idle is reopened once."""
        what = "%s %s" % (method, path)
        url = self._prefix + path
        hdrs = self._headers(headers)
        if body is not None:
            hdrs["Content-Type"] = "application/json"
        for fresh_try in (0, 1):
            left = self._remaining(deadline, what)
            reused = False
            if stream:
                conn = self._new_conn(left)
            else:
                if self._conn is None:
                    self._conn = self._new_conn(left)
                else:
                    reused = self._conn.sock is not None
                conn = self._conn
            conn.timeout = left
            if conn.sock is not None:
                conn.sock.settimeout(left)
            try:
                conn.request(method, url, body=body, headers=hdrs)
                resp = conn.getresponse()
                return conn, resp
            except socket.timeout:
                self._drop(conn)
                raise Timeout("%s: no answer from %s within the client's timeout" % (what, self._where()),
                              code="timeout") from None
            except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError) as e:
                self._drop(conn)
                if reused and fresh_try == 0:
                    continue  # the server closed an idle kept-alive connection: once more on a new one
                raise Unavailable("%s: %s closed the connection: %s" % (what, self._where(), e),
                                  code="unreachable") from None
            except http.client.HTTPException as e:
                self._drop(conn)
                raise ProtocolError("%s: %s did not answer HTTP: %s" % (what, self._where(), e),
                                    code="not_http") from None
            except OSError as e:
                self._drop(conn)
                raise Unavailable("cannot reach chidori serve at %s: %s (is it running? is base_url right?)"
                                  % (self._where(), e.strerror or e), code="unreachable") from None
        raise AssertionError("unreachable")

    def _drop(self, conn: http.client.HTTPConnection) -> None:
        conn.close()
        if conn is self._conn:
            self._conn = None

    def _read_all(self, conn: http.client.HTTPConnection, resp: http.client.HTTPResponse, what: str) -> bytes:
        try:
            body = resp.read(self.max_response + 1)
        except socket.timeout:
            self._drop(conn)
            raise Timeout("%s: the answer did not arrive within the client's timeout" % what, code="timeout") from None
        except (http.client.HTTPException, OSError) as e:
            self._drop(conn)
            raise ProtocolError("%s: the answer was cut: %s" % (what, e), status=resp.status, code="truncated") from None
        if len(body) > self.max_response:
            self._drop(conn)
            raise ProtocolError("%s: the answer is larger than max_response (%d bytes)" % (what, self.max_response),
                                status=resp.status, code="too_large")
        if resp.will_close:
            self._drop(conn)
        return body

    def _error(self, what: str, status: int, reason: str, headers: http.client.HTTPMessage, body: bytes,
               retry_after: Optional[float]) -> ChidoriError:
        """The typed error of an error answer: the server's code and message, or a local one."""
        cls = error_for_status(status)
        try:
            doc = _loads(body.decode("utf-8"))
            err = doc["error"]
            code, message = err["code"], err["message"]
            if not isinstance(code, str) or not isinstance(message, str):
                raise TypeError
        except (ValueError, TypeError, KeyError, UnicodeDecodeError):
            ctype = (headers.get("Content-Type") or "no content type").split(";")[0]
            return cls("%s: HTTP %d %s from %s, not chidori serve's JSON error (%s): %s"
                       % (what, status, reason, self._where(), ctype, _snippet(body)),
                       status=status, code=None, retry_after=retry_after)
        return cls(message, status=status, code=code, retry_after=retry_after)

    def _call(self, method: str, path: str, doc: Any = None, ok: Tuple[int, ...] = (200,),
              headers: Optional[Dict[str, str]] = None, deadline: Optional[float] = None,
              retry: bool = True) -> _Answer:
        """One request, with the retries of 429 and 503; the answer when its
        status is in ``ok``, else the typed error."""
        if deadline is None:
            deadline = time.monotonic() + self.timeout
        what = "%s %s" % (method, path)
        body = None if doc is None else json.dumps(doc).encode("utf-8")
        attempt = 0
        while True:
            conn, resp = self._open(method, path, body, headers, deadline, stream=False)
            data = self._read_all(conn, resp, what)
            if resp.status in ok:
                return _Answer(resp.status, resp.reason, resp.headers, data)
            ra = _retry_after(resp.headers.get("Retry-After"))
            err = self._error(what, resp.status, resp.reason, resp.headers, data, ra)
            if retry and resp.status in (429, 503) and attempt < self.retries:
                wait = ra if ra is not None else 0.25 * (2 ** attempt)
                wait = min(wait, self.max_retry_wait)
                if time.monotonic() + wait < deadline:
                    time.sleep(wait)
                    attempt += 1
                    continue
            raise err

    def _json(self, ans: _Answer, what: str) -> Any:
        if ans.content_type != "application/json":
            raise ProtocolError("%s: expected JSON from chidori serve, got %s (HTTP %d): %s"
                                % (what, ans.content_type or "no content type", ans.status, _snippet(ans.body)),
                                status=ans.status, code="not_json")
        try:
            return _loads(ans.body.decode("utf-8"))
        except (ValueError, UnicodeDecodeError) as e:
            raise ProtocolError("%s: the answer is not valid JSON (%s): %s" % (what, e, _snippet(ans.body)),
                                status=ans.status, code="not_json") from None

    def _session(self, ans: _Answer, what: str) -> Session:
        doc = self._json(ans, what)
        try:
            return Session.from_json(doc)
        except ValueError as e:
            raise ProtocolError("%s: %s: %s" % (what, e, _snippet(ans.body)), status=ans.status,
                                code="not_a_session") from None

    @staticmethod
    def _sid(session_id: str) -> str:
        if not isinstance(session_id, str) or not session_id:
            raise ValueError("a session id is a non-empty string")
        return urllib.parse.quote(session_id, safe="")

    # ------------------------------------------------------------------ waiting

    def _wait_fields(self, doc: Dict[str, Any], wait: bool, deadline: float) -> None:
        doc["wait"] = wait
        if wait:
            # The server waits at most 600 s; leave a second for the answer to travel.
            left_ms = int((deadline - time.monotonic()) * 1000) - 1000
            doc["wait_ms"] = max(0, min(self.wait_ms, left_ms))

    def _settle(self, s: Session, deadline: float) -> Session:
        """Re-polls a session until it settles, or Timeout."""
        delay = 0.05
        while not s.settled:
            left = deadline - time.monotonic()
            if left > 0:
                time.sleep(min(delay, left))
                delay = min(delay * 2, 1.0)
                try:
                    s = self.get(s.id, _deadline=deadline)
                    continue
                except Timeout:
                    pass
            raise Timeout("session %s is still %s: it did not settle within the timeout; "
                          "get() it later, or give a longer timeout" % (s.id, s.status),
                          code="timeout", session_id=s.id)
        return s

    # ------------------------------------------------------------------ sessions

    def run(self, input: Any = None, policy_profile: Optional[str] = None, wait: bool = True,
            timeout: Optional[float] = None, idempotency_key: Optional[str] = None) -> Session:
        """Creates a session running the server's agent on ``input``.  ``wait``:
        returns once it settled (done, failed, cancelled, or paused for an
        approval or input), re-polling past the server's ``wait_ms`` until
        ``timeout`` (default: the client's), then ``Timeout``."""
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        doc: Dict[str, Any] = {"input": input}
        if policy_profile is not None:
            doc["policy_profile"] = policy_profile
        self._wait_fields(doc, wait, deadline)
        headers = {"Idempotency-Key": idempotency_key} if idempotency_key is not None else None
        what = "POST /sessions"
        s = self._session(self._call("POST", "/sessions", doc, ok=(200, 201, 202), headers=headers,
                                     deadline=deadline), what)
        return self._settle(s, deadline) if wait else s

    def create(self, input: Any = None, policy_profile: Optional[str] = None,
               idempotency_key: Optional[str] = None) -> Session:
        """Creates a session and returns at once (queued or running)."""
        return self.run(input, policy_profile=policy_profile, wait=False, idempotency_key=idempotency_key)

    def get(self, session_id: str, _deadline: Optional[float] = None) -> Session:
        path = "/sessions/" + self._sid(session_id)
        return self._session(self._call("GET", path, deadline=_deadline), "GET " + path)

    def list(self, status: Optional[str] = None, limit: Optional[int] = None,
             page_size: int = 100) -> Iterator[Session]:
        """The sessions, newest first, page after page (``limit``: at most this many in all)."""
        if limit is not None and limit < 1:
            raise ValueError("limit must be 1 or more (None: every session)")
        if not 1 <= page_size <= 1000:
            raise ValueError("page_size must be from 1 to 1000")
        after: Optional[str] = None
        given = 0
        while True:
            q: Dict[str, str] = {"limit": str(page_size if limit is None else min(page_size, limit - given))}
            if status is not None:
                q["status"] = status
            if after is not None:
                q["after"] = after
            path = "/sessions?" + urllib.parse.urlencode(q)
            doc = self._json(self._call("GET", path), "GET " + path)
            if not isinstance(doc, dict) or not isinstance(doc.get("sessions"), list):
                raise ProtocolError("GET %s: expected {\"sessions\": [...], \"next\": ...}" % path, status=200,
                                    code="not_a_list")
            for item in doc["sessions"]:
                try:
                    yield Session.from_json(item)
                except ValueError as e:
                    raise ProtocolError("GET %s: %s" % (path, e), status=200, code="not_a_session") from None
                given += 1
                if limit is not None and given >= limit:
                    return
            after = doc.get("next")
            if not after:
                return

    def _resume(self, session_id: str, route: str, doc: Dict[str, Any], wait: bool,
                timeout: Optional[float]) -> Session:
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        self._wait_fields(doc, wait, deadline)
        path = "/sessions/%s/%s" % (self._sid(session_id), route)
        s = self._session(self._call("POST", path, doc, ok=(200, 202), deadline=deadline), "POST " + path)
        return self._settle(s, deadline) if wait else s

    def approve(self, session_id: str, decision: str, approval_id: Optional[int] = None, wait: bool = True,
                timeout: Optional[float] = None) -> Session:
        """Answers the pending approval (``"allow"`` or ``"deny"``) and resumes the session."""
        if decision not in ("allow", "deny"):
            raise ValueError("decision must be 'allow' or 'deny', not %r" % (decision,))
        doc: Dict[str, Any] = {"decision": decision}
        if approval_id is not None:
            doc["approval_id"] = approval_id
        return self._resume(session_id, "approve", doc, wait, timeout)

    def input(self, session_id: str, value: Any, wait: bool = True, timeout: Optional[float] = None) -> Session:
        """Answers the pending ``chidori.input()`` with ``value`` and resumes the session."""
        return self._resume(session_id, "input", {"value": value}, wait, timeout)

    def replay(self, session_id: str, timeout: Optional[float] = None) -> ReplayResult:
        """Runs the agent again from the session's journal, performing nothing."""
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        path = "/sessions/%s/replay" % self._sid(session_id)
        doc = self._json(self._call("POST", path, {}, deadline=deadline), "POST " + path)
        if not isinstance(doc, dict) or not isinstance(doc.get("matched"), bool):
            raise ProtocolError("POST %s: expected {\"matched\": ..., \"result\": ...}" % path, status=200,
                                code="not_a_replay")
        err = doc.get("error")
        return ReplayResult(doc["matched"], doc.get("result"),
                            SessionError(str(err.get("name", "")), str(err.get("message", "")))
                            if isinstance(err, dict) else None, doc)

    def cancel(self, session_id: str) -> Session:
        path = "/sessions/%s/cancel" % self._sid(session_id)
        return self._session(self._call("POST", path, {}), "POST " + path)

    def delete(self, session_id: str) -> None:
        self._call("DELETE", "/sessions/" + self._sid(session_id), ok=(204, 200))

    def journal(self, session_id: str) -> Iterator[Dict[str, Any]]:
        """The session's journal, one dict per line (a header, the calls, an end line)."""
        path = "/sessions/%s/journal" % self._sid(session_id)
        ans = self._call("GET", path, headers={"Accept": "application/x-ndjson"})
        if ans.content_type != "application/x-ndjson":
            raise ProtocolError("GET %s: expected application/x-ndjson, got %s: %s"
                                % (path, ans.content_type or "no content type", _snippet(ans.body)),
                                status=ans.status, code="not_ndjson")
        for n, line in enumerate(ans.body.split(b"\n"), 1):
            if not line.strip():
                continue
            try:
                yield _loads(line.decode("utf-8"))
            except (ValueError, UnicodeDecodeError) as e:
                raise ProtocolError("GET %s: line %d is not JSON (%s)" % (path, n, e), status=ans.status,
                                    code="not_json") from None

    # ------------------------------------------------------------------ events

    def stream(self, input: Any = None, policy_profile: Optional[str] = None,
               timeout: Optional[float] = None) -> Iterator[Event]:
        """Creates a session and yields its events until it settles (``POST /sessions/stream``)."""
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        doc: Dict[str, Any] = {"input": input}
        if policy_profile is not None:
            doc["policy_profile"] = policy_profile
        body = json.dumps(doc).encode("utf-8")
        conn, resp = self._open_stream("POST", "/sessions/stream", body, {}, deadline)
        loc = resp.headers.get("Location") or ""
        sid = urllib.parse.unquote(loc.rsplit("/", 1)[-1]) if loc.startswith(self._prefix_loc()) else ""
        if not sid:
            conn.close()
            raise ProtocolError("POST /sessions/stream: the answer has no Location of the session (%r)" % loc,
                                status=resp.status, code="no_location")
        return self._event_loop(sid, None, deadline, (conn, resp))

    def events(self, session_id: str, last_event_id: Optional[int] = None,
               timeout: Optional[float] = None) -> Iterator[Event]:
        """The session's events (recorded ones first, after ``last_event_id``),
        then live ones until it settles.  A cut stream is reopened with
        ``Last-Event-ID``; ``Timeout`` after ``timeout`` (default: the client's)."""
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        self._sid(session_id)
        return self._event_loop(session_id, last_event_id, deadline, None)

    def _prefix_loc(self) -> str:
        return self._prefix + "/sessions/"

    def _open_stream(self, method: str, path: str, body: Optional[bytes], headers: Dict[str, str],
                     deadline: float) -> Tuple[http.client.HTTPConnection, http.client.HTTPResponse]:
        what = "%s %s" % (method, path)
        headers = dict(headers, Accept="text/event-stream")
        attempt = 0
        while True:
            conn, resp = self._open(method, path, body, headers, deadline, stream=True)
            if resp.status in (200, 201):
                ctype = (resp.headers.get("Content-Type") or "").split(";")[0].strip().lower()
                if ctype != "text/event-stream":
                    data = resp.read(_SNIPPET)
                    conn.close()
                    raise ProtocolError("%s: expected an event stream, got %s (HTTP %d): %s"
                                        % (what, ctype or "no content type", resp.status, _snippet(data)),
                                        status=resp.status, code="not_event_stream")
                return conn, resp
            try:
                data = resp.read(1 << 20)
            except (OSError, http.client.HTTPException):
                data = b""
            conn.close()
            ra = _retry_after(resp.headers.get("Retry-After"))
            err = self._error(what, resp.status, resp.reason, resp.headers, data, ra)
            if resp.status in (429, 503) and attempt < self.retries:
                wait = min(ra if ra is not None else 0.25 * (2 ** attempt), self.max_retry_wait)
                if time.monotonic() + wait < deadline:
                    time.sleep(wait)
                    attempt += 1
                    continue
            raise err

    def _event_loop(self, sid: str, last_id: Optional[int], deadline: float,
                    first: Optional[Tuple[http.client.HTTPConnection, http.client.HTTPResponse]]) -> Iterator[Event]:
        path = "/sessions/%s/events" % self._sid(sid)
        last: Optional[Event] = None
        idle_reopens = 0
        while True:
            if first is not None:
                conn, resp = first
                first = None
            else:
                headers = {"Last-Event-ID": str(last_id)} if last_id is not None else {}
                conn, resp = self._open_stream("GET", path, None, headers, deadline)
            progressed = False
            try:
                for ev in self._read_events(conn, resp, deadline, path):
                    progressed = True
                    if ev.id is not None:
                        last_id = ev.id
                    last = ev
                    yield ev
            finally:
                conn.close()
            if isinstance(last, DoneEvent) or (isinstance(last, StatusEvent) and last.session.status in _PAUSED):
                return
            # The stream ended before the end: settled meanwhile, or cut (reopen after the last event).
            if not progressed:
                s = self.get(sid, _deadline=deadline)
                if s.settled:
                    return
                idle_reopens += 1
                if idle_reopens > 3:
                    raise ProtocolError("the event stream of session %s ended %d times without an event while it is %s"
                                        % (sid, idle_reopens, s.status), code="truncated", session_id=sid)
                left = self._remaining(deadline, "GET " + path)
                time.sleep(min(0.2 * idle_reopens, left))
            else:
                idle_reopens = 0

    def _read_events(self, conn: http.client.HTTPConnection, resp: http.client.HTTPResponse,
                     deadline: float, what: str) -> Iterator[Event]:
        parser = SSEParser()
        while True:
            left = self._remaining(deadline, what)
            if conn.sock is not None:
                conn.sock.settimeout(left)
            try:
                chunk = resp.read1(1 << 16)
            except socket.timeout:
                raise Timeout("%s: the session did not settle within the client's timeout" % what,
                              code="timeout") from None
            except (http.client.HTTPException, OSError):
                return  # cut: the caller reopens
            if not chunk:
                return
            try:
                raws = parser.feed_bytes(chunk)
            except ValueError as e:
                raise ProtocolError("%s: %s" % (what, e), code="too_large") from None
            for raw in raws:
                yield decode_event(raw, what)

    # ------------------------------------------------------------------ probes

    def health(self) -> Dict[str, Any]:
        """``GET /healthz`` (no token needed): ``{"status": "ok"}``."""
        doc = self._json(self._call("GET", "/healthz", retry=False), "GET /healthz")
        if not isinstance(doc, dict):
            raise ProtocolError("GET /healthz: expected a JSON object", status=200, code="not_an_object")
        return doc

    def ready(self) -> bool:
        """``GET /readyz``: True when ready, False while the server drains (503)."""
        ans = self._call("GET", "/readyz", ok=(200, 503), retry=False)
        self._json(ans, "GET /readyz")
        return ans.status == 200

    def __repr__(self) -> str:
        return "Client(%r)" % self.base_url

