"""The few API calls the lab makes itself: create its nodes, cut and restore their links, read their
state.

Patches here send plain dicts, which the client sends as strategic-merge patches: for labels and
annotations that is the same as a merge patch.
"""

from __future__ import annotations

import asyncio
import datetime
import json
import time
from collections.abc import AsyncIterator, Awaitable, Collection, Iterable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, cast

from kubernetes_asyncio import client, config
from kubernetes_asyncio.client.exceptions import ApiException

from edgerollout.domain.model import ConditionStatus
from edgerollout.kube.views import node_from_api, node_ready_condition, pod_ready
from edgerollout_lab.kwok_stages import LINK_LABEL

RECONNECTED_ANNOTATION = "lab.edgerollout.io/link-restored"
# The simulated kubelets' user, and the admission policy that refuses their writes for cut nodes.
KWOK_USER = "kwok"
CUT_LINKS_POLICY = "lab.edgerollout.io-cut-links"
NO_NODE_IS_CUT = "lab.edgerollout.io-no-node-is-cut"


@asynccontextmanager
async def api_client(kubeconfig: Path) -> AsyncIterator[Any]:
    configuration = client.Configuration()
    await config.load_kube_config(config_file=str(kubeconfig), client_configuration=configuration)
    async with client.ApiClient(configuration) as api:
        yield api


def node_manifest(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                "node-role.kubernetes.io/edge": "",
                "type": "kwok",
                LINK_LABEL: "up",
            },
            "annotations": {"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"},
        },
        "status": {
            "allocatable": {"cpu": "32", "memory": "256Gi", "pods": "110"},
            "capacity": {"cpu": "32", "memory": "256Gi", "pods": "110"},
        },
    }


async def create_nodes(kubeconfig: Path, names: list[str], *, parallel: int = 32) -> None:
    async with api_client(kubeconfig) as api:
        core = client.CoreV1Api(api)
        gate = asyncio.Semaphore(parallel)

        async def create(name: str) -> None:
            async with gate:
                try:
                    await core.create_node(cast(Any, node_manifest(name)))
                except ApiException as error:
                    if error.status != 409:  # 409 Conflict: it exists from an earlier attempt
                        raise

        await asyncio.gather(*(create(name) for name in names))


def cut_links_policy(cut: list[str]) -> list[dict[str, Any]]:
    """A ValidatingAdmissionPolicy (and its binding) refusing every write KWOK makes for the nodes
    in `cut`: the Node, its status, its Lease.

    The node's kubelet is behind the cut link and cannot reach the API server; KWOK, one process for
    every node, is not. It stops acting for a node once the node leaves its watch, yet at 1,000
    nodes cut nodes were seen reporting Ready minutes into a cut. The cut nodes are the rules'
    `resourceNames`, so that the API server looks at nothing else: a rule over every Lease renewal
    (500 a second at 1,000 nodes) cost the idle lab a tenth of its API server's CPU. A rule whose
    list is empty would match every name, so an empty cut is a name no node has.
    """
    names = sorted(cut) or [NO_NODE_IS_CUT]
    operations = ["CREATE", "UPDATE", "DELETE"]
    policy = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": CUT_LINKS_POLICY},
        "spec": {
            "failurePolicy": "Fail",
            "matchConstraints": {
                "resourceRules": [
                    {
                        "apiGroups": [""],
                        "apiVersions": ["v1"],
                        "operations": operations,
                        "resources": ["nodes", "nodes/status"],
                        "resourceNames": names,
                    },
                    {
                        "apiGroups": ["coordination.k8s.io"],
                        "apiVersions": ["v1"],
                        "operations": operations,
                        "resources": ["leases"],
                        "resourceNames": names,
                    },
                ]
            },
            "matchConditions": [
                {
                    "name": "from-the-simulated-kubelets",
                    "expression": f"request.userInfo.username == '{KWOK_USER}'",
                }
            ],
            "validations": [
                {
                    "expression": "false",
                    "messageExpression": "'the link of node ' + request.name + ' is cut'",
                    "reason": "Forbidden",
                }
            ],
        },
    }
    binding = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": CUT_LINKS_POLICY},
        "spec": {"policyName": CUT_LINKS_POLICY, "validationActions": ["Deny"]},
    }
    return [policy, binding]


async def install_cut_links_policy(kubeconfig: Path) -> None:
    """Create the policy of `cut_links_policy` with no node cut, and its binding."""
    policy, binding = cut_links_policy([])
    async with api_client(kubeconfig) as api:
        admission = client.AdmissionregistrationV1Api(api)
        await admission.create_validating_admission_policy(cast(Any, policy))
        await admission.create_validating_admission_policy_binding(cast(Any, binding))


