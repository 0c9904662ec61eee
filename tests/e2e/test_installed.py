"""The product as users install it (design §11.8): its image built for real from deploy/Dockerfile,
installed into the lab with its Helm chart and with `kubectl apply -k`, the controller and the
agents running as real containers on real nodes, and the seed scenarios played through them with
no edgerollout process on the host.

The lab: three simulated edge nodes and two real ones. real-1 plays the cloud node (the
controller's two replicas), real-2 an edge node (an agent, hostNetwork, on the machine's
127.0.0.1:10267 — the machine is real-2's host). Their pods reach the API server through their
node's link, so cutting real-2 cuts its agent off as an edge uplink would.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import time
import tomllib
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes_asyncio import client

from edgerollout.domain import vocabulary
from edgerollout_lab import packages, product_image
from edgerollout_lab.cluster import Lab
from edgerollout_lab.images import Registry
from edgerollout_lab.kwok_stages import LINK_LABEL
from tests.e2e.support.containerd import kill, running_tasks
from tests.e2e.support.helm import BASE, CHART, KUBECTL, helm, run
from tests.e2e.support.lab import (
    LabHandle,
    by_node,
    condition,
    daemonset,
    events,
    fresh_namespace,
    images,
    lab_handle,
    lab_of_its_own,
    pod_ready,
    set_image,
    wait_for,
)
from tests.e2e.support.seed import NAME, ON_DELETE, SELECTOR, running_everywhere

CLOUD = "real-1"
EDGE = "real-2"
SIMULATED = ["edge-1", "edge-2", "edge-3"]
EVERY_NODE = sorted([*SIMULATED, CLOUD, EDGE])
EDGE_WORKER = "openyurt.io/is-edge-worker"
NAMESPACE = "edgerollout-system"
# The namespace the install switches rollbacks on in (controller.rollback.namespaces): it exists
# before the chart, which puts a Role there.
ROLLBACK_NAMESPACE = "i-rollback"
RELEASE = "edgerollout"
CONTROLLER = "app.kubernetes.io/name=edgerollout-controller"
AGENT = "app.kubernetes.io/name=edgerollout-agent"
AGENT_URL = "http://127.0.0.1:10267"
TOKEN_FILE = Path("/var/lib/edgerollout/agent-token")
EDGEROLLOUT = str(Path(KUBECTL).with_name("edgerollout"))
HOST_FOLDERS = (TOKEN_FILE.parent, Path("/var/lib/edgerollout-agent"))
# What a Python environment may hold besides the product's locked runtime dependencies: nothing.
DEVELOPMENT_ONLY = {"pytest", "mypy", "ruff", "hypothesis", "psutil", "cryptography", "pip"}


@dataclass(frozen=True)
class Builds:
    """Two builds of the image from the same source, for an upgrade from one to the other."""

    first: product_image.BuiltImage
    second: product_image.BuiltImage
    registry: Registry

    def reference(self, image: product_image.BuiltImage) -> str:
        return image.reference(self.registry)


@pytest.fixture(scope="module")
def installed_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    # The seed's node-side command.
    packages.ensure({"curl": "/usr/bin/curl"}, purpose="the node API's tests", say=lambda _: None)
    existed = {folder: folder.exists() for folder in HOST_FOLDERS}
    folder = tmp_path_factory.mktemp("installed")
    with lab_of_its_own(folder, nodes=len(SIMULATED), real_nodes=2) as started:
        _label(started)
        yield started
    # The agent's hostPath folders are the machine's: leave it as the tests found it.
    for path, was_there in existed.items():
        if not was_there:
            shutil.rmtree(path, ignore_errors=True)


def _label(installed_lab: Lab) -> None:
    def label(node: str, value: str) -> None:
        kubectl(installed_lab, "label", "node", node, f"{EDGE_WORKER}={value}", "--overwrite")

    label(CLOUD, "false")
    for node in [EDGE, *SIMULATED]:
        label(node, "true")


@pytest.fixture(scope="module")
def builds(installed_lab: Lab) -> Builds:
    assert installed_lab.registry is not None
    registry = Registry(installed_lab.registry)
    source = product_image.Source.of(Path(__file__))
    built = []
    for build in ("a", "b"):
        image = product_image.build(
            source.context,
            tag=f"{source.version}-e2e-{build}",
            version=source.version,
            revision=f"{source.revision}-{build}",
            say=lambda _: None,
        )
        product_image.push(image, registry)
        built.append(image)
    return Builds(first=built[0], second=built[1], registry=registry)


def kubectl(installed_lab: Lab, *args: str) -> str:
    result = run([KUBECTL, f"--kubeconfig={installed_lab.kubeconfig}", *args], timeout=300)
    assert result.returncode == 0, f"kubectl {' '.join(args)}: {result.stderr}"
    return result.stdout


def edgerollout_status(installed_lab: Lab, daemonset: str) -> subprocess.CompletedProcess[str]:
    """`edgerollout status --watch` on a DaemonSet of the product: exits when it is rolled out."""
    argv = [EDGEROLLOUT, "status", daemonset, "-n", NAMESPACE, "--watch"]
    return run([*argv, f"--kubeconfig={installed_lab.kubeconfig}"], timeout=300)


def values(installed_lab: Lab, reference: str) -> dict[str, Any]:
    """The values this lab needs: the image in its registry, the API server through each node's
    link, the controller on the cloud node and the agents on edge nodes, its toolbox image."""
    repository, _, tag = reference.rpartition(":")
    return {
        "image": {"repository": repository, "tag": tag},
        "apiServer": {"host": "$(HOST_IP)", "port": installed_lab.pod_api_port},
        "controller": {
            "nodeSelector": {EDGE_WORKER: "false"},
            "prepull": {"toolboxImage": installed_lab.toolbox_image},
            "rollback": {"namespaces": [ROLLBACK_NAMESPACE]},
        },
        "agent": {"nodeSelector": {EDGE_WORKER: "true"}},
    }


def helm_release(
    installed_lab: Lab, tmp_path: Path, command: str, reference: str, *, wait: bool = True
) -> float:
    """`helm install|upgrade [--wait]` of the release with this image; the seconds it took."""
    file = tmp_path / f"values-{command}.yaml"
    file.write_text(yaml.safe_dump(values(installed_lab, reference)))
    waiting = ["--wait", "--timeout=5m"] if wait else []
    started = time.monotonic()
    result = helm(
        command,
        RELEASE,
        str(CHART),
        "--values",
        str(file),
        *waiting,
        kubeconfig=installed_lab.kubeconfig,
    )
    assert result.returncode == 0, result.stderr
    return time.monotonic() - started


@pytest.fixture(scope="module")
def installed(
    installed_lab: Lab, builds: Builds, tmp_path_factory: pytest.TempPathFactory
) -> float:
    """The chart installed with the first build; the seconds `helm install --wait` took."""
    kubectl(installed_lab, "create", "namespace", ROLLBACK_NAMESPACE)
    return helm_release(
        installed_lab, tmp_path_factory.mktemp("helm"), "install", builds.reference(builds.first)
    )


@pytest.fixture
async def kube(installed_lab: Lab) -> AsyncIterator[LabHandle]:
    async with lab_handle(installed_lab) as handle:
        yield handle


@pytest.fixture
async def ns(kube: LabHandle) -> AsyncIterator[str]:
    async with fresh_namespace(kube, prefix="i") as name:
        yield name


def agent(path: str, *, method: str = "GET", token: bool = True) -> tuple[int, str]:
    """The seed's call of the node API on real-2: curl on the node, with the install's token."""
    argv = ["curl", "-s", "-X", method, "-w", "\n%{http_code}", f"{AGENT_URL}{path}"]
    if token:
        argv += ["-H", f"Authorization: Bearer {TOKEN_FILE.read_text().strip()}"]
    result = subprocess.run(argv, capture_output=True, text=True, timeout=30, check=False)
    assert result.returncode == 0, result.stderr
    body, _, code = result.stdout.rpartition("\n")
    return int(code), body


async def product_pods(kube: LabHandle, selector: str) -> dict[str, list[Any]]:
    return by_node(await kube.pods(NAMESPACE, selector))


async def leader(kube: LabHandle) -> str:
    """The pod whose controller holds the Lease (its identity is POD_UUID)."""
    lease = await client.CoordinationV1Api(kube.api).read_namespaced_lease(
        "edgerollout-controller", NAMESPACE
    )
    return str(lease.spec.holder_identity or "").rpartition("_")[0]


def relative(path: Path, start: Path) -> str:
    """`path` relative to `start`, as kustomize wants its bases."""
    return os.path.relpath(path, start)


def container_id(pod: Any) -> str:
    (status,) = pod.status.container_statuses
    return str(status.container_id).removeprefix("containerd://")


async def seed(
    kube: LabHandle, ns: str, installed_lab: Lab, strategy: str, **extra: str
) -> dict[str, str]:
    """The seed's DaemonSet (nginx 1.19.4 from the lab's registry) on every node; node -> UID."""
    annotations = {vocabulary.UPDATE_STRATEGY_ANNOTATION: strategy, **extra}
    await kube.apps.create_namespaced_daemon_set(
        ns,
        daemonset(NAME, image=installed_lab.images[0], strategy=ON_DELETE, annotations=annotations),
    )
    return await running_everywhere(kube, ns, installed_lab.images[0], EVERY_NODE, timeout=120)


# --- the image ------------------------------------------------------------------------------


def test_the_image_runs_edgerollout_as_65532_with_only_the_locked_runtime(builds: Builds) -> None:
    config = product_image.inspect(builds.first)
    oci = config["OCIv1"]
    assert isinstance(oci, dict)

    assert oci["config"]["User"] == "65532:65532"
    assert oci["config"]["Entrypoint"] == ["edgerollout"]
    assert oci["config"]["Labels"]["org.opencontainers.image.revision"].endswith("-a")
    assert product_image.run_inside(builds.first, ["edgerollout", "--version"]) == (
        "edgerollout, version 0.1.0\n"
    )
    listed = product_image.run_inside(
        builds.first,
        [
            "python",
            "-c",
            "import importlib.metadata as m, importlib.util as u; "
            "print(sorted({d.metadata['Name'].lower() for d in m.distributions()})); "
            "print(u.find_spec('edgerollout_lab') is None)",
        ],
    ).splitlines()
    installed = {normalized(name) for name in json.loads(listed[0].replace("'", '"'))}
    assert installed == _locked_runtime() | {"edgerollout"}
    assert installed & DEVELOPMENT_ONLY == set()
    assert listed[1] == "True"


def _locked_runtime() -> set[str]:
    """The product's runtime dependencies as uv.lock resolves them, on Linux."""
    lock = (Path(__file__).parents[2] / "uv.lock").read_text()
    packages = {package["name"]: package for package in tomllib.loads(lock)["package"]}
    wanted: set[str] = set()
    pending = [d["name"] for d in packages["edgerollout"]["dependencies"]]
    while pending:
        name = pending.pop()
        if name in wanted:
            continue
        wanted.add(name)
        for dependency in packages[name].get("dependencies", []):
            marker = dependency.get("marker", "")
            if "win32" in marker or "platform_system == 'Windows'" in marker:
                continue
            pending.append(dependency["name"])
    return {normalized(name) for name in wanted}


