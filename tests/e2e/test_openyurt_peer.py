"""OpenYurt's own controller in the lab: yurt-manager v1.5.1 running only its daemonpodupdater
(design §11.9), on the seed's DaemonSet, so that edgerollout can be compared with it.

These tests prove that the peer runs here as it does in an OpenYurt cluster and record what it
does; they do not hold it to edgerollout's contract. They need the peer built
(`./dev lab build --peer openyurt`, which `./dev test` does), and are skipped otherwise.

Who deleted which pod, and with which options, is read from the API server's audit log: the peer
deletes as its own ServiceAccount.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from edgerollout.domain.model import Condition
from edgerollout_lab.cluster import Lab
from edgerollout_lab.control_plane import audit_log_path
from edgerollout_lab.openyurt import (
    SERVICE_ACCOUNT,
    SERVICE_ACCOUNT_NAMESPACE,
    YurtManager,
    resyncing,
    start_yurt_manager,
)
from tests.e2e.support.audit import audited_pod_deletions
from tests.e2e.support.controller_process import stopped_cleanly
from tests.e2e.support.lab import (
    LabHandle,
    condition,
    hold_for,
    set_image,
    wait_for,
)
from tests.e2e.support.peer import needs_peer
from tests.e2e.support.seed import (
    NAME,
    NEW,
    OLD,
    SELECTOR,
    running_everywhere,
    running_on,
    seed_daemonset,
)
from tests.e2e.support.unavailability_watcher import UnavailabilityWatcher

pytestmark = [
    needs_peer,
    pytest.mark.lab(nodes=4),
]

NODES = ["edge-1", "edge-2", "edge-3", "edge-4"]
CUT = "edge-4"
READY_NODES = [node for node in NODES if node != CUT]
PEER_USER = f"system:serviceaccount:{SERVICE_ACCOUNT_NAMESPACE}:{SERVICE_ACCOUNT}"
NEED_UPGRADE = "PodNeedUpgrade"


@pytest.fixture
async def yurt_manager(
    lab: Lab, namespace: str, request: pytest.FixtureRequest
) -> AsyncIterator[YurtManager]:
    """yurt-manager against the session's lab for one test (it watches every namespace, so it
    runs only during this module's tests), its DaemonSets resynced (`resyncing`); its log is
    printed if the test failed, and it must stop cleanly (exit 0) when asked."""
    handle = await start_yurt_manager(lab)
    with stopped_cleanly(handle, request, "yurt-manager", handle.run_log_text):
        async with resyncing(lab.kubeconfig):
            yield handle


def peer_deletions(audit_log: Path, namespace: str, *, offset: int) -> list[dict[str, Any]]:
    """The pod deletions the peer asked for in the namespace, oldest first."""
    return [
        entry
        for entry in audited_pod_deletions(audit_log, namespace, offset=offset)
        if entry["user"]["username"] == PEER_USER
    ]


async def pod_names(kube: LabHandle, namespace: str) -> dict[str, str]:
    """Node -> the name of the DaemonSet's pod on it."""
    return {pod.spec.node_name: pod.metadata.name for pod in await kube.pods(namespace, SELECTOR)}


async def test_openyurt_upgrades_every_pod_on_ready_nodes_and_the_cut_node_once_back(
    kube: LabHandle, namespace: str, yurt_manager: YurtManager
) -> None:
    audit_log = audit_log_path(kube.lab.folder)
    offset = audit_log.stat().st_size
    annotations = {
        "apps.openyurt.io/update-strategy": "AdvancedRollingUpdate",
        "apps.openyurt.io/max-unavailable": "1",
    }
    before = await seed_daemonset(kube, namespace, annotations=annotations, nodes=NODES)
    old_names = await pod_names(kube, namespace)
    await kube.cut_off(CUT)
    async with UnavailabilityWatcher(
        kube.core, namespace, selector=SELECTOR, nodes=READY_NODES
    ) as watcher:
        await set_image(kube, namespace, NAME, NEW)
        upgraded = await running_on(kube, namespace, NEW, READY_NODES)

        async def cut_node_keeps_its_pod() -> bool:
            pods = [p for p in await kube.pods(namespace, SELECTOR) if p.spec.node_name == CUT]
            return [p.metadata.uid for p in pods] == [before[CUT]] and all(
                p.metadata.deletion_timestamp is None for p in pods
            )

        await hold_for(cut_node_keeps_its_pod, seconds=5, what=f"{CUT} keeping its {OLD} pod")
    # A record for the comparison with edgerollout, not an expectation: the peer's own budget.
    print(f"max-unavailable 1; Ready nodes unavailable at once, at most: {watcher.max_unavailable}")
    print(watcher.timeline())

    deleted = peer_deletions(audit_log, namespace, offset=offset)
    assert sorted(entry["objectRef"]["name"] for entry in deleted) == sorted(
        old_names[node] for node in READY_NODES
    )
    assert not {before[node] for node in READY_NODES} & set(upgraded.values())

    # The peer reconciles on DaemonSet updates only, not on Node or Pod events; what wakes it is
    # the native controller's status write once the returning node's pod is Ready again.
    restored_at = time.monotonic()
    await kube.reconnect(CUT)
    after = await running_everywhere(kube, namespace, NEW, NODES, timeout=60)
    print(f"{CUT} upgraded {time.monotonic() - restored_at:.1f} s after its link was restored")

    assert not set(before.values()) & set(after.values())
    deleted = peer_deletions(audit_log, namespace, offset=offset)
    assert sorted(entry["objectRef"]["name"] for entry in deleted) == sorted(old_names.values())
    assert [entry["responseStatus"]["code"] for entry in deleted] == [200] * len(NODES)
    # A bare DeleteOptions: no UID precondition, no grace period.
    assert [sorted(entry["requestObject"]) for entry in deleted] == [["apiVersion", "kind"]] * len(
        NODES
    )


async def test_openyurt_marks_pod_need_upgrade_on_every_ota_pod_and_deletes_nothing(
    kube: LabHandle, namespace: str, yurt_manager: YurtManager
) -> None:
    audit_log = audit_log_path(kube.lab.folder)
    offset = audit_log.stat().st_size
    annotations = {"apps.openyurt.io/update-strategy": "OTA"}
    before = await seed_daemonset(kube, namespace, annotations=annotations, nodes=NODES)

    async def marked(status: str) -> dict[str, Condition] | None:
        pods = await kube.pods(namespace, SELECTOR)
        found = {pod.metadata.uid: condition(pod, NEED_UPGRADE) for pod in pods}
        if sorted(found) != sorted(before.values()):
            return None
        conditions = {uid: c for uid, c in found.items() if c is not None and c.status == status}
        return conditions if len(conditions) == len(found) else None

    await wait_for(lambda: marked("False"), timeout=30, what=f"{NEED_UPGRADE}=False on every pod")
    await set_image(kube, namespace, NAME, NEW)
    conditions = await wait_for(
        lambda: marked("True"), timeout=30, what=f"{NEED_UPGRADE}=True on every pod"
    )

    # The peer writes the condition bare: no reason, no message naming the revision.
    assert {(c.reason, c.message) for c in conditions.values()} == {("", "")}

    async def still_marked() -> bool:
        return await marked("True") is not None

    await hold_for(still_marked, seconds=5, what=f"every old pod kept, {NEED_UPGRADE}=True")
    assert peer_deletions(audit_log, namespace, offset=offset) == []
