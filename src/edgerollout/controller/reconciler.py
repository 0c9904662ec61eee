"""One reconcile of one DaemonSet: read the caches, ask the domain for a plan, carry it out.

The decision is `domain.reconcile.plan_reconcile`; this module only gathers its inputs and makes its
writes, each guarded by `may_write` (the leader check, tested again right before every request):
- Events for the plan's notices, each distinct one once;
- `pods/status` strategic merge patches holding one condition, with the pod's UID as precondition;
- deletions with a UID precondition, recorded as expectations before they are sent, so the budget
  holds while the cache catches up.
"""

from __future__ import annotations

import asyncio
import datetime
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from edgerollout.controller import metrics
from edgerollout.controller.cluster_cache import ClusterCache
from edgerollout.controller.expectations import ConditionWrites, Expectations
from edgerollout.domain.conditions import ConditionWrite
from edgerollout.domain.events import EventType, Notice
from edgerollout.domain.model import DaemonSetView, PodView
from edgerollout.domain.planner import Deletion, DeletionPlan, NodeVerdict
from edgerollout.domain.prepull import plan_prepulls
from edgerollout.domain.reconcile import Plan, plan_reconcile
from edgerollout.domain.rollout_book import RolloutBook
from edgerollout.domain.strategy import UpdateStrategy, choose_strategy
from edgerollout.domain.vocabulary import FAILED_DELETE, UPDATE_STRATEGY_ANNOTATION
from edgerollout.kube.api import JOBS, PODS, Api, ApiError
from edgerollout.kube.recorder import EventRecorder
from edgerollout.kube.views import CachedDaemonSet

log = logging.getLogger("edgerollout.controller")

# Writes of one reconcile in flight at once: as many as the API client's connection pool holds
# (100), so that a whole wave of deletions (the first one of a rollout is the budget) leaves at
# once, as the native DaemonSet controller sends its own. With 32, the first 100 deletions of a
# 1,000-node rollout took four round trips on the loaded lab (0.6-1.0 s against its 0.3 s).
WRITE_CONCURRENCY = 100
Item = TypeVar("Item")


class NotLeader(RuntimeError):
    """A write was about to happen while this replica does not hold the Lease."""


@dataclass(frozen=True, slots=True)
class PrepullSettings:
    """The image the pull Jobs take a static busybox from, and how long a pull may take."""

    toolbox_image: str = "busybox:1.36.1-musl"
    deadline_seconds: int = 600


@dataclass(frozen=True, slots=True)
class Outcome:
    """What a reconcile did, and when the key should be looked at again without an event."""

    plan: Plan | None
    deleted: int = 0
    conditions_written: int = 0
    requeue_after: float | None = None


