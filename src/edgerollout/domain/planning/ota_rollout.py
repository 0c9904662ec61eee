"""The plan of an OTA rollout: which pods are told `PodNeedUpgrade`, and which pulls run.

Step 3 of `reconcile` for this strategy. The node decides when it upgrades; the controller marks
each outdated pod with the condition (a held node's pod is told False; while paused, or while a
staging value is invalid, nothing is written) and runs the image pre-pulls nodes ask for
(`prepull`). Its nodes are judged by the same book as an AdvancedRollingUpdate's
(`rollout_book`): a node that upgraded itself into a failing revision is broken, and too many
broken nodes stop the offer as a pause would (design §13.4); a wave is done when its Ready nodes
are up to date, as for AdvancedRollingUpdate.

With `edgerollout.io/ota-deadline` (design §13.3), a pod marked for longer than the deadline is
upgraded by the controller itself: deleted by the same book's plan as an AdvancedRollingUpdate's
pods, under max-unavailable over the same base, inside a maintenance window, never on a held
node — only those pods are offered to it (`Staging.only`).
"""

from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from edgerollout.domain.events import Notice
from edgerollout.domain.model import ConditionStatus, NodeName, PodView
from edgerollout.domain.planning.conditions import (
    ConditionWrite,
    plan_need_upgrade,
    revision_in_message,
)
from edgerollout.domain.planning.decision import Plan, Recheck, RolloutReading, Snapshot
from edgerollout.domain.planning.holds import (
    NOTHING_HELD,
    batch_started_notice,
    wave_started_notice,
)
from edgerollout.domain.planning.prepull import PrepullStep, plan_prepulls
from edgerollout.domain.planning.revisions import TargetRevision, is_current
from edgerollout.domain.planning.rollout_book import RolloutBook
from edgerollout.domain.planning.verdicts import DeletionPlan, DeletionReason
from edgerollout.domain.spec.max_unavailable import InvalidMaxUnavailable, MaxUnavailable
from edgerollout.domain.spec.staging import Staging
from edgerollout.domain.timestamps import parse_rfc3339
from edgerollout.domain.vocabulary import POD_NEED_UPGRADE
from edgerollout.settings import ControllerSettings


