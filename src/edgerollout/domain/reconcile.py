"""One reconcile of one DaemonSet, decided: the single entry point the controller calls.

The controller gathers what its caches show (the DaemonSet, its ControllerRevisions, its pods, the
Nodes, the deletions it has in flight) and a `now`, and gets back a `Plan`: the Events to emit, the
pods to delete, the conditions to patch. Nothing here is read twice or from anywhere else, so the
same inputs always give the same plan, and a plan can be logged, asserted on, or replayed.

The order of the steps is the order of the questions a user would ask:

1. Is this DaemonSet ours? (`strategy`) A missing, unknown or mis-configured strategy ends the
   plan with at most one notice.
2. OTA: which pods need their `PodNeedUpgrade` condition written? Nothing is ever deleted; the
   max-unavailable annotation means nothing here and is not read.
3. AdvancedRollingUpdate: is max-unavailable valid? If not, a Warning and no deletion at all; the
   controller should wait for the DaemonSet to change rather than retry.
4. Which pods go now? (`planner`)
"""

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from edgerollout.domain.budget import (
    InvalidMaxUnavailable,
    MaxUnavailable,
    base_of,
    budget_base,
    parse_max_unavailable,
)
from edgerollout.domain.conditions import ConditionWrite, plan_need_upgrade
from edgerollout.domain.events import Notice
from edgerollout.domain.model import (
    DaemonSetView,
    InFlightDeletion,
    NodeView,
    PodView,
    RevisionView,
)
from edgerollout.domain.planner import Deletion, DeletionPlan, plan_deletions
from edgerollout.domain.revisions import TargetRevision, target_revision
from edgerollout.domain.rollout_book import RolloutBook
from edgerollout.domain.strategy import UpdateStrategy, choose_strategy
from edgerollout.domain.vocabulary import MAX_UNAVAILABLE_ANNOTATION


@dataclass(frozen=True, slots=True, kw_only=True)
class Plan:
    """What to do for one DaemonSet now.

    - `notices`: Events to emit now, each once per `Notice.key` (the shell deduplicates).
    - `deletions`: pods to delete, with a UID precondition; emit each `Deletion.notice` once the
      API server has accepted it.
    - `condition_writes`: `pods/status` patches to send.
    - `target`, `budget`, `rollout`: the facts behind the decision, for logs and metrics; None when
      the plan stopped before reaching them.
    """

    strategy: UpdateStrategy | None
    notices: tuple[Notice, ...] = ()
    condition_writes: tuple[ConditionWrite, ...] = ()
    target: TargetRevision | None = None
    budget: MaxUnavailable | None = None
    rollout: DeletionPlan | None = None

    @property
    def deletions(self) -> tuple[Deletion, ...]:
        """The pods to delete now (only ever non-empty for AdvancedRollingUpdate)."""
        return self.rollout.deletions if self.rollout is not None else ()


def plan_reconcile(
    *,
    daemonset: DaemonSetView,
    revisions: Iterable[RevisionView],
    pods: Iterable[PodView],
    nodes: Iterable[NodeView] = (),
    now: datetime,
    in_flight: Iterable[InFlightDeletion] = (),
    book: RolloutBook | None = None,
) -> Plan:
    """Decide one reconcile of `daemonset` (see the module docstring).

    `pods` are the pods controlled by the DaemonSet (owner reference with its UID), terminating
    ones included; `revisions` its ControllerRevisions; `nodes` at least the nodes those pods are
    on (a pod's node absent from `nodes` is treated as missing).

    With a `book`, an AdvancedRollingUpdate is planned from the book's verdicts (judged again
    where they changed, read through the book's own source) instead of from `pods` and `nodes`:
    the same plan, at the cost of what changed since the previous one.
    """
    choice = choose_strategy(
        annotations=daemonset.annotations,
        update_strategy_type=daemonset.update_strategy_type,
    )
    if choice.strategy is None:
        return Plan(strategy=None, notices=choice.notices)

    pods = tuple(pods)
    in_flight = tuple(in_flight)
    target = target_revision(annotations=daemonset.annotations, revisions=revisions)
    if choice.strategy is UpdateStrategy.OTA:
        return Plan(
            strategy=choice.strategy,
            notices=choice.notices,
            condition_writes=plan_need_upgrade(pods=pods, target=target, now=now),
            target=target,
        )

    if book is not None:
        book.refresh(
            target=target,
            min_ready_seconds=daemonset.min_ready_seconds,
            now=now,
            in_flight=in_flight,
        )
        base = base_of(book.base, desired_nodes=daemonset.desired_nodes)
    else:
        base = budget_base(pods, in_flight=in_flight, desired_nodes=daemonset.desired_nodes)
    budget = parse_max_unavailable(daemonset.annotations.get(MAX_UNAVAILABLE_ANNOTATION), base=base)
    if isinstance(budget, InvalidMaxUnavailable):
        return Plan(
            strategy=choice.strategy,
            notices=(*choice.notices, budget.notice),
            target=target,
        )
    if book is not None:
        rollout = book.plan(max_unavailable=budget.value, desired_nodes=daemonset.desired_nodes)
    else:
        rollout = plan_deletions(
            pods=pods,
            nodes=nodes,
            target=target,
            max_unavailable=budget.value,
            min_ready_seconds=daemonset.min_ready_seconds,
            now=now,
            in_flight=in_flight,
            desired_nodes=daemonset.desired_nodes,
        )
    return Plan(
        strategy=choice.strategy,
        notices=choice.notices,
        target=target,
        budget=budget,
        rollout=rollout,
    )
