"""Events on DaemonSets: each distinct notice once per DaemonSet, retried until it is recorded."""

from __future__ import annotations

from edgerollout.domain.events import EventType, Notice
from edgerollout.domain.model import DaemonSetUID, DaemonSetView
from edgerollout.kube.api import EVENTS, ApiError
from edgerollout.kube.recorder import COMPONENT, EventRecorder

from .fake_api import FakeApi

WEB = DaemonSetView(namespace="edge", name="web", uid=DaemonSetUID("uid-web"))
API = DaemonSetView(namespace="edge", name="api", uid=DaemonSetUID("uid-api"))
INVALID_ABC = Notice(
    type=EventType.WARNING,
    reason="InvalidMaxUnavailable",
    message='apps.openyurt.io/max-unavailable is "abc"',
    subject="abc",
)
INVALID_XYZ = Notice(
    type=EventType.WARNING,
    reason="InvalidMaxUnavailable",
    message='apps.openyurt.io/max-unavailable is "xyz"',
    subject="xyz",
)


def recorded(api: FakeApi) -> list[tuple[str, str, str]]:
    """(DaemonSet, reason, message) of every Event created."""
    return [
        (call.body["involvedObject"]["name"], call.body["reason"], call.body["message"])
        for call in api.calls_to("create", EVENTS)
        if call.body is not None
    ]


async def test_each_distinct_notice_is_recorded_once_per_daemonset() -> None:
    api = FakeApi()
    recorder = EventRecorder(api, instance="controller-0")

    results = [
        await recorder.emit(WEB, INVALID_ABC),
        await recorder.emit(WEB, INVALID_ABC),
        await recorder.emit(WEB, INVALID_XYZ),
        await recorder.emit(API, INVALID_ABC),
    ]

    assert results == [True, False, True, True]
    assert recorded(api) == [
        ("web", "InvalidMaxUnavailable", INVALID_ABC.message),
        ("web", "InvalidMaxUnavailable", INVALID_XYZ.message),
        ("api", "InvalidMaxUnavailable", INVALID_ABC.message),
    ]
    assert not recorder.is_new(WEB, INVALID_ABC)
    assert recorder.is_new(API, INVALID_XYZ)


async def test_event_names_the_daemonset_and_the_reporting_controller() -> None:
    api = FakeApi()
    recorder = EventRecorder(api, instance="controller-0")

    await recorder.emit(WEB, INVALID_ABC)

    (call,) = api.calls_to("create", EVENTS)
    assert call.namespace == "edge"
    assert call.body is not None
    body = dict(call.body)
    metadata = body.pop("metadata")
    stamps = {body.pop("firstTimestamp"), body.pop("lastTimestamp")}
    assert metadata["namespace"] == "edge"
    assert metadata["name"].startswith("web.")
    assert len(stamps) == 1
    assert body == {
        "apiVersion": "v1",
        "kind": "Event",
        "involvedObject": {
            "apiVersion": "apps/v1",
            "kind": "DaemonSet",
            "name": "web",
            "namespace": "edge",
            "uid": "uid-web",
        },
        "type": "Warning",
        "reason": "InvalidMaxUnavailable",
        "message": INVALID_ABC.message,
        "source": {"component": COMPONENT},
        "reportingComponent": COMPONENT,
        "reportingInstance": "controller-0",
        "count": 1,
    }


async def test_failed_event_is_not_marked_and_is_sent_again_next_time() -> None:
    api = FakeApi()
    api.fail("create", EVENTS, ApiError(500, "InternalError", "etcd leader changed"))
    recorder = EventRecorder(api, instance="controller-0")

    first = await recorder.emit(WEB, INVALID_ABC)
    assert first is False
    assert recorder.is_new(WEB, INVALID_ABC)

    second = await recorder.emit(WEB, INVALID_ABC)
    assert second is True
    assert len(api.calls_to("create", EVENTS)) == 2
    assert not recorder.is_new(WEB, INVALID_ABC)


async def test_forgotten_daemonset_gets_its_notices_again() -> None:
    api = FakeApi()
    recorder = EventRecorder(api, instance="controller-0")
    await recorder.emit(WEB, INVALID_ABC)
    await recorder.emit(API, INVALID_ABC)

    recorder.forget(WEB.uid)

    assert await recorder.emit(WEB, INVALID_ABC) is True
    assert await recorder.emit(API, INVALID_ABC) is False
    assert [name for name, _, _ in recorded(api)] == ["web", "api", "web"]


def deleted(index: int) -> Notice:
    return Notice(
        type=EventType.NORMAL,
        reason="SuccessfulDelete",
        message=f"Deleted pod: web-{index}",
        subject=f"uid-web-{index}",
        routine=True,
    )


