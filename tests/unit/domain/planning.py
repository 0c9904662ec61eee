"""The product's planner called as one function: a fresh `RolloutBook`, refreshed, then planned.

Tests of the planning rules state a whole cluster at once; this is how they ask the book (the one
planner of both strategies) for its plan of it.
"""

from edgerollout.domain.model import InFlight, NodeName, PodView
from edgerollout.domain.planning.rollout_book import RolloutBook
from edgerollout.domain.planning.verdicts import DeletionPlan

from .builders import PlanInputs


def plan_deletions(cluster: PlanInputs) -> DeletionPlan:
    """The book's plan for this cluster, judged from nothing (see `planner` for the rules)."""
    by_node: dict[NodeName, list[PodView]] = {}
    for pod in cluster.pods:
        if pod.node_name is not None:
            by_node.setdefault(pod.node_name, []).append(pod)
    book = RolloutBook()
    book.refresh(
        target=cluster.target,
        min_ready_seconds=cluster.min_ready_seconds,
        now=cluster.now,
        pods_by_node=by_node,
        readiness={node.name: node.readiness for node in cluster.nodes},
        in_flight=InFlight.of(cluster.in_flight),
        progress_deadline=cluster.progress_deadline,
    )
    return book.plan(
        max_unavailable=cluster.max_unavailable,
        desired_nodes=cluster.desired_nodes,
        counted_while_not_ready=cluster.counted_while_not_ready,
        staging=cluster.staging,
        labels=cluster.labels,
    )
