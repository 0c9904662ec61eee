"""Where a rollout stands as a whole (`rollout_phase`): each phase from the views that lead to it,
the precedence when several hold, and the counts `list` shows beside it."""

from collections.abc import Iterable, Mapping
from datetime import timedelta

import pytest

from edgerollout.domain import vocabulary
from edgerollout.domain.model import ContainerFailure, NodeReadiness, NodeView, PodView
from edgerollout.domain.reporting.rollout_phase import (
    UNFOLLOWED_ANNOTATION_REASONS,
    RolloutCounts,
    RolloutPhase,
)
from edgerollout.domain.reporting.rollout_status import RolloutStatus, rollout_status

from .builders import NEW, NOW, REVISIONS, daemonset, node, old_pod, pod

ARU = {"apps.openyurt.io/update-strategy": "AdvancedRollingUpdate"}
OTA = {"apps.openyurt.io/update-strategy": "OTA"}
PAUSED = {"edgerollout.io/paused": "true"}
NO_FAILURE_TOLERATED = {"edgerollout.io/max-failed": "0"}
# NOW is Saturday 2025-03-01 12:00 UTC: this window is closed.
WINDOW_CLOSED = {"edgerollout.io/maintenance-window": "Mon-Fri 02:00-04:00"}
NOT_READY = NodeReadiness.NOT_READY
THREE_NODES = [node("edge-1"), node("edge-2"), node("edge-3")]


def crash_looping(name: str, on: str) -> PodView:
    """A pod of the newest revision whose container waits in CrashLoopBackOff: broken."""
    return pod(
        name,
        on,
        revision=NEW,
        ready=False,
        failures=[ContainerFailure(container="web", reason="CrashLoopBackOff")],
    )


def status_of(
    annotations: Mapping[str, str],
    pods: Iterable[PodView],
    nodes: Iterable[NodeView] = THREE_NODES,
    *,
    update_strategy_type: str = "OnDelete",
    desired_nodes: int | None = None,
) -> RolloutStatus:
    return rollout_status(
        daemonset=daemonset(
            annotations, update_strategy_type=update_strategy_type, desired_nodes=desired_nodes
        ),
        revisions=REVISIONS,
        pods=pods,
        nodes=nodes,
        now=NOW,
    )


UPDATED = [pod("a", "edge-1"), pod("b", "edge-2"), pod("c", "edge-3")]
ONE_OLD = [pod("a", "edge-1"), pod("b", "edge-2"), old_pod("c", "edge-3")]
ONE_BROKEN = [pod("a", "edge-1"), crash_looping("b", "edge-2"), old_pod("c", "edge-3")]
OFFLINE_NODES = [node("edge-1"), node("edge-2", NOT_READY), node("edge-3", NodeReadiness.UNKNOWN)]


def test_every_phase_names_its_condition_reason_and_the_word_list_shows() -> None:
    assert [(phase.value, phase.text) for phase in RolloutPhase] == [
        ("InvalidAnnotation", "invalid annotation"),
        ("RolloutFailed", "failed"),
        ("ProgressDeadlineExceeded", "progress deadline exceeded"),
        ("Paused", "paused"),
        ("Complete", "complete"),
        ("MaintenanceWindowClosed", "window closed"),
        ("Held", "held"),
        ("WaitingForOfflineNodes", "waiting for offline nodes"),
        ("Rolling", "rolling"),
    ]


