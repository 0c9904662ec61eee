"""What end-to-end tests share: a handle on the running lab and patient, explicit waiting."""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar, cast

from kubernetes_asyncio import client, config
from kubernetes_asyncio.client.exceptions import ApiException

from edgerollout.domain.model import Condition, ConditionStatus
from edgerollout.domain.vocabulary import DAEMONSET_KIND, SUCCESSFUL_DELETE
from edgerollout.kube import views
from edgerollout.kube.recorder import COMPONENT as CONTROLLER_COMPONENT
from edgerollout_lab import cluster, link
from edgerollout_lab.api import node_manifest
from edgerollout_lab.cluster import Lab

T = TypeVar("T")


def served(model: Any) -> Any:
    """A model of the generated client as the API server serves it: camelCase keys, unset fields
    left out, times in ISO 8601 (the client's own serialization), for `kube.views` to read."""
    if isinstance(model, list | tuple):
        return [served(item) for item in model]
    if isinstance(model, dict):
        return {key: served(value) for key, value in model.items()}
    if isinstance(model, datetime.datetime | datetime.date):
        return model.isoformat()
    if hasattr(model, "openapi_types"):
        return {
            model.attribute_map[attribute]: served(value)
            for attribute in model.openapi_types
            if (value := getattr(model, attribute)) is not None
        }
    return model


async def wait_for(
    probe: Callable[[], Awaitable[T | None]],
    *,
    timeout: float,
    what: str,
    interval: float = 0.25,
) -> T:
    """Poll `probe` until it returns something other than None/False; fail saying what was awaited."""
    deadline = time.monotonic() + timeout
    last: T | None = None
    while True:
        last = await probe()
        if last is not None and last is not False:
            return last
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")
        await asyncio.sleep(interval)


async def hold_for(
    probe: Callable[[], Awaitable[bool]], *, seconds: float, what: str, interval: float = 0.5
) -> None:
    """Assert that `probe` stays true for the whole period (a stall is a property over time)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        assert await probe(), f"expected {what} to hold for {seconds:.0f} s, but it stopped"
        await asyncio.sleep(interval)


@dataclass
class LabHandle:
    """The running lab plus API clients for the test's use."""

    lab: Lab
    api: Any
    core: client.CoreV1Api
    apps: client.AppsV1Api

    async def disconnect(self, *nodes: str) -> None:
        await asyncio.to_thread(cluster.disconnect, self.lab.folder, list(nodes))

    async def connect(self, *nodes: str) -> None:
        await asyncio.to_thread(cluster.connect, self.lab.folder, list(nodes))

    async def cut_off(self, *nodes: str, timeout: float | None = None) -> None:
        """Cut the nodes' links and wait until each is marked Ready=Unknown, its Lease expired
        (by default up to 20 s past the lab's grace period, for each)."""
        await self.disconnect(*nodes)
        for name in nodes:
            await self.wait_node_ready(
                name, "Unknown", timeout=timeout or self.lab.node_monitor_grace_seconds + 20
            )

    async def reconnect(self, *nodes: str, timeout: float = 30) -> None:
        """Restore the nodes' links and wait until each is Ready again."""
        await self.connect(*nodes)
        for name in nodes:
            await self.wait_node_ready(name, "True", timeout=timeout)

    async def node_ready(self, name: str) -> str:
        """The status of the node's Ready condition: "True", "False" or "Unknown" (also if none)."""
        node = await self.core.read_node(name)
        return str(views.node_ready_condition(served(node)) or ConditionStatus.UNKNOWN)

    async def wait_node_ready(self, name: str, status: str, *, timeout: float) -> None:
        async def probe() -> bool:
            return await self.node_ready(name) == status

        await wait_for(probe, timeout=timeout, what=f"node {name} Ready={status}")

    async def pods(self, namespace: str, selector: str) -> list[client.V1Pod]:
        listed = await self.core.list_namespaced_pod(namespace, label_selector=selector)
        return sorted(listed.items, key=lambda pod: (pod.spec.node_name or "", pod.metadata.name))