class Reconciler:
    def __init__(
        self,
        *,
        api: Api,
        cache: ClusterCache,
        recorder: EventRecorder,
        expectations: Expectations,
        may_write: Callable[[], bool],
        clock: Callable[[], datetime.datetime] | None = None,
        prepull: PrepullSettings | None = None,
        sent_conditions: ConditionWrites | None = None,
    ) -> None:
        self.api = api
        self.cache = cache
        self.recorder = recorder
        self.expectations = expectations
        self.may_write = may_write
        self.clock = clock or (lambda: datetime.datetime.now(datetime.UTC))
        self.prepull = prepull or PrepullSettings()
        self.sent_conditions = sent_conditions or ConditionWrites()
        self._skipped: dict[str, int] = {}
        self._uid_by_key: dict[str, str] = {}
        self._books: dict[str, RolloutBook] = {}
        self._reports: set[asyncio.Task[None]] = set()

    def _guard(self) -> None:
        if not self.may_write():
            raise NotLeader("not the leader: refusing to write")

    def _forget(self, key: str, *, notices: bool = True) -> None:
        """Drop what is remembered about a DaemonSet (and, unless told otherwise, its Events)."""
        uid = self._uid_by_key.pop(key, None)
        if uid is not None:
            self._books.pop(uid, None)
            self.cache.stop_following(uid)
            self.expectations.forget(uid)
            self.sent_conditions.forget(uid)
            if notices:
                self.recorder.forget(uid)
        self._skipped.pop(key, None)
        metrics.NODES_SKIPPED.set(sum(self._skipped.values()))

    async def _emit(self, ds: DaemonSetView, notice: Notice) -> None:
        if not self.recorder.is_new(ds, notice):
            return
        self._guard()
        if await self.recorder.emit(ds, notice):
            metrics.EVENTS_EMITTED.labels(reason=notice.reason).inc()
            log.info("event %s on %s/%s: %s", notice.reason, ds.namespace, ds.name, notice.message)

    def _report(self, ds: DaemonSetView, notice: Notice) -> None:
        """Emit a deletion's Event without holding the reconcile until the API server answers.

        The deletion is done and recorded; its Event is a report of it. Waiting for that second
        round trip kept every deletion's slot busy twice as long and delayed the next plan, as
        client-go's asynchronous event broadcaster avoids too. A report that finds this replica
        no longer leading is dropped."""
        task = asyncio.create_task(self._emit(ds, notice), name=f"event {notice.reason}")
        self._reports.add(task)
        task.add_done_callback(self._reported)

    def _reported(self, task: asyncio.Task[None]) -> None:
        self._reports.discard(task)
        if not task.cancelled() and isinstance(task.exception(), NotLeader):
            log.info("event not recorded: this replica no longer leads")

    async def reports_sent(self) -> None:
        """Wait until every Event reported so far has been sent (or dropped)."""
        while self._reports:
            await asyncio.wait(set(self._reports))

    async def reconcile(self, key: str) -> Outcome:
        cached = self.cache.daemonsets.get(key)
        if cached is None:
            self._forget(key)
            return Outcome(plan=None)
        ds = cached.view
        previous_uid = self._uid_by_key.get(key)
        if previous_uid is not None and previous_uid != ds.uid:
            self._forget(key)  # deleted and recreated under the same name
        self._uid_by_key[key] = ds.uid

        # Only OTA plans read the pods themselves (conditions, pre-pulls); an AdvancedRollingUpdate
        # is planned from its book, so the list of every pod is not built for it.
        ota = (
            choose_strategy(
                annotations=ds.annotations, update_strategy_type=ds.update_strategy_type
            ).strategy
            is UpdateStrategy.OTA
        )
        pods = self.cache.pod_views_of(ds.uid) if ota else []
        book = self._books.get(ds.uid)
        if book is None:
            book = self._books[ds.uid] = RolloutBook(self.cache.node_source(ds.uid))
        book.touch(self.cache.take_changed_nodes(ds.uid))
        in_flight = self.expectations.settle(ds.uid, book.source.pods_on)
        try:
            plan = plan_reconcile(
                daemonset=ds,
                revisions=[revision.view for revision in self.cache.revisions_of(ds.uid)],
                pods=pods,
                now=self.clock(),
                in_flight=in_flight,
                book=book,
            )
        except BaseException:
            book.reset()  # the changes it was told of may not all be judged: judge all next time
            raise
        if plan.rollout is None:
            book.reset()  # not planned from the book: it was told of changes it did not judge
        if plan.strategy is None:
            # Not ours (any more): nothing in flight to track. A problem already reported stays
            # reported until the annotation is gone, so a bad value warns once, not per reconcile.
            self._forget(key, notices=UPDATE_STRATEGY_ANNOTATION not in ds.annotations)
            self._uid_by_key[key] = ds.uid
        for notice in plan.notices:
            await self._emit(ds, notice)

        unsent = self.sent_conditions.unsent(ds.uid, plan.condition_writes, pods)
        written = sum(await _concurrently(lambda write: self._write_condition(ds, write), unsent))
        if plan.strategy is UpdateStrategy.OTA and plan.target is not None:
            written += await self._prepull(cached, owned_views=pods, newest=plan.target.hash)

        rollout = plan.rollout
        if rollout is not None:
            self._skipped[key] = len(rollout.skipped_nodes)
            metrics.NODES_SKIPPED.set(sum(self._skipped.values()))
            if rollout.skipped_nodes and rollout.deletions:
                log.info(
                    "%s: skipping not-Ready nodes %s",
                    key,
                    ", ".join(rollout.skipped_nodes),
                )
        deleted = sum(
            await _concurrently(
                lambda deletion: self._delete(ds, deletion, plan, rollout), plan.deletions
            )
        )

        requeue = None
        if self.expectations.pending(ds.uid):
            requeue = 5.0  # re-check from the cache even if no event arrives (never a LIST)
        starting = (
            ds.min_ready_seconds > 0
            and rollout is not None
            and any(v is NodeVerdict.STARTING for v in rollout.verdicts.values())
        )
        if starting:
            # A pod becomes available minReadySeconds after turning Ready: no event says so.
            requeue = min(requeue or float(ds.min_ready_seconds), float(ds.min_ready_seconds))
        unechoed = self.sent_conditions.next_expiry(ds.uid)
        if unechoed is not None:
            # Normally the echo of each write arrives first and triggers a reconcile; this one
            # only re-checks a write whose echo never came (its record then expires).
            unechoed = max(unechoed, 1.0)
            requeue = min(requeue or unechoed, unechoed)
        return Outcome(
            plan=plan, deleted=deleted, conditions_written=written, requeue_after=requeue
        )

    async def _write_condition(self, ds: DaemonSetView, write: ConditionWrite) -> int:
        """Patch one pod's condition; 1 if it was written, 0 if the pod is gone or replaced."""
        self._guard()
        body = {"metadata": {"uid": write.uid}, **write.patch}
        try:
            await self.api.patch(
                PODS, write.name, body, namespace=write.namespace, subresource="status"
            )
        except ApiError as error:
            if error.not_found or error.conflict:
                return 0  # the pod is gone or was replaced: its successor gets its own write
            raise
        self.sent_conditions.sent(ds.uid, write)
        metrics.CONDITIONS_WRITTEN.labels(type=write.condition.type).inc()
        log.info(
            "set %s=%s on pod %s/%s (%s)",
            write.condition.type,
            write.condition.status,
            write.namespace,
            write.name,
            write.condition.message,
        )
        return 1

    async def _delete(
        self, ds: DaemonSetView, deletion: Deletion, plan: Plan, rollout: DeletionPlan | None
    ) -> int:
        """Delete one pod (recorded as expected first); 1 if deleted, 0 if gone or replaced."""
        self._guard()
        self.expectations.expect(ds.uid, deletion.uid, deletion.node_name)
        try:
            await self.api.delete(
                PODS, deletion.name, namespace=deletion.namespace, uid=deletion.uid
            )
        except ApiError as error:
            if error.not_found:
                return 0  # already gone: the expectation covers its node until it is replaced
            self.expectations.drop(ds.uid, deletion.uid)
            if error.conflict:
                return 0  # replaced meanwhile (UID precondition): the next reconcile judges it
            await self._emit(
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
        budget = plan.budget.value if plan.budget else 0
        log.info(
            "deleted pod %s/%s on node %s (%s; unavailable %d/%d)",
            deletion.namespace,
            deletion.name,
            deletion.node_name,
            deletion.reason.value,
            rollout.unavailable if rollout else 0,
            budget,
        )
        self._report(ds, deletion.notice)
        return 1

    async def _prepull(
        self, cached: CachedDaemonSet, *, owned_views: list[PodView], newest: str | None
    ) -> int:
        """Start pull Jobs for pods that asked for one; report finished Jobs on their pods."""
        steps = plan_prepulls(
            pods=owned_views,
            newest=newest,
            jobs=self.cache.jobs_in(cached.view.namespace),
            template=cached.pull_template,
            toolbox_image=self.prepull.toolbox_image,
            deadline_seconds=self.prepull.deadline_seconds,
            now=self.clock(),
        )
        written = 0
        for step in steps:
            pod = step.pod
            self._guard()
            if step.create_job is not None:
                try:
                    await self.api.create(JOBS, step.create_job, namespace=pod.namespace)
                except ApiError as error:
                    if not error.conflict:  # 409: it exists already (a previous attempt)
                        raise
                log.info(
                    "pre-pull: started Job for pod %s/%s (%s)",
                    pod.namespace,
                    pod.name,
                    step.revision,
                )
            if step.report is not None:
                body = {"metadata": {"uid": step.report.uid}, **step.report.patch}
                try:
                    await self.api.patch(
                        PODS, pod.name, body, namespace=pod.namespace, subresource="status"
                    )
                except ApiError as error:
                    if not (error.not_found or error.conflict):
                        raise
                else:
                    written += 1
                    metrics.CONDITIONS_WRITTEN.labels(type=step.report.condition.type).inc()
                    log.info(
                        "pre-pull for pod %s/%s: %s",
                        pod.namespace,
                        pod.name,
                        step.report.condition.reason,
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


async def _concurrently(send: Callable[[Item], Awaitable[int]], items: Sequence[Item]) -> list[int]:
    """Send one request per item, at most WRITE_CONCURRENCY at a time, and wait for all of them.

    A plan's writes are independent of each other (each pod is written or deleted at most once,
    the deletions all fit the budget and are recorded as expected before they are sent), so they
    need not wait for one another's round trip: sent one after the other, a wave of a hundred
    deletions took as many round trips. If any request fails, the others still finish, then the
    first failure is raised (the key is retried with backoff, as before)."""
    gate = asyncio.Semaphore(WRITE_CONCURRENCY)

    async def gated(item: Item) -> int:
        async with gate:
            return await send(item)

    results = await asyncio.gather(*(gated(item) for item in items), return_exceptions=True)
    for result in results:
        if isinstance(result, BaseException):
            raise result
    return [result for result in results if not isinstance(result, BaseException)]