def normalized(name: str) -> str:
    """A distribution's name as the package index compares them (PEP 503)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def test_the_image_is_under_150_mb_to_pull(builds: Builds) -> None:
    size = product_image.pushed_size(builds.reference(builds.first))

    assert 30e6 < size < 150e6


# --- installed with Helm --------------------------------------------------------------------


async def test_helm_install_runs_the_controller_and_agents_as_real_containers(
    installed_lab: Lab, installed: float, kube: LabHandle
) -> None:
    controllers = await product_pods(kube, CONTROLLER)
    agents = await product_pods(kube, AGENT)

    assert sorted(controllers) == [CLOUD]
    assert len(controllers[CLOUD]) == 2
    assert all(pod_ready(pod) for pod in controllers[CLOUD])
    assert {container_id(pod) for pod in controllers[CLOUD]} <= running_tasks(installed_lab, CLOUD)
    assert await leader(kube) in {pod.metadata.name for pod in controllers[CLOUD]}
    assert sorted(agents) == sorted([EDGE, *SIMULATED])
    (edge_agent,) = agents[EDGE]
    assert pod_ready(edge_agent)
    assert edge_agent.spec.host_network is True
    assert container_id(edge_agent) in running_tasks(installed_lab, EDGE)
    assert agent("/healthz", token=False) == (200, "ok")
    assert agent("/pods", token=False)[0] == 401
    code, body = agent("/pods")
    assert code == 200
    assert edge_agent.metadata.name in {
        item["metadata"]["name"] for item in json.loads(body)["items"]
    }
    # The kubelet serves the container's log to the API server (kubectl logs on a real node).
    logged = kubectl(installed_lab, "logs", "-n", NAMESPACE, edge_agent.metadata.name)
    lines = [json.loads(line) for line in logged.splitlines() if line.startswith("{")]
    assert {"msg": "agent listening", "node": EDGE} in [
        {key: line.get(key) for key in ("msg", "node")} for line in lines
    ]
    assert installed < 300


async def test_seed_auto_through_the_installed_controller(
    installed_lab: Lab, installed: float, kube: LabHandle, ns: str
) -> None:
    """Seed 001 §2: a real and a simulated node cut, the others upgraded, then both."""
    old, new = installed_lab.images[0], installed_lab.images[1]
    before = await seed(kube, ns, installed_lab, "auto")
    (edge_container,) = {
        container_id(pod) for pod in (await kube.pods(ns, SELECTOR)) if pod.spec.node_name == EDGE
    }

    await kube.disconnect(EDGE, "edge-2")
    for node in (EDGE, "edge-2"):
        await kube.wait_node_ready(node, "Unknown", timeout=60)
    await set_image(kube, ns, NAME, new)
    connected = [node for node in EVERY_NODE if node not in (EDGE, "edge-2")]

    async def connected_done() -> bool:
        grouped = by_node(await kube.pods(ns, SELECTOR))
        return all(
            len(grouped.get(node, [])) == 1
            and images(grouped[node][0]) == [new]
            and pod_ready(grouped[node][0])
            for node in connected
        )

    await wait_for(connected_done, timeout=120, what="the connected nodes upgraded")
    grouped = by_node(await kube.pods(ns, SELECTOR))
    for node in (EDGE, "edge-2"):
        (pod,) = grouped[node]
        assert (pod.metadata.uid, images(pod)) == (before[node], [old])
    assert edge_container in running_tasks(installed_lab, EDGE)

    await kube.connect(EDGE, "edge-2")
    after = await running_everywhere(kube, ns, new, EVERY_NODE, timeout=120)
    # Back with its own kubelet: the simulated nodes' KWOK never takes a real node over.
    assert LINK_LABEL not in (await kube.core.read_node(EDGE)).metadata.labels
    assert all(after[node] != before[node] for node in EVERY_NODE)
    assert edge_container not in running_tasks(installed_lab, EDGE)


async def test_a_revision_crash_looping_on_a_real_node_makes_the_controller_pause_it(
    installed_lab: Lab, installed: float, kube: LabHandle, ns: str
) -> None:
    """The failure budget through the installed product: a real kubelet's CrashLoopBackOff is
    broken, and the controller's pause gets past its RBAC and admission policy."""
    assert installed_lab.crashing_image is not None
    old, fixed = installed_lab.images[0], installed_lab.images[1]
    annotations = {
        vocabulary.UPDATE_STRATEGY_ANNOTATION: vocabulary.ADVANCED_ROLLING_UPDATE,
        vocabulary.MAX_FAILED_ANNOTATION: "0",
    }
    manifest = daemonset(NAME, image=old, strategy=ON_DELETE, annotations=annotations)
    manifest["spec"]["template"]["spec"]["nodeSelector"] = {"kubernetes.io/hostname": EDGE}
    await kube.apps.create_namespaced_daemon_set(ns, manifest)
    await running_everywhere(kube, ns, old, [EDGE], timeout=120)
    await set_image(kube, ns, NAME, installed_lab.crashing_image)

    async def failed() -> list[Any] | None:
        return await events(kube, ns, reason=vocabulary.ROLLOUT_FAILED) or None

    (told,) = await wait_for(failed, timeout=120, what="a RolloutFailed Event")
    assert re.fullmatch(
        rf"1 node is broken on revision \w+, more than {vocabulary.MAX_FAILED_ANNOTATION} "
        rf'"0" tolerates \(0\): {EDGE}: CrashLoopBackOff since \S+Z\. The rollout is paused .*',
        told.message,
    ), told.message
    current = await kube.apps.read_namespaced_daemon_set(NAME, ns)
    assert current.metadata.annotations[vocabulary.PAUSED_ANNOTATION] == "true"
    (pod,) = await kube.pods(ns, SELECTOR)
    (status,) = pod.status.container_statuses
    # Between two back-offs the kubelet runs it again: its last exit is what stays.
    assert (status.last_state.terminated.exit_code, status.restart_count > 0) == (1, True)

    await set_image(kube, ns, NAME, fixed)
    argv = [EDGEROLLOUT, "resume", NAME, "-n", ns, f"--kubeconfig={installed_lab.kubeconfig}"]
    resumed = run(argv, timeout=60)
    assert resumed.returncode == 0, resumed.stderr
    await running_everywhere(kube, ns, fixed, [EDGE], timeout=120)


