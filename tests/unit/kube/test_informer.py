"""The list+watch cache: what it stores, what it reports, and how it recovers."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

import pytest

from edgerollout.domain.model import NodeName, NodeReadiness, NodeView
from edgerollout.kube import informer as informer_module
from edgerollout.kube.api import NODES, PODS, Resource
from edgerollout.kube.informer import Informer, Reconnect, jittered
from edgerollout.kube.views import CachedPod, node_from_api, pod_from_api

from .fake_api import END, FakeApi, unreachable
from .objects import JSON, node_json, pod_json
from .running import caught_up, running, until

Change = tuple[Any, Any]
READY_CHANGED = datetime(2025, 3, 1, 10, 0, tzinfo=UTC)  # node_json's Ready transition


def node(name: str, readiness: NodeReadiness = NodeReadiness.READY) -> NodeView:
    """The view of a node as `node_json` serves it (its hostname label included)."""
    return NodeView(
        name=NodeName(name),
        readiness=readiness,
        labels={"kubernetes.io/hostname": name},
        readiness_since=READY_CHANGED,
    )


def node_informer(api: FakeApi, *nodes: JSON) -> tuple[Informer[NodeView], list[Change]]:
    """An informer of the nodes, and the changes it reports; `nodes` are stored first."""
    for one in nodes:
        api.put(NODES, one)
    informer = Informer(api, NODES, node_from_api)
    changes: list[Change] = []
    informer.subscribe(lambda old, new: changes.append((old, new)))
    return informer, changes


@contextlib.asynccontextmanager
async def watching(api: FakeApi) -> AsyncIterator[tuple[Informer[NodeView], list[Change]]]:
    """A running node informer past its first list, the changes that list reported forgotten."""
    informer, changes = node_informer(api)
    async with running(informer):
        changes.clear()
        yield informer, changes


def watched_versions(api: FakeApi, resource: Resource = NODES) -> list[str]:
    return [call.params["resource_version"] for call in api.calls_to("watch", resource)]


@pytest.fixture
def sleeps(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The backoff delays the informer asks for (before their jitter); each returns at once."""
    asked: list[float] = []

    async def wait(self: Reconnect, seconds: float) -> None:
        asked.append(seconds)
        await asyncio.sleep(0)

    monkeypatch.setattr(informer_module, "jittered", lambda delay: delay)
    monkeypatch.setattr(Reconnect, "wait", wait)
    return asked


async def test_initial_list_reads_every_page_and_reports_each_object_added() -> None:
    api = FakeApi()
    for index in range(5):
        api.put(PODS, pod_json(f"web-{index}", node=f"edge-{index}"))
    informer: Informer[CachedPod] = Informer(api, PODS, pod_from_api, page_size=2)
    added: list[Change] = []
    informer.subscribe(lambda old, new: added.append((old, new)))

    async with running(informer):
        assert [call.params["continue_token"] for call in api.calls_to("list", PODS)] == [
            None,
            "2",
            "4",
        ]
        assert {call.params["limit"] for call in api.calls_to("list", PODS)} == {2}
        assert sorted(informer.store) == [f"default/web-{index}" for index in range(5)]
        stored = api.stored(PODS, "web-3", namespace="default")
        assert stored is not None
        assert informer.get("default/web-3") == pod_from_api(stored)
        assert [(old, new.view.name) for old, new in added] == [
            (None, f"web-{index}") for index in range(5)
        ]
        assert informer.resource_version == "5"
        assert informer.lists == 1
        await until(lambda: watched_versions(api, PODS) == ["5"], what="watch from the list")


async def test_watch_events_update_the_store_and_report_old_and_new() -> None:
    api = FakeApi()
    api.put(NODES, node_json("edge-1"))

    async with watching(api) as (informer, changes):
        api.publish(NODES, "ADDED", node_json("edge-2"))
        api.publish(NODES, "MODIFIED", node_json("edge-1", ready="False"))
        deleted = api.publish(NODES, "DELETED", node_json("edge-2"))
        await caught_up(informer, deleted)

        assert changes == [
            (None, node("edge-2")),
            (node("edge-1"), node("edge-1", NodeReadiness.NOT_READY)),
            (node("edge-2"), None),
        ]
        assert informer.store == {"edge-1": node("edge-1", NodeReadiness.NOT_READY)}


async def test_modification_that_changes_no_kept_field_reports_nothing() -> None:
    api = FakeApi()
    api.put(NODES, node_json("edge-1", heartbeat="2025-03-01T12:00:00Z"))

    async with watching(api) as (informer, changes):
        heartbeat = api.publish(
            NODES, "MODIFIED", node_json("edge-1", heartbeat="2025-03-01T12:00:40Z")
        )
        await caught_up(informer, heartbeat)

        assert changes == []
        assert informer.store == {"edge-1": node("edge-1")}


