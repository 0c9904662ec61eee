"""A real node in the lab: a kubelet and containerd running real containers from the lab's own
registry, beside the simulated nodes (design §11.7).

What runs on the node is asked of containerd itself (`ctr` on the node's socket) and of the
container (HTTP to the pod), not only of the API server.
"""

from __future__ import annotations

import asyncio
import http.client
import json
import shutil
import subprocess
import sys
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil
import pytest

from edgerollout.domain.vocabulary import (
    ADVANCED_ROLLING_UPDATE,
    MAINTENANCE_WINDOW_ANNOTATION,
    MAX_UNAVAILABLE_ANNOTATION,
    POD_IMAGE_READY,
    PREPULL_ANNOTATION,
    PREPULL_WINDOW_ANNOTATION,
    UPDATE_STRATEGY_ANNOTATION,
    UPGRADE_HELD,
)
from edgerollout_lab import cluster, link, real_nodes
from edgerollout_lab.cluster import Lab
from tests.e2e.support.agents import agent_of, assert_pull_requested, assert_upgrade_started
from tests.e2e.support.containerd import ctr
from tests.e2e.support.controller_process import ControllerProcess
from tests.e2e.support.lab import (
    ALL_DAY,
    LabHandle,
    by_node,
    closed_window,
    condition,
    daemonset,
    deleted_on,
    hold_for,
    images,
    pod_ready,
    set_image,
    wait_for,
)
from tests.e2e.support.seed import (
    NAME,
    ON_DELETE,
    SELECTOR,
    newest_revision_hash,
    running_everywhere,
)

# The session's lab of one simulated node and one real node, each running edgerollout's agent.
pytestmark = pytest.mark.lab(nodes=1, real_nodes=1, agents=True)

REAL = "real-1"
IP = shutil.which("ip", path="/usr/sbin:/sbin:/usr/bin:/bin") or "/usr/sbin/ip"
KUBECTL = str(Path(sys.executable).parent / "kubectl")


def _ctr(lab: Lab, *args: str) -> list[list[str]]:
    return ctr(lab, REAL, *args)


@dataclass(frozen=True)
class Running:
    """A container containerd runs: its ID and its image's digest (`sha256:...`)."""

    container: str
    image: str


def _digests(lab: Lab) -> dict[str, str]:
    """Every image reference containerd holds (by tag or by digest) -> the image's digest."""
    return {row[0]: row[2] for row in _ctr(lab, "images", "ls")}


def running_containers(lab: Lab) -> set[Running]:
    digests = _digests(lab)
    images = {row[0]: row[1] for row in _ctr(lab, "containers", "ls")}
    return {
        Running(container=row[0], image=digests.get(images[row[0]], images[row[0]]))
        for row in _ctr(lab, "tasks", "ls")
        if row[2] == "RUNNING"
    }


def _on_real(lab: Lab, image: str) -> list[Running]:
    """The containers running `image` (a reference by tag) on the real node."""
    digest = _digests(lab).get(image)
    return [c for c in running_containers(lab) if c.image == digest]


def image_digest(lab: Lab, reference: str) -> str:
    """The digest containerd holds for an image reference (`sha256:...`)."""
    return _digests(lab)[reference]


def served_version(pod_ip: str) -> str:
    with urllib.request.urlopen(f"http://{pod_ip}/version", timeout=5) as response:
        return str(response.read().decode())


