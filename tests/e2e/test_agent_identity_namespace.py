"""The agent's identity installed into another namespace keeps its limits (design §8.3).

An operator who installs with kustomize `namespace: edge-system` (or a Helm release namespace)
must not lose the own-node admission policy: the policy matches the ServiceAccount
`edgerollout-agent` of any namespace. A lab of its own, without the lab's agents (which install the
identity into edgerollout-system), installs the identity of deploy/base through such an overlay and acts
as edge-1's agent with a token bound to a pod on edge-1.
"""

from __future__ import annotations

import asyncio
import functools
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
import yaml
from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from edgerollout.domain.vocabulary import AGENT_OWN_NODE_POLICY
from edgerollout_lab.agents import agent_tokens
from edgerollout_lab.api import api_client
from edgerollout_lab.cluster import Lab
from edgerollout_lab.kubeconfig import read_kubeconfig, write_kubeconfig
from tests.e2e.support.agents import bare_pod, running, snapshot
from tests.e2e.support.lab import lab_handle, lab_of_its_own, wait_for

ROOT = Path(__file__).resolve().parents[2]
IDENTITY = ROOT / "deploy" / "base" / "agent-identity.yaml"
NAMESPACE = "edge-system"
POLICY = AGENT_OWN_NODE_POLICY
EVENTS_POLICY = "edgerollout-agent-events"
WORKLOADS = "shop"


def _kubectl(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    kubectl = str(Path(sys.executable).parent / "kubectl")
    return subprocess.run(
        [kubectl, *args], input=stdin, capture_output=True, text=True, timeout=120, check=False
    )


def _overlay(folder: Path) -> Path:
    """A kustomization that installs the agent's identity of deploy/base into edge-system, as an
    operator's overlay would (kustomize loads no file from outside its folder: it is copied)."""
    folder.mkdir(parents=True)
    shutil.copyfile(IDENTITY, folder / IDENTITY.name)
    (folder / "kustomization.yaml").write_text(
        yaml.safe_dump(
            {
                "apiVersion": "kustomize.config.k8s.io/v1beta1",
                "kind": "Kustomization",
                "namespace": NAMESPACE,
                "resources": [IDENTITY.name],
            }
        )
    )
    return folder


@pytest.fixture(scope="module")
def edge_system_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Lab, Path]]:
    """A two-node lab with the agent's identity installed into edge-system; the agent kubeconfig
    of edge-1 (a token bound to a pod on edge-1)."""
    folder = tmp_path_factory.mktemp("agent-identity-namespace")
    overlay = _overlay(folder / "overlay")
    with lab_of_its_own(folder / "lab", nodes=2) as lab:
        rendered = _kubectl("kustomize", str(overlay))
        assert rendered.returncode == 0, rendered.stderr
        namespaces = {
            doc["metadata"].get("namespace")
            for doc in yaml.safe_load_all(rendered.stdout)
            if doc and doc["kind"] in ("ServiceAccount",)
        }
        assert namespaces == {NAMESPACE}
        applied = _kubectl(
            f"--kubeconfig={lab.kubeconfig}",
            "apply",
            "--server-side",
            "-f",
            "-",
            stdin=rendered.stdout,
        )
        assert applied.returncode == 0, applied.stderr
        token = agent_tokens(lab.kubeconfig, ["edge-1"], namespace=NAMESPACE)["edge-1"]
        admin = read_kubeconfig(lab.kubeconfig)
        kubeconfig = write_kubeconfig(
            folder / "agent-edge-1.kubeconfig",
            server=admin.server,
            ca_file=admin.ca_file,
            user=f"system:serviceaccount:{NAMESPACE}:edgerollout-agent",
            token=token,
        )
        yield lab, kubeconfig


def _denial(error: ApiException) -> tuple[int, str]:
    assert error.body is not None
    status = orjson.loads(error.body)
    return int(error.status), str(status["message"])


