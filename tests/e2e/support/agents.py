"""What the agent's end-to-end tests share: a client for the agents, cluster snapshots.

These tests run on the session's lab with an agent on every node (`@pytest.mark.lab(agents=True)`),
and talk to each agent over HTTP as a process on that node would. "Nothing changed" is checked by comparing snapshots of the pods the
test made: a refusal must leave every UID, resourceVersion and deletion timestamp exactly as it was.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import aiohttp
import orjson
from kubernetes_asyncio.client.exceptions import ApiException

from edgerollout.domain.model import Condition
from edgerollout.domain.vocabulary import UPDATE_STRATEGY_ANNOTATION
from edgerollout.kube.views import pod_condition
from edgerollout_lab.cluster import Lab
from tests.e2e.support.lab import (
    LabHandle,
    by_node,
    hold_for,
    pod_admission_rule,
    pod_ready,
    wait_for,
)

JSON = dict[str, Any]
OTA = {UPDATE_STRATEGY_ANNOTATION: "ota"}  # any letter case is accepted
CACHE_AGE = "X-Edgerollout-Cache-Age"


@dataclass(frozen=True, slots=True)
class Answer:
    """One HTTP answer of an agent, read whole."""

    status: int
    content_type: str
    headers: dict[str, str]
    text: str
    seconds: float

    def json(self) -> Any:
        return orjson.loads(self.text)

    @property
    def cache_age(self) -> float:
        return float(self.headers[CACHE_AGE])


class AgentClient:
    """Requests to one node's agent, as a program on that node makes them (curl in the seeds):
    with the node's token unless told `token=None`, and any extra `headers` a test adds."""

    def __init__(self, url: str, token: str | None = None) -> None:
        self.url = url
        self.token = token

    def without_token(self) -> AgentClient:
        return AgentClient(self.url)

    async def request(
        self,
        method: str,
        path: str,
        *,
        data: bytes | None = None,
        headers: dict[str, str] | None = None,
    ) -> Answer:
        sent = {"Authorization": f"Bearer {self.token}"} if self.token else {}
        sent.update(headers or {})
        started = time.monotonic()
        async with (
            aiohttp.ClientSession() as session,
            session.request(
                method,
                f"{self.url}{path}",
                data=data,
                headers=sent,
                timeout=aiohttp.ClientTimeout(total=30),
            ) as response,
        ):
            text = await response.text()
        return Answer(
            status=response.status,
            content_type=response.content_type,
            headers=dict(response.headers),
            text=text,
            seconds=time.monotonic() - started,
        )

    async def pods(self) -> Answer:
        return await self.request("GET", "/pods")

    async def upgrade(
        self, namespace: str, pod: str, *, headers: dict[str, str] | None = None
    ) -> Answer:
        return await self.request(
            "POST", f"/openyurt.io/v1/namespaces/{namespace}/pods/{pod}/upgrade", headers=headers
        )

    async def imagepull(
        self, namespace: str, pod: str, *, headers: dict[str, str] | None = None
    ) -> Answer:
        return await self.request(
            "POST",
            f"/openyurt.io/v1/namespaces/{namespace}/pods/{pod}/imagepull",
            headers=headers,
        )

    async def hold(self, namespace: str, pod: str, **body: str) -> Answer:
        """Ask the agent to hold the pod's upgrade (`body`: `until` or `for`, and `reason`)."""
        return await self.request(
            "POST",
            hold_path(namespace, pod),
            data=orjson.dumps(body),
            headers={"Content-Type": "application/json"},
        )

    async def lift(self, namespace: str, pod: str) -> Answer:
        """Ask the agent to lift its hold on the pod's upgrade."""
        return await self.request("DELETE", hold_path(namespace, pod))

    async def listed(self, namespace: str) -> list[JSON]:
        """The pods of `namespace` in this agent's GET /pods, in the order served."""
        answer = await self.pods()
        assert answer.status == 200, answer.text
        items: list[JSON] = answer.json()["items"]
        return [pod for pod in items if pod["metadata"]["namespace"] == namespace]


