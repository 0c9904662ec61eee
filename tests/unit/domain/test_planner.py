"""Which pods an AdvancedRollingUpdate deletes now (design §4), scenario by scenario."""

from collections.abc import Iterable
from datetime import timedelta
from typing import Any

import pytest

from edgerollout.domain.events import EventType, Notice
from edgerollout.domain.model import (
    NodeName,
    NodeReadiness,
    NodeView,
    PodView,
)
from edgerollout.domain.planning.revisions import TargetRevision
from edgerollout.domain.planning.verdicts import Deletion, DeletionPlan, DeletionReason, NodeVerdict

from .builders import PlanInputs, deleted, in_flight, node, old_pod, pod, uid
from .planning import plan_deletions

NOT_READY = NodeReadiness.NOT_READY


def plan(pods: Iterable[PodView], nodes: Iterable[NodeView], **options: Any) -> DeletionPlan:
    """The planner's plan of `pods` on `nodes`; `options` are the other fields of `PlanInputs`."""
    return plan_deletions(PlanInputs(pods=pods, nodes=nodes, **options))


def ready_nodes(*names: str) -> list[NodeView]:
    return [node(name) for name in names]


def test_available_old_pods_are_deleted_in_node_name_order_within_budget() -> None:
    pods = [old_pod(f"p{n}", f"edge-{n}") for n in (5, 3, 1, 4, 2)]
    result = plan(pods, ready_nodes(*(f"edge-{n}" for n in range(1, 6))), max_unavailable=2)
    assert result.deletions == tuple(
        Deletion(
            namespace="default",
            name=f"p{n}",
            uid=uid(f"p{n}"),
            node_name=NodeName(f"edge-{n}"),
            reason=DeletionReason.OUTDATED_WITHIN_BUDGET,
        )
        for n in (1, 2)
    )
    assert result.unavailable == 0
    assert result.unavailable_after == 2
    assert result.waiting_for_budget == ("edge-3", "edge-4", "edge-5")


def test_node_names_order_as_strings() -> None:
    pods = [old_pod("p10", "edge-10"), old_pod("p9", "edge-9")]
    result = plan(pods, ready_nodes("edge-9", "edge-10"))
    assert deleted(result) == ["p10"]


def test_unavailable_old_pods_are_replaced_at_once_even_beyond_budget() -> None:
    pods = [
        old_pod("crashing-a", "edge-a", ready=False),
        old_pod("crashing-b", "edge-b", ready=False),
        old_pod("healthy-c", "edge-c"),
    ]
    result = plan(pods, ready_nodes("edge-a", "edge-b", "edge-c"), max_unavailable=1)
    assert deleted(result) == ["crashing-a", "crashing-b"]
    assert {d.reason for d in result.deletions} == {DeletionReason.OUTDATED_UNAVAILABLE}
    assert result.unavailable == 2
    assert result.unavailable_after == 2
    assert result.waiting_for_budget == ("edge-c",)


def test_unavailable_old_pods_count_against_the_budget_of_available_ones() -> None:
    pods = [
        old_pod("crashing-a", "edge-a", ready=False),
        old_pod("healthy-b", "edge-b"),
        old_pod("healthy-c", "edge-c"),
    ]
    result = plan(pods, ready_nodes("edge-a", "edge-b", "edge-c"), max_unavailable=2)
    assert deleted(result) == ["crashing-a", "healthy-b"]


@pytest.mark.parametrize(
    ("max_unavailable", "expected"),
    [
        pytest.param(1, [], id="starting-new-pod-uses-the-only-unit"),
        pytest.param(2, ["old-b"], id="second-unit-lets-one-more-go"),
    ],
)
def test_starting_new_pod_counts_as_unavailable(max_unavailable: int, expected: list[str]) -> None:
    pods = [
        pod("new-a", "edge-a", ready=False),
        old_pod("old-b", "edge-b"),
        old_pod("old-c", "edge-c"),
    ]
    result = plan(pods, ready_nodes("edge-a", "edge-b", "edge-c"), max_unavailable=max_unavailable)
    assert deleted(result) == expected
    assert result.verdicts[NodeName("edge-a")] is NodeVerdict.STARTING


