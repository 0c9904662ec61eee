"""The planner restated as one pass over every node: the oracle `RolloutBook` is checked against.

The product plans with a `RolloutBook` only, which judges again only what changed; this function
judges everything each time, the simplest reading of the rules in `edgerollout.domain.planning.verdicts`'s
docstring. `test_rollout_book` checks that both give the same plan over random histories.
"""

from collections.abc import Iterable, Sequence

from edgerollout.domain.model import InFlightDeletion, NodeName, NodeReadiness, PodView
from edgerollout.domain.planning.health import Broken
from edgerollout.domain.planning.holds import hold_nodes
from edgerollout.domain.planning.verdicts import (
    HOLDING_AN_OLD_POD,
    Deletion,
    DeletionPlan,
    DeletionReason,
    NodeVerdict,
    deletion_of,
    judge_node,
    shortfall,
)

from .builders import PlanInputs


def full_plan_deletions(cluster: PlanInputs) -> DeletionPlan:
    """Choose the pods to delete now (see the module docstring for the rules).

    `desired_nodes` is how many nodes the native controller says should run the DaemonSet
    (`status.desiredNumberScheduled`; it leaves out nodes tainted unreachable or not-ready). Ready
    nodes it counts that hold no pod at all — a pod deleted and not yet replaced, a node that just
    joined — are invisible in `pods`; every such node short of `desired_nodes` counts as
    unavailable. A stale count can only make the budget tighter, never looser. A skipped node
    whose readiness is in `counted_while_not_ready` is in that count too, holding its pod: it is
    not short (a DaemonSet that tolerates every taint would otherwise have each offline node
    count against its budget).

    The result depends only on the arguments, not on their order: nodes are visited by name, and
    the deletions come out ordered by node name, then pod name. `staging` and the nodes' `labels`
    say which nodes are held (see `staging.hold_nodes`).
    """
    readiness = {node.name: node.readiness for node in cluster.nodes}
    in_flight = tuple(cluster.in_flight)
    pods_by_node = _pods_by_node(cluster.pods, in_flight)
    target, max_unavailable, now = cluster.target, cluster.max_unavailable, cluster.now
    ready, missing = NodeReadiness.READY, NodeReadiness.MISSING
    names = sorted(pods_by_node)
    skipped = tuple(name for name in names if readiness.get(name, missing) is not ready)
    if not target.known:
        return DeletionPlan.newest_unknown(max_unavailable=max_unavailable, skipped_nodes=skipped)

    being_deleted = {deletion.uid for deletion in in_flight}
    verdicts: dict[NodeName, NodeVerdict] = {}
    broken: dict[NodeName, Broken] = {}
    replacements: list[Deletion] = []
    candidates: list[tuple[PodView, NodeName]] = []
    unavailable = 0
    skip = set(skipped)
    for name in names:
        if name in skip:
            continue
        held = pods_by_node[name]
        if len(held) == 1 and not held[0].deleting and held[0].uid not in being_deleted:
            live: Sequence[PodView] = held  # the common case: one pod, not going away
        else:
            live = [pod for pod in held if not pod.deleting and pod.uid not in being_deleted]
        verdict, outdated, failing = judge_node(
            live,
            target,
            cluster.min_ready_seconds,
            now,
            progress_deadline=cluster.progress_deadline,
        )
        verdicts[name] = verdict
        if failing is not None:
            broken[name] = failing
        if verdict.unavailable:
            unavailable += 1
        if outdated is None:
            continue
        if verdict is NodeVerdict.OUTDATED_UNAVAILABLE:
            replacements.append(deletion_of(outdated, name, DeletionReason.OUTDATED_UNAVAILABLE))
        else:
            candidates.append((outdated, name))

    if cluster.desired_nodes is not None:
        tolerated = cluster.counted_while_not_ready
        counted = sum(1 for name in skipped if readiness.get(name, missing) in tolerated)
        unavailable += shortfall(
            cluster.desired_nodes, judged=len(verdicts), counted_skipped=counted
        )
    room = max(0, max_unavailable - unavailable)
    holds = hold_nodes(
        cluster.staging,
        nodes=names,
        labels=cluster.labels,
        done=lambda name: verdicts.get(name) is NodeVerdict.UP_TO_DATE,
        ready=lambda name: name in verdicts,
        outdated=lambda name: verdicts.get(name) in HOLDING_AN_OLD_POD,
    )
    if holds.held:
        replacements = [d for d in replacements if d.node_name not in holds.held]
        candidates = [(pod, name) for pod, name in candidates if name not in holds.held]
    candidates.sort(key=lambda candidate: holds.order(candidate[1]))
    chosen = replacements + [
        deletion_of(pod, name, DeletionReason.OUTDATED_WITHIN_BUDGET)
        for pod, name in candidates[:room]
    ]
    return DeletionPlan(
        deletions=tuple(sorted(chosen, key=lambda d: (d.node_name, d.name, d.uid))),
        max_unavailable=max_unavailable,
        unavailable=unavailable,
        verdicts=verdicts,
        skipped_nodes=skipped,
        holds=holds,
        broken=broken,
    )


def _pods_by_node(
    pods: Iterable[PodView], in_flight: Sequence[InFlightDeletion]
) -> dict[NodeName, list[PodView]]:
    by_node: dict[NodeName, list[PodView]] = {}
    for pod in pods:
        node_name = pod.node_name
        if node_name is not None:
            held = by_node.get(node_name)
            if held is None:
                by_node[node_name] = [pod]
            else:
                held.append(pod)
    for deletion in in_flight:
        # The node of a deletion is considered even when its pod is gone from the cache.
        by_node.setdefault(deletion.node_name, [])
    return by_node


def oracle_budget_base(
    pods: Iterable[PodView],
    *,
    in_flight: Iterable[InFlightDeletion] = (),
    desired_nodes: int | None = None,
) -> int:
    """The distinct nodes holding at least one pod or the node of a deletion in flight, at least
    `desired_nodes` (design §2.3), counted from every pod."""
    nodes = {pod.node_name for pod in pods if pod.node_name is not None}
    nodes.update(deletion.node_name for deletion in in_flight)
    return max(len(nodes), desired_nodes or 0)
