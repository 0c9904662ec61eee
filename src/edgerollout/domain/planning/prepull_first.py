"""Pre-pull before delete (design §13.5): an AdvancedRollingUpdate deletes a pod once its node has
the new images.

On a slow link a node's downtime in a rollout is the download: its pod is deleted, and the
replacement pulls its images before it starts. With `edgerollout.io/prepull: "true"` the controller
asks for the newest revision's images on the nodes it upgrades next, through the pre-pull Jobs of
design §6 — it writes the request itself (`PodImageReady=False`, reason `WaitPullImage`, naming the
revision), as a node's agent does for OTA — and deletes a pod only once its images are there. A
node's downtime becomes its container's start.

A Ready node whose one live pod is outdated stands, by that pod's `PodImageReady`:

| `PodImageReady` naming the newest revision        | state           | the pod                      |
|---------------------------------------------------|-----------------|------------------------------|
| none, or naming another revision                  | `NOT_REQUESTED` | held; asked for in its turn  |
| False, `WaitPullImage`, asked for < fallback ago  | `PULLING`       | held; its Job pulls          |
| True                                              | `READY`         | deleted as without pre-pull  |
| False, `PullImageFail`; or `WaitPullImage` asked for at least the fallback ago, or at no time | `FALLBACK` | deleted as without pre-pull, with a Warning `PrepullFailed` |

The fallback is the pull Job's own deadline plus a margin (`PrepullSettings`): a pull that failed
or never finished must not stop a rollout; it costs the download, as without pre-pull. A held node
keeps its verdict and its share of the budget (`staging`); the budget goes to the nodes whose
images are there. Every deletion is gated, an outdated pod that is not available too: its
replacement would spend the download starting, which the pull spends instead.

Requests go, in the rollout's order, to every outdated pod that is not available (it is replaced
without budget, so its pull is not held back) and to the first available outdated pods, while
fewer than the window (`window_per_budget` times max-unavailable) of those hold a request or a result
for the newest revision; a pod the budget deletes in this very plan still counts, so that the
window holds also while the deletion's echo is on its way. A node held for another reason is
neither asked nor counted, except while a maintenance window is closed: pulling before a window
opens is how a short window is best used. The window is counted from the cache: a request whose
echo has not come back yet is asked for again, unsent (the shell remembers it), in the same order,
so only a node that joins the front of the order meanwhile can add one more.

A download window (`edgerollout.io/prepull-window`, read by `spec.prepull`) says when images may
be downloaded, apart from when pods may be deleted: while it is open, every outdated pod of a
Ready node is asked for in the rollout's order — also the nodes a later wave or batch, or the
node itself, holds: their turn comes in this rollout — as long as fewer than
`edgerollout.io/max-pulling` nodes (10 % by default) are pulling; while it is closed, none is,
and a node whose images were not asked for waits for it to open (a pull asked for before runs
on to its result or its fallback). Without a window, max-pulling, when set, bounds the pulls
ahead of the budget too.

A request's time is the condition's `lastTransitionTime`, written as the time of the request even
where the status stays False (a pod that asked for an older revision): it is a new request, and
the fallback counts from it. A value other than `"true"` or `"false"` holds every node, with a
Warning `InvalidPrepull`, as a staging value that cannot be read does (design §12.5). Turning
pre-pull off leaves a running Job to finish on its own; it goes with its pod. OTA ignores the
annotation: there the node asks for its images, through its agent.
"""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from enum import Enum

