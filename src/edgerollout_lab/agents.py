"""One edgerollout agent per lab node, each reaching the API server only through its node's link.

In a cluster the agent runs as a DaemonSet pod on every edge node, under the ServiceAccount
`edgerollout-system/edgerollout-agent` with a token bound to that pod. The lab does the same with
real objects: it applies the shipped identity manifest (RBAC and the own-node admission policy),
runs a stand-in DaemonSet whose pods KWOK keeps Running on every node (real nodes run the lab's pause
image), asks the API server for a
token bound to each node's stand-in pod (so the token carries that node's name), and starts the
agent as a local process with a kubeconfig holding that token and pointing at the node's link.
Each agent requires its own bearer token, made as the install's init container makes it
(`agent-tokens/<node>`, 0600 in a 0700 folder); `lab.json` names it per node (`agent_token_file`).
"""

from __future__ import annotations

import asyncio
import functools
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from kubernetes_asyncio import client

from edgerollout.agent.token_file import ensure_token
from edgerollout.domain.vocabulary import DAEMONSET_KIND
from edgerollout.kube.views import bound_node, pod_phase
from edgerollout_lab import processes
from edgerollout_lab.api import api_client
from edgerollout_lab.control_plane import free_port
from edgerollout_lab.kubeconfig import write_kubeconfig

AGENT_NAMESPACE = "edgerollout-system"
AGENT_SERVICE_ACCOUNT = "edgerollout-agent"
STAND_IN = "edgerollout-agent"
TOKEN_SECONDS = 48 * 3600
# The agents re-check every 2 s that the API server confines them to their node (30 s in a
# cluster), so a test that removes the policy sees them refuse within seconds.
SCOPING_CHECK_SECONDS = 2.0


def identity_manifest() -> Path:
    # The checkout's deploy/base, rendered from the chart (docs/manifests.md): the lab runs
    # from the repository, and the product ships no manifest.
    return Path(__file__).resolve().parents[2] / "deploy" / "base" / "agent-identity.yaml"


def kubectl() -> str:
    return str(Path(sys.executable).parent / "kubectl")


def apply_identity(kubeconfig: Path) -> None:
    """Apply the agent's RBAC and admission policy, as an operator would."""
    subprocess.run(
        [
            kubectl(),
            f"--kubeconfig={kubeconfig}",
            "apply",
            "--server-side",
            "-f",
            str(identity_manifest()),
        ],
        check=True,
        capture_output=True,
        timeout=60,
    )


# What the stand-in pods run on simulated nodes (never pulled); real nodes run the lab's pause.
STAND_IN_IMAGE = "edgerollout:lab"


def stand_in_daemonset(
    namespace: str = AGENT_NAMESPACE, image: str = STAND_IN_IMAGE
) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": DAEMONSET_KIND,
        "metadata": {"name": STAND_IN, "namespace": namespace},
        "spec": {
            "selector": {"matchLabels": {"app": STAND_IN}},
            "template": {
                "metadata": {"labels": {"app": STAND_IN}},
                "spec": {
                    "serviceAccountName": AGENT_SERVICE_ACCOUNT,
                    "hostNetwork": True,
                    "tolerations": [{"operator": "Exists"}],
                    "containers": [{"name": "agent", "image": image}],
                },
            },
        },
    }


async def _stand_in_pods(
    kubeconfig: Path, nodes: list[str], timeout: float, namespace: str, image: str
) -> dict[str, Any]:
    async with api_client(kubeconfig) as api:
        apps = client.AppsV1Api(api)
        core = client.CoreV1Api(api)
        manifest = stand_in_daemonset(namespace, image)
        await apps.create_namespaced_daemon_set(namespace, cast(Any, manifest))
        deadline = time.monotonic() + timeout
        while True:
            listed = await core.list_namespaced_pod(namespace, label_selector=f"app={STAND_IN}")
            running: dict[str, Any] = {}
            for pod in listed.items:
                served = api.sanitize_for_serialization(pod)
                node = bound_node(served)
                if node and pod_phase(served) == "Running":
                    running[node] = pod
            if all(node in running for node in nodes):
                return running
            if time.monotonic() > deadline:
                missing = sorted(set(nodes) - set(running))
                raise TimeoutError(f"the agent stand-in pods did not run on {missing[:10]}")
            await asyncio.sleep(0.5)


