"""A pod as the controller keeps it (`CachedPod`), read from the fields it needs and no others.

A pod's watch event is about 4.5 kB of JSON, most of it what the controller never reads (its
managed fields, volumes, tolerations, container statuses' details). Decoding it whole into
dictionaries, then picking the facts out, was the largest part of the controller's CPU per
replaced pod (docs/scale.md). Here msgspec decodes an event's bytes straight into the few
`Struct`s below, skipping the rest without building it, and `cached_pod` makes the view from
them. A pod already decoded into a dictionary (a list's page, a GET) is converted into the same
Structs, so that there is one reading of a pod, whatever brought it.

Every field may be absent or null: the API server omits empty fields, and a pod the cache cannot
read would stop its whole cache (it lists again until it can).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import msgspec

from edgerollout.domain.model import (
    Condition,
    ConditionStatus,
    ContainerFailure,
    NodeName,
    PodUID,
    PodView,
)
from edgerollout.domain.planning.revisions import parse_template_generation
from edgerollout.domain.vocabulary import (
    CONTAINERS_READY_CONDITION,
    CONTROLLER_REVISION_HASH_LABEL,
    FAILING_WAITING_REASONS,
    POD_IMAGE_READY,
    POD_NEED_UPGRADE,
    POD_READY_TO_START_CONTAINERS,
    POD_TEMPLATE_GENERATION_LABEL,
    READY_CONDITION,
    UPGRADE_HELD,
)
from edgerollout.kube.watch_events import (
    EventDecoder,
    WatchEvent,
    api_time,
    error_event,
    object_key,
)

# Pod conditions worth keeping: readiness (for availability) and the ones edgerollout writes,
# the node's hold among them (design §13.6).
KEPT_CONDITIONS = frozenset({READY_CONDITION, POD_NEED_UPGRADE, POD_IMAGE_READY, UPGRADE_HELD})
# The conditions a pod's view is read from: the kept ones, and those whose times are the facts of
# its health (`PodView`), not kept themselves.
_READ_CONDITIONS = KEPT_CONDITIONS | {CONTAINERS_READY_CONDITION, POD_READY_TO_START_CONTAINERS}
# Each failing reason kept as the one shared string, not a copy per pod.
_FAILING_REASONS = {reason: reason for reason in FAILING_WAITING_REASONS}


@dataclass(frozen=True, slots=True)
class CachedPod:
    owner_uid: str | None
    owner_kind: str | None
    images: tuple[str, ...]
    view: PodView


class _Owner(msgspec.Struct):
    kind: str | None = None
    uid: str | None = None
    controller: bool | None = None


class _Metadata(msgspec.Struct):
    name: str | None = None
    namespace: str | None = None
    uid: str | None = None
    resourceVersion: str | None = None  # noqa: N815 - the API's name
    creationTimestamp: str | None = None  # noqa: N815
    deletionTimestamp: str | None = None  # noqa: N815
    labels: dict[str, str] | None = None
    ownerReferences: list[_Owner] | None = None  # noqa: N815


class _Container(msgspec.Struct):
    image: str | None = None


class _MatchField(msgspec.Struct):
    key: str | None = None
    values: list[str] | None = None


class _Term(msgspec.Struct):
    matchFields: list[_MatchField] | None = None  # noqa: N815


class _Required(msgspec.Struct):
    nodeSelectorTerms: list[_Term] | None = None  # noqa: N815


class _NodeAffinity(
    msgspec.Struct, rename={"required": "requiredDuringSchedulingIgnoredDuringExecution"}
):
    required: _Required | None = None


class _Affinity(msgspec.Struct):
    nodeAffinity: _NodeAffinity | None = None  # noqa: N815


class _Spec(msgspec.Struct):
    nodeName: str | None = None  # noqa: N815
    containers: list[_Container] | None = None
    affinity: _Affinity | None = None


class _Condition(msgspec.Struct):
    type: str | None = None
    status: str | None = None
    reason: str | None = None
    message: str | None = None
    lastTransitionTime: str | None = None  # noqa: N815


class _Terminated(msgspec.Struct):
    finishedAt: str | None = None  # noqa: N815


class _LastState(msgspec.Struct):
    terminated: _Terminated | None = None


class _Waiting(msgspec.Struct):
    reason: str | None = None


class _State(msgspec.Struct):
    waiting: _Waiting | None = None


class _ContainerStatus(msgspec.Struct):
    name: str | None = None
    state: _State | None = None
    lastState: _LastState | None = None  # noqa: N815


class _Status(msgspec.Struct):
    conditions: list[_Condition] | None = None
    initContainerStatuses: list[_ContainerStatus] | None = None  # noqa: N815
    containerStatuses: list[_ContainerStatus] | None = None  # noqa: N815


class PodFields(msgspec.Struct):
    """What is read of a pod; also of an ERROR event's Status (`code`, `reason`, `message`, and
    a `status` that is a string there), which a pod watch's event may carry instead."""

    metadata: _Metadata | None = None
    spec: _Spec | None = None
    status: _Status | str | None = None
    code: int | None = None
    reason: str | None = None
    message: str | None = None


class _PodEvent(msgspec.Struct):
    type: str | None = None
    object: PodFields | None = None


_EVENTS = msgspec.json.Decoder(_PodEvent)
_NO_METADATA = _Metadata()
_NO_SPEC = _Spec()
_NO_STATUS = _Status()


