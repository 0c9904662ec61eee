"""Which nodes a staged DaemonSet holds back, restated for the judge from the annotations'
specification, not taken from the controller's code (a shared mistake would hide itself).

- `edgerollout.io/paused`: no annotation, or `"false"`, lets the rollout run; `"true"` pauses it,
  and so does any other value (a value that cannot be read holds the rollout). Case and
  surrounding whitespace do not matter.
- `edgerollout.io/partition`: `"N"` holds the last N of the DaemonSet's nodes in name order (all of
  them when N is at least their number, none for 0); `"P%"` holds the last P percent of them,
  rounded up; surrounding whitespace does not matter; any other value holds every node.

- `edgerollout.io/UpgradeHeld` (a pod's condition, written by its node's agent): `status` `True`
  with the message `until <T1>, asked at <T2>: <why>` holds the pod until T1, or until T2 plus
  `edgerollout.io/max-hold` if that is sooner; a `True` condition of another message is a hold
  asked at its `lastTransitionTime` for as long as max-hold allows (none without one). Times are
  RFC 3339 in UTC, whole seconds.
- `edgerollout.io/max-hold`: a Go duration longer than zero (default 24 hours), surrounding
  whitespace ignored. The judge reads
  the forms a chaos run writes (`<number><unit>` repeated, units `h`, `m`, `s`, `ms`); any other
  value is taken as unreadable, which holds every node.

The DaemonSet of a chaos run has a pod on every node of the lab, so its nodes are the history's.
"""

from __future__ import annotations

import datetime
import math
import re
from collections.abc import Sequence

from tests.e2e.support.invariants.history import HeldCondition

_PARTITION = re.compile(r"([0-9]+)(%?)")
_ANY_COUNT_DIGITS = 9
_DURATION = re.compile(r"(?:[0-9]+(?:\.[0-9]*)?(?:h|ms|m|s))+")
_DURATION_PART = re.compile(r"([0-9]+(?:\.[0-9]*)?)(h|ms|m|s)")
_SECONDS = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001}
_HOLD_MESSAGE = re.compile(r"until (\S+), asked at (\S+): .*", re.DOTALL)
DEFAULT_MAX_HOLD = 24 * 3600.0


def is_paused(raw: str | None) -> bool:
    """Whether `edgerollout.io/paused` with this value (None: not set) pauses the rollout."""
    return raw is not None and raw.strip().lower() != "false"


def partition_holds(raw: str | None, nodes: Sequence[str]) -> frozenset[str]:
    """The nodes `edgerollout.io/partition` with this value (None: not set) holds among `nodes`."""
    if raw is None:
        return frozenset()
    ordered = sorted(nodes)
    form = _PARTITION.fullmatch(raw.strip())
    if form is None:
        return frozenset(ordered)
    digits, percent = form.group(1).lstrip("0") or "0", form.group(2)
    if len(digits) > _ANY_COUNT_DIGITS:
        return frozenset(ordered)  # far above any node count: every node
    number = int(digits)
    count = min(len(ordered), math.ceil(len(ordered) * number / 100) if percent else number)
    return frozenset(ordered[len(ordered) - count :])


def duration_seconds(raw: str) -> float | None:
    """A Go duration of the forms the judge reads, in seconds (None: not one of them)."""
    if raw in ("0", "+0"):
        return 0.0
    if _DURATION.fullmatch(raw) is None:
        return None
    return sum(float(n) * _SECONDS[unit] for n, unit in _DURATION_PART.findall(raw))


def max_hold_seconds(raw: str | None) -> float | None:
    """The longest hold `edgerollout.io/max-hold` with this value (None: not set) allows, in
    seconds; None when the value is unreadable (every node is then held)."""
    if raw is None:
        return DEFAULT_MAX_HOLD
    seconds = duration_seconds(raw.strip())
    return seconds if seconds is not None and seconds > 0 else None


def _moment(text: str) -> float | None:
    try:
        stamp = datetime.datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ")
    except ValueError:
        return None
    return stamp.replace(tzinfo=datetime.UTC).timestamp()


def hold_ends(held: HeldCondition | None, max_hold: float) -> float | None:
    """When the hold a pod's `UpgradeHeld` condition carries stops holding, under `max_hold`
    seconds (None: the condition holds nothing)."""
    if held is None or held.status != "True":
        return None
    form = _HOLD_MESSAGE.fullmatch(held.message)
    if form is not None:
        until, asked = _moment(form.group(1)), _moment(form.group(2))
        if until is not None and asked is not None:
            return min(until, asked + max_hold)
    asked = _moment(held.since or "")
    return None if asked is None else asked + max_hold
