"""A pod watch's lines decoded into the few fields the controller reads, as a list's pods are."""

from __future__ import annotations

from datetime import UTC, datetime

import orjson
import pytest

from edgerollout.domain.model import ContainerFailure
from edgerollout.kube.api import ApiError
from edgerollout.kube.pod_fields import CachedPod, pod_events, pod_from_api
from edgerollout.kube.watch_events import WatchEvent

from .objects import JSON, NAMESPACE, WEB_UID, pod_json


def line(kind: str, obj: JSON) -> bytes:
    return orjson.dumps({"type": kind, "object": obj})


def everything(pod: CachedPod) -> bool:
    return True


def crash_looping() -> JSON:
    """A pod with every field its view reads, and many it does not (managed fields, volumes)."""
    pod = pod_json("web-a", node="edge-1", ready=False)
    pod["metadata"]["managedFields"] = [{"manager": "kubelet", "fieldsV1": {"f:status": {}}}]
    pod["metadata"]["creationTimestamp"] = "2025-03-01T11:00:00Z"
    pod["spec"]["volumes"] = [{"name": "token", "projected": {"sources": []}}]
    pod["status"]["initContainerStatuses"] = [
        {"name": "init", "state": {"terminated": {"exitCode": 0}}, "lastState": {}}
    ]
    pod["status"]["containerStatuses"] = [
        {
            "name": "web",
            "state": {"waiting": {"reason": "CrashLoopBackOff", "message": "back-off"}},
            "lastState": {"terminated": {"finishedAt": "2025-03-01T11:20:00Z", "exitCode": 1}},
            "restartCount": 4,
        }
    ]
    return pod


@pytest.mark.parametrize("kind", ["ADDED", "MODIFIED"])
def test_an_added_or_changed_pod_is_read_as_a_listed_one_is(kind: str) -> None:
    pod = crash_looping()

    event = pod_events(everything)(line(kind, pod))

    assert event == WatchEvent(kind, f"{NAMESPACE}/web-a", None, pod_from_api(pod))
    assert event.kept is not None
    assert event.kept.owner_uid == WEB_UID
    assert event.kept.view.failures == (
        ContainerFailure(container="web", reason="CrashLoopBackOff"),
    )
    assert event.kept.view.last_restart == datetime(2025, 3, 1, 11, 20, tzinfo=UTC)


def test_a_pod_the_cache_does_not_keep_is_an_event_without_one() -> None:
    pod = pod_json("web-a", node="edge-1")
    pod["metadata"]["resourceVersion"] = "41"

    event = pod_events(lambda cached: cached.owner_uid == "another")(line("MODIFIED", pod))

    assert event == WatchEvent("MODIFIED", f"{NAMESPACE}/web-a", "41", None)


def test_a_deletion_names_its_pod_and_keeps_nothing() -> None:
    pod = pod_json("web-a", node="edge-1", deleting=True)
    pod["metadata"]["resourceVersion"] = "42"

    assert pod_events(everything)(line("DELETED", pod)) == WatchEvent(
        "DELETED", f"{NAMESPACE}/web-a", "42", None
    )


def test_a_bookmark_moves_the_resource_version_only() -> None:
    bookmark = {"kind": "Pod", "apiVersion": "v1", "metadata": {"resourceVersion": "43"}}

    assert pod_events(everything)(line("BOOKMARK", bookmark)) == WatchEvent("BOOKMARK", "", "43")


def test_an_error_event_is_the_status_the_api_server_sent() -> None:
    status = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": "too old resource version: 1 (40)",
        "reason": "Expired",
        "code": 410,
    }

    event = pod_events(everything)(line("ERROR", status))

    assert event.type == "ERROR"
    assert isinstance(event.error, ApiError)
    assert (event.error.status, event.error.reason, event.error.message) == (
        410,
        "Expired",
        "too old resource version: 1 (40)",
    )
    assert event.error.gone


def test_fields_that_are_absent_or_null_read_as_nothing() -> None:
    sparse: JSON = {
        "metadata": {"name": "bare", "namespace": None, "labels": None, "ownerReferences": None},
        "spec": {"nodeName": None, "containers": None, "affinity": None},
        "status": {"conditions": None, "containerStatuses": None},
    }

    event = pod_events(everything)(line("ADDED", sparse))

    assert event.key == "bare"
    assert event.kept == pod_from_api(sparse)
    assert event.kept is not None
    assert (event.kept.owner_uid, event.kept.images, event.kept.view.node_name) == (None, (), None)
    assert event.kept.view.conditions == {}
