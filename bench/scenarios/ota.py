"""Scenario 4: OTA on every node — from the image change until every pod carries
`PodNeedUpgrade=True`, and how many API writes that took per pod (every write: the pods'
conditions, and the DaemonSet's rollout condition once its phase changes); with `--peer openyurt`, the same
for OpenYurt's yurt-manager on a DaemonSet of its own, running only for that measurement."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from bench import metrics, peer, workload
from bench.api_load import controller_requests
from bench.controller import Controller
from bench.machine import load_now
from bench.rollout import thin, wait_running
from bench.session import Session
from bench.watch import JSON, ObjectWatch, condition_true, live
from edgerollout.domain.vocabulary import POD_NEED_UPGRADE
from edgerollout.kube.api import PODS
from edgerollout.kube.views import namespaced_name, pod_condition

NAME = "ota"
TARGET_SECONDS = 10.0


def _carries_condition(pod: JSON) -> str | None:
    if live(pod) and pod_condition(pod, POD_NEED_UPGRADE) is not None:
        return namespaced_name(pod)[1]
    return None


async def run(
    session: Session, controller: Controller, *, nodes: int, timeout: float
) -> dict[str, Any]:
    session.say(f"ota: {nodes} pods")
    return await _measured(session, controller, workload.OURS_NAMESPACE, nodes, timeout)


async def run_peer(session: Session, *, nodes: int, timeout: float) -> dict[str, Any]:
    """The peer's OTA: yurt-manager is started before the DaemonSet is created, since it marks
    pods only on the DaemonSet's updates (its status, as the pods come up), never on its creation."""
    session.say(f"ota: OpenYurt, {nodes} pods")
    async with peer.running(session) as handle:
        result = await _measured(session, handle, peer.NAMESPACE, nodes, timeout)
    result["peer_ready_seconds"] = round(handle.ready_seconds, 2)
    return result


async def _measured(
    session: Session, controller: Controller, namespace: str, nodes: int, timeout: float
) -> dict[str, Any]:
    first, second = workload.IMAGES[0], workload.IMAGES[1]
    await workload.create(session.api, namespace, workload.ota(NAME, image=first))
    await wait_running(session, namespace, first, nodes, timeout=timeout)
    watch = ObjectWatch(session.api, PODS, namespace=namespace)
    await watch.start()
    try:
        marked = watch.track(_carries_condition)
        # The controller first writes PodNeedUpgrade=False on every pod of a new OTA DaemonSet.
        await marked.reach(nodes, timeout=timeout, what="pods with PodNeedUpgrade=False")
        await asyncio.sleep(2)
        before = controller.samples()
        need = watch.track(condition_true(POD_NEED_UPGRADE))
        load = load_now()
        start = time.monotonic()
        await workload.set_image(session.api, namespace, NAME, second)
        done = await need.reach(nodes, timeout=timeout, what="pods with PodNeedUpgrade=True")
        seconds = round(done - start, 3)
        await asyncio.sleep(2)  # writes still under way would show here
        requests = controller_requests(metrics.delta(controller.samples(), before))
        curve = need.since(start)
    finally:
        await watch.stop()
    await workload.delete_and_wait(session.api, namespace, NAME, timeout=timeout)
    writes = sum(n for method, n in requests["by_method"].items() if method != "GET")
    session.say(f"ota: {namespace}: every pod marked in {seconds:.1f} s, {writes} writes")
    return {
        "nodes": nodes,
        "seconds": seconds,
        "target_seconds": TARGET_SECONDS,
        "load_average_1m": load,
        "controller": requests,
        "writes": writes,
        "writes_per_pod": round(writes / nodes, 4),
        "target_writes_per_pod": 1,
        "curve": thin(curve),
    }
