"""Roll back on failure (design §13.4.1): past the failure budget, an opted-in DaemonSet goes back
to its previous revision, under the same budgets, broken nodes first; it fails closed."""

import dataclasses
import json
from datetime import timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from edgerollout.cli.plan_render import DryRun, render_plan_json, render_plan_table
from edgerollout.cli.status_render import render_table
from edgerollout.domain.events import EventType
from edgerollout.domain.model import ContainerFailure, NodeName, PodView
from edgerollout.domain.planning.decision import Plan
from edgerollout.domain.planning.reconcile import plan
from edgerollout.domain.planning.rollback import previous_revision
from edgerollout.domain.planning.rollout_book import RolloutBook
from edgerollout.domain.planning.verdicts import DeletionReason
from edgerollout.domain.reporting.node_plans import node_plans
from edgerollout.domain.reporting.rollout_status import rollout_status
from edgerollout.domain.spec.on_failure import (
    OnFailure,
    RolledBack,
    read_on_failure,
    read_rolled_back,
)
from edgerollout.domain.vocabulary import (
    MAX_FAILED_ANNOTATION,
    MAX_UNAVAILABLE_ANNOTATION,
    ON_FAILURE_ANNOTATION,
    PAUSED_ANNOTATION,
    ROLLED_BACK_ANNOTATION,
    UPDATE_STRATEGY_ANNOTATION,
)
from edgerollout.settings import CONTROLLER

from .builders import (
    NAMESPACE,
    NEW,
    NOW,
    OLD,
    REVISIONS,
    daemonset,
    node,
    old_pod,
    pod,
    refused,
    revision,
    snapshot,
)

CRASHING = ContainerFailure(container="web", reason="CrashLoopBackOff")
SWITCHED_ON = dataclasses.replace(CONTROLLER, rollback_namespaces=frozenset({NAMESPACE}))
# After the rollback's echo: the native controller numbers the restored revision anew.
ECHOED = (revision("ds-new", 2, NEW), revision("ds-old", 3, OLD))
RECORD = f"from {NEW} (revision 2) to {OLD}"


def aru(
    *,
    max_failed: str = "1",
    max_unavailable: str = "2",
    on_failure: str | None = "rollback",
    **more: str,
) -> dict[str, str]:
    annotations = {
        UPDATE_STRATEGY_ANNOTATION: "AdvancedRollingUpdate",
        MAX_UNAVAILABLE_ANNOTATION: max_unavailable,
        MAX_FAILED_ANNOTATION: max_failed,
        **more,
    }
    if on_failure is not None:
        annotations[ON_FAILURE_ANNOTATION] = on_failure
    return annotations


def crash_looping(name: str, on: str, *, revision: str = NEW) -> PodView:
    return pod(name, on, revision=revision, ready=False, failures=[CRASHING])


def restarting(name: str, on: str, *, revision: str = NEW) -> PodView:
    """Ready, and broken: a container restarted five minutes ago, after its start-up."""
    return pod(
        name,
        on,
        revision=revision,
        ready_for=timedelta(minutes=20),
        restarted=NOW - timedelta(minutes=5),
    )


def planned(
    annotations: dict[str, str],
    pods: list[PodView],
    *,
    revisions: tuple[object, ...] = REVISIONS,
    switched_on: bool = True,
) -> Plan:
    taken = snapshot(
        daemonset(annotations),
        revisions=revisions,  # type: ignore[arg-type]
        pods=pods,
        nodes=[node(str(p.node_name)) for p in pods],
    )
    return plan(taken, RolloutBook(), SWITCHED_ON if switched_on else CONTROLLER)


BROKEN_TWO = [
    crash_looping("web-1", "edge-1"),
    crash_looping("web-2", "edge-2"),
    old_pod("web-3", "edge-3"),
    old_pod("web-4", "edge-4"),
]


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (None, OnFailure.PAUSE),
        ("pause", OnFailure.PAUSE),
        ("rollback", OnFailure.ROLLBACK),
        (" RollBack ", OnFailure.ROLLBACK),
        ("PAUSE", OnFailure.PAUSE),
    ],
)
def test_on_failure_reads_pause_or_rollback_in_any_case(
    raw: str | None, expected: OnFailure
) -> None:
    assert read_on_failure(raw) is expected


@pytest.mark.parametrize("raw", ["", "undo", "roll back", "rollback,pause", "true"])
def test_any_other_on_failure_is_one_warning_naming_what_is_accepted(raw: str) -> None:
    assert read_on_failure(raw) == refused(
        ON_FAILURE_ANNOTATION,
        raw,
        "InvalidOnFailure",
        'expected "pause" or "rollback"; no node is upgraded until it is fixed',
    )


