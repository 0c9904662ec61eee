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

Offline nodes (not Ready) are never broken, so a disconnected site never trips the budget.
A value that cannot be read is a Warning `InvalidMaxFailed`, and the rollout deletes nothing
until it is fixed (design §12.5): a safety limit that was meant but cannot be read must not
silently become no limit.
"""

from edgerollout.domain.events import EventType, Notice
from edgerollout.domain.spec.count import Count, read_count
from edgerollout.domain.vocabulary import (
    INVALID_MAX_FAILED,
    MAX_FAILED_ANNOTATION,
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
