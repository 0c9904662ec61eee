"""The writes that carry out a `Plan`, one small executor per kind of decision.

Each write is guarded by `may_write` (the leader check, tested again right before every request):
- Events for the plan's notices, each distinct one once (`emit`), and a deletion's Event sent
  without holding the reconcile (`report`);
- `pods/status` strategic merge patches holding one condition, with the pod's UID as
  precondition (`write_conditions`), recorded in the rollout's `ConditionWrites` once accepted;
- deletions with a UID precondition (`delete_pods`), recorded in the rollout's `Expectations`
  before they are sent, so the budget holds while the cache catches up;
- pull Jobs created, reported on their pods and deleted (`run_prepulls`);
- the rollout paused when more nodes are broken than its failure budget tolerates
  (`pause_rollout`): a merge patch of the one annotation, which the controller's admission
  policy admits and nothing else on a DaemonSet (design §13.4).

A pod that is gone (404) or was replaced (409 on the UID precondition) is not an error: the next
plan judges its successor. Per-pod decisions are logged at DEBUG with structured fields; the
reconcile logs one summary line.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import TypeVar

from edgerollout.controller import metrics
from edgerollout.controller.rollout_state import RolloutState
from edgerollout.domain.events import EventType, Notice
from edgerollout.domain.model import DaemonSetView
from edgerollout.domain.planning.conditions import ConditionWrite
from edgerollout.domain.planning.decision import Plan
from edgerollout.domain.planning.prepull import PrepullStep
from edgerollout.domain.planning.verdicts import Deletion
from edgerollout.domain.vocabulary import FAILED_DELETE, PAUSED_ANNOTATION
from edgerollout.kube.api import DAEMONSETS, JOBS, MERGE, PODS, Api, ApiError
from edgerollout.kube.manifests import condition_patch, pull_job_manifest
from edgerollout.kube.recorder import EventRecorder
from edgerollout.kube.views import object_key
from edgerollout.logfields import LogFields

log = logging.getLogger("edgerollout.controller")
Item = TypeVar("Item")


class NotLeader(RuntimeError):
    """A write was about to happen while this replica does not hold the Lease."""


def _key(ds: DaemonSetView) -> str:
    return object_key(ds.namespace, ds.name)


class Executors:
    def __init__(
        self,
        *,
        api: Api,
        recorder: EventRecorder,
        may_write: Callable[[], bool],
        write_concurrency: int,
    ) -> None:
        self.api = api
        self.recorder = recorder
        self.may_write = may_write
        self.write_concurrency = write_concurrency
        self._reports: set[asyncio.Task[None]] = set()

    def guard(self) -> None:
        if not self.may_write():
            raise NotLeader("not the leader: refusing to write")

    async def emit(self, ds: DaemonSetView, notice: Notice) -> None:
        """Emit the Event of `notice`, unless this DaemonSet has had it already."""
        if not self.recorder.is_new(ds, notice):
            return
        self.guard()
        if await self.recorder.emit(ds, notice):
            metrics.EVENTS_EMITTED.labels(reason=notice.reason).inc()
            # A Warning Event asks a person to act; a Normal one (a deletion's report) is a
            # per-pod detail, summed up by the reconcile's own line.
            log.log(
                logging.WARNING if notice.type is EventType.WARNING else logging.DEBUG,
                "event: %s",
                notice.message,
                extra=LogFields(daemonset=_key(ds), reason=notice.reason),
            )

    def report(self, ds: DaemonSetView, notice: Notice) -> None:
        """Emit a deletion's Event without holding the reconcile until the API server answers.

        The deletion is done and recorded; its Event is a report of it. Waiting for that second
        round trip kept every deletion's slot busy twice as long and delayed the next plan, as
        client-go's asynchronous event broadcaster avoids too. A report that finds this replica
        no longer leading is dropped."""
        task = asyncio.create_task(self.emit(ds, notice), name=f"event {notice.reason}")
        self._reports.add(task)
        fields = LogFields(daemonset=_key(ds), reason=notice.reason)
        task.add_done_callback(lambda done: self._reported(done, fields))

    def _reported(self, task: asyncio.Task[None], fields: LogFields) -> None:
        self._reports.discard(task)
        if not task.cancelled() and isinstance(task.exception(), NotLeader):
            log.info("event not recorded: this replica no longer leads", extra=fields)

    async def reports_sent(self) -> None:
        """Wait until every Event reported so far has been sent (or dropped)."""
        while self._reports:
            await asyncio.wait(set(self._reports))

    async def write_conditions(
        self, ds: DaemonSetView, writes: Sequence[ConditionWrite], state: RolloutState
    ) -> int:
        """Send the writes not already waiting for their echo; how many were written."""
        unsent = state.conditions.unsent(writes)
        results = await self._concurrently(
            lambda write: self._write_condition(ds, write, state), unsent
        )
        return sum(results)

    async def _write_condition(
        self, ds: DaemonSetView, write: ConditionWrite, state: RolloutState
    ) -> int:
        self.guard()
        if not await self._patch_status(write):
            return 0
        state.conditions.sent(write)
        log.debug(
            "condition written",
            extra=LogFields(
                daemonset=_key(ds),
                pod=object_key(write.namespace, write.name),
                condition=write.condition.type,
                status=str(write.condition.status),
                reason=write.condition.reason,
            ),
        )
        return 1

    async def _patch_status(self, write: ConditionWrite) -> bool:
        """Patch one pod's condition; False if the pod is gone or was replaced."""
        body = condition_patch(write)
        try:
            await self.api.patch(
                PODS, write.name, body, namespace=write.namespace, subresource="status"
            )
        except ApiError as error:
            if error.not_found or error.conflict:
                return False  # its successor gets its own write
            raise
        metrics.CONDITIONS_WRITTEN.labels(type=write.condition.type).inc()
        return True

    async def delete_pods(self, ds: DaemonSetView, plan: Plan, state: RolloutState) -> int:
        """Delete the plan's pods; how many the API server accepted."""
        results = await self._concurrently(
            lambda deletion: self._delete(ds, deletion, plan, state), plan.deletions
        )
        return sum(results)

    async def _delete(
        self, ds: DaemonSetView, deletion: Deletion, plan: Plan, state: RolloutState
    ) -> int:
        """Delete one pod (recorded as expected first); 1 if deleted, 0 if gone or replaced."""
        self.guard()
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
            await self.emit(
                ds,
                Notice(
                    type=EventType.WARNING,
                    reason=FAILED_DELETE,
                    message=f"Error deleting pod {deletion.name}: {error}",
                    subject=f"{deletion.uid}:{error.status}",
                ),
            )
            raise
        metrics.PODS_DELETED.labels(reason=deletion.reason.name.lower()).inc()
        fields = LogFields(
            daemonset=_key(ds),
            pod=object_key(deletion.namespace, deletion.name),
            uid=deletion.uid,
            node=deletion.node_name,
            reason=deletion.reason.name.lower(),
        )
        if plan.target is not None and plan.target.hash is not None:
            fields["revision"] = plan.target.hash
        if plan.rollout is not None:
            fields["unavailable"] = plan.rollout.unavailable
            fields["budget"] = plan.rollout.max_unavailable
        log.debug("deleted pod", extra=fields)
        self.report(ds, deletion.notice)
        return 1

    async def pause_rollout(self, ds: DaemonSetView) -> bool:
        """Pause the DaemonSet's rollout (`edgerollout.io/paused: "true"`); False if the
        DaemonSet is gone. Any other refusal is raised: the key is retried with backoff, and the
        plan keeps deleting nothing meanwhile, paused or not."""
        self.guard()
        body = {"metadata": {"annotations": {PAUSED_ANNOTATION: "true"}}}
        try:
            await self.api.patch(
                DAEMONSETS, ds.name, body, namespace=ds.namespace, content_type=MERGE
            )
        except ApiError as error:
            if error.not_found:
                return False
            raise
        log.warning("rollout paused: too many broken nodes", extra=LogFields(daemonset=_key(ds)))
        return True

    async def run_prepulls(self, ds: DaemonSetView, steps: Sequence[PrepullStep]) -> int:
        """Start the plan's pull Jobs, report finished ones on their pods and delete them; how
        many reports were written."""
        written = 0
        for step in steps:
            pod = step.pod
            self.guard()
            if step.create_job is not None:
                try:
                    await self.api.create(
                        JOBS, pull_job_manifest(step.create_job), namespace=pod.namespace
                    )
                except ApiError as error:
                    if not error.conflict:  # 409: it exists already (a previous attempt)
                        raise
                log.debug(
                    "pre-pull Job started",
                    extra=LogFields(
                        daemonset=_key(ds),
                        pod=object_key(pod.namespace, pod.name),
                        node=pod.node_name or "",
                        revision=step.revision,
                    ),
                )
            if step.report is not None and await self._patch_status(step.report):
                written += 1
                log.debug(
                    "pre-pull reported",
                    extra=LogFields(
                        daemonset=_key(ds),
                        pod=object_key(pod.namespace, pod.name),
                        revision=step.revision,
                        reason=step.report.condition.reason,
                    ),
                )
            if step.delete_job is not None:
                try:
                    await self.api.delete(
                        JOBS, step.delete_job, namespace=pod.namespace, propagation="Background"
                    )
                except ApiError as error:
                    if not error.not_found:
                        raise
        return written

    async def _concurrently(
        self, send: Callable[[Item], Awaitable[int]], items: Sequence[Item]
    ) -> list[int]:
        """Send one request per item, at most `write_concurrency` at a time, and wait for all.

        A plan's writes are independent of each other (each pod is written or deleted at most
        once, the deletions all fit the budget and are recorded as expected before they are
        sent), so they need not wait for one another's round trip: sent one after the other, a
        wave of a hundred deletions took as many round trips. If any request fails, the others
        still finish, then the first failure is raised (the key is retried with backoff)."""
        gate = asyncio.Semaphore(self.write_concurrency)

        async def gated(item: Item) -> int:
            async with gate:
                return await send(item)

        results = await asyncio.gather(*(gated(item) for item in items), return_exceptions=True)
        for result in results:
            if isinstance(result, BaseException):
                raise result
        return [result for result in results if not isinstance(result, BaseException)]