async def test_deletion_of_an_unknown_object_reports_nothing() -> None:
    api = FakeApi()
    informer, changes = node_informer(api)

    async with running(informer):
        api.put(NODES, node_json("edge-9"))
        gone = api.publish(NODES, "DELETED", node_json("edge-9"))
        await caught_up(informer, gone)

        assert changes == []
        assert informer.store == {}


async def test_bookmark_moves_the_resource_version_without_reporting() -> None:
    api = FakeApi()
    api.put(NODES, node_json("edge-1"))

    async with watching(api) as (informer, changes):
        version = api.bookmark(NODES)
        await until(lambda: informer.resource_version == version, what="bookmark applied")

        assert changes == []
        assert informer.store == {"edge-1": node("edge-1")}


async def test_expired_watch_lists_again_and_reports_what_changed_meanwhile() -> None:
    api = FakeApi()
    api.put(NODES, node_json("edge-1"))
    api.put(NODES, node_json("edge-2"))
    api.put(NODES, node_json("edge-3"))

    async with watching(api) as (informer, changes):
        # Changes the watch never delivered, then the server's 410.
        api.remove(NODES, "edge-2")
        api.put(NODES, node_json("edge-3", ready="Unknown"))
        api.put(NODES, node_json("edge-4"))
        api.put(NODES, node_json("edge-1", heartbeat="2025-03-01T12:01:00Z"))
        api.expire(NODES)
        await until(lambda: informer.lists == 2, what="second list")

        assert changes == [
            (node("edge-3"), node("edge-3", NodeReadiness.UNKNOWN)),
            (None, node("edge-4")),
            (node("edge-2"), None),
        ]
        assert sorted(informer.store) == ["edge-1", "edge-3", "edge-4"]
        assert informer.resource_version == str(api.version)
        await until(lambda: len(api.calls_to("watch", NODES)) == 2, what="second watch")
        assert watched_versions(api) == ["3", str(api.version)]


async def test_broken_watch_backs_off_and_resumes_from_the_last_version(
    sleeps: list[float],
) -> None:
    api = FakeApi()
    informer, changes = node_informer(api, node_json("edge-1"))

    async with running(informer):
        added = api.publish(NODES, "ADDED", node_json("edge-2"))
        api.send(NODES, unreachable("connection reset by peer"))
        api.send(NODES, unreachable("connection refused"))
        version = api.bookmark(NODES)
        api.send(NODES, OSError("stream broke"))
        await until(lambda: len(api.calls_to("watch", NODES)) == 4, what="fourth watch")

        resumed = added["metadata"]["resourceVersion"]
        assert watched_versions(api) == ["1", resumed, resumed, version]
        # Doubling while nothing arrives, back to the start once an event does.
        assert sleeps == [0.5, 1.0, 0.5]
        assert informer.lists == 1
        assert changes[-1] == (None, node("edge-2"))
        assert all(
            240 <= call.params["timeout_seconds"] <= 360 for call in api.calls_to("watch", NODES)
        )


async def test_watch_closed_by_the_server_is_reopened_at_once_from_the_last_version(
    sleeps: list[float],
) -> None:
    api = FakeApi()
    informer, _ = node_informer(api)

    async with running(informer):
        version = api.bookmark(NODES)
        api.send(NODES, END)
        await until(lambda: len(api.calls_to("watch", NODES)) == 2, what="second watch")

        assert watched_versions(api) == ["0", version]
        assert sleeps == []
        assert informer.lists == 1


async def test_failed_list_is_retried_before_the_cache_says_synced(sleeps: list[float]) -> None:
    api = FakeApi()
    api.put(NODES, node_json("edge-1"))
    api.fail("list", NODES, unreachable(), times=2)
    informer, changes = node_informer(api)

    async with running(informer):
        assert len(api.calls_to("list", NODES)) == 3
        assert sleeps == [0.5, 1.0]
        assert changes == [(None, node("edge-1"))]


async def test_failing_handler_does_not_keep_others_from_hearing() -> None:
    api = FakeApi()
    informer, changes = node_informer(api)

    def broken(old: NodeView | None, new: NodeView | None) -> None:
        raise RuntimeError("handler bug")

    informer.subscribe(broken)
    heard: list[Change] = []
    informer.subscribe(lambda old, new: heard.append((old, new)))

    async with running(informer):
        added = api.publish(NODES, "ADDED", node_json("edge-1"))
        await caught_up(informer, added)

        assert changes == heard == [(None, node("edge-1"))]


def labelled_nodes(obj: dict[str, Any]) -> NodeView | None:
    """Nodes labelled `keep`, the others not kept at all."""
    if "keep" not in (obj.get("metadata") or {}).get("labels", {}):
        return None
    return node_from_api(obj)


