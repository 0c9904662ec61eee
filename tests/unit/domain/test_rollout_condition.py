"""The DaemonSet's rollout condition (`rollout_condition`): its status for each phase, its
message, and when it is written (`condition_change`)."""

from datetime import timedelta

import pytest

from edgerollout.domain.model import Condition, ConditionStatus
from edgerollout.domain.reporting.rollout_condition import (
    NO_CHANGE,
    ConditionChange,
    SentCondition,
    condition_change,
    rollout_condition,
)
from edgerollout.domain.reporting.rollout_phase import RolloutCounts, RolloutPhase

from .builders import NOW, NOW_RFC3339

TYPE = "edgerollout.io/Progressing"
COUNTS = RolloutCounts(total=10, updated=7, offline=1, broken=0, held=0, remaining=2)
EARLIER = "2025-03-01T11:00:00Z"


def test_the_status_says_whether_the_rollout_goes_waits_for_a_person_or_needs_one() -> None:
    statuses = {
        phase: rollout_condition(phase, counts=COUNTS, unfollowed=(), generation=1).status
        for phase in RolloutPhase
    }
    assert statuses == {
        RolloutPhase.INVALID_ANNOTATION: ConditionStatus.FALSE,
        RolloutPhase.ROLLOUT_FAILED: ConditionStatus.FALSE,
        RolloutPhase.PROGRESS_DEADLINE_EXCEEDED: ConditionStatus.FALSE,
        RolloutPhase.PAUSED: ConditionStatus.UNKNOWN,
        RolloutPhase.COMPLETE: ConditionStatus.TRUE,
        RolloutPhase.MAINTENANCE_WINDOW_CLOSED: ConditionStatus.TRUE,
        RolloutPhase.HELD: ConditionStatus.TRUE,
        RolloutPhase.WAITING_FOR_OFFLINE_NODES: ConditionStatus.TRUE,
        RolloutPhase.ROLLING: ConditionStatus.TRUE,
    }


def test_the_message_gives_the_counts_and_the_generation_they_were_read_for() -> None:
    condition = rollout_condition(RolloutPhase.ROLLING, counts=COUNTS, unfollowed=(), generation=4)
    assert condition == Condition(
        type=TYPE,
        status=ConditionStatus.TRUE,
        reason="Rolling",
        message="7 of 10 nodes updated, 1 offline, 0 broken, 0 held, 2 to go (generation 4)",
    )


@pytest.mark.parametrize(
    ("counts", "message"),
    [
        (
            COUNTS,
            "cannot follow InvalidWaves, InvalidMaxFailed; 7 of 10 nodes updated, 1 offline, "
            "0 broken, 0 held, 2 to go (generation 3)",
        ),
        (None, "cannot follow InvalidWaves, InvalidMaxFailed; nodes not counted (generation 3)"),
    ],
)
def test_an_invalid_annotation_names_the_annotations_first(
    counts: RolloutCounts | None, message: str
) -> None:
    condition = rollout_condition(
        RolloutPhase.INVALID_ANNOTATION,
        counts=counts,
        unfollowed=("InvalidWaves", "InvalidMaxFailed"),
        generation=3,
    )
    assert (condition.status, condition.reason, condition.message) == (
        ConditionStatus.FALSE,
        "InvalidAnnotation",
        message,
    )


def rolling(message: str = "a", *, at: str | None = None) -> Condition:
    return Condition(
        type=TYPE,
        status=ConditionStatus.TRUE,
        reason="Rolling",
        message=message,
        last_transition_time=at,
    )


PAUSED = Condition(type=TYPE, status=ConditionStatus.UNKNOWN, reason="Paused", message="a")
PAUSED_NOW = Condition(
    type=TYPE,
    status=ConditionStatus.UNKNOWN,
    reason="Paused",
    message="a",
    last_transition_time=NOW_RFC3339,
)


def change(
    wanted: Condition | None,
    shown: Condition | None,
    sent: SentCondition | None = None,
) -> ConditionChange:
    return condition_change(
        wanted, shown=shown, sent=sent, now=NOW, interval=10.0, echo_timeout=5.0
    )


def sent(condition: Condition | None, seconds_ago: float) -> SentCondition:
    return SentCondition(condition=condition, at=NOW - timedelta(seconds=seconds_ago))


def test_a_first_condition_is_written_at_once_with_its_transition_time() -> None:
    assert change(rolling(), None) == ConditionChange(write=rolling(at=NOW_RFC3339))


def test_the_condition_shown_is_not_written_again() -> None:
    assert change(rolling(), rolling(at=EARLIER)) == NO_CHANGE


def test_a_new_reason_is_written_at_once_with_a_new_transition_time() -> None:
    # Even a second after a write of the counts: a phase is never held back.
    assert change(PAUSED, rolling(at=EARLIER), sent(rolling(at=EARLIER), 1.0)) == ConditionChange(
        write=PAUSED_NOW
    )


def test_new_counts_keep_the_transition_time_once_the_interval_has_passed() -> None:
    shown = rolling("a", at=EARLIER)
    assert change(rolling("b"), shown, sent(shown, 10.0)) == ConditionChange(
        write=rolling("b", at=EARLIER)
    )
    assert change(rolling("b"), shown) == ConditionChange(write=rolling("b", at=EARLIER))


def test_new_counts_within_the_interval_wait_for_its_end() -> None:
    shown = rolling("a", at=EARLIER)
    assert change(rolling("b"), shown, sent(shown, 7.5)) == ConditionChange(wait=2.5)


def test_a_write_whose_echo_is_on_its_way_is_not_sent_again() -> None:
    written = rolling("b", at=NOW_RFC3339)
    assert change(rolling("b"), rolling("a", at=EARLIER), sent(written, 1.0)) == NO_CHANGE


def test_a_write_whose_echo_never_came_is_sent_again_once_it_expires() -> None:
    written = PAUSED
    assert change(PAUSED, rolling(at=EARLIER), sent(written, 6.0)) == ConditionChange(
        write=PAUSED_NOW
    )


def test_a_daemonset_no_longer_opted_in_loses_the_condition_once() -> None:
    assert change(None, rolling(at=EARLIER)) == ConditionChange(remove=True)
    assert change(None, rolling(at=EARLIER), sent(None, 1.0)) == NO_CHANGE
    assert change(None, None) == NO_CHANGE
