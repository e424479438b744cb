"""Starting a real ``chidori serve`` for the tests (stopped by its PID), and
small misbehaving HTTP servers for the bad-answer cases (HTML, cut streams,
silence): those are what a reverse proxy or a broken network give, which a
real chidori serve never sends."""

import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
from typing import Callable, List, Optional

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
AGENT = os.path.join(REPO, "sdk", "testdata", "agent.js")


def chidori_bin() -> str:
    return os.environ.get("CHIDORI_BIN") or os.path.join(REPO, "build", "chidori")


class Server:
    """``chidori serve sdk/testdata/agent.js`` on a free loopback port (or a
    unix socket with unix=True), state and workspace in a temp dir."""

    def __init__(self, *args: str, unix: bool = False, env: Optional[dict] = None, agent: str = AGENT) -> None:
        self.dir = tempfile.mkdtemp(prefix="chidori-sdk-py.")
        os.makedirs(os.path.join(self.dir, "ws"))
        listen = "unix:" + os.path.join(self.dir, "serve.sock") if unix else "127.0.0.1:0"
        cmd = [chidori_bin(), "serve", agent, "--listen", listen, "--state-dir", os.path.join(self.dir, "st"),
               "--workspace", os.path.join(self.dir, "ws"), "--grace", "0", "--trusted", *args]
        self.err_path = os.path.join(self.dir, "server.err")
        full_env = dict(os.environ)
        full_env.pop("CHIDORI_SERVE_TOKEN", None)
        full_env.update(env or {})
        with open(self.err_path, "wb") as err:
            self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err,
                                         env=full_env)
        deadline = time.monotonic() + 20
        while True:
            text = self.stderr()
            m = re.search(r"^Listening: (\S+)$", text, re.M)
            if m:
                self.url = m.group(1)
                return
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError("chidori serve did not start: " + text)
            time.sleep(0.05)

    def stderr(self) -> str:
        with open(self.err_path, "rb") as f:
            return f.read().decode("utf-8", "replace")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.send_signal(signal.SIGTERM)  # the second one stops at once
                try:
                    self.proc.wait(10)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


class RawServer:
    """A loopback TCP server whose every connection is handed to
    ``handler(conn, request_head_bytes)``; for answers chidori never gives."""

    def __init__(self, handler: Callable[[socket.socket, bytes], None]) -> None:
        self.handler = handler
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.url = "http://127.0.0.1:%d" % self.sock.getsockname()[1]
        self.requests: List[bytes] = []
        self._stop = False
        self._conns: List[socket.socket] = []
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while not self._stop:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self._conns.append(conn)
            threading.Thread(target=self._one, args=(conn,), daemon=True).start()

    def _one(self, conn: socket.socket) -> None:
        try:
            conn.settimeout(10)
            head = b""
            while b"\r\n\r\n" not in head:
                chunk = conn.recv(4096)
                if not chunk:
                    return
                head += chunk
            self.requests.append(head)
            self.handler(conn, head)
        except OSError:
            pass
        finally:
            conn.close()

    def stop(self) -> None:
        self._stop = True
        self.sock.close()
        for c in self._conns:
            try:
                c.close()
            except OSError:
                pass


def answer(status: str, ctype: str, body: bytes, extra: str = "") -> bytes:
    return ("HTTP/1.1 %s\r\nContent-Type: %s\r\nContent-Length: %d\r\nConnection: close\r\n%s\r\n"
            % (status, ctype, len(body), extra)).encode() + body
