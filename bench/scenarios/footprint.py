"""Scenario 5: the controller's memory and start-up CPU with 1,000, 5,000 and 10,000 nodes' pods in
its caches.

A KWOK lab of 10,000 heartbeating nodes does not fit this kind of machine beside everything else,
and the controller's caches do not need a kubelet: they hold what the API server says. So the lab
runs one KWOK node, and the measured nodes are plain Node objects that nobody heartbeats (the node
lifecycle controller marks them Unknown and taints them). A DaemonSet that tolerates every taint
gets one pod bound to each of them, Pending for ever because no kubelet runs it — one pod per node
in the controller's cache, with nodes it must skip as NotReady, exactly what it would hold for such
a cluster. After each size a fresh controller is started: its RSS once its caches have listed, and
the CPU seconds it spent to get there.
"""

from __future__ import annotations

import asyncio
from typing import Any

from bench import workload
from bench.session import Session
from bench.watch import JSON, ObjectWatch, bound_live
from edgerollout.kube.api import NODES, PODS, ApiError

NAME = "footprint"
TARGET_MB_AT_10K = 150.0
PARALLEL = 48
SETTLE_SECONDS = 3.0


def static_node(index: int) -> JSON:
    name = f"static-{index:05d}"
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "status": {
            "allocatable": {"cpu": "32", "memory": "256Gi", "pods": "110"},
            "capacity": {"cpu": "32", "memory": "256Gi", "pods": "110"},
        },
    }


async def create_nodes(session: Session, first: int, last: int) -> None:
    gate = asyncio.Semaphore(PARALLEL)

    async def create(index: int) -> None:
        async with gate:
            try:
                await session.api.create(NODES, static_node(index))
            except ApiError as error:
                if not error.conflict:
                    raise

    await asyncio.gather(*(create(index) for index in range(first, last + 1)))


async def run(session: Session, *, sizes: list[int], timeout: float) -> dict[str, Any]:
    namespace = workload.FOOTPRINT_NAMESPACE
    await workload.create_namespace(session.api, namespace)
    await workload.create(
        session.api,
        namespace,
        workload.on_every_node(NAME),
    )
    kwok_nodes = len(session.node_names)
    watch = ObjectWatch(session.api, PODS, namespace=namespace)
    await watch.start()
    bound = watch.track(bound_live)
    points: list[dict[str, Any]] = []
    created = 0
    try:
        for size in sorted(sizes):
            session.say(f"footprint: {size} nodes' pods")
            await create_nodes(session, created + 1, size)
            created = size
            await bound.reach(
                size + kwok_nodes, timeout=timeout, what=f"footprint pods bound ({size} nodes)"
            )
            controller = await session.controller(namespace=namespace, name=f"controller-{size}")
            await asyncio.sleep(SETTLE_SECONDS)
            points.append(
                {
                    "nodes": size + kwok_nodes,
                    "pods": size + kwok_nodes,
                    "rss_mb": controller.rss_mb(),
                    "startup_cpu_seconds": round(controller.cpu_seconds(), 2),
                    "ready_seconds": round(controller.ready_seconds, 2),
                }
            )
            session.say(f"footprint: {points[-1]}")
            session.stop_controllers()
    finally:
        await watch.stop()
    largest = points[-1] if points else None
    return {
        "method": "static Node objects without heartbeats, one bound Pending pod each",
        "points": points,
        "target_rss_mb_at_10000": TARGET_MB_AT_10K,
        "largest": largest,
    }
