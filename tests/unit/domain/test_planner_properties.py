"""Properties of the planner over random clusters, checked against an independent oracle.

The oracle restates design §4 in the plainest terms: a Ready node is available when exactly one of
its pods is live (not terminating, not being deleted) and that pod is Ready for longer than
minReadySeconds; every other Ready node is unavailable; other nodes do not count.
"""

import random
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from edgerollout.domain.model import (
    DaemonSetView,
    InFlightDeletion,
    NodeName,
    NodeReadiness,
    NodeView,
    PodUID,
    PodView,
)
from edgerollout.domain.planning.decision import Snapshot
from edgerollout.domain.planning.reconcile import plan as plan_reconcile
from edgerollout.domain.planning.rollout_book import RolloutBook
from edgerollout.domain.planning.verdicts import Deletion, DeletionPlan, DeletionReason

from .builders import NEW, NOW, OLD, REVISIONS, PlanInputs, daemonset, snapshot
from .planning import plan_deletions

READY = NodeReadiness.READY


@dataclass(frozen=True)
class Cluster:
    readiness: dict[NodeName, NodeReadiness]
    pods: list[PodView]
    in_flight: list[InFlightDeletion]
    max_unavailable: int
    min_ready_seconds: int

    @property
    def nodes(self) -> list[NodeView]:
        """The Node objects the cache holds: a MISSING node has none."""
        return [
            NodeView(name=name, readiness=readiness)
            for name, readiness in self.readiness.items()
            if readiness is not NodeReadiness.MISSING
        ]

    def plan_inputs(self, **options: Any) -> PlanInputs:
        """The cluster as the planners read it, but for `options` (fields of `PlanInputs`)."""
        read = PlanInputs(
            pods=self.pods,
            nodes=self.nodes,
            max_unavailable=self.max_unavailable,
            min_ready_seconds=self.min_ready_seconds,
            in_flight=self.in_flight,
        )
        return replace(read, **options)


@st.composite
def pods_on(draw: st.DrawFn, node_name: NodeName) -> list[PodView]:
    count = draw(st.sampled_from([0, 1, 1, 1, 1, 2, 3]))
    pods = []
    for index in range(count):
        ready = draw(st.booleans())
        pods.append(
            PodView(
                namespace="default",
                name=f"{node_name}-pod-{index}",
                uid=PodUID(f"uid-{node_name}-{index}"),
                node_name=node_name,
                revision_hash=draw(st.sampled_from([NEW, OLD, OLD])),
                deleting=draw(st.sampled_from([False, False, False, True])),
                ready=ready,
                ready_since=NOW - timedelta(seconds=draw(st.integers(0, 120))) if ready else None,
            )
        )
    return pods


@st.composite
def clusters(draw: st.DrawFn) -> Cluster:
    size = draw(st.integers(0, 12))
    readiness = {
        NodeName(f"edge-{index}"): draw(st.sampled_from([READY, READY, *NodeReadiness]))
        for index in range(size)
    }
    pods = [pod for name in readiness for pod in draw(pods_on(name))]
    in_flight = [
        InFlightDeletion(uid=pod.uid, node_name=pod.node_name)
        for pod in pods
        if pod.node_name is not None and draw(st.integers(0, 9)) == 0
    ]
    in_flight += [
        InFlightDeletion(uid=PodUID(f"uid-gone-{name}"), node_name=name)
        for name in readiness
        if draw(st.integers(0, 9)) == 0
    ]
    return Cluster(
        readiness=readiness,
        pods=pods,
        in_flight=in_flight,
        max_unavailable=draw(st.integers(0, 5)),
        min_ready_seconds=draw(st.sampled_from([0, 0, 30])),
    )


def plan(cluster: Cluster, *, shuffle: random.Random | None = None) -> DeletionPlan:
    pods, nodes, in_flight = list(cluster.pods), cluster.nodes, list(cluster.in_flight)
    if shuffle is not None:
        shuffle.shuffle(pods)
        shuffle.shuffle(nodes)
        shuffle.shuffle(in_flight)
    return plan_deletions(cluster.plan_inputs(pods=pods, nodes=nodes, in_flight=in_flight))


