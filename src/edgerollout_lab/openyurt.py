"""OpenYurt's yurt-manager beside a running lab: the controller edgerollout is compared with.

Only its `daemonpodupdater` controller runs (AdvancedRollingUpdate and OTA, design §11.9), with no
webhook and no leader election, on free loopback ports, logging to `DIR/logs/yurt-manager.log`.
It reads and watches through the identity of its kubeconfig (the lab's admin here), but writes
through the ServiceAccount it creates for that controller and mints tokens for; it creates no RBAC,
so the lab grants that ServiceAccount what the controller writes before starting it.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any, ClassVar, cast

from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from edgerollout_lab import processes
from edgerollout_lab.api import api_client
from edgerollout_lab.build import binary
from edgerollout_lab.cluster import Lab
from edgerollout_lab.controller_process import HOST, ControllerProcess
from edgerollout_lab.versions import OPENYURT

PROGRAM = "yurt-manager"
# The controller's name on the command line, and the name it runs and logs under.
CONTROLLER = "daemonpodupdater"
CONTROLLER_NAME = "daemon-pod-updater-controller"
# yurt-manager names a controller's ServiceAccount "yurt-manager-<controller's name>", in its
# working namespace (kube-system unless --working-namespace says otherwise).
SERVICE_ACCOUNT_NAMESPACE = "kube-system"
SERVICE_ACCOUNT = f"yurt-manager-{CONTROLLER_NAME}"
ROLE = "lab.edgerollout.io:openyurt-daemon-pod-updater"
# controller-runtime logs this once the controller's informers have listed; before it, a DaemonSet
# update goes unseen (its first list delivers create events, which this controller ignores).
WORKERS_STARTED = f'"msg"="Starting workers" "controller"="{CONTROLLER_NAME}"'
# Its first start lists every pod and node of the lab; the benchmark's labs hold thousands.
READY_TIMEOUT = 120.0

# What the controller writes as its ServiceAccount: the rules of its source's kubebuilder markers
# (daemonsets get/update, nodes get/update/patch, pods get/update/patch/delete), which upstream's
# chart grants, plus pods/status, where it writes PodNeedUpgrade and which that chart lacks. Its
# reads come from the manager's caches, under the kubeconfig's identity, so no list or watch here.
RULES: tuple[dict[str, Any], ...] = (
    {"apiGroups": ["apps"], "resources": ["daemonsets"], "verbs": ["get", "update"]},
    {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "patch", "update"]},
    {"apiGroups": [""], "resources": ["pods"], "verbs": ["delete", "get", "patch", "update"]},
    {"apiGroups": [""], "resources": ["pods/status"], "verbs": ["patch", "update"]},
)


def rbac_manifests() -> tuple[dict[str, Any], dict[str, Any]]:
    """The ClusterRole of `RULES` and its binding to the controller's ServiceAccount."""
    role = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": ROLE},
        "rules": [dict(rule) for rule in RULES],
    }
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": ROLE},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": ROLE},
        "subjects": [
            {
                "kind": "ServiceAccount",
                "name": SERVICE_ACCOUNT,
                "namespace": SERVICE_ACCOUNT_NAMESPACE,
            }
        ],
    }
    return role, binding


async def grant(kubeconfig: Path) -> None:
    """Create the controller's ClusterRole and binding, or bring them back to `rbac_manifests`."""
    role, binding = rbac_manifests()
    async with api_client(kubeconfig) as api:
        rbac = client.RbacAuthorizationV1Api(api)
        try:
            await rbac.create_cluster_role(cast(Any, role))
        except ApiException as error:
            if error.status != 409:  # 409 Conflict: granted before, on this lab
                raise
            await rbac.replace_cluster_role(ROLE, cast(Any, role))
        try:
            await rbac.create_cluster_role_binding(cast(Any, binding))
        except ApiException as error:
            if error.status != 409:
                raise
            await rbac.replace_cluster_role_binding(ROLE, cast(Any, binding))