async def restore_node(kube: LabHandle, name: str) -> None:
    """Bring a deleted lab node back as the lab made it, linked and Ready."""
    try:
        await kube.core.create_node(cast(Any, node_manifest(name)))
    except ApiException as error:
        if error.status != 409:  # 409 Conflict: it was never deleted
            raise
    await kube.reconnect(name, timeout=60)


def pod_ready(pod: client.V1Pod) -> bool:
    """Whether the pod's Ready condition is True."""
    return views.pod_ready(served(pod))


def images(pod: client.V1Pod) -> list[str]:
    return list(views.pod_images(served(pod)))


def by_node(pods: list[client.V1Pod]) -> dict[str, list[client.V1Pod]]:
    grouped: dict[str, list[client.V1Pod]] = {}
    for pod in pods:
        grouped.setdefault(views.bound_node(served(pod)) or "", []).append(pod)
    return grouped


def daemonset(
    name: str, *, image: str, strategy: dict[str, Any], annotations: dict[str, str] | None = None
) -> Any:
    """The DaemonSet users run in the seed scenarios (nginx), with the given update strategy.

    A plain manifest, as a user would apply it (the client accepts dicts where it types models)."""
    return {
        "apiVersion": "apps/v1",
        "kind": DAEMONSET_KIND,
        "metadata": {"name": name, "annotations": annotations or {}},
        "spec": {
            "selector": {"matchLabels": {"app": name}},
            "updateStrategy": strategy,
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "nginx", "image": image}]},
            },
        },
    }


# A window open all day (`edgerollout.io/maintenance-window`, `edgerollout.io/prepull-window`).
ALL_DAY = "Mon-Sun 00:00-24:00"


def closed_window() -> str:
    """A daily window that opens two hours from now (UTC) and lasts one: closed for any test."""
    opens = datetime.datetime.now(datetime.UTC) + datetime.timedelta(hours=2)
    return f"Mon-Sun {opens:%H:%M}-{opens + datetime.timedelta(hours=1):%H:%M}"


async def set_image(handle: LabHandle, namespace: str, name: str, image: str) -> None:
    patch = {"spec": {"template": {"spec": {"containers": [{"name": "nginx", "image": image}]}}}}
    await handle.apps.patch_namespaced_daemon_set(name, namespace, patch)


async def events(kube: LabHandle, namespace: str, *, reason: str | None = None) -> list[Any]:
    """Events in the namespace recorded by edgerollout's controller, oldest first."""
    listed = await kube.core.list_namespaced_event(namespace)
    found = [
        event
        for event in listed.items
        if event.reporting_component == CONTROLLER_COMPONENT
        and (reason is None or event.reason == reason)
    ]
    return sorted(found, key=lambda event: (event.first_timestamp, event.metadata.name))


async def deleted_on(kube: LabHandle, namespace: str) -> list[str]:
    """The nodes of the controller's SuccessfulDelete Events in the namespace, sorted (each Event
    says `Deleted pod: POD on node NODE: WHY`)."""
    return sorted(
        e.message.split(" on node ")[1].split(":")[0]
        for e in await events(kube, namespace, reason=SUCCESSFUL_DELETE)
    )


def condition(pod: client.V1Pod, kind: str) -> Condition | None:
    """The pod's condition of that type, or None (its status compares equal to "True" etc.)."""
    return views.pod_condition(served(pod), kind)


@dataclass(frozen=True, order=True)
class Shape:
    """What a lab is made of: `nodes` simulated nodes, `real_nodes` real ones (a kubelet and
    containerd each) beside them, and edgerollout's agent on every node or on none."""

    nodes: int = 4
    real_nodes: int = 0
    agents: bool = False

    @property
    def name(self) -> str:
        """A folder name telling the shape, as `lab-3-agents`."""
        real = f"-real-{self.real_nodes}" if self.real_nodes else ""
        return f"lab-{self.nodes}{real}{'-agents' if self.agents else ''}"

    def up(self, folder: Path) -> Lab:
        return cluster.up(
            folder,
            nodes=self.nodes,
            say=lambda _: None,
            agents=self.agents,
            real_nodes=self.real_nodes,
        )


