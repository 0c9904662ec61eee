"""The KWOK `--config` file: which nodes KWOK plays and the Stages that move nodes and pods along."""

from __future__ import annotations

import re
from typing import Any

import pytest
import yaml

from edgerollout_lab.kwok_stages import (
    LINK_LABEL,
    NODE_LEASE_SECONDS,
    PRODUCTION_NODE_LEASE_SECONDS,
    UNPULLABLE_IMAGE,
    kwok_config,
    node_monitor_grace_seconds,
)

STAGE_NAMES = [
    "node-start",
    "node-status-refresh",
    "pod-start",
    "pod-ready-again",
    "pod-job-complete",
    "pod-job-image-pull-fail",
    "pod-delete",
]
IMAGES = ".spec.containers.[].image"
NOT_DELETING = {"key": ".metadata.deletionTimestamp", "operator": "DoesNotExist"}
NODE_READY = '.status.conditions.[] | select( .type == "Ready" ) | .status'
OWNER_KIND = ".metadata.ownerReferences.[].kind"


def documents() -> list[dict[str, Any]]:
    return list(yaml.safe_load_all(kwok_config()))


def stages() -> dict[str, dict[str, Any]]:
    return {doc["metadata"]["name"]: doc["spec"] for doc in documents()[1:]}


def render(template: str) -> Any:
    """The status a template yields, with every `$now` read as one fixed timestamp."""
    text = template.replace("{{ $now := Now }}", "")
    text = text.replace("{{ $now | Quote }}", '"2025-03-01T12:00:00Z"')
    assert "{{" not in text, f"template has more than timestamps to fill in:\n{text}"
    return yaml.safe_load(text)


def test_config_is_one_kwok_configuration_followed_by_the_stages_in_order() -> None:
    docs = documents()

    assert [doc["kind"] for doc in docs] == ["KwokConfiguration"] + ["Stage"] * len(STAGE_NAMES)
    assert docs[0]["apiVersion"] == "config.kwok.x-k8s.io/v1alpha1"
    assert {doc["apiVersion"] for doc in docs[1:]} == {"kwok.x-k8s.io/v1alpha1"}
    assert [doc["metadata"]["name"] for doc in docs[1:]] == STAGE_NAMES


def test_kwok_manages_only_nodes_whose_link_is_up() -> None:
    options = documents()[0]["options"]

    assert LINK_LABEL == "lab.edgerollout.io/link"
    assert options["manageAllNodes"] is False
    assert options["manageNodesWithLabelSelector"] == "lab.edgerollout.io/link=up"
    # A cut node KWOK reads again by name, whatever its labels, is still left alone.
    assert options["disregardStatusWithLabelSelector"] == "lab.edgerollout.io/link=down"
    assert options["nodeLeaseDurationSeconds"] == NODE_LEASE_SECONDS
    # Enough workers for pod stages that KWOK does not hold a 1,000-node rollout back.
    assert options["podPlayStageParallelism"] == 64


def test_the_lease_duration_is_the_one_asked_for_and_the_grace_period_follows_it() -> None:
    options = next(yaml.safe_load_all(kwok_config(PRODUCTION_NODE_LEASE_SECONDS)))["options"]

    assert options["nodeLeaseDurationSeconds"] == 40
    assert (NODE_LEASE_SECONDS, node_monitor_grace_seconds(NODE_LEASE_SECONDS)) == (8, 10)
    # A production kubelet's Lease, and kube-controller-manager's default grace period.
    assert node_monitor_grace_seconds(PRODUCTION_NODE_LEASE_SECONDS) == 50


@pytest.mark.parametrize("name", STAGE_NAMES)
def test_every_stage_has_a_resource_a_selector_and_a_next_step(name: str) -> None:
    spec = stages()[name]

    assert spec["resourceRef"]["apiGroup"] == "v1"
    assert spec["resourceRef"]["kind"] == ("Node" if name.startswith("node-") else "Pod")
    expressions = spec["selector"]["matchExpressions"]
    assert expressions
    assert all({"key", "operator"} <= set(expression) for expression in expressions)
    assert spec["next"]


def test_node_start_picks_nodes_not_ready_and_refresh_picks_ready_ones() -> None:
    start, refresh = stages()["node-start"], stages()["node-status-refresh"]

    assert start["selector"]["matchExpressions"] == [
        {"key": NODE_READY, "operator": "NotIn", "values": ["True"]}
    ]
    assert refresh["selector"]["matchExpressions"] == [
        {"key": NODE_READY, "operator": "In", "values": ["True"]}
    ]
    assert "phase: Running" in start["next"]["statusTemplate"]


def test_pod_start_makes_pending_pods_running_unless_they_are_being_deleted() -> None:
    spec = stages()["pod-start"]

    assert spec["selector"]["matchExpressions"] == [
        NOT_DELETING,
        {"key": ".status.phase", "operator": "In", "values": ["Pending"]},
        {"key": IMAGES, "operator": "NotIn", "values": [UNPULLABLE_IMAGE]},
    ]
    assert "phase: Running" in spec["next"]["statusTemplate"]


def test_job_pod_of_an_unpullable_image_fails_and_never_starts() -> None:
    spec = stages()["pod-job-image-pull-fail"]

    assert spec["selector"]["matchExpressions"] == [
        NOT_DELETING,
        {"key": ".status.phase", "operator": "In", "values": ["Pending"]},
        {"key": IMAGES, "operator": "In", "values": [UNPULLABLE_IMAGE]},
        {"key": OWNER_KIND, "operator": "In", "values": ["Job"]},
    ]
    template = spec["next"]["statusTemplate"]
    assert "phase: Failed" in template
    assert "reason: ErrImagePull" in template


def test_pod_ready_again_excludes_job_pods_and_pods_being_deleted() -> None:
    expressions = stages()["pod-ready-again"]["selector"]["matchExpressions"]

    assert expressions == [
        NOT_DELETING,
        {"key": ".status.phase", "operator": "In", "values": ["Running"]},
        {"key": NODE_READY, "operator": "NotIn", "values": ["True"]},
        {"key": OWNER_KIND, "operator": "NotIn", "values": ["Job"]},
    ]


def test_pod_ready_again_sets_ready_and_containers_ready_true() -> None:
    status = render(stages()["pod-ready-again"]["next"]["statusTemplate"])

    assert status == {
        "conditions": [
            {
                "type": "ContainersReady",
                "status": "True",
                "lastTransitionTime": "2025-03-01T12:00:00Z",
            },
            {"type": "Ready", "status": "True", "lastTransitionTime": "2025-03-01T12:00:00Z"},
        ]
    }


def test_pod_job_complete_only_takes_running_job_pods_to_succeeded() -> None:
    spec = stages()["pod-job-complete"]

    assert spec["selector"]["matchExpressions"] == [
        NOT_DELETING,
        {"key": ".status.phase", "operator": "In", "values": ["Running"]},
        {"key": OWNER_KIND, "operator": "In", "values": ["Job"]},
    ]
    assert re.search(r"^phase: Succeeded$", spec["next"]["statusTemplate"], re.MULTILINE)


def test_pod_delete_empties_finalizers_and_deletes_pods_being_deleted() -> None:
    spec = stages()["pod-delete"]

    assert spec["selector"]["matchExpressions"] == [
        {"key": ".metadata.deletionTimestamp", "operator": "Exists"}
    ]
    assert spec["next"] == {"finalizers": {"empty": True}, "delete": True}
