"""The invariant watcher's judgement, on recorded histories (no lab): it finds each kind of broken
promise, names the objects, and finds nothing in a rollout that kept them."""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

import pytest

from tests.e2e.support.invariants import AuditedDeletion, InvariantWatcher, PodLife, clock
from tests.e2e.support.invariants.holds import is_paused, partition_holds

NODES = ["edge-1", "edge-2", "edge-3", "edge-4"]
OLD, NEW = ("nginx:1",), ("nginx:2",)
T0 = 1_000.0  # every node Ready, every old pod Ready (and available) since then
MIN_READY = 2.0


def history(tmp_path: Path) -> InvariantWatcher:
    watcher = InvariantWatcher(
        cast(Any, None),
        cast(Any, None),
        "ns",
        daemonset="ds",
        selector="app=ds",
        nodes=NODES,
        audit_log=tmp_path / "audit.log",
    )
    watcher.started_at = T0
    watcher.ds_image.set(T0, OLD)
    watcher.ds_image.set(T0 + 10, NEW)
    watcher.ds_strategy.set(T0, "advancedrollingupdate")
    for node in NODES:
        watcher.node_ready[node].set(T0, True)
        old = PodLife(uid=f"old-{node}", name=f"old-{node}", node=node, images=OLD, seen=T0)
        old.ready.set(T0, T0 - 100)
        watcher.pods[old.uid] = old
    return watcher


def delete(watcher: InvariantWatcher, node: str, at: float, *, uid: str | None = "same") -> None:
    """The controller deletes the node's old pod at `at`; its replacement is available 5 s later."""
    pod = watcher.pods[f"old-{node}"]
    pod.deleting_at = at
    precondition = pod.uid if uid == "same" else uid
    watcher.deletions.append(AuditedDeletion(at, "ns", pod.name, "lab-admin", 200, precondition))
    new = PodLife(uid=f"new-{node}", name=f"new-{node}", node=node, images=NEW, seen=at + 1)
    new.ready.set(at + 1, None)
    new.ready.set(at + 3, at + 3)
    watcher.pods[new.uid] = new


def third_deletion_beyond_budget(tmp_path: Path) -> tuple[InvariantWatcher, PodLife]:
    """edge-1's and edge-2's old pods deleted, then edge-3's at T0 + 11.2 while both are still
    unavailable (beyond a budget of 2 if edge-3's pod was available); returns edge-3's old pod."""
    watcher = history(tmp_path)
    delete(watcher, "edge-1", T0 + 11)
    delete(watcher, "edge-2", T0 + 11.1)
    delete(watcher, "edge-3", T0 + 11.2)
    return watcher, watcher.pods["old-edge-3"]


def test_a_rollout_within_the_budget_breaks_no_promise(tmp_path: Path) -> None:
    watcher = history(tmp_path)
    delete(watcher, "edge-1", T0 + 11)
    delete(watcher, "edge-2", T0 + 11.1)
    delete(watcher, "edge-3", T0 + 20)
    delete(watcher, "edge-4", T0 + 20.1)
    assert watcher.violations(budget=2, min_ready_seconds=MIN_READY) == []
    assert watcher.peak_unavailable(MIN_READY)[0] == 2


def test_a_deletion_beyond_the_budget_is_reported_with_the_unavailable_nodes(
    tmp_path: Path,
) -> None:
    watcher, _ = third_deletion_beyond_budget(tmp_path)
    found = watcher.violations(budget=2, min_ready_seconds=MIN_READY)
    assert [(v.at, v.invariant) for v in found] == [(T0 + 11.2, "budget")]
    assert found[0].message == (
        "pod ns/old-edge-3 (available) deleted while 2 other Ready node(s) were unavailable; "
        "max-unavailable is 2"
    )
    assert found[0].objects == (
        "pod ns/old-edge-3 (uid old-edge-3)",
        "node edge-3",
        "unavailable node edge-1",
        "unavailable node edge-2",
    )


def test_a_deletion_on_a_node_not_ready_is_reported(tmp_path: Path) -> None:
    watcher = history(tmp_path)
    watcher.node_ready["edge-4"].set(T0 + 5, False)
    delete(watcher, "edge-4", T0 + 11)
    found = watcher.violations(budget=2, min_ready_seconds=MIN_READY)
    assert [(v.invariant, v.message) for v in found] == [
        ("not-ready-node", "pod ns/old-edge-4 deleted while node edge-4 was not Ready")
    ]


def test_a_node_turning_not_ready_within_the_grace_is_not_held_against_the_controller(
    tmp_path: Path,
) -> None:
    watcher = history(tmp_path)
    watcher.node_ready["edge-4"].set(T0 + 10.5, False)
    delete(watcher, "edge-4", T0 + 11)
    assert watcher.violations(budget=2, min_ready_seconds=MIN_READY) == []


