"""Short constructors for the views the domain tests are written in.

Defaults describe the common case (a Ready node; a Ready pod of the newest revision, Ready for an
hour, that started without a hitch), so that each test spells out only what its scenario is about.
"""

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TypeVar

from edgerollout.domain.events import EventType, Notice, printable
from edgerollout.domain.model import (
    Condition,
    ConditionStatus,
    ContainerFailure,
    DaemonSetUID,
    DaemonSetView,
    InFlight,
    InFlightDeletion,
    NodeName,
    NodeReadiness,
    NodeView,
    PodUID,
    PodView,
    RevisionView,
)
from edgerollout.domain.planning.decision import Plan, Snapshot
from edgerollout.domain.planning.prepull import JobView, PullTemplate
from edgerollout.domain.planning.revisions import TargetRevision
from edgerollout.domain.planning.verdicts import DeletionPlan, Labels, no_labels
from edgerollout.domain.spec.max_unavailable import (
    InvalidMaxUnavailable,
    MaxUnavailable,
    read_max_unavailable,
)
from edgerollout.domain.spec.staging import NOT_STAGED, Staging
from edgerollout.domain.vocabulary import ON_DELETE

T = TypeVar("T")
E = TypeVar("E", bound=Exception)

NOW = datetime(2025, 3, 1, 12, 0, 0, tzinfo=UTC)
NOW_RFC3339 = "2025-03-01T12:00:00Z"
NEW = "hash-new"
OLD = "hash-old"
NAMESPACE = "default"
TARGET = TargetRevision(hash=NEW, template_generation=None)
# How long a pod takes from its creation to Ready, and to its sandbox, in the common case.
STARTS_IN = timedelta(seconds=30)
SANDBOX_IN = timedelta(seconds=2)


def node(name: str, readiness: NodeReadiness = NodeReadiness.READY) -> NodeView:
    return NodeView(name=NodeName(name), readiness=readiness)


def pod(
    name: str,
    on: str | None,
    *,
    revision: str | None = NEW,
    generation: int | None = None,
    ready: bool = True,
    ready_for: timedelta = timedelta(hours=1),
    deleting: bool = False,
    conditions: Mapping[str, Condition] | None = None,
    created: datetime | None = None,
    unready_since: datetime | None = None,
    restarted: datetime | None = None,
    failures: Iterable[ContainerFailure] = (),
) -> PodView:
    """A pod; unless told, created `STARTS_IN` before it became Ready (a pod not Ready: that long
    ago), its containers as ready as it is, its sandbox up `SANDBOX_IN` after its creation."""
    ready_since = NOW - ready_for if ready else None
    if created is None:
        created = (ready_since or NOW) - STARTS_IN
    if unready_since is None and not ready:
        unready_since = created
    return PodView(
        namespace=NAMESPACE,
        name=name,
        uid=uid(name),
        node_name=None if on is None else NodeName(on),
        revision_hash=revision,
        template_generation=generation,
        deleting=deleting,
        ready=ready,
        ready_since=ready_since,
        conditions={} if conditions is None else conditions,
        created=created,
        containers_unready_since=unready_since,
        sandbox_since=created + SANDBOX_IN,
        last_restart=restarted,
        failures=tuple(failures),
    )


def condition(
    kind: str,
    status: ConditionStatus,
    reason: str = "",
    *,
    revision: str = NEW,
    since: str | None = None,
) -> Condition:
    """A `kind` condition (PodNeedUpgrade, PodImageReady) naming `revision` in its message, as
    the controller writes it; `since` is its lastTransitionTime."""
    return Condition(
        type=kind,
        status=status,
        reason=reason,
        message=f"controllerrevision: {revision}",
        last_transition_time=since,
    )


def old_pod(
    name: str,
    on: str | None,
    *,
    ready: bool = True,
    ready_for: timedelta = timedelta(hours=1),
    deleting: bool = False,
) -> PodView:
    """A pod of the previous revision (OLD)."""
    return pod(name, on, revision=OLD, ready=ready, ready_for=ready_for, deleting=deleting)


def uid(name: str) -> PodUID:
    return PodUID(f"uid-{name}")


def in_flight(name: str, on: str) -> InFlightDeletion:
    return InFlightDeletion(uid=uid(name), node_name=NodeName(on))


def revision(
    name: str, number: int, revision_hash: str | None, *, generation: int | None = None
) -> RevisionView:
    return RevisionView(
        name=name, revision=number, hash=revision_hash, template_generation=generation
    )


REVISIONS = (revision("ds-old", 1, OLD), revision("ds-new", 2, NEW))
"""The DaemonSet's two ControllerRevisions: the previous one (OLD) and the newest (NEW)."""


