"""A staged rollout through one reconcile: Events, deletions, OTA marks, and the dry run."""

from collections.abc import Mapping
from dataclasses import replace
from datetime import UTC, datetime, timedelta

from edgerollout.domain.events import EventType, Notice
from edgerollout.domain.model import (
    ConditionStatus,
    InFlight,
    NodeName,
    NodeReadiness,
    NodeView,
    PodView,
)
from edgerollout.domain.planning.decision import Plan, Snapshot
from edgerollout.domain.planning.reconcile import plan
from edgerollout.domain.planning.rollout_book import RolloutBook
from edgerollout.domain.planning.verdicts import DeletionReason
from edgerollout.domain.reporting.node_plans import Action, NodePlan, node_plans
from edgerollout.domain.reporting.rollout_status import PodState, rollout_status
from edgerollout.domain.vocabulary import (
    MAINTENANCE_WINDOW_ANNOTATION,
    MAX_UNAVAILABLE_ANNOTATION,
    NODEPOOL_LABEL,
    OTA_DEADLINE_ANNOTATION,
    PARTITION_ANNOTATION,
    PAUSED_ANNOTATION,
    POD_NEED_UPGRADE,
    UPDATE_STRATEGY_ANNOTATION,
    WAVES_ANNOTATION,
)

from .builders import (
    NEW,
    NOW,
    REVISIONS,
    condition,
    daemonset,
    in_flight,
    old_pod,
    pod,
    snapshot,
)

ARU = {UPDATE_STRATEGY_ANNOTATION: "AdvancedRollingUpdate", MAX_UNAVAILABLE_ANNOTATION: "2"}
OTA = {UPDATE_STRATEGY_ANNOTATION: "OTA"}
POOLS = {"edge-1": "pool-b", "edge-2": "pool-a", "edge-3": "pool-a", "edge-4": "pool-b"}


def nodes(not_ready: frozenset[str] = frozenset()) -> list[NodeView]:
    return [
        NodeView(
            name=NodeName(f"edge-{i}"),
            readiness=NodeReadiness.NOT_READY if f"edge-{i}" in not_ready else NodeReadiness.READY,
            labels={NODEPOOL_LABEL: POOLS[f"edge-{i}"]} if f"edge-{i}" in POOLS else {},
        )
        for i in range(1, 6)
    ]


def outdated() -> list[PodView]:
    return [old_pod(f"web-{i}", f"edge-{i}") for i in range(1, 6)]


def taken(
    annotations: Mapping[str, str],
    pods: list[PodView],
    *,
    paused_before: bool | None = None,
    pause_changes: int = 0,
    not_ready: frozenset[str] = frozenset(),
) -> Snapshot:
    seen = nodes(not_ready)
    base = snapshot(daemonset(annotations), revisions=REVISIONS, pods=pods, nodes=seen)
    return Snapshot(
        daemonset=base.daemonset,
        revisions=base.revisions,
        pods=base.pods,
        pods_by_node=base.pods_by_node,
        readiness=base.readiness,
        node_labels={node.name: node.labels for node in seen},
        paused_before=paused_before,
        pause_changes=pause_changes,
        now=NOW,
    )


def reasons(decided: Plan) -> list[str]:
    return [notice.reason for notice in decided.notices]


def test_a_pause_is_told_once_when_it_starts_and_deletes_nothing() -> None:
    first = plan(
        taken({**ARU, PAUSED_ANNOTATION: "true"}, outdated(), paused_before=False), RolloutBook()
    )
    assert first.deletions == ()
    assert first.paused is True
    assert first.notices == (
        Notice(
            type=EventType.NORMAL,
            reason="RolloutPaused",
            message=(
                "edgerollout.io/paused is set: no pod is deleted and no upgrade is offered "
                "until the rollout is resumed (edgerollout resume)"
            ),
            subject="1",
        ),
    )
    again = plan(
        taken({**ARU, PAUSED_ANNOTATION: "true"}, outdated(), paused_before=True, pause_changes=1),
        RolloutBook(),
    )
    assert again.notices == ()


