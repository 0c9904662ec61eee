"""What the decisions look at: small, frozen views of Kubernetes objects.

A view holds only the fields a decision reads, already interpreted (a readiness enum rather than a
list of node conditions, a revision hash rather than a label map). The shell builds views from the
API objects it caches; the domain never sees JSON. Keeping the views this narrow is what lets the
planner be tested with a few lines per scenario and benchmarked on thousands of nodes.

Label and annotation values are interpreted here or next to the decision that uses them (see
`revisions.parse_template_generation`), never by the shell, so there is one place that knows what
`pod-template-generation: "07"` means.
"""

from collections.abc import Iterable, Mapping, Set
from dataclasses import dataclass, field
from datetime import datetime
from enum import Enum, StrEnum
from typing import NewType

NodeName = NewType("NodeName", str)
PodUID = NewType("PodUID", str)
DaemonSetUID = NewType("DaemonSetUID", str)


class NodeReadiness(Enum):
    """Whether a node takes part in an AdvancedRollingUpdate.

    Only READY nodes are upgraded and counted against max-unavailable; the three others are
    skipped alike (design §4.1). They stay distinct so that logs and metrics can say why.
    """

    READY = "Ready"
    NOT_READY = "NotReady"
    UNKNOWN = "Unknown"
    MISSING = "Missing"

    @classmethod
    def from_ready_condition(cls, status: str | None) -> "NodeReadiness":
        """Readiness from the status of the Node's `Ready` condition (None: no such condition).

        A node without a `Ready` condition has never reported: it is UNKNOWN, as the node
        lifecycle controller would mark it.
        """
        if status == "True":
            return cls.READY
        if status == "False":
            return cls.NOT_READY
        return cls.UNKNOWN


class ConditionStatus(StrEnum):
    """The three values of a Kubernetes condition's `status`."""

    TRUE = "True"
    FALSE = "False"
    UNKNOWN = "Unknown"

    @classmethod
    def from_api(cls, raw: str | None) -> "ConditionStatus":
        """A condition status as served; anything but "True"/"False" is UNKNOWN."""
        if raw == cls.TRUE:
            return cls.TRUE
        if raw == cls.FALSE:
            return cls.FALSE
        return cls.UNKNOWN


@dataclass(frozen=True, slots=True, kw_only=True)
class Condition:
    """One entry of an object's `status.conditions`: a pod's, or a DaemonSet's.

    `last_transition_time` is kept as the RFC 3339 string the API server served, so that writing a
    condition back leaves an unchanged transition time byte for byte unchanged.
    """

    type: str
    status: ConditionStatus
    reason: str = ""
    message: str = ""
    last_transition_time: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class NodeView:
    """A Node, reduced to its name, its readiness and its labels (a staged rollout's node
    selector and waves read them), and since when its readiness is what it is (its `Ready`
    condition's lastTransitionTime; None without one), which the dashboard shows."""

    name: NodeName
    readiness: NodeReadiness
    labels: Mapping[str, str] = field(default_factory=dict)
    readiness_since: datetime | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ContainerFailure:
    """A container (or init container) of a pod waiting for a reason that means it is failing."""

    container: str
    reason: str


