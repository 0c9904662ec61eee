"""One reconcile, from the caches to the writes: which requests are sent, and which are not.

The caches are filled by listing the fake API and then left alone, so the cache lags behind the
controller's own writes exactly as it does between a request and its watch event.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import itertools
import logging
from collections.abc import AsyncIterator, Callable, Iterable
from dataclasses import dataclass
from typing import Any

import pytest
from prometheus_client import REGISTRY

from edgerollout.cli.logging_setup import structured_fields
from edgerollout.controller.cluster_cache import ClusterCache
from edgerollout.controller.reconciler import NotLeader, Outcome, Reconciler
from edgerollout.controller.rollout_state import RolloutStates
from edgerollout.domain.events import EventType, Notice
from edgerollout.domain.planning.prepull import job_name
from edgerollout.domain.vocabulary import (
    PREPULL_ANNOTATION,
    PREPULL_LABEL,
    TEMPLATE_GENERATION_ANNOTATION,
)
from edgerollout.kube.api import (
    CONTROLLER_REVISIONS,
    DAEMONSETS,
    EVENTS,
    JOBS,
    NODES,
    PODS,
    STRATEGIC_MERGE,
    ApiError,
    Resource,
)
from edgerollout.kube.recorder import EventRecorder
from edgerollout.settings import CONTROLLER, ControllerSettings, PrepullSettings

from ..domain.builders import NOW
from ..kube.fake_api import JSON, FakeApi, unreachable
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
from ..kube.running import caught_up, every_informer, published, running_cache, until

KEY = f"{NAMESPACE}/web"
ROLLING_ONE = {**ADVANCED, MAX_UNAVAILABLE: "1"}


def newest(kind: str, status: str, reason: str = "", *, at: str = "2025-03-01T12:00:00Z") -> JSON:
    """A pod condition about the newest revision, written `at` (by default NOW)."""
    return {
        "type": kind,
        "status": status,
        "reason": reason,
        "message": f"controllerrevision: {NEW}",
        "lastTransitionTime": at,
    }


def status_patch(uid: str, condition: JSON) -> JSON:
    """The body of the status patch that writes one condition on the pod of `uid`."""
    return {"metadata": {"uid": uid}, "status": {"conditions": [condition]}}


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
    states: RolloutStates
    reconciler: Reconciler

    def pending(self) -> int:
        """The DaemonSet's deletions in flight."""
        state = self.states.get(KEY)
        return state.deletions.pending if state is not None else 0

    def forget_deletions(self) -> None:
        """As if the replacements of every pod deleted so far had been seen."""
        state = self.states.get(KEY)
        assert state is not None
        for _, _, uid in self.deletions():
            state.deletions.drop(uid)

    async def publish(self, resource: Resource, event_type: str, obj: JSON) -> None:
        """Publish a watch event and wait until the cache has applied it."""
        await published(self.api, every_informer(self.cache), resource, event_type, obj)

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

    def pauses(self) -> list[Any]:
        """The bodies of the DaemonSet patches (not of its status)."""
        return [
            call.body
            for call in self.api.calls_to("patch", DAEMONSETS)
            if call.params.get("subresource") is None
        ]

    def rollout_conditions(self) -> list[tuple[str, str, str]]:
        """(status, reason, message) of every rollout condition written on the DaemonSet."""
        written = []
        for call in self.api.calls_to("patch", DAEMONSETS):
            if call.params.get("subresource") == "status" and call.body is not None:
                (condition,) = call.body["status"]["conditions"]
                assert condition["type"] == "edgerollout.io/Progressing"
                written.append((condition["status"], condition["reason"], condition["message"]))
        return written


