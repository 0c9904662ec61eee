"""Roll back on failure: what a spent failure budget does when the DaemonSet asks for a rollback
(design §13.4.1).

With `edgerollout.io/on-failure: rollback`, the plan that finds more nodes broken than the failure
budget tolerates (`failure_stop`) decides a `Rollback` instead of the pause: the DaemonSet's
template goes back to the previous revision's — the revision numbered just below the newest, as
`kubectl rollout undo` picks it — and that rolls out under the same max-unavailable and failure
budget. The plan that decides it deletes nothing (it is planned as paused, as a stop is), and
the shell writes the template in one update that also records the rollback
(`edgerollout.io/rolled-back`, `spec.on_failure`); the Warning `RolloutRolledBack` is told once
the API server accepted it.

It fails closed, pausing as without it, with a Warning saying why:

| the case                                                   | then                                           |
|------------------------------------------------------------|------------------------------------------------|
| the namespace is not switched on (`rollback_namespaces`)   | `RolloutFailed` and `RollbackNotAllowed`, pause |
| the API server refuses the update (the admission policy)   | the same, told by the shell                    |
| no previous revision, or the newest is not known by hash   | `RolloutFailed` and `RollbackNotPossible`, pause |
| the failing revision is the one a rollback restored        | the same: a rollback is not rolled back        |

**After the write.** Until the native controller has made the restored revision the newest again,
the record names the failed revision with the number it still has: the rollback's echo is on its
way (`Pending`), and the plan deletes nothing and stops nothing more, so a second plan neither
writes the template again nor pauses. Once the restored revision is the newest, the failed
revision's pods are the outdated ones, and the nodes where they are broken go first
(`broken_first`, by the same rules as a broken node of the newest revision, design §13.1): those
whose pod is not available are replaced at once, as every unavailable outdated pod is; those
Ready but restarting are the first the budget takes. The broken count of the failed revision no
longer counts: its pods are not of the newest revision, so the stop is not made again.
"""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from edgerollout.domain.events import EventType, Notice
from edgerollout.domain.model import NodeName, NodeReadiness, PodView, RevisionView
from edgerollout.domain.planning.failure_stop import PAUSED_THEN, FailureAccount
from edgerollout.domain.planning.health import judge_health
from edgerollout.domain.planning.revisions import TargetRevision, newest_revision
from edgerollout.domain.spec.on_failure import OnFailure, RolledBack
from edgerollout.domain.vocabulary import (
    ON_FAILURE_ANNOTATION,
    ON_FAILURE_ROLLBACK,
    ROLLBACK_NOT_ALLOWED,
    ROLLBACK_NOT_POSSIBLE,
    ROLLOUT_FAILED,
    ROLLOUT_ROLLED_BACK,
)


