"""edgerollout's controller as a process beside the lab, and what the benchmark measures of it."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from bench.machine import cpu_seconds, rss_bytes
from bench.metrics import Endpoint, Samples
from edgerollout_lab import controller_process

# How long the benchmark gives a controller to become ready (its labs are larger than the tests').
READY_TIMEOUT = 300.0


@dataclass
class Controller(controller_process.ControllerProcess):
    metrics: Endpoint = field(init=False)
    ready_seconds: float = 0.0

    def __post_init__(self) -> None:
        self.metrics = Endpoint(url=self.metrics_url)

    def cpu_seconds(self) -> float:
        return cpu_seconds(self.pid)

    def rss_mb(self) -> float:
        return round(rss_bytes(self.pid) / 2**20, 1)

    def samples(self) -> Samples:
        return self.metrics.read()


def start_controller(
    kubeconfig: Path, log: Path, *, namespace: str | None, extra: tuple[str, ...] = ()
) -> Controller:
    """Start the controller (logging JSON), scoped to `namespace` if one is given; not waiting."""
    flags = ["--log-format=json", *extra]
    if namespace:
        flags.append(f"--namespace={namespace}")
    return Controller.launch(kubeconfig, log, *flags)
