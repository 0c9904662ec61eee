"""Where a DaemonSet's rollout stands as a whole, in one word: the STATE of `edgerollout list`.

`status` shows a rollout node by node; an operator with forty opted-in DaemonSets wants one word
each, and the tools that watch a cluster (Argo CD, Flux, alerts) want one reason. The phase is that
word, read from what `status` already computes (`rollout_status`): the controller's own plan for
the DaemonSet and the counts of its pods' states. Each value is the reason a DaemonSet condition
gives (`Complete`, `Rolling`, ...); `RolloutPhase.text` is what `list` shows.

Several can hold at once (a paused rollout may wait for offline nodes too); the first that holds
is the phase, in the order a user must act on them (design §9.1):

| phase                      | when                                                               |
|----------------------------|--------------------------------------------------------------------|
| `InvalidAnnotation`        | the plan warns of a rollout annotation it cannot follow (an        |
|                            | unknown strategy, a strategy without `OnDelete`, a value it cannot |
|                            | read or too long to): nothing, or nothing more, is done until it   |
|                            | is fixed, the failure budget included                              |
| `RolloutFailed`            | more Ready nodes are broken than `edgerollout.io/max-failed`       |
|                            | tolerates, whether or not the pause it calls for is written yet    |
| `ProgressDeadlineExceeded` | a Ready node's pod of the newest revision is broken (failing, or   |
|                            | not ready past its progress deadline; design §13.1), within the    |
|                            | failure budget or without one                                      |
| `Paused`                   | `edgerollout.io/paused` holds the rollout, complete or not: the    |
|                            | next revision waits for a resume                                   |
| `Complete`                 | the native controller has seen the latest spec and every node runs |
|                            | the newest revision: available on a Ready node, its one pod on a   |
|                            | node that is away                                                  |
| `MaintenanceWindowClosed`  | an AdvancedRollingUpdate outside its maintenance windows (an OTA   |
|                            | node upgrades itself whatever the window)                          |
| `Held`                     | every node not updated is offline or held by the staging until     |
|                            | someone changes it (a node selector, a partition, no wave), and at |
|                            | least one is held: the rollout has gone as far as it is let        |
| `WaitingForOfflineNodes`   | every node not updated is a node that is not Ready: the rollout is |
|                            | done but for nodes that are away                                   |
| `Rolling`                  | anything else: pods to replace, starting, a wave's or a pull's     |
|                            | turn to come, nodes without a pod yet                              |

The counts (`RolloutCounts`) are of nodes, from the plan's own judgement of them (`Plan.tally`),
so that the controller reports them after every plan for what the plan cost, and `status`,
`list` and the DaemonSet's condition read the same numbers.

A broken node outranks the pause because pausing does not mend the revision; a rollout complete
is not shown waiting for a window, since a closed window then holds nothing back. A DaemonSet
that is not opted in (no update-strategy annotation) has no phase.
"""

from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum

from edgerollout.domain.events import EventType, Notice
from edgerollout.domain.model import DaemonSetView
from edgerollout.domain.planning.decision import Plan
from edgerollout.domain.planning.failure_stop import failure_stop
from edgerollout.domain.planning.rollout_book import Tally
from edgerollout.domain.planning.verdicts import NodeVerdict
from edgerollout.domain.spec.count import Count
from edgerollout.domain.spec.max_failed import MinSample
from edgerollout.domain.spec.rollout_spec import read_rollout_spec
from edgerollout.domain.spec.strategy import UpdateStrategy
from edgerollout.domain.vocabulary import (
    ANNOTATION_TOO_LONG,
    INVALID_BATCHES,
    INVALID_MAINTENANCE_WINDOW,
    INVALID_MAX_FAILED,
    INVALID_MAX_HOLD,
    INVALID_MAX_PULLING,
    INVALID_MAX_UNAVAILABLE,
    INVALID_MIN_SAMPLE,
    INVALID_NODE_SELECTOR,
    INVALID_ON_FAILURE,
    INVALID_OTA_DEADLINE,
    INVALID_PARTITION,
    INVALID_PAUSED,
    INVALID_PREPULL,
    INVALID_PREPULL_WINDOW,
    INVALID_PROGRESS_DEADLINE,
    INVALID_ROLLED_BACK,
    INVALID_WAVES,
    UNKNOWN_UPDATE_STRATEGY,
    UPDATE_STRATEGY_NOT_ON_DELETE,
)


