"""The recovery timeline after an outage, on a recorded history (no lab): each milestone from the
audit log's requests and the watcher's pods and nodes, edgerollout's own part measured from the
moment the cluster allowed a deletion, and the native reference's convergence beside it."""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

from edgerollout_lab.control_plane import CONTROLLER_MANAGER_USER, LAB_CONTROLLER_USER
from tests.e2e.support.chaos.recovery import Outage, Recovery, converged_since, recovery
from tests.e2e.support.invariants import AuditedDeletion, InvariantWatcher, PodLife
from tests.e2e.support.invariants.history import AuditedRequest

NODES = ["edge-1", "edge-2", "edge-3"]
OLD, NEW = "nginx:1", "nginx:2"
T0 = 1_000.0
MIN_READY = 2.0
OUTAGE = Outage("kube-apiserver restart", down=T0 + 10, back=T0 + 20)


def watcher(tmp_path: Path, name: str = "ds") -> InvariantWatcher:
    """Every node Ready with an old pod available since before T0; edge-1 already updated."""
    history = InvariantWatcher(
        cast(Any, None),
        cast(Any, None),
        "ns",
        daemonset=name,
        selector=f"app={name}",
        nodes=NODES,
        audit_log=tmp_path / "audit.log",
        controller_user=LAB_CONTROLLER_USER,
    )
    history.started_at = T0
    for node in NODES:
        history.node_ready[node].set(T0, True)
        image = NEW if node == "edge-1" else OLD
        pod = PodLife(
            uid=f"{name}-{node}", name=f"{name}-{node}", node=node, images=(image,), seen=T0
        )
        pod.ready.set(T0, T0 - 100)
        history.pods[pod.uid] = pod
    return history


def replace(history: InvariantWatcher, node: str, at: float, ready: float) -> None:
    """The controller deletes the node's pod at `at`; its new pod is seen 0.5 s later, Ready at
    `ready`."""
    old = next(p for p in history.pods_on(node) if p.deleting_at is None)
    old.deleting_at = at
    history.deletions.append(AuditedDeletion(at, "ns", old.name, LAB_CONTROLLER_USER, 200, old.uid))
    new = PodLife(uid=f"new-{node}", name=f"new-{node}", node=node, images=(NEW,), seen=at + 0.5)
    new.ready.set(at + 0.5, None)
    new.ready.set(ready, ready)
    history.pods[new.uid] = new


def request(
    history: InvariantWatcher, at: float, user: str, verb: str, kind: str, code: int = 200
) -> None:
    history.requests.append(AuditedRequest(at, user, verb, kind, code))


def recovered(
    history: InvariantWatcher,
    *,
    budget: int,
    until: float = T0 + 40,
    native: InvariantWatcher | None = None,
) -> Recovery:
    """The recovery after `OUTAGE` of a rollout to `NEW` with this budget, as of `until`."""
    return recovery(
        history,
        OUTAGE,
        image=NEW,
        budget=budget,
        min_ready_seconds=MIN_READY,
        until=until,
        native=native,
    )


def test_each_milestone_is_read_from_the_record(tmp_path: Path) -> None:
    history = watcher(tmp_path)
    for kind in ("pods", "daemonsets", "nodes"):
        request(history, T0 + 1, LAB_CONTROLLER_USER, "list", kind)
    # After the outage: the first answer at +0.5 (pods), nodes refused once, then answered at +3.
    request(history, T0 + 20.5, LAB_CONTROLLER_USER, "watch", "pods")
    request(history, T0 + 21, LAB_CONTROLLER_USER, "list", "nodes", code=0)
    request(history, T0 + 21.5, LAB_CONTROLLER_USER, "list", "daemonsets")
    request(history, T0 + 23, LAB_CONTROLLER_USER, "list", "nodes")
    request(history, T0 + 22, LAB_CONTROLLER_USER, "update", "leases")
    request(history, T0 + 20.2, CONTROLLER_MANAGER_USER, "list", "pods")
    for kind in ("daemonsets", "nodes", "controllerrevisions"):
        request(history, T0 + 24, CONTROLLER_MANAGER_USER, "watch", kind)
    # The nodes were NotReady from +12 (the grace period) and Ready again at +25: no deletion is
    # allowed before; edgerollout deletes at +25.8 and +31.
    for node in NODES:
        history.node_ready[node].set(T0 + 12, False)
        history.node_ready[node].set(T0 + 25, True)
    replace(history, "edge-2", T0 + 25.8, ready=T0 + 28)
    replace(history, "edge-3", T0 + 31, ready=T0 + 33)

    found = recovered(history, budget=1)

    assert found.as_json() == {
        "outage": "kube-apiserver restart",
        "down_seconds": 10.0,
        "back": T0 + 20,
        "controller_first_contact": 0.5,
        "controller_caches_resumed": 3.0,
        "controller_manager_first_contact": 0.2,
        "controller_manager_caches_resumed": 4.0,
        "lease_written": 2.0,
        "deletion_allowed": 5.0,
        "first_deletion": 5.8,
        "own_part": 0.8,
        "first_new_pod": 6.3,
        "converged": 13.0,
        "native_converged": None,
    }
    assert found.text().splitlines()[0].endswith("edgerollout's own part: 0.8 s")


