"""The slow-link scenario's reading of a pre-pull: its time, or an error that says what was seen."""

from __future__ import annotations

from typing import Any

import pytest
from bench.scenarios.slow_link import PullLog, Replacement
from bench.watch import Progress


def pod(condition: tuple[str, str, str] | None, *, deleting: bool = False) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "slow-link-x", "uid": "u1"}
    if deleting:
        meta["deletionTimestamp"] = "2026-12-01T10:00:00Z"
    status: dict[str, Any] = {}
    if condition is not None:
        kind, reason, message = condition
        status["conditions"] = [
            {"type": "PodImageReady", "status": kind, "reason": reason, "message": message}
        ]
    return {"metadata": meta, "status": status}


def progress(*changes: tuple[float, int]) -> Progress:
    return Progress(key=lambda obj: None, changes=list(changes))


def replacement(log: PullLog, *, asked: float | None, pulled: float | None) -> Replacement:
    return Replacement(
        name="slow-link-x",
        deleting=progress((0.0, 0), (50.0, 1)),
        gone=progress((0.0, 1)),
        ready=progress((0.0, 0)),
        asked=progress((0.0, 0), *(() if asked is None else ((asked, 1),))),
        pulled=progress((0.0, 0), *(() if pulled is None else ((pulled, 1),))),
        log=log,
    )


def test_the_log_keeps_each_change_of_the_pods_pull_condition_once() -> None:
    log = PullLog("slow-link-x")
    log.reset({"slow-link-x": pod(None)}, 0.0)
    log.update("slow-link-x", pod(("False", "WaitPullImage", "revision abc")), 1.0)
    log.update("slow-link-x", pod(("False", "WaitPullImage", "revision abc")), 2.0)
    log.update("other", pod(("True", "PullImageSuccess", "revision abc")), 3.0)
    log.update("slow-link-x", pod(("False", "PullImageFail", "revision abc")), 4.0)
    log.update("slow-link-x", pod(("False", "PullImageFail", "revision abc"), deleting=True), 5.0)
    log.update("slow-link-x", None, 6.0)

    assert log.seen == [
        "False WaitPullImage: revision abc",
        "False PullImageFail: revision abc",
        "False PullImageFail: revision abc (pod deleting)",
    ]


def test_a_pull_seen_done_before_the_deletion_is_timed_from_its_request() -> None:
    assert replacement(PullLog("slow-link-x"), asked=10.0, pulled=32.5).pull_seconds(
        before=50.0
    ) == pytest.approx(22.5)


def test_a_pod_deleted_before_its_pull_was_done_is_an_error_naming_what_was_seen() -> None:
    log = PullLog("slow-link-x", seen=["False WaitPullImage: revision abc"])

    with pytest.raises(RuntimeError) as raised:
        replacement(log, asked=10.0, pulled=None).pull_seconds(before=50.0)

    assert str(raised.value) == (
        "slow-link-x was deleted before its pre-pull was seen done "
        "(its PodImageReady as the watch saw it: False WaitPullImage: revision abc)"
    )


def test_a_pull_seen_done_only_after_the_deletion_is_an_error_too() -> None:
    with pytest.raises(RuntimeError, match=r"as the watch saw it: none\)$"):
        replacement(PullLog("slow-link-x"), asked=10.0, pulled=60.0).pull_seconds(before=50.0)
