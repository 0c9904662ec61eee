"""Condition patches in flight: the same patch is not sent again before its echo is in the cache."""

from __future__ import annotations

from collections.abc import Iterable

from edgerollout.controller.expectations import ConditionWrites
from edgerollout.domain.model import Condition, ConditionStatus, NodeName, PodUID, PodView
from edgerollout.domain.planning.conditions import ConditionWrite
from edgerollout.domain.vocabulary import POD_NEED_UPGRADE

from .test_expectations import Clock

NEW = "controllerrevision: 6c68d4677c"


def need_upgrade(status: ConditionStatus, message: str = NEW) -> Condition:
    return Condition(type=POD_NEED_UPGRADE, status=status, message=message)


def write(status: ConditionStatus, message: str = NEW) -> ConditionWrite:
    return ConditionWrite(
        namespace="default",
        name="web-a",
        uid=PodUID("uid-web-a"),
        condition=need_upgrade(status, message),
    )


def pod(*conditions: Condition) -> PodView:
    return PodView(
        namespace="default",
        name="web-a",
        uid=PodUID("uid-web-a"),
        node_name=NodeName("edge-1"),
        conditions={condition.type: condition for condition in conditions},
    )


def unsent(
    sent: ConditionWrites, writes: list[ConditionWrite], pods: Iterable[PodView]
) -> list[ConditionWrite]:
    """What a reconcile would send: settle against the cached pods, then filter."""
    sent.settle(pods)
    return sent.unsent(writes)


def test_a_write_whose_echo_has_not_arrived_is_not_sent_again() -> None:
    sent = ConditionWrites(timeout=10.0, clock=Clock())
    sent.sent(write(ConditionStatus.TRUE))

    stale = pod(need_upgrade(ConditionStatus.FALSE))
    assert unsent(sent, [write(ConditionStatus.TRUE)], [stale]) == []


def test_the_record_is_dropped_once_the_cache_shows_the_condition() -> None:
    sent = ConditionWrites(timeout=10.0, clock=Clock())
    sent.sent(write(ConditionStatus.TRUE))

    echoed = pod(need_upgrade(ConditionStatus.TRUE))
    assert unsent(sent, [], [echoed]) == []
    assert sent.next_expiry() is None
    # Changed back by someone else afterwards: written again.
    reverted = pod(need_upgrade(ConditionStatus.FALSE))
    assert unsent(sent, [write(ConditionStatus.TRUE)], [reverted]) == [write(ConditionStatus.TRUE)]


def test_a_different_write_to_the_same_pod_is_sent() -> None:
    sent = ConditionWrites(timeout=10.0, clock=Clock())
    sent.sent(write(ConditionStatus.FALSE))

    newer = write(ConditionStatus.TRUE, "controllerrevision: 7964965fcb")
    assert unsent(sent, [newer], [pod()]) == [newer]


def test_the_record_is_dropped_when_the_pod_is_gone() -> None:
    sent = ConditionWrites(timeout=10.0, clock=Clock())
    sent.sent(write(ConditionStatus.TRUE))

    assert unsent(sent, [], []) == []
    assert sent.next_expiry() is None


def test_a_write_whose_echo_never_comes_is_sent_again_after_the_timeout() -> None:
    clock = Clock(1000.0)
    sent = ConditionWrites(timeout=10.0, clock=clock)
    sent.sent(write(ConditionStatus.TRUE))
    stale = pod(need_upgrade(ConditionStatus.FALSE))
    clock.now = 1004.0
    assert sent.next_expiry() == 6.0

    clock.now = 1010.0
    assert unsent(sent, [write(ConditionStatus.TRUE)], [stale]) == []
    clock.now = 1010.5
    assert unsent(sent, [write(ConditionStatus.TRUE)], [stale]) == [write(ConditionStatus.TRUE)]
    assert sent.next_expiry() is None
