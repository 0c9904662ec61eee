"""How many nodes of a rollout stand where: the states the controller's metrics count.

A broken upgrade and an offline node are told apart (design §13): the gauge
`edgerollout_rollout_nodes{state=...}` is set from `node_state_counts` after every plan.
"""

from enum import StrEnum

from edgerollout.domain.planning.verdicts import DeletionPlan, NodeVerdict


class NodeState(StrEnum):
    """Where a node of an AdvancedRollingUpdate stands, for the `edgerollout_nodes` metric."""

    UPDATED = "updated"
    STARTING = "starting"
    BROKEN = "broken"
    OFFLINE = "offline"
    HELD = "held"
    OUTDATED = "outdated"
    REPLACING = "replacing"


def node_state_counts(rollout: DeletionPlan) -> dict[NodeState, int]:
    """How many nodes of a plan stand where (every state present, 0 included): a broken upgrade
    and an offline node are told apart (design §13)."""
    counts = dict.fromkeys(NodeState, 0)
    counts[NodeState.OFFLINE] = len(rollout.skipped_nodes)
    # From the plan's count of each verdict, then the held nodes moved to HELD: this runs after
    # every plan, and a loop over every node's verdict cost what the plan itself did.
    for verdict, count in rollout.counted.items():
        counts[_state_of(verdict)] += count
    verdicts = rollout.verdicts
    for node in rollout.holds.held:
        held = verdicts.get(node)
        if held is None or held in _NEVER_HELD:
            continue
        counts[_state_of(held)] -= 1
        counts[NodeState.HELD] += 1
    return counts


# A node in these states counts there whether or not a staged rollout holds it.
_NEVER_HELD = frozenset({NodeVerdict.UP_TO_DATE, NodeVerdict.STARTING, NodeVerdict.BROKEN})


def _state_of(verdict: NodeVerdict) -> NodeState:
    if verdict is NodeVerdict.UP_TO_DATE:
        return NodeState.UPDATED
    if verdict is NodeVerdict.STARTING:
        return NodeState.STARTING
    if verdict is NodeVerdict.BROKEN:
        return NodeState.BROKEN
    return _STATE_OF.get(verdict, NodeState.OUTDATED)


_STATE_OF = {
    NodeVerdict.EMPTY: NodeState.REPLACING,
    NodeVerdict.OLD_AND_NEW: NodeState.REPLACING,
    NodeVerdict.EXCESS: NodeState.REPLACING,
}