def _leftovers(folder: Path) -> dict[str, list[str]]:
    """Everything a real node puts on the machine, still there."""
    state = real_nodes.real_node(folder, REAL).folder
    processes = [
        " ".join(proc.info["cmdline"])
        for proc in psutil.process_iter(["cmdline", "status"])
        if proc.info["status"] != psutil.STATUS_ZOMBIE
        and any(str(folder) in part or str(state) in part for part in proc.info["cmdline"] or [])
    ]
    with open("/proc/self/mountinfo") as mountinfo:
        mounts = [
            line.split()[4]
            for line in mountinfo
            if str(folder) in line.split()[4] or str(state) in line.split()[4]
        ]
    cgroups = [str(path) for path in Path("/sys/fs/cgroup").glob(f"*/{real_nodes.CGROUP_PARENT}")]
    addresses = subprocess.run(
        [IP, "-o", "addr", "show", "dev", "lo"], capture_output=True, text=True, check=True
    ).stdout
    links = subprocess.run(
        [IP, "-o", "link", "show"], capture_output=True, text=True, check=True
    ).stdout
    log_links = [
        str(path)
        for path in real_nodes.CONTAINER_LOG_LINKS.glob("*")
        if path.is_symlink() and str(state) in str(path.readlink())
    ]
    return {
        "processes": processes,
        "mounts": mounts,
        "cgroups": cgroups,
        "addresses": [word for word in addresses.split() if word.startswith("10.254.99.")],
        "bridges": [word for word in links.split() if word.startswith("erlab-")],
        "container log links": log_links,
        "owner file": [str(real_nodes.OWNER_FILE)] if real_nodes.OWNER_FILE.exists() else [],
        "state": [str(state)] if state.exists() else [],
    }


NOTHING_LEFT: dict[str, list[str]] = {
    "processes": [],
    "mounts": [],
    "cgroups": [],
    "addresses": [],
    "bridges": [],
    "container log links": [],
    "owner file": [],
    "state": [],
}


def _daemonset(name: str, image: str) -> Any:
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": name},
        "spec": {
            "selector": {"matchLabels": {"app": name}},
            "updateStrategy": {"type": "OnDelete"},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {
                    "nodeSelector": {"lab.edgerollout.io/real": "true"},
                    "containers": [
                        {
                            "name": "web",
                            "image": image,
                            "readinessProbe": {
                                "httpGet": {"path": "/version", "port": 80},
                                "periodSeconds": 1,
                            },
                        }
                    ],
                },
            },
        },
    }


# On a lab of its own, which it stops; it runs before the session's labs start (one lab at a time
# runs real nodes).
def test_lab_down_leaves_nothing_of_a_real_node_behind(tmp_path: Path) -> None:
    folder = (tmp_path / "lab").resolve()
    lab = cluster.up(folder, nodes=1, real_nodes=1, say=lambda _: None)
    try:
        name = "web"
        namespace = "default"
        applied = subprocess.run(
            [KUBECTL, f"--kubeconfig={lab.kubeconfig}", "apply", "-n", namespace, "-f", "-"],
            input=json.dumps(_daemonset(name, lab.images[0])),
            capture_output=True,
            text=True,
            check=False,
        )
        assert applied.returncode == 0, applied.stderr
        asyncio.run(_wait_running(lab, lab.images[0]))
        assert _leftovers(folder)["mounts"] != []
    finally:
        stopped = cluster.down(folder, say=lambda _: None)

    assert {f"kubelet-{REAL}", f"containerd-{REAL}", "registry"} <= set(stopped)
    assert _leftovers(folder) == NOTHING_LEFT
    assert not (folder / "real").exists()


async def _wait_running(lab: Lab, image: str) -> None:
    async def running() -> bool:
        return bool(_on_real(lab, image))

    await wait_for(running, timeout=60, what=f"a running container of {image}")


def test_lab_json_describes_the_real_node_registry_and_images(lab: Lab) -> None:
    node = lab.node(REAL)
    registry = lab.registry
    assert registry is not None

    assert (node.real, lab.node("edge-1").real) == (True, False)
    assert node.runtime_endpoint == (f"unix://{real_nodes.real_node(lab.folder, REAL).socket}")
    assert node.runtime_endpoint.startswith("unix:///var/lib/edgerollout-lab/")
    assert lab.images == tuple(
        f"{registry}/nginx:{tag}"
        for tag in ("1.19.4", "1.19.5", "1.19.6", "1.19.7", "1.19.8", "1.19.9")
    )
    with urllib.request.urlopen(f"http://{registry}/v2/_catalog", timeout=5) as response:
        assert json.loads(response.read()) == {
            "repositories": ["crashing", "nginx", "pause", "toolbox"]
        }
    assert lab.toolbox_image == f"{registry}/toolbox:lab"
    assert lab.crashing_image == f"{registry}/crashing:lab"