@dataclass(frozen=True, slots=True, kw_only=True)
class Rollback:
    """Put the DaemonSet's template back to `restored`'s, recording `record`; tell `notice` once
    the API server accepted it. Refused, pause instead and tell `refused(why)`."""

    failed: RevisionView
    restored: RevisionView
    record: RolledBack
    notice: Notice
    account: FailureAccount

    def refused(self, why: str) -> tuple[Notice, ...]:
        """The Warnings of this rollback refused by the API server (`why`): the rollout pauses."""
        return (
            self.account.told(reason=ROLLOUT_FAILED, then=PAUSED_THEN),
            _not_rolled_back(ROLLBACK_NOT_ALLOWED, self.account, why),
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class FailureOutcome:
    """What a stop does: the Warnings told now, whether to pause, or the rollback to write."""

    notices: tuple[Notice, ...] = ()
    pause_rollout: bool = False
    rollback: Rollback | None = None

    @property
    def stops(self) -> bool:
        """Whether the plan deletes nothing and offers nothing more (planned as paused)."""
        return self.pause_rollout or self.rollback is not None


NO_FAILURE = FailureOutcome()


def on_failure(
    account: FailureAccount | None,
    *,
    asked: OnFailure,
    record: RolledBack | None,
    target: TargetRevision,
    revisions: Sequence[RevisionView],
    namespace: str,
    allowed: bool,
) -> FailureOutcome:
    """What the stop `account` does (None: no stop): the pause, or a rollback when `asked` and
    `allowed` (the controller may roll back in `namespace`) and possible (see the table in the
    module docstring). `record`: the last rollback made (`edgerollout.io/rolled-back`)."""
    if account is None:
        return NO_FAILURE
    failed = account.told(reason=ROLLOUT_FAILED, then=PAUSED_THEN)
    if asked is OnFailure.PAUSE:
        return FailureOutcome(notices=(failed,), pause_rollout=True)
    newest = newest_revision(revisions)
    previous = previous_revision(revisions)
    if record is not None and record.restored == target.hash:
        why = (
            f"revision {target.hash} is the one the rollback from revision {record.failed} "
            "restored, and a rollback is not rolled back"
        )
        return _paused(failed, _not_rolled_back(ROLLBACK_NOT_POSSIBLE, account, why))
    if newest is None or newest.hash is None or newest.hash != target.hash or previous is None:
        why = "the DaemonSet has no previous revision to go back to"
        return _paused(failed, _not_rolled_back(ROLLBACK_NOT_POSSIBLE, account, why))
    if not allowed:
        not_allowed = _not_rolled_back(
            ROLLBACK_NOT_ALLOWED,
            account,
            f"the controller may not roll back DaemonSets in namespace {namespace}: the install "
            "does not switch it on (controller.rollback.namespaces, --rollback-namespace)",
        )
        return _paused(failed, not_allowed)
    restored = previous.hash or previous.name
    record = RolledBack(failed=newest.hash, failed_number=newest.revision, restored=restored)
    notice = account.told(
        reason=ROLLOUT_ROLLED_BACK,
        then=(
            f"The DaemonSet's template is rolled back to revision {restored} (as kubectl rollout "
            "undo does), which rolls out under the same budgets, the broken nodes first"
        ),
    )
    rollback = Rollback(
        failed=newest, restored=previous, record=record, notice=notice, account=account
    )
    return FailureOutcome(rollback=rollback)


def previous_revision(revisions: Sequence[RevisionView]) -> RevisionView | None:
    """The revision `kubectl rollout undo` goes back to: the highest-numbered one below the
    newest, of another hash (None: there is none, or the newest is not known)."""
    newest = newest_revision(revisions)
    if newest is None:
        return None
    below = [r for r in revisions if r.revision < newest.revision and r.hash != newest.hash]
    return newest_revision(below)


def rollback_pending(
    record: RolledBack | None, *, target: TargetRevision, revisions: Sequence[RevisionView]
) -> bool:
    """Whether the rollback `record` names was written and its echo has not come yet: the
    failed revision is still the newest, with the number it had when it failed."""
    if record is None or record.failed != target.hash:
        return False
    newest = newest_revision(revisions)
    return newest is not None and newest.revision == record.failed_number


def rollback_in_force(record: RolledBack | None, *, target: TargetRevision) -> RolledBack | None:
    """The rollback that made the newest revision the newest (None: it is not one a rollback
    restored), for `status` to say so."""
    if record is None or record.restored != target.hash or record.failed == target.hash:
        return None
    return record


def broken_first(
    record: RolledBack | None,
    *,
    target: TargetRevision,
    pods_by_node: Mapping[NodeName, Sequence[PodView]],
    readiness: Mapping[NodeName, NodeReadiness],
    min_ready_seconds: int,
    progress_deadline: timedelta,
    now: datetime,
) -> frozenset[NodeName]:
    """The Ready nodes whose pod of the revision a rollback left is broken, by the rules of
    design §13.1: the rollback's order takes them first (empty: no rollback restored the newest
    revision). Reads every node's pods, while the record stands and names the newest revision."""
    in_force = rollback_in_force(record, target=target)
    if in_force is None:
        return frozenset()
    first: set[NodeName] = set()
    for node, pods in pods_by_node.items():
        if readiness.get(node) is not NodeReadiness.READY:
            continue
        for pod in pods:
            if pod.deleting or pod.revision_hash != in_force.failed:
                continue
            judged = judge_health(
                pod,
                min_ready_seconds=min_ready_seconds,
                progress_deadline=progress_deadline,
                now=now,
            )
            if judged is not None:
                first.add(node)
    return frozenset(first)


def _paused(*notices: Notice) -> FailureOutcome:
    return FailureOutcome(notices=notices, pause_rollout=True)


def _not_rolled_back(reason: str, account: FailureAccount, why: str) -> Notice:
    return Notice(
        type=EventType.WARNING,
        reason=reason,
        message=(
            f"Revision {account.revision} is not rolled back: {why}; the rollout is paused "
            f"instead, as without {ON_FAILURE_ANNOTATION}: {ON_FAILURE_ROLLBACK}"
        ),
        subject=account.subject,
    )
