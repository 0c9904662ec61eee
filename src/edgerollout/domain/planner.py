"""Which pods an AdvancedRollingUpdate deletes now.

This is Kubernetes' DaemonSet `rollingUpdate` for `maxSurge: 0` (`pkg/controller/daemon/update.go`)
with one change, the reason this product exists: only nodes whose `Ready` condition is True take
part (design §4.1). A NotReady, Unknown or missing node is skipped: its pods are never deleted (the
kubelet could not confirm, and the pod would hold a unit of budget while Terminating forever) and
the node is not counted as unavailable (one offline node must not stop the upgrade of a thousand).
When it turns Ready again it takes part in the next plan like any other node.

On each Ready node the planner looks at the pods that are not Terminating (and not already being
deleted by this controller, see `InFlightDeletion`) and gives the node a `NodeVerdict`:

| pods on the node (not terminating)   | verdict              | unavailable | deleted          |
|--------------------------------------|----------------------|-------------|------------------|
| one current pod, available           | UP_TO_DATE           | no          | -                |
| one current pod, not available       | STARTING             | yes         | -                |
| one current pod, failing             | BROKEN               | yes         | -                |
| one outdated pod, available          | OUTDATED             | no          | if budget allows |
| one outdated pod, not available      | OUTDATED_UNAVAILABLE | yes         | at once          |
| none (nothing, or only terminating)  | EMPTY                | yes         | -                |
| one outdated and one current         | OLD_AND_NEW          | yes         | -                |
| two or more current, or two outdated | EXCESS               | yes         | -                |

"Available" is Ready for longer than minReadySeconds (see `availability`). A current pod is *failing*
(`health.judge_health`: crash-looping, unable to pull, not ready past its progress deadline, or
restarted after its start-up) when a progress deadline is given: it is never counted as available
even while Ready, and it tells a broken upgrade from an offline node (design §13). An outdated pod that is
not available is replaced at once: the node is unavailable already, so deleting it costs nothing,
and it keeps counting as unavailable (as in current upstream). Then available outdated pods are
deleted in node-name order while `unavailable < max_unavailable`, each deletion making one more
node unavailable.

A staged rollout (design §12, `staging`) holds some nodes back: a held node keeps its verdict and
its share of the budget, but its pod is never deleted, not even an unavailable outdated one; and the
nodes that may go are taken in the rollout's order (wave, then name) instead of by name alone.

OLD_AND_NEW and EXCESS are left to the native controller, whose manage loop removes surplus pods
on a node whatever the update strategy (upstream skips such nodes the same way); the next plan
sees the node with one pod.

The nodes considered are the nodes holding a pod of the DaemonSet, plus the nodes of in-flight
deletions: a node whose pod this controller deleted holds no pod until its replacement appears,
and must count as unavailable meanwhile, or the budget would be spent twice. The planner does not
decide which nodes the DaemonSet should run on (that is the scheduler's business and the native
controller's); `nodes` is only where readiness is looked up, and may list more nodes than that.
"""

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from enum import Enum
from typing import Self

from edgerollout.domain.availability import is_available
from edgerollout.domain.events import Notice, deletion_notice
from edgerollout.domain.health import Broken, judge_health
from edgerollout.domain.model import (
    InFlightDeletion,
    NodeName,
    NodeReadiness,
    NodeView,
    PodUID,
    PodView,
)
from edgerollout.domain.revisions import TargetRevision, is_current
from edgerollout.domain.staging import NOT_STAGED, NOTHING_HELD, Holds, Staging, hold_nodes
from edgerollout.domain.vocabulary import OTA_DEADLINE_UPGRADE, SUCCESSFUL_DELETE

Labels = Callable[[NodeName], Mapping[str, str]]


def no_labels(_: NodeName) -> Mapping[str, str]:
    """The labels of a node when none are known."""
    return {}


