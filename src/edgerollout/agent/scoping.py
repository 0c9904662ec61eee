"""Whether the API server confines this agent's identity to its node, proven rather than assumed.

RBAC lets the agent's ServiceAccount delete any pod and patch any pod's status; only the admission
policy `edgerollout-agent-own-node` narrows that to the pods of the agent's own node, and its
status patch to the `PodImageReady` condition. A missing policy or binding (an API turned off, an
apply order, a partial install) narrows nothing, so the agent checks that it is in force: at
start-up, every `scoping_check_interval`, and again right before each upgrade or pre-pull; it
refuses to change anything until it is.

The probe is a `dryRun=All` strategic-merge patch of `pods/status` on any pod of this node that
adds the label `edgerollout.io/scoping-probe` (the status rule), then, if one exists, a `dryRun=All`
delete of a pod on another node (the node rule, which also guards deletes): the policy must deny
both, naming itself. The outcomes of each:

| answer to the probe                     | verdict                                       |
|-----------------------------------------|-----------------------------------------------|
| 403/422 naming the policy               | enforced                                      |
| accepted (200)                          | not enforced                                  |
| any other 4xx (RBAC, another policy)    | not enforced: the policy's denial is not seen |
| unreachable, 5xx, no pod on the node    | no verdict: the last one stands (at start-up: |
|                                         | not enforced)                                 |

Nothing is ever stored: with `dryRun=All` the API server runs admission and stops.
"""

from __future__ import annotations

import asyncio
import datetime
import logging
import uuid
from collections.abc import Awaitable, Iterable
from dataclasses import dataclass
from typing import Any

from edgerollout.agent import metrics
from edgerollout.agent.node_pods import NodePods
from edgerollout.domain.events import event_message
from edgerollout.domain.vocabulary import (
    AGENT_OWN_NODE_POLICY,
    NODE_SCOPING_NOT_ENFORCED,
    SCOPING_PROBE_LABEL,
)
from edgerollout.kube.api import EVENTS, PODS, Api, ApiError
from edgerollout.kube.views import namespaced_name
from edgerollout.logfields import LogFields

JSON = dict[str, Any]
COMPONENT = "edgerollout-agent"

ENFORCED = metrics.ENFORCED

log = logging.getLogger("edgerollout.agent")


@dataclass(frozen=True, slots=True)
class Verdict:
    enforced: bool
    detail: str


PROBE_PATCH: JSON = {"metadata": {"labels": {SCOPING_PROBE_LABEL: "true"}}}
NOT_PROVEN_YET = "not proven yet: no pod of this node has been probed"


def judge_probe(error: ApiError | None, *, probe: str = "a status patch") -> Verdict | None:
    """The verdict on one probe's answer (`None` for an accepted request); None: no verdict."""
    if error is None:
        return Verdict(
            False,
            f"the API server accepted {probe} that the admission policy "
            f"{AGENT_OWN_NODE_POLICY} must deny: the policy or its binding is missing",
        )
    if error.status in (403, 422) and AGENT_OWN_NODE_POLICY in error.message:
        return Verdict(True, f"the admission policy {AGENT_OWN_NODE_POLICY} is in force")
    if error.status == 0 or error.status >= 500 or error.not_found:
        return None
    return Verdict(
        False,
        f"the API server refused the probe with {error.status} {error.reason} without naming "
        f"the admission policy {AGENT_OWN_NODE_POLICY}: {error.message}",
    )


async def _answer(request: Awaitable[object]) -> ApiError | None:
    """The API server's refusal of `request`, or None if it was accepted."""
    try:
        await request
    except ApiError as error:
        return error
    return None


class NodeScoping:
    """The last verdict, read by the HTTP routes and /readyz, shown in /metrics."""

    def __init__(self, *, enforced: bool = False, detail: str = NOT_PROVEN_YET) -> None:
        self.verdict = Verdict(enforced, detail)
        ENFORCED.set(1 if enforced else 0)

    @property
    def enforced(self) -> bool:
        return self.verdict.enforced

    def record(self, verdict: Verdict) -> bool:
        """Keep `verdict`; True if it changed whether scoping is enforced."""
        changed = verdict.enforced != self.verdict.enforced
        self.verdict = verdict
        ENFORCED.set(1 if verdict.enforced else 0)
        return changed


