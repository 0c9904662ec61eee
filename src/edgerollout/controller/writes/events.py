"""The Events of a plan's notices, and a deletion's Event sent without holding the reconcile."""

from __future__ import annotations

import asyncio
import logging

from edgerollout.controller import metrics
from edgerollout.controller.writes.guard import NotLeader, WriteGuard
from edgerollout.domain.events import EventType, Notice
from edgerollout.domain.model import DaemonSetView
from edgerollout.kube.recorder import EventRecorder
from edgerollout.kube.views import object_key
from edgerollout.logfields import LogFields

log = logging.getLogger("edgerollout.controller")


class EventWriter:
    def __init__(self, recorder: EventRecorder, guard: WriteGuard) -> None:
        self.recorder = recorder
        self.guard = guard
        self._reports: set[asyncio.Task[None]] = set()

    async def emit(self, ds: DaemonSetView, notice: Notice) -> None:
        """Emit the Event of `notice`, unless this DaemonSet has had it already."""
        if not self.recorder.is_new(ds, notice):
            return
        self.guard.check()
        if await self.recorder.emit(ds, notice):
            metrics.EVENTS_EMITTED.labels(reason=notice.reason).inc()
            # A Warning Event asks a person to act; a Normal one (a deletion's report) is a
            # per-pod detail, summed up by the reconcile's own line.
            log.log(
                logging.WARNING if notice.type is EventType.WARNING else logging.DEBUG,
                "event: %s",
                notice.message,
                extra=LogFields(daemonset=object_key(ds.namespace, ds.name), reason=notice.reason),
            )

    def report(self, ds: DaemonSetView, notice: Notice) -> None:
        """Emit a deletion's Event without holding the reconcile until the API server answers.

        The deletion is done and recorded; its Event is a report of it. Waiting for that second
        round trip kept every deletion's slot busy twice as long and delayed the next plan, as
        client-go's asynchronous event broadcaster avoids too. A report that finds this replica
        no longer leading is dropped."""
        task = asyncio.create_task(self.emit(ds, notice), name=f"event {notice.reason}")
        self._reports.add(task)
        fields = LogFields(daemonset=object_key(ds.namespace, ds.name), reason=notice.reason)
        task.add_done_callback(lambda done: self._reported(done, fields))

    def _reported(self, task: asyncio.Task[None], fields: LogFields) -> None:
        self._reports.discard(task)
        if not task.cancelled() and isinstance(task.exception(), NotLeader):
            log.info("event not recorded: this replica no longer leads", extra=fields)

    async def reports_sent(self) -> None:
        """Wait until every Event reported so far has been sent (or dropped)."""
        while self._reports:
            await asyncio.wait(set(self._reports))