def test_a_deletion_that_waits_for_the_budget_is_not_edgerollouts_part(tmp_path: Path) -> None:
    # At the end of the outage edge-2's new pod is Ready but not yet available (minReadySeconds):
    # with a budget of 1 the next deletion is allowed only once it is, at +1.
    history = watcher(tmp_path)
    replace(history, "edge-2", T0 + 5, ready=T0 + 19)
    replace(history, "edge-3", T0 + 21.5, ready=T0 + 24)

    found = recovered(history, budget=1)

    assert (found.deletion_allowed, found.first_deletion, found.own_part) == (1.0, 1.5, 0.5)
    assert found.converged == 4.0


def test_no_deletion_needed_after_the_outage_has_no_own_part(tmp_path: Path) -> None:
    history = watcher(tmp_path)
    replace(history, "edge-2", T0 + 2, ready=T0 + 4)
    replace(history, "edge-3", T0 + 2, ready=T0 + 4)

    found = recovered(history, budget=2)

    assert (found.deletion_allowed, found.first_deletion, found.own_part) == (None, None, None)
    assert found.converged == 0.0  # converged before the outage ended, and stayed so


def test_the_native_reference_is_timed_the_same_way(tmp_path: Path) -> None:
    history = watcher(tmp_path)
    native = watcher(tmp_path, "native")
    for node in ("edge-2", "edge-3"):
        replace(history, node, T0 + 22, ready=T0 + 26)
    replace(native, "edge-2", T0 + 21, ready=T0 + 23)
    replace(native, "edge-3", T0 + 27, ready=T0 + 29.5)

    found = recovered(history, budget=2, native=native)

    assert (found.converged, found.native_converged) == (6.0, 9.5)


def test_a_deletion_the_watcher_saw_allowed_only_after_it_is_no_time_of_edgerollouts(
    tmp_path: Path,
) -> None:
    # edge-2's new pod turned available at +1 as the watcher saw it; the controller saw it a
    # moment sooner and deleted edge-3's old pod at +0.9.
    history = watcher(tmp_path)
    replace(history, "edge-2", T0 + 5, ready=T0 + 19)
    replace(history, "edge-3", T0 + 20.9, ready=T0 + 24)

    found = recovered(history, budget=1)

    assert (found.deletion_allowed, found.first_deletion, found.own_part) == (None, 0.9, 0.0)


def test_a_deletion_made_before_the_probe_saw_the_server_back_is_the_first(
    tmp_path: Path,
) -> None:
    # The controller reached the API server 0.1 s before the probe did, and deleted at once; the
    # next deletion waited 60 s for the budget. Its own part is nothing, not 60 s.
    history = watcher(tmp_path)
    replace(history, "edge-2", T0 + 19.9, ready=T0 + 70)
    replace(history, "edge-3", T0 + 80, ready=T0 + 82)

    found = recovered(history, budget=1, until=T0 + 90)

    assert (found.first_deletion, found.own_part) == (0.0, 0.0)


def test_convergence_is_the_start_of_the_last_spell(tmp_path: Path) -> None:
    # Converged at +4, then edge-2 NotReady from +8 to +12: converged again from +12 only.
    history = watcher(tmp_path)
    replace(history, "edge-2", T0 + 2, ready=T0 + 4)
    replace(history, "edge-3", T0 + 2, ready=T0 + 4)
    history.node_ready["edge-2"].set(T0 + 8, False)
    history.node_ready["edge-2"].set(T0 + 12, True)

    assert converged_since(history, NEW, T0 + 40) == T0 + 12
    assert converged_since(history, NEW, T0 + 10) is None
    assert converged_since(history, OLD, T0 + 40) is None