def test_missing_precondition_second_deletion_and_deletion_under_ota_are_each_reported(
    tmp_path: Path,
) -> None:
    watcher = history(tmp_path)
    delete(watcher, "edge-1", T0 + 11, uid=None)
    delete(watcher, "edge-2", T0 + 12)
    watcher.deletions.append(
        AuditedDeletion(T0 + 13, "ns", "old-edge-2", "lab-admin", 200, "old-edge-2")
    )
    watcher.ds_strategy.set(T0 + 20, "ota")
    delete(watcher, "edge-3", T0 + 30)
    found = watcher.violations(budget=4, min_ready_seconds=MIN_READY)
    assert [(v.at, v.invariant) for v in found] == [
        (T0 + 11, "uid-precondition"),
        (T0 + 13, "deleted-twice"),
        (T0 + 30, "not-decided"),
    ]
    assert found[2].message == "pod ns/old-edge-3 deleted while the DaemonSet's strategy was 'ota'"


def test_deletions_by_others_and_refused_deletions_are_not_the_controllers(
    tmp_path: Path,
) -> None:
    watcher = history(tmp_path)
    watcher.deletions.append(
        AuditedDeletion(
            T0 + 11, "ns", "old-edge-1", "system:serviceaccount:kube-system:x", 200, None
        )
    )
    watcher.deletions.append(AuditedDeletion(T0 + 12, "ns", "old-edge-2", "lab-admin", 409, "u"))
    assert watcher.violations(budget=1, min_ready_seconds=MIN_READY) == []


def test_a_deletion_cut_off_mid_request_is_judged_as_if_it_was_made(tmp_path: Path) -> None:
    # The client went away: the audit log says 504, but the pod may well be gone. It is held to
    # the same rules; a retry of it is not a second deletion.
    watcher = history(tmp_path)
    watcher.node_ready["edge-4"].set(T0 + 5, False)
    delete(watcher, "edge-4", T0 + 11)
    cut_off = watcher.deletions[-1]
    watcher.deletions[-1] = AuditedDeletion(
        cut_off.at, "ns", cut_off.name, "lab-admin", 504, cut_off.uid_precondition
    )
    watcher.deletions.append(
        AuditedDeletion(T0 + 12, "ns", cut_off.name, "lab-admin", 200, cut_off.uid_precondition)
    )
    found = watcher.violations(budget=2, min_ready_seconds=MIN_READY)
    assert [(v.at, v.invariant) for v in found] == [
        (T0 + 11, "not-ready-node"),
        (T0 + 12, "not-ready-node"),
    ]


def test_a_pod_whose_watch_delivered_it_not_ready_before_its_deletion_was_not_available(
    tmp_path: Path,
) -> None:
    # The controller saw the pod turn not Ready and replaced it at once; the watcher's copy of the
    # same change arrived 2 ms after the audit log's time of the deletion, yet before the deletion.
    watcher, pod = third_deletion_beyond_budget(tmp_path)
    pod.ready.set(T0 + 11.202, None)
    pod.deletion_seen = T0 + 11.205
    assert watcher.violations(budget=2, min_ready_seconds=MIN_READY) == []


def test_a_pod_whose_watch_delivered_its_deletion_first_was_available(tmp_path: Path) -> None:
    watcher, pod = third_deletion_beyond_budget(tmp_path)
    pod.deletion_seen = T0 + 11.202
    pod.ready.set(T0 + 11.205, None)
    found = watcher.violations(budget=2, min_ready_seconds=MIN_READY)
    assert [(v.at, v.invariant) for v in found] == [(T0 + 11.2, "budget")]


def test_a_change_delivered_long_after_the_deletion_request_is_not_counted_before_it(
    tmp_path: Path,
) -> None:
    # The pod watch was down: what it delivered more than the grace after the deletion request
    # tells nothing about the moment of the decision.
    watcher, pod = third_deletion_beyond_budget(tmp_path)
    pod.ready.set(T0 + 13, None)
    pod.deletion_seen = T0 + 14
    found = watcher.violations(budget=2, min_ready_seconds=MIN_READY)
    assert [(v.at, v.invariant) for v in found] == [(T0 + 11.2, "budget")]


def test_a_deletion_while_the_daemonset_was_paused_is_reported(tmp_path: Path) -> None:
    watcher = history(tmp_path)
    watcher.ds_paused.set(T0 + 12, "true")
    delete(watcher, "edge-1", T0 + 14)
    found = watcher.violations(budget=2, min_ready_seconds=MIN_READY)
    assert [(v.at, v.invariant) for v in found] == [(T0 + 14, "paused")]
    assert found[0].message == (
        f"pod ns/old-edge-1 deleted while the DaemonSet was paused (edgerollout.io/paused 'true' "
        f"since {clock(T0 + 12)})"
    )
    assert found[0].objects == ("pod ns/old-edge-1 (uid old-edge-1)", "node edge-1")


