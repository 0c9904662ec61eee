"""The agent's HTTP surface (design §8): the pod list, credentials, and refusals of malformed requests."""

from __future__ import annotations

import re
import time
from collections.abc import AsyncIterator

import pytest

from edgerollout.agent.server import HOLD_ROUTE, POD_ROUTE
from tests.unit.kube.fake_api import FakeApi

from .harness import IMAGEPULL, NODE, UPGRADE, agent, cluster, ota_pod, refusal, refused, serving

TOKEN = "s3cret-token"
UNAUTHORIZED = refused(
    401, "Unauthorized", "a valid bearer token is required (Authorization header)"
)


def cached_pod(namespace: str, name: str) -> dict[str, object]:
    pod = ota_pod(name)
    pod["metadata"]["namespace"] = namespace
    return pod


async def test_pods_is_a_v1_pod_list_of_the_cache_sorted_by_namespace_and_name() -> None:
    pods = [
        cached_pod("kube-system", "proxy-b"),
        cached_pod("default", "web-b"),
        cached_pod("kube-system", "proxy-a"),
        cached_pod("default", "web-a"),
    ]
    subject = agent(FakeApi(), *pods)
    subject.pods.informer.resource_version = "4711"
    subject.pods.connected = True

    async with serving(subject) as client:
        response = await client.get("/pods")
        assert response.status == 200
        assert response.content_type == "application/json"
        assert response.headers["X-Edgerollout-Cache-Age"] == "0.0"
        body = await response.json()

    assert body == {
        "apiVersion": "v1",
        "kind": "PodList",
        "metadata": {"resourceVersion": "4711"},
        "items": [pods[3], pods[1], pods[2], pods[0]],
    }


async def test_pods_from_a_disconnected_cache_say_how_stale_they_are() -> None:
    subject = agent(FakeApi(), ota_pod())
    subject.pods.connected = False
    subject.pods.last_contact = time.time() - 12.5

    async with serving(subject) as client:
        response = await client.get("/pods")
        age = float(response.headers["X-Edgerollout-Cache-Age"])
        assert response.status == 200
        assert [pod["metadata"]["name"] for pod in (await response.json())["items"]] == ["web-x"]

    assert 12.5 <= age < 14


async def test_pods_before_the_cache_has_anything_is_503_and_readyz_says_not_ready() -> None:
    subject = agent(FakeApi(), synced=False)

    async with serving(subject) as client:
        pods = await client.get("/pods")
        ready = await client.get("/readyz")
        healthy = await client.get("/healthz")

        assert (pods.status, await refusal(pods)) == refused(
            503, "CacheNotReady", "no pods known yet: the API server has not answered"
        )
        assert (ready.status, (await refusal(ready))["reason"]) == (503, "CacheNotReady")
        assert (healthy.status, await healthy.text()) == (200, "ok")


async def test_readyz_is_ok_once_the_cache_is_filled() -> None:
    async with serving(agent(FakeApi())) as client:
        response = await client.get("/readyz")
        assert (response.status, await response.text()) == (200, "ok")


@pytest.mark.parametrize(
    "authorization",
    [None, "", "Bearer wrong-token", TOKEN, f"Basic {TOKEN}", f"Bearer {TOKEN}x", "Bearer"],
)
@pytest.mark.parametrize(
    ("method", "path"),
    [("GET", "/pods"), ("GET", "/metrics"), ("GET", "/openapi.json"), ("POST", UPGRADE)],
)
async def test_missing_or_wrong_bearer_token_is_401_and_nothing_is_asked(
    authorization: str | None, method: str, path: str
) -> None:
    api = cluster(ota_pod())
    headers = {} if authorization is None else {"Authorization": authorization}

    async with serving(agent(api, ota_pod(), token=TOKEN)) as client:
        response = await client.request(method, path, headers=headers)
        assert (response.status, await refusal(response)) == UNAUTHORIZED

    assert api.calls == []