def oracle_available(pod: PodView, min_ready_seconds: int, now: datetime) -> bool:
    if not pod.ready:
        return False
    if min_ready_seconds == 0:
        return True
    return (
        pod.ready_since is not None and (now - pod.ready_since).total_seconds() > min_ready_seconds
    )


def live_pods(pods: Iterable[PodView], in_flight: Sequence[InFlightDeletion]) -> list[PodView]:
    gone = {deletion.uid for deletion in in_flight}
    return [pod for pod in pods if not pod.deleting and pod.uid not in gone]


def oracle_unavailable(cluster: Cluster, pods: Sequence[PodView], now: datetime = NOW) -> int:
    considered = {pod.node_name for pod in pods} | {d.node_name for d in cluster.in_flight}
    live = live_pods(pods, cluster.in_flight)
    count = 0
    for name in considered:
        if name is None or cluster.readiness.get(name) is not READY:
            continue
        on_node = [pod for pod in live if pod.node_name == name]
        if not (len(on_node) == 1 and oracle_available(on_node[0], cluster.min_ready_seconds, now)):
            count += 1
    return count


def outdated_available(cluster: Cluster, pods: Sequence[PodView]) -> dict[NodeName, PodView]:
    """The Ready nodes whose one live pod is outdated and available: those a budget may delete."""
    live = live_pods(pods, cluster.in_flight)
    found = {}
    for name, readiness in cluster.readiness.items():
        on_node = [pod for pod in live if pod.node_name == name]
        if (
            readiness is READY
            and len(on_node) == 1
            and on_node[0].revision_hash == OLD
            and oracle_available(on_node[0], cluster.min_ready_seconds, NOW)
        ):
            found[name] = on_node[0]
    return found


def unavailable_before_and_after(
    cluster: Cluster, pods: Sequence[PodView], deletions: Iterable[Deletion], now: datetime = NOW
) -> tuple[int, int]:
    """The unavailable nodes the oracle counts among `pods`, then once `deletions` terminate."""
    deleted = {deletion.uid for deletion in deletions}
    after = [replace(pod, deleting=True) if pod.uid in deleted else pod for pod in pods]
    return oracle_unavailable(cluster, pods, now), oracle_unavailable(cluster, after, now)


def assert_budget_kept(cluster: Cluster, result: DeletionPlan) -> None:
    """The plan counts what the oracle counts, and its deletions keep within max-unavailable."""
    before, after = unavailable_before_and_after(cluster, cluster.pods, result.deletions)
    assert result.unavailable == before
    assert after <= max(cluster.max_unavailable, before)
    assert result.unavailable_after == after


def observed(
    subject: DaemonSetView,
    world: Cluster,
    pods: Sequence[PodView],
    now: datetime,
    changed: Iterable[str],
) -> Snapshot:
    """What the caches show in one round of a rollout over `world`'s nodes."""
    return snapshot(
        subject, revisions=REVISIONS, pods=pods, nodes=world.nodes, now=now, changed_nodes=changed
    )


def changed_between(before: Collection[PodView], after: Collection[PodView]) -> set[str]:
    """The nodes whose pods differ from one round to the next (what the cache's events report)."""
    names = {pod.node_name for pod in [*before, *after] if pod.node_name is not None}
    return {
        name
        for name in names
        if [p for p in before if p.node_name == name] != [p for p in after if p.node_name == name]
    }


@settings(max_examples=300, deadline=None)
@given(clusters())
def test_deletions_never_push_unavailability_past_the_budget(cluster: Cluster) -> None:
    assert_budget_kept(cluster, plan(cluster))


@settings(max_examples=300, deadline=None)
@given(clusters())
def test_budget_left_over_is_spent_on_available_outdated_pods(cluster: Cluster) -> None:
    result = plan(cluster)
    room = max(0, cluster.max_unavailable - oracle_unavailable(cluster, cluster.pods))
    within_budget = [
        d for d in result.deletions if d.reason is DeletionReason.OUTDATED_WITHIN_BUDGET
    ]
    assert len(within_budget) == min(room, len(outdated_available(cluster, cluster.pods)))


