"""Properties of node holds over random clusters, holds and times (design §13.6).

A held pod is never deleted — by an AdvancedRollingUpdate, or by an OTA rollout at its deadline —
before its hold ends or max-hold has passed since it was asked; every hold ignored for outlasting
max-hold is told by a Warning; and the rollout book, told of every change, keeps the holds a scan
of every pod finds.
"""

from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from edgerollout.domain.model import Condition, ConditionStatus, InFlight, NodeName, PodView
from edgerollout.domain.planning.reconcile import plan
from edgerollout.domain.planning.rollout_book import RolloutBook
from edgerollout.domain.spec.node_hold import HoldRequest, hold_message, read_hold
from edgerollout.domain.timestamps import format_rfc3339
from edgerollout.domain.vocabulary import (
    MAX_HOLD_ANNOTATION,
    MAX_UNAVAILABLE_ANNOTATION,
    OTA_DEADLINE_ANNOTATION,
    POD_NEED_UPGRADE,
    UPDATE_STRATEGY_ANNOTATION,
    UPGRADE_HELD,
)

from .builders import NEW, NOW, REVISIONS, condition, daemonset, snapshot
from .test_planner_properties import Cluster, clusters
from .test_rollout_book import ClusterSource, Step, changed_nodes, histories

MAX_HOLDS = {"30m": timedelta(minutes=30), "24h": timedelta(hours=24)}


@st.composite
def hold_conditions(draw: st.DrawFn) -> Condition:
    """A hold as an agent writes it, asked up to 30 h ago until up to 40 h after; or one whose
    message is not the agent's; or a lifted one."""
    asked = NOW - timedelta(minutes=draw(st.integers(0, 30 * 60)))
    until = asked + timedelta(minutes=draw(st.integers(-60, 40 * 60)))
    form = draw(st.sampled_from(["agent", "agent", "agent", "by hand", "lifted"]))
    message = hold_message(until=until, asked=asked, why="a car driving")
    return Condition(
        type=UPGRADE_HELD,
        status=ConditionStatus.FALSE if form == "lifted" else ConditionStatus.TRUE,
        message="hold it" if form == "by hand" else message,
        last_transition_time=format_rfc3339(asked),
    )


@dataclass(frozen=True)
class Subject:
    cluster: Cluster
    annotations: Mapping[str, str]
    max_hold: timedelta
    now: datetime


@st.composite
def subjects(draw: st.DrawFn) -> Subject:
    cluster = draw(clusters())
    # Every outdated pod offered its upgrade two hours ago: past any OTA deadline drawn below.
    offered = condition(POD_NEED_UPGRADE, ConditionStatus.TRUE, since="2025-03-01T10:00:00Z")
    pods = []
    for pod in cluster.pods:
        conditions: dict[str, Condition] = {POD_NEED_UPGRADE: offered}
        if draw(st.integers(0, 2)) == 0:
            conditions[UPGRADE_HELD] = draw(hold_conditions())
        pods.append(replace(pod, conditions=conditions))
    cluster = replace(cluster, pods=pods)
    written = draw(st.sampled_from(sorted(MAX_HOLDS)))
    strategy = draw(st.sampled_from(["AdvancedRollingUpdate", "OTA"]))
    annotations = {
        UPDATE_STRATEGY_ANNOTATION: strategy,
        MAX_UNAVAILABLE_ANNOTATION: str(max(cluster.max_unavailable, 1)),
        MAX_HOLD_ANNOTATION: written,
        OTA_DEADLINE_ANNOTATION: "1h",
    }
    later = timedelta(minutes=draw(st.integers(0, 36 * 60)))
    return Subject(cluster, annotations, MAX_HOLDS[written], NOW + later)


def in_force(pod: PodView, *, max_hold: timedelta, now: datetime) -> HoldRequest | None:
    request = read_hold(pod.conditions)
    return request if request is not None and now < request.ends(max_hold) else None


@settings(max_examples=500, deadline=None)
@given(subjects())
def test_a_held_pod_is_never_deleted_before_its_hold_ends_or_max_hold_passes(
    subject: Subject,
) -> None:
    cluster = subject.cluster
    taken = snapshot(
        daemonset(subject.annotations),
        revisions=REVISIONS,
        pods=cluster.pods,
        nodes=cluster.nodes,
        in_flight=cluster.in_flight,
        now=subject.now,
    )
    decided = plan(taken, RolloutBook())
    held_nodes = {
        pod.node_name
        for pod in cluster.pods
        if not pod.deleting and in_force(pod, max_hold=subject.max_hold, now=subject.now)
    }
    assert not {deletion.node_name for deletion in decided.deletions} & held_nodes
    # Each hold ignored for outlasting max-hold is told by one Warning.
    ignored = {
        f"{pod.uid}/{format_rfc3339(request.asked)}"
        for pod in cluster.pods
        if not pod.deleting
        and pod.node_name is not None
        and (request := read_hold(pod.conditions)) is not None
        and subject.now >= request.ends(subject.max_hold)
        and request.outlasts(subject.max_hold)
    }
    told = {n.subject for n in decided.notices if n.reason == "UpgradeHoldIgnored"}
    assert told == ignored
    # Nothing but the node holds: every outdated OTA pod, held or not, stays offered its upgrade.
    outdated = {pod.name for pod in cluster.pods if pod.revision_hash != NEW}
    assert not [
        write.name
        for write in decided.condition_writes
        if write.name in outdated and write.condition.status is ConditionStatus.FALSE
    ]


def holding(pod: PodView) -> PodView:
    """The pod with a hold whenever its UID's last character is even (a fixed, varied choice)."""
    if ord(pod.uid[-1]) % 2:
        return pod
    hold = Condition(
        type=UPGRADE_HELD,
        status=ConditionStatus.TRUE,
        message=hold_message(until=NOW, asked=NOW, why=pod.name),
        last_transition_time=format_rfc3339(NOW),
    )
    return replace(pod, conditions={UPGRADE_HELD: hold})


@settings(max_examples=300, deadline=None)
@given(histories())
def test_the_book_keeps_the_holds_a_scan_of_every_pod_finds(history: list[Step]) -> None:
    book = RolloutBook()
    previous: Cluster | None = None
    for step in history:
        cluster = replace(step.cluster, pods=[holding(pod) for pod in step.cluster.pods])
        changed = changed_nodes(previous, cluster) if previous is not None else set()
        book.refresh(
            target=step.target,
            min_ready_seconds=cluster.min_ready_seconds,
            now=NOW,
            pods_by_node=ClusterSource(cluster),
            readiness=cluster.readiness,
            changed=changed,
            in_flight=InFlight.of(cluster.in_flight),
        )
        scanned: dict[NodeName, list[str]] = {}
        for pod in cluster.pods:
            if pod.node_name is not None and not pod.deleting and read_hold(pod.conditions):
                scanned.setdefault(pod.node_name, []).append(pod.name)
        kept = {node: [held.pod.name for held in holds] for node, holds in book.asked.items()}
        assert kept == scanned
        previous = cluster