async def test_the_installed_controller_rolls_a_crash_looping_revision_back(
    installed_lab: Lab, installed: float, kube: LabHandle
) -> None:
    """Roll back on failure through the installed product (design §13.4.1): in the namespace the
    install switched on, the controller's own identity writes the previous template back past
    its RBAC and admission policy, and the real node runs the old image again; `plan` read the
    install's switch beforehand."""
    assert installed_lab.crashing_image is not None
    ns, old = ROLLBACK_NAMESPACE, installed_lab.images[0]
    annotations = {
        vocabulary.UPDATE_STRATEGY_ANNOTATION: vocabulary.ADVANCED_ROLLING_UPDATE,
        vocabulary.MAX_FAILED_ANNOTATION: "0",
        vocabulary.ON_FAILURE_ANNOTATION: "rollback",
    }
    manifest = daemonset(NAME, image=old, strategy=ON_DELETE, annotations=annotations)
    manifest["spec"]["template"]["spec"]["nodeSelector"] = {"kubernetes.io/hostname": EDGE}
    await kube.apps.create_namespaced_daemon_set(ns, manifest)
    try:
        first = await running_everywhere(kube, ns, old, [EDGE], timeout=120)
        argv = [EDGEROLLOUT, "plan", NAME, "-n", ns, "-o", "json"]
        planned = run([*argv, f"--kubeconfig={installed_lab.kubeconfig}"], timeout=60)
        assert planned.returncode == 0, planned.stderr
        assert json.loads(planned.stdout)["rollbackSwitch"] == "on"
        restored = (await kube.pods(ns, SELECTOR))[0].metadata.labels[
            vocabulary.CONTROLLER_REVISION_HASH_LABEL
        ]
        await set_image(kube, ns, NAME, installed_lab.crashing_image)

        async def rolled_back() -> list[Any] | None:
            return await events(kube, ns, reason=vocabulary.ROLLOUT_ROLLED_BACK) or None

        (told,) = await wait_for(rolled_back, timeout=120, what="a RolloutRolledBack Event")
        found = re.fullmatch(
            rf"1 node is broken on revision (\w+), more than {vocabulary.MAX_FAILED_ANNOTATION} "
            rf'"0" tolerates \(0\): {EDGE}: CrashLoopBackOff since \S+Z\. The DaemonSet\'s '
            rf"template is rolled back to revision {restored} \(as kubectl rollout undo does\), "
            r"which rolls out under the same budgets, the broken nodes first",
            told.message,
        )
        assert found is not None, told.message
        again = await running_everywhere(kube, ns, old, [EDGE], timeout=120)
        assert again[EDGE] != first[EDGE]
        current = await kube.apps.read_namespaced_daemon_set(NAME, ns)
        assert [c.image for c in current.spec.template.spec.containers] == [old]
        recorded = current.metadata.annotations
        assert recorded[vocabulary.ROLLED_BACK_ANNOTATION] == (
            f"from {found.group(1)} (revision 2) to {restored}"
        )
        assert vocabulary.PAUSED_ANNOTATION not in recorded
        warnings = [e.reason for e in await events(kube, ns) if e.type == "Warning"]
        assert warnings == [vocabulary.ROLLOUT_ROLLED_BACK]
    finally:
        await kube.apps.delete_namespaced_daemon_set(NAME, ns)


