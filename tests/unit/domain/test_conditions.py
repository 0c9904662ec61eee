"""The PodNeedUpgrade and PodImageReady conditions and their patches (design §5, §6)."""

from datetime import timedelta

import pytest

from edgerollout.domain.model import Condition, ConditionStatus, PodView
from edgerollout.domain.planning.conditions import (
    ConditionWrite,
    next_condition,
    plan_image_ready,
    plan_need_upgrade,
    revision_in_message,
    revision_message,
)
from edgerollout.domain.planning.revisions import TargetRevision
from edgerollout.kube.manifests import status_patch

from .builders import NEW, NOW, NOW_RFC3339, OLD, TARGET, condition, old_pod, pod, uid

EARLIER = "2025-02-01T08:30:00Z"
TRUE = ConditionStatus.TRUE
FALSE = ConditionStatus.FALSE


def need_upgrade(status: ConditionStatus, message: str, since: str = EARLIER) -> Condition:
    return Condition(
        type="PodNeedUpgrade", status=status, message=message, last_transition_time=since
    )


def image_ready(status: ConditionStatus, reason: str, since: str) -> Condition:
    return condition("PodImageReady", status, reason, since=since)


def with_condition(subject: PodView, condition: Condition) -> PodView:
    return pod(
        subject.name,
        subject.node_name,
        revision=subject.revision_hash,
        conditions={condition.type: condition},
    )


def test_outdated_pod_needs_upgrade_with_the_newest_revision_in_the_message() -> None:
    writes = plan_need_upgrade(pods=[old_pod("web-a", "edge-1")], target=TARGET, now=NOW)
    assert writes == (
        ConditionWrite(
            namespace="default",
            name="web-a",
            uid=uid("web-a"),
            condition=need_upgrade(TRUE, "controllerrevision: hash-new", NOW_RFC3339),
        ),
    )


def test_current_pod_does_not_need_upgrade() -> None:
    (write,) = plan_need_upgrade(pods=[pod("web-a", "edge-1")], target=TARGET, now=NOW)
    assert write.condition == need_upgrade(FALSE, "controllerrevision: hash-new", NOW_RFC3339)


def test_patch_body_is_exactly_one_condition_under_status() -> None:
    (write,) = plan_need_upgrade(pods=[old_pod("web-a", "edge-1")], target=TARGET, now=NOW)
    assert status_patch(write.condition) == {
        "status": {
            "conditions": [
                {
                    "type": "PodNeedUpgrade",
                    "status": "True",
                    "reason": "",
                    "message": "controllerrevision: hash-new",
                    "lastTransitionTime": "2025-03-01T12:00:00Z",
                }
            ]
        }
    }


@pytest.mark.parametrize(
    "subject",
    [
        pytest.param(
            with_condition(
                old_pod("a", "edge-1"), need_upgrade(TRUE, "controllerrevision: hash-new")
            ),
            id="outdated-already-true",
        ),
        pytest.param(
            with_condition(pod("a", "edge-1"), need_upgrade(FALSE, "controllerrevision: hash-new")),
            id="current-already-false",
        ),
    ],
)
def test_condition_already_right_writes_nothing(subject: PodView) -> None:
    assert plan_need_upgrade(pods=[subject], target=TARGET, now=NOW) == ()


def test_status_change_moves_the_transition_time() -> None:
    upgraded = with_condition(
        pod("a", "edge-1"), need_upgrade(TRUE, "controllerrevision: hash-new")
    )
    (write,) = plan_need_upgrade(pods=[upgraded], target=TARGET, now=NOW)
    assert write.condition == need_upgrade(FALSE, "controllerrevision: hash-new", since=NOW_RFC3339)


def test_newer_revision_rewrites_the_message_and_keeps_the_transition_time() -> None:
    still_outdated = with_condition(
        old_pod("a", "edge-1"), need_upgrade(TRUE, "controllerrevision: hash-older")
    )
    (write,) = plan_need_upgrade(pods=[still_outdated], target=TARGET, now=NOW)
    assert write.condition == need_upgrade(TRUE, "controllerrevision: hash-new", since=EARLIER)
    assert status_patch(write.condition)["status"]["conditions"][0]["lastTransitionTime"] == EARLIER


def test_terminating_pods_are_skipped() -> None:
    pods = [old_pod("leaving", "edge-1", deleting=True), old_pod("staying", "edge-2")]
    writes = plan_need_upgrade(pods=pods, target=TARGET, now=NOW)
    assert [write.name for write in writes] == ["staying"]


