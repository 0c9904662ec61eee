"""A plan's independent writes, sent at once up to a limit."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import TypeVar

Item = TypeVar("Item")


async def send_concurrently(
    send: Callable[[Item], Awaitable[int]], items: Sequence[Item], *, at_once: int
) -> list[int]:
    """Send one request per item, at most `at_once` at a time, and wait for all.

    A plan's writes are independent of each other (each pod is written or deleted at most once,
    the deletions all fit the budget and are recorded as expected before they are sent), so they
    need not wait for one another's round trip: sent one after the other, a wave of a hundred
    deletions took as many round trips. If any request fails, the others still finish, then the
    first failure is raised (the key is retried with backoff).

    Most reconciles of a rollout send one request of a kind, or none: those are sent without a
    gate or a task of their own."""
    if len(items) <= 1:
        return [await send(item) for item in items]
    gate = asyncio.Semaphore(at_once)

    async def gated(item: Item) -> int:
        async with gate:
            return await send(item)

    results = await asyncio.gather(*(gated(item) for item in items), return_exceptions=True)
    for result in results:
        if isinstance(result, BaseException):
            raise result
    return [result for result in results if not isinstance(result, BaseException)]
