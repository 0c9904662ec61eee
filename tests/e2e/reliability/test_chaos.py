"""edgerollout keeps its promises under faults (chaos scenarios, each seeded and repeated).

Each run is judged by `InvariantWatcher`, which shares no code with the controller: no deletion
beyond max-unavailable, none on a NotReady node, none without a UID precondition, none twice and
none the rules do not pick, none while the DaemonSet is paused or on a node its partition holds,
none of a pod its node holds, none of a batch before the earlier ones are done;
no controller exit it was not asked for; and once the faults stop, the rollout finishes (one Ready
pod of the newest template on every node).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.reliability.conftest import Plan
from tests.e2e.support.chaos.harness import RunResult, Scenario, run_scenario
from tests.e2e.support.chaos.scenarios import SCENARIOS
from tests.e2e.support.lab import LabHandle

NODES = 6

pytestmark = pytest.mark.lab(nodes=NODES)


@pytest.mark.timeout(3600)
@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.id for s in SCENARIOS])
async def test_rollout_keeps_its_promises_under_faults(
    kube: LabHandle, scenario: Scenario, reliability: Plan, tmp_path: Path
) -> None:
    outcomes: list[RunResult] = []
    for seed in reliability.seeds():
        result = await run_scenario(
            kube, scenario, seed=seed, long=reliability.long, folder=tmp_path / f"seed-{seed}"
        )
        outcomes.append(result)
        reliability.recorded.append(result.as_json())
        print(
            f"{scenario.id} seed {seed}: {len(result.violations)} violation(s), converged in "
            f"{result.converge_seconds} s, {result.deletions} deletion(s), peak unavailable "
            f"{result.peak_unavailable} ({result.peak_detail}); {'; '.join(result.notes)}"
        )
        if result.recovery_text:
            print(result.recovery_text)
    failed = [r for r in outcomes if r.violations]
    assert not failed, "\n\n".join(
        f"seed {r.seed} (rerun: --reliability-seed {r.seed} --reliability-runs 1 -k {scenario.id}):"
        f"\n{r.report}"
        for r in failed
    )
    assert all(r.converge_seconds is not None for r in outcomes)
    assert all(r.deletions > 0 for r in outcomes), "every run deleted pods (the rollout ran)"