def test_the_rollback_record_reads_back_what_it_writes() -> None:
    record = RolledBack(failed="6d4f9c", failed_number=12, restored="5b8c7d")
    assert record.annotation() == "from 6d4f9c (revision 12) to 5b8c7d"
    assert read_rolled_back(record.annotation()) == record
    assert read_rolled_back(None) is None


@pytest.mark.parametrize(
    "raw", ["", "from a to b", "from a! (revision 1) to b", "from a (revision -1) to b", "b"]
)
def test_a_rollback_record_that_does_not_read_is_one_warning(raw: str) -> None:
    assert read_rolled_back(raw) == refused(
        ROLLED_BACK_ANNOTATION,
        raw,
        "InvalidRolledBack",
        'expected "from HASH (revision N) to HASH" as the controller writes it; no node is '
        "upgraded until it is fixed or removed",
    )


def test_past_the_budget_the_template_goes_back_to_the_previous_revision() -> None:
    decided = planned(aru(), BROKEN_TWO)
    assert decided.deletions == ()
    assert decided.pause_rollout is False
    assert decided.notices == ()  # told once the API server accepted the template
    rollback = decided.rollback
    assert rollback is not None
    assert (rollback.failed, rollback.restored) == REVISIONS[::-1]
    assert rollback.record == RolledBack(failed=NEW, failed_number=2, restored=OLD)
    notice = rollback.notice
    assert (notice.type, notice.reason, notice.subject) == (
        EventType.WARNING,
        "RolloutRolledBack",
        "hash-new/0",
    )
    assert notice.message == (
        '2 nodes are broken on revision hash-new, more than edgerollout.io/max-failed "1" '
        "tolerates (1): edge-1: CrashLoopBackOff since 2025-03-01T11:59:30Z; edge-2: "
        "CrashLoopBackOff since 2025-03-01T11:59:30Z. The DaemonSet's template is rolled back to "
        "revision hash-old (as kubectl rollout undo does), which rolls out under the same "
        "budgets, the broken nodes first"
    )
    assert [n.reason for n in rollback.refused("403 Forbidden: denied")] == [
        "RolloutFailed",
        "RollbackNotAllowed",
    ]


def test_the_previous_revision_is_the_highest_numbered_below_the_newest() -> None:
    revisions = (revision("a", 1, "ha"), revision("c", 7, "hc"), revision("b", 4, "hb"))
    assert previous_revision(revisions) == revision("b", 4, "hb")
    assert previous_revision(revisions[:1]) is None
    assert previous_revision(()) is None


def test_without_the_install_switch_the_rollout_pauses_with_a_warning() -> None:
    decided = planned(aru(), BROKEN_TWO, switched_on=False)
    assert (decided.deletions, decided.rollback, decided.pause_rollout) == ((), None, True)
    assert [(n.reason, n.subject) for n in decided.notices] == [
        ("RolloutFailed", "hash-new/0"),
        ("RollbackNotAllowed", "hash-new/0"),
    ]
    assert decided.notices[1].message == (
        "Revision hash-new is not rolled back: the controller may not roll back DaemonSets in "
        "namespace default: the install does not switch it on (controller.rollback.namespaces, "
        "--rollback-namespace); the rollout is paused instead, as without "
        "edgerollout.io/on-failure: rollback"
    )


def test_on_failure_pause_or_unset_pauses_as_before() -> None:
    for on_failure in ("pause", None):
        decided = planned(aru(on_failure=on_failure), BROKEN_TWO)
        assert (decided.deletions, decided.rollback, decided.pause_rollout) == ((), None, True)
        assert [n.reason for n in decided.notices] == ["RolloutFailed"]


def test_without_a_previous_revision_the_rollout_pauses_with_a_warning() -> None:
    decided = planned(aru(), BROKEN_TWO, revisions=(revision("ds-new", 1, NEW),))
    assert (decided.deletions, decided.rollback, decided.pause_rollout) == ((), None, True)
    assert [n.reason for n in decided.notices] == ["RolloutFailed", "RollbackNotPossible"]
    assert "the DaemonSet has no previous revision to go back to" in decided.notices[1].message


def test_a_rollback_that_fails_in_turn_pauses_and_is_not_rolled_back() -> None:
    # The restored revision (OLD, now newest) breaks too: going back to NEW would flip-flop.
    pods = [
        crash_looping("web-1", "edge-1", revision=OLD),
        crash_looping("web-2", "edge-2", revision=OLD),
        old_pod("web-3", "edge-3"),
    ]
    decided = planned(aru(**{ROLLED_BACK_ANNOTATION: RECORD}), pods, revisions=ECHOED)
    assert (decided.deletions, decided.rollback, decided.pause_rollout) == ((), None, True)
    assert [n.reason for n in decided.notices] == ["RolloutFailed", "RollbackNotPossible"]
    assert (
        "revision hash-old is the one the rollback from revision hash-new restored, and a "
        "rollback is not rolled back" in decided.notices[1].message
    )


