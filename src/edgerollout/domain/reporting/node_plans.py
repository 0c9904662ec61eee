"""A plan, node by node: what `edgerollout plan` prints (design §12.6).

`node_plans` reads a `Plan` made by `reconcile.plan`, the function the controller runs, from a
`Snapshot`, and says for every node holding a pod of the DaemonSet what the controller would do
there now and why. It decides nothing itself: a row is only ever a reading of the plan's
deletions, verdicts, skipped nodes and holds, so the dry run cannot drift from the controller.

AdvancedRollingUpdate:

| action               | when                                                       |
|----------------------|------------------------------------------------------------|
| `delete now`         | the plan deletes the node's pod (why: the deletion's reason) |
| `skipped`            | the node is not Ready (why: its readiness)                  |
| `held`               | a staged rollout holds the node and its pod is not current  |
| `waiting for budget` | an available outdated pod, no room under max-unavailable    |
| `updated`            | its pod is current and available                            |
| `starting`           | its pod is current, not available yet                       |
| `broken`             | its pod is current and failing (why: the reason, since when) |
| `being replaced`     | no live pod: the old one is going, the new one not there    |
| `left to the native controller` | more than one pod on the node                   |
| `waiting`            | nothing is judged: no newest revision, or an invalid max-unavailable |

OTA: `updated`, `broken` (a node that upgraded itself into a failing pod), `held`,
`mark PodNeedUpgrade=True` (the plan writes it now), `upgrade offered` (marked already: the node
decides when), `delete now` (marked for longer than the OTA deadline), or `waiting` while paused or
an invalid value holds it.
"""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum

from edgerollout.domain.model import ConditionStatus, NodeName, NodeReadiness, PodView
from edgerollout.domain.planning.decision import Plan
from edgerollout.domain.planning.revisions import TargetRevision, is_current
from edgerollout.domain.planning.verdicts import NodeVerdict
from edgerollout.domain.spec.strategy import UpdateStrategy
from edgerollout.domain.timestamps import format_rfc3339
from edgerollout.domain.vocabulary import POD_NEED_UPGRADE


class Action(StrEnum):
    """What the controller would do on a node now."""

    DELETE_NOW = "delete now"
    SKIPPED = "skipped"
    HELD = "held"
    WAITING_FOR_BUDGET = "waiting for budget"
    UPDATED = "updated"
    STARTING = "starting"
    BROKEN = "broken"
    BEING_REPLACED = "being replaced"
    LEFT_TO_NATIVE = "left to the native controller"
    WAITING = "waiting"
    MARK = "mark PodNeedUpgrade=True"
    OFFERED = "upgrade offered"


@dataclass(frozen=True, slots=True, kw_only=True)
class NodePlan:
    """One node: its readiness, the pods of the DaemonSet on it, the action and why."""

    node: NodeName
    readiness: NodeReadiness
    pods: tuple[str, ...]
    action: Action
    why: str = ""


def node_plans(
    plan: Plan,
    *,
    pods_by_node: Mapping[NodeName, Sequence[PodView]],
    readiness: Mapping[NodeName, NodeReadiness],
) -> tuple[NodePlan, ...]:
    """Every node holding a pod of the DaemonSet, by name, with what `plan` does there."""
    rows = []
    for node in sorted(pods_by_node):
        pods = pods_by_node[node]
        ready = readiness.get(node, NodeReadiness.MISSING)
        action, why = _action(plan, node, pods, ready)
        rows.append(
            NodePlan(
                node=node,
                readiness=ready,
                pods=tuple(sorted(pod.name for pod in pods)),
                action=action,
                why=why,
            )
        )
    return tuple(rows)


def _action(
    plan: Plan, node: NodeName, pods: Sequence[PodView], ready: NodeReadiness
) -> tuple[Action, str]:
    if plan.strategy is None:
        return Action.WAITING, "not managed by edgerollout"
    if plan.strategy is UpdateStrategy.OTA:
        return _ota_action(plan, node, pods)
    rollout = plan.rollout
    if rollout is None:
        return Action.WAITING, "max-unavailable is invalid"
    if not rollout.newest_known:
        return Action.WAITING, "no newest revision known yet"
    for deletion in rollout.deletions:
        if deletion.node_name == node:
            return Action.DELETE_NOW, deletion.reason.value
    verdict = rollout.verdicts.get(node)
    if verdict is None:
        return Action.SKIPPED, f"node {ready.value}"
    hold = plan.holds.held.get(node)
    if verdict is NodeVerdict.UP_TO_DATE:
        return Action.UPDATED, ""
    if verdict is NodeVerdict.STARTING:
        return Action.STARTING, verdict.value
    if verdict is NodeVerdict.BROKEN:
        failing = rollout.broken.get(node)
        if failing is None:
            return Action.BROKEN, verdict.value
        return Action.BROKEN, f"{failing.reason} since {format_rfc3339(failing.since)}"
    if hold is not None:
        return Action.HELD, str(hold)
    if verdict is NodeVerdict.OUTDATED:
        used = f"{rollout.unavailable_after} of {rollout.max_unavailable} unavailable"
        return Action.WAITING_FOR_BUDGET, used
    if verdict is NodeVerdict.EMPTY:
        return Action.BEING_REPLACED, verdict.value
    return Action.LEFT_TO_NATIVE, verdict.value


def _ota_action(plan: Plan, node: NodeName, pods: Sequence[PodView]) -> tuple[Action, str]:
    for deletion in plan.deletions:  # past its OTA deadline: the controller upgrades it
        if deletion.node_name == node:
            return Action.DELETE_NOW, deletion.reason.value
    failing = plan.broken.get(node)
    if failing is not None:
        return Action.BROKEN, f"{failing.reason} since {format_rfc3339(failing.since)}"
    target = plan.target or TargetRevision(hash=None, template_generation=None)
    live = [pod for pod in pods if not pod.deleting]
    if live and all(is_current(pod, target) for pod in live):
        return Action.UPDATED, ""
    hold = plan.holds.held.get(node)
    if hold is not None:
        return Action.HELD, str(hold)
    names = {pod.name for pod in live}
    if any(write.name in names for write in plan.condition_writes):
        return Action.MARK, "an outdated pod, not marked yet"
    marked = any(
        (condition := pod.conditions.get(POD_NEED_UPGRADE)) is not None
        and condition.status is ConditionStatus.TRUE
        for pod in live
    )
    if marked:
        return Action.OFFERED, "the node upgrades through its agent when it decides"
    return Action.WAITING, "no newest revision known yet" if target.hash is None else ""