async def test_object_the_transform_stops_keeping_is_reported_deleted() -> None:
    api = FakeApi()
    kept = node_json("edge-1")
    kept["metadata"]["labels"]["keep"] = "yes"
    api.put(NODES, kept)
    api.put(NODES, node_json("edge-2"))
    informer = Informer(api, NODES, labelled_nodes)
    changes: list[Change] = []
    informer.subscribe(lambda old, new: changes.append((old, new)))

    kept_view = NodeView(
        name=NodeName("edge-1"),
        readiness=NodeReadiness.READY,
        labels={"kubernetes.io/hostname": "edge-1", "keep": "yes"},
        readiness_since=READY_CHANGED,
    )

    async with running(informer):
        assert informer.store == {"edge-1": kept_view}
        unlabelled = api.publish(NODES, "MODIFIED", node_json("edge-1"))
        await caught_up(informer, unlabelled)

        assert changes == [(None, kept_view), (kept_view, None)]
        assert informer.store == {}


async def test_cache_told_to_relist_after_a_failure_lists_instead_of_resuming(
    sleeps: list[float],
) -> None:
    api = FakeApi()
    api.put(NODES, node_json("edge-1"))
    informer = Informer(api, NODES, node_from_api, relist_after_failure=True)

    async with running(informer):
        api.send(NODES, unreachable("connection reset by peer"))
        await until(lambda: informer.lists == 2, what="second list")

        assert sleeps == [0.5]
        assert len(api.calls_to("list", NODES)) == 2


async def test_event_the_cache_cannot_read_makes_it_list_again_instead_of_dying(
    sleeps: list[float],
) -> None:
    api = FakeApi()
    informer, changes = node_informer(api, node_json("edge-1"))

    task = asyncio.create_task(informer.run())
    try:
        await until(informer.synced.is_set, what="first list")
        # An event without a name cannot be keyed: the cache must recover, not end its task.
        api.send(NODES, {"type": "MODIFIED", "object": {"metadata": {"resourceVersion": "99"}}})
        await until(lambda: informer.lists == 2, what="a second list after the unreadable event")
        added = api.publish(NODES, "ADDED", node_json("edge-2"))
        await caught_up(informer, added)

        assert not task.done()
        assert sorted(informer.store) == ["edge-1", "edge-2"]
        assert changes == [(None, node("edge-1")), (None, node("edge-2"))]
        assert sleeps == [0.5]
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def test_a_wait_ends_when_another_cache_gets_an_answer() -> None:
    reconnect = Reconnect()
    waiting = asyncio.create_task(reconnect.wait(60))
    await asyncio.sleep(0)

    reconnect.answered()

    await asyncio.wait_for(waiting, 1.0)
    # An answer before a wait began does not cut that wait short.
    started = asyncio.get_running_loop().time()
    await reconnect.wait(0.05)
    assert asyncio.get_running_loop().time() - started >= 0.05


def test_each_wait_is_drawn_from_the_upper_half_of_the_delay() -> None:
    drawn = [jittered(2.0) for _ in range(1000)]

    assert all(1.0 <= d <= 2.0 for d in drawn)
    assert max(drawn) - min(drawn) > 0.5  # spread, not one value


async def test_the_first_answer_after_a_failure_wakes_the_caches_waiting_to_retry(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Both caches lost the API server; the node cache drew a long wait, the pod cache a short one.
    # The pod cache's answer ends the node cache's wait: it lists again at once, not in a minute.
    delays = iter([60.0, 0.0])
    monkeypatch.setattr(informer_module, "jittered", lambda delay: next(delays))
    api = FakeApi()
    api.fail("list", NODES, unreachable(), times=1)
    api.fail("list", PODS, unreachable(), times=1)
    reconnect = Reconnect()
    answered: list[str] = []
    reconnect.on_answered = lambda: answered.append("answered")
    nodes = Informer(api, NODES, node_from_api, reconnect=reconnect)
    pods = Informer(api, PODS, pod_from_api, reconnect=reconnect)

    async with running(nodes, pods):
        assert nodes.lists == pods.lists == 1

    assert len(api.calls_to("list", NODES)) == 2
    # Told once per recovery: the pod cache's answer, then the node cache's own.
    assert answered == ["answered", "answered"]


async def test_answers_while_nothing_failed_wake_nobody(sleeps: list[float]) -> None:
    api = FakeApi()
    reconnect = Reconnect()
    answered: list[str] = []
    reconnect.on_answered = lambda: answered.append("answered")
    informer = Informer(api, NODES, node_from_api, reconnect=reconnect)

    async with running(informer):
        api.publish(NODES, "ADDED", node_json("edge-1"))
        api.publish(NODES, "ADDED", node_json("edge-2"))
        await until(lambda: informer.count() == 2, what="both nodes")

    assert answered == []
    assert sleeps == []