def test_before_the_rollbacks_echo_nothing_is_deleted_written_or_stopped_again() -> None:
    decided = planned(aru(**{ROLLED_BACK_ANNOTATION: RECORD}), BROKEN_TWO)
    assert (decided.deletions, decided.rollback, decided.pause_rollout) == ((), None, False)
    assert decided.notices == ()


def test_after_the_echo_the_broken_nodes_go_first_under_the_same_budget() -> None:
    pods = [
        pod("web-1", "edge-1"),  # reached by the failed revision, healthy
        pod("web-2", "edge-2"),  # the same
        restarting("web-3", "edge-3"),  # broken, yet Ready: needs the budget
        crash_looping("web-4", "edge-4"),  # broken, not available: replaced at once
        old_pod("web-5", "edge-5"),  # never reached: current again
    ]
    # Two may be unavailable: edge-4 is, so one more goes, the broken edge-3 before edge-1.
    decided = planned(
        aru(max_unavailable="2", **{ROLLED_BACK_ANNOTATION: RECORD}), pods, revisions=ECHOED
    )
    assert decided.target is not None
    assert decided.target.hash == OLD
    assert [(d.node_name, d.reason) for d in decided.deletions] == [
        ("edge-3", DeletionReason.OUTDATED_WITHIN_BUDGET),
        ("edge-4", DeletionReason.OUTDATED_UNAVAILABLE),
    ]
    assert (decided.rollback, decided.pause_rollout, decided.notices) == (None, False, ())
    assert decided.broken == {}  # the failed revision's pods are outdated, not broken


def test_a_paused_rollout_is_neither_stopped_nor_rolled_back() -> None:
    decided = planned(aru(**{PAUSED_ANNOTATION: "true"}), BROKEN_TWO)
    assert (decided.deletions, decided.rollback, decided.pause_rollout) == ((), None, False)


@pytest.mark.parametrize(
    ("annotation", "raw", "reason"),
    [
        (ON_FAILURE_ANNOTATION, "undo", "InvalidOnFailure"),
        (ROLLED_BACK_ANNOTATION, "x", "InvalidRolledBack"),
    ],
)
def test_an_unreadable_value_deletes_nothing_and_warns_once(
    annotation: str, raw: str, reason: str
) -> None:
    decided = planned(aru(on_failure=None, **{annotation: raw}), [old_pod("web-1", "edge-1")])
    assert (decided.deletions, decided.rollback, decided.pause_rollout) == ((), None, False)
    assert [(n.type, n.reason, n.subject) for n in decided.notices] == [
        (EventType.WARNING, reason, raw)
    ]


def test_ota_rolls_back_too() -> None:
    annotations = {**aru(), UPDATE_STRATEGY_ANNOTATION: "OTA"}
    decided = planned(annotations, BROKEN_TWO)
    assert decided.rollback is not None
    assert (decided.pause_rollout, decided.condition_writes) == (False, ())


NODE_STATES = ["current", "healthy", "restarting", "crashing"]


def fleet_pod(index: int, state: str) -> PodView:
    name, on = f"web-{index:02}", f"edge-{index:02}"
    if state == "current":
        return old_pod(name, on)
    if state == "healthy":
        return pod(name, on)
    if state == "restarting":
        return restarting(name, on)
    return crash_looping(name, on)


@given(
    states=st.lists(st.sampled_from(NODE_STATES), min_size=1, max_size=16),
    budget=st.integers(min_value=1, max_value=5),
)
def test_a_rollback_never_exceeds_the_budget_and_takes_broken_nodes_first(
    states: list[str], budget: int
) -> None:
    pods = [fleet_pod(i, state) for i, state in enumerate(states)]
    decided = planned(
        aru(max_unavailable=str(budget), max_failed="100%", **{ROLLED_BACK_ANNOTATION: RECORD}),
        pods,
        revisions=ECHOED,
    )
    unavailable_before = states.count("crashing")
    within = [d for d in decided.deletions if d.reason is DeletionReason.OUTDATED_WITHIN_BUDGET]
    at_once = [d for d in decided.deletions if d.reason is DeletionReason.OUTDATED_UNAVAILABLE]
    # Only pods not available go without budget; the rest stay within max-unavailable.
    assert sorted(str(d.node_name) for d in at_once) == [
        f"edge-{i:02}" for i, s in enumerate(states) if s == "crashing"
    ]
    waiting = states.count("healthy") + states.count("restarting")
    assert len(within) == min(max(0, budget - unavailable_before), waiting)
    assert unavailable_before + len(within) <= max(budget, unavailable_before)
    # Broken first: no healthy node goes while a restarting (broken, Ready) one waits.
    taken = {str(d.node_name) for d in within}
    restarting_nodes = {f"edge-{i:02}" for i, s in enumerate(states) if s == "restarting"}
    healthy_taken = any(states[int(name[5:])] == "healthy" for name in taken)
    if healthy_taken:
        assert restarting_nodes <= taken
    assert decided.rollback is None
    assert decided.pause_rollout is False
    assert decided.broken == {}  # the restored revision's pods are all healthy


