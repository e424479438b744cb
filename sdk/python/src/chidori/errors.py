"""The errors of the chidori client: one hierarchy under ChidoriError.

Every error carries the HTTP ``status`` (None when no answer came), the
server's ``code`` (``queue_full``, ``not_found``, ...; a local one such as
``unreachable`` or ``timeout`` when the server did not say) and ``message``.
"""

from typing import Dict, Optional, Type


class ChidoriError(Exception):
    """Any failure of a call to ``chidori serve``."""

    def __init__(self, message: str, status: Optional[int] = None, code: Optional[str] = None,
                 retry_after: Optional[float] = None, session_id: Optional[str] = None) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.code = code
        self.retry_after = retry_after
        self.session_id = session_id

    def __str__(self) -> str:
        where = "HTTP %d" % self.status if self.status is not None else "no HTTP answer"
        return "%s (%s, %s)" % (self.message, where, self.code or "no code")


class BadRequest(ChidoriError):
    """400 (and 405, 413): the request was malformed (``invalid_json``, ``unknown_field``, ...)."""


class Unauthorized(ChidoriError):
    """401: no token or an unknown one (``CHIDORI_SERVE_TOKEN`` or ``token=``)."""


class NotFound(ChidoriError):
    """404: no such route or session (or another tenant's session)."""


class Conflict(ChidoriError):
    """409: the session is not in a state for this (nothing pending, settled, running)."""


class TooManyRequests(ChidoriError):
    """429: the server's queue is full; ``retry_after`` says when to try again."""


class Unavailable(ChidoriError):
    """503 (draining, unavailable), another 5xx, or a server that cannot be reached."""


class Timeout(ChidoriError):
    """The SDK's own timeout passed (a call, or ``run(wait=True)`` waiting for a session to settle)."""


class ProtocolError(ChidoriError):
    """The answer was not what chidori serve sends: not JSON, HTML from a proxy, a cut stream."""


_BY_STATUS: Dict[int, Type[ChidoriError]] = {
    400: BadRequest,
    401: Unauthorized,
    404: NotFound,
    405: BadRequest,
    409: Conflict,
    413: BadRequest,
    429: TooManyRequests,
    503: Unavailable,
}


def error_for_status(status: int) -> Type[ChidoriError]:
    """The error class of an HTTP error status."""
    cls = _BY_STATUS.get(status)
    if cls is not None:
        return cls
    if 400 <= status < 500:
        return BadRequest
    if status >= 500:
        return Unavailable
    return ProtocolError
