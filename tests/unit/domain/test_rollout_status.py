"""The rollout status `edgerollout status` shows: one state per pod, and the summary line."""

from collections.abc import Iterable, Mapping
from datetime import timedelta

import pytest

from edgerollout.domain.model import (
    Condition,
    ConditionStatus,
    DaemonSetUID,
    DaemonSetView,
    NodeReadiness,
    NodeView,
    PodView,
)
from edgerollout.domain.reporting.rollout_status import (
    PodState,
    PrepullState,
    RolloutStatus,
    rollout_status,
)
from edgerollout.domain.spec.strategy import UpdateStrategy
from edgerollout.domain.vocabulary import (
    POD_IMAGE_READY,
    POD_NEED_UPGRADE,
    PULL_IMAGE_FAIL,
    PULL_IMAGE_SUCCESS,
    WAIT_PULL_IMAGE,
)

from .builders import NEW, NOW, OLD, REVISIONS, node, old_pod, pod

ARU = {
    "apps.openyurt.io/update-strategy": "AdvancedRollingUpdate",
    "apps.openyurt.io/max-unavailable": "30%",
}
OTA = {"apps.openyurt.io/update-strategy": "OTA"}
NOT_READY = NodeReadiness.NOT_READY


def ds(
    annotations: Mapping[str, str] | None = None,
    *,
    update_strategy_type: str = "OnDelete",
    min_ready_seconds: int = 0,
    desired_nodes: int | None = None,
) -> DaemonSetView:
    return DaemonSetView(
        namespace="default",
        name="nginx-daemonset",
        uid=DaemonSetUID("uid-nginx-daemonset"),
        annotations=ARU if annotations is None else annotations,
        update_strategy_type=update_strategy_type,
        min_ready_seconds=min_ready_seconds,
        desired_nodes=desired_nodes,
    )


def status_of(
    pods: Iterable[PodView],
    nodes: Iterable[NodeView],
    *,
    daemonset: DaemonSetView | None = None,
    spec_observed: bool = True,
) -> RolloutStatus:
    return rollout_status(
        daemonset=ds() if daemonset is None else daemonset,
        revisions=REVISIONS,
        pods=pods,
        nodes=nodes,
        now=NOW,
        spec_observed=spec_observed,
    )


def states(status: RolloutStatus) -> list[tuple[str | None, str, str]]:
    return [(row.node, row.pod, row.state_text) for row in status.rows]


def marked(name: str, on: str, *, image_ready: Condition | None = None) -> PodView:
    conditions = {POD_NEED_UPGRADE: condition(POD_NEED_UPGRADE, ConditionStatus.TRUE, "", NEW)}
    if image_ready is not None:
        conditions[POD_IMAGE_READY] = image_ready
    return pod(name, on, revision=OLD, conditions=conditions)


def condition(kind: str, status: ConditionStatus, reason: str, revision_hash: str) -> Condition:
    return Condition(
        type=kind, status=status, reason=reason, message=f"controllerrevision: {revision_hash}"
    )


def test_current_available_pod_is_updated_and_a_full_rollout_is_complete() -> None:
    status = status_of([pod("a", "edge-1"), pod("b", "edge-2")], [node("edge-1"), node("edge-2")])
    assert states(status) == [("edge-1", "a", "updated"), ("edge-2", "b", "updated")]
    assert status.complete
    assert status.summary == 'daemon set "nginx-daemonset" successfully rolled out'
    assert status.newest_revision == NEW


def test_current_pod_not_yet_available_is_upgrading() -> None:
    status = status_of(
        [pod("a", "edge-1", ready=False), pod("b", "edge-2", ready_for=timedelta(seconds=5))],
        [node("edge-1"), node("edge-2")],
        daemonset=ds(min_ready_seconds=10),
    )
    assert states(status) == [("edge-1", "a", "upgrading"), ("edge-2", "b", "upgrading")]
    assert not status.complete


def test_old_pod_terminating_on_a_ready_node_is_upgrading() -> None:
    status = status_of([old_pod("a", "edge-1", deleting=True)], [node("edge-1")])
    assert states(status) == [("edge-1", "a", "upgrading")]


