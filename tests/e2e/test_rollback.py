"""Roll back on failure on the lab (design §13.4.1): past its failure budget, a DaemonSet that asks
for it goes back to its previous template, which rolls out under the same budget, broken nodes
first; without the install's switch it pauses instead.

The controller runs as a process with `--rollback-namespace` for the test's namespace (or
without it), as the chart starts it with `controller.rollback.namespaces`.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from edgerollout.domain.vocabulary import (
    ADVANCED_ROLLING_UPDATE,
    CONTROLLER_REVISION_HASH_LABEL,
    MAX_FAILED_ANNOTATION,
    MAX_UNAVAILABLE_ANNOTATION,
    ON_FAILURE_ANNOTATION,
    PAUSED_ANNOTATION,
    ROLLBACK_NOT_ALLOWED,
    ROLLED_BACK_ANNOTATION,
    ROLLOUT_FAILED,
    ROLLOUT_ROLLED_BACK,
    UPDATE_STRATEGY_ANNOTATION,
)
from edgerollout_lab.cluster import Lab, node_names
from edgerollout_lab.kwok_stages import CRASHLOOP_IMAGE
from tests.e2e.support import cli
from tests.e2e.support.controller_process import ControllerProcess, controller_for
from tests.e2e.support.lab import (
    LabHandle,
    by_node,
    deleted_on,
    events,
    set_image,
    wait_for,
)
from tests.e2e.support.seed import (
    NAME,
    OLD,
    SELECTOR,
    newest_revision_hash,
    running_everywhere,
    seed_daemonset,
)
from tests.e2e.support.unavailability_watcher import UnavailabilityWatcher

pytestmark = pytest.mark.lab(nodes=6)

SIX = node_names(6)
ROLLBACK = {
    UPDATE_STRATEGY_ANNOTATION: ADVANCED_ROLLING_UPDATE,
    MAX_UNAVAILABLE_ANNOTATION: "2",
    MAX_FAILED_ANNOTATION: "1",
    ON_FAILURE_ANNOTATION: "rollback",
}


@pytest.fixture
async def rolling_back(
    lab: Lab, namespace: str, tmp_path: Path, request: pytest.FixtureRequest
) -> AsyncIterator[ControllerProcess]:
    """The controller, allowed to roll back in the test's namespace."""
    log = tmp_path / "controller.log"
    async with controller_for(
        lab, namespace, log, request, f"--rollback-namespace={namespace}"
    ) as c:
        yield c


async def other_revision(kube: LabHandle, namespace: str, first: str) -> str:
    """Wait for the one ControllerRevision besides the one hashed `first`; its hash. Not the
    newest: the rollback may already have made `first` the newest again by the first look (the
    failed revision stays in the history)."""

    async def other() -> str | None:
        listed = await kube.apps.list_namespaced_controller_revision(namespace)
        hashes = {r.metadata.labels[CONTROLLER_REVISION_HASH_LABEL] for r in listed.items}
        others = hashes - {first}
        return str(others.pop()) if len(others) == 1 else None

    return await wait_for(other, timeout=15, what="a second ControllerRevision")


