"""Bad input changes nothing: every malformed opt-in gives one Warning Event and no deletion."""

from __future__ import annotations

from typing import Any

import pytest

from tests.e2e.support.controller_process import ControllerProcess
from tests.e2e.support.lab import LabHandle, by_node, events, hold_for, set_image, wait_for
from tests.e2e.support.seed import (
    NAME,
    NEW,
    NODES,
    ON_DELETE,
    SELECTOR,
    running_everywhere,
    seed_daemonset,
)

pytestmark = pytest.mark.lab(nodes=3)

ROLLING = {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1}}

CASES: list[Any] = [
    pytest.param(
        {"apps.openyurt.io/update-strategy": "Rolling"},
        ON_DELETE,
        "UnknownUpdateStrategy",
        '"Rolling", which is not an update strategy',
        id="unknown-strategy",
    ),
    *(
        pytest.param(
            {
                "apps.openyurt.io/update-strategy": "AdvancedRollingUpdate",
                "apps.openyurt.io/max-unavailable": value,
            },
            ON_DELETE,
            "InvalidMaxUnavailable",
            f'apps.openyurt.io/max-unavailable is "{value}", which is neither an integer',
            id=f"max-unavailable-{value or 'empty'}",
        )
        for value in ("abc", "-1", "1.5", "%", "")
    ),
]


@pytest.mark.parametrize(("annotations", "strategy", "reason", "message"), CASES)
async def test_bad_annotation_gives_one_warning_and_deletes_nothing(
    kube: LabHandle,
    namespace: str,
    controller: ControllerProcess,
    annotations: dict[str, str],
    strategy: dict[str, Any],
    reason: str,
    message: str,
) -> None:
    before = await seed_daemonset(kube, namespace, annotations=annotations, strategy=strategy)
    await set_image(kube, namespace, NAME, NEW)

    async def warned() -> bool:
        return bool(await events(kube, namespace, reason=reason))

    await wait_for(warned, timeout=20, what=f"a {reason} Event")

    async def untouched() -> bool:
        grouped = by_node(await kube.pods(namespace, SELECTOR))
        return {node: [p.metadata.uid for p in pods] for node, pods in grouped.items()} == {
            node: [uid] for node, uid in before.items()
        } and all(pods[0].metadata.deletion_timestamp is None for pods in grouped.values())

    # Pod changes keep the DaemonSet in the queue; none may add a deletion or a second Event.
    await hold_for(untouched, seconds=6, what="every old pod staying in place")
    recorded = await events(kube, namespace)
    assert [(e.type, e.reason) for e in recorded] == [("Warning", reason)]
    assert message in recorded[0].message
    assert recorded[0].involved_object.name == NAME
    assert controller.metric("edgerollout_pods_deleted_total", reason="outdated_within_budget") == 0


async def test_opt_in_without_on_delete_warns_once_and_leaves_the_rollout_to_the_native_controller(
    kube: LabHandle, namespace: str, controller: ControllerProcess
) -> None:
    annotations = {"apps.openyurt.io/update-strategy": "AdvancedRollingUpdate"}
    await seed_daemonset(kube, namespace, annotations=annotations, strategy=ROLLING)
    await set_image(kube, namespace, NAME, NEW)
    await running_everywhere(kube, namespace, NEW, NODES)  # the native RollingUpdate did it

    recorded = await events(kube, namespace)
    assert [(e.type, e.reason) for e in recorded] == [("Warning", "UpdateStrategyNotOnDelete")]
    assert 'found "RollingUpdate"' in recorded[0].message
