"""The recording half of the invariant watcher: its own watches on the namespace's pods, the
cluster's Nodes, the namespace's DaemonSet and Events, and a tail of the API server's audit log
(the lab records every pod deletion there, with its user and its DeleteOptions).

Times are wall-clock seconds: watch events when they arrived, corrected by the objects' own
transition times when a watch was interrupted, and the audit log's request times for deletions.
An interrupted watch is listed again until the listing answers; the DaemonSet's annotations carry
no time of their own, so the spells its watch was down are kept (`History.ds_unseen`).
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kubernetes_asyncio import client, watch

from edgerollout.domain.vocabulary import (
    BATCH_SOAK_ANNOTATION,
    BATCHES_ANNOTATION,
    MAX_HOLD_ANNOTATION,
    PARTITION_ANNOTATION,
    PAUSED_ANNOTATION,
    SUCCESSFUL_DELETE,
    UPDATE_STRATEGY_ANNOTATION,
    UPGRADE_HELD,
)
from edgerollout.kube.recorder import COMPONENT as CONTROLLER_COMPONENT
from tests.e2e.support.invariants.history import (
    AuditedDeletion,
    AuditedRequest,
    HeldCondition,
    History,
    PodLife,
)

log = logging.getLogger(__name__)

STRATEGY = UPDATE_STRATEGY_ANNOTATION


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


def _held(condition: Any) -> HeldCondition:
    since = condition.last_transition_time
    return HeldCondition(
        status=str(condition.status),
        message=str(condition.message or ""),
        since=None if since is None else since.strftime("%Y-%m-%dT%H:%M:%SZ"),
    )


def _parse_time(text: str) -> float:
    return datetime.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


@dataclass(frozen=True)
class Followed:
    """One kind of object the recorder follows: how it lists them (and watches from a listing)."""

    kind: str
    lister: Callable[..., Any]
    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = field(default_factory=dict)

    async def list(self) -> Any:
        return await self.lister(*self.args, **self.kwargs)

    def stream(self, stream: Any, version: str) -> Any:
        """The watch events from `version` on."""
        return stream.stream(self.lister, *self.args, resource_version=version, **self.kwargs)


def _controller_request(entry: dict[str, Any]) -> AuditedRequest | None:
    """A list, a watch's start or a Lease write from the audit log (None for anything else)."""
    verb = entry.get("verb")
    stage = entry.get("stage")
    if verb == "watch":
        if stage != "ResponseStarted":
            return None
    elif verb not in ("list", "create", "update") or stage != "ResponseComplete":
        return None
    ref = entry.get("objectRef") or {}
    if verb in ("create", "update") and ref.get("resource") != "leases":
        return None
    return AuditedRequest(
        at=_parse_time(entry.get("stageTimestamp") or entry["requestReceivedTimestamp"]),
        user=(entry.get("user") or {}).get("username", ""),
        verb=str(verb),
        resource=str(ref.get("resource", "")),
        code=int((entry.get("responseStatus") or {}).get("code") or 0),
    )


