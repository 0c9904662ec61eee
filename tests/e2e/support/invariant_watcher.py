"""An observer of edgerollout's promises that shares nothing with the controller's code.

It keeps its own watches on the namespace's pods, the cluster's Nodes, the namespace's DaemonSets
and Events, and tails the API server's audit log (the lab records every pod deletion there, with
its user and its DeleteOptions). After the run, `violations()` holds the record against the
promises of an AdvancedRollingUpdate:

1. `budget`: a deletion of an available pod is made only while fewer than max-unavailable other
   Ready nodes are unavailable (the rule SPEC §4 states at the moment of each deletion);
2. `not-ready-node`: no pod is deleted on a node that is not Ready;
3. `uid-precondition`, `deleted-twice`, `not-decided`: every deletion carries the pod's UID as a
   precondition, no pod is deleted twice, and no pod is deleted that the rules do not pick (a
   current pod, or any pod while the DaemonSet is not AdvancedRollingUpdate); every
   `SuccessfulDelete` Event names a pod the controller deleted, once.

The controller's view of the cluster lags or leads the watcher's by a moment, so a state counts
against a deletion only when it held from `grace` seconds before it to `grace` seconds after it —
except the controller's own earlier deletions, which it always knows about. The deleted pod itself
counts as available only if it was from `grace` seconds before its deletion until its own watch
delivered the deletion: that watch keeps the API server's order, so a change it delivered first
came first, even if it arrived after the audit log's time of the deletion request. Times are
wall-clock seconds: watch events when they arrived, corrected by the objects' own transition times
when a watch was interrupted, and the audit log's request times for deletions.
"""

from __future__ import annotations

import asyncio
import bisect
import contextlib
import datetime
import json
import logging
import operator
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from kubernetes_asyncio import client, watch

log = logging.getLogger(__name__)

STRATEGY = "apps.openyurt.io/update-strategy"
ADVANCED = "advancedrollingupdate"
CONTROLLER_COMPONENT = "edgerollout-controller"


def clock(at: float) -> str:
    return datetime.datetime.fromtimestamp(at, datetime.UTC).strftime("%H:%M:%S.%f")[:-3]


@dataclass(frozen=True, slots=True)
class Violation:
    """A broken promise: when, which invariant, what happened, and the objects involved."""

    at: float
    invariant: str
    message: str
    objects: tuple[str, ...]

    def __str__(self) -> str:
        return f"{clock(self.at)} [{self.invariant}] {self.message} ({', '.join(self.objects)})"


class Timeline:
    """A value over time: the changes, each from its moment on."""

    def __init__(self) -> None:
        self.times: list[float] = []
        self.values: list[Any] = []

    def set(self, at: float, value: Any) -> None:
        if self.values and self.values[-1] == value:
            return
        # A correction to an earlier moment (an interrupted watch) never reorders the past.
        at = max(at, self.times[-1]) if self.times else at
        self.times.append(at)
        self.values.append(value)

    def at(self, moment: float, default: Any = None) -> Any:
        index = bisect.bisect_right(self.times, moment) - 1
        return self.values[index] if index >= 0 else default

    def throughout(self, start: float, end: float, check: Callable[[Any], bool]) -> bool:
        """Whether `check` holds for the value at every moment of [start, end]."""
        if not check(self.at(start)):
            return False
        first = bisect.bisect_right(self.times, start)
        last = bisect.bisect_right(self.times, end)
        return all(check(value) for value in self.values[first:last])

    def changes_between(self, start: float, end: float) -> list[float]:
        first = bisect.bisect_right(self.times, start)
        last = bisect.bisect_right(self.times, end)
        return self.times[first:last]


