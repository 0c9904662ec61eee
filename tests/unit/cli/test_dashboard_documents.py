"""What the dashboard's pages receive (`dashboard.documents`): each cell's state from `status`'s
row of its pod, cells grouped by node pool and counted, `list`'s item for the header, and when
each cell entered its state."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from edgerollout.cli.dashboard.documents import (
    CellState,
    PodlessNode,
    SeenSince,
    cell_state,
    cluster_since,
    events_document,
    home_document,
    node_cells,
    rollout_document,
)
from edgerollout.cli.list_command import listed_status
from edgerollout.cli.list_render import item_document
from edgerollout.cli.rollout_read import (
    ListedRollout,
    RolloutIndex,
    RolloutViews,
    daemonset_pod,
    dated_revision,
    list_all,
    opted_in_daemonset,
    read_rollouts,
)
from edgerollout.domain.model import (
    DaemonSetUID,
    DaemonSetView,
    NodeName,
    NodeReadiness,
    NodeView,
    PodUID,
    PodView,
)
from edgerollout.domain.reporting.rollout_status import NodeRow, PodState, PrepullState
from edgerollout.domain.vocabulary import NODEPOOL_LABEL
from edgerollout.kube.api import CONTROLLER_REVISIONS, DAEMONSETS, NODES, PODS
from edgerollout.kube.views import node_from_api
from tests.unit.cli.list_cluster import NOW, ClosingApi, shop
from tests.unit.kube.objects import node_json

READY = NodeReadiness.READY


def row(
    state: PodState,
    *,
    readiness: NodeReadiness = READY,
    hold: str | None = None,
    broken: str | None = None,
    prepull: PrepullState | None = None,
    current: bool = False,
) -> NodeRow:
    return NodeRow(
        node=NodeName("edge-1"),
        node_readiness=readiness,
        pod="web-1",
        revision="hash-old",
        current=current,
        state=state,
        hold=hold,
        broken=broken,
        prepull=prepull,
    )


@pytest.mark.parametrize(
    ("reading", "cell"),
    [
        (row(PodState.UPDATED, current=True), CellState.UPDATED),
        (row(PodState.UPDATED, current=True, readiness=NodeReadiness.NOT_READY), CellState.UPDATED),
        (row(PodState.UPGRADING, current=True), CellState.UPGRADING),
        (row(PodState.TERMINATING), CellState.UPGRADING),
        (row(PodState.TERMINATING, readiness=NodeReadiness.NOT_READY), CellState.WAITING),
        (
            row(PodState.WAITING_NODE_NOT_READY, readiness=NodeReadiness.NOT_READY),
            CellState.WAITING,
        ),
        (row(PodState.OLD, readiness=NodeReadiness.MISSING), CellState.WAITING),
        (row(PodState.BROKEN, current=True, broken="CrashLoopBackOff"), CellState.BROKEN),
        (row(PodState.HELD, hold="partition"), CellState.HELD),
        (row(PodState.HELD, hold="wave pool-b"), CellState.HELD),
        (row(PodState.HELD, hold="waiting for its image pre-pull"), CellState.PULLING),
        (
            row(
                PodState.HELD,
                hold="waiting for its image pre-pull, download window opens 2025-03-01T20:00:00Z",
            ),
            CellState.PULLING,
        ),
        (row(PodState.OTA_UPGRADE_AVAILABLE, prepull=PrepullState.RUNNING), CellState.PULLING),
        (row(PodState.OTA_UPGRADE_AVAILABLE, prepull=PrepullState.DONE), CellState.OUTDATED),
        (row(PodState.OTA_UPGRADE_AVAILABLE), CellState.OUTDATED),
        (row(PodState.OLD), CellState.OUTDATED),
    ],
)
def test_a_cell_shows_the_state_of_its_pods_status_row(reading: NodeRow, cell: CellState) -> None:
    assert cell_state(reading) is cell


async def shop_rollouts(api: ClosingApi) -> dict[str, ListedRollout]:
    return {
        rollout.views.daemonset.name: rollout
        for rollout in await read_rollouts(api, namespace="default")
    }


def put_pools(api: ClosingApi, pools: dict[str, str]) -> None:
    for name, pool in pools.items():
        node = api.stored(NODES, name)
        assert node is not None
        node["metadata"].setdefault("labels", {})[NODEPOOL_LABEL] = pool
        api.put(NODES, node)


async def test_a_rollouts_cells_are_grouped_by_node_pool_and_counted() -> None:
    api = ClosingApi()
    shop(api)  # logs: edge-1 and edge-2 new, edge-3 old and offline
    put_pools(api, {"edge-1": "shops-north", "edge-2": "shops-south", "edge-3": "shops-south"})
    rollout = (await shop_rollouts(api))["logs"]
    listed = listed_status(rollout, at=NOW)
    since = {"edge-3": NOW - timedelta(minutes=5)}

    document = rollout_document(listed, views=rollout.views, since=since)

    none = dict.fromkeys(
        ["updated", "upgrading", "pulling", "outdated", "held", "waiting", "broken"], 0
    )
    assert document == {
        "key": "default/logs",
        "item": item_document(listed),
        "summary": listed.status.summary,
        "staging": "",
        "strategy": "AdvancedRollingUpdate, max-unavailable 30% (1 of 3 nodes)",
        "poolLabel": NODEPOOL_LABEL,
        "states": ["updated", "upgrading", "pulling", "outdated", "held", "waiting", "broken"],
        "counts": {**none, "updated": 2, "waiting": 1},
        "pools": [
            {
                "name": "shops-north",
                "counts": {**none, "updated": 1},
                "cells": [["edge-1", 0, "logs-edge-1", "hash-new", True, "Ready", "updated", None]],
            },
            {
                "name": "shops-south",
                "counts": {**none, "updated": 1, "waiting": 1},
                "cells": [
                    ["edge-2", 0, "logs-edge-2", "hash-new", True, "Ready", "updated", None],
                    [
                        "edge-3",
                        5,
                        "logs-edge-3",
                        "hash-old",
                        False,
                        "NotReady",
                        "waiting: node NotReady",
                        "2025-03-01T11:55:00Z",
                    ],
                ],
            },
        ],
    }
    assert node_cells(document) == {"edge-1": "updated", "edge-2": "updated", "edge-3": "waiting"}


async def test_a_paused_rollout_shows_its_old_pods_held_by_the_pause() -> None:
    api = ClosingApi()
    shop(api)  # agent: paused, edge-2 old
    rollout = (await shop_rollouts(api))["agent"]
    document = rollout_document(listed_status(rollout, at=NOW), views=rollout.views, since={})
    assert node_cells(document) == {"edge-1": "updated", "edge-2": "held", "edge-3": "updated"}
    [pool] = document["pools"]
    assert pool["name"] == ""
    assert [cell[6] for cell in pool["cells"]] == ["updated", "held: paused", "updated"]
    assert document["staging"] == "paused"


async def watched(api: ClosingApi) -> RolloutIndex:
    """The index the dashboard's watches keep, fed with every object of `api` as listed."""
    index = RolloutIndex()
    for obj in await list_all(api, DAEMONSETS):
        index.daemonset_changed(None, opted_in_daemonset(obj))
    for obj in await list_all(api, CONTROLLER_REVISIONS):
        index.revision_changed(None, dated_revision(obj))
    for obj in await list_all(api, PODS):
        index.pod_changed(None, daemonset_pod(obj))
    for obj in await list_all(api, NODES):
        index.node_changed(None, node_from_api(obj))
    return index


