"""What the dashboard's pages receive: JSON documents made from the readings `list`, `status` and
`plan` already compute, so the page and the commands cannot disagree.

Pure: statuses, views and times in, plain dicts out (the server turns them into JSON). The page
draws what it gets and decides nothing; which state a node's cell shows is decided here, once,
from `status`'s row of its pod (`rollout_status.NodeRow`):

| cell        | the row                                                             |
|-------------|---------------------------------------------------------------------|
| `broken`    | `broken: REASON` (a current pod failing on a Ready node)            |
| `waiting`   | `waiting: node NotReady`, or any pod not updated on a node not Ready |
| `pulling`   | held while its image pre-pull runs, or an OTA offer whose pull runs |
| `held`      | `held: ...` for any other hold (partition, wave, paused, ...)       |
| `updated`   | `updated`                                                           |
| `upgrading` | `upgrading`, `terminating`                                          |
| `outdated`  | `old`, `OTA: upgrade available` (pull done, failed or none)          |

A node the native controller counts (`desiredNumberScheduled`) that holds no pod is a cell too,
with no pod and the detail `no pod` (`podless_nodes`): the counts take it as a node to go, and
the pod the native controller creates there is of the newest revision, so it is `upgrading` on a
Ready node and `waiting` on one that is not. It is named when the watches saw a pod of the
DaemonSet on it (its pod deleted, the next one not yet made); one never seen with a pod is drawn
in the pool "" without a name, since only the scheduler's rules could name it.

A rollout's document (`rollout_document`):

```
{"key": "NS/NAME", "item": <list's item document>, "summary": str, "staging": str,
 "strategy": str, "poolLabel": str, "states": [str], "counts": {state: int},
 "pools": [{"name": str, "counts": {state: int}, "cells": [
     [node, state index, pod, revision, current, node readiness, detail, since]]}]}
```
`states` names the cell states in legend order; a cell's state is its index in that list;
`detail` is the state as `status` words it (`broken: CrashLoopBackOff`), or `no pod`; `since`
(RFC 3339, or null) is when the cell entered that state: as the cluster says it where its objects
do (`cluster_since`: a waiting node's readiness, an updated pod's Ready, a broken pod's
containers), else when this dashboard first saw it so; node, pod and revision are null when not
known. Pools are the values of the label
the DaemonSet's waves are named by, else OpenYurt's node pool label (`pool_counts.pool_label`);
a node without it is in the pool named "".
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any

from edgerollout.cli.list_render import ListedStatus, item_document
from edgerollout.cli.plan_render import DryRun, plan_document
from edgerollout.cli.rollout_read import RolloutViews
from edgerollout.cli.status_render import describe_staging, describe_strategy
from edgerollout.domain.model import NodeName, NodeReadiness
from edgerollout.domain.planning.holds import HoldReason
from edgerollout.domain.reporting.pool_counts import pool_label
from edgerollout.domain.reporting.rollout_status import (
    NodeRow,
    PodState,
    PrepullState,
    RolloutStatus,
)
from edgerollout.domain.timestamps import format_rfc3339, parse_rfc3339

JSON = dict[str, Any]


class CellState(StrEnum):
    """The state a node's cell shows (see the module docstring's table), in legend order."""

    UPDATED = "updated"
    UPGRADING = "upgrading"
    PULLING = "pulling"
    OUTDATED = "outdated"
    HELD = "held"
    WAITING = "waiting"
    BROKEN = "broken"


STATES: tuple[CellState, ...] = tuple(CellState)
_INDEX = {state: index for index, state in enumerate(STATES)}
_PULLING_HOLD = str(HoldReason.PULLING)


def cell_state(row: NodeRow) -> CellState:
    """The cell of `status`'s row of a pod (the module docstring's table)."""
    if row.state is PodState.BROKEN:
        return CellState.BROKEN
    if row.state is PodState.UPDATED:
        return CellState.UPDATED
    if row.state is PodState.WAITING_NODE_NOT_READY or (
        row.node_readiness is not None and row.node_readiness is not NodeReadiness.READY
    ):
        return CellState.WAITING
    if row.state is PodState.HELD:
        pulling = row.hold is not None and row.hold.startswith(_PULLING_HOLD)
        return CellState.PULLING if pulling else CellState.HELD
    if row.state in (PodState.UPGRADING, PodState.TERMINATING):
        return CellState.UPGRADING
    if row.prepull is PrepullState.RUNNING:
        return CellState.PULLING
    return CellState.OUTDATED


def cell_key(row: NodeRow) -> str:
    """The name a cell is known by from one reading to the next: its node, else its pod."""
    return row.node if row.node is not None else f"pod/{row.pod}"


NO_POD = "no pod"


@dataclass(frozen=True, slots=True, kw_only=True)
class PodlessNode:
    """A node the native controller counts that holds no pod of the DaemonSet; `node` is None
    when the watches never saw a pod on it, so that it cannot be named."""

    node: NodeName | None
    readiness: NodeReadiness | None

    @property
    def state(self) -> CellState:
        """`upgrading`: the native controller makes a pod of the newest revision there; `waiting`
        while the node is not Ready."""
        if self.readiness is None or self.readiness is NodeReadiness.READY:
            return CellState.UPGRADING
        return CellState.WAITING


def podless_nodes(status: RolloutStatus, views: RolloutViews) -> list[PodlessNode]:
    """The nodes `status` counts without a pod (`desiredNumberScheduled` less the nodes holding
    one): first those of `views.nodes` holding none that the native controller counts (Ready, or
    not Ready and tolerated), by name, then as many unnamed ones as the count still asks for."""
    holding = {row.node for row in status.rows if row.node is not None}
    missing = (views.daemonset.desired_nodes or 0) - len(holding)
    if missing <= 0:
        return []
    counted = {NodeReadiness.READY} | views.daemonset.counted_while_not_ready
    named = [
        PodlessNode(node=node.name, readiness=node.readiness)
        for node in sorted(views.nodes, key=lambda node: node.name)
        if node.name not in holding and node.readiness in counted
    ][:missing]
    return named + [PodlessNode(node=None, readiness=None)] * (missing - len(named))


class SeenSince:
    """When each cell of a rollout was first seen in the state it shows: what the page says a
    node has been so "since". Only what this dashboard saw: a cell already in its state when the
    dashboard started says since then."""

    def __init__(self) -> None:
        self._seen: dict[str, tuple[str, datetime]] = {}

    def update(
        self,
        rows: Iterable[NodeRow],
        *,
        now: datetime,
        podless: Iterable[PodlessNode] = (),
        known: Mapping[str, datetime] | None = None,
    ) -> Mapping[str, datetime]:
        """Record the rows and the named nodes without a pod read at `now`; the time each cell
        entered its current state: the cluster's (`known`, by cell) where it says it, else when
        first seen so. Cells no longer read are forgotten."""
        shown = [(cell_key(row), row.state_text) for row in rows]
        shown += [(node.node, NO_POD) for node in podless if node.node is not None]
        told = known or {}
        seen: dict[str, tuple[str, datetime]] = {}
        for key, text in shown:
            before = self._seen.get(key)
            seen[key] = before if before is not None and before[0] == text else (text, now)
        self._seen = seen
        return {key: told.get(key, since) for key, (_, since) in seen.items()}


def cluster_since(
    rows: Iterable[NodeRow], views: RolloutViews, podless: Iterable[PodlessNode] = ()
) -> dict[str, datetime]:
    """When the cluster says each cell entered its state, where its objects say it: a `waiting`
    cell since its node's readiness changed (its `Ready` condition's transition), an `updated`
    one since its pod became Ready, a `broken` one since its pod's containers stopped being ready.
    Other states (outdated, held, ...) have no such time: the dashboard's own first sight stands."""
    nodes = {node.name: node for node in views.nodes}
    pods = {pod.name: pod for pod in views.pods}
    known: dict[str, datetime] = {}
    for row in rows:
        state, pod = cell_state(row), pods.get(row.pod)
        node = None if row.node is None else nodes.get(row.node)
        when = None
        if state is CellState.WAITING and node is not None:
            when = node.readiness_since
        elif state is CellState.UPDATED and pod is not None:
            when = pod.ready_since
        elif state is CellState.BROKEN and pod is not None:
            when = pod.containers_unready_since
        if when is not None:
            known[cell_key(row)] = when
    for podless_node in podless:
        node = None if podless_node.node is None else nodes.get(podless_node.node)
        waiting = podless_node.state is CellState.WAITING
        if node is not None and waiting and node.readiness_since is not None:
            known[node.name] = node.readiness_since
    return known


