"""`edgerollout list` against the lab: opted-in DaemonSets in three states and one left out, and
`--watch` following a rollout from paused to complete."""

from __future__ import annotations

import asyncio
import json
import re
import signal
import subprocess
import time

import pytest

from edgerollout.domain.vocabulary import PAUSED_ANNOTATION
from tests.e2e.support.cli import BIN, edgerollout
from tests.e2e.support.controller_process import ControllerProcess
from tests.e2e.support.lab import LabHandle, by_node, daemonset, pod_ready, set_image, wait_for
from tests.e2e.support.seed import NEW, NODES, OLD, ON_DELETE

pytestmark = pytest.mark.lab(nodes=3)

ARU = {"apps.openyurt.io/update-strategy": "AdvancedRollingUpdate"}
PAUSED = {**ARU, PAUSED_ANNOTATION: "true"}
# An age as kubectl writes it, of a revision made during the test: seconds, or minutes.
RECENT = re.compile(r"\d+s|\d+m(\d+s)?")
WEB = ["web", "AdvancedRollingUpdate"]
MIN_READY = 2


async def create(
    kube: LabHandle,
    namespace: str,
    name: str,
    annotations: dict[str, str],
    *,
    native: bool = False,
    min_ready_seconds: int = 0,
) -> None:
    """A DaemonSet `name` on OLD (OnDelete, or the native RollingUpdate), available on every
    node."""
    strategy = {"type": "RollingUpdate"} if native else ON_DELETE
    manifest = daemonset(name, image=OLD, strategy=strategy, annotations=annotations)
    manifest["spec"]["minReadySeconds"] = min_ready_seconds
    await kube.apps.create_namespaced_daemon_set(namespace, manifest)

    async def available_everywhere() -> bool:
        pods = by_node(await kube.pods(namespace, f"app={name}"))
        if sorted(pods) != NODES or not all(pod_ready(p[0]) for p in pods.values()):
            return False
        # Available past minReadySeconds, as the native controller counts it.
        found = await kube.apps.read_namespaced_daemon_set(name, namespace)
        return (found.status.number_available or 0) == len(NODES)

    await wait_for(available_everywhere, timeout=60, what=f"{name} available on every node")


def interruptible() -> None:
    """Run in the child before the command: SIGINT at its default, as in a terminal's foreground
    job. A test run started in the background of a script (`./dev test &`) has SIGINT ignored,
    and so would the command, which, as every Python program, then keeps ignoring it (POSIX)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def split_ages(stdout: str) -> tuple[list[str], list[str]]:
    """Each line up to the AGE column (padding included), and each line's AGE cell."""
    lines = stdout.splitlines()
    at = lines[0].index("AGE")
    return [line[:at] for line in lines], [line[at:] for line in lines]


async def test_list_shows_each_opted_in_daemonset_in_its_state(
    kube: LabHandle, namespace: str
) -> None:
    await create(kube, namespace, "web", ARU)
    await create(kube, namespace, "invalid", {"apps.openyurt.io/update-strategy": "Rolling"})
    await create(kube, namespace, "paused", PAUSED)
    await create(kube, namespace, "plain", {}, native=True)
    await set_image(kube, namespace, "paused", NEW)
    expected = [
        "NAME      STRATEGY                UPDATED   OFFLINE   BROKEN   HELD   WAVE     "
        "STATE                ",
        "invalid   <none>                  -         -         -        -      <none>   "
        "invalid annotation   ",
        "paused    AdvancedRollingUpdate   0/3       0         0        3      <none>   "
        "paused               ",
        "web       AdvancedRollingUpdate   3/3       0         0        0      <none>   "
        "complete             ",
    ]

    async def listed() -> subprocess.CompletedProcess[str] | None:
        # Until the native controller has made the new revision of `paused`.
        result = await edgerollout(kube.lab.kubeconfig, "list", "-n", namespace)
        return result if split_ages(result.stdout)[0] == expected else None

    result = await wait_for(listed, timeout=30, what="the table", interval=1)
    assert (result.returncode, result.stderr) == (0, "")
    _, ages = split_ages(result.stdout)
    assert ages[0] == "AGE"
    assert all(RECENT.fullmatch(age) for age in ages[1:]), ages

    as_json = await edgerollout(kube.lab.kubeconfig, "list", "-n", namespace, "-o", "json")
    assert (as_json.returncode, as_json.stderr) == (0, "")
    items = json.loads(as_json.stdout)["items"]
    assert [
        (i["name"], i["state"]["reason"], i["updated"], i["total"], i["held"], i["complete"])
        for i in items
    ] == [
        ("invalid", "InvalidAnnotation", None, None, None, True),  # complete as `status` says
        ("paused", "Paused", 0, 3, 3, False),
        ("web", "Complete", 3, 3, 0, True),
    ]
    assert items[0]["invalidAnnotations"] == ["UnknownUpdateStrategy"]