def pod_gone(api: ClosingApi, index: RolloutIndex, name: str) -> set[str]:
    """The pod `name` of `default` deleted, as its watch reports it; the DaemonSets it changes."""
    pod = api.stored(PODS, name, namespace="default")
    assert pod is not None
    return index.pod_changed(daemonset_pod(pod), None)


def document_of(index: RolloutIndex, key: str) -> dict[str, Any]:
    rollout = index.rollout(key)
    assert rollout is not None
    return rollout_document(listed_status(rollout, at=NOW), views=rollout.views, since={})


async def test_a_node_whose_pod_is_gone_is_drawn_by_name_as_upgrading() -> None:
    api = ClosingApi()
    shop(api)  # logs: edge-1 and edge-2 new, edge-3 old and offline; 3 nodes desired
    index = await watched(api)
    assert pod_gone(api, index, "logs-edge-2") == {"default/logs"}

    document = document_of(index, "default/logs")

    assert node_cells(document) == {"edge-1": "updated", "edge-2": "upgrading", "edge-3": "waiting"}
    [pool] = document["pools"]
    assert pool["cells"][1] == ["edge-2", 1, None, None, False, "Ready", "no pod", None]
    assert document["counts"] == {
        "updated": 1,
        "upgrading": 1,
        "pulling": 0,
        "outdated": 0,
        "held": 0,
        "waiting": 1,
        "broken": 0,
    }
    item = document["item"]
    assert (item["total"], item["updated"], item["offline"]) == (3, 1, 1)
    assert document["summary"] == (
        'Waiting for daemon set "logs" rollout to finish: 1 of 3 updated pods are available '
        "(1 waiting for NotReady nodes, 1 node without a pod)..."
    )