@dataclass
class PodLife:
    uid: str
    name: str
    node: str
    images: tuple[str, ...]
    seen: float
    ready: Timeline = field(default_factory=Timeline)
    """None while not Ready; while Ready, the condition's lastTransitionTime (whole seconds)."""
    deleting_at: float | None = None
    deletion_seen: float | None = None
    """When the pod watch delivered the deletion (`deleting_at` may be the audit log's earlier time)."""

    def live_at(self, at: float) -> bool:
        return self.seen <= at and (self.deleting_at is None or at < self.deleting_at)

    def available_at(self, at: float, min_ready_seconds: float) -> bool:
        return self.live_at(at) and self._ready_for(at, min_ready_seconds)

    def _ready_for(self, at: float, min_ready_seconds: float) -> bool:
        # Kubernetes' own definition of available: Ready, and since minReadySeconds at least.
        since = self.ready.at(at)
        return since is not None and since + min_ready_seconds <= at

    def available_before_deletion(
        self, start: float, at: float, grace: float, min_ready_seconds: float
    ) -> bool:
        """Available from `start` until its deletion at `at`, as its own watch tells.

        The watch delivers a pod's changes in the order the API server made them, a moment later
        (the controller may see them sooner): a change delivered before the deletion came before
        it, even if it arrived after `at` (up to `grace` after)."""
        end = at - 0.001
        if self.deletion_seen is not None:
            end = min(max(end, self.deletion_seen - 0.001), at + grace)
        points = [start, end, *self.ready.changes_between(start, end)]
        return (
            self.live_at(start)
            and self.live_at(at - 0.001)
            and all(self._ready_for(point, min_ready_seconds) for point in points)
        )

    def change_points(self, min_ready_seconds: float) -> list[float]:
        points = [self.seen, *self.ready.times]
        points += [v + min_ready_seconds for v in self.ready.values if v is not None]
        if self.deleting_at is not None:
            points.append(self.deleting_at)
        return points


@dataclass(frozen=True, slots=True)
class AuditedDeletion:
    at: float
    namespace: str
    name: str
    user: str
    code: int
    uid_precondition: str | None

    @property
    def accepted(self) -> bool:
        return 200 <= self.code <= 299

    @property
    def maybe_applied(self) -> bool:
        """Accepted, or cut off: the client went away mid-request (the API server logs a 504
        "context canceled") and the deletion may have been applied all the same."""
        return self.accepted or self.code == 504


def _condition(obj: Any, kind: str) -> Any:
    for condition in (obj.status.conditions if obj.status else None) or []:
        if condition.type == kind:
            return condition
    return None


def _transition(observed: float, condition: Any, *, late: bool, late_after: float = 2.0) -> float:
    """When a condition changed: when we saw it, unless we saw it late (after a watch was down:
    then, by the condition's own transition time, if that is earlier)."""
    since = getattr(condition, "last_transition_time", None)
    if since is None or not late:
        return observed
    # Transition times have whole seconds: the change happened within the second after it.
    upper = float(since.timestamp()) + 1.0
    return upper if observed - upper > late_after else observed


def _parse_time(text: str) -> float:
    return datetime.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


