"""The failure budget: how many broken nodes a rollout tolerates before it stops (design §13.4).

`edgerollout.io/max-failed: "N"` or `"P%"` on an AdvancedRollingUpdate DaemonSet. When more Ready
nodes are broken (`health`: their pod of the newest revision fails) than that, the controller
stops the rollout: it deletes nothing more, pauses it the way a user would
(`edgerollout.io/paused: "true"`), and says so with a Warning `RolloutFailed` naming each broken
node and why. The pause is what makes the stop last: a broken pod that a user deletes or that
recovers for a while must not let the rollout run on by itself. A person resumes it
(`edgerollout resume`), usually after fixing the image; a resume while still too many nodes are
broken stops it again, with a new Event.

Unset, there is no failure budget, as before (and as every peer does): the rollout is still
never widened by a broken node, whose pod is never counted as available, so max-unavailable
alone already bounds how many nodes a broken revision reaches.

- `N`: whole nodes, ASCII digits (`0`: the first broken node stops the rollout).
- `P%`: a percentage of the nodes the rollout covers (the base max-unavailable is counted
  over, `Snapshot.budget_base`), rounded down: a failure budget errs on the side of stopping,
  where max-unavailable and partitions round up.
- The form is `count.read_count`'s; above 100% or 2147483647 nodes is refused, not clamped.

A failure budget judged on a sample (`edgerollout.io/min-sample: "S"`, `read_min_sample`): the
first broken nodes of a rollout say little about a revision — three broken of the first five is
not 60 % of a fleet — and a percentage of a 10,000-node fleet (5 %: 500 nodes) lets a bad revision
break hundreds before it stops. With a sample, `max-failed` is judged over the nodes that tried
the newest revision (a pod of it on the node: available, starting or broken), and only once S of
them have; before that, `edgerollout.io/max-failed-before-sample: "B"` (a count, default 1)
tolerates B broken nodes. So with `max-failed: 10%`, `min-sample: 20`: 2 broken of the first 19
tried stop the rollout (B = 1); at 20 tried, 2 broken are within 10 % of 20, 3 stop it; at 100
tried, 11 stop it. A count `max-failed` is judged as a count once the sample is reached.
`min-sample` without `max-failed`, or a value that is not a whole number, is a Warning
`InvalidMinSample`, and the rollout deletes nothing until it is fixed, as for `max-failed`.

Offline nodes (not Ready) are never broken, so a disconnected site never trips the budget.
A value that cannot be read is a Warning `InvalidMaxFailed`, and the rollout deletes nothing
until it is fixed (design §12.5): a safety limit that was meant but cannot be read must not
silently become no limit.
"""

from dataclasses import dataclass

from edgerollout.domain.events import EventType, Notice
from edgerollout.domain.spec.count import Count, read_count
from edgerollout.domain.vocabulary import (
    INVALID_MAX_FAILED,
    INVALID_MIN_SAMPLE,
    MAX_FAILED_ANNOTATION,
    MAX_FAILED_BEFORE_SAMPLE_ANNOTATION,
    MIN_SAMPLE_ANNOTATION,
)

# Kubernetes' int32 fields end here; a count beyond it is a typo, not a fleet.
_LARGEST = 2**31 - 1


def read_max_failed(raw: str | None) -> Count | Notice | None:
    """The failure budget `raw` asks for (None: the annotation is unset, no budget)."""
    if raw is None:
        return None
    count = read_count(raw)
    if count is not None and count.number <= (100 if count.percent else _LARGEST):
        return count
    return Notice(
        type=EventType.WARNING,
        reason=INVALID_MAX_FAILED,
        message=(
            f'{MAX_FAILED_ANNOTATION} is "{raw}": expected a number of broken nodes such as "1" '
            'or a percentage from "0%" to "100%" of the rollout\'s nodes; no node is upgraded '
            "until it is fixed"
        ),
        subject=raw,
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class MinSample:
    """`max-failed` is judged once `size` nodes tried the newest revision; before, `before`
    broken nodes are tolerated."""

    size: int
    before: int = 1


def read_min_sample(
    raw: str | None, raw_before: str | None, *, max_failed: Count | Notice | None
) -> MinSample | Notice | None:
    """The sample `raw` (`edgerollout.io/min-sample`) and `raw_before`
    (`edgerollout.io/max-failed-before-sample`) ask for; None: both unset, no sample."""
    if raw is None and raw_before is None:
        return None
    if raw is None:
        return _invalid_sample(
            MAX_FAILED_BEFORE_SAMPLE_ANNOTATION,
            raw_before or "",
            f"{MIN_SAMPLE_ANNOTATION} is not set",
        )
    size = _whole(raw)
    if size is None:
        return _invalid_sample(
            MIN_SAMPLE_ANNOTATION, raw, 'expected a whole number of nodes such as "20"'
        )
    before = 1 if raw_before is None else _whole(raw_before)
    if before is None:
        return _invalid_sample(
            MAX_FAILED_BEFORE_SAMPLE_ANNOTATION,
            raw_before or "",
            'expected a whole number of broken nodes such as "1"',
        )
    if max_failed is None:
        return _invalid_sample(
            MIN_SAMPLE_ANNOTATION,
            raw,
            f"it says when {MAX_FAILED_ANNOTATION} is judged, which is not set",
        )
    return MinSample(size=size, before=before)


def _whole(raw: str) -> int | None:
    count = read_count(raw)
    if count is None or count.percent or count.number > _LARGEST:
        return None
    return count.number


def _invalid_sample(annotation: str, raw: str, why: str) -> Notice:
    return Notice(
        type=EventType.WARNING,
        reason=INVALID_MIN_SAMPLE,
        message=f'{annotation} is "{raw}": {why}; no node is upgraded until it is fixed',
        subject=f"{annotation}={raw}",
    )
