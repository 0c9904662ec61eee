"""One DaemonSet's annotations cannot stall the controller (design §7, §12.7): while one carries
values far too long to read — and has them edited 500 times — another DaemonSet's rollout goes on
as it does alone, the leader keeps its Lease, the controller's memory stays flat, and the bad
values get bounded Warnings at a bounded rate."""

from __future__ import annotations

import asyncio
import math
import time
from pathlib import Path
from typing import Any

import pytest
from kubernetes_asyncio import client

from edgerollout.domain.vocabulary import (
    ADVANCED_ROLLING_UPDATE,
    ANNOTATION_TOO_LONG,
    MAX_UNAVAILABLE_ANNOTATION,
    NODE_SELECTOR_ANNOTATION,
    OTA_DEADLINE_ANNOTATION,
    UPDATE_STRATEGY_ANNOTATION,
    WAVES_ANNOTATION,
)
from tests.e2e.support.controller_process import ControllerProcess, stopped_cleanly
from tests.e2e.support.lab import LabHandle, daemonset, events, set_image, wait_for
from tests.e2e.support.seed import NAME, NEW, NODES, OLD, ON_DELETE, running_everywhere

pytestmark = pytest.mark.lab(nodes=3)

NOISY = "noisy"
LEASE = "edgerollout-flood"
EDITS = 500
ADVANCED = {UPDATE_STRATEGY_ANNOTATION: ADVANCED_ROLLING_UPDATE, MAX_UNAVAILABLE_ANNOTATION: "1"}
# The Warnings' rate per DaemonSet (settings.EventSettings): a burst, then one a minute.
WARNING_BURST, WARNING_REFILL_SECONDS = 64, 60.0
# How far the controller's resident memory may move over the edits: a kept value would be 240 KB
# each, 120 MB over 500 edits.
RSS_SLACK_BYTES = 16 << 20


def too_long(edit: int) -> dict[str, str]:
    """240 KB of values, each far past its limit (the API server takes 256 KiB of annotations)."""
    return {
        WAVES_ANNOTATION: (f"pool-{edit}," * 20_000)[:110_000],
        NODE_SELECTOR_ANNOTATION: (f"zone{edit}=a," * 10_000)[:100_000],
        OTA_DEADLINE_ANNOTATION: (f"{edit % 9 + 1}ns" * 10_000)[:30_000],
    }


async def roll(kube: LabHandle, namespace: str, image: str) -> float:
    """Set the seed DaemonSet's image; seconds until every node runs it, Ready."""
    started = time.monotonic()
    await set_image(kube, namespace, NAME, image)
    await running_everywhere(kube, namespace, image, NODES, timeout=60)
    return time.monotonic() - started


async def lease(kube: LabHandle, namespace: str) -> tuple[str, int]:
    found = await client.CoordinationV1Api(kube.api).read_namespaced_lease(LEASE, namespace)
    return found.spec.holder_identity, found.spec.lease_transitions or 0


def resident_bytes(controller: ControllerProcess) -> float:
    return controller.metric("process_resident_memory_bytes")


async def test_a_daemonset_with_values_too_long_to_read_holds_only_itself(
    kube: LabHandle, namespace: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    controller = ControllerProcess.launch(
        kube.lab.kubeconfig,
        tmp_path / "controller.log",
        f"--namespace={namespace}",
        "--leader-elect",
        f"--leader-election-namespace={namespace}",
        f"--leader-election-name={LEASE}",
    )
    with stopped_cleanly(controller, request, "controller", controller.log_text):
        await controller.wait_ready()
        await kube.apps.create_namespaced_daemon_set(
            namespace, daemonset(NAME, image=OLD, strategy=ON_DELETE, annotations=ADVANCED)
        )
        await running_everywhere(kube, namespace, OLD, NODES)
        alone = await roll(kube, namespace, NEW)
        holder = await lease(kube, namespace)

        noisy = daemonset(NOISY, image=OLD, strategy=ON_DELETE, annotations=ADVANCED | too_long(0))
        await kube.apps.create_namespaced_daemon_set(namespace, noisy)
        first = await wait_for(
            lambda: told(kube, namespace, at_least=3), timeout=30, what="three Warnings on noisy"
        )
        assert sorted(event.message for event in first) == sorted(
            f"{annotation} is {len(value)} characters long, more than the {limit} read: it is "
            "not read, and no node is upgraded until it is shortened"
            for (annotation, value), limit in zip(
                too_long(0).items(), (16_384, 16_384, 256), strict=True
            )
        )

        edits_started = time.monotonic()
        rss_before = await asyncio.to_thread(resident_bytes, controller)
        editing = asyncio.create_task(edit(kube, namespace))
        beside = await roll(kube, namespace, OLD)
        await editing
        edits_seconds = time.monotonic() - edits_started
        rss_after = await asyncio.to_thread(resident_bytes, controller)

        warnings = await told(kube, namespace, at_least=0)
        assert warnings is not None
        assert await lease(kube, namespace) == holder

    print(
        f"rollout alone {alone:.1f} s, beside {EDITS} edits {beside:.1f} s; RSS "
        f"{rss_before / 2**20:.0f} -> {rss_after / 2**20:.0f} MiB; {len(warnings)} Warnings in "
        f"{edits_seconds:.0f} s"
    )
    # The noisy DaemonSet is never read, so it never costs the other's rollout a stall (before
    # the bounds: 8.4 s instead of 0.6 s); the slack is the lab's own jitter under 500 edits.
    assert beside <= 2 * alone + 3.0
    assert abs(rss_after - rss_before) <= RSS_SLACK_BYTES
    most = WARNING_BURST + math.ceil(edits_seconds / WARNING_REFILL_SECONDS) + 1
    assert 3 + 1 <= len(warnings) <= most
    assert {event.reason for event in warnings} == {ANNOTATION_TOO_LONG}
    assert all(len(event.message) <= 200 for event in warnings)
    # Nothing of the noisy DaemonSet was deleted: its values hold it.
    pods = await kube.pods(namespace, f"app={NOISY}")
    assert len(pods) == len(NODES)
    assert all(pod.metadata.deletion_timestamp is None for pod in pods)


async def edit(kube: LabHandle, namespace: str) -> None:
    for number in range(1, EDITS + 1):
        patch = {"metadata": {"annotations": too_long(number)}}
        await kube.apps.patch_namespaced_daemon_set(NOISY, namespace, patch)


async def told(kube: LabHandle, namespace: str, *, at_least: int) -> list[Any] | None:
    """The controller's Warnings on the noisy DaemonSet, once there are `at_least` of them."""
    found = [
        event
        for event in await events(kube, namespace, reason=ANNOTATION_TOO_LONG)
        if event.involved_object.name == NOISY
    ]
    return found if len(found) >= at_least else None
