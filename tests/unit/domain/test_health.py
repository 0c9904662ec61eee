"""Broken or starting: the health rule for the newest revision's pod on a Ready node."""

from dataclasses import replace
from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from edgerollout.domain.model import ContainerFailure, NodeName, PodUID, PodView
from edgerollout.domain.planning.availability import is_available
from edgerollout.domain.planning.health import Broken, judge_health
from edgerollout.domain.vocabulary import (
    DEFAULT_PROGRESS_DEADLINE_SECONDS,
    FAILING_WAITING_REASONS,
    PROGRESS_DEADLINE_EXCEEDED,
    RESTARTED,
)

from .builders import NOW, pod

DEADLINE = timedelta(seconds=DEFAULT_PROGRESS_DEADLINE_SECONDS)
MINUTE = timedelta(minutes=1)


def judge(subject: PodView, *, min_ready_seconds: int = 0, now: datetime = NOW) -> Broken | None:
    return judge_health(
        subject, min_ready_seconds=min_ready_seconds, progress_deadline=DEADLINE, now=now
    )


def failing(container: str, reason: str) -> ContainerFailure:
    return ContainerFailure(container=container, reason=reason)


def new_pod(
    *,
    created_ago: timedelta,
    ready_for: timedelta | None = None,
    unready_for: timedelta | None = None,
    restarted_ago: timedelta | None = None,
    failures: tuple[ContainerFailure, ...] = (),
) -> PodView:
    """The newest revision's pod created `created_ago`: Ready for `ready_for`, or else with its
    containers not ready for `unready_for` (since its creation unless told)."""
    return pod(
        "web-new",
        "edge-1",
        ready=ready_for is not None,
        ready_for=ready_for or timedelta(0),
        created=NOW - created_ago,
        unready_since=None if unready_for is None else NOW - unready_for,
        restarted=None if restarted_ago is None else NOW - restarted_ago,
        failures=failures,
    )


@pytest.mark.parametrize("reason", sorted(FAILING_WAITING_REASONS))
def test_a_container_waiting_for_a_failing_reason_is_broken_at_once(reason: str) -> None:
    subject = new_pod(created_ago=MINUTE, failures=(failing("web", reason),))
    assert judge(subject) == Broken(
        reason=reason, message=f"container web waiting: {reason}", since=NOW - MINUTE
    )


def test_a_failing_init_container_is_named_first_and_every_failure_is_told() -> None:
    subject = new_pod(
        created_ago=2 * MINUTE,
        unready_for=MINUTE,
        failures=(failing("migrate", "ImagePullBackOff"), failing("agent", "ErrImagePull")),
    )
    assert judge(subject) == Broken(
        reason="ImagePullBackOff",
        message="container migrate waiting: ImagePullBackOff; container agent waiting: ErrImagePull",
        since=NOW - MINUTE,
    )


@pytest.mark.parametrize("reason", ["ContainerCreating", "PodInitializing"])
def test_a_container_waiting_to_start_is_not_broken(reason: str) -> None:
    subject = new_pod(created_ago=MINUTE, failures=(failing("web", reason),))
    assert judge(subject) is None


@pytest.mark.parametrize(
    ("subject", "broken"),
    [
        pytest.param(new_pod(created_ago=9 * MINUTE), None, id="starting-within-the-deadline"),
        pytest.param(new_pod(created_ago=DEADLINE), None, id="exactly-at-the-deadline"),
        pytest.param(
            new_pod(created_ago=11 * MINUTE),
            Broken(
                reason=PROGRESS_DEADLINE_EXCEEDED,
                message=(
                    "containers not ready since 2025-03-01T11:49:00Z, longer than the progress"
                    " deadline of 600s"
                ),
                since=NOW - MINUTE,
            ),
            id="never-ready-past-the-deadline",
        ),
        pytest.param(
            new_pod(created_ago=timedelta(days=3), unready_for=5 * MINUTE),
            None,
            id="unready-again-for-less-than-the-deadline",
        ),
        pytest.param(
            new_pod(created_ago=timedelta(days=3), unready_for=15 * MINUTE),
            Broken(
                reason=PROGRESS_DEADLINE_EXCEEDED,
                message=(
                    "containers not ready since 2025-03-01T11:45:00Z, longer than the progress"
                    " deadline of 600s"
                ),
                since=NOW - 5 * MINUTE,
            ),
            id="unready-again-for-longer-than-the-deadline",
        ),
        pytest.param(
            new_pod(created_ago=timedelta(days=3), ready_for=timedelta(days=2)),
            None,
            id="up-and-ready",
        ),
    ],
)
def test_a_pod_not_ready_is_broken_once_its_containers_miss_the_deadline(
    subject: PodView, broken: Broken | None
) -> None:
    assert judge(subject) == broken


