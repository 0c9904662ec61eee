"""One read of a DaemonSet and everything its rollout depends on, for `status` and `plan`.

The DaemonSet, its pods (its label selector, then its UID in their owner reference), its
ControllerRevisions and every Node, each listed once (page by page) and reduced to the views the
domain decides with, so that both commands see what the controller's caches would show.
"""

from __future__ import annotations

from dataclasses import dataclass

from edgerollout.cli.daemonset_command import read_daemonset
from edgerollout.domain.model import DaemonSetView, NodeView, PodView, RevisionView
from edgerollout.kube.api import CONTROLLER_REVISIONS, JSON, NODES, PODS, Api, Resource
from edgerollout.kube.views import (
    daemonset_from_api,
    node_from_api,
    pod_from_api,
    pod_selector,
    revision_from_api,
)


@dataclass(frozen=True, slots=True, kw_only=True)
class RolloutViews:
    """A DaemonSet and its objects, read once; `spec_observed` is False while the native
    controller has not observed its latest generation."""

    daemonset: DaemonSetView
    revisions: tuple[RevisionView, ...]
    pods: tuple[PodView, ...]
    nodes: tuple[NodeView, ...]
    spec_observed: bool


async def list_all(
    api: Api, resource: Resource, *, namespace: str | None = None, selector: str | None = None
) -> list[JSON]:
    """Every object of `resource`, page by page."""
    items: list[JSON] = []
    token: str | None = None
    while True:
        page = await api.list(
            resource, namespace=namespace, label_selector=selector, continue_token=token
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
    return RolloutViews(
        daemonset=daemonset.view,
        revisions=tuple(revision.view for revision in revisions),
        pods=tuple(pod.view for pod in pods if pod.owner_uid == uid),
        nodes=tuple(nodes),
        spec_observed=daemonset.observed_generation >= daemonset.generation,
    )
