"""The plan of an AdvancedRollingUpdate: which pods go now, under one max-unavailable budget.

Steps 4 and 5 of `reconcile` for this strategy: the budget is resolved over the rollout's base
(`Snapshot.budget_base`); an unreadable one deletes nothing. Then the book (`rollout_book`) picks
the deletions: held nodes never (`holds`, a closed maintenance window holding all of them);
with pre-pull before delete, a node whose images are not there is held and the next nodes'
pulls are asked for (`prepull_first`). More broken nodes than the failure budget tolerates
(`failure_budget`): nothing is deleted, and the rollout is paused or, when the DaemonSet asks
for it, rolled back (`rollback`); after a rollback, the nodes broken on the revision it left go
first.
"""

from dataclasses import replace

from edgerollout.domain.planning.decision import Plan, Recheck, RolloutReading, Snapshot
from edgerollout.domain.planning.holds import batch_started_notice, wave_started_notice
from edgerollout.domain.planning.prepull_first import PrepullSteps, prepull_first
from edgerollout.domain.planning.rollback import broken_first
from edgerollout.domain.planning.rollout_book import RolloutBook
from edgerollout.domain.planning.verdicts import CLOCK_DEPENDENT, DeletionPlan, NodeVerdict
from edgerollout.domain.spec.max_unavailable import InvalidMaxUnavailable, MaxUnavailable
from edgerollout.domain.spec.staging import Staging
from edgerollout.settings import ControllerSettings

# A pod is available strictly after its Ready transition plus minReadySeconds: look a moment after.
AVAILABLE_MARGIN = 0.01


def plan_advanced_rolling_update(
    snapshot: Snapshot, reading: RolloutReading, book: RolloutBook, settings: ControllerSettings
) -> Plan:
    """The plan of an AdvancedRollingUpdate whose book `reading` has just refreshed."""
    target, spec = reading.target, reading.spec
    staging = spec.staging
    if isinstance(spec.max_unavailable, InvalidMaxUnavailable):
        return reading.stopped(spec.max_unavailable.notice, settings=settings)
    budget = MaxUnavailable.of(spec.max_unavailable, base=snapshot.budget_base())
    pulls_first = prepull_first(
        spec.prepull,
        nodes=budget.base,
        target=target,
        pods_by_node=snapshot.pods_by_node,
        readiness=snapshot.readiness,
        in_flight=snapshot.in_flight,
        now=snapshot.now,
        settings=settings.prepull,
    )
    deleting = pulls_first.gate(staging.for_deletions(snapshot.now))
    pending = reading.rollback_pending(snapshot)
    if pending:
        # A rollback's template is written and its echo not here yet (design §13.4.1): the
        # failed revision still looks newest, and nothing of it is to go on.
        deleting = replace(deleting, paused=True)
    first = broken_first(
        reading.rolled_back,
        target=target,
        pods_by_node=snapshot.pods_by_node,
        readiness=snapshot.readiness,
        min_ready_seconds=snapshot.daemonset.min_ready_seconds,
        progress_deadline=reading.progress_deadline,
        now=snapshot.now,
    )
    if first:
        deleting = replace(deleting, first=first)

    rollout = _deletions(snapshot, book, budget, deleting)
    notices = list(reading.notices)
    stop = reading.failure_stop(
        rollout.broken, snapshot, nodes=budget.base, tried=book.tried(), pending=pending
    )
    if stop.stops:
        # Too many broken nodes (design §13.4): planned as the pause it asks for, so nothing is
        # deleted even before the pause (or the rollback) is written, or if it cannot be.
        notices.extend(stop.notices)
        rollout = _deletions(snapshot, book, budget, replace(deleting, paused=True))
    started = (
        wave_started_notice(rollout.holds, revision=target.hash),
        batch_started_notice(rollout.holds, revision=target.hash),
    )
    notices.extend(notice for notice in started if notice is not None)
    pulls = pulls_first.steps(
        rollout, jobs=snapshot.pull_jobs, template=snapshot.pull_template, now=snapshot.now
    )
    return Plan(
        strategy=reading.strategy,
        notices=(*notices, *pulls.notices),
        condition_writes=pulls.requests,
        prepulls=pulls.prepulls,
        recheck=_recheck(snapshot, reading, rollout, pulls, settings),
        paused=staging.paused,
        pause_rollout=stop.pause_rollout,
        rollback=stop.rollback,
        broken=rollout.broken,
        window_opens=reading.window_opens,
        holds=rollout.holds,
        target=target,
        budget=budget,
        rollout=rollout,
    )


def _deletions(
    snapshot: Snapshot, book: RolloutBook, budget: MaxUnavailable, staging: Staging
) -> DeletionPlan:
    """The book's deletions under `budget`, with the nodes `staging` holds held."""
    daemonset = snapshot.daemonset
    return book.plan(
        max_unavailable=budget.value,
        desired_nodes=daemonset.desired_nodes,
        counted_while_not_ready=daemonset.counted_while_not_ready,
        staging=staging,
        labels=snapshot.labels_of,
        now=snapshot.now,
    )


def _recheck(
    snapshot: Snapshot,
    reading: RolloutReading,
    rollout: DeletionPlan,
    pulls: PrepullSteps,
    settings: ControllerSettings,
) -> Recheck:
    """When to look again without an event: a starting or failing node's verdict may change on
    the clock alone (minReadySeconds, the health recheck), a pre-pull passes its fallback, a
    closed maintenance window opens, a soaking batch lets the next start."""
    # From the book's counts, not a scan of every node's verdict: that scan was most of a plan
    # that judged one node at 100,000 nodes.
    counted = rollout.counted
    timed = {verdict for verdict in CLOCK_DEPENDENT if counted.get(verdict, 0)}
    starting: float | None = None
    if timed:
        waits = [settings.reconcile.health_recheck]
        min_ready = snapshot.daemonset.min_ready_seconds
        if min_ready > 0 and NodeVerdict.STARTING in timed:
            # At the moment the first Ready pod turns available (Kubernetes' own reading: its
            # Ready transition plus minReadySeconds, strictly after), not minReadySeconds after
            # this plan: that was up to a second late, and more when reconciles came between.
            turns = rollout.next_available
            waits.append(
                float(min_ready)
                if turns is None
                else max(0.0, (turns - snapshot.now).total_seconds()) + AVAILABLE_MARGIN
            )
        starting = min(waits)
    recheck = replace(
        Recheck.of(settings, starting=starting), prepull_seconds=pulls.recheck_seconds
    )
    recheck = recheck.until_soaked(rollout.holds, snapshot.now)
    return recheck.until_window_opens(reading.window_opens, snapshot.now)