class RolloutPhase(StrEnum):
    """Where a rollout stands (see the table in the module docstring); the value is the reason
    of the DaemonSet condition, `text` the word `list` shows."""

    INVALID_ANNOTATION = "InvalidAnnotation"
    ROLLOUT_FAILED = "RolloutFailed"
    PROGRESS_DEADLINE_EXCEEDED = "ProgressDeadlineExceeded"
    PAUSED = "Paused"
    COMPLETE = "Complete"
    MAINTENANCE_WINDOW_CLOSED = "MaintenanceWindowClosed"
    HELD = "Held"
    WAITING_FOR_OFFLINE_NODES = "WaitingForOfflineNodes"
    ROLLING = "Rolling"

    @property
    def text(self) -> str:
        """`complete`, `waiting for offline nodes`, `window closed`, ..."""
        return _TEXT[self]


_TEXT = {
    RolloutPhase.INVALID_ANNOTATION: "invalid annotation",
    RolloutPhase.ROLLOUT_FAILED: "failed",
    RolloutPhase.PROGRESS_DEADLINE_EXCEEDED: "progress deadline exceeded",
    RolloutPhase.PAUSED: "paused",
    RolloutPhase.COMPLETE: "complete",
    RolloutPhase.MAINTENANCE_WINDOW_CLOSED: "window closed",
    RolloutPhase.HELD: "held",
    RolloutPhase.WAITING_FOR_OFFLINE_NODES: "waiting for offline nodes",
    RolloutPhase.ROLLING: "rolling",
}

# The Warnings a plan gives for a rollout annotation it cannot follow.
UNFOLLOWED_ANNOTATION_REASONS = frozenset(
    {
        UNKNOWN_UPDATE_STRATEGY,
        UPDATE_STRATEGY_NOT_ON_DELETE,
        ANNOTATION_TOO_LONG,
        INVALID_MAX_UNAVAILABLE,
        INVALID_PAUSED,
        INVALID_PARTITION,
        INVALID_NODE_SELECTOR,
        INVALID_WAVES,
        INVALID_BATCHES,
        INVALID_MAINTENANCE_WINDOW,
        INVALID_OTA_DEADLINE,
        INVALID_PROGRESS_DEADLINE,
        INVALID_MAX_FAILED,
        INVALID_MIN_SAMPLE,
        INVALID_ON_FAILURE,
        INVALID_ROLLED_BACK,
        INVALID_PREPULL,
        INVALID_PREPULL_WINDOW,
        INVALID_MAX_PULLING,
        INVALID_MAX_HOLD,
    }
)


@dataclass(frozen=True, slots=True, kw_only=True)
class RolloutCounts:
    """How many of a rollout's nodes stand where (`rollout_counts`); each node counts once.

    - `total`: the nodes the rollout covers: those holding a pod of the DaemonSet or having one
      replaced, and at least the native controller's `desiredNumberScheduled`;
    - `updated`: Ready nodes whose one pod is current and available, and nodes not Ready whose
      one live pod is current;
    - `offline`: the other nodes that are not Ready;
    - `broken`: Ready nodes whose current pod is failing;
    - `held`: Ready nodes holding an old pod that a staged rollout holds back, and
      `held_staged` those of them held until the staging changes (`Tally.held_staged`);
    - `remaining`: every other node: an old pod to replace, being replaced, starting, and each
      node that should hold a pod and holds none.
    """

    total: int = 0
    updated: int = 0
    offline: int = 0
    broken: int = 0
    held: int = 0
    held_staged: int = 0
    remaining: int = 0

    def by_state(self) -> dict[str, int]:
        """`total` and each count, by the name metrics give it."""
        return {
            "total": self.total,
            "updated": self.updated,
            "offline": self.offline,
            "broken": self.broken,
            "held": self.held,
            "remaining": self.remaining,
        }

    @property
    def summary(self) -> str:
        """`7 of 10 nodes updated, 1 offline, 1 broken, 0 held, 1 to go`."""
        return (
            f"{self.updated} of {self.total} nodes updated, {self.offline} offline, "
            f"{self.broken} broken, {self.held} held, {self.remaining} to go"
        )