from edgerollout.domain.events import EventType, Notice
from edgerollout.domain.model import (
    ConditionStatus,
    InFlight,
    NodeName,
    NodeReadiness,
    PodView,
)
from edgerollout.domain.planning.conditions import (
    ConditionWrite,
    plan_image_ready,
    revision_in_message,
)
from edgerollout.domain.planning.holds import HoldReason
from edgerollout.domain.planning.prepull import JobView, PrepullStep, PullTemplate, plan_prepulls
from edgerollout.domain.planning.revisions import TargetRevision, is_current
from edgerollout.domain.planning.verdicts import DeletionPlan, NodeVerdict
from edgerollout.domain.spec.count import Rounding
from edgerollout.domain.spec.maintenance_window import MaintenanceWindows
from edgerollout.domain.spec.prepull import Prepull
from edgerollout.domain.spec.staging import Staging
from edgerollout.domain.timestamps import format_rfc3339, parse_rfc3339
from edgerollout.domain.vocabulary import (
    POD_IMAGE_READY,
    PREPULL_FAILED,
    PULL_IMAGE_FAIL,
    WAIT_PULL_IMAGE,
)
from edgerollout.settings import PrepullSettings

# The holds under which a node's images are still asked for (see the module docstring); with a
# download window, also those of the nodes whose turn comes later in this rollout.
_MAY_PULL = frozenset({HoldReason.PULLING, HoldReason.WINDOW})
_MAY_PULL_IN_WINDOW = _MAY_PULL | {HoldReason.WAVE, HoldReason.BATCH, HoldReason.NODE_ASKED}
_WAITING_FOR_A_POD = frozenset({NodeVerdict.OUTDATED, NodeVerdict.OUTDATED_UNAVAILABLE})


class PullState(Enum):
    """Where a node's pre-pull of the newest revision stands (see the module docstring)."""

    NOT_REQUESTED = "not requested"
    PULLING = "pulling"
    READY = "image ready"
    FALLBACK = "deleted without its image"


@dataclass(frozen=True, slots=True, kw_only=True)
class NodePull:
    """The outdated pod of a Ready node, and its pre-pull: `requested` when PULLING, `why` the
    pod goes without its image when FALLBACK."""

    pod: PodView
    state: PullState
    requested: datetime | None = None
    why: str = ""

    @property
    def holds(self) -> bool:
        """Whether the pod must wait for its pull."""
        return self.state in (PullState.NOT_REQUESTED, PullState.PULLING)


