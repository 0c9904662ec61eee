"""Which cluster changes put which DaemonSet keys on the queue, and how pods are indexed.

The five caches run against the fake API; a test publishes watch events and waits until the cache
concerned has applied them, so "nothing was enqueued" is a fact, not a race.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass

import pytest

from edgerollout.controller.cluster_cache import ClusterCache
from edgerollout.controller.rollout_state import RolloutStates
from edgerollout.controller.snapshot import take_snapshot
from edgerollout.domain.model import DaemonSetUID, NodeName, NodeReadiness
from edgerollout.domain.planning.decision import Snapshot
from edgerollout.domain.planning.prepull import JobState
from edgerollout.domain.vocabulary import POD_TEMPLATE_GENERATION_LABEL, PREPULL_LABEL
from edgerollout.kube.api import CONTROLLER_REVISIONS, DAEMONSETS, JOBS, NODES, PODS, Resource
from edgerollout.kube.views import CachedDaemonSet
from edgerollout.settings import CONTROLLER

from ..domain.builders import NOW
from ..kube.fake_api import JSON, FakeApi, unreachable
from ..kube.objects import (
    NEW,
    OLD,
    STRATEGY,
    WEB_UID,
    daemonset_json,
    node_json,
    pod_json,
    revision_json,
)
from ..kube.running import every_informer, published, running_cache, until

API_UID = "uid-ds-api"
PLAIN_UID = "uid-ds-plain"
WEB_KEY, API_KEY, PLAIN_KEY = "default/web", "default/api", "default/plain"


@dataclass
class Cluster:
    api: FakeApi
    cache: ClusterCache
    enqueued: list[str]
    states: RolloutStates

    async def publish(self, resource: Resource, event_type: str, obj: JSON) -> None:
        """Publish a watch event and wait until the cache has applied it."""
        await published(self.api, every_informer(self.cache), resource, event_type, obj)


@pytest.fixture
async def cluster() -> AsyncIterator[Cluster]:
    """Two opted-in DaemonSets (web, api) and one left alone (plain), pods of each, two nodes."""
    api = FakeApi()
    api.put(DAEMONSETS, daemonset_json("web"))
    api.put(DAEMONSETS, daemonset_json("api", uid=API_UID, annotations={STRATEGY: "OTA"}))
    api.put(DAEMONSETS, daemonset_json("plain", uid=PLAIN_UID, annotations={}))
    api.put(PODS, pod_json("web-a", node="edge-1"))
    api.put(PODS, pod_json("web-b", node="edge-2", revision_hash=OLD))
    api.put(PODS, pod_json("plain-a", node="edge-1", owner_uid=PLAIN_UID, app="plain"))
    api.put(PODS, pod_json("api-a", node="edge-1", owner_uid=API_UID, app="api"))
    api.put(CONTROLLER_REVISIONS, revision_json("web-1", number=1, revision_hash=OLD))
    api.put(NODES, node_json("edge-1"))
    api.put(NODES, node_json("edge-2"))
    enqueued: list[str] = []
    states = RolloutStates(settings=CONTROLLER.reconcile, clock=lambda: 0.0)
    cache = ClusterCache(api, namespace=None, enqueue=enqueued.append, changes=states)
    async with running_cache(cache):
        enqueued.clear()
        yield Cluster(api=api, cache=cache, enqueued=enqueued, states=states)


def snapshot_of(cluster: Cluster, key: str) -> Snapshot:
    """What a reconcile of the DaemonSet `key` would plan with now (taken fresh: it is a view)."""
    daemonset = cluster.cache.daemonsets.get(key)
    assert daemonset is not None
    state = cluster.states.of(key, daemonset.view.uid)
    return take_snapshot(cluster.cache, daemonset, state, now=NOW)


def cached_pods(cache: ClusterCache) -> dict[str, list[str]]:
    """The keys each DaemonSet's pod cache holds, by the DaemonSet's UID."""
    return {uid: sorted(informer.store) for uid, informer in cache.pods.items()}


def pod_names(cluster: Cluster, key: str) -> list[str]:
    return sorted(pod.name for pod in snapshot_of(cluster, key).pods)


async def test_listed_cache_is_synced_and_knows_the_opted_in_daemonsets(cluster: Cluster) -> None:
    assert cluster.cache.synced
    assert cluster.cache.opted_in_keys() == ["default/api", "default/web"]
    assert cluster.cache.key_by_uid == {
        WEB_UID: "default/web",
        API_UID: "default/api",
        PLAIN_UID: "default/plain",
    }


async def test_change_of_an_opted_in_daemonset_enqueues_its_key(cluster: Cluster) -> None:
    await cluster.publish(DAEMONSETS, "MODIFIED", daemonset_json("web", min_ready_seconds=30))

    assert cluster.enqueued == ["default/web"]


async def test_change_of_a_daemonset_without_the_annotation_enqueues_nothing(
    cluster: Cluster,
) -> None:
    await cluster.publish(
        DAEMONSETS,
        "MODIFIED",
        daemonset_json("plain", uid=PLAIN_UID, annotations={}, min_ready_seconds=30),
    )

    assert cluster.enqueued == []


async def test_daemonset_that_loses_the_annotation_is_enqueued_once_more(cluster: Cluster) -> None:
    await cluster.publish(DAEMONSETS, "MODIFIED", daemonset_json("web", annotations={}))

    assert cluster.enqueued == ["default/web"]
    assert cluster.cache.opted_in_keys() == ["default/api"]


async def test_deleted_daemonset_is_enqueued_and_forgotten(cluster: Cluster) -> None:
    await cluster.publish(DAEMONSETS, "DELETED", daemonset_json("web"))

    assert cluster.enqueued == ["default/web"]
    assert WEB_UID not in cluster.cache.key_by_uid


async def test_pod_change_enqueues_its_opted_in_owner(cluster: Cluster) -> None:
    await cluster.publish(PODS, "MODIFIED", pod_json("web-a", node="edge-1", ready=False))

    assert cluster.enqueued == ["default/web"]


async def test_pods_of_a_daemonset_without_the_annotation_are_not_watched(
    cluster: Cluster,
) -> None:
    cluster.api.publish(
        PODS,
        "MODIFIED",
        pod_json("plain-a", node="edge-1", owner_uid=PLAIN_UID, app="plain", ready=False),
    )
    await cluster.publish(PODS, "MODIFIED", pod_json("web-a", node="edge-1", ready=False))

    assert cluster.enqueued == ["default/web"]
    assert pod_names(cluster, PLAIN_KEY) == []
    assert sorted(cached_pods(cluster.cache)) == [API_UID, WEB_UID]


async def test_pod_of_another_kind_of_owner_is_neither_indexed_nor_enqueued(
    cluster: Cluster,
) -> None:
    await cluster.publish(
        PODS,
        "ADDED",
        pod_json("web-7d9f-x2", node="edge-1", owner_uid=WEB_UID, owner_kind="ReplicaSet"),
    )

    assert cluster.enqueued == []
    assert pod_names(cluster, WEB_KEY) == ["web-a", "web-b"]
    assert cluster.cache.pod("default/web-7d9f-x2") is None


async def test_each_opted_in_daemonset_asks_for_its_own_pods_and_keeps_only_them() -> None:
    """The API server sends a DaemonSet's pod cache only its selector's pods with the DaemonSet
    controller's generation label, in its namespace; a pod another controller holds is dropped as
    it is read; the Jobs' cache asks only for pull Jobs; a StatefulSet's revisions, which no
    selector tells apart, are dropped as they are read."""
    api = FakeApi()
    api.put(DAEMONSETS, daemonset_json("web"))
    api.put(DAEMONSETS, daemonset_json("plain", uid=PLAIN_UID, annotations={}))
    api.put(PODS, pod_json("web-a", node="edge-1"))
    api.put(PODS, pod_json("plain-a", node="edge-1", owner_uid=PLAIN_UID, app="plain"))
    deployment_pod = pod_json("shop-7d9f-x2", node="edge-1", owner_kind="ReplicaSet", app="shop")
    del deployment_pod["metadata"]["labels"][POD_TEMPLATE_GENERATION_LABEL]
    api.put(PODS, deployment_pod)
    # Labelled like the DaemonSet's, but held by a ReplicaSet: listed, and dropped.
    api.put(PODS, pod_json("web-7d9f-x2", node="edge-1", owner_kind="ReplicaSet"))
    api.put(CONTROLLER_REVISIONS, revision_json("web-1", number=1, revision_hash=OLD))
    statefulset_revision = revision_json("db-1", number=1, revision_hash=OLD, owner_uid="uid-db")
    statefulset_revision["metadata"]["ownerReferences"][0]["kind"] = "StatefulSet"
    api.put(CONTROLLER_REVISIONS, statefulset_revision)
    api.put(JOBS, pull_job_json("prepull-1", for_pod="web-a"))
    backup = pull_job_json("backup", for_pod="web-a")
    backup["metadata"] = {"name": "backup", "namespace": "default"}
    api.put(JOBS, backup)
    cache = ClusterCache(api, namespace=None, enqueue=lambda key: None)

    async with running_cache(cache):
        assert cached_pods(cache) == {WEB_UID: ["default/web-a"]}
        assert sorted(cache.revisions.store) == ["default/web-1"]
        assert sorted(cache.jobs.store) == ["default/prepull-1"]
        assert cache.counts() == {
            "daemonsets": 2,
            "pods": 1,
            "controllerrevisions": 1,
            "nodes": 0,
            "jobs": 1,
        }
        await until(lambda: len(api.calls_to("watch", PODS)) > 0, what="the pods' watch")
        await until(lambda: len(api.calls_to("watch", JOBS)) > 0, what="the Jobs' watch")

    asked = {
        (call.verb, call.resource.plural): (call.namespace, call.params["label_selector"])
        for call in api.calls
        if call.verb in ("list", "watch")
    }
    assert asked == {
        ("list", "daemonsets"): (None, None),
        ("watch", "daemonsets"): (None, None),
        ("list", "pods"): ("default", f"app=web,{POD_TEMPLATE_GENERATION_LABEL}"),
        ("watch", "pods"): ("default", f"app=web,{POD_TEMPLATE_GENERATION_LABEL}"),
        ("list", "controllerrevisions"): (None, None),
        ("watch", "controllerrevisions"): (None, None),
        ("list", "nodes"): (None, None),
        ("watch", "nodes"): (None, None),
        ("list", "jobs"): (None, PREPULL_LABEL),
        ("watch", "jobs"): (None, PREPULL_LABEL),
    }


async def test_a_daemonset_opted_in_later_gets_its_pod_cache_and_loses_it_with_the_annotation(
    cluster: Cluster,
) -> None:
    opted_in = daemonset_json("plain", uid=PLAIN_UID, annotations={STRATEGY: "OTA"})
    await cluster.publish(DAEMONSETS, "MODIFIED", opted_in)
    await until(lambda: cluster.cache.pods_listed(_cached(cluster, PLAIN_KEY)), what="plain listed")

    # Enqueued for the change, for its pod's arrival, and once its pods are listed (a DaemonSet
    # without pods yet is enqueued then too): never planned without them.
    assert cluster.enqueued == [PLAIN_KEY] * 3
    assert pod_names(cluster, PLAIN_KEY) == ["plain-a"]

    await cluster.publish(
        DAEMONSETS, "MODIFIED", daemonset_json("plain", uid=PLAIN_UID, annotations={})
    )

    assert sorted(cached_pods(cluster.cache)) == [API_UID, WEB_UID]
    assert pod_names(cluster, PLAIN_KEY) == []
    assert cluster.cache.pods_listed(_cached(cluster, PLAIN_KEY))


async def test_waiting_for_the_caches_ends_when_an_unlisted_pod_cache_is_stopped() -> None:
    """A DaemonSet that loses the annotation before its pods could be listed leaves nothing to
    wait for: the controller must still start leading."""
    api = FakeApi()
    api.put(DAEMONSETS, daemonset_json("web"))
    api.fail("list", PODS, unreachable(), times=None)
    cache = ClusterCache(api, namespace=None, enqueue=lambda key: None)
    running = asyncio.create_task(cache.run())
    waiting = asyncio.create_task(cache.wait_synced())
    try:
        await until(lambda: len(api.calls_to("list", PODS)) > 0, what="the pods' first list")
        assert not waiting.done()

        await published(
            api, cache.informers, DAEMONSETS, "MODIFIED", daemonset_json("web", annotations={})
        )

        await asyncio.wait_for(waiting, timeout=2)
        assert cache.synced
        assert cache.pods == {}
    finally:
        for task in (waiting, running):
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task


async def test_a_deleted_daemonset_loses_its_pod_cache(cluster: Cluster) -> None:
    await cluster.publish(DAEMONSETS, "DELETED", daemonset_json("api", uid=API_UID))

    assert sorted(cached_pods(cluster.cache)) == [WEB_UID]
    assert API_UID not in cluster.cache.pods_by_owner


def _cached(cluster: Cluster, key: str) -> CachedDaemonSet:
    cached = cluster.cache.daemonsets.get(key)
    assert cached is not None
    return cached


async def test_node_readiness_change_enqueues_every_opted_in_daemonset(cluster: Cluster) -> None:
    await cluster.publish(NODES, "MODIFIED", node_json("edge-2", ready="Unknown"))

    assert cluster.enqueued == ["default/api", "default/web"]


async def test_node_heartbeat_with_the_same_readiness_enqueues_nothing(cluster: Cluster) -> None:
    await cluster.publish(NODES, "MODIFIED", node_json("edge-2", heartbeat="2025-03-01T12:00:40Z"))

    assert cluster.enqueued == []


async def test_node_label_change_enqueues_every_opted_in_daemonset_and_is_a_change(
    cluster: Cluster,
) -> None:
    # A staged rollout's book keeps each node's wave until the node is reported changed.
    web = cluster.states.of(WEB_KEY, DaemonSetUID(WEB_UID))
    relabelled = node_json("edge-2")
    relabelled["metadata"]["labels"]["apps.openyurt.io/nodepool"] = "pool-a"
    await cluster.publish(NODES, "MODIFIED", relabelled)

    assert cluster.enqueued == ["default/api", "default/web"]
    assert web.take_changed_nodes() == {"edge-2"}
    assert cluster.cache.nodes.store["edge-2"].labels == {
        "kubernetes.io/hostname": "edge-2",
        "apps.openyurt.io/nodepool": "pool-a",
    }


async def test_node_added_or_removed_enqueues_every_opted_in_daemonset(cluster: Cluster) -> None:
    await cluster.publish(NODES, "ADDED", node_json("edge-3"))
    await cluster.publish(NODES, "DELETED", node_json("edge-1"))

    assert cluster.enqueued == ["default/api", "default/web"] * 2


async def test_pods_are_indexed_by_owner_uid_and_moved_and_removed(cluster: Cluster) -> None:
    cache = cluster.cache
    assert pod_names(cluster, WEB_KEY) == ["web-a", "web-b"]
    assert pod_names(cluster, API_KEY) == ["api-a"]

    await cluster.publish(
        PODS,
        "MODIFIED",
        pod_json("web-b", node="edge-2", revision_hash=OLD, owner_uid=API_UID, app="api"),
    )
    assert pod_names(cluster, WEB_KEY) == ["web-a"]
    assert pod_names(cluster, API_KEY) == ["api-a", "web-b"]
    # Both owners are looked at again: one lost a pod, the other gained one (each pod cache
    # tells its own, in no set order).
    assert sorted(cluster.enqueued) == ["default/api", "default/web"]

    for name in ("web-a", "web-b", "api-a"):
        await cluster.publish(PODS, "DELETED", pod_json(name, node="edge-1"))
    assert list(snapshot_of(cluster, WEB_KEY).pods) == []
    assert list(snapshot_of(cluster, API_KEY).pods) == []
    assert WEB_UID not in cache.pods_by_owner
    assert API_UID not in cache.pods_by_owner


async def test_indexed_pod_is_the_newest_record(cluster: Cluster) -> None:
    await cluster.publish(PODS, "MODIFIED", pod_json("web-b", node="edge-2", revision_hash=NEW))

    assert {pod.name: pod.revision_hash for pod in snapshot_of(cluster, WEB_KEY).pods} == {
        "web-a": NEW,
        "web-b": NEW,
    }


async def test_pod_released_by_its_daemonset_leaves_its_index(cluster: Cluster) -> None:
    await cluster.publish(
        PODS, "MODIFIED", pod_json("web-b", node="edge-2", revision_hash=OLD, owner_uid=None)
    )

    assert pod_names(cluster, WEB_KEY) == ["web-a"]
    assert cluster.enqueued == ["default/web"]


async def test_revision_change_enqueues_its_owner_and_is_indexed(cluster: Cluster) -> None:
    await cluster.publish(
        CONTROLLER_REVISIONS, "ADDED", revision_json("web-2", number=2, revision_hash=NEW)
    )

    assert cluster.enqueued == ["default/web"]
    assert sorted(r.view.name for r in cluster.cache.revisions_of(WEB_UID)) == ["web-1", "web-2"]

    await cluster.publish(
        CONTROLLER_REVISIONS, "DELETED", revision_json("web-1", number=1, revision_hash=OLD)
    )
    assert [r.view.name for r in cluster.cache.revisions_of(WEB_UID)] == ["web-2"]


async def test_pod_released_by_its_daemonset_leaves_the_cache(cluster: Cluster) -> None:
    await cluster.publish(
        PODS, "MODIFIED", pod_json("web-b", node="edge-2", revision_hash=OLD, owner_uid=None)
    )

    assert cached_pods(cluster.cache) == {API_UID: ["default/api-a"], WEB_UID: ["default/web-a"]}


def pull_job_json(
    name: str, *, for_pod: str, complete: bool = False, owner_uid: str | None = None
) -> dict[str, object]:
    """A pull Job as the controller creates it: owned by the pod it names (unless `owner_uid`)."""
    conditions = [{"type": "Complete", "status": "True"}] if complete else []
    owner = {"apiVersion": "v1", "kind": "Pod", "name": for_pod, "uid": f"uid-{for_pod}"}
    if owner_uid is not None:
        owner["uid"] = owner_uid
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": name,
            "namespace": "default",
            "labels": {PREPULL_LABEL: for_pod},
            "ownerReferences": [owner],
        },
        "status": {"conditions": conditions},
    }


async def test_pull_job_progress_enqueues_the_daemonset_of_the_pod_it_pulls_for(
    cluster: Cluster,
) -> None:
    await cluster.publish(JOBS, "ADDED", pull_job_json("prepull-1", for_pod="api-a"))
    await cluster.publish(
        JOBS, "MODIFIED", pull_job_json("prepull-1", for_pod="api-a", complete=True)
    )

    assert cluster.enqueued == ["default/api", "default/api"]
    assert snapshot_of(cluster, API_KEY).pull_jobs["prepull-1"].state is JobState.SUCCEEDED


async def test_a_pull_job_owned_by_another_pod_enqueues_nothing(cluster: Cluster) -> None:
    forged = pull_job_json("prepull-1", for_pod="api-a", complete=True, owner_uid="uid-web-a")
    await cluster.publish(JOBS, "ADDED", forged)

    assert cluster.enqueued == []
    assert snapshot_of(cluster, API_KEY).pull_jobs["prepull-1"].owner_uid == "uid-web-a"


async def test_jobs_that_are_not_pull_jobs_are_not_kept_and_enqueue_nothing(
    cluster: Cluster,
) -> None:
    other = pull_job_json("backup", for_pod="web-a")
    other["metadata"] = {"name": "backup", "namespace": "default"}
    await cluster.publish(JOBS, "ADDED", other)

    assert cluster.enqueued == []
    assert dict(snapshot_of(cluster, WEB_KEY).pull_jobs) == {}


def by_node(cluster: Cluster, key: str) -> dict[str, list[str]]:
    pods_by_node = snapshot_of(cluster, key).pods_by_node
    return {node: sorted(pod.name for pod in pods_by_node[node]) for node in sorted(pods_by_node)}


async def test_pods_are_indexed_by_owner_and_node_and_leave_it(cluster: Cluster) -> None:
    cache = cluster.cache
    assert by_node(cluster, WEB_KEY) == {"edge-1": ["web-a"], "edge-2": ["web-b"]}
    assert by_node(cluster, API_KEY) == {"edge-1": ["api-a"]}

    await cluster.publish(PODS, "ADDED", pod_json("web-c", node="edge-1"))
    assert by_node(cluster, WEB_KEY) == {"edge-1": ["web-a", "web-c"], "edge-2": ["web-b"]}

    await cluster.publish(
        PODS, "MODIFIED", pod_json("web-b", node="edge-2", owner_uid=API_UID, app="api")
    )
    assert by_node(cluster, WEB_KEY) == {"edge-1": ["web-a", "web-c"]}
    assert by_node(cluster, API_KEY) == {"edge-1": ["api-a"], "edge-2": ["web-b"]}

    for name, node in (("web-a", "edge-1"), ("web-c", "edge-1"), ("web-b", "edge-2")):
        await cluster.publish(PODS, "DELETED", pod_json(name, node=node))
    assert by_node(cluster, WEB_KEY) == {}
    assert WEB_UID not in cache.pods_by_owner_node
    assert by_node(cluster, API_KEY) == {"edge-1": ["api-a"]}
    assert NodeName("edge-1") not in snapshot_of(cluster, WEB_KEY).pods_by_node


async def test_changed_nodes_are_kept_only_for_a_rollout_with_a_state_and_handed_over_once(
    cluster: Cluster,
) -> None:
    states = cluster.states
    await cluster.publish(PODS, "MODIFIED", pod_json("web-a", node="edge-1", ready=False))
    # No state yet: a state made now has nothing to report.
    web = states.of(WEB_KEY, DaemonSetUID(WEB_UID))
    assert web.take_changed_nodes() == frozenset()

    await cluster.publish(PODS, "MODIFIED", pod_json("web-b", node="edge-2", ready=False))
    await cluster.publish(
        PODS,
        "MODIFIED",
        pod_json("api-a", node="edge-1", owner_uid=API_UID, app="api", ready=False),
    )
    assert web.take_changed_nodes() == {"edge-2"}
    assert web.take_changed_nodes() == frozenset()

    assert states.drop(WEB_KEY) is web
    await cluster.publish(PODS, "MODIFIED", pod_json("web-b", node="edge-2"))
    assert web.take_changed_nodes() == frozenset()
    assert states.of(WEB_KEY, DaemonSetUID(WEB_UID)).take_changed_nodes() == frozenset()


async def test_a_node_whose_readiness_changes_is_a_changed_node_of_every_rollout(
    cluster: Cluster,
) -> None:
    cache, states = cluster.cache, cluster.states
    web = states.of(WEB_KEY, DaemonSetUID(WEB_UID))
    api = states.of(API_KEY, DaemonSetUID(API_UID))

    await cluster.publish(NODES, "MODIFIED", node_json("edge-1", heartbeat="2025-03-01T12:00:40Z"))
    await cluster.publish(NODES, "MODIFIED", node_json("edge-2", ready="Unknown"))
    await cluster.publish(NODES, "DELETED", node_json("edge-1"))

    assert web.take_changed_nodes() == {"edge-1", "edge-2"}
    assert api.take_changed_nodes() == {"edge-1", "edge-2"}
    daemonset = cache.daemonsets.get(WEB_KEY)
    assert daemonset is not None
    snapshot = take_snapshot(cache, daemonset, web, now=NOW)
    assert snapshot.readiness.get(NodeName("edge-2")) is NodeReadiness.UNKNOWN
    assert NodeName("edge-1") not in snapshot.readiness  # gone: the planner reads it as MISSING
    assert sorted(snapshot.pods_by_node) == ["edge-1", "edge-2"]
    assert [pod.name for pod in snapshot.pods_by_node[NodeName("edge-2")]] == ["web-b"]
    assert sorted(pod.name for pod in snapshot.pods) == ["web-a", "web-b"]
    assert snapshot.changed_nodes == frozenset()