@contextlib.asynccontextmanager
async def controller(
    annotations: dict[str, str],
    pods: Iterable[JSON],
    *,
    update_strategy: str = "OnDelete",
    may_write: Callable[[], bool] = lambda: True,
    settings: ControllerSettings = CONTROLLER,
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
    states = RolloutStates(settings=CONTROLLER.reconcile, clock=lambda: 0.0)
    cache = ClusterCache(api, namespace=None, enqueue=lambda key: None, changes=states)
    recorder = EventRecorder(api, instance="controller-0")
    reconciler = Reconciler(
        cache=cache,
        states=states,
        api=api,
        recorder=recorder,
        may_write=may_write,
        clock=lambda: NOW,
        settings=settings,
    )
    async with running_cache(cache):
        yield Controller(api, cache, states, reconciler)


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
        assert c.pending() == 1
        assert c.api.stored(PODS, "web-a", namespace=NAMESPACE) is None
        # What paces the next reconcile of the key: the nodes its plan counted.
        assert outcome.nodes == 3


async def test_each_plan_is_timed_once_and_a_skipped_one_not_at_all() -> None:
    def plans() -> tuple[float, float]:
        return (
            REGISTRY.get_sample_value("edgerollout_plan_seconds_count") or 0.0,
            REGISTRY.get_sample_value("edgerollout_plan_cpu_seconds_count") or 0.0,
        )

    async with controller(ROLLING_ONE, outdated_rollout()) as c:
        wall, cpu = plans()
        await c.reconcile()
        await c.reconcile()
        assert plans() == (wall + 2, cpu + 2)
        await c.reconciler.reconcile("default/absent")
        assert plans() == (wall + 2, cpu + 2)


async def test_a_daemonset_whose_pods_are_not_listed_yet_is_not_planned() -> None:
    """Planned on no pods, a rollout would read every node as without one; it waits for the end
    of its pod cache's first list instead, which enqueues it again."""
    api = FakeApi()
    api.put(DAEMONSETS, daemonset_json("web", annotations=ROLLING_ONE))
    for pod in outdated_rollout():
        api.put(PODS, pod)
    api.fail("list", PODS, unreachable(), times=None)
    enqueued: list[str] = []
    states = RolloutStates(settings=CONTROLLER.reconcile, clock=lambda: 0.0)
    cache = ClusterCache(api, namespace=None, enqueue=enqueued.append, changes=states)
    reconciler = Reconciler(
        cache=cache,
        states=states,
        api=api,
        recorder=EventRecorder(api, instance="controller-0"),
        may_write=lambda: True,
        clock=lambda: NOW,
    )
    running = asyncio.create_task(cache.run())
    try:
        await until(lambda: len(api.calls_to("list", PODS)) > 0, what="the pods' first list")

        outcome = await reconciler.reconcile(KEY)

        assert outcome == Outcome(plan=None)
        assert api.writes == []
        assert states.get(KEY) is None
        assert enqueued == [KEY]  # the DaemonSet's own arrival, not its pods' list
    finally:
        running.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await running


async def test_a_revision_seen_before_its_daemonset_waits_for_the_daemonset() -> None:
    """The revision of a template change can reach the cache before the DaemonSet's own event,
    and so before an annotation changed first: nothing is planned on the old annotations (here
    max-unavailable 1, changed to pre-pull first with the template) until the DaemonSet is seen."""
    async with controller(ROLLING_ONE, outdated_rollout()) as c:
        newer = revision_json("web-newer", number=3, revision_hash="newer", generation=3)
        await c.publish(CONTROLLER_REVISIONS, "ADDED", newer)

        waiting = await c.reconcile()

        assert waiting == Outcome(plan=None)
        assert c.api.writes == []

        changed = daemonset_json("web", annotations={**ROLLING_ONE, PREPULL_ANNOTATION: "true"})
        changed["metadata"]["generation"] = 3
        changed["metadata"]["annotations"][TEMPLATE_GENERATION_ANNOTATION] = "3"
        await c.publish(DAEMONSETS, "MODIFIED", changed)
        planned = await c.reconcile()

        # Pre-pull first: the outdated pods are asked for their images (a window of twice
        # max-unavailable), none is deleted yet.
        assert planned.deleted == 0
        assert c.deletions() == []
        assert [call.name for call in c.api.calls_to("patch", PODS)] == ["web-a", "web-b"]


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
        await caught_up(c.cache.pods[WEB_UID], terminating)

        while_terminating = await c.reconcile()
        assert while_terminating.deleted == 0
        assert c.pending() == 1  # kept until the replacement is seen (design §4.5)

        c.api.publish(PODS, "DELETED", terminating)
        await c.publish(PODS, "ADDED", pod_json("web-d", node="edge-1"))

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
        assert c.pending() == 0
        assert c.events() == []


async def test_pod_already_gone_keeps_its_node_counted_and_reports_nothing() -> None:
    async with controller(ROLLING_ONE, outdated_rollout()) as c:
        c.api.remove(PODS, "web-a", namespace=NAMESPACE)

        outcome = await c.reconcile()
        again = await c.reconcile()

        assert c.deletions() == [(NAMESPACE, "web-a", "uid-web-a")]
        assert (outcome.deleted, again.deleted) == (0, 0)
        assert c.pending() == 1
        assert c.events() == []


async def test_failed_delete_drops_the_expectation_warns_and_raises() -> None:
    async with controller(ROLLING_ONE, outdated_rollout()) as c:
        c.api.fail("delete", PODS, ApiError(500, "InternalError", "etcd timeout"))

        with pytest.raises(ApiError, match="etcd timeout"):
            await c.reconcile()

        assert c.pending() == 0
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
        assert c.pending() == 0


async def test_leadership_lost_after_a_delete_drops_its_event_and_stops_the_next_write(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="edgerollout.controller")
    leading = itertools.chain([True], itertools.repeat(False))
    async with controller(ROLLING_ONE, outdated_rollout(), may_write=lambda: next(leading)) as c:
        with pytest.raises(NotLeader):  # the rollout condition's write, after the deletion
            await c.reconcile()

        assert [call.verb for call in c.api.writes] == ["delete"]
        await c.reconciler.reports_sent()
        assert c.events() == []  # the deletion's report found this replica no longer leading
        (dropped,) = (r for r in caplog.records if r.getMessage().startswith("event not"))
        assert structured_fields(dropped) == {"daemonset": KEY, "reason": "SuccessfulDelete"}
        c.forget_deletions()
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
            status_patch("uid-web-a", newest("PodNeedUpgrade", "True")),
            status_patch("uid-web-c", newest("PodNeedUpgrade", "False")),
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
        assert [call.verb for call in c.api.writes] == ["create", "patch"]
        # Once, though its echo never came: the write is remembered until it expires.
        assert c.rollout_conditions() == [
            (
                "False",
                "InvalidAnnotation",
                "cannot follow InvalidMaxUnavailable; 1 of 3 nodes updated, 0 offline, 0 broken, "
                "0 held, 2 to go (generation 2)",
            )
        ]


async def test_a_warning_held_back_by_its_rate_is_looked_at_again_when_it_may_be_sent() -> None:
    async with controller({**ADVANCED, MAX_UNAVAILABLE: "abc"}, outdated_rollout()) as c:
        recorder = c.reconciler.recorder
        recorder.clock = lambda: 0.0
        cached = c.cache.daemonsets.get(KEY)
        assert cached is not None
        for index in range(64):  # the DaemonSet's burst of Warnings, spent on other values
            notice = Notice(
                type=EventType.WARNING,
                reason="InvalidWaves",
                message=f"w{index}",
                subject=str(index),
            )
            assert await recorder.emit(cached.view, notice)

        held_back = await c.reconcile()
        recorder.clock = lambda: 60.0
        told = await c.reconcile()

        assert (held_back.requeue_after, told.requeue_after) == (60.0, None)
        assert [reason for _, reason, _ in c.events()] == ["InvalidWaves"] * 64 + [
            "InvalidMaxUnavailable"
        ]
        assert c.deletions() == []


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
        assert [(status, why) for status, why, _ in c.rollout_conditions()] == [
            ("False", "InvalidAnnotation")
        ]
        assert len(c.api.writes) == 2


async def test_misconfigured_daemonset_is_warned_again_once_the_annotation_came_back() -> None:
    unknown = {STRATEGY: "rolling"}
    async with controller(unknown, outdated_rollout()) as c:
        await c.reconcile()
        for annotations in ({}, unknown):
            await c.publish(DAEMONSETS, "MODIFIED", daemonset_json("web", annotations=annotations))
            await c.reconcile()

        assert [why for _, why, _ in c.events()] == ["UnknownUpdateStrategy"] * 2


def waiting_for_pull(name: str, node: str) -> JSON:
    """An outdated pod whose node asked for the newest revision's images (the agent's imagepull)."""
    return pod_json(
        name,
        node=node,
        revision_hash=OLD,
        conditions=[newest("PodImageReady", "False", "WaitPullImage", at="2025-03-01T11:00:00Z")],
    )


def pull_job_json(name: str, *, for_pod: str, succeeded: bool, owner_uid: str = "") -> JSON:
    """A finished pull Job, owned by the pod it names (or by `owner_uid`)."""
    owner = {"apiVersion": "v1", "kind": "Pod", "name": for_pod, "uid": f"uid-{for_pod}"}
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": name,
            "namespace": NAMESPACE,
            "labels": {PREPULL_LABEL: for_pod},
            "ownerReferences": [{**owner, "uid": owner_uid or owner["uid"]}],
        },
        "status": {
            "conditions": [{"type": "Complete" if succeeded else "Failed", "status": "True"}]
        },
    }