async def test_seed_ota_through_the_installed_agent_with_curl(
    installed_lab: Lab, installed: float, kube: LabHandle, ns: str
) -> None:
    """Seed 001 §3 on real-2: PodNeedUpgrade, then the seed's curl (with the install's token)."""
    new = installed_lab.images[1]
    before = await seed(kube, ns, installed_lab, "ota")
    await set_image(kube, ns, NAME, new)

    async def marked() -> Any:
        for pod in await kube.pods(ns, SELECTOR):
            marked = condition(pod, vocabulary.POD_NEED_UPGRADE)
            if pod.spec.node_name == EDGE and marked is not None and marked.status == "True":
                return pod
        return None

    pod = await wait_for(marked, timeout=60, what=f"{EDGE}'s pod marked PodNeedUpgrade=True")
    code, body = agent(
        f"/openyurt.io/v1/namespaces/{ns}/pods/{pod.metadata.name}/upgrade", method="POST"
    )
    assert (code, body) == (200, f"Start updating pod {ns}/{pod.metadata.name}")

    async def upgraded() -> Any:
        grouped = by_node(await kube.pods(ns, SELECTOR))
        pods = grouped.get(EDGE, [])
        if len(pods) == 1 and pods[0].metadata.uid != before[EDGE] and pod_ready(pods[0]):
            return pods[0]
        return None

    replaced = await wait_for(upgraded, timeout=120, what=f"{EDGE}'s pod replaced")
    assert images(replaced) == [new]
    assert container_id(replaced) in running_tasks(installed_lab, EDGE)
    grouped = by_node(await kube.pods(ns, SELECTOR))
    others = {node: grouped[node][0].metadata.uid for node in EVERY_NODE if node != EDGE}
    assert others == {node: uid for node, uid in before.items() if node != EDGE}