async def test_real_node_runs_a_real_kubelet_and_containerd(kube: LabHandle) -> None:
    node = await kube.core.read_node(REAL)
    info = node.status.node_info

    assert info.kubelet_version == "v1.36.5"
    assert info.container_runtime_version.startswith("containerd://1.6.")
    assert [a.address for a in node.status.addresses if a.type == "InternalIP"] == ["10.254.99.1"]
    assert node.metadata.labels["lab.edgerollout.io/real"] == "true"
    assert await kube.node_ready(REAL) == "True"


async def test_on_delete_upgrade_replaces_the_real_container_with_the_new_image(
    lab: Lab, kube: LabHandle, namespace: str
) -> None:
    old, new = lab.images[0], lab.images[1]
    name = "web"
    await kube.apps.create_namespaced_daemon_set(namespace, _daemonset(name, old))
    first = await _ready_pod(kube, namespace, name)
    (old_container,) = (c.container for c in _on_real(lab, old))
    assert served_version(first.status.pod_ip) == "1.19.4\n"

    await kube.apps.patch_namespaced_daemon_set(
        name,
        namespace,
        {"spec": {"template": {"spec": {"containers": [{"name": "web", "image": new}]}}}},
    )
    await kube.core.delete_namespaced_pod(first.metadata.name, namespace)
    second = await _ready_pod(kube, namespace, name, not_uid=first.metadata.uid)

    after = running_containers(lab)
    assert (_on_real(lab, old), len(_on_real(lab, new))) == ([], 1)
    assert old_container not in {c.container for c in after}
    (status,) = second.status.container_statuses
    assert status.image_id == f"{new.rsplit(':', 1)[0]}@{image_digest(lab, new)}"
    assert served_version(second.status.pod_ip) == "1.19.5\n"


async def test_a_cut_real_node_goes_not_ready_and_its_container_keeps_running(
    lab: Lab, kube: LabHandle, namespace: str
) -> None:
    image = lab.images[2]
    await kube.apps.create_namespaced_daemon_set(namespace, _daemonset("web", image))
    pod = await _ready_pod(kube, namespace, "web")
    (container,) = _on_real(lab, image)

    await kube.cut_off(REAL)

    assert container in running_containers(lab)
    assert served_version(pod.status.pod_ip) == "1.19.6\n"

    await kube.reconnect(REAL)
    assert container in running_containers(lab)
    kept = await kube.core.read_namespaced_pod(pod.metadata.name, namespace)
    assert kept.metadata.uid == pod.metadata.uid


async def _ready_pod(
    kube: LabHandle, namespace: str, name: str, *, not_uid: str | None = None
) -> Any:
    """The DaemonSet's pod on the real node once it is Ready (another than `not_uid`)."""
    found: list[Any] = []

    async def ready() -> bool:
        pods = await kube.core.list_namespaced_pod(namespace, label_selector=f"app={name}")
        for pod in pods.items:
            statuses = pod.status.container_statuses or []
            if (
                pod.metadata.uid != not_uid
                and pod.metadata.deletion_timestamp is None
                and statuses
                and statuses[0].ready
            ):
                found[:] = [pod]
                return True
        return False

    await wait_for(ready, timeout=60, what=f"a Ready pod of {name} on {REAL}")
    return found[0]


def _registry_through_link(lab: Lab) -> str:
    """How the registry answers the node through its link: its HTTP status, or `cut`."""
    ports = json.loads((lab.folder / link.REGISTRY_PORTS_FILE).read_text())
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{ports[REAL]}/v2/", timeout=5) as answer:
            return str(answer.status)
    except (ConnectionError, http.client.HTTPException, urllib.error.URLError):
        return "cut"


