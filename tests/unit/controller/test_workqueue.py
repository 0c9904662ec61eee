"""The work queue's guarantees: one entry per key, one worker per key, backoff, delays, shutdown."""

from __future__ import annotations

import asyncio
import time

import pytest
from prometheus_client import REGISTRY

from edgerollout.controller.workqueue import QueueShutDown, WorkQueue


async def next_key(queue: WorkQueue, within: float = 1.0) -> str:
    return await asyncio.wait_for(queue.get(), within)


def sample(metric: str, queue: WorkQueue) -> float:
    return REGISTRY.get_sample_value(metric, {"name": queue.name}) or 0.0


async def test_key_waiting_in_the_queue_is_there_once() -> None:
    queue = WorkQueue(name="test-dedupe")
    adds_before = sample("workqueue_adds_total", queue)

    for key in ("default/web", "default/api", "default/web", "default/web"):
        queue.add(key)

    assert len(queue) == 2
    assert sample("workqueue_adds_total", queue) - adds_before == 4
    assert sample("workqueue_depth", queue) == 2
    assert [await next_key(queue), await next_key(queue)] == ["default/web", "default/api"]
    assert len(queue) == 0


async def test_key_added_while_processed_comes_back_only_after_done() -> None:
    queue = WorkQueue(name="test-dirty")
    queue.add("default/web")
    key = await next_key(queue)

    queue.add("default/web")
    queue.add("default/web")
    assert len(queue) == 0

    queue.done(key, seconds=0.01)
    assert len(queue) == 1
    assert await next_key(queue) == "default/web"
    queue.done("default/web", seconds=0.01)
    assert len(queue) == 0


async def test_done_without_a_new_add_does_not_requeue() -> None:
    queue = WorkQueue(name="test-done")
    queue.add("default/web")
    queue.done(await next_key(queue), seconds=0.01)

    assert len(queue) == 0


async def test_failures_back_off_doubling_per_key_and_forget_resets() -> None:
    queue = WorkQueue(name="test-backoff", base_delay=0.001)
    retries_before = sample("workqueue_retries_total", queue)

    delays = [queue.add_rate_limited("default/web") for _ in range(4)]
    other = queue.add_rate_limited("default/api")
    queue.forget("default/web")
    after_forget = queue.add_rate_limited("default/web")

    assert delays == [0.001, 0.002, 0.004, 0.008]
    assert other == 0.001
    assert after_forget == 0.001
    assert sample("workqueue_retries_total", queue) - retries_before == 6
    assert {await next_key(queue), await next_key(queue)} == {"default/web", "default/api"}


async def test_backoff_stops_at_the_maximum_delay() -> None:
    queue = WorkQueue(name="test-max", base_delay=1.0, max_delay=4.0)

    delays = [queue.add_rate_limited("default/web") for _ in range(5)]
    queue.shut_down()

    assert delays == [1.0, 2.0, 4.0, 4.0, 4.0]


async def test_add_after_delivers_the_key_once_the_delay_has_passed() -> None:
    queue = WorkQueue(name="test-after")
    started = time.monotonic()

    queue.add_after("default/web", 0.05)
    assert len(queue) == 0

    assert await next_key(queue) == "default/web"
    assert time.monotonic() - started >= 0.04


async def test_add_after_without_delay_adds_at_once() -> None:
    queue = WorkQueue(name="test-after-zero")

    queue.add_after("default/web", 0)

    assert len(queue) == 1


async def test_shut_down_wakes_waiting_workers_with_queue_shut_down() -> None:
    queue = WorkQueue(name="test-shutdown")
    waiting = asyncio.create_task(queue.get())
    await asyncio.sleep(0)
    queue.add_after("default/web", 0.01)

    queue.shut_down()

    with pytest.raises(QueueShutDown):
        await asyncio.wait_for(waiting, 1.0)
    with pytest.raises(QueueShutDown):
        await next_key(queue)
    queue.add("default/api")
    await asyncio.sleep(0.03)  # the cancelled timer never fires
    assert len(queue) == 0


