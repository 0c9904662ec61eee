"""Where a DaemonSet's rollout stands, node by node: what `edgerollout status` shows.

The status is computed from the same views and the same rules the controller decides with, so
that what a user reads is what the controller sees: `revisions.is_current` says whether a pod runs
the newest revision, `availability.is_available` whether it counts as available, and
and the controller's own plan (`reconcile.plan`) which model runs and with what budget.

Each pod of the DaemonSet gets one row and one state:

- `updated`: current revision, available.
- `upgrading`: current revision but not yet available, or an old pod terminating on a Ready node
  (its replacement is on the way).
- `terminating`: any other terminating pod (on a node that is not Ready it may stay so for long).
- `waiting: node NotReady`: an old pod of an AdvancedRollingUpdate on a node that is not Ready;
  the controller skips it until the node is back.
- `OTA: upgrade available`: an old pod of an OTA DaemonSet marked `PodNeedUpgrade=True`, with the
  state of an image pre-pull of the newest revision appended when the pod has one.
- `broken`: a current pod on a Ready node that is failing (crash-looping, unable to pull, not
  ready past its progress deadline, restarted after its start-up), with the reason:
  `broken: CrashLoopBackOff`. A pod on a node that is not Ready is never broken: it waits.
- `held`: an old pod on a node a staged rollout holds back (design §12), with the hold:
  `held: partition`, `held: wave pool-b`, `held: paused`, ...
- `old`: any other old pod (waiting for budget, or for the controller to mark it).

Which nodes are held, the wave and the pause come from `reconcile.plan` itself, run on the same
views with a fresh book: status says what the controller decides, not a second opinion.

The rollout is complete when the native controller has seen the latest spec, every pod is
current, available and not terminating, no node holds more than one pod, and at least as many
nodes hold a pod as the native controller wants (`status.desiredNumberScheduled`). Nodes that
should hold a pod but do not cannot be named from these views; they are only counted.

The rollout as a whole is counted node by node (`RolloutCounts`) and given its phase
(`rollout_phase`) from the same plan, as the controller reports them in the DaemonSet's condition:
what `edgerollout list` shows of each DaemonSet. The counts are of nodes where the rows are of
pods, and a node that is away counts as updated when its one pod is current, available or not:
the rollout has nothing left to do there.
"""

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from edgerollout.domain.events import Notice, shown
from edgerollout.domain.model import (
    ConditionStatus,
    DaemonSetView,
    NodeName,
    NodeReadiness,
    NodeView,
    PodView,
    RevisionView,
)
from edgerollout.domain.planning.availability import is_available
from edgerollout.domain.planning.conditions import revision_in_message
from edgerollout.domain.planning.decision import Plan, Snapshot
from edgerollout.domain.planning.holds import BatchProgress, WaveProgress
from edgerollout.domain.planning.reconcile import dry_plan
from edgerollout.domain.planning.revisions import TargetRevision, is_current, target_revision
from edgerollout.domain.planning.rollback import rollback_in_force
from edgerollout.domain.reporting.rollout_phase import (
    RolloutCounts,
    RolloutPhase,
    rollout_standing,
    unfollowed_annotations,
)
from edgerollout.domain.spec.on_failure import OnFailure, RollbackSwitch
from edgerollout.domain.spec.rollout_spec import read_rollout_spec
from edgerollout.domain.spec.strategy import UpdateStrategy
from edgerollout.domain.vocabulary import (
    BATCHES_ANNOTATION,
    MAINTENANCE_WINDOW_ANNOTATION,
    MAX_HOLD_ANNOTATION,
    MAX_PULLING_ANNOTATION,
    MAX_UNAVAILABLE_ANNOTATION,
    NODE_SELECTOR_ANNOTATION,
    PARTITION_ANNOTATION,
    POD_IMAGE_READY,
    POD_NEED_UPGRADE,
    PREPULL_WINDOW_ANNOTATION,
    PULL_IMAGE_FAIL,
    PULL_IMAGE_SUCCESS,
    WAIT_PULL_IMAGE,
    WAVES_ANNOTATION,
)


class PodState(StrEnum):
    """Where one pod stands in the rollout (see the module docstring)."""

    UPDATED = "updated"
    UPGRADING = "upgrading"
    TERMINATING = "terminating"
    WAITING_NODE_NOT_READY = "waiting: node NotReady"
    OTA_UPGRADE_AVAILABLE = "OTA: upgrade available"
    BROKEN = "broken"
    HELD = "held"
    OLD = "old"


