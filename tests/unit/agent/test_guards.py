"""The agent's guards (design §8.3): browsers, foreign host names, load, node scoping, one upgrade
of a pod at a time, idle connections, and what an unauthenticated caller is told."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import re
from asyncio import StreamReader, StreamWriter
from collections.abc import AsyncIterator
from typing import Any

import orjson
import pytest
from aiohttp import web

from edgerollout.agent.runner import app_runner
from edgerollout.agent.scoping import NodeScoping, ScopingProbe
from edgerollout.agent.server import Agent, host_name
from edgerollout.kube.api import EVENTS, PODS, ApiError
from edgerollout.settings import AGENT, Address, AgentSettings
from tests.unit.kube.fake_api import FakeApi

from .harness import (
    AUTHORIZED,
    HOLD,
    IMAGEPULL,
    NODE,
    TOKEN,
    UPGRADE,
    HangingApi,
    agent,
    cluster,
    node_pods,
    ota_pod,
    posted_refusal,
    refusal,
    refused,
    serving,
)

FORBIDDEN = refused(403, "Forbidden", "this request is not served; the agent's log says why")
DENIED_BY_POLICY = ApiError(
    403, "Forbidden", "ValidatingAdmissionPolicy 'edgerollout-agent-own-node' denied request"
)
ROUTES = [
    ("GET", "/pods"),
    ("GET", "/healthz"),
    ("GET", "/readyz"),
    ("GET", "/metrics"),
    ("GET", "/openapi.json"),
    ("POST", UPGRADE),
    ("POST", IMAGEPULL),
    ("POST", HOLD),
    ("DELETE", HOLD),
]


@pytest.mark.parametrize(
    "headers",
    [
        {"Origin": "http://example.com"},
        {"Origin": "null"},
        {"Sec-Fetch-Site": "cross-site"},
        {"Sec-Fetch-Site": "same-site"},
        {"Host": "attacker.example"},
        {"Host": "attacker.example:10267"},
        {"Host": "127.0.0.1.nip.io"},
    ],
)
@pytest.mark.parametrize(("method", "path"), ROUTES)
async def test_browser_and_rebound_host_requests_are_403_on_every_route_and_nothing_is_asked(
    headers: dict[str, str], method: str, path: str
) -> None:
    api = cluster(ota_pod())

    async with serving(agent(api, ota_pod(), token=TOKEN)) as client:
        response = await client.request(method, path, headers={**AUTHORIZED, **headers})
        assert (response.status, await refusal(response)) == FORBIDDEN

    assert api.calls == []


@pytest.mark.parametrize(
    "headers",
    [
        {"Host": "localhost:10267"},
        {"Host": "LocalHost"},
        {"Host": "[::1]:10267"},
        {"Host": "::1"},
        {"Host": "127.0.0.1"},
        {"Sec-Fetch-Site": "same-origin"},
        {"Sec-Fetch-Site": "none"},
    ],
)
async def test_loopback_hosts_and_non_browser_requests_are_served(headers: dict[str, str]) -> None:
    api = cluster(ota_pod())

    async with serving(agent(api, ota_pod(), token=TOKEN)) as client:
        response = await client.post(UPGRADE, headers={**AUTHORIZED, **headers})
        assert (response.status, await response.text()) == (200, "Start updating pod default/web-x")


@pytest.mark.parametrize(
    ("header", "name"),
    [
        ("127.0.0.1:10267", "127.0.0.1"),
        ("[::1]:10267", "::1"),
        ("[::1]", "::1"),
        ("::1", "::1"),
        ("LOCALHOST.", "localhost"),
        ("10.0.0.7:10267", "10.0.0.7"),
    ],
)
def test_host_name_drops_the_port_and_the_brackets(header: str, name: str) -> None:
    assert host_name(header) == name


async def test_the_listen_address_is_an_accepted_host() -> None:
    api = cluster(ota_pod())
    settings = dataclasses.replace(AGENT, node_name=NODE, listen=Address("10.0.0.7", 10267))
    subject = Agent(
        settings, api, node_pods(api, ota_pod()), NodeScoping(enforced=True), token=TOKEN
    )

    async with serving(subject) as client:
        response = await client.post(UPGRADE, headers={**AUTHORIZED, "Host": "10.0.0.7:10267"})
        assert response.status == 200


def not_proven(detail: str) -> tuple[int, dict[str, Any]]:
    """The refusal of a change while node scoping is not proven, for the reason `detail`."""
    return refused(
        503,
        "NodeScopingNotEnforced",
        f"the API server is not proven to confine this agent to its node, so it changes nothing: "
        f"{detail}",
    )


@pytest.mark.parametrize("path", [UPGRADE, IMAGEPULL], ids=["upgrade", "imagepull"])
async def test_without_proven_node_scoping_changes_are_503_and_nothing_is_asked(path: str) -> None:
    api = cluster(ota_pod())
    subject = agent(api, ota_pod(), token=TOKEN)
    subject.scoping = NodeScoping(enforced=False, detail="the policy binding is missing")

    async with serving(subject) as client:
        response = await client.post(path, headers=AUTHORIZED)
        assert (response.status, await refusal(response)) == not_proven(
            "the policy binding is missing"
        )

    assert api.calls == []


@pytest.mark.parametrize("path", [UPGRADE, IMAGEPULL], ids=["upgrade", "imagepull"])
async def test_a_policy_gone_since_the_last_probe_is_seen_before_the_change(path: str) -> None:
    # The last periodic probe proved scoping; the policy went since. The probe made before the
    # change finds its status patch accepted, and nothing else is asked.
    api = cluster(ota_pod())
    subject = agent(api, ota_pod(), token=TOKEN)
    subject.probe = ScopingProbe(api, subject.scoping, node_name=NODE)

    async with serving(subject) as client:
        response = await client.post(path, headers=AUTHORIZED)
        assert (response.status, await refusal(response)) == not_proven(
            "the API server accepted a status patch that the admission policy "
            "edgerollout-agent-own-node must deny: the policy or its binding is missing"
        )

    assert [(call.verb, call.params.get("dry_run")) for call in api.writes] == [
        ("patch", True),
        ("create", None),
    ]
    assert [call.resource for call in api.writes] == [PODS, EVENTS]


async def test_a_policy_still_in_force_is_proven_again_and_the_upgrade_goes_on() -> None:
    api = cluster(ota_pod())
    api.fail("patch", PODS, DENIED_BY_POLICY)
    subject = agent(api, ota_pod(), token=TOKEN)
    subject.probe = ScopingProbe(api, subject.scoping, node_name=NODE)

    async with serving(subject) as client:
        response = await client.post(UPGRADE, headers=AUTHORIZED)
        assert response.status == 200

    assert [(call.verb, call.params.get("dry_run")) for call in api.writes] == [
        ("patch", True),
        ("delete", None),
    ]


async def test_without_proven_node_scoping_pods_are_listed_and_readyz_fails() -> None:
    subject = agent(FakeApi(), ota_pod())
    subject.scoping = NodeScoping()

    async with serving(subject) as client:
        pods = await client.get("/pods")
        ready = await client.get("/readyz")
        assert pods.status == 200
        assert [pod["metadata"]["name"] for pod in (await pods.json())["items"]] == ["web-x"]
        assert (ready.status, await refusal(ready)) == (
            503,
            {
                "code": 503,
                "reason": "NodeScopingNotEnforced",
                "message": "the API server is not proven to confine this agent to its node; the "
                "agent's log says why",
            },
        )


async def test_unauthenticated_upgrade_is_401_even_without_node_scoping() -> None:
    api = cluster(ota_pod())
    subject = agent(api, ota_pod(), token=TOKEN)
    subject.scoping = NodeScoping()

    async with serving(subject) as client:
        response = await client.post(UPGRADE)
        assert (response.status, (await refusal(response))["reason"]) == (401, "Unauthorized")

    assert api.calls == []


async def test_a_second_upgrade_of_a_pod_being_upgraded_is_409_and_asks_nothing() -> None:
    api = cluster(ota_pod(), api=HangingApi(hang=0.3))

    async with serving(agent(api, ota_pod(), token=TOKEN, cloud_timeout=5)) as client:
        first = asyncio.create_task(client.post(UPGRADE, headers=AUTHORIZED))
        await asyncio.sleep(0.1)
        calls_before = len(api.calls)
        second = await client.post(UPGRADE, headers=AUTHORIZED)
        assert (second.status, await refusal(second)) == refused(
            409, "UpgradeInProgress", "pod default/web-x is being upgraded by an earlier request"
        )
        assert len(api.calls) == calls_before
        done = await first
        assert (done.status, await done.text()) == (200, "Start updating pod default/web-x")
        again = await client.post(UPGRADE, headers=AUTHORIZED)
        assert (again.status, (await refusal(again))["reason"]) == (404, "PodNotFound")

    assert [call.verb for call in api.calls].count("delete") == 1


async def test_requests_beyond_the_in_flight_cap_are_503() -> None:
    api = cluster(ota_pod(), api=HangingApi(hang=0.3))
    subject = agent(api, ota_pod(), token=TOKEN, cloud_timeout=5)
    subject.settings = dataclasses.replace(subject.settings, max_in_flight_requests=1)

    async with serving(subject) as client:
        first = asyncio.create_task(client.post(UPGRADE, headers=AUTHORIZED))
        await asyncio.sleep(0.1)
        busy = await client.get("/pods", headers=AUTHORIZED)
        assert busy.headers["Retry-After"] == "1"
        assert (busy.status, await refusal(busy)) == refused(
            503, "TooManyRequests", "too many requests at once; try again shortly"
        )
        assert (await first).status == 200
        after = await client.get("/pods", headers=AUTHORIZED)
        assert after.status == 200


async def test_auth_none_serves_changes_without_a_token_and_says_so_in_metrics() -> None:
    api = cluster(ota_pod())

    async with serving(agent(api, ota_pod())) as client:
        response = await client.post(UPGRADE)
        metrics = await (await client.get("/metrics")).text()
        assert (response.status, await response.text()) == (200, "Start updating pod default/web-x")

    assert re.search(r"^edgerollout_agent_auth_disabled 1\.0$", metrics, re.MULTILINE)


async def test_token_auth_shows_auth_enabled_in_metrics() -> None:
    async with serving(agent(FakeApi(), token=TOKEN)) as client:
        metrics = await (await client.get("/metrics", headers=AUTHORIZED)).text()

    assert re.search(r"^edgerollout_agent_auth_disabled 0\.0$", metrics, re.MULTILINE)


async def test_unauthenticated_callers_get_a_generic_api_server_refusal() -> None:
    api = cluster(ota_pod())
    api.fail("delete", PODS, ApiError(403, "Forbidden", "user system:serviceaccount:x cannot"))

    assert await posted_refusal(api, UPGRADE) == refused(
        403, "Forbidden", "the API server refused: see the agent's log"
    )


@contextlib.asynccontextmanager
async def connected(
    settings: AgentSettings,
) -> AsyncIterator[tuple[int, StreamReader, StreamWriter]]:
    """A connection to the agent served on a socket of 127.0.0.1: its port, reader and writer."""
    runner = app_runner(agent(FakeApi(), token=TOKEN), settings)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    try:
        port = runner.addresses[0][1]
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        yield port, reader, writer
        writer.close()
    finally:
        await runner.cleanup()


async def test_an_idle_connection_is_closed_after_the_keepalive_timeout() -> None:
    assert AGENT.keepalive_timeout <= 15
    async with connected(dataclasses.replace(AGENT, keepalive_timeout=0.3)) as (
        port,
        reader,
        writer,
    ):
        writer.write(f"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode())
        await writer.drain()
        head = await reader.readuntil(b"ok")
        assert head.startswith(b"HTTP/1.1 200 OK")
        closed = await asyncio.wait_for(reader.read(), timeout=3)
        assert closed == b""


async def test_a_request_without_a_host_header_is_not_a_browsers_and_is_served() -> None:
    async with connected(AGENT) as (_, reader, writer):
        writer.write(f"GET /pods HTTP/1.0\r\nAuthorization: Bearer {TOKEN}\r\n\r\n".encode())
        await writer.drain()
        answer = await asyncio.wait_for(reader.read(), timeout=3)

    assert answer.startswith(b"HTTP/1.0 200 OK\r\n")


async def test_a_body_too_large_is_413_before_the_other_guards() -> None:
    api = cluster(ota_pod())

    async with serving(agent(api, ota_pod(), token=TOKEN)) as client:
        response = await client.post(
            UPGRADE, data=b"x" * (AGENT.max_body_bytes + 1), headers={"Host": "attacker.example"}
        )
        assert (response.status, (await refusal(response))["reason"]) == (
            413,
            "RequestEntityTooLarge",
        )

    assert api.calls == []


async def test_an_authorization_header_that_is_not_utf8_is_401_not_a_server_error() -> None:
    async with connected(AGENT) as (_, reader, writer):
        writer.write(b"GET /pods HTTP/1.0\r\nAuthorization: Bearer \xff\xfe\x80\r\n\r\n")
        await writer.drain()
        answer = await asyncio.wait_for(reader.read(), timeout=3)

    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.0 401 Unauthorized\r\n")
    assert orjson.loads(body) == {
        "code": 401,
        "reason": "Unauthorized",
        "message": "a valid bearer token is required (Authorization header)",
    }
