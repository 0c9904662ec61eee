"""Argo CD's and Flux's verdicts on DaemonSets read from the lab, with the health customizations
in deploy/gitops (design §9.3): each phase the controller writes, and a DaemonSet left out.

Each DaemonSet is read once, as the API server serves it, when its condition names the phase
for its current generation, and that very object is judged by `gitops-health`, the program that
runs the Lua script and the CEL expressions as Argo CD and Flux run them. The same object without
the condition shows what each tool's own check says instead."""

from __future__ import annotations

import asyncio
import os
import shlex
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes_asyncio import client

from edgerollout.domain.vocabulary import (
    MAX_FAILED_ANNOTATION,
    MAX_UNAVAILABLE_ANNOTATION,
    PARTITION_ANNOTATION,
)
from edgerollout_lab.build import binary
from edgerollout_lab.kwok_stages import CRASHLOOP_IMAGE
from edgerollout_lab.versions import GITOPS_HEALTH
from tests.e2e.support.controller_process import ControllerProcess
from tests.e2e.support.lab import LabHandle, served, set_image, wait_for
from tests.e2e.support.seed import NEW
from tests.unit.deploy.test_gitops_health import Verdict, judge

from .test_list import ARU, MIN_READY, PAUSED, create

pytestmark = pytest.mark.lab(nodes=3)

TYPE = "edgerollout.io/Progressing"
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def gitops_health() -> Path:
    return binary("gitops-health", GITOPS_HEALTH)


async def read(kube: LabHandle, namespace: str, name: str) -> dict[str, Any]:
    """The DaemonSet as the API server serves it."""
    found: dict[str, Any] = served(await kube.apps.read_namespaced_daemon_set(name, namespace))
    return found


def condition(ds: dict[str, Any]) -> dict[str, Any] | None:
    for entry in ds["status"].get("conditions", ()):
        if entry["type"] == TYPE:
            found: dict[str, Any] = entry
            return found
    return None


async def in_phase(kube: LabHandle, namespace: str, name: str, reason: str) -> dict[str, Any]:
    """The DaemonSet once its condition is `reason`, judged for its current generation."""

    async def probe() -> dict[str, Any] | None:
        ds = await read(kube, namespace, name)
        found = condition(ds)
        generation = ds["metadata"]["generation"]
        if (
            found is not None
            and found["reason"] == reason
            and found["message"].endswith(f" (generation {generation})")
            and ds["status"].get("observedGeneration") == generation
        ):
            return ds
        return None

    return await wait_for(probe, timeout=90, what=f"{name} in phase {reason}", interval=0.5)


def without_condition(ds: dict[str, Any]) -> dict[str, Any]:
    """The same DaemonSet without edgerollout's condition: what each tool's own check sees."""
    conditions = [c for c in ds["status"].get("conditions", ()) if c["type"] != TYPE]
    return {**ds, "status": {**ds["status"], "conditions": conditions}}


def counts(ds: dict[str, Any]) -> str:
    found = condition(ds)
    assert found is not None
    message: str = found["message"]
    return message


async def test_complete_held_paused_invalid_and_a_daemonset_left_out(
    kube: LabHandle, namespace: str, controller: ControllerProcess, gitops_health: Path
) -> None:
    await create(kube, namespace, "web", ARU)
    await create(kube, namespace, "paused", PAUSED)
    await create(kube, namespace, "invalid", {**ARU, MAX_FAILED_ANNOTATION: "many"})
    await create(kube, namespace, "plain", {}, native=True)
    await create(kube, namespace, "canary", {**ARU, PARTITION_ANNOTATION: "2"})
    await set_image(kube, namespace, "paused", NEW)
    await set_image(kube, namespace, "canary", NEW)

    web = await in_phase(kube, namespace, "web", "Complete")
    paused = await in_phase(kube, namespace, "paused", "Paused")
    invalid = await in_phase(kube, namespace, "invalid", "InvalidAnnotation")
    canary = await in_phase(kube, namespace, "canary", "Held")
    plain = await read(kube, namespace, "plain")

    assert (
        counts(web) == "3 of 3 nodes updated, 0 offline, 0 broken, 0 held, 0 to go (generation 1)"
    )
    assert judge(gitops_health, web) == Verdict("Healthy", f"Complete: {counts(web)}", "Current")
    # Argo CD's own check calls this OnDelete DaemonSet Healthy; kstatus waits on 0 of 3 updated.
    assert counts(paused) == (
        "0 of 3 nodes updated, 0 offline, 0 broken, 3 held, 0 to go (generation 2)"
    )
    assert judge(gitops_health, paused) == Verdict(
        "Suspended", f"Paused: {counts(paused)}", "Current"
    )
    assert counts(invalid) == "cannot follow InvalidMaxFailed; nodes not counted (generation 1)"
    assert judge(gitops_health, invalid) == Verdict(
        "Degraded", f"InvalidAnnotation: {counts(invalid)}", "Failed"
    )
    assert counts(canary) == (
        "1 of 3 nodes updated, 0 offline, 0 broken, 2 held, 0 to go (generation 2)"
    )
    assert judge(gitops_health, canary) == Verdict(
        "Suspended", f"Held: {counts(canary)}", "Current"
    )
    # Without the condition: Argo CD calls every OnDelete DaemonSet Healthy, kstatus waits on the
    # nodes a person holds back on purpose.
    assert judge(gitops_health, without_condition(paused)) == Verdict(
        "Healthy", "daemon set 0 out of 3 new pods have been updated", "InProgress"
    )
    assert judge(gitops_health, without_condition(canary)) == Verdict(
        "Healthy", "daemon set 1 out of 3 new pods have been updated", "InProgress"
    )
    assert condition(plain) is None
    assert judge(gitops_health, plain) == Verdict("Healthy", "", "Current")