async def test_ota_starts_a_pull_job_on_the_node_of_a_pod_that_asked_for_one() -> None:
    async with controller({STRATEGY: "OTA"}, [waiting_for_pull("web-a", "edge-1")]) as c:
        outcome = await c.reconcile()

        creates = c.api.calls_to("create", JOBS)
        assert [(call.namespace, call.body is not None) for call in creates] == [(NAMESPACE, True)]
        body = creates[0].body
        assert body is not None
        pod = c.cache.pod(f"{NAMESPACE}/web-a")
        assert pod is not None
        assert body["metadata"]["name"] == job_name(pod.view, NEW)
        assert body["metadata"]["ownerReferences"] == [
            {"apiVersion": "v1", "kind": "Pod", "name": "web-a", "uid": "uid-web-a"}
        ]
        assert body["spec"]["template"]["spec"]["nodeName"] == "edge-1"
        assert body["spec"]["activeDeadlineSeconds"] == 600
        assert body["spec"]["template"]["spec"]["initContainers"][0]["image"] == (
            "busybox:1.37.0-musl"
            "@sha256:fc6dddc4c44b1bfe37f41cae8e67d1693828e8f42a91862816d7953e2c9d3f23"
        )
        # The only pod status patch is its PodNeedUpgrade mark.
        assert [
            call.body["status"]["conditions"][0]["type"]
            for call in c.api.calls_to("patch", PODS)
            if call.body
        ] == ["PodNeedUpgrade"]
        assert outcome.deleted == 0
        assert c.deletions() == []