def rollout_document(
    listed: ListedStatus, *, views: RolloutViews, since: Mapping[str, datetime]
) -> JSON:
    """A rollout's page: its header facts and its cells by pool (the module docstring)."""
    status = listed.status
    label = pool_label(views.daemonset.annotations)
    pool_of = {node.name: node.labels.get(label, "") for node in views.nodes}
    pools: dict[str, list[list[Any]]] = {}
    totals = dict.fromkeys(STATES, 0)
    by_pool: dict[str, dict[CellState, int]] = {}
    for row in status.rows:
        state = cell_state(row)
        pool = "" if row.node is None else pool_of.get(row.node, "")
        totals[state] += 1
        counts = by_pool.setdefault(pool, dict.fromkeys(STATES, 0))
        counts[state] += 1
        when = since.get(cell_key(row))
        pools.setdefault(pool, []).append(
            [
                row.node,
                _INDEX[state],
                row.pod,
                row.revision,
                row.current,
                None if row.node_readiness is None else row.node_readiness.value,
                row.state_text,
                None if when is None else format_rfc3339(when),
            ]
        )
    podless = podless_nodes(status, views)
    for node in podless:
        state = node.state
        pool = "" if node.node is None else pool_of.get(node.node, "")
        totals[state] += 1
        counts = by_pool.setdefault(pool, dict.fromkeys(STATES, 0))
        counts[state] += 1
        when = None if node.node is None else since.get(node.node)
        readiness = None if node.readiness is None else node.readiness.value
        pools.setdefault(pool, []).append(
            [
                node.node,
                _INDEX[state],
                None,
                None,
                False,
                readiness,
                NO_POD,
                None if when is None else format_rfc3339(when),
            ]
        )
    if podless:  # in their place among the rows, which come by node name
        for cells in pools.values():
            cells.sort(key=lambda cell: (cell[0] is None, cell[0] or "", cell[2] or ""))
    return {
        "key": f"{status.namespace}/{status.daemonset}",
        "item": item_document(listed),
        "summary": status.summary,
        "staging": describe_staging(status),
        "strategy": describe_strategy(status.strategy),
        "poolLabel": label,
        "states": [str(state) for state in STATES],
        "counts": _named(totals),
        "pools": [
            {"name": name, "counts": _named(by_pool[name]), "cells": pools[name]}
            for name in sorted(pools)
        ],
    }


