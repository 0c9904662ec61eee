"""Raw API objects reduced to the records the caches keep, and the facts the decisions read."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from edgerollout.domain import model
from edgerollout.domain.model import Condition, ConditionStatus, NodeReadiness
from edgerollout.domain.planning.ota_requests import PodFacts
from edgerollout.domain.vocabulary import FAILING_WAITING_REASONS, PREPULL_LABEL
from edgerollout.kube.views import (
    CachedDaemonSet,
    CachedPod,
    CachedRevision,
    counted_while_not_ready,
    daemonset_from_api,
    job_from_api,
    namespaced_name,
    node_from_api,
    node_ready_condition,
    object_key,
    object_uid,
    pod_conditions,
    pod_facts_from_api,
    pod_from_api,
    revision_from_api,
)

from .objects import node_json

# A pod of a DaemonSet as `kubectl get pod -o json` shows it, being deleted, after an OTA write.
TERMINATING_DAEMON_POD: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {
        "name": "web-x7k2p",
        "generateName": "web-",
        "namespace": "edge",
        "uid": "5f0c2c1e-8b0a-4d61-9d6e-1f2a3b4c5d6e",
        "resourceVersion": "48213",
        "creationTimestamp": "2025-03-01T10:58:12Z",
        "deletionTimestamp": "2025-03-01T12:00:30Z",
        "deletionGracePeriodSeconds": 30,
        "labels": {
            "app": "web",
            "controller-revision-hash": "6d4f8b9c7",
            "pod-template-generation": "3",
        },
        "ownerReferences": [
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "name": "web-config",
                "uid": "0a9b8c7d-not-the-controller",
            },
            {
                "apiVersion": "apps/v1",
                "kind": "DaemonSet",
                "name": "web",
                "uid": "c2a1d0e4-7f3b-4e8a-9b1c-2d3e4f5a6b7c",
                "controller": True,
                "blockOwnerDeletion": True,
            },
        ],
    },
    "spec": {
        "nodeName": "edge-7",
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {
                            "matchFields": [
                                {"key": "metadata.name", "operator": "In", "values": ["edge-7"]}
                            ]
                        }
                    ]
                }
            }
        },
        "containers": [
            {"name": "web", "image": "nginx:1.27"},
            {"name": "log-shipper", "image": "fluent-bit:3.1"},
        ],
    },
    "status": {
        "phase": "Running",
        "hostIP": "10.0.0.7",
        "conditions": [
            {"type": "PodReadyToStartContainers", "status": "True"},
            {"type": "Initialized", "status": "True", "lastTransitionTime": "2025-03-01T10:58:12Z"},
            {"type": "Ready", "status": "True", "lastTransitionTime": "2025-03-01T10:58:20Z"},
            {
                "type": "ContainersReady",
                "status": "True",
                "lastTransitionTime": "2025-03-01T10:58:20Z",
            },
            {
                "type": "PodScheduled",
                "status": "True",
                "lastTransitionTime": "2025-03-01T10:58:12Z",
            },
            {
                "type": "PodNeedUpgrade",
                "status": "True",
                "message": "controllerrevision: 7f9d5c6b8",
                "lastTransitionTime": "2025-03-01T11:30:00Z",
            },
        ],
    },
}

# The same DaemonSet's pod on a node that has not been scheduled to yet: only its affinity says where.
PENDING_DAEMON_POD: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {
        "name": "web-q9z4m",
        "namespace": "edge",
        "uid": "9e8d7c6b-5a4f-4e3d-8c2b-1a0f9e8d7c6b",
        "labels": {"controller-revision-hash": "7f9d5c6b8", "pod-template-generation": "4"},
        "ownerReferences": [
            {
                "apiVersion": "apps/v1",
                "kind": "DaemonSet",
                "name": "web",
                "uid": "c2a1d0e4-7f3b-4e8a-9b1c-2d3e4f5a6b7c",
                "controller": True,
            }
        ],
    },
    "spec": {
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {
                            "matchExpressions": [
                                {"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]}
                            ],
                            "matchFields": [
                                {"key": "metadata.name", "operator": "In", "values": ["edge-9"]}
                            ],
                        }
                    ]
                }
            }
        },
        "containers": [{"name": "web", "image": "nginx:1.28"}],
    },
    "status": {
        "phase": "Pending",
        "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}],
    },
}


def test_daemon_pod_keeps_owner_revision_readiness_and_only_our_conditions() -> None:
    assert pod_from_api(TERMINATING_DAEMON_POD) == CachedPod(
        owner_uid="c2a1d0e4-7f3b-4e8a-9b1c-2d3e4f5a6b7c",
        owner_kind="DaemonSet",
        images=("nginx:1.27", "fluent-bit:3.1"),
        view=model.PodView(
            namespace="edge",
            name="web-x7k2p",
            uid=model.PodUID("5f0c2c1e-8b0a-4d61-9d6e-1f2a3b4c5d6e"),
            node_name=model.NodeName("edge-7"),
            revision_hash="6d4f8b9c7",
            template_generation=3,
            deleting=True,
            ready=True,
            ready_since=datetime(2025, 3, 1, 10, 58, 20, tzinfo=UTC),
            conditions={
                "Ready": Condition(
                    type="Ready",
                    status=ConditionStatus.TRUE,
                    last_transition_time="2025-03-01T10:58:20Z",
                ),
                "PodNeedUpgrade": Condition(
                    type="PodNeedUpgrade",
                    status=ConditionStatus.TRUE,
                    message="controllerrevision: 7f9d5c6b8",
                    last_transition_time="2025-03-01T11:30:00Z",
                ),
            },
            created=datetime(2025, 3, 1, 10, 58, 12, tzinfo=UTC),
        ),
    )


def test_pod_conditions_are_every_condition_by_type_or_only_the_kept_ones() -> None:
    every = pod_conditions(TERMINATING_DAEMON_POD)
    assert list(every) == [
        "PodReadyToStartContainers",
        "Initialized",
        "Ready",
        "ContainersReady",
        "PodScheduled",
        "PodNeedUpgrade",
    ]
    assert every["PodScheduled"] == Condition(
        type="PodScheduled",
        status=ConditionStatus.TRUE,
        last_transition_time="2025-03-01T10:58:12Z",
    )
    assert pod_conditions(PENDING_DAEMON_POD, kept=frozenset({"Ready", "PodScheduled"})) == {
        "PodScheduled": Condition(
            type="PodScheduled", status=ConditionStatus.FALSE, reason="Unschedulable"
        )
    }
    assert pod_conditions({"metadata": {"name": "new"}}) == {}


def test_pod_facts_for_the_agent_keep_every_condition_and_the_controlling_owner() -> None:
    facts = pod_facts_from_api(TERMINATING_DAEMON_POD)
    assert facts == PodFacts(
        namespace="edge",
        name="web-x7k2p",
        node_name="edge-7",
        deleting=True,
        owner_kind="DaemonSet",
        owner_name="web",
        conditions=pod_conditions(TERMINATING_DAEMON_POD),
    )
    assert len(facts.conditions) == 6


def test_pod_facts_of_an_unbound_pod_name_no_node_even_when_its_affinity_pins_one() -> None:
    facts = pod_facts_from_api(PENDING_DAEMON_POD)
    assert facts.node_name is None
    assert facts.deleting is False
    assert (facts.owner_kind, facts.owner_name) == ("DaemonSet", "web")
    bare = pod_facts_from_api({"metadata": {"name": "p", "namespace": "edge"}})
    assert bare == PodFacts(
        namespace="edge",
        name="p",
        node_name=None,
        deleting=False,
        owner_kind=None,
        owner_name=None,
        conditions={},
    )


def test_namespaced_name_is_namespace_and_name_with_none_as_empty() -> None:
    assert namespaced_name(TERMINATING_DAEMON_POD) == ("edge", "web-x7k2p")
    assert namespaced_name(node_json("edge-1")) == ("", "edge-1")
    assert namespaced_name({}) == ("", "")


def test_object_uid_is_the_metadata_uid_or_empty() -> None:
    assert object_uid(TERMINATING_DAEMON_POD) == "5f0c2c1e-8b0a-4d61-9d6e-1f2a3b4c5d6e"
    assert object_uid({"metadata": {"name": "not-created-yet"}}) == ""
    assert object_uid({}) == ""


def test_pending_daemon_pod_is_placed_on_the_node_its_affinity_pins() -> None:
    pod = pod_from_api(PENDING_DAEMON_POD)
    assert pod.view.node_name == "edge-9"
    assert pod.view.ready is False
    assert pod.view.ready_since is None
    assert pod.view.deleting is False
    assert pod.view.template_generation == 4
    assert pod.view.conditions == {}
    assert pod.images == ("nginx:1.28",)


def test_pod_pinned_to_several_nodes_or_by_a_label_has_no_node() -> None:
    spec = {
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {"matchFields": [{"key": "metadata.name", "values": ["a", "b"]}]},
                        {"matchFields": [{"key": "spec.unschedulable", "values": ["false"]}]},
                    ]
                }
            }
        }
    }
    assert pod_from_api({"metadata": {"name": "p"}, "spec": spec}).view.node_name is None


def test_pod_not_ready_has_no_ready_since_and_unknown_statuses_read_as_unknown() -> None:
    pod = pod_from_api(
        {
            "metadata": {"name": "p", "namespace": "edge", "uid": "u"},
            "spec": {"nodeName": "edge-1"},
            "status": {
                "conditions": [
                    {
                        "type": "Ready",
                        "status": "False",
                        "lastTransitionTime": "2025-03-01T10:00:00Z",
                    },
                    {"type": "PodImageReady", "status": "maybe", "reason": "WaitPullImage"},
                ]
            },
        }
    )
    assert pod.view.ready is False
    assert pod.view.ready_since is None
    assert pod.view.conditions["Ready"].status is ConditionStatus.FALSE
    assert pod.view.conditions["PodImageReady"] == Condition(
        type="PodImageReady", status=ConditionStatus.UNKNOWN, reason="WaitPullImage"
    )


def test_pod_without_controller_or_usable_labels_has_no_owner_and_no_revision() -> None:
    pod = pod_from_api(
        {
            "metadata": {
                "name": "static-web-edge-1",
                "namespace": "kube-system",
                "uid": "u",
                "labels": {"pod-template-generation": "not-a-number"},
                "ownerReferences": [{"kind": "Node", "name": "edge-1", "uid": "n"}],
            },
            "spec": {"nodeName": "edge-1"},
        }
    )
    assert (pod.owner_uid, pod.owner_kind) == (None, None)
    assert (pod.view.revision_hash, pod.view.template_generation) == (None, None)


# A pod of a new revision whose container crashes at start: `kubectl get pod -o json` after its
# fourth restart, back-off running. Its sidecar (a restartable init container) is fine.
CRASH_LOOPING_POD: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {
        "name": "web-c4v8n",
        "namespace": "edge",
        "uid": "0d1e2f3a-4b5c-4d6e-8f70-8192a3b4c5d6",
        "creationTimestamp": "2025-03-01T11:00:00Z",
        "labels": {"controller-revision-hash": "7f9d5c6b8", "pod-template-generation": "4"},
    },
    "spec": {
        "nodeName": "edge-3",
        "initContainers": [{"name": "proxy", "image": "envoy:1.31", "restartPolicy": "Always"}],
        "containers": [{"name": "web", "image": "nginx:1.28"}],
    },
    "status": {
        "phase": "Running",
        "startTime": "2025-03-01T11:00:00Z",
        "conditions": [
            {
                "type": "PodReadyToStartContainers",
                "status": "True",
                "lastTransitionTime": "2025-03-01T11:00:03Z",
            },
            {"type": "Initialized", "status": "True", "lastTransitionTime": "2025-03-01T11:00:04Z"},
            {
                "type": "Ready",
                "status": "False",
                "lastTransitionTime": "2025-03-01T11:00:00Z",
                "reason": "ContainersNotReady",
                "message": "containers with unready status: [web]",
            },
            {
                "type": "ContainersReady",
                "status": "False",
                "lastTransitionTime": "2025-03-01T11:00:00Z",
                "reason": "ContainersNotReady",
                "message": "containers with unready status: [web]",
            },
            {
                "type": "PodScheduled",
                "status": "True",
                "lastTransitionTime": "2025-03-01T11:00:00Z",
            },
        ],
        "initContainerStatuses": [
            {
                "name": "proxy",
                "image": "docker.io/library/envoy:1.31",
                "imageID": "docker.io/library/envoy@sha256:1a2b",
                "containerID": "containerd://aa11",
                "ready": True,
                "started": True,
                "restartCount": 0,
                "state": {"running": {"startedAt": "2025-03-01T11:00:04Z"}},
                "lastState": {},
            }
        ],
        "containerStatuses": [
            {
                "name": "web",
                "image": "docker.io/library/nginx:1.28",
                "imageID": "docker.io/library/nginx@sha256:3c4d",
                "containerID": "containerd://bb22",
                "ready": False,
                "started": False,
                "restartCount": 4,
                "state": {
                    "waiting": {
                        "reason": "CrashLoopBackOff",
                        "message": "back-off 1m20s restarting failed container=web pod=web-c4v8n",
                    }
                },
                "lastState": {
                    "terminated": {
                        "exitCode": 1,
                        "reason": "Error",
                        "startedAt": "2025-03-01T11:02:41Z",
                        "finishedAt": "2025-03-01T11:02:42Z",
                        "containerID": "containerd://bb22",
                    }
                },
            }
        ],
    },
}


def test_crash_looping_pod_keeps_its_failure_restart_and_since_when_it_is_not_ready() -> None:
    view = pod_from_api(CRASH_LOOPING_POD).view
    assert view.failures == (model.ContainerFailure(container="web", reason="CrashLoopBackOff"),)
    assert view.created == datetime(2025, 3, 1, 11, 0, 0, tzinfo=UTC)
    assert view.containers_unready_since == datetime(2025, 3, 1, 11, 0, 0, tzinfo=UTC)
    assert view.sandbox_since == datetime(2025, 3, 1, 11, 0, 3, tzinfo=UTC)
    assert view.last_restart == datetime(2025, 3, 1, 11, 2, 42, tzinfo=UTC)
    # The conditions read for these facts are not kept themselves.
    assert set(view.conditions) == {"Ready"}


def test_a_failing_reason_is_kept_as_the_one_shared_string() -> None:
    status = {"name": "web", "state": {"waiting": {"reason": "".join(["ErrImage", "Pull"])}}}
    view = pod_from_api({"metadata": {"name": "p"}, "status": {"containerStatuses": [status]}}).view
    assert view.failures[0].reason is next(
        r for r in FAILING_WAITING_REASONS if r == "ErrImagePull"
    )


def test_init_container_failures_come_first_and_waiting_to_start_is_no_failure() -> None:
    waiting: dict[str, Any] = {
        "name": "web",
        "image": "nginx:1.28",
        "imageID": "",
        "ready": False,
        "started": False,
        "restartCount": 0,
        "state": {"waiting": {"reason": "PodInitializing"}},
        "lastState": {},
    }
    pod = {
        "metadata": {"name": "web-i8k2d", "creationTimestamp": "2025-03-01T11:00:00Z"},
        "status": {
            "phase": "Pending",
            "initContainerStatuses": [
                {
                    **waiting,
                    "name": "migrate",
                    "image": "registry.example/migrate:2",
                    "state": {
                        "waiting": {
                            "reason": "ImagePullBackOff",
                            "message": 'Back-off pulling image "registry.example/migrate:2"',
                        }
                    },
                },
                {
                    **waiting,
                    "name": "config",
                    "state": {"waiting": {"reason": "ContainerCreating"}},
                },
            ],
            "containerStatuses": [
                waiting,
                {
                    **waiting,
                    "name": "agent",
                    "state": {
                        "waiting": {
                            "reason": "CreateContainerConfigError",
                            "message": 'secret "agent-token" not found',
                        }
                    },
                },
            ],
        },
    }
    assert pod_from_api(pod).view.failures == (
        model.ContainerFailure(container="migrate", reason="ImagePullBackOff"),
        model.ContainerFailure(container="agent", reason="CreateContainerConfigError"),
    )


def test_the_last_restart_is_the_latest_ending_of_any_container_with_a_known_end() -> None:
    def restarted(name: str, terminated: dict[str, Any]) -> dict[str, Any]:
        return {
            "name": name,
            "ready": True,
            "restartCount": 1,
            "state": {"running": {"startedAt": "2025-03-01T11:30:00Z"}},
            "lastState": {"terminated": terminated},
        }

    pod = {
        "metadata": {"name": "web-r2b7x"},
        "status": {
            "initContainerStatuses": [
                restarted("proxy", {"exitCode": 137, "finishedAt": "2025-03-01T11:20:00Z"})
            ],
            "containerStatuses": [
                restarted("web", {"exitCode": 2, "finishedAt": "2025-03-01T11:10:00Z"}),
                # What a kubelet reports when the runtime lost the container: no start, no end.
                restarted(
                    "log",
                    {
                        "exitCode": 137,
                        "reason": "ContainerStatusUnknown",
                        "message": "The container could not be located when the pod was terminated",
                        "startedAt": None,
                        "finishedAt": None,
                    },
                ),
                {"name": "idle", "restartCount": 0, "state": {"running": {}}, "lastState": {}},
            ],
        },
    }
    assert pod_from_api(pod).view.last_restart == datetime(2025, 3, 1, 11, 20, 0, tzinfo=UTC)


def test_a_running_ready_pod_has_no_failure_and_no_unready_time() -> None:
    view = pod_from_api(TERMINATING_DAEMON_POD).view
    assert view.failures == ()
    assert view.containers_unready_since is None
    assert view.last_restart is None
    # PodReadyToStartContainers is True there, but with no time to say since when.
    assert view.sandbox_since is None


@pytest.mark.parametrize(
    ("containers_ready", "unready_since"),
    [
        pytest.param(None, datetime(2025, 3, 1, 11, 0, 0, tzinfo=UTC), id="not-reported-yet"),
        pytest.param(
            {"status": "False", "lastTransitionTime": "2025-03-01T11:42:00Z"},
            datetime(2025, 3, 1, 11, 42, 0, tzinfo=UTC),
            id="false",
        ),
        pytest.param(
            {"status": "Unknown"}, datetime(2025, 3, 1, 11, 0, 0, tzinfo=UTC), id="no-time"
        ),
        pytest.param(
            {"status": "True", "lastTransitionTime": "2025-03-01T11:42:00Z"}, None, id="true"
        ),
    ],
)
def test_containers_are_unready_since_their_condition_turned_or_the_pod_was_created(
    containers_ready: dict[str, Any] | None, unready_since: datetime | None
) -> None:
    # Ready is False as the node lifecycle controller leaves it on a node it lost; only the
    # kubelet's ContainersReady says whether the containers are ready.
    conditions: list[dict[str, Any]] = [
        {"type": "Ready", "status": "False", "lastTransitionTime": "2025-03-01T11:40:00Z"}
    ]
    if containers_ready is not None:
        conditions.append({"type": "ContainersReady", **containers_ready})
    pod = {
        "metadata": {"name": "web-u1", "creationTimestamp": "2025-03-01T11:00:00Z"},
        "status": {"conditions": conditions},
    }
    assert pod_from_api(pod).view.containers_unready_since == unready_since


@pytest.mark.parametrize(
    ("ready", "readiness"),
    [
        pytest.param("True", NodeReadiness.READY, id="true"),
        pytest.param("False", NodeReadiness.NOT_READY, id="false"),
        pytest.param("Unknown", NodeReadiness.UNKNOWN, id="unknown"),
        pytest.param(None, NodeReadiness.UNKNOWN, id="absent"),
    ],
)
def test_node_readiness_comes_from_its_ready_condition(
    ready: str | None, readiness: NodeReadiness
) -> None:
    assert node_from_api(node_json("edge-1", ready=ready)) == model.NodeView(
        name=model.NodeName("edge-1"),
        readiness=readiness,
        labels={"kubernetes.io/hostname": "edge-1"},
        # Since when, by the condition's transition (none without the condition).
        readiness_since=None if ready is None else datetime(2025, 3, 1, 10, 0, tzinfo=UTC),
    )


@pytest.mark.parametrize(
    ("ready", "status"),
    [
        pytest.param("True", ConditionStatus.TRUE, id="true"),
        pytest.param("False", ConditionStatus.FALSE, id="false"),
        pytest.param("Unknown", ConditionStatus.UNKNOWN, id="unknown"),
        pytest.param("Maybe", ConditionStatus.UNKNOWN, id="not-a-status"),
        pytest.param(None, None, id="absent"),
    ],
)
def test_node_ready_condition_is_the_status_of_its_ready_condition_only(
    ready: str | None, status: ConditionStatus | None
) -> None:
    assert node_ready_condition(node_json("edge-1", ready=ready)) is status


def test_node_heartbeat_changes_nothing_kept() -> None:
    before = node_from_api(node_json("edge-1", heartbeat="2025-03-01T12:00:00Z"))
    after = node_from_api(node_json("edge-1", heartbeat="2025-03-01T12:00:40Z"))
    assert before == after


def test_revision_keeps_number_hash_owner_and_template_generation() -> None:
    revision = revision_from_api(
        {
            "apiVersion": "apps/v1",
            "kind": "ControllerRevision",
            "metadata": {
                "name": "web-6d4f8b9c7",
                "namespace": "edge",
                "labels": {"app": "web", "controller-revision-hash": "6d4f8b9c7"},
                "annotations": {"deprecated.daemonset.template.generation": "4"},
                "ownerReferences": [
                    {"kind": "DaemonSet", "name": "web", "uid": "ds-uid", "controller": True}
                ],
            },
            "revision": 3,
            "data": {"spec": {"template": {"$patch": "replace"}}},
        }
    )
    assert revision == CachedRevision(
        owner_uid="ds-uid",
        view=model.RevisionView(
            name="web-6d4f8b9c7", revision=3, hash="6d4f8b9c7", template_generation=4
        ),
    )


def test_revision_without_hash_label_or_number_reads_as_none_and_zero() -> None:
    revision = revision_from_api({"metadata": {"name": "web-1", "labels": {}}})
    assert revision == CachedRevision(
        owner_uid=None, view=model.RevisionView(name="web-1", revision=0, hash=None)
    )


def reduced(daemonset: CachedDaemonSet) -> tuple[model.DaemonSetView, tuple[str, ...], int, int]:
    """The parts of a cached DaemonSet that the reconciles read."""
    return (
        daemonset.view,
        daemonset.pod_template_images,
        daemonset.generation,
        daemonset.observed_generation,
    )


def test_daemonset_keeps_identity_annotations_strategy_and_images() -> None:
    annotations = {"apps.openyurt.io/update-strategy": "OTA"}
    daemonset = daemonset_from_api(
        {
            "metadata": {
                "name": "web",
                "namespace": "edge",
                "uid": "ds-uid",
                "generation": 5,
                "annotations": annotations,
            },
            "spec": {
                "updateStrategy": {"type": "OnDelete"},
                "minReadySeconds": 30,
                "template": {"spec": {"containers": [{"name": "web", "image": "nginx:1.28"}]}},
            },
            "status": {"observedGeneration": 4, "desiredNumberScheduled": 12},
        }
    )
    assert reduced(daemonset) == (
        model.DaemonSetView(
            namespace="edge",
            name="web",
            uid=model.DaemonSetUID("ds-uid"),
            annotations=annotations,
            update_strategy_type="OnDelete",
            min_ready_seconds=30,
            desired_nodes=12,
        ),
        ("nginx:1.28",),
        5,
        4,
    )


def test_daemonset_missing_fields_take_the_api_defaults() -> None:
    daemonset = daemonset_from_api({"metadata": {"name": "web", "namespace": "edge", "uid": "u"}})
    assert reduced(daemonset) == (
        model.DaemonSetView(
            namespace="edge",
            name="web",
            uid=model.DaemonSetUID("u"),
            annotations={},
            update_strategy_type="RollingUpdate",
            min_ready_seconds=0,
            desired_nodes=None,
        ),
        (),
        0,
        0,
    )


def test_object_key_is_namespace_slash_name_or_the_bare_name() -> None:
    assert object_key("edge", "web") == "edge/web"
    assert object_key(None, "edge-1") == "edge-1"
    assert object_key("", "edge-1") == "edge-1"


def _pull_job(owners: list[dict[str, str]]) -> dict[str, object]:
    return {
        "metadata": {
            "name": "prepull-1",
            "namespace": "default",
            "labels": {PREPULL_LABEL: "web-a"},
            "ownerReferences": owners,
        }
    }


def test_a_pull_job_is_trusted_only_through_its_single_pod_owner() -> None:
    pod_owner = {"apiVersion": "v1", "kind": "Pod", "name": "web-a", "uid": "uid-web-a"}
    other = {"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "web", "uid": "uid-web"}
    cases = [
        ([pod_owner], "uid-web-a"),
        ([], None),
        ([other], None),
        ([pod_owner, other], None),
        ([{**pod_owner, "uid": ""}], None),
    ]
    for owners, expected in cases:
        job = job_from_api(_pull_job(owners))
        assert job is not None
        assert (job.pod_name, job.owner_uid) == ("web-a", expected), owners


@pytest.mark.parametrize(
    ("tolerations", "counted"),
    [
        ([], set()),
        ([{"operator": "Exists"}], {NodeReadiness.NOT_READY, NodeReadiness.UNKNOWN}),
        (
            [{"operator": "Exists", "effect": "NoSchedule"}],
            {NodeReadiness.NOT_READY, NodeReadiness.UNKNOWN},
        ),
        ([{"operator": "Exists", "effect": "NoExecute"}], set()),
        (
            [{"key": "node.kubernetes.io/unreachable", "operator": "Exists"}],
            {NodeReadiness.UNKNOWN},
        ),
        (
            [{"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}],
            {NodeReadiness.NOT_READY},
        ),
        ([{"key": "node.kubernetes.io/not-ready", "value": "x"}], set()),
        (
            [{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"}],
            set(),
        ),
        ([{"key": "edge", "operator": "Exists"}], set()),
    ],
)
def test_a_daemonset_is_counted_on_the_not_ready_nodes_whose_noschedule_taint_it_tolerates(
    tolerations: list[dict[str, str]], counted: set[NodeReadiness]
) -> None:
    daemonset = {
        "metadata": {"name": "agent", "namespace": "edge", "uid": "u"},
        "spec": {"template": {"spec": {"tolerations": tolerations}}},
    }

    assert counted_while_not_ready(tolerations) == counted
    assert daemonset_from_api(daemonset).view.counted_while_not_ready == counted


def test_a_daemon_pod_keeps_its_nodes_hold_among_the_conditions_the_controller_reads() -> None:
    hold = {
        "type": "edgerollout.io/UpgradeHeld",
        "status": "True",
        "reason": "NodeAsked",
        "message": "until 2025-03-01T14:00:00Z, asked at 2025-03-01T11:00:00Z: a car driving",
        "lastTransitionTime": "2025-03-01T11:00:00Z",
    }
    status = TERMINATING_DAEMON_POD["status"]
    held = {
        **TERMINATING_DAEMON_POD,
        "status": {**status, "conditions": [*status["conditions"], hold]},
    }
    conditions = pod_from_api(held).view.conditions
    assert sorted(conditions) == ["PodNeedUpgrade", "Ready", "edgerollout.io/UpgradeHeld"]
    assert conditions["edgerollout.io/UpgradeHeld"] == Condition(
        type="edgerollout.io/UpgradeHeld",
        status=ConditionStatus.TRUE,
        reason="NodeAsked",
        message="until 2025-03-01T14:00:00Z, asked at 2025-03-01T11:00:00Z: a car driving",
        last_transition_time="2025-03-01T11:00:00Z",
    )
