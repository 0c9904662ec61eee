"""A node's hold on its upgrade, through its agent, against a real control plane (design §8.4, §13.6).

Every node of the lab runs its agent; a test asks edge-2's agent over HTTP, as a program on the
node does, to hold its pod, and runs the real controller scoped to the test's namespace. The hold
is a pod condition in the cluster: it outlives the agent's restart, the controller leaves the pod
alone while it stands (AdvancedRollingUpdate deletes it once lifted; OTA upgrades it at its
deadline only once max-hold ends it), and `status`, `plan` and `list` say so.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any

import aiohttp
import orjson
import pytest
from kubernetes_asyncio.client.exceptions import ApiException

from edgerollout.domain.vocabulary import (
    MAX_HOLD_ANNOTATION,
    MAX_UNAVAILABLE_ANNOTATION,
    OTA_DEADLINE_ANNOTATION,
    POD_NEED_UPGRADE,
    UPDATE_STRATEGY_ANNOTATION,
    UPGRADE_HELD,
)
from edgerollout_lab import processes
from edgerollout_lab.cluster import Lab
from tests.e2e.support.agents import (
    AgentClient,
    agent_of,
    assert_refused,
    listed_condition,
    refused_with,
    snapshot,
)
from tests.e2e.support.cli import edgerollout
from tests.e2e.support.controller_process import ControllerProcess
from tests.e2e.support.lab import (
    LabHandle,
    by_node,
    condition,
    deleted_on,
    events,
    hold_for,
    images,
    set_image,
    wait_for,
)
from tests.e2e.support.seed import NAME, NEW, OLD, SELECTOR, running_on, seed_daemonset
from tests.e2e.test_agent import as_agent_of

# The session's lab of three nodes, each running edgerollout's agent.
pytestmark = pytest.mark.lab(nodes=3, agents=True)

ARU = {UPDATE_STRATEGY_ANNOTATION: "AdvancedRollingUpdate", MAX_UNAVAILABLE_ANNOTATION: "3"}
OTA = {
    UPDATE_STRATEGY_ANNOTATION: "OTA",
    MAX_UNAVAILABLE_ANNOTATION: "3",
    OTA_DEADLINE_ANNOTATION: "2s",
}
MESSAGE = re.compile(r"until (\S+), asked at (\S+): (.*)")


@pytest.fixture
def edge2(lab: Lab) -> AgentClient:
    """edge-2's agent, as a program on edge-2 calls it."""
    return agent_of(lab, "edge-2")


def utc(text: str) -> datetime:
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)


async def held_until(kube: LabHandle, namespace: str, pod: str, why: str) -> tuple[str, str]:
    """The pod's `UpgradeHeld=True` condition, checked whole: (until, asked at)."""
    found = condition(await kube.core.read_namespaced_pod(pod, namespace), UPGRADE_HELD)
    assert found is not None
    assert (found.status, found.reason) == ("True", "NodeAsked")
    match = MESSAGE.fullmatch(found.message)
    assert match is not None, found.message
    until, asked, said = match.groups()
    assert said == why
    assert found.last_transition_time is not None
    assert datetime.fromisoformat(found.last_transition_time) == utc(asked)
    return until, asked


async def edge2_pod(kube: LabHandle, namespace: str) -> tuple[str, str]:
    (pod,) = by_node(await kube.pods(namespace, SELECTOR))["edge-2"]
    return pod.metadata.name, pod.metadata.uid


async def still_old(kube: LabHandle, namespace: str, uid: str) -> bool:
    pods = by_node(await kube.pods(namespace, SELECTOR)).get("edge-2", [])
    return (
        len(pods) == 1
        and pods[0].metadata.uid == uid
        and images(pods[0]) == [OLD]
        and pods[0].metadata.deletion_timestamp is None
    )


async def json_of(lab: Lab, *args: str) -> Any:
    """The JSON document `edgerollout ARGS -o json` prints (exit 0, or 1: not complete)."""
    done = await edgerollout(lab.kubeconfig, *args, "-o", "json")
    assert done.returncode in (0, 1), done.stderr
    return orjson.loads(done.stdout)


