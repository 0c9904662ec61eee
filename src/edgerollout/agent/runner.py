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
from edgerollout.logfields import LogFields
from edgerollout.settings import AGENT, AgentSettings

log = logging.getLogger("edgerollout.agent")


@dataclass(frozen=True, slots=True, kw_only=True)
class AgentOptions:
    """One run of the agent: its node, where the cluster is, its credentials and its settings."""

    node_name: str
    kubeconfig: str | None = None
    token_file: Path | None = None
    cache_dir: Path | None = None
    settings: AgentSettings = AGENT


def read_token(path: Path) -> str:
    token = path.read_text().strip()
    if not token:
        raise ValueError(f"the token file {path} is empty")
    return token


async def run_agent(options: AgentOptions) -> None:
    api = await KubeApi.connect(options.kubeconfig)
    settings = options.settings
    pods = NodePods(
        api, node_name=options.node_name, cache_dir=options.cache_dir, settings=settings
    )
    token = read_token(options.token_file) if options.token_file else None
    agent = Agent(
        AgentConfig(node_name=options.node_name, token=token, cloud_timeout=settings.cloud_timeout),
        api,
        pods,
    )
    runner = web.AppRunner(agent.app(), access_log=None)
    await runner.setup()
    host, _, port = settings.listen.rpartition(":")
    site = web.TCPSite(runner, host or "127.0.0.1", int(port))
    await site.start()
    log.info("agent listening", extra=LogFields(node=options.node_name, address=settings.listen))
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
