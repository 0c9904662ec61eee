"""The rollout condition on the DaemonSet, written by the controller on the lab (design §9.2):
its reason follows the rollout as `list` reads it, its transition time moves only with the
reason, the DaemonSet controller's own status updates keep it, and it goes when the DaemonSet
opts out."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

import pytest

from edgerollout.domain.vocabulary import PAUSED_ANNOTATION, UPDATE_STRATEGY_ANNOTATION
from tests.e2e.support.cli import edgerollout
from tests.e2e.support.controller_process import ControllerProcess
from tests.e2e.support.lab import LabHandle, set_image, wait_for
from tests.e2e.support.seed import NEW

from .test_list import ARU, MIN_READY, PAUSED, create

pytestmark = pytest.mark.lab(nodes=3)

TYPE = "edgerollout.io/Progressing"


async def condition(kube: LabHandle, namespace: str, name: str) -> dict[str, Any] | None:
    """The DaemonSet's rollout condition as stored (None: it carries none), and its generation."""
    found = await kube.apps.read_namespaced_daemon_set(name, namespace)
    for entry in found.status.conditions or ():
        if entry.type == TYPE:
            return {
                "status": entry.status,
                "reason": entry.reason,
                "message": entry.message,
                "since": entry.last_transition_time,
                "generation": found.metadata.generation,
            }
    return None


async def condition_is(
    kube: LabHandle, namespace: str, name: str, reason: str, message: str | None = None
) -> dict[str, Any]:
    async def written() -> dict[str, Any] | None:
        now = await condition(kube, namespace, name)
        if now is None or now["reason"] != reason:
            return None
        return now if message is None or now["message"] == message else None

    found: dict[str, Any] = await wait_for(
        written, timeout=60, what=f"{name}'s condition {reason}", interval=0.5
    )
    return found


async def listed_state(kube: LabHandle, namespace: str, name: str) -> str:
    result = await edgerollout(kube.lab.kubeconfig, "list", "-n", namespace, "-o", "json")
    assert (result.returncode, result.stderr) == (0, "")
    (item,) = (i for i in json.loads(result.stdout)["items"] if i["name"] == name)
    reason: str = item["state"]["reason"]
    return reason


async def test_the_condition_follows_the_rollout_from_paused_to_complete(
    kube: LabHandle, namespace: str, controller: ControllerProcess
) -> None:
    await create(kube, namespace, "web", PAUSED, min_ready_seconds=MIN_READY)
    complete = await condition_is(
        kube,
        namespace,
        "web",
        "Paused",
        "3 of 3 nodes updated, 0 offline, 0 broken, 0 held, 0 to go (generation 1)",
    )
    assert complete["status"] == "Unknown"
    await set_image(kube, namespace, "web", NEW)
    paused = await condition_is(
        kube,
        namespace,
        "web",
        "Paused",
        "0 of 3 nodes updated, 0 offline, 0 broken, 3 held, 0 to go (generation 2)",
    )
    # New counts, the same reason: the transition time stays.
    assert (paused["status"], paused["since"]) == ("Unknown", complete["since"])
    assert await listed_state(kube, namespace, "web") == "Paused"

    resumed = await edgerollout(kube.lab.kubeconfig, "resume", "web", "-n", namespace)
    assert resumed.returncode == 0, resumed.stderr
    rolling = await condition_is(kube, namespace, "web", "Rolling")
    assert rolling["status"] == "True"
    assert isinstance(rolling["since"], datetime)
    assert rolling["since"] >= paused["since"]
    done = await condition_is(
        kube,
        namespace,
        "web",
        "Complete",
        "3 of 3 nodes updated, 0 offline, 0 broken, 0 held, 0 to go (generation 2)",
    )
    assert done["status"] == "True"
    assert await listed_state(kube, namespace, "web") == "Complete"

    # The DaemonSet controller wrote its status as the pods were replaced, after the condition's
    # first writes: both writers' fields are there, neither undid the other's.
    found = await kube.apps.read_namespaced_daemon_set("web", namespace)
    assert (found.status.observed_generation, found.status.updated_number_scheduled) == (2, 3)
    assert await condition(kube, namespace, "web") == done


async def test_an_invalid_annotation_is_a_false_condition_and_opting_out_removes_it(
    kube: LabHandle, namespace: str, controller: ControllerProcess
) -> None:
    await create(kube, namespace, "web", {**ARU, "edgerollout.io/max-failed": "many"})
    invalid = await condition_is(
        kube,
        namespace,
        "web",
        "InvalidAnnotation",
        "cannot follow InvalidMaxFailed; nodes not counted (generation 1)",
    )
    assert invalid["status"] == "False"

    opt_out = {"metadata": {"annotations": {UPDATE_STRATEGY_ANNOTATION: None}}}
    await kube.apps.patch_namespaced_daemon_set("web", namespace, opt_out)

    async def removed() -> bool:
        return await condition(kube, namespace, "web") is None

    await wait_for(removed, timeout=30, what="the condition removed", interval=0.5)
    assert PAUSED_ANNOTATION not in (
        (await kube.apps.read_namespaced_daemon_set("web", namespace)).metadata.annotations or {}
    )
