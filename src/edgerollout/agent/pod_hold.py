"""The reads and the write behind the agent's `hold` verb (design §8.4).

A hold is taken on a pod of this node owned by a DaemonSet edgerollout rolls out, of either
strategy (`opted_in_pod`, read fresh from the API server as for `upgrade`), and written as the
pod's `edgerollout.io/UpgradeHeld` condition with a strategic-merge patch of `pods/status`,
preconditioned on the pod's UID (`write_hold`). What to write, or why not, is decided in
`domain/planning/hold_requests.py`.
"""

from __future__ import annotations

import logging
from typing import Any

from edgerollout.agent.pod_read import read_pod
from edgerollout.agent.refused import Refused
from edgerollout.domain.model import Condition, DaemonSetView, PodUID
from edgerollout.domain.planning.conditions import ConditionWrite
from edgerollout.domain.planning.hold_requests import not_opted_in
from edgerollout.domain.planning.ota_requests import PodFacts, Refusal, judge_placement
from edgerollout.domain.spec.strategy import choose_strategy
from edgerollout.domain.vocabulary import (
    AGENT_OWN_NODE_POLICY,
    DAEMONSET_KIND,
    HOLD_NOT_ADMITTED,
    UPGRADE_HELD,
)
from edgerollout.kube.api import DAEMONSETS, PODS, Api, ApiError
from edgerollout.kube.manifests import condition_patch
from edgerollout.kube.views import daemonset_from_api, object_uid, pod_facts_from_api
from edgerollout.logfields import LogFields

JSON = dict[str, Any]
log = logging.getLogger("edgerollout.agent")


async def opted_in_pod(
    api: Api, *, node_name: str, namespace: str, name: str
) -> tuple[JSON, PodFacts, DaemonSetView]:
    """The pod, read fresh, checked to be this node's and of an opted-in DaemonSet."""
    pod = await read_pod(api, namespace=namespace, name=name)
    facts = pod_facts_from_api(pod)
    refusal = judge_placement(facts, node_name=node_name)
    if refusal is not None:
        raise Refused(refusal)
    if facts.owner_kind != DAEMONSET_KIND or not facts.owner_name:
        owner = f"{facts.owner_kind} {facts.owner_name}" if facts.owner_kind else "nothing"
        raise Refused(not_opted_in(facts, f"is owned by {owner}, not by a DaemonSet"))
    try:
        owner_object = await api.get(DAEMONSETS, facts.owner_name, namespace=namespace)
    except ApiError as error:
        if error.not_found:
            why = f"belongs to DaemonSet {facts.owner_name}, which no longer exists"
            raise Refused(not_opted_in(facts, why)) from None
        raise
    daemonset = daemonset_from_api(owner_object).view
    choice = choose_strategy(
        annotations=daemonset.annotations,
        update_strategy_type=daemonset.update_strategy_type,
    )
    if choice.strategy is None:
        why = (
            f"belongs to DaemonSet {facts.owner_name}, which edgerollout does not roll out "
            "(no runnable update-strategy annotation, or not OnDelete)"
        )
        raise Refused(not_opted_in(facts, why))
    return pod, facts, daemonset


async def write_hold(
    api: Api, pod: JSON, facts: PodFacts, condition: Condition, sent: list[str]
) -> None:
    """Patch the pod's `UpgradeHeld` condition, with its UID as precondition. A policy
    that refuses the condition (installed before holds existed) is told apart: the change
    was refused, and the install is what to fix."""
    write = ConditionWrite(
        namespace=facts.namespace,
        name=facts.name,
        uid=PodUID(object_uid(pod)),
        condition=condition,
    )
    sent.append("hold")
    try:
        await api.patch(
            PODS,
            facts.name,
            condition_patch(write),
            namespace=facts.namespace,
            subresource="status",
        )
    except ApiError as error:
        if error.status in (403, 422) and AGENT_OWN_NODE_POLICY in error.message:
            log.warning(
                "hold: refused by the admission policy",
                extra=LogFields(pod=f"{facts.namespace}/{facts.name}", error=error.message),
            )
            raise Refused(
                Refusal(
                    503,
                    HOLD_NOT_ADMITTED,
                    f"the admission policy {AGENT_OWN_NODE_POLICY} does not let this agent "
                    f"write the {UPGRADE_HELD} condition (it was installed before holds "
                    "existed): nothing was changed; install the agent's identity of this "
                    "release (the Helm chart, or deploy/base)",
                )
            ) from None
        if error.conflict or error.not_found:
            raise Refused(
                Refusal(
                    409,
                    "PodChanged",
                    f"pod {facts.namespace}/{facts.name} changed meanwhile; list the pods again",
                )
            ) from None
        raise
