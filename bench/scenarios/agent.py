"""Scenario 6: the node agent — `GET /pods` latency under a steady request rate with a full node
(110 pods), and the time from an `upgrade` request to the pod's deletion.

The load is open-loop: request i is sent at start + i/rate whether or not earlier ones have been
answered, so a slow answer cannot hide by slowing the sender down. Latency is measured from the
moment each request is sent to the moment its whole body has arrived; the sender runs on the same
machine, so its own CPU is in the numbers too.
"""

from __future__ import annotations

import asyncio
import statistics
import time
from typing import Any

import aiohttp

from bench import workload
from bench.controller import Controller
from bench.machine import load_now
from bench.rollout import wait_running
from bench.session import Session
from bench.watch import JSON, ObjectWatch, condition_true, live
from edgerollout.domain.vocabulary import POD_NEED_UPGRADE
from edgerollout.kube.api import PODS

NAME = "ota-agent"
PODS_ON_NODE = 110
RATE = 200.0
TARGET_P99_MS = 10.0


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(share * len(ordered)) - 1))
    return ordered[index]


def bare_pod(index: int, node: str) -> JSON:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"filler-{index:03d}", "labels": {"app": "filler"}},
        "spec": {"nodeName": node, "containers": [{"name": "app", "image": workload.IMAGES[0]}]},
    }


async def _fill_node(session: Session, node: str) -> int:
    """Pods bound to `node` until it holds PODS_ON_NODE; returns how many it holds."""
    namespace = workload.AGENT_NAMESPACE
    page = await session.api.list(PODS, field_selector=f"spec.nodeName={node}")
    missing = PODS_ON_NODE - len(page.items)
    await asyncio.gather(
        *(
            session.api.create(PODS, bare_pod(index, node), namespace=namespace)
            for index in range(missing)
        )
    )
    return len(page.items) + max(missing, 0)


async def _load(
    url: str, headers: dict[str, str], *, rate: float, seconds: float
) -> dict[str, Any]:
    latencies: list[float] = []
    codes: dict[str, int] = {}
    sizes: list[int] = []
    total = round(rate * seconds)
    connector = aiohttp.TCPConnector(limit=200)
    async with aiohttp.ClientSession(connector=connector, headers=headers) as http:

        async def one() -> None:
            sent = time.perf_counter()
            async with http.get(f"{url}/pods") as response:
                body = await response.read()
            latencies.append(time.perf_counter() - sent)
            codes[str(response.status)] = codes.get(str(response.status), 0) + 1
            sizes.append(len(body))

        start = time.perf_counter()
        tasks = []
        for index in range(total):
            delay = start + index / rate - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            tasks.append(asyncio.create_task(one()))
        await asyncio.gather(*tasks)
        elapsed = time.perf_counter() - start
    millis = [value * 1000 for value in latencies]
    return {
        "requests": total,
        "rate_per_second": rate,
        "achieved_rate_per_second": round(total / elapsed, 1),
        "codes": codes,
        "body_bytes": int(statistics.median(sizes)) if sizes else 0,
        "p50_ms": round(percentile(millis, 0.50), 2),
        "p90_ms": round(percentile(millis, 0.90), 2),
        "p99_ms": round(percentile(millis, 0.99), 2),
        "max_ms": round(max(millis), 2),
        "latencies_ms": [round(value, 2) for value in millis[:: max(1, len(millis) // 2000)]],
    }


async def _pod_count(url: str, headers: dict[str, str]) -> int:
    async with (
        aiohttp.ClientSession(headers=headers) as http,
        http.get(f"{url}/pods") as response,
    ):
        return len((await response.json())["items"])


async def _upgrade_once(
    session: Session, url: str, headers: dict[str, str], image: str, *, timeout: float
) -> dict[str, float]:
    namespace = workload.AGENT_NAMESPACE
    watch = ObjectWatch(session.api, PODS, namespace=namespace)
    await watch.start()
    try:
        marked = watch.track(
            lambda pod: (
                pod["metadata"]["name"]
                if pod["metadata"].get("labels", {}).get("app") == NAME
                and condition_true(POD_NEED_UPGRADE)(pod)
                else None
            )
        )
        await workload.set_image(session.api, namespace, NAME, image)
        await marked.reach(1, timeout=timeout, what="the agent's pod marked PodNeedUpgrade=True")
        pod = next(
            p
            for p in watch.objects.values()
            if p["metadata"].get("labels", {}).get("app") == NAME and live(p)
        )
        name = pod["metadata"]["name"]
        gone = watch.track(
            lambda p: p["metadata"]["name"] if p["metadata"]["name"] == name and live(p) else None
        )
        start = time.monotonic()
        async with (
            aiohttp.ClientSession(headers=headers) as http,
            http.post(f"{url}/openyurt.io/v1/namespaces/{namespace}/pods/{name}/upgrade") as answer,
        ):
            await answer.read()
            answered = time.monotonic()
            if answer.status != 200:
                raise RuntimeError(f"upgrade of {name} answered {answer.status}")
        deleted = await gone.fall(0, after=start, timeout=timeout, what=f"{name} deleted")
        result = {
            "answer_ms": round((answered - start) * 1000, 2),
            "deletion_seen_ms": round((deleted - start) * 1000, 2),
        }
    finally:
        await watch.stop()
    await wait_running(session, namespace, image, 1, timeout=timeout)
    return result


async def run(
    session: Session, controller: Controller, *, seconds: float, upgrades: int, timeout: float
) -> dict[str, Any]:
    del controller  # it only has to run: it marks PodNeedUpgrade
    node = session.lab.nodes[0]
    url = node.agent_url
    if url is None:
        raise RuntimeError("the agent scenario needs a lab started with agents")
    headers = {"Authorization": f"Bearer {node.agent_token}"}
    namespace = workload.AGENT_NAMESPACE
    await workload.create_namespace(session.api, namespace)
    await workload.create(session.api, namespace, workload.ota(NAME, image=workload.image(0)))
    await wait_running(session, namespace, workload.image(0), 1, timeout=timeout)
    on_node = await _fill_node(session, node.name)
    deadline = time.monotonic() + timeout
    served = await _pod_count(url, headers)
    while served != on_node and time.monotonic() < deadline:
        await asyncio.sleep(0.2)
        served = await _pod_count(url, headers)
    session.say(f"agent: GET /pods with {served} pods at {RATE:.0f}/s for {seconds:.0f} s")
    load = load_now()
    latency = await _load(url, headers, rate=RATE, seconds=seconds)
    session.say(f"agent: p50 {latency['p50_ms']} ms, p99 {latency['p99_ms']} ms")
    attempts = [
        await _upgrade_once(session, url, headers, workload.image(version), timeout=timeout)
        for version in range(1, upgrades + 1)
    ]
    return {
        "node": node.name,
        "pods_on_node": on_node,
        "pods_served": served,
        "load_average_1m": load,
        "get_pods": latency,
        "target_p99_ms": TARGET_P99_MS,
        "upgrade": {
            "attempts": attempts,
            "median_deletion_seen_ms": round(
                statistics.median(a["deletion_seen_ms"] for a in attempts), 2
            ),
        },
    }
