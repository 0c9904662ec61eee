"""Scenario 1 (every node Ready, max-unavailable 10%: edgerollout's AdvancedRollingUpdate against a
native RollingUpdate with maxUnavailable 10%, and with `--peer openyurt` against OpenYurt's own
AdvancedRollingUpdate) and scenario 3 (what each rollout cost the API server), measured in the same
lab, one after the other, with the same node count.

Every DaemonSet exists from the start, each in a namespace of its own, so each rollout runs beside
the same idle neighbours.
"""

from __future__ import annotations

import asyncio
import math
import os
import time
from datetime import UTC, datetime
from typing import Any

from bench import api_load, metrics, peer, workload
from bench.controller import Controller
from bench.machine import cpu_seconds, cpu_times, load_now
from bench.rollout import Rollout, change_image, lab_wave, wait_running
from bench.session import Session
from bench.watch import JSON
from edgerollout_lab.cluster import ADMIN_USER
from edgerollout_lab.control_plane import audit_logs

NATIVE, OURS, PEER = "native", "edgerollout", peer.NAME
# The budget of both DaemonSets, in percent of the nodes (`--max-unavailable`).
MAX_UNAVAILABLE_PERCENT = 10
SETTLE_SECONDS = 2.0
# Before each rollout the lab must be back to (about) its idle CPU: a rollout started while the
# lab still works through the previous one's aftermath is slowed by it, and that would fall on
# whichever controller happens to go second.
QUIET_FACTOR = 1.5
QUIET_LIMIT_SECONDS = 60.0
# How long the idle lab is watched: its heartbeats and Lease renewals cost CPU all the time.
IDLE_SECONDS = 10.0


def budget(nodes: int, percent: int = MAX_UNAVAILABLE_PERCENT) -> int:
    return max(1, math.ceil(nodes * percent / 100))


async def quiet(session: Session, *, idle: float) -> tuple[float, float]:
    """Wait until the lab's programs spend at most QUIET_FACTOR times `idle` CPU seconds per
    second over one second (or QUIET_LIMIT_SECONDS have passed); returns the seconds waited and
    the last second's rate."""
    started = time.monotonic()
    before = session.lab_usage()
    while True:
        await asyncio.sleep(1.0)
        after = session.lab_usage()
        rate = sum(before.since_per_second(after).values())
        before = after
        waited = time.monotonic() - started
        if rate <= idle * QUIET_FACTOR or waited >= QUIET_LIMIT_SECONDS:
            return round(waited, 1), round(rate, 2)


async def _measured(
    session: Session,
    namespace: str,
    name: str,
    image: str,
    *,
    nodes: int,
    controller: Controller | None,
    timeout: float,
    idle: float,
) -> dict[str, Any]:
    """One rollout with everything it cost: seconds, curve, API requests, CPU of each process."""
    waited, rate = await quiet(session, idle=idle)
    session.say(f"rolling: lab quiet after {waited:.0f} s ({rate:.2f} CPU s/s)")
    rollout = await Rollout.watching(session, namespace, image)
    try:
        result = await _timed(session, rollout, namespace, name, nodes, controller, timeout)
    finally:
        await rollout.stop()
    result["quiet_wait_seconds"] = waited
    return result


async def _timed(
    session: Session,
    rollout: Rollout,
    namespace: str,
    name: str,
    nodes: int,
    controller: Controller | None,
    timeout: float,
) -> dict[str, Any]:
    await asyncio.sleep(SETTLE_SECONDS)
    own = os.getpid()
    api_before = session.apiserver_samples()
    kcm_before = session.controller_manager.read()
    ctl_before = controller.samples() if controller else None
    ctl_cpu_before = controller.cpu_seconds() if controller else 0.0
    lab_before = session.lab_usage()
    bench_before = cpu_seconds(own)
    machine_before = cpu_times()
    since = datetime.now(UTC)
    load = load_now()
    result = await change_image(session, rollout, namespace, name, nodes=nodes, timeout=timeout)
    busy = cpu_times().busy_cores_since(machine_before)
    lab_after = session.lab_usage()
    bench_cpu = cpu_seconds(own) - bench_before
    ctl_cpu = controller.cpu_seconds() - ctl_cpu_before if controller else None
    api_delta = metrics.delta(session.apiserver_samples(), api_before)
    kcm_delta = metrics.delta(session.controller_manager.read(), kcm_before)
    result.update(
        daemonset_controller=api_load.daemonset_controller(kcm_delta),
        load_average_1m=load,
        apiserver=api_load.apiserver_requests(api_delta),
        audit_pod_deletes_by_user=api_load.audit_deletes(
            audit_logs(session.folder), namespace, since
        ),
        lab_cpu_seconds=lab_after.since(lab_before),
        bench_cpu_seconds=round(bench_cpu, 2),
        busy_cores=round(busy, 2),
    )
    if controller is not None and ctl_before is not None:
        result["controller"] = api_load.controller_requests(
            metrics.delta(controller.samples(), ctl_before)
        )
        result["controller_cpu_seconds"] = round(ctl_cpu or 0.0, 2)
        result["controller_rss_mb"] = controller.rss_mb()
    return result


