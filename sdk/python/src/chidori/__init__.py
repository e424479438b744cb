"""chidori: the Python client of ``chidori serve`` (standard library only).

    from chidori import Client
    with Client("http://127.0.0.1:8080") as client:
        session = client.run({"city": "Lyon"}, policy_profile="untrusted")
        print(session.status, session.result)
"""

from .client import Client
from .errors import (BadRequest, ChidoriError, Conflict, NotFound, ProtocolError, Timeout, TooManyRequests,
                     Unauthorized, Unavailable)
from .types import (ApprovalEvent, CallEvent, DoneEvent, Event, InputEvent, LogEvent, PendingApproval, PendingInput,
                    ReplayResult, Session, SessionError, StatusEvent)

__version__ = "0.1.0"

__all__ = [
    "Client",
    "ChidoriError", "BadRequest", "Unauthorized", "NotFound", "Conflict", "TooManyRequests", "Unavailable",
    "Timeout", "ProtocolError",
    "Session", "SessionError", "PendingApproval", "PendingInput", "ReplayResult",
    "Event", "StatusEvent", "DoneEvent", "ApprovalEvent", "InputEvent", "LogEvent", "CallEvent",
]
