"""The agent's HTTP app served in-process against the fake API, with its pod cache filled by hand.

The node is `edge-2`. `ota_pod` is this node's pod of the OTA DaemonSet `default/web` with an
upgrade available (`PodNeedUpgrade=True` naming revision `hash-new`); each test changes only what
its scenario is about. `HangingApi` never answers a read within any sensible cloud timeout.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import AsyncIterator, Mapping
from typing import Any, Final

from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from edgerollout.agent.node_pods import NodePods
from edgerollout.agent.scoping import NodeScoping
from edgerollout.agent.server import Agent
from edgerollout.domain import vocabulary
from edgerollout.domain.vocabulary import POD_IMAGE_READY, POD_NEED_UPGRADE, REVISION_MESSAGE_PREFIX
from edgerollout.kube.api import DAEMONSETS, PODS, Resource
from edgerollout.kube.views import object_key
from edgerollout.settings import AGENT
from tests.unit.kube.fake_api import FakeApi
from tests.unit.kube.objects import NEW, STRATEGY, daemonset_json, pod_json

JSON = dict[str, Any]
Client = TestClient[web.Request, web.Application]

NODE: Final = "edge-2"
POD: Final = "web-x"
UPGRADE: Final = f"/openyurt.io/v1/namespaces/default/pods/{POD}/upgrade"
IMAGEPULL: Final = f"/openyurt.io/v1/namespaces/default/pods/{POD}/imagepull"
HOLD: Final = f"/edgerollout.io/v1/namespaces/default/pods/{POD}/hold"
OTA: Final = {STRATEGY: vocabulary.OTA}
# A caller that proved it holds the node's token is told what the API server said.
TOKEN: Final = "s3cret-token"
AUTHORIZED: Final = {"Authorization": f"Bearer {TOKEN}"}


def need_upgrade(status: str = "True", revision: str = NEW) -> JSON:
    return {
        "type": POD_NEED_UPGRADE,
        "status": status,
        "message": f"{REVISION_MESSAGE_PREFIX}{revision}",
        "lastTransitionTime": "2025-03-01T11:30:00Z",
    }


def image_ready(status: str, reason: str, revision: str = NEW) -> JSON:
    return {
        "type": POD_IMAGE_READY,
        "status": status,
        "reason": reason,
        "message": f"{REVISION_MESSAGE_PREFIX}{revision}",
        "lastTransitionTime": "2025-03-01T11:45:00Z",
    }


def ota_pod(
    name: str = POD,
    *,
    node: str = NODE,
    deleting: bool = False,
    owner_uid: str | None = "uid-ds-web",
    conditions: list[JSON] | None = None,
) -> JSON:
    return pod_json(
        name,
        node=node,
        revision_hash="hash-old",
        owner_uid=owner_uid,
        deleting=deleting,
        conditions=[need_upgrade()] if conditions is None else conditions,
    )


def cluster(
    *pods: JSON, strategy: dict[str, str] | None = None, api: FakeApi | None = None
) -> FakeApi:
    """An API server holding the DaemonSet `default/web` (OTA unless told) and the pods."""
    api = FakeApi() if api is None else api
    api.put(DAEMONSETS, daemonset_json(annotations=OTA if strategy is None else strategy))
    for pod in pods:
        api.put(PODS, pod)
    return api


def node_pods(api: FakeApi, *cached: JSON, synced: bool = True) -> NodePods:
    pods = NodePods(api, node_name=NODE, cache_dir=None)
    for pod in cached:
        meta = pod["metadata"]
        pods.informer.store[object_key(meta["namespace"], meta["name"])] = pod
    if synced:
        pods.informer.synced.set()
    return pods


def agent(
    api: FakeApi,
    *cached: JSON,
    token: str | None = None,
    cloud_timeout: float = 1.0,
    synced: bool = True,
) -> Agent:
    """The agent of `NODE`, with node scoping proven unless a test says otherwise."""
    settings = dataclasses.replace(AGENT, node_name=NODE, cloud_timeout=cloud_timeout)
    scoping = NodeScoping(enforced=True, detail="proven by the test")
    return Agent(settings, api, node_pods(api, *cached, synced=synced), scoping, token=token)


@contextlib.asynccontextmanager
async def serving(subject: Agent) -> AsyncIterator[Client]:
    async with TestClient(TestServer(subject.app())) as client:
        yield client


async def refusal(response: Any) -> JSON:
    """The JSON body of a refusal, checked to be exactly {code, reason, message}."""
    assert response.content_type == "application/json"
    body: JSON = await response.json()
    assert sorted(body) == ["code", "message", "reason"]
    assert body["code"] == response.status
    return body


def refused(code: int, reason: str, message: str) -> tuple[int, JSON]:
    """A refusal as `posted_refusal` returns it: the status, and the body that repeats it."""
    return code, {"code": code, "reason": reason, "message": message}


async def posted_refusal(
    api: FakeApi,
    path: str,
    *,
    token: str | None = None,
    headers: Mapping[str, str] | None = None,
) -> tuple[int, JSON]:
    """POST `path` to the agent on `api`: the answer's status and its refusal body, checked."""
    async with serving(agent(api, token=token)) as client:
        response = await client.post(path, headers=headers)
        return response.status, await refusal(response)


class HangingApi(FakeApi):
    """An API server whose reads hang (a link that drops packets instead of resetting)."""

    def __init__(self, hang: float) -> None:
        super().__init__()
        self.hang = hang

    async def get(self, resource: Resource, name: str, *, namespace: str | None = None) -> JSON:
        await asyncio.sleep(self.hang)
        return await super().get(resource, name, namespace=namespace)