def test_a_resume_is_told_and_the_rollout_goes_on() -> None:
    resumed = plan(taken(ARU, outdated(), paused_before=True, pause_changes=1), RolloutBook())
    assert reasons(resumed) == ["RolloutResumed"]
    assert resumed.notices[0].subject == "2"
    assert [d.node_name for d in resumed.deletions] == ["edge-1", "edge-2"]


def test_a_running_rollout_seen_first_is_not_told_resumed() -> None:
    assert plan(taken(ARU, outdated()), RolloutBook()).notices == ()


def test_a_paused_rollout_seen_first_is_told_paused() -> None:
    assert reasons(plan(taken({**ARU, PAUSED_ANNOTATION: "TRUE"}, outdated()), RolloutBook())) == [
        "RolloutPaused"
    ]


def test_a_partition_keeps_the_last_nodes_and_the_budget_goes_to_the_others() -> None:
    decided = plan(taken({**ARU, PARTITION_ANNOTATION: "4"}, outdated()), RolloutBook())
    assert [d.node_name for d in decided.deletions] == ["edge-1"]
    assert sorted(decided.holds.held) == ["edge-2", "edge-3", "edge-4", "edge-5"]


def test_an_invalid_value_deletes_nothing_and_warns() -> None:
    decided = plan(taken({**ARU, PARTITION_ANNOTATION: "two"}, outdated()), RolloutBook())
    assert decided.deletions == ()
    assert reasons(decided) == ["InvalidPartition"]
    assert decided.notices[0].type is EventType.WARNING


def test_waves_delete_in_the_first_wave_and_announce_it() -> None:
    decided = plan(taken({**ARU, WAVES_ANNOTATION: "pool-a, pool-b, *"}, outdated()), RolloutBook())
    assert [d.node_name for d in decided.deletions] == ["edge-2", "edge-3"]
    assert reasons(decided) == ["WaveStarted"]
    assert decided.notices[0].subject == f"{NEW}/0/pool-a"


def test_the_next_wave_starts_when_the_first_is_done_and_its_offline_node_waits() -> None:
    pods = [pod("web-2", "edge-2"), *(old_pod(f"web-{i}", f"edge-{i}") for i in (1, 3, 4, 5))]
    decided = plan(
        taken(
            {**ARU, WAVES_ANNOTATION: "pool-a, pool-b, *"}, pods, not_ready=frozenset({"edge-3"})
        ),
        RolloutBook(),
    )
    assert [d.node_name for d in decided.deletions] == ["edge-1", "edge-4"]
    assert decided.holds.wave is not None
    assert decided.holds.wave.name == "pool-b"
    assert [n.subject for n in decided.notices] == [f"{NEW}/1/pool-b"]


def need_upgrade(decided: Plan) -> dict[str, tuple[ConditionStatus, str]]:
    return {
        write.name: (write.condition.status, write.condition.reason)
        for write in decided.condition_writes
    }


def test_ota_offers_the_upgrade_only_outside_the_partition() -> None:
    decided = plan(taken({**OTA, PARTITION_ANNOTATION: "2"}, outdated()), RolloutBook())
    assert need_upgrade(decided) == {
        "web-1": (ConditionStatus.TRUE, ""),
        "web-2": (ConditionStatus.TRUE, ""),
        "web-3": (ConditionStatus.TRUE, ""),
        "web-4": (ConditionStatus.FALSE, "HeldByPartition"),
        "web-5": (ConditionStatus.FALSE, "HeldByPartition"),
    }


