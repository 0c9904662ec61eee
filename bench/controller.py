"""edgerollout's controller as a process beside the lab, exactly as it runs in a cluster."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from bench.machine import cpu_seconds, rss_bytes
from bench.metrics import Endpoint, Samples
from edgerollout.lab.control_plane import free_port


@dataclass
class Controller:
    process: subprocess.Popen[bytes]
    log: Path
    metrics: Endpoint
    health_url: str
    ready_seconds: float = 0.0

    @property
    def pid(self) -> int:
        return self.process.pid

    def cpu_seconds(self) -> float:
        return cpu_seconds(self.pid)

    def rss_mb(self) -> float:
        return round(rss_bytes(self.pid) / 2**20, 1)

    def samples(self) -> Samples:
        return self.metrics.read()

    async def wait_ready(self, timeout: float = 300) -> float:
        """Wait until /readyz answers 200 (its caches have listed); seconds it took."""
        started = time.monotonic()
        while True:
            if self.process.poll() is not None:
                tail = self.log.read_text(errors="replace")[-3000:]
                raise RuntimeError(f"controller exited ({self.process.returncode}):\n{tail}")
            try:
                ready = await asyncio.to_thread(_status, f"{self.health_url}/readyz") == 200
            except (OSError, urllib.error.URLError):
                ready = False
            if ready:
                return time.monotonic() - started
            if time.monotonic() - started > timeout:
                raise TimeoutError(f"controller not ready within {timeout} s (log: {self.log})")
            await asyncio.sleep(0.1)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)


def _status(url: str) -> int:
    with urllib.request.urlopen(url, timeout=2) as response:  # noqa: S310 - loopback
        return int(response.status)


def start_controller(kubeconfig: Path, log: Path, *, namespace: str | None) -> Controller:
    metrics_port, health_port = free_port(), free_port()
    argv = [
        sys.executable,
        "-m",
        "edgerollout",
        "controller",
        f"--kubeconfig={kubeconfig}",
        f"--metrics-address=127.0.0.1:{metrics_port}",
        f"--health-address=127.0.0.1:{health_port}",
        "--log-format=json",
    ]
    if namespace:
        argv.append(f"--namespace={namespace}")
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("ab") as out:
        process = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env=dict(os.environ))
    return Controller(
        process=process,
        log=log,
        metrics=Endpoint(url=f"http://127.0.0.1:{metrics_port}/metrics"),
        health_url=f"http://127.0.0.1:{health_port}",
    )