def test_a_ready_pod_waiting_out_min_ready_seconds_is_not_late() -> None:
    subject = new_pod(created_ago=20 * MINUTE, ready_for=MINUTE)
    assert not is_available(subject, min_ready_seconds=900, now=NOW)
    assert judge(subject, min_ready_seconds=900) is None


def test_a_pod_marked_not_ready_with_its_node_is_not_late_when_the_node_is_back() -> None:
    # The node lifecycle controller turned Ready False hours ago when the node went offline; the
    # kubelet, back, has not written the pod's status yet: its containers were ready all along.
    up = new_pod(created_ago=timedelta(days=1), ready_for=timedelta(hours=20))
    subject = replace(up, ready=False, ready_since=None)
    assert subject.containers_unready_since is None
    assert judge(subject) is None


@pytest.mark.parametrize(
    ("subject", "now", "broken"),
    [
        pytest.param(
            new_pod(created_ago=5 * MINUTE, ready_for=3 * MINUTE, restarted_ago=4 * MINUTE),
            NOW,
            None,
            id="restarted-during-start-up-then-ready",
        ),
        pytest.param(
            new_pod(created_ago=5 * MINUTE, ready_for=3 * MINUTE, restarted_ago=4 * MINUTE),
            NOW + timedelta(days=30),
            None,
            id="restarted-during-start-up-a-month-on",
        ),
        pytest.param(
            new_pod(created_ago=3 * MINUTE, unready_for=2 * MINUTE, restarted_ago=MINUTE),
            NOW,
            None,
            id="restarting-during-start-up-within-the-deadline",
        ),
        pytest.param(
            new_pod(created_ago=timedelta(hours=2), unready_for=MINUTE, restarted_ago=MINUTE),
            NOW,
            RESTARTED,
            id="down-after-a-restart-past-start-up",
        ),
        pytest.param(
            new_pod(created_ago=timedelta(hours=2), ready_for=4 * MINUTE, restarted_ago=5 * MINUTE),
            NOW,
            RESTARTED,
            id="ready-again-for-less-than-the-deadline",
        ),
        pytest.param(
            new_pod(
                created_ago=timedelta(hours=2), ready_for=11 * MINUTE, restarted_ago=12 * MINUTE
            ),
            NOW,
            None,
            id="available-again-for-the-deadline",
        ),
        pytest.param(
            new_pod(created_ago=5 * MINUTE, ready_for=3 * MINUTE, restarted_ago=2 * MINUTE),
            NOW,
            RESTARTED,
            id="restarted-while-ready",
        ),
    ],
)
def test_a_restart_counts_after_start_up_until_the_pod_has_been_available_for_the_deadline(
    subject: PodView, now: datetime, broken: str | None
) -> None:
    verdict = judge(subject, now=now)
    assert (None if verdict is None else verdict.reason) == broken
    if verdict is not None:
        assert verdict.since == subject.last_restart
        assert verdict.message == (
            f"a container restarted at {subject.last_restart:%Y-%m-%dT%H:%M:%SZ}, after the pod"
            " had started; this counts until the pod has been available for 600s"
        )


