"""The problem edgerollout exists to solve, shown on the lab with the native DaemonSet controller.

These tests pin down upstream behaviour: a native RollingUpdate completes while every node is
connected, and stalls for good once disconnected nodes hold the max-unavailable budget; with OnDelete,
a pod deleted on a disconnected node stays Terminating and is never replaced.
"""

from __future__ import annotations

import pytest

from edgerollout_lab.control_plane import NODE_MONITOR_GRACE_SECONDS
from tests.e2e.support.lab import (
    LabHandle,
    by_node,
    hold_for,
    images,
    pod_ready,
    set_image,
    wait_for,
)
from tests.e2e.support.seed import NAME, NEW, OLD, SELECTOR, running_everywhere, seed_daemonset

pytestmark = pytest.mark.lab(nodes=4)

NODES = ["edge-1", "edge-2", "edge-3", "edge-4"]
ROLLING = {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1}}


async def test_native_rolling_update_completes_when_all_nodes_are_connected(
    kube: LabHandle, namespace: str
) -> None:
    before = await seed_daemonset(kube, namespace, strategy=ROLLING, nodes=NODES)

    await set_image(kube, namespace, NAME, NEW)
    after = await running_everywhere(kube, namespace, NEW, NODES)

    assert sorted(after) == NODES
    assert not set(before.values()) & set(after.values()), "every pod was replaced"


async def test_native_rolling_update_stalls_with_two_nodes_disconnected(
    kube: LabHandle, namespace: str
) -> None:
    before = await seed_daemonset(kube, namespace, strategy=ROLLING, nodes=NODES)
    await kube.cut_off("edge-3", "edge-4")

    await set_image(kube, namespace, NAME, NEW)

    # The disconnected nodes' old pods are not Ready, so the controller deletes them at once; the
    # kubelets never confirm, so they stay Terminating and hold the whole budget.
    async def both_terminating() -> bool:
        grouped = by_node(await kube.pods(namespace, SELECTOR))
        return all(
            [p.metadata.uid for p in grouped.get(node, [])] == [before[node]]
            and grouped[node][0].metadata.deletion_timestamp is not None
            for node in ("edge-3", "edge-4")
        )

    await wait_for(both_terminating, timeout=30, what="the old pods on edge-3/edge-4 Terminating")

    async def connected_nodes_untouched() -> bool:
        grouped = by_node(await kube.pods(namespace, SELECTOR))
        return (
            all(
                [p.metadata.uid for p in grouped.get(node, [])] == [before[node]]
                and images(grouped[node][0]) == [OLD]
                and grouped[node][0].metadata.deletion_timestamp is None
                for node in ("edge-1", "edge-2")
            )
            and await both_terminating()
        )

    # Well past the grace period the connected nodes still run the old image: the rollout stalled.
    await hold_for(
        connected_nodes_untouched,
        seconds=3 * NODE_MONITOR_GRACE_SECONDS,
        what="edge-1/edge-2 keeping their old pods while edge-3/edge-4 stay Terminating",
    )
    ds = await kube.apps.read_namespaced_daemon_set(NAME, namespace)
    # The API omits zero counts: none of the four nodes runs the updated template.
    assert ds.status.updated_number_scheduled is None
    assert ds.status.desired_number_scheduled == 2  # the two Ready nodes


async def test_on_delete_pod_is_replaced_on_ready_node_but_stays_terminating_on_disconnected_node(
    kube: LabHandle, namespace: str
) -> None:
    before = await seed_daemonset(kube, namespace, nodes=NODES)
    await kube.cut_off("edge-2")
    await set_image(kube, namespace, NAME, NEW)

    pods = by_node(await kube.pods(namespace, SELECTOR))
    for node in ("edge-1", "edge-2"):
        pod = pods[node][0]
        await kube.core.delete_namespaced_pod(pod.metadata.name, namespace)

    async def edge1_replaced() -> bool:
        grouped = by_node(await kube.pods(namespace, SELECTOR))
        pods = grouped.get("edge-1", [])
        return (
            len(pods) == 1
            and pods[0].metadata.uid != before["edge-1"]
            and images(pods[0]) == [NEW]
            and pod_ready(pods[0])
        )

    await wait_for(edge1_replaced, timeout=30, what="a Ready nginx:1.19.5 pod on edge-1")

    async def edge2_stuck() -> bool:
        grouped = by_node(await kube.pods(namespace, SELECTOR))
        pods = grouped.get("edge-2", [])
        return (
            [p.metadata.uid for p in pods] == [before["edge-2"]]
            and pods[0].metadata.deletion_timestamp is not None
            and images(pods[0]) == [OLD]
        )

    await hold_for(
        edge2_stuck,
        seconds=2 * NODE_MONITOR_GRACE_SECONDS,
        what="edge-2's deleted pod staying Terminating with no replacement",
    )
    untouched = by_node(await kube.pods(namespace, SELECTOR))
    for node in ("edge-3", "edge-4"):
        assert [p.metadata.uid for p in untouched[node]] == [before[node]]
        assert images(untouched[node][0]) == [OLD]
