"""The seed scenario's DaemonSet (seed 001: nginx 1.19.4 -> 1.19.5 on edge nodes) and its checks."""

from __future__ import annotations

from typing import Any

from edgerollout.domain import vocabulary
from edgerollout.domain.vocabulary import CONTROLLER_REVISION_HASH_LABEL
from tests.e2e.support.lab import LabHandle, by_node, daemonset, images, pod_ready, wait_for

OLD, NEW = "nginx:1.19.4", "nginx:1.19.5"
NODES = ["edge-1", "edge-2", "edge-3"]
ON_DELETE = {"type": vocabulary.ON_DELETE}
NAME = "nginx-daemonset"
SELECTOR = f"app={NAME}"


async def running_everywhere(
    kube: LabHandle, namespace: str, image: str, nodes: list[str], *, timeout: float = 60
) -> dict[str, str]:
    """Wait for exactly one Ready, live pod running image on each node; return node -> UID."""

    async def probe() -> dict[str, str] | None:
        grouped = by_node(await kube.pods(namespace, SELECTOR))
        if sorted(grouped) != sorted(nodes) or any(len(p) != 1 for p in grouped.values()):
            return None
        pods = {node: p[0] for node, p in grouped.items()}
        if all(
            pod_ready(p) and images(p) == [image] and p.metadata.deletion_timestamp is None
            for p in pods.values()
        ):
            return {node: pod.metadata.uid for node, pod in pods.items()}
        return None

    return await wait_for(probe, timeout=timeout, what=f"a Ready {image} pod on each of {nodes}")


async def running_on(
    kube: LabHandle, namespace: str, image: str, nodes: list[str], *, timeout: float = 60
) -> dict[str, str]:
    """Wait for exactly one Ready, live pod running image on each of `nodes` (whatever runs on
    the others); node -> UID."""

    async def probe() -> dict[str, str] | None:
        grouped = by_node(await kube.pods(namespace, SELECTOR))
        pods = {node: grouped.get(node, []) for node in nodes}
        if all(
            len(on_node) == 1
            and pod_ready(on_node[0])
            and images(on_node[0]) == [image]
            and on_node[0].metadata.deletion_timestamp is None
            for on_node in pods.values()
        ):
            return {node: on_node[0].metadata.uid for node, on_node in pods.items()}
        return None

    return await wait_for(probe, timeout=timeout, what=f"a Ready {image} pod on each of {nodes}")


async def seed_daemonset(
    kube: LabHandle,
    namespace: str,
    *,
    annotations: dict[str, str] | None = None,
    strategy: dict[str, Any] = ON_DELETE,
    nodes: list[str] = NODES,
) -> dict[str, str]:
    """Create the seed's DaemonSet on OLD with these annotations and update strategy, and wait for
    its Ready pod on each of `nodes`; node -> pod UID."""
    await kube.apps.create_namespaced_daemon_set(
        namespace, daemonset(NAME, image=OLD, strategy=strategy, annotations=annotations)
    )
    return await running_everywhere(kube, namespace, OLD, nodes)


async def newest_revision_hash(kube: LabHandle, namespace: str) -> str:
    """The hash of the namespace's newest ControllerRevision, once the DaemonSet controller has
    seen every DaemonSet there at its current generation: right after a change to a template,
    the revision it makes may not exist yet, and the newest would be the one before."""

    async def observed() -> bool:
        daemonsets = (await kube.apps.list_namespaced_daemon_set(namespace)).items
        return all(
            ds.status is not None and (ds.status.observed_generation or 0) >= ds.metadata.generation
            for ds in daemonsets
        )

    await wait_for(observed, timeout=30, what="the DaemonSet controller to see the change")
    listed = await kube.apps.list_namespaced_controller_revision(namespace)
    newest = max(listed.items, key=lambda revision: revision.revision)
    return str(newest.metadata.labels[CONTROLLER_REVISION_HASH_LABEL])


async def revision_after(kube: LabHandle, namespace: str, first: str) -> str:
    """Wait for a ControllerRevision newer than the one hashed `first`; its hash."""

    async def new_hash() -> str | None:
        revision = await newest_revision_hash(kube, namespace)
        return revision if revision != first else None

    return await wait_for(new_hash, timeout=15, what="a new ControllerRevision")
