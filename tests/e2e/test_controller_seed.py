"""The scenarios users run (seed 001): AdvancedRollingUpdate through disconnections, and OTA marks.

Each test runs the real controller process against the lab and asserts exact pods, UIDs, images,
conditions and Events.
"""

from __future__ import annotations

import time

import pytest

from tests.e2e.support.controller_process import ControllerProcess
from tests.e2e.support.lab import (
    LabHandle,
    by_node,
    condition,
    deleted_on,
    events,
    hold_for,
    images,
    pod_ready,
    set_image,
    wait_for,
)
from tests.e2e.support.seed import (
    NAME,
    NEW,
    NODES,
    OLD,
    SELECTOR,
    newest_revision_hash,
    revision_after,
    running_everywhere,
    seed_daemonset,
)

pytestmark = pytest.mark.lab(nodes=3)


async def test_advanced_rolling_update_skips_disconnected_nodes_and_catches_up_on_reconnect(
    kube: LabHandle, namespace: str, controller: ControllerProcess
) -> None:
    annotations = {
        "apps.openyurt.io/update-strategy": "AdvancedRollingUpdate",
        "apps.openyurt.io/max-unavailable": "30%",
    }
    before = await seed_daemonset(kube, namespace, annotations=annotations)

    await kube.cut_off("edge-2", "edge-3")
    await set_image(kube, namespace, NAME, NEW)

    async def edge1_updated() -> bool:
        grouped = by_node(await kube.pods(namespace, SELECTOR))
        pods = grouped.get("edge-1", [])
        return len(pods) == 1 and images(pods[0]) == [NEW] and pod_ready(pods[0])

    await wait_for(edge1_updated, timeout=30, what="edge-1 running nginx:1.19.5")

    async def disconnected_untouched() -> bool:
        grouped = by_node(await kube.pods(namespace, SELECTOR))
        return all(
            [p.metadata.uid for p in grouped.get(node, [])] == [before[node]]
            and grouped[node][0].metadata.deletion_timestamp is None
            and images(grouped[node][0]) == [OLD]
            for node in ("edge-2", "edge-3")
        )

    await hold_for(disconnected_untouched, seconds=8, what="edge-2/edge-3 keeping their pods")
    deleted = [e.message for e in await events(kube, namespace, reason="SuccessfulDelete")]
    assert len(deleted) == 1
    assert deleted[0].startswith("Deleted pod: ")
    assert deleted[0].endswith("on node edge-1: outdated, deleted within max-unavailable")

    await kube.connect("edge-2", "edge-3")
    ready_at = time.monotonic()
    for node in ("edge-2", "edge-3"):
        await kube.wait_node_ready(node, "True", timeout=20)
    after = await running_everywhere(kube, namespace, NEW, NODES, timeout=30)
    assert time.monotonic() - ready_at < 30
    assert not set(before.values()) & set(after.values())
    assert await deleted_on(kube, namespace) == NODES
    assert controller.metric("edgerollout_pods_deleted_total", reason="outdated_within_budget") >= 1


async def test_legacy_auto_value_upgrades_like_advanced_rolling_update_and_says_it_is_deprecated(
    kube: LabHandle, namespace: str, controller: ControllerProcess
) -> None:
    annotations = {"apps.openyurt.io/update-strategy": "auto"}
    before = await seed_daemonset(kube, namespace, annotations=annotations)
    await set_image(kube, namespace, NAME, NEW)
    after = await running_everywhere(kube, namespace, NEW, NODES)
    assert not set(before.values()) & set(after.values())

    deprecated = await events(kube, namespace, reason="DeprecatedUpdateStrategy")
    assert len(deprecated) == 1
    assert deprecated[0].type == "Normal"
    assert "auto" in deprecated[0].message
    assert "AdvancedRollingUpdate" in deprecated[0].message
    assert len(await events(kube, namespace, reason="SuccessfulDelete")) == 3


async def test_ota_marks_every_pod_and_deletes_nothing(
    kube: LabHandle, namespace: str, controller: ControllerProcess
) -> None:
    annotations = {"apps.openyurt.io/update-strategy": "OTA"}
    before = await seed_daemonset(kube, namespace, annotations=annotations)
    first_hash = await newest_revision_hash(kube, namespace)

    async def all_marked(status: str, revision: str) -> bool:
        pods = await kube.pods(namespace, SELECTOR)
        return len(pods) == 3 and all(
            (c := condition(p, "PodNeedUpgrade")) is not None
            and c.status == status
            and c.message == f"controllerrevision: {revision}"
            for p in pods
        )

    await wait_for(
        lambda: all_marked("False", first_hash), timeout=30, what="PodNeedUpgrade=False on all"
    )
    kubelet_conditions = {
        p.metadata.uid: {
            c.type: (c.status, c.last_transition_time)
            for c in p.status.conditions
            if c.type != "PodNeedUpgrade"
        }
        for p in await kube.pods(namespace, SELECTOR)
    }

    await set_image(kube, namespace, NAME, NEW)
    second_hash = await revision_after(kube, namespace, first_hash)
    await wait_for(
        lambda: all_marked("True", second_hash), timeout=15, what="PodNeedUpgrade=True on all"
    )

    await hold_for(
        lambda: _same_pods(kube, namespace, before), seconds=5, what="no pod being deleted"
    )
    assert await events(kube, namespace, reason="SuccessfulDelete") == []
    for pod in await kube.pods(namespace, SELECTOR):
        kept = {
            c.type: (c.status, c.last_transition_time)
            for c in pod.status.conditions
            if c.type != "PodNeedUpgrade"
        }
        assert kept == kubelet_conditions[pod.metadata.uid], (
            "the kubelet's conditions are untouched"
        )

    # The node decides: deleting its pod (as the agent's upgrade does) brings the new revision.
    edge2 = by_node(await kube.pods(namespace, SELECTOR))["edge-2"][0]
    await kube.core.delete_namespaced_pod(edge2.metadata.name, namespace)

    async def edge2_current() -> bool:
        pods = by_node(await kube.pods(namespace, SELECTOR)).get("edge-2", [])
        if len(pods) != 1 or pods[0].metadata.uid == before["edge-2"]:
            return False
        mark = condition(pods[0], "PodNeedUpgrade")
        return (
            images(pods[0]) == [NEW]
            and mark is not None
            and mark.status == "False"
            and mark.message == f"controllerrevision: {second_hash}"
        )

    await wait_for(edge2_current, timeout=30, what="edge-2's new pod with PodNeedUpgrade=False")
    others = by_node(await kube.pods(namespace, SELECTOR))
    assert [p.metadata.uid for p in others["edge-1"]] == [before["edge-1"]]
    assert [p.metadata.uid for p in others["edge-3"]] == [before["edge-3"]]


async def _same_pods(kube: LabHandle, namespace: str, before: dict[str, str]) -> bool:
    grouped = by_node(await kube.pods(namespace, SELECTOR))
    return {n: [p.metadata.uid for p in pods] for n, pods in grouped.items()} == {
        n: [uid] for n, uid in before.items()
    } and all(p[0].metadata.deletion_timestamp is None for p in grouped.values())
