"""The results of a long reliability run: a JSON file of every run, and the table rendered from it
into docs/reliability.md (between the two marker lines; the rest of the page is left alone)."""

from __future__ import annotations

import json
import statistics
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[4]
RESULTS_JSON = ROOT / "docs" / "reliability-results.json"
PAGE = ROOT / "docs" / "reliability.md"
BEGIN = "<!-- results: begin (written by ./dev reliability) -->"
END = "<!-- results: end -->"


def _seconds(values: list[float]) -> str:
    if not values:
        return "-"
    if len(values) == 1:
        return f"{values[0]:.1f} s"
    return f"median {statistics.median(values):.1f} s, max {max(values):.1f} s"


def _recovery(entries: list[Mapping[str, Any]], key: str) -> str:
    values = [
        float(run["recovery"][key])
        for run in entries
        if run.get("recovery") and run["recovery"].get(key) is not None
    ]
    return _seconds(values)


def render_table(runs: Iterable[Mapping[str, Any]], titles: Mapping[str, str]) -> str:
    """One row per scenario: runs, violations, time to converge after the faults stop; and for
    a control-plane outage, from the moment it ended: edgerollout's own part (to its first
    deletion that the cluster allowed), its convergence and the native reference's."""
    by_scenario: dict[str, list[Mapping[str, Any]]] = {}
    for run in runs:
        by_scenario.setdefault(str(run["scenario"]), []).append(run)
    lines = [
        "| scenario | runs | violations | converged | time to converge after the faults stop "
        "| after the outage: edgerollout's own part | converged | native reference converged |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for scenario in [s for s in titles if s in by_scenario]:
        entries = by_scenario[scenario]
        violations = sum(len(run["violations"]) for run in entries)
        times = [float(r["converge_seconds"]) for r in entries if r["converge_seconds"] is not None]
        lines.append(
            f"| `{scenario}`: {titles[scenario]} | {len(entries)} | {violations} | "
            f"{len(times)}/{len(entries)} | {_seconds(times)} | "
            f"{_recovery(entries, 'own_part')} | {_recovery(entries, 'converged')} | "
            f"{_recovery(entries, 'native_converged')} |"
        )
    return "\n".join(lines)


def write_page(page: Path, table: str, summary: str) -> None:
    """Replace what stands between the markers with the summary line and the table."""
    text = page.read_text()
    head, found, rest = text.partition(BEGIN)
    _, found_end, tail = rest.partition(END)
    if not (found and found_end):
        raise ValueError(f"{page} lacks the markers {BEGIN!r} and {END!r}")
    page.write_text(f"{head}{BEGIN}\n{summary}\n\n{table}\n{END}{tail}")


def save(runs: Sequence[Mapping[str, Any]], settings: Mapping[str, Any], path: Path) -> None:
    path.write_text(json.dumps({"settings": settings, "runs": runs}, indent=2) + "\n")


def load(path: Path) -> list[dict[str, Any]]:
    """The runs saved by an earlier long run (none if there is no file)."""
    if not path.exists():
        return []
    runs: list[dict[str, Any]] = json.loads(path.read_text())["runs"]
    return runs