@settings(max_examples=300, deadline=None)
@given(clusters())
def test_only_live_outdated_pods_on_ready_nodes_are_deleted_once(cluster: Cluster) -> None:
    result = plan(cluster)
    by_uid = {pod.uid: pod for pod in cluster.pods}
    being_deleted = {deletion.uid for deletion in cluster.in_flight}
    for deletion in result.deletions:
        pod = by_uid[deletion.uid]
        assert cluster.readiness[deletion.node_name] is READY
        assert pod.node_name == deletion.node_name
        assert pod.name == deletion.name
        assert not pod.deleting
        assert pod.uid not in being_deleted
        assert pod.revision_hash == OLD
    nodes = [deletion.node_name for deletion in result.deletions]
    assert len(nodes) == len(set(nodes))
    assert nodes == sorted(nodes)


@settings(max_examples=200, deadline=None)
@given(clusters(), st.randoms(use_true_random=False))
def test_plan_is_deterministic_whatever_the_input_order(
    cluster: Cluster, shuffle: random.Random
) -> None:
    assert plan(cluster) == plan(cluster, shuffle=shuffle)


@settings(max_examples=150, deadline=None)
@given(
    clusters(),
    st.sampled_from([None, "0", "1", "2", "30%", "100%"]),
    st.sampled_from([0, 30]),
)
def test_repeated_reconciles_converge_with_every_ready_node_current(
    cluster: Cluster, max_unavailable: str | None, min_ready_seconds: int
) -> None:
    annotations = {"apps.openyurt.io/update-strategy": "AdvancedRollingUpdate"}
    if max_unavailable is not None:
        annotations["apps.openyurt.io/max-unavailable"] = max_unavailable
    subject = daemonset(annotations, min_ready_seconds=min_ready_seconds)
    world = replace(cluster, in_flight=[], min_ready_seconds=min_ready_seconds)
    pods, now = list(cluster.pods), NOW
    ready_nodes = [name for name, readiness in cluster.readiness.items() if readiness is READY]
    book = RolloutBook()  # one book across the reconciles, as the controller keeps it
    changed: set[str] = set()

    for _ in range(3 * len(ready_nodes) + 5):
        result = plan_reconcile(observed(subject, world, pods, now, changed), book)
        assert result.budget is not None
        before, after = unavailable_before_and_after(world, pods, result.deletions, now)
        assert after <= max(result.budget.value, before)
        deleted = {deletion.uid for deletion in result.deletions}
        if not deleted and all(_up_to_date(world, pods, name, now) for name in ready_nodes):
            return
        following = _next_round(world, pods, deleted, now)
        changed = changed_between(pods, following)
        pods = following
        now += timedelta(seconds=60)
    raise AssertionError(f"no convergence: {pods}")


def _up_to_date(world: Cluster, pods: Sequence[PodView], name: NodeName, now: datetime) -> bool:
    on_node = [pod for pod in pods if pod.node_name == name and not pod.deleting]
    return (
        len(on_node) == 1
        and on_node[0].revision_hash == NEW
        and oracle_available(on_node[0], world.min_ready_seconds, now)
    )


def _next_round(
    world: Cluster, pods: Sequence[PodView], deleted: set[PodUID], now: datetime
) -> list[PodView]:
    """What the cluster looks like a minute later.

    On Ready nodes the kubelet confirms deletions and makes pods Ready, and the native controller
    (OnDelete) keeps the oldest of several pods and creates a missing one from the new template.
    Nothing changes on other nodes.
    """
    survivors = [pod for pod in pods if pod.uid not in deleted]
    following: list[PodView] = []
    for name, readiness in world.readiness.items():
        on_node = [pod for pod in survivors if pod.node_name == name]
        if readiness is not READY:
            following += on_node
            continue
        live = [pod for pod in on_node if not pod.deleting][:1]
        live = [pod if pod.ready else replace(pod, ready=True, ready_since=now) for pod in live]
        if not live:
            live = [
                PodView(
                    namespace="default",
                    name=f"{name}-at-{now:%H%M}",
                    uid=PodUID(f"uid-{name}-at-{now:%H%M}"),
                    node_name=name,
                    revision_hash=NEW,
                )
            ]
        following += live
    return following
