"""The controller keeps only what rollouts read: beside an opted-in DaemonSet, the pods of a
DaemonSet left alone, of a Deployment and of a StatefulSet, the StatefulSet's ControllerRevisions
and a Job of someone else's are in none of its caches (design §10.1), read from its
`edgerollout_cache_objects` metric on the real API server."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes_asyncio import client

from tests.e2e.support.controller_process import ControllerProcess
from tests.e2e.support.lab import LabHandle, hold_for, wait_for
from tests.e2e.support.seed import NODES, seed_daemonset

pytestmark = pytest.mark.lab(nodes=3)

SHOP_REPLICAS = 12
DB_REPLICAS = 2


def _manifest(kind: str, name: str, spec: dict[str, Any]) -> Any:
    """A plain manifest, as a user would apply it (the client accepts dicts where it types models)."""
    api_version = "batch/v1" if kind == "Job" else "apps/v1"
    return {"apiVersion": api_version, "kind": kind, "metadata": {"name": name}, "spec": spec}


def _template(app: str) -> dict[str, Any]:
    return {
        "metadata": {"labels": {"app": app}},
        "spec": {"containers": [{"name": app, "image": "nginx:1.19.4"}]},
    }


async def _others(kube: LabHandle, namespace: str) -> None:
    """A DaemonSet left alone, a Deployment, a StatefulSet and a Job beside the opted-in
    DaemonSet, each with its pods."""
    await kube.apps.create_namespaced_daemon_set(
        namespace,
        _manifest(
            "DaemonSet",
            "logs",
            {"selector": {"matchLabels": {"app": "logs"}}, "template": _template("logs")},
        ),
    )
    await kube.apps.create_namespaced_deployment(
        namespace,
        _manifest(
            "Deployment",
            "shop",
            {
                "replicas": SHOP_REPLICAS,
                "selector": {"matchLabels": {"app": "shop"}},
                "template": _template("shop"),
            },
        ),
    )
    await kube.apps.create_namespaced_stateful_set(
        namespace,
        _manifest(
            "StatefulSet",
            "db",
            {
                "replicas": DB_REPLICAS,
                "serviceName": "db",
                "podManagementPolicy": "Parallel",
                "selector": {"matchLabels": {"app": "db"}},
                "template": _template("db"),
            },
        ),
    )
    backup = _template("backup")
    backup["spec"]["restartPolicy"] = "Never"
    await client.BatchV1Api(kube.api).create_namespaced_job(
        namespace, _manifest("Job", "backup", {"template": backup})
    )


async def test_only_the_opted_in_daemonsets_pods_are_cached(
    kube: LabHandle, namespace: str, controller: ControllerProcess
) -> None:
    await seed_daemonset(
        kube, namespace, annotations={"apps.openyurt.io/update-strategy": "AdvancedRollingUpdate"}
    )
    await _others(kube, namespace)

    async def everything_exists() -> bool:
        pods = (await kube.core.list_namespaced_pod(namespace)).items
        revisions = (await kube.apps.list_namespaced_controller_revision(namespace)).items
        objects: list[Any] = [*pods, *revisions]
        owners = sorted(
            {ref.kind for item in objects for ref in item.metadata.owner_references or []}
        )
        return len(pods) == 2 * len(NODES) + SHOP_REPLICAS + DB_REPLICAS + 1 and owners == [
            "DaemonSet",
            "Job",
            "ReplicaSet",
            "StatefulSet",
        ]

    await wait_for(everything_exists, timeout=60, what="every workload's pods and revisions")

    def cached() -> dict[str, float]:
        return {
            resource: controller.metric("edgerollout_cache_objects", resource=resource)
            for resource in ("daemonsets", "pods", "controllerrevisions", "jobs")
        }

    # Both DaemonSets and their revisions; the opted-in one's pods only.
    only_the_daemonsets = {
        "daemonsets": 2.0,
        "pods": float(len(NODES)),
        "controllerrevisions": 2.0,
        "jobs": 0.0,
    }

    async def only_the_daemonsets_held() -> bool:
        return cached() == only_the_daemonsets

    await hold_for(
        only_the_daemonsets_held, seconds=5, what="only the opted-in DaemonSet's pods cached"
    )
    assert cached() == only_the_daemonsets
