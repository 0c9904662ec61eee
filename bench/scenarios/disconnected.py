"""Scenario 2: a fifth of the nodes disconnected during a rollout.

The native RollingUpdate is expected to stall (the disconnected nodes' pods are deleted, never
confirmed, and hold the budget): it gets a fixed time and its share of updated nodes is reported.
edgerollout is timed until every connected node is updated, then the disconnected nodes are
reconnected and it is timed again from the moment the last of them is Ready until all are updated.

With `--peer openyurt`, OpenYurt's yurt-manager then plays edgerollout's part on a DaemonSet of its
own, with the same nodes cut a second time: the peer acts on every annotated DaemonSet and must not
run while edgerollout's still has nodes to update (bench/peer.py), so it gets a cut of its own once
edgerollout's rollout is over.
"""

from __future__ import annotations

import asyncio
import math
import time
from typing import Any

from bench import metrics, peer, workload
from bench.machine import load_now
from bench.rollout import Rollout, thin
from bench.scenarios.rolling import NATIVE, OURS, PEER
from bench.session import Session
from bench.watch import ObjectWatch, live, not_ready_among, pod_image, ready_among
from edgerollout.domain.vocabulary import ON_DELETE
from edgerollout.kube.api import DAEMONSETS, NODES
from edgerollout_lab.api import CUT_LINKS_POLICY

SHARE = 0.2
TARGET_RATIO = 1.1
TARGET_AFTER_READY_SECONDS = 10.0


async def run(
    session: Session,
    *,
    nodes: int,
    rolling_seconds: float | None,
    wave_seconds: float | None,
    native_seconds: float,
    timeout: float,
) -> dict[str, Any]:
    names = session.node_names
    cut = names[-math.ceil(nodes * SHARE) :]
    connected = nodes - len(cut)
    image = workload.IMAGES[2]
    node_watch = ObjectWatch(session.api, NODES)
    await node_watch.start()
    ours = native = None
    try:
        refused_before = await asyncio.to_thread(session.apiserver_samples)
        not_ready_seconds = await _cut(
            session, node_watch, cut, f"disconnected: cutting {len(cut)} of {nodes} nodes"
        )
        back = node_watch.track(ready_among(set(cut)))

        ours = await Rollout.watching(session, workload.OURS_NAMESPACE, image)
        # Old pods not yet deleted: what edgerollout itself still has to do (the replacements
        # are then the lab's work: the native controller, the scheduler and KWOK).
        old_left = ours.watch.track(
            lambda pod: pod["metadata"]["name"] if live(pod) and pod_image(pod) != image else None
        )
        load = load_now()
        start = time.monotonic()
        await workload.set_image(session.api, workload.OURS_NAMESPACE, OURS, image)
        ours_connected_done = await ours.progress.reach(
            connected, timeout=timeout, what="edgerollout: connected nodes updated"
        )
        ours_connected = round(ours_connected_done - start, 3)
        session.say(
            f"disconnected: edgerollout updated {connected} nodes in {ours_connected:.1f} s"
        )

        native = await Rollout.watching(session, workload.NATIVE_NAMESPACE, image)
        session.say(f"disconnected: native RollingUpdate, watched for {native_seconds:.0f} s")
        native_start = time.monotonic()
        await workload.set_image(session.api, workload.NATIVE_NAMESPACE, NATIVE, image)
        await asyncio.sleep(native_seconds)
        native_updated = native.progress.value
        native_curve = native.progress.since(native_start)
        # The native rollout stops here, so that its pods do not load the lab while edgerollout
        # catches up; pods it already deleted are still replaced (OnDelete recreates them).
        await session.api.patch(
            DAEMONSETS,
            NATIVE,
            {"spec": {"updateStrategy": {"type": ON_DELETE, "rollingUpdate": None}}},
            namespace=workload.NATIVE_NAMESPACE,
        )
        session.say(f"disconnected: native updated {native_updated} of {nodes} nodes")

        session.say(f"disconnected: reconnecting {len(cut)} nodes")
        refused = kwok_writes_refused(
            metrics.delta(await asyncio.to_thread(session.apiserver_samples), refused_before)
        )
        connect_at = time.monotonic()
        await session.connect(cut)
        # A cut node seen Ready before the reconnection (heartbeats through a link that is down)
        # would let any controller act on it: recorded, it explains a straggler.
        seen_ready_while_cut = max(
            (value for at, value in back.changes if at < connect_at), default=0
        )
        ready_at = await back.reach(len(cut), timeout=timeout, what="reconnected nodes Ready")
        deleted_at = await old_left.fall(
            0, after=connect_at, timeout=timeout, what="edgerollout: old pods left"
        )
        done_at = await ours.progress.reach(
            nodes, timeout=timeout, what="edgerollout: every node updated after reconnect"
        )
        ours_curve = ours.progress.since(start)
    finally:
        for rollout in (ours, native):
            if rollout is not None:
                await rollout.stop()
        await node_watch.stop()
    after_ready = round(done_at - ready_at, 3)
    session.say(f"disconnected: all {nodes} updated {after_ready:.1f} s after the last was Ready")
    result: dict[str, Any] = {
        "nodes": nodes,
        "disconnected": len(cut),
        "not_ready_after_cut_seconds": not_ready_seconds,
        "load_average_1m": load,
        "native": {
            "watched_seconds": native_seconds,
            "updated": native_updated,
            "share_updated": round(native_updated / nodes, 4),
            "share_of_connected_updated": round(native_updated / connected, 4),
            "curve": thin(native_curve),
        },
        "edgerollout": {
            "connected_seconds": ours_connected,
            "reconnect_to_ready_seconds": round(ready_at - connect_at, 3),
            "cut_nodes_seen_ready_while_cut": seen_ready_while_cut,
            # Writes KWOK attempted for cut nodes during the cut, refused by the lab's policy.
            "kwok_writes_refused_while_cut": refused,
            "after_ready_seconds": after_ready,
            # Negative when the last old pod was deleted before the last node turned Ready.
            "old_pods_deleted_after_ready_seconds": round(deleted_at - ready_at, 3),
            "curve": thin(ours_curve),
            # The connected nodes' replacements (bench/simulated.py simulates the rollout with
            # them), and the reconnected nodes', their first deletion counted from Ready.
            "connected_replacements": ours.stages.summary(start, only=set(names) - set(cut)),
            "reconnected_replacements": ours.stages.summary(ready_at, only=set(cut)),
            "reconnected_at": round(connect_at - start, 3),
            "ready_at": round(ready_at - start, 3),
        },
        "target_connected_ratio": TARGET_RATIO,
        "target_after_ready_seconds": TARGET_AFTER_READY_SECONDS,
    }
    if rolling_seconds:
        result["edgerollout"]["connected_ratio_to_rolling"] = round(
            ours_connected / rolling_seconds, 3
        )
    if wave_seconds is not None:
        result["target_after_ready_seconds_with_wave"] = round(
            TARGET_AFTER_READY_SECONDS + wave_seconds, 2
        )
    return result


