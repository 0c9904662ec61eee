"""`edgerollout status` as text: a kubectl-like table, or a JSON document of a stable shape.

Rendering is pure (a `RolloutStatus` in, a string out), so every layout is tested without a
terminal. The JSON shape is a public contract, documented in the README:

```
{"daemonset": str, "namespace": str,
 "strategy": {"type": "AdvancedRollingUpdate" | "OTA" | null, "maxUnavailable": str | null,
              "budget": int | null, "notManagedReasons": [str]},
 "newestRevision": str | null, "complete": bool,
 "nodes": [{"node": str | null, "nodeReady": "Ready" | "NotReady" | "Unknown" | "Missing" | null,
            "pod": str, "revision": str | null, "current": bool, "state": str,
            "held": str | null, "broken": str | null}],
 "summary": str,
 "paused": bool, "staging": [str], "windowOpens": str | null,
 "wave": {"name": str, "index": int, "count": int, "pending": int} | null,
 "batch": {"index": int, "count": int, "target": int, "nodes": int, "pending": int,
           "soakingUntil": str | null} | null,
 "rolledBack": str | null, "rollbackSwitch": "on" | "off" | "unknown" | null}
```
`rolledBack` is the record of the rollback that made the newest revision the newest
(`from HASH (revision N) to HASH`, design §13.4.1), else null. `rollbackSwitch`, for a DaemonSet
that asks to be rolled back on failure (else null): whether the install switched rollbacks on in
its namespace (`unknown`: the reader may not read the switch; shown as if off).
`broken` is why a current pod on a Ready node is failing (`CrashLoopBackOff`, ...); `held` is the
hold of an old pod on a held node (`partition`, `wave pool-b`, `paused`, ...);
`staging` lists the staging annotations in force (`partition 2`, `node selector canary=true`);
`windowOpens` is when a maintenance window that is closed now opens (RFC 3339), else null.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import orjson

from edgerollout.domain.planning.holds import BatchProgress
from edgerollout.domain.reporting.rollout_status import NodeRow, RolloutStatus, StrategyStatus
from edgerollout.domain.spec.on_failure import RollbackSwitch
from edgerollout.domain.spec.strategy import UpdateStrategy
from edgerollout.domain.timestamps import format_rfc3339
from edgerollout.domain.vocabulary import ROLLBACK_NOT_ALLOWED, ROLLBACK_ROLE_BINDING

COLUMN_GAP = 3  # kubectl's tabwriter padding


def render_table(status: RolloutStatus, *, wide: bool = False) -> str:
    """The header line, one row per pod (columns aligned as kubectl does) and the summary."""
    header = ["NODE", "NODE-READY", "POD", "REVISION", "STATE"]
    rows = [_cells(row, wide=wide) for row in status.rows]
    lines = [f"Strategy: {describe_strategy(status.strategy)}"]
    staging = describe_staging(status)
    if staging:
        lines.append(f"Staging: {staging}")
    if status.rolled_back is not None:
        lines.append(f"Rolled back: {status.rolled_back}")
    if status.rollback_switch is not None:
        lines.append(describe_rollback_switch(status.rollback_switch, status.namespace))
    if rows:
        lines += align([header, *rows])
    else:
        lines.append(f'No pods of daemon set "{status.daemonset}" found.')
    lines.append(status.summary)
    return "\n".join(lines) + "\n"


def describe_rollback_switch(switch: RollbackSwitch, namespace: str) -> str:
    """The line saying what a spent failure budget does to a DaemonSet that asks to be rolled
    back, by the install's switch in its namespace (design §13.4.1)."""
    if switch is RollbackSwitch.ON:
        return f'On failure: roll back (switched on in namespace "{namespace}" at install)'
    if switch is RollbackSwitch.OFF:
        return (
            f'On failure: pause (a rollback is asked for, but not switched on in namespace "{namespace}" '
            f"at install: {ROLLBACK_NOT_ALLOWED})"
        )
    return (
        f'On failure: pause, as shown (a rollback is asked for; whether namespace "{namespace}" is '
        f'switched on cannot be read: no right to get rolebinding "{ROLLBACK_ROLE_BINDING}")'
    )


