"""A DaemonSet's template put back to the previous revision's on failure (design §13.4.1).

The one write of a pod template the controller makes, so it is narrow and never overwrites a
person's change. As `kubectl rollout undo` does (its `DaemonSetRollbacker`), the restored
ControllerRevision's `data` — a strategic merge patch that replaces `spec.template` — is the
patch; before it, the DaemonSet is read afresh and must still carry the failed revision's
template and still ask for the rollback (`edgerollout.io/on-failure`), and the patch carries
that read's `resourceVersion`, so the API server refuses it (409) if anything changed in between.
The same update records the rollback (`edgerollout.io/rolled-back`), which the admission policy
requires and the next plans read.

Refused by the API server (403: the admission policy does not switch the namespace on; 422; or a
revision gone), the rollout pauses instead, with the Warnings `RolloutFailed` and
`RollbackNotAllowed` saying why: a rollback asked for and not made fails closed. A DaemonSet that
changed meanwhile is left alone: its change brings a new plan.
"""

from __future__ import annotations

import enum
import logging
from typing import Any

from edgerollout.controller.writes.events import EventWriter
from edgerollout.controller.writes.guard import WriteGuard
from edgerollout.controller.writes.pause import RolloutPauser
from edgerollout.domain.model import DaemonSetView
from edgerollout.domain.planning.rollback import Rollback
from edgerollout.domain.spec.on_failure import OnFailure, read_on_failure
from edgerollout.domain.vocabulary import ON_FAILURE_ANNOTATION, ROLLED_BACK_ANNOTATION
from edgerollout.kube.api import (
    CONTROLLER_REVISIONS,
    DAEMONSETS,
    JSON,
    STRATEGIC_MERGE,
    Api,
    ApiError,
)
from edgerollout.kube.views import object_key
from edgerollout.logfields import LogFields

log = logging.getLogger("edgerollout.controller")

# The strategic merge directive the DaemonSet controller puts in a revision's template.
_REPLACE = "$patch"


class RollbackResult(enum.Enum):
    ROLLED_BACK = "rolled back"
    CHANGED = "the DaemonSet changed meanwhile"
    GONE = "the DaemonSet is gone"
    PAUSED = "refused: paused instead"


class RolloutRollbacker:
    def __init__(
        self, api: Api, guard: WriteGuard, events: EventWriter, pauser: RolloutPauser
    ) -> None:
        self.api = api
        self.guard = guard
        self.events = events
        self.pauser = pauser

    async def roll_back(self, ds: DaemonSetView, rollback: Rollback) -> RollbackResult:
        """Put `ds`'s template back to `rollback.restored`'s, or pause the rollout if the API
        server refuses it. Any other failure is raised: the key is retried with backoff, and the
        plans delete nothing meanwhile (the failed revision is still the newest and broken)."""
        self.guard.check()
        try:
            current = await self.api.get(DAEMONSETS, ds.name, namespace=ds.namespace)
            failed = await self._template_of(ds, rollback.failed.name)
            restored = await self.api.get(
                CONTROLLER_REVISIONS, rollback.restored.name, namespace=ds.namespace
            )
        except ApiError as error:
            if error.not_found:
                return await self._refused(
                    ds, rollback, f"a revision or the DaemonSet is gone: {error}"
                )
            raise
        meta = current.get("metadata") or {}
        if (
            meta.get("uid") != ds.uid
            or not _asks_rollback(meta)
            or (current.get("spec") or {}).get("template") != failed
        ):
            # Its change brings a new plan; said, since until then nothing is deleted.
            log.info(
                "rollback not written: the daemonset changed since the plan",
                extra=LogFields(
                    daemonset=object_key(ds.namespace, ds.name), revision=rollback.record.failed
                ),
            )
            return RollbackResult.CHANGED
        patch = _patch(restored)
        if patch is None:
            return await self._refused(
                ds, rollback, f"revision {rollback.restored.name} holds no pod template"
            )
        patch["metadata"] = {
            "resourceVersion": meta.get("resourceVersion"),
            "annotations": {ROLLED_BACK_ANNOTATION: rollback.record.annotation()},
        }
        self.guard.check()
        try:
            await self.api.patch(
                DAEMONSETS, ds.name, patch, namespace=ds.namespace, content_type=STRATEGIC_MERGE
            )
        except ApiError as error:
            if error.not_found:
                return RollbackResult.GONE
            if error.conflict:
                return RollbackResult.CHANGED
            if error.status in (403, 422):
                return await self._refused(ds, rollback, f"the API server refused it: {error}")
            raise
        await self.events.emit(ds, rollback.notice)
        log.warning(
            "rollout rolled back: too many broken nodes",
            extra=LogFields(
                daemonset=object_key(ds.namespace, ds.name), revision=rollback.record.restored
            ),
        )
        return RollbackResult.ROLLED_BACK

    async def _template_of(self, ds: DaemonSetView, revision: str) -> Any:
        """The pod template a revision of `ds` holds (None: none)."""
        patch = _patch(await self.api.get(CONTROLLER_REVISIONS, revision, namespace=ds.namespace))
        if patch is None:
            return None
        template = dict(patch["spec"]["template"])
        template.pop(_REPLACE, None)
        return template

    async def _refused(self, ds: DaemonSetView, rollback: Rollback, why: str) -> RollbackResult:
        for notice in rollback.refused(why):
            await self.events.emit(ds, notice)
        await self.pauser.pause(ds)
        return RollbackResult.PAUSED


def _asks_rollback(meta: JSON) -> bool:
    """Whether the DaemonSet, as read now, still asks to roll back on failure."""
    annotations = meta.get("annotations") or {}
    return read_on_failure(annotations.get(ON_FAILURE_ANNOTATION)) is OnFailure.ROLLBACK


def _patch(revision: JSON) -> JSON | None:
    """A revision's `data` when it is what the DaemonSet controller writes: a patch of
    `spec.template` and nothing else (None otherwise: the controller writes nothing else)."""
    data = revision.get("data")
    if not isinstance(data, dict) or set(data) != {"spec"}:
        return None
    spec = data["spec"]
    if (
        not isinstance(spec, dict)
        or set(spec) != {"template"}
        or not isinstance(spec["template"], dict)
    ):
        return None
    return {"spec": {"template": dict(spec["template"])}}
