"""One reconcile of one DaemonSet, decided: the single entry point the controller calls.

The controller takes a `Snapshot` (`decision`) of what its caches show of one DaemonSet (the DaemonSet, its
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

2. What does it ask for? Every rollout annotation is read once, into a `RolloutSpec`
   (`spec.rollout_spec`); a progress deadline or a failure budget that cannot be read stops the
   plan of either strategy with its Warning. Is the rollout staged? (`spec.staging`, design §12)
   Paused, held to a node selector, a partition or waves; a value that cannot be read holds every
   node, with a Warning. A pause or a resume is told once by an Event (`spec.pause`), a wave that
   starts too (`WaveStarted`, `holds`). The DaemonSet's nodes are then judged by its book
   (`rollout_book`), the same for either strategy, and the holds nodes asked for themselves
   against max-hold (`node_holds`, design §13.6): one in force holds its node, one past
   max-hold is ignored with a Warning.
3. OTA (`ota_rollout`): which pods need their `PodNeedUpgrade` condition written (a held node's
   pod is told False; while paused, or while a staging value is invalid, nothing is written),
   which image pre-pulls are to start or to report, and which pods past their OTA deadline the
   controller upgrades itself, under max-unavailable.
4. AdvancedRollingUpdate (`advanced_rollout`): is max-unavailable valid? If not, a Warning and no
   deletion at all; the controller should wait for the DaemonSet to change rather than retry.
5. Which pods go now? (`rollout_book`, `verdicts`; held nodes never; with pre-pull before
   delete, a node whose images are not there is held, and the next nodes' pulls are asked for:
   `prepull_first`) Unless more nodes are broken than the failure budget tolerates: then none,
   and the rollout is paused (`failure_stop`; for OTA, nothing more is offered), or rolled back
   to the previous revision when the DaemonSet asks for it and its namespace is switched on
   (`rollback`, design §13.4.1).
6. When to look again without an event (`Recheck`).
7. Where do its nodes stand? (`RolloutBook.tally`, once its nodes are judged) What `status`,
   `list`, the DaemonSet's condition and the metrics report.
"""

from dataclasses import replace

from edgerollout.domain.events import Notice
from edgerollout.domain.planning.advanced_rollout import plan_advanced_rolling_update
from edgerollout.domain.planning.decision import Plan, RolloutReading, Snapshot, stopped_plan
from edgerollout.domain.planning.node_holds import NO_NODE_HOLDS, judge_node_holds
from edgerollout.domain.planning.ota_rollout import plan_ota
from edgerollout.domain.planning.revisions import target_revision
from edgerollout.domain.planning.rollout_book import RolloutBook
from edgerollout.domain.spec.max_unavailable import InvalidMaxUnavailable, MaxUnavailable
from edgerollout.domain.spec.on_failure import RollbackSwitch
from edgerollout.domain.spec.pause import pause_notice
from edgerollout.domain.spec.rollout_spec import RolloutSpec, read_rollout_spec
from edgerollout.domain.spec.strategy import UpdateStrategy, choose_strategy
from edgerollout.domain.vocabulary import UPDATE_STRATEGY_ANNOTATION
from edgerollout.settings import CONTROLLER, ControllerSettings


def dry_plan(snapshot: Snapshot, *, rollback: RollbackSwitch) -> Plan:
    """The controller's plan of `snapshot` from a fresh book, as `status`, `plan`, `list` and the
    dashboard show it: with rollbacks in the DaemonSet's namespace exactly where the reader found
    the install's switch (`rollback`; design §13.4.1), the controller's settings otherwise."""
    switched_on = rollback is RollbackSwitch.ON
    namespaces = frozenset({snapshot.daemonset.namespace}) if switched_on else frozenset()
    return plan(snapshot, RolloutBook(), replace(CONTROLLER, rollback_namespaces=namespaces))


def plan(snapshot: Snapshot, book: RolloutBook, settings: ControllerSettings = CONTROLLER) -> Plan:
    """Decide one reconcile of `snapshot.daemonset` (see the module docstring).

    `book` is the DaemonSet's book from its previous plans (a new one for the first); when this
    plan stops before the book has judged the changes it was told of (not ours, or a limit that
    cannot be read), or fails, the book is reset, so that the next plan judges every node.
    """
    try:
        decided, judged = _decide(snapshot, book, settings)
    except BaseException:
        book.reset()
        raise
    if not judged:
        book.reset()
    return decided


