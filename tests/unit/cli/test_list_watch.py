"""`edgerollout list --watch` against the fake API's watch streams: the table, then a row each
time a DaemonSet's row changes, from watch events alone."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import pytest

from edgerollout.cli import list_command
from edgerollout.cli.list_command import watch_rollouts
from edgerollout.cli.list_render import Layout
from edgerollout.cli.list_watch import RolloutWatch
from edgerollout.kube.api import CONTROLLER_REVISIONS, DAEMONSETS, NODES, PODS, ApiError
from tests.unit.cli.list_cluster import NOW, ClosingApi, shop
from tests.unit.kube.fake_api import unreachable
from tests.unit.kube.objects import ADVANCED, daemonset_json, node_json, pod_json
from tests.unit.kube.running import until

HEADER = (
    "NAME    STRATEGY                UPDATED   OFFLINE   BROKEN   HELD   WAVE     "
    "STATE                       AGE"
)
TABLE = [
    HEADER,
    "agent   AdvancedRollingUpdate   2/3       0         0        1      <none>   "
    "paused                      5m",
    "bad     <none>                  -         -         -        -      <none>   "
    "invalid annotation          3h",
    "logs    AdvancedRollingUpdate   2/3       1         0        0      <none>   "
    "waiting for offline nodes   90s",
    "web     AdvancedRollingUpdate   3/3       0         0        0      <none>   "
    "complete                    2d",
]


@dataclass
class Watching:
    """A running `list --watch`: the lines it wrote, and its task."""

    api: ClosingApi
    task: asyncio.Task[None]
    written: list[str] = field(default_factory=list)

    @property
    def lines(self) -> list[str]:
        return "".join(self.written).splitlines()

    async def wrote(self, count: int) -> list[str]:
        """Wait until `count` lines are written; all of them."""
        await until(lambda: len(self.lines) >= count, what=f"{count} lines written")
        return self.lines


@pytest.fixture
def api(monkeypatch: pytest.MonkeyPatch) -> ClosingApi:
    monkeypatch.setattr(list_command, "now", lambda: NOW)
    fake = ClosingApi()
    shop(fake)
    return fake


@contextlib.asynccontextmanager
async def watching(api: ClosingApi, *, json: bool = False) -> AsyncIterator[Watching]:
    written: list[str] = []
    task = asyncio.create_task(
        watch_rollouts(api, namespace="default", layout=Layout(), json=json, write=written.append)
    )
    try:
        yield Watching(api, task, written)
    finally:
        if not task.done():  # a task that ended was awaited by its test
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task


def lists_and_watches(api: ClosingApi) -> list[tuple[str, str]]:
    """The calls made, in order of verb and resource (the informers run side by side)."""
    return sorted((call.verb, call.resource.plural) for call in api.calls)


async def test_a_row_is_written_each_time_a_daemonsets_row_changes(api: ClosingApi) -> None:
    async with watching(api) as watch:
        assert await watch.wrote(5) == TABLE

        # edge-3 is back: the old pod of `logs` there is now to be replaced; `agent` and `web`
        # have an updated pod there and their rows stay as they were.
        api.publish(NODES, "MODIFIED", node_json("edge-3"))
        assert (await watch.wrote(6))[5:] == [
            "logs    AdvancedRollingUpdate   2/3       0         0        0      <none>   "
            "rolling                     90s",
        ]

        # Changes that change no row write nothing: a pod no DaemonSet controls, a DaemonSet
        # that is not opted in, a pod of `web` that stays updated, a node's labels.
        api.publish(PODS, "MODIFIED", pod_json("job-y", node="edge-2", owner_kind="Job"))
        plain = daemonset_json("plain", uid="uid-default-plain", annotations={})
        plain["metadata"]["labels"] = {"team": "edge"}
        api.publish(DAEMONSETS, "MODIFIED", plain)
        web_pod = pod_json("web-edge-1", node="edge-1", owner_uid="uid-default-web", app="web")
        web_pod["metadata"]["labels"]["tier"] = "front"
        api.publish(PODS, "MODIFIED", web_pod)
        relabelled = node_json("edge-1")
        relabelled["metadata"]["labels"]["zone"] = "north"
        api.publish(NODES, "MODIFIED", relabelled)

        # The old pod of `logs` replaced: complete.
        api.publish(PODS, "DELETED", pod_json("logs-edge-3", node="edge-3", app="logs"))
        replacement = pod_json(
            "logs-edge-3-new", node="edge-3", owner_uid="uid-default-logs", app="logs"
        )
        api.publish(PODS, "ADDED", replacement)
        assert (await watch.wrote(7))[6:] == [
            "logs    AdvancedRollingUpdate   3/3       0         0        0      <none>   "
            "complete                    90s",
        ]

        # `plain` opts in: a row of its own.
        plain["metadata"]["annotations"] = ADVANCED
        api.publish(DAEMONSETS, "MODIFIED", plain)
        assert (await watch.wrote(8))[7:] == [
            "plain   AdvancedRollingUpdate   3/3       0         0        0      <none>   "
            "complete                    5m",
        ]
        assert len(watch.lines) == 8

    # One list per resource, then watches: nothing is polled.
    assert lists_and_watches(api) == [
        ("list", "controllerrevisions"),
        ("list", "daemonsets"),
        ("list", "nodes"),
        ("list", "pods"),
        ("list", "rolebindings"),
        ("watch", "controllerrevisions"),
        ("watch", "daemonsets"),
        ("watch", "nodes"),
        ("watch", "pods"),
        ("watch", "rolebindings"),
    ]


async def test_a_deleted_daemonset_writes_nothing_and_its_return_a_row(api: ClosingApi) -> None:
    async with watching(api) as watch:
        await watch.wrote(5)
        web = daemonset_json("web", uid="uid-default-web", annotations=ADVANCED)
        api.publish(DAEMONSETS, "DELETED", web)
        # The pods of `web` go with it: nothing to write for a DaemonSet no longer listed.
        for node in ("edge-1", "edge-2", "edge-3"):
            api.publish(PODS, "DELETED", pod_json(f"web-{node}", node=node, app="web"))
        api.publish(NODES, "MODIFIED", node_json("edge-3"))  # a change of a row still listed
        assert (await watch.wrote(6))[5].split()[-2:] == ["rolling", "90s"]

        api.publish(DAEMONSETS, "ADDED", web)
        assert (await watch.wrote(7))[6:] == [
            "web     AdvancedRollingUpdate   0/3       0         0        0      <none>   "
            "rolling                     2d",
        ]


async def test_a_new_revision_is_watched_too(api: ClosingApi) -> None:
    async with watching(api) as watch:
        await watch.wrote(5)
        newer = {
            "apiVersion": "apps/v1",
            "kind": "ControllerRevision",
            "metadata": {
                "name": "web-newer",
                "namespace": "default",
                "creationTimestamp": "2025-03-01T11:59:50Z",
                "labels": {"app": "web", "controller-revision-hash": "hash-newer"},
                "ownerReferences": [
                    {"kind": "DaemonSet", "uid": "uid-default-web", "controller": True}
                ],
            },
            "revision": 3,
        }
        api.publish(CONTROLLER_REVISIONS, "ADDED", newer)
        # Every pod of `web` is outdated now; the one on edge-3 (offline) waits for its node.
        assert (await watch.wrote(6))[5:] == [
            "web     AdvancedRollingUpdate   0/3       1         0        0      <none>   "
            "rolling                     10s",
        ]


async def test_with_json_each_row_is_an_item_document(api: ClosingApi) -> None:
    async with watching(api, json=True) as watch:
        await until(lambda: len(watch.written) == 4, what="four documents")
        api.publish(NODES, "MODIFIED", node_json("edge-3"))
        await until(lambda: len(watch.written) == 5, what="a fifth document")
        documents = [json.loads(document) for document in watch.written]
        assert [(d["name"], d["state"]["reason"], d["offline"]) for d in documents] == [
            ("agent", "Paused", 0),
            ("bad", "InvalidAnnotation", None),
            ("logs", "WaitingForOfflineNodes", 1),
            ("web", "Complete", 0),
            ("logs", "Rolling", 0),
        ]
        assert all(document.endswith("}\n") for document in watch.written)


async def test_an_expired_watch_lists_again_and_writes_only_what_changed(
    api: ClosingApi,
) -> None:
    async with watching(api) as watch:
        await watch.wrote(5)
        api.expire(PODS)  # 410 Gone: the informer lists the pods again
        await until(lambda: len(api.calls_to("list", PODS)) == 2, what="pods listed again")
        api.publish(NODES, "MODIFIED", node_json("edge-3"))
        assert (await watch.wrote(6))[5].split()[-2:] == ["rolling", "90s"]
        assert len(watch.lines) == 6
        assert not watch.task.done()


async def test_a_watch_that_breaks_ends_the_command_with_its_error(api: ClosingApi) -> None:
    async with watching(api) as watch:
        await watch.wrote(5)
        api.send(PODS, unreachable("watch pods: connection reset"))
        with pytest.raises(ApiError) as raised:
            await asyncio.wait_for(watch.task, 2)
        assert (raised.value.status, raised.value.message) == (0, "watch pods: connection reset")
        assert watch.lines == TABLE


async def test_a_rollout_is_looked_at_again_when_its_plan_says(api: ClosingApi) -> None:
    watch = RolloutWatch(api, namespace="default")
    try:
        await watch.start()
        watch.look_again("default/web", 0.05)
        watch.look_again("default/bad", 30)
        assert await asyncio.wait_for(watch.changes(), 1) == {"default/web"}
        watch.look_again("default/bad", None)
        api.publish(PODS, "MODIFIED", pod_json("web-edge-2", node="edge-2", app="web"))
        assert await asyncio.wait_for(watch.changes(), 1) == {"default/web"}
    finally:
        await watch.stop()


async def test_a_cancel_that_comes_as_a_change_wakes_the_watch_still_ends_it(
    api: ClosingApi,
) -> None:
    # Ctrl-C cancels the command; a change may wake it in the same turn of the event loop. The
    # cancellation must not be lost (on Python 3.11 `asyncio.wait_for` loses it), or the command
    # would go on listing.
    watch = RolloutWatch(api, namespace="default")
    await watch.start()
    try:
        # A rollout to look at again later (a pod turning available after minReadySeconds): the
        # watch waits for a change with a timeout.
        watch.look_again("default/web", 100.0)
        waiting = asyncio.create_task(watch.changes())
        await asyncio.sleep(0.05)
        assert not waiting.done()  # nothing changed since the lists
        watch._woken.set()
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            async with asyncio.timeout(5):  # a lost cancellation: the watch goes on waiting
                await waiting
    finally:
        await watch.stop()
