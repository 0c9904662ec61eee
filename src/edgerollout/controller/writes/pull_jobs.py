"""The plan's pull Jobs: created, reported on their pods once finished, and deleted."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from edgerollout.controller.rollout_state import RolloutState
from edgerollout.controller.writes.conditions import ConditionWriter
from edgerollout.controller.writes.guard import WriteGuard
from edgerollout.domain.model import DaemonSetView
from edgerollout.domain.planning.prepull import PrepullStep
from edgerollout.domain.vocabulary import POD_IMAGE_READY, PULL_IMAGE_FAIL, PULL_IMAGE_SUCCESS
from edgerollout.kube.api import JOBS, Api, ApiError
from edgerollout.kube.manifests import pull_job_manifest
from edgerollout.kube.views import object_key
from edgerollout.logfields import LogFields

log = logging.getLogger("edgerollout.controller")
# The reasons of a pull's outcome, as the controller reports it.
_REPORTS = frozenset({PULL_IMAGE_SUCCESS, PULL_IMAGE_FAIL})


class PullJobRunner:
    def __init__(self, api: Api, guard: WriteGuard, conditions: ConditionWriter) -> None:
        self.api = api
        self.guard = guard
        self.conditions = conditions

    async def run(
        self, ds: DaemonSetView, steps: Sequence[PrepullStep], state: RolloutState
    ) -> int:
        """Start the plan's pull Jobs, report finished ones on their pods and delete them; how
        many reports were written.

        A report is remembered until its echo is in the cache (`state.conditions`). The pod and
        the Job come from two watches, not ordered with each other: the Job's deletion can be
        seen before the report on the pod, and a plan then finds the pod still waiting for a
        pull without a Job. No Job is started again for a pod whose report is on its way."""
        written = 0
        for step in steps:
            pod = step.pod
            self.guard.check()
            reported = state.conditions.standing_reason(pod.uid, POD_IMAGE_READY) in _REPORTS
            if step.create_job is not None and not reported:
                try:
                    await self.api.create(
                        JOBS, pull_job_manifest(step.create_job), namespace=pod.namespace
                    )
                except ApiError as error:
                    if not error.conflict:  # 409: it exists already (a previous attempt)
                        raise
                log.debug(
                    "pre-pull Job started",
                    extra=LogFields(
                        daemonset=object_key(ds.namespace, ds.name),
                        pod=object_key(pod.namespace, pod.name),
                        node=pod.node_name or "",
                        revision=step.revision,
                    ),
                )
            if step.report is not None and await self.conditions.patch(step.report):
                state.conditions.sent(step.report)
                written += 1
                log.debug(
                    "pre-pull reported",
                    extra=LogFields(
                        daemonset=object_key(ds.namespace, ds.name),
                        pod=object_key(pod.namespace, pod.name),
                        revision=step.revision,
                        reason=step.report.condition.reason,
                    ),
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
