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
            self._told(ds, notice)

    def _told(self, ds: DaemonSetView, notice: Notice) -> None:
        metrics.EVENTS_EMITTED.labels(reason=notice.reason).inc()
        # A Warning Event asks a person to act; a Normal one (a deletion's report) is a
        # per-pod detail, summed up by the reconcile's own line.
        log.log(
            logging.WARNING if notice.type is EventType.WARNING else logging.DEBUG,
            "event: %s",
            notice.message,
            extra=LogFields(daemonset=object_key(ds.namespace, ds.name), reason=notice.reason),
        )

    def report(self, ds: DaemonSetView, notice: Notice) -> bool:
        """Emit a deletion's Event without holding the reconcile until the API server answers;
        True if it is on its way.

        The deletion is done and recorded; its Event is a report of it. Waiting for that second
        round trip kept every deletion's slot busy twice as long and delayed the next plan, as
        client-go's asynchronous event broadcaster avoids too. Whether it is sent at all (not
        told before, within the DaemonSet's rate, this replica leading) is decided here, so that
        the reports of a rollout past the first few start no task (design §7); a report that
        finds this replica no longer leading, now or when its request leaves, is dropped."""
        if not self.recorder.is_new(ds, notice):
            return False
        if not self.guard.may_write():
            self._not_leading(ds, notice)
            return False
        if not self.recorder.admit(ds, notice):
            return False
        task = asyncio.create_task(self._send(ds, notice), name=f"event {notice.reason}")
        self._reports.add(task)
        task.add_done_callback(self._reports.discard)
        return True

    async def _send(self, ds: DaemonSetView, notice: Notice) -> None:
        try:
            self.guard.check()
        except NotLeader:
            self._not_leading(ds, notice)
            return
        if await self.recorder.send(ds, notice):
            self._told(ds, notice)

    @staticmethod
    def _not_leading(ds: DaemonSetView, notice: Notice) -> None:
        log.info(
            "event not recorded: this replica no longer leads",
            extra=LogFields(daemonset=object_key(ds.namespace, ds.name), reason=notice.reason),
        )

    async def reports_sent(self) -> None:
        """Wait until every Event reported so far has been sent (or dropped)."""
        while self._reports:
            await asyncio.wait(set(self._reports))
