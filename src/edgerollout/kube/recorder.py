"""Kubernetes Events on DaemonSets, each distinct problem once.

Reconciles repeat; an Event per reconcile would bury the one that matters. A notice is emitted
only if its key (reason + the value it is about) has not been emitted for that DaemonSet yet by
this process. A restarted controller reports a still-present problem once more, which is what
`kubectl describe` readers expect after a restart.

Distinct notices can still come in floods: a rollout of 1,000 nodes makes 1,000 `SuccessfulDelete`
notices. Like client-go's event recorder (its `EventSourceObjectSpamFilter`), each DaemonSet's
routine Events (`Notice.routine`: the per-pod deletion reports) go through a token bucket — 25 at
once, then one more every 5 minutes — and a notice beyond it is dropped (and not marked as
emitted). Unlike client-go, no other Event is rate-limited: a Warning is already reported once
per distinct problem, and a user who set a bad value must see it named; a pause, a resume or a
wave that starts is told once when it happens, and must not be lost behind a rollout's deletions.
Each deletion stays in the controller's log and in `edgerollout_pods_deleted_total`.
"""

from __future__ import annotations

import datetime
import logging
import time
import uuid
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass

from edgerollout.domain.events import Notice
from edgerollout.domain.model import DaemonSetView
from edgerollout.domain.vocabulary import DAEMONSET_KIND
from edgerollout.kube.api import EVENTS, Api, ApiError
from edgerollout.kube.views import object_key
from edgerollout.logfields import LogFields
from edgerollout.settings import CONTROLLER

COMPONENT = "edgerollout-controller"

BURST = CONTROLLER.events.burst
REFILL_SECONDS = CONTROLLER.events.refill_seconds

log = logging.getLogger(__name__)


def _key(daemonset: DaemonSetView) -> str:
    return object_key(daemonset.namespace, daemonset.name)


@dataclass
class _Bucket:
    tokens: float
    updated: float

    def take(self, now: float) -> bool:
        self.tokens = min(float(BURST), self.tokens + (now - self.updated) / REFILL_SECONDS)
        self.updated = now
        if self.tokens < 1.0:
            return False
        self.tokens -= 1.0
        return True


class EventRecorder:
    def __init__(
        self, api: Api, *, instance: str, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.api = api
        self.instance = instance
        self.clock = clock
        self._emitted: defaultdict[str, set[tuple[str, str]]] = defaultdict(set)
        self._buckets: dict[str, _Bucket] = {}

    def forget(self, daemonset_uid: str) -> None:
        self._emitted.pop(daemonset_uid, None)
        self._buckets.pop(daemonset_uid, None)

    def _allowed(self, daemonset: DaemonSetView, notice: Notice) -> bool:
        if not notice.routine:
            return True
        now = self.clock()
        bucket = self._buckets.setdefault(daemonset.uid, _Bucket(tokens=float(BURST), updated=now))
        return bucket.take(now)

    def is_new(self, daemonset: DaemonSetView, notice: Notice) -> bool:
        return notice.key not in self._emitted[daemonset.uid]

    async def emit(self, daemonset: DaemonSetView, notice: Notice) -> bool:
        """Create the Event unless this notice was emitted before or, a Normal one, the
        DaemonSet's Normal Events are over their rate; True if it was created."""
        if not self.is_new(daemonset, notice):
            return False
        if not self._allowed(daemonset, notice):
            log.debug(
                "event dropped: over the rate",
                extra=LogFields(daemonset=_key(daemonset), reason=notice.reason),
            )
            return False
        now = datetime.datetime.now(datetime.UTC)
        stamp = now.strftime("%Y-%m-%dT%H:%M:%SZ")
        body = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {
                "name": f"{daemonset.name}.{uuid.uuid4().hex[:16]}",
                "namespace": daemonset.namespace,
            },
            "involvedObject": {
                "apiVersion": "apps/v1",
                "kind": DAEMONSET_KIND,
                "name": daemonset.name,
                "namespace": daemonset.namespace,
                "uid": daemonset.uid,
            },
            "type": notice.type.value,
            "reason": notice.reason,
            "message": notice.message,
            "source": {"component": COMPONENT},
            "reportingComponent": COMPONENT,
            "reportingInstance": self.instance,
            "firstTimestamp": stamp,
            "lastTimestamp": stamp,
            "count": 1,
        }
        try:
            await self.api.create(EVENTS, body, namespace=daemonset.namespace)
        except ApiError as error:
            # An Event is a report, not a decision: failing to write one never blocks a rollout.
            log.warning(
                "could not record event",
                extra=LogFields(daemonset=_key(daemonset), reason=notice.reason, error=str(error)),
            )
            return False
        self._emitted[daemonset.uid].add(notice.key)
        return True
