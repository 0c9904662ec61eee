"""The plan's pods deleted, each recorded as expected before its request leaves."""

from __future__ import annotations

import logging

from edgerollout.controller import metrics
from edgerollout.controller.rollout_state import RolloutState
from edgerollout.controller.writes.concurrency import send_concurrently
from edgerollout.controller.writes.events import EventWriter
from edgerollout.controller.writes.guard import WriteGuard
from edgerollout.domain.events import EventType, Notice
from edgerollout.domain.model import DaemonSetView
from edgerollout.domain.planning.decision import Plan
from edgerollout.domain.planning.verdicts import Deletion
from edgerollout.domain.vocabulary import FAILED_DELETE
from edgerollout.kube.api import PODS, Api, ApiError
from edgerollout.kube.views import object_key
from edgerollout.logfields import LogFields

log = logging.getLogger("edgerollout.controller")


class PodDeleter:
    def __init__(self, api: Api, guard: WriteGuard, events: EventWriter, *, at_once: int) -> None:
        self.api = api
        self.guard = guard
        self.events = events
        self.at_once = at_once

    async def delete(self, ds: DaemonSetView, plan: Plan, state: RolloutState) -> int:
        """Delete the plan's pods; how many the API server accepted."""
        results = await send_concurrently(
            lambda deletion: self._delete_one(ds, deletion, plan, state),
            plan.deletions,
            at_once=self.at_once,
        )
        return sum(results)

    async def _delete_one(
        self, ds: DaemonSetView, deletion: Deletion, plan: Plan, state: RolloutState
    ) -> int:
        """Delete one pod (recorded as expected first); 1 if deleted, 0 if gone or replaced."""
        self.guard.check()
        state.deletions.expect(deletion.uid, deletion.node_name)
        try:
            await self.api.delete(
                PODS, deletion.name, namespace=deletion.namespace, uid=deletion.uid
            )
        except ApiError as error:
            if error.not_found:
                return 0  # already gone: the expectation covers its node until it is replaced
            state.deletions.drop(deletion.uid)
            if error.conflict:
                return 0  # replaced meanwhile (UID precondition): the next reconcile judges it
            await self.events.emit(
                ds,
                Notice(
                    type=EventType.WARNING,
                    reason=FAILED_DELETE,
                    message=f"Error deleting pod {deletion.name}: {error}",
                    subject=f"{deletion.uid}:{error.status}",
                ),
            )
            raise
        reason = deletion.reason.name.lower()
        metrics.PODS_DELETED.labels(reason=reason).inc()
        self.events.report(ds, deletion.notice)
        if not log.isEnabledFor(logging.DEBUG):
            return 1  # a per-pod detail: the reconcile's own line counts the deletions
        fields = LogFields(
            daemonset=object_key(ds.namespace, ds.name),
            pod=object_key(deletion.namespace, deletion.name),
            uid=deletion.uid,
            node=deletion.node_name,
            reason=reason,
        )
        if plan.target is not None and plan.target.hash is not None:
            fields["revision"] = plan.target.hash
        if plan.rollout is not None:
            fields["unavailable"] = plan.rollout.unavailable
            fields["budget"] = plan.rollout.max_unavailable
        log.debug("deleted pod", extra=fields)
        return 1