async def test_pull_jobs_follow_the_controllers_prepull_settings() -> None:
    prepull = PrepullSettings(toolbox_image="registry.example.com/toolbox:1", deadline_seconds=90)
    async with controller(
        {STRATEGY: "OTA"},
        [waiting_for_pull("web-a", "edge-1")],
        settings=dataclasses.replace(CONTROLLER, prepull=prepull),
    ) as c:
        await c.reconcile()

        (create,) = c.api.calls_to("create", JOBS)
        assert create.body is not None
        assert create.body["spec"]["activeDeadlineSeconds"] == 90
        assert create.body["spec"]["template"]["spec"]["initContainers"][0]["image"] == (
            "registry.example.com/toolbox:1"
        )


async def test_ota_reports_a_finished_pull_job_on_its_pod_and_deletes_the_job() -> None:
    async with controller({STRATEGY: "OTA"}, [waiting_for_pull("web-a", "edge-1")]) as c:
        await c.reconcile()
        pod = c.cache.pod(f"{NAMESPACE}/web-a")
        assert pod is not None
        name = job_name(pod.view, NEW)
        await c.publish(JOBS, "ADDED", pull_job_json(name, for_pod="web-a", succeeded=True))
        patches_before = len(c.api.calls_to("patch", PODS))

        outcome = await c.reconcile()

        reports = c.api.calls_to("patch", PODS)[patches_before:]
        assert [call.body for call in reports] == [
            status_patch("uid-web-a", newest("PodImageReady", "True", "PullImageSuccess"))
        ]
        assert [
            (call.name, call.params["propagation"]) for call in c.api.calls_to("delete", JOBS)
        ] == [(name, "Background")]
        assert len(c.api.calls_to("create", JOBS)) == 1  # not started again
        assert outcome.conditions_written == 1


