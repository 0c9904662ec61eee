"""A headless Chromium (Debian's `chromium` package) driven over its DevTools protocol: how the
lab's tests look at `edgerollout dashboard`'s page as an operator's browser shows it.

The protocol is JSON over a WebSocket; aiohttp, a dependency of the product already, speaks
WebSocket, so a few dozen lines drive the browser without a client library. One page (tab) is
enough: `navigate`, `evaluate` a script in it (its result returned by value), `screenshot` it.
The package is installed on first use, as the lab's other optional packages are (`packages`).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import itertools
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import aiohttp

from edgerollout_lab import packages

CHROMIUM = Path("/usr/bin/chromium")
PACKAGES = {"chromium": str(CHROMIUM)}
# Chromium prints where its DevTools endpoint listens on stderr once it is up.
_LISTENING = re.compile(rb"DevTools listening on (ws://\S+)")
START_TIMEOUT = 30.0
START_ATTEMPTS = 2
CALL_TIMEOUT = 30.0

JSON = dict[str, Any]


class BrowserError(RuntimeError):
    """Chromium did not start, or a call failed; the message says what it answered."""


def ensure_installed(say: Callable[[str], None]) -> None:
    """Install Debian's `chromium` package unless it is; PackageError says why it cannot be."""
    packages.ensure(PACKAGES, purpose="the dashboard's browser tests (headless Chromium)", say=say)


class Page:
    """One tab of the browser, over its DevTools WebSocket."""

    def __init__(self, socket: aiohttp.ClientWebSocketResponse) -> None:
        self._socket = socket
        self._ids = itertools.count(1)

    async def call(self, method: str, **params: Any) -> JSON:
        """Send a protocol command and return its result (events that arrive meanwhile are
        dropped: nothing here waits on one)."""
        number = next(self._ids)
        await self._socket.send_json({"id": number, "method": method, "params": params})
        async with asyncio.timeout(CALL_TIMEOUT):
            while True:
                message = await self._socket.receive_json()
                if message.get("id") != number:
                    continue
                if "error" in message:
                    raise BrowserError(f"{method}: {message['error']}")
                result: JSON = message["result"]
                return result

    async def navigate(self, url: str) -> None:
        await self.call("Page.navigate", url=url)

    async def evaluate(self, expression: str) -> Any:
        """The value of `expression` in the page (a promise awaited); a thrown error raised."""
        answer = await self.call(
            "Runtime.evaluate", expression=expression, awaitPromise=True, returnByValue=True
        )
        if "exceptionDetails" in answer:
            raise BrowserError(f"{expression!r} threw: {answer['exceptionDetails']}")
        return answer["result"].get("value")

    async def resize(self, *, width: int, height: int) -> None:
        await self.call(
            "Emulation.setDeviceMetricsOverride",
            width=width,
            height=height,
            deviceScaleFactor=1,
            mobile=False,
        )

    async def screenshot(self, path: Path, *, full_page: bool = True) -> None:
        """A PNG of the page (its whole height with `full_page`) written to `path`."""
        answer = await self.call(
            "Page.captureScreenshot", format="png", captureBeyondViewport=full_page
        )
        await asyncio.to_thread(path.write_bytes, base64.b64decode(answer["data"]))


@contextlib.asynccontextmanager
async def headless_page(*, width: int = 1280, height: int = 900) -> AsyncIterator[Page]:
    """A headless Chromium with one blank page, stopped (and its profile removed) on exit."""
    profile = Path(tempfile.mkdtemp(prefix="edgerollout-chromium-"))
    # Chromium makes its own temporary files (the singleton socket's folder) in TMPDIR and leaves
    # them behind when stopped: they go with the profile.
    scratch = profile / "tmp"
    scratch.mkdir()
    command = [
        str(CHROMIUM),
        "--headless",
        "--disable-gpu",
        "--no-first-run",
        "--no-default-browser-check",
        # As root (the lab's machines), Chromium's sandbox cannot start; the page is our own.
        "--no-sandbox",
        "--remote-debugging-address=127.0.0.1",
        "--remote-debugging-port=0",
        f"--user-data-dir={profile / 'data'}",
        f"--window-size={width},{height}",
        "about:blank",
    ]
    draining: asyncio.Task[None] | None = None
    process, endpoint = await _start(
        command, profile / "data", {**os.environ, "TMPDIR": str(scratch)}
    )
    try:
        # Keep reading its stderr, so that the pipe never fills and stalls the browser.
        assert process.stderr is not None
        draining = asyncio.create_task(_drain(process.stderr))
        async with aiohttp.ClientSession() as session:
            async with session.get(f"http://{endpoint}/json/list") as answer:
                targets = await answer.json()
            [page] = [target for target in targets if target["type"] == "page"]
            async with session.ws_connect(page["webSocketDebuggerUrl"], max_msg_size=0) as socket:
                tab = Page(socket)
                await tab.call("Page.enable")
                await tab.call("Runtime.enable")
                await tab.resize(width=width, height=height)
                yield tab
    finally:
        if draining is not None:
            draining.cancel()
        await _stop(process)
        shutil.rmtree(profile, ignore_errors=True)


async def _start(
    command: list[str], data: Path, env: dict[str, str]
) -> tuple[asyncio.subprocess.Process, str]:
    """Chromium and its DevTools endpoint. A start that prints no endpoint within START_TIMEOUT
    is stopped and made once more from an empty profile (`data`): under a full CI run on 2 cores
    one start was seen silent for 30 s, the dbus warnings it prints first and nothing else."""
    for attempt in itertools.count(1):
        process = await asyncio.create_subprocess_exec(
            *command, stdout=subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE, env=env
        )
        try:
            return process, await _endpoint(process)
        except BrowserError:
            await _stop(process)
            if attempt == START_ATTEMPTS:
                raise
            shutil.rmtree(data, ignore_errors=True)
    raise AssertionError("unreachable")


async def _stop(process: asyncio.subprocess.Process) -> None:
    if process.returncode is None:
        process.terminate()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(process.wait(), 10)
    if process.returncode is None:
        process.kill()
        await process.wait()


async def _endpoint(process: asyncio.subprocess.Process) -> str:
    """HOST:PORT of the DevTools endpoint, read from Chromium's stderr as it starts."""
    assert process.stderr is not None
    seen = b""
    try:
        async with asyncio.timeout(START_TIMEOUT):
            while True:
                line = await process.stderr.readline()
                if not line:
                    break
                seen += line
                found = _LISTENING.search(line)
                if found:
                    return found.group(1).decode().split("/")[2]
    except TimeoutError:
        pass
    raise BrowserError(f"Chromium did not start its DevTools endpoint:\n{seen.decode()[-2000:]}")


async def _drain(stream: asyncio.StreamReader) -> None:
    while await stream.read(65536):
        pass
