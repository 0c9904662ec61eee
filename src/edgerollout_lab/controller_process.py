"""edgerollout's controller as a process beside the lab, exactly as it runs in a cluster.

The demo, the end-to-end tests and the benchmark all start the real `edgerollout controller`
against a lab through this one launcher: on free loopback ports for its metrics and health checks,
logging to a file, waited for until its `/readyz` answers 200 (its caches have listed), and stopped
as Kubernetes stops a pod: SIGTERM, a grace period, then SIGKILL. A peer controller (OpenYurt's
yurt-manager, `openyurt.py`) runs through the same launcher with its own command line and its own
test of readiness.
"""

from __future__ import annotations

import asyncio
import http.client
import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, Self

from edgerollout_lab.control_plane import free_port

HOST = "127.0.0.1"
PROGRAM = (sys.executable, "-m", "edgerollout")
STOP_GRACE = 20.0
READY_POLL = 0.1
# How much of the end of its log an error about the controller carries.
LOG_TAIL_CHARS = 3000


def controller_argv(
    kubeconfig: Path, *, metrics_port: int, health_port: int, extra: Sequence[str] = ()
) -> list[str]:
    """The command line of a controller serving metrics and health checks on loopback ports."""
    return [
        *PROGRAM,
        "controller",
        f"--kubeconfig={kubeconfig}",
        f"--metrics-address={HOST}:{metrics_port}",
        f"--health-address={HOST}:{health_port}",
        *extra,
    ]


def _status(url: str) -> int:
    with urllib.request.urlopen(url, timeout=2) as response:  # noqa: S310 - loopback
        return int(response.status)


@dataclass
class ControllerProcess:
    """One running controller: its process, its log, and where it serves metrics and health."""

    # What messages call the program.
    what: ClassVar[str] = "controller"

    process: subprocess.Popen[bytes]
    log: Path
    metrics_url: str
    health_url: str
    # Where this run's output starts in `log` (a log may continue an earlier run's).
    log_start: int = 0

    @classmethod
    def launch(cls, kubeconfig: Path, log: Path, *extra: str) -> Self:
        """Start the controller in the background (not waiting), appending to `log`."""
        metrics_port, health_port = free_port(), free_port()
        argv = cls.argv(kubeconfig, metrics_port=metrics_port, health_port=health_port, extra=extra)
        log.parent.mkdir(parents=True, exist_ok=True)
        with log.open("ab") as out:
            log_start = out.tell()
            process = subprocess.Popen(
                argv, stdout=out, stderr=subprocess.STDOUT, env=cls.environment(kubeconfig)
            )
        return cls(
            process=process,
            log=log,
            metrics_url=f"http://{HOST}:{metrics_port}/metrics",
            health_url=f"http://{HOST}:{health_port}",
            log_start=log_start,
        )

    @staticmethod
    def argv(
        kubeconfig: Path, *, metrics_port: int, health_port: int, extra: Sequence[str]
    ) -> list[str]:
        return controller_argv(
            kubeconfig, metrics_port=metrics_port, health_port=health_port, extra=extra
        )

    @staticmethod
    def environment(kubeconfig: Path) -> dict[str, str]:
        return dict(os.environ)

    def ready(self) -> bool:
        """One look at readiness: /readyz answers 200 once its caches have listed."""
        return _status(f"{self.health_url}/readyz") == 200

    @property
    def pid(self) -> int:
        return self.process.pid

    def log_text(self) -> str:
        return self.log.read_text(errors="replace")

    def log_tail(self) -> str:
        return self.log_text()[-LOG_TAIL_CHARS:]

    def run_log_text(self) -> str:
        """What this run has written to the log so far."""
        with self.log.open("rb") as handle:
            handle.seek(self.log_start)
            return handle.read().decode(errors="replace")

    async def wait_ready(self, timeout: float = 30) -> float:
        """Wait until it is `ready()`; the seconds it took.

        Raises RuntimeError if the process exits first, TimeoutError if `timeout` runs out; both
        carry the end of the log."""
        started = time.monotonic()
        while True:
            if self.process.poll() is not None:
                raise RuntimeError(
                    f"{self.what} exited ({self.process.returncode}):\n{self.log_tail()}"
                )
            try:
                ready = await asyncio.to_thread(self.ready)
            except (OSError, http.client.HTTPException):
                ready = False  # not listening yet, or answering 503 (urllib raises on it)
            if ready:
                return time.monotonic() - started
            if time.monotonic() - started > timeout:
                raise TimeoutError(
                    f"{self.what} not ready within {timeout} s (log: {self.log}):\n{self.log_tail()}"
                )
            await asyncio.sleep(READY_POLL)

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=10)

    def stop(self, grace: float = STOP_GRACE) -> int:
        """SIGTERM, then SIGKILL if it is still running after `grace` seconds; its exit code."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)
        return int(self.process.returncode)