async def test_a_pull_job_seen_gone_before_its_report_is_not_started_again() -> None:
    """The Job's deletion and the report on the pod come from two watches: the Job can be seen
    gone while the pod still shows its request. No second Job is started for that pod."""
    async with controller({STRATEGY: "OTA"}, [waiting_for_pull("web-a", "edge-1")]) as c:
        await c.reconcile()
        pod = c.cache.pod(f"{NAMESPACE}/web-a")
        assert pod is not None
        done = pull_job_json(job_name(pod.view, NEW), for_pod="web-a", succeeded=True)
        await c.publish(JOBS, "ADDED", done)
        await c.reconcile()  # reported, and the Job deleted
        # The deletion's event, seen before the report's echo.
        c.api.send(JOBS, {"type": "DELETED", "object": done})
        job_key = f"{NAMESPACE}/{done['metadata']['name']}"
        await until(lambda: c.cache.jobs.get(job_key) is None, what="the Job's deletion seen")

        again = await c.reconcile()

        assert len(c.api.calls_to("create", JOBS)) == 1
        assert again.conditions_written == 0

        reported = waiting_for_pull("web-a", "edge-1")
        reported["status"]["conditions"][-1] = newest("PodImageReady", "True", "PullImageSuccess")
        await c.publish(PODS, "MODIFIED", reported)
        await c.reconcile()
        assert len(c.api.calls_to("create", JOBS)) == 1


def image_ready(name: str, node: str, status: str, reason: str) -> JSON:
    """An outdated pod whose PodImageReady for the newest revision says (status, reason)."""
    condition = newest("PodImageReady", status, reason)
    return pod_json(name, node=node, revision_hash=OLD, conditions=[condition])


async def test_prepull_first_asks_pulls_the_images_and_only_then_deletes() -> None:
    async with controller(
        {**ROLLING_ONE, "edgerollout.io/prepull": "true"}, outdated_rollout()
    ) as c:
        first = await c.reconcile()

        # Both outdated pods are asked for (a window of twice max-unavailable); nothing goes.
        asked = [
            (call.name, call.body["status"]["conditions"][0])
            for call in c.api.calls_to("patch", PODS)
            if call.body
        ]
        assert asked == [
            (
                name,
                newest("PodImageReady", "False", "WaitPullImage"),
            )
            for name in ("web-a", "web-b")
        ]
        assert first.deleted == 0
        assert first.requeue_after == 10.0  # when the requests' echoes would be overdue
        assert c.api.calls_to("create", JOBS) == []

        for name, node in (("web-a", "edge-1"), ("web-b", "edge-2")):
            echo = image_ready(name, node, "False", "WaitPullImage")
            await c.publish(PODS, "MODIFIED", echo)
        pulling = await c.reconcile()
        jobs = [call.body for call in c.api.calls_to("create", JOBS) if call.body]
        assert [job["spec"]["template"]["spec"]["nodeName"] for job in jobs] == [
            "edge-1",
            "edge-2",
        ]
        assert pulling.deleted == 0

        pod = c.cache.pod(f"{NAMESPACE}/web-b")
        assert pod is not None
        done = pull_job_json(job_name(pod.view, NEW), for_pod="web-b", succeeded=True)
        await c.publish(JOBS, "ADDED", done)
        reported = await c.reconcile()
        assert reported.conditions_written == 1
        assert reported.deleted == 0  # deleted once the report is seen

        await c.publish(PODS, "MODIFIED", image_ready("web-b", "edge-2", "True", "x"))
        going = await c.reconcile()
        assert c.deletions() == [(NAMESPACE, "web-b", "uid-web-b")]
        assert going.deleted == 1
        assert [reason for _, reason, _ in c.events()] == ["SuccessfulDelete"]


async def test_prepull_first_deletes_a_pod_whose_pull_failed_and_warns() -> None:
    pods = [image_ready("web-a", "edge-1", "False", "PullImageFail"), *outdated_rollout()[1:]]
    async with controller({**ROLLING_ONE, "edgerollout.io/prepull": "true"}, pods) as c:
        await c.reconcile()

        assert c.deletions() == [(NAMESPACE, "web-a", "uid-web-a")]
        assert c.events() == [
            (
                "Warning",
                "PrepullFailed",
                "Deleting pod web-a on node edge-1 before its new images are there: its pre-pull "
                "failed (PullImageFail); its replacement pulls them after the deletion, as "
                "without pre-pull",
            ),
            (
                "Normal",
                "SuccessfulDelete",
                "Deleted pod: web-a on node edge-1: outdated, deleted within max-unavailable",
            ),
        ]