class PrepullState(StrEnum):
    """The `PodImageReady` condition of a pod, when it speaks of the newest revision."""

    RUNNING = "pre-pull running"
    DONE = "pre-pull done"
    FAILED = "pre-pull failed"


@dataclass(frozen=True, slots=True, kw_only=True)
class StrategyStatus:
    """The update model in force, and for AdvancedRollingUpdate its budget.

    `max_unavailable` is the annotation as written (after defaulting; the raw value when invalid),
    `budget` the number of Ready nodes it allows unavailable (None when invalid).
    `not_managed_reasons` are the event reasons explaining why edgerollout leaves it alone.
    """

    strategy: UpdateStrategy | None
    max_unavailable: str | None = None
    budget: int | None = None
    base: int | None = None
    not_managed_reasons: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class NodeRow:
    """One pod of the DaemonSet on one node."""

    node: NodeName | None
    node_readiness: NodeReadiness | None
    pod: str
    revision: str | None
    current: bool
    state: PodState
    prepull: PrepullState | None = None
    hold: str | None = None
    broken: str | None = None

    @property
    def state_text(self) -> str:
        """The state as shown: `OTA: upgrade available, pre-pull done`, `held: partition`,
        `broken: CrashLoopBackOff`."""
        detail = self.hold if self.hold is not None else self.broken
        if detail is not None:
            return f"{self.state}: {detail}"
        if self.prepull is None:
            return str(self.state)
        return f"{self.state}, {self.prepull}"


@dataclass(frozen=True, slots=True, kw_only=True)
class RolloutStatus:
    """The whole picture: header facts, one row per pod, and the one-line summary.

    `paused`: the rollout is paused; `wave`: the wave it is at (None without waves), `batch`
    the batch (None without batches); `staging`:
    the staging annotations in force, as `partition 2`, `node selector canary=true`;
    `window_opens`: when the maintenance window, closed now, opens next; `counts`: the nodes
    counted by where they stand (None: not counted, the plan stopped before judging them); `phase`: where the rollout stands as a whole (None: not opted in);
    `unfollowed`: the Warning reasons of the annotations the controller cannot follow;
    `look_again_after`: seconds after which the status may change on the clock alone (a pod
    becomes available, a progress deadline passes, a maintenance window opens), as the
    controller's plan would look again; None: only a change of the objects changes it."""

    daemonset: str
    namespace: str
    strategy: StrategyStatus
    newest_revision: str | None
    complete: bool
    rows: tuple[NodeRow, ...]
    summary: str
    paused: bool = False
    wave: WaveProgress | None = None
    batch: BatchProgress | None = None
    staging: tuple[str, ...] = ()
    window_opens: datetime | None = None
    counts: RolloutCounts | None
    phase: RolloutPhase | None = None
    unfollowed: tuple[str, ...] = ()
    look_again_after: float | None = None
    rolled_back: str | None = None
    """The rollback that made the newest revision the newest, as its record says it (design
    §13.4.1; None: no rollback did)."""
    rollback_switch: RollbackSwitch | None = None
    """Whether the install lets the controller roll this DaemonSet back, as read (None: it does
    not ask for a rollback on failure)."""


