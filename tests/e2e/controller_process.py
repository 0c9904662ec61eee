"""The controller as a real process against the lab, as it runs in a cluster."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import urllib.request
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import aiohttp
import pytest

from edgerollout.lab.control_plane import free_port


@dataclass
class ControllerProcess:
    process: subprocess.Popen[bytes]
    log: Path
    metrics_url: str
    health_url: str

    def log_text(self) -> str:
        return self.log.read_text(errors="replace")

    def metric(self, name: str, **labels: str) -> float:
        """The current value of one sample from /metrics (0 if absent)."""
        with urllib.request.urlopen(self.metrics_url, timeout=5) as response:  # noqa: S310
            text = response.read().decode()
        wanted = ",".join(f'{key}="{value}"' for key, value in sorted(labels.items()))
        for line in text.splitlines():
            if line.startswith("#"):
                continue
            sample, _, value = line.rpartition(" ")
            name_part, _, label_part = sample.partition("{")
            if name_part != name:
                continue
            seen = ",".join(sorted(label_part.rstrip("}").split(","))) if label_part else ""
            if seen == wanted:
                return float(value)
        return 0.0

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=10)

    def stop(self) -> int:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)
        return int(self.process.returncode)


def launch_controller(kubeconfig: Path, log: Path, *extra: str) -> ControllerProcess:
    """Start `edgerollout controller` in the background, logging to `log`."""
    metrics_port, health_port = free_port(), free_port()
    argv = [
        str(Path(sys.executable).parent / "edgerollout"),
        "controller",
        f"--kubeconfig={kubeconfig}",
        f"--metrics-address=127.0.0.1:{metrics_port}",
        f"--health-address=127.0.0.1:{health_port}",
        *extra,
    ]
    with log.open("ab") as out:
        process = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env=dict(os.environ))
    return ControllerProcess(
        process=process,
        log=log,
        metrics_url=f"http://127.0.0.1:{metrics_port}/metrics",
        health_url=f"http://127.0.0.1:{health_port}",
    )


async def start_controller(kubeconfig: Path, log: Path, *extra: str) -> ControllerProcess:
    """Start the controller and wait until it reports ready (its caches are synced)."""
    handle = launch_controller(kubeconfig, log, *extra)
    await wait_ready_endpoint(handle)
    return handle


async def wait_ready_endpoint(handle: ControllerProcess, timeout: float = 30) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        if handle.process.poll() is not None:
            raise AssertionError(
                f"controller exited ({handle.process.returncode}):\n{handle.log_text()}"
            )
        try:
            async with (
                aiohttp.ClientSession() as session,
                session.get(
                    f"{handle.health_url}/readyz", timeout=aiohttp.ClientTimeout(2)
                ) as response,
            ):
                if response.status == 200:
                    return
        except (aiohttp.ClientError, TimeoutError):
            pass
        if loop.time() > deadline:
            raise AssertionError(f"controller not ready within {timeout} s:\n{handle.log_text()}")
        await asyncio.sleep(0.2)


@contextlib.asynccontextmanager
async def controller_for(
    kubeconfig: Path, namespace: str, log: Path, request: pytest.FixtureRequest
) -> AsyncIterator[ControllerProcess]:
    """The controller scoped to one namespace for one test; its log is printed if the test failed,
    and it must stop cleanly (exit 0) when asked."""
    handle = await start_controller(kubeconfig, log, f"--namespace={namespace}")
    try:
        yield handle
    finally:
        code = handle.stop()
        failed = getattr(request.node, "rep_call", None)
        if failed is not None and failed.failed:
            print(f"--- controller log ---\n{handle.log_text()}")
        assert code == 0, f"controller exited {code}:\n{handle.log_text()}"