def _pulled_event(events: Any, image: str) -> tuple[float, int] | None:
    """(seconds, bytes) from the kubelet's Pulled event for the image, if it has come."""
    for event in events.items:
        message = event.message or ""
        if event.reason == "Pulled" and f'"{image}"' in message:
            seconds = message.split(" in ", 1)[1].split(" ", 1)[0]
            size = int(message.rsplit("Image size: ", 1)[1].split(" ", 1)[0])
            return _duration(seconds), size
    return None


def _duration(text: str) -> float:
    """A Go duration as the kubelet prints it (`412ms`, `4.2s`, `1m3.5s`)."""
    if text.endswith("ms"):
        return float(text.removesuffix("ms")) / 1000
    minutes, _, seconds = text.removesuffix("s").rpartition("m")
    return float(minutes or 0) * 60 + float(seconds)


async def test_pulls_go_through_the_nodes_link_at_its_rate_and_stop_when_it_is_cut(
    lab: Lab, kube: LabHandle, namespace: str
) -> None:
    image = lab.images[3]  # pulled by no other test of this lab
    rate = 400_000.0
    cluster.set_link_rate(lab.folder, REAL, rate)
    try:
        await kube.apps.create_namespaced_daemon_set(namespace, _daemonset("web", image))
        await _ready_pod(kube, namespace, "web")

        async def pulled() -> tuple[float, int] | None:
            return _pulled_event(await kube.core.list_namespaced_event(namespace), image)

        seconds, size = await wait_for(pulled, timeout=30, what=f"the kubelet's Pulled {image}")

        # No faster than the link allows (bytes over rate), and not stalled beyond it.
        assert size > 1 << 20
        assert size / rate <= seconds < size / rate + 5

        assert await asyncio.to_thread(_registry_through_link, lab) == "200"
        await kube.disconnect(REAL)
        assert await asyncio.to_thread(_registry_through_link, lab) == "cut"
    finally:
        cluster.set_link_rate(lab.folder, REAL, None)


# --- the seed's scenarios with a real node among the edge nodes ------------------------------

NODES = ["edge-1", REAL]
ADVANCED = {
    "apps.openyurt.io/update-strategy": "AdvancedRollingUpdate",
    "apps.openyurt.io/max-unavailable": "1",
}


async def test_advanced_rolling_update_keeps_a_cut_real_nodes_container_and_upgrades_it_back(
    lab: Lab, kube: LabHandle, namespace: str, controller: ControllerProcess
) -> None:
    old, new = lab.images[0], lab.images[1]
    await kube.apps.create_namespaced_daemon_set(
        namespace, daemonset(NAME, image=old, strategy=ON_DELETE, annotations=ADVANCED)
    )
    before = await running_everywhere(kube, namespace, old, NODES)
    (kept,) = _on_real(lab, old)

    await kube.cut_off(REAL)
    await set_image(kube, namespace, NAME, new)

    async def edge1_updated() -> bool:
        pods = by_node(await kube.pods(namespace, SELECTOR)).get("edge-1", [])
        return len(pods) == 1 and images(pods[0]) == [new] and pod_ready(pods[0])

    await wait_for(edge1_updated, timeout=30, what="edge-1 on the new image")

    async def real_untouched() -> bool:
        pods = by_node(await kube.pods(namespace, SELECTOR)).get(REAL, [])
        return (
            [p.metadata.uid for p in pods] == [before[REAL]]
            and pods[0].metadata.deletion_timestamp is None
            and _on_real(lab, old) == [kept]
        )

    # Cut, the real node's pod is not deleted and its container keeps running.
    await hold_for(real_untouched, seconds=5, what="real-1's pod and container untouched")

    await kube.connect(REAL)
    after = await running_everywhere(kube, namespace, new, NODES, timeout=90)

    assert after[REAL] != before[REAL]
    assert _on_real(lab, old) == []
    (running,) = _on_real(lab, new)
    pod = await kube.core.read_namespaced_pod(
        by_node(await kube.pods(namespace, SELECTOR))[REAL][0].metadata.name, namespace
    )
    (status,) = pod.status.container_statuses
    assert status.image_id == f"{new.rsplit(':', 1)[0]}@{image_digest(lab, new)}"
    assert running.container == status.container_id.removeprefix("containerd://")


