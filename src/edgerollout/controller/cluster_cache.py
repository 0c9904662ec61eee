"""The controller's view of the cluster: list+watch caches and the indexes reconciles need.

DaemonSets, ControllerRevisions and our pre-pull Jobs (optionally one namespace), all Nodes, and the
pods of each opted-in DaemonSet. Only what a rollout reads is listed, watched and kept (design
§10.1): each opted-in DaemonSet has a pod cache of its own, whose list and watch ask the API server
for its selector's pods carrying the `pod-template-generation` label the DaemonSet controller
stamps, in its namespace — so the pods of Deployments, StatefulSets, Jobs and of DaemonSets left
alone cost nothing, neither memory nor a wake-up. It starts when the DaemonSet is seen with the
update-strategy annotation and stops when it loses it or is deleted. Jobs are asked for by our
pull label. No selector tells a DaemonSet's ControllerRevisions from a StatefulSet's, so those are
dropped as they are read; so are pods another controller holds.

Pods and revisions are indexed by the UID of their controlling DaemonSet, so a reconcile touches
only its own objects; pods also by node. Each change of a DaemonSet's pod on a node, and each change
of a node's readiness, is reported to a `ChangeListener` (the controller's `RolloutStates`), so that
a plan judges only the nodes that changed (see `domain.rollout_book`). Changes are turned into
DaemonSet keys for the work queue:
- a DaemonSet that carries the update-strategy annotation (or just lost it) -> itself;
- its pod cache's first list -> itself, so that it is planned on its pods (never before them);
- a pod or ControllerRevision -> its owning DaemonSet;
- a Node whose readiness changed -> every opted-in DaemonSet, so a node coming back is upgraded
  within seconds of turning Ready (its heartbeats, which change nothing we read, enqueue nothing);
  a Node whose labels changed -> the same, and it is reported as changed: a staged rollout's
  selector and waves read them (design §12), and its book keeps each node's wave until told;
- a pre-pull Job owned by the pod its label names -> that pod's DaemonSet.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import Any, Protocol

from edgerollout.domain.model import NodeName, NodeView
from edgerollout.domain.planning.prepull import JobView
from edgerollout.domain.vocabulary import (
    DAEMONSET_KIND,
    POD_TEMPLATE_GENERATION_LABEL,
    PREPULL_LABEL,
    UPDATE_STRATEGY_ANNOTATION,
)
from edgerollout.kube.api import CONTROLLER_REVISIONS, DAEMONSETS, JOBS, NODES, PODS, Api
from edgerollout.kube.informer import Informer, Reconnect, run_all
from edgerollout.kube.pod_fields import pod_events
from edgerollout.kube.views import (
    CachedDaemonSet,
    CachedPod,
    CachedRevision,
    controller_kind,
    daemonset_from_api,
    job_from_api,
    node_from_api,
    object_key,
    pod_from_api,
    revision_from_api,
)

Enqueue = Callable[[str], None]


class ChangeListener(Protocol):
    """Told of every change a DaemonSet's plan must judge again."""

    def pod_changed(self, owner_uid: str, node: NodeName) -> None:
        """A pod controlled by `owner_uid` on `node` was added, changed or removed."""

    def node_changed(self, node: NodeName) -> None:
        """The readiness or the labels of `node` changed, or it was added or removed."""


class _NoListener:
    def pod_changed(self, owner_uid: str, node: NodeName) -> None:
        pass

    def node_changed(self, node: NodeName) -> None:
        pass


def _opted_in(daemonset: CachedDaemonSet | None) -> bool:
    return daemonset is not None and UPDATE_STRATEGY_ANNOTATION in daemonset.view.annotations


def _controlled_by(owner_uid: str) -> Callable[[CachedPod], bool]:
    """Whether a pod is one that DaemonSet controls (not one its selector matches but another
    controller holds)."""

    def controlled(pod: CachedPod) -> bool:
        return pod.owner_kind == DAEMONSET_KIND and pod.owner_uid == owner_uid

    return controlled


def _pods_of(owner_uid: str) -> Callable[[dict[str, Any]], CachedPod | None]:
    """The transform of one DaemonSet's pod cache (its lists): a pod that DaemonSet controls, as
    the cache keeps it, else None. Its watch decodes only the fields the cache reads
    (`pod_events`), and keeps the same pods."""
    controlled = _controlled_by(owner_uid)

    def kept(obj: dict[str, Any]) -> CachedPod | None:
        pod = pod_from_api(obj)
        return pod if controlled(pod) else None

    return kept


def pods_selector(daemonset: CachedDaemonSet) -> str:
    """What a DaemonSet's pod cache asks the API server for: its selector's pods that the
    DaemonSet controller made."""
    return ",".join(
        term for term in (daemonset.pod_selector, POD_TEMPLATE_GENERATION_LABEL) if term
    )


