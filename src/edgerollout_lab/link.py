"""Each lab node's own network link to the API server, which the lab can cut and restore.

One process listens on one loopback port per node and relays TCP to the API server. A node's
kubeconfig points at its port, so whatever runs "on" that node (its agent) reaches the cloud only
through this link. Cutting a link closes the node's open connections and resets new ones at once — a
dropped uplink as the client sees it, fast enough for tests to assert on. The lab writes the wanted
state to `links.json` and sends SIGHUP; the process answers by re-reading it.

A real node's pods reach the API server through their node's link as well: the relay listens on
the node's own address at one port shared by all real nodes (`pod_api`), the address a pod finds
as its `status.hostIP`, as a node-local API proxy at the edge (OpenYurt's YurtHub) is reached.

A real node pulls its images through its link too: the relay then also listens on one port per
real node towards the lab's registry (`link-registry-ports.json`), and paces what the registry
sends at the node's rate (`lab link-rate`, bytes per second; none: unlimited), shared by all the
node's pulls, as an edge uplink would. Cutting the link cuts both.

Run as `python -m edgerollout_lab.link DIR`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import resource
import signal
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

LINKS_FILE = "links.json"
PORTS_FILE = "link-ports.json"
REGISTRY_PORTS_FILE = "link-registry-ports.json"
# What one paced write may carry: small enough that a slow rate is smooth, not bursty.
PACED_CHUNK = 16 * 1024


class Pace:
    """A node's downlink rate, shared by its connections: each chunk waits for its turn."""

    def __init__(self, rate: float | None = None) -> None:
        self.rate = rate
        self._free_at = 0.0

    async def take(self, size: int) -> None:
        if not self.rate:
            return
        loop = asyncio.get_running_loop()
        now = loop.time()
        start = max(now, self._free_at)
        self._free_at = start + size / self.rate
        if self._free_at > now:
            await asyncio.sleep(self._free_at - now)


@dataclass
class _Link:
    node: str
    up: bool = True
    connections: set[asyncio.StreamWriter] = field(default_factory=set)
    pace: Pace = field(default_factory=Pace)


def read_wanted(folder: Path) -> tuple[str, int, dict[str, bool]]:
    """The API server address and, per node, whether its link should be up."""
    data = json.loads((folder / LINKS_FILE).read_text())
    return str(data["target_host"]), int(data["target_port"]), dict(data["links"])