async def test_a_hold_taken_by_the_real_nodes_agent_keeps_its_container_until_it_is_lifted(
    lab: Lab, kube: LabHandle, namespace: str, controller: ControllerProcess
) -> None:
    old, new = lab.images[0], lab.images[1]
    agent = agent_of(lab, REAL)
    await kube.apps.create_namespaced_daemon_set(
        namespace, daemonset(NAME, image=old, strategy=ON_DELETE, annotations=ADVANCED)
    )
    before = await running_everywhere(kube, namespace, old, NODES)
    (held,) = by_node(await kube.pods(namespace, SELECTOR))[REAL]
    pod = held.metadata.name
    (kept,) = _on_real(lab, old)

    # The real node's agent, with its token, holds its pod: the condition is in the cluster.
    answer = await agent.hold(namespace, pod, reason="a car driving", **{"for": "1h"})
    taken = condition(await kube.core.read_namespaced_pod(pod, namespace), UPGRADE_HELD)
    assert taken is not None
    assert (taken.status, taken.reason) == ("True", "NodeAsked")
    until = taken.message.split(",", 1)[0].removeprefix("until ")
    assert (answer.status, answer.text) == (
        200,
        f"Upgrade of pod {namespace}/{pod} held until {until}",
    )
    assert taken.message.endswith(": a car driving")

    await set_image(kube, namespace, NAME, new)

    async def edge1_updated() -> bool:
        pods = by_node(await kube.pods(namespace, SELECTOR)).get("edge-1", [])
        return len(pods) == 1 and images(pods[0]) == [new] and pod_ready(pods[0])

    await wait_for(edge1_updated, timeout=30, what="edge-1 on the new image")

    async def real_held() -> bool:
        pods = by_node(await kube.pods(namespace, SELECTOR)).get(REAL, [])
        return (
            [p.metadata.uid for p in pods] == [before[REAL]]
            and pods[0].metadata.deletion_timestamp is None
            and _on_real(lab, old) == [kept]
        )

    # Held, the real node's pod keeps its UID and its container keeps running the old image,
    # though the budget (1) is free again once edge-1 is done.
    await hold_for(real_held, seconds=8, what="real-1's held pod and container untouched")
    assert served_version(held.status.pod_ip) == "1.19.4\n"
    assert await deleted_on(kube, namespace) == ["edge-1"]

    lifted = await agent.lift(namespace, pod)
    assert (lifted.status, lifted.text) == (200, f"Hold on pod {namespace}/{pod} lifted")
    after = await running_everywhere(kube, namespace, new, NODES, timeout=90)

    assert after[REAL] != before[REAL]
    assert await deleted_on(kube, namespace) == ["edge-1", REAL]
    assert _on_real(lab, old) == []
    (running,) = _on_real(lab, new)
    (upgraded,) = by_node(await kube.pods(namespace, SELECTOR))[REAL]
    (status,) = upgraded.status.container_statuses
    assert status.image_id == f"{new.rsplit(':', 1)[0]}@{image_digest(lab, new)}"
    assert running.container == status.container_id.removeprefix("containerd://")
    assert served_version(upgraded.status.pod_ip) == "1.19.5\n"


async def test_native_rolling_update_stalls_on_a_cut_real_node_until_its_kubelet_is_back(
    lab: Lab, kube: LabHandle, namespace: str
) -> None:
    old, new = lab.images[2], lab.images[0]
    rolling = {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 2}}
    await kube.apps.create_namespaced_daemon_set(
        namespace, daemonset(NAME, image=old, strategy=rolling)
    )
    before = await running_everywhere(kube, namespace, old, NODES)
    (kept,) = _on_real(lab, old)

    await kube.cut_off(REAL)
    await set_image(kube, namespace, NAME, new)

    async def terminating_but_running() -> bool:
        pods = by_node(await kube.pods(namespace, SELECTOR)).get(REAL, [])
        return (
            [p.metadata.uid for p in pods] == [before[REAL]]
            and pods[0].metadata.deletion_timestamp is not None
            and _on_real(lab, old) == [kept]
        )

    # The native controller deletes the cut node's pod; only its kubelet can finish that.
    await wait_for(terminating_but_running, timeout=30, what="real-1's pod Terminating")
    await hold_for(terminating_but_running, seconds=5, what="real-1's pod stuck Terminating")

    await kube.connect(REAL)
    after = await running_everywhere(kube, namespace, new, NODES, timeout=90)

    assert after[REAL] != before[REAL]
    assert _on_real(lab, old) == []
    assert len(_on_real(lab, new)) == 1