def test_min_ready_seconds_delay_the_forgiving_of_a_restart() -> None:
    subject = new_pod(
        created_ago=timedelta(hours=2), ready_for=11 * MINUTE, restarted_ago=12 * MINUTE
    )
    assert judge(subject, min_ready_seconds=0) is None
    verdict = judge(subject, min_ready_seconds=120)
    assert verdict is not None
    assert verdict.reason == RESTARTED


def test_a_restart_that_came_with_a_new_sandbox_is_the_node_rebooting() -> None:
    rebooted = new_pod(created_ago=timedelta(days=2), unready_for=MINUTE, restarted_ago=2 * MINUTE)
    with_new_sandbox = replace(rebooted, sandbox_since=NOW - MINUTE)
    assert judge(with_new_sandbox) is None
    # Without PodReadyToStartContainers (before Kubernetes 1.29) it cannot be told from a crash.
    assert judge(replace(rebooted, sandbox_since=None)) == Broken(
        reason=RESTARTED,
        message=(
            "a container restarted at 2025-03-01T11:58:00Z, after the pod had started; this"
            " counts until the pod has been available for 600s"
        ),
        since=NOW - 2 * MINUTE,
    )


def test_a_restart_with_its_end_at_the_sandbox_start_is_the_reboot() -> None:
    subject = new_pod(created_ago=timedelta(days=2), unready_for=MINUTE, restarted_ago=MINUTE)
    assert judge(replace(subject, sandbox_since=subject.last_restart)) is None


def test_a_pod_of_unknown_age_counts_only_restarts_while_ready() -> None:
    during = new_pod(created_ago=timedelta(days=2), ready_for=3 * MINUTE, restarted_ago=4 * MINUTE)
    while_ready = replace(during, last_restart=NOW - 2 * MINUTE)
    assert judge(replace(during, created=None, sandbox_since=None)) is None
    verdict = judge(replace(while_ready, created=None, sandbox_since=None))
    assert verdict is not None
    assert verdict.reason == RESTARTED


def test_waiting_comes_before_the_deadline_and_the_deadline_before_a_restart() -> None:
    late_and_restarted = new_pod(
        created_ago=timedelta(hours=1), unready_for=30 * MINUTE, restarted_ago=MINUTE
    )
    verdict = judge(late_and_restarted)
    assert verdict is not None
    assert verdict.reason == PROGRESS_DEADLINE_EXCEEDED
    crash_looping = replace(late_and_restarted, failures=(failing("web", "CrashLoopBackOff"),))
    verdict = judge(crash_looping)
    assert verdict is not None
    assert verdict.reason == "CrashLoopBackOff"


def test_a_progress_deadline_from_the_annotation_replaces_the_default() -> None:
    subject = new_pod(created_ago=3 * MINUTE)
    assert judge(subject) is None
    verdict = judge_health(
        subject, min_ready_seconds=0, progress_deadline=timedelta(seconds=120), now=NOW
    )
    assert verdict is not None
    assert verdict.since == NOW - MINUTE
    assert verdict.message.endswith("longer than the progress deadline of 120s")


def test_naive_and_zoned_times_are_judged_as_the_same_instants() -> None:
    subject = new_pod(created_ago=timedelta(hours=2), unready_for=MINUTE, restarted_ago=MINUTE)
    tokyo = timezone(timedelta(hours=9))
    zoned = replace(subject, last_restart=(NOW - MINUTE).astimezone(tokyo))
    naive_now = NOW.replace(tzinfo=None)
    assert judge(zoned, now=naive_now) == judge(subject)
    verdict = judge(zoned)
    assert verdict is not None
    assert verdict.since.tzinfo is UTC


# Properties over random pods: times within a day of NOW, to the second, as the API serves them.
SECONDS_IN_A_DAY = 86_400


def moments() -> st.SearchStrategy[datetime | None]:
    return st.none() | st.integers(-SECONDS_IN_A_DAY, SECONDS_IN_A_DAY).map(
        lambda offset: NOW + timedelta(seconds=offset)
    )


