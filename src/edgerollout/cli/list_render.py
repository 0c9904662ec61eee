"""`edgerollout list` as text: one kubectl-like row per opted-in DaemonSet, or a JSON document.

Rendering is pure (statuses and the time in, a string out). The columns:

```
[NAMESPACE]  NAME  STRATEGY  UPDATED  OFFLINE  BROKEN  HELD  WAVE  STATE  AGE
  -o wide adds:  MAX-UNAVAILABLE  BUDGET  BATCH  REVISION  WARNINGS
```
NAMESPACE only with `-A`, as kubectl shows it; UPDATED is the updated nodes of those the rollout
covers (`2/3`), OFFLINE, BROKEN and HELD nodes too (`-` while an annotation the controller cannot
follow stops it before it judges the nodes); STATE is the phase's word (`rolling`, `paused`, ...;
`domain.rollout_phase`); AGE is how long ago the newest ControllerRevision was created, written as kubectl writes an age;
WARNINGS the reasons of the annotations the controller cannot follow. A value that does not apply
is `<none>`.

The JSON shape is a public contract (design §9.1):

```
{"items": [{"namespace": str, "name": str,
            "strategy": "AdvancedRollingUpdate" | "OTA" | null,
            "maxUnavailable": str | null, "budget": int | null,
            "updated": int | null, "total": int | null, "offline": int | null,
            "broken": int | null, "held": int | null,
            "wave": {"name": str, "index": int, "count": int, "pending": int} | null,
            "batch": {"index": int, "count": int, "target": int, "nodes": int,
                      "pending": int, "soakingUntil": str | null} | null,
            "state": {"reason": str, "text": str},
            "invalidAnnotations": [str],
            "newestRevision": str | null, "newestRevisionCreated": str | null,
            "complete": bool}]}
```
`state.reason` is the phase as a condition reason (`Complete`, `Rolling`, `WaitingForOfflineNodes`,
`Held`, `Paused`, `MaintenanceWindowClosed`, `RolloutFailed`, `ProgressDeadlineExceeded`,
`InvalidAnnotation`); `newestRevisionCreated` is RFC 3339. `list --watch -o json` prints one item
document per row instead of the list.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import orjson

from edgerollout.cli.status_render import COLUMN_GAP, batch_document
from edgerollout.domain.reporting.rollout_phase import RolloutCounts, RolloutPhase
from edgerollout.domain.reporting.rollout_status import RolloutStatus
from edgerollout.domain.timestamps import format_rfc3339

NONE = "<none>"
NOT_COUNTED = "-"
COLUMNS = ["NAME", "STRATEGY", "UPDATED", "OFFLINE", "BROKEN", "HELD", "WAVE", "STATE", "AGE"]
WIDE_COLUMNS = ["MAX-UNAVAILABLE", "BUDGET", "BATCH", "REVISION", "WARNINGS"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ListedStatus:
    """One row's reading: the DaemonSet's rollout status, and when its newest revision was
    created (None: unknown, or no revision)."""

    status: RolloutStatus
    revision_created: datetime | None


@dataclass(frozen=True, slots=True, kw_only=True)
class Layout:
    """Which columns a table has: NAMESPACE with `-A`, the wide ones with `-o wide`."""

    all_namespaces: bool = False
    wide: bool = False

    def header(self) -> list[str]:
        return self._around(COLUMNS, WIDE_COLUMNS, "NAMESPACE")

    def cells(self, listed: ListedStatus, *, now: datetime) -> list[str]:
        """The row of `listed` at `now` (the AGE cell last of the narrow ones)."""
        status = listed.status
        counts = status.counts
        strategy = status.strategy
        narrow = [
            status.daemonset,
            NONE if strategy.strategy is None else str(strategy.strategy),
            *_counted(counts),
            NONE if status.wave is None else str(status.wave),
            _phase(status.phase).text,
            NONE if listed.revision_created is None else age(now - listed.revision_created),
        ]
        wide = [
            strategy.max_unavailable or NONE,
            NONE if strategy.budget is None else str(strategy.budget),
            NONE if status.batch is None else f"{status.batch.index + 1}/{status.batch.count}",
            status.newest_revision or NONE,
            ",".join(status.unfollowed) or NONE,
        ]
        return self._around(narrow, wide, status.namespace)

    def without_age(self, cells: Sequence[str]) -> tuple[str, ...]:
        """A row's cells but its AGE: what a watch compares to tell a changed row (an age
        changes by itself)."""
        at = len(COLUMNS) - 1 + (1 if self.all_namespaces else 0)
        return (*cells[:at], *cells[at + 1 :])

    def _around(self, narrow: list[str], wide: list[str], namespace: str) -> list[str]:
        cells = [namespace] if self.all_namespaces else []
        return cells + narrow + (wide if self.wide else [])


def _counted(counts: RolloutCounts | None) -> list[str]:
    """The UPDATED, OFFLINE, BROKEN and HELD cells (`-` when the nodes were not counted: the
    controller stops before judging them while an annotation cannot be followed)."""
    if counts is None:
        return [NOT_COUNTED] * 4
    return [
        f"{counts.updated}/{counts.total}",
        str(counts.offline),
        str(counts.broken),
        str(counts.held),
    ]


def render_table(listed: Iterable[ListedStatus], *, layout: Layout, now: datetime) -> str:
    """The header and one row per DaemonSet, aligned as kubectl aligns them."""
    rows = [layout.header(), *(layout.cells(item, now=now) for item in listed)]
    widths = column_widths(rows)
    return "".join(aligned(row, widths) + "\n" for row in rows)


def column_widths(rows: Iterable[Sequence[str]]) -> list[int]:
    """The widest cell of each column."""
    widths: list[int] = []
    for row in rows:
        for i, cell in enumerate(row):
            if i == len(widths):
                widths.append(len(cell))
            else:
                widths[i] = max(widths[i], len(cell))
    return widths


def aligned(row: Sequence[str], widths: Sequence[int]) -> str:
    """A row with each cell but the last padded to its column's width plus kubectl's gap."""
    last = len(row) - 1
    return "".join(
        cell if i == last else cell.ljust(widths[i] + COLUMN_GAP) for i, cell in enumerate(row)
    ).rstrip()


def no_resources(namespace: str | None) -> str:
    """What kubectl says when a namespace (None: all) holds nothing to list."""
    if namespace is None:
        return "No resources found"
    return f"No resources found in {namespace} namespace."


def item_document(listed: ListedStatus) -> dict[str, Any]:
    """One DaemonSet as an item of the JSON document described in the module docstring."""
    status = listed.status
    counts = status.counts
    strategy = status.strategy
    phase = _phase(status.phase)
    wave = status.wave
    return {
        "namespace": status.namespace,
        "name": status.daemonset,
        "strategy": None if strategy.strategy is None else str(strategy.strategy),
        "maxUnavailable": strategy.max_unavailable,
        "budget": strategy.budget,
        "updated": None if counts is None else counts.updated,
        "total": None if counts is None else counts.total,
        "offline": None if counts is None else counts.offline,
        "broken": None if counts is None else counts.broken,
        "held": None if counts is None else counts.held,
        "wave": None
        if wave is None
        else {"name": wave.name, "index": wave.index, "count": wave.count, "pending": wave.pending},
        "batch": batch_document(status.batch),
        "state": {"reason": phase.value, "text": phase.text},
        "invalidAnnotations": list(status.unfollowed),
        "newestRevision": status.newest_revision,
        "newestRevisionCreated": None
        if listed.revision_created is None
        else format_rfc3339(listed.revision_created),
        "complete": status.complete,
    }


def render_json(listed: Iterable[ListedStatus]) -> str:
    """The JSON document, indented by two spaces, ending with a newline."""
    return _dumps({"items": [item_document(item) for item in listed]})


def render_item_json(listed: ListedStatus) -> str:
    """One item document, as `list --watch -o json` prints each row."""
    return _dumps(item_document(listed))


def _dumps(document: dict[str, Any]) -> str:
    return orjson.dumps(document, option=orjson.OPT_INDENT_2).decode() + "\n"


def _phase(phase: RolloutPhase | None) -> RolloutPhase:
    # Only opted-in DaemonSets are listed, and every one of them has a phase.
    return RolloutPhase.INVALID_ANNOTATION if phase is None else phase


def age(elapsed: timedelta) -> str:
    """`elapsed` as kubectl writes an age (apimachinery's `duration.HumanDuration`):
    `45s`, `5m30s`, `3h20m`, `2d5h`, `3y14d`; `<invalid>` more than a second in the future."""
    seconds = int(elapsed.total_seconds())
    if seconds < -1:
        return "<invalid>"
    if seconds < 0:
        return "0s"
    if seconds < 60 * 2:
        return f"{seconds}s"
    minutes = seconds // 60
    if minutes < 10:
        return _two(minutes, "m", seconds % 60, "s")
    if minutes < 60 * 3:
        return f"{minutes}m"
    hours = minutes // 60
    if hours < 8:
        return _two(hours, "h", minutes % 60, "m")
    if hours < 48:
        return f"{hours}h"
    days = hours // 24
    if hours < 24 * 8:
        return _two(days, "d", hours % 24, "h")
    if hours < 24 * 365 * 2:
        return f"{days}d"
    years = days // 365
    if hours < 24 * 365 * 8:
        return _two(years, "y", days % 365, "d")
    return f"{years}y"


def _two(big: int, big_unit: str, small: int, small_unit: str) -> str:
    return f"{big}{big_unit}" if small == 0 else f"{big}{big_unit}{small}{small_unit}"
