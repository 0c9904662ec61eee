"""Scenario 9: `edgerollout dashboard`'s page of a 10,000-node rollout, side by side with
`edgerollout status` of the same rollout.

As in the memory scenario (5), the lab runs one KWOK node and the measured nodes are plain Node
objects, here created Ready (a fleet lab's grace period keeps them so for an hour) and spread over
ten node pools; a DaemonSet that tolerates every taint gets one pod bound to each, Pending for
ever, and a new image makes every one of them outdated. No controller runs: the page and the
command read the same objects, and nothing changes them but this scenario.

Measured, in this order:
- `status`: `edgerollout status NAME` (its table of every pod), run as an operator runs it, from
  start to exit: the reference, best of `LOADS`;
- the page's first drawing: from navigation start to the grid drawn, its document received,
  parsed and drawn (`window.edgerolloutDashboard.timing()`), best of `LOADS` fresh loads once the
  server has read the rollout. Each page is left until its plan table has come (the plan of
  10,000 nodes, made on the page's request after its first drawing, holds the server's event
  loop for a while), so that a load does not wait for the one before;
- an update's redraw: a pool's 1,000 nodes marked NotReady in `BATCHES` batches `BATCH_SECONDS`
  apart, which the page receives as at most a document a second, each parsed and drawn in the
  same tab: the median and the slowest;
- the dashboard server's RSS, sampled throughout, its largest.
"""

from __future__ import annotations

import asyncio
import contextlib
import statistics
import sys
import time
from datetime import UTC, datetime
from typing import Any

import psutil

from bench import workload
from bench.scenarios.footprint import PARALLEL
from bench.session import Session
from bench.watch import JSON, ObjectWatch, bound_live
from edgerollout.domain.vocabulary import (
    NODEPOOL_LABEL,
)
from edgerollout.kube.api import NODES, PODS, ApiError
from edgerollout_lab import browser
from edgerollout_lab.screenshot import running_dashboard

NAME = "dashboard"
POOLS = 10
LOADS = 3
# The pool whose nodes go NotReady: the update the page redraws.
CUT_POOL = "shops-07"
BATCHES = 10
BATCH_SECONDS = 2.0
UPDATE_SECONDS = 5.0  # documents still arriving after the last node is marked
SAMPLE_SECONDS = 0.1
DRAW_TIMEOUT = 120.0


def pool_of(index: int) -> str:
    return f"shops-{index % POOLS:02d}"


def node_name(index: int) -> str:
    return f"shop-{index:05d}"


def ready_condition(status: str, *, now: str) -> JSON:
    return {
        "type": "Ready",
        "status": status,
        "reason": "KubeletReady" if status == "True" else "KubeletNotReady",
        "lastHeartbeatTime": now,
        "lastTransitionTime": now,
    }


def static_node(index: int, *, now: str) -> JSON:
    name = node_name(index)
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {"kubernetes.io/hostname": name, NODEPOOL_LABEL: pool_of(index)},
        },
        "status": {
            "allocatable": {"cpu": "32", "memory": "256Gi", "pods": "110"},
            "capacity": {"cpu": "32", "memory": "256Gi", "pods": "110"},
            "conditions": [ready_condition("True", now=now)],
        },
    }


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


async def _each(calls: list[Any]) -> None:
    gate = asyncio.Semaphore(PARALLEL)

    async def one(call: Any) -> None:
        async with gate:
            await call

    await asyncio.gather(*(one(call) for call in calls))


async def _create_nodes(session: Session, nodes: int) -> None:
    now = _now()

    async def create(index: int) -> None:
        try:
            await session.api.create(NODES, static_node(index, now=now))
        except ApiError as error:
            if not error.conflict:
                raise

    await _each([create(index) for index in range(nodes)])