async def test_agent_identity_in_edge_system_cannot_touch_another_nodes_pod_or_labels(
    edge_system_lab: tuple[Lab, Path],
) -> None:
    lab, agent_kubeconfig = edge_system_lab
    async with lab_handle(lab) as handle:
        await handle.core.create_namespace(
            client.V1Namespace(metadata=client.V1ObjectMeta(name=WORKLOADS))
        )
        for name, node in (("on-edge-1", "edge-1"), ("on-edge-2", "edge-2")):
            await handle.core.create_namespaced_pod(WORKLOADS, bare_pod(name, node=node))
        for name in ("on-edge-1", "on-edge-2"):
            await wait_for(
                functools.partial(running, handle, WORKLOADS, name), timeout=60, what=name
            )
        before = await snapshot(handle, WORKLOADS)
        labels_before = (
            await handle.core.read_namespaced_pod("on-edge-1", WORKLOADS)
        ).metadata.labels

        async with api_client(agent_kubeconfig) as api:
            agent = client.CoreV1Api(api)

            async def policy_in_force() -> bool:
                # The policy reaches the API server's admission a moment after it is applied.
                try:
                    await agent.delete_namespaced_pod("on-edge-2", WORKLOADS, dry_run="All")
                except ApiException as error:
                    return error.status == 403 and POLICY in _denial(error)[1]
                return False

            await wait_for(policy_in_force, timeout=30, what="the own-node policy in force")
            with pytest.raises(ApiException) as deleting:
                await agent.delete_namespaced_pod("on-edge-2", WORKLOADS)
            with pytest.raises(ApiException) as labelling:
                await agent.patch_namespaced_pod_status(
                    "on-edge-1", WORKLOADS, {"metadata": {"labels": {"app": "forged"}}}
                )
            # A status update is an allow-list: no finalizer (a pod stuck Terminating), no phase
            # (the DaemonSet controller replaces a Failed pod outside any budget).
            beyond_its_condition = []
            for patch in (
                {"metadata": {"finalizers": ["example.com/hold"]}},
                {"status": {"phase": "Failed"}},
                {"status": {"startTime": "2020-01-01T00:00:00Z"}},
            ):
                with pytest.raises(ApiException) as caught:
                    await agent.patch_namespaced_pod_status(
                        "on-edge-1", WORKLOADS, patch, dry_run="All"
                    )
                beyond_its_condition.append(_denial(caught.value))
            # What it is there for still works: a dry-run delete of its own node's pod, and its
            # one condition.
            await agent.delete_namespaced_pod("on-edge-1", WORKLOADS, dry_run="All")
            waiting = {"type": "PodImageReady", "status": "False", "reason": "WaitPullImage"}
            await agent.patch_namespaced_pod_status(
                "on-edge-1", WORKLOADS, {"status": {"conditions": [waiting]}}, dry_run="All"
            )

        assert _denial(deleting.value) == (
            403,
            f"pods \"on-edge-2\" is forbidden: ValidatingAdmissionPolicy '{POLICY}' with binding "
            f"'{POLICY}' denied request: the edgerollout agent may only change pods bound to its "
            "own node: this pod is on edge-2, the token is bound to a pod on edge-1",
        )
        only_its_condition = (
            403,
            f"pods \"on-edge-1\" is forbidden: ValidatingAdmissionPolicy '{POLICY}' with binding "
            f"'{POLICY}' denied request: the edgerollout agent's status update may only change "
            "the PodImageReady and edgerollout.io/UpgradeHeld conditions: not the pod's metadata, "
            "another condition or any other status field",
        )
        assert _denial(labelling.value) == only_its_condition
        assert beyond_its_condition == [only_its_condition] * 3
        await asyncio.sleep(1)
        assert await snapshot(handle, WORKLOADS) == before
        labels_after = (
            await handle.core.read_namespaced_pod("on-edge-1", WORKLOADS)
        ).metadata.labels
        assert labels_after == labels_before == {"app": "on-edge-1"}


def _agent_event(node: str, **changes: Any) -> Any:
    """The agent's one Event (src/edgerollout/agent/scoping.py) about `node`, `changes` on top
    (a dict, which the client sends as it is)."""
    event: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": f"{node}.0123456789abcdef", "namespace": "default"},
        "involvedObject": {"apiVersion": "v1", "kind": "Node", "name": node},
        "type": "Warning",
        "reason": "NodeScopingNotEnforced",
        "message": "the edgerollout agent refuses every change: the policy is missing",
        "source": {"component": "edgerollout-agent", "host": node},
        "reportingComponent": "edgerollout-agent",
        "reportingInstance": node,
        "firstTimestamp": "2026-11-28T10:00:00Z",
        "lastTimestamp": "2026-11-28T10:00:00Z",
        "count": 1,
    }
    event.update(changes)
    return event


async def test_agent_identity_may_write_only_its_warning_about_its_own_node(
    edge_system_lab: tuple[Lab, Path],
) -> None:
    _, agent_kubeconfig = edge_system_lab
    refused = {
        "about-edge-2": _agent_event("edge-2"),
        "another-reason": _agent_event("edge-1", reason="NodeNotReady"),
        "a-normal-event": _agent_event("edge-1", type="Normal"),
        "as-the-kubelet": _agent_event("edge-1", source={"component": "kubelet", "host": "edge-1"}),
        "a-long-message": _agent_event("edge-1", message="m" * 1025),
    }
    async with api_client(agent_kubeconfig) as api:
        agent = client.CoreV1Api(api)
        denials = {}
        for name, event in refused.items():
            with pytest.raises(ApiException) as caught:
                await agent.create_namespaced_event("default", event, dry_run="All")
            denials[name] = _denial(caught.value)
        # About a pod of its own node: not the agent's one Event either.
        about_a_pod = _agent_event(
            "edge-1",
            metadata={"name": "e", "namespace": "default"},
            involvedObject={"apiVersion": "v1", "kind": "Pod", "name": "p", "namespace": "default"},
        )
        with pytest.raises(ApiException) as elsewhere:
            await agent.create_namespaced_event("default", about_a_pod, dry_run="All")
        written = await agent.create_namespaced_event(
            "default", _agent_event("edge-1"), dry_run="All"
        )

    def refusal(name: str) -> tuple[int, str]:
        return (
            403,
            f"events \"{name}\" is forbidden: ValidatingAdmissionPolicy '{EVENTS_POLICY}' with "
            f"binding '{EVENTS_POLICY}' denied request: the edgerollout agent may only write its "
            "NodeScopingNotEnforced Warning, in default, about the node its token is bound to "
            "(edge-1), as edgerollout-agent, with a message of at most 1024 characters",
        )

    assert denials == {
        "about-edge-2": refusal("edge-2.0123456789abcdef"),
        **{name: refusal("edge-1.0123456789abcdef") for name in list(refused)[1:]},
    }
    assert _denial(elsewhere.value) == refusal("e")
    assert written.involved_object.name == "edge-1"
