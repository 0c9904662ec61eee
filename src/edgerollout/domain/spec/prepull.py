"""Whether, when and how widely an AdvancedRollingUpdate pre-pulls before it deletes (design §13.5).

Three annotations:

| annotation                      | value                                     | unset              |
|---------------------------------|-------------------------------------------|--------------------|
| `edgerollout.io/prepull`        | `"true"` or `"false"`, in any case        | `"false"`          |
| `edgerollout.io/prepull-window` | windows, as `edgerollout.io/maintenance-window` | pull at any time |
| `edgerollout.io/max-pulling`    | a count, `"N"` or `"P%"` of the rollout's nodes (rounded up), above 0 | `"10%"` with a window; else no limit of its own |

The last two shape pre-pull. `"false"` turns pre-pull off, and them with it; set without
`edgerollout.io/prepull` they would say nothing, which is taken for a forgotten `"true"`. Every
value that cannot be read, and either of those two without `edgerollout.io/prepull`, is one
Warning and holds the rollout (design §12.5).
"""

from dataclasses import dataclass

from edgerollout.domain.events import EventType, Notice
from edgerollout.domain.spec.count import Count, read_count
from edgerollout.domain.spec.maintenance_window import MaintenanceWindows, read_windows
from edgerollout.domain.vocabulary import (
    DEFAULT_MAX_PULLING,
    INVALID_MAX_PULLING,
    INVALID_PREPULL,
    INVALID_PREPULL_WINDOW,
    MAX_PULLING_ANNOTATION,
    PREPULL_ANNOTATION,
    PREPULL_WINDOW_ANNOTATION,
)

_DEFAULT_MAX_PULLING = Count(written=DEFAULT_MAX_PULLING, number=10, percent=True)


@dataclass(frozen=True, slots=True, kw_only=True)
class Prepull:
    """Pre-pull before delete, as asked for: images are asked for while `window` is open (None:
    at any time), on at most `max_pulling` nodes at once (None: no limit of its own)."""

    window: MaintenanceWindows | None = None
    max_pulling: Count | None = None


def read_prepull(
    raw: str | None, *, window: str | None = None, max_pulling: str | None = None
) -> Prepull | Notice | None:
    """The pre-pull `edgerollout.io/prepull` (`raw`), `edgerollout.io/prepull-window`
    (`window`) and `edgerollout.io/max-pulling` (`max_pulling`) ask for (None: none); a Warning
    for the first value that cannot be read (see the module docstring)."""
    wanted = _read_switch(raw)
    if isinstance(wanted, Notice):
        return wanted
    windows = read_windows(
        window,
        annotation=PREPULL_WINDOW_ANNOTATION,
        reason=INVALID_PREPULL_WINDOW,
        unset="pull images at any time",
    )
    if isinstance(windows, Notice):
        return windows
    limit = _read_max_pulling(max_pulling)
    if isinstance(limit, Notice):
        return limit
    if wanted is None:
        if window is not None:
            return _without_prepull(PREPULL_WINDOW_ANNOTATION, window, INVALID_PREPULL_WINDOW)
        if max_pulling is not None:
            return _without_prepull(MAX_PULLING_ANNOTATION, max_pulling, INVALID_MAX_PULLING)
        return None
    if not wanted:
        return None
    if limit is None and windows is not None:
        limit = _DEFAULT_MAX_PULLING
    return Prepull(window=windows, max_pulling=limit)


def _read_switch(raw: str | None) -> bool | Notice | None:
    """Whether `edgerollout.io/prepull` asks for pre-pull before delete (None: unset): "true" or
    "false", compared without regard to case or surrounding whitespace, as
    `edgerollout.io/paused`."""
    if raw is None:
        return None
    value = raw.strip().lower()
    if value in ("true", "false"):
        return value == "true"
    return Notice(
        type=EventType.WARNING,
        reason=INVALID_PREPULL,
        message=(
            f'{PREPULL_ANNOTATION} is "{raw}", which is neither "true" nor "false"; '
            "no node is upgraded until it is fixed"
        ),
        subject=raw,
    )


def _read_max_pulling(raw: str | None) -> Count | Notice | None:
    if raw is None:
        return None
    count = read_count(raw)
    if count is not None and not count.zero and (not count.percent or count.number <= 100):
        return count
    return Notice(
        type=EventType.WARNING,
        reason=INVALID_MAX_PULLING,
        message=(
            f'{MAX_PULLING_ANNOTATION} is "{raw}": expected a number of nodes above 0 such as '
            '"20", or a percentage from "1%" to "100%" of the rollout\'s nodes (pause the '
            "rollout to stop it); no node is upgraded until it is fixed"
        ),
        subject=raw,
    )


def _without_prepull(annotation: str, raw: str, reason: str) -> Notice:
    return Notice(
        type=EventType.WARNING,
        reason=reason,
        message=(
            f'{annotation} is "{raw}", but {PREPULL_ANNOTATION} is not "true": it shapes '
            f'pre-pull before delete only; set {PREPULL_ANNOTATION}: "true" or remove it; '
            "no node is upgraded until it is fixed"
        ),
        subject=f"{annotation}={raw}",
    )
