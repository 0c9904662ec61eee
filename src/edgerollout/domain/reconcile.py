"""One reconcile of one DaemonSet, decided: the single entry point the controller calls.

The controller takes a `Snapshot` of what its caches show of one DaemonSet (the DaemonSet, its
ControllerRevisions, its pods by node, the nodes' readiness, its deletions in flight, its pull Jobs)
at one instant `now`, and gets back from `plan` a `Plan` holding every decision: the Events to
emit, the pods to delete, the conditions to patch, the pull Jobs to start, report and delete, and
when to look again if no event comes. Nothing here reads a cache, a clock or JSON, so the same
snapshot always gives the same plan, and a plan can be logged, asserted on, or replayed.

The one thing `plan` keeps between calls is the DaemonSet's `RolloutBook`, the verdicts of its
previous plan (see `rollout_book`): it is handed in with the snapshot and brought up to date with
the nodes the snapshot names as changed. The book is a memo: a fresh one gives the same plan.

The order of the steps is the order of the questions a user would ask:

1. Is this DaemonSet ours? (`strategy`) A missing, unknown or mis-configured strategy ends the
   plan with at most one notice, and ends the rollout (`Plan.ends_rollout`): nothing is in flight
   to track. The strategy is chosen here and nowhere else. What is remembered of the Events the
   DaemonSet has had (`Plan.keep_notices`):

   | update-strategy annotation   | rollout state | Events already sent                       |
   |------------------------------|---------------|-------------------------------------------|
   | absent                       | forgotten     | forgotten: warned again if it comes back  |
   | unknown, or not OnDelete     | forgotten     | kept: a bad value warns once, not per     |
   |                              |               | reconcile, until the annotation is gone   |
   | runnable                     | kept          | kept                                      |

2. Is the rollout staged? (`staging`, design §12) Paused, held to a node selector, a partition or
   waves; a value that cannot be read holds every node, with a Warning. A pause or a resume is
   told once by an Event (`pause.pause_notice`), a wave that starts too (`WaveStarted`).
3. OTA: which pods need their `PodNeedUpgrade` condition written (a held node's pod is told
   False; while paused, or while a staging value is invalid, nothing is written), and which image
   pre-pulls are to start or to report? Nothing is ever deleted; max-unavailable means nothing
   here.
4. AdvancedRollingUpdate: are max-unavailable, the progress deadline and the failure budget
   valid? If not, a Warning and no deletion at all; the controller should wait for the DaemonSet
   to change rather than retry.
5. Which pods go now? (`rollout_book`, `planner`; held nodes never; with pre-pull before delete,
   a node whose images are not there is held, and the next nodes' pulls are asked for:
   `prepull_first`) Unless more nodes are broken than the failure budget tolerates: then none,
   and the rollout is paused (`failure_budget`).
6. When to look again without an event (`Recheck`).
"""

from collections.abc import Collection, Iterable, Mapping, Sequence, Set
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Self

from edgerollout.domain.budget import (
    InvalidMaxUnavailable,
    MaxUnavailable,
    base_of,
    budget_base,
    parse_max_unavailable,
)
from edgerollout.domain.conditions import ConditionWrite, plan_need_upgrade, revision_in_message
from edgerollout.domain.deadlines import read_ota_deadline, read_progress_deadline
from edgerollout.domain.events import Notice
from edgerollout.domain.failure_budget import MaxFailed, failure_stop, read_max_failed
from edgerollout.domain.health import Broken
from edgerollout.domain.model import (
    ConditionStatus,
    DaemonSetView,
    InFlightDeletion,
    NodeName,
    NodeReadiness,
    NodeView,
    PodView,
    RevisionView,
)
from edgerollout.domain.pause import pause_notice
from edgerollout.domain.planner import (
    CLOCK_DEPENDENT,
    HOLDING_AN_OLD_POD,
    Deletion,
    DeletionPlan,
    DeletionReason,
    NodeVerdict,
    judge_node,
    plan_deletions,
)
from edgerollout.domain.prepull import (
    JobView,
    PrepullStep,
    PullTemplate,
    plan_prepulls,
)
from edgerollout.domain.prepull_first import prepull_first
from edgerollout.domain.revisions import TargetRevision, is_current, target_revision
from edgerollout.domain.rollout_book import RolloutBook
from edgerollout.domain.staging import (
    NOTHING_HELD,
    Holds,
    Staging,
    hold_nodes,
    read_staging,
    wave_started_notice,
)
from edgerollout.domain.strategy import UpdateStrategy, choose_strategy
from edgerollout.domain.timestamps import parse_rfc3339
from edgerollout.domain.vocabulary import (
    MAX_FAILED_ANNOTATION,
    MAX_UNAVAILABLE_ANNOTATION,
    OTA_DEADLINE_ANNOTATION,
    POD_NEED_UPGRADE,
    PREPULL_ANNOTATION,
    PROGRESS_DEADLINE_ANNOTATION,
    UPDATE_STRATEGY_ANNOTATION,
)
from edgerollout.settings import CONTROLLER, ControllerSettings, PrepullSettings


