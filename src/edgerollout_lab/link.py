"""Each lab node's own network link to the API server, which the lab can cut and restore.

One process listens on one loopback port per node and relays TCP to the API server. A node's
kubeconfig points at its port, so whatever runs "on" that node (its agent) reaches the cloud only
through this link. Cutting a link closes the node's open connections and resets new ones at once — a
dropped uplink as the client sees it, fast enough for tests to assert on. The lab writes the wanted
state to `links.json` and sends SIGHUP; the process answers by re-reading it.

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

LINKS_FILE = "links.json"
PORTS_FILE = "link-ports.json"


@dataclass
class _Link:
    node: str
    up: bool = True
    connections: set[asyncio.StreamWriter] = field(default_factory=set)


def read_wanted(folder: Path) -> tuple[str, int, dict[str, bool]]:
    """The API server address and, per node, whether its link should be up."""
    data = json.loads((folder / LINKS_FILE).read_text())
    return str(data["target_host"]), int(data["target_port"]), dict(data["links"])


def write_wanted(folder: Path, *, host: str, port: int, links: dict[str, bool]) -> None:
    temp = folder / f"{LINKS_FILE}.tmp"
    temp.write_text(json.dumps({"target_host": host, "target_port": port, "links": links}))
    os.replace(temp, folder / LINKS_FILE)


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
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

    async def _serve(
        self, link: _Link, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        if not link.up:
            # The link is down: reset the connection rather than let the client hang.
            writer.transport.abort()
            return
        link.connections.add(writer)
        try:
            up_reader, up_writer = await asyncio.open_connection(self.target_host, self.target_port)
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
            await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer))
        finally:
            link.connections.discard(writer)
            link.connections.discard(up_writer)

    def reload(self) -> None:
        _, _, wanted = read_wanted(self.folder)
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
        loop = asyncio.get_running_loop()
        stop = asyncio.Event()
        loop.add_signal_handler(signal.SIGHUP, self.reload)
        loop.add_signal_handler(signal.SIGTERM, stop.set)
        loop.add_signal_handler(signal.SIGINT, stop.set)
        # Announced only once signals are handled: the lab may send SIGHUP right after.
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
