"""A node's hold on its upgrade (design §13.6): read from its pod, bounded by max-hold, planned."""

from collections.abc import Mapping
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from edgerollout.domain.events import EventType, Notice
from edgerollout.domain.model import (
    Condition,
    ConditionStatus,
    NodeName,
    NodeReadiness,
    NodeView,
    PodView,
)
from edgerollout.domain.planning.decision import Plan, Snapshot
from edgerollout.domain.planning.holds import Hold, HoldReason
from edgerollout.domain.planning.node_holds import AskedHold, NodeHolds, judge_node_holds
from edgerollout.domain.planning.reconcile import plan
from edgerollout.domain.planning.rollout_book import RolloutBook
from edgerollout.domain.reporting.node_plans import Action, node_plans
from edgerollout.domain.reporting.rollout_phase import RolloutPhase
from edgerollout.domain.reporting.rollout_status import PodState, rollout_status
from edgerollout.domain.spec.node_hold import (
    DEFAULT_MAX_HOLD,
    HoldRequest,
    hold_message,
    read_hold,
    read_max_hold,
)
from edgerollout.domain.vocabulary import (
    MAX_HOLD_ANNOTATION,
    MAX_UNAVAILABLE_ANNOTATION,
    NODEPOOL_LABEL,
    OTA_DEADLINE_ANNOTATION,
    POD_NEED_UPGRADE,
    UPDATE_STRATEGY_ANNOTATION,
    UPGRADE_HELD,
    WAVES_ANNOTATION,
)

from .builders import NOW, REVISIONS, condition, daemonset, old_pod, pod, snapshot, uid

ARU = {UPDATE_STRATEGY_ANNOTATION: "AdvancedRollingUpdate", MAX_UNAVAILABLE_ANNOTATION: "3"}
OTA = {
    UPDATE_STRATEGY_ANNOTATION: "OTA",
    OTA_DEADLINE_ANNOTATION: "1h",
    MAX_UNAVAILABLE_ANNOTATION: "3",
}
ASKED = NOW - timedelta(hours=1)
UNTIL = NOW + timedelta(hours=2)


def held(until: datetime = UNTIL, asked: datetime = ASKED, why: str = "a car driving") -> Condition:
    """The condition an agent writes for a hold asked at `asked`, until `until`."""
    return Condition(
        type=UPGRADE_HELD,
        status=ConditionStatus.TRUE,
        reason="NodeAsked",
        message=hold_message(until=until, asked=asked, why=why),
        last_transition_time="2025-03-01T11:00:00Z",
    )


def with_hold(subject: PodView, hold: Condition) -> PodView:
    return replace(subject, conditions={**subject.conditions, UPGRADE_HELD: hold})


def three_old(*, first: Condition | None = None, ready: bool = True) -> list[PodView]:
    """Old pods on edge-1..3; edge-1's carries `first` if given."""
    pods = [old_pod(f"web-{i}", f"edge-{i}", ready=ready) for i in range(1, 4)]
    if first is not None:
        pods[0] = with_hold(pods[0], first)
    return pods


def taken(
    annotations: Mapping[str, str],
    pods: list[PodView],
    *,
    now: datetime = NOW,
    labels: Mapping[str, Mapping[str, str]] | None = None,
) -> Snapshot:
    names = sorted({p.node_name for p in pods if p.node_name is not None})
    seen = [
        NodeView(name=name, readiness=NodeReadiness.READY, labels=(labels or {}).get(name, {}))
        for name in names
    ]
    base = snapshot(daemonset(annotations), revisions=REVISIONS, pods=pods, nodes=seen, now=now)
    return replace(base, node_labels={n.name: n.labels for n in seen})


def deleted_nodes(decided: Plan) -> list[str]:
    return [deletion.node_name for deletion in decided.deletions]


# --- reading the condition and the annotation ---------------------------------------------------


def test_the_message_the_agent_writes_is_read_back_as_the_same_hold() -> None:
    assert hold_message(until=UNTIL, asked=ASKED, why="shop open") == (
        "until 2025-03-01T14:00:00Z, asked at 2025-03-01T11:00:00Z: shop open"
    )
    assert read_hold({UPGRADE_HELD: held(why="shop open")}) == HoldRequest(
        until=UNTIL, asked=ASKED, why="shop open"
    )


