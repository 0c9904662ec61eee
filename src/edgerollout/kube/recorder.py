"""Kubernetes Events on DaemonSets, each distinct problem once.

Reconciles repeat; an Event per reconcile would bury the one that matters. A notice is emitted
only if its key (reason + the value it is about) has not been emitted for that DaemonSet yet by
this process. A restarted controller reports a still-present problem once more, which is what
`kubectl describe` readers expect after a restart.

Distinct notices can still come in floods: a rollout of 1,000 nodes makes 1,000 `SuccessfulDelete`
notices. Like client-go's event recorder (its `EventSourceObjectSpamFilter`), each DaemonSet's
routine Events (`Notice.routine`: the per-pod deletion reports) go through a token bucket — 25 at
once, then one more every 5 minutes — and a notice beyond it is dropped (and not marked as
emitted). Each deletion stays in the controller's log and in `edgerollout_pods_deleted_total`.

Warnings are told once per distinct value, but a value can be edited in a loop: each DaemonSet's
Warnings have a bucket of their own — 64 at once, then one a minute. A Warning held back is not
marked as emitted, and `warning_wait` tells the reconciler when to look again, so the value still
there then is named. A pause, a resume or a wave that starts is told once when it happens, and is
never held back. What is remembered is bounded: each notice's key as a 16-byte digest, at most
`remembered` keys per DaemonSet (the oldest forgotten first: told again if it comes back), and
each message cut to `EVENT_MESSAGE_LIMIT` characters (design §7, §12.7).
"""

from __future__ import annotations

import datetime
import hashlib
import logging
import time
import uuid
from collections import OrderedDict, defaultdict
from collections.abc import Callable
from dataclasses import dataclass

from edgerollout.domain.events import EventType, Notice, event_message
from edgerollout.domain.model import DaemonSetView
from edgerollout.domain.vocabulary import DAEMONSET_KIND
from edgerollout.kube.api import EVENTS as EVENTS_RESOURCE
from edgerollout.kube.api import Api, ApiError
from edgerollout.kube.views import object_key
from edgerollout.logfields import LogFields
from edgerollout.settings import CONTROLLER

COMPONENT = "edgerollout-controller"

EVENTS = CONTROLLER.events

log = logging.getLogger(__name__)


def _key(daemonset: DaemonSetView) -> str:
    return object_key(daemonset.namespace, daemonset.name)


@dataclass
class _Bucket:
    burst: int
    refill_seconds: float
    tokens: float
    updated: float

    def level(self, now: float) -> float:
        """The tokens the bucket holds at `now`, refilled since it was last taken from."""
        return min(float(self.burst), self.tokens + (now - self.updated) / self.refill_seconds)

    def take(self, now: float) -> bool:
        self.tokens = self.level(now)
        self.updated = now
        if self.tokens < 1.0:
            return False
        self.tokens -= 1.0
        return True

    def wait(self, now: float) -> float:
        """Seconds until the bucket holds a token again."""
        return max(0.0, (1.0 - self.level(now)) * self.refill_seconds)


def _digest(notice: Notice) -> bytes:
    key = f"{notice.reason}\0{notice.subject}".encode("utf-8", "surrogatepass")
    return hashlib.blake2b(key, digest_size=16).digest()


class EventRecorder:
    def __init__(
        self, api: Api, *, instance: str, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.api = api
        self.instance = instance
        self.clock = clock
        self._emitted: defaultdict[str, OrderedDict[bytes, None]] = defaultdict(OrderedDict)
        self._buckets: dict[tuple[str, bool], _Bucket] = {}
        self._held_back: set[str] = set()

    def forget(self, daemonset_uid: str) -> None:
        self._emitted.pop(daemonset_uid, None)
        self._held_back.discard(daemonset_uid)
        for warning in (False, True):
            self._buckets.pop((daemonset_uid, warning), None)

    def _bucket(self, daemonset: DaemonSetView, *, warning: bool, now: float) -> _Bucket:
        burst = EVENTS.warning_burst if warning else EVENTS.burst
        refill = EVENTS.warning_refill_seconds if warning else EVENTS.refill_seconds
        fresh = _Bucket(burst=burst, refill_seconds=refill, tokens=float(burst), updated=now)
        return self._buckets.setdefault((daemonset.uid, warning), fresh)

    def _allowed(self, daemonset: DaemonSetView, notice: Notice) -> bool:
        warning = notice.type is EventType.WARNING
        if not (notice.routine or warning):
            return True
        now = self.clock()
        if self._bucket(daemonset, warning=warning, now=now).take(now):
            return True
        if warning:
            self._held_back.add(daemonset.uid)
        return False

    def warning_wait(self, daemonset: DaemonSetView) -> float | None:
        """When a Warning of this DaemonSet was held back by its rate: seconds until the next one
        may be sent (the reconciler looks again then); else None."""
        if daemonset.uid not in self._held_back:
            return None
        now = self.clock()
        return self._bucket(daemonset, warning=True, now=now).wait(now)

    def is_new(self, daemonset: DaemonSetView, notice: Notice) -> bool:
        return _digest(notice) not in self._emitted[daemonset.uid]

    def _remember(self, daemonset: DaemonSetView, notice: Notice) -> None:
        emitted = self._emitted[daemonset.uid]
        emitted[_digest(notice)] = None
        while len(emitted) > EVENTS.remembered:
            emitted.popitem(last=False)

    def admit(self, daemonset: DaemonSetView, notice: Notice) -> bool:
        """Whether the notice is to be sent now: not emitted before, and its DaemonSet's Events
        of its kind (routine, Warning) within their rate (a token is taken). Decided at once,
        without a request: a rollout's deletion reports beyond the rate cost nothing more."""
        if not self.is_new(daemonset, notice):
            return False
        if not self._allowed(daemonset, notice):
            log.debug(
                "event dropped: over the rate",
                extra=LogFields(daemonset=_key(daemonset), reason=notice.reason),
            )
            return False
        return True

    async def emit(self, daemonset: DaemonSetView, notice: Notice) -> bool:
        """Create the Event unless this notice was emitted before or the DaemonSet's Events of
        its kind (routine, Warning) are over their rate; True if it was created."""
        return self.admit(daemonset, notice) and await self.send(daemonset, notice)

    async def send(self, daemonset: DaemonSetView, notice: Notice) -> bool:
        """Create the Event of a notice `admit` let through; True if it was created."""
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
            "message": event_message(notice.message),
            "source": {"component": COMPONENT},
            "reportingComponent": COMPONENT,
            "reportingInstance": self.instance,
            "firstTimestamp": stamp,
            "lastTimestamp": stamp,
            "count": 1,
        }
        try:
            await self.api.create(EVENTS_RESOURCE, body, namespace=daemonset.namespace)
        except ApiError as error:
            # An Event is a report, not a decision: failing to write one never blocks a rollout.
            log.warning(
                "could not record event",
                extra=LogFields(daemonset=_key(daemonset), reason=notice.reason, error=str(error)),
            )
            return False
        self._remember(daemonset, notice)
        if notice.type is EventType.WARNING:
            self._held_back.discard(daemonset.uid)
        return True
