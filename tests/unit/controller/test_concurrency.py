"""A plan's independent writes: all sent, at most so many at once, the first failure raised."""

from __future__ import annotations

import asyncio

import pytest

from edgerollout.controller.writes.concurrency import send_concurrently


async def test_nothing_to_send_sends_nothing() -> None:
    sent: list[int] = []

    async def send(item: int) -> int:
        sent.append(item)
        return 1

    assert await send_concurrently(send, [], at_once=2) == []
    assert sent == []


async def test_one_write_is_sent_and_its_failure_raised() -> None:
    async def refused(item: str) -> int:
        raise RuntimeError(f"refused {item}")

    async def accepted(item: str) -> int:
        return len(item)

    assert await send_concurrently(accepted, ["abc"], at_once=2) == [3]
    with pytest.raises(RuntimeError, match="refused abc"):
        await send_concurrently(refused, ["abc"], at_once=2)


async def test_many_writes_go_at_most_at_once_and_all_finish_before_the_first_failure() -> None:
    running, most, finished = 0, 0, []

    async def send(item: int) -> int:
        nonlocal running, most
        running += 1
        most = max(most, running)
        await asyncio.sleep(0)
        running -= 1
        finished.append(item)
        if item == 1:
            raise RuntimeError("refused 1")
        return item * 10

    assert await send_concurrently(send, [0, 2, 3], at_once=2) == [0, 20, 30]
    assert most == 2
    with pytest.raises(RuntimeError, match="refused 1"):
        await send_concurrently(send, [0, 1, 2, 3, 4], at_once=2)
    assert sorted(finished[3:]) == [0, 1, 2, 3, 4]