@pytest.mark.parametrize(
    ("status", "message", "since", "expected"),
    [
        # Lifted: not a hold.
        (ConditionStatus.FALSE, "lifted at 2025-03-01T11:30:00Z", "2025-03-01T11:30:00Z", None),
        (ConditionStatus.UNKNOWN, "until 2025-03-01T14:00:00Z, asked at x: y", None, None),
        # A message of another form: asked at the transition, as long as max-hold allows.
        (
            ConditionStatus.TRUE,
            "hold please",
            "2025-03-01T11:00:00Z",
            HoldRequest(until=None, asked=ASKED, why="hold please"),
        ),
        (
            ConditionStatus.TRUE,
            "until tomorrow, asked at 2025-03-01T11:00:00Z: x",
            "2025-03-01T10:00:00Z",
            HoldRequest(
                until=None,
                asked=datetime(2025, 3, 1, 10, tzinfo=UTC),
                why="until tomorrow, asked at 2025-03-01T11:00:00Z: x",
            ),
        ),
        # Neither readable: it cannot be bounded, so it is no hold.
        (ConditionStatus.TRUE, "hold please", None, None),
        (ConditionStatus.TRUE, "hold please", "yesterday", None),
    ],
)
def test_a_hold_is_read_from_a_true_condition_only(
    status: ConditionStatus, message: str, since: str | None, expected: HoldRequest | None
) -> None:
    written = Condition(
        type=UPGRADE_HELD, status=status, message=message, last_transition_time=since
    )
    assert read_hold({UPGRADE_HELD: written}) == expected


def test_a_reason_is_cut_and_made_printable() -> None:
    request = read_hold({UPGRADE_HELD: held(why="\x1b[2J" + "x" * 400)})
    assert request is not None
    assert request.why == "\\x1b[2J" + "x" * 252


def test_a_pod_without_the_condition_is_not_held() -> None:
    assert read_hold({}) is None


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (None, timedelta(hours=24)),
        ("2h", timedelta(hours=2)),
        (" 90m ", timedelta(minutes=90)),
        ("1ns", timedelta(microseconds=1)),
    ],
)
def test_max_hold_is_a_go_duration_defaulting_to_a_day(
    raw: str | None, expected: timedelta
) -> None:
    assert read_max_hold(raw) == expected


@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        ("0", "it is zero"),
        ("-1h", "it is negative"),
        ("1d", '"d" is not a unit'),
        ("", "it is not a duration"),
    ],
)
def test_an_unreadable_max_hold_is_a_warning(raw: str, problem: str) -> None:
    notice = read_max_hold(raw)
    assert isinstance(notice, Notice)
    assert (notice.type, notice.reason, notice.subject) == (
        EventType.WARNING,
        "InvalidMaxHold",
        raw,
    )
    assert notice.message.startswith(f'edgerollout.io/max-hold is "{raw}": {problem}; ')
    assert notice.message.endswith("no node is upgraded until it is fixed")


# --- judging holds against max-hold and the clock ----------------------------------------------


def asked_on(node: str, request: HoldRequest) -> dict[NodeName, tuple[AskedHold, ...]]:
    return {NodeName(node): (AskedHold(pod=old_pod("web-1", node), request=request),)}


