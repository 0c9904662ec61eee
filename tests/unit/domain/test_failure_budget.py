"""The failure budget (design §13.4): too many broken nodes stop and pause the rollout."""

from datetime import timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from edgerollout.domain.events import EventType, Notice
from edgerollout.domain.model import ContainerFailure, NodeName, NodeReadiness, PodView
from edgerollout.domain.planning.decision import Plan
from edgerollout.domain.planning.failure_stop import failure_stop
from edgerollout.domain.planning.health import Broken
from edgerollout.domain.planning.reconcile import plan
from edgerollout.domain.planning.rollout_book import RolloutBook
from edgerollout.domain.reporting.node_plans import node_plans
from edgerollout.domain.spec.count import Count
from edgerollout.domain.spec.max_failed import read_max_failed
from edgerollout.domain.vocabulary import (
    MAX_FAILED_ANNOTATION,
    MAX_UNAVAILABLE_ANNOTATION,
    PAUSED_ANNOTATION,
    UPDATE_STRATEGY_ANNOTATION,
)

from .builders import (
    NEW,
    NOW,
    REVISIONS,
    daemonset,
    node,
    old_pod,
    one_outdated_node,
    pod,
    refused,
    snapshot,
    warning,
)

CRASHING = ContainerFailure(container="web", reason="CrashLoopBackOff")
PULLING = ContainerFailure(container="web", reason="ImagePullBackOff")


def aru(max_failed: str | None, *, max_unavailable: str = "2", **more: str) -> dict[str, str]:
    annotations = {
        UPDATE_STRATEGY_ANNOTATION: "AdvancedRollingUpdate",
        MAX_UNAVAILABLE_ANNOTATION: max_unavailable,
        **more,
    }
    if max_failed is not None:
        annotations[MAX_FAILED_ANNOTATION] = max_failed
    return annotations


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("1", Count(written="1", number=1, percent=False)),
        (" 0 ", Count(written="0", number=0, percent=False)),
        ("007", Count(written="007", number=7, percent=False)),
        ("10%", Count(written="10%", number=10, percent=True)),
        ("100%", Count(written="100%", number=100, percent=True)),
        ("2147483647", Count(written="2147483647", number=2**31 - 1, percent=False)),
    ],
)
def test_a_count_or_a_percentage_is_read(raw: str, expected: Count) -> None:
    assert read_max_failed(raw) == expected


@pytest.mark.parametrize(
    "raw", ["", "-1", "1.5", "one", "101%", "10 %", "%", "2147483648", "1" * 40, "1e3"]
)
def test_anything_else_is_one_warning_naming_what_is_accepted(raw: str) -> None:
    assert read_max_failed(raw) == refused(
        "edgerollout.io/max-failed",
        raw,
        "InvalidMaxFailed",
        'expected a number of broken nodes such as "1" or a percentage from "0%" to "100%" of '
        "the rollout's nodes; no node is upgraded until it is fixed",
    )


def test_unset_is_no_budget() -> None:
    assert read_max_failed(None) is None


@pytest.mark.parametrize(
    ("written", "nodes", "tolerated"),
    [("3", 10, 3), ("3", 0, 3), ("10%", 9, 0), ("10%", 10, 1), ("25%", 7, 1), ("100%", 6, 6)],
)
def test_a_percentage_rounds_down(written: str, nodes: int, tolerated: int) -> None:
    limit = read_max_failed(written)
    assert isinstance(limit, Count)

    def stop(broken_nodes: int) -> Notice | None:
        names = [f"edge-{index}" for index in range(broken_nodes)]
        return failure_stop(broken(*names), limit=limit, nodes=nodes, revision=NEW, pause_changes=0)

    assert stop(tolerated) is None
    stopped = stop(tolerated + 1)
    assert stopped is not None
    assert f"tolerates ({tolerated})" in stopped.message


def broken(*names: str) -> dict[NodeName, Broken]:
    return {
        NodeName(name): Broken(
            reason="CrashLoopBackOff",
            message="container web waiting: CrashLoopBackOff",
            since=NOW - timedelta(seconds=30),
        )
        for name in names
    }


def test_within_the_budget_nothing_is_told() -> None:
    limit = Count(written="1", number=1, percent=False)
    assert failure_stop(broken("edge-1"), limit=limit, nodes=5, revision=NEW, pause_changes=0) is (
        None
    )