def test_ota_withdraws_an_offer_when_the_partition_grows() -> None:
    marked = condition(POD_NEED_UPGRADE, ConditionStatus.TRUE, since="2025-03-01T11:00:00Z")
    pods = [replace(p, conditions={POD_NEED_UPGRADE: marked}) for p in outdated()]
    decided = plan(taken({**OTA, PARTITION_ANNOTATION: "1"}, pods), RolloutBook())
    assert need_upgrade(decided) == {"web-5": (ConditionStatus.FALSE, "HeldByPartition")}


def test_ota_while_paused_or_invalid_writes_no_condition() -> None:
    for annotations in ({PAUSED_ANNOTATION: "true"}, {PARTITION_ANNOTATION: "-1"}):
        decided = plan(taken({**OTA, **annotations}, outdated()), RolloutBook())
        assert decided.condition_writes == ()


def rows(
    decided: Plan, pods: list[PodView], not_ready: frozenset[str] = frozenset()
) -> list[tuple[str, str, str]]:
    seen = taken({}, pods, not_ready=not_ready)
    return [
        (row.node, str(row.action), row.why)
        for row in node_plans(decided, pods_by_node=seen.pods_by_node, readiness=seen.readiness)
    ]


def test_the_dry_run_reads_every_node_out_of_the_plan() -> None:
    pods = [
        pod("web-1", "edge-1"),
        old_pod("web-2", "edge-2"),
        old_pod("web-3", "edge-3"),
        old_pod("web-4", "edge-4"),
        old_pod("web-5", "edge-5"),
    ]
    annotations = {**ARU, MAX_UNAVAILABLE_ANNOTATION: "1", PARTITION_ANNOTATION: "1"}
    not_ready = frozenset({"edge-4"})
    decided = plan(taken(annotations, pods, not_ready=not_ready), RolloutBook())
    assert rows(decided, pods, not_ready) == [
        ("edge-1", "updated", ""),
        ("edge-2", "delete now", "outdated, deleted within max-unavailable"),
        ("edge-3", "waiting for budget", "1 of 1 unavailable"),
        ("edge-4", "skipped", "node NotReady"),
        ("edge-5", "held", "partition"),
    ]


def test_the_dry_run_of_an_ota_rollout() -> None:
    pods = [pod("web-1", "edge-1"), *(old_pod(f"web-{i}", f"edge-{i}") for i in range(2, 6))]
    decided = plan(taken({**OTA, PARTITION_ANNOTATION: "1"}, pods), RolloutBook())
    assert rows(decided, pods) == [
        ("edge-1", "updated", ""),
        ("edge-2", "mark PodNeedUpgrade=True", "an outdated pod, not marked yet"),
        ("edge-3", "mark PodNeedUpgrade=True", "an outdated pod, not marked yet"),
        ("edge-4", "mark PodNeedUpgrade=True", "an outdated pod, not marked yet"),
        ("edge-5", "held", "partition"),
    ]


def test_the_dry_run_of_an_invalid_budget_waits_everywhere() -> None:
    decided = plan(taken({**ARU, MAX_UNAVAILABLE_ANNOTATION: "x"}, outdated()), RolloutBook())
    assert {action for _, action, _ in rows(decided, outdated())} == {"waiting"}
    assert node_plans(decided, pods_by_node={}, readiness={}) == ()
    assert (
        NodePlan(
            node=NodeName("edge-1"),
            readiness=NodeReadiness.READY,
            pods=("web-1",),
            action=Action.WAITING,
            why="max-unavailable is invalid",
        )
        == node_plans(
            decided,
            pods_by_node={NodeName("edge-1"): [old_pod("web-1", "edge-1")]},
            readiness={NodeName("edge-1"): NodeReadiness.READY},
        )[0]
    )


