"""How many times each chaos scenario runs, from which seed, and where a long run's results go.

Without `--reliability-long` (as in `./dev test`) every scenario runs once, from the seed given
(default 1). With it, `--reliability-runs` runs each (default 5), and at the end of the session
the results are saved to docs/reliability-results.json and the table in docs/reliability.md is
written from them.
"""

from __future__ import annotations

import datetime
import platform
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import psutil
import pytest

from tests.e2e.support.chaos import results
from tests.e2e.support.chaos.harness import BUDGET, MIN_READY_SECONDS
from tests.e2e.support.chaos.scenarios import SCENARIOS

LONG_RUNS = 5


@dataclass
class Plan:
    long: bool
    runs: int
    seed: int
    recorded: list[dict[str, Any]] = field(default_factory=list)

    def seeds(self) -> range:
        return range(self.seed, self.seed + self.runs)


@pytest.fixture(scope="session")
def reliability(request: pytest.FixtureRequest) -> Iterator[Plan]:
    long = bool(request.config.getoption("--reliability-long"))
    runs = request.config.getoption("--reliability-runs") or (LONG_RUNS if long else 1)
    plan = Plan(long=long, runs=int(runs), seed=int(request.config.getoption("--reliability-seed")))
    yield plan
    if long and plan.recorded:
        titles = {scenario.id: scenario.title for scenario in SCENARIOS}
        settings = {
            "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d"),
            "runs_per_scenario": plan.runs,
            "first_seed": plan.seed,
            "lab_nodes": 6,
            "max_unavailable": BUDGET,
            "min_ready_seconds": MIN_READY_SECONDS,
            "machine": f"{psutil.cpu_count()} CPU, {platform.system()} {platform.machine()}",
        }
        # Scenarios run now replace their earlier results; the others' are kept.
        rerun = {run["scenario"] for run in plan.recorded}
        runs = [r for r in results.load(results.RESULTS_JSON) if r["scenario"] not in rerun]
        runs += plan.recorded
        results.save(runs, settings, results.RESULTS_JSON)
        total = sum(len(run["violations"]) for run in runs)
        summary = (
            f"Last long run: {settings['date']}, {plan.runs} run(s) per scenario from seed "
            f"{plan.seed}, a {settings['lab_nodes']}-node lab, max-unavailable {BUDGET}, "
            f"minReadySeconds {MIN_READY_SECONDS}; {len(runs)} runs, {total} violation(s)."
        )
        results.write_page(results.PAGE, results.render_table(runs, titles), summary)