def daemonset_revision(obj: dict[str, Any]) -> CachedRevision | None:
    """A ControllerRevision of a DaemonSet, as the cache keeps it (None for a StatefulSet's)."""
    if controller_kind(obj.get("metadata") or {}) != DAEMONSET_KIND:
        return None
    return revision_from_api(obj)


def _ds_key(daemonset: CachedDaemonSet) -> str:
    return object_key(daemonset.view.namespace, daemonset.view.name)


class ClusterCache:
    def __init__(
        self,
        api: Api,
        *,
        namespace: str | None,
        enqueue: Enqueue,
        changes: ChangeListener | None = None,
    ) -> None:
        self.api = api
        self.enqueue = enqueue
        self.changes: ChangeListener = changes if changes is not None else _NoListener()
        # Every cache of the controller, the pod caches included: after an outage the first to
        # get an answer wakes the others from their back-off.
        self.reconnect = Reconnect()
        self.daemonsets: Informer[CachedDaemonSet] = Informer(
            api, DAEMONSETS, daemonset_from_api, namespace=namespace, reconnect=self.reconnect
        )
        self.revisions: Informer[CachedRevision] = Informer(
            api,
            CONTROLLER_REVISIONS,
            daemonset_revision,
            namespace=namespace,
            reconnect=self.reconnect,
        )
        self.nodes: Informer[NodeView] = Informer(
            api, NODES, node_from_api, reconnect=self.reconnect
        )
        self.jobs: Informer[JobView] = Informer(
            api,
            JOBS,
            job_from_api,
            namespace=namespace,
            label_selector=PREPULL_LABEL,
            reconnect=self.reconnect,
        )
        self.key_by_uid: dict[str, str] = {}
        self.pods_by_owner: dict[str, dict[str, CachedPod]] = {}
        self.pods_by_owner_node: dict[str, dict[NodeName, dict[str, CachedPod]]] = {}
        self.revisions_by_owner: dict[str, dict[str, CachedRevision]] = {}
        # The pod cache of each opted-in DaemonSet, by its UID, and the task that runs it.
        self.pods: dict[str, Informer[CachedPod]] = {}
        self._pod_tasks: dict[str, asyncio.Task[None]] = {}
        # Set whenever a pod cache starts, stops or ends a list: what `wait_synced` waits for.
        self._pod_caches_moved = asyncio.Event()
        self.daemonsets.subscribe(self._on_daemonset)
        self.revisions.subscribe(self._on_revision)
        self.nodes.subscribe(self._on_node)
        self.jobs.subscribe(self._on_job)

    @property
    def informers(self) -> list[Informer[Any]]:
        """The caches that run for the controller's whole life (the pod caches come and go)."""
        return [self.daemonsets, self.revisions, self.nodes, self.jobs]

    @property
    def synced(self) -> bool:
        """Whether every cache has listed, the pod cache of each opted-in DaemonSet included."""
        return all(informer.synced.is_set() for informer in self.informers) and all(
            informer.synced.is_set() for informer in self.pods.values()
        )

    def pods_listed(self, daemonset: CachedDaemonSet) -> bool:
        """Whether the pods of `daemonset` have been listed, if it is opted in (one that is not
        has none to list)."""
        if not _opted_in(daemonset):
            return True
        informer = self.pods.get(daemonset.view.uid)
        return informer is not None and informer.synced.is_set()

    def pod(self, key: str) -> CachedPod | None:
        """The cached pod `namespace/name`, whichever opted-in DaemonSet controls it."""
        for informer in self.pods.values():
            pod = informer.get(key)
            if pod is not None:
                return pod
        return None

    def counts(self) -> dict[str, int]:
        """How many objects each kind of cache holds (the pod caches together)."""
        counted = {informer.resource.plural: informer.count() for informer in self.informers}
        counted[PODS.plural] = sum(informer.count() for informer in self.pods.values())
        return counted

    async def run(self) -> None:
        """Run every cache until cancelled; the pod caches stop with it."""
        try:
            await run_all(self.informers)
        finally:
            for owner_uid in list(self._pod_tasks):
                await self._stop_pods(owner_uid)

    async def wait_synced(self) -> None:
        """Wait until `synced`: the DaemonSets' list starts the pod caches it needs, and a pod
        cache stopped before its first list (its DaemonSet opted out) is waited for no more."""
        for informer in self.informers:
            await informer.synced.wait()
        while not self.synced:
            self._pod_caches_moved.clear()
            await self._pod_caches_moved.wait()

    def _start_pods(self, daemonset: CachedDaemonSet) -> None:
        uid = daemonset.view.uid
        if uid in self.pods:
            return
        informer: Informer[CachedPod] = Informer(
            self.api,
            PODS,
            _pods_of(uid),
            namespace=daemonset.view.namespace,
            label_selector=pods_selector(daemonset),
            reconnect=self.reconnect,
            decode=pod_events(_controlled_by(uid)),
        )
        informer.subscribe(self._on_pod)
        key = _ds_key(daemonset)

        def listed() -> None:
            self.enqueue(key)
            self._pod_caches_moved.set()

        informer.on_listed = listed
        self.pods[uid] = informer
        self._pod_tasks[uid] = asyncio.get_running_loop().create_task(
            informer.run(), name=f"informer-pods-{uid}"
        )

    def _forget_pods(self, owner_uid: str) -> None:
        """Stop the pod cache of a DaemonSet that is no longer opted in, and drop its pods."""
        self.pods.pop(owner_uid, None)
        task = self._pod_tasks.pop(owner_uid, None)
        if task is not None:
            task.cancel()
        self.pods_by_owner.pop(owner_uid, None)
        self.pods_by_owner_node.pop(owner_uid, None)
        self._pod_caches_moved.set()

    async def _stop_pods(self, owner_uid: str) -> None:
        task = self._pod_tasks.get(owner_uid)
        self._forget_pods(owner_uid)
        if task is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await task

    def opted_in_keys(self) -> list[str]:
        return sorted(_ds_key(ds) for ds in self.daemonsets.values() if _opted_in(ds))

    def keys_to_reconcile(self) -> list[str]:
        """The DaemonSets a leader reconciles once it starts: the opted-in ones, and those that
        are not but still carry the controller's rollout condition (it opted out while no
        controller ran), whose condition goes."""
        return sorted(
            _ds_key(ds)
            for ds in self.daemonsets.values()
            if _opted_in(ds) or ds.rollout_condition is not None
        )

    def _on_daemonset(self, old: CachedDaemonSet | None, new: CachedDaemonSet | None) -> None:
        if new is not None:
            self.key_by_uid[new.view.uid] = _ds_key(new)
        elif old is not None:
            self.key_by_uid.pop(old.view.uid, None)
        if _opted_in(new):
            assert new is not None
            self._start_pods(new)
        elif old is not None:
            self._forget_pods(old.view.uid)
        if _opted_in(old) or _opted_in(new) or (new is not None and new.rollout_condition):
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
        # Every cached pod is its cache's DaemonSet's (`_pods_of`): one released by it, or
        # adopted by another, leaves that cache (and the other DaemonSet's cache, if any, adds it).
        old_owner = old.owner_uid if old is not None else None
        self._index(self.pods_by_owner, key, old_owner, new)
        old_node = old.view.node_name if old is not None else None
        new_node = new.view.node_name if new is not None else None
        self._index_by_node(key, old_owner, old_node, new, new_node)
        self._enqueue_owner(old_owner)
        if new is not None and new.owner_uid != old_owner:
            self._enqueue_owner(new.owner_uid)

    def _index_by_node(
        self,
        key: str,
        old_owner: str | None,
        old_node: NodeName | None,
        new: CachedPod | None,
        new_node: NodeName | None,
    ) -> None:
        if old_owner is not None and old_node is not None:
            by_node = self.pods_by_owner_node.get(old_owner, {})
            held = by_node.get(old_node)
            if held is not None:
                held.pop(key, None)
                if not held:
                    del by_node[old_node]
                    if not by_node:
                        del self.pods_by_owner_node[old_owner]
            self.changes.pod_changed(old_owner, old_node)
        if new is not None and new.owner_uid is not None and new_node is not None:
            by_node = self.pods_by_owner_node.setdefault(new.owner_uid, {})
            by_node.setdefault(new_node, {})[key] = new
            self.changes.pod_changed(new.owner_uid, new_node)

    def _on_revision(self, old: CachedRevision | None, new: CachedRevision | None) -> None:
        current = new or old
        assert current is not None
        self._index(self.revisions_by_owner, current.view.name, old.owner_uid if old else None, new)
        self._enqueue_owner(current.owner_uid)

    def _on_node(self, old: NodeView | None, new: NodeView | None) -> None:
        if (
            old is not None
            and new is not None
            and old.readiness == new.readiness
            and old.labels == new.labels
        ):
            return  # a heartbeat, or a change of nothing a plan reads
        current = new or old
        assert current is not None
        self.changes.node_changed(current.name)
        for key in self.opted_in_keys():
            self.enqueue(key)

    def _on_job(self, old: JobView | None, new: JobView | None) -> None:
        # A pull Job's progress is news for the DaemonSet of the pod it pulls for, if that pod
        # owns it: a Job that only names the pod in its label is not ours (domain.prepull).
        current = new or old
        assert current is not None
        pod = self.pod(object_key(current.namespace, current.pod_name))
        if pod is not None and pod.view.uid == current.owner_uid:
            self._enqueue_owner(pod.owner_uid)

    def revisions_of(self, owner_uid: str) -> list[CachedRevision]:
        return list(self.revisions_by_owner.get(owner_uid, {}).values())
