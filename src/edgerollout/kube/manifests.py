"""Kubernetes manifests and patches for what the product writes, rendered from domain decisions.

A condition write (`domain.conditions.ConditionWrite`) is sent as a strategic merge patch of
`pods/status` holding that single condition, with the pod's UID as a precondition
(`condition_patch`, design §5.2): conditions merge by `type`, so the kubelet's own are untouched.

The domain decides *that* a pull Job runs, where and for what (`domain.prepull.PullJob`); this
module alone knows how such a Job is spelled in the API (design §6.2): an init container copies a
statically linked busybox into a shared emptyDir, and one container per image runs
`<that busybox> true`, so any image can be pulled, distroless or `scratch` included. Every
container passes PodSecurity `restricted`, so pre-pull works in a namespace that enforces it: a
fixed unprivileged user, no capabilities, no privilege escalation, the runtime's default seccomp
profile and a read-only root filesystem (only the emptyDir is written).
"""

from __future__ import annotations

from typing import Any

from edgerollout.domain.model import Condition
from edgerollout.domain.planning.conditions import ConditionWrite
from edgerollout.domain.planning.prepull import PullJob
from edgerollout.domain.vocabulary import PREPULL_LABEL, REVISION_ANNOTATION, ROLLOUT_CONDITION
from edgerollout.settings import PULL_JOB

TOOLBOX_MOUNT = "/edgerollout-pull"


def _tiny_resources() -> dict[str, Any]:
    """Almost nothing for each container: the sizes, and why, are in `edgerollout.settings`."""
    return {
        "requests": {"cpu": PULL_JOB.cpu_request, "memory": PULL_JOB.memory_request},
        "limits": {"cpu": PULL_JOB.cpu_limit, "memory": PULL_JOB.memory_limit},
    }


def _pod_security_context() -> dict[str, Any]:
    """What PodSecurity `restricted` asks of the pod; each container restates the user."""
    return {
        "runAsNonRoot": True,
        "runAsUser": PULL_JOB.user,
        "runAsGroup": PULL_JOB.user,
        "seccompProfile": {"type": "RuntimeDefault"},
    }


def _container_security_context() -> dict[str, Any]:
    """PodSecurity `restricted` for one container, and a read-only root filesystem on top."""
    return {
        "runAsNonRoot": True,
        "runAsUser": PULL_JOB.user,
        "runAsGroup": PULL_JOB.user,
        "allowPrivilegeEscalation": False,
        "capabilities": {"drop": ["ALL"]},
        "seccompProfile": {"type": "RuntimeDefault"},
        "readOnlyRootFilesystem": True,
    }


def pull_job_manifest(job: PullJob) -> dict[str, Any]:
    """The batch/v1 Job that pulls `job.images` on `job.node_name`."""
    containers = [
        {
            "name": f"pull-{index}",
            "image": image,
            "command": [f"{TOOLBOX_MOUNT}/busybox", "true"],
            "volumeMounts": [{"name": "toolbox", "mountPath": TOOLBOX_MOUNT, "readOnly": True}],
            "resources": _tiny_resources(),
            "securityContext": _container_security_context(),
        }
        for index, image in enumerate(job.images)
    ]
    spec: dict[str, Any] = {
        "nodeName": job.node_name,
        "restartPolicy": "Never",
        "automountServiceAccountToken": False,
        "securityContext": _pod_security_context(),
        "tolerations": [dict(toleration) for toleration in job.tolerations],
        "initContainers": [
            {
                "name": "toolbox",
                "image": job.toolbox_image,
                "command": ["cp", "/bin/busybox", f"{TOOLBOX_MOUNT}/busybox"],
                "volumeMounts": [{"name": "toolbox", "mountPath": TOOLBOX_MOUNT}],
                "resources": _tiny_resources(),
                "securityContext": _container_security_context(),
            }
        ],
        "containers": containers,
        "volumes": [{"name": "toolbox", "emptyDir": {}}],
    }
    if job.image_pull_secrets:
        spec["imagePullSecrets"] = [{"name": name} for name in job.image_pull_secrets]
    if job.service_account:
        spec["serviceAccountName"] = job.service_account
    labels = {PREPULL_LABEL: job.pod_name}
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": job.name,
            "namespace": job.namespace,
            "labels": labels,
            "annotations": {REVISION_ANNOTATION: job.revision},
            # Owned by the pod: an upgraded or deleted pod takes its pull Job with it.
            "ownerReferences": [
                {"apiVersion": "v1", "kind": "Pod", "name": job.pod_name, "uid": job.pod_uid}
            ],
        },
        "spec": {
            "backoffLimit": 0,
            "activeDeadlineSeconds": job.deadline_seconds,
            "ttlSecondsAfterFinished": PULL_JOB.finished_ttl_seconds,
            "template": {"metadata": {"labels": labels}, "spec": spec},
        },
    }


def status_patch(condition: Condition) -> dict[str, Any]:
    """`{"status": {"conditions": [<condition>]}}`, the condition in the API's field names."""
    entry = {
        "type": condition.type,
        "status": str(condition.status),
        "reason": condition.reason,
        "message": condition.message,
    }
    if condition.last_transition_time is not None:
        entry["lastTransitionTime"] = condition.last_transition_time
    return {"status": {"conditions": [entry]}}


def rollout_condition_patch(condition: Condition | None, *, uid: str) -> dict[str, Any]:
    """The `daemonsets/status` strategic merge patch that sets the controller's rollout condition
    (None: removes it), preconditioned on the DaemonSet's UID. The list merges by `type`, so
    every other condition, and every other status field, stays as the API server has it."""
    if condition is None:
        removal = {"type": ROLLOUT_CONDITION, "$patch": "delete"}
        return {"metadata": {"uid": uid}, "status": {"conditions": [removal]}}
    return {"metadata": {"uid": uid}, **status_patch(condition)}


def condition_patch(write: ConditionWrite) -> dict[str, Any]:
    """The `pods/status` patch of `write`, preconditioned on the pod's UID."""
    return {"metadata": {"uid": write.uid}, **status_patch(write.condition)}