def _read(folder: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((folder / LINKS_FILE).read_text())
    return data


def _write(folder: Path, data: dict[str, Any]) -> None:
    temp = folder / f"{LINKS_FILE}.tmp"
    temp.write_text(json.dumps(data))
    os.replace(temp, folder / LINKS_FILE)


def write_wanted(
    folder: Path,
    *,
    host: str,
    port: int,
    links: dict[str, bool],
    registry: tuple[str, int] | None = None,
    pulls: list[str] | None = None,
    rate: float | None = None,
    pod_api: tuple[int, dict[str, str]] | None = None,
) -> None:
    """The links' first state: the API server, each node's link, for the nodes in `pulls` a
    paced link to the registry at `rate` bytes per second (None: unlimited), and `pod_api`: the
    port and, per real node, the address where its pods reach the API server."""
    data: dict[str, Any] = {"target_host": host, "target_port": port, "links": links}
    if pod_api is not None:
        data["pod_api"] = {"port": pod_api[0], "addresses": pod_api[1]}
    if registry is not None:
        data.update(
            registry=list(registry),
            pulls=sorted(pulls or []),
            rates=dict.fromkeys(pulls or [], rate),
        )
    _write(folder, data)


def set_up(folder: Path, links: dict[str, bool]) -> None:
    """Bring these nodes' links up (True) or cut them (False); the others stay as they are."""
    data = _read(folder)
    data["links"].update(links)
    _write(folder, data)


def set_rate(folder: Path, node: str, rate: float | None) -> None:
    """A real node's pull rate in bytes per second (None: unlimited)."""
    data = _read(folder)
    if node not in data.get("pulls", []):
        pulls = ", ".join(data.get("pulls", [])) or "none"
        raise ValueError(f"{node} pulls no images through a link (real nodes: {pulls})")
    data["rates"][node] = rate
    _write(folder, data)


UNITS = {"B": 1, "KB": 1000, "MB": 1000**2, "GB": 1000**3, "KIB": 1024, "MIB": 1024**2}


def parse_rate(text: str) -> float | None:
    """`2MB/s`, `500KB/s`, `1MiB/s`, `300B/s`, or `unlimited`: bytes per second (None: unlimited)."""
    cleaned = text.strip().upper().removesuffix("/S")
    if cleaned == "UNLIMITED":
        return None
    number = cleaned.rstrip("BKMGI")
    unit = cleaned[len(number) :]
    try:
        value = float(number)
    except ValueError:
        value = -1.0
    if unit not in UNITS or value <= 0:
        raise ValueError(
            f"{text!r} is not a rate: use a positive number with B, KB, MB, GB, KiB or MiB per "
            "second (e.g. 2MB/s), or unlimited"
        )
    return value * UNITS[unit]


async def _pipe(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, pace: Pace | None = None
) -> None:
    try:
        while data := await reader.read(PACED_CHUNK if pace and pace.rate else 65536):
            if pace is not None:
                await pace.take(len(data))
            writer.write(data)
            await writer.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        writer.close()


class LinkProxy:
    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.target_host, self.target_port, wanted = read_wanted(folder)
        self.links = {node: _Link(node=node, up=up) for node, up in wanted.items()}
        data = _read(folder)
        self.registry: tuple[str, int] | None = (
            (str(data["registry"][0]), int(data["registry"][1])) if "registry" in data else None
        )
        self.pulls: list[str] = list(data.get("pulls", []))
        pod_api = data.get("pod_api", {"port": 0, "addresses": {}})
        self.pod_api_port = int(pod_api["port"])
        self.pod_api_addresses: dict[str, str] = dict(pod_api["addresses"])
        for node, rate in data.get("rates", {}).items():
            self.links[node].pace.rate = rate

    async def _serve(
        self,
        link: _Link,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        *,
        registry: bool = False,
    ) -> None:
        if not link.up:
            # The link is down: reset the connection rather than let the client hang.
            writer.transport.abort()
            return
        link.connections.add(writer)
        host, port = (
            self.registry if registry and self.registry else (self.target_host, self.target_port)
        )
        try:
            up_reader, up_writer = await asyncio.open_connection(host, port)
        except OSError:
            link.connections.discard(writer)
            writer.transport.abort()
            return
        if not link.up:
            # Cut while we were connecting upstream: drop both ends, relay nothing.
            link.connections.discard(writer)
            writer.transport.abort()
            up_writer.transport.abort()
            return
        link.connections.add(up_writer)
        try:
            # Pulls are paced on the way down (registry to node), as a slow uplink is.
            pace = link.pace if registry else None
            await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer, pace))
        finally:
            link.connections.discard(writer)
            link.connections.discard(up_writer)

    def reload(self) -> None:
        _, _, wanted = read_wanted(self.folder)
        for node, rate in _read(self.folder).get("rates", {}).items():
            if node in self.links:
                self.links[node].pace.rate = rate
        for node, up in wanted.items():
            link = self.links.get(node)
            if link is None:
                continue
            link.up = up
            if not up:
                for conn in list(link.connections):
                    conn.transport.abort()
                link.connections.clear()

    async def run(self) -> None:
        _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
        servers: list[asyncio.Server] = []
        ports: dict[str, int] = {}
        for node, link in self.links.items():

            async def handle(
                reader: asyncio.StreamReader, writer: asyncio.StreamWriter, link: _Link = link
            ) -> None:
                await self._serve(link, reader, writer)

            server = await asyncio.start_server(handle, "127.0.0.1", 0)
            servers.append(server)
            ports[node] = server.sockets[0].getsockname()[1]
        for node, address in self.pod_api_addresses.items():

            async def from_pods(
                reader: asyncio.StreamReader,
                writer: asyncio.StreamWriter,
                link: _Link = self.links[node],
            ) -> None:
                await self._serve(link, reader, writer)

            servers.append(await asyncio.start_server(from_pods, address, self.pod_api_port))
        registry_ports: dict[str, int] = {}
        for node in self.pulls:

            async def pull(
                reader: asyncio.StreamReader,
                writer: asyncio.StreamWriter,
                link: _Link = self.links[node],
            ) -> None:
                await self._serve(link, reader, writer, registry=True)

            server = await asyncio.start_server(pull, "127.0.0.1", 0)
            servers.append(server)
            registry_ports[node] = server.sockets[0].getsockname()[1]
        loop = asyncio.get_running_loop()
        stop = asyncio.Event()
        loop.add_signal_handler(signal.SIGHUP, self.reload)
        loop.add_signal_handler(signal.SIGTERM, stop.set)
        loop.add_signal_handler(signal.SIGINT, stop.set)
        # Announced only once signals are handled: the lab may send SIGHUP right after. The
        # registry ports first: the lab waits for the API ports' file.
        temp = self.folder / f"{REGISTRY_PORTS_FILE}.tmp"
        temp.write_text(json.dumps(registry_ports))
        os.replace(temp, self.folder / REGISTRY_PORTS_FILE)
        temp = self.folder / f"{PORTS_FILE}.tmp"
        temp.write_text(json.dumps(ports))
        os.replace(temp, self.folder / PORTS_FILE)
        await stop.wait()
        for server in servers:
            server.close()
        for link in self.links.values():
            for conn in list(link.connections):
                with contextlib.suppress(Exception):
                    conn.transport.abort()


def main() -> None:
    folder = Path(sys.argv[1])
    asyncio.run(LinkProxy(folder).run())


if __name__ == "__main__":
    main()