async def test_ota_ignores_a_finished_pull_job_its_pod_does_not_own() -> None:
    async with controller({STRATEGY: "OTA"}, [waiting_for_pull("web-a", "edge-1")]) as c:
        pod = c.cache.pod(f"{NAMESPACE}/web-a")
        assert pod is not None
        name = job_name(pod.view, NEW)
        forged = pull_job_json(name, for_pod="web-a", succeeded=True, owner_uid="uid-web-b")
        await c.publish(JOBS, "ADDED", forged)

        outcome = await c.reconcile()

        assert [
            call.body["status"]["conditions"][0]["type"]
            for call in c.api.calls_to("patch", PODS)
            if call.body
        ] == ["PodNeedUpgrade"]
        assert c.api.calls_to("create", JOBS) == []
        assert c.api.calls_to("delete", JOBS) == []
        assert outcome.conditions_written == 1


async def test_a_deleted_daemonset_loses_its_rollout_state_and_a_recreated_one_starts_anew() -> (
    None
):
    async with controller(ROLLING_ONE, outdated_rollout()) as c:
        await c.reconcile()
        first = c.states.get(KEY)
        assert first is not None
        assert first.deletions.pending == 1

        gone = c.api.publish(DAEMONSETS, "DELETED", daemonset_json("web", annotations=ROLLING_ONE))
        await until(lambda: c.cache.daemonsets.get(KEY) is None, what="the DaemonSet gone")
        assert await c.reconcile() == Outcome(plan=None)
        assert c.states.get(KEY) is None
        assert gone["metadata"]["uid"] == WEB_UID

        await c.publish(
            DAEMONSETS,
            "ADDED",
            daemonset_json("web", annotations=ROLLING_ONE, uid="uid-ds-web-2"),
        )
        await c.reconcile()
        second = c.states.get(KEY)
        assert second is not None
        assert second is not first
        assert second.uid == "uid-ds-web-2"


async def test_at_info_a_deletion_is_counted_and_told_by_the_summary_alone(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="edgerollout.controller")
    deleted = {"reason": "outdated_within_budget"}
    before = REGISTRY.get_sample_value("edgerollout_pods_deleted_total", deleted) or 0.0
    async with controller(ROLLING_ONE, outdated_rollout()) as c:
        outcome = await c.reconcile()

    assert outcome.deleted == 1
    assert REGISTRY.get_sample_value("edgerollout_pods_deleted_total", deleted) == before + 1
    assert [(r.levelname, r.getMessage()) for r in caplog.records] == [
        ("INFO", "rollout condition written"),
        ("INFO", "reconciled"),
    ]


async def test_a_reconcile_logs_one_summary_at_info_and_each_deletion_at_debug(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG, logger="edgerollout.controller")
    async with controller(ROLLING_ONE, outdated_rollout()) as c:
        await c.reconcile()

    def fields(record: logging.LogRecord) -> dict[str, object]:
        names = [*("daemonset", "pod", "uid", "node", "reason", "revision", "unavailable")]
        names += ("budget", "strategy", "deleted", "written", "skipped", "requeue_after")
        return {name: getattr(record, name) for name in names if hasattr(record, name)}

    # The deletion's Event is sent by a task of its own: its line comes before or after the summary.
    lines = sorted(((r.levelname, r.getMessage(), fields(r)) for r in caplog.records), key=str)
    assert lines == [
        (
            "DEBUG",
            "deleted pod",
            {
                "daemonset": KEY,
                "pod": f"{NAMESPACE}/web-a",
                "uid": "uid-web-a",
                "node": "edge-1",
                "reason": "outdated_within_budget",
                "revision": NEW,
                "unavailable": 0,
                "budget": 1,
            },
        ),
        (
            "DEBUG",
            "event: Deleted pod: web-a on node edge-1: outdated, deleted within max-unavailable",
            {"daemonset": KEY, "reason": "SuccessfulDelete"},
        ),
        (
            "INFO",
            "reconciled",
            {
                "daemonset": KEY,
                "revision": NEW,
                "unavailable": 1,
                "budget": 1,
                "strategy": "AdvancedRollingUpdate",
                "deleted": 1,
                "written": 0,
                "skipped": 0,
                "requeue_after": 5.0,
            },
        ),
        ("INFO", "rollout condition written", {"daemonset": KEY, "reason": "Rolling"}),
    ]