def hold_path(namespace: str, pod: str) -> str:
    """The agent's route that takes (POST) and lifts (DELETE) a hold on the pod's upgrade."""
    return f"/edgerollout.io/v1/namespaces/{namespace}/pods/{pod}/hold"


def agent_of(lab: Lab, node: str) -> AgentClient:
    url = lab.node(node).agent_url
    assert url is not None, f"the lab runs no agent on {node}"
    return AgentClient(url, lab.node(node).agent_token)


def listed_condition(pod: JSON, kind: str) -> Condition | None:
    """A condition of a pod as GET /pods serves it, or None."""
    return pod_condition(pod, kind)


def refused_with(answer: Answer, code: int, reason: str) -> str:
    """Check that the answer is a refusal with this code and reason, its body exactly
    {code, reason, message} (JSON, the code that of the answer); its message."""
    assert answer.content_type == "application/json", answer
    body: JSON = answer.json()
    assert sorted(body) == ["code", "message", "reason"], body
    assert (answer.status, body["code"], body["reason"]) == (code, code, reason), body
    return str(body["message"])


def assert_refused(answer: Answer, code: int, reason: str, message: str) -> None:
    """The answer is exactly this refusal: code, reason and the whole message."""
    assert refused_with(answer, code, reason) == message


async def assert_upgrade_started(agent: AgentClient, namespace: str, pod: str) -> None:
    """The agent takes the upgrade of the pod: 200, "Start updating pod NS/POD" (text/plain)."""
    answer = await agent.upgrade(namespace, pod)
    assert (answer.status, answer.content_type, answer.text) == (
        200,
        "text/plain",
        f"Start updating pod {namespace}/{pod}",
    )


async def assert_pull_requested(agent: AgentClient, namespace: str, pod: str) -> None:
    """The agent takes the pre-pull for the pod: 200, "Image pre-pull requested for pod NS/POD"
    (text/plain)."""
    answer = await agent.imagepull(namespace, pod)
    assert (answer.status, answer.content_type, answer.text) == (
        200,
        "text/plain",
        f"Image pre-pull requested for pod {namespace}/{pod}",
    )


PodState = tuple[str, str, Any, str | None]


async def snapshot(handle: LabHandle, namespace: str) -> dict[str, PodState]:
    """Every pod of the namespace: name -> (UID, resourceVersion, deletionTimestamp, node)."""
    listed = await handle.core.list_namespaced_pod(namespace)
    return {
        pod.metadata.name: (
            pod.metadata.uid,
            pod.metadata.resource_version,
            pod.metadata.deletion_timestamp,
            pod.spec.node_name,
        )
        for pod in listed.items
    }


async def assert_nothing_changes(
    handle: LabHandle, namespace: str, state: dict[str, PodState], *, seconds: float = 3
) -> None:
    """Every pod of the namespace stays exactly as `state` (a snapshot) for `seconds`."""

    async def unchanged() -> bool:
        return await snapshot(handle, namespace) == state

    await hold_for(unchanged, seconds=seconds, what="every pod as it was")


async def assert_upgrade_held_for_the_pull(
    handle: LabHandle,
    agent: AgentClient,
    namespace: str,
    pod: str,
    state: dict[str, PodState],
    *,
    revision: str,
    pull: str,
    reason: str,
) -> None:
    """The agent refuses the upgrade of `pod` (409 ImagePullNotDone) while the pre-pull of
    `revision` it requested `pull` ("has not finished yet", "has failed"; PodImageReady=False for
    `reason`), and every pod of the namespace stays as `state`."""
    assert_refused(
        await agent.upgrade(namespace, pod),
        409,
        "ImagePullNotDone",
        f"the image pre-pull requested for pod {namespace}/{pod} (revision {revision}) {pull} "
        f"(PodImageReady=False, reason {reason}); upgrade once it has succeeded",
    )
    await assert_nothing_changes(handle, namespace, state)