@pytest.mark.parametrize(
    "readiness",
    [NodeReadiness.NOT_READY, NodeReadiness.UNKNOWN, NodeReadiness.MISSING],
    ids=["not-ready", "unknown", "missing-node-view"],
)
def test_notready_node_is_not_counted_against_budget(readiness: NodeReadiness) -> None:
    pods = [
        # The node lifecycle controller marks pods on an unreachable node Ready=False.
        old_pod("offline", "edge-1", ready=False),
        old_pod("online", "edge-2"),
    ]
    result = plan(pods, [node("edge-1", readiness), node("edge-2")], max_unavailable=1)
    assert deleted(result) == ["online"]
    assert result.unavailable == 0
    assert result.skipped_nodes == ("edge-1",)
    assert NodeName("edge-1") not in result.verdicts


def test_pods_on_a_node_absent_from_the_node_list_are_skipped() -> None:
    pods = [old_pod("orphan", "gone-node", ready=False), old_pod("online", "edge-2")]
    result = plan(pods, [node("edge-2")], max_unavailable=1)
    assert deleted(result) == ["online"]
    assert result.skipped_nodes == ("gone-node",)


def test_terminating_pod_on_notready_node_does_not_hold_the_budget() -> None:
    pods = [
        old_pod("stuck", "edge-1", ready=False, deleting=True),
        old_pod("online-2", "edge-2"),
        old_pod("online-3", "edge-3"),
    ]
    result = plan(pods, [node("edge-1", NOT_READY), node("edge-2"), node("edge-3")])
    assert deleted(result) == ["online-2"]


def test_node_with_only_a_terminating_pod_is_unavailable_and_not_deleted_again() -> None:
    pods = [old_pod("leaving", "edge-1", deleting=True), old_pod("next", "edge-2")]
    result = plan(pods, ready_nodes("edge-1", "edge-2"), max_unavailable=1)
    assert deleted(result) == []
    assert result.verdicts == {
        NodeName("edge-1"): NodeVerdict.EMPTY,
        NodeName("edge-2"): NodeVerdict.OUTDATED,
    }
    assert result.unavailable == 1


def test_terminating_old_pod_beside_an_available_new_one_is_ignored() -> None:
    pods = [
        old_pod("leaving", "edge-1", deleting=True),
        pod("arrived", "edge-1"),
        old_pod("next", "edge-2"),
    ]
    result = plan(pods, ready_nodes("edge-1", "edge-2"), max_unavailable=1)
    assert result.verdicts[NodeName("edge-1")] is NodeVerdict.UP_TO_DATE
    assert deleted(result) == ["next"]


def test_old_and_new_pod_on_one_node_is_unavailable_and_left_to_the_native_controller() -> None:
    pods = [old_pod("old", "edge-1"), pod("new", "edge-1"), old_pod("next", "edge-2")]
    result = plan(pods, ready_nodes("edge-1", "edge-2"), max_unavailable=1)
    assert result.verdicts[NodeName("edge-1")] is NodeVerdict.OLD_AND_NEW
    assert deleted(result) == []


@pytest.mark.parametrize(
    "duplicates",
    [
        pytest.param([old_pod("old-1", "edge-1"), old_pod("old-2", "edge-1")], id="two-old"),
        pytest.param([pod("new-1", "edge-1"), pod("new-2", "edge-1")], id="two-new"),
        pytest.param(
            [old_pod("old-1", "edge-1", ready=False), old_pod("old-2", "edge-1", ready=False)],
            id="two-unavailable-old",
        ),
    ],
)
def test_excess_pods_on_a_node_are_unavailable_and_none_is_deleted(
    duplicates: list[PodView],
) -> None:
    result = plan(
        [*duplicates, old_pod("next", "edge-2")], ready_nodes("edge-1", "edge-2"), max_unavailable=2
    )
    assert result.verdicts[NodeName("edge-1")] is NodeVerdict.EXCESS
    assert deleted(result) == ["next"]


def test_node_whose_deleted_pod_is_gone_counts_as_unavailable_until_replaced() -> None:
    pods = [old_pod("next", "edge-2")]
    result = plan(pods, ready_nodes("edge-1", "edge-2"), in_flight=[in_flight("gone", "edge-1")])
    assert result.verdicts == {
        NodeName("edge-1"): NodeVerdict.EMPTY,
        NodeName("edge-2"): NodeVerdict.OUTDATED,
    }
    assert deleted(result) == []


