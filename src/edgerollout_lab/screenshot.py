"""`python -m edgerollout_lab screenshot` (`./dev lab screenshot`): the README's picture of
`edgerollout dashboard`, taken of a real rollout on a lab of its own.

A fleet lab of `--nodes` nodes (1,000 by default) in `--pools` node pools (OpenYurt's
`apps.openyurt.io/nodepool` label, a node's pool by its number, round robin), one
AdvancedRollingUpdate DaemonSet on all of them, and `edgerollout controller` beside it. Once every
pod runs, the image changes; when `--cut-at` of the nodes are updated, the links of the last
`--cut` pools are cut, and once the rollout stands waiting for those offline nodes (every
connected node updated), `edgerollout dashboard` is started as an operator starts it and its page
is drawn in headless Chromium, the PNG written to `--output`. The lab is stopped and removed at
the end, also on failure. Each step is said on stderr.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import shutil
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

from edgerollout.cli.status_command import read_status
from edgerollout.domain.reporting.rollout_phase import RolloutCounts, RolloutPhase
from edgerollout.domain.vocabulary import (
    ADVANCED_ROLLING_UPDATE,
    MAX_UNAVAILABLE_ANNOTATION,
    NODEPOOL_LABEL,
    ON_DELETE,
    UPDATE_STRATEGY_ANNOTATION,
)
from edgerollout.kube.api import DAEMONSETS, NODES, KubeApi
from edgerollout_lab import browser, cluster
from edgerollout_lab.controller_process import ControllerProcess

Say = Callable[[str], None]
NAME = "shop-agent"
NAMESPACE = "default"
OLD, NEW = "nginx:1.19.4", "nginx:1.19.5"
MAX_UNAVAILABLE = "5%"
# The browser's window: the grid of 1,000 nodes, its legend and the curve fit in it.
WIDTH, HEIGHT = 1280, 1000
STEP_TIMEOUT = 600.0
POLL_SECONDS = 2.0
# How many node patches are in flight at once.
PARALLEL = 32


@dataclass(frozen=True, slots=True, kw_only=True)
class Shot:
    """What to take: the fleet's size, its pools, how many are cut and when, and where to."""

    nodes: int
    pools: int
    cut: int
    cut_at: float
    output: Path

    def pool_of(self, number: int) -> str:
        """The pool of the node `edge-NUMBER` (from 1)."""
        return f"shops-{(number - 1) % self.pools:02d}"

    def cut_pools(self) -> list[str]:
        return [f"shops-{pool:02d}" for pool in range(self.pools - self.cut, self.pools)]


def daemonset() -> dict[str, object]:
    labels = {"app": NAME}
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {
            "name": NAME,
            "annotations": {
                UPDATE_STRATEGY_ANNOTATION: ADVANCED_ROLLING_UPDATE,
                MAX_UNAVAILABLE_ANNOTATION: MAX_UNAVAILABLE,
            },
        },
        "spec": {
            "selector": {"matchLabels": labels},
            "updateStrategy": {"type": ON_DELETE},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "agent", "image": OLD}]},
            },
        },
    }


def take(shot: Shot, say: Say) -> None:
    """Bring a lab up, roll out and cut as the module docstring says, write the screenshot, and
    take the lab down."""
    browser.ensure_installed(say)
    folder = Path(tempfile.mkdtemp(prefix="edgerollout-screenshot-"))
    try:
        say(f"lab: starting {shot.nodes} nodes in {folder}")
        lab = cluster.up(folder, nodes=shot.nodes, say=lambda _: None, fleet=True)
        asyncio.run(_roll_and_shoot(shot, lab, say))
    finally:
        cluster.down(folder, say=lambda _: None)
        shutil.rmtree(folder, ignore_errors=True)


