"""The agent process: the node's pod cache and the OTA API, until SIGTERM."""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import logging
import signal
from pathlib import Path

from aiohttp import web

from edgerollout.agent.node_pods import NodePods
from edgerollout.agent.scoping import NodeScoping, ScopingProbe
from edgerollout.agent.server import Agent
from edgerollout.kube.api import KubeApi
from edgerollout.logfields import LogFields
from edgerollout.settings import AgentSettings

log = logging.getLogger("edgerollout.agent")


def read_token(path: Path) -> str:
    """The bearer token callers must present; a missing or empty file stops the agent."""
    try:
        token = path.read_text().strip()
    except OSError as error:
        raise ValueError(
            f"cannot read the token file {path} ({error.strerror}); the install's init container "
            "writes it (`edgerollout init-agent-token`), or run with --auth=none to serve "
            "without a token"
        ) from None
    if not token:
        raise ValueError(f"the token file {path} is empty; expected a token on its first line")
    return token


def is_loopback(host: str) -> bool:
    """Whether `host` (a name or an IP address) is this machine's loopback."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def caller_token(settings: AgentSettings) -> str | None:
    """The token callers must present, or None with --auth=none, which serves loopback only
    (design §8.3): without a token, an agent reachable from the network would let anyone who
    reaches it upgrade the node's pods. Serving beyond loopback with a token is said in a
    Warning, since every host that reaches the address can then try it."""
    fields = LogFields(node=settings.node_name, address=str(settings.listen))
    loopback = is_loopback(settings.listen.host)
    if settings.auth == "none":
        if not loopback:
            raise ValueError(
                f"--auth=none with --listen={settings.listen}: without a token the agent serves "
                f"on loopback only (127.0.0.1:{settings.listen.port} or "
                f"[::1]:{settings.listen.port}), or anyone who reaches {settings.listen.host} "
                "could upgrade this node's pods"
            )
        log.warning(
            "authentication is off (--auth=none): any process on this node may upgrade its pods",
            extra=fields,
        )
        return None
    if not loopback:
        log.warning(
            "serving beyond loopback: every host that reaches this address may call the agent, "
            "and each change still needs the token",
            extra=fields,
        )
    return read_token(settings.token_file)


def app_runner(agent: Agent, settings: AgentSettings) -> web.AppRunner:
    """The agent's app as served: an idle connection is closed after `keepalive_timeout`."""
    return web.AppRunner(agent.app(), access_log=None, keepalive_timeout=settings.keepalive_timeout)


async def run_agent(settings: AgentSettings) -> None:
    token = caller_token(settings)
    api = await KubeApi.connect(settings.kubeconfig)
    pods = NodePods(
        api, node_name=settings.node_name, cache_dir=settings.cache_dir, settings=settings
    )
    scoping = NodeScoping()
    probe = ScopingProbe(api, scoping, node_name=settings.node_name)
    agent = Agent(settings, api, pods, scoping, token=token, probe=probe)
    runner = app_runner(agent, settings)
    await runner.setup()
    site = web.TCPSite(runner, settings.listen.host, settings.listen.port)
    await site.start()
    log.info(
        "agent listening", extra=LogFields(node=settings.node_name, address=str(settings.listen))
    )
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    cache = asyncio.create_task(pods.run(), name="pod-cache")
    checks = asyncio.create_task(
        probe.run(
            pods,
            interval=settings.scoping_check_interval,
            retry=settings.scoping_retry_without_verdict,
        ),
        name="scoping-probe",
    )
    try:
        await stop.wait()
    finally:
        for task in (checks, cache):
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        await runner.cleanup()
        await api.close()
        log.info(
            "agent stopped", extra=LogFields(node=settings.node_name, address=str(settings.listen))
        )