class ScopingProbe:
    """Probes through `api` with a pod of `node_name` taken from `pods`, and reports the verdict."""

    def __init__(self, api: Api, scoping: NodeScoping, *, node_name: str) -> None:
        self.api = api
        self.scoping = scoping
        self.node_name = node_name
        self._reported = False
        # A pod on another node, for the node rule's probe (None: look for one).
        self._elsewhere: JSON | None = None

    async def check(self, pods: Iterable[JSON]) -> Verdict | None:
        pod = next(iter(pods), None)
        if pod is None:
            log.info("scoping probe: no pod on this node yet", extra=LogFields(node=self.node_name))
            return None
        namespace, name = namespaced_name(pod)
        answer = await _answer(
            self.api.patch(
                PODS, name, PROBE_PATCH, namespace=namespace, subresource="status", dry_run=True
            )
        )
        verdict = judge_probe(answer)
        if verdict is not None and verdict.enforced:
            # The label rule holds; the node rule must too. Without a verdict from that probe
            # (no pod elsewhere, no answer) the first one stands.
            verdict = await self._probe_another_node() or verdict
        if verdict is None:
            log.info(
                "scoping probe: no verdict, the last one stands",
                extra=LogFields(node=self.node_name, error=answer.message if answer else ""),
            )
            return None
        changed = self.scoping.record(verdict)
        if verdict.enforced:
            if changed:
                log.info("node scoping is enforced", extra=LogFields(node=self.node_name))
            self._reported = False
        else:
            log.warning(
                "node scoping is NOT enforced: refusing every change",
                extra=LogFields(node=self.node_name, error=verdict.detail),
            )
            if not self._reported:
                self._reported = await self._report(verdict)
        return verdict

    async def _probe_another_node(self) -> Verdict | None:
        """A dry-run delete of a pod on another node, which the policy's node rule must deny;
        None: no such pod, or no answer. The pod found is kept for the next probes, until it is
        gone (one list per pod, not per probe)."""
        if self._elsewhere is None:
            try:
                page = await self.api.list(
                    PODS, field_selector=f"spec.nodeName!={self.node_name}", limit=1
                )
            except ApiError:
                return None
            self._elsewhere = next(iter(page.items), None)
            if self._elsewhere is None:
                return None
        other = self._elsewhere
        namespace, name = namespaced_name(other)
        uid = other["metadata"].get("uid")
        answer = await _answer(
            self.api.delete(PODS, name, namespace=namespace, uid=uid, dry_run=True)
        )
        if answer is not None and (answer.not_found or answer.conflict):
            # Gone, or replaced under its name: another pod is found next time.
            self._elsewhere = None
            return None
        where = other.get("spec", {}).get("nodeName") or "no node"
        return judge_probe(answer, probe=f"a delete of {namespace}/{name}, a pod on {where},")

    async def _report(self, verdict: Verdict) -> bool:
        """A Warning Event on this node, once per time scoping is lost; True if it was written."""
        stamp = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        body = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {
                "name": f"{self.node_name}.{uuid.uuid4().hex[:16]}",
                "namespace": "default",
            },
            "involvedObject": {"apiVersion": "v1", "kind": "Node", "name": self.node_name},
            "type": "Warning",
            "reason": NODE_SCOPING_NOT_ENFORCED,
            "message": event_message(
                f"the edgerollout agent refuses every change: {verdict.detail}"
            ),
            "source": {"component": COMPONENT, "host": self.node_name},
            "reportingComponent": COMPONENT,
            "reportingInstance": self.node_name,
            "firstTimestamp": stamp,
            "lastTimestamp": stamp,
            "count": 1,
        }
        try:
            await self.api.create(EVENTS, body, namespace="default")
        except ApiError as error:
            log.warning(
                "could not record event",
                extra=LogFields(
                    node=self.node_name, reason=NODE_SCOPING_NOT_ENFORCED, error=str(error)
                ),
            )
            return False
        return True

    async def run(self, pods: NodePods, *, interval: float, retry: float) -> None:
        """Probe every `interval` seconds with a pod of the node's cache, until cancelled; while
        there is no verdict (no pod yet, no answer), again after `retry` seconds."""
        while True:
            verdict = await self.check(pods.pods())
            await asyncio.sleep(interval if verdict is not None else min(interval, retry))
