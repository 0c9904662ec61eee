"""`edgerollout status` output: the exact table and JSON for a few rollouts."""

import json

from edgerollout.cli.status_render import render_json, render_table
from edgerollout.domain.model import (
    Condition,
    ConditionStatus,
    DaemonSetView,
    NodeName,
    NodeReadiness,
    NodeView,
    PodView,
)
from edgerollout.domain.reporting.rollout_status import RolloutStatus, rollout_status
from edgerollout.domain.vocabulary import POD_IMAGE_READY, POD_NEED_UPGRADE, WAIT_PULL_IMAGE
from tests.unit.domain.builders import NOW, daemonset, node, revision, uid

NEW, OLD = "6b755b65dd", "5d4f8c9b7"
REVISIONS = [
    revision("nginx-daemonset-5d4f8c9b7", 1, OLD),
    revision("nginx-daemonset-6b755b65dd", 2, NEW),
]
ARU = {
    "apps.openyurt.io/update-strategy": "AdvancedRollingUpdate",
    "apps.openyurt.io/max-unavailable": "30%",
}


def ds(annotations: dict[str, str], *, update_strategy_type: str = "OnDelete") -> DaemonSetView:
    return daemonset(annotations, update_strategy_type=update_strategy_type, namespace="shop-17")


def pod(
    suffix: str,
    on: str,
    hash: str,
    *,
    conditions: dict[str, Condition] | None = None,
) -> PodView:
    return PodView(
        namespace="shop-17",
        name=f"nginx-daemonset-{suffix}",
        uid=uid(suffix),
        node_name=NodeName(on),
        revision_hash=hash,
        ready=True,
        ready_since=NOW,
        conditions=conditions or {},
    )


def nodes(*readiness: NodeReadiness) -> list[NodeView]:
    return [node(f"edge-{i}", r) for i, r in enumerate(readiness, 1)]


def status_of(
    subject: DaemonSetView, pods: list[PodView], *readiness: NodeReadiness
) -> RolloutStatus:
    """The status of `pods` on nodes edge-1, edge-2, ... of these readinesses, at NOW."""
    return rollout_status(
        daemonset=subject, revisions=REVISIONS, pods=pods, nodes=nodes(*readiness), now=NOW
    )


def disconnected_rollout() -> RolloutStatus:
    return status_of(
        ds(ARU),
        [
            pod("x2k9p", "edge-1", NEW),
            pod("bwzss", "edge-2", OLD),
            pod("q7d4n", "edge-3", OLD),
        ],
        NodeReadiness.READY,
        NodeReadiness.UNKNOWN,
        NodeReadiness.NOT_READY,
    )


def test_table_of_an_advanced_rolling_update_waiting_for_disconnected_nodes() -> None:
    assert render_table(disconnected_rollout()) == (
        "Strategy: AdvancedRollingUpdate, max-unavailable 30% (1 of 3 nodes)\n"
        "NODE     NODE-READY   POD                     REVISION   STATE\n"
        "edge-1   Ready        nginx-daemonset-x2k9p   current    updated\n"
        "edge-2   Unknown      nginx-daemonset-bwzss   old        waiting: node NotReady\n"
        "edge-3   NotReady     nginx-daemonset-q7d4n   old        waiting: node NotReady\n"
        'Waiting for daemon set "nginx-daemonset" rollout to finish: '
        "1 of 3 updated pods are available (2 waiting for NotReady nodes)...\n"
    )


def test_wide_table_shows_each_pods_revision_hash() -> None:
    assert render_table(disconnected_rollout(), wide=True).splitlines()[1:4] == [
        "NODE     NODE-READY   POD                     REVISION               STATE",
        "edge-1   Ready        nginx-daemonset-x2k9p   current (6b755b65dd)   updated",
        "edge-2   Unknown      nginx-daemonset-bwzss   old (5d4f8c9b7)        waiting: node NotReady",
    ]


