"""A DaemonSet's rollout condition, written as a `daemonsets/status` patch (design §9.2).

The patch is a strategic merge of one entry of `status.conditions`, keyed by its type: the
DaemonSet controller's own status fields and any other condition stay as the API server has
them, and neither writer needs the other's resourceVersion, so neither makes the other retry.
When to write is the domain's (`rollout_condition.condition_change`); the state remembers what
was sent until the cache shows it.
"""

from __future__ import annotations

import logging
from datetime import datetime

from edgerollout.controller import metrics
from edgerollout.controller.rollout_state import RolloutState
from edgerollout.controller.writes.guard import WriteGuard
from edgerollout.domain.model import Condition
from edgerollout.domain.reporting.rollout_condition import SentCondition, condition_change
from edgerollout.domain.vocabulary import ROLLOUT_CONDITION
from edgerollout.kube.api import DAEMONSETS, Api, ApiError
from edgerollout.kube.manifests import rollout_condition_patch
from edgerollout.kube.views import CachedDaemonSet, object_key
from edgerollout.logfields import LogFields
from edgerollout.settings import ReconcileSettings

log = logging.getLogger("edgerollout.controller")


class RolloutConditionWriter:
    def __init__(self, api: Api, guard: WriteGuard, settings: ReconcileSettings) -> None:
        self.api = api
        self.guard = guard
        self.settings = settings

    async def update(
        self,
        cached: CachedDaemonSet,
        wanted: Condition | None,
        state: RolloutState | None,
        *,
        now: datetime,
    ) -> float | None:
        """Write `wanted` (None: remove the condition) if it is due; the seconds after which
        counts held back are due (None: nothing held back). `state`: the rollout's, None once
        it ended."""
        change = condition_change(
            wanted,
            shown=cached.rollout_condition,
            sent=None if state is None else state.rollout_condition,
            now=now,
            interval=self.settings.rollout_condition_interval,
            echo_timeout=self.settings.condition_write_timeout,
        )
        if change.write is None and not change.remove:
            return change.wait
        self.guard.check()
        ds = cached.view
        body = rollout_condition_patch(change.write, uid=ds.uid)
        try:
            await self.api.patch(
                DAEMONSETS, ds.name, body, namespace=ds.namespace, subresource="status"
            )
        except ApiError as error:
            if error.not_found or error.conflict:
                return None  # gone, or replaced under the same name: its successor is reconciled
            raise
        metrics.ROLLOUT_CONDITIONS_WRITTEN.inc()
        if state is not None:
            state.rollout_condition = SentCondition(condition=change.write, at=now)
        fields = LogFields(daemonset=object_key(ds.namespace, ds.name), condition=ROLLOUT_CONDITION)
        written = change.write
        if written is None:
            log.info("rollout condition removed", extra=fields)
        else:
            fields["status"] = str(written.status)
            fields["reason"] = written.reason
            log.info("rollout condition written", extra=fields)
        return None
