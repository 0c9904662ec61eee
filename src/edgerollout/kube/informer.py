"""A list+watch cache of one kind of object, as client-go's reflector and informer keep one.

The cache lists once, then follows a watch from the list's resourceVersion. Bookmarks move that
resourceVersion forward without objects, so a re-watch after the server ends the stream resumes
where it was; a `410 Gone` (the version is older than etcd keeps) is answered by listing again and
diffing the new list against the cache, so an object deleted while we were not watching is still
reported as deleted — nothing is lost. Connection failures back off and retry forever; a controller
that cannot see the cluster does nothing rather than something stale.

The back-off is short (0.5 s doubling to 2 s, each wait drawn from its upper half, so that many
clients do not retry in lockstep), and the caches of one process share a `Reconnect`: the first to
get an answer after a failure wakes the others, so that after an API server outage every cache
resumes within a moment of the server answering again (design §10.1).

Objects are stored after `transform` (raw JSON -> a small record, or None for an object the cache
does not keep), and every change is handed to the subscribers as (old, new) — old None for an
addition, new None for a deletion.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
from collections.abc import Callable, Iterator
from typing import Any, Generic, TypeVar

from edgerollout.kube.api import Api, ApiError, Resource
from edgerollout.kube.watch_events import EventDecoder, WatchEvent, json_events, object_key
from edgerollout.logfields import LogFields
from edgerollout.settings import KUBE_CLIENT

T = TypeVar("T")
JSON = dict[str, Any]
Handler = Callable[[T | None, T | None], None]

log = logging.getLogger(__name__)
WATCH = KUBE_CLIENT.watch


def jittered(delay: float) -> float:
    """A random time in the upper half of `delay`: clients that failed together retry apart."""
    return delay * random.uniform(0.5, 1.0)  # noqa: S311 - jitter, not security


class Reconnect:
    """Shared by the caches of a process: `answered()` — a cache got an answer after a failure —
    wakes every cache waiting out its back-off, and tells `on_answered` (the work queue retries
    what failed meanwhile)."""

    def __init__(self) -> None:
        self._woken = asyncio.Event()
        self.on_answered: Callable[[], None] = lambda: None

    async def wait(self, seconds: float) -> None:
        """Sleep `seconds`, or less if another cache gets an answer meanwhile."""
        woken = self._woken
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(seconds):
                await woken.wait()

    def answered(self) -> None:
        self._woken.set()
        self._woken = asyncio.Event()
        self.on_answered()


class Informer(Generic[T]):
    def __init__(
        self,
        api: Api,
        resource: Resource,
        transform: Callable[[JSON], T | None],
        *,
        namespace: str | None = None,
        field_selector: str | None = None,
        label_selector: str | None = None,
        page_size: int = WATCH.page_size,
        relist_after_failure: bool = False,
        max_backoff: float = WATCH.max_backoff,
        reconnect: Reconnect | None = None,
        decode: EventDecoder[T] | None = None,
    ) -> None:
        self.api = api
        self.resource = resource
        self.transform = transform
        # How a watch's line becomes an event: parsed whole and passed to `transform`, unless
        # the cache decodes only what it reads (a pod cache: `kube/pod_fields.py`).
        self.decode: EventDecoder[T] = decode if decode is not None else json_events(transform)
        self.namespace = namespace
        self.field_selector = field_selector
        self.label_selector = label_selector
        self.page_size = page_size
        # List again (rather than resume the watch) after a failure: the list's success proves
        # contact at once, which a small cache that reports its freshness wants.
        self.relist_after_failure = relist_after_failure
        self.max_backoff = max_backoff
        self.reconnect = reconnect if reconnect is not None else Reconnect()
        # Whether the last list or watch failed: the next answer wakes the other caches.
        self._failing = False
        self.store: dict[str, T] = {}
        self.synced = asyncio.Event()
        self.resource_version = ""
        self.lists = 0
        self._retry_delay = WATCH.first_retry_delay
        self._handlers: list[Handler[T]] = []
        # Told each time the API server answered (a list, a watch event), and each time it did not.
        self.on_contact: Callable[[], None] = lambda: None
        self.on_lost: Callable[[Exception], None] = lambda error: None
        # Told at the end of each list, once its changes have been handed to the subscribers.
        self.on_listed: Callable[[], None] = lambda: None

    def subscribe(self, handler: Handler[T]) -> None:
        self._handlers.append(handler)

    def count(self) -> int:
        """How many objects the cache holds."""
        return len(self.store)

    def get(self, key: str) -> T | None:
        return self.store.get(key)

    def values(self) -> Iterator[T]:
        return iter(list(self.store.values()))

    def _notify(self, old: T | None, new: T | None) -> None:
        for handler in self._handlers:
            try:
                handler(old, new)
            except Exception:
                log.exception(
                    "cache handler failed", extra=LogFields(resource=self.resource.plural)
                )

    async def _list(self) -> None:
        fresh: dict[str, T] = {}
        token: str | None = None
        version = ""
        while True:
            page = await self.api.list(
                self.resource,
                namespace=self.namespace,
                field_selector=self.field_selector,
                label_selector=self.label_selector,
                limit=self.page_size,
                continue_token=token,
            )
            for obj in page.items:
                meta = obj.get("metadata") or {}
                kept = self.transform(obj)
                if kept is not None:
                    fresh[object_key(meta.get("namespace"), meta["name"])] = kept
            version = page.resource_version
            token = page.continue_token
            if not token:
                break
        old_store, self.store = self.store, fresh
        self.resource_version = version
        self.lists += 1
        self._answered()
        self.on_contact()
        for key, new in fresh.items():
            old = old_store.get(key)
            if old != new:
                self._notify(old, new)
        for key, old in old_store.items():
            if key not in fresh:
                self._notify(old, None)
        self.synced.set()
        self.on_listed()

    def _apply(self, event: WatchEvent[T]) -> None:
        if event.error is not None:
            raise event.error
        if event.resource_version is not None:
            self.resource_version = event.resource_version
        if event.type == "BOOKMARK":
            return
        key = event.key
        old = self.store.get(key)
        new = event.kept
        if new is None:  # deleted, or not an object this cache keeps (any more)
            if self.store.pop(key, None) is not None:
                self._notify(old, None)
            return
        self.store[key] = new
        if old != new:
            self._notify(old, new)

    async def run(self) -> None:
        """List, then watch forever; cancel the task to stop."""
        self._retry_delay = WATCH.first_retry_delay
        need_list = True
        while True:
            try:
                if need_list:
                    await self._list()
                    need_list = False
                await self._watch()
            except ApiError as error:
                self.on_lost(error)
                if error.gone:
                    # 410 Gone: the resourceVersion is too old for the server, list again.
                    log.info(
                        "watch expired; listing again",
                        extra=LogFields(resource=self.resource.plural, error=str(error)),
                    )
                    need_list = True
                    continue
                self._log_retry("list/watch failed; retrying", str(error))
                need_list = need_list or self.relist_after_failure
                await self._back_off()
            except (OSError, TimeoutError, ValueError) as error:
                self.on_lost(error)
                self._log_retry("watch broke; retrying", repr(error))
                need_list = need_list or self.relist_after_failure
                await self._back_off()
            except Exception as error:
                # An object we could not read (or a bug): never let the cache die silently.
                # Listing again rebuilds it from what the API server says now.
                self.on_lost(error)
                log.exception(
                    "cache failed; listing again", extra=LogFields(resource=self.resource.plural)
                )
                need_list = True
                await self._back_off()

    async def _watch(self) -> None:
        """Watch from the cache's resourceVersion until the server ends the watch; every event
        received resets the retry delay."""
        # Spread re-watches out so many caches do not reconnect in lockstep.
        timeout = random.randint(  # noqa: S311 - jitter, not security
            WATCH.rewatch_min_seconds, WATCH.rewatch_max_seconds
        )
        decode = self.decode
        async for line in self.api.watch_lines(
            self.resource,
            resource_version=self.resource_version,
            namespace=self.namespace,
            field_selector=self.field_selector,
            label_selector=self.label_selector,
            timeout_seconds=timeout,
        ):
            self._apply(decode(line))
            if self._failing:
                self._answered()
            self.on_contact()

    def _answered(self) -> None:
        """An answer: the retry delay starts over, and after a failure, the other caches retry."""
        self._retry_delay = WATCH.first_retry_delay
        if self._failing:
            self._failing = False
            self.reconnect.answered()

    def _log_retry(self, message: str, error: str) -> None:
        log.warning(
            message,
            extra=LogFields(
                resource=self.resource.plural, error=error, retry_after=self._retry_delay
            ),
        )

    async def _back_off(self) -> None:
        """Wait the retry delay (a random time in its upper half), or until another cache of the
        process gets an answer; then double it up to `max_backoff`."""
        self._failing = True
        await self.reconnect.wait(jittered(self._retry_delay))
        self._retry_delay = min(self._retry_delay * 2, self.max_backoff)


async def run_all(informers: list[Informer[Any]]) -> None:
    async with asyncio.TaskGroup() as group:
        for informer in informers:
            group.create_task(informer.run(), name=f"informer-{informer.resource.plural}")


async def wait_synced(informers: list[Informer[Any]]) -> None:
    for informer in informers:
        with contextlib.suppress(asyncio.CancelledError):
            await informer.synced.wait()