def test_writes_come_in_pod_name_order() -> None:
    pods = [old_pod("c", "edge-3"), pod("a", "edge-1"), old_pod("b", "edge-2")]
    writes = plan_need_upgrade(pods=pods, target=TARGET, now=NOW)
    assert [(write.name, write.condition.status) for write in writes] == [
        ("a", FALSE),
        ("b", TRUE),
        ("c", TRUE),
    ]


def test_no_write_while_the_newest_revision_hash_is_unknown() -> None:
    generation_only = TargetRevision(hash=None, template_generation=4)
    pods = [pod("a", "edge-1", revision=None, generation=3)]
    assert plan_need_upgrade(pods=pods, target=generation_only, now=NOW) == ()


def test_generation_fallback_decides_when_the_pod_has_no_hash() -> None:
    target = TargetRevision(hash=NEW, template_generation=4)
    pods = [
        pod("a", "edge-1", revision=None, generation=4),
        pod("b", "edge-2", revision=None, generation=3),
    ]
    writes = plan_need_upgrade(pods=pods, target=target, now=NOW)
    assert [(write.name, write.condition.status) for write in writes] == [("a", FALSE), ("b", TRUE)]


PULLING = image_ready(FALSE, "WaitPullImage", EARLIER)
PULLED = image_ready(TRUE, "PullImageSuccess", EARLIER)


@pytest.mark.parametrize(
    ("existing", "status", "reason", "since"),
    [
        pytest.param(None, FALSE, "WaitPullImage", NOW_RFC3339, id="requested"),
        pytest.param(
            PULLING, FALSE, "PullImageFail", EARLIER, id="failed-reason-change-keeps-time"
        ),
        pytest.param(PULLING, TRUE, "PullImageSuccess", NOW_RFC3339, id="succeeded"),
        pytest.param(PULLED, TRUE, "PullImageSuccess", None, id="already-succeeded"),
    ],
)
def test_image_ready_condition_follows_the_pre_pull(
    existing: Condition | None, status: ConditionStatus, reason: str, since: str | None
) -> None:
    """The condition written is PodImageReady `status`/`reason` for the newest revision, since
    `since` (None: nothing is written)."""
    subject = pod(
        "web", "edge-1", conditions={} if existing is None else {"PodImageReady": existing}
    )
    write = plan_image_ready(subject, status=status, reason=reason, revision_hash=NEW, now=NOW)
    expected = None if since is None else image_ready(status, reason, since)
    assert (None if write is None else write.condition) == expected


def test_existing_condition_without_transition_time_gets_one() -> None:
    existing = Condition(type="PodNeedUpgrade", status=TRUE, message="controllerrevision: x")
    condition = next_condition(
        existing, type="PodNeedUpgrade", status=TRUE, message="controllerrevision: y", now=NOW
    )
    assert condition == need_upgrade(TRUE, "controllerrevision: y", NOW_RFC3339)


def test_patch_of_a_condition_without_transition_time_omits_the_field() -> None:
    condition = Condition(type="PodImageReady", status=FALSE, reason="WaitPullImage", message="m")
    assert status_patch(condition) == {
        "status": {
            "conditions": [
                {
                    "type": "PodImageReady",
                    "status": "False",
                    "reason": "WaitPullImage",
                    "message": "m",
                }
            ]
        }
    }


@pytest.mark.parametrize(
    ("message", "revision_hash"),
    [
        pytest.param("controllerrevision: 5d8f7c", "5d8f7c", id="revision-message"),
        pytest.param("controllerrevision: ", None, id="no-hash"),
        pytest.param("ControllerRevision: 5d8f7c", None, id="wrong-case"),
        pytest.param('{"imageList": []}', None, id="older-openyurt-json-message"),
    ],
)
def test_revision_is_read_back_from_a_condition_message(
    message: str, revision_hash: str | None
) -> None:
    assert revision_in_message(message) == revision_hash


def test_revision_message_format() -> None:
    assert revision_message(OLD) == "controllerrevision: hash-old"
    assert revision_in_message(revision_message(NEW)) == NEW


def test_transition_time_is_written_in_utc_whole_seconds() -> None:
    later = NOW + timedelta(milliseconds=1500)
    condition = next_condition(None, type="PodNeedUpgrade", status=TRUE, message="m", now=later)
    assert condition is not None
    assert condition.last_transition_time == "2025-03-01T12:00:01Z"
