"""Pre-pull before delete on the lab (design §13.5): the real controller process, six KWOK nodes,
pull Jobs run by the lab's Job controller and completed (or failed, for the unpullable image) by
KWOK's Stages.

Every pod event of the rollout is kept in the order the API server sent it, and the rules are
checked on that record, not on the controller's word: each old pod, when it is first seen going,
already carries the outcome of its pull; and at no event do more old, live pods hold a pull of the
new revision than the window (twice max-unavailable). With a download window, nothing is asked
for while it is closed, and no more old pods pull at once than max-pulling.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Mapping
from typing import Any

import pytest

from edgerollout.domain.vocabulary import (
    MAX_PULLING_ANNOTATION,
    POD_IMAGE_READY,
    PREPULL_ANNOTATION,
    PREPULL_FAILED,
    PREPULL_WINDOW_ANNOTATION,
    SUCCESSFUL_DELETE,
    WAIT_PULL_IMAGE,
)
from edgerollout_lab.kwok_stages import UNPULLABLE_IMAGE
from tests.e2e.support.controller_process import ControllerProcess
from tests.e2e.support.lab import (
    ALL_DAY,
    LabHandle,
    closed_window,
    condition,
    deleted_on,
    events,
    hold_for,
    images,
    set_image,
    wait_for,
)
from tests.e2e.support.seed import (
    NAME,
    NEW,
    OLD,
    SELECTOR,
    newest_revision_hash,
    running_everywhere,
)
from tests.e2e.support.unavailability_watcher import UnavailabilityWatcher
from tests.e2e.test_staged_rollout import (
    SIX,
    advanced_rolling_update,
    annotate,
    kept,
    pods_now,
    seed_six,
)

pytestmark = pytest.mark.lab(nodes=6)

HOLD_SECONDS = 5
PREPULL = {PREPULL_ANNOTATION: "true"}


class PodRecord(UnavailabilityWatcher):
    """The unavailability watcher, keeping also every pod as each event showed it, in order
    (first the pods listed when it started)."""

    def __init__(self, kube: LabHandle, namespace: str) -> None:
        super().__init__(kube.core, namespace, selector=SELECTOR, nodes=SIX)
        self.seen: list[tuple[str, Any]] = []

    async def _list(self) -> str:
        version = await super()._list()
        self.seen += [("LISTED", pod) for pod in self._pods.values()]
        return version

    def _apply(self, kind: str, pod: Any) -> None:
        if kind in ("ADDED", "MODIFIED", "DELETED"):
            self.seen.append((kind, pod))
        super()._apply(kind, pod)

    def replay(self, revision: str) -> tuple[dict[str, tuple[str, str] | None], int]:
        """For each old pod, its `PodImageReady` (status, reason) for `revision` when it was first
        seen going (None: none naming it); and the most old, live pods holding a pull of
        `revision` (asked for, done or failed) at any one event."""
        going, most, _ = self.replay_pulls(revision)
        return going, most

    def replay_pulls(self, revision: str) -> tuple[dict[str, tuple[str, str] | None], int, int]:
        """`replay`'s two answers, and the most old, live pods pulling `revision` (asked for, no
        result yet) at any one event."""
        going: dict[str, tuple[str, str] | None] = {}
        holding: dict[str, bool] = {}
        pulling: dict[str, bool] = {}
        most = most_pulling = 0
        for kind, pod in self.seen:
            uid = pod.metadata.uid
            old = images(pod) == [OLD]
            pull = condition(pod, POD_IMAGE_READY)
            names = pull is not None and pull.message == f"controllerrevision: {revision}"
            gone = kind == "DELETED" or pod.metadata.deletion_timestamp is not None
            if old and gone and uid not in going:
                going[uid] = (str(pull.status), pull.reason) if pull is not None and names else None
            holding[uid] = old and not gone and names
            pulling[uid] = holding[uid] and pull is not None and pull.reason == WAIT_PULL_IMAGE
            most = max(most, sum(holding.values()))
            most_pulling = max(most_pulling, sum(pulling.values()))
        return going, most, most_pulling


@contextlib.asynccontextmanager
async def prepull_rollout(
    kube: LabHandle,
    namespace: str,
    max_unavailable: str,
    image: str,
    annotations: Mapping[str, str] = PREPULL,
) -> AsyncIterator[tuple[dict[str, str], PodRecord]]:
    """The seed's DaemonSet on the six nodes, pre-pull first with `max_unavailable`, moved to
    `image` while every pod event is recorded; (node -> the UID of its first pod, the record)."""
    wanted = advanced_rolling_update(max_unavailable, **annotations)
    before = await seed_six(kube, namespace, wanted)
    async with PodRecord(kube, namespace) as record:
        await set_image(kube, namespace, NAME, image)
        yield before, record


async def test_each_pod_is_deleted_only_once_its_image_is_pulled_two_nodes_ahead_at_most(
    kube: LabHandle, namespace: str, controller: ControllerProcess
) -> None:
    async with prepull_rollout(kube, namespace, "1", NEW) as (before, record):
        after = await running_everywhere(kube, namespace, NEW, SIX, timeout=60)
        revision = await newest_revision_hash(kube, namespace)
        going, most = record.replay(revision)
        unavailable = record.max_unavailable

    assert not set(before.values()) & set(after.values())
    assert going == dict.fromkeys(before.values(), ("True", "PullImageSuccess")), record.timeline()
    assert most == 2, record.timeline()  # the window: twice max-unavailable 1, and it was used
    assert unavailable == 1, record.timeline()
    assert await deleted_on(kube, namespace) == SIX
    assert {event.reason for event in await events(kube, namespace)} == {SUCCESSFUL_DELETE}


async def test_a_pull_that_fails_falls_back_to_deleting_with_a_warning_per_pod(
    kube: LabHandle, namespace: str, controller: ControllerProcess
) -> None:
    async with prepull_rollout(kube, namespace, "2", UNPULLABLE_IMAGE) as (before, record):

        async def two_deleted() -> list[str] | None:
            deleted = await deleted_on(kube, namespace)
            warned = await events(kube, namespace, reason=PREPULL_FAILED)
            return deleted if len(deleted) == 2 and len(warned) == 2 else None

        deleted = await wait_for(two_deleted, timeout=30, what="two pods deleted, two Warnings")

        # The replacements cannot pull their image either: broken, they spend the budget of 2.
        async def rest_untouched() -> bool:
            grouped = await pods_now(kube, namespace)
            return all(kept(grouped.get(n, []), before[n]) for n in SIX if n not in deleted)

        await hold_for(rest_untouched, seconds=HOLD_SECONDS, what="no deletion past the budget")
        revision = await newest_revision_hash(kube, namespace)
        going, most = record.replay(revision)

    # The first nodes of the window, whichever pulls were reported failed first.
    assert set(deleted) <= {"edge-1", "edge-2", "edge-3", "edge-4"}
    assert going == {before[n]: ("False", "PullImageFail") for n in deleted}, record.timeline()
    assert most <= 4, record.timeline()
    warnings = await events(kube, namespace, reason=PREPULL_FAILED)
    assert {event.type for event in warnings} == {"Warning"}
    assert sorted(
        event.message.split(" on node ")[1].split(" ")[0] for event in warnings
    ) == sorted(deleted)
    for event in warnings:
        assert event.message.startswith("Deleting pod nginx-daemonset-")
        assert event.message.endswith(
            "before its new images are there: its pre-pull failed (PullImageFail); its "
            "replacement pulls them after the deletion, as without pre-pull"
        )
    assert await deleted_on(kube, namespace) == sorted(deleted)


async def test_a_download_window_pulls_only_while_open_and_max_pulling_nodes_at_once(
    kube: LabHandle, namespace: str, controller: ControllerProcess
) -> None:
    closed = {**PREPULL, PREPULL_WINDOW_ANNOTATION: closed_window()}
    wanted = {**closed, MAX_PULLING_ANNOTATION: "3"}
    async with prepull_rollout(kube, namespace, "1", NEW, wanted) as (before, record):
        revision = await newest_revision_hash(kube, namespace)

        async def nothing_asked() -> bool:
            grouped = await pods_now(kube, namespace)
            return all(kept(grouped.get(n, []), before[n]) for n in SIX) and not any(
                (pull := condition(pod, POD_IMAGE_READY)) is not None
                and pull.message == f"controllerrevision: {revision}"
                for pods in grouped.values()
                for pod in pods
            )

        await hold_for(nothing_asked, seconds=HOLD_SECONDS, what="no pull while it is closed")
        await annotate(kube, namespace, {PREPULL_WINDOW_ANNOTATION: ALL_DAY})
        after = await running_everywhere(kube, namespace, NEW, SIX, timeout=60)
        going, holding, pulling = record.replay_pulls(revision)
        unavailable = record.max_unavailable

    assert not set(before.values()) & set(after.values())
    assert going == dict.fromkeys(before.values(), ("True", "PullImageSuccess")), record.timeline()
    # Three pulls at once, not the window ahead of the budget (two): more nodes held their
    # images than that while the budget of 1 replaced them one by one.
    assert pulling <= 3, record.timeline()
    assert holding >= 3, record.timeline()
    assert unavailable == 1, record.timeline()
    assert await deleted_on(kube, namespace) == SIX
