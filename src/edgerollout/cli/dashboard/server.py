"""The dashboard's web server: one page, its assets, the readings pushed as server-sent events,
the plan and Events of a rollout on request, and pause and resume.

Every request passes `guard.refusal` first. The page's assets are files of this package
(`static/`), read once at start and served from memory: nothing is fetched from elsewhere at run
time. Readings come from one `Fleet`; each open page holds one event stream:

- `GET /api/home/stream`: `connection` {ok, message}, then `home` (`documents.home_document`)
  each time a DaemonSet's reading changes;
- `GET /api/rollouts/NS/NAME/stream`: `connection`, then `rollout` (`documents.rollout_document`)
  at most every `DASHBOARD.push_interval_seconds` while it changes, `gone` once it is deleted or
  no longer opted in;
- `GET /api/rollouts/NS/NAME/plan`, `.../events`: the plan of the current moment, its Events;
- `POST /api/rollouts/NS/NAME/pause`, `.../resume`: `pause_command.change_pause`, the code path
  of `edgerollout pause` and `resume`.

A refusal of the API server reaches the page as the status and message `list` would print (403
when the operator's RBAC says no); a failure of the watches as a `connection` event.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from importlib import resources
from typing import Any

import orjson
from aiohttp import web

from edgerollout.cli.daemonset_command import DaemonSetNotFound, describe_api_error
from edgerollout.cli.dashboard.documents import (
    events_document,
    home_document,
    plan_table,
    rollout_document,
)
from edgerollout.cli.dashboard.fleet import Fleet, Reading, Subscription
from edgerollout.cli.dashboard.guard import FAVICON, Gate, refusal
from edgerollout.cli.pause_command import change_pause, done_message, unchanged_message
from edgerollout.cli.plan_command import dry_run_of
from edgerollout.kube.api import EVENTS, ApiError
from edgerollout.settings import DASHBOARD

log = logging.getLogger("edgerollout.dashboard")
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

TOKEN_PLACEHOLDER = "{{token}}"  # noqa: S105 (where index.html takes the token)
# An event stream says something this often even when nothing changes, so a connection a proxy
# or the network dropped silently is noticed by both ends.
KEEPALIVE_SECONDS = 15.0
# The page's own code only: no inline script, nothing from another origin.
SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; "
    "img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; "
    "form-action 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}
_CONTENT_TYPES = {
    ".html": "text/html",
    ".js": "text/javascript",
    ".css": "text/css",
    ".svg": "image/svg+xml",
}


def static_assets() -> dict[str, tuple[bytes, str]]:
    """The page's files, by name: their bytes and content type."""
    assets = {}
    for entry in resources.files(__package__).joinpath("static").iterdir():
        suffix = "." + entry.name.rsplit(".", 1)[-1]
        if entry.is_file() and suffix in _CONTENT_TYPES:
            assets[entry.name] = (entry.read_bytes(), _CONTENT_TYPES[suffix])
    return assets


