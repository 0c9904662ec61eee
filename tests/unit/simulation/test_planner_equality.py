"""Every deletion the simulation makes is the planner's, and its incremental plans are the plans
a fresh planner makes of the same snapshot.

At each plan of a simulated rollout (small fleets with outages, flapping and crash-looping nodes,
over several seeds) the snapshot is copied as it stood; the plan made with the simulation's book,
told only the nodes that changed, must equal `plan(snapshot, RolloutBook())`, and the deletions
the simulator carried out must be exactly that plan's. So the simulator holds no rule of its own,
and it tells the book every node that changed.
"""

from dataclasses import dataclass, field, replace

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from edgerollout.domain.planning.decision import Plan, Snapshot
from edgerollout.domain.planning.reconcile import plan
from edgerollout.domain.planning.rollout_book import RolloutBook
from edgerollout.domain.planning.verdicts import Deletion
from edgerollout.simulation.engine import Rollout, simulate
from edgerollout.simulation.fleet import read_fleet
from tests.unit.simulation.scenarios import rollout


@dataclass
class Referee:
    """Plans each snapshot afresh and compares; counts what it saw."""

    plans: int = 0
    deletions: int = 0
    mismatches: list[str] = field(default_factory=list)
    expected: tuple[Deletion, ...] = ()

    def planned(self, snapshot: Snapshot, decided: Plan) -> None:
        frozen = replace(
            snapshot,
            pods=[pod for pods in snapshot.pods_by_node.values() for pod in pods],
            pods_by_node={node: tuple(pods) for node, pods in snapshot.pods_by_node.items()},
            readiness=dict(snapshot.readiness),
            node_labels=dict(snapshot.node_labels),
            changed_nodes=frozenset(),
        )
        fresh = plan(frozen, RolloutBook())
        self.plans += 1
        if fresh != decided:
            self.mismatches.append(f"at {snapshot.now}: {fresh} != {decided}")
        self.expected = fresh.deletions

    def carried_out(self, deletions: tuple[Deletion, ...]) -> None:
        self.deletions += len(deletions)
        if deletions != self.expected:
            self.mismatches.append(f"carried out {deletions}, planned {self.expected}")


def _fleet(seed: int, nodes: int) -> dict[str, object]:
    return {
        "nodes": nodes,
        "seed": seed,
        "horizon": "4h",
        "sample_every": "30m",
        "image_size": "50MB",
        "crash_loop": 0.05,
        "always_offline": 0.05,
        "flapping": {"fraction": 0.2, "online": "20m", "offline": "3m"},
        "pools": [
            {
                "name": "fast",
                "link_rate": "20Mbit/s",
                "outages": {"fraction": 0.3, "duration": "2h"},
            },
            {
                "name": "slow",
                "link_rate": "1Mbit/s",
                "outages": {"fraction": 0.5, "duration": "30m"},
            },
        ],
    }


def _referee(subject: Rollout, seed: int, nodes: int) -> Referee:
    referee = Referee()
    simulate(subject, read_fleet(_fleet(seed, nodes)), observe=referee)
    return referee


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(min_value=0, max_value=2**32),
    nodes=st.integers(min_value=20, max_value=50),
    budget=st.sampled_from(["1", "3", "20%"]),
)
def test_the_simulated_rollout_is_the_planners(seed: int, nodes: int, budget: str) -> None:
    referee = _referee(rollout(max_unavailable=budget), seed, nodes)
    assert referee.mismatches == []
    assert referee.plans > 0


def test_a_staged_rollout_is_the_planners_too() -> None:
    staged = rollout(
        max_unavailable="2",
        annotations={
            "edgerollout.io/waves": "slow, *",
            "edgerollout.io/max-failed": "3",
            "edgerollout.io/progress-deadline-seconds": "300",
        },
    )
    referee = _referee(staged, seed=3, nodes=40)
    assert referee.mismatches == []
    assert referee.deletions > 0
