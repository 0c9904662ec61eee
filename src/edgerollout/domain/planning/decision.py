"""What one reconcile decides from and what it decides: the `Snapshot` in, the `Plan` out.

Both are plain values (see `reconcile` for the questions a plan answers, in order): a snapshot
can be built by hand in a test, a plan logged, asserted on or replayed. `Recheck` is the part of
a plan that says when to look again if no event comes (controller-runtime's `RequeueAfter`).
"""

from collections.abc import Collection, Iterable, Mapping, Sequence, Set
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Self

from edgerollout.domain.events import Notice
from edgerollout.domain.model import (
    NO_IN_FLIGHT,
    DaemonSetView,
    InFlight,
    NodeName,
    NodeReadiness,
    NodeView,
    PodView,
    RevisionView,
)
from edgerollout.domain.planning.conditions import ConditionWrite
from edgerollout.domain.planning.failure_stop import failure_account
from edgerollout.domain.planning.health import Broken
from edgerollout.domain.planning.holds import NOTHING_HELD, Holds
from edgerollout.domain.planning.prepull import JobView, PrepullStep, PullTemplate
from edgerollout.domain.planning.revisions import TargetRevision
from edgerollout.domain.planning.rollback import (
    FailureOutcome,
    Rollback,
    on_failure,
    rollback_pending,
)
from edgerollout.domain.planning.rollout_book import Tally
from edgerollout.domain.planning.verdicts import Deletion, DeletionPlan
from edgerollout.domain.spec.count import Count
from edgerollout.domain.spec.max_failed import MinSample
from edgerollout.domain.spec.max_unavailable import MaxUnavailable
from edgerollout.domain.spec.on_failure import OnFailure, RolledBack
from edgerollout.domain.spec.rollout_spec import RolloutSpec
from edgerollout.domain.spec.strategy import UpdateStrategy
from edgerollout.settings import CONTROLLER, ControllerSettings


@dataclass(frozen=True, slots=True, kw_only=True)
class Snapshot:
    """What the caches show of one DaemonSet at the instant `now`.

    - `revisions`: its ControllerRevisions.
    - `pods`: every pod it controls (owner reference with its UID), terminating ones included.
    - `pods_by_node`: the same pods, by the node they are on (pods with no node left out, and
      a node that holds none absent).
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
    in_flight: InFlight = NO_IN_FLIGHT
    pull_jobs: Mapping[str, JobView] = field(default_factory=dict)
    pull_template: PullTemplate | None = None
    paused_before: bool | None = None
    pause_changes: int = 0
    now: datetime
    # `budget_base()` once counted: a reconcile asks for it in the plan and again for its
    # standing, and the count walks every deletion in flight.
    _budget_base: int | None = field(default=None, init=False, repr=False, compare=False)

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

    def budget_base(self) -> int:
        """The number of nodes a rollout's budgets are counted over: max-unavailable and a
        failure budget's percentage, for both strategies, in the controller, `status` and `plan`.

        The distinct nodes holding at least one pod (terminating pods included), and the node of
        each deletion still in flight: a node whose pod is being replaced still counts between
        the old pod's removal and the new one's creation. At least `desiredNumberScheduled`: the
        native controller counts nodes that hold no pod at that moment too. Leaving them out
        would shrink the budget by as many nodes as are between two pods — from 100 to 96 of
        1,000 nodes at 10 % during a rollout. It costs what is in flight, not what exists."""
        if self._budget_base is not None:
            return self._budget_base
        pods_by_node, flying = self.pods_by_node, self.in_flight.nodes
        # The nodes of deletions that hold a pod, by lookups in the smaller of the two (a
        # dictionary's keys against a set: each looked up in the other, at C speed).
        holding = pods_by_node.keys() & flying
        between_pods = len(flying) - len(holding)
        base = max(len(pods_by_node) + between_pods, self.daemonset.desired_nodes or 0)
        object.__setattr__(self, "_budget_base", base)  # a memo: the snapshot does not change
        return base

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
    - a batch soaking: when the next batch may start (`soak_seconds`);
    - an OTA pod marked but not yet past its OTA deadline: when the first one passes it
      (`ota_deadline_seconds`);
    - a pre-pull asked for before a deletion and not done: when the first one passes its
      fallback (`prepull_seconds`, design §13.5);
    - a node holding its own upgrade: when the first hold ends (`hold_seconds`, design §13.6).
    """

    deletions_seconds: float
    starting_seconds: float | None = None
    min_seconds: float = CONTROLLER.reconcile.condition_recheck_floor
    window_seconds: float | None = None
    soak_seconds: float | None = None
    ota_deadline_seconds: float | None = None
    prepull_seconds: float | None = None
    hold_seconds: float | None = None

    @classmethod
    def of(cls, settings: ControllerSettings, *, starting: float | None = None) -> Self:
        """The looks every plan asks for, with `settings`'s periods; `starting`: see above."""
        return cls(
            deletions_seconds=settings.reconcile.requeue_while_deleting,
            starting_seconds=starting,
            min_seconds=settings.reconcile.condition_recheck_floor,
        )

    def until_window_opens(self, opens: datetime | None, now: datetime) -> Self:
        """This recheck, and a look when a closed maintenance window opens: no event says so."""
        if opens is None:
            return self
        return replace(self, window_seconds=max((opens - now).total_seconds(), 0.0))

    def until_soaked(self, holds: Holds, now: datetime) -> Self:
        """This recheck, and a look when a soaking batch lets the next start: no event says so."""
        batch = holds.batch
        if batch is None or batch.opens is None:
            return self
        return replace(self, soak_seconds=max((batch.opens - now).total_seconds(), 0.0))

    def after(self, *, deletions_in_flight: int, unechoed_seconds: float | None) -> float | None:
        """Seconds until the next look (None: only on an event)."""
        waits: list[float] = []
        if deletions_in_flight:
            waits.append(self.deletions_seconds)
        if self.starting_seconds is not None:
            waits.append(self.starting_seconds)
        if self.window_seconds is not None:
            waits.append(self.window_seconds)
        if self.soak_seconds is not None:
            waits.append(self.soak_seconds)
        if self.ota_deadline_seconds is not None:
            waits.append(self.ota_deadline_seconds)
        if self.prepull_seconds is not None:
            waits.append(self.prepull_seconds)
        if self.hold_seconds is not None:
            waits.append(self.hold_seconds)
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
    - `rollback`: the same, on a DaemonSet that asks to roll back on failure: the shell puts its
      template back to the previous revision's instead (design §13.4.1).
    - `broken`: the Ready nodes whose pod of the newest revision is failing, and why (both
      strategies; design §13.1).
    - `window_opens`: when the maintenance window, closed now, opens (None: open, or none).
    - `holds`: the nodes a staged rollout holds back, and its wave.
    - `target`, `budget`, `rollout`: the facts behind the decision, for logs and metrics; None when
      the plan stopped before reaching them.
    - `tally`: the DaemonSet's nodes counted by where they stand, for its reported counts and
      phase; None when the plan stopped before its nodes were judged. Not compared: it counts
      what the book judged, which the rest of the plan decides from.
    """

    strategy: UpdateStrategy | None
    notices: tuple[Notice, ...] = ()
    condition_writes: tuple[ConditionWrite, ...] = ()
    prepulls: tuple[PrepullStep, ...] = ()
    recheck: Recheck | None = None
    keep_notices: bool = False
    paused: bool | None = None
    pause_rollout: bool = False
    rollback: Rollback | None = None
    broken: Mapping[NodeName, Broken] = field(default_factory=dict)
    window_opens: datetime | None = None
    holds: Holds = NOTHING_HELD
    target: TargetRevision | None = None
    budget: MaxUnavailable | None = None
    rollout: DeletionPlan | None = None
    tally: Tally | None = field(default=None, compare=False)

    @property
    def ends_rollout(self) -> bool:
        """The DaemonSet is not (or no longer) ours: what was remembered of its rollout ends."""
        return self.strategy is None

    @property
    def deletions(self) -> tuple[Deletion, ...]:
        """The pods to delete now: an AdvancedRollingUpdate's, and OTA pods past their deadline."""
        return self.rollout.deletions if self.rollout is not None else ()


