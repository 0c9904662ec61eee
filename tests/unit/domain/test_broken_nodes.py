"""A broken upgrade is not an offline node: the BROKEN verdict through the planner and the book."""

from datetime import timedelta
from typing import Any

from edgerollout.domain.events import EventType
from edgerollout.domain.model import ContainerFailure, NodeName, NodeReadiness, PodView
from edgerollout.domain.planning.health import next_clock_change
from edgerollout.domain.planning.reconcile import plan
from edgerollout.domain.planning.rollout_book import RolloutBook
from edgerollout.domain.planning.verdicts import NodeVerdict
from edgerollout.domain.reporting.node_plans import node_plans
from edgerollout.domain.reporting.rollout_status import rollout_status
from edgerollout.domain.vocabulary import (
    MAX_UNAVAILABLE_ANNOTATION,
    PROGRESS_DEADLINE_ANNOTATION,
    UPDATE_STRATEGY_ANNOTATION,
)

from .builders import (
    NOW,
    REVISIONS,
    TARGET,
    PlanInputs,
    daemonset,
    node,
    old_pod,
    one_outdated_node,
    pod,
    snapshot,
)
from .planning import plan_deletions

DEADLINE = timedelta(seconds=600)
ARU = {UPDATE_STRATEGY_ANNOTATION: "AdvancedRollingUpdate", MAX_UNAVAILABLE_ANNOTATION: "2"}
CRASHING = ContainerFailure(container="web", reason="CrashLoopBackOff")


def test_a_crash_looping_new_pod_is_broken_unavailable_and_says_why() -> None:
    pods = [
        pod("web-1", "edge-1", ready=False, failures=[CRASHING]),
        old_pod("web-2", "edge-2"),
        old_pod("web-3", "edge-3"),
        old_pod("web-4", "edge-4"),
    ]
    nodes = [node(f"edge-{i}") for i in range(1, 5)]
    result = plan_deletions(
        PlanInputs(pods=pods, nodes=nodes, max_unavailable=2, progress_deadline=DEADLINE)
    )
    assert result.verdicts[NodeName("edge-1")] is NodeVerdict.BROKEN
    assert result.unavailable == 1
    assert [d.node_name for d in result.deletions] == ["edge-2"]
    broken = result.broken[NodeName("edge-1")]
    assert (broken.reason, broken.message) == (
        "CrashLoopBackOff",
        "container web waiting: CrashLoopBackOff",
    )


def test_a_ready_pod_that_crashed_after_starting_is_never_counted_available() -> None:
    restarted = pod(
        "web-1", "edge-1", ready_for=timedelta(minutes=20), restarted=NOW - timedelta(minutes=5)
    )
    result = plan_deletions(
        PlanInputs(
            pods=[restarted, old_pod("web-2", "edge-2")],
            nodes=[node("edge-1"), node("edge-2")],
            progress_deadline=DEADLINE,
        )
    )
    assert result.verdicts[NodeName("edge-1")] is NodeVerdict.BROKEN
    assert result.broken[NodeName("edge-1")].reason == "Restarted"
    assert result.deletions == ()


def test_an_offline_node_is_skipped_never_broken() -> None:
    result = plan_deletions(
        PlanInputs(
            pods=[pod("web-1", "edge-1", ready=False, failures=[CRASHING])],
            nodes=[node("edge-1", NodeReadiness.UNKNOWN)],
            progress_deadline=DEADLINE,
        )
    )
    assert result.skipped_nodes == (NodeName("edge-1"),)
    assert result.broken == {}


def test_the_book_sees_a_deadline_pass_without_any_event() -> None:
    starting = pod("web-1", "edge-1", ready=False, created=NOW - timedelta(seconds=590))
    book = RolloutBook()
    refresh = {
        "target": TARGET,
        "min_ready_seconds": 0,
        "pods_by_node": {NodeName("edge-1"): [starting]},
        "readiness": {NodeName("edge-1"): NodeReadiness.READY},
        "progress_deadline": DEADLINE,
    }
    book.refresh(now=NOW, **refresh)  # type: ignore[arg-type]
    assert book.plan(max_unavailable=1).verdicts == {NodeName("edge-1"): NodeVerdict.STARTING}

    book.refresh(now=NOW + timedelta(seconds=11), **refresh)  # type: ignore[arg-type]
    later = book.plan(max_unavailable=1)
    assert later.verdicts == {NodeName("edge-1"): NodeVerdict.BROKEN}
    assert later.broken[NodeName("edge-1")].reason == "ProgressDeadlineExceeded"


class Recorded(dict[NodeName, list[PodView]]):
    """Pods by node, recording which nodes the book reads."""

    def __init__(self, pods: dict[NodeName, list[PodView]]) -> None:
        super().__init__(pods)
        self.read: list[NodeName] = []

    def get(self, node: NodeName, default: Any = None) -> Any:
        self.read.append(node)
        return super().get(node, default)


