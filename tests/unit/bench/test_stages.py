"""The benchmark's stage log: each replacement split into its stages, from watch events."""

from __future__ import annotations

from typing import Any

from bench.stages import NodeTimes, StageLog

from edgerollout.kube.views import pod_node

OLD, NEW = "nginx:1.0", "nginx:2.0"


def pod(
    name: str,
    image: str,
    *,
    node: str,
    bound: bool = True,
    ready: bool = False,
    deleting: bool = False,
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "containers": [{"name": "app", "image": image}],
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {
                            "matchFields": [
                                {"key": "metadata.name", "operator": "In", "values": [node]}
                            ]
                        }
                    ]
                }
            }
        },
    }
    if bound:
        spec["nodeName"] = node
    metadata: dict[str, Any] = {"name": name}
    if deleting:
        metadata["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    status = {"conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}
    return {"metadata": metadata, "spec": spec, "status": status}


def test_pod_node_is_the_binding_or_else_the_daemonset_pin() -> None:
    assert pod_node(pod("a", NEW, node="edge-1")) == "edge-1"
    assert pod_node(pod("a", NEW, node="edge-2", bound=False)) == "edge-2"
    unpinned = pod("a", NEW, node="edge-3", bound=False)
    del unpinned["spec"]["affinity"]
    assert pod_node(unpinned) is None


def replace(log: StageLog, node: str, old: str, new: str, at: float) -> None:
    """One replacement whose stages take 1, 2, 3 and 4 seconds from `at`."""
    log.update(old, pod(old, OLD, node=node, ready=True, deleting=True), at)
    log.update(old, None, at + 1)
    log.update(new, pod(new, NEW, node=node, bound=False), at + 3)
    log.update(new, pod(new, NEW, node=node), at + 6)
    log.update(new, pod(new, NEW, node=node, ready=True), at + 10)


def test_each_node_records_the_first_time_of_each_stage() -> None:
    log = StageLog(NEW)
    log.reset({"old-1": pod("old-1", OLD, node="edge-1", ready=True)}, 0.0)
    replace(log, "edge-1", "old-1", "new-1", 100.0)
    # Later events of the same stage do not move it.
    log.update("new-1", pod("new-1", NEW, node="edge-1", ready=True), 120.0)
    assert log.nodes == {
        "edge-1": NodeTimes(deleting=100.0, gone=101.0, created=103.0, bound=106.0, ready=110.0)
    }


def test_a_deleted_pod_of_the_new_image_is_not_an_old_pod_gone() -> None:
    log = StageLog(NEW)
    log.update("new-1", pod("new-1", NEW, node="edge-1"), 5.0)
    log.update("new-1", None, 6.0)
    assert log.nodes == {"edge-1": NodeTimes(created=5.0, bound=5.0)}


def test_summary_spreads_stages_and_counts_nodes_held_unavailable() -> None:
    log = StageLog(NEW)
    log.reset(
        {
            "old-1": pod("old-1", OLD, node="edge-1", ready=True),
            "old-2": pod("old-2", OLD, node="edge-2", ready=True),
        },
        0.0,
    )
    replace(log, "edge-1", "old-1", "new-1", 10.0)  # unavailable 10 .. 20
    replace(log, "edge-2", "old-2", "new-2", 15.0)  # unavailable 15 .. 25
    summary = log.summary(start=8.0)
    one = {"median": 1.0, "p90": 1.0, "p99": 1.0, "max": 1.0}
    assert summary == {
        "replaced": 2,
        "stages_seconds": {
            "deleting_to_gone": one,
            "gone_to_created": {"median": 2.0, "p90": 2.0, "p99": 2.0, "max": 2.0},
            "created_to_bound": {"median": 3.0, "p90": 3.0, "p99": 3.0, "max": 3.0},
            "bound_to_ready": {"median": 4.0, "p90": 4.0, "p99": 4.0, "max": 4.0},
            "deleting_to_ready": {"median": 10.0, "p90": 10.0, "p99": 10.0, "max": 10.0},
        },
        "first_deletion": 2.0,
        # 20 node-seconds unavailable between the first deletion (10) and the last Ready (25)
        "mean_unavailable": 1.3,
        # 2 deletions in the 5 s between the first and the last
        "deletions_per_second": 0.4,
    }


def test_slot_reuse_is_the_time_from_the_latest_replacement_ready_to_each_later_deletion() -> None:
    log = StageLog(NEW)
    replace(log, "edge-1", "old-1", "new-1", 0.0)  # Ready at 10
    replace(log, "edge-2", "old-2", "new-2", 1.0)  # Ready at 11
    replace(log, "edge-3", "old-3", "new-3", 10.5)  # 0.5 s after edge-1's
    replace(log, "edge-4", "old-4", "new-4", 11.25)  # 0.25 s after edge-2's
    summary = log.summary(start=0.0)
    assert summary["slot_reuse_seconds"] == {"median": 0.375, "p90": 0.5, "p99": 0.5, "max": 0.5}


def test_summary_of_a_rollout_that_replaced_nothing() -> None:
    assert StageLog(NEW).summary(start=0.0) == {"replaced": 0, "stages_seconds": {}}


def test_summary_of_some_nodes_only() -> None:
    log = StageLog(NEW)
    replace(log, "edge-1", "old-1", "new-1", 10.0)
    replace(log, "edge-2", "old-2", "new-2", 20.0)
    summary = log.summary(start=18.0, only={"edge-2"})
    assert summary["replaced"] == 1
    assert summary["first_deletion"] == 2.0
    assert summary["mean_unavailable"] == 1.0
    assert summary["deletions_per_second"] == 0.0