class Dashboard:
    """The routes of the module docstring, over one `Fleet`."""

    def __init__(self, fleet: Fleet, *, gate: Gate) -> None:
        self.fleet = fleet
        self.gate = gate
        self.assets = static_assets()
        # The JSON of each rollout shown, and the reading it was made from.
        self._encoded: dict[str, tuple[Reading, bytes]] = {}
        # One plan table made at a time (design §9.4).
        self._planning = asyncio.Lock()

    def app(self) -> web.Application:
        app = web.Application(middlewares=[self._guarded])
        routes = "/api/rollouts/{namespace}/{name}"
        app.router.add_get("/", self.index)
        app.router.add_get("/static/{file}", self.static)
        app.router.add_get(FAVICON, self.favicon)
        app.router.add_get("/api/home/stream", self.home_stream)
        app.router.add_get(routes + "/stream", self.rollout_stream)
        app.router.add_get(routes + "/plan", self.plan)
        app.router.add_get(routes + "/events", self.events)
        app.router.add_post(routes + "/pause", self.pause)
        app.router.add_post(routes + "/resume", self.resume)
        return app

    @web.middleware
    async def _guarded(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        refused = refusal(
            self.gate,
            method=request.method,
            path=request.path,
            headers=request.headers,
            query=request.query,
        )
        if refused is not None:
            log.warning("refused %s %s: %s", request.method, request.path, refused.message)
            response: web.StreamResponse = _message(refused.code, refused.message)
        else:
            try:
                response = await handler(request)
            except web.HTTPException as error:
                # aiohttp's own answers (an unknown route, a method not allowed) carry the
                # headers too.
                error.headers.update(SECURITY_HEADERS)
                raise
        if not response.prepared:
            response.headers.update(SECURITY_HEADERS)
        return response

    # --- the page -------------------------------------------------------------------------

    async def index(self, _: web.Request) -> web.Response:
        page, content_type = self.assets["index.html"]
        body = page.replace(TOKEN_PLACEHOLDER.encode(), self.gate.token.encode())
        return web.Response(body=body, content_type=content_type, charset="utf-8")

    async def static(self, request: web.Request) -> web.Response:
        found = self.assets.get(request.match_info["file"])
        if found is None or found[1] == "text/html":
            return _message(404, f"no such file: {request.path}")
        body, content_type = found
        return web.Response(body=body, content_type=content_type, charset="utf-8")

    async def favicon(self, _: web.Request) -> web.Response:
        body, content_type = self.assets["favicon.svg"]
        return web.Response(body=body, content_type=content_type, charset="utf-8")

    # --- event streams --------------------------------------------------------------------

    async def home_stream(self, request: web.Request) -> web.StreamResponse:
        def documents(_: set[str]) -> list[tuple[str, bytes]]:
            readings = [self.fleet.reading(key) for key in self.fleet.shown()]
            listed = [reading.listed for reading in readings if reading is not None]
            return [("home", orjson.dumps(home_document(listed)))]

        return await self._stream(request, key=None, documents=documents, interval=0.0)

    async def rollout_stream(self, request: web.Request) -> web.StreamResponse:
        key = _key(request)

        def documents(_: set[str]) -> list[tuple[str, bytes]]:
            reading = self.fleet.reading(key)
            if reading is None:
                self._encoded.pop(key, None)
                message = f"daemonset {key} does not exist, or is not opted in to edgerollout"
                return [("gone", orjson.dumps({"key": key, "message": message}))]
            return [("rollout", self._rollout_json(key, reading))]

        interval = DASHBOARD.push_interval_seconds
        try:
            return await self._stream(request, key=key, documents=documents, interval=interval)
        finally:
            if not self.fleet.on_a_page(key):  # its JSON is kept only while shown
                self._encoded.pop(key, None)

    async def _stream(
        self,
        request: web.Request,
        *,
        key: str | None,
        documents: Callable[[set[str]], list[tuple[str, bytes]]],
        interval: float,
    ) -> web.StreamResponse:
        """Send the connection and `documents`, then again whenever they change, at most every
        `interval` seconds, until the page goes away."""
        response = web.StreamResponse(
            headers={**SECURITY_HEADERS, "Content-Type": "text/event-stream"}
        )
        await response.prepare(request)
        subscription = self.fleet.subscribe(key)
        try:
            await self._send(response, "connection", orjson.dumps(self._connection()))
            if self.fleet.connection.ok:
                for event, document in documents(set()):
                    await self._send(response, event, document)
            while True:
                await _woken(subscription, response)
                changed, connection = subscription.take()
                if connection:
                    await self._send(response, "connection", orjson.dumps(self._connection()))
                if changed or (connection and self.fleet.connection.ok):
                    for event, document in documents(changed):
                        await self._send(response, event, document)
                    await asyncio.sleep(interval)
        except ConnectionResetError:
            pass  # the page went away
        finally:
            self.fleet.unsubscribe(subscription)
        return response

    def _connection(self) -> dict[str, Any]:
        connection = self.fleet.connection
        return {"ok": connection.ok, "message": connection.message}

    def _rollout_json(self, key: str, reading: Reading) -> bytes:
        """The rollout's document as JSON, made once per reading whatever the pages showing it
        (a document of 10,000 nodes costs about 45 ms to make)."""
        cached = self._encoded.get(key)
        if cached is not None and cached[0] is reading:
            return cached[1]
        document = rollout_document(reading.listed, views=reading.views, since=reading.since)
        encoded = orjson.dumps(document)
        self._encoded[key] = (reading, encoded)
        return encoded

    @staticmethod
    async def _send(response: web.StreamResponse, event: str, data: bytes) -> None:
        """One server-sent event; `data` is JSON, which holds no newline."""
        await response.write(b"event: " + event.encode() + b"\ndata: " + data + b"\n\n")

    # --- reads on request -----------------------------------------------------------------

    async def plan(self, request: web.Request) -> web.Response:
        key = _key(request)
        reading = self.fleet.reading(key)
        if reading is None:
            return _message(
                404,
                f"daemonset {key} is not shown: it does not exist, or is not "
                "opted in, or the watches have not listed it yet",
            )
        # A fresh plan of a large fleet takes a while (about 1.4 s at 10,000 nodes): made in a
        # thread, it leaves the event loop to the streams and the other pages, and one at a time,
        # pages asking together do not stack plans up in memory.
        async with self._planning:
            dry_run = await asyncio.to_thread(dry_run_of, reading.views, now=datetime.now(UTC))
        return _json(200, plan_table(dry_run))

    async def events(self, request: web.Request) -> web.Response:
        namespace, name = request.match_info["namespace"], request.match_info["name"]
        selector = f"involvedObject.kind=DaemonSet,involvedObject.name={name}"
        try:
            page = await self.fleet.api.list(EVENTS, namespace=namespace, field_selector=selector)
        except ApiError as error:
            return _api_refusal(error)
        return _json(200, events_document(page.items, limit=DASHBOARD.events_shown))

    # --- changes --------------------------------------------------------------------------

    async def pause(self, request: web.Request) -> web.Response:
        return await self._change(request, pause=True)

    async def resume(self, request: web.Request) -> web.Response:
        return await self._change(request, pause=False)

    async def _change(self, request: web.Request, *, pause: bool) -> web.Response:
        namespace, name = request.match_info["namespace"], request.match_info["name"]
        try:
            outcome = await change_pause(
                self.fleet.api, name=name, namespace=namespace, pause=pause
            )
        except DaemonSetNotFound:
            return _message(404, f'daemonset "{name}" not found in namespace "{namespace}"')
        except ApiError as error:
            return _api_refusal(error)
        if not outcome.changed:
            text = unchanged_message(name, pause=pause).removeprefix("error: ")
            return _json(409, {"changed": False, "message": text})
        log.info("%s", done_message(name, pause=pause))
        return _json(200, {"changed": True, "message": done_message(name, pause=pause)})


async def _woken(subscription: Subscription, response: web.StreamResponse) -> None:
    """Wait until the subscription is woken, saying something at least every
    `KEEPALIVE_SECONDS` (a write to a page that went away raises)."""
    while True:
        # `asyncio.timeout`: a cancellation (the page went away) that comes as the subscription
        # is woken is not lost, as `wait_for` loses it on Python 3.11.
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(KEEPALIVE_SECONDS):
                await subscription.woken.wait()
            return
        await response.write(b": keepalive\n\n")


def _key(request: web.Request) -> str:
    return f"{request.match_info['namespace']}/{request.match_info['name']}"


def _json(status: int, document: Any) -> web.Response:
    return web.Response(status=status, body=orjson.dumps(document), content_type="application/json")


def _message(status: int, message: str) -> web.Response:
    return _json(status, {"message": message})


def _api_refusal(error: ApiError) -> web.Response:
    """The API server's refusal as the page shows it: 403 when the operator's RBAC says no,
    502 for any other failure of the API server, with the words `list` would print."""
    status = 403 if error.status == 403 else 502
    return _message(status, describe_api_error(error))