def kwok_writes_refused(delta: metrics.Samples) -> int:
    """The writes the lab's cut-links admission policy refused in this interval."""
    return int(
        metrics.total(
            delta,
            "apiserver_validating_admission_policy_check_total",
            policy=CUT_LINKS_POLICY,
            enforcement_action="deny",
        )
    )


async def _cut(session: Session, node_watch: ObjectWatch, cut: list[str], saying: str) -> float:
    """Cut the links of `cut` and wait until every one of them is NotReady; the seconds it took."""
    down = node_watch.track(not_ready_among(set(cut)))
    session.say(saying)
    cut_at = time.monotonic()
    await session.disconnect(cut)
    await down.reach(
        len(cut),
        timeout=session.lab.node_monitor_grace_seconds + 60,
        what="disconnected nodes NotReady",
    )
    return round(time.monotonic() - cut_at, 1)


async def run_peer(session: Session, *, nodes: int, timeout: float) -> dict[str, Any]:
    """OpenYurt's part of scenario 2: the same nodes cut, its DaemonSet changed, timed until every
    connected node is updated; the nodes reconnected, timed from the last one Ready until all are
    updated. yurt-manager runs from just after the cut until the end."""
    names = session.node_names
    cut = names[-math.ceil(nodes * SHARE) :]
    connected = nodes - len(cut)
    image = workload.IMAGES[2]
    node_watch = ObjectWatch(session.api, NODES)
    await node_watch.start()
    theirs = None
    try:
        not_ready_seconds = await _cut(
            session,
            node_watch,
            cut,
            f"disconnected: OpenYurt: cutting {len(cut)} of {nodes} nodes again",
        )
        back = node_watch.track(ready_among(set(cut)))
        async with peer.running(session) as handle:
            theirs = await Rollout.watching(session, peer.NAMESPACE, image)
            load = load_now()
            start = time.monotonic()
            await workload.set_image(session.api, peer.NAMESPACE, PEER, image)
            connected_done = await theirs.progress.reach(
                connected, timeout=timeout, what="OpenYurt: connected nodes updated"
            )
            connected_seconds = round(connected_done - start, 3)
            session.say(
                f"disconnected: OpenYurt updated {connected} nodes in {connected_seconds:.1f} s"
            )
            connect_at = time.monotonic()
            await session.connect(cut)
            ready_at = await back.reach(len(cut), timeout=timeout, what="reconnected nodes Ready")
            done_at = await theirs.progress.reach(
                nodes, timeout=timeout, what="OpenYurt: every node updated after reconnect"
            )
            curve = theirs.progress.since(start)
    finally:
        if theirs is not None:
            await theirs.stop()
        await node_watch.stop()
    after_ready = round(done_at - ready_at, 3)
    session.say(f"disconnected: OpenYurt: all {nodes} updated {after_ready:.1f} s after Ready")
    return {
        "not_ready_after_cut_seconds": not_ready_seconds,
        "load_average_1m": load,
        "peer_ready_seconds": round(handle.ready_seconds, 2),
        "connected_seconds": connected_seconds,
        "reconnect_to_ready_seconds": round(ready_at - connect_at, 3),
        "after_ready_seconds": after_ready,
        "curve": thin(curve),
        "reconnected_replacements": theirs.stages.summary(ready_at, only=set(cut)),
        "reconnected_at": round(connect_at - start, 3),
        "ready_at": round(ready_at - start, 3),
    }
