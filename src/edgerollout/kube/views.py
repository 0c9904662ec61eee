"""Raw API objects reduced to what the controller keeps in memory.

The caches hold these small frozen records instead of the JSON the API server sends: a pod becomes
a `PodView` plus its owner's UID and the images of its containers, a Node its readiness. That is
what lets ten thousand pods fit in a few tens of megabytes, and it is the only place that knows
where in a Kubernetes object each fact lives — with `pod_fields`, which reads the pod the caches
keep (`CachedPod`, `pod_from_api`) from the few fields it needs, and which this module serves.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from edgerollout.domain.model import (
    Condition,
    ConditionStatus,
    DaemonSetUID,
    DaemonSetView,
    NodeName,
    NodeReadiness,
    NodeView,
    PodUID,
    RevisionView,
)
from edgerollout.domain.planning.ota_requests import PodFacts
from edgerollout.domain.planning.prepull import JobState, JobView, PullTemplate
from edgerollout.domain.planning.revisions import parse_template_generation
from edgerollout.domain.vocabulary import (
    CONTROLLER_REVISION_HASH_LABEL,
    NOT_READY_TAINT,
    PREPULL_LABEL,
    READY_CONDITION,
    ROLLOUT_CONDITION,
    TEMPLATE_GENERATION_ANNOTATION,
    UNREACHABLE_TAINT,
)
from edgerollout.kube.pod_fields import CachedPod as CachedPod
from edgerollout.kube.pod_fields import pod_from_api as pod_from_api
from edgerollout.kube.watch_events import api_time
from edgerollout.kube.watch_events import object_key as object_key

JSON = dict[str, Any]


def namespaced_name(obj: JSON) -> tuple[str, str]:
    """The object's namespace ("" for a cluster-scoped one) and name."""
    meta = obj.get("metadata") or {}
    return str(meta.get("namespace") or ""), str(meta.get("name") or "")


def object_uid(obj: JSON) -> str:
    """The object's UID ("" if it has none, as an object not yet created)."""
    return str((obj.get("metadata") or {}).get("uid") or "")


def controller_kind(meta: JSON) -> str | None:
    """The kind of the object's managing controller (None when it has none)."""
    for owner in meta.get("ownerReferences") or ():
        if owner.get("controller"):
            return str(owner.get("kind"))
    return None


def controller_uid(meta: JSON) -> str | None:
    """The UID of the object's managing controller (the owner reference with `controller: true`)."""
    for owner in meta.get("ownerReferences") or ():
        if owner.get("controller"):
            return str(owner.get("uid"))
    return None


@dataclass(frozen=True, slots=True)
class CachedRevision:
    owner_uid: str | None
    view: RevisionView


@dataclass(frozen=True, slots=True)
class CachedDaemonSet:
    view: DaemonSetView
    pod_template_images: tuple[str, ...]
    generation: int
    observed_generation: int
    pull_template: PullTemplate
    # `spec.selector` as a list's labelSelector (immutable in apps/v1).
    pod_selector: str = ""
    # The controller's own condition in `status.conditions` (design §9.2), if it carries one.
    rollout_condition: Condition | None = None


def job_from_api(obj: JSON) -> JobView | None:
    """A pre-pull Job of ours (None for any other Job, which the cache then does not keep)."""
    meta = obj.get("metadata") or {}
    if PREPULL_LABEL not in (meta.get("labels") or {}):
        return None
    state = JobState.RUNNING
    for condition in (obj.get("status") or {}).get("conditions") or ():
        if condition.get("status") != "True":
            continue
        if condition.get("type") == "Complete":
            state = JobState.SUCCEEDED
        elif condition.get("type") == "Failed":
            state = JobState.FAILED
    return JobView(
        namespace=meta.get("namespace", ""),
        name=meta.get("name", ""),
        state=state,
        owner_uid=_single_pod_owner(meta),
        pod_name=str((meta.get("labels") or {}).get(PREPULL_LABEL, "")),
    )


def _single_pod_owner(meta: JSON) -> PodUID | None:
    """The UID of the one owner reference of kind Pod (None unless there is exactly that one)."""
    owners = meta.get("ownerReferences") or []
    if len(owners) != 1:
        return None
    owner = owners[0]
    if owner.get("apiVersion") != "v1" or owner.get("kind") != "Pod" or not owner.get("uid"):
        return None
    return PodUID(str(owner["uid"]))


