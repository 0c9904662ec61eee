"""Pod conditions written as `pods/status` patches, each once until its echo is in the cache."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from edgerollout.controller import metrics
from edgerollout.controller.rollout_state import RolloutState
from edgerollout.controller.writes.concurrency import send_concurrently
from edgerollout.controller.writes.guard import WriteGuard
from edgerollout.domain.model import DaemonSetView
from edgerollout.domain.planning.conditions import ConditionWrite
from edgerollout.kube.api import PODS, Api, ApiError
from edgerollout.kube.manifests import condition_patch
from edgerollout.kube.views import object_key
from edgerollout.logfields import LogFields

log = logging.getLogger("edgerollout.controller")


class ConditionWriter:
    def __init__(self, api: Api, guard: WriteGuard, *, at_once: int) -> None:
        self.api = api
        self.guard = guard
        self.at_once = at_once

    async def write(
        self, ds: DaemonSetView, writes: Sequence[ConditionWrite], state: RolloutState
    ) -> int:
        """Send the writes not already waiting for their echo; how many were written."""
        unsent = state.conditions.unsent(writes)
        results = await send_concurrently(
            lambda write: self._write_one(ds, write, state), unsent, at_once=self.at_once
        )
        return sum(results)

    async def _write_one(
        self, ds: DaemonSetView, write: ConditionWrite, state: RolloutState
    ) -> int:
        self.guard.check()
        if not await self.patch(write):
            return 0
        state.conditions.sent(write)
        log.debug(
            "condition written",
            extra=LogFields(
                daemonset=object_key(ds.namespace, ds.name),
                pod=object_key(write.namespace, write.name),
                condition=write.condition.type,
                status=str(write.condition.status),
                reason=write.condition.reason,
            ),
        )
        return 1

    async def patch(self, write: ConditionWrite) -> bool:
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
