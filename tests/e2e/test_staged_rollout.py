"""Staged rollouts on the lab (design §12): pause, partition, node selector and waves hold nodes;
and the clock (design §13): a maintenance window holds deletions, an OTA deadline makes them.

Each test runs the real controller process on a six-node lab and asserts which nodes were
upgraded and which kept their pods (same UIDs), over a hold period long enough for many
reconciles, and the exact Events. `plan` is checked against the deletions the controller then
makes from the same state. Node labels a test adds are removed when it ends, whatever happened.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from edgerollout.domain.vocabulary import (
    ADVANCED_ROLLING_UPDATE,
    BATCH_SOAK_ANNOTATION,
    BATCH_STARTED,
    BATCHES_ANNOTATION,
    HELD_BY_PARTITION,
    INVALID_NODE_SELECTOR,
    INVALID_PARTITION,
    INVALID_WAVES,
    MAINTENANCE_WINDOW_ANNOTATION,
    MAX_FAILED_ANNOTATION,
    MAX_FAILED_BEFORE_SAMPLE_ANNOTATION,
    MAX_UNAVAILABLE_ANNOTATION,
    MIN_SAMPLE_ANNOTATION,
    NODE_SELECTOR_ANNOTATION,
    NODEPOOL_LABEL,
    OTA,
    OTA_DEADLINE_ANNOTATION,
    PARTITION_ANNOTATION,
    PAUSED_ANNOTATION,
    POD_NEED_UPGRADE,
    ROLLOUT_FAILED,
    ROLLOUT_PAUSED,
    ROLLOUT_RESUMED,
    SUCCESSFUL_DELETE,
    UPDATE_STRATEGY_ANNOTATION,
    WAVE_STARTED,
    WAVES_ANNOTATION,
)
from edgerollout_lab.cluster import Lab, node_names
from edgerollout_lab.kwok_stages import CRASHLOOP_IMAGE
from tests.e2e.support import cli
from tests.e2e.support.controller_process import ControllerProcess, controller_for
from tests.e2e.support.lab import (
    LabHandle,
    by_node,
    condition,
    daemonset,
    deleted_on,
    events,
    hold_for,
    images,
    pod_ready,
    set_image,
    wait_for,
)
from tests.e2e.support.seed import (
    NAME,
    NEW,
    OLD,
    ON_DELETE,
    SELECTOR,
    newest_revision_hash,
    revision_after,
    running_everywhere,
)
from tests.e2e.support.unavailability_watcher import UnavailabilityWatcher

pytestmark = pytest.mark.lab(nodes=6)

SIX = node_names(6)
# Long enough for many reconciles: the controller reacts to a change within milliseconds.
HOLD_SECONDS = 8
CANARY = "e2e.edgerollout.io/canary"
POKE = "e2e.edgerollout.io/poke"


def advanced_rolling_update(max_unavailable: str, **staging: str) -> dict[str, str]:
    return {
        UPDATE_STRATEGY_ANNOTATION: ADVANCED_ROLLING_UPDATE,
        MAX_UNAVAILABLE_ANNOTATION: max_unavailable,
        **staging,
    }


async def seed_six(
    kube: LabHandle, namespace: str, annotations: dict[str, str], *, min_ready_seconds: int = 0
) -> dict[str, str]:
    """The seed's DaemonSet on OLD on all six nodes; node -> pod UID."""
    manifest = daemonset(NAME, image=OLD, strategy=ON_DELETE, annotations=annotations)
    manifest["spec"]["minReadySeconds"] = min_ready_seconds
    await kube.apps.create_namespaced_daemon_set(namespace, manifest)
    return await running_everywhere(kube, namespace, OLD, SIX)


async def annotate(kube: LabHandle, namespace: str, annotations: Mapping[str, str | None]) -> None:
    """Set (None: remove) annotations of the DaemonSet, as `kubectl annotate` would."""
    patch = {"metadata": {"annotations": dict(annotations)}}
    await kube.apps.patch_namespaced_daemon_set(NAME, namespace, patch)


async def pods_now(kube: LabHandle, namespace: str) -> dict[str, list[Any]]:
    return by_node(await kube.pods(namespace, SELECTOR))


def updated(pods: list[Any], before: str) -> bool:
    """One live, Ready NEW pod on the node, not the one it had before."""
    return (
        len(pods) == 1
        and pods[0].metadata.uid != before
        and pods[0].metadata.deletion_timestamp is None
        and images(pods[0]) == [NEW]
        and pod_ready(pods[0])
    )


def kept(pods: list[Any], before: str) -> bool:
    """The node's old pod, still there and not being deleted."""
    return (
        [p.metadata.uid for p in pods] == [before]
        and pods[0].metadata.deletion_timestamp is None
        and images(pods[0]) == [OLD]
    )