def test_status_says_which_rollback_made_the_newest_revision() -> None:
    annotations = aru(**{ROLLED_BACK_ANNOTATION: RECORD})
    pods = [restarting("web-1", "edge-1"), old_pod("web-2", "edge-2")]
    status = rollout_status(
        daemonset=daemonset(annotations),
        revisions=ECHOED,
        pods=pods,
        nodes=[node("edge-1"), node("edge-2")],
        now=NOW,
    )
    assert status.rolled_back == "from hash-new (revision 2) to hash-old"
    assert "\nRolled back: from hash-new (revision 2) to hash-old\n" in render_table(status)
    # Before the echo the failed revision is still the newest: no rollback in force yet.
    before = rollout_status(
        daemonset=daemonset(annotations), revisions=REVISIONS, pods=pods, nodes=[], now=NOW
    )
    assert before.rolled_back is None


def test_plan_says_the_rollout_would_be_rolled_back_and_the_event_it_would_tell() -> None:
    decided = planned(aru(), BROKEN_TWO)
    taken = snapshot(daemonset(aru()), revisions=REVISIONS, pods=BROKEN_TWO)
    dry_run = DryRun(
        daemonset=daemonset(aru()),
        plan=decided,
        nodes=tuple(node_plans(decided, pods_by_node=taken.pods_by_node, readiness={})),
    )
    table = render_plan_table(dry_run)
    assert (
        "The rollout would be rolled back to revision hash-old: more nodes are broken than "
        "max-failed allows.\nEvent: Warning RolloutRolledBack: 2 nodes are broken" in table
    )
    document = json.loads(render_plan_json(dry_run))
    assert (document["rollsBackTo"], document["pausesRollout"]) == ("hash-old", False)
    assert [event["reason"] for event in document["events"]] == ["RolloutRolledBack"]


def test_broken_first_leaves_a_partition_the_same_nodes() -> None:
    # The partition holds the last node by name, edge-3, broken or not; the budget of 1 then
    # takes the first of the others.
    pods = [pod("web-1", "edge-1"), pod("web-2", "edge-2"), restarting("web-3", "edge-3")]
    annotations = aru(
        max_unavailable="1", **{ROLLED_BACK_ANNOTATION: RECORD, "edgerollout.io/partition": "1"}
    )
    decided = planned(annotations, pods, revisions=ECHOED)
    assert [d.node_name for d in decided.deletions] == ["edge-1"]
    assert [str(node) for node in decided.holds.held] == ["edge-3"]


def test_broken_nodes_wait_for_no_wave_after_a_rollback() -> None:
    # edge-3 (pool b) broke; pool a still holds pods of the failed revision. Without the
    # rollback its wave would wait for pool a; broken, it goes at once, and pool a within budget.
    pods = [pod("web-1", "edge-1"), pod("web-2", "edge-2"), crash_looping("web-3", "edge-3")]
    labels = {"edge-1": "a", "edge-2": "a", "edge-3": "b"}
    taken = snapshot(
        daemonset(
            aru(
                max_unavailable="2",
                **{ROLLED_BACK_ANNOTATION: RECORD, "edgerollout.io/waves": "a, b"},
            )
        ),
        revisions=ECHOED,
        pods=pods,
        nodes=[node(name) for name in labels],
    )
    taken = dataclasses.replace(
        taken,
        node_labels={
            NodeName(name): {"apps.openyurt.io/nodepool": pool} for name, pool in labels.items()
        },
    )
    decided = plan(taken, RolloutBook(), SWITCHED_ON)
    assert [(d.node_name, d.reason) for d in decided.deletions] == [
        ("edge-1", DeletionReason.OUTDATED_WITHIN_BUDGET),
        ("edge-3", DeletionReason.OUTDATED_UNAVAILABLE),
    ]
    assert decided.holds.held == {}
