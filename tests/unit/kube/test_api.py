"""`KubeApi` against a scripted HTTP server: a connection that breaks is an `ApiError`, always.

Callers (leader election, caches, the reconciler, the agent) handle `ApiError` — status 0 for a
server that could not be reached. A connection cut after the response headers, in the middle of
the body, must look the same to them, not escape as a transport exception of its own.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from kubernetes_asyncio import client

from edgerollout.kube.api import LEASES, PODS, ApiError, KubeApi


async def _truncating_server(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Answer any request with headers promising 1000 bytes, send 12 of them, hang up."""
    while (await reader.readline()) not in (b"\r\n", b""):
        pass
    writer.write(
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n"
        b'{"kind": "Le'
    )
    await writer.drain()
    writer.transport.abort()


@pytest.fixture
async def cut_mid_body() -> AsyncIterator[KubeApi]:
    server = await asyncio.start_server(_truncating_server, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    configuration = client.Configuration(host=f"http://127.0.0.1:{port}")
    api = KubeApi(client.ApiClient(configuration))
    try:
        yield api
    finally:
        await api.close()
        server.close()


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