@pytest.mark.parametrize(
    ("revision_hash", "readiness"),
    [(NEW, NodeReadiness.READY), (OLD, NOT_READY), (NEW, NodeReadiness.UNKNOWN)],
)
def test_other_terminating_pods_are_terminating(
    revision_hash: str, readiness: NodeReadiness
) -> None:
    status = status_of(
        [pod("a", "edge-1", revision=revision_hash, deleting=True)], [node("edge-1", readiness)]
    )
    assert states(status) == [("edge-1", "a", "terminating")]
    assert not status.complete


@pytest.mark.parametrize("readiness", [NOT_READY, NodeReadiness.UNKNOWN, NodeReadiness.MISSING])
def test_old_pod_on_a_node_that_is_not_ready_waits_for_it(readiness: NodeReadiness) -> None:
    nodes = [] if readiness is NodeReadiness.MISSING else [node("edge-2", readiness)]
    status = status_of([old_pod("b", "edge-2")], nodes)
    assert states(status) == [("edge-2", "b", "waiting: node NotReady")]
    assert status.rows[0].node_readiness is readiness


def test_old_pod_on_a_ready_node_is_old() -> None:
    status = status_of([old_pod("a", "edge-1")], [node("edge-1")])
    assert states(status) == [("edge-1", "a", "old")]
    assert status.rows[0].current is False
    assert status.rows[0].revision == OLD


def test_aru_summary_counts_available_updated_pods_and_waiting_nodes() -> None:
    status = status_of(
        [pod("a", "edge-1"), old_pod("b", "edge-2"), old_pod("c", "edge-3")],
        [node("edge-1"), node("edge-2", NOT_READY), node("edge-3", NodeReadiness.UNKNOWN)],
    )
    assert [row.state for row in status.rows] == [
        PodState.UPDATED,
        PodState.WAITING_NODE_NOT_READY,
        PodState.WAITING_NODE_NOT_READY,
    ]
    assert not status.complete
    assert status.summary == (
        'Waiting for daemon set "nginx-daemonset" rollout to finish: '
        "1 of 3 updated pods are available (2 waiting for NotReady nodes)..."
    )


def test_aru_strategy_reports_its_budget() -> None:
    status = status_of([pod("a", "edge-1"), old_pod("b", "edge-2")], [node("edge-1")])
    assert status.strategy.strategy is UpdateStrategy.ADVANCED_ROLLING_UPDATE
    assert (status.strategy.max_unavailable, status.strategy.budget, status.strategy.base) == (
        "30%",
        1,
        2,
    )


def test_invalid_max_unavailable_is_reported_without_a_budget() -> None:
    status = status_of(
        [pod("a", "edge-1")],
        [node("edge-1")],
        daemonset=ds({**ARU, "apps.openyurt.io/max-unavailable": "abc"}),
    )
    assert (status.strategy.max_unavailable, status.strategy.budget) == ("abc", None)


def test_nodes_the_daemonset_wants_without_a_pod_keep_the_rollout_incomplete() -> None:
    status = status_of([pod("a", "edge-1")], [node("edge-1")], daemonset=ds(desired_nodes=3))
    assert not status.complete
    assert status.summary == (
        'Waiting for daemon set "nginx-daemonset" rollout to finish: '
        "1 of 3 updated pods are available (2 nodes without a pod)..."
    )


def test_unobserved_spec_is_not_complete() -> None:
    status = status_of([pod("a", "edge-1")], [node("edge-1")], spec_observed=False)
    assert not status.complete
    assert status.summary == "Waiting for daemon set spec update to be observed..."


def test_two_pods_on_one_node_are_not_complete() -> None:
    status = status_of([pod("a", "edge-1"), pod("b", "edge-1")], [node("edge-1")])
    assert states(status) == [("edge-1", "a", "updated"), ("edge-1", "b", "updated")]
    assert not status.complete


