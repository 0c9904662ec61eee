"""Scenario 1 (every node Ready, max-unavailable 10%: edgerollout's AdvancedRollingUpdate against a
native RollingUpdate with maxUnavailable 10%) and scenario 3 (what edgerollout's rollout cost the
API server), measured in the same lab, one after the other, with the same node count.

Both DaemonSets exist from the start, so each rollout runs beside the same idle neighbour.
"""

from __future__ import annotations

import asyncio
import math
import os
import time
from datetime import UTC, datetime
from typing import Any

from bench import api_load, metrics, workload
from bench.controller import Controller
from bench.machine import busy_cpu_seconds, cpu_seconds, load_now
from bench.rollout import Rollout, change_image, lab_wave, wait_running
from bench.session import Session
from edgerollout_lab.control_plane import audit_log_path

NATIVE, OURS = "native", "edgerollout"
MAX_UNAVAILABLE = "10%"
SETTLE_SECONDS = 2.0
# Before each rollout the lab must be back to (about) its idle CPU: a rollout started while the
# lab still works through the previous one's aftermath is slowed by it, and that would fall on
# whichever controller happens to go second.
QUIET_FACTOR = 1.5
QUIET_LIMIT_SECONDS = 60.0
# How long the idle lab is watched: its heartbeats and Lease renewals cost CPU all the time.
IDLE_SECONDS = 10.0


def budget(nodes: int) -> int:
    return max(1, math.ceil(nodes * 0.10))


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
    busy_before, busy_since = busy_cpu_seconds(), time.monotonic()
    since = datetime.now(UTC)
    load = load_now()
    result = await change_image(session, rollout, namespace, name, nodes=nodes, timeout=timeout)
    busy = (busy_cpu_seconds() - busy_before) / (time.monotonic() - busy_since)
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
            audit_log_path(session.folder), namespace, since
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


async def prepare(session: Session, *, nodes: int, timeout: float) -> None:
    """The two DaemonSets of the comparison, running the first image on every node."""
    api = session.api
    for namespace in (workload.NATIVE_NAMESPACE, workload.OURS_NAMESPACE):
        await workload.create_namespace(api, namespace)
    image = workload.IMAGES[0]
    await workload.create(
        api,
        workload.NATIVE_NAMESPACE,
        workload.daemonset(NATIVE, image=image, strategy=workload.rolling_update(MAX_UNAVAILABLE)),
    )
    await workload.create(
        api,
        workload.OURS_NAMESPACE,
        workload.advanced_rolling_update(OURS, image=image, max_unavailable=MAX_UNAVAILABLE),
    )
    await wait_running(session, workload.NATIVE_NAMESPACE, image, nodes, timeout=timeout)
    await wait_running(session, workload.OURS_NAMESPACE, image, nodes, timeout=timeout)


async def run(
    session: Session, controller: Controller, *, nodes: int, rounds: int = 1, timeout: float
) -> dict[str, dict[str, Any]]:
    """Scenarios 1 and 3; returns {"rolling": ..., "api_load": ...}.

    Each round rolls both DaemonSets to a new image, one after the other; the order alternates
    (native first in odd rounds, edgerollout first in even ones), so that whatever the lab does
    differently for the second rollout of a round (its state after the first, a neighbour still
    settling) falls on both alike. The figures are the means over the rounds."""
    session.say(f"rolling: one lab wave ({budget(nodes)} pods deleted by hand)")
    wave = await lab_wave(
        session, workload.OURS_NAMESPACE, workload.IMAGES[0], pods=budget(nodes), timeout=timeout
    )
    idle_before = session.lab_usage()
    await asyncio.sleep(IDLE_SECONDS)
    idle = idle_before.since_per_second(session.lab_usage())
    played: list[dict[str, Any]] = []
    for index in range(rounds):
        image = workload.IMAGES[1] if index == 0 else workload.image(index)
        order = (NATIVE, OURS) if index % 2 == 0 else (OURS, NATIVE)
        measured: dict[str, Any] = {"first": order[0]}
        for name in order:
            mine = name == OURS
            session.say(
                f"rolling: round {index + 1} of {rounds}, "
                f"{'edgerollout' if mine else 'native RollingUpdate'} on {nodes} nodes"
            )
            measured[name] = await _measured(
                session,
                workload.OURS_NAMESPACE if mine else workload.NATIVE_NAMESPACE,
                name,
                image,
                nodes=nodes,
                controller=controller if mine else None,
                timeout=timeout,
                idle=sum(idle.values()),
            )
            session.say(f"rolling: {name} took {measured[name]['seconds']:.1f} s")
        measured["ratio"] = round(measured[OURS]["seconds"] / measured[NATIVE]["seconds"], 3)
        played.append(measured)
    native = mean_of([measured[NATIVE] for measured in played])
    ours = mean_of([measured[OURS] for measured in played])
    waves = math.ceil(nodes / budget(nodes))
    rolling = {
        "nodes": nodes,
        "max_unavailable": MAX_UNAVAILABLE,
        "budget": budget(nodes),
        "native": native,
        "edgerollout": ours,
        "ratio": round(ours["seconds"] / native["seconds"], 3),
        "rounds": [
            {
                "first": measured["first"],
                "native_seconds": measured[NATIVE]["seconds"],
                "edgerollout_seconds": measured[OURS]["seconds"],
                "ratio": measured["ratio"],
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
    return {"rolling": rolling, "api_load": api}


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
