"""The lab's kubelets fail the pods of its marked images as real ones do (`kwok_stages`): a
DaemonSet's pod of `CRASHLOOP_IMAGE` runs but never gets Ready, its container in CrashLoopBackOff;
one of `UNPULLABLE_IMAGE` stays Pending in ImagePullBackOff; a Job's pod of `CRASHLOOP_IMAGE`
completes, as a pre-pull Job's does. Each status is checked field by field, and it stays."""

from __future__ import annotations

import datetime
import ipaddress
from typing import Any

import pytest
from kubernetes_asyncio import client

from edgerollout_lab.kwok_stages import CRASHLOOP_IMAGE, UNPULLABLE_IMAGE
from tests.e2e.support.lab import (
    LabHandle,
    by_node,
    daemonset,
    hold_for,
    served,
    set_image,
    wait_for,
)
from tests.e2e.support.seed import NAME, NEW, NODES, ON_DELETE, SELECTOR, running_everywhere

pytestmark = pytest.mark.lab(nodes=3)

HOLD_SECONDS = 5
# Where KWOK takes pod IPs from (its `cidr` option).
POD_NETWORK = ipaddress.ip_network("10.0.0.0/16")
TIMESTAMPS = {"lastTransitionTime", "startedAt", "finishedAt", "startTime"}
# What stands in for each timestamp in an expected status.
TIME = "<time>"


def timestamp(value: str) -> str:
    """`TIME`, once `value` reads as a time."""
    datetime.datetime.fromisoformat(value)
    return TIME


def stamped(value: Any) -> Any:
    """`value` with each timestamp read as `TIME`."""
    if isinstance(value, list):
        return [stamped(item) for item in value]
    if isinstance(value, dict):
        return {
            key: timestamp(item) if key in TIMESTAMPS else stamped(item)
            for key, item in value.items()
        }
    return value