def test_pod_without_a_node_is_listed_last_without_readiness() -> None:
    status = status_of([pod("z", None, ready=False), pod("a", "edge-1")], [node("edge-1")])
    assert states(status) == [("edge-1", "a", "updated"), (None, "z", "upgrading")]
    assert status.rows[1].node_readiness is None
    assert not status.complete


def test_ota_marked_pod_has_an_upgrade_available() -> None:
    status = status_of(
        [pod("a", "edge-1"), pod("b", "edge-2"), marked("c", "edge-3")],
        [node("edge-1"), node("edge-2"), node("edge-3")],
        daemonset=ds(OTA),
    )
    assert states(status)[2] == ("edge-3", "c", "OTA: upgrade available")
    assert status.strategy.strategy is UpdateStrategy.OTA
    assert status.strategy.budget is None
    assert status.summary == (
        "2 of 3 pods run the newest revision; 1 node has an upgrade available"
    )


def test_ota_old_pod_not_yet_marked_is_old_even_on_a_not_ready_node() -> None:
    status = status_of(
        [old_pod("a", "edge-1"), old_pod("b", "edge-2")],
        [node("edge-1"), node("edge-2", NOT_READY)],
        daemonset=ds(OTA),
    )
    assert states(status) == [("edge-1", "a", "old"), ("edge-2", "b", "old")]
    assert status.summary == (
        "0 of 2 pods run the newest revision; 0 nodes have an upgrade available"
    )


@pytest.mark.parametrize(
    ("status", "reason", "expected"),
    [
        (ConditionStatus.FALSE, WAIT_PULL_IMAGE, PrepullState.RUNNING),
        (ConditionStatus.TRUE, PULL_IMAGE_SUCCESS, PrepullState.DONE),
        (ConditionStatus.FALSE, PULL_IMAGE_FAIL, PrepullState.FAILED),
    ],
)
def test_ota_pre_pull_of_the_newest_revision_is_appended(
    status: ConditionStatus, reason: str, expected: PrepullState
) -> None:
    image_ready = condition(POD_IMAGE_READY, status, reason, NEW)
    result = status_of(
        [marked("a", "edge-1", image_ready=image_ready)], [node("edge-1")], daemonset=ds(OTA)
    )
    assert result.rows[0].prepull is expected
    assert result.rows[0].state_text == f"OTA: upgrade available, {expected}"


def test_ota_pre_pull_of_an_older_revision_is_not_shown() -> None:
    image_ready = condition(POD_IMAGE_READY, ConditionStatus.TRUE, PULL_IMAGE_SUCCESS, OLD)
    result = status_of(
        [marked("a", "edge-1", image_ready=image_ready)], [node("edge-1")], daemonset=ds(OTA)
    )
    assert result.rows[0].state_text == "OTA: upgrade available"


def test_ota_rollout_with_every_pod_current_is_complete() -> None:
    result = status_of([pod("a", "edge-1")], [node("edge-1")], daemonset=ds(OTA))
    assert result.complete
    assert result.summary == 'daemon set "nginx-daemonset" successfully rolled out'


@pytest.mark.parametrize(
    ("annotations", "update_strategy_type", "reasons"),
    [
        ({}, "RollingUpdate", ()),
        ({"apps.openyurt.io/update-strategy": "Fast"}, "OnDelete", ("UnknownUpdateStrategy",)),
        (ARU, "RollingUpdate", ("UpdateStrategyNotOnDelete",)),
    ],
)
def test_daemonset_not_managed_by_edgerollout_says_why(
    annotations: Mapping[str, str], update_strategy_type: str, reasons: tuple[str, ...]
) -> None:
    result = status_of(
        [pod("a", "edge-1"), old_pod("b", "edge-2")],
        [node("edge-1"), node("edge-2", NOT_READY)],
        daemonset=ds(annotations, update_strategy_type=update_strategy_type),
    )
    assert result.strategy.strategy is None
    assert result.strategy.not_managed_reasons == reasons
    assert states(result) == [("edge-1", "a", "updated"), ("edge-2", "b", "old")]
    assert result.summary == (
        'Waiting for daemon set "nginx-daemonset" rollout to finish: '
        "1 of 2 updated pods are available..."
    )
