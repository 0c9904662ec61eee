"""Where a rollout's nodes stand, for the `edgerollout_nodes` gauge: from the plan's counts of
each verdict, with the nodes a staged rollout holds counted as held."""

from edgerollout.domain.model import NodeName
from edgerollout.domain.planning.holds import Hold, HoldReason, Holds
from edgerollout.domain.planning.verdicts import DeletionPlan, NodeVerdict
from edgerollout.domain.reporting.node_states import NodeState, node_state_counts

VERDICTS = {
    NodeName("a"): NodeVerdict.UP_TO_DATE,
    NodeName("b"): NodeVerdict.STARTING,
    NodeName("c"): NodeVerdict.BROKEN,
    NodeName("d"): NodeVerdict.OUTDATED,
    NodeName("e"): NodeVerdict.OUTDATED,
    NodeName("f"): NodeVerdict.OUTDATED_UNAVAILABLE,
    NodeName("g"): NodeVerdict.EMPTY,
}
# Held: one outdated node, and an updated and a broken one (which stay where they are).
HOLDS = Holds(
    held={
        NodeName(name): Hold(reason=HoldReason.PARTITION) for name in ("a", "c", "e", "not-judged")
    }
)
EXPECTED = {
    NodeState.UPDATED: 1,
    NodeState.STARTING: 1,
    NodeState.BROKEN: 1,
    NodeState.OFFLINE: 2,
    NodeState.HELD: 1,
    NodeState.OUTDATED: 2,
    NodeState.REPLACING: 1,
}


def _plan(*, counted: bool) -> DeletionPlan:
    counts: dict[NodeVerdict, int] = {}
    for verdict in VERDICTS.values():
        counts[verdict] = counts.get(verdict, 0) + 1
    return DeletionPlan(
        deletions=(),
        max_unavailable=1,
        unavailable=0,
        verdicts=VERDICTS,
        skipped_nodes=(NodeName("x"), NodeName("y")),
        holds=HOLDS,
        verdict_counts=counts if counted else None,
    )


def test_states_come_from_the_counts_with_held_outdated_nodes_as_held() -> None:
    assert node_state_counts(_plan(counted=True)) == EXPECTED


def test_a_plan_without_counts_is_counted_from_its_verdicts_alike() -> None:
    assert node_state_counts(_plan(counted=False)) == EXPECTED
    assert _plan(counted=False) == _plan(counted=True)
