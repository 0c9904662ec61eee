"""Scenario 8: a cluster's mix of pods — what the pods that are not the rollouts' cost the controller.

A real cluster runs 10 to 30 pods per node, of which a few belong to opted-in DaemonSets. This
scenario builds that mix on plain Node objects (as scenario 5 does: nobody heartbeats them, their
pods stay Pending, bound by the scheduler): per node, one pod of each of 20 DaemonSets, 3 of them
opted in, and 10 pods of a Deployment — 30 pods per node, all in one namespace, the controller's.

Measured side by side in one run:
1. the DaemonSets alone: a fresh controller's RSS once ready, its start-up CPU and time, and what
   its caches hold (`edgerollout_cache_objects`);
2. the same after the Deployment's pods were added: the same readings, and their ratio to 1;
3. churn: the Deployment's pods' status patched at `churn_rate` a second for `churn_seconds`
   (a condition of their own, as kubelets report pods' conditions): the controller's CPU share of
   one core meanwhile, and its requests to the API server.

With `opted_in_only`, only the 3 opted-in DaemonSets are made, and only step 1 is run: the other
27 pods of each node are never sent to the controller (steps 2 and 3 measure that they cost it
nothing), so its footprint among 30 pods per node is its footprint with these alone. That measures
it at 10,000 nodes, where 300,000 pods do not fit the lab beside the controller.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from datetime import UTC, datetime
from typing import Any

from bench import workload
from bench.metrics import by_label, delta, total
from bench.scenarios.footprint import create_nodes
from bench.session import Session
from bench.watch import JSON, ObjectWatch, live
from edgerollout.domain.vocabulary import (
    ADVANCED_ROLLING_UPDATE,
    ON_DELETE,
    UPDATE_STRATEGY_ANNOTATION,
)
from edgerollout.kube.api import PODS, Resource
from edgerollout.kube.views import bound_node

DEPLOYMENTS = Resource("apps/v1", "deployments")
NAMESPACE = "bench-mix"
DAEMONSETS = 20
OPTED_IN = 3
DEPLOYMENT_PODS_PER_NODE = 10
DEPLOYMENT = "shop"
SETTLE_SECONDS = 3.0
CHURN_CONDITION = "bench.edgerollout.io/Churn"
CHURN_WORKERS = 32
TARGET_CPU_SHARE = 0.05


def _daemonset(index: int) -> JSON:
    name = f"agent-{index:02d}"
    annotations = {UPDATE_STRATEGY_ANNOTATION: ADVANCED_ROLLING_UPDATE} if index < OPTED_IN else {}
    return workload.daemonset(
        name,
        image=workload.IMAGES[0],
        strategy={"type": ON_DELETE},
        annotations=annotations,
        tolerate_everything=True,
    )


def _deployment(replicas: int) -> JSON:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": DEPLOYMENT},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": DEPLOYMENT}},
            "template": {
                "metadata": {"labels": {"app": DEPLOYMENT}},
                "spec": {
                    "containers": [{"name": "app", "image": workload.IMAGES[0]}],
                    "tolerations": [{"operator": "Exists"}],
                },
            },
        },
    }


def _bound(pod: JSON) -> str | None:
    return pod["metadata"]["name"] if bound_node(pod) and live(pod) else None


def _deployment_pod(pod: JSON) -> str | None:
    labels = pod["metadata"].get("labels") or {}
    return pod["metadata"]["name"] if labels.get("app") == DEPLOYMENT and live(pod) else None


async def _reading(session: Session, name: str) -> dict[str, Any]:
    """A fresh controller's readings once ready and settled; it stays running."""
    controller = await session.controller(namespace=NAMESPACE, name=name)
    await asyncio.sleep(SETTLE_SECONDS)
    samples = controller.samples()
    return {
        "rss_mb": controller.rss_mb(),
        "startup_cpu_seconds": round(controller.cpu_seconds(), 2),
        "ready_seconds": round(controller.ready_seconds, 2),
        "cached": {
            resource: int(count)
            for resource, count in by_label(
                samples, "edgerollout_cache_objects", "resource"
            ).items()
        },
    }