@pytest.mark.parametrize(
    ("request_", "in_force", "ends_in", "warned"),
    [
        # Before its end, within max-hold: in force until its end.
        (HoldRequest(until=UNTIL, asked=ASKED, why="x"), True, 7200.0, False),
        # Its end is past: over, quietly.
        (HoldRequest(until=NOW, asked=ASKED, why="x"), False, None, False),
        # Asked for 30 h with a max-hold of 24 h, 23 h ago: in force for one more hour.
        (
            HoldRequest(until=NOW + timedelta(hours=7), asked=NOW - timedelta(hours=23), why="x"),
            True,
            3600.0,
            False,
        ),
        # The same, 24 h after it was asked: ignored, with a Warning.
        (
            HoldRequest(until=NOW + timedelta(hours=6), asked=NOW - timedelta(hours=24), why="x"),
            False,
            None,
            True,
        ),
        # No readable end: held for max-hold, then ignored with a Warning.
        (HoldRequest(until=None, asked=ASKED, why="x"), True, 23 * 3600.0, False),
        (HoldRequest(until=None, asked=NOW - timedelta(days=2), why="x"), False, None, True),
    ],
)
def test_a_hold_is_in_force_before_its_end_and_within_max_hold(
    request_: HoldRequest, in_force: bool, ends_in: float | None, warned: bool
) -> None:
    judged = judge_node_holds(asked_on("edge-1", request_), max_hold=DEFAULT_MAX_HOLD, now=NOW)
    assert (dict(judged.in_force), judged.ends_in_seconds) == (
        {NodeName("edge-1"): request_} if in_force else {},
        ends_in,
    )
    assert [n.reason for n in judged.notices] == (["UpgradeHoldIgnored"] if warned else [])


def test_the_warning_of_an_ignored_hold_names_the_pod_the_hold_and_max_hold() -> None:
    request = HoldRequest(
        until=NOW + timedelta(hours=1), asked=NOW - timedelta(hours=3), why="a car driving"
    )
    judged = judge_node_holds(asked_on("edge-1", request), max_hold=timedelta(hours=2), now=NOW)
    assert judged == NodeHolds(
        notices=(
            Notice(
                type=EventType.WARNING,
                reason="UpgradeHoldIgnored",
                message=(
                    "node edge-1 holds the upgrade of pod web-1 until 2025-03-01T13:00:00Z "
                    "(a car driving), asked at 2025-03-01T09:00:00Z: longer than "
                    "edgerollout.io/max-hold (2h) allows, so the hold is ignored since "
                    "2025-03-01T11:00:00Z"
                ),
                subject=f"{uid('web-1')}/2025-03-01T09:00:00Z",
            ),
        )
    )


# --- planned: AdvancedRollingUpdate --------------------------------------------------------------


def test_a_held_pod_is_not_deleted_and_the_budget_goes_to_the_others() -> None:
    decided = plan(
        taken(ARU, [*three_old(first=held()), old_pod("web-4", "edge-4")]), RolloutBook()
    )
    assert deleted_nodes(decided) == ["edge-2", "edge-3", "edge-4"]
    assert decided.holds.held == {
        NodeName("edge-1"): Hold(reason=HoldReason.NODE_ASKED, opens=UNTIL, why="a car driving")
    }
    assert str(decided.holds.held[NodeName("edge-1")]) == (
        "node asked until 2025-03-01T14:00:00Z (a car driving)"
    )
    assert decided.recheck is not None
    assert decided.recheck.hold_seconds == 7200.0
    assert decided.notices == ()


def test_a_held_pod_that_is_not_available_is_not_replaced_either() -> None:
    decided = plan(taken(ARU, three_old(first=held(), ready=False)), RolloutBook())
    assert deleted_nodes(decided) == ["edge-2", "edge-3"]


def test_a_hold_whose_end_has_passed_holds_nothing() -> None:
    decided = plan(taken(ARU, three_old(first=held()), now=UNTIL), RolloutBook())
    assert deleted_nodes(decided) == ["edge-1", "edge-2", "edge-3"]
    assert decided.notices == ()
    assert decided.recheck is not None
    assert decided.recheck.hold_seconds is None


def test_a_hold_past_max_hold_is_ignored_with_one_warning() -> None:
    annotations = {**ARU, MAX_HOLD_ANNOTATION: "2h"}
    pods = three_old(first=held(until=NOW + timedelta(hours=5), asked=NOW - timedelta(hours=2)))
    book = RolloutBook()
    decided = plan(taken(annotations, pods), book)
    assert deleted_nodes(decided) == ["edge-1", "edge-2", "edge-3"]
    assert [(n.type, n.reason) for n in decided.notices] == [
        (EventType.WARNING, "UpgradeHoldIgnored")
    ]
    # A later plan asks for the same Event: its key is the same, so the recorder tells it once.
    again = plan(taken(annotations, pods, now=NOW + timedelta(minutes=1)), book)
    assert [n.key for n in again.notices] == [n.key for n in decided.notices]