class NodeVerdict(Enum):
    """The state of a Ready node in a rollout (see the table in the module docstring)."""

    UP_TO_DATE = "current pod available"
    STARTING = "current pod not available yet"
    BROKEN = "current pod failing"
    OUTDATED = "outdated pod available"
    OUTDATED_UNAVAILABLE = "outdated pod not available"
    EMPTY = "no pod, or only terminating ones"
    OLD_AND_NEW = "an outdated and a current pod at once"
    EXCESS = "more than one outdated or current pod"

    @property
    def unavailable(self) -> bool:
        """Whether the node counts against max-unavailable."""
        return self is not NodeVerdict.UP_TO_DATE and self is not NodeVerdict.OUTDATED


class DeletionReason(Enum):
    """Why a pod was chosen; the value is the explanation carried by the deletion's Event."""

    OUTDATED_UNAVAILABLE = "outdated and not available, replaced at once"
    OUTDATED_WITHIN_BUDGET = "outdated, deleted within max-unavailable"
    OTA_DEADLINE = (
        "marked PodNeedUpgrade for longer than the OTA deadline, upgraded by the controller"
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class Deletion:
    """A pod to delete, with a precondition on its UID (never delete a pod not looked at)."""

    namespace: str
    name: str
    uid: PodUID
    node_name: NodeName
    reason: DeletionReason

    @property
    def notice(self) -> Notice:
        """The `SuccessfulDelete` Event to emit once the API server has accepted the deletion."""
        return deletion_notice(
            pod_name=self.name,
            pod_uid=self.uid,
            node_name=self.node_name,
            why=self.reason.value,
            reason=(
                OTA_DEADLINE_UPGRADE
                if self.reason is DeletionReason.OTA_DEADLINE
                else SUCCESSFUL_DELETE
            ),
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class DeletionPlan:
    """The deletions to make now, and the facts that led to them (for logs and metrics).

    - `unavailable`: Ready nodes unavailable before these deletions.
    - `verdicts`: every Ready node considered, with its state (in no particular order).
    - `skipped_nodes`: nodes holding a pod of the DaemonSet that are not Ready, in name order.
    - `newest_known`: False when there was no newest revision to compare pods with; then nothing
      is judged and nothing deleted.
    - `holds`: the nodes a staged rollout holds back, and its wave (see `staging`).
    - `broken`: the Ready nodes whose current pod is failing, and why (verdict BROKEN).
    """

    deletions: tuple[Deletion, ...]
    max_unavailable: int
    unavailable: int
    verdicts: Mapping[NodeName, NodeVerdict] = field(default_factory=dict)
    skipped_nodes: tuple[NodeName, ...] = ()
    newest_known: bool = True
    holds: Holds = NOTHING_HELD
    broken: Mapping[NodeName, Broken] = field(default_factory=dict)

    @classmethod
    def newest_unknown(cls, *, max_unavailable: int, skipped_nodes: tuple[NodeName, ...]) -> Self:
        """The plan when there is no newest revision to judge pods by: nothing is deleted."""
        return cls(
            deletions=(),
            max_unavailable=max_unavailable,
            unavailable=0,
            skipped_nodes=skipped_nodes,
            newest_known=False,
        )

    @property
    def unavailable_after(self) -> int:
        """Ready nodes unavailable once the deletions are made."""
        within_budget = sum(
            1 for d in self.deletions if self.verdicts.get(d.node_name) is NodeVerdict.OUTDATED
        )
        return self.unavailable + within_budget

    @property
    def waiting_for_budget(self) -> tuple[NodeName, ...]:
        """Ready nodes with an available outdated pod that this plan leaves for later for want of
        budget (held nodes are not waiting for budget), by name."""
        deleted = {d.node_name for d in self.deletions}
        held = self.holds.held
        return tuple(
            sorted(
                name
                for name, verdict in self.verdicts.items()
                if verdict is NodeVerdict.OUTDATED and name not in deleted and name not in held
            )
        )


def plan_deletions(
    *,
    pods: Iterable[PodView],
    nodes: Iterable[NodeView],
    target: TargetRevision,
    max_unavailable: int,
    min_ready_seconds: int,
    now: datetime,
    in_flight: Iterable[InFlightDeletion] = (),
    desired_nodes: int | None = None,
    counted_while_not_ready: frozenset[NodeReadiness] = frozenset(),
    staging: Staging = NOT_STAGED,
    labels: Labels = no_labels,
    progress_deadline: timedelta | None = None,
) -> DeletionPlan:
    """Choose the pods to delete now (see the module docstring for the rules).

    `desired_nodes` is how many nodes the native controller says should run the DaemonSet
    (`status.desiredNumberScheduled`; it leaves out nodes tainted unreachable or not-ready). Ready
    nodes it counts that hold no pod at all — a pod deleted and not yet replaced, a node that just
    joined — are invisible in `pods`; every such node short of `desired_nodes` counts as
    unavailable. A stale count can only make the budget tighter, never looser. A skipped node
    whose readiness is in `counted_while_not_ready` is in that count too, holding its pod: it is
    not short (a DaemonSet that tolerates every taint would otherwise have each offline node
    count against its budget).

    The result depends only on the arguments, not on their order: nodes are visited by name, and
    the deletions come out ordered by node name, then pod name. `staging` and the nodes' `labels`
    say which nodes are held (see `staging.hold_nodes`).
    """
    readiness = {node.name: node.readiness for node in nodes}
    in_flight = tuple(in_flight)
    pods_by_node = _pods_by_node(pods, in_flight)
    ready, missing = NodeReadiness.READY, NodeReadiness.MISSING
    names = sorted(pods_by_node)
    skipped = tuple(name for name in names if readiness.get(name, missing) is not ready)
    if not target.known:
        return DeletionPlan.newest_unknown(max_unavailable=max_unavailable, skipped_nodes=skipped)

    being_deleted = {deletion.uid for deletion in in_flight}
    verdicts: dict[NodeName, NodeVerdict] = {}
    broken: dict[NodeName, Broken] = {}
    replacements: list[Deletion] = []
    candidates: list[tuple[PodView, NodeName]] = []
    unavailable = 0
    skip = set(skipped)
    for name in names:
        if name in skip:
            continue
        held = pods_by_node[name]
        if len(held) == 1 and not held[0].deleting and held[0].uid not in being_deleted:
            live: Sequence[PodView] = held  # the common case: one pod, not going away
        else:
            live = [pod for pod in held if not pod.deleting and pod.uid not in being_deleted]
        verdict, outdated, failing = judge_node(
            live, target, min_ready_seconds, now, progress_deadline=progress_deadline
        )
        verdicts[name] = verdict
        if failing is not None:
            broken[name] = failing
        if verdict.unavailable:
            unavailable += 1
        if outdated is None:
            continue
        if verdict is NodeVerdict.OUTDATED_UNAVAILABLE:
            replacements.append(deletion_of(outdated, name, DeletionReason.OUTDATED_UNAVAILABLE))
        else:
            candidates.append((outdated, name))

    if desired_nodes is not None:
        counted = sum(
            1 for name in skipped if readiness.get(name, missing) in counted_while_not_ready
        )
        unavailable += shortfall(desired_nodes, judged=len(verdicts), counted_skipped=counted)
    room = max(0, max_unavailable - unavailable)
    holds = hold_nodes(
        staging,
        nodes=names,
        labels=labels,
        done=lambda name: verdicts.get(name) is NodeVerdict.UP_TO_DATE,
        ready=lambda name: name in verdicts,
        outdated=lambda name: verdicts.get(name) in HOLDING_AN_OLD_POD,
    )
    if holds.held:
        replacements = [d for d in replacements if d.node_name not in holds.held]
        candidates = [(pod, name) for pod, name in candidates if name not in holds.held]
    candidates.sort(key=lambda candidate: holds.order(candidate[1]))
    chosen = replacements + [
        deletion_of(pod, name, DeletionReason.OUTDATED_WITHIN_BUDGET)
        for pod, name in candidates[:room]
    ]
    return DeletionPlan(
        deletions=tuple(sorted(chosen, key=lambda d: (d.node_name, d.name, d.uid))),
        max_unavailable=max_unavailable,
        unavailable=unavailable,
        verdicts=verdicts,
        skipped_nodes=skipped,
        holds=holds,
        broken=broken,
    )


# The verdicts the clock alone may change once a progress deadline is judged (a deadline passes,
# a restart is forgiven).
CLOCK_DEPENDENT = frozenset({NodeVerdict.STARTING, NodeVerdict.BROKEN})

# The verdicts of a Ready node that still holds a pod of an old revision.
HOLDING_AN_OLD_POD = frozenset(
    {NodeVerdict.OUTDATED, NodeVerdict.OUTDATED_UNAVAILABLE, NodeVerdict.OLD_AND_NEW}
)


def shortfall(desired_nodes: int, *, judged: int, counted_skipped: int) -> int:
    """The nodes the native controller wants a pod on that hold none: `desired_nodes` less the
    Ready nodes judged and the skipped nodes it counts (they hold a pod, on an offline node)."""
    return max(0, desired_nodes - judged - counted_skipped)


def _pods_by_node(
    pods: Iterable[PodView], in_flight: Sequence[InFlightDeletion]
) -> dict[NodeName, list[PodView]]:
    by_node: dict[NodeName, list[PodView]] = {}
    for pod in pods:
        node_name = pod.node_name
        if node_name is not None:
            held = by_node.get(node_name)
            if held is None:
                by_node[node_name] = [pod]
            else:
                held.append(pod)
    for deletion in in_flight:
        # The node of a deletion is considered even when its pod is gone from the cache.
        by_node.setdefault(deletion.node_name, [])
    return by_node


def judge_node(
    live: Sequence[PodView],
    target: TargetRevision,
    min_ready_seconds: int,
    now: datetime,
    *,
    progress_deadline: timedelta | None = None,
) -> tuple[NodeVerdict, PodView | None, Broken | None]:
    """The verdict for a Ready node from its live pods, its outdated pod if it may go, and why
    its current pod is failing (only judged with a `progress_deadline`)."""
    if len(live) == 1:  # the common case, without the lists below
        only = live[0]
        available = is_available(only, min_ready_seconds=min_ready_seconds, now=now)
        if is_current(only, target):
            if progress_deadline is not None:
                failing = judge_health(
                    only,
                    min_ready_seconds=min_ready_seconds,
                    progress_deadline=progress_deadline,
                    now=now,
                )
                if failing is not None:
                    return NodeVerdict.BROKEN, None, failing
            return (NodeVerdict.UP_TO_DATE if available else NodeVerdict.STARTING), None, None
        verdict = NodeVerdict.OUTDATED if available else NodeVerdict.OUTDATED_UNAVAILABLE
        return verdict, only, None
    if not live:
        return NodeVerdict.EMPTY, None, None
    current = [pod for pod in live if is_current(pod, target)]
    outdated = [pod for pod in live if not is_current(pod, target)]
    if len(current) > 1 or len(outdated) > 1:
        return NodeVerdict.EXCESS, None, None
    # Two pods: one current, one outdated.
    return NodeVerdict.OLD_AND_NEW, None, None


def deletion_of(pod: PodView, node_name: NodeName, reason: DeletionReason) -> Deletion:
    """The deletion of `pod` on `node_name`, for `reason`."""
    return Deletion(
        namespace=pod.namespace,
        name=pod.name,
        uid=pod.uid,
        node_name=node_name,
        reason=reason,
    )
