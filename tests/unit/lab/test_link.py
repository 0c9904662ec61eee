"""The per-node link relay, run as the lab runs it: a real process relaying real loopback sockets.

An asyncio echo server stands in for the API server, so whatever a node sends through its link comes
back unchanged while the link is up.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import signal
import sys
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from edgerollout_lab import link

TIMEOUT = 5.0
LOOPBACK = "127.0.0.1"


@dataclass
class EchoServer:
    """The stand-in API server; counts the relayed connections it currently holds open."""

    server: asyncio.Server
    port: int
    open_connections: set[asyncio.StreamWriter] = field(default_factory=set)

    @classmethod
    async def start(cls) -> EchoServer:
        connections: set[asyncio.StreamWriter] = set()

        async def echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            connections.add(writer)
            try:
                while data := await reader.read(65536):
                    writer.write(data)
                    await writer.drain()
            except ConnectionError:
                pass
            finally:
                connections.discard(writer)
                writer.close()

        server = await asyncio.start_server(echo, LOOPBACK, 0)
        return cls(
            server=server, port=server.sockets[0].getsockname()[1], open_connections=connections
        )

    async def close(self) -> None:
        self.server.close()
        for writer in list(self.open_connections):
            writer.transport.abort()
        await self.server.wait_closed()


@dataclass(frozen=True, slots=True)
class Relay:
    folder: Path
    process: asyncio.subprocess.Process
    ports: dict[str, int]
    api_port: int

    def set_links(self, links: dict[str, bool]) -> None:
        link.write_wanted(self.folder, host=LOOPBACK, port=self.api_port, links=links)
        self.process.send_signal(signal.SIGHUP)

    def log(self) -> str:
        return (self.folder / "relay.log").read_text(errors="replace")


async def wait_for(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + TIMEOUT
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} did not happen within {TIMEOUT} s")
        await asyncio.sleep(0.01)


async def connect(port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    return await asyncio.wait_for(asyncio.open_connection(LOOPBACK, port), TIMEOUT)


async def close(writer: asyncio.StreamWriter) -> None:
    writer.close()
    with contextlib.suppress(ConnectionError):
        await writer.wait_closed()


async def exchange(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, payload: bytes
) -> bytes:
    writer.write(payload)
    await writer.drain()
    return await asyncio.wait_for(reader.readexactly(len(payload)), TIMEOUT)


async def round_trip(port: int, payload: bytes) -> bytes:
    reader, writer = await connect(port)
    try:
        return await exchange(reader, writer, payload)
    finally:
        await close(writer)


async def sent_and_closed(port: int, payload: bytes, timeout: float = TIMEOUT) -> bytes:
    """What a new connection to `port` that sends `payload` receives before it is closed."""
    reader, writer = await connect(port)
    try:
        writer.write(payload)
        return await read_until_closed(reader, timeout=timeout)
    finally:
        await close(writer)


async def read_until_closed(reader: asyncio.StreamReader, timeout: float = TIMEOUT) -> bytes:
    """Everything the peer sends before it closes the connection; a reset counts as closing."""
    received = b""
    deadline = time.monotonic() + timeout
    try:
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise AssertionError(
                    f"connection still open after {timeout} s; received {received!r}"
                )
            try:
                chunk = await asyncio.wait_for(reader.read(65536), remaining)
            except TimeoutError:
                continue
            if not chunk:
                return received
            received += chunk
    except ConnectionResetError:
        return received


async def wait_exit(process: asyncio.subprocess.Process) -> int:
    try:
        return await asyncio.wait_for(process.wait(), TIMEOUT)
    except TimeoutError:
        raise AssertionError(f"relay (pid {process.pid}) still running after {TIMEOUT} s") from None


@pytest.fixture
async def api_server() -> AsyncIterator[EchoServer]:
    echo = await EchoServer.start()
    try:
        yield echo
    finally:
        await echo.close()


@pytest.fixture
async def relay(tmp_path: Path, api_server: EchoServer) -> AsyncIterator[Relay]:
    link.write_wanted(
        tmp_path,
        host=LOOPBACK,
        port=api_server.port,
        links={"edge-1": True, "edge-2": True, "edge-3": False},
    )
    with (tmp_path / "relay.log").open("wb") as log:
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "edgerollout_lab.link",
            str(tmp_path),
            stdin=asyncio.subprocess.DEVNULL,
            stdout=log,
            stderr=asyncio.subprocess.STDOUT,
        )
    try:
        ports_file = tmp_path / link.PORTS_FILE
        await wait_for(
            lambda: ports_file.exists() or process.returncode is not None, "link-ports.json"
        )
        assert process.returncode is None, (tmp_path / "relay.log").read_text(errors="replace")
        ports: dict[str, int] = json.loads(ports_file.read_text())
        handle = Relay(folder=tmp_path, process=process, ports=ports, api_port=api_server.port)
        # The relay installs its signal handlers after publishing its ports and before it serves
        # any connection: one relayed round trip proves SIGHUP and SIGTERM are safe to send.
        assert await round_trip(ports["edge-1"], b"ready?") == b"ready?"
        yield handle
    finally:
        if process.returncode is None:
            process.kill()
        await asyncio.wait_for(process.wait(), TIMEOUT)


async def test_relay_listens_on_one_distinct_loopback_port_per_node(relay: Relay) -> None:
    assert sorted(relay.ports) == ["edge-1", "edge-2", "edge-3"]
    assert len(set(relay.ports.values())) == 3
    assert all(port > 0 for port in relay.ports.values())


async def test_bytes_sent_through_a_node_link_reach_the_api_server_and_come_back(
    relay: Relay, api_server: EchoServer
) -> None:
    reader, writer = await connect(relay.ports["edge-2"])
    try:
        assert await exchange(reader, writer, b"GET /healthz") == b"GET /healthz"
        assert len(api_server.open_connections) == 1
        big = bytes(range(256)) * 1024
        assert await exchange(reader, writer, big) == big
    finally:
        await close(writer)
    await wait_for(lambda: not api_server.open_connections, "api-server side closed")


async def test_node_whose_link_starts_down_has_new_connections_closed_without_data(
    relay: Relay, api_server: EchoServer
) -> None:
    assert await sent_and_closed(relay.ports["edge-3"], b"hello?", timeout=1.0) == b""
    assert not api_server.open_connections


async def test_cutting_a_link_closes_its_open_connections_and_resets_new_ones(
    relay: Relay, api_server: EchoServer
) -> None:
    cut_reader, cut_writer = await connect(relay.ports["edge-1"])
    other_reader, other_writer = await connect(relay.ports["edge-2"])
    try:
        assert await exchange(cut_reader, cut_writer, b"before") == b"before"
        assert await exchange(other_reader, other_writer, b"before") == b"before"
        assert len(api_server.open_connections) == 2

        relay.set_links({"edge-1": False, "edge-2": True, "edge-3": False})

        assert await read_until_closed(cut_reader) == b""
        await wait_for(lambda: len(api_server.open_connections) == 1, "api-server side cut")
        assert await sent_and_closed(relay.ports["edge-1"], b"after", timeout=1.0) == b""
        assert await exchange(other_reader, other_writer, b"still up") == b"still up"
        assert await round_trip(relay.ports["edge-2"], b"new on edge-2") == b"new on edge-2"
    finally:
        await close(cut_writer)
        await close(other_writer)
    assert relay.process.returncode is None, relay.log()


async def test_restoring_a_cut_link_relays_new_connections_again(relay: Relay) -> None:
    open_reader, open_writer = await connect(relay.ports["edge-1"])
    try:
        relay.set_links({"edge-1": False, "edge-2": True, "edge-3": False})
        assert await read_until_closed(open_reader) == b""
    finally:
        await close(open_writer)

    relay.set_links({"edge-1": True, "edge-2": True, "edge-3": True})

    async def echoes(port: int) -> bool:
        try:
            return await round_trip(port, b"back") == b"back"
        except (ConnectionError, asyncio.IncompleteReadError):
            return False

    deadline = time.monotonic() + TIMEOUT
    while not await echoes(relay.ports["edge-1"]):
        assert time.monotonic() < deadline, f"edge-1 still cut after {TIMEOUT} s"
        await asyncio.sleep(0.02)
    assert await round_trip(relay.ports["edge-3"], b"first time up") == b"first time up"


async def test_node_connection_is_closed_when_the_api_server_is_unreachable(
    relay: Relay, api_server: EchoServer
) -> None:
    await api_server.close()
    assert await sent_and_closed(relay.ports["edge-2"], b"anyone?") == b""
    assert relay.process.returncode is None, relay.log()


async def test_sigterm_stops_the_relay_and_closes_its_connections(relay: Relay) -> None:
    reader, writer = await connect(relay.ports["edge-1"])
    try:
        assert await exchange(reader, writer, b"x") == b"x"
        relay.process.send_signal(signal.SIGTERM)
        assert await wait_exit(relay.process) == 0
        assert await read_until_closed(reader) == b""
    finally:
        await close(writer)


async def test_connection_still_connecting_upstream_when_its_link_is_cut_is_not_relayed(
    tmp_path: Path, api_server: EchoServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    link.write_wanted(tmp_path, host=LOOPBACK, port=api_server.port, links={"edge-1": True})
    proxy = link.LinkProxy(tmp_path)
    open_connection = asyncio.open_connection
    connecting = asyncio.Event()
    proceed = asyncio.Event()

    async def held_open_connection(
        host: str, port: int
    ) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        connecting.set()
        await proceed.wait()
        return await open_connection(host, port)

    monkeypatch.setattr(asyncio, "open_connection", held_open_connection)
    node_link = proxy.links["edge-1"]
    server = await asyncio.start_server(functools.partial(proxy._serve, node_link), LOOPBACK, 0)
    reader, writer = await open_connection(LOOPBACK, server.sockets[0].getsockname()[1])
    try:
        await asyncio.wait_for(connecting.wait(), TIMEOUT)
        link.write_wanted(tmp_path, host=LOOPBACK, port=api_server.port, links={"edge-1": False})
        proxy.reload()
        proceed.set()
        writer.write(b"after the cut")
        assert await read_until_closed(reader, timeout=1.0) == b""
    finally:
        await close(writer)
        server.close()
        await wait_for(lambda: not node_link.connections, "relayed connection closed")
        await server.wait_closed()


# --- pulls through the link: rates and pacing ------------------------------------------------


@pytest.mark.parametrize(
    ("text", "rate"),
    [
        ("2MB/s", 2_000_000.0),
        ("500KB/s", 500_000.0),
        ("1MiB/s", 1_048_576.0),
        ("300B/s", 300.0),
        ("0.5mb/s", 500_000.0),
        ("unlimited", None),
    ],
)
def test_a_rate_is_read_in_bytes_per_second(text: str, rate: float | None) -> None:
    assert link.parse_rate(text) == rate


@pytest.mark.parametrize("text", ["2", "fast", "-1MB/s", "0MB/s", "2TB/s", ""])
def test_anything_else_is_not_a_rate_and_says_how_to_write_one(text: str) -> None:
    with pytest.raises(ValueError, match="is not a rate") as refused:
        link.parse_rate(text)
    assert str(refused.value) == (
        f"{text!r} is not a rate: use a positive number with B, KB, MB, GB, KiB or MiB per second "
        "(e.g. 2MB/s), or unlimited"
    )


async def test_a_pace_spreads_what_it_lets_through_at_its_rate_across_takers() -> None:
    pace = link.Pace(rate=100_000.0)
    loop = asyncio.get_running_loop()
    started = loop.time()

    # Two connections of one node share its rate: 30 kB at 100 kB/s take 0.3 s, not 0.15 s.
    await asyncio.gather(*(pace.take(5_000) for _ in range(6)))

    assert 0.29 <= loop.time() - started < 0.5


async def test_an_unlimited_pace_lets_everything_through_at_once() -> None:
    pace = link.Pace()
    loop = asyncio.get_running_loop()
    started = loop.time()

    await asyncio.gather(*(pace.take(10_000_000) for _ in range(10)))

    assert loop.time() - started < 0.05


def test_a_rate_is_only_for_a_node_that_pulls_through_its_link(tmp_path: Path) -> None:
    link.write_wanted(
        tmp_path,
        host=LOOPBACK,
        port=1,
        links={"edge-1": True, "real-1": True},
        registry=(LOOPBACK, 2),
        pulls=["real-1"],
        rate=None,
    )

    link.set_rate(tmp_path, "real-1", 2e6)
    with pytest.raises(ValueError, match="pulls no images") as refused:
        link.set_rate(tmp_path, "edge-1", 2e6)

    assert str(refused.value) == "edge-1 pulls no images through a link (real nodes: real-1)"
    assert json.loads((tmp_path / link.LINKS_FILE).read_text())["rates"] == {"real-1": 2e6}
