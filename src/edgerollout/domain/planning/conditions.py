"""The pod conditions edgerollout keeps, and the one patch that writes each of them.

`PodNeedUpgrade` (design §5) tells the node whether its pod of an OTA DaemonSet is on the newest
revision: `True` when it is not, `False` when it is, with the message
`controllerrevision: <newest hash>` (OpenYurt v1.7). `PodImageReady` (design §6) tracks an image
pre-pull with the reasons `WaitPullImage`, `PullImageSuccess` and `PullImageFail` and the same
message format, naming the revision whose images were pulled.

A condition is written only when its status, reason or message would change, so a reconcile that
finds everything right writes nothing; `lastTransitionTime` moves only when the status does, as
Kubernetes' own `UpdatePodCondition` does. The reason takes part in the comparison because
`PodImageReady` goes from `False/WaitPullImage` to `False/PullImageFail` without a status change.

The write is a strategic merge patch of `pods/status` holding that single condition (rendered by
`kube.manifests.condition_patch`). Conditions
merge by `type`, so the kubelet's `Ready`, `ContainersReady`, ... are left untouched; a JSON merge
patch or a full status update would replace or race with them.

The message needs the newest revision *hash*: while only the template generation is known (no
ControllerRevision in the cache yet), no `PodNeedUpgrade` is written; the next reconcile, once the
revision is seen, writes it.
"""

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime

from edgerollout.domain.model import Condition, ConditionStatus, NodeName, PodUID, PodView
from edgerollout.domain.planning.holds import Hold
from edgerollout.domain.planning.revisions import TargetRevision, is_current
from edgerollout.domain.timestamps import format_rfc3339
from edgerollout.domain.vocabulary import (
    POD_IMAGE_READY,
    POD_NEED_UPGRADE,
    REVISION_MESSAGE_PREFIX,
)


def revision_message(revision_hash: str) -> str:
    """`controllerrevision: <hash>`: the message naming the revision a condition speaks of."""
    return f"{REVISION_MESSAGE_PREFIX}{revision_hash}"


def revision_in_message(message: str) -> str | None:
    """The hash named by a `controllerrevision: <hash>` message; None for any other message."""
    if not message.startswith(REVISION_MESSAGE_PREFIX):
        return None
    return message.removeprefix(REVISION_MESSAGE_PREFIX) or None


@dataclass(frozen=True, slots=True, kw_only=True)
class ConditionWrite:
    """One condition to patch onto one pod."""

    namespace: str
    name: str
    uid: PodUID
    condition: Condition


def next_condition(
    existing: Condition | None,
    *,
    type: str,
    status: ConditionStatus,
    message: str,
    reason: str = "",
    now: datetime,
) -> Condition | None:
    """The condition to write so the pod says (status, reason, message); None if it already does.

    The transition time is `now` when the status changes (or the condition is new, or carries no
    transition time), and the existing one otherwise.
    """
    if (
        existing is not None
        and existing.status == status
        and existing.reason == reason
        and existing.message == message
    ):
        return None
    if existing is not None and existing.status == status and existing.last_transition_time:
        transition = existing.last_transition_time
    else:
        transition = format_rfc3339(now)
    return Condition(
        type=type,
        status=status,
        reason=reason,
        message=message,
        last_transition_time=transition,
    )


def plan_need_upgrade(
    *,
    pods: Iterable[PodView],
    target: TargetRevision,
    now: datetime,
    held: Mapping[NodeName, Hold] | None = None,
) -> tuple[ConditionWrite, ...]:
    """The `PodNeedUpgrade` writes that bring every pod of an OTA DaemonSet up to date.

    An outdated pod on a node a staged rollout holds (`held`, design §12) is told `False`, with
    the hold as the reason (`HeldByPartition`, ...): the node is not offered the upgrade, and
    learns why; a node holding its own upgrade (design §13.6) is still offered it. Terminating
    pods are skipped (they are going away, and their status may no longer
    be writable). The writes are ordered by namespace and pod name.
    """
    if not target.hash:
        return ()
    held = held or {}
    message = revision_message(target.hash)
    writes = []
    for pod in sorted(pods, key=lambda pod: (pod.namespace, pod.name, pod.uid)):
        if pod.deleting:
            continue
        reason = ""
        if is_current(pod, target):
            status = ConditionStatus.FALSE
        elif (
            pod.node_name is not None
            and (hold := held.get(pod.node_name)) is not None
            and hold.withholds_offer
        ):
            status, reason = ConditionStatus.FALSE, hold.condition_reason
        else:
            status = ConditionStatus.TRUE
        condition = next_condition(
            pod.conditions.get(POD_NEED_UPGRADE),
            type=POD_NEED_UPGRADE,
            status=status,
            reason=reason,
            message=message,
            now=now,
        )
        if condition is not None:
            writes.append(_write(pod, condition))
    return tuple(writes)


def plan_image_ready(
    pod: PodView,
    *,
    status: ConditionStatus,
    reason: str,
    revision_hash: str,
    now: datetime,
) -> ConditionWrite | None:
    """The `PodImageReady` write for a pre-pull of `revision_hash`; None if the pod says so already.

    `reason` is one of `WaitPullImage` (requested), `PullImageSuccess`, `PullImageFail`.
    """
    condition = next_condition(
        pod.conditions.get(POD_IMAGE_READY),
        type=POD_IMAGE_READY,
        status=status,
        reason=reason,
        message=revision_message(revision_hash),
        now=now,
    )
    return None if condition is None else _write(pod, condition)


def _write(pod: PodView, condition: Condition) -> ConditionWrite:
    return ConditionWrite(namespace=pod.namespace, name=pod.name, uid=pod.uid, condition=condition)
