"""An observer of a rollout's unavailable nodes that shares nothing with the controller.

A test that checks the max-unavailable budget must not let the controller grade itself: its
expectations and its planner could be wrong together. This watcher keeps its own list+watch of the
namespace's pods and applies the plain definition after every watch event: a node is unavailable
when it holds no pod, only terminating pods, more than one live pod, or a live pod that is not
available (Ready, and with `min_ready_seconds`, Ready for longer than that). Every change of the
unavailable set is recorded with the wall-clock time it was seen.

A pod becomes available `min_ready_seconds` after turning Ready without any watch event saying
so; the watcher sets a timer for that moment and looks again.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Self

from kubernetes_asyncio import client, watch
from kubernetes_asyncio.client.exceptions import ApiException


def _clock(at: float) -> str:
    return datetime.datetime.fromtimestamp(at, datetime.UTC).strftime("%H:%M:%S.%f")[:-3]


@dataclass(frozen=True, slots=True)
class Change:
    """The unavailable nodes as they stood from `at` (seconds since the epoch) on."""

    at: float
    nodes: tuple[str, ...]

    @property
    def unavailable(self) -> int:
        return len(self.nodes)

    def __str__(self) -> str:
        return f"{_clock(self.at)}  {self.unavailable}  {','.join(self.nodes) or '-'}"


def _ready_condition(pod: Any) -> Any:
    conditions = pod.status.conditions if pod.status else None
    for condition in conditions or []:
        if condition.type == "Ready":
            return condition
    return None


def _ready(pod: Any) -> bool:
    condition = _ready_condition(pod)
    return condition is not None and condition.status == "True"


def available_from(pod: Any, *, min_ready_seconds: int) -> float | None:
    """When the pod is (or will be) available, in seconds since the epoch; None if not Ready."""
    if not _ready(pod):
        return None
    if min_ready_seconds <= 0:
        return float("-inf")
    since = _ready_condition(pod).last_transition_time
    if since is None:
        return None
    return float(since.timestamp()) + min_ready_seconds


def node_unavailable(pods: Iterable[Any], *, min_ready_seconds: int, now: float) -> bool:
    """Whether a node holding these pods of the DaemonSet is unavailable at `now`."""
    live = [pod for pod in pods if pod.metadata.deletion_timestamp is None]
    if len(live) != 1:
        return True
    since = available_from(live[0], min_ready_seconds=min_ready_seconds)
    return since is None or not since < now


class UnavailabilityWatcher:
    """Watch the pods matching `selector` and record which of `nodes` are unavailable."""

    def __init__(
        self,
        core: client.CoreV1Api,
        namespace: str,
        *,
        selector: str,
        nodes: Iterable[str],
        min_ready_seconds: int = 0,
    ) -> None:
        self.core = core
        self.namespace = namespace
        self.selector = selector
        self.nodes = tuple(sorted(nodes))
        self.min_ready_seconds = min_ready_seconds
        self.changes: list[Change] = []
        self.gone_at: dict[str, float] = {}
        """Pod UID -> when the pod was first seen terminating or deleted."""
        self.ready_at: dict[str, float] = {}
        """Pod UID -> when the pod was first seen Ready."""
        self.pod_events: list[str] = []
        """Every pod event seen, one line each: time, event type, node, pod, image, state."""
        self.relists = 0
        self._pods: dict[str, Any] = {}
        self._task: asyncio.Task[None] | None = None
        self._watch: Any = None
        self._timer: asyncio.TimerHandle | None = None

    @property
    def max_unavailable(self) -> int:
        return max((change.unavailable for change in self.changes), default=0)

    def max_unavailable_since(self, at: float) -> int:
        """The most nodes unavailable at once from `at` (seconds since the epoch) on."""
        in_effect = [change for change in self.changes if change.at <= at][-1:]
        later = [change for change in self.changes if change.at > at]
        return max((change.unavailable for change in in_effect + later), default=0)

    @property
    def unavailable_now(self) -> tuple[str, ...]:
        if not self.changes:
            raise AssertionError("the watcher has not listed the pods yet")
        return self.changes[-1].nodes

    def live_images(self) -> dict[str, list[list[str]]]:
        """Node -> the container images of each live pod on it, as the watcher last saw them."""
        seen: dict[str, list[list[str]]] = {}
        for pod in self._pods.values():
            if pod.metadata.deletion_timestamp is None and pod.spec.node_name:
                images = [container.image for container in pod.spec.containers]
                seen.setdefault(pod.spec.node_name, []).append(images)
        return seen

    def timeline(self) -> str:
        """Every recorded change (time, unavailable count, node names), then the pod events."""
        lines = ["unavailable nodes:", *(str(change) for change in self.changes)]
        lines += ["pod events:", *self.pod_events]
        if self.relists:
            lines.append(f"(the watch was restarted from a fresh list {self.relists} time(s))")
        return "\n".join(lines)

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.stop()

    async def start(self) -> None:
        """List the pods (the first recorded state), then follow them from that list's version."""
        resource_version = await self._list()
        self._task = asyncio.create_task(self._follow(resource_version), name="unavailability")

    async def stop(self) -> None:
        """Stop watching (the watch is closed); raise what ended the watch early, if anything did."""
        task, self._task = self._task, None
        try:
            if task is not None:
                if self._watch is not None:
                    self._watch.stop()
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        finally:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None

    async def _list(self) -> str:
        listed = await self.core.list_namespaced_pod(self.namespace, label_selector=self.selector)
        self._pods = {pod.metadata.uid: pod for pod in listed.items}
        now = time.time()
        for uid, pod in self._pods.items():
            if pod.metadata.deletion_timestamp is None and _ready(pod):
                self.ready_at.setdefault(uid, now)
        self._observe()
        return str(listed.metadata.resource_version)

    async def _follow(self, resource_version: str) -> None:
        while True:
            self._watch = watch.Watch()
            try:
                async for event in self._watch.stream(
                    self.core.list_namespaced_pod,
                    self.namespace,
                    label_selector=self.selector,
                    resource_version=resource_version,
                ):
                    self._apply(event["type"], event["object"])
            except ApiException as error:
                if error.status != 410:
                    raise
                # 410 Gone: the resourceVersion is too old, list again.
                self.relists += 1
                resource_version = await self._list()
            else:
                return  # stop() was called
            finally:
                await self._watch.close()
                self._watch = None

    def _apply(self, kind: str, pod: Any) -> None:
        if kind not in ("ADDED", "MODIFIED", "DELETED"):
            return  # BOOKMARK: nothing about pods changed
        now = time.time()
        uid = pod.metadata.uid
        if pod.metadata.deletion_timestamp is not None:
            state = "terminating"
        else:
            state = f"{pod.status.phase if pod.status else None}, ready={_ready(pod)}"
        image = ",".join(container.image for container in pod.spec.containers)
        self.pod_events.append(
            f"{_clock(now)}  {kind:<8} {pod.spec.node_name or '-':<8} "
            f"{pod.metadata.name} {image} ({state})"
        )
        if kind == "DELETED":
            self._pods.pop(uid, None)
            self.gone_at.setdefault(uid, now)
        else:
            self._pods[uid] = pod
            if pod.metadata.deletion_timestamp is not None:
                self.gone_at.setdefault(uid, now)
            elif _ready(pod):
                self.ready_at.setdefault(uid, now)
        self._observe()

    def _observe(self) -> None:
        now = time.time()
        by_node: dict[str, list[Any]] = {node: [] for node in self.nodes}
        for pod in self._pods.values():
            if pod.spec.node_name in by_node:
                by_node[pod.spec.node_name].append(pod)
        unavailable = tuple(
            node
            for node, pods in by_node.items()
            if node_unavailable(pods, min_ready_seconds=self.min_ready_seconds, now=now)
        )
        if not self.changes or self.changes[-1].nodes != unavailable:
            self.changes.append(Change(at=now, nodes=unavailable))
        self._look_again_when_available(by_node.values(), now)

    def _look_again_when_available(self, on_nodes: Iterable[list[Any]], now: float) -> None:
        """Set a timer for the next moment a Ready pod turns available (minReadySeconds)."""
        upcoming = [
            since
            for pods in on_nodes
            for pod in pods
            if pod.metadata.deletion_timestamp is None
            and (since := available_from(pod, min_ready_seconds=self.min_ready_seconds)) is not None
            and since >= now
        ]
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if upcoming:
            delay = min(upcoming) - now + 0.001  # available strictly after the instant
            self._timer = asyncio.get_running_loop().call_later(delay, self._observe)
