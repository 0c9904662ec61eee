"""The product's planner called as one function: a fresh `RolloutBook`, refreshed, then planned.

Tests of the planning rules state a whole cluster at once; this is how they ask the book (the one
planner of both strategies) for its plan of it.
"""

from collections.abc import Iterable
from datetime import datetime, timedelta

from edgerollout.domain.model import InFlightDeletion, NodeName, NodeReadiness, NodeView, PodView
from edgerollout.domain.planning.revisions import TargetRevision
from edgerollout.domain.planning.rollout_book import RolloutBook
from edgerollout.domain.planning.verdicts import DeletionPlan, Labels, no_labels
from edgerollout.domain.spec.staging import NOT_STAGED, Staging


def plan_deletions(
    *,
    pods: Iterable[PodView],
    nodes: Iterable[NodeView],
    target: TargetRevision,
    max_unavailable: int,
    min_ready_seconds: int,
    now: datetime,
    in_flight: Iterable[InFlightDeletion] = (),
    desired_nodes: int | None = None,
    counted_while_not_ready: frozenset[NodeReadiness] = frozenset(),
    staging: Staging = NOT_STAGED,
    labels: Labels = no_labels,
    progress_deadline: timedelta | None = None,
) -> DeletionPlan:
    """The book's plan for this cluster, judged from nothing (see `planner` for the rules)."""
    by_node: dict[NodeName, list[PodView]] = {}
    for pod in pods:
        if pod.node_name is not None:
            by_node.setdefault(pod.node_name, []).append(pod)
    book = RolloutBook()
    book.refresh(
        target=target,
        min_ready_seconds=min_ready_seconds,
        now=now,
        pods_by_node=by_node,
        readiness={node.name: node.readiness for node in nodes},
        in_flight=in_flight,
        progress_deadline=progress_deadline,
    )
    return book.plan(
        max_unavailable=max_unavailable,
        desired_nodes=desired_nodes,
        counted_while_not_ready=counted_while_not_ready,
        staging=staging,
        labels=labels,
    )
