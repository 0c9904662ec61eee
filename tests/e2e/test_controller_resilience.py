"""AdvancedRollingUpdate under pressure (design §4): the budget seen from outside, a leader killed
mid-rollout, a Node object deleted mid-rollout.

The budget is checked by `UnavailabilityWatcher`, which watches the pods itself and shares no code
with the controller, so the controller's own bookkeeping never grades itself.
"""

from __future__ import annotations

import asyncio
import datetime
import time
from pathlib import Path
from typing import Any, cast

import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from tests.e2e.support.controller_process import ControllerProcess
from tests.e2e.support.lab import (
    LabHandle,
    by_node,
    daemonset,
    events,
    hold_for,
    images,
    pod_ready,
    restore_node,
    set_image,
    wait_for,
)
from tests.e2e.support.seed import ON_DELETE
from tests.e2e.support.unavailability_watcher import UnavailabilityWatcher

OLD, NEW = "nginx:1.19.4", "nginx:1.19.5"
NAME = "nginx-daemonset"
SELECTOR = f"app={NAME}"
LEASE = "edgerollout-test"
LEASE_DURATION, RENEW_DEADLINE, RETRY_PERIOD = 6, 4, 1
ROLLOUT_TIMEOUT = 120
MIN_READY_SECONDS = 3


def edge_nodes(count: int) -> list[str]:
    return sorted(f"edge-{index}" for index in range(1, count + 1))


def advanced_rolling_update(max_unavailable: str) -> dict[str, str]:
    return {
        "apps.openyurt.io/update-strategy": "AdvancedRollingUpdate",
        "apps.openyurt.io/max-unavailable": max_unavailable,
    }


async def running_on(
    kube: LabHandle, namespace: str, image: str, nodes: list[str], *, timeout: float = 60
) -> dict[str, client.V1Pod]:
    """Wait for exactly one Ready, live pod running image on each of `nodes` (others ignored)."""

    async def probe() -> dict[str, client.V1Pod] | None:
        grouped = by_node(await kube.pods(namespace, SELECTOR))
        found: dict[str, client.V1Pod] = {}
        for node in nodes:
            pods = grouped.get(node, [])
            if len(pods) != 1:
                return None
            pod = pods[0]
            if not (
                pod_ready(pod)
                and images(pod) == [image]
                and pod.metadata.deletion_timestamp is None
            ):
                return None
            found[node] = pod
        return found

    return await wait_for(probe, timeout=timeout, what=f"one Ready {image} pod on each of {nodes}")


async def watcher_sees_all_available(watcher: UnavailabilityWatcher, image: str) -> None:
    """The watcher caught up with the finished rollout: no node unavailable, every pod `image`."""

    async def probe() -> bool:
        live = watcher.live_images()
        return watcher.unavailable_now == () and all(pods == [[image]] for pods in live.values())

    await wait_for(probe, timeout=15, what=f"the watcher to see every node available on {image}")


def deleted_pod_and_node(event: Any) -> tuple[str, str]:
    """(pod, node) from `Deleted pod: <pod> on node <node>: <why>`."""
    message = str(event.message)
    assert message.startswith("Deleted pod: "), message
    pod, _, rest = message.removeprefix("Deleted pod: ").partition(" on node ")
    return pod, rest.partition(":")[0]


async def deletions_reported(
    kube: LabHandle, namespace: str, *, at_least: int
) -> list[tuple[str, str]]:
    """(pod, node) of every SuccessfulDelete, once there are `at_least` of them.

    A deletion's Event is written after the deletion, so the rollout may finish before the last
    Event is recorded."""

    async def probe() -> list[tuple[str, str]] | None:
        found = await events(kube, namespace, reason="SuccessfulDelete")
        return [deleted_pod_and_node(e) for e in found] if len(found) >= at_least else None

    return await wait_for(probe, timeout=10, what=f"{at_least} SuccessfulDelete events")


@pytest.mark.lab(nodes=10)
async def test_max_unavailable_30_percent_never_exceeds_three_unavailable_nodes(
    kube: LabHandle, namespace: str, controller: ControllerProcess
) -> None:
    nodes = edge_nodes(10)
    await kube.apps.create_namespaced_daemon_set(
        namespace,
        daemonset(NAME, image=OLD, strategy=ON_DELETE, annotations=advanced_rolling_update("30%")),
    )
    before = await running_on(kube, namespace, OLD, nodes)
    async with UnavailabilityWatcher(
        kube.core, namespace, selector=SELECTOR, nodes=nodes
    ) as watcher:
        assert watcher.unavailable_now == ()
        await set_image(kube, namespace, NAME, NEW)
        after = await running_on(kube, namespace, NEW, nodes, timeout=ROLLOUT_TIMEOUT)
        await watcher_sees_all_available(watcher, NEW)

    assert not {p.metadata.uid for p in before.values()} & {p.metadata.uid for p in after.values()}
    assert 0 < watcher.max_unavailable <= 3, watcher.timeline()
    deleted = await deletions_reported(kube, namespace, at_least=len(nodes))
    assert sorted(deleted) == sorted((p.metadata.name, node) for node, p in before.items())
    assert (
        controller.metric("edgerollout_pods_deleted_total", reason="outdated_within_budget") == 10
    )


