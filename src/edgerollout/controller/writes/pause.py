"""A rollout paused when more nodes are broken than its failure budget tolerates (design §13.4)."""

from __future__ import annotations

import logging

from edgerollout.controller.writes.guard import WriteGuard
from edgerollout.domain.model import DaemonSetView
from edgerollout.domain.vocabulary import PAUSED_ANNOTATION
from edgerollout.kube.api import DAEMONSETS, MERGE, Api, ApiError
from edgerollout.kube.views import object_key
from edgerollout.logfields import LogFields

log = logging.getLogger("edgerollout.controller")


class RolloutPauser:
    def __init__(self, api: Api, guard: WriteGuard) -> None:
        self.api = api
        self.guard = guard

    async def pause(self, ds: DaemonSetView) -> bool:
        """Pause the DaemonSet's rollout (`edgerollout.io/paused: "true"`); False if the
        DaemonSet is gone. Any other refusal is raised: the key is retried with backoff, and the
        plan keeps deleting nothing meanwhile, paused or not."""
        self.guard.check()
        body = {"metadata": {"annotations": {PAUSED_ANNOTATION: "true"}}}
        try:
            await self.api.patch(
                DAEMONSETS, ds.name, body, namespace=ds.namespace, content_type=MERGE
            )
        except ApiError as error:
            if error.not_found:
                return False
            raise
        log.warning(
            "rollout paused: too many broken nodes",
            extra=LogFields(daemonset=object_key(ds.namespace, ds.name)),
        )
        return True