def split(
    kube: LabHandle, namespace: str, before: Mapping[str, str], *, new_on: list[str]
) -> Callable[[], Awaitable[dict[str, str] | None]]:
    """A probe: the nodes `new_on` are updated and every other node keeps its old pod; returns
    node -> pod UID when so."""

    async def probe() -> dict[str, str] | None:
        grouped = await pods_now(kube, namespace)
        if sorted(grouped) != SIX:
            return None
        if all(
            updated(grouped[node], before[node])
            if node in new_on
            else kept(grouped[node], before[node])
            for node in SIX
        ):
            return {node: grouped[node][0].metadata.uid for node in SIX}
        return None

    return probe


def still(probe: Callable[[], Awaitable[object]]) -> Callable[[], Awaitable[bool]]:
    """`probe` as `hold_for` takes it: true while it finds what it looks for."""

    async def holding() -> bool:
        found = await probe()
        return found is not None and found is not False

    return holding


async def edgerollout(
    kube: LabHandle, *args: str, timeout: float = 30
) -> subprocess.CompletedProcess[str]:
    """`edgerollout ARGS --kubeconfig LAB` as a user runs it."""
    return await cli.edgerollout(kube.lab.kubeconfig, *args, timeout=timeout)


@contextlib.asynccontextmanager
async def node_labels(
    kube: LabHandle, labels: Mapping[str, Mapping[str, str]]
) -> AsyncIterator[None]:
    """The nodes carry these labels until the block ends (the lab is shared by later tests)."""
    try:
        for node, wanted in labels.items():
            await kube.core.patch_node(node, {"metadata": {"labels": dict(wanted)}})
        yield
    finally:
        for node, wanted in labels.items():
            # null removes a label
            await kube.core.patch_node(node, {"metadata": {"labels": dict.fromkeys(wanted)}})


def watching(
    kube: LabHandle, namespace: str, *, min_ready_seconds: int = 0
) -> UnavailabilityWatcher:
    """The six nodes' unavailability, watched for the length of an `async with` block."""
    return UnavailabilityWatcher(
        kube.core, namespace, selector=SELECTOR, nodes=SIX, min_ready_seconds=min_ready_seconds
    )


async def test_pause_half_way_deletes_nothing_until_resumed(
    kube: LabHandle, namespace: str, controller: ControllerProcess
) -> None:
    # minReadySeconds leaves a window after edge-3's new pod turns Ready in which the controller
    # may delete nothing: the pause lands there, so the rollout stops after exactly three nodes.
    min_ready = 3
    before = await seed_six(
        kube, namespace, advanced_rolling_update("1"), min_ready_seconds=min_ready
    )
    async with watching(kube, namespace, min_ready_seconds=min_ready) as watcher:

        async def old_pods_available() -> bool:
            return watcher.unavailable_now == ()

        # Old pods not available yet would be outdated and unavailable: replaced all at once.
        await wait_for(old_pods_available, timeout=min_ready + 5, what="the old pods available")
        changed_at = time.time()
        await set_image(kube, namespace, NAME, NEW)

        async def edge3_ready() -> bool:
            return updated((await pods_now(kube, namespace)).get("edge-3", []), before["edge-3"])

        await wait_for(edge3_ready, timeout=40, what="edge-3's new pod Ready", interval=0.1)
        await annotate(kube, namespace, {PAUSED_ANNOTATION: "true"})

        async def paused() -> bool:
            return bool(await events(kube, namespace, reason=ROLLOUT_PAUSED))

        await wait_for(paused, timeout=10, what="a RolloutPaused Event")
        held = split(kube, namespace, before, new_on=["edge-1", "edge-2", "edge-3"])
        first_half = await wait_for(held, timeout=10, what="edge-1..3 updated, edge-4..6 old")
        await hold_for(still(held), seconds=HOLD_SECONDS, what="the paused rollout standing still")
        assert await deleted_on(kube, namespace) == ["edge-1", "edge-2", "edge-3"]
        gone = set(watcher.gone_at)
        assert gone == {before[n] for n in ("edge-1", "edge-2", "edge-3")}, watcher.timeline()
        told = await events(kube, namespace, reason=ROLLOUT_PAUSED)
        assert len(told) == 1
        assert told[0].message.startswith(f"{PAUSED_ANNOTATION} is set: no pod is deleted")
        assert await events(kube, namespace, reason=ROLLOUT_RESUMED) == []

        await annotate(kube, namespace, {PAUSED_ANNOTATION: None})
        after = await running_everywhere(kube, namespace, NEW, SIX, timeout=40)
        assert {n: after[n] for n in ("edge-1", "edge-2", "edge-3")} == {
            n: first_half[n] for n in ("edge-1", "edge-2", "edge-3")
        }
        assert not set(before.values()) & set(after.values())
        assert await deleted_on(kube, namespace) == SIX
        assert watcher.max_unavailable_since(changed_at) == 1, watcher.timeline()

    recorded = [(e.type, e.reason) for e in await events(kube, namespace)]
    assert recorded.count(("Normal", ROLLOUT_PAUSED)) == 1
    assert recorded.count(("Normal", ROLLOUT_RESUMED)) == 1
    assert sorted(set(recorded)) == [
        ("Normal", ROLLOUT_PAUSED),
        ("Normal", ROLLOUT_RESUMED),
        ("Normal", SUCCESSFUL_DELETE),
    ]