def cut_nodes_of(policy: dict[str, Any]) -> set[str]:
    """The nodes a policy of `cut_links_policy` names."""
    names = set(policy["spec"]["matchConstraints"]["resourceRules"][0]["resourceNames"])
    return names - {NO_NODE_IS_CUT}


async def set_links(
    kubeconfig: Path,
    names: list[str],
    *,
    up: bool,
    since: datetime.datetime,
    real: Collection[str] = (),
    mark: bool = False,
) -> None:
    """Cut the nodes' links at the API server (or restore them), through one client.

    Cutting: KWOK's writes for the nodes are refused first, then KWOK lets go of them; with
    `mark` (a fleet lab, whose Leases outlast any test) the nodes are then marked as the node
    lifecycle controller marks a node whose Lease expired (`mark_unreachable`). Restoring: its
    writes are allowed first, then it takes the nodes over again, and their pods are touched once
    it has (`since`: when the link came back). The `real` nodes among them have a kubelet of their
    own: KWOK never takes them, so they never carry its link label."""
    simulated = [name for name in names if name not in real]
    async with api_client(kubeconfig) as api:
        await _set_cut_links(api, names, cut=not up)
        await _set_link_label(api, simulated, up=up)
        if up:
            await _wake_pods_after_reconnect(api, simulated, since=since, marked=mark)
        elif mark:
            await mark_unreachable(api, simulated, since=since)


# Nodes reconnected (or marked) at once: 2,000 nodes one after the other took minutes.
RECONNECT_PARALLELISM = 32


async def _at_most_at_once(calls: Iterable[Awaitable[object]]) -> None:
    """Await every call, `RECONNECT_PARALLELISM` at a time."""
    gate = asyncio.Semaphore(RECONNECT_PARALLELISM)

    async def gated(call: Awaitable[object]) -> None:
        async with gate:
            await call

    await asyncio.gather(*(gated(call) for call in calls))


async def mark_unreachable(api: Any, names: list[str], *, since: datetime.datetime) -> None:
    """What the node lifecycle controller does to a node whose Lease expired: its `Ready`
    condition `Unknown` ("Kubelet stopped posting node status."), and each of its pods' `Ready`
    condition `False` (`MarkPodsNotReady`). The controller then adds the `unreachable` taints
    itself, from the condition, as for any node."""
    core = client.CoreV1Api(api)
    at = since.strftime("%Y-%m-%dT%H:%M:%SZ")
    unknown = {
        "status": {
            "conditions": [
                {
                    "type": "Ready",
                    "status": "Unknown",
                    "reason": "NodeStatusUnknown",
                    "message": "Kubelet stopped posting node status.",
                    "lastHeartbeatTime": at,
                    "lastTransitionTime": at,
                }
            ]
        }
    }
    await _at_most_at_once(core.patch_node_status(name, unknown) for name in names)
    not_ready = {
        "status": {"conditions": [{"type": "Ready", "status": "False", "lastTransitionTime": at}]}
    }
    cut = set(names)
    token: str | None = None
    while True:
        # Unparsed: the body is read as JSON, not as generated models.
        page: dict[str, Any] = {"_continue": token} if token else {}
        response: Any = await core.list_pod_for_all_namespaces(
            limit=500, _preload_content=False, **page
        )
        listed = json.loads(await response.read())
        await _at_most_at_once(
            core.patch_namespaced_pod_status(
                pod["metadata"]["name"], pod["metadata"]["namespace"], not_ready
            )
            for pod in listed["items"]
            if (pod.get("spec") or {}).get("nodeName") in cut and pod_ready(pod)
        )
        token = listed["metadata"].get("continue")
        if not token:
            return