class Recorder:
    """Follows the rollout's objects and the audit log, writing what happened into `history`."""

    def __init__(
        self,
        history: History,
        core: client.CoreV1Api,
        apps: client.AppsV1Api,
        *,
        daemonset: str,
        selector: str,
        audit_log: Path,
    ) -> None:
        self.history = history
        self.core = core
        self.apps = apps
        self.daemonset = daemonset
        self.selector = selector
        self.audit_log = audit_log
        self.interruptions = 0
        self._audit_offset = audit_log.stat().st_size if audit_log.exists() else 0
        self._tasks: list[asyncio.Task[None]] = []
        self._watches: list[Any] = []

    async def start(self) -> None:
        """List everything once (the first recorded state), then follow each kind."""
        self.history.started_at = time.time()
        namespace = self.history.namespace
        followers = [
            Followed(
                "pods",
                self.core.list_namespaced_pod,
                (namespace,),
                {"label_selector": self.selector},
            ),
            Followed("nodes", self.core.list_node),
            Followed(
                "daemonsets",
                self.apps.list_namespaced_daemon_set,
                (namespace,),
                {"field_selector": f"metadata.name={self.daemonset}"},
            ),
            Followed("events", self.core.list_namespaced_event, (namespace,)),
        ]
        for followed in followers:
            version = await self._list(followed)
            self._tasks.append(
                asyncio.create_task(
                    self._follow(followed, version), name=f"invariants-{followed.kind}"
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

    async def _list(self, followed: Followed, *, late: bool = False) -> str:
        history = self.history
        kind = followed.kind
        listed = await followed.list()
        now = time.time()
        if kind == "pods":
            present = {pod.metadata.uid for pod in listed.items}
            for uid, life in history.pods.items():
                if uid not in present and life.deleting_at is None:
                    life.deleting_at = now  # deleted while the watch was down
        if kind == "nodes":
            present = {node.metadata.name for node in listed.items}
            for name, timeline in history.node_ready.items():
                if name not in present:
                    timeline.set(now, False)
        if kind == "daemonsets" and not listed.items:
            self._daemonset_gone(now)
        for item in listed.items:
            self._apply(kind, "ADDED", item, now, late=late)
        return str(listed.metadata.resource_version)

    async def _follow(self, followed: Followed, version: str) -> None:
        kind = followed.kind
        while True:
            stream = watch.Watch()
            self._watches.append(stream)
            try:
                async for event in followed.stream(stream, version):
                    self._apply(kind, event["type"], event["object"], time.time())
                    if event["type"] in ("ADDED", "MODIFIED", "DELETED"):
                        version = event["object"].metadata.resource_version
            except asyncio.CancelledError:
                raise
            except Exception as error:
                # The API server restarted, or the version expired (410 Gone): list again.
                self.interruptions += 1
                lost = time.time()
                log.info("invariant watch of %s interrupted: %s", kind, error)
                version = await self._list_again(followed)
                if kind == "daemonsets":
                    self.history.ds_unseen.append((lost, time.time()))
            finally:
                self._watches.remove(stream)
                await stream.close()

    async def _list_again(self, followed: Followed) -> str:
        while True:
            await asyncio.sleep(0.5)
            with contextlib.suppress(Exception):
                return await self._list(followed, late=True)

    def _daemonset_gone(self, now: float) -> None:
        history = self.history
        for timeline in (
            history.ds_image,
            history.ds_strategy,
            history.ds_paused,
            history.ds_partition,
            history.ds_batches,
            history.ds_batch_soak,
            history.ds_max_hold,
        ):
            timeline.set(now, None)

    def _apply(self, kind: str, event: str, obj: Any, now: float, *, late: bool = False) -> None:
        history = self.history
        if event not in ("ADDED", "MODIFIED", "DELETED"):
            return  # BOOKMARK, or an ERROR object the loop above answers by listing again
        if kind == "pods":
            self._apply_pod(event, obj, now, late=late)
        elif kind == "nodes":
            name = obj.metadata.name
            if name in history.node_ready:
                condition = _condition(obj, "Ready")
                ready = event != "DELETED" and condition is not None and condition.status == "True"
                at = now if condition is None else _transition(now, condition, late=late)
                history.node_ready[name].set(now if event == "DELETED" else at, ready)
        elif kind == "daemonsets":
            if event == "DELETED":
                self._daemonset_gone(now)
                return
            containers = obj.spec.template.spec.containers
            history.ds_image.set(now, tuple(c.image for c in containers))
            annotations = obj.metadata.annotations or {}
            strategy = annotations.get(STRATEGY)
            history.ds_strategy.set(now, None if strategy is None else strategy.strip().lower())
            history.ds_paused.set(now, annotations.get(PAUSED_ANNOTATION))
            history.ds_partition.set(now, annotations.get(PARTITION_ANNOTATION))
            history.ds_batches.set(now, annotations.get(BATCHES_ANNOTATION))
            history.ds_batch_soak.set(now, annotations.get(BATCH_SOAK_ANNOTATION))
            history.ds_max_hold.set(now, annotations.get(MAX_HOLD_ANNOTATION))
        elif (
            kind == "events"
            and event != "DELETED"
            and obj.reason == SUCCESSFUL_DELETE
            and obj.reporting_component == CONTROLLER_COMPONENT
        ):
            message = str(obj.message or "")
            pod, _, rest = message.removeprefix("Deleted pod: ").partition(" on node ")
            history.reported[obj.metadata.name] = {
                "pod": pod,
                "node": rest.partition(":")[0],
                "count": int(obj.count or 1),
                "instance": obj.reporting_instance,
                "at": now,
            }

    def _apply_pod(self, event: str, pod: Any, now: float, *, late: bool) -> None:
        uid = pod.metadata.uid
        life = self.history.pods.get(uid)
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
            self.history.pods[uid] = life
        held = _condition(pod, UPGRADE_HELD)
        life.held.set(now, None if held is None else _held(held))
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
            request = _controller_request(entry)
            if request is not None:
                self.history.requests.append(request)
                continue
            if (
                entry.get("verb") != "delete"
                or ref.get("resource") != "pods"
                or ref.get("subresource")
                or ref.get("namespace") != self.history.namespace
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
            self.history.deletions.append(deletion)
            if deletion.maybe_applied:
                for life in self.history.pods.values():
                    if (
                        life.name == deletion.name
                        and deletion.uid_precondition in (None, life.uid)
                        and (life.deleting_at is None or deletion.at < life.deleting_at)
                    ):
                        life.deleting_at = deletion.at