PARTITIONS: list[Any] = [
    pytest.param("2", ["edge-1", "edge-2", "edge-3", "edge-4"], id="2-nodes"),
    # 40% of 6 nodes is 2.4, rounded up: 3 held. Counted over 5 it would be 2: a node between
    # its old pod and its new one must still count.
    pytest.param("40%", ["edge-1", "edge-2", "edge-3"], id="40-percent"),
]


@pytest.mark.parametrize(("partition", "upgraded"), PARTITIONS)
async def test_partition_keeps_the_last_nodes_by_name_on_the_old_pods_until_lowered(
    kube: LabHandle,
    namespace: str,
    controller: ControllerProcess,
    partition: str,
    upgraded: list[str],
) -> None:
    # Room for three deletions at once: the partition alone decides where the rollout stops.
    annotations = advanced_rolling_update("3", **{PARTITION_ANNOTATION: partition})
    before = await seed_six(kube, namespace, annotations)
    await set_image(kube, namespace, NAME, NEW)

    async def upgraded_done() -> bool:
        grouped = await pods_now(kube, namespace)
        return all(updated(grouped.get(node, []), before[node]) for node in upgraded)

    await wait_for(upgraded_done, timeout=30, what=f"{upgraded} updated")
    assert await deleted_on(kube, namespace) == upgraded, f"upgraded past partition {partition}"
    held = split(kube, namespace, before, new_on=upgraded)
    await hold_for(still(held), seconds=HOLD_SECONDS, what="the partition keeping its old pods")
    assert await deleted_on(kube, namespace) == upgraded

    await annotate(kube, namespace, {PARTITION_ANNOTATION: "0"})
    after = await running_everywhere(kube, namespace, NEW, SIX, timeout=30)
    assert not set(before.values()) & set(after.values())
    assert await deleted_on(kube, namespace) == SIX
    assert {e.reason for e in await events(kube, namespace)} == {SUCCESSFUL_DELETE}


async def test_batches_go_one_node_then_half_then_the_rest_each_after_a_soak(
    kube: LabHandle, namespace: str, controller: ControllerProcess
) -> None:
    # Room for every node at once: the batches alone pace the rollout (6 nodes: 1, 3, then 6).
    staging = {BATCHES_ANNOTATION: "1, 50%", BATCH_SOAK_ANNOTATION: "6s"}
    before = await seed_six(kube, namespace, advanced_rolling_update("6", **staging))
    await set_image(kube, namespace, NAME, NEW)

    first = split(kube, namespace, before, new_on=SIX[:1])
    await wait_for(first, timeout=30, what="edge-1 updated alone")
    # The soak: the second batch waits 6 s after edge-1's new pod is available (Ready times
    # are whole seconds, and noticing the update takes a moment: 2 s of it are watched).
    await hold_for(still(first), seconds=2, what="the first batch soaking")
    half = split(kube, namespace, before, new_on=SIX[:3])
    await wait_for(half, timeout=30, what="edge-1 to edge-3 updated")
    await hold_for(still(half), seconds=2, what="the second batch soaking")
    after = await running_everywhere(kube, namespace, NEW, SIX, timeout=30)

    assert not set(before.values()) & set(after.values())
    assert await deleted_on(kube, namespace) == SIX
    started = [e.message for e in await events(kube, namespace, reason=BATCH_STARTED)]
    assert started == [
        "batch 1 of 3 started: up to 1 of the 6 nodes of the rollout run the newest revision",
        "batch 2 of 3 started: up to 3 of the 6 nodes of the rollout run the newest revision, "
        "every Ready node of the batches before done",
        "batch 3 of 3 started: up to 6 of the 6 nodes of the rollout run the newest revision, "
        "every Ready node of the batches before done",
    ]