async def prepare(
    session: Session,
    *,
    nodes: int,
    timeout: float,
    with_peer: bool = False,
    percent: int = MAX_UNAVAILABLE_PERCENT,
) -> None:
    """The DaemonSets of the comparison (the peer's too if asked), running the first image on
    every node, each with max-unavailable `percent` %."""
    limit = f"{percent}%"
    api = session.api
    namespaces = [workload.NATIVE_NAMESPACE, workload.OURS_NAMESPACE]
    if with_peer:
        namespaces.append(peer.NAMESPACE)
    for namespace in namespaces:
        await workload.create_namespace(api, namespace)
    image = workload.IMAGES[0]
    await workload.create(
        api,
        workload.NATIVE_NAMESPACE,
        workload.daemonset(NATIVE, image=image, strategy=workload.rolling_update(limit)),
    )
    await workload.create(
        api,
        workload.OURS_NAMESPACE,
        workload.advanced_rolling_update(OURS, image=image, max_unavailable=limit),
    )
    if with_peer:
        await workload.create(
            api,
            peer.NAMESPACE,
            workload.advanced_rolling_update(PEER, image=image, max_unavailable=limit),
        )
    for namespace in namespaces:
        await wait_running(session, namespace, image, nodes, timeout=timeout)


def order_of_round(index: int, *, with_peer: bool) -> tuple[str, ...]:
    """Who rolls out first in round `index` (from 0): native and edgerollout alternate; with the
    peer the three take turns (each first, second and third once in any three rounds)."""
    if not with_peer:
        return (NATIVE, OURS) if index % 2 == 0 else (OURS, NATIVE)
    three = (NATIVE, OURS, PEER)
    shift = index % 3
    return three[shift:] + three[:shift]


NAMESPACES = {
    NATIVE: workload.NATIVE_NAMESPACE,
    OURS: workload.OURS_NAMESPACE,
    PEER: peer.NAMESPACE,
}
TITLES = {NATIVE: "native RollingUpdate", OURS: "edgerollout", PEER: "OpenYurt's yurt-manager"}


async def run(
    session: Session,
    controller: Controller,
    *,
    nodes: int,
    rounds: int = 1,
    timeout: float,
    with_peer: bool = False,
    percent: int = MAX_UNAVAILABLE_PERCENT,
) -> dict[str, dict[str, Any]]:
    """Scenarios 1 and 3; returns {"rolling": ..., "api_load": ...}.

    Each round rolls every DaemonSet to a new image, one after the other; the order alternates
    (native first in odd rounds, edgerollout first in even ones; with the peer the three take
    turns), so that whatever the lab does differently for a later rollout of a round (its state
    after the earlier ones, a neighbour still settling) falls on all alike. The figures are the
    means over the rounds. The peer runs only during its own rollouts (see bench/peer.py)."""
    session.say(f"rolling: one lab wave ({budget(nodes, percent)} pods deleted by hand)")
    wave = await lab_wave(
        session,
        workload.OURS_NAMESPACE,
        workload.IMAGES[0],
        pods=budget(nodes, percent),
        timeout=timeout,
    )
    idle_before = session.lab_usage()
    await asyncio.sleep(IDLE_SECONDS)
    idle = idle_before.since_per_second(session.lab_usage())
    played: list[dict[str, Any]] = []
    for index in range(rounds):
        image = workload.IMAGES[1] if index == 0 else workload.image(index)
        order = order_of_round(index, with_peer=with_peer)
        measured: dict[str, Any] = {"first": order[0]}
        for name in order:
            session.say(f"rolling: round {index + 1} of {rounds}, {TITLES[name]} on {nodes} nodes")
            args = (session, NAMESPACES[name], name, image)
            common: dict[str, Any] = {
                "nodes": nodes,
                "timeout": timeout,
                "idle": sum(idle.values()),
            }
            if name == PEER:
                async with peer.running(session) as handle:
                    measured[name] = await _measured(*args, controller=handle, **common)
                measured[name]["peer_ready_seconds"] = round(handle.ready_seconds, 2)
            else:
                mine = controller if name == OURS else None
                measured[name] = await _measured(*args, controller=mine, **common)
            session.say(f"rolling: {name} took {measured[name]['seconds']:.1f} s")
        measured["ratio"] = round(measured[OURS]["seconds"] / measured[NATIVE]["seconds"], 3)
        if with_peer:
            measured["peer_ratio"] = round(measured[OURS]["seconds"] / measured[PEER]["seconds"], 3)
        played.append(measured)
    native = mean_of([measured[NATIVE] for measured in played])
    ours = mean_of([measured[OURS] for measured in played])
    waves = math.ceil(nodes / budget(nodes, percent))
    rolling = {
        "nodes": nodes,
        "max_unavailable": f"{percent}%",
        "budget": budget(nodes, percent),
        "native": native,
        "edgerollout": ours,
        "ratio": round(ours["seconds"] / native["seconds"], 3),
        "rounds": [
            {
                "first": measured["first"],
                "native_seconds": measured[NATIVE]["seconds"],
                "edgerollout_seconds": measured[OURS]["seconds"],
                "ratio": measured["ratio"],
                "native_pod_watches_closed": _watches_closed(measured[NATIVE]),
                "edgerollout_pod_watches_closed": _watches_closed(measured[OURS]),
            }
            for measured in played
        ],
        "target_ratio": 1.0,
        "aim_ratio": 0.8,
        "lab": {
            # Waves overlap in both rollouts (a node's slot is reused as soon as its pod is
            # Ready), so this is the lab's latency for one batch, not a floor for the rollout.
            "wave_seconds": wave,
            "waves": waves,
            "idle_cpu_seconds_per_second": idle,
            "cores": os.cpu_count(),
            "native_cpu_seconds": round(sum(native["lab_cpu_seconds"].values()), 2),
            "edgerollout_cpu_seconds": round(sum(ours["lab_cpu_seconds"].values()), 2),
        },
    }
    requests = ours["controller"]["by_method"]
    api = {
        "nodes": nodes,
        "controller_requests_by_method": requests,
        "deletes": requests.get("DELETE", 0),
        "deletes_per_pod": round(requests.get("DELETE", 0) / nodes, 4),
        "target_deletes_per_pod": 1.05,
        "pods_deleted_metric": ours["controller"]["pods_deleted"],
        # Lists and watch (re)opens are GETs; with every watch held open a rollout needs none.
        "controller_gets_during_rollout": requests.get("GET", 0),
        "apiserver_lists_during_rollout": ours["apiserver"]["all_by_verb"].get("LIST", 0),
        "apiserver_pods_by_verb": ours["apiserver"]["pods_by_verb"],
        "native_apiserver_pods_by_verb": native["apiserver"]["pods_by_verb"],
        "audit_pod_deletes_by_user": ours["audit_pod_deletes_by_user"],
        "native_audit_pod_deletes_by_user": native["audit_pod_deletes_by_user"],
        "controller_writes_per_pod": round(
            sum(n for method, n in requests.items() if method != "GET") / nodes, 4
        ),
    }
    if with_peer:
        _add_peer(rolling, api, mean_of([measured[PEER] for measured in played]), played)
    return {"rolling": rolling, "api_load": api}


