"""Single facts of a pod read by `kube.views`: what the bench, the lab and e2e support ask of a
pod without reducing all of it to a `CachedPod`."""

from __future__ import annotations

import pytest

from edgerollout.domain.model import Condition, ConditionStatus
from edgerollout.domain.vocabulary import POD_NEED_UPGRADE
from edgerollout.kube.views import (
    bound_node,
    marked_for_deletion,
    pod_condition,
    pod_from_api,
    pod_images,
    pod_node,
    pod_phase,
    pod_ready,
)

from .objects import JSON, READY_SINCE, pod_json

PINNED = {
    "nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [
                {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["edge-4"]}]}
            ]
        }
    }
}


def pending(spec: JSON) -> JSON:
    """A pod not bound yet: no `nodeName`, the rest of `spec` as given."""
    pod = pod_json("web-p", node="unused", ready=False)
    pod["spec"] = spec
    return pod


def test_pod_condition_is_the_one_of_that_type_with_its_reason_message_and_time() -> None:
    mark = {
        "type": POD_NEED_UPGRADE,
        "status": "True",
        "reason": "",
        "message": "controllerrevision: hash-new",
        "lastTransitionTime": READY_SINCE,
    }
    pod = pod_json("web-a", node="edge-1", conditions=[mark])

    assert pod_condition(pod, POD_NEED_UPGRADE) == Condition(
        type=POD_NEED_UPGRADE,
        status=ConditionStatus.TRUE,
        reason="",
        message="controllerrevision: hash-new",
        last_transition_time=READY_SINCE,
    )
    assert pod_condition(pod, "PodImageReady") is None
    assert pod_condition({}, POD_NEED_UPGRADE) is None


@pytest.mark.parametrize(
    ("pod", "ready"),
    [
        pytest.param(pod_json("web-a", node="edge-1"), True, id="ready-true"),
        pytest.param(pod_json("web-a", node="edge-1", ready=False), False, id="ready-false"),
        pytest.param({"status": {"conditions": [{"type": "Ready"}]}}, False, id="no-status"),
        pytest.param({"status": {"phase": "Pending"}}, False, id="no-conditions"),
        pytest.param({}, False, id="no-status-at-all"),
    ],
)
def test_pod_is_ready_only_when_its_ready_condition_is_true(pod: JSON, ready: bool) -> None:
    assert pod_ready(pod) is ready
    assert pod_from_api(pod).view.ready is ready


def test_pod_phase_is_the_status_phase_or_empty() -> None:
    assert pod_phase(pod_json("web-a", node="edge-1")) == "Running"
    assert pod_phase({"status": {"phase": "Pending"}}) == "Pending"
    assert pod_phase({"status": {}}) == ""
    assert pod_phase({}) == ""


def test_bound_node_is_spec_node_name_only() -> None:
    assert bound_node(pod_json("web-a", node="edge-1")) == "edge-1"
    assert bound_node(pending({"affinity": PINNED})) is None
    assert bound_node(pending({"nodeName": ""})) is None
    assert bound_node({}) is None


def test_pod_node_is_the_bound_node_else_the_one_its_affinity_pins() -> None:
    assert pod_node(pod_json("web-a", node="edge-1")) == "edge-1"
    assert pod_node(pending({"nodeName": "edge-1", "affinity": PINNED})) == "edge-1"
    assert pod_node(pending({"affinity": PINNED})) == "edge-4"
    assert pod_node(pending({})) is None
    assert pod_node({}) is None


def test_marked_for_deletion_is_whether_a_deletion_timestamp_is_set() -> None:
    assert marked_for_deletion(pod_json("web-a", node="edge-1", deleting=True)) is True
    assert marked_for_deletion(pod_json("web-a", node="edge-1")) is False
    assert marked_for_deletion({}) is False


def test_pod_images_are_its_containers_images_in_order_without_init_containers() -> None:
    pod = pod_json("web-a", node="edge-1")
    pod["spec"]["initContainers"] = [{"name": "copy", "image": "busybox:1.36"}]
    pod["spec"]["containers"].append({"name": "sidecar", "image": "envoy:1.31"})

    assert pod_images(pod) == ("nginx:1.27", "envoy:1.31")
    assert pod_images({"spec": {}}) == ()
    assert pod_images({}) == ()
