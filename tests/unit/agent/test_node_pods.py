"""The node's pod cache: what it follows, what it saves, and how stale it says it is."""

from __future__ import annotations

import asyncio
import contextlib
import stat
import time
from collections.abc import AsyncIterator
from pathlib import Path

import orjson

from edgerollout.agent.node_pods import NodePods
from edgerollout.kube.api import PODS
from tests.unit.kube.fake_api import FakeApi, unreachable
from tests.unit.kube.running import until

from .harness import NODE, node_pods, ota_pod


def saved(folder: Path) -> dict[str, object]:
    data: dict[str, object] = orjson.loads((folder / "pods.json").read_bytes())
    return data


@contextlib.asynccontextmanager
async def running(pods: NodePods) -> AsyncIterator[asyncio.Task[None]]:
    task = asyncio.create_task(pods.run())
    try:
        yield task
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


def test_save_then_load_serves_the_same_pods_version_and_last_contact(tmp_path: Path) -> None:
    first = node_pods(FakeApi(), ota_pod("web-b"), ota_pod("web-a"))
    first.cache_dir = tmp_path
    first.informer.resource_version = "4711"
    first.last_contact = 1_740_000_000.5
    first.save()

    second = NodePods(FakeApi(), node_name=NODE, cache_dir=tmp_path)
    assert not second.ready
    second.load()

    assert second.ready
    assert second.loaded_from_disk
    assert not second.informer.synced.is_set()
    assert second.pods() == [ota_pod("web-a"), ota_pod("web-b")]
    assert second.get("default", "web-a") == ota_pod("web-a")
    assert second.informer.resource_version == "4711"
    assert second.last_contact == 1_740_000_000.5
    assert saved(tmp_path)["node"] == NODE
    assert sorted(path.name for path in tmp_path.iterdir()) == ["pods.json"]


def test_the_saved_cache_is_0600_in_a_0700_directory_whatever_was_there(tmp_path: Path) -> None:
    folder = tmp_path / "cache"
    folder.mkdir(mode=0o755)
    (folder / "pods.tmp").write_bytes(b"left over")
    (folder / "pods.tmp").chmod(0o644)
    pods = node_pods(FakeApi(), ota_pod())
    pods.cache_dir = folder

    pods.save()

    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert stat.S_IMODE((folder / "pods.json").stat().st_mode) == 0o600
    assert sorted(path.name for path in folder.iterdir()) == ["pods.json"]


def test_a_saved_cache_of_another_node_is_ignored(tmp_path: Path) -> None:
    other = NodePods(FakeApi(), node_name="edge-1", cache_dir=tmp_path)
    other.informer.store["default/web-a"] = ota_pod("web-a", node="edge-1")
    other.last_contact = 1_740_000_000.0
    other.save()

    mine = NodePods(FakeApi(), node_name=NODE, cache_dir=tmp_path)
    mine.load()

    assert not mine.ready
    assert mine.pods() == []
    assert mine.last_contact is None


def test_an_unreadable_saved_cache_is_ignored(tmp_path: Path) -> None:
    (tmp_path / "pods.json").write_bytes(b'{"node": "edge-2", "items": [')
    pods = NodePods(FakeApi(), node_name=NODE, cache_dir=tmp_path)
    pods.load()
    assert not pods.ready
    assert pods.pods() == []


def test_without_a_cache_dir_nothing_is_saved_or_loaded(tmp_path: Path) -> None:
    pods = node_pods(FakeApi(), ota_pod())
    pods.save()
    pods.load()
    assert not pods.loaded_from_disk
    assert list(tmp_path.iterdir()) == []


def test_age_is_zero_while_connected_and_the_time_since_contact_otherwise() -> None:
    pods = node_pods(FakeApi())
    assert pods.age() == 0.0
    pods.last_contact = time.time() - 30
    pods.connected = True
    assert pods.age() == 0.0
    pods.connected = False
    assert 30 <= pods.age() < 31


async def test_run_follows_this_nodes_pods_without_managed_fields_and_saves_them(
    tmp_path: Path,
) -> None:
    api = FakeApi()
    pod = ota_pod("web-a")
    pod["metadata"]["managedFields"] = [{"manager": "kube-controller-manager"}]
    stored = api.put(PODS, pod)
    pods = NodePods(api, node_name=NODE, cache_dir=tmp_path)

    async with running(pods):
        await until(lambda: pods.informer.synced.is_set(), what="the pod cache listed")
        assert pods.connected
        assert pods.age() == 0.0
        slim = {key: value for key, value in stored["metadata"].items() if key != "managedFields"}
        assert pods.pods() == [{**stored, "metadata": slim}]
        await until(lambda: (tmp_path / "pods.json").exists(), what="the cache saved")

    (listed,) = api.calls_to("list", PODS)
    assert listed.params["field_selector"] == "spec.nodeName=edge-2"
    assert saved(tmp_path)["items"] == [{**stored, "metadata": slim}]
    assert saved(tmp_path)["node"] == NODE


async def test_after_losing_the_api_server_the_cache_keeps_its_pods_and_ages(
    tmp_path: Path,
) -> None:
    api = FakeApi()
    api.put(PODS, ota_pod("web-a"))
    pods = NodePods(api, node_name=NODE, cache_dir=tmp_path)

    async with running(pods):
        await until(lambda: pods.informer.synced.is_set(), what="the pod cache listed")
        api.fail("list", PODS, unreachable(), times=None)
        api.send(PODS, unreachable("connection reset by peer"))
        await until(lambda: not pods.connected, what="the watch lost")
        lost_at = pods.last_contact
        assert lost_at is not None
        assert abs(lost_at - time.time()) < 1
        await asyncio.sleep(0.3)
        assert 0.3 <= pods.age() < 1.5
        assert [pod["metadata"]["name"] for pod in pods.pods()] == ["web-a"]


async def test_a_restart_while_disconnected_serves_the_saved_pods_with_their_age(
    tmp_path: Path,
) -> None:
    earlier = node_pods(FakeApi(), ota_pod("web-a"))
    earlier.cache_dir = tmp_path
    earlier.last_contact = time.time() - 60
    earlier.save()
    api = FakeApi()
    api.fail("list", PODS, unreachable(), times=None)
    pods = NodePods(api, node_name=NODE, cache_dir=tmp_path)

    async with running(pods):
        await until(lambda: pods.ready, what="the saved pods served")
        await until(lambda: bool(api.calls_to("list", PODS)), what="a list attempted")
        assert not pods.informer.synced.is_set()
        assert [pod["metadata"]["name"] for pod in pods.pods()] == ["web-a"]
        assert 60 <= pods.age() < 62
