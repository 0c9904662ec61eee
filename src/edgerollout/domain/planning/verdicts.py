"""How a rollout judges each node, and what a plan of deletions holds.

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

The rules are applied by `rollout_book.RolloutBook`, the one planner of both strategies (an
AdvancedRollingUpdate's deletions, and an OTA pod past its deadline); this module holds what it
judges with and what it returns.

The nodes considered are the nodes holding a pod of the DaemonSet, plus the nodes of in-flight
deletions: a node whose pod this controller deleted holds no pod until its replacement appears,
and must count as unavailable meanwhile, or the budget would be spent twice. The planner does not
decide which nodes the DaemonSet should run on (that is the scheduler's business and the native
controller's); `nodes` is only where readiness is looked up, and may list more nodes than that.
"""

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from enum import Enum
from typing import Self

from edgerollout.domain.events import Notice, deletion_notice
from edgerollout.domain.model import (
    NodeName,
    PodUID,
    PodView,
)
from edgerollout.domain.planning.availability import is_available
from edgerollout.domain.planning.health import Broken, judge_health
from edgerollout.domain.planning.holds import NOTHING_HELD, Holds
from edgerollout.domain.planning.revisions import TargetRevision, is_current
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
    - `holds`: the nodes a staged rollout holds back, and its wave (see `holds`).
    - `broken`: the Ready nodes whose current pod is failing, and why (verdict BROKEN).
    - `next_available`: see the field.
    - `verdict_counts`: how many nodes have each verdict, where the planner kept count (read it
      through `counted`, which counts `verdicts` otherwise); not compared, since it only repeats
      `verdicts`.
    """

    deletions: tuple[Deletion, ...]
    max_unavailable: int
    unavailable: int
    verdicts: Mapping[NodeName, NodeVerdict] = field(default_factory=dict)
    skipped_nodes: tuple[NodeName, ...] = ()
    newest_known: bool = True
    holds: Holds = NOTHING_HELD
    broken: Mapping[NodeName, Broken] = field(default_factory=dict)
    verdict_counts: Mapping[NodeVerdict, int] | None = field(default=None, compare=False)
    next_available: datetime | None = field(default=None, compare=False)
    """The first moment a Ready pod not available yet turns available (minReadySeconds after it
    turned Ready), where the planner kept it: when to look again without an event."""

    @property
    def counted(self) -> Mapping[NodeVerdict, int]:
        """How many nodes have each verdict (verdicts no node has may be absent or 0)."""
        if self.verdict_counts is not None:
            return self.verdict_counts
        counts: dict[NodeVerdict, int] = {}
        for verdict in self.verdicts.values():
            counts[verdict] = counts.get(verdict, 0) + 1
        return counts

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
