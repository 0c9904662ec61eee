"""Pod availability, readiness enums and timestamps: the small facts decisions rest on."""

from dataclasses import replace
from datetime import UTC, datetime, timedelta, timezone

import pytest

from edgerollout.domain.model import ConditionStatus, NodeReadiness
from edgerollout.domain.planning.availability import is_available
from edgerollout.domain.timestamps import format_rfc3339, to_utc

from .builders import NOW, pod


@pytest.mark.parametrize(
    ("ready", "ready_for", "min_ready_seconds", "available"),
    [
        pytest.param(False, timedelta(0), 0, False, id="not-ready-is-unavailable"),
        pytest.param(True, timedelta(0), 0, True, id="ready-without-min-ready-seconds"),
        pytest.param(True, timedelta(seconds=11), 10, True, id="ready-longer-than-min"),
        pytest.param(True, timedelta(seconds=10), 10, False, id="exactly-min-is-not-yet"),
        pytest.param(True, timedelta(seconds=5), 10, False, id="ready-too-recently"),
        pytest.param(True, timedelta(seconds=-5), 10, False, id="ready-in-the-future"),
    ],
)
def test_available_means_ready_for_longer_than_min_ready_seconds(
    ready: bool, ready_for: timedelta, min_ready_seconds: int, available: bool
) -> None:
    subject = pod("p", "edge-1", ready=ready, ready_for=ready_for)
    assert is_available(subject, min_ready_seconds=min_ready_seconds, now=NOW) is available


def test_ready_pod_with_unknown_transition_time_waits_for_min_ready_seconds() -> None:
    subject = replace(pod("p", "edge-1"), ready=True, ready_since=None)
    assert is_available(subject, min_ready_seconds=0, now=NOW) is True
    assert is_available(subject, min_ready_seconds=1, now=NOW) is False


def test_naive_and_zoned_times_compare_as_utc() -> None:
    subject = pod("p", "edge-1", ready_for=timedelta(seconds=30))
    naive_now = NOW.replace(tzinfo=None)
    tokyo_now = NOW.astimezone(timezone(timedelta(hours=9)))
    assert is_available(subject, min_ready_seconds=20, now=naive_now) is True
    assert is_available(subject, min_ready_seconds=20, now=tokyo_now) is True
    assert is_available(subject, min_ready_seconds=40, now=tokyo_now) is False


@pytest.mark.parametrize(
    ("moment", "text"),
    [
        pytest.param(datetime(2025, 3, 1, 12, 0, 0, tzinfo=UTC), "2025-03-01T12:00:00Z", id="utc"),
        pytest.param(
            datetime(2025, 3, 1, 21, 0, 0, 999_999, tzinfo=timezone(timedelta(hours=9))),
            "2025-03-01T12:00:00Z",
            id="zoned-and-fractional-seconds",
        ),
        pytest.param(datetime(2025, 3, 1, 12, 0, 0), "2025-03-01T12:00:00Z", id="naive-is-utc"),
    ],
)
def test_rfc3339_is_utc_whole_seconds(moment: datetime, text: str) -> None:
    assert format_rfc3339(moment) == text
    assert to_utc(moment).tzinfo is UTC


@pytest.mark.parametrize(
    ("status", "readiness"),
    [
        ("True", NodeReadiness.READY),
        ("False", NodeReadiness.NOT_READY),
        ("Unknown", NodeReadiness.UNKNOWN),
        (None, NodeReadiness.UNKNOWN),
        ("true", NodeReadiness.UNKNOWN),
    ],
    ids=["true", "false", "unknown", "no-ready-condition", "wrong-case"],
)
def test_node_readiness_from_ready_condition(status: str | None, readiness: NodeReadiness) -> None:
    assert NodeReadiness.from_ready_condition(status) is readiness


@pytest.mark.parametrize(
    ("raw", "status"),
    [
        ("True", ConditionStatus.TRUE),
        ("False", ConditionStatus.FALSE),
        ("Unknown", ConditionStatus.UNKNOWN),
        (None, ConditionStatus.UNKNOWN),
        ("yes", ConditionStatus.UNKNOWN),
    ],
    ids=["true", "false", "unknown", "absent", "garbage"],
)
def test_condition_status_from_api(raw: str | None, status: ConditionStatus) -> None:
    assert ConditionStatus.from_api(raw) is status
