"""`edgerollout plan` as text: a kubectl-like table, or a JSON document of a stable shape.

Pure (a `DryRun` in, a string out). The JSON shape is a public contract (design §12.6):

```
{"daemonset": str, "namespace": str, "strategy": "AdvancedRollingUpdate" | "OTA" | null,
 "newestRevision": str | null, "maxUnavailable": int | null, "unavailable": int | null,
 "paused": bool, "pausesRollout": bool, "rollsBackTo": str | null, "windowOpens": str | null,
 "rollbackSwitch": "on" | "off" | "unknown" | null,
 "wave": {"name": str, "index": int, "count": int, "pending": int} | null,
 "batch": {"index": int, "count": int, "target": int, "nodes": int, "pending": int,
           "soakingUntil": str | null} | null,
 "events": [{"type": str, "reason": str, "message": str}],
 "nodes": [{"node": str, "nodeReady": "Ready" | "NotReady" | "Unknown" | "Missing",
            "pods": [str], "action": str, "why": str}]}
```
`events` are the Events the plan asks for (a controller that sent one already does not repeat it);
`pausesRollout`: more nodes are broken than `edgerollout.io/max-failed` tolerates, so the
controller pauses the rollout; `rollsBackTo`: the same, on a DaemonSet that asks to roll back
on failure, and the revision it goes back to (design §13.4.1); `windowOpens`: when a closed maintenance window opens (RFC 3339);
`rollbackSwitch`: as `status` has it (whether the install switched rollbacks on in the namespace
of a DaemonSet that asks for one; the plan is made by it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

from edgerollout.cli.status_render import (
    align,
    batch_document,
    describe_batch,
    describe_rollback_switch,
)
from edgerollout.domain.events import Notice
from edgerollout.domain.model import DaemonSetView
from edgerollout.domain.planning.decision import Plan
from edgerollout.domain.reporting.node_plans import NodePlan
from edgerollout.domain.spec.on_failure import RollbackSwitch
from edgerollout.domain.timestamps import format_rfc3339


@dataclass(frozen=True, slots=True, kw_only=True)
class DryRun:
    """A plan of one DaemonSet, with its reading node by node."""

    daemonset: DaemonSetView
    plan: Plan
    nodes: tuple[NodePlan, ...]
    rollback_switch: RollbackSwitch | None = None
    """Whether the install lets the controller roll the DaemonSet back (None: not asked for)."""


def render_plan_table(result: DryRun) -> str:
    """A header (strategy, budget, staging), one row per node, and the Events it would send."""
    decided = result.plan
    lines = [f"Strategy: {_strategy(decided)}"]
    holds = decided.holds
    staging = ["paused"] if decided.paused else []
    if holds.wave is not None:
        staging.append(f"wave {holds.wave}")
    if holds.batch is not None:
        staging.append(describe_batch(holds.batch))
    if decided.window_opens is not None:
        staging.append(f"maintenance window closed, opens {format_rfc3339(decided.window_opens)}")
    if staging:
        lines.append(f"Staging: {'; '.join(staging)}")
    if result.rollback_switch is not None:
        lines.append(describe_rollback_switch(result.rollback_switch, result.daemonset.namespace))
    if result.nodes:
        header = ["NODE", "NODE-READY", "ACTION", "WHY"]
        rows = [[row.node, row.readiness.value, str(row.action), row.why] for row in result.nodes]
        lines += align([header, *rows])
    else:
        lines.append(f'No pods of daemon set "{result.daemonset.name}" found.')
    deletions = len(decided.deletions)
    lines.append(f"{deletions} {'pod' if deletions == 1 else 'pods'} to delete now.")
    if decided.pause_rollout:
        lines.append("The rollout would be paused: more nodes are broken than max-failed allows.")
    rollback = decided.rollback
    if rollback is not None:
        lines.append(
            f"The rollout would be rolled back to revision {rollback.record.restored}: more nodes "
            "are broken than max-failed allows."
        )
    for notice in _told(decided):
        lines.append(f"Event: {notice.type} {notice.reason}: {notice.message}")
    return "\n".join(lines) + "\n"


def _told(decided: Plan) -> tuple[Notice, ...]:
    """The Events the plan asks for, a rollback's once its template is written included."""
    rollback = decided.rollback
    return (*decided.notices, *(() if rollback is None else (rollback.notice,)))


def _strategy(decided: Plan) -> str:
    if decided.strategy is None:
        return "not managed by edgerollout"
    rollout = decided.rollout
    if rollout is None:
        return str(decided.strategy)
    return (
        f"{decided.strategy}, {rollout.unavailable} of {rollout.max_unavailable} nodes "
        "unavailable before these deletions"
    )


def plan_document(result: DryRun) -> dict[str, Any]:
    """The plan as the JSON document described in the module docstring."""
    decided = result.plan
    rollout = decided.rollout
    wave = decided.holds.wave
    return {
        "daemonset": result.daemonset.name,
        "namespace": result.daemonset.namespace,
        "strategy": None if decided.strategy is None else str(decided.strategy),
        "newestRevision": None if decided.target is None else decided.target.hash,
        "maxUnavailable": None if rollout is None else rollout.max_unavailable,
        "unavailable": None if rollout is None else rollout.unavailable,
        "paused": bool(decided.paused),
        "pausesRollout": decided.pause_rollout,
        "rollsBackTo": None if decided.rollback is None else decided.rollback.record.restored,
        "rollbackSwitch": None if result.rollback_switch is None else result.rollback_switch.value,
        "windowOpens": None
        if decided.window_opens is None
        else format_rfc3339(decided.window_opens),
        "wave": None
        if wave is None
        else {"name": wave.name, "index": wave.index, "count": wave.count, "pending": wave.pending},
        "batch": batch_document(decided.holds.batch),
        "events": [
            {"type": str(notice.type), "reason": notice.reason, "message": notice.message}
            for notice in _told(decided)
        ],
        "nodes": [
            {
                "node": row.node,
                "nodeReady": row.readiness.value,
                "pods": list(row.pods),
                "action": str(row.action),
                "why": row.why,
            }
            for row in result.nodes
        ],
    }


def render_plan_json(result: DryRun) -> str:
    """The JSON document, indented by two spaces, ending with a newline."""
    return orjson.dumps(plan_document(result), option=orjson.OPT_INDENT_2).decode() + "\n"
