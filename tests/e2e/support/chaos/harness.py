"""One chaos run: a rollout under faults, judged by the invariant watcher, then convergence timed.

A run creates a fresh namespace and an AdvancedRollingUpdate DaemonSet on every lab node
(max-unavailable `BUDGET`, `minReadySeconds` so that the rollout lasts long enough to be hit),
starts the controller fleet, changes the image and lets the scenario's faults loose for a bounded
window. The scenario restores everything it broke before it returns; from that moment the rollout
must finish (one Ready pod of the newest template on every node) within `CONVERGE_TIMEOUT`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from edgerollout.domain.vocabulary import (
    ADVANCED_ROLLING_UPDATE,
    MAX_UNAVAILABLE_ANNOTATION,
    UPDATE_STRATEGY_ANNOTATION,
)
from edgerollout_lab.control_plane import (
    LAB_CONTROLLER_USER,
    audit_log_path,
    controller_kubeconfig_path,
)
from tests.e2e.support.chaos.fleet import Fleet, Relay
from tests.e2e.support.chaos.node_holds import NodeHolds
from tests.e2e.support.chaos.recovery import Outage, recovery
from tests.e2e.support.invariants import InvariantWatcher, clock
from tests.e2e.support.lab import (
    LabHandle,
    by_node,
    daemonset,
    fresh_namespace,
    images,
    pod_ready,
    set_image,
    wait_for,
)
from tests.e2e.support.seed import ON_DELETE

NAME = "chaos-ds"
SELECTOR = f"app={NAME}"
NATIVE = "chaos-native"
"""The reference: a native RollingUpdate DaemonSet beside the rollout, hit by the same faults."""
NATIVE_SELECTOR = f"app={NATIVE}"
OLD, NEW, NEWER = "nginx:1.19.4", "nginx:1.19.5", "nginx:1.19.6"
BUDGET = 2
MIN_READY_SECONDS = 2
CONVERGE_TIMEOUT = 120.0


def opt_in(strategy: str = ADVANCED_ROLLING_UPDATE) -> dict[str, str]:
    return {
        UPDATE_STRATEGY_ANNOTATION: strategy,
        MAX_UNAVAILABLE_ANNOTATION: str(BUDGET),
    }


def manifest(image: str, *, min_ready_seconds: int = MIN_READY_SECONDS) -> Any:
    body = daemonset(NAME, image=image, strategy=ON_DELETE, annotations=opt_in())
    body["spec"]["minReadySeconds"] = min_ready_seconds
    return body


def native_manifest(image: str, *, min_ready_seconds: int) -> Any:
    strategy = {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": BUDGET}}
    body = daemonset(NATIVE, image=image, strategy=strategy)
    body["spec"]["minReadySeconds"] = min_ready_seconds
    return body


@dataclass
class Chaos:
    """What a scenario's faults may use, and what they leave behind for the judge."""

    kube: LabHandle
    namespace: str
    fleet: Fleet
    rng: random.Random
    window: float
    nodes: list[str]
    relay: Relay | None = None
    min_ready_seconds: int = MIN_READY_SECONDS
    target: str = NEW
    notes: list[str] = field(default_factory=list)
    flappers: list[str] = field(default_factory=list)
    outages: list[Outage] = field(default_factory=list)
    """Control-plane outages the faults caused (wall-clock), for the recovery's timeline."""
    holds: NodeHolds = field(default_factory=NodeHolds)
    """The holds the nodes took and have not lifted."""
    started: float = field(default_factory=time.monotonic)

    def remaining(self) -> float:
        return max(0.0, self.window - (time.monotonic() - self.started))

    async def pause(self, low: float, high: float) -> None:
        """Sleep a random while, never past the end of the window."""
        await asyncio.sleep(min(self.rng.uniform(low, high), self.remaining()))

    async def rollout_progress(self) -> int:
        """How many nodes run a pod of the target image already."""
        pods = await self.kube.pods(self.namespace, SELECTOR)
        return sum(1 for p in pods if images(p) == [self.target])


