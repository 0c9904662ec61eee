"""A deletion's Event: decided at once, sent in the background, only while this replica leads."""

from __future__ import annotations

import logging

import pytest

from edgerollout.cli.logging_setup import structured_fields
from edgerollout.controller.writes.events import EventWriter
from edgerollout.controller.writes.guard import WriteGuard
from edgerollout.domain.events import EventType, Notice
from edgerollout.domain.model import DaemonSetUID, DaemonSetView
from edgerollout.kube.api import EVENTS
from edgerollout.kube.recorder import EventRecorder

from ..kube.fake_api import FakeApi

WEB = DaemonSetView(namespace="edge", name="web", uid=DaemonSetUID("uid-web"))


def deleted(index: int) -> Notice:
    return Notice(
        type=EventType.NORMAL,
        reason="SuccessfulDelete",
        message=f"Deleted pod: web-{index}",
        subject=f"uid-web-{index}",
        routine=True,
    )


def sent(api: FakeApi) -> list[str]:
    return [call.body["message"] for call in api.calls_to("create", EVENTS) if call.body]


async def test_reports_past_the_rate_or_told_before_are_not_on_their_way() -> None:
    api = FakeApi()
    writer = EventWriter(
        EventRecorder(api, instance="c-0", clock=lambda: 0.0), WriteGuard(lambda: True)
    )

    first = [writer.report(WEB, deleted(index)) for index in range(30)]
    await writer.reports_sent()
    again = writer.report(WEB, deleted(0))

    assert first == [True] * 25 + [False] * 5
    assert again is False
    assert sent(api) == [f"Deleted pod: web-{index}" for index in range(25)]


async def test_a_report_while_not_leading_is_dropped_and_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="edgerollout.controller")
    api = FakeApi()
    recorder = EventRecorder(api, instance="c-0", clock=lambda: 0.0)
    writer = EventWriter(recorder, WriteGuard(lambda: False))

    assert writer.report(WEB, deleted(0)) is False

    await writer.reports_sent()
    assert api.calls == []
    assert recorder.is_new(WEB, deleted(0))
    (dropped,) = (r for r in caplog.records if r.getMessage().startswith("event not"))
    assert structured_fields(dropped) == {"daemonset": "edge/web", "reason": "SuccessfulDelete"}


async def test_leadership_lost_before_the_request_leaves_drops_the_report(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="edgerollout.controller")
    api = FakeApi()
    leading = [True]
    writer = EventWriter(EventRecorder(api, instance="c-0"), WriteGuard(lambda: leading[0]))

    assert writer.report(WEB, deleted(0)) is True
    leading[0] = False
    await writer.reports_sent()

    assert api.calls == []
    assert [r.getMessage() for r in caplog.records] == [
        "event not recorded: this replica no longer leads"
    ]
