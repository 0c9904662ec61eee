"""The rollout condition on the DaemonSet, from the caches to the `daemonsets/status` patch: when
it is written, held back, removed, and the metrics beside it (design §9.2)."""

from __future__ import annotations

from datetime import timedelta

from prometheus_client import REGISTRY

from edgerollout.controller.pool_metrics import PoolNodes
from edgerollout.kube.api import DAEMONSETS, PODS
from edgerollout.settings import CONTROLLER

from ..domain.builders import NOW, NOW_RFC3339
from ..kube.fake_api import JSON
from ..kube.objects import ADVANCED, NAMESPACE, NEW, OLD, WEB_UID, daemonset_json, pod_json
from .test_reconciler import KEY, ROLLING_ONE, Controller, controller, outdated_rollout

TYPE = "edgerollout.io/Progressing"
ROLLING = "1 of 3 nodes updated, 0 offline, 0 broken, 0 held, 2 to go (generation 2)"
INTERVAL = CONTROLLER.reconcile.rollout_condition_interval


def carrying(condition: JSON, annotations: dict[str, str] = ROLLING_ONE) -> JSON:
    """The DaemonSet as the API server serves it once `condition` is in its status."""
    obj = daemonset_json("web", annotations=annotations)
    obj["status"]["conditions"] = [condition]
    return obj


def rolling_condition(message: str = ROLLING, at: str = NOW_RFC3339) -> JSON:
    return {
        "type": TYPE,
        "status": "True",
        "reason": "Rolling",
        "message": message,
        "lastTransitionTime": at,
    }


def phase_samples() -> dict[str, float | None]:
    return {
        phase: REGISTRY.get_sample_value(
            "edgerollout_rollout_phase",
            {"namespace": NAMESPACE, "daemonset": "web", "phase": phase},
        )
        for phase in ("Rolling", "Complete", "Paused")
    }


def node_samples() -> dict[str, float | None]:
    return {
        state: REGISTRY.get_sample_value(
            "edgerollout_daemonset_nodes",
            {"namespace": NAMESPACE, "daemonset": "web", "state": state},
        )
        for state in ("total", "updated", "offline", "broken", "held", "remaining")
    }


async def test_the_condition_is_patched_into_the_status_once_and_not_again_once_shown() -> None:
    async with controller(ROLLING_ONE, outdated_rollout()) as c:
        await c.reconcile()

        status_patches = [
            call
            for call in c.api.calls_to("patch", DAEMONSETS)
            if call.params.get("subresource") == "status"
        ]
        assert [(p.namespace, p.name, p.body, p.params) for p in status_patches] == [
            (
                NAMESPACE,
                "web",
                {"metadata": {"uid": WEB_UID}, "status": {"conditions": [rolling_condition()]}},
                {"subresource": "status", "content_type": "application/strategic-merge-patch+json"},
            )
        ]
        assert phase_samples() == {"Rolling": 1.0, "Complete": 0.0, "Paused": 0.0}
        assert node_samples() == {
            "total": 3.0,
            "updated": 1.0,
            "offline": 0.0,
            "broken": 0.0,
            "held": 0.0,
            "remaining": 2.0,
        }

        await c.publish(DAEMONSETS, "MODIFIED", carrying(rolling_condition()))
        c.forget_deletions()
        await c.reconcile()
        assert len(c.rollout_conditions()) == 1


async def test_a_new_phase_is_written_at_once_with_its_transition_time() -> None:
    pods = [
        pod_json("web-a", node="edge-1", revision_hash=NEW),
        pod_json("web-b", node="edge-2", revision_hash=NEW),
        pod_json("web-c", node="edge-3", revision_hash=OLD),  # the partition holds the last
    ]
    partition = {**ADVANCED, "edgerollout.io/partition": "1"}
    async with controller(partition, pods) as c:
        # Rolling since an hour ago; now held at the partition with nothing else to do.
        shown = rolling_condition(ROLLING, at="2025-03-01T11:00:00Z")
        await c.publish(DAEMONSETS, "MODIFIED", carrying(shown, partition))
        await c.reconcile()
        (written,) = [
            call.body["status"]["conditions"][0]["lastTransitionTime"]
            for call in c.api.calls_to("patch", DAEMONSETS)
            if call.params.get("subresource") == "status" and call.body is not None
        ]
        assert written == NOW_RFC3339
        assert c.rollout_conditions() == [
            ("True", "Held", "2 of 3 nodes updated, 0 offline, 0 broken, 1 held, 0 to go "
             "(generation 2)")
        ]  # fmt: skip


