"""The dashboard's server (`dashboard.server`) over the fake API: the page and its assets, the
readings pushed as server-sent events as the watches change them, pause and resume through the
CLI's code path, and every refusal: a cross-site change, the operator's RBAC, a failed watch."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import re
import threading
from collections.abc import AsyncIterator
from datetime import datetime
from typing import Any

import orjson
import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from edgerollout.cli import list_command
from edgerollout.cli.dashboard import documents as documents_module
from edgerollout.cli.dashboard import fleet as fleet_module
from edgerollout.cli.dashboard import server as server_module
from edgerollout.cli.dashboard.documents import node_cells
from edgerollout.cli.dashboard.fleet import Fleet
from edgerollout.cli.dashboard.guard import Gate
from edgerollout.cli.dashboard.server import SECURITY_HEADERS, Dashboard, static_assets
from edgerollout.cli.list_render import ListedStatus
from edgerollout.cli.plan_command import dry_run_of
from edgerollout.cli.rollout_read import ListedRollout
from edgerollout.domain.vocabulary import PAUSED_ANNOTATION
from edgerollout.kube.api import DAEMONSETS, EVENTS, NODES, PODS, ApiError
from edgerollout.settings import DASHBOARD
from tests.unit.cli.list_cluster import ClosingApi, shop
from tests.unit.kube.fake_api import unreachable
from tests.unit.kube.objects import NEW, node_json, pod_json
from tests.unit.kube.running import until

Client = TestClient[web.Request, web.Application]
TOKEN = "s3cret"
FORBIDDEN = ApiError(
    403, "Forbidden", 'daemonsets.apps "logs" is forbidden: User "viewer" cannot patch'
)


@dataclasses.dataclass
class Served:
    api: ClosingApi
    fleet: Fleet
    client: Client

    def origin(self) -> str:
        return f"http://{self.client.host}:{self.client.port}"

    async def post(self, path: str, **headers: str) -> tuple[int, Any]:
        sent = {"Origin": self.origin(), "X-Edgerollout-Token": TOKEN, **headers}
        response = await self.client.post(path, headers=sent)
        return response.status, await response.json()


@contextlib.asynccontextmanager
async def serving(api: ClosingApi) -> AsyncIterator[Served]:
    fleet = Fleet(api, namespace="default")
    watching = asyncio.create_task(fleet.run())
    dashboard = Dashboard(fleet, gate=Gate.for_address(token=TOKEN, host="127.0.0.1"))
    try:
        async with TestClient(TestServer(dashboard.app())) as client:
            yield Served(api, fleet, client)
    finally:
        watching.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await watching


@pytest.fixture
async def served(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Served]:
    quick = dataclasses.replace(
        DASHBOARD, reconnect_seconds=0.05, push_interval_seconds=0.0, read_interval_seconds=0.0
    )
    monkeypatch.setattr(fleet_module, "DASHBOARD", quick)
    api = ClosingApi()
    shop(api)
    async with serving(api) as served:
        yield served


class Events:
    """The server-sent events of one stream, read as they come."""

    def __init__(self, response: Any) -> None:
        self.response = response

    async def next(self) -> tuple[str, Any]:
        event, data = "", b""
        while True:
            line = await asyncio.wait_for(self.response.content.readline(), 3)
            assert line, "the stream ended"
            if line.startswith(b"event: "):
                event = line[7:].decode().strip()
            elif line.startswith(b"data: "):
                data = line[6:].strip()
            elif line == b"\n" and event:
                return event, orjson.loads(data)

    async def until(self, event: str) -> Any:
        while True:
            name, document = await self.next()
            if name == event:
                return document


@contextlib.asynccontextmanager
async def stream(served: Served, path: str) -> AsyncIterator[Events]:
    async with served.client.get(f"{path}?token={TOKEN}") as response:
        assert response.status == 200
        assert response.headers["Content-Type"] == "text/event-stream"
        yield Events(response)


async def test_the_page_needs_the_token_and_carries_it(served: Served) -> None:
    refused = await served.client.get("/")
    assert refused.status == 401
    assert (await refused.json())["message"].startswith("this dashboard's token is missing")
    page = await served.client.get(f"/?token={TOKEN}")
    assert page.status == 200
    assert '<meta name="edgerollout-token" content="s3cret">' in await page.text()
    assert {key: page.headers[key] for key in SECURITY_HEADERS} == SECURITY_HEADERS


async def test_refusals_and_unknown_routes_carry_the_security_headers_too(served: Served) -> None:
    refused = await served.client.get("/")
    unknown = await served.client.get(f"/nothing-here?token={TOKEN}")
    missing = await served.client.get("/static/server.py")
    assert (refused.status, unknown.status, missing.status) == (401, 404, 404)
    for answer in (refused, unknown, missing):
        assert {key: answer.headers.get(key) for key in SECURITY_HEADERS} == SECURITY_HEADERS


async def test_the_assets_are_served_from_the_package(served: Served) -> None:
    script = await served.client.get("/static/dashboard.js")
    assert (script.status, script.headers["Content-Type"]) == (
        200,
        "text/javascript; charset=utf-8",
    )
    assert "edgerolloutDashboard" in await script.text()
    style = await served.client.get("/static/dashboard.css")
    assert (style.status, style.headers["Content-Type"]) == (200, "text/css; charset=utf-8")
    missing = await served.client.get("/static/server.py")
    assert missing.status == 404
    icon = await served.client.get("/favicon.ico")
    assert (icon.status, icon.headers["Content-Type"]) == (200, "image/svg+xml; charset=utf-8")
    # The page itself only with the token: never as an asset.
    assert (await served.client.get("/static/index.html")).status == 404


async def test_home_streams_lists_items(served: Served) -> None:
    async with stream(served, "/api/home/stream") as events:
        assert await events.next() == ("connection", {"ok": True, "message": ""})
        name, home = await events.next()
        assert name == "home"
        assert [(i["name"], i["state"]["reason"]) for i in home["items"]] == [
            ("agent", "Paused"),
            ("bad", "InvalidAnnotation"),
            ("logs", "WaitingForOfflineNodes"),
            ("web", "Complete"),
        ]


async def test_a_rollouts_page_follows_its_watches(served: Served) -> None:
    async with stream(served, "/api/rollouts/default/logs/stream") as events:
        assert await events.next() == ("connection", {"ok": True, "message": ""})
        first = await events.until("rollout")
        assert node_cells(first) == {"edge-1": "updated", "edge-2": "updated", "edge-3": "waiting"}
        # edge-3 comes back and its pod is replaced by one of the newest revision.
        served.api.publish(NODES, "MODIFIED", node_json("edge-3"))
        pod = pod_json(
            "logs-edge-3",
            node="edge-3",
            revision_hash=NEW,
            owner_uid="uid-default-logs",
            app="logs",
        )
        served.api.publish(PODS, "MODIFIED", pod)
        while node_cells(document := await events.until("rollout"))["edge-3"] != "updated":
            pass
        assert document["counts"]["updated"] == 3
        assert document["item"]["state"]["reason"] == "Complete"


async def test_a_daemonset_deleted_while_shown_is_gone(served: Served) -> None:
    async with stream(served, "/api/rollouts/default/logs/stream") as events:
        await events.until("rollout")
        logs = served.api.stored(DAEMONSETS, "logs", namespace="default")
        assert logs is not None
        served.api.publish(DAEMONSETS, "DELETED", logs)
        assert await events.until("gone") == {
            "key": "default/logs",
            "message": "daemonset default/logs does not exist, or is not opted in to edgerollout",
        }


async def test_pause_and_resume_from_the_page_patch_the_annotation(served: Served) -> None:
    assert await served.post("/api/rollouts/default/logs/pause") == (
        200,
        {"changed": True, "message": "daemonset.apps/logs paused"},
    )
    assert await served.post("/api/rollouts/default/agent/resume") == (
        200,
        {"changed": True, "message": "daemonset.apps/agent resumed"},
    )
    assert [(call.name, call.body) for call in served.api.calls_to("patch", DAEMONSETS)] == [
        ("logs", {"metadata": {"annotations": {PAUSED_ANNOTATION: "true"}}}),
        ("agent", {"metadata": {"annotations": {PAUSED_ANNOTATION: None}}}),
    ]


async def test_a_change_to_the_state_it_is_in_writes_nothing(served: Served) -> None:
    assert await served.post("/api/rollouts/default/agent/pause") == (
        409,
        {"changed": False, "message": 'daemonsets.apps "agent" is already paused'},
    )
    assert await served.post("/api/rollouts/default/logs/resume") == (
        409,
        {"changed": False, "message": 'daemonsets.apps "logs" is not paused'},
    )
    assert served.api.writes == []


async def test_a_cross_site_change_is_refused_and_nothing_written(served: Served) -> None:
    status, body = await served.post(
        "/api/rollouts/default/logs/pause", Origin="http://evil.example"
    )
    assert (status, body) == (
        403,
        {"message": "a change from another site (http://evil.example) is refused"},
    )
    assert served.api.writes == []


async def test_a_change_the_operators_rbac_refuses_is_a_403_with_the_servers_words(
    served: Served,
) -> None:
    served.api.fail("patch", DAEMONSETS, FORBIDDEN)
    assert await served.post("/api/rollouts/default/logs/pause") == (
        403,
        {
            "message": "the API server answered 403 Forbidden: "
            'daemonsets.apps "logs" is forbidden: User "viewer" cannot patch'
        },
    )


async def test_a_change_to_a_missing_daemonset_is_a_404(served: Served) -> None:
    assert await served.post("/api/rollouts/default/nope/pause") == (
        404,
        {"message": 'daemonset "nope" not found in namespace "default"'},
    )


async def test_the_plan_is_plans_document_of_the_current_moment(served: Served) -> None:
    async with stream(served, "/api/rollouts/default/logs/stream") as events:
        await events.until("rollout")
    response = await served.client.get(f"/api/rollouts/default/logs/plan?token={TOKEN}")
    assert response.status == 200
    plan = await response.json()
    assert [(n["node"], n["action"], n["why"]) for n in plan["nodes"]] == [
        ("edge-1", "updated", ""),
        ("edge-2", "updated", ""),
        ("edge-3", "skipped", "node NotReady"),
    ]


async def test_a_plan_being_made_holds_neither_the_streams_nor_the_other_pages(
    served: Served, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A plan that takes as long as the test wants: the page, an asset and a second plan's
    # request are answered or queued meanwhile, and each plan is made once.
    release, started = threading.Event(), threading.Event()
    made: list[str] = []
    at_once = [0, 0]  # now, most

    def slow_plan(views: Any, *, now: datetime) -> Any:
        at_once[0] += 1
        at_once[1] = max(at_once)
        started.set()
        assert release.wait(10)
        made.append(views.daemonset.name)
        at_once[0] -= 1
        return dry_run_of(views, now=now)

    monkeypatch.setattr(server_module, "dry_run_of", slow_plan)
    async with stream(served, "/api/rollouts/default/logs/stream") as events:
        await events.until("rollout")
    first = asyncio.create_task(served.client.get(f"/api/rollouts/default/logs/plan?token={TOKEN}"))
    second = asyncio.create_task(served.client.get(f"/api/rollouts/default/web/plan?token={TOKEN}"))
    await asyncio.to_thread(started.wait, 10)
    page = await served.client.get(f"/?token={TOKEN}")
    asset = await served.client.get("/static/dashboard.js")
    assert (page.status, asset.status, first.done(), second.done()) == (200, 200, False, False)
    assert made == []
    await asyncio.sleep(0.2)  # the second request is in, waiting for the first plan
    release.set()
    answers = [await first, await second]
    assert [answer.status for answer in answers] == [200, 200]
    assert (sorted(made), at_once[1]) == (["logs", "web"], 1)


async def test_events_are_read_for_the_daemonset(served: Served) -> None:
    event = {
        "metadata": {"name": "logs.1", "namespace": "default"},
        "involvedObject": {"kind": "DaemonSet", "name": "logs"},
        "type": "Warning",
        "reason": "NodeBroken",
        "message": "edge-2 CrashLoopBackOff",
        "count": 2,
        "lastTimestamp": "2025-03-01T11:30:00Z",
    }
    served.api.put(EVENTS, event)
    response = await served.client.get(f"/api/rollouts/default/logs/events?token={TOKEN}")
    assert (response.status, await response.json()) == (
        200,
        {
            "events": [
                {
                    "type": "Warning",
                    "reason": "NodeBroken",
                    "message": "edge-2 CrashLoopBackOff",
                    "count": 2,
                    "last": "2025-03-01T11:30:00Z",
                }
            ]
        },
    )
    [call] = served.api.calls_to("list", EVENTS)
    assert call.params["field_selector"] == "involvedObject.kind=DaemonSet,involvedObject.name=logs"
    served.api.fail("list", EVENTS, ApiError(403, "Forbidden", "events is forbidden"))
    refused = await served.client.get(f"/api/rollouts/default/logs/events?token={TOKEN}")
    assert (refused.status, await refused.json()) == (
        403,
        {"message": "the API server answered 403 Forbidden: events is forbidden"},
    )


async def test_a_lost_watch_is_shown_and_the_watches_start_again(served: Served) -> None:
    async with stream(served, "/api/rollouts/default/logs/stream") as events:
        await events.until("rollout")
        served.api.send(PODS, unreachable("watch pods: connection reset"))
        assert await events.until("connection") == {
            "ok": False,
            "message": "cannot reach the API server: watch pods: connection reset "
            "(trying again in 0 s)",
        }
        assert await events.until("connection") == {"ok": True, "message": ""}
        assert node_cells(await events.until("rollout"))["edge-3"] == "waiting"


async def test_a_kubeconfig_without_list_rights_is_told_on_the_page(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    quick = dataclasses.replace(DASHBOARD, reconnect_seconds=30.0)
    monkeypatch.setattr(fleet_module, "DASHBOARD", quick)
    api = ClosingApi()
    shop(api)
    api.fail(
        "list", DAEMONSETS, ApiError(403, "Forbidden", "daemonsets.apps is forbidden"), times=None
    )
    async with serving(api) as served, stream(served, "/api/home/stream") as events:
        assert await events.until("connection") == {
            "ok": False,
            "message": "the API server answered 403 Forbidden: daemonsets.apps is forbidden "
            "(trying again in 30 s)",
        }
        page = await served.client.get(f"/?token={TOKEN}")
        assert page.status == 200


def test_the_page_loads_nothing_from_elsewhere() -> None:
    """Every asset is the package's own: no URL of another origin in any of them (the SVG
    namespace is a name, never fetched)."""
    urls = {
        name: re.findall(rb"(?:https?:)?//[\w.-]+\.[a-z]{2,}[^\s\"'`]*", body)
        for name, (body, _) in static_assets().items()
    }
    assert urls == {
        "index.html": [],
        "dashboard.css": [],
        "dashboard.js": [b"http://www.w3.org/2000/svg"],
        "favicon.svg": [b"http://www.w3.org/2000/svg"],
    }


async def test_a_daemonset_changing_often_is_read_once_an_interval(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    interval = 0.5
    settings = dataclasses.replace(DASHBOARD, read_interval_seconds=interval)
    monkeypatch.setattr(fleet_module, "DASHBOARD", settings)
    readings: list[float] = []
    read = list_command.listed_status

    def counted(rollout: ListedRollout, *, at: datetime) -> ListedStatus:
        readings.append(asyncio.get_running_loop().time())
        return read(rollout, at=at)

    monkeypatch.setattr(fleet_module, "listed_status", counted)
    api = ClosingApi()
    shop(api)
    fleet = Fleet(api, namespace="default")
    page = fleet.subscribe("default/logs")
    watching = asyncio.create_task(fleet.run())
    try:
        await asyncio.wait_for(page.woken.wait(), 2)
        page.take()
        assert len(readings) == 4  # each opted-in DaemonSet, once
        for ready in ("False", "True", "False"):  # edge-1 flaps three times at once
            api.publish(NODES, "MODIFIED", node_json("edge-1", ready=ready))
        await asyncio.wait_for(page.woken.wait(), 2)
        assert page.take() == ({"default/logs"}, False)
        # Each of the four has a pod on edge-1: each is read once more, for the three changes,
        # when the interval since its first reading has passed.
        assert len(readings) == 8
        assert min(readings[4:]) - readings[0] >= interval
    finally:
        watching.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await watching


async def test_pages_of_one_rollout_share_one_document_per_reading(
    served: Served, monkeypatch: pytest.MonkeyPatch
) -> None:
    made: list[str] = []
    make = documents_module.rollout_document

    def counted(listed: ListedStatus, **views: Any) -> dict[str, Any]:
        made.append(listed.status.daemonset)
        return make(listed, **views)

    monkeypatch.setattr(server_module, "rollout_document", counted)
    path = "/api/rollouts/default/logs/stream"
    async with stream(served, path) as first, stream(served, path) as second:
        assert await first.until("rollout") == await second.until("rollout")
    assert made == ["logs"]
    # Once no page shows it, its JSON is dropped: the next page has it made again.
    await until(lambda: not served.fleet.on_a_page("default/logs"), what="both pages gone")
    async with stream(served, path) as third:
        await third.until("rollout")
    assert made == ["logs", "logs"]
