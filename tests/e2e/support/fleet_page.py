"""A fleet of any size for the dashboard's page, without a lab: the dashboard's own server over
the unit tests' fake API, holding one AdvancedRollingUpdate of N nodes in ten node pools, two of
them cut off. What the browser draws of it is what it would draw of a cluster's: the same
readings, documents and page; only the objects are made here rather than by kubelets.

`python -m tests.e2e.support.fleet_page --nodes 1000 --screenshot FILE` draws it in headless
Chromium and writes a screenshot, a look at the page in seconds; the README's is of a real
rollout on a lab (`./dev lab screenshot`, `edgerollout_lab.screenshot`).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import click
from aiohttp import web

from edgerollout.cli.dashboard.fleet import Fleet
from edgerollout.cli.dashboard.guard import Gate
from edgerollout.cli.dashboard.server import Dashboard
from edgerollout.domain.vocabulary import NODEPOOL_LABEL
from edgerollout.kube.api import DAEMONSETS, NODES, PODS
from edgerollout_lab import browser
from edgerollout_lab.control_plane import free_port
from tests.e2e.support.lab import wait_for
from tests.unit.cli.list_cluster import ClosingApi, put_daemonset
from tests.unit.kube.objects import ADVANCED, MAX_UNAVAILABLE, NEW, OLD, node_json, pod_json

NAME = "shop-agent"
KEY = f"default/{NAME}"
# The DaemonSet's UID as `list_cluster.put_daemonset` makes it: its pods' owner.
UID = f"uid-default-{NAME}"
POOLS = 10
CUT_POOLS = frozenset({"shops-03", "shops-07"})
TOKEN = "fleet-page"


def fleet_api(nodes: int) -> ClosingApi:
    """A third of the nodes updated, the rest outdated; every node of CUT_POOLS NotReady."""
    api = ClosingApi()
    pods = {}
    for number in range(nodes):
        name = f"shop-{number:05d}"
        pool = f"shops-{number % POOLS:02d}"
        node = node_json(name, ready="Unknown" if pool in CUT_POOLS else "True")
        node["metadata"].setdefault("labels", {})[NODEPOOL_LABEL] = pool
        api.put(NODES, node)
        pods[name] = NEW if number % 3 == 0 else OLD
    put_daemonset(api, NAME, {**ADVANCED, MAX_UNAVAILABLE: "5%"}, pods)
    return api


@dataclass(frozen=True, slots=True)
class FleetPage:
    """The URL of the fleet's rollout page, and the fake API its dashboard reads."""

    url: str
    api: ClosingApi
    nodes: int

    def replace_pod(self, node: str, revision: str) -> None:
        """The DaemonSet's pod on `node` replaced by one of `revision`, as the watches see it."""
        pod = pod_json(f"{NAME}-{node}", node=node, revision_hash=revision, owner_uid=UID, app=NAME)
        pod["metadata"]["namespace"] = "default"
        self.api.publish(PODS, "MODIFIED", pod)

    def remove_pod(self, node: str) -> None:
        """The DaemonSet's pod on `node` deleted and not replaced, with the native controller
        counting every node (`desiredNumberScheduled`), as the watches see it."""
        daemonset = self.api.stored(DAEMONSETS, NAME, namespace="default")
        assert daemonset is not None
        daemonset["status"]["desiredNumberScheduled"] = self.nodes
        self.api.publish(DAEMONSETS, "MODIFIED", daemonset)
        pod = self.api.stored(PODS, f"{NAME}-{node}", namespace="default")
        assert pod is not None
        self.api.publish(PODS, "DELETED", pod)


@contextlib.asynccontextmanager
async def fleet_page(nodes: int) -> AsyncIterator[FleetPage]:
    """The dashboard serving the fleet, once it has read it."""
    api = fleet_api(nodes)
    fleet = Fleet(api, namespace="default")
    read = fleet.subscribe(KEY)
    watching = asyncio.create_task(fleet.run())
    runner = web.AppRunner(
        Dashboard(fleet, gate=Gate.for_address(token=TOKEN, host="127.0.0.1")).app()
    )
    await runner.setup()
    port = free_port()
    try:
        await web.TCPSite(runner, "127.0.0.1", port).start()
        while fleet.reading(KEY) is None:
            await read.woken.wait()
            read.take()
        fleet.unsubscribe(read)
        url = f"http://127.0.0.1:{port}/?token={TOKEN}#/rollouts/default/{NAME}"
        yield FleetPage(url, api, nodes)
    finally:
        watching.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await watching
        await runner.cleanup()


async def drawn(page: browser.Page, *, timeout: float = 30) -> None:
    """Wait until the page has drawn its grid."""

    async def grid() -> bool | None:
        return await page.evaluate("window.edgerolloutDashboard?.cells() != null") or None

    await wait_for(grid, timeout=timeout, what="the grid drawn", interval=0.02)


async def _screenshot(nodes: int, path: Path) -> None:
    async with fleet_page(nodes) as fleet, browser.headless_page(width=1280, height=1000) as page:
        await page.navigate(fleet.url)
        await drawn(page)
        await asyncio.sleep(1)  # the plan table, fetched after the first drawing
        await page.screenshot(path, full_page=False)


@click.command()
@click.option("--nodes", type=int, default=1000, show_default=True)
@click.option("--screenshot", type=click.Path(dir_okay=False, path_type=Path), required=True)
def main(nodes: int, screenshot: Path) -> None:
    """Draw a fleet of NODES nodes in headless Chromium and save a screenshot of its page."""
    browser.ensure_installed(lambda message: click.echo(message, err=True))
    asyncio.run(_screenshot(nodes, screenshot))


if __name__ == "__main__":
    main()
