"""Kubernetes Events the decisions ask for, as plain values.

A decision that finds something a user should hear about (a deprecated strategy name, an invalid
max-unavailable, a deletion) returns a `Notice`; the shell turns it into an Event on the
DaemonSet. Reconciles repeat every few seconds and on every watch event, so a problem must not
produce an Event each time: every notice carries a `key` built from its reason and the offending
value, and the shell emits a notice only if that key is new for the DaemonSet (design §7). When the
user changes the value, the key changes and the new problem is reported once.
"""

from dataclasses import dataclass
from enum import StrEnum

from edgerollout.domain.vocabulary import SUCCESSFUL_DELETE


class EventType(StrEnum):
    """The `type` of a Kubernetes Event."""

    NORMAL = "Normal"
    WARNING = "Warning"


@dataclass(frozen=True, slots=True, kw_only=True)
class Notice:
    """An Event to emit on the DaemonSet.

    `subject` is the value the notice is about (the annotation value seen, the pod's UID); with
    `reason` it forms the deduplication key. `routine` marks a per-pod report (a deletion): one
    of many alike, which the shell may drop when they come in floods; every other notice is the
    one Event of its problem or change, and is always sent.
    """

    type: EventType
    reason: str
    message: str
    subject: str
    routine: bool = False

    def __post_init__(self) -> None:
        # Messages quote what users wrote; a terminal must not act on what they carry.
        object.__setattr__(self, "message", printable(self.message))

    @property
    def key(self) -> tuple[str, str]:
        """Identity of the problem: the same key means the same Event, emitted once."""
        return (self.reason, self.subject)


def printable(text: str) -> str:
    """`text` with each character a terminal could act on — control characters (an OSC 52
    sequence sets the clipboard), format characters (a right-to-left override reorders what is
    shown), other separators — written as its Python escape (`\\x1b`, `\\u202e`)."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode() for c in text)


def shown(value: str, *, limit: int = 200) -> str:
    """A value as a report shows it: printable, and cut to `limit` characters saying how many more
    there were."""
    text = printable(value)
    if len(text) <= limit:
        return text
    return _elided(text, kept=limit)


EVENT_MESSAGE_LIMIT = 1024
"""The longest Event message written, in characters (events.k8s.io's limit for a note); the
admission policies on both identities' Events admit no longer one (design §10.9)."""


def event_message(message: str) -> str:
    """`message` cut to `EVENT_MESSAGE_LIMIT` characters, saying how many more there were."""
    if len(message) <= EVENT_MESSAGE_LIMIT:
        return message
    # Room for the note, its count at most as long as the message's length.
    note = f"... ({len(message)} more characters)"
    return _elided(message, kept=EVENT_MESSAGE_LIMIT - len(note))


def _elided(text: str, *, kept: int) -> str:
    """The first `kept` characters of `text`, saying how many more there were."""
    return f"{text[:kept]}... ({len(text) - kept} more characters)"


def deletion_notice(
    *, pod_name: str, pod_uid: str, node_name: str, why: str, reason: str = SUCCESSFUL_DELETE
) -> Notice:
    """The Normal `SuccessfulDelete` Event for a pod the controller deleted.

    The message starts with `Deleted pod: <name>` as Kubernetes' own controllers write it, then
    says where and why. Each deletion is its own subject (the pod UID), so none is deduplicated
    away.
    """
    return Notice(
        type=EventType.NORMAL,
        reason=reason,
        message=f"Deleted pod: {pod_name} on node {node_name}: {why}",
        subject=pod_uid,
        routine=True,
    )