def test_past_the_budget_the_warning_names_each_broken_node_and_why() -> None:
    limit = Count(written="1", number=1, percent=False)
    notice = failure_stop(
        broken("edge-2", "edge-1"), limit=limit, nodes=5, revision=NEW, pause_changes=2
    )
    assert notice == warning(
        "RolloutFailed",
        (
            '2 nodes are broken on revision hash-new, more than edgerollout.io/max-failed "1" '
            "tolerates (1): edge-1: CrashLoopBackOff since 2025-03-01T11:59:30Z; "
            "edge-2: CrashLoopBackOff since 2025-03-01T11:59:30Z. The rollout is paused "
            '(edgerollout.io/paused: "true") and deletes nothing more; fix the revision, then '
            "resume it (edgerollout resume)"
        ),
        "hash-new/2",
    )


def test_a_long_list_names_ten_nodes_and_counts_the_rest() -> None:
    limit = Count(written="0", number=0, percent=False)
    notice = failure_stop(
        broken(*(f"edge-{i:02}" for i in range(13))),
        limit=limit,
        nodes=20,
        revision=NEW,
        pause_changes=0,
    )
    assert notice is not None
    assert notice.message.startswith("13 nodes are broken")
    assert "edge-09: CrashLoopBackOff" in notice.message
    assert "edge-10" not in notice.message
    assert "; and 3 more. The rollout is paused" in notice.message


def test_one_broken_node_is_told_in_the_singular() -> None:
    limit = Count(written="0%", number=0, percent=True)
    notice = failure_stop(broken("edge-1"), limit=limit, nodes=4, revision=NEW, pause_changes=0)
    assert notice is not None
    assert notice.message.startswith(
        '1 node is broken on revision hash-new, more than edgerollout.io/max-failed "0%" '
        "tolerates (0): edge-1"
    )


def rollout_of(annotations: dict[str, str], pods: list[PodView], *, offline: int = 0) -> Plan:
    nodes = [
        node(str(p.node_name), NodeReadiness.NOT_READY if i < offline else NodeReadiness.READY)
        for i, p in enumerate(pods)
    ]
    return plan(
        snapshot(daemonset(annotations), revisions=REVISIONS, pods=pods, nodes=nodes),
        RolloutBook(),
    )


def crash_looping(name: str, node_name: str) -> PodView:
    return pod(name, node_name, ready=False, failures=[CRASHING])


def test_two_broken_nodes_past_a_budget_of_one_delete_nothing_and_pause() -> None:
    pods = [
        crash_looping("web-1", "edge-1"),
        pod("web-2", "edge-2", ready=False, failures=[PULLING]),
        old_pod("web-3", "edge-3"),
        old_pod("web-4", "edge-4"),
    ]
    decided = rollout_of(aru("1", max_unavailable="4"), pods)
    assert decided.deletions == ()
    assert decided.pause_rollout is True
    assert [(n.type, n.reason, n.subject) for n in decided.notices] == [
        (EventType.WARNING, "RolloutFailed", "hash-new/0")
    ]
    assert "edge-2: ImagePullBackOff since" in decided.notices[0].message
    taken = snapshot(daemonset(aru("1", max_unavailable="4")), revisions=REVISIONS, pods=pods)
    rows = node_plans(decided, pods_by_node=taken.pods_by_node, readiness={})
    assert [(row.node, str(row.action)) for row in rows][2:] == [
        ("edge-3", "held"),
        ("edge-4", "held"),
    ]


def test_within_the_budget_the_rollout_goes_on_around_the_broken_node() -> None:
    pods = [
        crash_looping("web-1", "edge-1"),
        old_pod("web-2", "edge-2"),
        old_pod("web-3", "edge-3"),
    ]
    decided = rollout_of(aru("1"), pods)
    assert [d.node_name for d in decided.deletions] == ["edge-2"]
    assert (decided.pause_rollout, decided.notices) == (False, ())


def test_offline_nodes_never_count_against_the_budget() -> None:
    pods = [
        crash_looping("web-1", "edge-1"),  # offline: not Ready
        crash_looping("web-2", "edge-2"),  # offline: not Ready
        old_pod("web-3", "edge-3"),
    ]
    decided = rollout_of(aru("0"), pods, offline=2)
    assert [d.node_name for d in decided.deletions] == ["edge-3"]
    assert decided.pause_rollout is False


def test_a_paused_rollout_is_not_stopped_again() -> None:
    pods = [crash_looping("web-1", "edge-1"), old_pod("web-2", "edge-2")]
    decided = rollout_of(aru("0", **{PAUSED_ANNOTATION: "true"}), pods)
    assert (decided.deletions, decided.pause_rollout) == ((), False)
    assert [n.reason for n in decided.notices] == ["RolloutPaused"]  # the pause, not a failure


