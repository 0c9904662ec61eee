"""Kubernetes Events on DaemonSets, each distinct problem once.

Reconciles repeat; an Event per reconcile would bury the one that matters. A notice is emitted
only if its key (reason + the value it is about) has not been emitted for that DaemonSet yet by
this process. A restarted controller reports a still-present problem once more, which is what
`kubectl describe` readers expect after a restart.
"""

from __future__ import annotations

import datetime
import logging
import uuid
from collections import defaultdict

from edgerollout.domain.events import Notice
from edgerollout.domain.model import DaemonSetView
from edgerollout.kube.api import EVENTS, Api, ApiError

COMPONENT = "edgerollout-controller"

log = logging.getLogger(__name__)


class EventRecorder:
    def __init__(self, api: Api, *, instance: str) -> None:
        self.api = api
        self.instance = instance
        self._emitted: defaultdict[str, set[tuple[str, str]]] = defaultdict(set)

    def forget(self, daemonset_uid: str) -> None:
        self._emitted.pop(daemonset_uid, None)

    def is_new(self, daemonset: DaemonSetView, notice: Notice) -> bool:
        return notice.key not in self._emitted[daemonset.uid]

    async def emit(self, daemonset: DaemonSetView, notice: Notice) -> bool:
        """Create the Event unless this notice was emitted before; True if it was created."""
        if not self.is_new(daemonset, notice):
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
                "kind": "DaemonSet",
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
            log.warning("could not record event %s on %s: %s", notice.reason, daemonset.name, error)
            return False
        self._emitted[daemonset.uid].add(notice.key)
        return True
