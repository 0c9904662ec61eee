"""`KubeApi` against a scripted HTTP server: a connection that breaks is an `ApiError`, always.

Callers (leader election, caches, the reconciler, the agent) handle `ApiError` — status 0 for a
server that could not be reached. A connection cut after the response headers, in the middle of
the body, must look the same to them, not escape as a transport exception of its own.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import orjson
import pytest
from kubernetes_asyncio import client

from edgerollout.kube.api import LEASES, PODS, ApiError, KubeApi, environment_proxy

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]
CHUNKED = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"


async def request_line(reader: asyncio.StreamReader) -> bytes:
    """Read one request's line and headers; the line, as sent."""
    line = await reader.readline()
    while (await reader.readline()) not in (b"\r\n", b""):
        pass
    return line


def chunk(data: bytes) -> bytes:
    """`data` as one chunk of a chunked HTTP body."""
    return b"%x\r\n%s\r\n" % (len(data), data)


@contextlib.asynccontextmanager
async def scripted_api(handler: Handler, **options: Any) -> AsyncIterator[KubeApi]:
    """A `KubeApi` (made with `options`) on a loopback server whose connections `handler`
    answers; both closed on leaving."""
    server = await asyncio.start_server(handler, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    api = KubeApi(
        client.ApiClient(client.Configuration(host=f"http://127.0.0.1:{port}")), **options
    )
    try:
        yield api
    finally:
        await api.close()
        server.close()


async def _truncating_server(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Answer any request with headers promising 1000 bytes, send 12 of them, hang up."""
    await request_line(reader)
    writer.write(
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n"
        b'{"kind": "Le'
    )
    await writer.drain()
    writer.transport.abort()


@pytest.fixture
async def cut_mid_body() -> AsyncIterator[KubeApi]:
    async with scripted_api(_truncating_server) as api:
        yield api


async def test_body_cut_off_mid_get_is_an_unreachable_api_error(cut_mid_body: KubeApi) -> None:
    with pytest.raises(ApiError) as raised:
        await cut_mid_body.get(LEASES, "edgerollout-controller", namespace="kube-system")
    assert raised.value.status == 0
    assert raised.value.reason == "Unreachable"
    assert raised.value.message.startswith(
        "GET /apis/coordination.k8s.io/v1/namespaces/kube-system/leases/edgerollout-controller: "
    )


async def test_body_cut_off_mid_list_is_an_unreachable_api_error(cut_mid_body: KubeApi) -> None:
    with pytest.raises(ApiError) as raised:
        await cut_mid_body.list(PODS, namespace="default")
    assert (raised.value.status, raised.value.reason) == (0, "Unreachable")
    assert raised.value.message.startswith("GET /api/v1/namespaces/default/pods: ")


async def test_delete_accepted_before_the_body_was_cut_off_is_a_deletion(
    cut_mid_body: KubeApi,
) -> None:
    # 200 came back: the API server deleted the pod. Losing the rest of the answer changes nothing.
    await cut_mid_body.delete(PODS, "web-x", namespace="default", uid="uid-1")


@pytest.mark.parametrize(
    ("environment", "host", "proxy"),
    [
        ({"HTTPS_PROXY": "http://proxy:3128"}, "https://10.0.0.1:6443", "http://proxy:3128"),
        ({"HTTPS_PROXY": "http://proxy:3128"}, "http://10.0.0.1:8080", None),
        ({"HTTP_PROXY": "http://proxy:3128"}, "http://10.0.0.1:8080", "http://proxy:3128"),
        (
            {"HTTPS_PROXY": "http://proxy:3128", "NO_PROXY": "10.0.0.1"},
            "https://10.0.0.1:6443",
            None,
        ),
        ({"HTTPS_PROXY": "http://proxy:3128"}, "https://127.0.0.1:6443", None),
        ({"HTTPS_PROXY": "http://proxy:3128"}, "https://localhost:6443", None),
        ({"HTTPS_PROXY": "http://proxy:3128"}, "https://[::1]:6443", None),
        ({}, "https://10.0.0.1:6443", None),
    ],
)
def test_environment_proxy_is_the_one_client_go_would_use(
    monkeypatch: pytest.MonkeyPatch, environment: dict[str, str], host: str, proxy: str | None
) -> None:
    for name in ("HTTPS_PROXY", "HTTP_PROXY", "NO_PROXY", "https_proxy", "http_proxy", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
    for name, value in environment.items():
        monkeypatch.setenv(name, value)

    assert environment_proxy(host) == proxy


async def _proxy(
    requests: list[bytes], reader: asyncio.StreamReader, writer: asyncio.StreamWriter
) -> None:
    """A forward proxy that answers every request itself, and records its request line."""
    requests.append(await request_line(reader))
    body = b'{"kind": "Pod", "metadata": {"name": "web-x"}}'
    writer.write(
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
        + f"Content-Length: {len(body)}\r\n\r\n".encode()
        + body
    )
    await writer.drain()
    writer.close()


async def test_the_environment_is_read_once_when_the_client_is_made(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    requests: list[bytes] = []
    server = await asyncio.start_server(lambda r, w: _proxy(requests, r, w), "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{port}")
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    api = KubeApi(client.ApiClient(client.Configuration(host="http://apiserver.invalid:8080")))
    # Changed afterwards: not looked at again (no lookups per request, as with client-go).
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:1")
    try:
        pod = await api.get(PODS, "web-x", namespace="default")
    finally:
        await api.close()
        server.close()

    assert pod["metadata"]["name"] == "web-x"
    assert requests == [
        b"GET http://apiserver.invalid:8080/api/v1/namespaces/default/pods/web-x HTTP/1.1\r\n"
    ]


async def test_watch_sends_both_selectors_in_its_query() -> None:
    """A cache of a selection follows only what the API server sends for the same selection."""
    request_lines: list[bytes] = []

    async def empty_watch(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        request_lines.append(await request_line(reader))
        writer.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 0\r\n\r\n"
        )
        await writer.drain()
        writer.close()

    async with scripted_api(empty_watch) as api:
        events = [
            event
            async for event in api.watch(
                PODS,
                resource_version="42",
                field_selector="spec.nodeName=edge-1",
                label_selector="pod-template-generation",
                timeout_seconds=60,
            )
        ]

    assert events == []
    assert request_lines == [
        b"GET /api/v1/pods?watch=true&allowWatchBookmarks=true&resourceVersion=42"
        b"&timeoutSeconds=60&fieldSelector=spec.nodeName%3Dedge-1"
        b"&labelSelector=pod-template-generation HTTP/1.1\r\n"
    ]


async def test_watch_events_are_read_whole_however_the_stream_is_cut() -> None:
    """One event cut across writes, two in one write, one after a pause of the reader, the last
    without its newline: each handed on once, whole, in order."""
    events = [{"type": "ADDED", "object": {"metadata": {"name": f"p{i}"}}} for i in range(5)]
    lines = [orjson.dumps(event) + b"\n" for event in events]

    async def chunked(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await request_line(reader)
        writer.write(CHUNKED)
        writes = [lines[0][:7], lines[0][7:] + lines[1][:3], lines[1][3:] + lines[2]]
        writes += [lines[3], lines[4].rstrip(b"\n")]
        for data in writes:
            writer.write(chunk(data))
            await writer.drain()
            await asyncio.sleep(0.02)  # longer than the reader's pause: it reads again
        writer.write(b"0\r\n\r\n")
        await writer.drain()
        writer.close()

    async with scripted_api(chunked, watch_batch=0.01) as api:
        received = [event async for event in api.watch(PODS, resource_version="1")]
    assert received == events


async def test_a_watch_stream_that_is_no_watchs_stops_with_an_error() -> None:
    """Bytes without a newline past any object's size: a ValueError (the cache retries), not a
    buffer that grows for ever."""

    async def endless(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await request_line(reader)
        writer.write(CHUNKED)
        block = b"x" * 2**20
        with contextlib.suppress(ConnectionError):
            for _ in range(6):
                writer.write(chunk(block))
                await writer.drain()
        writer.close()

    async with scripted_api(endless) as api:
        with pytest.raises(ValueError, match=r"^watch pods: an event longer than") as raised:
            async for _ in api.watch(PODS, resource_version="1"):
                pass
    assert str(raised.value) == "watch pods: an event longer than 4194304 bytes"


async def test_a_burst_that_came_during_a_pause_is_read_at_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Twenty events written at once after the first, on a stream the server then keeps open and
    silent: they are read in one go after the reader's pause, not one event per pause."""
    events: list[dict[str, object]] = [
        {"type": "ADDED", "object": {"metadata": {"name": f"p{i}"}}} for i in range(21)
    ]
    chunks = [chunk(line) for line in map(_line, events)]
    done = asyncio.Event()

    async def burst(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await request_line(reader)
        writer.write(CHUNKED + chunks[0])
        await writer.drain()
        await asyncio.sleep(0.05)
        writer.write(b"".join(chunks[1:]))
        await writer.drain()
        await done.wait()  # open, and silent, until the client has read them all
        writer.close()

    batch = 0.0125
    pauses: list[float] = []
    sleep = asyncio.sleep

    async def counted(delay: float) -> None:
        if delay == batch:
            pauses.append(delay)
        await sleep(delay)

    monkeypatch.setattr(asyncio, "sleep", counted)
    received: list[object] = []
    async with scripted_api(burst, watch_batch=batch) as api:
        try:
            async with asyncio.timeout(5):
                async for event in api.watch(PODS, resource_version="1"):
                    received.append(event)
                    if len(received) == len(events):
                        break
        finally:
            done.set()
    assert received == events
    # A pause after the first event's read; the burst came in the next read.
    assert len(pauses) == 1


def _line(event: dict[str, object]) -> bytes:
    return orjson.dumps(event) + b"\n"