def home_document(listed: Iterable[ListedStatus]) -> JSON:
    """The home page: `list`'s item document of each opted-in DaemonSet, in `list`'s order."""
    return {"items": [item_document(item) for item in listed]}


def plan_table(result: DryRun) -> JSON:
    """The plan of the current moment: `plan -o json`'s document."""
    return plan_document(result)


def events_document(events: Sequence[JSON], *, limit: int) -> JSON:
    """The newest `limit` Events of a rollout, newest first: type, reason, message, how many
    times and when last (RFC 3339, or null when the Event says neither)."""
    shown = [_event(event) for event in events]
    shown.sort(key=lambda event: event["last"] or "", reverse=True)
    return {"events": shown[:limit]}


def _event(event: JSON) -> JSON:
    last = event.get("lastTimestamp") or event.get("eventTime") or None
    if last is None:
        last = (event.get("metadata") or {}).get("creationTimestamp")
    return {
        "type": event.get("type") or "",
        "reason": event.get("reason") or "",
        "message": event.get("message") or "",
        "count": event.get("count") or 1,
        "last": None if last is None else format_rfc3339(parse_rfc3339(str(last))),
    }


def _named(counts: Mapping[CellState, int]) -> dict[str, int]:
    return {str(state): counts[state] for state in STATES}


def node_cells(document: JSON) -> dict[str | None, str]:
    """A rollout document's cells as node → state name: what a test compares with `status`."""
    states = document["states"]
    return {cell[0]: states[cell[1]] for pool in document["pools"] for cell in pool["cells"]}
