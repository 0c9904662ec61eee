"""The plan of an AdvancedRollingUpdate: which pods go now, under one max-unavailable budget.

Steps 4 and 5 of `reconcile` for this strategy: the budget is resolved over the rollout's base
(`Snapshot.budget_base`); an unreadable one deletes nothing. Then the book (`rollout_book`) picks
the deletions: held nodes never (`holds`, a closed maintenance window holding all of them);
with pre-pull before delete, a node whose images are not there is held and the next nodes'
pulls are asked for (`prepull_first`). More broken nodes than the failure budget tolerates
(`failure_budget`): nothing is deleted, and the rollout is paused.
"""

from dataclasses import replace

from edgerollout.domain.model import DaemonSetView
from edgerollout.domain.planning.decision import Plan, Recheck, RolloutReading, Snapshot
from edgerollout.domain.planning.failure_stop import failure_stop
from edgerollout.domain.planning.holds import wave_started_notice
from edgerollout.domain.planning.prepull_first import prepull_first
from edgerollout.domain.planning.rollout_book import RolloutBook
from edgerollout.domain.planning.verdicts import CLOCK_DEPENDENT, DeletionPlan, NodeVerdict
from edgerollout.domain.spec.max_unavailable import InvalidMaxUnavailable, MaxUnavailable
from edgerollout.domain.spec.staging import Staging
from edgerollout.settings import ControllerSettings


def plan_advanced_rolling_update(
    snapshot: Snapshot, reading: RolloutReading, book: RolloutBook, settings: ControllerSettings
) -> Plan:
    """The plan of an AdvancedRollingUpdate whose book `reading` has just refreshed."""
    daemonset, target, spec = snapshot.daemonset, reading.target, reading.spec
    staging = spec.staging
    if isinstance(spec.max_unavailable, InvalidMaxUnavailable):
        return reading.stopped(spec.max_unavailable.notice, settings=settings)
    budget = MaxUnavailable.of(spec.max_unavailable, base=snapshot.budget_base())
    pulls_first = prepull_first(
        spec.prepull,
        target=target,
        pods_by_node=snapshot.pods_by_node,
        readiness=snapshot.readiness,
        in_flight=snapshot.in_flight,
        now=snapshot.now,
        settings=settings.prepull,
    )
    deleting = pulls_first.gate(staging.for_deletions(snapshot.now))

    def rollout_with(staging: Staging) -> DeletionPlan:
        return book.plan(
            max_unavailable=budget.value,
            desired_nodes=daemonset.desired_nodes,
            counted_while_not_ready=daemonset.counted_while_not_ready,
            staging=staging,
            labels=snapshot.labels_of,
        )

    rollout = rollout_with(deleting)
    notices = list(reading.notices)
    failed = failure_stop(
        rollout.broken,
        limit=reading.max_failed,
        paused=staging.paused,
        revision=target.hash,
        nodes=budget.base,
        pause_changes=snapshot.pause_changes,
    )
    if failed is not None:
        # Too many broken nodes (design §13.4): planned as the pause it asks for, so nothing is
        # deleted even before the pause is written, or if it cannot be.
        notices.append(failed)
        rollout = rollout_with(replace(deleting, paused=True))
    wave = wave_started_notice(rollout.holds, revision=target.hash)
    if wave is not None:
        notices.append(wave)
    pulls = pulls_first.steps(
        rollout, jobs=snapshot.pull_jobs, template=snapshot.pull_template, now=snapshot.now
    )
    recheck = replace(
        Recheck.of(settings, starting=_starting(daemonset, rollout, settings)),
        # Look again when a pre-pull passes its fallback: no event says so.
        prepull_seconds=pulls.recheck_seconds,
    )
    return Plan(
        strategy=reading.strategy,
        notices=(*notices, *pulls.notices),
        condition_writes=pulls.requests,
        prepulls=pulls.prepulls,
        recheck=recheck.until_window_opens(reading.window_opens, snapshot.now),
        paused=staging.paused,
        pause_rollout=failed is not None,
        broken=rollout.broken,
        window_opens=reading.window_opens,
        holds=rollout.holds,
        target=target,
        budget=budget,
        rollout=rollout,
    )


def _starting(
    daemonset: DaemonSetView, rollout: DeletionPlan, settings: ControllerSettings
) -> float | None:
    """When a starting or failing node's verdict may change on the clock alone: minReadySeconds
    (a Ready pod becomes available), and the health recheck (a deadline passes)."""
    timed = {verdict for verdict in rollout.verdicts.values() if verdict in CLOCK_DEPENDENT}
    if not timed:
        return None
    waits = [settings.reconcile.health_recheck]
    if daemonset.min_ready_seconds > 0 and NodeVerdict.STARTING in timed:
        waits.append(float(daemonset.min_ready_seconds))
    return min(waits)