async def _roll_and_shoot(shot: Shot, lab: cluster.Lab, say: Say) -> None:
    api = await KubeApi.connect(str(lab.kubeconfig))
    controller = ControllerProcess.launch(lab.kubeconfig, lab.folder / "logs" / "controller.log")
    try:
        await controller.wait_ready(timeout=120)
        say(f"pools: labelling {shot.nodes} nodes in {shot.pools} pools")
        await _label_pools(api, shot)
        await api.create(DAEMONSETS, daemonset(), namespace=NAMESPACE)
        await _wait(api, "every pod running", _complete)
        say(f"rollout: {OLD} -> {NEW}")
        patch = {"spec": {"template": {"spec": {"containers": [{"name": "agent", "image": NEW}]}}}}
        await api.patch(DAEMONSETS, NAME, patch, namespace=NAMESPACE)
        share = shot.cut_at

        async def far_enough(counts: RolloutCounts, _: RolloutPhase | None) -> bool:
            return counts.updated >= share * counts.total

        await _wait(api, f"{share:.0%} of the nodes updated", far_enough)
        cut = [
            node.name
            for number, node in enumerate(lab.nodes, 1)
            if shot.pool_of(number) in shot.cut_pools()
        ]
        say(f"cut: {', '.join(shot.cut_pools())} ({len(cut)} nodes)")
        await asyncio.to_thread(cluster.disconnect, lab.folder, cut)
        await _wait(api, "every connected node updated", _waiting_for_offline)
        async with running_dashboard(lab.kubeconfig, NAMESPACE) as (url, _):
            await _shoot(url, shot, say)
    finally:
        controller.stop()
        await api.close()


async def _label_pools(api: KubeApi, shot: Shot) -> None:
    limit = asyncio.Semaphore(PARALLEL)

    async def label(number: int) -> None:
        patch = {"metadata": {"labels": {NODEPOOL_LABEL: shot.pool_of(number)}}}
        async with limit:
            await api.patch(NODES, f"edge-{number}", patch)

    await asyncio.gather(*(label(number) for number in range(1, shot.nodes + 1)))


async def _complete(counts: RolloutCounts, phase: RolloutPhase | None) -> bool:
    return phase is RolloutPhase.COMPLETE


async def _waiting_for_offline(counts: RolloutCounts, phase: RolloutPhase | None) -> bool:
    return phase is RolloutPhase.WAITING_FOR_OFFLINE_NODES


async def _wait(
    api: KubeApi,
    what: str,
    reached: Callable[[RolloutCounts, RolloutPhase | None], Awaitable[bool]],
) -> None:
    """Read `status` until `reached` says so; TimeoutError after STEP_TIMEOUT."""
    deadline = time.monotonic() + STEP_TIMEOUT
    while True:
        status = await read_status(api, name=NAME, namespace=NAMESPACE)
        if status.counts is not None and await reached(status.counts, status.phase):
            return
        if time.monotonic() > deadline:
            raise TimeoutError(f"waited {STEP_TIMEOUT:.0f} s for {what}: {status.summary}")
        await asyncio.sleep(POLL_SECONDS)


@contextlib.asynccontextmanager
async def running_dashboard(kubeconfig: Path, namespace: str) -> AsyncIterator[tuple[str, int]]:
    """`edgerollout dashboard --no-browser` of `namespace` as an operator runs it: its URL and
    process id (the screenshot's, and bench scenario 9's)."""
    process = await asyncio.create_subprocess_exec(
        *(sys.executable, "-m", "edgerollout", "dashboard", "-n", namespace, "--no-browser"),
        *("--kubeconfig", str(kubeconfig)),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
    )
    try:
        assert process.stdout is not None
        first = (await asyncio.wait_for(process.stdout.readline(), 60)).decode()
        if not first.startswith("Dashboard: "):
            raise RuntimeError(f"edgerollout dashboard printed {first!r}, not its URL")
        yield first.removeprefix("Dashboard: ").strip(), process.pid
    finally:
        if process.returncode is None:
            process.terminate()
            await asyncio.wait_for(process.wait(), 10)


async def _shoot(url: str, shot: Shot, say: Say) -> None:
    async with browser.headless_page(width=WIDTH, height=HEIGHT) as page:
        await page.navigate(f"{url}#/rollouts/{NAMESPACE}/{NAME}")
        count = "Object.keys(window.edgerolloutDashboard?.cells() ?? {}).length"
        deadline = time.monotonic() + 60
        while await page.evaluate(count) < shot.nodes:
            if time.monotonic() > deadline:
                raise TimeoutError("the dashboard did not draw every node within 60 s")
            await asyncio.sleep(0.2)
        await asyncio.sleep(3)  # the plan table and the Events, read after the first drawing
        legend = await page.evaluate(
            "[...document.querySelectorAll('#legend li')].map((item) => item.textContent)"
        )
        await page.screenshot(shot.output, full_page=False)
    say(f"drawn: {json.dumps(legend)}")
    say(f"wrote {shot.output} ({shot.output.stat().st_size // 1024} KiB)")