async def test_rolling_then_waiting_for_an_offline_shop_is_healthy_not_stuck(
    kube: LabHandle, namespace: str, controller: ControllerProcess, gitops_health: Path
) -> None:
    # One node at a time, each new pod available MIN_READY seconds after it is Ready.
    await create(
        kube,
        namespace,
        "web",
        {**ARU, MAX_UNAVAILABLE_ANNOTATION: "1"},
        min_ready_seconds=MIN_READY,
    )
    await kube.cut_off("edge-3")
    await set_image(kube, namespace, "web", NEW)

    rolling = await in_phase(kube, namespace, "web", "Rolling")
    assert judge(gitops_health, rolling) == Verdict(
        "Progressing", f"Rolling: {counts(rolling)}", "InProgress"
    )

    waiting = await in_phase(kube, namespace, "web", "WaitingForOfflineNodes")
    assert counts(waiting) == (
        "2 of 3 nodes updated, 1 offline, 0 broken, 0 held, 0 to go (generation 2)"
    )
    assert judge(gitops_health, waiting) == Verdict(
        "Healthy", f"WaitingForOfflineNodes: {counts(waiting)}", "Current"
    )
    # The offline node's taints keep it out of desiredNumberScheduled (the DaemonSet controller
    # does not tolerate unreachable:NoSchedule): the tools' own checks do not wait for it either.
    assert judge(gitops_health, without_condition(waiting)) == Verdict(
        "Healthy", "daemon set 2 out of 2 new pods have been updated", "Current"
    )


async def test_a_rollout_failed_on_broken_nodes_is_degraded_and_failed(
    kube: LabHandle, namespace: str, controller: ControllerProcess, gitops_health: Path
) -> None:
    annotations = {**ARU, MAX_UNAVAILABLE_ANNOTATION: "2", MAX_FAILED_ANNOTATION: "1"}
    await create(kube, namespace, "web", annotations)
    await set_image(kube, namespace, "web", CRASHLOOP_IMAGE)

    failed = await in_phase(kube, namespace, "web", "RolloutFailed")

    # Before the pause it calls for is written edge-3 is still to go, after it held.
    assert counts(failed).startswith("0 of 3 nodes updated, 0 offline, 2 broken, ")
    assert judge(gitops_health, failed) == Verdict(
        "Degraded", f"RolloutFailed: {counts(failed)}", "Failed"
    )
    # Without the condition: Argo CD Healthy, kstatus InProgress until its timeout, never failed.
    assert judge(gitops_health, without_condition(failed)) == Verdict(
        "Healthy", "daemon set 2 out of 3 new pods have been updated", "InProgress"
    )


async def test_the_readmes_argo_cd_command_merges_the_customization_into_argocd_cm(
    kube: LabHandle,
) -> None:
    # The command as the README gives it, run from the repository against an argocd-cm that
    # holds a setting of its own, which the merge must keep.
    readme = (ROOT / "README.md").read_text()
    (command,) = [
        line for line in readme.splitlines() if line.startswith("kubectl -n argocd patch")
    ]
    customization = yaml.safe_load((ROOT / "deploy" / "gitops" / "argocd-cm.yaml").read_text())
    await kube.core.create_namespace(
        client.V1Namespace(metadata=client.V1ObjectMeta(name="argocd"))
    )
    try:
        config_map = client.V1ConfigMap(
            metadata=client.V1ObjectMeta(name="argocd-cm"), data={"url": "https://argo.example"}
        )
        await kube.core.create_namespaced_config_map("argocd", config_map)
        env = {**os.environ, "KUBECONFIG": str(kube.lab.kubeconfig)}
        # kubectl as the project's environment provides it (the `kubectl` PyPI wheel).
        argv = [str(Path(sys.executable).parent / "kubectl"), *shlex.split(command)[1:]]
        done = await asyncio.create_subprocess_exec(
            *argv, cwd=ROOT, env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
        )
        _, stderr = await done.communicate()
        assert (done.returncode, stderr) == (0, b""), stderr
        merged = await kube.core.read_namespaced_config_map("argocd-cm", "argocd")
        assert merged.data == {"url": "https://argo.example", **customization["data"]}
    finally:
        await kube.core.delete_namespace("argocd")