def test_in_flight_deletion_still_shown_running_is_not_deleted_twice_and_holds_budget() -> None:
    pods = [old_pod("deleted-already", "edge-1"), old_pod("next", "edge-2")]
    result = plan(
        pods,
        ready_nodes("edge-1", "edge-2"),
        in_flight=[in_flight("deleted-already", "edge-1")],
    )
    assert deleted(result) == []
    assert result.unavailable == 1


def test_in_flight_unavailable_old_pod_is_not_replaced_again() -> None:
    pods = [old_pod("crashing", "edge-1", ready=False)]
    result = plan(pods, ready_nodes("edge-1"), in_flight=[in_flight("crashing", "edge-1")])
    assert deleted(result) == []


def test_replacement_that_arrived_makes_the_in_flight_node_available_again() -> None:
    pods = [pod("replacement", "edge-1"), old_pod("next", "edge-2")]
    result = plan(pods, ready_nodes("edge-1", "edge-2"), in_flight=[in_flight("gone", "edge-1")])
    assert result.verdicts[NodeName("edge-1")] is NodeVerdict.UP_TO_DATE
    assert deleted(result) == ["next"]


@pytest.mark.parametrize(
    ("new_pod_ready_for", "expected"),
    [
        pytest.param(timedelta(seconds=5), [], id="new-pod-within-min-ready-seconds-holds-budget"),
        pytest.param(timedelta(seconds=31), ["next"], id="new-pod-past-min-ready-seconds"),
    ],
)
def test_min_ready_seconds_delays_availability_of_new_pods(
    new_pod_ready_for: timedelta, expected: list[str]
) -> None:
    pods = [pod("new", "edge-1", ready_for=new_pod_ready_for), old_pod("next", "edge-2")]
    result = plan(pods, ready_nodes("edge-1", "edge-2"), min_ready_seconds=30)
    assert deleted(result) == expected


def test_old_pod_within_min_ready_seconds_is_unavailable_and_replaced_at_once() -> None:
    pods = [old_pod("fresh-old", "edge-1", ready_for=timedelta(seconds=5))]
    result = plan(pods, ready_nodes("edge-1"), max_unavailable=0, min_ready_seconds=30)
    assert [(d.name, d.reason) for d in result.deletions] == [
        ("fresh-old", DeletionReason.OUTDATED_UNAVAILABLE)
    ]


def test_zero_budget_only_replaces_unavailable_pods() -> None:
    pods = [old_pod("crashing", "edge-1", ready=False), old_pod("healthy", "edge-2")]
    result = plan(pods, ready_nodes("edge-1", "edge-2"), max_unavailable=0)
    assert deleted(result) == ["crashing"]


def test_all_current_and_available_means_nothing_to_do() -> None:
    pods = [pod("a", "edge-1"), pod("b", "edge-2")]
    result = plan(pods, ready_nodes("edge-1", "edge-2"), max_unavailable=2)
    assert result == DeletionPlan(
        deletions=(),
        max_unavailable=2,
        unavailable=0,
        verdicts={
            NodeName("edge-1"): NodeVerdict.UP_TO_DATE,
            NodeName("edge-2"): NodeVerdict.UP_TO_DATE,
        },
    )


def test_unknown_newest_revision_deletes_nothing() -> None:
    pods = [old_pod("a", "edge-1", ready=False), old_pod("b", "edge-2"), old_pod("c", "edge-3")]
    result = plan(
        pods,
        [node("edge-1"), node("edge-2"), node("edge-3", NOT_READY)],
        max_unavailable=3,
        target=TargetRevision(hash=None, template_generation=None),
    )
    assert result == DeletionPlan(
        deletions=(),
        max_unavailable=3,
        unavailable=0,
        skipped_nodes=(NodeName("edge-3"),),
        newest_known=False,
    )


def test_pods_without_a_node_take_no_part() -> None:
    result = plan([old_pod("pending", None, ready=False)], ready_nodes("edge-1"))
    assert result.deletions == ()
    assert result.verdicts == {}