async def test_health_probes_need_no_token() -> None:
    async with serving(agent(FakeApi(), token=TOKEN)) as client:
        for path in ("/healthz", "/readyz"):
            response = await client.get(path)
            assert (response.status, await response.text()) == (200, "ok")


async def test_right_bearer_token_is_let_through() -> None:
    api = cluster(ota_pod())
    headers = {"Authorization": f"Bearer {TOKEN}"}

    async with serving(agent(api, ota_pod(), token=TOKEN)) as client:
        pods = await client.get("/pods", headers=headers)
        upgrade = await client.post(UPGRADE, headers=headers)
        assert pods.status == 200
        assert (upgrade.status, await upgrade.text()) == (200, "Start updating pod default/web-x")


async def test_401_names_the_scheme_it_wants() -> None:
    async with serving(agent(FakeApi(), token=TOKEN)) as client:
        response = await client.get("/pods")
        assert response.status == 401
        assert response.headers.get("WWW-Authenticate", "").startswith("Bearer")


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/nope"),
        ("GET", "/pods/web-x"),
        ("POST", "/openyurt.io/v1/namespaces/default/pods/web-x/restart"),
        ("POST", "/openyurt.io/v1/namespaces//pods/web-x/upgrade"),
        ("POST", "/openyurt.io/v1/namespaces/default/pods//upgrade"),
        ("POST", "/openyurt.io/v1/namespaces/default/pods/web-x/upgrade/now"),
        ("POST", "/apis/openyurt.io/v1/namespaces/default/pods/web-x/upgrade"),
    ],
)
async def test_unknown_route_is_404_with_a_json_body(method: str, path: str) -> None:
    api = cluster(ota_pod())

    async with serving(agent(api)) as client:
        response = await client.request(method, path)
        assert (response.status, await refusal(response)) == refused(
            404, "NotFound", f"no such route: {path}"
        )

    assert api.calls == []


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", UPGRADE),
        ("GET", IMAGEPULL),
        ("PUT", UPGRADE),
        ("DELETE", UPGRADE),
        ("POST", "/pods"),
    ],
)
async def test_wrong_method_is_405_with_a_json_body(method: str, path: str) -> None:
    api = cluster(ota_pod())
    allowed = "GET, HEAD" if path in ("/pods", "/healthz", "/readyz", "/metrics") else "POST"

    async with serving(agent(api)) as client:
        response = await client.request(method, path)
        assert (response.status, await refusal(response)) == refused(
            405, "MethodNotAllowed", f"{method} is not allowed on {path} (allowed: {allowed})"
        )

    assert api.calls == []


async def test_405_lists_the_allowed_methods() -> None:
    async with serving(agent(FakeApi())) as client:
        response = await client.get(UPGRADE)
        assert response.status == 405
        assert response.headers.get("Allow") == "POST"


@pytest.mark.parametrize("path", [UPGRADE, IMAGEPULL])
async def test_body_over_64_kib_is_413_and_the_api_server_is_not_asked(path: str) -> None:
    api = cluster(ota_pod())

    async with serving(agent(api)) as client:
        response = await client.post(path, data=b"x" * (64 * 1024 + 1))
        assert (response.status, await refusal(response)) == refused(
            413, "RequestEntityTooLarge", "bodies are limited to 65536 bytes"
        )

    assert api.calls == []


async def test_chunked_body_over_64_kib_is_413_and_the_api_server_is_not_asked() -> None:
    api = cluster(ota_pod())

    async def chunks() -> AsyncIterator[bytes]:
        for _ in range(17):
            yield b"x" * 4096

    async with serving(agent(api)) as client:
        response = await client.post(UPGRADE, data=chunks())
        assert "Content-Length" not in response.request_info.headers
        assert (response.status, (await refusal(response))["reason"]) == (
            413,
            "RequestEntityTooLarge",
        )

    assert api.calls == []