async def _churn(
    session: Session, pods: list[str], *, rate: float, seconds: float
) -> tuple[int, float]:
    """Patch the pods' status at `rate` a second (open loop, round-robin) for `seconds`; the
    patches made and the seconds they took."""
    names = itertools.cycle(pods)
    gate = asyncio.Semaphore(CHURN_WORKERS)
    started = time.monotonic()
    count = int(rate * seconds)
    sent = 0

    async def one(name: str, index: int) -> None:
        nonlocal sent
        now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        status = "True" if index % 2 else "False"
        body = {
            "status": {
                "conditions": [
                    {"type": CHURN_CONDITION, "status": status, "lastTransitionTime": now}
                ]
            }
        }
        async with gate:
            await session.api.patch(PODS, name, body, namespace=NAMESPACE, subresource="status")
            sent += 1

    tasks = []
    for index in range(count):
        delay = started + index / rate - time.monotonic()
        if delay > 0:
            await asyncio.sleep(delay)
        tasks.append(asyncio.create_task(one(next(names), index)))
    await asyncio.gather(*tasks)
    return sent, time.monotonic() - started


async def run(
    session: Session,
    *,
    nodes: int,
    churn_rate: float,
    churn_seconds: float,
    timeout: float,
    opted_in_only: bool = False,
) -> dict[str, Any]:
    await workload.create_namespace(session.api, NAMESPACE)
    kwok_nodes = len(session.node_names)
    made = OPTED_IN if opted_in_only else DAEMONSETS
    session.say(f"mix: {nodes} nodes, {made} DaemonSets ({OPTED_IN} opted in)")
    started = time.monotonic()
    await create_nodes(session, 1, nodes)
    watch = ObjectWatch(session.api, PODS, namespace=NAMESPACE)
    await watch.start()
    bound = watch.track(_bound)
    deployment_pods = watch.track(_deployment_pod)
    try:
        for index in range(made):
            await workload.create(session.api, NAMESPACE, _daemonset(index))
        daemonset_pods = made * (nodes + kwok_nodes)
        await bound.reach(daemonset_pods, timeout=timeout, what="every DaemonSet pod bound")
        session.say(f"mix: {daemonset_pods} pods bound after {time.monotonic() - started:.0f} s")
        alone = await _reading(session, "mix-daemonsets")
        session.say(f"mix: DaemonSets alone: {alone}")
        session.stop_controllers()
        if opted_in_only:
            return {
                "method": "static Node objects without heartbeats; per node one pod of each of "
                "the 3 opted-in DaemonSets, bound and Pending (the 27 other pods of a node of the "
                "mix are not sent to the controller)",
                "nodes": nodes + kwok_nodes,
                "pods": daemonset_pods,
                "opted_in_pods": daemonset_pods,
                "daemonsets_alone": alone,
            }

        replicas = DEPLOYMENT_PODS_PER_NODE * nodes
        await session.api.create(DEPLOYMENTS, _deployment(replicas), namespace=NAMESPACE)
        await bound.reach(
            daemonset_pods + replicas, timeout=timeout, what="every Deployment pod bound"
        )
        mixed = await _reading(session, "mix-all")
        session.say(f"mix: with the Deployment: {mixed}")
        controller = session.controllers[-1]

        names = sorted(name for name, pod in watch.objects.items() if _deployment_pod(pod))
        before_samples, before_cpu = controller.samples(), controller.cpu_seconds()
        sent, took = await _churn(session, names, rate=churn_rate, seconds=churn_seconds)
        cpu = controller.cpu_seconds() - before_cpu
        requests = total(delta(controller.samples(), before_samples), "rest_client_requests_total")
        churn = {
            "patches": sent,
            "seconds": round(took, 1),
            "rate_achieved": round(sent / took, 1),
            "controller_cpu_seconds": round(cpu, 3),
            "controller_cpu_share": round(cpu / took, 4),
            "controller_requests": int(requests),
        }
        session.say(f"mix: churn: {churn}")
        session.stop_controllers()
    finally:
        await watch.stop()
    return {
        "method": "static Node objects without heartbeats; per node one pod of each of 20 "
        "DaemonSets (3 opted in) and 10 of a Deployment, bound and Pending",
        "nodes": nodes + kwok_nodes,
        "pods": daemonset_pods + replicas,
        "opted_in_pods": OPTED_IN * (nodes + kwok_nodes),
        "deployment_pods": deployment_pods.value,
        "daemonsets_alone": alone,
        "with_deployment": mixed,
        "rss_ratio": round(mixed["rss_mb"] / alone["rss_mb"], 3),
        "churn": churn,
        "target_cpu_share": TARGET_CPU_SHARE,
    }
