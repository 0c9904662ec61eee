"""One reconcile of one DaemonSet: snapshot, plan, carry the plan out (design §10.3).

`reconcile(key)` takes a `Snapshot` of what the caches show of the DaemonSet together with what its
`RolloutState` remembers, asks the pure `domain.reconcile.plan` for every decision, and hands each
kind of decision to its writer (`controller/writes/`). It decides nothing itself: the strategy, the
deletions, the condition writes, the pre-pulls, when to look again and whether the rollout's
state ends all come from the plan.
"""

from __future__ import annotations

import datetime
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from edgerollout.controller import metrics
from edgerollout.controller.cluster_cache import ClusterCache
from edgerollout.controller.rollout_state import RolloutStates
from edgerollout.controller.snapshot import take_snapshot
from edgerollout.controller.writes.conditions import ConditionWriter
from edgerollout.controller.writes.deletions import PodDeleter
from edgerollout.controller.writes.events import EventWriter
from edgerollout.controller.writes.guard import NotLeader, WriteGuard
from edgerollout.controller.writes.pause import RolloutPauser
from edgerollout.controller.writes.pull_jobs import PullJobRunner
from edgerollout.controller.writes.rollback import RolloutRollbacker
from edgerollout.controller.writes.rollout_condition import RolloutConditionWriter
from edgerollout.domain.model import Condition, NodeName, NodeReadiness
from edgerollout.domain.planning.decision import Plan
from edgerollout.domain.planning.reconcile import plan
from edgerollout.domain.planning.revisions import daemonset_behind
from edgerollout.domain.reporting.node_states import NodeState, node_state_counts
from edgerollout.domain.reporting.pool_counts import POOL_STATES
from edgerollout.domain.reporting.rollout_condition import rollout_condition
from edgerollout.domain.reporting.rollout_phase import (
    RolloutCounts,
    RolloutPhase,
    rollout_standing,
    unfollowed_annotations,
)
from edgerollout.kube.api import Api
from edgerollout.kube.recorder import EventRecorder
from edgerollout.kube.views import CachedDaemonSet
from edgerollout.logfields import LogFields
from edgerollout.settings import CONTROLLER, ControllerSettings

__all__ = ["NotLeader", "Outcome", "Reconciler"]

log = logging.getLogger("edgerollout.controller")


@dataclass(frozen=True, slots=True, kw_only=True)
class Standing:
    """Where a rollout stands after a plan, and the condition its DaemonSet is to carry."""

    phase: RolloutPhase
    counts: RolloutCounts | None
    condition: Condition
    # The DaemonSet controller has seen the DaemonSet's generation: until then the condition is
    # left as it was (its counts would be the old template's; its generation says it is stale).
    observed: bool = True


@dataclass(frozen=True, slots=True)
class Outcome:
    """What a reconcile did, and when the key should be looked at again without an event."""

    plan: Plan | None
    deleted: int = 0
    conditions_written: int = 0
    requeue_after: float | None = None
    # The nodes the plan counted its budgets over (0 when nothing was planned): what paces the
    # key's next reconcile (`ReconcileSettings.pause_after`).
    nodes: int = 0