def conditions(status: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {condition["type"]: stamped(condition) for condition in status["conditions"]}


def not_ready_conditions(unready: str) -> dict[str, dict[str, Any]]:
    """A scheduled pod whose sandbox is up and whose containers `unready` are not ready."""
    not_ready = {
        "status": "False",
        "reason": "ContainersNotReady",
        "message": f"containers with unready status: [{unready}]",
        "lastTransitionTime": TIME,
    }
    return {
        "PodScheduled": {"type": "PodScheduled", "status": "True", "lastTransitionTime": TIME},
        "PodReadyToStartContainers": {
            "type": "PodReadyToStartContainers",
            "status": "True",
            "lastTransitionTime": TIME,
        },
        "Initialized": {"type": "Initialized", "status": "True", "lastTransitionTime": TIME},
        "ContainersReady": {"type": "ContainersReady", **not_ready},
        "Ready": {"type": "Ready", **not_ready},
    }


def crash_looping(container: str, pod: client.V1Pod) -> dict[str, Any]:
    """The status of a container of `CRASHLOOP_IMAGE` in `pod`, as a kubelet reports it."""
    meta = pod.metadata
    return {
        "name": container,
        "image": CRASHLOOP_IMAGE,
        "imageID": f"kwok://{CRASHLOOP_IMAGE}",
        "ready": False,
        "started": False,
        "restartCount": 1,
        "lastState": {
            "terminated": {
                "exitCode": 1,
                "reason": "Error",
                "startedAt": TIME,
                "finishedAt": TIME,
            }
        },
        "state": {
            "waiting": {
                "reason": "CrashLoopBackOff",
                "message": f"back-off 10s restarting failed container={container} "
                f"pod={meta.name}_{meta.namespace}({meta.uid})",
            }
        },
    }


async def one_pod_per_node(
    kube: LabHandle, namespace: str, waiting: str
) -> dict[str, client.V1Pod]:
    """Wait until each node has one pod, each with a container waiting for `waiting`."""

    async def probe() -> dict[str, client.V1Pod] | None:
        grouped = by_node(await kube.pods(namespace, SELECTOR))
        if sorted(grouped) != NODES or any(len(pods) != 1 for pods in grouped.values()):
            return None
        pods = {node: found[0] for node, found in grouped.items()}
        if all(
            any(
                (status.state.waiting and status.state.waiting.reason) == waiting
                for status in pod.status.container_statuses or []
            )
            for pod in pods.values()
        ):
            return pods
        return None

    return await wait_for(probe, timeout=30, what=f"a pod waiting in {waiting} on each of {NODES}")


async def assert_placed(kube: LabHandle, node: str, status: dict[str, Any]) -> None:
    """The pod has its node's IP, an IP of its own and a start time, as a started sandbox has."""
    addresses = (await kube.core.read_node(node)).status.addresses
    assert status["hostIP"] == next(a.address for a in addresses if a.type == "InternalIP")
    assert ipaddress.ip_address(status["podIP"]) in POD_NETWORK
    assert timestamp(status["startTime"]) == TIME


async def statuses(kube: LabHandle, namespace: str) -> dict[str, Any]:
    return {pod.metadata.uid: served(pod.status) for pod in await kube.pods(namespace, SELECTOR)}


async def hold_statuses(kube: LabHandle, namespace: str) -> None:
    """Every pod keeps exactly the status it has now (nothing revives or restarts it)."""
    before = await statuses(kube, namespace)

    async def unchanged() -> bool:
        return await statuses(kube, namespace) == before

    await hold_for(unchanged, seconds=HOLD_SECONDS, what="every pod's status as it was")


async def failing_pods(
    kube: LabHandle, namespace: str, image: str, reason: str, phase: str
) -> dict[str, client.V1Pod]:
    """A DaemonSet of `image`: its pod on each node, in `phase` and placed on that node, its
    container not ready (waiting for `reason`); its container statuses are the caller's to check."""
    await kube.apps.create_namespaced_daemon_set(
        namespace, daemonset(NAME, image=image, strategy=ON_DELETE)
    )
    pods = await one_pod_per_node(kube, namespace, reason)
    for node, pod in pods.items():
        status = served(pod.status)
        assert status["phase"] == phase
        await assert_placed(kube, node, status)
        assert conditions(status) == not_ready_conditions("nginx")
    return pods


async def test_a_daemonset_pod_of_the_crashloop_image_runs_but_is_never_ready_until_fixed(
    kube: LabHandle, namespace: str
) -> None:
    pods = await failing_pods(kube, namespace, CRASHLOOP_IMAGE, "CrashLoopBackOff", "Running")
    for pod in pods.values():
        assert stamped(served(pod.status)["containerStatuses"]) == [crash_looping("nginx", pod)]
    await hold_statuses(kube, namespace)

    await set_image(kube, namespace, NAME, NEW)
    for pod in pods.values():
        await kube.core.delete_namespaced_pod(pod.metadata.name, namespace)
    await running_everywhere(kube, namespace, NEW, NODES)


async def test_only_the_container_of_the_crashloop_image_crash_loops(
    kube: LabHandle, namespace: str
) -> None:
    manifest = daemonset(NAME, image=NEW, strategy=ON_DELETE)
    containers = manifest["spec"]["template"]["spec"]["containers"]
    containers.append({"name": "crasher", "image": CRASHLOOP_IMAGE})
    await kube.apps.create_namespaced_daemon_set(namespace, manifest)

    pods = await one_pod_per_node(kube, namespace, "CrashLoopBackOff")
    for pod in pods.values():
        status = served(pod.status)
        assert status["phase"] == "Running"
        assert conditions(status) == not_ready_conditions("crasher")
        assert stamped(status["containerStatuses"]) == [
            {
                "name": "nginx",
                "image": NEW,
                "imageID": f"kwok://{NEW}",
                "ready": True,
                "started": True,
                "restartCount": 0,
                "lastState": {},
                "state": {"running": {"startedAt": TIME}},
            },
            crash_looping("crasher", pod),
        ]


async def test_a_daemonset_pod_of_the_unpullable_image_stays_pending_in_image_pull_back_off(
    kube: LabHandle, namespace: str
) -> None:
    pods = await failing_pods(kube, namespace, UNPULLABLE_IMAGE, "ImagePullBackOff", "Pending")
    for pod in pods.values():
        assert stamped(served(pod.status)["containerStatuses"]) == [
            {
                "name": "nginx",
                "image": UNPULLABLE_IMAGE,
                "imageID": "",
                "ready": False,
                "started": False,
                "restartCount": 0,
                "lastState": {},
                "state": {
                    "waiting": {
                        "reason": "ImagePullBackOff",
                        "message": f'Back-off pulling image "{UNPULLABLE_IMAGE}"',
                    }
                },
            }
        ]
    await hold_statuses(kube, namespace)


async def test_a_job_pod_of_the_crashloop_image_completes_as_a_pre_pull_does(
    kube: LabHandle, namespace: str
) -> None:
    batch = client.BatchV1Api(kube.api)
    job: Any = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "pull"},
        "spec": {
            "backoffLimit": 0,
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [{"name": "pull", "image": CRASHLOOP_IMAGE, "command": ["true"]}],
                }
            },
        },
    }
    await batch.create_namespaced_job(namespace, job)

    async def finished() -> tuple[str, int | None] | None:
        status = (await batch.read_namespaced_job("pull", namespace)).status
        ends = [c.type for c in status.conditions or [] if c.type in ("Complete", "Failed")]
        return (ends[0], status.succeeded) if ends else None

    assert await wait_for(finished, timeout=30, what="the Job to finish") == ("Complete", 1)
