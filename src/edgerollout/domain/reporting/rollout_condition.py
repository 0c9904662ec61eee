"""The condition the controller keeps on each opted-in DaemonSet: where its rollout stands.

Tools that watch a cluster read conditions, not edgerollout's pods (design §9.2): Argo CD and Flux
health checks, `kubectl describe`, alerts. One condition says it:

    type: edgerollout.io/Progressing
    status: True | Unknown | False      (see `STATUS_OF`)
    reason: the phase (`RolloutPhase`): Complete, Rolling, WaitingForOfflineNodes, Held,
            MaintenanceWindowClosed, Paused, RolloutFailed, ProgressDeadlineExceeded,
            InvalidAnnotation
    message: "7 of 10 nodes updated, 1 offline, 1 broken, 0 held, 1 to go (generation 4)"
    lastTransitionTime: when the reason last changed

As a Deployment's `Progressing` condition, it is True while the rollout goes (or went) where it
should, Unknown while a person paused it, False when it needs someone: a failed revision or an
annotation that cannot be followed. The message ends with the DaemonSet's `metadata.generation`
the phase was read for, so that a reader can tell a condition written before the latest spec
change from one written after it (a DaemonSet condition has no `observedGeneration`).

When to write it (`condition_change`): at once when its status or reason changes, with a new
transition time; when only the counts change, at most every `interval` seconds, keeping the
transition time (a 10,000-node rollout would otherwise write its DaemonSet's status as often as
it deletes pods). A write whose echo the cache does not show yet is not sent again until it
expires, as for pod conditions. A DaemonSet that is no longer opted in loses the condition.
"""

from dataclasses import dataclass
from datetime import datetime

from edgerollout.domain.model import Condition, ConditionStatus
from edgerollout.domain.reporting.rollout_phase import RolloutCounts, RolloutPhase
from edgerollout.domain.timestamps import format_rfc3339
from edgerollout.domain.vocabulary import ROLLOUT_CONDITION

STATUS_OF = {
    RolloutPhase.COMPLETE: ConditionStatus.TRUE,
    RolloutPhase.ROLLING: ConditionStatus.TRUE,
    RolloutPhase.WAITING_FOR_OFFLINE_NODES: ConditionStatus.TRUE,
    RolloutPhase.HELD: ConditionStatus.TRUE,
    RolloutPhase.MAINTENANCE_WINDOW_CLOSED: ConditionStatus.TRUE,
    RolloutPhase.PAUSED: ConditionStatus.UNKNOWN,
    RolloutPhase.ROLLOUT_FAILED: ConditionStatus.FALSE,
    RolloutPhase.PROGRESS_DEADLINE_EXCEEDED: ConditionStatus.FALSE,
    RolloutPhase.INVALID_ANNOTATION: ConditionStatus.FALSE,
}


def rollout_condition(
    phase: RolloutPhase,
    *,
    counts: RolloutCounts | None,
    unfollowed: tuple[str, ...],
    generation: int,
) -> Condition:
    """The condition of a rollout in `phase` (no transition time: `condition_change` sets it).

    `counts`: its nodes' (None: not counted); `unfollowed`: the reasons of the annotations it
    cannot follow; `generation`: the DaemonSet's `metadata.generation` it was read for."""
    parts = []
    if unfollowed:
        parts.append("cannot follow " + ", ".join(unfollowed))
    parts.append("nodes not counted" if counts is None else counts.summary)
    return Condition(
        type=ROLLOUT_CONDITION,
        status=STATUS_OF[phase],
        reason=phase.value,
        message=f"{'; '.join(parts)} (generation {generation})",
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class SentCondition:
    """A rollout condition written (`condition` None: removed) at `at`, as the shell remembers
    it until the cache shows it."""

    condition: Condition | None
    at: datetime


@dataclass(frozen=True, slots=True, kw_only=True)
class ConditionChange:
    """What to do with a DaemonSet's rollout condition now: write `write` (None with `remove`
    False: nothing), remove it (`remove`), and look again after `wait` seconds to write counts
    held back by the interval (None: no need)."""

    write: Condition | None = None
    remove: bool = False
    wait: float | None = None


NO_CHANGE = ConditionChange()


def condition_change(
    wanted: Condition | None,
    *,
    shown: Condition | None,
    sent: SentCondition | None,
    now: datetime,
    interval: float,
    echo_timeout: float,
) -> ConditionChange:
    """Whether to write `wanted` (None: the DaemonSet is not opted in) over `shown`, the
    condition the cached DaemonSet carries, given what was `sent` last (see the docstring)."""
    echoing = sent is not None and (now - sent.at).total_seconds() < echo_timeout
    believed = sent.condition if echoing and sent is not None else shown
    if wanted is None:
        return NO_CHANGE if believed is None else ConditionChange(remove=True)
    if believed is not None and _same(wanted, believed):
        return NO_CHANGE
    if believed is None or (believed.status, believed.reason) != (wanted.status, wanted.reason):
        return ConditionChange(write=_since(wanted, format_rfc3339(now)))
    if sent is not None:
        waited = (now - sent.at).total_seconds()
        if waited < interval:
            return ConditionChange(wait=interval - waited)
    return ConditionChange(write=_since(wanted, believed.last_transition_time))


def _same(a: Condition, b: Condition) -> bool:
    return (a.type, a.status, a.reason, a.message) == (b.type, b.status, b.reason, b.message)


def _since(condition: Condition, moment: str | None) -> Condition:
    return Condition(
        type=condition.type,
        status=condition.status,
        reason=condition.reason,
        message=condition.message,
        last_transition_time=moment,
    )