@dataclass(frozen=True, slots=True, kw_only=True)
class PodView:
    """A pod owned by the DaemonSet being reconciled.

    - `node_name`: the node the pod is bound to, or pinned to by the DaemonSet's node affinity
      while it is pending; None when neither says (such a pod takes no part in a rollout).
    - `revision_hash`: the `controller-revision-hash` label, None when absent or empty.
    - `template_generation`: the `pod-template-generation` label as an integer, None when absent
      or not an integer.
    - `deleting`: the pod has a deletion timestamp (it is Terminating).
    - `ready`, `ready_since`: the pod's `Ready` condition is True, and since when (its
      lastTransitionTime), for minReadySeconds.
    - `conditions`: the pod's conditions by type; only the ones this product reads or writes
      need to be present.

    What tells a failing pod from a starting one (see `health`), kept to a few slots since the
    controller caches every pod of every DaemonSet:
    - `created`: the pod's creation time.
    - `containers_unready_since`: since when its containers have not all been ready, by the
      kubelet's `ContainersReady` condition (its creation while the kubelet has not reported it);
      None while they are all ready. Unlike `Ready`, the node lifecycle controller never clears
      it, so a pod on a node that was lost and came back is not read as failing from then on.
    - `sandbox_since`: since when its current sandbox has been ready to start containers (the
      `PodReadyToStartContainers` condition while True); a node's reboot moves it on.
    - `last_restart`: when a container or init container last terminated and was started
      again (the latest `lastState.terminated.finishedAt`); None if none ever was.
    - `failures`: its containers waiting for a failing reason, in the order the pod lists them.
    """

    namespace: str
    name: str
    uid: PodUID
    node_name: NodeName | None
    revision_hash: str | None = None
    template_generation: int | None = None
    deleting: bool = False
    ready: bool = False
    ready_since: datetime | None = None
    conditions: Mapping[str, Condition] = field(default_factory=dict)
    created: datetime | None = None
    containers_unready_since: datetime | None = None
    sandbox_since: datetime | None = None
    last_restart: datetime | None = None
    failures: tuple[ContainerFailure, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class DaemonSetView:
    """The DaemonSet being reconciled: its identity, annotations and update settings.

    The annotations are kept whole and read where they are decided on (strategy, budget,
    `deprecated.daemonset.template.generation`), so a view cannot disagree with its source.
    `desired_nodes` is the native controller's `status.desiredNumberScheduled` (None if unknown).
    `counted_while_not_ready` holds the not-Ready readinesses (`NOT_READY`, `UNKNOWN`) of nodes the
    native controller still counts there: the pod template tolerates the `NoSchedule` taint the
    node lifecycle controller puts on such a node (`node.kubernetes.io/not-ready`, `.../unreachable`),
    as node agents that tolerate every taint do.
    """

    namespace: str
    name: str
    uid: DaemonSetUID
    annotations: Mapping[str, str] = field(default_factory=dict)
    update_strategy_type: str = "RollingUpdate"
    min_ready_seconds: int = 0
    desired_nodes: int | None = None
    counted_while_not_ready: frozenset[NodeReadiness] = frozenset()


@dataclass(frozen=True, slots=True, kw_only=True)
class RevisionView:
    """A ControllerRevision of the DaemonSet: its `.revision` and `controller-revision-hash`, and
    the DaemonSet's template generation it was made for (its copy of the DaemonSet's
    `deprecated.daemonset.template.generation` annotation; None without one)."""

    name: str
    revision: int
    hash: str | None
    template_generation: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class InFlightDeletion:
    """A pod this controller has asked the API server to delete, not yet seen gone.

    The informer cache lags behind the controller's own writes: right after a delete it may still
    show the pod as running, and after the delete it shows the node with no pod until the native
    controller creates the replacement. Listing the deletion here (with the node it was on) makes
    the planner count that node as unavailable and never delete the pod twice, so the budget holds
    between a write and its echo. The shell may drop an entry once a pod of the newest revision is
    seen on `node_name`, or when the entry is old enough that the cache must have caught up.
    """

    uid: PodUID
    node_name: NodeName


@dataclass(frozen=True, slots=True)
class InFlight:
    """The deletions in flight one plan is given (see `InFlightDeletion`).

    - `by_uid`: each deleted pod's node, by the pod's UID.
    - `nodes`: the nodes of those deletions.
    - `touched`: the nodes where a deletion came or went since the previous plan of the same
      DaemonSet was given its own (None: not known; the planner's book then compares them with
      the ones it was given before). The controller keeps its deletions as they are made and
      dropped, and hands them over as views with what moved: a plan at 10 % of 10,000 nodes
      then costs what changed, not the 1,000 deletions in flight (design §4.5).

    The shell may hand read-only views over what it keeps, valid while the plan runs."""

    by_uid: Mapping[PodUID, NodeName]
    nodes: Set[NodeName]
    touched: Set[NodeName] | None = None

    @classmethod
    def of(cls, deletions: Iterable[InFlightDeletion]) -> "InFlight":
        """The deletions as a plan reads them, with nothing said about what moved."""
        by_uid = {deletion.uid: deletion.node_name for deletion in deletions}
        return cls(by_uid=by_uid, nodes=frozenset(by_uid.values()))


NO_IN_FLIGHT = InFlight(by_uid={}, nodes=frozenset())