async def _mark_not_ready(session: Session, names: list[str]) -> None:
    """`names` marked NotReady, in BATCHES batches BATCH_SECONDS apart."""
    size = -(-len(names) // BATCHES)
    for start in range(0, len(names), size):
        patch = {"status": {"conditions": [ready_condition("False", now=_now())]}}
        batch = names[start : start + size]
        await _each([session.api.patch(NODES, name, patch, subresource="status") for name in batch])
        await asyncio.sleep(BATCH_SECONDS)


async def _timed_status(session: Session, namespace: str) -> float:
    started = time.monotonic()
    process = await asyncio.create_subprocess_exec(
        *(sys.executable, "-m", "edgerollout", "status", NAME, "-n", namespace),
        *("--kubeconfig", str(session.lab.kubeconfig)),
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.DEVNULL,
    )
    code = await process.wait()
    seconds = time.monotonic() - started
    if code not in (0, 1):  # 1: the rollout is not complete, the table printed all the same
        raise RuntimeError(f"edgerollout status ended with {code}")
    return seconds


class RssSampler:
    """The largest RSS of a process, sampled every SAMPLE_SECONDS while running."""

    def __init__(self, pid: int) -> None:
        self.process = psutil.Process(pid)
        self.largest_mb = 0.0
        self._task: asyncio.Task[None] | None = None

    async def _sample(self) -> None:
        while True:
            self.largest_mb = max(self.largest_mb, self.process.memory_info().rss / 2**20)
            await asyncio.sleep(SAMPLE_SECONDS)

    def start(self) -> None:
        self._task = asyncio.create_task(self._sample())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task


async def _first_drawing(page: browser.Page, url: str, nodes: int) -> dict[str, float]:
    """Navigate to `url` afresh and wait for its grid of `nodes` cells; the page's timing, ms
    since navigation start."""
    await page.navigate("about:blank")
    await page.navigate(url)
    deadline = time.monotonic() + DRAW_TIMEOUT
    count = "Object.keys(window.edgerolloutDashboard?.cells() ?? {}).length"
    while await page.evaluate(count) < nodes:
        if time.monotonic() > deadline:
            raise TimeoutError(f"the page did not draw {nodes} cells in {DRAW_TIMEOUT:.0f} s")
        await asyncio.sleep(0.05)
    timing: dict[str, float] = await page.evaluate("window.edgerolloutDashboard.timing()")
    planned = "document.querySelector('#plan-summary').textContent !== ''"
    while not await page.evaluate(planned):
        if time.monotonic() > deadline:
            raise TimeoutError(f"the page's plan table did not come in {DRAW_TIMEOUT:.0f} s")
        await asyncio.sleep(0.1)
    return timing


async def _redraws(page: browser.Page, until: asyncio.Task[None]) -> list[float]:
    """The parse and draw time (ms) of each document the page receives until `until` is done
    and UPDATE_SECONDS more have passed."""
    seen = (await page.evaluate("window.edgerolloutDashboard.timing()"))["documents"]
    times: list[float] = []
    quiet_from: float | None = None
    while quiet_from is None or time.monotonic() - quiet_from < UPDATE_SECONDS:
        if quiet_from is None and until.done():
            quiet_from = time.monotonic()
        timing = await page.evaluate("window.edgerolloutDashboard.timing()")
        if timing["documents"] > seen:
            seen = timing["documents"]
            times.append(timing["parsedMs"] + timing["drawnMs"])
        await asyncio.sleep(SAMPLE_SECONDS)
    await until
    return times


async def run(session: Session, *, nodes: int, timeout: float) -> dict[str, Any]:
    namespace = workload.DASHBOARD_NAMESPACE
    session.say(f"dashboard: {nodes} nodes in {POOLS} pools, one pod each")
    await workload.create_namespace(session.api, namespace)
    await _create_nodes(session, nodes)
    await workload.create(
        session.api,
        namespace,
        workload.on_every_node(NAME),
    )
    watch = ObjectWatch(session.api, PODS, namespace=namespace)
    await watch.start()
    try:
        bound = watch.track(bound_live)
        kwok_nodes = len(session.node_names)
        await bound.reach(nodes + kwok_nodes, timeout=timeout, what="the dashboard's pods bound")
    finally:
        await watch.stop()
    await workload.set_image(session.api, namespace, NAME, workload.IMAGES[1])
    await asyncio.sleep(3)  # the new ControllerRevision

    session.say("dashboard: edgerollout status, the reference")
    status_runs = [await _timed_status(session, namespace) for _ in range(LOADS)]

    url_of = f"#/rollouts/{namespace}/{NAME}"
    cut = [node_name(index) for index in range(nodes) if pool_of(index) == CUT_POOL]
    async with running_dashboard(session.lab.kubeconfig, namespace) as (url, pid):
        rss = RssSampler(pid)
        rss.start()
        try:
            async with browser.headless_page() as page:
                session.say("dashboard: the page's first drawing")
                await _first_drawing(page, url + url_of, nodes + kwok_nodes)  # the server reads
                loads = [
                    await _first_drawing(page, url + url_of, nodes + kwok_nodes)
                    for _ in range(LOADS)
                ]
                session.say(f"dashboard: {len(cut)} nodes of {CUT_POOL} marked NotReady")
                marking = asyncio.create_task(_mark_not_ready(session, cut))
                redraws = await _redraws(page, marking)
                legend = await page.evaluate(
                    "[...document.querySelectorAll('#legend li')].map((item) => item.textContent)"
                )
        finally:
            await rss.stop()

    drawn = [load["receivedAt"] + load["parsedMs"] + load["drawnMs"] for load in loads]
    first_s = min(drawn) / 1000
    status_s = min(status_runs)
    redraw_median_s = statistics.median(redraws) / 1000 if redraws else None
    redraw_slowest_s = max(redraws) / 1000 if redraws else None
    return {
        "method": (
            "static Ready Node objects in 10 pools, one bound Pending pod each, all outdated; "
            "no controller; one pool then marked NotReady"
        ),
        "nodes": nodes + kwok_nodes,
        "status_seconds": [round(seconds, 3) for seconds in status_runs],
        "status_best_seconds": round(status_s, 3),
        "page_loads": [
            {key: round(value, 1) for key, value in load.items() if key != "documents"}
            for load in loads
        ],
        "page_first_drawing_seconds": [round(ms / 1000, 3) for ms in drawn],
        "page_first_drawing_best_seconds": round(first_s, 3),
        "redraw_ms": [round(ms, 1) for ms in redraws],
        "redraw_median_seconds": None if redraw_median_s is None else round(redraw_median_s, 4),
        "redraw_slowest_seconds": None if redraw_slowest_s is None else round(redraw_slowest_s, 4),
        "server_rss_mb_largest": round(rss.largest_mb, 1),
        "legend_after_update": legend,
        "first_drawing_to_status": round(first_s / status_s, 3),
        "redraw_median_to_status": None
        if redraw_median_s is None
        else round(redraw_median_s / status_s, 3),
    }