async def test_list_of_a_namespace_without_opted_in_daemonsets_says_so(
    kube: LabHandle, namespace: str
) -> None:
    await create(kube, namespace, "plain", {}, native=True)
    result = await edgerollout(kube.lab.kubeconfig, "list", "-n", namespace)
    assert (result.returncode, result.stdout, result.stderr) == (
        0,
        "",
        f"No resources found in {namespace} namespace.\n",
    )


async def read_line(stream: asyncio.StreamReader, *, until: float) -> str:
    line = await asyncio.wait_for(stream.readline(), max(until - time.monotonic(), 0.1))
    assert line, "list --watch ended"
    return line.decode().rstrip("\n")


async def test_list_watch_follows_a_rollout_from_paused_to_complete(
    kube: LabHandle, namespace: str, controller: ControllerProcess
) -> None:
    # Each new pod counts as updated MIN_READY seconds after it is Ready, no event saying so:
    # the rollout passes through rows a watch must show, one node at a time (budget 10 % of 3).
    await create(kube, namespace, "web", PAUSED, min_ready_seconds=MIN_READY)
    await set_image(kube, namespace, "web", NEW)
    kubeconfig = kube.lab.kubeconfig
    watching = await asyncio.create_subprocess_exec(
        str(BIN / "edgerollout"),
        *("list", "-n", namespace, "--watch", "--kubeconfig", str(kubeconfig)),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        preexec_fn=interruptible,
    )
    stdout, stderr = watching.stdout, watching.stderr
    assert stdout is not None
    assert stderr is not None
    rows: list[list[str]] = []

    async def row(*, until: float) -> list[str]:
        """The next row's cells but its age (checked here)."""
        cells = (await read_line(stdout, until=until)).split()
        assert RECENT.fullmatch(cells[-1]), cells
        rows.append(cells[:-1])
        return rows[-1]

    try:
        deadline = time.monotonic() + 30
        header = await read_line(stdout, until=deadline)
        assert header.split() == [
            *("NAME", "STRATEGY", "UPDATED", "OFFLINE", "BROKEN", "HELD", "WAVE", "STATE"),
            "AGE",
        ]
        # Until the native controller has made the new revision, the pods are up to date.
        while await row(until=deadline) != [*WEB, "0/3", "0", "0", "3", "<none>", "paused"]:
            pass
        seen_paused = len(rows)

        resumed = await edgerollout(kubeconfig, "resume", "web", "-n", namespace)
        assert resumed.returncode == 0, resumed.stderr
        deadline = time.monotonic() + 120
        while (await row(until=deadline))[-1] != "complete":
            pass
    finally:
        watching.send_signal(signal.SIGINT)
        code = await asyncio.wait_for(watching.wait(), 10)
    assert (code, await stderr.read()) == (130, b"")
    # A row is written when the DaemonSet's row changed, and only then.
    assert rows[seen_paused:] == [
        [*WEB, "0/3", "0", "0", "0", "<none>", "rolling"],
        [*WEB, "1/3", "0", "0", "0", "<none>", "rolling"],
        [*WEB, "2/3", "0", "0", "0", "<none>", "rolling"],
        [*WEB, "3/3", "0", "0", "0", "<none>", "complete"],
    ]
