"""Properties of staged rollouts over random clusters and random staging (design §12).

Held nodes are never deleted, waves and batches never overlap, the budget is never exceeded, and
the rollout book plans exactly as the full planner, whatever the pause, partition, selector, waves
and batches.
"""

from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from edgerollout.domain.model import ContainerFailure, InFlight, NodeName, NodeReadiness
from edgerollout.domain.planning.holds import HoldReason, Holds, NodeSets, WaveIndex, hold_nodes
from edgerollout.domain.planning.rollout_book import RolloutBook
from edgerollout.domain.planning.verdicts import DeletionPlan, NodeVerdict
from edgerollout.domain.spec.node_hold import HoldRequest
from edgerollout.domain.spec.staging import Staging, read_staging
from edgerollout.domain.vocabulary import (
    BATCHES_ANNOTATION,
    NODE_SELECTOR_ANNOTATION,
    NODEPOOL_LABEL,
    PARTITION_ANNOTATION,
    PAUSED_ANNOTATION,
    WAVES_ANNOTATION,
)

from .builders import NEW, NOW, TARGET
from .planning import plan_deletions
from .test_planner_properties import Cluster, assert_budget_kept, clusters

READY = NodeReadiness.READY
DEADLINE = timedelta(seconds=60)


@dataclass(frozen=True)
class Staged:
    cluster: Cluster
    labels: Mapping[NodeName, Mapping[str, str]]
    staging: Staging

    def labels_of(self, name: NodeName) -> Mapping[str, str]:
        return self.labels.get(name, {})


@st.composite
def staged(draw: st.DrawFn) -> Staged:
    cluster = draw(clusters())
    # Some pods crash-loop: a current one makes its Ready node BROKEN.
    failing = (ContainerFailure(container="web", reason="CrashLoopBackOff"),)
    cluster = replace(
        cluster,
        pods=[
            replace(p, failures=failing) if draw(st.integers(0, 4)) == 0 else p
            for p in cluster.pods
        ],
    )
    labels: dict[NodeName, dict[str, str]] = {}
    for name in cluster.readiness:
        node_labels = {}
        pool = draw(st.sampled_from([None, "pool-a", "pool-b", "pool-c"]))
        if pool is not None:
            node_labels[NODEPOOL_LABEL] = pool
        if draw(st.booleans()):
            node_labels["canary"] = "true"
        labels[name] = node_labels
    annotations: dict[str, str] = {}
    for key, values in [
        (PAUSED_ANNOTATION, ["true", "false"]),
        (PARTITION_ANNOTATION, ["1", "3", "40%", "100%"]),
        (NODE_SELECTOR_ANNOTATION, ["canary", f"{NODEPOOL_LABEL} in (pool-a, pool-c)"]),
        (WAVES_ANNOTATION, ["pool-a, pool-b, *", "pool-b, pool-a", "*, pool-c"]),
        (BATCHES_ANNOTATION, ["1", "1, 50%", "2, 3, 40%", "25%", "100%"]),
    ]:
        if draw(st.integers(0, 2)) == 0:
            annotations[key] = draw(st.sampled_from(values))
    staging = read_staging(annotations)
    assert not staging.notices
    return Staged(cluster=cluster, labels=labels, staging=staging)


def full_plan(subject: Staged) -> DeletionPlan:
    inputs = subject.cluster.plan_inputs(
        staging=subject.staging, labels=subject.labels_of, progress_deadline=DEADLINE
    )
    return plan_deletions(inputs)


@settings(max_examples=400, deadline=None)
@given(staged())
def test_held_nodes_are_never_deleted(subject: Staged) -> None:
    result = full_plan(subject)
    deleted = {deletion.node_name for deletion in result.deletions}
    assert not deleted & set(result.holds.held)
    if subject.staging.paused:
        assert result.deletions == ()
    assert not set(result.waiting_for_budget) & set(result.holds.held)


@settings(max_examples=400, deadline=None)
@given(staged())
def test_waves_never_overlap(subject: Staged) -> None:
    waves = subject.staging.waves
    result = full_plan(subject)
    if waves is None:
        assert result.holds.wave is None
        return
    assert result.holds.wave is not None
    current = result.holds.wave.index
    wave_of = {name: waves.index_of(subject.labels_of(name)) for name in result.verdicts}
    for deletion in result.deletions:
        index = wave_of[deletion.node_name]
        assert index is not None
        assert index <= current
    # Every Ready node of an earlier wave that the rollout must upgrade is done.
    if subject.staging.paused:
        return  # every node is held as paused; the waves are as they would be without it
    for name, verdict in result.verdicts.items():
        index = wave_of[name]
        hold = result.holds.held.get(name)
        must_upgrade = hold is None or hold.reason is HoldReason.WAVE
        if index is not None and index < current and must_upgrade:
            assert verdict is NodeVerdict.UP_TO_DATE


@settings(max_examples=400, deadline=None)
@given(staged())
def test_batches_never_overlap(subject: Staged) -> None:
    batches = subject.staging.batches
    result = full_plan(subject)
    if batches is None:
        assert result.holds.batch is None
        return
    batch = result.holds.batch
    assert batch is not None
    held = result.holds.held
    by_batch = [hold.batch for hold in held.values() if hold.reason is HoldReason.BATCH]
    # Only the nodes of later batches are held by a batch, and none is deleted.
    assert all(number is not None and number > batch.index + 1 for number in by_batch)
    assert batch.target <= batch.nodes
    deleted = [deletion.node_name for deletion in result.deletions]
    assert not [name for name in deleted if name in held]
    # The current batch's nodes are the first `target` of the rollout's order that no other
    # hold takes: every node after them is held.
    order = sorted(
        (name for name in result.verdicts.keys() | set(subject.cluster.readiness)),
        key=result.holds.order,
    )
    open_nodes = [name for name in order if name not in held]
    assert len([name for name in open_nodes if name in result.verdicts]) <= batch.target