async def test_the_standby_finishes_the_rollout_when_the_leaders_container_is_killed(
    installed_lab: Lab, installed: float, kube: LabHandle, ns: str
) -> None:
    new = installed_lab.images[2]
    await seed(kube, ns, installed_lab, "auto")
    holder = await leader(kube)
    controllers = (await product_pods(kube, CONTROLLER))[CLOUD]
    (leading,) = [pod for pod in controllers if pod.metadata.name == holder]
    (standby,) = [pod.metadata.name for pod in controllers if pod.metadata.name != holder]

    await set_image(kube, ns, NAME, new)
    kill(installed_lab, CLOUD, container_id(leading))

    async def taken_over() -> bool:
        return await leader(kube) == str(standby)

    await wait_for(taken_over, timeout=60, what=f"the standby {standby} holding the Lease")
    await running_everywhere(kube, ns, new, EVERY_NODE, timeout=120)


async def test_helm_upgrade_to_a_second_build_keeps_a_rollout_in_progress(
    installed_lab: Lab, installed: float, builds: Builds, kube: LabHandle, ns: str, tmp_path: Path
) -> None:
    """The product upgraded while a rollout waits for a cut node: the new controller finishes it."""
    new = installed_lab.images[3]
    second = builds.reference(builds.second)
    await seed(kube, ns, installed_lab, "auto")
    await kube.disconnect("edge-2")
    await kube.wait_node_ready("edge-2", "Unknown", timeout=60)
    await set_image(kube, ns, NAME, new)
    others = [node for node in EVERY_NODE if node != "edge-2"]

    async def others_done() -> bool:
        grouped = by_node(await kube.pods(ns, SELECTOR))
        return all([images(pod) for pod in grouped.get(node, [])] == [[new]] for node in others)

    await wait_for(others_done, timeout=120, what="every connected node upgraded")

    # Without --wait: edge-2's agent, like its workload pod, waits for the node (--wait would too).
    helm_release(installed_lab, tmp_path, "upgrade", second, wait=False)

    async def product_upgraded() -> bool:
        controllers = await product_pods(kube, CONTROLLER)
        agents = await product_pods(kube, AGENT)
        return [(images(pod), pod_ready(pod)) for pod in controllers.get(CLOUD, [])] == [
            ([second], True)
        ] * 2 and all(
            [(images(pod), pod_ready(pod)) for pod in agents.get(node, [])] == [([second], True)]
            for node in connected_agents
        )

    connected_agents = [EDGE, "edge-1", "edge-3"]
    await wait_for(
        product_upgraded, timeout=300, what="the controllers and connected agents upgraded"
    )
    assert sorted(await product_pods(kube, CONTROLLER)) == [CLOUD]
    (offline_agent,) = (await product_pods(kube, AGENT))["edge-2"]
    assert images(offline_agent) == [builds.reference(builds.first)]
    assert agent("/healthz", token=False) == (200, "ok")
    (old_pod,) = by_node(await kube.pods(ns, SELECTOR))["edge-2"]
    assert images(old_pod) == [installed_lab.images[0]]

    await kube.connect("edge-2")
    await running_everywhere(kube, ns, new, EVERY_NODE, timeout=120)

    async def offline_agent_upgraded() -> bool:
        agents = (await product_pods(kube, AGENT)).get("edge-2", [])
        return [(images(pod), pod_ready(pod)) for pod in agents] == [([second], True)]

    await wait_for(offline_agent_upgraded, timeout=120, what="edge-2's agent upgraded once back")