async def test_node_selector_upgrades_only_the_selected_nodes_and_status_shows_the_rest_held(
    kube: LabHandle, namespace: str, controller: ControllerProcess
) -> None:
    canaries = ["edge-2", "edge-5"]
    selector = f"{CANARY}=true"
    annotations = advanced_rolling_update("1", **{NODE_SELECTOR_ANNOTATION: selector})
    async with node_labels(kube, {node: {CANARY: "true"} for node in canaries}):
        before = await seed_six(kube, namespace, annotations)
        await set_image(kube, namespace, NAME, NEW)

        two = split(kube, namespace, before, new_on=canaries)
        await wait_for(two, timeout=30, what="edge-2 and edge-5 updated, the others old")
        await hold_for(still(two), seconds=HOLD_SECONDS, what="unselected nodes keeping old pods")
        assert await deleted_on(kube, namespace) == canaries

        shown = await edgerollout(kube, "status", NAME, "-n", namespace, "-o", "json")
    assert shown.returncode == 1, shown.stderr  # not complete: four nodes are held
    document = json.loads(shown.stdout)
    assert [(n["node"], n["current"], n["state"], n["held"]) for n in document["nodes"]] == [
        (node, True, "updated", None)
        if node in canaries
        else (node, False, "held: node selector", "node selector")
        for node in SIX
    ]
    assert document["staging"] == [f"node selector {selector}"]
    assert document["paused"] is False
    assert document["wave"] is None
    assert document["complete"] is False


async def test_waves_go_pool_by_pool_past_a_disconnected_node_which_catches_up_on_reconnect(
    kube: LabHandle, namespace: str, controller: ControllerProcess
) -> None:
    # Pools across name order, so that only the waves explain the order of the upgrades.
    pools = {"edge-3": "pool-a", "edge-6": "pool-a", "edge-1": "pool-b", "edge-5": "pool-b"}
    ready_waves = [["edge-6"], ["edge-1", "edge-5"], ["edge-2", "edge-4"]]
    annotations = advanced_rolling_update("2", **{WAVES_ANNOTATION: "pool-a, pool-b, *"})
    async with node_labels(kube, {node: {NODEPOOL_LABEL: pool} for node, pool in pools.items()}):
        before = await seed_six(kube, namespace, annotations)
        await kube.cut_off("edge-3")

        async with watching(kube, namespace) as watcher:
            await set_image(kube, namespace, NAME, NEW)
            others = [node for wave in ready_waves for node in wave]
            five = split(kube, namespace, before, new_on=others)
            after = await wait_for(five, timeout=40, what="all but the cut edge-3 updated")
            await hold_for(still(five), seconds=3, what="edge-3 keeping its old pod")

            # A wave's first deletion comes after every Ready node of the waves before is Ready
            # on the new pod (minReadySeconds is 0: Ready is available).
            early: list[str] = []
            for index, wave in enumerate(ready_waves[:-1]):
                done = max(watcher.ready_at[after[node]] for node in wave)
                later = [node for next_wave in ready_waves[index + 1 :] for node in next_wave]
                early.extend(
                    f"{node} deleted {done - watcher.gone_at[before[node]]:.3f} s before {wave} done"
                    for node in later
                    if watcher.gone_at[before[node]] <= done
                )
            # Two deletions at once at most, beside the cut edge-3 (not counted: not Ready).
            assert watcher.max_unavailable <= 3, watcher.timeline()

        # One WaveStarted per wave of this rollout (none for the pods the DaemonSet started with).
        started = await events(kube, namespace, reason=WAVE_STARTED)
        told = sorted(e.message.split(" started:")[0] for e in started)
        expected = ["wave * (3 of 3)", "wave pool-a (1 of 3)", "wave pool-b (2 of 3)"]
        assert (early, told) == ([], expected), "\n".join(
            [*(f"{e.first_timestamp} {e.message}" for e in started), watcher.timeline()]
        )
        order = {name: i for i, name in enumerate(("pool-a", "pool-b", "*"))}
        by_wave = sorted(started, key=lambda e: order[e.message.split()[1]])
        stamps = [e.first_timestamp for e in by_wave]
        assert stamps == sorted(stamps)
        assert await deleted_on(kube, namespace) == sorted(others)

        await kube.reconnect("edge-3")
        final = await running_everywhere(kube, namespace, NEW, SIX, timeout=30)
    assert {node: final[node] for node in others} == {node: after[node] for node in others}
    assert final["edge-3"] != before["edge-3"]
    assert await deleted_on(kube, namespace) == SIX
    assert len(await events(kube, namespace, reason=WAVE_STARTED)) == 3