async def _set_cut_links(api: Any, names: list[str], *, cut: bool) -> None:
    """Add the nodes to the policy's cut nodes (or take them off), keeping the others."""
    admission = client.AdmissionregistrationV1Api(api)
    while True:
        current = api.sanitize_for_serialization(
            await admission.read_validating_admission_policy(CUT_LINKS_POLICY)
        )
        nodes = cut_nodes_of(current)
        nodes = nodes | set(names) if cut else nodes - set(names)
        policy, _ = cut_links_policy(sorted(nodes))
        policy["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
        try:
            await admission.replace_validating_admission_policy(CUT_LINKS_POLICY, cast(Any, policy))
        except ApiException as error:
            if error.status != 409:  # 409: changed meanwhile; read it again
                raise
        else:
            return


async def _set_link_label(api: Any, names: list[str], *, up: bool) -> None:
    body = {"metadata": {"labels": {LINK_LABEL: "up" if up else "down"}}}
    core = client.CoreV1Api(api)
    for name in names:
        await core.patch_node(name, body)


async def node_readiness(kubeconfig: Path) -> dict[str, str]:
    """Each node's Ready condition status: "True", "False" or "Unknown" ("Unknown" if absent)."""
    async with api_client(kubeconfig) as api:
        # Unparsed: the body is read as JSON, not as generated models.
        response: Any = await client.CoreV1Api(api).list_node(_preload_content=False)
        listed = json.loads(await response.read())
    return {
        node_from_api(item).name: str(node_ready_condition(item) or ConditionStatus.UNKNOWN)
        for item in listed["items"]
    }


async def wait_nodes(
    kubeconfig: Path, names: list[str], *, status: str, timeout: float
) -> dict[str, str]:
    """Wait until every named node's Ready condition has the given status; return the last view."""
    deadline = time.monotonic() + timeout
    wanted = set(names)
    while True:
        seen = await node_readiness(kubeconfig)
        pending = sorted(name for name in wanted if seen.get(name) != status)
        if not pending:
            return seen
        if time.monotonic() > deadline:
            shown = ", ".join(f"{name}={seen.get(name, 'absent')}" for name in pending[:10])
            raise TimeoutError(
                f"{len(pending)} node(s) did not reach Ready={status} within {timeout:.0f} s: "
                f"{shown}"
            )
        await asyncio.sleep(0.5)


async def wait_default_service_account(kubeconfig: Path, *, timeout: float) -> None:
    """Pods need their namespace's `default` ServiceAccount, which the controller-manager makes."""
    deadline = time.monotonic() + timeout
    async with api_client(kubeconfig) as api:
        core = client.CoreV1Api(api)
        while True:
            try:
                await core.read_namespaced_service_account("default", "default")
            except ApiException as error:
                if error.status != 404 or time.monotonic() > deadline:
                    raise
                await asyncio.sleep(0.5)
            else:
                return


async def _lease_renewed_since(coordination: Any, name: str, since: datetime.datetime) -> bool:
    try:
        lease = await coordination.read_namespaced_lease(name, "kube-node-lease")
    except ApiException as error:
        if error.status == 404:
            return False
        raise
    renewed = lease.spec.renew_time
    return renewed is not None and renewed > since


async def _node_ready(core: Any, name: str) -> bool:
    response: Any = await core.read_node(name, _preload_content=False)
    return node_ready_condition(json.loads(await response.read())) is ConditionStatus.TRUE


async def _wake_pods_after_reconnect(
    api: Any,
    names: list[str],
    *,
    since: datetime.datetime,
    marked: bool = False,
    timeout: float = 30,
) -> None:
    """Once KWOK holds each node again, touch its pods so KWOK looks at them afresh.

    KWOK re-lists a node's pods when it takes the node over again, but can race with its own node
    cache and skip them; a pod deleted while the link was down would then stay Terminating for good.
    An annotation change is an event KWOK cannot miss, and it alters nothing a kubelet owns.
    KWOK has taken a node back once it renewed its Lease; a `marked` node's hour-long Lease may
    not be due, but KWOK makes the node Ready again (it was marked Unknown) — on the next event
    about the node after the API server lets it write again, which the policy's change may reach
    after the link label's; the node is touched every second until KWOK has.
    """
    stamp = since.isoformat()
    core = client.CoreV1Api(api)
    coordination = client.CoordinationV1Api(api)
    deadline = time.monotonic() + timeout

    async def wake(name: str) -> None:
        touched = time.monotonic()
        while not (
            await _node_ready(core, name)
            if marked
            else await _lease_renewed_since(coordination, name, since)
        ):
            if time.monotonic() > deadline:
                raise TimeoutError(f"KWOK did not take node {name} back within {timeout:.0f} s")
            if marked and time.monotonic() - touched > 1.0:
                touch = {"metadata": {"annotations": {RECONNECTED_ANNOTATION: str(time.time())}}}
                await core.patch_node(name, touch)
                touched = time.monotonic()
            await asyncio.sleep(0.2)
        pods = await core.list_pod_for_all_namespaces(field_selector=f"spec.nodeName={name}")
        for pod in pods.items:
            body = {"metadata": {"annotations": {RECONNECTED_ANNOTATION: stamp}}}
            try:
                await core.patch_namespaced_pod(pod.metadata.name, pod.metadata.namespace, body)
            except ApiException as error:
                if error.status != 404:  # 404: the pod finished deleting meanwhile
                    raise

    await _at_most_at_once(wake(name) for name in names)