@dataclass(frozen=True, slots=True, kw_only=True)
class PrepullSteps:
    """What pre-pull before delete adds to a plan: the requests to write, the pull Jobs to start,
    report and delete, the Warnings, and the seconds until the next request passes its fallback
    (None: none is pulling)."""

    requests: tuple[ConditionWrite, ...] = ()
    prepulls: tuple[PrepullStep, ...] = ()
    notices: tuple[Notice, ...] = ()
    recheck_seconds: float | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class PrepullFirst:
    """A DaemonSet's pre-pull before delete at one instant: off (`enabled` False), refused
    (`invalid`, the Warning), or the pulls of its Ready nodes' outdated pods; with a download
    `window`, `window_opens` when it opens (None: open now); `limit` the most nodes pulling at
    once (None: no limit of its own)."""

    enabled: bool = False
    invalid: Notice | None = None
    revision: str | None = None
    pulls: Mapping[NodeName, NodePull] = field(default_factory=dict)
    settings: PrepullSettings = field(default_factory=PrepullSettings)
    window: MaintenanceWindows | None = None
    window_opens: datetime | None = None
    limit: int | None = None

    def gate(self, staging: Staging) -> Staging:
        """`staging` holding the nodes that wait for their pull (every node, when invalid); with
        the download window closed, those not asked for yet wait for it to open."""
        if self.invalid is not None:
            return replace(staging, invalid=True)
        waiting = frozenset(node for node, pull in self.pulls.items() if pull.holds)
        if not waiting:
            return staging
        if self.window_opens is None:
            return replace(staging, pulling=waiting)
        unasked = frozenset(
            node for node in waiting if self.pulls[node].state is PullState.NOT_REQUESTED
        )
        return replace(staging, pulling=waiting, pull_window=unasked, pull_opens=self.window_opens)

    def steps(
        self,
        rollout: DeletionPlan,
        *,
        jobs: Mapping[str, JobView],
        template: PullTemplate | None,
        now: datetime,
    ) -> PrepullSteps:
        """The requests, pull Jobs, Warnings and recheck that go with `rollout`, the plan made
        at `now` with `gate`'s staging."""
        if self.invalid is not None:
            return PrepullSteps(notices=(self.invalid,))
        if not self.enabled or self.revision is None:
            return PrepullSteps()
        pulling = [pull for pull in self.pulls.values() if pull.state is PullState.PULLING]
        prepulls: tuple[PrepullStep, ...] = ()
        if template is not None:
            prepulls = plan_prepulls(
                pods=[pull.pod for pull in pulling],
                newest=self.revision,
                jobs=jobs,
                template=template,
                settings=self.settings,
                now=now,
            )
        due = fallback_after(self.settings)
        waits = [(pull.requested + due - now).total_seconds() for pull in pulling if pull.requested]
        if self.window_opens is not None and any(
            pull.state is PullState.NOT_REQUESTED for pull in self.pulls.values()
        ):
            # No event says that the download window opens.
            waits.append((self.window_opens - now).total_seconds())
        recheck = min(waits, default=None)
        return PrepullSteps(
            requests=self._requests(rollout, self.revision, now),
            prepulls=prepulls,
            notices=self._fallback_notices(rollout),
            recheck_seconds=None if recheck is None else max(recheck, 0.0),
        )

    def _requests(
        self, rollout: DeletionPlan, revision: str, now: datetime
    ) -> tuple[ConditionWrite, ...]:
        if self.window_opens is not None:
            return ()
        held, verdicts = rollout.holds.held, rollout.verdicts
        may_pull = _MAY_PULL if self.window is None else _MAY_PULL_IN_WINDOW
        ahead = pulling = 0
        unavailable: list[NodeName] = []
        available: list[NodeName] = []
        for node, pull in self.pulls.items():
            pulling += pull.state is PullState.PULLING
            verdict = verdicts.get(node)
            hold = held.get(node)
            if verdict not in _WAITING_FOR_A_POD or (
                hold is not None and hold.reason not in may_pull
            ):
                continue
            if pull.state is not PullState.NOT_REQUESTED:
                ahead += verdict is NodeVerdict.OUTDATED
            elif verdict is NodeVerdict.OUTDATED_UNAVAILABLE:
                unavailable.append(node)
            else:
                available.append(node)
        order = rollout.holds.order
        chosen = (
            sorted(unavailable, key=order)
            + sorted(available, key=order)[: self._room(rollout, ahead)]
        )
        if self.limit is not None:
            chosen = chosen[: max(0, self.limit - pulling)]
        return tuple(
            write
            for node in chosen
            if (write := _request(self.pulls[node].pod, revision, now)) is not None
        )

    def _room(self, rollout: DeletionPlan, ahead: int) -> int | None:
        """How many more available outdated pods may be asked for (None: every one): with a
        download window, all of them (`limit` bounds them); without, enough that the window
        ahead of the budget holds."""
        if self.window is not None:
            return None
        return max(0, self.settings.window_per_budget * rollout.max_unavailable - ahead)

    def _fallback_notices(self, rollout: DeletionPlan) -> tuple[Notice, ...]:
        notices = []
        for deletion in rollout.deletions:
            pull = self.pulls.get(deletion.node_name)
            if pull is None or pull.state is not PullState.FALLBACK or pull.pod.uid != deletion.uid:
                continue
            notices.append(
                Notice(
                    type=EventType.WARNING,
                    reason=PREPULL_FAILED,
                    message=(
                        f"Deleting pod {deletion.name} on node {deletion.node_name} before its "
                        f"new images are there: {pull.why}; its replacement pulls them after "
                        "the deletion, as without pre-pull"
                    ),
                    subject=deletion.uid,
                )
            )
        return tuple(notices)


PREPULL_OFF = PrepullFirst()


def fallback_after(settings: PrepullSettings) -> timedelta:
    """How long a request may go without a result before its pod is deleted without its images."""
    return timedelta(seconds=settings.deadline_seconds + settings.fallback_margin_seconds)