def daemonset(
    annotations: Mapping[str, str] | None = None,
    *,
    update_strategy_type: str = ON_DELETE,
    min_ready_seconds: int = 0,
    desired_nodes: int | None = None,
    namespace: str = NAMESPACE,
) -> DaemonSetView:
    return DaemonSetView(
        namespace=namespace,
        name="nginx-daemonset",
        uid=DaemonSetUID("uid-nginx-daemonset"),
        annotations={} if annotations is None else annotations,
        update_strategy_type=update_strategy_type,
        min_ready_seconds=min_ready_seconds,
        desired_nodes=desired_nodes,
    )


def snapshot(
    ds: DaemonSetView,
    *,
    revisions: Iterable[RevisionView] = (),
    pods: Iterable[PodView] = (),
    nodes: Iterable[NodeView] = (),
    now: datetime = NOW,
    in_flight: Iterable[InFlightDeletion] = (),
    changed_nodes: Iterable[str] = (),
    pull_jobs: Mapping[str, JobView] | None = None,
    pull_template: PullTemplate | None = None,
) -> Snapshot:
    """What the caches would show: `pods` (also by node) and the readiness of `nodes`."""
    pods = tuple(pods)
    by_node: dict[NodeName, list[PodView]] = {}
    for held in pods:
        if held.node_name is not None:
            by_node.setdefault(held.node_name, []).append(held)
    listed = tuple(nodes)
    return Snapshot(
        daemonset=ds,
        revisions=tuple(revisions),
        pods=pods,
        pods_by_node=by_node,
        readiness={n.name: n.readiness for n in listed},
        node_labels={n.name: n.labels for n in listed if n.labels},
        changed_nodes=frozenset(NodeName(name) for name in changed_nodes),
        in_flight=InFlight.of(in_flight),
        pull_jobs=pull_jobs or {},
        pull_template=pull_template,
        now=now,
    )


def warning(reason: str, message: str, subject: str) -> Notice:
    """A Warning notice about `subject`: the value refused, or the pod it is about."""
    return Notice(type=EventType.WARNING, reason=reason, message=message, subject=subject)


def refused(annotation: str, raw: str, reason: str, why: str) -> Notice:
    """The Warning for `annotation: raw`, a value its reader refuses, and `why`."""
    return warning(reason, f'{annotation} is "{raw}": {why}', raw)


def one_outdated_node(annotations: Mapping[str, str]) -> Snapshot:
    """The DaemonSet annotated so, on one Ready node whose pod is of the previous revision."""
    return snapshot(
        daemonset(annotations),
        revisions=REVISIONS,
        pods=[old_pod("web-1", "edge-1")],
        nodes=[node("edge-1")],
    )


def assert_refused(result: object, annotation: str, raw: str, reason: str, expected: str) -> None:
    """`result` is the Warning `refused` makes for `annotation: raw`, whatever the problem it
    names, and ends saying what is `expected`."""
    assert isinstance(result, Notice)
    assert (result.type, result.reason, result.subject) == (EventType.WARNING, reason, raw)
    assert result.message.startswith(f'{annotation} is "{printable(raw)}": ')
    assert result.message.endswith(expected)


def returned_or_raised(parse: Callable[[str], T], text: str, error: type[E]) -> T | E:
    """What `parse(text)` returns, or the `error` it raises."""
    try:
        return parse(text)
    except error as raised:
        return raised


def deleted(decided: Plan | DeletionPlan) -> list[str]:
    """The names of the pods a plan deletes, in its order."""
    return [deletion.name for deletion in decided.deletions]


def max_unavailable(raw: str | None, *, base: int) -> MaxUnavailable | InvalidMaxUnavailable:
    """`apps.openyurt.io/max-unavailable: raw` read, then resolved over `base` nodes, as a
    reconcile does (None: the annotation is unset)."""
    count = read_max_unavailable(raw)
    if isinstance(count, InvalidMaxUnavailable):
        return count
    return MaxUnavailable.of(count, base=base)


@dataclass(frozen=True, kw_only=True)
class PlanInputs:
    """A whole cluster as the planning rules read it: what the product's planner
    (`planning.plan_deletions`) and the oracle (`planner_oracle.full_plan_deletions`) both plan.

    `desired_nodes` is how many nodes the native controller says should run the DaemonSet
    (`status.desiredNumberScheduled`); `counted_while_not_ready` the readiness of skipped nodes that
    count is known to hold; `staging` and the nodes' `labels` say which nodes are held.
    """

    pods: Iterable[PodView]
    nodes: Iterable[NodeView]
    target: TargetRevision = TARGET
    max_unavailable: int = 1
    min_ready_seconds: int = 0
    now: datetime = NOW
    in_flight: Iterable[InFlightDeletion] = ()
    desired_nodes: int | None = None
    counted_while_not_ready: frozenset[NodeReadiness] = frozenset()
    staging: Staging = NOT_STAGED
    labels: Labels = no_labels
    progress_deadline: timedelta | None = None