async def _tokens(kubeconfig: Path, pods: dict[str, Any], namespace: str) -> dict[str, str]:
    async with api_client(kubeconfig) as api:
        core = client.CoreV1Api(api)
        tokens = {}
        for node, pod in pods.items():
            request = {
                "apiVersion": "authentication.k8s.io/v1",
                "kind": "TokenRequest",
                "spec": {
                    "audiences": [],
                    "expirationSeconds": TOKEN_SECONDS,
                    "boundObjectRef": {
                        "apiVersion": "v1",
                        "kind": "Pod",
                        "name": pod.metadata.name,
                        "uid": pod.metadata.uid,
                    },
                },
            }
            answer = await core.create_namespaced_service_account_token(
                AGENT_SERVICE_ACCOUNT, namespace, cast(Any, request)
            )
            tokens[node] = answer.status.token
        return tokens


def agent_tokens(
    kubeconfig: Path,
    nodes: list[str],
    *,
    timeout: float = 120,
    namespace: str = AGENT_NAMESPACE,
    stand_in_image: str = STAND_IN_IMAGE,
) -> dict[str, str]:
    """A token per node, bound to the agent stand-in pod on that node (in `namespace`, where the
    agent's ServiceAccount is)."""

    async def mint() -> dict[str, str]:
        pods = await _stand_in_pods(kubeconfig, nodes, timeout, namespace, stand_in_image)
        return await _tokens(kubeconfig, {node: pods[node] for node in nodes}, namespace)

    return asyncio.run(mint())


@dataclass(frozen=True, slots=True)
class StartedAgent:
    url: str
    token_file: Path


def _healthy(url: str) -> bool:
    with urllib.request.urlopen(f"{url}/readyz", timeout=2) as response:  # noqa: S310 - loopback
        return int(response.status) == 200


def start_agents(
    folder: Path,
    *,
    admin_kubeconfig: Path,
    ca_file: Path,
    link_ports: dict[str, int],
    nodes: list[str],
    stand_in_image: str = STAND_IN_IMAGE,
) -> dict[str, StartedAgent]:
    """Start one agent per node; returns node -> its URL and token file once every agent is ready
    (which includes having proven that the API server confines it to its node). With real nodes
    `stand_in_image` must be one they can pull."""
    apply_identity(admin_kubeconfig)
    tokens = agent_tokens(admin_kubeconfig, nodes, stand_in_image=stand_in_image)
    started = {}
    for node in nodes:
        token_file = folder / "agent-tokens" / node
        ensure_token(token_file)
        kubeconfig = write_kubeconfig(
            folder / "kubeconfigs" / f"agent-{node}.kubeconfig",
            server=f"https://127.0.0.1:{link_ports[node]}",
            ca_file=ca_file,
            user=f"system:serviceaccount:{AGENT_NAMESPACE}:{AGENT_SERVICE_ACCOUNT}",
            token=tokens[node],
        )
        port = free_port()
        processes.start(
            folder,
            f"agent-{node}",
            [
                sys.executable,
                "-m",
                "edgerollout",
                "agent",
                f"--node-name={node}",
                f"--kubeconfig={kubeconfig}",
                f"--listen=127.0.0.1:{port}",
                f"--cache-dir={folder / 'agents' / node}",
                f"--token-file={token_file}",
                f"--scoping-check-interval={SCOPING_CHECK_SECONDS}",
            ],
        )
        started[node] = StartedAgent(url=f"http://127.0.0.1:{port}", token_file=token_file)
    for node, agent in started.items():
        processes.wait_until(
            folder,
            f"agent-{node}",
            functools.partial(_healthy, agent.url),
            timeout=60,
            what="ready",
        )
    return started