async def test_a_held_pod_is_not_replaced_until_its_node_lifts_the_hold(
    lab: Lab, kube: LabHandle, namespace: str, controller: ControllerProcess, edge2: AgentClient
) -> None:
    await seed_daemonset(kube, namespace, annotations=ARU)
    pod, uid = await edge2_pod(kube, namespace)

    answer = await edge2.hold(namespace, pod, reason="a car driving", **{"for": "1h"})
    assert answer.status == 200, answer.text
    until, asked = await held_until(kube, namespace, pod, "a car driving")
    assert answer.text == f"Upgrade of pod {namespace}/{pod} held until {until}"
    assert utc(until) - utc(asked) == timedelta(hours=1)

    # The hold lives in the cluster: the agent restarted lists it as it was.
    processes.restart(lab.folder, "agent-edge-2")

    async def listed_held() -> bool:
        try:
            ready = await edge2.request("GET", "/readyz")
        except aiohttp.ClientConnectionError:
            return False  # not listening yet
        if ready.status != 200:
            return False
        listed = await edge2.listed(namespace)
        held = listed_condition(listed[0], UPGRADE_HELD) if len(listed) == 1 else None
        return held is not None and held.status == "True" and until in held.message

    await wait_for(listed_held, timeout=60, what="the restarted agent listing the held pod")

    await set_image(kube, namespace, NAME, NEW)
    await running_on(kube, namespace, NEW, ["edge-1", "edge-3"], timeout=60)
    await hold_for(
        lambda: still_old(kube, namespace, uid), seconds=5, what="edge-2's held pod to stay"
    )

    why = f"node asked until {until} (a car driving)"
    status = await json_of(lab, "status", NAME, "-n", namespace)
    rows = {row["node"]: (row["state"], row["held"]) for row in status["nodes"]}
    assert rows["edge-2"] == (f"held: {why}", why)
    plan = await json_of(lab, "plan", NAME, "-n", namespace)
    planned = {row["node"]: (row["action"], row["why"]) for row in plan["nodes"]}
    assert planned["edge-2"] == ("held", why)
    listed = await json_of(lab, "list", "-n", namespace)
    (row,) = listed["items"]
    assert (row["updated"], row["held"], row["state"]["reason"]) == (2, 1, "Rolling")

    lifted = await edge2.lift(namespace, pod)
    assert (lifted.status, lifted.text) == (200, f"Hold on pod {namespace}/{pod} lifted")
    await running_on(kube, namespace, NEW, ["edge-1", "edge-2", "edge-3"], timeout=60)
    assert await deleted_on(kube, namespace) == ["edge-1", "edge-2", "edge-3"]


async def test_ota_deadline_waits_for_the_hold_until_max_hold_ends_it_with_a_warning(
    lab: Lab, kube: LabHandle, namespace: str, controller: ControllerProcess, edge2: AgentClient
) -> None:
    await seed_daemonset(kube, namespace, annotations=OTA)
    pod, uid = await edge2_pod(kube, namespace)
    answer = await edge2.hold(namespace, pod, until=_in(hours=2), reason="shop open")
    assert answer.status == 200, answer.text
    until, asked = await held_until(kube, namespace, pod, "shop open")

    await set_image(kube, namespace, NAME, NEW)
    # The deadline (2 s) passes: the controller upgrades the other nodes, not the held one,
    # whose upgrade stays offered.
    await running_on(kube, namespace, NEW, ["edge-1", "edge-3"], timeout=60)
    await hold_for(
        lambda: still_old(kube, namespace, uid), seconds=5, what="edge-2's held pod to stay"
    )
    offered = condition(await kube.core.read_namespaced_pod(pod, namespace), POD_NEED_UPGRADE)
    assert offered is not None
    assert offered.status == "True"
    assert [e.reason for e in await events(kube, namespace, reason="UpgradeHoldIgnored")] == []

    # max-hold lowered below what the hold has lasted: it is ignored, said once, and the
    # deadline upgrades the pod.
    await kube.apps.patch_namespaced_daemon_set(
        NAME, namespace, {"metadata": {"annotations": {MAX_HOLD_ANNOTATION: "1s"}}}
    )
    await running_on(kube, namespace, NEW, ["edge-1", "edge-2", "edge-3"], timeout=60)
    (ignored,) = await events(kube, namespace, reason="UpgradeHoldIgnored")
    assert (ignored.type, ignored.message) == (
        "Warning",
        f"node edge-2 holds the upgrade of pod {pod} until {until} (shop open), asked at "
        f"{asked}: longer than {MAX_HOLD_ANNOTATION} (1s) allows, so the hold is ignored since "
        f"{(utc(asked) + timedelta(seconds=1)).strftime('%Y-%m-%dT%H:%M:%SZ')}",
    )
    assert (
        sorted(e.reason for e in await events(kube, namespace, reason="OTADeadlineUpgrade"))
        == ["OTADeadlineUpgrade"] * 3
    )

    # The new pod: a hold longer than max-hold is refused by the agent.
    new_pod, _ = await edge2_pod(kube, namespace)
    refusal = await edge2.hold(namespace, new_pod, reason="x", **{"for": "1m"})
    assert refused_with(refusal, 400, "HoldTooLong").endswith("(max-hold counted from now)")