def test_without_a_budget_a_broken_revision_only_stops_at_max_unavailable() -> None:
    pods = [
        crash_looping("web-1", "edge-1"),
        old_pod("web-2", "edge-2"),
        old_pod("web-3", "edge-3"),
    ]
    decided = rollout_of(aru(None), pods)
    assert [d.node_name for d in decided.deletions] == ["edge-2"]
    assert decided.pause_rollout is False


def test_an_unreadable_budget_deletes_nothing_and_warns_once() -> None:
    decided = rollout_of(aru("ten"), [old_pod("web-1", "edge-1")])
    assert (decided.deletions, decided.pause_rollout) == ((), False)
    assert [(n.type, n.reason, n.subject) for n in decided.notices] == [
        (EventType.WARNING, "InvalidMaxFailed", "ten")
    ]


@given(
    states=st.lists(st.sampled_from(["old", "crashing", "offline-crashing", "new"]), max_size=12),
    limit=st.integers(min_value=0, max_value=4),
    budget=st.integers(min_value=1, max_value=5),
)
def test_past_the_budget_nothing_is_deleted_and_within_it_no_stop(
    states: list[str], limit: int, budget: int
) -> None:
    pods: list[PodView] = []
    readiness = []
    for i, state in enumerate(states):
        name, on = f"web-{i}", f"edge-{i:02}"
        if state == "old":
            pods.append(old_pod(name, on))
        elif state == "new":
            pods.append(pod(name, on))
        else:
            pods.append(crash_looping(name, on))
        readiness.append(
            node(on, NodeReadiness.UNKNOWN if state == "offline-crashing" else NodeReadiness.READY)
        )
    decided = plan(
        snapshot(
            daemonset(aru(str(limit), max_unavailable=str(budget))),
            revisions=REVISIONS,
            pods=pods,
            nodes=readiness,
        ),
        RolloutBook(),
    )
    broken_ready = states.count("crashing")
    assert decided.pause_rollout is (broken_ready > limit)
    if broken_ready > limit:
        assert decided.deletions == ()
    assert decided.rollout is not None
    assert len(decided.rollout.broken) == broken_ready


OTA = {UPDATE_STRATEGY_ANNOTATION: "OTA"}


def test_ota_nodes_that_upgraded_into_a_failing_pod_are_broken_and_stop_the_offers() -> None:
    pods = [
        crash_looping("web-1", "edge-1"),
        crash_looping("web-2", "edge-2"),
        old_pod("web-3", "edge-3"),
    ]
    nodes = [node("edge-1"), node("edge-2"), node("edge-3")]
    taken = snapshot(
        daemonset({**OTA, MAX_FAILED_ANNOTATION: "1"}), revisions=REVISIONS, pods=pods, nodes=nodes
    )
    decided = plan(taken, RolloutBook())
    assert (decided.pause_rollout, decided.condition_writes, decided.deletions) == (True, (), ())
    assert [(n.reason, n.subject) for n in decided.notices] == [("RolloutFailed", "hash-new/0")]
    assert sorted(decided.broken) == ["edge-1", "edge-2"]
    rows = node_plans(decided, pods_by_node=taken.pods_by_node, readiness=taken.readiness)
    assert [(row.node, str(row.action)) for row in rows] == [
        ("edge-1", "broken"),
        ("edge-2", "broken"),
        ("edge-3", "held"),
    ]


def test_ota_without_a_budget_reports_a_broken_node_and_still_offers_the_upgrade() -> None:
    pods = [crash_looping("web-1", "edge-1"), old_pod("web-2", "edge-2")]
    nodes = [node("edge-1"), node("edge-2", NodeReadiness.NOT_READY)]
    decided = plan(
        snapshot(daemonset(OTA), revisions=REVISIONS, pods=pods, nodes=nodes), RolloutBook()
    )
    assert list(decided.broken) == ["edge-1"]
    assert decided.broken[NodeName("edge-1")].reason == "CrashLoopBackOff"
    assert [(w.name, str(w.condition.status)) for w in decided.condition_writes] == [
        ("web-1", "False"),  # current: nothing to offer
        ("web-2", "True"),  # offline: offered all the same, the node decides when it is back
    ]
    assert decided.pause_rollout is False


def test_ota_with_an_unreadable_budget_offers_nothing_and_warns() -> None:
    decided = plan(one_outdated_node({**OTA, MAX_FAILED_ANNOTATION: "-1"}), RolloutBook())
    assert decided.condition_writes == ()
    assert [(n.reason, n.subject) for n in decided.notices] == [("InvalidMaxFailed", "-1")]