def pod_conditions(obj: JSON, *, kept: frozenset[str] | None = None) -> dict[str, Condition]:
    """An object's conditions by type (a pod's, a DaemonSet's; only the `kept` types, if given;
    the last of a repeated type)."""
    conditions: dict[str, Condition] = {}
    for raw in (obj.get("status") or {}).get("conditions") or ():
        kind = raw.get("type", "")
        if kept is not None and kind not in kept:
            continue
        conditions[kind] = Condition(
            type=kind,
            status=ConditionStatus.from_api(raw.get("status")),
            reason=raw.get("reason") or "",
            message=raw.get("message") or "",
            last_transition_time=raw.get("lastTransitionTime"),
        )
    return conditions


def pod_condition(obj: JSON, kind: str) -> Condition | None:
    """The pod's condition of that type (the last, if it is repeated), or None."""
    return pod_conditions(obj, kept=frozenset({kind})).get(kind)


def pod_ready(obj: JSON) -> bool:
    """Whether the pod's `Ready` condition is True."""
    condition = pod_condition(obj, READY_CONDITION)
    return condition is not None and condition.status is ConditionStatus.TRUE


def pod_phase(obj: JSON) -> str:
    """The pod's `status.phase` ("" before the API server has set one)."""
    return str((obj.get("status") or {}).get("phase") or "")


def bound_node(obj: JSON) -> str | None:
    """The node the pod is bound to (`spec.nodeName`), or None while it is not bound."""
    node = (obj.get("spec") or {}).get("nodeName")
    return str(node) if node else None


def pod_node(obj: JSON) -> str | None:
    """The node the pod is bound to or, not bound yet, the one its DaemonSet pinned it to."""
    return pod_from_api(obj).view.node_name


def marked_for_deletion(obj: JSON) -> bool:
    """Whether the object carries a `deletionTimestamp` (it is terminating)."""
    return (obj.get("metadata") or {}).get("deletionTimestamp") is not None


def _images(pod_spec: JSON) -> tuple[str, ...]:
    return tuple(str(c.get("image", "")) for c in pod_spec.get("containers") or ())


def pod_images(obj: JSON) -> tuple[str, ...]:
    """The images of the pod's containers, in their order (init containers left out)."""
    return _images(obj.get("spec") or {})


def pod_facts_from_api(obj: JSON) -> PodFacts:
    """What the agent judges a request for a pod by, from the pod read fresh: every condition, and
    the node it is bound to (`spec.nodeName` only: a pod not bound yet belongs to no node)."""
    meta = obj.get("metadata") or {}
    owner: JSON = next((o for o in meta.get("ownerReferences") or () if o.get("controller")), {})
    return PodFacts(
        namespace=meta.get("namespace", ""),
        name=meta.get("name", ""),
        node_name=bound_node(obj),
        deleting=marked_for_deletion(obj),
        owner_kind=owner.get("kind"),
        owner_name=owner.get("name"),
        conditions=pod_conditions(obj),
    )


def node_readiness(obj: JSON) -> tuple[ConditionStatus | None, datetime | None]:
    """The Node's `Ready` condition: its status and when it last changed (None, None: it has
    none, it never reported)."""
    status, since = None, None
    for condition in (obj.get("status") or {}).get("conditions") or ():
        if condition.get("type") == READY_CONDITION:
            status = ConditionStatus.from_api(condition.get("status"))
            since = api_time(condition.get("lastTransitionTime"))
    return status, since


def node_ready_condition(obj: JSON) -> ConditionStatus | None:
    """The status of the Node's `Ready` condition (None: it has none, it never reported)."""
    return node_readiness(obj)[0]


def node_from_api(obj: JSON) -> NodeView:
    meta = obj.get("metadata") or {}
    status, since = node_readiness(obj)
    return NodeView(
        name=NodeName(meta.get("name", "")),
        readiness=NodeReadiness.from_ready_condition(status),
        labels=dict(meta.get("labels") or {}),
        readiness_since=since,
    )


