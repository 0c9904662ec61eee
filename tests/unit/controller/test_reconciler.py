"""One reconcile, from the caches to the writes: which requests are sent, and which are not.

The caches are filled by listing the fake API and then left alone, so the cache lags behind the
controller's own writes exactly as it does between a request and its watch event.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable, Iterable
from dataclasses import dataclass
from typing import Any

import pytest

from edgerollout.controller.cluster_cache import ClusterCache
from edgerollout.controller.expectations import Expectations
from edgerollout.controller.reconciler import NotLeader, Outcome, Reconciler
from edgerollout.kube.api import (
    CONTROLLER_REVISIONS,
    DAEMONSETS,
    EVENTS,
    NODES,
    PODS,
    STRATEGIC_MERGE,
    ApiError,
    Resource,
)
from edgerollout.kube.recorder import EventRecorder

from ..domain.builders import NOW
from ..kube.fake_api import JSON, FakeApi
from ..kube.objects import (
    ADVANCED,
    MAX_UNAVAILABLE,
    NAMESPACE,
    NEW,
    OLD,
    STRATEGY,
    WEB_UID,
    daemonset_json,
    node_json,
    pod_json,
    revision_json,
)
from ..kube.running import caught_up, running

KEY = f"{NAMESPACE}/web"
ROLLING_ONE = {**ADVANCED, MAX_UNAVAILABLE: "1"}


def outdated_rollout() -> list[JSON]:
    """Two available outdated pods and one current pod, one per Ready node."""
    return [
        pod_json("web-a", node="edge-1", revision_hash=OLD),
        pod_json("web-b", node="edge-2", revision_hash=OLD),
        pod_json("web-c", node="edge-3", revision_hash=NEW),
    ]


@dataclass
class Controller:
    api: FakeApi
    cache: ClusterCache
    expectations: Expectations
    reconciler: Reconciler

    async def reconcile(self) -> Outcome:
        outcome = await self.reconciler.reconcile(KEY)
        await self.reconciler.reports_sent()
        return outcome

    def events(self) -> list[tuple[str, str, str]]:
        """(type, reason, message) of every Event sent."""
        return [
            (call.body["type"], call.body["reason"], call.body["message"])
            for call in self.api.calls_to("create", EVENTS)
            if call.body is not None
        ]

    def deletions(self) -> list[tuple[str | None, str | None, Any]]:
        return [(c.namespace, c.name, c.params["uid"]) for c in self.api.calls_to("delete", PODS)]


@contextlib.asynccontextmanager
async def controller(
    annotations: dict[str, str],
    pods: Iterable[JSON],
    *,
    update_strategy: str = "OnDelete",
    may_write: Callable[[], bool] = lambda: True,
) -> AsyncIterator[Controller]:
    api = FakeApi()
    api.put(
        DAEMONSETS,
        daemonset_json("web", annotations=annotations, update_strategy=update_strategy),
    )
    api.put(CONTROLLER_REVISIONS, revision_json("web-old", number=1, revision_hash=OLD))
    api.put(CONTROLLER_REVISIONS, revision_json("web-new", number=2, revision_hash=NEW))
    for name in ("edge-1", "edge-2", "edge-3"):
        api.put(NODES, node_json(name))
    for pod in pods:
        api.put(PODS, pod)
    cache = ClusterCache(api, namespace=None, enqueue=lambda key: None)
    expectations = Expectations()
    reconciler = Reconciler(
        api=api,
        cache=cache,
        recorder=EventRecorder(api, instance="controller-0"),
        expectations=expectations,
        may_write=may_write,
        clock=lambda: NOW,
    )
    async with running(*cache.informers):
        yield Controller(api, cache, expectations, reconciler)


async def test_rolling_update_deletes_the_first_outdated_pod_with_its_uid_and_reports_it() -> None:
    async with controller(ROLLING_ONE, outdated_rollout()) as c:
        outcome = await c.reconcile()

        assert c.deletions() == [(NAMESPACE, "web-a", "uid-web-a")]
        assert c.events() == [
            (
                "Normal",
                "SuccessfulDelete",
                "Deleted pod: web-a on node edge-1: outdated, deleted within max-unavailable",
            )
        ]
        assert outcome.deleted == 1
        assert outcome.requeue_after == 5.0
        assert c.expectations.pending(WEB_UID) == 1
        assert c.api.stored(PODS, "web-a", namespace=NAMESPACE) is None


async def test_second_reconcile_before_the_cache_catches_up_deletes_nothing_more() -> None:
    async with controller(ROLLING_ONE, outdated_rollout()) as c:
        await c.reconcile()
        writes = len(c.api.writes)

        outcome = await c.reconcile()

        assert outcome.deleted == 0
        assert len(c.api.writes) == writes
        assert c.deletions() == [(NAMESPACE, "web-a", "uid-web-a")]
        assert outcome.requeue_after == 5.0


async def test_next_outdated_pod_goes_once_the_replacement_is_seen_available() -> None:
    async with controller(ROLLING_ONE, outdated_rollout()) as c:
        await c.reconcile()
        terminating = c.api.publish(
            PODS, "MODIFIED", pod_json("web-a", node="edge-1", revision_hash=OLD, deleting=True)
        )
        await caught_up(c.cache.pods, terminating)

        while_terminating = await c.reconcile()
        assert while_terminating.deleted == 0
        assert c.expectations.pending(WEB_UID) == 0

        c.api.publish(PODS, "DELETED", terminating)
        replacement = c.api.publish(PODS, "ADDED", pod_json("web-d", node="edge-1"))
        await caught_up(c.cache.pods, replacement)

        after_replacement = await c.reconcile()
        assert after_replacement.deleted == 1
        assert c.deletions() == [
            (NAMESPACE, "web-a", "uid-web-a"),
            (NAMESPACE, "web-b", "uid-web-b"),
        ]


async def test_conflict_on_delete_drops_the_expectation_and_reports_nothing() -> None:
    async with controller(ROLLING_ONE, outdated_rollout()) as c:
        # Recreated under the same name since the cache saw it: the UID precondition fails.
        c.api.put(PODS, pod_json("web-a", node="edge-1", revision_hash=NEW, uid="uid-web-a-2"))

        outcome = await c.reconcile()

        assert c.deletions() == [(NAMESPACE, "web-a", "uid-web-a")]
        assert c.api.stored(PODS, "web-a", namespace=NAMESPACE) is not None
        assert outcome.deleted == 0
        assert outcome.requeue_after is None
        assert c.expectations.pending(WEB_UID) == 0
        assert c.events() == []


async def test_pod_already_gone_keeps_its_node_counted_and_reports_nothing() -> None:
    async with controller(ROLLING_ONE, outdated_rollout()) as c:
        c.api.remove(PODS, "web-a", namespace=NAMESPACE)

        outcome = await c.reconcile()
        again = await c.reconcile()

        assert c.deletions() == [(NAMESPACE, "web-a", "uid-web-a")]
        assert (outcome.deleted, again.deleted) == (0, 0)
        assert c.expectations.pending(WEB_UID) == 1
        assert c.events() == []


async def test_failed_delete_drops_the_expectation_warns_and_raises() -> None:
    async with controller(ROLLING_ONE, outdated_rollout()) as c:
        c.api.fail("delete", PODS, ApiError(500, "InternalError", "etcd timeout"))

        with pytest.raises(ApiError, match="etcd timeout"):
            await c.reconcile()

        assert c.expectations.pending(WEB_UID) == 0
        assert c.events() == [
            (
                "Warning",
                "FailedDelete",
                "Error deleting pod web-a: 500 InternalError: etcd timeout",
            )
        ]


async def test_not_leader_raises_before_any_write() -> None:
    async with controller(ROLLING_ONE, outdated_rollout(), may_write=lambda: False) as c:
        with pytest.raises(NotLeader):
            await c.reconcile()

        assert c.api.writes == []
        assert c.expectations.pending(WEB_UID) == 0


async def test_leadership_lost_after_a_delete_drops_its_event_and_stops_the_next_write() -> None:
    leading = iter([True, False, False])
    async with controller(ROLLING_ONE, outdated_rollout(), may_write=lambda: next(leading)) as c:
        outcome = await c.reconcile()

        assert outcome.deleted == 1
        assert [call.verb for call in c.api.writes] == ["delete"]
        assert c.events() == []  # the deletion's report found this replica no longer leading
        cached = c.cache.daemonsets.get(KEY)
        assert cached is not None
        c.expectations.forget(cached.view.uid)  # as if the replacement had been seen
        with pytest.raises(NotLeader):
            await c.reconcile()
        assert [call.verb for call in c.api.writes] == ["delete"]


async def test_a_deletions_event_does_not_hold_the_reconcile() -> None:
    async with controller(ROLLING_ONE, outdated_rollout()) as c:
        answer = asyncio.Event()
        create = c.api.create

        async def slow_create(
            resource: Resource, body: JSON, *, namespace: str | None = None
        ) -> JSON:
            await answer.wait()  # the API server has not answered the Event's POST yet
            return await create(resource, body, namespace=namespace)

        c.api.create = slow_create  # type: ignore[method-assign]
        outcome = await asyncio.wait_for(c.reconciler.reconcile(KEY), timeout=5)

        assert outcome.deleted == 1
        assert c.events() == []
        answer.set()
        await c.reconciler.reports_sent()
        assert [reason for _, reason, _ in c.events()] == ["SuccessfulDelete"]


async def test_ota_patches_pod_status_with_exactly_one_condition_per_pod() -> None:
    pods = [
        pod_json("web-a", node="edge-1", revision_hash=OLD),
        pod_json(
            "web-b",
            node="edge-2",
            revision_hash=OLD,
            conditions=[
                {
                    "type": "PodNeedUpgrade",
                    "status": "True",
                    "message": f"controllerrevision: {NEW}",
                    "lastTransitionTime": "2025-03-01T09:00:00Z",
                }
            ],
        ),
        pod_json("web-c", node="edge-3", revision_hash=NEW),
    ]
    async with controller({STRATEGY: "OTA", MAX_UNAVAILABLE: "abc"}, pods) as c:
        outcome = await c.reconcile()

        patches = c.api.calls_to("patch", PODS)
        assert [
            (call.namespace, call.name, call.params["subresource"], call.params["content_type"])
            for call in patches
        ] == [
            (NAMESPACE, "web-a", "status", STRATEGIC_MERGE),
            (NAMESPACE, "web-c", "status", STRATEGIC_MERGE),
        ]
        assert [call.body for call in patches] == [
            {
                "metadata": {"uid": "uid-web-a"},
                "status": {
                    "conditions": [
                        {
                            "type": "PodNeedUpgrade",
                            "status": "True",
                            "reason": "",
                            "message": f"controllerrevision: {NEW}",
                            "lastTransitionTime": "2025-03-01T12:00:00Z",
                        }
                    ]
                },
            },
            {
                "metadata": {"uid": "uid-web-c"},
                "status": {
                    "conditions": [
                        {
                            "type": "PodNeedUpgrade",
                            "status": "False",
                            "reason": "",
                            "message": f"controllerrevision: {NEW}",
                            "lastTransitionTime": "2025-03-01T12:00:00Z",
                        }
                    ]
                },
            },
        ]
        assert outcome.conditions_written == 2
        assert c.deletions() == []
        assert c.events() == []


async def test_ota_status_patch_of_a_vanished_pod_is_skipped() -> None:
    pods = [
        pod_json("web-a", node="edge-1", revision_hash=OLD),
        pod_json("web-b", node="edge-2", revision_hash=OLD),
    ]
    async with controller({STRATEGY: "OTA"}, pods) as c:
        c.api.remove(PODS, "web-a", namespace=NAMESPACE)

        outcome = await c.reconcile()

        assert [call.name for call in c.api.calls_to("patch", PODS)] == ["web-a", "web-b"]
        assert outcome.conditions_written == 1


async def test_ota_status_patch_of_a_replaced_pod_is_skipped() -> None:
    async with controller(
        {STRATEGY: "OTA"}, [pod_json("web-a", node="edge-1", revision_hash=OLD)]
    ) as c:
        c.api.put(PODS, pod_json("web-a", node="edge-1", uid="uid-web-a-2"))

        outcome = await c.reconcile()

        assert [call.name for call in c.api.calls_to("patch", PODS)] == ["web-a"]
        assert outcome.conditions_written == 0


async def test_invalid_max_unavailable_warns_once_and_deletes_nothing() -> None:
    async with controller({**ADVANCED, MAX_UNAVAILABLE: "abc"}, outdated_rollout()) as c:
        await c.reconcile()
        await c.reconcile()
        outcome = await c.reconcile()

        assert c.events() == [
            (
                "Warning",
                "InvalidMaxUnavailable",
                'apps.openyurt.io/max-unavailable is "abc", which is neither an integer such as '
                '"3" nor a percentage such as "30%": no pod is deleted until it is fixed',
            )
        ]
        assert c.deletions() == []
        assert outcome.deleted == 0
        assert [call.verb for call in c.api.writes] == ["create"]


@pytest.mark.parametrize(
    ("annotations", "update_strategy", "reason"),
    [
        pytest.param({STRATEGY: "rolling"}, "OnDelete", "UnknownUpdateStrategy", id="unknown"),
        pytest.param(ADVANCED, "RollingUpdate", "UpdateStrategyNotOnDelete", id="not-on-delete"),
    ],
)
async def test_misconfigured_daemonset_is_warned_once_not_per_reconcile(
    annotations: dict[str, str], update_strategy: str, reason: str
) -> None:
    async with controller(annotations, outdated_rollout(), update_strategy=update_strategy) as c:
        for _ in range(3):
            plan = (await c.reconcile()).plan
            assert plan is not None
            assert [notice.reason for notice in plan.notices] == [reason]

        assert [(kind, why) for kind, why, _ in c.events()] == [("Warning", reason)]
        assert c.api.writes == c.api.calls_to("create", EVENTS)


async def test_misconfigured_daemonset_is_warned_again_once_the_annotation_came_back() -> None:
    unknown = {STRATEGY: "rolling"}
    async with controller(unknown, outdated_rollout()) as c:
        await c.reconcile()
        for annotations in ({}, unknown):
            changed = c.api.publish(
                DAEMONSETS, "MODIFIED", daemonset_json("web", annotations=annotations)
            )
            await caught_up(c.cache.daemonsets, changed)
            await c.reconcile()

        assert [why for _, why, _ in c.events()] == ["UnknownUpdateStrategy"] * 2
