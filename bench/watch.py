"""A list+watch of one kind of object, timed on arrival, for measuring progress without polling.

Each `ObjectWatch` keeps the objects it has seen (by name) and hands every event to each
registered `Progress`, which counts the distinct keys (a node name, a pod name) of the objects it
is interested in, incrementally: one event costs the same with 50 objects as with 10,000. A count
that changed is recorded with the monotonic time the event arrived. A benchmark then waits for a count to reach a value and reads
when it did, so the precision is that of the watch, not of a polling interval.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from edgerollout.domain.model import ConditionStatus
from edgerollout.kube.api import ApiError, KubeApi, Resource
from edgerollout.kube.views import (
    bound_node,
    marked_for_deletion,
    namespaced_name,
    node_ready_condition,
    pod_condition,
    pod_images,
    pod_ready,
)

JSON = dict[str, Any]
# What an object counts as (a node name, its own name), or None when it does not count.
Key = Callable[[JSON], str | None]


class Listener(Protocol):
    """What an `ObjectWatch` tells: the objects after each (re)list, then every change."""

    def reset(self, objects: dict[str, JSON], at: float) -> None: ...

    def update(self, name: str, obj: JSON | None, at: float) -> None: ...


@dataclass
class Progress:
    """The number of distinct keys among the watched objects, and every change of it:
    (monotonic time, value)."""

    key: Key
    changes: list[tuple[float, int]] = field(default_factory=list)
    _moved: asyncio.Event = field(default_factory=asyncio.Event)
    _key_of: dict[str, str] = field(default_factory=dict)
    _holders: dict[str, int] = field(default_factory=dict)

    @property
    def value(self) -> int:
        return self.changes[-1][1] if self.changes else 0

    def _drop(self, name: str) -> None:
        old = self._key_of.pop(name, None)
        if old is not None:
            self._holders[old] -= 1
            if not self._holders[old]:
                del self._holders[old]

    def update(self, name: str, obj: JSON | None, at: float) -> None:
        self._drop(name)
        key = None if obj is None else self.key(obj)
        if key is not None:
            self._key_of[name] = key
            self._holders[key] = self._holders.get(key, 0) + 1
        self._record(at)

    def reset(self, objects: dict[str, JSON], at: float) -> None:
        self._key_of.clear()
        self._holders.clear()
        for name, obj in objects.items():
            key = self.key(obj)
            if key is not None:
                self._key_of[name] = key
                self._holders[key] = self._holders.get(key, 0) + 1
        self._record(at)

    def _record(self, at: float) -> None:
        value = len(self._holders)
        if not self.changes or self.changes[-1][1] != value:
            self.changes.append((at, value))
            self._moved.set()

    async def reach(self, target: int, *, timeout: float, what: str) -> float:
        """Wait until the count is at least `target`; the monotonic time it first was."""
        await self._until(
            lambda value: value >= target, timeout=timeout, what=f"{what} (want {target})"
        )
        return next(at for at, value in self.changes if value >= target)

    async def fall(self, target: int, *, after: float, timeout: float, what: str) -> float:
        """Wait until the count is at most `target`; the monotonic time it first was, after
        `after`."""
        await self._until(
            lambda value: value <= target, timeout=timeout, what=f"{what} (want {target})"
        )
        return next(at for at, value in self.changes if value <= target and at >= after)

    async def _until(self, done: Callable[[int], bool], *, timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while not done(self.value):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(f"{what}: {self.value} after {timeout:.0f} s")
            self._moved.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._moved.wait(), remaining)

    def since(self, start: float) -> list[tuple[float, int]]:
        """The changes from `start` on, as (seconds after start, value), starting at the value then."""
        before = [value for at, value in self.changes if at <= start]
        points = [(0.0, before[-1] if before else 0)]
        points += [(round(at - start, 3), value) for at, value in self.changes if at > start]
        return points


class ObjectWatch:
    """Objects of one resource (optionally one namespace), kept current by a watch."""

    def __init__(self, api: KubeApi, resource: Resource, *, namespace: str | None = None) -> None:
        self.api = api
        self.resource = resource
        self.namespace = namespace
        self.objects: dict[str, JSON] = {}
        self.listeners: list[Listener] = []
        self._task: asyncio.Task[None] | None = None
        self._synced = asyncio.Event()

    def track(self, key: Key) -> Progress:
        progress = Progress(key)
        self.listen(progress)
        return progress

    def listen(self, listener: Listener) -> None:
        listener.reset(self.objects, time.monotonic())
        self.listeners.append(listener)

    async def start(self) -> None:
        self._task = asyncio.create_task(self._run())
        await self._synced.wait()

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    def _changed(self, name: str, obj: JSON | None) -> None:
        at = time.monotonic()
        for listener in self.listeners:
            listener.update(name, obj, at)

    async def _list(self) -> str:
        objects: dict[str, JSON] = {}
        token: str | None = None
        while True:
            page = await self.api.list(
                self.resource, namespace=self.namespace, continue_token=token
            )
            for item in page.items:
                objects[item["metadata"]["name"]] = item
            token = page.continue_token
            if token is None:
                break
        self.objects = objects
        at = time.monotonic()
        for listener in self.listeners:
            listener.reset(objects, at)
        return page.resource_version

    async def _run(self) -> None:
        version = await self._list()
        self._synced.set()
        while True:
            try:
                async for event in self.api.watch(
                    self.resource, resource_version=version, namespace=self.namespace
                ):
                    kind, obj = event["type"], event["object"]
                    meta = obj.get("metadata") or {}
                    version = str(meta.get("resourceVersion", version))
                    if kind == "BOOKMARK":
                        continue
                    if kind == "ERROR":
                        _raise_watch_error(obj)
                    name = meta["name"]
                    if kind == "DELETED":
                        self.objects.pop(name, None)
                        self._changed(name, None)
                    else:
                        self.objects[name] = obj
                        self._changed(name, obj)
            except ApiError as error:
                if not error.gone:
                    await asyncio.sleep(0.5)
                    continue
                # 410 Gone: the resourceVersion is too old, list again
                version = await self._list()


def _raise_watch_error(status: JSON) -> None:
    raise ApiError(int(status.get("code", 0)), "WatchError", str(status.get("message", status)))


def _condition_true(pod: JSON, kind: str) -> bool:
    condition = pod_condition(pod, kind)
    return condition is not None and condition.status is ConditionStatus.TRUE


def pod_image(pod: JSON) -> str:
    """The image of the pod's first container (the bench's pods have one)."""
    return pod_images(pod)[0]


def live(pod: JSON) -> bool:
    return not marked_for_deletion(pod)


def bound_live(pod: JSON) -> str | None:
    """A live pod bound to a node counts as that node."""
    node = bound_node(pod)
    return node if node and live(pod) else None


def updated_ready(image: str) -> Key:
    """A live pod running `image` and Ready counts as its node."""

    def key(pod: JSON) -> str | None:
        if live(pod) and pod_image(pod) == image and pod_ready(pod):
            return str(bound_node(pod))
        return None

    return key


def condition_true(kind: str) -> Key:
    """A live pod whose condition `kind` is True counts as itself."""

    def key(pod: JSON) -> str | None:
        if live(pod) and _condition_true(pod, kind):
            return namespaced_name(pod)[1]
        return None

    return key


def node_ready(node: JSON) -> bool:
    return node_ready_condition(node) is ConditionStatus.TRUE


def ready_among(names: set[str]) -> Key:
    """A Node that is one of `names` and Ready counts as itself."""

    def key(node: JSON) -> str | None:
        name = namespaced_name(node)[1]
        return name if name in names and node_ready(node) else None

    return key


def not_ready_among(names: set[str]) -> Key:
    """A Node that is one of `names` and not Ready counts as itself."""

    def key(node: JSON) -> str | None:
        name = namespaced_name(node)[1]
        return name if name in names and not node_ready(node) else None

    return key