@pytest.mark.parametrize(
    ("annotations", "pods", "nodes", "phase", "counts"),
    [
        pytest.param(
            ARU, UPDATED, THREE_NODES, RolloutPhase.COMPLETE, RolloutCounts(total=3, updated=3),
            id="every-pod-updated",
        ),
        pytest.param(
            ARU, ONE_OLD, THREE_NODES, RolloutPhase.ROLLING,
            RolloutCounts(total=3, updated=2, remaining=1),
            id="an-old-pod-on-a-ready-node",
        ),
        pytest.param(
            ARU, [pod("a", "edge-1"), old_pod("b", "edge-2"), old_pod("c", "edge-3")],
            OFFLINE_NODES, RolloutPhase.WAITING_FOR_OFFLINE_NODES,
            RolloutCounts(total=3, updated=1, offline=2),
            id="old-pods-only-on-offline-nodes",
        ),
        pytest.param(
            OTA, [pod("a", "edge-1"), old_pod("b", "edge-2"), old_pod("c", "edge-3")],
            OFFLINE_NODES, RolloutPhase.WAITING_FOR_OFFLINE_NODES,
            RolloutCounts(total=3, updated=1, offline=2),
            id="ota-old-pods-only-on-offline-nodes",
        ),
        pytest.param(
            ARU, [pod("a", "edge-1"), old_pod("b", "edge-2"), old_pod("c", "edge-3")],
            [node("edge-1"), node("edge-2", NOT_READY), node("edge-3")], RolloutPhase.ROLLING,
            RolloutCounts(total=3, updated=1, offline=1, remaining=1),
            id="an-offline-node-and-an-old-pod-on-a-ready-one",
        ),
        pytest.param(
            {**ARU, **PAUSED}, ONE_OLD, THREE_NODES, RolloutPhase.PAUSED,
            RolloutCounts(total=3, updated=2, held=1),
            id="paused",
        ),
        pytest.param(
            {**ARU, **PAUSED}, UPDATED, THREE_NODES, RolloutPhase.PAUSED,
            RolloutCounts(total=3, updated=3),
            id="paused-when-complete",
        ),
        pytest.param(
            {**ARU, **WINDOW_CLOSED}, ONE_OLD, THREE_NODES, RolloutPhase.MAINTENANCE_WINDOW_CLOSED,
            RolloutCounts(total=3, updated=2, held=1),
            id="window-closed",
        ),
        pytest.param(
            {**ARU, **WINDOW_CLOSED}, UPDATED, THREE_NODES, RolloutPhase.COMPLETE,
            RolloutCounts(total=3, updated=3),
            id="complete-while-the-window-is-closed",
        ),
        pytest.param(
            {**OTA, **WINDOW_CLOSED}, ONE_OLD, THREE_NODES, RolloutPhase.ROLLING,
            RolloutCounts(total=3, updated=2, remaining=1),
            id="ota-nodes-upgrade-whatever-the-window",
        ),
        pytest.param(
            ARU, ONE_BROKEN, THREE_NODES, RolloutPhase.PROGRESS_DEADLINE_EXCEEDED,
            RolloutCounts(total=3, updated=1, broken=1, remaining=1),
            id="broken-without-a-failure-budget",
        ),
        pytest.param(
            {**ARU, **PAUSED}, ONE_BROKEN, THREE_NODES, RolloutPhase.PROGRESS_DEADLINE_EXCEEDED,
            RolloutCounts(total=3, updated=1, broken=1, held=1),
            id="broken-outranks-paused",
        ),
        pytest.param(
            {**ARU, **NO_FAILURE_TOLERATED}, ONE_BROKEN, THREE_NODES, RolloutPhase.ROLLOUT_FAILED,
            RolloutCounts(total=3, updated=1, broken=1, held=1),
            id="more-broken-than-max-failed",
        ),
        pytest.param(
            {**ARU, **NO_FAILURE_TOLERATED, **PAUSED}, ONE_BROKEN, THREE_NODES,
            RolloutPhase.ROLLOUT_FAILED, RolloutCounts(total=3, updated=1, broken=1, held=1),
            id="failed-once-the-pause-is-written",
        ),
        pytest.param(
            {**ARU, "edgerollout.io/max-failed": "1"}, ONE_BROKEN, THREE_NODES,
            RolloutPhase.PROGRESS_DEADLINE_EXCEEDED,
            RolloutCounts(total=3, updated=1, broken=1, remaining=1),
            id="broken-within-max-failed",
        ),
        pytest.param(
            {**ARU, "edgerollout.io/partition": "1"}, ONE_OLD, THREE_NODES, RolloutPhase.HELD,
            RolloutCounts(total=3, updated=2, held=1, held_staged=1),
            id="held-at-a-partition",
        ),
        pytest.param(
            {**ARU, "edgerollout.io/node-selector": "canary=true"}, ONE_OLD,
            [node("edge-1"), node("edge-2"), node("edge-3")], RolloutPhase.HELD,
            RolloutCounts(total=3, updated=2, held=1, held_staged=1),
            id="held-by-a-node-selector",
        ),
        pytest.param(
            {**ARU, "edgerollout.io/partition": "1"},
            [pod("a", "edge-1"), old_pod("b", "edge-2"), old_pod("c", "edge-3")], THREE_NODES,
            RolloutPhase.ROLLING, RolloutCounts(total=3, updated=1, held=1, held_staged=1, remaining=1),
            id="a-partition-with-pods-still-to-replace",
        ),
        pytest.param(
            ARU, UPDATED, OFFLINE_NODES, RolloutPhase.COMPLETE, RolloutCounts(total=3, updated=3),
            id="an-offline-node-running-the-newest-revision-is-updated",
        ),
        pytest.param(
            {**ARU, "edgerollout.io/partition": "1"},
            [pod("a", "edge-1"), old_pod("b", "edge-2"), old_pod("c", "edge-3")],
            [node("edge-1"), node("edge-2", NOT_READY), node("edge-3")], RolloutPhase.HELD,
            RolloutCounts(total=3, updated=1, offline=1, held=1, held_staged=1),
            id="offline-and-held-is-held-not-only-offline",
        ),
    ],
)  # fmt: skip
def test_phase_and_counts_of_an_opted_in_rollout(
    annotations: Mapping[str, str],
    pods: list[PodView],
    nodes: list[NodeView],
    phase: RolloutPhase,
    counts: RolloutCounts,
) -> None:
    status = status_of(annotations, pods, nodes)
    assert (status.phase, status.counts, status.unfollowed) == (phase, counts, ())