def yurt_manager_argv(
    program: Path,
    kubeconfig: Path,
    *,
    metrics_port: int,
    health_port: int,
    extra: Sequence[str] = (),
) -> list[str]:
    """The command line of yurt-manager running only its DaemonSet pod updater."""
    return [
        str(program),
        f"--kubeconfig={kubeconfig}",
        f"--controllers={CONTROLLER}",
        # Every independent webhook off: none would be called here, and with none registered no
        # webhook server starts (it would want certificates and the fixed port 10273).
        "--disable-independent-webhooks=*",
        "--leader-elect=false",
        f"--metrics-addr={HOST}:{metrics_port}",
        f"--health-probe-addr={HOST}:{health_port}",
        *extra,
    ]


class YurtManager(ControllerProcess):
    """yurt-manager as a process: started, waited for and stopped as edgerollout's controller is."""

    what: ClassVar[str] = PROGRAM

    @staticmethod
    def argv(
        kubeconfig: Path, *, metrics_port: int, health_port: int, extra: Sequence[str]
    ) -> list[str]:
        return yurt_manager_argv(
            binary(PROGRAM, OPENYURT),
            kubeconfig,
            metrics_port=metrics_port,
            health_port=health_port,
            extra=extra,
        )

    @staticmethod
    def environment(kubeconfig: Path) -> dict[str, str]:
        # It loads $KUBECONFIG (or the in-cluster config) before it reads --kubeconfig, and exits
        # if there is neither.
        return {**os.environ, "KUBECONFIG": str(kubeconfig)}

    def ready(self) -> bool:
        """Serving its health probe, and its controller's informers have listed.

        Its /readyz answers 200 as soon as the probe server runs, before any cache has listed."""
        return super().ready() and WORKERS_STARTED in self.run_log_text()


async def start_yurt_manager(lab: Lab, *extra: str, timeout: float = READY_TIMEOUT) -> YurtManager:
    """Grant the controller's RBAC on the lab, start yurt-manager against it and wait until it is
    ready; stop it again if it is not. Its log is `DIR/logs/yurt-manager.log`."""
    await grant(lab.kubeconfig)
    handle = YurtManager.launch(lab.kubeconfig, processes.log_path(lab.folder, PROGRAM), *extra)
    try:
        await handle.wait_ready(timeout=timeout)
    except BaseException:
        handle.stop()
        raise
    return handle


# How often the peer's DaemonSets are touched while it runs (`resyncing`).
RESYNC_SECONDS = 10.0
RESYNC_ANNOTATION = "lab.edgerollout.io/resync"
# The annotation that opts a DaemonSet in to yurt-manager's daemonpodupdater.
STRATEGY_ANNOTATION = "apps.openyurt.io/update-strategy"


@contextlib.asynccontextmanager
async def resyncing(kubeconfig: Path) -> AsyncIterator[None]:
    """While the block runs, touch every DaemonSet opted in to yurt-manager every
    `RESYNC_SECONDS` (an annotation of its own), as a resync period would wake it.

    yurt-manager reconciles a DaemonSet only on an update that changes its resourceVersion, and
    returns early while the deletions it asked for are not all observed; when the DaemonSet's
    last status update is handled before the last deletion is, nothing wakes it again (no resync:
    its predicate drops updates without a new resourceVersion) and the rollout stalls for good.
    The lab's tests and the benchmark are about what the peer decides, not about that lost
    wake-up, which docs/openyurt-comparison.md reports; edgerollout's DaemonSets are never
    touched."""

    async def touch() -> None:
        async with api_client(kubeconfig) as api:
            apps = client.AppsV1Api(api)
            for count in itertools.count(1):
                await asyncio.sleep(RESYNC_SECONDS)
                listed = await apps.list_daemon_set_for_all_namespaces()
                patch = {"metadata": {"annotations": {RESYNC_ANNOTATION: str(count)}}}
                for ds in listed.items:
                    if STRATEGY_ANNOTATION not in (ds.metadata.annotations or {}):
                        continue
                    with contextlib.suppress(ApiException):
                        await apps.patch_namespaced_daemon_set(
                            ds.metadata.name, ds.metadata.namespace, patch
                        )

    task = asyncio.create_task(touch(), name="peer-resync")
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