async def test_a_reconcile_with_nothing_to_do_logs_its_summary_at_debug(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async with controller(ROLLING_ONE, outdated_rollout()) as c:
        await c.reconcile()
        caplog.clear()
        caplog.set_level(logging.DEBUG, logger="edgerollout.controller")

        await c.reconcile()  # the deletion is still in flight: nothing more to do

    assert [(r.levelname, r.getMessage(), structured_fields(r)) for r in caplog.records] == [
        (
            "DEBUG",
            "reconciled",
            {
                "daemonset": KEY,
                "deleted": 0,
                "written": 0,
                "strategy": "AdvancedRollingUpdate",
                "revision": NEW,
                "unavailable": 1,
                "budget": 1,
                "skipped": 0,
                "requeue_after": 5.0,
            },
        )
    ]


async def test_a_node_the_plan_skips_gets_a_debug_line_with_its_readiness(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG, logger="edgerollout.controller")
    on_a_gone_node = pod_json("web-d", node="edge-9", revision_hash=OLD)
    async with controller(ROLLING_ONE, [*outdated_rollout(), on_a_gone_node]) as c:
        await c.reconcile()

    skipped = [r for r in caplog.records if r.getMessage() == "skipped node"]
    assert [(r.levelname, structured_fields(r)) for r in skipped] == [
        ("DEBUG", {"daemonset": KEY, "node": "edge-9", "reason": "Missing"})
    ]
    (summary,) = (r for r in caplog.records if r.getMessage() == "reconciled")
    assert (summary.levelname, structured_fields(summary)["skipped"]) == ("INFO", 1)


async def test_a_pause_and_a_resume_are_each_told_once_and_the_rollout_waits_between(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG, logger="edgerollout.controller")
    paused = {**ROLLING_ONE, "edgerollout.io/paused": "true"}
    async with controller(paused, outdated_rollout()) as c:
        await c.reconcile()
        await c.reconcile()
        assert c.deletions() == []
        state = c.states.get(KEY)
        assert state is not None
        assert (state.paused, state.pause_changes) == (True, 1)
        summary = [r for r in caplog.records if r.getMessage() == "reconciled"][-1]
        assert (structured_fields(summary)["held"], summary.levelname) == (3, "DEBUG")

        await c.publish(DAEMONSETS, "MODIFIED", daemonset_json("web", annotations=ROLLING_ONE))
        await c.reconcile()

        assert c.deletions() == [(NAMESPACE, "web-a", "uid-web-a")]
        assert [(kind, reason) for kind, reason, _ in c.events()] == [
            ("Normal", "RolloutPaused"),
            ("Normal", "RolloutResumed"),
            ("Normal", "SuccessfulDelete"),
        ]
        assert (state.paused, state.pause_changes) == (False, 2)


async def test_the_nodes_metric_tells_updated_outdated_and_offline_nodes_apart() -> None:
    from prometheus_client import REGISTRY

    def nodes(state: str) -> float | None:
        return REGISTRY.get_sample_value("edgerollout_nodes", {"state": state})

    offline = pod_json("web-d", node="edge-9", revision_hash=OLD)  # edge-9 has no Node: Missing
    async with controller(ROLLING_ONE, [*outdated_rollout(), offline]) as c:
        await c.reconcile()  # deletes edge-1's pod
        await c.reconcile()  # sees it in flight
        assert {s: nodes(s) for s in ("updated", "outdated", "offline", "replacing", "broken")} == {
            "updated": 1.0,
            "outdated": 1.0,  # edge-2 waits for the budget
            "offline": 1.0,
            "replacing": 1.0,  # edge-1: its pod was just deleted
            "broken": 0.0,
        }

        await c.publish(DAEMONSETS, "DELETED", daemonset_json("web", annotations=ROLLING_ONE))
        await c.reconcile()
        assert (nodes("updated"), nodes("offline")) == (0.0, 0.0)


def crash_looping_json(name: str, *, node: str) -> JSON:
    """A pod of the newest revision whose container waits in CrashLoopBackOff."""
    pod = pod_json(name, node=node, revision_hash=NEW, ready=False)
    pod["status"]["containerStatuses"] = [
        {
            "name": "web",
            "ready": False,
            "restartCount": 3,
            "state": {"waiting": {"reason": "CrashLoopBackOff", "message": "back-off 40s"}},
        }
    ]
    return pod


async def test_too_many_broken_nodes_pause_the_rollout_and_delete_nothing() -> None:
    annotations = {**ADVANCED, MAX_UNAVAILABLE: "3", "edgerollout.io/max-failed": "1"}
    pods = [
        crash_looping_json("web-a", node="edge-1"),
        crash_looping_json("web-b", node="edge-2"),
        pod_json("web-c", node="edge-3", revision_hash=OLD),
    ]
    async with controller(annotations, pods) as c:
        await c.reconcile()

        assert c.deletions() == []
        (pause, _) = c.api.calls_to("patch", DAEMONSETS)
        assert (pause.namespace, pause.name, pause.body, pause.params["content_type"]) == (
            NAMESPACE,
            "web",
            {"metadata": {"annotations": {"edgerollout.io/paused": "true"}}},
            "application/merge-patch+json",
        )
        ((kind, reason, message),) = c.events()
        assert (kind, reason) == ("Warning", "RolloutFailed")
        assert message.startswith(
            f'2 nodes are broken on revision {NEW}, more than edgerollout.io/max-failed "1" '
            "tolerates (1): edge-1: CrashLoopBackOff since "
        )

        await c.reconcile()  # the pause's echo has not come: not told again
        assert [reason for _, reason, _ in c.events()] == ["RolloutFailed"]
        assert c.deletions() == []

        for paused in ("true", "false"):  # the echo, then a resume with the nodes still broken
            echo = {**annotations, "edgerollout.io/paused": paused}
            await c.publish(DAEMONSETS, "MODIFIED", daemonset_json("web", annotations=echo))
            await c.reconcile()
        assert [reason for _, reason, _ in c.events()] == [
            "RolloutFailed",
            "RolloutPaused",
            "RolloutResumed",
            "RolloutFailed",
        ]
        assert len(c.pauses()) == 3
        assert [reason for _, reason, _ in c.rollout_conditions()] == ["RolloutFailed"]
        assert c.deletions() == []


async def test_the_pause_is_written_before_the_event_that_says_so() -> None:
    """Whoever reads "The rollout is paused" in the Event finds the DaemonSet paused: the pause
    goes first, and a pause refused tells nothing until it is written."""
    annotations = {**ADVANCED, MAX_UNAVAILABLE: "3", "edgerollout.io/max-failed": "0"}
    pods = [crash_looping_json("web-a", node="edge-1")]
    async with controller(annotations, pods) as c:
        c.api.fail("patch", DAEMONSETS, ApiError(500, "InternalError", "etcd timeout"))
        with pytest.raises(ApiError, match="etcd timeout"):
            await c.reconcile()
        assert c.events() == []  # the pause was refused: nothing told

        await c.reconcile()  # retried: the pause is written, then told
        told = [
            "pause" if call.resource == DAEMONSETS else (call.body or {}).get("reason")
            for call in c.api.writes
            if call.resource == EVENTS
            or (call.resource == DAEMONSETS and call.params.get("subresource") is None)
        ]
        assert told == ["pause", "pause", "RolloutFailed"]  # refused, written, then told
        assert [reason for _, reason, _ in c.events()] == ["RolloutFailed"]
        assert c.deletions() == []


async def test_a_pull_job_the_api_server_refuses_does_not_hold_a_deletion_back() -> None:
    # web-a's pull failed (it goes now, without its image); web-b's request wants a Job.
    pods = [
        image_ready("web-a", "edge-1", "False", "PullImageFail"),
        image_ready("web-b", "edge-2", "False", "WaitPullImage"),
        pod_json("web-c", node="edge-3", revision_hash=NEW),
    ]
    async with controller({**ROLLING_ONE, "edgerollout.io/prepull": "true"}, pods) as c:
        c.api.fail("create", JOBS, ApiError(500, "InternalError", "etcd timeout"), times=None)
        with pytest.raises(ApiError, match="etcd timeout"):
            await c.reconcile()

        assert c.deletions() == [(NAMESPACE, "web-a", "uid-web-a")]
        assert c.pending() == 1
