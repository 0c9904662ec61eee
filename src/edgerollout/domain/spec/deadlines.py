"""How long the controller waits: for a node to take an OTA upgrade, for a new pod to come up.

Two DaemonSet annotations (design §13.1, §13.3):

| annotation                                 | value                  | unset                   |
|--------------------------------------------|------------------------|-------------------------|
| `edgerollout.io/ota-deadline`              | a Go duration: `"72h"` | OTA stays node-driven   |
| `edgerollout.io/progress-deadline-seconds` | whole seconds: `"600"` | 600, as for Deployments |

An OTA pod marked `PodNeedUpgrade=True` for longer than the OTA deadline is upgraded by the
controller itself. The value is read as Go's `time.ParseDuration` reads it (`go_duration.py`:
`1h30m`, `90s`, `2h45m0.5s`; units `ns` to `h`, no days), because that is how every Kubernetes
user writes a duration; surrounding whitespace is ignored, as for every annotation. Zero and
negative durations are refused: "upgrade at once" is not a deadline, and a node that may decide
for itself deserves some time. A `timedelta` holds microseconds, so a deadline with nanoseconds
rounds up to the next microsecond: never shorter than written, never zero.

A Ready node's pod of the newest revision that has not become available within the progress
deadline makes the node *broken*. The value is ASCII digits (`007` is 7), from 1 to 2147483647
(Kubernetes' `int32` seconds fields, as a Deployment's `progressDeadlineSeconds`); `0` would call
every new pod broken at once and is refused.

User input never raises: the result is a value, or a Warning `Notice` (`InvalidOTADeadline`,
`InvalidProgressDeadline`) naming the value and what is accepted. A bad OTA deadline leaves OTA to
the nodes (the controller upgrades nothing it was not asked to); a bad progress deadline holds
the rollout, as any value that cannot be read does (design §12.5).
"""

import re
from datetime import timedelta

from edgerollout.domain.events import EventType, Notice
from edgerollout.domain.spec.go_duration import positive_duration
from edgerollout.domain.vocabulary import (
    DEFAULT_PROGRESS_DEADLINE_SECONDS,
    INVALID_OTA_DEADLINE,
    INVALID_PROGRESS_DEADLINE,
    OTA_DEADLINE_ANNOTATION,
    PROGRESS_DEADLINE_ANNOTATION,
)

_DIGITS = re.compile(r"[0-9]+")
LONGEST_PROGRESS_DEADLINE_SECONDS = 2**31 - 1
"""Kubernetes' `int32` seconds fields end here (`progressDeadlineSeconds` among them)."""


def read_ota_deadline(raw: str | None) -> timedelta | Notice | None:
    """The OTA deadline `raw` asks for (None: the annotation is unset, no deadline)."""
    if raw is None:
        return None
    problem = positive_duration(raw)
    if isinstance(problem, timedelta):
        return problem
    return Notice(
        type=EventType.WARNING,
        reason=INVALID_OTA_DEADLINE,
        message=(
            f'{OTA_DEADLINE_ANNOTATION} is "{raw}": {problem}; expected a Go duration longer '
            'than zero, such as "72h", "1h30m" or "90s" (units h, m, s, ms, us, ns); '
            "OTA upgrades stay with the nodes until it is fixed"
        ),
        subject=raw,
    )


def read_progress_deadline(raw: str | None) -> int | Notice:
    """The progress deadline `raw` asks for, in seconds (the default when unset)."""
    if raw is None:
        return DEFAULT_PROGRESS_DEADLINE_SECONDS
    written = raw.strip()
    if _DIGITS.fullmatch(written):
        digits = written.lstrip("0")
        # The length check first keeps int() away from very long digit strings.
        if digits and len(digits) <= 10 and int(digits) <= LONGEST_PROGRESS_DEADLINE_SECONDS:
            return int(digits)
    return Notice(
        type=EventType.WARNING,
        reason=INVALID_PROGRESS_DEADLINE,
        message=(
            f'{PROGRESS_DEADLINE_ANNOTATION} is "{raw}": expected a whole number of seconds '
            f'from 1 to {LONGEST_PROGRESS_DEADLINE_SECONDS}, such as "600" (the default); '
            "no node is upgraded until it is fixed"
        ),
        subject=raw,
    )
