"""What chidori serve answers, as dataclasses keeping the wire's field names.

``result``, ``input`` and ``args`` are passed through as the JSON decoder
gives them; every object keeps the whole decoded JSON in ``raw`` (fields a
newer server adds are there).
"""

from dataclasses import dataclass, field
from typing import Any, Dict, Optional

SETTLED = frozenset(["awaitingapproval", "awaitinginput", "done", "failed", "cancelled"])
"""The statuses of a session that is not queued or running."""

FINISHED = frozenset(["done", "failed", "cancelled"])


@dataclass(frozen=True)
class SessionError:
    name: str
    message: str


@dataclass(frozen=True)
class PendingApproval:
    id: int
    target: str
    args: Any
    reason: str


def _approval(d: Dict[str, Any]) -> PendingApproval:
    aid = d.get("id")
    return PendingApproval(aid if isinstance(aid, int) else -1, str(d.get("target", "")), d.get("args"),
                           str(d.get("reason", "")))


@dataclass(frozen=True)
class PendingInput:
    prompt: Any


@dataclass(frozen=True)
class Session:
    id: str
    status: str
    agent: Optional[str] = None
    policy_profile: Optional[str] = None
    tenant: Optional[str] = None
    created_at: Optional[str] = None
    updated_at: Optional[str] = None
    result: Any = None
    exit: Optional[int] = None
    stats: Optional[Dict[str, Any]] = None
    error: Optional[SessionError] = None
    pending_approval: Optional[PendingApproval] = None
    pending_input: Optional[PendingInput] = None
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def settled(self) -> bool:
        """Not queued nor running: done, failed, cancelled or paused for an answer."""
        return self.status in SETTLED

    @classmethod
    def from_json(cls, doc: Any) -> "Session":
        if not isinstance(doc, dict) or not isinstance(doc.get("id"), str) or not isinstance(doc.get("status"), str):
            raise ValueError("not a session (an object with string 'id' and 'status')")
        err = doc.get("error")
        pa = doc.get("pending_approval")
        pi = doc.get("pending_input")
        return cls(
            id=doc["id"],
            status=doc["status"],
            agent=doc.get("agent"),
            policy_profile=doc.get("policy_profile"),
            tenant=doc.get("tenant"),
            created_at=doc.get("created_at"),
            updated_at=doc.get("updated_at"),
            result=doc.get("result"),
            exit=doc.get("exit"),
            stats=doc.get("stats"),
            error=SessionError(str(err.get("name", "")), str(err.get("message", ""))) if isinstance(err, dict) else None,
            pending_approval=_approval(pa) if isinstance(pa, dict) else None,
            pending_input=PendingInput(pi.get("prompt")) if isinstance(pi, dict) else None,
            raw=doc,
        )


@dataclass(frozen=True)
class ReplayResult:
    matched: bool
    result: Any = None
    error: Optional[SessionError] = None
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)


@dataclass(frozen=True)
class Event:
    """One server-sent event: ``id`` (its sequence number), ``event`` (its type), ``data`` (decoded JSON)."""
    id: Optional[int]
    event: str
    data: Any


@dataclass(frozen=True)
class StatusEvent(Event):
    """The session's status changed (``running``, or a pause)."""
    session: Session


@dataclass(frozen=True)
class DoneEvent(Event):
    """The session finished (``done``, ``failed``, ``cancelled``)."""
    session: Session


@dataclass(frozen=True)
class ApprovalEvent(Event):
    """A call waits for approval (the session pauses next)."""
    approval: PendingApproval


@dataclass(frozen=True)
class InputEvent(Event):
    """``chidori.input()`` waits for an answer (the session pauses next)."""
    prompt: Any


@dataclass(frozen=True)
class LogEvent(Event):
    level: str
    message: str


@dataclass(frozen=True)
class CallEvent(Event):
    """A host call and the policy's decision (``allow``, ``deny``, ``pending``)."""
    call_id: Any
    op: str
    decision: str


def event_from_wire(eid: Optional[int], name: str, data: Any) -> Event:
    """The typed event of one SSE event (ValueError when its data has the wrong shape)."""
    if name in ("status", "done"):
        s = Session.from_json(data)
        return StatusEvent(eid, name, data, s) if name == "status" else DoneEvent(eid, name, data, s)
    if not isinstance(data, dict):
        return Event(eid, name, data)
    if name == "approval":
        return ApprovalEvent(eid, name, data, _approval(data))
    if name == "input":
        return InputEvent(eid, name, data, data.get("prompt"))
    if name == "log":
        return LogEvent(eid, name, data, str(data.get("level", "")), str(data.get("message", "")))
    if name == "call":
        return CallEvent(eid, name, data, data.get("id"), str(data.get("op", "")), str(data.get("decision", "")))
    return Event(eid, name, data)
