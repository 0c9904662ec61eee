"""A work queue of DaemonSet keys, with client-go's guarantees.

- A key waiting in the queue is there once, however many events asked for it.
- A key is never processed by two workers at once: one added while it is being processed is
  queued again when that processing ends (so the newest state is always looked at).
- A failed key comes back after a per-key exponential backoff (5 ms doubling to 5 min, as
  client-go's default controller rate limiter; `edgerollout.settings`); success resets it.
- A key asked for after a delay keeps the earliest time asked for (client-go's delaying queue):
  each reconcile asks to look again when the clock may change something (a pod turning
  available after minReadySeconds), and a later reconcile's later look must not push it back.
- `retry_failed()` brings every key waiting out that backoff back at once: the caches call it
  when they reach the API server again after failing, since what failed during an outage was the
  outage's doing, and a key that failed through a 20-second outage would otherwise wait another
  20 seconds after it.
- A key done with a `pause` is not handed out again until the pause has passed: an event for it
  meanwhile queues it for the end of the pause (design §10.2). A requested delay or a backoff
  that ends first is kept.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from dataclasses import dataclass, field

from prometheus_client import Counter, Gauge, Histogram

from edgerollout.controller import metrics
from edgerollout.settings import CONTROLLER


class QueueShutDown(Exception):
    """The queue was shut down: workers stop."""


@dataclass
class WorkQueue:
    name: str
    base_delay: float = CONTROLLER.queue.base_delay
    max_delay: float = CONTROLLER.queue.max_delay
    _queue: deque[str] = field(default_factory=deque)
    _queued: set[str] = field(default_factory=set)
    _processing: set[str] = field(default_factory=set)
    _dirty: set[str] = field(default_factory=set)
    _failures: dict[str, int] = field(default_factory=dict)
    _added_at: dict[str, float] = field(default_factory=dict)
    _has_items: asyncio.Event = field(default_factory=asyncio.Event)
    _timers: dict[str, asyncio.TimerHandle] = field(default_factory=dict)
    _backing_off: set[str] = field(default_factory=set)
    """Keys whose pending timer is a failure's backoff (not a requested `add_after`)."""
    _paused_until: dict[str, float] = field(default_factory=dict)
    """The event loop's time until which each key's last `done` paused it."""
    _shutdown: bool = False

    def __post_init__(self) -> None:
        self._adds: Counter = metrics.WORKQUEUE_ADDS.labels(name=self.name)
        self._depth: Gauge = metrics.WORKQUEUE_DEPTH.labels(name=self.name)
        self._retries: Counter = metrics.WORKQUEUE_RETRIES.labels(name=self.name)
        self._wait: Histogram = metrics.WORKQUEUE_QUEUE_DURATION.labels(name=self.name)
        self._work: Histogram = metrics.WORKQUEUE_WORK_DURATION.labels(name=self.name)

    def __len__(self) -> int:
        return len(self._queue)

    def add(self, key: str) -> None:
        if self._shutdown:
            return
        self._adds.inc()
        if key in self._processing:
            self._dirty.add(key)
            return
        if key in self._queued:
            return
        paused_until = self._paused_until.get(key)
        if paused_until is not None:
            wait = paused_until - asyncio.get_running_loop().time()
            if wait > 0:
                self._schedule(key, wait)
                return
            del self._paused_until[key]
        self._enqueue(key)

    def _enqueue(self, key: str) -> None:
        self._queued.add(key)
        self._queue.append(key)
        self._added_at[key] = time.monotonic()
        self._depth.set(len(self._queue))
        self._has_items.set()

    def add_after(self, key: str, delay: float) -> None:
        """Queue `key` after `delay` seconds; a key already waiting to be queued sooner keeps its
        time (as client-go's delaying queue): a later look never postpones an earlier one."""
        if delay <= 0:
            self.add(key)
            return
        self._schedule(key, delay)

    def _schedule(self, key: str, delay: float) -> None:
        """A timer to queue `key` after `delay`, unless one already queues it sooner."""
        loop = asyncio.get_running_loop()
        timer = self._timers.get(key)
        if timer is not None and timer.when() <= loop.time() + delay:
            return
        timer = self._timers.pop(key, None)
        if timer is not None:
            timer.cancel()
        self._backing_off.discard(key)
        self._timers[key] = loop.call_later(delay, self._fire, key)

    def _fire(self, key: str) -> None:
        self._timers.pop(key, None)
        self._backing_off.discard(key)
        # The time asked for has come, a pause's end among them (the loop's clock may read a
        # hair before it): queued now, not paused again.
        self._paused_until.pop(key, None)
        self.add(key)

    def add_rate_limited(self, key: str) -> float:
        failures = self._failures.get(key, 0)
        self._failures[key] = failures + 1
        delay: float = min(self.base_delay * 2.0**failures, self.max_delay)
        self._retries.inc()
        self.add_after(key, delay)
        if delay > 0:
            self._backing_off.add(key)
        return delay

    def retry_failed(self) -> None:
        """Queue now every key waiting out a failure's backoff; its failure count stays, so a
        key that fails again waits its next backoff. Keys waiting for a requested `add_after`
        (a window opening, a deadline) keep waiting."""
        for key in list(self._backing_off):
            timer = self._timers.pop(key, None)
            if timer is not None:
                timer.cancel()
            self._backing_off.discard(key)
            self.add(key)

    def forget(self, key: str) -> None:
        self._failures.pop(key, None)

    async def get(self) -> str:
        """The next key; raises QueueShutDown once the queue is shut down."""
        while not self._queue:
            if self._shutdown:
                raise QueueShutDown(self.name)
            self._has_items.clear()
            await self._has_items.wait()
        key = self._queue.popleft()
        self._queued.discard(key)
        self._processing.add(key)
        self._depth.set(len(self._queue))
        added = self._added_at.pop(key, None)
        if added is not None:
            self._wait.observe(time.monotonic() - added)
        return key

    def done(self, key: str, *, seconds: float, pause: float = 0.0) -> None:
        """`key`'s processing ended after `seconds`; it is handed out again no sooner than
        `pause` seconds from now."""
        self._work.observe(seconds)
        self._processing.discard(key)
        if pause > 0:
            self._paused_until[key] = asyncio.get_running_loop().time() + pause
        if key in self._dirty:
            self._dirty.discard(key)
            self.add(key)

    @property
    def shutting_down(self) -> bool:
        return self._shutdown

    def shut_down(self) -> None:
        self._shutdown = True
        for timer in self._timers.values():
            timer.cancel()
        self._timers.clear()
        self._has_items.set()
