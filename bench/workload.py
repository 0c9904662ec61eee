"""The DaemonSets the benchmarks roll out, and the few writes a user makes to them."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from edgerollout.domain.vocabulary import (
    ADVANCED_ROLLING_UPDATE,
    DAEMONSET_KIND,
    MAX_UNAVAILABLE_ANNOTATION,
    ON_DELETE,
    OTA,
    UPDATE_STRATEGY_ANNOTATION,
)
from edgerollout.kube.api import DAEMONSETS, NAMESPACES, PODS, ApiError, KubeApi

JSON = dict[str, Any]
IMAGES = ("nginx:1.25.0", "nginx:1.25.1", "nginx:1.25.2", "nginx:1.25.3")
FOOTPRINT_NAMESPACE = "bench-footprint"
AGENT_NAMESPACE = "bench-agent"
DASHBOARD_NAMESPACE = "bench-dashboard"


def image(version: int) -> str:
    """The image of the `version`-th change (any number of them, for repeated measurements)."""
    return f"nginx:1.26.{version}"


NATIVE_NAMESPACE = "bench-native"
OURS_NAMESPACE = "bench-edgerollout"


def rolling_update(max_unavailable: str) -> JSON:
    return {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": max_unavailable}}


def daemonset(
    name: str,
    *,
    image: str,
    strategy: JSON,
    annotations: dict[str, str] | None = None,
    tolerate_everything: bool = False,
) -> JSON:
    spec: JSON = {"containers": [{"name": "app", "image": image}]}
    if tolerate_everything:
        spec["tolerations"] = [{"operator": "Exists"}]
    return {
        "apiVersion": "apps/v1",
        "kind": DAEMONSET_KIND,
        "metadata": {"name": name, "annotations": annotations or {}},
        "spec": {
            "selector": {"matchLabels": {"app": name}},
            "updateStrategy": strategy,
            "template": {"metadata": {"labels": {"app": name}}, "spec": spec},
        },
    }


def advanced_rolling_update(name: str, *, image: str, max_unavailable: str) -> JSON:
    return daemonset(
        name,
        image=image,
        strategy={"type": ON_DELETE},
        annotations={
            UPDATE_STRATEGY_ANNOTATION: ADVANCED_ROLLING_UPDATE,
            MAX_UNAVAILABLE_ANNOTATION: max_unavailable,
        },
    )


def on_every_node(name: str) -> JSON:
    """An opted-in DaemonSet at the first image whose pods go to every node, tainted ones
    included: on the plain Node objects some scenarios make, which no kubelet runs, one pod
    each, Pending for ever."""
    return daemonset(
        name,
        image=IMAGES[0],
        strategy={"type": ON_DELETE},
        annotations={UPDATE_STRATEGY_ANNOTATION: ADVANCED_ROLLING_UPDATE},
        tolerate_everything=True,
    )


def ota(name: str, *, image: str) -> JSON:
    return daemonset(
        name,
        image=image,
        strategy={"type": ON_DELETE},
        annotations={UPDATE_STRATEGY_ANNOTATION: OTA},
    )


async def create_namespace(api: KubeApi, name: str) -> None:
    try:
        await api.create(
            NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
        )
    except ApiError as error:
        if error.conflict:
            return
        raise


async def create(api: KubeApi, namespace: str, manifest: JSON) -> None:
    await api.create(DAEMONSETS, manifest, namespace=namespace)


async def set_image(api: KubeApi, namespace: str, name: str, image: str) -> None:
    patch = {"spec": {"template": {"spec": {"containers": [{"name": "app", "image": image}]}}}}
    await api.patch(DAEMONSETS, name, patch, namespace=namespace)


async def count_pods(api: KubeApi, namespace: str, *, label: str | None = None) -> int:
    total, token = 0, None
    while True:
        page = await api.list(PODS, namespace=namespace, label_selector=label, continue_token=token)
        total += len(page.items)
        token = page.continue_token
        if token is None:
            return total


async def delete_and_wait(api: KubeApi, namespace: str, name: str, *, timeout: float) -> None:
    """Delete the DaemonSet with its pods and wait until none of them is left (clean-up between
    scenarios, so that one scenario's garbage collection does not load the next one)."""
    await api.delete(DAEMONSETS, name, namespace=namespace, propagation="Foreground")
    deadline = time.monotonic() + timeout
    while await count_pods(api, namespace, label=f"app={name}"):
        if time.monotonic() > deadline:
            raise TimeoutError(f"pods of {namespace}/{name} still present after {timeout:.0f} s")
        await asyncio.sleep(1)
