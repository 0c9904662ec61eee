"""The judge's rules for a node's own hold and for batches, checked at each deletion the
controller made (the annotations and the condition as `holds` and `batches` restate them):

1. `node-hold`: no pod is deleted while it carries a hold in force (`edgerollout.io/UpgradeHeld`,
   before its end and within `edgerollout.io/max-hold` of when it was asked), nor while max-hold
   cannot be read;
2. `batches`: no pod is deleted on a node of a batch that has not started: every Ready node of
   the earlier batches, but those holding their own upgrade, runs the DaemonSet's template and is
   available (and has been for the soak), and the batches can be read.

As for the staging rules (`judge`'s docstring), a state counts against a deletion only when the
watcher saw it at every moment from `grace` seconds before the request to `grace` seconds after
(each moment something the rule reads changed is looked at), and nothing is held against a
deletion within `grace` of a spell when the DaemonSet's watch was down.
"""

from __future__ import annotations

from collections.abc import Iterable

from edgerollout.domain.vocabulary import BATCHES_ANNOTATION, MAX_HOLD_ANNOTATION
from tests.e2e.support.invariants.batches import batch_ends, soak_seconds
from tests.e2e.support.invariants.history import AuditedDeletion, History, PodLife
from tests.e2e.support.invariants.holds import hold_ends, max_hold_seconds, partition_holds
from tests.e2e.support.invariants.timeline import Timeline, clock
from tests.e2e.support.invariants.violation import Violation


def _moments(start: float, end: float, timelines: Iterable[Timeline]) -> list[float]:
    """`start`, `end` and every change of `timelines` between them, in order."""
    moments = {start, end}
    for timeline in timelines:
        moments.update(timeline.changes_between(start, end))
    return sorted(moments)


def _unseen(history: History, start: float, end: float) -> bool:
    return any(lost <= end and start <= found for lost, found in history.ds_unseen)


def node_hold_violations(
    history: History,
    deletion: AuditedDeletion,
    life: PodLife,
    objects: tuple[str, ...],
    grace: float,
) -> list[Violation]:
    """A deletion of a pod whose own hold was in force, or while max-hold could not be read."""
    at = deletion.at
    start, end = at - grace, at + grace
    if _unseen(history, start, end):
        return []
    moments = _moments(start, end, (life.held, history.ds_max_hold))
    pod_ref = f"pod {deletion.namespace}/{deletion.name}"
    if all(max_hold_seconds(history.ds_max_hold.at(m)) is None for m in moments):
        raw = history.ds_max_hold.at(at)
        return [
            Violation(
                at,
                "node-hold",
                f"{pod_ref} deleted while {MAX_HOLD_ANNOTATION} {raw!r} could not be read",
                objects,
            )
        ]

    def ends_at(moment: float) -> float | None:
        max_hold = max_hold_seconds(history.ds_max_hold.at(moment))
        ends = None if max_hold is None else hold_ends(life.held.at(moment), max_hold)
        return ends if ends is not None and moment < ends else None

    ends = [ends_at(m) for m in moments]
    if any(e is None for e in ends):
        return []
    held = life.held.at(at)
    return [
        Violation(
            at,
            "node-hold",
            f"{pod_ref} deleted while its node's hold was in force (until "
            f"{clock(min(e for e in ends if e is not None))}: {held.message!r}, "
            f"{MAX_HOLD_ANNOTATION} {history.ds_max_hold.at(at)!r})",
            objects,
        )
    ]


def _holds_itself(history: History, node: str, moment: float) -> bool:
    """Whether a pod on `node` carries a hold in force at `moment` (under the default max-hold
    when it cannot be read, as the controller counts it)."""
    max_hold = max_hold_seconds(history.ds_max_hold.at(moment))
    if max_hold is None:
        max_hold = max_hold_seconds(None) or 0.0
    for life in history.pods_on(node):
        if life.live_at(moment):
            ends = hold_ends(life.held.at(moment), max_hold)
            if ends is not None and moment < ends:
                return True
    return False


def _done_since(
    history: History, node: str, moment: float, min_ready_seconds: float
) -> float | None:
    """Since when `node` runs the DaemonSet's template and is available at `moment` (None: it
    does not)."""
    live = [life for life in history.pods_on(node) if life.live_at(moment)]
    if len(live) != 1 or live[0].images != history.ds_image.at(moment):
        return None
    since = live[0].ready.at(moment)
    if since is None or since + min_ready_seconds > moment:
        return None
    return float(since) + min_ready_seconds


def _waiting(history: History, node: str, moment: float, min_ready_seconds: float) -> list[str]:
    """What holds the batch of `node` back at `moment` (nothing: it has started)."""
    raw, raw_soak = history.ds_batches.at(moment), history.ds_batch_soak.at(moment)
    if raw is None and raw_soak is None:
        return []
    held = partition_holds(history.ds_partition.at(moment), history.nodes)
    covered = [name for name in history.nodes if name not in held]
    if node not in covered:
        return []
    ends, soak = batch_ends(raw, len(covered)), soak_seconds(raw_soak, raw)
    if ends is None or soak is None:
        return [f"{BATCHES_ANNOTATION} {raw!r}, soak {raw_soak!r}: unreadable, every node held"]
    place = covered.index(node)
    batch = next(index for index, end in enumerate(ends) if end > place)
    if batch == 0:
        return []
    waiting: list[str] = []
    finished: float | None = None
    for earlier in covered[: ends[batch - 1]]:
        if history.node_ready[earlier].at(moment) is not True:
            continue
        if _holds_itself(history, earlier, moment):
            continue
        since = _done_since(history, earlier, moment, min_ready_seconds)
        if since is None:
            waiting.append(f"{earlier} not done")
        else:
            finished = since if finished is None else max(finished, since)
    if not waiting and soak > 0 and finished is not None and moment < finished + soak:
        waiting.append(f"the soak of {soak:g} s until {clock(finished + soak)}")
    return [f"batch {batch + 1} of {ends}: waiting for {', '.join(waiting)}"] if waiting else []


def batch_violations(
    history: History,
    deletion: AuditedDeletion,
    life: PodLife,
    objects: tuple[str, ...],
    grace: float,
    min_ready_seconds: float,
) -> list[Violation]:
    """A deletion on a node whose batch had not started."""
    at = deletion.at
    start, end = at - grace, at + grace
    if _unseen(history, start, end):
        return []
    timelines: list[Timeline] = [
        history.ds_batches,
        history.ds_batch_soak,
        history.ds_partition,
        history.ds_max_hold,
        history.ds_image,
        *history.node_ready.values(),
    ]
    for other in history.pods.values():
        timelines += [other.ready, other.held]
    moments = _moments(start, end, timelines)
    moments += [
        p
        for other in history.pods.values()
        for p in other.change_points(min_ready_seconds)
        if start < p < end
    ]
    waiting = [_waiting(history, life.node, m, min_ready_seconds) for m in sorted(moments)]
    if not all(waiting):
        return []
    told = _waiting(history, life.node, at, min_ready_seconds) or waiting[0]
    return [
        Violation(
            at,
            "batches",
            f"pod {deletion.namespace}/{deletion.name} deleted on node {life.node} before its "
            f"batch started ({told[0]})",
            objects,
        )
    ]
