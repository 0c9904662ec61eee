"""The KWOK `--config` file: which nodes KWOK plays and the Stages that move nodes and pods along."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest
import yaml

from edgerollout_lab.kwok_stages import (
    CRASHLOOP_IMAGE,
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
    "pod-image-pull-back-off",
    "pod-crash-loop",
    "pod-delete",
]
IMAGES = ".spec.containers.[].image"
NOT_DELETING = {"key": ".metadata.deletionTimestamp", "operator": "DoesNotExist"}
PENDING = {"key": ".status.phase", "operator": "In", "values": ["Pending"]}
RUNNING = {"key": ".status.phase", "operator": "In", "values": ["Running"]}
NODE_READY = '.status.conditions.[] | select( .type == "Ready" ) | .status'
OWNER_KIND = ".metadata.ownerReferences.[].kind"
NON_JOB_IMAGES = 'select( any( .metadata.ownerReferences.[]?; .kind == "Job" ) | not ) | .spec.containers.[].image'


def pending(*more: dict[str, Any]) -> list[dict[str, Any]]:
    """The selector's expressions of a Stage for pending pods not being deleted, and `more`."""
    return [NOT_DELETING, PENDING, *more]


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


def test_pod_start_makes_pending_pods_running_unless_deleted_or_failing() -> None:
    spec = stages()["pod-start"]

    assert spec["selector"]["matchExpressions"] == pending(
        {"key": IMAGES, "operator": "NotIn", "values": [UNPULLABLE_IMAGE]},
        {"key": NON_JOB_IMAGES, "operator": "NotIn", "values": [CRASHLOOP_IMAGE]},
    )
    assert "phase: Running" in spec["next"]["statusTemplate"]


def test_job_pod_of_an_unpullable_image_fails_and_never_starts() -> None:
    spec = stages()["pod-job-image-pull-fail"]

    assert spec["selector"]["matchExpressions"] == pending(
        {"key": IMAGES, "operator": "In", "values": [UNPULLABLE_IMAGE]},
        {"key": OWNER_KIND, "operator": "In", "values": ["Job"]},
    )
    template = spec["next"]["statusTemplate"]
    assert "phase: Failed" in template
    assert "reason: ErrImagePull" in template


def test_pod_ready_again_excludes_job_pods_crash_loops_and_pods_being_deleted() -> None:
    expressions = stages()["pod-ready-again"]["selector"]["matchExpressions"]

    assert expressions == [
        NOT_DELETING,
        RUNNING,
        {"key": NODE_READY, "operator": "NotIn", "values": ["True"]},
        {"key": OWNER_KIND, "operator": "NotIn", "values": ["Job"]},
        {"key": IMAGES, "operator": "NotIn", "values": [CRASHLOOP_IMAGE]},
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
        RUNNING,
        {"key": OWNER_KIND, "operator": "In", "values": ["Job"]},
    ]
    assert re.search(r"^phase: Succeeded$", spec["next"]["statusTemplate"], re.MULTILINE)


def test_pod_delete_empties_finalizers_and_deletes_pods_being_deleted() -> None:
    spec = stages()["pod-delete"]

    assert spec["selector"]["matchExpressions"] == [
        {"key": ".metadata.deletionTimestamp", "operator": "Exists"}
    ]
    assert spec["next"] == {"finalizers": {"empty": True}, "delete": True}


# The conditions and a started container as both failing Stages write them (`$failing` is the image).
NOT_READY_CONDITIONS = """\
{{ $now := Now }}
{{ $unready := list }}
{{ range .spec.containers }}{{ if eq .image $failing }}{{ $unready = append $unready .name }}{{ end }}{{ end }}
{{ $notReady := printf "containers with unready status: %v" $unready }}
conditions:
- {type: PodReadyToStartContainers, status: "True", lastTransitionTime: {{ $now | Quote }}}
- {type: Initialized, status: "True", lastTransitionTime: {{ $now | Quote }}}
- {type: ContainersReady, status: "False", reason: ContainersNotReady, message: {{ $notReady | Quote }}, lastTransitionTime: {{ $now | Quote }}}
- {type: Ready, status: "False", reason: ContainersNotReady, message: {{ $notReady | Quote }}, lastTransitionTime: {{ $now | Quote }}}
"""
RUNNING_CONTAINER = """\
- image: {{ .image | Quote }}
  imageID: {{ printf "kwok://%s" .image | Quote }}
  name: {{ .name | Quote }}
  ready: true
  started: true
  restartCount: 0
  state:
    running:
      startedAt: {{ $now | Quote }}
"""
POD_ADDRESSES = """\
hostIP: {{ NodeIPWith .spec.nodeName | Quote }}
podIP: {{ PodIPWith .spec.nodeName ( or .spec.hostNetwork false ) ( or .metadata.uid "" ) ( or .metadata.name "" ) ( or .metadata.namespace "" ) | Quote }}
"""