async def test_helm_uninstall_removes_everything_it_installed(
    installed_lab: Lab, installed: float, kube: LabHandle
) -> None:
    manifest = helm("get", "manifest", RELEASE, kubeconfig=installed_lab.kubeconfig)
    assert manifest.returncode == 0, manifest.stderr
    objects = [
        f"{doc['kind'].lower()}/{doc['metadata']['name']}"
        for doc in yaml.safe_load_all(manifest.stdout)
        if doc
    ]
    assert len(objects) > 10
    controllers = {container_id(pod) for pod in (await product_pods(kube, CONTROLLER))[CLOUD]}
    (edge_agent,) = (await product_pods(kube, AGENT))[EDGE]

    result = helm(
        "uninstall", RELEASE, "--wait", "--timeout=5m", kubeconfig=installed_lab.kubeconfig
    )

    assert result.returncode == 0, result.stderr
    left = kubectl(
        installed_lab, "get", *objects, "-n", NAMESPACE, "--ignore-not-found", "-o", "name"
    )
    assert left == ""

    async def no_product_pods() -> bool:
        return not await kube.pods(NAMESPACE, "app.kubernetes.io/part-of=edgerollout")

    await wait_for(no_product_pods, timeout=120, what="the product's pods gone")
    assert running_tasks(installed_lab, CLOUD) & controllers == set()
    assert container_id(edge_agent) not in running_tasks(installed_lab, EDGE)