async def test_past_the_failure_budget_the_previous_template_rolls_out_broken_nodes_first(
    kube: LabHandle, namespace: str, rolling_back: ControllerProcess
) -> None:
    before = await seed_daemonset(kube, namespace, annotations=ROLLBACK, nodes=SIX)
    restored = await newest_revision_hash(kube, namespace)
    watcher = UnavailabilityWatcher(kube.core, namespace, selector=SELECTOR, nodes=SIX)
    async with watcher:
        await set_image(kube, namespace, NAME, CRASHLOOP_IMAGE)
        failed = await other_revision(kube, namespace, restored)

        async def rolled_back() -> list[Any] | None:
            return await events(kube, namespace, reason=ROLLOUT_ROLLED_BACK) or None

        (told,) = await wait_for(rolled_back, timeout=40, what="a RolloutRolledBack Event")
        after = await running_everywhere(kube, namespace, OLD, SIX, timeout=60)
    assert told.type == "Warning"
    assert told.message.startswith(
        f'2 nodes are broken on revision {failed}, more than {MAX_FAILED_ANNOTATION} "1" '
        "tolerates (1): edge-1: CrashLoopBackOff since "
    )
    assert "; edge-2: CrashLoopBackOff since " in told.message
    assert told.message.endswith(
        f"The DaemonSet's template is rolled back to revision {restored} (as kubectl rollout "
        "undo does), which rolls out under the same budgets, the broken nodes first"
    )
    # The broken nodes were the only ones the failed revision reached: they alone went twice,
    # the others kept their first pods throughout, and no more than 2 were ever unavailable.
    assert await deleted_on(kube, namespace) == ["edge-1", "edge-1", "edge-2", "edge-2"]
    assert {node: after[node] == before[node] for node in SIX} == {
        "edge-1": False,
        "edge-2": False,
        "edge-3": True,
        "edge-4": True,
        "edge-5": True,
        "edge-6": True,
    }
    assert watcher.max_unavailable == 2
    current = await kube.apps.read_namespaced_daemon_set(NAME, namespace)
    assert images_of(current) == [OLD]
    annotations = current.metadata.annotations
    assert annotations[ROLLED_BACK_ANNOTATION] == f"from {failed} (revision 2) to {restored}"
    assert PAUSED_ANNOTATION not in annotations
    assert await newest_revision_hash(kube, namespace) == restored
    warnings = [e.reason for e in await events(kube, namespace) if e.type == "Warning"]
    assert warnings == [ROLLOUT_ROLLED_BACK]
    status = await cli.edgerollout(
        kube.lab.kubeconfig, "status", NAME, "-n", namespace, "-o", "json"
    )
    document = json.loads(status.stdout)
    assert (document["complete"], document["paused"], document["rolledBack"]) == (
        True,
        False,
        f"from {failed} (revision 2) to {restored}",
    )


async def test_without_the_install_switch_the_rollout_pauses_and_says_why(
    kube: LabHandle, namespace: str, controller: ControllerProcess
) -> None:
    before = await seed_daemonset(kube, namespace, annotations=ROLLBACK, nodes=SIX)
    await set_image(kube, namespace, NAME, CRASHLOOP_IMAGE)

    async def not_allowed() -> list[Any] | None:
        return await events(kube, namespace, reason=ROLLBACK_NOT_ALLOWED) or None

    (told,) = await wait_for(not_allowed, timeout=40, what="a RollbackNotAllowed Event")
    assert told.message.endswith(
        f"the controller may not roll back DaemonSets in namespace {namespace}: the install "
        "does not switch it on (controller.rollback.namespaces, --rollback-namespace); the "
        f"rollout is paused instead, as without {ON_FAILURE_ANNOTATION}: rollback"
    )

    async def paused() -> bool:
        current = await kube.apps.read_namespaced_daemon_set(NAME, namespace)
        return bool(current.metadata.annotations.get(PAUSED_ANNOTATION) == "true")

    await wait_for(paused, timeout=10, what="the DaemonSet paused")
    current = await kube.apps.read_namespaced_daemon_set(NAME, namespace)
    assert images_of(current) == [CRASHLOOP_IMAGE]
    assert ROLLED_BACK_ANNOTATION not in current.metadata.annotations
    grouped = by_node(await kube.pods(namespace, SELECTOR))
    kept = {node: [p.metadata.uid for p in grouped[node]] == [before[node]] for node in SIX[2:]}
    assert kept == dict.fromkeys(SIX[2:], True)
    warnings = sorted(e.reason for e in await events(kube, namespace) if e.type == "Warning")
    assert warnings == [ROLLBACK_NOT_ALLOWED, ROLLOUT_FAILED]


def images_of(ds: Any) -> list[str]:
    return [container.image for container in ds.spec.template.spec.containers]
