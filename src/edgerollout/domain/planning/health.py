"""Broken or offline: whether the pod of the newest revision on a Ready node is failing.

An edge rollout meets two kinds of trouble that call for opposite answers. A node whose `Ready`
condition is not True is *offline*: it will come back, the planner skips it and waits (design
§4.1). A Ready node whose pod of the newest revision fails is *broken*: the new revision does not
work there, and deleting more old pods would spread the failure. This module tells a broken node's
pod from one that is merely starting, from the facts `PodView` keeps. The first rule that holds
gives the verdict:

1. **Waiting**: a container or init container waits for a failing reason
   (`FAILING_WAITING_REASONS`: CrashLoopBackOff, ImagePullBackOff, ...). The reason is that one,
   since the pod's containers stopped being ready. Waiting to be created or for init containers
   (ContainerCreating, PodInitializing) is starting, not failing.
2. **Deadline**: the pod is not Ready and its containers have not been ready for longer than the
   progress deadline: `ProgressDeadlineExceeded`, since the deadline passed.
3. **Restart**: a container restarted after the pod's start-up (below): `Restarted`, since that
   restart.

**The deadline's clock** is the kubelet's `ContainersReady` condition, not `Ready`: the node
lifecycle controller turns `Ready` False on every pod of a node it loses and leaves it so until the
kubelet reports again, so a node back from hours offline would otherwise be broken the moment it is
Ready. A Ready pod is progressing even before minReadySeconds make it available (a Deployment too
counts a Ready pod as progress), so an available pod is never late.

**Restarts.** "Restarted since it became Ready" cannot be read off a pod as it stands: `Ready`'s
transition time moves at every change, and nothing records when the pod first became Ready
(KEP-3085 says as much of the conditions). A restart counts when it is known to follow the
start-up, and the node's reboot is not its cause:
- it ended after the start-up allowance, the progress deadline from the pod's creation (by then
  a pod has been Ready, or the deadline rule finds it late), or during the pod's current Ready
  period;
- it ended in the pod's current sandbox: a restart that came with a new sandbox is a reboot of
  the node (`PodReadyToStartContainers` moved on), and a node back from offline is not broken;
- it stops counting once the pod has been available for a whole deadline after it, as the kubelet
  forgets a container's crashes after it has run for 10 minutes.
So a pod that crashed during its start-up and then became Ready is never broken by that; one that
keeps crashing at start-up is seen waiting in CrashLoopBackOff from its second crash on.

**Contract.** The caller decides readiness and revisions: it asks only about the live pod of the
newest revision on a node whose `Ready` is True. An offline node is never asked, so it is never
broken; an outdated pod that fails says nothing about the new revision. The deadline is positive,
and `now` comes from the caller, as everywhere in the domain.
"""

from dataclasses import dataclass
from datetime import datetime, timedelta

from edgerollout.domain.model import PodView
from edgerollout.domain.timestamps import format_rfc3339, to_utc
from edgerollout.domain.vocabulary import (
    FAILING_WAITING_REASONS,
    PROGRESS_DEADLINE_EXCEEDED,
    RESTARTED,
)


@dataclass(frozen=True, slots=True, kw_only=True)
class Broken:
    """Why a Ready node's new pod is failing, for status, `plan`, Events and metrics.

    `reason` is a failing waiting reason, `Restarted` or `ProgressDeadlineExceeded`; `message`
    says what was seen; `since` is when the failure began as far as the pod shows (for a restart,
    the latest one).
    """

    reason: str
    message: str
    since: datetime


def judge_health(
    pod: PodView, *, min_ready_seconds: int, progress_deadline: timedelta, now: datetime
) -> Broken | None:
    """Whether `pod`, the newest revision's pod on a Ready node, is broken at `now` (None: it is
    up, or still starting within its deadline). See the module docstring for the rules."""
    return (
        _waiting(pod, now=now)
        or _deadline_exceeded(pod, progress_deadline=progress_deadline, now=now)
        or _restarted(
            pod, min_ready_seconds=min_ready_seconds, progress_deadline=progress_deadline, now=now
        )
    )


def next_clock_change(
    pod: PodView, *, min_ready_seconds: int, progress_deadline: timedelta
) -> datetime | None:
    """When the verdict on `pod` may change on the clock alone, no event announcing it: the
    progress deadline of a pod not Ready, or the forgiveness of a restart of a pod Ready again.
    None: only a change of the pod can change it."""
    if not pod.ready:
        unready_since = pod.containers_unready_since
        return None if unready_since is None else to_utc(unready_since) + progress_deadline
    if pod.last_restart is not None and pod.ready_since is not None:
        available_since = to_utc(pod.ready_since) + timedelta(seconds=max(min_ready_seconds, 0))
        return available_since + progress_deadline
    return None


def _waiting(pod: PodView, *, now: datetime) -> Broken | None:
    failures = [f for f in pod.failures if f.reason in FAILING_WAITING_REASONS]
    if not failures:
        return None
    return Broken(
        reason=failures[0].reason,
        message="; ".join(f"container {f.container} waiting: {f.reason}" for f in failures),
        since=to_utc(pod.containers_unready_since or pod.created or now),
    )


def _deadline_exceeded(
    pod: PodView, *, progress_deadline: timedelta, now: datetime
) -> Broken | None:
    unready_since = pod.containers_unready_since
    if pod.ready or unready_since is None:
        return None
    passed = to_utc(unready_since) + progress_deadline
    if passed >= to_utc(now):
        return None
    return Broken(
        reason=PROGRESS_DEADLINE_EXCEEDED,
        message=(
            f"containers not ready since {format_rfc3339(unready_since)}, longer than the"
            f" progress deadline of {_seconds(progress_deadline)}"
        ),
        since=passed,
    )


def _restarted(
    pod: PodView, *, min_ready_seconds: int, progress_deadline: timedelta, now: datetime
) -> Broken | None:
    if pod.last_restart is None:
        return None
    restart = to_utc(pod.last_restart)
    if pod.sandbox_since is not None and restart <= to_utc(pod.sandbox_since):
        return None  # the node rebooted, or its runtime lost the pod: not the revision's doing
    ready_since = to_utc(pod.ready_since) if pod.ready and pod.ready_since is not None else None
    after_start_up = pod.created is not None and restart > to_utc(pod.created) + progress_deadline
    while_ready = ready_since is not None and restart > ready_since
    if not (after_start_up or while_ready):
        return None  # a restart of the start-up, before the pod was known to be up
    if ready_since is not None and ready_since >= restart:
        # Up again since the restart: forgiven once available for a whole deadline.
        available_since = ready_since + timedelta(seconds=max(min_ready_seconds, 0))
        if available_since + progress_deadline < to_utc(now):
            return None
    return Broken(
        reason=RESTARTED,
        message=(
            f"a container restarted at {format_rfc3339(restart)}, after the pod had started; this"
            f" counts until the pod has been available for {_seconds(progress_deadline)}"
        ),
        since=restart,
    )


def _seconds(span: timedelta) -> str:
    return f"{int(span.total_seconds())}s"
