"""The judge of a recorded run: each promise of an AdvancedRollingUpdate, checked at every
deletion the controller made (the rules are in the package's docstring).

The staging rules (`paused`, `partition`) judge a deletion by the audit log's time of its request
against the annotations as the DaemonSet's watch delivered them. A deletion the controller decided
from a view a moment older than an annotation write (it was in flight when the pause or a higher
partition arrived), or a moment newer than the watcher's (the watcher had not yet seen the resume
or a lower partition), is not a broken promise. So a hold counts against a deletion only when the
watcher saw it in force throughout the `grace` seconds before the request and the `grace` seconds
after it: the pause visible for more than `grace` already, and not lifted within `grace` after.
Nothing is held against a deletion within `grace` of a spell when the DaemonSet's watch was down
(its changes then are dated late: a hold lifted meanwhile would seem to last until the listing).
"""

from __future__ import annotations

import operator
from functools import partial

from edgerollout.domain.vocabulary import (
    ADVANCED_ROLLING_UPDATE,
    LEGACY_AUTO,
    PARTITION_ANNOTATION,
    PAUSED_ANNOTATION,
    SUCCESSFUL_DELETE,
)
from tests.e2e.support.invariants.history import AuditedDeletion, History, PodLife
from tests.e2e.support.invariants.holds import is_paused, partition_holds
from tests.e2e.support.invariants.judge_holds import batch_violations, node_hold_violations
from tests.e2e.support.invariants.timeline import clock
from tests.e2e.support.invariants.violation import Violation

__all__ = ["Violation", "violations"]

# The recorder keeps the strategy annotation stripped and lower-cased, as the controller reads it.
DECIDED_STRATEGIES = (ADVANCED_ROLLING_UPDATE.lower(), LEGACY_AUTO.lower())


def violations(
    history: History, *, budget: int, min_ready_seconds: float, grace: float
) -> list[Violation]:
    """Every broken promise in the history, oldest first; a state counts against a deletion
    only when it held from `grace` seconds before it to `grace` seconds after it."""
    found: list[Violation] = []
    by_uid = {life.uid: life for life in history.pods.values()}
    accepted_by_uid: dict[str, list[AuditedDeletion]] = {}
    own: list[tuple[float, str]] = []  # (when, node) of the controller's accepted deletions
    for deletion in history.controller_deletions:
        pod_ref = f"pod {deletion.namespace}/{deletion.name}"
        if deletion.uid_precondition is None:
            found.append(
                Violation(
                    deletion.at,
                    "uid-precondition",
                    f"{pod_ref} was deleted without a UID precondition",
                    (pod_ref,),
                )
            )
        life = by_uid.get(deletion.uid_precondition or "")
        if life is None:
            matches = [p for p in history.pods.values() if p.name == deletion.name]
            life = matches[-1] if matches else None
        if not deletion.maybe_applied:
            continue
        if life is None:
            found.append(
                Violation(
                    deletion.at,
                    "not-decided",
                    f"{pod_ref} was deleted but never seen on a node",
                    (pod_ref,),
                )
            )
            continue
        objects = (f"{pod_ref} (uid {life.uid})", f"node {life.node}")
        earlier = accepted_by_uid.setdefault(life.uid, [])
        if earlier and deletion.accepted:
            # Two deletions the API server said it made. (A retry after a deletion that was
            # cut off, whose outcome the controller could not know, is not a second decision.)
            found.append(
                Violation(
                    deletion.at,
                    "deleted-twice",
                    f"{pod_ref} deleted again ({len(earlier) + 1} accepted deletions, the "
                    f"first at {clock(earlier[0].at)})",
                    objects,
                )
            )
        if deletion.accepted:
            earlier.append(deletion)
        at = deletion.at
        if history.node_ready[life.node].throughout(
            at - grace, at + grace, lambda r: r is not True
        ):
            found.append(
                Violation(
                    at,
                    "not-ready-node",
                    f"{pod_ref} deleted while node {life.node} was not Ready",
                    objects,
                )
            )
        if history.ds_strategy.throughout(
            at - grace, at + grace, lambda s: s not in DECIDED_STRATEGIES
        ):
            found.append(
                Violation(
                    at,
                    "not-decided",
                    f"{pod_ref} deleted while the DaemonSet's strategy was "
                    f"{history.ds_strategy.at(at)!r}",
                    objects,
                )
            )
        if history.ds_image.throughout(at - grace, at + grace, partial(operator.eq, life.images)):
            found.append(
                Violation(
                    at,
                    "not-decided",
                    f"{pod_ref} deleted although it runs the DaemonSet's current template "
                    f"{list(life.images)}",
                    objects,
                )
            )
        found += _staging_violations(history, deletion, life, objects, grace)
        found += node_hold_violations(history, deletion, life, objects, grace)
        found += batch_violations(history, deletion, life, objects, grace, min_ready_seconds)
        # Available through the moment before it (at the deletion it stops being live).
        if life.available_before_deletion(at - grace, at, grace, min_ready_seconds):
            others = [
                node
                for node in history.nodes
                if node != life.node
                and history.ready_throughout(node, at - grace, at + grace)
                and (
                    history.unavailable_throughout(node, at - grace, at + grace, min_ready_seconds)
                    or any(
                        n == node
                        and history.unavailable_throughout(node, when, at, min_ready_seconds)
                        for when, n in own
                    )
                )
            ]
            if len(others) >= budget:
                found.append(
                    Violation(
                        at,
                        "budget",
                        f"{pod_ref} (available) deleted while {len(others)} other Ready "
                        f"node(s) were unavailable; max-unavailable is {budget}",
                        (*objects, *(f"unavailable node {node}" for node in others)),
                    )
                )
        own.append((at, life.node))
    found += _event_violations(history, accepted_by_uid)
    return sorted(found, key=lambda v: v.at)