def bare_pod(name: str, *, node: str, finalizers: list[str] | None = None) -> Any:
    """A pod of no controller, bound to `node` directly (no scheduler involved).

    A plain manifest, as a user would apply it (the client accepts dicts where it types models)."""
    meta: JSON = {"name": name, "labels": {"app": name}}
    if finalizers:
        meta["finalizers"] = finalizers
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": {"nodeName": node, "containers": [{"name": "nginx", "image": "nginx:1.19.4"}]},
    }


async def running(handle: LabHandle, namespace: str, name: str) -> bool:
    pod = await handle.core.read_namespaced_pod(name, namespace)
    return bool(pod.status.phase == "Running" and pod_ready(pod))


async def running_on_every_node(handle: LabHandle, namespace: str, app: str) -> dict[str, str]:
    """Wait for one Ready pod labelled `app=<app>` on each node; node -> pod name."""
    nodes = sorted(node.name for node in handle.lab.nodes)

    async def probe() -> dict[str, str] | None:
        grouped = by_node(await handle.pods(namespace, f"app={app}"))
        if sorted(grouped) != nodes or any(len(pods) != 1 for pods in grouped.values()):
            return None
        if not all(pod_ready(pods[0]) for pods in grouped.values()):
            return None
        return {node: pods[0].metadata.name for node, pods in grouped.items()}

    found: dict[str, str] = await wait_for(probe, timeout=60, what=f"a Ready {app} pod per node")
    return found


HOLD = "e2e.edgerollout.io/hold"


async def _release(handle: LabHandle, namespace: str, name: str) -> bool:
    """Try to drop the pod's finalizers; True once the pod is gone."""
    try:
        await handle.core.patch_namespaced_pod(name, namespace, {"metadata": {"finalizers": None}})
        await handle.core.read_namespaced_pod(name, namespace)
    except ApiException as error:
        if error.status == 404:
            return True
        if error.status != 422:  # 422: the hold policy is still in force
            raise
    return False


@contextlib.asynccontextmanager
async def terminating_pod(
    handle: LabHandle, namespace: str, name: str, *, node: str
) -> AsyncIterator[None]:
    """A bare pod on `node` that has been deleted and stays Terminating until the block ends.

    KWOK, the lab's kubelet, clears the finalizers of a pod being deleted; an admission rule that
    refuses that update keeps the pod's HOLD finalizer, and the pod Terminating, for as long as the
    test needs it.
    """
    kept = f"'{HOLD}' in object.metadata.finalizers"
    held_before = f"'{HOLD}' in oldObject.metadata.finalizers"
    try:
        async with pod_admission_rule(
            handle,
            namespace,
            name=f"hold-{namespace}",
            operation="UPDATE",
            expression=f"!has(oldObject.metadata.finalizers) || !({held_before}) || "
            f"(has(object.metadata.finalizers) && {kept})",
            message=f"the test holds this pod with the finalizer {HOLD}",
        ):
            await handle.core.create_namespaced_pod(
                namespace, bare_pod(name, node=node, finalizers=[HOLD])
            )
            await wait_for(
                lambda: running(handle, namespace, name), timeout=30, what=f"{name} Running"
            )

            async def held() -> bool:
                try:
                    await handle.core.patch_namespaced_pod(
                        name, namespace, {"metadata": {"finalizers": None}}, dry_run="All"
                    )
                except ApiException as error:
                    if error.status == 422:
                        return True
                    raise
                return False

            await wait_for(held, timeout=30, what="the hold policy in force")
            await handle.core.delete_namespaced_pod(name, namespace)
            before = await snapshot(handle, namespace)
            assert before[name][2] is not None

            async def settled() -> bool:
                nonlocal before
                now = await snapshot(handle, namespace)
                same, before = now == before, now
                return same

            await wait_for(
                settled, timeout=30, what=f"{name} Terminating and left alone", interval=2
            )
            yield
    finally:
        await wait_for(
            lambda: _release(handle, namespace, name), timeout=30, what=f"{name} released"
        )