async def test_a_node_without_a_pod_changes_with_its_readiness_and_goes_with_it() -> None:
    api = ClosingApi()
    shop(api)
    index = await watched(api)
    pod_gone(api, index, "logs-edge-2")
    node = api.stored(NODES, "edge-2")
    assert node is not None
    was = node_from_api(node)
    offline = node_from_api(api.put(NODES, node_json("edge-2", ready="False")))

    on_edge_2 = {"default/agent", "default/bad", "default/logs", "default/web"}
    assert index.node_changed(was, offline) == on_edge_2  # logs without its pod there too
    # Not Ready and not tolerated: the native controller no longer counts it, nor does the page.
    desired = index.rollout("default/logs")
    assert desired is not None
    assert [node.name for node in desired.views.nodes] == ["edge-1", "edge-2", "edge-3"]
    unnamed = {"edge-1": "updated", None: "upgrading", "edge-3": "waiting"}
    assert node_cells(document_of(index, "default/logs")) == unnamed
    assert index.node_changed(offline, None) == on_edge_2
    gone = index.rollout("default/logs")
    assert gone is not None
    assert [node.name for node in gone.views.nodes] == ["edge-1", "edge-3"]
    assert node_cells(document_of(index, "default/logs")) == unnamed


async def test_a_node_never_seen_with_a_pod_is_drawn_without_a_name() -> None:
    api = ClosingApi()
    shop(api)
    logs = api.stored(DAEMONSETS, "logs", namespace="default")
    assert logs is not None
    logs["status"]["desiredNumberScheduled"] = 4
    api.put(DAEMONSETS, logs)

    document = document_of(await watched(api), "default/logs")

    [pool] = document["pools"]
    assert pool["cells"][3] == [None, 1, None, None, False, None, "no pod", None]
    assert len(pool["cells"]) == 4
    assert document["counts"]["upgrading"] == 1
    assert document["item"]["total"] == 4


@pytest.mark.parametrize(
    ("readiness", "cell"),
    [
        (NodeReadiness.READY, CellState.UPGRADING),
        (None, CellState.UPGRADING),
        (NodeReadiness.NOT_READY, CellState.WAITING),
        (NodeReadiness.UNKNOWN, CellState.WAITING),
    ],
)
def test_a_node_without_a_pod_is_upgrading_unless_not_ready(
    readiness: NodeReadiness | None, cell: CellState
) -> None:
    assert PodlessNode(node=NodeName("edge-1"), readiness=readiness).state is cell


async def test_home_is_lists_item_of_each_rollout_in_lists_order() -> None:
    api = ClosingApi()
    shop(api)
    listed = [listed_status(rollout, at=NOW) for rollout in (await shop_rollouts(api)).values()]
    document = home_document(listed)
    assert document == {"items": [item_document(item) for item in listed]}
    assert [item["name"] for item in document["items"]] == ["agent", "bad", "logs", "web"]


def test_a_cell_is_seen_since_it_entered_its_state() -> None:
    seen = SeenSince()
    later = NOW + timedelta(seconds=30)
    assert seen.update([row(PodState.OLD)], now=NOW) == {"edge-1": NOW}
    assert seen.update([row(PodState.OLD)], now=later) == {"edge-1": NOW}
    held = row(PodState.HELD, hold="partition")
    assert seen.update([held], now=later) == {"edge-1": later}
    assert seen.update([], now=later + timedelta(seconds=1)) == {}
    assert seen.update([held], now=later + timedelta(seconds=2)) == {
        "edge-1": later + timedelta(seconds=2)
    }


def test_a_node_without_a_pod_is_seen_since_its_pod_went() -> None:
    seen = SeenSince()
    later = NOW + timedelta(seconds=30)
    podless = PodlessNode(node=NodeName("edge-1"), readiness=READY)
    unnamed = PodlessNode(node=None, readiness=None)
    assert seen.update([row(PodState.OLD)], now=NOW) == {"edge-1": NOW}
    assert seen.update([], now=later, podless=[podless, unnamed]) == {"edge-1": later}
    assert seen.update([], now=later + timedelta(seconds=5), podless=[podless]) == {"edge-1": later}