def test_status_names_the_held_nodes_the_wave_and_the_pause() -> None:
    status = rollout_status(
        daemonset=daemonset({**ARU, WAVES_ANNOTATION: "pool-a, *", PAUSED_ANNOTATION: "true"}),
        revisions=REVISIONS,
        pods=outdated(),
        nodes=nodes(),
        now=NOW,
    )
    assert [(row.node, row.state_text) for row in status.rows] == [
        (f"edge-{i}", "held: paused") for i in range(1, 6)
    ]
    assert status.paused
    assert status.wave is not None
    assert str(status.wave) == "pool-a (1 of 2)"
    assert status.staging == ("waves pool-a, *",)
    assert status.summary == (
        'Paused: Waiting for daemon set "nginx-daemonset" rollout to finish: '
        "0 of 5 updated pods are available (5 held)..."
    )
    running = rollout_status(
        daemonset=daemonset({**ARU, PARTITION_ANNOTATION: "2"}),
        revisions=REVISIONS,
        pods=outdated(),
        nodes=nodes(),
        now=NOW,
    )
    assert [row.state for row in running.rows] == [PodState.OLD] * 3 + [PodState.HELD] * 2
    assert running.rows[-1].state_text == "held: partition"
    assert not running.complete


def test_a_node_between_its_old_and_new_pod_keeps_its_wave_and_its_place() -> None:
    # edge-2 (pool-a) is upgraded and edge-3's (pool-a) pod was deleted and is not replaced
    # yet: pool-a is not done, so pool-b (edge-1, edge-4) waits.
    pods = [pod("web-2", "edge-2"), *(old_pod(f"web-{i}", f"edge-{i}") for i in (1, 4, 5))]
    base = taken({**ARU, WAVES_ANNOTATION: "pool-a, pool-b, *"}, pods)
    between = replace(base, in_flight=InFlight.of([in_flight("web-3", "edge-3")]))
    decided = plan(between, RolloutBook())
    assert decided.deletions == ()
    assert decided.holds.wave is not None
    assert decided.holds.wave.name == "pool-a"
    assert sorted(decided.holds.held) == ["edge-1", "edge-4", "edge-5"]


# NOW is Saturday 2025-03-01 12:00 UTC.
def test_a_closed_maintenance_window_holds_every_deletion_until_it_opens() -> None:
    closed = plan(
        taken({**ARU, MAINTENANCE_WINDOW_ANNOTATION: "Mon-Fri 02:00-04:00"}, outdated()),
        RolloutBook(),
    )
    assert closed.deletions == ()
    assert {str(hold) for hold in closed.holds.held.values()} == {
        "maintenance window closed, opens 2025-03-03T02:00:00Z"
    }
    assert closed.recheck is not None
    assert closed.recheck.window_seconds == 38 * 3600.0
    assert closed.recheck.after(deletions_in_flight=0, unechoed_seconds=None) == 38 * 3600.0

    opened = plan(
        taken({**ARU, MAINTENANCE_WINDOW_ANNOTATION: "Sat 11:00-13:00"}, outdated()),
        RolloutBook(),
    )
    assert [d.node_name for d in opened.deletions] == ["edge-1", "edge-2"]
    assert opened.recheck is not None
    assert opened.recheck.window_seconds is None


def test_a_window_closed_keeps_other_holds_and_announces_no_wave() -> None:
    decided = plan(
        taken(
            {
                **ARU,
                PARTITION_ANNOTATION: "1",
                WAVES_ANNOTATION: "pool-a, *",
                MAINTENANCE_WINDOW_ANNOTATION: "Sun 00:00-24:00 Europe/Berlin",
            },
            outdated(),
        ),
        RolloutBook(),
    )
    assert decided.deletions == ()
    assert str(decided.holds.held[NodeName("edge-5")]) == "partition"
    assert str(decided.holds.held[NodeName("edge-2")]).startswith("maintenance window closed")
    assert reasons(decided) == []


def test_an_invalid_window_warns_and_deletes_nothing() -> None:
    decided = plan(
        taken({**ARU, MAINTENANCE_WINDOW_ANNOTATION: "weekends"}, outdated()), RolloutBook()
    )
    assert decided.deletions == ()
    assert reasons(decided) == ["InvalidMaintenanceWindow"]