async def test_ota_imagepull_puts_the_image_on_the_real_node_before_upgrade_restarts_it(
    lab: Lab, kube: LabHandle, namespace: str, controller: ControllerProcess
) -> None:
    # An image no other test of this lab pulls: it reaches the node only through imagepull.
    old, new = lab.images[0], lab.images[4]
    agent = agent_of(lab, REAL)
    ota = {"apps.openyurt.io/update-strategy": "OTA"}
    await kube.apps.create_namespaced_daemon_set(
        namespace, daemonset(NAME, image=old, strategy=ON_DELETE, annotations=ota)
    )
    before = await running_everywhere(kube, namespace, old, NODES)
    pod = by_node(await kube.pods(namespace, SELECTOR))[REAL][0].metadata.name
    had_image = new in {row[0] for row in _ctr(lab, "images", "ls")}
    await set_image(kube, namespace, NAME, new)

    async def marked() -> bool:
        current = await kube.core.read_namespaced_pod(pod, namespace)
        need = condition(current, "PodNeedUpgrade")
        return need is not None and need.status == "True"

    await wait_for(marked, timeout=30, what="PodNeedUpgrade=True on real-1's pod")
    await assert_pull_requested(agent, namespace, pod)

    async def image_ready() -> bool:
        current = await kube.core.read_namespaced_pod(pod, namespace)
        ready = condition(current, "PodImageReady")
        return ready is not None and ready.status == "True"

    await wait_for(image_ready, timeout=90, what="PodImageReady=True on real-1's pod")
    # The image is in the node's containerd, and the pod still runs the old one.
    assert not had_image
    assert new in {row[0] for row in _ctr(lab, "images", "ls")}
    current = await kube.core.read_namespaced_pod(pod, namespace)
    assert current.metadata.uid == before[REAL]
    assert [c.image for c in current.spec.containers] == [old]
    assert len(_on_real(lab, old)) == 1

    await assert_upgrade_started(agent, namespace, pod)

    async def upgraded_on_real() -> bool:
        pods = by_node(await kube.pods(namespace, SELECTOR)).get(REAL, [])
        return (
            len(pods) == 1
            and pods[0].metadata.uid != before[REAL]
            and images(pods[0]) == [new]
            and pod_ready(pods[0])
        )

    await wait_for(upgraded_on_real, timeout=60, what="real-1 running the new image")
    assert _on_real(lab, old) == []
    assert len(_on_real(lab, new)) == 1
    (upgraded_pod,) = by_node(await kube.pods(namespace, SELECTOR))[REAL]

    async def pulled() -> list[tuple[bool, str]]:
        listed = await kube.core.list_namespaced_event(namespace)
        pods = {upgraded_pod.metadata.name, *pulled_by_jobs(listed)}
        return sorted(
            (e.involved_object.name.startswith("prepull-"), e.message.split(" in ", 1)[0])
            for e in listed.items
            if e.reason == "Pulled"
            and f'"{new}"' in (e.message or "")
            and e.involved_object.name in pods
        )

    async def both_told() -> bool:
        return len(await pulled()) >= 2

    # The kubelet writes its Events asynchronously: a loaded lab lists them a moment later.
    await wait_for(both_told, timeout=30, what="the kubelet's two Pulled Events")
    # One pull Job's pod; pulled once, by it; the upgraded pod found the image on the node.
    assert len(pulled_by_jobs(await kube.core.list_namespaced_event(namespace))) == 1
    assert await pulled() == [
        (
            False,
            f'Container image "{new}" already present on machine and can be accessed by the pod',
        ),
        (True, f'Successfully pulled image "{new}"'),
    ]


