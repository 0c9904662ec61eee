"""What a node's hold request writes, or why it is refused (design §8.4), without HTTP."""

from datetime import timedelta

import pytest

from edgerollout.domain.model import Condition, ConditionStatus
from edgerollout.domain.planning.hold_requests import (
    AskedFor,
    hold_condition,
    lift_condition,
    read_hold_body,
)
from edgerollout.domain.planning.ota_requests import PodFacts, Refusal
from edgerollout.domain.spec.node_hold import hold_message
from edgerollout.domain.vocabulary import MAX_HOLD_ANNOTATION, UPGRADE_HELD

from .builders import NOW, NOW_RFC3339

LATER = NOW + timedelta(hours=2)


def facts(*conditions: Condition) -> PodFacts:
    return PodFacts(
        namespace="default",
        name="web-x",
        node_name="edge-2",
        deleting=False,
        owner_kind="DaemonSet",
        owner_name="web",
        conditions={c.type: c for c in conditions},
    )


def standing(*, asked_ago: timedelta, lasts: timedelta) -> Condition:
    asked = NOW - asked_ago
    return Condition(
        type=UPGRADE_HELD,
        status=ConditionStatus.TRUE,
        reason="NodeAsked",
        message=hold_message(until=asked + lasts, asked=asked, why="shop open"),
        last_transition_time=asked.strftime("%Y-%m-%dT%H:%M:%SZ"),
    )


def held_since(condition: Condition | Refusal) -> str:
    """The asked-at time a written hold carries (its lastTransitionTime, as in its message)."""
    assert isinstance(condition, Condition)
    assert condition.last_transition_time is not None
    assert f"asked at {condition.last_transition_time}:" in condition.message
    return condition.last_transition_time


@pytest.mark.parametrize(
    ("before", "asked"),
    [
        # No hold: it is asked now.
        (None, NOW_RFC3339),
        # A hold in force: asked again, it keeps when it was first asked.
        (standing(asked_ago=timedelta(hours=3), lasts=timedelta(hours=4)), "2025-03-01T09:00:00Z"),
        # A hold that has ended: a new one, from now.
        (standing(asked_ago=timedelta(hours=3), lasts=timedelta(hours=1)), NOW_RFC3339),
        # A hold that lasted max-hold (24 h): ignored, so a new one counts from now.
        (standing(asked_ago=timedelta(hours=25), lasts=timedelta(hours=30)), NOW_RFC3339),
        # Lifted: a new one, from now.
        (
            Condition(type=UPGRADE_HELD, status=ConditionStatus.FALSE, reason="HoldLifted"),
            NOW_RFC3339,
        ),
    ],
)
def test_a_hold_counts_from_its_first_ask_while_it_stands_and_from_now_after(
    before: Condition | None, asked: str
) -> None:
    pod = facts(*(() if before is None else (before,)))
    written = hold_condition(
        pod, AskedFor(until=LATER, why="a car driving"), annotations={}, now=NOW
    )
    assert written == Condition(
        type=UPGRADE_HELD,
        status=ConditionStatus.TRUE,
        reason="NodeAsked",
        message=f"until 2025-03-01T14:00:00Z, asked at {asked}: a car driving",
        last_transition_time=asked,
    )
    assert held_since(written) == asked


def test_a_hold_ends_at_most_max_hold_after_it_was_asked() -> None:
    annotations = {MAX_HOLD_ANNOTATION: "2h"}
    at_most = hold_condition(
        facts(), AskedFor(until=LATER, why="x"), annotations=annotations, now=NOW
    )
    assert isinstance(at_most, Condition)
    longer = hold_condition(
        facts(),
        AskedFor(until=LATER + timedelta(seconds=1), why="x"),
        annotations=annotations,
        now=NOW,
    )
    assert longer == Refusal(
        400,
        "HoldTooLong",
        "a hold of pod default/web-x until 2025-03-01T14:00:01Z is longer than "
        "edgerollout.io/max-hold allows: at most until 2025-03-01T14:00:00Z (max-hold counted "
        "from now)",
    )


def test_a_max_hold_too_long_to_read_refuses_the_hold() -> None:
    refused = hold_condition(
        facts(),
        AskedFor(until=LATER, why="x"),
        annotations={MAX_HOLD_ANNOTATION: "1" * 300},
        now=NOW,
    )
    assert refused == Refusal(
        409,
        "InvalidMaxHold",
        "the DaemonSet default/web of pod default/web-x sets edgerollout.io/max-hold to a value "
        "300 characters long, more than the 256 read: how long a hold may last is not known, so "
        "none is taken until it is fixed",
    )


def test_a_body_for_a_duration_ends_that_long_from_now_and_keeps_the_reason_trimmed() -> None:
    assert read_hold_body({"for": "1h30m", "reason": " shop open "}, now=NOW) == AskedFor(
        until=NOW + timedelta(minutes=90), why="shop open"
    )
    # 14:00 at +02:00 is now, in UTC: not in the future.
    assert read_hold_body({"until": "2025-03-01T14:00:00+02:00", "reason": "x"}, now=NOW) == (
        Refusal(
            400, "InvalidHold", "the hold ends at 2025-03-01T12:00:00Z, which is not in the future"
        )
    )


def test_lifting_writes_false_only_over_a_hold() -> None:
    assert lift_condition(facts(), now=NOW) is None
    lifted = Condition(type=UPGRADE_HELD, status=ConditionStatus.FALSE, reason="HoldLifted")
    assert lift_condition(facts(lifted), now=NOW) is None
    assert lift_condition(
        facts(standing(asked_ago=timedelta(hours=1), lasts=timedelta(hours=2))), now=NOW
    ) == Condition(
        type=UPGRADE_HELD,
        status=ConditionStatus.FALSE,
        reason="HoldLifted",
        message=f"lifted at {NOW_RFC3339}",
        last_transition_time=NOW_RFC3339,
    )
