"""Kubernetes objects as the API server serves them, for tests of the shell.

The defaults describe the common case (an opted-in OnDelete DaemonSet `default/web`; a Running,
Ready pod of it; a Ready node), so that each test spells out only what its scenario is about.
The JSON carries the fields a kubelet and the native controller set, including the ones the views
must ignore, so that the reductions are exercised on realistic input.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from edgerollout.domain.vocabulary import (
    ADVANCED_ROLLING_UPDATE,
    CONTROLLER_REVISION_HASH_LABEL,
    MAX_UNAVAILABLE_ANNOTATION,
    ON_DELETE,
    POD_TEMPLATE_GENERATION_LABEL,
    TEMPLATE_GENERATION_ANNOTATION,
    UPDATE_STRATEGY_ANNOTATION,
)

JSON = dict[str, Any]

NAMESPACE: Final = "default"
WEB: Final = "web"
WEB_UID: Final = "uid-ds-web"
NEW: Final = "hash-new"
OLD: Final = "hash-old"
READY_SINCE: Final = "2025-03-01T11:00:00Z"
STRATEGY: Final = UPDATE_STRATEGY_ANNOTATION
MAX_UNAVAILABLE: Final = MAX_UNAVAILABLE_ANNOTATION
ADVANCED: Final = {STRATEGY: ADVANCED_ROLLING_UPDATE}


def daemonset_json(
    name: str = WEB,
    *,
    uid: str = WEB_UID,
    annotations: Mapping[str, str] | None = None,
    update_strategy: str = ON_DELETE,
    min_ready_seconds: int = 0,
    image: str = "nginx:1.27",
) -> JSON:
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {
            "name": name,
            "namespace": NAMESPACE,
            "uid": uid,
            "generation": 2,
            "annotations": {
                TEMPLATE_GENERATION_ANNOTATION: "2",
                **(ADVANCED if annotations is None else annotations),
            },
        },
        "spec": {
            "selector": {"matchLabels": {"app": name}},
            "updateStrategy": {"type": update_strategy},
            "minReadySeconds": min_ready_seconds,
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": name, "image": image}]},
            },
        },
        "status": {"observedGeneration": 2, "desiredNumberScheduled": 3},
    }


def owner_reference(owner_uid: str, *, kind: str = "DaemonSet", name: str = WEB) -> JSON:
    return {
        "apiVersion": "apps/v1",
        "kind": kind,
        "name": name,
        "uid": owner_uid,
        "controller": True,
        "blockOwnerDeletion": True,
    }


def pod_json(
    name: str,
    *,
    node: str,
    revision_hash: str = NEW,
    owner_uid: str | None = WEB_UID,
    owner_kind: str = "DaemonSet",
    ready: bool = True,
    uid: str | None = None,
    deleting: bool = False,
    conditions: list[JSON] | None = None,
    app: str = WEB,
) -> JSON:
    """A pod as the DaemonSet controller makes it (labels of the DaemonSet `app`'s selector)."""
    status = "True" if ready else "False"
    meta: JSON = {
        "name": name,
        "namespace": NAMESPACE,
        "uid": uid or f"uid-{name}",
        "labels": {
            "app": app,
            CONTROLLER_REVISION_HASH_LABEL: revision_hash,
            POD_TEMPLATE_GENERATION_LABEL: "2" if revision_hash == NEW else "1",
        },
    }
    if owner_uid is not None:
        meta["ownerReferences"] = [owner_reference(owner_uid, kind=owner_kind)]
    if deleting:
        meta["deletionTimestamp"] = "2025-03-01T12:00:00Z"
        meta["deletionGracePeriodSeconds"] = 30
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": {"nodeName": node, "containers": [{"name": WEB, "image": "nginx:1.27"}]},
        "status": {
            "phase": "Running",
            "conditions": [
                {"type": "Initialized", "status": "True", "lastTransitionTime": READY_SINCE},
                {"type": "Ready", "status": status, "lastTransitionTime": READY_SINCE},
                {"type": "ContainersReady", "status": status, "lastTransitionTime": READY_SINCE},
                {"type": "PodScheduled", "status": "True", "lastTransitionTime": READY_SINCE},
                *(conditions or []),
            ],
        },
    }


def node_json(
    name: str, *, ready: str | None = "True", heartbeat: str = "2025-03-01T12:00:00Z"
) -> JSON:
    conditions: list[JSON] = [
        {"type": "MemoryPressure", "status": "False", "lastHeartbeatTime": heartbeat},
    ]
    if ready is not None:
        conditions.append(
            {
                "type": "Ready",
                "status": ready,
                "reason": "KubeletReady",
                "lastHeartbeatTime": heartbeat,
                "lastTransitionTime": "2025-03-01T10:00:00Z",
            }
        )
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "status": {"conditions": conditions},
    }


def revision_json(
    name: str,
    *,
    number: int,
    revision_hash: str,
    owner_uid: str = WEB_UID,
    generation: int | None = None,
) -> JSON:
    """A DaemonSet's ControllerRevision; with `generation`, the DaemonSet's template generation
    its controller copied onto it."""
    metadata: JSON = {
        "name": name,
        "namespace": NAMESPACE,
        "uid": f"uid-{name}",
        "labels": {"app": WEB, CONTROLLER_REVISION_HASH_LABEL: revision_hash},
        "ownerReferences": [owner_reference(owner_uid)],
    }
    if generation is not None:
        metadata["annotations"] = {TEMPLATE_GENERATION_ANNOTATION: str(generation)}
    return {
        "apiVersion": "apps/v1",
        "kind": "ControllerRevision",
        "metadata": metadata,
        "revision": number,
        "data": {"spec": {"template": {"$patch": "replace"}}},
    }