async def test_body_of_exactly_64_kib_is_accepted() -> None:
    api = cluster(ota_pod())

    async with serving(agent(api)) as client:
        response = await client.post(UPGRADE, data=b"x" * (64 * 1024))
        assert (response.status, await response.text()) == (200, "Start updating pod default/web-x")


@pytest.mark.parametrize(
    ("namespace", "name", "wrong"),
    [
        ("Default", "web-x", "namespace 'Default' is not a DNS-1123 label"),
        ("kube_system", "web-x", "namespace 'kube_system' is not a DNS-1123 label"),
        ("n" * 64, "web-x", f"namespace '{'n' * 64}' is not a DNS-1123 label"),
        ("default", "Web-X", "pod name 'Web-X' is not a DNS-1123 subdomain"),
        ("default", "web_x", "pod name 'web_x' is not a DNS-1123 subdomain"),
        ("default", "web-", "pod name 'web-' is not a DNS-1123 subdomain"),
        ("default", "-web", "pod name '-web' is not a DNS-1123 subdomain"),
        ("default", "p" * 254, f"pod name '{'p' * 254}' is not a DNS-1123 subdomain"),
        ("default", "w%C3%A9b", "pod name 'wéb' is not a DNS-1123 subdomain"),
    ],
)
@pytest.mark.parametrize("action", ["upgrade", "imagepull"])
async def test_invalid_names_are_400_before_the_api_server_is_asked(
    namespace: str, name: str, wrong: str, action: str
) -> None:
    api = cluster(ota_pod())

    async with serving(agent(api)) as client:
        response = await client.post(f"/openyurt.io/v1/namespaces/{namespace}/pods/{name}/{action}")
        body = await refusal(response)

    assert (response.status, body["reason"]) == (400, "InvalidName")
    assert body["message"].startswith(wrong)
    assert api.calls == []


async def test_name_with_a_trailing_newline_is_400_invalid_name() -> None:
    api = cluster(ota_pod())

    async with serving(agent(api)) as client:
        response = await client.post("/openyurt.io/v1/namespaces/default/pods/web-x%0A/upgrade")
        assert (response.status, (await refusal(response))["reason"]) == (400, "InvalidName")

    assert api.calls == []


def _agent_samples(text: str) -> list[tuple[str, str]]:
    """(route, code) of every `edgerollout_agent_requests_total` sample."""
    samples = []
    for labels in re.findall(r"^edgerollout_agent_requests_total\{(.*)\}", text, re.MULTILINE):
        pairs = dict(re.findall(r'(\w+)="([^"]*)"', labels))
        samples.append((pairs["route"], pairs["code"]))
    return samples


async def test_requests_are_counted_by_route_template_and_code_never_by_pod_or_node() -> None:
    api = cluster(ota_pod())

    async with serving(agent(api, ota_pod())) as client:
        await client.get("/pods")
        await client.post("/openyurt.io/v1/namespaces/default/pods/gone-pod/upgrade")
        await client.post(UPGRADE)
        await client.get("/no-such-route")
        response = await client.get("/metrics")
        assert response.status == 200
        text = await response.text()

    samples = _agent_samples(text)
    assert ("/pods", "200") in samples
    assert (f"{POD_ROUTE}/upgrade", "404") in samples
    assert (f"{POD_ROUTE}/upgrade", "200") in samples
    assert ("unmatched", "404") in samples
    routes = {route for route, _ in samples}
    assert routes <= {
        "/pods",
        "/healthz",
        "/readyz",
        "/metrics",
        "/openapi.json",
        f"{POD_ROUTE}/upgrade",
        f"{POD_ROUTE}/imagepull",
        HOLD_ROUTE,
        "unmatched",
    }
    agent_lines = [line for line in text.splitlines() if "edgerollout_agent" in line]
    assert not [line for line in agent_lines if "web-x" in line or "gone-pod" in line]
    assert not [line for line in agent_lines if NODE in line]