def test_nodes_the_daemonset_wants_without_a_pod_keep_it_rolling() -> None:
    status = status_of(ARU, [pod("a", "edge-1")], [node("edge-1")], desired_nodes=3)
    assert (status.phase, status.counts) == (
        RolloutPhase.ROLLING,
        RolloutCounts(total=3, updated=1, remaining=2),
    )


@pytest.mark.parametrize(
    ("annotations", "update_strategy_type", "unfollowed"),
    [
        ({"apps.openyurt.io/update-strategy": "Rolling"}, "OnDelete", ("UnknownUpdateStrategy",)),
        (ARU, "RollingUpdate", ("UpdateStrategyNotOnDelete",)),
        ({**ARU, "apps.openyurt.io/max-unavailable": "1.5"}, "OnDelete", ("InvalidMaxUnavailable",)),
        ({**ARU, "edgerollout.io/partition": "two"}, "OnDelete", ("InvalidPartition",)),
        ({**OTA, "edgerollout.io/ota-deadline": "3 days"}, "OnDelete", ("InvalidOTADeadline",)),
        (
            {**ARU, "edgerollout.io/waves": "a,a", "edgerollout.io/max-failed": "x"},
            "OnDelete",
            ("InvalidWaves", "InvalidMaxFailed"),
        ),
    ],
)  # fmt: skip
def test_an_annotation_the_controller_cannot_follow_is_an_invalid_annotation(
    annotations: Mapping[str, str], update_strategy_type: str, unfollowed: tuple[str, ...]
) -> None:
    status = status_of(annotations, ONE_OLD, update_strategy_type=update_strategy_type)
    assert (status.phase, status.unfollowed) == (RolloutPhase.INVALID_ANNOTATION, unfollowed)


def test_invalid_annotation_outranks_a_failed_rollout() -> None:
    annotations = {**ARU, **NO_FAILURE_TOLERATED, "edgerollout.io/partition": "two"}
    status = status_of(annotations, ONE_BROKEN)
    assert (status.phase, status.counts) == (
        RolloutPhase.INVALID_ANNOTATION,
        RolloutCounts(total=3, updated=1, broken=1, held=1),
    )


def test_nodes_are_not_counted_when_the_plan_stops_before_judging_them() -> None:
    status = status_of({**ARU, "edgerollout.io/max-failed": "x"}, ONE_OLD)
    assert (status.phase, status.counts) == (RolloutPhase.INVALID_ANNOTATION, None)


def test_a_daemonset_not_opted_in_has_no_phase() -> None:
    status = status_of({}, UPDATED, update_strategy_type="RollingUpdate")
    assert (status.phase, status.unfollowed) == (None, ())


def test_the_deprecated_strategy_name_is_followed_not_invalid() -> None:
    status = status_of({"apps.openyurt.io/update-strategy": "auto"}, UPDATED)
    assert (status.phase, status.unfollowed) == (RolloutPhase.COMPLETE, ())


def test_every_warning_of_a_value_that_cannot_be_read_makes_an_invalid_annotation() -> None:
    # A new `Invalid...` reason in the vocabulary must be listed, or its rollout would show as
    # rolling while the controller does nothing.
    invalid = {
        value
        for name, value in vars(vocabulary).items()
        if name.startswith("INVALID_") and isinstance(value, str)
    }
    assert invalid <= UNFOLLOWED_ANNOTATION_REASONS
    assert UNFOLLOWED_ANNOTATION_REASONS - invalid == {
        "UnknownUpdateStrategy",
        "UpdateStrategyNotOnDelete",
        "AnnotationTooLong",
    }


# --- when the reading may change on the clock alone (`list --watch` looks again then) -----------


@pytest.mark.parametrize(
    ("annotations", "pods", "min_ready_seconds", "after"),
    [
        pytest.param(ARU, UPDATED, 0, None, id="complete-only-an-event-changes-it"),
        pytest.param(
            ARU, [pod("a", "edge-1", ready_for=timedelta(seconds=5)), *UPDATED[1:]], 10, 5.0,
            id="a-pod-not-yet-available-at-the-health-recheck",
        ),
        pytest.param(
            ARU, [pod("a", "edge-1", ready_for=timedelta(seconds=1)), *UPDATED[1:]], 3, 2.01,
            id="or-when-it-turns-available-if-sooner",
        ),
        pytest.param(
            {**ARU, **WINDOW_CLOSED}, ONE_OLD, 0, 38 * 3600.0, id="when-the-window-opens",
        ),
    ],
)  # fmt: skip
def test_the_status_says_when_the_clock_alone_may_change_it(
    annotations: Mapping[str, str],
    pods: list[PodView],
    min_ready_seconds: int,
    after: float | None,
) -> None:
    status = rollout_status(
        daemonset=daemonset(annotations, min_ready_seconds=min_ready_seconds),
        revisions=REVISIONS,
        pods=pods,
        nodes=THREE_NODES,
        now=NOW,
    )
    assert status.look_again_after == (None if after is None else pytest.approx(after))