class SessionLabs:
    """The session's labs, one running at a time (two cores; real nodes claim the machine): the
    lab of the shape last asked for, replaced only when a test asks for another shape."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.current: Lab | None = None
        self.shape: Shape | None = None

    def get(self, shape: Shape) -> Lab:
        if self.current is not None and self.shape == shape:
            return self.current
        self.close()
        self.current, self.shape = shape.up(self.root / shape.name), shape
        return self.current

    def close(self) -> None:
        if self.current is not None:
            cluster.down(self.current.folder, say=lambda _: None)
            self.current, self.shape = None, None


@contextlib.contextmanager
def lab_of_its_own(
    folder: Path, *, nodes: int, agents: bool = False, real_nodes: int = 0
) -> Iterator[Lab]:
    """A lab apart from the session's, for tests that change it for good; stopped when the block
    ends, whatever happened. With `agents`, every node runs edgerollout's agent; `real_nodes` adds
    real nodes (a kubelet and containerd each) beside the simulated ones."""
    lab = Shape(nodes=nodes, real_nodes=real_nodes, agents=agents).up(folder)
    try:
        yield lab
    finally:
        cluster.down(lab.folder, say=lambda _: None)


@contextlib.asynccontextmanager
async def lab_handle(lab: Lab) -> AsyncIterator[LabHandle]:
    """API clients as the lab's admin; every cut link is restored when the block ends."""
    configuration = client.Configuration()
    await config.load_kube_config(
        config_file=str(lab.kubeconfig), client_configuration=configuration
    )
    async with client.ApiClient(configuration) as api:
        handle = LabHandle(lab=lab, api=api, core=client.CoreV1Api(api), apps=client.AppsV1Api(api))
        try:
            yield handle
        finally:
            _, _, wanted = link.read_wanted(lab.folder)
            cut = sorted(name for name, up in wanted.items() if not up)
            if cut:
                await handle.reconnect(*cut)


@contextlib.asynccontextmanager
async def fresh_namespace(handle: LabHandle, *, prefix: str = "t") -> AsyncIterator[str]:
    """A fresh namespace, ready for pods (its default ServiceAccount exists), deleted afterwards."""
    name = f"{prefix}-{uuid.uuid4().hex[:8]}"
    body: Any = {"metadata": {"name": name}}
    await handle.core.create_namespace(body)

    async def default_service_account() -> bool:
        try:
            await handle.core.read_namespaced_service_account("default", name)
        except ApiException as error:
            if error.status == 404:
                return False
            raise
        return True

    await wait_for(default_service_account, timeout=30, what=f"ServiceAccount {name}/default")
    try:
        yield name
    finally:
        try:
            await handle.core.delete_namespace(name)
        except ApiException as error:
            if error.status != 404:
                raise


@contextlib.asynccontextmanager
async def pod_admission_rule(
    handle: LabHandle, namespace: str, *, name: str, operation: str, expression: str, message: str
) -> AsyncIterator[None]:
    """A ValidatingAdmissionPolicy, and its binding, that deny `operation` on the namespace's pods
    unless `expression` (CEL) holds, saying `message`; both deleted when the block ends."""
    admission = client.AdmissionregistrationV1Api(handle.api)
    policy: Any = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": name},
        "spec": {
            "failurePolicy": "Fail",
            "matchConstraints": {
                "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": namespace}},
                "resourceRules": [
                    {
                        "apiGroups": [""],
                        "apiVersions": ["v1"],
                        "operations": [operation],
                        "resources": ["pods"],
                    }
                ],
            },
            "validations": [{"expression": expression, "message": message}],
        },
    }
    binding: Any = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": name},
        "spec": {"policyName": name, "validationActions": ["Deny"]},
    }
    await admission.create_validating_admission_policy(policy)
    await admission.create_validating_admission_policy_binding(binding)
    try:
        yield
    finally:
        with contextlib.suppress(ApiException):
            await admission.delete_validating_admission_policy_binding(name)
        with contextlib.suppress(ApiException):
            await admission.delete_validating_admission_policy(name)
