"""The agent process: the node's pod cache and the OTA API, until SIGTERM."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
from dataclasses import dataclass
from pathlib import Path

from aiohttp import web

from edgerollout.agent.node_pods import NodePods
from edgerollout.agent.server import Agent, AgentConfig
from edgerollout.kube.api import KubeApi

log = logging.getLogger("edgerollout.agent")


@dataclass(frozen=True, slots=True)
class AgentOptions:
    node_name: str
    kubeconfig: str | None = None
    listen: str = "127.0.0.1:10267"
    token_file: Path | None = None
    cache_dir: Path | None = None
    cloud_timeout: float = 2.0


def read_token(path: Path) -> str:
    token = path.read_text().strip()
    if not token:
        raise ValueError(f"the token file {path} is empty")
    return token


async def run_agent(options: AgentOptions) -> None:
    api = await KubeApi.connect(options.kubeconfig)
    pods = NodePods(api, node_name=options.node_name, cache_dir=options.cache_dir)
    token = read_token(options.token_file) if options.token_file else None
    agent = Agent(
        AgentConfig(node_name=options.node_name, token=token, cloud_timeout=options.cloud_timeout),
        api,
        pods,
    )
    runner = web.AppRunner(agent.app(), access_log=None)
    await runner.setup()
    host, _, port = options.listen.rpartition(":")
    site = web.TCPSite(runner, host or "127.0.0.1", int(port))
    await site.start()
    log.info("agent for node %s listening on %s", options.node_name, options.listen)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    cache = asyncio.create_task(pods.run(), name="pod-cache")
    try:
        await stop.wait()
    finally:
        cache.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await cache
        await runner.cleanup()
        await api.close()
        log.info("agent stopped")