def revision_from_api(obj: JSON) -> CachedRevision:
    meta = obj.get("metadata") or {}
    labels = meta.get("labels") or {}
    # The DaemonSet controller copies the DaemonSet's annotations onto each revision it makes.
    annotations = meta.get("annotations") or {}
    return CachedRevision(
        owner_uid=controller_uid(meta),
        view=RevisionView(
            name=meta.get("name", ""),
            revision=int(obj.get("revision") or 0),
            hash=labels.get(CONTROLLER_REVISION_HASH_LABEL) or None,
            template_generation=parse_template_generation(
                annotations.get(TEMPLATE_GENERATION_ANNOTATION)
            ),
        ),
    )


def _desired(obj: JSON) -> int | None:
    status = obj.get("status") or {}
    if "desiredNumberScheduled" not in status:
        return None
    return int(status["desiredNumberScheduled"] or 0)


# The taint on a node of each not-Ready readiness: the native controller counts such a node in
# `desiredNumberScheduled` only if the pod template tolerates it with effect NoSchedule.
_NOT_READY_TAINTS = {
    NodeReadiness.NOT_READY: NOT_READY_TAINT,
    NodeReadiness.UNKNOWN: UNREACHABLE_TAINT,
}


def counted_while_not_ready(tolerations: Iterable[JSON]) -> frozenset[NodeReadiness]:
    """The not-Ready readinesses whose nodes a pod template with these tolerations still runs on
    (the tolerations match as the scheduler's do, for the taint's key with no value)."""
    listed = list(tolerations)
    return frozenset(
        readiness
        for readiness, key in _NOT_READY_TAINTS.items()
        if any(_tolerates_no_schedule(toleration, key) for toleration in listed)
    )


def _tolerates_no_schedule(toleration: JSON, key: str) -> bool:
    if (toleration.get("effect") or "") not in ("", "NoSchedule"):
        return False
    if (toleration.get("operator") or "Equal") == "Exists":
        return (toleration.get("key") or "") in ("", key)
    return toleration.get("key") == key and not toleration.get("value")


def daemonset_from_api(obj: JSON) -> CachedDaemonSet:
    meta = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    template_spec = (spec.get("template") or {}).get("spec") or {}
    return CachedDaemonSet(
        view=DaemonSetView(
            namespace=meta.get("namespace", ""),
            name=meta.get("name", ""),
            uid=DaemonSetUID(meta.get("uid", "")),
            annotations=dict(meta.get("annotations") or {}),
            update_strategy_type=(spec.get("updateStrategy") or {}).get("type") or "RollingUpdate",
            min_ready_seconds=int(spec.get("minReadySeconds") or 0),
            desired_nodes=_desired(obj),
            counted_while_not_ready=counted_while_not_ready(template_spec.get("tolerations") or ()),
        ),
        pod_template_images=_images(template_spec),
        generation=int(meta.get("generation") or 0),
        observed_generation=int((obj.get("status") or {}).get("observedGeneration") or 0),
        pull_template=PullTemplate(
            images=_images(template_spec),
            tolerations=tuple(template_spec.get("tolerations") or ()),
            image_pull_secrets=tuple(
                str(s.get("name")) for s in template_spec.get("imagePullSecrets") or ()
            ),
            service_account=template_spec.get("serviceAccountName") or None,
        ),
        pod_selector=pod_selector(obj),
        rollout_condition=pod_condition(obj, ROLLOUT_CONDITION),
    )


def pod_selector(obj: JSON) -> str:
    """The DaemonSet's pod selector (`spec.selector`) in the syntax of a list's labelSelector."""
    selector = (obj.get("spec") or {}).get("selector") or {}
    terms = [f"{key}={value}" for key, value in sorted((selector.get("matchLabels") or {}).items())]
    for expression in selector.get("matchExpressions") or ():
        key, operator = expression.get("key", ""), expression.get("operator", "")
        values = ",".join(expression.get("values") or ())
        if operator == "In":
            terms.append(f"{key} in ({values})")
        elif operator == "NotIn":
            terms.append(f"{key} notin ({values})")
        elif operator == "Exists":
            terms.append(key)
        elif operator == "DoesNotExist":
            terms.append(f"!{key}")
    return ",".join(terms)
