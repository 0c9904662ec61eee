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
    held = rollout.holds.held
    for node, verdict in rollout.verdicts.items():
        if verdict is NodeVerdict.UP_TO_DATE:
            counts[NodeState.UPDATED] += 1
        elif verdict is NodeVerdict.STARTING:
            counts[NodeState.STARTING] += 1
        elif verdict is NodeVerdict.BROKEN:
            counts[NodeState.BROKEN] += 1
        elif node in held:
            counts[NodeState.HELD] += 1
        else:
            counts[_STATE_OF.get(verdict, NodeState.OUTDATED)] += 1
    return counts


_STATE_OF = {
    NodeVerdict.EMPTY: NodeState.REPLACING,
    NodeVerdict.OLD_AND_NEW: NodeState.REPLACING,
    NodeVerdict.EXCESS: NodeState.REPLACING,
}