@st.composite
def pods(draw: st.DrawFn) -> PodView:
    ready = draw(st.booleans())
    return PodView(
        namespace="default",
        name="web-new",
        uid=PodUID("uid-web-new"),
        node_name=NodeName("edge-1"),
        revision_hash="hash-new",
        ready=ready,
        ready_since=draw(moments()) if ready else None,
        created=draw(moments()),
        containers_unready_since=draw(moments()),
        sandbox_since=draw(moments()),
        last_restart=draw(moments()),
        failures=tuple(
            draw(
                st.lists(
                    st.builds(
                        ContainerFailure,
                        container=st.sampled_from(["web", "proxy"]),
                        reason=st.sampled_from(
                            [*sorted(FAILING_WAITING_REASONS), "ContainerCreating"]
                        ),
                    ),
                    max_size=2,
                )
            )
        ),
    )


judgements = {
    "subject": pods(),
    "min_ready_seconds": st.integers(0, 1_200),
    "deadline": st.integers(1, 3_600).map(lambda seconds: timedelta(seconds=seconds)),
    "now": st.integers(-SECONDS_IN_A_DAY, SECONDS_IN_A_DAY).map(
        lambda offset: NOW + timedelta(seconds=offset)
    ),
}


@given(**judgements)
def test_an_available_pod_is_never_late(
    subject: PodView, min_ready_seconds: int, deadline: timedelta, now: datetime
) -> None:
    verdict = judge_health(
        subject, min_ready_seconds=min_ready_seconds, progress_deadline=deadline, now=now
    )
    if is_available(subject, min_ready_seconds=min_ready_seconds, now=now):
        assert verdict is None or verdict.reason != PROGRESS_DEADLINE_EXCEEDED


@given(**judgements, other=pods())
def test_the_verdict_depends_only_on_the_arguments(
    subject: PodView, min_ready_seconds: int, deadline: timedelta, now: datetime, other: PodView
) -> None:
    def verdict(of: PodView) -> Broken | None:
        return judge_health(
            of, min_ready_seconds=min_ready_seconds, progress_deadline=deadline, now=now
        )

    first = verdict(subject)
    verdict(other)
    assert verdict(replace(subject)) == first
    # The same instants in another zone, `now` naive: the same verdict.
    assert (
        judge_health(
            in_tokyo(subject),
            min_ready_seconds=min_ready_seconds,
            progress_deadline=deadline,
            now=now.replace(tzinfo=None),
        )
        == first
    )


def in_tokyo(subject: PodView) -> PodView:
    """The same pod with every time of it told in Tokyo's zone."""
    tokyo = timezone(timedelta(hours=9))

    def moved(moment: datetime | None) -> datetime | None:
        return None if moment is None else moment.astimezone(tokyo)

    return replace(
        subject,
        ready_since=moved(subject.ready_since),
        created=moved(subject.created),
        containers_unready_since=moved(subject.containers_unready_since),
        sandbox_since=moved(subject.sandbox_since),
        last_restart=moved(subject.last_restart),
    )


@given(**judgements)
def test_a_ready_pod_without_failures_or_restarts_is_never_broken(
    subject: PodView, min_ready_seconds: int, deadline: timedelta, now: datetime
) -> None:
    healthy = replace(subject, ready=True, failures=(), last_restart=None)
    assert (
        judge_health(
            healthy, min_ready_seconds=min_ready_seconds, progress_deadline=deadline, now=now
        )
        is None
    )


@given(**judgements)
def test_a_restart_before_the_current_ready_period_stops_counting_once_available_long_enough(
    subject: PodView, min_ready_seconds: int, deadline: timedelta, now: datetime
) -> None:
    # Ready since before `now` by more than minReadySeconds and the deadline, restarted earlier.
    ready_since = now - deadline - timedelta(seconds=min_ready_seconds + 1)
    settled = replace(
        subject,
        ready=True,
        ready_since=ready_since,
        failures=(),
        last_restart=ready_since - timedelta(seconds=1),
    )
    assert (
        judge_health(
            settled, min_ready_seconds=min_ready_seconds, progress_deadline=deadline, now=now
        )
        is None
    )


def test_the_builders_common_pod_is_healthy() -> None:
    assert judge(pod("web", "edge-1")) is None