def test_json_document_has_the_documented_shape() -> None:
    assert json.loads(render_json(disconnected_rollout())) == {
        "daemonset": "nginx-daemonset",
        "namespace": "shop-17",
        "strategy": {
            "type": "AdvancedRollingUpdate",
            "maxUnavailable": "30%",
            "budget": 1,
            "notManagedReasons": [],
        },
        "newestRevision": NEW,
        "complete": False,
        "nodes": [
            {
                "node": "edge-1",
                "nodeReady": "Ready",
                "pod": "nginx-daemonset-x2k9p",
                "revision": NEW,
                "current": True,
                "state": "updated",
                "held": None,
                "broken": None,
            },
            {
                "node": "edge-2",
                "nodeReady": "Unknown",
                "pod": "nginx-daemonset-bwzss",
                "revision": OLD,
                "current": False,
                "state": "waiting: node NotReady",
                "held": None,
                "broken": None,
            },
            {
                "node": "edge-3",
                "nodeReady": "NotReady",
                "pod": "nginx-daemonset-q7d4n",
                "revision": OLD,
                "current": False,
                "state": "waiting: node NotReady",
                "held": None,
                "broken": None,
            },
        ],
        "summary": (
            'Waiting for daemon set "nginx-daemonset" rollout to finish: '
            "1 of 3 updated pods are available (2 waiting for NotReady nodes)..."
        ),
        "paused": False,
        "staging": [],
        "windowOpens": None,
        "wave": None,
        "batch": None,
        "rolledBack": None,
        "rollbackSwitch": None,
    }


def test_table_of_an_ota_rollout_with_a_pre_pull_running() -> None:
    message = f"controllerrevision: {NEW}"
    marks = {
        POD_NEED_UPGRADE: Condition(
            type=POD_NEED_UPGRADE, status=ConditionStatus.TRUE, message=message
        ),
        POD_IMAGE_READY: Condition(
            type=POD_IMAGE_READY,
            status=ConditionStatus.FALSE,
            reason=WAIT_PULL_IMAGE,
            message=message,
        ),
    }
    status = status_of(
        ds({"apps.openyurt.io/update-strategy": "OTA"}),
        [
            pod("x2k9p", "edge-1", NEW),
            pod("bwzss", "edge-2", OLD, conditions=marks),
            pod("q7d4n", "edge-3", NEW),
        ],
        NodeReadiness.READY,
        NodeReadiness.READY,
        NodeReadiness.READY,
    )
    assert render_table(status) == (
        "Strategy: OTA\n"
        "NODE     NODE-READY   POD                     REVISION   STATE\n"
        "edge-1   Ready        nginx-daemonset-x2k9p   current    updated\n"
        "edge-2   Ready        nginx-daemonset-bwzss   old        "
        "OTA: upgrade available, pre-pull running\n"
        "edge-3   Ready        nginx-daemonset-q7d4n   current    updated\n"
        "2 of 3 pods run the newest revision; 1 node has an upgrade available\n"
    )


def test_table_of_a_complete_daemonset_not_managed_by_edgerollout() -> None:
    status = status_of(
        ds({}, update_strategy_type="RollingUpdate"),
        [pod("x2k9p", "edge-1", NEW)],
        NodeReadiness.READY,
    )
    assert render_table(status) == (
        "Strategy: not managed by edgerollout\n"
        "NODE     NODE-READY   POD                     REVISION   STATE\n"
        "edge-1   Ready        nginx-daemonset-x2k9p   current    updated\n"
        'daemon set "nginx-daemonset" successfully rolled out\n'
    )


def test_table_names_why_an_opted_in_daemonset_is_left_alone() -> None:
    status = status_of(ds(ARU, update_strategy_type="RollingUpdate"), [])
    assert render_table(status) == (
        "Strategy: not managed by edgerollout (UpdateStrategyNotOnDelete)\n"
        'No pods of daemon set "nginx-daemonset" found.\n'
        'daemon set "nginx-daemonset" successfully rolled out\n'
    )


def test_table_says_when_max_unavailable_is_invalid() -> None:
    status = status_of(
        ds({**ARU, "apps.openyurt.io/max-unavailable": "1.5"}),
        [pod("x2k9p", "edge-1", NEW)],
        NodeReadiness.READY,
    )
    assert render_table(status).splitlines()[0] == (
        'Strategy: AdvancedRollingUpdate, max-unavailable "1.5" is invalid: '
        "no pod is deleted until it is fixed"
    )


def test_a_closed_maintenance_window_says_when_it_opens() -> None:
    # NOW is Saturday 2025-03-01 12:00 UTC.
    status = status_of(
        ds({**ARU, "edgerollout.io/maintenance-window": "Mon-Fri 02:00-04:00"}),
        [pod("x2k9p", "edge-1", OLD)],
        NodeReadiness.READY,
    )
    table = render_table(status)
    assert table.splitlines()[1] == (
        "Staging: maintenance window Mon-Fri 02:00-04:00 (closed, opens 2025-03-03T02:00:00Z)"
    )
    assert json.loads(render_json(status))["windowOpens"] == "2025-03-03T02:00:00Z"