def _pinned_node(spec: _Spec) -> str | None:
    """The node a pending DaemonSet pod is pinned to by the node affinity its controller sets."""
    affinity = spec.affinity.nodeAffinity if spec.affinity is not None else None
    required = affinity.required if affinity is not None else None
    for term in (required.nodeSelectorTerms if required is not None else None) or ():
        for field in term.matchFields or ():
            if field.key == "metadata.name" and field.values and len(field.values) == 1:
                return field.values[0]
    return None


def _unready_since(condition: Condition | None, created: datetime | None) -> datetime | None:
    """Since when the `ContainersReady` condition has not been True (the pod's creation while the
    kubelet has not set it, or set it without a time); None while it is True."""
    if condition is None:
        return created
    if condition.status is ConditionStatus.TRUE:
        return None
    return api_time(condition.last_transition_time) or created


def _true_since(condition: Condition | None) -> datetime | None:
    """When the condition turned True, if it is True now."""
    if condition is None or condition.status is not ConditionStatus.TRUE:
        return None
    return api_time(condition.last_transition_time)


def _containers(status: _Status) -> tuple[tuple[ContainerFailure, ...], datetime | None]:
    """The containers waiting for a failing reason (`FAILING_WAITING_REASONS`), init containers
    first, and when a container last terminated before being started again (the latest
    `lastState.terminated.finishedAt`; a restart whose end the runtime lost has none)."""
    failures: list[ContainerFailure] = []
    latest: datetime | None = None
    for statuses in (status.initContainerStatuses, status.containerStatuses):
        for container in statuses or ():
            waiting = container.state.waiting if container.state is not None else None
            if waiting is not None:
                reason = _FAILING_REASONS.get(waiting.reason or "")
                if reason is not None:
                    failures.append(ContainerFailure(container=container.name or "", reason=reason))
            last = container.lastState
            terminated = last.terminated if last is not None else None
            if terminated is not None:
                finished = api_time(terminated.finishedAt)
                if finished is not None and (latest is None or finished > latest):
                    latest = finished
    return tuple(failures), latest


def cached_pod(pod: PodFields) -> CachedPod:
    """The pod as the caches keep it."""
    meta = pod.metadata or _NO_METADATA
    spec = pod.spec or _NO_SPEC
    status = pod.status if isinstance(pod.status, _Status) else _NO_STATUS
    read: dict[str, Condition] = {}
    for raw in status.conditions or ():
        kind = raw.type or ""
        if kind in _READ_CONDITIONS:
            read[kind] = Condition(
                type=kind,
                status=ConditionStatus.from_api(raw.status),
                reason=raw.reason or "",
                message=raw.message or "",
                last_transition_time=raw.lastTransitionTime,
            )
    conditions = {kind: read[kind] for kind in read if kind in KEPT_CONDITIONS}
    created = api_time(meta.creationTimestamp)
    readiness = conditions.get(READY_CONDITION)
    ready = readiness is not None and readiness.status is ConditionStatus.TRUE
    node = spec.nodeName or _pinned_node(spec)
    owner_uid = owner_kind = None
    for owner in meta.ownerReferences or ():
        if owner.controller:
            if owner_uid is None:
                owner_uid = owner.uid or ""
            owner_kind = owner.kind
    labels = meta.labels or {}
    failures, last_restart = _containers(status)
    view = PodView(
        namespace=meta.namespace or "",
        name=meta.name or "",
        uid=PodUID(meta.uid or ""),
        node_name=NodeName(node) if node else None,
        revision_hash=labels.get(CONTROLLER_REVISION_HASH_LABEL) or None,
        template_generation=parse_template_generation(labels.get(POD_TEMPLATE_GENERATION_LABEL)),
        deleting=meta.deletionTimestamp is not None,
        ready=ready,
        ready_since=api_time(readiness.last_transition_time) if ready and readiness else None,
        conditions=conditions,
        created=created,
        containers_unready_since=_unready_since(read.get(CONTAINERS_READY_CONDITION), created),
        sandbox_since=_true_since(read.get(POD_READY_TO_START_CONTAINERS)),
        last_restart=last_restart,
        failures=failures,
    )
    images = tuple(container.image or "" for container in spec.containers or ())
    return CachedPod(owner_uid=owner_uid, owner_kind=owner_kind, images=images, view=view)


def pod_from_api(obj: dict[str, Any]) -> CachedPod:
    """A pod already decoded (a list's item, a GET's answer), read as a watch event's is."""
    return cached_pod(msgspec.convert(obj, PodFields))


def pod_events(keep: Callable[[CachedPod], bool]) -> EventDecoder[CachedPod]:
    """A pod watch's lines decoded; an added or modified pod kept only if `keep` says so."""

    def decode(line: bytes) -> WatchEvent[CachedPod]:
        event = _EVENTS.decode(line)
        kind = event.type or ""
        obj = event.object or PodFields()
        if kind == "ERROR":
            return error_event(obj.code or 0, obj.reason or "", obj.message or "")
        meta = obj.metadata or _NO_METADATA
        version = meta.resourceVersion
        if kind == "BOOKMARK":
            return WatchEvent(kind, "", version)
        key = object_key(meta.namespace, meta.name or "")
        if kind == "DELETED":
            return WatchEvent(kind, key, version)
        pod = cached_pod(obj)
        return WatchEvent(kind, key, version, pod if keep(pod) else None)

    return decode