@pytest.mark.parametrize(
    ("pause", "resume"), [(T0 + 11.5, None), (T0 + 5, T0 + 12.5)], ids=["paused", "resumed"]
)
def test_a_deletion_within_the_grace_of_a_pause_or_a_resume_is_not_held_against_the_controller(
    tmp_path: Path, pause: float, resume: float | None
) -> None:
    # Paused 0.5 s before the deletion request: the controller may have decided it before it saw
    # the pause. Resumed 0.5 s after it: the controller may have seen the resume first.
    watcher = history(tmp_path)
    watcher.ds_paused.set(pause, "true")
    if resume is not None:
        watcher.ds_paused.set(resume, None)
    delete(watcher, "edge-1", T0 + 12)
    assert watcher.violations(budget=2, min_ready_seconds=MIN_READY) == []


def test_deletions_before_a_pause_and_after_a_resume_keep_their_promise(tmp_path: Path) -> None:
    watcher = history(tmp_path)
    delete(watcher, "edge-1", T0 + 11)
    watcher.ds_paused.set(T0 + 13, "true")
    watcher.ds_paused.set(T0 + 20, "false")
    delete(watcher, "edge-2", T0 + 22)
    assert watcher.violations(budget=2, min_ready_seconds=MIN_READY) == []


@pytest.mark.parametrize(
    ("raw", "paused"),
    [
        (None, False),
        ("false", False),
        (" False ", False),
        ("true", True),
        ("TRUE", True),
        ("yes", True),
        ("", True),
    ],
)
def test_any_paused_value_but_false_pauses(raw: str | None, paused: bool) -> None:
    assert is_paused(raw) is paused


def test_a_deletion_on_a_node_the_partition_holds_is_reported(tmp_path: Path) -> None:
    # Partition 2 of edge-1..edge-4: edge-3 and edge-4 stay on the old revision.
    watcher = history(tmp_path)
    watcher.ds_partition.set(T0 + 5, "2")
    delete(watcher, "edge-1", T0 + 11)
    delete(watcher, "edge-2", T0 + 11.1)
    delete(watcher, "edge-4", T0 + 20)
    found = watcher.violations(budget=2, min_ready_seconds=MIN_READY)
    assert [(v.at, v.invariant) for v in found] == [(T0 + 20, "partition")]
    assert found[0].message == (
        "pod ns/old-edge-4 deleted on node edge-4, held by edgerollout.io/partition '2' since "
        f"{clock(T0 + 5)} (it holds edge-3, edge-4)"
    )
    assert found[0].objects == ("pod ns/old-edge-4 (uid old-edge-4)", "node edge-4")


def test_a_partition_raised_a_moment_before_a_deletion_is_not_held_against_the_controller(
    tmp_path: Path,
) -> None:
    watcher = history(tmp_path)
    watcher.ds_partition.set(T0 + 5, "1")
    watcher.ds_partition.set(T0 + 11.5, "3")  # edge-2 held from now on
    delete(watcher, "edge-2", T0 + 12)
    delete(watcher, "edge-3", T0 + 20)
    found = watcher.violations(budget=2, min_ready_seconds=MIN_READY)
    assert [(v.at, v.invariant, v.objects[1]) for v in found] == [
        (T0 + 20, "partition", "node edge-3")
    ]


def test_a_partition_lowered_a_moment_after_a_deletion_is_not_held_against_the_controller(
    tmp_path: Path,
) -> None:
    watcher = history(tmp_path)
    watcher.ds_partition.set(T0 + 5, "4")
    watcher.ds_partition.set(T0 + 12.5, None)  # the watcher saw the lowering after the deletion
    delete(watcher, "edge-1", T0 + 12)
    assert watcher.violations(budget=2, min_ready_seconds=MIN_READY) == []


@pytest.mark.parametrize(
    ("raw", "held"),
    [
        (None, ""),
        ("0", ""),
        ("000", ""),
        (" 1 ", "edge-4"),
        ("3", "edge-2 edge-3 edge-4"),
        ("9", "edge-1 edge-2 edge-3 edge-4"),
        ("1" * 40, "edge-1 edge-2 edge-3 edge-4"),
        ("50%", "edge-3 edge-4"),
        ("30%", "edge-3 edge-4"),
        ("0%", ""),
        ("-1", "edge-1 edge-2 edge-3 edge-4"),
        ("two", "edge-1 edge-2 edge-3 edge-4"),
    ],
)
def test_a_partition_holds_the_last_nodes_by_name(raw: str | None, held: str) -> None:
    assert partition_holds(raw, ["edge-3", "edge-1", "edge-4", "edge-2"]) == frozenset(held.split())


def test_nothing_is_held_against_a_deletion_while_the_daemonset_watch_was_down(
    tmp_path: Path,
) -> None:
    # Paused since T0 + 10; the watch was down from T0 + 13 to T0 + 20 and listed "false" then:
    # the resume may have come at any moment of the spell.
    watcher = history(tmp_path)
    watcher.ds_paused.set(T0 + 10, "true")
    watcher.ds_paused.set(T0 + 20, "false")
    watcher.ds_unseen.append((T0 + 13, T0 + 20))
    delete(watcher, "edge-1", T0 + 11.5)
    delete(watcher, "edge-2", T0 + 15)
    found = watcher.violations(budget=2, min_ready_seconds=MIN_READY)
    assert [(v.at, v.invariant) for v in found] == [(T0 + 11.5, "paused")]
