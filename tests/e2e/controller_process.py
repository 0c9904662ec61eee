"""The controller as a real process against the lab, as it runs in a cluster, for one test."""

from __future__ import annotations

import contextlib
import urllib.request
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from edgerollout.lab import controller_process


class ControllerProcess(controller_process.ControllerProcess):
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


@contextlib.asynccontextmanager
async def controller_for(
    kubeconfig: Path, namespace: str, log: Path, request: pytest.FixtureRequest
) -> AsyncIterator[ControllerProcess]:
    """The controller scoped to one namespace for one test, started and ready; its log is printed
    if the test failed, and it must stop cleanly (exit 0) when asked."""
    handle = ControllerProcess.launch(kubeconfig, log, f"--namespace={namespace}")
    await handle.wait_ready()
    try:
        yield handle
    finally:
        code = handle.stop()
        failed = getattr(request.node, "rep_call", None)
        if failed is not None and failed.failed:
            print(f"--- controller log ---\n{handle.log_text()}")
        assert code == 0, f"controller exited {code}:\n{handle.log_text()}"
