"""What a recorded run looked like, for people: the peak of unavailable nodes, how long held pods
stayed after their holds ended, and the whole timeline (deletions, template, node readiness, pod
lives) printed when a run failed."""

from __future__ import annotations

import itertools
import math

from tests.e2e.support.invariants.history import History, PodLife
from tests.e2e.support.invariants.holds import hold_ends, max_hold_seconds
from tests.e2e.support.invariants.timeline import clock


def peak_unavailable(
    history: History, min_ready_seconds: float
) -> tuple[int, float, tuple[str, ...]]:
    """The most Ready nodes unavailable at once (for any reason) over the recorded run:
    how many, from when, which."""
    points = sorted(
        p
        for p in {
            p for life in history.pods.values() for p in life.change_points(min_ready_seconds)
        }
        | {t for timeline in history.node_ready.values() for t in timeline.times}
        if p >= history.started_at
    )
    peak: tuple[int, float, tuple[str, ...]] = (0, history.started_at, ())
    for point in points:
        nodes = tuple(
            node
            for node in history.nodes
            if history.node_ready[node].at(point) is True
            and not history.node_available_at(node, point, min_ready_seconds)
        )
        if len(nodes) > peak[0]:
            peak = (len(nodes), point, nodes)
    return peak


def _hold_ended(history: History, life: PodLife, stop: float) -> float | None:
    """When the hold on `life` was last in force before `stop` (None: never before it). Between
    two changes of its condition or of max-hold, a hold is in force until a fixed moment."""
    cuts = sorted({*life.held.times, *history.ds_max_hold.times, stop})
    ended = None
    for start, end in itertools.pairwise(cuts):
        if start >= stop:
            break
        max_hold = max_hold_seconds(history.ds_max_hold.at(start))
        ends = None if max_hold is None else hold_ends(life.held.at(start), max_hold)
        if ends is not None and start < ends:
            ended = min(end, ends)
    return ended


def held_then_replaced(history: History) -> tuple[int, list[float]]:
    """How many pods carried a hold in force, and for each of them the controller deleted, the
    seconds from the end of its hold to its deletion, in order."""
    held = 0
    waits: list[float] = []
    for life in sorted(history.pods.values(), key=lambda p: p.seen):
        stop = life.deleting_at if life.deleting_at is not None else math.inf
        ended = _hold_ended(history, life, stop)
        if ended is None:
            continue
        held += 1
        if life.deleting_at is not None:
            waits.append(round(life.deleting_at - ended, 1))
    return held, waits


def timeline_text(history: History) -> str:
    """Deletions, the DaemonSet's template and annotations, node readiness and pod lives, for a
    failure message."""
    lines = ["controller deletions (audit log):"]
    lines += [
        f"  {clock(d.at)} {d.name} code={d.code} uid-precondition={d.uid_precondition}"
        for d in history.controller_deletions
    ]
    lines.append("DaemonSet template images, strategy and staging annotations:")
    lines += [
        f"  {clock(t)} image {v}"
        for t, v in zip(history.ds_image.times, history.ds_image.values, strict=True)
    ]
    lines += [
        f"  {clock(t)} strategy {v}"
        for t, v in zip(history.ds_strategy.times, history.ds_strategy.values, strict=True)
    ]
    for label, timeline in (
        ("paused", history.ds_paused),
        ("partition", history.ds_partition),
        ("batches", history.ds_batches),
        ("batch-soak", history.ds_batch_soak),
        ("max-hold", history.ds_max_hold),
    ):
        lines += [
            f"  {clock(t)} {label} {v!r}"
            for t, v in zip(timeline.times, timeline.values, strict=True)
        ]
    lines += [
        f"  {clock(lost)} to {clock(found)} watch down, annotations unseen"
        for lost, found in history.ds_unseen
    ]
    lines.append("node readiness:")
    for node, timeline in history.node_ready.items():
        changes = ", ".join(
            f"{clock(t)} {'Ready' if v else 'NotReady'}"
            for t, v in zip(timeline.times, timeline.values, strict=True)
        )
        lines.append(f"  {node}: {changes}")
    lines.append("pods:")
    for life in sorted(history.pods.values(), key=lambda p: (p.node, p.seen)):
        ready = ", ".join(
            f"{clock(t)} {f'Ready since {clock(v)}' if v is not None else 'not Ready'}"
            for t, v in zip(life.ready.times, life.ready.values, strict=True)
        )
        gone = clock(life.deleting_at) if life.deleting_at else "-"
        held = "".join(
            f"; {clock(t)} held {v.status} {v.message!r}" if v is not None else f"; {clock(t)} -"
            for t, v in zip(life.held.times, life.held.values, strict=True)
        )
        lines.append(
            f"  {life.node} {life.name} {','.join(life.images)} seen {clock(life.seen)}; "
            f"{ready}; deleting {gone}{held}"
        )
    return "\n".join(lines)
