"""A DaemonSet's `Snapshot` for the planner, taken from the caches without copying them.

A plan of a 1,000-node DaemonSet mostly reads the few nodes that changed since the previous one
(see `domain.rollout_book`), so copying every pod into the snapshot would cost more than the plan.
The snapshot's collections are therefore read-only views over the caches' indexes, built in
constant time. They are only valid until the next `await`: the plan runs without yielding, so
the caches cannot change under it (the informers apply watch events on the same event loop).
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, KeysView, Mapping, Sequence
from datetime import datetime

from edgerollout.controller.cluster_cache import ClusterCache
from edgerollout.controller.rollout_state import RolloutState
from edgerollout.domain.model import NodeName, NodeReadiness, NodeView, PodView
from edgerollout.domain.planning.decision import Snapshot
from edgerollout.domain.planning.prepull import JobView
from edgerollout.kube.informer import Informer
from edgerollout.kube.views import CachedDaemonSet, CachedPod, object_key


def take_snapshot(
    cache: ClusterCache, daemonset: CachedDaemonSet, state: RolloutState, *, now: datetime
) -> Snapshot:
    """What the caches show of `daemonset` now, with what `state` remembers of its writes.

    Settles the state's deletions and condition writes against the caches first, so the
    snapshot hands the planner only the writes the caches do not show yet."""
    view = daemonset.view
    by_node = _PodsByNode(cache.pods_by_owner_node.get(view.uid, {}))
    pods = _PodViews(cache.pods_by_owner.get(view.uid, {}))
    changed = state.take_changed_nodes()
    in_flight = state.deletions.settle(lambda node: by_node.get(node, ()), changed)
    state.conditions.settle(pods)
    return Snapshot(
        daemonset=view,
        revisions=[revision.view for revision in cache.revisions_of(view.uid)],
        pods=pods,
        pods_by_node=by_node,
        readiness=_Readiness(cache.nodes),
        node_labels=_Labels(cache.nodes),
        changed_nodes=changed,
        in_flight=in_flight,
        pull_jobs=_JobsIn(cache.jobs, view.namespace),
        pull_template=daemonset.pull_template,
        paused_before=state.paused,
        pause_changes=state.pause_changes,
        now=now,
    )


class _PodsByNode(Mapping[NodeName, Sequence[PodView]]):
    """One DaemonSet's pods by node, over the cache's index."""

    def __init__(self, held: Mapping[NodeName, Mapping[str, CachedPod]]) -> None:
        self._held = held

    def __getitem__(self, node: NodeName) -> Sequence[PodView]:
        return [pod.view for pod in self._held[node].values()]

    def __contains__(self, node: object) -> bool:
        return node in self._held

    def keys(self) -> KeysView[NodeName]:
        # The index's own: a set operation with it runs at C speed (`Snapshot.budget_base`).
        return self._held.keys()

    def __iter__(self) -> Iterator[NodeName]:
        return iter(self._held)

    def __len__(self) -> int:
        return len(self._held)


class _PodViews(Collection[PodView]):
    """One DaemonSet's pods, over the cache's index."""

    def __init__(self, held: Mapping[str, CachedPod]) -> None:
        self._held = held

    def __iter__(self) -> Iterator[PodView]:
        return (pod.view for pod in self._held.values())

    def __len__(self) -> int:
        return len(self._held)

    def __contains__(self, item: object) -> bool:
        return any(pod.view == item for pod in self._held.values())


class _Readiness(Mapping[NodeName, NodeReadiness]):
    """Every cached node's readiness."""

    def __init__(self, nodes: Informer[NodeView]) -> None:
        self._nodes = nodes

    def __getitem__(self, node: NodeName) -> NodeReadiness:
        return self._nodes.store[node].readiness

    def __iter__(self) -> Iterator[NodeName]:
        return (NodeName(name) for name in self._nodes.store)

    def __len__(self) -> int:
        return len(self._nodes.store)


class _Labels(Mapping[NodeName, Mapping[str, str]]):
    """Every cached node's labels."""

    def __init__(self, nodes: Informer[NodeView]) -> None:
        self._nodes = nodes

    def __getitem__(self, node: NodeName) -> Mapping[str, str]:
        return self._nodes.store[node].labels

    def __iter__(self) -> Iterator[NodeName]:
        return (NodeName(name) for name in self._nodes.store)

    def __len__(self) -> int:
        return len(self._nodes.store)


class _JobsIn(Mapping[str, JobView]):
    """The pull Jobs of one namespace, by name."""

    def __init__(self, jobs: Informer[JobView], namespace: str) -> None:
        self._jobs = jobs
        self._namespace = namespace

    def __getitem__(self, name: str) -> JobView:
        return self._jobs.store[object_key(self._namespace, name)]

    def __iter__(self) -> Iterator[str]:
        return (job.name for job in self._jobs.store.values() if job.namespace == self._namespace)

    def __len__(self) -> int:
        return sum(1 for _ in self)
