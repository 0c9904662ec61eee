"""The invariant watcher's judgement of node holds and batches, on recorded histories (no lab):
a held pod deleted and a later batch started early are each reported, exactly; deletions after
a hold ends, after max-hold passes, or once the earlier batches are done (and soaked) are not."""

from __future__ import annotations

import datetime
from pathlib import Path

import pytest

from tests.e2e.reliability.test_invariant_judge import MIN_READY, T0, delete, history
from tests.e2e.support.invariants import InvariantWatcher, clock
from tests.e2e.support.invariants.batches import batch_ends, soak_seconds
from tests.e2e.support.invariants.history import HeldCondition
from tests.e2e.support.invariants.holds import max_hold_seconds


def rfc3339(at: float) -> str:
    return datetime.datetime.fromtimestamp(at, datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def hold(watcher: InvariantWatcher, node: str, *, at: float, until: float, asked: float) -> str:
    """The node's agent writes a hold on its old pod at `at`; returns the message."""
    message = f"until {rfc3339(until)}, asked at {rfc3339(asked)}: a car driving"
    held = HeldCondition(status="True", message=message, since=rfc3339(asked))
    watcher.pods[f"old-{node}"].held.set(at, held)
    return message


def lift(watcher: InvariantWatcher, node: str, *, at: float) -> None:
    lifted = HeldCondition(status="False", message=f"lifted at {rfc3339(at)}", since=rfc3339(at))
    watcher.pods[f"old-{node}"].held.set(at, lifted)


def judged(watcher: InvariantWatcher) -> list[tuple[float, str, str]]:
    return [
        (v.at, v.invariant, v.message)
        for v in watcher.violations(budget=2, min_ready_seconds=MIN_READY)
    ]


def test_a_held_pod_deleted_while_its_hold_stands_is_reported(tmp_path: Path) -> None:
    watcher = history(tmp_path)
    message = hold(watcher, "edge-2", at=T0 + 5, until=T0 + 30, asked=T0 + 5)
    delete(watcher, "edge-2", T0 + 11)
    assert judged(watcher) == [
        (
            T0 + 11,
            "node-hold",
            f"pod ns/old-edge-2 deleted while its node's hold was in force (until "
            f"{clock(T0 + 30)}: {message!r}, edgerollout.io/max-hold None)",
        )
    ]


@pytest.mark.parametrize(
    ("max_hold", "deleted"),
    [
        pytest.param(None, T0 + 25.5, id="after_its_end"),
        pytest.param("4s", T0 + 15.5, id="after_max_hold"),
        pytest.param(None, T0 + 11.5, id="within_the_grace_of_the_hold_being_written"),
        pytest.param(" 10s ", T0 + 21.5, id="after_max_hold_with_whitespace"),
    ],
)
def test_a_held_pod_deleted_once_its_hold_is_over_or_before_it_is_seen_is_no_violation(
    tmp_path: Path, max_hold: str | None, deleted: float
) -> None:
    watcher = history(tmp_path)
    watcher.ds_max_hold.set(T0, max_hold)
    hold(watcher, "edge-2", at=T0 + 11, until=T0 + 25, asked=T0 + 11)
    delete(watcher, "edge-2", deleted)
    assert judged(watcher) == []


def test_a_pod_deleted_after_its_hold_was_lifted_is_no_violation(tmp_path: Path) -> None:
    watcher = history(tmp_path)
    hold(watcher, "edge-2", at=T0 + 5, until=T0 + 60, asked=T0 + 5)
    lift(watcher, "edge-2", at=T0 + 10)
    delete(watcher, "edge-2", T0 + 11.5)
    assert judged(watcher) == []


def test_a_deletion_while_max_hold_cannot_be_read_is_reported(tmp_path: Path) -> None:
    watcher = history(tmp_path)
    watcher.ds_max_hold.set(T0, "a day")
    delete(watcher, "edge-2", T0 + 11)
    assert judged(watcher) == [
        (
            T0 + 11,
            "node-hold",
            "pod ns/old-edge-2 deleted while edgerollout.io/max-hold 'a day' could not be read",
        )
    ]


def batched(tmp_path: Path, raw: str, soak: str | None = None) -> InvariantWatcher:
    """Four nodes in batches `raw` from T0; edge-1's old pod deleted at T0 + 11 (its new pod is
    Ready at T0 + 14, available at T0 + 16)."""
    watcher = history(tmp_path)
    watcher.ds_batches.set(T0, raw)
    watcher.ds_batch_soak.set(T0, soak)
    delete(watcher, "edge-1", T0 + 11)
    return watcher


def test_a_node_of_a_later_batch_deleted_before_the_first_is_done_is_reported(
    tmp_path: Path,
) -> None:
    watcher = batched(tmp_path, "1, 50%")
    delete(watcher, "edge-2", T0 + 12)
    assert judged(watcher) == [
        (
            T0 + 12,
            "batches",
            "pod ns/old-edge-2 deleted on node edge-2 before its batch started (batch 2 of "
            "[1, 2, 4]: waiting for edge-1 not done)",
        )
    ]


def test_batches_in_order_keep_their_promise(tmp_path: Path) -> None:
    watcher = batched(tmp_path, "1, 50%")
    delete(watcher, "edge-2", T0 + 16.5)
    delete(watcher, "edge-3", T0 + 22)
    delete(watcher, "edge-4", T0 + 22.1)
    assert judged(watcher) == []


def test_a_batch_started_before_the_soak_passed_is_reported(tmp_path: Path) -> None:
    watcher = batched(tmp_path, "1, 50%", soak="5s")
    delete(watcher, "edge-2", T0 + 17)
    delete(watcher, "edge-3", T0 + 28)  # edge-2 available from T0 + 22: its soak ends at + 27
    assert judged(watcher) == [
        (
            T0 + 17,
            "batches",
            "pod ns/old-edge-2 deleted on node edge-2 before its batch started (batch 2 of "
            f"[1, 2, 4]: waiting for the soak of 5 s until {clock(T0 + 21)})",
        )
    ]


def test_a_node_holding_its_own_upgrade_or_not_ready_holds_no_batch_back(tmp_path: Path) -> None:
    watcher = history(tmp_path)
    watcher.ds_batches.set(T0, "1, 2, 3")
    hold(watcher, "edge-1", at=T0 + 5, until=T0 + 60, asked=T0 + 5)
    watcher.node_ready["edge-2"].set(T0 + 5, False)
    delete(watcher, "edge-3", T0 + 11)
    assert judged(watcher) == []


def test_a_batch_lowered_within_the_grace_before_a_deletion_is_not_held_against_it(
    tmp_path: Path,
) -> None:
    watcher = batched(tmp_path, "1")
    watcher.ds_batches.set(T0 + 11.5, "2")
    delete(watcher, "edge-2", T0 + 12)
    assert judged(watcher) == []


@pytest.mark.parametrize(
    ("raw", "count", "ends"),
    [
        (None, 6, [6]),
        ("1, 25%, 100%", 6, [1, 2, 6]),
        ("2, 1, 50%", 6, [2, 2, 3, 6]),
        (" 007 ", 6, [6]),
        ("1, 0", 6, None),
        ("101%", 6, None),
        ("1,,2", 6, None),
        ("1 %", 6, None),
    ],
)
def test_batch_ends_restate_the_specification(
    raw: str | None, count: int, ends: list[int] | None
) -> None:
    assert batch_ends(raw, count) == ends


@pytest.mark.parametrize(
    ("soak", "batches", "seconds"),
    [(None, None, 0.0), ("1m30s", "1", 90.0), ("0", "1", 0.0), ("5s", None, None)],
)
def test_soak_and_max_hold_read_go_durations(
    soak: str | None, batches: str | None, seconds: float | None
) -> None:
    assert soak_seconds(soak, batches) == seconds
    assert (max_hold_seconds("0s"), max_hold_seconds("1h"), max_hold_seconds(None)) == (
        None,
        3600.0,
        86400.0,
    )


def test_held_pods_and_their_wait_after_the_hold_are_counted(tmp_path: Path) -> None:
    watcher = history(tmp_path)
    watcher.ds_max_hold.set(T0, "12s")
    hold(watcher, "edge-1", at=T0 + 11, until=T0 + 40, asked=T0 + 11)  # max-hold ends it at +23
    hold(watcher, "edge-2", at=T0 + 11, until=T0 + 15, asked=T0 + 11)
    lift(watcher, "edge-2", at=T0 + 13)
    hold(watcher, "edge-3", at=T0 + 12, until=T0 + 20, asked=T0 + 12)  # never deleted
    delete(watcher, "edge-1", T0 + 23.4)
    delete(watcher, "edge-2", T0 + 13.2)
    delete(watcher, "edge-4", T0 + 11)
    assert watcher.held_then_replaced() == (3, [0.4, 0.2])