def test_a_window_does_not_hold_ota_marks() -> None:
    decided = plan(
        taken({**OTA, MAINTENANCE_WINDOW_ANNOTATION: "Mon-Fri 02:00-04:00"}, outdated()),
        RolloutBook(),
    )
    assert len(decided.condition_writes) == 5
    assert decided.holds.held == {}


def offered(hours_ago: float) -> list[PodView]:
    """The five outdated pods, marked PodNeedUpgrade=True for the newest revision that long ago."""
    since = NOW - timedelta(hours=hours_ago)
    marked = condition(
        POD_NEED_UPGRADE, ConditionStatus.TRUE, since=since.strftime("%Y-%m-%dT%H:%M:%SZ")
    )
    return [replace(p, conditions={POD_NEED_UPGRADE: marked}) for p in outdated()]


OTA_ONE = {**OTA, MAX_UNAVAILABLE_ANNOTATION: "1"}


def test_ota_pods_past_their_deadline_are_upgraded_under_the_budget() -> None:
    decided = plan(taken({**OTA_ONE, OTA_DEADLINE_ANNOTATION: "1h"}, offered(2)), RolloutBook())
    assert [(d.node_name, d.reason) for d in decided.deletions] == [
        ("edge-1", DeletionReason.OTA_DEADLINE)
    ]
    notice = decided.deletions[0].notice
    assert (notice.type, notice.reason) == (EventType.NORMAL, "OTADeadlineUpgrade")
    assert notice.message == (
        "Deleted pod: web-1 on node edge-1: marked PodNeedUpgrade for longer than the OTA "
        "deadline, upgraded by the controller"
    )
    assert decided.condition_writes == ()
    seen = taken({}, offered(2))
    assert [
        (row.node, str(row.action))
        for row in node_plans(decided, pods_by_node=seen.pods_by_node, readiness=seen.readiness)
    ][:2] == [("edge-1", "delete now"), ("edge-2", "upgrade offered")]


def test_ota_pods_within_their_deadline_bring_the_daemonset_back_when_it_passes() -> None:
    decided = plan(taken({**OTA_ONE, OTA_DEADLINE_ANNOTATION: "1h"}, offered(0.5)), RolloutBook())
    assert decided.deletions == ()
    assert decided.recheck is not None
    assert decided.recheck.ota_deadline_seconds == 1800.0


def test_without_a_deadline_ota_stays_node_driven_and_a_bad_one_warns() -> None:
    assert plan(taken(OTA_ONE, offered(100)), RolloutBook()).deletions == ()
    bad = plan(taken({**OTA_ONE, OTA_DEADLINE_ANNOTATION: "3d"}, offered(100)), RolloutBook())
    assert bad.deletions == ()
    assert reasons(bad) == ["InvalidOTADeadline"]


def test_ota_deadline_upgrades_wait_for_a_window_and_spare_held_nodes() -> None:
    closed = {
        **OTA_ONE,
        OTA_DEADLINE_ANNOTATION: "1h",
        MAINTENANCE_WINDOW_ANNOTATION: "Mon 02:00-03:00",
    }
    waiting = plan(taken(closed, offered(2)), RolloutBook())
    assert waiting.deletions == ()
    # Overdue pods wait for the window: the DaemonSet is looked at again when it opens.
    assert waiting.window_opens == datetime(2025, 3, 3, 2, 0, tzinfo=UTC)
    assert waiting.recheck is not None
    assert waiting.recheck.window_seconds == 38 * 3600.0
    partitioned = {
        **OTA,
        MAX_UNAVAILABLE_ANNOTATION: "5",
        OTA_DEADLINE_ANNOTATION: "1h",
        PARTITION_ANNOTATION: "2",
    }
    decided = plan(taken(partitioned, offered(2)), RolloutBook())
    assert [d.node_name for d in decided.deletions] == ["edge-1", "edge-2", "edge-3"]