async def test_retry_failed_brings_back_at_once_only_the_keys_backing_off() -> None:
    # An outage made a reconcile fail over and over: its key waits 20 s. A key that asked to be
    # looked at later (a window opening) waits on. Once the API server answers again, the failed
    # key is retried at once, and its failure count stays: failing again, it waits longer.
    queue = WorkQueue(name="test-retry-failed", base_delay=5.0, max_delay=300.0)
    queue.add_rate_limited("default/failed")
    queue.add_rate_limited("default/failed")
    queue.add_after("default/window", 30.0)
    assert len(queue) == 0

    queue.retry_failed()

    assert len(queue) == 1
    key = await next_key(queue)
    assert key == "default/failed"
    queue.done(key, seconds=0.01)
    await asyncio.sleep(0.05)
    assert len(queue) == 0  # the cancelled backoff does not fire an extra retry
    assert queue.add_rate_limited("default/failed") == 20.0
    queue.retry_failed()
    assert await next_key(queue) == "default/failed"
    queue.retry_failed()
    assert len(queue) == 0  # nothing else was backing off: the window's key still waits
    queue.shut_down()


async def test_a_key_that_succeeded_is_not_retried_by_retry_failed() -> None:
    queue = WorkQueue(name="test-retry-succeeded", base_delay=0.01)
    queue.add_rate_limited("default/web")
    key = await next_key(queue)  # its backoff fired
    queue.forget(key)
    queue.done(key, seconds=0.01)

    queue.retry_failed()

    assert len(queue) == 0


async def test_a_later_look_does_not_postpone_an_earlier_one() -> None:
    # A reconcile asks to look again in 0.05 s (a pod turns available then); a reconcile right
    # after asks for 30 s (a window opening). The key comes at 0.05 s, not at 30 s; and a sooner
    # look than the one waiting replaces it.
    queue = WorkQueue(name="test-earliest-look")
    started = time.monotonic()
    queue.add_after("default/web", 0.05)
    queue.add_after("default/web", 30.0)

    assert await next_key(queue) == "default/web"
    assert time.monotonic() - started < 1.0
    queue.done("default/web", seconds=0.01)

    queue.add_after("default/web", 30.0)
    queue.add_after("default/web", 0.05)
    assert await next_key(queue) == "default/web"
    queue.shut_down()


async def test_a_paused_key_waits_out_its_pause_once_however_many_events_came() -> None:
    # A reconcile ends with a pause of 0.1 s (its DaemonSet's size paces the next): the events that
    # come meanwhile queue the key once, at the end of the pause, not at once.
    queue = WorkQueue(name="test-pause")
    queue.add("default/web")
    key = await next_key(queue)
    loop = asyncio.get_running_loop()
    done_at = loop.time()
    queue.done(key, seconds=0.01, pause=0.1)

    for _ in range(3):
        queue.add("default/web")
    assert len(queue) == 0
    await asyncio.sleep(0.05)
    assert len(queue) == 0

    assert await next_key(queue) == "default/web"
    assert loop.time() - done_at >= 0.09
    assert len(queue) == 0
    queue.done("default/web", seconds=0.01)
    await asyncio.sleep(0.15)
    assert len(queue) == 0  # the three events brought one reconcile


async def test_an_event_after_the_pause_queues_the_key_at_once() -> None:
    queue = WorkQueue(name="test-pause-over")
    queue.add("default/web")
    queue.done(await next_key(queue), seconds=0.01, pause=0.02)
    await asyncio.sleep(0.05)

    queue.add("default/web")

    assert len(queue) == 1


async def test_a_key_added_while_processed_rests_its_pause_before_coming_back() -> None:
    queue = WorkQueue(name="test-pause-dirty")
    queue.add("default/web")
    key = await next_key(queue)
    queue.add("default/web")  # while it is processed

    queue.done(key, seconds=0.01, pause=0.05)

    assert len(queue) == 0
    assert await next_key(queue) == "default/web"


async def test_a_requested_look_sooner_than_the_pause_is_kept() -> None:
    # A pod turns available in 0.02 s: the look asked for then is not pushed back to the end of
    # a longer pause.
    queue = WorkQueue(name="test-pause-look")
    queue.add("default/web")
    key = await next_key(queue)
    queue.add_after(key, 0.02)
    queue.done(key, seconds=0.01, pause=30.0)
    started = time.monotonic()

    assert await next_key(queue) == "default/web"
    assert time.monotonic() - started < 1.0
    queue.shut_down()