def plan_ota(
    snapshot: Snapshot, reading: RolloutReading, book: RolloutBook, settings: ControllerSettings
) -> Plan:
    """The plan of an OTA rollout whose book `reading` has just refreshed."""
    target, staging = reading.target, reading.spec.staging
    notices = list(reading.notices)
    base = snapshot.budget_base()
    pending = reading.rollback_pending(snapshot)
    stop = reading.failure_stop(
        book.broken, snapshot, nodes=base, tried=book.tried(), pending=pending
    )
    if stop.stops or pending:
        # Too many nodes upgraded themselves into a failing revision (design §13.4): offer it to
        # no one more, as a pause would; or a rollback's echo is on its way (§13.4.1).
        notices.extend(stop.notices)
        staging = replace(staging, paused=True)
    holds = (
        book.holds(staging, snapshot.labels_of, now=snapshot.now)
        if staging.active
        else NOTHING_HELD
    )
    writes: tuple[ConditionWrite, ...] = ()
    if not (staging.paused or staging.invalid):
        writes = plan_need_upgrade(
            pods=list(snapshot.pods), target=target, now=snapshot.now, held=holds.held
        )
    started = (
        wave_started_notice(holds, revision=target.hash),
        batch_started_notice(holds, revision=target.hash),
    )
    notices.extend(notice for notice in started if notice is not None)
    upgrades = _deadline_upgrades(snapshot, reading, book, staging, base=base)
    notices.extend(upgrades.notices)
    return Plan(
        strategy=reading.strategy,
        notices=tuple(notices),
        condition_writes=writes,
        prepulls=_prepulls(snapshot, target, settings),
        recheck=upgrades.recheck(settings, reading.window_opens, snapshot.now).until_soaked(
            holds, snapshot.now
        ),
        paused=reading.spec.staging.paused,
        pause_rollout=stop.pause_rollout,
        rollback=stop.rollback,
        broken=book.broken,
        window_opens=reading.window_opens,
        holds=holds,
        target=target,
        budget=upgrades.budget,
        rollout=upgrades.rollout,
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class _DeadlineUpgrades:
    """The pods past their OTA deadline the controller upgrades now (`rollout`), under `budget`;
    the Warnings of a deadline or a budget that cannot be read; the seconds until the next
    marked pod passes its deadline (`due`)."""

    rollout: DeletionPlan | None = None
    budget: MaxUnavailable | None = None
    due: float | None = None
    notices: tuple[Notice, ...] = ()

    def recheck(
        self, settings: ControllerSettings, window_opens: datetime | None, now: datetime
    ) -> Recheck:
        """When to look again: when the next marked pod passes its deadline, and when a closed
        window opens for pods past it; no event says either."""
        recheck = Recheck.of(settings)
        if self.due is not None:
            recheck = replace(recheck, ota_deadline_seconds=max(self.due, 0.0))
        if self.budget is not None:
            recheck = recheck.until_window_opens(window_opens, now)
        return recheck


def _deadline_upgrades(
    snapshot: Snapshot,
    reading: RolloutReading,
    book: RolloutBook,
    staging: Staging,
    *,
    base: int,
) -> _DeadlineUpgrades:
    """With `edgerollout.io/ota-deadline`, the pods past it that go now (see the docstring)."""
    deadline, target = reading.spec.ota_deadline, reading.target
    if isinstance(deadline, Notice):
        return _DeadlineUpgrades(notices=(deadline,))
    if deadline is None or staging.paused or staging.invalid or target.hash is None:
        return _DeadlineUpgrades()
    overdue, due = _overdue(snapshot, target, deadline)
    count = reading.spec.max_unavailable
    if not overdue:
        return _DeadlineUpgrades(due=due)
    if isinstance(count, InvalidMaxUnavailable):
        return _DeadlineUpgrades(due=due, notices=(count.notice,))
    budget = MaxUnavailable.of(count, base=base)
    rollout = _upgrades(snapshot, book, budget, staging, overdue)
    return _DeadlineUpgrades(rollout=rollout, budget=budget, due=due)


def _prepulls(
    snapshot: Snapshot, target: TargetRevision, settings: ControllerSettings
) -> tuple[PrepullStep, ...]:
    """The pull Jobs nodes asked for, to start, to report and to delete."""
    if target.hash is None or snapshot.pull_template is None:
        return ()
    return plan_prepulls(
        pods=list(snapshot.pods),
        newest=target.hash,
        jobs=snapshot.pull_jobs,
        template=snapshot.pull_template,
        settings=settings.prepull,
        now=snapshot.now,
    )


def _overdue(
    snapshot: Snapshot, target: TargetRevision, deadline: timedelta
) -> tuple[frozenset[NodeName], float | None]:
    """The nodes whose pod has been marked for the newest revision longer than `deadline`, and
    the seconds until the next marked pod passes it (None: none is waiting)."""
    overdue: set[NodeName] = set()
    next_due: float | None = None
    for node, pods in snapshot.pods_by_node.items():
        for pod in pods:
            marked = _marked_since(pod, target)
            if marked is None:
                continue
            left = (marked + deadline - snapshot.now).total_seconds()
            if left <= 0:
                overdue.add(node)
            elif next_due is None or left < next_due:
                next_due = left
    return frozenset(overdue), next_due


def _upgrades(
    snapshot: Snapshot,
    book: RolloutBook,
    budget: MaxUnavailable,
    staging: Staging,
    overdue: frozenset[NodeName],
) -> DeletionPlan:
    """The overdue pods the controller upgrades now: the book's deletions, as for an
    AdvancedRollingUpdate, offered only the `overdue` nodes."""
    daemonset = snapshot.daemonset
    chosen = book.plan(
        max_unavailable=budget.value,
        desired_nodes=daemonset.desired_nodes,
        counted_while_not_ready=daemonset.counted_while_not_ready,
        staging=replace(staging.for_deletions(snapshot.now), only=overdue),
        labels=snapshot.labels_of,
    )
    upgrades = tuple(
        replace(deletion, reason=DeletionReason.OTA_DEADLINE) for deletion in chosen.deletions
    )
    return replace(chosen, deletions=upgrades)


def _marked_since(pod: PodView, target: TargetRevision) -> datetime | None:
    """Since when a live outdated pod has been offered the newest revision (None: it is not)."""
    if pod.deleting or is_current(pod, target):
        return None
    condition = pod.conditions.get(POD_NEED_UPGRADE)
    if (
        condition is None
        or condition.status is not ConditionStatus.TRUE
        or revision_in_message(condition.message) != target.hash
        or not condition.last_transition_time
    ):
        return None
    return parse_rfc3339(condition.last_transition_time)