def rollout_counts(tally: Tally | None, *, desired_nodes: int | None) -> RolloutCounts | None:
    """The counts of a plan's `tally` (`Plan.tally`); None when the plan stopped before judging
    the nodes (a DaemonSet not ours, or whose rollout annotations it cannot follow)."""
    if tally is None:
        return None
    desired = desired_nodes or 0
    verdicts = tally.verdicts
    total = max(sum(verdicts.values()) + tally.not_ready, desired)
    updated = verdicts.get(NodeVerdict.UP_TO_DATE, 0) + tally.not_ready_current
    offline = tally.not_ready - tally.not_ready_current
    broken = verdicts.get(NodeVerdict.BROKEN, 0)
    return RolloutCounts(
        total=total,
        updated=updated,
        offline=offline,
        broken=broken,
        held=tally.held,
        held_staged=tally.held_staged,
        remaining=total - updated - offline - broken - tally.held,
    )


def unfollowed_annotations(notices: Iterable[Notice]) -> tuple[str, ...]:
    """The reasons of the Warnings among `notices` about an annotation the plan cannot follow,
    each once, in their order."""
    reasons = (
        notice.reason
        for notice in notices
        if notice.type is EventType.WARNING and notice.reason in UNFOLLOWED_ANNOTATION_REASONS
    )
    return tuple(dict.fromkeys(reasons))


def rollout_standing(
    decided: Plan, *, daemonset: DaemonSetView, spec_observed: bool, nodes: int
) -> tuple[RolloutCounts | None, RolloutPhase | None]:
    """The counts and the phase of `daemonset`'s rollout after the plan `decided` (taken over
    `nodes`, `Snapshot.budget_base`): the one reading `status`, `list`, the controller's
    condition and its metrics share."""
    counts = rollout_counts(decided.tally, desired_nodes=daemonset.desired_nodes)
    spec = read_rollout_spec(daemonset.annotations)
    phase = rollout_phase(
        decided=decided,
        counts=counts,
        spec_observed=spec_observed,
        max_failed=spec.max_failed,
        min_sample=spec.min_sample,
        nodes=nodes,
    )
    return counts, phase


def rollout_phase(
    *,
    decided: Plan,
    counts: RolloutCounts | None,
    spec_observed: bool,
    max_failed: Count | Notice | None,
    nodes: int,
    min_sample: MinSample | Notice | None = None,
) -> RolloutPhase | None:
    """The phase of the rollout the controller's plan `decided` is for (None: not opted in).

    `counts` are the plan's (`rollout_counts`: None only where the plan stopped before judging
    the nodes, for an annotation it cannot follow); `spec_observed`: the native controller has seen
    the DaemonSet's latest generation; `max_failed` is the failure budget the DaemonSet's spec
    reads (`RolloutSpec.max_failed`), taken over `nodes` (`Snapshot.budget_base`), or judged on
    a sample (`RolloutSpec.min_sample`) of the nodes that tried the newest revision.
    """
    if unfollowed_annotations(decided.notices):
        return RolloutPhase.INVALID_ANNOTATION
    if decided.strategy is None:
        return None
    if _failed(decided, max_failed=max_failed, nodes=nodes, min_sample=min_sample):
        return RolloutPhase.ROLLOUT_FAILED
    if counts is None:
        return RolloutPhase.ROLLING
    if counts.broken:
        return RolloutPhase.PROGRESS_DEADLINE_EXCEEDED
    if decided.paused:
        return RolloutPhase.PAUSED
    if spec_observed and counts.updated == counts.total:
        return RolloutPhase.COMPLETE
    if (
        decided.strategy is UpdateStrategy.ADVANCED_ROLLING_UPDATE
        and decided.window_opens is not None
    ):
        return RolloutPhase.MAINTENANCE_WINDOW_CLOSED
    if counts.remaining:
        return RolloutPhase.ROLLING
    if counts.held and counts.held_staged == counts.held:
        return RolloutPhase.HELD
    if counts.offline and not counts.held:
        return RolloutPhase.WAITING_FOR_OFFLINE_NODES
    return RolloutPhase.ROLLING


def _failed(
    decided: Plan,
    *,
    max_failed: Count | Notice | None,
    nodes: int,
    min_sample: MinSample | Notice | None,
) -> bool:
    """Whether more nodes are broken than the failure budget tolerates: the rule that stops a
    rollout (`failure_stop`), asked as if it were not paused, since the pause it calls for is
    what a failed rollout looks like once written."""
    if not isinstance(max_failed, Count) or decided.target is None:
        return False
    stop = failure_stop(
        decided.broken,
        limit=max_failed,
        nodes=nodes,
        revision=decided.target.hash,
        pause_changes=0,
        sample=min_sample if isinstance(min_sample, MinSample) else None,
        tried=0 if decided.tally is None else decided.tally.tried,
    )
    return stop is not None
