"""One read of a DaemonSet and everything its rollout depends on, for `status` and `plan`; one
read of every opted-in DaemonSet of a namespace (or of all), for `list`.

The DaemonSet, its pods (its label selector, then its UID in their owner reference), its
ControllerRevisions and every Node, each listed once (page by page) and reduced to the views the
domain decides with, so that both commands see what the controller's caches would show. A
DaemonSet that asks to be rolled back on failure also has its namespace's switch read: the
install's RoleBinding `edgerollout-controller-rollback` (design §13.4.1), so that the dry run
rolls back where the controller would and pauses where it would not; a reader without the right
to read it gets a plan that pauses, and the word that the switch could not be read.

`list` reads many DaemonSets with one list per resource, not one per DaemonSet: the DaemonSets,
then (if any is opted in) the pods, the ControllerRevisions and the Nodes, grouped by their
owner's UID in a `RolloutIndex`. `list --watch` keeps the same index up to date from watches, so
both hand `rollout_status` the same views `status` reads.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime

from edgerollout.cli.daemonset_command import read_daemonset
from edgerollout.domain.model import DaemonSetView, NodeName, NodeView, PodView, RevisionView
from edgerollout.domain.spec.on_failure import OnFailure, RollbackSwitch, read_on_failure
from edgerollout.domain.timestamps import parse_rfc3339
from edgerollout.domain.vocabulary import (
    DAEMONSET_KIND,
    ON_FAILURE_ANNOTATION,
    ROLLBACK_ROLE_BINDING,
    UPDATE_STRATEGY_ANNOTATION,
)
from edgerollout.kube.api import (
    CONTROLLER_REVISIONS,
    DAEMONSETS,
    JSON,
    NODES,
    PODS,
    ROLE_BINDINGS,
    Api,
    ApiError,
    Resource,
)
from edgerollout.kube.views import (
    CachedDaemonSet,
    CachedPod,
    CachedRevision,
    daemonset_from_api,
    node_from_api,
    object_key,
    pod_from_api,
    pod_selector,
    revision_from_api,
)


@dataclass(frozen=True, slots=True, kw_only=True)
class RolloutViews:
    """A DaemonSet and its objects, read once; `spec_observed` is False while the native
    controller has not observed its latest generation; `rollback` whether the install lets the
    controller roll it back (read only when it asks for that: `OFF` otherwise)."""

    daemonset: DaemonSetView
    revisions: tuple[RevisionView, ...]
    pods: tuple[PodView, ...]
    nodes: tuple[NodeView, ...]
    spec_observed: bool
    rollback: RollbackSwitch = RollbackSwitch.OFF


async def list_all(
    api: Api,
    resource: Resource,
    *,
    namespace: str | None = None,
    selector: str | None = None,
    field_selector: str | None = None,
) -> list[JSON]:
    """Every object of `resource`, page by page."""
    items: list[JSON] = []
    token: str | None = None
    while True:
        page = await api.list(
            resource,
            namespace=namespace,
            label_selector=selector,
            field_selector=field_selector,
            continue_token=token,
        )
        items += page.items
        token = page.continue_token
        if token is None:
            return items


async def read_rollout(api: Api, *, name: str, namespace: str) -> RolloutViews:
    """Read the DaemonSet `namespace/name` and the objects of its rollout."""
    raw = await read_daemonset(api, name=name, namespace=namespace)
    daemonset = daemonset_from_api(raw)
    uid = daemonset.view.uid
    selector = pod_selector(raw)
    pods = [
        pod_from_api(obj)
        for obj in await list_all(api, PODS, namespace=namespace, selector=selector)
    ]
    revisions = [
        revision
        for obj in await list_all(api, CONTROLLER_REVISIONS, namespace=namespace, selector=selector)
        if (revision := revision_from_api(obj)).owner_uid == uid
    ]
    nodes = [node_from_api(obj) for obj in await list_all(api, NODES)]
    rollback = RollbackSwitch.OFF
    if asks_for_rollback(daemonset.view):
        rollback = await read_rollback_switch(api, namespace=namespace)
    return RolloutViews(
        daemonset=daemonset.view,
        revisions=tuple(revision.view for revision in revisions),
        pods=tuple(pod.view for pod in pods if pod.owner_uid == uid),
        nodes=tuple(nodes),
        spec_observed=daemonset.observed_generation >= daemonset.generation,
        rollback=rollback,
    )


def asks_for_rollback(daemonset: DaemonSetView) -> bool:
    """Whether the DaemonSet asks to be rolled back on failure (`edgerollout.io/on-failure`)."""
    return read_on_failure(daemonset.annotations.get(ON_FAILURE_ANNOTATION)) is OnFailure.ROLLBACK


async def read_rollback_switch(api: Api, *, namespace: str) -> RollbackSwitch:
    """Whether the install switched rollbacks on in `namespace`: its RoleBinding there (`UNKNOWN`
    when the reader may not read it; any other error is raised, as every read's)."""
    try:
        await api.get(ROLE_BINDINGS, ROLLBACK_ROLE_BINDING, namespace=namespace)
    except ApiError as error:
        if error.not_found:
            return RollbackSwitch.OFF
        if error.status == FORBIDDEN:
            return RollbackSwitch.UNKNOWN
        raise
    return RollbackSwitch.ON


async def read_rollback_switches(api: Api, *, namespace: str | None) -> RollbackSwitches:
    """The install's switches in `namespace` (None: in all), from one list."""
    try:
        found = await list_all(
            api, ROLE_BINDINGS, namespace=namespace, field_selector=ROLLBACK_BINDING_FIELD
        )
    except ApiError as error:
        if error.status == FORBIDDEN:
            return RollbackSwitches(known=False)
        raise
    return RollbackSwitches(switched_on=frozenset(switched_on_in(obj) for obj in found))


FORBIDDEN = 403
ROLLBACK_BINDING_FIELD = f"metadata.name={ROLLBACK_ROLE_BINDING}"
"""The field selector of the install's rollback switches, for a list or a watch."""


def switched_on_in(obj: JSON) -> str:
    """The namespace of a rollback switch (one of the install's RoleBindings)."""
    return str((obj.get("metadata") or {}).get("namespace") or "")


@dataclass(frozen=True, slots=True, kw_only=True)
class RollbackSwitches:
    """The namespaces where the install switched rollbacks on, as far as `known`."""

    switched_on: frozenset[str] = frozenset()
    known: bool = True

    def of(self, namespace: str) -> RollbackSwitch:
        if not self.known:
            return RollbackSwitch.UNKNOWN
        return RollbackSwitch.ON if namespace in self.switched_on else RollbackSwitch.OFF


@dataclass(frozen=True, slots=True, kw_only=True)
class ListedRollout:
    """An opted-in DaemonSet's views, as `read_rollout` reads them for `status`, and when each of
    its ControllerRevisions was created (by hash), for the age of the newest."""

    views: RolloutViews
    revisions_created: Mapping[str, datetime]


@dataclass(frozen=True, slots=True)
class DatedRevision:
    """A ControllerRevision as `list` keeps it: its view and owner, and its creation time."""

    revision: CachedRevision
    created: datetime | None


def opted_in_daemonset(obj: JSON) -> CachedDaemonSet | None:
    """The DaemonSet's view if it carries the update-strategy annotation (whatever its value: an
    unknown one is shown as an invalid annotation), else None."""
    annotations = (obj.get("metadata") or {}).get("annotations") or {}
    return daemonset_from_api(obj) if UPDATE_STRATEGY_ANNOTATION in annotations else None


def daemonset_pod(obj: JSON) -> CachedPod | None:
    """The pod's view if a DaemonSet controls it, else None (the list keeps no other pod)."""
    pod = pod_from_api(obj)
    return pod if pod.owner_kind == DAEMONSET_KIND and pod.owner_uid else None


def dated_revision(obj: JSON) -> DatedRevision:
    created = (obj.get("metadata") or {}).get("creationTimestamp")
    return DatedRevision(
        revision=revision_from_api(obj),
        created=parse_rfc3339(created) if created else None,
    )


class RolloutIndex:
    """Opted-in DaemonSets and the objects of their rollouts, grouped by the owner's UID.

    Each `*_changed(old, new)` takes a change as an informer reports it (old None: added; new
    None: deleted) and returns the keys (`namespace/name`) of the DaemonSets whose rollout it may
    change. Pods and revisions of a DaemonSet not opted in are kept too, since a watch may see it
    opt in later."""

    def __init__(self) -> None:
        self._daemonsets: dict[str, CachedDaemonSet] = {}
        self._key_of_uid: dict[str, str] = {}
        self._pods: dict[str, dict[str, PodView]] = {}
        self._revisions: dict[str, dict[str, DatedRevision]] = {}
        self._nodes: dict[NodeName, NodeView] = {}
        # The owners of the pods on each node: which rollouts a node's readiness changes.
        self._owners_on: dict[NodeName, Counter[str]] = {}
        self._switches = RollbackSwitches()
        # The nodes each opted-in DaemonSet's pods were seen on, kept while the node exists: a
        # node whose pod is gone is still named.
        self._ran_on: dict[str, set[NodeName]] = {}

    def daemonsets(self) -> list[str]:
        """The opted-in DaemonSets, by namespace, then name (as kubectl sorts)."""
        return sorted(self._daemonsets, key=listing_order)

    def owns(self, uid: str | None) -> bool:
        """Whether `uid` is an opted-in DaemonSet's."""
        return uid is not None and uid in self._key_of_uid

    def daemonset_changed(
        self, old: CachedDaemonSet | None, new: CachedDaemonSet | None
    ) -> set[str]:
        if old is not None:
            self._daemonsets.pop(_key(old.view), None)
            self._key_of_uid.pop(old.view.uid, None)
            if new is None or new.view.uid != old.view.uid:
                self._ran_on.pop(old.view.uid, None)
        if new is not None:
            self._daemonsets[_key(new.view)] = new
            self._key_of_uid[new.view.uid] = _key(new.view)
        return {_key(cached.view) for cached in (old, new) if cached is not None}

    def pod_changed(self, old: CachedPod | None, new: CachedPod | None) -> set[str]:
        for cached, step in ((old, -1), (new, 1)):
            if cached is None or cached.owner_uid is None:
                continue
            pods = self._pods.setdefault(cached.owner_uid, {})
            key = object_key(cached.view.namespace, cached.view.name)
            if step > 0:
                pods[key] = cached.view
            elif pods.pop(key, None) is not None and not pods:
                del self._pods[cached.owner_uid]
            node = cached.view.node_name
            if node is not None:
                if self.owns(cached.owner_uid):
                    self._ran_on.setdefault(cached.owner_uid, set()).add(node)
                owners = self._owners_on.setdefault(node, Counter())
                owners[cached.owner_uid] += step
                if owners[cached.owner_uid] <= 0:
                    del owners[cached.owner_uid]
                if not owners:
                    del self._owners_on[node]
        return self._keys_of(cached.owner_uid for cached in (old, new) if cached is not None)

    def revision_changed(self, old: DatedRevision | None, new: DatedRevision | None) -> set[str]:
        if old is not None and old.revision.owner_uid is not None:
            kept = self._revisions.get(old.revision.owner_uid, {})
            if kept.pop(old.revision.view.name, None) is not None and not kept:
                del self._revisions[old.revision.owner_uid]
        if new is not None and new.revision.owner_uid is not None:
            revisions = self._revisions.setdefault(new.revision.owner_uid, {})
            revisions[new.revision.view.name] = new
        return self._keys_of(dated.revision.owner_uid for dated in (old, new) if dated is not None)

    def node_changed(self, old: NodeView | None, new: NodeView | None) -> set[str]:
        if old is not None:
            self._nodes.pop(old.name, None)
        if new is not None:
            self._nodes[new.name] = new
        names = {node.name for node in (old, new) if node is not None}
        keys = self._keys_of(uid for name in names for uid in self._owners_on.get(name, ()))
        for uid, ran_on in self._ran_on.items():
            if names & ran_on:
                keys |= self._keys_of((uid,))
                if new is None:
                    ran_on -= names
        return keys

    def any_asks_for_rollback(self) -> bool:
        """Whether an opted-in DaemonSet asks to be rolled back on failure."""
        return any(asks_for_rollback(cached.view) for cached in self._daemonsets.values())

    def switch_changed(self, old: str | None, new: str | None) -> set[str]:
        """A rollback switch (the namespace of the install's RoleBinding) added or removed."""
        switched_on = set(self._switches.switched_on)
        switched_on.discard(old or "")
        if new is not None:
            switched_on.add(new)
        self._switches = RollbackSwitches(switched_on=frozenset(switched_on))
        namespaces = {namespace for namespace in (old, new) if namespace is not None}
        return {key for key in self._daemonsets if listing_order(key)[0] in namespaces}

    def switches_unknown(self) -> set[str]:
        """The switches cannot be read (the reader may not): every DaemonSet's rollout changes."""
        self._switches = RollbackSwitches(known=False)
        return set(self._daemonsets)

    def rollout(self, key: str) -> ListedRollout | None:
        """The DaemonSet `key`'s rollout as `read_rollout` would read it (None: not opted in).

        Only the nodes its pods are on, or were on since the index started, are handed over: the
        plan looks nodes up by name, so the others change nothing, and a list of many DaemonSets
        does not copy every node for each. A node whose pod is gone (deleted, its replacement not
        yet created) is one the native controller counts and the dashboard draws by name."""
        cached = self._daemonsets.get(key)
        if cached is None:
            return None
        uid = cached.view.uid
        pods = tuple(self._pods.get(uid, {}).values())
        on = {pod.node_name for pod in pods if pod.node_name is not None}
        on |= self._ran_on.get(uid, set())
        revisions = self._revisions.get(uid, {}).values()
        return ListedRollout(
            views=RolloutViews(
                daemonset=cached.view,
                revisions=tuple(dated.revision.view for dated in revisions),
                pods=pods,
                nodes=tuple(self._nodes[name] for name in sorted(on) if name in self._nodes),
                spec_observed=cached.observed_generation >= cached.generation,
                rollback=self._switches.of(cached.view.namespace)
                if asks_for_rollback(cached.view)
                else RollbackSwitch.OFF,
            ),
            revisions_created={
                dated.revision.view.hash: dated.created
                for dated in revisions
                if dated.revision.view.hash is not None and dated.created is not None
            },
        )

    def _keys_of(self, uids: Iterable[str | None]) -> set[str]:
        return {self._key_of_uid[uid] for uid in uids if uid is not None and self.owns(uid)}


def listing_order(key: str) -> tuple[str, ...]:
    """The sort key of a DaemonSet's `namespace/name`: by namespace, then name."""
    return tuple(key.split("/", 1))


def _key(daemonset: DaemonSetView) -> str:
    return object_key(daemonset.namespace, daemonset.name)


async def read_rollouts(api: Api, *, namespace: str | None) -> list[ListedRollout]:
    """Every opted-in DaemonSet of `namespace` (None: of all namespaces) and its rollout, in
    `RolloutIndex.daemonsets` order, from one list of each resource; the pods, ControllerRevisions and
    Nodes are not listed when no DaemonSet is opted in."""
    index = RolloutIndex()
    for obj in await list_all(api, DAEMONSETS, namespace=namespace):
        index.daemonset_changed(None, opted_in_daemonset(obj))
    if not index.daemonsets():
        return []
    if index.any_asks_for_rollback():
        switches = await read_rollback_switches(api, namespace=namespace)
        if not switches.known:
            index.switches_unknown()
        for switched_on in switches.switched_on:
            index.switch_changed(None, switched_on)
    for obj in await list_all(api, CONTROLLER_REVISIONS, namespace=namespace):
        dated = dated_revision(obj)
        if index.owns(dated.revision.owner_uid):
            index.revision_changed(None, dated)
    for obj in await list_all(api, PODS, namespace=namespace):
        pod = daemonset_pod(obj)
        if pod is not None and index.owns(pod.owner_uid):
            index.pod_changed(None, pod)
    for obj in await list_all(api, NODES):
        index.node_changed(None, node_from_api(obj))
    return [rollout for key in index.daemonsets() if (rollout := index.rollout(key)) is not None]