class Reconciler:
    def __init__(
        self,
        *,
        cache: ClusterCache,
        states: RolloutStates,
        api: Api,
        recorder: EventRecorder,
        may_write: Callable[[], bool],
        clock: Callable[[], datetime.datetime] | None = None,
        settings: ControllerSettings = CONTROLLER,
    ) -> None:
        self.cache = cache
        self.states = states
        self.recorder = recorder
        guard = WriteGuard(may_write)
        at_once = settings.reconcile.write_concurrency
        self.events = EventWriter(recorder, guard)
        self.pauser = RolloutPauser(api, guard)
        self.rollbacker = RolloutRollbacker(api, guard, self.events, self.pauser)
        self.deleter = PodDeleter(api, guard, self.events, at_once=at_once)
        self.conditions = ConditionWriter(api, guard, at_once=at_once)
        self.pull_jobs = PullJobRunner(api, guard, self.conditions)
        self.rollout_conditions = RolloutConditionWriter(api, guard, settings.reconcile)
        # What each DaemonSet's rollout metrics were last set to, by key.
        self._reported: dict[str, tuple[RolloutPhase, RolloutCounts | None]] = {}
        # What the controller-wide node gauges were last set to.
        self._exported_skipped: int | None = None
        self._exported_states: dict[NodeState, int] = {}
        self.clock = clock or (lambda: datetime.datetime.now(datetime.UTC))
        self.settings = settings

    def _drop(self, key: str, *, keep_notices: bool = False) -> None:
        """Forget everything remembered about a DaemonSet's rollout: the one place it ends.

        The Events the DaemonSet has had are forgotten with it, unless `keep_notices`: then a
        new state takes the UID over at once, so that the Events are still forgotten when that
        state ends in turn."""
        if keep_notices:
            self.states.reset(key)
        else:
            state = self.states.drop(key)
            if state is not None:
                self.recorder.forget(state.uid)
        self._export_node_states()

    async def reports_sent(self) -> None:
        """Wait until every Event reported so far has been sent (or dropped)."""
        await self.events.reports_sent()

    async def reconcile(self, key: str) -> Outcome:
        cached = self.cache.daemonsets.get(key)
        if cached is None:
            self._drop(key)
            self._report(key, None)
            return Outcome(plan=None)
        ds = cached.view
        if not self.cache.pods_listed(cached):
            # Its pod cache has just started: the end of its first list enqueues it again, so
            # that it is never planned without its pods.
            return Outcome(plan=None)
        revisions = [revision.view for revision in self.cache.revisions_of(ds.uid)]
        if daemonset_behind(annotations=ds.annotations, revisions=revisions):
            # The revision of a template the cached DaemonSet does not have yet: its own event,
            # on its way, enqueues it again (`domain.planning.revisions`).
            log.debug(
                "daemonset behind its newest revision; waiting", extra=LogFields(daemonset=key)
            )
            return Outcome(plan=None)
        known = self.states.get(key)
        if known is not None and known.uid != ds.uid:
            self._drop(key)  # deleted and recreated under the same name
        state = self.states.of(key, ds.uid)

        cpu_started = time.thread_time()
        with metrics.PLAN_TIME.time():
            snapshot = take_snapshot(self.cache, cached, state, now=self.clock())
            decided = plan(snapshot, state.book, self.settings)
        metrics.PLAN_CPU_TIME.observe(time.thread_time() - cpu_started)
        self._log_skipped(decided, key=key, readiness=snapshot.readiness)
        # Read before the first await: the snapshot's views over the caches hold until then.
        nodes = snapshot.budget_base()
        standing = self._standing(cached, decided, nodes=nodes)
        self._report(key, standing)

        if decided.ends_rollout:
            self._drop(key, keep_notices=decided.keep_notices)
        else:
            state.note_paused(decided.paused)
        # The pause and the rollback are written before the Events that tell of them: whoever
        # reads "The rollout is paused" in an Event then finds the DaemonSet paused. A write
        # refused is raised and retried, and its Event told once it is done.
        if decided.pause_rollout:
            await self.pauser.pause(ds)
        if decided.rollback is not None:
            await self.rollbacker.roll_back(ds, decided.rollback)
        for notice in decided.notices:
            await self.events.emit(ds, notice)
        rollout = decided.rollout
        if not decided.ends_rollout:
            state.holds = decided.holds
        if rollout is not None:
            state.skipped_nodes = len(rollout.skipped_nodes)
            state.node_states = node_state_counts(rollout)
            self._export_node_states()
        # The deletions first: they were decided on what the caches show, not on this plan's
        # other writes, and a condition patch or a pull Job the API server keeps refusing must
        # not hold the rollout back (the failure is still raised, and the key retried).
        deleted = await self.deleter.delete(ds, decided, state)
        written = await self.conditions.write(ds, decided.condition_writes, state)
        written += await self.pull_jobs.run(ds, decided.prepulls, state)
        counts_due = None
        if standing is None or standing.observed:
            counts_due = await self.rollout_conditions.update(
                cached,
                None if standing is None else standing.condition,
                self.states.get(key),  # None once the rollout ended, unless its DaemonSet stays
                now=snapshot.now,
            )
        requeue = None
        if decided.recheck is not None:
            requeue = decided.recheck.after(
                deletions_in_flight=state.deletions.pending,
                unechoed_seconds=state.conditions.next_expiry(),
            )
        if counts_due is not None:
            requeue = counts_due if requeue is None else min(requeue, counts_due)
        # A Warning held back by its rate is told when the next may be sent, if still true then.
        held_back = self.recorder.warning_wait(ds)
        if held_back is not None:
            held_back = max(held_back, 1.0)
            requeue = held_back if requeue is None else min(requeue, held_back)
        self._summarize(decided, key=key, deleted=deleted, written=written, requeue=requeue)
        return Outcome(
            plan=decided,
            deleted=deleted,
            conditions_written=written,
            requeue_after=requeue,
            nodes=nodes,
        )

    @staticmethod
    def _standing(cached: CachedDaemonSet, decided: Plan, *, nodes: int) -> Standing | None:
        """Where the rollout stands after `decided` (None: the DaemonSet is not opted in), read
        as `status` reads it (design §9.1), and the condition that says so (§9.2)."""
        observed = cached.observed_generation >= cached.generation
        counts, phase = rollout_standing(
            decided, daemonset=cached.view, spec_observed=observed, nodes=nodes
        )
        if phase is None:
            return None
        condition = rollout_condition(
            phase,
            counts=counts,
            unfollowed=unfollowed_annotations(decided.notices),
            generation=cached.generation,
        )
        return Standing(phase=phase, counts=counts, condition=condition, observed=observed)

    def _report(self, key: str, standing: Standing | None) -> None:
        """Set the rollout's metrics to where it stands (None: remove them), when that changed."""
        namespace, _, name = key.partition("/")
        before = self._reported.get(key)
        if standing is None:
            if before is not None:
                del self._reported[key]
                for phase in RolloutPhase:
                    metrics.ROLLOUT_PHASE.remove(namespace, name, phase.value)
                if before[1] is not None:
                    for state in POOL_STATES:
                        metrics.DAEMONSET_NODES.remove(namespace, name, state)
            return
        now = (standing.phase, standing.counts)
        if now == before:
            return
        self._reported[key] = now
        # Only the gauges whose value moved are set: a rollout's counts move at nearly every
        # plan, its phase seldom, and each series looked up costs a lock and a hash.
        before_phase, before_counts = before if before is not None else (None, None)
        if standing.phase is not before_phase:
            for phase in RolloutPhase:
                metrics.ROLLOUT_PHASE.labels(namespace, name, phase.value).set(
                    1 if phase is standing.phase else 0
                )
        counts = standing.counts
        if counts is None:
            if before_counts is not None:
                for state in POOL_STATES:
                    metrics.DAEMONSET_NODES.remove(namespace, name, state)
            return
        previous = before_counts.by_state() if before_counts is not None else {}
        for state, value in counts.by_state().items():
            if previous.get(state) != value:
                metrics.DAEMONSET_NODES.labels(namespace, name, state).set(value)

    def _export_node_states(self) -> None:
        """The controller-wide node gauges, each set when its value moved."""
        skipped = self.states.skipped_nodes
        if skipped != self._exported_skipped:
            metrics.NODES_SKIPPED.set(skipped)
            self._exported_skipped = skipped
        exported = self._exported_states
        for where, count in self.states.node_states().items():
            if exported.get(where) != count:
                metrics.NODES.labels(state=where.value).set(count)
                exported[where] = count

    @staticmethod
    def _log_skipped(
        decided: Plan, *, key: str, readiness: Mapping[NodeName, NodeReadiness]
    ) -> None:
        """A DEBUG line per node the plan left alone, with its readiness as the reason. Called
        before the first await: the snapshot's views over the caches hold only until then."""
        if decided.rollout is None or not log.isEnabledFor(logging.DEBUG):
            return
        for node in decided.rollout.skipped_nodes:
            why = readiness.get(node, NodeReadiness.MISSING)
            log.debug("skipped node", extra=LogFields(daemonset=key, node=node, reason=why.value))

    def _summarize(
        self, decided: Plan, *, key: str, deleted: int, written: int, requeue: float | None
    ) -> None:
        """One line per reconcile: at INFO when it had something to do (pods to delete, pull Jobs
        to start, report or remove, conditions written), else at DEBUG. Most reconciles follow a
        watch event that changes nothing, and an idle controller's log stays quiet."""
        acted = bool(decided.deletions or decided.prepulls or deleted or written)
        level = logging.INFO if acted else logging.DEBUG
        if not log.isEnabledFor(level):
            return
        fields = LogFields(daemonset=key, deleted=deleted, written=written)
        if decided.strategy is not None:
            fields["strategy"] = decided.strategy.value
        if decided.target is not None and decided.target.hash is not None:
            fields["revision"] = decided.target.hash
        rollout = decided.rollout
        if rollout is not None:
            fields["unavailable"] = rollout.unavailable_after
            fields["budget"] = rollout.max_unavailable
            fields["skipped"] = len(rollout.skipped_nodes)
        if decided.holds.held:
            fields["held"] = len(decided.holds.held)
        if decided.holds.wave is not None:
            fields["wave"] = decided.holds.wave.name
        if requeue is not None:
            fields["requeue_after"] = requeue
        log.log(level, "reconciled", extra=fields)