async def test_counts_held_back_are_looked_at_again_when_the_interval_ends() -> None:
    async with controller(ROLLING_ONE, outdated_rollout()) as c:
        await c.reconcile()  # Rolling, 1 of 3 updated: written
        await c.publish(DAEMONSETS, "MODIFIED", carrying(rolling_condition()))
        deleted = pod_json("web-a", node="edge-1", revision_hash=OLD)
        c.api.put(PODS, deleted)  # the fake forgot it at the delete; its watch event is due
        await c.publish(PODS, "DELETED", deleted)
        await c.publish(PODS, "ADDED", pod_json("web-a2", node="edge-1", revision_hash=NEW))
        # web-b on its way out (someone else's delete): the budget is spent, nothing goes now.
        leaving = pod_json("web-b", node="edge-2", revision_hash=OLD, deleting=True)
        await c.publish(PODS, "MODIFIED", leaving)
        c.forget_deletions()
        c.reconciler.clock = lambda: NOW + timedelta(seconds=4)
        outcome = await c.reconcile()  # 2 of 3 now, 4 s after the last write: held back

        assert len(c.rollout_conditions()) == 1
        assert outcome.requeue_after == INTERVAL - 4

        c.reconciler.clock = lambda: NOW + timedelta(seconds=INTERVAL)
        await c.reconcile()
        assert c.rollout_conditions()[1:] == [
            ("True", "Rolling", "2 of 3 nodes updated, 0 offline, 0 broken, 0 held, 1 to go "
             "(generation 2)")
        ]  # fmt: skip
        (last,) = [
            call.body["status"]["conditions"][0]["lastTransitionTime"]
            for call in c.api.calls_to("patch", DAEMONSETS)
            if call.params.get("subresource") == "status" and call.body is not None
        ][1:]
        assert last == NOW_RFC3339  # the phase has not changed since the first write


async def test_a_daemonset_that_opts_out_loses_its_condition_and_its_metrics() -> None:
    async with controller(ROLLING_ONE, outdated_rollout()) as c:
        await c.reconcile()
        await c.publish(DAEMONSETS, "MODIFIED", carrying(rolling_condition(), annotations={}))
        await c.reconcile()

        (removal,) = [
            call.body
            for call in c.api.calls_to("patch", DAEMONSETS)
            if call.params.get("subresource") == "status"
        ][1:]
        assert removal == {
            "metadata": {"uid": WEB_UID},
            "status": {"conditions": [{"type": TYPE, "$patch": "delete"}]},
        }
        assert phase_samples() == {"Rolling": None, "Complete": None, "Paused": None}
        assert set(node_samples().values()) == {None}
        assert c.cache.keys_to_reconcile() == [KEY]  # until the removal's echo comes


async def test_the_rollout_gauges_follow_each_plan_as_its_counts_and_phase_move() -> None:
    async with controller(ROLLING_ONE, outdated_rollout()) as c:
        await c.reconcile()  # edge-1's pod deleted: Rolling, 1 of 3 updated
        assert phase_samples() == {"Rolling": 1.0, "Complete": 0.0, "Paused": 0.0}
        assert node_samples() == {
            "total": 3.0, "updated": 1.0, "offline": 0.0, "broken": 0.0, "held": 0.0,
            "remaining": 2.0,
        }  # fmt: skip

        await replace(c, "web-a", node="edge-1")  # and edge-2's pod deleted
        assert phase_samples() == {"Rolling": 1.0, "Complete": 0.0, "Paused": 0.0}
        assert node_samples() == {
            "total": 3.0, "updated": 2.0, "offline": 0.0, "broken": 0.0, "held": 0.0,
            "remaining": 1.0,
        }  # fmt: skip

        await replace(c, "web-b", node="edge-2")
        assert phase_samples() == {"Rolling": 0.0, "Complete": 1.0, "Paused": 0.0}
        assert node_samples() == {
            "total": 3.0, "updated": 3.0, "offline": 0.0, "broken": 0.0, "held": 0.0,
            "remaining": 0.0,
        }  # fmt: skip


async def replace(c: Controller, name: str, *, node: str) -> None:
    """The deleted outdated pod `name` gone and replaced by a current one, then a reconcile."""
    replaced = pod_json(name, node=node, revision_hash=OLD)
    c.api.put(PODS, replaced)  # the fake forgot it at the delete; its watch event is due
    await c.publish(PODS, "DELETED", replaced)
    await c.publish(PODS, "ADDED", pod_json(f"{name}2", node=node, revision_hash=NEW))
    await c.reconcile()


async def test_the_pool_collector_counts_each_rollouts_nodes_by_pool_when_scraped() -> None:
    async with controller(ROLLING_ONE, outdated_rollout()) as c:
        await c.reconcile()
        (family,) = PoolNodes(c.cache, c.states).collect()

        # The lab's nodes carry no pool label: one pool with no name.
        assert {
            (s.labels["namespace"], s.labels["daemonset"], s.labels["pool"], s.labels["state"]): (
                s.value
            )
            for s in family.samples
        } == {
            (NAMESPACE, "web", "", "total"): 3.0,
            (NAMESPACE, "web", "", "updated"): 1.0,
            (NAMESPACE, "web", "", "offline"): 0.0,
            (NAMESPACE, "web", "", "broken"): 0.0,
            (NAMESPACE, "web", "", "held"): 0.0,
            (NAMESPACE, "web", "", "remaining"): 2.0,
        }


async def test_nothing_is_written_before_the_daemonset_controller_observed_the_generation() -> None:
    async with controller(ROLLING_ONE, outdated_rollout()) as c:
        await c.reconcile()
        newer = carrying(rolling_condition())
        newer["metadata"]["generation"] = 3  # a new template, not yet observed (still 2)
        await c.publish(DAEMONSETS, "MODIFIED", newer)
        c.forget_deletions()
        c.reconciler.clock = lambda: NOW + timedelta(seconds=INTERVAL)  # new counts would be due
        await c.reconcile()

        # The first write, of generation 2, and none for generation 3 yet.
        assert [message for _, _, message in c.rollout_conditions()] == [ROLLING]
        assert phase_samples()["Rolling"] == 1.0  # the metrics follow every plan
