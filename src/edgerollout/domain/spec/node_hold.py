"""A node's hold on its upgrade (design §13.6): its pod's condition, and how long it may last.

A node may ask that its pod not be replaced for a while — a car driving, a shop open — through its
agent (design §8.4), which writes the pod condition below with a strategic-merge patch of
`pods/status`, as `PodImageReady` is written (design §6.1):

| field                | while held                                   | once lifted        |
|----------------------|----------------------------------------------|--------------------|
| `type`               | `edgerollout.io/UpgradeHeld`                 | the same           |
| `status`             | `True`                                       | `False`            |
| `reason`             | `NodeAsked`                                  | `HoldLifted`       |
| `message`            | `until <time>, asked at <time>: <why>`       | `lifted at <time>` |
| `lastTransitionTime` | when it was asked (the status turned True)   | when lifted        |

for example `until 2026-11-29T06:00:00Z, asked at 2026-11-29T04:00:00Z: a car driving`.

The condition lives in the cluster, so a hold survives the agent's restart and is seen by the
controller, `status`, `plan` and `list` alike. The message is the one format written and read
(`hold_message`, `read_hold`); times are RFC 3339 in UTC, whole seconds, as the API server writes
them. A hold asked again while it stands keeps its asked-at time: `edgerollout.io/max-hold`
(default `24h`, a Go duration as `edgerollout.io/ota-deadline`) bounds a hold from the moment it
was first asked, so renewing it does not extend it.

A `True` condition whose message is not of this form (written by hand, or by another tool) is a
hold asked at its `lastTransitionTime` for as long as max-hold allows, and past it ignored as any
hold that outlasts max-hold; without a readable `lastTransitionTime` either, it cannot be bounded
and is not a hold. A reason is kept to `LONGEST_REASON` characters, made printable.

An unreadable max-hold (zero, negative, not a duration) is a Warning `InvalidMaxHold` and holds
every node (design §12.5): nothing is deleted while it is not known how long a hold may last.
"""

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Final

from edgerollout.domain.events import EventType, Notice, printable
from edgerollout.domain.model import Condition, ConditionStatus
from edgerollout.domain.spec.go_duration import positive_duration
from edgerollout.domain.timestamps import format_rfc3339, parse_rfc3339
from edgerollout.domain.vocabulary import (
    DEFAULT_MAX_HOLD_HOURS,
    INVALID_MAX_HOLD,
    MAX_HOLD_ANNOTATION,
    UPGRADE_HELD,
)

LONGEST_REASON: Final = 256
"""A node's reason is a few words for a person ("a car driving"); longer ones are cut."""

DEFAULT_MAX_HOLD: Final = timedelta(hours=DEFAULT_MAX_HOLD_HOURS)
"""max-hold when unset: a working day and a night, long enough for a shift or a drive."""

_MESSAGE = re.compile(r"until (\S+), asked at (\S+): (.*)", re.DOTALL)


@dataclass(frozen=True, slots=True, kw_only=True)
class HoldRequest:
    """A node's hold on one pod: until when it asks (None: as long as max-hold allows), since when
    (`asked`), and why, in its own words."""

    until: datetime | None
    asked: datetime
    why: str

    def ends(self, max_hold: timedelta) -> datetime:
        """When the hold stops holding: at its end, or max-hold after it was asked if sooner."""
        latest = self.asked + max_hold
        return latest if self.until is None or self.until > latest else self.until

    def outlasts(self, max_hold: timedelta) -> bool:
        """Whether it asks for longer than max-hold allows (then it is ignored from its end on)."""
        return self.until is None or self.until > self.asked + max_hold


def hold_message(*, until: datetime, asked: datetime, why: str) -> str:
    """The message of a held pod's `UpgradeHeld=True` condition (see the module docstring)."""
    return f"until {format_rfc3339(until)}, asked at {format_rfc3339(asked)}: {why}"


def read_hold(conditions: Mapping[str, Condition]) -> HoldRequest | None:
    """The hold a pod's conditions carry (None: it is not held; see the module docstring)."""
    condition = conditions.get(UPGRADE_HELD)
    if condition is None or condition.status is not ConditionStatus.TRUE:
        return None
    match = _MESSAGE.fullmatch(condition.message)
    if match is not None:
        until, asked = _time(match.group(1)), _time(match.group(2))
        if until is not None and asked is not None:
            return HoldRequest(until=until, asked=asked, why=_reason(match.group(3)))
    since = _time(condition.last_transition_time or "")
    if since is None:
        return None
    return HoldRequest(until=None, asked=since, why=_reason(condition.message))


def _reason(text: str) -> str:
    return printable(text[:LONGEST_REASON])


def _time(raw: str) -> datetime | None:
    try:
        return parse_rfc3339(raw)
    except ValueError:
        return None


def read_max_hold(raw: str | None) -> timedelta | Notice:
    """The longest hold `edgerollout.io/max-hold` allows (the default when unset)."""
    if raw is None:
        return DEFAULT_MAX_HOLD
    problem = positive_duration(raw)
    if isinstance(problem, timedelta):
        return problem
    return Notice(
        type=EventType.WARNING,
        reason=INVALID_MAX_HOLD,
        message=(
            f'{MAX_HOLD_ANNOTATION} is "{raw}": {problem}; expected a Go duration longer than '
            'zero, such as "24h", "8h30m" or "90m" (units h, m, s, ms, us, ns); no node is '
            "upgraded until it is fixed"
        ),
        subject=raw,
    )