def _staging_violations(
    history: History,
    deletion: AuditedDeletion,
    life: PodLife,
    objects: tuple[str, ...],
    grace: float,
) -> list[Violation]:
    """A deletion while the DaemonSet was paused, or of a pod on a node its partition held (the
    rule for the race with an annotation write is in the module's docstring)."""
    at = deletion.at
    start, end = at - grace, at + grace
    if any(lost <= end and start <= found for lost, found in history.ds_unseen):
        return []
    found: list[Violation] = []
    pod_ref = f"pod {deletion.namespace}/{deletion.name}"
    if history.ds_paused.throughout(start, end, is_paused):
        found.append(
            Violation(
                at,
                "paused",
                f"{pod_ref} deleted while the DaemonSet was paused ({PAUSED_ANNOTATION} "
                f"{history.ds_paused.at(at)!r} since {clock(history.ds_paused.since(at))})",
                objects,
            )
        )

    def holds_the_node(raw: str | None) -> bool:
        return life.node in partition_holds(raw, history.nodes)

    if history.ds_partition.throughout(start, end, holds_the_node):
        raw = history.ds_partition.at(at)
        held = sorted(partition_holds(raw, history.nodes))
        found.append(
            Violation(
                at,
                "partition",
                f"{pod_ref} deleted on node {life.node}, held by {PARTITION_ANNOTATION} {raw!r} "
                f"since {clock(history.ds_partition.since(at))} (it holds {', '.join(held)})",
                objects,
            )
        )
    return found


def _event_violations(
    history: History, accepted: dict[str, list[AuditedDeletion]]
) -> list[Violation]:
    found: list[Violation] = []
    names = {history.name_of(uid): deletions[0] for uid, deletions in accepted.items() if deletions}
    seen: dict[str, str] = {}
    for event_name, report in sorted(history.reported.items(), key=lambda kv: kv[1]["at"]):
        pod = report["pod"]
        objects = (f"event {event_name}", f"pod {history.namespace}/{pod}")
        if report["count"] > 1 or pod in seen:
            found.append(
                Violation(
                    report["at"],
                    "deleted-twice",
                    f"pod {pod} reported deleted more than once",
                    objects,
                )
            )
        seen[pod] = event_name
        if pod not in names:
            found.append(
                Violation(
                    report["at"],
                    "not-decided",
                    f"{SUCCESSFUL_DELETE} names pod {pod}, which the controller did not delete",
                    objects,
                )
            )
    return found