async def test_kubectl_apply_k_runs_the_product_on_real_nodes(
    installed_lab: Lab, builds: Builds, kube: LabHandle, tmp_path: Path
) -> None:
    """deploy/base through an overlay of the operator's: the image, where each part runs, and
    the API server through the node's link (the chart's apiServer values, as patches)."""
    reference = builds.reference(builds.first)
    repository, _, tag = reference.rpartition(":")
    api_server = [
        {"name": "HOST_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.hostIP"}}},
        {"name": "KUBERNETES_SERVICE_HOST", "value": "$(HOST_IP)"},
        {"name": "KUBERNETES_SERVICE_PORT", "value": str(installed_lab.pod_api_port)},
    ]

    def placed(kind: str, name: str, container: str, worker: str) -> dict[str, Any]:
        return {
            "apiVersion": "apps/v1",
            "kind": kind,
            "metadata": {"name": name, "namespace": NAMESPACE},
            "spec": {
                "template": {
                    "spec": {
                        "nodeSelector": {EDGE_WORKER: worker},
                        "containers": [{"name": container, "env": api_server}],
                    }
                }
            },
        }

    overlay = tmp_path / "overlay"
    overlay.mkdir()
    (overlay / "kustomization.yaml").write_text(
        yaml.safe_dump(
            {
                "apiVersion": "kustomize.config.k8s.io/v1beta1",
                "kind": "Kustomization",
                "resources": [relative(BASE, overlay)],
                "images": [{"name": "edgerollout", "newName": repository, "newTag": tag}],
                "patches": [
                    {
                        "patch": yaml.safe_dump(
                            placed("Deployment", "edgerollout-controller", "controller", "false")
                        )
                    },
                    {
                        "patch": yaml.safe_dump(
                            placed("DaemonSet", "edgerollout-agent", "agent", "true")
                        )
                    },
                ],
            }
        )
    )

    kubectl(installed_lab, "apply", "-k", str(overlay))
    try:
        kubectl(
            installed_lab,
            "rollout",
            "status",
            "deployment/edgerollout-controller",
            "-n",
            NAMESPACE,
            "--timeout=300s",
        )
        # `kubectl rollout status` refuses an OnDelete DaemonSet: edgerollout's own status waits.
        watched = edgerollout_status(installed_lab, "edgerollout-agent")
        assert watched.returncode == 0, watched.stdout + watched.stderr
        controllers = await product_pods(kube, CONTROLLER)
        assert sorted(controllers) == [CLOUD]
        assert [images(pod) for pod in controllers[CLOUD]] == [[reference], [reference]]
        assert await leader(kube) in {pod.metadata.name for pod in controllers[CLOUD]}
        (edge_agent,) = (await product_pods(kube, AGENT))[EDGE]
        assert pod_ready(edge_agent)
        assert agent("/healthz", token=False) == (200, "ok")
        assert agent("/pods")[0] == 200
    finally:
        kubectl(installed_lab, "delete", "-k", str(overlay), "--wait", "--timeout=300s")