def rollout_status(
    *,
    daemonset: DaemonSetView,
    revisions: Iterable[RevisionView],
    pods: Iterable[PodView],
    nodes: Iterable[NodeView],
    now: datetime,
    spec_observed: bool = True,
    rollback: RollbackSwitch = RollbackSwitch.OFF,
) -> RolloutStatus:
    """The rollout status of `daemonset` at `now`.

    `pods` are the pods it controls (terminating ones included), `nodes` at least the nodes they
    are on (absent ones are Missing). `spec_observed` is False while the native controller has not
    yet observed the DaemonSet's latest generation; `rollback` whether the install lets the
    controller roll it back (`dry_plan`).
    """
    pods = tuple(pods)
    nodes = tuple(nodes)
    revisions = tuple(revisions)
    readiness = {node.name: node.readiness for node in nodes}
    snapshot = Snapshot.of_views(
        daemonset=daemonset, revisions=revisions, pods=pods, nodes=nodes, now=now
    )
    decided = dry_plan(snapshot, rollback=rollback)
    strategy = _strategy_status(daemonset, decided)
    target = target_revision(annotations=daemonset.annotations, revisions=revisions)
    rows = [
        _row(pod, decided, daemonset=daemonset, readiness=readiness, target=target, now=now)
        for pod in sorted(pods, key=lambda p: (p.node_name is None, p.node_name or "", p.name))
    ]
    nodes_with_pods = len({row.node for row in rows if row.node is not None})
    total = max(nodes_with_pods, daemonset.desired_nodes or 0)
    complete = (
        spec_observed
        and all(row.state is PodState.UPDATED for row in rows)
        and nodes_with_pods == len(rows)
        and nodes_with_pods >= (daemonset.desired_nodes or 0)
    )
    counts, phase = rollout_standing(
        decided, daemonset=daemonset, spec_observed=spec_observed, nodes=snapshot.budget_base()
    )
    spec = read_rollout_spec(daemonset.annotations)
    record = spec.rolled_back
    in_force = rollback_in_force(None if isinstance(record, Notice) else record, target=target)
    return RolloutStatus(
        daemonset=daemonset.name,
        namespace=daemonset.namespace,
        strategy=strategy,
        newest_revision=target.hash,
        complete=complete,
        rows=tuple(rows),
        summary=_summary(
            daemonset.name,
            rows=rows,
            strategy=strategy.strategy,
            complete=complete,
            spec_observed=spec_observed,
            total=total,
            without_pod=total - nodes_with_pods,
            paused=bool(decided.paused),
        ),
        paused=bool(decided.paused),
        wave=decided.holds.wave,
        batch=decided.holds.batch,
        staging=_staging_in_force(daemonset),
        window_opens=decided.window_opens,
        counts=counts,
        phase=phase,
        unfollowed=unfollowed_annotations(decided.notices),
        look_again_after=None
        if decided.recheck is None
        else decided.recheck.after(deletions_in_flight=0, unechoed_seconds=None),
        rolled_back=None if in_force is None else in_force.annotation(),
        rollback_switch=rollback if spec.on_failure is OnFailure.ROLLBACK else None,
    )


def _row(
    pod: PodView,
    decided: Plan,
    *,
    daemonset: DaemonSetView,
    readiness: Mapping[NodeName, NodeReadiness],
    target: TargetRevision,
    now: datetime,
) -> NodeRow:
    """The row of one pod: its state, as the controller's plan `decided` sees its node."""
    node = pod.node_name
    node_readiness = None if node is None else readiness.get(node, NodeReadiness.MISSING)
    current = is_current(pod, target)
    state = _pod_state(
        pod,
        current=current,
        node_readiness=node_readiness,
        strategy=decided.strategy,
        available=is_available(pod, min_ready_seconds=daemonset.min_ready_seconds, now=now),
    )
    hold = decided.holds.held.get(node) if node is not None else None
    if hold is not None and state in (PodState.OLD, PodState.OTA_UPGRADE_AVAILABLE):
        state = PodState.HELD
    failing = decided.broken.get(node) if node is not None and current else None
    if failing is not None and not pod.deleting:
        state = PodState.BROKEN
    prepull = _prepull_state(pod, target.hash) if state is PodState.OTA_UPGRADE_AVAILABLE else None
    return NodeRow(
        node=node,
        node_readiness=node_readiness,
        pod=pod.name,
        revision=pod.revision_hash,
        current=current,
        state=state,
        prepull=prepull,
        hold=str(hold) if state is PodState.HELD else None,
        broken=failing.reason if state is PodState.BROKEN and failing else None,
    )


def _shown(value: str | None) -> str | None:
    return None if value is None else shown(value)


def _staging_in_force(daemonset: DaemonSetView) -> tuple[str, ...]:
    """The staging annotations as set, in the order of design §12."""
    annotations = daemonset.annotations
    return tuple(
        f"{label} {shown(annotations[key].strip())}"
        for key, label in _STAGING_LABELS
        if key in annotations
    )


_STAGING_LABELS = (
    (NODE_SELECTOR_ANNOTATION, "node selector"),
    (PARTITION_ANNOTATION, "partition"),
    (WAVES_ANNOTATION, "waves"),
    (BATCHES_ANNOTATION, "batches"),
    (MAINTENANCE_WINDOW_ANNOTATION, "maintenance window"),
    (PREPULL_WINDOW_ANNOTATION, "download window"),
    (MAX_PULLING_ANNOTATION, "max pulling"),
    (MAX_HOLD_ANNOTATION, "max hold"),
)