Faults = Callable[[Chaos], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class Scenario:
    id: str
    title: str
    faults: Faults
    replicas: int = 1
    relay: bool = False
    window: float = 12.0
    long_window: float = 20.0
    prepare: Faults | None = None
    """Run before the image changes (the invariants are watched from before it)."""
    min_ready_seconds: int = MIN_READY_SECONDS
    controller_args: tuple[str, ...] = ()
    reference: bool = False
    """Roll a native RollingUpdate DaemonSet beside it, through the same faults."""


@dataclass
class RunResult:
    scenario: str
    seed: int
    violations: list[str]
    converge_seconds: float | None
    notes: list[str]
    peak_unavailable: int = 0
    deletions: int = 0
    report: str = ""
    peak_detail: str = ""
    recovery: dict[str, Any] | None = None
    recovery_text: str = ""

    def as_json(self) -> dict[str, Any]:
        return {
            "scenario": self.scenario,
            "seed": self.seed,
            "violations": self.violations,
            "converge_seconds": self.converge_seconds,
            "notes": self.notes,
            "peak_unavailable": self.peak_unavailable,
            "deletions": self.deletions,
            "recovery": self.recovery,
        }


async def converged(
    kube: LabHandle, namespace: str, image: str, nodes: list[str], selector: str = SELECTOR
) -> bool:
    """Every node Ready and holding exactly one pod (none terminating): Ready, of `image`."""
    for node in nodes:
        if await kube.node_ready(node) != "True":
            return False
    grouped = by_node(await kube.pods(namespace, selector))
    for node in nodes:
        pods = grouped.get(node, [])
        if len(pods) != 1:
            return False
        pod = pods[0]
        if pod.metadata.deletion_timestamp is not None or images(pod) != [image]:
            return False
        if not pod_ready(pod):
            return False
    return True


def watcher_of(
    kube: LabHandle, namespace: str, *, daemonset: str, selector: str, nodes: list[str]
) -> InvariantWatcher:
    """An invariant watcher of one DaemonSet of the run, judging the lab controller's deletions."""
    return InvariantWatcher(
        kube.core,
        kube.apps,
        namespace,
        daemonset=daemonset,
        selector=selector,
        nodes=nodes,
        audit_log=audit_log_path(kube.lab.folder),
        controller_user=LAB_CONTROLLER_USER,
    )


async def run_scenario(
    kube: LabHandle, scenario: Scenario, *, seed: int, long: bool, folder: Path
) -> RunResult:
    rng = random.Random(f"{scenario.id}:{seed}")  # noqa: S311 - chaos, not security
    nodes = [node.name for node in kube.lab.nodes]
    server = json.loads((kube.lab.folder / "lab.json").read_text())["server"]
    violations: list[str] = []
    async with fresh_namespace(kube, prefix="chaos") as namespace:
        relay = None
        # The controllers run as the lab's controller user, whose requests the audit log keeps.
        kubeconfig = controller_kubeconfig_path(kube.lab.folder)
        if scenario.relay:
            relay = Relay(folder / "relay", apiserver=server, admin_kubeconfig=kubeconfig)
            await relay.start()
            kubeconfig = relay.kubeconfig
        fleet = Fleet(
            kubeconfig,
            namespace,
            folder / "controllers",
            replicas=scenario.replicas,
            extra=scenario.controller_args,
        )
        watcher = watcher_of(kube, namespace, daemonset=NAME, selector=SELECTOR, nodes=nodes)
        native = (
            watcher_of(kube, namespace, daemonset=NATIVE, selector=NATIVE_SELECTOR, nodes=nodes)
            if scenario.reference
            else None
        )
        chaos = Chaos(
            kube=kube,
            namespace=namespace,
            fleet=fleet,
            rng=rng,
            window=scenario.long_window if long else scenario.window,
            nodes=nodes,
            relay=relay,
            min_ready_seconds=scenario.min_ready_seconds,
        )
        min_ready = scenario.min_ready_seconds
        converge_seconds: float | None = None
        try:
            await fleet.start()
            await kube.apps.create_namespaced_daemon_set(
                namespace, manifest(OLD, min_ready_seconds=min_ready)
            )
            if native is not None:
                await kube.apps.create_namespaced_daemon_set(
                    namespace, native_manifest(OLD, min_ready_seconds=min_ready)
                )

            async def old_everywhere() -> bool:
                return await converged(kube, namespace, OLD, nodes) and (
                    native is None or await converged(kube, namespace, OLD, nodes, NATIVE_SELECTOR)
                )

            await wait_for(old_everywhere, timeout=60, what=f"a Ready {OLD} pod on every node")
            # Available too (Ready for minReadySeconds), or every old pod would be replaced at once.
            await asyncio.sleep(min_ready + 1.5)
            await watcher.start()
            if native is not None:
                await native.start()
            if scenario.prepare is not None:
                await scenario.prepare(chaos)
            await set_image(kube, namespace, NAME, NEW)
            if native is not None:
                await set_image(kube, namespace, NATIVE, NEW)
            chaos.started = time.monotonic()
            await asyncio.wait_for(scenario.faults(chaos), timeout=chaos.window + 90)
            faults_stopped = time.monotonic()

            async def done() -> bool:
                return await converged(kube, namespace, chaos.target, nodes)

            try:
                await wait_for(done, timeout=CONVERGE_TIMEOUT, what="convergence", interval=0.2)
                converge_seconds = round(time.monotonic() - faults_stopped, 1)
            except AssertionError:
                violations.append(
                    f"[convergence] no convergence on {chaos.target} within "
                    f"{CONVERGE_TIMEOUT:.0f} s after the faults stopped"
                )
            if native is not None:

                async def native_done() -> bool:
                    return await converged(kube, namespace, chaos.target, nodes, NATIVE_SELECTOR)

                # The reference's time is a measurement, not a promise: a native rollout that
                # does not finish leaves its convergence unknown ("never").
                with contextlib.suppress(AssertionError):
                    await wait_for(native_done, timeout=CONVERGE_TIMEOUT, what="the reference")
            await asyncio.sleep(1.0)  # the last Events of the rollout
        finally:
            await watcher.stop()
            if native is not None:
                await native.stop()
            codes = await fleet.stop()
            if relay is not None:
                relay.stop()
        violations += [
            str(v) for v in watcher.violations(budget=BUDGET, min_ready_seconds=min_ready)
        ]
        for exit_ in fleet.unexpected_exits():
            violations.append(
                f"{clock(exit_.at)} [controller-exit] {exit_.identity} exited {exit_.code} "
                f"unasked:\n{exit_.log_tail}"
            )
        for identity, code in codes.items():
            if code != 0:
                violations.append(f"[controller-exit] {identity} exited {code} on SIGTERM")
        notes = chaos.notes
        if fleet.kills:
            notes.append(f"{fleet.kills} SIGKILL(s)")
        stepped_down = sum(
            replica.log_text().count("stepped down") for replica in fleet.processes.values()
        )
        if stepped_down:
            notes.append(f"{stepped_down} Lease(s) lapsed, stood again")
        if relay is not None and relay.cuts:
            notes.append(f"{relay.cuts} cut(s) of the controller's connections")
        expired = sum(
            replica.log_text().count("watch expired") for replica in fleet.processes.values()
        )
        if expired:
            notes.append(f"{expired} watch(es) expired (410 Gone), listed again")
        held, waits = watcher.held_then_replaced()
        if held:
            notes.append(
                f"{held} pod(s) held, {len(waits)} of them replaced after their hold ended, "
                f"after {', '.join(f'{wait:g}' for wait in waits) or '-'} s"
            )
        recovered = None
        if chaos.outages:
            recovered = recovery(
                watcher,
                chaos.outages[-1],
                image=chaos.target,
                budget=BUDGET,
                min_ready_seconds=min_ready,
                until=time.time(),
                native=native,
            )
        recovery_text = recovered.text() if recovered is not None else ""
        report = "\n".join([*violations, recovery_text, watcher.timeline(), fleet.logs_text()])
        (folder / "report.txt").write_text(report)
        peak, peak_at, peak_nodes = watcher.peak_unavailable(min_ready)
        accepted = [d for d in watcher.controller_deletions if d.accepted]
        return RunResult(
            scenario=scenario.id,
            seed=seed,
            violations=violations,
            converge_seconds=converge_seconds,
            notes=notes,
            peak_unavailable=peak,
            deletions=len(accepted),
            report=report if violations else "",
            peak_detail=f"{clock(peak_at)} {','.join(peak_nodes)}",
            recovery=recovered.as_json() if recovered is not None else None,
            recovery_text=recovery_text,
        )
