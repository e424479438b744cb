"""A small parser of server-sent events (the text/event-stream format).

Fed bytes in chunks of any size (``feed_bytes``); returns one ``RawEvent``
per blank line that ends an event with data.  Lines end with LF, CRLF or a
lone CR, as the format allows, wherever the chunks are cut; a byte-order mark
at the start of the stream is skipped.  Comments (``: keep-alive``) and
unknown fields are skipped.  An event (or a line) larger than ``max_event``
bytes is refused (ValueError): the parser never grows without bound on what a
server sends.
"""

from dataclasses import dataclass
from typing import List, Optional


@dataclass(frozen=True)
class RawEvent:
    id: Optional[str]
    event: str
    data: str


class SSEParser:
    def __init__(self, max_event: int = 64 << 20) -> None:
        self.max_event = max_event
        self.last_id: Optional[str] = None
        self._event = ""
        self._data: List[str] = []
        self._size = 0
        self._pending = False
        self._line = bytearray()   # the line being read, not yet ended
        self._after_cr = False     # the last byte fed ended a line with CR: an LF next ends nothing
        self._started = False      # a byte-order mark is skipped only at the start

    @property
    def in_event(self) -> bool:
        """True between the first field of an event and the blank line that ends it."""
        return self._pending or len(self._line) > 0

    def feed_bytes(self, chunk: bytes) -> List[RawEvent]:
        """Bytes of the stream, cut anywhere; the events they complete."""
        out: List[RawEvent] = []
        i, n = 0, len(chunk)
        if not self._started and n:
            self._line += chunk
            if len(self._line) < 3 and b"\xef\xbb\xbf".startswith(bytes(self._line)):
                return out  # maybe a byte-order mark: wait for more
            self._started = True
            chunk = bytes(self._line[3:] if self._line[:3] == b"\xef\xbb\xbf" else self._line)
            self._line.clear()
            n = len(chunk)
        if self._after_cr and n:
            self._after_cr = False
            if chunk[0] == 0x0A:
                i = 1
        while i < n:
            lf, cr = chunk.find(b"\n", i), chunk.find(b"\r", i)
            j = lf if cr < 0 else cr if lf < 0 else min(lf, cr)
            if j < 0:
                self._line += chunk[i:]
                break
            self._line += chunk[i:j]
            if chunk[j] == 0x0D:
                if j + 1 < n and chunk[j + 1] == 0x0A:
                    j += 1
                elif j + 1 == n:
                    self._after_cr = True
            line = bytes(self._line)
            self._line.clear()
            ev = self._field(line)
            if ev is not None:
                out.append(ev)
            i = j + 1
        if len(self._line) > self.max_event:
            raise ValueError("an event of the stream is larger than %d bytes" % self.max_event)
        return out

    def feed(self, line: bytes) -> Optional[RawEvent]:
        """One whole line of the stream (with or without its ending); the event it completes, if any."""
        if line.endswith(b"\n"):
            line = line[:-1]
        if line.endswith(b"\r"):
            line = line[:-1]
        return self._field(line)

    def _field(self, line: bytes) -> Optional[RawEvent]:
        if len(line) > self.max_event:
            raise ValueError("an event of the stream is larger than %d bytes" % self.max_event)
        text = line.decode("utf-8", errors="replace")
        if text == "":
            return self._dispatch()
        if text.startswith(":"):
            return None
        self._size += len(line)
        if self._size > self.max_event:
            raise ValueError("an event of the stream is larger than %d bytes" % self.max_event)
        name, sep, value = text.partition(":")
        if sep and value.startswith(" "):
            value = value[1:]
        self._pending = True
        if name == "data":
            self._data.append(value)
        elif name == "event":
            self._event = value
        elif name == "id":
            if "\0" not in value:
                self.last_id = value
        return None

    def _dispatch(self) -> Optional[RawEvent]:
        data, event = self._data, self._event
        self._data, self._event, self._size, self._pending = [], "", 0, False
        if not data:
            return None
        return RawEvent(self.last_id, event or "message", "\n".join(data))
