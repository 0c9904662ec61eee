"""Image pre-pull (design §6): a node asks for the new images before it upgrades, a Job pulls them.

The agent's `imagepull` writes `PodImageReady=False`, reason `WaitPullImage`, naming the newest
revision. The controller then runs, on that node, a Job whose containers use every image of the
newest pod template, and reports the outcome on the pod: `True`/`PullImageSuccess` or
`False`/`PullImageFail`. The Job is deleted once reported, and is owned by the pod, so it goes
away with it if the pod is upgraded or deleted first.

Any image can be pulled this way, including distroless or `scratch` images without a shell or a
`true` binary: an init container copies a statically linked busybox into a shared emptyDir, and
each image's container runs `<that busybox> true`. The container runtime must pull an image to
create its container; what then runs comes from the emptyDir. The Job tolerates what the
DaemonSet's pods tolerate (their tolerations plus those the DaemonSet controller adds), is pinned
to the node by `nodeName`, and gives up after a deadline.

A Job is the controller's only if its one owner reference names the pod's UID. The label and the
name alone prove nothing: anyone who may create Jobs in the namespace can spell both (the name is
derived from the pod's UID and the revision, both readable), and a Job reported as succeeded
tells the node its images are there. A Job that carries the name but not the owner is ignored:
the pod is neither reported nor given a Job of ours (the name is taken) until it is gone.
"""

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from enum import Enum
from typing import Any

from edgerollout.domain.model import ConditionStatus, NodeName, PodUID, PodView
from edgerollout.domain.planning.conditions import (
    ConditionWrite,
    plan_image_ready,
    revision_in_message,
)
from edgerollout.domain.vocabulary import (
    NOT_READY_TAINT,
    POD_IMAGE_READY,
    PULL_IMAGE_FAIL,
    PULL_IMAGE_SUCCESS,
    UNREACHABLE_TAINT,
    WAIT_PULL_IMAGE,
)
from edgerollout.settings import PrepullSettings

# What the DaemonSet controller adds to every daemon pod, so a pull Job survives the same taints.
DAEMON_TOLERATIONS: tuple[dict[str, str], ...] = (
    {"key": NOT_READY_TAINT, "operator": "Exists", "effect": "NoExecute"},
    {"key": UNREACHABLE_TAINT, "operator": "Exists", "effect": "NoExecute"},
    {"key": "node.kubernetes.io/disk-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/memory-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/pid-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"},
)


class JobState(Enum):
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"


@dataclass(frozen=True, slots=True, kw_only=True)
class JobView:
    """A pull Job: where it is, which pod it pulls for, and how far it got.

    `owner_uid` is the UID of its single owner reference of kind Pod (None if it has none, more
    than one, or one of another kind): only a Job owned by the pod it names is trusted."""

    namespace: str
    name: str
    state: JobState
    owner_uid: PodUID | None
    pod_name: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class PullTemplate:
    """What a pull Job copies from the DaemonSet's newest pod template."""

    images: tuple[str, ...]
    tolerations: tuple[dict[str, Any], ...] = ()
    image_pull_secrets: tuple[str, ...] = ()
    service_account: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class PullJob:
    """A pull Job to create: where it runs, for which pod and revision, and what it pulls.

    A decision, not a manifest: `kube.manifests.pull_job_manifest` renders it. `tolerations`
    are the template's plus the ones the DaemonSet controller adds to daemon pods."""

    namespace: str
    name: str
    pod_name: str
    pod_uid: PodUID
    node_name: NodeName
    revision: str
    images: tuple[str, ...]
    tolerations: tuple[dict[str, Any], ...]
    image_pull_secrets: tuple[str, ...] = ()
    service_account: str | None = None
    toolbox_image: str
    deadline_seconds: int


@dataclass(frozen=True, slots=True, kw_only=True)
class PrepullStep:
    """One step for one pod: create its Job, or report the Job's outcome and delete it."""

    pod: PodView
    revision: str
    create_job: PullJob | None = None
    report: ConditionWrite | None = None
    delete_job: str | None = None


def job_name(pod: PodView, revision: str) -> str:
    digest = hashlib.sha256(f"{pod.uid}/{revision}".encode()).hexdigest()[:12]
    return f"prepull-{digest}"


def requested_revision(pod: PodView) -> str | None:
    """The revision whose pre-pull the pod is waiting for (None if it waits for nothing)."""
    condition = pod.conditions.get(POD_IMAGE_READY)
    if condition is None or condition.status is not ConditionStatus.FALSE:
        return None
    if condition.reason != WAIT_PULL_IMAGE:
        return None
    return revision_in_message(condition.message)


def pull_job(
    pod: PodView,
    *,
    revision: str,
    template: PullTemplate,
    settings: PrepullSettings,
) -> PullJob:
    """The Job that pulls every image of `template` on the pod's node."""
    tolerations = list(template.tolerations)
    tolerations += [t for t in DAEMON_TOLERATIONS if t not in tolerations]
    assert pod.node_name is not None, "only a pod on a node asks for a pre-pull"
    return PullJob(
        namespace=pod.namespace,
        name=job_name(pod, revision),
        pod_name=pod.name,
        pod_uid=pod.uid,
        node_name=pod.node_name,
        revision=revision,
        images=template.images,
        tolerations=tuple(tolerations),
        image_pull_secrets=template.image_pull_secrets,
        service_account=template.service_account,
        toolbox_image=settings.toolbox_image,
        deadline_seconds=settings.deadline_seconds,
    )


def plan_prepulls(
    *,
    pods: Iterable[PodView],
    newest: str | None,
    jobs: Mapping[str, JobView],
    template: PullTemplate,
    settings: PrepullSettings,
    now: datetime,
) -> tuple[PrepullStep, ...]:
    """For each pod waiting for a pre-pull of the newest revision: start or finish its Job.

    `jobs` are the pull Jobs that exist, by name. A request for a revision that is no longer the
    newest is left alone: the pod will be marked for the newer one and the node can ask again.
    """
    steps = []
    for pod in sorted(pods, key=lambda p: p.name):
        revision = requested_revision(pod)
        if revision is None or revision != newest or pod.deleting or pod.node_name is None:
            continue
        name = job_name(pod, revision)
        job = jobs.get(name)
        if job is not None and job.owner_uid != pod.uid:
            continue  # not ours: see the module docstring
        if job is None:
            create = pull_job(pod, revision=revision, template=template, settings=settings)
            steps.append(PrepullStep(pod=pod, revision=revision, create_job=create))
        elif job.state is not JobState.RUNNING:
            ok = job.state is JobState.SUCCEEDED
            report = plan_image_ready(
                pod,
                status=ConditionStatus.TRUE if ok else ConditionStatus.FALSE,
                reason=PULL_IMAGE_SUCCESS if ok else PULL_IMAGE_FAIL,
                revision_hash=revision,
                now=now,
            )
            steps.append(PrepullStep(pod=pod, revision=revision, report=report, delete_job=name))
    return tuple(steps)