def test_plan_does_not_depend_on_input_order() -> None:
    pods = [
        old_pod("a", "edge-1"),
        old_pod("b", "edge-2", ready=False),
        pod("c", "edge-3", ready=False),
        old_pod("d", "edge-4"),
        old_pod("e", "edge-5"),
    ]
    nodes = [
        node("edge-1"),
        node("edge-2"),
        node("edge-3"),
        node("edge-4", NOT_READY),
        node("edge-5"),
    ]
    forward = plan(pods, nodes, max_unavailable=3)
    backward = plan(reversed(pods), reversed(nodes), max_unavailable=3)
    assert forward == backward
    assert deleted(forward) == ["a", "b"]


def test_deletion_notice_says_which_pod_where_and_why() -> None:
    (deletion,) = plan([old_pod("web-x", "edge-7", ready=False)], ready_nodes("edge-7")).deletions
    assert deletion.notice == Notice(
        type=EventType.NORMAL,
        reason="SuccessfulDelete",
        message="Deleted pod: web-x on node edge-7: outdated and not available, replaced at once",
        subject="uid-web-x",
        routine=True,
    )


def test_desired_node_without_any_pod_counts_as_unavailable() -> None:
    # A restarted controller has no record of the pod it deleted on edge-3; the native controller
    # still counts edge-3 as a node that should run the DaemonSet.
    pods = [old_pod("p1", "edge-1"), old_pod("p2", "edge-2")]
    result = plan(pods, ready_nodes("edge-1", "edge-2", "edge-3"), desired_nodes=3)
    assert deleted(result) == []
    assert result.unavailable == 1
    assert result.waiting_for_budget == ("edge-1", "edge-2")


def test_desired_nodes_already_holding_pods_add_nothing() -> None:
    pods = [old_pod("p1", "edge-1"), old_pod("p2", "edge-2")]
    result = plan(pods, ready_nodes("edge-1", "edge-2"), desired_nodes=2)
    assert deleted(result) == ["p1"]
    assert result.unavailable == 0


def test_an_offline_node_a_daemonset_tolerates_is_counted_desired_but_not_short() -> None:
    # A node agent tolerates every taint: the native controller counts the unreachable edge-3 in
    # desiredNumberScheduled; it holds its pod, so it takes nothing from the budget.
    pods = [old_pod("p1", "edge-1"), old_pod("p2", "edge-2"), old_pod("p3", "edge-3")]
    nodes = [*ready_nodes("edge-1", "edge-2"), node("edge-3", NodeReadiness.UNKNOWN)]
    everything = frozenset({NodeReadiness.NOT_READY, NodeReadiness.UNKNOWN})

    result = plan(pods, nodes, desired_nodes=3, counted_while_not_ready=everything)

    assert deleted(result) == ["p1"]
    assert (result.unavailable, result.skipped_nodes) == (0, ("edge-3",))


def test_an_offline_node_not_tolerated_is_no_part_of_the_desired_count() -> None:
    # Without the toleration the native controller leaves edge-3 out of desiredNumberScheduled
    # (2): a third node counted there would be a Ready node holding no pod.
    pods = [old_pod("p1", "edge-1"), old_pod("p2", "edge-2"), old_pod("p3", "edge-3")]
    nodes = [*ready_nodes("edge-1", "edge-2"), node("edge-3", NodeReadiness.UNKNOWN)]
    unreachable_only = frozenset({NodeReadiness.UNKNOWN})

    assert deleted(plan(pods, nodes, desired_nodes=2)) == ["p1"]
    assert plan(pods, nodes, desired_nodes=3).unavailable == 1
    assert deleted(plan(pods, nodes, desired_nodes=3)) == []
    # Tolerating only not-ready (NoSchedule) does not cover an unreachable node.
    not_ready_only = frozenset({NodeReadiness.NOT_READY})
    assert (
        plan(pods, nodes, desired_nodes=3, counted_while_not_ready=not_ready_only).unavailable == 1
    )
    assert (
        plan(pods, nodes, desired_nodes=3, counted_while_not_ready=unreachable_only).unavailable
        == 0
    )


def test_desired_count_below_the_nodes_seen_never_loosens_the_budget() -> None:
    # A stale status (a node that just turned NotReady and is still holding a pod) must not give
    # the planner extra room.
    pods = [old_pod("p1", "edge-1"), old_pod("p2", "edge-2", ready=False)]
    result = plan(pods, ready_nodes("edge-1", "edge-2"), desired_nodes=0)
    assert deleted(result) == ["p2"]
    assert result.unavailable == 1
    assert result.waiting_for_budget == ("edge-1",)