def describe_strategy(strategy: StrategyStatus) -> str:
    """`AdvancedRollingUpdate, max-unavailable 30% (1 of 3 nodes)`, `OTA`, or why it is unmanaged."""
    if strategy.strategy is None:
        reasons = ", ".join(strategy.not_managed_reasons)
        return "not managed by edgerollout" + (f" ({reasons})" if reasons else "")
    if strategy.strategy is UpdateStrategy.OTA:
        return str(strategy.strategy)
    if strategy.budget is None:
        return (
            f'{strategy.strategy}, max-unavailable "{strategy.max_unavailable}" is invalid: '
            "no pod is deleted until it is fixed"
        )
    nodes = "node" if strategy.base == 1 else "nodes"
    return (
        f"{strategy.strategy}, max-unavailable {strategy.max_unavailable} "
        f"({strategy.budget} of {strategy.base} {nodes})"
    )


def describe_staging(status: RolloutStatus) -> str:
    """`paused; partition 2; wave pool-b (2 of 3)`; empty when the rollout is not staged. A
    closed maintenance window says when it opens."""
    parts = ["paused"] if status.paused else []
    for setting in status.staging:
        if setting.startswith(("waves ", "batches ")):
            continue
        if setting.startswith("maintenance window ") and status.window_opens is not None:
            setting += f" (closed, opens {format_rfc3339(status.window_opens)})"
        parts.append(setting)
    if status.wave is not None:
        parts.append(f"wave {status.wave}")
    if status.batch is not None:
        parts.append(describe_batch(status.batch))
    return "; ".join(parts)


def describe_batch(batch: BatchProgress) -> str:
    """`batch 2 of 4 (50 of 1000 nodes)`, and while it soaks, when the next starts."""
    text = f"batch {batch}"
    if batch.opens is not None:
        text += f", soaking until {format_rfc3339(batch.opens)}"
    return text


def align(lines: Sequence[Sequence[str]]) -> list[str]:
    """Columns padded to their widest cell plus a gap; the last column is not padded."""
    widths = [max(len(line[i]) for line in lines) for i in range(len(lines[0]))]
    return [
        "".join(
            cell if i == len(line) - 1 else cell.ljust(widths[i] + COLUMN_GAP)
            for i, cell in enumerate(line)
        ).rstrip()
        for line in lines
    ]


def _cells(row: NodeRow, *, wide: bool) -> list[str]:
    revision = "current" if row.current else "old"
    if wide:
        revision = f"{revision} ({row.revision or '<none>'})"
    return [
        row.node or "<none>",
        row.node_readiness.value if row.node_readiness is not None else "<none>",
        row.pod,
        revision,
        row.state_text,
    ]


def status_document(status: RolloutStatus) -> dict[str, Any]:
    """The status as the JSON document described in the module docstring."""
    strategy = status.strategy
    return {
        "daemonset": status.daemonset,
        "namespace": status.namespace,
        "strategy": {
            "type": None if strategy.strategy is None else str(strategy.strategy),
            "maxUnavailable": strategy.max_unavailable,
            "budget": strategy.budget,
            "notManagedReasons": list(strategy.not_managed_reasons),
        },
        "newestRevision": status.newest_revision,
        "complete": status.complete,
        "nodes": [
            {
                "node": row.node,
                "nodeReady": None if row.node_readiness is None else row.node_readiness.value,
                "pod": row.pod,
                "revision": row.revision,
                "current": row.current,
                "state": row.state_text,
                "held": row.hold,
                "broken": row.broken,
            }
            for row in status.rows
        ],
        "summary": status.summary,
        "paused": status.paused,
        "staging": list(status.staging),
        "windowOpens": None if status.window_opens is None else format_rfc3339(status.window_opens),
        "batch": batch_document(status.batch),
        "rolledBack": status.rolled_back,
        "rollbackSwitch": None if status.rollback_switch is None else status.rollback_switch.value,
        "wave": None
        if status.wave is None
        else {
            "name": status.wave.name,
            "index": status.wave.index,
            "count": status.wave.count,
            "pending": status.wave.pending,
        },
    }


def render_json(status: RolloutStatus) -> str:
    """The JSON document, indented by two spaces, ending with a newline."""
    return orjson.dumps(status_document(status), option=orjson.OPT_INDENT_2).decode() + "\n"


def batch_document(batch: BatchProgress | None) -> dict[str, Any] | None:
    """A batch as the JSON documents of `status`, `plan` and `list` give it."""
    if batch is None:
        return None
    return {
        "index": batch.index,
        "count": batch.count,
        "target": batch.target,
        "nodes": batch.nodes,
        "pending": batch.pending,
        "soakingUntil": None if batch.opens is None else format_rfc3339(batch.opens),
    }
