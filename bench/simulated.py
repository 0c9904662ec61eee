"""The bench's rollouts, simulated with the stage latencies the lab measured (docs/scale.md).

`python -m bench.simulated RESULTS.json` reads a results file of `./dev bench` and, for each
rollout edgerollout made in it (scenario 1, `rolling`; scenario 2, `disconnected`, until every
connected node is updated), runs `edgerollout simulate` on a fleet built from what the lab measured
in that run: the same nodes and budget, the nodes cut as nodes never online, and each pod's stages
drawn with the medians and 90th percentiles of the lab's (deletion to gone: `termination`; gone to
re-created: `recreate`; re-created to bound to Ready: `container_start`), the image already on
every node (the lab's pods pull nothing), and the planner asked again as soon after a replacement
turns Ready as the lab's controller used a freed slot (median). It prints the measured and the
simulated times side by side: how far the simulator, which knows no CPU and no API server, is from
a real rollout on the lab.

The simulation starts at the controller's first plan; the lab's time starts at the DaemonSet's
change, and its first deletion came `first_deletion` later (the new ControllerRevision, the
watch, the first plan): that delay is added to the simulated time.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from edgerollout.domain.model import DaemonSetUID, DaemonSetView
from edgerollout.domain.vocabulary import (
    ADVANCED_ROLLING_UPDATE,
    MAX_UNAVAILABLE_ANNOTATION,
    ON_DELETE,
    UPDATE_STRATEGY_ANNOTATION,
)
from edgerollout.simulation.engine import Rollout, simulate
from edgerollout.simulation.fleet import Fleet, Latency

# Within this much of the measured time, the simulator is taken as a fair what-if for the lab.
TOLERANCE = 0.15


@dataclass(frozen=True, slots=True)
class Comparison:
    scenario: str
    nodes: int
    updated: int
    measured_seconds: float
    simulated_seconds: float | None

    @property
    def ratio(self) -> float | None:
        if self.simulated_seconds is None:
            return None
        return round(self.simulated_seconds / self.measured_seconds, 3)


def latency(*stages: dict[str, float]) -> Latency:
    """One simulated stage from one or more measured ones in a row: the medians add up; the
    spreads above them add as independent ones do (root of the sum of squares)."""
    median = sum(stage["median"] for stage in stages)
    spread = math.sqrt(sum((stage["p90"] - stage["median"]) ** 2 for stage in stages))
    return Latency(round(median, 6), round(median + spread, 6))


def lab_fleet(replacements: dict[str, Any], *, nodes: int, cut: int = 0, seed: int = 0) -> Fleet:
    """The fleet of one measured rollout: its stages (`replacements`, as bench/stages.py sums them
    up), `nodes` nodes of which `cut` are never online."""
    stages = replacements["stages_seconds"]
    reuse = replacements.get("slot_reuse_seconds", {}).get("median", 0.0)
    return Fleet(
        nodes=nodes,
        seed=seed,
        horizon=3600.0,
        sample_every=1.0,
        image_size=0.0,
        termination=latency(stages["deleting_to_gone"]),
        recreate=latency(stages["gone_to_created"]),
        container_start=latency(stages["created_to_bound"], stages["bound_to_ready"]),
        reconcile_delay=max(reuse, 0.0),
        always_offline=cut / nodes if nodes else 0.0,
    )


def lab_rollout(percent: str) -> Rollout:
    """The bench's AdvancedRollingUpdate DaemonSet, at `percent` max-unavailable."""
    return Rollout(
        daemonset=DaemonSetView(
            namespace="bench",
            name="edgerollout",
            uid=DaemonSetUID("bench"),
            annotations={
                UPDATE_STRATEGY_ANNOTATION: ADVANCED_ROLLING_UPDATE,
                MAX_UNAVAILABLE_ANNOTATION: percent,
            },
            update_strategy_type=ON_DELETE,
        )
    )


def _simulated(
    replacements: dict[str, Any], *, nodes: int, cut: int, percent: str, seed: int
) -> tuple[int, float | None]:
    """How many nodes the simulation updates, and when the last of them (with the lab's delay
    to its first deletion added)."""
    fleet = lab_fleet(replacements, nodes=nodes, cut=cut, seed=seed)
    outcome = simulate(lab_rollout(percent), fleet)
    last = outcome.time_to["100"]
    updated = nodes - outcome.never_updated
    if last is None:
        return updated, None
    return updated, round(last + replacements.get("first_deletion", 0.0), 3)


def compare(results: dict[str, Any], *, seed: int = 0) -> list[Comparison]:
    """Each of edgerollout's rollouts in a results file, measured and simulated."""
    scenarios = results["scenarios"]
    rolling = scenarios.get("rolling")
    rows: list[Comparison] = []
    if rolling is not None:
        ours = rolling["edgerollout"]
        percent = rolling["max_unavailable"]
        updated, simulated = _simulated(
            ours["replacements"], nodes=rolling["nodes"], cut=0, percent=percent, seed=seed
        )
        rows.append(Comparison("rolling", rolling["nodes"], updated, ours["seconds"], simulated))
    disconnected = scenarios.get("disconnected")
    if disconnected is not None:
        ours = disconnected["edgerollout"]
        # Runs before the connected nodes' stages were kept take those of scenario 1.
        replacements = ours.get("connected_replacements")
        if replacements is None and rolling is not None:
            replacements = rolling["edgerollout"]["replacements"]
        if replacements is not None:
            percent = rolling["max_unavailable"] if rolling is not None else "10%"
            nodes, cut = disconnected["nodes"], disconnected["disconnected"]
            updated, simulated = _simulated(
                replacements, nodes=nodes, cut=cut, percent=percent, seed=seed
            )
            rows.append(
                Comparison("disconnected", nodes, updated, ours["connected_seconds"], simulated)
            )
    return rows


def table(rows: list[Comparison]) -> str:
    lines = ["scenario       nodes  updated  measured  simulated  ratio"]
    for row in rows:
        simulated = "never" if row.simulated_seconds is None else f"{row.simulated_seconds:.1f} s"
        ratio = "-" if row.ratio is None else f"{row.ratio:.2f}x"
        lines.append(
            f"{row.scenario:<13} {row.nodes:>6} {row.updated:>8} "
            f"{row.measured_seconds:>7.1f} s {simulated:>10} {ratio:>6}"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.simulated",
        description="Simulate the rollouts of a bench results file with the stages it measured.",
    )
    parser.add_argument("results", type=Path, help="a results file of ./dev bench")
    parser.add_argument("--seed", type=int, default=0, help="the simulation's seed")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    options = parser.parse_args(argv)
    try:
        results = json.loads(options.results.read_text())
    except (OSError, ValueError) as error:
        print(f"cannot read {options.results}: {error}", file=sys.stderr)
        return 2
    rows = compare(results, seed=options.seed)
    if not rows:
        print(f"{options.results}: no rollout of edgerollout to simulate", file=sys.stderr)
        return 1
    if options.json:
        print(
            json.dumps(
                [
                    {
                        "scenario": row.scenario,
                        "nodes": row.nodes,
                        "updated": row.updated,
                        "measured_seconds": row.measured_seconds,
                        "simulated_seconds": row.simulated_seconds,
                        "ratio": row.ratio,
                    }
                    for row in rows
                ],
                indent=2,
            )
        )
    else:
        print(table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
