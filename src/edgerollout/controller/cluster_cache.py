"""The controller's view of the cluster: four list+watch caches and the indexes reconciles need.

DaemonSets, their pods and ControllerRevisions (optionally one namespace), and all Nodes. Pods and
revisions are indexed by the UID of their controlling DaemonSet, so a reconcile touches only its
own objects. Changes are turned into DaemonSet keys for the work queue:
- a DaemonSet that carries the update-strategy annotation (or just lost it) -> itself;
- a pod or ControllerRevision -> its owning DaemonSet;
- a Node whose readiness changed -> every opted-in DaemonSet, so a node coming back is upgraded
  within seconds of turning Ready (its heartbeats, which change nothing we read, enqueue nothing);
- a pre-pull Job of ours -> the opted-in DaemonSets with pods in its namespace.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from edgerollout.domain.model import NodeName, NodeReadiness, NodeView, PodView
from edgerollout.domain.prepull import JobView
from edgerollout.domain.vocabulary import UPDATE_STRATEGY_ANNOTATION
from edgerollout.kube.api import CONTROLLER_REVISIONS, DAEMONSETS, JOBS, NODES, PODS, Api
from edgerollout.kube.informer import Informer
from edgerollout.kube.views import (
    CachedDaemonSet,
    CachedPod,
    CachedRevision,
    daemonset_from_api,
    job_from_api,
    node_from_api,
    object_key,
    pod_from_api,
    revision_from_api,
)

Enqueue = Callable[[str], None]


def _opted_in(daemonset: CachedDaemonSet | None) -> bool:
    return daemonset is not None and UPDATE_STRATEGY_ANNOTATION in daemonset.view.annotations


def _ds_key(daemonset: CachedDaemonSet) -> str:
    return object_key(daemonset.view.namespace, daemonset.view.name)


class ClusterCache:
    def __init__(self, api: Api, *, namespace: str | None, enqueue: Enqueue) -> None:
        self.enqueue = enqueue
        self.daemonsets: Informer[CachedDaemonSet] = Informer(
            api, DAEMONSETS, daemonset_from_api, namespace=namespace
        )
        self.pods: Informer[CachedPod] = Informer(api, PODS, pod_from_api, namespace=namespace)
        self.revisions: Informer[CachedRevision] = Informer(
            api, CONTROLLER_REVISIONS, revision_from_api, namespace=namespace
        )
        self.nodes: Informer[NodeView] = Informer(api, NODES, node_from_api)
        self.jobs: Informer[JobView] = Informer(api, JOBS, job_from_api, namespace=namespace)
        self.key_by_uid: dict[str, str] = {}
        self.pods_by_owner: dict[str, dict[str, CachedPod]] = {}
        self.revisions_by_owner: dict[str, dict[str, CachedRevision]] = {}
        self.daemonsets.subscribe(self._on_daemonset)
        self.pods.subscribe(self._on_pod)
        self.revisions.subscribe(self._on_revision)
        self.nodes.subscribe(self._on_node)
        self.jobs.subscribe(self._on_job)

    @property
    def informers(self) -> list[Informer[Any]]:
        return [self.daemonsets, self.pods, self.revisions, self.nodes, self.jobs]

    @property
    def synced(self) -> bool:
        return all(informer.synced.is_set() for informer in self.informers)

    def opted_in_keys(self) -> list[str]:
        return sorted(_ds_key(ds) for ds in self.daemonsets.values() if _opted_in(ds))

    def _on_daemonset(self, old: CachedDaemonSet | None, new: CachedDaemonSet | None) -> None:
        if new is not None:
            self.key_by_uid[new.view.uid] = _ds_key(new)
        elif old is not None:
            self.key_by_uid.pop(old.view.uid, None)
        if _opted_in(old) or _opted_in(new):
            current = new or old
            assert current is not None
            self.enqueue(_ds_key(current))

    @staticmethod
    def _index(
        index: dict[str, dict[str, Any]], key: str, old_owner: str | None, new: Any | None
    ) -> None:
        if old_owner is not None:
            owned = index.get(old_owner)
            if owned is not None:
                owned.pop(key, None)
                if not owned:
                    del index[old_owner]
        if new is not None and new.owner_uid is not None:
            index.setdefault(new.owner_uid, {})[key] = new

    def _enqueue_owner(self, owner_uid: str | None) -> None:
        if owner_uid is None:
            return
        key = self.key_by_uid.get(owner_uid)
        if key is not None and _opted_in(self.daemonsets.get(key)):
            self.enqueue(key)

    def _on_pod(self, old: CachedPod | None, new: CachedPod | None) -> None:
        current = new or old
        assert current is not None
        key = object_key(current.view.namespace, current.view.name)
        old_owner = old.owner_uid if old is not None and old.owner_kind == "DaemonSet" else None
        kept = new if new is not None and new.owner_kind == "DaemonSet" else None
        if old_owner is None and kept is None:
            return  # never a DaemonSet's pod
        # A pod released by its DaemonSet (or adopted by another) leaves the old owner's index.
        self._index(self.pods_by_owner, key, old_owner, kept)
        self._enqueue_owner(old_owner)
        if kept is not None and kept.owner_uid != old_owner:
            self._enqueue_owner(kept.owner_uid)

    def _on_revision(self, old: CachedRevision | None, new: CachedRevision | None) -> None:
        current = new or old
        assert current is not None
        self._index(self.revisions_by_owner, current.view.name, old.owner_uid if old else None, new)
        self._enqueue_owner(current.owner_uid)

    def _on_node(self, old: NodeView | None, new: NodeView | None) -> None:
        if old is not None and new is not None and old.readiness == new.readiness:
            return
        for key in self.opted_in_keys():
            self.enqueue(key)

    def _on_job(self, old: JobView | None, new: JobView | None) -> None:
        # A pull Job's progress is news for the DaemonSet of the pod it pulls for.
        current = new or old
        assert current is not None
        pod = self.pods.get(object_key(current.namespace, current.pod_name))
        if pod is not None and pod.owner_kind == "DaemonSet":
            self._enqueue_owner(pod.owner_uid)

    def jobs_in(self, namespace: str) -> dict[str, JobView]:
        return {job.name: job for job in self.jobs.values() if job.namespace == namespace}

    def pods_of(self, owner_uid: str) -> list[CachedPod]:
        return list(self.pods_by_owner.get(owner_uid, {}).values())

    def pod_views_of(self, owner_uid: str) -> list[PodView]:
        """The views of the pods `owner_uid` controls (what a reconcile plans with)."""
        return [pod.view for pod in self.pods_by_owner.get(owner_uid, {}).values()]

    def node_views(self, names: Iterable[NodeName]) -> list[NodeView]:
        """The cached Nodes of these names, in name order; a node not in the cache is MISSING."""
        store = self.nodes.store
        missing = NodeReadiness.MISSING
        return [
            node
            if (node := store.get(name)) is not None
            else NodeView(name=name, readiness=missing)
            for name in sorted(names)
        ]

    def revisions_of(self, owner_uid: str) -> list[CachedRevision]:
        return list(self.revisions_by_owner.get(owner_uid, {}).values())
