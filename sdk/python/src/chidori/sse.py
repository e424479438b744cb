"""A small parser of server-sent events (the text/event-stream format).

Fed lines (bytes, each with or without its line ending); yields one
``RawEvent`` per blank line that ends an event with data.  Comments
(``: keep-alive``) and unknown fields are skipped.  An event larger than
``max_event`` bytes is refused (ValueError): the parser never grows without
bound on what a server sends.
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

    @property
    def in_event(self) -> bool:
        """True between the first field of an event and the blank line that ends it."""
        return self._pending

    def feed(self, line: bytes) -> Optional[RawEvent]:
        """One line of the stream; the event it completes, if any."""
        text = line.decode("utf-8", errors="replace")
        if text.endswith("\n"):
            text = text[:-1]
        if text.endswith("\r"):
            text = text[:-1]
        if text == "":
            return self._dispatch()
        if text.startswith(":"):
            return None
        self._size += len(text)
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