async def lease_holder(kube: LabHandle, namespace: str) -> str | None:
    try:
        lease = await client.CoordinationV1Api(kube.api).read_namespaced_lease(LEASE, namespace)
    except ApiException as error:
        if error.status == 404:
            return None
        raise
    return cast(str | None, lease.spec.holder_identity) or None


async def leader_status(replica: ControllerProcess) -> float:
    """`leader_election_master_status{name="edgerollout-test"}` on that replica (0 if absent)."""
    return await asyncio.to_thread(replica.metric, "leader_election_master_status", name=LEASE)


def second(at: float) -> datetime.datetime:
    """The wall-clock second holding `at`, as Event timestamps (whole seconds) state it."""
    return datetime.datetime.fromtimestamp(int(at), datetime.UTC)


@pytest.mark.lab(nodes=10)
async def test_standby_takes_over_after_leader_is_killed_and_budget_holds(
    kube: LabHandle, namespace: str, tmp_path: Path
) -> None:
    nodes = edge_nodes(10)
    election = [
        "--leader-elect",
        f"--leader-election-namespace={namespace}",
        f"--leader-election-name={LEASE}",
        f"--lease-duration={LEASE_DURATION}",
        f"--renew-deadline={RENEW_DEADLINE}",
        f"--retry-period={RETRY_PERIOD}",
    ]
    replicas = {
        identity: ControllerProcess.launch(
            kube.lab.kubeconfig,
            tmp_path / f"{identity}.log",
            f"--namespace={namespace}",
            *election,
            f"--identity={identity}",
        )
        for identity in ("replica-a", "replica-b")
    }
    killed: set[str] = set()
    exit_codes: dict[str, int] = {}
    try:
        for replica in replicas.values():
            await replica.wait_ready()
        leader = await wait_for(
            lambda: lease_holder(kube, namespace), timeout=20, what=f"a holder of Lease {LEASE}"
        )
        assert leader in replicas
        standby = next(identity for identity in replicas if identity != leader)

        async def master_status_agrees() -> bool:
            return (
                await leader_status(replicas[leader]) == 1
                and await leader_status(replicas[standby]) == 0
            )

        await wait_for(master_status_agrees, timeout=10, what=f"{leader} alone reporting leader")

        # KWOK starts a pod in milliseconds: without minReadySeconds the whole rollout would be
        # over before the leader could be killed in the middle of it.
        manifest = daemonset(
            NAME, image=OLD, strategy=ON_DELETE, annotations=advanced_rolling_update("2")
        )
        manifest["spec"]["minReadySeconds"] = MIN_READY_SECONDS
        await kube.apps.create_namespaced_daemon_set(namespace, manifest)
        before = await running_on(kube, namespace, OLD, nodes)
        async with UnavailabilityWatcher(
            kube.core,
            namespace,
            selector=SELECTOR,
            nodes=nodes,
            min_ready_seconds=MIN_READY_SECONDS,
        ) as watcher:
            await watcher_sees_all_available(watcher, OLD)
            rollout_started = time.time()
            await set_image(kube, namespace, NAME, NEW)

            async def first_deletion() -> list[Any] | None:
                return await events(kube, namespace, reason="SuccessfulDelete") or None

            await wait_for(
                first_deletion, timeout=30, interval=0.05, what="a first SuccessfulDelete"
            )
            outdated = [
                p
                for p in await kube.pods(namespace, SELECTOR)
                if images(p) == [OLD] and p.metadata.deletion_timestamp is None
            ]
            assert outdated, "the rollout is still under way at the kill"
            before_kill = await events(kube, namespace)
            killed_at = time.time()
            replicas[leader].kill()
            killed.add(leader)

            async def standby_holds_lease() -> bool:
                return await lease_holder(kube, namespace) == standby

            await wait_for(
                standby_holds_lease,
                timeout=LEASE_DURATION + 4,
                interval=0.1,
                what=f"{standby} taking Lease {LEASE} over",
            )
            took_over_after = time.time() - killed_at
            after = await running_on(kube, namespace, NEW, nodes, timeout=ROLLOUT_TIMEOUT)
            await watcher_sees_all_available(watcher, NEW)

        assert took_over_after <= LEASE_DURATION + 4
        assert await leader_status(replicas[standby]) == 1
        assert not {p.metadata.uid for p in before.values()} & {
            p.metadata.uid for p in after.values()
        }
        assert 0 < watcher.max_unavailable_since(rollout_started) <= 2, watcher.timeline()

        # The standby deleted every pod that went after the kill (the watcher may see a deletion
        # up to a moment late; the standby led only LEASE_DURATION after the kill).
        went_after_kill = {
            (p.metadata.name, node)
            for node, p in before.items()
            if watcher.gone_at[p.metadata.uid] > killed_at + 1
        }

        async def standby_reported_its_deletions() -> bool:
            found = await events(kube, namespace, reason="SuccessfulDelete")
            return went_after_kill <= {
                deleted_pod_and_node(e) for e in found if e.reporting_instance == standby
            }

        await wait_for(
            standby_reported_its_deletions,
            timeout=10,
            what=f"a SuccessfulDelete from {standby} for each of {sorted(went_after_kill)}",
        )

        # Before the kill only the leader wrote; the standby wrote nothing at all.
        assert before_kill
        assert {e.reporting_instance for e in before_kill} == {leader}
        recorded = await events(kube, namespace)
        assert {e.reporting_instance for e in recorded} == {leader, standby}
        for event in recorded:
            if event.reporting_instance == standby:
                assert event.first_timestamp >= second(killed_at), (event.message, killed_at)
            else:
                assert event.first_timestamp <= second(killed_at), (event.message, killed_at)

        deletions = [e for e in recorded if e.reason == "SuccessfulDelete"]
        deleted = [deleted_pod_and_node(e) for e in deletions]
        assert len(set(deleted)) == len(deleted), f"a pod deleted twice: {deleted}"
        original = {(p.metadata.name, node) for node, p in before.items()}
        assert set(deleted) <= original
        # SIGKILL may land between a deletion and its Event: that one pod went before the kill.
        unreported = original - set(deleted)
        assert len(unreported) <= 1, unreported
        for _, node in unreported:
            assert watcher.gone_at[before[node].metadata.uid] <= killed_at + 1
        by_standby = sum(1 for e in deletions if e.reporting_instance == standby)
        assert by_standby > 0
        assert by_standby == sum(
            replicas[standby].metric("edgerollout_pods_deleted_total", reason=reason)
            for reason in ("outdated_within_budget", "outdated_unavailable")
        )
    except BaseException:
        for identity, replica in replicas.items():
            print(f"--- controller {identity} log ---\n{replica.log_text()}")
        raise
    finally:
        for identity, replica in replicas.items():
            if identity not in killed:
                exit_codes[identity] = replica.stop()
    assert exit_codes == {standby: 0}, {i: replicas[i].log_text() for i in exit_codes}