def prepull_first(
    wanted: Prepull | Notice | None,
    *,
    nodes: int,
    target: TargetRevision,
    pods_by_node: Mapping[NodeName, Sequence[PodView]],
    readiness: Mapping[NodeName, NodeReadiness],
    in_flight: InFlight,
    now: datetime,
    settings: PrepullSettings,
) -> PrepullFirst:
    """Pre-pull before delete as `wanted` (`read_prepull`) says, over a rollout of `nodes`
    nodes, and the pull of every Ready node's outdated pod (a node with more than one live pod,
    or none, deletes nothing).

    Reads every node holding a pod when on (not only the nodes that changed): a pull's fallback
    passes on the clock alone, and the window counts over all of them."""
    if isinstance(wanted, Notice):
        return PrepullFirst(invalid=wanted)
    if wanted is None:
        return PREPULL_OFF
    fallback = fallback_after(settings)
    being_deleted = in_flight.by_uid
    pulls: dict[NodeName, NodePull] = {}
    for node, pods in pods_by_node.items():
        if readiness.get(node, NodeReadiness.MISSING) is not NodeReadiness.READY:
            continue
        live = [pod for pod in pods if not pod.deleting and pod.uid not in being_deleted]
        if len(live) == 1 and not is_current(live[0], target):
            pulls[node] = judge_pull(live[0], revision=target.hash, now=now, fallback=fallback)
    window = wanted.window
    limit = wanted.max_pulling
    return PrepullFirst(
        enabled=True,
        revision=target.hash,
        pulls=pulls,
        settings=settings,
        window=window,
        window_opens=None if window is None or window.is_open(now) else window.next_open(now),
        limit=None if limit is None else max(1, limit.of(nodes, rounding=Rounding.UP)),
    )


def judge_pull(
    pod: PodView, *, revision: str | None, now: datetime, fallback: timedelta
) -> NodePull:
    """Where the pre-pull of `revision` for an outdated `pod` stands (see the module docstring).

    Without a revision hash (only the template generation known yet) nothing can be asked for:
    the pod waits, as a new ControllerRevision reaches the cache within moments."""
    condition = pod.conditions.get(POD_IMAGE_READY)
    if revision is None or condition is None or revision_in_message(condition.message) != revision:
        return NodePull(pod=pod, state=PullState.NOT_REQUESTED)
    if condition.status is ConditionStatus.TRUE:
        return NodePull(pod=pod, state=PullState.READY)
    if condition.status is not ConditionStatus.FALSE:
        return NodePull(pod=pod, state=PullState.NOT_REQUESTED)
    if condition.reason == PULL_IMAGE_FAIL:
        return NodePull(
            pod=pod, state=PullState.FALLBACK, why=f"its pre-pull failed ({PULL_IMAGE_FAIL})"
        )
    if condition.reason != WAIT_PULL_IMAGE:
        return NodePull(pod=pod, state=PullState.NOT_REQUESTED)
    requested = _time(condition.last_transition_time)
    if requested is None:
        return NodePull(pod=pod, state=PullState.FALLBACK, why="its pre-pull request has no time")
    waited = now - requested
    if waited >= fallback:
        return NodePull(
            pod=pod,
            state=PullState.FALLBACK,
            why=(
                f"its pre-pull has no result {int(waited.total_seconds())} s after it was "
                f"requested (the fallback is {int(fallback.total_seconds())} s)"
            ),
        )
    return NodePull(pod=pod, state=PullState.PULLING, requested=requested)


def _request(pod: PodView, revision: str, now: datetime) -> ConditionWrite | None:
    """The request for a pre-pull of `revision` on `pod`'s node."""
    write = plan_image_ready(
        pod, status=ConditionStatus.FALSE, reason=WAIT_PULL_IMAGE, revision_hash=revision, now=now
    )
    if write is None:
        return None
    # A new request, even where the status stays False: the fallback counts from it.
    asked = replace(write.condition, last_transition_time=format_rfc3339(now))
    return replace(write, condition=asked)


def _time(raw: str | None) -> datetime | None:
    if not raw:
        return None
    try:
        return parse_rfc3339(raw)
    except ValueError:
        return None