def _decide(
    snapshot: Snapshot, book: RolloutBook, settings: ControllerSettings
) -> tuple[Plan, bool]:
    """The plan, and whether `book` judged the snapshot's changes for it."""
    daemonset = snapshot.daemonset
    choice = choose_strategy(
        annotations=daemonset.annotations,
        update_strategy_type=daemonset.update_strategy_type,
    )
    if choice.strategy is None:
        not_ours = Plan(
            strategy=None,
            notices=choice.notices,
            keep_notices=UPDATE_STRATEGY_ANNOTATION in daemonset.annotations,
        )
        return not_ours, False

    spec = read_rollout_spec(daemonset.annotations)
    notices = [*choice.notices, *spec.staging.notices]
    paused = pause_notice(
        spec.staging.paused, before=snapshot.paused_before, changes=snapshot.pause_changes
    )
    if paused is not None:
        notices.append(paused)
    target = target_revision(annotations=daemonset.annotations, revisions=snapshot.revisions)
    deadline, max_failed, sample = spec.progress_deadline, spec.max_failed, spec.min_sample
    on_failure, rolled_back = spec.on_failure, spec.rolled_back
    unreadable = spec.unreadable_failure_settings()
    if (
        unreadable
        or isinstance(deadline, Notice)
        or isinstance(max_failed, Notice)
        or isinstance(sample, Notice)
        or isinstance(on_failure, Notice)
        or isinstance(rolled_back, Notice)
    ):
        stopped = stopped_plan(
            choice.strategy,
            target=target,
            notices=(*notices, *unreadable),
            paused=spec.staging.paused,
            settings=settings,
            budget=_budget_told(choice.strategy, spec, snapshot),
        )
        return stopped, False
    book.refresh(
        target=target,
        min_ready_seconds=daemonset.min_ready_seconds,
        now=snapshot.now,
        pods_by_node=snapshot.pods_by_node,
        readiness=snapshot.readiness,
        changed=snapshot.changed_nodes,
        in_flight=snapshot.in_flight,
        progress_deadline=deadline,
    )
    asked = NO_NODE_HOLDS
    if not spec.staging.invalid:
        asked = judge_node_holds(book.asked, max_hold=spec.staging.max_hold, now=snapshot.now)
        if asked.in_force:
            spec = replace(spec, staging=replace(spec.staging, asked=asked.in_force))
        notices.extend(asked.notices)
    reading = RolloutReading(
        strategy=choice.strategy,
        target=target,
        spec=spec,
        notices=tuple(notices),
        progress_deadline=deadline,
        max_failed=max_failed,
        min_sample=sample,
        window_opens=spec.staging.for_deletions(snapshot.now).window_opens,
        on_failure=on_failure,
        rolled_back=rolled_back,
        may_roll_back=daemonset.namespace in settings.rollback_namespaces,
    )
    if choice.strategy is UpdateStrategy.OTA:
        decided = plan_ota(snapshot, reading, book, settings)
    else:
        decided = plan_advanced_rolling_update(snapshot, reading, book, settings)
    recheck = decided.recheck
    if recheck is not None and asked.ends_in_seconds is not None:
        recheck = replace(recheck, hold_seconds=asked.ends_in_seconds)
    return replace(decided, recheck=recheck, tally=book.tally(decided.holds)), True


def _budget_told(
    strategy: UpdateStrategy, spec: RolloutSpec, snapshot: Snapshot
) -> MaxUnavailable | None:
    """The budget an AdvancedRollingUpdate stopped by another value would run with, for `status`
    and `plan` to show (None: OTA, or max-unavailable cannot be read either)."""
    count = spec.max_unavailable
    if strategy is not UpdateStrategy.ADVANCED_ROLLING_UPDATE or isinstance(
        count, InvalidMaxUnavailable
    ):
        return None
    return MaxUnavailable.of(count, base=snapshot.budget_base())