def test_a_pod_not_a_jobs_of_the_unpullable_image_waits_in_image_pull_back_off() -> None:
    spec = stages()["pod-image-pull-back-off"]

    assert spec == {
        "resourceRef": {"apiGroup": "v1", "kind": "Pod"},
        "selector": {
            "matchExpressions": pending(
                {"key": NON_JOB_IMAGES, "operator": "In", "values": [UNPULLABLE_IMAGE]},
                # Once written, the status stays: the pod is Pending still, and left alone.
                {"key": ".status.containerStatuses", "operator": "DoesNotExist"},
            )
        },
        "next": {
            "statusTemplate": '{{ $failing := "lab.invalid/unpullable:1.0" }}\n'
            + NOT_READY_CONDITIONS
            + "containerStatuses:\n"
            "{{ range .spec.containers }}\n"
            "{{ if eq .image $failing }}\n"
            "- image: {{ .image | Quote }}\n"
            '  imageID: ""\n'
            "  name: {{ .name | Quote }}\n"
            "  ready: false\n"
            "  started: false\n"
            "  restartCount: 0\n"
            "  state:\n"
            "    waiting:\n"
            "      reason: ImagePullBackOff\n"
            '      message: {{ printf "Back-off pulling image %q" .image | Quote }}\n'
            "{{ else }}\n" + RUNNING_CONTAINER + "{{ end }}\n"
            "{{ end }}\n" + POD_ADDRESSES + "phase: Pending\n"
            "startTime: {{ $now | Quote }}\n"
        },
    }


def test_a_pod_not_a_jobs_of_the_crashloop_image_runs_but_waits_in_crash_loop_back_off() -> None:
    spec = stages()["pod-crash-loop"]

    assert CRASHLOOP_IMAGE == "lab.invalid/crashloop:1.0"
    assert spec == {
        "resourceRef": {"apiGroup": "v1", "kind": "Pod"},
        "selector": {
            "matchExpressions": pending(
                {"key": NON_JOB_IMAGES, "operator": "In", "values": [CRASHLOOP_IMAGE]},
                # A pod that cannot pull one of its images does not get as far as crashing.
                {"key": IMAGES, "operator": "NotIn", "values": [UNPULLABLE_IMAGE]},
            )
        },
        "next": {
            "statusTemplate": '{{ $failing := "lab.invalid/crashloop:1.0" }}\n'
            + NOT_READY_CONDITIONS
            + '{{ $pod := printf "%s_%s(%s)" .metadata.name .metadata.namespace .metadata.uid }}\n'
            "containerStatuses:\n"
            "{{ range .spec.containers }}\n"
            "{{ if eq .image $failing }}\n"
            "- image: {{ .image | Quote }}\n"
            '  imageID: {{ printf "kwok://%s" .image | Quote }}\n'
            "  name: {{ .name | Quote }}\n"
            "  ready: false\n"
            "  started: false\n"
            "  restartCount: 1\n"
            "  lastState:\n"
            "    terminated:\n"
            "      exitCode: 1\n"
            "      reason: Error\n"
            "      startedAt: {{ $now | Quote }}\n"
            "      finishedAt: {{ $now | Quote }}\n"
            "  state:\n"
            "    waiting:\n"
            "      reason: CrashLoopBackOff\n"
            "      message: {{ printf "
            '"back-off 10s restarting failed container=%s pod=%s" .name $pod | Quote }}\n'
            "{{ else }}\n" + RUNNING_CONTAINER + "{{ end }}\n"
            "{{ end }}\n" + POD_ADDRESSES + "phase: Running\n"
            "startTime: {{ $now | Quote }}\n"
        },
    }


# --- which Stage takes which pod ---------------------------------------------------------------
# KWOK plays, for a pod, one of the Stages whose selector matches it (at random when several do),
# so the pod Stages' selectors must never match the same pod. Below, what each key yields for a
# pod as KWOK's jq reads it (None: the query fails, as iterating over a missing list does), and
# KWOK's operators on that.

OK_IMAGE = "nginx:1.19.5"


def _present(value: Any) -> list[Any]:
    return [] if value is None else [value]


def _owner_kinds(pod: dict[str, Any]) -> list[str]:
    return [owner["kind"] for owner in pod["metadata"].get("ownerReferences", [])]


KEY_READINGS: dict[str, Callable[[dict[str, Any]], list[Any] | None]] = {
    ".metadata.deletionTimestamp": lambda pod: _present(pod["metadata"].get("deletionTimestamp")),
    ".status.phase": lambda pod: _present(pod["status"].get("phase")),
    ".status.containerStatuses": lambda pod: _present(pod["status"].get("containerStatuses")),
    IMAGES: lambda pod: [container["image"] for container in pod["spec"]["containers"]],
    NON_JOB_IMAGES: lambda pod: (
        [] if "Job" in _owner_kinds(pod) else [c["image"] for c in pod["spec"]["containers"]]
    ),
    OWNER_KIND: lambda pod: _owner_kinds(pod) if "ownerReferences" in pod["metadata"] else None,
    NODE_READY: lambda pod: (
        [c["status"] for c in pod["status"]["conditions"] if c["type"] == "Ready"]
        if "conditions" in pod["status"]
        else None
    ),
}