@dataclass(frozen=True, slots=True, kw_only=True)
class PlanSettings:
    """The tuning a plan is made with; the defaults, and why, are in `edgerollout.settings`."""

    # While deletions are in flight, look again this often even if no event comes.
    deletion_recheck_seconds: float = CONTROLLER.reconcile.requeue_while_deleting
    # A condition write whose echo is overdue is looked at again no sooner than this.
    min_recheck_seconds: float = CONTROLLER.reconcile.condition_recheck_floor
    # While a node's new pod is starting or failing, look again this often.
    health_recheck_seconds: float = CONTROLLER.reconcile.health_recheck
    prepull: PrepullSettings = CONTROLLER.prepull

    @classmethod
    def of(cls, settings: ControllerSettings) -> Self:
        """The plan's share of the controller's settings."""
        return cls(
            deletion_recheck_seconds=settings.reconcile.requeue_while_deleting,
            min_recheck_seconds=settings.reconcile.condition_recheck_floor,
            health_recheck_seconds=settings.reconcile.health_recheck,
            prepull=settings.prepull,
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class Snapshot:
    """What the caches show of one DaemonSet at the instant `now`.

    - `revisions`: its ControllerRevisions.
    - `pods`: every pod it controls (owner reference with its UID), terminating ones included.
    - `pods_by_node`: the same pods, by the node they are on (pods with no node left out).
    - `readiness`: the nodes' readiness; a node absent from it is MISSING.
    - `node_labels`: the nodes' labels (for a staged rollout's selector and waves).
    - `changed_nodes`: the nodes where a pod of the DaemonSet or the node's readiness changed
      since the previous plan of this DaemonSet.
    - `in_flight`: its deletions the controller has made and the caches do not show yet.
    - `pull_jobs`: the pull Jobs in its namespace, by name; `pull_template`: what a pull Job
      copies from its newest pod template.
    - `paused_before`: whether the previous plan found the rollout paused (None: no previous
      plan); `pause_changes`: how many changes of the pause were seen so far.

    The shell may hand read-only views over its caches rather than copies: a plan runs to its end
    without yielding, so they cannot change under it, and it reads only what it needs.
    """

    daemonset: DaemonSetView
    revisions: Sequence[RevisionView] = ()
    pods: Collection[PodView] = ()
    pods_by_node: Mapping[NodeName, Sequence[PodView]] = field(default_factory=dict)
    readiness: Mapping[NodeName, NodeReadiness] = field(default_factory=dict)
    node_labels: Mapping[NodeName, Mapping[str, str]] = field(default_factory=dict)
    changed_nodes: Set[NodeName] = frozenset()
    in_flight: tuple[InFlightDeletion, ...] = ()
    pull_jobs: Mapping[str, JobView] = field(default_factory=dict)
    pull_template: PullTemplate | None = None
    paused_before: bool | None = None
    pause_changes: int = 0
    now: datetime

    @classmethod
    def of_views(
        cls,
        *,
        daemonset: DaemonSetView,
        revisions: Sequence[RevisionView],
        pods: Collection[PodView],
        nodes: Iterable[NodeView],
        now: datetime,
    ) -> Self:
        """The snapshot of views read once, as `status` and `plan` read them: nothing changed
        before it, nothing in flight, no pull Job."""
        by_node: dict[NodeName, list[PodView]] = {}
        for pod in pods:
            if pod.node_name is not None:
                by_node.setdefault(pod.node_name, []).append(pod)
        nodes = tuple(nodes)
        return cls(
            daemonset=daemonset,
            revisions=revisions,
            pods=pods,
            pods_by_node=by_node,
            readiness={node.name: node.readiness for node in nodes},
            node_labels={node.name: node.labels for node in nodes},
            now=now,
        )

    def labels_of(self, node: NodeName) -> Mapping[str, str]:
        """The labels of `node` (none for a node not in the cache)."""
        return self.node_labels.get(node, {})


@dataclass(frozen=True, slots=True, kw_only=True)
class Recheck:
    """When to look at the DaemonSet again if no event comes.

    Part of it depends on what is still in flight once the plan's writes are made, which only
    making them tells (a deletion refused because the pod was replaced leaves nothing in flight;
    a status patch of a vanished pod leaves no echo to wait for), so the shell evaluates `after`
    with those two facts:
    - deletions in flight: every `deletions_seconds`, from the cache, in case an echo was lost
      (never a LIST);
    - a current pod Ready but not available yet: after `starting_seconds` (minReadySeconds),
      since no event says when a pod becomes available;
    - a condition write waiting for its echo: when its record expires, so a write whose echo
      never came is checked again, but not sooner than `min_seconds`;
    - a maintenance window closed: when it opens (`window_seconds`);
    - an OTA pod marked but not yet past its OTA deadline: when the first one passes it
      (`ota_deadline_seconds`);
    - a pre-pull asked for before a deletion and not done: when the first one passes its
      fallback (`prepull_seconds`, design §13.5).
    """

    deletions_seconds: float
    starting_seconds: float | None = None
    min_seconds: float = CONTROLLER.reconcile.condition_recheck_floor
    window_seconds: float | None = None
    ota_deadline_seconds: float | None = None
    prepull_seconds: float | None = None

    def after(self, *, deletions_in_flight: int, unechoed_seconds: float | None) -> float | None:
        """Seconds until the next look (None: only on an event)."""
        waits: list[float] = []
        if deletions_in_flight:
            waits.append(self.deletions_seconds)
        if self.starting_seconds is not None:
            waits.append(self.starting_seconds)
        if self.window_seconds is not None:
            waits.append(self.window_seconds)
        if self.ota_deadline_seconds is not None:
            waits.append(self.ota_deadline_seconds)
        if self.prepull_seconds is not None:
            waits.append(self.prepull_seconds)
        if unechoed_seconds is not None:
            waits.append(max(unechoed_seconds, self.min_seconds))
        return min(waits, default=None)


@dataclass(frozen=True, slots=True, kw_only=True)
class Plan:
    """What to do for one DaemonSet now.

    - `notices`: Events to emit now, each once per `Notice.key` (the shell deduplicates).
    - `deletions`: pods to delete, with a UID precondition; emit each `Deletion.notice` once the
      API server has accepted it.
    - `condition_writes`: `pods/status` patches to send (the shell skips one it has sent and
      whose echo has not arrived yet).
    - `prepulls`: pull Jobs to create, and finished ones to report on their pods and delete.
    - `recheck`: when to reconcile again even if no event comes (see `Recheck`); None: only an
      event brings the DaemonSet back.
    - `keep_notices`: when the plan ends the rollout (`ends_rollout`), whether the Events the
      DaemonSet has had stay remembered (see the table in the module docstring).
    - `paused`: whether the rollout is paused (None when the DaemonSet is not ours); the shell
      remembers it for the next plan's `Snapshot.paused_before`.
    - `pause_rollout`: more nodes are broken than the failure budget tolerates: the shell pauses
      the rollout (`edgerollout.io/paused: "true"` on the DaemonSet; design §13.4).
    - `broken`: the Ready nodes whose pod of the newest revision is failing, and why (both
      strategies; design §13.1).
    - `window_opens`: when the maintenance window, closed now, opens (None: open, or none).
    - `holds`: the nodes a staged rollout holds back, and its wave.
    - `target`, `budget`, `rollout`: the facts behind the decision, for logs and metrics; None when
      the plan stopped before reaching them.
    """

    strategy: UpdateStrategy | None
    notices: tuple[Notice, ...] = ()
    condition_writes: tuple[ConditionWrite, ...] = ()
    prepulls: tuple[PrepullStep, ...] = ()
    recheck: Recheck | None = None
    keep_notices: bool = False
    paused: bool | None = None
    pause_rollout: bool = False
    broken: Mapping[NodeName, Broken] = field(default_factory=dict)
    window_opens: datetime | None = None
    holds: Holds = NOTHING_HELD
    target: TargetRevision | None = None
    budget: MaxUnavailable | None = None
    rollout: DeletionPlan | None = None

    @property
    def ends_rollout(self) -> bool:
        """The DaemonSet is not (or no longer) ours: what was remembered of its rollout ends."""
        return self.strategy is None

    @property
    def deletions(self) -> tuple[Deletion, ...]:
        """The pods to delete now (only ever non-empty for AdvancedRollingUpdate)."""
        return self.rollout.deletions if self.rollout is not None else ()


def plan(snapshot: Snapshot, book: RolloutBook, settings: PlanSettings = PlanSettings()) -> Plan:
    """Decide one reconcile of `snapshot.daemonset` (see the module docstring).

    `book` is the DaemonSet's book from its previous plans (a new one for the first); when this
    plan is not made from it (not an AdvancedRollingUpdate, or an invalid budget), or fails, the
    book is reset, since it has not judged the changes it was told of.
    """
    try:
        decided = _decide(snapshot, book, settings)
    except BaseException:
        book.reset()
        raise
    if decided.rollout is None or decided.strategy is not UpdateStrategy.ADVANCED_ROLLING_UPDATE:
        book.reset()
    return decided


def _decide(snapshot: Snapshot, book: RolloutBook, settings: PlanSettings) -> Plan:
    daemonset = snapshot.daemonset
    choice = choose_strategy(
        annotations=daemonset.annotations,
        update_strategy_type=daemonset.update_strategy_type,
    )
    if choice.strategy is None:
        return Plan(
            strategy=None,
            notices=choice.notices,
            keep_notices=UPDATE_STRATEGY_ANNOTATION in daemonset.annotations,
        )

    target = target_revision(annotations=daemonset.annotations, revisions=snapshot.revisions)
    staging = read_staging(daemonset.annotations)
    told = [*choice.notices, *staging.notices]
    paused = pause_notice(
        staging.paused, before=snapshot.paused_before, changes=snapshot.pause_changes
    )
    if paused is not None:
        told.append(paused)
    deadline = read_progress_deadline(daemonset.annotations.get(PROGRESS_DEADLINE_ANNOTATION))
    max_failed = read_max_failed(daemonset.annotations.get(MAX_FAILED_ANNOTATION))
    if isinstance(deadline, Notice) or isinstance(max_failed, Notice):
        unreadable = (value for value in (deadline, max_failed) if isinstance(value, Notice))
        return Plan(
            strategy=choice.strategy,
            notices=(*told, *unreadable),
            recheck=_recheck(settings),
            paused=staging.paused,
            target=target,
        )
    read = _Read(
        strategy=choice.strategy,
        target=target,
        staging=staging,
        told=told,
        progress_deadline=timedelta(seconds=deadline),
        max_failed=max_failed,
        window_opens=staging.for_deletions(snapshot.now).window_opens,
    )
    if choice.strategy is UpdateStrategy.OTA:
        return _decide_ota(snapshot, read, settings)
    return _decide_advanced(snapshot, read, book, settings)


@dataclass(slots=True, kw_only=True)
class _Read:
    """What both strategies' plans start from: the DaemonSet's settings read, and the notices
    told so far (each strategy adds its own)."""

    strategy: UpdateStrategy
    target: TargetRevision
    staging: Staging
    told: list[Notice]
    progress_deadline: timedelta
    max_failed: MaxFailed | None
    window_opens: datetime | None


def _decide_ota(snapshot: Snapshot, read: _Read, settings: PlanSettings) -> Plan:
    target, staging, told = read.target, read.staging, read.told
    pods = list(snapshot.pods)
    broken = _ota_broken(snapshot, target, read.progress_deadline)
    failed = _failure_stop(snapshot, staging, target, broken, read.max_failed)
    if failed is not None:
        # Too many nodes upgraded themselves into a failing revision (design §13.4): offer it to
        # no one more, as a pause would.
        told.append(failed)
        staging = replace(staging, paused=True)
    holds = _ota_holds(snapshot, staging, target)
    writes: tuple[ConditionWrite, ...] = ()
    if not (staging.paused or staging.invalid):
        writes = plan_need_upgrade(pods=pods, target=target, now=snapshot.now, held=holds.held)
    told.extend(_wave_notice(holds, target))
    upgrades, upgrade_budget, due = _ota_deadline_upgrades(snapshot, staging, target)
    if isinstance(upgrade_budget, Notice):
        told.append(upgrade_budget)
    prepulls: tuple[PrepullStep, ...] = ()
    if target.hash is not None and snapshot.pull_template is not None:
        prepulls = plan_prepulls(
            pods=pods,
            newest=target.hash,
            jobs=snapshot.pull_jobs,
            template=snapshot.pull_template,
            settings=settings.prepull,
            now=snapshot.now,
        )
    recheck = _recheck(settings)
    if due is not None:
        # Look again when the next marked pod passes its OTA deadline: no event says so.
        recheck = replace(recheck, ota_deadline_seconds=max(due, 0.0))
    if isinstance(upgrade_budget, MaxUnavailable):
        # Pods past their OTA deadline wait for the window: look again when it opens.
        recheck = _when_window_opens(recheck, read.window_opens, snapshot.now)
    return Plan(
        strategy=read.strategy,
        notices=tuple(told),
        condition_writes=writes,
        prepulls=prepulls,
        recheck=recheck,
        paused=read.staging.paused,
        pause_rollout=failed is not None,
        broken=broken,
        window_opens=read.window_opens,
        holds=holds,
        target=target,
        budget=upgrade_budget if isinstance(upgrade_budget, MaxUnavailable) else None,
        rollout=upgrades,
    )


def _decide_advanced(
    snapshot: Snapshot, read: _Read, book: RolloutBook, settings: PlanSettings
) -> Plan:
    daemonset, target, staging, told = snapshot.daemonset, read.target, read.staging, read.told
    book.refresh(
        target=target,
        min_ready_seconds=daemonset.min_ready_seconds,
        now=snapshot.now,
        pods_by_node=snapshot.pods_by_node,
        readiness=snapshot.readiness,
        changed=snapshot.changed_nodes,
        in_flight=snapshot.in_flight,
        progress_deadline=read.progress_deadline,
    )
    base = base_of(book.base, desired_nodes=daemonset.desired_nodes)
    budget = parse_max_unavailable(daemonset.annotations.get(MAX_UNAVAILABLE_ANNOTATION), base=base)
    if isinstance(budget, InvalidMaxUnavailable):
        return Plan(
            strategy=read.strategy,
            notices=(*told, budget.notice),
            recheck=_recheck(settings),
            paused=staging.paused,
            target=target,
        )
    first = prepull_first(
        daemonset.annotations.get(PREPULL_ANNOTATION),
        target=target,
        pods_by_node=snapshot.pods_by_node,
        readiness=snapshot.readiness,
        in_flight=snapshot.in_flight,
        now=snapshot.now,
        settings=settings.prepull,
    )
    deleting = first.gate(staging.for_deletions(snapshot.now))

    def rollout_with(staging: Staging) -> DeletionPlan:
        return book.plan(
            max_unavailable=budget.value,
            desired_nodes=daemonset.desired_nodes,
            counted_while_not_ready=daemonset.counted_while_not_ready,
            staging=staging,
            labels=snapshot.labels_of,
        )

    rollout = rollout_with(deleting)
    failed = _failure_stop(snapshot, staging, target, rollout.broken, read.max_failed, nodes=base)
    if failed is not None:
        # Too many broken nodes (design §13.4): planned as the pause it asks for, so nothing is
        # deleted even before the pause is written, or if it cannot be.
        told.append(failed)
        rollout = rollout_with(replace(deleting, paused=True))
    told.extend(_wave_notice(rollout.holds, target))
    pulls = first.steps(
        rollout, jobs=snapshot.pull_jobs, template=snapshot.pull_template, now=snapshot.now
    )
    recheck = _recheck(settings, starting=_starting(daemonset, rollout, settings))
    # Look again when a pre-pull passes its fallback: no event says so.
    recheck = replace(recheck, prepull_seconds=pulls.recheck_seconds)
    return Plan(
        strategy=read.strategy,
        notices=(*told, *pulls.notices),
        condition_writes=pulls.requests,
        prepulls=pulls.prepulls,
        recheck=_when_window_opens(recheck, read.window_opens, snapshot.now),
        paused=staging.paused,
        pause_rollout=failed is not None,
        broken=rollout.broken,
        window_opens=read.window_opens,
        holds=rollout.holds,
        target=target,
        budget=budget,
        rollout=rollout,
    )


def _when_window_opens(recheck: Recheck, opens: datetime | None, now: datetime) -> Recheck:
    """`recheck`, and a look when a closed maintenance window opens: no event says so."""
    if opens is None:
        return recheck
    return replace(recheck, window_seconds=max((opens - now).total_seconds(), 0.0))


def _failure_stop(
    snapshot: Snapshot,
    staging: Staging,
    target: TargetRevision,
    broken: Mapping[NodeName, Broken],
    max_failed: MaxFailed | None,
    *,
    nodes: int | None = None,
) -> Notice | None:
    """The Warning `RolloutFailed` when a running rollout has more broken nodes than its failure
    budget tolerates (None: no budget, paused already, or within it). A percentage counts over
    `nodes` (by default the nodes holding a pod, or the desired count if larger)."""
    if max_failed is None or staging.paused or target.hash is None:
        return None
    if nodes is None:
        nodes = base_of(len(snapshot.pods_by_node), desired_nodes=snapshot.daemonset.desired_nodes)
    return failure_stop(
        broken,
        limit=max_failed,
        nodes=nodes,
        revision=target.hash,
        pause_changes=snapshot.pause_changes,
    )


def _ota_broken(
    snapshot: Snapshot, target: TargetRevision, progress_deadline: timedelta
) -> dict[NodeName, Broken]:
    """The Ready nodes whose pod of the newest revision is failing, judged as for
    AdvancedRollingUpdate (design §13.1): a node that upgraded itself can be broken too."""
    if target.hash is None and target.template_generation is None:
        return {}
    readiness, min_ready, now = (
        snapshot.readiness,
        snapshot.daemonset.min_ready_seconds,
        snapshot.now,
    )
    broken: dict[NodeName, Broken] = {}
    for node, pods in snapshot.pods_by_node.items():
        if readiness.get(node) is not NodeReadiness.READY:
            continue
        live = [pod for pod in pods if not pod.deleting]
        failing = judge_node(live, target, min_ready, now, progress_deadline=progress_deadline)[2]
        if failing is not None:
            broken[node] = failing
    return broken


def _ota_holds(snapshot: Snapshot, staging: Staging, target: TargetRevision) -> Holds:
    """The nodes an OTA rollout holds back. A wave is done when its Ready nodes' pods are
    current and available, judged as AdvancedRollingUpdate judges them."""
    if not staging.active:
        return NOTHING_HELD
    readiness, by_node = snapshot.readiness, snapshot.pods_by_node
    min_ready = snapshot.daemonset.min_ready_seconds

    def ready(node: NodeName) -> bool:
        return readiness.get(node, NodeReadiness.MISSING) is NodeReadiness.READY

    def verdict(node: NodeName) -> NodeVerdict:
        live = [pod for pod in by_node.get(node, ()) if not pod.deleting]
        return judge_node(live, target, min_ready, snapshot.now)[0]

    return hold_nodes(
        staging,
        nodes=list(by_node),
        labels=snapshot.labels_of,
        done=lambda node: verdict(node) is NodeVerdict.UP_TO_DATE,
        ready=ready,
        outdated=lambda node: verdict(node) in HOLDING_AN_OLD_POD,
    )


def _ota_deadline_upgrades(
    snapshot: Snapshot, staging: Staging, target: TargetRevision
) -> tuple[DeletionPlan | None, MaxUnavailable | Notice | None, float | None]:
    """The OTA pods the controller upgrades itself (design §13.3): marked `PodNeedUpgrade=True`
    for the newest revision longer than `edgerollout.io/ota-deadline`, deleted under
    max-unavailable as AdvancedRollingUpdate would, inside a maintenance window, never on a held
    node. Also the budget (or the Warning of an unreadable deadline or budget) and the seconds
    until the next marked pod passes its deadline."""
    annotations = snapshot.daemonset.annotations
    deadline = read_ota_deadline(annotations.get(OTA_DEADLINE_ANNOTATION))
    if deadline is None or isinstance(deadline, Notice):
        return None, deadline, None
    if staging.paused or staging.invalid or target.hash is None:
        return None, None, None
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
    if not overdue:
        return None, None, next_due
    daemonset = snapshot.daemonset
    base = budget_base(
        snapshot.pods, in_flight=snapshot.in_flight, desired_nodes=daemonset.desired_nodes
    )
    budget = parse_max_unavailable(annotations.get(MAX_UNAVAILABLE_ANNOTATION), base=base)
    if isinstance(budget, InvalidMaxUnavailable):
        return None, budget.notice, next_due
    readiness = snapshot.readiness
    chosen = plan_deletions(
        pods=snapshot.pods,
        nodes=[
            NodeView(name=node, readiness=readiness[node])
            for node in snapshot.pods_by_node
            if node in readiness
        ],
        target=target,
        max_unavailable=budget.value,
        min_ready_seconds=daemonset.min_ready_seconds,
        now=snapshot.now,
        in_flight=snapshot.in_flight,
        desired_nodes=daemonset.desired_nodes,
        counted_while_not_ready=daemonset.counted_while_not_ready,
        staging=replace(staging.for_deletions(snapshot.now), only=frozenset(overdue)),
        labels=snapshot.labels_of,
    )
    upgrades = tuple(
        replace(deletion, reason=DeletionReason.OTA_DEADLINE) for deletion in chosen.deletions
    )
    return replace(chosen, deletions=upgrades), budget, next_due


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


def _wave_notice(holds: Holds, target: TargetRevision) -> tuple[Notice, ...]:
    if target.hash is None:
        return ()
    notice = wave_started_notice(holds, revision=target.hash)
    return () if notice is None else (notice,)


def _starting(
    daemonset: DaemonSetView, rollout: DeletionPlan, settings: PlanSettings
) -> float | None:
    """When a starting or failing node's verdict may change on the clock alone: minReadySeconds
    (a Ready pod becomes available), and the health recheck (a deadline passes)."""
    timed = {verdict for verdict in rollout.verdicts.values() if verdict in CLOCK_DEPENDENT}
    if not timed:
        return None
    waits = [settings.health_recheck_seconds]
    if daemonset.min_ready_seconds > 0 and NodeVerdict.STARTING in timed:
        waits.append(float(daemonset.min_ready_seconds))
    return min(waits)


def _recheck(settings: PlanSettings, *, starting: float | None = None) -> Recheck:
    return Recheck(
        deletions_seconds=settings.deletion_recheck_seconds,
        starting_seconds=starting,
        min_seconds=settings.min_recheck_seconds,
    )