@dataclass(frozen=True, slots=True, kw_only=True)
class RolloutReading:
    """What both strategies' plans start from: the model in force, the newest revision, the
    DaemonSet's rollout spec (its progress deadline and failure budget readable), and the
    notices told so far (each strategy adds its own)."""

    strategy: UpdateStrategy
    target: TargetRevision
    spec: RolloutSpec
    notices: tuple[Notice, ...]
    progress_deadline: timedelta
    max_failed: Count | None
    window_opens: datetime | None
    """When the maintenance window, closed now, opens (None: open, or none)."""
    min_sample: MinSample | None = None

    on_failure: OnFailure = OnFailure.PAUSE
    rolled_back: RolledBack | None = None
    may_roll_back: bool = False
    """Whether the controller may roll this DaemonSet back (its namespace is switched on)."""

    def rollback_pending(self, snapshot: Snapshot) -> bool:
        """Whether a rollback was written and its echo has not come yet (see `rollback`)."""
        return rollback_pending(self.rolled_back, target=self.target, revisions=snapshot.revisions)

    def failure_stop(
        self,
        broken: Mapping[NodeName, Broken],
        snapshot: Snapshot,
        *,
        nodes: int,
        tried: int,
        pending: bool = False,
    ) -> FailureOutcome:
        """What the failure budget does when `broken` holds more nodes than it tolerates out of
        `nodes`, or of the `tried` ones with a sample: the Warning `RolloutFailed` and the pause,
        or a rollback (nothing: within it, no budget, paused already, or a rollback `pending`)."""
        account = failure_account(
            broken,
            limit=self.max_failed,
            paused=self.spec.staging.paused or pending,
            revision=self.target.hash,
            nodes=nodes,
            pause_changes=snapshot.pause_changes,
            sample=self.min_sample,
            tried=tried,
        )
        return on_failure(
            account,
            asked=self.on_failure,
            record=self.rolled_back,
            target=self.target,
            revisions=snapshot.revisions,
            namespace=snapshot.daemonset.namespace,
            allowed=self.may_roll_back,
        )

    def stopped(self, *unreadable: Notice, settings: ControllerSettings) -> Plan:
        """The plan that decides nothing because a value cannot be read (see `stopped_plan`)."""
        return stopped_plan(
            self.strategy,
            target=self.target,
            notices=(*self.notices, *unreadable),
            paused=self.spec.staging.paused,
            settings=settings,
        )


def stopped_plan(
    strategy: UpdateStrategy,
    *,
    target: TargetRevision,
    notices: tuple[Notice, ...],
    paused: bool,
    settings: ControllerSettings,
    budget: MaxUnavailable | None = None,
) -> Plan:
    """The plan of a rollout that decides nothing because a value cannot be read: its Warnings
    told, no deletion, no condition written; the controller waits for the DaemonSet to change
    rather than retry, and looks again only as after every plan. `budget`: the max-unavailable
    the rollout would run with, told to `status` when it can be read."""
    return Plan(
        strategy=strategy,
        notices=notices,
        recheck=Recheck.of(settings),
        paused=paused,
        target=target,
        budget=budget,
    )