def _matches(expression: dict[str, Any], pod: dict[str, Any]) -> bool:
    """KWOK's reading of one expression: `In` when any value found is listed, `NotIn` when none
    is (also when the query failed), `Exists` when anything was found."""
    found = KEY_READINGS[expression["key"]](pod)
    operator: str = expression["operator"]
    if operator in ("Exists", "DoesNotExist"):
        return bool(found) == (operator == "Exists")
    values: list[str] = expression["values"]
    hit = found is not None and any(value in values for value in found)
    return hit == (operator == "In")


def pod_stages_taking(pod: dict[str, Any]) -> list[str]:
    return [
        name
        for name, spec in stages().items()
        if spec["resourceRef"]["kind"] == "Pod"
        and all(_matches(e, pod) for e in spec["selector"]["matchExpressions"])
    ]


def sample_pod(
    *images: str,
    owner: str | None = "DaemonSet",
    phase: str = "Pending",
    ready: str | None = None,
    deleting: bool = False,
    waiting: str | None = None,
) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": "p", "namespace": "ns", "uid": "u"}
    if owner:
        metadata["ownerReferences"] = [{"kind": owner, "name": "o"}]
    if deleting:
        metadata["deletionTimestamp"] = "2025-03-01T12:00:00Z"
    status: dict[str, Any] = {"phase": phase}
    if ready:
        status["conditions"] = [{"type": "Ready", "status": ready}]
    if waiting:
        status["containerStatuses"] = [{"name": "c0", "state": {"waiting": {"reason": waiting}}}]
    containers = [{"name": f"c{index}", "image": image} for index, image in enumerate(images)]
    return {"metadata": metadata, "spec": {"containers": containers}, "status": status}


# sample pod -> the Stages that take it
TAKEN_BY: dict[str, tuple[dict[str, Any], list[str]]] = {
    "daemonset-pod": (sample_pod(OK_IMAGE), ["pod-start"]),
    "crashloop": (sample_pod(CRASHLOOP_IMAGE), ["pod-crash-loop"]),
    "crashloop-beside-a-sidecar": (sample_pod(OK_IMAGE, CRASHLOOP_IMAGE), ["pod-crash-loop"]),
    "crashloop-without-owner": (sample_pod(CRASHLOOP_IMAGE, owner=None), ["pod-crash-loop"]),
    "crashloop-running": (sample_pod(CRASHLOOP_IMAGE, phase="Running", ready="False"), []),
    "unpullable": (sample_pod(UNPULLABLE_IMAGE), ["pod-image-pull-back-off"]),
    "unpullable-beside-a-sidecar": (
        sample_pod(UNPULLABLE_IMAGE, OK_IMAGE),
        ["pod-image-pull-back-off"],
    ),
    "unpullable-and-crashloop": (
        sample_pod(UNPULLABLE_IMAGE, CRASHLOOP_IMAGE),
        ["pod-image-pull-back-off"],
    ),
    "unpullable-backing-off": (sample_pod(UNPULLABLE_IMAGE, waiting="ImagePullBackOff"), []),
    "running-not-ready": (
        sample_pod(OK_IMAGE, phase="Running", ready="False"),
        ["pod-ready-again"],
    ),
    "running-ready": (sample_pod(OK_IMAGE, phase="Running", ready="True"), []),
    "job-pod": (sample_pod(OK_IMAGE, owner="Job"), ["pod-start"]),
    # A pre-pull Job runs `true` in the image, which pulls fine: it starts and completes.
    "job-pod-of-crashloop": (sample_pod(CRASHLOOP_IMAGE, owner="Job"), ["pod-start"]),
    "job-pod-of-crashloop-running": (
        sample_pod(CRASHLOOP_IMAGE, owner="Job", phase="Running", ready="True"),
        ["pod-job-complete"],
    ),
    "job-pod-of-unpullable": (
        sample_pod(UNPULLABLE_IMAGE, owner="Job"),
        ["pod-job-image-pull-fail"],
    ),
    "deleting": (sample_pod(CRASHLOOP_IMAGE, phase="Running", deleting=True), ["pod-delete"]),
}


@pytest.mark.parametrize("case", TAKEN_BY)
def test_at_most_one_pod_stage_takes_a_pod(case: str) -> None:
    pod, expected = TAKEN_BY[case]

    assert pod_stages_taking(pod) == expected


def test_every_key_of_the_pod_stages_has_a_reading() -> None:
    keys = {
        expression["key"]
        for spec in stages().values()
        if spec["resourceRef"]["kind"] == "Pod"
        for expression in spec["selector"]["matchExpressions"]
    }

    assert keys == set(KEY_READINGS)