def test_the_book_looks_again_at_a_node_when_its_newest_pod_may_pass_the_deadline() -> None:
    edge1, edge2 = NodeName("edge-1"), NodeName("edge-2")
    readiness = {edge1: NodeReadiness.READY, edge2: NodeReadiness.READY}
    early = pod("web-1", "edge-1", ready=False, created=NOW - timedelta(seconds=590))
    other = pod("web-2", "edge-2", ready=False, created=NOW - timedelta(seconds=300))
    book = RolloutBook()

    def refresh(at: timedelta, pods: Recorded, changed: frozenset[NodeName]) -> list[NodeName]:
        book.refresh(
            target=TARGET,
            min_ready_seconds=0,
            now=NOW + at,
            pods_by_node=pods,
            readiness=readiness,
            changed=changed,
            progress_deadline=DEADLINE,
        )
        return sorted(pods.read)

    assert refresh(timedelta(0), Recorded({edge1: [early], edge2: [other]}), frozenset()) == [
        edge1,
        edge2,
    ]
    # edge-1's pod is replaced by one created now: its deadline moves 10 minutes on.
    late = pod("web-1b", "edge-1", ready=False, created=NOW + timedelta(seconds=1))
    pods = {edge1: [late], edge2: [other]}
    assert refresh(timedelta(seconds=1), Recorded(pods), frozenset({edge1})) == [edge1]
    # When the first pod's deadline would have passed, nothing is read again; just after
    # edge-2's, edge-2 (at the deadline itself it is still starting); and a broken node stays
    # broken until its pod changes: the clock brings it back no more.
    assert refresh(timedelta(seconds=11), Recorded(pods), frozenset()) == []
    assert refresh(timedelta(seconds=300), Recorded(pods), frozenset()) == []
    assert refresh(timedelta(seconds=301), Recorded(pods), frozenset()) == [edge2]
    assert refresh(timedelta(seconds=602), Recorded(pods), frozenset()) == [edge1]
    assert refresh(timedelta(seconds=700), Recorded(pods), frozenset()) == []
    assert book.plan(max_unavailable=2).verdicts == {
        edge1: NodeVerdict.BROKEN,
        edge2: NodeVerdict.BROKEN,
    }


def test_a_starting_node_brings_the_daemonset_back_within_the_health_recheck() -> None:
    decided = plan(
        snapshot(
            daemonset(ARU),
            revisions=REVISIONS,
            pods=[pod("web-1", "edge-1", ready=False)],
            nodes=[node("edge-1")],
        ),
        RolloutBook(),
    )
    assert decided.recheck is not None
    assert decided.recheck.starting_seconds == 5.0


def test_an_invalid_progress_deadline_deletes_nothing_and_warns() -> None:
    decided = plan(one_outdated_node({**ARU, PROGRESS_DEADLINE_ANNOTATION: "10m"}), RolloutBook())
    assert decided.deletions == ()
    assert [(n.type, n.reason, n.subject) for n in decided.notices] == [
        (EventType.WARNING, "InvalidProgressDeadline", "10m")
    ]


def test_status_and_the_dry_run_tell_a_broken_node_from_an_offline_one() -> None:
    pods = [
        pod("web-1", "edge-1", ready=False, failures=[CRASHING]),
        old_pod("web-2", "edge-2"),
        old_pod("web-3", "edge-3"),
    ]
    nodes = [node("edge-1"), node("edge-2", NodeReadiness.NOT_READY), node("edge-3")]
    status = rollout_status(
        daemonset=daemonset(ARU), revisions=REVISIONS, pods=pods, nodes=nodes, now=NOW
    )
    assert [(row.node, row.state_text) for row in status.rows] == [
        ("edge-1", "broken: CrashLoopBackOff"),
        ("edge-2", "waiting: node NotReady"),
        ("edge-3", "old"),
    ]
    assert status.summary == (
        'Waiting for daemon set "nginx-daemonset" rollout to finish: 0 of 3 updated pods are '
        "available (1 waiting for NotReady nodes, 1 broken)..."
    )
    taken = snapshot(daemonset(ARU), revisions=REVISIONS, pods=pods, nodes=nodes)
    decided = plan(taken, RolloutBook())
    rows = node_plans(decided, pods_by_node=taken.pods_by_node, readiness=taken.readiness)
    assert [(row.node, str(row.action), row.why) for row in rows] == [
        ("edge-1", "broken", "CrashLoopBackOff since 2025-03-01T11:59:30Z"),
        ("edge-2", "skipped", "node NotReady"),
        ("edge-3", "delete now", "outdated, deleted within max-unavailable"),
    ]


def test_the_clock_changes_a_verdict_at_the_deadline_or_when_a_restart_is_forgiven() -> None:
    not_ready = pod("web-1", "edge-1", ready=False, created=NOW - timedelta(seconds=30))
    assert next_clock_change(not_ready, min_ready_seconds=0, progress_deadline=DEADLINE) == (
        NOW - timedelta(seconds=30) + DEADLINE
    )
    restarted = pod(
        "web-1", "edge-1", ready_for=timedelta(minutes=2), restarted=NOW - timedelta(minutes=3)
    )
    assert next_clock_change(restarted, min_ready_seconds=10, progress_deadline=DEADLINE) == (
        NOW - timedelta(minutes=2) + timedelta(seconds=10) + DEADLINE
    )
    assert (
        next_clock_change(pod("web-1", "edge-1"), min_ready_seconds=0, progress_deadline=DEADLINE)
        is None
    )


def test_status_tells_an_ota_node_that_upgraded_into_a_failing_pod_broken() -> None:
    pods = [pod("web-1", "edge-1", ready=False, failures=[CRASHING]), old_pod("web-2", "edge-2")]
    status = rollout_status(
        daemonset=daemonset({UPDATE_STRATEGY_ANNOTATION: "OTA"}),
        revisions=REVISIONS,
        pods=pods,
        nodes=[node("edge-1"), node("edge-2")],
        now=NOW,
    )
    assert [(row.node, row.state_text, row.broken) for row in status.rows] == [
        ("edge-1", "broken: CrashLoopBackOff", "CrashLoopBackOff"),
        ("edge-2", "old", None),  # not marked yet
    ]