async def test_plan_names_the_pods_the_controller_then_deletes_first(
    lab: Lab, kube: LabHandle, namespace: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    # Waves across name order and a partition, with room for two deletions: the plan must
    # follow the same order as the controller to name the same two nodes.
    pools = {"edge-4": "pool-a", "edge-6": "pool-a"}
    annotations = advanced_rolling_update(
        "2", **{WAVES_ANNOTATION: "pool-a, *", PARTITION_ANNOTATION: "2"}
    )
    async with node_labels(kube, {node: {NODEPOOL_LABEL: pool} for node, pool in pools.items()}):
        before = await seed_six(kube, namespace, annotations)
        first_hash = await newest_revision_hash(kube, namespace)
        await set_image(kube, namespace, NAME, NEW)
        second_hash = await revision_after(kube, namespace, first_hash)

        planned = await edgerollout(kube, "plan", NAME, "-n", namespace, "-o", "json")
        assert planned.returncode == 0, planned.stderr
        document = json.loads(planned.stdout)
        assert document["newestRevision"] == second_hash
        assert (document["maxUnavailable"], document["unavailable"]) == (2, 0)
        assert document["wave"] == {"name": "pool-a", "index": 0, "count": 2, "pending": 2}
        rows = {n["node"]: (n["action"], n["why"]) for n in document["nodes"]}
        assert rows == {
            "edge-1": ("held", "wave *"),
            "edge-2": ("held", "wave *"),
            "edge-3": ("held", "partition"),
            "edge-4": ("delete now", "outdated, deleted within max-unavailable"),
            "edge-5": ("held", "partition"),
            "edge-6": ("delete now", "outdated, deleted within max-unavailable"),
        }
        delete_now = {
            n["node"]: n["pods"] for n in document["nodes"] if n["action"] == "delete now"
        }
        assert [e["reason"] for e in document["events"]] == [WAVE_STARTED]

        async with (
            watching(kube, namespace) as watcher,
            controller_for(lab, namespace, tmp_path / "controller.log", request),
        ):

            async def two_deleted() -> list[Any] | None:
                deleted = await events(kube, namespace, reason=SUCCESSFUL_DELETE)
                return deleted if len(deleted) >= 2 else None

            await wait_for(two_deleted, timeout=20, what="the controller's first two deletions")
            first = sorted(watcher.gone_at, key=watcher.gone_at.__getitem__)[:2]
            by_uid = {uid: node for node, uid in before.items()}
            assert sorted(by_uid[uid] for uid in first) == sorted(delete_now), watcher.timeline()
            messages = {e.message for e in await events(kube, namespace, reason=SUCCESSFUL_DELETE)}
            for node, pods in delete_now.items():
                assert f"Deleted pod: {pods[0]} on node {node}: {rows[node][1]}" in messages
            started = await events(kube, namespace, reason=WAVE_STARTED)
            assert [e.message for e in started].count(document["events"][0]["message"]) == 1

            settled = split(
                kube, namespace, before, new_on=["edge-1", "edge-2", "edge-4", "edge-6"]
            )
            await wait_for(settled, timeout=30, what="all but the partition's edge-3/5 updated")
            again = await edgerollout(kube, "plan", NAME, "-n", namespace, "-o", "json")
    assert again.returncode == 0, again.stderr
    assert {n["node"]: (n["action"], n["why"]) for n in json.loads(again.stdout)["nodes"]} == {
        node: ("held", "partition") if node in ("edge-3", "edge-5") else ("updated", "")
        for node in SIX
    }


BAD_VALUES: list[Any] = [
    pytest.param(PARTITION_ANNOTATION, "x", INVALID_PARTITION, id="partition"),
    pytest.param(NODE_SELECTOR_ANNOTATION, "a in (", INVALID_NODE_SELECTOR, id="node-selector"),
    pytest.param(WAVES_ANNOTATION, "pool-a,,b", INVALID_WAVES, id="waves"),
]


@pytest.mark.parametrize(("annotation", "value", "reason"), BAD_VALUES)
async def test_bad_staging_value_warns_once_and_holds_every_node(
    kube: LabHandle,
    namespace: str,
    controller: ControllerProcess,
    annotation: str,
    value: str,
    reason: str,
) -> None:
    before = await seed_six(kube, namespace, advanced_rolling_update("2", **{annotation: value}))
    await set_image(kube, namespace, NAME, NEW)

    async def warned() -> bool:
        return bool(await events(kube, namespace, reason=reason))

    await wait_for(warned, timeout=20, what=f"a {reason} Event")
    untouched = split(kube, namespace, before, new_on=[])
    for poke in range(3):
        # Each change of the DaemonSet is another reconcile; none may warn again or delete.
        await annotate(kube, namespace, {POKE: str(poke)})
        await hold_for(still(untouched), seconds=HOLD_SECONDS / 3, what="every old pod in place")
    recorded = await events(kube, namespace)
    assert [(e.type, e.reason) for e in recorded] == [("Warning", reason)]
    assert f'{annotation} is "{value}"' in recorded[0].message
    assert recorded[0].involved_object.name == NAME
    assert controller.metric("edgerollout_pods_deleted_total", reason="outdated_within_budget") == 0


async def test_ota_with_a_partition_offers_the_upgrade_to_all_but_the_last_two_nodes(
    kube: LabHandle, namespace: str, controller: ControllerProcess
) -> None:
    annotations = {UPDATE_STRATEGY_ANNOTATION: OTA, PARTITION_ANNOTATION: "2"}
    before = await seed_six(kube, namespace, annotations)
    first_hash = await newest_revision_hash(kube, namespace)
    await set_image(kube, namespace, NAME, NEW)
    second_hash = await revision_after(kube, namespace, first_hash)
    wanted = {
        node: ("False", HELD_BY_PARTITION) if node in ("edge-5", "edge-6") else ("True", None)
        for node in SIX
    }

    async def marks() -> dict[str, tuple[str, str | None]] | None:
        grouped = await pods_now(kube, namespace)
        seen = {}
        for node in SIX:
            pods = grouped.get(node, [])
            mark = condition(pods[0], POD_NEED_UPGRADE) if len(pods) == 1 else None
            if mark is None or mark.message != f"controllerrevision: {second_hash}":
                return None
            seen[node] = (str(mark.status), mark.reason or None)
        return seen

    async def marked() -> bool:
        return await marks() == wanted

    await wait_for(marked, timeout=20, what="PodNeedUpgrade on edge-1..4 True, edge-5/6 False")
    untouched = split(kube, namespace, before, new_on=[])

    async def stable() -> bool:
        return await marked() and await untouched() is not None

    await hold_for(stable, seconds=3, what="the marks standing, no pod deleted")
    assert await events(kube, namespace, reason=SUCCESSFUL_DELETE) == []


async def test_a_closed_maintenance_window_holds_every_deletion_until_it_opens(
    kube: LabHandle, namespace: str, controller: ControllerProcess
) -> None:
    # A window opening at a whole minute at least 20 s from now (windows are written in minutes),
    # for an hour: closed while the image changes, then opened by the clock alone.
    now = datetime.now(UTC)
    opens = (now + timedelta(seconds=20 + 60)).replace(second=0, microsecond=0)
    window = f"{opens:%a} {opens:%H:%M}-{opens + timedelta(hours=1):%H:%M}"
    annotations = advanced_rolling_update("2", **{MAINTENANCE_WINDOW_ANNOTATION: window})
    before = await seed_six(kube, namespace, annotations)
    async with watching(kube, namespace) as watcher:
        await set_image(kube, namespace, NAME, NEW)
        held = split(kube, namespace, before, new_on=[])
        await hold_for(still(held), seconds=HOLD_SECONDS, what="the closed window holding")
        assert await deleted_on(kube, namespace) == []
        assert watcher.max_unavailable == 0

        dry_run = await edgerollout(kube, "plan", NAME, "-n", namespace, "-o", "json")
        assert dry_run.returncode == 0, dry_run.stderr
        rows = json.loads(dry_run.stdout)["nodes"]
        assert [(row["node"], row["action"]) for row in rows] == [(n, "held") for n in SIX]
        assert {row["why"] for row in rows} == {
            f"maintenance window closed, opens {opens:%Y-%m-%dT%H:%M:%SZ}"
        }

        after = await running_everywhere(kube, namespace, NEW, SIX, timeout=120)
        first_gone = min(change.at for change in watcher.changes if change.unavailable > 0)
    assert first_gone >= opens.timestamp()
    assert not set(before.values()) & set(after.values())
    assert await deleted_on(kube, namespace) == SIX


async def test_ota_pods_past_their_deadline_are_upgraded_by_the_controller_under_the_budget(
    kube: LabHandle, namespace: str, controller: ControllerProcess
) -> None:
    annotations = {
        UPDATE_STRATEGY_ANNOTATION: OTA,
        MAX_UNAVAILABLE_ANNOTATION: "2",
        OTA_DEADLINE_ANNOTATION: "4s",
        PARTITION_ANNOTATION: "1",
    }
    before = await seed_six(kube, namespace, annotations)
    async with watching(kube, namespace) as watcher:
        await set_image(kube, namespace, NAME, NEW)
        marked_at = time.time()
        upgraded = SIX[:5]
        await wait_for(
            split(kube, namespace, before, new_on=upgraded),
            timeout=60,
            what="edge-1..5 upgraded by the controller, edge-6 held by the partition",
        )
        first_gone = min(change.at for change in watcher.changes if change.unavailable > 0)
        assert watcher.max_unavailable <= 2
    # The mark's lastTransitionTime is in whole seconds: it may read up to 1 s early.
    assert first_gone >= marked_at + 4 - 1
    reasons = [e.reason for e in await events(kube, namespace) if e.reason != WAVE_STARTED]
    assert sorted(reasons) == ["OTADeadlineUpgrade"] * 5


async def test_a_crash_looping_revision_is_broken_not_offline_and_stops_at_the_budget(
    kube: LabHandle, namespace: str, controller: ControllerProcess
) -> None:
    before = await seed_six(kube, namespace, advanced_rolling_update("2"))
    await kube.cut_off("edge-6")
    await set_image(kube, namespace, NAME, CRASHLOOP_IMAGE)

    async def two_broken() -> dict[str, Any] | None:
        status = await edgerollout(kube, "status", NAME, "-n", namespace, "-o", "json")
        document = json.loads(status.stdout)
        broken = [row["node"] for row in document["nodes"] if row["broken"]]
        return document if broken == ["edge-1", "edge-2"] else None

    document = await wait_for(two_broken, timeout=30, what="edge-1 and edge-2 broken")
    states = {row["node"]: row["state"] for row in document["nodes"]}
    assert states == {
        "edge-1": "broken: CrashLoopBackOff",
        "edge-2": "broken: CrashLoopBackOff",
        "edge-3": "old",
        "edge-4": "old",
        "edge-5": "old",
        "edge-6": "waiting: node NotReady",
    }

    # Broken nodes are unavailable: with 2 of them the budget of 2 is spent, nothing more goes.
    async def rest_untouched() -> bool:
        grouped = await pods_now(kube, namespace)
        return all(kept(grouped.get(node, []), before[node]) for node in SIX[2:])

    await hold_for(rest_untouched, seconds=HOLD_SECONDS, what="no deletion past the budget")
    assert await deleted_on(kube, namespace) == ["edge-1", "edge-2"]
    dry_run = await edgerollout(kube, "plan", NAME, "-n", namespace, "-o", "json")
    actions = {
        row["node"]: (row["action"], row["why"]) for row in json.loads(dry_run.stdout)["nodes"]
    }
    assert actions["edge-1"][0] == "broken"
    assert actions["edge-1"][1].startswith("CrashLoopBackOff since ")
    assert actions["edge-3"] == ("waiting for budget", "2 of 2 unavailable")
    assert actions["edge-6"] == ("skipped", "node Unknown")

    # The fix: a working image; the broken pods are outdated and unavailable, replaced at once.
    await set_image(kube, namespace, NAME, NEW)
    await kube.connect("edge-6")
    await running_everywhere(kube, namespace, NEW, SIX, timeout=90)


async def test_past_the_failure_budget_the_rollout_pauses_and_a_fix_and_resume_finish_it(
    kube: LabHandle, namespace: str, controller: ControllerProcess
) -> None:
    annotations = advanced_rolling_update("2", **{MAX_FAILED_ANNOTATION: "1"})
    before = await seed_six(kube, namespace, annotations)
    await kube.cut_off("edge-6")
    await set_image(kube, namespace, NAME, CRASHLOOP_IMAGE)

    async def failed() -> list[Any] | None:
        return await events(kube, namespace, reason=ROLLOUT_FAILED) or None

    (told,) = await wait_for(failed, timeout=40, what="a RolloutFailed Event")
    assert told.type == "Warning"
    assert told.message.startswith(
        f"2 nodes are broken on revision {await newest_revision_hash(kube, namespace)}, "
        f'more than {MAX_FAILED_ANNOTATION} "1" tolerates (1): edge-1: CrashLoopBackOff since '
    )
    assert "; edge-2: CrashLoopBackOff since " in told.message
    assert "edge-6" not in told.message  # offline, not broken

    async def paused_by_the_controller() -> bool:
        current = await kube.apps.read_namespaced_daemon_set(NAME, namespace)
        return bool(current.metadata.annotations.get(PAUSED_ANNOTATION) == "true")

    await wait_for(paused_by_the_controller, timeout=10, what="the DaemonSet paused")

    async def rest_untouched() -> bool:
        grouped = await pods_now(kube, namespace)
        return all(kept(grouped.get(node, []), before[node]) for node in SIX[2:])

    await hold_for(rest_untouched, seconds=HOLD_SECONDS, what="no deletion past the failure")
    assert await deleted_on(kube, namespace) == ["edge-1", "edge-2"]
    status = json.loads(
        (await edgerollout(kube, "status", NAME, "-n", namespace, "-o", "json")).stdout
    )
    assert status["paused"] is True
    assert {row["node"]: row["state"] for row in status["nodes"]} == {
        "edge-1": "broken: CrashLoopBackOff",
        "edge-2": "broken: CrashLoopBackOff",
        "edge-3": "held: paused",
        "edge-4": "held: paused",
        "edge-5": "held: paused",
        "edge-6": "waiting: node NotReady",
    }

    # The fix, then the resume: the broken pods are outdated now, and replaced first.
    await set_image(kube, namespace, NAME, NEW)
    await hold_for(rest_untouched, seconds=2, what="nothing deleted before the resume")
    resumed = await edgerollout(kube, "resume", NAME, "-n", namespace)
    assert resumed.returncode == 0, resumed.stderr
    await kube.connect("edge-6")
    await running_everywhere(kube, namespace, NEW, SIX, timeout=90)
    assert len(await events(kube, namespace, reason=ROLLOUT_FAILED)) == 1
    recorded = [e.reason for e in await events(kube, namespace) if e.type == "Warning"]
    assert recorded == [ROLLOUT_FAILED]


async def test_a_failure_budget_judged_on_a_sample_stops_where_a_fleet_percentage_would_not(
    kube: LabHandle, namespace: str, controller: ControllerProcess
) -> None:
    # 50 % of six nodes tolerates 3 broken; judged on a sample of 4, the first 2 tried and
    # broken already exceed the 1 tolerated before the sample (design §13.4).
    sampled = {MAX_FAILED_ANNOTATION: "50%", MIN_SAMPLE_ANNOTATION: "4"}
    before = await seed_six(kube, namespace, advanced_rolling_update("2", **sampled))
    await set_image(kube, namespace, NAME, CRASHLOOP_IMAGE)

    async def failed() -> list[Any] | None:
        return await events(kube, namespace, reason=ROLLOUT_FAILED) or None

    (told,) = await wait_for(failed, timeout=40, what="a RolloutFailed Event")
    assert told.message.startswith(
        f"2 nodes are broken on revision {await newest_revision_hash(kube, namespace)}, more "
        f'than {MAX_FAILED_BEFORE_SAMPLE_ANNOTATION} "1" before {MIN_SAMPLE_ANNOTATION} 4 nodes '
        "tried it (2 so far) tolerates (1): edge-1: CrashLoopBackOff since "
    )

    async def rest_untouched() -> bool:
        grouped = await pods_now(kube, namespace)
        return all(kept(grouped.get(node, []), before[node]) for node in SIX[2:])

    await hold_for(rest_untouched, seconds=HOLD_SECONDS / 2, what="no deletion past the failure")
    assert await deleted_on(kube, namespace) == ["edge-1", "edge-2"]
    listed = json.loads((await edgerollout(kube, "list", "-n", namespace, "-o", "json")).stdout)
    assert [item["state"]["reason"] for item in listed["items"]] == ["RolloutFailed"]


async def test_ota_nodes_that_upgrade_into_a_failing_pod_trip_the_failure_budget(
    kube: LabHandle, namespace: str, controller: ControllerProcess
) -> None:
    annotations = {UPDATE_STRATEGY_ANNOTATION: OTA, MAX_FAILED_ANNOTATION: "1"}
    before = await seed_six(kube, namespace, annotations)
    await set_image(kube, namespace, NAME, CRASHLOOP_IMAGE)

    async def offered() -> bool:
        grouped = await pods_now(kube, namespace)
        marks = [condition(grouped[node][0], POD_NEED_UPGRADE) for node in SIX]
        return all(mark is not None and str(mark.status) == "True" for mark in marks)

    await wait_for(offered, timeout=20, what="the upgrade offered on every node")
    # Two nodes take the upgrade, as their agents would: their pods are deleted and come back
    # crash-looping.
    grouped = await pods_now(kube, namespace)
    for node in ("edge-1", "edge-2"):
        await kube.core.delete_namespaced_pod(grouped[node][0].metadata.name, namespace)

    async def failed() -> list[Any] | None:
        return await events(kube, namespace, reason=ROLLOUT_FAILED) or None

    (told,) = await wait_for(failed, timeout=40, what="a RolloutFailed Event")
    assert told.message.startswith(
        f"2 nodes are broken on revision {await newest_revision_hash(kube, namespace)}, "
        f'more than {MAX_FAILED_ANNOTATION} "1" tolerates (1): edge-1: CrashLoopBackOff since '
    )
    current = await kube.apps.read_namespaced_daemon_set(NAME, namespace)
    assert current.metadata.annotations[PAUSED_ANNOTATION] == "true"
    status = json.loads(
        (await edgerollout(kube, "status", NAME, "-n", namespace, "-o", "json")).stdout
    )
    assert [row["broken"] for row in status["nodes"]] == [
        "CrashLoopBackOff",
        "CrashLoopBackOff",
        None,
        None,
        None,
        None,
    ]
    assert status["paused"] is True

    async def rest_kept() -> bool:
        grouped = await pods_now(kube, namespace)
        return all(kept(grouped[node], before[node]) for node in SIX[2:])

    await hold_for(rest_kept, seconds=3, what="the other nodes keeping their pods")