@settings(max_examples=400, deadline=None)
@given(staged())
def test_the_budget_is_never_exceeded(subject: Staged) -> None:
    result = full_plan(subject)
    # For the oracle, a failing pod of the newest revision is simply not Ready: never available.
    cluster = replace(
        subject.cluster,
        pods=[
            replace(p, ready=False) if p.failures and p.revision_hash == NEW else p
            for p in subject.cluster.pods
        ],
    )
    assert_budget_kept(cluster, result)


def refreshed(
    book: RolloutBook, cluster: Cluster, changed: frozenset[NodeName] = frozenset()
) -> RolloutBook:
    pods_by_node: dict[NodeName, list] = {}  # type: ignore[type-arg]
    for pod in cluster.pods:
        if pod.node_name is not None:
            pods_by_node.setdefault(pod.node_name, []).append(pod)
    book.refresh(
        target=TARGET,
        min_ready_seconds=cluster.min_ready_seconds,
        now=NOW,
        pods_by_node=pods_by_node,
        readiness=cluster.readiness,
        changed=changed,
        in_flight=InFlight.of(cluster.in_flight),
        progress_deadline=DEADLINE,
    )
    return book


def book_plan(book: RolloutBook, subject: Staged) -> DeletionPlan:
    return book.plan(
        max_unavailable=subject.cluster.max_unavailable,
        staging=subject.staging,
        labels=subject.labels_of,
    )


@settings(max_examples=400, deadline=None)
@given(staged())
def test_the_book_plans_a_staged_rollout_as_the_full_planner(subject: Staged) -> None:
    ours = book_plan(refreshed(RolloutBook(), subject.cluster), subject)
    assert ours == full_plan(subject)
    assert ours.waiting_for_budget == full_plan(subject).waiting_for_budget


POOLS = st.sampled_from([{}, {NODEPOOL_LABEL: "pool-a"}, {NODEPOOL_LABEL: "pool-b"}])


@settings(max_examples=300, deadline=None)
@given(staged(), st.data())
def test_the_book_reads_again_the_wave_of_a_node_told_relabelled(
    subject: Staged, data: st.DataObject
) -> None:
    # The book keeps each node's wave between plans; a node reported changed is read again.
    book = refreshed(RolloutBook(), subject.cluster)
    book_plan(book, subject)
    names = sorted(subject.labels)
    moved = data.draw(st.lists(st.sampled_from(names), unique=True) if names else st.just([]))
    relabelled = replace(
        subject, labels={**subject.labels, **{name: data.draw(POOLS) for name in moved}}
    )

    ours = book_plan(refreshed(book, subject.cluster, changed=frozenset(moved)), relabelled)

    assert ours == full_plan(relabelled)


WAVE_STAGINGS = st.sampled_from(
    [
        {WAVES_ANNOTATION: "pool-a, pool-b, *"},
        {WAVES_ANNOTATION: "pool-b, pool-a"},
        {WAVES_ANNOTATION: "pool-a, *", PARTITION_ANNOTATION: "1"},
        {WAVES_ANNOTATION: "pool-b, *", NODE_SELECTOR_ANNOTATION: "pool!=pool-a"},
    ]
)
STANDINGS = st.sampled_from(["done", "outdated", "starting", "not ready"])


@settings(max_examples=400, deadline=None)
@given(
    WAVE_STAGINGS,
    st.dictionaries(
        st.sampled_from([NodeName(f"edge-{i}") for i in range(12)]),
        st.tuples(st.sampled_from(["pool-a", "pool-b", "pool-c"]), STANDINGS),
        max_size=12,
    ),
    st.lists(st.sampled_from([NodeName(f"edge-{i}") for i in range(12)]), max_size=2),
)
def test_holds_from_the_sets_a_book_keeps_are_those_from_asking_each_node(
    annotations: Mapping[str, str],
    nodes: Mapping[NodeName, tuple[str, str]],
    asking: list[NodeName],
) -> None:
    # A book hands `hold_nodes` the Ready nodes not done and those holding an old pod as sets,
    # looked at a wave at a time; the holds and the wave must be what asking each node gives.
    staging = read_staging(annotations)
    if asking:
        request = HoldRequest(until=None, asked=NOW, why="a shift change")
        staging = replace(staging, asked=dict.fromkeys(asking, request))
    standing = {name: state for name, (_, state) in nodes.items()}
    pool_labels = {name: {NODEPOOL_LABEL: pool, "pool": pool} for name, (pool, _) in nodes.items()}
    ready = {name for name, state in standing.items() if state != "not ready"}
    open_nodes = {name for name in ready if standing[name] != "done"}
    outdated = {name for name in ready if standing[name] == "outdated"}

    def hold(sets: NodeSets | None) -> Holds:
        return hold_nodes(
            staging,
            nodes=list(nodes),
            labels=lambda name: pool_labels.get(name, {}),
            done=lambda name: name in ready and name not in open_nodes,
            ready=lambda name: name in ready,
            outdated=lambda name: name in outdated,
            wave_index=WaveIndex(),
            sets=sets,
        )

    assert hold(NodeSets(open=open_nodes, outdated=outdated)) == hold(None)