def _add_peer(
    rolling: dict[str, Any], api: dict[str, Any], theirs: dict[str, Any], played: list[JSON]
) -> None:
    """The peer's rollouts beside edgerollout's: its mean record, each round, and its API load.

    Deletions per pod come from the audit log, by each controller's user (edgerollout's is the
    lab's admin, whose kubeconfig it is given; KWOK deletes every pod a second time, once its
    graceful termination is over): the peer's metrics count its token requests among its writes,
    and name no pods."""
    nodes = rolling["nodes"]
    rolling[PEER] = theirs
    rolling["peer_ratio"] = round(rolling[OURS]["seconds"] / theirs["seconds"], 3)
    rolling["lab"]["openyurt_cpu_seconds"] = round(sum(theirs["lab_cpu_seconds"].values()), 2)
    for record, measured in zip(rolling["rounds"], played, strict=True):
        record["order"] = [name for name in measured if name in NAMESPACES]
        record["openyurt_seconds"] = measured[PEER]["seconds"]
        record["peer_ratio"] = measured["peer_ratio"]
    deletes = (theirs.get("audit_pod_deletes_by_user") or {}).get(peer.USER, 0)
    ours_deletes = (rolling[OURS].get("audit_pod_deletes_by_user") or {}).get(ADMIN_USER, 0)
    api.update(
        audited_deletes_per_pod=round(ours_deletes / nodes, 4),
        openyurt_deletes_per_pod=round(deletes / nodes, 4),
        openyurt_controller_requests_by_method=theirs["controller"]["by_method"],
        openyurt_apiserver_pods_by_verb=theirs["apiserver"]["pods_by_verb"],
        openyurt_audit_pod_deletes_by_user=theirs["audit_pod_deletes_by_user"],
    )


def _watches_closed(rollout: dict[str, Any]) -> int:
    return int(rollout["apiserver"].get("pod_watches_closed", 0))


def mean_of(rollouts: list[dict[str, Any]]) -> dict[str, Any]:
    """One rollout's record from several: every number the mean over them (a count missing from
    one of them counts 0 there), curves and other values those of the first."""
    first = rollouts[0]
    merged: dict[str, Any] = {}
    for key, value in first.items():
        if isinstance(value, bool) or key == "curve":
            merged[key] = value
        elif isinstance(value, int | float):
            merged[key] = _mean([float(r.get(key) or 0.0) for r in rollouts])
        elif isinstance(value, dict):
            keys = dict.fromkeys(k for r in rollouts for k in r.get(key, {}))
            merged[key] = mean_of([{k: r.get(key, {}).get(k, 0) for k in keys} for r in rollouts])
        else:
            merged[key] = value
    return merged


def _mean(values: list[float]) -> float:
    mean = sum(values) / len(values)
    return int(mean) if mean.is_integer() else round(mean, 3)
