"""`edgerollout status` against the lab: a rollout held up by disconnected nodes, then finished."""

from __future__ import annotations

import json
import subprocess

import pytest

from tests.e2e.support.cli import edgerollout
from tests.e2e.support.controller_process import ControllerProcess
from tests.e2e.support.lab import LabHandle, set_image, wait_for
from tests.e2e.support.seed import NAME, NEW, NODES, seed_daemonset

pytestmark = pytest.mark.lab(nodes=3)

ARU = {
    "apps.openyurt.io/update-strategy": "AdvancedRollingUpdate",
    "apps.openyurt.io/max-unavailable": "30%",
}


async def status(
    kube: LabHandle, *args: str, timeout: float = 30
) -> subprocess.CompletedProcess[str]:
    return await edgerollout(kube.lab.kubeconfig, "status", *args, timeout=timeout)


def states(stdout: str) -> dict[str, str]:
    """node -> state, from the table's rows (NODE NODE-READY POD REVISION STATE...)."""
    rows = [line.split() for line in stdout.splitlines() if line.startswith("edge-")]
    return {row[0]: " ".join(row[4:]) for row in rows}


async def test_status_shows_disconnected_nodes_waiting_and_watch_ends_when_rolled_out(
    kube: LabHandle, namespace: str, controller: ControllerProcess
) -> None:
    await seed_daemonset(kube, namespace, annotations=ARU)
    await kube.cut_off("edge-2", "edge-3")
    await set_image(kube, namespace, NAME, NEW)

    async def edge1_updated() -> subprocess.CompletedProcess[str] | None:
        result = await status(kube, NAME, "-n", namespace)
        return result if states(result.stdout).get("edge-1") == "updated" else None

    shown = await wait_for(edge1_updated, timeout=30, what="edge-1 shown as updated", interval=1)
    assert shown.returncode == 1, shown.stderr
    lines = shown.stdout.splitlines()
    assert lines[0] == "Strategy: AdvancedRollingUpdate, max-unavailable 30% (1 of 3 nodes)"
    assert lines[1].split() == ["NODE", "NODE-READY", "POD", "REVISION", "STATE"]
    assert [line.split()[:2] + line.split()[3:] for line in lines[2:5]] == [
        ["edge-1", "Ready", "current", "updated"],
        ["edge-2", "Unknown", "old", "waiting:", "node", "NotReady"],
        ["edge-3", "Unknown", "old", "waiting:", "node", "NotReady"],
    ]
    assert lines[5] == (
        f'Waiting for daemon set "{NAME}" rollout to finish: '
        "1 of 3 updated pods are available (2 waiting for NotReady nodes)..."
    )

    as_json = await status(kube, NAME, "-n", namespace, "-o", "json")
    assert as_json.returncode == 1, as_json.stderr
    document = json.loads(as_json.stdout)
    assert document["daemonset"] == NAME
    assert document["namespace"] == namespace
    assert document["strategy"]["type"] == "AdvancedRollingUpdate"
    assert document["complete"] is False
    assert [(n["node"], n["nodeReady"], n["current"], n["state"]) for n in document["nodes"]] == [
        ("edge-1", "Ready", True, "updated"),
        ("edge-2", "Unknown", False, "waiting: node NotReady"),
        ("edge-3", "Unknown", False, "waiting: node NotReady"),
    ]
    assert {n["revision"] for n in document["nodes"] if n["current"]} == {
        document["newestRevision"]
    }
    assert document["summary"] == lines[5]

    await kube.connect("edge-2", "edge-3")
    watched = await status(kube, NAME, "-n", namespace, "--watch", timeout=90)
    assert watched.returncode == 0, watched.stderr
    assert watched.stdout.splitlines()[-1] == f'daemon set "{NAME}" successfully rolled out'
    assert states(watched.stdout.split("Strategy:")[-1]) == dict.fromkeys(NODES, "updated")


async def test_status_of_a_missing_daemonset_says_so_and_exits_3(
    kube: LabHandle, namespace: str
) -> None:
    result = await status(kube, "no-such-daemonset", "-n", namespace)
    assert result.returncode == 3
    assert result.stdout == ""
    assert result.stderr == (
        f'error: daemonset "no-such-daemonset" not found in namespace "{namespace}"\n'
    )
