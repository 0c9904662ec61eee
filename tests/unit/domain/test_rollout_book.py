"""A RolloutBook plans as the full planner (the oracle) does, judging again only what changed."""

from collections.abc import Iterator, Mapping, Sequence, Set
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from edgerollout.domain.model import (
    InFlight,
    InFlightDeletion,
    NodeName,
    NodeReadiness,
    PodUID,
    PodView,
)
from edgerollout.domain.planning.revisions import TargetRevision
from edgerollout.domain.planning.rollout_book import RolloutBook
from edgerollout.domain.planning.verdicts import DeletionPlan, DeletionReason, NodeVerdict

from .builders import NEW, NOW, OLD, TARGET, daemonset, pod, snapshot, uid
from .planner_oracle import full_plan_deletions, oracle_budget_base
from .test_planner_properties import Cluster, clusters, pods_on

READY = NodeReadiness.READY
OLD_TARGET = TargetRevision(hash=OLD, template_generation=None)
UNKNOWN = TargetRevision(hash=None, template_generation=None)


class ClusterSource(Mapping[NodeName, Sequence[PodView]]):
    """What the caches would show: the cluster's pods by node (each node read is recorded)."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self.looked_at: list[NodeName] = []

    def __iter__(self) -> Iterator[NodeName]:
        return iter(sorted({p.node_name for p in self.cluster.pods if p.node_name is not None}))

    def __len__(self) -> int:
        return len(list(iter(self)))

    def __getitem__(self, node: NodeName) -> Sequence[PodView]:
        self.looked_at.append(node)
        held = [p for p in self.cluster.pods if p.node_name == node]
        if not held:
            raise KeyError(node)
        return held


def changed_nodes(before: Cluster, after: Cluster) -> set[NodeName]:
    """The nodes whose pods or readiness differ (what the cache's events would report)."""
    names = set(before.readiness) | set(after.readiness)
    names |= {p.node_name for p in before.pods + after.pods if p.node_name is not None}
    return {
        name
        for name in names
        if before.readiness.get(name) != after.readiness.get(name)
        or [p for p in before.pods if p.node_name == name]
        != [p for p in after.pods if p.node_name == name]
    }


@dataclass(frozen=True)
class Step:
    cluster: Cluster
    target: TargetRevision
    desired_nodes: int | None
    counted_while_not_ready: frozenset[NodeReadiness] = frozenset()
    # Time passes between steps: with minReadySeconds, Ready pods turn available on the clock.
    at: timedelta = timedelta(0)

    @property
    def now(self) -> datetime:
        return NOW + self.at


@st.composite
def histories(draw: st.DrawFn) -> list[Step]:
    cluster = draw(clusters())
    steps = [Step(cluster, TARGET, None)]
    for _ in range(draw(st.integers(1, 8))):
        previous = steps[-1]
        cluster, target, desired = previous.cluster, previous.target, previous.desired_nodes
        counted = previous.counted_while_not_ready
        at = previous.at + timedelta(seconds=draw(st.sampled_from([0, 0, 1, 10, 31, 60])))
        names = sorted(cluster.readiness)
        change = draw(
            st.sampled_from(
                [
                    *("pods", "pods", "pods", "readiness", "in_flight"),
                    *("budget", "target", "desired", "tolerated"),
                ]
            )
        )
        if change == "pods" and names:
            name = draw(st.sampled_from(names))
            fresh = [replace(p, uid=PodUID(f"{p.uid}-{len(steps)}")) for p in draw(pods_on(name))]
            kept = [p for p in cluster.pods if p.node_name != name]
            cluster = replace(cluster, pods=kept + fresh)
        elif change == "readiness" and names:
            name = draw(st.sampled_from(names))
            readiness = dict(cluster.readiness)
            readiness[name] = draw(st.sampled_from(list(NodeReadiness)))
            cluster = replace(cluster, readiness=readiness)
        elif change == "in_flight":
            candidates = [
                InFlightDeletion(uid=p.uid, node_name=p.node_name)
                for p in cluster.pods
                if p.node_name is not None
            ]
            chosen = draw(st.lists(st.sampled_from(candidates), unique=True)) if candidates else []
            cluster = replace(cluster, in_flight=chosen)
        elif change == "budget":
            cluster = replace(cluster, max_unavailable=draw(st.integers(0, 5)))
        elif change == "target":
            target = draw(st.sampled_from([TARGET, OLD_TARGET, UNKNOWN]))
        elif change == "desired":
            desired = draw(st.none() | st.integers(0, 15))
        elif change == "tolerated":
            not_ready = [NodeReadiness.NOT_READY, NodeReadiness.UNKNOWN]
            counted = frozenset(draw(st.lists(st.sampled_from(not_ready), unique=True)))
        else:
            cluster = replace(cluster, min_ready_seconds=draw(st.sampled_from([0, 30])))
        steps.append(Step(cluster, target, desired, counted, at))
    return steps


def budget_base_of(step: Step) -> int:
    """The base the controller counts its budgets over, for this step's cluster."""
    cluster = snapshot(
        daemonset(desired_nodes=step.desired_nodes),
        pods=step.cluster.pods,
        nodes=step.cluster.nodes,
        in_flight=step.cluster.in_flight,
    )
    return cluster.budget_base()


def full_plan(step: Step) -> DeletionPlan:
    return full_plan_deletions(
        step.cluster.plan_inputs(
            target=step.target,
            desired_nodes=step.desired_nodes,
            counted_while_not_ready=step.counted_while_not_ready,
            now=step.now,
        )
    )


def book_plan(
    book: RolloutBook,
    step: Step,
    source: ClusterSource | None = None,
    changed: Set[NodeName] = frozenset(),
    touched: Set[NodeName] | None = None,
) -> DeletionPlan:
    """Refresh the book from `source` (a fresh one over the step's cluster if None), then plan;
    with `touched`, the deletions in flight come with the nodes where one came or went, as the
    controller hands them over."""
    in_flight = InFlight.of(step.cluster.in_flight)
    if touched is not None:
        in_flight = replace(in_flight, touched=touched)
    book.refresh(
        target=step.target,
        min_ready_seconds=step.cluster.min_ready_seconds,
        now=step.now,
        pods_by_node=source if source is not None else ClusterSource(step.cluster),
        readiness=step.cluster.readiness,
        changed=changed,
        in_flight=in_flight,
    )
    return book.plan(
        max_unavailable=step.cluster.max_unavailable,
        desired_nodes=step.desired_nodes,
        counted_while_not_ready=step.counted_while_not_ready,
    )


def moved_in_flight(before: Cluster | None, after: Cluster) -> set[NodeName]:
    """The nodes where a deletion in flight came or went between the two clusters."""
    was = set() if before is None else {(d.uid, d.node_name) for d in before.in_flight}
    return {node for _, node in was ^ {(d.uid, d.node_name) for d in after.in_flight}}


# The book compares the deletions in flight with the ones it was given before, or is told where
# they came and went, as the controller tells it (`InFlight.touched`).
@pytest.mark.parametrize("told", [False, True], ids=["compared", "told"])
@settings(max_examples=400, deadline=None)
@given(history=histories())
def test_a_book_told_of_every_change_plans_exactly_as_the_full_planner(
    told: bool, history: list[Step]
) -> None:
    book = RolloutBook()
    previous: Cluster | None = None
    for step in history:
        changed = changed_nodes(previous, step.cluster) if previous is not None else set()
        touched = moved_in_flight(previous, step.cluster) if told else None
        ours = book_plan(book, step, changed=changed, touched=touched)

        assert ours == full_plan(step)
        assert ours.waiting_for_budget == full_plan(step).waiting_for_budget
        assert budget_base_of(step) == oracle_budget_base(
            step.cluster.pods,
            in_flight=step.cluster.in_flight,
            desired_nodes=step.desired_nodes,
        )
        previous = step.cluster


def cluster_of(*pods: PodView, max_unavailable: int = 1) -> Cluster:
    names = {p.node_name for p in pods if p.node_name is not None}
    return Cluster(
        readiness=dict.fromkeys(sorted(names), READY),
        pods=list(pods),
        in_flight=[],
        max_unavailable=max_unavailable,
        min_ready_seconds=0,
    )


def test_a_plan_after_one_change_looks_only_at_the_node_that_changed() -> None:
    cluster = cluster_of(*(pod(f"web-{i}", f"edge-{i}", revision=OLD) for i in range(1, 6)))
    source = ClusterSource(cluster)
    book = RolloutBook()
    step = Step(cluster, TARGET, None)

    first = book_plan(book, step, source)
    assert [d.node_name for d in first.deletions] == ["edge-1"]
    assert sorted(source.looked_at) == [f"edge-{i}" for i in range(1, 6)]

    # edge-1's old pod is replaced by a Ready current one: only edge-1 is read again.
    source.looked_at.clear()
    replaced = [p for p in cluster.pods if p.node_name != "edge-1"] + [pod("web-1b", "edge-1")]
    source.cluster = replace(cluster, pods=replaced)
    second = book_plan(book, Step(source.cluster, TARGET, None), source, {NodeName("edge-1")})

    assert source.looked_at == ["edge-1"]
    assert [d.node_name for d in second.deletions] == ["edge-2"]
    assert second.verdicts[NodeName("edge-1")] is NodeVerdict.UP_TO_DATE
    # The first plan's verdicts are its own: the book went on without changing them.
    assert first.verdicts == {NodeName(f"edge-{i}"): NodeVerdict.OUTDATED for i in range(1, 6)}
    assert dict(second.verdicts) == {
        NodeName("edge-1"): NodeVerdict.UP_TO_DATE,
        **{NodeName(f"edge-{i}"): NodeVerdict.OUTDATED for i in range(2, 6)},
    }


def test_in_flight_deletions_that_come_and_go_are_judged_again_without_being_named_changed() -> (
    None
):
    cluster = cluster_of(pod("web-1", "edge-1", revision=OLD), pod("web-2", "edge-2", revision=OLD))
    source = ClusterSource(cluster)
    book = RolloutBook()
    book_plan(book, Step(cluster, TARGET, None), source)

    source.looked_at.clear()
    flying = replace(
        cluster, in_flight=[InFlightDeletion(uid=uid("web-1"), node_name=NodeName("edge-1"))]
    )
    during = book_plan(book, Step(flying, TARGET, None), source)
    assert source.looked_at == ["edge-1"]
    assert during.deletions == ()
    assert during.unavailable == 1

    source.looked_at.clear()
    after = book_plan(book, Step(cluster, TARGET, None), source)
    assert source.looked_at == ["edge-1"]
    assert [d.name for d in after.deletions] == ["web-1"]
    assert after.deletions[0].reason is DeletionReason.OUTDATED_WITHIN_BUDGET


def test_a_change_nobody_reported_is_not_seen_until_the_node_is_named_changed() -> None:
    cluster = cluster_of(pod("web-1", "edge-1", revision=OLD), max_unavailable=0)
    source = ClusterSource(cluster)
    book = RolloutBook()
    assert book_plan(book, Step(cluster, TARGET, None), source).deletions == ()

    # The pod turns NotReady: an outdated unavailable pod is replaced at once, once reported.
    source.cluster = replace(cluster, pods=[pod("web-1", "edge-1", revision=OLD, ready=False)])
    assert book_plan(book, Step(source.cluster, TARGET, None), source).deletions == ()
    seen = book_plan(book, Step(source.cluster, TARGET, None), source, {NodeName("edge-1")})
    assert [(d.name, d.reason) for d in seen.deletions] == [
        ("web-1", DeletionReason.OUTDATED_UNAVAILABLE)
    ]


def test_a_new_target_or_a_reset_judges_every_node_again() -> None:
    cluster = cluster_of(pod("web-1", "edge-1", revision=OLD), pod("web-2", "edge-2", revision=NEW))
    source = ClusterSource(cluster)
    book = RolloutBook()
    book_plan(book, Step(cluster, TARGET, None), source)

    source.looked_at.clear()
    back = book_plan(book, Step(cluster, OLD_TARGET, None), source)
    assert sorted(source.looked_at) == ["edge-1", "edge-2"]
    assert [d.name for d in back.deletions] == ["web-2"]

    source.looked_at.clear()
    book.reset()
    book_plan(book, Step(cluster, OLD_TARGET, None), source)
    assert sorted(source.looked_at) == ["edge-1", "edge-2"]


def test_with_min_ready_seconds_a_node_is_judged_again_when_its_pod_turns_available() -> None:
    starting = pod("web-1", "edge-1", ready_for=timedelta(seconds=10))
    available = pod("web-2", "edge-2")
    cluster = replace(cluster_of(starting, available), min_ready_seconds=30)
    source = ClusterSource(cluster)
    book = RolloutBook()
    first = book_plan(book, Step(cluster, TARGET, None), source)
    assert dict(first.verdicts) == {
        "edge-1": NodeVerdict.STARTING,
        "edge-2": NodeVerdict.UP_TO_DATE,
    }
    assert first.next_available == NOW + timedelta(seconds=20)

    # Nothing changed and the clock has not reached it: nothing is judged again.
    source.looked_at.clear()
    book_plan(book, Step(cluster, TARGET, None, at=timedelta(seconds=20)), source)
    assert source.looked_at == []

    # Strictly after its Ready transition plus minReadySeconds: that node, and only it.
    later = book_plan(book, Step(cluster, TARGET, None, at=timedelta(seconds=21)), source)
    assert source.looked_at == ["edge-1"]
    assert dict(later.verdicts) == dict.fromkeys(("edge-1", "edge-2"), NodeVerdict.UP_TO_DATE)
    assert later.next_available is None