@pytest.mark.lab(nodes=4)
async def test_node_object_deleted_mid_rollout_does_not_stall_the_rollout(
    kube: LabHandle, namespace: str, controller: ControllerProcess
) -> None:
    remaining = ["edge-1", "edge-2", "edge-3"]
    await kube.apps.create_namespaced_daemon_set(
        namespace,
        daemonset(NAME, image=OLD, strategy=ON_DELETE, annotations=advanced_rolling_update("1")),
    )
    before = await running_on(kube, namespace, OLD, [*remaining, "edge-4"])
    try:
        await kube.cut_off("edge-4")
        await kube.core.delete_node("edge-4")

        async def node_gone() -> bool:
            nodes = await kube.core.list_node()
            return "edge-4" not in {node.metadata.name for node in nodes.items}

        await wait_for(node_gone, timeout=30, what="Node edge-4 deleted")
        await set_image(kube, namespace, NAME, NEW)

        after = await running_on(kube, namespace, NEW, remaining, timeout=ROLLOUT_TIMEOUT)
        orphan = [p.metadata.uid for p in by_node(await kube.pods(namespace, SELECTOR))["edge-4"]]
        assert orphan == [before["edge-4"].metadata.uid], (
            "edge-4's pod is still there (the garbage collector waits 40 s for a missing node): "
            "the rollout did not wait for it"
        )
        assert not {p.metadata.uid for p in before.values()} & {
            p.metadata.uid for p in after.values()
        }

        async def only_remaining_nodes_deleted() -> bool:
            deleted = [
                deleted_pod_and_node(e)
                for e in await events(kube, namespace, reason="SuccessfulDelete")
            ]
            return sorted(deleted) == sorted(
                (before[node].metadata.name, node) for node in remaining
            )

        await wait_for(
            only_remaining_nodes_deleted,
            timeout=10,
            what="one SuccessfulDelete for each of edge-1..edge-3",
        )
        await hold_for(
            only_remaining_nodes_deleted,
            seconds=5,
            what="one SuccessfulDelete for each of edge-1..edge-3 and none naming edge-4",
        )
    finally:
        await restore_node(kube, "edge-4")