def pulled_by_jobs(events: Any) -> set[str]:
    """The names of the pull Jobs' pods, from the events of the namespace."""
    return {
        str(e.involved_object.name)
        for e in events.items
        if e.involved_object.kind == "Pod" and e.involved_object.name.startswith("prepull-")
    }


async def test_a_download_window_puts_the_image_on_the_real_node_before_the_maintenance_window(
    lab: Lab, kube: LabHandle, namespace: str, controller: ControllerProcess
) -> None:
    old, new = lab.images[0], lab.images[5]  # 5: pulled by no other test of this lab
    annotations = {
        UPDATE_STRATEGY_ANNOTATION: ADVANCED_ROLLING_UPDATE,
        MAX_UNAVAILABLE_ANNOTATION: "1",
        PREPULL_ANNOTATION: "true",
        PREPULL_WINDOW_ANNOTATION: closed_window(),
        MAINTENANCE_WINDOW_ANNOTATION: closed_window(),
    }
    await kube.apps.create_namespaced_daemon_set(
        namespace, daemonset(NAME, image=old, strategy=ON_DELETE, annotations=annotations)
    )
    before = await running_everywhere(kube, namespace, old, NODES)
    pod = by_node(await kube.pods(namespace, SELECTOR))[REAL][0].metadata.name
    (kept,) = _on_real(lab, old)
    await set_image(kube, namespace, NAME, new)
    revision = await newest_revision_hash(kube, namespace)

    async def pull(status: str | None) -> bool:
        current = await kube.core.read_namespaced_pod(pod, namespace)
        ready = condition(current, POD_IMAGE_READY)
        asked = ready is not None and ready.message == f"controllerrevision: {revision}"
        if status is None:
            return not asked and current.metadata.uid == before[REAL]
        return asked and ready is not None and ready.status == status

    # Both windows closed: no pull asked for, nothing on the node's disk.
    await hold_for(lambda: pull(None), seconds=5, what="no pull while the window is closed")
    assert new not in {row[0] for row in _ctr(lab, "images", "ls")}

    await kube.apps.patch_namespaced_daemon_set(
        NAME, namespace, {"metadata": {"annotations": {PREPULL_WINDOW_ANNOTATION: ALL_DAY}}}
    )
    await wait_for(lambda: pull("True"), timeout=90, what="PodImageReady=True on real-1's pod")
    # Pulled in the download window; the maintenance window is closed, the old pod runs on.
    assert new in {row[0] for row in _ctr(lab, "images", "ls")}
    current = await kube.core.read_namespaced_pod(pod, namespace)
    assert current.metadata.uid == before[REAL]
    assert current.metadata.deletion_timestamp is None
    assert _on_real(lab, old) == [kept]

    await kube.apps.patch_namespaced_daemon_set(
        NAME, namespace, {"metadata": {"annotations": {MAINTENANCE_WINDOW_ANNOTATION: ALL_DAY}}}
    )
    after = await running_everywhere(kube, namespace, new, NODES, timeout=60)
    assert after[REAL] != before[REAL]
    assert _on_real(lab, old) == []
    upgraded = by_node(await kube.pods(namespace, SELECTOR))[REAL][0].metadata.name

    async def told() -> list[str] | None:
        listed = await kube.core.list_namespaced_event(namespace)
        pulled = [
            e.message.split(" in ", 1)[0]
            for e in listed.items
            if e.reason == "Pulled" and e.involved_object.name == upgraded
        ]
        return pulled or None

    # The kubelet writes its Events asynchronously: a loaded lab lists them a moment later.
    assert await wait_for(told, timeout=30, what="the kubelet's Pulled Event for the new pod") == [
        f'Container image "{new}" already present on machine and can be accessed by the pod'
    ]
