"""`edgerollout plan` as a table and as JSON, from a plan of the pure core."""

import json
from collections.abc import Mapping

from edgerollout.cli.plan_render import DryRun, render_plan_json, render_plan_table
from edgerollout.domain.model import (
    ContainerFailure,
    DaemonSetView,
    NodeName,
    NodeReadiness,
    NodeView,
    PodView,
)
from edgerollout.domain.planning.decision import Snapshot
from edgerollout.domain.planning.reconcile import plan
from edgerollout.domain.planning.rollout_book import RolloutBook
from edgerollout.domain.reporting.node_plans import node_plans
from edgerollout.domain.vocabulary import (
    MAX_UNAVAILABLE_ANNOTATION,
    NODEPOOL_LABEL,
    UPDATE_STRATEGY_ANNOTATION,
    WAVES_ANNOTATION,
)
from tests.unit.domain.builders import NEW, NOW, OLD, daemonset, old_pod, pod, revision

ANNOTATIONS = {
    UPDATE_STRATEGY_ANNOTATION: "AdvancedRollingUpdate",
    MAX_UNAVAILABLE_ANNOTATION: "1",
    WAVES_ANNOTATION: "pool-a, *",
}


def planned(
    subject: DaemonSetView,
    pods: list[PodView],
    readiness: dict[NodeName, NodeReadiness],
    node_labels: dict[NodeName, Mapping[str, str]] | None = None,
) -> DryRun:
    """What `plan` shows of the DaemonSet with these pods, rolling out from OLD to NEW."""
    by_node: dict[NodeName, list[PodView]] = {}
    for held in pods:
        assert held.node_name is not None
        by_node.setdefault(held.node_name, []).append(held)
    decided = plan(
        Snapshot(
            daemonset=subject,
            revisions=(revision("old", 1, OLD), revision("new", 2, NEW)),
            pods=pods,
            pods_by_node=by_node,
            readiness=readiness,
            node_labels=node_labels or {},
            now=NOW,
        ),
        RolloutBook(),
    )
    return DryRun(
        daemonset=subject,
        plan=decided,
        nodes=node_plans(decided, pods_by_node=by_node, readiness=readiness),
    )


def dry_run() -> DryRun:
    pods = [pod("web-1", "edge-1"), old_pod("web-2", "edge-2"), old_pod("web-3", "edge-3")]
    nodes = [
        NodeView(
            name=NodeName("edge-1"),
            readiness=NodeReadiness.READY,
            labels={NODEPOOL_LABEL: "pool-a"},
        ),
        NodeView(
            name=NodeName("edge-2"),
            readiness=NodeReadiness.READY,
            labels={NODEPOOL_LABEL: "pool-a"},
        ),
        NodeView(name=NodeName("edge-3"), readiness=NodeReadiness.UNKNOWN),
    ]
    return planned(
        daemonset(ANNOTATIONS),
        pods,
        readiness={node.name: node.readiness for node in nodes},
        node_labels={node.name: node.labels for node in nodes},
    )


def test_table_names_the_action_and_why_of_every_node() -> None:
    assert render_plan_table(dry_run()) == (
        "Strategy: AdvancedRollingUpdate, 0 of 1 nodes unavailable before these deletions\n"
        "Staging: wave pool-a (1 of 2)\n"
        "NODE     NODE-READY   ACTION       WHY\n"
        "edge-1   Ready        updated\n"
        "edge-2   Ready        delete now   outdated, deleted within max-unavailable\n"
        "edge-3   Unknown      skipped      node Unknown\n"
        "1 pod to delete now.\n"
        "Event: Normal WaveStarted: wave pool-a (1 of 2) started: its nodes are upgraded now\n"
    )


def test_json_document_has_the_documented_shape() -> None:
    assert json.loads(render_plan_json(dry_run())) == {
        "daemonset": "nginx-daemonset",
        "namespace": "default",
        "strategy": "AdvancedRollingUpdate",
        "newestRevision": NEW,
        "maxUnavailable": 1,
        "unavailable": 0,
        "paused": False,
        "pausesRollout": False,
        "rollsBackTo": None,
        "rollbackSwitch": None,
        "windowOpens": None,
        "wave": {"name": "pool-a", "index": 0, "count": 2, "pending": 1},
        "batch": None,
        "events": [
            {
                "type": "Normal",
                "reason": "WaveStarted",
                "message": "wave pool-a (1 of 2) started: its nodes are upgraded now",
            }
        ],
        "nodes": [
            {
                "node": "edge-1",
                "nodeReady": "Ready",
                "pods": ["web-1"],
                "action": "updated",
                "why": "",
            },
            {
                "node": "edge-2",
                "nodeReady": "Ready",
                "pods": ["web-2"],
                "action": "delete now",
                "why": "outdated, deleted within max-unavailable",
            },
            {
                "node": "edge-3",
                "nodeReady": "Unknown",
                "pods": ["web-3"],
                "action": "skipped",
                "why": "node Unknown",
            },
        ],
    }


def test_the_header_says_when_a_closed_window_opens_and_that_a_failure_pauses() -> None:
    crashing = [ContainerFailure(container="web", reason="CrashLoopBackOff")]
    pods = [
        pod("web-1", "edge-1", ready=False, failures=crashing),
        pod("web-2", "edge-2", ready=False, failures=crashing),
    ]
    subject = daemonset(
        {
            UPDATE_STRATEGY_ANNOTATION: "AdvancedRollingUpdate",
            "edgerollout.io/max-failed": "1",
            "edgerollout.io/maintenance-window": "Mon 02:00-03:00",
        }
    )
    result = planned(
        subject,
        pods,
        readiness=dict.fromkeys(map(NodeName, ("edge-1", "edge-2")), NodeReadiness.READY),
    )
    lines = render_plan_table(result).splitlines()
    assert lines[1] == "Staging: maintenance window closed, opens 2025-03-03T02:00:00Z"
    assert lines[5:7] == [
        "0 pods to delete now.",
        "The rollout would be paused: more nodes are broken than max-failed allows.",
    ]
    document = json.loads(render_plan_json(result))
    assert (document["pausesRollout"], document["windowOpens"]) == (True, "2025-03-03T02:00:00Z")
