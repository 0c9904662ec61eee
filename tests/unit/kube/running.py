"""Running the shell's background loops inside a test, and waiting for what they do.

Informers run as tasks against the fake API and are cancelled when the test leaves the block. A
test waits for an effect with `until`, which fails with a message naming what never happened
instead of hanging; `caught_up` waits for an informer to have applied a given object's version,
which is also how a test proves that an event changed nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable, Iterable
from typing import Any

from edgerollout.controller.cluster_cache import ClusterCache
from edgerollout.kube.api import Resource
from edgerollout.kube.informer import Informer

from .fake_api import JSON, FakeApi

# Kept before any test replaces asyncio.sleep to observe the informer's backoff.
real_sleep = asyncio.sleep


async def until(condition: Callable[[], bool], *, what: str, within: float = 2.0) -> None:
    deadline = time.monotonic() + within
    while not condition():
        assert time.monotonic() < deadline, f"{what}: not within {within} s"
        await real_sleep(0.001)


async def caught_up(informer: Informer[Any], obj: dict[str, Any]) -> None:
    version = obj["metadata"]["resourceVersion"]
    await until(
        lambda: informer.resource_version == version,
        what=f"{informer.resource.plural} informer at resourceVersion {version}",
    )


async def published(
    api: FakeApi, informers: Iterable[Informer[Any]], resource: Resource, event_type: str, obj: JSON
) -> JSON:
    """Publish a watch event and wait until every informer that selects its object (before or
    after the change) has applied it."""

    def selecting(informer: Informer[Any], candidate: JSON | None) -> bool:
        return candidate is not None and api.selects(
            resource,
            candidate,
            namespace=informer.namespace,
            field_selector=informer.field_selector,
            label_selector=informer.label_selector,
        )

    meta = obj.get("metadata") or {}
    before = api.stored(resource, meta["name"], namespace=meta.get("namespace"))
    changed = api.publish(resource, event_type, obj)
    for informer in informers:
        if informer.resource == resource and (
            selecting(informer, before) or selecting(informer, changed)
        ):
            await caught_up(informer, changed)
    return changed


@contextlib.asynccontextmanager
async def running(*informers: Informer[Any]) -> AsyncIterator[None]:
    """Run the informers until the block ends; enter once each has listed."""
    tasks = [asyncio.create_task(informer.run()) for informer in informers]
    try:
        await until(
            lambda: (
                all(informer.synced.is_set() for informer in informers)
                or any(task.done() for task in tasks)
            ),
            what="informers synced",
        )
        for task in tasks:
            if task.done():
                task.result()
        yield
    finally:
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task


@contextlib.asynccontextmanager
async def running_cache(cache: ClusterCache) -> AsyncIterator[None]:
    """Run the controller's caches, pod caches included, until the block ends; enter once every
    one has listed."""
    task = asyncio.create_task(cache.run())
    try:
        await until(lambda: cache.synced or task.done(), what="caches synced")
        if task.done():
            task.result()
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


def every_informer(cache: ClusterCache) -> list[Informer[Any]]:
    """The controller's caches as they are now: the lasting ones and each DaemonSet's pods."""
    return [*cache.informers, *cache.pods.values()]