def test_a_hold_is_held_only_until_max_hold_after_it_was_asked() -> None:
    annotations = {**ARU, MAX_HOLD_ANNOTATION: "3h"}
    pods = three_old(first=held(until=NOW + timedelta(hours=5)))
    decided = plan(taken(annotations, pods), RolloutBook())
    assert deleted_nodes(decided) == ["edge-2", "edge-3"]
    assert decided.holds.held[NodeName("edge-1")].opens == ASKED + timedelta(hours=3)
    assert decided.recheck is not None
    assert decided.recheck.hold_seconds == 2 * 3600.0


def test_an_unreadable_max_hold_deletes_nothing_and_warns_once() -> None:
    decided = plan(taken({**ARU, MAX_HOLD_ANNOTATION: "a day"}, three_old()), RolloutBook())
    assert decided.deletions == ()
    assert [(n.reason, n.subject) for n in decided.notices] == [("InvalidMaxHold", "a day")]
    assert {str(hold) for hold in decided.holds.held.values()} == {"invalid setting"}


def test_a_held_node_holds_no_wave_back() -> None:
    labels = {"edge-1": {NODEPOOL_LABEL: "a"}, "edge-2": {NODEPOOL_LABEL: "b"}}
    pods = [with_hold(old_pod("web-1", "edge-1"), held()), old_pod("web-2", "edge-2")]
    decided = plan(taken({**ARU, WAVES_ANNOTATION: "a, b"}, pods, labels=labels), RolloutBook())
    assert deleted_nodes(decided) == ["edge-2"]
    assert decided.holds.wave is not None
    assert decided.holds.wave.name == "b"


def test_a_held_node_is_counted_held_and_the_rollout_rolls_on() -> None:
    pods = [with_hold(old_pod("web-1", "edge-1"), held()), pod("web-2", "edge-2")]
    status = rollout_status(
        daemonset=daemonset(ARU),
        revisions=REVISIONS,
        pods=pods,
        nodes=[NodeView(name=NodeName(f"edge-{i}"), readiness=NodeReadiness.READY) for i in (1, 2)],
        now=NOW,
    )
    rows = {row.node: (row.state, row.hold) for row in status.rows}
    assert rows == {
        "edge-1": (PodState.HELD, "node asked until 2025-03-01T14:00:00Z (a car driving)"),
        "edge-2": (PodState.UPDATED, None),
    }
    assert status.counts is not None
    assert (status.counts.held, status.phase) == (1, RolloutPhase.ROLLING)


def test_plan_says_the_node_asked_until_when_and_why() -> None:
    cluster = taken(ARU, three_old(first=held()))
    decided = plan(cluster, RolloutBook())
    first = node_plans(decided, pods_by_node=cluster.pods_by_node, readiness=cluster.readiness)[0]
    assert (first.node, first.action, first.why) == (
        "edge-1",
        Action.HELD,
        "node asked until 2025-03-01T14:00:00Z (a car driving)",
    )


# --- planned: OTA ---------------------------------------------------------------------------------


def marked(subject: PodView, since: datetime) -> PodView:
    mark = condition(
        POD_NEED_UPGRADE, ConditionStatus.TRUE, since=since.strftime("%Y-%m-%dT%H:%M:%SZ")
    )
    return replace(subject, conditions={**subject.conditions, POD_NEED_UPGRADE: mark})


def test_ota_does_not_force_a_held_pod_at_its_deadline_and_keeps_offering_it() -> None:
    overdue = NOW - timedelta(hours=2)
    pods = [marked(p, overdue) for p in three_old(first=held())]
    decided = plan(taken(OTA, pods), RolloutBook())
    assert deleted_nodes(decided) == ["edge-2", "edge-3"]
    # Its PodNeedUpgrade stays True: the node may still upgrade when it chooses.
    assert decided.condition_writes == ()


def test_ota_forces_a_held_pod_once_its_hold_is_over() -> None:
    overdue = NOW - timedelta(hours=2)
    pods = [marked(p, overdue) for p in three_old(first=held())]
    decided = plan(taken(OTA, pods, now=UNTIL), RolloutBook())
    assert deleted_nodes(decided) == ["edge-1", "edge-2", "edge-3"]
