"""Which nodes a staged DaemonSet holds back, restated for the judge from the annotations'
specification, not taken from the controller's code (a shared mistake would hide itself).

- `edgerollout.io/paused`: no annotation, or `"false"`, lets the rollout run; `"true"` pauses it,
  and so does any other value (a value that cannot be read holds the rollout). Case and
  surrounding whitespace do not matter.
- `edgerollout.io/partition`: `"N"` holds the last N of the DaemonSet's nodes in name order (all of
  them when N is at least their number, none for 0); `"P%"` holds the last P percent of them,
  rounded up; surrounding whitespace does not matter; any other value holds every node.

The DaemonSet of a chaos run has a pod on every node of the lab, so its nodes are the history's.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

_PARTITION = re.compile(r"([0-9]+)(%?)")
_ANY_COUNT_DIGITS = 9


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
