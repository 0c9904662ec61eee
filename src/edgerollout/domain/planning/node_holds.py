"""Which nodes' own holds on their upgrade are in force now (design §13.6).

A node asks through its agent that its pod not be replaced until a time (`spec.node_hold`); the
rollout book keeps, for each node, the hold its pod carries (`RolloutBook.asked`). At every plan
each such hold is judged against `edgerollout.io/max-hold` and the plan's `now`:

| the hold                                                 | at `now`                | then                      |
|----------------------------------------------------------|-------------------------|---------------------------|
| before its end and within max-hold of when it was asked  | in force                | the node is held          |
| past its end (`until`), within max-hold                  | over                    | nothing: it simply ended  |
| asked for longer than max-hold, and max-hold has passed  | ignored                 | a Warning `UpgradeHoldIgnored`, once |

A hold in force holds its node (`Staging.asked`, `holds.HoldReason.NODE_ASKED`): an
AdvancedRollingUpdate does not delete its pod, even an unavailable old one, and an OTA rollout does
not upgrade it at its OTA deadline; its pod keeps `PodNeedUpgrade=True` (the node may still
upgrade when it chooses). The node keeps its verdict and its share of the budget, and holds no
wave or batch back. The plan looks again when the first hold ends (`Recheck.hold_seconds`): no
event says so.

The Warning's subject is the pod's UID and the moment its hold was asked, so each hold is told
once, however many plans see it after.
"""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from edgerollout.domain.events import EventType, Notice
from edgerollout.domain.model import NodeName, PodView
from edgerollout.domain.spec.node_hold import HoldRequest
from edgerollout.domain.timestamps import format_rfc3339
from edgerollout.domain.vocabulary import MAX_HOLD_ANNOTATION, UPGRADE_HOLD_IGNORED


@dataclass(frozen=True, slots=True, kw_only=True)
class AskedHold:
    """The pod on a node that carries a hold, and the hold."""

    pod: PodView
    request: HoldRequest


@dataclass(frozen=True, slots=True, kw_only=True)
class NodeHolds:
    """The holds in force now by node, the Warnings of those ignored, and the seconds until the
    first one in force ends (None: none is)."""

    in_force: Mapping[NodeName, HoldRequest] = field(default_factory=dict)
    notices: tuple[Notice, ...] = ()
    ends_in_seconds: float | None = None


NO_NODE_HOLDS = NodeHolds()


def judge_node_holds(
    asked: Mapping[NodeName, Sequence[AskedHold]], *, max_hold: timedelta, now: datetime
) -> NodeHolds:
    """The holds of `asked` in force at `now` under `max_hold` (see the module docstring). A
    node with several pods (one being replaced) is held while any of their holds is in force, the
    one that ends last."""
    if not asked:
        return NO_NODE_HOLDS
    in_force: dict[NodeName, HoldRequest] = {}
    notices: list[Notice] = []
    first_end: datetime | None = None
    for node in sorted(asked):
        latest: HoldRequest | None = None
        for held in asked[node]:
            request = held.request
            ends = request.ends(max_hold)
            if now < ends:
                if latest is None or ends > latest.ends(max_hold):
                    latest = request
            elif request.outlasts(max_hold):
                notices.append(_ignored(held.pod, node, request, max_hold=max_hold, since=ends))
        if latest is not None:
            in_force[node] = latest
            ends = latest.ends(max_hold)
            first_end = ends if first_end is None else min(first_end, ends)
    seconds = None if first_end is None else max((first_end - now).total_seconds(), 0.0)
    return NodeHolds(in_force=in_force, notices=tuple(notices), ends_in_seconds=seconds)


def _ignored(
    pod: PodView, node: NodeName, request: HoldRequest, *, max_hold: timedelta, since: datetime
) -> Notice:
    until = "no readable end" if request.until is None else format_rfc3339(request.until)
    asked = format_rfc3339(request.asked)
    return Notice(
        type=EventType.WARNING,
        reason=UPGRADE_HOLD_IGNORED,
        message=(
            f"node {node} holds the upgrade of pod {pod.name} until {until} ({request.why}), "
            f"asked at {asked}: longer than {MAX_HOLD_ANNOTATION} ({_duration(max_hold)}) "
            f"allows, so the hold is ignored since {format_rfc3339(since)}"
        ),
        subject=f"{pod.uid}/{asked}",
    )


def _duration(value: timedelta) -> str:
    """A max-hold as a person reads it: `24h`, `1h30m`, `90s`."""
    seconds = int(value.total_seconds())
    hours, rest = divmod(seconds, 3600)
    minutes, seconds = divmod(rest, 60)
    parts = [f"{hours}h" if hours else "", f"{minutes}m" if minutes else ""]
    parts.append(f"{seconds}s" if seconds or not (hours or minutes) else "")
    return "".join(parts)