def _in(*, hours: int) -> str:
    return (datetime.now(UTC) + timedelta(hours=hours)).strftime("%Y-%m-%dT%H:%M:%SZ")


async def test_an_unreadable_max_hold_warns_once_and_deletes_nothing(
    lab: Lab, kube: LabHandle, namespace: str, controller: ControllerProcess, edge2: AgentClient
) -> None:
    await seed_daemonset(kube, namespace, annotations={**ARU, MAX_HOLD_ANNOTATION: "a day"})
    pod, _ = await edge2_pod(kube, namespace)
    await set_image(kube, namespace, NAME, NEW)
    state = await snapshot(kube, namespace)

    async def warned() -> bool:
        return bool(await events(kube, namespace, reason="InvalidMaxHold"))

    await wait_for(warned, timeout=30, what="a Warning InvalidMaxHold")

    async def unchanged() -> bool:
        return await snapshot(kube, namespace) == state

    await hold_for(unchanged, seconds=5, what="every pod to stay as it was")
    (warning,) = await events(kube, namespace, reason="InvalidMaxHold")
    assert (warning.type, warning.message) == (
        "Warning",
        f'{MAX_HOLD_ANNOTATION} is "a day": it is not a duration; expected a Go duration '
        'longer than zero, such as "24h", "8h30m" or "90m" (units h, m, s, ms, us, ns); no node is '
        "upgraded until it is fixed",
    )
    assert_refused(
        await edge2.hold(namespace, pod, reason="x", **{"for": "1h"}),
        409,
        "InvalidMaxHold",
        f"the DaemonSet {namespace}/{NAME} of pod {namespace}/{pod} sets {MAX_HOLD_ANNOTATION} to "
        '"a day", which is not a Go duration longer than zero: how long a hold may last is not '
        "known, so none is taken until it is fixed",
    )
    assert await snapshot(kube, namespace) == state


async def test_an_agents_identity_may_write_the_hold_only_on_its_own_nodes_pods(
    lab: Lab, kube: LabHandle, namespace: str
) -> None:
    await seed_daemonset(kube, namespace, annotations=ARU)
    pods = {
        node: p[0].metadata.name
        for node, p in by_node(await kube.pods(namespace, SELECTOR)).items()
    }
    state = await snapshot(kube, namespace)

    def status_patch(kind: str) -> dict[str, object]:
        return {"status": {"conditions": [{"type": kind, "status": "True", "message": "forged"}]}}

    async with as_agent_of(lab, "edge-1") as edge1:
        # Its own node's pod: the hold condition is admitted (dry run), another condition not.
        await edge1.patch_namespaced_pod_status(
            pods["edge-1"], namespace, status_patch(UPGRADE_HELD), dry_run="All"
        )
        with pytest.raises(ApiException) as other_condition:
            await edge1.patch_namespaced_pod_status(
                pods["edge-1"], namespace, status_patch(POD_NEED_UPGRADE), dry_run="All"
            )
        with pytest.raises(ApiException) as foreign:
            await edge1.patch_namespaced_pod_status(
                pods["edge-2"], namespace, status_patch(UPGRADE_HELD), dry_run="All"
            )

    assert other_condition.value.status == 403
    assert other_condition.value.body is not None
    assert foreign.value.body is not None
    assert orjson.loads(other_condition.value.body)["message"].endswith(
        "the edgerollout agent's status update may only change the PodImageReady and "
        "edgerollout.io/UpgradeHeld conditions: not the pod's metadata, another condition or any "
        "other status field"
    )
    assert foreign.value.status == 403
    assert orjson.loads(foreign.value.body)["message"].endswith(
        "the edgerollout agent may only change pods bound to its own node: this pod is on "
        "edge-2, the token is bound to a pod on edge-1"
    )
    assert await snapshot(kube, namespace) == state