class InvariantWatcher:
    """Watch one namespace's rollout and the Nodes; `violations()` judges what was recorded."""

    def __init__(
        self,
        core: client.CoreV1Api,
        apps: client.AppsV1Api,
        namespace: str,
        *,
        daemonset: str,
        selector: str,
        nodes: list[str],
        audit_log: Path,
        controller_user: str = "lab-admin",
        grace: float = 1.0,
    ) -> None:
        self.core = core
        self.apps = apps
        self.namespace = namespace
        self.daemonset = daemonset
        self.selector = selector
        self.nodes = sorted(nodes)
        self.audit_log = audit_log
        self.controller_user = controller_user
        self.grace = grace
        self.pods: dict[str, PodLife] = {}
        self.node_ready: dict[str, Timeline] = {name: Timeline() for name in self.nodes}
        self.ds_image: Timeline = Timeline()
        self.ds_strategy: Timeline = Timeline()
        self.deletions: list[AuditedDeletion] = []
        self.reported: dict[str, dict[str, Any]] = {}
        """Event name -> (pod, node, count, instance) of each SuccessfulDelete Event."""
        self.interruptions = 0
        self.started_at = 0.0
        self._audit_offset = audit_log.stat().st_size if audit_log.exists() else 0
        self._tasks: list[asyncio.Task[None]] = []
        self._watches: list[Any] = []

    # --- recording -------------------------------------------------------------------------

    async def start(self) -> None:
        """List everything once (the first recorded state), then follow each kind."""
        self.started_at = time.time()
        followers: list[tuple[str, Callable[..., Any], tuple[Any, ...], dict[str, Any]]] = [
            (
                "pods",
                self.core.list_namespaced_pod,
                (self.namespace,),
                {"label_selector": self.selector},
            ),
            ("nodes", self.core.list_node, (), {}),
            (
                "daemonsets",
                self.apps.list_namespaced_daemon_set,
                (self.namespace,),
                {"field_selector": f"metadata.name={self.daemonset}"},
            ),
            ("events", self.core.list_namespaced_event, (self.namespace,), {}),
        ]
        for name, lister, args, kwargs in followers:
            version = await self._list(name, lister, args, kwargs)
            self._tasks.append(
                asyncio.create_task(
                    self._follow(name, lister, args, kwargs, version), name=f"invariants-{name}"
                )
            )
        self._tasks.append(asyncio.create_task(self._tail_audit(), name="invariants-audit"))

    async def stop(self) -> None:
        """Read what is left of the audit log, then stop every watch."""
        await asyncio.sleep(0.3)
        self._read_audit()
        for stream in self._watches:
            stream.stop()
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks.clear()

    async def _list(
        self,
        kind: str,
        lister: Callable[..., Any],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        *,
        late: bool = False,
    ) -> str:
        listed = await lister(*args, **kwargs)
        now = time.time()
        if kind == "pods":
            present = {pod.metadata.uid for pod in listed.items}
            for uid, life in self.pods.items():
                if uid not in present and life.deleting_at is None:
                    life.deleting_at = now  # deleted while the watch was down
        if kind == "nodes":
            present = {node.metadata.name for node in listed.items}
            for name, timeline in self.node_ready.items():
                if name not in present:
                    timeline.set(now, False)
        if kind == "daemonsets" and not listed.items:
            self.ds_image.set(now, None)
            self.ds_strategy.set(now, None)
        for item in listed.items:
            self._apply(kind, "ADDED", item, now, late=late)
        return str(listed.metadata.resource_version)

    async def _follow(
        self,
        kind: str,
        lister: Callable[..., Any],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        version: str,
    ) -> None:
        while True:
            stream = watch.Watch()
            self._watches.append(stream)
            try:
                async for event in stream.stream(lister, *args, resource_version=version, **kwargs):
                    self._apply(kind, event["type"], event["object"], time.time())
                    if event["type"] in ("ADDED", "MODIFIED", "DELETED"):
                        version = event["object"].metadata.resource_version
            except asyncio.CancelledError:
                raise
            except Exception as error:
                # The API server restarted, or the version expired (410 Gone): list again.
                self.interruptions += 1
                log.info("invariant watch of %s interrupted: %s", kind, error)
                await asyncio.sleep(0.5)
                with contextlib.suppress(Exception):
                    version = await self._list(kind, lister, args, kwargs, late=True)
            finally:
                self._watches.remove(stream)
                await stream.close()

    def _apply(self, kind: str, event: str, obj: Any, now: float, *, late: bool = False) -> None:
        if event not in ("ADDED", "MODIFIED", "DELETED"):
            return  # BOOKMARK, or an ERROR object the loop above answers by listing again
        if kind == "pods":
            self._apply_pod(event, obj, now, late=late)
        elif kind == "nodes":
            name = obj.metadata.name
            if name in self.node_ready:
                condition = _condition(obj, "Ready")
                ready = event != "DELETED" and condition is not None and condition.status == "True"
                at = now if condition is None else _transition(now, condition, late=late)
                self.node_ready[name].set(now if event == "DELETED" else at, ready)
        elif kind == "daemonsets":
            if event == "DELETED":
                self.ds_image.set(now, None)
                self.ds_strategy.set(now, None)
                return
            containers = obj.spec.template.spec.containers
            self.ds_image.set(now, tuple(c.image for c in containers))
            annotations = obj.metadata.annotations or {}
            strategy = annotations.get(STRATEGY)
            self.ds_strategy.set(now, None if strategy is None else strategy.strip().lower())
        elif (
            kind == "events"
            and event != "DELETED"
            and obj.reason == "SuccessfulDelete"
            and obj.reporting_component == CONTROLLER_COMPONENT
        ):
            message = str(obj.message or "")
            pod, _, rest = message.removeprefix("Deleted pod: ").partition(" on node ")
            self.reported[obj.metadata.name] = {
                "pod": pod,
                "node": rest.partition(":")[0],
                "count": int(obj.count or 1),
                "instance": obj.reporting_instance,
                "at": now,
            }

    def _apply_pod(self, event: str, pod: Any, now: float, *, late: bool) -> None:
        uid = pod.metadata.uid
        life = self.pods.get(uid)
        if life is None:
            if event == "DELETED" or not pod.spec.node_name:
                return
            life = PodLife(
                uid=uid,
                name=pod.metadata.name,
                node=pod.spec.node_name,
                images=tuple(c.image for c in pod.spec.containers),
                seen=now,
            )
            self.pods[uid] = life
        if pod.metadata.deletion_timestamp is not None or event == "DELETED":
            if life.deleting_at is None:
                life.deleting_at = now
            if life.deletion_seen is None:
                life.deletion_seen = now
            return
        condition = _condition(pod, "Ready")
        ready = condition is not None and condition.status == "True"
        at = now if condition is None else _transition(now, condition, late=late)
        since = None
        if ready:
            stamp = condition.last_transition_time
            since = float(stamp.timestamp()) if stamp is not None else at
        if not life.ready.times and since is not None:
            # Listed Ready: Ready since its transition time (it may be available already).
            at = min(at, since)
            life.seen = min(life.seen, at)
        life.ready.set(at, since)

    async def _tail_audit(self) -> None:
        while True:
            self._read_audit()
            await asyncio.sleep(0.2)

    def _read_audit(self) -> None:
        if not self.audit_log.exists():
            return
        with self.audit_log.open("rb") as handle:
            handle.seek(self._audit_offset)
            data = handle.read()
        end = data.rfind(b"\n") + 1
        self._audit_offset += end
        for line in data[:end].splitlines():
            entry = json.loads(line)
            ref = entry.get("objectRef") or {}
            if (
                entry.get("verb") != "delete"
                or ref.get("resource") != "pods"
                or ref.get("subresource")
                or ref.get("namespace") != self.namespace
            ):
                continue
            options = entry.get("requestObject") or {}
            deletion = AuditedDeletion(
                at=_parse_time(entry["requestReceivedTimestamp"]),
                namespace=ref["namespace"],
                name=ref.get("name", ""),
                user=(entry.get("user") or {}).get("username", ""),
                code=int((entry.get("responseStatus") or {}).get("code") or 0),
                uid_precondition=(options.get("preconditions") or {}).get("uid"),
            )
            self.deletions.append(deletion)
            if deletion.maybe_applied:
                for life in self.pods.values():
                    if (
                        life.name == deletion.name
                        and deletion.uid_precondition in (None, life.uid)
                        and (life.deleting_at is None or deletion.at < life.deleting_at)
                    ):
                        life.deleting_at = deletion.at

    # --- judging ---------------------------------------------------------------------------

    @property
    def controller_deletions(self) -> list[AuditedDeletion]:
        return sorted(
            (d for d in self.deletions if d.user == self.controller_user), key=lambda d: d.at
        )

    def _pods_on(self, node: str) -> list[PodLife]:
        return [life for life in self.pods.values() if life.node == node]

    def node_available_at(self, node: str, at: float, min_ready_seconds: float) -> bool:
        live = [life for life in self._pods_on(node) if life.live_at(at)]
        return len(live) == 1 and live[0].available_at(at, min_ready_seconds)

    def _unavailable_throughout(
        self, node: str, start: float, end: float, min_ready_seconds: float
    ) -> bool:
        points = [start, end] + [
            p
            for life in self._pods_on(node)
            for p in life.change_points(min_ready_seconds)
            if start < p < end
        ]
        return not any(self.node_available_at(node, p, min_ready_seconds) for p in points)

    def _ready_throughout(self, node: str, start: float, end: float) -> bool:
        return bool(self.node_ready[node].throughout(start, end, lambda ready: ready is True))

    def violations(self, *, budget: int, min_ready_seconds: float) -> list[Violation]:
        found: list[Violation] = []
        grace = self.grace
        by_uid = {life.uid: life for life in self.pods.values()}
        accepted_by_uid: dict[str, list[AuditedDeletion]] = {}
        own: list[tuple[float, str]] = []  # (when, node) of the controller's accepted deletions
        for deletion in self.controller_deletions:
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
                matches = [p for p in self.pods.values() if p.name == deletion.name]
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
            if self.node_ready[life.node].throughout(
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
            if self.ds_strategy.throughout(
                at - grace, at + grace, lambda s: s not in (ADVANCED, "auto")
            ):
                found.append(
                    Violation(
                        at,
                        "not-decided",
                        f"{pod_ref} deleted while the DaemonSet's strategy was "
                        f"{self.ds_strategy.at(at)!r}",
                        objects,
                    )
                )
            if self.ds_image.throughout(at - grace, at + grace, partial(operator.eq, life.images)):
                found.append(
                    Violation(
                        at,
                        "not-decided",
                        f"{pod_ref} deleted although it runs the DaemonSet's current template "
                        f"{list(life.images)}",
                        objects,
                    )
                )
            # Available through the moment before it (at the deletion it stops being live).
            if life.available_before_deletion(at - grace, at, grace, min_ready_seconds):
                others = [
                    node
                    for node in self.nodes
                    if node != life.node
                    and self._ready_throughout(node, at - grace, at + grace)
                    and (
                        self._unavailable_throughout(
                            node, at - grace, at + grace, min_ready_seconds
                        )
                        or any(
                            n == node
                            and self._unavailable_throughout(node, when, at, min_ready_seconds)
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
        found += self._event_violations(accepted_by_uid)
        return sorted(found, key=lambda v: v.at)

    def _event_violations(self, accepted: dict[str, list[AuditedDeletion]]) -> list[Violation]:
        found: list[Violation] = []
        names = {
            self._name_of(uid): deletions[0] for uid, deletions in accepted.items() if deletions
        }
        seen: dict[str, str] = {}
        for event_name, report in sorted(self.reported.items(), key=lambda kv: kv[1]["at"]):
            pod = report["pod"]
            objects = (f"event {event_name}", f"pod {self.namespace}/{pod}")
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
                        f"SuccessfulDelete names pod {pod}, which the controller did not delete",
                        objects,
                    )
                )
        return found

    def _name_of(self, uid: str) -> str:
        life = self.pods.get(uid)
        return life.name if life else ""

    def peak_unavailable(self, min_ready_seconds: float) -> tuple[int, float, tuple[str, ...]]:
        """The most Ready nodes unavailable at once (for any reason) over the recorded run:
        how many, from when, which."""
        points = sorted(
            p
            for p in {
                p for life in self.pods.values() for p in life.change_points(min_ready_seconds)
            }
            | {t for timeline in self.node_ready.values() for t in timeline.times}
            if p >= self.started_at
        )
        peak: tuple[int, float, tuple[str, ...]] = (0, self.started_at, ())
        for point in points:
            nodes = tuple(
                node
                for node in self.nodes
                if self.node_ready[node].at(point) is True
                and not self.node_available_at(node, point, min_ready_seconds)
            )
            if len(nodes) > peak[0]:
                peak = (len(nodes), point, nodes)
        return peak

    def timeline(self) -> str:
        """Deletions, node readiness and pod lives, for a failure message."""
        lines = ["controller deletions (audit log):"]
        lines += [
            f"  {clock(d.at)} {d.name} code={d.code} uid-precondition={d.uid_precondition}"
            for d in self.controller_deletions
        ]
        lines.append("DaemonSet template images and strategy:")
        lines += [
            f"  {clock(t)} image {v}"
            for t, v in zip(self.ds_image.times, self.ds_image.values, strict=True)
        ]
        lines += [
            f"  {clock(t)} strategy {v}"
            for t, v in zip(self.ds_strategy.times, self.ds_strategy.values, strict=True)
        ]
        lines.append("node readiness:")
        for node, timeline in self.node_ready.items():
            changes = ", ".join(
                f"{clock(t)} {'Ready' if v else 'NotReady'}"
                for t, v in zip(timeline.times, timeline.values, strict=True)
            )
            lines.append(f"  {node}: {changes}")
        lines.append("pods:")
        for life in sorted(self.pods.values(), key=lambda p: (p.node, p.seen)):
            ready = ", ".join(
                f"{clock(t)} {f'Ready since {clock(v)}' if v is not None else 'not Ready'}"
                for t, v in zip(life.ready.times, life.ready.values, strict=True)
            )
            gone = clock(life.deleting_at) if life.deleting_at else "-"
            lines.append(
                f"  {life.node} {life.name} {','.join(life.images)} seen {clock(life.seen)}; "
                f"{ready}; deleting {gone}"
            )
        return "\n".join(lines)