def _strategy_status(daemonset: DaemonSetView, decided: Plan) -> StrategyStatus:
    """The model in force and its budget, as the controller's plan `decided` has them."""
    if decided.strategy is None:
        return StrategyStatus(
            strategy=None,
            not_managed_reasons=tuple(notice.reason for notice in decided.notices),
        )
    if decided.strategy is UpdateStrategy.OTA:
        return StrategyStatus(strategy=decided.strategy)
    budget = decided.budget
    if budget is None:  # the annotation cannot be read: shown as written
        return StrategyStatus(
            strategy=decided.strategy,
            max_unavailable=_shown(daemonset.annotations.get(MAX_UNAVAILABLE_ANNOTATION)),
        )
    return StrategyStatus(
        strategy=decided.strategy,
        max_unavailable=budget.written,
        budget=budget.value,
        base=budget.base,
    )


def _pod_state(
    pod: PodView,
    *,
    current: bool,
    node_readiness: NodeReadiness | None,
    strategy: UpdateStrategy | None,
    available: bool,
) -> PodState:
    node_ready = node_readiness is NodeReadiness.READY
    if pod.deleting:
        return PodState.UPGRADING if node_ready and not current else PodState.TERMINATING
    if current:
        return PodState.UPDATED if available else PodState.UPGRADING
    if strategy is UpdateStrategy.ADVANCED_ROLLING_UPDATE and not node_ready:
        return PodState.WAITING_NODE_NOT_READY
    if strategy is UpdateStrategy.OTA and _needs_upgrade(pod):
        return PodState.OTA_UPGRADE_AVAILABLE
    return PodState.OLD


def _needs_upgrade(pod: PodView) -> bool:
    condition = pod.conditions.get(POD_NEED_UPGRADE)
    return condition is not None and condition.status is ConditionStatus.TRUE


_PREPULL_BY_CONDITION = {
    (ConditionStatus.FALSE, WAIT_PULL_IMAGE): PrepullState.RUNNING,
    (ConditionStatus.TRUE, PULL_IMAGE_SUCCESS): PrepullState.DONE,
    (ConditionStatus.FALSE, PULL_IMAGE_FAIL): PrepullState.FAILED,
}


def _prepull_state(pod: PodView, newest: str | None) -> PrepullState | None:
    condition = pod.conditions.get(POD_IMAGE_READY)
    if condition is None or newest is None or revision_in_message(condition.message) != newest:
        return None
    return _PREPULL_BY_CONDITION.get((condition.status, condition.reason))


def _summary(
    name: str,
    *,
    rows: list[NodeRow],
    strategy: UpdateStrategy | None,
    complete: bool,
    spec_observed: bool,
    total: int,
    without_pod: int,
    paused: bool,
) -> str:
    if complete:
        return f'daemon set "{name}" successfully rolled out'
    if not spec_observed:
        return "Waiting for daemon set spec update to be observed..."
    prefix = "Paused: " if paused else ""
    return prefix + _progress(
        name, rows=rows, strategy=strategy, total=total, without_pod=without_pod
    )


def _progress(
    name: str,
    *,
    rows: list[NodeRow],
    strategy: UpdateStrategy | None,
    total: int,
    without_pod: int,
) -> str:
    extras = []
    waiting = sum(row.state is PodState.WAITING_NODE_NOT_READY for row in rows)
    if waiting:
        extras.append(f"{waiting} waiting for NotReady nodes")
    held = sum(row.state is PodState.HELD for row in rows)
    if held:
        extras.append(f"{held} held")
    broken = sum(row.state is PodState.BROKEN for row in rows)
    if broken:
        extras.append(f"{broken} broken")
    if without_pod > 0:
        extras.append(f"{without_pod} {_nodes(without_pod)} without a pod")
    if strategy is UpdateStrategy.OTA:
        current = sum(row.current and row.state is not PodState.TERMINATING for row in rows)
        offered = sum(row.state is PodState.OTA_UPGRADE_AVAILABLE for row in rows)
        text = (
            f"{current} of {total} pods run the newest revision; "
            f"{offered} {_nodes(offered)} {'has' if offered == 1 else 'have'} "
            "an upgrade available"
        )
        return text + (f" ({', '.join(extras)})" if extras else "")
    updated = sum(row.state is PodState.UPDATED for row in rows)
    detail = f" ({', '.join(extras)})" if extras else ""
    return (
        f'Waiting for daemon set "{name}" rollout to finish: '
        f"{updated} of {total} updated pods are available{detail}..."
    )


def _nodes(count: int) -> str:
    return "node" if count == 1 else "nodes"
