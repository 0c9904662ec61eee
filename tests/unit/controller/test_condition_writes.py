"""Condition patches in flight: the same patch is not sent again before its echo is in the cache."""

from __future__ import annotations

import time

from edgerollout.controller.expectations import ConditionWrites
from edgerollout.domain.conditions import ConditionWrite
from edgerollout.domain.model import ConditionStatus, NodeName, PodCondition, PodUID, PodView
from edgerollout.domain.vocabulary import POD_NEED_UPGRADE

OWNER = "uid-ds-web"
NEW = "controllerrevision: 6c68d4677c"


def need_upgrade(status: ConditionStatus, message: str = NEW) -> PodCondition:
    return PodCondition(type=POD_NEED_UPGRADE, status=status, message=message)


def write(status: ConditionStatus, message: str = NEW) -> ConditionWrite:
    return ConditionWrite(
        namespace="default",
        name="web-a",
        uid=PodUID("uid-web-a"),
        condition=need_upgrade(status, message),
    )


def pod(*conditions: PodCondition) -> PodView:
    return PodView(
        namespace="default",
        name="web-a",
        uid=PodUID("uid-web-a"),
        node_name=NodeName("edge-1"),
        conditions={condition.type: condition for condition in conditions},
    )


def test_a_write_whose_echo_has_not_arrived_is_not_sent_again() -> None:
    sent = ConditionWrites()
    sent.sent(OWNER, write(ConditionStatus.TRUE))

    stale = pod(need_upgrade(ConditionStatus.FALSE))
    assert sent.unsent(OWNER, [write(ConditionStatus.TRUE)], [stale]) == []


def test_the_record_is_dropped_once_the_cache_shows_the_condition() -> None:
    sent = ConditionWrites()
    sent.sent(OWNER, write(ConditionStatus.TRUE))

    echoed = pod(need_upgrade(ConditionStatus.TRUE))
    assert sent.unsent(OWNER, [], [echoed]) == []
    assert sent.next_expiry(OWNER) is None
    # Changed back by someone else afterwards: written again.
    reverted = pod(need_upgrade(ConditionStatus.FALSE))
    assert sent.unsent(OWNER, [write(ConditionStatus.TRUE)], [reverted]) == [
        write(ConditionStatus.TRUE)
    ]


def test_a_different_write_to_the_same_pod_is_sent() -> None:
    sent = ConditionWrites()
    sent.sent(OWNER, write(ConditionStatus.FALSE))

    newer = write(ConditionStatus.TRUE, "controllerrevision: 7964965fcb")
    assert sent.unsent(OWNER, [newer], [pod()]) == [newer]


def test_the_record_is_dropped_when_the_pod_is_gone() -> None:
    sent = ConditionWrites()
    sent.sent(OWNER, write(ConditionStatus.TRUE))

    assert sent.unsent(OWNER, [], []) == []
    assert sent.next_expiry(OWNER) is None


def test_a_write_whose_echo_never_comes_is_sent_again_after_the_timeout() -> None:
    sent = ConditionWrites(timeout=0.01)
    sent.sent(OWNER, write(ConditionStatus.TRUE))
    stale = pod(need_upgrade(ConditionStatus.FALSE))
    expiry = sent.next_expiry(OWNER)
    assert expiry is not None
    assert expiry <= 0.01

    time.sleep(0.02)
    assert sent.unsent(OWNER, [write(ConditionStatus.TRUE)], [stale]) == [
        write(ConditionStatus.TRUE)
    ]


def test_forgetting_the_owner_drops_its_records() -> None:
    sent = ConditionWrites()
    sent.sent(OWNER, write(ConditionStatus.TRUE))
    sent.forget(OWNER)

    assert sent.unsent(OWNER, [write(ConditionStatus.TRUE)], [pod()]) == [
        write(ConditionStatus.TRUE)
    ]