async def test_a_flood_is_cut_after_25_events_then_one_every_5_minutes_per_daemonset() -> None:
    api = FakeApi()
    now = [0.0]
    recorder = EventRecorder(api, instance="controller-0", clock=lambda: now[0])

    first = [await recorder.emit(WEB, deleted(index)) for index in range(30)]
    other = await recorder.emit(API, deleted(0))
    now[0] = 299.0
    too_soon = await recorder.emit(WEB, deleted(30))
    now[0] = 300.0
    refilled = [await recorder.emit(WEB, deleted(index)) for index in (31, 32)]

    assert first == [True] * 25 + [False] * 5
    assert other is True  # each DaemonSet has its own bucket
    assert (too_soon, refilled) == (False, [True, False])
    assert len(recorded(api)) == 25 + 1 + 1
    # A dropped notice is not marked as emitted: still present later, it is reported then.
    assert recorder.is_new(WEB, deleted(29))


def invalid(index: int) -> Notice:
    return Notice(
        type=EventType.WARNING,
        reason="InvalidMaxUnavailable",
        message=f'apps.openyurt.io/max-unavailable is "x{index}"',
        subject=f"x{index}",
    )


async def test_warnings_have_a_bucket_of_their_own_and_changes_told_once_none() -> None:
    api = FakeApi()
    recorder = EventRecorder(api, instance="controller-0", clock=lambda: 0.0)
    for index in range(40):
        await recorder.emit(WEB, deleted(index))
    warnings = [invalid(index) for index in range(80)]
    paused = Notice(type=EventType.NORMAL, reason="RolloutPaused", message="paused", subject="1")

    assert [await recorder.emit(WEB, notice) for notice in warnings] == [True] * 64 + [False] * 16
    assert await recorder.emit(WEB, paused) is True
    assert await recorder.emit(WEB, deleted(41)) is False
    assert await recorder.emit(API, invalid(0)) is True  # each DaemonSet has its own bucket
    assert recorded(api)[25:] == [
        *(("web", "InvalidMaxUnavailable", n.message) for n in warnings[:64]),
        ("web", "RolloutPaused", "paused"),
        ("api", "InvalidMaxUnavailable", warnings[0].message),
    ]


async def test_a_warning_held_back_says_when_to_look_again_and_is_told_then() -> None:
    api = FakeApi()
    now = [0.0]
    recorder = EventRecorder(api, instance="controller-0", clock=lambda: now[0])
    for index in range(64):
        await recorder.emit(WEB, invalid(index))
    assert recorder.warning_wait(WEB) is None

    assert await recorder.emit(WEB, invalid(64)) is False
    assert recorder.warning_wait(WEB) == 60.0
    now[0] = 45.0
    assert recorder.warning_wait(WEB) == 15.0
    assert recorder.warning_wait(API) is None
    now[0] = 60.0
    assert recorder.is_new(WEB, invalid(64))
    assert await recorder.emit(WEB, invalid(64)) is True

    assert recorder.warning_wait(WEB) is None
    assert recorded(api)[-1] == ("web", "InvalidMaxUnavailable", invalid(64).message)


async def test_the_keys_remembered_are_bounded_and_the_oldest_told_again() -> None:
    api = FakeApi()
    recorder = EventRecorder(api, instance="controller-0", clock=lambda: 0.0)
    changes = [
        Notice(type=EventType.NORMAL, reason="WaveStarted", message=f"wave {i}", subject=str(i))
        for i in range(4097)
    ]

    for notice in changes:
        await recorder.emit(WEB, notice)

    assert len(recorded(api)) == 4097
    assert recorder.is_new(WEB, changes[0])
    assert not recorder.is_new(WEB, changes[1])
    assert not recorder.is_new(WEB, changes[4096])


async def test_a_long_message_is_cut_saying_how_much_was_left_out() -> None:
    api = FakeApi()
    recorder = EventRecorder(api, instance="controller-0")
    notice = Notice(type=EventType.WARNING, reason="InvalidWaves", message="w" * 5000, subject="w")

    await recorder.emit(WEB, notice)

    [(_, _, message)] = recorded(api)
    assert (len(message), message) == (1024, "w" * 998 + "... (4002 more characters)")


async def test_forgetting_a_daemonset_refills_its_buckets() -> None:
    api = FakeApi()
    recorder = EventRecorder(api, instance="controller-0", clock=lambda: 0.0)
    for index in range(25):
        await recorder.emit(WEB, deleted(index))
    assert await recorder.emit(WEB, deleted(25)) is False

    recorder.forget(WEB.uid)

    assert await recorder.emit(WEB, deleted(25)) is True


async def test_admit_decides_at_once_and_send_alone_writes_the_event() -> None:
    api = FakeApi()
    recorder = EventRecorder(api, instance="controller-0", clock=lambda: 0.0)

    admitted = [recorder.admit(WEB, deleted(index)) for index in range(27)]

    assert admitted == [True] * 25 + [False] * 2
    assert api.calls == []  # admitting sends nothing, and marks nothing as told
    assert recorder.is_new(WEB, deleted(0))
    assert await recorder.send(WEB, deleted(0)) is True
    assert recorded(api) == [("web", "SuccessfulDelete", "Deleted pod: web-0")]
    assert recorder.admit(WEB, deleted(0)) is False  # told now