def test_the_cluster_says_since_when_where_its_objects_say_it() -> None:
    # A waiting node since its readiness changed, an updated pod since Ready, a broken pod since
    # its containers stopped being ready; an outdated pod has no such time: first seen stands.
    went = NOW - timedelta(days=3)
    nodes = (
        NodeView(name=NodeName("edge-1"), readiness=NodeReadiness.UNKNOWN, readiness_since=went),
        NodeView(name=NodeName("edge-2"), readiness=READY, readiness_since=went),
        NodeView(name=NodeName("edge-3"), readiness=READY),
        NodeView(name=NodeName("edge-4"), readiness=READY),
        NodeView(name=NodeName("edge-5"), readiness=NodeReadiness.NOT_READY, readiness_since=went),
    )
    pods = (
        PodView(namespace="default", name="web-1", uid=PodUID("u1"), node_name=NodeName("edge-1")),
        PodView(
            namespace="default",
            name="web-2",
            uid=PodUID("u2"),
            node_name=NodeName("edge-2"),
            ready=True,
            ready_since=NOW - timedelta(hours=2),
        ),
        PodView(
            namespace="default",
            name="web-3",
            uid=PodUID("u3"),
            node_name=NodeName("edge-3"),
            containers_unready_since=NOW - timedelta(minutes=7),
        ),
        PodView(namespace="default", name="web-4", uid=PodUID("u4"), node_name=NodeName("edge-4")),
    )
    rows = [
        NodeRow(
            node=NodeName("edge-1"),
            node_readiness=NodeReadiness.UNKNOWN,
            pod="web-1",
            revision="hash-old",
            current=False,
            state=PodState.WAITING_NODE_NOT_READY,
        ),
        NodeRow(
            node=NodeName("edge-2"),
            node_readiness=READY,
            pod="web-2",
            revision="hash-new",
            current=True,
            state=PodState.UPDATED,
        ),
        NodeRow(
            node=NodeName("edge-3"),
            node_readiness=READY,
            pod="web-3",
            revision="hash-new",
            current=True,
            state=PodState.BROKEN,
            broken="CrashLoopBackOff",
        ),
        NodeRow(
            node=NodeName("edge-4"),
            node_readiness=READY,
            pod="web-4",
            revision="hash-old",
            current=False,
            state=PodState.OLD,
        ),
    ]
    views = RolloutViews(
        daemonset=DaemonSetView(namespace="default", name="web", uid=DaemonSetUID("uid-web")),
        revisions=(),
        pods=pods,
        nodes=nodes,
        spec_observed=True,
    )
    podless = [PodlessNode(node=NodeName("edge-5"), readiness=NodeReadiness.NOT_READY)]
    known = cluster_since(rows, views, podless)
    assert known == {
        "edge-1": went,
        "edge-2": NOW - timedelta(hours=2),
        "edge-3": NOW - timedelta(minutes=7),
        "edge-5": went,
    }
    assert SeenSince().update(rows, now=NOW, podless=podless, known=known) == {
        **known,
        "edge-4": NOW,
    }


def test_events_are_the_newest_first_up_to_the_limit() -> None:
    events: list[dict[str, Any]] = [
        {
            "type": "Normal",
            "reason": "WaveStarted",
            "message": "wave a",
            "count": 1,
            "lastTimestamp": "2025-03-01T11:00:00Z",
        },
        {
            "type": "Warning",
            "reason": "NodeBroken",
            "message": "edge-2",
            "count": 3,
            "lastTimestamp": "2025-03-01T11:30:00Z",
        },
        {
            "type": "Normal",
            "reason": "Paused",
            "message": "by max-failed",
            "eventTime": "2025-03-01T11:45:00.123456Z",
        },
        {
            "type": "Normal",
            "reason": "Old",
            "message": "the oldest",
            "metadata": {"creationTimestamp": "2025-03-01T10:00:00Z"},
        },
    ]
    assert events_document(events, limit=3) == {
        "events": [
            {
                "type": "Normal",
                "reason": "Paused",
                "message": "by max-failed",
                "count": 1,
                "last": "2025-03-01T11:45:00Z",
            },
            {
                "type": "Warning",
                "reason": "NodeBroken",
                "message": "edge-2",
                "count": 3,
                "last": "2025-03-01T11:30:00Z",
            },
            {
                "type": "Normal",
                "reason": "WaveStarted",
                "message": "wave a",
                "count": 1,
                "last": "2025-03-01T11:00:00Z",
            },
        ]
    }
